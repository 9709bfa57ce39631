//! What an SRE reads on a report page: the default run's page says what
//! made it (policy against the embedded default, a reproduce command that
//! reproduces, the model), zooms on the busiest hour with its events
//! interleaved, and counts its pressure recycles; `--from/--to` draws any
//! window; and replay's charts classify every recycle exactly as replay's
//! analysis does, the seeds' shared-label trap included.

mod common;

use common::TempDir;
use common::page::{check_page, check_svgs};
use fleetsim::replay::analyse::bypass::{Class, classify};
use fleetsim::replay::{Recording, import};
use fleetsim::report::data::{self, LeaseClass, Mark};
use serde_json::Value;
use std::fs;
use std::path::Path;
use std::process::{Command, Output};

fn fleetsim(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_fleetsim"))
        .args(args)
        .output()
        .expect("the binary runs")
}

fn ok(args: &[&str]) -> String {
    let out = fleetsim(args);
    assert!(
        out.status.success(),
        "fleetsim {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

fn bad(args: &[&str]) -> String {
    let out = fleetsim(args);
    assert_eq!(out.status.code(), Some(2), "fleetsim {args:?} exits 2");
    String::from_utf8_lossy(&out.stderr).into_owned()
}

fn summary(dir: &Path) -> Value {
    serde_json::from_str(&fs::read_to_string(dir.join("summary.json")).unwrap()).unwrap()
}

/// The number in a legend entry `label (N` of an SVG.
fn legend_count(svg: &str, label: &str) -> usize {
    let at = svg
        .find(&format!("{label} ("))
        .unwrap_or_else(|| panic!("no legend entry {label:?}"));
    let rest = &svg[at + label.len() + 2..];
    let n: String = rest.chars().take_while(char::is_ascii_digit).collect();
    n.parse().unwrap()
}

const RUN_CHARTS: [&str; 6] = [
    "timeline.svg",
    "zoom.svg",
    "capacity.svg",
    "requests_per_worker.svg",
    "margin.svg",
    "gaps.svg",
];

#[test]
fn default_run_page_says_what_made_it_and_zooms_on_the_busiest_hour() {
    let dir = TempDir::new("views-default");
    let d = dir.path().to_str().unwrap();
    ok(&["run", "--out", d]);
    ok(&["report", d]);
    let html = fs::read_to_string(dir.path().join("report.html")).unwrap();
    check_page(&html, RUN_CHARTS.len());
    check_svgs(dir.path(), &RUN_CHARTS);
    let s = summary(dir.path());
    // What made it: no key differs from the default; the rest folded away.
    assert!(html.contains("What made this run"));
    assert!(html.contains("0 keys differ from the embedded default"));
    assert!(html.contains("<details><summary>the other "));
    assert!(html.contains(&format!("model {}", fleetsim::MODEL_VERSION)));
    let name = dir.path().file_name().unwrap().to_str().unwrap();
    let cmd = format!("cd {name} &amp;&amp; fleetsim run scenario.toml --seed 1 --out rerun");
    assert!(html.contains(&cmd), "reproduce command on the page");
    // The command reproduces the run, byte for byte.
    ok(&[
        "run",
        &format!("{d}/scenario.toml"),
        "--seed",
        "1",
        "--out",
        &format!("{d}/rerun"),
    ]);
    for f in ["events.csv", "timeline.csv", "workers.csv", "summary.json"] {
        assert_eq!(
            fs::read(dir.path().join(f)).unwrap(),
            fs::read(dir.path().join("rerun").join(f)).unwrap(),
            "{f} reproduced"
        );
    }
    // The busiest hour: summary.json's peak hour, zoomed, with its events.
    let peak = s["peak_hour_recycles"].as_u64().unwrap();
    let zoom = fs::read_to_string(dir.path().join("zoom.svg")).unwrap();
    assert!(zoom.contains(&format!(": {peak} recycles")), "zoom title");
    // The events table comes after the charts: the last heading so named.
    let table = &html[html.rfind("<h2>Busiest hour ").unwrap()..];
    let lease = legend_count(&zoom, "lease acquired / gate open")
        + legend_count(&zoom, "lease exit: pressure")
        + legend_count(&zoom, "lease exit: hard ceiling");
    assert_eq!(
        lease as u64, peak,
        "every recycle of the hour in the zoom's legend"
    );
    let retry = legend_count(&zoom, "retry_ok");
    assert!(retry > 0, "the default's busiest hour has retry_ok");
    // The page's table interleaves them in time order.
    let rows: Vec<&str> = table.split("<tr>").skip(2).collect();
    let kinds: Vec<bool> = rows
        .iter()
        .filter(|r| r.contains("worker_recycled") || r.contains("retry_ok"))
        .map(|r| r.contains("retry_ok"))
        .collect();
    assert_eq!(kinds.iter().filter(|k| **k).count(), retry);
    assert!(kinds.windows(2).any(|w| w[0] != w[1]), "interleaved");
    // Pressure recycles are marked and counted as summary.json counts them.
    let tl = fs::read_to_string(dir.path().join("timeline.svg")).unwrap();
    let pressure = s["pressure_recycles"].as_u64().unwrap();
    assert!(pressure > 0, "the default run has pressure recycles");
    assert_eq!(legend_count(&tl, "pressure=true recycles") as u64, pressure);
    assert_eq!(
        zoom.matches("stroke=\"#FF7F0E\"").count(),
        legend_count(&zoom, "pressure=true recycles") + 1,
        "one halo per pressure recycle of the hour, and the legend's"
    );
}

#[test]
fn a_policy_change_is_listed_first() {
    let dir = TempDir::new("views-set");
    let d = dir.path().to_str().unwrap();
    ok(&[
        "run",
        "--hours",
        "2",
        "--set",
        "policy.cooldown_s=60",
        "--out",
        d,
    ]);
    ok(&["report", d]);
    let html = fs::read_to_string(dir.path().join("report.html")).unwrap();
    let diff = &html[html.find("keys differ").unwrap()..html.find("<details>").unwrap()];
    assert!(html.contains("2 keys differ"), "duration and cooldown");
    assert!(diff.contains("<code>policy.cooldown_s</code></td><td class=\"num\">60.0</td>"));
    assert!(diff.contains("<code>run.duration_h</code>"));
}

#[test]
fn from_to_draws_any_window() {
    let dir = TempDir::new("views-window");
    let d = dir.path().to_str().unwrap();
    ok(&["run", "--hours", "3", "--out", d]);
    let events = data::parse_events(&fs::read(dir.path().join("events.csv")).unwrap()).unwrap();
    for (from, to, t0, t1) in [
        ("1:30", "2:00", 5400.0, 7200.0),
        ("5400", "7200s", 5400.0, 7200.0),
        ("90m", "2h", 5400.0, 7200.0),
    ] {
        ok(&["report", d, "--from", from, "--to", to]);
        let zoom = fs::read_to_string(dir.path().join("zoom.svg")).unwrap();
        assert!(zoom.contains("Window 01:30-02:00"), "{from}");
        let inside = |m: Mark| {
            events
                .iter()
                .filter(|e| e.mark == m && e.t_s >= t0 && e.t_s <= t1)
                .count()
        };
        assert_eq!(legend_count(&zoom, "retry_ok"), inside(Mark::RetryOk));
        assert_eq!(legend_count(&zoom, "recycle_held"), inside(Mark::Held));
    }
    let e = bad(&["report", d, "--from", "2:00", "--to", "1:00"]);
    assert!(e.contains("--to 1:00 must be after --from 2:00"), "{e}");
    let e = bad(&["report", d, "--from", "noon", "--to", "2:00"]);
    assert!(e.contains("--from: `noon` is no time"), "{e}");
    let e = bad(&["report", d, "--from", "1:00"]);
    assert!(e.contains("--to"), "{e}");
    let sat = TempDir::new("views-window-sat");
    let s = sat.path().to_str().unwrap();
    fs::write(sat.path().join("saturate.json"), "{}").unwrap();
    let e = bad(&["report", s, "--from", "0", "--to", "60"]);
    assert!(e.contains("no timeline to zoom on"), "{e}");
}

/// Replay's charts and its analysis agree on every recycle: the chart's
/// path of each recording.csv row (as the report reads it) maps to the
/// class replay's analysis gives the same row (as replay imports it), and
/// the timeline's legend counts are analysis.json's.
#[test]
fn replay_charts_classify_every_recycle_as_the_analysis_does() {
    let root = env!("CARGO_MANIFEST_DIR");
    for rec in ["generated-24h.csv", "seeds-31min.log"] {
        let dir = TempDir::new("views-trap");
        let d = dir.path().to_str().unwrap();
        ok(&[
            "replay",
            &format!("{root}/scenarios/recordings/{rec}"),
            "--out",
            d,
        ]);
        ok(&["report", d]);
        let text = fs::read_to_string(dir.path().join("recording.csv")).unwrap();
        let chart: Vec<data::Event> = data::parse_events(text.as_bytes())
            .unwrap()
            .into_iter()
            .filter(|e| matches!(e.mark, Mark::Recycled(_)))
            .collect();
        let recording =
            Recording::assemble(vec![import::parse("recording.csv", &text).unwrap()]).unwrap();
        let analysis: Vec<Class> = recording
            .events
            .iter()
            .filter(|e| e.is_recycle())
            .map(classify)
            .collect();
        assert_eq!(
            chart.len(),
            analysis.len(),
            "{rec}: every recycle read by both"
        );
        assert!(!chart.is_empty());
        for (e, c) in chart.iter().zip(&analysis) {
            let Mark::Recycled(path) = e.mark else {
                unreachable!()
            };
            assert_eq!(
                path.analysis(&e.branch),
                *c,
                "{rec}: recycle at {} s",
                e.t_s
            );
        }
        let a: Value =
            serde_json::from_str(&fs::read_to_string(dir.path().join("analysis.json")).unwrap())
                .unwrap();
        let sum = |k: &str| -> u64 {
            a["regimes"]
                .as_array()
                .unwrap()
                .iter()
                .map(|r| r["bypasses"][k].as_u64().unwrap())
                .sum()
        };
        let tl = fs::read_to_string(dir.path().join("timeline.svg")).unwrap();
        assert_eq!(
            legend_count(&tl, "lease exit: pressure") as u64,
            sum("exit_pressure"),
            "{rec}"
        );
        assert_eq!(
            legend_count(&tl, "lease exit: hard ceiling") as u64,
            sum("exit_hard_ceiling"),
            "{rec}"
        );
        if rec == "generated-24h.csv" {
            // The trap: `lease=bypassed_hard_ceiling` with pressure=true at
            // 589 MB under a 750 MB ceiling is the pressure exit.
            let trap: Vec<&data::Event> = chart
                .iter()
                .filter(|e| e.rss_mb == Some(589.1) && e.pressure == Some(true))
                .collect();
            assert_eq!(trap.len(), 1);
            assert_eq!(trap[0].mark, Mark::Recycled(LeaseClass::BypassPressure));
            assert_eq!(sum("exit_pressure"), 1);
            assert_eq!(sum("exit_hard_ceiling"), 0);
            assert!(
                text.contains("bypassed_hard_ceiling"),
                "the label is in the recording"
            );
        }
    }
}
