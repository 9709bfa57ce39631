//! `fleetsim report`: an output directory as pictures. `Kind::detect` tells
//! which command wrote a directory from the files in it; `build` turns the
//! files' bytes into SVG charts (plotters, SVG backend: text stays SVG
//! `<text>`, so no font files are read) and one self-contained HTML page
//! (inline SVG, inline CSS, no script, nothing fetched). Pure: bytes in,
//! strings out; the CLI reads and writes the files.
//!
//! A new kind of output is one `Kind` variant, its files in `Kind::detect`
//! and `Kind::files`, and one `build_*` function. `fleetsim replay`'s is in
//! `replay.rs`: analysis.json's per-regime figures as tables, the assembled
//! recording (recording.csv) through the run's timeline and histograms
//! (`timeline::Frame` carries its regimes' limits and instance labels), and
//! validation.json's samples as recorded-vs-simulated overlays (`overlay.rs`).

pub mod chart;
pub mod compare;
pub mod cover;
pub mod data;
pub mod hist;
pub mod html;
pub mod marks;
pub mod overlay;
pub mod palette;
pub mod path;
pub mod provenance;
pub mod replay;
pub mod saturate;
pub mod sweep;
pub mod timeline;
pub mod whatif;
pub mod zoom;

use std::collections::BTreeMap;

#[derive(Debug, thiserror::Error, PartialEq)]
pub enum ReportError {
    #[error("{file}: {message}")]
    Parse { file: String, message: String },
    #[error("{0}: missing")]
    Missing(String),
    #[error("drawing a chart: {0}")]
    Chart(String),
}

/// Which command wrote a directory.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    /// `fleetsim run`: summary.json, events.csv, timeline.csv (+ scenario.toml, workers.csv).
    Run,
    /// `fleetsim saturate`: saturate.json.
    Saturate,
    /// `fleetsim sweep` or `merge`: results.csv, pareto.csv, sweep.toml.
    Sweep,
    /// `fleetsim optimise`: trace.csv, best.toml.
    Optimise,
    /// `fleetsim replay`: analysis.json (+ recording.csv, validation.json, whatif.json).
    Replay,
}

impl Kind {
    /// The kind of a directory from the names of the files in it. A run
    /// needs its summary.json: without it the run did not finish.
    pub fn detect<S: AsRef<str>>(names: &[S]) -> Option<Kind> {
        let has = |n: &str| names.iter().any(|s| s.as_ref() == n);
        if has("summary.json") && has("events.csv") && has("timeline.csv") {
            Some(Kind::Run)
        } else if has("saturate.json") {
            Some(Kind::Saturate)
        } else if has("results.csv") {
            Some(Kind::Sweep)
        } else if has("trace.csv") {
            Some(Kind::Optimise)
        } else if has("analysis.json") {
            Some(Kind::Replay)
        } else {
            None
        }
    }

    /// The files a report of this kind reads: (required, optional).
    pub fn files(self) -> (&'static [&'static str], &'static [&'static str]) {
        match self {
            Kind::Run => (
                &["summary.json", "events.csv", "timeline.csv"],
                &["scenario.toml", "workers.csv"],
            ),
            Kind::Saturate => (&["saturate.json"], &[]),
            Kind::Sweep => (&["results.csv"], &["pareto.csv", "sweep.toml"]),
            Kind::Optimise => (&["trace.csv"], &["best.toml"]),
            Kind::Replay => (
                &["analysis.json"],
                &[
                    "recording.csv",
                    "validation.json",
                    "calibrated.toml",
                    "whatif.json",
                ],
            ),
        }
    }

    pub fn label(self) -> &'static str {
        match self {
            Kind::Run => "fleetsim run",
            Kind::Saturate => "fleetsim saturate",
            Kind::Sweep => "fleetsim sweep",
            Kind::Optimise => "fleetsim optimise",
            Kind::Replay => "fleetsim replay",
        }
    }
}

/// One chart: its file name, heading, how to read it, and the SVG.
#[derive(Clone, Debug, PartialEq)]
pub struct Chart {
    pub file: String,
    pub title: String,
    pub caption: String,
    pub svg: String,
}

/// A table of the report: a heading, column names, rows of cells.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Grid {
    pub title: String,
    pub header: Vec<String>,
    pub rows: Vec<Vec<String>>,
}

