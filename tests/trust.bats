#!/usr/bin/env bats
# As root, trust only what root owns (docs/design.md, "Modes"): run as root, gpurun
# executes nothing, loads no library, binds no driver file and reads no CDI
# spec from a path that another user owns or can write, judging every
# component from / down and through symlinks (base/trust.c); it refuses in
# one line naming the path and its owner.  Not as root, the user's own
# trees are fine.
#
# The canary of the nvidia-modprobe tests is the fake driver's own
# nvidia-modprobe (FAKENOUVM, tests/fakedriver/modprobe.c): every run of it
# appends to var/log/nvidia-modprobe.log in its root and makes the missing
# /dev/nvidia-uvm.  Where it is refused, neither may appear.

load lib/common
load lib/gpu

setup_file() {
	gpu_setup_file
	TEST_USER=${GPURUN_TEST_USER:-gpurun-test}
	export TEST_USER
}

setup() {
	host_snapshot "$BATS_TEST_TMPDIR/host.before"
}

MODPROBE_LOG=var/log/nvidia-modprobe.log
WHY="as root, gpurun uses only what root owns and no one else can write"

# nouvm_copy DIR: a copy of the no-nvidia-uvm fake driver (device nodes
# included, so root only) at DIR, owned by root; prints its canonical path.
nouvm_copy() {
	mkdir -p "$(dirname "$1")" && cp -a "$FAKENOUVM" "$1" && realpath "$1"
}

# uid_of USER: "uid N (USER)", as gpurun names an owner.
uid_of() {
	echo "uid $(id -u "$1") ($1)"
}

# assert_modprobe_never_ran ROOT: the canary is not there.
assert_modprobe_never_ran() {
	assert_file_not_exists "$1/$MODPROBE_LOG"
	assert_file_not_exists "$1/dev/nvidia-uvm"
	assert_host_unchanged "$BATS_TEST_TMPDIR/host.before"
}

@test "as root, a driver root owned by an ordinary user is refused in one line naming its owner, and its nvidia-modprobe never runs" {
	skip_unless_root
	root=$(nouvm_copy "$BATS_TEST_TMPDIR/drv")
	chown -R "$TEST_USER" "$root"
	run --separate-stderr "$GPURUN" --driver-root "$root" --gpus 0 "$GLIBC_TAR" true
	assert_gpurun_error 125
	assert_equal "$stderr" "gpurun: driver root $root: not trusted: $root is owned by $(uid_of "$TEST_USER"); $WHY"
	assert_modprobe_never_ran "$root"
}

@test "as root, GPURUN_DRIVER_ROOT naming a user's tree is refused the same way" {
	skip_unless_root
	root=$(nouvm_copy "$BATS_TEST_TMPDIR/drv")
	chown -R "$TEST_USER" "$root"
	GPURUN_DRIVER_ROOT=$root run --separate-stderr "$GPURUN" --gpus 0 "$GLIBC_TAR" true
	assert_gpurun_error 125
	assert_equal "$stderr" "gpurun: driver root $root: not trusted: $root is owned by $(uid_of "$TEST_USER"); $WHY"
	assert_modprobe_never_ran "$root"
}

@test "as root, a directory anyone can write in the middle of the driver root's path is refused" {
	skip_unless_root
	mkdir "$BATS_TEST_TMPDIR/open"
	chmod 0777 "$BATS_TEST_TMPDIR/open"
	root=$(nouvm_copy "$BATS_TEST_TMPDIR/open/drv")
	run --separate-stderr "$GPURUN" --driver-root "$root" --gpus 0 "$GLIBC_TAR" true
	assert_gpurun_error 125
	assert_equal "$stderr" "gpurun: driver root $root: not trusted: $BATS_TEST_TMPDIR/open is writable by group 0 (root) and by others; $WHY"
	assert_modprobe_never_ran "$root"
}

@test "as root, a symlink whose target leads through a user's directory is refused, naming that directory" {
	skip_unless_root
	mkdir "$BATS_TEST_TMPDIR/home"
	root=$(nouvm_copy "$BATS_TEST_TMPDIR/home/drv")
	chown "$TEST_USER" "$BATS_TEST_TMPDIR/home"
	ln -s "$BATS_TEST_TMPDIR/home/drv" "$BATS_TEST_TMPDIR/link"
	run --separate-stderr "$GPURUN" --driver-root "$BATS_TEST_TMPDIR/link" --gpus 0 "$GLIBC_TAR" true
	assert_gpurun_error 125
	assert_equal "$stderr" "gpurun: driver root $BATS_TEST_TMPDIR/link: not trusted: $BATS_TEST_TMPDIR/home is owned by $(uid_of "$TEST_USER"); $WHY"
	assert_modprobe_never_ran "$root"
}

