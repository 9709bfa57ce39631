//! The floor: fleetsim's per-request model on a heap-less engine, for
//! scale (issue 20). What the fast path must do for each request, written
//! as tightly as it can be with nothing else in the way: no event queue
//! for requests, no engine to fall back to, no materialize and fold, no
//! generic mechanisms.
//!
//! The SimPy peer's fleet (`benches/peer/fleet_simpy.py`, as `Bare::peer`
//! for the queueing): 2 instances x 3 sync workers, Poisson 20 rps
//! round-robin, lognormal service (mean 120 ms, p99 900 ms). Per request:
//! the arrival and service draws; the Kiefer-Wolfowitz / Lindley recursion
//! (the worker of the instance that frees first, start `max(arrival,
//! free)`); the backlog count (the starts still to come) against its bound;
//! the wait counters; the growth draw from the worker's own stream (its
//! lognormal velocity, the warm-up's decay, a step with probability
//! 0.0055); the worker's RSS, peak, the overshoot integral over the hard
//! ceiling, the instance's memory sum and the cgroup check; the
//! request-count trigger's check; a log-bucketed latency histogram.
//! Memory is credited at assignment, not late in time order (fleetsim
//! credits in the event engine's order so that both write the same bytes;
//! the work a request does is the same). Every 45 s a sample: a worker at
//! or over its limit (uniform 460-540 MB) is recycled at once (boot RSS 360
//! MB, a new velocity and limit), without the drain and boot fleetsim
//! simulates. Instructions a request are what to compare (`callgrind`);
//! the figures it returns are there so that none of the work can be
//! optimised away, and as a sanity check that it is the peer's queue
//! (its mean wait against `Bare::peer`'s).
//!
//! `run_fleet` grows the fleet at the same load a worker (10 rps an
//! instance of 3, as `common::scaled`), and optionally *batches by
//! instance*: the arrivals of a stretch of simulated time (`batch_us`, or
//! up to the next sample) are drawn in time order as always, each filed
//! under the instance the round-robin gives it, and then each instance
//! serves its own in one go, so its workers' lines are loaded once a
//! stretch instead of once a request. The random draws come in the same
//! order and every figure is the same (the overshoot integral is summed
//! per instance in both): what changes is only the order in which memory
//! is touched. `throughput floor_scaling H` prints both side by side: the
//! smallest prototype of the flat-cost design (docs/performance.md).

use rand::{RngCore, SeedableRng};
use rand_distr::{Distribution, Exp1, StandardNormal};
use rand_xoshiro::Xoshiro256PlusPlus;
use std::collections::VecDeque;

const INSTANCES: usize = 2;
const SPI: usize = 3;
/// Arrivals a second per instance (the peer's 20 rps over its two).
const RPS_PER_INSTANCE: f64 = 10.0;
const BOOT_MB: f64 = 360.0;
/// What a worker shares with its master (`fleet_simpy.py`'s `SHARED_MB`):
/// the instance's memory is the master's (`BOOT_MB`) and each worker's RSS
/// above it.
const SHARED_MB: f64 = 135.0;
const CONTAINER_MB: f64 = 2048.0;
const HARD_MB: f64 = 650.0;
const TICK_US: u64 = 45_000_000;
const BACKLOG: usize = 2048;

/// One worker's hot state.
struct W {
    free: u64,
    requests: u64,
    max_requests: u64,
    rss_mb: f64,
    peak_mb: f64,
    rss_changed_at: u64,
    velocity: f64,
    warm_left_mb: f64,
    limit_mb: f64,
    noise: Xoshiro256PlusPlus,
}

/// One instance's state besides its workers.
struct Inst {
    private_mb: f64,
    /// Start times of the requests still waiting.
    waits: VecDeque<u64>,
    /// The overshoot integral over its workers, MB x us.
    overshoot: f64,
}

/// What a floor run counted (every figure the loop keeps is in it, so
/// none of its work can be optimised away).
#[derive(Debug, PartialEq)]
pub struct FloorRun {
    /// Requests and samples.
    pub events: u64,
    pub requests: u64,
    /// Refused by a full backlog.
    pub refused: u64,
    /// Served requests that fleetsim would make a completion event (the
    /// request-count trigger, the cgroup's limit in reach).
    pub evented: u64,
    pub recycles: u64,
    pub mean_wait_s: f64,
    /// Requests that waited for a worker.
    pub waited: u64,
    pub overshoot_mb_s: f64,
    /// The latency histogram's 99th percentile, seconds (to its bucket).
    pub p99_latency_s: f64,
}

/// The run's counters and latency histogram.
struct Tally {
    requests: u64,
    refused: u64,
    evented: u64,
    wait_us: u64,
    waited: u64,
    histogram: [u64; 64 * 8],
}

