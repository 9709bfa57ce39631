#!/bin/sh
# A sharded fleetsim sweep as a Slurm job array: array task K of N runs
# shard K/N of the sweep into $RESULTS/shard-K, resuming it when an
# earlier attempt left rows there (a requeued or preempted task). Merge
# the shards once the array is done, from any folder:
#
#   job=$(SWEEP=$PWD/sweep.toml RESULTS=$PWD/results sbatch --parsable --array=0-7 deploy/slurm/sweep-array.sh)
#   sbatch --dependency=afterok:$job --wrap "fleetsim merge $PWD/results/shard-* --out $PWD/results/merged"
#
# The shard count is SHARDS, by default the array's size
# (SLURM_ARRAY_TASK_COUNT): give --array=0-(N-1) on the command line, and
# SHARDS=N when resubmitting only some tasks (--array=3,5). Environment:
# SWEEP (the sweep file, required), RESULTS (default: results), FLEETSIM
# (default: fleetsim on PATH). tests/slurm.rs submits this file to a real
# single-node cluster.
#SBATCH --job-name=fleetsim-sweep
#SBATCH --array=0-7
#SBATCH --cpus-per-task=1
#SBATCH --requeue
set -eu

: "${SWEEP:?SWEEP must name the sweep file}"
: "${SLURM_ARRAY_TASK_ID:?not a Slurm array task: submit with sbatch --array=0-(N-1)}"
RESULTS=${RESULTS:-results}
FLEETSIM=${FLEETSIM:-fleetsim}
K=$SLURM_ARRAY_TASK_ID
N=${SHARDS:-${SLURM_ARRAY_TASK_COUNT:?SLURM_ARRAY_TASK_COUNT unset: submit with sbatch --array=0-(N-1)}}
OUT=$RESULTS/shard-$K
THREADS=${SLURM_CPUS_PER_TASK:-1}

if [ -e "$OUT/trials.csv" ]; then
    exec "$FLEETSIM" sweep "$SWEEP" --out "$OUT" --shard "$K/$N" --threads "$THREADS" --resume
else
    exec "$FLEETSIM" sweep "$SWEEP" --out "$OUT" --shard "$K/$N" --threads "$THREADS"
fi
