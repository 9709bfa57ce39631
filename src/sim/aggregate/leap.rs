//! The aggregate mode's pure pieces: Poisson counts, geometric step gaps, the
//! compound leak of N requests in closed form (`Leak::over`), an instance's fluid backlog
//! over one step, the M/M/c (Erlang C) wait, and the least-outstanding
//! balancer's split of a step's count (`least.rs`). No simulation state here:
//! the counts and the leak are unit-tested against the per-request model
//! they replace, the queueing pieces against known values.

use crate::engine::rng::{StreamRng, open01};
use crate::fleet::LeakModel;
use crate::traffic::ServiceDist;
use rand_distr::{Distribution, StandardNormal};

mod least;
pub use least::LeastOutstanding;

/// Above this mean a Poisson count is drawn from its normal approximation
/// (`round(mean + sqrt(mean) z)`, clamped at 0): at 64 the approximation's
/// mean is exact and its variance within 1%, and inversion would walk ~64
/// terms. Below it, inversion is exact.
pub const POISSON_NORMAL_FROM: f64 = 64.0;

/// A Poisson count by inversion, with `e^-mean` cached: the workers of an
/// instance that served the whole step share one mean.
#[derive(Default)]
pub struct Poisson {
    mean: f64,
    exp_neg: f64,
}

impl Poisson {
    pub fn new() -> Self {
        Poisson {
            mean: 0.0,
            exp_neg: 1.0,
        }
    }

    /// One draw with mean `mean` (>= 0).
    #[inline]
    pub fn draw(&mut self, mean: f64, rng: &mut StreamRng) -> u64 {
        if mean <= 0.0 {
            return 0;
        }
        if mean >= POISSON_NORMAL_FROM {
            let z: f64 = StandardNormal.sample(rng);
            return (mean + mean.sqrt() * z + 0.5).floor().max(0.0) as u64;
        }
        if mean != self.mean {
            self.mean = mean;
            self.exp_neg = (-mean).exp();
        }
        let u = open01(rng);
        let (mut k, mut p) = (0u64, self.exp_neg);
        let mut cdf = p;
        while u > cdf && p > 0.0 {
            k += 1;
            p *= mean / k as f64;
            cdf += p;
        }
        k
    }

    /// One draw given that it is not zero (the zero-truncated Poisson): a
    /// worker known to be busy holds at least one request. By inversion of
    /// `P(K = k | K >= 1) = e^-mean mean^k / k! / (1 - e^-mean)`; for a
    /// large mean zero has no weight, and for `mean <= 0` the count is 1.
    pub fn draw_positive(&mut self, mean: f64, rng: &mut StreamRng) -> u64 {
        if mean <= 0.0 {
            return 1;
        }
        if mean >= POISSON_NORMAL_FROM {
            return self.draw(mean, rng).max(1);
        }
        let u = open01(rng) * -(-mean).exp_m1();
        let (mut k, mut p) = (1u64, (-mean).exp() * mean);
        let mut cdf = p;
        while u > cdf && p > 0.0 {
            k += 1;
            p *= mean / k as f64;
            cdf += p;
        }
        k
    }
}

/// Powers `base^n`, tabled for the small `n` a step's count takes (a
/// `powf` per worker per step was a fifth of the large fleet's time).
pub struct Powers {
    base: f64,
    table: Vec<f64>,
}

impl Powers {
    const TABLED: usize = 512;

    pub fn new(base: f64) -> Self {
        let mut table = Vec::with_capacity(Self::TABLED);
        let mut x = 1.0;
        for _ in 0..Self::TABLED {
            table.push(x);
            x *= base;
        }
        Powers { base, table }
    }

    #[inline]
    pub fn pow(&self, n: u64) -> f64 {
        match self.table.get(n as usize) {
            Some(&x) => x,
            None => self.base.powf(n as f64),
        }
    }
}

/// The leak model with the warm-up's powers tabled.
///
/// Rare steps are kept as a renewal process in request count: each worker
/// holds the index of the request that brings its next step, and the gap
/// to the one after is geometric (the count of Bernoulli(p) trials to the
/// first success). This is the per-request model exactly, whatever the
/// batching: the same draws give the same path whether the worker serves
/// its requests one, five or five hundred to a step, which keeps a
/// warm-started worker's future the one its age was drawn from.
pub struct Leak {
    pub model: LeakModel,
    warm_keep: Powers,
    /// `1 / ln(1 - step_probability)`, for geometric gaps by inversion.
    inv_ln_q: f64,
}

