#!/usr/bin/env python3
"""fleet_truth: an independent ground-truth model of the seeds' fleet.

Written from /work/shared/DOMAIN.md (the seeds' fleet and their recycler's
decision core), not from fleetsim's Rust code. It generates recordings with
known truth (one `worker_recycled` row per recycle) for `fleetsim replay
--calibrate`, and measures what a policy change does on itself (whatif.py).

    python3 tools/truth/fleet_truth.py --hours 24 --rps 1 --seed 1 --out /tmp/rec.csv

Beside --out it writes FILE.truth.json: every parameter and the measured
figures. Standard library + simpy only. See tools/truth/README.md.
"""

import argparse
import collections
import json
import math
import os
import random
import sys
import time

import simpy

Z99 = 2.3263478740408408  # 99th percentile of the standard normal


# --------------------------------------------------------------------------
# Parameters


def build_parser():
    ap = argparse.ArgumentParser(
        description="Independent SimPy ground-truth model of the seeds' fleet (see README.md)")
    a = ap.add_argument
    g = ap.add_argument_group("run")
    g.add_argument("--hours", type=float, default=24.0, help="window length, hours (24)")
    g.add_argument("--seed", type=int, default=1, help="seed (1)")
    g.add_argument("--out", default=None, help="recording CSV to write (and OUT.truth.json)")
    g.add_argument("--whole-mb", action="store_true",
                   help="write rss_mb/limit_mb rounded to whole MB (platform-log style)")
    g.add_argument("--whole-mb-rule", choices=["round", "floor"], default="round",
                   help="with --whole-mb: round to the nearest MB (default) or truncate, as "
                        "an integer division of kB by 1024 does")
    g.add_argument("--drop-ids", action="store_true", help="omit the instance and worker columns")
    g.add_argument("--oom-rows", action="store_true",
                   help="also write an `oom_kill` row per OOM kill (default: recycles only)")
    g.add_argument("--held-rows", action="store_true",
                   help="also write a `recycle_held` row per hold (default: recycles only)")
    g.add_argument("--warm-start", dest="warm_start", action="store_true", default=True,
                   help="(default) at t=0 each worker has served a uniform fraction of its life")
    g.add_argument("--cold-start", dest="warm_start", action="store_false",
                   help="at t=0 every worker is freshly forked at --boot-mb")
    g.add_argument("--quiet", action="store_true", help="no summary on stdout")
    g = ap.add_argument_group("fleet")
    g.add_argument("--instances", type=int, default=2)
    g.add_argument("--workers", type=int, default=3, help="sync workers per instance (3)")
    g.add_argument("--container-mb", type=float, default=2048.0)
    g.add_argument("--shared-mb", type=float, default=135.0)
    g.add_argument("--boot-mb", type=float, default=360.0, help="master RSS = a fresh worker's RSS")
    g.add_argument("--boot-s", type=float, default=2.0, help="replacement boot time (2 s)")
    g = ap.add_argument_group("memory")
    g.add_argument("--leak-mean", type=float, default=0.15, help="mean leak velocity, MB/request")
    g.add_argument("--leak-cv", type=float, default=0.6, help="coefficient of variation of velocity")
    g.add_argument("--warmup-mb", type=float, default=0.0, help="warm-up MB (0 = off)")
    g.add_argument("--step-probability", type=float, default=0.0,
                   help="chance a request adds a step (0 = off; the seeds' fleet: 0.0055)")
    g.add_argument("--step-mean-mb", type=float, default=19.5,
                   help="a step's size, exponential with this mean (19.5)")
    g.add_argument("--warmup-requests", type=float, default=70.0,
                   help="e-folding requests of the warm-up approach (70)")
    g = ap.add_argument_group("traffic")
    g.add_argument("--rps", type=float, default=1.0, help="fleet mean arrival rate")
    g.add_argument("--profile", choices=["constant", "diurnal"], default="constant")
    g.add_argument("--peak-to-trough", type=float, default=3.0)
    g.add_argument("--peak-hour", type=float, default=20.0)
    g.add_argument("--start-hour", type=float, default=0.0)
    g.add_argument("--service-mean-ms", type=float, default=120.0)
    g.add_argument("--service-p99-ms", type=float, default=900.0)
    g = ap.add_argument_group("policy")
    g.add_argument("--base-mb", type=float, default=500.0, help="base limit")
    g.add_argument("--jitter-mb", type=float, default=40.0, help="limit ~ U[base-j, base+j]")
    g.add_argument("--hard-mb", type=float, default=None, help="hard ceiling (base + 150)")
    g.add_argument("--tick-s", type=float, default=45.0)
    g.add_argument("--cooldown-s", type=float, default=120.0)
    g.add_argument("--pressure-cooldown-s", type=float, default=30.0)
    g.add_argument("--min-headroom-mb", type=float, default=350.0)
    g.add_argument("--busy-rps", type=float, default=None,
                   help="busy deferral threshold on the instance's trailing rps (default: off)")
    g.add_argument("--busy-window-s", type=float, default=60.0)
    g.add_argument("--defer-max-s", type=float, default=3600.0)
    g.add_argument("--lease-ttl-s", type=float, default=120.0, help="fleet lease TTL (0 = no lease)")
    g.add_argument("--bucket-per-h", type=float, default=None, help="token bucket refill, tokens/h")
    g.add_argument("--bucket-burst", type=float, default=None, help="token bucket capacity")
    del a
    return ap


