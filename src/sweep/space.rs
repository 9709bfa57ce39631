//! The validated sweep and its configurations: each one a list of
//! `(dotted key, TOML value)` overrides, drawn deterministically from the
//! master seed and the configuration index.

use super::spec::*;
use crate::engine::rng::{self, Stream, open01};
use crate::metrics::Summary;
use rand::seq::SliceRandom;

/// What a parameter may take.
#[derive(Clone, Debug, PartialEq)]
pub enum Domain {
    Values(Vec<toml::Value>),
    Range {
        min: f64,
        max: f64,
        log: bool,
        integer: bool,
        steps: Option<u64>,
    },
}

#[derive(Clone, Debug, PartialEq)]
pub struct Param {
    pub key: String,
    pub domain: Domain,
}

#[derive(Clone, Debug, PartialEq)]
pub struct Objective {
    pub metric: String,
    pub direction: Direction,
    pub weight: f64,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Op {
    Le,
    Lt,
    Eq,
    Ge,
    Gt,
}

#[derive(Clone, Debug, PartialEq)]
pub struct Constraint {
    pub metric: String,
    pub op: Op,
    pub value: f64,
}

impl Constraint {
    pub fn holds(&self, x: f64) -> bool {
        match self.op {
            Op::Le => x <= self.value,
            Op::Lt => x < self.value,
            Op::Eq => x == self.value,
            Op::Ge => x >= self.value,
            Op::Gt => x > self.value,
        }
    }
}

/// A checked sweep.
#[derive(Clone, Debug, PartialEq)]
pub struct Sweep {
    pub seed: u64,
    /// Overrides every configuration but the base applies first.
    pub fixed: Config,
    pub replications: u64,
    pub hours: Option<f64>,
    pub sampler: SamplerKind,
    pub samples: u64,
    pub params: Vec<Param>,
    pub objectives: Vec<Objective>,
    pub constraints: Vec<Constraint>,
    /// Each parameter's grid points (grid sampler only), built once the
    /// count is known to be under `MAX_CONFIGS`.
    grids: Vec<Vec<toml::Value>>,
}

/// One configuration: the overrides it applies to the base scenario.
pub type Config = Vec<(String, toml::Value)>;

/// At most this many configurations: a larger grid is almost surely a typo.
pub const MAX_CONFIGS: u64 = 10_000_000;

fn err(key: impl Into<String>, reason: impl Into<String>) -> (String, String) {
    (key.into(), reason.into())
}

/// Checks a raw sweep; errors are `(key, reason)`.
pub fn validate(raw: &RawSweep) -> Result<Sweep, (String, String)> {
    if raw.base.as_deref().is_some_and(|b| b.trim().is_empty()) {
        return Err(err(
            "base",
            "is empty: name the base scenario file, or leave `base` out for the embedded default",
        ));
    }
    if raw.replications == 0 || raw.replications > 100_000 {
        return Err(err("replications", "must be between 1 and 100000"));
    }
    if let Some(h) = raw.hours
        && !(h.is_finite() && h > 0.0)
    {
        return Err(err(
            "hours",
            format!("must be a positive number of hours, got {h}"),
        ));
    }
    // The scenario's own bound on run.duration_h, checked here so a sweep
    // with an impossible length fails before any trial (not in each row).
    if let Some(h) = raw.hours
        && h > 10.0 * 365.0 * 24.0
    {
        return Err(err(
            "hours",
            format!("{h:e} hours is longer than ten years"),
        ));
    }
    if raw.params.is_empty() {
        return Err(err("param", "a sweep needs at least one [[param]]"));
    }
    let params = raw
        .params
        .iter()
        .enumerate()
        .map(|(i, p)| param(i, p, raw.sampler))
        .collect::<Result<Vec<_>, _>>()?;
    distinct_keys(&params)?;
    if raw.sampler != SamplerKind::Grid && raw.samples == 0 {
        return Err(err("samples", "random, lhs and sobol need samples > 0"));
    }
    if raw.sampler != SamplerKind::Grid && raw.samples > MAX_CONFIGS {
        return Err(err(
            "samples",
            format!(
                "{} samples is more than the {MAX_CONFIGS} configurations a sweep may have",
                raw.samples
            ),
        ));
    }
    let grids = if raw.sampler == SamplerKind::Grid {
        grid_count(&params)?;
        params.iter().map(Param::grid).collect()
    } else {
        Vec::new()
    };
    let names = Summary::metric_names();
    let known = |i: usize, what: &str, m: &str| {
        if names.iter().any(|n| n == m) {
            Ok(())
        } else {
            Err(err(
                format!("{what}[{i}].metric"),
                format!(
                    "`{m}` is not a summary.json metric (e.g. capacity_loss_fraction, max_overshoot_mb)"
                ),
            ))
        }
    };
    if raw.objectives.is_empty() {
        return Err(err("objective", "a sweep needs at least one [[objective]]"));
    }
    let mut objectives = Vec::new();
    for (i, o) in raw.objectives.iter().enumerate() {
        known(i, "objective", &o.metric)?;
        if !o.weight.is_finite() || o.weight < 0.0 {
            return Err(err(
                format!("objective[{i}].weight"),
                "must be finite and >= 0",
            ));
        }
        objectives.push(Objective {
            metric: o.metric.clone(),
            direction: o.direction,
            weight: o.weight,
        });
    }
    let mut constraints = Vec::new();
    for (i, c) in raw.constraints.iter().enumerate() {
        known(i, "constraint", &c.metric)?;
        let op = match c.op.trim() {
            "<=" => Op::Le,
            "<" => Op::Lt,
            "==" => Op::Eq,
            ">=" => Op::Ge,
            ">" => Op::Gt,
            other => {
                return Err(err(
                    format!("constraint[{i}].op"),
                    format!("`{other}` is not one of <=, <, ==, >=, >"),
                ));
            }
        };
        if !c.value.is_finite() {
            return Err(err(format!("constraint[{i}].value"), "must be finite"));
        }
        constraints.push(Constraint {
            metric: c.metric.clone(),
            op,
            value: c.value,
        });
    }
    let mut fixed = Vec::new();
    flatten("", &raw.fixed, &mut fixed);
    for (k, _) in &fixed {
        if let Some(i) = params.iter().position(|p| related(&p.key, k)) {
            return Err(err(
                format!("fixed.{k}"),
                format!(
                    "`{}` is also param[{i}]: a key is either fixed or swept",
                    params[i].key
                ),
            ));
        }
    }
    let sweep = Sweep {
        seed: raw.seed,
        fixed,
        replications: raw.replications,
        hours: raw.hours,
        sampler: raw.sampler,
        samples: raw.samples,
        params,
        objectives,
        constraints,
        grids,
    };
    Ok(sweep)
}

/// Whether two dotted keys name the same value or one holds the other
/// (`policy.lease` and `policy.lease.ttl_s`).
pub fn related(a: &str, b: &str) -> bool {
    let within = |long: &str, short: &str| {
        long.strip_prefix(short)
            .is_some_and(|rest| rest.is_empty() || rest.starts_with('.'))
    };
    within(a, b) || within(b, a)
}

/// One `[[param]]` per key: a second one would silently replace the first.
fn distinct_keys(params: &[Param]) -> Result<(), (String, String)> {
    for (i, p) in params.iter().enumerate() {
        if let Some(j) = params[..i].iter().position(|q| related(&q.key, &p.key)) {
            return Err(err(
                format!("param[{i}].key"),
                format!(
                    "`{}` is already swept by param[{j}] (`{}`): one [[param]] per key",
                    p.key, params[j].key
                ),
            ));
        }
    }
    Ok(())
}

/// The grid's size, counted without building it (each parameter's points
/// are walked, none kept), refused past `MAX_CONFIGS`.
fn grid_count(params: &[Param]) -> Result<u64, (String, String)> {
    let counts: Vec<u64> = params.iter().map(Param::grid_len).collect();
    let n = counts
        .iter()
        .fold(1u128, |a, &b| a.saturating_mul(u128::from(b)));
    if n > u128::from(MAX_CONFIGS) {
        let factors: Vec<String> = params
            .iter()
            .zip(&counts)
            .map(|(p, c)| format!("{}: {c}", p.key))
            .collect();
        return Err(err(
            "param",
            format!(
                "the grid has {n} configurations ({}), more than the {MAX_CONFIGS} a sweep may have",
                factors.join(" x ")
            ),
        ));
    }
    Ok(n as u64)
}

/// `{policy = {lease = {ttl_s = 60}}}` -> `[("policy.lease.ttl_s", 60)]`.
fn flatten(prefix: &str, t: &toml::Table, out: &mut Config) {
    for (k, v) in t {
        let key = if prefix.is_empty() {
            k.clone()
        } else {
            format!("{prefix}.{k}")
        };
        match v {
            toml::Value::Table(inner) => flatten(&key, inner, out),
            other => out.push((key, other.clone())),
        }
    }
}

fn param(i: usize, p: &RawParam, sampler: SamplerKind) -> Result<Param, (String, String)> {
    let key = format!("param[{i}]");
    if p.key.is_empty() || p.key.split('.').any(str::is_empty) {
        return Err(err(
            format!("{key}.key"),
            format!("`{}` is not a dotted key", p.key),
        ));
    }
    let domain = match (&p.values, p.min, p.max) {
        (Some(v), None, None) => {
            if v.is_empty() {
                return Err(err(format!("{key}.values"), "must not be empty"));
            }
            Domain::Values(v.clone())
        }
        (None, Some(min), Some(max)) => {
            if !(min.is_finite() && max.is_finite() && min <= max) {
                return Err(err(
                    format!("{key}.min"),
                    format!("need finite min <= max, got {min}..{max}"),
                ));
            }
            if p.log && min <= 0.0 {
                return Err(err(format!("{key}.min"), "a log range needs min > 0"));
            }
            if sampler == SamplerKind::Grid && p.steps.unwrap_or(0) < 1 {
                return Err(err(
                    format!("{key}.steps"),
                    "a grid over a range needs steps >= 1",
                ));
            }
            if let Some(n) = p.steps.filter(|n| *n > MAX_CONFIGS) {
                return Err(err(
                    format!("{key}.steps"),
                    format!(
                        "`{}`: {n} grid points is more than the {MAX_CONFIGS} configurations \
                         a sweep may have",
                        p.key
                    ),
                ));
            }
            if p.integer {
                integer_bounds(&key, &p.key, min, max)?;
            }
            Domain::Range {
                min,
                max,
                log: p.log,
                integer: p.integer,
                steps: p.steps,
            }
        }
        _ => {
            return Err(err(
                key,
                format!("`{}`: give either values = [...] or min and max", p.key),
            ));
        }
    };
    Ok(Param {
        key: p.key.clone(),
        domain,
    })
}

/// The largest whole number an integer range may reach: every integer up
/// to 2^53 is exact in the f64 the range is drawn in.
const MAX_INTEGER: f64 = 9_007_199_254_740_992.0;

/// An integer range's bounds must be whole numbers: `[1.2, 1.8]` would
/// round every draw to one value.
fn integer_bounds(key: &str, name: &str, min: f64, max: f64) -> Result<(), (String, String)> {
    for (end, v) in [("min", min), ("max", max)] {
        if v.fract() != 0.0 || v.abs() > MAX_INTEGER {
            return Err(err(
                format!("{key}.{end}"),
                format!(
                    "`{name}`: an integer range needs whole-number bounds within +-2^53, got {min}..{max}"
                ),
            ));
        }
    }
    Ok(())
}

impl Param {
    /// How many grid points `grid` returns, without building them.
    fn grid_len(&self) -> u64 {
        match &self.domain {
            Domain::Values(v) => v.len() as u64,
            Domain::Range { .. } => {
                let mut last = None;
                let mut n = 0;
                self.grid_points(|v| {
                    if last.as_ref() != Some(&v) {
                        n += 1;
                        last = Some(v);
                    }
                });
                n
            }
        }
    }

