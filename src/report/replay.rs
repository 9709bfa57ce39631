//! `fleetsim replay` output as a report: analysis.json's figures per limit
//! regime as tables (the file's own numbers, with units), validation.json's
//! recorded-vs-simulated comparison, the recording (recording.csv) as a
//! fleet timeline with one limit band per regime, the histograms of one
//! regime, the recorded-vs-simulated overlays, and the what-if policies
//! (whatif.json) as a table and a forest chart.
//!
//! A recording holds what its emitters wrote: a chart whose data is not in
//! it is left out and the page says why.

use super::data::{self, Event, Mark, Policy};
use super::overlay::{self, Distribution};
use super::timeline::{Frame, Limits};
use super::{Chart, Files, Grid, KeyedRow, KeyedTable, Kind, Report, ReportError, need};
use super::{hist, html, timeline};
use crate::sweep::stats::t975;
use serde_json::Value;

fn parse_json(file: &str, bytes: &[u8]) -> Result<Value, ReportError> {
    serde_json::from_slice(bytes).map_err(|e| ReportError::Parse {
        file: file.into(),
        message: e.to_string(),
    })
}

/// The rows of one regime's table: (path under the regime, unit).
const REGIME_ROWS: [(&str, &str); 37] = [
    ("rate/recycles", ""),
    ("rate/hours", "h"),
    ("rate/per_hour", "/h"),
    ("rate/peak_hour_recycles", ""),
    ("lifetime/requests_per_worker/n", ""),
    ("lifetime/requests_per_worker/p10", "requests"),
    ("lifetime/requests_per_worker/median", "requests"),
    ("lifetime/requests_per_worker/p90", "requests"),
    ("lifetime/young_fraction", "%"),
    ("lifetime/margin_mb/p10", "MB"),
    ("lifetime/margin_mb/median", "MB"),
    ("lifetime/margin_mb/p90", "MB"),
    ("lifetime/low_margin_fraction", "%"),
    ("lifetime/limit_mb/min", "MB"),
    ("lifetime/limit_mb/max", "MB"),
    ("ceiling/peak_rss_mb", "MB"),
    ("ceiling/max_overshoot_mb", "MB"),
    ("ceiling/over_ceiling", ""),
    ("gaps/same_instance/dist/n", ""),
    ("gaps/same_instance/dist/min", "s"),
    ("gaps/same_instance/dist/median", "s"),
    ("gaps/cross_instance/dist/n", ""),
    ("gaps/cross_instance/dist/min", "s"),
    ("gaps/cross_instance/dist/median", "s"),
    ("gaps/cross_below_lease_ttl", ""),
    ("bypasses/acquired", ""),
    ("bypasses/exit_pressure", ""),
    ("bypasses/exit_hard_ceiling", ""),
    ("bypasses/exits_per_hour", "/h"),
    ("bypasses/holds_per_hour", "/h"),
    ("pressure/pressure_recycles", ""),
    ("canary/retry_ok", ""),
    ("canary/fetch_failed", ""),
    ("canary/after_recycle_fraction", "%"),
    ("canary/lift", "x"),
    ("knobs/cooldown_s", "s"),
    ("knobs/tick_s", "s"),
];

fn num(v: &Value, ptr: &str) -> Option<f64> {
    v.pointer(ptr).and_then(Value::as_f64)
}

fn text<'a>(v: &'a Value, ptr: &str) -> &'a str {
    v.pointer(ptr).and_then(Value::as_str).unwrap_or("")
}

fn regime_table(a: &Value, i: usize) -> KeyedTable {
    let r = format!("/regimes/{i}");
    let rows = REGIME_ROWS
        .iter()
        .filter_map(|(path, unit)| {
            let key = format!("{r}/{path}");
            let value = a.pointer(&key)?.clone();
            Some(KeyedRow {
                label: path.replace('/', "."),
                key,
                value,
                unit,
            })
        })
        .collect();
    KeyedTable {
        title: format!("Regime {}", text(a, &format!("{r}/label"))),
        rows,
    }
}

