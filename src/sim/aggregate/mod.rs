//! The aggregated (tau-leaping) mode: `[engine] mode = "aggregate"`.
//!
//! Per-request events are replaced by one `Event::Step` every `step_s`
//! that loops over the fleet. Over the step `[t0, t)` the fleet's request
//! count is Poisson and the balancer splits it as in exact mode (`leap`;
//! least-outstanding by a level model of the exact balancer,
//! `leap::LeastOutstanding`);
//! each instance's serving workers share what it serves in proportion to
//! the time each served in the step (a booting or draining worker gets
//! nothing, one that booted mid-step the part after its boot), through a
//! running credit, as free workers take requests in turn. A worker's RSS
//! advances by the compound leak of its count (`leap::Leak::over`) and its
//! served count by the same number.
//!
//! Everything else stays an exact event through the exact mode's code:
//! samples, lifetimes, instance checks, OOM checks (after each worker's
//! growth, as after each request), policy gates, recycles, boots, drains.
//! Triggers that fire per request fire at the step where the count crosses
//! them (a `max_requests` limit, every-Nth-request sampling: once per step
//! even if the step crosses two multiples; the drift check runs once per
//! step). Resolution: at most one step late.
//!
//! Which `Summary` fields are exact, estimated, or not available in this
//! mode: docs/aggregate.md, "Summary fields". In short, recycles, holds,
//! RSS, overshoot, OOM and capacity are simulated as in exact mode; the
//! client side (resets, retries, 503/504, waits, latency) is estimated from
//! the per-step load, in `client.rs`.

mod client;
pub(super) mod leap;

use super::{Event, Sim};
use crate::engine::SimTime;
use crate::fleet::WorkerState;
use crate::metrics::Observer;
use crate::scenario::{BalancerKind, Scenario};
use leap::{Poisson, instance_step};

/// Erlang C's `(P(wait), mean wait in s)`; `None` at or over capacity.
type ErlangWait = Option<(f64, f64)>;

/// The aggregate mode's state beside the exact mode's (which it reuses).
pub(in crate::sim) struct Aggregate {
    step: SimTime,
    /// End of the last step credited.
    last: SimTime,
    /// Requests one slot completes per second (`1 / E[S]`).
    mu: f64,
    service_mean_us: f64,
    /// How long a drain that finds its worker busy lasts (mean residual).
    residual: SimTime,
    /// Each instance's fluid backlog, in requests.
    queue: Vec<f64>,
    /// How long each instance has had no worker serving.
    starved_s: Vec<f64>,
    /// Expected count of served requests that waited (Erlang C).
    waited: f64,
    poisson: Poisson,
    leak: leap::Leak,
    /// This step's Erlang C `(P(wait), mean wait)` by serving slots, with
    /// the arrival rate it was computed at.
    waits: Vec<Option<(f64, ErlangWait)>>,
    /// Per worker of the instance being stepped: seconds served in the
    /// step, and the generation that served them.
    overlap: Vec<(f64, u32)>,
    /// Per worker struct: the generation whose drain found it busy (a kill
    /// before that drain ends finds at least one request in flight).
    drain_busy: Vec<Option<u32>>,
    /// Per worker struct: the generation and its running credit of
    /// requests (below one: the fraction of a request not yet served).
    credit: Vec<(u32, f64)>,
    /// The extra RSS per request of this step's requests: the memory
    /// surges' mean over the step (`SurgeClock::mean_mb_per_request`).
    surge_mb: f64,
    /// This step's fleet-wide wait estimate: served, served x P(wait),
    /// served x P(wait) x mean wait of those that wait (s).
    wait_mix: (u64, f64, f64),
    /// The least-outstanding split (`None` for the other balancers), with
    /// its per-instance serving slots and counts.
    least: Option<(leap::LeastOutstanding, Vec<f64>, Vec<u64>)>,
}

