#!/usr/bin/env python3
"""Independent SimPy model of the seeds' fleet (gunicorn --preload, 2 x 3 UvicornWorkers),
written from /work/shared/DOMAIN.md and /work/shared/seeds/ only.

Modelling choices (an SRE's real system; see REPORT.md beside this file):
 * Traffic: Poisson arrivals at a constant fleet rate `rps`. The SSR frontend runs 2 node
   processes (each request from one at random); each holds an undici Pool to the API:
   a request goes on the FIRST idle open connection of its pool (undici Pool order),
   else a new connection is opened. A new TCP connection lands on an instance uniformly at
   random (L4/DNS balancing per connection) and is accepted by a uniformly random
   accepting worker of that instance (workers race on the shared socket).
   The server closes a keep-alive connection after 2 s idle (gunicorn --keep-alive 2,
   which UvicornWorker passes to uvicorn). So requests are sticky to a worker in runs.
 * Workers are async (UvicornWorker): no per-worker queue; in-flight requests overlap.
   Service time lognormal, mean 120 ms, p99 ~900 ms.
 * Memory: a forked worker starts at the master's RSS (boot_rss, +- N(0, 2 MB) per fork:
   the master's own RSS wobbles), then a warm-up of W MB approached exponentially
   (W*(1-exp(-n/k)): lazy imports/caches on the first requests), then a per-life leak
   velocity v ~ lognormal(mean, cv) and each completed request adds v*Exp(1) MB
   (allocator arenas: lumpy growth). Memory grows at request completion.
 * Limits: per-worker limit = base - J + randint(0, 2J-1), whole MB (seeds: 500+-40 -> 460..539).
   Hard ceiling = base + 150.
 * Sampling: a thread in each worker started right after fork: `while True: sleep(45); check()`;
   each check costs ~10 ms, so the period is 45.01 s and its phase is the worker's fork time.
   Compare float RSS (MB) >= limit; the log prints int(rss) (truncated, whole MB).
 * Gates (the seeds' decision core): per-instance cooldown 120 s (30 s under pressure,
   pressure = cgroup headroom < 350 MB, container 2048 MB, usage = master + sum(rss - shared),
   shared = 0.375*boot), busy deferral (instance rps over last 60 s > 2.0, defer_max 300 s,
   skipped at/over hard ceiling), fleet lease 120 s TTL (Redis SET NX EX, never released early),
   bypassed under pressure or rss >= hard ceiling. A held worker retries at its next tick.
 * Recycle: the worker stops accepting, uvicorn closes its idle keep-alive connections,
   in-flight requests finish (they grow memory and count), then it exits. The arbiter reaps it
   and forks a replacement: reap delay U(0, 1) s + boot U(1, 3) s.
 * The recycle row is written by the worker_exit hook: ts = exit time, rss_mb = int(the
   triggering sample), limit_mb = its limit, requests = requests served in the life, at exit
   (including those finished while draining).
 * OOM: if instance usage exceeds the container, the kernel kills the largest worker
   (no recycle row; counted separately).
"""
import argparse, json, math, random, sys
import simpy

TICK_S = 45.0
TICK_OVERHEAD_S = 0.01
COOLDOWN_S = 120.0
PRESSURE_COOLDOWN_S = 30.0
MIN_HEADROOM_MB = 350.0
CONTAINER_MB = 2048.0
LEASE_TTL_S = 120.0
BUSY_RPS = 2.0          # per instance
DEFER_MAX_S = 300.0
BUSY_WINDOW_S = 60.0
KEEPALIVE_S = 2.0
FRONTENDS = 2
INSTANCES = 2
WORKERS = 3
SVC_SIGMA = 1.151
SVC_MU = math.log(0.120) - SVC_SIGMA ** 2 / 2


class Worker:
    __slots__ = ("inst", "slot", "rss", "limit", "v", "served", "inflight", "state",
                 "over_since", "trigger_rss", "drain_ev", "life", "boot_rss", "wu", "wk")


class Instance:
    __slots__ = ("idx", "workers", "last_recycle", "recent", "pending")


