//! Whether each escalation path was ever exercised. "An escalation that
//! never fired explains nothing, however well its arithmetic lines up": the
//! seeds credited the 30 s pressure cooldown with a peak-RSS split although
//! no pressure recycle came within 6x of it.
//!
//! A path is exercised when a recycle got through *because of* it: a
//! pressure recycle sooner after its instance's previous one than the normal
//! cooldown would allow; a non-pressure recycle at the ceiling as soon
//! (the ceiling escalation, the seeds' fix 1); a lease exit taken.

use super::Knobs;
use super::bypass::{Class, classify};
use super::regimes::RegimeView;
use crate::replay::Event;
use serde::Serialize;

#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Escalation {
    pub name: String,
    /// `None` when the recording cannot tell (the cooldown is unknown).
    pub exercised: Option<bool>,
    /// Recycles that went through it.
    pub count: usize,
    pub evidence: String,
}

pub fn escalations(v: &RegimeView, k: &Knobs) -> Vec<Escalation> {
    let pressure = if v.recycles.iter().any(|e| e.pressure.is_some()) {
        cooldown_path(
            v,
            k,
            "pressure cooldown",
            |e| e.pressure_true(),
            k.pressure_cooldown_s,
        )
    } else {
        // No recycle says whether it was under pressure: "never" would be
        // read as evidence (it was on an independent model's recording).
        Escalation {
            name: "pressure cooldown".into(),
            exercised: None,
            count: 0,
            evidence: "no pressure flag recorded".into(),
        }
    };
    vec![
        pressure,
        cooldown_path(
            v,
            k,
            "ceiling-escalated cooldown",
            |e| at_ceiling(e, k),
            k.pressure_cooldown_s,
        ),
        lease_exit(v, "lease exit on pressure", Class::ExitPressure),
        lease_exit(v, "lease exit on the hard ceiling", Class::ExitHardCeiling),
    ]
}

fn at_ceiling(e: &Event, k: &Knobs) -> bool {
    let hard = e.hard_limit_mb.or(k.hard_limit_mb);
    !e.pressure_true() && matches!((e.rss_mb, hard), (Some(r), Some(h)) if r >= h)
}

/// Recycles matching `path` whose same-instance gap beat the normal cooldown.
fn cooldown_path(
    v: &RegimeView,
    k: &Knobs,
    name: &str,
    path: impl Fn(&Event) -> bool,
    short_s: Option<f64>,
) -> Escalation {
    let gaps: Vec<f64> = v
        .recycles
        .iter()
        .zip(&v.same_gap_s)
        .filter(|(e, _)| path(e))
        .filter_map(|(_, g)| *g)
        .collect();
    let short = short_s.map_or("?".into(), |s| format!("{s:.0} s"));
    let Some(cd) = k.cooldown_s else {
        return Escalation {
            name: name.into(),
            exercised: None,
            count: 0,
            evidence: format!("{} candidate recycles; the cooldown is unknown", gaps.len()),
        };
    };
    let count = gaps.iter().filter(|g| **g < cd).count();
    let evidence = match gaps.iter().copied().reduce(f64::min) {
        None => format!(
            "no such recycle followed another on its instance (cooldown {cd:.0} s, escalated {short})"
        ),
        Some(min) => {
            let max = gaps.iter().copied().fold(f64::MIN, f64::max);
            format!(
                "{} such recycles after another on their instance, gaps {min:.1}-{max:.1} s; \
                 {count} under the {cd:.0} s cooldown (escalated: {short}){}",
                gaps.len(),
                if count == 0 {
                    ": never exercised, it explains nothing"
                } else {
                    ""
                }
            )
        }
    };
    Escalation {
        name: name.into(),
        exercised: Some(count > 0),
        count,
        evidence,
    }
}

fn lease_exit(v: &RegimeView, name: &str, class: Class) -> Escalation {
    let classes: Vec<Class> = v.recycles.iter().map(|e| classify(e)).collect();
    let count = classes.iter().filter(|c| **c == class).count();
    let recorded = classes.iter().any(|c| *c != Class::NotRecorded);
    Escalation {
        name: name.into(),
        exercised: recorded.then_some(count > 0),
        count,
        evidence: if recorded {
            format!("{count} of {} recycles", v.recycles.len())
        } else {
            "no lease outcome recorded".into()
        },
    }
}
