//! A sweep's base scenario edited mid-sweep (issue 17: `--resume` and
//! `merge` mixed rps 0.98 and 5 and exited 0). Each sweep directory keeps
//! its resolved base as `base.toml`; `--resume` and `merge` refuse a base
//! that now resolves to other values (exit 2, naming the file).

mod common;

use common::TempDir;
use std::fs;
use std::path::Path;
use std::process::{Command, Output};

const SWEEP: &str = "base = \"../b.toml\"\nhours = 0.05\n[[param]]\n\
                     key = \"policy.cooldown_s\"\nvalues = [60.0, 120.0, 240.0]\n\
                     [[objective]]\nmetric = \"oom_kills\"\n";

fn fleetsim(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_fleetsim"))
        .args(args)
        .output()
        .expect("the binary runs")
}

fn base(dir: &Path, rps: f64) {
    let text = format!("[workload]\nprofile = \"constant\"\nrps = {rps:?}\n");
    fs::write(dir.join("b.toml"), text).unwrap();
}

fn shard(file: &Path, out: &Path, k: &str, resume: bool) -> Output {
    let mut args = vec![
        "sweep",
        file.to_str().unwrap(),
        "--out",
        out.to_str().unwrap(),
    ];
    args.extend(["--shard", k]);
    if resume {
        args.push("--resume");
    }
    fleetsim(&args)
}

fn refused(o: &Output, fragment: &str) {
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert_eq!(err.trim_end().lines().count(), 1, "{err}");
    assert!(err.contains("base.toml") && err.contains(fragment), "{err}");
}

#[test]
fn an_edited_base_is_refused_on_resume_and_merge() {
    let dir = TempDir::new("sweep-base");
    let sub = dir.path().join("sweeps");
    fs::create_dir_all(&sub).unwrap();
    let file = sub.join("s.toml");
    fs::write(&file, SWEEP).unwrap();
    let (s0, s1) = (dir.path().join("s0"), dir.path().join("s1"));
    base(dir.path(), 0.98);
    let o = shard(&file, &s0, "0/2", false);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    // Shard 1 runs on an edited base; shard 0 then resumes on it.
    base(dir.path(), 5.0);
    let o = shard(&file, &s1, "1/2", false);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    refused(&shard(&file, &s0, "0/2", true), "the base scenario changed");
    let merged = dir.path().join("merged");
    let (a, b, m) = (
        s0.to_str().unwrap(),
        s1.to_str().unwrap(),
        merged.to_str().unwrap(),
    );
    refused(
        &fleetsim(&["merge", a, b, "--out", m]),
        "the base scenario changed",
    );
    assert!(!merged.join("results.csv").exists());
    // Back on the first base, shard 1 is the odd one out.
    base(dir.path(), 0.98);
    refused(
        &fleetsim(&["merge", a, b, "--out", m]),
        "the base scenario changed",
    );
    // Re-run on one base, the shards merge.
    fs::remove_dir_all(&s1).unwrap();
    let o = shard(&file, &s1, "1/2", false);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let o = fleetsim(&["merge", a, b, "--out", m]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    assert!(merged.join("results.csv").exists());
}
