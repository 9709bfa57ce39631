//! A run's directory, replaced whole: `fleetsim run` writes into a fresh
//! hidden directory beside its target (`.<name>.run.<pid>.<nonce>`,
//! created exclusively under an unpredictable name) and swaps it in only
//! when complete: the old directory is renamed aside
//! (`.<name>.old.<pid>.<nonce>`), the new one renamed into its place, the
//! old one removed. A run that fails, is stopped or is killed before the
//! swap leaves the target exactly as it was.
//!
//! A process killed between the two renames leaves no target but the old
//! directory aside: the next run into the same target renames it back (a
//! note says so) before anything else, and removes what dead runs left
//! (their staging directories, an old directory after a finished swap).
//! Since the whole directory is replaced, a target holding files a run
//! does not write (another command's, the user's) is refused.

use super::Failure;
use super::lock::{alive, proc_exists};
use std::fs;
use std::path::{Path, PathBuf};

/// What a run directory may hold: a run's files, what `fleetsim report`
/// draws from them, and hidden temporaries.
fn run_owned(name: &str) -> bool {
    const FILES: [&str; 10] = [
        "summary.json",
        "events.csv",
        "timeline.csv",
        "workers.csv",
        "scenario.toml",
        "series.csv",
        "events.partial.csv",
        "timeline.partial.csv",
        "workers.partial.csv",
        "report.html",
    ];
    FILES.contains(&name) || drawn_or_temporary(name)
}

/// What `fleetsim report` draws beside a command's data (`report.html`,
/// the `*.svg` charts), and the hidden temporaries of an atomic write.
pub fn drawn_or_temporary(name: &str) -> bool {
    let temporary = name.starts_with('.') && name.contains(".partial.");
    name == "report.html" || name.ends_with(".svg") || temporary
}

/// Whether `dir` holds a complete run: its `summary.json` and `scenario.toml`.
pub fn holds_complete_run(dir: &Path) -> bool {
    dir.join("summary.json").is_file() && dir.join("scenario.toml").is_file()
}

fn io_err(p: &Path) -> impl Fn(std::io::Error) -> Failure + '_ {
    move |e| Failure::run(format!("{}: {e}", p.display()))
}

/// The staging directory of one run (of `fleetsim run`, or of a command
/// that writes a directory the same way: `Staging::begin_owned`); removed
/// when dropped unswapped.
pub struct Staging {
    target: PathBuf,
    dir: PathBuf,
    swapped: bool,
}

impl Staging {
    /// Recovers what an earlier run left beside `target`, checks the
    /// target holds nothing a run does not write, and creates the staging
    /// directory.
    pub fn begin(target: &Path) -> Result<Staging, Failure> {
        Staging::begin_owned(target, "fleetsim run", run_owned)
    }

    /// `begin` for `command`, whose directory may hold what `owned` says.
    pub fn begin_owned(
        target: &Path,
        command: &str,
        owned: fn(&str) -> bool,
    ) -> Result<Staging, Failure> {
        super::output::refuse_non_dir("--out", target)?;
        let target = resolve(target)?;
        recover(&target)?;
        refuse_foreign(&target, command, owned)?;
        let dir = create_unique(&target, "run")?;
        Ok(Staging {
            target,
            dir,
            swapped: false,
        })
    }

    /// Where the run writes its files.
    pub fn path(&self) -> &Path {
        &self.dir
    }

    /// Puts the staging directory in the target's place: old aside, new
    /// in, old removed.
    pub fn swap_in(mut self) -> Result<(), Failure> {
        let aside = match fs::symlink_metadata(&self.target) {
            Ok(_) => {
                let aside = unique_name(&self.target, "old");
                fs::rename(&self.target, &aside).map_err(|e| {
                    Failure::run(format!("{}: cannot move aside: {e}", self.target.display()))
                })?;
                Some(aside)
            }
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => None,
            Err(e) => return Err(io_err(&self.target)(e)),
        };
        if let Err(e) = fs::rename(&self.dir, &self.target) {
            // Put the old one back: the target stays as it was.
            if let Some(a) = &aside {
                let _ = fs::rename(a, &self.target);
            }
            return Err(Failure::run(format!(
                "{}: cannot move the finished run into place: {e}",
                self.target.display()
            )));
        }
        self.swapped = true;
        if let Some(a) = aside {
            remove_tree(&a)?;
        }
        Ok(())
    }
}

impl Drop for Staging {
    fn drop(&mut self) {
        if !self.swapped {
            let _ = fs::remove_dir_all(&self.dir);
        }
    }
}

