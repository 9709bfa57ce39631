//! Ctrl-C during `fleetsim optimise` (issue 17: it ran 600 s past SIGINT).
//! The running simulations stop at their next stop-flag check, the search
//! records nothing after the flag, and the command exits 130 within a
//! second, keeping its whole evaluations as `trace.partial.csv` (no
//! `trace.csv` or `best.toml`, which would look finished), written as
//! they complete, so a `kill -9` keeps them too; `--resume` continues the
//! search byte-identically to one never interrupted.

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
    signal(&child, "INT");
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
    assert!(err.contains("--resume"), "says how to resume: {err}");
    assert!(!out.join("trace.csv").exists() && !out.join("best.toml").exists());
    let trace = fs::read_to_string(out.join("trace.partial.csv")).unwrap();
    let mut lines = trace.lines();
    assert_eq!(
        lines.next(),
        Some("evaluation,phase,policy.cooldown_s,cost,search_x:policy.cooldown_s")
    );
    for (i, line) in lines.enumerate() {
        let cells: Vec<&str> = line.split(',').collect();
        assert_eq!(cells[0], i.to_string(), "whole evaluations, in order");
        let cost: f64 = cells[3].parse().unwrap();
        // A cut-short simulation would cost the infeasible penalty.
        assert!(cost < 1.0, "{line}: an evaluation the stop cut short");
    }
}

fn signal(child: &std::process::Child, sig: &str) {
    let kill = Command::new("sh")
        .args(["-c", &format!("kill -{sig} {}", child.id())])
        .status()
        .unwrap();
    assert!(kill.success());
}

/// A search of a few seconds: 24 evaluations of 2 simulations of 40 h.
const SHORT: &str = "hours = 40.0\nreplications = 2\nsampler = \"random\"\nsamples = 10\n\
                     [[param]]\nkey = \"policy.cooldown_s\"\nmin = 30.0\nmax = 300.0\n\
                     [[param]]\nkey = \"policy.tick_s\"\nmin = 5.0\nmax = 60.0\n\
                     [[objective]]\nmetric = \"capacity_loss_fraction\"\n";

fn optimise(file: &std::path::Path, out: &std::path::Path, resume: bool) -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_fleetsim"));
    c.args([
        "optimise",
        file.to_str().unwrap(),
        "--budget",
        "24",
        "--fresh",
        "4",
    ])
    .args(["--out", out.to_str().unwrap(), "--quiet"]);
    if resume {
        c.arg("--resume");
    }
    c
}

/// Starts a search into `out` and stops it with `sig` once its partial
/// trace holds at least `rows` evaluations.
fn start_and_stop(
    file: &std::path::Path,
    out: &std::path::Path,
    resume: bool,
    rows: usize,
    sig: &str,
) {
    let mut child = optimise(file, out, resume)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let start = Instant::now();
    loop {
        let n = fs::read_to_string(out.join("trace.partial.csv"))
            .map_or(0, |t| t.lines().count().saturating_sub(1));
        if n >= rows {
            break;
        }
        if let Some(status) = child.try_wait().unwrap() {
            panic!("optimise ended ({status}) before {rows} evaluations");
        }
        assert!(start.elapsed() < Duration::from_secs(120), "no progress");
        std::thread::sleep(Duration::from_millis(20));
    }
    signal(&child, sig);
    let status = child.wait().unwrap();
    if sig == "INT" || sig == "TERM" {
        assert_eq!(status.code(), Some(130), "{sig}");
    }
    assert!(!out.join("trace.csv").exists() && !out.join("best.toml").exists());
}

#[test]
fn a_killed_and_interrupted_search_resumes_byte_identically() {
    let dir = TempDir::new("resume-optimise");
    let file = dir.path().join("opt.toml");
    fs::write(&file, SHORT).unwrap();
    let whole = dir.path().join("whole");
    let o = optimise(&file, &whole, false).output().unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    assert!(
        !whole.join("trace.partial.csv").exists(),
        "removed when complete"
    );

    // kill -9 after 4 evaluations, resume; SIGTERM after 10, resume; finish.
    let cut = dir.path().join("cut");
    start_and_stop(&file, &cut, false, 4, "KILL");
    start_and_stop(&file, &cut, true, 10, "TERM");
    let o = optimise(&file, &cut, true).output().unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(o.status.success(), "{err}");
    assert!(err.contains("resumed after"), "{err}");
    for f in ["trace.csv", "best.toml"] {
        assert_eq!(
            fs::read(whole.join(f)).unwrap(),
            fs::read(cut.join(f)).unwrap(),
            "{f} differs from the uninterrupted search's"
        );
    }
    assert!(!cut.join("trace.partial.csv").exists());
}

#[test]
fn resume_refuses_other_settings_and_an_empty_directory() {
    let dir = TempDir::new("resume-optimise-refused");
    let file = dir.path().join("opt.toml");
    fs::write(&file, SHORT).unwrap();
    let out = dir.path().join("out");
    let o = optimise(&file, &out, true).output().unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(err.contains("nothing to resume"), "{err}");
    start_and_stop(&file, &out, false, 2, "INT");
    let o = Command::new(env!("CARGO_BIN_EXE_fleetsim"))
        .args([
            "optimise",
            file.to_str().unwrap(),
            "--budget",
            "30",
            "--fresh",
            "4",
        ])
        .args(["--out", out.to_str().unwrap(), "--resume"])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(
        err.contains("search.toml") && err.contains("--budget 24"),
        "{err}"
    );
    // A sweep file edited since: refused before any simulation.
    fs::write(&file, SHORT.replace("max = 300.0", "max = 400.0")).unwrap();
    let o = optimise(&file, &out, true).output().unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(err.contains("sweep file changed"), "{err}");
}

/// `trace.partial.csv` is appended in place: a link planted there (to the
/// stopped search's own rows, moved away) is refused by `--resume`, exit
/// 2, and its target keeps its bytes.
#[test]
fn resume_refuses_a_link_planted_as_the_journal() {
    let dir = TempDir::new("optimise-link");
    let file = dir.path().join("short.toml");
    fs::write(&file, SHORT).unwrap();
    let out = dir.path().join("out");
    start_and_stop(&file, &out, false, 4, "KILL");
    let journal = out.join("trace.partial.csv");
    let victim = dir.path().join("victim.csv");
    fs::rename(&journal, &victim).unwrap();
    let before = fs::read(&victim).unwrap();
    std::os::unix::fs::symlink(&victim, &journal).unwrap();
    let o = optimise(&file, &out, true).output().unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(err.contains("trace.partial.csv: a symbolic link"), "{err}");
    assert_eq!(
        fs::read(&victim).unwrap(),
        before,
        "written through the link"
    );
}