fn window_table(a: &Value) -> KeyedTable {
    let mut rows = Vec::new();
    let mut row = |key: String, label: String, unit: &'static str| {
        if let Some(value) = a.pointer(&key) {
            rows.push(KeyedRow {
                key,
                label,
                value: value.clone(),
                unit,
            });
        }
    };
    row("/window/hours".into(), "window.hours".into(), "h");
    let n = a
        .pointer("/events")
        .and_then(Value::as_array)
        .map_or(0, Vec::len);
    for k in 0..n {
        let label = text(a, &format!("/events/{k}/label")).to_string();
        row(format!("/events/{k}/count"), label, "events");
    }
    let n = a
        .pointer("/sources")
        .and_then(Value::as_array)
        .map_or(0, Vec::len);
    for k in 0..n {
        let name = text(a, &format!("/sources/{k}/name")).to_string();
        row(
            format!("/sources/{k}/unparsed_count"),
            format!("{name}: unparsed lines"),
            "lines",
        );
    }
    row(
        "/pressure_lines/lines".into(),
        "pressure log lines".into(),
        "lines",
    );
    KeyedTable {
        title: "Recording (analysis.json)".into(),
        rows,
    }
}

/// The regime the histograms show: the one validated, else the one with
/// the most recycles (the seeds' first rule: never pool regimes).
fn chosen_regime(a: &Value, validated: Option<&str>) -> Option<usize> {
    let regimes = a.pointer("/regimes")?.as_array()?;
    if let Some(i) = validated.and_then(|l| regimes.iter().position(|r| text(r, "/label") == l)) {
        return Some(i);
    }
    (0..regimes.len())
        .max_by_key(|i| num(a, &format!("/regimes/{i}/rate/recycles")).unwrap_or(0.0) as u64)
}

fn validation_grids(v: &Value) -> Vec<Grid> {
    let seeds = v
        .pointer("/seeds")
        .and_then(Value::as_array)
        .map_or(0, Vec::len);
    let t = t975(seeds.saturating_sub(1) as u64);
    let cell = |x: Option<f64>| x.map_or("-".to_string(), html::number);
    let figures = v.pointer("/figures").and_then(Value::as_array);
    let rows = figures
        .into_iter()
        .flatten()
        .map(|f| {
            let mean = f.get("simulated_mean").and_then(Value::as_f64);
            let sd = f.get("simulated_sd").and_then(Value::as_f64);
            let ci = match (mean, sd) {
                (Some(m), Some(s)) if seeds > 1 => {
                    let h = t * s / (seeds as f64).sqrt();
                    format!("{} +- {}", html::number(m), html::number(h))
                }
                (Some(m), _) => html::number(m),
                _ => "-".into(),
            };
            vec![
                text(f, "/name").to_string(),
                cell(f.get("recorded").and_then(Value::as_f64)),
                ci,
                cell(sd),
                text(f, "/verdict").to_string(),
            ]
        })
        .collect();
    let dists = v.pointer("/distributions").and_then(Value::as_array);
    let ks = dists
        .into_iter()
        .flatten()
        .map(|d| {
            let n = |k: &str| {
                d.get(k)
                    .and_then(Value::as_u64)
                    .map_or("-".into(), |n| n.to_string())
            };
            vec![
                text(d, "/name").to_string(),
                n("recorded_n"),
                n("simulated_n"),
                cell(d.get("ks_d").and_then(Value::as_f64)),
                d.get("p_value")
                    .and_then(Value::as_f64)
                    .map_or("-".into(), |p| format!("{p:.3e}")),
                text(d, "/verdict").to_string(),
            ]
        })
        .collect();
    let head = |h: &[&str]| h.iter().map(|s| s.to_string()).collect();
    vec![
        Grid {
            title: format!(
                "Validation (validation.json): regime {}, {} h x {seeds} seeds",
                text(v, "/regime"),
                v.pointer("/hours")
                    .and_then(Value::as_f64)
                    .map_or("?".into(), html::number)
            ),
            header: head(&[
                "figure (unit in its name)",
                "recorded",
                "simulated mean +- 95% CI",
                "simulated sd",
                "verdict",
            ]),
            rows,
        },
        Grid {
            title: "Distributions: recorded vs the seeds pooled (two-sample Kolmogorov-Smirnov)"
                .into(),
            header: head(&[
                "distribution",
                "n recorded",
                "n simulated",
                "KS D",
                "p",
                "verdict",
            ]),
            rows: ks,
        },
    ]
}

