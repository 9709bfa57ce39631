#!/usr/bin/env python3
"""Writes the generated hostile corpus (issue 17): tests/hostile/generated/.

Hand-writing hundreds of bad files is silly; this script derives them from
the embedded default scenario's keys, a minimal sweep and one small valid
sample of every recording format, each broken one way. Every case has its
expected exit code and message fragments in generated/cases.tsv, written
here by construction (the file's name, the line the break is on, the key
or column it breaks), never copied from fleetsim's output.
`tests/hostile_generated.rs` runs them all; generate_more.py holds the
second pass's kinds (flags on every subcommand, the file system, ranges).

Run from the repository root after changing the cases:
    python3 tests/hostile/generate.py
Same script, same bytes (no randomness, sorted keys).
"""

import os
import shutil
import sys

sys.dont_write_bytecode = True
import tomllib

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import generate_more  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
OUT = os.path.join(ROOT, "tests", "hostile", "generated")

cases = []  # (command, relative path, exit code, fragments, stream)


def case(command, rel, data, code, fragments, stream="stderr"):
    path = os.path.join(OUT, rel)
    os.makedirs(os.path.dirname(path), exist_ok=True)
    if isinstance(data, str):
        data = data.encode()
    with open(path, "wb") as f:
        f.write(data)
    name = os.path.basename(rel)
    frags = [name] + [f for f in fragments if f]
    for f in frags:
        assert "\t" not in f and "\n" not in f, f
    cases.append((command, rel, code, frags, stream))


def flag_case(rel, data, command, code, fragments):
    """A file (`rel` with `data`, when given) and a case whose command is a
    template: `FILE` is `rel` (made at test time when under `special/`),
    `OUT` a fresh output folder. `command` None writes the file only."""
    if rel is not None:
        path = os.path.join(OUT, rel)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "wb") as f:
            f.write(data.encode() if isinstance(data, str) else data)
    if command is None:
        return
    for f in fragments:
        assert "\t" not in f and "\n" not in f, f
    cases.append((command, rel or "-", code, list(fragments), "stderr"))


def leaves(table, prefix=""):
    """(dotted key, value) of every scalar leaf, sorted."""
    out = []
    for k in sorted(table):
        v = table[k]
        key = f"{prefix}{k}"
        if isinstance(v, dict):
            out.extend(leaves(v, key + "."))
        elif not isinstance(v, list):
            out.append((key, v))
    return out


def toml_value(v):
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, (int, float)):
        return repr(v)
    return '"' + v.replace("\\", "\\\\").replace('"', '\\"') + '"'


def scenario_file(key, value_text, extra=""):
    """A scenario setting `key` to `value_text` on line 3."""
    table, _, leaf = key.rpartition(".")
    head = f"[{table}]" if table else "# (top level)"
    return f"# hostile: {key}\n{head}\n{leaf} = {value_text}\n{extra}"


def slug(key):
    return key.replace(".", "_")


