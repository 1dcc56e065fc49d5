#!/usr/bin/env bats
# -t/--tty and -i/--interactive (ns/tty.c): the command gets a pty of the
# container's own devpts, relayed by gpurun to the caller's terminal, with
# the window size, ^C, ^Z and job control, and ^D as docker has them; the
# caller's terminal is put back as it was, and never handed to the command.
#
# The caller's terminal is a pty driven by tty_drive (tests/lib/tty_drive.py):
# it types, resizes and signals only once the output shows the state it
# waits for, and reports the exit status,
# whether the terminal's modes are what they were before, and what input
# is left unread in it.

load lib/common

setup_file() {
	require_gpurun
	common_images
	DRIVE=$TESTS_DIR/lib/tty_drive.py
	export DRIVE
}

# tty_drive STEP... -- CMD [ARG...]: see tests/lib/tty_drive.py.
tty_drive() {
	run python3 "$DRIVE" "$@"
	[[ $status -ne 99 ]] || fail "$output"
	assert_success
}

# ---- the pty is the container's own ----------------------------------------------

@test "with -t, tty inside prints /dev/pts/0, even when stdout is not a terminal" {
	run bash -c "'$GPURUN' -t '$BUSYBOX_DIR' tty </dev/null | tr -d '\r'"
	assert_success
	assert_output "/dev/pts/0"
}

@test "without -t no terminal is given: tty says not a tty when stdin is not one" {
	run --separate-stderr "$GPURUN" "$BUSYBOX_DIR" tty </dev/null
	assert_failure 1
	assert_output "not a tty"
}

@test "with -it under a terminal, fds 0-2 inside are /dev/pts/0 of the container's devpts" {
	# tty checks that the name it prints is the file on fd 0, in the
	# container's /dev/pts; the caller's own pty is not reachable there.
	tty_drive -- "$GPURUN" -it "$BUSYBOX_DIR" sh -c 'tty; probe fds; ls -1 /dev/pts'
	assert_output "/dev/pts/0
0 -> /dev/pts/0
1 -> /dev/pts/0
2 -> /dev/pts/0
0
ptmx
exit 0
modes: same
left: b''"
}

@test "with -t, a TIOCSTI from inside pushes nothing into the caller's terminal" {
	tty_drive -- "$GPURUN" -t "$BUSYBOX_DIR" probe escape tiocsti
	assert_output "SAFE tiocsti: EPERM
exit 0
modes: same
left: b''"
}

@test "--dry-run with -it says the command's terminal is a pty of its devpts, relayed by gpurun" {
	run --separate-stderr "$GPURUN" --dry-run -it "$BUSYBOX_DIR"
	assert_success
	assert_line "# -t: stdin, stdout and stderr are a new pty of that devpts (/dev/pts/0, the controlling"
	assert_line "#  terminal); gpurun relays it to and from this terminal (-i), which is raw meanwhile"
}

# ---- window size -----------------------------------------------------------------

@test "the window size inside is the caller's, and follows a resize" {
	tty_drive size:33:101 expect:'ready\n' resize:40:120 expect:winch -- \
		"$GPURUN" -t "$BUSYBOX_DIR" sh -c 'stty size; trap "echo winch; stty size; exit 0" WINCH
			echo ready; while :; do sleep 1; done'
	assert_output "33 101
ready
winch
40 120
exit 0
modes: same
left: b''"
}

# ---- keystrokes, signals, job control ------------------------------------------------

@test "-it: ^C reaches the command through the pty, and sleep 100 ends with 130" {
	tty_drive expect:'ready\n' 'send:\x03' -- "$GPURUN" -it "$BUSYBOX_DIR" sh -c 'echo ready; exec sleep 100'
	assert_output "ready
^C
exit 130
modes: same
left: b''"
}

@test "-it: ^C reaches the whole foreground job inside, not only the command gpurun started" {
	# The pty's line discipline signals its foreground process group: the
	# inner sleep ends with 130 while the outer sh, which traps SIGINT,
	# goes on.  A signal relayed by gpurun would reach the outer sh only.
	tty_drive expect:'ready\n' 'send:\x03' -- "$GPURUN" -it "$BUSYBOX_DIR" \
		sh -c 'trap "echo trapped" INT; sh -c "echo ready; exec sleep 100"; echo "sleep: $?"'
	assert_output "ready
^Ctrapped
sleep: 130
exit 0
modes: same
left: b''"
}