/// The regime's limits and knobs, on the timeline's axis (seconds since
/// the window's start).
fn limits(a: &Value, start: f64) -> Vec<Limits> {
    let n = a
        .pointer("/regimes")
        .and_then(Value::as_array)
        .map_or(0, Vec::len);
    (0..n)
        .map(|i| {
            let p = |k: &str| num(a, &format!("/regimes/{i}/{k}"));
            Limits {
                t0_s: p("start_s").unwrap_or(start) - start,
                t1_s: p("end_s").unwrap_or(start) - start,
                base_mb: p("base_limit_mb").or(p("knobs/base_limit_mb")),
                jitter_mb: p("knobs/jitter_mb"),
                hard_mb: p("hard_limit_mb").or(p("knobs/hard_limit_mb")),
            }
        })
        .collect()
}

fn policy(a: &Value, i: usize) -> Policy {
    let p = |k: &str| num(a, &format!("/regimes/{i}/knobs/{k}"));
    Policy {
        cooldown_s: p("cooldown_s"),
        pressure_cooldown_s: p("pressure_cooldown_s"),
        tick_s: p("tick_s"),
        base_limit_mb: p("base_limit_mb"),
        jitter_mb: p("jitter_mb"),
        hard_limit_mb: p("hard_limit_mb"),
        min_headroom_mb: p("min_headroom_mb"),
    }
}

fn c(file: &str, title: &str, caption: String, svg: String) -> Chart {
    Chart {
        file: file.into(),
        title: title.into(),
        caption,
        svg,
    }
}

pub fn build_replay(name: &str, files: &Files) -> Result<Report, ReportError> {
    build_replay_with(name, files, &super::Options::default())
}

pub fn build_replay_with(
    name: &str,
    files: &Files,
    opts: &super::Options,
) -> Result<Report, ReportError> {
    let mut after = Vec::new();
    let a = parse_json("analysis.json", need(files, "analysis.json")?)?;
    if a.pointer("/regimes").and_then(Value::as_array).is_none() {
        return Err(ReportError::Parse {
            file: "analysis.json".into(),
            message: "no `regimes` array: not an analysis written by fleetsim replay".into(),
        });
    }
    let validation = match files.get("validation.json") {
        Some(b) => Some(parse_json("validation.json", b)?),
        None => None,
    };
    let mut notes: Vec<String> = a
        .pointer("/warnings")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(|w| w.as_str().map(|s| format!("analysis warning: {s}")))
        .collect();
    let n_regimes = a
        .pointer("/regimes")
        .and_then(Value::as_array)
        .map_or(0, Vec::len);
    let mut tables = vec![window_table(&a)];
    tables.extend((0..n_regimes).map(|i| regime_table(&a, i)));
    let mut grids = Vec::new();
    if let Some(v) = &validation {
        grids = validation_grids(v);
        notes.push(format!("validation verdict: {}", text(v, "/verdict")));
    }
    let validated = validation.as_ref().map(|v| text(v, "/regime"));
    let regime = chosen_regime(&a, validated);
    let mut charts = Vec::new();
    match files.get("recording.csv") {
        None => notes.push(
            "No recording.csv in this directory (fleetsim replay writes it since the report \
             command): no timeline and no histograms; run fleetsim replay again to get them."
                .into(),
        ),
        Some(bytes) => {
            let (events, lanes) = data::parse_events_labelled("recording.csv", bytes)?;
            recording_charts(
                &a,
                regime,
                (events, lanes),
                (opts, &mut after),
                &mut charts,
                &mut notes,
            )?;
        }
    }
    overlay_chart(validation.as_ref(), &mut charts, &mut notes)?;
    if let Some(bytes) = files.get("whatif.json") {
        let w = super::whatif::parse(bytes)?;
        let policies = w.policies;
        if let Some(c) = &w.caveat {
            notes.push(format!("WARNING (what-if): {c}"));
        }
        for p in &policies {
            for n in &p.shadowed {
                notes.push(format!("what-if {}: shadowed: {n}", p.name));
            }
            if !p.not_applied.is_empty() {
                notes.push(format!(
                    "what-if {}: not applied: {}",
                    p.name,
                    crate::replay::whatif::not_applied_note(&p.not_applied)
                ));
            }
        }
        if policies.len() < 2 {
            notes.push("whatif.json holds no alternative policy: no what-if chart.".into());
        } else {
            grids.push(super::whatif::grid(&policies, w.caveat.as_deref()));
            charts.push(c(
                "whatif.svg",
                "What-if: other policies on the calibrated window",
                "Each alternative policy's difference against the recorded (calibrated) \
                 policy, per figure on its own axis: a dot at the mean of the paired \
                 differences over the seeds, a bar over its 95% interval; filled where the \
                 interval excludes zero, dark green when that change is better, brown when \
                 worse (by the figure's direction: fewer recycles, longer lifetimes)."
                    .into(),
                super::whatif::forest(&policies)?,
            ));
        }
    }
    Ok(Report {
        name: name.into(),
        kind: Some(Kind::Replay),
        summary: None,
        tables,
        grids,
        notes,
        charts,
        made_by: None,
        after,
        extra_html: Vec::new(),
    })
}

