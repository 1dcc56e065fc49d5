#!/usr/bin/env bats
# GPU injection against hostile images and hostile drivers: symlinks planted where the driver's files land must
# never send a mount or a file creation onto the host (the CVE-2024-0132 /
# 0133 class), an image's environment must not reach gpurun's own helpers
# (CVE-2025-23266 "NVIDIAScape"), and the driver's libcuda runs only in a
# short-lived, empty-environment child.

load lib/common
load lib/gpu

setup_file() {
	gpu_setup_file
}

setup() {
	# A host directory and a host file a hostile image aims at.
	HOST_DIR=$BATS_TEST_TMPDIR/host-dir
	HOST_FILE=$BATS_TEST_TMPDIR/host-file
	mkdir -p "$HOST_DIR"
	echo "host data" >"$HOST_DIR/keep"
	echo "host file" >"$HOST_FILE"
	HOST_DIR_BEFORE=$(find "$HOST_DIR" -printf '%p %y %s %T@\n' | LC_ALL=C sort)
	HOST_FILE_BEFORE=$(host_file_state "$HOST_FILE")
	host_snapshot "$BATS_TEST_TMPDIR/host.before"
}

# The planted targets are untouched, nothing new is mounted or created on
# the host.
assert_host_safe() {
	assert_equal "$(find "$HOST_DIR" -printf '%p %y %s %T@\n' | LC_ALL=C sort)" "$HOST_DIR_BEFORE"
	assert_equal "$(host_file_state "$HOST_FILE")" "$HOST_FILE_BEFORE"
	assert_host_unchanged "$BATS_TEST_TMPDIR/host.before"
}

# After `run`: gpurun either ran the container (the link was followed inside
# the image) or refused with its one-line error; never anything else.
assert_ran_or_refused() {
	case $status in
	0) ;;
	125) assert_gpurun_error 125 ;;
	*) fail "status $status: $stderr" ;;
	esac
}

# hostile_image CMD...: a copy of the busybox image (static, so it runs
# whatever happens to its lib dirs) changed by running CMD inside the copy,
# archived; prints the archive.
hostile_image() {
	local dir=$BATS_TEST_TMPDIR/img
	rm -rf "$dir"
	image_copy busybox "$dir" >/dev/null || return 1
	(cd "$dir" && "$@") || return 1
	tar_from_dir "$dir" "$BATS_TEST_TMPDIR/img.tar" && echo "$BATS_TEST_TMPDIR/img.tar"
}

# Enough dots to climb from anywhere in an image to its / (and beyond, if
# anything let them).
UP=../../../../../../../../../../../..
# A directory that exists in the hostile image but not on the host (and not
# under /tmp, which is a fresh tmpfs in the container).
IMG_ONLY=/srv/gpurun-test-elsewhere

# never_written MAKER ARG...: for a host target named absolutely and through
# ../.., an image made by `MAKER ARG... TARGET` either runs or is refused,
# and the host is untouched.
never_written() {
	local target
	for target in "$HOST_DIR" "$UP$HOST_DIR"; do
		img=$(hostile_image "$@" "$target")
		run --separate-stderr gpu4 --gpus 0 --caps all "$img" true
		assert_ran_or_refused
		assert_host_safe
	done
}

debian_libdir_to() {
	echo 12.0 >etc/debian_version
	mkdir -p usr/lib ".$IMG_ONLY"
	ln -s "$1" ".$LIBDIR_DEBIAN"
}

@test "a Debian image whose lib dir links to a host directory never gets it written" {
	never_written debian_libdir_to
}

@test "a lib dir link is followed inside the image: the libraries land in the image's own target" {
	for target in "$IMG_ONLY" "$UP$IMG_ONLY"; do
		img=$(hostile_image debian_libdir_to "$target")
		run --separate-stderr gpu4 --gpus 0 "$img" ls "$IMG_ONLY"
		assert_success
		assert_line "libcuda.so.$DRIVER_VERSION"
		assert_file_not_exists "$IMG_ONLY"
		assert_host_safe
	done
}