    /// Calls `each` on the `steps` points over a range, in order.
    fn grid_points(&self, mut each: impl FnMut(toml::Value)) {
        let Domain::Range { steps, .. } = &self.domain else {
            return;
        };
        let n = steps.unwrap_or(1).max(1);
        for k in 0..n {
            let u = if n == 1 {
                0.5
            } else {
                k as f64 / (n - 1) as f64
            };
            each(self.at(u));
        }
    }

    /// Grid points: explicit values, or `steps` points over the range.
    fn grid(&self) -> Vec<toml::Value> {
        match &self.domain {
            Domain::Values(v) => v.clone(),
            Domain::Range { .. } => {
                let mut out: Vec<toml::Value> = Vec::new();
                self.grid_points(|v| {
                    if out.last() != Some(&v) {
                        out.push(v);
                    }
                });
                out
            }
        }
    }

    /// The value at quantile `u` in [0, 1] of the domain.
    pub fn at(&self, u: f64) -> toml::Value {
        match &self.domain {
            Domain::Values(v) => v[((u * v.len() as f64) as usize).min(v.len() - 1)].clone(),
            Domain::Range {
                min,
                max,
                log,
                integer,
                ..
            } => {
                let x = if *log {
                    (min.ln() + u * (max.ln() - min.ln())).exp()
                } else {
                    min + u * (max - min)
                };
                if *integer {
                    toml::Value::Integer(x.round().clamp(*min, *max) as i64)
                } else {
                    toml::Value::Float(x.clamp(*min, *max))
                }
            }
        }
    }
}

impl Sweep {
    /// Configurations, the base (index 0) excluded.
    pub fn config_count(&self) -> u64 {
        match self.sampler {
            SamplerKind::Grid => self
                .grids
                .iter()
                .map(|g| g.len() as u64)
                .fold(1u64, |a, b| a.saturating_mul(b)),
            _ => self.samples,
        }
    }

