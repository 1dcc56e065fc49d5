#!/usr/bin/env bash
# tests/bench/cpu.sh — the CPU a warm launch costs, split by process and by
# user and kernel mode: gpurun against bwrap, launching /bin/true from the
# unpacked busybox directory as root (`make bench` runs it in run.sh's
# section 1; by hand: bash tests/bench/cpu.sh).
#
# hyperfine's User column cannot answer "how much user CPU does gpurun's own
# code take": getrusage counts only children that are waited for, splits
# user and system by ticks (a 3 ms launch is all one or the other), and
# includes the command's own start-up (in this VM every exec spends ~0.4 ms
# of user time in glibc's CPUID-based start-up, /bin/true's too).  So: one
# `perf record -e cpu-clock` (a software clock: the VM has no hardware PMU)
# over N iterations of "gpurun launch; bwrap launch", and the samples summed
# by command name and shared object:
#   gpurun  = comm gpurun (P0, and P2 until it execs) + gpurun-init (P1)
#   bwrap   = comm bwrap (all three of its processes)
#   user    = samples in any object but [kernel.kallsyms]; also given without
#             the dynamic loader (ld-linux*), which every dynamic exec pays
#   total   = user + kernel
# /bin/true runs as comm `true` and the loop as `sh`: neither is counted.
#
# The sampling period matters on this VM: every cpu-clock sample costs
# about 9 us of hrtimer work that is itself counted, so a 10 us period
# (-c 10000) inflates what it measures 20-40 fold and 50 us still by 20%.
# The default is 100 us; each run prints the samples' sum next to perf
# stat's exact task-clock for the same loop, so a distortion shows.
# Short-lived processes lose their last partial period (up to one period
# per process, mostly exit work in the kernel).
#
# Knobs: BENCH_CPU_LAUNCHES (N, default 300), BENCH_PERF_PERIOD (ns of CPU
# per sample, default 100000), GPURUN, BENCH_DOCS=0 (leave
# docs/performance.md alone).  Results: tests/build/bench/cpu.md (rows of the docs/performance.md table
# between bench:cpu:begin and bench:cpu:end), cpu.perf.data.
set -uo pipefail
cd "$(dirname "$0")/../.." || exit 2
REPO=$(pwd)
GPURUN=${GPURUN:-$REPO/gpurun}
OUT=$REPO/tests/build/bench
N=${BENCH_CPU_LAUNCHES:-300}
PERIOD=${BENCH_PERF_PERIOD:-100000}
export TESTS_BUILD=$REPO/tests/build
# shellcheck source=../lib/images.bash
source tests/lib/images.bash

[[ $(id -u) -eq 0 ]] || { echo "bench cpu: needs root (the root launch is what it measures); skipped"; exit 0; }
command -v perf >/dev/null || { echo "bench cpu: perf is not installed; skipped"; exit 0; }
command -v bwrap >/dev/null || { echo "bench cpu: bwrap is not installed; skipped"; exit 0; }
mkdir -p "$OUT"
DIR=$(fixture busybox) || exit 2
G="$GPURUN $DIR /bin/true"
B="bwrap --unshare-pid --unshare-ipc --bind $DIR / --proc /proc --dev /dev /bin/true"
for cmd in "$G" "$B"; do
	$cmd </dev/null || { echo "bench cpu: '$cmd' fails"; exit 1; }
done
LOOP="i=0; while [ \$i -lt $N ]; do $G; $B; i=\$((i + 1)); done"

printf '\n==== CPU per warm launch from perf samples: %s x (gpurun; bwrap), one sample per %s us of CPU ====\n' \
	"$N" "$((PERIOD / 1000))"
