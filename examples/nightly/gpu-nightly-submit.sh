#!/bin/sh
# examples/nightly/gpu-nightly-submit.sh — the nightly check of every node
# of a Slurm partition: one job per node (Slurm cannot pin the tasks of a
# job array to nodes, so the "array" is this loop, each job with its
# --nodelist), all of them in the same job name, then one summary job that
# runs when they have all ended, whatever their exit status.
#
#   gpu-nightly-submit.sh PARTITION OUTDIR
#
# OUTDIR must be on a file system every node and the submit host share.
set -eu

if [ $# -ne 2 ]; then
	echo "usage: gpu-nightly-submit.sh PARTITION OUTDIR" >&2
	exit 2
fi
part=$1 out=$2
here=$(cd "$(dirname "$0")" && pwd)
mkdir -p "$out"
# Every node of the partition, one a line, down or drained ones included:
# those the summary reports as missing rather than forgetting them.
sinfo --noheader --partition="$part" --Node --format=%N | sort -u >"$out/nodes"
# A job that cannot start by then (its node down or drained) is removed, so
# that the summary, which waits for them all, does not wait for ever.
deadline=${DEADLINE:-now+2hours}
ids=
while read -r node; do
	# All of the node's GPUs as Slurm counts them ("gpu:8", "gpu:h100:8(S:0-1)").
	count=$(sinfo --noheader --Node --nodes="$node" --format=%G | sed -n 's/.*gpu:\([^:(,]*:\)\{0,1\}\([0-9][0-9]*\).*/\2/p' | head -n 1)
	id=$(sbatch --parsable --partition="$part" --nodelist="$node" ${count:+--gres=gpu:$count} \
		--deadline="$deadline" --export=ALL,NIGHTLY_DIR="$here" "$here/gpu-nightly.sbatch" "$out")
	ids=${ids:+$ids:}${id%%;*}
done <"$out/nodes"
sbatch --parsable --partition="$part" --dependency="afterany:$ids" --job-name=gpu-nightly-summary \
	--output="$out/summary.txt" --wrap="'$here/gpu-nightly-summary.sh' '$out' '$out/nodes'"
