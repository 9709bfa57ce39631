//! `fleetsim report` on output directories whose values are the extremes
//! a float holds (issue 17): +-1e308, f64::MAX, inf, -inf and NaN planted in
//! every numeric cell of a third of the rows of each CSV, and +-1e308 in
//! the JSON files' floats. The report finishes in seconds (plotters' tick
//! search never ended on an infinite axis, and its pixel map overflowed on
//! a value far off the axis), never panics, and keeps its charts small.

mod common;

use common::TempDir;
use std::fs;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

const EXTREMES: [&str; 6] = [
    "1e308",
    "-1e308",
    "inf",
    "-inf",
    "NaN",
    "1.7976931348623157e308",
];

fn fleetsim_ok(args: &[&str]) {
    let out = Command::new(env!("CARGO_BIN_EXE_fleetsim"))
        .args(args)
        .output()
        .expect("the binary runs");
    assert!(
        out.status.success(),
        "fleetsim {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// Every numeric cell of every third data row becomes an extreme.
fn plant_csv(text: &str) -> String {
    let mut out = String::new();
    for (i, line) in text.lines().enumerate() {
        if i == 0 || i % 3 != 1 {
            out.push_str(line);
        } else {
            let cells: Vec<&str> = line
                .split(',')
                .enumerate()
                .map(|(j, c)| {
                    if c.parse::<f64>().is_ok() {
                        EXTREMES[(i + j) % EXTREMES.len()]
                    } else {
                        c
                    }
                })
                .collect();
            out.push_str(&cells.join(","));
        }
        out.push('\n');
    }
    out
}

/// Every float in a JSON value becomes +-1e308 (integers stay counts).
fn plant_json(v: &mut serde_json::Value, k: &mut usize) {
    match v {
        serde_json::Value::Number(n) if n.is_f64() => {
            *k += 1;
            let x = if k.is_multiple_of(2) { 1e308 } else { -1e308 };
            *v = serde_json::json!(x);
        }
        serde_json::Value::Array(a) => a.iter_mut().for_each(|x| plant_json(x, k)),
        serde_json::Value::Object(o) => o.values_mut().for_each(|x| plant_json(x, k)),
        _ => {}
    }
}

fn plant(dir: &Path) {
    for entry in fs::read_dir(dir).unwrap() {
        let p = entry.unwrap().path();
        let name = p.file_name().unwrap().to_string_lossy().into_owned();
        if name.ends_with(".csv") {
            let text = fs::read_to_string(&p).unwrap();
            fs::write(&p, plant_csv(&text)).unwrap();
        } else if name.ends_with(".json") {
            let mut v: serde_json::Value =
                serde_json::from_str(&fs::read_to_string(&p).unwrap()).unwrap();
            plant_json(&mut v, &mut 0);
            fs::write(&p, serde_json::to_string(&v).unwrap()).unwrap();
        }
    }
}

/// Reports `dir` within 20 s: exit 0, no panic, every chart under 2 MB.
fn report_in_time(dir: &Path) {
    let mut child = Command::new(env!("CARGO_BIN_EXE_fleetsim"))
        .args(["report", dir.to_str().unwrap()])
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("the binary runs");
    let start = Instant::now();
    while child.try_wait().unwrap().is_none() {
        if start.elapsed() > Duration::from_secs(20) {
            let _ = child.kill();
            panic!("{}: report still running after 20 s", dir.display());
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    let out = child.wait_with_output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!err.contains("panicked"), "{}: {err}", dir.display());
    assert!(out.status.success(), "{}: {err}", dir.display());
    assert!(dir.join("report.html").exists());
    for entry in fs::read_dir(dir).unwrap() {
        let p = entry.unwrap().path();
        if p.extension().is_some_and(|e| e == "svg") {
            let len = fs::metadata(&p).unwrap().len();
            assert!(len < 2 << 20, "{}: {len} bytes", p.display());
        }
    }
}

#[test]
fn a_run_of_extreme_values_reports_in_time() {
    let dir = TempDir::new("extreme-run");
    let d = dir.path().to_str().unwrap();
    fleetsim_ok(&["run", "--hours", "1", "--out", d]);
    plant(dir.path());
    report_in_time(dir.path());
}

#[test]
fn a_replay_of_extreme_values_reports_in_time() {
    let dir = TempDir::new("extreme-replay");
    let run = dir.path().join("run");
    let rep = dir.path().join("replay");
    fleetsim_ok(&["run", "--hours", "1", "--out", run.to_str().unwrap()]);
    let events = run.join("events.csv");
    fleetsim_ok(&[
        "replay",
        events.to_str().unwrap(),
        "--out",
        rep.to_str().unwrap(),
    ]);
    plant(&rep);
    report_in_time(&rep);
}

#[test]
fn a_sweep_of_extreme_values_reports_in_time() {
    let dir = TempDir::new("extreme-sweep");
    let sweep = dir.path().join("s.toml");
    fs::write(
        &sweep,
        "hours = 0.05\nreplications = 2\n[[param]]\nkey = \"policy.cooldown_s\"\n\
         values = [60.0, 120.0, 240.0]\n[[objective]]\nmetric = \"oom_kills\"\n\
         [[objective]]\nmetric = \"capacity_loss_fraction\"\n",
    )
    .unwrap();
    let out = dir.path().join("out");
    fleetsim_ok(&[
        "sweep",
        sweep.to_str().unwrap(),
        "--out",
        out.to_str().unwrap(),
    ]);
    plant(&out);
    report_in_time(&out);
}
