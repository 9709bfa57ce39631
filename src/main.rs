//! The `fleetsim` binary: parse arguments, run, map errors to exit codes.

mod cli;

fn main() {
    default_sigpipe();
    std::process::exit(cli::main());
}

/// A closed pipe ends the process as it ends `cat` (`fleetsim run | head`):
/// Rust starts with SIGPIPE ignored, so a print to a closed pipe would
/// panic instead. Outputs are files written whole (`AtomicFile`) before
/// anything is printed, so nothing is lost; the shell sees 141.
#[cfg(unix)]
fn default_sigpipe() {
    // SAFETY: called first thing in `main`, before any thread exists;
    // SIG_DFL is a valid disposition for SIGPIPE.
    unsafe {
        libc::signal(libc::SIGPIPE, libc::SIG_DFL);
    }
}

#[cfg(not(unix))]
fn default_sigpipe() {}
