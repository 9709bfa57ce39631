//! Sweep files: which scenario keys vary, how configurations are sampled,
//! how many replications each gets, and what "better" means (objectives
//! and constraints over summary metrics). Raw serde mirror, then `validate`.

use serde::{Deserialize, Serialize};
use std::fmt;

/// A sweep file's error: the line when known, the dotted key, what is wrong.
/// The caller prefixes the file name.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub struct SweepError {
    pub line: Option<usize>,
    pub key: Option<String>,
    pub reason: String,
}

impl fmt::Display for SweepError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if let Some(line) = self.line {
            write!(f, ":{line}")?;
        }
        use crate::text::one_line;
        if let Some(key) = &self.key {
            write!(f, ": key `{}`", one_line(key))?;
        }
        write!(f, ": {}", one_line(&self.reason))
    }
}

/// Reads a sweep file's text: TOML -> raw mirror -> checked `Sweep`. This
/// is the path `fleetsim sweep` takes (and the sweep fuzz target).
pub fn parse(text: &str) -> Result<(RawSweep, super::Sweep), SweepError> {
    let at = |key: &str, reason: String| SweepError {
        line: crate::scenario::load::find_key_line(text, key),
        key: Some(key.to_string()),
        reason,
    };
    let table: toml::Table = text.parse().map_err(|e: toml::de::Error| {
        let (line, key, reason) = crate::scenario::load::syntax_error(text, &e);
        SweepError { line, key, reason }
    })?;
    let raw: RawSweep =
        serde_path_to_error::deserialize(toml::Value::Table(table)).map_err(|e| {
            at(
                &e.path().to_string(),
                e.inner().message().trim().to_string(),
            )
        })?;
    let sweep = super::validate(&raw).map_err(|(k, r)| at(&k, r))?;
    Ok((raw, sweep))
}

#[derive(Serialize, Deserialize, Clone, Copy, Debug, PartialEq, Eq)]
#[serde(rename_all = "snake_case")]
pub enum SamplerKind {
    /// The cartesian product of every parameter's values (or `steps` points).
    Grid,
    Random,
    /// Latin hypercube: each parameter's range cut in `samples` strata, one sample each.
    Lhs,
    /// Owen-scrambled Sobol points (low discrepancy).
    Sobol,
}

#[derive(Serialize, Deserialize, Clone, Debug, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct RawSweep {
    /// The base scenario, relative to the sweep file; left out = the
    /// embedded default (an empty name is refused: it reads as a mistake).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub base: Option<String>,
    /// Master seed: replication r of every configuration uses the seed derived
    /// from (seed, r), so configurations share random numbers.
    #[serde(default = "one")]
    pub seed: u64,
    #[serde(default = "one")]
    pub replications: u64,
    /// Simulated hours per trial (overrides the base's run.duration_h).
    #[serde(default)]
    pub hours: Option<f64>,
    #[serde(default = "grid")]
    pub sampler: SamplerKind,
    /// Configurations drawn by random, lhs and sobol.
    #[serde(default)]
    pub samples: u64,
    /// Overrides every configuration shares (not the base), e.g.
    /// `[fixed.policy.token_bucket]` `enabled = true`.
    #[serde(default)]
    pub fixed: toml::Table,
    #[serde(rename = "param", default)]
    pub params: Vec<RawParam>,
    #[serde(rename = "objective", default)]
    pub objectives: Vec<RawObjective>,
    #[serde(rename = "constraint", default)]
    pub constraints: Vec<RawConstraint>,
}

fn one() -> u64 {
    1
}

fn grid() -> SamplerKind {
    SamplerKind::Grid
}

#[derive(Serialize, Deserialize, Clone, Debug, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct RawParam {
    /// Any dotted scenario key, e.g. `policy.cooldown_s`.
    pub key: String,
    /// Explicit values (grid), or...
    #[serde(default)]
    pub values: Option<Vec<toml::Value>>,
    /// ...a range.
    #[serde(default)]
    pub min: Option<f64>,
    #[serde(default)]
    pub max: Option<f64>,
    #[serde(default)]
    pub log: bool,
    #[serde(default)]
    pub integer: bool,
    /// Grid points over a range.
    #[serde(default)]
    pub steps: Option<u64>,
}

#[derive(Serialize, Deserialize, Clone, Copy, Debug, PartialEq, Eq)]
#[serde(rename_all = "snake_case")]
pub enum Direction {
    Minimize,
    Maximize,
}

#[derive(Serialize, Deserialize, Clone, Debug, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct RawObjective {
    /// A summary.json metric, e.g. `capacity_loss_fraction`.
    pub metric: String,
    #[serde(default = "minimize")]
    pub direction: Direction,
    /// Weight in the scalar objective (weighted sum of minimised metrics).
    #[serde(default = "unit")]
    pub weight: f64,
}

fn minimize() -> Direction {
    Direction::Minimize
}

fn unit() -> f64 {
    1.0
}

#[derive(Serialize, Deserialize, Clone, Debug, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct RawConstraint {
    pub metric: String,
    /// One of `<=`, `<`, `==`, `>=`, `>`.
    pub op: String,
    pub value: f64,
}
