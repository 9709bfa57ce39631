"""The second generated corpus (issue 17): kinds generate.py's first pass
did not make. Imported by generate.py, which writes them with the rest.

- recordings: epochs in milliseconds and microseconds (read as such, and
  said so), dates just outside 1970-2100, a BOM before a header alone,
  blank files, a cut last line with no newline, a fraction of a request,
  a JSON key given twice, JSON nested past any sane depth, a Prometheus
  response with no samples, logs with a BOM, a NUL, a 1 MB line;
- sweeps: a `[[param]]` value out of range on its own, for ten keys, as a
  listed value, a range's end and a `[fixed]` value (refused up front,
  naming the line and key), a `[[fixed]]` array of tables, a log range
  through 0;
- scenarios: absurd combinations (a boot RSS over the container, a hard
  ceiling under the limit, a million instances, 0 workers, a millisecond
  timeline, a traffic series that is empty, negative or runs backwards);
- the file system, made by the test at run time from `special/`: a
  symbolic link to /dev/zero, to itself, to nothing, a directory and an
  unreadable file (chmod 000) where a file goes;
- flags at their extremes on every subcommand: `run`, `sweep`, `merge`,
  `optimise`, `saturate`, `replay`, `report`, `compare`, `scenario show`.

A case's command is a template: `FILE` is the case's file (made first
when special), `OUT` a fresh output folder; a command without `FILE` is
run as given.
"""

EVENTS_HEADER = "ts,event,instance,worker,rss_mb,limit_mb,requests"
ROWS = [
    ("worker_recycled", "inst-a", "w1", "512.5", "500", "1200"),
    ("worker_recycled", "inst-a", "w2", "530.0", "500", "900"),
    ("oom_kill", "inst-b", "w1", "2048", "500", "100"),
]
T0 = 1764594000


def events(ts, rows=ROWS):
    return EVENTS_HEADER + "\n" + "".join(
        f"{t}," + ",".join(r) + "\n" for t, r in zip(ts, rows))


def jsonl_line(ts, r):
    return ('{"ts": %s, "event": "%s", "instance": "%s", "worker": "%s", "rss_mb": %s, '
            '"limit_mb": %s, "requests": %s}' % ((ts,) + r))


# (key, value invalid on its own, a valid value beside it, integer key)
OUT_OF_RANGE = [
    ("policy.cooldown_s", "-5.0", "60.0", False),
    ("policy.tick_s", "-1.0", "10.0", False),
    ("fleet.leak.step_probability", "1.5", "0.1", False),
    ("fleet.leak.cv", "50.0", "0.5", False),
    ("policy.jitter_mb", "900.0", "20.0", False),
    ("workload.rps", "-1.0", "2.0", False),
    ("fleet.container_mb", "-1.0", "4000.0", False),
    ("engine.step_s", "61.0", "1.0", False),
    ("fleet.instances", "0", "2", True),
    ("fleet.workers_per_instance", "0", "3", True),
]


def more(case, flag_case):
    recordings(case)
    sweeps(case)
    scenarios(case)
    special(flag_case)
    flags(case, flag_case)


