//! The seeds' hand analyses as pure functions over a `Recording`, each
//! returning a serialisable struct (`analysis.json`).
//!
//! Order matters, as the seeds learnt: split by limit regime first
//! (`regimes.rs`), then compute every statistic within each regime. The
//! policy values that place the gap buckets come from `--scenario` when
//! given, else from the regime's own inferred config, and the output says
//! which.

pub mod bypass;
pub mod canary;
pub mod ceiling;
pub mod escalation;
pub mod every;
pub mod gaps;
pub mod infer;
pub mod lifetime;
pub mod pressure;
pub mod rate;
pub mod regimes;
pub mod shift;
pub mod stats;
pub mod tick;

use super::recording::{Recording, Source};
use super::time::Axis;
use crate::Scenario;
use crate::policy::Sampling;
use regimes::{RegimeKey, RegimeView};
use serde::Serialize;
use stats::{LabelCount, label_counts};

/// The canary join's window after a recycle, unless told otherwise.
pub const CANARY_WINDOW_S: f64 = 60.0;

/// The policy values the analyses compare against.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Knobs {
    pub cooldown_s: Option<f64>,
    pub pressure_cooldown_s: Option<f64>,
    pub tick_s: Option<f64>,
    pub lease_ttl_s: Option<f64>,
    pub min_headroom_mb: Option<f64>,
    pub base_limit_mb: Option<f64>,
    pub jitter_mb: Option<f64>,
    pub hard_limit_mb: Option<f64>,
    /// Where the values came from.
    pub source: String,
}

impl Knobs {
    pub fn from_scenario(sc: &Scenario) -> Knobs {
        let cooldown =
            (sc.policy.pipeline.cooldown()).map(|c| (c.cooldown_s, c.pressure_cooldown_s));
        let tick_s = match sc.policy.sampling {
            Sampling::Timer { tick, .. } => Some(tick.as_secs_f64()),
            Sampling::EveryRequests { .. } => None,
        };
        Knobs {
            cooldown_s: cooldown.map(|c| c.0),
            pressure_cooldown_s: cooldown.map(|c| c.1),
            tick_s,
            lease_ttl_s: sc.policy.pipeline.lease_ttl().map(|t| t.as_secs_f64()),
            min_headroom_mb: Some(sc.policy.pipeline.min_headroom_mb),
            base_limit_mb: Some(sc.policy.base_limit_mb),
            jitter_mb: Some(sc.policy.jitter_mb),
            hard_limit_mb: Some(sc.policy.hard_limit_mb),
            source: format!("scenario {}", sc.name),
        }
    }
}

#[derive(Clone, Debug, PartialEq)]
pub struct Options {
    /// The scenario's policy values, if one was given.
    pub scenario: Option<Knobs>,
    pub canary_window_s: f64,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            scenario: None,
            canary_window_s: CANARY_WINDOW_S,
        }
    }
}

#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Window {
    pub start_s: f64,
    pub end_s: f64,
    pub hours: f64,
}

/// How the pressure log lines were joined.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct PressureLines {
    pub lines: usize,
    pub joined_to_a_recycle: usize,
    pub standalone: usize,
    pub rule: String,
}

/// Everything computed within one limit regime.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Regime {
    pub label: String,
    pub base_limit_mb: Option<f64>,
    pub hard_limit_mb: Option<f64>,
    pub first_s: f64,
    pub last_s: f64,
    pub start_s: f64,
    pub end_s: f64,
    /// The policy values the buckets and escalation checks used.
    pub knobs: Knobs,
    pub rate: rate::Rate,
    pub lifetime: lifetime::Lifetime,
    pub ceiling: ceiling::Ceiling,
    pub gaps: gaps::Gaps,
    pub bypasses: bypass::Bypasses,
    pub pressure: pressure::Pressure,
    pub escalations: Vec<escalation::Escalation>,
    pub canary: canary::Canary,
    pub inferred: infer::Inferred,
}

