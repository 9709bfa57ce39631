#!/usr/bin/env python3
"""The seeds' fleet under a constant 20 rps, written in SimPy the way a
Python user would: the peer fleetsim's speed is measured against.

Model (the same as fleetsim's `render-2x3.toml` with
`workload.profile=constant`, `policy.busy_deferral=false`,
`fleet.warm_start=false` and `client.keepalive_conns_per_worker=0`; see
compare.sh):

- 2 instances x 3 sync workers; Poisson arrivals at 20 rps, round-robin to
  instances; each instance keeps a FIFO of idle workers (a simpy.Store of
  worker objects, the SimPy idiom for a resource with identity) and every
  request is a process that waits for a worker (backlog 2048, queue
  timeout 30 s, both checked as fleetsim does).
- Lognormal service time with mean 120 ms and p99 900 ms (the
  parameterisation of src/traffic/service.rs).
- Memory (src/fleet/memory.rs): a forked worker starts at the master's
  360 MB; each request adds the worker's own lognormal leak velocity (mean
  0.044 MB, cv 1.3), a warm-up (62 MB spread over ~70 requests) and, with
  probability 0.0055, an exponential step (mean 19.5 MB). Instance usage =
  master + sum(worker RSS - 135 MB shared); over the 2048 MB cgroup the
  kernel kills the largest worker.
- Per-worker limits uniform in [460, 540) MB, whole MB (500 +- 40); a timer
  per worker samples RSS every 45 s from a random phase.
- The seeds' recycler: pressure = headroom < 350 MB; per-instance cooldown
  120 s (30 s under pressure); then a 120 s fleet lease with two exits,
  pressure and the 650 MB hard ceiling. A recycled worker drains (finishes
  its request), exits, and the master forks a replacement that boots in 2 s.

Left out, because they never fire at this load: the 30 s graceful-timeout
kill of a draining worker (P(service > 30 s) ~ 4e-8) and the client's
keep-alive resets and retries (off in fleetsim for the comparison).

    pip install -r benches/peer/requirements.txt
    python3 benches/peer/fleet_simpy.py --hours 4 --seed 1 [--json]
"""

import argparse
import json
import math
import random
import statistics
import time

import simpy

Z99 = 2.326347874040841  # z of the 99th percentile of the standard normal

# The scenario: fleetsim's render-2x3.toml, constant 20 rps, busy deferral off.
INSTANCES = 2
WORKERS_PER_INSTANCE = 3
RPS = 20.0
CONTAINER_MB = 2048.0
BOOT_RSS_MB = 360.0
SHARED_MB = 135.0
BOOT_S = 2.0
BACKLOG_REQUESTS = 2048
QUEUE_TIMEOUT_S = 30.0
SERVICE_MEAN_MS = 120.0
SERVICE_P99_MS = 900.0
LEAK_MEAN_MB = 0.044
LEAK_CV = 1.3
WARMUP_MB = 62.0
WARMUP_REQUESTS = 70.0
STEP_PROBABILITY = 0.0055
STEP_MEAN_MB = 19.5
BASE_LIMIT_MB = 500.0
JITTER_MB = 40.0
HARD_LIMIT_MB = 650.0
TICK_S = 45.0
COOLDOWN_S = 120.0
PRESSURE_COOLDOWN_S = 30.0
MIN_HEADROOM_MB = 350.0
LEASE_TTL_S = 120.0


def lognormal_from_mean_p99(mean, p99):
    """(mu, sigma) of the lognormal with this mean and 99th percentile."""
    d = math.log(p99 / mean)
    sigma = Z99 - math.sqrt(Z99 * Z99 - 2.0 * d)
    return math.log(mean) - sigma * sigma / 2.0, sigma


def lognormal_from_mean_cv(mean, cv):
    s2 = math.log(1.0 + cv * cv)
    return math.log(mean) - s2 / 2.0, math.sqrt(s2)


def derive():
    """The distributions' parameters, from the constants above."""
    global SERVICE_MU, SERVICE_SIGMA, LEAK_MU, LEAK_SIGMA, WARMUP_RATE
    SERVICE_MU, SERVICE_SIGMA = lognormal_from_mean_p99(SERVICE_MEAN_MS / 1e3, SERVICE_P99_MS / 1e3)
    LEAK_MU, LEAK_SIGMA = lognormal_from_mean_cv(LEAK_MEAN_MB, LEAK_CV)
    WARMUP_RATE = 1.0 - math.exp(-1.0 / WARMUP_REQUESTS)


