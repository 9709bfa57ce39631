//! A sweep directory's stored inputs, and the sweep that `--resume` and
//! `merge` rebuild from them: `sweep.toml` (the sweep file as given),
//! `base.toml` (its base resolved: every default, `extends` laid in, a
//! traffic series renamed to the copy beside it), `series.csv` (that copy,
//! when the base reads one) and `model.toml`. Neither reads an original
//! path through the stored copy, so a shard resumes and merges wherever it
//! sits (a pod's volume, another machine's folder): the relative `base` of
//! the stored `sweep.toml` is never resolved from the shard's folder.
//!
//! "The base changed" means: two shards' stored bases differ (merge), or
//! the base as the sweep file names it still resolves, to other values
//! than the stored one (resume). A base that no longer resolves from where
//! `--resume` runs cannot be compared; the stored one wrote the rows, and
//! the resume goes on with it, with a note.

use super::Failure;
use super::limits::read_input_text;
use super::output::{AtomicFile, SERIES_COPY};
use super::sweep::{Loaded, load_sweep};
use super::sweep_check::check_keys;
use fleetsim::scenario::DEFAULT_SCENARIO_NAME;
use fleetsim::scenario::raw::ProfileKind;
use fleetsim::sweep::manifest::{self, Manifest};
use fleetsim::sweep::runner::Base;
use std::fs;
use std::io::{ErrorKind, Write};
use std::path::{Path, PathBuf};

/// The stored copy of the sweep file.
pub const SWEEP: &str = "sweep.toml";
/// The stored resolved base.
pub const BASE: &str = "base.toml";
/// The rows, in trial order.
pub const TRIALS: &str = "trials.csv";

fn io_err(p: &Path) -> impl Fn(std::io::Error) -> Failure + '_ {
    move |e| Failure::run(format!("{}: {e}", p.display()))
}

fn exists(p: &Path) -> Result<bool, Failure> {
    p.try_exists().map_err(io_err(p))
}

/// Writes the sweep's inputs into `out`, each atomically.
pub fn write_inputs(l: &Loaded, out: &Path) -> Result<(), Failure> {
    let model = Manifest::current().to_toml();
    let mut files = vec![
        (SWEEP, &l.text),
        (BASE, &l.base_toml),
        (manifest::FILE, &model),
    ];
    if let Some(series) = &l.series {
        files.push((SERIES_COPY, series));
    }
    for (name, text) in files {
        let path = out.join(name);
        let mut f = AtomicFile::create(path.clone())?;
        f.write_all(text.as_bytes()).map_err(io_err(&path))?;
        f.commit()?;
    }
    Ok(())
}

/// Writes the base's series beside a `best.toml` that names it (optimise).
pub fn write_series(l: &Loaded, out: &Path) -> Result<(), Failure> {
    let Some(series) = &l.series else {
        return Ok(());
    };
    let path = out.join(SERIES_COPY);
    let mut f = AtomicFile::create(path.clone())?;
    f.write_all(series.as_bytes()).map_err(io_err(&path))?;
    f.commit()
}

/// The base's name in error texts (a trial's `error` column): the base
/// file's stem, as `load_sweep` names it, computed from the sweep text
/// alone.
fn base_origin(base: Option<&str>) -> String {
    match base {
        None => DEFAULT_SCENARIO_NAME.to_string(),
        Some(b) => Path::new(b)
            .file_stem()
            .map(|s| s.to_string_lossy().into_owned())
            .unwrap_or_else(|| "scenario".into()),
    }
}

/// The sweep stored in `dir`, from its copies alone; `None` for a
/// directory without `base.toml` (written before bases were stored).
pub fn load_stored(dir: &Path) -> Result<Option<Loaded>, Failure> {
    let base_path = dir.join(BASE);
    if !exists(&base_path)? {
        return Ok(None);
    }
    let sweep_path = dir.join(SWEEP);
    let text = read_input_text(&sweep_path)?;
    let (raw_sweep, sweep) = fleetsim::sweep::spec::parse(&text)
        .map_err(|e| Failure::input(format!("{}{e}", sweep_path.display())))?;
    let base_toml = read_input_text(&base_path)?;
    let origin = base_path.display().to_string();
    let raw = fleetsim::scenario::load::load_raw(&base_toml, &origin, &[], &mut |p| {
        Err(format!("{p}: a stored base is resolved and reads no file"))
    })
    .map_err(|e| Failure::input(e.to_string()))?;
    let series = if raw.workload.profile == ProfileKind::Series {
        Some(read_input_text(&dir.join(&raw.workload.series_csv))?)
    } else {
        None
    };
    let name = base_origin(raw_sweep.base.as_deref());
    let base = Base::new(&raw, &name, series.clone(), sweep.hours);
    check_keys(&sweep_path, &text, &sweep, &base)?;
    Ok(Some(Loaded {
        text,
        sweep,
        base,
        base_toml,
        series,
    }))
}

