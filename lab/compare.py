#!/usr/bin/env python3
"""The comparison of issue 15 item 4: does fleetsim, calibrated on one lab
recording, predict what a policy change does to the real lab?

    python3 lab/compare.py --fleetsim target/release/fleetsim \
        --seeds 1,2,3 --seconds 300 --whatif base-lower,token-bucket

1. runs the lab under the recorded policy (fleet.toml's) once per seed;
2. calibrates fleetsim on the first seed's recording and predicts each
   what-if (`fleetsim replay telemetry.jsonl canary.jsonl --calibrate
   --scenario lab/fleet.toml --what-if lab/policies/X.toml ...`; with
   `--force` if the calibration does not reproduce its window, which the
   doc then says) BEFORE the lab runs under the what-ifs;
3. runs the lab under each what-if once per seed;
4. writes docs/lab.md: per figure the lab's mean and 95% CI over its runs,
   the lab's change (Welch 95% CI of the difference of means), fleetsim's
   predicted change with its interval (whatif.json `diff_mean`,
   `diff_ci95`), and the verdict.

Runs already complete under --out (run.json with ok) are reused, so an
interrupted comparison resumes. Every number in the doc comes from the
files under --out.
"""

from __future__ import annotations

import argparse
import datetime
import json
import math
import os
import subprocess
import sys

LAB = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(LAB)

# Student t 0.975 quantiles by degrees of freedom (1..30), then normal.
T975 = [12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228, 2.201, 2.179,
        2.160, 2.145, 2.131, 2.120, 2.110, 2.101, 2.093, 2.086, 2.080, 2.074, 2.069, 2.064,
        2.060, 2.056, 2.052, 2.048, 2.045, 2.042]


SOURCES = ["telemetry.jsonl", "canary.jsonl", "gunicorn-A.log", "gunicorn-B.log", "rss.csv"]


def t975(df: float) -> float:
    if df < 1:
        return float("nan")
    if df >= 30:
        return 1.96 + 2.4 / df  # close to the table's tail
    lo = int(math.floor(df))
    hi = min(lo + 1, 30)
    a, b = T975[lo - 1], T975[hi - 1]
    return a + (b - a) * (df - lo)


def quantile(xs, q):
    """numpy's linear interpolation, as fleetsim's quantile_sorted."""
    xs = sorted(xs)
    if not xs:
        return None
    h = (len(xs) - 1) * q
    lo = math.floor(h)
    hi = min(lo + 1, len(xs) - 1)
    return xs[lo] + (xs[hi] - xs[lo]) * (h - lo)


def mean_ci(xs):
    n = len(xs)
    m = sum(xs) / n
    if n < 2:
        return m, float("nan"), float("nan")
    var = sum((x - m) ** 2 for x in xs) / (n - 1)
    return m, t975(n - 1) * math.sqrt(var / n), var


def welch(a, b):
    """Mean of b - a and its 95% half-width (Welch)."""
    ma, _, va = mean_ci(a)
    mb, _, vb = mean_ci(b)
    na, nb = len(a), len(b)
    se2 = va / na + vb / nb
    if se2 == 0:
        return mb - ma, 0.0
    df = se2 ** 2 / ((va / na) ** 2 / (na - 1) + (vb / nb) ** 2 / (nb - 1))
    return mb - ma, t975(df) * math.sqrt(se2)


def figures(run_dir: str) -> dict:
    """One lab run's figures, from its own files only."""
    run = json.load(open(os.path.join(run_dir, "run.json")))
    cfg = json.load(open(os.path.join(run_dir, "lab-config.json")))
    hard = float(cfg["policy"]["hard_limit_mb"])
    hours = (run["window_end"] - run["window_start"]) / 3600.0
    rec, holds = [], 0
    for line in open(os.path.join(run_dir, "telemetry.jsonl")):
        r = json.loads(line)
        if r["event"] == "worker_recycled":
            rec.append(r)
        elif r["event"] == "recycle_held":
            holds += 1
    retry_ok = fetch_failed = 0
    for line in open(os.path.join(run_dir, "canary.jsonl")):
        e = json.loads(line)["event"]
        retry_ok += e == "retry_ok"
        fetch_failed += e == "fetch_failed"
    peak_over = 0.0
    peak_rss = 0.0
    with open(os.path.join(run_dir, "rss.csv")) as f:
        next(f)
        for line in f:
            ts, inst, worker, rss, *_ = line.split(",")
            if worker != "master":
                peak_rss = max(peak_rss, float(rss))
    peak_over = max(0.0, peak_rss - hard)
    n = len(rec)
    return {
        "recycles": n,
        "recycles_per_hour": n / hours,
        "retry_ok_per_recycle": retry_ok / n if n else float("nan"),
        "resets_per_recycle": (retry_ok + fetch_failed) / n if n else float("nan"),
        "fetch_failed": fetch_failed,
        "requests_per_worker_p10": quantile([r["requests"] for r in rec], 0.10),
        "max_overshoot_mb": peak_over,
        "max_rss_mb": peak_rss,
        "pressure_recycles": sum(bool(r.get("pressure")) for r in rec),
        "bypass_hard_ceiling": sum(r.get("lease") == "bypassed_hard_ceiling"
                                   or "bypass_hard_ceiling" in r.get("branch", "") for r in rec),
        "holds": holds,
        "window_h": hours,
    }


