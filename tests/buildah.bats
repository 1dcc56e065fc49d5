#!/usr/bin/env bats
# Images built by buildah, as users build them without a Dockerfile: from
# scratch, a `buildah copy` of a busybox tree, then two more committed
# layers, the last deleting a file and a directory and making a directory
# opaque; saved with `buildah push` as docker-archive, oci-archive, an oci:
# layout, and dir: with an OCI or a Docker schema 2 manifest (what `podman
# save --format docker-dir` writes).  Each runs with exactly the content
# and config the image has.  Built once by root (tests/lib/buildah.bash, in
# a private mount namespace and a storage of its own); both modes run them.

load lib/common
load lib/buildah

setup_file() {
	require_gpurun
	common_images
	command -v buildah >/dev/null || skip "buildah is missing: apt-get install -y buildah (make deps-test installs it)"
	if ! BUILDAH_IMAGES=$(buildah_fixture buildah); then
		[[ $(id -u) -eq 0 ]] && fail "cannot build the buildah images (tests/lib/buildah.bash)"
		skip "the buildah images are built by root: tests/run-bats.sh"
	fi
	export BUILDAH_IMAGES
}

setup() {
	# A cache of the test's own, so that each test sees what it made.
	export GPURUN_CACHE=$BATS_TEST_TMPDIR/cache
}

# The five saves of the one image.
BUILDAH_SAVES=(docker.tar oci.tar oci dir docker-dir)

# What the three layers leave: both layers' files, neither of what layer 3
# deleted, /data/opaque with only `new`, and no whiteout left as a file.
BUILDAH_CHECK='cat /etc/buildah-layer2 /etc/buildah-layer3
	[ -e /etc/deleted-later ] && echo deleted-later-is-back
	[ -e /data/gone ] && echo gone-is-back
	ls -A /data/opaque | tr "\n" " "; echo
	ls -A /data /etc | grep -c "^\.wh\."
	ls -A /data | tr "\n" " "; echo'

# assert_buildah_layers SAVE: that save of the image runs with the content
# of its three layers.
assert_buildah_layers() {
	run --separate-stderr "$GPURUN" --gpus void "$BUILDAH_IMAGES/$1" "$BUILDAH_CHECK"
	assert_success
	assert_output $'layer2\nlayer3\nnew \n0\nkeep opaque '
}

@test "a buildah image saved as docker-archive runs with its layers, whiteouts and opaque directory applied" {
	assert_buildah_layers docker.tar
}

@test "a buildah image saved as oci-archive runs with its layers, whiteouts and opaque directory applied" {
	assert_buildah_layers oci.tar
}

@test "a buildah image pushed to an oci: layout directory runs with its layers, whiteouts and opaque directory applied" {
	assert_buildah_layers oci
}

@test "a buildah image pushed to dir: (an OCI manifest) runs with its layers, whiteouts and opaque directory applied" {
	assert_buildah_layers dir
}

@test "a buildah image pushed to dir: as Docker schema 2 (podman's docker-dir) runs with its layers, whiteouts and opaque directory applied" {
	run cat "$BUILDAH_IMAGES/docker-dir/manifest.json"
	assert_output --partial '"mediaType":"application/vnd.docker.distribution.manifest.v2+json"'
	assert_buildah_layers docker-dir
}

@test "every save of the buildah image runs its Entrypoint and Cmd in its WorkingDir, with its Env" {
	local f
	for f in "${BUILDAH_SAVES[@]}"; do
		run --separate-stderr "$GPURUN" --gpus void "$BUILDAH_IMAGES/$f"
		assert_success
		assert_output $'cmd-from-buildah\n/data'
		run --separate-stderr "$GPURUN" --gpus void "$BUILDAH_IMAGES/$f" 'echo "$GPURUN_BUILDAH"'
		assert_success
		assert_output from-config
	done
}

@test "the five saves of the buildah image share their three layers in the cache" {
	local f
	for f in "${BUILDAH_SAVES[@]}"; do
		run --separate-stderr "$GPURUN" --gpus void "$BUILDAH_IMAGES/$f" true
		assert_success
	done
	run find "$GPURUN_CACHE/layers" -mindepth 1 -maxdepth 1 -type d
	assert_equal "${#lines[@]}" 3
	run --separate-stderr "$GPURUN" cache ls
	assert_success
	for f in "${BUILDAH_SAVES[@]}"; do
		assert_line --regexp " $BUILDAH_IMAGES/$f(@.*)?\$"
	done
	assert_cache_consistent
}

@test "a --dry-run of each save of the buildah image names its three layers and writes nothing" {
	local f
	for f in "${BUILDAH_SAVES[@]}"; do
		run --separate-stderr "$GPURUN" --dry-run --gpus void "$BUILDAH_IMAGES/$f" true
		assert_success
		assert_line --regexp "^# image $BUILDAH_IMAGES/$f(@[^ ]+)?: 3 layers\$"
		assert_line --partial "gpurun plan: cannot run as a script: launch it once to fill the cache"
		assert_line --regexp '^mkdir "\$S/layers/2"; mount --bind -o ro "\$L"/[0-9a-f]{64} "\$S/layers/2"$'
	done
	assert_not_exist "$GPURUN_CACHE"
}

# build_in_private_containers OUT: build the buildah images at OUT, seeing
# $BATS_TEST_TMPDIR/containers as /var/lib/containers, where root's
# containers tools keep what they keep whatever their storage root: what
# the build writes there is seen there, and no other process on the machine
# writes it meanwhile.
build_in_private_containers() {
	mkdir -p "$BATS_TEST_TMPDIR/containers"
	unshare --mount --propagation private -- sh -c 'mount --bind "$1" /var/lib/containers && exec bash "$2" build "$3"' \
		sh "$BATS_TEST_TMPDIR/containers" "$TESTS_DIR/lib/buildah.bash" "$1"
}

@test "building the buildah images leaves no mount, storage, process or file on the host" {
	skip_unless_root "buildah builds as root"
	[[ -d /var/lib/containers ]] || skip "no /var/lib/containers to stand in for"
	host_snapshot "$BATS_TEST_TMPDIR/host.before"
	run build_in_private_containers "$BATS_TEST_TMPDIR/out"
	assert_success
	assert_host_unchanged "$BATS_TEST_TMPDIR/host.before"
	run find "$BATS_TEST_TMPDIR/containers" -mindepth 1
	assert_output ""
	run ls "$BATS_TEST_TMPDIR/out"
	assert_output $'dir\ndocker-dir\ndocker.tar\noci\noci.tar'
}
