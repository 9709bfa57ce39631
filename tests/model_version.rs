//! `MODEL_VERSION` (src/lib.rs) tells a sweep which draw regime wrote its
//! rows; `--resume` and `merge` refuse another. That only works if every
//! change of output bumps it. These digests pin what a few scenario/seed
//! pairs turn into, in both engine modes: a change that moves any of them
//! must bump `MODEL_VERSION` in the same commit and update `PINNED` (the
//! failure message prints the new digests).
//!
//! The digests are of the summary's fields (not its version stamp), on this
//! platform's libm (`exp`, `ln`, `cos`): another C library may differ in
//! the last bit of a draw, which this test would report as a change.

use fleetsim::scenario::{self, Override, parse_override};
use fleetsim::{MODEL_VERSION, Scenario, run_summary};
use std::fs;
use std::path::Path;

/// The model version these digests belong to.
const PINNED_VERSION: u32 = 9;

/// (scenario file or "" for the embedded default, overrides, seed, digest).
const PINNED: [(&str, &[&str], u64, u64); 11] = [
    ("", &[], 1, 0x384b_85fa_7605_30ad),
    ("", &["engine.mode=aggregate"], 1, 0x4365_4b37_cc37_008d),
    (
        "",
        &[
            "engine.mode=aggregate",
            "workload.balancer=least_outstanding",
        ],
        1,
        0x67fe_7977_bc23_3c0e,
    ),
    (
        "scenarios/render-2x3-fixed.toml",
        &[],
        3,
        0x5872_e83e_b40f_b624,
    ),
    (
        "scenarios/passenger-rolling.toml",
        &["run.duration_h=12"],
        4,
        0x4cda_ed91_dfcf_02e1,
    ),
    (
        "scenarios/gunicorn-max-requests.toml",
        &["workload.rps=6", "run.duration_h=6"],
        5,
        0x8756_494c_1918_a5a9,
    ),
    (
        "scenarios/render-2x3-surges.toml",
        &[],
        1,
        0xf160_1c69_4483_6441,
    ),
    (
        "scenarios/render-2x3-surges.toml",
        &["engine.mode=aggregate"],
        2,
        0xd01c_6c57_4100_a77c,
    ),
    (
        "scenarios/uwsgi-reload-on-rss.toml",
        &["policy.evil_rss.limit_mb=450", "run.duration_h=6"],
        2,
        0xdbb3_4a16_2652_3bc0,
    ),
    (
        "scenarios/leakless.toml",
        &["run.duration_h=12"],
        1,
        0x4381_e2e1_81f0_2109,
    ),
    (
        "scenarios/large-fleet.toml",
        &["run.duration_h=1"],
        1,
        0xd9f4_b8a3_6430_64e9,
    ),
];

fn load(path: &str, sets: &[&str]) -> Scenario {
    let overrides: Vec<Override> = sets.iter().map(|s| parse_override(s).unwrap()).collect();
    let (text, dir) = if path.is_empty() {
        (scenario::DEFAULT_SCENARIO.to_string(), Path::new("."))
    } else {
        (
            fs::read_to_string(path).unwrap(),
            Path::new(path).parent().unwrap(),
        )
    };
    let mut read = |rel: &str| fs::read_to_string(dir.join(rel)).map_err(|e| e.to_string());
    scenario::load(&text, path, &overrides, &mut read)
        .unwrap_or_else(|e| panic!("{e}"))
        .1
}

/// FNV-1a, 64 bits: stable across Rust versions, unlike `DefaultHasher`.
fn fnv1a(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0xcbf2_9ce4_8422_2325, |h, &b| {
        (h ^ b as u64).wrapping_mul(0x0100_0000_01b3)
    })
}

#[test]
fn outputs_change_only_with_the_model_version() {
    assert_eq!(
        MODEL_VERSION, PINNED_VERSION,
        "MODEL_VERSION changed: re-pin the digests below for the new model \
         (run this test and copy the digests it prints) and set PINNED_VERSION"
    );
    let mut changed = Vec::new();
    for (path, sets, seed, want) in PINNED {
        let summary = run_summary(&load(path, sets), seed).expect("a run");
        let got = fnv1a(serde_json::to_string(&summary).unwrap().as_bytes());
        if got != want {
            changed.push(format!("    ({path:?}, &{sets:?}, {seed}, {got:#018x}),"));
        }
    }
    assert!(
        changed.is_empty(),
        "outputs changed for the same scenario and seed under model {MODEL_VERSION}: \
         bump MODEL_VERSION in src/lib.rs (say why in its doc), then pin these:\n{}",
        changed.join("\n")
    );
}
