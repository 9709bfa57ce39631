//! The command line: clap commands, paths, output files, exit codes.
//! Everything here is I/O at the edge; the simulation is the library's.

mod compare;
mod examples;
mod interrupt;
mod limits;
mod lock;
mod optimise;
mod optimise_trace;
mod output;
mod progress;
mod replay;
mod report;
mod run;
mod run_dir;
mod saturate;
mod scenario_cmd;
mod shell;
mod sweep;
mod sweep_check;
mod sweep_dir;

use clap::{CommandFactory, FromArgMatches, Parser, Subcommand};
use std::sync::LazyLock;

/// Exit code for bad input (a scenario, a flag, a file).
pub const EXIT_INPUT: i32 = 2;
/// Exit code for a failure while running.
pub const EXIT_RUN: i32 = 1;
/// Exit code of a negative verdict a pipeline gates on: `saturate --check`
/// (the policy is not a capacity guard), `replay --calibrate --check` (the
/// calibration does not reproduce its window), `run --fail-if` (a
/// threshold crossed). The same 1 as a failed run: either way the step did
/// not pass; the message (`error: verdict: ...`) says which and why.
pub const EXIT_VERDICT: i32 = 1;
/// Exit code of a run or sweep stopped by Ctrl-C (128 + SIGINT, as shells report it).
pub const EXIT_INTERRUPTED: i32 = 130;

/// `--version`: the crate and the model version (a sweep refuses rows of
/// another model; see `fleetsim::MODEL_VERSION`).
static VERSION: LazyLock<String> =
    LazyLock::new(|| format!("{} (model {})", fleetsim::VERSION, fleetsim::MODEL_VERSION));

#[derive(Parser)]
#[command(
    name = "fleetsim",
    version = VERSION.as_str(),
    about = "Simulate worker recycling in pre-fork web fleets (gunicorn, uWSGI, puma, ...)",
    long_about = "fleetsim simulates a fleet of pre-fork web workers whose memory grows, the \
                  recycler that replaces them (jittered limits, RSS sampling, cooldowns, \
                  pressure, fleet leases) and the retrying client that feels each recycle. \
                  With no scenario it runs the embedded default: the 2x3 gunicorn fleet of the \
                  field reports in docs/field-reports.md."
)]
struct Cli {
    /// No progress bar or progress lines on stderr (results and errors
    /// still print).
    #[arg(long, short = 'q', global = true)]
    quiet: bool,
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Simulate a scenario and write summary.json, events.csv, timeline.csv, workers.csv and scenario.toml.
    Run(run::RunArgs),
    /// What the policy permits at saturation, and the churn the clients absorb.
    Saturate(saturate::SaturateArgs),
    /// Run a parameter sweep: parallel, resumable (--resume), shardable (--shard K/N).
    Sweep(sweep::SweepArgs),
    /// Search a sweep's space with argmin, then re-check the winner on fresh seeds.
    Optimise(optimise::OptimiseArgs),
    /// Draw an output directory (run, saturate, sweep, optimise, replay) as SVG charts and report.html.
    Report(report::ReportArgs),
    /// Put run directories (or scenarios on --seeds N paired seeds) side by side: differences with 95% intervals, compare.json, report.html.
    Compare(compare::CompareArgs),
    /// Combine the outputs of a sharded sweep.
    Merge(sweep::MergeArgs),
    /// Import recorded windows (events.csv, JSON Lines, platform logs) and analyse them per limit regime.
    Replay(replay::ReplayArgs),
    /// Inspect scenario files.
    #[command(subcommand)]
    Scenario(scenario_cmd::ScenarioCmd),
    /// Print a shell completion script, e.g. `fleetsim completions bash > /etc/bash_completion.d/fleetsim`.
    Completions(shell::CompletionsArgs),
    /// Print the man page (fleetsim.1), or write every page with --out DIR.
    Man(shell::ManArgs),
}

/// An error with the exit code it maps to.
pub struct Failure {
    pub code: i32,
    pub message: String,
}

impl Failure {
    pub fn input(message: impl Into<String>) -> Self {
        Failure {
            code: EXIT_INPUT,
            message: message.into(),
        }
    }

    pub fn run(message: impl Into<String>) -> Self {
        Failure {
            code: EXIT_RUN,
            message: message.into(),
        }
    }

