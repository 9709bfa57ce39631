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
    },
    EveryRequests {
        n: u64,
    },
}

impl Sampling {
    /// The delay to the next timer sample and whether the near-limit
    /// escalation chose it; `None` when sampling is per request.
    pub fn next_delay(&self, rss_mb: f64, limit_mb: f64) -> Option<(SimTime, bool)> {
        match *self {
            Sampling::Timer { tick, near } => Some(match near {
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
            Sampling::Timer { tick, near } => Some(near.map_or(tick, |(_, n)| n.min(tick))),
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
        };
        assert_eq!(
            plain.next_delay(499.0, 500.0),
            Some((SimTime::from_secs(45), false))
        );
        assert_eq!(Sampling::EveryRequests { n: 50 }.next_delay(1.0, 2.0), None);
    }
}
