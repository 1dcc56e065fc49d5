#!/usr/bin/env bats
# `gpurun doctor`: one line per check, each failing check named with what
# to change.  Every failure is arranged for real: a sysctl set in a user
# namespace of the test's own, a /proc covered as in a container, an
# overlay stacked too deep, a driver root with parts removed.

load lib/common
load lib/gpu

setup_file() {
	gpu_setup_file
}

setup() {
	export GPURUN_CACHE=$BATS_TEST_TMPDIR/cache
	mkdir -p "$GPURUN_CACHE"
	host_snapshot "$BATS_TEST_TMPDIR/host-before"
}

teardown() {
	assert_host_unchanged "$BATS_TEST_TMPDIR/host-before"
}

# The verdict line of one check.
verdict() {
	printf '%s\n' "${lines[@]}" | grep -E "^(ok  |warn|FAIL)  $1: " || true
}

assert_verdict() { # NAME LEVEL FRAGMENT...
	local name=$1 level=$2 line frag
	shift 2
	line=$(verdict "$name")
	[[ -n "$line" ]] || fail "no '$name' line in: $output"
	[[ "$line" == "$level  $name: "* ]] || fail "want $level for '$name', got: $line"
	for frag in "$@"; do
		[[ "$line" == *"$frag"* ]] || fail "the '$name' line does not mention '$frag': $line"
	done
}

# in_userns CMD...: CMD as root of a user namespace of its own, with its own
# mount namespace, whichever the mode.
in_userns() {
	unshare -Urm "$@"
}

# driver_variant SRC SHELL-ACTION: a copy of the fake driver root SRC owned
# by the caller, with SHELL-ACTION run inside it, in $BATS_TEST_TMPDIR/drv.
# Device nodes cannot be copied by a user: each is a placeholder file that
# drv_doctor binds the real node onto.
driver_variant() {
	local src=$1 d=$BATS_TEST_TMPDIR/drv n
	cp -a "$src" "$d" 2>/dev/null || true
	for n in "$src"/dev/*; do
		[[ -e "$d/dev/${n##*/}" ]] || touch "$d/dev/${n##*/}"
	done
	(cd "$d" && sh -ec "$2")
}

# drv_doctor SRC: `gpurun doctor` on the variant, its surviving node
# placeholders bound to SRC's real nodes (in a mount namespace of its own).
drv_doctor() {
	local src=$1 d=$BATS_TEST_TMPDIR/drv
	run --separate-stderr in_userns sh -c '
		src=$1 d=$2; shift 2
		for n in "$src"/dev/*; do
			t="$d/dev/${n##*/}"
			if [ -e "$t" ]; then mount --bind "$n" "$t" || exit 99; fi
		done
		exec "$@"' sh "$src" "$d" "$GPURUN" doctor --driver-root "$d"
}

@test "doctor passes on this host with the fake driver, exit 0" {
	run --separate-stderr "$GPURUN" doctor --driver-root "$FAKE4"
	assert_success
	assert_verdict "user namespaces" "ok  "
	assert_verdict /proc "ok  " "fresh procfs"
	assert_verdict overlayfs "ok  " "$GPURUN_CACHE"
	assert_verdict "NVIDIA driver" "ok  " "version 550.54.14, 4 GPUs under $FAKE4"
	assert_verdict "NVIDIA devices" "ok  "
	assert_verdict nvidia-uvm "ok  "
	assert_verdict nvidia-persistenced "ok  "
	assert_verdict ld.so.cache "ok  " "libcuda.so.550.54.14 and libnvidia-ml.so.550.54.14"
	assert_verdict cache "ok  " "$GPURUN_CACHE is writable"
	assert_line "0 failed, 0 warnings"
	assert_equal "$stderr" ""
}

@test "doctor leaves no new entry in the cache directory" {
	run --separate-stderr "$GPURUN" doctor --driver-root "$FAKE1"
	assert_success
	run ls -A "$GPURUN_CACHE"
	assert_output ""
}

