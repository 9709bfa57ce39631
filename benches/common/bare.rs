//! A textbook queueing engine, for scale: what "a tight binary-heap
//! engine" does on this machine with nothing of fleetsim in it. std's
//! `BinaryHeap` of `(time, seq, kind, instance)`, Xoshiro256++, `Exp1`
//! and `StandardNormal` draws, a FIFO queue and a free-server count per
//! instance, round-robin across instances: an arrival schedules the next
//! arrival and starts service or queues; a completion starts the next
//! queued request. It keeps the waiting-time sum, so the work cannot be
//! optimised away, and nothing else: no memory, policy, client or metrics.
//!
//! Two shapes: `Bare::mmc()` is `engine_mmc`'s M/M/c (one instance of 8
//! servers, exponential service of mean 100 ms, utilisation 0.8), and
//! `Bare::peer()` the queueing of the SimPy peer's fleet (2 instances x 3
//! sync workers, Poisson 20 rps, lognormal service of mean 120 ms and p99
//! 900 ms), so each compares one engine with the full simulator.

use super::{MMC_RHO, MMC_SERVICE_MS, MMC_WORKERS};
use rand::SeedableRng;
use rand_distr::{Distribution, Exp1, StandardNormal};
use rand_xoshiro::Xoshiro256PlusPlus;
use std::cmp::Reverse;
use std::collections::{BinaryHeap, VecDeque};

/// A queueing system to run bare.
#[derive(Clone, Copy)]
pub struct Bare {
    pub instances: u32,
    pub servers: u32,
    pub rps: f64,
    /// `None`: exponential service of mean `service_mean_us`; `Some((mu,
    /// sigma))`: lognormal of the log-microseconds.
    pub lognormal: Option<(f64, f64)>,
    pub service_mean_us: f64,
}

impl Bare {
    /// `engine_mmc`'s M/M/c.
    pub fn mmc() -> Bare {
        Bare {
            instances: 1,
            servers: MMC_WORKERS,
            rps: MMC_RHO * MMC_WORKERS as f64 / (MMC_SERVICE_MS / 1000.0),
            lognormal: None,
            service_mean_us: MMC_SERVICE_MS * 1e3,
        }
    }

    /// The SimPy peer's queueing (`benches/peer/fleet_simpy.py`).
    pub fn peer() -> Bare {
        const Z99: f64 = 2.326_347_874_040_841;
        let (mean, p99) = (120e3_f64, 900e3_f64);
        let d = (p99 / mean).ln();
        let sigma = Z99 - (Z99 * Z99 - 2.0 * d).sqrt();
        Bare {
            instances: 2,
            servers: 3,
            rps: 20.0,
            lognormal: Some((mean.ln() - sigma * sigma / 2.0, sigma)),
            service_mean_us: mean,
        }
    }
}

/// What a bare run counted.
pub struct BareRun {
    pub events: u64,
    pub requests: u64,
    /// Mean wait in the queue, seconds (`mmc`: Erlang C at rho 0.8 and 8
    /// servers gives 0.0286 s).
    pub mean_wait_s: f64,
}

/// `hours` of `b`, on microsecond integer time as fleetsim's.
pub fn run(b: Bare, hours: f64, seed: u64) -> BareRun {
    const ARRIVAL: u8 = 0;
    const DONE: u8 = 1;
    let mut rng = Xoshiro256PlusPlus::seed_from_u64(seed);
    let gap_us = 1e6 / b.rps;
    let end = (hours * 3600e6) as u64;
    let service = |rng: &mut Xoshiro256PlusPlus| -> u64 {
        let us = match b.lognormal {
            None => {
                let e: f64 = Exp1.sample(rng);
                e * b.service_mean_us
            }
            Some((mu, sigma)) => {
                let z: f64 = StandardNormal.sample(rng);
                (mu + sigma * z).exp()
            }
        };
        us as u64 + 1
    };
    let mut heap: BinaryHeap<Reverse<(u64, u64, u8, u32)>> = BinaryHeap::with_capacity(64);
    let n = b.instances as usize;
    let mut queues: Vec<VecDeque<u64>> = vec![VecDeque::with_capacity(1024); n];
    let mut free = vec![b.servers; n];
    let (mut next, mut seq) = (0usize, 0u64);
    let (mut events, mut requests, mut wait_us) = (0u64, 0u64, 0u64);
    let e: f64 = Exp1.sample(&mut rng);
    heap.push(Reverse(((e * gap_us) as u64 + 1, seq, ARRIVAL, 0)));
    while let Some(Reverse((t, _, kind, i))) = heap.pop() {
        if t >= end {
            break;
        }
        events += 1;
        seq += 1;
        if kind == ARRIVAL {
            requests += 1;
            let e: f64 = Exp1.sample(&mut rng);
            heap.push(Reverse((t + (e * gap_us) as u64 + 1, seq, ARRIVAL, 0)));
            let i = next;
            next = if i + 1 == n { 0 } else { i + 1 };
            if free[i] > 0 {
                free[i] -= 1;
                seq += 1;
                heap.push(Reverse((t + service(&mut rng), seq, DONE, i as u32)));
            } else {
                queues[i].push_back(t);
            }
        } else if let Some(arrived) = queues[i as usize].pop_front() {
            wait_us += t - arrived;
            heap.push(Reverse((t + service(&mut rng), seq, DONE, i)));
        } else {
            free[i as usize] += 1;
        }
    }
    BareRun {
        events,
        requests,
        mean_wait_s: wait_us as f64 / requests.max(1) as f64 / 1e6,
    }
}
