#!/usr/bin/env bash
# tests/bench/run.sh — launch benchmarks (`make bench`).  One run prints,
# for each scenario, every command's median and its ratio to gpurun, and
# PASS/MISS for the targets:
#
#   1. warm launch of /bin/true from an unpacked directory (busybox rootfs):
#      gpurun vs bwrap (same namespaces: pid, ipc, mount), the seed
#      walkthrough as a script (walkthrough.sh), crun and runc (pid, ipc and
#      mount namespaces only, no cgroups for crun).
#      Targets: gpurun within 1.5x of bwrap's median; faster than crun.
#   2. cold launch from a .tar.gz (busybox, and Debian bookworm minbase built
#      with debootstrap and cached in tests/build/bench): gpurun vs tar -xzf
#      into a fresh tmpfs followed by the same walkthrough.
#      Target: gpurun no slower than tar + walkthrough.
#   3. tests/bench/gpu.sh, when present (the GPU engineer's).
#
# Knobs: BENCH_RUNS (warm, default 100), BENCH_COLD_RUNS (default 10),
# BENCH_SKIP_DEBIAN=1, GPURUN (binary, default ./gpurun).
# Results: tests/build/bench/*.json (hyperfine --export-json).
set -uo pipefail

cd "$(dirname "$0")/../.." || exit 2
REPO=$(pwd)
GPURUN=${GPURUN:-$REPO/gpurun}
TESTS_BUILD=$REPO/tests/build
OUT=$TESTS_BUILD/bench
RUNS=${BENCH_RUNS:-100}
COLD_RUNS=${BENCH_COLD_RUNS:-10}
WALK=$REPO/tests/bench/walkthrough.sh
RATIOS="python3 $REPO/tests/bench/ratios.py"
mkdir -p "$OUT"
# shellcheck source=../lib/images.bash
source tests/lib/images.bash

say() { printf '%s\n' "$*"; }
header() { printf '\n==== %s ====\n' "$*"; }

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
bench "$OUT/warm-dir.json" "$RUNS" 10
$RATIOS "$OUT/warm-dir.json" gpurun 'bwrap<=1.5' 'crun>'

# ---- 2. cold launch from a tarball ----------------------------------------------
cold() {
	local label=$1 tarball=$2
	header "2. cold launch of /bin/true from $label ($(du -h "$tarball" | cut -f1)), $COLD_RUNS runs"
	NAMES=() CMDS=()
	# --no-cache: the cost a first launch paid before the cache, and pays
	# with --no-cache (tests/bench/images.sh measures the cache).
	add gpurun "$GPURUN --no-cache $tarball /bin/true" || return 1
	if [[ $ROOT -eq 1 ]]; then
		add tar+walkthrough "$WALK --tar $tarball /bin/true"
	fi
	bench "$OUT/cold-$label.json" "$COLD_RUNS" 2
	$RATIOS "$OUT/cold-$label.json" gpurun 'tar+walkthrough<=1.0'
}

cold busybox.tar.gz "$(fixture busybox.tar.gz)"

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
	[[ -s "$DEBIAN_TGZ" ]] && cold debian-minbase "$DEBIAN_TGZ"
fi

# ---- images and the cache ---------------------------------------------------------
GPURUN=$GPURUN bash tests/bench/images.sh
GPURUN=$GPURUN bash tests/bench/registry.sh

# ---- 3. GPU ---------------------------------------------------------------------
if [[ -f tests/bench/gpu.sh ]]; then
	header "3. GPU launch (tests/bench/gpu.sh)"
	GPURUN=$GPURUN sh tests/bench/gpu.sh
fi
exit 0
