//! The deployed config as the recording shows it, next to what its own
//! fields say and (with `--scenario`) what the scenario says. "Telemetry
//! from the running process is the only honest answer to what production is
//! actually using" (seed 002): a gap shorter than the scenario's cooldown
//! means the scenario is not what ran.

use super::Knobs;
use super::bypass::{Class, classify};
use super::regimes::RegimeView;
use super::stats::{Dist, mode};
use crate::metrics::EventKind;
use crate::replay::Event;
use serde::Serialize;

/// One config value three ways.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Estimate {
    /// From the event pattern (gaps, ranges, intervals).
    pub inferred: Option<f64>,
    pub how: String,
    /// From a field the emitter recorded.
    pub recorded: Option<f64>,
    pub recorded_how: String,
    /// The scenario's value, when one was given.
    pub scenario: Option<f64>,
}

#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Inferred {
    pub cooldown_s: Estimate,
    pub pressure_cooldown_s: Estimate,
    pub lease_ttl_s: Estimate,
    pub tick_s: Estimate,
    pub base_limit_mb: Estimate,
    pub jitter_mb: Estimate,
    pub hard_limit_mb: Estimate,
    pub min_headroom_mb: Estimate,
}

impl Inferred {
    /// Knobs from the inferred values (recorded ones where nothing is inferred).
    pub fn knobs(&self) -> Knobs {
        let pick = |e: &Estimate| e.inferred.or(e.recorded);
        Knobs {
            cooldown_s: pick(&self.cooldown_s),
            pressure_cooldown_s: pick(&self.pressure_cooldown_s),
            tick_s: pick(&self.tick_s),
            lease_ttl_s: pick(&self.lease_ttl_s),
            min_headroom_mb: pick(&self.min_headroom_mb),
            base_limit_mb: pick(&self.base_limit_mb),
            jitter_mb: pick(&self.jitter_mb),
            hard_limit_mb: pick(&self.hard_limit_mb),
            source: "inferred from this regime's events (no --scenario): the `< cooldown` bucket \
                     is empty by construction"
                .into(),
        }
    }
}

fn est(inferred: Option<f64>, how: String, recorded: Option<f64>, recorded_how: &str) -> Estimate {
    Estimate {
        inferred,
        how,
        recorded,
        recorded_how: recorded_how.into(),
        scenario: None,
    }
}

fn min(xs: impl Iterator<Item = f64>) -> Option<f64> {
    xs.reduce(f64::min)
}

