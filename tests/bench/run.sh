#!/usr/bin/env bash
# tests/bench/run.sh — launch benchmarks (`make bench`).  One run prints,
# for each scenario, every command's median and its ratio to gpurun, and
# PASS/MISS for the targets:
#
#   1. warm launch of /bin/true from an unpacked directory (busybox rootfs):
#      gpurun vs bwrap (same namespaces: pid, ipc, mount), the seed
#      walkthrough as a script (walkthrough.sh), crun and runc (pid, ipc and
#      mount namespaces only, no cgroups for crun); then the same as the
#      unprivileged user gpurun-test (setpriv), gpurun vs bwrap --unshare-user.
#      Targets: gpurun no slower than bwrap (median); faster than crun.
#      As root, tests/bench/cpu.sh then splits the CPU of that launch by
#      process and mode from perf samples (target: gpurun's own user CPU
#      under 1 ms per launch; its own table, bench:cpu).
#   2. cold launch with --no-cache (what a cache miss pays) from busybox
#      .tar.gz (busybox alone, 1.0 MB as in the issue, and the test fixture,
#      which adds the tests' probe: 1.4 MB), and Debian bookworm minbase
#      (built with debootstrap, cached in tests/build/bench) as .tar.gz,
#      .tar.zst and plain .tar: gpurun vs bsdtar, and GNU tar, into a fresh
#      tmpfs followed by bwrap (tarbwrap.sh).
#      Targets: busybox alone at most 12 ms, Debian .tar.gz 450 ms, .tar.zst
#      300 ms.
#   3. tests/bench/gpu.sh, when present (the GPU engineer's).
#
# Each hyperfine run measures gpurun and its peers together (ratios from one
# run; the warm launches of section 1, a few ms each, in four alternating
# rounds pooled, see bench_rounds); every row of docs/performance.md's table between its bench:begin/bench:end
# markers comes from these runs (ratios.py --md, spliced at the end).  The
# other scripts splice their own tables (bench:cpu, bench:images,
# bench:scale, bench:registry, bench:slurm, bench:gpu) the same way.
#
# Knobs: BENCH_RUNS (warm, default 400), BENCH_COLD_RUNS (default 10),
# BENCH_SKIP_DEBIAN=1, GPURUN (binary, default ./gpurun), BENCH_DOCS=0
# (leave docs/performance.md alone), BENCH_QUICK=1 (sections 1 and 2 only,
# unless BENCH_ONLY names other parts), BENCH_ONLY=PART[,PART...] (only
# those: launch, sections 1 and 2; images; registry; slurm; gpu).  The
# Slurm part runs under `flock /tmp/gpurun-slurm.lock`, the lock a run of
# tests/slurm.bats is wrapped in: one one-node Slurm on the machine at a
# time.
# Results: tests/build/bench/*.json (hyperfine --export-json), table.md.
set -uo pipefail

cd "$(dirname "$0")/../.." || exit 2
REPO=$(pwd)
GPURUN=${GPURUN:-$REPO/gpurun}
TESTS_BUILD=$REPO/tests/build
OUT=$TESTS_BUILD/bench
# 400 warm launches of each command, not 100: three runs of the
# unprivileged comparison in a row gave 1.056x, 1.00x and 0.854x with 100
# launches each (4 x 25), and 0.94x, 0.944x and 0.991x with 300 (4 x 75).
RUNS=${BENCH_RUNS:-400}
COLD_RUNS=${BENCH_COLD_RUNS:-10}
WALK=$REPO/tests/bench/walkthrough.sh
TARBWRAP=$REPO/tests/bench/tarbwrap.sh
RATIOS="python3 $REPO/tests/bench/ratios.py"
mkdir -p "$OUT"
TABLE=$OUT/table.md
{
	echo "| launch | gpurun median ± sd (CPU) | peer median ± sd (CPU), same hyperfine run | ratio | target |"
	echo "|---|---|---|---|---|"
} >"$TABLE"
# shellcheck source=../lib/images.bash
source tests/lib/images.bash

say() { printf '%s\n' "$*"; }
header() { printf '\n==== %s ====\n' "$*"; }

