//! The worker memory model: RSS starts at the master's (fork under
//! `--preload`) and grows with every request served: a per-worker leak
//! velocity, a warm-up that fills caches, and rare steps (large allocations
//! that fragment the heap and never return). It never shrinks.

use crate::engine::rng::{StreamRng, open01};
use rand_distr::{Distribution, StandardNormal};

#[derive(Clone, Debug, PartialEq)]
pub enum VelocityDist {
    Constant { mb: f64 },
    Lognormal { mu: f64, sigma: f64 },
    Exponential { mean_mb: f64 },
}

impl VelocityDist {
    /// A lognormal with the given mean and coefficient of variation.
    pub fn lognormal(mean: f64, cv: f64) -> VelocityDist {
        if mean <= 0.0 || cv <= 0.0 {
            return VelocityDist::Constant { mb: mean.max(0.0) };
        }
        let s2 = (1.0 + cv * cv).ln();
        VelocityDist::Lognormal {
            mu: mean.ln() - s2 / 2.0,
            sigma: s2.sqrt(),
        }
    }

    pub fn mean(&self) -> f64 {
        match self {
            VelocityDist::Constant { mb } => *mb,
            VelocityDist::Lognormal { mu, sigma } => (mu + sigma * sigma / 2.0).exp(),
            VelocityDist::Exponential { mean_mb } => *mean_mb,
        }
    }

    pub fn sample(&self, rng: &mut StreamRng) -> f64 {
        match self {
            VelocityDist::Constant { mb } => *mb,
            VelocityDist::Lognormal { mu, sigma } => {
                let z: f64 = StandardNormal.sample(rng);
                (mu + sigma * z).exp()
            }
            VelocityDist::Exponential { mean_mb } => -open01(rng).ln() * mean_mb,
        }
    }
}

#[derive(Clone, Debug, PartialEq)]
pub struct LeakModel {
    pub velocity: VelocityDist,
    pub warmup_mb: f64,
    /// Fraction of the remaining warm-up that one request adds: 1 - e^(-1/warmup_requests).
    pub warmup_rate: f64,
    pub step_probability: f64,
    pub step_mean_mb: f64,
}

impl LeakModel {
    /// The RSS growth of one served request; consumes `warm_left_mb`.
    #[inline]
    pub fn growth(&self, velocity: f64, warm_left_mb: &mut f64, rng: &mut StreamRng) -> f64 {
        let mut d = velocity;
        if *warm_left_mb > 0.0 {
            let w = *warm_left_mb * self.warmup_rate;
            *warm_left_mb -= w;
            d += w;
        }
        if self.step_probability > 0.0 && open01(rng) < self.step_probability {
            d += -open01(rng).ln() * self.step_mean_mb;
        }
        d
    }

    /// Expected RSS growth after `n` requests at `velocity`, steps included.
    pub fn expected_growth(&self, velocity: f64, n: f64) -> f64 {
        let warm = self.warmup_mb * (1.0 - (1.0 - self.warmup_rate).powf(n));
        velocity * n + warm + n * self.step_probability * self.step_mean_mb
    }
}

/// `a.max(b)` for the running maxima of RSS (`sim::memory::set_rss_in`)
/// as one compare (`f64::max`'s NaN handling costs seven instructions).
/// The same value whenever `a` is not NaN and no signed zero is compared:
/// `a` starts at a boot RSS or 0 and only ever takes a `b`; a NaN `b` leaves
/// it, as `f64::max` does; an RSS is never -0 (it is at least its boot RSS),
/// nor is `rss - hard` (a difference of equal values is +0).
#[inline(always)]
pub fn max_mb(a: f64, b: f64) -> f64 {
    if b > a { b } else { a }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::rng::{Stream, stream};

    #[test]
    fn max_mb_is_f64_max_where_the_running_maxima_use_it() {
        // Running maxima start at a boot RSS or 0 and never hold a NaN.
        let values = [
            0.0,
            1e-9,
            360.0,
            360.0 + f64::EPSILON * 512.0,
            512.25,
            -3.5,
            f64::INFINITY,
            f64::MAX,
        ];
        for &a in &values {
            for &b in values.iter().chain([f64::NAN].iter()) {
                let (ours, std) = (max_mb(a, b), a.max(b));
                assert_eq!(ours.to_bits(), std.to_bits(), "max_mb({a}, {b})");
            }
        }
        // A NaN argument leaves the running maximum, as `f64::max` does.
        assert_eq!(max_mb(420.0, f64::NAN), 420.0);
        // The maximum of a stream is its largest value, whatever the order.
        let stream = [400.0, 431.5, 429.0, 431.5, 600.25, 12.0];
        assert_eq!(stream.iter().fold(0.0, |m, &x| max_mb(m, x)), 600.25);
    }

    #[test]
    fn lognormal_velocity_has_the_asked_mean() {
        let d = VelocityDist::lognormal(0.2, 1.0);
        assert!((d.mean() - 0.2).abs() < 1e-12);
        let mut rng = stream(5, Stream::Leak);
        let n = 200_000;
        let m = (0..n).map(|_| d.sample(&mut rng)).sum::<f64>() / n as f64;
        assert!((m / 0.2 - 1.0).abs() < 0.02, "{m}");
    }

    #[test]
    fn growth_matches_its_expectation() {
        let model = LeakModel {
            velocity: VelocityDist::Constant { mb: 0.1 },
            warmup_mb: 40.0,
            warmup_rate: 1.0 - (-1.0f64 / 50.0).exp(),
            step_probability: 0.01,
            step_mean_mb: 5.0,
        };
        let mut rng = stream(9, Stream::MemoryNoise);
        let runs = 400;
        let mut total = 0.0;
        for _ in 0..runs {
            let mut warm = model.warmup_mb;
            for _ in 0..500 {
                let g = model.growth(0.1, &mut warm, &mut rng);
                assert!(g >= 0.1 - 1e-12, "RSS never shrinks");
                total += g;
            }
        }
        let mean = total / runs as f64;
        let expected = model.expected_growth(0.1, 500.0);
        assert!((mean / expected - 1.0).abs() < 0.03, "{mean} vs {expected}");
    }
}
