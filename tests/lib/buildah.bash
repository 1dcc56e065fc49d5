# tests/lib/buildah.bash — the test images that the containers tools write
# in their own formats: skopeo's dir: layout of oci.bash's fixture, and an
# image built by buildah in several layers, with whiteouts, saved in every
# format gpurun reads.  Sourced after oci.bash (it uses oci_fixture and the
# busybox image of images.bash).
#
#   buildah_fixture dir
#       `skopeo copy oci:OCI:latest dir:OUT` of the fixture oci (its three
#       layers, whiteouts and opaque directory, config and all): a dir:
#       layout with an OCI manifest, version "Directory Transport Version:
#       1.1" and gzip blobs named by their hex digest.
#   buildah_fixture buildah
#       a directory holding one image built by buildah (vfs storage),
#       written by `buildah push` as docker.tar (docker-archive), oci.tar
#       (oci-archive), oci (an oci: layout directory), dir (dir:, an OCI
#       manifest) and docker-dir (dir: with --format v2s2, what `podman save
#       --format docker-dir` writes).  Its layers:
#         1. the busybox tree, by `buildah copy`;
#         2. /etc/buildah-layer2, /etc/deleted-later, /data/keep/k,
#            /data/gone/g, /data/opaque/old1 and old2;
#         3. deletes /etc/deleted-later and /data/gone (buildah writes the
#            whiteouts etc/.wh.deleted-later and data/.wh.gone), makes
#            /data/opaque opaque with only `new` in it (the marker
#            .wh..wh..opq put in by hand: vfs writes none), adds
#            /etc/buildah-layer3.
#       Config: Env GPURUN_BUILDAH=from-config and PATH, Entrypoint
#       ["/bin/sh","-c"], Cmd ["echo cmd-from-buildah; pwd"], WorkingDir
#       /data.
#
# The buildah image is built by root only, once (run-bats.sh builds it
# before both runs; `bash tests/lib/buildah.bash all` by hand, or
# `bash tests/lib/buildah.bash build OUT` for a copy at OUT), in a private
# mount namespace, with a storage root, run root, storage.conf, signature
# policy and TMPDIR of its own under the build directory, all removed
# after: the host's /var/lib/containers and mount table stay as they were.
# The unprivileged run reads what root built, or skips (buildah_fixture
# fails, saying why).  Fixtures are keyed by a stamp of what they are made
# from, published by rename(2) under a flock, readable by everyone, and
# never to be modified by a test: copy first.
#
# Needs buildah and skopeo (Debian packages buildah skopeo).

