#!/usr/bin/env bash
# fleetsim against the SimPy peer on the same fleet, side by side.
#
#   benches/peer/compare.sh [HOURS] [PAIRS] [SEED]     # defaults: 24 h, 3 pairs, seed 1
#
# The fleet: the seeds' 2 x 3 fleet at a constant 20 rps (~1.7 M requests a
# day), busy deferral off, a cold start, no keep-alive resets (the peer has
# no client model); everything else is render-2x3.toml's default, which
# fleet_simpy.py restates. Each pair runs `fleetsim run` three times (its
# median is used), the throughput example on the same scenario (median of
# five in-process runs), then the peer once, so both see the same machine
# load. Whole-process times include start-up, output files, the
# interpreter and imports: what a user waits for. The ratio is printed per
# pair, then min / median / max over pairs, for wall-clock, for CPU time
# (user + sys, which does not count time spent descheduled on a busy
# machine), and in process (the simulation loops alone). In process, each
# pair also runs a textbook binary-heap engine on the same queueing with
# none of the model (`throughput bare_peer`, benches/common/bare.rs): the
# ratio a bare engine would get, for scale.
#
# Needs: cargo, python3 with simpy (pip install -r benches/peer/requirements.txt),
# /usr/bin/time. PYTHON=... picks the interpreter.
set -euo pipefail

HOURS=${1:-24}
PAIRS=${2:-3}
SEED=${3:-1}
PYTHON=${PYTHON:-python3}
cd "$(dirname "$0")/../.."

if ! "$PYTHON" -c 'import simpy' 2>/dev/null; then
    echo "compare.sh: $PYTHON cannot import simpy: pip install -r benches/peer/requirements.txt" >&2
    exit 2
fi

# Build once, then time the binaries themselves (cargo run would add its own check).
built() {
    cargo build --profile bench "$@" --message-format=json 2>/dev/null |
        "$PYTHON" -c 'import json, sys
for line in sys.stdin:
    m = json.loads(line)
    if m.get("reason") == "compiler-artifact" and m.get("executable"):
        print(m["executable"])'
}
BIN=$(built --bin fleetsim)
EXAMPLE=$(built --example throughput)
[ -x "$BIN" ] && [ -x "$EXAMPLE" ] || { echo "compare.sh: fleetsim did not build" >&2; exit 1; }

FLEETSIM_SET=(
    --set workload.rps=20
    --set workload.profile=constant
    --set policy.busy_deferral=false
    --set fleet.warm_start=false
    --set client.keepalive_conns_per_worker=0
)
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT

echo "machine: $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ *//'), load $(cut -d' ' -f1-3 /proc/loadavg)"
echo "fleetsim: $BIN run --seed $SEED --hours $HOURS ${FLEETSIM_SET[*]} --json"
echo "peer:     $PYTHON benches/peer/fleet_simpy.py --seed $SEED --hours $HOURS --json ($("$PYTHON" --version 2>&1), simpy $("$PYTHON" -c 'import simpy; print(simpy.__version__)'))"

# Runs one command under /usr/bin/time; its stdout goes to $2, "wall cpu" to $3.
timed() {
    local out=$1 times=$2
    shift 2
    /usr/bin/time -f '%e %U %S' -o "$times.raw" "$@" >"$out"
    awk '{ printf "%s %.2f\n", $1, $2 + $3 }' "$times.raw" >"$times"
}

for p in $(seq 1 "$PAIRS"); do
    for k in 1 2 3; do
        timed "$TMP/fs.json" "$TMP/fs-$p-$k.time" \
            "$BIN" run --seed "$SEED" --hours "$HOURS" "${FLEETSIM_SET[@]}" --json --out "$TMP/out-fs"
        rm -rf "$TMP/out-fs"
    done
    # In process: the example runs the same scenario (seed 7) five times,
    # with the draws on helper threads as `fleetsim run` makes them on a
    # machine with a core to spare (`Sim::with_draw_threads`).
    if [ "$(nproc)" -gt 1 ]; then INPROC=peer+threads; else INPROC=peer; fi
    "$EXAMPLE" "$INPROC" "$HOURS" 5 >"$TMP/inproc-$p.txt"
    # For scale: a textbook binary-heap engine on the peer's queueing alone
    # (benches/common/bare.rs: no memory, policy or metrics).
    "$EXAMPLE" bare_peer "$HOURS" 5 >"$TMP/bare-$p.txt"
    timed "$TMP/py-$p.json" "$TMP/py-$p.time" "$PYTHON" benches/peer/fleet_simpy.py --seed "$SEED" --hours "$HOURS" --json
done
cp "$TMP/py-1.json" "$TMP/py.json"

"$PYTHON" - "$TMP" "$PAIRS" <<'PY'
import json, statistics, sys

tmp, pairs = sys.argv[1], int(sys.argv[2])
fs = json.load(open(f"{tmp}/fs.json"))
py = json.load(open(f"{tmp}/py.json"))

