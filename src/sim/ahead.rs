//! Draws made ahead, in blocks: the arrival times and the service times.
//!
//! Both are pure functions of their own random stream: the arrival process
//! depends only on the profile, the previous arrival and `Stream::Arrivals`;
//! service times only on the distribution and `Stream::Service`, which
//! nothing else draws from in exact mode. So drawing a block of them ahead
//! gives the same values in the same order as drawing each when it is
//! needed: the output is byte-identical. What changes is the machine's
//! work: a block's draws are independent of the event handling around
//! them, so the CPU overlaps the `exp` of one lognormal with the next (they
//! wait on each other's latency when interleaved with a whole event each),
//! and the loops stay in registers.
//!
//! At the end of a run up to a block's draws are made and never used; no
//! other draw comes from these streams, so nothing observable changes.
//! The same blocks can be drawn on helper threads (`feed`,
//! `Sim::with_draw_threads`).

use super::feed::{ArrivalState, Feed, Resume, ServiceState};
use crate::engine::SimTime;
use crate::engine::rng::StreamRng;
use crate::traffic::profile::{ArrivalProcess, RateProfile};
use crate::traffic::service::ServiceDist;

/// Draws per block: large enough to amortise the refill, small enough to
/// stay in L1 (512 bytes).
pub(super) const BLOCK: usize = 64;

/// A block of precomputed times: `times[next..]` are still to be taken (a
/// block filled only in part is moved to the end), so taking one is one
/// compare with the constant `BLOCK`.
struct Block {
    times: [SimTime; BLOCK],
    next: usize,
}

impl Block {
    fn empty() -> Self {
        Block {
            times: [SimTime::ZERO; BLOCK],
            next: BLOCK,
        }
    }

    #[inline]
    fn take(&mut self) -> Option<SimTime> {
        let t = *self.times.get(self.next)?;
        self.next += 1;
        Some(t)
    }
}

/// Service times, `BLOCK` at a time, from `Stream::Service`.
pub(super) struct ServiceAhead {
    block: Block,
    /// Drawn on a helper thread (`feed`).
    feed: Option<Feed<ServiceState>>,
    /// Blocks taken so far.
    taken: u64,
}

impl ServiceAhead {
    pub(super) fn new() -> Self {
        ServiceAhead {
            block: Block::empty(),
            feed: None,
            taken: 0,
        }
    }

    /// Draws the blocks on a helper thread from here on, from `rng` (which
    /// the caller no longer draws from); before the first block only, and
    /// where the thread can be started.
    pub(super) fn on_thread(&mut self, dist: &ServiceDist, rng: &StreamRng) {
        if self.taken == 0 && self.feed.is_none() {
            let state = ServiceState { dist: dist.clone() };
            self.feed = Feed::spawn("fleetsim-service", state, rng.clone());
        }
    }

    /// The next service time: what `dist.sample(rng)` would return.
    #[inline]
    pub(super) fn next(&mut self, dist: &ServiceDist, rng: &mut StreamRng) -> SimTime {
        match self.block.take() {
            Some(t) => t,
            None => self.refill(dist, rng),
        }
    }

    #[cold]
    #[inline(never)]
    fn refill(&mut self, dist: &ServiceDist, rng: &mut StreamRng) -> SimTime {
        self.taken += 1;
        match &mut self.feed {
            Some(feed) => self.block.times = feed.next_block().0,
            None => dist.fill(rng, &mut self.block.times),
        }
        self.block.next = 1;
        self.block.times[0]
    }
}

/// Arrival times, `BLOCK` at a time, from `Stream::Arrivals`.
pub(super) struct ArrivalsAhead {
    /// The process, where it is and whether it ended: filled here, or
    /// handed to a helper thread (`feed`), which fills from a copy.
    state: ArrivalState,
    block: Block,
    /// No arrival comes before the end of the run.
    done: bool,
    /// Drawn on a helper thread (`feed`).
    feed: Option<Feed<ArrivalState>>,
    /// Blocks taken so far.
    taken: u64,
}

