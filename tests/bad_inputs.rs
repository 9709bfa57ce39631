//! The bad-input corpus: every file under tests/bad_inputs/ makes the
//! binary exit 2 with one line naming the file and what its first line
//! (`# expect: ...`) says, and never panic.

use std::path::Path;
use std::process::Command;

fn check_dir(sub: &str, command: &str) -> usize {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/bad_inputs")
        .join(sub);
    let mut files: Vec<_> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    files.sort();
    for f in &files {
        let bytes = std::fs::read(f).unwrap();
        let first = String::from_utf8_lossy(&bytes)
            .lines()
            .next()
            .unwrap_or("")
            .to_string();
        let expect = first
            .strip_prefix("# expect: ")
            .unwrap_or_else(|| panic!("{}: no expect line", f.display()));
        let out_dir = std::env::temp_dir().join(format!("fleetsim-bad-{}", std::process::id()));
        let out = Command::new(env!("CARGO_BIN_EXE_fleetsim"))
            .args([
                command,
                f.to_str().unwrap(),
                "--out",
                out_dir.to_str().unwrap(),
            ])
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        let name = f.file_name().unwrap().to_string_lossy();
        assert_eq!(
            out.status.code(),
            Some(2),
            "{name}: exit {:?}, stderr {err}",
            out.status.code()
        );
        assert!(!err.contains("panicked"), "{name} panicked: {err}");
        assert_eq!(
            err.trim_end().lines().count(),
            1,
            "{name}: not one line: {err}"
        );
        assert!(
            err.contains(name.as_ref()),
            "{name}: the message does not name the file: {err}"
        );
        assert!(
            err.contains(expect),
            "{name}: expected `{expect}` in: {err}"
        );
        let _ = std::fs::remove_dir_all(&out_dir);
    }
    files.len()
}

/// Recordings cannot carry an `# expect:` line (it would be a bad row of
/// its own), so their expectations live here.
const RECORDINGS: [(&str, &str); 6] = [
    ("bad_number.csv", ":2: column `rss_mb`"),
    ("bad_ts.csv", ":3: column `ts`"),
    ("broken_json.jsonl", ":2: not a JSON object"),
    ("empty.csv", "no events"),
    ("garbage.bin", "not UTF-8"),
    ("missing_event_column.csv", "not a recording"),
];

fn check_recordings() -> usize {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/bad_inputs/recordings");
    let files = std::fs::read_dir(&dir).unwrap().count();
    assert_eq!(
        files,
        RECORDINGS.len(),
        "every recording in the corpus has an expectation"
    );
    for (name, expect) in RECORDINGS {
        let out_dir = std::env::temp_dir().join(format!("fleetsim-bad-rec-{}", std::process::id()));
        let out = Command::new(env!("CARGO_BIN_EXE_fleetsim"))
            .args([
                "replay",
                dir.join(name).to_str().unwrap(),
                "--out",
                out_dir.to_str().unwrap(),
            ])
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{name}: {err}");
        assert!(!err.contains("panicked"), "{name} panicked: {err}");
        assert_eq!(
            err.trim_end().lines().count(),
            1,
            "{name}: not one line: {err}"
        );
        assert!(
            err.contains(name) && err.contains(expect),
            "{name}: expected `{expect}` in: {err}"
        );
        let _ = std::fs::remove_dir_all(&out_dir);
    }
    RECORDINGS.len()
}

#[test]
fn every_bad_input_gets_one_clear_line() {
    let n = check_dir("scenarios", "run") + check_dir("sweeps", "sweep") + check_recordings();
    assert!(n >= 30, "the corpus has {n} files");
}
