//! What an RSS series observed directly, per worker life: the RSS a worker
//! started at (boot) and how fast it grew per request. With these, boot and
//! leak velocity are measured, not inferred from recycle rows, and the
//! overshoot past the limit (in ticks) then measures the tick: the
//! confounding of boot and tick in recycle rows is gone.

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
/// standard error (`1.2533 sd / sqrt(n)`, normal approximation).
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

impl Observed {
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
        let mean = v.iter().sum::<f64>() / n as f64;
        let sd = (v.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / (n - 1) as f64).sqrt();
        Some(ObservedBoot {
            mb: median,
            se: 1.2533 * sd / (n as f64).sqrt(),
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
