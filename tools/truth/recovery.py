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
    python3 tools/truth/recovery.py --whatif [--fleets 8] [--pairs 40] [--whatif-kind limit,lease,bucket]
    python3 tools/truth/recovery.py --bin /tmp/fleetsim-study ...   # another build
    python3 tools/truth/recovery.py --reuse ...        # re-tabulate calibrations on disk

Boot RSS is compared as `boot_plus_warmup_mb` (truth boot + warm-up) and the
leak as `effective_mb_per_request` (truth leak mean, plus the steps' mean
growth a request when `--truth-flags` adds steps); the issue's targets
(TARGETS) are scored per recording, and the structure chosen is read from
calibration.json.

--whatif: for a few fleets (default 0, 3, 8) it also runs the calibration's
what-if on `[policy]` fragments (`--whatif-kind`, comma-separated: `limit`
= the base limit 40 MB lower with the hard ceiling kept, `lease` = TTL 240 s,
`lease-off`, `bucket` = 4/h burst 2; one calibration per recording with
every fragment) and compares whatif.json's predicted recycles/h difference
(+- diff_ci95) with whatif.py's measured change on the model itself. A Markdown table goes to stdout, CSVs to --outdir. Runs go two
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
import shlex
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import fleet_truth  # noqa: E402

REPO = os.path.abspath(os.path.join(HERE, "..", ".."))
BIN = os.path.join(REPO, "target", "release", "fleetsim")

# The parameters the calibration fits, and each one's truth in a fleet's
# fleet_truth parameters. The truth for the effective MB/request is the leak
# mean plus the steps' (probability x mean size; the grid has no steps and
# its warm-up is off, `--truth-flags` adds them).
# Boot RSS and warm-up trade off in recycle rows, so the calibration reports
# their sum, `boot_plus_warmup_mb`, and the mean growth per request (velocity
# and steps together), `effective_mb_per_request`: those are compared with
# truth boot + truth warm-up and the truth leak mean.
KEYS = [
    ("boot_plus_warmup_mb", lambda p: p["boot_mb"] + p["warmup_mb"]),
    ("effective_mb_per_request", fleet_truth.effective_mb_per_request),
    ("fleet.leak.cv", lambda p: p["leak_cv"]),
    ("policy.base_limit_mb", lambda p: p["base_mb"]),
    ("policy.jitter_mb", lambda p: p["jitter_mb"]),
    ("workload.rps", lambda p: p["rps"]),
    ("policy.tick_s", lambda p: p["tick_s"]),
]

# The issue's accuracy targets: (kind, tolerance); "abs" in the key's unit,
# "rel" a fraction of the truth. Keys without a target are not scored.
TARGETS = {
    "boot_plus_warmup_mb": ("abs", 25.0),
    "effective_mb_per_request": ("rel", 0.15),
    "policy.base_limit_mb": ("rel", 0.02),
    "policy.jitter_mb": ("rel", 0.20),
    "workload.rps": ("rel", 0.05),
}


def within_target(key, est, truth):
    t = TARGETS.get(key)
    if t is None or est is None:
        return None
    kind, tol = t
    return abs(est - truth) <= (tol if kind == "abs" else tol * abs(truth))


def target_label(key):
    t = TARGETS.get(key)
    if t is None:
        return ""
    return f"+-{t[1]:g}" if t[0] == "abs" else f"+-{100 * t[1]:g}%"


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


def _heldout(n=12, seed=20261201):
    """Fleets drawn at random from the ranges issue 14's "Done when" names (the seeds'
    fleet: tick 45 s, cooldown 120 s, 24 h; boot 300-420 MB, base 500-600 MB, jitter
    20-60 MB, leak 0.08-0.3 MB/request, rps 0.8-3), not chosen by hand. The leak cv is
    drawn from 0.4-1.0 and one fleet in three is whole MB. A draw whose lowest jittered
    limit is not 15 MB above boot is drawn again (its workers would recycle at birth:
    fleetsim's startup check refuses such a scenario, and DOMAIN.md's jitter-floor rule)."""
    import random
    rng = random.Random(seed)
    out = []
    while len(out) < n:
        boot, base, jitter = rng.uniform(300, 420), rng.uniform(500, 600), rng.uniform(20, 60)
        if base - jitter - boot < 15:
            continue
        out.append(F(round(boot), round(base), round(jitter), round(rng.uniform(0.08, 0.3), 3),
                     round(rng.uniform(0.4, 1.0), 2), round(rng.uniform(0.8, 3.0), 2), 45, 120,
                     whole=(len(out) % 3 == 2), note=f"held out, drawn (seed {seed})"))
    return out


