//! uWSGI `evil-reload-on-rss`: the master's SIGKILL on a worker whose RSS
//! its memory thread last read at or over the limit.
//!
//! In uWSGI each worker runs a `mem_collector` thread that sleeps
//! `mem-collector-freq` (3 s) and stores the process's RSS
//! (`core/uwsgi.c`); the master's `uwsgi_master_check_workers` compares it
//! with `evil-reload-on-rss` and sends SIGKILL (`core/master_checks.c`).
//! Nothing waits for the request in flight: the kill resets it, which the
//! client sees (`retry_ok` / `fetch_failed`), and the run counts those
//! requests apart (`evil_kill_requests` in summary.json, `branch =
//! evil_kill_in_flight` on the `evil_kill` row). Left out: the master's own
//! check loop (about 1 s), which delays a kill by up to a second after the
//! thread's read.

use super::{Event, Sim};
use crate::engine::SimTime;
use crate::engine::rng::{self, Stream, open01};
use crate::fleet::WorkerState;
use crate::metrics::{EventKind, Observer};
use crate::policy::Cause;

impl<O: Observer> Sim<'_, O> {
    /// Starts a worker's memory thread: its first read one interval after
    /// the fork, or, for a generation-0 worker already running at time
    /// zero, at a uniform phase of the interval (its fork was before).
    pub(super) fn start_evil_collector(&mut self, t: SimTime, w: u32, generation: u32) {
        let Some(evil) = &self.sc.policy.triggers.evil_rss else {
            return;
        };
        let every = evil.collector_interval;
        let first = if generation == 0 {
            let u = open01(&mut rng::keyed(self.seed, Stream::EvilPhase, &[w as u64]));
            SimTime(((u * every.0 as f64) as u64).max(1))
        } else {
            every
        };
        self.q.schedule(
            t + first,
            Event::EvilCheck {
                worker: w,
                generation,
            },
        );
    }

    /// The memory thread's read: over the limit, the master kills.
    pub(super) fn on_evil_check(&mut self, t: SimTime, w: u32, generation: u32) {
        let worker = &self.workers[w as usize];
        if worker.generation != generation || worker.state == WorkerState::Dead {
            return;
        }
        let evil = self.sc.policy.triggers.evil_rss.as_ref().expect("evil on");
        let (limit, every) = (evil.limit_mb, evil.collector_interval);
        let over = worker.rss_mb >= limit;
        let killable = matches!(worker.state, WorkerState::Serving | WorkerState::Draining);
        if over && killable {
            self.evil_kill(t, w);
        } else {
            let next = Event::EvilCheck {
                worker: w,
                generation,
            };
            self.q.schedule(t + every, next);
        }
    }

    /// SIGKILL from the master: no gates, no drain; what is in flight is
    /// reset. The row's branch says whether the kill hit a request (exact
    /// mode; aggregate mode draws its in-flight count only at the kill).
    fn evil_kill(&mut self, t: SimTime, w: u32) {
        if self.lazy.is_some() {
            self.materialize(self.workers[w as usize].instance, t);
        }
        let worker = &self.workers[w as usize];
        let i = worker.instance;
        let hit = self.agg.is_none() && worker.in_flight > 0;
        let label = if hit {
            "evil_kill_in_flight"
        } else {
            "evil_kill"
        };
        let mut facts = self.kill_facts(t, i, label);
        facts.cause = Some(Cause::EvilRss);
        self.worker_row(t, w, EventKind::EvilKill, Some(facts));
        self.m.evil_kills += 1;
        let resets = self.m.resets;
        self.kill_in_flight(t, w);
        self.m.evil_kill_requests += self.m.resets - resets;
        self.exit(t, w);
    }
}
