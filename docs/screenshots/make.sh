#!/usr/bin/env bash
# Regenerates the report screenshots in docs/screenshots/ from the default
# run, the seeds' fixes and the generated 24 h recording, rendered by
# headless Chromium as a user sees them:
#   bash docs/screenshots/make.sh [path/to/fleetsim]
# (default: target/checked/fleetsim, built with `cargo build --profile checked`).
set -euo pipefail
cd "$(dirname "$0")/../.."
FLEETSIM=${1:-target/checked/fleetsim}
CHROMIUM=${FLEETSIM_CHROMIUM:-chromium}
OUT=docs/screenshots
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT
shot() { # shot FILE.png WIDTH HEIGHT INPUT
  "$CHROMIUM" --headless --no-sandbox --disable-gpu --hide-scrollbars \
    --window-size="$2,$3" --screenshot="$OUT/$1" "file://$(realpath "$4")" 2>/dev/null
}
"$FLEETSIM" run --out "$WORK/run" >/dev/null
"$FLEETSIM" report "$WORK/run" >/dev/null
"$FLEETSIM" run scenarios/render-2x3-fixed.toml --out "$WORK/fixed" >/dev/null
"$FLEETSIM" compare --seeds 10 default scenarios/render-2x3-fixed.toml --out "$WORK/compare" >/dev/null
"$FLEETSIM" replay scenarios/recordings/generated-24h.csv --out "$WORK/replay" >/dev/null
"$FLEETSIM" report "$WORK/replay" >/dev/null
shot run-page.png 1440 1100 "$WORK/run/report.html"
shot run-timeline.png 1400 760 "$WORK/run/timeline.svg"
shot run-busiest-hour.png 1400 760 "$WORK/run/zoom.svg"
shot replay-timeline.png 1400 760 "$WORK/replay/timeline.svg"
shot compare-page.png 1440 1500 "$WORK/compare/report.html"
echo "wrote $OUT/{run-page,run-timeline,run-busiest-hour,replay-timeline,compare-page}.png"
