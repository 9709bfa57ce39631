//! A re-run never costs the previous complete run (issue 17: a re-run that
//! failed on a full disk had already deleted the old `summary.json`).
//! `fleetsim run` writes into a hidden staging directory beside its
//! target and swaps it in only when complete (`src/cli/run_dir.rs`): a
//! re-run that fails mid-way (a file-size limit, the shell's stand-in for
//! a full disk), is killed with SIGKILL, or is stopped by Ctrl-C leaves
//! every byte of the old run, and a kill between the swap's two renames is
//! repaired by the next run.

mod common;

use common::TempDir;
use std::collections::BTreeMap;
use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

fn fleetsim() -> Command {
    Command::new(env!("CARGO_BIN_EXE_fleetsim"))
}

/// Every file in `dir` and its bytes.
fn snapshot(dir: &Path) -> BTreeMap<String, Vec<u8>> {
    fs::read_dir(dir)
        .unwrap()
        .map(|e| {
            let e = e.unwrap();
            (
                e.file_name().to_string_lossy().into_owned(),
                fs::read(e.path()).unwrap(),
            )
        })
        .collect()
}

/// The hidden entries beside `out` (staging or set-aside directories).
fn hidden_beside(out: &Path) -> Vec<PathBuf> {
    let name = out.file_name().unwrap().to_string_lossy().into_owned();
    let mut v: Vec<PathBuf> = fs::read_dir(out.parent().unwrap())
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| {
            p.file_name()
                .unwrap()
                .to_string_lossy()
                .starts_with(&format!(".{name}."))
        })
        .collect();
    v.sort();
    v
}

