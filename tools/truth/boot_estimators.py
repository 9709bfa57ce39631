#!/usr/bin/env python3
"""boot_estimators: how precisely each overshoot statistic pins boot RSS.

For each fleet of recovery.py's grid, N recordings of the independent SimPy
model (fleet_truth.py, seeds 90000..), and for each estimator of the
overshoot in requests, `(rss - limit) * requests / (rss - boot)` in
half-ticks (a quantile, a mean, a capped mean), boot solved from the
estimator on each recording with its target set to the estimator's median
at the true boot (so only the spread counts, as in indirect inference,
where the simulation calibrates the bias away). Prints per fleet the sd of
the boot estimate (MB) and how many recordings land within +-25 MB.
docs/calibration.md, "2026-12-02", has the table.

    python3 tools/truth/boot_estimators.py 0,12,16,22,25,39 30
    python3 tools/truth/boot_estimators.py 45,23 30 --out /tmp/bexp
"""

import argparse
import csv
import os
import statistics as st
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import recovery  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))


def rows_of(path):
    out = []
    with open(path) as fh:
        for r in csv.DictReader(fh):
            if r["event"] == "worker_recycled":
                out.append((float(r["rss_mb"]), float(r["limit_mb"]), float(r["requests"])))
    return out


def solve(f, lo, hi, c):
    """Bisection for f(b) = c, f increasing in b on [lo, hi]; a bound when outside."""
    if f(lo) >= c:
        return lo
    if f(hi) <= c:
        return hi
    for _ in range(60):
        m = (lo + hi) / 2
        if f(m) < c:
            lo = m
        else:
            hi = m
    return (lo + hi) / 2


def q(v, p):
    v = sorted(v)
    x = p * (len(v) - 1)
    i = int(x)
    f = x - i
    j = min(i + 1, len(v) - 1)
    return v[i] * (1 - f) + v[j] * f


ESTIMATORS = {
    "q0.3": lambda m: q(m, 0.3),
    "q0.5": lambda m: q(m, 0.5),
    "q0.7": lambda m: q(m, 0.7),
    "q0.8": lambda m: q(m, 0.8),
    "q0.85": lambda m: q(m, 0.85),
    "q0.9": lambda m: q(m, 0.9),
    "mean": lambda m: sum(m) / len(m),
    "mean capped 2.5": lambda m: sum(min(x, 2.5) for x in m) / len(m),
}


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("fleets", help="comma-separated grid indices (recovery.py --list)")
    ap.add_argument("n", type=int, help="recordings per fleet")
    ap.add_argument("--out", default="/tmp/boot-estimators", help="where recordings go")
    a = ap.parse_args()
    os.makedirs(a.out, exist_ok=True)
    for f in [int(x) for x in a.fleets.split(",")]:
        flags = recovery.GRID[f]["flags"]
        p = dict(zip(flags[0::2], flags[1::2]))
        boot, rps, tick = float(p["--boot-mb"]), float(p["--rps"]), float(p["--tick-s"])
        half_tick = rps / 6 * tick / 2  # requests per worker in half a tick
        recs = []
        for k in range(a.n):
            path = os.path.join(a.out, f"f{f}-{k}.csv")
            if not os.path.exists(path):
                subprocess.run([sys.executable, os.path.join(HERE, "fleet_truth.py"), *flags,
                                "--seed", str(90000 + k), "--out", path, "--quiet"], check=True)
            recs.append(rows_of(path))
        cells = []
        for name, est in ESTIMATORS.items():
            def stat(rows, b):
                return est([max(0.0, rss - lim) * n / max(rss - b, 1e-9) / half_tick
                            for rss, lim, n in rows])
            target = st.median(stat(r, boot) for r in recs)
            err = [solve(lambda b: stat(r, b), 0.0, min(x[0] for x in r) - 0.5, target) - boot
                   for r in recs]
            cells.append(f"{name} sd {st.pstdev(err):.1f} within25 {sum(abs(e) <= 25 for e in err)}/{a.n}")
        rows_day = st.mean(len(r) for r in recs)
        print(f"fleet {f} ({rows_day:.0f} recycles a day, whole MB {'--whole-mb' in flags}): "
              + " | ".join(cells), flush=True)


if __name__ == "__main__":
    main()