class Fleet:
    def __init__(self, p, seed, window_start, window_end, base_override=None):
        self.p = p
        self.env = simpy.Environment()
        # independent streams (common random numbers across paired runs)
        self.r_arr = random.Random(seed * 7 + 1)
        self.r_svc = random.Random(seed * 7 + 2)
        self.r_mem = random.Random(seed * 7 + 3)
        self.r_lim = random.Random(seed * 7 + 4)
        self.r_route = random.Random(seed * 7 + 5)
        self.r_boot = random.Random(seed * 7 + 6)
        self.base = p["base_limit_mb"] if base_override is None else base_override
        self.hard = p["base_limit_mb"] + 150.0  # the ceiling is its own config value
        self.J = int(p["jitter_mb"])
        self.shared = 0.375 * p["boot_rss_mb"]
        self.lease_until = -1.0
        self.w0, self.w1 = window_start, window_end
        self.rows = []
        self.oom = 0
        self.recycles_all = []  # ts of every recycle (for what-if rate, incl. burn-in)
        self.counts = {"held_cooldown": 0, "held_busy": 0, "held_lease": 0,
                       "bypass_pressure": 0, "bypass_ceiling": 0, "pressure_recycles": 0,
                       "requests": 0}
        sig2 = math.log(1 + p["leak_cv"] ** 2)
        self.v_sig = math.sqrt(sig2)
        self.v_mu = math.log(p["leak_mean_mb_per_request"]) - sig2 / 2
        self.pools = [[] for _ in range(FRONTENDS)]  # each conn: [worker, busy, idle_since]
        self.insts = []
        for i in range(INSTANCES):
            ins = Instance()
            ins.idx = i
            ins.workers = [None] * WORKERS
            ins.last_recycle = None
            ins.recent = []
            ins.pending = []
            self.insts.append(ins)
        for ins in self.insts:
            for s in range(WORKERS):
                self.spawn(ins, s, 0.0)
        self.env.process(self.arrivals())

    # ---------------------------------------------------------------- workers
    def spawn(self, ins, slot, delay):
        w = Worker()
        w.inst, w.slot = ins, slot
        w.boot_rss = self.p["boot_rss_mb"] + self.r_mem.gauss(0, 2.0)
        w.rss = w.boot_rss
        w.wu = self.p["warmup_mb"]
        w.wk = self.p["warmup_requests"]
        w.limit = self.base - self.J + self.r_lim.randint(0, 2 * self.J - 1)
        w.v = math.exp(self.r_mem.gauss(self.v_mu, self.v_sig))
        w.served = 0
        w.inflight = 0
        w.state = "booting"
        w.over_since = None
        w.trigger_rss = None
        w.drain_ev = None
        ins.workers[slot] = w
        self.env.process(self.life(w, delay))

    def life(self, w, delay):
        env = self.env
        # reap delay + boot; the sampler thread starts at fork (after the reap)
        reap = delay
        if reap > 0:
            yield env.timeout(reap)
        boot = self.r_boot.uniform(1.0, 3.0)
        fork_t = env.now
        self.env.process(self.ready_after(w, boot))
        next_tick = fork_t + TICK_S + TICK_OVERHEAD_S
        while True:
            yield env.timeout(next_tick - env.now)
            next_tick += TICK_S + TICK_OVERHEAD_S
            if w.state == "dead":
                return
            if w.state != "serving":
                continue
            if self.check(w):
                break
        # drain
        w.state = "draining"
        ins = w.inst
        for pool in self.pools:  # idle keep-alive connections closed by uvicorn
            pool[:] = [c for c in pool if not (c[0] is w and not c[1])]
        if w.inflight > 0:
            w.drain_ev = env.event()
            yield w.drain_ev
        if w.state == "dead":
            return  # OOM-killed while draining
        self.exit_worker(w, recycle=True)

    def ready_after(self, w, boot):
        yield self.env.timeout(boot)
        if w.state == "booting":
            w.state = "serving"
            ins = w.inst
            pend, ins.pending = ins.pending, []
            for fe in pend:
                self.route_on_new_conn(fe, ins)

    def exit_worker(self, w, recycle):
        now = self.env.now
        w.state = "dead"
        for pool in self.pools:
            pool[:] = [c for c in pool if c[0] is not w]
        if recycle:
            self.recycles_all.append(now)
            if self.w0 <= now < self.w1:
                self.rows.append((round(now - self.w0, 3), w.inst.idx, w.slot,
                                  w.trigger_rss, int(w.limit), w.served))
        self.spawn(w.inst, w.slot, self.r_boot.uniform(0.0, 1.0))

    def usage(self, ins):
        u = self.p["boot_rss_mb"]
        for w in ins.workers:
            if w is not None and w.state != "dead":
                u += w.rss - self.shared
        return u

    def check(self, w):
        now = self.env.now
        rss = w.rss
        if rss < w.limit:
            w.over_since = None
            return False
        if w.over_since is None:
            w.over_since = now
        ins = w.inst
        headroom = CONTAINER_MB - self.usage(ins)
        pressure = headroom < MIN_HEADROOM_MB
        cd = PRESSURE_COOLDOWN_S if pressure else COOLDOWN_S
        if ins.last_recycle is not None and now - ins.last_recycle < cd:
            self.counts["held_cooldown"] += 1
            return False
        rec = ins.recent
        while rec and rec[0] < now - BUSY_WINDOW_S:
            rec.pop(0)
        irps = len(rec) / BUSY_WINDOW_S
        if (not pressure) and irps > BUSY_RPS and now - w.over_since < DEFER_MAX_S and rss < self.hard:
            self.counts["held_busy"] += 1
            return False
        if now >= self.lease_until:
            self.lease_until = now + LEASE_TTL_S
        elif pressure:
            self.counts["bypass_pressure"] += 1
        elif rss >= self.hard:
            self.counts["bypass_ceiling"] += 1
        else:
            self.counts["held_lease"] += 1
            return False
        if pressure:
            self.counts["pressure_recycles"] += 1
        ins.last_recycle = now
        w.trigger_rss = rss
        return True

    # ---------------------------------------------------------------- traffic
    def arrivals(self):
        env = self.env
        rate = self.p["rps"]
        ra = self.r_arr
        while True:
            yield env.timeout(ra.expovariate(rate))
            self.counts["requests"] += 1
            fe = ra.randrange(FRONTENDS)
            self.dispatch(fe)

    def dispatch(self, fe):
        now = self.env.now
        pool = self.pools[fe]
        keep = []
        chosen = None
        for c in pool:
            w = c[0]
            if w.state != "serving":
                if c[1]:
                    keep.append(c)  # in flight on a draining worker: closes after the response
                continue
            if not c[1] and now - c[2] > KEEPALIVE_S:
                continue  # closed by the server while idle
            keep.append(c)
            if chosen is None and not c[1]:
                chosen = c
        pool[:] = keep
        if chosen is not None:
            self.start(chosen, chosen[0])
            return
        ins = self.insts[self.r_route.randrange(INSTANCES)]
        self.route_on_new_conn(fe, ins)

    def route_on_new_conn(self, fe, ins):
        acc = [w for w in ins.workers if w is not None and w.state == "serving"]
        if not acc:
            ins.pending.append(fe)  # waits in the listen backlog
            return
        w = acc[self.r_route.randrange(len(acc))]
        c = [w, False, self.env.now]
        self.pools[fe].append(c)
        self.start(c, w)

    def start(self, c, w):
        c[1] = True
        w.inflight += 1
        w.inst.recent.append(self.env.now)
        st = math.exp(self.r_svc.gauss(SVC_MU, SVC_SIGMA))
        ev = self.env.timeout(st)
        ev.callbacks.append(lambda _e, c=c, w=w: self.finish(c, w))

    def finish(self, c, w):
        now = self.env.now
        c[1] = False
        c[2] = now
        w.inflight -= 1
        w.served += 1
        n = w.served
        g = w.v * self.r_mem.expovariate(1.0)
        if w.wu > 0:
            g += w.wu * (math.exp(-(n - 1) / w.wk) - math.exp(-n / w.wk))
        w.rss += g
        if w.state == "draining":
            for pool in self.pools:
                pool[:] = [x for x in pool if x is not c]
            if w.inflight == 0 and w.drain_ev is not None and not w.drain_ev.triggered:
                w.drain_ev.succeed()
        elif w.state == "dead":
            pass
        # OOM check (cgroup)
        ins = w.inst
        if self.usage(ins) > CONTAINER_MB:
            live = [x for x in ins.workers if x is not None and x.state != "dead"]
            big = max(live, key=lambda x: x.rss)
            self.oom += 1
            big.state = "dead"
            for pool in self.pools:
                pool[:] = [x for x in pool if x[0] is not big]
            if big.drain_ev is not None and not big.drain_ev.triggered:
                big.drain_ev.succeed()  # its life process then sees dead; guard below
            self.spawn(ins, big.slot, self.r_boot.uniform(0.0, 1.0))

    def run(self, until):
        self.env.run(until=until)


