//! Ctrl-C during `fleetsim run`: the event loop stops at the next check of
//! the stop flag, no `summary.json` is written, the rows so far are kept
//! under names that say partial, and the message says how to restart.

mod common;

use common::{TempDir, scenario};
use fleetsim::metrics::NullObserver;
use fleetsim::{Sim, SimError};
use std::process::{Command, Stdio};
use std::sync::atomic::AtomicBool;
use std::time::{Duration, Instant};

/// Exit code of an interrupted run or sweep (src/cli/mod.rs `EXIT_INTERRUPTED`).
const EXIT_INTERRUPTED: i32 = 130;

#[test]
fn a_raised_stop_flag_ends_the_run_with_interrupted() {
    let sc = scenario(&[]);
    let stop = AtomicBool::new(true);
    let r = Sim::new(&sc, 1, NullObserver)
        .with_stop_flag(&stop)
        .with_invariant_checks()
        .run();
    match r {
        Err(SimError::Interrupted { events, .. }) => {
            assert_eq!(events, fleetsim::sim::STOP_CHECK_EVERY)
        }
        Err(e) => panic!("expected an interruption, got {e}"),
        Ok(_) => panic!("a raised flag did not stop the run"),
    }
    // A flag that stays down changes nothing: same summary as without one.
    let down = AtomicBool::new(false);
    let with = Sim::new(&sc, 1, NullObserver)
        .with_stop_flag(&down)
        .run()
        .unwrap()
        .summary;
    assert_eq!(with, fleetsim::run_summary(&sc, 1).unwrap());
}

/// A run of ~10^9 events (minutes even in release), with no leak so its
/// events.csv stays small: it can only end by the interruption.
const LONG: &[&str] = &[
    "run",
    "--hours",
    "400",
    "--set",
    "workload.profile=constant",
    "--set",
    "workload.rps=500",
    "--set",
    "workload.service=constant",
    "--set",
    "workload.service_mean_ms=1",
    "--set",
    "fleet.leak.mean_mb_per_request=0",
    "--set",
    "fleet.leak.warmup_mb=0",
    "--set",
    "fleet.leak.step_probability=0",
    "--seed",
    "7",
];

#[test]
fn sigint_stops_a_run_keeps_partial_rows_and_writes_no_summary() {
    let dir = TempDir::new("interrupt");
    let out = dir.path().join("out");
    // A summary from an earlier complete run in the same directory must go.
    std::fs::create_dir_all(&out).unwrap();
    std::fs::write(out.join("summary.json"), "{}").unwrap();
    std::fs::write(out.join("events.csv"), "ts,event\n").unwrap();
    let mut child = Command::new(env!("CARGO_BIN_EXE_fleetsim"))
        .args(LONG)
        .arg("--out")
        .arg(&out)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn fleetsim");
    // The partial file appears once the handler is in place and the loop runs.
    let start = Instant::now();
    while !out.join(".events.csv.partial").exists() {
        assert!(
            start.elapsed() < Duration::from_secs(30),
            "the run never started"
        );
        assert!(child.try_wait().unwrap().is_none(), "the run ended early");
        std::thread::sleep(Duration::from_millis(10));
    }
    std::thread::sleep(Duration::from_millis(300));
    // The shell's builtin `kill`: no dependency on a kill binary.
    let kill = Command::new("sh")
        .args(["-c", &format!("kill -INT {}", child.id())])
        .status()
        .expect("run sh -c kill");
    assert!(kill.success());
    let start = Instant::now();
    while child.try_wait().unwrap().is_none() {
        if start.elapsed() > Duration::from_secs(20) {
            let _ = child.kill();
            panic!("fleetsim still running 20 s after SIGINT");
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    let o = child.wait_with_output().unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(EXIT_INTERRUPTED), "stderr: {err}");
    assert!(err.contains("interrupted at simulated t ="), "{err}");
    assert!(err.contains("events.partial.csv"), "{err}");
    assert!(err.contains("no summary.json"), "{err}");
    assert!(err.contains("--seed 7"), "{err}");
    assert!(!err.contains("panicked"), "{err}");
    let names: Vec<String> = std::fs::read_dir(&out)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    let mut sorted = names.clone();
    sorted.sort();
    assert_eq!(
        sorted,
        [
            "events.partial.csv",
            "timeline.partial.csv",
            "workers.partial.csv"
        ],
        "what the interrupted run left"
    );
    let events = std::fs::read_to_string(out.join("events.partial.csv")).unwrap();
    assert!(events.starts_with("ts,"), "the header is kept: {events}");
    let timeline = std::fs::read_to_string(out.join("timeline.partial.csv")).unwrap();
    assert!(
        timeline.lines().count() > 2,
        "the rows so far are kept: {} lines",
        timeline.lines().count()
    );
}
