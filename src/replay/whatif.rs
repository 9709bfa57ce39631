//! What-if: the calibrated window re-run under other policies, on the same
//! seeds (common random numbers), with each figure's difference against the
//! recorded policy as a paired 95% confidence interval.

use crate::Scenario;
use crate::metrics::Summary;
use crate::sim::{SimError, run_summary};
use crate::sweep::stats::Welford;
use rayon::prelude::*;
use serde::Serialize;

/// The figures the table compares, by summary name and display label.
pub const FIGURES: [(&str, &str); 7] = [
    ("recycles_per_hour", "recycles/h"),
    ("capacity_loss_fraction", "capacity loss"),
    ("overshoot_mb_s", "overshoot MB*s"),
    ("max_overshoot_mb", "max overshoot MB"),
    ("requests_reset", "resets"),
    ("fetch_failed", "fetch_failed"),
    ("requests_per_worker_p10", "lifetime p10"),
];

/// One figure under one policy: its mean, and the paired difference
/// against the recorded policy.
#[derive(Clone, Debug, Serialize, PartialEq)]
pub struct Figure {
    pub metric: String,
    pub mean: f64,
    pub diff_mean: f64,
    pub diff_ci95: f64,
}

#[derive(Clone, Debug, Serialize, PartialEq)]
pub struct PolicyResult {
    pub policy: String,
    pub figures: Vec<Figure>,
}

fn metric(s: &Summary, name: &str) -> f64 {
    s.metrics()
        .into_iter()
        .find(|(k, _)| k == name)
        .map_or(f64::NAN, |(_, v)| v)
}

fn runs(sc: &Scenario, seeds: &[u64]) -> Result<Vec<Summary>, SimError> {
    seeds.par_iter().map(|&s| run_summary(sc, s)).collect()
}

/// The recorded (calibrated) policy first, then each alternative.
pub fn what_if(
    recorded: &Scenario,
    alternatives: &[(String, Scenario)],
    seeds: &[u64],
) -> Result<Vec<PolicyResult>, SimError> {
    let base = runs(recorded, seeds)?;
    let mut out = vec![result("recorded", &base, &base)];
    for (name, sc) in alternatives {
        out.push(result(name, &runs(sc, seeds)?, &base));
    }
    Ok(out)
}

fn result(name: &str, runs: &[Summary], base: &[Summary]) -> PolicyResult {
    let figures = FIGURES
        .iter()
        .map(|(m, _)| {
            let (mut mean, mut diff) = (Welford::default(), Welford::default());
            for (r, b) in runs.iter().zip(base) {
                let (x, y) = (metric(r, m), metric(b, m));
                mean.push(x);
                diff.push(x - y);
            }
            Figure {
                metric: m.to_string(),
                mean: mean.mean(),
                diff_mean: diff.mean(),
                diff_ci95: diff.ci95(),
            }
        })
        .collect();
    PolicyResult {
        policy: name.to_string(),
        figures,
    }
}

/// The table the user came for: one row per policy, each figure's mean and
/// (after the recorded row) its difference against the recorded policy.
pub fn render(results: &[PolicyResult], seeds: usize) -> String {
    let mut s = format!(
        "\nwhat-if: the calibrated window under each policy, {seeds} seeds each (common random \
         numbers); differences against the recorded policy, paired, 95% CI\n"
    );
    for r in results {
        s.push_str(&format!("  {}\n", r.policy));
        for (f, (_, label)) in r.figures.iter().zip(FIGURES) {
            let shown = if f.metric == "capacity_loss_fraction" {
                100.0
            } else {
                1.0
            };
            let unit = if shown == 100.0 { " %" } else { "" };
            if r.policy == "recorded" {
                s.push_str(&format!("    {label:<18} {:>10.3}{unit}\n", f.mean * shown));
            } else {
                let sig = if f.diff_ci95.is_finite() && f.diff_mean.abs() > f.diff_ci95 {
                    " *"
                } else {
                    ""
                };
                s.push_str(&format!(
                    "    {label:<18} {:>10.3}{unit}   {:+.3} +- {:.3}{sig}\n",
                    f.mean * shown,
                    f.diff_mean * shown,
                    f.diff_ci95 * shown
                ));
            }
        }
    }
    s.push_str("  (* the 95% interval of the difference excludes zero)\n");
    s
}
