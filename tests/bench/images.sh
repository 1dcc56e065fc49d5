#!/usr/bin/env bash
# tests/bench/images.sh — the image cache, measured (`make bench` runs it
# after run.sh's launch benchmarks; root only: debootstrap, umoci).
#
#   1. a cache hit of the Debian minbase .tar.gz against a launch from the
#      same tree unpacked in a directory (target: within 1.1x);
#   2. the first launch (an empty cache) of a `docker save` archive of that
#      image against the first launch of the flat .tar.gz (target: within
#      1.1x);
#   3. gpurun's peak RSS while unpacking an image of about 1 GB for the first
#      time (target: under 64 MB: the archive is streamed, never held);
#   4. first and cached launch times of images of growing size: busybox,
#      Debian minbase, the generated 1 GB image.
#
# Knobs: BENCH_COLD_RUNS (default 10), BENCH_RUNS (default 100), GPURUN.
# Needs $OUT/debian-bookworm-minbase.tar.gz from run.sh.
set -uo pipefail
cd "$(dirname "$0")/../.." || exit 2
REPO=$(pwd)
GPURUN=${GPURUN:-$REPO/gpurun}
OUT=$REPO/tests/build/bench
RUNS=${BENCH_RUNS:-100}
COLD_RUNS=${BENCH_COLD_RUNS:-10}
RATIOS="python3 $REPO/tests/bench/ratios.py"
CACHE=$OUT/cache
export TESTS_BUILD=$REPO/tests/build
# shellcheck source=../lib/images.bash
source tests/lib/images.bash
# shellcheck source=../lib/oci.bash
source tests/lib/oci.bash

say() { printf '%s\n' "$*"; }
header() { printf '\n==== %s ====\n' "$*"; }

[[ $(id -u) -eq 0 ]] || {
	say "bench images: needs root (debootstrap's tree, umoci); skipped"
	exit 0
}
DEBIAN_TGZ=$OUT/debian-bookworm-minbase.tar.gz
[[ -s $DEBIAN_TGZ ]] || {
	say "bench images: $DEBIAN_TGZ is missing (run.sh builds it); skipped"
	exit 0
}

# ---- the images ------------------------------------------------------------------
DEBIAN_DIR=$OUT/debian-dir
if [[ ! -d $DEBIAN_DIR/etc ]]; then
	rm -rf "$DEBIAN_DIR" && mkdir -p "$DEBIAN_DIR"
	tar --numeric-owner -C "$DEBIAN_DIR" -xzf "$DEBIAN_TGZ" --exclude='./dev/*'
fi
DEBIAN_DOCKER=$OUT/debian-minbase.docker.tar
if [[ ! -s $DEBIAN_DOCKER ]]; then
	say "building a docker save archive of the Debian image with umoci and skopeo (once)"
	tmp=$(mktemp -d "$OUT/oci.XXXXXX")
	umoci init --layout "$tmp/layout" &&
		umoci new --image "$tmp/layout:latest" &&
		umoci unpack --image "$tmp/layout:latest" "$tmp/bundle" >/dev/null &&
		tar --numeric-owner -C "$tmp/bundle/rootfs" -xzf "$DEBIAN_TGZ" --exclude='./dev/*' &&
		umoci repack --image "$tmp/layout:latest" "$tmp/bundle" &&
		skopeo copy --quiet "oci:$tmp/layout:latest" "docker-archive:$DEBIAN_DOCKER.tmp:bench/debian:12" &&
		mv "$DEBIAN_DOCKER.tmp" "$DEBIAN_DOCKER" || say "  could not build it"
	rm -rf "$tmp"
fi
BIG_TGZ=$OUT/generated-1g.tar.gz
if [[ ! -s $BIG_TGZ ]]; then
	say "generating an image of about 1 GB (once)"
	python3 - "$BIG_TGZ" "$(fixture busybox.tar.gz)" <<-'PY'
		import io, os, sys, tarfile
		out, base = sys.argv[1], sys.argv[2]
		with tarfile.open(base) as src, tarfile.open(out + ".tmp", "w:gz", compresslevel=1) as dst:
		    for m in src.getmembers():
		        dst.addfile(m, src.extractfile(m) if m.isfile() else None)
		    blob = os.urandom(64 * 1024) * 4          # 256 KiB, compressible 4:1
		    for i in range(4000):
		        t = tarfile.TarInfo("data/f%05d" % i)
		        t.size = len(blob)
		        dst.addfile(t, io.BytesIO(blob))
		os.rename(out + ".tmp", out)
	PY
fi

