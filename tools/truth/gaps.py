#!/usr/bin/env python3
"""Recycle gaps: fleetsim against the independent SimPy model, on one fleet's truth.

For a fleet of tools/truth/recovery.py's grid (constant traffic, no warm-up,
no steps: the held-out draws), runs fleet_truth.py on N seeds and fleetsim
on M seeds with the same parameters, and prints per model the mean over
windows of the same-instance gap median and mean (seconds between two
recycles on one instance), their ratio and the recycle rate, each with its
standard error. It checks that the gap rows of validation.json compare like
with like (docs/calibration.md, "What the third draw misses").

    python3 tools/truth/gaps.py --fleet 47 --truth-seeds 100 --fleetsim-seeds 200
    python3 tools/truth/gaps.py --fleet 47 --bin target/release/fleetsim --hours 96

Needs simpy (fleet_truth.py) and a fleetsim binary (default
target/release/fleetsim).
"""

import argparse
import csv
import os
import statistics as st
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import fleet_truth  # noqa: E402
import recovery  # noqa: E402


def gaps_of(rows):
    """rows: (ts, instance) of every recycle, in time order per instance."""
    by = {}
    for ts, inst in rows:
        by.setdefault(inst, []).append(ts)
    return [b - a for ts in by.values() for a, b in zip(ts, ts[1:])]


def summary(name, windows, hours):
    """windows: a list of (gaps, recycles) per window."""
    meds = [st.median(g) for g, _ in windows]
    means = [st.mean(g) for g, _ in windows]
    rates = [n / hours for _, n in windows]
    n = len(windows)

    def se(xs):
        return st.stdev(xs) / n ** 0.5

    print(f"{name:8s} {hours:g} h, {n} windows: gap median {st.mean(meds):.0f} s (se {se(meds):.0f}), "
          f"gap mean {st.mean(means):.0f} s (se {se(means):.0f}), "
          f"median / mean {st.mean(m / a for m, a in zip(meds, means)):.4f}, "
          f"recycles/h {st.mean(rates):.3f} (se {se(rates):.3f})")


def fleetsim_sets(p):
    """fleet_truth parameters as fleetsim --set keys on the embedded default."""
    s = {
        "fleet.boot_rss_mb": p["boot_mb"],
        "policy.base_limit_mb": p["base_mb"],
        "policy.jitter_mb": p["jitter_mb"],
        "policy.hard_limit_mb": p["hard_mb"],
        "fleet.leak.mean_mb_per_request": p["leak_mean"],
        "fleet.leak.cv": p["leak_cv"],
        "fleet.leak.warmup_mb": p["warmup_mb"],
        "fleet.leak.step_probability": 0,
        "workload.rps": p["rps"],
        "workload.profile": "constant",
        "policy.tick_s": p["tick_s"],
        "policy.cooldown_s": p["cooldown_s"],
        "policy.lease.ttl_s": p["lease_ttl_s"],
        "policy.busy_deferral": "false" if p["busy_rps"] is None else "true",
    }
    if p["profile"] != "constant":
        sys.exit("gaps.py: constant-traffic fleets only")
    return s


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--fleet", type=int, default=47, help="grid index (recovery.py --list)")
    ap.add_argument("--truth-seeds", type=int, default=100)
    ap.add_argument("--fleetsim-seeds", type=int, default=200)
    ap.add_argument("--hours", type=float, default=None, help="window length (the fleet's)")
    ap.add_argument("--bin", default=os.path.join(recovery.REPO, "target", "release", "fleetsim"))
    a = ap.parse_args()
    _, p = fleet_truth.parse_params(recovery.GRID[a.fleet]["flags"])
    if a.hours:
        p["hours"] = a.hours
    hours = p["hours"]
    if "hard_mb" not in p or p["hard_mb"] is None:
        p["hard_mb"] = p["base_mb"] + 150

    windows = []
    for seed in range(3000, 3000 + a.truth_seeds):
        f, _ = fleet_truth.simulate(dict(p, seed=seed), seed=seed)
        rows = [(r[0], r[2]) for r in f.rows if r[1] == "worker_recycled"]
        windows.append((gaps_of(rows), len(rows)))
    summary("truth", windows, hours)

    sets = [x for k, v in fleetsim_sets(p).items() for x in ("--set", f"{k}={v}")]
    windows = []
    with tempfile.TemporaryDirectory() as tmp:
        for seed in range(1, 1 + a.fleetsim_seeds):
            out = os.path.join(tmp, str(seed))
            subprocess.run([a.bin, "run", "--seed", str(seed), "--hours", str(hours), "--out", out,
                            *sets], check=True, stdout=subprocess.DEVNULL)
            with open(os.path.join(out, "events.csv"), newline="") as fh:
                rows = [(float(r["ts"]), r["instance"]) for r in csv.DictReader(fh)
                        if r["event"] == "worker_recycled"]
            windows.append((gaps_of(rows), len(rows)))
    summary("fleetsim", windows, hours)


if __name__ == "__main__":
    main()
