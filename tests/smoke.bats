#!/usr/bin/env bats
# `gpurun smoke`: the probe gpurun ships (gpu/probe/smoke.c) run in a
# container on the selected GPUs.  On the fake kit every check passes, and
# each one is made to fail by a marker in the GPU's gpus/<bus> directory of
# a copy of the driver root (tests/fakedriver/cuda.c, nvml.c); on NVIDIA's
# real user space (tests/lib/realdriver.bash) with no kernel driver the
# report is one clean "no device" line, and a kernel side of another
# version is a driver upgraded without a reboot.
#
# Without IMAGE the container's root is the host's /, a directory image:
# unprivileged, on kernels before 6.6, gpurun cannot stack its overlay on
# it, so the user mode passes the glibc test image.

load lib/common
load lib/gpu

setup_file() {
	gpu_setup_file
	if [[ ! -x "$TESTS_DIR/../gpu/probe/gpurun-smoke" ]]; then
		[[ $(id -u) -eq 0 ]] || skip "gpu/probe/gpurun-smoke is missing: build it with 'make'"
		make -s -C "$TESTS_DIR/.." gpu/probe/gpurun-smoke >&2 || fail "cannot build the smoke probe"
	fi
	if [[ $GPURUN_TEST_MODE == user ]]; then
		SMOKE_IMAGE=$GLIBC_TAR
	else
		SMOKE_IMAGE=
	fi
	export SMOKE_IMAGE
}

setup() {
	export GPURUN_CACHE=$BATS_TEST_TMPDIR/cache
	mkdir -p "$GPURUN_CACHE"
	host_snapshot "$BATS_TEST_TMPDIR/host-before"
}

teardown() {
	assert_host_unchanged "$BATS_TEST_TMPDIR/host-before"
}

# smoke DRIVER_ROOT [OPTIONS...]: `gpurun smoke` there, in this mode's image.
smoke() {
	local root=$1
	shift
	"$GPURUN" --driver-root "$root" smoke "$@" ${SMOKE_IMAGE:+"$SMOKE_IMAGE"}
}

# marked_driver MARKER INDEX...: a copy of the four-GPU fake driver, in
# $BATS_TEST_TMPDIR/drv, whose GPUs INDEX... (bus order) carry MARKER.
marked_driver() {
	skip_unless_root "copies device nodes"
	local marker=$1 i
	shift
	cp -a "$FAKE4" "$BATS_TEST_TMPDIR/drv"
	for i in "$@"; do
		touch "$BATS_TEST_TMPDIR/drv/proc/driver/nvidia/gpus/${FOUR_BUS[$i]}/$marker"
	done
}

# The text line of the GPU at index I (inside the container) of FOUR_BUS.
gpu_line() { # I BUS
	printf 'GPU %s (Fake GPU %s, %s, ' "$1" "$2" "$2"
}

@test "smoke runs the kernel and the health checks on every GPU and says ok, one line each" {
	run --separate-stderr smoke "$FAKE4"
	assert_success
	assert_equal "${#lines[@]}" 5
	for i in 0 1 2 3; do
		assert_line --index "$i" "$(gpu_line "$i" "${FOUR_BUS[$i]}")${FOUR_UUID[$i]}): ok kernel ok; ECC 0; persistence on"
	done
	assert_line --index 4 "smoke: 4 of 4 GPUs ok, driver $DRIVER_VERSION"
	assert_equal "$stderr" ""
}

@test "smoke --gpus tests only the GPUs it selects" {
	run --separate-stderr smoke "$FAKE4" --gpus 1,3
	assert_success
	assert_equal "${#lines[@]}" 3
	assert_line --index 0 --partial "$(gpu_line 0 "${FOUR_BUS[1]}")${FOUR_UUID[1]}): ok"
	assert_line --index 1 --partial "$(gpu_line 1 "${FOUR_BUS[3]}")${FOUR_UUID[3]}): ok"
	assert_line --index 2 "smoke: 2 of 2 GPUs ok, driver $DRIVER_VERSION"
}

