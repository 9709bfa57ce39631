#!/usr/bin/env python3
"""recovery: does `fleetsim replay --calibrate` recover a fleet's known truth?

Generates a grid of fleets with fleet_truth.py (the independent SimPy model),
several recordings (seeds) of each, calibrates every recording with

    ./target/release/fleetsim replay REC.csv --calibrate --out DIR --seed K

(the embedded default as the base: no --scenario) and tabulates, per fleet
and fitted parameter: truth, mean estimate, bias, sd across recordings and
coverage (the fraction of recordings whose reported interval holds the
truth), plus how often validation.json says the calibrated scenario
`reproduces` its window.

    python3 tools/truth/recovery.py                    # every fleet, 4 recordings each
    python3 tools/truth/recovery.py --fleets 0,1 --recordings 6
    python3 tools/truth/recovery.py --quick            # 2 fleets x 2 recordings (smoke test)
    python3 tools/truth/recovery.py --list             # the grid
    python3 tools/truth/recovery.py --whatif [--fleets 8] [--pairs 40]

--whatif: for a few fleets (default 0, 3, 8) it also runs the calibration's
what-if on a `[policy]` fragment (default: the base limit 40 MB lower,
`--whatif-kind limit`; or `lease`, `bucket`) and compares whatif.json's
predicted recycles/h difference with whatif.py's measured change on the
model itself. A Markdown table goes to stdout, CSVs to --outdir. Runs go two
at a time (--jobs). Standard library only (fleet_truth needs simpy).
"""

import argparse
import concurrent.futures as cf
import csv
import json
import math
import os
import re
import statistics
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import fleet_truth  # noqa: E402

REPO = os.path.abspath(os.path.join(HERE, "..", ".."))
BIN = os.path.join(REPO, "target", "release", "fleetsim")

# The parameters the calibration fits, and each one's truth in a fleet's
# fleet_truth parameters. The truth for the effective MB/request is the leak
# mean (fleet_truth has no steps; its warm-up is off in the grid).
KEYS = [
    ("fleet.boot_rss_mb", lambda p: p["boot_mb"]),
    ("fleet.leak.mean_mb_per_request", lambda p: p["leak_mean"]),
    ("fleet.leak.cv", lambda p: p["leak_cv"]),
    ("policy.base_limit_mb", lambda p: p["base_mb"]),
    ("policy.jitter_mb", lambda p: p["jitter_mb"]),
    ("workload.rps", lambda p: p["rps"]),
    ("policy.tick_s", lambda p: p["tick_s"]),
]


def F(boot, base, jitter, leak, cv, rps, tick, cooldown, hours=24, whole=False, diurnal=None,
      drop_ids=False, held_rows=False, note=""):
    """A fleet of the grid as fleet_truth flags (the hard ceiling pinned at base + 150,
    so a what-if on the base limit keeps it, as a [policy] fragment does)."""
    a = ["--boot-mb", boot, "--base-mb", base, "--jitter-mb", jitter, "--hard-mb", base + 150,
         "--leak-mean", leak, "--leak-cv", cv, "--rps", rps, "--tick-s", tick,
         "--cooldown-s", cooldown, "--hours", hours]
    if whole:
        a.append("--whole-mb")
    if drop_ids:
        a.append("--drop-ids")
    if held_rows:
        a.append("--held-rows")
    if diurnal:
        p2t, peak = diurnal
        a += ["--profile", "diurnal", "--peak-to-trough", p2t, "--peak-hour", peak]
    return {"flags": [str(x) for x in a], "note": note}


GRID = [
    F(360, 500, 40, 0.15, 0.6, 1.0, 45, 120, note="the seeds' fleet, no steps"),
    F(300, 520, 20, 0.08, 0.4, 2.0, 30, 60, hours=48),
    F(420, 560, 60, 0.30, 1.0, 0.8, 60, 180, whole=True),
    F(380, 600, 50, 0.20, 0.8, 3.0, 45, 120),
    F(340, 540, 30, 0.12, 0.5, 1.5, 60, 90, hours=48, whole=True),
    F(400, 580, 40, 0.25, 0.7, 1.2, 30, 150, diurnal=(3, 20)),
    F(320, 500, 60, 0.10, 0.9, 2.5, 50, 120),
    F(410, 550, 25, 0.18, 0.6, 1.0, 40, 180, hours=48, whole=True, diurnal=(5, 14)),
    F(420, 520, 40, 0.15, 0.6, 1.5, 45, 120, note="the what-if fleet (520 -> 480)"),
    F(360, 500, 40, 0.15, 0.6, 1.0, 45, 120, drop_ids=True, note="fleet 0 without instance/worker"),
    F(380, 560, 40, 0.20, 0.6, 2.0, 45, 120, held_rows=True, note="with recycle_held rows"),
    F(420, 520, 40, 0.15, 0.6, 1.5, 45, 120, held_rows=True, note="fleet 8 with recycle_held rows"),
]

