#!/usr/bin/env python3
"""Start the lab, record a window, stop everything it started.

    python3 lab/lab.py record --seconds 300 --seed 1 --policy lab/policies/recorded.toml --out DIR

Starts, on free loopback ports: its own redis-server (no persistence), two
gunicorn masters (instances A and B: --preload, -k
uvicorn.workers.UvicornWorker, -w 3, the app in app/labapp.py), the RSS
recorder (a thread here, sampling /proc) and the Node client
(client/canary.mjs). After --seconds it stops them all, removes every
/dev/shm file of its run id and checks that none of its processes is left;
the same happens on Ctrl-C, SIGTERM or any error (try/finally). Run it
through lab/run.sh, which installs what is missing first.

Writes into DIR: telemetry.jsonl (the recycler's rows), canary.jsonl (the
client's), rss.csv (the recorder's), gunicorn-A.log / gunicorn-B.log
(gunicorn's error log in its default format, uvicorn's lines included),
redis.log, client.stderr, lab-config.json (every constant of the run) and
run.json (what ran, counts, the cleanup check).
"""

from __future__ import annotations

import argparse
import csv
import glob
import json
import os
import signal
import socket
import subprocess
import sys
import threading
import time
import tomllib
import urllib.request

LAB = os.path.dirname(os.path.abspath(__file__))
PAGE = os.sysconf("SC_PAGE_SIZE")


class ConfigError(Exception):
    pass


def load_toml(path: str) -> dict:
    try:
        with open(path, "rb") as f:
            return tomllib.load(f)
    except FileNotFoundError:
        raise ConfigError(f"{path}: no such file")
    except tomllib.TOMLDecodeError as e:
        raise ConfigError(f"{path}: {e}")


def overlay(base: dict, top: dict) -> dict:
    """Lays `top` over `base` key by key, table by table (fleetsim's what-if rule)."""
    out = dict(base)
    for k, v in top.items():
        out[k] = overlay(base.get(k, {}), v) if isinstance(v, dict) else v
    return out


def resolve(scenario_path: str, policy_path: str | None, lab_path: str) -> dict:
    sc = load_toml(scenario_path)
    if policy_path:
        frag = load_toml(policy_path)
        extra = set(frag) - {"policy"}
        if extra:
            raise ConfigError(f"{policy_path}: a policy fragment has only a [policy] table, "
                              f"found {sorted(extra)}")
        sc["policy"] = overlay(sc.get("policy", {}), frag.get("policy", {}))
    lab = load_toml(lab_path).get("lab")
    if lab is None:
        raise ConfigError(f"{lab_path}: no [lab] table")
    cfg = {"fleet": sc.get("fleet", {}), "workload": sc.get("workload", {}),
           "policy": sc.get("policy", {}), "client": sc.get("client", {}), "lab": lab}
    validate(cfg, scenario_path, policy_path)
    return cfg


