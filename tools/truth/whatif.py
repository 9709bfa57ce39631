#!/usr/bin/env python3
"""whatif: what a policy change does to the ground-truth model itself.

Each of --pairs seeds runs under the base flags and under each change (the
same seed: common random numbers; fleet_truth keeps separate random streams
for arrivals, service times and each worker life, so a policy change leaves
them untouched). Prints JSON: per change and figure, the base mean, the
changed mean and the paired difference with its 95% t interval.

    python3 tools/truth/whatif.py --pairs 40 --change base-mb=480 \\
        -- --boot-mb 420 --base-mb 520 --jitter-mb 40 --leak-mean 0.15 --leak-cv 0.6 --rps 1.5 --hours 24

A change is comma-separated fleet_truth flags without their dashes, each
`name=value` (or a bare `name` for a switch): `base-mb=480`,
`lease-ttl-s=0`, `bucket-per-h=4,bucket-burst=2`. Repeat --change for
several; every flag after `--` is a base flag of fleet_truth.py.
"""

import argparse
import json
import math
import multiprocessing
import os
import statistics
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import fleet_truth  # noqa: E402

FIGURES = ["recycles_per_hour", "requests_per_life_mean", "held_fraction",
           "pressure_recycles", "oom_kills", "realised_rps"]

# two-sided 95% t quantiles, df 1..30
T975 = [12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228,
        2.201, 2.179, 2.160, 2.145, 2.131, 2.120, 2.110, 2.101, 2.093, 2.086,
        2.080, 2.074, 2.069, 2.064, 2.060, 2.056, 2.052, 2.048, 2.045, 2.042]


def t975(df):
    if df < 1:
        return float("nan")
    if df <= 30:
        return T975[df - 1]
    z = 1.959963984540054  # Cornish-Fisher expansion in 1/df
    return z + (z ** 3 + z) / (4 * df) + (5 * z ** 5 + 16 * z ** 3 + 3 * z) / (96 * df * df)


def change_to_argv(change):
    argv = []
    for item in change.split(","):
        item = item.strip()
        if not item:
            continue
        name, eq, value = item.partition("=")
        argv.append("--" + name.lstrip("-"))
        if eq:
            argv.append(value)
    return argv


def run_one(task):
    argv, seed = task
    _, p = fleet_truth.parse_params(argv + ["--seed", str(seed)])
    _, m = fleet_truth.simulate(p)
    return {k: m.get(k) for k in FIGURES + ["recycles", "wall_s"]}


def mean_ci(xs):
    xs = [x for x in xs if x is not None]
    n = len(xs)
    if n == 0:
        return {"n": 0, "mean": None, "sd": None, "ci95": None, "lo": None, "hi": None}
    mu = statistics.fmean(xs)
    sd = statistics.stdev(xs) if n > 1 else float("nan")
    half = t975(n - 1) * sd / math.sqrt(n) if n > 1 else float("nan")
    return {"n": n, "mean": mu, "sd": sd, "ci95": half, "lo": mu - half, "hi": mu + half}


def measure(base_argv, changes, pairs, first_seed=1, jobs=2):
    """The paired study; returns the JSON-able result. `changes` is a list of
    change strings (see the module doc)."""
    fleet_truth.parse_params(base_argv)  # fail early on a bad flag
    seeds = list(range(first_seed, first_seed + pairs))
    variants = [("base", [])] + [(c, change_to_argv(c)) for c in changes]
    tasks = [(base_argv + extra, s) for _, extra in variants for s in seeds]
    if jobs > 1:
        with multiprocessing.Pool(jobs) as pool:
            res = pool.map(run_one, tasks, chunksize=1)
    else:
        res = [run_one(t) for t in tasks]
    by = {name: res[i * pairs:(i + 1) * pairs] for i, (name, _) in enumerate(variants)}
    out = {"base_flags": base_argv, "pairs": pairs, "seeds": [seeds[0], seeds[-1]],
           "base": {f: mean_ci([r[f] for r in by["base"]]) for f in FIGURES},
           "changes": []}
    for name, extra in variants[1:]:
        entry = {"change": name, "flags": extra, "figures": {}}
        for f in FIGURES:
            b = [r[f] for r in by["base"]]
            c = [r[f] for r in by[name]]
            d = [y - x for x, y in zip(b, c) if x is not None and y is not None]
            entry["figures"][f] = {"base_mean": mean_ci(b)["mean"], "changed_mean": mean_ci(c)["mean"],
                                   "diff": mean_ci(d)}
        out["changes"].append(entry)
    out["wall_s_per_run_mean"] = statistics.fmean(r["wall_s"] for r in res)
    return out


def main(argv=None):
    argv = sys.argv[1:] if argv is None else argv
    if "--" in argv:
        i = argv.index("--")
        own, base = argv[:i], argv[i + 1:]
    else:
        own, base = argv, []
    ap = argparse.ArgumentParser(description="Paired what-if on the ground-truth model",
                                 epilog="base flags of fleet_truth.py go after `--`")
    ap.add_argument("--pairs", type=int, default=40)
    ap.add_argument("--first-seed", type=int, default=1)
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--change", action="append", required=True,
                    help="e.g. base-mb=480 | lease-ttl-s=0 | bucket-per-h=4,bucket-burst=2 (repeatable)")
    ns = ap.parse_args(own)
    out = measure(base, ns.change, ns.pairs, ns.first_seed, ns.jobs)
    json.dump(out, sys.stdout, indent=2)
    sys.stdout.write("\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
