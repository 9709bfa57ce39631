//! `fleetsim completions SHELL` and `fleetsim man`: shell completions and
//! man pages generated from the clap definitions, so they never drift from
//! the flags (clap_complete, clap_mangen).

use super::Failure;
use clap::{Args, Command};
use clap_complete::Shell;
use std::fs;
use std::io::Write;
use std::path::PathBuf;

#[derive(Args, Debug)]
pub struct CompletionsArgs {
    /// The shell: bash, zsh, fish, elvish or powershell.
    pub shell: Shell,
}

#[derive(Args, Debug)]
pub struct ManArgs {
    /// Write fleetsim.1 and one page per subcommand (fleetsim-run.1, ...)
    /// into this directory instead of fleetsim.1 to stdout.
    #[arg(long)]
    pub out: Option<PathBuf>,
}

/// Prints the completion script for `args.shell` to stdout.
pub fn completions(args: CompletionsArgs, mut cmd: Command) -> Result<(), Failure> {
    let mut out = std::io::stdout().lock();
    clap_complete::generate(args.shell, &mut cmd, "fleetsim", &mut out);
    out.flush()
        .map_err(|e| Failure::run(format!("stdout: {e}")))
}

/// Prints fleetsim.1 to stdout, or writes every page into `--out`.
pub fn man(args: ManArgs, cmd: Command) -> Result<(), Failure> {
    let Some(dir) = args.out else {
        let mut out = std::io::stdout().lock();
        return render(&cmd, &mut out).map_err(|e| Failure::run(format!("stdout: {e}")));
    };
    fs::create_dir_all(&dir)
        .map_err(|e| Failure::run(format!("{}: cannot create: {e}", dir.display())))?;
    // One page per command, named by its display name (fleetsim-run.1).
    clap_mangen::generate_to(cmd, &dir).map_err(|e| Failure::run(format!("{}: {e}", dir.display())))
}

fn render(cmd: &Command, out: &mut dyn Write) -> std::io::Result<()> {
    clap_mangen::Man::new(cmd.clone()).render(out)
}
