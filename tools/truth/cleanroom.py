#!/usr/bin/env python3
"""Clean-room ground-truth model of the field reports' fleet (SimPy).

Written from /work/shared/DOMAIN.md and the seeds only (not from fleetsim's
source, docs or its other truth model). See CLEANROOM.md for every modelling
choice made where the description is silent.

One recording:
  cleanroom.py --boot-mb 360 --base-mb 500 --jitter-mb 40 --leak-mean 0.15 \
      --leak-cv 0.6 --rps 1.5 --hours 24 --seed 1 --out /tmp/cleanroom/f1.csv
Paired limit what-if (common random numbers):
  cleanroom.py ... --whatif-base-mb 460 --pairs 20
"""
import argparse
import collections
import json
import math
import random
import statistics
import sys

import simpy

# Fixed fleet constants (DOMAIN.md / seeds)
INSTANCES = 2
WORKERS = 3
CONTAINER_MB = 2048.0
HARD_OFFSET_MB = 150.0
TICK_S = 45.0
COOLDOWN_S = 120.0
PRESSURE_COOLDOWN_S = 30.0
MIN_HEADROOM_MB = 350.0
LEASE_TTL_S = 120.0
# Choices of this model (documented in CLEANROOM.md)
SHARED_BELOW_BOOT_MB = 30.0      # shared_mb = boot - 30 (a fresh fork is ~30 MB private)
BOOT_S = 2.0                     # replacement readiness after fork
SERVICE_MEAN_S = 0.120           # lognormal service time, mean 120 ms
SERVICE_CV = 1.0
BUSY_WINDOW_S = 60.0             # instance rps = arrivals in the trailing 60 s / 60
BURN_IN_S = 4 * 3600.0           # simulated before the recorded window opens


def lognormal_params(mean, cv):
    s2 = math.log(1.0 + cv * cv)
    return math.log(mean) - s2 / 2.0, math.sqrt(s2)


class Worker:
    __slots__ = ("inst", "slot", "name", "rng", "v", "limit", "rss", "req",
                 "state", "draining", "over_since", "gen", "born", "idle_since")


class Instance:
    __slots__ = ("idx", "name", "workers", "queue", "last_recycle", "arrivals")


