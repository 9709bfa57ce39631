"""Pool the paired per-day differences (base-40 minus base) of every model what-if run per fleet."""
import json, statistics as S, glob
files = {'fleet0': ['whatif/fleet0.model.json'], 'fleet1': ['whatif/fleet1.model.json', 'whatif/fleet1.model.seed501.json', 'whatif/fleet1.model.seed502.json'],
         'fleet2': ['whatif/fleet2.model.json'],
         'fleet0 @ tool point (boot+wu 388.9, 0.1931 MB/req, cv 0.476)': ['whatif/fleet0.toolpoint.model.json'],
         'fleet0, per-request random routing (keepalive 0)': ['whatif/fleet0.ka0.model.json'],
         'fleet1 @ tool point (boot+wu 403.4, 0.288 MB/req, cv 0.833; rps truth)': ['whatif/fleet1.toolpoint.model.json'],
         'fleet1, per-request random routing (keepalive 0)': ['whatif/fleet1.ka0.model.json'],
         'fleet1, truth but cv 0.833 (the tool\'s)': ['whatif/fleet1.toolcv.model.json'],
         'fleet1, truth but boot+wu 403.4 and 0.288 MB/req (the tool\'s), true cv': ['whatif/fleet1.toolbootv.model.json']}
out = {}
for f, fl in files.items():
    d = []; b = []; w = []
    for p in fl:
        try: r = json.load(open(p))
        except Exception: continue
        d += [(y - x) / 24 for x, y in zip(r['base']['per_day'], r['whatif']['per_day'])]
        b += r['base']['per_day']; w += r['whatif']['per_day']
    if not d: continue
    out[f] = dict(days=len(d), base_per_h=S.mean(b) / 24, whatif_per_h=S.mean(w) / 24, diff=S.mean(d), se=S.stdev(d) / len(d) ** .5)
    print(f"{f}: {len(d)} paired days; base {S.mean(b)/24:.3f}/h, base-40 {S.mean(w)/24:.3f}/h, change {S.mean(d):+.3f} +- {S.stdev(d)/len(d)**.5:.3f} (se)")
json.dump(out, open('whatif/truth_whatif.json', 'w'), indent=1)
