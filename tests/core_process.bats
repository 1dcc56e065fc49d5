#!/usr/bin/env bats
# The process model: gpurun's init is pid 1 and reaps orphans, signals sent
# to gpurun reach the command, the standard streams and the terminal pass
# through, and the exit status follows the docker convention.

load lib/common

setup_file() {
	require_gpurun
	common_images
}

teardown() {
	# A test that failed half-way must not leave its launcher running.
	if [[ -n "${BG_PID:-}" ]]; then
		kill -KILL "$BG_PID" 2>/dev/null || true
		wait "$BG_PID" 2>/dev/null || true
	fi
}

# ---- pid 1 and the command -----------------------------------------------------

@test "the command is pid 2" {
	run --separate-stderr "$GPURUN" "$BUSYBOX_DIR" probe pid
	assert_success
	assert_output "2"
}

@test "the command's parent is pid 1, gpurun's init" {
	run --separate-stderr "$GPURUN" "$BUSYBOX_DIR" probe ppid
	assert_success
	assert_output "1"
}

@test "the command runs on the CPUs gpurun may use, all of them or those taskset gave it" {
	# P2 is started on another CPU than P1's and takes back the whole mask
	# before its exec (base/cpu.c): without that, on two CPUs or more, the
	# command would be held to the CPUs P1 was not on.
	local mine
	mine=$(grep '^Cpus_allowed_list:' /proc/self/status)
	run --separate-stderr "$GPURUN" "$BUSYBOX_DIR" grep '^Cpus_allowed_list:' /proc/self/status
	assert_success
	assert_output "$mine"
	run --separate-stderr "$GPURUN" --no-cache "$BUSYBOX_TGZ" grep '^Cpus_allowed_list:' /proc/self/status
	assert_success
	assert_output "$mine"
	local cpu
	cpu=$(awk '/^Cpus_allowed_list:/ { split($2, a, "[-,]"); print a[1] }' /proc/self/status)
	run --separate-stderr taskset -c "$cpu" "$GPURUN" "$BUSYBOX_DIR" grep '^Cpus_allowed_list:' /proc/self/status
	assert_success
	assert_output "Cpus_allowed_list:	$cpu"
}

@test "orphaned grandchildren are reaped: no zombies are left" {
	run --separate-stderr "$GPURUN" "$BUSYBOX_DIR" /bin/sh -c 'probe orphans 3 && probe zombies 5000'
	assert_success
	assert_output $'orphans: 3\nzombies: 0'
}

@test "background processes die with the command" {
	local token=$((900000 + RANDOM))
	run --separate-stderr "$GPURUN" "$BUSYBOX_DIR" /bin/sh -c "sleep $token >/dev/null 2>&1 & echo started"
	assert_success
	assert_output "started"
	run pgrep -f "sleep $token"
	assert_failure
}

@test "when gpurun returns, no process of the container is left: not a stopped one, not one ignoring signals" {
	local token=$((900000 + RANDOM))
	run --separate-stderr "$GPURUN" "$BUSYBOX_DIR" /bin/sh -c \
		"(trap '' TERM HUP INT; exec sleep $token) >/dev/null 2>&1 &
		 sleep $((token + 1)) >/dev/null 2>&1 & kill -STOP \$!; echo started"
	assert_success
	assert_output "started"
	# No waiting: P1 kills and reaps them before it hands over the status.
	run pgrep -f "sleep $token|sleep $((token + 1))"
	assert_failure
}

# ---- signals ----------------------------------------------------------------

# signal_reaches_command SIG: gpurun runs `probe wait-signal` in the
# background, gets SIG once the probe is ready, and must pass it on.
# Started with & from a non-interactive shell, gpurun inherits SIGINT and
# SIGQUIT ignored; it has to reset them (a
# launcher that does not leaves its command deaf to ^C).
signal_reaches_command() {
	local sig=$1 out=$BATS_TEST_TMPDIR/out
	"$GPURUN" "$BUSYBOX_DIR" probe wait-signal 60 >"$out" 2>"$out.err" </dev/null 3>&- &
	BG_PID=$!
	wait_for_line "$out" ready
	kill "-$sig" "$BG_PID"
	local rc=0
	wait "$BG_PID" || rc=$?
	BG_PID=
	run cat "$out"
	assert_output $'ready\ngot SIG'"$sig"
	assert_equal "$rc" 0
}

@test "SIGTERM sent to gpurun reaches the command" {
	signal_reaches_command TERM
}

@test "SIGINT sent to gpurun reaches the command" {
	signal_reaches_command INT
}

@test "SIGHUP sent to gpurun reaches the command" {
	signal_reaches_command HUP
}

@test "SIGQUIT sent to gpurun reaches the command" {
	signal_reaches_command QUIT
}

@test "SIGUSR1 sent to gpurun reaches the command" {
	signal_reaches_command USR1
}

@test "SIGUSR2 sent to gpurun reaches the command" {
	signal_reaches_command USR2
}

