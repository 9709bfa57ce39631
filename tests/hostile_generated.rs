//! The generated hostile corpus (issue 17): `tests/hostile/generate.py`
//! writes several hundred broken files under `tests/hostile/generated/`
//! (every default scenario key given the wrong type, an absurd number, a
//! typo and a duplicate; sweep files broken key by key; every recording
//! format with a bad cell, a cut line, a NUL, a huge field, bad dates) and
//! `cases.tsv`, each case's command, exit code and the fragments its
//! message must hold: the file's name, the line and the key or column.
//! Each runs here into a fresh `--out`: the exit code as expected, one line
//! on stderr for a refusal, no panic, and fast. A case's command may be a
//! template (`sweep FILE --threads 0 --out OUT`; flags on every
//! subcommand). Named pipes, symbolic links, directories and unreadable
//! files cannot be committed, so `special/NAME.HOW` cases are made here.

mod common;

use common::TempDir;
use std::path::Path;
use std::process::{Command, Output};
use std::time::Duration;

/// A refusal comes before any work; an accepted recording is analysed in
/// well under this.
const FAST: Duration = Duration::from_secs(10);

fn fleetsim(cwd: &Path, args: &[&str]) -> (Output, Duration) {
    common::fleetsim_timed(Some(cwd), args, &[])
}

/// What is wrong with one outcome, if anything.
fn judge(out: &Output, took: Duration, code: i32, stream: &str, frags: &[&str]) -> Option<String> {
    let err = String::from_utf8_lossy(&out.stderr);
    let text = if stream == "stdout" && out.status.code() == Some(0) {
        String::from_utf8_lossy(&out.stdout).into_owned()
    } else {
        err.clone().into_owned()
    };
    let mut wrong = Vec::new();
    if out.status.code() != Some(code) {
        wrong.push(format!("exit {:?}, expected {code}", out.status.code()));
    }
    if err.contains("panicked") {
        wrong.push("a panic".into());
    }
    if code == 2 && err.trim_end().lines().count() != 1 {
        wrong.push("not one line".into());
    }
    for f in frags {
        if !text.contains(f) {
            wrong.push(format!("no `{f}`"));
        }
    }
    if took > FAST {
        wrong.push(format!("took {took:?}"));
    }
    (!wrong.is_empty()).then(|| format!("{}: {}", wrong.join("; "), err.trim_end()))
}

/// The arguments of a case: `command FILE --out OUT` when the command is
/// one word, else the command's words with `FILE` and `OUT` put in.
fn arguments(command: &str, file: &Path, dest: &Path) -> Vec<String> {
    let (file, dest) = (file.display().to_string(), dest.display().to_string());
    if !command.contains(' ') && file != "-" {
        return vec![command.into(), file, "--out".into(), dest];
    }
    command
        .split(' ')
        .map(|w| match w {
            "FILE" => file.clone(),
            "OUT" => dest.clone(),
            w => w.to_string(),
        })
        .collect()
}

/// How a case's command is run: as the test's own user, or (a chmod 000
/// file under root, who reads any file) as the unprivileged `nobody`.
#[derive(Clone, Copy, PartialEq)]
enum As {
    Me,
    Nobody,
}

/// The uid and gid `nobody` has on Debian (and most systems).
const NOBODY: &str = "65534";

/// Runs the binary as `nobody` through util-linux's `setpriv` (in every
/// Debian, root's CI included), with the binary copied into `dir` (which
/// `nobody` can reach) in case the build's own folder is closed to others.
fn fleetsim_as_nobody(
    dir: &Path,
    cwd: &Path,
    args: &[&str],
) -> std::io::Result<(Output, Duration)> {
    let exe = dir.join("fleetsim");
    if !exe.exists() {
        std::fs::copy(env!("CARGO_BIN_EXE_fleetsim"), &exe)?;
    }
    let start = std::time::Instant::now();
    let out = Command::new("setpriv")
        .args([
            &format!("--reuid={NOBODY}"),
            &format!("--regid={NOBODY}"),
            "--clear-groups",
            "--",
        ])
        .arg(&exe)
        .args(args)
        .current_dir(cwd)
        .env_remove("FLEETSIM_MAX_INPUT_MB")
        .output()?;
    Ok((out, start.elapsed()))
}

/// Whether this test can drop to `nobody` and run the binary there: root
/// with `setpriv`. `Err` says why not.
fn can_run_as_nobody(dir: &Path) -> Result<(), String> {
    match fleetsim_as_nobody(dir, dir, &["--version"]) {
        Ok((o, _)) if o.status.success() => Ok(()),
        Ok((o, _)) => Err(format!(
            "setpriv --reuid={NOBODY} could not run fleetsim ({:?}): {}",
            o.status.code(),
            String::from_utf8_lossy(&o.stderr).trim()
        )),
        Err(e) => Err(format!("setpriv could not be run: {e}")),
    }
}

