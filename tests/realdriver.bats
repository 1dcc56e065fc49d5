#!/usr/bin/env bats
# GPU injection against NVIDIA's real user-space files: Debian 12's 535.x
# packages unpacked into a driver root with the fake kit's kernel side
# (tests/lib/realdriver.bash).  What the fake kit cannot show: the real
# layout (files in nvidia/current behind /etc/alternatives links), real
# nvidia-smi, libcuda and NVML answering with no kernel driver, what the
# libraries need at load time, and the files loaders look for outside
# ld.so.cache.  Several GPUs, MIG and odd minors stay gpu.bats' and
# gpu_mig.bats'.

load lib/common
load lib/gpu

setup_file() {
	require_gpurun
	# shellcheck source=lib/realdriver.bash
	source "$TESTS_DIR/lib/realdriver.bash"
	# Root builds or refreshes it (no network once the packages are kept);
	# the unprivileged run uses what root built.
	if [[ $(id -u) -eq 0 ]]; then
		REAL=$(bash "$TESTS_DIR/lib/realdriver.bash" build) ||
			skip "cannot fetch Debian's NVIDIA packages (is $REALDRIVER_MIRROR reachable?)"
	else
		REAL=$(real_driver)
	fi
	[[ -n $REAL ]] || skip "no real driver root in $TESTS_BUILD (root builds it: tests/run-bats.sh)"
	REAL_VERSION=${REAL##*/realdriver-}
	# The glibc test image with the probe that loads libcuda and NVML
	# (tests/lib/realdriver.c).  A tar, unpacked by the caller, so that it
	# works in both modes.
	local img=$BATS_FILE_TMPDIR/img
	cp -a "$(fixture glibc)" "$img" &&
		gcc -O2 -Wall -Wextra -Werror -o "$img/usr/bin/realprobe" "$TESTS_DIR/lib/realdriver.c" -ldl &&
		tar_from_dir "$img" "$BATS_FILE_TMPDIR/real.tar" || fail "cannot build the probe image"
	export REAL REAL_VERSION REAL_TAR=$BATS_FILE_TMPDIR/real.tar
}

setup() {
	host_snapshot "$BATS_TEST_TMPDIR/host.before"
}

teardown() {
	assert_host_unchanged "$BATS_TEST_TMPDIR/host.before"
}

# real ARGS...: gpurun on the real driver root.
real() {
	"$GPURUN" --driver-root "$REAL" "$@"
}

# The CUDA driver API version libcuda of each driver branch reports.
cuda_of() {
	case ${1%%.*} in
	535) echo 12020 ;;
	*) fail "no CUDA version known for driver $1: add it" ;;
	esac
}

# The driver's own libraries, as a loader names them ("not found" for one
# of these is a broken injection; for libX11 and the like, the image's lack).
# The check is ldd's: the loader with LD_TRACE_LOADED_OBJECTS lists every
# dependency, found or not.
DRIVER_LIB_RE='lib(cuda|nvidia-[a-z0-9-]+|nvcuvid|nvoptix|vdpau_nvidia|GLX_nvidia|EGL_nvidia|GLES[a-zA-Z0-9_]*_nvidia)\.so'

@test "the real nvidia-smi runs and fails only because no kernel driver answers (exit 9)" {
	run --separate-stderr real --gpus 0 "$REAL_TAR" nvidia-smi
	assert_equal "$status" 9
	assert_output --partial "NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver"
	assert_equal "$stderr" ""
}

@test "the real libcuda gives the packaged CUDA version and cuInit says no device, not a load failure" {
	run --separate-stderr real --gpus 0 "$REAL_TAR" realprobe
	assert_success
	# cuInit 100 = CUDA_ERROR_NO_DEVICE; nvmlInit_v2 9 = NVML_ERROR_DRIVER_NOT_LOADED:
	# both libraries loaded and ran, only the kernel module is missing.
	assert_output "cuDriverGetVersion=$(cuda_of "$REAL_VERSION") (CUresult 0) cuInit=100 nvmlInit_v2=9"
}