/// `target` as an absolute path with a last component to rename, and not
/// the directory this process (or its shell) stands in.
fn resolve(target: &Path) -> Result<PathBuf, Failure> {
    let abs = std::path::absolute(target).map_err(io_err(target))?;
    let named = abs.file_name().is_some_and(|n| n != ".." && n != ".");
    let abs = if named {
        abs
    } else {
        fs::canonicalize(&abs).map_err(io_err(target))?
    };
    if let (Ok(cwd), Ok(real)) = (std::env::current_dir(), fs::canonicalize(&abs))
        && cwd.starts_with(&real)
    {
        return Err(Failure::input(format!(
            "{}: is the current directory (or holds it); a run replaces its directory \
             whole: give --out a folder of its own",
            target.display()
        )));
    }
    if abs.parent().is_none() {
        return Err(Failure::input(format!(
            "{}: a run needs a folder of its own as --out",
            target.display()
        )));
    }
    Ok(abs)
}

fn refuse_foreign(target: &Path, command: &str, owned: fn(&str) -> bool) -> Result<(), Failure> {
    let entries = match fs::read_dir(target) {
        Ok(e) => e,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(()),
        Err(e) => return Err(io_err(target)(e)),
    };
    for entry in entries {
        let entry = entry.map_err(io_err(target))?;
        let name = entry.file_name().to_string_lossy().into_owned();
        if !owned(&name) {
            return Err(Failure::input(format!(
                "{}: holds {}, which {command} does not write; a run replaces its \
                 directory whole when it completes: choose another --out, or move it",
                target.display(),
                fleetsim::text::one_line(&name)
            )));
        }
    }
    Ok(())
}

/// `.<name>.<what>.<pid>.<nonce>` beside `target`: nobody can guess it ahead.
fn unique_name(target: &Path, what: &str) -> PathBuf {
    use std::sync::atomic::{AtomicU64, Ordering};
    use std::time::{SystemTime, UNIX_EPOCH};
    static NEXT: AtomicU64 = AtomicU64::new(0);
    let nanos = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos() as u64);
    let nonce = nanos
        ^ NEXT
            .fetch_add(1, Ordering::Relaxed)
            .wrapping_mul(0x9e37_79b9_7f4a_7c15);
    let name = target
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    target.with_file_name(format!(
        ".{name}.{what}.{}.{nonce:016x}",
        std::process::id()
    ))
}

/// A new directory under `unique_name`, created only if nothing is there
/// (`mkdir` never follows a link planted at the name).
fn create_unique(target: &Path, what: &str) -> Result<PathBuf, Failure> {
    if let Some(parent) = target.parent() {
        fs::create_dir_all(parent)
            .map_err(|e| Failure::run(format!("{}: cannot create: {e}", parent.display())))?;
    }
    let mut last = None;
    for _ in 0..16 {
        let dir = unique_name(target, what);
        match fs::create_dir(&dir) {
            Ok(()) => return Ok(dir),
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => last = Some(e),
            Err(e) => {
                return Err(Failure::run(format!(
                    "{}: cannot create: {e}",
                    dir.display()
                )));
            }
        }
    }
    Err(Failure::run(format!(
        "{}: cannot create a staging directory beside it: {}",
        target.display(),
        last.map_or_else(String::new, |e| e.to_string())
    )))
}

fn remove_tree(dir: &Path) -> Result<(), Failure> {
    match fs::remove_dir_all(dir) {
        Err(e) if e.kind() != std::io::ErrorKind::NotFound => Err(Failure::run(format!(
            "{}: cannot remove: {e}",
            dir.display()
        ))),
        _ => Ok(()),
    }
}

/// What dead runs left beside `target`: an old directory with no target
/// (killed mid-swap) is renamed back; staging directories and old
/// directories after a finished swap are removed. A living process's are
/// left alone.
fn recover(target: &Path) -> Result<(), Failure> {
    let (Some(parent), Some(name)) = (target.parent(), target.file_name()) else {
        return Ok(());
    };
    let entries = match fs::read_dir(parent) {
        Ok(e) => e,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(()),
        Err(e) => return Err(io_err(parent)(e)),
    };
    let name = name.to_string_lossy();
    let mut left: Vec<(String, PathBuf)> = Vec::new();
    for entry in entries.flatten() {
        let file = entry.file_name().to_string_lossy().into_owned();
        let Some(rest) = file.strip_prefix(&format!(".{name}.")) else {
            continue;
        };
        let mut parts = rest.split('.');
        let (Some(what), Some(pid), Some(_), None) =
            (parts.next(), parts.next(), parts.next(), parts.next())
        else {
            continue;
        };
        let dead = pid.parse::<u32>().is_ok_and(|p| proc_exists() && !alive(p));
        if dead && (what == "run" || what == "old") && entry.file_type().is_ok_and(|t| t.is_dir()) {
            left.push((what.to_string(), entry.path()));
        }
    }
    left.sort();
    for (what, path) in left {
        let missing = matches!(fs::symlink_metadata(target), Err(e) if e.kind() == std::io::ErrorKind::NotFound);
        if what == "old" && missing {
            fs::rename(&path, target)
                .map_err(|e| Failure::run(format!("{}: cannot restore: {e}", target.display())))?;
            eprintln!(
                "note: {}: restored the previous run from {} (a run was killed while swapping \
                 it in)",
                target.display(),
                path.display()
            );
        } else {
            remove_tree(&path)?;
        }
    }
    Ok(())
}