    /// Configuration `c` (1-based; 0 is the base and has no overrides).
    pub fn config(&self, c: u64) -> Config {
        if c == 0 {
            return Vec::new();
        }
        let i = c - 1;
        let values: Vec<toml::Value> = match self.sampler {
            SamplerKind::Grid => {
                let mut rest = i;
                let mut vals = Vec::new();
                // The last parameter varies fastest.
                for g in self.grids.iter().rev() {
                    vals.push(g[(rest % g.len() as u64) as usize].clone());
                    rest /= g.len() as u64;
                }
                vals.reverse();
                vals
            }
            SamplerKind::Random => {
                let mut r = rng::keyed(self.seed, Stream::Sampler, &[i]);
                self.params.iter().map(|p| p.at(open01(&mut r))).collect()
            }
            SamplerKind::Lhs => (0..self.params.len())
                .map(|d| self.params[d].at(self.lhs_u(i, d)))
                .collect(),
            SamplerKind::Sobol => (0..self.params.len())
                .map(|d| {
                    let u = sobol_burley::sample(i as u32, d as u32, self.seed as u32) as f64;
                    self.params[d].at(u)
                })
                .collect(),
        };
        let mut config = self.fixed.clone();
        config.extend(self.params.iter().map(|p| p.key.clone()).zip(values));
        config
    }