# The flags that are run options, not parameters of the fleet.
RUN_ONLY = {"out", "quiet"}


def params_from_args(ns):
    p = {k: v for k, v in vars(ns).items() if k not in RUN_ONLY}
    if p["hard_mb"] is None:
        p["hard_mb"] = p["base_mb"] + 150.0
    if (p["bucket_per_h"] is None) != (p["bucket_burst"] is None):
        if p["bucket_per_h"] is None:
            raise SystemExit("--bucket-burst needs --bucket-per-h")
        p["bucket_burst"] = max(1.0, p["bucket_per_h"] / 4.0) if p["bucket_burst"] is None else p["bucket_burst"]
    return p


def parse_params(argv):
    ap = build_parser()
    ns = ap.parse_args(argv)
    return ns, params_from_args(ns)


def lognormal_mean_cv(mean, cv):
    """(mu, sigma) of the lognormal with this mean and coefficient of variation."""
    s2 = math.log(1.0 + cv * cv)
    return math.log(mean) - s2 / 2.0, math.sqrt(s2)


def lognormal_mean_p99(mean, p99):
    """(mu, sigma): mean = exp(mu + s^2/2), p99 = exp(mu + z s) => s^2 - 2 z s + 2 ln(p99/mean) = 0."""
    d = math.log(p99 / mean)
    disc = Z99 * Z99 - 2.0 * d
    if disc < 0:
        raise SystemExit("service p99/mean ratio too large for a lognormal")
    s = Z99 - math.sqrt(disc)  # the smaller root: the p99 lies above the mean
    return math.log(mean) - s * s / 2.0, s


# --------------------------------------------------------------------------
# The model


class Worker:
    __slots__ = ("inst", "slot", "gen", "rss", "limit", "vel", "warm_left", "requests",
                 "state", "draining", "wake", "proc", "holds", "over_since", "born", "rng")

    # state: "boot" (forked, not serving), "idle", "busy", "dead"


class Instance:
    __slots__ = ("index", "idle", "waiting", "workers", "private", "last_recycle", "recent")

    def __init__(self, index):
        self.index = index
        self.idle = collections.deque()  # idle workers, longest-idle first
        self.waiting = 0                 # queued requests (FIFO; requests are interchangeable)
        self.workers = []                # live workers (booting, idle, busy, draining)
        self.private = 0.0               # sum(rss - shared) over live workers
        self.last_recycle = None         # the per-instance recycle stamp
        self.recent = collections.deque()  # arrival times, for the busy deferral's rps