def validate(cfg: dict, sc: str, pol: str | None):
    """What the lab needs, with the file and key named on error."""
    where = f"{sc}" + (f" + {pol}" if pol else "")

    def need(table: dict, name: str, key: str, lo: float = 0.0, strict=True):
        if key not in table:
            raise ConfigError(f"{where}: key `{name}.{key}` is missing")
        v = table[key]
        if not isinstance(v, (int, float)) or isinstance(v, bool):
            raise ConfigError(f"{where}: key `{name}.{key}` must be a number, got {v!r}")
        if (v <= lo) if strict else (v < lo):
            raise ConfigError(f"{where}: key `{name}.{key}` must be {'>' if strict else '>='} {lo}, got {v}")
        return float(v)

    f, p, w, lab = cfg["fleet"], cfg["policy"], cfg["workload"], cfg["lab"]
    if f.get("instances") != 2:
        raise ConfigError(f"{where}: key `fleet.instances`: the lab runs exactly 2 instances (A, B)")
    need(f, "fleet", "workers_per_instance")
    need(f, "fleet", "container_mb")
    leak = f.get("leak")
    if not isinstance(leak, dict):
        raise ConfigError(f"{where}: table `[fleet.leak]` is missing")
    need(leak, "fleet.leak", "mean_mb_per_request")
    if leak.get("distribution") not in ("constant", "lognormal", "exponential"):
        raise ConfigError(f"{where}: key `fleet.leak.distribution` must be constant, lognormal "
                          f"or exponential, got {leak.get('distribution')!r}")
    for k in ("warmup_mb", "step_probability"):
        if float(leak.get(k, 0.0)) != 0.0:
            raise ConfigError(f"{where}: key `fleet.leak.{k}`: the lab's app has no warm-up or "
                              f"steps; set it to 0")
    need(w, "workload", "rps")
    if w.get("profile", "constant") != "constant":
        raise ConfigError(f"{where}: key `workload.profile`: the lab's client is constant-rate")
    need(w, "workload", "service_mean_ms")
    for k in ("base_limit_mb", "hard_limit_mb", "tick_s", "cooldown_s", "pressure_cooldown_s",
              "min_headroom_mb", "busy_rps", "defer_max_s", "busy_window_s"):
        need(p, "policy", k)
    need(p, "policy", "jitter_mb", strict=False)
    if p["jitter_mb"] >= p["base_limit_mb"]:
        raise ConfigError(f"{where}: key `policy.jitter_mb`: jitter {p['jitter_mb']} MB must be "
                          f"below the base limit {p['base_limit_mb']} MB")
    if p.get("sampling", "timer") != "timer" or float(p.get("near_limit_fraction", 0)) != 0:
        raise ConfigError(f"{where}: key `policy.sampling`: the lab samples on a timer only")
    for t in ("max_requests", "lifetime", "drift", "evil_rss", "instance_memory",
              "window_cap", "capacity_floor"):
        if p.get(t, {}).get("enabled", False):
            raise ConfigError(f"{where}: table `[policy.{t}]` is enabled; the lab implements "
                              f"the rss trigger, cooldown, busy deferral, token bucket and lease only")
    if p.get("replacement", "exit_then_spawn") != "exit_then_spawn":
        raise ConfigError(f"{where}: key `policy.replacement`: gunicorn exits then spawns")
    lease = p.get("lease", {})
    if lease.get("enabled", True):
        need(lease, "policy.lease", "ttl_s")
    tb = p.get("token_bucket", {})
    if tb.get("enabled", False):
        need(tb, "policy.token_bucket", "rate_per_hour")
        need(tb, "policy.token_bucket", "burst")
    need(lab, "lab", "ballast_mb", strict=False)
    client = cfg.get("client", {})
    if client.get("connections") != "pinned":
        raise ConfigError(f"{where}: key `client.connections` must be \"pinned\": the lab's client "
                          f"holds keep-alive connections that each belong to one worker")
    need(client, "client", "conns_per_instance")
    need(client, "client", "server_keepalive_s")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_http(url: str, deadline: float, procs) -> None:
    while time.time() < deadline:
        for name, p in procs:
            if p.poll() is not None:
                raise RuntimeError(f"{name} exited with status {p.returncode} during start-up")
        try:
            with urllib.request.urlopen(url, timeout=1) as r:
                r.read()
                return
        except OSError:
            time.sleep(0.2)
    raise RuntimeError(f"{url} did not answer in time")


def rss_of(pid: int) -> float | None:
    try:
        with open(f"/proc/{pid}/statm") as f:
            return int(f.read().split()[1]) * PAGE / (1024 * 1024)
    except (FileNotFoundError, ProcessLookupError, ValueError, IndexError):
        return None


class Recorder(threading.Thread):
    """Samples every worker's RSS (/proc/PID/statm) and request count (the
    worker's stats file under /dev/shm) every rss_sample_s; the master's
    RSS too (worker `master`). Aborts the run if the lab's summed RSS passes
    max_total_rss_mb."""

    def __init__(self, path, shm_prefix, masters, period, max_total_mb, stop):
        super().__init__(daemon=True)
        self.path, self.shm, self.masters = path, shm_prefix, masters
        self.period, self.max_total, self.stop = period, max_total_mb, stop
        self.rows = 0
        self.peak_total_mb = 0.0
        self.error: str | None = None
        self.seen: set[int] = set()

    def run(self):
        boot_path = os.path.join(os.path.dirname(self.path), "boot.csv")
        with open(self.path, "w", newline="") as f, open(boot_path, "w", newline="") as bf:
            bw = csv.writer(bf)
            bw.writerow(["ts", "instance", "worker", "pid", "requests", "rss_mb", "pss_mb",
                         "shared_mb", "private_mb"])
            w = csv.writer(f)
            w.writerow(["ts", "instance", "worker", "rss_mb", "requests", "pid"])
            nxt = time.time()
            while not self.stop.is_set():
                total = 0.0
                now = time.time()
                for inst, mpid in self.masters.items():
                    r = rss_of(mpid)
                    if r is not None:
                        total += r
                        w.writerow([f"{now:.3f}", inst, "master", f"{r:.1f}", "", mpid])
                    for sf in sorted(glob.glob(f"{self.shm}-{inst}-slot*.stats")):
                        slot = sf.rsplit("slot", 1)[1].split(".")[0]
                        try:
                            with open(sf) as s:
                                pid, reqs = s.read(64).split()[:2]
                        except (OSError, ValueError):
                            continue
                        r = rss_of(int(pid))
                        if r is None:
                            continue
                        total += r
                        w.writerow([f"{now:.3f}", inst, f"w{slot}", f"{r:.1f}", reqs, pid])
                        self.rows += 1
                        if int(pid) not in self.seen:  # a new worker: its boot memory
                            self.seen.add(int(pid))
                            m = smaps_rollup(int(pid))
                            if m:
                                bw.writerow([f"{now:.3f}", inst, f"w{slot}", pid, reqs,
                                             m["rss_mb"], m["pss_mb"], m["shared_mb"],
                                             m["private_mb"]])
                                bf.flush()
                f.flush()
                self.peak_total_mb = max(self.peak_total_mb, total)
                if total > self.max_total:
                    self.error = (f"the lab's summed RSS {total:.0f} MB passed "
                                  f"lab.max_total_rss_mb = {self.max_total:.0f}")
                    self.stop.set()
                    return
                nxt += self.period
                self.stop.wait(max(0.0, nxt - time.time()))


