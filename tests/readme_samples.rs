//! Every sample output shown in README.md and docs/*.md is what the command
//! prints now. A sample is a fenced block right after a marker:
//!
//! ```text
//! <!-- sample: fleetsim saturate -->
//! <!-- keep: gate | verdicts: -->      (optional: only lines containing one of these,
//!                                        split at " | ", inner spaces kept)
//! <!-- from: verdicts: -->            (optional: from the first line containing it)
//! <!-- head: 8 -->                     (optional: only the first 8 lines kept)
//! ```console
//! $ fleetsim saturate
//! ...what it printed...
//! ```
//! ```
//!
//! This test runs every marked command with the built binary, in document
//! order, in one scratch folder whose `scenarios` links to the repository's
//! (so paths print as a user in the repository sees them, and a later sample
//! may read an earlier one's `out/`), and fails naming the file and line of
//! every block that differs. Only standard output is shown and compared:
//! progress and timings go to standard error. The one normalisation is
//! trailing whitespace; nothing else varies between runs (same seed, same
//! bytes), so a version or model bump shows up here too, as it should.
//! Lines a `keep` or `head` leaves out become one `...` line per gap.
//!
//! `bash tools/readme-samples.sh` (`FLEETSIM_BLESS_SAMPLES=1` for this
//! test) rewrites the blocks in place instead; review the diff.

mod common;

use std::path::{Path, PathBuf};
use std::process::Command;

/// One marked block of a document.
#[derive(Debug, PartialEq)]
struct Sample {
    /// 1-based line of the `<!-- sample: ... -->` marker.
    line: usize,
    /// The command as the marker writes it, `fleetsim` first.
    command: String,
    /// Substrings of the lines to keep (all lines when empty).
    keep: Vec<String>,
    /// Start at the first line containing this.
    from: Option<String>,
    /// Keep only the first N lines (after `from`).
    head: Option<usize>,
    /// 0-based line indices of the opening and the closing fence.
    open: usize,
    close: usize,
}

fn comment<'a>(line: &'a str, tag: &str) -> Option<&'a str> {
    let body = line
        .trim()
        .strip_prefix("<!--")?
        .strip_suffix("-->")?
        .trim();
    body.strip_prefix(tag)?.strip_prefix(':').map(str::trim)
}

/// The samples of `text`, or an error naming the line of a malformed one.
fn parse(text: &str) -> Result<Vec<Sample>, String> {
    let lines: Vec<&str> = text.lines().collect();
    let mut out = Vec::new();
    let mut i = 0;
    while i < lines.len() {
        let Some(command) = comment(lines[i], "sample") else {
            i += 1;
            continue;
        };
        let line = i + 1;
        if !command.starts_with("fleetsim ") && command != "fleetsim" {
            return Err(format!(
                "line {line}: a sample's command starts with `fleetsim`"
            ));
        }
        let (mut keep, mut from, mut head) = (Vec::new(), None, None);
        i += 1;
        loop {
            let Some(l) = lines.get(i) else {
                return Err(format!("line {line}: no fenced block after the marker"));
            };
            if let Some(k) = comment(l, "keep") {
                keep = k.split(" | ").map(str::to_string).collect();
            } else if let Some(f) = comment(l, "from") {
                from = Some(f.to_string());
            } else if let Some(h) = comment(l, "head") {
                head = Some(h.parse().map_err(|_| format!("line {}: head: N", i + 1))?);
            } else {
                break;
            }
            i += 1;
        }
        if !lines[i].trim_start().starts_with("```") {
            return Err(format!(
                "line {line}: the marker must be right above a ``` block"
            ));
        }
        let open = i;
        let close = (open + 1..lines.len())
            .find(|&j| lines[j].trim() == "```")
            .ok_or_else(|| format!("line {line}: the sample's block never closes"))?;
        out.push(Sample {
            line,
            command: command.to_string(),
            keep,
            from,
            head,
            open,
            close,
        });
        i = close + 1;
    }
    Ok(out)
}

/// The command's words, with '...' and "..." quoting as a shell reads them.
fn words(command: &str) -> Vec<String> {
    let (mut out, mut cur, mut quote, mut any) = (Vec::new(), String::new(), None, false);
    for c in command.chars() {
        match (quote, c) {
            (Some(q), c) if c == q => quote = None,
            (Some(_), c) => cur.push(c),
            (None, '\'' | '"') => {
                quote = Some(c);
                any = true;
            }
            (None, c) if c.is_whitespace() => {
                if any || !cur.is_empty() {
                    out.push(std::mem::take(&mut cur));
                }
                any = false;
            }
            (None, c) => cur.push(c),
        }
    }
    if any || !cur.is_empty() {
        out.push(cur);
    }
    out
}

