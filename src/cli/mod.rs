//! The command line: clap commands, paths, output files, exit codes.
//! Everything here is I/O at the edge; the simulation is the library's.

mod compare;
mod limits;
mod lock;
mod optimise;
mod output;
mod replay;
mod report;
mod run;
mod saturate;
mod scenario_cmd;
mod sweep;
mod sweep_check;

use clap::{Parser, Subcommand};

/// Exit code for bad input (a scenario, a flag, a file).
pub const EXIT_INPUT: i32 = 2;
/// Exit code for a failure while running.
pub const EXIT_RUN: i32 = 1;
/// Exit code of `replay --calibrate --check` when the verdict is negative:
/// the calibration does not reproduce its window.
pub const EXIT_VERDICT: i32 = 3;
/// Exit code of a run or sweep stopped by Ctrl-C (128 + SIGINT, as shells report it).
pub const EXIT_INTERRUPTED: i32 = 130;

#[derive(Parser)]
#[command(
    name = "fleetsim",
    version,
    about = "Simulate worker recycling in pre-fork web fleets (gunicorn, uWSGI, puma, ...)",
    long_about = "fleetsim simulates a fleet of pre-fork web workers whose memory grows, the \
                  recycler that replaces them (jittered limits, RSS sampling, cooldowns, \
                  pressure, fleet leases) and the retrying client that feels each recycle. \
                  With no scenario it runs the embedded default, the seeds' 2x3 Render fleet."
)]
struct Cli {
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

    pub fn verdict(message: impl Into<String>) -> Self {
        Failure {
            code: EXIT_VERDICT,
            message: message.into(),
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

pub fn main() -> i32 {
    let cli = Cli::parse();
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