# The exact total of the same loop (counting, no sampling), before and after
# the recording: the machine's load moves it too.
stat_ms() {
	perf stat -x, -e task-clock -- sh -c "$LOOP" 2>&1 >/dev/null </dev/null |
		awk -F, '$3 ~ /^task-clock/ { print $1 }'
}
before=$(stat_ms)
perf record -q -e cpu-clock -c "$PERIOD" -o "$OUT/cpu.perf.data" -- sh -c "$LOOP" >/dev/null 2>&1 </dev/null || {
	echo "bench cpu: perf record failed"
	exit 1
}
after=$(stat_ms)
perf report -i "$OUT/cpu.perf.data" --stdio --sort comm,dso -F sample,comm,dso -t $'\t' 2>/dev/null >"$OUT/cpu.report"

python3 - "$OUT/cpu.report" "$N" "$PERIOD" "${before:-0}" "${after:-0}" "$(basename "$GPURUN" | cut -c1-15)" "$OUT/cpu.md" <<'PY'
import sys
report, n, period, before, after, comm, md = sys.argv[1:]
n, period, before, after = int(n), int(period), float(before), float(after)
tools = {"gpurun": {comm, "gpurun-init"}, "bwrap": {"bwrap"}}
fig = {t: {"user": 0, "noldso": 0, "kernel": 0} for t in tools}
total = 0
for line in open(report):
    if line.startswith("#") or not line.strip():
        continue
    samples, c, dso = (f.strip() for f in line.rstrip("\n").split("\t"))
    samples = int(samples)
    total += samples
    for t, comms in tools.items():
        if c not in comms:
            continue
        if dso == "[kernel.kallsyms]":
            fig[t]["kernel"] += samples
        else:
            fig[t]["user"] += samples
            if not dso.startswith("ld-linux"):
                fig[t]["noldso"] += samples


def per(samples):  # ms per launch
    return samples * period / 1e6 / n


rows = [("user CPU per launch, the launcher's own processes", "user", True),
        ("same, without the dynamic loader (ld-linux)", "noldso", False),
        ("kernel CPU per launch, same processes", "kernel", False),
        ("total CPU (user + kernel) per launch, same processes", None, False)]
with open(md, "w") as f:
    f.write(f"| per warm launch of `/bin/true` from the busybox directory, root; perf record -e cpu-clock, "
            f"{n} x (gpurun; bwrap), one sample per {period / 1000:g} µs | gpurun (comm gpurun, gpurun-init) "
            f"| bwrap (comm bwrap) | ratio | target |\n|---|---|---|---|---|\n")
    for label, key, target in rows:
        g, b = (per(fig[t][key] if key else fig[t]["user"] + fig[t]["kernel"]) for t in ("gpurun", "bwrap"))
        verdict = (f"{'PASS' if g < 1.0 else 'MISS'} under 1 ms" if target else "")
        print(f"  {label:<54} gpurun {g:6.3f} ms  bwrap {b:6.3f} ms  {g / b:5.2f}x  {verdict}")
        f.write(f"| {label} | {g:.3f} ms | {b:.3f} ms | {g / b:.2f}x | {verdict} |\n")
    # The check on the sampling: all samples (both tools, /bin/true, the
    # shell) against perf stat's count of the same loop.
    s = total * period / 1e6 / n
    b, a = before / n, after / n
    e = (b + a) / 2
    print(f"  check: all samples {s:.2f} ms per iteration; perf stat task-clock {b:.2f} ms before, "
          f"{a:.2f} ms after ({s / e:.2f}x their mean)")
    f.write(f"| check: all samples of the loop (both launches, `true`, the shell) against perf stat's "
            f"task-clock of the same loop before and after, per iteration | {s:.2f} ms "
            f"| perf stat {b:.2f} / {a:.2f} ms | {s / e:.2f}x | |\n")
PY
if [[ "${BENCH_DOCS:-1}" != 0 ]]; then
	python3 tests/bench/ratios.py --splice docs/performance.md "$OUT/cpu.md" cpu && echo "docs/performance.md: the bench:cpu table regenerated"
fi
exit 0
