//! Lease bypasses, classified from the categorical fields the emitter
//! recorded (`pressure`, `lease`, `branch`), never by re-deriving a
//! threshold from `rss_mb - limit_mb` (the seeds' rule scored 1 of 3: the
//! ceiling is un-jittered and the pressure branch has no margin at all).
//!
//! The lease's gate is `if not acquired: allow if pressure or rss >= hard`,
//! pressure checked first: a bypass with `pressure=true` is the pressure
//! exit whatever its label says. When one label covers both branches (the
//! seeds' emitter wrote `bypassed_hard_ceiling` for both) a warning says so
//! and by how much the label over-reports ceiling breaches.

use super::regimes::RegimeView;
use super::stats::{LabelCount, label_counts};
use crate::metrics::LeaseOutcome;
use crate::replay::{Event, Lease};
use serde::Serialize;

/// How a recycle got past the fleet lease.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Class {
    Acquired,
    ExitPressure,
    ExitHardCeiling,
    /// A bypass whose branch no field tells.
    ExitUnknown,
    /// No lease outcome recorded (no lease, or logs without the field).
    NotRecorded,
}

fn branch_has(e: &Event, token: &str) -> bool {
    e.branch
        .as_deref()
        .is_some_and(|b| b.split('+').any(|t| t == token))
}

fn is_bypass(e: &Event) -> bool {
    e.lease.as_ref().is_some_and(Lease::is_bypass)
        || branch_has(e, "bypass_pressure")
        || branch_has(e, "bypass_hard_ceiling")
}

pub fn classify(e: &Event) -> Class {
    if !is_bypass(e) {
        let acquired = e.lease == Some(Lease::Known(LeaseOutcome::Acquired))
            || branch_has(e, "lease_acquired");
        return if acquired {
            Class::Acquired
        } else {
            Class::NotRecorded
        };
    }
    match e.pressure {
        Some(true) => Class::ExitPressure,
        Some(false) => Class::ExitHardCeiling,
        None => match (&e.lease, e.branch.as_deref()) {
            (Some(Lease::Known(LeaseOutcome::BypassedPressure)), _) => Class::ExitPressure,
            (Some(Lease::Known(LeaseOutcome::BypassedHardCeiling)), _) => Class::ExitHardCeiling,
            _ => Class::ExitUnknown,
        },
    }
}

#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Bypasses {
    /// How it was classified, in words.
    pub method: String,
    pub lease_labels: Vec<LabelCount>,
    pub branches: Vec<LabelCount>,
    pub acquired: usize,
    pub exit_pressure: usize,
    pub exit_hard_ceiling: usize,
    pub exit_unknown: usize,
    pub not_recorded: usize,
    /// Bypasses classified from the label alone (no `pressure` field).
    pub label_only: usize,
    /// Emergency exits per hour, to watch apart from holds.
    pub exits_per_hour: Option<f64>,
    /// `recycle_held` rows by branch.
    pub holds: Vec<LabelCount>,
    pub holds_per_hour: Option<f64>,
}

pub fn bypasses(v: &RegimeView, warnings: &mut Vec<String>) -> Bypasses {
    let classes: Vec<Class> = v.recycles.iter().map(|e| classify(e)).collect();
    let n = |c: Class| classes.iter().filter(|x| **x == c).count();
    let held: Vec<&Event> = v
        .events
        .iter()
        .copied()
        .filter(|e| e.is(crate::metrics::EventKind::RecycleHeld))
        .collect();
    let exits = n(Class::ExitPressure) + n(Class::ExitHardCeiling) + n(Class::ExitUnknown);
    let hours = v.hours();
    let per_hour = |x: usize| (hours > 0.0).then(|| x as f64 / hours);
    shared_label_warnings(v, warnings);
    Bypasses {
        method: "from the `pressure` flag and the `lease`/`branch` labels; \
                 never from rss_mb - limit_mb"
            .into(),
        lease_labels: label_counts(
            v.recycles
                .iter()
                .filter_map(|e| e.lease.as_ref().map(Lease::label)),
        ),
        branches: label_counts(v.recycles.iter().filter_map(|e| e.branch.as_deref())),
        acquired: n(Class::Acquired),
        exit_pressure: n(Class::ExitPressure),
        exit_hard_ceiling: n(Class::ExitHardCeiling),
        exit_unknown: n(Class::ExitUnknown),
        not_recorded: n(Class::NotRecorded),
        label_only: v
            .recycles
            .iter()
            .filter(|e| is_bypass(e) && e.pressure.is_none())
            .count(),
        exits_per_hour: per_hour(exits),
        holds: label_counts(
            held.iter()
                .map(|e| e.branch.as_deref().unwrap_or("(no branch)")),
        ),
        holds_per_hour: per_hour(held.len()),
    }
}

/// The seeds' shared-label trap, and labels that contradict the flag.
fn shared_label_warnings(v: &RegimeView, warnings: &mut Vec<String>) {
    let labelled = |l: LeaseOutcome| -> Vec<&&Event> {
        v.recycles
            .iter()
            .filter(|e| e.lease == Some(Lease::Known(l)))
            .collect()
    };
    let ceiling = labelled(LeaseOutcome::BypassedHardCeiling);
    let shared = ceiling.iter().filter(|e| e.pressure_true()).count();
    if shared > 0 {
        let real = ceiling.iter().filter(|e| e.pressure == Some(false)).count();
        warnings.push(format!(
            "{}: one label covers two branches: {shared} of {} `lease=bypassed_hard_ceiling` \
             recycles have pressure=true (the pressure exit fired, not the ceiling); \
             classified by the pressure flag: {shared} pressure, {real} hard ceiling. \
             Read alone, the label reports {} ceiling breaches where there were {real}",
            v.key.label(),
            ceiling.len(),
            ceiling.len()
        ));
    }
    let contradicted = labelled(LeaseOutcome::BypassedPressure)
        .iter()
        .filter(|e| e.pressure == Some(false))
        .count();
    if contradicted > 0 {
        warnings.push(format!(
            "{}: {contradicted} `lease=bypassed_pressure` recycles have pressure=false: the \
             emitter's label contradicts its own flag; classified as hard-ceiling exits",
            v.key.label()
        ));
    }
    let label_only = v
        .recycles
        .iter()
        .filter(|e| is_bypass(e) && e.pressure.is_none())
        .count();
    if label_only > 0 {
        warnings.push(format!(
            "{}: {label_only} bypasses carry no pressure flag and were classified from their \
             label alone, which may cover two branches",
            v.key.label()
        ));
    }
}