@test "doctor without a driver warns, and fails when a driver root was named" {
	run --separate-stderr env -u GPURUN_DRIVER_ROOT "$GPURUN" doctor
	if [[ -e /proc/driver/nvidia/version ]]; then
		skip "this host has an NVIDIA driver"
	fi
	assert_success
	assert_verdict "NVIDIA driver" warn "no NVIDIA driver found under /" "--gpus void still works"
	mkdir "$BATS_TEST_TMPDIR/empty"
	run --separate-stderr "$GPURUN" doctor --driver-root "$BATS_TEST_TMPDIR/empty"
	assert_failure 1
	assert_verdict "NVIDIA driver" FAIL "no NVIDIA driver found under $BATS_TEST_TMPDIR/empty"
}

@test "user namespaces disabled by user.max_user_namespaces = 0 fail with the sysctl to set" {
	# A user namespace's own limit, set in one made for the test; gpurun
	# runs there as an unmapped, unprivileged uid.
	run --separate-stderr python3 -c '
import ctypes, os, sys
libc = ctypes.CDLL(None, use_errno=True)
if libc.unshare(0x10000000) != 0:
    sys.exit("unshare: " + os.strerror(ctypes.get_errno()))
open("/proc/sys/user/max_user_namespaces", "w").write("0")
os.execv(sys.argv[1], sys.argv[1:])' "$GPURUN" doctor
	assert_failure 1
	assert_verdict "user namespaces" FAIL "gpurun cannot run unprivileged" "user.max_user_namespaces = 0" \
		"sysctl -w user.max_user_namespaces=15000"
	assert_verdict /proc warn "not checked"
}

# knob_doctor FILE VALUE: doctor as an unprivileged uid where creating a
# user namespace fails and the kernel sysctl FILE (Debian's or Ubuntu's
# knob, on a tmpfs over /proc/sys/kernel) reads VALUE.
knob_doctor() {
	run --separate-stderr in_userns sh -c '
		mount -t tmpfs knobs /proc/sys/kernel && echo "$1" >"/proc/sys/kernel/$2" &&
		echo 1 >/proc/sys/user/max_user_namespaces || exit 99
		shift 2
		exec unshare -U "$@"' sh "$2" "$1" "$GPURUN" doctor
}

@test "user namespaces refused where AppArmor restricts them name kernel.apparmor_restrict_unprivileged_userns" {
	knob_doctor apparmor_restrict_unprivileged_userns 1
	assert_failure 1
	assert_verdict "user namespaces" FAIL "kernel.apparmor_restrict_unprivileged_userns = 1" \
		"sysctl -w kernel.apparmor_restrict_unprivileged_userns=0"
}

@test "user namespaces refused by kernel.unprivileged_userns_clone = 0 name it" {
	knob_doctor unprivileged_userns_clone 0
	assert_failure 1
	assert_verdict "user namespaces" FAIL "kernel.unprivileged_userns_clone = 0" \
		"sysctl -w kernel.unprivileged_userns_clone=1"
}

@test "a /proc covered by other mounts, as in a container, fails the /proc check" {
	# The covering tmpfs is locked once copied into a less privileged
	# namespace: what a container runtime's masked paths look like.
	run --separate-stderr in_userns sh -c 'mount -t tmpfs mask /proc/sys || exit 99; exec unshare -Urm "$@"' \
		sh "$GPURUN" doctor
	assert_failure 1
	assert_verdict /proc FAIL "a fresh procfs cannot be mounted (Operation not permitted)" "as inside a container" \
		"run gpurun on the host"
	# ... which is the truth: a launch fails there.
	run --separate-stderr in_userns sh -c 'mount -t tmpfs mask /proc/sys || exit 99; exec unshare -Urm "$@"' \
		sh "$GPURUN" --no-cache "$BUSYBOX_TAR" true
	assert_gpurun_error 125 "proc" "Operation not permitted"
	assert_stderr_partial "a parent container masks parts of /proc"
}

@test "a cache on an overlay stacked too deep fails the overlayfs check" {
	local t=$BATS_TEST_TMPDIR/stack
	mkdir -p "$t"
	run --separate-stderr in_userns sh -c '
		t=$1; shift
		mount -t tmpfs t "$t" && cd "$t" && mkdir l1 u1 w1 a u2 w2 b &&
		mount -t overlay o -o lowerdir=l1,upperdir=u1,workdir=w1,userxattr a && mkdir a/x &&
		mount -t overlay o -o lowerdir=a/x,upperdir=u2,workdir=w2,userxattr b && mkdir b/cache || exit 99
		GPURUN_CACHE=$t/b/cache exec "$@"' sh "$t" "$GPURUN" doctor
	assert_failure 1
	assert_verdict overlayfs FAIL "the cache $t/b/cache cannot be an overlay's lower layer" "GPURUN_CACHE"
}

