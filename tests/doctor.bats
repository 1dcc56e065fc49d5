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

# tally_warnings N: doctor's "N warnings" on this host, N the test's own and
# one more where, unprivileged, the kernel refuses an overlay of /.
tally_warnings() {
	local n=$1
	slash_overlay_refused && n=$((n + 1))
	printf '%s warning%s' "$n" "$([[ $n == 1 ]] || echo s)"
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
	if slash_overlay_refused; then
		assert_verdict overlayfs warn "$GPURUN_CACHE" "but one of / does not"
	else
		assert_verdict overlayfs "ok  " "$GPURUN_CACHE"
	fi
	assert_verdict "NVIDIA driver" "ok  " "version 550.54.14, 4 GPUs under $FAKE4"
	assert_verdict "NVIDIA devices" "ok  "
	assert_verdict nvidia-uvm "ok  "
	# The fake driver's socket is bound by a process long gone.
	assert_verdict nvidia-persistenced warn "stale"
	assert_verdict ld.so.cache "ok  " "libcuda.so.550.54.14 and libnvidia-ml.so.550.54.14"
	assert_verdict cache "ok  " "$GPURUN_CACHE is writable"
	assert_verdict "CDI specs" "ok  "
	assert_line "0 failed, $(tally_warnings 1)"
	assert_equal "$stderr" ""
}

@test "doctor leaves no new entry in the cache directory" {
	run --separate-stderr "$GPURUN" doctor --driver-root "$FAKE1"
	assert_success
	run ls -A "$GPURUN_CACHE"
	assert_output ""
}

@test "doctor without a driver warns, and fails when a driver root or GPUs were named" {
	if [[ -e /proc/driver/nvidia/version || -e /usr/bin/nvidia-smi ]]; then
		skip "this host has an NVIDIA driver"
	fi
	run --separate-stderr env -u GPURUN_DRIVER_ROOT "$GPURUN" doctor
	assert_success
	assert_verdict "NVIDIA driver" warn "no NVIDIA driver found under /" "--gpus void still works"
	run --separate-stderr env -u GPURUN_DRIVER_ROOT "$GPURUN" doctor --gpus 0
	assert_failure 1
	assert_verdict "NVIDIA driver" FAIL "no NVIDIA driver found under /"
	mkdir "$BATS_TEST_TMPDIR/empty"
	run --separate-stderr "$GPURUN" doctor --driver-root "$BATS_TEST_TMPDIR/empty"
	assert_failure 1
	assert_verdict "NVIDIA driver" FAIL "no NVIDIA driver found under $BATS_TEST_TMPDIR/empty"
}

