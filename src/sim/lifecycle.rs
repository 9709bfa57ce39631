//! The worker life cycle: spawn, boot, RSS growth, drain, exit, and the
//! kernel's OOM kill.

use super::memory::{overshoot_q, quantize_mb, set_rss_in, unshare_in};
use super::warm::Life;
use super::{Event, Sim};
use crate::engine::SimTime;
use crate::engine::rng::{self, Stream, StreamRng, open01};
use crate::fleet::{Worker, WorkerCold, WorkerState};
use crate::metrics::{
    EventKind, EventRow, LeaseOutcome, Observer,
    rows::{DecisionFacts, WorkerFacts},
};
use crate::scenario::{Connections, Replacement};

/// What a freshly forked worker draws, keyed by (slot, generation) so every
/// policy sees the same k-th worker of a slot (common random numbers).
struct Draws {
    limit_mb: f64,
    velocity: f64,
    noise: StreamRng,
    max_requests: u64,
    drift_limit_mb: f64,
    lifetime: Option<SimTime>,
}

impl<O: Observer> Sim<'_, O> {
    fn draws(&self, w: u32, generation: u32) -> Draws {
        self.draws_keyed(w, &[w as u64, generation as u64])
    }

    /// `draws` under any keys: a warm-started worker's earlier lives
    /// (`warm::Life`) draw under keys no generation has.
    fn draws_keyed(&self, w: u32, keys: &[u64]) -> Draws {
        let p = &self.sc.policy;
        let slot = w % self.spi as u32;
        let u = open01(&mut rng::keyed(self.seed, Stream::Jitter, keys));
        // Uniform on [base - jitter, base + jitter), whole MB: 500 +- 40 -> 460..539.
        let limit_mb = (p.base_limit_mb - p.jitter_mb + u * 2.0 * p.jitter_mb).floor();
        let mut leak_rng = rng::keyed(self.seed, Stream::Leak, keys);
        let mut trig = rng::keyed(self.seed, Stream::Trigger, keys);
        let (u_req, u_drift, u_life) = (open01(&mut trig), open01(&mut trig), open01(&mut trig));
        let t = &p.triggers;
        let limit_mb = if self.sc.saturate {
            self.sc.fleet.boot_rss_mb
        } else {
            limit_mb.max(p.base_limit_mb - p.jitter_mb)
        };
        Draws {
            limit_mb,
            velocity: self.sc.fleet.leak.velocity.sample(&mut leak_rng),
            noise: rng::keyed(self.seed, Stream::MemoryNoise, keys),
            max_requests: t
                .max_requests
                .as_ref()
                .map_or(u64::MAX, |m| m.limit(slot, u_req)),
            drift_limit_mb: t.drift.as_ref().map_or(f64::INFINITY, |d| d.limit(u_drift)),
            lifetime: t.lifetime.as_ref().map(|l| l.of(slot, u_life)),
        }
    }

    /// A generation-0 worker at time zero, in life `life` (`warm::Life`);
    /// with `warm_start` it has already served a uniform fraction of the
    /// requests that take it to its limit. Returns it and, under a lifetime
    /// trigger, the time left of its life; `start` schedules its events
    /// once its instance is settled (`warm::settle_warm`).
    pub(super) fn initial_worker(&self, w: u32, life: Life) -> (Worker, Option<SimTime>) {
        let f = &self.sc.fleet;
        let d = match life.keys(w) {
            None => self.draws(w, 0),
            Some(keys) => self.draws_keyed(w, &keys),
        };
        let slot = w % self.spi as u32;
        let spare = slot as usize >= f.workers_per_instance;
        let boot_mb = self.mem_mb(f.boot_rss_mb);
        let mut worker = Worker {
            instance: w / self.spi as u32,
            generation: 0,
            state: if spare {
                WorkerState::Dead
            } else {
                WorkerState::Serving
            },
            rss_mb: boot_mb,
            peak_mb: boot_mb,
            shared_mb: self.mem_mb(f.shared_mb),
            velocity_mb_per_request: d.velocity,
            warm_left_mb: f.leak.warmup_mb,
            requests: 0,
            in_flight: 0,
            max_requests: d.max_requests,
            rss_changed_at: SimTime::ZERO,
            noise: d.noise,
            cold: Box::new(WorkerCold {
                slot,
                spawned_at: SimTime::ZERO,
                serving_since: SimTime::ZERO,
                limit_mb: d.limit_mb,
                wants_since: None,
                wants: None,
                drift_limit_mb: d.drift_limit_mb,
                garbage_mb: 0.0,
                violations: 0,
                over_samples: 0,
                successor: None,
                replaces: None,
                over_ceiling_since: None,
                next_step_at: u64::MAX,
                surge_episode: usize::MAX,
                surge_left_mb: 0.0,
            }),
        };
        if spare {
            return (worker, None);
        }
        let warm = f.warm_start && life.ages();
        if self.agg.is_some() {
            self.age_leaping(&mut worker, w, life);
        } else if warm {
            self.age(&mut worker, w, life);
        }
        worker.shared_mb = self.shared_at(worker.requests);
        worker.peak_mb = worker.rss_mb;
        let left = d.lifetime.map(|life_s| {
            // A warm worker is part-way through its life as well.
            if warm {
                SimTime((self.warm_fraction(w, life, 1) * life_s.0 as f64) as u64)
            } else {
                life_s
            }
        });
        (worker, left)
    }

    /// The fleet at time zero: every worker forked and serving.
    pub(super) fn start(&mut self) {
        let n = self.sc.fleet.instances * self.spi;
        let (mut lives, mut left) = (vec![Life::OWN; n], Vec::with_capacity(n));
        for w in 0..n as u32 {
            let (worker, l) = self.initial_worker(w, Life::OWN);
            if worker.state == WorkerState::Dead {
                self.instances[worker.instance as usize].dead += 1;
            }
            self.workers.push(worker);
            left.push(l);
        }
        self.counts.serving = self.sc.fleet.workers() as u32;
        self.counts.dead = (self.workers.len() - self.sc.fleet.workers()) as u32;
        for i in 0..self.instances.len() as u32 {
            self.settle_warm(i, &mut lives, &mut left);
        }
        for (w, l) in left.into_iter().enumerate() {
            self.schedule_initial(w as u32, l);
        }
        for w in 0..self.workers.len() as u32 {
            if self.workers[w as usize].state == WorkerState::Serving {
                self.after_boot(SimTime::ZERO, w);
            }
        }
        for i in 0..self.instances.len() as u32 {
            self.oom_check(SimTime::ZERO, i);
            if let Some(im) = &self.sc.policy.triggers.instance_memory {
                self.q
                    .schedule(im.frequency, Event::InstanceCheck { instance: i });
            }
        }
        if let Some(agg) = &self.agg {
            self.q.schedule(agg.step(), Event::Step);
        } else {
            self.schedule_next_arrival();
        }
        self.q.schedule(self.sc.timeline_step, Event::Timeline);
        self.schedule_platform();
        self.start_replace();
        self.fold_all(SimTime::ZERO);
        // Sampled as after an event: a recycle at time zero is a dip on both engines.
        self.m.min_serving = self.counts.serving;
    }

    /// What `start` does for a generation-0 worker once its instance is
    /// settled: the evil collector's first check and its lifetime's end.
    pub(super) fn schedule_initial(&mut self, w: u32, lifetime_left: Option<SimTime>) {
        if self.workers[w as usize].state == WorkerState::Dead {
            return;
        }
        self.start_evil_collector(SimTime::ZERO, w, 0);
        if let Some(left) = lifetime_left {
            self.q.schedule(
                left,
                Event::LifetimeDue {
                    worker: w,
                    generation: 0,
                },
            );
        }
    }

    /// Sum of `rss - shared` over the instance's workers, from scratch (kept
    /// exact at spawns and exits; incremental between).
    pub(super) fn recompute_private(&mut self, i: u32) {
        let first = self.instances[i as usize].first_worker as usize;
        self.instances[i as usize].private_mb = self.workers[first..first + self.spi]
            .iter()
            .filter(|w| w.state != WorkerState::Dead)
            .map(|w| w.rss_mb - w.shared_mb)
            .sum();
    }

    pub(super) fn on_boot_done(&mut self, t: SimTime, w: u32, generation: u32) {
        let worker = &self.workers[w as usize];
        if worker.generation != generation || worker.state != WorkerState::Booting {
            return;
        }
        // The old worker stops serving before its successor starts, so an
        // instance never serves with more than its configured workers
        // (Granian's handover is timed instead: `replace/handover.rs`).
        if !matches!(
            self.sc.policy.replacement,
            Replacement::TimedHandover { .. }
        ) {
            self.hand_over(t, w);
        }
        self.set_state(t, w, WorkerState::Serving);
        self.after_boot(t, w);
    }

    /// A worker starts serving: first sample, then fill its slots.
    pub(super) fn after_boot(&mut self, t: SimTime, w: u32) {
        let generation = self.workers[w as usize].generation;
        if let Some((tick, _)) = self.sc.policy.sampling.next_delay(0.0, f64::INFINITY) {
            let at = t + self.phase(t, w, generation, tick);
            self.q.schedule(
                at,
                Event::Sample {
                    worker: w,
                    generation,
                },
            );
        }
        self.workers[w as usize].cold.serving_since = t;
        if self.agg.is_some() {
            return; // no slots: the step credits it from now on
        }
        let i = self.workers[w as usize].instance;
        for slot in 0..self.sc.fleet.concurrency as u32 {
            match self.next_from_backlog(t, i) {
                Some(req) if self.pinned.is_some() => {
                    self.adopt(t, w, &req);
                    self.start_service(t, w, slot, req);
                }
                Some(req) => self.start_service(t, w, slot, req),
                // Pinned: work reaches a worker down its connections, not
                // through the idle list.
                None if self.pinned.is_some() => break,
                None => {
                    self.instances[i as usize].idle.push_back((w, generation));
                    self.note_idle(t, w, 1);
                }
            }
        }
    }

    /// One served request's worth of RSS growth.
    pub(super) fn grow(&mut self, t: SimTime, w: u32) {
        let leak = &self.sc.fleet.leak;
        let worker = &mut self.workers[w as usize];
        let mut d = leak.growth(
            worker.velocity_mb_per_request,
            &mut worker.warm_left_mb,
            &mut worker.noise,
        );
        if let Some(surge) = &mut self.surge {
            let extra = surge.mb_per_request_at(t);
            if extra > 0.0 {
                d += surge.bounded(
                    extra,
                    &mut worker.cold.surge_episode,
                    &mut worker.cold.surge_left_mb,
                );
            }
        }
        if self.agg.is_none() {
            d = quantize_mb(d);
        }
        if let Some(drift) = &self.sc.policy.triggers.drift {
            worker.cold.garbage_mb += d * drift.gc_reclaim_fraction;
        }
        if d > 0.0 {
            let rss = self.workers[w as usize].rss_mb + d;
            self.set_rss(t, w, rss);
        }
        let transient = self.sc.fleet.transient_mean_mb;
        if transient > 0.0 {
            // The request's working set sat on top of what it leaves behind.
            let worker = &mut self.workers[w as usize];
            let x = -open01(&mut worker.noise).ln() * transient;
            worker.peak_mb = worker.peak_mb.max(worker.rss_mb + x);
        }
        if self.sc.fleet.cow.is_some() {
            self.unshare(w);
        }
    }

    /// Copy-on-write: the pages the worker's requests have unshared so far
    /// become its own (RSS stays: a copied page was resident and still is).
    pub(super) fn unshare(&mut self, w: u32) {
        let worker = &mut self.workers[w as usize];
        let instance = &mut self.instances[worker.instance as usize];
        unshare_in(self.sc, self.agg.is_some(), worker, instance);
    }

    /// The pages a worker still shares with its master after `n` requests.
    pub(super) fn shared_at(&self, n: u64) -> f64 {
        let f = &self.sc.fleet;
        self.mem_mb(f.cow.as_ref().map_or(f.shared_mb, |c| c.shared_after(n)))
    }

    /// A memory size as the mode keeps it: on the memory grid in exact
    /// mode (`quantize_mb`), as it is in aggregate mode.
    pub(super) fn mem_mb(&self, x: f64) -> f64 {
        if self.agg.is_some() {
            x
        } else {
            quantize_mb(x)
        }
    }

    #[inline(always)]
    pub(super) fn set_rss(&mut self, t: SimTime, w: u32, rss: f64) {
        let worker = &mut self.workers[w as usize];
        let instance = &mut self.instances[worker.instance as usize];
        let agg = self.agg.is_some();
        set_rss_in(self.sc, agg, &mut self.m, worker, instance, t, rss);
    }

    /// Closes the overshoot integral and the over-ceiling dwell at `t`.
    pub(super) fn close_rss_accounting(&mut self, t: SimTime, w: u32) {
        let hard = self.sc.policy.hard_limit_mb;
        let worker = &mut self.workers[w as usize];
        if worker.rss_mb > hard {
            let (rss, dt) = (worker.rss_mb, (t - worker.rss_changed_at).0);
            // Per instance in exact mode (in integer units, so the lazy
            // path's order of crediting leaves it as it is), fleet-wide in
            // aggregate mode, as before.
            if self.agg.is_some() {
                self.m.overshoot_mb_us += (rss - hard) * dt as f64;
            } else {
                self.instances[worker.instance as usize].overshoot_q += overshoot_q(rss, hard, dt);
            }
        }
        let worker = &mut self.workers[w as usize];
        worker.rss_changed_at = t;
        if let Some(since) = worker.cold.over_ceiling_since {
            self.m.over_ceiling_dwell_max = self.m.over_ceiling_dwell_max.max(t - since);
        }
    }

    pub(super) fn begin_drain(&mut self, t: SimTime, w: u32) {
        self.set_state(t, w, WorkerState::Draining);
        // A draining worker takes no new work: its free slots (concurrency
        // > 1) leave the idle queue now, not lazily at its exit.
        let i = self.workers[w as usize].instance;
        self.instances[i as usize].idle.retain(|&(e, _)| e != w);
        self.close_conns_of(t, w);
        if self.agg.is_some() {
            self.leap_drain(t, w);
            return;
        }
        if self.pinned.is_some() {
            // What its connections brought before the close is served
            // first: a graceful drain finishes every received request.
            self.serve_queued(t, w);
        }
        let worker = &self.workers[w as usize];
        if worker.in_flight == 0 {
            self.exit(t, w);
        } else {
            let generation = worker.generation;
            self.q.schedule(
                self.drain_deadline(t, w),
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
        self.drain_kill(t, w);
    }

    /// Fails every request in flight on `w` with a connection reset.
    pub(super) fn kill_in_flight(&mut self, t: SimTime, w: u32) {
        if self.lazy.is_some() {
            self.materialize(self.workers[w as usize].instance, t);
        }
        if self.agg.is_some() {
            self.leap_kill_in_flight(t, w);
            return;
        }
        let i = self.workers[w as usize].instance;
        for slot in 0..self.sc.fleet.concurrency {
            let k = self.slot_index(w, slot as u32);
            if let Some(req) = self.in_service[k].take() {
                self.workers[w as usize].in_flight -= 1;
                self.instances[i as usize].outstanding -= 1;
                self.connection_error(t, i, req);
            }
        }
        if self.pinned.is_some() {
            self.reset_queued(t, w);
        }
    }

    /// The process exits and its connections go stale for the client. The
    /// master forks a replacement into the slot, unless a spawn-then-exit
    /// successor takes over (or this was a successor that never took over).
    pub(super) fn exit(&mut self, t: SimTime, w: u32) {
        debug_assert_eq!(self.workers[w as usize].in_flight, 0);
        debug_assert!(
            self.pinned
                .as_ref()
                .is_none_or(|p| p.queued_at(w as usize) == 0),
            "worker {w} exits with queued requests"
        );
        self.close_rss_accounting(t, w);
        let (i, generation) = {
            let worker = &self.workers[w as usize];
            (worker.instance, worker.generation)
        };
        // A worker killed while serving (an OOM or evil kill, no drain)
        // leaves its free slots' idle entries. `take_idle` would skip them
        // as stale, but only when a request comes: under a burst of kills
        // with no request served they piled up without bound (the `sim`
        // fuzz target's timeout). Dropped here, so the queue holds at most
        // `concurrency` entries per worker; live entries keep their order.
        self.instances[i as usize].idle.retain(|&(e, _)| e != w);
        if self.sc.client.connections == Connections::Pooled {
            let stale_until = t + self.sc.client.stale_window;
            for _ in 0..self.sc.client.keepalive_conns_per_worker {
                self.instances[i as usize]
                    .stale_conns
                    .push_back(stale_until);
            }
        } else {
            self.close_conns_of(t, w);
        }
        let worker = &mut self.workers[w as usize];
        let (successor, replaces) = (worker.cold.successor.take(), worker.cold.replaces.take());
        // Unlink only a link that still points back here: a handed-over
        // predecessor keeps `successor` (so it exits for good, below) after
        // the successor dropped `replaces`, and by the time the predecessor
        // exits that struct may have exited too and been re-forked as
        // another worker's successor, whose own link must stay.
        if let Some(s) = successor
            && self.workers[s as usize].cold.replaces == Some(w)
        {
            self.workers[s as usize].cold.replaces = None; // it serves on its own now
        }
        if let Some(o) = replaces
            && self.workers[o as usize].cold.successor == Some(w)
        {
            self.workers[o as usize].cold.successor = None; // it may ask again
        }
        if successor.is_some() || replaces.is_some() || self.instances[i as usize].restarting {
            self.bury(t, w);
        } else {
            self.respawn(t, w);
        }
        self.after_exit(t, w, generation);
    }

    /// The exited process's struct becomes a dead spare.
    pub(super) fn bury(&mut self, t: SimTime, w: u32) {
        self.set_state(t, w, WorkerState::Dead);
        let worker = &mut self.workers[w as usize];
        let i = worker.instance;
        // A new generation, so events of the exited process are ignored.
        worker.generation += 1;
        let (boot, shared) = (self.sc.fleet.boot_rss_mb, self.sc.fleet.shared_mb);
        let (boot, shared) = (self.mem_mb(boot), self.mem_mb(shared));
        let worker = &mut self.workers[w as usize];
        worker.rss_mb = boot;
        worker.peak_mb = worker.rss_mb;
        worker.shared_mb = shared;
        self.recompute_private(i);
    }

    /// Forks a new process into worker struct `w` (its next generation).
    pub(super) fn spawn(&mut self, t: SimTime, w: u32) {
        let i = self.workers[w as usize].instance;
        self.set_state(t, w, WorkerState::Booting);
        let generation = self.workers[w as usize].generation + 1;
        let d = self.draws(w, generation);
        let f = &self.sc.fleet;
        let (boot, shared) = (self.mem_mb(f.boot_rss_mb), self.mem_mb(f.shared_mb));
        let worker = &mut self.workers[w as usize];
        worker.generation = generation;
        worker.cold.spawned_at = t;
        worker.rss_mb = boot;
        worker.peak_mb = boot;
        worker.shared_mb = shared;
        worker.cold.limit_mb = d.limit_mb;
        worker.velocity_mb_per_request = d.velocity;
        worker.warm_left_mb = f.leak.warmup_mb;
        worker.requests = 0;
        worker.cold.wants_since = None;
        worker.cold.wants = None;
        worker.max_requests = d.max_requests;
        worker.cold.drift_limit_mb = d.drift_limit_mb;
        worker.cold.garbage_mb = 0.0;
        worker.cold.violations = 0;
        worker.cold.over_samples = 0;
        worker.cold.over_ceiling_since = None;
        worker.rss_changed_at = t;
        worker.noise = d.noise;
        // A new process fills its caches again: a fresh budget.
        worker.cold.surge_episode = usize::MAX;
        if let Some(agg) = &self.agg {
            worker.cold.next_step_at = agg.first_step(&mut worker.noise);
        }
        self.recompute_private(i);
        let boot = Event::BootDone {
            worker: w,
            generation,
        };
        self.q.schedule(t + f.boot, boot);
        if let Some(life) = d.lifetime {
            let due = Event::LifetimeDue {
                worker: w,
                generation,
            };
            self.q.schedule(t + life, due);
        }
        self.start_evil_collector(t, w, generation);
        self.oom_check(t, i);
    }

    /// Whether instance `i` has a spare (dead) struct to fork a successor
    /// into: O(1), as a worker whose trigger is held asks on every request.
    pub(super) fn has_spare(&self, i: u32) -> bool {
        self.instances[i as usize].dead > 0
    }

    /// Spawn-then-exit: fork the successor into a spare struct (the first
    /// one, so the order of slots never depends on how spares are tracked);
    /// the old worker serves on until the successor has booted. The scan
    /// runs once per allowed recycle, not per request.
    pub(super) fn spawn_successor(&mut self, t: SimTime, old: u32) {
        let i = self.workers[old as usize].instance;
        let spare = self
            .instance_workers(i)
            .find(|&s| self.workers[s as usize].state == WorkerState::Dead)
            .expect("spawn-then-exit keeps a spare struct per worker");
        self.workers[old as usize].cold.successor = Some(spare);
        self.workers[spare as usize].cold.replaces = Some(old);
        self.spawn(t, spare);
    }

    /// A successor has booted: the worker it replaces starts draining.
    fn hand_over(&mut self, t: SimTime, successor: u32) {
        let Some(old) = self.workers[successor as usize].cold.replaces.take() else {
            return;
        };
        if self.workers[old as usize].state == WorkerState::Serving {
            self.begin_drain(t, old);
        }
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

    pub(super) fn over_cgroup(&self, i: u32) -> bool {
        self.instances[i as usize].usage_mb(self.sc.fleet.master_mb) > self.sc.fleet.container_mb
    }

    #[cold]
    #[inline(never)]
    fn oom_kill(&mut self, t: SimTime, i: u32) -> bool {
        if let Some(restart) = self.sc.platform.oom_group {
            return self.oom_group_kill(t, i, restart);
        }
        let mut kills = 0;
        while self.over_cgroup(i) {
            assert!(
                kills < 2 * self.spi,
                "OOM loop on instance {i}: usage cannot fit"
            );
            let victim = self
                .largest_worker(self.instance_workers(i), |w| w.state != WorkerState::Dead)
                .expect("an instance has workers");
            self.m.oom_kills += 1;
            let facts = self.kill_facts(t, i, "oom_kill");
            self.worker_row(t, victim, EventKind::OomKill, Some(facts));
            self.kill_in_flight(t, victim);
            self.exit(t, victim);
            kills += 1;
        }
        kills > 0
    }

    /// The worker with the most RSS among `ws` that `keep` accepts; ties go
    /// to the lowest index.
    pub(super) fn largest_worker(
        &self,
        ws: std::ops::Range<u32>,
        keep: impl Fn(&Worker) -> bool,
    ) -> Option<u32> {
        ws.filter(|&w| keep(&self.workers[w as usize]))
            .max_by(|a, b| {
                let (ra, rb) = (
                    self.workers[*a as usize].rss_mb,
                    self.workers[*b as usize].rss_mb,
                );
                ra.total_cmp(&rb).then(b.cmp(a))
            })
    }

    /// The facts row of a kill that no policy decided (OOM, evil RSS).
    pub(super) fn kill_facts(&self, t: SimTime, i: u32, branch: &'static str) -> DecisionFacts {
        DecisionFacts {
            pressure: self.headroom(i) < self.sc.policy.pipeline.min_headroom_mb,
            headroom_mb: self.headroom(i),
            lease: LeaseOutcome::None,
            branch: crate::metrics::rows::Branch::Kill(branch),
            cause: None,
            last_recycle_age_s: self.instances[i as usize]
                .last_recycle
                .map(|s| (t - s).as_secs_f64()),
        }
    }

    pub(super) fn headroom(&self, i: u32) -> f64 {
        self.sc.fleet.container_mb - self.instances[i as usize].usage_mb(self.sc.fleet.master_mb)
    }

    pub(super) fn worker_row(
        &mut self,
        t: SimTime,
        w: u32,
        kind: EventKind,
        decision: Option<DecisionFacts>,
    ) {
        let worker = &self.workers[w as usize];
        let row = EventRow {
            t,
            kind,
            instance: worker.instance,
            worker: Some(WorkerFacts {
                slot: worker.cold.slot,
                generation: worker.generation,
                rss_mb: worker.rss_mb,
                limit_mb: worker.cold.limit_mb,
                requests: worker.requests,
            }),
            decision,
            latency_ms: None,
        };
        self.obs.event(&row);
    }
}
