#!/usr/bin/env bats
# CVE replays: one test per published container escape whose mechanism
# applies to a launcher, named after it, replaying the attack through
# gpurun: the canary it aims at (a host file or directory of this test,
# under /var/tmp, which gpurun's setup sees as the host has it) is never
# written or reached, and the host is as it was.  Each is paired with a
# "without" test where the same attack fires: replayed by the naive
# launcher it was found in (shell tools in a private mount namespace, a
# probe on the host), or by a gpurun built for these tests with its
# protection taken out (-DGPURUN_TEST_NO_RESOLVE_IN_ROOT).  Where gpurun
# has no such mechanism at all (no host-side hook reads the image's
# environment, no image binary runs before the pivot), the test shows
# that absence.  Probes: tests/probe.c and tests/cve/cveprobe.c.

load lib/common
load lib/gpu
load lib/swap
load lib/cve

setup_file() {
	cve_setup_file
	build_unsafe_gpurun
	# gpurun's seccomp filter alone (tests/escape.bats builds the same).
	SECCOMP_WRAP=$BATS_FILE_TMPDIR/seccomp-wrap
	gcc -std=gnu11 -Wall -Wextra -Werror -D_GNU_SOURCE -o "$SECCOMP_WRAP" "$TESTS_DIR/seccomp_wrap.c" \
		"$TESTS_DIR/../libgpurun.a" $(pkg-config --libs libcap-ng libseccomp)
	export SECCOMP_WRAP
}

setup() {
	# Canaries outside /tmp: gpurun mounts its scratch tmpfs on /tmp before
	# it touches the image, which would hide a canary there from a broken
	# gpurun as well and prove nothing.
	CANARY_BASE=$(mktemp -d /var/tmp/gpurun-cve.XXXXXX)
	chmod 0755 "$CANARY_BASE"
	cve_canaries "$CANARY_BASE"
	IMG=$BATS_TEST_TMPDIR/img
	host_snapshot "$BATS_TEST_TMPDIR/host.before"
}

teardown() {
	stop_swapper
	rm -rf "$CANARY_BASE"
}

# Climbs from anywhere in an image to its / (and beyond, if anything let it).
UP=../../../../../../../../../../../..

# mounts_look: a command line for the container that prints every mount
# of its own whose source is a canary (the mount's root in the host file
# system; its mount point may name the canaries' path inside the image).
mounts_look() {
	printf 'awk -v b=%q '\''index($4, b) == 1'\'' /proc/self/mountinfo; ' "$CANARY_BASE"
}

archive() { # archive DIR: DIR as a tar next to it; prints the path
	tar_from_dir "$1" "$1.tar" && echo "$1.tar"
}

# ---- NVIDIA Container Toolkit ----------------------------------------------------

# compat_image: the glibc image with CUDA forward-compat libraries newer
# than the fake driver's (999 > 550), so gpurun's ldconfig step takes
# /usr/local/cuda/compat first, and two spare links to the host canary.
compat_image() {
	cve_image glibc "$IMG"
	mkdir -p "$IMG/usr/local/cuda/compat"
	echo "image compat library" >"$IMG/usr/local/cuda/compat/libcuda.so.999.0.0"
	ln -s "$CANARY_FILE" "$IMG/usr/local/cuda/compat/.link-abs"
	ln -s "$UP$CANARY_FILE" "$IMG/usr/local/cuda/compat/.link-rel"
}

# What the container sees of the canary: its secret anywhere in the lib
# dir, the compat dir or the ld cache.
COMPAT_LOOK='grep -rl '"$CANARY_SECRET"' /usr/local/cuda /usr/lib/x86_64-linux-gnu /etc/ld.so.cache; echo done'

# CVE-2024-0132: libnvidia-container bind-mounted the CUDA compat libraries
# it found in the image into the lib dir; a symlink there made it mount a
# host path into the container.
@test "CVE-2024-0132: CUDA compat libraries in the image that link to host files bring nothing of the host in" {
	need_fake_driver
	compat_image
	ln -sf "$CANARY_FILE" "$IMG/usr/local/cuda/compat/libcuda.so.999.0.0"
	ln -s "$UP$CANARY_FILE" "$IMG/usr/local/cuda/compat/libcuda.so.998.0.0"
	ln -s "$CANARY_DIR" "$IMG/usr/local/cuda/compat/lib"
	run --separate-stderr "$GPURUN" --driver-root "$FAKE4" --gpus 0 "$(archive "$IMG")" sh -c "$COMPAT_LOOK"
	assert_success
	assert_output done
	assert_canaries_untouched
	assert_host_unchanged "$BATS_TEST_TMPDIR/host.before"
}

@test "CVE-2024-0132 without gpurun: binding the image's compat library by path brings the host file in" {
	compat_image
	ln -sf "$CANARY_FILE" "$IMG/usr/local/cuda/compat/libcuda.so.999.0.0"
	run naive_ns 'touch "$2" && mount --bind "$1" "$2" && cat "$2"' \
		"$IMG/usr/local/cuda/compat/libcuda.so.999.0.0" "$IMG$LIBDIR_DEBIAN/libcuda.so.999.0.0"
	assert_success
	assert_output "$CANARY_SECRET"
	assert_host_unchanged "$BATS_TEST_TMPDIR/host.before"
}

# CVE-2025-23359: the 0132 fix checked the compat library, then mounted it
# by path; swapped for a symlink in between, it still brought a host path in.
@test "CVE-2025-23359: CUDA compat libraries swapped for links to host files during setup bring nothing of the host in" {
	need_fake_driver
	compat_image
	local c=$IMG/usr/local/cuda/compat
	swapper "$c/libcuda.so.999.0.0" "$c/.link-abs" "$c/.link-rel"
	race_launches 30 done --driver-root "$FAKE4" --gpus 0 "$IMG" sh -c "$(mounts_look)$COMPAT_LOOK"
	assert_canaries_untouched
	assert_host_unchanged "$BATS_TEST_TMPDIR/host.before"
}