    /// A negative verdict: exit 1, the message prefixed `verdict: `.
    pub fn verdict(message: impl Into<String>) -> Self {
        Failure {
            code: EXIT_VERDICT,
            message: format!("verdict: {}", message.into()),
        }
    }

    pub fn interrupted(message: impl Into<String>) -> Self {
        Failure {
            code: EXIT_INTERRUPTED,
            message: message.into(),
        }
    }
}

/// The system refused a worker thread: a failed run (exit 1), never a panic.
impl From<fleetsim::sweep::runner::SpawnError> for Failure {
    fn from(e: fleetsim::sweep::runner::SpawnError) -> Self {
        Failure::run(format!(
            "{e}; retry with fewer --threads, or raise the limit that refused it"
        ))
    }
}

/// Exit status of a process whose stdout reader went away (`| head`):
/// what a shell reports for SIGPIPE (128 + 13).
const EXIT_BROKEN_PIPE: i32 = 141;

/// `fleetsim ... | head` closes stdout early: Rust ignores SIGPIPE, so the
/// next `println!` panics. That is no bug of the command: end quietly with
/// the shell's SIGPIPE status instead of a panic message.
fn quiet_broken_pipe() {
    let default = std::panic::take_hook();
    std::panic::set_hook(Box::new(move |info| {
        let msg = info
            .payload()
            .downcast_ref::<String>()
            .map(String::as_str)
            .or_else(|| info.payload().downcast_ref::<&str>().copied())
            .unwrap_or("");
        if msg.starts_with("failed printing to stdout") && msg.contains("Broken pipe") {
            std::process::exit(EXIT_BROKEN_PIPE);
        }
        default(info);
    }));
}

pub fn main() -> i32 {
    quiet_broken_pipe();
    // The definition with every command's EXAMPLES section (`examples.rs`).
    // Negative numbers are values (`--hours -1` is refused by the key's
    // own check, naming it), not unknown flags.
    let definition = || {
        examples::add(Cli::command()).mut_subcommands(|c| {
            c.allow_negative_numbers(true)
                .mut_subcommands(|c| c.allow_negative_numbers(true))
        })
    };
    let matches = definition()
        .try_get_matches()
        .and_then(|m| Cli::from_arg_matches(&m));
    let cli = match matches {
        Ok(cli) => cli,
        Err(e) => return flag_error(e),
    };
    progress::set_quiet(cli.quiet);
    let result = match cli.command {
        Command::Run(args) => run::run(args),
        Command::Saturate(args) => saturate::run(args),
        Command::Sweep(args) => sweep::sweep(args),
        Command::Merge(args) => sweep::merge(args),
        Command::Optimise(args) => optimise::run(args),
        Command::Report(args) => report::run(args),
        Command::Compare(args) => compare::run(args),
        Command::Replay(args) => replay::run(args),
        Command::Scenario(cmd) => scenario_cmd::run(cmd),
        Command::Completions(args) => shell::completions(args, definition()),
        Command::Man(args) => shell::man(args, definition()),
    };
    match result {
        Ok(()) => 0,
        Err(f) => {
            // One line whatever the message quotes (a path, a key).
            eprintln!("error: {}", fleetsim::text::one_line(&f.message));
            f.code
        }
    }
}

/// A command-line error: help and `--version` print as clap prints them;
/// any other is bad input, exit 2, on one line (clap's message, its tip,
/// and the usage line, without the blank lines between).
fn flag_error(e: clap::Error) -> i32 {
    use clap::error::ErrorKind;
    if matches!(
        e.kind(),
        ErrorKind::DisplayHelp
            | ErrorKind::DisplayVersion
            | ErrorKind::DisplayHelpOnMissingArgumentOrSubcommand
    ) {
        e.exit();
    }
    let text = e.render().to_string();
    let mut parts: Vec<String> = Vec::new();
    for line in text.lines().map(str::trim) {
        if line.is_empty() || line.starts_with("For more information") {
            continue;
        }
        let line = line.strip_prefix("error: ").unwrap_or(line);
        match line.strip_prefix("Usage: ") {
            Some(u) => parts.push(format!("(usage: {u})")),
            None if line.starts_with("tip:") => parts.push(format!("; {line}")),
            None => parts.push(line.to_string()),
        }
    }
    let line = parts.join(" ").replace(" ; tip:", "; tip:");
    eprintln!("error: {}", fleetsim::text::one_line(&line));
    EXIT_INPUT
}
