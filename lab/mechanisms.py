#!/usr/bin/env python3
"""Measures, on lab runs, the mechanisms docs/lab.md names where fleetsim
misses: connection affinity (how long a fresh worker waits for traffic, how
much of the time workers sit at their boot RSS, how unequal per-worker
request rates are), instance memory over time (fleetsim's own formula,
boot + sum(rss - shared), applied to the lab's measured RSS), pressure and
lease outcomes, the client's resets and their lag from the latest recycle,
the drain, and the leak's exactness (RSS vs the drawn velocity).

    python3 lab/mechanisms.py lab/runs/compare/runs/*/ [--sim-timeline DIR/timeline.csv]
"""

from __future__ import annotations

import argparse
import collections
import csv
import json
import os
import statistics


def run_stats(d: str) -> dict:
    cfg = json.load(open(os.path.join(d, "lab-config.json")))
    boot = float(cfg["fleet"]["boot_rss_mb"])
    shared = float(cfg["fleet"]["shared_mb"])
    tel = [json.loads(l) for l in open(os.path.join(d, "telemetry.jsonl"))]
    rec = [r for r in tel if r["event"] == "worker_recycled"]
    can = [json.loads(l) for l in open(os.path.join(d, "canary.jsonl"))]
    resets = [c for c in can if c["event"] in ("retry_ok", "fetch_failed")]
    lives = collections.defaultdict(list)
    by_ts = collections.defaultdict(lambda: collections.defaultdict(list))
    for r in csv.DictReader(open(os.path.join(d, "rss.csv"))):
        if r["worker"] == "master":
            continue
        lives[(r["instance"], r["pid"])].append((float(r["ts"]), float(r["rss_mb"]),
                                                 int(r["requests"] or 0)))
        by_ts[r["ts"]][r["instance"]].append(float(r["rss_mb"]))
    wait20, rates, at_boot, n = [], [], 0, 0
    for v in lives.values():
        n += len(v)
        at_boot += sum(rss < boot + 6 for _, rss, _ in v)
        if len(v) < 4:
            continue
        t0 = v[0][0]
        w = next((t - t0 for t, _, q in v if q >= 20), None)
        if w is not None:
            wait20.append(w)
        life = v[-1][0] - t0
        if life > 5:
            rates.append((v[-1][2] - v[0][2]) / life)
    usage = [boot + sum(x - shared for x in ws) for inst in by_ts.values()
             for ws in inst.values() if len(ws) == int(cfg["fleet"]["workers_per_instance"])]
    lag = []
    for c in resets:
        before = [r["ts"] for r in rec if r["ts"] <= c["ts"] and r["instance"] == c.get("instance")]
        if before:
            lag.append(c["ts"] - max(before))
    exact = [abs((r["rss_mb"] - boot) / r["requests"] / r["velocity_mb_per_request"] - 1)
             for r in rec if r["requests"] and r.get("velocity_mb_per_request")]
    return {
        "run": os.path.basename(os.path.normpath(d)),
        "recycles": len(rec),
        "pressure_fraction": sum(bool(r["pressure"]) for r in rec) / len(rec) if rec else None,
        "wait_to_20_requests_s_median": statistics.median(wait20) if wait20 else None,
        "wait_to_20_requests_s_max": max(wait20) if wait20 else None,
        "worker_time_at_boot_rss_fraction": at_boot / n if n else None,
        "per_life_rps_cv": statistics.pstdev(rates) / statistics.mean(rates) if rates else None,
        "instance_usage_mb_mean": statistics.mean(usage) if usage else None,
        "resets": len(resets),
        "resets_per_recycle": len(resets) / len(rec) if rec else None,
        "reset_lag_s_max": max(lag) if lag else None,
        "resets_within_1s_of_a_recycle": sum(x <= 1.0 for x in lag),
        "leak_rss_vs_velocity_rel_err_max": max(exact) if exact else None,
    }


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("runs", nargs="+")
    ap.add_argument("--sim-timeline", help="a fleetsim timeline.csv: its mean instance usage")
    ap.add_argument("--json", action="store_true")
    a = ap.parse_args()
    rows = [run_stats(d) for d in a.runs if os.path.exists(os.path.join(d, "run.json"))]
    if a.sim_timeline:
        us = []
        for r in csv.DictReader(open(a.sim_timeline)):
            us += [float(r[k]) for k in r if k.endswith("_usage_mb")]
        print(f"fleetsim timeline {a.sim_timeline}: mean instance usage {statistics.mean(us):.0f} MB")
    if a.json:
        print(json.dumps(rows, indent=1))
        return
    keys = list(rows[0])
    print("| " + " | ".join(keys) + " |")
    print("|" + " --- |" * len(keys))
    for r in rows:
        print("| " + " | ".join(f"{v:.3g}" if isinstance(v, float) else str(v) for v in r.values()) + " |")


if __name__ == "__main__":
    main()
