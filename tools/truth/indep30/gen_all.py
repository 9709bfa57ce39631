import json, os, random, subprocess, sys
# Run from the work folder (truth/ and rec/ are written there); model.py beside this file.
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from model import draw_params
rng = random.Random(20261205)
truth = {}
for i in range(8):
    p = draw_params(rng)
    name = f"fleet{i}"
    json.dump(p, open(f"truth/{name}.params.json", "w"), indent=1)
    out = subprocess.run(["nice", "-n", "10", "python3", os.path.join(os.path.dirname(os.path.abspath(__file__)), "model.py"), "gen", "--fleet", name,
                          "--params", f"truth/{name}.params.json", "--out", "rec",
                          "--seed", str(100 + i), "--burn-h", "24", "--hours", "24"],
                         capture_output=True, text=True, check=True).stdout
    st = json.loads(out)
    t = dict(p)
    t["boot_plus_warmup_mb"] = round(p["boot_rss_mb"] + p["warmup_mb"], 1)
    t["effective_mb_per_request"] = p["leak_mean_mb_per_request"]
    t["hard_limit_mb"] = p["base_limit_mb"] + 150
    t["seed"] = 100 + i
    t["window"] = "24 h after 24 h burn-in (cold start at t=0)"
    t["sim_stats"] = st
    truth[name] = t
    print(name, json.dumps(p), st["rows"], st["held_busy"], st["bypass_pressure"], st["oom"])
json.dump(truth, open("truth/truth.json", "w"), indent=1)
