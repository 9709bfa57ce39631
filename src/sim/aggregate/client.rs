//! The aggregate mode's client side, estimated from the per-step load.
//!
//! Stale keep-alive connections are the exact mode's: every exit pushes
//! `keepalive_conns_per_worker` connections that stay pickable for
//! `stale_window_s` (`lifecycle::exit`). A step's served requests of an
//! instance are spread evenly over the step, and each picks a stale one
//! with the exact mode's probability (stale / pool), consuming it: a reset.
//! A connection closed later in the step than the request is not stale
//! for it yet. A reset request is retried on the balancer's pick after the
//! retry delay (round-robin: after a Poisson count of other arrivals;
//! least-outstanding: the first instance at the fleet's level from there,
//! `least_outstanding_pick`; either way the retry takes its turn, so the
//! next step is dealt from the instance after it; a random instance for
//! the random balancer), where it may hit
//! a stale connection again; out of retries it is a `fetch_failed`.
//! Workers killed with work in flight (OOM, evil RSS, a drain past its
//! graceful timeout) reset the requests they held: a Poisson count with the
//! worker's mean occupancy, at most its slots; at least one if its drain
//! found it busy; none if it was booting.
//!
//! A drain finds its worker busy with the probability that it has a
//! request in flight (its utilisation for a sync worker; an M/G/inf
//! server's for one with more slots), and then lasts the mean residual
//! service time (`leap::mean_residual_us`); an idle worker exits at once.

use super::super::{Event, Sim};
use super::leap::Poisson;
use crate::engine::SimTime;
use crate::engine::rng::{StreamRng, open01};
use crate::fleet::WorkerState;
use crate::metrics::{EventKind, Observer};
use crate::scenario::BalancerKind;
use rand::Rng;