fn open01(rng: &mut Xoshiro256PlusPlus) -> f64 {
    ((rng.next_u64() >> 11) as f64 + 0.5) * (1.0 / (1u64 << 53) as f64)
}

fn spawn(rng: &mut Xoshiro256PlusPlus, k: u64, t: u64) -> W {
    // Lognormal velocity of mean 0.044 MB and cv 1.3.
    let s2 = (1.0f64 + 1.3 * 1.3).ln();
    let z: f64 = StandardNormal.sample(rng);
    W {
        free: t,
        requests: 0,
        max_requests: u64::MAX,
        rss_mb: BOOT_MB,
        peak_mb: BOOT_MB,
        rss_changed_at: t,
        velocity: (0.044f64.ln() - s2 / 2.0 + s2.sqrt() * z).exp(),
        warm_left_mb: 62.0,
        limit_mb: 460.0 + 80.0 * open01(rng),
        noise: Xoshiro256PlusPlus::seed_from_u64(k ^ t.rotate_left(17)),
    }
}

/// The draws' constants: the service's lognormal and the warm-up's decay.
struct Model {
    mu: f64,
    sigma: f64,
    warm_rate: f64,
    gap_us: f64,
}

impl Model {
    fn new(instances: usize) -> Model {
        const Z99: f64 = 2.326_347_874_040_841;
        let (mean, p99) = (120e3_f64, 900e3_f64);
        let sigma = Z99 - (Z99 * Z99 - 2.0 * (p99 / mean).ln()).sqrt();
        Model {
            mu: mean.ln() - sigma * sigma / 2.0,
            sigma,
            warm_rate: 1.0 - (-1.0f64 / 70.0).exp(),
            gap_us: 1e6 / (RPS_PER_INSTANCE * instances as f64),
        }
    }

    fn service(&self, rng: &mut Xoshiro256PlusPlus) -> u64 {
        let z: f64 = StandardNormal.sample(rng);
        (self.mu + self.sigma * z).exp() as u64 + 1
    }
}

/// One request arriving at `t` on an instance (`ws`, `inst`): the
/// Kiefer-Wolfowitz recursion, the backlog bound, the growth, the
/// accounting.
#[inline(always)]
fn serve(ws: &mut [W], inst: &mut Inst, t: u64, service: u64, warm_rate: f64, tally: &mut Tally) {
    let q = &mut inst.waits;
    while q.front().is_some_and(|&s| s <= t) {
        q.pop_front();
    }
    let (mut at, mut key) = (0, ws[0].free);
    for (k, w) in ws.iter().enumerate().skip(1) {
        if w.free < key {
            (at, key) = (k, w.free);
        }
    }
    if !q.is_empty() && q.len() >= BACKLOG {
        tally.refused += 1;
        return;
    }
    tally.requests += 1;
    let start = key.max(t);
    if start > t {
        q.push_back(start);
        tally.waited += 1;
    }
    tally.wait_us += start - t;
    let done = start + service;
    let w = &mut ws[at];
    w.free = done;
    w.requests += 1;
    let mut d = w.velocity;
    if w.warm_left_mb > 0.0 {
        let x = w.warm_left_mb * warm_rate;
        w.warm_left_mb -= x;
        d += x;
    }
    if open01(&mut w.noise) < 0.0055 {
        d += -open01(&mut w.noise).ln() * 19.5;
    }
    let old = w.rss_mb;
    if old > HARD_MB {
        inst.overshoot += (old - HARD_MB) * (done - w.rss_changed_at) as f64;
    }
    w.rss_changed_at = done;
    w.rss_mb = old + d;
    w.peak_mb = w.peak_mb.max(w.rss_mb);
    inst.private_mb += d;
    if w.requests >= w.max_requests || BOOT_MB + inst.private_mb > CONTAINER_MB {
        tally.evented += 1;
    }
    let latency = done - t;
    let b = 63 - latency.leading_zeros() as usize;
    let sub = ((latency >> b.saturating_sub(3)) & 7) as usize;
    tally.histogram[b * 8 + sub] += 1;
}

/// A sample at `tick`: the workers at or over their limits recycled.
fn sample(workers: &mut [W], insts: &mut [Inst], rng: &mut Xoshiro256PlusPlus, tick: u64) -> u64 {
    let mut recycles = 0;
    for (k, w) in workers.iter_mut().enumerate() {
        if w.rss_mb >= w.limit_mb {
            insts[k / SPI].private_mb -= w.rss_mb - BOOT_MB;
            *w = spawn(rng, k as u64, w.free.max(tick));
            recycles += 1;
        }
    }
    recycles
}

