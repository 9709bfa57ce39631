//! What an RSS series observed directly, per worker life: the RSS a worker
//! started at (boot) and how fast it grew per request. With these, boot and
//! leak velocity are measured, not inferred from recycle rows, and the
//! overshoot past the limit (in ticks) then measures the tick: the
//! confounding of boot and tick in recycle rows is gone.

use crate::replay::recording::Recording;

/// Per-life observations from an RSS series (any order; a life without a
/// value for one of them is simply absent from that list).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Observed {
    /// A life's RSS at its start (its first sample, less what it grew
    /// before that sample when the series counts requests).
    pub boot_mb: Vec<f64>,
    /// A life's growth per request between its first and last samples
    /// (only when the series counts requests).
    pub mb_per_request: Vec<f64>,
    /// Where the values came from, for the notes (e.g. "rss.csv: 37 lives").
    pub source: String,
}

/// The fewest lives a series must show before its boot (or its velocities)
/// replace the recycle rows' inference.
pub const MIN_LIVES: usize = 5;

/// The observed boot: the median of the lives' boots, with the median's
/// standard error (`1.2533 sigma / sqrt(n)`, sigma from the median absolute
/// deviation, `1.4826 MAD`).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct ObservedBoot {
    pub mb: f64,
    pub se: f64,
    pub lives: usize,
}

/// The lognormal of the lives' velocities: mean, cv and the mean's se.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct ObservedVelocity {
    pub mean: f64,
    pub cv: f64,
    pub mean_se: f64,
    pub lives: usize,
}

fn finite_positive(xs: &[f64]) -> Vec<f64> {
    let mut v: Vec<f64> = xs
        .iter()
        .copied()
        .filter(|x| x.is_finite() && *x > 0.0)
        .collect();
    v.sort_by(f64::total_cmp);
    v
}

/// The fewest requests a life must serve between its first and last
/// samples before its growth per request counts (allocator noise of a few
/// MB over a handful of requests is not a velocity).
pub const MIN_LIFE_REQUESTS: u64 = 50;

impl Observed {
    /// What `rec`'s RSS series observed of the lives that overlap
    /// `[start_s, end_s]` (a regime's span); `None` without a series.
    pub fn from_recording(rec: &Recording, start_s: f64, end_s: f64) -> Option<Observed> {
        if rec.series.samples.is_empty() {
            return None;
        }
        let lives: Vec<_> = rec
            .rss_lifetimes()
            .into_iter()
            .filter(|l| l.last_t_s >= start_s && l.first_t_s <= end_s)
            .collect();
        let boot_mb: Vec<f64> = lives
            .iter()
            .filter(|l| l.starts_at_spawn)
            .map(|l| {
                // Less what it grew before its first sample, where counted.
                let grown = match (l.mb_per_request, l.first_requests) {
                    (Some(v), Some(n)) if v > 0.0 => v * n as f64,
                    _ => 0.0,
                };
                l.first_rss_mb - grown
            })
            .collect();
        let mb_per_request: Vec<f64> = lives
            .iter()
            .filter(|l| match (l.first_requests, l.last_requests) {
                (Some(a), Some(b)) => b >= a + MIN_LIFE_REQUESTS,
                _ => false,
            })
            .filter_map(|l| l.mb_per_request)
            .collect();
        let names: std::collections::BTreeSet<&str> = rec
            .sources
            .iter()
            .filter(|s| s.samples > 0)
            .map(|s| s.name.as_str())
            .collect();
        Some(Observed {
            source: format!(
                "{}: {} lives from a spawn, {} with {MIN_LIFE_REQUESTS}+ requests counted",
                names.into_iter().collect::<Vec<_>>().join(", "),
                boot_mb.len(),
                mb_per_request.len()
            ),
            boot_mb,
            mb_per_request,
        })
    }

    /// The boot, when at least `MIN_LIVES` lives were seen starting.
    pub fn boot(&self) -> Option<ObservedBoot> {
        let v = finite_positive(&self.boot_mb);
        if v.len() < MIN_LIVES {
            return None;
        }
        let n = v.len();
        let median = if n % 2 == 1 {
            v[n / 2]
        } else {
            (v[n / 2 - 1] + v[n / 2]) / 2.0
        };
        // A robust spread: a few lives first seen late (grown already)
        // must not widen the median's interval.
        let mut dev: Vec<f64> = v.iter().map(|x| (x - median).abs()).collect();
        dev.sort_by(f64::total_cmp);
        let mad = if n % 2 == 1 {
            dev[n / 2]
        } else {
            (dev[n / 2 - 1] + dev[n / 2]) / 2.0
        };
        Some(ObservedBoot {
            mb: median,
            se: 1.2533 * 1.4826 * mad / (n as f64).sqrt(),
            lives: n,
        })
    }

    /// The lognormal of the velocities (closed-form maximum likelihood),
    /// when at least `MIN_LIVES` lives were seen growing.
    pub fn velocity(&self) -> Option<ObservedVelocity> {
        let v = finite_positive(&self.mb_per_request);
        if v.len() < MIN_LIVES {
            return None;
        }
        let n = v.len() as f64;
        let ln: Vec<f64> = v.iter().map(|x| x.ln()).collect();
        let mu = ln.iter().sum::<f64>() / n;
        let s2 = ln.iter().map(|l| (l - mu).powi(2)).sum::<f64>() / n;
        let mean = (mu + s2 / 2.0).exp();
        let cv = (s2.exp() - 1.0).sqrt();
        // The delta method on mu + s2/2: var = s2/n + s2^2/(2(n-1)).
        let var = s2 / n + s2 * s2 / (2.0 * (n - 1.0).max(1.0));
        Some(ObservedVelocity {
            mean,
            cv,
            mean_se: mean * var.sqrt(),
            lives: v.len(),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn too_few_lives_observe_nothing() {
        let o = Observed {
            boot_mb: vec![360.0; MIN_LIVES - 1],
            mb_per_request: vec![0.1, f64::NAN, -1.0, 0.2, 0.3, 0.4],
            source: String::new(),
        };
        assert!(o.boot().is_none());
        assert!(
            o.velocity().is_none(),
            "NaN and negative values do not count"
        );
    }

    #[test]
    fn boot_is_the_median_and_velocity_the_lognormal() {
        let o = Observed {
            boot_mb: vec![358.0, 362.0, 360.0, 361.0, 359.0, 900.0],
            mb_per_request: vec![0.1, 0.2, 0.4, 0.2, 0.1, 0.4],
            source: String::new(),
        };
        let b = o.boot().unwrap();
        assert_eq!(b.mb, 360.5, "an outlier moves the median by half a step");
        assert_eq!(b.lives, 6);
        let v = o.velocity().unwrap();
        let ln = [0.1f64, 0.2, 0.4, 0.2, 0.1, 0.4].map(f64::ln);
        let mu = ln.iter().sum::<f64>() / 6.0;
        let s2 = ln.iter().map(|l| (l - mu).powi(2)).sum::<f64>() / 6.0;
        assert!((v.mean - (mu + s2 / 2.0).exp()).abs() < 1e-12);
        assert!((v.cv - (s2.exp() - 1.0).sqrt()).abs() < 1e-12);
        assert!(v.mean_se > 0.0 && v.mean_se < v.mean);
    }
}
