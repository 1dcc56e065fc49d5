#!/usr/bin/env bats
# The caller's terminal once the command is done (ns/termkeep.c).  Without
# -t the command holds it on fds 0-2 and needs no capability to leave it
# exclusive, its output stopped with IXON off, O_NONBLOCK on the open file
# it shares with the caller's shell and its modes changed: gpurun gives all
# of it back before it writes again.  With -t the command never holds it.
#
# The caller is tests/lib/term_caller.py: the leader of a session on a new
# pty, which runs gpurun as `sh -c` does, then writes to the terminal as the
# shell's next prompt would; after it, a process that is not root opens the
# terminal again, and its modes, exclusive flag and file status flags are
# compared with what they were before.  The payload is `probe tty-payload`
# (tests/probe.c).  Run as root, a root caller's launches; unprivileged, a
# user's.

load lib/common

setup_file() {
	require_gpurun
	common_images
	CALLER=$TESTS_DIR/lib/term_caller.py
	export CALLER
}

setup() {
	host_snapshot "$BATS_TEST_TMPDIR/host.before"
}

# term_caller [--killinit] -- CMD [ARG...]: see tests/lib/term_caller.py.
term_caller() {
	run python3 "$CALLER" "$@"
	[[ $status -ne 99 ]] || fail "$output"
	assert_success
}

# What the payload says, and what the caller finds after gpurun: its next
# write goes out, and the terminal is as it was.
PAYLOAD="tty-payload: TIOCEXCL EPERM, IXON ECHO ICANON off, output stopped, O_NONBLOCK"
GIVEN_BACK="caller writes
exit 0
foreground: caller
caller's write: ok
open: ok
modes: same
exclusive: no
flags: same"

@test "a payload's stopped output, O_NONBLOCK and changed modes are undone on the caller's terminal, and its TIOCEXCL refused" {
	term_caller -- "$GPURUN" "$BUSYBOX_DIR" probe tty-payload
	assert_output "$PAYLOAD
$GIVEN_BACK"
	assert_host_unchanged "$BATS_TEST_TMPDIR/host.before"
}

@test "with -u 65534, the payload's changes to the caller's terminal are undone as well" {
	term_caller -- "$GPURUN" -u 65534 "$BUSYBOX_DIR" probe tty-payload
	assert_output "$PAYLOAD
$GIVEN_BACK"
	assert_host_unchanged "$BATS_TEST_TMPDIR/host.before"
}

@test "when the container's init is killed while the payload holds the terminal, it is given back before gpurun says so" {
	term_caller --killinit -- "$GPURUN" "$BUSYBOX_DIR" probe tty-payload hold
	assert_output "$PAYLOAD
gpurun: the container's init (pid 1) was killed by signal 9 (Killed)
${GIVEN_BACK/exit 0/exit 125}"
	assert_host_unchanged "$BATS_TEST_TMPDIR/host.before"
}

@test "with -t the payload acts on the container's pty, and the caller's terminal stays as it was" {
	term_caller -- "$GPURUN" -t "$BUSYBOX_DIR" probe tty-payload
	assert_output "$PAYLOAD
$GIVEN_BACK"
	assert_host_unchanged "$BATS_TEST_TMPDIR/host.before"
}