def draw_params(rng):
    return {
        "rps": round(rng.uniform(0.8, 3.0), 4),
        "boot_rss_mb": round(rng.uniform(300, 420), 1),
        "base_limit_mb": float(rng.randint(500, 600)),
        "jitter_mb": float(rng.randint(20, 60)),
        "leak_mean_mb_per_request": round(rng.uniform(0.08, 0.3), 4),
        "leak_cv": round(rng.uniform(0.3, 0.8), 3),
        "warmup_mb": round(rng.uniform(5, 25), 1),
        "warmup_requests": round(rng.uniform(20, 80), 1),
    }


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("cmd", choices=["gen", "whatif"])
    ap.add_argument("--fleet", required=True)
    ap.add_argument("--params")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--burn-h", type=float, default=24.0)
    ap.add_argument("--hours", type=float, default=24.0)
    ap.add_argument("--delta", type=float, default=-40.0)
    ap.add_argument("--out")
    ap.add_argument("--keepalive", type=float, default=None,
                    help="diagnosis only: server keep-alive idle timeout (0 = a new connection, so a random worker, per request)")
    ap.add_argument("--suffix", default="")
    ap.add_argument("--also-round", action="store_true",
                    help="diagnosis only: also write FLEET-round.csv, rss_mb rounded to nearest instead of truncated")
    a = ap.parse_args()
    global KEEPALIVE_S
    if a.keepalive is not None:
        KEEPALIVE_S = a.keepalive
    p = json.load(open(a.params))
    if a.cmd == "gen":
        w0 = a.burn_h * 3600
        w1 = w0 + a.hours * 3600
        f = Fleet(p, a.seed, w0, w1)
        f.run(w1)
        variants = [("", lambda x: int(x))]
        if a.also_round:
            variants.append(("-round", lambda x: int(round(x))))
        for vs, fmt in variants:
            with open(f"{a.out}/{a.fleet}{a.suffix}{vs}.csv", "w") as fh:
                fh.write("ts,instance,worker,rss_mb,limit_mb,requests\n")
                for r in f.rows:
                    fh.write(f"{r[0]:.3f},inst-{'AB'[r[1]]},w{r[2]},{fmt(r[3])},{r[4]},{r[5]}\n")
            with open(f"{a.out}/{a.fleet}{a.suffix}{vs}-noid.csv", "w") as fh:
                fh.write("ts,rss_mb,limit_mb,requests\n")
                for r in f.rows:
                    fh.write(f"{r[0]:.3f},{fmt(r[3])},{r[4]},{r[5]}\n")
        stats = dict(f.counts, oom=f.oom, rows=len(f.rows),
                     recycles_per_h=len(f.rows) / a.hours)
        print(json.dumps(stats))
        return stats
    else:
        # paired what-if: same seed, base vs base+delta; daily batches after burn-in
        days = int(a.hours // 24)
        res = {}
        for arm, base in (("base", None), ("whatif", p["base_limit_mb"] + a.delta)):
            w0 = a.burn_h * 3600
            f = Fleet(p, a.seed, w0, w0 + days * 86400, base_override=base)
            f.run(w0 + days * 86400)
            per_day = [0] * days
            for t in f.recycles_all:
                if t >= w0:
                    d = int((t - w0) // 86400)
                    if d < days:
                        per_day[d] += 1
            res[arm] = {"per_day": per_day, "counts": f.counts, "oom": f.oom}
        print(json.dumps(res))


if __name__ == "__main__":
    main()
