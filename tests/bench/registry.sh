#!/usr/bin/env bash
# tests/bench/registry.sh — a pull from a registry, measured (`make bench`
# runs it after images.sh): `gpurun pull` of a multi-layer image of about
# 200 MB from Debian's docker-registry on 127.0.0.1 (TLS, no
# auth), into an empty cache, against `skopeo copy docker://... oci:DIR`
# followed by unpacking the layout, both from the same registry on the same
# machine (target: within 1.2x).  Two unpackers for the peer: `umoci raw
# unpack` (an OCI unpacker that applies whiteouts, as gpurun does) and plain
# `tar -xzf` of each layer in order (the cheapest possible, ignores them).
#
# The image: the busybox fixture as layer 1, then four layers of 50 MB each
# (200 files of 256 KiB of random data: gzip cannot shrink them, so about
# 200 MB cross the wire and 200 MB are unpacked).  Knobs: BENCH_COLD_RUNS
# (default 10), GPURUN.  Its rows are the docs/performance.md table between
# bench:registry:begin and bench:registry:end (tests/build/bench/registry.md,
# spliced by ratios.py; BENCH_DOCS=0 leaves docs/performance.md alone).
set -uo pipefail
cd "$(dirname "$0")/../.." || exit 2
REPO=$(pwd)
GPURUN=${GPURUN:-$REPO/gpurun}
OUT=$REPO/tests/build/bench
RUNS=${BENCH_COLD_RUNS:-10}
RATIOS="python3 $REPO/tests/bench/ratios.py"
export TESTS_BUILD=$REPO/tests/build
# shellcheck source=../lib/images.bash
source tests/lib/images.bash
# shellcheck source=../lib/registry.bash
source tests/lib/registry.bash

say() { printf '%s\n' "$*"; }
header() { printf '\n==== %s ====\n' "$*"; }

registry_require_tools || exit 0
command -v umoci >/dev/null || { say "bench registry: umoci is missing; skipped"; exit 0; }
mkdir -p "$OUT"

LAYOUT=$OUT/registry-200m
if [[ ! -s $LAYOUT/index.json ]]; then
	say "generating a 5-layer image of about 200 MB (once)"
	rm -rf "$LAYOUT" "$LAYOUT.tmp"
	python3 - "$LAYOUT.tmp" "$(fixture busybox.tar.gz)" <<-'PY' || exit 1
		import gzip, hashlib, io, json, os, shutil, sys, tarfile
		out, base = sys.argv[1], sys.argv[2]
		os.makedirs(out + "/blobs/sha256")
		def put(data):
		    h = hashlib.sha256(data).hexdigest()
		    open("%s/blobs/sha256/%s" % (out, h), "wb").write(data)
		    return "sha256:" + h, len(data)
		layers, diff_ids = [], []
		def layer(fill):
		    raw = io.BytesIO()
		    with tarfile.open(fileobj=raw, mode="w") as t:
		        fill(t)
		    diff_ids.append("sha256:" + hashlib.sha256(raw.getvalue()).hexdigest())
		    d, n = put(gzip.compress(raw.getvalue(), 6))
		    layers.append({"mediaType": "application/vnd.oci.image.layer.v1.tar+gzip", "digest": d, "size": n})
		def busybox(t):
		    with tarfile.open(base) as src:
		        for m in src.getmembers():
		            t.addfile(m, src.extractfile(m) if m.isfile() else None)
		layer(busybox)
		for k in range(4):
		    def data(t, k=k):
		        for i in range(200):
		            blob = os.urandom(64 * 1024) * 4
		            ti = tarfile.TarInfo("data%d/f%03d" % (k, i))
		            ti.size = len(blob)
		            t.addfile(ti, io.BytesIO(blob))
		    layer(data)
		cfg = {"architecture": "amd64", "os": "linux", "config": {"Cmd": ["/bin/sh"]},
		       "rootfs": {"type": "layers", "diff_ids": diff_ids}}
		cd, cn = put(json.dumps(cfg).encode())
		man = {"schemaVersion": 2, "mediaType": "application/vnd.oci.image.manifest.v1+json",
		       "config": {"mediaType": "application/vnd.oci.image.config.v1+json", "digest": cd, "size": cn},
		       "layers": layers}
		md, mn = put(json.dumps(man).encode())
		json.dump({"schemaVersion": 2, "manifests": [{"mediaType": "application/vnd.oci.image.manifest.v1+json",
		           "digest": md, "size": mn, "annotations": {"org.opencontainers.image.ref.name": "latest"}}]},
		          open(out + "/index.json", "w"))
		open(out + "/oci-layout", "w").write('{"imageLayoutVersion":"1.0.0"}')
	PY
	mv "$LAYOUT.tmp" "$LAYOUT"
