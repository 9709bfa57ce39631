//! Small statistics: Welford accumulators, Student-t confidence intervals.

/// Running mean and variance (Welford), numerically stable, O(1) memory.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Welford {
    pub n: u64,
    mean: f64,
    m2: f64,
}

impl Welford {
    pub fn push(&mut self, x: f64) {
        self.n += 1;
        let d = x - self.mean;
        self.mean += d / self.n as f64;
        self.m2 += d * (x - self.mean);
    }

    pub fn mean(&self) -> f64 {
        if self.n == 0 { f64::NAN } else { self.mean }
    }

    /// Sample variance (n - 1 in the denominator).
    pub fn variance(&self) -> f64 {
        if self.n < 2 {
            f64::NAN
        } else {
            self.m2 / (self.n - 1) as f64
        }
    }

    /// Half-width of the 95% confidence interval of the mean (Student t);
    /// infinite with fewer than two samples: one run proves nothing.
    pub fn ci95(&self) -> f64 {
        if self.n < 2 {
            return f64::INFINITY;
        }
        t975(self.n - 1) * (self.variance() / self.n as f64).sqrt()
    }
}

/// The 0.975 quantile of Student's t with `df` degrees of freedom.
pub fn t975(df: u64) -> f64 {
    const TABLE: [f64; 30] = [
        12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228, 2.201, 2.179, 2.160,
        2.145, 2.131, 2.120, 2.110, 2.101, 2.093, 2.086, 2.080, 2.074, 2.069, 2.064, 2.060, 2.056,
        2.052, 2.048, 2.045, 2.042,
    ];
    match df {
        0 => f64::INFINITY,
        1..=30 => TABLE[df as usize - 1],
        _ => {
            // Cornish-Fisher expansion around the normal quantile.
            let z: f64 = 1.959_963_984_540_054;
            let v = df as f64;
            z + (z.powi(3) + z) / (4.0 * v)
                + (5.0 * z.powi(5) + 16.0 * z.powi(3) + 3.0 * z) / (96.0 * v * v)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn welford_matches_the_textbook() {
        let mut w = Welford::default();
        for x in [2.0, 4.0, 4.0, 4.0, 5.0, 5.0, 7.0, 9.0] {
            w.push(x);
        }
        assert_eq!(w.mean(), 5.0);
        assert!((w.variance() - 32.0 / 7.0).abs() < 1e-12);
        assert!((w.ci95() - 2.365 * (32.0f64 / 7.0 / 8.0).sqrt()).abs() < 1e-9);
        assert_eq!(Welford::default().ci95(), f64::INFINITY);
    }

    #[test]
    fn t_quantiles() {
        assert_eq!(t975(1), 12.706);
        assert!((t975(40) - 2.021).abs() < 2e-3);
        assert!((t975(120) - 1.980).abs() < 2e-3);
        assert!((t975(100_000) - 1.960).abs() < 1e-3);
    }
}
