//! Service-time distributions, parameterised the way SREs read dashboards:
//! a mean, and for the lognormal a p99.

use crate::engine::rng::StreamRng;
use crate::engine::time::{SimTime, round_u64};
use rand_distr::{Distribution, Exp1, StandardNormal};

/// z of the 99th percentile of the standard normal.
pub const Z99: f64 = 2.326_347_874_040_841;

#[derive(Clone, Debug, PartialEq)]
pub enum ServiceDist {
    Constant { us: f64 },
    Exponential { mean_us: f64 },
    Lognormal { mu: f64, sigma: f64 },
}

impl ServiceDist {
    /// A lognormal with the given mean and 99th percentile, or `None` when
    /// no lognormal has them (p99 <= mean, or p99 / mean above e^(Z99^2/2) ~ 15).
    pub fn lognormal_from_mean_p99(mean_us: f64, p99_us: f64) -> Option<ServiceDist> {
        // ln p99 - ln mean = Z99 sigma - sigma^2 / 2; take the smaller root.
        let d = (p99_us / mean_us).ln();
        let disc = Z99 * Z99 - 2.0 * d;
        if d <= 0.0 || disc < 0.0 {
            return None;
        }
        let sigma = Z99 - disc.sqrt();
        let mu = mean_us.ln() - sigma * sigma / 2.0;
        Some(ServiceDist::Lognormal { mu, sigma })
    }

    pub fn mean_us(&self) -> f64 {
        match self {
            ServiceDist::Constant { us } => *us,
            ServiceDist::Exponential { mean_us } => *mean_us,
            ServiceDist::Lognormal { mu, sigma } => (mu + sigma * sigma / 2.0).exp(),
        }
    }

    /// One service time, at least one microsecond.
    #[inline]
    pub fn sample(&self, rng: &mut StreamRng) -> SimTime {
        match self {
            ServiceDist::Constant { us } => constant(*us),
            ServiceDist::Exponential { mean_us } => exponential(*mean_us, rng),
            ServiceDist::Lognormal { mu, sigma } => lognormal(*mu, *sigma, rng),
        }
    }

    /// `out.len()` service times: the values `sample` returns one by one,
    /// with the distribution matched once, outside the loop.
    pub fn fill(&self, rng: &mut StreamRng, out: &mut [SimTime]) {
        match self {
            ServiceDist::Constant { us } => out.fill(constant(*us)),
            ServiceDist::Exponential { mean_us } => {
                for x in out {
                    *x = exponential(*mean_us, rng);
                }
            }
            ServiceDist::Lognormal { mu, sigma } => {
                for x in out {
                    *x = lognormal(*mu, *sigma, rng);
                }
            }
        }
    }
}

/// A drawn time in microseconds as a service time: rounded, at least 1 us.
#[inline(always)]
fn at_least_1us(us: f64) -> SimTime {
    SimTime(round_u64(us).max(1))
}

#[inline(always)]
fn constant(us: f64) -> SimTime {
    at_least_1us(us)
}

#[inline(always)]
fn exponential(mean_us: f64, rng: &mut StreamRng) -> SimTime {
    let e: f64 = Exp1.sample(rng);
    at_least_1us(e * mean_us)
}

#[inline(always)]
fn lognormal(mu: f64, sigma: f64, rng: &mut StreamRng) -> SimTime {
    let z: f64 = StandardNormal.sample(rng);
    at_least_1us((mu + sigma * z).exp())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::rng::{Stream, stream};

    #[test]
    fn lognormal_hits_mean_and_p99() {
        let d = ServiceDist::lognormal_from_mean_p99(100_000.0, 800_000.0).unwrap();
        assert!((d.mean_us() - 100_000.0).abs() < 1e-6);
        let mut rng = stream(1, Stream::Service);
        let mut xs: Vec<f64> = (0..200_000).map(|_| d.sample(&mut rng).0 as f64).collect();
        xs.sort_by(f64::total_cmp);
        let mean = xs.iter().sum::<f64>() / xs.len() as f64;
        let p99 = xs[(xs.len() as f64 * 0.99) as usize];
        assert!((mean / 100_000.0 - 1.0).abs() < 0.02, "mean {mean}");
        assert!((p99 / 800_000.0 - 1.0).abs() < 0.03, "p99 {p99}");
    }

    #[test]
    fn impossible_lognormals_are_refused() {
        assert!(ServiceDist::lognormal_from_mean_p99(100.0, 90.0).is_none());
        assert!(ServiceDist::lognormal_from_mean_p99(100.0, 100_000.0).is_none());
    }
}
