//! Shared CLI plumbing: loading scenarios from paths, and atomic output
//! files (written under a temporary name, renamed when complete, so a
//! killed run never leaves a file that looks finished).

use super::Failure;
use super::limits::{read_input, read_text_bounded};
use clap::Args;
use fleetsim::Scenario;
use fleetsim::scenario::raw::ProfileKind;
use fleetsim::scenario::{
    DEFAULT_SCENARIO, DEFAULT_SCENARIO_NAME, Override, RawScenario, load, parse_override,
};
use std::fs::{self, File};
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};

#[derive(Args, Clone, Debug)]
pub struct ScenarioArgs {
    /// Scenario TOML file; the embedded default (render-2x3, the field reports' fleet) when omitted.
    pub scenario: Option<PathBuf>,
    /// Override a scenario value with a dotted key, e.g. --set policy.cooldown_s=60 (repeatable).
    #[arg(long = "set", value_name = "KEY=VALUE")]
    pub set: Vec<String>,
}

pub struct Loaded {
    pub raw: RawScenario,
    pub scenario: Scenario,
    /// The scenario's short name for output directories.
    pub stem: String,
    /// The content of `workload.series_csv` when the profile reads it.
    pub series: Option<String>,
    /// The dotted keys the user wrote: the files' own table (`extends`
    /// laid in, no defaults) and the `--set` keys.
    written: (toml::Table, Vec<String>),
}

impl Loaded {
    /// Whether the scenario files or a `--set` give `key` (`fleet.leak`,
    /// `policy.hard_limit_mb`) or a key under it; false when it runs on
    /// fleetsim's default.
    pub fn user_sets(&self, key: &str) -> bool {
        let (table, sets) = &self.written;
        fleetsim::scenario::load::sets_key(table, key)
            || sets
                .iter()
                .any(|k| k == key || k.starts_with(&format!("{key}.")))
    }
}

/// The name a run or sweep directory stores a scenario's traffic series
/// under, beside the scenario file that names it (so the copy runs from
/// there, wherever the original sat).
pub const SERIES_COPY: &str = "series.csv";

/// `raw` made self-contained for a directory that holds its series as
/// `SERIES_COPY`: the series path rewritten when the profile reads one.
pub fn with_series_copy(raw: &RawScenario) -> RawScenario {
    let mut raw = raw.clone();
    if raw.workload.profile == ProfileKind::Series {
        raw.workload.series_csv = SERIES_COPY.to_string();
    }
    raw
}

/// Reads, overrides and validates a scenario; errors are one line naming
/// the file, line and key.
pub fn load_scenario(args: &ScenarioArgs, extra: Option<Override>) -> Result<Loaded, Failure> {
    let mut overrides: Vec<Override> = args
        .set
        .iter()
        .map(|s| parse_override(s))
        .collect::<Result<_, _>>()
        .map_err(Failure::input)?;
    overrides.extend(extra);
    let (text, origin, dir, stem) = match &args.scenario {
        None => (
            DEFAULT_SCENARIO.to_string(),
            format!("<embedded {DEFAULT_SCENARIO_NAME}>"),
            PathBuf::from("."),
            DEFAULT_SCENARIO_NAME.to_string(),
        ),
        Some(path) => {
            let bytes = read_input(path)?;
            let text = String::from_utf8(bytes).map_err(|e| {
                Failure::input(format!(
                    "{}: not UTF-8 text (byte {}): is this a scenario TOML file?",
                    path.display(),
                    e.utf8_error().valid_up_to()
                ))
            })?;
            let dir = path.parent().map(Path::to_path_buf).unwrap_or_default();
            let stem = path
                .file_stem()
                .map(|s| s.to_string_lossy().into_owned())
                .unwrap_or_else(|| "scenario".into());
            (text, path.display().to_string(), dir, stem)
        }
    };
    // Every file read, by the name the scenario gave it: the series is
    // kept for the directories that store a copy.
    let mut reads: Vec<(String, String)> = Vec::new();
    let mut read = |rel: &str| -> Result<String, String> {
        let p = dir.join(rel);
        let text = read_text_bounded(&p)?;
        reads.push((rel.to_string(), text.clone()));
        Ok(text)
    };
    let (raw, scenario) =
        load(&text, &origin, &overrides, &mut read).map_err(|e| Failure::input(e.to_string()))?;
    // What the files themselves set (read again: they passed above).
    let table = fleetsim::scenario::load::resolved_table(&text, &origin, &mut |rel| {
        read_text_bounded(&dir.join(rel))
    })
    .map_err(|e| Failure::input(e.to_string()))?;
    let written = (table, overrides.iter().map(|o| o.key.clone()).collect());
    let series = (raw.workload.profile == ProfileKind::Series)
        .then(|| {
            reads
                .into_iter()
                .rev()
                .find(|(rel, _)| *rel == raw.workload.series_csv)
                .map(|(_, text)| text)
        })
        .flatten();
    Ok(Loaded {
        raw,
        scenario,
        stem,
        series,
        written,
    })
}

