//! The fleet: instances (containers with a cgroup limit and a preloaded
//! master) and their workers. Plain data plus the pure memory model; the
//! event loop in `sim` is the only code that mutates it.

pub mod cow;
pub mod memory;
pub mod surge;

pub use cow::Cow;
pub use memory::{LeakModel, VelocityDist};
pub use surge::{Episode, Surge, SurgeClock};

use crate::engine::rng::StreamRng;
use crate::engine::time::SimTime;
use crate::policy::Cause;
use std::collections::VecDeque;

/// Where a worker is in its life.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum WorkerState {
    /// Forked, not yet serving (costs memory, serves nothing).
    Booting,
    Serving,
    /// Told to exit: finishes in-flight requests, takes no new ones.
    Draining,
    /// A spare slot with no process (spawn-then-exit keeps one per worker
    /// for the successor that boots beside it).
    Dead,
}

/// One attempt of a client request inside the fleet.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Request {
    /// When the client first sent it (latency is measured from here).
    pub first_t: SimTime,
    /// When this attempt reached the instance (wait is measured from here).
    pub enq_t: SimTime,
    pub service: SimTime,
    /// 0 for the first attempt; each connection-error retry adds one.
    pub attempt: u32,
    /// The pinned connection it travels on (`sim::connections`);
    /// `u32::MAX` under the other connection models.
    pub conn: u32,
}

/// One worker slot. The struct is reused across generations: a recycle
/// bumps `generation`, so events scheduled for the old process are ignored.
///
/// Laid out as written (`repr(C)`) in two cache lines of its own: what a
/// served request touches, and the rest behind a pointer (`WorkerCold`).
/// A large fleet's round-robin sweeps the workers in order, and the fewer
/// bytes a worker spans the fewer pages the sweep crosses a request: at
/// 320 bytes a worker, the floor prototype's cost a request at 16,002
/// workers was 1.81x its cost at 6; at 128 bytes, 1.12x
/// (docs/performance.md, "Fifteenth session: bytes a worker"; the size is
/// pinned by a test here).
#[repr(C, align(64))]
pub struct Worker {
    pub instance: u32,
    pub generation: u32,
    pub state: WorkerState,
    pub in_flight: u32,
    /// Requests served by this generation.
    pub requests: u64,
    /// Request-count trigger: this generation's limit (`u64::MAX` = none).
    pub max_requests: u64,
    pub rss_mb: f64,
    /// The highest RSS of this generation's life, a request's transient
    /// working set included (the `peak` measure).
    pub peak_mb: f64,
    /// Last RSS change, for the overshoot integral.
    pub rss_changed_at: SimTime,
    /// Leak velocity drawn at spawn.
    pub velocity_mb_per_request: f64,
    /// Warm-up growth still to come.
    pub warm_left_mb: f64,
    /// Per-generation stream for per-request memory noise.
    pub noise: StreamRng,
    /// Pages of `rss_mb` still shared with the master: `fleet.shared_mb`
    /// at fork, less what copy-on-write has unshared since (`fleet::cow`).
    pub shared_mb: f64,
    /// What a served request does not touch.
    pub cold: Box<WorkerCold>,
}

/// The part of a `Worker` a served request does not touch.
pub struct WorkerCold {
    /// First moment RSS reached the hard ceiling (read only at or over it).
    pub over_ceiling_since: Option<SimTime>,
    /// Index within the instance.
    pub slot: u32,
    pub spawned_at: SimTime,
    /// When this generation started serving (the aggregate mode credits a
    /// worker only for the part of a step it served).
    pub serving_since: SimTime,
    pub limit_mb: f64,
    /// First time a trigger made this generation ask to recycle.
    pub wants_since: Option<SimTime>,
    /// A trigger that asked and was held: asked again at the next sample.
    pub wants: Option<Cause>,
    /// Drift trigger: this generation's drift limit over its boot RSS.
    pub drift_limit_mb: f64,
    /// Growth a GC could still free (drift trigger with a reclaim fraction).
    pub garbage_mb: f64,
    /// Consecutive requests that ended over the drift limit after GC.
    pub violations: u32,
    /// Consecutive samples that found RSS at or over the limit.
    pub over_samples: u32,
    /// Spawn-then-exit: the successor booting to replace this worker.
    pub successor: Option<u32>,
    /// Spawn-then-exit: the worker this one replaces once it has booted.
    pub replaces: Option<u32>,
    /// Aggregate mode: the served count at which the next rare leak step
    /// lands (`sim::aggregate::leap::Leak`); unused in exact mode.
    pub next_step_at: u64,
    /// Memory surges: the episode (`SurgeClock::latest`) whose budget
    /// `surge_left_mb` is, and what that episode may still add to this
    /// process (`max_mb_per_worker`).
    pub surge_episode: usize,
    pub surge_left_mb: f64,
}

/// A trailing-window arrival counter with one-second buckets.
pub struct RateWindow {
    counts: Vec<u32>,
    stamps: Vec<u64>,
    /// The second and bucket of the last record: arrivals come many to a
    /// second, and this spares them the division that finds the bucket.
    last: (u64, usize),
}