impl Leak {
    pub fn new(model: &LeakModel) -> Self {
        Leak {
            warm_keep: Powers::new(1.0 - model.warmup_rate),
            inv_ln_q: 1.0 / (1.0 - model.step_probability).ln(),
            model: model.clone(),
        }
    }

    /// Requests from one step to the next (at least 1); `u64::MAX` when
    /// steps never happen.
    #[inline]
    pub fn step_gap(&self, rng: &mut StreamRng) -> u64 {
        let p = self.model.step_probability;
        if p <= 0.0 {
            return u64::MAX;
        }
        if p >= 1.0 {
            return 1;
        }
        let g = (open01(rng).ln() * self.inv_ln_q).floor() + 1.0;
        if g >= u64::MAX as f64 {
            u64::MAX
        } else {
            g as u64
        }
    }

    /// The RSS growth of requests `before + 1 ..= before + n` of one
    /// worker: `velocity x n`, the warm-up those `n` requests consume in
    /// closed form (each request takes `warmup_rate` of what is left, so
    /// `n` leave `(1 - rate)^n` of it), and the steps whose request index
    /// falls in the range, each exponential. The same law as `n` calls of
    /// `LeakModel::growth`.
    #[inline]
    pub fn over(
        &self,
        velocity: f64,
        warm_left_mb: &mut f64,
        before: u64,
        n: u64,
        next_step_at: &mut u64,
        rng: &mut StreamRng,
    ) -> f64 {
        if n == 0 {
            return 0.0;
        }
        let mut d = velocity * n as f64;
        if *warm_left_mb > 0.0 {
            let w = *warm_left_mb * (1.0 - self.warm_keep.pow(n));
            *warm_left_mb -= w;
            d += w;
        }
        let end = before.saturating_add(n);
        while *next_step_at <= end {
            d += -open01(rng).ln() * self.model.step_mean_mb;
            *next_step_at = next_step_at.saturating_add(self.step_gap(rng));
        }
        d
    }
}

/// One instance over one step, in expected requests.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct InstanceStep {
    /// Requests served in the step (split over its serving workers).
    pub served: f64,
    /// Refused at a full backlog (503).
    pub backlog_full: f64,
    /// Waited longer than the queue timeout (504).
    pub timed_out: f64,
}

/// What one instance's queue does over a step, as a fluid: `arrivals`
/// join the backlog `queue`, at most `capacity` (serving slot-seconds /
/// mean service time) leave it served. What stays past `backlog` is a 503;
/// what would wait longer than `timeout_s` at the current service rate (or,
/// with no worker serving, arrived more than `timeout_s` ago) is a 504.
/// Below capacity the queue stays empty and everything is served.
#[allow(clippy::too_many_arguments)]
pub fn instance_step(
    queue: &mut f64,
    starved_s: &mut f64,
    arrivals: f64,
    capacity: f64,
    backlog: f64,
    timeout_s: f64,
    step_s: f64,
) -> InstanceStep {
    let total = *queue + arrivals;
    let served = total.min(capacity);
    let mut q = total - served;
    let backlog_full = (q - backlog).max(0.0);
    q -= backlog_full;
    let limit = if capacity > 0.0 {
        *starved_s = 0.0;
        capacity / step_s * timeout_s
    } else {
        *starved_s += step_s;
        if *starved_s > timeout_s {
            arrivals / step_s * timeout_s
        } else {
            f64::INFINITY
        }
    };
    let timed_out = (q - limit).max(0.0);
    *queue = q - timed_out;
    InstanceStep {
        served,
        backlog_full,
        timed_out,
    }
}

/// M/M/c: the probability an arrival waits (Erlang C) and the mean wait of
/// those that do, in seconds; `None` at or over capacity (or no server).
pub fn erlang_c(servers: u32, lambda: f64, mu: f64) -> Option<(f64, f64)> {
    let c = servers as f64;
    if servers == 0 || lambda >= c * mu {
        return None;
    }
    if lambda <= 0.0 {
        return Some((0.0, 1.0 / (c * mu)));
    }
    let a = lambda / mu;
    // Erlang B by its stable recursion, then C from B.
    let mut b = 1.0;
    for k in 1..=servers {
        b = a * b / (k as f64 + a * b);
    }
    let rho = a / c;
    let p_wait = b / (1.0 - rho * (1.0 - b));
    Some((p_wait, 1.0 / (c * mu - lambda)))
}