/// The output directory: `--out` if given, else `out/<stem><suffix>`;
/// created if missing.
/// A path given where a directory goes (`--out`, a merge's shard) that
/// is a file, or lies under one: bad input (exit 2), not a failed run.
pub fn refuse_non_dir(what: &str, p: &Path) -> Result<(), Failure> {
    let not_dir = match fs::metadata(p) {
        Ok(m) => !m.is_dir(),
        Err(e) => e.kind() == std::io::ErrorKind::NotADirectory,
    };
    if not_dir {
        return Err(Failure::input(format!(
            "{what} {}: not a directory",
            p.display()
        )));
    }
    Ok(())
}

pub fn output_dir(out: &Option<PathBuf>, stem: &str, suffix: &str) -> Result<PathBuf, Failure> {
    let dir = out
        .clone()
        .unwrap_or_else(|| PathBuf::from(format!("out/{stem}{suffix}")));
    refuse_non_dir("--out", &dir)?;
    fs::create_dir_all(&dir)
        .map_err(|e| Failure::run(format!("{}: cannot create: {e}", dir.display())))?;
    Ok(dir)
}

/// How `open_in_place` opens a file.
pub enum InPlace {
    /// Created, or emptied when it exists.
    Create,
    /// Opened for writing (to cut it at its last whole row).
    Write,
    /// Opened for appending rows.
    Append,
}

/// `O_NOFOLLOW` on Linux: opening a symbolic link fails with `ELOOP`.
const O_NOFOLLOW: i32 = 0o400_000;
/// `ELOOP` on Linux.
const ELOOP: i32 = 40;

/// The refusal of a symbolic link where fleetsim writes a file of its own.
pub fn link_refused(path: &Path) -> Failure {
    Failure::input(format!(
        "{}: a symbolic link where fleetsim writes its own file: refused (no output is \
         written through a link); remove it",
        path.display()
    ))
}

/// Opens a file written where it lies rather than swapped in whole
/// (`trials.csv` and `optimise`'s `trace.partial.csv`, appended row by
/// row), never through a symbolic link planted in its place, dangling or
/// not (`O_NOFOLLOW`): such a link is refused and its target left alone.
pub fn open_in_place(path: &Path, how: InPlace) -> Result<File, Failure> {
    use std::os::unix::fs::OpenOptionsExt;
    let mut options = fs::OpenOptions::new();
    match how {
        InPlace::Create => options.write(true).create(true).truncate(true),
        InPlace::Write => options.write(true),
        InPlace::Append => options.append(true),
    };
    options
        .custom_flags(O_NOFOLLOW)
        .open(path)
        .map_err(|e| match e.raw_os_error() {
            Some(ELOOP) => link_refused(path),
            _ => Failure::run(format!("{}: {e}", path.display())),
        })
}

