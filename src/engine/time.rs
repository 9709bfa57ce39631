//! Simulated time in integer microseconds since the start of the window.

use std::fmt;
use std::ops::{Add, Sub};

/// A point in simulated time, in microseconds since the window start.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct SimTime(pub u64);

/// Microseconds per second.
pub const US_PER_S: u64 = 1_000_000;

impl SimTime {
    pub const ZERO: SimTime = SimTime(0);
    pub const MAX: SimTime = SimTime(u64::MAX);

    /// Converts seconds to simulated time, rounding to the nearest microsecond.
    /// Callers validate the input: negative or non-finite seconds are a bug here.
    pub fn from_secs_f64(s: f64) -> SimTime {
        debug_assert!(s.is_finite() && s >= 0.0, "bad duration {s}");
        SimTime((s * US_PER_S as f64).round() as u64)
    }

    pub fn from_secs(s: u64) -> SimTime {
        SimTime(s * US_PER_S)
    }

    pub fn from_millis_f64(ms: f64) -> SimTime {
        SimTime::from_secs_f64(ms / 1000.0)
    }

    pub fn as_secs_f64(self) -> f64 {
        self.0 as f64 / US_PER_S as f64
    }

    pub fn as_millis_f64(self) -> f64 {
        self.0 as f64 / 1000.0
    }

    pub fn saturating_sub(self, other: SimTime) -> SimTime {
        SimTime(self.0.saturating_sub(other.0))
    }
}

impl Add for SimTime {
    type Output = SimTime;
    fn add(self, rhs: SimTime) -> SimTime {
        SimTime(self.0.checked_add(rhs.0).expect("simulated time overflow"))
    }
}

impl Sub for SimTime {
    type Output = SimTime;
    fn sub(self, rhs: SimTime) -> SimTime {
        SimTime(
            self.0
                .checked_sub(rhs.0)
                .expect("simulated time went backwards"),
        )
    }
}

impl fmt::Display for SimTime {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{:.6}s", self.as_secs_f64())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn seconds_round_trip() {
        assert_eq!(SimTime::from_secs_f64(1.5).0, 1_500_000);
        assert_eq!(SimTime::from_secs_f64(0.0000004).0, 0);
        assert_eq!(SimTime::from_secs_f64(0.0000006).0, 1);
        assert_eq!(SimTime::from_secs(45).as_secs_f64(), 45.0);
    }

    #[test]
    #[should_panic(expected = "backwards")]
    fn subtraction_below_zero_panics() {
        let _ = SimTime(1) - SimTime(2);
    }
}
