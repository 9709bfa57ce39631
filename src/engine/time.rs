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

/// `x.round() as u64` (half away from zero, saturating), without a call.
///
/// x86-64's baseline instruction set has no rounding instruction, so
/// `f64::round` is a library call; this is the hot path of every service
/// draw. Below 2^52, `x as u64` truncates exactly, `t as f64` is exact, and
/// `x - t` is exact (it keeps only the fraction bits of `x`), so the result
/// is `round(x)` bit for bit. Other inputs (huge, negative, NaN) take `round`.
#[inline]
pub fn round_u64(x: f64) -> u64 {
    const EXACT_BELOW: f64 = (1u64 << 52) as f64;
    if (0.0..EXACT_BELOW).contains(&x) {
        // Through i64: one conversion instruction each way on x86-64 (the
        // u64 ones branch), exact for x below 2^52.
        let t = x as i64;
        (t + (x - t as f64 >= 0.5) as i64) as u64
    } else {
        x.round() as u64
    }
}

impl Add for SimTime {
    type Output = SimTime;
    #[inline]
    fn add(self, rhs: SimTime) -> SimTime {
        SimTime(self.0.checked_add(rhs.0).expect("simulated time overflow"))
    }
}

impl Sub for SimTime {
    type Output = SimTime;
    #[inline]
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
    fn round_u64_matches_round() {
        use crate::engine::rng::{Stream, stream};
        use rand::RngCore;
        let edges = [
            0.0,
            -0.0,
            0.5,
            0.49999999999999994,
            1.5,
            2.5,
            -0.7,
            4_503_599_627_370_495.5,
            4_503_599_627_370_496.0,
            9_007_199_254_740_993.0,
            1e300,
            f64::INFINITY,
            f64::NAN,
        ];
        for x in edges {
            assert_eq!(round_u64(x), x.round() as u64, "{x}");
        }
        let mut rng = stream(3, Stream::Service);
        for _ in 0..200_000 {
            let bits = rng.next_u64();
            // Random magnitudes across 2^-10 .. 2^54, and exact halves.
            let x = f64::from_bits((bits >> 12) | ((1013 + (bits & 63)) << 52));
            let half = (bits >> 20) as f64 + 0.5;
            for v in [x, half, x.floor() + 0.5] {
                assert_eq!(round_u64(v), v.round() as u64, "{v}");
            }
        }
    }

    #[test]
    #[should_panic(expected = "backwards")]
    fn subtraction_below_zero_panics() {
        let _ = SimTime(1) - SimTime(2);
    }
}