def recordings(case):
    ok = ("replay", 0, "stdout")
    ms = [T0 * 1000, (T0 + 300) * 1000, (T0 + 600) * 1000]
    case(ok[0], "more/recordings/events_ms_epoch.csv", events(ms), 0, ["milliseconds"], "stdout")
    us = [t * 1000 for t in ms]
    case(ok[0], "more/recordings/events_us_epoch.csv", events(us), 0, ["microseconds"], "stdout")
    case("replay", "more/recordings/events_seconds_then_ms.csv",
         events([T0, (T0 + 300) * 1000, T0 + 600]), 2, [":3", "ts"])
    for name, t in [("1969", "1969-12-31T23:59:59Z"), ("2101", "2101-01-01T00:00:00Z"),
                    ("year_0", "0000-01-01T00:00:00Z")]:
        case("replay", f"more/recordings/events_rfc3339_{name}.csv",
             events([t, "2026-12-01T13:05:00Z", "2026-12-01T13:10:00Z"]), 2, [":2", "ts"])
        case("replay", f"more/recordings/events_rfc3339_{name}_second_row.csv",
             events(["2026-12-01T13:00:00Z", t, "2026-12-01T13:10:00Z"]), 2, [":3", "ts"])
    case("replay", "more/recordings/events_bom_header_only.csv",
         "\ufeff" + EVENTS_HEADER + "\n", 2, [":1"])
    case("replay", "more/recordings/events_bom_crlf.csv",
         "\ufeff" + events([T0, T0 + 300, T0 + 600]).replace("\n", "\r\n"), 0, [], "stdout")
    case("replay", "more/recordings/events_blank_lines.csv", "\n\n\n", 2, [])
    case("replay", "more/recordings/events_bom_only.csv", "\ufeff", 2, [])
    cut = events([T0, T0 + 300, T0 + 600])
    case("replay", "more/recordings/events_cut_last_line.csv", cut[: cut.rindex(",oom") + 6], 2,
         [":4"])
    frac = list(ROWS)
    frac[1] = ROWS[1][:5] + ("1.5",)
    case("replay", "more/recordings/events_requests_fraction.csv", events([T0, T0 + 300, T0 + 600], frac),
         2, [":3", "requests"])
    nulhead = EVENTS_HEADER.replace("rss_mb", "rss\x00mb")
    # A NUL inside a column's name makes it a column fleetsim does not
    # know, and unknown columns are ignored: the rows read without RSS.
    case("replay", "more/recordings/events_nul_in_header.csv",
         nulhead + "\n" + events([T0, T0 + 300, T0 + 600]).split("\n", 1)[1], 0, [], "stdout")
    # A header's names in another case (a spreadsheet's export) are the
    # columns they spell; an empty name, or one name twice in two cases,
    # is refused on line 1.
    body = events([T0, T0 + 300, T0 + 600]).split("\n", 1)[1]
    case("replay", "more/recordings/events_header_upper_case.csv",
         EVENTS_HEADER.upper() + "\n" + body, 0, ["peak RSS              530.0 MB", "inst-a 2"],
         "stdout")
    case("replay", "more/recordings/events_header_empty_name.csv",
         EVENTS_HEADER.replace(",rss_mb,", ",,") + "\n" + body, 2,
         [":1", "field 5", "empty column name"])
    case("replay", "more/recordings/events_header_trailing_comma.csv",
         EVENTS_HEADER + ",\n" + body.replace("\n", ",\n"), 2, [":1", "field 8", "empty column name"])
    case("replay", "more/recordings/events_header_case_twice.csv",
         EVENTS_HEADER + ",RSS_MB\n" + body.replace("\n", ",1\n"), 2,
         [":1", "`rss_mb` twice", "`RSS_MB`"])
    case("replay", "more/recordings/rss_header_mixed_case.csv",
         "TS,Instance,Worker,RSS_MB\n" + "".join(f"{T0 + 60 * i},inst-a,w1,{400 + i}\n" for i in range(5)),
         0, ["5 RSS samples", "5 samples of 1 workers"], "stdout")
    case("replay", "more/recordings/rss_header_empty_name.csv",
         "ts,instance,,worker,rss_mb\n" + "".join(f"{T0 + 60 * i},inst-a,x,w1,{400 + i}\n" for i in range(5)),
         2, [":1", "field 3", "empty column name"])
    semi = events([T0, T0 + 300, T0 + 600]).replace(",", ";")
    case("replay", "more/recordings/events_semicolons.csv", semi, 2, [])
    # JSON Lines
    lines = [jsonl_line(T0 + 300 * i, r) for i, r in enumerate(ROWS)]
    dup = list(lines)
    dup[1] = dup[1].replace('{"ts": ', '{"ts": 1, "ts": ', 1)
    case("replay", "more/recordings/jsonl_key_twice.jsonl", "\n".join(dup) + "\n", 2, [":2", "ts"])
    dup2 = list(lines)
    dup2[2] = dup2[2].replace('"rss_mb": 2048', '"rss_mb": 2048, "rss_mb": 1')
    case("replay", "more/recordings/jsonl_rss_twice.jsonl", "\n".join(dup2) + "\n", 2,
         [":3", "rss_mb"])
    msl = [jsonl_line((T0 + 300 * i) * 1000, r) for i, r in enumerate(ROWS)]
    case("replay", "more/recordings/jsonl_ms_epoch.jsonl", "\n".join(msl) + "\n", 0,
         ["milliseconds"], "stdout")
    usl = [jsonl_line((T0 + 300 * i) * 1000000, r) for i, r in enumerate(ROWS)]
    case("replay", "more/recordings/jsonl_us_epoch.jsonl", "\n".join(usl) + "\n", 0,
         ["microseconds"], "stdout")
    for name, t in [("1969", '"1969-12-31T23:59:59Z"'), ("2101", '"2101-01-01T00:00:00Z"')]:
        bad = list(lines)
        bad[1] = bad[1].replace(f'"ts": {T0 + 300}', f'"ts": {t}')
        bad[0] = bad[0].replace(f'"ts": {T0}', '"ts": "2026-12-01T13:00:00Z"')
        bad[2] = bad[2].replace(f'"ts": {T0 + 600}', '"ts": "2026-12-01T13:10:00Z"')
        case("replay", f"more/recordings/jsonl_rfc3339_{name}.jsonl", "\n".join(bad) + "\n", 2,
             [":2", "ts"])
    case("replay", "more/recordings/jsonl_bom_first.jsonl", "\ufeff" + "\n".join(lines) + "\n", 0,
         [], "stdout")
    case("replay", "more/recordings/jsonl_blank_only.jsonl", "\n \n\t\n", 2, [])
    deep = list(lines)
    deep[1] = deep[1][:-1] + ', "extra": ' + "[" * 5000 + "]" * 5000 + "}"
    case("replay", "more/recordings/jsonl_nested_5000.jsonl", "\n".join(deep) + "\n", 2, [":2"])
    nulkey = list(lines)
    nulkey[1] = nulkey[1].replace('"worker"', '"wor\x00ker"')
    case("replay", "more/recordings/jsonl_raw_nul_in_key.jsonl", "\n".join(nulkey) + "\n", 2, [":2"])
    nan = list(lines)
    nan[1] = nan[1].replace('"rss_mb": 530.0', '"rss_mb": "NaN"')
    case("replay", "more/recordings/jsonl_rss_nan_string.jsonl", "\n".join(nan) + "\n", 2,
         [":2", "rss_mb"])
    case("replay", "more/recordings/jsonl_cut_last_line.jsonl",
         "\n".join(lines[:2]) + "\n" + lines[2][:30], 2, [":3"])
    # Prometheus
    prom = ('{"status":"success","data":{"resultType":"matrix","result":['
            '{"metric":{"pod":"web-a","pid":"4242"},"values":[[%s,"432013312"],[%s,"433061888"]]}]}}')
    case("replay", "more/recordings/prometheus_empty_result.json",
         '{"status":"success","data":{"resultType":"matrix","result":[]}}\n', 2, [])
    case("replay", "more/recordings/prometheus_no_points.json",
         '{"status":"success","data":{"resultType":"matrix","result":['
         '{"metric":{"pod":"web-a","pid":"4242"},"values":[]}]}}\n', 2, [])
    case("replay", "more/recordings/prometheus_ms_epoch.json",
         prom % (T0 * 1000, (T0 + 15) * 1000) + "\n", 0, ["milliseconds"], "stdout")
    case("replay", "more/recordings/prometheus_bom.json", "\ufeff" + prom % (T0, T0 + 15) + "\n",
         0, [], "stdout")
    case("replay", "more/recordings/prometheus_before_1970.json", prom % (-100, -85) + "\n", 2, [])
    case("replay", "more/recordings/prometheus_status_twice.json",
         prom.replace('{"status":"success",', '{"status":"success","status":"error",', 1)
         % (T0, T0 + 15) + "\n", 2, [])
    case("replay", "more/recordings/prometheus_huge_value.json",
         prom.replace('"433061888"', '"' + "9" * 20000 + '"') % (T0, T0 + 15) + "\n", 2, [])
    # Kubernetes
    pod = ('{"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "web-a"}, '
           '"status": {"containerStatuses": [{"name": "web", "restartCount": 1, '
           '"lastState": {"terminated": {"exitCode": 137, "reason": "OOMKilled", '
           '"startedAt": "2026-12-01T13:00:00Z", "finishedAt": "%s"}}}]}}')
    for name, t in [("1969", "1969-12-31T23:59:59Z"), ("2101", "2101-01-01T00:00:00Z")]:
        case("replay", f"more/recordings/kubernetes_finished_{name}.json", pod % t + "\n", 2, [":1"])
    case("replay", "more/recordings/kubernetes_bom.json", "\ufeff" + pod % "2026-12-01T13:25:41Z" + "\n",
         0, ["1 events"], "stdout")
    # Server logs: a BOM is skipped; a NUL, a 1 MB line and a date outside
    # 1970-2100 are lines no rule reads, listed with their line numbers.
    boot = "[2026-12-01 13:10:00 +0000] [101] [INFO] Booting worker with pid: 101"
    auto = "[2026-12-01 13:20:00 +0000] [101] [INFO] Autorestarting worker after current request."
    case("replay", "more/recordings/gunicorn_bom.log", "\ufeff" + boot + "\n" + auto + "\n", 0,
         [], "stdout")
    case("replay", "more/recordings/gunicorn_nul_line.log",
         boot + "\n" + auto.replace("worker", "wor\x00ker") + "\n", 0, ["line 2"], "stdout")
    case("replay", "more/recordings/gunicorn_1mb_line.log",
         boot + "\n" + "[2026-12-01 13:20:00 +0000] [101] [INFO] " + "x" * 1000000 + "\n", 0,
         ["line 2"], "stdout")
    case("replay", "more/recordings/gunicorn_year_1969.log",
         boot + "\n" + auto.replace("2026", "1969") + "\n", 0, ["line 2"], "stdout")
    case("replay", "more/recordings/gunicorn_year_2101.log",
         boot + "\n" + auto.replace("2026", "2101") + "\n", 0, ["line 2"], "stdout")
    case("replay", "more/recordings/uwsgi_cut_no_newline.log",
         "Respawned uWSGI worker 1 (new pid: 4243)\n...The work of process 4242 is do", 0, [],
         "stdout")


