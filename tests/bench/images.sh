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
#   4. scale: the first launch (an empty cache before every run) and the
#      repeated launch (a cache hit) of images of growing size: the busybox
#      .tar.gz (1 MB), Debian minbase (93 MB) and the generated 1 GB image,
#      each beside its peer in the same hyperfine run: for the first launch
#      bsdtar, and GNU tar, into a fresh tmpfs then bwrap (tarbwrap.sh), for
#      the repeated one bwrap on the image unpacked in a directory.
#
# Sections 1-3 are the rows of the docs/performance.md table between bench:images:begin
# and bench:images:end (tests/build/bench/images.md), section 4 those
# between bench:scale:begin and bench:scale:end (scale.md); ratios.py
# splices both (BENCH_DOCS=0 leaves docs/performance.md alone).
#
# Knobs: BENCH_COLD_RUNS (default 10; the 1 GB image's first launch at most
# 3), BENCH_RUNS (default 100), GPURUN.
# Needs $OUT/debian-bookworm-minbase.tar.gz from run.sh.
set -uo pipefail
cd "$(dirname "$0")/../.." || exit 2
REPO=$(pwd)
GPURUN=${GPURUN:-$REPO/gpurun}
OUT=$REPO/tests/build/bench
RUNS=${BENCH_RUNS:-100}
COLD_RUNS=${BENCH_COLD_RUNS:-10}
RATIOS="python3 $REPO/tests/bench/ratios.py"
TARBWRAP=$REPO/tests/bench/tarbwrap.sh
CACHE=$OUT/cache
PEER_DISK=$OUT/peer-root # bsdtar-disk+bwrap unpacks here, on the disk the cache is on
HEAD="| measurement | gpurun median ± sd (CPU) | peer median ± sd (CPU), same hyperfine run | ratio | target |
|---|---|---|---|---|"
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
bash tests/bench/bigimage.sh "$BIG_TGZ" || exit 1
# Its tree as a directory, for bwrap (the peer of a cache hit).
BIG_DIR=$OUT/generated-1g-dir
if [[ ! -d $BIG_DIR/data ]]; then
	rm -rf "$BIG_DIR" "$BIG_DIR.tmp" && mkdir -p "$BIG_DIR.tmp" &&
		tar --numeric-owner -C "$BIG_DIR.tmp" -xzf "$BIG_TGZ" && mv "$BIG_DIR.tmp" "$BIG_DIR"
fi
echo "$HEAD" >"$OUT/images.md"

# Every first launch below fills the cache, which fsyncs: the images made
# above go to the disk first, not during those launches.
sync

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
$RATIOS --pool "$OUT/cache-hit.json" "$OUT"/cache-hit.[1-4].json
$RATIOS "$OUT/cache-hit.json" cached-tar.gz 'directory<=1.1' --md "$OUT/images.md" \
	"Debian minbase \`.tar.gz\`, cache hit (4 alternating rounds of $RUNS launches, pooled) against the same tree as a directory"

# ---- 2. first launch: docker save vs flat .tar.gz ----------------------------------------
header "2. first launch (empty cache): docker save archive vs flat .tar.gz, $COLD_RUNS runs"
if [[ -s $DEBIAN_DOCKER ]]; then
	GPURUN_CACHE=$CACHE hyperfine -N --style basic --warmup 1 --runs "$COLD_RUNS" \
		--prepare "sh -c 'rm -rf $CACHE && sync'" --export-json "$OUT/first-docker.json" \
		-n docker-save "$GPURUN --quiet $DEBIAN_DOCKER /bin/true" \
		-n flat-tar.gz "$GPURUN --quiet $DEBIAN_TGZ /bin/true" </dev/null
	$RATIOS "$OUT/first-docker.json" docker-save 'flat-tar.gz<=1.1' --md "$OUT/images.md" \
		"first launch (empty cache), \`docker save\` archive of Debian minbase against the flat \`.tar.gz\`"
fi

