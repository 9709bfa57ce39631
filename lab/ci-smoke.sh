#!/usr/bin/env bash
# The lab's CI smoke (issue 15 item 5): the whole loop in about 4 minutes.
#
#   lab/ci-smoke.sh [FLEETSIM]      (or FLEETSIM=path lab/ci-smoke.sh)
#
# 1. installs what the lab needs (lab/run.sh install: redis-server by apt,
#    gunicorn/uvicorn/fastapi/redis by pip into a venv, undici by npm ci);
# 2. records a ${LAB_SMOKE_SECONDS:-120} s window (lab/run.sh record);
# 3. runs `fleetsim replay --calibrate` on every file of it at once
#    (telemetry, canary, both gunicorn logs, the RSS series; the verdict is
#    printed, not asserted: 2 minutes is too short to validate): it must succeed,
#    join each gunicorn log's recycles to the telemetry rows, and take boot
#    RSS from the series;
# 4. asserts that the run stopped cleanly: run.json says clean, no process
#    of this run (its gunicorn masters and workers, its redis-server, its
#    client) is left, and no /dev/shm file of its run id remains.
# Exits non-zero on any failure.
set -euo pipefail
LAB="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
ROOT="$(dirname "$LAB")"
FLEETSIM="${1:-${FLEETSIM:-$ROOT/target/release/fleetsim}}"
# 120 s: ~13 recycles (90 s gave 9 and 10: calibration needs 8 rows).
SECONDS_WINDOW="${LAB_SMOKE_SECONDS:-120}"
OUT="$(mktemp -d /tmp/fleetsim-lab-smoke.XXXXXX)"
fail() { echo "lab smoke: FAIL: $*" >&2; exit 1; }
[ -x "$FLEETSIM" ] || fail "fleetsim binary $FLEETSIM is not executable (cargo build --release, or pass its path)"

"$LAB/run.sh" install
start=$(date +%s)
"$LAB/run.sh" record --seconds "$SECONDS_WINDOW" --seed 1 --out "$OUT/rec" || fail "the lab run failed (see $OUT/rec)"

python3 - "$OUT/rec" <<'PY' || fail "the recording or its cleanup is wrong"
import json, os, sys, glob, subprocess
d = sys.argv[1]
run = json.load(open(os.path.join(d, "run.json")))
cfg = json.load(open(os.path.join(d, "lab-config.json")))
assert run.get("ok"), f"run not ok: {run.get('error')}"
c = run["cleanup"]
assert c["clean"], f"cleanup not clean: {c}"
left = glob.glob(cfg["shm_prefix"] + "*")
assert not left, f"/dev/shm files left: {left}"
# No process of this run: gunicorn's command line names the run's out dir,
# redis-server's its port, the client's the out dir.
pats = [d, f"redis-server 127.0.0.1:{cfg['redis_port']}"]
for p in pats:
    r = subprocess.run(["pgrep", "-af", p], capture_output=True, text=True)
    mine = [l for l in r.stdout.splitlines() if "pgrep" not in l and "python3 -" not in l]
    assert not mine, f"left running ({p}): {mine}"
rows = [json.loads(l) for l in open(os.path.join(d, "telemetry.jsonl"))]
n = sum(r["event"] == "worker_recycled" for r in rows)
assert n >= 8, f"only {n} recycles in the window (calibration needs 8)"
for f in ("canary.jsonl", "rss.csv", "gunicorn-A.log", "gunicorn-B.log"):
    assert os.path.getsize(os.path.join(d, f)) > 0, f"{f} is empty"
log = open(os.path.join(d, "gunicorn-A.log")).read()
assert "Booting worker with pid" in log, "gunicorn-A.log has no boot lines"
print(f"lab smoke: recording ok: {n} recycles, {run['retry_ok']} retry_ok, "
      f"{run['rss_rows']} rss rows, cleanup clean")
PY

R="$OUT/rec"
"$FLEETSIM" replay "$R/telemetry.jsonl" "$R/canary.jsonl" "$R/gunicorn-A.log" "$R/gunicorn-B.log" \
  "$R/rss.csv" --calibrate --scenario "$LAB/fleet.toml" --seeds 8 --out "$OUT/replay" \
  > "$OUT/replay.txt" 2>&1 \
  || { tail -20 "$OUT/replay.txt" >&2; fail "fleetsim replay --calibrate failed"; }
[ -s "$OUT/replay/calibration.json" ] || fail "no calibration.json"
python3 - "$OUT/replay" <<'PY' || { tail -40 "$OUT/replay.txt" >&2; fail "replay did not read the lab as one recording"; }
import json, os, sys
d = sys.argv[1]
a = json.load(open(os.path.join(d, "analysis.json")))
joins = a["joins"]["agreements"] if isinstance(a.get("joins"), dict) else a["joins"]
logs = [j for j in joins if j["source"].endswith(".log") and j["kind"] == "worker_recycled"]
assert logs, f"no gunicorn log joined the telemetry rows: {joins}"
for j in logs:
    assert j["matched"] == j["events"], f"unjoined recycles: {j}"
c = json.load(open(os.path.join(d, "calibration.json")))
boot = next(f for f in c["fits"] if f["key"] == "fleet.boot_rss_mb")
assert boot["how"].startswith("observed"), f"boot not from the RSS series: {boot['how']}"
print(f"lab smoke: replay ok: {sum(j['events'] for j in logs)} log recycles joined; boot {boot['value']:.1f} MB observed")
PY
grep -E '^  verdict:' "$OUT/replay.txt" || true
echo "lab smoke: ok in $(( $(date +%s) - start )) s (recording and replay in $OUT)"
rm -rf "$OUT"
