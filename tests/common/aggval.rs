//! The aggregate-vs-exact comparison, shared by `tests/aggregate.rs` (the
//! CI check) and `examples/aggregate_vs_exact.rs` (the large-seed
//! measurement behind the README's validation table). It depends on the
//! library only, so the example can include it by path.
//!
//! Each seed runs both modes (paired: the k-th worker of a slot draws the
//! same limit and velocity in both), and each metric is reported as the
//! seed means, the mean paired difference relative to the exact mean and
//! the standard error of that mean. A metric is resolved at a tolerance
//! when its standard error is under a third of it, so a true bias of the
//! tolerance would stand three standard errors from zero.
#![allow(dead_code)]

use fleetsim::metrics::{NullObserver, quantile_sorted};
use fleetsim::scenario::{DEFAULT_SCENARIO, ScenarioError, load, parse_override};
use fleetsim::{Scenario, Sim};
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};

/// The figures compared, per run. The overshoot is looked at three ways:
/// the day's largest RSS over the hard ceiling (an extreme value, noisy),
/// its time integral, and how far each worker was past its own limit when
/// it was recycled (mean and p99 over the run's recycles: what a recycle
/// lets a worker reach, stable); `runs_over_ceiling` is 1 for a run in
/// which some worker passed the hard ceiling (its mean: the fraction of
/// runs), `max_rss_mb` the day's largest RSS.
///
/// The client side (estimated in aggregate mode) is compared on the same
/// runs: resets, `retry_ok` and `fetch_failed` per run.
pub const METRICS: [&str; 15] = [
    "recycles_per_hour",
    "capacity_loss_fraction",
    "max_overshoot_mb",
    "overshoot_mb_s",
    "runs_over_ceiling",
    "max_rss_mb",
    "mean_margin_mb",
    "margin_p99_mb",
    "requests_per_worker_p10",
    "requests_per_worker_p50",
    "requests_per_worker_p90",
    "requests_per_worker_mean",
    "requests_reset",
    "retry_ok",
    "fetch_failed",
];

/// How many figures a run gives.
pub const N: usize = METRICS.len();

/// One run's figures, in `METRICS` order.
pub fn figures(sc: &Scenario, seed: u64) -> [f64; N] {
    let out = Sim::new(sc, seed, NullObserver).run().expect("a run");
    let recycles = &out.metrics.recycles;
    let sorted = |f: &dyn Fn(&fleetsim::metrics::RecycleRecord) -> f64| {
        let mut v: Vec<f64> = recycles.iter().map(f).collect();
        v.sort_by(f64::total_cmp);
        v
    };
    let rpw = sorted(&|r| r.requests as f64);
    let margin = sorted(&|r| r.margin_mb);
    let q = |v: &[f64], p| quantile_sorted(v, p).unwrap_or(f64::NAN);
    let mean = |v: &[f64]| v.iter().sum::<f64>() / v.len().max(1) as f64;
    let s = &out.summary;
    [
        s.recycles_per_hour,
        s.capacity_loss_fraction,
        s.max_overshoot_mb,
        s.overshoot_mb_s,
        f64::from(u8::from(s.max_overshoot_mb > 0.0)),
        s.max_rss_mb,
        mean(&margin),
        q(&margin, 0.99),
        q(&rpw, 0.1),
        q(&rpw, 0.5),
        q(&rpw, 0.9),
        mean(&rpw),
        s.requests_reset as f64,
        s.retry_ok as f64,
        s.fetch_failed as f64,
    ]
}

/// One metric over the seeds: the exact mean, the aggregate mean, the mean
/// paired difference relative to the exact mean and its standard error.
#[derive(Clone, Debug)]
pub struct Row {
    pub metric: &'static str,
    pub exact: f64,
    pub aggregate: f64,
    /// Mean paired difference, relative to `exact`.
    pub diff: f64,
    /// Its standard error, relative to `exact`.
    pub se: f64,
}

impl Row {
    /// Whether the seeds resolve a difference of `tol`.
    pub fn resolved(&self, tol: f64) -> bool {
        self.se < tol / 3.0
    }

    /// The mean paired difference in the metric's own unit.
    pub fn diff_abs(&self) -> f64 {
        self.diff * self.exact
    }

    /// `within 3%`, `beyond 3%` or `not resolved`, and whether the
    /// difference is significant (more than 3 se from zero) even so.
    pub fn verdict(&self, tol: f64) -> String {
        let pct = 100.0 * tol;
        let mut v = if !self.resolved(tol) {
            format!("not resolved at {pct:.0}%")
        } else if self.diff.abs() < tol {
            format!("within {pct:.0}%")
        } else {
            format!("BEYOND {pct:.0}%")
        };
        if self.diff.abs() > 3.0 * self.se {
            v.push_str(&format!(
                " (biased: {:.1} se)",
                self.diff.abs() / self.se.max(f64::MIN_POSITIVE)
            ));
        }
        v
    }
}

/// Runs seeds `first..first + seeds` of `exact` and `other` on `threads`
/// threads and compares them. The rows do not depend on the thread count:
/// runs are collected by seed and summed in seed order.
pub fn compare(
    exact: &Scenario,
    other: &Scenario,
    first: u64,
    seeds: u64,
    threads: usize,
) -> Vec<Row> {
    let pairs = run_pairs(exact, other, first, seeds, threads);
    rows(&pairs)
}

