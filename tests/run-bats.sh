#!/usr/bin/env bash
# tests/run-bats.sh — run every tests/*.bats twice: as root
# (GPURUN_TEST_MODE=root) and as an unprivileged user (GPURUN_TEST_MODE=user),
# once for a suite marked mode-independent (below), then print one line
# "N passed, N failed, N skipped" with the totals of both runs; exit
# non-zero when anything failed.  `make check` calls it.
#
#   tests/run-bats.sh [SUITE.bats ...]     default: tests/*.bats
#   RUN_MODES="user" tests/run-bats.sh     only one mode
#   BATS_JOBS=N      suites run at once (default: twice the CPUs, at least 2)
#   SUITE_TIMEOUT=900 (s, per file), BATS_TEST_TIMEOUT=120 (s, per test),
#   GPURUN_TEST_USER=gpurun-test (created when missing)
#   GPURUN_TEST_SUBUSER=gpurun-test-sub (created when missing, with the
#     subordinate id ranges useradd gives an ordinary user)
#
# A suite whose tests do the same whoever runs them (a static check of the
# tree, say) says so with a line of its own in the file:
#     # run-bats: mode-independent
# and runs once instead of once per mode: as root when RUN_MODES has root
# (so that its root-only tests run too), else in the one mode there is.
#
# Run by root, each suite (one file in one mode) runs in mount and pid
# namespaces of its own, with its own TMPDIR and HOME on a tmpfs of that
# namespace (a suite with the line "# run-bats: on-disk" keeps them on the
# disk), so that suites can run side by side: what a suite's host-state
# checks see (the mount table, the processes, the temporary directory) is
# that suite's alone, and a mount or a process one suite's gpurun leaves
# behind fails that suite and no other.
# The namespaces are private: nothing a suite mounts reaches the machine.
#
# Before both runs, as root, it builds the shared fixtures (the test images
# and, when tests/fakedriver/build.sh exists, the fake NVIDIA drivers), so
# that the unprivileged run only reads them.  The binary under test is
# ./gpurun; it is never rebuilt here (`make gpurun` first).  Never reads
# stdin, never prompts.
set -uo pipefail

cd "$(dirname "$0")/.." || exit 2
REPO=$(pwd)
TEST_USER=${GPURUN_TEST_USER:-gpurun-test}
SUB_USER=${GPURUN_TEST_SUBUSER:-gpurun-test-sub}
RUN_MODES=${RUN_MODES:-root user}
TEST_CACHE=${GPURUN_TEST_CACHE:-/var/cache/gpurun-test}
export BATS_TEST_TIMEOUT=${BATS_TEST_TIMEOUT:-120}

say() { printf 'run-bats: %s\n' "$*" >&2; }

if [[ ! -x "$REPO/gpurun" ]]; then
	say "$REPO/gpurun is missing: run 'make gpurun' first"
	echo "0 passed, 1 failed, 0 skipped"
	exit 1
fi

