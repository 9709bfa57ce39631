"""The seeds' recycler, branch for branch (shared/DOMAIN.md "The recycler",
seed 000's decision core), running inside each gunicorn worker.

    pressure = headroom_mb < min_headroom_mb
    effective_cooldown = pressure_cooldown_s if pressure else cooldown_s
    if last_recycle_age_s < effective_cooldown: hold            # hold on cooldown
    if not pressure and rps > busy_rps and over_limit_age_s < defer_max_s
       and rss < hard_limit_mb: defer                            # defer busy
    lease = SET lease NX PX ttl                                  # lease acquired
    if not lease: allow only if pressure                         # bypass on pressure
                  or rss >= hard_limit_mb                        # bypass on hard ceiling
    recycle

plus the two policy options the comparison needs, with fleetsim's semantics
(src/policy/gate.rs, src/coord/bucket.rs, src/sim/recycle.rs):

- `escalate_on_ceiling`: a worker at or over the hard ceiling gets the
  pressure cooldown (hold label `cooldown_ceiling`).
- `[policy.token_bucket]`: a fleet bucket of `burst` tokens refilled at
  `rate_per_hour`, checked before the lease with the same two exits; a token
  is spent only when the bucket's gate was open and the worker recycles; the
  bucket starts full. Bucket and lease are decided in one Redis Lua script so
  the fleet gates are atomic, as fleetsim's are.

The labels are fleetsim's (`branch` column, `lease` column), so a lab
recording reads like a fleetsim `events.csv`.
"""

from __future__ import annotations

import fcntl
import os
import time
from dataclasses import dataclass

MIB = 1024 * 1024
PAGE = os.sysconf("SC_PAGE_SIZE")


def rss_mb(pid: int | str = "self") -> float:
    """Resident set size from /proc/PID/statm (shared pages included), MiB."""
    with open(f"/proc/{pid}/statm") as f:
        return int(f.read().split()[1]) * PAGE / MIB


def pss_mb(pid: int | str) -> float | None:
    """Proportional set size from /proc/PID/smaps_rollup, MiB; None if gone."""
    try:
        with open(f"/proc/{pid}/smaps_rollup") as f:
            for line in f:
                if line.startswith("Pss:"):
                    return int(line.split()[1]) / 1024.0
    except (FileNotFoundError, ProcessLookupError, PermissionError):
        return None
    return None


# The fleet gates in one script: token bucket (if enabled) then lease, each
# with the pressure and hard-ceiling exits, then spend what was granted.
# KEYS: bucket hash, lease key. ARGV: pressure, ceiling, bucket_enabled,
# rate_per_s, burst, lease_enabled, ttl_ms, holder, bucket exits (p, c),
# lease exits (p, c). Returns {verdict, bucket_pass, lease_pass}.
FLEET_GATES_LUA = r"""
local pressure = ARGV[1] == '1'
local ceiling = ARGV[2] == '1'
local bucket_on = ARGV[3] == '1'
local rate = tonumber(ARGV[4])
local burst = tonumber(ARGV[5])
local lease_on = ARGV[6] == '1'
local ttl_ms = tonumber(ARGV[7])
local holder = ARGV[8]
local b_exit_p, b_exit_c = ARGV[9] == '1', ARGV[10] == '1'
local l_exit_p, l_exit_c = ARGV[11] == '1', ARGV[12] == '1'
local t = redis.call('TIME')
local now = tonumber(t[1]) + tonumber(t[2]) / 1e6
local function pass_or_hold(open, exit_p, exit_c)
  if open then return 'open' end
  if exit_p and pressure then return 'exit_pressure' end
  if exit_c and ceiling then return 'exit_hard_ceiling' end
  return nil
end
local bucket_pass, tokens = 'none', 0
if bucket_on then
  local s = redis.call('HMGET', KEYS[1], 'tokens', 'updated')
  tokens = tonumber(s[1]) or burst           -- a full bucket at the start
  local updated = tonumber(s[2]) or now
  if now > updated then tokens = math.min(burst, tokens + (now - updated) * rate) end
  redis.call('HSET', KEYS[1], 'tokens', tostring(tokens), 'updated', tostring(math.max(now, updated)))
  bucket_pass = pass_or_hold(tokens >= 1.0, b_exit_p, b_exit_c)
  if not bucket_pass then return {'hold', 'bucket_empty', 'none'} end
end
local lease_pass = 'none'
if lease_on then
  local free = redis.call('EXISTS', KEYS[2]) == 0
  lease_pass = pass_or_hold(free, l_exit_p, l_exit_c)
  if not lease_pass then return {'hold', bucket_pass, 'held'} end
  if lease_pass == 'open' then
    redis.call('SET', KEYS[2], holder, 'NX', 'PX', ttl_ms)
  end
end
if bucket_pass == 'open' then
  redis.call('HSET', KEYS[1], 'tokens', tostring(tokens - 1.0))
end
return {'recycle', bucket_pass, lease_pass}
"""


