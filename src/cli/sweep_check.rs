//! A sweep file's keys and values checked against the scenario schema
//! before any trial runs: a mistyped `[[param]]` or `[fixed]` key, a value
//! of the wrong type, a table where a number goes, or a NaN or infinity is
//! bad input (exit 2, one line naming the sweep file and the key), not
//! thousands of failed trials in `trials.csv`.
//!
//! Each `[fixed]` value is laid over the base alone, and each parameter's
//! values (explicit values, or a range's two ends) with `[fixed]`, through
//! the raw mirror only (`Base::raw`: keys and types). Range and cross-key
//! checks stay the trials': a jitter over the base limit may be what
//! another parameter's larger limit makes valid.

use super::Failure;
use fleetsim::sweep::Sweep;
use fleetsim::sweep::runner::Base;
use fleetsim::sweep::space::{Config, Domain};
use std::path::Path;

/// Refuses the first sweep key or value the base scenario cannot take.
pub fn check_keys(path: &Path, text: &str, sweep: &Sweep, base: &Base) -> Result<(), Failure> {
    let refuse = |at: String, shown: &str, value: &toml::Value, config: &Config| {
        let (also, reason) = if !finite(value) {
            (String::new(), "not a finite number".to_string())
        } else {
            let Err(e) = base.raw(config) else {
                return Ok(());
            };
            let also = match e.key.as_deref() {
                Some(k) if k != shown => format!(" (key `{k}`)"),
                _ => String::new(),
            };
            let r = e.reason.trim_end_matches(" (from --set)");
            (also, r.strip_prefix("--set: ").unwrap_or(r).to_string())
        };
        Err(Failure::input(format!(
            "{}{at}: `{shown}` = {}: not a value the scenario takes{also}: {reason}",
            path.display(),
            short(value),
        )))
    };
    for (k, v) in &sweep.fixed {
        let key = format!("fixed.{k}");
        let line = fleetsim::scenario::load::find_key_line(text, &key)
            .map_or(String::new(), |l| format!(":{l}"));
        let config = vec![(k.clone(), v.clone())];
        refuse(format!("{line}: key `{key}`"), k, v, &config)?;
    }
    for (i, p) in sweep.params.iter().enumerate() {
        let values: Vec<toml::Value> = match &p.domain {
            Domain::Values(v) => v.clone(),
            Domain::Range { .. } => vec![p.at(0.0), p.at(1.0)],
        };
        let at = format!("{}: key `param[{i}]`", param_line(text, &p.key));
        for v in &values {
            let mut config = sweep.fixed.clone();
            config.push((p.key.clone(), v.clone()));
            refuse(at.clone(), &p.key, v, &config)?;
        }
    }
    Ok(())
}

/// No NaN or infinity anywhere in a value (an array's, a table's).
fn finite(v: &toml::Value) -> bool {
    match v {
        toml::Value::Float(x) => x.is_finite(),
        toml::Value::Array(a) => a.iter().all(finite),
        toml::Value::Table(t) => t.values().all(finite),
        _ => true,
    }
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