def run_lab(out: str, seed: int, policy: str, seconds: float) -> str:
    d = os.path.join(out, "runs", f"{os.path.splitext(os.path.basename(policy))[0]}-seed{seed}")
    rj = os.path.join(d, "run.json")
    if os.path.exists(rj) and json.load(open(rj)).get("ok"):
        print(f"compare: reusing {d}", file=sys.stderr)
        return d
    if os.path.exists(d):
        subprocess.run(["rm", "-rf", d], check=True)
    cmd = [os.path.join(LAB, "run.sh"), "record", "--seconds", str(seconds), "--seed", str(seed),
           "--policy", policy, "--out", d]
    print(f"compare: {' '.join(cmd)}", file=sys.stderr, flush=True)
    rc = subprocess.run(cmd).returncode
    if rc != 0:
        raise SystemExit(f"compare: the lab run failed (exit {rc}): {d}")
    return d


# (lab figure, whatif.json metric, label, how fleetsim's value is compared)
ROWS = [
    ("recycles_per_hour", "recycles_per_hour", "recycles/h"),
    ("requests_per_worker_p10", "requests_per_worker_p10", "requests per worker p10"),
    ("retry_ok_per_recycle", None, "retry_ok per recycle"),
    ("fetch_failed", "fetch_failed", "fetch_failed per window"),
    ("max_overshoot_mb", "max_overshoot_mb", "peak RSS over the ceiling (MB)"),
]