def scenarios():
    with open(os.path.join(ROOT, "scenarios", "render-2x3.toml"), "rb") as f:
        default = tomllib.load(f)
    for key, v in leaves(default):
        if key in ("extends",):
            continue
        s = slug(key)
        kq = f"key `{key}`"
        if isinstance(v, bool):
            wrong = {"string": '"yes"', "integer": "1", "array": "[true]"}
        elif isinstance(v, (int, float)):
            wrong = {
                "string": '"12"',
                "bool": "true",
                "array": "[1, 2]",
                "table": "{ a = 1 }",
                "datetime": "1979-05-27T07:32:00Z",
            }
        else:
            wrong = {"integer": "42", "bool": "false", "array": '["a"]', "table": "{ a = 1 }"}
        for kind, text in wrong.items():
            case("run", f"scenarios/type_{s}_{kind}.toml", scenario_file(key, text), 2,
                 [":3:", kq])
        if isinstance(v, (int, float)) and not isinstance(v, bool):
            absurd = {"nan": "nan", "inf": "inf", "neg_inf": "-inf", "neg_huge": "-1e308",
                      "i128": "99999999999999999999"}
            if isinstance(v, int):
                absurd["fraction"] = "0.5"
            if key == "policy.min_headroom_mb":
                del absurd["neg_huge"]  # negative headroom: pressure never fires, a choice
            if key == "policy.hard_limit_mb":
                del absurd["inf"]  # no ceiling, as gunicorn or PHP-FPM have: accepted
            for kind, text in absurd.items():
                case("run", f"scenarios/absurd_{s}_{kind}.toml", scenario_file(key, text), 2,
                     [":3:", kq])
        case("run", f"scenarios/unknown_{s}.toml",
             scenario_file(key + "_typo", toml_value(v)), 2, [":3:", f"key `{key}_typo`"])
        case("run", f"scenarios/duplicate_{s}.toml",
             scenario_file(key, toml_value(v), f"{key.rpartition('.')[2]} = {toml_value(v)}\n"),
             2, [":4:", kq, "duplicate"])
    # Files that are no scenario, and reads that never end.
    case("run", "scenarios/nul_bytes.toml", b"# hostile\n[policy]\ncooldown_s = 6\x000\n", 2, [":3:"])
    case("run", "scenarios/invalid_utf8.toml", b"# hostile\nname = \"\xff\xfe\"\n", 2, ["UTF-8"])
    case("run", "scenarios/only_a_bom_and_garbage.toml", "\ufeff}{][", 2, [":1:"])
    case("run", "scenarios/unclosed_string.toml", '# hostile\nname = "abc\n', 2, [":2:"])
    case("run", "scenarios/nested_arrays.toml",
         "# hostile\nname = " + "[" * 5000 + "]" * 5000 + "\n", 2, [":2:"])
    case("run", "scenarios/huge_name.toml", '# hostile\nname = "' + "x" * 200000 + '"\n' +
         "[fleet]\ninstances = 0\n", 2, [":4:", "key `fleet.instances`"])
    case("run", "scenarios/extends_dev_zero.toml", '# hostile\nextends = "/dev/zero"\n', 2,
         ["/dev/zero"])
    case("run", "scenarios/extends_directory.toml", '# hostile\nextends = "."\n', 2, ["extends"])
    case("run", "scenarios/extends_missing.toml", '# hostile\nextends = "no-such-file.toml"\n', 2,
         ["no-such-file.toml"])
    case("run", "scenarios/extends_number.toml", "# hostile\nextends = 5\n", 2, ["extends"])
    case("run", "scenarios/extends_self.toml", '# hostile\nextends = "extends_self.toml"\n', 2,
         ["levels of extends"])
    case("run", "scenarios/extends_loop_a.toml", '# hostile\nextends = "extends_loop_b.toml"\n', 2,
         ["levels of extends"])
    case("run", "scenarios/extends_loop_b.toml", '# hostile\nextends = "extends_loop_a.toml"\n', 2,
         ["levels of extends"])
    case("run", "scenarios/extends_bad_child.toml",
         '# hostile\nextends = "unknown_policy_cooldown_s.toml"\n', 2,
         ["unknown_policy_cooldown_s.toml:3:", "key `policy.cooldown_s_typo`", "extended by"])
    case("run", "scenarios/series_dev_zero.toml",
         '# hostile\n[workload]\nprofile = "series"\nseries_csv = "/dev/zero"\n', 2, ["/dev/zero"])
    case("run", "scenarios/series_directory.toml",
         '# hostile\n[workload]\nprofile = "series"\nseries_csv = "."\n', 2, ["series_csv"])
    case("run", "scenarios/series_garbage.toml",
         '# hostile\n[workload]\nprofile = "series"\nseries_csv = "series_garbage.toml"\n', 2,
         ["series_garbage.toml"])
    case("run", "scenarios/table_as_key_value.toml", "# hostile\npolicy = 5\n", 2,
         [":2:", "key `policy`"])
    case("run", "scenarios/array_of_tables_policy.toml", "# hostile\n[[policy]]\ncooldown_s = 5\n",
         2, ["key `policy["])
    case("run", "scenarios/duplicate_table.toml", "# hostile\n[policy]\ncooldown_s = 5\n[policy]\n",
         2, [":4:", "policy"])
    case("run", "scenarios/dotted_over_table.toml",
         "# hostile\npolicy.cooldown_s = 5\n[policy]\ntick_s = 5\n", 2, [":3:", "policy"])


