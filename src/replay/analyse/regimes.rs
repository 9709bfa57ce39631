//! Limit regimes: the seeds' first rule. Recycle rates, bypass fractions and
//! lifetimes are only comparable within one (`base_limit_mb`,
//! `hard_limit_mb`) pair, so the recording is split by that pair before
//! anything else, and the first/last timestamps of each pair pin the config
//! cutover. Events that carry neither field (canary events, bare log lines)
//! belong to the regime in force at their time.

use crate::replay::recording::{Event, PressureNote, Recording};
use serde::Serialize;

/// A limit regime's key; `None` fields were not recorded.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct RegimeKey {
    pub base_limit_mb: Option<f64>,
    pub hard_limit_mb: Option<f64>,
}

impl RegimeKey {
    fn of(e: &Event) -> Option<RegimeKey> {
        (e.base_limit_mb.is_some() || e.hard_limit_mb.is_some()).then_some(RegimeKey {
            base_limit_mb: e.base_limit_mb,
            hard_limit_mb: e.hard_limit_mb,
        })
    }

    pub fn label(&self) -> String {
        let mb = |v: Option<f64>| v.map_or("?".to_string(), |v| format!("{v:.0} MB"));
        format!(
            "base {} / hard {}",
            mb(self.base_limit_mb),
            mb(self.hard_limit_mb)
        )
    }
}

/// One regime's slice of the recording, with each recycle's gaps.
pub struct RegimeView<'a> {
    pub key: RegimeKey,
    /// First and last event that carries the key.
    pub first_s: f64,
    pub last_s: f64,
    /// The span it was in force: from the window start (first regime) or
    /// the cutover's midpoint, to the next cutover's midpoint or the window end.
    pub start_s: f64,
    pub end_s: f64,
    pub events: Vec<&'a Event>,
    pub recycles: Vec<&'a Event>,
    /// Per recycle: seconds since the previous recycle on its instance.
    pub same_gap_s: Vec<Option<f64>>,
    /// Per recycle: seconds since the latest recycle on another instance.
    pub cross_gap_s: Vec<Option<f64>>,
    /// Pressure log lines joined to no recycle, timed inside this regime.
    pub standalone_notes: Vec<&'a PressureNote>,
    /// Pressure log lines joined to one of this regime's recycles.
    pub joined_notes: Vec<(&'a PressureNote, &'a Event)>,
}

impl RegimeView<'_> {
    pub fn hours(&self) -> f64 {
        (self.end_s - self.start_s).max(0.0) / 3600.0
    }
}

/// The regimes in order of first appearance, as `(key, first, last)`.
pub fn keys(rec: &Recording) -> Vec<(RegimeKey, f64, f64)> {
    let mut out: Vec<(RegimeKey, f64, f64)> = Vec::new();
    for e in &rec.events {
        let Some(k) = RegimeKey::of(e) else { continue };
        match out.iter_mut().find(|(key, ..)| *key == k) {
            Some((_, _, last)) => *last = e.t_s,
            None => out.push((k, e.t_s, e.t_s)),
        }
    }
    if out.is_empty() {
        let unknown = RegimeKey {
            base_limit_mb: None,
            hard_limit_mb: None,
        };
        let (first, last) = (
            rec.events.first().map_or(0.0, |e| e.t_s),
            rec.events.last().map_or(0.0, |e| e.t_s),
        );
        out.push((unknown, first, last));
    }
    out
}

/// Where each regime was in force: the cutover lies between the previous
/// regime's last event and this one's first, and is taken at the midpoint;
/// the first regime opens the window and the last closes it.
fn spans(keys: &[(RegimeKey, f64, f64)], window: (f64, f64)) -> Vec<(f64, f64)> {
    let starts: Vec<f64> = keys
        .iter()
        .enumerate()
        .map(
            |(i, (_, first, _))| match i.checked_sub(1).map(|p| keys[p].2) {
                None => window.0.min(*first),
                Some(prev_last) if prev_last < *first => (prev_last + first) / 2.0,
                Some(_) => *first,
            },
        )
        .collect();
    starts
        .iter()
        .enumerate()
        .map(|(i, s)| (*s, starts.get(i + 1).copied().unwrap_or(window.1).max(*s)))
        .collect()
}

