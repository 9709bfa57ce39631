//! Same seed, same bytes (STYLE.md convention 1): the binary's four output
//! files are byte-identical across runs with one seed and differ with
//! another; at library level, runs are equal summaries whether or not the
//! invariants are checked, and whichever thread runs them.

mod common;

use common::{TempDir, check, check_with, scenario};
use fleetsim::Sim;
use fleetsim::engine::SimTime;
use fleetsim::metrics::{NullObserver, Observer, WorkerSample};
use std::path::Path;
use std::process::Command;

const FILES: [&str; 4] = ["events.csv", "timeline.csv", "workers.csv", "summary.json"];

/// A busy six hours of the default fleet: recycles, holds, resets and
/// retries all produce rows.
const SETS: [&str; 2] = ["fleet.leak.mean_mb_per_request=0.3", "workload.rps=2"];

fn run_cli(seed: u64, out: &Path) {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_fleetsim"));
    cmd.arg("run")
        .args(["--hours", "6", "--seed", &seed.to_string()]);
    for s in SETS {
        cmd.args(["--set", s]);
    }
    let o = cmd.arg("--out").arg(out).output().expect("run fleetsim");
    assert!(
        o.status.success(),
        "fleetsim run failed: {}",
        String::from_utf8_lossy(&o.stderr)
    );
}

fn read(dir: &Path, name: &str) -> Vec<u8> {
    std::fs::read(dir.join(name)).unwrap_or_else(|e| panic!("{name}: {e}"))
}

#[test]
fn the_binary_writes_identical_bytes_for_one_seed() {
    let (a, b, c) = (
        TempDir::new("det-a"),
        TempDir::new("det-b"),
        TempDir::new("det-c"),
    );
    run_cli(7, a.path());
    run_cli(7, b.path());
    run_cli(8, c.path());
    for name in FILES {
        let (x, y, z) = (
            read(a.path(), name),
            read(b.path(), name),
            read(c.path(), name),
        );
        assert!(x == y, "{name}: two runs with seed 7 differ");
        assert!(x != z, "{name}: seeds 7 and 8 wrote the same bytes");
    }
    // The resolved scenario does not depend on the seed.
    let scenario = read(a.path(), "scenario.toml");
    assert!(scenario == read(c.path(), "scenario.toml"));
    assert!(String::from_utf8(scenario).unwrap().contains("[policy]"));
    // The recordings are not trivially equal: they hold real rows.
    let events = String::from_utf8(read(a.path(), "events.csv")).unwrap();
    let recycles = events.matches(",worker_recycled,").count();
    assert!(recycles > 20, "{recycles} recycles in events.csv");
    assert!(events.contains(",retry_ok,"));
    let timeline = String::from_utf8(read(a.path(), "timeline.csv")).unwrap();
    assert_eq!(
        timeline.lines().count(),
        1 + 6 * 60,
        "header + one row a minute"
    );
    // workers.csv: every live worker of the 2 x 3 fleet at every step.
    let workers = String::from_utf8(read(a.path(), "workers.csv")).unwrap();
    let rows = workers.lines().count() - 1;
    assert!(
        (6 * 60 * 5..=6 * 60 * 6).contains(&rows),
        "{rows} workers.csv rows for 360 steps of 6 workers"
    );
    assert!(workers.starts_with("t_s,instance,worker,generation,rss_mb,limit_mb\n"));
    // No partial files are left behind.
    let leftovers: Vec<_> = std::fs::read_dir(a.path())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| !FILES.contains(&n.as_str()) && n != "scenario.toml")
        .collect();
    assert!(leftovers.is_empty(), "{leftovers:?}");
}

#[test]
fn the_binary_summary_is_the_library_summary() {
    let dir = TempDir::new("det-lib");
    run_cli(11, dir.path());
    let sets: Vec<&str> = SETS.iter().copied().chain(["run.duration_h=6"]).collect();
    let lib = check(&sets, 11);
    let json = lib.to_json();
    assert!(json.ends_with(&format!(
        "\"model_version\": {},\n  \"fleetsim_version\": \"{}\"\n}}\n",
        fleetsim::MODEL_VERSION,
        fleetsim::VERSION
    )));
    assert_eq!(
        String::from_utf8(read(dir.path(), "summary.json")).unwrap(),
        json
    );
}