/// `(gap, recycle)` pairs with a same-instance gap, pressure or not.
fn gaps<'a>(v: &'a RegimeView, pressure: bool) -> impl Iterator<Item = (f64, &'a Event)> + 'a {
    v.recycles
        .iter()
        .zip(&v.same_gap_s)
        .filter(move |(e, _)| e.pressure_true() == pressure)
        .filter_map(|(e, g)| Some(((*g)?, *e)))
}

pub fn infer(v: &RegimeView, scenario: Option<&Knobs>) -> Inferred {
    let (base_limit_mb, jitter_mb) = limits(v);
    let mut out = Inferred {
        cooldown_s: cooldown(v),
        pressure_cooldown_s: pressure_cooldown(v),
        lease_ttl_s: lease_ttl(v),
        tick_s: tick(v, scenario.and_then(|k| k.tick_s)),
        base_limit_mb,
        jitter_mb,
        hard_limit_mb: est(
            None,
            "not identifiable from recycles: they show crossings, not the ceiling".into(),
            v.key.hard_limit_mb,
            "hard_limit_mb field",
        ),
        min_headroom_mb: min_headroom(v),
    };
    if let Some(k) = scenario {
        out.cooldown_s.scenario = k.cooldown_s;
        out.pressure_cooldown_s.scenario = k.pressure_cooldown_s;
        out.lease_ttl_s.scenario = k.lease_ttl_s;
        out.tick_s.scenario = k.tick_s;
        out.base_limit_mb.scenario = k.base_limit_mb;
        out.jitter_mb.scenario = k.jitter_mb;
        out.hard_limit_mb.scenario = k.hard_limit_mb;
        out.min_headroom_mb.scenario = k.min_headroom_mb;
    }
    out
}

fn cooldown(v: &RegimeView) -> Estimate {
    let n = gaps(v, false).count();
    est(
        min(gaps(v, false).map(|(g, _)| g)),
        format!(
            "min same-instance gap of {n} non-pressure recycles (the cooldown is at most this)"
        ),
        min(gaps(v, false).filter_map(|(_, e)| e.last_recycle_age_s)),
        "min last_recycle_age_s of non-pressure recycles",
    )
}

fn pressure_cooldown(v: &RegimeView) -> Estimate {
    let normal = min(gaps(v, false).map(|(g, _)| g));
    let fastest = min(gaps(v, true).map(|(g, _)| g));
    let recorded = min(gaps(v, true).filter_map(|(_, e)| e.last_recycle_age_s));
    let how_recorded = "min last_recycle_age_s of pressure recycles, when under the cooldown";
    match (fastest, normal) {
        (Some(p), Some(n)) if p < n => est(
            Some(p),
            "min same-instance gap of pressure recycles (at most this)".into(),
            recorded,
            how_recorded,
        ),
        (Some(p), _) => est(
            None,
            format!(
                "not identifiable: the fastest pressure recycle ({p:.1} s after its instance's \
                 previous) was no sooner than the normal cooldown allows: never exercised"
            ),
            None,
            how_recorded,
        ),
        (None, _) => est(
            None,
            "not identifiable: no pressure recycle followed another on its instance".into(),
            None,
            how_recorded,
        ),
    }
}

fn lease_ttl(v: &RegimeView) -> Estimate {
    let acquired: Vec<f64> = v
        .recycles
        .iter()
        .filter(|e| classify(e) == Class::Acquired)
        .map(|e| e.t_s)
        .collect();
    let cross: Vec<f64> = v.cross_gap_s.iter().flatten().copied().collect();
    let m = mode(&cross);
    let mode_text = m.as_ref().map_or("no cross-instance gaps".into(), |m| {
        format!(
            "cross-instance gap mode {:.0}-{:.0} s ({} gaps)",
            m.lo_s, m.hi_s, m.count
        )
    });
    let (value, how) = if acquired.len() >= 2 {
        let gap = min(acquired.windows(2).map(|w| w[1] - w[0]));
        let how = format!(
            "min fleet-wide gap between consecutive lease-acquired recycles (the TTL is at \
             most this); {mode_text}"
        );
        (gap, how)
    } else {
        (
            m.as_ref().map(|m| m.lo_s),
            format!("lower edge of the {mode_text} (no lease outcomes recorded)"),
        )
    };
    est(value, how, None, "no field records the TTL")
}

/// The tick the regime's holds, else its named slots' consecutive
/// recycles, say (`prior`, the scenario's or the base's, is kept where
/// the recycles agree on it nearly as well: `tick::near`).
pub fn tick(v: &RegimeView, prior: Option<f64>) -> Estimate {
    let mut held: Vec<&Event> = v
        .events
        .iter()
        .copied()
        .filter(|e| e.is(EventKind::RecycleHeld))
        .collect();
    held.sort_by(|a, b| {
        (&a.instance, &a.worker, a.generation)
            .cmp(&(&b.instance, &b.worker, b.generation))
            .then(a.t_s.total_cmp(&b.t_s))
    });
    let intervals = held.windows(2).filter_map(|w| {
        let same = (&w[0].instance, &w[0].worker, w[0].generation)
            == (&w[1].instance, &w[1].worker, w[1].generation);
        (same && w[0].worker.is_some()).then(|| w[1].t_s - w[0].t_s)
    });
    let d = Dist::of(intervals);
    if let Some(d) = d {
        let how = format!(
            "median interval between consecutive holds of one worker ({} intervals)",
            d.n
        );
        return est(Some(d.median), how, None, "no field records the tick");
    }
    if let Some(e) = every_requests(v) {
        return est(None, e.how(), None, "no field records the tick");
    }
    let gaps = slot_gaps(v);
    let (value, how) = match super::tick::near(&gaps, prior) {
        Some(f) => (
            Some(f.tick_s),
            format!(
                "the period on which {} gaps between a slot's consecutive recycles agree in \
                 phase ({:.2} of 1; a worker's timer starts at its readiness){}",
                f.gaps,
                f.agreement,
                if Some(f.tick_s) == prior {
                    ": the prior tick, which they agree on within 0.05 of their best"
                } else {
                    ""
                }
            ),
        ),
        None => (
            None,
            format!(
                "not identifiable: needs recycle_held rows (one worker's consecutive samples), \
                 or at least {} gaps between a slot's consecutive recycles that agree on a \
                 timer's period ({} here{}); the trip margin depends on leak velocity too",
                super::tick::MIN_GAPS,
                gaps.len(),
                if gaps.len() >= super::tick::MIN_GAPS {
                    ", none agreeing"
                } else {
                    ""
                }
            ),
        ),
    };
    est(value, how, None, "no field records the tick")
}

/// A sampler every Nth request, where the recycle rows' request counts
/// say one (`every::read`).
pub fn every_requests(v: &RegimeView) -> Option<super::every::Every> {
    let counts: Vec<u64> = v.recycles.iter().filter_map(|e| e.requests).collect();
    super::every::read(&counts)
}

/// Seconds between consecutive recycles of each named slot (`instance`,
/// `worker`), in time order.
fn slot_gaps(v: &RegimeView) -> Vec<f64> {
    let mut named: Vec<&Event> = v
        .recycles
        .iter()
        .copied()
        .filter(|e| e.worker.is_some())
        .collect();
    named.sort_by(|a, b| {
        (&a.instance, &a.worker)
            .cmp(&(&b.instance, &b.worker))
            .then(a.t_s.total_cmp(&b.t_s))
    });
    let mut gaps: Vec<(f64, f64)> = named
        .windows(2)
        .filter(|w| (&w[0].instance, &w[0].worker) == (&w[1].instance, &w[1].worker))
        .map(|w| (w[0].t_s, w[1].t_s - w[0].t_s))
        .collect();
    gaps.sort_by(|a, b| a.0.total_cmp(&b.0));
    gaps.into_iter().map(|(_, g)| g).collect()
}

fn limits(v: &RegimeView) -> (Estimate, Estimate) {
    let l = Dist::of(v.recycles.iter().filter_map(|e| e.limit_mb));
    let how = l.as_ref().map_or("no limit_mb recorded".into(), |l| {
        format!(
            "limit_mb spans {:.0}-{:.0} MB over {} recycles",
            l.min, l.max, l.n
        )
    });
    (
        est(
            l.as_ref().map(|l| (l.min + l.max) / 2.0),
            format!("midpoint: {how}"),
            v.key.base_limit_mb,
            "base_limit_mb field",
        ),
        est(
            l.as_ref().map(|l| (l.max - l.min) / 2.0),
            format!("half-range (at least this): {how}"),
            None,
            "no field records the jitter",
        ),
    )
}

fn min_headroom(v: &RegimeView) -> Estimate {
    let p = super::pressure::pressure(v);
    let how = match (p.threshold_above_mb, p.threshold_at_most_mb) {
        (Some(a), Some(b)) => {
            format!("the pressure flag puts it above {a:.0} MB and at most {b:.0} MB")
        }
        (None, Some(b)) => format!("no pressure row; at most {b:.0} MB"),
        (Some(a), None) => format!("above {a:.0} MB"),
        (None, None) => "no headroom recorded".into(),
    };
    est(
        None,
        how,
        p.threshold_logged_mb,
        "threshold stated by pressure log lines",
    )
}
