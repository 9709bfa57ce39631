//! Granian's timed serial handover (`replacement = "timed_handover"`).
//!
//! Read at emmett-framework/granian 9a20b17: the main loop handles one
//! signal at a time, and `_respawn_workers` (`granian/server/common.py:350-373`)
//! goes through the workers to restart one by one: spawn the new worker,
//! `time.sleep(delay)` (`respawn_interval`, 3.5 s by default, `:126`;
//! passed for memory and lifetime respawns, `:530`, `:571-573`,
//! `granian/server/mp.py:452-453`), terminate the old one and `join` it
//! (no kill timeout by default), then the next. The new worker's
//! readiness is never waited for: if it boots in less than the interval
//! both serve for the rest of it, if it boots in more the server is a
//! worker short until it does; either way both are resident in the cgroup
//! meanwhile (the OOM of mitodl ol-infrastructure 5917). Here each instance
//! is one Granian server: a granted recycle starts a handover at once if
//! none is running, or waits its turn in the server's queue
//! (`handovers_waited`, `handover_wait_s_max` in summary.json); the next
//! starts when the old worker of the current one has exited.

use super::super::{Event, Sim};
use crate::engine::SimTime;
use crate::fleet::WorkerState;
use crate::metrics::Observer;
use crate::policy::Replacement;
use std::collections::VecDeque;

/// One Granian server's handovers.
#[derive(Default)]
pub(in crate::sim) struct Server {
    /// The old worker (struct, generation) of the handover under way.
    current: Option<(u32, u32)>,
    /// When it started (its successor's fork).
    since: SimTime,
    /// Workers whose recycle was granted while one was under way, with
    /// when: (struct, generation, granted at).
    waiting: VecDeque<(u32, u32, SimTime)>,
}

impl Server {
    /// Whether worker `w` of generation `generation` waits for its turn.
    pub(in crate::sim) fn waits(&self, w: u32, generation: u32) -> bool {
        self.waiting
            .iter()
            .any(|&(e, g, _)| e == w && g == generation)
    }

    /// The old worker of the handover under way and when it began.
    pub(in crate::sim) fn current(&self) -> Option<((u32, u32), SimTime)> {
        self.current.map(|c| (c, self.since))
    }
}

impl<O: Observer> Sim<'_, O> {
    fn interval(&self) -> SimTime {
        match self.sc.policy.replacement {
            Replacement::TimedHandover { respawn_interval } => respawn_interval,
            _ => unreachable!("a handover without timed_handover"),
        }
    }

    /// Whether worker `w`'s granted handover is still waiting its turn
    /// (it does not ask again meanwhile).
    pub(in crate::sim) fn handover_waits(&self, w: u32) -> bool {
        let Some(servers) = &self.replace.handover else {
            return false;
        };
        let worker = &self.workers[w as usize];
        servers[worker.instance as usize].waits(w, worker.generation)
    }

    /// A recycle of `w` was granted: hand over now or queue it.
    pub(in crate::sim) fn request_handover(&mut self, t: SimTime, w: u32) {
        let worker = &self.workers[w as usize];
        let (i, generation) = (worker.instance as usize, worker.generation);
        let servers = self.replace.handover.as_mut().expect("timed handover");
        if servers[i].current.is_some() || servers[i].waits(w, generation) {
            if !servers[i].waits(w, generation) {
                servers[i].waiting.push_back((w, generation, t));
            }
            return;
        }
        self.start_handover(t, w, t);
    }

    /// Spawn the successor of `w` and terminate `w` one interval later.
    fn start_handover(&mut self, t: SimTime, w: u32, granted: SimTime) {
        let worker = &self.workers[w as usize];
        let (i, generation) = (worker.instance, worker.generation);
        let n = &mut self.replace.n;
        n.handovers += 1;
        if granted < t {
            n.handovers_waited += 1;
            n.handover_wait_s_max = n.handover_wait_s_max.max((t - granted).as_secs_f64());
        }
        let servers = self.replace.handover.as_mut().expect("timed handover");
        servers[i as usize].current = Some((w, generation));
        servers[i as usize].since = t;
        // At most one handover per server, so a spare struct is free (two
        // per worker, one extra in use); should none be, the old worker
        // drains first and is replaced at its exit.
        if !self.has_spare(i) {
            self.begin_drain(t, w);
            return;
        }
        self.spawn_successor(t, w);
        // The fork can tip the cgroup into an OOM kill of the old worker:
        // its exit has then already ended this handover.
        if self.workers[w as usize].generation == generation {
            let at = t + self.interval();
            self.q.schedule(
                at,
                Event::Handover {
                    worker: w,
                    generation,
                },
            );
        }
    }

    /// The interval is over: the old worker is terminated (graceful: it
    /// drains within `graceful_timeout_s`, Granian's `join`).
    pub(in crate::sim) fn on_handover(&mut self, t: SimTime, w: u32, generation: u32) {
        let worker = &self.workers[w as usize];
        if worker.generation != generation || worker.state != WorkerState::Serving {
            return;
        }
        self.begin_drain(t, w);
    }

    /// The old worker of the current handover has exited (or died): the
    /// server's next waiting handover starts.
    pub(super) fn handover_exited(&mut self, t: SimTime, w: u32, generation: u32) {
        let i = self.workers[w as usize].instance as usize;
        let servers = self.replace.handover.as_mut().expect("timed handover");
        if servers[i].current != Some((w, generation)) {
            // A waiting worker that died is dropped when its turn comes.
            return;
        }
        servers[i].current = None;
        loop {
            let servers = self.replace.handover.as_mut().expect("timed handover");
            let Some((next, g, granted)) = servers[i].waiting.pop_front() else {
                return;
            };
            let worker = &self.workers[next as usize];
            if worker.generation == g
                && worker.state == WorkerState::Serving
                && worker.cold.successor.is_none()
            {
                self.start_handover(t, next, granted);
                return;
            }
        }
    }
}
