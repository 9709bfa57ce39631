//! Triggers and decisions: RSS samples, per-request checks, lifetimes and
//! instance-memory checks make a worker ask; the policy pipeline answers;
//! this file applies the answer (spend a token, take the lease, drain).

use super::{Event, Sim};
use crate::engine::SimTime;
use crate::engine::rng::{self, Stream, open01};
use crate::fleet::WorkerState;
use crate::metrics::{
    EventKind, LeaseOutcome, Observer, RecycleRecord,
    rows::{Branch, DecisionFacts},
};
use crate::policy::trigger::{DriftCheck, RssMeasure};
use crate::policy::{
    Cause, Decision, GateKind, Pass, Replacement, SampleClock, Sampling, Verdict, View,
};

impl<O: Observer> Sim<'_, O> {
    /// The delay from `t` to a worker's first timer sample: a random phase
    /// of its own, or the next tick of the clock it shares.
    pub(super) fn phase(&self, t: SimTime, w: u32, generation: u32, tick: SimTime) -> SimTime {
        let uniform = |keys: &[u64]| {
            let u = open01(&mut rng::keyed(self.seed, Stream::SamplingPhase, keys));
            SimTime((u * tick.0 as f64) as u64)
        };
        match self.sc.policy.sampling {
            Sampling::Timer {
                clock: SampleClock::PerInstance,
                ..
            } => {
                let i = self.workers[w as usize].instance as u64;
                SampleClock::next_tick_after(t, tick, uniform(&[i, u64::MAX]))
            }
            Sampling::Timer {
                clock: SampleClock::WallClock,
                ..
            } => SampleClock::next_tick_after(t, tick, SimTime::ZERO),
            _ => uniform(&[w as u64, generation as u64]),
        }
    }

    pub(super) fn on_sample(&mut self, t: SimTime, w: u32, generation: u32) {
        let worker = &self.workers[w as usize];
        if worker.generation != generation || worker.state != WorkerState::Serving {
            return;
        }
        let next = self.sc.policy.sampling.next_delay(
            worker.rss_mb - self.measure_offset_mb(w),
            worker.cold.limit_mb,
        );
        if let Some((delay, _near)) = next {
            self.q.schedule(
                t + delay,
                Event::Sample {
                    worker: w,
                    generation,
                },
            );
        }
        self.sample(t, w);
    }

    /// An RSS sample: the RSS trigger, or a trigger that asked before and
    /// was held. (The master's evil kill runs on its own timer: `evil.rs`.)
    pub(super) fn sample(&mut self, t: SimTime, w: u32) {
        if self.rss_trigger_fires(w) {
            self.ask(t, w, Cause::RssLimit);
        } else if let Some(cause) = self.workers[w as usize].cold.wants {
            self.ask(t, w, cause);
        }
    }

    /// The RSS trigger: `consecutive_samples` samples in a row at or over
    /// the limit (1 for the seeds; Granian counts several).
    fn rss_trigger_fires(&mut self, w: u32) -> bool {
        let triggers = &self.sc.policy.triggers;
        if !(triggers.rss_limit || self.sc.saturate) {
            return false;
        }
        let offset = self.measure_offset_mb(w);
        let worker = &mut self.workers[w as usize];
        if worker.rss_mb - offset < worker.cold.limit_mb {
            worker.cold.over_samples = 0;
            return false;
        }
        worker.cold.over_samples = worker.cold.over_samples.saturating_add(1);
        worker.cold.over_samples >= triggers.rss_consecutive_samples
    }

    /// The checks a worker runs after the requests it has just served
    /// (one in exact mode; a step's count in aggregate mode, which fires
    /// each check once, at the step where the count crosses it): `before`
    /// is its served count before them.
    #[inline(always)]
    pub(super) fn after_requests(&mut self, t: SimTime, w: u32, before: u64) {
        if self.sc.policy.triggers.drift.is_some() && self.drift_check(t, w) {
            self.ask(t, w, Cause::Drift);
        }
        let worker = &self.workers[w as usize];
        if worker.state == WorkerState::Serving && worker.requests >= worker.max_requests {
            self.ask(t, w, Cause::MaxRequests);
        }
        if let crate::policy::Sampling::EveryRequests { n } = self.sc.policy.sampling {
            let worker = &self.workers[w as usize];
            // A multiple of n in (before, requests]: one division.
            if worker.state == WorkerState::Serving
                && worker.requests % n < worker.requests - before
            {
                self.sample(t, w);
            }
        }
    }

    /// Leakless: over the drift limit, collect garbage and look again;
    /// returns whether the violation streak reached its threshold.
    #[inline(never)]
    fn drift_check(&mut self, t: SimTime, w: u32) -> bool {
        let drift = self
            .sc
            .policy
            .triggers
            .drift
            .as_ref()
            .expect("drift trigger on");
        let worker = &self.workers[w as usize];
        let over = worker.rss_mb - self.sc.fleet.boot_rss_mb;
        match drift.check(over, worker.cold.drift_limit_mb, worker.cold.garbage_mb) {
            DriftCheck::Ok => self.workers[w as usize].cold.violations = 0,
            DriftCheck::Collected {
                freed_mb,
                still_over,
            } => {
                let rss = (worker.rss_mb - freed_mb).max(self.sc.fleet.boot_rss_mb);
                let rss = self.mem_mb(rss);
                self.set_rss(t, w, rss);
                let worker = &mut self.workers[w as usize];
                worker.cold.garbage_mb = 0.0;
                worker.cold.violations = if still_over {
                    worker.cold.violations + 1
                } else {
                    0
                };
            }
        }
        self.workers[w as usize].cold.violations >= drift.consecutive
    }

    pub(super) fn on_lifetime_due(&mut self, t: SimTime, w: u32, generation: u32) {
        let worker = &mut self.workers[w as usize];
        if worker.generation != generation {
            return;
        }
        match worker.state {
            WorkerState::Serving => self.ask(t, w, Cause::Lifetime),
            // Still booting: it asks at its first sample.
            WorkerState::Booting => worker.cold.wants = Some(Cause::Lifetime),
            WorkerState::Draining | WorkerState::Dead => {}
        }
    }

    /// puma_worker_killer's check: over the fraction, the largest worker asks.
    pub(super) fn on_instance_check(&mut self, t: SimTime, i: u32) {
        let im = self
            .sc
            .policy
            .triggers
            .instance_memory
            .as_ref()
            .expect("trigger on");
        self.q
            .schedule(t + im.frequency, Event::InstanceCheck { instance: i });
        let cgroup = self.instances[i as usize].usage_mb(self.sc.fleet.master_mb);
        let ws = self.instance_workers(i);
        let live = ws
            .clone()
            .filter(|&w| self.workers[w as usize].state != WorkerState::Dead);
        // The pages the live workers share with the master, once per worker.
        let shared = if self.sc.fleet.cow.is_some() {
            live.map(|w| self.workers[w as usize].shared_mb).sum()
        } else {
            live.count() as f64 * self.sc.fleet.shared_mb
        };
        let usage = im.measure.of(cgroup, shared);
        if usage <= im.percent_usage * self.sc.fleet.container_mb {
            return;
        }
        let asks = |w: &crate::fleet::Worker| {
            w.state == WorkerState::Serving && w.cold.successor.is_none()
        };
        if let Some(w) = self.largest_worker(ws, asks) {
            self.ask(t, w, Cause::InstanceMemory);
        }
    }

    /// RSS minus the RSS trigger's measure of worker `w` (0 for RSS, the
    /// pages it still shares for private memory): its limit applies to RSS
    /// - this.
    pub(super) fn measure_offset_mb(&self, w: u32) -> f64 {
        let measure = self.sc.policy.triggers.rss_measure;
        let worker = &self.workers[w as usize];
        let sharers = match measure {
            RssMeasure::Pss => 1 + self.live_workers(worker.instance),
            RssMeasure::Rss | RssMeasure::Private | RssMeasure::Peak => 1,
        };
        measure.offset_mb(worker.shared_mb, sharers, worker.peak_mb - worker.rss_mb)
    }

    /// The same offset for a worker that has served `n` requests, in a
    /// full instance (the window's start).
    pub(super) fn offset_at(&self, n: u64) -> f64 {
        let sharers = 1 + self.sc.fleet.workers_per_instance;
        (self.sc.policy.triggers.rss_measure).offset_mb(self.shared_at(n), sharers, 0.0)
    }

    /// The processes of instance `i` other than its master.
    fn live_workers(&self, i: u32) -> usize {
        self.instance_workers(i)
            .filter(|&w| self.workers[w as usize].state != WorkerState::Dead)
            .count()
    }

    fn view(&self, t: SimTime, w: u32, since: SimTime) -> View {
        let worker = &self.workers[w as usize];
        let i = worker.instance as usize;
        let serving_after = self.counts.serving - (worker.state == WorkerState::Serving) as u32;
        View {
            now: t,
            rss_mb: worker.rss_mb,
            hard_limit_mb: self.sc.policy.hard_limit_mb,
            headroom_mb: self.headroom(worker.instance),
            last_recycle_age_s: self.instances[i]
                .last_recycle
                .map(|s| (t - s).as_secs_f64()),
            // (0 when no gate reads it: the window is not kept, `rate_window`.)
            instance_rps: self.instances[i].arrivals.rate(t),
            over_limit_age_s: (t - since).as_secs_f64(),
            worker_age_s: (t - worker.cold.spawned_at).as_secs_f64(),
            serving_after,
        }
    }

    /// A trigger fired: ask the pipeline, apply the answer.
    #[inline(never)]
    fn ask(&mut self, t: SimTime, w: u32, cause: Cause) {
        let worker = &self.workers[w as usize];
        if worker.state != WorkerState::Serving || worker.cold.successor.is_some() {
            return; // not serving, or its replacement is already booting
        }
        if matches!(self.sc.policy.replacement, Replacement::SpawnThenExit)
            && !self.has_spare(worker.instance)
        {
            // Every spare struct is taken: a predecessor handed over but is
            // still draining (a second recycle inside one graceful timeout).
            // The worker asks again at its next sample, once one has exited.
            // (Found by the `sim` fuzz target: the fork used to panic here.)
            self.workers[w as usize].cold.wants = Some(cause);
            return;
        }
        if self.handover_waits(w) {
            return; // Granian: its granted handover waits for its turn
        }
        let since = *self.workers[w as usize].cold.wants_since.get_or_insert(t);
        let view = self.view(t, w, since);
        let decision = self.sc.policy.pipeline.decide(&view, &mut self.gates);
        let facts = DecisionFacts {
            pressure: decision.pressure,
            headroom_mb: view.headroom_mb,
            lease: lease_outcome(&decision),
            branch: Branch::Decided(decision),
            cause: Some(cause),
            last_recycle_age_s: view.last_recycle_age_s,
        };
        match decision.verdict {
            Verdict::Recycle => self.recycle(t, w, cause, &decision, facts),
            Verdict::Hold(h) => {
                self.workers[w as usize].cold.wants = Some(cause);
                self.m.hold(h);
                self.worker_row(t, w, EventKind::RecycleHeld, Some(facts));
            }
        }
    }

    /// Applies an allowed recycle: spend what the gates grant, stamp the
    /// instance's cooldown, record, drain.
    fn recycle(&mut self, t: SimTime, w: u32, cause: Cause, d: &Decision, facts: DecisionFacts) {
        self.sc.policy.pipeline.grant(d, &mut self.gates, t, w);
        let worker = &self.workers[w as usize];
        let i = worker.instance;
        self.instances[i as usize].last_recycle = Some(t);
        self.m.recycles.push(RecycleRecord {
            t,
            instance: i,
            age: t - worker.cold.spawned_at,
            requests: worker.requests,
            margin_mb: worker.rss_mb - self.measure_offset_mb(w) - worker.cold.limit_mb,
            rss_mb: worker.rss_mb,
            pressure: d.pressure,
            cause,
            passes: d.passes,
        });
        self.step.recycles += 1;
        self.worker_row(t, w, EventKind::WorkerRecycled, Some(facts));
        match self.sc.policy.replacement {
            Replacement::ExitThenSpawn => self.begin_drain(t, w),
            Replacement::SpawnThenExit => self.spawn_successor(t, w),
            Replacement::DetachAndSpawn { .. } => self.detach_and_spawn(t, w),
            Replacement::TimedHandover { .. } => self.request_handover(t, w),
        }
    }
}

/// The `lease` column: what the lease gate said, if the worker reached it.
fn lease_outcome(d: &Decision) -> LeaseOutcome {
    match (d.verdict, d.passes.of(GateKind::Lease)) {
        (Verdict::Hold(crate::policy::gates::lease::HOLD), _) => LeaseOutcome::Held,
        (_, Some(Pass::Open)) => LeaseOutcome::Acquired,
        (_, Some(Pass::ExitPressure)) => LeaseOutcome::BypassedPressure,
        (_, Some(Pass::ExitHardCeiling)) => LeaseOutcome::BypassedHardCeiling,
        _ => LeaseOutcome::None,
    }
}
