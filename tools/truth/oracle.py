#!/usr/bin/env python3
"""How well can ANY estimator place boot RSS from recycle rows alone?

An oracle for docs/calibration.md ("What still misses"): on recordings of
one fleet drawn by the independent SimPy model (fleet_truth.py), it
estimates boot RSS by maximum likelihood with everything else the
calibration has to estimate handed to it: the tick, the per-worker request
rate, the model's exact form. The rows are (rss, limit, requests) per
recycle. Given a boot b, each row fixes its worker's velocity
v = (rss - b) / requests and its overshoot in requests
u = requests (rss - limit) / (rss - b); the likelihood is

    prod_i  lognormal(v_i; mu, sigma) * p_u(u_i)

(the Jacobian of (v, u) -> (rss, requests) is 1/requests, free of b), with
mu and sigma profiled out (their MLE on log v_i(b)) and p_u the overshoot
of a sampled timer: requests in a uniform fraction of a tick, Poisson with
mean lambda U, lambda = per-worker rate x tick, so p_u(k) = P(Pois(lambda)
> k) / lambda, mixed with 20% of held recycles (uniform over 0..30 lambda).
The maximum over a 0.25 MB grid is the estimate. Its spread over many
recordings of one fleet is about the least any recycle-rows estimator can
have on it: if the oracle misses +-25 MB, so will calibration.

    python3 tools/truth/oracle.py --fleet 12 --recordings 40
    python3 tools/truth/oracle.py --recording DIR/f7.csv   # a cleanroom.py recording
"""

from __future__ import annotations

import argparse
import math
import os
import statistics
import sys

sys.path.insert(0, os.path.dirname(__file__))
import fleet_truth  # noqa: E402
import recovery  # noqa: E402


def pois_sf(k: int, lam: float) -> float:
    """P(Pois(lam) > k)."""
    term, cdf = math.exp(-lam), 0.0
    for j in range(k + 1):
        cdf += term
        term *= lam / (j + 1)
    return max(1.0 - cdf, 1e-300)


def loglik(b: float, rows, lam: float, held: float = 0.2) -> float:
    logs, total = [], 0.0
    for rss, lim, n in rows:
        d = rss - b
        if d <= 0 or n <= 0:
            return -math.inf
        v = d / n
        logs.append(math.log(v))
        u = n * max(rss - lim, 0.0) / d
        p = (1 - held) * pois_sf(int(u), lam) / lam + held / (30 * lam) * (u < 30 * lam)
        total += math.log(max(p, 1e-300))
    mu = statistics.fmean(logs)
    var = statistics.fmean([(x - mu) ** 2 for x in logs])
    sigma = math.sqrt(max(var, 1e-12))
    # lognormal log-density summed: -sum(log v) - n log sigma - n/2 (profiled)
    total += -sum(logs) - len(logs) * math.log(sigma) - len(logs) / 2.0
    return total


def oracle_boot(rows, lam: float) -> float:
    hi = min(r[0] for r in rows) - 0.25
    grid = [hi - 0.25 * k for k in range(int((hi - 100.0) / 0.25))]
    return max(grid, key=lambda b: loglik(b, rows, lam))


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--fleet", type=int, help="a fleet of recovery.py --list")
    ap.add_argument("--recording", help="instead: one cleanroom.py recording (CSV, beside its .truth.json)")
    ap.add_argument("--recordings", type=int, default=40)
    ap.add_argument("--first-seed", type=int, default=900001)
    a = ap.parse_args()
    if a.recording:
        import csv
        import json
        t = json.load(open(a.recording[:-len(".csv")] + ".truth.json"))["params"]
        rows = [(float(r["rss_mb"]), float(r["limit_mb"]), int(r["requests"]))
                for r in csv.DictReader(open(a.recording))]
        workers = t["instances"] * t.get("workers_per_instance", 3)
        b = oracle_boot(rows, t["rps"] / workers * t["tick_s"])
        print(f"{a.recording}: {len(rows)} recycles, truth {t['boot_mb']:g} MB, "
              f"oracle {b:.1f} MB ({b - t['boot_mb']:+.1f})")
        return
    if a.fleet is None:
        ap.error("--fleet or --recording")
    p = recovery.fleet_params(a.fleet)
    workers = p["instances"] * p["workers"]
    lam = p["rps"] / workers * p["tick_s"]
    truth = p["boot_mb"]
    errs, recycles = [], []
    for k in range(a.recordings):
        f, _ = fleet_truth.simulate(p, seed=a.first_seed + k)
        whole = p["whole_mb"]
        rows = []
        for (_t, ev, _i, _s, rss, lim, req) in f.rows:
            if ev != "worker_recycled":
                continue
            if whole:
                rss, lim = math.floor(rss + 0.5), math.floor(lim + 0.5)
            else:
                rss, lim = round(rss, 1), round(lim, 1)
            rows.append((rss, lim, req))
        recycles.append(len(rows))
        errs.append(oracle_boot(rows, lam) - truth)
        print(f"  recording {k + 1}: {len(rows)} recycles, oracle boot error {errs[-1]:+.1f} MB",
              file=sys.stderr, flush=True)
    within = sum(abs(e) <= 25 for e in errs)
    print(f"fleet {a.fleet} (boot {truth:g} MB, lambda {lam:.2f} requests per worker-tick, "
          f"{'whole MB' if p['whole_mb'] else '0.1 MB'}): {a.recordings} recordings, "
          f"{statistics.fmean(recycles):.0f} recycles each on average")
    print(f"  oracle boot error: mean {statistics.fmean(errs):+.1f} MB, sd {statistics.stdev(errs):.1f} MB, "
          f"within +-25 MB {within}/{len(errs)}")


if __name__ == "__main__":
    main()
