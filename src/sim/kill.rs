//! The server's own kill paths (`[fleet.kill]`): a request that runs past
//! the request timeout kills its worker, and the deadline that ends a
//! drain still busy (the graceful timeout, gunicorn's heartbeat, uWSGI's
//! mercy). Each is counted apart (`metrics::KillPath`).
//!
//! Request timeouts: the service time is drawn when a request starts, so
//! the check is made there, once (`arm_request_timeout`): a request longer
//! than the timeout schedules the kill at start + timeout. The master
//! SIGKILLs the worker; every request in flight on it is reset (the
//! client retries or fails it, as after any kill) and the master forks a
//! replacement. Real systems: uWSGI `harakiri` (set at the request's
//! start, `core/utils.c:1419-1420` `set_harakiri`; the master's check,
//! `core/master_checks.c:183-214`, SIGKILLs, `core/master_utils.c:1679-1683`,
//! unless `harakiri-graceful-timeout` is set), unicorn `timeout` (the
//! worker's tick before each accept, `lib/unicorn/http_server.rb:704-709`;
//! `murder_lazy_workers` SIGKILLs a tick older than the timeout, `:478-496`),
//! PHP-FPM `request_terminate_timeout` (`fpm_request_check_timed_out` in
//! `sapi/fpm/fpm/fpm_request.c` SIGTERMs, and a child's SIGTERM is
//! `SIG_DFL`, `fpm_signals.c` `fpm_signals_init_child`), gunicorn's sync
//! worker under `--timeout` (it notifies the arbiter before each accept and
//! not while it serves, `gunicorn/workers/sync.py:58-62`; `murder_workers`
//! SIGABRTs then SIGKILLs, `gunicorn/arbiter.py:604-623`). Left out: the
//! masters' check loops (about 1 s), which delay a kill by up to a second.
//!
//! Drain deadlines (`scenario::DrainDeadline`): a drain still busy at its
//! deadline is killed the same way (`drain_killed` rows; under the
//! heartbeat or the mercy with the branch `heartbeat_kill` or `mercy_kill`
//! and counted apart).

use super::{Event, Sim};
use crate::engine::SimTime;
use crate::metrics::{EventKind, KillPath, Observer};
use crate::scenario::DrainDeadline;

impl<O: Observer> Sim<'_, O> {
    /// A request of `service` starts on `w`'s `slot` at `t`: if it will
    /// outlast the request timeout, its kill is scheduled. One branch on an
    /// `Option` when the timeout is off.
    #[inline(always)]
    pub(super) fn arm_request_timeout(&mut self, t: SimTime, w: u32, slot: u32, service: SimTime) {
        if let Some(limit) = self.sc.fleet.kill.request_timeout
            && service > limit
        {
            self.schedule_request_timeout(t + limit, w, slot);
        }
    }

    #[cold]
    #[inline(never)]
    fn schedule_request_timeout(&mut self, at: SimTime, w: u32, slot: u32) {
        let generation = self.workers[w as usize].generation;
        self.q.schedule(
            at,
            Event::RequestTimeout {
                worker: w,
                generation,
                slot,
            },
        );
    }

    /// The timeout of the request on `slot` is up. The request outlasts
    /// it, so while the process lives the slot still holds it.
    pub(super) fn on_request_timeout(&mut self, t: SimTime, w: u32, generation: u32, slot: u32) {
        let worker = &self.workers[w as usize];
        if worker.generation != generation {
            return; // killed or recycled since: its requests are gone
        }
        debug_assert!(
            self.in_service[self.slot_index(w, slot)].is_some(),
            "a timed-out slot is busy"
        );
        let facts = self.kill_facts(t, worker.instance, KillPath::RequestTimeout.branch());
        self.worker_row(t, w, EventKind::TimeoutKill, Some(facts));
        self.kill_worker(t, w, KillPath::RequestTimeout);
    }

    /// When a drain of `w` that begins at `t` is killed if still busy.
    pub(super) fn drain_deadline(&self, t: SimTime, w: u32) -> SimTime {
        let serving_since = self.workers[w as usize].cold.serving_since;
        self.sc.fleet.kill.drain.at(t, serving_since)
    }

    /// A drain still busy at its deadline: killed, counted under its path.
    pub(super) fn drain_kill(&mut self, t: SimTime, w: u32) {
        self.m.drain_kills += 1;
        let path = match self.sc.fleet.kill.drain {
            DrainDeadline::GracefulTimeout(_) => None,
            DrainDeadline::Heartbeat { .. } => Some(KillPath::Heartbeat),
            DrainDeadline::Mercy(_) => Some(KillPath::Mercy),
        };
        let Some(path) = path else {
            // The graceful timeout's row keeps its old form (no branch).
            self.worker_row(t, w, EventKind::DrainKilled, None);
            self.kill_in_flight(t, w);
            self.exit(t, w);
            return;
        };
        let i = self.workers[w as usize].instance;
        let facts = self.kill_facts(t, i, path.branch());
        self.worker_row(t, w, EventKind::DrainKilled, Some(facts));
        self.kill_worker(t, w, path);
    }

    /// SIGKILL by `path`: what is in flight is reset, then the exit.
    fn kill_worker(&mut self, t: SimTime, w: u32, path: KillPath) {
        let resets = self.m.resets;
        self.kill_in_flight(t, w);
        let c = &mut self.m.kill_paths[path as usize];
        c.kills += 1;
        c.requests += self.m.resets - resets;
        self.exit(t, w);
    }

    /// The kill paths this scenario turns on, for summary.json.
    pub(super) fn kill_path_totals(&self) -> crate::metrics::KillPaths {
        let k = &self.sc.fleet.kill;
        let on = |p: KillPath| match p {
            KillPath::RequestTimeout => k.request_timeout.is_some(),
            KillPath::Heartbeat => matches!(k.drain, DrainDeadline::Heartbeat { .. }),
            KillPath::Mercy => matches!(k.drain, DrainDeadline::Mercy(_)),
        };
        crate::metrics::KillPaths(
            KillPath::ALL
                .into_iter()
                .filter(|&p| on(p))
                .map(|p| (p, self.m.kill_paths[p as usize]))
                .collect(),
        )
    }
}
