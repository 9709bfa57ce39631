//! The hostile-input corpus (issue 17): files under tests/hostile/ made to
//! break the limits (a grid of 10^12 points, a leak of 1e308 MB,
//! `extends = "/dev/zero"`, a mistyped sweep key), and the flags and
//! environment that go with them. Each exits 2 (or 1 for a refused thread)
//! with one line naming the file and key, fast, and never panics. A file's
//! first line, `# expect: ...`, is a fragment of its message.

mod common;

use common::TempDir;
use std::path::{Path, PathBuf};
use std::process::Output;
use std::time::Duration;

/// Every refusal here is checked before work starts: well under this.
const FAST: Duration = Duration::from_secs(10);

fn corpus(sub: &str) -> Vec<PathBuf> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/hostile")
        .join(sub);
    let mut files: Vec<_> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    files.sort();
    files
}

fn fleetsim(args: &[&str], env: &[(&str, &str)]) -> (Output, Duration) {
    common::fleetsim_timed(None, args, env)
}

/// Exit `code`, one line on stderr holding every fragment, no panic, fast.
fn refused(what: &str, (out, took): &(Output, Duration), code: i32, fragments: &[&str]) {
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(code), "{what}: stderr {err}");
    assert!(!err.contains("panicked"), "{what} panicked: {err}");
    assert_eq!(
        err.trim_end().lines().count(),
        1,
        "{what}: not one line: {err}"
    );
    for f in fragments {
        assert!(err.contains(f), "{what}: expected `{f}` in: {err}");
    }
    assert!(*took < FAST, "{what}: took {took:?}");
}

fn expectation(file: &Path) -> String {
    let text = String::from_utf8_lossy(&std::fs::read(file).unwrap()).into_owned();
    let first = text.lines().next().unwrap_or("");
    first
        .strip_prefix("# expect: ")
        .unwrap_or_else(|| panic!("{}: no expect line", file.display()))
        .to_string()
}

/// Runs every file of `sub` under each of `commands`.
fn check_corpus(sub: &str, commands: &[&str]) -> usize {
    let out = TempDir::new("hostile");
    let files = corpus(sub);
    for f in &files {
        let expect = expectation(f);
        let name = f.file_name().unwrap().to_string_lossy().into_owned();
        for cmd in commands {
            let args = [
                *cmd,
                f.to_str().unwrap(),
                "--out",
                out.path().to_str().unwrap(),
            ];
            let what = format!("{cmd} {name}");
            refused(&what, &fleetsim(&args, &[]), 2, &[&name, &expect]);
        }
    }
    files.len()
}

#[test]
fn hostile_scenarios_are_refused_on_one_line() {
    assert!(check_corpus("scenarios", &["run"]) >= 10);
}

#[test]
fn hostile_sweeps_are_refused_by_sweep_and_optimise() {
    assert!(check_corpus("sweeps", &["sweep", "optimise"]) >= 20);
}

#[test]
fn hostile_recordings_are_refused_naming_file_and_line() {
    // Each file's expected message fragment sits beside it in NAME.expect
    // (a recording has no comment syntax).
    let files: Vec<PathBuf> = corpus("recordings")
        .into_iter()
        .filter(|f| f.extension().is_some_and(|e| e != "expect"))
        .collect();
    assert!(files.len() >= 15, "{} recordings", files.len());
    let out = TempDir::new("hostile-recordings");
    for f in &files {
        let mut expect_path = f.clone().into_os_string();
        expect_path.push(".expect");
        let expect = std::fs::read_to_string(&expect_path)
            .unwrap_or_else(|_| panic!("{}: no .expect beside it", f.display()));
        let name = f.file_name().unwrap().to_string_lossy().into_owned();
        let args = [
            "replay",
            f.to_str().unwrap(),
            "--out",
            out.path().to_str().unwrap(),
        ];
        refused(
            &format!("replay {name}"),
            &fleetsim(&args, &[]),
            2,
            &[&name, expect.trim_end()],
        );
    }
}