@test "killing gpurun with SIGKILL ends the container and leaves nothing behind" {
	local out=$BATS_TEST_TMPDIR/out token="gpurun-kill9-$$-$RANDOM"
	host_snapshot "$BATS_TEST_TMPDIR/host.before"
	"$GPURUN" "$BUSYBOX_TGZ" /bin/sh -c 'probe wait-signal 60; echo after' "$token" >"$out" 2>"$out.err" </dev/null 3>&- &
	BG_PID=$!
	wait_for_line "$out" ready
	pgrep -f "$token" >/dev/null || fail "the container shell ($token) is not running"
	kill -KILL "$BG_PID"
	wait "$BG_PID" || true
	BG_PID=
	# The kernel ends the pid namespace once its init is gone; give it a moment.
	local i
	for ((i = 0; i < 100; i++)); do
		pgrep -f "$token" >/dev/null || break
		sleep 0.05
	done
	run pgrep -f "$token"
	assert_failure
	assert_host_unchanged "$BATS_TEST_TMPDIR/host.before"
}

@test "the container's init killed from outside: gpurun says so in one line and exits 125" {
	local out=$BATS_TEST_TMPDIR/out p1
	"$GPURUN" "$BUSYBOX_DIR" /bin/sh -c 'echo ready; sleep 60' >"$out" 2>"$out.err" </dev/null 3>&- &
	BG_PID=$!
	wait_for_line "$out" ready
	p1=$(pgrep -P "$BG_PID" | head -n1)
	[[ -n "$p1" ]] || fail "no child of gpurun"
	kill -KILL "$p1"
	local rc=0
	wait "$BG_PID" || rc=$?
	BG_PID=
	assert_equal "$rc" 125
	assert_equal "$(cat "$out.err")" "gpurun: the container's init (pid 1) was killed by signal 9 (Killed)"
}

# ---- standard streams and the terminal --------------------------------------------

@test "stdin passes through to the command" {
	run --separate-stderr bash -c 'echo hi | "$GPURUN" "$BUSYBOX_DIR" cat'
	assert_success
	assert_output "hi"
}

@test "stdout and stderr stay separate" {
	run --separate-stderr "$GPURUN" "$BUSYBOX_DIR" /bin/sh -c 'echo to-stdout; echo to-stderr >&2'
	assert_success
	assert_output "to-stdout"
	assert_equal "$stderr" "to-stderr"
}

@test "a large output passes through intact" {
	run --separate-stderr bash -c '"$GPURUN" "$BUSYBOX_DIR" head -c 3000000 /dev/zero | wc -c'
	assert_success
	assert_output "3000000"
}

@test "stdin that is not a terminal is not a terminal inside" {
	run --separate-stderr "$GPURUN" "$BUSYBOX_DIR" probe isatty 0 </dev/null
	assert_success
	assert_output "no"
}

@test "a terminal on stdin stays a terminal inside" {
	tty_run "$GPURUN" "$BUSYBOX_DIR" probe isatty 0
	assert_success
	assert_line "yes"
}

@test "a terminal on stdout stays a terminal inside" {
	tty_run "$GPURUN" "$BUSYBOX_DIR" probe isatty 1
	assert_success
	assert_line "yes"
}

# ---- exit status -----------------------------------------------------------------

@test "the exit status is the command's (exit 3 gives 3)" {
	run --separate-stderr "$GPURUN" "$BUSYBOX_DIR" probe exit 3
	assert_equal "$status" 3
}

@test "a successful command gives 0" {
	run --separate-stderr "$GPURUN" "$BUSYBOX_DIR" /bin/true
	assert_equal "$status" 0
}

@test "a command killed by SIGKILL gives 137" {
	run --separate-stderr "$GPURUN" "$BUSYBOX_DIR" /bin/sh -c 'kill -KILL $$'
	assert_equal "$status" 137
}

@test "a command killed by SIGTERM gives 143" {
	run --separate-stderr "$GPURUN" "$BUSYBOX_DIR" probe kill-self TERM
	assert_equal "$status" 143
}

@test "a command that is not executable gives 126" {
	run --separate-stderr "$GPURUN" "$BUSYBOX_DIR" /etc/passwd
	assert_gpurun_error 126 "/etc/passwd"
}

@test "a directory as the command gives 126" {
	run --separate-stderr "$GPURUN" "$BUSYBOX_DIR" /etc
	assert_gpurun_error 126 "/etc"
}

@test "a command that does not exist gives 127 and says not found" {
	run -127 --separate-stderr "$GPURUN" "$BUSYBOX_DIR" /no/such/command
	assert_gpurun_error 127 "/no/such/command" "not found"
}

@test "a command not on PATH gives 127 and says not found" {
	run -127 --separate-stderr "$GPURUN" "$BUSYBOX_DIR" no-such-command
	assert_gpurun_error 127 "no-such-command" "not found"
}

@test "a command found on PATH runs without its directory" {
	run --separate-stderr "$GPURUN" "$BUSYBOX_DIR" probe exit 0
	assert_success
}