    /// Latin hypercube: dimension `d` is a seeded permutation of the
    /// `samples` strata, jittered inside its stratum.
    fn lhs_u(&self, i: u64, d: usize) -> f64 {
        let n = self.samples;
        let mut perm: Vec<u64> = (0..n).collect();
        perm.shuffle(&mut rng::keyed(
            self.seed,
            Stream::Sampler,
            &[u64::MAX, d as u64],
        ));
        let jitter = open01(&mut rng::keyed(
            self.seed,
            Stream::Sampler,
            &[i, d as u64, 1],
        ));
        (perm[i as usize] as f64 + jitter) / n as f64
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sweep(text: &str) -> Sweep {
        validate(&toml::from_str::<RawSweep>(text).unwrap()).unwrap()
    }

    const OBJ: &str = "[[objective]]\nmetric = \"capacity_loss_fraction\"\n";

    #[test]
    fn grid_is_the_cartesian_product() {
        let s = sweep(&format!(
            "[[param]]\nkey = \"a\"\nvalues = [1, 2, 3]\n[[param]]\nkey = \"b\"\nmin = 10.0\nmax = 30.0\nsteps = 3\n{OBJ}"
        ));
        assert_eq!(s.config_count(), 9);
        assert!(s.config(0).is_empty(), "configuration 0 is the base");
        let c = s.config(2);
        assert_eq!(c[0], ("a".into(), toml::Value::Integer(1)));
        assert_eq!(c[1], ("b".into(), toml::Value::Float(20.0)));
        assert_eq!(s.config(9)[0].1, toml::Value::Integer(3));
        assert_eq!(s.config(9)[1].1, toml::Value::Float(30.0));
    }

    #[test]
    fn samplers_stay_in_bounds_and_lhs_stratifies() {
        for sampler in ["random", "lhs", "sobol"] {
            let s = sweep(&format!(
                "sampler = \"{sampler}\"\nsamples = 50\n[[param]]\nkey = \"a\"\nmin = 1.0\nmax = 1000.0\nlog = true\n[[param]]\nkey = \"b\"\nmin = 0.0\nmax = 10.0\ninteger = true\n{OBJ}"
            ));
            assert_eq!(s.config_count(), 50);
            for c in 1..=50 {
                let cfg = s.config(c);
                let a = cfg[0].1.as_float().unwrap();
                let b = cfg[1].1.as_integer().unwrap();
                assert!(
                    (1.0..=1000.0).contains(&a) && (0..=10).contains(&b),
                    "{sampler}"
                );
                assert_eq!(cfg, s.config(c), "deterministic");
            }
        }
        let s = sweep(&format!(
            "sampler = \"lhs\"\nsamples = 20\n[[param]]\nkey = \"a\"\nmin = 0.0\nmax = 1.0\n{OBJ}"
        ));
        let mut strata: Vec<usize> = (1..=20)
            .map(|c| (s.config(c)[0].1.as_float().unwrap() * 20.0) as usize)
            .collect();
        strata.sort();
        assert_eq!(
            strata,
            (0..20).collect::<Vec<_>>(),
            "one sample per stratum"
        );
    }

    #[test]
    fn bad_sweeps_name_the_key() {
        let bad = |text: &str| {
            validate(&toml::from_str::<RawSweep>(text).unwrap())
                .unwrap_err()
                .0
        };
        assert_eq!(bad(OBJ), "param");
        assert_eq!(
            bad(&format!(
                "[[param]]\nkey = \"a\"\nmin = 1.0\nmax = 2.0\n{OBJ}"
            )),
            "param[0].steps"
        );
        assert_eq!(
            bad("[[param]]\nkey = \"a\"\nvalues = [1]\n[[objective]]\nmetric = \"nope\"\n"),
            "objective[0].metric"
        );
        assert_eq!(
            bad(&format!(
                "[[param]]\nkey = \"a\"\nvalues = [1]\n{OBJ}[[constraint]]\nmetric = \"oom_kills\"\nop = \"=<\"\nvalue = 0\n"
            )),
            "constraint[0].op"
        );
    }
}
