//! `optimise`'s trace as it goes, and `optimise --resume`.
//!
//! While the search runs, every whole evaluation is appended to
//! `trace.partial.csv` at once (and flushed), with the columns of
//! `trace.csv` and, after them, the point in the search's unit cube
//! (`search_x:<key>`, printed exactly), which is what a resume needs: the
//! search is deterministic, so a resumed one asks for the same points
//! again and is answered from the file (`sweep::optimise::Resume`).
//! `search.toml` keeps the settings the resume must keep; the stored
//! inputs (`sweep.toml`, `base.toml`, `model.toml`) are the sweep's.
//! A complete search writes `trace.csv` whole and removes both.

use super::Failure;
use super::output::{AtomicFile, InPlace, open_in_place};
use fleetsim::sweep::optimise::{Evaluation, PHASES, Settings};
use fleetsim::sweep::space::Sweep;
use std::fs::{self, File};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

/// The trace of a search still under way (or interrupted).
pub const PARTIAL: &str = "trace.partial.csv";
/// The settings a resume continues with.
pub const SETTINGS: &str = "search.toml";

fn io_err(p: &Path) -> impl Fn(std::io::Error) -> Failure + '_ {
    move |e| Failure::run(format!("{}: {e}", p.display()))
}

/// `trace.csv`'s header: evaluation, phase, the parameters, cost.
pub fn header(sweep: &Sweep) -> Vec<String> {
    let mut head = vec!["evaluation".to_string(), "phase".into()];
    head.extend(sweep.params.iter().map(|p| p.key.clone()));
    head.push("cost".into());
    head
}

/// One evaluation as a `trace.csv` row.
pub fn row(sweep: &Sweep, e: &Evaluation) -> Vec<String> {
    let mut r = vec![e.index.to_string(), e.phase.to_string()];
    r.extend(
        sweep
            .params
            .iter()
            .zip(&e.x)
            .map(|(p, u)| p.at(*u).to_string()),
    );
    r.push(format!("{}", e.cost));
    r
}

fn partial_header(sweep: &Sweep) -> Vec<String> {
    let mut h = header(sweep);
    h.extend(sweep.params.iter().map(|p| format!("search_x:{}", p.key)));
    h
}

fn partial_row(sweep: &Sweep, e: &Evaluation) -> Vec<String> {
    let mut r = row(sweep, e);
    r.extend(e.x.iter().map(|u| format!("{u}")));
    r
}

/// The settings file's text: what `--resume` must be given again.
fn settings_text(s: &Settings) -> String {
    format!(
        "# fleetsim optimise: the settings `--resume` continues with\n\
         budget = {}\nfresh = {}\n",
        s.budget, s.fresh_replications
    )
}

/// Appends whole evaluations to `trace.partial.csv` as they complete.
pub struct Journal {
    path: PathBuf,
    file: Mutex<File>,
    error: Mutex<Option<Failure>>,
}

impl Journal {
    /// A fresh search: `search.toml` and a `trace.partial.csv` holding its
    /// header, both created whole.
    pub fn create(out: &Path, sweep: &Sweep, s: &Settings) -> Result<Journal, Failure> {
        let settings = out.join(SETTINGS);
        let mut f = AtomicFile::create(settings.clone())?;
        f.write_all(settings_text(s).as_bytes())
            .map_err(io_err(&settings))?;
        f.commit()?;
        let path = out.join(PARTIAL);
        let mut f = AtomicFile::create(path.clone())?;
        fleetsim::sweep::csvio::write_rows(&mut f, &[partial_header(sweep)])
            .map_err(io_err(&path))?;
        f.commit()?;
        Self::append_to(path)
    }

    fn append_to(path: PathBuf) -> Result<Journal, Failure> {
        let file = open_in_place(&path, InPlace::Append)?;
        Ok(Journal {
            path,
            file: Mutex::new(file),
            error: Mutex::new(None),
        })
    }

    /// Appends `e` (called in evaluation order); a failed write is kept
    /// for `finish` and raises `stop`, so the search ends.
    pub fn record(&self, sweep: &Sweep, e: &Evaluation, stop: &std::sync::atomic::AtomicBool) {
        let mut bytes = Vec::new();
        let written = fleetsim::sweep::csvio::write_rows(&mut bytes, &[partial_row(sweep, e)])
            .and_then(|_| self.file.lock().expect("journal lock").write_all(&bytes));
        if let Err(err) = written {
            let mut slot = self.error.lock().expect("journal lock");
            slot.get_or_insert(io_err(&self.path)(err));
            stop.store(true, std::sync::atomic::Ordering::SeqCst);
        }
    }

    /// The first write error, if any.
    pub fn finish(self) -> Result<(), Failure> {
        match self.error.into_inner().expect("journal lock") {
            Some(f) => Err(f),
            None => Ok(()),
        }
    }

    pub fn path(&self) -> &Path {
        &self.path
    }
}

