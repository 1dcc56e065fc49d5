#!/usr/bin/env bats
# Faults: gpurun killed with SIGKILL at random points of a launch (the
# monitor P0, the container's pid 1, or the whole process group), while it
# unpacks, mounts, injects the GPU and runs; 50 launches at once; a full
# file system, an exhausted pid limit and an exhausted fd limit.  Nothing
# may be left behind: no mount, no temp directory, no process, and no cache
# entry a later launch would trust (what a killed import left in the cache
# is swept by the next launch that finds the cache idle).  Every failure of
# gpurun's own is one line "gpurun: ...: <strerror>" and exit 125.
#
# Counts: KILLS kills per phase (12 by default: each of the three targets 4
# times, at a random delay; FAULT_KILLS=24 for more), 50 concurrent
# launches.  In the cache phase every kill is followed by a whole import,
# which is file creation in the kernel: the suite's tests get 300 s each, so
# that suites running beside it on two CPUs cannot time it out.  That
# phase's image (IMPORT, 600 files of 6000 bytes in 20 directories) is
# sized to the kill window of 0.4 s: a kill in it still finds the import
# under way (12 kills of 12 left an unpack in tmp/, as with the 2,000 files
# it had), and each import costs half the CPU it did; with 2,000 files this
# test was half of the suite's CPU time.

load lib/common
load lib/gpu

KILLS=${FAULT_KILLS:-12}
BATS_TEST_TIMEOUT=300

setup_file() {
	require_gpurun
	common_images
	GLIBC_TAR=$(fixture glibc.tar)
	FAKE1=$(fake_driver one) || FAKE1=
	BIG=$BATS_FILE_TMPDIR/big.tar.gz
	big_tgz "$BIG" 20 100 6000
	IMPORT=$BATS_FILE_TMPDIR/import.tar.gz
	big_tgz "$IMPORT" 20 30 6000
	export GLIBC_TAR FAKE1 BIG IMPORT
}

setup() {
	export GPURUN_CACHE=$BATS_TEST_TMPDIR/cache
	host_snapshot "$BATS_TEST_TMPDIR/host.before"
}

teardown() {
	if [[ -n "${BG_PID:-}" ]]; then
		kill -KILL -- "-$BG_PID" 2>/dev/null || true
		wait "$BG_PID" 2>/dev/null || true
	fi
	[[ -z "${PIDS_CG:-}" ]] || remove_pids_cgroup || true
}

# remove_pids_cgroup: rmdir $PIDS_CG, once its last tasks are gone.
remove_pids_cgroup() {
	unshare -m sh -c 'mount -t cgroup -o pids none "$1" || exit 1
		for i in $(seq 100); do rmdir "$1/$2" 2>/dev/null && exit 0; sleep 0.1; done
		rmdir "$1/$2"' sh "$BATS_TEST_TMPDIR/cg" "$PIDS_CG" && PIDS_CG=
}

# kill_launch TARGET MAXMS ARGS...: start `gpurun -e FAULT_TOKEN=... ARGS` in
# a process group of its own, wait 0..MAXMS ms, then SIGKILL TARGET: monitor
# (gpurun itself), pid1 (its child, the container's init; the monitor when
# there is none yet) or group (the whole process group).  Then wait for the
# launch and for every process that carries its token to be gone.
kill_launch() {
	local target=$1 maxms=$2 tok="fault-$RANDOM$RANDOM" p1
	shift 2
	setsid "$GPURUN" -e "FAULT_TOKEN=$tok" "$@" >/dev/null 2>&1 </dev/null &
	BG_PID=$!
	sleep "$(printf '0.%03d' $((RANDOM % maxms)))"
	case $target in
	monitor) kill -KILL "$BG_PID" 2>/dev/null || true ;;
	pid1)
		p1=$(pgrep -P "$BG_PID" | head -n1) || true
		kill -KILL "${p1:-$BG_PID}" 2>/dev/null || true
		;;
	group) kill -KILL -- "-$BG_PID" 2>/dev/null || true ;;
	esac
	wait "$BG_PID" || true
	BG_PID=
	wait_procs_gone "$tok"
}

TARGETS=(monitor pid1 group)

# kill_phase MAXMS ARGS...: KILLS kills, cycling through the targets.
kill_phase() {
	local round maxms=$1
	shift
	for ((round = 0; round < KILLS; round++)); do
		kill_launch "${TARGETS[round % 3]}" "$maxms" "$@"
	done
}

# assert_cache_clean: nothing of an import in progress is left, and every
# layer has its .ok.
assert_cache_clean() {
	run find "$GPURUN_CACHE/tmp" -mindepth 1
	assert_output ""
	assert_cache_consistent
}