link_to() { # link_to PATH TARGET
	ln -s "$2" "$1"
}

@test "a non-Debian image whose /usr/lib64 links to the host gets nothing written there" {
	never_written link_to usr/lib64
}

@test "an image's /usr/bin/nvidia-smi linking to a host file is replaced, the host file untouched" {
	# (usr/bin is a link to bin in this image)
	for target in "$HOST_FILE" "$UP$HOST_FILE"; do
		img=$(hostile_image ln -s "$target" bin/nvidia-smi)
		run --separate-stderr gpu4 --gpus 0 "$img" sh -c 'test -L /usr/bin/nvidia-smi || echo replaced'
		assert_success
		assert_output replaced
		assert_host_safe
	done
}

@test "an image's lib/firmware/nvidia linking to the host gets nothing written there" {
	never_written sh -c 'mkdir -p lib/firmware && ln -s "$1" lib/firmware/nvidia' sh
}

@test "a firmware link is followed inside the image" {
	img=$(hostile_image sh -c 'mkdir -p lib/firmware ".$1" && ln -s "$1" lib/firmware/nvidia' sh "$IMG_ONLY")
	run --separate-stderr gpu4 --gpus 0 "$img" cat "$IMG_ONLY/$DRIVER_VERSION/gsp_ga10x.bin"
	assert_success
	assert_output "GSP firmware $DRIVER_VERSION ga10x"
	assert_host_safe
}

@test "an image's /proc or /dev linking to the host never mounts on the host" {
	never_written sh -c 'rm -rf proc && ln -s "$1" proc' sh
	never_written sh -c 'rm -rf dev && ln -s "$1" dev' sh
}

@test "an image's /etc/nvidia linking to the host gets no graphics profile mounted there" {
	never_written link_to etc/nvidia
}

# The same on the mig fake driver, with a MIG device, an IMEX channel, the
# 32-bit libraries and the graphics JSON files.
never_written_mig() {
	local target
	for target in "$HOST_DIR" "$UP$HOST_DIR"; do
		img=$(hostile_image "$@" "$target")
		run --separate-stderr "$GPURUN" --driver-root "$FAKEMIG" --gpus 0:0 -e NVIDIA_IMEX_CHANNELS=0 \
			--caps all "$img" true
		assert_ran_or_refused
		assert_host_safe
	done
}

@test "an image's Vulkan and EGL configuration dirs linking to the host get no JSON file there" {
	never_written_mig link_to etc/vulkan
	never_written_mig sh -c 'mkdir -p usr/share && ln -s "$1" usr/share/glvnd' sh
	never_written_mig sh -c 'mkdir -p usr/share/egl && ln -s "$1" usr/share/egl/egl_external_platform.d' sh
}

@test "an image's 32-bit lib dir linking to the host never gets it written (Debian and others)" {
	never_written_mig sh -c 'echo 12.0 >etc/debian_version && mkdir -p usr/lib && ln -s "$1" usr/lib/i386-linux-gnu' sh
	never_written_mig link_to usr/lib32
}

@test "the graphics profile lists the selected GPUs' minors" {
	run --separate-stderr gpu4 --gpus 0,1 --caps graphics "$BUSYBOX_TAR" \
		cat /etc/nvidia/nvidia-application-profiles-rc.d/10-container.conf
	assert_success
	# index 0 is minor 2, index 1 minor 0: bits 2 and 0
	assert_output --partial '"EGLVisibleDGPUDevices", 0x5]'
}

# ---- the container's environment and the driver's code ------------------------

# driver_variant C-SOURCE: a copy of the one-GPU fake driver (no /dev: enough
# for info, list and --dry-run) whose libcuda is built from C-SOURCE.
driver_variant() {
	local root=$BATS_TEST_TMPDIR/driver
	mkdir -p "$root"
	cp -r "$FAKE1/proc" "$FAKE1/etc" "$FAKE1/usr" "$root/"
	printf '%s\n' "$1" >"$BATS_TEST_TMPDIR/cuda.c"
	rm -f "$root$LIBDIR_DEBIAN/libcuda.so.$DRIVER_VERSION"
	gcc -shared -fPIC -Wl,-soname,libcuda.so.1 -o "$root$LIBDIR_DEBIAN/libcuda.so.$DRIVER_VERSION" \
		"$BATS_TEST_TMPDIR/cuda.c" || return 1
	echo "$root"
}

