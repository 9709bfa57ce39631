//! Pressure events and the headroom distribution. Because the pressure
//! branch fires precisely when headroom < `min_headroom_mb`, min(headroom)
//! over recycles is a pressure-window statistic: bimodal by construction
//! (pressure rows vs the rest), it cannot trend. Track the pressure event
//! count instead (the seeds nearly escalated a 213 -> 204 MB wobble).

use super::regimes::RegimeView;
use super::stats::Dist;
use crate::replay::Event;
use serde::Serialize;

#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Pressure {
    /// Recycles flagged pressure=true (by field or by a joined log line).
    pub pressure_recycles: usize,
    /// Of those, flagged only by a pressure log line.
    pub from_log_line: usize,
    /// Pressure log lines that confirm a recycle's pressure=true field.
    pub confirmed_by_log_line: usize,
    /// Pressure log lines joined to a recycle whose field says false.
    pub contradicted_by_field: usize,
    /// Pressure log lines joined to no recycle: pressure events of their own.
    pub standalone_lines: usize,
    /// Recycles plus standalone lines: the count to track.
    pub pressure_events: usize,
    pub headroom_pressure_mb: Option<Dist>,
    pub headroom_rest_mb: Option<Dist>,
    /// Every pressure row below every other row.
    pub bimodal: Option<bool>,
    /// The deployed threshold as far as the flags pin it:
    /// `max(pressure headroom) < min_headroom_mb <= min(other headroom)`.
    pub threshold_above_mb: Option<f64>,
    pub threshold_at_most_mb: Option<f64>,
    /// The threshold pressure log lines state (`< 350MB`).
    pub threshold_logged_mb: Option<f64>,
    pub note: String,
}

pub fn pressure(v: &RegimeView) -> Pressure {
    let (flagged, rest): (Vec<&Event>, Vec<&Event>) =
        v.recycles.iter().copied().partition(|e| e.pressure_true());
    let hp = Dist::of(flagged.iter().filter_map(|e| e.headroom_mb));
    let hr = Dist::of(rest.iter().filter_map(|e| e.headroom_mb));
    let bimodal = match (&hp, &hr) {
        (Some(p), Some(r)) => Some(p.max < r.min),
        _ => None,
    };
    let note = match (&hp, &hr) {
        (Some(p), Some(r)) => format!(
            "min(headroom) is a pressure-window statistic: {} pressure rows at {:.0}-{:.0} MB, \
             {} other rows at {:.0}-{:.0} MB (median {:.0}); it cannot trend, track the \
             pressure event count instead",
            p.n, p.min, p.max, r.n, r.min, r.max, r.median
        ),
        _ => "min(headroom) is a pressure-window statistic; track the pressure event count".into(),
    };
    let joined = &v.joined_notes;
    Pressure {
        pressure_recycles: flagged.len(),
        from_log_line: flagged.iter().filter(|e| e.pressure_from_log).count(),
        confirmed_by_log_line: joined
            .iter()
            .filter(|(_, e)| e.pressure_true() && !e.pressure_from_log)
            .count(),
        contradicted_by_field: joined
            .iter()
            .filter(|(_, e)| e.pressure == Some(false))
            .count(),
        standalone_lines: v.standalone_notes.len(),
        pressure_events: flagged.len() + v.standalone_notes.len(),
        threshold_above_mb: hp.as_ref().map(|p| p.max),
        threshold_at_most_mb: hr.as_ref().map(|r| r.min),
        threshold_logged_mb: joined
            .iter()
            .map(|(n, _)| *n)
            .chain(v.standalone_notes.iter().copied())
            .find_map(|n| n.threshold_mb),
        headroom_pressure_mb: hp,
        headroom_rest_mb: hr,
        bimodal,
        note,
    }
}