# Without a fork: a suite sources this again for every test.
BUILDAH_LIB_DIR=${BASH_SOURCE[0]%/*}
[[ $BUILDAH_LIB_DIR == "${BASH_SOURCE[0]}" ]] && BUILDAH_LIB_DIR=$PWD
[[ $BUILDAH_LIB_DIR == /* ]] || BUILDAH_LIB_DIR=$PWD/$BUILDAH_LIB_DIR
BUILDAH_TAG=gpurun/buildah:latest

# buildah_stamp: what the fixtures are made from; the tools' versions decide
# the bytes they write.
buildah_stamp() {
	{
		oci_stamp
		cat "$BUILDAH_LIB_DIR/buildah.bash"
		buildah --version
		skopeo --version
	} 2>/dev/null | sha256sum | cut -c1-12
}

# Where the fixtures are: images.bash's keyed_init and keyed_fixture, in
# $TESTS_BUILD/buildah-images/KEY, or for an unprivileged run that cannot
# write there, a cache of its own (for the fixtures it can build: dir).
buildah_init() {
	[[ -n "${BUILDAH_IMAGES_BUILD:-}" ]] || keyed_init buildah-images BUILDAH_IMAGES "$(buildah_stamp)"
}

# buildah_fixture NAME: the path of fixture NAME (dir, or buildah: the
# directory of every form buildah writes, which only root builds).
buildah_fixture() {
	local name=$1
	buildah_init || return 1
	if [[ $name == buildah && $EUID -ne 0 && ! -e $BUILDAH_IMAGES_DIR/buildah ]]; then
		echo "buildah.bash: the buildah images are built by root: tests/run-bats.sh, or 'bash tests/lib/buildah.bash all' as root" >&2
		return 1
	fi
	keyed_fixture buildah-images BUILDAH_IMAGES "$name" buildah_fixture_build
}

buildah_fixture_build() {
	local name=$1 out=$2 src
	case $name in
	dir)
		src=$(oci_fixture oci) || return 1
		containers_private "${OCI_SKOPEO[@]}" copy -q "oci:$src:latest" "dir:$out"
		;;
	buildah)
		local busybox
		busybox=$(fixture busybox) || return 1
		build_buildah_images "$out" "$busybox"
		;;
	*)
		echo "buildah.bash: unknown fixture $name" >&2
		return 1
		;;
	esac
}

# build_buildah_images OUT BUSYBOX: the buildah image, from the busybox tree
# BUSYBOX, saved in every format under OUT (which must not exist).  Root
# only.  The work directory goes, whatever happens.
build_buildah_images() {
	local out=$1 busybox=$2 work rc
	if [[ $(id -u) -ne 0 ]]; then
		echo "buildah.bash: building the buildah images needs root" >&2
		return 1
	fi
	command -v buildah >/dev/null || {
		echo "buildah.bash: buildah is missing: apt-get install -y buildah" >&2
		return 1
	}
	work=$(mktemp -d "${TMPDIR:-/tmp}/gpurun-buildah.XXXXXX") || return 1
	mkdir -p "$out"
	containers_private bash "$BUILDAH_LIB_DIR/buildah.bash" build-in "$out" "$busybox" "$work"
	rc=$?
	rm -rf "$work"
	return $rc
}

# containers_private CMD...: run CMD, a containers tool; as root, in a
# private mount namespace with a tmpfs over /var/lib/containers (over
# /var/lib while that does not exist): containers/image keeps root's
# blob-info cache in /var/lib/containers/cache whatever the storage root,
# and those writes go with the namespace.  Unprivileged, the tools write
# under $HOME, the suite's own.
containers_private() {
	if [[ $(id -u) -ne 0 ]]; then
		"$@"
		return
	fi
	unshare --mount --propagation private -- bash "$BUILDAH_LIB_DIR/buildah.bash" private "$@"
}

private_var_lib() {
	if [[ -d /var/lib/containers ]]; then
		mount -t tmpfs -o mode=0700 gpurun-containers /var/lib/containers
	else
		mount -t tmpfs -o mode=0755 gpurun-containers /var/lib
	fi
}

# buildah_build_in OUT BUSYBOX WORK: build_buildah_images' work, in its
# private mount namespace.
buildah_build_in() {
	local out=$1 busybox=$2 work=$3 c m
	mkdir -p "$work/tmp" "$work/root" "$work/run" || return 1
	export TMPDIR=$work/tmp CONTAINERS_STORAGE_CONF=$work/storage.conf
	export CONTAINERS_REGISTRIES_CONF=$work/registries.conf
	printf '[storage]\ndriver = "vfs"\ngraphroot = "%s"\nrunroot = "%s"\n' "$work/root" "$work/run" >"$CONTAINERS_STORAGE_CONF"
	: >"$CONTAINERS_REGISTRIES_CONF"
	echo '{"default":[{"type":"insecureAcceptAnything"}]}' >"$work/policy.json"
	local B=(buildah --root "$work/root" --runroot "$work/run" --storage-driver vfs)
	local P=(--signature-policy "$work/policy.json")

	c=$("${B[@]}" from "${P[@]}" scratch) &&
		"${B[@]}" copy "$c" "$busybox/" / >/dev/null &&
		"${B[@]}" config --env GPURUN_BUILDAH=from-config \
			--env PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
			--entrypoint '["/bin/sh","-c"]' --cmd '["echo cmd-from-buildah; pwd"]' \
			--workingdir /data "$c" &&
		"${B[@]}" commit -q "${P[@]}" "$c" gpurun/layer1 >/dev/null || return 1

	c=$("${B[@]}" from "${P[@]}" gpurun/layer1) && m=$("${B[@]}" mount "$c") || return 1
	mkdir -p "$m/data/keep" "$m/data/gone" "$m/data/opaque" &&
		echo layer2 >"$m/etc/buildah-layer2" &&
		echo deleted-later >"$m/etc/deleted-later" &&
		echo k >"$m/data/keep/k" &&
		echo g >"$m/data/gone/g" &&
		echo old1 >"$m/data/opaque/old1" &&
		echo old2 >"$m/data/opaque/old2" &&
		"${B[@]}" umount "$c" >/dev/null &&
		"${B[@]}" commit -q "${P[@]}" "$c" gpurun/layer2 >/dev/null || return 1

	c=$("${B[@]}" from "${P[@]}" gpurun/layer2) && m=$("${B[@]}" mount "$c") || return 1
	# vfs has no opaque directories: its diff writes one whiteout per
	# vanished file.  What the overlay driver writes for a directory removed
	# and made anew (only the marker, the old files left in the tree below)
	# is made by hand: the marker, a plain file to vfs, goes into the layer
	# as it is.
	rm "$m/etc/deleted-later" &&
		rm -r "$m/data/gone" &&
		: >"$m/data/opaque/.wh..wh..opq" &&
		echo new >"$m/data/opaque/new" &&
		echo layer3 >"$m/etc/buildah-layer3" &&
		"${B[@]}" umount "$c" >/dev/null &&
		"${B[@]}" commit -q "${P[@]}" "$c" "$BUILDAH_TAG" >/dev/null || return 1

	"${B[@]}" push -q "${P[@]}" "$BUILDAH_TAG" "docker-archive:$out/docker.tar:$BUILDAH_TAG" &&
		"${B[@]}" push -q "${P[@]}" "$BUILDAH_TAG" "oci-archive:$out/oci.tar:latest" &&
		"${B[@]}" push -q "${P[@]}" "$BUILDAH_TAG" "oci:$out/oci:latest" &&
		"${B[@]}" push -q "${P[@]}" "$BUILDAH_TAG" "dir:$out/dir" &&
		"${B[@]}" push -q "${P[@]}" --format v2s2 "$BUILDAH_TAG" "dir:$out/docker-dir" || return 1
	"${B[@]}" rm --all >/dev/null && "${B[@]}" rmi --all --force >/dev/null
}

# Sourced by a suite: found once per suite, as common.bash does for the
# other fixtures.
[[ "${BASH_SOURCE[0]}" == "$0" || -z ${TESTS_BUILD:-} ]] || buildah_init

if [[ "${BASH_SOURCE[0]}" == "$0" ]]; then
	set -eu
	case ${1:-all} in
	private)
		shift
		private_var_lib
		exec "$@"
		;;
	build-in)
		shift
		buildah_build_in "$@"
		;;
	*)
		: "${TESTS_BUILD:=$BUILDAH_LIB_DIR/../build}"
		mkdir -p "$TESTS_BUILD"
		TESTS_BUILD=$(cd "$TESTS_BUILD" && pwd)
		# shellcheck source=images.bash
		source "$BUILDAH_LIB_DIR/images.bash"
		# shellcheck source=oci.bash
		source "$BUILDAH_LIB_DIR/oci.bash"
		case ${1:-all} in
		all) for f in dir buildah; do buildah_fixture "$f"; done ;;
		build) build_buildah_images "$2" "$(fixture busybox)" ;;
		*) for f in "$@"; do buildah_fixture "$f"; done ;;
		esac
		;;
	esac
fi