PARTS="launch images registry slurm gpu"
only=${BENCH_ONLY:-}
for part in ${only//,/ }; do
	[[ " $PARTS " == *" $part "* ]] || {
		say "bench: BENCH_ONLY: no part '$part' (the parts: ${PARTS// /, })"
		exit 2
	}
done
# want PART: BENCH_ONLY is unset or names PART.
want() {
	[[ -z ${BENCH_ONLY:-} || ",$BENCH_ONLY," == *",$1,"* ]]
}
# The parts after the launch sections, each script splicing its own tables.
others() {
	want images && GPURUN=$GPURUN bash tests/bench/images.sh
	want registry && GPURUN=$GPURUN bash tests/bench/registry.sh
	# The one-node Slurm listens on fixed ports: one at a time on the
	# machine, whoever starts it (a run of tests/slurm.bats is wrapped in
	# the same lock).
	want slurm && GPURUN=$GPURUN flock /tmp/gpurun-slurm.lock bash tests/bench/slurm.sh
	if want gpu && [[ -f tests/bench/gpu.sh ]]; then
		header "3. GPU launch (tests/bench/gpu.sh)"
		GPURUN=$GPURUN sh tests/bench/gpu.sh
	fi
	return 0
}

command -v hyperfine >/dev/null || {
	say "bench: hyperfine is missing (make deps-bench)"
	exit 2
}
[[ -x "$GPURUN" ]] || {
	say "bench: $GPURUN is missing (make gpurun)"
	exit 2
}
ROOT=0
[[ $(id -u) -eq 0 ]] && ROOT=1
if ! want launch; then
	others
	exit 0
fi
[[ $ROOT -eq 1 ]] || say "bench: not root: the walkthrough, crun and runc need root and are left out"

# Commands that fail are left out with their error, so one broken runtime
# does not hide the others.
NAMES=() CMDS=()
add() {
	local name=$1 cmd=$2 err
	if ! err=$(bash -c "$cmd" 2>&1 </dev/null); then
		say "  $name: left out, it fails here: $(printf '%s' "$err" | tail -n 2 | tr '\n' ' ')"
		return 1
	fi
	NAMES+=("$name")
	CMDS+=("$cmd")
}

# bench JSON RUNS WARMUP: one hyperfine run over NAMES/CMDS.
bench() {
	local json=$1 runs=$2 warmup=$3 args=() i
	for i in "${!NAMES[@]}"; do
		args+=(-n "${NAMES[i]}" "${CMDS[i]}")
	done
	hyperfine -N --style basic --warmup "$warmup" --runs "$runs" --export-json "$json" "${args[@]}" \
		</dev/null || say "bench: hyperfine failed"
}

# bench_rounds JSON RUNS WARMUP: the same over 4 hyperfine runs of RUNS/4
# launches each, in alternating order (forward, backward, ...), pooled into
# JSON.  For launches a few ms long on a machine whose speed drifts by more
# than the difference within a minute: in one run of 100 launches of each
# command in a row, bwrap's median moved from 5.97 to 4.25 ms between two
# make bench runs an hour apart, and whichever command ran in the faster
# minute won.
bench_rounds() {
	local json=$1 runs=$2 warmup=$3 args=() rargs=() i r per
	per=$(((runs + 3) / 4))
	for i in "${!NAMES[@]}"; do
		args+=(-n "${NAMES[i]}" "${CMDS[i]}")
		rargs=(-n "${NAMES[i]}" "${CMDS[i]}" "${rargs[@]}")
	done
	for r in 1 2 3 4; do
		if ((r % 2)); then set -- "${args[@]}"; else set -- "${rargs[@]}"; fi
		hyperfine -N --style none --warmup "$warmup" --runs "$per" --export-json "$json.$r" "$@" \
			</dev/null >/dev/null || say "bench: hyperfine failed"
	done
	$RATIOS --pool "$json" "$json".[1-4] && rm -f "$json".[1-4]
}

# taskclock CMD: CPU time per launch in ms, every process and thread of it
# (perf stat -r, inherited counters).  hyperfine's user/system come from
# getrusage(RUSAGE_CHILDREN), which misses processes reaped inside a pid
# namespace by a parent that is not waited for (bwrap's), so CPU
# comparisons use perf when it is installed.
taskclock() {
	perf stat -r "$RUNS" -x, -e task-clock "$@" 2>&1 >/dev/null </dev/null |
		awk -F, '$3 == "task-clock" || $3 ~ /^task-clock/ { printf "%.2f", $1 }'
}

# cpu_rows LABEL NAME CMD NAME CMD: gpurun's and its peer's task-clock, one
# after the other, alternating twice; a table row and a line.
cpu_rows() {
	local label=$1 n1=$2 c1=$3 n2=$4 c2=$5 a1 b1 a2 b2
	command -v perf >/dev/null || {
		say "  (perf is not installed: no CPU-time comparison)"
		return 0
	}
	a1=$(taskclock $c1) b1=$(taskclock $c2) b2=$(taskclock $c2) a2=$(taskclock $c1)
	[[ -n "$a1" && -n "$b1" ]] || return 0
	say "  CPU per launch (perf stat task-clock, ms): $n1 $a1, $a2; $n2 $b1, $b2"
	python3 - "$TABLE" "$label" "$n1" "$a1" "$a2" "$n2" "$b1" "$b2" <<-'PY'
		import sys
		table, label, n1, a1, a2, n2, b1, b2 = sys.argv[1:]
		a = (float(a1) + float(a2)) / 2
		b = (float(b1) + float(b2)) / 2
		with open(table, "a") as f:
		    f.write(f"| {label}: CPU per launch, all processes (perf stat task-clock, 2 alternating runs each) "
		            f"| {a1} / {a2} ms | {n2} {b1} / {b2} ms | {a / b:.2f}x | |\n")
	PY
}

# An OCI bundle for crun and runc whose root is DIR and whose process is
# /bin/true, with the same namespaces as gpurun (pid, ipc, mount).
make_bundle() {
	local dir=$1 bundle=$2
	rm -rf "$bundle" && mkdir -p "$bundle"
	(cd "$bundle" && crun spec) || return 1
	python3 - "$bundle/config.json" "$dir" <<-'PY'
		import json, sys
		path, root = sys.argv[1], sys.argv[2]
		c = json.load(open(path))
		c["root"] = {"path": root, "readonly": True}
		c["process"]["args"] = ["/bin/true"]
		c["process"]["terminal"] = False
		c.pop("hostname", None)  # no UTS namespace
		c["linux"]["namespaces"] = [n for n in c["linux"]["namespaces"]
		                            if n["type"] in ("pid", "ipc", "mount")]
		json.dump(c, open(path, "w"), indent=1)
	PY
}

# ---- 1. warm launch from a directory ----------------------------------------
header "1. launch /bin/true from an unpacked directory (busybox rootfs), $RUNS runs"
BUSYBOX_DIR=$(fixture busybox) || exit 2
NAMES=() CMDS=()
add gpurun "$GPURUN $BUSYBOX_DIR /bin/true" || exit 1
if [[ $ROOT -eq 1 ]]; then
	add bwrap "bwrap --unshare-pid --unshare-ipc --bind $BUSYBOX_DIR / --proc /proc --dev /dev /bin/true"
	add walkthrough "$WALK $BUSYBOX_DIR /bin/true"
	if make_bundle "$BUSYBOX_DIR" "$OUT/oci-bundle"; then
		# crun 1.8.1 refuses the mixed cgroup v1/v2 layout of some hosts: hide
		# the v2 mount in a private mount namespace (the wrapper costs ~1 ms,
		# charged to crun).
		add crun "unshare -m sh -c 'umount -l /sys/fs/cgroup/unified 2>/dev/null; exec crun --cgroup-manager=disabled run -b $OUT/oci-bundle gpurun-bench-\$\$'"
		runc delete -f gpurun-bench-runc >/dev/null 2>&1
		add runc "runc run -b $OUT/oci-bundle gpurun-bench-runc"
	else
		say "  crun, runc: left out, crun spec failed"
	fi
else
	add bwrap "bwrap --unshare-user --unshare-pid --unshare-ipc --bind $BUSYBOX_DIR / --proc /proc --dev /dev /bin/true"
fi
bench_rounds "$OUT/warm-dir.json" "$RUNS" 10
$RATIOS "$OUT/warm-dir.json" gpurun 'bwrap<=1.0' 'crun>' \
	--md "$TABLE" "\`/bin/true\` from an unpacked busybox directory, $( ((ROOT)) && echo root || echo unprivileged) (4 alternating rounds, pooled)"
if [[ $ROOT -eq 1 ]]; then
	cpu_rows "same" gpurun "$GPURUN $BUSYBOX_DIR /bin/true" \
		bwrap "bwrap --unshare-pid --unshare-ipc --bind $BUSYBOX_DIR / --proc /proc --dev /dev /bin/true"
	GPURUN=$GPURUN bash tests/bench/cpu.sh
fi

# The same launch by an unprivileged user (a user namespace for both).
if [[ $ROOT -eq 1 ]] && id gpurun-test >/dev/null 2>&1; then
	header "1b. the same, as the unprivileged user gpurun-test, $RUNS runs"
	AS_USER="setpriv --reuid=gpurun-test --regid=gpurun-test --clear-groups"
	NAMES=() CMDS=()
	add gpurun "$AS_USER $GPURUN $BUSYBOX_DIR /bin/true" &&
		add bwrap "$AS_USER bwrap --unshare-user --unshare-pid --unshare-ipc --bind $BUSYBOX_DIR / --proc /proc --dev /dev /bin/true" &&
		bench_rounds "$OUT/warm-dir-user.json" "$RUNS" 10 &&
		$RATIOS "$OUT/warm-dir-user.json" gpurun 'bwrap<=1.0' \
			--md "$TABLE" "same, unprivileged (both under \`setpriv\` to the user gpurun-test)" &&
		cpu_rows "same, unprivileged" gpurun "$AS_USER $GPURUN $BUSYBOX_DIR /bin/true" \
			bwrap "$AS_USER bwrap --unshare-user --unshare-pid --unshare-ipc --bind $BUSYBOX_DIR / --proc /proc --dev /dev /bin/true"
fi

# ---- 2. cold launch from a tarball ----------------------------------------------
# cold LABEL TARBALL [TARGET_MS [RUNS [WARMUP]]]
cold() {
	local label=$1 tarball=$2 limit=$3
	header "2. cold launch of /bin/true from $label ($(du -h "$tarball" | cut -f1)), ${4:-$COLD_RUNS} runs"
	NAMES=() CMDS=()
	# --no-cache: what a cache miss pays (tests/bench/images.sh measures
	# the cache).
	add gpurun "$GPURUN --no-cache $tarball /bin/true" || return 1
	if [[ $ROOT -eq 1 ]]; then
		command -v bsdtar >/dev/null && add bsdtar+bwrap "$TARBWRAP bsdtar $tarball /bin/true"
		add tar+bwrap "$TARBWRAP tar $tarball /bin/true"
	fi
	# Launches of a few ms (busybox: 100 runs) in alternating rounds, as in
	# section 1: in one run of 40 each in a row, the 1.0 MB image once
	# measured 16.5 ms and the 1.4 MB one, run a minute later, 14.8 ms.
	local runs=${4:-$COLD_RUNS} how=""
	if ((runs >= 20)); then
		bench_rounds "$OUT/cold-$label.json" "$runs" "${5:-2}"
		how=", 4 alternating rounds, pooled"
	else
		bench "$OUT/cold-$label.json" "$runs" "${5:-2}"
	fi
	$RATIOS "$OUT/cold-$label.json" gpurun ${limit:+"<=${limit}ms"} 'bsdtar+bwrap<=1.0' \
		--md "$TABLE" "\`--no-cache\`, $label ($(du -h "$tarball" | cut -f1)$how)"
}

# The issue's busybox image, "busybox .tar.gz (1 MB)": busybox, a link for
# each applet and the tests' skeleton (build_busybox_base), 1.0 MB.  The test
# fixture busybox.tar.gz is the same plus the tests' static probe, 1.4 MB:
# measured too, without a target.
BUSYBOX_ONLY_TGZ=$OUT/busybox-only.tar.gz
build_busybox_only() {
	# shellcheck disable=SC2153 # BUSYBOX_BIN comes from tests/lib/images.bash
	[[ -s "$BUSYBOX_ONLY_TGZ" && "$BUSYBOX_ONLY_TGZ" -nt "$BUSYBOX_BIN" ]] && return 0
	local dir tmp=$OUT/.busybox-only.tmp.tar.gz rc=0
	dir=$(mktemp -d "$OUT/busybox-only.XXXXXX") || return 1
	{ build_busybox_base "$dir" && tar_from_dir "$dir" "$tmp" && mv "$tmp" "$BUSYBOX_ONLY_TGZ"; } || rc=1
	rm -rf "$dir" "$tmp"
	return $rc
}

# A busybox launch takes milliseconds, and this VM's speed swings by a third
# from one minute to the next: 100 runs, not BENCH_COLD_RUNS, for its median.
if build_busybox_only; then
	cold busybox-only.tar.gz "$BUSYBOX_ONLY_TGZ" 12 100
else
	say "bench: could not build $BUSYBOX_ONLY_TGZ"
fi
cold busybox.tar.gz "$(fixture busybox.tar.gz)" "" 100

# The Debian mirror apt is configured with (deb822 or one-line format).
debian_mirror() {
	local m
	m=$(grep -hs '^URIs:' /etc/apt/sources.list.d/*.sources | awk '{print $2}' |
		grep -v -- '-security' | grep -m1 debian)
	[[ -n "$m" ]] || m=$(grep -hs '^deb ' /etc/apt/sources.list /etc/apt/sources.list.d/*.list |
		awk '{print $2}' | grep -v -- '-security' | grep -m1 debian)
	echo "${m:-http://deb.debian.org/debian}"
}

DEBIAN_TGZ=$OUT/debian-bookworm-minbase.tar.gz
if [[ "${BENCH_SKIP_DEBIAN:-0}" == 1 ]]; then
	say "" "2. Debian minbase: skipped (BENCH_SKIP_DEBIAN=1)"
elif [[ ! -s "$DEBIAN_TGZ" && $ROOT -ne 1 ]]; then
	say "" "2. Debian minbase: skipped: building it with debootstrap needs root"
elif [[ ! -s "$DEBIAN_TGZ" ]] && ! command -v debootstrap >/dev/null; then
	say "" "2. Debian minbase: skipped: debootstrap is not installed (make deps-bench)"
else
	if [[ ! -s "$DEBIAN_TGZ" ]]; then
		mirror=$(debian_mirror)
		say "" "building the Debian bookworm minbase image with debootstrap from $mirror (once; cached in $DEBIAN_TGZ)"
		rootfs=$(mktemp -d "$OUT/debian.XXXXXX")
		if debootstrap --variant=minbase bookworm "$rootfs" "$mirror" >"$OUT/debootstrap.log" 2>&1 </dev/null &&
			tar --numeric-owner -C "$rootfs" -czf "$DEBIAN_TGZ.tmp" . && mv "$DEBIAN_TGZ.tmp" "$DEBIAN_TGZ"; then
			say "built $DEBIAN_TGZ"
		else
			say "2. Debian minbase: skipped: debootstrap could not build it from $mirror" \
				"(no network to the mirror?); last lines of $OUT/debootstrap.log:"
			tail -n 3 "$OUT/debootstrap.log"
			rm -f "$DEBIAN_TGZ.tmp"
		fi
		rm -rf "$rootfs"
	fi
	if [[ -s "$DEBIAN_TGZ" ]]; then
		cold debian-minbase.tar.gz "$DEBIAN_TGZ" 450
		DEBIAN_ZST=${DEBIAN_TGZ%.gz}.zst
		if [[ ! -s "$DEBIAN_ZST" ]] && command -v zstd >/dev/null; then
			gzip -dc "$DEBIAN_TGZ" | zstd -q -3 -o "$DEBIAN_ZST.tmp" && mv "$DEBIAN_ZST.tmp" "$DEBIAN_ZST"
		fi
		[[ -s "$DEBIAN_ZST" ]] && cold debian-minbase.tar.zst "$DEBIAN_ZST" 300
		# The same tree as a plain tar (what `docker export` writes): no
		# target in the issue, measured against the same peers.
		DEBIAN_TAR=${DEBIAN_TGZ%.gz}
		if [[ ! -s "$DEBIAN_TAR" ]]; then
			gzip -dc "$DEBIAN_TGZ" >"$DEBIAN_TAR.tmp" && mv "$DEBIAN_TAR.tmp" "$DEBIAN_TAR" ||
				rm -f "$DEBIAN_TAR.tmp"
		fi
		[[ -s "$DEBIAN_TAR" ]] && cold debian-minbase.tar "$DEBIAN_TAR" ""
	fi
fi

# The largest image, of about 1 GB, made here if images.sh (which runs
# later) has not made it yet, so that a new machine's first run has its
# row too; not with BENCH_QUICK=1, which it would slow by a minute.
BIG_TGZ=$OUT/generated-1g.tar.gz
if [[ "${BENCH_QUICK:-0}" != 1 ]] && bash tests/bench/bigimage.sh "$BIG_TGZ"; then
	cold generated-1g.tar.gz "$BIG_TGZ" "" 3 1
fi

# ---- 2b. concurrent launches ------------------------------------------------------
# concurrent N CMD...: start N copies at once; prints "SUCCEEDED MILLISECONDS".
concurrent() {
	local n=$1 i ok=0 start pids=()
	shift
	start=$(date +%s%N)
	for ((i = 0; i < n; i++)); do
		"$@" >/dev/null 2>&1 </dev/null &
		pids+=($!)
	done
	for i in "${pids[@]}"; do
		wait "$i" && ok=$((ok + 1))
	done
	echo "$ok $((($(date +%s%N) - start) / 1000000))"
}
if [[ $ROOT -eq 1 ]]; then
	header "2b. 50 concurrent launches of busybox.tar.gz into an empty cache, 3 rounds"
	# The cache's commits fsync: the images this script has just written
	# (Debian's, the 1 GB one) must not be still on their way to the disk.
	# In one run they were, and 50 launches took 274 ms against 108-119 ms
	# a minute later with nothing written before.
	sync
	CONC_CACHE=$(mktemp -d "$OUT/conc-cache.XXXXXX")
	BUSYBOX_TGZ=$(fixture busybox.tar.gz)
	g=() b=()
	for _ in 1 2 3; do
		rm -rf "$CONC_CACHE" && mkdir -p "$CONC_CACHE"
		g+=("$(GPURUN_CACHE=$CONC_CACHE concurrent 50 "$GPURUN" --quiet "$BUSYBOX_TGZ" /bin/true)")
		b+=("$(concurrent 50 bwrap --unshare-pid --unshare-ipc --bind "$BUSYBOX_DIR" / --proc /proc --dev /dev /bin/true)")
	done
	rm -rf "$CONC_CACHE"
	python3 - "$TABLE" "${g[@]}" "${b[@]}" <<-'PY'
		import statistics, sys
		table, runs = sys.argv[1], [tuple(map(int, r.split())) for r in sys.argv[2:]]
		g, b = runs[:3], runs[3:]
		gok, bok = min(r[0] for r in g), min(r[0] for r in b)
		gms, bms = statistics.median(r[1] for r in g), statistics.median(r[1] for r in b)
		verdict = "PASS all 50 succeeded" if gok == 50 else f"MISS only {gok} of 50 succeeded"
		print(f"  gpurun: {[r[1] for r in g]} ms, {gok}/50 ok; bwrap on the directory: {[r[1] for r in b]} ms, {bok}/50 ok")
		print(f"  {verdict}")
		with open(table, "a") as f:
		    f.write(f"| 50 concurrent launches of busybox.tar.gz into an empty cache (total, median of 3 rounds: "
		            f"{', '.join(str(r[1]) for r in g)} ms) | {gms:.0f} ms | 50 concurrent bwrap on the unpacked "
		            f"directory {bms:.0f} ms ({', '.join(str(r[1]) for r in b)} ms) | {gms / bms:.2f}x | {verdict} |\n")
	PY
fi

# docs/performance.md's table is these runs' rows, not figures typed by hand.
if [[ "${BENCH_DOCS:-1}" != 0 ]]; then
	$RATIOS --splice "$REPO/docs/performance.md" "$TABLE" && say "" "docs/performance.md: benchmark table regenerated from $TABLE"
fi

[[ "${BENCH_QUICK:-0}" == 1 && -z ${BENCH_ONLY:-} ]] && exit 0

# ---- images and the cache, the registry, Slurm, 3. GPU ----------------------------
others
exit 0
