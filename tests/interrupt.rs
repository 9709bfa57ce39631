//! Ctrl-C during `fleetsim run` and `fleetsim sweep`. A run stops at the
//! next check of the stop flag, writes no `summary.json` and keeps its rows
//! under names that say partial; a sweep keeps whole rows of trials.csv and
//! no results, and `--resume` then ends with the bytes of an unstopped sweep.

mod common;

use common::{TempDir, scenario};
use fleetsim::metrics::NullObserver;
use fleetsim::{Sim, SimError};
use std::process::{Child, Command, Output, Stdio};
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

/// Sends SIGINT to `child` and waits (at most 20 s) for it to exit.
fn sigint_and_wait(child: Child) -> Output {
    signal_and_wait(child, "INT")
}

/// Sends `signal` (`INT`, `TERM`) to `child` and waits (at most 20 s).
fn signal_and_wait(mut child: Child, signal: &str) -> Output {
    // The shell's builtin `kill`: no dependency on a kill binary.
    let kill = Command::new("sh")
        .args(["-c", &format!("kill -{signal} {}", child.id())])
        .status()
        .expect("run sh -c kill");
    assert!(kill.success());
    let start = Instant::now();
    while child.try_wait().unwrap().is_none() {
        if start.elapsed() > Duration::from_secs(20) {
            let _ = child.kill();
            panic!("fleetsim still running 20 s after SIG{signal}");
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    child.wait_with_output().unwrap()
}

/// Whether the run into `out` has started writing: its hidden staging
/// directory beside `out` (`.out.run.*`) holds a temporary `events.csv`.
fn run_started(out: &std::path::Path) -> bool {
    let name = out.file_name().unwrap().to_string_lossy().into_owned();
    std::fs::read_dir(out.parent().unwrap()).is_ok_and(|d| {
        d.filter_map(Result::ok).any(|e| {
            e.file_name()
                .to_string_lossy()
                .starts_with(&format!(".{name}.run."))
                && has_file_starting(&e.path(), ".events.csv.partial.")
        })
    })
}

/// Whether `dir` holds a file whose name starts with `prefix`.
fn has_file_starting(dir: &std::path::Path, prefix: &str) -> bool {
    std::fs::read_dir(dir).is_ok_and(|d| {
        d.filter_map(Result::ok)
            .any(|e| e.file_name().to_string_lossy().starts_with(prefix))
    })
}

#[test]
fn sigint_stops_a_run_keeps_partial_rows_and_writes_no_summary() {
    interrupted_run_keeps_partial_rows("INT");
}

#[test]
fn sigterm_stops_a_run_like_sigint() {
    // A pod's stop, a Slurm job's cancel: the same clean stop as Ctrl-C.
    interrupted_run_keeps_partial_rows("TERM");
}

fn interrupted_run_keeps_partial_rows(signal: &str) {
    let dir = TempDir::new("interrupt");
    let out = dir.path().join("out");
    // An earlier unfinished run's files in the same directory must go
    // (a summary without scenario.toml is no complete run).
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
    while !run_started(&out) {
        assert!(
            start.elapsed() < Duration::from_secs(30),
            "the run never started"
        );
        assert!(child.try_wait().unwrap().is_none(), "the run ended early");
        std::thread::sleep(Duration::from_millis(10));
    }
    std::thread::sleep(Duration::from_millis(300));
    let o = signal_and_wait(child, signal);
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

/// 600 trials of the embedded default (149 configurations + the base, 4
/// replications): seconds, long enough to be stopped in the middle.
const SWEEP: &str = r#"
seed = 3
replications = 4
sampler = "sobol"
samples = 149

[[param]]
key = "policy.cooldown_s"
min = 30.0
max = 600.0

[[param]]
key = "policy.tick_s"
min = 5.0
max = 60.0

[[objective]]
metric = "capacity_loss_fraction"
"#;

/// Runs `fleetsim sweep` to its end; panics unless it succeeds.
fn sweep_to_end(sweep: &std::path::Path, out: &std::path::Path, resume: bool) {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_fleetsim"));
    cmd.arg("sweep").arg(sweep).arg("--out").arg(out);
    if resume {
        cmd.arg("--resume");
    }
    let o = cmd.output().expect("run fleetsim sweep");
    assert!(
        o.status.success(),
        "sweep failed: {}",
        String::from_utf8_lossy(&o.stderr)
    );
}

fn names_in(dir: &std::path::Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    names
}

/// A sweep of trials far longer than a second: SIGTERM stops the running
/// simulations (within 4,096 events), not after them, and a trial cut
/// short is no row (a resume runs it whole).
#[test]
fn sigterm_stops_a_sweep_of_long_trials_within_a_second() {
    let dir = TempDir::new("interrupt-long-sweep");
    let sweep = dir.path().join("long.toml");
    // About 25 s a trial on the checked build.
    std::fs::write(
        &sweep,
        "hours = 20000.0\n[[param]]\nkey = \"policy.cooldown_s\"\nvalues = [60.0, 120.0]\n\
         [[objective]]\nmetric = \"oom_kills\"\n",
    )
    .unwrap();
    let out = dir.path().join("out");
    let child = Command::new(env!("CARGO_BIN_EXE_fleetsim"))
        .args([
            "sweep",
            sweep.to_str().unwrap(),
            "--threads",
            "2",
            "--quiet",
        ])
        .arg("--out")
        .arg(&out)
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn fleetsim sweep");
    std::thread::sleep(Duration::from_secs(2));
    let start = Instant::now();
    let o = signal_and_wait(child, "TERM");
    let took = start.elapsed();
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(EXIT_INTERRUPTED), "stderr: {err}");
    assert!(
        took < Duration::from_secs(2),
        "stopped {took:?} after SIGTERM"
    );
    assert!(err.contains("--resume"), "{err}");
    let trials = std::fs::read_to_string(out.join("trials.csv")).unwrap();
    assert_eq!(
        trials.lines().count(),
        1,
        "a cut-short trial was written: {trials}"
    );
}

#[test]
fn sigint_stops_a_sweep_with_whole_rows_and_resume_finishes_it_identically() {
    let dir = TempDir::new("interrupt-sweep");
    let sweep = dir.path().join("cut.toml");
    std::fs::write(&sweep, SWEEP).unwrap();
    let stopped = dir.path().join("stopped");
    let mut child = Command::new(env!("CARGO_BIN_EXE_fleetsim"))
        .arg("sweep")
        .arg(&sweep)
        .arg("--out")
        .arg(&stopped)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn fleetsim sweep");
    // Stop it once some rows are written, well before the end.
    let trials = stopped.join("trials.csv");
    let start = Instant::now();
    while std::fs::read_to_string(&trials).map_or(0, |s| s.lines().count()) < 20 {
        assert!(
            start.elapsed() < Duration::from_secs(60),
            "the sweep wrote no rows"
        );
        assert!(child.try_wait().unwrap().is_none(), "the sweep ended early");
        std::thread::sleep(Duration::from_millis(5));
    }
    let o = sigint_and_wait(child);
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(EXIT_INTERRUPTED), "stderr: {err}");
    assert!(err.contains("interrupted: finished trials are in"), "{err}");
    assert!(err.contains("--resume"), "{err}");
    assert!(!err.contains("panicked"), "{err}");
    // Nothing that looks like a finished sweep: no results, no front.
    assert_eq!(
        names_in(&stopped),
        ["base.toml", "model.toml", "sweep.toml", "trials.csv"],
        "what the interrupted sweep left"
    );
    // Whole rows only, fewer than all of them.
    let text = std::fs::read_to_string(&trials).unwrap();
    assert!(text.ends_with('\n'), "a cut row: {:?}", text.lines().last());
    let mut lines = text.lines();
    let fields = lines.next().unwrap().split(',').count();
    let rows: Vec<&str> = lines.collect();
    assert!(rows.iter().all(|r| r.split(',').count() == fields));
    assert!(
        rows.len() >= 19 && rows.len() < 600,
        "{} rows after the stop",
        rows.len()
    );

    // Resumed, it ends with the bytes of a sweep never stopped.
    sweep_to_end(&sweep, &stopped, true);
    let whole = dir.path().join("whole");
    sweep_to_end(&sweep, &whole, false);
    assert_eq!(names_in(&stopped), names_in(&whole));
    for name in names_in(&whole) {
        let a = std::fs::read(stopped.join(&name)).unwrap();
        let b = std::fs::read(whole.join(&name)).unwrap();
        assert!(a == b, "{name} differs after stop and resume");
    }
    assert_eq!(
        std::fs::read_to_string(whole.join("trials.csv"))
            .unwrap()
            .lines()
            .count(),
        601
    );
}

#[test]
fn sigterm_stops_saturate_at_once_and_says_nothing_partial_was_written() {
    let dir = TempDir::new("interrupt-saturate");
    let out = dir.path().join("sat");
    let child = Command::new(env!("CARGO_BIN_EXE_fleetsim"))
        .args(["saturate", "--seeds", "400", "--out"])
        .arg(&out)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn fleetsim");
    // The handler is installed first thing; give the work time to start.
    std::thread::sleep(Duration::from_millis(700));
    let start = Instant::now();
    let o = signal_and_wait(child, "TERM");
    assert!(
        start.elapsed() < Duration::from_secs(2),
        "{:?}",
        start.elapsed()
    );
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(EXIT_INTERRUPTED), "stderr: {err}");
    assert!(err.contains("fleetsim saturate: interrupted"), "{err}");
    assert!(
        !has_file_starting(&out, "saturate.json"),
        "a complete-looking output"
    );
    assert!(
        !has_file_starting(&out, ".saturate.json.partial"),
        "or a partial one"
    );
}