@test "SIGKILL at random points of an import into the cache leaves nothing behind, and the next launch finds the cache sound" {
	# Not "i": bats' own run assigns it.
	local round
	for ((round = 0; round < KILLS; round++)); do
		kill_launch "${TARGETS[round % 3]}" 400 "$IMPORT" true
		# The next launch sweeps what the killed one left, and imports.
		run --separate-stderr "$GPURUN" "$IMPORT" sh -c 'ls /big/d19 | wc -l'
		assert_success
		assert_output 30
		assert_cache_clean
		run --separate-stderr "$GPURUN" cache ls
		assert_success
		assert_equal "${#lines[@]}" 2
		# Cold again for the next kill.
		run "$GPURUN" cache prune --max-size 0
		assert_success
	done
	assert_host_unchanged "$BATS_TEST_TMPDIR/host.before"
}

@test "a killed import's leftovers (an unpack in tmp/, a layer without .ok) are swept by the next launch" {
	run "$GPURUN" "$BUSYBOX_TGZ" true
	assert_success
	local layer
	layer=$(find "$GPURUN_CACHE/layers" -mindepth 1 -maxdepth 1 -type d)
	mkdir -p "$GPURUN_CACHE/tmp/layer.AbCdEf/etc" "$layer-not-committed/etc"
	touch "$GPURUN_CACHE/tmp/.w.1.2"
	rm "$layer.ok"
	run "$GPURUN" "$BUSYBOX_TGZ" cat /etc/hostname
	assert_success
	assert_cache_clean
	assert_not_exist "$layer-not-committed"
	assert_file_exists "$layer.ok"
}

@test "a running launch keeps its unpack: leftovers are swept only when the cache is idle" {
	run "$GPURUN" "$BUSYBOX_TGZ" true
	assert_success
	local out=$BATS_TEST_TMPDIR/out
	"$GPURUN" "$BUSYBOX_TGZ" probe wait-signal 60 >"$out" 2>&1 </dev/null &
	BG_PID=$!
	wait_for_line "$out" ready
	mkdir -p "$GPURUN_CACHE/tmp/layer.InFlight"
	run "$GPURUN" "$BUSYBOX_TGZ" true
	assert_success
	assert_exist "$GPURUN_CACHE/tmp/layer.InFlight"
	kill -TERM "$BG_PID"
	wait "$BG_PID" || true
	BG_PID=
	run "$GPURUN" "$BUSYBOX_TGZ" true
	assert_success
	assert_not_exist "$GPURUN_CACHE/tmp/layer.InFlight"
}

@test "SIGKILL at random points of a --no-cache unpack leaves nothing behind" {
	kill_phase 300 --no-cache "$BIG" true
	assert_not_exist "$GPURUN_CACHE"
	assert_host_unchanged "$BATS_TEST_TMPDIR/host.before"
}

@test "SIGKILL at random points of the mounts of a directory image with volumes leaves nothing behind" {
	mkdir -p "$BATS_TEST_TMPDIR/vol"
	kill_phase 40 -v "$BATS_TEST_TMPDIR/vol:/vol" -v "$BATS_TEST_TMPDIR/vol:/a/b/c:ro" --hostname h \
		"$BUSYBOX_DIR" true
	run ls -A "$BATS_TEST_TMPDIR/vol"
	assert_output ""
	assert_host_unchanged "$BATS_TEST_TMPDIR/host.before"
}

@test "SIGKILL at random points of GPU injection leaves nothing behind" {
	[[ -n $FAKE1 ]] || skip "no fake NVIDIA driver in $TESTS_BUILD (build it as root: tests/run-bats.sh)"
	run "$GPURUN" --driver-root "$FAKE1" --gpus 0 "$GLIBC_TAR" true
	assert_success
	kill_phase 60 --driver-root "$FAKE1" --gpus 0 "$GLIBC_TAR" true
	assert_cache_clean
	assert_host_unchanged "$BATS_TEST_TMPDIR/host.before"
}

@test "SIGKILL while the command runs (with orphans of its own) leaves nothing behind" {
	kill_phase 200 "$BUSYBOX_DIR" sh -c '(sleep 60 &); sleep 60 & probe wait-signal 60'
	assert_host_unchanged "$BATS_TEST_TMPDIR/host.before"
}

