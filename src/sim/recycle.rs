//! The worker life cycle: spawn, boot, RSS growth, sampling, the recycle
//! decision, drain, exit, and the kernel's OOM kill.

use super::{Event, Sim};
use crate::engine::SimTime;
use crate::engine::rng::{self, Stream, StreamRng, open01};
use crate::fleet::{Worker, WorkerState};
use crate::metrics::{
    EventKind, EventRow, LeaseOutcome, Observer, RecycleRecord,
    rows::{DecisionFacts, WorkerFacts},
};
use crate::policy::{Allow, Decision, Hold, RecycleView};
use crate::scenario::Sampling;

/// What a freshly forked worker draws: its limit, leak velocity, noise
/// stream and sampling phase, keyed by (slot, generation) so every policy
/// sees the same k-th worker of a slot.
struct Draws {
    limit_mb: f64,
    velocity: f64,
    noise: StreamRng,
}

/// Caps the warm-start ageing loop (a worker that never reaches its limit).
const WARM_START_MAX_REQUESTS: u64 = 1_000_000;

impl<O: Observer> Sim<'_, O> {
    fn draws(&self, w: u32, generation: u32) -> Draws {
        let keys = [w as u64, generation as u64];
        let p = &self.sc.policy;
        let u = open01(&mut rng::keyed(self.seed, Stream::Jitter, &keys));
        // Uniform on [base - jitter, base + jitter), whole MB: 500 +- 40 -> 460..539.
        let limit_mb = (p.base_limit_mb - p.jitter_mb + u * 2.0 * p.jitter_mb).floor();
        let mut leak_rng = rng::keyed(self.seed, Stream::Leak, &keys);
        Draws {
            limit_mb: limit_mb.max(p.base_limit_mb - p.jitter_mb),
            velocity: self.sc.fleet.leak.velocity.sample(&mut leak_rng),
            noise: rng::keyed(self.seed, Stream::MemoryNoise, &keys),
        }
    }

    fn phase(&self, w: u32, generation: u32, tick: SimTime) -> SimTime {
        let u = open01(&mut rng::keyed(
            self.seed,
            Stream::SamplingPhase,
            &[w as u64, generation as u64],
        ));
        SimTime((u * tick.0 as f64) as u64)
    }

    /// A generation-0 worker at time zero; with `warm_start` it has already
    /// served a uniform fraction of the requests that take it to its limit.
    pub(super) fn initial_worker(&self, w: u32) -> Worker {
        let f = &self.sc.fleet;
        let d = self.draws(w, 0);
        let mut worker = Worker {
            instance: w / f.workers_per_instance as u32,
            slot: w % f.workers_per_instance as u32,
            generation: 0,
            state: WorkerState::Serving,
            spawned_at: SimTime::ZERO,
            rss_mb: f.boot_rss_mb,
            limit_mb: d.limit_mb,
            velocity_mb_per_request: d.velocity,
            warm_left_mb: f.leak.warmup_mb,
            requests: 0,
            in_flight: 0,
            slots: vec![None; f.concurrency],
            over_limit_since: None,
            over_ceiling_since: None,
            rss_changed_at: SimTime::ZERO,
            noise: d.noise,
        };
        if f.warm_start {
            self.age(&mut worker, w);
        }
        worker
    }

    fn age(&self, worker: &mut Worker, w: u32) {
        let leak = &self.sc.fleet.leak;
        let (mut rss, mut warm, mut noise) =
            (worker.rss_mb, worker.warm_left_mb, worker.noise.clone());
        let mut to_limit = 0;
        while rss < worker.limit_mb && to_limit < WARM_START_MAX_REQUESTS {
            rss += leak.growth(worker.velocity_mb_per_request, &mut warm, &mut noise);
            to_limit += 1;
        }
        let u = open01(&mut rng::keyed(self.seed, Stream::WarmStart, &[w as u64]));
        let served = (u * to_limit as f64) as u64;
        for _ in 0..served {
            worker.rss_mb += leak.growth(
                worker.velocity_mb_per_request,
                &mut worker.warm_left_mb,
                &mut worker.noise,
            );
        }
        worker.requests = served;
    }

    /// Sum of `rss - shared` over the instance's workers, from scratch (kept
    /// exact at spawns and exits; incremental between).
    pub(super) fn recompute_private(&mut self, i: u32) {
        let wpi = self.sc.fleet.workers_per_instance;
        let first = self.instances[i as usize].first_worker as usize;
        let shared = self.sc.fleet.shared_mb;
        self.instances[i as usize].private_mb = self.workers[first..first + wpi]
            .iter()
            .map(|w| w.rss_mb - shared)
            .sum();
    }

    pub(super) fn on_boot_done(&mut self, t: SimTime, w: u32, generation: u32) {
        let worker = &self.workers[w as usize];
        if worker.generation != generation || worker.state != WorkerState::Booting {
            return;
        }
        self.set_state(t, w, WorkerState::Serving);
        self.after_boot(t, w);
    }

    /// A worker starts serving: first sample, then fill its slots.
    pub(super) fn after_boot(&mut self, t: SimTime, w: u32) {
        let generation = self.workers[w as usize].generation;
        if let Sampling::Timer { tick } = self.sc.policy.sampling {
            let at = t + self.phase(w, generation, tick);
            self.q.schedule(
                at,
                Event::Sample {
                    worker: w,
                    generation,
                },
            );
        }
        let i = self.workers[w as usize].instance;
        for slot in 0..self.sc.fleet.concurrency as u32 {
            match self.next_from_backlog(t, i) {
                Some(req) => self.start_service(t, w, slot, req),
                None => self.instances[i as usize].idle.push_back((w, generation)),
            }
        }
    }

    /// One served request's worth of RSS growth.
    pub(super) fn grow(&mut self, t: SimTime, w: u32) {
        let leak = &self.sc.fleet.leak;
        let worker = &mut self.workers[w as usize];
        let d = leak.growth(
            worker.velocity_mb_per_request,
            &mut worker.warm_left_mb,
            &mut worker.noise,
        );
        if d > 0.0 {
            let rss = self.workers[w as usize].rss_mb + d;
            self.set_rss(t, w, rss);
        }
    }

    fn set_rss(&mut self, t: SimTime, w: u32, rss: f64) {
        let hard = self.sc.policy.hard_limit_mb;
        let worker = &mut self.workers[w as usize];
        let old = worker.rss_mb;
        if old > hard {
            self.m.overshoot_mb_us += (old - hard) * (t - worker.rss_changed_at).0 as f64;
        }
        worker.rss_changed_at = t;
        worker.rss_mb = rss;
        if rss >= hard && worker.over_ceiling_since.is_none() {
            worker.over_ceiling_since = Some(t);
        }
        self.instances[worker.instance as usize].private_mb += rss - old;
        self.m.max_rss_mb = self.m.max_rss_mb.max(rss);
        self.m.max_overshoot_mb = self.m.max_overshoot_mb.max(rss - hard);
    }

    /// Closes the overshoot integral and the over-ceiling dwell at `t`.
    pub(super) fn close_rss_accounting(&mut self, t: SimTime, w: u32) {
        let hard = self.sc.policy.hard_limit_mb;
        let worker = &mut self.workers[w as usize];
        if worker.rss_mb > hard {
            self.m.overshoot_mb_us += (worker.rss_mb - hard) * (t - worker.rss_changed_at).0 as f64;
        }
        worker.rss_changed_at = t;
        if let Some(since) = worker.over_ceiling_since {
            self.m.over_ceiling_dwell_max = self.m.over_ceiling_dwell_max.max(t - since);
        }
    }

    pub(super) fn on_sample(&mut self, t: SimTime, w: u32, generation: u32) {
        let worker = &self.workers[w as usize];
        if worker.generation != generation || worker.state != WorkerState::Serving {
            return;
        }
        if let Sampling::Timer { tick } = self.sc.policy.sampling {
            self.q.schedule(
                t + tick,
                Event::Sample {
                    worker: w,
                    generation,
                },
            );
        }
        self.sample(t, w);
    }

    fn view(&self, t: SimTime, w: u32, over_since: SimTime) -> RecycleView {
        let worker = &self.workers[w as usize];
        let inst = &self.instances[worker.instance as usize];
        RecycleView {
            rss_mb: worker.rss_mb,
            hard_limit_mb: self.sc.policy.hard_limit_mb,
            headroom_mb: self.headroom(worker.instance),
            last_recycle_age_s: inst.last_recycle.map(|s| (t - s).as_secs_f64()),
            instance_rps: inst.arrivals.rate(t),
            over_limit_age_s: (t - over_since).as_secs_f64(),
            lease_free: self.lease.is_free(t),
        }
    }

    pub(super) fn headroom(&self, i: u32) -> f64 {
        self.sc.fleet.container_mb - self.instances[i as usize].usage_mb(self.sc.fleet.boot_rss_mb)
    }

    /// An RSS sample: over the limit, ask the policy and apply its answer.
    pub(super) fn sample(&mut self, t: SimTime, w: u32) {
        let worker = &mut self.workers[w as usize];
        if worker.rss_mb < worker.limit_mb {
            return;
        }
        let since = *worker.over_limit_since.get_or_insert(t);
        let view = self.view(t, w, since);
        let recycler = &self.sc.policy.recycler;
        let decision = recycler.decide(&view);
        let (lease, branch) = match decision {
            Decision::Recycle(a) => (
                match a {
                    Allow::LeaseAcquired => LeaseOutcome::Acquired,
                    Allow::BypassPressure => LeaseOutcome::BypassedPressure,
                    Allow::BypassHardCeiling => LeaseOutcome::BypassedHardCeiling,
                    Allow::NoLease => LeaseOutcome::None,
                },
                a.label(),
            ),
            Decision::Hold(Hold::LeaseHeld) => (LeaseOutcome::Held, Hold::LeaseHeld.label()),
            Decision::Hold(h) => (LeaseOutcome::None, h.label()),
        };
        let facts = DecisionFacts {
            pressure: recycler.pressure(&view),
            headroom_mb: view.headroom_mb,
            lease,
            branch,
            last_recycle_age_s: view.last_recycle_age_s,
        };
        match decision {
            Decision::Recycle(allow) => self.recycle(t, w, allow, facts),
            Decision::Hold(h) => {
                self.m.hold(h);
                self.worker_row(t, w, EventKind::RecycleHeld, Some(facts));
            }
        }
    }

    fn recycle(&mut self, t: SimTime, w: u32, allow: Allow, facts: DecisionFacts) {
        if allow == Allow::LeaseAcquired {
            let ttl = self
                .sc
                .policy
                .lease_ttl
                .expect("LeaseAcquired needs a lease");
            let took = self.lease.try_acquire(t, ttl, w);
            assert!(took, "the policy saw a free lease that was not free");
        }
        let worker = &self.workers[w as usize];
        let i = worker.instance;
        self.instances[i as usize].last_recycle = Some(t);
        self.m.recycles.push(RecycleRecord {
            t,
            instance: i,
            requests: worker.requests,
            margin_mb: worker.rss_mb - worker.limit_mb,
            rss_mb: worker.rss_mb,
            pressure: facts.pressure,
            allow,
        });
        self.step.recycles += 1;
        self.worker_row(t, w, EventKind::WorkerRecycled, Some(facts));
        self.begin_drain(t, w);
    }

    fn begin_drain(&mut self, t: SimTime, w: u32) {
        self.set_state(t, w, WorkerState::Draining);
        let worker = &self.workers[w as usize];
        if worker.in_flight == 0 {
            self.exit(t, w);
        } else {
            let generation = worker.generation;
            self.q.schedule(
                t + self.sc.fleet.graceful_timeout,
                Event::DrainDeadline {
                    worker: w,
                    generation,
                },
            );
        }
    }

    pub(super) fn on_drain_deadline(&mut self, t: SimTime, w: u32, generation: u32) {
        let worker = &self.workers[w as usize];
        if worker.generation != generation || worker.state != WorkerState::Draining {
            return;
        }
        self.m.drain_kills += 1;
        self.worker_row(t, w, EventKind::DrainKilled, None);
        self.kill_in_flight(t, w);
        self.exit(t, w);
    }

    /// Fails every request in flight on `w` with a connection reset.
    fn kill_in_flight(&mut self, t: SimTime, w: u32) {
        let i = self.workers[w as usize].instance;
        for slot in 0..self.sc.fleet.concurrency {
            if let Some(req) = self.workers[w as usize].slots[slot].take() {
                self.workers[w as usize].in_flight -= 1;
                self.instances[i as usize].outstanding -= 1;
                self.connection_error(t, i, req);
            }
        }
    }

    /// The process exits: its connections go stale for the client, and the
    /// master forks a replacement, which boots before it serves.
    pub(super) fn exit(&mut self, t: SimTime, w: u32) {
        debug_assert_eq!(self.workers[w as usize].in_flight, 0);
        self.close_rss_accounting(t, w);
        let i = self.workers[w as usize].instance;
        let stale_until = t + self.sc.client.stale_window;
        for _ in 0..self.sc.client.keepalive_conns_per_worker {
            self.instances[i as usize]
                .stale_conns
                .push_back(stale_until);
        }
        self.set_state(t, w, WorkerState::Booting);
        let generation = self.workers[w as usize].generation + 1;
        let d = self.draws(w, generation);
        let f = &self.sc.fleet;
        let worker = &mut self.workers[w as usize];
        worker.generation = generation;
        worker.spawned_at = t;
        worker.rss_mb = f.boot_rss_mb;
        worker.limit_mb = d.limit_mb;
        worker.velocity_mb_per_request = d.velocity;
        worker.warm_left_mb = f.leak.warmup_mb;
        worker.requests = 0;
        worker.over_limit_since = None;
        worker.over_ceiling_since = None;
        worker.rss_changed_at = t;
        worker.noise = d.noise;
        self.recompute_private(i);
        self.q.schedule(
            t + f.boot,
            Event::BootDone {
                worker: w,
                generation,
            },
        );
        self.oom_check(t, i);
    }

    /// The kernel: while the instance is over its cgroup limit, SIGKILL the
    /// largest worker. Returns whether anything was killed.
    ///
    /// Runs after every served request, and almost always finds room: the
    /// check is inlined, the kills are not.
    #[inline]
    pub(super) fn oom_check(&mut self, t: SimTime, i: u32) -> bool {
        self.over_cgroup(i) && self.oom_kill(t, i)
    }

    fn over_cgroup(&self, i: u32) -> bool {
        self.instances[i as usize].usage_mb(self.sc.fleet.boot_rss_mb) > self.sc.fleet.container_mb
    }

    #[cold]
    #[inline(never)]
    fn oom_kill(&mut self, t: SimTime, i: u32) -> bool {
        let wpi = self.sc.fleet.workers_per_instance;
        let first = self.instances[i as usize].first_worker;
        let mut kills = 0;
        while self.over_cgroup(i) {
            assert!(
                kills < 2 * wpi,
                "OOM loop on instance {i}: usage cannot fit"
            );
            let victim = (first..first + wpi as u32)
                .max_by(|a, b| {
                    let (ra, rb) = (
                        self.workers[*a as usize].rss_mb,
                        self.workers[*b as usize].rss_mb,
                    );
                    ra.total_cmp(&rb).then(b.cmp(a))
                })
                .expect("an instance has workers");
            self.m.oom_kills += 1;
            let facts = DecisionFacts {
                pressure: true,
                headroom_mb: self.headroom(i),
                lease: LeaseOutcome::None,
                branch: "oom_kill",
                last_recycle_age_s: self.instances[i as usize]
                    .last_recycle
                    .map(|s| (t - s).as_secs_f64()),
            };
            self.worker_row(t, victim, EventKind::OomKill, Some(facts));
            self.kill_in_flight(t, victim);
            self.exit(t, victim);
            kills += 1;
        }
        kills > 0
    }

    fn worker_row(&mut self, t: SimTime, w: u32, kind: EventKind, decision: Option<DecisionFacts>) {
        let worker = &self.workers[w as usize];
        let row = EventRow {
            t,
            kind,
            instance: worker.instance,
            worker: Some(WorkerFacts {
                slot: worker.slot,
                generation: worker.generation,
                rss_mb: worker.rss_mb,
                limit_mb: worker.limit_mb,
                requests: worker.requests,
            }),
            decision,
            latency_ms: None,
        };
        self.obs.event(&row);
    }
}