@test "doctor fails on a host whose driver is installed but does not answer (a CI host that lost its GPU)" {
	if [[ -e /proc/driver/nvidia/version ]]; then
		skip "this host has an NVIDIA driver"
	fi
	# Its nvidia-smi is there, its /proc/driver/nvidia is not: a
	# directory with an nvidia-smi over /usr/bin, in a mount namespace.
	mkdir "$BATS_TEST_TMPDIR/bin"
	touch "$BATS_TEST_TMPDIR/bin/nvidia-smi"
	GPURUN_DRIVER_ROOT= run --separate-stderr in_userns sh -c 'mount --bind "$1" /usr/bin || exit 99; shift; exec "$@"' \
		sh "$BATS_TEST_TMPDIR/bin" "$GPURUN" doctor
	[[ $status -ne 99 ]] || fail "the test's bind mount failed: $stderr"
	assert_failure 1
	assert_verdict "NVIDIA driver" FAIL "no NVIDIA driver found under /" \
		"but this host has /usr/bin/nvidia-smi: the GPU or the kernel module is gone"
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

@test "a persistenced socket nobody listens on is a warning saying stale" {
	run --separate-stderr "$GPURUN" doctor --driver-root "$FAKE1"
	assert_success
	assert_verdict nvidia-persistenced warn "stale: $FAKE1/run/nvidia-persistenced/socket is there but nobody listens on it" \
		"restart nvidia-persistenced"
}

@test "a persistenced socket someone listens on is running" {
	driver_variant "$FAKE1" 'rm run/nvidia-persistenced/socket'
	# A listener of the test's own, bound by a relative name (the path
	# may be longer than a socket address holds).
	(cd "$BATS_TEST_TMPDIR/drv/run/nvidia-persistenced" && exec python3 -c '
import socket, sys
s = socket.socket(socket.AF_UNIX)
s.bind("socket")
s.listen(8)
print("ready", flush=True)
while True:
    s.accept()[0].close()' <&- >"$BATS_TEST_TMPDIR/listener.out" 2>&1 &
	echo $! >"$BATS_TEST_TMPDIR/listener.pid")
	wait_for_line "$BATS_TEST_TMPDIR/listener.out" ready
	drv_doctor "$FAKE1"
	kill "$(cat "$BATS_TEST_TMPDIR/listener.pid")"
	assert_success
	assert_verdict nvidia-persistenced "ok  " "running ($BATS_TEST_TMPDIR/drv/run/nvidia-persistenced/socket accepts connections)"
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

# ---- --gpus: usable end to end ------------------------------------------------

@test "doctor --gpus passes when NVML and libcuda initialise in the helper and see the GPUs" {
	run --separate-stderr "$GPURUN" doctor --driver-root "$FAKE4" --gpus 1,2
	assert_success
	assert_verdict GPUs "ok  " "--gpus 1,2 selects 1 (00000000:5e:00.0), 2 (00000000:86:00.0)"
	assert_verdict NVML "ok  " "$FAKE4$LIBDIR_DEBIAN/libnvidia-ml.so.550.54.14 initialises and sees the 2 selected GPUs"
	assert_verdict libcuda "ok  " "$FAKE4$LIBDIR_DEBIAN/libcuda.so.550.54.14: cuInit succeeds, CUDA 12.4, 4 devices"
	assert_line "0 failed, $(tally_warnings 1)"
	assert_equal "$stderr" ""
}

@test "doctor names a driver upgraded without a reboot as such: both versions, reboot or reload, no ldconfig" {
	local d
	d=$(fake_driver broken-upgrade)
	[[ -n $d ]] || skip "no fake broken-upgrade driver root (build it as root: tests/run-bats.sh)"
	run --separate-stderr "$GPURUN" doctor --driver-root "$d" --gpus all
	assert_failure 1
	assert_verdict "driver versions" FAIL "the kernel module is 535.999.01 but the libraries are 550.54.14 ($d$LIBDIR_DEBIAN/libcuda.so.550.54.14): a driver upgraded without a reboot, the old module still loaded; nothing CUDA or NVML works until you reboot or reload the module"
	refute_output --partial ldconfig
	refute_line --regexp "^(ok  |warn|FAIL)  (ld.so.cache|NVML|libcuda): "
	assert_line "1 failed, $(tally_warnings 1)"
}

@test "unprivileged, doctor's overlayfs check tries / as the lower layer, as gpurun / CMD would" {
	skip_unless_user "as root a launch of / needs no user namespace"
	run --separate-stderr "$GPURUN" doctor --driver-root "$FAKE1"
	assert_success
	if slash_overlay_refused; then
		assert_verdict overlayfs warn "an overlay of $GPURUN_CACHE with a tmpfs upper layer mounts in a user namespace, but one of / does not (Invalid argument): unprivileged, a directory with other file systems mounted under it cannot be a directory image here; archives and cached images can (gpurun smoke needs no image)"
	else
		assert_verdict overlayfs "ok  " "an overlay of $GPURUN_CACHE with a tmpfs upper layer mounts in a user namespace"
	fi
}

@test "doctor without --gpus loads no driver library" {
	run --separate-stderr "$GPURUN" doctor --driver-root "$FAKE1"
	assert_success
	refute_line --regexp "^(ok  |warn|FAIL)  (NVML|libcuda|GPUs): "
}

@test "doctor --gpus with a GPU the host does not have fails the GPUs check" {
	run --separate-stderr "$GPURUN" doctor --driver-root "$FAKE1" --gpus 3
	assert_failure 1
	assert_verdict GPUs FAIL "--gpus: unknown device 3"
}

# driver_copy: a copy of the one-GPU fake driver, with its nodes (root
# only), in $BATS_TEST_TMPDIR/drv.  failing_driver MARKER: one whose NVML
# or libcuda fails, as tests/fakedriver/nvml.c and cuda.c say.
driver_copy() {
	skip_unless_root "copies device nodes"
	cp -a "$FAKE1" "$BATS_TEST_TMPDIR/drv"
}
failing_driver() {
	driver_copy
	touch "$BATS_TEST_TMPDIR/drv/tmp/$1"
}

@test "doctor --gpus fails when NVML does not initialise, and says so" {
	failing_driver fake-nvml-fail
	run --separate-stderr "$GPURUN" doctor --driver-root "$BATS_TEST_TMPDIR/drv" --gpus 0
	assert_failure 1
	assert_verdict NVML FAIL "does not initialise: $BATS_TEST_TMPDIR/drv$LIBDIR_DEBIAN/libnvidia-ml.so.550.54.14: nvmlInit_v2: Unknown Error (999)"
	assert_verdict libcuda "ok  "
	assert_line "1 failed, 1 warning"
}

@test "doctor --gpus fails when libcuda's cuInit fails, and says so" {
	failing_driver fake-cuda-fail
	run --separate-stderr "$GPURUN" doctor --driver-root "$BATS_TEST_TMPDIR/drv" --gpus 0
	assert_failure 1
	assert_verdict libcuda FAIL "does not initialise: $BATS_TEST_TMPDIR/drv$LIBDIR_DEBIAN/libcuda.so.550.54.14: cuInit: CUDA_ERROR_UNKNOWN (999)"
	assert_verdict NVML "ok  "
	assert_line "1 failed, 1 warning"
}

@test "doctor --gpus fails when NVML does not see a selected GPU whose node is gone" {
	driver_copy
	rm "$BATS_TEST_TMPDIR/drv/dev/nvidia0"
	run --separate-stderr "$GPURUN" doctor --driver-root "$BATS_TEST_TMPDIR/drv" --gpus 0
	assert_failure 1
	assert_verdict NVML FAIL "initialises but does not see GPU 0 (00000000:17:00.0) (it sees 0 GPUs)"
	assert_verdict libcuda FAIL "cuInit: CUDA_ERROR_NO_DEVICE (100)"
}

# ---- CDI specs ------------------------------------------------------------------

@test "doctor fails on a CDI spec naming a driver version the host no longer has" {
	mkdir "$BATS_TEST_TMPDIR/cdi"
	"$GPURUN" cdi generate --driver-root "$FAKE1" --output "$BATS_TEST_TMPDIR/cdi/old.yaml"
	"$GPURUN" cdi generate --driver-root "$FAKE1" --output "$BATS_TEST_TMPDIR/cdi/nvidia.yaml"
	# Written for 550.54.13, before an upgrade to .14.
	sed -i 's/550\.54\.14/550.54.13/g' "$BATS_TEST_TMPDIR/cdi/old.yaml"
	GPURUN_CDI_SPEC_DIRS=$BATS_TEST_TMPDIR/cdi run --separate-stderr "$GPURUN" doctor --driver-root "$FAKE1"
	assert_failure 1
	assert_verdict "CDI specs" FAIL "CDI spec $BATS_TEST_TMPDIR/cdi/old.yaml is stale: it names $FAKE1" \
		".550.54.13" "regenerate it: gpurun cdi generate --output $BATS_TEST_TMPDIR/cdi/old.yaml"
	run grep -c "CDI specs: " <<<"$output"
	assert_output 1
}

@test "doctor passes the CDI specs that name only what the host has" {
	mkdir "$BATS_TEST_TMPDIR/cdi"
	"$GPURUN" cdi generate --driver-root "$FAKE4" --output "$BATS_TEST_TMPDIR/cdi/nvidia.yaml"
	GPURUN_CDI_SPEC_DIRS=$BATS_TEST_TMPDIR/cdi run --separate-stderr "$GPURUN" doctor --driver-root "$FAKE4"
	assert_success
	assert_verdict "CDI specs" "ok  " "1 spec in $BATS_TEST_TMPDIR/cdi, 9 devices"
}

@test "doctor refuses an unknown option with exit 125" {
	run --separate-stderr "$GPURUN" doctor --frobnicate
	assert_equal "$status" 125
	assert_equal "$output" ""
	[[ "$stderr" == "gpurun: doctor: unknown option --frobnicate"* ]] || fail "stderr: $stderr"
}
