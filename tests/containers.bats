#!/usr/bin/env bats
# Named containers (docs/containers.md): --name keeps a run's writable
# layer in the caller's cache area, `gpurun ps` lists them, `gpurun exec`
# runs a command inside a running one with its first command's isolation,
# `gpurun rm` removes one; a second launch of a running name joins it
# (pyxis's --container-name); the records of running ones cannot be forged
# into entering another process.  The kept layers are on the disk, where a
# user's cache is, not on run-bats.sh's tmpfs:
# run-bats: on-disk

load lib/common

load lib/containers

setup_file() {
	require_gpurun
	common_images
}

setup() {
	containers_setup
}

teardown() {
	containers_teardown
}

# ---- kept layers -------------------------------------------------------------------

@test "--name keeps what a run wrote: the next run of the name starts from it" {
	run --separate-stderr "$GPURUN" --name dev "$IMG" sh -c 'echo tmux > /root/installed'
	assert_success
	assert_equal "$stderr" ""
	run --separate-stderr "$GPURUN" --name dev "$IMG" cat /root/installed
	assert_success
	assert_output tmux
	# A run without the name starts from the image.
	run "$GPURUN" "$IMG" cat /root/installed
	assert_failure
}

@test "a file a named run removed stays removed in the next run of the name" {
	run "$GPURUN" --name dev "$IMG" rm /etc/passwd
	assert_success
	run "$GPURUN" --name dev "$IMG" test -e /etc/passwd
	assert_failure
	run "$GPURUN" "$IMG" test -e /etc/passwd
	assert_success
}

@test "the kept layer is in the caller's cache area, with the image's chain id" {
	run "$GPURUN" --name dev "$IMG" touch /kept-marker
	assert_success
	[[ -e "$GPURUN_CACHE/containers/dev/upper/kept-marker" ]] || fail "$(find "$GPURUN_CACHE/containers" -maxdepth 3)"
	assert_equal "$(stat -c '%u %a' "$GPURUN_CACHE/containers")" "$(id -u) 700"
	run jq -r '.chain_id' "$GPURUN_CACHE/containers/dev/kept.json"
	assert_output --regexp '^sha256:[0-9a-f]{64}$'
}

@test "a run of a name with another image is refused, naming the image it was made from" {
	run "$GPURUN" --name dev "$IMG" true
	assert_success
	run --separate-stderr "$GPURUN" --name dev "$(fixture glibc.tar)" true
	assert_gpurun_error 125 "container dev was made from the image $IMG (sha256:" "gpurun rm dev"
}

@test "--name with a directory image or --no-cache is refused in one line" {
	run --separate-stderr "$GPURUN" --name dev "$BUSYBOX_DIR" true
	assert_gpurun_error 125 "--name dev: only an image gpurun caches can be kept" "not a directory"
	run --separate-stderr "$GPURUN" --name dev --no-cache "$IMG" true
	assert_gpurun_error 125 "--name dev: only an image gpurun caches can be kept" "not with --no-cache"
	[[ ! -e "$GPURUN_CACHE/containers/dev" ]] || fail "a refused run made the container"
}

@test "a container name with a slash or a leading dot is refused" {
	local n
	for n in a/b .x ../y ""; do
		run --separate-stderr "$GPURUN" --name "$n" "$IMG" true
		assert_gpurun_error 125 "--name: container name '$n': use letters, digits and _ . -"
	done
}

@test "gpurun rm NAME removes a kept container: the next run starts from the image" {
	run "$GPURUN" --name dev "$IMG" touch /root/x
	assert_success
	run --separate-stderr "$GPURUN" rm dev
	assert_success
	assert_output dev
	[[ ! -e "$GPURUN_CACHE/containers/dev" ]] || fail "still there"
	run "$GPURUN" --name dev "$IMG" test -e /root/x
	assert_failure
	run --separate-stderr "$GPURUN" rm nosuch
	assert_gpurun_error 125 "no container nosuch (gpurun ps lists them)"
}

