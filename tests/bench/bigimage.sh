#!/usr/bin/env bash
# tests/bench/bigimage.sh — the benchmarks' image of about 1 GB, made once:
# the busybox fixture plus 4,000 files of 256 KiB that compress 4:1, as a
# .tar.gz at gzip level 1.  run.sh measures its --no-cache first launch and
# images.sh its cache; both call this, so the first `make bench` on a new
# machine has it before either needs it.
#
#   bash tests/bench/bigimage.sh OUT.tar.gz
set -uo pipefail
cd "$(dirname "$0")/../.." || exit 2
out=${1:?usage: bigimage.sh OUT.tar.gz}
[[ -s $out ]] && exit 0
export TESTS_BUILD=$PWD/tests/build
# shellcheck source=../lib/images.bash
source tests/lib/images.bash
base=$(fixture busybox.tar.gz) || exit 1
echo "generating an image of about 1 GB (once)"
python3 - "$out" "$base" <<-'PY' || { rm -f "$out.tmp"; exit 1; }
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