/// Both modes' figures for each seed, in seed order.
pub fn run_pairs(
    exact: &Scenario,
    other: &Scenario,
    first: u64,
    seeds: u64,
    threads: usize,
) -> Vec<([f64; N], [f64; N])> {
    let next = AtomicU64::new(0);
    let out = Mutex::new(vec![None; seeds as usize]);
    std::thread::scope(|sc| {
        for _ in 0..threads.max(1) {
            sc.spawn(|| {
                loop {
                    let k = next.fetch_add(1, Ordering::Relaxed);
                    if k >= seeds {
                        break;
                    }
                    let seed = first + k;
                    let pair = (figures(exact, seed), figures(other, seed));
                    out.lock().unwrap()[k as usize] = Some(pair);
                }
            });
        }
    });
    out.into_inner()
        .unwrap()
        .into_iter()
        .map(|p| p.expect("every seed ran"))
        .collect()
}

/// The rows of `pairs`, one per metric.
pub fn rows(pairs: &[([f64; N], [f64; N])]) -> Vec<Row> {
    let n = pairs.len() as f64;
    METRICS
        .iter()
        .enumerate()
        .map(|(k, &metric)| {
            let e = pairs.iter().map(|p| p.0[k]).sum::<f64>() / n;
            let a = pairs.iter().map(|p| p.1[k]).sum::<f64>() / n;
            let d: Vec<f64> = pairs.iter().map(|p| p.1[k] - p.0[k]).collect();
            let md = d.iter().sum::<f64>() / n;
            let var = d.iter().map(|x| (x - md) * (x - md)).sum::<f64>() / (n - 1.0);
            Row {
                metric,
                exact: e,
                aggregate: a,
                diff: md / e,
                se: (var / n).sqrt() / e.abs(),
            }
        })
        .collect()
}

/// The row of `metric`.
pub fn row<'a>(rows: &'a [Row], metric: &str) -> &'a Row {
    rows.iter()
        .find(|r| r.metric == metric)
        .unwrap_or_else(|| panic!("no metric {metric}"))
}

/// The rows as the README's markdown table.
pub fn table(rows: &[Row], tol: f64) -> String {
    let mut s = String::from(
        "| metric | exact | aggregate | difference | se | verdict |\n\
         | --- | --- | --- | --- | --- | --- |\n",
    );
    for r in rows {
        s.push_str(&format!(
            "| {} | {} | {} | {:+.2}% ({:+.4}) | {:.2}% | {} |\n",
            r.metric,
            fmt(r.exact),
            fmt(r.aggregate),
            100.0 * r.diff,
            r.diff_abs(),
            100.0 * r.se,
            r.verdict(tol)
        ));
    }
    s
}

/// Four significant digits, whatever the magnitude.
fn fmt(x: f64) -> String {
    if x == 0.0 || !x.is_finite() {
        return format!("{x}");
    }
    let digits = (3 - x.abs().log10().floor() as i32).max(0) as usize;
    format!("{x:.digits$}")
}

/// A scenario from `text` with `sets` applied, or the loader's error.
pub fn try_load(text: &str, name: &str, sets: &[&str]) -> Result<Scenario, ScenarioError> {
    let overrides: Vec<_> = sets
        .iter()
        .map(|s| parse_override(s).expect("an override"))
        .collect();
    load(text, name, &overrides, &mut |p| {
        Err(format!("no files ({p})"))
    })
    .map(|(_, sc)| sc)
}

pub const AGGREGATE: &str = "engine.mode=aggregate";

/// The default fleet (render-2x3) with `sets`: (exact, aggregate), or
/// the loader's error.
pub fn default_fleet(sets: &[&str]) -> Result<(Scenario, Scenario), ScenarioError> {
    let exact = try_load(DEFAULT_SCENARIO, "render-2x3.toml", sets)?;
    let agg = try_load(
        DEFAULT_SCENARIO,
        "render-2x3.toml",
        &[sets, &[AGGREGATE]].concat(),
    )?;
    Ok((exact, agg))
}

pub const LARGE_FLEET: &str = include_str!("../../scenarios/large-fleet.toml");

/// `scenarios/large-fleet.toml` with `sets` applied, or the loader's error.
pub fn try_large_fleet(sets: &[&str]) -> Result<Scenario, ScenarioError> {
    try_load(LARGE_FLEET, "large-fleet.toml", sets)
}

/// The large fleet's policy on 20 instances x 8 workers at its per-worker
/// rate (5 rps: 800 rps in all), the bucket scaled to 160 workers.
pub const MEDIUM: [&str; 4] = [
    "fleet.instances=20",
    "workload.rps=800",
    "policy.token_bucket.rate_per_hour=288",
    "policy.token_bucket.burst=5",
];

/// The 20 x 8 fleet for `hours`, with `sets`: (exact, aggregate), or the
/// loader's error.
pub fn medium_fleet(hours: f64, sets: &[&str]) -> Result<(Scenario, Scenario), ScenarioError> {
    let h = format!("run.duration_h={hours}");
    let base: Vec<&str> = MEDIUM
        .iter()
        .copied()
        .chain([h.as_str()])
        .chain(sets.iter().copied())
        .collect();
    let exact = try_large_fleet(&[&base[..], &["engine.mode=exact"]].concat())?;
    let agg = try_large_fleet(&base)?;
    Ok((exact, agg))
}