@test "gpurun rm of a running container is refused, and it keeps running" {
	launch dev "$BATS_TEST_TMPDIR/out" "$IMG" probe wait-signal
	wait_running dev
	run --separate-stderr "$GPURUN" rm dev
	assert_gpurun_error 125 "container dev is running: it is removed once it has ended"
	run "$GPURUN" exec dev true
	assert_success
	stop_all
	run "$GPURUN" rm dev
	assert_success
}

@test "cache prune never removes a kept container's image layers" {
	run "$GPURUN" --name dev "$IMG" true
	assert_success
	local layers
	layers=$(ls "$GPURUN_CACHE/layers")
	run "$GPURUN" cache prune --max-size 0
	assert_success
	assert_equal "$(ls "$GPURUN_CACHE/layers")" "$layers"
	run --separate-stderr "$GPURUN" --name dev "$IMG" true
	assert_success
	# Once the container is gone, so are they.
	run "$GPURUN" rm dev
	run "$GPURUN" cache prune --max-size 0
	assert_success
	assert_equal "$(ls "$GPURUN_CACHE/layers" | grep -vc '\.ok$')" 0
}

@test "cache rm of a kept container's image is refused, naming the container" {
	run "$GPURUN" --name dev "$IMG" true
	assert_success
	run --separate-stderr "$GPURUN" cache rm "$IMG"
	assert_gpurun_error 125 "is the image of the kept container dev; gpurun rm dev first"
}

# ---- ps ------------------------------------------------------------------------------

@test "gpurun ps lists running and kept containers: name, state, pid, GPUs, started, image" {
	run "$GPURUN" --name old "$IMG" true
	launch new "$BATS_TEST_TMPDIR/out" "$IMG" probe wait-signal
	wait_running new
	run --separate-stderr "$GPURUN" ps
	assert_success
	assert_line --index 0 --regexp '^NAME +STATE +PID +GPUS +STARTED +IMAGE$'
	assert_line --regexp "^new +running +[0-9]+ +- +[0-9-]+ [0-9:]+ +$IMG\$"
	assert_line --regexp "^old +kept +- +- +- +$IMG\$"
	run --separate-stderr "$GPURUN" ps --json
	assert_success
	run jq -r '.containers[] | [.name, .state, (.pid != null), .image] | @tsv' <<<"$output"
	assert_line "new	running	true	$IMG"
	assert_line "old	kept	false	$IMG"
}

@test "a record whose run was killed is recognised as stale and cleaned" {
	launch dev "$BATS_TEST_TMPDIR/out" "$IMG" probe wait-signal
	wait_running dev
	local rec=$GPURUN_CACHE/containers/dev/run.json pid
	pid=$(jq -r .pid "$rec")
	# SIGKILL to the monitor: its init dies with it, and the command with
	# the pid namespace; nobody removes the record.
	kill -KILL "${LAUNCHED[0]}"
	wait "${LAUNCHED[0]}" 2>/dev/null || true
	LAUNCHED=()
	while kill -0 "$pid" 2>/dev/null; do sleep 0.05; done
	[[ -e $rec ]] || fail "the killed run's record is gone already"
	run --separate-stderr "$GPURUN" ps
	assert_line --regexp "^dev +kept "
	[[ ! -e $rec ]] || fail "the stale record was left"
	run --separate-stderr "$GPURUN" --name dev "$IMG" true
	assert_success
}

@test "exec never trusts a pid from the record alone: a pid now another process's is refused" {
	launch dev "$BATS_TEST_TMPDIR/out" "$IMG" probe wait-signal
	wait_running dev
	local rec=$GPURUN_CACHE/containers/dev/run.json
	sleep 60 &
	local other=$!
	# The record names another process of this user, as a reused pid would.
	jq --argjson p "$other" '.pid = $p' "$rec" >"$rec.forged"
	mv "$rec.forged" "$rec"
	run --separate-stderr "$GPURUN" exec dev true
	kill "$other"
	assert_gpurun_error 125 "container dev is not running: pid $other is not its command any more"
}