fn recording_charts(
    a: &Value,
    regime: Option<usize>,
    (mut events, lanes): (Vec<Event>, Vec<String>),
    (opts, after): (&super::Options, &mut Vec<super::Grid>),
    charts: &mut Vec<Chart>,
    notes: &mut Vec<String>,
) -> Result<(), ReportError> {
    if events.is_empty() {
        notes.push("The recording holds no event: no timeline and no histograms.".into());
        return Ok(());
    }
    let start = num(a, "/window/start_s").unwrap_or(events[0].t_s);
    let no_rss = events
        .iter()
        .filter(|e| e.rss_mb.is_none() && !matches!(e.mark, Mark::RetryOk | Mark::FetchFailed))
        .count();
    if no_rss > 0 {
        notes.push(format!(
            "{no_rss} recycles, holds or kills in the recording carry no rss_mb: the timeline \
             draws them on the top edge of the RSS panel."
        ));
    }
    let lane_none = lanes.iter().position(|l| l == "(none)");
    let frame = Frame {
        x_desc: format!(
            "hours since the window's start ({} axis, t = {} s)",
            text(a, "/axis"),
            html::number(start)
        ),
        lanes,
        limits: limits(a, start),
    };
    for e in &mut events {
        e.t_s -= start;
    }
    charts.push(c(
        "timeline.svg",
        "Fleet timeline (recording)",
        "Every recorded recycle at its RSS, coloured by the path that let it through, \
         classified as analysis.json's bypasses are (the pressure flag first, then the \
         lease/branch labels: acquired, the lease's exit on pressure or on the hard ceiling, \
         a rate gate's exit), shaped by its trigger, ringed in orange when pressure=true; holds (RSS samples of a held worker) as rings, kills as crosses; each \
         limit regime's hard ceiling in red and its jittered limit band in grey. Bottom, on \
         the same time axis: the client canary per instance."
            .into(),
        timeline::fleet_timeline_in(&data::Timeline::default(), &events, &frame)?,
    ));
    let empty = data::Timeline::default();
    if let Some((chart, grid)) = super::zoom_of(&empty, &events, &frame, opts, notes)? {
        charts.push(chart);
        after.push(grid);
    }
    let Some(i) = regime else {
        notes.push("No limit regime in analysis.json: no histograms.".into());
        return Ok(());
    };
    let (t0, t1) = (
        num(a, &format!("/regimes/{i}/start_s")).unwrap_or(f64::NEG_INFINITY) - start,
        num(a, &format!("/regimes/{i}/end_s")).unwrap_or(f64::INFINITY) - start,
    );
    let label = text(a, &format!("/regimes/{i}/label")).to_string();
    let ev: Vec<Event> = events
        .into_iter()
        .filter(|e| e.t_s >= t0 && e.t_s <= t1)
        .collect();
    let rec = || ev.iter().filter(|e| matches!(e.mark, Mark::Recycled(_)));
    let why = format!("Histograms: regime {label} only (never pooled across limit regimes)");
    notes.push(format!("{why}."));
    if rec().any(|e| e.requests.is_some()) {
        charts.push(c(
            "requests_per_worker.svg",
            "Requests per worker",
            format!(
                "{why}. Requests each worker served before its recycle; p10 is the seeds' \
                     lifetime alarm, orange bars died young (< 400 requests)."
            ),
            hist::requests_per_worker(&ev)?,
        ));
    } else {
        notes.push(format!(
            "No requests per worker chart: no recycle in regime {label} records `requests`."
        ));
    }
    if rec().any(|e| e.rss_mb.is_some() && e.limit_mb.is_some()) {
        charts.push(c(
            "margin.svg",
            "Margin over limit",
            format!("{why}. RSS over the worker's own jittered limit at its recycle."),
            hist::margin(&ev)?,
        ));
    } else {
        notes.push(format!(
            "No margin chart: no recycle in regime {label} records both rss_mb and limit_mb."
        ));
    }
    if rec().count() >= 2 {
        let unnamed = lane_none.map(|n| n as u32);
        let (same, cross) = gaps(rec().filter(|e| Some(e.instance) != unnamed));
        charts.push(c(
            "gaps.svg",
            "Gaps between recycles",
            format!(
                "{why}. Same instance: since the previous recycle on that instance (what the \
                 cooldown bounds); across: since the latest recycle on any other instance \
                 (what only a fleet gate bounds), as analysis.json computes them. The cooldown \
                 and tick are the regime's knobs in analysis.json (inferred from the recording \
                 unless replay had --scenario)."
            ),
            hist::gap_histograms_of(&same, &cross, &policy(a, i))?,
        ));
    } else {
        notes.push(format!(
            "No gap chart: fewer than two recycles in regime {label}."
        ));
    }
    Ok(())
}

