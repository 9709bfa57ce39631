//! One writer per sweep directory (issue 17: two processes on one
//! directory duplicated 1,410 trials). A live holder's lock refuses a
//! second `sweep` or `merge` (exit 2, naming the pid) and leaves its files
//! alone; a stale lock (its process gone) is taken over with a note; a
//! finished sweep leaves no lock behind.

mod common;

use common::TempDir;
use std::fs;
use std::path::Path;
use std::process::{Command, Output};

const LOCK: &str = ".fleetsim.lock";

const SWEEP: &str = "hours = 0.05\n[[param]]\nkey = \"policy.cooldown_s\"\nvalues = [60.0, 120.0]\n\
                     [[objective]]\nmetric = \"oom_kills\"\n";

fn fleetsim(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_fleetsim"))
        .args(args)
        .output()
        .expect("the binary runs")
}

fn sweep(file: &Path, out: &Path, extra: &[&str]) -> Output {
    let mut args = vec![
        "sweep",
        file.to_str().unwrap(),
        "--out",
        out.to_str().unwrap(),
    ];
    args.extend(extra);
    fleetsim(&args)
}

#[test]
fn a_held_lock_refuses_a_second_writer() {
    let dir = TempDir::new("lock-held");
    let file = dir.path().join("s.toml");
    fs::write(&file, SWEEP).unwrap();
    let out = dir.path().join("out");
    fs::create_dir_all(&out).unwrap();
    // This test's own pid: a process that is certainly alive.
    let me = std::process::id().to_string();
    fs::write(out.join(LOCK), format!("{me}\n")).unwrap();
    for extra in [&[][..], &["--resume"][..]] {
        let o = sweep(&file, &out, extra);
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(2), "{extra:?}: {err}");
        assert_eq!(err.trim_end().lines().count(), 1, "{err}");
        assert!(err.contains(&format!("pid {me}")), "{err}");
        assert!(!out.join("trials.csv").exists(), "the refused writer wrote");
        assert!(!out.join("sweep.toml").exists(), "the refused writer wrote");
    }
    // merge into a held directory is refused the same way.
    let o = fleetsim(&[
        "merge",
        out.to_str().unwrap(),
        "--out",
        out.to_str().unwrap(),
    ]);
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert_eq!(
        fs::read_to_string(out.join(LOCK)).unwrap().trim(),
        me,
        "the holder's lock is left as it was"
    );
}

#[test]
fn a_stale_lock_is_taken_over_and_a_finished_sweep_leaves_none() {
    let dir = TempDir::new("lock-stale");
    let file = dir.path().join("s.toml");
    fs::write(&file, SWEEP).unwrap();
    let out = dir.path().join("out");
    fs::create_dir_all(&out).unwrap();
    // Above Linux's pid_max (2^22): no process has it.
    fs::write(out.join(LOCK), "4999999\n").unwrap();
    let o = sweep(&file, &out, &[]);
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(o.status.success(), "{err}");
    assert!(err.contains("stale lock (pid 4999999)"), "{err}");
    assert!(out.join("results.csv").exists());
    assert!(
        !out.join(LOCK).exists(),
        "a finished sweep removes its lock"
    );
    // And a clean run takes and removes it without a word about locks.
    let out2 = dir.path().join("out2");
    let o = sweep(&file, &out2, &[]);
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(o.status.success() && !err.contains("stale lock"), "{err}");
    assert!(!out2.join(LOCK).exists());
}
