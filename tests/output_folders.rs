//! Output folders are safe: a run's default folder carries a digest of its
//! overrides, a run never overwrites a complete run of another scenario,
//! override set or seed without `--force`, new data never sits beside a
//! report drawn from the old, a replay that fails leaves the one before it
//! whole, and a sweep's or optimiser's `best.toml`
//! names itself for what it is.

mod common;

use common::{TempDir, fleetsim_in, ok};
use std::fs;
use std::path::Path;

fn folders(dir: &Path) -> Vec<String> {
    let mut v: Vec<String> = fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    v.sort();
    v
}

#[test]
fn default_folders_carry_a_digest_of_the_overrides() {
    let tmp = TempDir::new("folders-digest");
    let d = tmp.path();
    ok(d, &["run", "--hours", "1"]);
    ok(d, &["run", "--hours", "1", "--set", "policy.cooldown_s=60"]);
    ok(d, &["run", "--hours", "1", "--set", "policy.cooldown_s=90"]);
    let runs = folders(&d.join("out"));
    assert_eq!(
        runs.len(),
        3,
        "three override sets, three folders: {runs:?}"
    );
    for r in &runs {
        let digest = r
            .strip_prefix("render-2x3-seed1-")
            .expect("the default's stem and seed");
        assert!(
            digest.len() == 6 && digest.chars().all(|c| c.is_ascii_hexdigit()),
            "{r}"
        );
    }
    // The same overrides again: the same folder, overwritten (same run).
    ok(d, &["run", "--hours", "1", "--set", "policy.cooldown_s=60"]);
    assert_eq!(folders(&d.join("out")), runs);
    // No overrides at all: the plain name the README shows.
    ok(d, &["run"]);
    assert!(d.join("out/render-2x3-seed1/summary.json").exists());
    assert_eq!(folders(&d.join("out")).len(), 4);
}

#[test]
fn a_run_never_overwrites_another_complete_run_without_force() {
    let tmp = TempDir::new("folders-force");
    let d = tmp.path();
    let out = d.join("x");
    let o = out.to_str().unwrap();
    ok(d, &["run", "--hours", "1", "--out", o]);
    let first = fs::read_to_string(out.join("summary.json")).unwrap();

    let (code, _, err) = fleetsim_in(
        d,
        &[
            "run",
            "--hours",
            "1",
            "--out",
            o,
            "--set",
            "policy.cooldown_s=60",
        ],
    );
    assert_eq!(code, Some(2), "{err}");
    assert!(
        err.contains("holds a complete run of another scenario") && err.contains("--force"),
        "{err}"
    );
    assert_eq!(
        fs::read_to_string(out.join("summary.json")).unwrap(),
        first,
        "untouched"
    );

    let (code, _, err) = fleetsim_in(d, &["run", "--hours", "1", "--out", o, "--seed", "2"]);
    assert_eq!(code, Some(2), "{err}");
    assert!(err.contains("holds a complete run of seed 1"), "{err}");

    // The same run again is no conflict; --force overwrites another.
    ok(d, &["run", "--hours", "1", "--out", o]);
    ok(
        d,
        &["run", "--hours", "1", "--out", o, "--seed", "2", "--force"],
    );
    assert_ne!(fs::read_to_string(out.join("summary.json")).unwrap(), first);
}

#[test]
fn new_data_never_sits_beside_an_old_report() {
    let tmp = TempDir::new("folders-report");
    let d = tmp.path();
    let out = d.join("x");
    let o = out.to_str().unwrap();
    ok(d, &["run", "--hours", "2", "--out", o]);
    ok(d, &["report", o]);
    assert!(out.join("report.html").exists() && out.join("timeline.svg").exists());
    // A second run with other --set values (forced into the same folder).
    ok(
        d,
        &[
            "run",
            "--hours",
            "2",
            "--out",
            o,
            "--set",
            "policy.cooldown_s=60",
            "--force",
        ],
    );
    let left: Vec<String> = folders(&out)
        .into_iter()
        .filter(|f| f == "report.html" || f.ends_with(".svg"))
        .collect();
    assert!(left.is_empty(), "stale report files: {left:?}");
    ok(d, &["report", o]);
    let html = fs::read_to_string(out.join("report.html")).unwrap();
    assert!(html.contains("cooldown"), "drawn from the new data");

    // saturate, too, clears the report of its earlier result.
    let sat = d.join("sat");
    let s = sat.to_str().unwrap();
    ok(d, &["saturate", "--seeds", "1", "--hours", "2", "--out", s]);
    ok(d, &["report", s]);
    assert!(sat.join("report.html").exists());
    ok(d, &["saturate", "--seeds", "1", "--hours", "3", "--out", s]);
    assert!(!sat.join("report.html").exists());
}

const SWEEP: &str = r#"
seed = 3
replications = 2
hours = 2.0
sampler = "grid"

