//! Peak RSS and overshoot over the hard ceiling, split by pressure: the
//! seeds' 710 MB (non-pressure, 150.2 s after the previous recycle on its
//! instance) against 659 MB under pressure.

use super::regimes::RegimeView;
use crate::replay::Event;
use serde::Serialize;

#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Ceiling {
    pub hard_limit_mb: Option<f64>,
    pub peak_rss_mb: Option<f64>,
    pub peak_at_s: Option<f64>,
    pub peak_instance: Option<String>,
    pub peak_pressure: Option<bool>,
    /// Seconds since the previous recycle on the peak's instance.
    pub peak_same_instance_gap_s: Option<f64>,
    /// Peak RSS minus the hard ceiling (negative: never reached).
    pub max_overshoot_mb: Option<f64>,
    /// Recycles at or over the hard ceiling.
    pub over_ceiling: usize,
    pub peak_rss_pressure_mb: Option<f64>,
    pub peak_rss_no_pressure_mb: Option<f64>,
}

fn max_rss<'a>(es: impl Iterator<Item = &'a &'a Event>) -> Option<f64> {
    es.filter_map(|e| e.rss_mb).reduce(f64::max)
}

/// `hard_limit_mb`: the regime's, else the scenario's (log lines carry none).
pub fn ceiling(v: &RegimeView, hard_limit_mb: Option<f64>) -> Ceiling {
    let rss = |e: &Event| e.rss_mb.unwrap_or(f64::NEG_INFINITY);
    let peak = v
        .recycles
        .iter()
        .enumerate()
        .filter(|(_, e)| e.rss_mb.is_some())
        .max_by(|a, b| rss(a.1).total_cmp(&rss(b.1)).then(b.0.cmp(&a.0)));
    let hard = hard_limit_mb;
    let over = |e: &Event| Some(e.rss_mb? - e.hard_limit_mb.or(hard)?);
    Ceiling {
        hard_limit_mb: hard,
        peak_rss_mb: peak.and_then(|(_, e)| e.rss_mb),
        peak_at_s: peak.map(|(_, e)| e.t_s),
        peak_instance: peak.and_then(|(_, e)| e.instance.clone()),
        peak_pressure: peak.and_then(|(_, e)| e.pressure),
        peak_same_instance_gap_s: peak.and_then(|(i, _)| v.same_gap_s[i]),
        max_overshoot_mb: peak.and_then(|(_, e)| over(e)),
        over_ceiling: v
            .recycles
            .iter()
            .filter(|e| over(e).is_some_and(|o| o >= 0.0))
            .count(),
        peak_rss_pressure_mb: max_rss(v.recycles.iter().filter(|e| e.pressure_true())),
        peak_rss_no_pressure_mb: max_rss(v.recycles.iter().filter(|e| !e.pressure_true())),
    }
}
