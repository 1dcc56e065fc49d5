# tests/lib/gpu.bash — what the GPU suites share (load after lib/common):
#   load lib/common
#   load lib/gpu
#
# The fake NVIDIA drivers (tests/fakedriver/build.sh): FAKE1 (one H100),
# FAKE4 (four GPUs, minors not in PCI order) and FAKEODD (an excluded GPU,
# one without a UUID yet, one of a model gpurun has no arch for) and
# FAKENOUVM (FAKE1 after a fresh boot: no nvidia-uvm, a fake nvidia-modprobe;
# tests that let it run use a copy), built into tests/build by root
# (tests/run-bats.sh does it before both runs; a root run of a suite builds
# or refreshes them itself; an unprivileged run uses what root built and
# skips when there is nothing).
#
# nvidia-container-cli's lists as the fake
# driver provides them, and expected_list CAPS, the exact `gpurun list`
# output a capability set must give: the tests' oracle, written from the
# reference, not from gpu/caps.c.

FAKEDRIVER_SRC="$TESTS_DIR/fakedriver"
DRIVER_VERSION=550.54.14
# The Debian lib dir of this machine (gpurun's $LIBDIR in Debian images).
# bash's HOSTTYPE is uname -m without a fork, which every test would pay.
case $HOSTTYPE in
aarch64) LIBDIR_DEBIAN=/usr/lib/aarch64-linux-gnu ;;
ppc64le | powerpc64le) LIBDIR_DEBIAN=/usr/lib/powerpc64le-linux-gnu ;;
*) LIBDIR_DEBIAN=/usr/lib/x86_64-linux-gnu ;;
esac

# FOUR_* describe the four-GPU topology in index (PCI bus) order.
FOUR_BUS=(0000:3b:00.0 0000:5e:00.0 0000:86:00.0 0000:af:00.0)
FOUR_MINOR=(2 0 3 1)
FOUR_MODEL=("NVIDIA H100 80GB HBM3" "NVIDIA A100-SXM4-80GB" "Tesla V100-SXM2-16GB" "NVIDIA H100 80GB HBM3")
FOUR_UUID=(GPU-0c9c1a44-3f53-4a35-9c7e-7e0d6c1a3b3b GPU-1d2e3f40-5162-4738-89ab-cdef01234567
	GPU-8f7e6d5c-4b3a-4291-8071-605f4e3d2c1b GPU-a0b1c2d3-e4f5-4061-9728-394a5b6c7d8e)
ONE_UUID=GPU-5b1e5f16-6bd4-44c2-a1a8-2d2f3a9c1b01
# ODD_*: the odd topology as NVML would number it (the excluded
# 0000:1b:00.0, minor 0, has no index).
ODD_BUS=(0000:0a:00.0 0000:2c:00.0 0000:3d:00.0)
ODD_MINOR=(1 2 3)
ODD_EXCLUDED_UUID=GPU-1b1b1b1b-1111-4222-8333-444455556666

UTILITY_LIBS=(libnvidia-ml libnvidia-cfg libnvidia-nscq)
COMPUTE_LIBS=(libcuda libcudadebugger libnvidia-opencl libnvidia-gpucomp libnvidia-ptxjitcompiler
	libnvidia-fatbinaryloader libnvidia-allocator libnvidia-compiler libnvidia-pkcs11
	libnvidia-pkcs11-openssl3 libnvidia-nvvm libnvidia-tileiras)
VIDEO_LIBS=(libvdpau_nvidia libnvidia-encode libnvidia-opticalflow libnvcuvid)
GRAPHICS_LIBS=(libnvidia-eglcore libnvidia-glcore libnvidia-tls libnvidia-glsi libnvidia-fbc
	libnvidia-ifr libnvidia-rtcore libnvoptix libGLX_nvidia libEGL_nvidia libGLESv2_nvidia
	libGLESv1_CM_nvidia libnvidia-glvkspirv libnvidia-cbl)
NGX_LIBS=(libnvidia-ngx)
# nv-fabricmanager is in the reference list; the fake driver has none.
UTILITY_BINS=(nvidia-smi nvidia-debugdump nvidia-persistenced)
COMPUTE_BINS=(nvidia-cuda-mps-control nvidia-cuda-mps-server)
# In the fake driver root and never injected: an older driver's leftovers,
# libraries and a binary outside every list, another driver's firmware.
DECOYS=(libnvidia-ml.so.470.57.02 libnvidia-compiler.so.470.57.02 libnvidia-glcore.so.470.57.02
	libnvidia-gtk3 libnvidia-wayland-client nvidia-xconfig 535.104.05)

