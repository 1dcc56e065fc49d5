#!/bin/sh
# tests/bench/gpu.sh — what GPU injection costs a launch (`make bench` runs
# it after tests/bench/run.sh's scenarios; by hand: sh tests/bench/gpu.sh).
#
# On the four-GPU fake driver (tests/fakedriver), from an unpacked directory
# image (the glibc test image, which has ldconfig, so the whole path runs)
# and from a copy of it without ldconfig (gpurun then skips that step),
# hyperfine medians of:
#   base         gpurun IMG /bin/true                        no GPU
#   gpu          gpurun --gpus all --caps all IMG /bin/true  everything injected
#   base-noldc   the same two on the copy without ldconfig
#   gpu-noldc
# and derives
#   overhead   = gpu - base                what --gpus all --caps all adds
#   injection  = gpu-noldc - base-noldc    discovery, plan and the bind mounts
#   ldconfig   = overhead - injection      the ldconfig step (fork, sandbox,
#                                          the image's ldconfig over the libs)
# Targets: injection under 5 ms; the whole overhead under 2x the ldconfig step.
#
# Then, on the eight-GPU fake driver, rounds in alternating order of the
# same image with no GPU, `--gpus 0`, `--gpus 0,1,2,3` and `--gpus all` (8): what each
# GPU adds (target: 8 GPUs within 1.2x of 1).  Its rows are the docs/performance.md table
# between bench:gpu:begin and bench:gpu:end (tests/build/bench/gpu.md,
# spliced by ratios.py; BENCH_DOCS=0 leaves docs/performance.md alone).
#
# Knobs: BENCH_GPU_RUNS (default 100), GPURUN (default ./gpurun).
# Results: tests/build/bench/gpu-<round>.json, gpus-1-4-8.json, gpu.md
# (unprivileged and unable to write there: a temporary directory).
set -eu

cd "$(dirname "$0")/../.."
REPO=$(pwd)
GPURUN=${GPURUN:-$REPO/gpurun}
RUNS=${BENCH_GPU_RUNS:-100}
OUT=$REPO/tests/build/bench
FAKE=$REPO/tests/build/fakedriver-four
FAKE8=$REPO/tests/build/fakedriver-eight
mkdir -p "$OUT" 2>/dev/null || true

command -v hyperfine >/dev/null || {
	echo "gpu bench: hyperfine is missing (make deps-bench)"
	exit 2
}
# fake_driver DIR TOPOLOGY: (re)build a fake driver root when its sources
# changed; fails only when there is none and it cannot be built.
fake_driver() {
	if [ ! -e "$1/.complete" ] || [ "$(cat "$1/.complete")" != "$(sh tests/fakedriver/build.sh --hash)" ]; then
		if [ "$(id -u)" = 0 ]; then
			sh tests/fakedriver/build.sh "$1" "$2" >/dev/null
		elif [ ! -e "$1/.complete" ]; then
			echo "gpu bench: no fake driver in $1; build it as root: sh tests/fakedriver/build.sh $1 $2"
			return 1
		fi
	fi
}
fake_driver "$FAKE" four || exit 2

# The image without ldconfig: a copy.  A root-owned directory image cannot
# take mount points in a user namespace, so unprivileged runs measure the
# tar forms, made in a directory of their own.
src=$(bash tests/lib/images.bash glibc | tail -n 1)
if [ "$(id -u)" = 0 ]; then
	WORK=$OUT
else
	WORK=$(mktemp -d "${TMPDIR:-/tmp}/gpurun-bench-gpu.XXXXXX")
	trap 'rm -rf "$WORK"' EXIT
	# Results where this user may write them.
	[ -w "$OUT" ] || OUT=$WORK
fi
NOLDC=$WORK/glibc-noldconfig
if [ ! -e "$NOLDC/.ready" ]; then
	rm -rf "$NOLDC"
	cp -a "$src" "$NOLDC"
	rm -f "$NOLDC/usr/sbin/ldconfig"
	touch "$NOLDC/.ready"
fi
if [ "$(id -u)" = 0 ]; then
	IMG=$src
	IMG_N=$NOLDC
	form="an unpacked directory"
else
	IMG=$(bash tests/lib/images.bash glibc.tar | tail -n 1)
	IMG_N=$WORK/glibc-noldconfig.tar
	tar -C "$NOLDC" --exclude=./.ready --owner=0 --group=0 -cf "$IMG_N" .
	form="a tar archive (not root: a directory image cannot take mount points in a user namespace)"
fi

GPU="$GPURUN --driver-root $FAKE --gpus all --caps all"
for cmd in "$GPURUN $IMG /bin/true" "$GPU $IMG /bin/true" "$GPU $IMG_N /bin/true"; do
	if ! err=$($cmd 2>&1 </dev/null); then
		echo "gpu bench: '$cmd' fails: $err"
		exit 1
	fi
done
nlibs=$($GPURUN list --driver-root "$FAKE" | grep -c '\.so\.')
echo "four fake GPUs, caps all ($nlibs libraries), image: $form; $RUNS runs each"

