//! Shards stored far from their sweep file (the Kubernetes layout: the
//! sweep on one volume, the shards on another) resume and merge from any
//! folder, byte-identical to an unsharded sweep: `--resume` and `merge`
//! read each directory's stored inputs (`sweep.toml`, `base.toml`,
//! `series.csv`), never the original paths (issue 18). A failed `--resume`
//! leaves no folder behind, a shard given twice is named as such, and a
//! run's `scenario.toml` runs from its own folder.

mod common;

use common::TempDir;
use std::fs;
use std::path::Path;
use std::process::{Command, Output};

/// Extends a parent and reads a traffic series, both relative to itself.
const BASE: &str = "extends = \"parent.toml\"\n\
                    [workload]\nprofile = \"series\"\nseries_csv = \"traffic.csv\"\n";
const PARENT: &str = "[workload]\nrps = 1.5\n[policy]\ncooldown_s = 90.0\n";
const SERIES: &str = "t_s,rps\n0,1.0\n900,2.5\n1800,1.2\n2700,2.0\n3600,1.0\n";
const SWEEP: &str = "base = \"../bases/b.toml\"\nseed = 5\nreplications = 2\nhours = 0.5\n\
                     [[param]]\nkey = \"policy.cooldown_s\"\nvalues = [30.0, 240.0]\n\
                     [[param]]\nkey = \"policy.jitter_mb\"\nvalues = [20.0, 60.0]\n\
                     [[objective]]\nmetric = \"capacity_loss_fraction\"\n";
/// Every file of a finished sweep directory.
const FILES: [&str; 8] = [
    "sweep.toml",
    "base.toml",
    "series.csv",
    "model.toml",
    "trials.csv",
    "results.csv",
    "pareto.csv",
    "best.toml",
];

fn fleetsim_in(dir: &Path, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_fleetsim"))
        .current_dir(dir)
        .args(args)
        .output()
        .expect("the binary runs")
}

fn ok(o: Output) -> Output {
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    o
}

fn refused(o: Output) -> String {
    let err = String::from_utf8_lossy(&o.stderr).into_owned();
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert_eq!(err.trim_end().lines().count(), 1, "one line: {err}");
    err
}

fn read(dir: &Path, name: &str) -> String {
    fs::read_to_string(dir.join(name)).unwrap_or_else(|e| panic!("{}/{name}: {e}", dir.display()))
}

/// `cfg/sweeps/s.toml` naming `cfg/bases/b.toml`, which extends
/// `parent.toml` and reads `traffic.csv` beside it.
fn layout(root: &Path) -> std::path::PathBuf {
    let (sweeps, bases) = (root.join("cfg/sweeps"), root.join("cfg/bases"));
    fs::create_dir_all(&sweeps).unwrap();
    fs::create_dir_all(&bases).unwrap();
    fs::write(bases.join("b.toml"), BASE).unwrap();
    fs::write(bases.join("parent.toml"), PARENT).unwrap();
    fs::write(bases.join("traffic.csv"), SERIES).unwrap();
    fs::write(sweeps.join("s.toml"), SWEEP).unwrap();
    sweeps.join("s.toml")
}

fn shard(root: &Path, file: &Path, out: &Path, k: &str, extra: &[&str]) -> Output {
    let mut args = vec![
        "sweep",
        file.to_str().unwrap(),
        "--out",
        out.to_str().unwrap(),
        "--shard",
        k,
    ];
    args.extend(extra);
    fleetsim_in(root, &args)
}

#[test]
fn far_shards_resume_and_merge_from_anywhere() {
    let tmp = TempDir::new("anywhere");
    let root = tmp.path();
    let file = layout(root);
    let one = root.join("one");
    ok(fleetsim_in(
        root,
        &[
            "sweep",
            file.to_str().unwrap(),
            "--out",
            one.to_str().unwrap(),
        ],
    ));
    assert!(read(&one, "base.toml").contains("series_csv = \"series.csv\""));
    assert_eq!(read(&one, "series.csv"), SERIES);
    let results = root.join("far/pvc/results");
    for k in 0..3 {
        let out = results.join(format!("shard-{k}"));
        ok(shard(root, &file, &out, &format!("{k}/3"), &[]));
    }
    // The sweep's folder goes away: nothing may be read through it now.
    fs::rename(root.join("cfg"), root.join("cfg-gone")).unwrap();
    // Shard 1 was killed half-way: two rows kept, resumed from a copy of
    // the sweep file whose base does not resolve from where it sits.
    let s1 = results.join("shard-1");
    let rows = read(&s1, "trials.csv");
    let kept: Vec<&str> = rows.lines().take(2).collect();
    fs::write(s1.join("trials.csv"), kept.join("\n") + "\n").unwrap();
    let moved = root.join("moved");
    fs::create_dir_all(&moved).unwrap();
    fs::write(moved.join("s.toml"), SWEEP).unwrap();
    let o = ok(shard(
        root,
        &moved.join("s.toml"),
        &s1,
        "1/3",
        &["--resume"],
    ));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains("resuming on the stored"), "{err}");
    assert_eq!(read(&s1, "trials.csv"), rows);
    // Merged from another folder, by relative paths.
    let elsewhere = root.join("elsewhere");
    fs::create_dir_all(&elsewhere).unwrap();
    let dirs = [
        "../far/pvc/results/shard-0",
        "../far/pvc/results/shard-1",
        "../far/pvc/results/shard-2",
    ];
    let mut args = vec!["merge"];
    args.extend(dirs);
    args.extend(["--out", "merged"]);
    ok(fleetsim_in(&elsewhere, &args));
    let merged = elsewhere.join("merged");
    for f in FILES {
        assert_eq!(read(&one, f), read(&merged, f), "{f} differs after merge");
    }
    // The merged directory is a sweep directory too: it merges again.
    ok(fleetsim_in(
        &elsewhere,
        &["merge", "merged", "--out", "again"],
    ));
    for f in FILES {
        assert_eq!(read(&one, f), read(&elsewhere.join("again"), f), "{f}");
    }
    // best.toml runs from its folder: the series is the copy beside it.
    ok(fleetsim_in(
        &merged,
        &["run", "best.toml", "--hours", "0.1", "--out", "best-run"],
    ));
}