QUICK_FLEETS = [0, 8]
WHATIF_FLEETS = [0, 3, 8]


def fleet_params(i):
    _, p = fleet_truth.parse_params(GRID[i]["flags"])
    return p


# --------------------------------------------------------------------------
# Reading the calibration's outputs: the one place to adjust when they change.


_NUM = r"[-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?"


def _num(x):
    try:
        v = float(x)
        return v if math.isfinite(v) else None
    except (TypeError, ValueError):
        return None


def read_calibration(out_dir):
    """-> (fits, reproduces, source). fits: {key: {value, se, lo, hi, identified, how}}
    with None for anything missing. Reads DIR/calibration.json (schema
    fleetsim.calibration/1); falls back to calibrated.toml's `# fitted:` comments
    (interval = value +- 1.96 se there). reproduces: validation.json's boolean, or None."""
    fits, source = {}, None
    cj = os.path.join(out_dir, "calibration.json")
    if os.path.exists(cj):
        try:
            with open(cj) as fh:
                doc = json.load(fh)
            items = doc.get("fits", []) if isinstance(doc, dict) else doc
            if isinstance(items, dict):  # tolerate {key: {...}}
                items = [dict(v, key=k) for k, v in items.items()]
            for it in items or []:
                if not isinstance(it, dict) or "key" not in it:
                    continue
                fits[it["key"]] = {
                    "value": _num(it.get("value", it.get("estimate"))),
                    "se": _num(it.get("se")),
                    "lo": _num(it.get("lo")), "hi": _num(it.get("hi")),
                    "identified": it.get("identified"),
                    "how": it.get("how", ""),
                }
            source = "calibration.json"
        except (OSError, ValueError) as e:
            source = f"calibration.json unreadable: {e}"
    if not fits:
        ct = os.path.join(out_dir, "calibrated.toml")
        if os.path.exists(ct):
            section = ""
            with open(ct) as fh:
                for line in fh:
                    s = line.strip()
                    m = re.match(r"^\[([^\]]+)\]", s)
                    if m:
                        section = m.group(1).strip()
                        continue
                    m = re.match(r"^([A-Za-z0-9_]+)\s*=\s*[^#]*#\s*fitted:\s*(" + _NUM +
                                 r"|n/a)\s*\+-\s*(" + _NUM + r"|n/a|set)\s*;?\s*(.*)$", s)
                    if not m:
                        continue
                    key = f"{section}.{m.group(1)}" if section else m.group(1)
                    v, se, how = _num(m.group(2)), _num(m.group(3)), m.group(4)
                    if m.group(3) == "set":
                        continue  # set from the regime (duration, start hour), not fitted
                    ident = v is not None and "not identifiable" not in how
                    # an identified value with se n/a (e.g. tick: no spread) gets the
                    # degenerate interval [v, v]
                    half = 1.96 * se if se is not None else 0.0
                    fits[key] = {"value": v, "se": se,
                                 "lo": v - half if ident else None,
                                 "hi": v + half if ident else None,
                                 "identified": ident, "how": how}
            source = (source + "; " if source else "") + "calibrated.toml # fitted (fallback)"
    for f in fits.values():  # fill a missing interval from the se
        if f["lo"] is None and f["value"] is not None and f["se"] is not None and f["identified"] is not False:
            f["lo"], f["hi"] = f["value"] - 1.96 * f["se"], f["value"] + 1.96 * f["se"]
    reproduces = None
    vj = os.path.join(out_dir, "validation.json")
    if os.path.exists(vj):
        try:
            with open(vj) as fh:
                v = json.load(fh)
            r = v.get("reproduces") if isinstance(v, dict) else None
            reproduces = r if isinstance(r, bool) else None
        except (OSError, ValueError):
            pass
    return fits, reproduces, source