impl Aggregate {
    pub(in crate::sim) fn new(sc: &Scenario, spi: usize) -> Option<Self> {
        if !sc.engine.is_aggregate() {
            return None;
        }
        let service_mean_us = sc.workload.service.mean_us();
        Some(Aggregate {
            step: sc.engine.step,
            last: SimTime::ZERO,
            mu: 1e6 / service_mean_us,
            service_mean_us,
            residual: SimTime(leap::mean_residual_us(&sc.workload.service).round() as u64),
            queue: vec![0.0; sc.fleet.instances],
            starved_s: vec![0.0; sc.fleet.instances],
            waited: 0.0,
            poisson: Poisson::new(),
            leak: leap::Leak::new(&sc.fleet.leak),
            waits: vec![None; spi * sc.fleet.concurrency + 1],
            overlap: vec![(0.0, 0); spi],
            credit: vec![(u32::MAX, 0.0); sc.fleet.instances * spi],
            drain_busy: vec![None; sc.fleet.instances * spi],
            wait_mix: (0, 0.0, 0.0),
            least: (sc.workload.balancer == BalancerKind::LeastOutstanding).then(|| {
                let n = sc.fleet.instances;
                (leap::LeastOutstanding::new(n), vec![0.0; n], vec![0; n])
            }),
            surge_mb: 0.0,
        })
    }

    pub(in crate::sim) fn step(&self) -> SimTime {
        self.step
    }

    /// A new generation's first step index (its served count starts at 0).
    pub(in crate::sim) fn first_step(&self, noise: &mut crate::engine::rng::StreamRng) -> u64 {
        self.leak.step_gap(noise)
    }

    /// The fluid backlog over the fleet, rounded (the timeline's column).
    pub(in crate::sim) fn backlog(&self) -> u64 {
        self.queue.iter().sum::<f64>().round() as u64
    }

    pub(in crate::sim) fn queue_ok(&self) -> bool {
        self.queue.iter().all(|q| q.is_finite() && *q >= 0.0)
    }
}

