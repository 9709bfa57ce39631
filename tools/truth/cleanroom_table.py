#!/usr/bin/env python3
"""Tabulates clean-room calibrations against their truth (docs/calibration.md,
"Busy deferral read off the overshoot"): one markdown row per fleet, truth /
fitted with the error, checked against issue 14's targets.

    python3 tools/truth/cleanroom_table.py DIR PREFIX NAME...

reads DIR/NAME.truth.json (cleanroom.py) and DIR/PREFIXNAME/{calibration,validation}.json
(`fleetsim replay DIR/NAME.csv --calibrate --out DIR/PREFIXNAME`).
"""
import json,sys,os
def row(name, d, cal):
    t=json.load(open(f"{d}/{name}.truth.json")); p=t['params']; m=t['measured']
    try: c=json.load(open(f"{d}/{cal}/calibration.json")); v=json.load(open(f"{d}/{cal}/validation.json"))
    except Exception as e: return f"| {name} | (no output: {e}) |"
    g=lambda k:[f for f in c['fits'] if f['key']==k][0]
    def cell(k,truth,tol,rel):
        f=g(k); x=f['value']; err=x-truth
        ok=abs(err)<=(tol*truth if rel else tol)
        ci = "" if (f['lo'] is None or f['lo']<=truth<=f['hi']) else " ci✗"
        b = " (bound)" if f.get('at_bound') else ""
        e = f"{100*err/truth:+.1f}%" if rel else f"{err:+.1f}"
        return f"{truth:g} / {x:.4g} ({e}) {'✓' if ok else '✗'}{ci}{b}", ok
    cells=[cell('boot_plus_warmup_mb',p['boot_mb'],25,False),
           cell('effective_mb_per_request',m['effective_mb_per_request'],0.15,True),
           cell('policy.base_limit_mb',p['base_mb'],0.02,True),
           cell('policy.jitter_mb',p['jitter_mb'],0.2,True),
           cell('workload.rps',p['rps'],0.05,True)]
    ch=[k for k in c['structure']['candidates'] if k['chosen']][0]
    dfr = "off" if not ch['deferral'] else (f"{ch['busy_rps']:.2f}/{ch['defer_max_s']:.0f}" if ch.get('busy_rps') else "base's")
    allok = all(x[1] for x in cells) and v['reproduces']
    return f"| {name} | {p['rps']} | {p['busy_rps_per_instance']}/{p['defer_max_s']:g} | {m.get('deferred_busy',0)} | " + " | ".join(x[0] for x in cells) + f" | {'pass' if v['reproduces'] else 'FAIL'} | {ch['memory'].split(' ')[0]}, {dfr} | {'**all**' if allok else ''} |"
d=sys.argv[1]; prefix=sys.argv[2]
print("| fleet | rps | truth busy/defer | deferrals | boot(+warm-up) | eff. MB/req | base | jitter | rps | validation | structure | |")
print("|---|---|---|---|---|---|---|---|---|---|---|---|")
for n in sys.argv[3:]:
    print(row(n,d,prefix+n))
