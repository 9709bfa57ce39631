//! Ctrl-C and SIGTERM for commands that keep nothing partial (`saturate`,
//! `replay`): their outputs are written whole at the end (`AtomicFile`), so
//! an interruption has nothing to save. The handler says so and exits at
//! once with `EXIT_INTERRUPTED`; the temporary files of a write in progress
//! are hidden (`.NAME.partial.*`) and never look complete. `run`, `sweep`
//! and `optimise` install their own handlers, which stop the loop and keep
//! what is complete.

use super::EXIT_INTERRUPTED;

/// Installs the handler for `command`; a second install in one process
/// (never, one command per process) is ignored, and the signal then ends
/// the process as the system does.
pub fn exit_on_interrupt(command: &'static str) {
    let _ = ctrlc::set_handler(move || {
        eprintln!(
            "fleetsim {command}: interrupted: nothing partial was written (each output \
             file is written whole or not at all); run it again"
        );
        std::process::exit(EXIT_INTERRUPTED);
    });
}
