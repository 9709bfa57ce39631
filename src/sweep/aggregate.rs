//! From trial rows to per-configuration results: means and 95% confidence
//! intervals of each objective, feasibility, the scalar objective and its
//! paired difference against the base (configuration 0) replication by
//! replication, and the Pareto front. Streaming: memory grows with the
//! number of configurations, not trials.

use super::space::{Constraint, Sweep};
use super::spec::Direction;
use super::stats::Welford;
use std::collections::BTreeMap;

/// The aggregate of one configuration.
#[derive(Clone, Debug, PartialEq)]
pub struct ConfigResult {
    pub config: u64,
    pub n: u64,
    /// Trials that failed (invalid configuration, event budget...).
    pub errors: u64,
    pub objective_mean: Vec<f64>,
    pub objective_ci95: Vec<f64>,
    pub constraint_mean: Vec<f64>,
    pub feasible: bool,
    /// Weighted sum of the objectives, each oriented to be minimised.
    pub scalar_mean: f64,
    pub scalar_ci95: f64,
    /// Scalar minus the base's, paired by replication (negative = better).
    pub diff_mean: f64,
    pub diff_ci95: f64,
}

#[derive(Default)]
struct Acc {
    objectives: Vec<Welford>,
    constraints: Vec<Welford>,
    scalar: Welford,
    diff: Welford,
    errors: u64,
}

/// Accumulates trials; push the base's rows first (`base`), then all rows.
pub struct Aggregate<'a> {
    sweep: &'a Sweep,
    base_scalar: BTreeMap<u64, f64>,
    configs: BTreeMap<u64, Acc>,
}

impl<'a> Aggregate<'a> {
    pub fn new(sweep: &'a Sweep) -> Self {
        Aggregate {
            sweep,
            base_scalar: BTreeMap::new(),
            configs: BTreeMap::new(),
        }
    }

    /// The scalar objective of one trial's metrics (looked up by name).
    pub fn scalar(&self, metric: &dyn Fn(&str) -> f64) -> f64 {
        self.sweep
            .objectives
            .iter()
            .map(|o| {
                let sign = match o.direction {
                    Direction::Minimize => 1.0,
                    Direction::Maximize => -1.0,
                };
                o.weight * sign * metric(&o.metric)
            })
            .sum()
    }

    /// Records the base's scalar for one replication (pass one).
    pub fn base(&mut self, replication: u64, metric: &dyn Fn(&str) -> f64) {
        let s = self.scalar(metric);
        self.base_scalar.insert(replication, s);
    }

    /// Records one trial (pass two); `None` for a failed trial.
    pub fn push(&mut self, config: u64, replication: u64, metric: Option<&dyn Fn(&str) -> f64>) {
        let (no, nc) = (self.sweep.objectives.len(), self.sweep.constraints.len());
        let scalar = metric.map(|m| self.scalar(m));
        let base = self.base_scalar.get(&replication).copied();
        let acc = self.configs.entry(config).or_insert_with(|| Acc {
            objectives: vec![Welford::default(); no],
            constraints: vec![Welford::default(); nc],
            ..Acc::default()
        });
        let Some(metric) = metric else {
            acc.errors += 1;
            return;
        };
        for (w, o) in acc.objectives.iter_mut().zip(&self.sweep.objectives) {
            w.push(metric(&o.metric));
        }
        for (w, c) in acc.constraints.iter_mut().zip(&self.sweep.constraints) {
            w.push(metric(&c.metric));
        }
        let scalar = scalar.expect("computed with the metric");
        acc.scalar.push(scalar);
        if let Some(b) = base {
            acc.diff.push(scalar - b);
        }
    }

    pub fn finish(self) -> Vec<ConfigResult> {
        let constraints: &[Constraint] = &self.sweep.constraints;
        self.configs
            .into_iter()
            .map(|(config, a)| {
                let constraint_mean: Vec<f64> = a.constraints.iter().map(Welford::mean).collect();
                let feasible = a.errors == 0
                    && a.scalar.n > 0
                    && a.scalar.mean().is_finite()
                    && constraints
                        .iter()
                        .zip(&constraint_mean)
                        .all(|(c, m)| c.holds(*m));
                ConfigResult {
                    config,
                    n: a.scalar.n,
                    errors: a.errors,
                    objective_mean: a.objectives.iter().map(Welford::mean).collect(),
                    objective_ci95: a.objectives.iter().map(Welford::ci95).collect(),
                    constraint_mean,
                    feasible,
                    scalar_mean: a.scalar.mean(),
                    scalar_ci95: a.scalar.ci95(),
                    diff_mean: a.diff.mean(),
                    diff_ci95: a.diff.ci95(),
                }
            })
            .collect()
    }
}