def smaps_rollup(pid: int) -> dict | None:
    """Rss, Pss, shared and private pages of one process, MiB."""
    try:
        with open(f"/proc/{pid}/smaps_rollup") as f:
            kb = {}
            for line in f:
                parts = line.split()
                if len(parts) >= 2 and parts[0].endswith(":") and parts[1].isdigit():
                    kb[parts[0][:-1]] = int(parts[1])
    except (FileNotFoundError, ProcessLookupError):
        return None
    mb = lambda *ks: round(sum(kb.get(k, 0) for k in ks) / 1024.0, 1)  # noqa: E731
    return {"rss_mb": mb("Rss"), "pss_mb": mb("Pss"),
            "shared_mb": mb("Shared_Clean", "Shared_Dirty"),
            "private_mb": mb("Private_Clean", "Private_Dirty")}


def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    try:  # a zombie is not running
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except FileNotFoundError:
        return False
    return True


def group_members(pgid: int) -> list[int]:
    out = []
    for d in os.listdir("/proc"):
        if d.isdigit():
            try:
                with open(f"/proc/{d}/stat") as f:
                    fields = f.read().rsplit(")", 1)[1].split()
                if int(fields[2]) == pgid and fields[0] != "Z":
                    out.append(int(d))
            except (OSError, ValueError, IndexError):
                pass
    return out