@test "smoke runs in an IMAGE given to it" {
	run --separate-stderr "$GPURUN" --driver-root "$FAKE1" smoke "$GLIBC_TAR"
	assert_success
	assert_line --index 0 --partial "): ok kernel ok"
	assert_line --index 1 "smoke: 1 of 1 GPU ok, driver $DRIVER_VERSION"
}

@test "smoke fails the GPU whose kernel result is wrong, and only that one" {
	marked_driver fake-smoke-kernel 2
	run --separate-stderr "$GPURUN" --driver-root "$BATS_TEST_TMPDIR/drv" smoke
	assert_failure 1
	assert_line --index 2 "$(gpu_line 2 "${FOUR_BUS[2]}")${FOUR_UUID[2]}): FAIL kernel: 1 of 1024 results wrong (out[7] = 0, want 14)"
	assert_line --index 1 --partial "): ok kernel ok"
	assert_line --index 4 "smoke: 3 of 4 GPUs ok, driver $DRIVER_VERSION"
}

@test "smoke fails a GPU with uncorrected ECC errors" {
	marked_driver fake-smoke-ecc 0
	run --separate-stderr "$GPURUN" --driver-root "$BATS_TEST_TMPDIR/drv" smoke --gpus 0
	assert_failure 1
	assert_line --index 0 "$(gpu_line 0 "${FOUR_BUS[0]}")${FOUR_UUID[0]}): FAIL 3 uncorrected ECC errors since boot"
	assert_line --index 1 "smoke: 0 of 1 GPU ok, driver $DRIVER_VERSION"
}

@test "smoke fails a GPU whose row remapping failed" {
	marked_driver fake-smoke-remap 0
	run --separate-stderr "$GPURUN" --driver-root "$BATS_TEST_TMPDIR/drv" smoke --gpus 0
	assert_failure 1
	assert_line --index 0 --partial "): FAIL row remapping failed: the GPU needs service"
}

@test "smoke fails an NVSwitch GPU the fabric manager has not registered" {
	marked_driver fake-smoke-fabric 0
	run --separate-stderr "$GPURUN" --driver-root "$BATS_TEST_TMPDIR/drv" smoke --gpus 0
	assert_failure 1
	assert_line --index 0 --partial "): FAIL not registered with the NVSwitch fabric (state 1): is nvidia-fabricmanager running?"
}

@test "smoke warns, and passes, when persistence mode is off" {
	marked_driver fake-smoke-persistence 0
	run --separate-stderr "$GPURUN" --driver-root "$BATS_TEST_TMPDIR/drv" smoke --gpus 0
	assert_success
	assert_line --index 0 --partial "): ok kernel ok; ECC 0; warning: persistence mode off"
}

@test "smoke --json is one document with the driver's versions and each GPU's verdict" {
	run --separate-stderr smoke "$FAKE4" --gpus 0,2 --json
	assert_success
	run python3 -c '
import json, sys
d = json.loads(sys.argv[1])
print(d["ok"], d["failed"], d["driver"]["kernel_module"], d["driver"]["libraries"], d["driver"]["nvml"], d["driver"]["failures"])
for g in d["gpus"]:
    print(g["index"], g["pci_bus_id"], g["uuid"], g["ok"], g["failures"], g["notes"])' "$output"
	assert_success
	assert_line --index 0 "True 0 $DRIVER_VERSION $DRIVER_VERSION $DRIVER_VERSION []"
	assert_line --index 1 "0 ${FOUR_BUS[0]} ${FOUR_UUID[0]} True [] ['kernel ok', 'ECC 0', 'persistence on']"
	assert_line --index 2 "1 ${FOUR_BUS[2]} ${FOUR_UUID[2]} True [] ['kernel ok', 'ECC 0', 'persistence on']"
}

@test "smoke --json lists a GPU's failures" {
	marked_driver fake-smoke-ecc 1
	run --separate-stderr "$GPURUN" --driver-root "$BATS_TEST_TMPDIR/drv" smoke --gpus 1 --json
	assert_failure 1
	run python3 -c 'import json, sys; d = json.loads(sys.argv[1]); print(d["ok"], d["failed"], d["gpus"][0]["failures"])' "$output"
	assert_output "False 1 ['3 uncorrected ECC errors since boot']"
}

