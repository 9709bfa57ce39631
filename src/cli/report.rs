//! `fleetsim report DIR`: reads an output directory, writes its charts as
//! `*.svg` and the page that holds them all as `report.html` (last, so a
//! report.html is always complete and never older than its charts).

use super::Failure;
use super::limits::read_input;
use super::output::AtomicFile;
use clap::Args;
use fleetsim::report::{self, Files, Kind};
use std::fs;
use std::io::Write;
use std::path::{Path, PathBuf};

#[derive(Args, Debug)]
pub struct ReportArgs {
    /// An output directory of `fleetsim run`, `saturate`, `sweep`, `optimise` or `replay`.
    pub dir: PathBuf,
    /// Open report.html with xdg-open afterwards (a missing opener is not an error).
    #[arg(long)]
    pub open: bool,
    /// Zoom the timeline on this window instead of the busiest hour: from T
    /// (seconds from the start of the time axis, `5400`, `90m`, `1.5h`, or
    /// `H:MM[:SS]`), with `--to`.
    #[arg(long, value_name = "T", requires = "to")]
    pub from: Option<String>,
    /// The window's end (same forms as `--from`).
    #[arg(long, value_name = "T", requires = "from")]
    pub to: Option<String>,
}

/// `--from`/`--to` as seconds, or the bad-input message.
fn window(args: &ReportArgs) -> Result<Option<(f64, f64)>, Failure> {
    let (Some(a), Some(b)) = (&args.from, &args.to) else {
        return Ok(None);
    };
    let t = |flag: &str, v: &str| {
        report::zoom::parse_time(v).map_err(|e| Failure::input(format!("--{flag}: {e}")))
    };
    let (t0, t1) = (t("from", a)?, t("to", b)?);
    if t1 <= t0 {
        return Err(Failure::input(format!("--to {b} must be after --from {a}")));
    }
    Ok(Some((t0, t1)))
}

fn names(dir: &Path) -> Result<Vec<String>, Failure> {
    let rd = fs::read_dir(dir)
        .map_err(|e| Failure::input(format!("{}: cannot read directory: {e}", dir.display())))?;
    let mut out = Vec::new();
    for entry in rd {
        let entry = entry.map_err(|e| Failure::input(format!("{}: {e}", dir.display())))?;
        out.push(entry.file_name().to_string_lossy().into_owned());
    }
    out.sort();
    Ok(out)
}

fn read(dir: &Path, kind: Kind) -> Result<Files, Failure> {
    let (required, optional) = kind.files();
    let mut files = Files::new();
    for (name, needed) in required
        .iter()
        .map(|n| (n, true))
        .chain(optional.iter().map(|n| (n, false)))
    {
        let p = dir.join(name);
        // A missing optional file is no error; any other is read bounded.
        if !needed
            && matches!(fs::symlink_metadata(&p), Err(e) if e.kind() == std::io::ErrorKind::NotFound)
        {
            continue;
        }
        files.insert(name.to_string(), read_input(&p)?);
    }
    Ok(files)
}

fn write(path: PathBuf, text: &str) -> Result<(), Failure> {
    let mut f = AtomicFile::create(path.clone())?;
    f.write_all(text.as_bytes())
        .map_err(|e| Failure::run(format!("{}: {e}", path.display())))?;
    f.commit()
}

pub fn run(args: ReportArgs) -> Result<(), Failure> {
    let dir = &args.dir;
    let opts = report::Options {
        window_s: window(&args)?,
    };
    let present = names(dir)?;
    let Some(kind) = Kind::detect(&present) else {
        let hint = if present.iter().any(|n| n == "events.csv") {
            " (events.csv without summary.json: the run did not finish)"
        } else if present.iter().any(|n| n == "trials.csv") {
            " (trials.csv without results.csv: resume the sweep with --resume first)"
        } else {
            ""
        };
        return Err(Failure::input(format!(
            "{}: not a fleetsim output directory{hint}: expected summary.json, events.csv and \
             timeline.csv (run), saturate.json (saturate), results.csv (sweep), trace.csv \
             (optimise) or analysis.json (replay)",
            dir.display()
        )));
    };
    if opts.window_s.is_some() && !matches!(kind, Kind::Run | Kind::Replay) {
        return Err(Failure::input(format!(
            "--from/--to: {} has no timeline to zoom on ({} output)",
            dir.display(),
            kind.label()
        )));
    }
    let files = read(dir, kind)?;
    let name = fs::canonicalize(dir)
        .ok()
        .and_then(|p| p.file_name().map(|n| n.to_string_lossy().into_owned()))
        .unwrap_or_else(|| dir.display().to_string());
    let rendered = report::build_with(kind, &name, &files, &opts)
        .map_err(|e| Failure::input(format!("{}: {e}", dir.display())))?;
    for c in &rendered.charts {
        write(dir.join(&c.file), &c.svg)?;
    }
    let html = dir.join("report.html");
    write(html.clone(), &rendered.html)?;
    let files: Vec<&str> = rendered.charts.iter().map(|c| c.file.as_str()).collect();
    let charts = if files.is_empty() {
        "no chart (the page says why)".to_string()
    } else {
        files.join(", ")
    };
    println!("{}: wrote {} and {charts}", kind.label(), html.display());
    if args.open {
        open(&html);
    }
    Ok(())
}

/// Best effort: a machine without xdg-open (or a display) still has the file.
fn open(path: &Path) {
    match std::process::Command::new("xdg-open").arg(path).spawn() {
        Ok(_) => {}
        Err(e) => eprintln!(
            "note: could not run xdg-open ({e}); open {} in a browser",
            path.display()
        ),
    }
}
