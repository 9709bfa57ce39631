//! One writer per output directory: `.fleetsim.lock`, created exclusively
//! and holding the writer's pid, removed when the writer is done (or
//! stopped by Ctrl-C). A second writer finds it and is refused (exit 2,
//! naming the pid) instead of appending the same trials twice. A lock whose
//! process is gone (a `kill -9`, a crash) is stale and taken over, with a
//! note; on a system without /proc every lock counts as held.

use super::Failure;
use std::fs::{self, OpenOptions};
use std::io::{ErrorKind, Write};
use std::path::{Path, PathBuf};

/// The lock's file name inside the directory it guards.
pub const LOCK_FILE: &str = ".fleetsim.lock";

/// A held lock; dropping it removes the file.
pub struct DirLock {
    path: PathBuf,
}

impl DirLock {
    /// Takes `dir`'s lock for `what` (e.g. "sweep"), or says who holds it.
    pub fn take(dir: &Path, what: &str) -> Result<DirLock, Failure> {
        let path = dir.join(LOCK_FILE);
        // Two attempts: the second after removing a stale lock.
        for _ in 0..2 {
            match OpenOptions::new().write(true).create_new(true).open(&path) {
                Ok(mut f) => {
                    writeln!(f, "{}", std::process::id())
                        .map_err(|e| Failure::run(format!("{}: {e}", path.display())))?;
                    return Ok(DirLock { path });
                }
                Err(e) if e.kind() == ErrorKind::AlreadyExists => {
                    let held = fs::read_to_string(&path).unwrap_or_default();
                    let pid = held.trim().parse::<u32>().ok();
                    // No pid yet: a writer may be between creating and writing it.
                    let fresh = || {
                        fs::metadata(&path)
                            .and_then(|m| m.modified())
                            .is_ok_and(|t| t.elapsed().is_ok_and(|d| d.as_secs() < 10))
                    };
                    let held = match pid {
                        Some(p) => alive(p) || !proc_exists(),
                        None => fresh(),
                    };
                    if held {
                        return Err(Failure::input(format!(
                            "{}: another fleetsim ({}) is writing this directory ({LOCK_FILE}); \
                             wait for it, or stop it, before this {what}",
                            dir.display(),
                            pid.map_or_else(
                                || "pid not yet written".to_string(),
                                |p| format!("pid {p}")
                            )
                        )));
                    }
                    eprintln!(
                        "note: {}: taking over a stale lock ({}) left by a fleetsim that is gone",
                        dir.display(),
                        pid.map_or_else(|| "no pid".to_string(), |p| format!("pid {p}"))
                    );
                    fs::remove_file(&path)
                        .map_err(|e| Failure::run(format!("{}: {e}", path.display())))?;
                }
                Err(e) => {
                    return Err(Failure::run(format!(
                        "{}: cannot create: {e}",
                        path.display()
                    )));
                }
            }
        }
        Err(Failure::input(format!(
            "{}: another fleetsim took the lock at the same moment; retry",
            path.display()
        )))
    }
}

impl Drop for DirLock {
    fn drop(&mut self) {
        let _ = fs::remove_file(&self.path);
    }
}

pub fn proc_exists() -> bool {
    Path::new("/proc/self").exists()
}

/// Whether process `pid` runs (Linux: it has a /proc entry).
pub fn alive(pid: u32) -> bool {
    Path::new(&format!("/proc/{pid}")).exists()
}