def sweep_text(param_lines=(), fixed_lines=(), extra_params=()):
    t = "# hostile\nreplications = 1\nhours = 0.05\n"
    if fixed_lines:
        t += "[fixed]\n" + "".join(l + "\n" for l in fixed_lines)
    for p in (list(extra_params) + [list(param_lines)]) if param_lines else extra_params:
        t += "[[param]]\n" + "".join(l + "\n" for l in p)
    return t + '[[objective]]\nmetric = "recycles"\ndirection = "minimize"\n'


def line_of(text, needle):
    return text.split("\n").index(needle) + 1


def sweeps(case):
    other = ['key = "policy.lease.ttl_s"', "values = [60.0, 120.0]"]
    for key, bad, good, integer in OUT_OF_RANGE:
        s = key.replace(".", "_")
        kline = f'key = "{key}"'
        # A listed value.
        t = sweep_text([kline, f"values = [{good}, {bad}]"], extra_params=[other])
        frags = [f":{line_of(t, kline)}:", "param[1]", key]
        case("sweep", f"more/sweeps/range_value_{s}.toml", t, 2, frags)
        case("optimise", f"more/sweeps/range_value_{s}_optimise.toml", t, 2, frags)
        # A range's end.
        lo, hi = (bad, good) if float(bad) < float(good) else (good, bad)
        rng = [kline, f"min = {lo}", f"max = {hi}", "steps = 3"] + (["integer = true"] if integer else [])
        t = sweep_text(rng, extra_params=[other])
        case("sweep", f"more/sweeps/range_end_{s}.toml", t, 2, [f":{line_of(t, kline)}:", key])
        # A [fixed] value.
        fl = f"{key} = {bad}"
        t = sweep_text(fixed_lines=[fl], extra_params=[other])
        case("sweep", f"more/sweeps/range_fixed_{s}.toml", t, 2,
             [f":{line_of(t, fl)}:", f"fixed.{key}"])
    t = sweep_text(extra_params=[other]).replace("[[param]]", "[[fixed]]\npolicy.cooldown_s = 5.0\n[[param]]", 1)
    case("sweep", "more/sweeps/fixed_array_of_tables.toml", t, 2, ["fixed"])
    t = sweep_text(['key = "policy.cooldown_s"', "min = 0.0", "max = 60.0", "log = true", "steps = 3"])
    case("sweep", "more/sweeps/log_range_through_zero.toml", t, 2, ["param[0]"])
    t = sweep_text(fixed_lines=["policy.lease.ttl_s = 60.0"],
                   extra_params=[['key = "policy.lease"', "values = [1.0]"]])
    case("sweep", "more/sweeps/fixed_under_a_swept_table.toml", t, 2, ["policy.lease"])
    t = sweep_text(fixed_lines=['"" = 1.0'], extra_params=[other])
    case("sweep", "more/sweeps/fixed_empty_key.toml", t, 2, ["fixed"])
    t = sweep_text(fixed_lines=["policy = 5.0"], extra_params=[other])
    case("sweep", "more/sweeps/fixed_number_for_a_table.toml", t, 2, ["policy"])


