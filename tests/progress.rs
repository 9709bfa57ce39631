//! Progress when stderr is a file (a pod's log, CI): plain `progress:` lines
//! every `FLEETSIM_PROGRESS_EVERY_S`, a last `done` line, nothing on stdout,
//! and nothing at all with `--quiet`.

mod common;

use common::TempDir;
use std::fs;
use std::path::Path;
use std::process::Command;

/// Runs fleetsim with stderr redirected to a file; returns (stdout, stderr).
fn with_stderr_file(dir: &Path, every_s: &str, args: &[&str]) -> (String, String) {
    let err_path = dir.join("stderr.txt");
    let out = Command::new(env!("CARGO_BIN_EXE_fleetsim"))
        .args(args)
        .env("FLEETSIM_PROGRESS_EVERY_S", every_s)
        .stderr(fs::File::create(&err_path).unwrap())
        .output()
        .expect("runs");
    let err = fs::read_to_string(&err_path).unwrap();
    assert!(out.status.success(), "{err}");
    (String::from_utf8(out.stdout).unwrap(), err)
}

/// The positions of the `progress: LABEL: ` lines, in order.
fn positions(stderr: &str, label: &str) -> Vec<(u64, u64)> {
    let prefix = format!("progress: {label}: ");
    stderr
        .lines()
        .filter_map(|l| l.strip_prefix(&prefix))
        .map(|rest| {
            let rest = rest.strip_prefix("done, ").unwrap_or(rest);
            let (pos, rest) = rest.split_once('/').expect("pos/len");
            let len = rest.split(' ').next().unwrap();
            (pos.parse().unwrap(), len.parse().unwrap())
        })
        .collect()
}

const SWEEP: &str = r#"
seed = 5
replications = 8
hours = 48.0
sampler = "grid"

[[param]]
key = "policy.cooldown_s"
values = [30.0, 60.0, 120.0, 240.0]

[[objective]]
metric = "capacity_loss_fraction"
"#;

#[test]
fn a_sweep_with_stderr_in_a_file_prints_progress_lines() {
    let tmp = TempDir::new("progress-sweep");
    let file = tmp.path().join("s.toml");
    fs::write(&file, SWEEP).unwrap();
    let out = tmp.path().join("out");
    let (f, o) = (file.to_str().unwrap(), out.to_str().unwrap());
    let (stdout, stderr) = with_stderr_file(
        tmp.path(),
        "0.1",
        &["sweep", f, "--out", o, "--threads", "1"],
    );
    let p = positions(&stderr, "sweep");
    assert!(p.len() >= 2, "a line on the way and the last: {stderr}");
    assert!(p.windows(2).all(|w| w[0].0 <= w[1].0), "{p:?}");
    assert_eq!(*p.last().unwrap(), (40, 40), "{stderr}");
    assert!(
        stderr.contains("progress: sweep: done, 40/40 trials (100%)"),
        "{stderr}"
    );
    assert!(!stdout.contains("progress:"), "progress stays off stdout");

    // --quiet: no progress at all, the results as before.
    fs::remove_dir_all(&out).unwrap();
    let (quiet_out, quiet_err) = with_stderr_file(
        tmp.path(),
        "0.1",
        &["--quiet", "sweep", f, "--out", o, "--threads", "1"],
    );
    assert!(!quiet_err.contains("progress:"), "{quiet_err}");
    assert_eq!(quiet_out, stdout);
}

/// A 6 h run of the 10,000-worker aggregate-mode fleet: the event loop's
/// periodic check publishes the simulated clock, and the lines follow it.
#[test]
fn a_large_fleet_run_shows_its_simulated_clock() {
    let tmp = TempDir::new("progress-run");
    let scenario = Path::new(env!("CARGO_MANIFEST_DIR")).join("scenarios/large-fleet.toml");
    let out = tmp.path().join("run");
    let (stdout, stderr) = with_stderr_file(
        tmp.path(),
        "0.5",
        &[
            "run",
            scenario.to_str().unwrap(),
            "--hours",
            "6",
            "--out",
            out.to_str().unwrap(),
        ],
    );
    let p = positions(&stderr, "run large-fleet seed 1");
    assert!(p.iter().all(|&(_, len)| len == 6 * 3600), "{stderr}");
    let between: Vec<u64> = p
        .iter()
        .map(|&(pos, _)| pos)
        .filter(|&pos| pos > 0 && pos < 6 * 3600)
        .collect();
    assert!(
        between.len() >= 2,
        "at least two lines part-way through the simulated 6 h: {stderr}"
    );
    assert!(between.windows(2).all(|w| w[0] <= w[1]), "{between:?}");
    assert!(
        stderr.contains("done, 21600/21600 simulated s (100%)"),
        "{stderr}"
    );
    assert!(stdout.contains("reproduce with:"));
}

/// saturate counts its simulations (1 saturated + 16 churn probes per seed).
#[test]
fn saturate_counts_its_simulations() {
    let tmp = TempDir::new("progress-saturate");
    let out = tmp.path().join("sat");
    let (_, stderr) = with_stderr_file(
        tmp.path(),
        "0.1",
        &[
            "saturate",
            "--seeds",
            "2",
            // Long enough (~0.4 s in release) to outlast the 0.1 s interval:
            // quicker work prints no "done" line, by design.
            "--hours",
            "24",
            "--out",
            out.to_str().unwrap(),
        ],
    );
    assert!(
        stderr.contains("progress: saturate: done, 34/34 simulations (100%)"),
        "{stderr}"
    );
}

/// A calibration announces the most windows it may simulate and stops
/// short of it: its last line counts what it ran (it printed the bound).
#[test]
fn a_calibrations_last_line_counts_the_windows_it_ran() {
    let tmp = TempDir::new("progress-calibrate");
    let recording =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("scenarios/recordings/generated-24h.csv");
    let out = tmp.path().join("cal");
    let (_, stderr) = with_stderr_file(
        tmp.path(),
        "0.5",
        &[
            "replay",
            recording.to_str().unwrap(),
            "--calibrate",
            "--seeds",
            "4",
            "--out",
            out.to_str().unwrap(),
        ],
    );
    let p = positions(&stderr, "calibrate");
    let announced = p.first().map(|&(_, len)| len).expect("a progress line");
    let done = stderr
        .lines()
        .find(|l| l.starts_with("progress: calibrate: done, "))
        .unwrap_or_else(|| panic!("{stderr}"));
    let &(ran, len) = p.last().unwrap();
    assert_eq!(ran, len, "{done}");
    assert!(ran < announced, "{done} against {announced} announced");
}