def read_whatif(out_dir, metric="recycles_per_hour"):
    """-> (diff_mean, diff_ci95, base mean) of the first policy that is not
    "recorded" in DIR/whatif.json, or (None, None, None)."""
    path = os.path.join(out_dir, "whatif.json")
    try:
        with open(path) as fh:
            doc = json.load(fh)
    except (OSError, ValueError):
        return None, None, None
    entries = doc
    if isinstance(doc, dict):
        entries = doc.get("policies") or doc.get("entries") or doc.get("whatif") or []
    base = None
    for e in entries:
        if not isinstance(e, dict):
            continue
        figs = {f.get("metric"): f for f in e.get("figures", []) if isinstance(f, dict)}
        if e.get("policy") == "recorded":
            base = _num(figs.get(metric, {}).get("mean"))
            continue
        f = figs.get(metric)
        if f:
            return _num(f.get("diff_mean")), _num(f.get("diff_ci95")), base
    return None, None, base


# --------------------------------------------------------------------------
# Jobs


def rec_seed(fleet, r):
    return 1000 * (fleet + 1) + r + 1


def rec_paths(outdir, fleet, r):
    stem = os.path.join(outdir, f"f{fleet:02d}", f"rec{r + 1}")
    return stem + ".csv", stem + "-cal"


def job(task):
    """Generate one recording (if absent) and calibrate it; returns a result row."""
    fleet, r, outdir, whatif_toml = task
    rec, cal = rec_paths(outdir, fleet, r)
    if whatif_toml:
        cal += "-whatif"
    os.makedirs(os.path.dirname(rec), exist_ok=True)
    if not os.path.exists(rec):
        argv = GRID[fleet]["flags"] + ["--seed", str(rec_seed(fleet, r)), "--out", rec, "--quiet"]
        fleet_truth.main(argv)
    truth_path = rec[:-4] + ".truth.json"
    with open(truth_path) as fh:
        truth = json.load(fh)
    cmd = [BIN, "replay", rec, "--calibrate", "--out", cal, "--seed", str(r + 1)]
    if whatif_toml:
        cmd += ["--what-if", whatif_toml]
    pr = subprocess.run(cmd, capture_output=True, text=True)
    row = {"fleet": fleet, "recording": r + 1, "rec_seed": rec_seed(fleet, r), "rc": pr.returncode,
           "recycles": truth["measured"]["recycles"],
           "true_recycles_per_hour": truth["measured"]["recycles_per_hour"],
           "realised_rps": truth["measured"]["realised_rps"]}
    if pr.returncode != 0:
        row["error"] = (pr.stderr or pr.stdout).strip().splitlines()[-1:] or ["?"]
        with open(cal + ".log", "w") as fh:
            fh.write(pr.stdout + pr.stderr)
        return row
    fits, repro, source = read_calibration(cal)
    row.update({"fits": fits, "reproduces": repro, "source": source})
    if whatif_toml:
        row["whatif"] = read_whatif(cal)
    return row


def run_jobs(tasks, jobs):
    if jobs <= 1:
        return [job(t) for t in tasks]
    with cf.ProcessPoolExecutor(jobs) as ex:
        return list(ex.map(job, tasks))


# --------------------------------------------------------------------------
# Tables


def g(x, nd=4):
    if x is None:
        return ""
    if isinstance(x, bool):
        return "yes" if x else "no"
    if isinstance(x, int):
        return str(x)
    return f"{x:.{nd}g}"


def summarise(rows, fleets):
    table = []
    for fl in fleets:
        p = fleet_params(fl)
        rs = [r for r in rows if r["fleet"] == fl]
        ok = [r for r in rs if r.get("fits") is not None]
        rep = [r["reproduces"] for r in ok if r.get("reproduces") is not None]
        for key, tf in KEYS:
            truth = tf(p)
            # an unidentified fit is the base scenario's value, not an estimate
            est = [r["fits"][key]["value"] for r in ok
                   if key in r["fits"] and r["fits"][key]["value"] is not None
                   and r["fits"][key].get("identified") is not False]
            unident = sum(1 for r in ok if key in r["fits"] and r["fits"][key].get("identified") is False)
            ident = [r["fits"][key] for r in ok if key in r["fits"]
                     and r["fits"][key].get("identified") is not False
                     and r["fits"][key]["lo"] is not None and r["fits"][key]["hi"] is not None]
            cover = [f["lo"] <= truth <= f["hi"] for f in ident]
            mean = statistics.fmean(est) if est else None
            table.append({
                "fleet": fl, "key": key, "truth": truth,
                "n": len(rs), "n_est": len(est), "n_interval": len(ident), "n_unidentified": unident,
                "mean_est": mean,
                "bias": (mean - truth) if mean is not None else None,
                "rel_bias": ((mean - truth) / truth) if mean is not None and truth else None,
                "sd": statistics.stdev(est) if len(est) > 1 else None,
                "mean_se": statistics.fmean(f["se"] for f in ident if f["se"] is not None)
                if any(f["se"] is not None for f in ident) else None,
                "coverage": (sum(cover) / len(cover)) if cover else None,
                "reproduces": (sum(rep) / len(rep)) if rep else None,
                "failed": len(rs) - len(ok),
            })
    return table