HELDOUT_FIRST = len(GRID)
GRID += _heldout()
# A second held-out draw (fleets 24-39), made on 2026-12-02 after every change
# the first one saw, and run before anything was changed for it.
HELDOUT2_FIRST = len(GRID)
GRID += _heldout(n=16, seed=20261202)
# A third (fleets 40-55), drawn after the changes the second one saw
# (the draws' screen, the 0.8 quantile, the pilot's 32 windows) and run
# once, on the final build, before anything else was changed.
HELDOUT3_FIRST = len(GRID)
GRID += _heldout(n=16, seed=20261203)

QUICK_FLEETS = [0, 8]
WHATIF_FLEETS = [0, 3, 8]


# fleet_truth flags added to every fleet (`--truth-flags`, e.g. "--warmup-mb 62").
TRUTH_EXTRA = []


def fleet_flags(i):
    return GRID[i]["flags"] + TRUTH_EXTRA


def fleet_params(i):
    _, p = fleet_truth.parse_params(fleet_flags(i))
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


def read_structure(out_dir):
    """-> the chosen structure candidate of DIR/calibration.json as a short label
    (memory plain|base, deferral on|off, profile, warm|cold start), or None."""
    try:
        with open(os.path.join(out_dir, "calibration.json")) as fh:
            st = json.load(fh).get("structure") or {}
        chosen = [c for c in st.get("candidates", []) if c.get("chosen")]
        c = chosen[0] if chosen else {}
        mem = str(c.get("memory", "?")).split(" ")[0]
        return (f"memory {mem}, deferral {'on' if c.get('deferral') else 'off'}, "
                f"{st.get('profile', '?')}, {'warm' if st.get('warm_start') else 'cold'} start")
    except (OSError, ValueError, AttributeError):
        return None


def read_whatif(out_dir, metric="recycles_per_hour", policy=None):
    """-> (diff_mean, diff_ci95, base mean, diff_ci95_simulation, diff_ci95_calibration)
    of the policy `policy` (its path as given to --what-if; default the first
    that is not "recorded") in DIR/whatif.json, or Nones."""
    path = os.path.join(out_dir, "whatif.json")
    try:
        with open(path) as fh:
            doc = json.load(fh)
    except (OSError, ValueError):
        return None, None, None, None, None
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
        if policy is not None and e.get("policy") != policy:
            continue
        f = figs.get(metric)
        if f:
            return (_num(f.get("diff_mean")), _num(f.get("diff_ci95")), base,
                    _num(f.get("diff_ci95_simulation")), _num(f.get("diff_ci95_calibration")))
    return None, None, base, None, None


# --------------------------------------------------------------------------
# Jobs


def rec_seed(fleet, r):
    return 1000 * (fleet + 1) + r + 1


def rec_paths(outdir, fleet, r, seed_offset=0):
    """The recording and its calibration's directory (`-cal`, or `-cal-sN` with
    --seed-offset N, so --reuse never re-tabulates another seed's calibration)."""
    stem = os.path.join(outdir, f"f{fleet:02d}", f"rec{r + 1}")
    return stem + ".csv", stem + "-cal" + (f"-s{seed_offset}" if seed_offset else "")


