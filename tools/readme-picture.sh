#!/usr/bin/env bash
# Regenerates README's picture, docs/img/timeline.svg: the fleet timeline
# `fleetsim report` draws for the embedded default's run (seed 1, 24 h).
# Run it after a change to the model or to the timeline chart:
#   bash tools/readme-picture.sh [FLEETSIM]   (default: builds and uses target/release/fleetsim)
set -euo pipefail
cd "$(dirname "$0")/.."
bin=${1:-}
if [[ -z "$bin" ]]; then
    cargo build --release --quiet
    bin=target/release/fleetsim
fi
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
"$bin" run --seed 1 --out "$out/run" >/dev/null
"$bin" report "$out/run" >/dev/null
mkdir -p docs/img
cp "$out/run/timeline.svg" docs/img/timeline.svg
echo "wrote docs/img/timeline.svg ($(wc -c <docs/img/timeline.svg) bytes)"
