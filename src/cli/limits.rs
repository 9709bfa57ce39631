//! The limits on what the command line takes in, checked before any work
//! starts: how many threads a flag may ask for, and how many bytes any input
//! file may hold (one bounded reader for every file the CLI reads, regular
//! or not: `/dev/zero` and FIFOs stop at the limit like any file).

use super::Failure;
use std::fs::File;
use std::io::Read;
use std::path::Path;

/// The most threads a flag may ask for: more is a typo, not a machine.
pub const MAX_THREADS: u64 = 4096;

/// The input limit in MiB when `FLEETSIM_MAX_INPUT_MB` is not set.
pub const DEFAULT_MAX_INPUT_MB: u64 = 64;

/// The environment variable that raises (or lowers) the input limit, in MiB.
pub const MAX_INPUT_ENV: &str = "FLEETSIM_MAX_INPUT_MB";

/// The threads to run on for `flag` (e.g. `--threads`): the machine's
/// cores when not asked; an absurd count is bad input; more than the
/// machine has is capped to it, with a note on stderr.
pub fn thread_count(flag: &str, asked: Option<u64>) -> Result<usize, Failure> {
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    let Some(n) = asked else { return Ok(cores) };
    if n == 0 || n > MAX_THREADS {
        return Err(Failure::input(format!(
            "{flag} {n}: must be between 1 and {MAX_THREADS} (this machine has {cores}; \
             leave {flag} out to use them all)"
        )));
    }
    if n > cores as u64 {
        eprintln!("note: {flag} {n} capped to the {cores} this machine has");
        return Ok(cores);
    }
    Ok(n as usize)
}

/// The input limit in bytes: `FLEETSIM_MAX_INPUT_MB` MiB, or 64 MiB.
pub fn max_input_bytes() -> Result<u64, String> {
    let Some(v) = std::env::var_os(MAX_INPUT_ENV) else {
        return Ok(DEFAULT_MAX_INPUT_MB << 20);
    };
    let s = v.to_string_lossy();
    match s.trim().parse::<u64>() {
        Ok(mb) if (1..=1 << 20).contains(&mb) => Ok(mb << 20),
        _ => Err(format!(
            "{MAX_INPUT_ENV}=`{s}`: must be a whole number of MiB between 1 and {}",
            1u64 << 20
        )),
    }
}

/// Reads at most the input limit from `path`; an error names the file (and,
/// past the limit, the limit and how to raise it). The message is what a
/// loader's file callback returns.
pub fn read_bounded(path: &Path) -> Result<Vec<u8>, String> {
    let limit = max_input_bytes()?;
    let cannot = |e: std::io::Error| format!("{}: cannot read: {e}", path.display());
    let fifo = is_fifo(path);
    let mut bytes = Vec::new();
    if fifo {
        read_fifo(path, limit, &mut bytes).map_err(cannot)?;
        if bytes.is_empty() {
            return Err(format!(
                "{}: a named pipe that gave no data (no writer?)",
                path.display()
            ));
        }
    } else {
        let file = File::open(path).map_err(cannot)?;
        file.take(limit + 1)
            .read_to_end(&mut bytes)
            .map_err(cannot)?;
    }
    if bytes.len() as u64 > limit {
        return Err(format!(
            "{}: larger than the input limit of {} MiB (set {MAX_INPUT_ENV} to raise it)",
            path.display(),
            limit >> 20
        ));
    }
    Ok(bytes)
}

/// Whether `path` is a named pipe (or a shell's `/dev/fd/N` pipe).
pub fn is_fifo(path: &Path) -> bool {
    use std::os::unix::fs::FileTypeExt;
    std::fs::metadata(path).is_ok_and(|m| m.file_type().is_fifo())
}

/// A named pipe, opened without waiting for a writer (`O_NONBLOCK`): with
/// none, it reads as empty (an error, "empty", not a hang); with one (a
/// shell's `<(zcat log.gz)`), it reads until the writer closes, waiting
/// for data as a blocking read would.
pub fn read_fifo(path: &Path, limit: u64, bytes: &mut Vec<u8>) -> std::io::Result<()> {
    use std::os::unix::fs::OpenOptionsExt;
    /// `O_NONBLOCK` on Linux.
    const O_NONBLOCK: i32 = 0o4000;
    let mut file = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(O_NONBLOCK)
        .open(path)?;
    let mut buf = [0u8; 1 << 16];
    loop {
        match file.read(&mut buf) {
            Ok(0) => return Ok(()),
            Ok(n) => {
                bytes.extend_from_slice(&buf[..n]);
                if bytes.len() as u64 > limit {
                    return Ok(());
                }
            }
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {
                std::thread::sleep(std::time::Duration::from_millis(5));
            }
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
}

/// `read_bounded` as UTF-8 text.
pub fn read_text_bounded(path: &Path) -> Result<String, String> {
    let bytes = read_bounded(path)?;
    String::from_utf8(bytes).map_err(|e| {
        format!(
            "{}: not UTF-8 text (byte {})",
            path.display(),
            e.utf8_error().valid_up_to()
        )
    })
}

/// Every input file the CLI reads goes through here: at most the input
/// limit, or bad input (exit 2) naming the file.
pub fn read_input(path: &Path) -> Result<Vec<u8>, Failure> {
    read_bounded(path).map_err(Failure::input)
}

/// `read_input` as UTF-8 text.
pub fn read_input_text(path: &Path) -> Result<String, Failure> {
    read_text_bounded(path).map_err(Failure::input)
}
