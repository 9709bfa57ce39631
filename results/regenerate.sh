#!/bin/sh
# Regenerates the reference outputs and their reports in results/ (a few
# seconds after the build):
#
#   sh results/regenerate.sh
#
# The seeds' recycler as deployed (the embedded default) and with the seeds'
# six fixes, on the same fleet, traffic and seed: one simulated day each
# (`fleetsim run` + `fleetsim report`), and what each policy permits at
# saturation (`fleetsim saturate` + `fleetsim report`); and the generated
# 24-hour recording replayed, calibrated and validated over 8 seeds, then
# two other policies re-run on it (the README's replay command, then
# `fleetsim report`: tables, validation, what-if chart).
set -eu
cd "$(dirname "$0")/.."
cargo build --release --quiet
fleetsim() { cargo run --release --quiet -- "$@"; }

fleetsim run --force --out results/render-2x3
fleetsim report results/render-2x3
fleetsim run scenarios/render-2x3-fixed.toml --force --out results/render-2x3-fixed
fleetsim report results/render-2x3-fixed

fleetsim saturate --out results/render-2x3-saturate
fleetsim report results/render-2x3-saturate
fleetsim saturate scenarios/render-2x3-fixed.toml --out results/render-2x3-fixed-saturate
fleetsim report results/render-2x3-fixed-saturate

# --force: the calibration warns on one row (the generating seed's 4
# fetch_failed in 12 h, a rare window; README's replay section), and its
# what-ifs run labelled as resting on it.
fleetsim replay scenarios/recordings/generated-24h.csv --calibrate \
    --scenario scenarios/recordings/generated-24h-truth.toml --force \
    --what-if scenarios/whatif/ceiling-escalation.toml --what-if scenarios/whatif/token-bucket.toml \
    --out results/replay-generated-24h
fleetsim report results/replay-generated-24h

# The seeds' fixes against the deployed recycler on 20 paired seeds
# (`fleetsim compare`); its 40 run directories stay in out/, the comparison
# comes here.
fleetsim compare --seeds 20 default scenarios/render-2x3-fixed.toml --out out/compare-fixed --force \
    > results/compare-fixed.txt
mkdir -p results/compare-fixed
cp out/compare-fixed/compare.json out/compare-fixed/report.html out/compare-fixed/timeline-*.svg \
    results/compare-fixed/