/// One row of a keyed table: the JSON pointer of its value in the file
/// (the page carries it, so the table can be checked against the file),
/// a label, the value as in the file, and its unit (`%`: shown x 100).
#[derive(Clone, Debug, PartialEq)]
pub struct KeyedRow {
    pub key: String,
    pub label: String,
    pub value: serde_json::Value,
    pub unit: &'static str,
}

/// A table of values read from a JSON file, each with its unit.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct KeyedTable {
    pub title: String,
    pub rows: Vec<KeyedRow>,
}

/// What a report shows, before it becomes HTML.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Report {
    pub name: String,
    pub kind: Option<Kind>,
    /// summary.json, in file order (runs only).
    pub summary: Option<data::Ordered>,
    /// Keyed tables side by side (replay: analysis.json per regime).
    pub tables: Vec<KeyedTable>,
    pub grids: Vec<Grid>,
    pub notes: Vec<String>,
    pub charts: Vec<Chart>,
    /// What made a run: its policy against the default, how to reproduce it.
    pub made_by: Option<provenance::MadeBy>,
    /// Tables placed after the charts (the zoomed window's events).
    pub after: Vec<Grid>,
    /// HTML fragments placed before the charts, each built (and escaped) by
    /// this module's own writers (`compare::table_html`).
    pub extra_html: Vec<String>,
}

/// How a report is drawn, besides its files.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Options {
    /// The stretch the timeline zooms on, seconds on the time axis
    /// (`--from`, `--to`); None: the busiest hour.
    pub window_s: Option<(f64, f64)>,
}

/// The report's files: its charts and the page that holds them all.
pub struct Rendered {
    pub html: String,
    pub charts: Vec<Chart>,
}

/// The input files by name.
pub type Files = BTreeMap<String, Vec<u8>>;

pub(crate) fn need<'a>(files: &'a Files, name: &str) -> Result<&'a [u8], ReportError> {
    files
        .get(name)
        .map(Vec::as_slice)
        .ok_or_else(|| ReportError::Missing(name.to_string()))
}

/// Builds the report of a directory called `name` from its files.
pub fn build(kind: Kind, name: &str, files: &Files) -> Result<Rendered, ReportError> {
    build_with(kind, name, files, &Options::default())
}

/// The same, with options (a zoom window).
pub fn build_with(
    kind: Kind,
    name: &str,
    files: &Files,
    opts: &Options,
) -> Result<Rendered, ReportError> {
    let report = match kind {
        Kind::Run => build_run_with(name, files, opts)?,
        Kind::Saturate => build_saturate(name, files)?,
        Kind::Sweep => build_sweep(name, files)?,
        Kind::Optimise => build_optimise(name, files)?,
        Kind::Replay => replay::build_replay_with(name, files, opts)?,
    };
    Ok(Rendered {
        html: html::page(&report),
        charts: report.charts,
    })
}

fn chart(file: &str, title: &str, caption: &str, svg: String) -> Chart {
    Chart {
        file: file.into(),
        title: title.into(),
        caption: caption.into(),
        svg,
    }
}

pub fn build_run(name: &str, files: &Files) -> Result<Report, ReportError> {
    build_run_with(name, files, &Options::default())
}

/// The zoomed stretch of a timeline: the chart and its events' table, or a
/// note saying why there is none.
pub fn zoom_of(
    tl: &data::Timeline,
    events: &[data::Event],
    frame: &timeline::Frame,
    opts: &Options,
    notes: &mut Vec<String>,
) -> Result<Option<(Chart, Grid)>, ReportError> {
    let (t0, t1, title, file) = match opts.window_s {
        Some((a, b)) => (
            a,
            b,
            format!("Window {}", zoom::window_label(a, b)),
            "zoom.svg",
        ),
        None => match zoom::busiest_hour(events) {
            Some((a, b, n)) => (
                a,
                b,
                format!("Busiest hour {}: {n} recycles", zoom::window_label(a, b)),
                "zoom.svg",
            ),
            None => {
                notes.push("No recycle: no busiest hour to zoom on.".into());
                return Ok(None);
            }
        },
    };
    let svg = timeline::fleet_window(tl, events, frame, (t0, t1), &title)?;
    let grid = zoom::events_table(events, &frame.lanes, t0, t1, &title);
    let caption = "The timeline above cut to this stretch (time as HH:MM from the start of the \
                   time axis), every event drawn where it happened: each recycle by the path \
                   that let it through (colour) and its trigger (shape), pressure=true ringed \
                   in orange, holds as rings, kills as crosses; the client canary below. The \
                   table after the charts lists the same events in time order.";
    Ok(Some((chart(file, &title, caption, svg), grid)))
}

