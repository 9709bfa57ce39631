//! Ctrl-C during `fleetsim optimise` (issue 17: it ran 600 s past SIGINT).
//! The running simulations stop at their next stop-flag check, the search
//! records nothing after the flag, and the command exits 130 within a
//! second, keeping its whole evaluations as `trace.partial.csv` (no
//! `trace.csv` or `best.toml`, which would look finished).

mod common;

use common::TempDir;
use std::fs;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// About half a second per simulation on the checked build: the search
/// takes minutes, so only the interruption ends it.
const SLOW: &str = "hours = 1000.0\nreplications = 2\nsampler = \"random\"\nsamples = 10\n\
                    [[param]]\nkey = \"policy.cooldown_s\"\nmin = 30.0\nmax = 300.0\n\
                    [[objective]]\nmetric = \"capacity_loss_fraction\"\n";

#[test]
fn sigint_stops_optimise_within_a_second_and_keeps_whole_evaluations() {
    let dir = TempDir::new("interrupt-optimise");
    let file = dir.path().join("opt.toml");
    fs::write(&file, SLOW).unwrap();
    let out = dir.path().join("out");
    let mut child = Command::new(env!("CARGO_BIN_EXE_fleetsim"))
        .args(["optimise", file.to_str().unwrap(), "--budget", "400"])
        .args(["--out", out.to_str().unwrap()])
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    std::thread::sleep(Duration::from_secs(3));
    assert!(child.try_wait().unwrap().is_none(), "optimise ended early");
    let kill = Command::new("sh")
        .args(["-c", &format!("kill -INT {}", child.id())])
        .status()
        .unwrap();
    assert!(kill.success());
    let start = Instant::now();
    while child.try_wait().unwrap().is_none() {
        if start.elapsed() > Duration::from_secs(20) {
            let _ = child.kill();
            panic!("optimise still running 20 s after SIGINT");
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    let took = start.elapsed();
    let o = child.wait_with_output().unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(130), "{err}");
    assert!(took < Duration::from_secs(2), "stopped after {took:?}");
    assert!(err.contains("trace.partial.csv"), "{err}");
    assert!(!out.join("trace.csv").exists() && !out.join("best.toml").exists());
    let trace = fs::read_to_string(out.join("trace.partial.csv")).unwrap();
    let mut lines = trace.lines();
    assert_eq!(
        lines.next(),
        Some("evaluation,phase,policy.cooldown_s,cost")
    );
    for (i, line) in lines.enumerate() {
        let cells: Vec<&str> = line.split(',').collect();
        assert_eq!(cells[0], i.to_string(), "whole evaluations, in order");
        let cost: f64 = cells[3].parse().unwrap();
        // A cut-short simulation would cost the infeasible penalty.
        assert!(cost < 1.0, "{line}: an evaluation the stop cut short");
    }
}