impl ArrivalsAhead {
    /// The arrivals of `profile` from time zero to `end`.
    pub(super) fn new(profile: &RateProfile, end: SimTime) -> Self {
        ArrivalsAhead {
            state: ArrivalState {
                profile: profile.clone(),
                end,
                process: ArrivalProcess::new(profile),
                last: SimTime::ZERO,
                done: false,
            },
            block: Block::empty(),
            done: false,
            feed: None,
            taken: 0,
        }
    }

    /// Draws the blocks on a helper thread from here on (`ServiceAhead::on_thread`).
    pub(super) fn on_thread(&mut self, rng: &StreamRng) {
        if self.taken == 0 && self.feed.is_none() {
            self.feed = Feed::spawn("fleetsim-arrivals", self.state.clone(), rng.clone());
        }
    }

    /// The next arrival: what `process.next_after(previous, end, rng)`
    /// would return, starting from time zero.
    #[inline]
    pub(super) fn next(&mut self, rng: &mut StreamRng) -> Option<SimTime> {
        match self.block.take() {
            Some(t) => Some(t),
            None => self.refill(rng),
        }
    }

    #[cold]
    #[inline(never)]
    fn refill(&mut self, rng: &mut StreamRng) -> Option<SimTime> {
        if self.done {
            return None;
        }
        self.taken += 1;
        let len = match &mut self.feed {
            Some(feed) => {
                let (times, len) = feed.next_block();
                self.block.times = times;
                len
            }
            None => self.state.fill_into(rng, &mut self.block.times),
        };
        self.done = len < BLOCK;
        if len < BLOCK {
            // The last block of the run, filled in part: to the end.
            self.block.times.copy_within(0..len, BLOCK - len);
        }
        self.block.next = BLOCK - len;
        self.block.take()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::rng::{Stream, stream};

    #[test]
    fn service_times_are_the_ones_drawn_one_by_one() {
        for dist in [
            ServiceDist::lognormal_from_mean_p99(120_000.0, 900_000.0).unwrap(),
            ServiceDist::Exponential { mean_us: 50_000.0 },
            ServiceDist::Constant { us: 1234.4 },
        ] {
            let (mut a, mut b) = (stream(3, Stream::Service), stream(3, Stream::Service));
            let mut ahead = ServiceAhead::new();
            for _ in 0..5 * BLOCK + 7 {
                assert_eq!(ahead.next(&dist, &mut a), dist.sample(&mut b), "{dist:?}");
            }
        }
    }

    #[test]
    fn arrivals_are_the_ones_drawn_one_by_one() {
        let end = SimTime::from_secs(3 * 3600);
        for profile in [
            RateProfile::Constant { rps: 3.0 },
            RateProfile::Diurnal {
                mean_rps: 2.0,
                amplitude: 0.8,
                peak_hour: 1.0,
                start_hour: 0.0,
            },
            RateProfile::Series {
                points: vec![
                    (SimTime::ZERO, 2.0),
                    (SimTime::from_secs(3600), 0.0),
                    (SimTime::from_secs(5400), 5.0),
                ],
            },
        ] {
            let (mut a, mut b) = (stream(5, Stream::Arrivals), stream(5, Stream::Arrivals));
            let mut ahead = ArrivalsAhead::new(&profile, end);
            let mut one = ArrivalProcess::new(&profile);
            let mut last = SimTime::ZERO;
            let mut n = 0;
            loop {
                let want = one.next_after(&profile, last, end, &mut b);
                assert_eq!(ahead.next(&mut a), want, "{profile:?} #{n}");
                match want {
                    Some(t) => last = t,
                    None => break,
                }
                n += 1;
            }
            assert!(n > 20_000, "{n} arrivals");
            assert_eq!(ahead.next(&mut a), None, "done stays done");
        }
    }
}
