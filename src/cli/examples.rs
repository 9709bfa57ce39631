//! The EXAMPLES section of every command's `--help` (and man page): one
//! table, laid onto the clap definition at start-up, so a subcommand
//! without examples, or an example whose flags no longer parse, fails the
//! tests below rather than a user.

use clap::Command;

/// (command path, examples: the command line, then what it does).
const EXAMPLES: &[(&str, &[(&str, &str)])] = &[
    (
        "",
        &[
            (
                "fleetsim run",
                "simulate the embedded default (2x3 fleet, 24 h, seed 1)",
            ),
            (
                "fleetsim saturate",
                "what the default's policy permits at saturation",
            ),
            ("fleetsim run --help", "every flag of one command"),
        ],
    ),
    (
        "run",
        &[
            (
                "fleetsim run",
                "the embedded default, seed 1, into out/render-2x3-seed1",
            ),
            (
                "fleetsim run scenarios/render-2x3-fixed.toml --seed 7",
                "a preset on another seed",
            ),
            (
                "fleetsim run --set policy.cooldown_s=60 --hours 6",
                "override keys, 6 simulated hours",
            ),
            (
                "fleetsim run --fail-if 'fetch_failed_per_hour > 0.1'",
                "exit 1 when a threshold is crossed",
            ),
            (
                "fleetsim run --json",
                "print summary.json instead of the table",
            ),
        ],
    ),
    (
        "saturate",
        &[
            (
                "fleetsim saturate",
                "each gate's ceiling, the simulated saturation, the verdicts",
            ),
            (
                "fleetsim saturate scenarios/render-2x3-fixed.toml --seeds 8",
                "more seeds",
            ),
            (
                "fleetsim saturate --check",
                "exit 1 when the policy is not a capacity guard",
            ),
        ],
    ),
    (
        "sweep",
        &[
            (
                "fleetsim sweep scenarios/sweeps/render-2x3-cooldown.toml",
                "grid over the sweep file",
            ),
            (
                "fleetsim sweep scenarios/sweeps/render-2x3-cooldown.toml --shard 0/4 --out results/shard-0",
                "one shard of four",
            ),
            (
                "fleetsim sweep scenarios/sweeps/render-2x3-cooldown.toml --resume",
                "finish an interrupted sweep",
            ),
        ],
    ),
    (
        "optimise",
        &[(
            "fleetsim optimise scenarios/sweeps/render-2x3-optimise.toml --budget 60",
            "60 evaluations, then the winner re-run on fresh seeds",
        )],
    ),
    (
        "report",
        &[
            (
                "fleetsim report out/render-2x3-seed1",
                "charts and report.html for a run",
            ),
            (
                "fleetsim report out/render-2x3-seed1 --from 20:00 --to 21:30",
                "zoom on a window",
            ),
            (
                "fleetsim report out/render-2x3-cooldown --open",
                "a sweep's page, opened in a browser",
            ),
        ],
    ),
    (
        "compare",
        &[
            (
                "fleetsim compare out/render-2x3-seed1 out/render-2x3-fixed-seed1",
                "two run directories",
            ),
            (
                "fleetsim compare --seeds 20 default scenarios/render-2x3-fixed.toml",
                "both scenarios on seeds 1..20, paired",
            ),
        ],
    ),
    (
        "merge",
        &[(
            "fleetsim merge results/shard-0 results/shard-1 --out results/merged",
            "combine a sharded sweep",
        )],
    ),
    (
        "replay",
        &[
            (
                "fleetsim replay scenarios/recordings/seeds-31min.log",
                "analyse a platform log",
            ),
            (
                "fleetsim replay events.csv gunicorn-inst-A.log --instance gunicorn-inst-A.log=inst-A",
                "several instruments of one window",
            ),
            (
                "fleetsim replay scenarios/recordings/generated-24h.csv --calibrate --check",
                "fit, validate, exit 1 if it does not reproduce",
            ),
            (
                "fleetsim replay scenarios/recordings/generated-24h.csv --calibrate --force --what-if scenarios/whatif/token-bucket.toml",
                "the window under another policy (--force: this window fails one validation row, so the what-if runs labelled as such)",
            ),
        ],
    ),
    (
        "scenario",
        &[(
            "fleetsim scenario show",
            "the embedded default, every key resolved",
        )],
    ),
    (
        "scenario show",
        &[
            (
                "fleetsim scenario show",
                "the embedded default, every key resolved",
            ),
            (
                "fleetsim scenario show scenarios/leakless.toml --set policy.cooldown_s=5",
                "a preset with an override",
            ),
        ],
    ),
    (
        "completions",
        &[(
            "fleetsim completions bash > ~/.local/share/bash-completion/completions/fleetsim",
            "install bash completions",
        )],
    ),
    (
        "man",
        &[
            ("fleetsim man | man -l -", "read the man page"),
            (
                "fleetsim man --out /usr/local/share/man/man1",
                "write every page",
            ),
        ],
    ),
];

