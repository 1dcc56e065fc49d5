#!/usr/bin/env bats
# --step (ns/step.c): the launch stops after each section of the plan,
# shows what the section mounted and made inside the container, the pid
# and an nsenter command to look around there, and waits for Enter on the
# caller's terminal; q or ^C ends it.  The person at the terminal is
# tests/lib/step_drive.py: it answers each stop on a pty, runs the printed
# nsenter command from the host ("look:") and reports what the terminal
# showed.  Run as root, a root caller's launches; unprivileged, a user's.

load lib/common
load lib/gpu

setup_file() {
	require_gpurun
	common_images
	GLIBC_TAR=$(fixture glibc.tar)
	# The GPU's tests skip without the fake drivers; the others run.
	FAKE1=$(fake_driver one) || FAKE1=
	FAKE4=$(fake_driver four) || FAKE4=
	DRIVE=$TESTS_DIR/lib/step_drive.py
	export GLIBC_TAR FAKE1 FAKE4 DRIVE
}

need_fake_driver() {
	[[ -n $FAKE1 && -n $FAKE4 ]] || skip "no fake NVIDIA driver in $TESTS_BUILD (build it as root: tests/run-bats.sh)"
}

setup() {
	host_snapshot "$BATS_TEST_TMPDIR/host.before"
}

teardown() {
	assert_host_unchanged "$BATS_TEST_TMPDIR/host.before"
}

PROMPT='expect:q ends the launch: $'
# What the container's mount table says is mounted on the new root's /proc.
PROC_MOUNT='awk '\''$5 == "/tmp/root/proc" { print "mounted:", $5, $(NF - 2) }'\'' /proc/self/mountinfo'

# step_drive STEP... -- CMD [ARG...]: see tests/lib/step_drive.py.
step_drive() {
	run python3 "$DRIVE" "$@"
	[[ $status -ne 99 ]] || fail "$output"
	assert_success
	DRIVEN=$output
}

# enters N: N more stops answered with Enter, onto the array steps.
enters() {
	local i
	for ((i = 0; i < $1; i++)); do
		steps+=("$PROMPT" 'send:\r')
	done
}

# The text of the stop whose heading starts with $1, up to its prompt, in
# the output of the last step_drive.
stop_text() {
	awk -v h="--step: $1" 'index($0, h) == 1 { on = 1 } on { print } on && /q ends the launch/ { exit }' <<<"$DRIVEN"
}

# ---- the stops ----------------------------------------------------------------

@test "--step stops after each section, in the plan's order, and the command runs after the last" {
	local steps=()
	enters 6
	step_drive "${steps[@]}" -- "$GPURUN" --step "$BUSYBOX_TAR" sh -c 'echo hello from the command; exit 3'
	run grep -o '^--step: [^:]*' <<<"$output"
	assert_output -- "--step: 1. New namespaces
--step: Enter goes on, q ends the launch
--step: 2. The root file system
--step: Enter goes on, q ends the launch
--step: 3. The standard mounts
--step: Enter goes on, q ends the launch
--step: Hardening the walkthrough does not have
--step: Enter goes on, q ends the launch
--step: 5. pivot_root into the new root
--step: Enter goes on, q ends the launch
--step: 6. Drop to the user and exec
--step: Enter goes on, q ends the launch"
}

@test "--step ends with the command's output and its exit status" {
	local steps=()
	enters 6
	step_drive "${steps[@]}" -- "$GPURUN" --step "$BUSYBOX_TAR" sh -c 'echo hello from the command; exit 3'
	assert_equal "${lines[-2]}" "hello from the command"
	assert_equal "${lines[-1]}" "exit 3"
}

@test "--step waits at each stop: the command's output does not come before the last Enter" {
	# At every stop the nsenter command runs first: the command would have
	# printed meanwhile if gpurun had not waited.
	local steps=() i
	for i in 1 2 3 4 5 6; do
		steps+=("$PROMPT" "look:true" "snap:$BATS_TEST_TMPDIR/before-$i" 'send:\r')
	done
	step_drive "${steps[@]}" -- "$GPURUN" --step "$BUSYBOX_TAR" sh -c 'echo HELLO | tr A-Z a-z'
	assert_line hello
	for i in 1 2 3 4 5 6; do
		run grep -c hello "$BATS_TEST_TMPDIR/before-$i"
		assert_output 0
	done
}

