//! A log-linear histogram of non-negative integers (HDR-style): exact below
//! 128, then 64 buckets per power of two, so a quantile is within 1.6% of
//! the truth. Fixed size, no allocation per record.

const SUB_BITS: u32 = 7;
const SUB: u64 = 1 << SUB_BITS;
const HALF: usize = (SUB / 2) as usize;
const BUCKETS: usize = HALF * (64 - SUB_BITS as usize + 2) + HALF;

#[derive(Clone)]
pub struct LogHistogram {
    counts: Vec<u64>,
    total: u64,
    /// The sum of the values, exact: integer adds, where an `f64` sum
    /// would also be exact below 2^53 and cost a conversion per record.
    sum: u128,
}

impl Default for LogHistogram {
    fn default() -> Self {
        Self::new()
    }
}

impl LogHistogram {
    pub fn new() -> Self {
        LogHistogram {
            counts: vec![0; BUCKETS],
            total: 0,
            sum: 0,
        }
    }

    #[inline]
    fn index(v: u64) -> usize {
        if v < SUB {
            return v as usize;
        }
        let k = 63 - v.leading_zeros();
        let shift = k - SUB_BITS + 1;
        shift as usize * HALF + (v >> shift) as usize
    }

    /// The smallest value that falls in bucket `i`, and the bucket's width.
    fn bounds(i: usize) -> (u64, u64) {
        if i < SUB as usize {
            return (i as u64, 1);
        }
        let shift = (i / HALF - 1) as u32;
        let mantissa = (i - (shift as usize) * HALF) as u64;
        (mantissa << shift, 1 << shift)
    }

    #[inline]
    pub fn record(&mut self, v: u64) {
        self.counts[Self::index(v)] += 1;
        self.total += 1;
        self.sum += v as u128;
    }

    /// Records `n` copies of `v` (the aggregate mode's weighted estimates).
    #[inline]
    pub fn record_n(&mut self, v: u64, n: u64) {
        self.counts[Self::index(v)] += n;
        self.total += n;
        self.sum += v as u128 * n as u128;
    }

    pub fn count(&self) -> u64 {
        self.total
    }

    pub fn mean(&self) -> Option<f64> {
        (self.total > 0).then(|| self.sum as f64 / self.total as f64)
    }

    /// The value at quantile `q` in [0, 1] (bucket midpoint), or `None` if empty.
    pub fn quantile(&self, q: f64) -> Option<f64> {
        if self.total == 0 {
            return None;
        }
        let rank = ((q.clamp(0.0, 1.0) * self.total as f64).ceil() as u64).max(1);
        let mut seen = 0;
        for (i, &c) in self.counts.iter().enumerate() {
            seen += c;
            if seen >= rank {
                let (lo, width) = Self::bounds(i);
                return Some(lo as f64 + (width as f64 - 1.0) / 2.0);
            }
        }
        unreachable!("rank {rank} beyond total {}", self.total)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn indices_are_contiguous_and_bounded() {
        let mut last = 0;
        for v in (0..100_000u64).chain([u64::MAX / 2, u64::MAX]) {
            let i = LogHistogram::index(v);
            assert!(i < BUCKETS, "{v} -> {i}");
            let (lo, w) = LogHistogram::bounds(i);
            assert!(lo <= v && v - lo < w, "{v} not in bucket {i} [{lo}, +{w})");
            if v < 100_000 {
                assert!(i == last || i == last + 1);
                last = i;
            }
        }
    }

    #[test]
    fn quantiles_are_within_two_percent() {
        let mut h = LogHistogram::new();
        for v in 1..=1_000_000u64 {
            h.record(v);
        }
        for q in [0.1, 0.5, 0.9, 0.99] {
            let got = h.quantile(q).unwrap();
            let want = q * 1_000_000.0;
            assert!((got / want - 1.0).abs() < 0.02, "q{q}: {got} vs {want}");
        }
        assert_eq!(LogHistogram::new().quantile(0.5), None);
    }
}
