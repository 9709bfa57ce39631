//! The cold-start penalty (`[fleet.cold_start]`): a replacement's first
//! requests, or those of its first seconds serving, take `factor` times
//! their drawn service time (caches, lazy imports, a JIT warming up).
//! Workers of generation 0 were running before the window and are warm.
//! The drawn time stays the request's (common random numbers): only its
//! completion moves, and `cold_start_requests` in summary.json counts the
//! requests served cold.

use super::super::Sim;
use crate::engine::SimTime;
use crate::metrics::Observer;

impl<O: Observer> Sim<'_, O> {
    /// The service time of a request that worker `w` starts at `t`.
    #[inline(never)]
    pub(in crate::sim) fn cold_service(&mut self, t: SimTime, w: u32, service: SimTime) -> SimTime {
        let c = self.sc.policy.modes.cold_start.expect("cold start on");
        let worker = &self.workers[w as usize];
        let started = worker.requests + worker.in_flight as u64;
        if worker.generation == 0 || !c.is_cold(started, t - worker.cold.serving_since) {
            return service;
        }
        self.replace.n.cold_requests += 1;
        c.service(service)
    }
}
