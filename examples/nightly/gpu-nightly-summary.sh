#!/bin/sh
# examples/nightly/gpu-nightly-summary.sh — one line per node from the
# documents gpu-node-check.sh wrote in OUTDIR: "NODE ok", or "NODE FAIL"
# and each failed check as id: text, and the nodes in NODES (one name a
# line, optional) that left no document.  Exit status 1 when any node
# failed or is missing.
#
#   gpu-nightly-summary.sh OUTDIR [NODES]
set -u

if [ $# -lt 1 ]; then
	echo "usage: gpu-nightly-summary.sh OUTDIR [NODES]" >&2
	exit 2
fi
exec python3 - "$@" <<'PY'
import json, os, sys

out = sys.argv[1]
want = []
if len(sys.argv) > 2:
    with open(sys.argv[2]) as f:
        want = [line.strip() for line in f if line.strip()]
bad = 0
seen = set()
for name in sorted(os.listdir(out)):
    if not name.endswith(".json"):
        continue
    node = name[: -len(".json")]
    seen.add(node)
    with open(os.path.join(out, name)) as f:
        doc = json.load(f)
    if doc["ok"]:
        print(f"{node} ok")
        continue
    bad += 1
    print(f"{node} FAIL")
    for c in doc.get("doctor", {}).get("checks", []):
        if c["level"] == "fail":
            print(f"    doctor {c['id']}: {c['text']}")
    for c in doc["driver"]["checks"]:
        if c["level"] == "fail":
            print(f"    driver {c['id']}: {c['text']}")
    for g in doc["gpus"]:
        for c in g["checks"]:
            if c["level"] == "fail":
                print(f"    GPU {g['index']} {g['pci_bus_id']} {c['id']}: {c['text']}")
for node in want:
    if node not in seen:
        bad += 1
        err = os.path.join(out, node + ".err")
        why = open(err).readline().strip() if os.path.exists(err) else "no result"
        print(f"{node} MISSING: {why}")
sys.exit(1 if bad else 0)
PY
