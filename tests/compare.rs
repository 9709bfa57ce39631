//! `fleetsim compare`: a baseline and a candidate on paired seeds give each
//! figure's paired difference with its 95% interval (recomputed here from
//! the runs' own summary.json), a hyperfine-style line per headline figure,
//! compare.json and a page with the timelines on one axis; runs of one
//! seed each say there is no interval; bad inputs exit 2.

mod common;

use common::TempDir;
use common::page::{check_page, check_svgs};
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

fn json(path: &Path) -> Value {
    serde_json::from_str(&fs::read_to_string(path).unwrap()).unwrap()
}

fn figure<'a>(c: &'a Value, key: &str) -> &'a Value {
    c["figures"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f["key"] == key)
        .unwrap_or_else(|| panic!("no figure {key}"))
}

#[test]
fn paired_seeds_give_differences_with_intervals() {
    let dir = TempDir::new("compare-seeds");
    let d = dir.path().to_str().unwrap();
    let fixed = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/scenarios/render-2x3-fixed.toml"
    );
    let text = ok(&[
        "compare", "--seeds", "4", "--hours", "12", "default", fixed, "--out", d,
    ]);
    assert!(
        text.starts_with(
            "baseline default; compared: default (4 seeds), render-2x3-fixed (4 seeds)"
        ),
        "{text}"
    );
    let line = text
        .lines()
        .find(|l| l.contains(" recycles_per_hour "))
        .expect("a recycles/h line");
    assert!(line.contains("4 paired seeds"), "{line}");
    let c = json(&dir.path().join("compare.json"));
    assert_eq!(c["schema_version"], 1);
    assert_eq!(c["baseline"], "default");
    // The difference and its interval, recomputed from the runs.
    let per_seed = |side: &str| -> Vec<f64> {
        (1..=4)
            .map(|s| {
                let p = dir
                    .path()
                    .join(side)
                    .join(format!("seed-{s}"))
                    .join("summary.json");
                json(&p)["recycles_per_hour"].as_f64().unwrap()
            })
            .collect()
    };
    let (a, b) = (per_seed("default"), per_seed("render-2x3-fixed"));
    let diffs: Vec<f64> = a.iter().zip(&b).map(|(x, y)| y - x).collect();
    let mean = diffs.iter().sum::<f64>() / 4.0;
    let var = diffs.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / 3.0;
    let half = 3.182 * (var / 4.0).sqrt();
    let d0 = &figure(&c, "recycles_per_hour")["differences"][0];
    assert_eq!(d0["paired_seeds"], 4);
    assert!((d0["difference"].as_f64().unwrap() - mean).abs() < 1e-9);
    let iv = d0["interval"].as_array().unwrap();
    assert!((iv[0].as_f64().unwrap() - (mean - half)).abs() < 1e-9);
    assert!((iv[1].as_f64().unwrap() - (mean + half)).abs() < 1e-9);
    let base_mean = a.iter().sum::<f64>() / 4.0;
    let rel = d0["relative"].as_f64().unwrap();
    assert!((rel - mean / base_mean).abs() < 1e-9);
    let verb = if mean < 0.0 { "cuts" } else { "raises" };
    let shown = format!("{verb} recycles_per_hour {:.0}% (", rel.abs() * 100.0);
    assert!(line.contains(&shown), "{line} lacks {shown}");
    // Same seeds on both sides: the run directories are the user's runs.
    assert_eq!(
        json(&dir.path().join("default/seed-3/summary.json"))["seed"],
        3
    );
    let html = fs::read_to_string(dir.path().join("report.html")).unwrap();
    check_page(&html, 2);
    check_svgs(dir.path(), &["timeline-0.svg", "timeline-1.svg"]);
    assert!(html.contains("default (seed 1)") && html.contains("render-2x3-fixed (seed 1)"));
    // One time axis: both timelines carry the same x tick labels.
    let ticks = |f: &str| -> Vec<String> {
        let svg = fs::read_to_string(dir.path().join(f)).unwrap();
        svg.split("<text")
            .filter(|t| t.contains("text-anchor=\"middle\""))
            .map(String::from)
            .collect()
    };
    assert_eq!(ticks("timeline-0.svg").len(), ticks("timeline-1.svg").len());
}

#[test]
fn one_seed_each_says_no_interval() {
    let dir = TempDir::new("compare-dirs");
    let a = dir.path().join("a");
    let b = dir.path().join("b");
    ok(&["run", "--hours", "3", "--out", a.to_str().unwrap()]);
    ok(&[
        "run",
        "--hours",
        "3",
        "--set",
        "policy.cooldown_s=300",
        "--out",
        b.to_str().unwrap(),
    ]);
    let out = dir.path().join("cmp");
    let text = ok(&[
        "compare",
        a.to_str().unwrap(),
        b.to_str().unwrap(),
        "--out",
        out.to_str().unwrap(),
    ]);
    assert!(text.contains("one seed each: no interval"), "{text}");
    let c = json(&out.join("compare.json"));
    let d0 = &figure(&c, "recycles_per_hour")["differences"][0];
    assert_eq!(d0["interval"], Value::Null);
    assert_eq!(d0["paired_seeds"], 1);
    // --json prints the same file.
    let printed = ok(&[
        "compare",
        a.to_str().unwrap(),
        b.to_str().unwrap(),
        "--out",
        out.to_str().unwrap(),
        "--json",
    ]);
    assert_eq!(
        printed,
        fs::read_to_string(out.join("compare.json")).unwrap()
    );
    // A side whose events.csv was cut at a line boundary is refused (its
    // page would draw part of the run as the whole), naming the file.
    let events = b.join("events.csv");
    let text = fs::read_to_string(&events).unwrap();
    let keep = text.lines().count() / 2;
    let cut: String = text.lines().take(keep).map(|l| format!("{l}\n")).collect();
    fs::write(&events, cut).unwrap();
    let refused = fleetsim(&[
        "compare",
        a.to_str().unwrap(),
        b.to_str().unwrap(),
        "--out",
        out.to_str().unwrap(),
    ]);
    let err = String::from_utf8_lossy(&refused.stderr);
    assert_eq!(refused.status.code(), Some(2), "{err}");
    assert!(
        err.contains("events.csv") && err.contains("cut short"),
        "{err}"
    );
}