# ---- exec ----------------------------------------------------------------------------

@test "exec runs a command inside the running container; its status is the command's" {
	launch dev "$BATS_TEST_TMPDIR/out" "$IMG" sh -c 'echo shared > /tmp/note; exec probe wait-signal'
	wait_for_line "$BATS_TEST_TMPDIR/out" ready
	run --separate-stderr "$GPURUN" exec dev cat /tmp/note
	assert_success
	assert_output shared
	# Its pid namespace: the first command is pid 2, after the init.
	run --separate-stderr "$GPURUN" exec dev cat /proc/2/cmdline
	assert_output --partial "probe"
	run --separate-stderr "$GPURUN" exec dev sh -c 'exit 7'
	assert_equal "$status" 7
	run -127 --separate-stderr "$GPURUN" exec dev no-such-command
	assert_gpurun_error 127 "no-such-command: command not found"
	stop_all
	run --separate-stderr "$GPURUN" exec dev true
	assert_gpurun_error 125 "container dev is not running"
}

@test "an exec'd command has the first command's CapEff, CapBnd, NoNewPrivs, Seccomp, ids, groups and /dev" {
	local report='grep -E "^(CapEff|CapBnd|CapPrm|CapAmb|NoNewPrivs|Seccomp|Seccomp_filters):" /proc/self/status; id; ls -l /dev; probe ns mnt; probe ns pid'
	local user
	for user in "" 1000:1000 alice; do
		launch dev "$BATS_TEST_TMPDIR/out" ${user:+-u "$user"} "$IMG" sh -c "($report) > /tmp/first; exec probe wait-signal"
		wait_for_line "$BATS_TEST_TMPDIR/out" ready && wait_running dev
		run --separate-stderr "$GPURUN" exec dev sh -c "($report) > /tmp/exec; cmp /tmp/first /tmp/exec && cat /tmp/exec"
		assert_success
		assert_line --regexp '^NoNewPrivs:.1$'
		assert_line --regexp '^Seccomp:.2$'
		stop_all
	done
}

@test "an exec'd command gets no fd above 2: not the cache's, not the kept directory's" {
	launch dev "$BATS_TEST_TMPDIR/out" "$IMG" probe wait-signal
	wait_running dev
	exec 7>"$BATS_TEST_TMPDIR/fd7"
	run --separate-stderr "$GPURUN" exec dev probe fds
	exec 7>&-
	assert_success
	assert_line --regexp '^0 -> '
	refute_line --regexp '^([3-9]|[1-9][0-9]+) -> '
}

@test "exec -u with a user other than 0 never runs as uid 0" {
	launch dev "$BATS_TEST_TMPDIR/out" "$IMG" probe wait-signal
	wait_running dev
	run --separate-stderr "$GPURUN" exec -u 1000 dev id -u
	assert_output 1000
	run --separate-stderr "$GPURUN" exec -u alice dev id -u
	assert_output 1000
	run --separate-stderr "$GPURUN" exec -u nobody dev probe caps
	assert_success
	refute_output --partial "uid=0"
	local u
	# 2^32 wraps to 0 in a careless parse; -1 is no id; "1000:" has no group.
	for u in 4294967296 4294967295 -1 1000: :1000 00000000004294967296; do
		run --separate-stderr "$GPURUN" exec -u "$u" dev id -u
		assert_equal "$status" 125
		refute_output 0
	done
	run --separate-stderr "$GPURUN" exec -u nosuchuser dev id -u
	assert_equal "$status" 125
	refute_output 0
}