def scenarios(case):
    bad = {
        "boot_over_container": ("[fleet]\nboot_rss_mb = 5000.0\ncontainer_mb = 4000.0\n", ["fleet."]),
        "hard_under_base": ("[policy]\nbase_limit_mb = 600.0\nhard_limit_mb = 400.0\n", ["policy."]),
        "million_instances": ("[fleet]\ninstances = 1000000\n", ["fleet.instances"]),
        "zero_workers": ("[fleet]\nworkers_per_instance = 0\n", ["fleet.workers_per_instance"]),
        "zero_concurrency": ("[fleet]\nconcurrency = 0\n", ["fleet.concurrency"]),
        "millisecond_timeline": ("[run]\ntimeline_step_s = 0.001\n", ["run.timeline_step_s"]),
        "rps_1e308": ("[workload]\nrps = 1e308\n", ["workload.rps"]),
        "ten_thousand_years": ("[run]\nduration_h = 87600000.0\n", ["run.duration_h"]),
        "zero_peak_to_trough": ("[workload]\nprofile = \"diurnal\"\npeak_to_trough = 0.0\n",
                                ["workload.peak_to_trough"]),
        "near_fraction_two": ("[policy]\nsampling = \"timer\"\nnear_limit_fraction = 2.0\n",
                              ["policy.near_limit_fraction"]),
    }
    for name, (text, frags) in sorted(bad.items()):
        case("run", f"more/scenarios/{name}.toml", "# hostile\n" + text, 2, frags)
    series = {
        "header_only": "t_s,rps\n",
        "negative_rps": "t_s,rps\n0,1.0\n900,-2.0\n",
        "nan_rps": "t_s,rps\n0,1.0\n900,NaN\n",
        "backwards": "t_s,rps\n0,1.0\n900,2.0\n600,1.0\n",
        "binary": "t_s,rps\n0,1.0\n\x00\x01\x02\n",
    }
    for name, csv in sorted(series.items()):
        # (a series file given as a scenario is a case of its own)
        case("run", f"more/scenarios/series_{name}.csv", csv, 2, [])
        case("run", f"more/scenarios/series_{name}.toml",
             f'# hostile\n[workload]\nprofile = "series"\nseries_csv = "series_{name}.csv"\n', 2,
             ["workload.series_csv"])


