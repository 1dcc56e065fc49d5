#!/usr/bin/env bats
# The examples the docs show are what gpurun prints today: every command
# marked `<!-- run: ... -->` in README.md and docs/lesson.md runs against
# the test suite's fixtures and fake driver (tools/gen-examples.py).  As root
# the output must be what the file shows (the docs show root's plans); as
# an unprivileged user every command must still exit as marked.

load lib/common

GEN="python3 $BATS_TEST_DIRNAME/../tools/gen-examples.py"
DOCS=$BATS_TEST_DIRNAME/..

setup_file() {
	require_gpurun
	common_images
	[[ -d $TESTS_BUILD/fakedriver-four ]] ||
		skip "no fake NVIDIA driver (build it as root: tests/run-bats.sh)"
}

check_examples() {
	if [[ $GPURUN_TEST_MODE == root ]]; then
		run $GEN --check "$DOCS/$1"
	else
		run $GEN --run "$DOCS/$1"
	fi
	assert_success
}

@test "every example in README.md prints what the README shows" {
	check_examples README.md
}

# The lesson runs plans, one of them without the /proc/driver mask: they
# must leave the host as they found it.  Of /tmp only the plans' own
# scratch and gen-examples' directory count (other suites come and go).
host_filtered() {
	host_snapshot "$1"
	awk '/^## /{sec=$0} sec !~ /^## \/tmp/ || /^## / || /^gpurun-(plan|examples)\./' "$1" >"$1.f"
}

@test "every command of the lesson runs and prints what the lesson shows, and leaves the host as it was" {
	host_filtered "$BATS_TEST_TMPDIR/before"
	check_examples docs/lesson.md
	host_filtered "$BATS_TEST_TMPDIR/after"
	run diff -u "$BATS_TEST_TMPDIR/before.f" "$BATS_TEST_TMPDIR/after.f"
	assert_success
}

@test "an example whose output changed is caught" {
	skip_unless_root "the outputs are root's"
	cp "$DOCS/docs/lesson.md" "$BATS_TEST_TMPDIR/lesson.md"
	sed -i 's/^GPU 0: NVIDIA H100 80GB HBM3/GPU 0: NVIDIA H200/' "$BATS_TEST_TMPDIR/lesson.md"
	run $GEN --check "$BATS_TEST_TMPDIR/lesson.md"
	assert_failure
	assert_output --partial "is out of date"
}

# The lesson shows the hardening block as the machine that wrote it has it
# (cgroup v1's mounts below /sys, no /proc/kcore); another host's kernel
# and mounts give other steps there, and the same lesson.
@test "a plan's hardening block as another host prints it is not a change" {
	skip_unless_root "the outputs are root's"
	cp "$DOCS/docs/lesson.md" "$BATS_TEST_TMPDIR/lesson.md"
	sed -i -e '/^rbind_self ro,nosuid,nodev,noexec proc\/sys /a remount ro,nosuid,nodev,noexec sys/kernel/tracing' \
		-e '/^bind_each ro,nosuid,noexec \/dev\/null proc\//d' "$BATS_TEST_TMPDIR/lesson.md"
	run diff "$DOCS/docs/lesson.md" "$BATS_TEST_TMPDIR/lesson.md"
	assert_failure
	run $GEN --check "$BATS_TEST_TMPDIR/lesson.md"
	assert_success
}

@test "an example whose command fails is caught" {
	printf '%s\n' '<!-- run: gpurun --gpus 9 "$IMAGE" true -->' '```console' '```' >"$BATS_TEST_TMPDIR/bad.md"
	run $GEN --run "$BATS_TEST_TMPDIR/bad.md"
	assert_failure
	assert_output --partial "exited 125, expected 0"
}
