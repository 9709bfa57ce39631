//! A closed pipe ends fleetsim quietly (`fleetsim run | head`): exit 141,
//! as a shell reports a process that SIGPIPE ended, with no panic on
//! standard error, the run's files complete (they are written before
//! anything is printed).

mod common;

use common::TempDir;
use std::process::{Command, Stdio};

/// Runs fleetsim with its standard output a pipe whose read end is already
/// closed, so its first print meets EPIPE: deterministic, unlike `| head`.
#[cfg(unix)]
fn into_closed_pipe(args: &[&str]) -> (std::process::ExitStatus, String) {
    let (reader, writer) = std::io::pipe().expect("a pipe");
    drop(reader);
    let o = Command::new(env!("CARGO_BIN_EXE_fleetsim"))
        .arg("--quiet")
        .args(args)
        .stdout(Stdio::from(writer))
        .stderr(Stdio::piped())
        .output()
        .expect("fleetsim starts");
    (o.status, String::from_utf8_lossy(&o.stderr).into_owned())
}

#[cfg(unix)]
#[test]
fn a_closed_pipe_ends_the_process_quietly_with_141() {
    let tmp = TempDir::new("pipe");
    let out = tmp.path().join("run");
    for args in [
        vec!["run", "--hours", "2", "--out", out.to_str().unwrap()],
        vec!["scenario", "show"],
    ] {
        let (status, err) = into_closed_pipe(&args);
        assert_eq!(status.code(), Some(141), "{args:?}: {status:?} {err}");
        assert!(!err.contains("panicked"), "{args:?}: {err}");
    }
    assert!(
        out.join("summary.json").exists(),
        "the run completed its files"
    );
}
