//! `fleetsim report` end to end: real run, saturate, sweep and optimise
//! directories made by the binary become well-formed, self-contained pages
//! whose summary table is summary.json; every chart draws empty, one-event
//! and large inputs.

mod common;

use common::TempDir;
use common::page::{balanced, check_page, check_svgs, summary_cells, unescape};
use fleetsim::report::data::{
    Event, InstanceSeries, LeaseClass, Mark, Policy, SatAbsorbable, SatCeiling, SatProbe, Saturate,
    Timeline, WorkerSeries,
};
use fleetsim::report::sweep::{ConfigRow, SweepResults, TracePoint};
use fleetsim::report::{Files, Kind, build, hist, saturate, sweep, timeline};
use std::collections::BTreeSet;
use std::fs;
use std::path::Path;
use std::process::{Command, Output};

fn fleetsim(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_fleetsim"))
        .args(args)
        .output()
        .expect("the binary runs")
}

fn ok(args: &[&str]) -> Output {
    let out = fleetsim(args);
    assert!(
        out.status.success(),
        "fleetsim {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    out
}

fn report(dir: &Path) -> String {
    ok(&["report", dir.to_str().unwrap()]);
    fs::read_to_string(dir.join("report.html")).expect("report.html written")
}

#[test]
fn run_directory_report() {
    let dir = TempDir::new("report-run");
    let d = dir.path().to_str().unwrap();
    ok(&["run", "--hours", "2", "--out", d]);
    assert!(
        dir.path().join("scenario.toml").exists(),
        "run writes scenario.toml"
    );
    let html = report(dir.path());
    let files = [
        "timeline.svg",
        "zoom.svg",
        "capacity.svg",
        "requests_per_worker.svg",
        "margin.svg",
        "gaps.svg",
    ];
    check_page(&html, files.len());
    check_svgs(dir.path(), &files);
    // The summary table is summary.json: every key, in order, same values.
    let text = fs::read_to_string(dir.path().join("summary.json")).unwrap();
    let json: serde_json::Value = serde_json::from_str(&text).unwrap();
    let obj = json.as_object().unwrap();
    let cells = summary_cells(&html);
    assert_eq!(cells.len(), obj.len());
    let order: Vec<&str> = {
        let mut keys: Vec<(usize, &str)> = obj
            .keys()
            .map(|k| (text.find(&format!("\"{k}\"")).unwrap(), k.as_str()))
            .collect();
        keys.sort();
        keys.into_iter().map(|(_, k)| k).collect()
    };
    assert_eq!(
        cells.iter().map(|c| c.0.as_str()).collect::<Vec<_>>(),
        order
    );
    for (key, value, shown) in &cells {
        let want = &obj[key];
        match want {
            serde_json::Value::Number(n) => {
                let raw: f64 = value.parse().unwrap();
                assert_eq!(raw, n.as_f64().unwrap(), "{key}");
                let scale = if key.ends_with("_fraction") {
                    100.0
                } else {
                    1.0
                };
                let shown: f64 = shown.parse().unwrap_or_else(|_| panic!("{key}: {shown}"));
                let tol = 1e-3 * (raw * scale).abs().max(1e-3);
                assert!(
                    (shown - raw * scale).abs() <= tol,
                    "{key}: {shown} vs {raw}"
                );
            }
            serde_json::Value::String(s) => assert_eq!(&unescape(value), s, "{key}"),
            serde_json::Value::Null => assert_eq!(shown, "n/a", "{key}"),
            other => panic!("{key}: unexpected {other}"),
        }
    }
    assert!(html.contains(">%</td>"), "fractions carry a unit");
    assert!(
        html.contains("The timeline draws 6 worker slots from workers.csv"),
        "per-worker lines from workers.csv"
    );
    assert!(html.contains(">MB</td>"));
    // Same directory, same report: the page depends on the files only.
    let again = report(dir.path());
    assert_eq!(html, again);
}

#[test]
fn memory_surges_are_shaded_in_the_capacity_chart() {
    let dir = TempDir::new("report-surges");
    let d = dir.path().to_str().unwrap();
    ok(&[
        "run",
        "scenarios/render-2x3-surges.toml",
        "--hours",
        "4",
        "--set",
        "fleet.leak.surge.episodes_per_day=48",
        "--out",
        d,
    ]);
    let html = report(dir.path());
    assert!(html.contains("Shaded: memory surge episodes"), "caption");
    let svg = fs::read_to_string(dir.path().join("capacity.svg")).unwrap();
    assert!(svg.contains("memory surge"), "legend entry");
    // No surges, no shading: the plain run's chart has neither.
    let plain = TempDir::new("report-no-surges");
    let p = plain.path().to_str().unwrap();
    ok(&["run", "--hours", "2", "--out", p]);
    assert!(!report(plain.path()).contains("memory surge"));
    let svg = fs::read_to_string(plain.path().join("capacity.svg")).unwrap();
    assert!(!svg.contains("memory surge"));
}

#[test]
fn saturate_directory_report() {
    let dir = TempDir::new("report-sat");
    let d = dir.path().to_str().unwrap();
    ok(&["saturate", "--hours", "2", "--seeds", "1", "--out", d]);
    let html = report(dir.path());
    check_page(&html, 2);
    check_svgs(dir.path(), &["ceilings.svg", "absorbable.svg"]);
    assert!(html.contains("lease"), "the gates are in the table");
}

const SWEEP: &str = r#"
seed = 3
replications = 2
hours = 1.0
sampler = "grid"

[[param]]
key = "policy.cooldown_s"
values = [60.0, 240.0]

[[param]]
key = "policy.tick_s"
values = [15.0, 45.0]

[[objective]]
metric = "capacity_loss_fraction"

[[objective]]
metric = "requests_reset"
weight = 0.001
"#;

#[test]
fn sweep_and_optimise_directory_reports() {
    let dir = TempDir::new("report-sweep");
    let spec = dir.path().join("s.toml");
    fs::write(&spec, SWEEP).unwrap();
    let out = dir.path().join("sweep");
    let (s, o) = (spec.to_str().unwrap(), out.to_str().unwrap());
    ok(&["sweep", s, "--out", o, "--threads", "1"]);
    let html = report(&out);
    check_page(&html, 2);
    check_svgs(&out, &["pareto.svg", "parallel.svg"]);
    assert!(html.contains(">cooldown_s<"));

    let opt = dir.path().join("opt");
    ok(&[
        "optimise",
        s,
        "--out",
        opt.to_str().unwrap(),
        "--budget",
        "6",
        "--fresh",
        "2",
    ]);
    let html = report(&opt);
    check_page(&html, 1);
    check_svgs(&opt, &["convergence.svg"]);
}

#[test]
fn not_an_output_directory_is_bad_input() {
    let dir = TempDir::new("report-none");
    let out = fleetsim(&["report", dir.path().to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("not a fleetsim output directory"), "{err}");
    fs::write(dir.path().join("events.csv"), "ts,event\n").unwrap();
    let out = fleetsim(&["report", dir.path().to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("did not finish"));
    fs::write(dir.path().join("analysis.json"), "{}").unwrap();
    let out = fleetsim(&["report", dir.path().to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("fleetsim replay"));
    let missing = dir.path().join("nope");
    let out = fleetsim(&["report", missing.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(2));
}

/// A run's events.csv cut at a line boundary (a copy stopped between rows)
/// has no broken row to tell it by: summary.json's counts do, and the
/// report names the file, the kind of row and both counts (exit 2).
#[test]
fn a_run_whose_events_were_cut_at_a_line_is_refused() {
    let dir = TempDir::new("report-cut-events");
    let d = dir.path().to_str().unwrap();
    ok(&["run", "--hours", "2", "--out", d, "-q"]);
    let path = dir.path().join("events.csv");
    let text = fs::read_to_string(&path).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    assert!(lines.len() > 20, "{} rows", lines.len());
    let half: String = lines[..lines.len() / 2]
        .iter()
        .map(|l| format!("{l}\n"))
        .collect();
    fs::write(&path, half).unwrap();
    let out = fleetsim(&["report", d]);
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("events.csv")
            && err.contains("rows where summary.json's")
            && err.contains("cut short"),
        "{err}"
    );
    assert!(!dir.path().join("report.html").exists());
    // The whole file reports.
    fs::write(&path, &text).unwrap();
    ok(&["report", d]);
}

#[test]
fn open_without_an_opener_still_succeeds() {
    let dir = TempDir::new("report-open");
    let d = dir.path().to_str().unwrap();
    fs::write(
        dir.path().join("trace.csv"),
        "evaluation,phase,cost\n0,screen,1.5\n",
    )
    .unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_fleetsim"))
        .args(["report", d, "--open"])
        .env("PATH", dir.path())
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(dir.path().join("report.html").exists());
}

// Library: every chart on empty, one-event and large inputs.

fn event(t: f64, mark: Mark, instance: u32, rss: f64) -> Event {
    Event {
        t_s: t,
        mark,
        instance,
        worker: format!("w{}", instance * 3),
        rss_mb: Some(rss),
        limit_mb: Some(rss - 12.0),
        hard_limit_mb: Some(650.0),
        requests: Some(t % 2000.0),
        branch: "lease_acquired".into(),
        pressure: None,
        trigger: String::new(),
    }
}

fn policy() -> Policy {
    Policy {
        cooldown_s: Some(120.0),
        pressure_cooldown_s: Some(30.0),
        tick_s: Some(45.0),
        base_limit_mb: Some(500.0),
        jitter_mb: Some(40.0),
        hard_limit_mb: Some(650.0),
        min_headroom_mb: Some(350.0),
    }
}

fn timeline_of(rows: usize, instances: usize) -> Timeline {
    let col = |f: &dyn Fn(usize) -> f64| (0..rows).map(f).collect::<Vec<f64>>();
    Timeline {
        t_s: col(&|i| i as f64 * 60.0),
        serving: col(&|i| 6.0 - (i % 7 == 0) as u8 as f64),
        booting: col(&|i| (i % 7 == 0) as u8 as f64),
        draining: col(&|_| 0.0),
        instances: (0..instances)
            .map(|k| InstanceSeries {
                usage_mb: col(&|i| 1200.0 + (i % 50) as f64 + k as f64),
                headroom_mb: col(&|i| 800.0 - (i % 50) as f64),
                max_rss_mb: col(&|i| 420.0 + (i % 97) as f64),
            })
            .collect(),
        // A memory surge in 3 rows of every 13: many shaded spans.
        surge_s: col(&|i| if i % 13 < 3 { 30.0 } else { 0.0 }),
        // Three slots per instance: a saw tooth, a new limit each generation.
        workers: (0..instances * 3)
            .map(|k| WorkerSeries {
                instance: (k / 3) as u32,
                worker: format!("w{}", k % 3),
                t_s: col(&|i| i as f64 * 60.0),
                rss_mb: col(&|i| 360.0 + ((i + 31 * k) % 97) as f64 * 1.5),
                limit_mb: col(&|i| 460.0 + ((i + 31 * k) / 97 % 80) as f64),
                generation: col(&|i| ((i + 31 * k) / 97) as f64),
            })
            .collect(),
    }
}

fn large_events(n: usize) -> Vec<Event> {
    let marks = [
        Mark::Recycled(LeaseClass::Acquired),
        Mark::Recycled(LeaseClass::BypassPressure),
        Mark::Recycled(LeaseClass::BypassCeiling),
        Mark::Recycled(LeaseClass::Ungated),
        Mark::Held,
        Mark::OomKill,
        Mark::EvilKill,
        Mark::DrainKilled,
        Mark::RetryOk,
        Mark::FetchFailed,
    ];
    (0..n)
        .map(|i| {
            event(
                i as f64 * 3.7,
                marks[i % marks.len()],
                (i % 4) as u32,
                400.0 + (i % 300) as f64,
            )
        })
        .collect()
}

fn run_charts(tl: &Timeline, ev: &[Event], p: &Policy) -> Vec<String> {
    vec![
        timeline::fleet_timeline(tl, ev, p).unwrap(),
        timeline::capacity(tl, p).unwrap(),
        hist::requests_per_worker(ev).unwrap(),
        hist::margin(ev).unwrap(),
        hist::gap_histograms(ev, p).unwrap(),
    ]
}

fn valid(svgs: &[String]) {
    for s in svgs {
        balanced(s).unwrap();
        assert!(!s.contains("NaN"));
    }
}

#[test]
fn run_charts_draw_empty_one_and_large_inputs() {
    let empty = run_charts(&Timeline::default(), &[], &Policy::default());
    valid(&empty);
    assert!(empty[2].contains("no recycles"));
    let one = run_charts(
        &timeline_of(1, 1),
        &[event(30.0, Mark::Recycled(LeaseClass::Acquired), 0, 520.0)],
        &policy(),
    );
    valid(&one);
    // A week of minutes on four instances and 200k events: lines thinned to
    // the pixels, markers one per pixel, so the files stay small.
    let big = run_charts(&timeline_of(7 * 1440, 4), &large_events(200_000), &policy());
    valid(&big);
    let sizes: Vec<usize> = big.iter().map(String::len).collect();
    assert!(sizes.iter().all(|s| *s < 2_500_000), "SVG sizes {sizes:?}");
}

fn saturate_of(probes: usize) -> Saturate {
    Saturate {
        scenario: "x".into(),
        workers: 6,
        ceilings: vec![
            SatCeiling {
                gate: "cooldown".into(),
                per_hour: Some(60.0),
                per_hour_escalated: Some(240.0),
                why: String::new(),
            },
            SatCeiling {
                gate: "busy_deferral".into(),
                per_hour: None,
                per_hour_escalated: None,
                why: String::new(),
            },
        ],
        policy_ceiling_per_hour: Some(60.0),
        absorbable: SatAbsorbable {
            fetch_failed_threshold_per_hour: 0.1,
            no_fetch_failed_per_hour: (probes > 0).then_some(4.0),
            probes: (0..probes)
                .map(|i| SatProbe {
                    target_per_hour: 1.0 + i as f64,
                    recycles_per_hour: 1.0 + i as f64,
                    retry_ok_per_hour: i as f64 * 2.0,
                    fetch_failed_per_hour: i as f64 * 0.05,
                    capacity_loss_fraction: 0.0,
                })
                .collect(),
            ..Default::default()
        },
        ..Default::default()
    }
}

#[test]
fn saturate_charts_draw_empty_one_and_large_inputs() {
    for s in [Saturate::default(), saturate_of(1), saturate_of(500)] {
        valid(&[
            saturate::ceilings(&s).unwrap(),
            saturate::probe_curve(&s).unwrap(),
        ]);
    }
}

fn results_of(n: u64, objectives: usize) -> SweepResults {
    SweepResults {
        params: vec!["policy.cooldown_s".into(), "policy.tick_s".into()],
        objectives: (0..objectives)
            .map(|i| fleetsim::report::data::Objective {
                metric: format!("m{i}"),
                minimize: true,
            })
            .collect(),
        rows: (0..n)
            .map(|c| ConfigRow {
                config: c,
                params: if c == 0 {
                    vec![None, None]
                } else {
                    vec![Some(c as f64 * 10.0), Some((c % 5) as f64)]
                },
                feasible: c % 3 != 1,
                objectives: (0..objectives)
                    .map(|i| Some(((c * 7 + i as u64 * 13) % 101) as f64))
                    .collect(),
                scalar: Some((c % 17) as f64),
            })
            .collect(),
    }
}

#[test]
fn sweep_charts_draw_empty_one_and_large_inputs() {
    for (n, k) in [(0, 0), (0, 2), (1, 1), (1, 2), (5000, 2), (50, 3)] {
        let r = results_of(n, k);
        let front: BTreeSet<u64> = (0..n).step_by(7).collect();
        valid(&[
            sweep::pareto(&r, &front).unwrap(),
            sweep::parallel(&r).unwrap(),
        ]);
    }
    for n in [0usize, 1, 20_000] {
        let trace: Vec<TracePoint> = (0..n)
            .map(|i| TracePoint {
                evaluation: i as f64,
                phase: ["screen", "swarm", "polish"][i * 3 / n.max(1)].into(),
                cost: if i % 11 == 5 {
                    1e9
                } else {
                    100.0 / (1.0 + i as f64)
                },
            })
            .collect();
        valid(&[sweep::convergence(&trace).unwrap()]);
    }
}

#[test]
fn text_from_data_is_escaped() {
    let mut files = Files::new();
    files.insert(
        "summary.json".into(),
        br#"{"scenario": "<script>alert('x')</script>", "recycles": 1, "max_rss_mb": 512.5}"#
            .to_vec(),
    );
    files.insert(
        "events.csv".into(),
        b"ts,event,instance,worker,rss_mb,limit_mb,lease,branch\n1.0,worker_recycled,inst-0,w<b>,520,500,acquired,x&y\n"
            .to_vec(),
    );
    files.insert("timeline.csv".into(), b"t_s,serving\n0,6\n".to_vec());
    let r = build(Kind::Run, "a&b <dir>", &files).unwrap();
    assert!(!r.html.contains("<script"));
    assert!(r.html.contains("&lt;script&gt;"));
    assert!(r.html.contains("a&amp;b &lt;dir&gt;"));
    balanced(&r.html).unwrap();
}

#[test]
fn malformed_inputs_are_errors_not_panics() {
    let mut files = Files::new();
    files.insert("summary.json".into(), b"{not json".to_vec());
    files.insert("events.csv".into(), b"".to_vec());
    files.insert("timeline.csv".into(), b"".to_vec());
    assert!(build(Kind::Run, "x", &files).is_err());
    let mut files = Files::new();
    files.insert("saturate.json".into(), b"\"saturate\"".to_vec());
    assert!(build(Kind::Saturate, "x", &files).is_err());
    assert!(build(Kind::Sweep, "x", &Files::new()).is_err());
}