@test "exec forwards the signals it gets to its command, and exits with its status" {
	launch dev "$BATS_TEST_TMPDIR/out" "$IMG" probe wait-signal
	wait_running dev
	local out=$BATS_TEST_TMPDIR/exec.out rc=0
	"$GPURUN" exec dev probe wait-signal >"$out" 2>&1 &
	local pid=$!
	wait_for_line "$out" ready
	kill -USR1 "$pid"
	wait "$pid" || rc=$?
	assert_equal "$rc" 0
	run cat "$out"
	assert_line "got SIGUSR1"
}

@test "exec -e and -w set a variable over the container's and the working directory" {
	launch dev "$BATS_TEST_TMPDIR/out" -e KEEP=first "$IMG" probe wait-signal
	wait_running dev
	run --separate-stderr "$GPURUN" exec -e ADDED=yes -w /etc dev sh -c 'echo "$KEEP $ADDED $(pwd)"'
	assert_success
	assert_output "first yes /etc"
}

@test "exec --dry-run prints the nsenter and setpriv lines, words quoted" {
	launch dev "$BATS_TEST_TMPDIR/out" -e "Q=it's" "$IMG" probe wait-signal
	wait_running dev
	local pid
	pid=$(jq -r .pid "$GPURUN_CACHE/containers/dev/run.json")
	run --separate-stderr "$GPURUN" exec --dry-run dev echo "a b" '$(touch /pwned)'
	assert_success
	assert_line "P=$pid"
	assert_output --partial 'nsenter --target "$P"'
	assert_output --partial "setpriv --nnp --inh-caps=-all --ambient-caps=-all --bounding-set=-all,+chown"
	assert_output --partial "'Q=it'\\''s'"
	assert_output --partial "echo 'a b' '\$(touch /pwned)'"
	if [[ $GPURUN_TEST_MODE == user ]]; then
		assert_output --partial "--user --mount --pid"
	else
		assert_output --partial "nsenter --target \"\$P\" --mount --pid"
	fi
}

# The shapes of a container and an exec: "LAUNCH OPTIONS|EXEC OPTIONS".
# With one id mapped (unprivileged, no subordinate ranges) a --user or
# --userns keep-id gives the first command a user namespace of its own, and
# an exec -u another a new one: only gpurun reaches those.
exec_shapes() {
	SHAPES=("|" "|-u 1000:1000" "-u 1000:1000|" "-u 1000:1000|-u 0" "--userns keep-id|")
}

# printable SHAPE: whether the host's tools can do that exec.
printable() {
	[[ $GPURUN_TEST_MODE == root || $1 == "|" ]]
}

@test "the printed exec, run as a script, gives the command what exec gives it" {
	local report='grep -E "^(CapInh|CapPrm|CapEff|CapBnd|CapAmb|NoNewPrivs):" /proc/self/status; id; pwd; env | sort; ulimit -n; probe ns mnt; probe ns pid; probe ns user; ls -l /dev'
	local shape n=0
	exec_shapes
	for shape in "${SHAPES[@]}"; do
		printable "$shape" || continue
		local -a first=() then=()
		read -ra first <<<"${shape%|*}"
		read -ra then <<<"${shape#*|}"
		launch dev "$BATS_TEST_TMPDIR/out" "${first[@]}" -e K=V --ulimit nofile=512:1024 "$IMG" probe wait-signal
		wait_running dev
		run --separate-stderr "$GPURUN" exec "${then[@]}" -w /etc dev sh -c "$report"
		assert_success
		local want=$output
		"$GPURUN" exec "${then[@]}" -w /etc --dry-run dev sh -c "$report" >"$BATS_TEST_TMPDIR/plan.sh"
		run --separate-stderr sh "$BATS_TEST_TMPDIR/plan.sh"
		assert_success
		assert_equal "$output" "$want"
		stop_all
		n=$((n + 1))
	done
	# As root every shape; as a user, the one the host's tools can do.
	assert [ "$n" -ge 1 ]
}

