//! `fleetsim report` on `fleetsim replay` output directories: the shipped
//! recordings (with and without --calibrate), an empty and a one-event
//! recording, a large one, and a validation.json written before it kept its
//! samples. The page is self-contained and its tables are analysis.json's
//! own numbers.

mod common;

use common::TempDir;
use common::page::{check_page, check_svgs, summary_cells, unescape};
use fleetsim::replay::validate::{SAMPLE_KEPT, thin};
use fleetsim::report::{Files, Kind, build};
use serde_json::Value;
use std::fmt::Write as _;
use std::fs;
use std::path::Path;
use std::process::Command;

fn ok(args: &[&str]) -> String {
    let out = Command::new(env!("CARGO_BIN_EXE_fleetsim"))
        .args(args)
        .output()
        .expect("the binary runs");
    assert!(
        out.status.success(),
        "fleetsim {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

fn replay_and_report(dir: &Path, args: &[&str]) -> String {
    let d = dir.to_str().unwrap();
    let mut all = vec!["replay"];
    all.extend_from_slice(args);
    all.extend_from_slice(&["--out", d]);
    ok(&all);
    assert!(
        dir.join("recording.csv").exists(),
        "replay writes recording.csv"
    );
    ok(&["report", d]);
    fs::read_to_string(dir.join("report.html")).expect("report.html written")
}

/// Every keyed cell of the page holds the value at its JSON pointer in
/// analysis.json, shown in its unit (percent for fractions).
fn cells_equal_analysis(html: &str, dir: &Path) -> usize {
    let text = fs::read_to_string(dir.join("analysis.json")).unwrap();
    let a: Value = serde_json::from_str(&text).unwrap();
    let cells = summary_cells(html);
    for (key, value, shown) in &cells {
        let want = a
            .pointer(&unescape(key))
            .unwrap_or_else(|| panic!("{key} is not in analysis.json"));
        match want {
            Value::Number(n) => {
                let raw: f64 = value.parse().unwrap();
                assert_eq!(raw, n.as_f64().unwrap(), "{key}");
                let shown: f64 = shown.parse().unwrap_or_else(|_| panic!("{key}: {shown}"));
                let scale = if key.ends_with("_fraction") {
                    100.0
                } else {
                    1.0
                };
                let tol = 1e-3 * (raw * scale).abs().max(1e-3);
                assert!(
                    (shown - raw * scale).abs() <= tol,
                    "{key}: {shown} vs {raw}"
                );
            }
            Value::Null => assert_eq!(shown, "n/a", "{key}"),
            Value::String(s) => assert_eq!(&unescape(value), s, "{key}"),
            other => panic!("{key}: unexpected {other}"),
        }
    }
    cells.len()
}

#[test]
fn generated_day_with_calibration() {
    let dir = TempDir::new("report-replay-24h");
    let html = replay_and_report(
        dir.path(),
        &[
            "scenarios/recordings/generated-24h.csv",
            "--calibrate",
            "--seeds",
            "4",
        ],
    );
    let files = [
        "timeline.svg",
        "zoom.svg",
        "requests_per_worker.svg",
        "margin.svg",
        "gaps.svg",
        "overlay.svg",
    ];
    check_page(&html, files.len());
    check_svgs(dir.path(), &files);
    let n = cells_equal_analysis(&html, dir.path());
    assert!(n > 60, "{n} keyed cells");
    // Both limit regimes have their table; the validated one has the histograms.
    assert!(html.contains("data-key=\"/regimes/0/rate/per_hour\""));
    assert!(html.contains("data-key=\"/regimes/1/rate/per_hour\""));
    assert!(html.contains(">/h</td>") && html.contains(">%</td>") && html.contains(">MB</td>"));
    assert!(html.contains("regime base 500 MB / hard 650 MB only"));
    // The validation table: recorded, mean +- CI, KS p for every row.
    let v: Value =
        serde_json::from_str(&fs::read_to_string(dir.path().join("validation.json")).unwrap())
            .unwrap();
    for f in v["figures"].as_array().unwrap() {
        assert!(html.contains(&format!(
            "<td>{}</td>",
            f["name"].as_str().unwrap().replace('<', "&lt;")
        )));
    }
    assert!(html.contains("simulated mean +- 95% CI"));
    for d in v["distributions"].as_array().unwrap() {
        let p = d["p_value"].as_f64().unwrap();
        assert!(html.contains(&format!("{p:.3e}")), "KS p {p}");
        assert!(!d["recorded_sample"].as_array().unwrap().is_empty());
        assert!(!d["simulated_sample"].as_array().unwrap().is_empty());
    }
    // The gap chart counts gaps as analysis.json does (the validated regime).
    let a: Value =
        serde_json::from_str(&fs::read_to_string(dir.path().join("analysis.json")).unwrap())
            .unwrap();
    let n = |p: &str| a.pointer(p).and_then(Value::as_u64).unwrap();
    let svg = fs::read_to_string(dir.path().join("gaps.svg")).unwrap();
    let same = n("/regimes/1/gaps/same_instance/dist/n");
    let cross = n("/regimes/1/gaps/cross_instance/dist/n");
    assert!(svg.contains(&format!("same instance: {same} (")), "{same}");
    assert!(svg.contains(&format!("across: {cross} (")), "{cross}");
    // Same directory, same report.
    ok(&["report", dir.path().to_str().unwrap()]);
    assert_eq!(
        html,
        fs::read_to_string(dir.path().join("report.html")).unwrap()
    );
}

#[test]
fn seeds_log_without_per_request_rows() {
    let dir = TempDir::new("report-replay-seeds");
    let html = replay_and_report(dir.path(), &["scenarios/recordings/seeds-31min.log"]);
    let files = [
        "timeline.svg",
        "zoom.svg",
        "requests_per_worker.svg",
        "margin.svg",
        "gaps.svg",
    ];
    check_page(&html, files.len());
    check_svgs(dir.path(), &files);
    cells_equal_analysis(&html, dir.path());
    assert!(html.contains("No validation.json"));
    assert!(
        html.contains("carry no rss_mb"),
        "recycles without rss are explained"
    );
    let tl = fs::read_to_string(dir.path().join("timeline.svg")).unwrap();
    assert!(
        tl.contains("inst-A") && tl.contains("inst-B"),
        "lanes keep the recorded labels"
    );
}

#[test]
fn empty_and_one_event_recordings_explain_the_missing_charts() {
    let dir = TempDir::new("report-replay-small");
    // A CSV with a header and no rows is refused like an empty file...
    let header_only = dir.path().join("header-only.csv");
    fs::write(&header_only, "ts,event\n").unwrap();
    let o = std::process::Command::new(env!("CARGO_BIN_EXE_fleetsim"))
        .args(["replay", header_only.to_str().unwrap()])
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.contains("header-only.csv:1: a header and no rows"),
        "{err}"
    );
    // ...but a server log that recorded no event is a window with none.
    let empty = dir.path().join("gunicorn-A.log");
    fs::write(
        &empty,
        "[2026-12-01 13:00:00 +0000] [100] [INFO] Starting gunicorn 23.0.0\n\
         [2026-12-01 13:00:00 +0000] [100] [INFO] Listening at: http://0.0.0.0:8000 (100)\n",
    )
    .unwrap();
    let out = dir.path().join("empty");
    let html = replay_and_report(&out, &[empty.to_str().unwrap()]);
    check_page(&html, 0);
    assert!(
        html.contains("no event"),
        "the page says why nothing is drawn"
    );

    let one = dir.path().join("one.csv");
    fs::write(
        &one,
        "ts,event,instance,rss_mb,limit_mb,requests\n5,worker_recycled,inst-0,530,500,800\n",
    )
    .unwrap();
    let out = dir.path().join("one");
    let html = replay_and_report(&out, &[one.to_str().unwrap()]);
    check_page(&html, 4);
    check_svgs(
        &out,
        &[
            "timeline.svg",
            "zoom.svg",
            "requests_per_worker.svg",
            "margin.svg",
        ],
    );
    assert!(html.contains("No gap chart: fewer than two recycles"));
    cells_equal_analysis(&html, &out);
}

#[test]
fn large_recording_stays_bounded() {
    let dir = TempDir::new("report-replay-large");
    let path = dir.path().join("large.csv");
    let mut csv = String::from(
        "ts,event,instance,worker,rss_mb,limit_mb,base_limit_mb,hard_limit_mb,requests,lease,branch\n",
    );
    // A month of four instances: a recycle every 40 s, a canary and a hold
    // around each (~190,000 rows).
    for k in 0..65_000u64 {
        let t = k as f64 * 40.0;
        let i = k % 4;
        let lease =
            ["acquired", "bypassed_pressure", "bypassed_hard_ceiling"][(k % 7 % 3) as usize];
        let rss = 480.0 + (k % 97) as f64;
        let _ = writeln!(
            csv,
            "{t},worker_recycled,inst-{i},w{},{rss},{},500,650,{},{lease},",
            k % 3,
            rss - (k % 29) as f64,
            300 + k % 1500
        );
        let _ = writeln!(csv, "{},retry_ok,inst-{i},,,,500,650,,none,", t + 2.0);
        if k % 2 == 0 {
            let _ = writeln!(
                csv,
                "{},recycle_held,inst-{i},w1,{rss},470,500,650,,none,cooldown",
                t + 20.0
            );
        }
    }
    fs::write(&path, csv).unwrap();
    let out = dir.path().join("out");
    let html = replay_and_report(&out, &[path.to_str().unwrap()]);
    check_page(&html, 5);
    for f in [
        "timeline.svg",
        "zoom.svg",
        "requests_per_worker.svg",
        "margin.svg",
        "gaps.svg",
    ] {
        let n = fs::metadata(out.join(f)).unwrap().len();
        assert!(n < 2_500_000, "{f}: {n} bytes");
    }
    assert!(html.len() < 6_000_000, "report.html: {} bytes", html.len());
}

#[test]
fn older_outputs_render_with_a_note() {
    let dir = TempDir::new("report-replay-old");
    let d = dir.path().to_str().unwrap();
    ok(&[
        "replay",
        "scenarios/recordings/generated-24h.csv",
        "--calibrate",
        "--seeds",
        "2",
        "--out",
        d,
    ]);
    let mut files = Files::new();
    files.insert(
        "analysis.json".into(),
        fs::read(dir.path().join("analysis.json")).unwrap(),
    );
    // validation.json as written before the samples: same file, no sample arrays.
    let mut v: Value =
        serde_json::from_slice(&fs::read(dir.path().join("validation.json")).unwrap()).unwrap();
    for d in v["distributions"].as_array_mut().unwrap() {
        let o = d.as_object_mut().unwrap();
        o.remove("recorded_sample");
        o.remove("simulated_sample");
    }
    files.insert("validation.json".into(), serde_json::to_vec(&v).unwrap());
    let r = build(Kind::Replay, "old", &files).unwrap();
    assert!(r.charts.is_empty());
    assert!(r.html.contains("No recording.csv"));
    assert!(r.html.contains("no distribution samples"));
    assert!(r.html.contains("simulated mean +- 95% CI"));
    // Not an analysis at all: an error naming the file, not a panic.
    let mut bad = Files::new();
    bad.insert("analysis.json".into(), b"{}".to_vec());
    let e = build(Kind::Replay, "x", &bad).err().unwrap();
    assert!(e.to_string().contains("analysis.json"), "{e}");
    bad.insert("analysis.json".into(), b"[1,".to_vec());
    assert!(build(Kind::Replay, "x", &bad).is_err());
}

#[test]
fn what_ifs_are_tabled_and_drawn() {
    use fleetsim::report::html::number;
    let dir = TempDir::new("report-replay-whatif");
    let html = replay_and_report(
        dir.path(),
        &[
            "scenarios/recordings/generated-24h.csv",
            "--calibrate",
            "--seeds",
            "8",
            "--what-if",
            "scenarios/whatif/token-bucket.toml",
            "--what-if",
            "scenarios/whatif/ceiling-escalation.toml",
            "--force",
        ],
    );
    check_svgs(dir.path(), &["whatif.svg"]);
    assert!(html.contains("id=\"whatif\""));
    let file: Value =
        serde_json::from_slice(&fs::read(dir.path().join("whatif.json")).unwrap()).unwrap();
    assert_eq!(file["schema"], "fleetsim.whatif/3");
    // The page carries the caveat exactly when whatif.json says the
    // calibration did not reproduce its window (`forced` only then: --force
    // on a validated calibration forces nothing). Which way this window's
    // calibration lands is tests/calibrate.rs's business; both branches are
    // checked here, the other one through the library below.
    let validated: Value =
        serde_json::from_slice(&fs::read(dir.path().join("validation.json")).unwrap()).unwrap();
    let reproduces = validated["reproduces"].as_bool().expect("a verdict");
    assert_eq!(file["calibration_reproduces"], reproduces);
    assert_eq!(file["forced"], !reproduces);
    let caveat = "WARNING (what-if): the calibration does NOT reproduce its window";
    assert_eq!(
        html.contains(caveat),
        !reproduces,
        "the caveat iff it failed"
    );
    assert_eq!(
        html.contains("WARNING: the calibration does NOT reproduce"),
        !reproduces
    );
    {
        let mut files = Files::new();
        for f in ["analysis.json", "validation.json"] {
            files.insert(f.into(), fs::read(dir.path().join(f)).unwrap());
        }
        let mut flipped = file.clone();
        flipped["calibration_reproduces"] = (!reproduces).into();
        flipped["forced"] = reproduces.into();
        flipped["warned"] = serde_json::json!(["p90 requests per worker"]);
        flipped["policies"][1]["not_applied"] = serde_json::json!(["[fleet]", "[client]"]);
        files.insert("whatif.json".into(), serde_json::to_vec(&flipped).unwrap());
        let r = build(Kind::Replay, "flipped", &files).unwrap();
        // What of a what-if file was not laid over the scenario is on the page.
        assert!(
            r.html
                .contains("not applied: [fleet], [client] (a what-if lays only the file"),
            "the page names the tables a what-if did not apply"
        );
        assert!(!html.contains("not applied:"), "none in the shipped files");
        assert_eq!(
            r.html.contains(caveat),
            reproduces,
            "the caveat iff it failed"
        );
        if reproduces {
            assert!(r.html.contains(
                "the calibration does NOT reproduce its window (rows p90 requests per worker): \
                 these what-ifs rest on it (run with --force)"
            ));
            assert!(
                r.html
                    .contains("WARNING: the calibration does NOT reproduce")
            );
        }
    }
    // Schema 1, the bare array, still reads (its sub-cases below use it).
    let w = file["policies"].clone();
    let policies = w.as_array().unwrap();
    assert_eq!(policies.len(), 3, "recorded + two alternatives");
    let svg = fs::read_to_string(dir.path().join("whatif.svg")).unwrap();
    // The table, cell by cell: a row per figure, the recorded mean, then
    // each alternative's "mean: difference +- interval" and its marker.
    let start = html
        .find("<h2>What-if (whatif.json)")
        .expect("the what-if table");
    let table = &html[start..start + html[start..].find("</table>").unwrap()];
    let rows: Vec<Vec<String>> = table
        .split("<tr>")
        .skip(2) // before the table, the header row
        .map(|r| {
            r.split("<td")
                .skip(1)
                .map(|c| {
                    let c = &c[c.find('>').unwrap() + 1..];
                    unescape(&c[..c.find("</td>").unwrap()])
                })
                .collect()
        })
        .collect();
    let metrics = fleetsim::replay::whatif::FIGURES;
    assert_eq!(rows.len(), metrics.len());
    let mut significant = 0;
    for (k, (metric, label)) in metrics.iter().enumerate() {
        let scale = if *metric == "capacity_loss_fraction" {
            100.0
        } else {
            1.0
        };
        let unit = if scale == 100.0 { " %" } else { "" };
        assert_eq!(rows[k][0], format!("{label}{unit}"));
        let figure = |p: &Value| {
            p["figures"]
                .as_array()
                .unwrap()
                .iter()
                .find(|f| f["metric"] == *metric)
                .unwrap()
                .clone()
        };
        let recorded = figure(&policies[0]);
        assert_eq!(
            rows[k][1],
            number(recorded["mean"].as_f64().unwrap() * scale)
        );
        for (c, p) in policies[1..].iter().enumerate() {
            let f = figure(p);
            let m = f["mean"].as_f64().unwrap() * scale;
            let d = f["diff_mean"].as_f64().unwrap() * scale;
            let h = f["diff_ci95"].as_f64().unwrap() * scale;
            let star = d.abs() > h;
            significant += star as usize;
            let sign = if d >= 0.0 { "+" } else { "" };
            let want = format!(
                "{}: {sign}{} +- {}{}",
                number(m),
                number(d),
                number(h),
                if star { " *" } else { "" }
            );
            assert_eq!(rows[k][2 + c], want, "{metric}, {}", p["policy"]);
            assert!(
                svg.contains(&format!("{} +- {}", number(d), number(h))),
                "{want}"
            );
        }
    }
    // A filled dot per significant difference, a ring per other one.
    let filled = svg
        .split("<circle")
        .skip(1)
        .filter(|c| !c[..c.find("/>").unwrap()].contains("fill=\"none\""))
        .count();
    assert_eq!(filled, significant, "filled dots");
    assert!(
        significant > 0 && significant < 2 * metrics.len(),
        "{significant} significant"
    );

    // Through the library: an interval that could not be computed (null in
    // the file) shows as "-", a file of one policy draws nothing and says
    // so, a file that is not a list of policies is an error naming it.
    let mut files = Files::new();
    for f in ["analysis.json", "validation.json"] {
        files.insert(f.into(), fs::read(dir.path().join(f)).unwrap());
    }
    // A difference of exactly zero with a zero interval is not significant.
    let mut tie = w.clone();
    tie[1]["figures"][0]["diff_mean"] = 0.0.into();
    tie[1]["figures"][0]["diff_ci95"] = 0.0.into();
    files.insert("whatif.json".into(), serde_json::to_vec(&tie).unwrap());
    let r = build(Kind::Replay, "tie", &files).unwrap();
    assert!(r.html.contains(": +0 +- 0</td>"), "a tie is unmarked");
    let mut one_seed = w.clone();
    for p in one_seed.as_array_mut().unwrap() {
        for f in p["figures"].as_array_mut().unwrap() {
            f["diff_ci95"] = Value::Null;
        }
    }
    files.insert("whatif.json".into(), serde_json::to_vec(&one_seed).unwrap());
    let r = build(Kind::Replay, "null-ci", &files).unwrap();
    assert!(r.charts.iter().any(|c| c.file == "whatif.svg"));
    assert!(r.html.contains(" +- -</td>"), "a null interval shows as -");
    assert!(!r.html.contains("NaN"));
    files.insert(
        "whatif.json".into(),
        serde_json::to_vec(&Value::Array(vec![w[0].clone()])).unwrap(),
    );
    let r = build(Kind::Replay, "recorded-only", &files).unwrap();
    assert!(!r.charts.iter().any(|c| c.file == "whatif.svg"));
    assert!(r.html.contains("no alternative policy"));
    files.insert("whatif.json".into(), b"{\"policy\": 1}".to_vec());
    let e = build(Kind::Replay, "bad", &files).err().unwrap();
    assert!(e.to_string().contains("whatif.json"), "{e}");
}

#[test]
fn validation_samples_are_thinned_to_order_statistics() {
    let xs: Vec<f64> = (0..10_000).rev().map(f64::from).collect();
    let t = thin(&xs);
    assert_eq!(t.len(), SAMPLE_KEPT);
    assert_eq!(t[0], 0.0);
    assert_eq!(*t.last().unwrap(), 9_999.0);
    assert!(t.windows(2).all(|w| w[0] <= w[1]));
    let small = thin(&[3.0, f64::NAN, 1.0]);
    assert_eq!(small, vec![1.0, 3.0]);
}