@test "-ti: ^Z stops a job of an interactive sh inside, and fg resumes it in the foreground" {
	# The job says "resumed" on SIGCONT; ^C then ends it, which only
	# happens when fg made it the pty's foreground job again.
	tty_drive expect:'prompt> ' \
		"send:sh -c 'trap \"echo resumed\" CONT; echo started; while :; do sleep 1; done'\r" \
		expect:'started\n' 'send:\x1a' expect:'Stopped' expect:'prompt> ' \
		'send:fg\r' expect:'resumed\n' 'send:\x03' expect:'prompt> ' \
		'send:echo status:$?\r' expect:'status:130\n' expect:'prompt> ' 'send:exit\r' -- \
		"$GPURUN" -ti -e 'PS1=prompt> ' "$BUSYBOX_DIR" sh -i
	assert_line --regexp '^\^Z\[1\]\+ +Stopped +sh -c '
	assert_line "resumed"
	assert_line "status:130"
	assert_line "exit 0"
	assert_line "modes: same"
}

@test "-it: ^D ends cat, whose input was typed through the pty" {
	tty_drive expect:'ready\n' 'send:hello\r' expect:'hello\nhello\n' 'send:\x04' -- \
		"$GPURUN" -it "$BUSYBOX_DIR" sh -c 'echo ready; exec cat'
	assert_output "ready
hello
hello
exit 0
modes: same
left: b''"
}

@test "-it with stdin a pipe is refused at once, as docker refuses it, 125" {
	# An interactive shell fed by a pipe would wait for keys for ever.
	run --separate-stderr bash -c "echo 'echo hi' | timeout -k 5 20 '$GPURUN' -it '$BUSYBOX_DIR' sh"
	assert_gpurun_error 125 "-it: the input device is not a TTY (-i alone passes stdin and its end to the command; -t alone gives it a terminal without reading stdin)"
	assert_output ""
}

@test "-it with stdin /dev/null is refused too, 125" {
	run --separate-stderr timeout -k 5 20 "$GPURUN" -ti "$BUSYBOX_DIR" sh </dev/null
	assert_gpurun_error 125 "-it: the input device is not a TTY"
}

@test "-t alone with stdin a pipe gives the command a terminal and leaves the pipe to the caller" {
	run bash -c "printf 'left\n' | { timeout 30 '$GPURUN' -t '$BUSYBOX_DIR' tty | tr -d '\r'; cat; }"
	assert_success
	assert_output "/dev/pts/0
left"
}

@test "-t without -i reads none of the caller's input: it is left to the caller" {
	tty_drive expect:'ready\n' 'send:typed ahead\r' resize:30:90 expect:winch -- \
		"$GPURUN" -t "$BUSYBOX_DIR" sh -c 'trap "echo winch; exit 0" WINCH; echo ready; while :; do sleep 1; done'
	assert_line "exit 0"
	assert_line "left: b'typed ahead\\n'"
}

# ---- the caller's terminal is put back ----------------------------------------------

@test "-it: the caller's terminal modes are as before after the command exits" {
	tty_drive expect:'ready\n' 'send:abc\r' expect:'abc\n' -- "$GPURUN" -it "$BUSYBOX_DIR" sh -c 'echo ready; read x; exit 3'
	assert_output "ready
abc
exit 3
modes: same
left: b''"
}

@test "with -t and --user, the pty belongs to the user" {
	run bash -c "'$GPURUN' -t -u 1000:1000 '$BUSYBOX_DIR' probe stat /dev/pts/0 </dev/null | tr -d '\r'"
	assert_success
	assert_output "type=chr mode=0620 rdev=136:0 uid=1000 gid=1000"
}

@test "-it: the caller's terminal modes are put back when the container's init is killed" {
	tty_drive expect:'ready\n' killinit -- "$GPURUN" -it "$BUSYBOX_DIR" sh -c 'echo ready; exec sleep 100'
	assert_output "ready
gpurun: the container's init (pid 1) was killed by signal 9 (Killed)
exit 125
modes: same
left: b''"
}

@test "-it: the caller's terminal modes are put back when gpurun is sent SIGTERM" {
	tty_drive expect:'ready\n' kill:TERM -- "$GPURUN" -it "$BUSYBOX_DIR" sh -c 'echo ready; exec sleep 100'
	assert_output "ready
exit 143
modes: same
left: b''"
}