impl<O: Observer> Sim<'_, O> {
    /// Resets among the `served` requests instance `i` took over `[t0, t)`.
    pub(super) fn leap_resets(&mut self, t0: SimTime, t: SimTime, i: u32, served: u64) {
        let per_worker = self.sc.client.keepalive_conns_per_worker;
        if per_worker == 0 || served == 0 {
            return;
        }
        let span = (t - t0).0 as f64;
        for j in 0..served {
            let at = SimTime(t0.0 + (span * (j as f64 + 0.5) / served as f64) as u64);
            // The exact mode's pick of a connection, at the request's time.
            if self.stale_hit(at, i) {
                self.leap_reset(at, i);
            } else if self.instances[i as usize].stale_conns.is_empty() {
                return; // none left this step: no further draw either
            }
        }
    }

    /// A counted, served request was reset at `at`: retry it on another
    /// pick until it gets through (`retry_ok`) or runs out (`fetch_failed`,
    /// which turns the completion into a failure). Each retry picks a
    /// connection by the exact mode's rule (`stale_hit`).
    fn leap_reset(&mut self, at: SimTime, i: u32) {
        self.m.resets += 1;
        let delay = self.sc.client.retry_delay;
        let n = self.instances.len();
        let mut due = at;
        for _ in 0..self.sc.client.retries {
            due = due + delay;
            // Round-robin sends the retry to the pick after the other
            // arrivals of the retry delay (a Poisson count at the profile's
            // rate: with two instances, an odd count sends it back to the
            // instance that reset it, which is where a second stale
            // connection is likely); least-outstanding to the first
            // instance at the level from there; random to any.
            let r = match self.sc.workload.balancer {
                BalancerKind::Random => self.streams.routing.random_range(0..n),
                BalancerKind::RoundRobin | BalancerKind::LeastOutstanding => {
                    let others = self.sc.workload.profile.rate_at(due) * delay.as_secs_f64();
                    let k = Poisson::new().draw(others, &mut self.streams.routing);
                    let mut r = (i as usize + 1 + k as usize) % n;
                    if self.sc.workload.balancer == BalancerKind::LeastOutstanding {
                        r = self.least_outstanding_pick(due, r);
                    }
                    // The retry takes its turn: the next step's requests
                    // are dealt from the instance after it, as in exact
                    // mode (with two instances the next fresh request goes
                    // back to the one that reset, where the stale
                    // connections are).
                    self.rr_next = (r + 1) % n;
                    r
                }
            };
            if !self.stale_hit(due, r as u32) {
                self.m.retry_ok += 1;
                let latency = (due - at) + SimTime(self.agg().service_mean_us as u64);
                self.leap_client_row(at, i, EventKind::RetryOk, latency);
                return;
            }
            self.m.resets += 1;
        }
        self.m.completed -= 1;
        self.step.completions -= 1;
        self.m.failed += 1;
        self.m.fetch_failed += 1;
        self.step.failures += 1;
        self.leap_client_row(at, i, EventKind::FetchFailed, due - at);
    }

    /// The least-outstanding balancer's pick for a retry at `due`, ties
    /// from instance `from` on (the pointer after the other arrivals).
    ///
    /// The balancer keeps the instances' outstanding counts level (within
    /// one of each other), so at the retry the fleet's outstanding `N`
    /// (Poisson: each instance's share of the rate times the mean service
    /// time, plus the fluid backlogs) stands at `N / n` on every instance
    /// and one more on `N mod n` of them, any of them alike. The pick is
    /// the first instance from `from` that is not one of those. With two
    /// instances, an odd `N` sends the retry back to the instance that
    /// reset it half the time, where a second stale connection is likely.
    /// (Taken as round-robin's pick, `fetch_failed` came out half the
    /// exact mode's on render-2x3: 0.78 a day against 1.66. Independent
    /// counts per instance instead sent too many back at high load: +26%
    /// `fetch_failed` on a 2 x 2 fleet at 78%, where the levels are tied
    /// more often than independent counts are.)
    fn least_outstanding_pick(&mut self, due: SimTime, from: usize) -> usize {
        let n = self.instances.len();
        let per_instance = self.occupancy(due) * self.sc.fleet.workers_per_instance as f64;
        let agg = self.agg.as_mut().expect("aggregate mode");
        let mean = per_instance * n as f64 + agg.queue.iter().sum::<f64>();
        let above = agg.poisson.draw(mean, &mut self.streams.routing) % n as u64;
        first_below(above as usize, n, from, &mut self.streams.routing)
    }

    fn leap_client_row(&mut self, t: SimTime, i: u32, kind: EventKind, latency: SimTime) {
        self.obs.event(&crate::metrics::EventRow {
            t,
            kind,
            instance: i,
            worker: None,
            decision: None,
            latency_ms: Some(latency.as_millis_f64()),
        });
    }

    /// A worker's expected requests in flight: its share of the rate (the
    /// instance's share over its configured workers) times the mean service time.
    fn occupancy(&self, t: SimTime) -> f64 {
        let f = &self.sc.fleet;
        let rate = self.sc.workload.profile.rate_at(t) / f.workers() as f64;
        rate * self.sc.workload.service.mean_us() / 1e6
    }

    /// Kills worker `w` with its in-flight work: those requests (not yet
    /// counted; the step that would have credited them never will) arrive,
    /// are served as far as the count goes, and reset.
    ///
    /// A serving worker holds a Poisson count (its mean occupancy); a
    /// draining one whose drain found it busy holds at least one (the count
    /// given that it is not zero), an idle-drained or booting one none.
    pub(in crate::sim) fn leap_kill_in_flight(&mut self, t: SimTime, w: u32) {
        let occupancy = self.occupancy(t);
        let slots = self.sc.fleet.concurrency as u64;
        let worker = &self.workers[w as usize];
        let (i, state, generation) = (worker.instance, worker.state, worker.generation);
        let agg = self.agg.as_mut().expect("aggregate mode");
        let busy = agg.drain_busy[w as usize].take() == Some(generation);
        let rng = &mut self.streams.client;
        let n = match state {
            WorkerState::Serving => agg.poisson.draw(occupancy, rng),
            WorkerState::Draining if busy => agg.poisson.draw_positive(occupancy, rng),
            _ => 0,
        }
        .min(slots);
        for _ in 0..n {
            self.m.arrived += 1;
            self.m.completed += 1;
            self.step.arrivals += 1;
            self.step.completions += 1;
            self.leap_reset(t, i);
        }
    }

    /// Starts the wait for a draining worker's in-flight work: none (exit
    /// now), the mean residual service time, or the drain deadline
    /// (`sim/kill.rs`) if that is sooner (then the drain kills, as in exact mode).
    pub(in crate::sim) fn leap_drain(&mut self, t: SimTime, w: u32) {
        // One slot is busy a fraction `occupancy` of the time; with more
        // slots, some request is in flight as often as an M/G/inf server
        // has one.
        let rho = self.occupancy(t);
        let busy = if self.sc.fleet.concurrency == 1 {
            rho.min(1.0)
        } else {
            1.0 - (-rho).exp()
        };
        if open01(&mut self.streams.client) >= busy {
            self.exit(t, w);
            return;
        }
        let generation = self.workers[w as usize].generation;
        self.agg().drain_busy[w as usize] = Some(generation);
        let residual = self.agg().residual;
        let graceful = self.drain_deadline(t, w) - t;
        let ev = if residual < graceful {
            Event::Drained {
                worker: w,
                generation,
            }
        } else {
            Event::DrainDeadline {
                worker: w,
                generation,
            }
        };
        self.q.schedule(t + residual.min(graceful), ev);
    }

    /// The in-flight work of a draining worker has finished.
    pub(in crate::sim) fn on_drained(&mut self, t: SimTime, w: u32, generation: u32) {
        let worker = &self.workers[w as usize];
        if worker.generation == generation && worker.state == WorkerState::Draining {
            self.exit(t, w);
        }
    }
}