@test "a printed exec the host's tools cannot do exits 125 saying why, before it runs anything" {
	[[ $GPURUN_TEST_MODE == user ]] || skip "as root the host's tools do every exec"
	local shape n=0
	exec_shapes
	for shape in "${SHAPES[@]}"; do
		printable "$shape" && continue
		local -a first=() then=()
		read -ra first <<<"${shape%|*}"
		read -ra then <<<"${shape#*|}"
		launch dev "$BATS_TEST_TMPDIR/out" "${first[@]}" "$IMG" probe wait-signal
		wait_running dev
		"$GPURUN" exec "${then[@]}" --dry-run dev touch /tmp/ran >"$BATS_TEST_TMPDIR/plan.sh"
		run grep -c '^# cannot run as a script: ' "$BATS_TEST_TMPDIR/plan.sh"
		assert_output 1
		run --separate-stderr sh "$BATS_TEST_TMPDIR/plan.sh"
		assert_equal "$status" 125
		assert_equal "$stderr" "gpurun exec: cannot run as a script (see its first lines)"
		run --separate-stderr "$GPURUN" exec dev test -e /tmp/ran
		assert_failure
		stop_all
		n=$((n + 1))
	done
	assert_equal "$n" 4
}

@test "gpurun --dry-run exec is gpurun exec --dry-run; before a verb without one it is refused in one line" {
	launch dev "$BATS_TEST_TMPDIR/out" "$IMG" probe wait-signal
	wait_running dev
	run --separate-stderr "$GPURUN" exec --dry-run dev touch /tmp/ran
	assert_success
	local want=$output
	run --separate-stderr "$GPURUN" --dry-run exec dev touch /tmp/ran
	assert_success
	assert_equal "$output" "$want"
	assert_line --partial 'nsenter --target "$P"'
	run --separate-stderr "$GPURUN" exec dev test -e /tmp/ran
	assert_failure
	run --separate-stderr "$GPURUN" --dry-run ps
	assert_gpurun_error 125 '--dry-run: `gpurun ps` has none'
	assert_equal "${#stderr_lines[@]}" 1
}

@test "the printed exec's head says in one line what only gpurun does: the seccomp filters first" {
	launch dev "$BATS_TEST_TMPDIR/out" "$IMG" probe wait-signal
	wait_running dev
	run --separate-stderr "$GPURUN" exec --dry-run dev true
	assert_success
	assert_line --index 2 --regexp '^# Only gpurun does: seccomp filters, closing the caller'"'"'s fds, setsid\(2\), forwarding signals\.$'
	refute_output --partial "setpriv cannot load"
	run --separate-stderr "$GPURUN" exec -t --dry-run dev true
	assert_line --index 2 --partial ", a pty of the container's own devpts (-t)."
}

@test "two launches of one name at once share one container: the second joins the first" {
	local a=$BATS_TEST_TMPDIR/a b=$BATS_TEST_TMPDIR/b
	launch dev "$a" "$IMG" sh -c 'probe ns pid; probe ns mnt; exec probe wait-signal'
	launch dev "$b" "$IMG" sh -c 'probe ns pid; probe ns mnt; exec probe wait-signal'
	wait_for_line "$a" ready
	wait_for_line "$b" ready
	# One container: one pid and one mount namespace, so one overlay on
	# the upper directory.
	assert_equal "$(grep '^pid ' "$a")" "$(grep '^pid ' "$b")"
	assert_equal "$(grep '^mnt ' "$a")" "$(grep '^mnt ' "$b")"
	run "$GPURUN" ps
	assert_equal "$(grep -c '^dev ' <<<"$output")" 1
	stop_all
}

