#!/usr/bin/env bats
# `gpurun smoke`: the probe gpurun ships (gpu/probe/smoke.c) run in a
# container on the selected GPUs.  On the fake kit every check passes, and
# each one is made to fail by a marker in the GPU's gpus/<bus> directory of
# a copy of the driver root (tests/fakedriver/cuda.c, nvml.c); on NVIDIA's
# real user space (tests/lib/realdriver.bash) with no kernel driver the
# report is one clean "no device" line, and a kernel side of another
# version is a driver upgraded without a reboot.
#
# Xids: the fake kit's `xid` driver root (tests/fakedriver/build.sh) has a
# kernel log, dev/kmsg, with Xids planted for some of its GPUs, and NVML
# markers that raise an Xid event during the run or have no Xid events;
# the other fake driver roots have no kernel log, which smoke says it did
# not read.
#
# Without IMAGE the container's root is the host's C library, unpacked in
# the run's memory: both modes run smoke so; one test passes an IMAGE.
#
# The broken nodes a nightly job meets are the kit's broken-* driver roots
# (tests/fakedriver/build.sh), built by root and read by both modes: a node
# too broken for a launch is still a verdict on stdout (a `driver` FAIL,
# exit 1), and a GPU whose probe hangs fails at its deadline while the
# others get their verdicts.

load lib/common
load lib/gpu
load lib/subuser

setup_file() {
	gpu_setup_file
	FAKEXID=$(fake_driver xid) || FAKEXID=
	export FAKEXID
	if [[ ! -x "$TESTS_DIR/../gpu/probe/gpurun-smoke" ]]; then
		[[ $(id -u) -eq 0 ]] || skip "gpu/probe/gpurun-smoke is missing: build it with 'make'"
		make -s -C "$TESTS_DIR/.." gpu/probe/gpurun-smoke >&2 || fail "cannot build the smoke probe"
	fi
	SMOKE_IMAGE=
	export SMOKE_IMAGE
}

# broken KIND: the fake kit's broken-KIND driver root, or skip.
broken() {
	local d
	d=$(fake_driver "broken-$1") && [[ -n $d ]] ||
		skip "no fake broken-$1 driver root in $TESTS_BUILD (build it as root: tests/run-bats.sh)"
	printf '%s\n' "$d"
}

setup() {
	export GPURUN_CACHE=$BATS_TEST_TMPDIR/cache
	mkdir -p "$GPURUN_CACHE"
	host_snapshot "$BATS_TEST_TMPDIR/host-before"
}

