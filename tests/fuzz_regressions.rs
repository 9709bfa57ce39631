//! Every input the fuzzers found (`fuzz/regressions/<target>/`) and a few
//! seeds, replayed through the fuzz harnesses on stable `cargo test`, so a
//! crash once found stays fixed without nightly or cargo-fuzz. The harness
//! panics on a bug (a panic in fleetsim, a multi-line or empty error, an
//! invariant failure, a `scenario.toml` that does not load back).

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
    replay("scenario");
}

#[test]
fn sweep_regressions_stay_fixed() {
    replay("sweep");
}

#[test]
fn recording_regressions_stay_fixed() {
    replay("recording");
}

#[test]
fn sim_regressions_stay_fixed() {
    replay("sim");
}

/// The harnesses accept the shipped files: a harness that rejected good
/// input (or panicked on it) would make every fuzz finding suspect.
#[test]
fn shipped_files_pass_the_harnesses() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    for f in ["scenarios/render-2x3.toml", "scenarios/leakless.toml"] {
        harness::scenario(&std::fs::read(root.join(f)).unwrap());
    }
    for f in ["scenarios/sweeps/render-2x3-cooldown.toml"] {
        harness::sweep(&std::fs::read(root.join(f)).unwrap());
    }
    harness::recording(&std::fs::read(root.join("scenarios/recordings/seeds-31min.log")).unwrap());
    harness::sim(b"any bytes map onto a small scenario");
    harness::sim(&[]);
}
