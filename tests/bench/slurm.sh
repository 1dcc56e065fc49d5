#!/usr/bin/env bash
# tests/bench/slurm.sh — what gpurun costs each task of a Slurm step (`make
# bench` runs it after registry.sh, or alone with BENCH_ONLY=slurm; by
# hand, as root: flock /tmp/gpurun-slurm.lock bash tests/bench/slurm.sh).
# It starts the tests' one-node Slurm
# (tests/lib/slurm.bash: munged, slurmctld and slurmd in a private
# directory, on ports of their own, four fake GPUs) and measures, in
# hyperfine rounds of alternating order, a step of 8 tasks on the node's
# CPUs (`srun -n 8 --overcommit`) running `true`:
#   bare              srun -n 8 --overcommit true
#   container-image   the same with --container-image=IMAGE (the SPANK
#                     plugin: every task its own gpurun container)
#   gpurun-per-task   srun -n 8 --overcommit gpurun IMAGE true (no plugin)
# Every step runs in one allocation made first (`salloc --no-shell`, then
# `srun --jobid`), as the steps of a batch job do: an srun of its own also
# makes a job, and that scheduling dominated and swamped the difference (in
# one run of 12 each: medians 502 ms bare, 346 ms with --container-image,
# 487 ms with gpurun per task, each with a standard deviation near 1 s).
# IMAGE is the tests' busybox.tar, from a warm cache (each command runs once
# before the rounds).  The per-task cost is (step - bare step) / 8.  No
# target: the issue asks for the cost to be known.  Skipped, with a line
# saying why, when not root (Slurm's daemons run as root here) or when
# Slurm is not installed; without the plugin (`make spank`, which needs
# libslurm-dev) the --container-image row is left out.
#
# Knobs: BENCH_SLURM_RUNS (per command, default 60; BENCH_QUICK=1: 20),
# GPURUN, BENCH_DOCS=0 (leave docs/performance.md alone), SLURM_CTLD_PORT and
# SLURM_D_PORT (default 36827 and 36828, not those of tests/slurm.bats; two
# one-node Slurms at once on one machine still hang, so this runs under
# `flock /tmp/gpurun-slurm.lock`, the lock a run of tests/slurm.bats is
# wrapped in: run.sh takes it).  Its rows are the docs/performance.md table between
# bench:slurm:begin and bench:slurm:end (tests/build/bench/slurm.md, spliced
# by ratios.py).  Results: tests/build/bench/slurm-step.json.
set -uo pipefail
cd "$(dirname "$0")/../.." || exit 2
REPO=$(pwd)
GPURUN=${GPURUN:-$REPO/gpurun}
OUT=$REPO/tests/build/bench
RUNS=${BENCH_SLURM_RUNS:-60}
[[ "${BENCH_QUICK:-0}" == 1 ]] && RUNS=${BENCH_SLURM_RUNS:-20}
TASKS=8
RATIOS="python3 $REPO/tests/bench/ratios.py"
export TESTS_BUILD=$REPO/tests/build
export SLURM_CTLD_PORT=${SLURM_CTLD_PORT:-36827} SLURM_D_PORT=${SLURM_D_PORT:-36828}

say() { printf '%s\n' "$*"; }
header() { printf '\n==== %s ====\n' "$*"; }

if [[ $(id -u) -ne 0 ]]; then
	say "bench slurm: skipped: not root (the one-node Slurm's daemons run as root, SlurmUser=root)"
	exit 0
fi
for tool in slurmctld slurmd srun salloc sinfo squeue scancel munged munge unmunge; do
	command -v "$tool" >/dev/null || {
		say "bench slurm: skipped: $tool is missing (Slurm is not installed: make deps-test)"
		exit 0
	}
done
command -v hyperfine >/dev/null || {
	say "bench slurm: hyperfine is missing (make deps-bench)"
	exit 2
}
[[ -x "$GPURUN" ]] || {
	say "bench slurm: $GPURUN is missing (make gpurun)"
	exit 2
}
# shellcheck source=../lib/images.bash
source tests/lib/images.bash
# shellcheck source=../lib/slurm.bash
source tests/lib/slurm.bash
mkdir -p "$OUT"

# The plugin, built as `make check` builds it, when libslurm-dev is there.
if [[ ! -f $SLURM_SPANK && -f /usr/include/slurm/spank.h ]]; then
	make -s spank >/dev/null || say "bench slurm: make spank failed"
fi
# gres.conf names the four-GPU fake driver's device nodes (tests/fakedriver).
FAKE=$TESTS_BUILD/fakedriver-four
if [[ ! -e $FAKE/.complete || "$(cat "$FAKE/.complete")" != "$(sh tests/fakedriver/build.sh --hash)" ]]; then
	sh tests/fakedriver/build.sh "$FAKE" four >/dev/null || exit 2
fi
IMAGE=$(fixture busybox.tar) || exit 2

WORK=$(mktemp -d /tmp/gpurun-bench-slurm.XXXXXX) || exit 2
export GPURUN_CACHE=$WORK/cache
trap 'slurm_stop; rm -rf "$WORK"' EXIT
slurm_start "$FAKE" || {
	say "bench slurm: the one-node Slurm did not start"
	exit 1
}