# ---- 1. a cache hit against a directory -----------------------------------------------
# Two launches 0.3 ms apart on a machine whose timings drift by more than
# that within a minute: four rounds in alternating order, pooled, so that
# drift does not favour whichever command ran second.
header "1. cache hit of the Debian minbase .tar.gz vs the same tree as a directory, 4 x $RUNS runs, alternating"
rm -rf "$CACHE"
GPURUN_CACHE=$CACHE "$GPURUN" --quiet "$DEBIAN_TGZ" /bin/true
hit=(-n cached-tar.gz "$GPURUN $DEBIAN_TGZ /bin/true") dir=(-n directory "$GPURUN $DEBIAN_DIR /bin/true")
for round in 1 2 3 4; do
	if ((round % 2)); then order=("${hit[@]}" "${dir[@]}"); else order=("${dir[@]}" "${hit[@]}"); fi
	GPURUN_CACHE=$CACHE hyperfine -N --style none --warmup 10 --runs "$RUNS" \
		--export-json "$OUT/cache-hit.$round.json" "${order[@]}" </dev/null >/dev/null
done
python3 - "$OUT/cache-hit.json" "$OUT"/cache-hit.[1-4].json <<-'PY'
	import json, statistics, sys
	out, parts = sys.argv[1], sys.argv[2:]
	pooled = {}
	for p in parts:
	    for r in json.load(open(p))["results"]:
	        pooled.setdefault(r["command"], []).extend(r["times"])
	results = [{"command": c, "times": t, "median": statistics.median(t), "mean": statistics.mean(t),
	            "stddev": statistics.stdev(t)} for c, t in pooled.items()]
	json.dump({"results": results}, open(out, "w"))
PY
$RATIOS "$OUT/cache-hit.json" cached-tar.gz 'directory<=1.1'

# ---- 2. first launch: docker save vs flat .tar.gz ----------------------------------------
header "2. first launch (empty cache): docker save archive vs flat .tar.gz, $COLD_RUNS runs"
if [[ -s $DEBIAN_DOCKER ]]; then
	GPURUN_CACHE=$CACHE hyperfine -N --style basic --warmup 1 --runs "$COLD_RUNS" \
		--prepare "sh -c 'rm -rf $CACHE && sync'" --export-json "$OUT/first-docker.json" \
		-n docker-save "$GPURUN --quiet $DEBIAN_DOCKER /bin/true" \
		-n flat-tar.gz "$GPURUN --quiet $DEBIAN_TGZ /bin/true" </dev/null
	$RATIOS "$OUT/first-docker.json" docker-save 'flat-tar.gz<=1.1'
fi

# ---- 3. memory -------------------------------------------------------------------------
header "3. peak RSS of a first launch of the 1 GB image"
rm -rf "$CACHE"
rss=$( { GPURUN_CACHE=$CACHE /usr/bin/time -f '%M' "$GPURUN" --quiet "$BIG_TGZ" /bin/true; } 2>&1 | tail -n 1)
unpacked=$(du -sm "$CACHE/layers" | cut -f1)
say "  gpurun max RSS: $((rss / 1024)) MB while unpacking ${unpacked} MB"
if ((rss < 64 * 1024)); then say "  PASS under 64 MB"; else say "  MISS not under 64 MB"; fi

# ---- 4. growth -------------------------------------------------------------------------
header "4. first and cached launch by image size ($COLD_RUNS first / $RUNS cached runs)"
printf '  %-22s %10s %12s %12s\n' image archive "first" cached
for spec in "busybox:$(fixture busybox.tar.gz)" "debian-minbase:$DEBIAN_TGZ" "generated-1g:$BIG_TGZ"; do
	name=${spec%%:*} img=${spec#*:}
	GPURUN_CACHE=$CACHE hyperfine -N --style none --warmup 1 --runs "$COLD_RUNS" --prepare "sh -c 'rm -rf $CACHE && sync'" \
		--export-json "$OUT/grow-first-$name.json" "$GPURUN --quiet $img /bin/true" </dev/null >/dev/null
	GPURUN_CACHE=$CACHE hyperfine -N --style none --warmup 5 --runs "$RUNS" \
		--export-json "$OUT/grow-hit-$name.json" "$GPURUN --quiet $img /bin/true" </dev/null >/dev/null
	first=$(python3 -c 'import json,sys; print("%.1f ms" % (json.load(open(sys.argv[1]))["results"][0]["median"]*1000))' "$OUT/grow-first-$name.json")
	hit=$(python3 -c 'import json,sys; print("%.2f ms" % (json.load(open(sys.argv[1]))["results"][0]["median"]*1000))' "$OUT/grow-hit-$name.json")
	printf '  %-22s %10s %12s %12s\n' "$name" "$(du -h "$img" | cut -f1)" "$first" "$hit"
done
rm -rf "$CACHE"
exit 0