def special(flag_case):
    # name -> (how it is made, what it holds, command, exit code, fragments)
    kinds = [
        ("link_to_dev_zero.toml", "symlink", "/dev/zero", "run FILE --out OUT", ["link_to_dev_zero.toml"]),
        ("link_loop.toml", "symlink", "link_loop.toml", "run FILE --out OUT", ["link_loop.toml"]),
        ("link_dangling.toml", "symlink", "nowhere/none.toml", "run FILE --out OUT",
         ["link_dangling.toml"]),
        ("link_loop_sweep.toml", "symlink", "link_loop_sweep.toml", "sweep FILE --out OUT",
         ["link_loop_sweep.toml"]),
        ("link_dev_zero.csv", "symlink", "/dev/zero", "replay FILE --out OUT", ["link_dev_zero.csv"]),
        ("dir_scenario.toml", "mkdir", "", "run FILE --out OUT", ["dir_scenario.toml"]),
        ("dir_sweep.toml", "mkdir", "", "sweep FILE --out OUT", ["dir_sweep.toml"]),
        ("dir_sweep_opt.toml", "mkdir", "", "optimise FILE --out OUT", ["dir_sweep_opt.toml"]),
        ("dir_recording.csv", "mkdir", "", "replay FILE --out OUT", ["dir_recording.csv"]),
        ("dir_show.toml", "mkdir", "", "scenario show FILE", ["dir_show.toml"]),
        ("dir_saturate.toml", "mkdir", "", "saturate FILE", ["dir_saturate.toml"]),
        # Run as an unprivileged user when the tests run as root (who reads
        # any file): the refusal must be the permission's.
        ("unreadable.toml", "chmod000", "[policy]\ncooldown_s = 60.0\n", "run FILE --out OUT",
         ["unreadable.toml", "Permission denied"]),
        ("unreadable.csv", "chmod000", EVENTS_HEADER + "\n", "replay FILE --out OUT",
         ["unreadable.csv", "Permission denied"]),
        ("unreadable_sweep.toml", "chmod000", "base = \"default\"\n", "sweep FILE --out OUT",
         ["unreadable_sweep.toml", "Permission denied"]),
        ("a_file_as_out", "file", "x\n", "run --hours 0.01 --out FILE", ["--out", "a_file_as_out"]),
        ("a_file_as_shard", "file", "x\n", "merge FILE --out OUT", ["a_file_as_shard"]),
        ("a_file_as_report", "file", "x\n", "report FILE", ["a_file_as_report"]),
        ("a_file_to_compare", "file", "x\n", "compare FILE FILE", ["a_file_to_compare"]),
    ]
    for name, how, what, command, frags in kinds:
        flag_case(f"special/{name}.{how}", what, command, 2, frags)


