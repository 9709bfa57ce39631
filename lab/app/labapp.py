"""The lab's app: FastAPI under gunicorn --preload + UvicornWorker.

Imported ONCE in the master (--preload): the ballast below is allocated and
touched there, so every forked worker starts with it as shared
copy-on-write pages (the real preload baseline). In each worker, at
lifespan start-up:

- the worker claims a stable slot of its instance (flock on
  /dev/shm/<prefix>-<instance>-slot<k>.lock, held for its life; the kernel
  releases it when the process exits) and bumps the slot's generation;
- it draws, from a RNG seeded by (seed, instance, slot, generation), its
  jittered limit (floor(base - jitter + u * 2 jitter), fleetsim's formula)
  and its leak velocity (lognormal by mean and cv, fleetsim's
  parameterisation), so the same seed gives the same draws;
- it starts the RSS sampler: every tick_s it reads /proc/self/statm and,
  when rss >= limit, asks the recycler (recycler.py, the seeds' core).

Each request allocates velocity MB and keeps it (a leak), then sleeps a
service time (lognormal by mean and p99, or exponential). A recycle is the
worker sending SIGTERM to itself: uvicorn's Server handles it
(capture_signals -> handle_exit -> should_exit), stops accepting, closes
idle keep-alive connections, finishes in-flight requests and returns;
UvicornWorker.run returns, the process exits, and gunicorn's arbiter reaps
it and forks a replacement. (Setting gunicorn's `self.alive = False` does
nothing under UvicornWorker: uvicorn never reads it.)
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
import fcntl
import json
import math
import os
import random
import signal
import sys
import time

from fastapi import FastAPI
import redis

sys.path.insert(0, os.path.dirname(__file__))
from recycler import MIB, Recycler, rss_mb  # noqa: E402

CFG = json.load(open(os.environ["LAB_CONFIG"]))
INSTANCE = os.environ["LAB_INSTANCE"]
FLEET, POLICY, LEAK, WORKLOAD, LAB = (CFG["fleet"], CFG["policy"], CFG["fleet"]["leak"],
                                      CFG["workload"], CFG["lab"])
SHM = CFG["shm_prefix"]          # /dev/shm/fleetsim-lab-<run id>
TELEMETRY = CFG["telemetry_path"]

# -- the preload baseline, in the master ----------------------------------
BALLAST = bytearray(b"\xa5") * int(float(LAB["ballast_mb"]) * MIB)  # touched pages


def lognormal_mu_sigma(mean: float, cv: float) -> tuple[float, float]:
    """fleetsim's VelocityDist::lognormal: the lognormal with this mean and cv."""
    s2 = math.log(1.0 + cv * cv)
    return math.log(mean) - s2 / 2.0, math.sqrt(s2)


Z99 = 2.3263478740408408


def service_sampler(rng: random.Random):
    """Service time in seconds, fleetsim's parameterisation ([workload])."""
    mean = float(WORKLOAD["service_mean_ms"]) / 1000.0
    kind = WORKLOAD["service"]
    if kind == "constant":
        return lambda: mean
    if kind == "exponential":
        return lambda: rng.expovariate(1.0 / mean)
    if kind == "lognormal":
        # ServiceDist::lognormal_from_mean_p99: the smaller root.
        p99 = float(WORKLOAD["service_p99_ms"]) / 1000.0
        d = math.log(p99 / mean)
        disc = Z99 * Z99 - 2.0 * d
        if d <= 0 or disc < 0:
            raise SystemExit(f"lab config: no lognormal has mean {mean}s and p99 {p99}s")
        sigma = Z99 - math.sqrt(disc)
        mu = math.log(mean) - sigma * sigma / 2.0
        return lambda: rng.lognormvariate(mu, sigma)
    raise SystemExit(f"lab config: workload.service `{kind}` is not constant, exponential or lognormal")