/// Whether two sweeps run on one base: the resolved text and the series,
/// byte for byte.
fn same_base(a: &Loaded, b: &Loaded) -> bool {
    a.base_toml == b.base_toml && a.series == b.series
}

/// Refuses a sweep directory whose rows another model wrote (or one
/// written before model tags); `redo` says how to proceed.
pub fn check_model(dir: &Path, redo: &str) -> Result<(), Failure> {
    let path = dir.join(manifest::FILE);
    if !exists(&path)? {
        return Err(Failure::input(format!(
            "{}: missing: this sweep was written by a fleetsim older than model tags, \
             whose draws may differ from this build's ({}): {redo}",
            path.display(),
            fleetsim::model_tag()
        )));
    }
    let text = read_input_text(&path)?;
    let m = Manifest::parse(&text).map_err(|e| Failure::input(format!("{}{e}", path.display())))?;
    m.check_current()
        .map_err(|e| Failure::input(format!("{}: {e}; {redo}", path.display())))
}

/// The directory `--resume` continues: `--out`, else `out/<stem>` as
/// `sweep` names it. Nothing is created: a resume with nothing to resume
/// fails before any folder exists, so `merge results/shard-*` never meets
/// an empty one it left.
pub fn resume_dir(out: &Option<PathBuf>, stem: &str) -> Result<PathBuf, Failure> {
    let dir = out
        .clone()
        .unwrap_or_else(|| PathBuf::from(format!("out/{stem}")));
    if !exists(&dir)? {
        return Err(nothing_to_resume(&dir));
    }
    Ok(dir)
}

fn nothing_to_resume(dir: &Path) -> Failure {
    Failure::input(format!(
        "{}: nothing to resume (no {TRIALS}): start the sweep without --resume",
        dir.display()
    ))
}

/// The sweep `--resume` continues in `out` (whose rows are in the file
/// `rows`: `trials.csv`, or optimise's `trace.partial.csv`): the stored one, once the sweep
/// file is the stored copy, the model is this build's, and the base, when
/// it still resolves from the sweep file, resolves to the stored base.
pub fn for_resume(sweep_path: &Path, out: &Path, rows: &str) -> Result<Loaded, Failure> {
    if !exists(&out.join(rows))? && rows == TRIALS {
        return Err(nothing_to_resume(out));
    }
    if !exists(&out.join(rows))? {
        return Err(Failure::input(format!(
            "{}: nothing to resume (no {rows}): start without --resume",
            out.display()
        )));
    }
    let copy = out.join(SWEEP);
    if read_input_text(&copy)? != read_input_text(sweep_path)? {
        return Err(Failure::input(format!(
            "{}: the sweep file changed since this run started; resume needs the same file",
            copy.display()
        )));
    }
    check_model(
        out,
        "re-run the sweep into a new --out with this build, \
         or resume it with the fleetsim that started it",
    )?;
    let Some(stored) = load_stored(out)? else {
        // Written before bases were stored: the base as it resolves now.
        return load_sweep(sweep_path);
    };
    match load_sweep(sweep_path) {
        Ok(now) if !same_base(&now, &stored) => Err(Failure::input(format!(
            "{}: the base scenario changed since these rows were written \
             (the base now resolves to other values); resume needs the base it started with",
            out.join(BASE).display()
        ))),
        Ok(_) => Ok(stored),
        Err(f) => {
            eprintln!(
                "note: the base cannot be resolved from {} here ({}); resuming on the stored {}",
                sweep_path.display(),
                fleetsim::text::one_line(&f.message),
                out.join(BASE).display()
            );
            Ok(stored)
        }
    }
}

/// Refuses what is not a sweep's output, naming an empty folder as such.
fn sweep_output(dir: &Path) -> Result<(), Failure> {
    let entries = match fs::read_dir(dir) {
        Ok(e) => e,
        Err(e) if e.kind() == ErrorKind::NotFound => {
            return Err(Failure::input(format!(
                "{}: no such directory",
                dir.display()
            )));
        }
        Err(e) => return Err(io_err(dir)(e)),
    };
    if exists(&dir.join(SWEEP))? {
        return Ok(());
    }
    let empty = entries.flatten().next().is_none();
    Err(Failure::input(if empty {
        format!(
            "{}: an empty folder, not a sweep's output (left by a failed run?): \
             remove it, or run its shard into it",
            dir.display()
        )
    } else {
        format!("{}: not a sweep's output (no {SWEEP})", dir.display())
    }))
}