@test "50 launches at once of a new image all succeed, import it once, and leave nothing behind" {
	local i rc failed="" pids=()
	for i in $(seq 0 49); do
		"$GPURUN" --gpus void "$(oci_fixture oci.tar.gz)" 'echo ran' >"$BATS_TEST_TMPDIR/out.$i" \
			2>"$BATS_TEST_TMPDIR/err.$i" </dev/null &
		pids+=($!)
	done
	for i in "${!pids[@]}"; do
		rc=0
		wait "${pids[i]}" || rc=$?
		[[ $rc -eq 0 && $(cat "$BATS_TEST_TMPDIR/out.$i") == ran && ! -s "$BATS_TEST_TMPDIR/err.$i" ]] ||
			failed+="launch $i: status $rc: $(cat "$BATS_TEST_TMPDIR/out.$i" "$BATS_TEST_TMPDIR/err.$i")"$'\n'
	done
	[[ -z $failed ]] || fail "$failed"
	run "$GPURUN" --gpus void "$(oci_fixture oci.tar.gz)" 'echo warm'
	assert_success
	assert_output warm
	assert_equal "$(find "$GPURUN_CACHE/layers" -mindepth 1 -maxdepth 1 -type d | wc -l)" 3
	assert_equal "$(find "$GPURUN_CACHE/images" -name '*.json' | wc -l)" 1
	assert_cache_clean
	assert_host_unchanged "$BATS_TEST_TMPDIR/host.before"
}

# ---- exhausted resources ------------------------------------------------------

# on_small_tmpfs DIR SIZE ARGS...: ARGS in a private mount namespace where
# DIR is a tmpfs of SIZE; unprivileged, in a user namespace that maps the
# caller to itself (so gpurun still runs unprivileged, in user mode).  The
# host's mount table never sees the tmpfs.
on_small_tmpfs() {
	python3 - "$@" <<-'PY'
		import ctypes, os, sys
		libc = ctypes.CDLL(None, use_errno=True)
		CLONE_NEWUSER, CLONE_NEWNS, MS_REC, MS_PRIVATE = 0x10000000, 0x20000, 0x4000, 0x40000
		def check(r, what):
		    if r != 0:
		        sys.exit("on_small_tmpfs: %s: %s" % (what, os.strerror(ctypes.get_errno())))
		uid, gid = os.getuid(), os.getgid()
		check(libc.unshare(CLONE_NEWNS | (CLONE_NEWUSER if uid else 0)), "unshare")
		if uid:
		    for f, text in (("uid_map", "%d %d 1" % (uid, uid)), ("setgroups", "deny"),
		                    ("gid_map", "%d %d 1" % (gid, gid))):
		        with open("/proc/self/" + f, "w") as fh:
		            fh.write(text)
		check(libc.mount(b"none", b"/", None, MS_REC | MS_PRIVATE, None), "make / private")
		check(libc.mount(b"tmpfs", sys.argv[1].encode(), b"tmpfs", 0, b"size=" + sys.argv[2].encode()), "mount")
		os.execvp(sys.argv[3], sys.argv[3:])
	PY
}

@test "a full tmpfs under the cache: one line ending in 'No space left on device', 125, nothing half-made" {
	local small=$BATS_TEST_TMPDIR/small res=$BATS_TEST_TMPDIR/res k flat
	mkdir "$small" "$res"
	# Room for the packed images (the free-space check before an import
	# passes) but not for the 2.9 MB they unpack to.
	flat=$(fixture busybox.tar.xz)
	on_small_tmpfs "$small" 2m bash -c 'export GPURUN_CACHE=$1/cache
		"$GPURUN" "$2" true >/dev/null 2>"$4/flat.err"; echo $? >"$4/flat.rc"
		"$GPURUN" --gpus void "$3" true >/dev/null 2>"$4/layered.err"; echo $? >"$4/layered.rc"
		find "$1/cache/tmp" "$1/cache/layers" -mindepth 1 >"$4/left"' \
		sh "$small" "$flat" "$(oci_fixture oci.tar)" "$res"
	for k in flat layered; do
		assert_equal "$(cat "$res/$k.rc")" 125
		assert_equal "$(wc -l <"$res/$k.err")" 1
		[[ $(cat "$res/$k.err") == "gpurun: "*": No space left on device" ]] || fail "$k: $(cat "$res/$k.err")"
	done
	[[ $(cat "$res/flat.err") == *" $flat: "* ]] || fail "the image is not named: $(cat "$res/flat.err")"
	assert_equal "$(cat "$res/left")" ""
	assert_host_unchanged "$BATS_TEST_TMPDIR/host.before"
}

