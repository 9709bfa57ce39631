#!/bin/bash
# Recordings of one clean-room fleet on several seeds: DIR/cN.csv (and
# cN.truth.json) for N = 1..COUNT, seed 5000 + N, 24 h each; FLAGS are
# tools/truth/cleanroom.py's fleet flags (no --seed, --hours or --out).
# docs/calibration.md's twenty-fifth session: k5 of the third held-out draw,
#   bash tools/truth/replicates.sh DIR 16 --boot-mb 384.9 --base-mb 600 \
#     --jitter-mb 28 --leak-mean 0.134 --leak-cv 0.76 --rps 1.32 \
#     --no-busy-deferral --pick first
# Then: fleetsim replay DIR/cN.csv --calibrate --out DIR/PcN -q, and
# python3 tools/truth/cleanroom_table.py DIR P c1 c2 ... for the table.
set -eu
D=$1; N=$2; shift 2
mkdir -p "$D"
for i in $(seq 1 "$N"); do
  python3 "$(dirname "$0")/cleanroom.py" "$@" --seed $((5000 + i)) --hours 24 --out "$D/c$i.csv" >/dev/null
done
ls "$D"/c*.csv | wc -l