class Fleet:
    def __init__(self, p, base_mb, seed, record_rows=True):
        self.p = p
        self.base = float(base_mb)
        self.hard = self.base + HARD_OFFSET_MB
        self.seed = seed
        self.env = simpy.Environment()
        self.start = p.burn_in_s
        self.end = p.burn_in_s + p.hours * 3600.0
        self.boot = p.boot_mb
        self.shared = max(0.0, p.boot_mb - SHARED_BELOW_BOOT_MB)
        self.leak_mu, self.leak_sigma = lognormal_params(p.leak_mean, p.leak_cv)
        self.svc_mu, self.svc_sigma = lognormal_params(SERVICE_MEAN_S, SERVICE_CV)
        # independent streams so that two policies share arrivals, service
        # times and each slot's sequence of lives (velocity, limit offset)
        self.rng_arr = random.Random(f"{seed}/arrivals")
        self.rng_svc = random.Random(f"{seed}/service")
        self.rng_pick = random.Random(f"{seed}/pick")
        self.lease_until = -1.0
        self.rows = []
        self.counts = collections.Counter()
        self.window_arrivals = 0
        self.instances = []
        for i in range(INSTANCES):
            inst = Instance()
            inst.idx = i
            inst.name = "inst-" + "ABCDEFGH"[i]
            inst.workers = []
            inst.queue = collections.deque()
            inst.last_recycle = None
            inst.arrivals = collections.deque()
            self.instances.append(inst)
            for s in range(WORKERS):
                w = Worker()
                w.inst = inst
                w.slot = s
                w.name = f"w{s}"
                w.rng = random.Random(f"{seed}/slot/{i}/{s}")
                w.gen = 0
                inst.workers.append(w)
                self.new_life(w, initial=True)
        self.env.process(self.arrivals())

    # ---------------------------------------------------------------- lives
    def new_life(self, w, initial=False):
        r = w.rng
        w.v = r.lognormvariate(self.leak_mu, self.leak_sigma)
        # jitter offset drawn per life, integer MB, inclusive
        off = r.randint(-self.p.jitter_mb, self.p.jitter_mb)
        w.limit = self.base + off
        u = r.random()
        phase = r.random() * TICK_S
        w.gen += 1
        w.draining = False
        w.over_since = None
        w.born = self.env.now
        if initial:
            # start part-way through a life: uniform position on the runway
            runway = max(0.0, w.limit - self.boot)
            w.req = int(u * runway / w.v)
            w.rss = self.boot + w.req * w.v
            w.state = "idle"
            w.idle_since = self.env.now
            self.env.process(self.sampler(w, w.gen, phase))
        else:
            w.req = 0
            w.rss = self.boot
            w.state = "booting"
            self.env.process(self.boot_then_serve(w, w.gen))

    def boot_then_serve(self, w, gen):
        yield self.env.timeout(BOOT_S)
        if w.gen != gen:
            return
        w.state = "idle"
        w.idle_since = self.env.now
        self.take_next(w)
        # the sampling thread starts with the worker: first sample a tick later
        yield self.env.timeout(TICK_S)
        while w.gen == gen and not w.draining:
            self.sample(w)
            yield self.env.timeout(TICK_S)

    def sampler(self, w, gen, phase):
        yield self.env.timeout(phase)
        while w.gen == gen and not w.draining:
            self.sample(w)
            yield self.env.timeout(TICK_S)

    # -------------------------------------------------------------- traffic
    def arrivals(self):
        env = self.env
        rate = self.p.rps
        k = 0
        while True:
            yield env.timeout(self.rng_arr.expovariate(rate))
            st = self.rng_svc.lognormvariate(self.svc_mu, self.svc_sigma)
            inst = self.instances[k % INSTANCES]
            k += 1
            now = env.now
            if self.start <= now < self.end:
                self.window_arrivals += 1
            a = inst.arrivals
            a.append(now)
            while a and a[0] < now - BUSY_WINDOW_S:
                a.popleft()
            idle = [w for w in inst.workers if w.state == "idle"]
            if idle:
                if len(idle) == 1 or self.p.pick == "first":
                    w = idle[0]
                elif self.p.pick == "lifo":
                    w = max(idle, key=lambda x: x.idle_since)
                else:
                    w = self.rng_pick.choice(idle)
                self.serve(w, st)
            else:
                inst.queue.append(st)

    def serve(self, w, st):
        w.state = "busy"
        gen = w.gen
        ev = self.env.timeout(st)
        ev.callbacks.append(lambda _e, w=w, gen=gen: self.complete(w, gen))

    def complete(self, w, gen):
        if w.gen != gen:          # killed (OOM) mid-request
            return
        w.rss += w.v
        w.req += 1
        w.state = "idle"
        w.idle_since = self.env.now
        if self.oom_check(w.inst):
            if w.gen != gen:
                return
        if w.draining:
            self.exit(w)
            return
        self.take_next(w)

    def take_next(self, w):
        q = w.inst.queue
        if q and w.state == "idle" and not w.draining:
            self.serve(w, q.popleft())

    # ---------------------------------------------------------------- memory
    def usage(self, inst):
        u = self.boot  # the master
        for x in inst.workers:
            u += max(0.0, x.rss - self.shared)
        return u

    def oom_check(self, inst):
        if self.usage(inst) <= CONTAINER_MB:
            return False
        victim = max(inst.workers, key=lambda x: x.rss)
        if self.start <= self.env.now < self.end:
            self.counts["oom_kills"] += 1
            if victim.state == "busy":
                self.counts["oom_failed_requests"] += 1
        self.exit(victim)
        return True

    def exit(self, w):
        # replacement is forked at once and is ready BOOT_S later
        self.new_life(w)

    # -------------------------------------------------------------- recycler
    def instance_rps(self, inst):
        now = self.env.now
        a = inst.arrivals
        while a and a[0] < now - BUSY_WINDOW_S:
            a.popleft()
        return len(a) / BUSY_WINDOW_S

    def sample(self, w):
        if w.state == "booting" or w.draining:
            return
        if w.rss < w.limit:
            return
        now = self.env.now
        inwin = self.start <= now < self.end
        if w.over_since is None:
            w.over_since = now
        inst = w.inst
        headroom = CONTAINER_MB - self.usage(inst)
        pressure = headroom < MIN_HEADROOM_MB
        cd = PRESSURE_COOLDOWN_S if pressure else COOLDOWN_S
        if inst.last_recycle is not None and now - inst.last_recycle < cd:
            if inwin:
                self.counts["held_cooldown"] += 1
            return
        p = self.p
        if (p.busy_deferral and not pressure and self.instance_rps(inst) > p.busy_rps
                and now - w.over_since < p.defer_max_s and w.rss < self.hard):
            if inwin:
                self.counts["deferred_busy"] += 1
            return
        if now >= self.lease_until:
            self.lease_until = now + LEASE_TTL_S
            lease = "acquired"
        elif pressure:
            lease = "bypassed_pressure"
        elif w.rss >= self.hard:
            lease = "bypassed_hard_ceiling"
        else:
            if inwin:
                self.counts["held_lease"] += 1
            return
        inst.last_recycle = now
        if inwin:
            self.counts["recycles"] += 1
            self.counts["lease_" + lease] += 1
            if pressure:
                self.counts["pressure_recycles"] += 1
            self.rows.append((now - self.start, inst.name, w.name, w.rss, w.limit,
                              w.req, w.v, pressure, headroom, lease, now - w.born))
        w.draining = True
        if w.state == "idle":
            self.exit(w)
        # busy: finishes its request, then exits (complete())

    def run(self):
        self.env.run(until=self.end)
        return self