pub fn build_run_with(name: &str, files: &Files, opts: &Options) -> Result<Report, ReportError> {
    let summary = data::parse_summary(need(files, "summary.json")?)?;
    let (events, untimed) = data::parse_run_events(need(files, "events.csv")?)?;
    let mut tl = data::parse_timeline(need(files, "timeline.csv")?)?;
    cover::timeline_covers(&tl, &summary)?;
    cover::events_cover(&events, &untimed, &summary)?;
    if let Some(b) = files.get("workers.csv") {
        tl.workers = data::parse_workers(b)?;
    }
    let mut notes = Vec::new();
    if !untimed.is_empty() {
        notes.push(format!(
            "{} rows of events.csv have no finite time (ts) and are not drawn.",
            untimed.len()
        ));
    }
    let policy = match files.get("scenario.toml") {
        Some(b) => data::parse_policy(b)?,
        None => {
            notes.push(
                "No scenario.toml in this directory (written by fleetsim run since the report \
                 command): the cooldown, tick, base limit and pressure threshold are not marked."
                    .to_string(),
            );
            data::Policy::default()
        }
    };
    notes.push(if tl.workers.is_empty() {
        "No workers.csv (written by fleetsim run since per-worker lines): worker RSS is \
         recorded only at recycles and holds (events.csv rss_mb), the points per worker; the \
         lines are each instance's largest worker RSS per timeline step."
            .to_string()
    } else {
        format!(
            "The timeline draws {} worker slots from workers.csv: each slot's RSS at every \
             timeline step (a saw tooth: it drops at each recycle), its own jittered limit \
             dashed; recycles and holds are at the RSS events.csv recorded.",
            tl.workers.len()
        )
    });
    let made_by = provenance::made_by(
        name,
        files.get("scenario.toml").map(Vec::as_slice),
        &summary,
    )?;
    let frame = timeline::Frame::run(&tl, &events, &policy);
    let zoomed = zoom_of(&tl, &events, &frame, opts, &mut notes)?;
    let mut charts = vec![
        chart(
            "timeline.svg",
            "Fleet timeline",
            "Top: each worker slot's RSS and its own jittered limit (dashed; without \
             workers.csv, each instance's largest worker RSS), every recycle at the recycled worker's \
             RSS coloured by the path that let it through (lease acquired, the lease's exit on \
             pressure or on the hard ceiling, a rate gate's exit), shaped by its trigger, ringed \
             in orange when recorded with pressure=true; holds as rings, kills as crosses, the \
             hard ceiling in red and the jittered limit band in grey. Bottom, on the same time \
             axis: the client canary per instance (retry_ok up, fetch_failed down, a tick's \
             height the count in its 2-pixel column).",
            timeline::fleet_timeline_in(&tl, &events, &frame)?,
        ),
        chart(
            "capacity.svg",
            "Serving capacity",
            format!(
                "Workers serving, draining and booting (stacked) and each instance's cgroup \
                 headroom; below the dashed line the recycler is under pressure.{}",
                if tl.surge_s.is_empty() {
                    ""
                } else {
                    " Shaded: memory surge episodes (timeline.csv's surge_episode_s)."
                }
            )
            .as_str(),
            timeline::capacity(&tl, &policy)?,
        ),
        chart(
            "requests_per_worker.svg",
            "Requests per worker",
            "Requests each worker served before it was recycled. The seeds alarm on p10, not \
             on recycle count; orange bars died young (< 400 requests).",
            hist::requests_per_worker(&events)?,
        ),
        chart(
            "margin.svg",
            "Margin over limit",
            "RSS over the worker's own jittered limit when it was recycled; orange bars \
             tripped within 25 MB of their limit.",
            hist::margin(&events)?,
        ),
        chart(
            "gaps.svg",
            "Gaps between recycles",
            "Left: since the previous recycle on the same instance, which the cooldown bounds \
             (none below it; the worst over-ceiling dwell sits in the cooldown + tick band). \
             Right: since the latest recycle on any other instance, which only a fleet gate \
             bounds (as fleetsim replay's analysis.json measures both).",
            hist::gap_histograms(&events, &policy)?,
        ),
    ];
    let mut after = Vec::new();
    if let Some((c, g)) = zoomed {
        charts.insert(1, c);
        after.push(g);
    }
    Ok(Report {
        name: name.into(),
        kind: Some(Kind::Run),
        summary: Some(summary),
        tables: Vec::new(),
        grids: Vec::new(),
        notes,
        charts,
        made_by: Some(made_by),
        after,
        extra_html: Vec::new(),
    })
}