/// Gaps as `fleetsim replay` computes them (`analyse::regimes::instance_gaps`):
/// per recycle, seconds since the previous recycle on its instance, and since
/// the latest recycle on any other instance. Recycles in time order.
pub fn gaps<'a>(recycles: impl Iterator<Item = &'a Event>) -> (Vec<f64>, Vec<f64>) {
    hist::flat_gaps(recycles.map(|e| (e.t_s, Some(e.instance))))
}

fn overlay_chart(
    validation: Option<&Value>,
    charts: &mut Vec<Chart>,
    notes: &mut Vec<String>,
) -> Result<(), ReportError> {
    let Some(v) = validation else {
        notes.push(
            "No validation.json: run fleetsim replay with --calibrate for the recorded vs \
             simulated overlays."
                .into(),
        );
        return Ok(());
    };
    let dists: Vec<Distribution> = match v.pointer("/distributions") {
        Some(d) => serde_json::from_value(d.clone()).map_err(|e| ReportError::Parse {
            file: "validation.json".into(),
            message: format!("distributions: {e}"),
        })?,
        None => Vec::new(),
    };
    if !dists.iter().any(Distribution::drawable) {
        notes.push(
            "validation.json holds no distribution samples (written before fleetsim replay \
             kept them, or nothing to compare): no overlay; run fleetsim replay --calibrate \
             again."
                .into(),
        );
        return Ok(());
    }
    let seeds = v
        .pointer("/seeds")
        .and_then(Value::as_array)
        .map_or(0, Vec::len);
    charts.push(c(
        "overlay.svg",
        "Recorded vs simulated",
        format!(
            "Each distribution validation.json tests: the recorded sample (bars) and the \
             calibrated scenario's {seeds} seeds pooled (outline), each as its share per bin; \
             the Kolmogorov-Smirnov distance and p-value over each panel."
        ),
        overlay::recorded_vs_simulated(&dists, seeds)?,
    ));
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn recycle(t_s: f64, instance: u32) -> Event {
        Event {
            t_s,
            mark: Mark::Held,
            instance,
            worker: String::new(),
            rss_mb: None,
            limit_mb: None,
            hard_limit_mb: None,
            requests: None,
            branch: String::new(),
            pressure: None,
            trigger: String::new(),
        }
    }

    /// Same instance: since that instance's previous recycle. Across: since
    /// the latest recycle on any other instance (three instances, so the
    /// latest and the first differ).
    #[test]
    fn gaps_are_analysis_json_s() {
        let ev = [
            recycle(0.0, 0),
            recycle(5.0, 1),
            recycle(7.0, 1),
            recycle(8.0, 2),
            recycle(20.0, 1),
        ];
        let (same, cross) = gaps(ev.iter());
        assert_eq!(same, vec![2.0, 13.0]);
        assert_eq!(cross, vec![5.0, 7.0, 1.0, 12.0]);
    }
}