def sweep_file(lines, param=None, objective=True):
    text = "# hostile\nreplications = 2\n" + "".join(l + "\n" for l in lines)
    if param is None:
        param = ['key = "policy.cooldown_s"', "values = [30.0, 60.0]"]
    text += "[[param]]\n" + "".join(l + "\n" for l in param)
    if objective:
        text += '[[objective]]\nmetric = "capacity_loss_fraction"\n'
    return text


def sweeps():
    tops = {"seed": ("1", True), "replications": ("2", True), "hours": ("1.0", False),
            "samples": ("4", True), "sampler": ('"grid"', None), "base": ('"x.toml"', None)}
    for key, (good, integer) in sorted(tops.items()):
        wrong = ['"x"', "true", "[1]", "{ a = 1 }"] if integer is not None else ["5", "true", "[1]"]
        for i, w in enumerate(wrong):
            lines = [f"{key} = {w}"] if key != "replications" else []
            text = sweep_file(lines)
            if key == "replications":
                text = text.replace("replications = 2", f"replications = {w}")
            case("sweep", f"sweeps/type_{key}_{i}.toml", text, 2, [":2:" if key == "replications" else ":3:", key])
        if integer:
            for i, w in enumerate(["-1", "99999999999999999999", "1.5", "nan"]):
                text = sweep_file([]) if key == "replications" else sweep_file([f"{key} = {w}"])
                if key == "replications":
                    text = text.replace("replications = 2", f"replications = {w}")
                case("sweep", f"sweeps/absurd_{key}_{i}.toml", text, 2,
                     [":2:" if key == "replications" else ":3:", key])
    for i, w in enumerate(["nan", "-1.0", "inf", "1e308", "0.0"]):
        case("sweep", f"sweeps/absurd_hours_{i}.toml", sweep_file([f"hours = {w}"]), 2, ["hours"])
    # [[param]] keys: a typo of every scenario key, and a wrong-typed value.
    with open(os.path.join(ROOT, "scenarios", "render-2x3.toml"), "rb") as f:
        default = tomllib.load(f)
    for key, v in leaves(default):
        if key in ("extends",) or "." not in key:
            continue
        s = slug(key)
        case("sweep", f"sweeps/param_typo_{s}.toml",
             sweep_file([], [f'key = "{key}_typo"', f"values = [{toml_value(v)}]"]), 2,
             [f"{key}_typo"])
        if isinstance(v, (int, float)) and not isinstance(v, bool):
            case("sweep", f"sweeps/param_string_{s}.toml",
                 sweep_file([], [f'key = "{key}"', 'values = ["x", "y"]']), 2, [key])
            case("sweep", f"sweeps/fixed_string_{s}.toml",
                 sweep_file([f"[fixed]", f'"{key}" = "x"']), 2, [key])
    bad_params = {
        "min_over_max": ['key = "policy.cooldown_s"', "min = 60.0", "max = 30.0", "steps = 3"],
        "steps_zero": ['key = "policy.cooldown_s"', "min = 30.0", "max = 60.0", "steps = 0"],
        "steps_huge": ['key = "policy.cooldown_s"', "min = 30.0", "max = 60.0",
                       "steps = 9223372036854775807"],
        "steps_negative": ['key = "policy.cooldown_s"', "min = 30.0", "max = 60.0", "steps = -3"],
        "log_negative": ['key = "policy.cooldown_s"', "min = -1.0", "max = 60.0", "log = true",
                         "steps = 3"],
        "min_nan": ['key = "policy.cooldown_s"', "min = nan", "max = 60.0", "steps = 3"],
        "max_inf": ['key = "policy.cooldown_s"', "min = 1.0", "max = inf", "steps = 3"],
        "values_empty": ['key = "policy.cooldown_s"', "values = []"],
        "values_and_range": ['key = "policy.cooldown_s"', "values = [1.0]", "min = 1.0",
                             "max = 2.0", "steps = 2"],
        "no_key": ["values = [1.0]"],
        "key_number": ["key = 5", "values = [1.0]"],
        "key_empty": ['key = ""', "values = [1.0]"],
        "key_table": ['key = "policy"', "values = [1.0]"],
        "unknown_field": ['key = "policy.cooldown_s"', "values = [1.0]", "stepz = 3"],
        "duplicate_field": ['key = "policy.cooldown_s"', "values = [1.0]", "values = [2.0]"],
        "values_nested": ['key = "policy.cooldown_s"', "values = [[1.0]]"],
        "values_nan": ['key = "policy.cooldown_s"', "values = [nan]"],
        # (values = [-5.0] is no case: a value's range checks stay the
        # trials', since another parameter may make it valid; sweep_check.rs)
        "integer_on_bool": ['key = "policy.lease.enabled"', "min = 0.0", "max = 1.0",
                            "integer = true", "steps = 2"],
    }
    for name, lines in sorted(bad_params.items()):
        # Errors in a [[param]] table name it by position, `param[0].min`.
        frag = "param[0]"
        if name == "duplicate_field":
            frag = "duplicate"
        if name in ("values_nested", "values_nan", "integer_on_bool",
                    "key_table", "key_empty"):
            frag = "policy.cooldown_s" if 'key = "policy.cooldown_s"' in lines else "key"
        if name == "integer_on_bool":
            frag = "policy.lease.enabled"
        case("sweep", f"sweeps/param_{name}.toml", sweep_file([], lines), 2, [frag])
    case("sweep", "sweeps/no_objective.toml", sweep_file([], None, objective=False), 2, ["objective"])
    objectives = {
        "unknown_metric": ['metric = "capacity_loss"'],
        "direction_typo": ['metric = "capacity_loss_fraction"', 'direction = "down"'],
        "weight_nan": ['metric = "capacity_loss_fraction"', "weight = nan"],
        "weight_string": ['metric = "capacity_loss_fraction"', 'weight = "1"'],
        "metric_number": ["metric = 5"],
    }
    for name, lines in sorted(objectives.items()):
        text = sweep_file([], None, objective=False) + "[[objective]]\n" + "".join(
            l + "\n" for l in lines)
        frag = {"unknown_metric": "capacity_loss", "direction_typo": "direction",
                "weight_nan": "weight", "weight_string": "weight", "metric_number": "metric"}[name]
        case("sweep", f"sweeps/objective_{name}.toml", text, 2, [frag])
    constraints = {
        "op_unknown": ['metric = "oom_kills"', 'op = "=~"', "value = 0"],
        "value_nan": ['metric = "oom_kills"', 'op = "<="', "value = nan"],
        "value_string": ['metric = "oom_kills"', 'op = "<="', 'value = "0"'],
        "metric_unknown": ['metric = "ooms"', 'op = "<="', "value = 0"],
        "missing_value": ['metric = "oom_kills"', 'op = "<="'],
    }
    for name, lines in sorted(constraints.items()):
        text = sweep_file([]) + "[[constraint]]\n" + "".join(l + "\n" for l in lines)
        frag = {"op_unknown": "op", "value_nan": "value", "value_string": "value",
                "metric_unknown": "ooms", "missing_value": "value"}[name]
        case("sweep", f"sweeps/constraint_{name}.toml", text, 2, [frag])
    case("sweep", "sweeps/base_dev_zero.toml", sweep_file(['base = "/dev/zero"']), 2, ["/dev/zero"])
    case("sweep", "sweeps/base_directory.toml", sweep_file(['base = "."']), 2, ["base"])
    case("sweep", "sweeps/base_self.toml", sweep_file(['base = "base_self.toml"']), 2,
         ["base_self.toml"])
    case("sweep", "sweeps/nul_bytes.toml", sweep_file(["seed = 1\x002"]), 2, [":3:"])
    case("sweep", "sweeps/invalid_utf8.toml", b"# hostile\nseed = \xff\n", 2, ["UTF-8"])
    case("sweep", "sweeps/unknown_top.toml", sweep_file(["replicatons = 3"]), 2,
         [":3:", "replicatons"])
    case("sweep", "sweeps/duplicate_top.toml", sweep_file(["seed = 1", "seed = 2"]), 2,
         [":4:", "seed", "duplicate"])