/// The examples of the command at `path` (`""` the top level, `"scenario
/// show"`), as help text.
fn section(path: &str) -> Option<String> {
    let (_, lines) = EXAMPLES.iter().find(|(p, _)| *p == path)?;
    let width = lines
        .iter()
        .map(|(c, _)| c.len())
        .filter(|n| *n <= 60)
        .max()
        .unwrap_or(0);
    let mut out = String::from("Examples:");
    for (cmd, what) in *lines {
        if cmd.len() <= width {
            out.push_str(&format!("\n  {cmd:<width$}  # {what}"));
        } else {
            out.push_str(&format!("\n  # {what}\n  {cmd}"));
        }
    }
    Some(out)
}

/// `cmd` and every subcommand with its examples after the help (kept
/// after any text the command already has there, such as exit codes).
pub fn add(cmd: Command) -> Command {
    add_at(cmd, "")
}

fn add_at(mut cmd: Command, path: &str) -> Command {
    if let Some(text) = section(path) {
        let after = match cmd.get_after_help() {
            Some(existing) => format!("{existing}\n\n{text}"),
            None => text,
        };
        cmd = cmd.after_help(after);
    }
    let names: Vec<String> = cmd
        .get_subcommands()
        .map(|s| s.get_name().to_string())
        .collect();
    for name in names {
        let sub_path = if path.is_empty() {
            name.clone()
        } else {
            format!("{path} {name}")
        };
        cmd = cmd.mut_subcommand(&name, |s| add_at(s, &sub_path));
    }
    cmd
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::{CommandFactory, Parser};

    /// Every command path of the clap definition, `""` the top level.
    fn paths(cmd: &Command, path: &str, out: &mut Vec<String>) {
        out.push(path.to_string());
        for s in cmd.get_subcommands() {
            let p = if path.is_empty() {
                s.get_name().to_string()
            } else {
                format!("{path} {}", s.get_name())
            };
            paths(s, &p, out);
        }
    }

    #[test]
    fn every_subcommand_has_examples_in_its_help() {
        let mut cmd = add(super::super::Cli::command());
        cmd.build();
        let mut all = Vec::new();
        paths(&cmd, "", &mut all);
        // clap's own `help` subcommands print other commands' help.
        let missing: Vec<&String> = all
            .iter()
            .filter(|p| !p.split(' ').any(|w| w == "help"))
            .filter(|p| section(p).is_none())
            .collect();
        assert!(missing.is_empty(), "commands without examples: {missing:?}");
        for p in all.iter().filter(|p| section(p).is_some()) {
            let mut sub = &cmd;
            for name in p.split_whitespace() {
                sub = sub.find_subcommand(name).unwrap();
            }
            let help = sub.clone().render_long_help().to_string();
            assert!(
                help.contains("Examples:\n  "),
                "`fleetsim {p} --help` has no examples:\n{help}"
            );
        }
        assert!(
            EXAMPLES.iter().all(|(p, _)| all.contains(&p.to_string())),
            "an example for no command"
        );
    }

    #[test]
    fn every_example_parses_with_the_current_flags() {
        for (path, lines) in EXAMPLES {
            for (line, _) in *lines {
                let line = line
                    .split(" > ")
                    .next()
                    .unwrap()
                    .split(" | ")
                    .next()
                    .unwrap();
                let words: Vec<String> = line
                    .split('\'')
                    .enumerate()
                    .flat_map(|(i, part)| {
                        if i % 2 == 1 {
                            vec![part.to_string()]
                        } else {
                            part.split_whitespace().map(str::to_string).collect()
                        }
                    })
                    .collect();
                if words.iter().any(|w| w == "--help") {
                    continue;
                }
                let parsed = super::super::Cli::try_parse_from(&words);
                assert!(
                    parsed.is_ok(),
                    "`{line}` (examples of `{path}`) does not parse: {}",
                    parsed.err().unwrap()
                );
            }
        }
    }
}
