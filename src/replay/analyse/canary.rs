//! Recycle-to-canary correlation: the seeds' one join that pointed at the
//! recycler before anyone hunted a leak. Client canary events (`retry_ok`,
//! `fetch_failed`) within a window after a recycle, against the share of
//! time those windows cover (the rate if canaries ignored recycles), and the
//! peak hour's recycles and canaries interleaved on one timeline.

use super::rate::{HOUR_S, peak_hour};
use super::regimes::RegimeView;
use super::stats::{Dist, fraction};
use crate::metrics::EventKind;
use crate::replay::Event;
use serde::Serialize;

/// Lines of the peak hour's interleaved timeline kept, at most.
const TIMELINE_LINES: usize = 60;
/// The timeline opens this long before the peak hour's first recycle.
const TIMELINE_LEAD_S: f64 = 300.0;

#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Canary {
    pub window_s: f64,
    pub retry_ok: usize,
    pub fetch_failed: usize,
    /// Canary events within `window_s` after a recycle (any instance).
    pub after_recycle: usize,
    pub after_recycle_fraction: Option<f64>,
    /// Share of the regime's span inside some `[recycle, recycle + window)`.
    pub covered_fraction: Option<f64>,
    /// `after_recycle_fraction / covered_fraction`: 1 if independent.
    pub lift: Option<f64>,
    pub per_hour_after_recycle: Option<f64>,
    pub per_hour_elsewhere: Option<f64>,
    /// Seconds from the latest recycle to each canary event.
    pub lag_s: Option<Dist>,
    pub peak_hour: Option<Burst>,
}

/// The peak recycle hour with its canaries, interleaved.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Burst {
    pub start_s: f64,
    pub recycles: usize,
    pub first_recycle_s: f64,
    pub last_recycle_s: f64,
    /// First to last recycle, minutes (the seeds' "31 minutes").
    pub span_min: f64,
    pub canaries: usize,
    /// Canary events per hour outside the peak hour.
    pub canaries_per_hour_elsewhere: Option<f64>,
    /// Recycles and canaries from `TIMELINE_LEAD_S` before the hour to its end.
    pub timeline: Vec<TimelineLine>,
}

#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct TimelineLine {
    pub t_s: f64,
    pub event: String,
    pub instance: Option<String>,
}

/// The union length of `[t, t + w)` windows clipped to `[lo, hi]` (`ts` sorted).
fn covered(ts: &[f64], w: f64, lo: f64, hi: f64) -> f64 {
    let (mut total, mut reach) = (0.0, f64::NEG_INFINITY);
    for &t in ts {
        let (a, b) = (t.max(reach).max(lo), (t + w).min(hi));
        if b > a {
            total += b - a;
        }
        reach = reach.max(t + w);
    }
    total
}

/// Seconds since the latest recycle at or before `t` (`ts` sorted).
fn lag(ts: &[f64], t: f64) -> Option<f64> {
    let i = ts.partition_point(|r| *r <= t);
    (i > 0).then(|| t - ts[i - 1])
}

pub fn canary(v: &RegimeView, window_s: f64) -> Canary {
    let ts: Vec<f64> = v.recycles.iter().map(|e| e.t_s).collect();
    let canaries: Vec<&Event> = v
        .events
        .iter()
        .copied()
        .filter(|e| e.kind.is_canary())
        .collect();
    let lags: Vec<f64> = canaries.iter().filter_map(|e| lag(&ts, e.t_s)).collect();
    let after = lags.iter().filter(|l| **l < window_s).count();
    let span = (v.end_s - v.start_s).max(0.0);
    let cov = covered(&ts, window_s, v.start_s, v.end_s);
    let after_frac = fraction(after, canaries.len());
    let cov_frac = (span > 0.0).then(|| cov / span);
    Canary {
        window_s,
        retry_ok: canaries.iter().filter(|e| e.is(EventKind::RetryOk)).count(),
        fetch_failed: canaries
            .iter()
            .filter(|e| e.is(EventKind::FetchFailed))
            .count(),
        after_recycle: after,
        after_recycle_fraction: after_frac,
        covered_fraction: cov_frac,
        lift: match (after_frac, cov_frac) {
            (Some(a), Some(c)) if c > 0.0 => Some(a / c),
            _ => None,
        },
        per_hour_after_recycle: (cov > 0.0).then(|| after as f64 / (cov / HOUR_S)),
        per_hour_elsewhere: (span - cov > 0.0)
            .then(|| (canaries.len() - after) as f64 / ((span - cov) / HOUR_S)),
        lag_s: Dist::of(lags),
        peak_hour: burst(v, &ts, &canaries),
    }
}

fn burst(v: &RegimeView, ts: &[f64], canaries: &[&Event]) -> Option<Burst> {
    let (n, start) = peak_hour(ts);
    let start = start?;
    let inside = |t: f64| t >= start && t < start + HOUR_S;
    let recycles: Vec<&Event> = v
        .recycles
        .iter()
        .copied()
        .filter(|e| inside(e.t_s))
        .collect();
    let in_hour = canaries.iter().filter(|e| inside(e.t_s)).count();
    let rest_h = ((v.end_s - v.start_s) - HOUR_S) / HOUR_S;
    let mut timeline: Vec<&Event> = v
        .events
        .iter()
        .copied()
        .filter(|e| e.t_s >= start - TIMELINE_LEAD_S && e.t_s < start + HOUR_S)
        .filter(|e| e.is_recycle() || e.kind.is_canary())
        .collect();
    timeline.truncate(TIMELINE_LINES);
    let (first, last) = (recycles.first()?.t_s, recycles.last()?.t_s);
    Some(Burst {
        start_s: start,
        recycles: n,
        first_recycle_s: first,
        last_recycle_s: last,
        span_min: (last - first) / 60.0,
        canaries: in_hour,
        canaries_per_hour_elsewhere: (rest_h > 0.0)
            .then(|| (canaries.len() - in_hour) as f64 / rest_h),
        timeline: timeline
            .into_iter()
            .map(|e| TimelineLine {
                t_s: e.t_s,
                event: e.kind.label().to_string(),
                instance: e.instance.clone(),
            })
            .collect(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn windows_are_merged_and_clipped() {
        assert_eq!(covered(&[0.0, 30.0, 200.0], 60.0, 0.0, 230.0), 90.0 + 30.0);
        assert_eq!(covered(&[], 60.0, 0.0, 100.0), 0.0);
        assert_eq!(lag(&[10.0, 20.0], 25.0), Some(5.0));
        assert_eq!(lag(&[10.0, 20.0], 5.0), None);
    }
}