# Rounds that alternate the four commands, so that a machine whose load
# drifts during the run biases none of them.
ROUNDS=5
rm -f "$OUT"/gpu-*.json
i=0
while [ $i -lt $ROUNDS ]; do
	hyperfine -N --style basic --warmup 5 --runs $((RUNS / ROUNDS + 1)) --export-json "$OUT/gpu-$i.json" \
		-n base "$GPURUN $IMG /bin/true" \
		-n gpu "$GPU $IMG /bin/true" \
		-n base-noldc "$GPURUN $IMG_N /bin/true" \
		-n gpu-noldc "$GPU $IMG_N /bin/true" </dev/null >/dev/null 2>"$OUT/gpu-hyperfine.log" || {
		echo "gpu bench: hyperfine failed:"
		cat "$OUT/gpu-hyperfine.log"
		exit 1
	}
	i=$((i + 1))
done

python3 - "$OUT"/gpu-*.json <<'PY'
import json, statistics, sys
times = {}
for path in sys.argv[1:]:
    for x in json.load(open(path))["results"]:
        times.setdefault(x["command"], []).extend(x["times"])
r = {name: statistics.median(t) * 1e3 for name, t in times.items()}
overhead = r["gpu"] - r["base"]
inj = r["gpu-noldc"] - r["base-noldc"]
ldc = overhead - inj
for name in ("base", "gpu", "base-noldc", "gpu-noldc"):
    print(f"  {name:<28} {r[name]:8.2f} ms (median)")
print(f"  GPU overhead                 {overhead:8.2f} ms  ({r['gpu'] / r['base']:.2f}x the base launch)")
print(f"  of which injection           {inj:8.2f} ms")
print(f"  of which the ldconfig step   {ldc:8.2f} ms")
print(f"  {'PASS' if inj < 5.0 else 'MISS'} injection under 5 ms ({inj:.2f} ms)")
ratio = overhead / ldc if ldc > 0 else float("inf")
print(f"  {'PASS' if ratio < 2.0 else 'MISS'} GPU overhead under 2x the ldconfig step ({ratio:.2f}x)")
PY

# ---- 1, 4 and 8 GPUs ------------------------------------------------------
# The four commands in rounds of alternating order (forward, then
# backward), pooled, so that the ratios compare launches made under the same
# load.  The glibc image keeps the ldconfig step in every GPU launch.
fake_driver "$FAKE8" eight || exit 2
G8="$GPURUN --driver-root $FAKE8"
n8=$($GPURUN info --driver-root "$FAKE8" 2>/dev/null | grep -c '^Device Index:' || true)
echo ""
echo "1, 4 and 8 fake GPUs (eight-GPU driver root, $n8 GPUs seen by gpurun info), image: $form; $RUNS runs each over $ROUNDS rounds"
for spec in 0 0,1,2,3 all; do
	if ! err=$($G8 --gpus "$spec" "$IMG" /bin/true 2>&1 </dev/null); then
		echo "gpu bench: '$G8 --gpus $spec $IMG /bin/true' fails: $err"
		exit 1
	fi
done
rm -f "$OUT"/gpus-1-4-8*.json
i=0
while [ $i -lt $ROUNDS ]; do
	if [ $((i % 2)) = 0 ]; then
		set -- -n "8 GPUs" "$G8 --gpus all $IMG /bin/true" \
			-n "1 GPU (\`--gpus 0\`)" "$G8 --gpus 0 $IMG /bin/true" \
			-n "4 GPUs (\`--gpus 0,1,2,3\`)" "$G8 --gpus 0,1,2,3 $IMG /bin/true" \
			-n "no GPU (no \`--gpus\`)" "$G8 $IMG /bin/true"
	else
		set -- -n "no GPU (no \`--gpus\`)" "$G8 $IMG /bin/true" \
			-n "4 GPUs (\`--gpus 0,1,2,3\`)" "$G8 --gpus 0,1,2,3 $IMG /bin/true" \
			-n "1 GPU (\`--gpus 0\`)" "$G8 --gpus 0 $IMG /bin/true" \
			-n "8 GPUs" "$G8 --gpus all $IMG /bin/true"
	fi
	hyperfine -N --style none --warmup 5 --runs $((RUNS / ROUNDS + 1)) --export-json "$OUT/gpus-1-4-8.$i.json" \
		"$@" </dev/null >/dev/null 2>"$OUT/gpu-hyperfine.log" || {
		echo "gpu bench: hyperfine failed:"
		cat "$OUT/gpu-hyperfine.log"
		exit 1
	}
	i=$((i + 1))
done
python3 tests/bench/ratios.py --pool "$OUT/gpus-1-4-8.json" "$OUT"/gpus-1-4-8.*.json
{
	if [ "$(id -u)" = 0 ]; then who="root, the image as a directory"; else who="unprivileged, the image as a tar"; fi
	echo "| \`--gpus\` on the fake eight-GPU driver (default caps, glibc image; $who) | \`--gpus all\` (8 GPUs) median ± sd (CPU) | peer median ± sd (CPU), same rounds | ratio | target |"
	echo "|---|---|---|---|---|"
} >"$OUT/gpu.md"
python3 tests/bench/ratios.py "$OUT/gpus-1-4-8.json" "8 GPUs" "1 GPU (\`--gpus 0\`)<=1.2" \
	--md "$OUT/gpu.md" "\`/bin/true\`: 8 GPUs against 1, 4 and none"
if [ "${BENCH_DOCS:-1}" != 0 ] && [ -w docs/performance.md ]; then
	python3 tests/bench/ratios.py --splice docs/performance.md "$OUT/gpu.md" gpu && echo "docs/performance.md: the bench:gpu table regenerated"
fi