class Worker:
    """This process's state: slot, draws, leak, counters."""

    def __init__(self):
        self.pid = os.getpid()
        self.slot, self.slot_fd = self._claim_slot()
        self.worker = f"w{self.slot}"
        self.generation = self._bump_generation()
        seed = CFG["seed"]
        rng = random.Random(f"{seed}:{INSTANCE}:{self.slot}:{self.generation}")
        base, jit = float(POLICY["base_limit_mb"]), float(POLICY["jitter_mb"])
        self.limit_mb = max(math.floor(base - jit + rng.random() * 2.0 * jit), base - jit)
        dist = LEAK["distribution"]
        mean, cv = float(LEAK["mean_mb_per_request"]), float(LEAK.get("cv", 0.0))
        if dist == "constant" or cv <= 0:
            self.velocity_mb = mean
        elif dist == "lognormal":
            self.velocity_mb = rng.lognormvariate(*lognormal_mu_sigma(mean, cv))
        elif dist == "exponential":
            self.velocity_mb = rng.expovariate(1.0 / mean)
        else:
            raise SystemExit(f"lab config: fleet.leak.distribution `{dist}` is not supported")
        self.service = service_sampler(random.Random(f"{seed}:{INSTANCE}:{self.slot}:"
                                                     f"{self.generation}:service"))
        self.leak: list[bytearray] = []
        self.leak_carry = 0.0       # fractional bytes carried to the next request
        self.requests = 0
        self.arrivals = collections.deque()
        self.spawned = time.time()
        self.wants_since: float | None = None
        self.exiting = False
        self.stats_fd = os.open(f"{SHM}-{INSTANCE}-slot{self.slot}.stats",
                                os.O_RDWR | os.O_CREAT, 0o600)
        self.write_stats()
        self.redis = redis.Redis(host="127.0.0.1", port=int(CFG["redis_port"]))
        self.recycler = Recycler(POLICY, FLEET, SHM, INSTANCE, self.redis, CFG["run_id"])

    def _claim_slot(self):
        n = int(FLEET["workers_per_instance"])
        deadline = time.time() + 10.0
        while True:
            for k in range(n):
                fd = os.open(f"{SHM}-{INSTANCE}-slot{k}.lock", os.O_RDWR | os.O_CREAT, 0o600)
                try:
                    fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                    return k, fd
                except BlockingIOError:
                    os.close(fd)
            if time.time() > deadline:
                raise SystemExit(f"lab: instance {INSTANCE}: no free worker slot of {n}")
            time.sleep(0.02)  # a predecessor is still exiting

    def _bump_generation(self) -> int:
        fd = self.slot_fd
        raw = os.pread(fd, 32, 0).strip()
        g = int(raw) + 1 if raw else 0
        os.ftruncate(fd, 0)
        os.pwrite(fd, f"{g}\n".encode(), 0)
        return g

    def window_count(self, now: float) -> int:
        w = float(POLICY["busy_window_s"])
        while self.arrivals and self.arrivals[0] < now - w:
            self.arrivals.popleft()
        return len(self.arrivals)

    def write_stats(self):
        """pid requests arrivals-in-busy-window ts: read by the recorder
        (requests column of rss.csv) and by siblings (instance rps)."""
        now = time.time()
        line = f"{self.pid} {self.requests} {self.window_count(now)} {now:.3f}".ljust(63) + "\n"
        os.pwrite(self.stats_fd, line.encode(), 0)

    def emit(self, event: str, rss: float, d=None):
        row = {
            "ts": round(time.time(), 6), "event": event, "instance": INSTANCE,
            "worker": self.worker, "pid": self.pid, "generation": self.generation,
            "rss_mb": round(rss, 1), "limit_mb": self.limit_mb,
            "base_limit_mb": float(POLICY["base_limit_mb"]),
            "hard_limit_mb": float(POLICY["hard_limit_mb"]),
            "requests": self.requests, "trigger": "rss_limit",
            "velocity_mb_per_request": round(self.velocity_mb, 5),
        }
        if d is not None:
            row.update({"pressure": d.pressure, "headroom_mb": round(d.headroom_mb, 1),
                        "lease": d.lease, "branch": d.branch,
                        "last_recycle_age_s": (None if d.last_recycle_age_s is None
                                               else round(d.last_recycle_age_s, 3))})
        fd = os.open(TELEMETRY, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
        try:
            os.write(fd, (json.dumps(row) + "\n").encode())  # one write: one line
        finally:
            os.close(fd)

    async def sampler(self):
        """The RSS sample on a timer: the first after a random phase (as
        fleetsim's sampler), then every tick_s."""
        tick = float(POLICY["tick_s"])
        loop = asyncio.get_running_loop()
        phase = random.Random(f"{CFG['seed']}:{INSTANCE}:{self.slot}:{self.generation}:phase")
        await asyncio.sleep(phase.random() * tick)
        while not self.exiting:
            rss = rss_mb()
            self.write_stats()
            if rss >= self.limit_mb:
                now = time.time()
                if self.wants_since is None:
                    self.wants_since = now
                d = await loop.run_in_executor(
                    None, self.recycler.decide, rss, now - self.wants_since,
                    f"{INSTANCE}/{self.worker}/{self.pid}")
                if d.recycle:
                    self.emit("worker_recycled", rss, d)
                    self.exiting = True
                    os.kill(self.pid, signal.SIGTERM)  # uvicorn's graceful shutdown
                    return
                self.emit("recycle_held", rss, d)
            await asyncio.sleep(tick)


W: Worker | None = None


@contextlib.asynccontextmanager
async def lifespan(app):
    global W
    W = Worker()
    task = asyncio.create_task(W.sampler())
    yield
    task.cancel()


app = FastAPI(lifespan=lifespan)


@app.get("/")
async def serve():
    w = W
    now = time.time()
    w.arrivals.append(now)
    # The leak: allocate and keep velocity MB, every byte touched.
    nbytes = w.velocity_mb * MIB + w.leak_carry
    whole = int(nbytes)
    w.leak_carry = nbytes - whole
    if whole:
        w.leak.append(bytearray(b"\x5a") * whole)
    await asyncio.sleep(w.service())
    w.requests += 1
    w.write_stats()
    return {"instance": INSTANCE, "worker": w.worker, "pid": w.pid, "requests": w.requests}