/// Writes the complete trace whole as `trace.csv` and removes the
/// partial one and the settings.
pub fn write_complete(sweep: &Sweep, out: &Path, trace: &[Evaluation]) -> Result<(), Failure> {
    let path = out.join("trace.csv");
    let mut rows = vec![header(sweep)];
    rows.extend(trace.iter().map(|e| row(sweep, e)));
    let mut f = AtomicFile::create(path.clone())?;
    fleetsim::sweep::csvio::write_rows(&mut f, &rows).map_err(io_err(&path))?;
    f.commit()?;
    for stale in [PARTIAL, SETTINGS] {
        match fs::remove_file(out.join(stale)) {
            Err(e) if e.kind() != std::io::ErrorKind::NotFound => {
                return Err(io_err(&out.join(stale))(e));
            }
            _ => {}
        }
    }
    Ok(())
}

/// Removes what an earlier search left (a fresh search starts over).
pub fn remove_partial(out: &Path) -> Result<(), Failure> {
    for stale in [PARTIAL, SETTINGS] {
        match fs::remove_file(out.join(stale)) {
            Err(e) if e.kind() != std::io::ErrorKind::NotFound => {
                return Err(io_err(&out.join(stale))(e));
            }
            _ => {}
        }
    }
    Ok(())
}

/// A resumed search: checks `search.toml` against `s`, reads the whole
/// evaluations of `trace.partial.csv` (a last line cut by a kill is
/// dropped from the file) and opens it to append the rest.
pub fn resume(
    out: &Path,
    sweep: &Sweep,
    s: &Settings,
) -> Result<(Journal, Vec<Evaluation>), Failure> {
    let path = out.join(PARTIAL);
    if !path.try_exists().map_err(io_err(&path))? {
        return Err(Failure::input(format!(
            "{}: nothing to resume (no {PARTIAL}): start the search without --resume",
            out.display()
        )));
    }
    check_settings(&out.join(SETTINGS), s)?;
    let text = super::limits::read_input_text(&path)?;
    let complete = text.rfind('\n').map_or(0, |i| i + 1);
    let mut lines = text[..complete].lines().enumerate();
    let expect = partial_header(sweep);
    let head = lines.next().map(|(_, l)| l).unwrap_or("");
    let mut want = Vec::new();
    fleetsim::sweep::csvio::write_rows(&mut want, &[expect]).map_err(io_err(&path))?;
    if head != String::from_utf8_lossy(&want).trim_end() {
        return Err(Failure::input(format!(
            "{}:1: header is not this sweep's parameters (another sweep file wrote it)",
            path.display()
        )));
    }
    let dim = sweep.params.len();
    let mut done = Vec::new();
    for (i, line) in lines {
        let e = parse_row(line, dim, done.len() as u64)
            .map_err(|why| Failure::input(format!("{}:{}: {why}", path.display(), i + 1)))?;
        done.push(e);
    }
    if complete < text.len() {
        let f = open_in_place(&path, InPlace::Write)?;
        f.set_len(complete as u64).map_err(io_err(&path))?;
    }
    Ok((Journal::append_to(path)?, done))
}

fn check_settings(path: &Path, s: &Settings) -> Result<(), Failure> {
    let text = super::limits::read_input_text(path)?;
    if text != settings_text(s) {
        let stored = |key: &str| {
            text.lines()
                .find_map(|l| l.strip_prefix(key)?.strip_prefix(" = "))
                .unwrap_or("?")
                .to_string()
        };
        return Err(Failure::input(format!(
            "{}: the search was started with budget = {} and fresh = {}, not {} and {}: \
             resume with --budget {} --fresh {}",
            path.display(),
            stored("budget"),
            stored("fresh"),
            s.budget,
            s.fresh_replications,
            stored("budget"),
            stored("fresh")
        )));
    }
    Ok(())
}

/// One `trace.partial.csv` row: index, phase, ..., cost, then the unit
/// point (the parameter cells between are not read: a quoted one may hold
/// commas).
fn parse_row(line: &str, dim: usize, index: u64) -> Result<Evaluation, String> {
    let mut right = line.rsplitn(dim + 2, ',');
    let mut x: Vec<f64> = Vec::with_capacity(dim);
    for _ in 0..dim {
        let cell = right.next().ok_or("too few cells")?;
        let u: f64 = cell.parse().map_err(|_| {
            format!(
                "search_x `{}` is not a number",
                fleetsim::text::one_line(cell)
            )
        })?;
        if !(0.0..=1.0).contains(&u) {
            return Err(format!("search_x {u} is outside [0, 1]"));
        }
        x.push(u);
    }
    x.reverse();
    let cost_cell = right.next().ok_or("too few cells")?;
    let cost: f64 = cost_cell.parse().map_err(|_| {
        format!(
            "cost `{}` is not a number",
            fleetsim::text::one_line(cost_cell)
        )
    })?;
    let rest = right.next().ok_or("too few cells")?;
    let mut left = rest.splitn(3, ',');
    let n = left.next().unwrap_or("");
    if n != index.to_string() {
        return Err(format!(
            "evaluation `{}` where {index} was next",
            fleetsim::text::one_line(n)
        ));
    }
    let phase_cell = left.next().ok_or("too few cells")?;
    let phase = PHASES.iter().find(|p| **p == phase_cell).ok_or_else(|| {
        format!(
            "phase `{}` is none of {PHASES:?}",
            fleetsim::text::one_line(phase_cell)
        )
    })?;
    Ok(Evaluation {
        index,
        phase,
        x,
        cost,
    })
}