#[test]
fn the_library_gives_equal_summaries_for_one_seed() {
    let sets: Vec<&str> = SETS.iter().copied().chain(["run.duration_h=6"]).collect();
    let sc = scenario(&sets);
    let plain = |seed| {
        Sim::new(&sc, seed, NullObserver)
            .run()
            .expect("run")
            .summary
    };
    let first = check(&sets, 3);
    assert_eq!(first, check(&sets, 3), "two checked runs differ");
    assert_eq!(first, plain(3), "checking invariants changed the run");
    assert_ne!(first, plain(4), "seeds 3 and 4 gave equal summaries");
    // Another thread, at the same time as this one: same answer.
    let other = std::thread::scope(|s| {
        let h = s.spawn(|| plain(3));
        let here = plain(3);
        assert_eq!(here, first);
        h.join().unwrap()
    });
    assert_eq!(other, first, "a run on another thread differs");
    assert!(first.recycles > 20 && first.retry_ok > 0, "{first:?}");
}

/// Aggregate mode (`[engine] mode = "aggregate"`): the same seed writes the
/// same bytes, another seed other bytes.
#[test]
fn the_aggregate_mode_writes_identical_bytes_for_one_seed() {
    let run = |seed: u64, out: &Path| {
        let o = Command::new(env!("CARGO_BIN_EXE_fleetsim"))
            .args(["run", "--hours", "6", "--seed", &seed.to_string()])
            .args(["--set", "engine.mode=aggregate"])
            .args(SETS.iter().flat_map(|s| ["--set", s]))
            .arg("--out")
            .arg(out)
            .output()
            .expect("run fleetsim");
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    };
    let (a, b, c) = (
        TempDir::new("agg-a"),
        TempDir::new("agg-b"),
        TempDir::new("agg-c"),
    );
    run(7, a.path());
    run(7, b.path());
    run(8, c.path());
    for name in FILES {
        let (x, y, z) = (
            read(a.path(), name),
            read(b.path(), name),
            read(c.path(), name),
        );
        assert!(x == y, "{name}: two aggregate runs with seed 7 differ");
        assert!(x != z, "{name}: seeds 7 and 8 wrote the same bytes");
    }
    let events = String::from_utf8(read(a.path(), "events.csv")).unwrap();
    assert!(events.matches(",worker_recycled,").count() > 20);
    assert!(events.contains(",retry_ok,"));
    // And at library level, with and without the invariant checks.
    let sets: Vec<&str> = SETS
        .iter()
        .copied()
        .chain(["run.duration_h=6", "engine.mode=aggregate"])
        .collect();
    let sc = scenario(&sets);
    let plain = Sim::new(&sc, 3, NullObserver).run().expect("run").summary;
    assert_eq!(
        check(&sets, 3),
        plain,
        "checking invariants changed the run"
    );
}

/// Collects the worker samples the simulation hands over, wanting the
/// first `wanted` worker structs only.
struct FirstWorkers {
    wanted: usize,
    steps: u64,
    samples: Vec<WorkerSample>,
}

impl Observer for FirstWorkers {
    fn workers_wanted(&self) -> usize {
        self.wanted
    }
    fn workers(&mut self, _t: SimTime, workers: &[WorkerSample]) {
        self.steps += 1;
        self.samples.extend_from_slice(workers);
    }
}

/// The simulation builds samples for the structs an observer wants, not
/// for every live worker (workers.csv keeps the first 64 of a fleet that
/// may hold 10,000): an observer wanting 4 of the 2 x 3 fleet's 6 sees the
/// first 4 indices, every live one of them at every step, and nothing more.
#[test]
fn worker_samples_are_built_for_the_wanted_structs_only() {
    let mut obs = FirstWorkers {
        wanted: 4,
        steps: 0,
        samples: Vec::new(),
    };
    check_with(&SETS, 3, &mut obs);
    assert_eq!(obs.steps, 24 * 60, "one call per timeline step");
    assert!(
        obs.samples.iter().all(|s| s.index < 4),
        "an unwanted struct"
    );
    for index in 0..4 {
        let n = obs.samples.iter().filter(|s| s.index == index).count() as u64;
        assert!(n > obs.steps * 9 / 10, "worker {index}: {n} samples");
    }
    let mut none = FirstWorkers {
        wanted: 0,
        steps: 0,
        samples: Vec::new(),
    };
    check_with(&SETS, 3, &mut none);
    assert_eq!(none.steps, 0, "no samples are built when none are wanted");
}