#[test]
fn a_long_field_is_not_echoed_back_whole() {
    // A 5 MB field: the error quotes at most a screen of it, on one line,
    // and a server log's unparsed line keeps a short reason in the report
    // and in analysis.json.
    let dir = TempDir::new("hostile-long-field");
    let csv = dir.path().join("long.csv");
    let field = "9".repeat(5_000_000);
    std::fs::write(
        &csv,
        format!(
            "ts,event,instance,worker,rss_mb,limit_mb,requests\n\
             100,worker_recycled,a,w1,500,490,{field}\n"
        ),
    )
    .unwrap();
    let out_dir = dir.path().join("out");
    let (out, took) = fleetsim(
        &[
            "replay",
            csv.to_str().unwrap(),
            "--out",
            out_dir.to_str().unwrap(),
        ],
        &[],
    );
    refused(
        "replay long.csv",
        &(out.clone(), took),
        2,
        &["long.csv:2: column `requests`", "more characters)"],
    );
    assert!(
        out.stderr.len() < 2_000,
        "{} bytes of error",
        out.stderr.len()
    );

    let log = dir.path().join("long.log");
    std::fs::write(
        &log,
        format!(
            "20:15:38 RECYCLE inst-A rss=564 lim=507 after=858req\n\
             20:17:02 RECYCLE inst-A rss=5{field} lim=507 after=858req\n"
        ),
    )
    .unwrap();
    let (out, _) = fleetsim(
        &[
            "replay",
            log.to_str().unwrap(),
            "--out",
            out_dir.to_str().unwrap(),
        ],
        &[],
    );
    let report = String::from_utf8_lossy(&out.stdout);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(report.contains("line 2:"), "{report}");
    assert!(
        out.stdout.len() < 20_000,
        "{} bytes of report",
        out.stdout.len()
    );
    let json = std::fs::metadata(out_dir.join("analysis.json"))
        .unwrap()
        .len();
    assert!(json < 40_000, "{json} bytes of analysis.json");
}

#[test]
fn unknown_event_kinds_are_listed_with_their_lines() {
    let dir = TempDir::new("hostile-unknown");
    let path = dir.path().join("unknown.csv");
    std::fs::write(
        &path,
        "ts,event,instance,worker,rss_mb,limit_mb,requests\n\
         100,worker_recycled,a,w1,500,490,1000\n\
         150,frobnicate,a,w1,500,490,1000\n\
         170,frobnicate,a,w2,500,490,1000\n",
    )
    .unwrap();
    let (o, _) = fleetsim(
        &[
            "replay",
            path.to_str().unwrap(),
            "--out",
            dir.path().join("out").to_str().unwrap(),
        ],
        &[],
    );
    assert_eq!(o.status.code(), Some(0));
    let text = String::from_utf8_lossy(&o.stdout);
    assert!(
        text.contains("2 `frobnicate` events of an unknown kind: kept, not analysed (at ")
            && text.contains("unknown.csv:3, ")
            && text.contains("unknown.csv:4)"),
        "{text}"
    );
}

/// A sweep that would run: two configurations of a few minutes each.
const SMALL: &str = "hours = 0.05\n[[param]]\nkey = \"policy.cooldown_s\"\nvalues = [60.0, 120.0]\n\
                     [[objective]]\nmetric = \"oom_kills\"\n";

fn small_sweep(dir: &TempDir) -> String {
    let p = dir.path().join("small.toml");
    std::fs::write(&p, SMALL).unwrap();
    p.to_string_lossy().into_owned()
}

#[test]
fn absurd_thread_counts_name_the_flag() {
    let dir = TempDir::new("hostile-threads");
    let sweep = small_sweep(&dir);
    let out = dir.path().join("out");
    for n in ["0", "4097", "4294967296", "18446744073709551615"] {
        let r = fleetsim(
            &[
                "sweep",
                &sweep,
                "--threads",
                n,
                "--out",
                out.to_str().unwrap(),
            ],
            &[],
        );
        refused(&format!("--threads {n}"), &r, 2, &["--threads", n, "4096"]);
        assert!(!out.join("trials.csv").exists(), "--threads {n} ran trials");
    }
}

#[test]
fn more_threads_than_cores_are_capped_with_a_note() {
    let dir = TempDir::new("hostile-cap");
    let sweep = small_sweep(&dir);
    let out = dir.path().join("out");
    let (o, _) = fleetsim(
        &[
            "sweep",
            &sweep,
            "--threads",
            "4096",
            "--out",
            out.to_str().unwrap(),
        ],
        &[],
    );
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(o.status.success(), "{err}");
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    if cores < 4096 {
        assert!(
            err.contains(&format!("--threads 4096 capped to the {cores}")),
            "{err}"
        );
    }
}

