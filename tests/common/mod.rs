//! Shared helpers for the integration tests: scenarios are the embedded
//! default plus `--set`-style overrides, and every run checks every
//! invariant after every event (data-driven, in the style of
//! rust-analyzer's `check(input, expected)`).
//!
//! Each test crate compiles this module on its own and uses a different
//! part of it, hence the `dead_code` allowance.
#![allow(dead_code)]

pub mod aggval;
pub mod calibrate;
pub mod page;
pub mod replay;

use fleetsim::metrics::{EventKind, EventRow, LeaseOutcome, Observer, Summary, TimelineRow};
use fleetsim::scenario::{self, DEFAULT_SCENARIO, Override, ScenarioError, parse_override};
use fleetsim::{Scenario, Sim};
use std::path::PathBuf;
use std::sync::atomic::{AtomicU32, Ordering};

/// Scenarios in tests never read side files.
fn no_files(path: &str) -> Result<String, String> {
    Err(format!("tests read no files ({path})"))
}

/// The embedded default with `sets` applied (`"policy.cooldown_s=60"`),
/// or the loader's error.
pub fn try_scenario(sets: &[&str]) -> Result<Scenario, ScenarioError> {
    let overrides: Vec<Override> = sets
        .iter()
        .map(|s| parse_override(s).unwrap_or_else(|e| panic!("bad override in a test: {e}")))
        .collect();
    scenario::load(DEFAULT_SCENARIO, "<test>", &overrides, &mut no_files).map(|(_, sc)| sc)
}

/// The embedded default with `sets` applied; panics on an invalid scenario.
pub fn scenario(sets: &[&str]) -> Scenario {
    try_scenario(sets).unwrap_or_else(|e| panic!("invalid test scenario {sets:?}: {e}"))
}

/// Runs `sc` with every invariant checked after every event.
pub fn run_checked<O: Observer>(sc: &Scenario, seed: u64, obs: O) -> Summary {
    Sim::new(sc, seed, obs)
        .with_invariant_checks()
        .run()
        .unwrap_or_else(|e| panic!("run failed (seed {seed}): {e}"))
        .summary
}

/// The default plus `sets`, run with invariant checks on every event.
pub fn check(sets: &[&str], seed: u64) -> Summary {
    run_checked(&scenario(sets), seed, fleetsim::metrics::NullObserver)
}

/// Like `check`, with an observer that sees every row.
pub fn check_with<O: Observer>(sets: &[&str], seed: u64, obs: O) -> Summary {
    run_checked(&scenario(sets), seed, obs)
}

/// One `worker_recycled` row, reduced to what the seeds' analyses use.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Recycle {
    pub t_s: f64,
    pub instance: u32,
    pub lease: LeaseOutcome,
    pub pressure: bool,
    pub rss_mb: f64,
    pub last_recycle_age_s: Option<f64>,
}

/// Collects recycle rows (and counts every event kind) as they happen.
#[derive(Default)]
pub struct Recorder {
    pub recycles: Vec<Recycle>,
    pub events: Vec<(EventKind, u64)>,
    /// Backlog snapshots, one per timeline row.
    pub backlog_sum: u64,
    pub timeline_rows: u64,
}

impl Recorder {
    pub fn count(&self, kind: EventKind) -> u64 {
        self.events
            .iter()
            .find(|(k, _)| *k == kind)
            .map_or(0, |(_, n)| *n)
    }
}

impl Observer for Recorder {
    fn event(&mut self, row: &EventRow) {
        match self.events.iter_mut().find(|(k, _)| *k == row.kind) {
            Some((_, n)) => *n += 1,
            None => self.events.push((row.kind, 1)),
        }
        if row.kind == EventKind::WorkerRecycled {
            let d = row
                .decision
                .as_ref()
                .expect("a recycle row carries its decision");
            let w = row.worker.as_ref().expect("a recycle row names its worker");
            self.recycles.push(Recycle {
                t_s: row.t.as_secs_f64(),
                instance: row.instance,
                lease: d.lease,
                pressure: d.pressure,
                rss_mb: w.rss_mb,
                last_recycle_age_s: d.last_recycle_age_s,
            });
        }
    }

    fn timeline(&mut self, row: &TimelineRow) {
        self.backlog_sum += row.backlog;
        self.timeline_rows += 1;
    }
}

/// A fresh, empty directory under the system temp dir, removed on drop.
pub struct TempDir(pub PathBuf);