@test "--step names an nsenter command that finds, from the host, the container as it is at the stop" {
	# The stop after the root file system: no /proc in the new root yet;
	# after the standard mounts: the container's own procfs there.
	local steps=("$PROMPT" 'send:\r' "$PROMPT" "look:$PROC_MOUNT" 'send:\r' "$PROMPT" "look:$PROC_MOUNT" 'send:\r')
	enters 3
	step_drive "${steps[@]}" -- "$GPURUN" --step "$BUSYBOX_TAR" true
	run grep '^look: ' <<<"$output"
	assert_output "look: exit 0
look: mounted: /tmp/root/proc proc
look: exit 0"
}

@test "--step shows each section's mounts with what they hold, and the nodes it made" {
	local steps=()
	enters 6
	step_drive "${steps[@]}" -- "$GPURUN" --step "$BUSYBOX_TAR" true
	run stop_text "3. The standard mounts"
	assert_line "    /tmp/root/proc  proc (nosuid,nodev,noexec)"
	assert_line "    /tmp/root/dev/null  bind of /dev/null (nosuid,noexec)"
	assert_line "    /tmp/root/dev/ptmx -> pts/ptmx"
	refute_line --partial "/tmp/root/proc/acpi"
	refute_line --partial "/tmp/root/proc/sys"
	run stop_text "Hardening"
	assert_line "    /tmp/root/proc/acpi  tmpfs (ro,nosuid,nodev,noexec)"
	# docker's read-only /proc paths are hardening too.
	assert_line --regexp "^    /tmp/root/proc/sys  .*\(ro,nosuid,nodev,noexec"
	refute_line --partial "/tmp/root/dev/null  bind"
}

@test "--step shows a volume as a bind of its host directory, and the working directory it made" {
	mkdir "$BATS_TEST_TMPDIR/vol"
	local steps=()
	enters 7
	step_drive "${steps[@]}" -- "$GPURUN" --step -v "$BATS_TEST_TMPDIR/vol:/data" -w /work/here "$BUSYBOX_TAR" true
	run stop_text "Your mounts"
	assert_line --index 0 "--step: Your mounts and working directory (-v, --tmpfs, --mount, -w)"
	assert_line "  mounted (1):"
	# its flags are those of the host mount it comes from
	assert_line --partial "    /tmp/root/data  bind of $BATS_TEST_TMPDIR/vol"
	assert_line "    /tmp/root/work/here/"
}

@test "--step names the container's pid and every namespace in its nsenter command" {
	local steps=()
	enters 6
	step_drive "${steps[@]}" -- "$GPURUN" --step --hostname box "$BUSYBOX_TAR" true
	local pid user=
	[[ $GPURUN_TEST_MODE == user ]] && user=" --user --preserve-credentials"
	pid=$(grep -om1 'pid [0-9]* on the host' <<<"$output" | cut -d' ' -f2)
	assert_line "    nsenter --target $pid$user --mount --pid --ipc --uts"
	run grep -c "^    nsenter --target $pid$user --mount --pid --ipc --uts\$" <<<"$output"
	assert_output 6
}

# ---- the GPU: the blog's diff before and after ------------------------------------

@test "--step shows the GPU's device nodes, libraries, links and firmware after the GPU section only" {
	need_fake_driver
	local steps=()
	enters 7
	step_drive "${steps[@]}" -- "$GPURUN" --driver-root "$FAKE1" --gpus 0 --step "$GLIBC_TAR" true
	run stop_text "4. The GPU"
	local gpu=$output f
	for f in nvidiactl nvidia0 nvidia-uvm; do
		assert_line --regexp "^    /tmp/root/dev/$f  bind of $FAKE1/dev/$f \\("
	done
	while read -r f; do
		assert_line --regexp "^    /tmp/root$f  bind of $FAKE1$f \\("
	done < <(expected_injected utility,compute)
	assert_line "    /tmp/root$LIBDIR_DEBIAN/libcuda.so.1 -> libcuda.so.$DRIVER_VERSION"
	assert_line "    /tmp/root/proc/driver/nvidia/version"
	assert_line --regexp "^    /tmp/root/usr/lib/firmware/nvidia/$DRIVER_VERSION/gsp_ga10x.bin  bind of "
	# Before it, none of it.
	run stop_text "Hardening"
	refute_line --partial nvidia
	# The image's ldconfig, after the pivot, writes its cache.
	run stop_text "5. pivot_root"
	assert_line "    /etc/ld.so.cache  written anew"
	[[ $gpu == *"made ("* ]]
}