def times(path):
    wall, cpu = open(path).read().split()
    return float(wall), float(cpu)

rows, inproc = [], []
for p in range(1, pairs + 1):
    f = [times(f"{tmp}/fs-{p}-{k}.time") for k in (1, 2, 3)]
    f_wall = statistics.median(w for w, _ in f)
    f_cpu = statistics.median(c for _, c in f)
    p_wall, p_cpu = times(f"{tmp}/py-{p}.time")
    rows.append((f_wall, f_cpu, p_wall, p_cpu))
    # "peer: E events, R requests; 5 runs, best B s, median M s; ..." from
    # the example: the median run, not the least disturbed one, as the
    # peer's single long run is not the least disturbed either.
    def median_rate(path):
        line = open(path).read()
        requests = int(line.split(" events, ")[1].split(" requests")[0])
        return requests / float(line.split(" median ")[1].split(" s")[0])
    fs_rate = median_rate(f"{tmp}/inproc-{p}.txt")
    bare_rate = median_rate(f"{tmp}/bare-{p}.txt")
    py_rate = json.load(open(f"{tmp}/py-{p}.json"))["requests_per_s"]
    inproc.append((fs_rate, bare_rate, py_rate))

print()
print("model agreement (same seed, different random streams: expect agreement within noise, not equality)")
keys = [
    ("requests_total", "requests"),
    ("recycles", "recycles"),
    ("recycles_per_hour", "recycles/h"),
    ("pressure_recycles", "pressure recycles"),
    ("lease_acquired", "lease acquired"),
    ("lease_bypass_pressure", "lease bypass: pressure"),
    ("lease_bypass_hard_ceiling", "lease bypass: hard ceiling"),
    ("holds_cooldown", "holds: cooldown"),
    ("holds_lease_held", "holds: lease held"),
    ("oom_kills", "OOM kills"),
    ("requests_per_worker_median", "requests per worker, median"),
    ("max_rss_mb", "max RSS MB"),
    ("latency_ms_p50", "latency p50 ms"),
    ("latency_ms_p99", "latency p99 ms"),
    ("wait_ms_mean", "queue wait mean ms"),
    ("wait_fraction", "fraction that queued"),
]
print(f"  {'figure':<30} {'fleetsim':>12} {'simpy':>12}")
for k, label in keys:
    a, b = fs[k], py[k]
    fmt = (lambda v: f"{v:12.3f}") if isinstance(a, float) or isinstance(b, float) else (lambda v: f"{v:12d}")
    print(f"  {label:<30} {fmt(a)} {fmt(b)}")

n = fs["requests_total"]
print()
print(f"speed ({pairs} pairs; fleetsim = median of 3 runs per pair; whole processes)")
print(f"  {'pair':<5} {'fleetsim s':>11} {'simpy s':>9} {'fleetsim req/s':>15} {'simpy req/s':>12} {'ratio wall':>11} {'ratio cpu':>10}")
ratios_wall, ratios_cpu = [], []
for i, (fw, fc, pw, pc) in enumerate(rows, 1):
    rw, rc = pw / fw, pc / max(fc, 0.01)
    ratios_wall.append(rw)
    ratios_cpu.append(rc)
    print(f"  {i:<5} {fw:11.2f} {pw:9.2f} {fs['requests_total'] / fw:15.3e} {py['requests_total'] / pw:12.3e} {rw:10.0f}x {rc:9.0f}x")
for name, r in (("wall", ratios_wall), ("cpu", ratios_cpu)):
    print(f"  ratio {name}: min {min(r):.0f}x, median {statistics.median(r):.0f}x, max {max(r):.0f}x")

print("in process (fleetsim: the example's median of 5 runs, seed 7; simpy: its env.run() alone, no start-up;")
print("  bare: a textbook binary-heap engine on the same queueing with no model, for scale)")
print(f"  {'pair':<5} {'fleetsim req/s':>15} {'bare req/s':>11} {'simpy req/s':>12} {'ratio':>7} {'bare/simpy':>11} {'fleetsim/bare':>14}")
r_in, r_bare, r_fb = [], [], []
for i, (f, b, q) in enumerate(inproc, 1):
    r_in.append(f / q)
    r_bare.append(b / q)
    r_fb.append(f / b)
    print(f"  {i:<5} {f:15.3e} {b:11.3e} {q:12.3e} {f / q:6.0f}x {b / q:10.0f}x {f / b:13.2f}x")
print(f"  ratio: min {min(r_in):.0f}x, median {statistics.median(r_in):.0f}x, max {max(r_in):.0f}x")
print(f"  bare engine / simpy: min {min(r_bare):.0f}x, median {statistics.median(r_bare):.0f}x, max {max(r_bare):.0f}x")
print(f"  fleetsim / bare engine: min {min(r_fb):.2f}x, median {statistics.median(r_fb):.2f}x, max {max(r_fb):.2f}x")
PY
