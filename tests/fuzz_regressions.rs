//! Every input the fuzzers found (`fuzz/regressions/<target>/`) and a few
//! seeds, replayed through the fuzz harnesses on stable `cargo test`, so a
//! crash once found stays fixed without nightly or cargo-fuzz. The harness
//! panics on a bug (a panic in fleetsim, a multi-line or empty error, an
//! invariant failure, a `scenario.toml` that does not load back).

mod common;

#[path = "../fuzz/src/lib.rs"]
mod harness;

use std::path::Path;

fn inputs(target: &str) -> Vec<(String, Vec<u8>)> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("fuzz/regressions")
        .join(target);
    let Ok(entries) = std::fs::read_dir(&dir) else {
        return Vec::new();
    };
    let mut files: Vec<_> = entries
        .map(|e| e.unwrap().path())
        .filter(|p| p.is_file())
        .collect();
    files.sort();
    files
        .into_iter()
        .map(|p| {
            let name = p.file_name().unwrap().to_string_lossy().into_owned();
            (name, std::fs::read(&p).unwrap())
        })
        .collect()
}

fn replay(target: &str) -> usize {
    let (_, f) = harness::TARGETS
        .iter()
        .find(|(n, _)| *n == target)
        .expect("a known target");
    let files = inputs(target);
    for (name, bytes) in &files {
        let r = std::panic::catch_unwind(|| f(bytes));
        assert!(r.is_ok(), "fuzz/regressions/{target}/{name} fails again");
    }
    files.len()
}

#[test]
fn scenario_regressions_stay_fixed() {
    assert!(
        replay("scenario") >= 1,
        "fuzz/regressions/scenario/ is empty"
    );
}

#[test]
fn sweep_regressions_stay_fixed() {
    assert!(replay("sweep") >= 1, "fuzz/regressions/sweep/ is empty");
}

/// The `recording` target's finds: each replays through the harness, and
/// in bounded time (a day-long events.csv once calibrated for 12 s, past
/// libFuzzer's 10 s timeout; the harness now calibrates on a small event
/// budget, `CALIBRATION_MAX_EVENTS`).
#[test]
fn recording_regressions_stay_fixed_and_fast() {
    let start = std::time::Instant::now();
    assert!(
        replay("recording") >= 1,
        "fuzz/regressions/recording/ is empty"
    );
    let took = start.elapsed();
    assert!(took < std::time::Duration::from_secs(5), "took {took:?}");
}

#[test]
fn sim_regressions_stay_fixed() {
    assert!(replay("sim") >= 1, "fuzz/regressions/sim/ is empty");
}

/// The harnesses accept the shipped files: a harness that rejected good
/// input (or panicked on it) would make every fuzz finding suspect.
#[test]
fn shipped_files_pass_the_harnesses() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    for f in ["scenarios/render-2x3.toml", "scenarios/leakless.toml"] {
        harness::scenario(&std::fs::read(root.join(f)).unwrap());
    }
    for f in [
        "scenarios/sweeps/render-2x3-cooldown.toml",
        "scenarios/sweeps/render-2x3-optimise.toml",
    ] {
        harness::sweep(&std::fs::read(root.join(f)).unwrap());
    }
    harness::recording(&std::fs::read(root.join("scenarios/recordings/seeds-31min.log")).unwrap());
    harness::sim(b"any bytes map onto a small scenario");
    harness::sim(&[]);
}

/// The `sim` target's stack overflow (no input was saved: the process died
/// before libFuzzer could write one): spawn-then-exit in a cgroup that holds
/// one generation of workers but not two OOM-killed a worker, re-forked it
/// and killed it again at the same instant, recursing without end. Such a
/// scenario is now refused; one that holds both generations runs with
/// every invariant checked.
#[test]
fn spawn_first_in_a_tight_cgroup_is_refused_or_runs() {
    let sets = |container: &str| {
        vec![
            "fleet.instances=1".to_string(),
            "fleet.workers_per_instance=2".into(),
            "fleet.boot_rss_mb=300".into(),
            "fleet.shared_mb=0".into(),
            format!("fleet.container_mb={container}"),
            "fleet.leak.mean_mb_per_request=0".into(),
            "fleet.leak.warmup_mb=0".into(),
            "fleet.leak.step_probability=0".into(),
            "policy.replacement=spawn_then_exit".into(),
            "policy.max_requests.enabled=true".into(),
            "policy.max_requests.requests=100".into(),
            "policy.max_requests.jitter_requests=100".into(),
            "policy.lease.enabled=false".into(),
            "policy.cooldown_s=0".into(),
            "policy.base_limit_mb=600".into(),
            "policy.jitter_mb=0".into(),
            "policy.hard_limit_mb=700".into(),
            "policy.min_runway_mb=0".into(),
            "run.duration_h=1".into(),
        ]
    };
    let tight: Vec<String> = sets("950");
    let tight: Vec<&str> = tight.iter().map(String::as_str).collect();
    let e = common::try_scenario(&tight).unwrap_err();
    assert_eq!(e.key.as_deref(), Some("fleet.container_mb"), "{e}");
    assert!(e.reason.contains("spawn_then_exit"), "{e}");
    // Seeds 2 and 6 overflowed the stack before the check existed.
    let roomy: Vec<String> = sets("1550");
    let roomy: Vec<&str> = roomy.iter().map(String::as_str).collect();
    for seed in 1..=8 {
        let s = common::check(&roomy, seed);
        assert!(s.requests_total > 0, "seed {seed}: no traffic");
    }
}