/// `--hours H`: the override of `run.duration_h` it stands for.
pub fn hours_override(hours: Option<f64>) -> Option<Override> {
    hours.map(|h| Override {
        key: "run.duration_h".into(),
        value: toml::Value::Float(h),
    })
}

/// A refusal of `run.duration_h` when `--hours` set it: the flag is named
/// as the source, not the file (`--hours nan: <embedded render-2x3>: key
/// `run.duration_h`: ...`).
pub fn blame_hours(mut f: Failure, hours: Option<f64>) -> Failure {
    if let Some(h) = hours.filter(|_| f.message.contains("key `run.duration_h`")) {
        f.message = format!("--hours {}: {}", fleetsim::text::number(h), f.message);
    }
    f
}

/// A short digest (6 hex digits, FNV-1a) of a run's overrides as given,
/// for default output folder names: `out/render-2x3-seed1-3f2a9c` is the
/// default scenario with some `--set`s, never the plain run's folder. No
/// overrides, no digest.
pub fn overrides_digest(sets: &[String], hours: Option<f64>) -> Option<String> {
    if sets.is_empty() && hours.is_none() {
        return None;
    }
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    let text = sets
        .iter()
        .map(String::as_str)
        .chain(hours.map(|_| "--hours"))
        .collect::<Vec<_>>()
        .join("\n")
        + &hours.map(|h| format!("={h}")).unwrap_or_default();
    for b in text.bytes() {
        h ^= u64::from(b);
        h = h.wrapping_mul(0x0100_0000_01b3);
    }
    Some(format!("{:06x}", h >> 40))
}

/// Removes what `fleetsim report` drew from a directory's earlier data
/// (`report.html` and the `*.svg` charts beside it), before a command
/// writes new data there: a report never sits beside data it was not
/// drawn from. `fleetsim report DIR` draws it again.
pub fn remove_stale_report(dir: &Path) -> Result<(), Failure> {
    let entries = match fs::read_dir(dir) {
        Ok(e) => e,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(()),
        Err(e) => return Err(Failure::run(format!("{}: {e}", dir.display()))),
    };
    for entry in entries {
        let entry = entry.map_err(|e| Failure::run(format!("{}: {e}", dir.display())))?;
        let name = entry.file_name().to_string_lossy().into_owned();
        let drawn = name == "report.html" || name.ends_with(".svg");
        if drawn && entry.file_type().is_ok_and(|t| t.is_file()) {
            fs::remove_file(entry.path()).map_err(|e| {
                Failure::run(format!("{}: cannot remove: {e}", entry.path().display()))
            })?;
        }
    }
    Ok(())
}

/// Names a winner's scenario for what it is (`best.toml` of `sweep` or
/// `optimise`): `<base>-<command>-best`, and a description that says whose
/// winner it is, with its parameters, before the base's own; so a run of it
/// neither looks like nor lands in the baseline's folder.
pub fn name_winner(
    raw: &mut RawScenario,
    command: &str,
    source: &str,
    params: &[(String, toml::Value)],
) {
    // The description rounds to 4 significant digits; the keys keep the
    // exact values.
    let short = |v: &toml::Value| match v {
        toml::Value::Float(x) if x.is_finite() && *x != 0.0 => {
            let decimals = (3 - x.abs().log10().floor() as i32).max(0) as usize;
            format!("{x:.decimals$}")
        }
        other => other.to_string(),
    };
    let set: Vec<String> = params
        .iter()
        .map(|(k, v)| format!("{k}={}", short(v)))
        .collect();
    raw.description = format!(
        "fleetsim {command}'s winner ({source}): {} (base {}: {})",
        if set.is_empty() {
            "the base itself".into()
        } else {
            set.join(", ")
        },
        raw.name,
        raw.description
    );
    raw.name = format!("{}-{command}-best", raw.name);
}

/// The file name of `path` without its extension.
pub fn stem(path: &Path) -> String {
    path.file_stem()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_else(|| "out".into())
}