# ---- 3. memory -------------------------------------------------------------------------
header "3. peak RSS of a first launch of the 1 GB image"
rm -rf "$CACHE"
rss=$( { GPURUN_CACHE=$CACHE /usr/bin/time -f '%M' "$GPURUN" --quiet "$BIG_TGZ" /bin/true; } 2>&1 | tail -n 1)
unpacked=$(du -sm "$CACHE/layers" | cut -f1)
say "  gpurun max RSS: $((rss / 1024)) MB while unpacking ${unpacked} MB"
if ((rss < 64 * 1024)); then verdict="PASS under 64 MB"; else verdict="MISS not under 64 MB"; fi
say "  $verdict"
echo "| peak RSS, first launch of the generated 1 GB image (${unpacked} MB unpacked) | $((rss / 1024)) MB | | | $verdict |" >>"$OUT/images.md"

# ---- 4. scale -------------------------------------------------------------------------
# The first launch writes the image into the cache on disk (the sync in
# --prepare keeps one run's writeback out of the next); its peers unpack
# into memory, which is cheaper than any disk, or (bsdtar-disk) into a
# directory beside the cache, then run bwrap.
echo "$HEAD" >"$OUT/scale.md"
for spec in "busybox.tar.gz:$(fixture busybox.tar.gz):$(fixture busybox)" \
	"debian-minbase.tar.gz:$DEBIAN_TGZ:$DEBIAN_DIR" "generated-1g.tar.gz:$BIG_TGZ:$BIG_DIR"; do
	IFS=: read -r name img dir <<<"$spec"
	size=$(stat -c %s "$img" | awk '{ printf($1 < 1e7 ? "%.1f MB" : "%.0f MB", $1 / 1e6) }')
	runs=$COLD_RUNS
	[[ $name == generated-1g.tar.gz ]] && ((runs > 3)) && runs=3
	header "4. scale: first launch of $name ($size), empty cache each run, $runs runs"
	GPURUN_CACHE=$CACHE hyperfine -N --style basic --warmup 1 --runs "$runs" \
		--prepare "sh -c 'rm -rf $CACHE $PEER_DISK && sync'" --export-json "$OUT/scale-first-$name.json" \
		-n gpurun "$GPURUN --quiet $img /bin/true" \
		-n bsdtar-disk+bwrap "env TARBWRAP_ROOT=$PEER_DISK $TARBWRAP bsdtar $img /bin/true" \
		-n bsdtar+bwrap "$TARBWRAP bsdtar $img /bin/true" \
		-n tar+bwrap "$TARBWRAP tar $img /bin/true" </dev/null
	$RATIOS "$OUT/scale-first-$name.json" gpurun --md "$OUT/scale.md" \
		"first launch, $name ($size), an empty cache each run (peers: unpack into a directory on the cache's disk, or into a tmpfs, then bwrap)"
	header "4. scale: repeated launch of $name (cache hit), $RUNS runs"
	GPURUN_CACHE=$CACHE "$GPURUN" --quiet "$img" /bin/true </dev/null
	GPURUN_CACHE=$CACHE hyperfine -N --style basic --warmup 5 --runs "$RUNS" \
		--export-json "$OUT/scale-hit-$name.json" \
		-n gpurun "$GPURUN --quiet $img /bin/true" \
		-n bwrap-dir "bwrap --unshare-pid --unshare-ipc --bind $dir / --proc /proc --dev /dev /bin/true" </dev/null
	$RATIOS "$OUT/scale-hit-$name.json" gpurun --md "$OUT/scale.md" \
		"repeated launch, $name (cache hit; peer: bwrap on the tree unpacked in a directory)"
done
rm -rf "$CACHE" "$PEER_DISK"
if [[ "${BENCH_DOCS:-1}" != 0 ]]; then
	$RATIOS --splice "$REPO/docs/performance.md" "$OUT/images.md" images && say "docs/performance.md: the bench:images table regenerated"
	$RATIOS --splice "$REPO/docs/performance.md" "$OUT/scale.md" scale && say "docs/performance.md: the bench:scale table regenerated"
fi
exit 0
