//! Same-instance and cross-instance gaps: two primitives, never conflated
//! (the seeds' sub-120 s gaps were cross-instance, which is what made a
//! wrong story plausible).
//!
//! Same-instance gaps of non-pressure recycles are bucketed around the
//! cooldown and the cooldown + tick band, with RSS and overshoot per bucket:
//! the seeds' non-monotonic evidence that the cooldown holds a worker past
//! its hard ceiling (RSS peaks in the `[cooldown, cooldown + tick)` band and
//! falls again for longer gaps, which are routine recycles).

use super::Knobs;
use super::regimes::RegimeView;
use super::stats::{Dist, Mode, mean, mode};
use crate::replay::Event;
use serde::Serialize;

/// The few smallest gaps listed by value.
const SMALLEST: usize = 5;
/// Cross-instance gaps under the lease TTL listed one by one, at most.
const SHORT_LISTED: usize = 20;

#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct GapDist {
    pub dist: Option<Dist>,
    /// The most common `MODE_BIN_S` bin.
    pub mode: Option<Mode>,
    pub smallest_s: Vec<f64>,
}

fn gap_dist(gaps: &[f64]) -> GapDist {
    let mut sorted = gaps.to_vec();
    sorted.sort_by(f64::total_cmp);
    sorted.truncate(SMALLEST);
    GapDist {
        dist: Dist::of(gaps.iter().copied()),
        mode: mode(gaps),
        smallest_s: sorted,
    }
}

/// Non-pressure recycles whose same-instance gap falls in `[lo_s, hi_s)`.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Bucket {
    pub label: String,
    pub lo_s: f64,
    pub hi_s: Option<f64>,
    pub recycles: usize,
    pub mean_rss_mb: Option<f64>,
    pub max_rss_mb: Option<f64>,
    /// Mean of RSS minus the hard ceiling (negative: below it).
    pub mean_overshoot_mb: Option<f64>,
    pub over_ceiling: usize,
    /// Mean RSS over the worker's own limit.
    pub mean_margin_mb: Option<f64>,
}

/// A cross-instance gap under the lease TTL and how the recycle got through.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct ShortGap {
    pub at_s: f64,
    pub gap_s: f64,
    pub instance: Option<String>,
    pub pressure: Option<bool>,
    pub lease: Option<String>,
}

#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Gaps {
    pub same_instance: GapDist,
    /// Same-instance gaps of pressure recycles, apart.
    pub same_instance_pressure: Option<Dist>,
    /// What the bucket edges came from.
    pub bucket_edges: String,
    pub buckets: Vec<Bucket>,
    /// Recycles with no earlier recycle on their instance in this regime.
    pub first_on_instance: usize,
    pub cross_instance: GapDist,
    pub cross_below_lease_ttl: usize,
    pub cross_below_lease_ttl_list: Vec<ShortGap>,
}

/// The bucket edges from the cooldown and the tick, as far as they are known.
fn edges(k: &Knobs) -> Vec<(String, f64, Option<f64>)> {
    let Some(cd) = k.cooldown_s else {
        return vec![("all gaps (cooldown unknown)".into(), 0.0, None)];
    };
    let mut out = vec![(format!("< cooldown ({cd:.0} s)"), 0.0, Some(cd))];
    match k.tick_s {
        Some(tick) => {
            let band = cd + tick;
            out.push((
                format!("cooldown..cooldown+tick ({cd:.0}-{band:.0} s)"),
                cd,
                Some(band),
            ));
            out.push((format!("> cooldown+tick (>= {band:.0} s)"), band, None));
        }
        None => out.push((format!(">= cooldown ({cd:.0} s; tick unknown)"), cd, None)),
    }
    out
}

fn bucket(
    label: String,
    lo: f64,
    hi: Option<f64>,
    members: &[(&Event, f64)],
    hard: Option<f64>,
) -> Bucket {
    let inside: Vec<&Event> = members
        .iter()
        .filter(|(_, g)| *g >= lo && hi.is_none_or(|h| *g < h))
        .map(|(e, _)| *e)
        .collect();
    let over = |e: &Event| Some(e.rss_mb? - e.hard_limit_mb.or(hard)?);
    Bucket {
        label,
        lo_s: lo,
        hi_s: hi,
        recycles: inside.len(),
        mean_rss_mb: mean(inside.iter().filter_map(|e| e.rss_mb)),
        max_rss_mb: inside.iter().filter_map(|e| e.rss_mb).reduce(f64::max),
        mean_overshoot_mb: mean(inside.iter().filter_map(|e| over(e))),
        over_ceiling: inside
            .iter()
            .filter(|e| over(e).is_some_and(|o| o >= 0.0))
            .count(),
        mean_margin_mb: mean(inside.iter().filter_map(|e| e.margin_mb())),
    }
}

pub fn gaps(v: &RegimeView, k: &Knobs) -> Gaps {
    let with_gap: Vec<(&Event, f64)> = v
        .recycles
        .iter()
        .zip(&v.same_gap_s)
        .filter_map(|(e, g)| Some((*e, (*g)?)))
        .collect();
    let (pressure, calm): (Vec<_>, Vec<_>) = with_gap.iter().partition(|(e, _)| e.pressure_true());
    let same: Vec<f64> = with_gap.iter().map(|(_, g)| *g).collect();
    let cross: Vec<f64> = v.cross_gap_s.iter().flatten().copied().collect();
    let hard = v.key.hard_limit_mb.or(k.hard_limit_mb);
    let short = short_cross_gaps(v, k.lease_ttl_s);
    Gaps {
        same_instance: gap_dist(&same),
        same_instance_pressure: Dist::of(pressure.iter().map(|(_, g)| *g)),
        bucket_edges: k.source.clone(),
        buckets: edges(k)
            .into_iter()
            .map(|(label, lo, hi)| bucket(label, lo, hi, &calm, hard))
            .collect(),
        first_on_instance: v.same_gap_s.iter().filter(|g| g.is_none()).count(),
        cross_instance: gap_dist(&cross),
        cross_below_lease_ttl: short.len(),
        cross_below_lease_ttl_list: short.into_iter().take(SHORT_LISTED).collect(),
    }
}

fn short_cross_gaps(v: &RegimeView, ttl: Option<f64>) -> Vec<ShortGap> {
    let Some(ttl) = ttl else { return Vec::new() };
    v.recycles
        .iter()
        .zip(&v.cross_gap_s)
        .filter_map(|(e, g)| {
            let g = (*g)?;
            (g < ttl).then(|| ShortGap {
                at_s: e.t_s,
                gap_s: g,
                instance: e.instance.clone(),
                pressure: e.pressure,
                lease: e.lease.as_ref().map(|l| l.label().to_string()),
            })
        })
        .collect()
}
