//! The `fleetsim` binary: parse arguments, run, map errors to exit codes.

mod cli;

fn main() {
    std::process::exit(cli::main());
}