/// The sweep the shards in `dirs` belong to, from their stored copies:
/// one sweep file, one model, one base. Shards without `base.toml` (an
/// older layout) have nothing to compare; when none has one, the base is
/// resolved from the first shard's `sweep.toml` as those builds did.
pub fn for_merge(dirs: &[PathBuf]) -> Result<Loaded, Failure> {
    for d in dirs {
        sweep_output(d)?;
    }
    let first = &dirs[0];
    let text = read_input_text(&first.join(SWEEP))?;
    let mut reference: Option<(&PathBuf, Loaded)> = None;
    for d in dirs {
        if read_input_text(&d.join(SWEEP))? != text {
            return Err(Failure::input(format!(
                "{}: a different sweep from {}",
                d.display(),
                first.display()
            )));
        }
        check_model(
            d,
            "re-run the shards with this build, or merge them with the fleetsim that wrote them",
        )?;
        let Some(stored) = load_stored(d)? else {
            continue;
        };
        match &reference {
            None => reference = Some((d, stored)),
            Some((r, l)) if !same_base(l, &stored) => {
                return Err(Failure::input(format!(
                    "{}: the base scenario changed between shards (it differs from {}, \
                     or its {SERIES_COPY} does); every shard must run on one base: \
                     re-run this shard on the base the others used",
                    d.join(BASE).display(),
                    r.join(BASE).display()
                )));
            }
            Some(_) => {}
        }
    }
    match reference {
        Some((_, l)) => Ok(l),
        None => load_sweep(&first.join(SWEEP)).map_err(|f| {
            Failure::input(format!(
                "{} (no shard holds {BASE}: written by a fleetsim that did not store its base, \
                 so it is resolved from {}'s folder)",
                f.message,
                first.join(SWEEP).display()
            ))
        }),
    }
}

/// What a k-way merge of shards met: distinct trials, trials two shards
/// both hold (with the first such pair), and trials none holds.
#[derive(Default)]
pub struct Tally {
    distinct: u64,
    dups: u64,
    first_dup: Option<(u64, usize, usize)>,
    missing: u64,
    first_missing: Vec<u64>,
    beyond: u64,
    last: Option<(u64, usize)>,
}

impl Tally {
    /// Counts trial `t` from shard `i` (trials come in order); whether it
    /// is new, to be written.
    pub fn see(&mut self, t: u64, i: usize) -> bool {
        if let Some((lt, li)) = self.last
            && lt == t
        {
            self.dups += 1;
            self.first_dup.get_or_insert((t, li, i));
            return false;
        }
        let from = self.last.map_or(0, |(lt, _)| lt + 1);
        self.gap(from, t);
        self.distinct += 1;
        self.last = Some((t, i));
        true
    }

    fn gap(&mut self, from: u64, to: u64) {
        if to > from {
            self.missing += to - from;
            let room = 5 - self.first_missing.len() as u64;
            self.first_missing.extend(from..to.min(from + room));
        }
    }

    /// Every trial of `total` exactly once, or why not: duplicates name
    /// the two shards, missing trials the first few.
    pub fn check(mut self, total: u64, dirs: &[PathBuf]) -> Result<(), Failure> {
        let next = self.last.map_or(0, |(lt, _)| lt + 1);
        if next > total {
            self.beyond = next - total;
        } else {
            self.gap(next, total);
        }
        let mut why = Vec::new();
        if let Some((t, a, b)) = self.first_dup {
            why.push(format!(
                "{} and {} both hold trial {t} ({} duplicated trials in all): the same shard \
                 given twice, or a copy of one? merge each shard once",
                dirs[a].display(),
                dirs[b].display(),
                self.dups
            ));
        }
        if self.missing > 0 {
            let list: Vec<String> = self.first_missing.iter().map(u64::to_string).collect();
            why.push(format!(
                "{} of {total} trials missing (trial {}{}): run the missing shards \
                 (or --resume them) before merging",
                self.missing,
                list.join(", "),
                if self.missing > 5 { ", ..." } else { "" }
            ));
        }
        if self.beyond > 0 {
            why.push(format!("trials beyond the sweep's {total}"));
        }
        if why.is_empty() && self.distinct == total {
            return Ok(());
        }
        Err(Failure::input(format!(
            "shards do not add up: {}",
            why.join("; ")
        )))
    }
}