class Fleet:
    def __init__(self, p, seed):
        self.p = p
        self.seed = seed
        self.env = simpy.Environment()
        self.hard = p["hard_mb"]
        self.vel_mu, self.vel_sigma = (lognormal_mean_cv(p["leak_mean"], p["leak_cv"])
                                       if p["leak_mean"] > 0 else (None, 0.0))
        self.svc_mu, self.svc_sigma = lognormal_mean_p99(p["service_mean_ms"] / 1e3,
                                                         p["service_p99_ms"] / 1e3)
        self.warm_q = math.exp(-1.0 / p["warmup_requests"]) if p["warmup_requests"] > 0 else 0.0
        # independent streams, so a policy change leaves arrivals, service
        # times and each worker life's draws untouched (common random numbers)
        self.rng_arr = random.Random(f"{seed}/arrivals")
        self.rng_svc = [random.Random(f"{seed}/service/{i}") for i in range(p["instances"])]
        self.instances = [Instance(i) for i in range(p["instances"])]
        self.rr = 0
        self.lease_exp = -math.inf
        self.bucket_on = p["bucket_per_h"] is not None
        self.tokens = p["bucket_burst"] if self.bucket_on else 0.0
        self.tokens_t = 0.0
        # records
        self.rows = []
        self.arrivals = 0
        self.completed = 0
        self.failed = 0
        self.lives = []          # requests at recycle
        self.lives_held = 0      # recycles whose worker was held at least once
        self.oom_lives = []
        self.c = collections.Counter()
        self.max_rss = p["boot_mb"]
        for inst in self.instances:
            for s in range(p["workers"]):
                w = self.new_worker(inst, s, 0)
                if p["warm_start"]:
                    self.pre_age(w)
                    self.env.process(self.serve(w, booted=True))
                else:
                    self.env.process(self.serve(w, booted=False))
        self.env.process(self.arrive())

    # ---- workers

    def new_worker(self, inst, slot, gen):
        p = self.p
        w = Worker()
        w.rng = random.Random(f"{self.seed}/worker/{inst.index}/{slot}/{gen}")
        w.inst, w.slot, w.gen = inst, slot, gen
        w.rss = p["boot_mb"]
        w.limit = p["base_mb"] - p["jitter_mb"] + 2.0 * p["jitter_mb"] * w.rng.random()
        w.vel = (w.rng.lognormvariate(self.vel_mu, self.vel_sigma)
                 if self.vel_mu is not None and self.vel_sigma > 0 else p["leak_mean"])
        w.warm_left = p["warmup_mb"]
        w.requests = 0
        w.state = "boot"
        w.draining = False
        w.wake = None
        w.proc = None
        w.holds = 0
        w.over_since = None
        w.born = self.env.now
        inst.workers.append(w)
        inst.private += w.rss - p["shared_mb"]
        return w

    def rss_after(self, w, n):
        """RSS of a fresh worker after n requests (velocity + warm-up)."""
        p = self.p
        warm = p["warmup_mb"] * (1.0 - self.warm_q ** n) if p["warmup_mb"] > 0 else 0.0
        return p["boot_mb"] + n * w.vel + warm

    def requests_to_limit(self, w):
        if self.rss_after(w, 0) >= w.limit:
            return 0
        hi = 1
        while self.rss_after(w, hi) < w.limit:
            hi *= 2
            if hi > 10 ** 9:
                return hi
        lo = hi // 2
        while hi - lo > 1:  # rss_after(lo) < limit <= rss_after(hi)
            mid = (lo + hi) // 2
            if self.rss_after(w, mid) < w.limit:
                lo = mid
            else:
                hi = mid
        return hi

    def pre_age(self, w):
        """Warm start: the worker has served a uniform fraction of its life."""
        if self.p.get("step_probability", 0.0) > 0.0:
            # With steps, the life is drawn request by request: the steps
            # until the limit is reached, then an age uniform in that life.
            steps, total = [], 0.0
            while self.rss_after(w, len(steps)) + total < w.limit:
                total += self.step(w)
                steps.append(total)
            n = int(w.rng.random() * len(steps))
            rss = self.rss_after(w, n) + (steps[n - 1] if n > 0 else 0.0)
        else:
            n = int(w.rng.random() * self.requests_to_limit(w))
            rss = self.rss_after(w, n)
        if self.p["warmup_mb"] > 0:
            w.warm_left = self.p["warmup_mb"] * self.warm_q ** n
        w.inst.private += rss - w.rss
        w.rss = rss
        w.requests = n
        w.born = -math.inf

    def serve(self, w, booted):
        env, inst = self.env, w.inst
        if not booted:
            yield env.timeout(self.p["boot_s"])
            if w.state == "dead":
                return
        w.proc = env.active_process
        env.process(self.sampler(w))
        svc_rng = self.rng_svc[inst.index]
        mu, sigma = self.svc_mu, self.svc_sigma
        try:
            while True:
                if inst.waiting > 0:
                    inst.waiting -= 1
                else:
                    w.state = "idle"
                    w.wake = env.event()
                    inst.idle.append(w)
                    yield w.wake
                    if w.state == "dead":
                        return
                w.state = "busy"
                yield env.timeout(svc_rng.lognormvariate(mu, sigma))
                w.state = "idle"  # not interruptible from here on
                self.completed += 1
                w.requests += 1
                self.grow(w)
                if w.state == "dead":  # it was the OOM victim of its own growth
                    return
                if w.draining:
                    self.exit(w)
                    return
        except simpy.Interrupt:  # OOM-killed mid-request
            return

    def step(self, w):
        """A request's step: with probability step_probability, an exponential
        jump of mean step_mean_mb (0 otherwise)."""
        p = self.p
        if p.get("step_probability", 0.0) > 0.0 and w.rng.random() < p["step_probability"]:
            return w.rng.expovariate(1.0 / p["step_mean_mb"])
        return 0.0

    def grow(self, w):
        d = w.vel
        if w.warm_left > 0.0:
            step = w.warm_left * (1.0 - self.warm_q)
            w.warm_left -= step
            d += step
        d += self.step(w)
        w.rss += d
        inst = w.inst
        inst.private += d
        if w.rss > self.max_rss:
            self.max_rss = w.rss
        p = self.p
        while p["boot_mb"] + inst.private > p["container_mb"]:
            self.oom_kill(inst)

    def oom_kill(self, inst):
        victim = max(inst.workers, key=lambda v: v.rss)
        self.c["oom_kills"] += 1
        self.oom_lives.append(victim.requests)
        if self.p_oom_rows:
            self.row("oom_kill", victim)
        if victim.state == "busy":
            self.failed += 1
            victim.proc.interrupt()
        elif victim.state == "idle" and victim in inst.idle:
            inst.idle.remove(victim)
        self.exit(victim)

    def exit(self, w):
        """The worker exits; the master forks a replacement that boots in boot_s."""
        w.state = "dead"
        inst = w.inst
        inst.workers.remove(w)
        inst.private -= w.rss - self.p["shared_mb"]
        nw = self.new_worker(inst, w.slot, w.gen + 1)
        self.env.process(self.serve(nw, booted=False))

    # ---- traffic

    def rate_at(self, t):
        p = self.p
        if p["profile"] == "constant":
            return p["rps"]
        a = (p["peak_to_trough"] - 1.0) / (p["peak_to_trough"] + 1.0)
        h = (p["start_hour"] + t / 3600.0) % 24.0
        return p["rps"] * (1.0 + a * math.cos(2.0 * math.pi * (h - p["peak_hour"]) / 24.0))

    def arrive(self):
        env, rng, p = self.env, self.rng_arr, self.p
        if p["profile"] == "constant":
            lam_max = p["rps"]
        else:
            a = (p["peak_to_trough"] - 1.0) / (p["peak_to_trough"] + 1.0)
            lam_max = p["rps"] * (1.0 + a)
        thin = p["profile"] != "constant"
        n_inst = len(self.instances)
        busy = p["busy_rps"] is not None
        while True:
            yield env.timeout(rng.expovariate(lam_max))
            if thin and rng.random() * lam_max > self.rate_at(env.now):
                continue
            self.arrivals += 1
            inst = self.instances[self.rr]
            self.rr = (self.rr + 1) % n_inst
            if busy:
                inst.recent.append(env.now)
            if inst.idle:
                w = inst.idle.popleft()
                w.state = "busy"
                w.wake.succeed()
            else:
                inst.waiting += 1

    def inst_rps(self, inst, now):
        win = self.p["busy_window_s"]
        q = inst.recent
        while q and q[0] < now - win:
            q.popleft()
        return len(q) / win

    # ---- the recycler

    def sampler(self, w):
        env, tick = self.env, self.p["tick_s"]
        yield env.timeout(w.rng.random() * tick)
        while w.state != "dead" and not w.draining:
            if w.rss >= w.limit:
                self.ask(w)
            yield env.timeout(tick)

    def refill(self, now):
        p = self.p
        self.tokens = min(p["bucket_burst"],
                          self.tokens + (now - self.tokens_t) * p["bucket_per_h"] / 3600.0)
        self.tokens_t = now

    def ask(self, w):
        """The seeds' decision core (DOMAIN.md), in its order."""
        p, now, inst = self.p, self.env.now, w.inst
        if w.over_since is None:
            w.over_since = now
        headroom = p["container_mb"] - (p["boot_mb"] + inst.private)
        pressure = headroom < p["min_headroom_mb"]
        cooldown = p["pressure_cooldown_s"] if pressure else p["cooldown_s"]
        if inst.last_recycle is not None and now - inst.last_recycle < cooldown:
            return self.hold(w, "holds_cooldown")
        if (p["busy_rps"] is not None and not pressure
                and self.inst_rps(inst, now) > p["busy_rps"]
                and now - w.over_since < p["defer_max_s"] and w.rss < self.hard):
            return self.hold(w, "holds_busy")
        emergency = pressure or w.rss >= self.hard
        lease_on = p["lease_ttl_s"] > 0
        lease_free = (not lease_on) or now >= self.lease_exp
        if self.bucket_on:
            self.refill(now)
        token = (not self.bucket_on) or self.tokens >= 1.0
        if lease_free and token:
            branch = "lease_acquired" if lease_on else "gates_open"
        elif emergency:
            branch = "bypass_pressure" if pressure else "bypass_hard_ceiling"
        else:
            return self.hold(w, "holds_lease" if not lease_free else "holds_bucket")
        # commit: take whatever is free (SET NX on a free lease; a token if any)
        if lease_on and lease_free:
            self.lease_exp = now + p["lease_ttl_s"]
            self.c["lease_taken"] += 1
        if self.bucket_on and self.tokens >= 1.0:
            self.tokens -= 1.0
            self.c["tokens_taken"] += 1
        self.c[branch] += 1
        self.recycle(w, pressure, headroom)

    def hold(self, w, why):
        self.c[why] += 1
        w.holds += 1
        if self.p.get("held_rows"):
            self.row("recycle_held", w)

    def recycle(self, w, pressure, headroom):
        inst, now = w.inst, self.env.now
        inst.last_recycle = now
        self.c["recycles"] += 1
        self.c["pressure_recycles"] += pressure
        self.lives.append(w.requests)
        self.lives_held += w.holds > 0
        self.row("worker_recycled", w)
        w.draining = True
        if w.state == "idle":  # exits now
            inst.idle.remove(w)
            self.exit(w)
        # busy: exits when its in-flight request completes (serve())

    def row(self, event, w):
        self.rows.append((self.env.now, event, w.inst.index, w.slot, w.rss, w.limit, w.requests))

    p_oom_rows = False