impl<O: Observer> Sim<'_, O> {
    fn agg(&mut self) -> &mut Aggregate {
        self.agg.as_mut().expect("aggregate mode")
    }

    pub(super) fn on_step(&mut self, t: SimTime) {
        let step = self.agg().step;
        self.q.schedule(t + step, Event::Step);
        self.leap(t);
    }

    /// Credits the requests of `[last, t)`: every instance, then the
    /// step's latency estimate. Also closes a last partial step at the end.
    ///
    /// The fleet's count is Poisson; the balancer splits it as the exact
    /// mode's does. Round-robin deals it evenly, the remainder to the
    /// instances after the pointer; least-outstanding by its level model
    /// (`leap::LeastOutstanding`: the round-robin deal when the instances
    /// are equal); random draws each instance's count on its own.
    pub(super) fn leap(&mut self, t: SimTime) {
        let n = self.instances.len();
        let agg = self.agg.as_mut().expect("aggregate mode");
        let t0 = agg.last;
        agg.last = t;
        agg.wait_mix = (0, 0.0, 0.0);
        agg.waits.fill(None);
        if t <= t0 {
            return;
        }
        if let Some(s) = &mut self.surge {
            agg.surge_mb = s.mean_mb_per_request(t0, t);
            // The budget belongs to the latest episode started by the step's end.
            s.on_at(t.saturating_sub(SimTime(1)));
        }
        let dt = (t - t0).as_secs_f64();
        let mid = SimTime(t0.0 + (t.0 - t0.0) / 2);
        let mean = self.sc.workload.profile.rate_at(mid) * dt;
        let random = self.sc.workload.balancer == BalancerKind::Random;
        let total = if random {
            0
        } else {
            agg.poisson.draw(mean, &mut self.streams.arrivals)
        };
        let (each, extra) = (total / n as u64, (total % n as u64) as usize);
        let start = self.rr_next;
        // Set before the instances are stepped: a retry in the step moves
        // the pointer on from its own pick (`client::leap_reset`).
        self.rr_next = (start + extra) % n;
        let least = agg.least.is_some();
        if least {
            self.split_least_outstanding(t0, t, total, mean, start);
        }
        for i in 0..n {
            let agg = self.agg.as_mut().expect("aggregate mode");
            let (arrivals, lambda) = if random {
                let a = agg
                    .poisson
                    .draw(mean / n as f64, &mut self.streams.arrivals);
                (a, mean / n as f64 / dt)
            } else if let Some((split, _, counts)) = &agg.least {
                // The instance's expected rate: the fleet's by its expected
                // share (not by this step's count: at a few requests a step
                // that is noise, and Erlang C's convexity turns noise into
                // a longer wait).
                (counts[i], mean * split.rate_share()[i] / dt)
            } else {
                let a = each + u64::from((i + n - start) % n < extra);
                (a, mean / n as f64 / dt)
            };
            self.leap_instance(t0, t, i as u32, arrivals, lambda);
        }
        self.record_latency_estimate();
    }

    /// The least-outstanding split of the step's `total` into the
    /// aggregate state's counts, from each instance's serving slots over
    /// `[t0, t)` (as `leap_instance` counts them) and fluid backlog.
    fn split_least_outstanding(
        &mut self,
        t0: SimTime,
        t: SimTime,
        total: u64,
        mean: f64,
        start: usize,
    ) {
        let dt = (t - t0).as_secs_f64();
        let concurrency = self.sc.fleet.concurrency as f64;
        let agg = self.agg.as_mut().expect("aggregate mode");
        let offered = mean / dt / agg.mu;
        let (split, slots, counts) = agg.least.as_mut().expect("least-outstanding");
        for (i, s) in slots.iter_mut().enumerate() {
            let first = self.instances[i].first_worker as usize;
            let serving_s: f64 = self.workers[first..first + self.spi]
                .iter()
                .filter(|w| w.state == WorkerState::Serving)
                .map(|w| (t - w.cold.serving_since.max(t0)).as_secs_f64())
                .sum();
            *s = serving_s * concurrency / dt;
        }
        split.split(total, offered, slots, &agg.queue, start, counts);
    }

    /// One instance over `[t0, t)`: its fluid queue, each serving worker's
    /// count and growth, the failures, the resets and the waits.
    ///
    /// Inside an instance, free workers queue FIFO for work, so they take
    /// requests in turn: each serving worker is credited its share of what
    /// the instance served (in proportion to the time it served in the
    /// step) and serves the whole requests of its running credit.
    fn leap_instance(&mut self, t0: SimTime, t: SimTime, i: u32, arrivals: u64, lambda: f64) {
        let first = self.instances[i as usize].first_worker as usize;
        let dt = (t - t0).as_secs_f64();
        let agg = self.agg.as_mut().expect("aggregate mode");
        let mut serving_s = 0.0;
        for (k, w) in self.workers[first..first + self.spi].iter().enumerate() {
            let o = if w.state == WorkerState::Serving {
                (t - w.cold.serving_since.max(t0)).as_secs_f64()
            } else {
                0.0
            };
            agg.overlap[k] = (o, w.generation);
            serving_s += o;
            let c = &mut agg.credit[first + k];
            if c.0 != w.generation {
                // A new process: staggered so the instance's workers take turns.
                *c = (
                    w.generation,
                    (k % self.sc.fleet.workers_per_instance) as f64 / self.spi as f64,
                );
            }
        }
        let capacity = serving_s * self.sc.fleet.concurrency as f64 * agg.mu;
        let load = instance_step(
            &mut agg.queue[i as usize],
            &mut agg.starved_s[i as usize],
            arrivals as f64,
            capacity,
            self.sc.workload.backlog as f64,
            self.sc.workload.queue_timeout.as_secs_f64(),
            dt,
        );
        let mut served = 0u64;
        if load.served > 0.0 {
            let scale = load.served / serving_s;
            for k in 0..self.spi {
                let agg = self.agg.as_mut().expect("aggregate mode");
                let (o, generation) = agg.overlap[k];
                let w = first + k;
                if o <= 0.0 {
                    continue;
                }
                let c = &mut agg.credit[w].1;
                *c += o * scale;
                // Truncation is the floor: the credit is never negative.
                let n = *c as u64;
                if n == 0 {
                    continue;
                }
                *c -= n as f64;
                served += n;
                let worker = &self.workers[w];
                // An earlier worker's OOM kill at the step's end may have
                // ended this one (or a trigger started its drain): it served
                // its share over the step all the same, but nothing grows.
                if worker.generation == generation && worker.state == WorkerState::Serving {
                    self.serve_leap(t, w as u32, n);
                }
            }
        }
        let rejected = self.leap_failures(t, load);
        self.instances[i as usize]
            .arrivals
            .record_n(t, (served + rejected).min(u32::MAX as u64) as u32);
        self.m.arrived += served + rejected;
        self.m.completed += served;
        self.step.arrivals += served + rejected;
        self.step.completions += served;
        self.leap_resets(t0, t, i, served);
        self.leap_waits(i, lambda, served);
    }

    /// `n` requests served by worker `w` at once: its count, its compound
    /// leak, the OOM check, and the per-request triggers (at the crossing).
    fn serve_leap(&mut self, t: SimTime, w: u32, n: u64) {
        let agg = self.agg.as_ref().expect("aggregate mode");
        let worker = &mut self.workers[w as usize];
        let before = worker.requests;
        worker.requests += n;
        let mut d = agg.leak.over(
            worker.velocity_mb_per_request,
            &mut worker.warm_left_mb,
            before,
            n,
            &mut worker.cold.next_step_at,
            &mut worker.noise,
        );
        if agg.surge_mb > 0.0 {
            let surge = self.surge.as_ref().expect("surges on");
            d += surge.bounded(
                n as f64 * agg.surge_mb,
                &mut worker.cold.surge_episode,
                &mut worker.cold.surge_left_mb,
            );
        }
        if let Some(drift) = &self.sc.policy.triggers.drift {
            worker.cold.garbage_mb += d * drift.gc_reclaim_fraction;
        }
        let (i, generation) = (worker.instance, worker.generation);
        if d > 0.0 {
            let rss = worker.rss_mb + d;
            self.set_rss(t, w, rss);
        }
        if self.sc.fleet.cow.is_some() {
            self.unshare(w);
        }
        if self.oom_check(t, i) && self.workers[w as usize].generation != generation {
            return; // this worker was the OOM victim
        }
        self.after_requests(t, w, before);
    }

    /// The step's 503s and 504s as Poisson counts of the fluid estimates.
    fn leap_failures(&mut self, t: SimTime, load: leap::InstanceStep) -> u64 {
        use super::traffic::HttpFailure;
        let agg = self.agg.as_mut().expect("aggregate mode");
        let full = agg
            .poisson
            .draw(load.backlog_full, &mut self.streams.client);
        let timed_out = agg.poisson.draw(load.timed_out, &mut self.streams.client);
        for _ in 0..full {
            self.http_failure(t, HttpFailure::BacklogFull);
        }
        for _ in 0..timed_out {
            self.http_failure(t, HttpFailure::Timeout);
        }
        full + timed_out
    }

    /// The wait of the step's served requests: Erlang C with the
    /// instance's serving slots at the step's end and its expected arrival
    /// rate (cached per slot count and rate for the step); over capacity, the fluid
    /// backlog's drain time.
    fn leap_waits(&mut self, i: u32, lambda: f64, served: u64) {
        if served == 0 {
            return;
        }
        let first = self.instances[i as usize].first_worker as usize;
        let serving = self.workers[first..first + self.spi]
            .iter()
            .filter(|w| w.state == WorkerState::Serving)
            .count();
        let slots = serving * self.sc.fleet.concurrency;
        let agg = self.agg.as_mut().expect("aggregate mode");
        let mu = agg.mu;
        // Cached per slot count for the step, and reused at the same rate
        // only (round-robin's and random's instances share one rate;
        // least-outstanding's differ).
        let cached = match agg.waits[slots] {
            Some((rate, c)) if rate == lambda => c,
            _ => {
                let c = leap::erlang_c(slots as u32, lambda, mu);
                agg.waits[slots] = Some((lambda, c));
                c
            }
        };
        let (p_wait, wait_s) = match cached {
            Some(pw) => pw,
            None => (1.0, agg.queue[i as usize] / (slots.max(1) as f64 * mu)),
        };
        let n = served as f64;
        agg.waited += n * p_wait;
        agg.wait_mix.0 += served;
        agg.wait_mix.1 += n * p_wait;
        agg.wait_mix.2 += n * p_wait * wait_s;
        self.m.waits += served;
        self.m.wait_us_sum += n * p_wait * wait_s * 1e6;
    }

    /// Latency quantiles are estimates: each step records up to eight
    /// latencies (a service time drawn from the service distribution, plus
    /// an exponential wait with the step's Erlang C probability and mean),
    /// each weighted by its share of the step's served requests.
    fn record_latency_estimate(&mut self) {
        const SAMPLES: u64 = 8;
        let agg = self.agg.as_mut().expect("aggregate mode");
        let (served, pw_sum, wait_sum) = agg.wait_mix;
        if served == 0 {
            return;
        }
        let k = served.min(SAMPLES);
        let p_wait = pw_sum / served as f64;
        let mean_wait_s = if pw_sum > 0.0 { wait_sum / pw_sum } else { 0.0 };
        for j in 0..k {
            let weight = served / k + u64::from(j < served % k);
            let mut us = self.sc.workload.service.sample(&mut self.streams.service).0 as f64;
            let u = crate::engine::rng::open01(&mut self.streams.service);
            if u < p_wait {
                let v = crate::engine::rng::open01(&mut self.streams.service);
                us += -v.ln() * mean_wait_s * 1e6;
            }
            self.m.latency_us.record_n(us.round() as u64, weight);
        }
    }

    /// A generation-0 worker's step path and, with `warm_start`, its age:
    /// as in exact mode, a uniform fraction of the requests that take it
    /// to its limit, traced on a copy of its stream; served in one leap,
    /// the same path (steps are a renewal in request count), so its future
    /// is the one its age was drawn from.
    pub(in crate::sim) fn age_leaping(
        &self,
        worker: &mut crate::fleet::Worker,
        w: u32,
        life: super::warm::Life,
    ) {
        let leak = &self.agg.as_ref().expect("aggregate mode").leak;
        worker.cold.next_step_at = leak.step_gap(&mut worker.noise);
        if !self.sc.fleet.warm_start || !life.ages() {
            return;
        }
        let (base, drift) = (
            worker.cold.limit_mb,
            self.sc.fleet.boot_rss_mb + worker.cold.drift_limit_mb,
        );
        let limit = |n| (base + self.offset_at(n)).min(drift);
        let v = worker.velocity_mb_per_request;
        let (mut rss, mut warm, mut next, mut noise) = (
            worker.rss_mb,
            worker.warm_left_mb,
            worker.cold.next_step_at,
            worker.noise.clone(),
        );
        let cap = super::warm::WARM_START_MAX_REQUESTS.min(worker.max_requests);
        let mut to_limit = 0;
        while rss < limit(to_limit) && to_limit < cap {
            rss += leak.over(v, &mut warm, to_limit, 1, &mut next, &mut noise);
            to_limit += 1;
        }
        let served = (self.warm_fraction(w, life, 0) * to_limit as f64) as u64;
        worker.rss_mb += leak.over(
            v,
            &mut worker.warm_left_mb,
            0,
            served,
            &mut worker.cold.next_step_at,
            &mut worker.noise,
        );
        worker.requests = served;
    }

    /// Closes the run: the last partial step, and the waited count.
    pub(super) fn finish_aggregate(&mut self, end: SimTime) {
        if self.agg().last < end {
            self.leap(end);
        }
        self.m.waited = self.agg().waited.round() as u64;
    }
}