/// A complete 2-hour run of the default into `out`, with a report drawn
/// beside it (the report is part of what a failed re-run must keep).
fn complete_run(out: &Path) -> BTreeMap<String, Vec<u8>> {
    let o = fleetsim()
        .args([
            "run",
            "--hours",
            "2",
            "--quiet",
            "--out",
            out.to_str().unwrap(),
        ])
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let snap = snapshot(out);
    assert!(snap.contains_key("summary.json") && snap.contains_key("events.csv"));
    snap
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

#[test]
fn a_rerun_that_fails_on_a_full_disk_leaves_the_previous_run_byte_identical() {
    let dir = TempDir::new("swap-full");
    let out = dir.path().join("out");
    let before = complete_run(&out);
    // 20 blocks of file size: events.csv of 5 hours outgrows it mid-run.
    // SIGXFSZ ignored, so the write fails with EFBIG as on a full disk.
    let o = Command::new("sh")
        .args([
            "-c",
            &format!(
                "trap '' XFSZ; ulimit -f 20; exec {} run --hours 5 --force --quiet --out {}",
                env!("CARGO_BIN_EXE_fleetsim"),
                out.display()
            ),
        ])
        .output()
        .unwrap();
    let err = stderr(&o);
    assert_eq!(o.status.code(), Some(1), "{err}");
    assert!(err.contains("File too large"), "{err}");
    assert_eq!(err.trim_end().lines().count(), 1, "{err}");
    assert_eq!(snapshot(&out), before, "the previous run changed");
    assert_eq!(hidden_beside(&out), Vec::<PathBuf>::new(), "staging left");
}

/// The test's long run (`tests/interrupt.rs`'s): only a signal ends it.
fn long_run(out: &Path) -> std::process::Child {
    fleetsim()
        .args(["run", "--hours", "400", "--force", "--quiet", "--seed", "7"])
        .args([
            "--set",
            "workload.profile=constant",
            "--set",
            "workload.rps=500",
        ])
        .args(["--set", "workload.service=constant"])
        .args(["--set", "workload.service_mean_ms=1"])
        .args(["--set", "fleet.leak.mean_mb_per_request=0"])
        .args(["--out", out.to_str().unwrap()])
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap()
}

/// Waits until the run into `out` writes its staging directory's events.
fn wait_for_staging(out: &Path, child: &mut std::process::Child) -> PathBuf {
    let start = Instant::now();
    loop {
        if let Some(s) = hidden_beside(out)
            .into_iter()
            .find(|p| fs::read_dir(p).is_ok_and(|mut d| d.next().is_some()))
        {
            return s;
        }
        assert!(child.try_wait().unwrap().is_none(), "the run ended early");
        assert!(start.elapsed() < Duration::from_secs(30), "never started");
        std::thread::sleep(Duration::from_millis(10));
    }
}

fn signal(child: &std::process::Child, sig: &str) {
    let s = Command::new("sh")
        .args(["-c", &format!("kill -{sig} {}", child.id())])
        .status()
        .unwrap();
    assert!(s.success());
}

#[test]
fn a_killed_or_interrupted_rerun_leaves_the_previous_run_byte_identical() {
    let dir = TempDir::new("swap-kill");
    let out = dir.path().join("out");
    let before = complete_run(&out);

    let mut child = long_run(&out);
    let staging = wait_for_staging(&out, &mut child);
    std::thread::sleep(Duration::from_millis(300));
    signal(&child, "KILL");
    child.wait().unwrap();
    assert_eq!(snapshot(&out), before, "SIGKILL changed the previous run");
    assert!(staging.exists(), "a kill -9 leaves its staging directory");

    // The next run removes the dead run's staging; Ctrl-C then stops it,
    // and the complete run stays as it was.
    let mut child = long_run(&out);
    let start = Instant::now();
    while staging.exists() {
        assert!(
            start.elapsed() < Duration::from_secs(30),
            "the dead run's staging is never removed"
        );
        std::thread::sleep(Duration::from_millis(10));
    }
    wait_for_staging(&out, &mut child);
    std::thread::sleep(Duration::from_millis(300));
    signal(&child, "INT");
    let o = child.wait_with_output().unwrap();
    let err = stderr(&o);
    assert_eq!(o.status.code(), Some(130), "{err}");
    assert!(err.contains("is left as it was"), "{err}");
    // The restart it prints runs into the same folder, so it keeps --force.
    assert!(err.contains("--hours 400 --force --out "), "{err}");
    assert_eq!(snapshot(&out), before, "Ctrl-C changed the previous run");
    assert_eq!(hidden_beside(&out), Vec::<PathBuf>::new(), "staging left");
}

#[test]
fn a_kill_between_the_renames_is_repaired_by_the_next_run() {
    let dir = TempDir::new("swap-between");
    let out = dir.path().join("out");
    let before = complete_run(&out);
    // A process that is gone: its pid names the leftovers.
    let mut gone = Command::new("true").spawn().unwrap();
    let pid = gone.id();
    gone.wait().unwrap();
    // What a kill after "old aside" and before "new in" leaves.
    let aside = dir.path().join(format!(".out.old.{pid}.00000000000000aa"));
    let staged = dir.path().join(format!(".out.run.{pid}.00000000000000bb"));
    fs::rename(&out, &aside).unwrap();
    fs::create_dir(&staged).unwrap();
    fs::write(staged.join("events.csv"), "ts,event\n").unwrap();
    // The same run again: it restores the old run first (then overwrites
    // it whole with the same bytes, as a re-run of the same seed does).
    let o = fleetsim()
        .args([
            "run",
            "--hours",
            "2",
            "--quiet",
            "--out",
            out.to_str().unwrap(),
        ])
        .output()
        .unwrap();
    let err = stderr(&o);
    assert!(o.status.success(), "{err}");
    assert!(err.contains("restored the previous run"), "{err}");
    assert_eq!(snapshot(&out), before);
    assert_eq!(hidden_beside(&out), Vec::<PathBuf>::new());
    // Restored, it is still a complete run of its own: another seed is refused.
    let o = fleetsim()
        .args([
            "run",
            "--hours",
            "2",
            "--seed",
            "2",
            "--out",
            out.to_str().unwrap(),
        ])
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
}

#[test]
fn a_folder_holding_other_files_is_refused_before_any_work() {
    let dir = TempDir::new("swap-foreign");
    let out = dir.path().join("out");
    fs::create_dir(&out).unwrap();
    fs::write(out.join("notes.txt"), "mine").unwrap();
    let o = fleetsim()
        .args(["run", "--hours", "2", "--out", out.to_str().unwrap()])
        .output()
        .unwrap();
    let err = stderr(&o);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(
        err.contains("notes.txt") && err.contains("another --out"),
        "{err}"
    );
    assert_eq!(err.trim_end().lines().count(), 1, "{err}");
    assert_eq!(fs::read_to_string(out.join("notes.txt")).unwrap(), "mine");
    // The current directory cannot be swapped out from under the shell.
    let o = fleetsim()
        .current_dir(&out)
        .args(["run", "--hours", "2", "--out", "."])
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
}
