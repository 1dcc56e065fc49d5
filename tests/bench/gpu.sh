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
# Knobs: BENCH_GPU_RUNS (default 100), GPURUN (default ./gpurun).
# Results: tests/build/bench/gpu-<round>.json (unprivileged and unable to
# write there: a temporary directory).
set -eu

cd "$(dirname "$0")/../.."
REPO=$(pwd)
GPURUN=${GPURUN:-$REPO/gpurun}
RUNS=${BENCH_GPU_RUNS:-100}
OUT=$REPO/tests/build/bench
FAKE=$REPO/tests/build/fakedriver-four
mkdir -p "$OUT" 2>/dev/null || true

command -v hyperfine >/dev/null || {
	echo "gpu bench: hyperfine is missing (make deps-bench)"
	exit 2
}
if [ ! -e "$FAKE/.complete" ] || [ "$(cat "$FAKE/.complete")" != "$(sh tests/fakedriver/build.sh --hash)" ]; then
	if [ "$(id -u)" = 0 ]; then
		sh tests/fakedriver/build.sh "$FAKE" four >/dev/null
	elif [ ! -e "$FAKE/.complete" ]; then
		echo "gpu bench: no fake driver in $FAKE; build it as root: sh tests/fakedriver/build.sh $FAKE four"
		exit 2
	fi
fi

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