impl RateWindow {
    pub fn new(window_s: u64) -> Self {
        let n = window_s.max(1) as usize;
        RateWindow {
            counts: vec![0; n],
            stamps: vec![u64::MAX; n],
            last: (u64::MAX, 0),
        }
    }

    #[inline]
    pub fn record(&mut self, t: SimTime) {
        self.record_n(t, 1);
    }

    /// Records `n` arrivals at `t` (the aggregate mode's per-step counts).
    #[inline]
    pub fn record_n(&mut self, t: SimTime, n: u32) {
        let sec = t.0 / 1_000_000;
        if sec != self.last.0 {
            let i = (sec % self.counts.len() as u64) as usize;
            if self.stamps[i] != sec {
                self.stamps[i] = sec;
                self.counts[i] = 0;
            }
            self.last = (sec, i);
        }
        self.counts[self.last.1] = self.counts[self.last.1].saturating_add(n);
    }

    /// Arrivals per second over the trailing window ending at `t`.
    pub fn rate(&self, t: SimTime) -> f64 {
        let sec = t.0 / 1_000_000;
        let n = self.counts.len() as u64;
        let total: u64 = self
            .stamps
            .iter()
            .zip(&self.counts)
            .filter(|(s, _)| **s != u64::MAX && **s <= sec && sec - **s < n)
            .map(|(_, c)| *c as u64)
            .sum();
        total as f64 / n as f64
    }
}

/// One container: a master, its workers, its backlog and its cgroup.
///
/// Laid out as written, on cache lines of its own: what every request
/// touches (`outstanding`, `private_mb`, `stale_conns`, `overshoot_q`) in
/// the first line (as `Worker`).
#[repr(C, align(64))]
pub struct Instance {
    /// Requests in service plus waiting (least-outstanding balancing).
    pub outstanding: u32,
    /// Sum over live workers of `rss - shared` (each worker's own
    /// `shared_mb`): the cgroup's view.
    pub private_mb: f64,
    /// Expiry times of connections the client still holds but the server
    /// closed (read at every arrival: in the first line).
    pub stale_conns: VecDeque<SimTime>,
    /// The overshoot integral of this instance's workers in exact mode, in
    /// 2^-20 MB x us (`sim::memory::MEM_STEPS`): an integer, so its
    /// value does not depend on the order of its terms; summed over
    /// instances at the end.
    pub overshoot_q: i128,
    /// Arrivals a second (only with a rate-based gate: `Sim::rate_window`).
    pub arrivals: RateWindow,
    /// Global index of the first worker; workers are `first..first + n`.
    pub first_worker: u32,
    /// Requests waiting for a worker, oldest first.
    pub backlog: VecDeque<Request>,
    /// Free serving slots as `(worker, generation)`; stale entries are skipped.
    pub idle: VecDeque<(u32, u32)>,
    /// The per-instance cooldown stamp (the seeds' /dev/shm file).
    pub last_recycle: Option<SimTime>,
    /// Worker structs of this instance that are `Dead`: under
    /// spawn-then-exit, the spares a successor can be forked into. Kept by
    /// `Sim::set_state`, so asking whether one is free is O(1).
    pub dead: u32,
    /// `memory.oom.group`: the container was killed whole and has not
    /// restarted yet; its exiting workers are not replaced.
    pub restarting: bool,
}

impl Instance {
    pub fn usage_mb(&self, master_mb: f64) -> f64 {
        master_mb + self.private_mb
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_worker_is_two_cache_lines_and_an_instance_four() {
        // What a served request touches stays within two lines; anything
        // more goes to `WorkerCold` (docs/performance.md, "Fifteenth
        // session": the bytes a worker spans are a large fleet's cost).
        assert_eq!(std::mem::size_of::<Worker>(), 128);
        assert_eq!(std::mem::align_of::<Worker>(), 64);
        assert_eq!(std::mem::size_of::<Instance>(), 256);
        // What every request reads of its instance ends within the first
        // line (a large fleet's sweep misses one line an instance, not two:
        // docs/performance.md, "Sixteenth session").
        use std::mem::{offset_of, size_of};
        assert!(offset_of!(Instance, stale_conns) + size_of::<VecDeque<SimTime>>() <= 64);
        assert!(offset_of!(Instance, overshoot_q) + size_of::<i128>() <= 64);
        assert!(offset_of!(Instance, private_mb) + size_of::<f64>() <= 64);
    }

    #[test]
    fn rate_window_counts_the_trailing_window() {
        let mut w = RateWindow::new(10);
        for s in 0..20u64 {
            for _ in 0..3 {
                w.record(SimTime::from_secs(s));
            }
        }
        assert_eq!(w.rate(SimTime::from_secs(19)), 3.0);
        // 5 seconds later, only 5 of the 10 buckets are in the window.
        assert_eq!(w.rate(SimTime::from_secs(24)), 1.5);
        assert_eq!(w.rate(SimTime::from_secs(100)), 0.0);
    }
}