@test "the GPU's stop in docs/lesson.md is what --step prints for the lesson's launch" {
	need_fake_driver
	local steps=()
	enters 7
	step_drive "${steps[@]}" -- "$GPURUN" --driver-root "$FAKE4" --gpus 0 --caps utility -u 1000:1000 --step \
		"$GLIBC_TAR" true
	local pid
	pid=$(grep -om1 'pid [0-9]* on the host' <<<"$DRIVEN" | cut -d' ' -f2)
	run stop_text "4. The GPU"
	local got=${output//" --user --preserve-credentials"/}
	run awk '/^<!-- step: the GPU.s stop/ { on = 1; next } on && /^```text$/ { next } on && /^```$/ { exit } on' \
		"$TESTS_DIR/../docs/lesson.md"
	local want=${output//'$GPURUN_DRIVER_ROOT'/$FAKE4}
	want=${want//4242/$pid}
	assert_equal "$(sed 's/ *$//' <<<"$got")" "$want"
}

@test "--step: the nsenter command of the GPU's stop finds /dev/nvidia0 in the new root, and the stop before does not" {
	need_fake_driver
	local steps=()
	enters 3
	steps+=("$PROMPT" 'look:ls /tmp/root/dev' 'send:\r' "$PROMPT" 'look:ls /tmp/root/dev' 'send:\r')
	enters 2
	step_drive "${steps[@]}" -- "$GPURUN" --driver-root "$FAKE1" --gpus 0 --step "$GLIBC_TAR" true
	run grep -c '^look: nvidia0$' <<<"$DRIVEN"
	assert_output 1
	run awk '/^look: exit/ { n++ } /^look: nvidia0$/ { print n }' <<<"$DRIVEN"
	assert_output 1
}

@test "--step --verbose shows each section's plan lines before its stop" {
	local steps=()
	enters 6
	step_drive "${steps[@]}" -- "$GPURUN" --step --verbose "$BUSYBOX_TAR" true
	run awk '/^\+ # 3\. The standard mounts/ { print "plan " NR } /^--step: 3\. The standard mounts/ { print "stop " NR }
		/^--step: 2\. / { print "stop2 " NR }' <<<"$output"
	assert_line --index 0 --regexp '^stop2 '
	assert_line --index 1 --regexp '^plan '
	assert_line --index 2 --regexp '^stop '
}

# ---- ending it ----------------------------------------------------------------------

@test "q at a stop ends the launch: 130, one line, nothing left on the host" {
	local steps=()
	enters 2
	step_drive "${steps[@]}" "$PROMPT" 'send:q\r' -- "$GPURUN" --step "$BUSYBOX_TAR" echo hello from the command
	assert_equal "${lines[-2]}" "gpurun: --step: the launch is ended (q) at the stop after 3. The standard mounts: /proc, /dev, /sys, /tmp, /run: its processes and mounts are gone"
	assert_equal "${lines[-1]}" "exit 130"
	refute_output --partial "hello from the command"
}

@test "^C at a stop ends the launch as q does, 130" {
	step_drive "$PROMPT" 'send:\x03' -- "$GPURUN" --step "$BUSYBOX_TAR" echo hello from the command
	assert_equal "${lines[-2]}" "gpurun: --step: the launch is ended (^C) at the stop after 1. New namespaces: the rest of the launch runs in them: its processes and mounts are gone"
	assert_equal "${lines[-1]}" "exit 130"
}

@test "--step without a terminal is refused at once with one line, 125, before the image is opened" {
	run --separate-stderr setsid -w "$GPURUN" --step "$BATS_TEST_TMPDIR/no-such-image" true </dev/null
	assert_gpurun_error 125 "--step: no terminal to wait on (/dev/tty: No such device or address)"
}

@test "--step with --dry-run is refused, 125" {
	run --separate-stderr "$GPURUN" --step --dry-run "$BUSYBOX_TAR" true
	assert_gpurun_error 125 "--step cannot be combined with --dry-run: the plan is printed, nothing runs to stop in"
}