@test "the image's LD_PRELOAD and LD_LIBRARY_PATH never reach gpurun's helpers" {
	cat >"$BATS_TEST_TMPDIR/evil.c" <<-EOF
		#include <stdio.h>
		__attribute__((constructor)) static void pwn(void)
		{
			FILE *f = fopen("$BATS_TEST_TMPDIR/pwned", "a");
			if (f) { fputs("loaded\n", f); fclose(f); }
		}
	EOF
	gcc -shared -fPIC -o "$BATS_TEST_TMPDIR/evil.so" "$BATS_TEST_TMPDIR/evil.c"
	# cuda>= makes gpurun load the driver's libcuda in its helper child.
	run --separate-stderr gpu4 --gpus 0 -e "LD_PRELOAD=$BATS_TEST_TMPDIR/evil.so" \
		-e "LD_LIBRARY_PATH=$BATS_TEST_TMPDIR" -e 'NVIDIA_REQUIRE_CUDA=cuda>=12.0' "$GLIBC_TAR" nvidia-smi -L
	assert_success
	assert_file_not_exists "$BATS_TEST_TMPDIR/pwned"
	assert_host_safe
}

@test "libcuda is asked for the CUDA version with an empty environment" {
	root=$(driver_variant '
		extern char **environ;
		int cuDriverGetVersion(int *v)
		{
			int n = 0;
			while (environ && environ[n])
				n++;
			*v = 12000 + 10 * n; /* 12.0 when the environment is empty */
			return 0;
		}')
	SOME_HOST_VAR=1 run --separate-stderr "$GPURUN" info --driver-root "$root"
	assert_success
	assert_line --index 1 "CUDA version:   12.0"
}

@test "a libcuda that kills its process does not take gpurun down" {
	root=$(driver_variant '
		#include <unistd.h>
		__attribute__((constructor)) static void die(void) { _exit(3); }
		int cuDriverGetVersion(int *v) { *v = 99000; return 0; }')
	run --separate-stderr "$GPURUN" info --driver-root "$root"
	assert_success
	assert_line --index 1 "CUDA version:   n/a"
	[[ $stderr == *"the helper process died"* ]] || fail "stderr: $stderr"
	# A launch needs the driver's device nodes, which only root can copy.
	[[ $GPURUN_TEST_MODE == root ]] || return 0
	cp -a "$FAKE1/dev" "$root/"
	run --separate-stderr "$GPURUN" --dry-run --driver-root "$root" --gpus 0 --require 'cuda>=99' "$GLIBC_TAR" true
	assert_success
	[[ $stderr == *"cannot read the CUDA version"*"the helper process died"* ]] || fail "stderr: $stderr"
}

@test "a libcuda that hangs is given up on after a few seconds" {
	root=$(driver_variant '
		#include <unistd.h>
		int cuDriverGetVersion(int *v) { for (;;) pause(); }')
	start=$SECONDS
	run --separate-stderr "$GPURUN" info --driver-root "$root"
	assert_success
	assert_line --index 1 "CUDA version:   n/a"
	[[ $stderr == *"timed out"* ]] || fail "stderr: $stderr"
	((SECONDS - start < 30)) || fail "took $((SECONDS - start)) s"
}

@test "as root, libcuda runs as nobody, not as the launcher's root" {
	skip_unless_root "the helper can only drop privileges it has"
	root=$(driver_variant '
		#include <unistd.h>
		int cuDriverGetVersion(int *v) { *v = getuid() == 65534 && geteuid() == 65534 ? 12010 : 12990; return 0; }')
	run --separate-stderr "$GPURUN" info --driver-root "$root"
	assert_success
	assert_line --index 1 "CUDA version:   12.1"
}