@test "smoke --tap is a TAP stream: the driver, then one test point per GPU, then the plan" {
	run --separate-stderr smoke "$FAKE4" --gpus 0,1 --tap
	assert_success
	assert_equal "${#lines[@]}" 4
	assert_line --index 0 "ok 1 - driver $DRIVER_VERSION"
	assert_line --index 1 "ok 2 - GPU 0 (Fake GPU ${FOUR_BUS[0]}, ${FOUR_BUS[0]}, ${FOUR_UUID[0]})"
	assert_line --index 2 "ok 3 - GPU 1 (Fake GPU ${FOUR_BUS[1]}, ${FOUR_BUS[1]}, ${FOUR_UUID[1]})"
	assert_line --index 3 "1..3"
}

@test "smoke --tap says not ok for a failing GPU" {
	marked_driver fake-smoke-kernel 0
	run --separate-stderr "$GPURUN" --driver-root "$BATS_TEST_TMPDIR/drv" smoke --gpus 0 --tap
	assert_failure 1
	assert_line --index 1 "not ok 2 - GPU 0 (Fake GPU ${FOUR_BUS[0]}, ${FOUR_BUS[0]}, ${FOUR_UUID[0]}): kernel: 1 of 1024 results wrong (out[7] = 0, want 14)"
}

@test "smoke with a second IMAGE is gpurun's own failure, exit 125" {
	run --separate-stderr "$GPURUN" --driver-root "$FAKE1" smoke "$GLIBC_TAR" 'two'
	assert_equal "$status" 125
	assert_equal "$stderr" "gpurun: smoke: unexpected argument two"
}

@test "smoke with an unknown option is gpurun's own failure, exit 125" {
	run --separate-stderr "$GPURUN" smoke --bogus
	assert_equal "$status" 125
	assert_equal "$stderr" "gpurun: smoke: unknown option --bogus"
}

# NVIDIA's real user space: built by root, used by both modes.
real_root() {
	# shellcheck source=lib/realdriver.bash
	source "$TESTS_DIR/lib/realdriver.bash"
	REAL=$(real_driver)
	[[ -n $REAL ]] || skip "no real driver root in $TESTS_BUILD (tests/realdriver.bats builds it)"
}

@test "smoke on the real user space with no kernel driver is one clean no-device line, exit 1" {
	real_root
	run --separate-stderr smoke "$REAL"
	assert_failure 1
	assert_output "driver: FAIL no device: cuInit: CUDA_ERROR_NO_DEVICE (100)"
	assert_equal "$stderr" ""
}

@test "smoke fails a kernel module of another version than the real libraries: an upgrade without a reboot" {
	real_root
	skip_unless_root "copies the driver root"
	local version=${REAL##*/realdriver-}
	cp -al "$REAL" "$BATS_TEST_TMPDIR/drv"
	sed -i "s/$version/535.999.01/" "$BATS_TEST_TMPDIR/drv/proc/driver/nvidia/version"
	run --separate-stderr "$GPURUN" --driver-root "$BATS_TEST_TMPDIR/drv" smoke
	assert_failure 1
	assert_output --partial "driver: FAIL kernel module 535.999.01 but libcuda $version: a driver upgraded without a reboot?"
}

@test "make gpu-smoke says it needs a GPU on a machine without one" {
	skip_unless_root "runs make in the tree"
	[[ ! -e /proc/driver/nvidia/version ]] || skip "this machine has an NVIDIA driver"
	run --separate-stderr make -s -C "$TESTS_DIR/.." gpu-smoke
	assert_failure
	assert_equal "${stderr%%$'\n'*}" "make gpu-smoke: needs a machine with an NVIDIA GPU and its driver loaded (no /proc/driver/nvidia/version here); the fake-driver tests are tests/smoke.bats"
}