def summarize(f, whole):
    rows = f.rows
    hours = f.p.hours
    n = len(rows)
    out = {"recycles": n, "recycles_per_h": n / hours}
    if n:
        reqs = [r[5] for r in rows]
        eff = [((round(r[3]) if whole else r[3]) - f.boot) / r[5] for r in rows if r[5] > 0]
        over = [r[3] - r[4] for r in rows]
        out.update({
            "mean_requests_per_life": statistics.fmean(reqs),
            "median_requests_per_life": statistics.median(reqs),
            "p10_requests_per_life": sorted(reqs)[int(0.1 * (n - 1))],
            "min_requests_per_life": min(reqs),
            "effective_mb_per_request": statistics.fmean(eff) if eff else None,
            "effective_mb_per_request_raw_velocity": statistics.fmean(r[6] for r in rows),
            "mean_margin_mb": statistics.fmean(over),
            "max_rss_mb": max(r[3] for r in rows),
            "trips_under_25mb": sum(1 for o in over if o < 25),
            "limit_min_mb": min(r[4] for r in rows),
            "limit_max_mb": max(r[4] for r in rows),
        })
    out["window_arrivals"] = f.window_arrivals
    out["realized_rps"] = f.window_arrivals / (hours * 3600.0)
    out.update({k: v for k, v in sorted(f.counts.items()) if k != "recycles"})
    return out


def write_csv(f, path, whole):
    with open(path, "w") as fh:
        fh.write("ts,instance,worker,rss_mb,limit_mb,requests\n")
        for r in f.rows:
            ts, inst, w, rss, lim, req = r[:6]
            if whole:
                fh.write(f"{ts:.3f},{inst},{w},{round(rss)},{round(lim)},{req}\n")
            else:
                fh.write(f"{ts:.3f},{inst},{w},{rss:.3f},{lim:.3f},{req}\n")