def print_markdown(table, rows, fleets):
    print("| fleet | parameter | truth | mean est | bias | rel bias | sd | mean se | coverage | n est / interval / unidentified |")
    print("| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | --- |")
    for t in table:
        cov = "" if t["coverage"] is None else f"{t['coverage']:.2f}"
        rb = "" if t["rel_bias"] is None else f"{100 * t['rel_bias']:+.1f}%"
        print(f"| {t['fleet']} | {t['key']} | {g(t['truth'])} | {g(t['mean_est'])} | {g(t['bias'], 3)} | {rb} "
              f"| {g(t['sd'], 3)} | {g(t['mean_se'], 3)} | {cov} | {t['n_est']}/{t['n_interval']}/{t['n_unidentified']} of {t['n']} |")
    print()
    print("| fleet | flags | recordings | failed | true recycles/h (mean) | reproduces | source |")
    print("| --- | --- | ---: | ---: | ---: | ---: | --- |")
    for fl in fleets:
        rs = [r for r in rows if r["fleet"] == fl]
        ok = [r for r in rs if r.get("fits") is not None]
        rep = [r["reproduces"] for r in ok if r.get("reproduces") is not None]
        src = sorted({r.get("source") or "" for r in ok})
        fl_flags = " ".join(GRID[fl]["flags"]).replace("--", "")
        note = f" ({GRID[fl]['note']})" if GRID[fl]["note"] else ""
        print(f"| {fl} | `{fl_flags}`{note} | {len(rs)} | {len(rs) - len(ok)} "
              f"| {statistics.fmean(r['true_recycles_per_hour'] for r in rs):.2f} "
              f"| {'' if not rep else f'{sum(rep)}/{len(rep)}'} | {'; '.join(src)} |")
    errs = [r for r in rows if r.get("error")]
    for r in errs:
        print(f"\nfleet {r['fleet']} recording {r['recording']}: fleetsim exited {r['rc']}: {r['error'][0]}")


def write_csv(path, dicts, fields=None):
    fields = fields or list(dicts[0].keys()) if dicts else []
    tmp = path + ".tmp"
    with open(tmp, "w", newline="") as fh:
        w = csv.DictWriter(fh, fieldnames=fields, extrasaction="ignore")
        w.writeheader()
        for d in dicts:
            w.writerow({k: ("" if d.get(k) is None else d.get(k)) for k in fields})
    os.replace(tmp, path)


def per_recording_rows(rows):
    out = []
    for r in rows:
        p = fleet_params(r["fleet"])
        for key, tf in KEYS:
            f = (r.get("fits") or {}).get(key, {})
            out.append({"fleet": r["fleet"], "recording": r["recording"], "rec_seed": r["rec_seed"],
                        "key": key, "truth": tf(p), "value": f.get("value"), "se": f.get("se"),
                        "lo": f.get("lo"), "hi": f.get("hi"), "identified": f.get("identified"),
                        "reproduces": r.get("reproduces"), "rc": r["rc"], "how": f.get("how")})
    return out


# --------------------------------------------------------------------------
# What-if


def whatif_fragment(kind, p):
    """-> (toml text, whatif.py change string) for one kind of policy change."""
    if kind == "limit":
        b = p["base_mb"] - 40
        return f"[policy]\nbase_limit_mb = {b:g}\n", f"base-mb={b:g}"
    if kind == "lease":
        return "[policy.lease]\nttl_s = 600.0\n", "lease-ttl-s=600"
    if kind == "bucket":
        return ("[policy.token_bucket]\nenabled = true\nrate_per_hour = 4.0\nburst = 2.0\n",
                "bucket-per-h=4,bucket-burst=2")
    raise SystemExit(f"--whatif-kind {kind}: limit | lease | bucket")


