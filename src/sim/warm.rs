//! The warm start (`fleet.warm_start`): a window opened on a running fleet.
//! Each generation-0 worker has served a uniform fraction of the requests
//! its life takes to its limit (`age`). Drawn worker by worker, an
//! instance's ages can add up to more memory than its container holds: a
//! state no running fleet is in, because its kernel would already have
//! killed the largest worker and its master forked another. `settle_warm` does
//! what that history did: while the instance is over its container, the
//! largest worker is in a later life (`Life`: other draws, another age),
//! and after `Life::LAST` of them a fresh one. Without it such a fleet
//! opened every run with an OOM kill at time zero (unicorn-worker-killer's
//! preset: 8 of 8 seeds; 40% of its OOM kills in a 2 h run).

use super::Sim;
use super::memory::quantize_mb;
use crate::engine::SimTime;
use crate::engine::rng::{self, Stream, open01};
use crate::fleet::{Worker, WorkerState};
use crate::metrics::Observer;

/// Caps the warm-start ageing loop (a worker that never reaches its limit).
pub(super) const WARM_START_MAX_REQUESTS: u64 = 1_000_000;

/// Which life a generation-0 worker is in at time zero: its own draws
/// (`OWN`, generation 0's), a later one its slot reached after the kernel
/// killed the one before the window opened (1 to `LAST`, each under keys
/// no generation draws), or past `LAST` a worker just forked (not aged).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct Life(u32);

impl Life {
    pub(super) const OWN: Life = Life(0);
    /// The last aged life `settle_warm` tries for one slot.
    const LAST: u32 = 16;

    /// The keys of its draws (`None`: generation 0's own).
    pub(super) fn keys(self, w: u32) -> Option<[u64; 3]> {
        (self.0 > 0).then_some([w as u64, 0, self.0 as u64])
    }

    /// Whether the warm start ages a worker in this life.
    pub(super) fn ages(self) -> bool {
        self.0 <= Self::LAST
    }

    fn next(self) -> Life {
        Life(self.0 + 1)
    }
}

impl<O: Observer> Sim<'_, O> {
    /// A uniform draw for a warm-started worker: `which` 0 sets how far
    /// through its life it is, 1 how far through its lifetime trigger's.
    pub(super) fn warm_fraction(&self, w: u32, life: Life, which: u64) -> f64 {
        let keys: &[u64] = match (life, which) {
            (Life::OWN, 0) => &[w as u64],
            (Life::OWN, _) => &[w as u64, 1],
            (Life(k), _) => &[w as u64, 2 + which, k as u64],
        };
        open01(&mut rng::keyed(self.seed, Stream::WarmStart, keys))
    }

    /// Exact mode's ageing: the requests to the worker's limit, then a
    /// uniform fraction of them served.
    pub(super) fn age(&self, worker: &mut Worker, w: u32, life: Life) {
        let leak = &self.sc.fleet.leak;
        let (mut rss, mut warm, mut noise) =
            (worker.rss_mb, worker.warm_left_mb, worker.noise.clone());
        let (base, drift) = (
            worker.cold.limit_mb,
            self.sc.fleet.boot_rss_mb + worker.cold.drift_limit_mb,
        );
        let limit = |n| (base + self.offset_at(n)).min(drift);
        let mut to_limit = 0;
        while rss < limit(to_limit) && to_limit < WARM_START_MAX_REQUESTS.min(worker.max_requests) {
            rss += quantize_mb(leak.growth(worker.velocity_mb_per_request, &mut warm, &mut noise));
            to_limit += 1;
        }
        let served = (self.warm_fraction(w, life, 0) * to_limit as f64) as u64;
        for _ in 0..served {
            worker.rss_mb += quantize_mb(leak.growth(
                worker.velocity_mb_per_request,
                &mut worker.warm_left_mb,
                &mut worker.noise,
            ));
        }
        worker.requests = served;
    }

    /// Instance `i` at time zero, as its history left it: while it is over
    /// its container, its largest worker (the kernel's choice) is in its
    /// next life. `lives` and `left` are every worker's (`start`'s).
    pub(super) fn settle_warm(&mut self, i: u32, lives: &mut [Life], left: &mut [Option<SimTime>]) {
        self.recompute_private(i);
        if !self.sc.fleet.warm_start || self.sc.saturate {
            return;
        }
        while self.over_cgroup(i) {
            let Some(w) = self
                .instance_workers(i)
                .filter(|&w| {
                    self.workers[w as usize].state != WorkerState::Dead && lives[w as usize].ages()
                })
                .max_by(|&a, &b| {
                    let (ra, rb) = (
                        self.workers[a as usize].rss_mb,
                        self.workers[b as usize].rss_mb,
                    );
                    ra.total_cmp(&rb).then(b.cmp(&a))
                })
            else {
                // Every worker fresh and still over: the kernel acts at time zero.
                return;
            };
            let life = lives[w as usize].next();
            let (worker, l) = self.initial_worker(w, life);
            (
                self.workers[w as usize],
                lives[w as usize],
                left[w as usize],
            ) = (worker, life, l);
            self.recompute_private(i);
        }
    }
}