def params_dict(p):
    return {
        "boot_mb": p.boot_mb, "base_mb": p.base_mb, "jitter_mb": p.jitter_mb,
        "hard_limit_mb": p.base_mb + HARD_OFFSET_MB,
        "leak_mean_mb_per_request": p.leak_mean, "leak_cv": p.leak_cv,
        "leak_distribution": "lognormal per life, constant within a life",
        "rps": p.rps, "hours": p.hours, "seed": p.seed, "whole_mb": p.whole_mb,
        "instances": INSTANCES, "workers_per_instance": WORKERS,
        "container_mb": CONTAINER_MB, "shared_mb": max(0.0, p.boot_mb - SHARED_BELOW_BOOT_MB),
        "tick_s": TICK_S, "sampling": "per-worker timer, first sample one tick after readiness",
        "cooldown_s": COOLDOWN_S, "pressure_cooldown_s": PRESSURE_COOLDOWN_S,
        "min_headroom_mb": MIN_HEADROOM_MB, "lease_ttl_s": LEASE_TTL_S,
        "busy_deferral": p.busy_deferral, "busy_rps_per_instance": p.busy_rps,
        "busy_window_s": BUSY_WINDOW_S, "defer_max_s": p.defer_max_s,
        "boot_s": BOOT_S, "service": f"lognormal mean {SERVICE_MEAN_S*1000:.0f} ms cv {SERVICE_CV}",
        "balancer": "round_robin over instances; " + {
            "random": "random idle worker inside",
            "first": "the first idle worker in slot order inside",
            "lifo": "the latest idle worker inside"}[p.pick],
        "burn_in_s": p.burn_in_s, "ts": "seconds since window start",
    }


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--boot-mb", type=float, required=True)
    ap.add_argument("--base-mb", type=float, required=True)
    ap.add_argument("--jitter-mb", type=int, required=True)
    ap.add_argument("--leak-mean", type=float, required=True)
    ap.add_argument("--leak-cv", type=float, required=True)
    ap.add_argument("--rps", type=float, required=True)
    ap.add_argument("--hours", type=float, default=24.0)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--whole-mb", action="store_true")
    ap.add_argument("--pick", choices=["random", "first", "lifo"], default="random",
                    help="which idle worker of an instance takes a request (choice 11)")
    ap.add_argument("--no-busy-deferral", dest="busy_deferral", action="store_false")
    ap.add_argument("--busy-rps", type=float, default=1.0,
                    help="instance arrivals/s over the trailing 60 s above which a recycle defers")
    ap.add_argument("--defer-max-s", type=float, default=90.0)
    ap.add_argument("--burn-in-s", type=float, default=BURN_IN_S,
                    help="simulated before the window opens (0: every worker fresh at the window's start)")
    ap.add_argument("--out", help="CSV of recycle rows; FILE.truth.json beside it")
    ap.add_argument("--whatif-base-mb", type=float)
    ap.add_argument("--pairs", type=int, default=20)
    p = ap.parse_args()

    if p.whatif_base_mb is not None:
        diffs, a_rates, b_rates = [], [], []
        for k in range(p.pairs):
            s = p.seed * 1000 + k
            a = Fleet(p, p.base_mb, s).run()
            b = Fleet(p, p.whatif_base_mb, s).run()
            ra, rb = len(a.rows) / p.hours, len(b.rows) / p.hours
            a_rates.append(ra)
            b_rates.append(rb)
            diffs.append(rb - ra)
            print(f"pair {k}: base {p.base_mb:g} {ra:.3f}/h  base {p.whatif_base_mb:g} {rb:.3f}/h  diff {rb-ra:+.3f}",
                  file=sys.stderr)
        n = len(diffs)
        m = statistics.fmean(diffs)
        sd = statistics.stdev(diffs) if n > 1 else float("nan")
        tq = {19: 2.093, 9: 2.262, 29: 2.045}.get(n - 1, 1.96)
        half = tq * sd / math.sqrt(n)
        res = {"base_mb": p.base_mb, "whatif_base_mb": p.whatif_base_mb, "pairs": n,
               "recorded_recycles_per_h": statistics.fmean(a_rates),
               "whatif_recycles_per_h": statistics.fmean(b_rates),
               "diff_recycles_per_h": m, "ci95": half, "sd": sd, "params": params_dict(p)}
        print(f"recycles/h: base {p.base_mb:g}: {res['recorded_recycles_per_h']:.3f}; "
              f"base {p.whatif_base_mb:g}: {res['whatif_recycles_per_h']:.3f}; "
              f"diff {m:+.3f} +- {half:.3f} (95%, {n} pairs)")
        if p.out:
            with open(p.out, "w") as fh:
                json.dump(res, fh, indent=2)
        return

    f = Fleet(p, p.base_mb, p.seed).run()
    summ = summarize(f, p.whole_mb)
    if p.out:
        write_csv(f, p.out, p.whole_mb)
        tj = p.out[:-4] if p.out.endswith(".csv") else p.out
        with open(tj + ".truth.json", "w") as fh:
            json.dump({"params": params_dict(p), "measured": summ}, fh, indent=2)
    print(json.dumps(summ, indent=2))


if __name__ == "__main__":
    main()