alloc=$(timeout 60 salloc -n "$TASKS" --overcommit --no-shell 2>&1 </dev/null)
JOB=$(sed -n 's/.*Granted job allocation \([0-9][0-9]*\).*/\1/p' <<<"$alloc")
[[ -n $JOB ]] || JOB=$(squeue -h -o %i | head -n 1)
[[ -n $JOB ]] || {
	say "bench slurm: salloc made no allocation: $alloc"
	exit 1
}
STEP="srun --quiet --jobid=$JOB -n $TASKS --overcommit"
NAMES=() CMDS=()
# add NAME CMD: measured when it succeeds once (which also warms the cache).
add() {
	local err
	if ! err=$(timeout 120 bash -c "$2" 2>&1 </dev/null); then
		say "  $1: left out, it fails here: $(printf '%s' "$err" | tail -n 2 | tr '\n' ' ')"
		return 1
	fi
	NAMES+=("$1")
	CMDS+=("$2")
}
header "a step of $TASKS tasks running true on the one-node Slurm ($(nproc) CPUs, --overcommit), $RUNS runs each"
if [[ -f $SLURM_SPANK ]]; then
	# Measured only when the plugin really puts the task in a container,
	# whose pid 1 is gpurun's init: a step left on the host would cost
	# nothing and look like the cheapest container of all.
	init=$(timeout 120 srun --quiet --jobid="$JOB" -n 1 --overcommit --container-image="$IMAGE" \
		cat /proc/1/comm 2>&1 </dev/null)
	if [[ $init == gpurun-init ]]; then
		add container-image "$STEP --container-image=$IMAGE true"
	else
		say "  container-image: left out, the task's pid 1 is not gpurun's init: $(tail -n 2 <<<"$init" | tr '\n' ' ')"
	fi
else
	say "  container-image: left out, no SPANK plugin (make spank; needs libslurm-dev)"
fi
add bare "$STEP true" || exit 1
add gpurun-per-task "$STEP $GPURUN $IMAGE true"
((${#NAMES[@]} >= 2)) || exit 1
REF=${NAMES[0]}

# Four rounds in alternating order, pooled (as run.sh's bench_rounds): a
# step takes a fraction of a second and this machine's speed drifts.
args=() rargs=()
for i in "${!NAMES[@]}"; do
	args+=(-n "${NAMES[i]}" "${CMDS[i]}")
	rargs=(-n "${NAMES[i]}" "${CMDS[i]}" "${rargs[@]}")
done
JSON=$OUT/slurm-step.json
for r in 1 2 3 4; do
	if ((r % 2)); then set -- "${args[@]}"; else set -- "${rargs[@]}"; fi
	hyperfine -N --style none --warmup 1 --runs $(((RUNS + 3) / 4)) --export-json "$JSON.$r" "$@" \
		</dev/null >/dev/null || {
		say "bench slurm: hyperfine failed"
		exit 1
	}
done
$RATIOS --pool "$JSON" "$JSON".[1-4] && rm -f "$JSON".[1-4]

TABLE=$OUT/slurm.md
{
	echo "| a step of $TASKS tasks running \`true\` (\`srun -n $TASKS --overcommit\` in one allocation, one-node Slurm on this machine; CPU: srun's own, the tasks run under slurmd) | \`$REF\` median ± sd (CPU) | peer median ± sd (CPU), same rounds | ratio | target |"
	echo "|---|---|---|---|---|"
} >"$TABLE"
$RATIOS "$JSON" "$REF" --md "$TABLE" \
	"\`$([[ $REF == container-image ]] && echo "--container-image=IMAGE" || echo "gpurun IMAGE") true\`, IMAGE the tests' busybox.tar from a warm cache (4 alternating rounds, pooled)"
# The per-task cost: each step's median less the bare step's, over the tasks.
python3 - "$JSON" "$TABLE" "$TASKS" <<-'PY'
	import json, sys
	path, table, tasks = sys.argv[1], sys.argv[2], int(sys.argv[3])
	med = {r["command"]: r["median"] for r in json.load(open(path))["results"]}
	cost = {n: (m - med["bare"]) / tasks for n, m in med.items() if n != "bare"}
	for n, c in cost.items():
	    print(f"  per task, {n}: {c * 1e3:.2f} ms (({med[n] * 1e3:.2f} - {med['bare'] * 1e3:.2f}) ms / {tasks})")
	if "container-image" in cost and "gpurun-per-task" in cost:
	    a, b = cost["container-image"], cost["gpurun-per-task"]
	    ratio = f"{a / b:.2f}x" if b > 0 else ""
	    row = (f"| per task: (step - bare step) / {tasks} | {a * 1e3:.2f} ms | gpurun-per-task {b * 1e3:.2f} ms "
	           f"| {ratio} | |")
	else:
	    (n, a), = cost.items()
	    row = f"| per task: (step - bare step) / {tasks} | {n} {a * 1e3:.2f} ms | | | |"
	with open(table, "a") as f:
	    f.write(row + "\n")
PY
if [[ "${BENCH_DOCS:-1}" != 0 ]]; then
	$RATIOS --splice "$REPO/docs/performance.md" "$TABLE" slurm && say "docs/performance.md: the bench:slurm table regenerated"
fi
exit 0
