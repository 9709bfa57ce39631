//! puma_worker_killer's rolling restart (`[policy.rolling_restart]`): one
//! clock per master, not a lifetime per worker.
//!
//! Read at zombocom/puma_worker_killer db7b26f: `enable_rolling_restart`
//! adds `rand(splay_seconds)` to the frequency once, when the master
//! starts the gem (`lib/puma_worker_killer.rb:35-40`: 6 h + 0-300 s by
//! default, `:15-16`), and `AutoReap` loops `sleep timeout; reap`
//! (`auto_reap.rb:14-19`). `RollingRestart#reap` (`rolling_restart.rb:15-26`)
//! reads every worker's memory, then TERMs them in that order, smallest
//! first (`puma_memory.rb:70-78`), sleeping 60 s after each: a cycle is
//! `frequency + splay + workers x 60 s`. A TERM is a graceful puma worker
//! shutdown, and the master forks the replacement; here it asks the
//! policy as the lifetime trigger (`recycles_lifetime`, `trigger =
//! lifetime` in events.csv), so a booting worker asks once it serves.
//! With `fleet.warm_start` the master has been up for a uniform part of
//! its first sleep when the window opens; a container restarted whole
//! (`[platform] oom_group`) is a new master with a new splay.

use super::super::{Event, Sim};
use crate::engine::SimTime;
use crate::engine::rng::{self, Stream, open01};
use crate::fleet::WorkerState;
use crate::metrics::Observer;
use crate::policy::replace::memory_order;
use std::collections::VecDeque;

/// One master's rolling-restart thread.
#[derive(Default)]
pub(super) struct Clock {
    /// Master boots so far: an event of an earlier master is ignored.
    epoch: u32,
    /// This master's sleep between cycles (frequency + its splay).
    period: SimTime,
    /// The cycle under way: workers still to TERM, in memory order.
    order: VecDeque<(u32, u32)>,
}

impl<O: Observer> Sim<'_, O> {
    /// A master boots (the window's start, a container restart): it draws
    /// its splay and starts its clock.
    pub(in crate::sim) fn rolling_boot(&mut self, t: SimTime, i: u32) {
        let Some(rr) = self.sc.policy.modes.rolling_restart else {
            return;
        };
        let clocks = self.replace.rolling.as_mut().expect("rolling restart on");
        let c = &mut clocks[i as usize];
        c.epoch += 1;
        c.order.clear();
        let mut draw = rng::keyed(
            self.seed,
            Stream::RollingRestart,
            &[i as u64, c.epoch as u64],
        );
        let (u_splay, u_phase) = (open01(&mut draw), open01(&mut draw));
        c.period = rr.period(u_splay);
        let first = if t == SimTime::ZERO && self.sc.fleet.warm_start {
            SimTime(((u_phase * c.period.0 as f64) as u64).max(1))
        } else {
            c.period
        };
        let epoch = c.epoch;
        self.q
            .schedule(t + first, Event::RollingRestart { instance: i, epoch });
    }

    /// The clock's thread wakes: at a cycle's start it reads the workers'
    /// memory; then it TERMs the next worker and sleeps.
    pub(in crate::sim) fn on_rolling_restart(&mut self, t: SimTime, i: u32, epoch: u32) {
        let rr = self
            .sc
            .policy
            .modes
            .rolling_restart
            .expect("rolling restart on");
        let clocks = self.replace.rolling.as_ref().expect("rolling restart on");
        if clocks[i as usize].epoch != epoch {
            return;
        }
        if clocks[i as usize].order.is_empty() {
            let mut ws: Vec<(u32, f64)> = self
                .instance_workers(i)
                .filter(|&w| {
                    let s = self.workers[w as usize].state;
                    matches!(s, WorkerState::Serving | WorkerState::Booting)
                })
                .map(|w| (w, self.workers[w as usize].rss_mb))
                .collect();
            memory_order(&mut ws);
            let order: VecDeque<(u32, u32)> = ws
                .iter()
                .map(|&(w, _)| (w, self.workers[w as usize].generation))
                .collect();
            let period = clocks[i as usize].period;
            if order.is_empty() {
                // `return false unless @cluster.running?`: sleep again.
                self.q
                    .schedule(t + period, Event::RollingRestart { instance: i, epoch });
                return;
            }
            self.replace.n.rolling_cycles += 1;
            self.replace.rolling.as_mut().expect("on")[i as usize].order = order;
        }
        let c = &mut self.replace.rolling.as_mut().expect("on")[i as usize];
        let (w, generation) = c.order.pop_front().expect("a cycle has workers");
        let next = if c.order.is_empty() {
            t + rr.interval + c.period
        } else {
            t + rr.interval
        };
        self.q
            .schedule(next, Event::RollingRestart { instance: i, epoch });
        // `worker.term` on a process that is gone already does nothing.
        if self.workers[w as usize].generation == generation {
            self.replace.n.rolling_terms += 1;
            self.on_lifetime_due(t, w, generation);
        }
    }
}
