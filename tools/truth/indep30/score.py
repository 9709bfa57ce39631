import json, re, sys, tomllib, os
# The work folder (recordings, truth, outputs): $INDEP30, else /tmp/indep30.
D = os.environ.get('INDEP30', '/tmp/indep30')
truth = json.load(open(os.path.join(D, 'truth/truth.json')))
def get(toml, path):
    d = toml
    for k in path.split('.'):
        d = d[k]
    return d
def fitted(stdout, key):
    m = re.search(r'^\s+' + re.escape(key) + r'\s+([\d.]+)\s+([\d.]+|n/a)\s+\[([\d.]+), ([\d.]+)\]', stdout, re.M)
    return (float(m.group(1)), float(m.group(3)), float(m.group(4))) if m else None
rows = []
names = sys.argv[1:] or sorted(n[:-11] for n in os.listdir(os.path.join(D, 'out')) if n.endswith('.stdout.txt'))
allres = {}
for name in names:
    d = f'{D}/out/{name}'
    if not os.path.exists(d + '/validation.json'):
        continue
    fl = [x for x in name.split('-') if x.startswith('fleet')][0]
    t = truth[fl]
    so = open(f'{D}/out/{name}.stdout.txt').read()
    v = json.load(open(d + '/validation.json'))
    bw = fitted(so, 'boot_plus_warmup_mb') or fitted(so, 'fleet.boot_rss_mb')
    ev = fitted(so, 'effective_mb_per_request') or fitted(so, 'fleet.leak.mean_mb_per_request')
    bl = fitted(so, 'policy.base_limit_mb'); jt = fitted(so, 'policy.jitter_mb'); rp = fitted(so, 'workload.rps')
    res = {}
    def add(lbl, est, tru, ok, err):
        res[lbl] = dict(truth=tru, est=est[0], ci=est[1:], err=err, ok=ok, covered=est[1] <= tru <= est[2])
    add('boot+warmup', bw, t['boot_plus_warmup_mb'], abs(bw[0]-t['boot_plus_warmup_mb']) <= 25, bw[0]-t['boot_plus_warmup_mb'])
    e = ev[0]/t['effective_mb_per_request']-1; add('MB/req', ev, t['effective_mb_per_request'], abs(e) <= .15, e)
    e = bl[0]/t['base_limit_mb']-1; add('base', bl, t['base_limit_mb'], abs(e) <= .02, e)
    e = jt[0]/t['jitter_mb']-1; add('jitter', jt, t['jitter_mb'], abs(e) <= .20, e)
    e = rp[0]/t['rps']-1; add('rps', rp, t['rps'], abs(e) <= .05, e)
    res['validation'] = dict(ok=v['reproduces'], verdict=v['verdict'])
    allres[name] = res
    print(f'== {name}')
    for k, r in res.items():
        if k == 'validation':
            print(f'   {k:12s} {"PASS" if r["ok"] else "FAIL"}  {r["verdict"]}')
        else:
            es = f'{r["err"]:+.1f} MB' if k == 'boot+warmup' else f'{100*r["err"]:+.1f}%'
            print(f'   {k:12s} truth {r["truth"]:9.4f} est {r["est"]:9.4f} [{r["ci"][0]:.4f},{r["ci"][1]:.4f}] err {es:>10s} {"PASS" if r["ok"] else "FAIL"} {"(CI covers)" if r["covered"] else "(CI misses)"}')
json.dump(allres, open(os.path.join(D, 'scores.json'), 'w'), indent=1)