def fmt(x, nd=1):
    if x is None or (isinstance(x, float) and math.isnan(x)):
        return "n/a"
    return f"{x:.{nd}f}"


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--fleetsim", default=os.environ.get("FLEETSIM", os.path.join(ROOT, "target/release/fleetsim")))
    ap.add_argument("--seeds", default="1,2,3")
    ap.add_argument("--seconds", type=float, default=300.0)
    ap.add_argument("--whatif", default="base-lower,token-bucket",
                    help="policy fragments in lab/policies/, comma-separated")
    ap.add_argument("--out", default=os.path.join(LAB, "runs", "compare"))
    ap.add_argument("--doc", default=os.path.join(ROOT, "docs", "lab.md"))
    a = ap.parse_args()
    seeds = [int(s) for s in a.seeds.split(",")]
    if len(seeds) < 2:
        raise SystemExit("compare: --seeds needs at least 2 seeds for an interval")
    if not os.access(a.fleetsim, os.X_OK):
        raise SystemExit(f"compare: fleetsim binary {a.fleetsim} is not executable (cargo build --release)")
    whatifs = [os.path.join(LAB, "policies", f"{w}.toml") for w in a.whatif.split(",")]
    for w in whatifs:
        if not os.path.exists(w):
            raise SystemExit(f"compare: no policy fragment {w}")
    recorded = os.path.join(LAB, "policies", "recorded.toml")
    os.makedirs(a.out, exist_ok=True)

    # 1. the recorded policy
    base_runs = [run_lab(a.out, s, recorded, a.seconds) for s in seeds]

    # 2. calibrate on the first run and predict, before the what-if runs
    cal = base_runs[0]
    pred_dir = os.path.join(a.out, "fleetsim")
    wj = os.path.join(pred_dir, "whatif.json")
    # Every file the lab writes that replay reads, at once: the recycler's
    # rows, the client's canary, gunicorn's logs (joined to the rows) and the
    # RSS series (boot and leak observed, not inferred).
    sources = [f for f in SOURCES if os.path.exists(os.path.join(cal, f))]
    cmd = [a.fleetsim, "replay", *[os.path.join(cal, f) for f in sources],
           "--calibrate", "--scenario", os.path.join(LAB, "fleet.toml"), "--out", pred_dir]
    for w in whatifs:
        cmd += ["--what-if", w]
    forced = False
    if not os.path.exists(wj):
        print(f"compare: {' '.join(cmd)}", file=sys.stderr, flush=True)
        with open(os.path.join(a.out, "fleetsim.txt"), "w") as log:
            rc = subprocess.run(cmd, stdout=log, stderr=subprocess.STDOUT).returncode
            log.flush()
            refused = "--force" in open(os.path.join(a.out, "fleetsim.txt")).read()
            if rc == 2 and refused:
                forced = True
                log.write("\n--- refused without --force: re-run with --force ---\n")
                log.flush()
                rc = subprocess.run(cmd + ["--force"], stdout=log, stderr=subprocess.STDOUT).returncode
        if rc != 0:
            raise SystemExit(f"compare: fleetsim replay exited {rc}: see {a.out}/fleetsim.txt")
    pred = json.load(open(wj))
    forced = pred.get("forced", forced)
    predicted_at = datetime.datetime.fromtimestamp(os.path.getmtime(wj), datetime.timezone.utc)

    # 3. the what-ifs in the lab
    alt_runs = {w: [run_lab(a.out, s, w, a.seconds) for s in seeds] for w in whatifs}

    # 4. the table
    base_f = [figures(d) for d in base_runs]
    alt_f = {w: [figures(d) for d in ds] for w, ds in alt_runs.items()}
    by_policy = {p["policy"]: {f["metric"]: f for f in p["figures"]} for p in pred["policies"]}
    recorded_pred = by_policy["recorded"]
    cal_window_h = base_f[0]["window_h"]

    def pred_ratio(pol):
        """fleetsim's retry_ok per recycle: (resets - fetch_failed) / recycles, means only."""
        f = by_policy[pol]
        rec_n = f["recycles_per_hour"]["mean"] * cal_window_h
        return (f["requests_reset"]["mean"] - f["fetch_failed"]["mean"]) / rec_n if rec_n else float("nan")

    lines = []
    P = lines.append
    P("# The real-fleet lab: does fleetsim predict a policy change?")
    P("")
    P("Generated by `lab/compare.py` (issue 15, item 4); every number below is computed by it from")
    P(f"the files under `{os.path.relpath(a.out, ROOT)}/` (not committed: the lab's runs are large; the")
    P("committed example recording is `lab/recordings/`). Reproduce with:")
    P("")
    P("```sh")
    P("cargo build --release")
    P(f"python3 lab/compare.py --fleetsim target/release/fleetsim --seeds {a.seeds} "
      f"--seconds {a.seconds:g} --whatif {a.whatif}")
    P("```")
    P("")
    P(f"The lab (`lab/README.md`): 2 gunicorn --preload + UvicornWorker instances x 3 workers, the seeds'")
    P(f"recycler at time factor 20, a Redis lease, an undici client; {len(seeds)} runs of {a.seconds:g} s per")
    P(f"policy (seeds {a.seeds}). fleetsim was calibrated on the recorded policy's seed-{seeds[0]} run")
    P(f"(`{os.path.relpath(cal, ROOT)}`: {' + '.join(sources)}, `--scenario lab/fleet.toml`) and its")
    P(f"what-ifs were written at {predicted_at:%Y-%m-%d %H:%M} UTC.")
    if forced or not pred.get("calibration_reproduces", True):
        P("")
        P(f"**The calibration does not reproduce its window** (rows that warned: "
          f"{', '.join(pred.get('warned', [])) or 'see fleetsim.txt'}); the what-ifs were run with")
        P("`--force`, as fleetsim labels them. Its validation output is quoted below.")
    P("")
    P("Lab figures per run (from the recordings: telemetry.jsonl, canary.jsonl, rss.csv):")
    P("")
    P("| policy | seed | recycles | recycles/h | rpw p10 | retry_ok/recycle | fetch_failed | peak RSS over ceiling (MB) | pressure recycles | hard-ceiling bypasses | holds |")
    P("| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |")
    for pol, fs in [("recorded", base_f)] + [(os.path.basename(w), alt_f[w]) for w in whatifs]:
        for s, f in zip(seeds, fs):
            P(f"| {pol} | {s} | {f['recycles']} | {fmt(f['recycles_per_hour'])} | "
              f"{fmt(f['requests_per_worker_p10'], 0)} | {fmt(f['retry_ok_per_recycle'], 3)} | "
              f"{f['fetch_failed']} | {fmt(f['max_overshoot_mb'])} | {f['pressure_recycles']} | "
              f"{f['bypass_hard_ceiling']} | {f['holds']} |")
    P("")
    P("## The comparison")
    P("")
    P("Lab: mean +- 95% CI over its runs (t interval); lab change: the difference of the what-if's")
    P("mean and the recorded policy's, +- its Welch 95% CI. fleetsim: its predicted level under each")
    P("policy (whatif.json `mean`) and predicted change (`diff_mean` +- `diff_ci95`: simulation noise")
    P("and calibration uncertainty). Verdict: **within** when fleetsim's predicted change lies inside")
    P("the lab's 95% CI of the change; **overlap** when only the two intervals overlap; **miss**")
    P("otherwise.")
    P("")
    P("| what-if | figure | lab recorded | lab what-if | lab change | fleetsim recorded | fleetsim what-if | fleetsim change | verdict |")
    P("| --- | --- | --- | --- | --- | --- | --- | --- | --- |")
    verdicts = []
    for w in whatifs:
        key = os.path.relpath(w, ROOT)
        pol = by_policy.get(key) or by_policy.get(w) or next(
            (v for k, v in by_policy.items() if k.endswith(os.path.basename(w))), None)
        if pol is None:
            raise SystemExit(f"compare: whatif.json has no policy {key}: {list(by_policy)}")
        for fig, metric, label in ROWS:
            a_ = [f[fig] for f in base_f]
            b_ = [f[fig] for f in alt_f[w]]
            if any(x is None or (isinstance(x, float) and math.isnan(x)) for x in a_ + b_):
                continue
            ma, ca, _ = mean_ci(a_)
            mb, cb, _ = mean_ci(b_)
            d, cd = welch(a_, b_)
            if metric is None:
                pa = pred_ratio("recorded")
                pname = next(k for k in by_policy if by_policy[k] is pol)
                pb = pred_ratio(pname)
                pd, pci = pb - pa, None
            else:
                pa = recorded_pred[metric]["mean"]
                pb = pol[metric]["mean"]
                pd, pci = pol[metric]["diff_mean"], pol[metric]["diff_ci95"]
            if abs(pd - d) <= cd:
                v = "within"
            elif pci is not None and abs(pd - d) <= cd + pci:
                v = "overlap"
            else:
                v = "miss"
            verdicts.append((os.path.basename(w), label, v))
            nd = 3 if fig == "retry_ok_per_recycle" else 1
            pstr = f"{pd:+.{nd}f}" + (f" +- {pci:.{nd}f}" if pci is not None else " (means only)")
            P(f"| {os.path.basename(w)} | {label} | {ma:.{nd}f} +- {ca:.{nd}f} | {mb:.{nd}f} +- {cb:.{nd}f} | "
              f"{d:+.{nd}f} +- {cd:.{nd}f} | {pa:.{nd}f} | {pb:.{nd}f} | {pstr} | {v} |")
    P("")
    P("Verdicts: " + ", ".join(f"{w} {l}: {v}" for w, l, v in verdicts) + ".")
    P("")
    txt = os.path.join(a.out, "fleetsim.txt")
    if os.path.exists(txt):
        keep = [l.rstrip() for l in open(txt) if "simulated windows" not in l]
        start = next((i for i, l in enumerate(keep) if l.startswith("calibration:")), 0)
        P("## fleetsim's calibration, validation and what-ifs (its output, quoted)")
        P("")
        P("```")
        lines.extend(keep[start:])
        P("```")
        P("")
    marker = "<!-- analysis: written by hand below this line, from the tables above; kept on re-runs -->"
    P(marker)
    if os.path.exists(a.doc):  # keep the hand-written analysis of an earlier run
        old = open(a.doc).read()
        if marker in old:
            lines.append(old.split(marker, 1)[1].strip("\n"))
    os.makedirs(os.path.dirname(a.doc), exist_ok=True)
    tmp = a.doc + ".tmp"
    with open(tmp, "w") as f:
        f.write("\n".join(lines) + "\n")
    os.replace(tmp, a.doc)
    with open(os.path.join(a.out, "comparison.json"), "w") as f:
        json.dump({"recorded": base_f, "whatif": {os.path.basename(w): alt_f[w] for w in whatifs},
                   "verdicts": verdicts, "forced": forced}, f, indent=1)
    print(f"compare: wrote {a.doc}", file=sys.stderr)


if __name__ == "__main__":
    main()
