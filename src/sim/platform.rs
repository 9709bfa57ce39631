//! The container platform's events: the whole-container OOM kill of cgroup
//! v2's `memory.oom.group` and reload waves (a `kill -HUP` of the master, a
//! deploy).
//!
//! `memory.oom.group = 1` (Linux 4.19, `Documentation/admin-guide/cgroup-v2.rst`:
//! "the OOM killer will kill all tasks belonging to the cgroup") is what the
//! kubelet sets on every container with cgroup v2 since Kubernetes 1.28
//! (kubernetes PR 117793; 1.32 adds the `singleProcessOOMKill` opt-out, PR
//! 126096). The master dies with its workers, the kubelet restarts the
//! container after its back-off (10 s at first, doubling to 5 min:
//! "Container restart policy", pod-lifecycle docs) and the new master
//! forks every worker again.
//!
//! A reload follows gunicorn's `Arbiter.reload` (`gunicorn/arbiter.py`): it
//! spawns `workers` new workers first, then `manage_workers` sends SIGTERM
//! to the oldest ones beyond the count at once, not on the new ones'
//! readiness: for a boot's length the instance serves nothing, and old and
//! new processes are resident together.

use super::{Event, Sim};
use crate::engine::SimTime;
use crate::fleet::WorkerState;
use crate::metrics::{EventKind, Observer};

impl<O: Observer> Sim<'_, O> {
    /// Schedules the scenario's reload waves (at the start).
    pub(super) fn schedule_platform(&mut self) {
        for (k, r) in self.sc.platform.reloads.iter().enumerate() {
            self.q.schedule(r.at, Event::Reload { wave: k as u32 });
        }
    }

    /// `memory.oom.group`: every worker of instance `i` is killed (their
    /// requests reset), the master's listen queue with them; the structs
    /// stay dead until the container restarts.
    #[cold]
    #[inline(never)]
    pub(super) fn oom_group_kill(&mut self, t: SimTime, i: u32, restart: SimTime) -> bool {
        self.m.oom_group_kills += 1;
        self.instances[i as usize].restarting = true;
        for w in self.instance_workers(i) {
            if self.workers[w as usize].state == WorkerState::Dead {
                continue;
            }
            self.m.oom_kills += 1;
            let facts = self.kill_facts(t, i, "oom_group_kill");
            self.worker_row(t, w, EventKind::OomKill, Some(facts));
            self.kill_in_flight(t, w);
            self.exit(t, w);
        }
        if self.agg.is_none() {
            while let Some(req) = self.instances[i as usize].backlog.pop_front() {
                self.instances[i as usize].outstanding -= 1;
                self.connection_error(t, i, req);
            }
        }
        self.q
            .schedule(t + restart, Event::InstanceRestart { instance: i });
        true
    }

    /// The container is back: its master forks `workers_per_instance`
    /// workers into the instance's first dead structs.
    pub(super) fn on_instance_restart(&mut self, t: SimTime, i: u32) {
        self.instances[i as usize].restarting = false;
        let dead: Vec<u32> = self
            .instance_workers(i)
            .filter(|&w| self.workers[w as usize].state == WorkerState::Dead)
            .take(self.sc.fleet.workers_per_instance)
            .collect();
        for w in dead {
            self.spawn(t, w);
        }
        self.rolling_boot(t, i);
    }

    /// A reload wave: in each instance it covers, every serving worker gets
    /// a successor forked beside it and is told to drain at once
    /// (gunicorn's spawn-then-TERM order; a worker with no spare struct
    /// left drains first and is replaced at its exit).
    pub(super) fn on_reload(&mut self, t: SimTime, wave: u32) {
        let r = self.sc.platform.reloads[wave as usize];
        let instances = match r.instance {
            Some(i) => i..i + 1,
            None => 0..self.instances.len() as u32,
        };
        for i in instances {
            for w in self.instance_workers(i) {
                let worker = &self.workers[w as usize];
                if worker.state != WorkerState::Serving || worker.cold.successor.is_some() {
                    continue;
                }
                self.m.reload_replacements += 1;
                if self.replace_handover_on() {
                    // Granian's HUP: `_respawn_workers` over every worker,
                    // one timed handover at a time (`replace/handover.rs`).
                    self.request_handover(t, w);
                    continue;
                }
                if self.has_spare(i) {
                    self.spawn_successor(t, w);
                }
                self.begin_drain(t, w);
            }
        }
    }
}