@dataclass
class Decision:
    recycle: bool
    branch: str          # fleetsim's `branch` label: the hold, or the passes
    lease: str           # fleetsim's `lease` label
    pressure: bool
    headroom_mb: float
    last_recycle_age_s: float | None


_BUCKET_LABEL = {"open": "bucket_token", "exit_pressure": "bucket_bypass_pressure",
                 "exit_hard_ceiling": "bucket_bypass_hard_ceiling"}
_LEASE_BRANCH = {"open": "lease_acquired", "exit_pressure": "bypass_pressure",
                 "exit_hard_ceiling": "bypass_hard_ceiling"}
_LEASE_LABEL = {"open": "acquired", "exit_pressure": "bypassed_pressure",
                "exit_hard_ceiling": "bypassed_hard_ceiling", "none": "none",
                "held": "held"}


class Recycler:
    """One worker's recycler: the policy, the instance's cooldown stamp (a
    file under /dev/shm shared by the instance's workers, guarded by flock),
    the instance's memory headroom, and the fleet gates in Redis."""

    def __init__(self, policy: dict, fleet: dict, shm_prefix: str, instance: str,
                 redis_client, run_id: str):
        self.p = policy
        self.container_mb = float(fleet["container_mb"])
        self.instance = instance
        self.stamp_path = f"{shm_prefix}-{instance}-cooldown"
        self.shm_prefix = shm_prefix
        self.redis = redis_client
        self.lease_key = f"fleetsim-lab:{run_id}:lease"
        self.bucket_key = f"fleetsim-lab:{run_id}:bucket"
        self._fleet_gates = redis_client.register_script(FLEET_GATES_LUA)

    # -- instance memory ---------------------------------------------------
    def instance_usage_mb(self) -> float:
        """The instance's memory as a cgroup would count it: the sum of PSS
        (shared pages split between their sharers, so counted once overall)
        of the master and every live worker named in the slot files."""
        pids = {os.getppid()} | set(self._worker_pids())
        return sum(x for x in (pss_mb(p) for p in pids) if x is not None)

    def _worker_pids(self):
        d, base = os.path.split(self.shm_prefix)
        stem = f"{base}-{self.instance}-slot"
        for name in os.listdir(d):
            if name.startswith(stem) and name.endswith(".stats"):
                try:
                    with open(os.path.join(d, name)) as f:
                        yield int(f.read(64).split()[0])
                except (OSError, ValueError, IndexError):
                    pass

    def instance_rps(self) -> float:
        """Arrivals over the trailing busy window, summed over the instance's
        workers' stats files (each worker writes its own window count)."""
        d, base = os.path.split(self.shm_prefix)
        stem = f"{base}-{self.instance}-slot"
        n = 0
        for name in os.listdir(d):
            if name.startswith(stem) and name.endswith(".stats"):
                try:
                    with open(os.path.join(d, name)) as f:
                        n += int(f.read(64).split()[2])
                except (OSError, ValueError, IndexError):
                    pass
        return n / float(self.p["busy_window_s"])

    # -- the decision core -------------------------------------------------
    def decide(self, rss: float, over_limit_age_s: float, holder: str) -> Decision:
        p = self.p
        hard = float(p["hard_limit_mb"])
        ceiling = rss >= hard
        fd = os.open(self.stamp_path, os.O_RDWR | os.O_CREAT, 0o600)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)  # one instance decision at a time
            now = time.time()
            raw = os.pread(fd, 64, 0).strip()
            age = (now - float(raw)) if raw else None
            headroom = self.container_mb - self.instance_usage_mb()
            pressure = headroom < float(p["min_headroom_mb"])

            def hold(label, lease="none"):
                return Decision(False, label, lease, pressure, headroom, age)

            # hold on cooldown: the per-instance stamp, checked BEFORE any
            # ceiling check (the seeds' "cooldown gates the recycle even past
            # the hard ceiling"); pressure shortens it; the ceiling
            # escalation (fix 1, off in the seeds) gives a worker at or over
            # the hard ceiling the pressure cooldown too.
            if age is not None:
                if pressure:
                    limit, label = float(p["pressure_cooldown_s"]), "cooldown_pressure"
                elif p.get("escalate_on_ceiling", False) and ceiling:
                    limit, label = float(p["pressure_cooldown_s"]), "cooldown_ceiling"
                else:
                    limit, label = float(p["cooldown_s"]), "cooldown"
                if age < limit:
                    return hold(label)

            # defer busy: only when not under pressure and under the hard
            # ceiling (the ceiling skips only this gate), for at most
            # defer_max_s after the worker first asked.
            if (p.get("busy_deferral", True) and not pressure
                    and self.instance_rps() > float(p["busy_rps"])
                    and over_limit_age_s < float(p["defer_max_s"])
                    and not ceiling):
                return hold("busy_deferral")

            # the fleet gates in Redis: token bucket (fix 3, if enabled), then
            # the lease: lease acquired, or bypass on pressure, or bypass on
            # hard ceiling, else held.
            tb = p.get("token_bucket", {})
            lease = p.get("lease", {})
            bucket_on = bool(tb.get("enabled", False))
            lease_on = bool(lease.get("enabled", True))
            if not bucket_on and lease_on:
                # The seeds' call, as deployed: SET NX PX.
                got = self.redis.set(self.lease_key, holder, nx=True,
                                     px=int(float(lease["ttl_s"]) * 1000))
                if got:
                    lease_pass = "open"
                elif lease.get("exit_on_pressure", True) and pressure:
                    lease_pass = "exit_pressure"
                elif lease.get("exit_on_hard_ceiling", True) and ceiling:
                    lease_pass = "exit_hard_ceiling"
                else:
                    return hold("lease_held", "held")
                bucket_pass = "none"
            elif bucket_on or lease_on:
                verdict, bucket_pass, lease_pass = (
                    x.decode() if isinstance(x, bytes) else x for x in self._fleet_gates(
                        keys=[self.bucket_key, self.lease_key],
                        args=[int(pressure), int(ceiling), int(bucket_on),
                              float(tb.get("rate_per_hour", 0)) / 3600.0,
                              float(tb.get("burst", 1)), int(lease_on),
                              int(float(lease.get("ttl_s", 0)) * 1000), holder,
                              int(tb.get("exit_on_pressure", True)),
                              int(tb.get("exit_on_hard_ceiling", True)),
                              int(lease.get("exit_on_pressure", True)),
                              int(lease.get("exit_on_hard_ceiling", True))]))
                if verdict == "hold":
                    if bucket_pass == "bucket_empty":
                        return hold("bucket_empty")
                    return hold("lease_held", "held")
            else:
                bucket_pass = lease_pass = "none"

            # recycle: stamp the instance's cooldown now, under the lock.
            os.ftruncate(fd, 0)
            os.pwrite(fd, f"{now:.6f}\n".encode(), 0)
            parts = []
            if bucket_pass != "none":
                parts.append(_BUCKET_LABEL[bucket_pass])
            if lease_pass != "none":
                parts.append(_LEASE_BRANCH[lease_pass])
            return Decision(True, "+".join(parts) or "ungated", _LEASE_LABEL[lease_pass],
                            pressure, headroom, age)
        finally:
            os.close(fd)  # releases the flock
