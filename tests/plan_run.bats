#!/usr/bin/env bats
# The printed plan runs.  For each shape of launch, `gpurun --dry-run ... >
# plan.sh; sh plan.sh` must build the same container as gpurun itself: the
# same fingerprint taken inside (tests/lib/fingerprint.sh: mounts with their
# flags and data, /dev, /proc/driver/nvidia, injected files, ids,
# capabilities, no_new_privs, new namespaces, environment, host name,
# working directory, ldconfig -p), the command's exit status, and nothing
# left on the host.  --verbose prints the same lines as --dry-run.  As root
# each run happens inside a throw-away unshare, so a broken plan cannot
# reach the host's namespaces; unprivileged the plan makes its own user
# namespace.  Allowed difference, named at the top of every plan: the
# seccomp filter (not fingerprinted).

load lib/common
load lib/gpu

setup_file() {
	require_gpurun
	common_images
	GLIBC_TGZ=$(fixture glibc.tar.gz)
	FINGERPRINT=$(cat "$BATS_TEST_DIRNAME/lib/fingerprint.sh")
	export GLIBC_TGZ FINGERPRINT
}

# inside gpurun|plan OUT ARGS...: in a throw-away set of namespaces (as
# root), run gpurun with the fingerprint as its command, or print that
# launch's plan to OUT.sh and run it; the fingerprint's output goes to OUT.
# The caller's namespaces are handed to the fingerprint.  ENTRY: what
# comes before the fingerprint ("/bin/sh -c" unless the image's Entrypoint
# is that already: ENTRY=" ").
inside() {
	local what=$1 out=$2
	shift 2
	local wrap=()
	if [[ $(id -u) -eq 0 ]]; then wrap=(unshare --mount --uts --ipc --pid --fork); fi
	"${wrap[@]}" bash -c '
		what=$1 out=$2; shift 2
		ns=$(readlink /proc/self/ns/*)
		if [[ $what == gpurun ]]; then
			# shellcheck disable=SC2086
			exec "$GPURUN" "$@" ${ENTRY:-/bin/sh -c} "$FINGERPRINT" sh $ns >"$out"
		fi
		# shellcheck disable=SC2086
		"$GPURUN" --dry-run "$@" ${ENTRY:-/bin/sh -c} "$FINGERPRINT" sh $ns >"$out.sh" || exit 99
		cd / && exec sh "$out.sh" >"$out"' bash "$what" "$out" "$@"
}

# host_same BEFORE: assert_host_unchanged, where of the entries of /tmp
# only the plan's own (gpurun-plan.*) count: the helpers' parallel builds
# and suites come and go there.
host_same() {
	local before=$1 f
	host_snapshot "$before.now"
	for f in "$before" "$before.now"; do
		awk '/^## /{sec=$0} sec !~ /^## \/tmp/ || /^## / || /^gpurun-plan\./' "$f" >"$f.f"
	done
	run diff -u "$before.f" "$before.now.f"
	if [[ $status -ne 0 ]] && grep -q '^+[^+]' <<<"$output"; then
		fail "the run left something behind on the host: $output"
	fi
}

# same_container ARGS... IMAGE: gpurun and its plan make the same container,
# and the host is left as it was.
same_container() {
	local d=$BATS_TEST_TMPDIR
	# A first launch fills the cache: the plan then binds the cached layers.
	"$GPURUN" "$@" true || fail "the launch failed"
	host_snapshot "$d/before"
	inside gpurun "$d/gpurun.txt" "$@" 2>"$d/gpurun.err" || fail "gpurun failed: $(cat "$d/gpurun.err")"
	inside plan "$d/plan.txt" "$@" 2>"$d/plan.err" || fail "the plan failed: $(cat "$d/plan.err")"
	host_same "$d/before"
	run diff -u "$d/gpurun.txt" "$d/plan.txt"
	assert_success
	grep -q '^== mounts' "$d/plan.txt" || fail "no fingerprint"
}

@test "a busybox archive: the plan builds the container gpurun builds" {
	same_container "$BUSYBOX_TGZ"
}

@test "a glibc archive: the plan builds the container gpurun builds" {
	same_container "$GLIBC_TGZ"
}

@test "a directory image: the plan builds the container gpurun builds" {
	same_container "$BUSYBOX_DIR"
}

@test "an OCI image from the cache: the plan binds its cached layers as gpurun does" {
	local oci
	oci=$(oci_fixture oci) || skip "no OCI fixture here"
	# Its Entrypoint is /bin/sh -c; its User 1000:1000 and WorkingDir
	# /data come from the cached config.
	ENTRY=" " same_container --gpus void "$oci"
}

@test "--no-cache: the plan unpacks the archive with tar as gpurun unpacks it" {
	same_container --no-cache "$BUSYBOX_TGZ"
}

@test "file and directory volumes, rw and ro, with sources under /tmp" {
	local v
	v=$(mktemp -d /tmp/gpurun-planvol.XXXXXX)
	mkdir "$v/dir" && echo data >"$v/dir/f" && echo file >"$v/file"
	same_container -v "$v/dir:/data" -v "$v/dir:/data-ro:ro" -v "$v/file:/etc/motd" -v "$v/file:/opt/f:ro" "$BUSYBOX_TGZ"
	rm -rf "$v"
}

@test "-w, -u 1000:1000: the command's ids, groups, capabilities and directory" {
	same_container -w /work/here -u 1000:1000 "$BUSYBOX_TGZ"
}

@test "--read-only, --net none and --hostname" {
	same_container --read-only --net none --hostname plan-box "$BUSYBOX_TGZ"
}

@test "the plan exits with the command's status" {
	local d=$BATS_TEST_TMPDIR
	"$GPURUN" "$BUSYBOX_TGZ" true
	"$GPURUN" --dry-run "$BUSYBOX_TGZ" sh -c 'exit 7' >"$d/plan.sh"
	local wrap=()
	if [[ $(id -u) -eq 0 ]]; then wrap=(unshare --mount --uts --ipc --pid --fork); fi
	run "${wrap[@]}" sh "$d/plan.sh"
	assert_equal "$status" 7
}

@test "--verbose prints the lines of --dry-run, as the steps run" {
	local d=$BATS_TEST_TMPDIR v
	v=$(mktemp -d /tmp/gpurun-planvol.XXXXXX)
	"$GPURUN" "$BUSYBOX_TGZ" true
	"$GPURUN" --dry-run -v "$v:/v:ro" --read-only -w /w "$BUSYBOX_TGZ" true >"$d/dry.txt"
	"$GPURUN" --verbose -v "$v:/v:ro" --read-only -w /w "$BUSYBOX_TGZ" true 2>"$d/verbose.txt"
	rmdir "$v"
	sed -n 's/^+ //p' "$d/verbose.txt" >"$d/steps.txt"
	run diff -u "$d/dry.txt" "$d/steps.txt"
	assert_success
}

@test "the plan of an image without /bin/sh says at its top why it cannot run, and does not" {
	local d=$BATS_TEST_TMPDIR img
	img=$(image_copy busybox)
	rm "$img/bin/sh"
	"$GPURUN" --dry-run "$img" /bin/true >"$d/plan.sh"
	run grep -m1 '^# cannot run as a script: ' "$d/plan.sh"
	assert_output "# cannot run as a script: the image has no /bin/sh, which the plan needs after pivot_root to wait for its go-ahead and exec the command"
	run sh "$d/plan.sh"
	assert_equal "$status" 125
	assert_output "gpurun plan: cannot run as a script (see its first lines)"
}

# fake_in_tmp NAME: FAKE_ROOT, as root a copy of that fake driver root
# under /tmp (a plan's scratch must not hide bind sources there), removed
# by the test; unprivileged (no mknod for its device nodes) the driver root
# where it was built.
fake_in_tmp() {
	local src
	src=$(fake_driver "$1") || skip "no fake NVIDIA driver (build it as root: tests/run-bats.sh)"
	FAKE_ROOT=$src
	if [[ $(id -u) -eq 0 ]]; then
		FAKE_TMP=$(mktemp -d /tmp/gpurun-planfake.XXXXXX)
		cp -a "$src/." "$FAKE_TMP/"
		FAKE_ROOT=$FAKE_TMP
	fi
}

teardown() {
	if [[ -n "${FAKE_TMP:-}" ]]; then rm -rf "$FAKE_TMP"; fi
}

@test "--gpus 0 on a fake driver (under /tmp as root): devices, libraries, /proc/driver/nvidia, ldconfig" {
	fake_in_tmp one
	same_container --driver-root "$FAKE_ROOT" --gpus 0 "$GLIBC_TGZ"
}

@test "--gpus all --caps all on a fake driver (under /tmp as root)" {
	fake_in_tmp four
	same_container --driver-root "$FAKE_ROOT" --gpus all --caps all "$GLIBC_TGZ"
}

# hostile_plan absolute|climbing: a busybox directory image whose mount targets are
# symlinks to a host canary directory (absolute, or climbing with ..); the
# plan must refuse with one line and write nothing there.
hostile_plan() {
	local how=$1 d=$BATS_TEST_TMPDIR img canary
	img=$(image_copy busybox)
	canary=$(mktemp -d /tmp/gpurun-plancanary.XXXXXX)
	mkdir "$canary/etc" "$canary/tmp"
	rm -rf "$img/etc" "$img/tmp"
	if [[ $how == absolute ]]; then
		ln -s "$canary/etc" "$img/etc"
		mkdir "$img/tmp"
	else
		ln -s "../../../../../../../../..$canary/tmp" "$img/tmp"
		ln -s "$canary/etc" "$img/etc"
	fi
	"$GPURUN" --dry-run "$img" /bin/true >"$d/plan.sh"
	host_snapshot "$d/before"
	local wrap=()
	if [[ $(id -u) -eq 0 ]]; then wrap=(unshare --mount --uts --ipc --pid --fork); fi
	run --separate-stderr "${wrap[@]}" sh "$d/plan.sh"
	run_status=$status run_stderr=$stderr
	host_same "$d/before"
	run find "$canary" -mindepth 2
	assert_output ""
	rm -rf "$canary"
	assert_equal "$run_status" 125
}

@test "a plan refuses, in one line, a mount target that is an absolute symlink to a host path" {
	hostile_plan absolute
	assert_equal "$run_stderr" "gpurun plan: refused: a symlink in the image sends etc/resolv.conf out of the new root"
}

@test "a plan refuses, in one line, a mount target that is a symlink climbing out with .." {
	hostile_plan climbing
	assert_equal "$run_stderr" "gpurun plan: refused: a symlink in the image sends tmp out of the new root"
}

@test "the plan of an image whose layers are not cached yet says so at its top, and does not run" {
	local d=$BATS_TEST_TMPDIR
	GPURUN_CACHE=$d/empty-cache "$GPURUN" --dry-run "$BUSYBOX_TGZ" true >"$d/plan.sh"
	run grep -m1 '^# cannot run as a script: ' "$d/plan.sh"
	assert_output "# cannot run as a script: the image's layers are not in the cache yet; launch it once, then print the plan"
	run sh "$d/plan.sh"
	assert_equal "$status" 125
	assert_output "gpurun plan: cannot run as a script (see its first lines)"
}