fn opt(v: Option<f64>, none: &str) -> String {
    v.map_or(none.to_string(), |v| format!("{v:.1}"))
}

pub fn build_saturate(name: &str, files: &Files) -> Result<Report, ReportError> {
    let s = data::parse_saturate(need(files, "saturate.json")?)?;
    let mut rows: Vec<Vec<String>> = s
        .ceilings
        .iter()
        .map(|c| {
            vec![
                c.gate.clone(),
                opt(c.per_hour, "unbounded"),
                opt(c.per_hour_escalated, "-"),
                c.why.clone(),
            ]
        })
        .collect();
    rows.push(vec![
        "whole policy".into(),
        opt(s.policy_ceiling_per_hour, "unbounded"),
        "-".into(),
        "the smallest gate ceiling".into(),
    ]);
    rows.push(vec![
        "simulated at saturation".into(),
        format!("{:.1}", s.simulated.recycles_per_hour),
        "-".into(),
        format!(
            "every worker over its limit: {:.2} exits/h, {:.1} retry_ok/h, {:.2} fetch_failed/h, \
             capacity loss {:.3} %",
            s.simulated.exits_per_hour,
            s.simulated.retry_ok_per_hour,
            s.simulated.fetch_failed_per_hour,
            s.simulated.capacity_loss_fraction * 100.0
        ),
    ]);
    rows.push(vec![
        "absorbable churn".into(),
        opt(s.absorbable.no_fetch_failed_per_hour, "none probed"),
        "-".into(),
        format!(
            "highest forced rate whose fetch_failed stays under {}/h",
            s.absorbable.fetch_failed_threshold_per_hour
        ),
    ]);
    let grid = Grid {
        title: format!("{}: {} workers", s.scenario, s.workers),
        header: ["gate", "recycles/h", "escalated /h", "derivation"]
            .map(String::from)
            .to_vec(),
        rows,
    };
    let charts = vec![
        chart(
            "ceilings.svg",
            "Permitted vs absorbable",
            "Each gate's analytic ceiling (outline: with its escalation), what the whole policy \
             permits, what the simulator reached with every worker over its limit, and the \
             churn the clients absorb (dashed): a bar past the dashed line is a rate the \
             policy allows and the users will feel.",
            saturate::ceilings(&s)?,
        ),
        chart(
            "absorbable.svg",
            "Absorbable churn probe",
            "Forced churn at each rate on this fleet and traffic: client resets that retried \
             (left axis) and that failed (right axis).",
            saturate::probe_curve(&s)?,
        ),
    ];
    Ok(Report {
        name: name.into(),
        kind: Some(Kind::Saturate),
        summary: None,
        tables: Vec::new(),
        grids: vec![grid],
        notes: s.verdicts.clone(),
        charts,
        ..Default::default()
    })
}