# fake_driver one|four: print the path of that fake driver root, building it
# when missing or older than its sources (root only).
fake_driver() {
	local topo=$1 dir="$TESTS_BUILD/fakedriver-$1" want
	want=$(sh "$FAKEDRIVER_SRC/build.sh" --hash) || return 1
	if [[ -e "$dir/.complete" && "$(cat "$dir/.complete")" == "$want" ]]; then
		printf '%s\n' "$dir"
		return 0
	fi
	if [[ $(id -u) -eq 0 ]]; then
		sh "$FAKEDRIVER_SRC/build.sh" "$dir" "$topo" >&2 || return 1
		printf '%s\n' "$dir"
		return 0
	fi
	# Unprivileged: whatever root built (possibly older sources) or nothing.
	[[ -e "$dir/.complete" ]] && printf '%s\n' "$dir"
}

# gpu_setup_file: FAKE1, FAKE4 and the images; skips the file when the fake
# drivers are missing and cannot be built here.
gpu_setup_file() {
	require_gpurun
	FAKE1=$(fake_driver one) && FAKE4=$(fake_driver four) && FAKEODD=$(fake_driver odd) &&
		FAKENOUVM=$(fake_driver nouvm) && FAKEMIG=$(fake_driver mig) ||
		skip "no fake NVIDIA driver in $TESTS_BUILD (build it as root: tests/run-bats.sh)"
	# Tar images work in both modes: unpacked by the caller, so its user
	# namespace owns every directory a mount target is created in.
	GLIBC_TAR=$(fixture glibc.tar)
	BUSYBOX_TAR=$(fixture busybox.tar)
	export FAKE1 FAKE4 FAKEODD FAKENOUVM FAKEMIG GLIBC_TAR BUSYBOX_TAR
}

# gpu4 ARGS...: gpurun on the four-GPU fake driver.  gpu1: on the one-GPU one.
gpu4() {
	"$GPURUN" --driver-root "$FAKE4" "$@"
}
gpu1() {
	"$GPURUN" --driver-root "$FAKE1" "$@"
}

_has_cap() {
	[[ ",$1," == *",$2,"* || ",$1," == *",all,"* ]]
}

# expected_list ROOT CAPS [GPU-NODES...]: what `gpurun list --driver-root
# ROOT --gpus ... --caps CAPS` must print, per the reference: control nodes
# (nvidia-uvm* with compute or video, nvidia-modeset with display), the GPU
# nodes given, binaries, libraries (video brings compute's, display brings
# graphics'), IPC paths, firmware.
expected_list() {
	local root=$1 caps=$2 compute=0 graphics=0 l b
	shift 2
	local libs=() bins=()
	if _has_cap "$caps" compute || _has_cap "$caps" video; then compute=1; fi
	if _has_cap "$caps" graphics || _has_cap "$caps" display; then graphics=1; fi
	echo /dev/nvidiactl
	if ((compute)); then
		echo /dev/nvidia-uvm
		echo /dev/nvidia-uvm-tools
	fi
	_has_cap "$caps" display && echo /dev/nvidia-modeset
	for l in "$@"; do echo "$l"; done
	_has_cap "$caps" utility && bins+=("${UTILITY_BINS[@]}")
	_has_cap "$caps" compute && bins+=("${COMPUTE_BINS[@]}")
	for b in "${bins[@]}"; do echo "$root/usr/bin/$b"; done
	_has_cap "$caps" utility && libs+=("${UTILITY_LIBS[@]}")
	((compute)) && libs+=("${COMPUTE_LIBS[@]}")
	_has_cap "$caps" video && libs+=("${VIDEO_LIBS[@]}")
	((graphics)) && libs+=("${GRAPHICS_LIBS[@]}")
	_has_cap "$caps" ngx && libs+=("${NGX_LIBS[@]}")
	for l in "${libs[@]}"; do echo "$root$LIBDIR_DEBIAN/$l.so.$DRIVER_VERSION"; done
	_has_cap "$caps" utility && echo "$root/run/nvidia-persistenced/socket"
	((compute)) && echo "$root/tmp/nvidia-mps"
	echo "$root/lib/firmware/nvidia/$DRIVER_VERSION/gsp_ga10x.bin"
	echo "$root/lib/firmware/nvidia/$DRIVER_VERSION/gsp_tu10x.bin"
}

# expected_injected CAPS: the driver files a container with CAPS must have,
# as "DIR/NAME" lines sorted (libraries by file name in the image's lib dir,
# binaries in /usr/bin).
expected_injected() {
	expected_list "" "$1" | grep -E "^($LIBDIR_DEBIAN|/usr/bin)/" | LC_ALL=C sort
}

# The same, seen from inside: every nvidia file of the lib dir and /usr/bin
# that is a mount point (what gpurun bound, not what ldconfig linked).
INJECTED_INSIDE='for f in '"$LIBDIR_DEBIAN"'/* /usr/bin/*; do
	probe mountinfo-has "$f" >/dev/null 2>&1 && echo "$f"; done | LC_ALL=C sort'

# host_file_state PATH: what must not change on a host file a test plants.
host_file_state() {
	stat -c '%n %F %s %Y %i' "$1" && sha256sum <"$1"
}