def flags(case, flag_case):
    sweep = sweep_text(extra_params=[['key = "policy.cooldown_s"', "values = [60.0, 120.0]"]])
    rec = events([T0, T0 + 300, T0 + 600])
    flag_case("flags/s.toml", sweep, None, None, None)
    flag_case("flags/r.csv", rec, None, None, None)
    runs = [
        ("run --hours nan --out OUT", ["--hours"]),
        ("run --hours -1 --out OUT", ["--hours", "run.duration_h"]),
        ("run --hours 1e308 --out OUT", ["--hours 1e308:", "ten years"]),
        ("run --hours 0 --out OUT", ["--hours"]),
        ("run --hours inf --out OUT", ["--hours"]),
        ("run --seed -1 --out OUT", ["--seed"]),
        ("run --seed 18446744073709551616 --out OUT", ["--seed"]),
        ("run --set policy.cooldown_s --out OUT", ["--set"]),
        ("run --set =5 --out OUT", ["--set"]),
        ("run --set policy.cooldown_s=nan --out OUT", ["policy.cooldown_s"]),
        ("run --set policy.cooldown_s=1e400 --out OUT", ["policy.cooldown_s"]),
        ("run --set nokey.x=1 --out OUT", ["nokey"]),
        ("run --set fleet.leak.cv=1e154 --out OUT", ["fleet.leak.cv"]),
        ("run --fail-if recycles> --out OUT", ["--fail-if"]),
        ("run --bogus --out OUT", ["--bogus"]),
        ("sweep", ["SWEEP"]),
        ("sweep s.toml --threads 0 --out OUT", ["--threads"]),
        ("sweep s.toml --threads -1 --out OUT", ["--threads"]),
        ("sweep s.toml --threads 99999999999999999999 --out OUT", ["--threads"]),
        ("sweep s.toml --shard 3/3 --out OUT", ["--shard"]),
        ("sweep s.toml --shard 1/0 --out OUT", ["--shard"]),
        ("sweep s.toml --shard a/b --out OUT", ["--shard"]),
        ("sweep s.toml --resume --out OUT", ["--resume"]),
        ("merge --out OUT", ["DIRS"]),
        ("merge OUT --out OUT", []),
        ("optimise s.toml --budget 0 --out OUT", ["--budget"]),
        ("optimise s.toml --budget 18446744073709551615 --out OUT", ["--budget"]),
        ("optimise s.toml --fresh 0 --out OUT", ["--fresh"]),
        ("optimise s.toml --budget -4 --out OUT", ["--budget"]),
        ("optimise s.toml --resume --out OUT", []),
        ("saturate --seeds 0", ["--seeds"]),
        ("saturate --seeds 99999999999", ["--seeds"]),
        ("saturate --seeds -1", ["--seeds"]),
        ("saturate --seed 18446744073709551615 --seeds 2", ["--seed"]),
        ("saturate --hours nan", ["--hours NaN:", "run.duration_h"]),
        ("saturate --hours -1", ["--hours -1:", "run.duration_h"]),
        ("saturate --hours 1e308", ["--hours 1e308:", "run.duration_h", "ten years"]),
        ("replay r.csv --calibrate --seeds 0 --out OUT", ["--seeds"]),
        ("replay r.csv --calibrate --seeds 100000 --out OUT", ["--seeds"]),
        ("replay r.csv --instance x --out OUT", ["--instance"]),
        ("replay r.csv --instance nofile.csv=x --out OUT", ["--instance"]),
        ("replay r.csv --scenario nothere.toml --out OUT", ["nothere.toml"]),
        ("replay r.csv r.csv --out OUT", ["r.csv"]),
        ("replay --out OUT", ["RECORDING"]),
        ("report", ["DIR"]),
        ("report nothere", ["nothere"]),
        ("report . --from abc", ["--from"]),
        ("report . --from 10 --to 5", []),
        ("compare", ["INPUTS"]),
        ("compare default", []),
        ("compare default default --seeds 0", ["--seeds"]),
        ("compare default default --seeds 10001", ["--seeds"]),
        ("compare default default --hours 1", ["--hours"]),
        ("compare default default --seeds 1 --hours nan --out OUT", ["--hours NaN:", "run.duration_h"]),
        ("compare default default --seeds 1 --hours 0 --out OUT", ["--hours 0:", "run.duration_h"]),
        ("compare s.toml default --seeds 1 --out OUT", ["s.toml"]),
        ("compare nothere.toml default --seeds 1", ["nothere.toml"]),
        ("scenario show --set bad", ["--set"]),
        ("scenario show nothere.toml", ["nothere.toml"]),
        ("scenario show --set policy.cooldown_s=-5", ["policy.cooldown_s"]),
        ("scenario shw", ["shw"]),
    ]
    for command, frags in runs:
        flag_case(None, None, command, 2, frags)