@test "as root, a root-owned driver root in a sticky directory anyone can write (like /tmp) is used" {
	skip_unless_root
	mkdir "$BATS_TEST_TMPDIR/sticky"
	chmod 1777 "$BATS_TEST_TMPDIR/sticky"
	root=$(nouvm_copy "$BATS_TEST_TMPDIR/sticky/drv")
	run --separate-stderr "$GPURUN" --driver-root "$root" --gpus 0 "$GLIBC_TAR" sh -c 'ls /dev | grep nvidia-uvm; nvidia-smi -L'
	assert_success
	assert_output "nvidia-uvm
nvidia-uvm-tools
GPU 0: NVIDIA H100 80GB HBM3 (UUID: $ONE_UUID)"
	assert_equal "$(grep args: "$root/$MODPROBE_LOG")" "args: -u -c=0"
}

@test "as root, a user's symlink in a sticky directory is refused even when it leads to a root-owned driver" {
	skip_unless_root
	mkdir "$BATS_TEST_TMPDIR/sticky"
	chmod 1777 "$BATS_TEST_TMPDIR/sticky"
	root=$(nouvm_copy "$BATS_TEST_TMPDIR/drv")
	ln -s "$root" "$BATS_TEST_TMPDIR/sticky/link"
	chown -h "$TEST_USER" "$BATS_TEST_TMPDIR/sticky/link"
	run --separate-stderr "$GPURUN" --driver-root "$BATS_TEST_TMPDIR/sticky/link" --gpus 0 "$GLIBC_TAR" true
	assert_gpurun_error 125
	assert_equal "$stderr" "gpurun: driver root $BATS_TEST_TMPDIR/sticky/link: not trusted: $BATS_TEST_TMPDIR/sticky/link is owned by $(uid_of "$TEST_USER"); $WHY"
	assert_modprobe_never_ran "$root"
}

@test "as root, a user's nvidia-modprobe in a root-owned driver root never runs, nor is offered by --dry-run" {
	skip_unless_root
	root=$(nouvm_copy "$BATS_TEST_TMPDIR/drv")
	chown "$TEST_USER" "$root/usr/bin/nvidia-modprobe"
	want="gpurun: nvidia-modprobe $root/usr/bin/nvidia-modprobe: not trusted: $root/usr/bin/nvidia-modprobe is owned by $(uid_of "$TEST_USER"); $WHY"
	run --separate-stderr "$GPURUN" --driver-root "$root" --gpus 0 "$GLIBC_TAR" true
	assert_gpurun_error 125
	assert_equal "$stderr" "$want"
	run --separate-stderr "$GPURUN" --driver-root "$root" --dry-run --gpus 0 "$GLIBC_TAR" true
	assert_gpurun_error 125
	assert_equal "$stderr" "$want"
	assert_modprobe_never_ran "$root"
}

@test "as root, a default library directory of the driver root that anyone can write stops nvidia-modprobe, whose loader would look there" {
	skip_unless_root
	root=$(nouvm_copy "$BATS_TEST_TMPDIR/drv")
	mkdir "$root/lib64"
	chmod 0757 "$root/lib64"
	run --separate-stderr "$GPURUN" --driver-root "$root" --gpus 0 "$GLIBC_TAR" true
	assert_gpurun_error 125
	assert_equal "$stderr" "gpurun: a file the dynamic loader reads for nvidia-modprobe $root/lib64: not trusted: $root/lib64 is writable by others; $WHY"
	assert_modprobe_never_ran "$root"
}

@test "as root, a driver library a user owns in a root-owned driver root is not bound" {
	skip_unless_root
	root=$(nouvm_copy "$BATS_TEST_TMPDIR/drv")
	lib=$(find "$root" -name "libnvidia-ml.so.$DRIVER_VERSION" | head -1)
	[[ -n "$lib" ]] || fail "no libnvidia-ml in $root"
	chown "$TEST_USER" "$lib"
	run --separate-stderr "$GPURUN" --driver-root "$root" --gpus 0 --caps utility "$GLIBC_TAR" true
	assert_gpurun_error 125
	assert_equal "$stderr" "gpurun: driver library $lib: not trusted: $lib is owned by $(uid_of "$TEST_USER"); $WHY"
	assert_host_unchanged "$BATS_TEST_TMPDIR/host.before"
}

