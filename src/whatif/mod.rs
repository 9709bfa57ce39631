//! What-if analyses: what a policy permits at saturation, and how much
//! churn the fleet's clients can absorb ("multiply your cooldown out").
//!
//! `ceilings` is pure arithmetic on the scenario; `saturate` and
//! `absorbable` run the simulator.

use crate::policy::{Gate, GateKind};
use crate::scenario::Scenario;
use crate::sim::{SimError, run_summary};
use serde::Serialize;

/// One gate's permitted ceiling at full saturation.
#[derive(Clone, Debug, Serialize, PartialEq)]
pub struct Ceiling {
    pub gate: String,
    /// Recycles per hour the gate lets through, fleet-wide; `None` = unbounded.
    pub per_hour: Option<f64>,
    /// With the gate's escalation (pressure cooldown), when it has one.
    pub per_hour_escalated: Option<f64>,
    /// How the figure was derived, in words.
    pub why: String,
}

/// A gate's ceiling: each gate derives its own (`Rule::ceiling`).
fn ceiling(gate: &Gate, sc: &Scenario) -> Ceiling {
    let (per_hour, per_hour_escalated, why) = gate.ceiling(sc);
    Ceiling {
        gate: gate.kind().name().to_string(),
        per_hour,
        per_hour_escalated,
        why,
    }
}

/// The analytic ceilings of every gate, and of the whole policy (the
/// smallest: a recycle must pass every gate).
pub fn ceilings(sc: &Scenario) -> (Vec<Ceiling>, Option<f64>) {
    let gates: Vec<Ceiling> = sc
        .policy
        .pipeline
        .gates
        .iter()
        .map(|g| ceiling(g, sc))
        .collect();
    let policy = gates
        .iter()
        .filter_map(|c| c.per_hour)
        .fold(None, |m: Option<f64>, r| Some(m.map_or(r, |m| m.min(r))));
    (gates, policy)
}

/// What a saturated run measured, averaged over seeds.
#[derive(Clone, Debug, Serialize, PartialEq)]
pub struct Saturated {
    pub seeds: Vec<u64>,
    pub recycles_per_hour: f64,
    pub peak_hour_recycles: f64,
    pub exits_per_hour: f64,
    pub capacity_loss_fraction: f64,
    pub retry_ok_per_hour: f64,
    pub fetch_failed_per_hour: f64,
    pub requests_failed_per_hour: f64,
}

/// Runs the scenario with every worker asking at every sample; `tick` is
/// called after each run (a progress display's hook).
pub fn saturate(sc: &Scenario, seeds: &[u64], tick: &dyn Fn()) -> Result<Saturated, SimError> {
    let mut s = sc.clone();
    s.saturate = true;
    let runs = seeds
        .iter()
        .map(|&seed| {
            let r = run_summary(&s, seed);
            tick();
            r
        })
        .collect::<Result<Vec<_>, _>>()?;
    let n = runs.len() as f64;
    let hours = sc.duration.as_secs_f64() / 3600.0;
    let mean = |f: &dyn Fn(&crate::metrics::Summary) -> f64| runs.iter().map(f).sum::<f64>() / n;
    Ok(Saturated {
        seeds: seeds.to_vec(),
        recycles_per_hour: mean(&|r| r.recycles_per_hour),
        peak_hour_recycles: mean(&|r| r.peak_hour_recycles as f64),
        exits_per_hour: mean(&|r| exits(r) as f64) / hours,
        capacity_loss_fraction: mean(&|r| r.capacity_loss_fraction),
        retry_ok_per_hour: mean(&|r| r.retry_ok as f64) / hours,
        fetch_failed_per_hour: mean(&|r| r.fetch_failed as f64) / hours,
        requests_failed_per_hour: mean(&|r| r.requests_failed as f64) / hours,
    })
}

/// Recycles that went through any gate by an emergency exit.
pub fn exits(s: &crate::metrics::Summary) -> u64 {
    s.counters.exits()
}

/// One probe of the churn scan: forced churn at `rate_per_hour`.
#[derive(Clone, Debug, Serialize, PartialEq)]
pub struct ChurnProbe {
    pub target_per_hour: f64,
    pub recycles_per_hour: f64,
    pub retry_ok_per_hour: f64,
    pub fetch_failed: u64,
    pub fetch_failed_per_hour: f64,
    pub capacity_loss_fraction: f64,
}

/// The churn the scenario's clients can absorb.
#[derive(Clone, Debug, Serialize, PartialEq)]
pub struct Absorbable {
    /// `fetch_failed` per hour a client "still sees none" below (0.1 = fewer
    /// than one hour in ten has one).
    pub fetch_failed_threshold_per_hour: f64,
    /// Highest probed rate whose `fetch_failed` per hour stays under the
    /// threshold (as does every lower rate); `None` if even the lowest fails.
    pub no_fetch_failed_per_hour: Option<f64>,
    /// Lowest probed rate whose `retry_ok` per hour exceeds the threshold.
    pub retry_ok_threshold_per_hour: f64,
    pub retry_ok_exceeded_at_per_hour: Option<f64>,
    pub probes: Vec<ChurnProbe>,
}

