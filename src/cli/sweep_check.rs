//! A sweep file's keys and values checked against the scenario schema
//! before any trial runs: a mistyped `[[param]]` or `[fixed]` key, a value
//! of the wrong type, a table where a number goes, or a NaN or infinity is
//! bad input (exit 2, one line naming the sweep file and the key), not
//! thousands of failed trials in `trials.csv`.
//!
//! Keys and types first (`check_keys`): each `[fixed]` value is laid over
//! the base alone, and each parameter's values (explicit values, or a
//! range's two ends) with `[fixed]`, through the raw mirror only
//! (`Base::raw`). Then ranges and cross-key rules (`check_values`): a value
//! is refused when the scenario refuses it with every combination of the
//! other parameters' extremes, so a negative cooldown or a probability over
//! 1 is refused, while a jitter over one limit that another parameter's
//! larger limit makes valid is left to the trials (a failed trial, its
//! reason in `trials.csv`'s `error` column, the configuration infeasible).

use super::Failure;
use fleetsim::scenario::ScenarioError;
use fleetsim::sweep::Sweep;
use fleetsim::sweep::runner::Base;
use fleetsim::sweep::space::{Config, Domain, Param};
use fleetsim::sweep::spec::SamplerKind;
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
    check_values(path, text, sweep, base)
}

/// At most this many combinations of the other parameters' extremes are
/// tried for one value the base alone refuses; past it the value is left
/// to the trials (never refused on a guess).
const MAX_COMBINATIONS: usize = 1024;

/// Refuses the first `[[param]]` value (or `[fixed]` set) the scenario
/// refuses whatever the other parameters are: checked fully (ranges and
/// cross-key rules, the event budget's estimate) with only that key
/// changed, and, when that fails, with every combination of the other
/// parameters' extremes (`extremes`). A value some combination makes valid
/// stays a per-trial failure in `trials.csv`.
pub fn check_values(path: &Path, text: &str, sweep: &Sweep, base: &Base) -> Result<(), Failure> {
    let all: Vec<Vec<toml::Value>> = sweep
        .params
        .iter()
        .map(|p| extremes(p, sweep.sampler))
        .collect();
    // The base as every trial starts from it: `[fixed]` over it (and
    // `hours`, which `Base` applies).
    if (!sweep.fixed.is_empty() || sweep.hours.is_some())
        && let Some(e) = refused_everywhere(base, &sweep.fixed, sweep, &all, None)
    {
        // The `[fixed]` key the error names, else the first; `hours`
        // when there is no `[fixed]`.
        let named = sweep
            .fixed
            .iter()
            .find(|(k, _)| Some(k.as_str()) == e.key.as_deref())
            .or(sweep.fixed.first());
        let (key, subject) = match named {
            Some((k, v)) => (format!("fixed.{k}"), format!("`{k}` = {}", short(v))),
            None => ("hours".to_string(), "`hours`".to_string()),
        };
        let line = fleetsim::scenario::load::find_key_line(text, &key)
            .map_or(String::new(), |l| format!(":{l}"));
        return Err(Failure::input(format!(
            "{}{line}: key `{key}`: {subject}: refused by the scenario whatever the parameters are: {}",
            path.display(),
            reason_of(&e),
        )));
    }
    for (i, p) in sweep.params.iter().enumerate() {
        for v in &own_values(p, &all[i]) {
            let mut config = sweep.fixed.clone();
            config.push((p.key.clone(), v.clone()));
            let Some(e) = refused_everywhere(base, &config, sweep, &all, Some(i)) else {
                continue;
            };
            return Err(Failure::input(format!(
                "{}{}: key `param[{i}]`: `{}` = {}: refused by the scenario whatever the other parameters are: {}",
                path.display(),
                param_line(text, &p.key),
                p.key,
                short(v),
                reason_of(&e),
            )));
        }
    }
    Ok(())
}

/// The error of `config` when it and every combination of the other
/// parameters' extremes (all but `skip`) fail; `None` when one is valid,
/// or when there are too many combinations to try.
fn refused_everywhere(
    base: &Base,
    config: &Config,
    sweep: &Sweep,
    all: &[Vec<toml::Value>],
    skip: Option<usize>,
) -> Option<ScenarioError> {
    let first = base.scenario(config).err()?;
    let others: Vec<usize> = (0..all.len()).filter(|&j| Some(j) != skip).collect();
    let mut count: usize = 1;
    for &j in &others {
        count = count.checked_mul(all[j].len().max(1))?;
        if count > MAX_COMBINATIONS {
            return None;
        }
    }
    if others.is_empty() {
        return Some(first);
    }
    for c in 0..count {
        let mut with = config.clone();
        let mut rest = c;
        for &j in &others {
            let n = all[j].len();
            with.push((sweep.params[j].key.clone(), all[j][rest % n].clone()));
            rest /= n;
        }
        if base.scenario(&with).is_ok() {
            return None;
        }
    }
    Some(first)
}

/// The values of a parameter a trial can take that bound the rest: a
/// range's ends (a one-point grid's middle), a numeric list's least and
/// greatest, every distinct value of any other list.
fn extremes(p: &Param, sampler: SamplerKind) -> Vec<toml::Value> {
    match &p.domain {
        Domain::Range { steps, .. } => {
            if sampler == SamplerKind::Grid && steps.unwrap_or(1) <= 1 {
                vec![p.at(0.5)]
            } else {
                vec![p.at(0.0), p.at(1.0)]
            }
        }
        Domain::Values(vs) => {
            let num = |v: &toml::Value| match v {
                toml::Value::Integer(i) => Some(*i as f64),
                toml::Value::Float(x) => Some(*x),
                _ => None,
            };
            let mut out: Vec<toml::Value> = Vec::new();
            if vs.iter().all(|v| num(v).is_some()) && !vs.is_empty() {
                let by = |a: &&toml::Value, b: &&toml::Value| {
                    num(a).unwrap_or(0.0).total_cmp(&num(b).unwrap_or(0.0))
                };
                let lo = vs.iter().min_by(by).cloned();
                let hi = vs.iter().max_by(by).cloned();
                out.extend(lo);
                out.extend(hi.filter(|h| Some(h) != out.first()));
            } else {
                for v in vs {
                    if !out.contains(v) {
                        out.push(v.clone());
                    }
                }
            }
            out
        }
    }
}

/// The values of a parameter checked on their own: every distinct value
/// of a list (up to `MAX_OWN`; past it the list's extremes), a range's ends.
fn own_values(p: &Param, extremes: &[toml::Value]) -> Vec<toml::Value> {
    const MAX_OWN: usize = 256;
    match &p.domain {
        Domain::Values(vs) if vs.len() <= MAX_OWN => {
            let mut out: Vec<toml::Value> = Vec::new();
            for v in vs {
                if !out.contains(v) {
                    out.push(v.clone());
                }
            }
            out
        }
        _ => extremes.to_vec(),
    }
}

/// A scenario error's reason with the override wording removed.
fn reason_of(e: &ScenarioError) -> String {
    let r = e.reason.trim_end_matches(" (from --set)");
    let r = r.strip_prefix("--set: ").unwrap_or(r);
    match e.key.as_deref() {
        Some(k) => format!("`{k}`: {r}"),
        None => r.to_string(),
    }
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
