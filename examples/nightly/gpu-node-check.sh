#!/bin/sh
# examples/nightly/gpu-node-check.sh — the nightly check of one GPU node:
# every check of `gpurun doctor` and the smoke test on every GPU, as one
# JSON document, OUTDIR/<node>.json, and one exit status: 0 the node is
# healthy, 1 it is not (the document says why), 125 gpurun itself failed
# (OUTDIR/<node>.err says why, and there is no document).
#
#   gpu-node-check.sh OUTDIR [gpurun smoke OPTIONS...]
#
# GPURUN names the gpurun to run (default: the one on PATH); NODE the name
# the results go under (default: Slurm's name for this node, else the short
# host name); GPU_TIMEOUT each GPU's deadline in seconds (default 120).
set -u

if [ $# -lt 1 ]; then
	echo "usage: gpu-node-check.sh OUTDIR [gpurun smoke OPTIONS...]" >&2
	exit 2
fi
out=$1
shift
node=${NODE:-${SLURMD_NODENAME:-$(hostname -s)}}
mkdir -p "$out" || exit 125

# The document goes under its name only once it is whole, so that whoever
# reads OUTDIR never sees half of one.
"${GPURUN:-gpurun}" smoke --doctor --json --gpu-timeout "${GPU_TIMEOUT:-120}" "$@" \
	>"$out/$node.json.part" 2>"$out/$node.err"
status=$?
case $status in
0 | 1)
	mv "$out/$node.json.part" "$out/$node.json"
	[ -s "$out/$node.err" ] || rm -f "$out/$node.err"
	;;
*) rm -f "$out/$node.json.part" ;;
esac
case $status in
0) echo "$node: ok" ;;
1) echo "$node: FAIL, see $out/$node.json" ;;
*) echo "$node: gpurun failed (exit status $status): $(head -n 1 "$out/$node.err")" ;;
esac
exit "$status"
