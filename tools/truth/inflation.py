#!/usr/bin/env python3
"""How far one window's recycles are from independent draws, in both models.

For a fleet of recovery.py's grid (constant traffic), runs fleet_truth.py and
fleetsim on N seeds each with the same parameters and prints, per model and
per sample (same-instance gaps, requests per worker), the KS inflation that
validation uses (`replay::validate::ks_inflation`): each window's scaled KS
statistic against the other windows pooled, its root mean square over the
Kolmogorov distribution's (pi^2 / 12). Independent draws give about 1.

    python3 tools/truth/inflation.py --fleet 47 --truth-flags "--leak-cv 0.02" --windows 24

Needs simpy and a fleetsim binary (default target/release/fleetsim).
"""

import argparse
import csv
import math
import os
import shlex
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import fleet_truth  # noqa: E402
import gaps  # noqa: E402
import recovery  # noqa: E402


def ks_lambda(a, b):
    a, b = sorted(a), sorted(b)
    i = j = 0
    d = 0.0
    n, m = len(a), len(b)
    while i < n and j < m:
        x = min(a[i], b[j])
        while i < n and a[i] <= x:
            i += 1
        while j < m and b[j] <= x:
            j += 1
        d = max(d, abs(i / n - j / m))
    ne = n * m / (n + m)
    return (math.sqrt(ne) + 0.12 + 0.11 / math.sqrt(ne)) * d


def inflation(windows):
    sq = []
    for j, w in enumerate(windows):
        if len(w) < 5:
            continue
        rest = [x for k, o in enumerate(windows) if k != j for x in o]
        sq.append(ks_lambda(w, rest) ** 2)
    return math.sqrt(sum(sq) / len(sq) / (math.pi ** 2 / 12)) if len(sq) >= 8 else float("nan")


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--fleet", type=int, default=47, help="grid index (recovery.py)")
    ap.add_argument("--truth-flags", default="", help="fleet_truth flags added (e.g. \"--leak-cv 0.02\")")
    ap.add_argument("--windows", type=int, default=24)
    ap.add_argument("--bin", default=os.path.join(recovery.REPO, "target", "release", "fleetsim"))
    a = ap.parse_args()
    flags = recovery.GRID[a.fleet]["flags"] + shlex.split(a.truth_flags)
    _, p = fleet_truth.parse_params(flags)
    if p.get("hard_mb") is None:
        p["hard_mb"] = p["base_mb"] + 150
    sets = [x for k, v in gaps.fleetsim_sets(p).items() for x in ("--set", f"{k}={v}")]
    models = {"truth": ([], []), "fleetsim": ([], [])}
    with tempfile.TemporaryDirectory() as tmp:
        for s in range(a.windows):
            out = os.path.join(tmp, f"t{s}.csv")
            fleet_truth.main(flags + ["--seed", str(5000 + s), "--out", out, "--quiet"])
            with open(out, newline="") as fh:
                rows = list(csv.DictReader(fh))
            models["truth"][0].append(gaps.gaps_of(sorted((float(r["ts"]), r["instance"]) for r in rows)))
            models["truth"][1].append([float(r["requests"]) for r in rows])
            out = os.path.join(tmp, f"f{s}")
            subprocess.run([a.bin, "run", "--seed", str(s + 1), "--hours", str(p["hours"]), "--out", out,
                            *sets], check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            with open(os.path.join(out, "events.csv"), newline="") as fh:
                rows = [r for r in csv.DictReader(fh) if r["event"] == "worker_recycled"]
            models["fleetsim"][0].append(gaps.gaps_of([(float(r["ts"]), r["instance"]) for r in rows]))
            models["fleetsim"][1].append([float(r["requests"]) for r in rows])
    for name, (g, r) in models.items():
        print(f"{name:8s} fleet {a.fleet}, {a.windows} windows: inflation of same-instance gaps "
              f"{inflation(g):.3f}, of requests per worker {inflation(r):.3f}")


if __name__ == "__main__":
    main()
