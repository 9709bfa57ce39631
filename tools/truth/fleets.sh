#!/bin/bash
# Regenerates the clean-room recordings of docs/calibration.md's f and h fleets
# (fed at random: NAME; fed first: NAMEf; fed the latest idle: NAMEl; f6 fed first on
# seeds 301-303: f6f_SEED) into DIR (default /tmp/cleanroom), 24 h each, with NAME.truth.json.
# Then: fleetsim replay DIR/NAME.csv --calibrate --out DIR/cNAME, and
# python3 tools/truth/cleanroom_table.py DIR c NAME... for the tables.
D=${1:-/tmp/cleanroom}; mkdir -p $D
CR="python3 $(dirname "$0")/cleanroom.py"
declare -A F=(
 [f1]="--boot-mb 407.5 --base-mb 539 --jitter-mb 37 --leak-mean 0.148 --leak-cv 0.73 --rps 1.6 --seed 101 --whole-mb"
 [f2]="--boot-mb 401.9 --base-mb 581 --jitter-mb 54 --leak-mean 0.174 --leak-cv 0.66 --rps 2.43 --seed 102"
 [f3]="--boot-mb 318.1 --base-mb 554 --jitter-mb 39 --leak-mean 0.118 --leak-cv 0.56 --rps 1.77 --seed 103 --whole-mb"
 [f4]="--boot-mb 315.8 --base-mb 550 --jitter-mb 22 --leak-mean 0.167 --leak-cv 0.71 --rps 0.88 --seed 104"
 [f5]="--boot-mb 354.0 --base-mb 573 --jitter-mb 48 --leak-mean 0.117 --leak-cv 0.58 --rps 2.07 --seed 105"
 [f6]="--boot-mb 333.1 --base-mb 542 --jitter-mb 36 --leak-mean 0.172 --leak-cv 0.47 --rps 1.75 --seed 106"
 [f7]="--boot-mb 313.2 --base-mb 538 --jitter-mb 25 --leak-mean 0.211 --leak-cv 0.94 --rps 1.45 --seed 107"
 [f8]="--boot-mb 333.9 --base-mb 576 --jitter-mb 49 --leak-mean 0.214 --leak-cv 0.42 --rps 2.04 --seed 108"
 [h1]="--boot-mb 342.3 --base-mb 526 --jitter-mb 31 --leak-mean 0.102 --leak-cv 0.66 --rps 2.03 --busy-rps 1.0 --defer-max-s 90 --whole-mb --seed 201"
 [h2]="--boot-mb 344.6 --base-mb 570 --jitter-mb 41 --leak-mean 0.274 --leak-cv 0.59 --rps 0.97 --busy-rps 1.22 --defer-max-s 120 --seed 202"
 [h3]="--boot-mb 321.7 --base-mb 588 --jitter-mb 44 --leak-mean 0.21 --leak-cv 0.63 --rps 2.01 --busy-rps 1.0 --defer-max-s 90 --seed 203"
 [h4]="--boot-mb 347.9 --base-mb 500 --jitter-mb 56 --leak-mean 0.145 --leak-cv 0.53 --rps 1.16 --busy-rps 0.83 --defer-max-s 90 --seed 204"
 [h5]="--boot-mb 309.4 --base-mb 502 --jitter-mb 36 --leak-mean 0.207 --leak-cv 0.49 --rps 1.25 --busy-rps 1.0 --defer-max-s 90 --seed 205"
 [h6]="--boot-mb 365.1 --base-mb 598 --jitter-mb 34 --leak-mean 0.109 --leak-cv 0.74 --rps 0.95 --busy-rps 1.11 --defer-max-s 90 --seed 206"
 [h7]="--boot-mb 357.8 --base-mb 535 --jitter-mb 59 --leak-mean 0.187 --leak-cv 0.86 --rps 0.8 --busy-rps 1.0 --defer-max-s 90 --seed 207"
 [h8]="--boot-mb 389.8 --base-mb 545 --jitter-mb 31 --leak-mean 0.299 --leak-cv 0.56 --rps 1.21 --busy-rps 1.27 --defer-max-s 60 --whole-mb --seed 208"
)
for n in "${!F[@]}"; do $CR ${F[$n]} --hours 24 --out $D/$n.csv >/dev/null; done
for n in f6 h1 h4 h5 h7; do $CR ${F[$n]} --hours 24 --pick first --out $D/${n}f.csv >/dev/null; $CR ${F[$n]} --hours 24 --pick lifo --out $D/${n}l.csv >/dev/null; done
for s in 301 302 303; do $CR ${F[f6]/--seed 106/--seed $s} --hours 24 --pick first --out $D/f6f_$s.csv >/dev/null; done
ls $D | wc -l