/// The samples due by `upto` from `tick` on: how many, and the recycles.
fn samples_to(
    tick: &mut u64,
    upto: u64,
    workers: &mut [W],
    insts: &mut [Inst],
    rng: &mut Xoshiro256PlusPlus,
) -> (u64, u64) {
    let (mut samples, mut recycles) = (0, 0);
    while *tick <= upto {
        recycles += sample(workers, insts, rng, *tick);
        *tick += TICK_US;
        samples += 1;
    }
    (samples, recycles)
}

/// `hours` of the peer's fleet on the floor engine.
pub fn run(hours: f64, seed: u64) -> FloorRun {
    run_fleet(INSTANCES, None, hours, seed)
}

/// `hours` of `instances` instances of the peer's (10 rps each), request
/// by request in time order (`batch_us` `None`) or batched by instance
/// over stretches of `batch_us` (each cut at the next sample too).
pub fn run_fleet(instances: usize, batch_us: Option<u64>, hours: f64, seed: u64) -> FloorRun {
    let model = Model::new(instances);
    let mut rng = Xoshiro256PlusPlus::seed_from_u64(seed);
    let end = (hours * 3600e6) as u64;
    let mut workers: Vec<W> = (0..instances * SPI)
        .map(|k| spawn(&mut rng, k as u64, 0))
        .collect();
    let mut insts: Vec<Inst> = (0..instances)
        .map(|_| Inst {
            private_mb: SPI as f64 * (BOOT_MB - SHARED_MB),
            waits: VecDeque::with_capacity(64),
            overshoot: 0.0,
        })
        .collect();
    let mut tally = Tally {
        requests: 0,
        refused: 0,
        evented: 0,
        wait_us: 0,
        waited: 0,
        histogram: [0; 64 * 8],
    };
    let (mut recycles, mut tick, mut samples) = (0u64, TICK_US, 0u64);
    let arrive = |t: &mut u64, rng: &mut Xoshiro256PlusPlus| {
        let e: f64 = Exp1.sample(rng);
        *t += (e * model.gap_us) as u64 + 1;
    };
    match batch_us {
        None => {
            let (mut next, mut t) = (0usize, 0u64);
            loop {
                arrive(&mut t, &mut rng);
                let (n, recycled) =
                    samples_to(&mut tick, t.min(end), &mut workers, &mut insts, &mut rng);
                (samples, recycles) = (samples + n, recycles + recycled);
                if t >= end {
                    break;
                }
                let service = model.service(&mut rng);
                let i = next;
                next = if i + 1 == instances { 0 } else { i + 1 };
                let ws = &mut workers[i * SPI..(i + 1) * SPI];
                serve(ws, &mut insts[i], t, service, model.warm_rate, &mut tally);
            }
        }
        Some(batch) => {
            // Each instance's arrivals of the stretch, in time order.
            let mut filed: Vec<Vec<(u64, u64)>> = vec![Vec::new(); instances];
            let (mut next, mut t) = (0usize, 0u64);
            // The arrival drawn past the last stretch, its service not yet
            // drawn (a sample's draws come between, as in time order).
            arrive(&mut t, &mut rng);
            let mut cut = 0;
            loop {
                cut = (cut + batch).min(tick).min(end);
                while t < cut {
                    let service = model.service(&mut rng);
                    filed[next].push((t, service));
                    next = if next + 1 == instances { 0 } else { next + 1 };
                    arrive(&mut t, &mut rng);
                }
                for (i, (arrivals, inst)) in filed.iter_mut().zip(&mut insts).enumerate() {
                    let ws = &mut workers[i * SPI..(i + 1) * SPI];
                    for &(at, service) in arrivals.iter() {
                        serve(ws, inst, at, service, model.warm_rate, &mut tally);
                    }
                    arrivals.clear();
                }
                let (n, recycled) =
                    samples_to(&mut tick, t.min(end), &mut workers, &mut insts, &mut rng);
                (samples, recycles) = (samples + n, recycles + recycled);
                if t >= end {
                    break;
                }
            }
        }
    }
    // The bucket of the 99th percentile: its lower bound, in seconds.
    let requests = tally.requests;
    let (mut seen, mut p99_us) = (0u64, 0u64);
    for (k, &n) in tally.histogram.iter().enumerate() {
        seen += n;
        if seen * 100 >= requests * 99 {
            let (b, sub) = ((k / 8) as u32, (k % 8) as u64);
            p99_us = (1u64 << b) + (sub << b.saturating_sub(3));
            break;
        }
    }
    FloorRun {
        events: requests + samples,
        requests,
        refused: tally.refused,
        evented: tally.evented,
        recycles,
        mean_wait_s: tally.wait_us as f64 / requests.max(1) as f64 / 1e6,
        waited: tally.waited,
        overshoot_mb_s: insts.iter().map(|i| i.overshoot).sum::<f64>() / 1e6,
        p99_latency_s: p99_us as f64 / 1e6,
    }
}
