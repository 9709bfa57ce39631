//! Bad input never panics: `fleetsim` exits with code 2 and one line on
//! stderr that names the file (and line, when there is one) and the key.

mod common;

use common::TempDir;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// Exit code for bad input (src/cli/mod.rs `EXIT_INPUT`).
const EXIT_INPUT: i32 = 2;

/// A run that takes longer than this on bad input is a hang, not a check.
const TIMEOUT: Duration = Duration::from_secs(10);

struct Outcome {
    code: Option<i32>,
    stdout: String,
    stderr: String,
}

/// Runs `fleetsim ARGS` in `dir`, killing it if it has not finished in `TIMEOUT`.
fn fleetsim(dir: &Path, args: &[&str]) -> Outcome {
    let mut child = Command::new(env!("CARGO_BIN_EXE_fleetsim"))
        .args(args)
        .current_dir(dir)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn fleetsim");
    let start = Instant::now();
    while child.try_wait().expect("wait").is_none() {
        if start.elapsed() > TIMEOUT {
            child.kill().expect("kill a hung fleetsim");
            let _ = child.wait();
            panic!("fleetsim {args:?} still running after {TIMEOUT:?}: a hang on bad input");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    let o = child.wait_with_output().expect("collect output");
    Outcome {
        code: o.status.code(),
        stdout: String::from_utf8_lossy(&o.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&o.stderr).into_owned(),
    }
}

/// One bad input: a scenario file's contents (or none: the embedded
/// default), the arguments after `run`, and what the message must name.
struct Case {
    name: &'static str,
    file: Option<&'static [u8]>,
    args: &'static [&'static str],
    /// Substrings the one-line message must contain (besides the origin).
    names: &'static [&'static str],
}

