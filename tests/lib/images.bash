# tests/lib/images.bash — the test images, built offline from what this
# machine already has: Debian's busybox-static for a shell and the host's
# glibc for dynamically linked programs.  No network, no registry.
#
# Two layers:
#   build_busybox_rootfs DIR / build_busybox_tar OUT
#   build_glibc_rootfs DIR   / build_glibc_tar OUT
#       build an image at a path the caller chooses (a test that needs a
#       variant builds its own copy and changes it);
#   fixture NAME
#       the shared, cached copy: built once into $TESTS_BUILD/images/KEY (KEY
#       a stamp of everything the images are made from; keyed_fixture below)
#       and reused by every suite and both test modes.  NAME is busybox, busybox.tar,
#       busybox.tar.gz, busybox.tgz, busybox.tar.xz, busybox.tar.zst,
#       busybox.tar.bz2, glibc, glibc.tar, glibc.tar.gz, ... or probe.
#       Concurrent builders are serialised with flock and every fixture
#       appears by rename(2), so nobody ever sees half an image.
#
# Shared fixtures must never be modified by a test: copy first
# (cp -a "$(fixture busybox)" "$BATS_TEST_TMPDIR/img").
#
# Needs $TESTS_BUILD (set by common.bash) and tests/probe.c next to lib/.