def quantile(xs, q):
    if not xs:
        return None
    s = sorted(xs)
    return s[min(len(s) - 1, int(q * len(s)))]


def predicted_rate(p):
    """Renewal prediction of recycles/h, ignoring holds: fleet throughput over
    the mean requests a worker serves before a sample finds it over its limit.
    E[requests to limit] = E[limit - boot - warm-up] * E[1/v], with
    E[1/v] = (1 + cv^2) / mean for a lognormal; plus half a tick of requests."""
    runway = p["base_mb"] - p["boot_mb"] - p["warmup_mb"]
    if runway <= 0 or p["leak_mean"] <= 0:
        return None
    n = runway * (1.0 + p["leak_cv"] ** 2) / effective_mb_per_request(p)
    n += p["tick_s"] / 2.0 * p["rps"] / (p["instances"] * p["workers"])
    return p["rps"] * 3600.0 / n


def simulate(p, seed=None):
    """Run the model; returns (fleet, measured dict)."""
    seed = p["seed"] if seed is None else seed
    t0 = time.perf_counter()
    f = Fleet(p, seed)
    f.p_oom_rows = p.get("oom_rows", False)
    dur = p["hours"] * 3600.0
    f.env.run(until=dur)
    wall = time.perf_counter() - t0
    hours = p["hours"]
    lives = f.lives
    m = {
        "seed": seed,
        "duration_s": dur,
        "arrivals": f.arrivals,
        "realised_rps": f.arrivals / dur,
        "completed": f.completed,
        "failed_in_flight": f.failed,
        "recycles": f.c["recycles"],
        "recycles_per_hour": f.c["recycles"] / hours,
        "requests_per_life_mean": (sum(lives) / len(lives)) if lives else None,
        "requests_per_life_median": quantile(lives, 0.5),
        "requests_per_life_p10": quantile(lives, 0.1),
        "held_fraction": (f.lives_held / len(lives)) if lives else None,
        "pressure_recycles": f.c["pressure_recycles"],
        "lease_acquired": f.c["lease_acquired"],
        "lease_taken": f.c["lease_taken"],
        "bypass_pressure": f.c["bypass_pressure"],
        "bypass_hard_ceiling": f.c["bypass_hard_ceiling"],
        "gates_open": f.c["gates_open"],
        "tokens_taken": f.c["tokens_taken"],
        "holds_cooldown": f.c["holds_cooldown"],
        "holds_busy": f.c["holds_busy"],
        "holds_lease": f.c["holds_lease"],
        "holds_bucket": f.c["holds_bucket"],
        "oom_kills": f.c["oom_kills"],
        "max_rss_mb": f.max_rss,
        "predicted_recycles_per_hour_renewal": predicted_rate(p),
        "wall_s": wall,
    }
    return f, m