/// A file written under `.NAME.partial.<pid>.<nonce>` and renamed to `NAME`
/// by `commit`. Dropped without `commit`, the partial file is removed.
/// The temporary name is unpredictable and created exclusively
/// (`O_CREAT | O_EXCL`, which never follows a symlink), so a link planted
/// in the output directory is never written through; the rename replaces
/// a link at `NAME` itself, not its target.
pub struct AtomicFile {
    tmp: PathBuf,
    dest: PathBuf,
    writer: Option<BufWriter<File>>,
}

impl AtomicFile {
    pub fn create(dest: PathBuf) -> Result<Self, Failure> {
        let name = dest
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        let (tmp, file) = create_exclusive(&dest, &name)?;
        Ok(AtomicFile {
            tmp,
            dest,
            writer: Some(BufWriter::with_capacity(1 << 16, file)),
        })
    }

    pub fn writer(&mut self) -> &mut BufWriter<File> {
        self.writer.as_mut().expect("not committed")
    }

    /// Keeps what was written under `dest` instead (an interrupted run's
    /// rows, under a name that says partial).
    pub fn commit_as(mut self, dest: PathBuf) -> Result<(), Failure> {
        self.dest = dest;
        self.commit()
    }

    pub fn commit(mut self) -> Result<(), Failure> {
        let w = self.writer.take().expect("committed once");
        let file = w
            .into_inner()
            .map_err(|e| Failure::run(format!("{}: {}", self.tmp.display(), e.error())))?;
        file.sync_all()
            .map_err(|e| Failure::run(format!("{}: {e}", self.tmp.display())))?;
        fs::rename(&self.tmp, &self.dest)
            .map_err(|e| Failure::run(format!("{}: cannot rename: {e}", self.dest.display())))
    }
}

/// A fresh temporary file beside `dest`: a name no one can guess ahead
/// (pid, clock and a counter), created only if nothing is there.
fn create_exclusive(dest: &Path, name: &str) -> Result<(PathBuf, File), Failure> {
    use std::sync::atomic::{AtomicU64, Ordering};
    use std::time::{SystemTime, UNIX_EPOCH};
    static NEXT: AtomicU64 = AtomicU64::new(0);
    let mut last_err = None;
    for _ in 0..16 {
        let nanos = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos() as u64);
        let n = NEXT.fetch_add(1, Ordering::Relaxed);
        let nonce = nanos ^ n.wrapping_mul(0x9e37_79b9_7f4a_7c15);
        let tmp = dest.with_file_name(format!(
            ".{name}.partial.{}.{nonce:016x}",
            std::process::id()
        ));
        match fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .open(&tmp)
        {
            Ok(file) => return Ok((tmp, file)),
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => last_err = Some(e),
            Err(e) => {
                return Err(Failure::run(format!(
                    "{}: cannot create: {e}",
                    tmp.display()
                )));
            }
        }
    }
    Err(Failure::run(format!(
        "{}: cannot create a temporary file beside it: {}",
        dest.display(),
        last_err.map_or_else(String::new, |e| e.to_string())
    )))
}

impl Drop for AtomicFile {
    fn drop(&mut self) {
        if self.writer.is_some() {
            let _ = fs::remove_file(&self.tmp);
        }
    }
}

impl Write for AtomicFile {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.writer().write(buf)
    }
    fn flush(&mut self) -> std::io::Result<()> {
        self.writer().flush()
    }
}

/// Seeds `first` to `first + n - 1` (`n` >= 1), refused naming `flags`
/// where they would run past the last seed there is, 2^64 - 1.
pub fn seed_range(
    first: u64,
    n: u64,
    flags: &str,
) -> Result<std::ops::RangeInclusive<u64>, Failure> {
    match first.checked_add(n.saturating_sub(1)) {
        Some(last) => Ok(first..=last),
        None => Err(Failure::input(format!(
            "{flags} {first} --seeds {n}: the seeds would run past {}",
            u64::MAX
        ))),
    }
}