pub fn build_sweep(name: &str, files: &Files) -> Result<Report, ReportError> {
    let directions = match files.get("sweep.toml") {
        Some(b) => data::parse_objectives(b)?,
        None => Vec::new(),
    };
    let res = sweep::SweepResults::parse(need(files, "results.csv")?, &directions)?;
    let front = match files.get("pareto.csv") {
        Some(b) => sweep::parse_front(b)?,
        None => Default::default(),
    };
    let mut header = vec!["rank".to_string(), "config".into()];
    header.extend(
        res.params
            .iter()
            .map(|p| p.strip_prefix("policy.").unwrap_or(p).to_string()),
    );
    header.extend(res.objectives.iter().map(|o| format!("{} mean", o.metric)));
    header.push("scalar mean".into());
    let cell = |v: Option<f64>| v.map_or("base".to_string(), html::number);
    let rows = res
        .ranked()
        .iter()
        .take(sweep::TOP)
        .enumerate()
        .map(|(k, r)| {
            let mut row = vec![(k + 1).to_string(), r.config.to_string()];
            row.extend(r.params.iter().map(|v| cell(*v)));
            row.extend(r.objectives.iter().map(|v| cell(*v)));
            row.push(cell(r.scalar));
            row
        })
        .collect();
    let grid = Grid {
        title: format!(
            "{} configurations, {} feasible; the best by scalar objective",
            res.rows.len(),
            res.rows.iter().filter(|r| r.feasible).count()
        ),
        header,
        rows,
    };
    let charts = vec![
        chart(
            "pareto.svg",
            "Pareto front",
            "Each configuration's mean of the first two objectives; the front (pareto.csv) \
             joined in blue, the base scenario (config 0) in red.",
            sweep::pareto(&res, &front)?,
        ),
        chart(
            "parallel.svg",
            "Best configurations",
            "One axis per parameter and objective, each scaled to its range over the sweep; \
             the best configuration is the thickest line.",
            sweep::parallel(&res)?,
        ),
    ];
    Ok(Report {
        name: name.into(),
        kind: Some(Kind::Sweep),
        summary: None,
        tables: Vec::new(),
        grids: vec![grid],
        notes: Vec::new(),
        charts,
        ..Default::default()
    })
}

pub fn build_optimise(name: &str, files: &Files) -> Result<Report, ReportError> {
    let trace = sweep::parse_trace(need(files, "trace.csv")?)?;
    let mut notes: Vec<String> = files
        .get("best.toml")
        .map(|b| String::from_utf8_lossy(b).into_owned())
        .unwrap_or_default()
        .lines()
        .filter_map(|l| l.strip_prefix('#'))
        .map(|l| l.trim().to_string())
        .collect();
    if !files.contains_key("best.toml") {
        notes.push("No best.toml: the optimiser found no feasible point.".into());
    }
    let mut rows = Vec::new();
    let mut phases: Vec<&str> = Vec::new();
    for t in &trace {
        if !phases.contains(&t.phase.as_str()) {
            phases.push(&t.phase);
        }
    }
    for p in phases {
        let of: Vec<f64> = trace
            .iter()
            .filter(|t| t.phase == p)
            .map(|t| t.cost)
            .collect();
        let ok: Vec<f64> = of.iter().copied().filter(|c| sweep::feasible(*c)).collect();
        let best = ok.iter().copied().min_by(f64::total_cmp);
        rows.push(vec![
            p.to_string(),
            of.len().to_string(),
            (of.len() - ok.len()).to_string(),
            best.map_or("-".into(), |b| format!("{b:.6}")),
        ]);
    }
    let grid = Grid {
        title: "Evaluations by phase".into(),
        header: [
            "phase",
            "evaluations",
            "infeasible in a replication",
            "best cost",
        ]
        .map(String::from)
        .to_vec(),
        rows,
    };
    let charts = vec![chart(
        "convergence.svg",
        "Convergence",
        "The cost of every evaluation, coloured by optimiser phase, and the best so far.",
        sweep::convergence(&trace)?,
    )];
    Ok(Report {
        name: name.into(),
        kind: Some(Kind::Optimise),
        summary: None,
        tables: Vec::new(),
        grids: vec![grid],
        notes,
        charts,
        ..Default::default()
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn detect_by_files() {
        assert_eq!(
            Kind::detect(&["events.csv", "summary.json", "timeline.csv"]),
            Some(Kind::Run)
        );
        assert_eq!(Kind::detect(&["events.csv", "timeline.csv"]), None);
        assert_eq!(Kind::detect(&["saturate.json"]), Some(Kind::Saturate));
        assert_eq!(
            Kind::detect(&["trials.csv", "results.csv", "pareto.csv", "sweep.toml"]),
            Some(Kind::Sweep)
        );
        assert_eq!(
            Kind::detect(&["trace.csv", "best.toml"]),
            Some(Kind::Optimise)
        );
        assert_eq!(
            Kind::detect(&["analysis.json", "recording.csv"]),
            Some(Kind::Replay)
        );
        assert_eq!(Kind::detect::<&str>(&[]), None);
    }
}
