//! uWSGI's fork-bomb delay (`[policy.forkbomb]`).
//!
//! Read at unbit/uwsgi 6cbb217: when the master reaps a dead worker it
//! checks, before respawning it (`core/master.c:1089-1106`), whether this
//! respawn came within `check-interval` (1 s, `:349`) of the last one; if
//! so the rate goes up, and once it exceeds the worker count the master
//! logs "worker respawning too fast !!!" and `sleep(forkbomb_delay)` (2 s,
//! `core/init.c:120`), then respawns. The whole master sleeps: workers
//! that die meanwhile are reaped and respawned, in order, when it wakes,
//! each through the same check. Here a held respawn leaves the worker's
//! struct dead until then (`forkbomb_sleeps`, `forkbomb_delayed_respawns`
//! in summary.json). Left out: the master's other duties (the evil-reload
//! check, harakiri) pause too.

use super::super::{Event, Sim};
use crate::engine::SimTime;
use crate::engine::time::US_PER_S;
use crate::fleet::WorkerState;
use crate::metrics::Observer;
use crate::policy::replace::ForkBombGuard;
use std::collections::VecDeque;

/// One master's respawn counter and the respawns its sleep holds.
#[derive(Default)]
pub(super) struct Master {
    guard: ForkBombGuard,
    asleep: bool,
    /// Dead worker structs to respawn when it wakes, in reaping order.
    pending: VecDeque<u32>,
}

impl<O: Observer> Sim<'_, O> {
    /// The master reaps worker `w` (just exited) and respawns it, unless
    /// it is asleep or this respawn makes it sleep.
    pub(super) fn forkbomb_respawn(&mut self, t: SimTime, w: u32) {
        let i = self.workers[w as usize].instance as usize;
        let masters = self.replace.forkbomb.as_mut().expect("forkbomb on");
        if masters[i].asleep {
            masters[i].pending.push_back(w);
            self.replace.n.forkbomb_delayed += 1;
            self.bury(t, w);
            return;
        }
        if self.forkbomb_sleeps(t, i, w) {
            self.bury(t, w);
            return;
        }
        self.spawn(t, w);
    }

    /// The check before one respawn; on a burst the master falls asleep
    /// with `w` first in line. Returns whether it did.
    fn forkbomb_sleeps(&mut self, t: SimTime, i: usize, w: u32) -> bool {
        let fb = self.sc.policy.modes.forkbomb.expect("forkbomb on");
        let workers = self.sc.fleet.workers_per_instance as u32;
        let m = &mut self.replace.forkbomb.as_mut().expect("forkbomb on")[i];
        if m.guard.respawn(t.0 / US_PER_S, workers, &fb) {
            m.asleep = true;
            m.pending.push_front(w);
            self.replace.n.forkbomb_sleeps += 1;
            self.replace.n.forkbomb_delayed += 1;
            self.q
                .schedule(t + fb.delay, Event::MasterWake { instance: i as u32 });
            return true;
        }
        m.guard.stamp(t.0 / US_PER_S);
        false
    }

    /// The master wakes: the respawn it slept before, then the ones that
    /// died meanwhile, each checked again.
    pub(in crate::sim) fn on_master_wake(&mut self, t: SimTime, i: u32) {
        let m = &mut self.replace.forkbomb.as_mut().expect("forkbomb on")[i as usize];
        m.asleep = false;
        m.guard.stamp(t.0 / US_PER_S);
        let first = m.pending.pop_front();
        if let Some(w) = first {
            self.spawn_missing(t, i, w);
        }
        loop {
            let m = &mut self.replace.forkbomb.as_mut().expect("forkbomb on")[i as usize];
            let Some(w) = m.pending.pop_front() else {
                return;
            };
            if self.forkbomb_sleeps(t, i as usize, w) {
                return;
            }
            self.spawn_missing(t, i, w);
        }
    }

    /// Respawns a held worker: into its own struct if still dead, else the
    /// instance's first dead one, and only while the instance is short of
    /// workers (a container restarted meanwhile has forked its own).
    fn spawn_missing(&mut self, t: SimTime, i: u32, w: u32) {
        if self.instances[i as usize].restarting {
            return;
        }
        let live = self
            .instance_workers(i)
            .filter(|&x| self.workers[x as usize].state != WorkerState::Dead)
            .count();
        if live >= self.sc.fleet.workers_per_instance {
            return;
        }
        let dead = |x: u32| self.workers[x as usize].state == WorkerState::Dead;
        let target = if dead(w) {
            Some(w)
        } else {
            self.instance_workers(i).find(|&x| dead(x))
        };
        if let Some(x) = target {
            self.spawn(t, x);
        }
    }
}