/// Makes a `special/NAME.HOW` case's file in `dir` as `NAME`: a symbolic
/// link to what the file holds, a directory, a file no one may read, a
/// plain file. A file made unreadable that this process still reads (it
/// runs as root) is read as `nobody`.
fn make_special(spec: &Path, dir: &Path) -> (std::path::PathBuf, As) {
    let name = spec.file_stem().unwrap();
    let how = spec.extension().unwrap().to_str().unwrap();
    let held = std::fs::read(spec).unwrap();
    let target = dir.join(name);
    match how {
        "symlink" => {
            let to = String::from_utf8(held).unwrap();
            std::os::unix::fs::symlink(to, &target).unwrap();
        }
        "mkdir" => std::fs::create_dir(&target).unwrap(),
        "file" => std::fs::write(&target, held).unwrap(),
        "chmod000" => {
            use std::os::unix::fs::PermissionsExt;
            std::fs::write(&target, held).unwrap();
            std::fs::set_permissions(&target, std::fs::Permissions::from_mode(0o000)).unwrap();
            if std::fs::read(&target).is_ok() {
                return (target, As::Nobody);
            }
        }
        other => panic!("{}: no such kind `{other}`", spec.display()),
    }
    (target, As::Me)
}

#[test]
fn generated_corpus_exits_as_expected_naming_file_line_and_key() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/hostile/generated");
    let manifest = std::fs::read_to_string(root.join("cases.tsv")).expect("cases.tsv");
    let out = TempDir::new("hostile-generated");
    let made = out.path().join("special");
    std::fs::create_dir(&made).unwrap();
    // `nobody` writes the unreadable cases' output folders here.
    let open = out.path().join("open");
    std::fs::create_dir(&open).unwrap();
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&open, std::fs::Permissions::from_mode(0o777)).unwrap();
    }
    let mut failures = Vec::new();
    let (mut n, mut as_nobody) = (0, 0);
    let mut cannot_drop = None;
    for line in manifest.lines().filter(|l| !l.starts_with('#')) {
        let cells: Vec<&str> = line.split('\t').collect();
        let [command, rel, code, stream, frags @ ..] = &cells[..] else {
            panic!("cases.tsv: bad line {line}");
        };
        let mut dest = out.path().join(n.to_string());
        n += 1;
        // A case's folder: its file's (flags run beside flags/'s files).
        let (file, cwd, who) = if *rel == "-" {
            (Path::new("-").to_path_buf(), root.join("flags"), As::Me)
        } else if rel.starts_with("special/") {
            let (f, who) = make_special(&root.join(rel), &made);
            (f, made.clone(), who)
        } else {
            let f = root.join(rel);
            let cwd = f.parent().unwrap().to_path_buf();
            (f, cwd, As::Me)
        };
        if who == As::Nobody {
            dest = open.join(n.to_string());
        }
        let args = arguments(command, &file, &dest);
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        let (o, took) = match who {
            As::Me => fleetsim(&cwd, &args),
            As::Nobody => {
                as_nobody += 1;
                if let Err(why) = can_run_as_nobody(&open) {
                    cannot_drop = Some(why);
                    continue;
                }
                fleetsim_as_nobody(&open, &cwd, &args).expect("setpriv ran a moment ago")
            }
        };
        if let Some(why) = judge(&o, took, code.parse().unwrap(), stream, frags) {
            failures.push(format!("{command} {rel}: {why}"));
        }
    }
    assert!(
        n >= 1000,
        "only {n} generated cases: run tests/hostile/generate.py"
    );
    // Root reads a chmod 000 file: those cases ran as `nobody`. Where no
    // unprivileged user can be had (no `setpriv`, no CAP_SETUID: a
    // container's root without it), they are skipped, and said so.
    if let Some(why) = cannot_drop {
        eprintln!("{as_nobody} unreadable-file cases skipped: running as root and {why}");
    }
    assert!(
        failures.is_empty(),
        "{} of {n} cases failed:\n{}",
        failures.len(),
        failures.join("\n")
    );
}

/// A named pipe with no writer is read without waiting (empty: refused),
/// as a scenario, an `extends`, a `series_csv` and a recording.
#[test]
fn a_named_pipe_with_no_writer_is_refused_not_waited_on() {
    let dir = TempDir::new("hostile-fifo");
    let d = dir.path();
    let made = Command::new("mkfifo").arg(d.join("pipe")).status();
    if !made.is_ok_and(|s| s.success()) {
        eprintln!("no mkfifo here: skipped");
        return;
    }
    std::fs::write(d.join("ext.toml"), "extends = \"pipe\"\n").unwrap();
    std::fs::write(
        d.join("series.toml"),
        "[workload]\nprofile = \"series\"\nseries_csv = \"pipe\"\n",
    )
    .unwrap();
    for (cmd, file, frag) in [
        ("run", "pipe", "no data"),
        ("run", "ext.toml", "key `extends`"),
        ("run", "series.toml", "key `workload.series_csv`"),
        ("replay", "pipe", "empty"),
        ("sweep", "pipe", "no data"),
    ] {
        let (o, took) = fleetsim(d, &[cmd, file, "--out", "out"]);
        if let Some(why) = judge(&o, took, 2, "stderr", &[file, frag]) {
            panic!("{cmd} {file}: {why}");
        }
    }
}

/// `fleetsim ... | head`: a closed stdout ends the command quietly (the
/// shell's SIGPIPE status), never with a panic message. `true` exits at
/// once, long before the run prints its table into the pipe.
#[test]
fn a_closed_stdout_is_no_panic() {
    let dir = TempDir::new("hostile-pipe");
    let o = Command::new("sh")
        .current_dir(dir.path())
        .args([
            "-c",
            &format!(
                "{} run --hours 2 --out o | true",
                env!("CARGO_BIN_EXE_fleetsim")
            ),
        ])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(!err.contains("panicked"), "{err}");
}