#[test]
fn the_base_as_it_resolves_still_guards_a_resume() {
    let tmp = TempDir::new("anywhere-guard");
    let root = tmp.path();
    let file = layout(root);
    let s0 = root.join("results/shard-0");
    ok(shard(root, &file, &s0, "0/2", &[]));
    // The series is part of the base: an edited one is a changed base.
    fs::write(
        root.join("cfg/bases/traffic.csv"),
        SERIES.replace("2.5", "3.5"),
    )
    .unwrap();
    let err = refused(shard(root, &file, &s0, "0/2", &["--resume"]));
    assert!(
        err.contains("base.toml") && err.contains("the base scenario changed"),
        "{err}"
    );
    fs::write(root.join("cfg/bases/traffic.csv"), SERIES).unwrap();
    ok(shard(root, &file, &s0, "0/2", &["--resume"]));
}

#[test]
fn a_failed_resume_leaves_no_folder_and_a_twice_given_shard_is_named() {
    let tmp = TempDir::new("anywhere-shards");
    let root = tmp.path();
    let file = layout(root);
    let results = root.join("results");
    for k in 0..2 {
        ok(shard(
            root,
            &file,
            &results.join(format!("shard-{k}")),
            &format!("{k}/3"),
            &[],
        ));
    }
    // Shard 2 was never run: its resume fails and creates nothing.
    let s2 = results.join("shard-2");
    let err = refused(shard(root, &file, &s2, "2/3", &["--resume"]));
    assert!(
        err.contains("nothing to resume") && err.contains("without --resume"),
        "{err}"
    );
    assert!(!s2.exists(), "a failed resume left {}", s2.display());
    let merge = |dirs: &[&str]| {
        let mut args = vec!["merge"];
        args.extend(dirs);
        args.extend(["--out", "merged"]);
        fleetsim_in(&results, &args)
    };
    let err = refused(merge(&["shard-0", "shard-1"]));
    assert!(
        err.contains("do not add up") && err.contains("run the missing shards"),
        "{err}"
    );
    assert!(!err.contains("duplicated"), "{err}");
    // An empty folder (left by an older build's failed resume) is named.
    fs::create_dir_all(&s2).unwrap();
    let err = refused(merge(&["shard-0", "shard-1", "shard-2"]));
    assert!(err.contains("shard-2: an empty folder"), "{err}");
    fs::remove_dir(&s2).unwrap();
    // A shard given twice, or a copy of one, is a duplicate, not a gap.
    ok(shard(root, &file, &s2, "2/3", &[]));
    let copy = results.join("shard-0-copy");
    fs::create_dir_all(&copy).unwrap();
    for f in fs::read_dir(results.join("shard-0")).unwrap() {
        let f = f.unwrap().path();
        fs::copy(&f, copy.join(f.file_name().unwrap())).unwrap();
    }
    let err = refused(merge(&["shard-0", "shard-0-copy", "shard-1", "shard-2"]));
    assert!(
        err.contains("shard-0 and shard-0-copy both hold trial 0")
            && err.contains("the same shard"),
        "{err}"
    );
    assert!(!err.contains("missing"), "{err}");
    ok(merge(&["shard-0", "shard-1", "shard-2"]));
}

#[test]
fn a_runs_scenario_toml_reproduces_it_from_its_own_folder() {
    let tmp = TempDir::new("anywhere-run");
    let root = tmp.path();
    layout(root);
    let b = root.join("cfg/bases/b.toml");
    let args = ["--seed", "3", "--hours", "0.5", "--json"];
    let mut first = vec!["run", b.to_str().unwrap(), "--out", "r1"];
    first.extend(args);
    let o1 = ok(fleetsim_in(root, &first));
    let r1 = root.join("r1");
    assert_eq!(read(&r1, "series.csv"), SERIES);
    assert!(read(&r1, "scenario.toml").contains("series_csv = \"series.csv\""));
    fs::rename(root.join("cfg"), root.join("cfg-gone")).unwrap();
    let mut again = vec!["run", "r1/scenario.toml", "--out", "r2"];
    again.extend(args);
    let o2 = ok(fleetsim_in(root, &again));
    assert_eq!(o1.stdout, o2.stdout, "summary.json differs");
    let r2 = root.join("r2");
    for f in [
        "events.csv",
        "timeline.csv",
        "workers.csv",
        "scenario.toml",
        "series.csv",
    ] {
        assert_eq!(read(&r1, f), read(&r2, f), "{f} differs");
    }
}
