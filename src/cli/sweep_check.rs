//! A sweep file's keys and values checked against the scenario schema
//! before any trial runs: a mistyped `[[param]]` or `[fixed]` key, a value
//! of the wrong type, a NaN or a table where a number goes is bad input
//! (exit 2, one line naming the sweep file and the key), not thousands of
//! failed trials in `trials.csv`.
//!
//! Each `[fixed]` set is applied to the base alone, and each parameter's
//! values (explicit values, or a range's two ends) with `[fixed]`. Only an
//! error about that key itself is refused: one that names another key can
//! depend on the combination (a jitter over a limit another parameter
//! raises) and stays a trial's error.

use super::Failure;
use fleetsim::sweep::Sweep;
use fleetsim::sweep::runner::Base;
use fleetsim::sweep::space::{Config, Domain, related};
use std::path::Path;

/// Refuses the first sweep key or value the base scenario cannot take.
pub fn check_keys(path: &Path, text: &str, sweep: &Sweep, base: &Base) -> Result<(), Failure> {
    let line = |key: &str| {
        fleetsim::scenario::load::find_key_line(text, key)
            .map_or(String::new(), |l| format!(":{l}"))
    };
    let refuse = |at: String, shown: &str, value: &toml::Value, config: &Config| {
        let Err(e) = base.scenario(config) else {
            return Ok(());
        };
        let Some(key) = e.key.as_deref().filter(|k| related(k, shown)) else {
            return Ok(());
        };
        let also = if key == shown {
            String::new()
        } else {
            format!(" (key `{key}`)")
        };
        Err(Failure::input(format!(
            "{}{at}: `{shown}` = {}: not a value the scenario takes{also}: {}",
            path.display(),
            short(value),
            e.reason.trim_end_matches(" (from --set)")
        )))
    };
    for (k, v) in &sweep.fixed {
        let key = format!("fixed.{k}");
        refuse(
            format!("{}: key `{key}`", line(&key)),
            k,
            v,
            &vec![(k.clone(), v.clone())],
        )?;
    }
    for (i, p) in sweep.params.iter().enumerate() {
        let values: Vec<toml::Value> = match &p.domain {
            Domain::Values(v) => v.clone(),
            Domain::Range { .. } => vec![p.at(0.0), p.at(1.0)],
        };
        for v in &values {
            let mut config = sweep.fixed.clone();
            config.push((p.key.clone(), v.clone()));
            refuse(
                format!("{}: key `param[{i}]`", param_line(text, &p.key)),
                &p.key,
                v,
                &config,
            )?;
        }
    }
    Ok(())
}

/// `:N` for the line of `key = "KEY"` in a `[[param]]`, when found.
fn param_line(text: &str, key: &str) -> String {
    let quoted = format!("\"{key}\"");
    text.lines()
        .position(|l| {
            let l = l.trim_start();
            l.starts_with("key") && l.contains(&quoted)
        })
        .map_or(String::new(), |i| format!(":{}", i + 1))
}

/// A value as TOML, cut short: a long array or table stays one short line.
fn short(v: &toml::Value) -> String {
    let s = v.to_string();
    if s.chars().count() > 60 {
        let cut: String = s.chars().take(57).collect();
        format!("{cut}...")
    } else {
        s
    }
}