[[param]]
key = "policy.cooldown_s"
values = [30.0, 240.0]

[[objective]]
metric = "capacity_loss_fraction"
"#;

#[test]
fn best_toml_names_itself_for_what_it_is() {
    let tmp = TempDir::new("folders-best");
    let d = tmp.path();
    fs::write(d.join("s.toml"), SWEEP).unwrap();
    ok(d, &["sweep", "s.toml", "--out", "sw"]);
    let best: toml::Table = fs::read_to_string(d.join("sw/best.toml"))
        .unwrap()
        .parse()
        .unwrap();
    assert_eq!(best["name"].as_str(), Some("render-2x3-sweep-best"));
    let desc = best["description"].as_str().unwrap();
    assert!(
        desc.starts_with("fleetsim sweep's winner (configuration "),
        "{desc}"
    );
    assert!(desc.contains("(base render-2x3: "), "{desc}");

    ok(
        d,
        &[
            "optimise", "s.toml", "--budget", "4", "--fresh", "2", "--out", "opt",
        ],
    );
    let best: toml::Table = fs::read_to_string(d.join("opt/best.toml"))
        .unwrap()
        .parse()
        .unwrap();
    assert_eq!(best["name"].as_str(), Some("render-2x3-optimise-best"));
    let desc = best["description"].as_str().unwrap();
    assert!(
        desc.starts_with("fleetsim optimise's winner (search of s): policy.cooldown_s="),
        "{desc}"
    );
    // Running the winner lands in its own folder, not the baseline's.
    ok(d, &["run", "opt/best.toml", "--hours", "1"]);
    let runs = folders(&d.join("out"));
    assert!(
        runs.len() == 1 && runs[0].starts_with("best-seed1-"),
        "{runs:?}"
    );
}

/// A replay that does less than the one before it into the same folder
/// (no `--calibrate`, or its what-ifs refused) leaves none of the earlier
/// calibration's files: `whatif.json` from a forced what-if must not sit
/// beside an analysis it was not computed from.
#[test]
fn a_replay_that_does_less_leaves_no_earlier_calibration_behind() {
    let tmp = TempDir::new("replay-less");
    let repo = env!("CARGO_MANIFEST_DIR");
    let recording = format!("{repo}/scenarios/recordings/generated-24h.csv");
    let truth = format!("{repo}/scenarios/recordings/generated-24h-truth.toml");
    let whatif = format!("{repo}/scenarios/whatif/token-bucket.toml");
    let out = tmp.path().join("cal");
    let o = out.to_str().unwrap();
    ok(
        tmp.path(),
        &[
            "replay",
            &recording,
            "--calibrate",
            "--seeds",
            "4",
            "--scenario",
            &truth,
            "--force",
            "--what-if",
            &whatif,
            "--out",
            o,
        ],
    );
    for f in [
        "calibrated.toml",
        "draws.csv",
        "validation.json",
        "whatif.json",
    ] {
        assert!(out.join(f).exists(), "{f} written");
    }
    ok(tmp.path(), &["report", o]);
    assert!(out.join("whatif.svg").exists());

    // A replay that fails leaves the complete one before it as it was (it
    // had removed the calibration's files at its start and overwritten the
    // analysis with its own).
    let before: Vec<(String, Vec<u8>)> = folders(&out)
        .into_iter()
        .map(|f| (f.clone(), fs::read(out.join(&f)).unwrap()))
        .collect();
    let short = tmp.path().join("short.csv");
    fs::write(
        &short,
        "ts,event,instance,worker,rss_mb,limit_mb,requests\n1,worker_recycled,a,w0,500,490,100\n",
    )
    .unwrap();
    let (code, _, err) = fleetsim_in(
        tmp.path(),
        &["replay", short.to_str().unwrap(), "--calibrate", "--out", o],
    );
    assert_eq!(code, Some(2), "{err}");
    assert!(err.contains("left as it was"), "{err}");
    let after: Vec<(String, Vec<u8>)> = folders(&out)
        .into_iter()
        .map(|f| (f.clone(), fs::read(out.join(&f)).unwrap()))
        .collect();
    assert!(before == after, "the complete replay before it was changed");
    // A folder holding a file no replay writes is refused, not emptied.
    let mine = tmp.path().join("mine");
    fs::create_dir(&mine).unwrap();
    fs::write(mine.join("notes.txt"), "mine").unwrap();
    let (code, _, err) = fleetsim_in(
        tmp.path(),
        &["replay", &recording, "--out", mine.to_str().unwrap()],
    );
    assert_eq!(code, Some(2), "{err}");
    assert!(err.contains("holds notes.txt"), "{err}");
    assert_eq!(folders(&mine), ["notes.txt"]);

    ok(tmp.path(), &["replay", &recording, "--out", o]);
    let left = folders(&out);
    assert_eq!(left, ["analysis.json", "recording.csv"], "{left:?}");
}