fi

REGISTRY_WORK=$(mktemp -d "$OUT/registry.XXXXXX")
export REGISTRY_WORK
trap 'registry_stop_all; rm -rf "$REGISTRY_WORK"' EXIT
registry_start R none || exit 1
skopeo --insecure-policy copy -q --dest-tls-verify=false "oci:$LAYOUT:latest" "docker://$REG_R_HOST/bench/big:latest" >/dev/null || exit 1
REF=$REG_R_HOST/bench/big:latest
W=$REGISTRY_WORK
export CURL_CA_BUNDLE=$REG_CA SSL_CERT_FILE=$REG_CA GPURUN_CACHE=$W/cache

MB=$(du -sm --apparent-size "$LAYOUT" | cut -f1)
header "pull of a 5-layer image of $MB MB compressed from a local registry, empty cache, $RUNS runs"
untar='for l in $(python3 -c "import json,sys; d=sys.argv[1]; i=json.load(open(d+\"/index.json\")); m=json.load(open(d+\"/blobs/sha256/\"+i[\"manifests\"][0][\"digest\"][7:])); print(\" \".join(x[\"digest\"][7:] for x in m[\"layers\"]))" '"$W"'/oci); do tar -C '"$W"'/rootfs -xzf '"$W"'/oci/blobs/sha256/$l; done'
hyperfine -N --style basic --warmup 1 --runs "$RUNS" \
	--prepare "sh -c 'rm -rf $W/cache $W/oci $W/rootfs && mkdir $W/rootfs && sync'" \
	--export-json "$OUT/registry-pull.json" \
	-n gpurun-pull "$GPURUN pull --quiet docker://$REF" \
	-n skopeo+umoci "sh -c 'skopeo --insecure-policy copy -q --src-tls-verify=false docker://$REF oci:$W/oci:latest && umoci raw unpack --image $W/oci:latest $W/rootfs/r'" \
	-n skopeo+tar "sh -c 'skopeo --insecure-policy copy -q --src-tls-verify=false docker://$REF oci:$W/oci:latest && $untar'" \
	</dev/null
{
	echo "| pull, empty cache | gpurun median ± sd (CPU) | peer median ± sd (CPU), same hyperfine run | ratio | target |"
	echo "|---|---|---|---|---|"
} >"$OUT/registry.md"
$RATIOS "$OUT/registry-pull.json" gpurun-pull 'skopeo+umoci<=1.2' 'skopeo+tar<=1.2' --md "$OUT/registry.md" \
	"\`gpurun pull docker://...\`, 5 layers, $MB MB (gzip), docker-registry on 127.0.0.1 over TLS, $RUNS runs (peers: \`skopeo copy docker://... oci:DIR\`, then \`umoci raw unpack\` or \`tar -xzf\` of each layer)"
if [[ "${BENCH_DOCS:-1}" != 0 ]]; then
	$RATIOS --splice "$REPO/docs/performance.md" "$OUT/registry.md" registry && say "docs/performance.md: the bench:registry table regenerated"
fi
exit 0