def job(task):
    """Generate one recording (if absent) and calibrate it; returns a result row."""
    fleet, r, outdir, whatif_tomls, opts = task
    rec, cal = rec_paths(outdir, fleet, r, opts.get("seed_offset", 0))
    if whatif_tomls:
        cal += "-whatif"
    os.makedirs(os.path.dirname(rec), exist_ok=True)
    if not os.path.exists(rec):
        # (The extra flags come in `opts`: a worker process started by
        # spawn or forkserver does not see `TRUTH_EXTRA` set in `main`.)
        argv = (GRID[fleet]["flags"] + opts.get("truth_extra", [])
                + ["--seed", str(rec_seed(fleet, r)), "--out", rec, "--quiet"])
        if "--whole-mb" in argv:
            argv += ["--whole-mb-rule", opts.get("whole_rule", "round")]
        fleet_truth.main(argv)
    truth_path = rec[:-4] + ".truth.json"
    with open(truth_path) as fh:
        truth = json.load(fh)
    cmd = [opts["bin"], "replay", rec, "--calibrate", "--out", cal, "--seed",
           str(r + 1 + opts.get("seed_offset", 0))]
    for w in whatif_tomls or []:
        cmd += ["--what-if", w]
    if whatif_tomls and opts.get("force"):
        cmd.append("--force")
    cmd += opts.get("extra") or []
    done = os.path.join(cal, "whatif.json" if whatif_tomls else "calibration.json")
    if opts.get("reuse") and os.path.exists(done):
        pr = subprocess.CompletedProcess(cmd, 0, "", "")
    else:
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
    row.update({"fits": fits, "reproduces": repro, "source": source,
                "structure": read_structure(cal)})
    if whatif_tomls:
        row["whatif"] = {w: read_whatif(cal, policy=w) for w in whatif_tomls}
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
            within = [within_target(key, e, truth) for e in est]
            within = [w for w in within if w is not None]
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
                "n_cover": sum(cover), "n_within": sum(within) if within else None,
                "within_target": (sum(within) / len(within)) if within else None,
                "reproduces": (sum(rep) / len(rep)) if rep else None,
                "failed": len(rs) - len(ok),
            })
    return table


def print_markdown(table, rows, fleets):
    print("| fleet | parameter | truth | mean est | bias | rel bias | sd | mean se | coverage | within target | n est / interval / unidentified |")
    print("| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | --- |")
    for t in table:
        cov = "" if t["coverage"] is None else f"{t['coverage']:.2f}"
        rb = "" if t["rel_bias"] is None else f"{100 * t['rel_bias']:+.1f}%"
        wt = "" if t["within_target"] is None else f"{t['within_target']:.2f}"
        print(f"| {t['fleet']} | {t['key']} | {g(t['truth'])} | {g(t['mean_est'])} | {g(t['bias'], 3)} | {rb} "
              f"| {g(t['sd'], 3)} | {g(t['mean_se'], 3)} | {cov} | {wt} | {t['n_est']}/{t['n_interval']}/{t['n_unidentified']} of {t['n']} |")
    print()
    print("| fleet | flags | recordings | failed | true recycles/h (mean) | reproduces | structure chosen | source |")
    print("| --- | --- | ---: | ---: | ---: | ---: | --- | --- |")
    for fl in fleets:
        rs = [r for r in rows if r["fleet"] == fl]
        ok = [r for r in rs if r.get("fits") is not None]
        rep = [r["reproduces"] for r in ok if r.get("reproduces") is not None]
        src = sorted({r.get("source") or "" for r in ok})
        sts = {}
        for r in ok:
            sts[r.get("structure")] = sts.get(r.get("structure"), 0) + 1
        st = "; ".join(f"{k} x{v}" for k, v in sorted(sts.items(), key=lambda kv: -kv[1]))
        fl_flags = " ".join(fleet_flags(fl)).replace("--", "")
        note = f" ({GRID[fl]['note']})" if GRID[fl]["note"] else ""
        print(f"| {fl} | `{fl_flags}`{note} | {len(rs)} | {len(rs) - len(ok)} "
              f"| {statistics.fmean(r['true_recycles_per_hour'] for r in rs):.2f} "
              f"| {'' if not rep else f'{sum(rep)}/{len(rep)}'} | {st} | {'; '.join(src)} |")
    errs = [r for r in rows if r.get("error")]
    for r in errs:
        print(f"\nfleet {r['fleet']} recording {r['recording']}: fleetsim exited {r['rc']}: {r['error'][0]}")