/// Where one regime ended and the next began: the config cutover lies in
/// `(last_of_previous_s, first_of_next_s]`.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Cutover {
    pub from: String,
    pub to: String,
    pub last_of_previous_s: f64,
    pub first_of_next_s: f64,
}

/// Whole-recording counts: recycles (by trigger) and kills as separate figures.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Totals {
    pub recycles: usize,
    /// Recycles by their `trigger` (`(none)` when no instrument said).
    pub recycles_by_trigger: Vec<LabelCount>,
    pub oom_kills: usize,
    pub evil_kills: usize,
    pub drain_killed: usize,
    /// Workers killed over a request or heartbeat timeout (`timeout_kill`).
    pub timeout_kills: usize,
}

/// How files recording the same happenings were joined (`assemble`).
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Joins {
    pub agreements: Vec<super::Agreement>,
    /// Rows identical to an earlier file's, dropped.
    pub duplicates_dropped: usize,
    pub rule: String,
}

#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Analysis {
    pub sources: Vec<Source>,
    pub axis: Option<Axis>,
    pub window: Window,
    pub events: Vec<LabelCount>,
    pub totals: Totals,
    pub joins: Joins,
    /// Figures observed in the per-worker RSS series, when there is one.
    pub rss_series: Option<super::Observed>,
    pub pressure_lines: PressureLines,
    pub canary_window_s: f64,
    pub regimes: Vec<Regime>,
    pub cutovers: Vec<Cutover>,
    pub warnings: Vec<String>,
}

/// The recording's window: from 0 on the window axis (`ts` counts from
/// the window start), else from the first event or RSS sample, to the last
/// (an RSS series alone has a window: it was 1970-01-01, 0 h).
pub fn window(rec: &Recording) -> Window {
    let times = || {
        let events = [rec.events.first(), rec.events.last()];
        let samples = [rec.series.samples.first(), rec.series.samples.last()];
        events
            .into_iter()
            .flatten()
            .map(|e| e.t_s)
            .chain(samples.into_iter().flatten().map(|s| s.t_s))
    };
    let first = times().reduce(f64::min).unwrap_or(0.0);
    let end = times().reduce(f64::max).unwrap_or(0.0);
    let start = if rec.axis == Some(Axis::Window) {
        first.min(0.0)
    } else {
        first
    };
    Window {
        start_s: start,
        end_s: end,
        hours: (end - start) / 3600.0,
    }
}

pub fn analyse(rec: &Recording, opts: &Options) -> Analysis {
    let w = window(rec);
    let views = regimes::split(rec, (w.start_s, w.end_s));
    let mut warnings = source_warnings(rec);
    let regimes: Vec<Regime> = views
        .iter()
        .map(|v| regime(v, opts, &mut warnings))
        .collect();
    let cutovers = cutovers(&views, &mut warnings);
    let joined = rec.notes.iter().filter(|n| n.attached_to.is_some()).count();
    Analysis {
        sources: rec.sources.clone(),
        axis: rec.axis,
        window: w,
        events: label_counts(rec.events.iter().map(|e| e.kind.label())),
        totals: totals(rec),
        joins: Joins {
            agreements: rec.agreements.clone(),
            duplicates_dropped: rec.duplicates_dropped,
            rule: format!(
                "an event of a later file joins the nearest event of an earlier file of the same \
                 kind (recycle, OOM kill, evil kill, drain kill, timeout kill) on the same instance, with the \
                 same worker when both name one, within {:.0} s; the richer row is kept, the \
                 other's fields fill its gaps; rows identical to an earlier file's are dropped",
                super::JOIN_WINDOW_S
            ),
        },
        rss_series: rec.observed_rss(),
        pressure_lines: PressureLines {
            lines: rec.notes.len(),
            joined_to_a_recycle: joined,
            standalone: rec.notes.len() - joined,
            rule: format!(
                "a `recycle pressure` log line sets pressure=true on the nearest recycle on its \
                 instance (any instance if it names none) within {:.0} s, or the nearest by \
                 line in its file when it has no time; unjoined, it is a pressure event of its own",
                super::ATTACH_WINDOW_S
            ),
        },
        canary_window_s: opts.canary_window_s,
        regimes,
        cutovers,
        warnings,
    }
}