def record(args) -> int:
    cfg = resolve(args.scenario, args.policy, args.lab_toml)
    out = os.path.abspath(args.out)
    os.makedirs(out, exist_ok=True)
    for f in ("telemetry.jsonl", "canary.jsonl", "rss.csv", "gunicorn-A.log", "gunicorn-B.log"):
        if os.path.exists(os.path.join(out, f)):
            raise ConfigError(f"{out}/{f} exists: give an empty --out directory")
    run_id = f"s{args.seed}-{os.getpid()}-{int(time.time())}"
    shm_prefix = f"/dev/shm/fleetsim-lab-{run_id}"
    lab = cfg["lab"]
    ports = {"redis": free_port(), "A": free_port(), "B": free_port()}
    cfg.update({"seed": args.seed, "run_id": run_id, "shm_prefix": shm_prefix,
                "redis_port": ports["redis"],
                "telemetry_path": os.path.join(out, "telemetry.jsonl"),
                "ports": ports, "scenario_path": args.scenario, "policy_path": args.policy,
                "seconds": args.seconds,
                "memory_measure": "pss_sum: headroom = fleet.container_mb - sum of Pss "
                                  "(/proc/PID/smaps_rollup) over the instance's master and "
                                  "workers; no cgroup"})
    open(cfg["telemetry_path"], "a").close()  # exists even if no worker writes a row
    cfg_path = os.path.join(out, "lab-config.json")
    with open(cfg_path, "w") as f:
        json.dump(cfg, f, indent=1)
    venv = os.environ.get("LAB_VENV", os.path.join(LAB, ".venv"))
    procs: list[tuple[str, subprocess.Popen]] = []
    stop = threading.Event()
    recorder = None
    status = {"run_id": run_id, "seed": args.seed, "policy": args.policy,
              "seconds": args.seconds, "started": time.time()}
    interrupted = []

    def on_signal(sig, _frame):
        interrupted.append(sig)
        stop.set()
        raise KeyboardInterrupt

    old = {s: signal.signal(s, on_signal) for s in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)}
    logs = []
    try:
        def spawn(name, cmd, env=None, stdout=None, stderr=None):
            p = subprocess.Popen(cmd, env=env, stdout=stdout, stderr=stderr,
                                 stdin=subprocess.DEVNULL, start_new_session=True)
            procs.append((name, p))
            return p

        rlog = open(os.path.join(out, "redis.log"), "w")
        logs.append(rlog)
        spawn("redis", ["redis-server", "--port", str(ports["redis"]), "--bind", "127.0.0.1",
                        "--save", "", "--appendonly", "no", "--daemonize", "no",
                        "--protected-mode", "yes"], stdout=rlog, stderr=subprocess.STDOUT)
        masters = {}
        for inst in ("A", "B"):
            env = dict(os.environ, LAB_CONFIG=cfg_path, LAB_INSTANCE=inst,
                       PYTHONWARNINGS="ignore::DeprecationWarning", PYTHONHASHSEED="0")
            err = open(os.path.join(out, f"gunicorn-{inst}.stderr"), "w")
            logs.append(err)
            p = spawn(f"gunicorn-{inst}", [
                os.path.join(venv, "bin", "gunicorn"), "labapp:app",
                "--chdir", os.path.join(LAB, "app"), "--preload",
                "-k", "uvicorn.workers.UvicornWorker",
                "-w", str(int(cfg["fleet"]["workers_per_instance"])),
                "-b", f"127.0.0.1:{ports[inst]}",
                "--keep-alive", str(int(cfg["client"]["server_keepalive_s"])),
                "--timeout", str(lab["gunicorn_timeout_s"]),
                "--graceful-timeout", str(lab["gunicorn_graceful_timeout_s"]),
                "--error-logfile", os.path.join(out, f"gunicorn-{inst}.log"),
                "--log-level", "info",
                # gunicorn >= 24 opens a control socket (default ~/.gunicorn/gunicorn.ctl,
                # one path for both masters): give each its own, under the run's prefix.
                "--control-socket", f"{shm_prefix}-{inst}-gunicorn.ctl",
            ], env=env, stdout=err, stderr=subprocess.STDOUT)
            masters[inst] = p.pid
        deadline = time.time() + float(lab["startup_timeout_s"])
        for inst in ("A", "B"):
            wait_http(f"http://127.0.0.1:{ports[inst]}/", deadline, procs)
        # (the two start-up probes are the only requests before the window)
        recorder = Recorder(os.path.join(out, "rss.csv"), shm_prefix, masters,
                            float(lab["rss_sample_s"]), float(lab["max_total_rss_mb"]), stop)
        recorder.start()
        cerr = open(os.path.join(out, "client.stderr"), "w")
        logs.append(cerr)
        client = spawn("client", [
            "node", os.path.join(LAB, "client", "canary.mjs"),
            "--target", f"A=http://127.0.0.1:{ports['A']}",
            "--target", f"B=http://127.0.0.1:{ports['B']}",
            "--rps", str(cfg["workload"]["rps"]), "--seconds", str(args.seconds),
            "--seed", str(args.seed), "--conns", str(int(cfg["client"]["conns_per_instance"])),
            "--keepAliveTimeoutMs", str(lab["client_keepalive_timeout_ms"]),
            "--timeoutMs", str(lab["client_timeout_ms"]),
            "--out", os.path.join(out, "canary.jsonl")], stdout=cerr, stderr=subprocess.STDOUT)
        status["window_start"] = time.time()
        print(f"lab: recording {args.seconds} s into {out} (run {run_id}; redis :{ports['redis']}, "
              f"A :{ports['A']}, B :{ports['B']})", file=sys.stderr, flush=True)
        end = time.time() + args.seconds + float(lab["client_timeout_ms"]) / 1000 + 5
        while time.time() < end and not stop.is_set():
            if client.poll() is not None:
                break
            for name, p in procs:
                if name != "client" and p.poll() is not None:
                    raise RuntimeError(f"{name} exited with status {p.returncode} mid-run")
            stop.wait(0.5)
        if recorder.error:
            raise RuntimeError(recorder.error)
        if client.poll() is None:
            raise RuntimeError("the client did not finish in time")
        if client.returncode != 0:
            raise RuntimeError(f"the client exited with status {client.returncode}: see client.stderr")
        status["window_end"] = time.time()
        status["ok"] = True
        return 0
    except KeyboardInterrupt:
        status["ok"] = False
        status["error"] = f"interrupted by signal {interrupted[0] if interrupted else 'SIGINT'}"
        print(f"lab: {status['error']}; stopping", file=sys.stderr)
        return 130
    except Exception as e:  # noqa: BLE001 - any failure still cleans up
        status["ok"] = False
        status["error"] = str(e)
        print(f"lab: error: {e}; stopping", file=sys.stderr)
        return 1
    finally:
        for s in old:
            signal.signal(s, signal.SIG_IGN)  # cleanup must not be interrupted
        stop.set()
        if recorder:
            recorder.join(timeout=5)
            status["rss_rows"] = recorder.rows
            status["peak_total_rss_mb"] = round(recorder.peak_total_mb, 1)
        status["cleanup"] = cleanup(procs, shm_prefix, run_id)
        for f in logs:
            f.close()
        status.update(counts(out))
        with open(os.path.join(out, "run.json"), "w") as f:
            json.dump(status, f, indent=1)
        for s, h in old.items():
            signal.signal(s, h)
        if not status["cleanup"]["clean"]:
            print(f"lab: cleanup incomplete: {status['cleanup']}", file=sys.stderr)


