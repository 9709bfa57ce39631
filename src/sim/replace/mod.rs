//! The replacement modes beyond exit-then-spawn and spawn-then-exit, one
//! file each: Passenger's detach-and-spawn (`detach.rs`), Granian's timed
//! serial handover (`handover.rs`), puma_worker_killer's rolling-restart
//! clock (`rolling.rs`), uWSGI's fork-bomb delay (`forkbomb.rs`) and the
//! cold-start penalty (`cold.rs`). Their state lives here, apart from the
//! fleet's; each part is `None` when its mode is off, and the loop's hooks
//! (`Sim::respawn`, `Sim::after_exit`, the cold branch of `start_service`)
//! test that first, so a scenario without them runs as before.

mod cold;
mod detach;
mod forkbomb;
mod handover;
mod rolling;

use super::Sim;
use crate::metrics::{Observer, ReplacementTotals};
use crate::policy::Replacement;
use crate::scenario::Scenario;

pub(super) use handover::Server;

/// The modes' per-instance state and their counters.
pub(super) struct State {
    /// Granian: one handover queue per server (instance).
    handover: Option<Vec<Server>>,
    /// puma_worker_killer: one rolling-restart clock per master.
    rolling: Option<Vec<rolling::Clock>>,
    /// uWSGI: one master's respawn counter and sleep per instance.
    forkbomb: Option<Vec<forkbomb::Master>>,
    n: Counts,
}

#[derive(Default)]
struct Counts {
    detached_spawns: u64,
    handovers: u64,
    handovers_waited: u64,
    handover_wait_s_max: f64,
    rolling_cycles: u64,
    rolling_terms: u64,
    forkbomb_sleeps: u64,
    forkbomb_delayed: u64,
    cold_requests: u64,
}

impl State {
    pub(super) fn new(sc: &Scenario) -> Self {
        let n = sc.fleet.instances;
        let m = &sc.policy.modes;
        State {
            handover: matches!(sc.policy.replacement, Replacement::TimedHandover { .. })
                .then(|| (0..n).map(|_| Server::default()).collect()),
            rolling: m
                .rolling_restart
                .map(|_| (0..n).map(|_| rolling::Clock::default()).collect()),
            forkbomb: m
                .forkbomb
                .map(|_| (0..n).map(|_| forkbomb::Master::default()).collect()),
            n: Counts::default(),
        }
    }
}

impl<O: Observer> Sim<'_, O> {
    /// At the window's start: the rolling-restart clocks.
    pub(super) fn start_replace(&mut self) {
        if self.replace.rolling.is_some() {
            for i in 0..self.instances.len() as u32 {
                self.rolling_boot(crate::engine::SimTime::ZERO, i);
            }
        }
    }

    /// The master respawns an exited worker into its struct: at once, or
    /// after uWSGI's fork-bomb sleep.
    #[inline]
    pub(super) fn respawn(&mut self, t: crate::engine::SimTime, w: u32) {
        if self.replace.forkbomb.is_some() {
            self.forkbomb_respawn(t, w);
        } else {
            self.spawn(t, w);
        }
    }

    /// Granian: server `i`'s handover under way, if any: its old worker
    /// (struct, generation) and when it began.
    pub(super) fn handover_current(
        &self,
        i: usize,
    ) -> Option<((u32, u32), crate::engine::SimTime)> {
        self.replace.handover.as_ref().and_then(|s| s[i].current())
    }

    /// Whether Granian's timed handover is the replacement.
    pub(super) fn replace_handover_on(&self) -> bool {
        self.replace.handover.is_some()
    }

    /// After worker `w` (generation `generation`) has exited: Granian's
    /// next handover may start.
    #[inline]
    pub(super) fn after_exit(&mut self, t: crate::engine::SimTime, w: u32, generation: u32) {
        if self.replace.handover.is_some() {
            self.handover_exited(t, w, generation);
        }
    }

    /// The modes' figures for summary.json, each only when its mode is on.
    pub(super) fn replacement_totals(&self) -> ReplacementTotals {
        let sc = self.sc;
        let n = &self.replace.n;
        let detach = matches!(sc.policy.replacement, Replacement::DetachAndSpawn { .. });
        let timed = self.replace.handover.is_some();
        let on = |b: bool, v: u64| b.then_some(v);
        ReplacementTotals {
            proxy_queue_503: on(detach, self.m.failed_backlog_full),
            detached_spawns: on(detach, n.detached_spawns),
            handovers: on(timed, n.handovers),
            handovers_waited: on(timed, n.handovers_waited),
            handover_wait_s_max: timed.then_some(n.handover_wait_s_max),
            rolling_restart_cycles: on(self.replace.rolling.is_some(), n.rolling_cycles),
            rolling_restart_terms: on(self.replace.rolling.is_some(), n.rolling_terms),
            forkbomb_sleeps: on(self.replace.forkbomb.is_some(), n.forkbomb_sleeps),
            forkbomb_delayed_respawns: on(self.replace.forkbomb.is_some(), n.forkbomb_delayed),
            cold_start_requests: on(sc.policy.modes.cold_start.is_some(), n.cold_requests),
        }
    }
}
