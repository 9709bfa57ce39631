//! Passenger's detach-and-spawn (`replacement = "detach_and_spawn"`).
//!
//! Read at phusion/passenger 080171e6e, `src/agent/Core/ApplicationPool/`:
//! a process that reaches its limit is detached (`Group::detach`,
//! `Group/ProcessListManagement.cpp:479-508`: out of `enabledProcesses`,
//! into `detachedProcesses`, so no new session is routed to it; it
//! finishes the sessions it has), and `Pool::detachProcessUnlocked`
//! (`Pool/ProcessUtils.cpp:124-144`) then calls
//! `possiblySpawnMoreProcessesForExistingGroups` (`:157-188`), which spawns
//! the replacement while the detached one drains (`max_requests`:
//! `Group/SessionManagement.cpp:180-223`). Requests that find no free
//! process wait in the group's `getWaitlist`, at most
//! `max_request_queue_size` (default 100, `src/cxx_supportlib/Constants.h:61`;
//! 0 = unbounded) of them (`Group/InternalUtils.cpp:269-283`); one more
//! gets a `RequestQueueFullException`, answered 503
//! (`Controller/CheckoutSession.cpp:264`). Here that queue is the
//! instance's backlog (`Sim::backlog_cap`), and its 503s are
//! `proxy_queue_503` in summary.json.

use super::super::Sim;
use crate::engine::SimTime;
use crate::fleet::WorkerState;
use crate::metrics::Observer;

impl<O: Observer> Sim<'_, O> {
    /// Detaches worker `w` from routing and spawns its replacement beside
    /// it. With no spare struct left (a predecessor still draining) the
    /// replacement is forked at its exit instead.
    pub(in crate::sim) fn detach_and_spawn(&mut self, t: SimTime, w: u32) {
        let (i, generation) = {
            let worker = &self.workers[w as usize];
            (worker.instance, worker.generation)
        };
        if self.has_spare(i) {
            self.replace.n.detached_spawns += 1;
            // The fork may push the cgroup over its limit and the kernel
            // may kill the detached worker itself: then nothing is left
            // to drain.
            self.spawn_successor(t, w);
        }
        let worker = &self.workers[w as usize];
        if worker.generation == generation && worker.state == WorkerState::Serving {
            self.begin_drain(t, w);
        }
    }
}