teardown() {
	# A test that froze a process and failed before it thawed it: thawed
	# here, or it would stay on the host for good.
	if [[ -e $BATS_TEST_TMPDIR/freezer ]]; then
		local fz
		fz=$(cat "$BATS_TEST_TMPDIR/freezer")
		echo THAWED >"$fz/freezer.state"
		wait_procs_gone "$(fake_driver broken-hang)"
		rmdir "$fz"
	fi
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

# What the summary says of Xids on a driver root without a kernel log.
no_log() { # ROOT
	printf ', no Xid during the run; Xids since boot not checked: %s/dev/kmsg: No such file or directory' "$1"
}

# The xid driver root's GPUs, in bus order (see tests/fakedriver/build.sh).
XID_BUS=(0000:18:00.0 0000:2a:00.0 0000:3a:00.0 0000:5d:00.0 0000:9a:00.0 0000:ab:00.0)
# The start of the text line of its GPU N, seen as index I inside.
xid_line() { # I N
	printf 'GPU %s (Fake GPU %s, %s, GPU-71d0000%s-1111-4222-8333-44445555660%s): ' "$1" "${XID_BUS[$2]}" \
		"${XID_BUS[$2]}" "$2" "$2"
}

need_xid_root() {
	[[ -n $FAKEXID ]] || skip "no fake xid driver root in $TESTS_BUILD (build it as root: tests/run-bats.sh)"
}

@test "smoke runs the kernel and the health checks on every GPU and says ok, one line each" {
	run --separate-stderr smoke "$FAKE4"
	assert_success
	assert_equal "${#lines[@]}" 5
	for i in 0 1 2 3; do
		assert_line --index "$i" "$(gpu_line "$i" "${FOUR_BUS[$i]}")${FOUR_UUID[$i]}): ok kernel ok; ECC 0; persistence on; no Xid during the run"
	done
	assert_line --index 4 "smoke: 4 of 4 GPUs ok, driver $DRIVER_VERSION$(no_log "$FAKE4")"
	assert_equal "$stderr" ""
}

@test "smoke --gpus tests only the GPUs it selects" {
	run --separate-stderr smoke "$FAKE4" --gpus 1,3
	assert_success
	assert_equal "${#lines[@]}" 3
	assert_line --index 0 --partial "$(gpu_line 0 "${FOUR_BUS[1]}")${FOUR_UUID[1]}): ok"
	assert_line --index 1 --partial "$(gpu_line 1 "${FOUR_BUS[3]}")${FOUR_UUID[3]}): ok"
	assert_line --index 2 "smoke: 2 of 2 GPUs ok, driver $DRIVER_VERSION$(no_log "$FAKE4")"
}

@test "smoke runs in an IMAGE given to it" {
	run --separate-stderr "$GPURUN" --driver-root "$FAKE1" smoke "$GLIBC_TAR"
	assert_success
	assert_line --index 0 --partial "): ok kernel ok"
	assert_line --index 1 "smoke: 1 of 1 GPU ok, driver $DRIVER_VERSION$(no_log "$FAKE1")"
}

@test "smoke fails the GPU whose kernel result is wrong, and only that one" {
	marked_driver fake-smoke-kernel 2
	run --separate-stderr "$GPURUN" --driver-root "$BATS_TEST_TMPDIR/drv" smoke
	assert_failure 1
	assert_line --index 2 "$(gpu_line 2 "${FOUR_BUS[2]}")${FOUR_UUID[2]}): FAIL kernel: 1 of 1024 results wrong (out[7] = 0, want 14)"
	assert_line --index 1 --partial "): ok kernel ok"
	assert_line --index 4 "smoke: 3 of 4 GPUs ok, driver $DRIVER_VERSION$(no_log "$BATS_TEST_TMPDIR/drv")"
}

@test "smoke fails a GPU with uncorrected ECC errors" {
	marked_driver fake-smoke-ecc 0
	run --separate-stderr "$GPURUN" --driver-root "$BATS_TEST_TMPDIR/drv" smoke --gpus 0
	assert_failure 1
	assert_line --index 0 "$(gpu_line 0 "${FOUR_BUS[0]}")${FOUR_UUID[0]}): FAIL 3 uncorrected ECC errors since boot"
	assert_line --index 1 "smoke: 0 of 1 GPU ok, driver $DRIVER_VERSION$(no_log "$BATS_TEST_TMPDIR/drv")"
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
	assert_line --index 0 --partial "): ok kernel ok; ECC 0; warning: persistence mode off; no Xid during the run"
}

@test "smoke --json is one document with the driver's versions and each GPU's verdict" {
	run --separate-stderr smoke "$FAKE4" --gpus 0,2 --json
	assert_success
	run python3 -c '
import json, sys
d = json.loads(sys.argv[1])
print(d["ok"], d["failed"], d["driver"]["kernel_module"], d["driver"]["libraries"], d["driver"]["nvml"], d["driver"]["failures"])
for g in d["gpus"]:
    print(g["index"], g["pci_bus_id"], g["uuid"], g["ok"], g["failures"], g["notes"], g["xid_events"], g["xids"])' "$output"
	assert_success
	assert_line --index 0 "True 0 $DRIVER_VERSION $DRIVER_VERSION $DRIVER_VERSION []"
	assert_line --index 1 "0 ${FOUR_BUS[0]} ${FOUR_UUID[0]} True [] ['kernel ok', 'ECC 0', 'persistence on', 'no Xid during the run'] True []"
	assert_line --index 2 "1 ${FOUR_BUS[2]} ${FOUR_UUID[2]} True [] ['kernel ok', 'ECC 0', 'persistence on', 'no Xid during the run'] True []"
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
	assert_equal "${#lines[@]}" 5
	assert_line --index 0 "ok 1 - driver $DRIVER_VERSION"
	assert_line --index 1 "ok 2 - GPU 0 (Fake GPU ${FOUR_BUS[0]}, ${FOUR_BUS[0]}, ${FOUR_UUID[0]})"
	assert_line --index 2 "ok 3 - GPU 1 (Fake GPU ${FOUR_BUS[1]}, ${FOUR_BUS[1]}, ${FOUR_UUID[1]})"
	assert_line --index 3 "# Xids since boot not checked: $FAKE4/dev/kmsg: No such file or directory"
	assert_line --index 4 "1..3"
}

@test "smoke --tap says not ok for a failing GPU" {
	marked_driver fake-smoke-kernel 0
	run --separate-stderr "$GPURUN" --driver-root "$BATS_TEST_TMPDIR/drv" smoke --gpus 0 --tap
	assert_failure 1
	assert_line --index 1 "not ok 2 - GPU 0 (Fake GPU ${FOUR_BUS[0]}, ${FOUR_BUS[0]}, ${FOUR_UUID[0]}): kernel: 1 of 1024 results wrong (out[7] = 0, want 14)"
}

@test "smoke fails the GPU whose NVML raises an Xid event during the run" {
	need_xid_root
	run --separate-stderr smoke "$FAKEXID" --gpus 3
	assert_failure 1
	assert_equal "${#lines[@]}" 2
	assert_line --index 0 "$(xid_line 0 3)FAIL Xid 94 during the run"
	assert_line --index 1 "smoke: 0 of 1 GPU ok, driver $DRIVER_VERSION, Xids on 1 GPU"
	assert_equal "$stderr" ""
}

@test "smoke says Xid events are not supported, and passes, on a GPU whose NVML has none" {
	need_xid_root
	run --separate-stderr smoke "$FAKEXID" --gpus 4
	assert_success
	assert_line --index 0 "$(xid_line 0 4)ok kernel ok; ECC 0; persistence on; Xid events not supported; no Xid since boot"
	assert_line --index 1 "smoke: 1 of 1 GPU ok, driver $DRIVER_VERSION, no Xid since boot"
}

@test "smoke fails the GPU the kernel log has a critical Xid for since boot" {
	need_xid_root
	run --separate-stderr smoke "$FAKEXID" --gpus 0
	assert_failure 1
	assert_line --index 0 "$(xid_line 0 0)FAIL Xid 79 since boot: pid='<unknown>', name=<unknown>, GPU has fallen off the bus."
	assert_line --index 1 "smoke: 0 of 1 GPU ok, driver $DRIVER_VERSION, Xids on 1 GPU"
}

@test "smoke warns, and passes, for an Xid since boot that is not critical" {
	need_xid_root
	run --separate-stderr smoke "$FAKEXID" --gpus 1
	assert_success
	assert_line --index 0 "$(xid_line 0 1)ok kernel ok; ECC 0; persistence on; warning: Xid 13 since boot, 2 times, the last: pid=2345, name=train, Graphics Exception: ESR 0x50df30=0x107000e"
	assert_line --index 1 "smoke: 1 of 1 GPU ok, driver $DRIVER_VERSION, Xids on 1 GPU"
}

@test "smoke ignores the Xids the kernel logged for other GPUs" {
	need_xid_root
	run --separate-stderr smoke "$FAKEXID" --gpus 5
	assert_success
	assert_line --index 0 "$(xid_line 0 5)ok kernel ok; ECC 0; persistence on; no Xid"
	assert_line --index 1 "smoke: 1 of 1 GPU ok, driver $DRIVER_VERSION, no Xid"
}

@test "smoke says in one line, and passes, that it did not check Xids since boot when there is no kernel log" {
	run --separate-stderr smoke "$FAKE4" --gpus 2
	assert_success
	assert_equal "${#lines[@]}" 2
	assert_line --index 1 "smoke: 1 of 1 GPU ok, driver $DRIVER_VERSION, no Xid during the run; Xids since boot not checked: $FAKE4/dev/kmsg: No such file or directory"
	assert_equal "$stderr" ""
}

@test "smoke escapes the control bytes of a kernel log message, and does not shell-quote its prose" {
	need_xid_root
	run --separate-stderr smoke "$FAKEXID" --gpus 2
	assert_success
	assert_equal "${#lines[@]}" 2
	assert_line --index 0 "$(xid_line 0 2)ok kernel ok; ECC 0; persistence on; warning: Xid 31 since boot: pid=3456, name=\\033]0;owned\\007\\033[2J\\012FAKE, MMU Fault"
	[[ $output != *$'\e'* && $output != *$'\a'* ]] || fail "a control byte of the log reached the output raw"
}

@test "as root, smoke does not read a kernel log that others can write" {
	need_xid_root
	skip_unless_root "copies device nodes"
	cp -a "$FAKEXID" "$BATS_TEST_TMPDIR/drv"
	chmod 0666 "$BATS_TEST_TMPDIR/drv/dev/kmsg"
	run --separate-stderr "$GPURUN" --driver-root "$BATS_TEST_TMPDIR/drv" smoke --gpus 0
	assert_success
	assert_line --index 0 "$(xid_line 0 0)ok kernel ok; ECC 0; persistence on; no Xid during the run"
	local k=$BATS_TEST_TMPDIR/drv/dev/kmsg
	assert_line --index 1 "smoke: 1 of 1 GPU ok, driver $DRIVER_VERSION, no Xid during the run; Xids since boot not checked: the kernel log $k: not trusted: $k is writable by group 0 (root) and by others; as root, gpurun uses only what root owns and no one else can write"
}

@test "unprivileged, a kernel log the kernel keeps from users is one 'not checked' note, and smoke passes" {
	need_xid_root
	subuser_need
	[[ $(cat /proc/sys/kernel/dmesg_restrict) == 1 ]] || skip "this kernel lets users read its log (kernel.dmesg_restrict=0)"
	# The xid root with the host's own kernel log device in place of its
	# planted file: opened by a user, the kernel answers EPERM.
	local d drv
	d=$(mktemp -d "${TMPDIR:-/tmp}/gpurun-smoke.XXXXXX")
	chmod 0755 "$d"
	drv=$d/drv
	cp -a "$FAKEXID" "$drv"
	rm "$drv/dev/kmsg"
	mknod -m 0644 "$drv/dev/kmsg" c 1 11
	run --separate-stderr subuser_run "$d/user" "$GPURUN" --driver-root "$drv" smoke --gpus 0
	rm -rf "$d"
	assert_success
	assert_line --index 1 "smoke: 1 of 1 GPU ok, driver $DRIVER_VERSION, no Xid during the run; Xids since boot not checked: $drv/dev/kmsg: Operation not permitted (kernel.dmesg_restrict is set: reading it needs CAP_SYSLOG)"
	assert_equal "$stderr" ""
}

@test "smoke --json gives each GPU's Xids, and whether the kernel log was read" {
	need_xid_root
	run --separate-stderr smoke "$FAKEXID" --gpus 1,3 --json
	assert_failure 1
	run python3 -c '
import json, sys
d = json.loads(sys.argv[1])
print(d["ok"], d["failed"], d["driver"]["xid_log"])
for g in d["gpus"]:
    print(g["index"], g["ok"], g["xid_events"], g["xids"], g["failures"])' "$output"
	assert_success
	assert_line --index 0 "False 1 {'read': True, 'note': None}"
	assert_line --index 1 "0 True True [{'xid': 13, 'when': 'boot', 'count': 2, 'critical': False}] []"
	assert_line --index 2 "1 False True [{'xid': 94, 'when': 'run', 'count': 1, 'critical': True}] ['Xid 94 during the run']"
}

@test "smoke --json says why the kernel log was not read" {
	run --separate-stderr smoke "$FAKE4" --gpus 0 --json
	assert_success
	run python3 -c 'import json, sys; print(json.loads(sys.argv[1])["driver"]["xid_log"])' "$output"
	assert_output "{'read': False, 'note': '$FAKE4/dev/kmsg: No such file or directory'}"
}

@test "smoke --tap gives an Xid warning as a diagnostic after its GPU" {
	need_xid_root
	run --separate-stderr smoke "$FAKEXID" --gpus 1 --tap
	assert_success
	assert_equal "${#lines[@]}" 4
	assert_line --index 1 "ok 2 - GPU 0 (Fake GPU ${XID_BUS[1]}, ${XID_BUS[1]}, GPU-71d00001-1111-4222-8333-444455556601)"
	assert_line --index 2 "# warning: Xid 13 since boot, 2 times, the last: pid=2345, name=train, Graphics Exception: ESR 0x50df30=0x107000e"
	assert_line --index 3 "1..2"
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

@test "smoke needs no IMAGE in either mode: the probe runs in a root of the host's C library" {
	run --separate-stderr "$GPURUN" --driver-root "$FAKE1" smoke
	assert_success
	assert_line --index 0 "$(gpu_line 0 0000:17:00.0)$ONE_UUID): ok kernel ok; ECC 0; persistence on; no Xid during the run"
	assert_equal "$stderr" ""
}

# The driver-wide verdict of a node too broken for the probe's launch.
@test "smoke on a node without device nodes is a driver FAIL with the reason and the advice, exit 1" {
	local d
	d=$(broken nodes)
	run --separate-stderr "$GPURUN" --driver-root "$d" smoke
	assert_failure 1
	assert_output "driver: FAIL NVIDIA devices: missing or not a character device 195:N: /dev/nvidiactl /dev/nvidia0 (GPU 0, 00000000:17:00.0); the driver creates them on first use: as root, run nvidia-modprobe -c=0, or keep nvidia-persistenced running"
	assert_equal "$stderr" ""
}

@test "smoke --json on a node without device nodes is one document whose driver entry says why, exit 1" {
	local d
	d=$(broken nodes)
	run --separate-stderr "$GPURUN" --driver-root "$d" smoke --json
	assert_failure 1
	assert_equal "${#lines[@]}" 1
	run python3 -c '
import json, sys
d = json.loads(sys.argv[1])
print(d["ok"], d["gpus"], d["driver"]["kernel_module"])
for c in d["driver"]["checks"]:
    print(c["id"], c["level"], c["text"])' "$output"
	assert_success
	assert_line --index 0 "False [] $DRIVER_VERSION"
	assert_line --index 1 "devices fail NVIDIA devices: missing or not a character device 195:N: /dev/nvidiactl /dev/nvidia0 (GPU 0, 00000000:17:00.0); the driver creates them on first use: as root, run nvidia-modprobe -c=0, or keep nvidia-persistenced running"
	assert_line --index 2 "xid-log skip Xids since boot not checked: $d/dev/kmsg: No such file or directory"
}

@test "smoke --tap on a node without nvidia-uvm is a TAP stream whose driver test point fails, exit 1" {
	local d
	d=$(broken uvm)
	run --separate-stderr "$GPURUN" --driver-root "$d" smoke --tap
	assert_failure 1
	assert_equal "${#lines[@]}" 2
	assert_line --index 0 "not ok 1 - driver: nvidia-uvm: not loaded (no nvidia-uvm in /proc/devices, no /dev/nvidia-uvm): CUDA fails in every container; as root, run nvidia-modprobe -u -c=0 (or modprobe nvidia-uvm)"
	assert_line --index 1 "1..1"
	assert_equal "$stderr" ""
}

@test "smoke on a node whose kernel module is gone is a driver FAIL, exit 1" {
	local d
	d=$(broken driver)
	run --separate-stderr "$GPURUN" --driver-root "$d" smoke
	assert_failure 1
	assert_output "driver: FAIL NVIDIA driver: no NVIDIA driver found under $d: $d/proc/driver/nvidia/version: No such file or directory, but this host has $d/usr/bin/nvidia-smi: the GPU or the kernel module is gone; GPU launches will fail"
	assert_equal "$stderr" ""
}

@test "smoke on a node without an ld.so.cache is a driver FAIL naming the ldconfig to run, exit 1" {
	local d
	d=$(broken ldcache)
	run --separate-stderr "$GPURUN" --driver-root "$d" smoke --json
	assert_failure 1
	run python3 -c 'import json, sys; print(json.loads(sys.argv[1])["driver"]["failures"])' "$output"
	assert_output "['ld.so.cache: cannot look up the driver libraries: $d/etc/ld.so.cache: No such file or directory; as root, run ldconfig -r $d']"
}

@test "smoke on a driver upgraded without a reboot names both versions and says to reboot, exit 1" {
	local d
	d=$(broken upgrade)
	run --separate-stderr "$GPURUN" --driver-root "$d" smoke
	assert_failure 1
	assert_output --partial "driver: FAIL kernel module 535.999.01 but libcuda $DRIVER_VERSION: a driver upgraded without a reboot? Reboot, or reload the nvidia kernel modules; "
}

@test "smoke with a --gpus that does not parse is gpurun's own failure, exit 125, not a verdict" {
	run --separate-stderr "$GPURUN" --driver-root "$FAKE1" smoke --gpus 'count=x' --json
	assert_equal "$status" 125
	assert_output ""
	assert_equal "$stderr" "gpurun: smoke: --gpus: invalid count=x"
}

@test "smoke --json gives each check of each GPU a stable id" {
	run --separate-stderr smoke "$FAKE1" --json
	assert_success
	run python3 -c '
import json, sys
d = json.loads(sys.argv[1])
print([(c["id"], c["level"]) for c in d["gpus"][0]["checks"]], d["deadline_s"])
print([(c["id"], c["level"]) for c in d["driver"]["checks"]])' "$output"
	assert_line --index 0 "[('kernel', 'ok'), ('ecc', 'ok'), ('persistence', 'ok'), ('xid', 'ok')] 60"
	assert_line --index 1 "[('devices', 'ok'), ('xid-log', 'skip')]"
}

@test "smoke --json on broken GPUs names each failure by its id: ECC, a wrong result, a critical Xid" {
	local ecc kernel xid
	ecc=$(broken ecc) kernel=$(broken kernel) xid=$(broken xid)
	local root
	for root in "$ecc" "$kernel" "$xid"; do
		run --separate-stderr "$GPURUN" --driver-root "$root" smoke --json
		assert_failure 1
		python3 -c '
import json, sys
d = json.loads(sys.argv[1])
print(" ".join(c["id"] + ": " + c["text"] for c in d["gpus"][0]["checks"] if c["level"] == "fail"))' "$output"
	done >"$BATS_TEST_TMPDIR/fails"
	run cat "$BATS_TEST_TMPDIR/fails"
	assert_line --index 0 "ecc: 3 uncorrected ECC errors since boot"
	assert_line --index 1 "kernel: kernel: 1 of 1024 results wrong (out[7] = 0, want 14)"
	assert_line --index 2 "xid.boot: Xid 79 since boot: pid=1234, name=train, GPU has fallen off the bus."
}

@test "a GPU whose probe hangs fails at its deadline, and the other GPUs still get their verdicts" {
	local d
	d=$(broken hang)
	run --separate-stderr "$GPURUN" --driver-root "$d" smoke --gpu-timeout 1
	assert_failure 1
	assert_equal "${#lines[@]}" 5
	assert_line --index 1 "$(gpu_line 1 "${FOUR_BUS[1]}")${FOUR_UUID[1]}): ok kernel ok; ECC 0; persistence on; no Xid during the run"
	assert_line --index 2 "$(gpu_line 2 "${FOUR_BUS[2]}")${FOUR_UUID[2]}): FAIL its probe did not finish within 1 s: killed (SIGKILL)"
	assert_line --index 3 --partial "$(gpu_line 3 "${FOUR_BUS[3]}")${FOUR_UUID[3]}): ok kernel ok"
	assert_line --index 4 "smoke: 3 of 4 GPUs ok, driver $DRIVER_VERSION$(no_log "$d")"
	assert_equal "$stderr" ""
}

@test "a probe stuck in the driver is named in its GPU's verdict, and gpurun does not wait for it" {
	skip_unless_root "freezes a process with the cgroup v1 freezer"
	local fz=/sys/fs/cgroup/freezer d pid i
	[[ -w $fz/cgroup.procs ]] || skip "no cgroup v1 freezer at $fz"
	d=$(broken hang)
	mkdir "$fz/gpurun-test-$$"
	fz=$fz/gpurun-test-$$
	echo "$fz" >"$BATS_TEST_TMPDIR/freezer"
	"$GPURUN" --driver-root "$d" smoke --gpus 2 --gpu-timeout 2 >"$BATS_TEST_TMPDIR/out" 2>"$BATS_TEST_TMPDIR/err" &
	local gpurun_pid=$!
	# The hung probe, frozen: an uninterruptible sleep SIGKILL cannot end,
	# as a GPU stuck in the driver holds its caller.
	for ((i = 0; i < 200; i++)); do
		pid=$(pgrep -x fake-cuda-hang) && break
		sleep 0.05
	done
	[[ -n $pid ]] || fail "the probe did not hang"
	echo "$pid" >"$fz/cgroup.procs"
	echo FROZEN >"$fz/freezer.state"
	local rc=0
	wait "$gpurun_pid" || rc=$?
	local state
	state=$(awk '{print $3}' "/proc/$pid/stat")
	echo THAWED >"$fz/freezer.state"
	wait_procs_gone "$d"
	rmdir "$fz"
	rm "$BATS_TEST_TMPDIR/freezer"
	assert_equal "$state" D
	assert_equal "$rc" 1
	# The pids are the container's: any number.
	run sed -E 's/pid [0-9]+ /pid N /' "$BATS_TEST_TMPDIR/out"
	assert_line --index 0 "$(gpu_line 0 "${FOUR_BUS[2]}")${FOUR_UUID[2]}): FAIL its probe did not finish within 2 s, and outlived SIGKILL: pid N (fake-cuda-hang) is in state D (uninterruptible: stuck in the driver); gpurun leaves it behind: the GPU needs a reset or a reboot"
	run sed -E 's/pid [0-9]+ /pid N /' "$BATS_TEST_TMPDIR/err"
	assert_output "gpurun: warning: 1 process of the container outlived SIGKILL: pid N (fake-cuda-hang) in state D; gpurun does not wait for it (state D: in the kernel, uninterruptible, where a GPU stuck in the driver holds its caller)"
}

@test "smoke --gpu-timeout with a value that is not seconds is gpurun's own failure, exit 125" {
	run --separate-stderr "$GPURUN" --driver-root "$FAKE1" smoke --gpu-timeout 0
	assert_equal "$status" 125
	assert_equal "$stderr" "gpurun: smoke: --gpu-timeout 0: expected seconds, more than 0 and at most 86400"
}

@test "smoke --doctor --json is one document with doctor's verdicts and the GPUs', and one exit status" {
	run --separate-stderr smoke "$FAKE1" --doctor --json
	assert_success
	assert_equal "${#lines[@]}" 1
	run python3 -c '
import json, sys
d = json.loads(sys.argv[1])
ids = [c["id"] for c in d["doctor"]["checks"]]
print(d["ok"], d["doctor"]["ok"], d["doctor"]["failed"], d["gpus"][0]["ok"])
print(" ".join(ids))' "$output"
	assert_success
	assert_line --index 0 "True True 0 True"
	assert_line --index 1 "cache userns proc overlayfs driver devices uvm persistenced ldcache gpus nvml libcuda cdi"
}

@test "smoke --doctor fails the run on a doctor check that fails, though every GPU passes" {
	export GPURUN_CACHE=/proc/gpurun-cache
	run --separate-stderr smoke "$FAKE1" --doctor
	assert_failure 1
	assert_line --index 0 --partial "FAIL  cache: /proc/gpurun-cache cannot be created: "
	assert_line "doctor: 1 failed, $((1 + $(slash_overlay_refused && echo 1 || echo 0))) warning$(slash_overlay_refused && echo s)"
	assert_line --partial "$ONE_UUID): ok kernel ok"
}

@test "the nightly node script of docs/nightly.md writes the node's document and exits with its status" {
	local ecc out=$BATS_TEST_TMPDIR/night script=$TESTS_DIR/../examples/nightly/gpu-node-check.sh
	ecc=$(broken ecc)
	run --separate-stderr env GPURUN="$GPURUN" NODE=good GPU_TIMEOUT=30 sh "$script" "$out" --driver-root "$FAKE1"
	assert_success
	assert_output "good: ok"
	run --separate-stderr env GPURUN="$GPURUN" NODE=bad sh "$script" "$out" --driver-root "$ecc"
	assert_failure 1
	assert_output "bad: FAIL, see $out/bad.json"
	run --separate-stderr env GPURUN="$GPURUN" NODE=worse sh "$script" "$out" --gpu-timeout nope
	assert_failure 125
	assert_output "worse: gpurun failed (exit status 125): gpurun: smoke: --gpu-timeout nope: expected seconds, more than 0 and at most 86400"
	printf '%s\n' good bad worse gone >"$out/nodes"
	run --separate-stderr sh "$TESTS_DIR/../examples/nightly/gpu-nightly-summary.sh" "$out" "$out/nodes"
	assert_failure 1
	assert_output "bad FAIL
    GPU 0 0000:17:00.0 ecc: 3 uncorrected ECC errors since boot
good ok
worse MISSING: gpurun: smoke: --gpu-timeout nope: expected seconds, more than 0 and at most 86400
gone MISSING: no result"
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
	skip_unless_root "mounts an overlay of the driver root"
	local version=${REAL##*/realdriver-} drv=$BATS_TEST_TMPDIR/drv
	# The shared root must not change, and a copy is 1 GB: an overlay
	# takes the one changed file.
	mkdir "$drv" "$BATS_TEST_TMPDIR/upper" "$BATS_TEST_TMPDIR/work"
	mount -t overlay overlay -o "lowerdir=$REAL,upperdir=$BATS_TEST_TMPDIR/upper,workdir=$BATS_TEST_TMPDIR/work" "$drv"
	sed -i "s/$version/535.999.01/" "$drv/proc/driver/nvidia/version"
	run --separate-stderr "$GPURUN" --driver-root "$drv" smoke
	umount "$drv"
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