/// A thread the system refuses (here: a stack no machine can map) is a
/// failed run, exit 1 with a message, never a panic.
#[test]
fn a_refused_worker_thread_is_an_error_not_a_panic() {
    let dir = TempDir::new("hostile-spawn");
    let sweep = small_sweep(&dir);
    let out = dir.path().join("out");
    let (o, _) = fleetsim(
        &[
            "sweep",
            &sweep,
            "--threads",
            "1",
            "--out",
            out.to_str().unwrap(),
        ],
        &[("RUST_MIN_STACK", "1099511627776000")],
    );
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(1), "{err}");
    assert!(!err.contains("panicked"), "{err}");
    // The sweep's banner, then the one error line.
    let last = err.trim_end().lines().last().unwrap_or("");
    assert!(
        last.starts_with("error: cannot start a worker thread"),
        "{err}"
    );
}

#[test]
fn unbounded_inputs_stop_at_the_limit() {
    let dir = TempDir::new("hostile-limit");
    let out = dir.path().join("out");
    let out = out.to_str().unwrap();
    let r = fleetsim(&["run", "/dev/zero", "--out", out], &[]);
    refused(
        "run /dev/zero",
        &r,
        2,
        &[
            "/dev/zero",
            "input limit of 64 MiB",
            "FLEETSIM_MAX_INPUT_MB",
        ],
    );
    // The limit is the environment's: a 2 MiB scenario (comments) under 1 MiB.
    let big = dir.path().join("big.toml");
    std::fs::write(&big, "# padding\n".repeat(210_000)).unwrap();
    let big = big.to_str().unwrap();
    let r = fleetsim(
        &["run", big, "--out", out],
        &[("FLEETSIM_MAX_INPUT_MB", "1")],
    );
    refused(
        "a 2 MiB file under 1 MiB",
        &r,
        2,
        &["big.toml", "input limit of 1 MiB"],
    );
    for bad in ["0", "abc", "-1", "99999999999"] {
        let r = fleetsim(
            &["run", big, "--out", out],
            &[("FLEETSIM_MAX_INPUT_MB", bad)],
        );
        refused(
            &format!("limit {bad}"),
            &r,
            2,
            &["FLEETSIM_MAX_INPUT_MB", bad],
        );
    }
    // Under a limit it fits, the same file is a scenario (all comments).
    let (o, _) = fleetsim(
        &["scenario", "show", big],
        &[("FLEETSIM_MAX_INPUT_MB", "3")],
    );
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(o.status.success(), "{err}");
}

/// A report's input that never ends (a link to /dev/zero planted in a run
/// directory) stops at the limit too.
#[test]
fn a_report_input_that_never_ends_is_refused() {
    let dir = TempDir::new("hostile-report");
    std::fs::write(dir.path().join("summary.json"), "{}").unwrap();
    std::fs::write(dir.path().join("events.csv"), "ts,event\n").unwrap();
    std::os::unix::fs::symlink("/dev/zero", dir.path().join("timeline.csv")).unwrap();
    let r = fleetsim(&["report", dir.path().to_str().unwrap()], &[]);
    refused(
        "report /dev/zero",
        &r,
        2,
        &["timeline.csv", "input limit of 64 MiB"],
    );
}

