#!/bin/sh
# The memory-measure table of docs/recyclers.md: each row's preset over
# seeds 1-10, 24 h each, mean +- sd of recycles, OOM kills and pressure
# recycles per day. FLEETSIM names the binary (default: cargo's checked build).
set -eu
cd "$(dirname "$0")/.."
BIN=${FLEETSIM:-target/checked/fleetsim}
OUT=$(mktemp -d)
trap 'rm -rf "$OUT"' EXIT
row() {
  label=$1; shift; sc=$1; shift
  for s in 1 2 3 4 5 6 7 8 9 10; do
    "$BIN" run "$sc" --seed "$s" --out "$OUT/$label-$s" "$@" >/dev/null
  done
  python3 - "$OUT" "$label" <<'PY'
import json, statistics as st, sys
out, label = sys.argv[1], sys.argv[2]
runs = [json.load(open(f"{out}/{label}-{s}/summary.json")) for s in range(1, 11)]
def f(k):
    xs = [r[k] for r in runs]
    return f"{st.mean(xs):.1f} +- {st.stdev(xs):.1f}"
print(f"{label:18s} recycles {f('recycles')}  oom_kills {f('oom_kills')}  pressure {f('pressure_recycles')}")
PY
}
OLD="--set policy.instance_memory.percent_usage=0.98 --set policy.instance_memory.frequency_s=5 --set policy.rolling_restart.frequency_s=43200"
row puma-summed scenarios/puma-worker-killer.toml
row puma-cgroup scenarios/puma-worker-killer.toml --set policy.instance_memory.measure=cgroup
# shellcheck disable=SC2086
row puma-old-summed scenarios/puma-worker-killer.toml $OLD
# shellcheck disable=SC2086
row puma-old-cgroup scenarios/puma-worker-killer.toml $OLD --set policy.instance_memory.measure=cgroup
row passenger-private scenarios/passenger-rolling.toml
row passenger-rss scenarios/passenger-rolling.toml --set policy.rss_measure=rss