derive()


class Worker:
    __slots__ = ("instance", "rss_mb", "limit_mb", "velocity", "warm_left_mb",
                 "requests", "draining", "dead", "busy_with")

    def __init__(self, instance, rng):
        self.instance = instance
        self.rss_mb = BOOT_RSS_MB
        self.limit_mb = float(math.floor(BASE_LIMIT_MB - JITTER_MB + rng.random() * 2 * JITTER_MB))
        self.velocity = rng.lognormvariate(LEAK_MU, LEAK_SIGMA)
        self.warm_left_mb = WARMUP_MB
        self.requests = 0
        self.draining = False
        self.dead = False
        self.busy_with = None  # the request process being served, if any


class Instance:
    def __init__(self, env, index):
        self.index = index
        self.idle = simpy.Store(env)  # idle workers, longest idle first
        self.private_mb = 0.0  # sum of (RSS - shared) over live workers
        self.workers = []
        self.last_recycle = None

    def headroom_mb(self):
        return CONTAINER_MB - (BOOT_RSS_MB + self.private_mb)


class Fleet:
    def __init__(self, env, seed):
        self.env = env
        self.rng = random.Random(seed)
        self.instances = [Instance(env, i) for i in range(INSTANCES)]
        self.rr_next = 0
        self.lease_expires = -math.inf
        self.arrived = self.completed = self.failed = 0
        self.recycles = self.pressure_recycles = 0
        self.lease_acquired = self.bypass_pressure = self.bypass_hard_ceiling = 0
        self.holds_cooldown = self.holds_lease = 0
        self.oom_kills = 0
        self.max_rss_mb = BOOT_RSS_MB
        self.requests_at_recycle = []
        self.latencies_s = []  # of completed requests, for p50 and p99
        self.started = 0  # requests that reached a worker
        self.wait_s = 0.0  # their summed time in the queue
        self.waited = 0  # those that queued at all
        for inst in self.instances:
            for _ in range(WORKERS_PER_INSTANCE):
                self.start_worker(self.new_worker(inst))
        env.process(self.arrivals())

    def new_worker(self, inst):
        w = Worker(inst, self.rng)
        inst.workers.append(w)
        inst.private_mb += w.rss_mb - SHARED_MB
        return w

    def start_worker(self, w):
        w.instance.idle.put(w)
        self.env.process(self.sampler(w))

    def arrivals(self):
        env, rng, instances = self.env, self.rng, self.instances
        while True:
            yield env.timeout(rng.expovariate(RPS))
            inst = instances[self.rr_next]
            self.rr_next = (self.rr_next + 1) % INSTANCES
            self.arrived += 1
            if len(inst.idle.get_queue) >= BACKLOG_REQUESTS:
                self.failed += 1
                continue
            env.process(self.request(inst, env.now))

    def request(self, inst, arrived):
        env = self.env
        w = yield inst.idle.get()
        if env.now - arrived >= QUEUE_TIMEOUT_S:
            self.failed += 1
            inst.idle.put(w)
            return
        wait = env.now - arrived
        self.started += 1
        self.wait_s += wait
        self.waited += wait > 0.0
        w.busy_with = env.active_process
        try:
            yield env.timeout(self.rng.lognormvariate(SERVICE_MU, SERVICE_SIGMA))
        except simpy.Interrupt:  # the worker was OOM-killed mid-request
            self.failed += 1
            return
        w.busy_with = None
        self.completed += 1
        self.latencies_s.append(env.now - arrived)
        w.requests += 1
        self.grow(w)
        if w.dead:  # it was the OOM victim
            return
        if w.draining:
            self.exit(w)
        else:
            inst.idle.put(w)

    def grow(self, w):
        rng = self.rng
        d = w.velocity
        if w.warm_left_mb > 0.0:
            warm = w.warm_left_mb * WARMUP_RATE
            w.warm_left_mb -= warm
            d += warm
        if rng.random() < STEP_PROBABILITY:
            d += rng.expovariate(1.0 / STEP_MEAN_MB)
        w.rss_mb += d
        inst = w.instance
        inst.private_mb += d
        if w.rss_mb > self.max_rss_mb:
            self.max_rss_mb = w.rss_mb
        while BOOT_RSS_MB + inst.private_mb > CONTAINER_MB:
            self.oom_kill(inst)

    def oom_kill(self, inst):
        victim = max(inst.workers, key=lambda v: v.rss_mb)
        self.oom_kills += 1
        if victim.busy_with is not None:
            victim.busy_with.interrupt()
        elif victim in inst.idle.items:
            inst.idle.items.remove(victim)
        self.exit(victim)

    def sampler(self, w):
        env = self.env
        yield env.timeout(self.rng.random() * TICK_S)
        while not (w.draining or w.dead):
            if w.rss_mb >= w.limit_mb:
                self.ask(w)
            yield env.timeout(TICK_S)

    def ask(self, w):
        """The seeds' recycler: cooldown, then the lease and its exits."""
        now, inst = self.env.now, w.instance
        pressure = inst.headroom_mb() < MIN_HEADROOM_MB
        if inst.last_recycle is not None:
            cooldown = PRESSURE_COOLDOWN_S if pressure else COOLDOWN_S
            if now - inst.last_recycle < cooldown:
                self.holds_cooldown += 1
                return
        if now >= self.lease_expires:
            self.lease_expires = now + LEASE_TTL_S
            self.lease_acquired += 1
        elif pressure:
            self.bypass_pressure += 1
        elif w.rss_mb >= HARD_LIMIT_MB:
            self.bypass_hard_ceiling += 1
        else:
            self.holds_lease += 1
            return
        inst.last_recycle = now
        self.recycles += 1
        self.pressure_recycles += pressure
        self.requests_at_recycle.append(w.requests)
        w.draining = True
        if w.busy_with is None:  # idle: it exits now
            inst.idle.items.remove(w)
            self.exit(w)

    def exit(self, w):
        """The worker exits; the master forks a replacement that boots."""
        w.dead = True
        inst = w.instance
        inst.workers.remove(w)
        inst.private_mb -= w.rss_mb - SHARED_MB
        self.env.process(self.boot(self.new_worker(inst)))

    def boot(self, w):
        yield self.env.timeout(BOOT_S)
        if not w.dead:
            self.start_worker(w)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--hours", type=float, default=4.0, help="simulated hours")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--json", action="store_true", help="one JSON object on stdout")
    ap.add_argument("--set", action="append", default=[], metavar="NAME=VALUE",
                    help="override a constant above, e.g. --set CONTAINER_MB=1900")
    args = ap.parse_args()
    for item in args.set:
        name, _, value = item.partition("=")
        if not name.isupper() or name not in globals():
            ap.error(f"--set {item}: no constant {name}")
        globals()[name] = type(globals()[name])(float(value))
    derive()

    env = simpy.Environment()
    t0 = time.perf_counter()
    fleet = Fleet(env, args.seed)
    env.run(until=args.hours * 3600.0)
    wall_s = time.perf_counter() - t0
    lat = sorted(fleet.latencies_s)
    started = max(fleet.started, 1)

    out = {
        "simulator": f"simpy {simpy.__version__}",
        "hours": args.hours,
        "seed": args.seed,
        "requests_total": fleet.arrived,
        "requests_completed": fleet.completed,
        "requests_failed": fleet.failed,
        "recycles": fleet.recycles,
        "recycles_per_hour": fleet.recycles / args.hours,
        "pressure_recycles": fleet.pressure_recycles,
        "lease_acquired": fleet.lease_acquired,
        "lease_bypass_pressure": fleet.bypass_pressure,
        "lease_bypass_hard_ceiling": fleet.bypass_hard_ceiling,
        "holds_cooldown": fleet.holds_cooldown,
        "holds_lease_held": fleet.holds_lease,
        "oom_kills": fleet.oom_kills,
        "requests_per_worker_median": (statistics.median(fleet.requests_at_recycle)
                                       if fleet.requests_at_recycle else None),
        "max_rss_mb": fleet.max_rss_mb,
        "latency_ms_p50": 1e3 * lat[len(lat) // 2] if lat else None,
        "latency_ms_p99": 1e3 * lat[int(len(lat) * 0.99)] if lat else None,
        "wait_ms_mean": 1e3 * fleet.wait_s / started,
        "wait_fraction": fleet.waited / started,
        "wall_s": wall_s,
        "requests_per_s": fleet.arrived / wall_s,
    }
    if args.json:
        print(json.dumps(out))
    else:
        for k, v in out.items():
            print(f"{k:<28} {v:.6g}" if isinstance(v, float) else f"{k:<28} {v}")


if __name__ == "__main__":
    main()