@test "a missing GPU node and nvidiactl fail the devices check with the nvidia-modprobe to run" {
	driver_variant "$FAKE4" 'rm dev/nvidia3 dev/nvidiactl'
	drv_doctor "$FAKE4"
	assert_failure 1
	# Minor 3 is index 2, bus 0000:86:00.0 in the four-GPU topology.
	assert_verdict "NVIDIA devices" FAIL "/dev/nvidiactl" "/dev/nvidia3 (GPU 2, 00000000:86:00.0)" \
		"nvidia-modprobe -c=3"
	assert_verdict nvidia-uvm "ok  "
}

@test "nvidia-uvm not loaded fails with nvidia-modprobe -u" {
	driver_variant "$FAKE1" 'rm dev/nvidia-uvm dev/nvidia-uvm-tools; sed -i "/nvidia-uvm/d" proc/devices'
	drv_doctor "$FAKE1"
	assert_failure 1
	assert_verdict nvidia-uvm FAIL "not loaded" "nvidia-modprobe -u -c=0"
}

@test "nvidia-uvm loaded without its node names the major" {
	driver_variant "$FAKE1" 'rm dev/nvidia-uvm'
	drv_doctor "$FAKE1"
	assert_failure 1
	assert_verdict nvidia-uvm FAIL "the module is loaded (major 510) but /dev/nvidia-uvm is missing"
}

@test "a GPU Operator driver root (uvm node, no proc/devices) keeps nvidia-uvm ok" {
	driver_variant "$FAKE1" 'rm proc/devices'
	drv_doctor "$FAKE1"
	assert_success
	assert_verdict nvidia-uvm "ok  "
}

@test "no nvidia-persistenced socket is a warning, not a failure" {
	driver_variant "$FAKE1" 'rm run/nvidia-persistenced/socket'
	drv_doctor "$FAKE1"
	assert_success
	assert_verdict nvidia-persistenced warn "start nvidia-persistenced"
	refute_line --partial "FAIL  "
}

@test "an unreadable ld.so.cache fails the ld.so.cache check" {
	driver_variant "$FAKE1" 'printf "not a cache" >etc/ld.so.cache'
	drv_doctor "$FAKE1"
	assert_failure 1
	assert_verdict ld.so.cache FAIL "ldconfig"
}

@test "an ld.so.cache without the driver's libcuda fails the ld.so.cache check" {
	# A valid, empty cache in the new format: a header and no entries.
	driver_variant "$FAKE1" ':'
	python3 -c 'open(__import__("sys").argv[1], "wb").write(b"glibc-ld.so.cache1.1" + bytes(28))' \
		"$BATS_TEST_TMPDIR/drv/etc/ld.so.cache"
	drv_doctor "$FAKE1"
	assert_failure 1
	assert_verdict ld.so.cache FAIL "lists no libcuda.so.550.54.14"
}

@test "a read-only cache directory fails the cache check" {
	run --separate-stderr in_userns sh -c 'mount --bind -o ro "$1" "$1" || exit 99; shift; exec "$@"' \
		sh "$GPURUN_CACHE" "$GPURUN" doctor
	assert_failure 1
	assert_verdict cache FAIL "$GPURUN_CACHE is not writable: Read-only file system" "GPURUN_CACHE"
}

@test "a cache that cannot be created names the parent in the way" {
	GPURUN_CACHE=/proc/gpurun-cache run --separate-stderr "$GPURUN" doctor
	assert_failure 1
	assert_verdict cache FAIL "/proc/gpurun-cache cannot be created: /proc"
}

@test "a cache of another user fails the cache check" {
	skip_unless_root "only root can give a directory to another user"
	chown 65534 "$GPURUN_CACHE"
	run --separate-stderr "$GPURUN" doctor
	assert_failure 1
	assert_verdict cache FAIL "belongs to uid 65534, not to you (uid 0)"
}

@test "doctor refuses an unknown option with exit 125" {
	run --separate-stderr "$GPURUN" doctor --frobnicate
	assert_equal "$status" 125
	assert_equal "$output" ""
	[[ "$stderr" == "gpurun: doctor: unknown option --frobnicate"* ]] || fail "stderr: $stderr"
}