@test "a launch joins a container only once its command runs: not gpurun's own process before the exec" {
	command -v strace >/dev/null || fail "strace is missing (make deps-test installs it)"
	strace -f -o /dev/null true 2>/dev/null || skip "strace cannot trace here (ptrace restricted: Yama, seccomp)"
	local a=$BATS_TEST_TMPDIR/a
	# strace holds each rt_sigprocmask(2) of the first launch 0.3 s (five
	# of them), among them the one the command's process makes after the
	# go-ahead: still gpurun's and not dumpable (unprivileged, a joiner
	# could not open its namespaces), it stays that way that long before
	# its exec.  The container's record must wait for the exec.
	strace -f -o /dev/null -e trace=rt_sigprocmask -e inject=rt_sigprocmask:delay_enter=300000 \
		"$GPURUN" --name dev "$IMG" probe wait-signal >"$a" 2>&1 &
	local tracer=$!
	wait_running dev
	# SIGTERM to strace would not reach the run: gpurun, its child, first.
	LAUNCHED+=("$(pgrep -P "$tracer")" "$tracer")
	run --separate-stderr "$GPURUN" --name dev "$IMG" probe ns pid
	assert_success
	assert_equal "$stderr" ""
	stop_all
}

@test "a named container lives until the launches that joined it have ended; its status is its first command's" {
	local a=$BATS_TEST_TMPDIR/a
	# The first command ends as soon as the joined one is in; the joined
	# one then waits (a bounded loop) until pid 2, the first command, is gone.
	"$GPURUN" --name dev "$IMG" sh -c 'echo started; until [ -e /tmp/joined ]; do sleep 0.05; done; exit 3' >"$a" 2>&1 &
	local first=$!
	LAUNCHED+=("$first")
	wait_for_line "$a" started && wait_running dev
	run --separate-stderr "$GPURUN" --name dev "$IMG" sh -c \
		'touch /tmp/joined; i=0; while kill -0 2 2>/dev/null && [ $i -lt 600 ]; do i=$((i + 1)); sleep 0.05; done; echo "first gone: $i"'
	assert_success
	assert_output --regexp '^first gone: [0-9]+$'
	refute_output 'first gone: 600'
	local rc=0
	wait "$first" || rc=$?
	assert_equal "$rc" 3
	run "$GPURUN" ps
	assert_line --regexp '^dev +kept '
}

@test "a launch joining a running container says which of its options it does not apply" {
	launch dev "$BATS_TEST_TMPDIR/out" "$IMG" probe wait-signal
	wait_running dev
	run --separate-stderr "$GPURUN" --name dev -v /etc:/mnt/etc "$IMG" sh -c 'test -e /mnt/etc || echo joined'
	assert_success
	assert_output joined
	assert_stderr_partial "gpurun: warning: container dev is running: this launch joins it, and its own --gpus"
}

@test "--name NAME:exec joins a running container and is refused when none runs" {
	run --separate-stderr "$GPURUN" --name dev:exec "$IMG" true
	assert_gpurun_error 125 "--name dev:exec: container dev is not running (gpurun ps)"
	launch dev "$BATS_TEST_TMPDIR/out" "$IMG" sh -c 'echo in > /tmp/x; exec probe wait-signal'
	wait_for_line "$BATS_TEST_TMPDIR/out" ready
	run --separate-stderr "$GPURUN" --name dev:exec "$IMG" cat /tmp/x
	assert_success
	assert_output in
}

@test "--name NAME:no_exec is refused while the container runs: one overlay per layer" {
	launch dev "$BATS_TEST_TMPDIR/out" "$IMG" probe wait-signal
	wait_running dev
	run --separate-stderr "$GPURUN" --name dev:no_exec "$IMG" true
	assert_gpurun_error 125 "--name dev:no_exec: container dev is running, and a second run on its layer is refused"
	stop_all
	run "$GPURUN" --name dev:no_exec "$IMG" true
	assert_success
}

@test "--name NAME:create makes a container and is refused when the name is kept" {
	run "$GPURUN" --name dev:create "$IMG" touch /made
	assert_success
	run --separate-stderr "$GPURUN" --name dev:create "$IMG" true
	assert_gpurun_error 125 "--name dev:create: container dev exists already (gpurun rm dev first)"
	run --separate-stderr "$GPURUN" --name dev:other "$IMG" true
	assert_gpurun_error 125 "--name dev:other: the flag after ':' is auto, create, exec or no_exec"
}