def print_fleets(fleets):
    """The truth per fleet (fleet_truth's parameters) as a Markdown table."""
    print("| fleet | boot MB | warm-up MB | base MB | jitter MB | hard MB | leak MB/req | leak cv | rps | tick s "
          "| cooldown s | hours | recording | note |")
    print("| ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | --- | --- |")
    for fl in fleets:
        p = fleet_params(fl)
        rec = []
        if p["profile"] == "diurnal":
            rec.append(f"diurnal p2t {p['peak_to_trough']:g} peak {p['peak_hour']:g} h")
        for flag, label in (("whole_mb", "whole MB"), ("drop_ids", "no ids"), ("held_rows", "held rows")):
            if p.get(flag):
                rec.append(label)
        print(f"| {fl} | {p['boot_mb']:g} | {p['warmup_mb']:g} | {p['base_mb']:g} | {p['jitter_mb']:g} "
              f"| {p['hard_mb']:g} | {p['leak_mean']:g} | {p['leak_cv']:g} | {p['rps']:g} | {p['tick_s']:g} "
              f"| {p['cooldown_s']:g} | {p['hours']:g} | {', '.join(rec) or 'constant'} | {GRID[fl]['note']} |")


def print_compact(table, fleets):
    """Per fleet (rows) and parameter (columns): mean estimate, relative bias,
    coverage c and the fraction within the target w, over the fleet's recordings."""
    keys = [k for k, _ in KEYS if any(t["key"] == k and t["n_est"] for t in table)]
    print("| fleet | " + " | ".join(f"{k} ({target_label(k) or 'no target'})" for k in keys) + " | reproduces |")
    print("| ---: | " + " | ".join("---" for _ in keys) + " | ---: |")
    for fl in fleets:
        cells = []
        rep = None
        for k in keys:
            t = next(t for t in table if t["fleet"] == fl and t["key"] == k)
            rep = t["reproduces"]
            if t["mean_est"] is None:
                cells.append("")
                continue
            c = "" if t["coverage"] is None else f" c {t['n_cover']}/{t['n_interval']}"
            w = "" if t["within_target"] is None else f" w {t['n_within']}/{t['n_est']}"
            rb = "" if t["rel_bias"] is None else f" ({100 * t['rel_bias']:+.1f}%)"
            cells.append(f"{g(t['mean_est'])} vs {g(t['truth'])}{rb}{c}{w}")
        print(f"| {fl} | " + " | ".join(cells) + f" | {'' if rep is None else f'{rep:.2f}'} |")


def pooled_summary(rows, fleets):
    """Per parameter over every recording of `fleets`: mean and sd of the error
    (absolute, and relative to the truth), coverage, fraction within the target."""
    out = []
    for key, tf in KEYS:
        err, rel, cover, within, unident, missing = [], [], [], [], 0, 0
        for r in rows:
            if r["fleet"] not in fleets or r.get("fits") is None:
                continue
            truth = tf(fleet_params(r["fleet"]))
            f = r["fits"].get(key)
            if f is None or f["value"] is None:
                missing += 1
                continue
            if f.get("identified") is False:
                unident += 1
                continue
            err.append(f["value"] - truth)
            rel.append((f["value"] - truth) / truth if truth else float("nan"))
            if f["lo"] is not None and f["hi"] is not None:
                cover.append(f["lo"] <= truth <= f["hi"])
            w = within_target(key, f["value"], truth)
            if w is not None:
                within.append(w)
        out.append({
            "key": key, "n_est": len(err), "n_unidentified": unident, "n_missing": missing,
            "bias": statistics.fmean(err) if err else None,
            "sd": statistics.stdev(err) if len(err) > 1 else None,
            "rel_bias": statistics.fmean(rel) if rel else None,
            "rel_sd": statistics.stdev(rel) if len(rel) > 1 else None,
            "coverage": (sum(cover) / len(cover)) if cover else None, "n_cover": sum(cover),
            "n_interval": len(cover),
            "target": target_label(key),
            "within_target": (sum(within) / len(within)) if within else None,
            "n_within": sum(within), "n_target": len(within),
        })
    return out