/// The block's lines: the command, then what it printed as the marker
/// selects it.
fn render(sample: &Sample, stdout: &str) -> Vec<String> {
    let printed: Vec<&str> = stdout.lines().map(str::trim_end).collect();
    let start = match &sample.from {
        None => 0,
        Some(f) => printed
            .iter()
            .position(|l| l.contains(f.as_str()))
            .unwrap_or(printed.len()),
    };
    let mut out = vec![format!("$ {}", sample.command)];
    let mut gap = start > 0;
    for (n, l) in printed[start..].iter().enumerate() {
        let wanted = sample.head.is_none_or(|h| n < h)
            && (sample.keep.is_empty() || sample.keep.iter().any(|k| l.contains(k.as_str())));
        if wanted {
            if gap {
                out.push("...".into());
            }
            out.push(l.to_string());
            gap = false;
        } else {
            gap = true;
        }
    }
    if gap {
        out.push("...".into());
    }
    out
}

/// `text` with each sample's block body replaced by `bodies` (same order),
/// indented as its fence.
fn rewrite(text: &str, samples: &[Sample], bodies: &[Vec<String>]) -> String {
    let lines: Vec<&str> = text.lines().collect();
    let mut out = String::new();
    let mut next = 0;
    for (s, body) in samples.iter().zip(bodies) {
        for l in &lines[next..=s.open] {
            out.push_str(l);
            out.push('\n');
        }
        let indent: String = lines[s.open].chars().take_while(|c| *c == ' ').collect();
        for l in body {
            if !l.is_empty() {
                out.push_str(&indent);
            }
            out.push_str(l);
            out.push('\n');
        }
        next = s.close;
    }
    for l in &lines[next..] {
        out.push_str(l);
        out.push('\n');
    }
    out
}

/// The block body as the document has it now (fence indentation removed).
fn current(text: &str, s: &Sample) -> Vec<String> {
    let lines: Vec<&str> = text.lines().collect();
    let indent = lines[s.open].len() - lines[s.open].trim_start().len();
    lines[s.open + 1..s.close]
        .iter()
        .map(|l| l.get(indent..).unwrap_or("").trim_end().to_string())
        .collect()
}

fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// The documents that may hold samples: README.md and docs/*.md.
fn documents() -> Vec<PathBuf> {
    let mut docs: Vec<PathBuf> = std::fs::read_dir(repo().join("docs"))
        .expect("docs/")
        .map(|e| e.expect("docs/ entry").path())
        .filter(|p| p.extension().is_some_and(|e| e == "md"))
        .collect();
    docs.sort();
    docs.insert(0, repo().join("README.md"));
    docs
}

/// Runs one sample's command in `cwd`; its stdout, or why it failed.
fn run(cwd: &Path, sample: &Sample) -> Result<String, String> {
    let argv = words(&sample.command);
    let out = Command::new(env!("CARGO_BIN_EXE_fleetsim"))
        .args(&argv[1..])
        .current_dir(cwd)
        .env_remove("FLEETSIM_PROGRESS_EVERY_S")
        .output()
        .map_err(|e| format!("cannot start fleetsim: {e}"))?;
    if !out.status.success() {
        return Err(format!(
            "`{}` exited {}: {}",
            sample.command,
            out.status,
            String::from_utf8_lossy(&out.stderr).trim()
        ));
    }
    String::from_utf8(out.stdout)
        .map_err(|e| format!("`{}`: stdout not UTF-8: {e}", sample.command))
}

/// The first differing line of two bodies, for the failure message.
fn first_difference(was: &[String], now: &[String]) -> String {
    let n = was.iter().zip(now).take_while(|(a, b)| a == b).count();
    let show = |v: &[String]| v.get(n).cloned().unwrap_or_else(|| "(end of block)".into());
    format!(
        "block line {}: shown `{}`, printed now `{}`",
        n + 1,
        show(was),
        show(now)
    )
}