def cleanup(procs, shm_prefix: str, run_id: str) -> dict:
    """Stops every process group the run started (client first, then the
    masters with SIGTERM, gunicorn's graceful stop, then redis), SIGKILLs
    what is left after a grace period, removes the run's /dev/shm files and
    reports what (if anything) survived."""
    order = sorted(procs, key=lambda np: {"client": 0, "redis": 2}.get(np[0], 1))
    for name, p in order:
        if p.poll() is None:
            try:
                os.killpg(p.pid, signal.SIGTERM)
            except ProcessLookupError:
                pass
        if name == "client" or name.startswith("gunicorn"):
            try:
                p.wait(timeout=10)
            except subprocess.TimeoutExpired:
                pass
    deadline = time.time() + 10
    for _, p in procs:
        try:
            p.wait(timeout=max(0.1, deadline - time.time()))
        except subprocess.TimeoutExpired:
            pass
    killed = []
    for name, p in procs:
        members = group_members(p.pid)
        if members:
            killed.append(name)
            try:
                os.killpg(p.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        try:
            p.wait(timeout=5)
        except subprocess.TimeoutExpired:
            pass
    time.sleep(0.2)
    left = {name: group_members(p.pid) for name, p in procs}
    left = {k: v for k, v in left.items() if v}
    shm = glob.glob(f"{shm_prefix}*")
    for f in shm:
        try:
            os.unlink(f)
        except FileNotFoundError:
            pass
    shm_left = glob.glob(f"{shm_prefix}*")
    return {"sigkilled": killed, "left_running": left, "shm_files_removed": len(shm),
            "shm_left": shm_left, "clean": not left and not shm_left}


def counts(out: str) -> dict:
    c = {"recycles": 0, "holds": 0, "retry_ok": 0, "fetch_failed": 0}
    try:
        with open(os.path.join(out, "telemetry.jsonl")) as f:
            for line in f:
                e = json.loads(line)["event"]
                c["recycles"] += e == "worker_recycled"
                c["holds"] += e == "recycle_held"
    except FileNotFoundError:
        pass
    try:
        with open(os.path.join(out, "canary.jsonl")) as f:
            for line in f:
                r = json.loads(line)
                c["retry_ok"] += r["event"] == "retry_ok"
                c["fetch_failed"] += r["event"] == "fetch_failed"
                if r["event"] == "client_summary":
                    c["client"] = r
    except FileNotFoundError:
        pass
    return c


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="cmd", required=True)
    r = sub.add_parser("record", help="start the lab, record a window, stop")
    r.add_argument("--seconds", type=float, default=300.0)
    r.add_argument("--seed", type=int, default=1)
    r.add_argument("--policy", default=None, help="a [policy] fragment laid over fleet.toml's")
    r.add_argument("--scenario", default=os.path.join(LAB, "fleet.toml"))
    r.add_argument("--lab-toml", default=os.path.join(LAB, "lab.toml"))
    r.add_argument("--out", required=True)
    args = ap.parse_args(argv)
    if args.seconds <= 0:
        print("lab: error: --seconds must be > 0", file=sys.stderr)
        return 2
    try:
        return record(args)
    except ConfigError as e:
        print(f"lab: error: {e}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