/// The scan's rates, recycles per hour.
pub const CHURN_GRID: [f64; 16] = [
    1.0, 2.0, 3.0, 4.0, 6.0, 8.0, 10.0, 13.0, 16.0, 20.0, 25.0, 30.0, 40.0, 60.0, 90.0, 120.0,
];

/// Forces churn at each grid rate on the scenario's fleet and traffic: the
/// policy is replaced by a token bucket at that rate (burst 1, no exits)
/// and every worker asks at every sample, so the rate is the only limit.
/// `tick` is called after each of the `CHURN_GRID.len() x seeds` runs.
pub fn absorbable(
    sc: &Scenario,
    seeds: &[u64],
    fetch_failed_threshold_per_hour: f64,
    retry_ok_threshold_per_hour: f64,
    tick: &dyn Fn(),
) -> Result<Absorbable, SimError> {
    let hours = sc.duration.as_secs_f64() / 3600.0;
    let mut probes = Vec::new();
    for &rate in &CHURN_GRID {
        let forced = forced_churn(sc, rate);
        let runs = seeds
            .iter()
            .map(|&seed| {
                let r = run_summary(&forced, seed);
                tick();
                r
            })
            .collect::<Result<Vec<_>, _>>()?;
        let n = runs.len() as f64;
        probes.push(ChurnProbe {
            target_per_hour: rate,
            recycles_per_hour: runs.iter().map(|r| r.recycles_per_hour).sum::<f64>() / n,
            retry_ok_per_hour: runs.iter().map(|r| r.retry_ok as f64).sum::<f64>() / n / hours,
            fetch_failed: runs.iter().map(|r| r.fetch_failed).sum(),
            fetch_failed_per_hour: runs.iter().map(|r| r.fetch_failed as f64).sum::<f64>()
                / n
                / hours,
            capacity_loss_fraction: runs.iter().map(|r| r.capacity_loss_fraction).sum::<f64>() / n,
        });
    }
    let no_ff = probes
        .iter()
        .take_while(|p| p.fetch_failed_per_hour < fetch_failed_threshold_per_hour)
        .last()
        .map(|p| p.target_per_hour);
    let exceeded = probes
        .iter()
        .find(|p| p.retry_ok_per_hour > retry_ok_threshold_per_hour)
        .map(|p| p.target_per_hour);
    Ok(Absorbable {
        fetch_failed_threshold_per_hour,
        no_fetch_failed_per_hour: no_ff,
        retry_ok_threshold_per_hour,
        retry_ok_exceeded_at_per_hour: exceeded,
        probes,
    })
}

/// The scenario with its policy replaced by forced churn at `rate_per_hour`.
fn forced_churn(sc: &Scenario, rate_per_hour: f64) -> Scenario {
    let mut s = sc.clone();
    s.saturate = true;
    let p = &mut s.policy;
    p.pipeline.gates = vec![Gate::TokenBucket(
        crate::policy::gates::token_bucket::TokenBucket {
            rate_per_hour,
            burst: 1.0,
            exits: crate::policy::Exits::NONE,
        },
    )];
    p.triggers.max_requests = None;
    p.triggers.lifetime = None;
    p.triggers.drift = None;
    p.triggers.instance_memory = None;
    p.triggers.evil_rss = None;
    s
}

/// Whether a gate (or the whole policy) is a capacity guard: its ceiling is
/// known and within the churn the clients absorb. `verdict` says why not.
pub fn is_capacity_guard(c: &Ceiling, absorbable_per_hour: Option<f64>) -> bool {
    matches!((c.per_hour, absorbable_per_hour), (Some(r), Some(a)) if r <= a)
}

/// The verdict for one gate: a guard whose ceiling is above absorbable churn
/// is not a capacity guard.
pub fn verdict(c: &Ceiling, absorbable_per_hour: Option<f64>, workers: usize) -> String {
    match (c.per_hour, absorbable_per_hour) {
        (None, _) => format!("{}: no rate bound: not a capacity guard", c.gate),
        (Some(r), Some(a)) if r > a => format!(
            "{}: permits {r:.1}/h (replaces the fleet {:.1}x per hour), above the {a:.0}/h \
             the clients absorb: not a capacity guard",
            c.gate,
            r / workers as f64
        ),
        (Some(r), Some(a)) => format!(
            "{}: permits {r:.1}/h, within the {a:.0}/h the clients absorb: a capacity guard",
            c.gate
        ),
        (Some(r), None) => format!(
            "{}: permits {r:.1}/h, but even the lowest probed churn failed requests",
            c.gate
        ),
    }
}

/// Gates whose kinds appear in a scenario, for callers that label output.
pub fn gate_kinds(sc: &Scenario) -> Vec<GateKind> {
    sc.policy.pipeline.gates.iter().map(Gate::kind).collect()
}