fn totals(rec: &Recording) -> Totals {
    use crate::metrics::EventKind;
    Totals {
        recycles: rec.recycles().count(),
        recycles_by_trigger: label_counts(
            rec.recycles()
                .map(|e| e.trigger.as_deref().unwrap_or("(none)")),
        ),
        oom_kills: rec.count(EventKind::OomKill),
        evil_kills: rec.count(EventKind::EvilKill),
        drain_killed: rec.count(EventKind::DrainKilled),
        timeout_kills: rec.count(EventKind::TimeoutKill),
    }
}

fn regime(v: &RegimeView, opts: &Options, warnings: &mut Vec<String>) -> Regime {
    let inferred = infer::infer(v, opts.scenario.as_ref());
    let knobs = match &opts.scenario {
        Some(k) => k.clone(),
        None => inferred.knobs(),
    };
    scenario_warnings(v.key, &inferred, warnings);
    warnings.extend(shift::warning(v));
    let hard = v.key.hard_limit_mb.or(knobs.hard_limit_mb);
    Regime {
        label: v.key.label(),
        base_limit_mb: v.key.base_limit_mb,
        hard_limit_mb: v.key.hard_limit_mb,
        first_s: v.first_s,
        last_s: v.last_s,
        start_s: v.start_s,
        end_s: v.end_s,
        rate: rate::rate(v),
        lifetime: lifetime::lifetime(v),
        ceiling: ceiling::ceiling(v, hard),
        gaps: gaps::gaps(v, &knobs),
        bypasses: bypass::bypasses(v, warnings),
        pressure: pressure::pressure(v),
        escalations: escalation::escalations(v, &knobs),
        canary: canary::canary(v, opts.canary_window_s),
        inferred,
        knobs,
    }
}

fn source_warnings(rec: &Recording) -> Vec<String> {
    let mut out = Vec::new();
    for (i, s) in rec
        .sources
        .iter()
        .enumerate()
        .filter(|(_, s)| s.unparsed_count > 0)
    {
        let lines: Vec<String> = s.unparsed.iter().map(|u| u.line.to_string()).collect();
        out.push(format!(
            "{}: {} unparsed lines (first at lines {}){}",
            s.name,
            s.unparsed_count,
            lines.join(", "),
            if unparsed_inside(rec, i) {
                "; some lie between recorded events, so gaps spanning them may hide \
                 events (an elided `...`?)"
            } else {
                ""
            }
        ));
    }
    let others = label_counts(
        rec.events
            .iter()
            .filter(|e| matches!(e.kind, super::Kind::Other(_)))
            .map(|e| e.kind.label()),
    );
    for o in others {
        // Where they are: file and line of the first few.
        let mut at: Vec<String> = rec
            .events
            .iter()
            .filter(|e| matches!(e.kind, super::Kind::Other(_)) && e.kind.label() == o.label)
            .take(UNKNOWN_LINES_SHOWN + 1)
            .map(|e| {
                let file = rec
                    .sources
                    .get(e.origin.source)
                    .map_or("?", |s| s.name.as_str());
                format!("{file}:{}", e.origin.line)
            })
            .collect();
        if at.len() > UNKNOWN_LINES_SHOWN {
            at.truncate(UNKNOWN_LINES_SHOWN);
            at.push("...".into());
        }
        out.push(format!(
            "{} `{}` events of an unknown kind: kept, not analysed (at {})",
            o.count,
            o.label,
            at.join(", ")
        ));
    }
    if rec.axis == Some(Axis::ClockOfDay) {
        out.push("timestamps have no date: times are clock times of the first day".into());
    }
    out.extend(overlapping_instruments(rec));
    out
}

/// How many lines of an unknown event kind a warning names.
const UNKNOWN_LINES_SHOWN: usize = 5;

