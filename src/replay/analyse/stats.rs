//! Small summaries shared by the analyses.

use crate::metrics::summary::quantile_sorted;
use serde::Serialize;

/// Gaps are binned this wide to find their mode.
pub const MODE_BIN_S: f64 = 10.0;

/// The shape of a sample: count, extremes, quantiles (numpy's linear
/// interpolation) and mean.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Dist {
    pub n: usize,
    pub min: f64,
    pub p10: f64,
    pub median: f64,
    pub p90: f64,
    pub max: f64,
    pub mean: f64,
}

impl Dist {
    /// `None` for an empty sample.
    pub fn of(values: impl IntoIterator<Item = f64>) -> Option<Dist> {
        let mut xs: Vec<f64> = values.into_iter().collect();
        xs.sort_by(f64::total_cmp);
        let q = |p| quantile_sorted(&xs, p);
        Some(Dist {
            n: xs.len(),
            min: *xs.first()?,
            p10: q(0.1)?,
            median: q(0.5)?,
            p90: q(0.9)?,
            max: *xs.last()?,
            mean: xs.iter().sum::<f64>() / xs.len() as f64,
        })
    }
}

/// The most populated `MODE_BIN_S` bin: `[lo, lo + MODE_BIN_S)` and its
/// count; the lowest such bin on a tie.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Mode {
    pub lo_s: f64,
    pub hi_s: f64,
    pub count: usize,
}

pub fn mode(values: &[f64]) -> Option<Mode> {
    let mut bins: Vec<i64> = values
        .iter()
        .map(|v| (v / MODE_BIN_S).floor() as i64)
        .collect();
    bins.sort_unstable();
    let mut best: Option<(i64, usize)> = None;
    for run in bins.chunk_by(|a, b| a == b) {
        if best.is_none_or(|(_, n)| run.len() > n) {
            best = Some((run[0], run.len()));
        }
    }
    best.map(|(b, count)| Mode {
        lo_s: b as f64 * MODE_BIN_S,
        hi_s: (b + 1) as f64 * MODE_BIN_S,
        count,
    })
}

pub fn mean(values: impl IntoIterator<Item = f64>) -> Option<f64> {
    let (sum, n) = values
        .into_iter()
        .fold((0.0, 0usize), |(s, n), v| (s + v, n + 1));
    (n > 0).then(|| sum / n as f64)
}

pub fn fraction(part: usize, whole: usize) -> Option<f64> {
    (whole > 0).then(|| part as f64 / whole as f64)
}

/// Counts of each label, in order of first appearance.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct LabelCount {
    pub label: String,
    pub count: usize,
}

pub fn label_counts<'a>(labels: impl IntoIterator<Item = &'a str>) -> Vec<LabelCount> {
    let mut out: Vec<LabelCount> = Vec::new();
    for l in labels {
        match out.iter_mut().find(|c| c.label == l) {
            Some(c) => c.count += 1,
            None => out.push(LabelCount {
                label: l.to_string(),
                count: 1,
            }),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dist_and_mode() {
        let d = Dist::of([4.0, 1.0, 3.0, 2.0]).unwrap();
        assert_eq!(
            (d.n, d.min, d.median, d.max, d.mean),
            (4, 1.0, 2.5, 4.0, 2.5)
        );
        assert_eq!(Dist::of([]), None);
        let m = mode(&[131.0, 136.0, 139.9, 125.0, 500.0]).unwrap();
        assert_eq!((m.lo_s, m.hi_s, m.count), (130.0, 140.0, 3));
        assert_eq!(mode(&[]), None);
    }

    #[test]
    fn labels_count_in_first_seen_order() {
        let c = label_counts(["b", "a", "b"]);
        assert_eq!(c[0].label, "b");
        assert_eq!((c[0].count, c[1].count), (2, 1));
    }
}