@test "as root, a libcuda a user owns is never loaded to read the CUDA version" {
	skip_unless_root
	root=$(nouvm_copy "$BATS_TEST_TMPDIR/drv")
	lib=$(find "$root" -name "libcuda.so.$DRIVER_VERSION" | head -1)
	chown "$TEST_USER" "$lib"
	run --separate-stderr "$GPURUN" info --driver-root "$root"
	assert_success
	assert_line "CUDA version:   n/a"
	assert_equal "$stderr" "gpurun: warning: CUDA version unknown: driver library $lib: not trusted: $lib is owned by $(uid_of "$TEST_USER"); $WHY"
}

@test "as root, a CDI spec directory a user owns is refused in one line before any spec in it is read" {
	skip_unless_root
	specs=$BATS_TEST_TMPDIR/cdi
	mkdir "$specs"
	printf '{"cdiVersion": "0.5.0", "kind": "test.com/dev", "devices": [{"name": "x"}], "containerEdits": {"env": ["READ=yes"]}}\n' >"$specs/t.json"
	chown -R "$TEST_USER" "$specs"
	run --separate-stderr "$GPURUN" --cdi-spec-dir "$specs" --device test.com/dev=x "$GLIBC_TAR" sh -c 'echo $READ'
	assert_gpurun_error 125
	assert_equal "$stderr" "gpurun: CDI spec directory $specs: not trusted: $specs is owned by $(uid_of "$TEST_USER"); $WHY"
	GPURUN_CDI_SPEC_DIRS=$specs run --separate-stderr "$GPURUN" cdi list
	assert_gpurun_error 125
	assert_equal "$stderr" "gpurun: CDI spec directory $specs: not trusted: $specs is owned by $(uid_of "$TEST_USER"); $WHY"
	assert_host_unchanged "$BATS_TEST_TMPDIR/host.before"
}

@test "as root, a CDI spec a user owns in a root-owned directory is refused" {
	skip_unless_root
	specs=$BATS_TEST_TMPDIR/cdi
	mkdir "$specs"
	printf '{"cdiVersion": "0.5.0", "kind": "test.com/dev", "devices": [{"name": "x"}], "containerEdits": {"env": ["READ=yes"]}}\n' >"$specs/t.json"
	chown "$TEST_USER" "$specs/t.json"
	run --separate-stderr "$GPURUN" --cdi-spec-dir "$specs" --device test.com/dev=x "$GLIBC_TAR" sh -c 'echo $READ'
	assert_gpurun_error 125
	assert_equal "$stderr" "gpurun: CDI spec $specs/t.json: not trusted: $specs/t.json is owned by $(uid_of "$TEST_USER"); $WHY"
}

@test "unprivileged, a driver root of the user's own, reached through the user's own symlink, works" {
	skip_unless_user
	mine=$BATS_TEST_TMPDIR/mine
	mkdir -p "$mine"
	# The tree without its device nodes (a user cannot copy them), which
	# `info` does not need; libcuda is loaded from it for the CUDA version.
	tar -C "$FAKE1" --exclude=./dev -cf - . | tar -C "$mine" -xf -
	ln -s "$mine" "$BATS_TEST_TMPDIR/link"
	run --separate-stderr "$GPURUN" info --driver-root "$BATS_TEST_TMPDIR/link"
	assert_success
	assert_line "CUDA version:   12.4"
	assert_line "GPU UUID:       $ONE_UUID"
	assert_equal "$stderr" ""
}

@test "unprivileged, the user's own CDI spec directory is read" {
	skip_unless_user
	specs=$BATS_TEST_TMPDIR/cdi
	mkdir "$specs"
	printf '{"cdiVersion": "0.5.0", "kind": "test.com/dev", "devices": [{"name": "x"}], "containerEdits": {"env": ["READ=yes"]}}\n' >"$specs/t.json"
	run --separate-stderr "$GPURUN" --cdi-spec-dir "$specs" --device test.com/dev=x "$GLIBC_TAR" sh -c 'echo $READ'
	assert_success
	assert_output yes
}
