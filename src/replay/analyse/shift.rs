//! A base limit that changed inside a regime no row names: the recycles'
//! `limit_mb`, uniform on `base +- jitter` while the base holds, moving to
//! another range at a deploy. A platform's recycle log often gives no
//! `base_limit_mb`, so two configurations read as one regime, and a
//! calibration of that regime fits a mixture no fleet ran.
//!
//! The test is the likelihood ratio of one uniform against two, split at
//! the best time: `n ln R - k ln R_before - (n - k) ln R_after` over the
//! ranges `R` of the limits, with at least `MIN_SIDE` rows each side. Under
//! one uniform its largest value over the splits was at most 16 in 10,000
//! simulated windows of 20 to 300 rows; `THRESHOLD` is 20. Over 70 rows
//! split in half, a base moved by the jitter gives about 29 (found), by
//! half the jitter about 17 (missed); 100 MB with a 40 MB jitter, about 58.
//! Over 40 rows a move by the jitter is missed too (about 17).

use super::regimes::RegimeView;

/// Rows each side of a split, at least.
const MIN_SIDE: usize = 10;
/// The likelihood ratio past which the limits moved.
const THRESHOLD: f64 = 20.0;

/// Where the limits moved, and their range each side.
#[derive(Clone, Debug, PartialEq)]
pub struct Shift {
    /// The last row before the move and the first after it (seconds).
    pub before_s: f64,
    pub after_s: f64,
    pub before_mb: (f64, f64),
    pub after_mb: (f64, f64),
    /// The likelihood ratio (one range against two).
    pub ratio: f64,
}

fn range(x: &[(f64, f64)]) -> (f64, f64) {
    x.iter()
        .fold((f64::INFINITY, f64::NEG_INFINITY), |(lo, hi), &(_, l)| {
            (lo.min(l), hi.max(l))
        })
}

/// The move of `limits` (`(t_s, limit_mb)` in time order), if the ranges
/// before and after a split explain them better than one range by more
/// than `THRESHOLD`.
pub fn shift(limits: &[(f64, f64)]) -> Option<Shift> {
    let n = limits.len();
    if n < 2 * MIN_SIDE {
        return None;
    }
    let width = |(lo, hi): (f64, f64)| (hi - lo).max(1.0);
    let all = width(range(limits)).ln() * n as f64;
    let mut best: Option<Shift> = None;
    for k in MIN_SIDE..=n - MIN_SIDE {
        let (a, b) = (range(&limits[..k]), range(&limits[k..]));
        let ratio = all - k as f64 * width(a).ln() - (n - k) as f64 * width(b).ln();
        if ratio > THRESHOLD && best.as_ref().is_none_or(|s| ratio > s.ratio) {
            best = Some(Shift {
                before_s: limits[k - 1].0,
                after_s: limits[k].0,
                before_mb: a,
                after_mb: b,
                ratio,
            });
        }
    }
    best
}

/// The warning for a regime whose rows name no base and whose limits moved.
pub fn warning(v: &RegimeView) -> Option<String> {
    if v.key.base_limit_mb.is_some() {
        return None;
    }
    let limits: Vec<(f64, f64)> = v
        .recycles
        .iter()
        .filter_map(|e| Some((e.t_s, e.limit_mb.filter(|l| l.is_finite())?)))
        .collect();
    let s = shift(&limits)?;
    Some(format!(
        "{}: the recycles' limit_mb moved between {:.0} s and {:.0} s ({:.0}-{:.0} MB before, \
         {:.0}-{:.0} MB after; likelihood ratio {:.0} against one range): the base limit changed \
         inside one regime; give the rows base_limit_mb, or replay each side on its own, or the \
         figures and any calibration mix two configurations",
        v.key.label(),
        s.before_s,
        s.after_s,
        s.before_mb.0,
        s.before_mb.1,
        s.after_mb.0,
        s.after_mb.1,
        s.ratio
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A seeded uniform on `[lo, hi]` (xorshift: no dependency).
    fn uniform(state: &mut u64, lo: f64, hi: f64) -> f64 {
        *state ^= *state << 13;
        *state ^= *state >> 7;
        *state ^= *state << 17;
        lo + (hi - lo) * (*state >> 11) as f64 / (1u64 << 53) as f64
    }

    #[test]
    fn one_range_is_no_shift_and_a_moved_base_is_found_where_it_moved() {
        let mut st = 0x9e37_79b9_7f4a_7c15u64;
        let mut false_alarms = 0;
        for n in [20, 40, 70, 150, 300] {
            for _ in 0..200 {
                let x: Vec<(f64, f64)> = (0..n)
                    .map(|i| (i as f64, uniform(&mut st, 510.0, 590.0)))
                    .collect();
                false_alarms += usize::from(shift(&x).is_some());
            }
        }
        assert_eq!(false_alarms, 0, "of 1000 windows of one range");
        // The base 600 +- 40 for 40 recycles, then 500 +- 40 for 56.
        let x: Vec<(f64, f64)> = (0..96)
            .map(|i| {
                let base = if i < 40 { 600.0 } else { 500.0 };
                (100.0 * i as f64, uniform(&mut st, base - 40.0, base + 40.0))
            })
            .collect();
        let s = shift(&x).expect("a moved base");
        assert_eq!((s.before_s, s.after_s), (3900.0, 4000.0));
        assert!(s.before_mb.0 >= 560.0 && s.after_mb.1 <= 540.0, "{s:?}");
        // Too few rows each side: nothing said.
        assert_eq!(shift(&x[30..48]), None);
    }
}