@test "every injected binary and library finds the driver libraries it needs" {
	run --separate-stderr real --gpus 0 --caps all "$REAL_TAR" sh -c '
		n=0
		for f in /usr/bin/nvidia* '"$LIBDIR_DEBIAN"'/*.so* '"$LIBDIR_DEBIAN"'/vdpau/*; do
			probe mountinfo-has "$f" >/dev/null 2>&1 || continue
			n=$((n + 1))
			LD_TRACE_LOADED_OBJECTS=1 /usr/lib64/ld-linux-x86-64.so.2 "$f" >/tmp/ldd 2>&1 ||
				{ echo "$f: ld.so failed"; cat /tmp/ldd; }
			grep "not found" /tmp/ldd | sed "s|^|$f: |"
		done
		echo "checked $n"'
	assert_success
	refute_output --regexp "$DRIVER_LIB_RE[^ ]* => not found"
	refute_output --partial "ld.so failed"
	# As many as gpurun list names: the binaries and the 64-bit libraries
	# (the VDPAU driver among them).
	local checked want
	checked=$(sed -n 's/^checked //p' <<<"$output")
	want=$("$GPURUN" list --driver-root "$REAL" --gpus 0 --caps all |
		grep -cE "(/$(uname -m)-linux-gnu/.*\.so\.|/s?bin/nvidia-|/nvidia/current/nvidia-)")
	assert_equal "$checked" "$want"
}

@test "--caps all with compat32 puts the real i386 libraries and their SONAME links in the 32-bit lib dir" {
	run --separate-stderr real --gpus 0 --caps all "$REAL_TAR" sh -c '
		cd /usr/lib/i386-linux-gnu || exit 1
		for l in libcuda.so.1 libnvidia-ml.so.1 libGLX_nvidia.so.0 libnvidia-ptxjitcompiler.so.1; do
			f=$(readlink "$l") || { echo "$l: no link"; continue; }
			echo "$l -> $f class $(od -An -tu1 -j4 -N1 "$f" | tr -d " ")"
		done'
	assert_success
	for l in libcuda.so.1 libnvidia-ml.so.1 libGLX_nvidia.so.0 libnvidia-ptxjitcompiler.so.1; do
		# ELF class 1: 32-bit objects.
		assert_line "$l -> ${l%%.so*}.so.$REAL_VERSION class 1"
	done
}

@test "gpurun info reads the real driver's version and its CUDA version from the real libcuda" {
	run --separate-stderr "$GPURUN" info --driver-root "$REAL"
	assert_success
	assert_line "NVRM version:   $REAL_VERSION"
	local cuda
	cuda=$(cuda_of "$REAL_VERSION")
	assert_line "CUDA version:   $((cuda / 1000)).$((cuda % 1000 / 10))"
	assert_line "Device Minor:   0"
}

@test "gpurun list finds the real files behind Debian's alternatives links" {
	run --separate-stderr "$GPURUN" list --driver-root "$REAL" --gpus 0 --caps utility,compute
	assert_success
	assert_line "$REAL/usr/lib/nvidia/current/nvidia-smi"
	assert_line "$REAL$LIBDIR_DEBIAN/nvidia/current/libcuda.so.$REAL_VERSION"
	assert_line "$REAL$LIBDIR_DEBIAN/nvidia/current/libnvidia-ml.so.$REAL_VERSION"
	assert_line "$REAL/lib/firmware/nvidia/$REAL_VERSION/gsp_ga10x.bin"
	# Nothing of the host's own /usr/lib: every link was followed inside the root.
	refute_line --regexp "^/usr/"
}

@test "--caps video puts the VDPAU driver where libvdpau looks for it" {
	run --separate-stderr real --gpus 0 --caps video "$REAL_TAR" sh -c '
		readlink '"$LIBDIR_DEBIAN"'/vdpau/libvdpau_nvidia.so.1 &&
		LD_TRACE_LOADED_OBJECTS=1 /usr/lib64/ld-linux-x86-64.so.2 '"$LIBDIR_DEBIAN"'/vdpau/libvdpau_nvidia.so.1 >/dev/null &&
		echo loads'
	assert_success
	assert_output "libvdpau_nvidia.so.$REAL_VERSION
loads"
}

# The graphics files the loaders look for outside ld.so.cache, seen from
# inside: what each is, or "missing".
GRAPHICS_VIEW='
for f in /usr/share/nvidia/nvoptix.bin /usr/share/nvidia/nvidia-application-profiles-'"$REAL_VERSION"'-rc \
	/usr/share/nvidia/nvidia-application-profiles-'"$REAL_VERSION"'-key-documentation \
	'"$LIBDIR_DEBIAN"'/libnvidia-vulkan-producer.so.'"$REAL_VERSION"'; do
	if [ -s "$f" ]; then echo "$f"; else echo "$f missing"; fi
done
for l in '"$LIBDIR_DEBIAN"'/gbm/nvidia-drm_gbm.so '"$LIBDIR_DEBIAN"'/libGLX_indirect.so.0; do
	if [ -e "$l" ]; then echo "$l -> $(readlink "$l")"; else echo "$l missing"; fi
done'

# expected_graphics GLX_INDIRECT_TARGET: what GRAPHICS_VIEW must print.
expected_graphics() {
	printf '%s\n' /usr/share/nvidia/nvoptix.bin "/usr/share/nvidia/nvidia-application-profiles-$REAL_VERSION-rc" \
		"/usr/share/nvidia/nvidia-application-profiles-$REAL_VERSION-key-documentation" \
		"$LIBDIR_DEBIAN/libnvidia-vulkan-producer.so.$REAL_VERSION" \
		"$LIBDIR_DEBIAN/gbm/nvidia-drm_gbm.so -> ../libnvidia-allocator.so.1" \
		"$LIBDIR_DEBIAN/libGLX_indirect.so.0 -> $1"
}

@test "--caps graphics injects nvoptix.bin, the GBM backend, the Vulkan producer and the application profiles" {
	run --separate-stderr real --gpus 0 --caps graphics "$REAL_TAR" sh -c "$GRAPHICS_VIEW"
	assert_success
	assert_output "$(expected_graphics "libGLX_nvidia.so.$REAL_VERSION")"
}

@test "a CDI spec from cdi generate gives --device nvidia.com/gpu=0 the real nvidia-smi and libcuda" {
	local specs=$BATS_TEST_TMPDIR/cdi
	mkdir -p "$specs"
	run --separate-stderr "$GPURUN" cdi generate --driver-root "$REAL" --output "$specs/nvidia.yaml"
	assert_success
	run --separate-stderr "$GPURUN" --cdi-spec-dir "$specs" --device nvidia.com/gpu=0 "$REAL_TAR" \
		sh -c 'nvidia-smi; echo "smi $?"; realprobe'
	assert_success
	assert_line --partial "couldn't communicate with the NVIDIA driver"
	assert_line "smi 9"
	assert_line "cuDriverGetVersion=$(cuda_of "$REAL_VERSION") (CUresult 0) cuInit=100 nvmlInit_v2=9"
}

@test "under CDI the graphics files and VDPAU driver are where their loaders look, as with --gpus" {
	local specs=$BATS_TEST_TMPDIR/cdi
	mkdir -p "$specs"
	"$GPURUN" cdi generate --driver-root "$REAL" --output "$specs/nvidia.yaml"
	run --separate-stderr "$GPURUN" --cdi-spec-dir "$specs" --device nvidia.com/gpu=0 "$REAL_TAR" \
		sh -c "$GRAPHICS_VIEW"' ; readlink '"$LIBDIR_DEBIAN"'/vdpau/libvdpau_nvidia.so.1'
	assert_success
	assert_output "$(expected_graphics "libGLX_nvidia.so.$REAL_VERSION")
libvdpau_nvidia.so.$REAL_VERSION"
}

@test "gpurun doctor finds the real driver and its libraries in the loader cache" {
	run --separate-stderr "$GPURUN" doctor --driver-root "$REAL"
	assert_line --regexp "^ok +NVIDIA driver: version $REAL_VERSION, 1 GPU under $REAL\$"
	assert_line --regexp "^ok +ld.so.cache: .* lists libcuda.so.$REAL_VERSION and libnvidia-ml.so.$REAL_VERSION\$"
}