/// Whether a kept unparsed line of source `i` lies between two of its events.
fn unparsed_inside(rec: &Recording, i: usize) -> bool {
    let lines: Vec<usize> = rec
        .events
        .iter()
        .filter(|e| e.origin.source == i)
        .map(|e| e.origin.line)
        .collect();
    let (Some(lo), Some(hi)) = (lines.iter().min(), lines.iter().max()) else {
        return false;
    };
    rec.sources[i]
        .unparsed
        .iter()
        .any(|u| u.line > *lo && u.line < *hi)
}

/// Two files with recycles over the same span on a shared instance, none
/// of which joined, are likely two instruments the join could not match
/// (different worker ids, clocks further apart than the join window).
fn overlapping_instruments(rec: &Recording) -> Option<String> {
    let spans: Vec<(usize, f64, f64, Vec<&str>)> = (0..rec.sources.len())
        .filter_map(|s| {
            let mine: Vec<&super::Event> =
                rec.recycles().filter(|e| e.origin.source == s).collect();
            let mut instances: Vec<&str> =
                mine.iter().filter_map(|e| e.instance.as_deref()).collect();
            instances.sort_unstable();
            instances.dedup();
            Some((s, mine.first()?.t_s, mine.last()?.t_s, instances))
        })
        .collect();
    let joined = |a: usize, b: usize| {
        rec.agreements.iter().any(|g| {
            g.matched > 0
                && [g.source.as_str(), g.with.as_str()].contains(&rec.sources[a].name.as_str())
                && [g.source.as_str(), g.with.as_str()].contains(&rec.sources[b].name.as_str())
        })
    };
    let clash = spans.iter().enumerate().find_map(|(i, a)| {
        spans[i + 1..]
            .iter()
            .find(|b| {
                let shared =
                    a.3.iter().any(|x| b.3.contains(x)) || a.3.is_empty() || b.3.is_empty();
                a.1 <= b.2 && b.1 <= a.2 && shared && !joined(a.0, b.0)
            })
            .map(|b| (a.0, b.0))
    })?;
    Some(format!(
        "{} and {} both record recycles over overlapping spans on the same instances, and none \
         joined: if they are two instruments of one window, recycles are counted twice (give \
         both the same instance and worker ids, or replay them separately to cross-check)",
        rec.sources[clash.0].name, rec.sources[clash.1].name
    ))
}

/// The recording contradicting the scenario means the scenario is not what ran.
fn scenario_warnings(key: RegimeKey, inf: &infer::Inferred, warnings: &mut Vec<String>) {
    let checks = [
        (
            "cooldown_s",
            &inf.cooldown_s,
            inf.cooldown_s.inferred,
            "a same-instance gap shorter than",
        ),
        (
            "base_limit_mb",
            &inf.base_limit_mb,
            inf.base_limit_mb.recorded,
            "a recorded base_limit_mb unlike",
        ),
        (
            "hard_limit_mb",
            &inf.hard_limit_mb,
            inf.hard_limit_mb.recorded,
            "a recorded hard_limit_mb unlike",
        ),
    ];
    for (name, e, seen, what) in checks {
        let (Some(seen), Some(said)) = (seen, e.scenario) else {
            continue;
        };
        let contradicts = if name == "cooldown_s" {
            seen < said - 0.5
        } else {
            (seen - said).abs() > 0.5
        };
        if contradicts {
            warnings.push(format!(
                "{}: {what} the scenario's {name} ({seen:.1} vs {said:.1}): the scenario is not \
                 the deployed config; read config from telemetry",
                key.label()
            ));
        }
    }
}

fn cutovers(views: &[RegimeView], warnings: &mut Vec<String>) -> Vec<Cutover> {
    views
        .windows(2)
        .map(|w| {
            if w[0].last_s > w[1].first_s {
                warnings.push(format!(
                    "regimes {} and {} overlap in time: not a clean cutover (per-instance or \
                     per-environment config?)",
                    w[0].key.label(),
                    w[1].key.label()
                ));
            }
            Cutover {
                from: w[0].key.label(),
                to: w[1].key.label(),
                last_of_previous_s: w[0].last_s,
                first_of_next_s: w[1].first_s,
            }
        })
        .collect()
}