const CASES: &[Case] = &[
    Case {
        name: "malformed TOML",
        file: Some(b"[policy\ncooldown_s = 1\n"),
        args: &[],
        names: &[":1:"],
    },
    Case {
        name: "malformed value",
        file: Some(b"[policy]\ncooldown_s = = 1\n"),
        args: &[],
        names: &[":2:"],
    },
    Case {
        name: "unknown key",
        file: Some(b"[policy]\ncooldwn_s = 1\n"),
        args: &[],
        names: &[":2:", "policy.cooldwn_s"],
    },
    Case {
        name: "negative cooldown",
        file: Some(b"[policy]\ncooldown_s = -1\n"),
        args: &[],
        names: &[":2:", "policy.cooldown_s"],
    },
    Case {
        name: "jitter as large as the base limit",
        file: Some(b"[policy]\nbase_limit_mb = 500\njitter_mb = 500\n"),
        args: &[],
        names: &[":3:", "policy.jitter_mb"],
    },
    Case {
        name: "limit floor below the boot RSS",
        file: Some(b"[policy]\nbase_limit_mb = 400\njitter_mb = 50\n"),
        args: &[],
        names: &[":2:", "policy.base_limit_mb"],
    },
    Case {
        name: "no instances",
        file: Some(b"[fleet]\ninstances = 0\n"),
        args: &[],
        names: &[":2:", "fleet.instances"],
    },
    Case {
        name: "negative instances",
        file: Some(b"[fleet]\ninstances = -1\n"),
        args: &[],
        names: &[":2:", "fleet.instances"],
    },
    Case {
        name: "a NaN",
        file: Some(b"[policy]\ncooldown_s = nan\n"),
        args: &[],
        names: &[":2:", "policy.cooldown_s"],
    },
    Case {
        name: "an infinity",
        file: Some(b"[fleet]\ncontainer_mb = inf\n"),
        args: &[],
        names: &[":2:", "fleet.container_mb"],
    },
    Case {
        name: "a string where a number goes",
        file: Some(b"[policy]\ncooldown_s = \"x\"\n"),
        args: &[],
        names: &[":2:", "policy.cooldown_s"],
    },
    Case {
        name: "an unknown variant",
        file: Some(b"[workload]\nprofile = \"weekly\"\n"),
        args: &[],
        names: &[":2:", "workload.profile"],
    },
    Case {
        name: "a series file that does not exist",
        file: Some(b"[workload]\nprofile = \"series\"\nseries_csv = \"nope.csv\"\n"),
        args: &[],
        names: &["workload.series_csv", "nope.csv"],
    },
    Case {
        name: "binary garbage",
        file: Some(b"\x00\xff\xfe\x9c\x80\x01garbage\xc3\x28\n\x00"),
        args: &[],
        names: &["UTF-8"],
    },
    Case {
        name: "a sampling tick that rounds to zero",
        file: Some(b"[policy]\ntick_s = 1e-9\n"),
        args: &[],
        names: &[":2:", "policy.tick_s"],
    },
    Case {
        name: "a timeline step that rounds to zero",
        file: Some(b"[run]\ntimeline_step_s = 1e-9\n"),
        args: &[],
        names: &[":2:", "run.timeline_step_s"],
    },
    Case {
        name: "--set without =",
        file: None,
        args: &["--set", "policy.cooldown_s"],
        names: &["--set", "policy.cooldown_s"],
    },
    Case {
        name: "--set with an empty key",
        file: None,
        args: &["--set", "=5"],
        names: &["--set", "dotted key"],
    },
    Case {
        name: "--set an invalid value",
        file: None,
        args: &["--set", "policy.cooldown_s=-5"],
        names: &["<embedded render-2x3>", "policy.cooldown_s"],
    },
    Case {
        name: "--set an unknown key",
        file: None,
        args: &["--set", "policy.cooldwn_s=5"],
        names: &["<embedded render-2x3>", "policy.cooldwn_s", "--set"],
    },
    Case {
        name: "--set below a value",
        file: None,
        args: &["--set", "policy.cooldown_s.x=5"],
        names: &["<embedded render-2x3>", "policy.cooldown_s.x"],
    },
    Case {
        name: "an idle-worker choice the server does not have",
        file: Some(b"[fleet]\naccept = \"lifo\"\n"),
        args: &[],
        names: &[":2:", "accept", "longest_idle"],
    },
    Case {
        name: "racing workers in the aggregate mode",
        file: Some(b"[engine]\nmode = \"aggregate\"\n[fleet]\naccept = \"random\"\n"),
        args: &[],
        names: &["fleet.accept", "exact"],
    },
    Case {
        name: "--set on a file",
        file: Some(b"[policy]\ncooldown_s = 60\n"),
        args: &["--set", "fleet.instances=0"],
        names: &["fleet.instances"],
    },
    Case {
        name: "--hours negative",
        file: None,
        args: &["--hours=-1"],
        names: &["run.duration_h"],
    },
    Case {
        name: "--hours NaN",
        file: None,
        args: &["--hours", "nan"],
        names: &["run.duration_h"],
    },
];

/// Checks one failed run: exit 2, nothing on stdout, one line on stderr
/// naming everything in `names`, no panic, no output directory.
fn assert_input_error(what: &str, o: &Outcome, names: &[&str], out: &Path) {
    let context = format!("{what}: stderr {:?}", o.stderr);
    assert_eq!(o.code, Some(EXIT_INPUT), "{context}");
    assert!(!o.stderr.contains("panicked"), "{context}");
    assert_eq!(o.stderr.lines().count(), 1, "{context}");
    assert!(o.stderr.starts_with("error: "), "{context}");
    for n in names {
        assert!(o.stderr.contains(n), "{context}: does not name {n:?}");
    }
    assert!(o.stdout.is_empty(), "{what}: stdout {:?}", o.stdout);
    assert!(!out.exists(), "{what}: bad input created {}", out.display());
}