#[test]
fn bad_inputs_exit_2() {
    let dir = TempDir::new("compare-bad");
    let d = dir.path().to_str().unwrap();
    let code = |args: &[&str]| fleetsim(args).status.code();
    assert_eq!(code(&["compare", d]), Some(2), "one input");
    let out = fleetsim(&["compare", d, d, "--out", &format!("{d}/o")]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("not a finished run"));
    assert_eq!(
        code(&["compare", "--seeds", "0", "default", "default"]),
        Some(2)
    );
    assert_eq!(code(&["compare", "--hours", "2", d, d]), Some(2));
    let missing = fleetsim(&[
        "compare",
        "--seeds",
        "1",
        "default",
        "/nonexistent.toml",
        "--out",
        &format!("{d}/o"),
    ]);
    assert_eq!(missing.status.code(), Some(2));
    // A bad --hours is named as the source (as `run` names it), on one
    // `error:` line, before any folder is made or any run starts.
    let o = format!("{d}/hours");
    let bad = fleetsim(&[
        "compare", "--seeds", "1", "--hours", "nan", "default", "default", "--out", &o,
    ]);
    let err = String::from_utf8_lossy(&bad.stderr);
    assert_eq!(bad.status.code(), Some(2), "{err}");
    assert!(
        err.starts_with("error: --hours NaN: <embedded render-2x3>: key `run.duration_h`"),
        "{err}"
    );
    assert!(!Path::new(&o).exists(), "{o} was made before the refusal");
}

/// Runs under --out of another length (another scenario) are refused, and
/// `--force`, which the refusal names, overwrites them.
#[test]
fn force_overwrites_runs_of_another_scenario() {
    let dir = TempDir::new("compare-force");
    let d = dir.path().to_str().unwrap();
    let fixed = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/scenarios/render-2x3-fixed.toml"
    );
    ok(&[
        "compare", "--seeds", "2", "--hours", "2", "default", fixed, "--out", d,
    ]);
    let again = fleetsim(&[
        "compare", "--seeds", "2", "--hours", "3", "default", fixed, "--out", d,
    ]);
    assert_eq!(again.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&again.stderr).contains("--force"));
    ok(&[
        "compare", "--seeds", "2", "--hours", "3", "default", fixed, "--out", d, "--force",
    ]);
    let s = json(&dir.path().join("default/seed-1/summary.json"));
    assert_eq!(s["duration_h"].as_f64(), Some(3.0), "{s}");
}

/// SIGTERM (a pod's stop reaches `compare` alone, not the `fleetsim run`
/// it waits on): exit 130 within a second, the message says what is kept,
/// and the child is stopped with it, never finishing a run afterwards.
#[test]
fn sigterm_stops_compare_and_its_running_seed() {
    let dir = TempDir::new("compare-term");
    let out = dir.path().join("c");
    let mut child = Command::new(env!("CARGO_BIN_EXE_fleetsim"))
        .args([
            "compare", "default", "default", "--seeds", "2", "--hours", "5000",
        ])
        .arg("--out")
        .arg(&out)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    // Wait for the first seed's run to be under way (its staging folder).
    let side = out.join("default");
    let start = std::time::Instant::now();
    while !fs::read_dir(&side).is_ok_and(|mut d| d.next().is_some()) {
        assert!(start.elapsed().as_secs() < 30, "no run started");
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    std::thread::sleep(std::time::Duration::from_millis(500));
    let kill = Command::new("sh")
        .args(["-c", &format!("kill -TERM {}", child.id())])
        .status()
        .unwrap();
    assert!(kill.success());
    let stopped = std::time::Instant::now();
    while child.try_wait().unwrap().is_none() {
        assert!(stopped.elapsed().as_secs() < 20, "compare still running");
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
    let took = stopped.elapsed();
    let o = child.wait_with_output().unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(130), "{err}");
    assert!(took.as_secs_f64() < 1.0, "stopped {took:?} after SIGTERM");
    assert!(
        err.contains("compare interrupted during seed 1 of 2"),
        "{err}"
    );
    // A 5000 h run takes several seconds: a child left running would have
    // written its summary by now.
    std::thread::sleep(std::time::Duration::from_secs(6));
    assert!(
        !side.join("seed-1/summary.json").exists(),
        "the run outlived compare"
    );
    assert!(!side.join("seed-2").exists());
}