def print_pooled(pool, rows, fleets):
    print("| parameter | n est | bias (mean error) | sd of error | rel bias | rel sd | coverage of [lo, hi] | target | within target |")
    print("| --- | ---: | ---: | ---: | ---: | ---: | ---: | --- | ---: |")
    for t in pool:
        cov = "" if t["coverage"] is None else f"{t['coverage']:.2f} ({t['n_cover']}/{t['n_interval']})"
        wt = "" if t["within_target"] is None else f"{t['within_target']:.2f} ({t['n_within']}/{t['n_target']})"
        rb = "" if t["rel_bias"] is None else f"{100 * t['rel_bias']:+.1f}%"
        rs = "" if t["rel_sd"] is None else f"{100 * t['rel_sd']:.1f}%"
        extra = ""
        if t["n_unidentified"] or t["n_missing"]:
            extra = f" (+{t['n_unidentified']} unidentified, {t['n_missing']} absent)"
        print(f"| {t['key']} | {t['n_est']}{extra} | {g(t['bias'], 3)} | {g(t['sd'], 3)} | {rb} | {rs} | {cov} | {t['target']} | {wt} |")
    ok = [r for r in rows if r["fleet"] in fleets and r.get("fits") is not None]
    rep = [r["reproduces"] for r in ok if r.get("reproduces") is not None]
    print()
    print(f"recordings: {len([r for r in rows if r['fleet'] in fleets])}, calibrated: {len(ok)}, "
          f"validation reproduces: {sum(rep)}/{len(rep)}" + (f" ({sum(rep) / len(rep):.2f})" if rep else ""))
    # boot + warm-up and the growth rate trade off along the runway (limit - boot)
    pairs = []
    for r in ok:
        p = fleet_params(r["fleet"])
        fb, fe = r["fits"].get("boot_plus_warmup_mb"), r["fits"].get("effective_mb_per_request")
        if fb and fe and fb["value"] is not None and fe["value"] is not None:
            pairs.append((fb["value"] - p["boot_mb"] - p["warmup_mb"],
                          fe["value"] / fleet_truth.effective_mb_per_request(p) - 1))
    if len(pairs) > 2:
        print(f"correlation of the boot + warm-up error with the effective MB/request relative error "
              f"over recordings: {statistics.correlation(*zip(*pairs)):+.2f}")
    counts = {}
    for r in ok:
        counts[r.get("structure")] = counts.get(r.get("structure"), 0) + 1
    print()
    print("| structure chosen | recordings |")
    print("| --- | ---: |")
    for k, v in sorted(counts.items(), key=lambda kv: -kv[1]):
        print(f"| {k} | {v} |")


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
                        "within_target": within_target(key, f.get("value"), tf(p)),
                        "reproduces": r.get("reproduces"), "structure": r.get("structure"),
                        "rc": r["rc"], "how": f.get("how")})
    return out


# --------------------------------------------------------------------------
# What-if


WHATIF_KINDS = ["limit", "lease", "lease-off", "bucket"]


def whatif_fragment(kind, p):
    """-> (toml text, whatif.py change string) for one kind of policy change. Both
    sides change the same knob and nothing else: the fleet's hard ceiling is
    pinned in its flags (base + 150), so `base_limit_mb` alone keeps it; the
    bucket is fleetsim's (capacity `burst`, starts full, refilled continuously
    at rate_per_hour, one token per recycle, emergency exits on pressure and
    the hard ceiling), which is fleet_truth's --bucket-per-h/--bucket-burst."""
    if kind == "limit":
        b = p["base_mb"] - 40
        return f"[policy]\nbase_limit_mb = {b:g}\n", f"base-mb={b:g}"
    if kind == "lease":
        return "[policy.lease]\nttl_s = 240.0\n", "lease-ttl-s=240"
    if kind == "lease-off":
        return "[policy.lease]\nenabled = false\n", "lease-ttl-s=0"
    if kind == "bucket":
        return ("[policy.token_bucket]\nenabled = true\nrate_per_hour = 4.0\nburst = 2.0\n",
                "bucket-per-h=4,bucket-burst=2")
    raise SystemExit(f"--whatif-kind {kind}: one of {', '.join(WHATIF_KINDS)} (comma-separated)")