suites=("$@")
if [[ ${#suites[@]} -eq 0 ]]; then
	suites=(tests/*.bats)
fi
for i in "${!suites[@]}"; do
	suites[i]=$(realpath "${suites[i]}")
done

if [[ $(id -u) -ne 0 ]]; then
	say "not root: running the unprivileged mode only"
	RUN_MODES=user
fi

# ---- shared fixtures, built once by root (or by the caller) ------------------
mkdir -p tests/build
say "building test images"
# The hostile images of images.bats too, so the unprivileged run reads them.
hostile=(manifest-traversal manifest-absolute manifest-config-traversal index-traversal member-symlink
	member-hardlink bad-digest bad-digest-md5 digest-traversal blob-mismatch diffid-mismatch whiteout-dotdot
	whiteout-dotdot-dir huge-json huge-json-manifest many-layers hostile-strings)
# The images, the fake drivers and the real driver root do not depend on
# each other: they are built side by side (on a fresh clone, unpacking the
# real driver's packages alone takes half a minute of one CPU).
hostile=("${hostile[@]/#/hostile-}")
(bash tests/lib/images.bash all && bash tests/lib/oci.bash all &&
	bash tests/lib/oci.bash "${hostile[@]/%/.tar}") >/dev/null </dev/null &
images_pid=$!
if [[ -f tests/fakedriver/build.sh ]]; then
	# A tree built from these sources (its stamp is their hash) is kept: a
	# second run in this checkout must not pull it from under the first.
	fake_hash=$(sh tests/fakedriver/build.sh --hash)
	for n in one four odd nouvm mig xid broken-nodes broken-uvm broken-driver broken-ldcache broken-upgrade \
		broken-ecc broken-kernel broken-xid broken-hang; do
		[[ -e tests/build/fakedriver-$n/.complete && $(cat "tests/build/fakedriver-$n/.complete") == "$fake_hash" ]] &&
			continue
		say "building the fake driver tests/build/fakedriver-$n"
		sh tests/fakedriver/build.sh "tests/build/fakedriver-$n" "$n" </dev/null >&2 ||
			say "tests/fakedriver/build.sh $n failed (the GPU suites will say what is missing)"
	done &
fi
bash tests/lib/realdriver.bash build </dev/null >/dev/null || say "no real NVIDIA driver root (tests/lib/realdriver.bash build failed): realdriver.bats skips" &
images_ok=1
wait "$images_pid" || images_ok=0
wait
if ((!images_ok)); then
	say "building the test images failed"
	echo "0 passed, 1 failed, 0 skipped"
	exit 1
fi
# The buildah images are made from the test images, so after them; they need
# root and buildah: without them buildah.bats skips.
bash tests/lib/buildah.bash all </dev/null >/dev/null || say "the buildah images were not built (tests/lib/buildah.bash all): buildah.bats skips"

# Downloaded fixtures live outside the clone (tests/lib/debian_minbase.sh
# says where) and are fetched once; a machine without the network skips
# the suites that need them.
if [[ $(id -u) -eq 0 ]]; then
	say "the Debian minbase image: $(bash tests/lib/debian_minbase.sh 2>&1 </dev/null | tail -n1)"
fi

work=$(mktemp -d /tmp/gpurun-bats.XXXXXX)
# A runner killed by Ctrl-C or timeout takes its suites with it (each is
# pid 1 of its own namespace under unshare --kill-child).
chmod 0755 "$work"
cleanup() {
	rm -rf "$work" 2>/dev/null
}
trap cleanup EXIT

# ---- the unprivileged user ------------------------------------------------------
GPURUN_UNDER_TEST="$REPO/gpurun"
SUITES_UNDER_TEST=("${suites[@]}")
if [[ " $RUN_MODES " == *" user "* && $(id -u) -eq 0 ]]; then
	if ! id "$TEST_USER" >/dev/null 2>&1; then
		say "creating the unprivileged test user $TEST_USER"
		useradd -M -r -d /nonexistent -s /usr/sbin/nologin "$TEST_USER" || exit 2
	fi
	# The fixtures and the checkout must be readable by that user.  A checkout
	# it cannot reach (say under /root) is copied to a directory it can read.
	chmod -R a+rX tests/build 2>/dev/null
	if ! runuser -u "$TEST_USER" -- test -r "$REPO/tests/lib/common.bash" -a -x "$REPO/gpurun" \
		-a -r "$REPO/tests/build" </dev/null 2>/dev/null; then
		say "$TEST_USER cannot read $REPO; testing a copy in $work/repo"
		mkdir -p "$work/repo"
		cp -a "$REPO/gpurun" "$REPO/tests" "$work/repo/" || exit 2
		[[ -d "$REPO/examples" ]] && cp -a "$REPO/examples" "$work/repo/"
		chmod -R a+rX "$work/repo"
		GPURUN_UNDER_TEST="$work/repo/gpurun"
		for i in "${!suites[@]}"; do
			SUITES_UNDER_TEST[i]="$work/repo/${suites[i]#"$REPO/"}"
		done
	fi
	if [[ -r /proc/sys/kernel/unprivileged_userns_clone &&
		$(cat /proc/sys/kernel/unprivileged_userns_clone) == 0 ]]; then
		say "warning: kernel.unprivileged_userns_clone=0: the unprivileged run cannot create user namespaces"
	fi
fi

# ---- run and count -----------------------------------------------------------------
total_pass=0 total_fail=0 total_skip=0

# count TAPFILE STATUS LABEL: add a run's results to the totals.
count() {
	local tap=$1 status=$2 pass fail skip plan
	pass=$(grep -cE '^ok [0-9]+ ' "$tap")
	skip=$(grep -cE '^ok [0-9]+ .* # skip' "$tap")
	fail=$(grep -cE '^not ok [0-9]+ ' "$tap")
	pass=$((pass - skip))
	plan=$(sed -n 's/^1\.\.\([0-9]*\)$/\1/p' "$tap" | head -n1)
	# bats died before or between tests: what did not report counts as failed.
	if [[ -n "$plan" && $((pass + skip + fail)) -lt $plan ]]; then
		fail=$((plan - pass - skip))
	fi
	if [[ $status -ne 0 && $fail -eq 0 ]]; then
		fail=1
	fi
	# Not the "N passed, ..." form: that line is the final total alone.
	say "$3: ok $pass, not ok $fail, skipped $skip"
	echo
	total_pass=$((total_pass + pass))
	total_fail=$((total_fail + fail))
	total_skip=$((total_skip + skip))
}

# The second unprivileged user, with /etc/subuid and /etc/subgid ranges: the
# root suites run it (runuser) where a full id map matters.
if [[ $(id -u) -eq 0 ]] && ! id "$SUB_USER" >/dev/null 2>&1; then
	say "creating the unprivileged test user $SUB_USER (with subordinate id ranges)"
	useradd -M -d /nonexistent -s /usr/sbin/nologin "$SUB_USER" || exit 2
	grep -q "^$SUB_USER:" /etc/subuid || usermod --add-subuids 1000000-1065535 --add-subgids 1000000-1065535 "$SUB_USER"
fi

clean_env=(env -i "PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin" "GPURUN_TEST_SUBUSER=$SUB_USER"
	"LANG=C.UTF-8" "BATS_TEST_TIMEOUT=$BATS_TEST_TIMEOUT" "GPURUN_TEST_CACHE=$TEST_CACHE")

# suite_cmd MODE SUITE DIR: the command line that runs one bats file, into
# the array cmd.  DIR is the suite's own directory (TMPDIR, HOME).
suite_cmd() {
	local mode=$1 suite=$2 dir=$3
	case $mode in
	root)
		cmd=("${clean_env[@]}" HOME="$dir/home" TMPDIR="$dir/tmp" GPURUN_TEST_MODE=root
			GPURUN="$REPO/gpurun")
		;;
	user-as-root)
		cmd=("${clean_env[@]}" HOME="$dir/home" TMPDIR="$dir/tmp" USER="$TEST_USER"
			GPURUN_TEST_MODE=user GPURUN="$GPURUN_UNDER_TEST"
			setpriv --reuid="$TEST_USER" --regid="$TEST_USER" --init-groups --)
		;;
	user)
		cmd=("${clean_env[@]}" HOME="${HOME:-$dir/home}" TMPDIR="$dir/tmp"
			GPURUN_TEST_MODE=user GPURUN="$REPO/gpurun")
		;;
	esac
	cmd+=(bats --tap --timing --jobs 1 "$suite")
}

# start_suite MODE SUITE LABEL: run one bats file in the background under a
# time limit, its TAP output into $work/LABEL.tap.  bats' own per-test
# timeout cannot end a test whose output pipe is held by a process that
# escaped (a container that outlived its launcher), so each file also runs
# under timeout(1), writing to a file that no such process could hold open
# for us.  As root, the suite gets its own mount and pid namespaces (see the
# top of this file); --kill-child ends everything in them with the suite.
start_suite() {
	local mode=$1 suite=$2 label=$3 dir=$work/$3 cmd
	mkdir -p "$dir/tmp" "$dir/home"
	[[ $mode == user-as-root ]] && chown -R "$TEST_USER:" "$dir"
	suite_cmd "$mode" "$suite" "$dir"
	if [[ $(id -u) -eq 0 ]]; then
		# The suite's TMPDIR and HOME (its caches, images and volumes) on
		# a tmpfs of its own namespace: on ext4 the suites' churn of files
		# made and removed kept the kernel searching for free inodes
		# (ext4's recently_deleted), a fifth of the run's CPU.  A suite that
		# says "# run-bats: on-disk" keeps them on the disk, as a user's
		# cache is.
		local owner=root
		[[ $mode == user-as-root ]] && owner=$TEST_USER
		if ! grep -qx '# run-bats: on-disk' "$suite"; then
			# Where no tmpfs can be mounted, the suite says so and runs
			# on the disk as before.
			cmd=(sh -c 'if mount -t tmpfs -o mode=0755 gpurun-suite "$1"; then
					mkdir "$1/tmp" "$1/home" && chown "$2:" "$1/tmp" "$1/home" || exit 2
				else
					echo "# run-bats: no tmpfs for $1: the suite runs on the disk" >&2
				fi
				cd "$1/home" && shift 2 && exec "$@"' sh "$dir" "$owner" "${cmd[@]}")
		fi
		cmd=(unshare --mount --pid --fork --kill-child --mount-proc --propagation private -- "${cmd[@]}")
	fi
	(cd "$dir/home" && exec timeout -k 10 "$SUITE_TIMEOUT" "${cmd[@]}") </dev/null >"$work/$label.tap" 2>&1 &
	running[$!]=$label
	started[$!]=$SECONDS
}

# finish_one: wait for any running suite, show its output and count it.
finish_one() {
	local pid status label took
	wait -n -p pid "${!running[@]}"
	status=$?
	label=${running[$pid]}
	unset "running[$pid]"
	took=$((SECONDS - ${started[$pid]}))
	recorded[$label]=$took
	echo "#### $label ($took s) ####"
	cat "$work/$label.tap"
	[[ $status -eq 124 || $status -eq 137 ]] && say "$label: stopped after ${SUITE_TIMEOUT}s"
	count "$work/$label.tap" "$status" "$label"
}

SUITE_TIMEOUT=${SUITE_TIMEOUT:-900}
if [[ -z ${BATS_JOBS:-} ]]; then
	BATS_JOBS=$(($(nproc) * 2))
	((BATS_JOBS < 2)) && BATS_JOBS=2
fi
# Without root there are no namespaces to keep suites apart: one at a time.
[[ $(id -u) -ne 0 ]] && BATS_JOBS=1

# The order in which suites start: the longest first, so that the run does
# not end waiting for a long suite that started last.  How long a suite
# takes is what it took the last time this checkout ran it (recorded in
# $durations), else what it took in the last full run on the 2-core CI
# machine (the table), else 2 s a test.
durations=tests/build/suite-seconds
declare -A seconds=(
	[root-unpack]=38 [user-unpack]=38 [root-registry]=42 [user-registry]=41 [root-cache]=29 [user-cache]=31
	[root-gpu_security]=20 [user-gpu_security]=22 [root-cve]=31 [user-cve]=39 [root-packages]=49
	[user-packages]=5 [root-plan_run]=39 [user-plan_run]=36 [root-images]=29 [user-images]=30 [root-gpu]=27
	[user-gpu]=26 [root-faults]=22 [user-faults]=22 [root-races]=30 [user-races]=31 [root-docker_cli]=23
	[user-docker_cli]=21 [root-quoting]=19 [user-quoting]=22 [root-unit]=28 [root-escape]=14
	[user-escape]=12 [root-core_fs]=12 [user-core_fs]=12 [root-gpu_mig]=10 [user-gpu_mig]=8 [root-doctor]=12
	[user-doctor]=11 [root-cdi]=10 [user-cdi]=10 [root-core_errors]=9 [user-core_errors]=7 [root-slurm]=25
	[user-slurm]=4 [root-smoke]=10 [user-smoke]=9 [root-docs]=9 [root-trust]=4 [user-trust]=4
	[root-core_security]=6 [user-core_security]=5 [root-core_process]=5 [user-core_process]=6 [root-tty]=8
	[user-tty]=9 [root-realdriver]=4 [user-realdriver]=5 [root-core_env]=5 [user-core_env]=4
	[root-core_volumes]=2 [user-core_volumes]=3 [root-plan_truth]=5 [user-plan_truth]=5 [root-core_cli]=5
	[user-core_cli]=4 [root-json]=3 [user-json]=4 [root-examples]=5 [user-examples]=4 [root-core_ns]=3
	[user-core_ns]=3 [root-layering]=3 [root-core_dryrun]=3 [user-core_dryrun]=3 [root-build]=3 [user-build]=1
	[root-security_model]=2 [user-security_model]=2 [root-buildah]=10 [root-subid]=3 [user-buildah]=4
	[user-subid]=1
)
declare -A recorded=()
if [[ -r $durations ]]; then
	while read -r label n; do
		[[ $n =~ ^[0-9]+$ ]] && recorded[$label]=$n
	done <"$durations"
fi

# The queue: every (mode, suite), but a mode-independent suite in one mode.
queue=()
once_mode=${RUN_MODES%% *}
[[ " $RUN_MODES " == *" root "* ]] && once_mode=root
for mode in $RUN_MODES; do
	m=$mode
	[[ $mode == user && $(id -u) -eq 0 ]] && m=user-as-root
	for i in "${!suites[@]}"; do
		if [[ $mode != "$once_mode" ]] && grep -qx '# run-bats: mode-independent' "${suites[i]}"; then
			continue
		fi
		s=${suites[i]}
		[[ $m == user-as-root ]] && s=${SUITES_UNDER_TEST[i]}
		label=$mode-$(basename "${suites[i]}" .bats)
		n=${recorded[$label]:-${seconds[$label]:-$((2 * $(grep -c '^@test' "${suites[i]}")))}}
		queue+=("$n $m $s $label")
	done
done
mapfile -t queue < <(printf '%s\n' "${queue[@]}" | sort -rn -k1,1)

declare -A running=() started=()
say "running ${#queue[@]} suites, $BATS_JOBS at a time"
for entry in "${queue[@]}"; do
	read -r _ m s label <<<"$entry"
	while ((${#running[@]} >= BATS_JOBS)); do
		finish_one
	done
	start_suite "$m" "$s" "$label"
done
while ((${#running[@]} > 0)); do
	finish_one
done

# The real driver root is shared with other checkouts and later runs, which
# reuse it by its stamp: a suite that wrote into it fails the run.
if [[ -n $(bash tests/lib/realdriver.bash path 2>/dev/null) ]] &&
	! bash tests/lib/realdriver.bash check </dev/null; then
	total_fail=$((total_fail + 1))
fi

# What this run measured, for the order of the next one; the suites it did
# not run keep what was recorded for them.
if ! (for label in "${!recorded[@]}"; do
	printf '%s %s\n' "$label" "${recorded[$label]}"
done | LC_ALL=C sort >"$durations.tmp" && mv "$durations.tmp" "$durations") 2>/dev/null; then
	say "could not record the suites' durations in $REPO/$durations"
fi

echo "$total_pass passed, $total_fail failed, $total_skip skipped"
[[ $total_fail -eq 0 ]]
