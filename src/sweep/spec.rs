//! Sweep files: which scenario keys vary, how configurations are sampled,
//! how many replications each gets, and what "better" means (objectives
//! and constraints over summary metrics). Raw serde mirror, then `validate`.

use serde::{Deserialize, Serialize};

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
    /// The base scenario, relative to the sweep file; empty = the embedded default.
    #[serde(default)]
    pub base: String,
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