def fmt_mb(x, whole, rule="round"):
    if not whole:
        return f"{x:.1f}"
    return str(int(math.floor(x + 0.5) if rule == "round" else math.floor(x)))


def write_recording(path, f, p):
    whole, drop = p["whole_mb"], p["drop_ids"]
    hdr = ["ts", "event"] + ([] if drop else ["instance", "worker"]) + ["rss_mb", "limit_mb", "requests"]
    tmp = path + ".tmp"
    with open(tmp, "w") as fh:
        fh.write(",".join(hdr) + "\n")
        for (t, ev, i, s, rss, lim, req) in f.rows:
            cells = [f"{t:.3f}", ev]
            if not drop:
                cells += [f"inst-{i}", f"w{s}"]
            rule = p.get("whole_mb_rule", "round")
            cells += [fmt_mb(rss, whole, rule), fmt_mb(lim, whole, rule), str(req)]
            fh.write(",".join(cells) + "\n")
    os.replace(tmp, path)


def effective_mb_per_request(p):
    """Mean growth a request after the warm-up: the leak's mean and the steps'."""
    return p["leak_mean"] + p.get("step_probability", 0.0) * p.get("step_mean_mb", 0.0)


def truth_json(p, m):
    mu, sigma = lognormal_mean_p99(p["service_mean_ms"] / 1e3, p["service_p99_ms"] / 1e3)
    return {
        "schema": "fleet_truth/1",
        "model": "tools/truth/fleet_truth.py (independent SimPy model written from DOMAIN.md)",
        "simpy": simpy.__version__,
        "params": p,
        "derived": {
            "hard_mb": p["hard_mb"],
            "limit_range_mb": [p["base_mb"] - p["jitter_mb"], p["base_mb"] + p["jitter_mb"]],
            "service_lognormal_mu_s": mu, "service_lognormal_sigma": sigma,
            "effective_mb_per_request": effective_mb_per_request(p),
        },
        # the values `replay --calibrate` should recover, under its key names
        "truth": {
            "fleet.boot_rss_mb": p["boot_mb"],
            "fleet.leak.mean_mb_per_request": p["leak_mean"],
            "fleet.leak.cv": p["leak_cv"],
            "policy.base_limit_mb": p["base_mb"],
            "policy.jitter_mb": p["jitter_mb"],
            "policy.hard_limit_mb": p["hard_mb"],
            "workload.rps": p["rps"],
            "policy.tick_s": p["tick_s"],
            "policy.cooldown_s": p["cooldown_s"],
            "policy.lease_ttl_s": p["lease_ttl_s"],
        },
        "measured": m,
    }


def main(argv=None):
    ns, p = parse_params(argv)
    f, m = simulate(p)
    if ns.out:
        write_recording(ns.out, f, p)
        base = ns.out[:-4] if ns.out.endswith(".csv") else ns.out
        tmp = base + ".truth.json.tmp"
        with open(tmp, "w") as fh:
            json.dump(truth_json(p, m), fh, indent=2)
            fh.write("\n")
        os.replace(tmp, base + ".truth.json")
    if not ns.quiet:
        for k, v in m.items():
            print(f"{k:<38} {v:.6g}" if isinstance(v, float) else f"{k:<38} {v}")
        pr = m["predicted_recycles_per_hour_renewal"]
        if pr:
            print(f"sanity: renewal prediction {pr:.3f} recycles/h (fleet_rps*3600 / (E[runway]*E[1/v] "
                  f"+ tick/2*rps/workers)), measured {m['recycles_per_hour']:.3f}/h "
                  f"({m['recycles']} recycles, ratio {m['recycles_per_hour'] / pr:.3f}); "
                  f"{m['arrivals']} arrivals in {m['wall_s']:.2f} s wall "
                  f"({m['arrivals'] / max(m['wall_s'], 1e-9):,.0f} requests/s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