/// The first instance from `from` (cyclically) that is not one of `above`
/// instances of `n` picked uniformly at random (those one over the level):
/// each instance in turn is one of the `above` left among the instances
/// left with its share of chance. Pure but for `rng`.
fn first_below(above: usize, n: usize, from: usize, rng: &mut StreamRng) -> usize {
    let mut left = above as f64;
    for j in 0..n {
        let k = (from + j) % n;
        let rest = (n - j) as f64;
        if left <= 0.0 || open01(rng) >= left / rest {
            return k;
        }
        left -= 1.0;
    }
    from
}

#[cfg(test)]
mod tests {
    use super::first_below;
    use crate::Sim;
    use crate::engine::rng::{Stream, stream};

    /// The retry's pick under least-outstanding: the first instance from
    /// `from` not among `above` of `n` drawn without replacement, so
    /// `P(from + j) = prod_{i<j} (above - i) / (n - i) x (1 - (above - j) /
    /// (n - j))`. With none above, always `from`; with all but one above,
    /// each instance alike.
    #[test]
    fn a_least_outstanding_retry_goes_to_the_first_instance_below_the_level() {
        let mut rng = stream(11, Stream::Routing);
        let draws = 200_000;
        for (n, above, from) in [
            (2usize, 0usize, 1usize),
            (2, 1, 0),
            (3, 1, 2),
            (3, 2, 0),
            (5, 3, 4),
        ] {
            let mut seen = vec![0u32; n];
            for _ in 0..draws {
                seen[first_below(above, n, from, &mut rng)] += 1;
            }
            let mut reach = 1.0; // P(the first j from `from` are all above)
            for j in 0..n {
                let k = (from + j) % n;
                let p_above = if j < above {
                    (above - j) as f64 / (n - j) as f64
                } else {
                    0.0
                };
                let want = reach * (1.0 - p_above);
                reach *= p_above;
                let got = seen[k] as f64 / draws as f64;
                let se = (want * (1.0 - want) / draws as f64).sqrt();
                assert!(
                    (got - want).abs() <= 5.0 * se + 1e-12,
                    "n {n}, above {above}, from {from}: instance {k} {got:.4} vs {want:.4}"
                );
            }
        }
    }
    use crate::engine::SimTime;
    use crate::metrics::NullObserver;
    use crate::scenario::{DEFAULT_SCENARIO, Scenario, load, parse_override};

    fn scenario(sets: &[&str]) -> Scenario {
        let overrides: Vec<_> = sets.iter().map(|s| parse_override(s).unwrap()).collect();
        load(DEFAULT_SCENARIO, "<test>", &overrides, &mut |p| {
            Err(p.to_string())
        })
        .expect("a valid scenario")
        .1
    }

    /// A reset on instance 0 of three is retried on instance 1 (no other
    /// arrival in the retry delay at this rate), which takes the retry's
    /// round-robin turn: the next step is dealt from instance 2, as the
    /// exact balancer's next pick would be. (Without the turn the pointer
    /// stayed where the step had left it.)
    #[test]
    fn a_retry_takes_its_round_robin_turn() {
        for balancer in ["round_robin", "least_outstanding"] {
            let b = format!("workload.balancer={balancer}");
            let sc = scenario(&[
                "engine.mode=aggregate",
                "fleet.instances=3",
                "workload.profile=constant",
                "workload.rps=0.001",
                "client.keepalive_conns_per_worker=1",
                &b,
            ]);
            let mut sim = Sim::new(&sc, 1, NullObserver);
            let t = SimTime(1_000_000);
            // Every connection of instance 0's pool is stale: the reset's
            // instance; instance 1 has none, so the retry gets through.
            let closed = t + sc.client.stale_window;
            sim.instances[0].stale_conns.extend([closed; 3]);
            for start in [0, 1] {
                sim.rr_next = start;
                let ok = sim.m.retry_ok;
                sim.leap_reset(t, 0);
                assert_eq!(sim.m.retry_ok, ok + 1, "{balancer}: the retry got through");
                assert_eq!(sim.rr_next, 2, "{balancer}: the step after the retry on 1");
            }
        }
    }
}