#[test]
fn every_sample_output_is_what_the_command_prints() {
    let bless = std::env::var_os("FLEETSIM_BLESS_SAMPLES").is_some_and(|v| v == "1");
    let scratch = common::TempDir::new("samples");
    std::os::unix::fs::symlink(repo().join("scenarios"), scratch.path().join("scenarios"))
        .expect("link scenarios/ into the scratch folder");
    let (mut stale, mut total) = (Vec::new(), 0);
    for doc in documents() {
        let text = std::fs::read_to_string(&doc).expect("read a document");
        let name = doc
            .strip_prefix(repo())
            .unwrap_or(&doc)
            .display()
            .to_string();
        let samples = parse(&text).unwrap_or_else(|e| panic!("{name}: {e}"));
        let mut bodies = Vec::new();
        for s in &samples {
            let stdout =
                run(scratch.path(), s).unwrap_or_else(|e| panic!("{name}:{}: {e}", s.line));
            let now = render(s, &stdout);
            let was = current(&text, s);
            if was != now {
                stale.push(format!(
                    "{name}:{}: {}",
                    s.line,
                    first_difference(&was, &now)
                ));
            }
            bodies.push(now);
        }
        total += samples.len();
        if bless && !samples.is_empty() {
            std::fs::write(&doc, rewrite(&text, &samples, &bodies)).expect("rewrite a document");
        }
    }
    assert!(
        total >= 5,
        "README.md and docs/ should mark their samples; found {total}"
    );
    if bless {
        eprintln!("rewrote {} stale sample(s) of {total}", stale.len());
        return;
    }
    assert!(
        stale.is_empty(),
        "{} of {total} sample outputs differ from what the commands print now \
         (regenerate with `bash tools/readme-samples.sh` and review the diff):\n  {}",
        stale.len(),
        stale.join("\n  ")
    );
}

const FIXTURE: &str = r#"intro
<!-- sample: fleetsim run --set 'policy.cooldown_s=60' -->
<!-- keep: recycles | seed -->
  ```console
  $ fleetsim run
  old
  ```
between
<!-- sample: fleetsim saturate -->
<!-- from: b -->
<!-- head: 2 -->
```console
```
end
"#;

#[test]
fn markers_parse_and_blocks_rewrite_in_place() {
    let samples = parse(FIXTURE).unwrap();
    assert_eq!(samples.len(), 2);
    assert_eq!(samples[0].line, 2);
    assert_eq!(samples[0].keep, ["recycles", "seed"]);
    assert_eq!((samples[0].open, samples[0].close), (3, 6));
    assert_eq!(samples[1].head, Some(2));
    assert_eq!(
        words(&samples[0].command),
        ["fleetsim", "run", "--set", "policy.cooldown_s=60"]
    );
    assert_eq!(current(FIXTURE, &samples[0]), ["$ fleetsim run", "old"]);
    let printed = "scenario  x\nseed  1\nrequests 3\nrecycles 9\nevents 4\n";
    let first = render(&samples[0], printed);
    assert_eq!(
        first,
        [
            "$ fleetsim run --set 'policy.cooldown_s=60'",
            "...",
            "seed  1",
            "...",
            "recycles 9",
            "..."
        ]
    );
    assert_eq!(samples[1].from.as_deref(), Some("b"));
    let second = render(&samples[1], "a\nb  \nc\nd\n");
    assert_eq!(second, ["$ fleetsim saturate", "...", "b", "c", "..."]);
    let text = rewrite(FIXTURE, &samples, &[first.clone(), second.clone()]);
    let again = parse(&text).unwrap();
    assert_eq!(current(&text, &again[0]), first);
    assert_eq!(current(&text, &again[1]), second);
    assert!(text.starts_with("intro\n") && text.ends_with("```\nend\n"));
    assert!(
        text.contains("  ...\n  seed  1\n"),
        "the fence's indentation is kept"
    );
    assert!(first_difference(&current(FIXTURE, &samples[0]), &first).contains("block line 1"));
}

#[test]
fn a_malformed_marker_is_an_error_naming_its_line() {
    let e = parse("a\n<!-- sample: saturate -->\n```\n```\n").unwrap_err();
    assert!(e.starts_with("line 2:"), "{e}");
    let e = parse("<!-- sample: fleetsim run -->\ntext\n").unwrap_err();
    assert!(e.contains("right above"), "{e}");
    let e = parse("<!-- sample: fleetsim run -->\n```\nnever closed\n").unwrap_err();
    assert!(e.contains("never closes"), "{e}");
}