impl TempDir {
    pub fn new(tag: &str) -> TempDir {
        static NEXT: AtomicU32 = AtomicU32::new(0);
        let n = NEXT.fetch_add(1, Ordering::Relaxed);
        let dir =
            std::env::temp_dir().join(format!("fleetsim-test-{tag}-{}-{n}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).expect("create a temp dir");
        TempDir(dir)
    }

    pub fn path(&self) -> &std::path::Path {
        &self.0
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// Erlang C: the probability that an arrival waits in an M/M/c queue with
/// offered load `a = lambda / mu` (in erlangs, `a < c`). Computed through the
/// numerically stable Erlang B recursion `B(k) = a B(k-1) / (k + a B(k-1))`.
pub fn erlang_c(c: u32, a: f64) -> f64 {
    assert!(a < c as f64, "unstable queue");
    let mut b = 1.0;
    for k in 1..=c {
        b = a * b / (k as f64 + a * b);
    }
    c as f64 * b / (c as f64 - a * (1.0 - b))
}

/// `events.csv` of a run of `sets` on `seed`, as text (the recording a
/// replay test reads back).
pub fn events_csv(sets: &[&str], seed: u64) -> String {
    let sc = scenario(sets);
    let (mut events, mut timeline) = (Vec::new(), Vec::new());
    let mut obs = fleetsim::metrics::CsvObserver::new(
        &mut events,
        &mut timeline,
        sc.policy.base_limit_mb,
        sc.policy.hard_limit_mb,
    );
    Sim::new(&sc, seed, &mut obs)
        .run()
        .expect("the run completes");
    obs.finish().expect("in-memory writes succeed");
    String::from_utf8(events).expect("UTF-8")
}

/// A plain-leak fleet (no warm-up, no steps, no deferral) recycling about
/// five times an hour: boot 420 MB, limits 540 +- 30, 0.15 MB/request at
/// cv 0.6, 1.6 rps; the calibration tests' known truth.
pub const PLAIN_FLEET: &[&str] = &[
    "run.duration_h=24",
    "fleet.boot_rss_mb=420",
    "fleet.leak.mean_mb_per_request=0.15",
    "fleet.leak.cv=0.6",
    "fleet.leak.warmup_mb=0",
    "fleet.leak.step_probability=0",
    "policy.base_limit_mb=540",
    "policy.jitter_mb=30",
    "policy.hard_limit_mb=690",
    "workload.rps=1.6",
    "workload.profile=constant",
    "policy.busy_deferral=false",
];

/// Runs the built `fleetsim --quiet ARGS` in `dir`: exit code, stdout, stderr.
pub fn fleetsim_in(dir: &std::path::Path, args: &[&str]) -> (Option<i32>, String, String) {
    let o = std::process::Command::new(env!("CARGO_BIN_EXE_fleetsim"))
        .current_dir(dir)
        .arg("--quiet")
        .args(args)
        .output()
        .expect("runs");
    let s = |b: &[u8]| String::from_utf8_lossy(b).into_owned();
    (o.status.code(), s(&o.stdout), s(&o.stderr))
}

/// `fleetsim_in` that must exit 0; its stdout.
pub fn ok(dir: &std::path::Path, args: &[&str]) -> String {
    let (code, out, err) = fleetsim_in(dir, args);
    assert_eq!(code, Some(0), "{args:?}: {err}");
    out
}

/// Runs the built `fleetsim ARGS` in `cwd` (the test's own folder when
/// `None`) with `env` set and the input limit at its default, and times
/// it: what the hostile corpora judge (a refusal comes fast).
pub fn fleetsim_timed(
    cwd: Option<&std::path::Path>,
    args: &[&str],
    env: &[(&str, &str)],
) -> (std::process::Output, std::time::Duration) {
    let start = std::time::Instant::now();
    let mut cmd = std::process::Command::new(env!("CARGO_BIN_EXE_fleetsim"));
    if let Some(d) = cwd {
        cmd.current_dir(d);
    }
    let out = cmd
        .args(args)
        .env_remove("FLEETSIM_MAX_INPUT_MB")
        .envs(env.iter().copied())
        .output()
        .expect("the binary runs");
    (out, start.elapsed())
}

/// A shipped scenario file (`scenarios/NAME.toml`, its `extends` resolved
/// there) with `--set`-style overrides.
pub fn preset(name: &str, sets: &[&str]) -> Scenario {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("scenarios");
    let path = dir.join(format!("{name}.toml"));
    let text = std::fs::read_to_string(&path).unwrap();
    let mut read = |rel: &str| std::fs::read_to_string(dir.join(rel)).map_err(|e| e.to_string());
    let sets: Vec<_> = sets
        .iter()
        .map(|s| fleetsim::scenario::parse_override(s).unwrap())
        .collect();
    fleetsim::scenario::load(&text, &path.display().to_string(), &sets, &mut read)
        .unwrap_or_else(|e| panic!("{e}"))
        .1
}

/// An observer that keeps every event row.
#[derive(Default)]
pub struct Rows(pub Vec<fleetsim::metrics::EventRow>);

impl Observer for Rows {
    fn event(&mut self, row: &fleetsim::metrics::EventRow) {
        self.0.push(row.clone());
    }
}