def run_whatif(args, fleets):
    import whatif as wi
    kinds = [k.strip() for k in args.whatif_kind.split(",") if k.strip()]
    results = []
    for fl in fleets:
        p = fleet_params(fl)
        wdir = os.path.join(args.outdir, f"f{fl:02d}")
        os.makedirs(wdir, exist_ok=True)
        frags = []
        for kind in kinds:
            toml, change = whatif_fragment(kind, p)
            wpath = os.path.join(wdir, f"whatif-{kind}.toml")
            with open(wpath, "w") as fh:
                fh.write(toml)
            frags.append((kind, wpath, change))
        rows = run_jobs([(fl, r, args.outdir, [w for _, w, _ in frags], args.opts)
                         for r in range(args.recordings)], args.jobs)
        meas = wi.measure(fleet_flags(fl), [c for _, _, c in frags], args.pairs, 1, args.jobs)
        for (kind, wpath, change), mc in zip(frags, meas["changes"]):
            md = mc["figures"]["recycles_per_hour"]
            for r in rows:
                d, ci, base, ci_sim, ci_cal = (r.get("whatif") or {}).get(wpath) or (None,) * 5
                tm = md["diff"]["mean"]
                results.append({
                    "fleet": fl, "recording": r["recording"], "kind": kind, "change": change,
                    "reproduces": r.get("reproduces"),
                    "true_base_rph": md["base_mean"], "true_changed_rph": md["changed_mean"],
                    "true_diff": tm, "true_diff_ci95": md["diff"]["ci95"],
                    "pred_base_rph": base, "pred_diff": d, "pred_diff_ci95": ci,
                    "pred_diff_ci95_simulation": ci_sim, "pred_diff_ci95_calibration": ci_cal,
                    "error_vs_truth": (d - tm) if d is not None else None,
                    "covers_true": (abs(d - tm) <= ci) if d is not None and ci is not None else None,
                    "within_0.2": (abs(d - tm) <= 0.2) if d is not None else None,
                    "rc": r["rc"], "error": (r.get("error") or [""])[0],
                })
    print(f"| fleet | change | rec | validation | measured diff (truth, {args.pairs} pairs) | predicted diff +- ci95 "
          "| ci95 sim / cal | predicted - measured | in interval | within 0.2/h |")
    print("| --- | --- | ---: | --- | ---: | ---: | ---: | ---: | --- | --- |")
    for x in results:
        meas = f"{x['true_diff']:+.3f} +- {x['true_diff_ci95']:.3f}"
        pred = "" if x["pred_diff"] is None else f"{x['pred_diff']:+.3f} +- {x['pred_diff_ci95']:.3f}"
        parts = "" if x["pred_diff_ci95_simulation"] is None else \
            f"{x['pred_diff_ci95_simulation']:.3f} / {x['pred_diff_ci95_calibration']:.3f}"
        err = "" if x["error_vs_truth"] is None else f"{x['error_vs_truth']:+.3f}"
        val = {True: "pass", False: "fail (forced)" if args.force else "fail", None: "?"}[x["reproduces"]]
        print(f"| {x['fleet']} | `{x['change']}` | {x['recording']} | {val} | {meas} | {pred or x['error']} "
              f"| {parts} | {err} | {g(x['covers_true'])} | {g(x['within_0.2'])} |")
    print()
    print("| change | predictions | truth in interval | within 0.2 recycles/h | mean abs error |")
    print("| --- | ---: | ---: | ---: | ---: |")
    for kind in kinds:
        xs = [x for x in results if x["kind"] == kind and x["pred_diff"] is not None]
        if not xs:
            print(f"| {kind} | 0 | | | |")
            continue
        cov = sum(bool(x["covers_true"]) for x in xs)
        w = sum(bool(x["within_0.2"]) for x in xs)
        mae = statistics.fmean(abs(x["error_vs_truth"]) for x in xs)
        print(f"| {kind} | {len(xs)} | {cov}/{len(xs)} | {w}/{len(xs)} | {mae:.3f} |")
    path = os.path.join(args.outdir, f"whatif-{'-'.join(kinds)}.csv")
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
    ap.add_argument("--whole-rule", choices=["round", "floor"], default="round",
                    help="whole-MB fleets: round to the nearest MB (default) or truncate")
    ap.add_argument("--truth-flags", default="",
                    help='fleet_truth flags added to every fleet, e.g. "--warmup-mb 62"')
    ap.add_argument("--bin", default=BIN, help="the fleetsim binary (default target/release/fleetsim)")
    ap.add_argument("--reuse", action="store_true",
                    help="reuse calibrations already on disk (DIR/calibration.json, or whatif.json with --whatif)")
    ap.add_argument("--force", action="store_true",
                    help="pass --force to fleetsim's what-if (run it on calibrations that fail validation; labelled)")
    ap.add_argument("--extra-args", default="",
                    help="extra arguments for every `fleetsim replay --calibrate` call, "
                         "one shell-quoted string (e.g. --extra-args=--fit-tick)")
    ap.add_argument("--seed-offset", type=int, default=0,
                    help="calibrate recording r with --seed r + 1 + this (0): the calibration's own "
                         "Monte Carlo variability, on the same recordings")
    ap.add_argument("--list", action="store_true", help="print the grid and exit")
    ap.add_argument("--whatif", action="store_true", help="the what-if comparison instead")
    ap.add_argument("--whatif-kind", default="limit,lease,bucket",
                    help="comma-separated: limit (base - 40 MB, hard ceiling kept) | lease (TTL 240 s) | "
                         "lease-off | bucket (4/h, burst 2); default limit,lease,bucket")
    ap.add_argument("--pairs", type=int, default=40, help="whatif.py pairs for the measured change (40)")
    args = ap.parse_args(argv)
    TRUTH_EXTRA[:] = shlex.split(args.truth_flags)
    if args.list:
        for i, f in enumerate(GRID):
            print(i, " ".join(f["flags"]), f"# {f['note']}" if f["note"] else "")
        print()
        print_fleets(range(len(GRID)))
        return 0
    if not os.path.exists(args.bin):
        raise SystemExit(f"{args.bin} missing: cargo build --release (or --bin PATH)")
    args.opts = {"bin": os.path.abspath(args.bin), "reuse": args.reuse, "force": args.force,
                 "extra": shlex.split(args.extra_args), "seed_offset": args.seed_offset, "whole_rule": args.whole_rule,
                 "truth_extra": list(TRUTH_EXTRA)}
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
    tasks = [(fl, r, args.outdir, None, args.opts) for fl in fleets for r in range(args.recordings)]
    rows = run_jobs(tasks, args.jobs)
    table = summarise(rows, fleets)
    print_fleets(fleets)
    print()
    print_markdown(table, rows, fleets)
    print()
    print_compact(table, fleets)
    print()
    pool = pooled_summary(rows, fleets)
    print_pooled(pool, rows, fleets)
    tag = "-".join(str(f) for f in fleets)
    write_csv(os.path.join(args.outdir, f"pooled-{tag}.csv"), pool)
    p1 = os.path.join(args.outdir, f"recovery-{tag}.csv")
    p2 = os.path.join(args.outdir, f"recordings-{tag}.csv")
    write_csv(p1, table)
    write_csv(p2, per_recording_rows(rows))
    print(f"\nwrote {p1} (per fleet and parameter) and {p2} (per recording)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