/// The regime in force at `t`: the latest to have started by then.
fn in_force(spans: &[(f64, f64)], t: f64) -> usize {
    spans
        .iter()
        .rposition(|(start, _)| *start <= t)
        .unwrap_or(0)
}

/// Splits the recording into regime views over `[window_start, window_end]`.
pub fn split(rec: &Recording, window: (f64, f64)) -> Vec<RegimeView<'_>> {
    let keys = keys(rec);
    let spans = spans(&keys, window);
    let mut views: Vec<RegimeView> = keys
        .iter()
        .zip(&spans)
        .map(|((key, first, last), (start, end))| RegimeView {
            key: *key,
            first_s: *first,
            last_s: *last,
            start_s: *start,
            end_s: *end,
            events: Vec::new(),
            recycles: Vec::new(),
            same_gap_s: Vec::new(),
            cross_gap_s: Vec::new(),
            standalone_notes: Vec::new(),
            joined_notes: Vec::new(),
        })
        .collect();
    let regime_of: Vec<usize> = rec
        .events
        .iter()
        .map(|e| match RegimeKey::of(e) {
            Some(k) => keys
                .iter()
                .position(|(key, ..)| *key == k)
                .expect("a known key"),
            None => in_force(&spans, e.t_s),
        })
        .collect();
    for (e, i) in rec.events.iter().zip(&regime_of) {
        views[*i].events.push(e);
    }
    for n in &rec.notes {
        match n.attached_to {
            Some(e) => views[regime_of[e]].joined_notes.push((n, &rec.events[e])),
            None => {
                let i = n.t_s.map_or(0, |t| in_force(&spans, t));
                views[i].standalone_notes.push(n);
            }
        }
    }
    for v in &mut views {
        v.recycles = v
            .events
            .iter()
            .copied()
            .filter(|e| e.is_recycle())
            .collect();
        (v.same_gap_s, v.cross_gap_s) =
            instance_gaps(v.recycles.iter().map(|e| (e.t_s, e.instance.as_deref())))
                .into_iter()
                .unzip();
    }
    views
}

/// Per recycle, in time order: seconds since the previous recycle on its
/// instance (what the cooldown bounds; `None` for an instance's first) and
/// since the latest recycle on any other instance (what only a fleet gate
/// bounds; `None` before any). A recycle with no instance (`None`) gets
/// neither and moves nothing. The one definition of both gaps: replay's
/// analysis and both reports' gap charts call it.
pub fn instance_gaps<K: PartialEq>(
    recycles: impl IntoIterator<Item = (f64, Option<K>)>,
) -> Vec<(Option<f64>, Option<f64>)> {
    let mut last: Vec<(K, f64)> = Vec::new();
    recycles
        .into_iter()
        .map(|(t, inst)| {
            let Some(inst) = inst else {
                return (None, None);
            };
            let cross = last
                .iter()
                .filter(|(i, _)| *i != inst)
                .map(|(_, p)| t - p)
                .reduce(f64::min);
            let same = match last.iter_mut().find(|(i, _)| *i == inst) {
                Some((_, p)) => Some(t - std::mem::replace(p, t)),
                None => {
                    last.push((inst, t));
                    None
                }
            };
            (same, cross)
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::replay::recording::{Kind, Origin};

    fn recycle(t: f64, inst: &str) -> Event {
        let mut e = Event::new(t, Kind::from_label("worker_recycled"), Origin::default());
        e.instance = Some(inst.to_string());
        e
    }

    #[test]
    fn gaps_per_instance_and_across() {
        let es = [
            recycle(0.0, "A"),
            recycle(130.0, "B"),
            recycle(150.0, "A"),
            recycle(157.0, "B"),
        ];
        let (same, cross): (Vec<_>, Vec<_>) =
            instance_gaps(es.iter().map(|e| (e.t_s, e.instance.as_deref())))
                .into_iter()
                .unzip();
        assert_eq!(same, [None, None, Some(150.0), Some(27.0)]);
        assert_eq!(cross, [None, Some(130.0), Some(20.0), Some(7.0)]);
        // No instance: no gaps, and the others' gaps pass over it.
        let gaps = instance_gaps([(0.0, Some("A")), (5.0, None), (9.0, Some("B"))]);
        assert_eq!(gaps, [(None, None), (None, None), (None, Some(9.0))]);
    }
}