@test "a named run with a GPU: exec sees the same GPU device nodes" {
	load lib/gpu
	local fake
	fake=$(fake_driver one) || true
	[[ -n $fake ]] || skip "no fake NVIDIA driver"
	launch dev "$BATS_TEST_TMPDIR/out" --driver-root "$fake" --gpus 0 "$IMG" \
		sh -c 'ls -l /dev /dev/nvidia* > /tmp/first 2>&1; exec probe wait-signal'
	wait_for_line "$BATS_TEST_TMPDIR/out" ready && wait_running dev
	run --separate-stderr "$GPURUN" ps
	assert_line --regexp '^dev +running +[0-9]+ +0 '
	run --separate-stderr "$GPURUN" exec dev sh -c 'ls -l /dev /dev/nvidia* > /tmp/exec 2>&1; cmp /tmp/first /tmp/exec && grep -c nvidia0 /tmp/exec'
	assert_success
	refute_output 0
}

@test "exec -t gives the command a pty of the container's own devpts" {
	launch dev "$BATS_TEST_TMPDIR/out" "$IMG" probe wait-signal
	wait_running dev
	tty_run "$GPURUN" exec -t dev sh -c 'tty; probe isatty 0'
	assert_success
	assert_line /dev/pts/0
	assert_line yes
}

@test "with subordinate ranges, a --userns keep-id container is in ps, exec, start and rm, and its name stays its own" {
	load lib/subuser
	subuser_need
	local d uid
	d=$(mktemp -d /tmp/gpurun-keepid.XXXXXX)
	SUBDIR=$d
	uid=$(id -u "$SUBUSER")
	mkdir "$d/sync"
	cp "$IMG" "$d/img.tar"
	chown -R "$SUBUSER:" "$d"
	# Its layer is in the keep-id map's area of the cache, not the default one.
	subuser_run "$d" "$GPURUN" --name kid --userns keep-id -v "$d/sync:/sync" "$d/img.tar" \
		sh -c 'echo up > /sync/up; i=0; while [ ! -e /sync/stop ] && [ $i -lt 600 ]; do i=$((i + 1)); sleep 0.05; done' &
	LAUNCHED+=("$!")
	local i
	for ((i = 0; i < 600; i++)); do
		subuser_run "$d" "$GPURUN" ps | grep -qE '^kid +running ' && break
		sleep 0.05
	done
	run --separate-stderr subuser_run "$d" "$GPURUN" ps
	assert_line --regexp '^kid +running +[0-9]+ '
	run --separate-stderr subuser_run "$d" "$GPURUN" exec kid id -u
	assert_success
	assert_output "$uid"
	run --separate-stderr subuser_run "$d" "$GPURUN" rm kid
	assert_gpurun_error 125 "container kid is running: it is removed once it has ended (gpurun ps)"
	touch "$d/sync/stop"
	wait "${LAUNCHED[-1]}"
	# The name is the keep-id container's: a launch with the default map is refused.
	run --separate-stderr subuser_run "$d" "$GPURUN" --name kid "$d/img.tar" true
	assert_gpurun_error 125 "--name kid: container kid was made with other ids (another --userns, or another subordinate range), and its layer is theirs; run it as it was made, or gpurun rm kid"
	run --separate-stderr subuser_run "$d" "$GPURUN" start kid true
	assert_gpurun_error 125 "--name kid: container kid was made with other ids (another --userns, or another subordinate range), and its layer is theirs; run it as it was made, or gpurun rm kid"
	run --separate-stderr subuser_run "$d" "$GPURUN" start --userns keep-id kid id -u
	assert_success
	assert_output "$uid"
	run --separate-stderr subuser_run "$d" "$GPURUN" rm kid
	assert_success
	run --separate-stderr subuser_run "$d" "$GPURUN" ps
	refute_line --regexp '^kid '
}