#[test]
fn bad_input_exits_2_with_one_line_naming_file_and_key() {
    let dir = TempDir::new("cli-errors");
    for (k, case) in CASES.iter().enumerate() {
        let out = dir.path().join(format!("out{k}"));
        let file = format!("case{k}.toml");
        let mut args: Vec<&str> = vec!["run"];
        let mut names: Vec<&str> = case.names.to_vec();
        if let Some(bytes) = case.file {
            std::fs::write(dir.path().join(&file), bytes).unwrap();
            args.push(&file);
            names.push(&file);
        }
        args.extend(case.args);
        let out_s = out.to_string_lossy().into_owned();
        args.extend(["--out", &out_s]);
        let o = fleetsim(dir.path(), &args);
        assert_input_error(case.name, &o, &names, &out);
    }
}

#[test]
fn a_missing_file_is_named() {
    let dir = TempDir::new("cli-missing");
    let missing = dir.path().join("no-such-scenario.toml");
    let missing_s = missing.to_string_lossy().into_owned();
    let out = dir.path().join("out");
    let o = fleetsim(
        dir.path(),
        &["run", &missing_s, "--out", &out.to_string_lossy()],
    );
    assert_input_error("missing file", &o, &[&missing_s, "cannot read"], &out);
    // A directory where a file should be.
    let d = dir.path().to_string_lossy().into_owned();
    let o = fleetsim(dir.path(), &["run", &d, "--out", &out.to_string_lossy()]);
    assert_input_error("a directory", &o, &[&d], &out);
}

#[test]
fn scenario_show_reports_the_same_errors() {
    let dir = TempDir::new("cli-show");
    std::fs::write(dir.path().join("bad.toml"), "[policy]\ncooldwn_s = 1\n").unwrap();
    let o = fleetsim(dir.path(), &["scenario", "show", "bad.toml"]);
    let never = dir.path().join("never-created");
    assert_input_error(
        "scenario show",
        &o,
        &["bad.toml:2:", "policy.cooldwn_s"],
        &never,
    );
    // And a good one prints a scenario that loads back.
    let o = fleetsim(
        dir.path(),
        &["scenario", "show", "--set", "policy.cooldown_s=60"],
    );
    assert_eq!(o.code, Some(0), "{}", o.stderr);
    assert!(o.stdout.contains("cooldown_s = 60"), "{}", o.stdout);
    std::fs::write(dir.path().join("shown.toml"), &o.stdout).unwrap();
    let out = dir.path().join("out");
    let o = fleetsim(
        dir.path(),
        &[
            "run",
            "shown.toml",
            "--hours",
            "0.1",
            "--out",
            &out.to_string_lossy(),
        ],
    );
    assert_eq!(o.code, Some(0), "{}", o.stderr);
    assert!(out.join("summary.json").exists());
}

/// Seed ranges end at the last seed there is: `saturate --seed MAX --seeds
/// 1` runs (it was refused), `compare --first-seed MAX-1 --seeds 3` is
/// refused naming the flag (it ran one seed and exited 0).
#[test]
fn seed_ranges_reach_the_last_seed_and_no_further() {
    let dir = TempDir::new("cli-errors-seeds");
    let max = u64::MAX.to_string();
    let out = dir.path().join("sat");
    let o = fleetsim(
        dir.path(),
        &[
            "saturate",
            "--seed",
            &max,
            "--seeds",
            "1",
            "--hours",
            "0.05",
            "--out",
            out.to_str().unwrap(),
        ],
    );
    assert_eq!(o.code, Some(0), "{}", o.stderr);
    let out = dir.path().join("cmp");
    let before = (u64::MAX - 1).to_string();
    let o = fleetsim(
        dir.path(),
        &[
            "compare",
            "default",
            "default",
            "--seeds",
            "3",
            "--first-seed",
            &before,
            "--hours",
            "0.05",
            "--out",
            out.to_str().unwrap(),
        ],
    );
    assert_input_error("compare past the last seed", &o, &["--first-seed"], &out);
}