# RLIMIT_NPROC: the caller's own processes count against it; root is exempt.
@test "no process left to start (RLIMIT_NPROC): one line, 125, host unchanged" {
	skip_unless_user "RLIMIT_NPROC does not hold for root"
	run --separate-stderr prlimit --nproc=1 "$GPURUN" "$BUSYBOX_DIR" true
	assert_gpurun_error 125
	assert_equal "$stderr" "gpurun: clone new namespaces: Resource temporarily unavailable"
	# Limits just above what the caller already runs hit later forks.
	local have n
	have=$(ps -u "$(id -u)" -o pid= | wc -l)
	for ((n = have; n < have + 6; n++)); do
		run --separate-stderr prlimit --nproc="$n" "$GPURUN" "$BUSYBOX_DIR" sh -c 'echo ran'
		if [[ $status -eq 0 ]]; then
			assert_output ran
		else
			assert_gpurun_error 125 "Resource temporarily unavailable"
		fi
	done
	assert_host_unchanged "$BATS_TEST_TMPDIR/host.before"
}

# runs_at_some_limit LIMITER FROM TO ERRTEXT ARGS...: `LIMITER N gpurun
# ARGS sh -c 'echo ran'` for N from FROM up to TO, stopping at the first that
# runs; each limit below it must fail with one line ending in ": ERRTEXT" and
# 125.  Prints the limit that ran; fails when none did.
runs_at_some_limit() {
	local limiter=$1 from=$2 to=$3 errtext=$4 n
	shift 4
	for ((n = from; n <= to; n++)); do
		run --separate-stderr "$limiter" "$n" "$GPURUN" "$@" sh -c 'echo ran'
		if [[ $status -eq 0 ]]; then
			assert_output ran
			echo "$n"
			return 0
		fi
		assert_gpurun_error 125
		[[ $stderr == "gpurun: "*": $errtext" ]] || fail "not a clean '$errtext' line: $stderr"
	done
	fail "no launch ran with a limit of up to $to"
}

# in_pids_cgroup MAX ARGS...: ARGS in a fresh pids cgroup (v1) allowing MAX
# tasks, the hierarchy mounted in a private mount namespace.  PIDS_CG names
# the cgroup; the caller removes it.
in_pids_cgroup() {
	unshare -m sh -c 'mount -t cgroup -o pids none "$1" && mkdir -p "$1/$2" &&
		echo "$3" >"$1/$2/pids.max" && echo $$ >"$1/$2/cgroup.procs" && shift 3 && exec "$@"' \
		sh "$BATS_TEST_TMPDIR/cg" "$PIDS_CG" "$@"
}

@test "no pid left in a pids cgroup: one line, 125, host unchanged" {
	skip_unless_root "a pids cgroup needs root"
	PIDS_CG=gpurun-faults-$$-$RANDOM
	mkdir "$BATS_TEST_TMPDIR/cg"
	unshare -m sh -c 'mount -t cgroup -o pids none "$1"' sh "$BATS_TEST_TMPDIR/cg" ||
		skip "the pids cgroup controller cannot be mounted here"
	run --separate-stderr in_pids_cgroup 1 "$GPURUN" "$BUSYBOX_DIR" true
	assert_gpurun_error 125
	assert_equal "$stderr" "gpurun: clone new namespaces: Resource temporarily unavailable"
	# Each limit up to a working launch (P0, P1 and the command, which
	# forks nothing): it runs, or fails with one line.
	runs_at_some_limit in_pids_cgroup 2 8 "Resource temporarily unavailable" "$BUSYBOX_DIR" >/dev/null
	remove_pids_cgroup
	assert_host_unchanged "$BATS_TEST_TMPDIR/host.before"
}

# with_fds N ARGS...: ARGS with RLIMIT_NOFILE N and only fds 0-2 open.
# (The shell's own ulimit: a python3 doing it cost 25 ms a launch, and the
# test makes up to 60.)
with_fds() {
	(
		for fd in /proc/self/fd/*; do
			fd=${fd##*/}
			((fd <= 2)) || eval "exec $fd>&-"
		done
		ulimit -n "$1" || exit 2
		shift
		exec "$@"
	)
}

@test "no file descriptor left (RLIMIT_NOFILE): one line ending in 'Too many open files', 125, host unchanged" {
	# 4: the fewest gpurun's dynamic loader starts with (at 3 it fails itself).
	run --separate-stderr with_fds 4 "$GPURUN" "$BUSYBOX_DIR" true
	assert_gpurun_error 125
	assert_equal "$stderr" "gpurun: pipe: Too many open files"
	# Every limit up to a working launch, a directory image and an archive
	# (cold, then cached): it runs, or fails with one line.
	local img n
	for img in "$BUSYBOX_DIR" "$BUSYBOX_TGZ" "$BUSYBOX_TGZ"; do
		n=$(runs_at_some_limit with_fds 5 64 "Too many open files" -v "$BATS_TEST_TMPDIR:/vol" "$img")
		echo "# $img: runs with $n fds" >&3
	done
	assert_cache_clean
	assert_host_unchanged "$BATS_TEST_TMPDIR/host.before"
}