# One small valid sample per recording format; each mutation breaks one
# line (`line` is 1-based) and names what the message must carry.
EVENTS_HEADER = "ts,event,instance,worker,rss_mb,limit_mb,requests"
EVENTS_ROWS = [
    "1764594000,worker_recycled,inst-a,w1,512.5,500,1200",
    "1764594300,worker_recycled,inst-a,w2,530.0,500,900",
    "1764594600,oom_kill,inst-b,w1,2048,500,100",
]
RSS_HEADER = "ts,instance,worker,rss_mb"
RSS_ROWS = ["1764594000,inst-a,1,400.5", "1764594015,inst-a,1,401.0", "1764594030,inst-a,1,402.5"]


def csv_text(header, rows):
    return header + "\n" + "".join(r + "\n" for r in rows)


def mutate_csv(prefix, header, rows, ext):
    cols = header.split(",")
    numeric = {"ts", "rss_mb", "limit_mb", "requests"}
    for ci, col in enumerate(cols):
        variants = {"nul": "4\x005", "huge": "9" * 20000}
        if col in numeric:
            variants.update({"word": "abc", "nan": "NaN", "inf": "inf"})
        if col in ("rss_mb", "limit_mb", "requests"):
            variants["negative"] = "-5"
        if col == "ts":
            variants.update({"ms_epoch": "1764594300000000000", "year_3000": "32503680000",
                             "huge_float": "1e308", "bad_date": "2024-02-31T00:00:00Z",
                             "bad_clock": "2024-02-01T25:61:61Z"})
        if col in ("instance", "worker"):
            variants = {"empty": ""} if col == "instance" and prefix == "rss" else {}
            if col == "worker" and prefix == "rss":
                variants = {"empty": ""}
        for vname, value in sorted(variants.items()):
            bad = [r.split(",") for r in rows]
            bad[1][ci] = value
            text = csv_text(header, [",".join(r) for r in bad])
            frag = [":3", col] if vname != "nul" or col in numeric else [":3"]
            code, stream = 2, "stderr"
            if col == "event" and vname == "huge":
                # A label of 20,000 bytes is no event kind: refused.
                frag = [":3", "column `event`", "a name of 20000 bytes"]
            elif col == "event":
                # An unknown event kind is kept and listed with its line.
                code, stream, frag = 0, "stdout", ["of an unknown kind", ":3)"]
            if prefix == "rss" and col == "instance":
                code, stream, frag = 0, "stdout", []  # the instance is optional
            case("replay", f"recordings/{prefix}_{col}_{vname}.{ext}", text, code, frag, stream)
    # Structure: a cut line, an extra cell, a duplicate header, no rows.
    cut = list(rows)
    cut[1] = cut[1][: len(cut[1]) // 2]
    case("replay", f"recordings/{prefix}_truncated_line.{ext}", csv_text(header, cut), 2, [":3"])
    extra = list(rows)
    extra[1] += ",surplus"
    case("replay", f"recordings/{prefix}_extra_cell.{ext}", csv_text(header, extra), 2, [":3"])
    dup = header + "," + cols[-1]
    case("replay", f"recordings/{prefix}_duplicate_header.{ext}",
         csv_text(dup, [r + ",1" for r in rows]), 2, [":1", cols[-1]])
    case("replay", f"recordings/{prefix}_header_only.{ext}", header + "\n", 2, ["no"])
    case("replay", f"recordings/{prefix}_bom_then_bad.{ext}",
         "\ufeff" + csv_text(header, [rows[0], "x" + rows[1]]), 2, [":3"])
    invalid = (csv_text(header, rows[:1]).encode() + b"\xff\xfe,\xff\n")
    case("replay", f"recordings/{prefix}_invalid_utf8.{ext}", invalid, 2, ["UTF-8"])


def jsonl():
    rows = [
        '{"ts": 1764594000, "event": "worker_recycled", "instance": "inst-a", "worker": "w1", '
        '"rss_mb": 512.5, "limit_mb": 500, "requests": 1200}',
        '{"ts": 1764594300, "event": "worker_recycled", "instance": "inst-a", "worker": "w2", '
        '"rss_mb": 530.0, "limit_mb": 500, "requests": 900}',
        '{"ts": 1764594600, "event": "oom_kill", "instance": "inst-b", "worker": "w1", '
        '"rss_mb": 2048, "limit_mb": 500, "requests": 100}',
    ]
    fields = {"ts": "1764594300", "rss_mb": "530.0", "limit_mb": "500", "requests": "900",
              "event": '"worker_recycled"', "instance": '"inst-a"'}
    for field, good in sorted(fields.items()):
        variants = {"string": '"abc"', "array": "[1]", "object": '{"a": 1}', "bool": "true"}
        if field in ("event", "instance"):
            variants = {"number": "5", "array": '["a"]', "object": '{"a": 1}'}
        if field in ("rss_mb", "limit_mb", "requests"):
            variants["negative"] = "-5"
            variants["huge"] = "1e400"
        if field == "ts":
            variants["huge"] = "1e308"
            variants["negative"] = "-1764594300"
        for vname, value in sorted(variants.items()):
            bad = list(rows)
            bad[1] = bad[1].replace(f'"{field}": {good}', f'"{field}": {value}')
            assert bad[1] != rows[1], (field, good)
            code, stream, frags = 2, "stderr", [":2", field]
            if field in ("event", "instance") and vname == "number":
                # A number where a name goes is read as its text (5 -> "5"),
                # as numbers given as strings are read as numbers.
                code, stream, frags = 0, "stdout", []
            case("replay", f"recordings/jsonl_{field}_{vname}.jsonl", "\n".join(bad) + "\n", code,
                 frags, stream)
    for name, line in {"truncated": rows[1][:40], "not_object": "[1, 2, 3]",
                       "trailing_garbage": rows[1] + " }", "nul": rows[1].replace("inst-a", "in\x00st"),
                       "huge_string": rows[1].replace("inst-a", "i" * 20000)}.items():
        bad = list(rows)
        bad[1] = line
        frags = [":2"]
        if name == "huge_string":
            # A name of 20,000 bytes is no instance's: refused.
            frags = [":2", "column `instance`", "a name of 20000 bytes"]
        case("replay", f"recordings/jsonl_{name}.jsonl", "\n".join(bad) + "\n", 2, frags)


def prometheus():
    good = ('{"status":"success","data":{"resultType":"matrix","result":['
            '{"metric":{"pod":"web-a","pid":"4242"},"values":[[1764594000,"432013312"],'
            '[1764594015,"433061888"]]}]}}')
    variants = {
        "truncated": good[: len(good) // 2],
        "value_nan": good.replace('"433061888"', '"NaN"'),
        "value_negative": good.replace('"433061888"', '"-5"'),
        "value_word": good.replace('"433061888"', '"lots"'),
        "value_number": good.replace('"433061888"', "433061888"),
        "ts_string": good.replace("1764594015", '"soon"'),
        "ts_huge": good.replace("1764594015", "1e308"),
        "values_object": good.replace('"values":[', '"values":{"a":[').replace("]]}]}}", "]]}}]}}"),
        "status_error": '{"status":"error","errorType":"bad_data","error":"parse error"}',
        "result_vector": good.replace("matrix", "vector"),
    }
    for name, text in sorted(variants.items()):
        code, stream = 2, "stderr"
        if name == "result_vector":
            code, stream = 0, "stdout"  # read alike: each series' values
        case("replay", f"recordings/prometheus_{name}.json", text + "\n", code, [], stream)


def kubernetes():
    pod = ('{"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "web-a"}, '
           '"status": {"containerStatuses": [{"name": "web", "restartCount": 1, '
           '"lastState": {"terminated": {"exitCode": 137, "reason": "OOMKilled", '
           '"startedAt": "2026-12-01T13:00:00Z", "finishedAt": "2026-12-01T13:25:41Z"}}}]}}')
    variants = {
        "truncated": pod[: len(pod) // 2],
        "finished_bad_date": pod.replace("2026-12-01T13:25:41Z", "2026-02-31T13:25:41Z"),
        "finished_number": pod.replace('"2026-12-01T13:25:41Z"', "5"),
        "finished_bad_clock": pod.replace("2026-12-01T13:25:41Z", "2026-12-01T25:61:61Z"),
        "finished_year_9999": pod.replace("2026-12-01T13:25:41Z", "9999-12-01T13:25:41Z"),
        "status_array": pod.replace('"status": {', '"status": [{').replace("}]}}", "}]}]}"),
    }
    for name, text in sorted(variants.items()):
        code, stream, frags = 2, "stderr", [] if name == "truncated" else [":1"]
        if name == "status_array":
            # No container status where one is looked for: a pod with no kill.
            code, stream, frags = 0, "stdout", ["0 events"]
        case("replay", f"recordings/kubernetes_{name}.json", text + "\n", code, frags, stream)


LOGS = {
    "gunicorn": ("[2026-12-01 13:10:00 +0000] [101] [INFO] Booting worker with pid: 101",
                 "[2026-12-01 13:20:00 +0000] [101] [INFO] Autorestarting worker after current request."),
    "uvicorn": ("INFO:     Started server process [4242]", "INFO:     Shutting down"),
    "uwsgi": ("Respawned uWSGI worker 1 (new pid: 4243)",
              "...The work of process 4242 is done (max requests reached). Seeya!"),
    "puma": ("2026-12-01T13:00:00Z [4242] PumaWorkerKiller: Consuming 1200.5 mb with master and 2 workers.",
             "2026-12-01T13:00:05Z [4242] PumaWorkerKiller: Out of memory. 2 workers consuming total: 1200.5 mb out of max: 1000 mb. Sending TERM to pid 4243 consuming 700 mb."),
    "passenger": ("[ D 2026-12-01 13:25:41.1234 987/T5 age/Cor/App/Group/SessionManagement.cpp:219 ]: Process (pid=5678, group=/app (production)) has reached its maximum number of requests (1000); detaching it",
                  "[ N 2026-12-01 13:25:42.0000 987/T5 age/Cor/App/Group/ProcessList.cpp:100 ]: Detached process 5678 has shut down"),
}


def logs():
    for server, (a, b) in sorted(LOGS.items()):
        lines = [a, b, a]
        bad = "\n".join(lines).encode() + b"\n"
        # An invalid UTF-8 line: refused, naming the line.
        cut = (a + "\n").encode() + b"\xff\xfe garbage\n" + (b + "\n").encode()
        case("replay", f"recordings/{server}_invalid_utf8.log", cut, 2, [":2", "UTF-8"])
        # A binary file that starts like the log.
        case("replay", f"recordings/{server}_then_binary.log",
             (a + "\n").encode() + bytes(range(128, 256)) * 4, 2, [":2", "UTF-8"])
        del bad


def write_manifest():
    lines = ["# command\tfile (under generated/)\texit code\tstream\tfragments (tab-separated)"]
    for command, rel, code, frags, stream in cases:
        lines.append("\t".join([command, rel, str(code), stream] + frags))
    with open(os.path.join(OUT, "cases.tsv"), "w") as f:
        f.write("\n".join(lines) + "\n")


def main():
    if os.path.isdir(OUT):
        shutil.rmtree(OUT)
    os.makedirs(OUT)
    scenarios()
    sweeps()
    mutate_csv("events", EVENTS_HEADER, EVENTS_ROWS, "csv")
    mutate_csv("rss", RSS_HEADER, RSS_ROWS, "csv")
    jsonl()
    prometheus()
    kubernetes()
    logs()
    generate_more.more(case, flag_case)
    write_manifest()
    print(f"{len(cases)} cases in {os.path.relpath(OUT, ROOT)}")


if __name__ == "__main__":
    main()