# Without a fork: a suite sources this again for every test.
IMAGES_LIB_DIR=${BASH_SOURCE[0]%/*}
[[ $IMAGES_LIB_DIR == "${BASH_SOURCE[0]}" ]] && IMAGES_LIB_DIR=$PWD
[[ $IMAGES_LIB_DIR == /* ]] || IMAGES_LIB_DIR=$PWD/$IMAGES_LIB_DIR
PROBE_SRC="$IMAGES_LIB_DIR/../probe.c"
BUSYBOX_BIN=${BUSYBOX_BIN:-/bin/busybox}

# The user alice exists in every image, with a home the tests can write to.
ALICE_UID=1000
ALICE_GID=1000

# Everything the images are made from: a change to any of these makes a new
# KEY, so a stale image is never reused.
images_stamp() {
	{
		cat "${BASH_SOURCE[0]}" "$PROBE_SRC"
		sha256sum "$BUSYBOX_BIN" /usr/lib/x86_64-linux-gnu/libc.so.6 /usr/sbin/ldconfig
		gcc --version | head -n1
	} 2>/dev/null | sha256sum | cut -c1-12
}

# ---- fixtures kept by key ---------------------------------------------------
# Every kind of shared fixture (images here, oci-images in oci.bash,
# buildah-images in buildah.bash) lives in $TESTS_BUILD/KIND/KEY, KEY a stamp
# of what it is made from, so a stale fixture is never used.  A user who
# cannot write there (an unprivileged run of a root-owned checkout) reads
# what root built and builds what is missing in a directory of its own,
# ${TMPDIR:-/tmp}/gpurun-test-KIND.UID/KEY.
#
# keyed_init KIND VAR KEY: the kind's directories, exported as VAR_DIR (the
# shared one), VAR_OWN (this user's, empty when VAR_DIR is writable) and
# VAR_BUILD (where this user builds).
keyed_init() {
	local kind=$1 var=$2 dir="$TESTS_BUILD/$1/$3" own="" build
	if mkdir -p "$dir" 2>/dev/null && [[ -w "$dir" ]]; then
		build=$dir
	else
		own="${TMPDIR:-/tmp}/gpurun-test-$kind.$(id -u)/$3"
		build=$own
	fi
	printf -v "${var}_DIR" %s "$dir"
	printf -v "${var}_OWN" %s "$own"
	printf -v "${var}_BUILD" %s "$build"
	export "${var}_DIR" "${var}_OWN" "${var}_BUILD"
}

# keyed_fixture KIND VAR NAME BUILDER: the path of fixture NAME, built first
# by `BUILDER NAME TMP` when neither directory has it: one builder at a time
# (a flock of the directory's .lock, which a fixture built inside another's
# build, such as docker.tar from oci, does not take again), and it appears
# by rename(2), so nobody ever sees half of one.  Once a fixture of a new key
# is built in the shared directory, the older keys go.
keyed_fixture() {
	local kind=$1 var=$2 name=$3 builder=$4 d
	for d in "${var}_DIR" "${var}_OWN"; do
		if [[ -n "${!d}" && -e "${!d}/$name" ]]; then
			printf '%s\n' "${!d}/$name"
			return 0
		fi
	done
	d=${var}_BUILD
	local dir=${!d} held=${var}_LOCK_HELD
	local out=$dir/$name
	mkdir -p "$dir" || return 1
	(
		if [[ -z "${!held:-}" ]]; then
			exec 9>"$dir/.lock" && flock 9 || exit 1
			export "$held=1"
		fi
		[[ -e "$out" ]] && exit 0
		local tmp="$dir/.tmp.$BASHPID.$name"
		rm -rf "$tmp"
		"$builder" "$name" "$tmp" && chmod -R a+rX "$tmp" && mv -T "$tmp" "$out"
		local rc=$?
		rm -rf "$tmp" "$tmp.tmp"
		if [[ $rc -eq 0 && "$dir" == "$TESTS_BUILD/$kind/"* ]]; then
			for d in "$TESTS_BUILD/$kind"/*; do
				[[ "$d" == "$dir" ]] || rm -rf "$d"
			done
		fi
		exit $rc
	) || {
		echo "could not build the $kind fixture $name" >&2
		return 1
	}
	printf '%s\n' "$out"
}

images_init() {
	[[ -n "${IMAGES_BUILD:-}" ]] || keyed_init images IMAGES "$(images_stamp)"
}

# fixture NAME: print the path of the cached fixture NAME, building it first
# when missing.
fixture() {
	images_init && keyed_fixture images IMAGES "$1" fixture_build
}

fixture_build() {
	local name=$1 out=$2
	case $name in
	probe) build_probe "$out" ;;
	busybox) build_busybox_rootfs "$out" ;;
	glibc) build_glibc_rootfs "$out" ;;
	busybox.*) tar_from_dir "$(fixture busybox)" "$out" ;;
	glibc.*) tar_from_dir "$(fixture glibc)" "$out" ;;
	*)
		echo "images.bash: unknown fixture $name" >&2
		return 1
		;;
	esac
}

# build_probe OUT: the static multi-call probe (tests/probe.c).
build_probe() {
	local out=$1
	gcc -static -O2 -Wall -Wextra -Werror -o "$out" "$PROBE_SRC" || {
		echo "images.bash: cannot build $PROBE_SRC (gcc -static needs libc6-dev)" >&2
		return 1
	}
}

# The skeleton every image shares: the directories a container needs to
# exist, the two users and their groups.
image_skeleton() {
	local dir=$1
	mkdir -p "$dir"/{etc,proc,sys,dev,run,mnt,root,home/alice,var/tmp}
	mkdir -p -m 1777 "$dir/tmp"
	chmod 1777 "$dir/var/tmp"
	chmod 0755 "$dir/root" # 0700 in Debian; readable here so an unprivileged test can copy the image
	cat >"$dir/etc/passwd" <<-EOF
		root:x:0:0:root:/root:/bin/sh
		alice:x:$ALICE_UID:$ALICE_GID::/home/alice:/bin/sh
		nobody:x:65534:65534:nobody:/nonexistent:/bin/false
	EOF
	cat >"$dir/etc/group" <<-EOF
		root:x:0:
		alice:x:$ALICE_GID:
		video:x:44:alice
		nogroup:x:65534:
	EOF
	echo "gpurun-test" >"$dir/etc/hostname"
	if [[ $(id -u) -eq 0 ]]; then
		chown "$ALICE_UID:$ALICE_GID" "$dir/home/alice"
	else
		chmod 0777 "$dir/home/alice"
	fi
	[[ -s "$dir/etc/group" ]]
}

# install_busybox DIR BINDIR: busybox and a symlink for every applet.
install_busybox() {
	local dir=$1 bindir=$2 applet
	mkdir -p "$dir$bindir" && cp "$BUSYBOX_BIN" "$dir$bindir/busybox" || return 1
	for applet in $("$BUSYBOX_BIN" --list); do
		[[ "$applet" == busybox ]] && continue
		ln -sf busybox "$dir$bindir/$applet"
	done
}

# build_busybox_base DIR: busybox with its applets in /bin and the
# skeleton, nothing else (also the 1 MB image of tests/bench/run.sh).  No
# /etc/hosts or /etc/resolv.conf: the launcher creates them when it binds
# the host's.
build_busybox_base() {
	local dir=$1
	image_skeleton "$dir" || return 1
	install_busybox "$dir" /bin || return 1
	ln -s bin "$dir/sbin"
	mkdir -p "$dir/usr"
	ln -s ../bin "$dir/usr/bin"
	ln -s ../bin "$dir/usr/sbin"
	[[ -x "$dir/bin/sh" && -x "$dir/sbin/ip" ]]
}

# build_busybox_rootfs DIR: a static-only image — the base and the probe in
# /bin.
build_busybox_rootfs() {
	local dir=$1 probe
	probe=$(fixture probe) || return 1
	build_busybox_base "$dir" && cp "$probe" "$dir/bin/probe"
}

# build_glibc_rootfs DIR: a Debian-like, usrmerged image with the host's
# glibc, the image's own /sbin/ldconfig and /etc/ld.so.cache — what the GPU
# injection needs (it finds the library dir from /etc/debian_version and runs
# the image's ldconfig).  busybox gives it a shell; /usr/bin/probe-dyn is a
# dynamically linked probe that proves the loader works.
build_glibc_rootfs() {
	local dir=$1 lib probe
	local multiarch=usr/lib/x86_64-linux-gnu
	probe=$(fixture probe) || return 1
	image_skeleton "$dir" || return 1
	mkdir -p "$dir/$multiarch" "$dir/usr/lib64" "$dir/usr/sbin" "$dir/etc/ld.so.conf.d" || return 1
	install_busybox "$dir" /usr/bin || return 1
	ln -s usr/bin "$dir/bin"
	ln -s usr/sbin "$dir/sbin"
	ln -s usr/lib "$dir/lib"
	ln -s usr/lib64 "$dir/lib64"
	for lib in ld-linux-x86-64.so.2 libc.so.6 libm.so.6 libdl.so.2 libpthread.so.0 librt.so.1 \
		libresolv.so.2 libutil.so.1 libnss_files.so.2; do
		if [[ -e "/$multiarch/$lib" ]]; then
			cp -L "/$multiarch/$lib" "$dir/$multiarch/$lib" || return 1
		fi
	done
	ln -s "../lib/x86_64-linux-gnu/ld-linux-x86-64.so.2" "$dir/usr/lib64/ld-linux-x86-64.so.2"
	cp /usr/sbin/ldconfig "$dir/usr/sbin/ldconfig" || return 1
	echo 'include /etc/ld.so.conf.d/*.conf' >"$dir/etc/ld.so.conf"
	printf '# libc default configuration\n/usr/local/lib\n' >"$dir/etc/ld.so.conf.d/libc.conf"
	printf '# Multiarch support\n/usr/local/lib/x86_64-linux-gnu\n/lib/x86_64-linux-gnu\n/usr/lib/x86_64-linux-gnu\n' \
		>"$dir/etc/ld.so.conf.d/x86_64-linux-gnu.conf"
	cat /etc/debian_version >"$dir/etc/debian_version"
	cp "$probe" "$dir/usr/bin/probe" || return 1
	gcc -O2 -Wall -o "$dir/usr/bin/probe-dyn" "$PROBE_SRC" || return 1
	/usr/sbin/ldconfig -r "$dir" || return 1
}

# tar_from_dir DIR OUT: archive DIR with GNU tar, compressed as OUT's suffix
# says (.tar, .tar.gz/.tgz, .tar.xz, .tar.zst, .tar.bz2).  Owners are kept
# numerically when root builds it, else everything is root's.
tar_from_dir() {
	local dir=$1 out=$2 comp
	case $out in
	*.tar) comp=cat ;;
	*.tar.gz | *.tgz) comp="gzip -n" ;;
	*.tar.xz) comp="xz -T1" ;;
	*.tar.zst) comp="zstd -q" ;;
	*.tar.bz2) comp=bzip2 ;;
	*)
		echo "images.bash: no compression known for $out" >&2
		return 1
		;;
	esac
	local owner=()
	[[ $(id -u) -eq 0 ]] || owner=(--owner=0 --group=0)
	tar --numeric-owner "${owner[@]}" --sort=name -C "$dir" -cf - . | $comp >"$out"
	[[ ${PIPESTATUS[0]} -eq 0 && ${PIPESTATUS[1]} -eq 0 ]]
}

# build_busybox_tar OUT / build_glibc_tar OUT: the image as an archive.
build_busybox_tar() {
	tar_from_dir "$(fixture busybox)" "$1"
}
build_glibc_tar() {
	tar_from_dir "$(fixture glibc)" "$1"
}

# The fixtures every suite uses, built ahead (run-bats.sh runs this as root
# so that the unprivileged run finds them ready):
#   bash tests/lib/images.bash all
IMAGES_ALL=(probe busybox busybox.tar busybox.tar.gz busybox.tar.xz busybox.tar.zst busybox.tar.bz2
	glibc glibc.tar glibc.tar.gz)

if [[ "${BASH_SOURCE[0]}" == "$0" ]]; then
	set -eu
	: "${TESTS_BUILD:=$IMAGES_LIB_DIR/../build}"
	mkdir -p "$TESTS_BUILD"
	TESTS_BUILD=$(cd "$TESTS_BUILD" && pwd)
	case ${1:-all} in
	all)
		for f in "${IMAGES_ALL[@]}"; do fixture "$f"; done
		;;
	*) for f in "$@"; do fixture "$f"; done ;;
	esac
fi
