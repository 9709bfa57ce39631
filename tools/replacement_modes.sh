#!/bin/sh
# The replacement-mode table of docs/recyclers.md: each preset whose
# replacement issue 16 item 4 changed, as shipped ("after") and with its
# model-5 replacement restored by --set ("before"), over seeds 1-10, 24 h
# each: mean +- sd per day of recycles, OOM kills, failed requests, the
# capacity lost (%), and the mode's own figure. FLEETSIM names the binary.
set -eu
cd "$(dirname "$0")/.."
BIN=${FLEETSIM:-target/checked/fleetsim}
OUT=$(mktemp -d)
trap 'rm -rf "$OUT"' EXIT
row() {
  label=$1; shift; figure=$1; shift; sc=$1; shift
  for s in 1 2 3 4 5 6 7 8 9 10; do
    "$BIN" run "$sc" --seed "$s" --out "$OUT/$label-$s" "$@" >/dev/null
  done
  python3 - "$OUT" "$label" "$figure" <<'PY'
import json, statistics as st, sys
out, label, figure = sys.argv[1], sys.argv[2], sys.argv[3]
runs = [json.load(open(f"{out}/{label}-{s}/summary.json")) for s in range(1, 11)]
def f(k, scale=1.0, d=1):
    xs = [scale * r.get(k, 0) for r in runs]
    return f"{st.mean(xs):.{d}f} +- {st.stdev(xs):.{d}f}"
extra = f"  {figure} {f(figure)}" if figure != "-" and figure in runs[0] else ""
print(f"{label:18s} recycles {f('recycles')}  oom_kills {f('oom_kills')}  "
      f"failed {f('requests_failed')}  capacity_loss_% {f('capacity_loss_fraction', 100.0, 3)}  lifetime {f('recycles_lifetime')}{extra}")
PY
}
row passenger-after proxy_queue_503 scenarios/passenger-rolling.toml
row passenger-before - scenarios/passenger-rolling.toml --set policy.replacement=spawn_then_exit
row granian-after handovers_waited scenarios/granian-max-rss.toml
row granian-before - scenarios/granian-max-rss.toml --set policy.replacement=spawn_then_exit
row puma-after rolling_restart_terms scenarios/puma-worker-killer.toml
row puma-before - scenarios/puma-worker-killer.toml --set policy.rolling_restart.enabled=false \
  --set policy.lifetime.enabled=true --set policy.lifetime.max_s=21600 \
  --set policy.lifetime.jitter_s=300 --set policy.lifetime.spread=random
row uwsgi-after forkbomb_sleeps scenarios/uwsgi-reload-on-rss.toml
row uwsgi-before - scenarios/uwsgi-reload-on-rss.toml --set policy.forkbomb.enabled=false