def run_whatif(args, fleets):
    import whatif as wi
    results = []
    for fl in fleets:
        p = fleet_params(fl)
        toml, change = whatif_fragment(args.whatif_kind, p)
        wdir = os.path.join(args.outdir, f"f{fl:02d}")
        os.makedirs(wdir, exist_ok=True)
        wpath = os.path.join(wdir, f"whatif-{args.whatif_kind}.toml")
        with open(wpath, "w") as fh:
            fh.write(toml)
        rows = run_jobs([(fl, r, args.outdir, wpath) for r in range(args.recordings)], args.jobs)
        meas = wi.measure(GRID[fl]["flags"], [change], args.pairs, 1, args.jobs)
        md = meas["changes"][0]["figures"]["recycles_per_hour"]
        for r in rows:
            d, ci, base = r.get("whatif") or (None, None, None)
            results.append({
                "fleet": fl, "recording": r["recording"], "change": change,
                "true_base_rph": md["base_mean"], "true_changed_rph": md["changed_mean"],
                "true_diff": md["diff"]["mean"], "true_diff_ci95": md["diff"]["ci95"],
                "pred_base_rph": base, "pred_diff": d, "pred_diff_ci95": ci,
                "covers_true": (abs(d - md["diff"]["mean"]) <= ci) if d is not None and ci is not None else None,
                "rc": r["rc"], "error": (r.get("error") or [""])[0],
            })
    print(f"| fleet | change | recording | measured diff (truth, {args.pairs} pairs) | predicted diff (calibrated) "
          "| predicted base recycles/h | true base recycles/h | CI covers truth |")
    print("| --- | --- | ---: | ---: | ---: | ---: | ---: | --- |")
    for x in results:
        meas = f"{x['true_diff']:+.3f} +- {x['true_diff_ci95']:.3f}"
        pred = "" if x["pred_diff"] is None else f"{x['pred_diff']:+.3f} +- {x['pred_diff_ci95']:.3f}"
        print(f"| {x['fleet']} | {x['change']} | {x['recording']} | {meas} | {pred or x['error']} "
              f"| {g(x['pred_base_rph'])} | {x['true_base_rph']:.3f} | {g(x['covers_true'])} |")
    path = os.path.join(args.outdir, f"whatif-{args.whatif_kind}.csv")
    write_csv(path, results)
    print(f"\nwrote {path}")


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter,
                                 epilog=__doc__.split("\n\n", 1)[1])
    ap.add_argument("--fleets", default=None, help="comma-separated grid indices (default: all)")
    ap.add_argument("--recordings", type=int, default=4, help="recordings (seeds) per fleet (4)")
    ap.add_argument("--quick", action="store_true", help="fleets 0,8 x 2 recordings")
    ap.add_argument("--outdir", default="/tmp/truth-recovery")
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--list", action="store_true", help="print the grid and exit")
    ap.add_argument("--whatif", action="store_true", help="the what-if comparison instead")
    ap.add_argument("--whatif-kind", default="limit", help="limit (base - 40 MB) | lease (TTL 600 s) | bucket (4/h, burst 2)")
    ap.add_argument("--pairs", type=int, default=40, help="whatif.py pairs for the measured change (40)")
    args = ap.parse_args(argv)
    if args.list:
        for i, f in enumerate(GRID):
            print(i, " ".join(f["flags"]), f"# {f['note']}" if f["note"] else "")
        return 0
    if not os.path.exists(BIN):
        raise SystemExit(f"{BIN} missing: cargo build --release")
    if args.quick:
        fleets, args.recordings = QUICK_FLEETS, 2
        args.pairs = min(args.pairs, 8)
    elif args.fleets:
        fleets = [int(x) for x in args.fleets.split(",") if x.strip()]
    else:
        fleets = WHATIF_FLEETS if args.whatif else list(range(len(GRID)))
    os.makedirs(args.outdir, exist_ok=True)
    if args.whatif:
        run_whatif(args, fleets)
        return 0
    tasks = [(fl, r, args.outdir, None) for fl in fleets for r in range(args.recordings)]
    rows = run_jobs(tasks, args.jobs)
    table = summarise(rows, fleets)
    print_markdown(table, rows, fleets)
    tag = "-".join(str(f) for f in fleets)
    p1 = os.path.join(args.outdir, f"recovery-{tag}.csv")
    p2 = os.path.join(args.outdir, f"recordings-{tag}.csv")
    write_csv(p1, table)
    write_csv(p2, per_recording_rows(rows))
    print(f"\nwrote {p1} (per fleet and parameter) and {p2} (per recording)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