#[test]
fn a_printed_reproduce_command_runs_as_printed() {
    // A scenario path with a space and a quote, and a --set value with a
    // space: the reproduce line quotes them, and a shell running it makes
    // the same run.
    let dir = TempDir::new("hostile-reproduce");
    let scenario = dir.path().join("it's my fleet.toml");
    std::fs::write(
        &scenario,
        "extends = \"render-2x3.toml\"\nname = \"quoted\"\n",
    )
    .unwrap();
    std::fs::copy(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("scenarios/render-2x3.toml"),
        dir.path().join("render-2x3.toml"),
    )
    .unwrap();
    let out1 = dir.path().join("first");
    let (o, _) = fleetsim(
        &[
            "run",
            scenario.to_str().unwrap(),
            "--hours",
            "0.05",
            "--set",
            "policy.cooldown_s=60",
            "--out",
            out1.to_str().unwrap(),
        ],
        &[],
    );
    assert_eq!(
        o.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    let text = String::from_utf8_lossy(&o.stdout);
    let line = text
        .lines()
        .find_map(|l| l.strip_prefix("reproduce with: "))
        .unwrap_or_else(|| panic!("no reproduce line in {text}"));
    assert!(line.contains("'\\''"), "the quote is quoted: {line}");
    let out2 = dir.path().join("second");
    let cmd = format!(
        "{} --out '{}'",
        line.replacen("fleetsim", env!("CARGO_BIN_EXE_fleetsim"), 1),
        out2.display()
    );
    let o2 = std::process::Command::new("sh")
        .args(["-c", &cmd])
        .output()
        .unwrap();
    assert_eq!(
        o2.status.code(),
        Some(0),
        "{cmd}: {}",
        String::from_utf8_lossy(&o2.stderr)
    );
    let read = |d: &Path| std::fs::read_to_string(d.join("summary.json")).unwrap();
    assert_eq!(
        read(&out1),
        read(&out2),
        "the printed command reproduces the run"
    );
}

#[test]
fn recorded_names_cannot_drive_the_terminal() {
    // An instance named with an ANSI escape and a right-to-left override.
    let dir = TempDir::new("hostile-terminal");
    let path = dir.path().join("esc.csv");
    std::fs::write(
        &path,
        "ts,event,instance,worker,rss_mb,limit_mb,requests\n\
         100,worker_recycled,\"a\u{1b}[2Jb\u{202e}c\",w1,500,490,1000\n",
    )
    .unwrap();
    let (o, _) = fleetsim(
        &[
            "replay",
            path.to_str().unwrap(),
            "--out",
            dir.path().join("out").to_str().unwrap(),
        ],
        &[],
    );
    assert_eq!(o.status.code(), Some(0));
    let text = String::from_utf8_lossy(&o.stdout);
    assert!(
        !text.contains('\u{1b}') && !text.contains('\u{202e}'),
        "{text}"
    );
    assert!(text.contains("a\\u{1b}[2Jb\\u{202e}c"), "{text}");
}

#[cfg(unix)]
#[test]
fn a_planted_symlink_is_never_written_through() {
    // Links where a run writes its outputs, pointing at a file outside:
    // the outputs replace the links; the target keeps its bytes.
    let dir = TempDir::new("hostile-symlink");
    let victim = dir.path().join("victim.txt");
    std::fs::write(&victim, "precious\n").unwrap();
    let out = dir.path().join("out");
    std::fs::create_dir_all(&out).unwrap();
    for name in [
        "summary.json",
        "events.csv",
        "timeline.csv",
        "scenario.toml",
    ] {
        std::os::unix::fs::symlink(&victim, out.join(name)).unwrap();
    }
    let (o, _) = fleetsim(
        // --force: the links' target reads as another run's scenario.toml.
        &[
            "run",
            "--hours",
            "0.05",
            "--force",
            "--out",
            out.to_str().unwrap(),
        ],
        &[],
    );
    assert_eq!(
        o.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    assert_eq!(std::fs::read_to_string(&victim).unwrap(), "precious\n");
    for name in [
        "summary.json",
        "events.csv",
        "timeline.csv",
        "scenario.toml",
    ] {
        let meta = std::fs::symlink_metadata(out.join(name)).unwrap();
        assert!(meta.file_type().is_file(), "{name} is still a link");
    }
}

/// `trials.csv` is written in place (appended row by row), not swapped in
/// whole: a link planted there, dangling before a fresh sweep or to a copy
/// of the rows before `--resume`, is refused (exit 2) and its target is
/// neither made nor written.
#[cfg(unix)]
#[test]
fn a_planted_link_as_trials_csv_is_refused_not_followed() {
    let dir = TempDir::new("hostile-trials-link");
    let sweep = dir.path().join("s.toml");
    std::fs::write(
        &sweep,
        "hours = 0.05\n[[param]]\nkey = \"policy.cooldown_s\"\nvalues = [60.0, 120.0]\n\
         [[objective]]\nmetric = \"oom_kills\"\n",
    )
    .unwrap();
    let (s, out) = (sweep.to_str().unwrap(), dir.path().join("out"));
    let o = out.to_str().unwrap();
    let trials = out.join("trials.csv");
    let link_refused = |args: &[&str], victim: &Path, before: Option<Vec<u8>>| {
        let (r, _) = fleetsim(args, &[]);
        let err = String::from_utf8_lossy(&r.stderr);
        assert_eq!(r.status.code(), Some(2), "{args:?}: {err}");
        assert!(
            err.contains("trials.csv: a symbolic link"),
            "{args:?}: {err}"
        );
        assert_eq!(
            std::fs::read(victim).ok(),
            before,
            "{args:?}: written through"
        );
    };
    // A fresh sweep: the dangling link's target is not created.
    std::fs::create_dir_all(&out).unwrap();
    let made = dir.path().join("made.csv");
    std::os::unix::fs::symlink(&made, &trials).unwrap();
    link_refused(&["sweep", s, "--out", o], &made, None);
    // A finished sweep's rows moved away and linked back: --resume refuses.
    std::fs::remove_file(&trials).unwrap();
    let (r, _) = fleetsim(&["sweep", s, "--out", o], &[]);
    assert_eq!(
        r.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&r.stderr)
    );
    let victim = dir.path().join("victim.csv");
    std::fs::rename(&trials, &victim).unwrap();
    let rows = std::fs::read(&victim).unwrap();
    std::os::unix::fs::symlink(&victim, &trials).unwrap();
    link_refused(
        &["sweep", s, "--out", o, "--resume"],
        &victim,
        Some(rows.clone()),
    );
    // The same rows cut mid-line (a kill): the cut is refused too.
    std::fs::write(&victim, &rows[..rows.len() - 3]).unwrap();
    link_refused(
        &["sweep", s, "--out", o, "--resume"],
        &victim,
        Some(rows[..rows.len() - 3].to_vec()),
    );
}

/// A value refused only in combination with another parameter's value
/// (a jitter of 200 MB is too wide for a 500 MB limit, not for 600 MB) is
/// no up-front refusal: the sweep runs, and the combinations the scenario
/// refuses are failed trials whose `error` column names the key.
#[test]
fn a_cross_key_combination_is_a_failed_trial_not_a_refusal() {
    let dir = TempDir::new("hostile-cross");
    let sweep = dir.path().join("cross.toml");
    std::fs::write(
        &sweep,
        "replications = 1\nhours = 0.05\n\
         [[param]]\nkey = \"policy.jitter_mb\"\nvalues = [40.0, 200.0]\n\
         [[param]]\nkey = \"policy.base_limit_mb\"\nvalues = [500.0, 600.0]\n\
         [[objective]]\nmetric = \"recycles\"\ndirection = \"minimize\"\n",
    )
    .unwrap();
    let out = dir.path().join("out");
    let (o, _) = fleetsim(
        &[
            "sweep",
            sweep.to_str().unwrap(),
            "--out",
            out.to_str().unwrap(),
        ],
        &[],
    );
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(o.status.success(), "{err}");
    let trials = std::fs::read_to_string(out.join("trials.csv")).unwrap();
    let failed: Vec<&str> = trials
        .lines()
        .filter(|l| l.contains("recycle at birth"))
        .collect();
    // Only 200 MB over a 500 MB limit (500 - 200 is below boot RSS) fails.
    assert_eq!(failed.len(), 1, "{trials}");
    assert!(failed[0].contains("policy.base_limit_mb"), "{}", failed[0]);
    // The same value alone against a base it can never fit is refused.
    std::fs::write(
        &sweep,
        "replications = 1\nhours = 0.05\n\
         [[param]]\nkey = \"policy.jitter_mb\"\nvalues = [40.0, 200.0]\n\
         [[param]]\nkey = \"policy.base_limit_mb\"\nvalues = [500.0, 520.0]\n\
         [[objective]]\nmetric = \"recycles\"\ndirection = \"minimize\"\n",
    )
    .unwrap();
    let r = fleetsim(
        &[
            "sweep",
            sweep.to_str().unwrap(),
            "--out",
            out.to_str().unwrap(),
        ],
        &[],
    );
    refused(
        "jitter 200 under every limit",
        &r,
        2,
        &[
            "cross.toml:4: key `param[0]`",
            "`policy.jitter_mb` = 200.0",
            "whatever the other parameters are",
        ],
    );
}