@test "CVE-2025-23359 without gpurun: a compat library checked, then swapped, then bound by path brings the host file in" {
	compat_image
	local c=$IMG/usr/local/cuda/compat
	# The launcher's check passes: a regular file of the image.
	[[ -f $c/libcuda.so.999.0.0 && ! -L $c/libcuda.so.999.0.0 ]]
	# The image's move before the use.
	exchange "$c/libcuda.so.999.0.0" "$c/.link-abs"
	run naive_ns 'touch "$2" && mount --bind "$1" "$2" && cat "$2"' \
		"$c/libcuda.so.999.0.0" "$IMG$LIBDIR_DEBIAN/libcuda.so.999.0.0"
	assert_success
	assert_output "$CANARY_SECRET"
	assert_host_unchanged "$BATS_TEST_TMPDIR/host.before"
}

# libdir_link_image TARGET: a Debian busybox image whose lib dir and
# firmware dir are symlinks to TARGET; prints the archive.
libdir_link_image() {
	cve_image busybox "$IMG"
	echo 12.0 >"$IMG/etc/debian_version"
	mkdir -p "$IMG/usr/lib" "$IMG/lib/firmware"
	ln -s "$1" "$IMG$LIBDIR_DEBIAN"
	ln -s "$1" "$IMG/lib/firmware/nvidia"
	archive "$IMG"
}

# Only the canary's own file, as it was.
assert_canary_dir_pristine() {
	assert_equal "$(ls -A "$CANARY_DIR")" keep
	assert_canaries_untouched
}

# CVE-2024-0133: mount points were created by path, so an image whose
# directories link to the host made empty files on the host.
@test "CVE-2024-0133: an image whose lib and firmware dirs link to a host directory makes no file there" {
	need_fake_driver
	local target
	for target in "$CANARY_DIR" "$UP$CANARY_DIR"; do
		rm -rf "$IMG"
		run --separate-stderr "$GPURUN" --driver-root "$FAKE4" --gpus 0 --caps all "$(libdir_link_image "$target")" \
			sh -c "ls $LIBDIR_DEBIAN | grep -c '^libcuda.so.$DRIVER_VERSION\$'"
		assert_success
		assert_output 1
		assert_canary_dir_pristine
	done
	assert_host_unchanged "$BATS_TEST_TMPDIR/host.before"
}

@test "CVE-2024-0133 with a gpurun built without RESOLVE_IN_ROOT: the same image makes files on the host" {
	need_fake_driver
	need_unsafe_gpurun
	run --separate-stderr "$UNSAFE_GPURUN" --driver-root "$FAKE4" --gpus 0 --caps all \
		"$(libdir_link_image "$CANARY_DIR")" true
	assert_success
	# The empty mount point of a library, made in the host directory.
	assert_file_exists "$CANARY_DIR/libcuda.so.$DRIVER_VERSION"
	assert_file_empty "$CANARY_DIR/libcuda.so.$DRIVER_VERSION"
	assert_host_unchanged "$BATS_TEST_TMPDIR/host.before"
}

# CVE-2024-0134: the symlinks the toolkit creates at start were made by
# path, so an image could send them outside its root.
@test "CVE-2024-0134: the SONAME links gpurun makes stay in the image when its lib dir links to a host directory" {
	need_fake_driver
	local target
	for target in "$CANARY_DIR" "$UP$CANARY_DIR"; do
		rm -rf "$IMG"
		run --separate-stderr "$GPURUN" --driver-root "$FAKE4" --gpus 0 "$(libdir_link_image "$target")" \
			readlink "$LIBDIR_DEBIAN/libcuda.so.1"
		assert_success
		assert_output "libcuda.so.$DRIVER_VERSION"
		assert_canary_dir_pristine
	done
	assert_host_unchanged "$BATS_TEST_TMPDIR/host.before"
}

@test "CVE-2024-0134 with a gpurun built without RESOLVE_IN_ROOT: the same image gets the links made on the host" {
	need_fake_driver
	need_unsafe_gpurun
	run --separate-stderr "$UNSAFE_GPURUN" --driver-root "$FAKE4" --gpus 0 "$(libdir_link_image "$CANARY_DIR")" true
	assert_success
	assert_equal "$(readlink "$CANARY_DIR/libcuda.so.1")" "libcuda.so.$DRIVER_VERSION"
	assert_host_unchanged "$BATS_TEST_TMPDIR/host.before"
}

