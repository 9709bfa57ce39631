//! When a worker looks at its RSS: on a timer (the seeds: every 45 s, with a
//! random phase per worker), optionally faster near the limit (the seeds'
//! fix 2, adaptive sampling), or after every N requests served.

use crate::engine::SimTime;

#[derive(Clone, Debug, PartialEq)]
pub enum Sampling {
    Timer {
        tick: SimTime,
        /// Adaptive sampling: `(fraction, near_tick)`: sample every
        /// `near_tick` once RSS is within `fraction` of the limit.
        near: Option<(f64, SimTime)>,
        /// Whose clock the samples follow.
        clock: SampleClock,
    },
    EveryRequests {
        n: u64,
    },
}

/// Whose clock a timer sample follows (`policy.sample_clock`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SampleClock {
    /// Each worker its own, at a random phase from its first serving moment
    /// (the seeds' in-app sampler).
    PerWorker,
    /// One per instance, at a random phase: a master's watcher that reads
    /// every worker at once (Granian's RSS watcher, `granian/server/common.py`
    /// `_workers_rss_watcher`; puma_worker_killer's reaper).
    PerInstance,
    /// Multiples of the tick on the clock every instance shares (Passenger's
    /// metrics collector sleeps to the next multiple of 5 s,
    /// `Pool/AnalyticsCollection.cpp` `timeToNextMultipleULL`).
    WallClock,
}

impl SampleClock {
    /// The delay from `t` to the clock's next tick strictly after `t`, for
    /// a clock ticking every `tick` at `phase` (in [0, tick)).
    pub fn next_tick_after(t: SimTime, tick: SimTime, phase: SimTime) -> SimTime {
        let tick = tick.0.max(1);
        let since = (t.0 + tick - phase.0 % tick) % tick;
        SimTime(tick - since)
    }
}

impl Sampling {
    /// The delay to the next timer sample and whether the near-limit
    /// escalation chose it; `None` when sampling is per request.
    pub fn next_delay(&self, rss_mb: f64, limit_mb: f64) -> Option<(SimTime, bool)> {
        match *self {
            Sampling::Timer { tick, near, .. } => Some(match near {
                Some((fraction, near_tick)) if rss_mb >= limit_mb * (1.0 - fraction) => {
                    (near_tick.min(tick), true)
                }
                _ => (tick, false),
            }),
            Sampling::EveryRequests { .. } => None,
        }
    }

    /// The longest time a worker can be over its limit unseen (timer modes).
    pub fn worst_blind_time(&self) -> Option<SimTime> {
        match *self {
            Sampling::Timer { tick, near, .. } => Some(near.map_or(tick, |(_, n)| n.min(tick))),
            Sampling::EveryRequests { .. } => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn adaptive_sampling_shortens_the_tick_near_the_limit() {
        let s = Sampling::Timer {
            tick: SimTime::from_secs(45),
            near: Some((0.1, SimTime::from_secs(5))),
            clock: SampleClock::PerWorker,
        };
        assert_eq!(
            s.next_delay(440.0, 500.0),
            Some((SimTime::from_secs(45), false))
        );
        assert_eq!(
            s.next_delay(450.0, 500.0),
            Some((SimTime::from_secs(5), true))
        );
        assert_eq!(
            s.next_delay(600.0, 500.0),
            Some((SimTime::from_secs(5), true))
        );
        let plain = Sampling::Timer {
            tick: SimTime::from_secs(45),
            near: None,
            clock: SampleClock::PerWorker,
        };
        assert_eq!(
            plain.next_delay(499.0, 500.0),
            Some((SimTime::from_secs(45), false))
        );
        assert_eq!(Sampling::EveryRequests { n: 50 }.next_delay(1.0, 2.0), None);
    }

    #[test]
    fn a_shared_clock_ticks_at_its_phase_and_never_now() {
        let s = SimTime::from_secs;
        // Phase 10 s, tick 30 s: ticks at 10, 40, 70...
        assert_eq!(SampleClock::next_tick_after(s(0), s(30), s(10)), s(10));
        assert_eq!(SampleClock::next_tick_after(s(10), s(30), s(10)), s(30));
        assert_eq!(SampleClock::next_tick_after(s(11), s(30), s(10)), s(29));
        assert_eq!(SampleClock::next_tick_after(s(39), s(30), s(10)), s(1));
        assert_eq!(SampleClock::next_tick_after(s(100), s(5), s(0)), s(5));
        assert_eq!(SampleClock::next_tick_after(s(101), s(5), s(0)), s(4));
    }
}
