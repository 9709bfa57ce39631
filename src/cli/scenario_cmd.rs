//! `fleetsim scenario show`: the fully resolved scenario, every default.

use super::Failure;
use super::output::{ScenarioArgs, load_scenario};
use clap::Subcommand;

#[derive(Subcommand)]
pub enum ScenarioCmd {
    /// Print the fully resolved scenario (file + --set + defaults) as TOML.
    Show {
        #[command(flatten)]
        scenario: ScenarioArgs,
    },
}

pub fn run(cmd: ScenarioCmd) -> Result<(), Failure> {
    match cmd {
        ScenarioCmd::Show { scenario } => {
            let loaded = load_scenario(&scenario, None)?;
            let text = toml::to_string(&loaded.raw)
                .map_err(|e| Failure::run(format!("cannot print the scenario: {e}")))?;
            print!("{text}");
            Ok(())
        }
    }
}