# CVE-2024-0135: a host binary could be modified from the container.  The
# driver root here is a copy of the fake driver in a test directory, so
# that a write that got through would change nothing but the copy.
@test "CVE-2024-0135: the driver's binaries and libraries bound into the container cannot be written" {
	need_fake_driver
	skip_unless_root "a driver root with device nodes of its own needs root to copy (mknod)"
	local driver=$CANARY_BASE/driver
	cp -a "$FAKE4" "$driver"
	(cd "$driver" && sha256sum usr/bin/* ".$LIBDIR_DEBIAN"/*.so.*) >"$BATS_TEST_TMPDIR/driver.sums"
	cve_image busybox "$IMG"
	echo 12.0 >"$IMG/etc/debian_version"
	run --separate-stderr "$GPURUN" --driver-root "$driver" --gpus 0 "$(archive "$IMG")" sh -c \
		"echo pwned >>/usr/bin/nvidia-smi; echo pwned >>$LIBDIR_DEBIAN/libcuda.so.$DRIVER_VERSION
		cveprobe open-w /usr/bin/nvidia-smi $LIBDIR_DEBIAN/libcuda.so.$DRIVER_VERSION"
	assert_success
	assert_output "SAFE open-w /usr/bin/nvidia-smi: EROFS
SAFE open-w $LIBDIR_DEBIAN/libcuda.so.$DRIVER_VERSION: EROFS"
	(cd "$driver" && sha256sum -c --quiet "$BATS_TEST_TMPDIR/driver.sums")
	assert_host_unchanged "$BATS_TEST_TMPDIR/host.before"
}

@test "CVE-2024-0135 without the read-only bind: the container modifies the host's binary" {
	mkdir -p "$CANARY_BASE/driver/usr/bin"
	cp "$CVEPROBE" "$CANARY_BASE/driver/usr/bin/nvidia-smi"
	local before
	before=$(sha256sum <"$CANARY_BASE/driver/usr/bin/nvidia-smi")
	cve_image busybox "$IMG"
	run naive_ns 'touch "$2" && mount --bind "$1" "$2" && echo pwned >>"$2"' \
		"$CANARY_BASE/driver/usr/bin/nvidia-smi" "$IMG/bin/nvidia-smi"
	assert_success
	[[ $(sha256sum <"$CANARY_BASE/driver/usr/bin/nvidia-smi") != "$before" ]] || fail "the host binary is unchanged"
	assert_equal "$(tail -c 6 "$CANARY_BASE/driver/usr/bin/nvidia-smi")" pwned
	assert_host_unchanged "$BATS_TEST_TMPDIR/host.before"
}

# ldconfig_image: the glibc image whose ldconfig is cveprobe, which writes
# who ran it to /tmp/cve-ldconfig-report.
ldconfig_image() {
	cve_image glibc "$IMG"
	rm -f "$IMG/usr/sbin/ldconfig" "$IMG/sbin/ldconfig"
	cp "$CVEPROBE" "$IMG/usr/sbin/ldconfig"
}

# CVE-2024-0136/0137: the image's ldconfig (and what it loads) ran with the
# hook's host privileges, in the host's namespaces.
@test "CVE-2024-0136/0137: the image's ldconfig runs after the pivot, in the container's namespaces, with no capabilities" {
	need_fake_driver
	ldconfig_image
	run --separate-stderr "$GPURUN" --driver-root "$FAKE4" --gpus 0 "$(archive "$IMG")" \
		sh -c 'cat /tmp/cve-ldconfig-report; echo "command $(readlink /proc/self/ns/pid)"'
	assert_success
	# Neither gpurun's init nor the host's, nor the command's: pid 1 of a
	# pid namespace of its own, nested in the container's.
	assert_line --index 0 'pid 1'
	refute_line "ns $(readlink /proc/self/ns/mnt)"
	refute_line "ns $(readlink /proc/self/ns/pid)"
	refute_line "ns ${lines[-1]#command }"
	assert_line --regexp '^ns mnt:\[[0-9]+\]$'
	assert_line --regexp '^ns pid:\[[0-9]+\]$'
	assert_line "CapEff 0000000000000000"
	assert_line "root image"
	assert_host_unchanged "$BATS_TEST_TMPDIR/host.before"
}

@test "CVE-2024-0136/0137 without gpurun: the same ldconfig run by a host-side hook reports the host's namespaces" {
	ldconfig_image
	# The same binary, run on the host (as "ldconfig" it would write to /tmp).
	run "$CVEPROBE" ldconfig-report "$BATS_TEST_TMPDIR/report"
	assert_success
	run cat "$BATS_TEST_TMPDIR/report"
	assert_line "ns $(readlink /proc/self/ns/mnt)"
	assert_line "ns $(readlink /proc/self/ns/pid)"
	assert_line "root not the image"
	if [[ $GPURUN_TEST_MODE == root ]]; then
		refute_line "CapEff 0000000000000000"
	fi
}

# poc_image: the glibc image with a library at its root whose constructor
# leaves a mark in the host canary directory (inside a container that path
# is not the host's), and an image config that preloads it the way
# NVIDIAScape did, with a CUDA requirement that makes gpurun ask the
# driver's libcuda (the one host-side helper that runs driver code).
poc_image() {
	cve_image glibc "$IMG"
	cat >"$BATS_TEST_TMPDIR/poc.c" <<-EOF
		#include <stdio.h>
		#include <unistd.h>
		__attribute__((constructor)) static void mark(void)
		{
			FILE *f = fopen("$CANARY_DIR/pwned", "a");
			if (f) { fprintf(f, "loaded by pid %d\n", (int)getpid()); fclose(f); }
		}
	EOF
	gcc -shared -fPIC -o "$IMG/poc.so" "$BATS_TEST_TMPDIR/poc.c"
	tar_from_dir "$IMG" "$BATS_TEST_TMPDIR/rootfs.tar"
	python3 "$TESTS_DIR/lib/cve_images.py" "$BATS_TEST_TMPDIR/poc-oci.tar" "$BATS_TEST_TMPDIR/rootfs.tar" \
		"LD_PRELOAD=/proc/self/cwd/poc.so $IMG/poc.so" "NVIDIA_REQUIRE_CUDA=cuda>=12.0"
}

# CVE-2025-23266 "NVIDIAScape": the createContainer hook ran on the host
# with the image's environment and the container root as its cwd, so the
# image's LD_PRELOAD loaded image code into a host-root process.
@test "CVE-2025-23266: an image's LD_PRELOAD reaches no host-side process of gpurun" {
	need_fake_driver
	poc_image
	run --separate-stderr "$GPURUN" --driver-root "$FAKE4" --gpus 0 "$BATS_TEST_TMPDIR/poc-oci.tar" \
		sh -c 'echo "$LD_PRELOAD"'
	assert_success
	# The container has it, as the image says.
	assert_output "/proc/self/cwd/poc.so $IMG/poc.so"
	assert_file_not_exists "$CANARY_DIR/pwned"
	assert_canary_dir_pristine
	assert_host_unchanged "$BATS_TEST_TMPDIR/host.before"
}

@test "CVE-2025-23266 without gpurun: a host-side hook given the image's environment and root as cwd loads the image's library" {
	poc_image
	(cd "$IMG" && env LD_PRELOAD=/proc/self/cwd/poc.so /bin/true)
	assert_file_exists "$CANARY_DIR/pwned"
	run cat "$CANARY_DIR/pwned"
	assert_output --regexp '^loaded by pid [0-9]+$'
}

# CVE-2025-23267: the update-ldcache hook wrote the ld cache configuration
# into the container by path and followed symlinks the image planted there.
@test "CVE-2025-23267: the ld cache step follows no symlink the image planted onto the host" {
	need_fake_driver
	cve_image glibc "$IMG"
	rm -rf "$IMG/etc/ld.so.conf.d" "$IMG/etc/ld.so.cache"
	ln -s "$CANARY_DIR" "$IMG/etc/ld.so.conf.d"
	ln -s "$CANARY_FILE" "$IMG/etc/ld.so.cache"
	run --separate-stderr "$GPURUN" --driver-root "$FAKE4" --gpus 0 "$(archive "$IMG")" sh -c \
		"ldconfig -p | grep -c 'libcuda.so.1 '; grep -c $CANARY_SECRET /etc/ld.so.cache"
	# The image's ldconfig made its cache, inside: libcuda is in it, the
	# canary is not.
	assert_output "1
0"
	assert_canary_dir_pristine
	assert_host_unchanged "$BATS_TEST_TMPDIR/host.before"
}

@test "CVE-2025-23267 without gpurun: a hook writing the ld cache configuration by path writes into the host directory" {
	cve_image glibc "$IMG"
	rm -rf "$IMG/etc/ld.so.conf.d"
	ln -s "$CANARY_DIR" "$IMG/etc/ld.so.conf.d"
	echo "$LIBDIR_DEBIAN" >"$IMG/etc/ld.so.conf.d/00-nvcr.conf"
	assert_file_exists "$CANARY_DIR/00-nvcr.conf"
}

# ---- runc ------------------------------------------------------------------------

# CVE-2019-5736: the container opened /proc/<runc>/exe (the runtime's own
# binary, entered into the container) and overwrote the host's runc.
@test "CVE-2019-5736: the container gets no handle on pid 1's binary (gpurun) nor a writable one of its own" {
	cve_image busybox "$IMG"
	run --separate-stderr "$GPURUN" "$(archive "$IMG")" sh -c \
		'probe escape proc-1-exe proc-self-exe ptrace-init; cveprobe open-w /proc/1/exe'
	assert_success
	assert_line --index 0 --regexp '^SAFE proc-1-exe: '
	assert_line --index 1 --regexp '^SAFE proc-self-exe: '
	assert_line --index 2 --regexp '^SAFE ptrace-init: '
	assert_line --index 3 --regexp '^SAFE open-w /proc/1/exe: (EACCES|EPERM)$'
	assert_host_unchanged "$BATS_TEST_TMPDIR/host.before"
}

@test "CVE-2019-5736 without gpurun: a process of the container gets a handle on pid 1's binary" {
	# pid 1, the "runtime", is a copy of busybox in the canary directory.
	cp "$(command -v busybox)" "$CANARY_DIR/sh"
	local ns=(-m --propagation private -pf --mount-proc)
	[[ $GPURUN_TEST_MODE == root ]] || ns=(-Ur "${ns[@]}")
	run unshare "${ns[@]}" "$CANARY_DIR/sh" -c '"$0" escape proc-1-exe; true' "$PROBE"
	assert_success
	assert_output --regexp "^RISK proc-1-exe: (opened /proc/1/exe for writing|a handle on pid 1's binary .*)$"
}

# CVE-2021-30465: a symlink exchanged with a volume's mount target, racing
# runc's resolution and its mount by path, bound the volume (or the host's
# root) outside the container.
@test "CVE-2021-30465: a volume target swapped with links to a host directory during setup never puts the volume there" {
	cve_image busybox "$IMG"
	mkdir "$IMG/vol" "$BATS_TEST_TMPDIR/src"
	echo source >"$BATS_TEST_TMPDIR/src/which"
	ln -s "$CANARY_DIR" "$IMG/vol.abs"
	ln -s "$UP$CANARY_DIR" "$IMG/vol.rel"
	swapper "$IMG/vol" "$IMG/vol.abs" "$IMG/vol.rel"
	race_launches 50 "source
done" -v "$BATS_TEST_TMPDIR/src:/vol/x" -w /vol/wd "$IMG" sh -c "$(mounts_look)"'cat /vol/x/which; echo done'
	assert_canary_dir_pristine
	assert_host_unchanged "$BATS_TEST_TMPDIR/host.before"
}

@test "CVE-2021-30465 without gpurun: a target checked, then swapped, then mounted by path puts the volume in the host directory" {
	cve_image busybox "$IMG"
	mkdir "$IMG/vol" "$BATS_TEST_TMPDIR/src"
	echo source >"$BATS_TEST_TMPDIR/src/which"
	ln -s "$CANARY_DIR" "$IMG/vol.abs"
	[[ -d $IMG/vol && ! -L $IMG/vol ]]
	exchange "$IMG/vol" "$IMG/vol.abs"
	run naive_ns 'mkdir -p "$2" && mount --bind "$1" "$2" && cat "$3/x/which"' \
		"$BATS_TEST_TMPDIR/src" "$IMG/vol/x" "$CANARY_DIR"
	assert_success
	assert_output source
	assert_dir_exists "$CANARY_DIR/x"
	assert_host_unchanged "$BATS_TEST_TMPDIR/host.before"
}

# CVE-2024-21626: runc leaked an fd of a host directory into the container;
# a working directory /proc/self/fd/N put the process's cwd on the host.
@test "CVE-2024-21626: a working directory through a leaked fd is refused, from -w and from the image" {
	cve_image busybox "$IMG"
	exec 7<"$CANARY_DIR"
	run --separate-stderr "$GPURUN" -w /proc/self/fd/7 "$(archive "$IMG")" sh -c 'touch pwned; echo ran'
	assert_gpurun_error 125 "/proc/self/fd/7"
	python3 "$TESTS_DIR/lib/cve_images.py" "$BATS_TEST_TMPDIR/wd-oci.tar" "$IMG.tar" --workdir /proc/self/fd/7
	run --separate-stderr "$GPURUN" "$BATS_TEST_TMPDIR/wd-oci.tar" sh -c 'touch pwned; echo ran'
	assert_gpurun_error 125 "/proc/self/fd/7"
	# No fd of the caller's reaches the command either.
	run --separate-stderr "$GPURUN" "$IMG.tar" probe escape fds cwd
	exec 7<&-
	assert_success
	assert_output "SAFE fds: none above 2
SAFE cwd: /, inside the root"
	assert_canary_dir_pristine
	assert_host_unchanged "$BATS_TEST_TMPDIR/host.before"
}

@test "CVE-2024-21626 without gpurun: a chroot keeping the fd, with /proc/self/fd/7 as its working directory, writes on the host" {
	cve_image busybox "$IMG"
	run naive_ns 'mount --rbind /proc "$1/proc" && exec 7<"$2" && exec python3 -c "
import os, sys
os.chroot(sys.argv[1])
os.chdir(\"/proc/self/fd/7\")
open(\"pwned\", \"w\").close()" "$1"' "$IMG" "$CANARY_DIR"
	assert_success
	assert_file_exists "$CANARY_DIR/pwned"
	assert_host_unchanged "$BATS_TEST_TMPDIR/host.before"
}

# shared_volume: a volume another container shares, where it planted links
# to a host directory (absolute and relative).
shared_volume() {
	SHARED=$BATS_TEST_TMPDIR/shared
	mkdir -p "$SHARED" "$BATS_TEST_TMPDIR/src"
	echo source >"$BATS_TEST_TMPDIR/src/which"
	ln -s "$CANARY_DIR" "$SHARED/link"
	ln -s "$UP$CANARY_DIR" "$SHARED/rel"
	cve_image busybox "$IMG"
}

# CVE-2024-45310: runc created a mount target with MkdirAll by path, so a
# link planted in a shared volume made it create files on the host.
@test "CVE-2024-45310: volume targets under links planted in a shared volume create nothing on the host" {
	shared_volume
	run --separate-stderr "$GPURUN" -v "$SHARED:/shared" -v "$BATS_TEST_TMPDIR/src:/shared/link/sub" \
		-v "$BATS_TEST_TMPDIR/src:/shared/rel/sub" "$(archive "$IMG")" sh -c 'cat /shared/link/sub/which /shared/rel/sub/which'
	assert_success
	assert_output "source
source"
	assert_equal "$(ls -A "$SHARED" | tr '\n' ' ')" "link rel "
	assert_canary_dir_pristine
	assert_host_unchanged "$BATS_TEST_TMPDIR/host.before"
}

@test "CVE-2024-45310 with a gpurun built without RESOLVE_IN_ROOT: the same volumes create their target on the host" {
	need_unsafe_gpurun
	shared_volume
	run --separate-stderr "$UNSAFE_GPURUN" -v "$SHARED:/shared" -v "$BATS_TEST_TMPDIR/src:/shared/link/sub" \
		"$(archive "$IMG")" true
	assert_success
	assert_dir_exists "$CANARY_DIR/sub"
	assert_host_unchanged "$BATS_TEST_TMPDIR/host.before"
}

# CVE-2025-31133: runc masked /proc files by binding the container's
# /dev/null over them; an image /dev/null swapped for a symlink made it
# bind the link's target, read-write.
@test "CVE-2025-31133: /dev/null swapped for links to a host file during setup: /dev/null is the null device, the host file untouched" {
	cve_image busybox "$IMG"
	echo "image null" >"$IMG/dev/null"
	ln -s "$CANARY_FILE" "$IMG/dev/.link-abs"
	ln -s "$UP$CANARY_FILE" "$IMG/dev/.link-rel"
	swapper "$IMG/dev/null" "$IMG/dev/.link-abs" "$IMG/dev/.link-rel"
	race_launches 50 "rdev=1:3
done" "$IMG" sh -c "$(mounts_look)"'echo pwned >/dev/null; cat /dev/null; probe stat /dev/null | grep -o "rdev=1:3"
		echo done'
	# One launch with /dev/null a link, what each of them saw.
	exchange "$IMG/dev/null" "$IMG/dev/.link-abs"
	run --separate-stderr "$GPURUN" "$IMG" sh -c 'probe stat /dev/null | grep -o "type=chr .*rdev=1:3"
		cveprobe open-w /proc/sys/kernel/core_pattern'
	assert_success
	assert_line --index 0 --regexp '^type=chr mode=0666 .*rdev=1:3$'
	assert_line --index 1 --regexp "^SAFE open-w /proc/sys/kernel/core_pattern: (EROFS|EACCES)$"
	assert_canaries_untouched
	assert_host_unchanged "$BATS_TEST_TMPDIR/host.before"
}

@test "CVE-2025-31133 without gpurun: masking with the image's /dev/null by path binds the host file, writable" {
	cve_image busybox "$IMG"
	ln -s "$CANARY_FILE" "$IMG/dev/null"
	touch "$IMG/masked"
	run naive_ns 'mount --bind "$1/dev/null" "$1/masked" && echo pwned >"$1/masked"' "$IMG"
	assert_success
	assert_equal "$(cat "$CANARY_FILE")" pwned
	assert_host_unchanged "$BATS_TEST_TMPDIR/host.before"
}

# CVE-2025-52565: runc bound the console over the container's /dev/console
# by path; swapped for a symlink, the bind landed on the link's target.
@test "CVE-2025-52565: /dev swapped for links to a host directory during setup: console and ptys never land there" {
	cve_image busybox "$IMG"
	touch "$IMG/dev/console"
	mkdir "$IMG/dev/pts"
	ln -s "$CANARY_DIR" "$IMG/dev.abs"
	ln -s "$UP$CANARY_DIR" "$IMG/dev.rel"
	swapper "$IMG/dev" "$IMG/dev.abs" "$IMG/dev.rel"
	race_launches 50 "SAFE open-w /dev/console: ENOENT
fstype=devpts
done" "$IMG" sh -c "$(mounts_look)"'cveprobe open-w /dev/console; probe mountinfo-has /dev/pts | grep -o "fstype=devpts"
		echo done'
	# Back to the directory, wherever the swaps left it.
	[[ -L $IMG/dev.abs ]] || exchange "$IMG/dev" "$IMG/dev.abs"
	[[ -L $IMG/dev.rel ]] || exchange "$IMG/dev" "$IMG/dev.rel"
	# gpurun gives the container no console at all: its /dev is its own.
	tty_run "$GPURUN" "$IMG" sh -c 'cveprobe open-w /dev/console; probe mountinfo-has /dev | grep -o "fstype=tmpfs"'
	assert_success
	assert_output "SAFE open-w /dev/console: ENOENT
fstype=tmpfs"
	assert_canary_dir_pristine
	assert_host_unchanged "$BATS_TEST_TMPDIR/host.before"
}

@test "CVE-2025-52565 without gpurun: binding the console over the image's /dev/console by path lands on the host file" {
	cve_image busybox "$IMG"
	ln -s "$CANARY_FILE" "$IMG/dev/console"
	echo console >"$BATS_TEST_TMPDIR/console"
	run naive_ns 'mount --bind "$1" "$2/dev/console" && cat "$3" && awk "\$5 == \"$3\" { print \"mounted on \" \$5 }" /proc/self/mountinfo' \
		"$BATS_TEST_TMPDIR/console" "$IMG" "$CANARY_FILE"
	assert_success
	assert_output "console
mounted on $CANARY_FILE"
	assert_host_unchanged "$BATS_TEST_TMPDIR/host.before"
}

# CVE-2025-52881: runc's writes to /proc files (LSM labels, sysctls) went
# by path; a racing mount over /proc redirected them.
@test "CVE-2025-52881: /proc swapped for links to a host directory during setup is procfs where it lands, and no container code can mount over it" {
	need_fake_driver
	cve_image busybox "$IMG"
	ln -s "$CANARY_DIR" "$IMG/proc.abs"
	ln -s "$UP$CANARY_DIR" "$IMG/proc.rel"
	swapper "$IMG/proc" "$IMG/proc.abs" "$IMG/proc.rel"
	race_launches 50 "fstype=proc
done" "$IMG" sh -c "$(mounts_look)"'probe mountinfo-has /proc | grep -o "fstype=proc"; echo done'
	# The racing mount needs container code that can mount: neither the
	# command nor the image's ldconfig (run during setup) can.
	IMG=$BATS_TEST_TMPDIR/img-ldconfig
	ldconfig_image
	cp "$PROBE" "$IMG/bin/probe"
	run --separate-stderr "$GPURUN" --driver-root "$FAKE4" --gpus 0 "$(archive "$IMG")" sh -c \
		'probe escape mount umount:/proc/sys remount-rw:/proc/sys; cat /tmp/cve-ldconfig-report'
	assert_success
	assert_line --index 0 "SAFE mount: EPERM"
	assert_line --index 1 "SAFE umount:/proc/sys: EPERM"
	assert_line --index 2 "SAFE remount-rw:/proc/sys: EPERM"
	assert_line "CapEff 0000000000000000"
	assert_canary_dir_pristine
	assert_host_unchanged "$BATS_TEST_TMPDIR/host.before"
}

@test "CVE-2025-52881 without gpurun: a mount raced over /proc/sys redirects a write by path into the host directory" {
	skip_unless_root "procfs over the image's /proc, and a mount over it, as the runtime's root"
	cve_image busybox "$IMG"
	run naive_ns 'mount -t proc proc "$1/proc" && mount --bind "$2" "$1/proc/sys/kernel" &&
		echo 1 >"$1/proc/sys/kernel/gpurun-cve-sysctl"' "$IMG" "$CANARY_DIR"
	assert_success
	assert_equal "$(cat "$CANARY_DIR/gpurun-cve-sysctl")" 1
	assert_host_unchanged "$BATS_TEST_TMPDIR/host.before"
}

# dev_link_image TARGET: the busybox image at $IMG whose /dev is a link to
# TARGET.  A ptmx canary in the host directory: runc removed it.
dev_link_image() {
	rm -rf "$IMG"
	cve_image busybox "$IMG"
	rm -rf "$IMG/dev"
	ln -s "$1" "$IMG/dev"
}

ptmx_canary() {
	echo "$CANARY_SECRET" >"$CANARY_DIR/ptmx"
	canary_state >"$BATS_TEST_TMPDIR/canary.before"
}

assert_ptmx_canary_pristine() {
	assert_equal "$(ls -A "$CANARY_DIR")" "keep
ptmx"
	assert_canaries_untouched
}

# CVE-2026-41579: runc removed /dev/ptmx and made the /dev/fd, stdin,
# stdout, stderr and ptmx links by paths joined onto the root, so an image
# whose /dev was a link had them made in the directory it named on the
# host.  gpurun resolves /dev in the root: a link that leaves it ends
# there, where nothing is, and the launch is refused; an archive's /dev is
# never unpacked; a link to a directory the image has gets the fresh /dev
# mounted there, in the container.
@test "CVE-2026-41579: an image whose /dev links to a host directory has no ptmx removed and no link made there" {
	ptmx_canary
	local target
	for target in "$CANARY_DIR" "$UP$CANARY_DIR"; do
		dev_link_image "$target"
		run --separate-stderr "$GPURUN" "$IMG" true
		assert_gpurun_error 125 "open /dev in the container root: No such file or directory"
		run --separate-stderr "$GPURUN" "$(archive "$IMG")" sh -c \
			'probe mountinfo-has /dev | grep -o "fstype=tmpfs"; readlink /dev/fd; readlink /dev/ptmx'
		assert_success
		assert_output "fstype=tmpfs
/proc/self/fd
pts/ptmx"
		assert_ptmx_canary_pristine
	done
	# The link's target in the image too: the fresh /dev is mounted on the
	# image's own directory, in the container.
	dev_link_image "$CANARY_DIR"
	mkdir -p "$IMG$CANARY_DIR"
	run --separate-stderr "$GPURUN" "$IMG" sh -c "probe mountinfo-has $CANARY_DIR | grep -o 'fstype=tmpfs'
		probe mountinfo-has $CANARY_DIR/pts | grep -o 'fstype=devpts'
		readlink /dev/fd; readlink /dev/ptmx; probe stat /dev/null | grep -o 'type=chr .*rdev=1:3'"
	assert_success
	assert_line --index 0 fstype=tmpfs
	assert_line --index 1 fstype=devpts
	assert_line --index 2 /proc/self/fd
	assert_line --index 3 pts/ptmx
	assert_line --index 4 --regexp '^type=chr mode=0666 .*rdev=1:3$'
	assert_equal "$(ls -A "$IMG$CANARY_DIR")" ""
	assert_ptmx_canary_pristine
	assert_host_unchanged "$BATS_TEST_TMPDIR/host.before"
}

@test "CVE-2026-41579 without gpurun: /dev's links made by joined paths in an image whose /dev links to a host directory land there, and its ptmx goes" {
	ptmx_canary
	dev_link_image "$CANARY_DIR"
	run naive_ns 'rm -f "$1/dev/ptmx" && ln -s pts/ptmx "$1/dev/ptmx" && ln -s /proc/self/fd "$1/dev/fd" &&
		ln -s /proc/self/fd/0 "$1/dev/stdin"' "$IMG"
	assert_success
	assert_equal "$(readlink "$CANARY_DIR/ptmx")" pts/ptmx
	assert_equal "$(readlink "$CANARY_DIR/fd")" /proc/self/fd
	assert_equal "$(readlink "$CANARY_DIR/stdin")" /proc/self/fd/0
	assert_host_unchanged "$BATS_TEST_TMPDIR/host.before"
}

@test "CVE-2026-41579 with a gpurun built without RESOLVE_IN_ROOT: an image whose /dev links to a host directory runs with no /dev of its own" {
	need_unsafe_gpurun
	dev_link_image "$CANARY_DIR"
	# /dev's tmpfs went to the host directory, in the container's mount
	# namespace: what the container calls /dev is the image's dangling link.
	run --separate-stderr "$UNSAFE_GPURUN" "$IMG" sh -c 'probe mountinfo-has /dev; probe stat /dev/null; echo done'
	assert_success
	assert_output "/dev: not a mount point
stat: ENOENT
done"
	assert_canary_dir_pristine
	assert_host_unchanged "$BATS_TEST_TMPDIR/host.before"
}

# dev_entries_image: the busybox image at $IMG whose /dev holds links to
# the host canaries, absolute and relative, where a runtime makes or
# mounts its /dev entries.
dev_entries_image() {
	cve_image busybox "$IMG"
	rm -rf "$IMG/dev"
	mkdir "$IMG/dev"
	local n
	for n in pts shm mqueue; do ln -s "$CANARY_DIR" "$IMG/dev/$n"; done
	ln -s "$UP$CANARY_DIR" "$IMG/dev/fd"
	for n in null zero full random urandom tty console; do ln -s "$CANARY_FILE" "$IMG/dev/$n"; done
	for n in ptmx stdin stdout stderr; do ln -s "$UP$CANARY_FILE" "$IMG/dev/$n"; done
}

# CVE-2026-47766: crun set up /dev following the image's links: /dev/pts,
# /dev/shm, /dev/null, /dev/ptmx or /dev/fd as links took its mounts and
# nodes out of the root.  gpurun never looks at the image's /dev: a fresh
# tmpfs is mounted over it first, and everything else is made in that.
@test "CVE-2026-47766: an image whose /dev/pts, /dev/shm, /dev/null, /dev/ptmx, /dev/fd and the rest link to host paths gets a fresh /dev that reaches none of them" {
	dev_entries_image
	local img
	for img in "$IMG" "$(archive "$IMG")"; do
		run --separate-stderr "$GPURUN" "$img" sh -c "$(mounts_look)"'probe mountinfo-has /dev | grep -o "fstype=tmpfs"
			probe mountinfo-has /dev/pts | grep -o "fstype=devpts"
			probe mountinfo-has /dev/shm | grep -o "fstype=tmpfs"
			probe stat /dev/null | grep -o "type=chr .*rdev=1:3"
			readlink /dev/fd; readlink /dev/ptmx; readlink /dev/stdin
			echo pwned >/dev/null; echo pwned >/dev/shm/written; ls -A /dev/shm
			cveprobe open-w /dev/console; echo done'
		assert_success
		assert_line --index 0 fstype=tmpfs
		assert_line --index 1 fstype=devpts
		assert_line --index 2 fstype=tmpfs
		assert_line --index 3 --regexp '^type=chr mode=0666 .*rdev=1:3$'
		assert_line --index 4 /proc/self/fd
		assert_line --index 5 pts/ptmx
		assert_line --index 6 /proc/self/fd/0
		assert_line --index 7 written
		assert_line --index 8 "SAFE open-w /dev/console: ENOENT"
		assert_line --index 9 done
		assert_equal "${#lines[@]}" 10
		assert_canary_dir_pristine
	done
	assert_host_unchanged "$BATS_TEST_TMPDIR/host.before"
}

@test "CVE-2026-47766 without gpurun: /dev/shm and /dev/null set up by path through the image's links land on the host directory and file" {
	dev_entries_image
	run naive_ns 'mount -t tmpfs shm "$1/dev/shm" && mount --bind /dev/null "$1/dev/null" &&
		awk -v d="$2" -v f="$3" '\''$5 == d || $5 == f { print "mounted on " $5 }'\'' /proc/self/mountinfo' \
		"$IMG" "$CANARY_DIR" "$CANARY_FILE"
	assert_success
	assert_output "mounted on $CANARY_DIR
mounted on $CANARY_FILE"
	assert_host_unchanged "$BATS_TEST_TMPDIR/host.before"
}

# ---- cgroup v1 ---------------------------------------------------------------------

# CVE-2022-0492: a container could mount a cgroup v1 hierarchy (from a new
# user namespace) and write its release_agent, run by the kernel as root.
@test "CVE-2022-0492: the container can mount no cgroup v1 hierarchy and open no release_agent" {
	cve_image busybox "$IMG"
	run --separate-stderr "$GPURUN" "$(archive "$IMG")" sh -c \
		'cveprobe cgroup-mount /mnt; cveprobe cgroup-mount /mnt userns; cveprobe open-w /sys/fs/cgroup/*/release_agent'
	assert_success
	assert_line --index 0 "SAFE cgroup-mount: mount: EPERM"
	assert_line --index 1 "SAFE cgroup-mount: unshare: EPERM"
	refute_output --partial RISK
	local agent
	for agent in /sys/fs/cgroup/*/release_agent; do
		[[ -e $agent ]] || continue
		assert_line --regexp "^SAFE open-w $agent: (EROFS|EACCES)$"
	done
	assert_host_unchanged "$BATS_TEST_TMPDIR/host.before"
}

@test "CVE-2022-0492 without gpurun: root mounts a cgroup v1 hierarchy and opens its release_agent for writing" {
	skip_unless_root "the release_agent is the host root's to write"
	grep -qw cgroup /proc/filesystems || skip "this kernel has no cgroup v1"
	mkdir "$BATS_TEST_TMPDIR/cg"
	run unshare -m --propagation private "$CVEPROBE" cgroup-mount "$BATS_TEST_TMPDIR/cg"
	assert_success
	assert_output "RISK cgroup-mount: opened release_agent for writing"
	assert_host_unchanged "$BATS_TEST_TMPDIR/host.before"
}

# ---- bubblewrap and flatpak --------------------------------------------------------

# CVE-2017-5226: a sandboxed process on the caller's terminal pushed
# keystrokes into its input with TIOCSTI; the shell ran them on exit.
@test "CVE-2017-5226: TIOCSTI on the caller's terminal is refused" {
	cve_image busybox "$IMG"
	tty_run "$GPURUN" "$IMG" cveprobe tiocsti
	assert_success
	assert_output "SAFE tiocsti: EPERM"
}

@test "CVE-2017-5226 without gpurun: TIOCSTI reaches the terminal" {
	skip_unless_root "TIOCSTI needs CAP_SYS_ADMIN or a terminal that is the caller's own"
	tty_run "$CVEPROBE" tiocsti
	assert_success
	# The injected space echoes back before the line.
	assert_output --regexp '^ ?RISK tiocsti: succeeded$'
}

# CVE-2019-10063: flatpak's filter compared the ioctl command as 64 bits;
# the kernel reads 32, so TIOCSTI with a high bit set got through.
@test "CVE-2019-10063: TIOCSTI with high bits set in the command is refused, in the container and by the filter alone" {
	cve_image busybox "$IMG"
	tty_run "$GPURUN" "$IMG" cveprobe tiocsti-high
	assert_success
	assert_output "SAFE tiocsti-high: EPERM"
	# With every capability of the host's root: the filter's own EPERM.
	tty_run "$SECCOMP_WRAP" "$CVEPROBE" tiocsti-high
	assert_success
	assert_output "SAFE tiocsti-high: EPERM"
}

@test "CVE-2019-10063 without the masked compare: a filter that stops TIOCSTI lets it through with a high bit" {
	skip_unless_root "TIOCSTI needs CAP_SYS_ADMIN or a terminal that is the caller's own"
	tty_run "$CVEPROBE" naive-filter sh -c '"$0" tiocsti; "$0" tiocsti-high' "$CVEPROBE"
	assert_success
	assert_output --regexp '^SAFE tiocsti: EPERM
 ?RISK tiocsti-high: succeeded$'
}