/// Objective means oriented so that smaller is better.
fn oriented(sweep: &Sweep, r: &ConfigResult) -> Vec<f64> {
    sweep
        .objectives
        .iter()
        .zip(&r.objective_mean)
        .map(|(o, m)| match o.direction {
            Direction::Minimize => *m,
            Direction::Maximize => -m,
        })
        .collect()
}

/// Feasible configurations no other feasible configuration dominates
/// (at least as good in every objective, better in one).
pub fn pareto<'r>(sweep: &Sweep, results: &'r [ConfigResult]) -> Vec<&'r ConfigResult> {
    let feasible: Vec<(&ConfigResult, Vec<f64>)> = results
        .iter()
        .filter(|r| r.feasible)
        .map(|r| (r, oriented(sweep, r)))
        .collect();
    let dominates = |a: &[f64], b: &[f64]| {
        a.iter().zip(b).all(|(x, y)| x <= y) && a.iter().zip(b).any(|(x, y)| x < y)
    };
    feasible
        .iter()
        .filter(|(_, v)| !feasible.iter().any(|(_, w)| dominates(w, v)))
        .map(|(r, _)| *r)
        .collect()
}

/// Feasible configurations, best scalar first (ties by index).
pub fn ranked(results: &[ConfigResult]) -> Vec<&ConfigResult> {
    let mut v: Vec<&ConfigResult> = results.iter().filter(|r| r.feasible).collect();
    v.sort_by(|a, b| {
        a.scalar_mean
            .total_cmp(&b.scalar_mean)
            .then(a.config.cmp(&b.config))
    });
    v
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sweep::spec::RawSweep;

    fn sweep() -> Sweep {
        let text = "[[param]]\nkey = \"a\"\nvalues = [1, 2]\n\
                    [[objective]]\nmetric = \"capacity_loss_fraction\"\n\
                    [[objective]]\nmetric = \"max_overshoot_mb\"\n\
                    [[constraint]]\nmetric = \"oom_kills\"\nop = \"==\"\nvalue = 0\n";
        crate::sweep::validate(&toml::from_str::<RawSweep>(text).unwrap()).unwrap()
    }

    fn result(config: u64, objectives: [f64; 2], feasible: bool) -> ConfigResult {
        ConfigResult {
            config,
            n: 1,
            errors: 0,
            objective_mean: objectives.to_vec(),
            objective_ci95: vec![0.0; 2],
            constraint_mean: vec![0.0],
            feasible,
            scalar_mean: objectives.iter().sum(),
            scalar_ci95: 0.0,
            diff_mean: 0.0,
            diff_ci95: 0.0,
        }
    }

    #[test]
    fn pareto_front_of_hand_made_points() {
        let s = sweep();
        let rs = vec![
            result(1, [1.0, 5.0], true),
            result(2, [2.0, 2.0], true),
            result(3, [5.0, 1.0], true),
            result(4, [3.0, 3.0], true),  // dominated by 2
            result(5, [0.5, 0.5], false), // infeasible: not on the front
            result(6, [2.0, 2.0], true),  // equal to 2: neither dominates
        ];
        let front: Vec<u64> = pareto(&s, &rs).iter().map(|r| r.config).collect();
        assert_eq!(front, vec![1, 2, 3, 6]);
        let best: Vec<u64> = ranked(&rs).iter().map(|r| r.config).collect();
        assert_eq!(best, vec![2, 6, 1, 3, 4]);
    }

    #[test]
    fn paired_differences_cancel_shared_noise() {
        let s = sweep();
        let mut agg = Aggregate::new(&s);
        let metrics = |c: f64, o: f64, oom: f64| {
            move |m: &str| match m {
                "capacity_loss_fraction" => c,
                "max_overshoot_mb" => o,
                "oom_kills" => oom,
                _ => f64::NAN,
            }
        };
        // Replication noise is large and shared; config 1 is better by 1.0.
        for (r, noise) in [(0u64, 0.0), (1, 10.0), (2, -7.0), (3, 3.0)] {
            agg.base(r, &metrics(noise + 2.0, 0.0, 0.0));
            agg.push(0, r, Some(&metrics(noise + 2.0, 0.0, 0.0)));
            agg.push(1, r, Some(&metrics(noise + 1.0, 0.0, 0.0)));
            agg.push(2, r, Some(&metrics(noise + 1.0, 0.0, 1.0)));
        }
        agg.push(3, 0, None);
        let res = agg.finish();
        let c1 = &res[1];
        assert!((c1.diff_mean + 1.0).abs() < 1e-12);
        assert!(c1.diff_ci95 < 1e-9, "paired: no noise left");
        assert!(c1.scalar_ci95 > 5.0, "unpaired: the noise stays");
        assert!(c1.feasible);
        assert!(!res[2].feasible, "oom_kills == 0 fails");
        assert!(!res[3].feasible && res[3].errors == 1);
    }
}