/// The mean residual service time a drain waits for when it finds the
/// worker busy: `E[S^2] / (2 E[S])` (the inspection paradox), microseconds.
pub fn mean_residual_us(s: &ServiceDist) -> f64 {
    match *s {
        ServiceDist::Constant { us } => us / 2.0,
        ServiceDist::Exponential { mean_us } => mean_us,
        ServiceDist::Lognormal { mu, sigma } => {
            let m1 = (mu + sigma * sigma / 2.0).exp();
            let m2 = (2.0 * mu + 2.0 * sigma * sigma).exp();
            m2 / (2.0 * m1)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::rng::{Stream, stream};
    use crate::fleet::VelocityDist;

    fn moments(xs: &[f64]) -> (f64, f64) {
        let n = xs.len() as f64;
        let m = xs.iter().sum::<f64>() / n;
        let v = xs.iter().map(|x| (x - m) * (x - m)).sum::<f64>() / (n - 1.0);
        (m, v)
    }

    #[test]
    fn poisson_counts_have_mean_and_variance_equal() {
        let mut rng = stream(3, Stream::Arrivals);
        let mut p = Poisson::new();
        for mean in [0.05, 0.8, 5.0, 40.0, 200.0] {
            let xs: Vec<f64> = (0..100_000)
                .map(|_| p.draw(mean, &mut rng) as f64)
                .collect();
            let (m, v) = moments(&xs);
            assert!((m / mean - 1.0).abs() < 0.02, "mean {mean}: got {m}");
            assert!((v / mean - 1.0).abs() < 0.04, "mean {mean}: variance {v}");
        }
        assert_eq!(p.draw(0.0, &mut rng), 0);
    }

    #[test]
    fn positive_counts_are_poisson_given_not_zero() {
        let mut rng = stream(5, Stream::Client);
        let mut p = Poisson::new();
        for mean in [0.001, 0.05, 0.8, 5.0, 200.0] {
            let xs: Vec<u64> = (0..100_000)
                .map(|_| p.draw_positive(mean, &mut rng))
                .collect();
            assert!(xs.iter().all(|&x| x >= 1), "mean {mean}: a zero");
            let m = xs.iter().sum::<u64>() as f64 / xs.len() as f64;
            let expected = mean / -(-mean).exp_m1();
            assert!(
                (m / expected - 1.0).abs() < 0.01,
                "mean {mean}: {m} vs {expected}"
            );
        }
        assert_eq!(p.draw_positive(0.0, &mut rng), 1);
    }

    #[test]
    fn geometric_gaps_put_steps_at_rate_p() {
        let m = LeakModel {
            step_probability: 0.01,
            ..model()
        };
        let leak = Leak::new(&m);
        let mut rng = stream(4, Stream::MemoryNoise);
        let mut gaps = 0.0;
        for _ in 0..100_000 {
            let g = leak.step_gap(&mut rng);
            assert!(g >= 1);
            gaps += g as f64;
        }
        assert!((gaps / 100_000.0 / 100.0 - 1.0).abs() < 0.02, "{gaps}");
        let p = Powers::new(0.99);
        assert!((p.pow(1000) - 0.99f64.powi(1000)).abs() < 1e-12);
        assert!((p.pow(37) - 0.99f64.powi(37)).abs() < 1e-15);
        let none = Leak::new(&LeakModel {
            step_probability: 0.0,
            ..model()
        });
        assert_eq!(none.step_gap(&mut rng), u64::MAX);
    }

    #[test]
    fn the_step_path_does_not_depend_on_the_batching() {
        let leak = Leak::new(&model());
        let run = |leaps: &[u64]| {
            let mut rng = stream(8, Stream::MemoryNoise);
            let (mut warm, mut before) = (62.0, 0u64);
            let mut next = leak.step_gap(&mut rng);
            let mut rss = 0.0;
            for &n in leaps {
                rss += leak.over(0.044, &mut warm, before, n, &mut next, &mut rng);
                before += n;
            }
            rss
        };
        let ones = run(&[1; 3000]);
        let lumps = run(&[700, 1, 0, 1299, 500, 500]);
        assert!((ones - lumps).abs() < 1e-6, "{ones} vs {lumps}");
    }

    fn model() -> LeakModel {
        LeakModel {
            velocity: VelocityDist::Constant { mb: 0.044 },
            warmup_mb: 62.0,
            warmup_rate: 1.0 - (-1.0f64 / 70.0).exp(),
            step_probability: 0.0055,
            step_mean_mb: 19.5,
        }
    }

    #[test]
    fn warm_up_in_closed_form_equals_n_single_requests() {
        let m = LeakModel {
            step_probability: 0.0,
            ..model()
        };
        let mut rng = stream(1, Stream::MemoryNoise);
        let (mut warm_one, mut warm_all) = (m.warmup_mb, m.warmup_mb);
        let one: f64 = (0..137)
            .map(|_| m.growth(0.044, &mut warm_one, &mut rng))
            .sum();
        let mut never = u64::MAX;
        let all = Leak::new(&m).over(0.044, &mut warm_all, 0, 137, &mut never, &mut rng);
        assert!((one - all).abs() < 1e-9, "{one} vs {all}");
        assert!((warm_one - warm_all).abs() < 1e-9);
    }

    #[test]
    fn compound_growth_is_n_times_the_mean_velocity_plus_warm_up_and_steps() {
        let m = model();
        let leak = Leak::new(&m);
        let mut rng = stream(2, Stream::MemoryNoise);
        let (runs, n) = (20_000, 300u64);
        let mut total = 0.0;
        for _ in 0..runs {
            let mut warm = m.warmup_mb;
            let mut next = leak.step_gap(&mut rng);
            // Served in uneven leaps, as a worker's steps would.
            let mut done = 0;
            for leap in [1u64, 7, 0, 50, 2, 240] {
                let k = leap.min(n - done);
                total += leak.over(0.044, &mut warm, done, k, &mut next, &mut rng);
                done += k;
            }
            assert_eq!(done, n);
        }
        let mean = total / runs as f64;
        let expected = m.expected_growth(0.044, n as f64);
        assert!((mean / expected - 1.0).abs() < 0.01, "{mean} vs {expected}");
        assert_eq!(leak.over(0.044, &mut 5.0, 0, 0, &mut 1, &mut rng), 0.0);
    }

    #[test]
    fn a_fluid_queue_serves_everything_below_capacity() {
        let (mut q, mut starved) = (0.0, 0.0);
        let s = instance_step(&mut q, &mut starved, 40.0, 80.0, 2048.0, 30.0, 1.0);
        assert_eq!(s.served, 40.0);
        assert_eq!((s.backlog_full, s.timed_out, q), (0.0, 0.0, 0.0));
        // Over capacity, the excess queues, then times out past 30 s of work.
        for _ in 0..100 {
            instance_step(&mut q, &mut starved, 120.0, 80.0, 1e9, 30.0, 1.0);
        }
        assert!((q - 80.0 * 30.0).abs() < 1e-9, "{q}");
        // A small backlog refuses what does not fit.
        let mut q2 = 0.0;
        let s = instance_step(&mut q2, &mut starved, 120.0, 80.0, 10.0, 30.0, 1.0);
        assert_eq!((s.served, s.backlog_full, q2), (80.0, 30.0, 10.0));
        // With nobody serving, requests wait up to the timeout, then fail.
        let (mut q3, mut st3) = (0.0, 0.0);
        let s = instance_step(&mut q3, &mut st3, 5.0, 0.0, 2048.0, 30.0, 2.0);
        assert_eq!((s.served, s.timed_out, q3), (0.0, 0.0, 5.0));
        for _ in 0..20 {
            instance_step(&mut q3, &mut st3, 5.0, 0.0, 2048.0, 30.0, 2.0);
        }
        assert!((q3 - 75.0).abs() < 1e-9, "{q3}");
        let s = instance_step(&mut q3, &mut st3, 5.0, 1000.0, 2048.0, 30.0, 2.0);
        assert_eq!((s.served, q3), (80.0, 0.0));
    }

    #[test]
    fn erlang_c_matches_known_values() {
        // M/M/1: P(wait) = rho, wait given waiting 1 / (mu - lambda).
        let (p, w) = erlang_c(1, 8.0, 10.0).unwrap();
        assert!((p - 0.8).abs() < 1e-12 && (w - 0.5).abs() < 1e-12);
        // M/M/2 at a = 1: C = 1/3.
        let (p, _) = erlang_c(2, 1.0, 1.0).unwrap();
        assert!((p - 1.0 / 3.0).abs() < 1e-12, "{p}");
        assert!(erlang_c(8, 80.0, 10.0).is_none());
        assert!(erlang_c(0, 1.0, 10.0).is_none());
    }

    #[test]
    fn residual_service_is_the_inspection_paradox() {
        let e = ServiceDist::Exponential { mean_us: 100.0 };
        assert_eq!(mean_residual_us(&e), 100.0);
        let c = ServiceDist::Constant { us: 100.0 };
        assert_eq!(mean_residual_us(&c), 50.0);
        let l = ServiceDist::lognormal_from_mean_p99(120_000.0, 900_000.0).unwrap();
        // cv > 1: a drain finds a longer-than-average request in flight.
        assert!(mean_residual_us(&l) > 120_000.0);
    }
}
