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
    /// Per seed, in the order of the scan's seeds.
    pub fetch_failed_per_hour_by_seed: Vec<f64>,
    /// OOM kills per hour under this churn: exits the forced recycles did
    /// not make, whose connections and in-flight requests reset too.
    pub oom_kills_per_hour: f64,
    pub capacity_loss_fraction: f64,
}

/// The churn the scenario's clients can absorb.
#[derive(Clone, Debug, Serialize, PartialEq)]
pub struct Absorbable {
    /// `fetch_failed` per hour a client "still sees none" below (0.1 = fewer
    /// than one hour in ten has one).
    pub fetch_failed_threshold_per_hour: f64,
    /// Highest probed rate whose `fetch_failed` per hour, averaged over the
    /// seeds, stays under the threshold (as does every lower rate); `None`
    /// if even the lowest fails.
    pub no_fetch_failed_per_hour: Option<f64>,
    /// The same rate found on each seed alone, in seed order (`None`: even
    /// the lowest probed rate failed on that seed).
    pub no_fetch_failed_per_hour_by_seed: Vec<Option<f64>>,
    /// The smallest and largest of those over the seeds (a seed where even
    /// the lowest rate failed counts as 0): how much the answer depends on
    /// the seed. Equal when every seed agrees.
    pub no_fetch_failed_per_hour_seed_range: [f64; 2],
    /// The lowest probed rate that failed, when its failures came with at
    /// least as many OOM kills as forced recycles: there the fleet outgrows
    /// its containers between recycles that rare, and the OOM kills, more
    /// than the churn, fail the requests. `None` when the forced recycles
    /// outnumber the OOM kills there (or nothing failed).
    pub oom_dominated_at_per_hour: Option<f64>,
    /// Lowest probed rate whose `retry_ok` per hour exceeds the threshold.
    pub retry_ok_threshold_per_hour: f64,
    pub retry_ok_exceeded_at_per_hour: Option<f64>,
    pub probes: Vec<ChurnProbe>,
}

/// The scan's rates, recycles per hour.
pub const CHURN_GRID: [f64; 16] = [
    1.0, 2.0, 3.0, 4.0, 6.0, 8.0, 10.0, 13.0, 16.0, 20.0, 25.0, 30.0, 40.0, 60.0, 90.0, 120.0,
];

/// The highest rate of `rates` below which (inclusive) every `per_hour`
/// stays under `threshold`, scanning up from the lowest.
fn last_under(rates: &[f64], per_hour: &[f64], threshold: f64) -> Option<f64> {
    rates
        .iter()
        .zip(per_hour)
        .take_while(|(_, v)| **v < threshold)
        .last()
        .map(|(r, _)| *r)
}

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
        let by_seed: Vec<f64> = runs.iter().map(|r| r.fetch_failed as f64 / hours).collect();
        probes.push(ChurnProbe {
            target_per_hour: rate,
            recycles_per_hour: runs.iter().map(|r| r.recycles_per_hour).sum::<f64>() / n,
            retry_ok_per_hour: runs.iter().map(|r| r.retry_ok as f64).sum::<f64>() / n / hours,
            fetch_failed: runs.iter().map(|r| r.fetch_failed).sum(),
            fetch_failed_per_hour: by_seed.iter().sum::<f64>() / n,
            fetch_failed_per_hour_by_seed: by_seed,
            oom_kills_per_hour: runs.iter().map(|r| r.oom_kills as f64).sum::<f64>() / n / hours,
            capacity_loss_fraction: runs.iter().map(|r| r.capacity_loss_fraction).sum::<f64>() / n,
        });
    }
    Ok(summarise(
        probes,
        fetch_failed_threshold_per_hour,
        retry_ok_threshold_per_hour,
    ))
}

/// The scan's answers from its probes (pure).
pub fn summarise(
    probes: Vec<ChurnProbe>,
    fetch_failed_threshold_per_hour: f64,
    retry_ok_threshold_per_hour: f64,
) -> Absorbable {
    let rates: Vec<f64> = probes.iter().map(|p| p.target_per_hour).collect();
    let means: Vec<f64> = probes.iter().map(|p| p.fetch_failed_per_hour).collect();
    let no_ff = last_under(&rates, &means, fetch_failed_threshold_per_hour);
    let seeds = probes
        .first()
        .map_or(0, |p| p.fetch_failed_per_hour_by_seed.len());
    let by_seed: Vec<Option<f64>> = (0..seeds)
        .map(|k| {
            let own: Vec<f64> = probes
                .iter()
                .map(|p| p.fetch_failed_per_hour_by_seed[k])
                .collect();
            last_under(&rates, &own, fetch_failed_threshold_per_hour)
        })
        .collect();
    let as_rate = |v: &Option<f64>| v.unwrap_or(0.0);
    let range = [
        by_seed.iter().map(as_rate).fold(f64::INFINITY, f64::min),
        by_seed
            .iter()
            .map(as_rate)
            .fold(f64::NEG_INFINITY, f64::max),
    ];
    // The lowest rate that fails decides the answer: is it churn?
    let oom = probes
        .iter()
        .find(|p| p.fetch_failed_per_hour >= fetch_failed_threshold_per_hour)
        .filter(|p| p.oom_kills_per_hour > 0.0 && p.oom_kills_per_hour >= p.recycles_per_hour)
        .map(|p| p.target_per_hour);
    let exceeded = probes
        .iter()
        .find(|p| p.retry_ok_per_hour > retry_ok_threshold_per_hour)
        .map(|p| p.target_per_hour);
    Absorbable {
        fetch_failed_threshold_per_hour,
        no_fetch_failed_per_hour: no_ff,
        no_fetch_failed_per_hour_by_seed: by_seed,
        no_fetch_failed_per_hour_seed_range: if seeds == 0 { [0.0, 0.0] } else { range },
        oom_dominated_at_per_hour: oom,
        retry_ok_threshold_per_hour,
        retry_ok_exceeded_at_per_hour: exceeded,
        probes,
    }
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
pub fn is_capacity_guard(c: &Ceiling, a: &Absorbable) -> bool {
    matches!((c.per_hour, a.no_fetch_failed_per_hour), (Some(r), Some(a)) if r <= a)
}

/// The absorbable rate as a verdict quotes it: the seeds' mean scan, with
/// the range over single seeds when they disagree.
fn absorbed(a: &Absorbable, rate: f64) -> String {
    let [lo, hi] = a.no_fetch_failed_per_hour_seed_range;
    if lo == hi {
        format!("{rate:.0}/h")
    } else {
        format!("{rate:.0}/h ({lo:.0}-{hi:.0}/h on single seeds)")
    }
}

/// The verdict for one gate: a guard whose ceiling is above absorbable churn
/// is not a capacity guard. Where requests fail with more OOM kills than
/// forced recycles, the verdict says the OOM kills fail them.
pub fn verdict(c: &Ceiling, a: &Absorbable, workers: usize) -> String {
    let oom = match a.oom_dominated_at_per_hour {
        Some(at) => format!(
            " (at {at:.0}/h, the lowest that failed, OOM kills outnumber the forced recycles: \
             the fleet outgrows its containers between recycles that rare, and the OOM kills, \
             more than the churn, fail the requests)"
        ),
        None => String::new(),
    };
    match (c.per_hour, a.no_fetch_failed_per_hour) {
        (None, _) => format!("{}: no rate bound: not a capacity guard", c.gate),
        (Some(r), Some(ab)) if r > ab => format!(
            "{}: permits {r:.1}/h (replaces the fleet {:.1}x per hour), above the {} \
             the clients absorb: not a capacity guard",
            c.gate,
            r / workers as f64,
            absorbed(a, ab)
        ),
        (Some(r), Some(ab)) => format!(
            "{}: permits {r:.1}/h, within the {} the clients absorb: a capacity guard",
            c.gate,
            absorbed(a, ab)
        ),
        (Some(r), None) => format!(
            "{}: permits {r:.1}/h, but even the lowest probed churn failed requests{oom}",
            c.gate
        ),
    }
}

/// Gates whose kinds appear in a scenario, for callers that label output.
pub fn gate_kinds(sc: &Scenario) -> Vec<GateKind> {
    sc.policy.pipeline.gates.iter().map(Gate::kind).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn probe(rate: f64, by_seed: &[f64], recycles: f64, oom: f64) -> ChurnProbe {
        ChurnProbe {
            target_per_hour: rate,
            recycles_per_hour: recycles,
            retry_ok_per_hour: 0.0,
            fetch_failed: 0,
            fetch_failed_per_hour: by_seed.iter().sum::<f64>() / by_seed.len() as f64,
            fetch_failed_per_hour_by_seed: by_seed.to_vec(),
            oom_kills_per_hour: oom,
            capacity_loss_fraction: 0.0,
        }
    }

    #[test]
    fn each_seed_scans_alone_and_the_range_spans_them() {
        // Seed 0 fails from 4/h, seed 1 from 2/h, seed 2 never: the mean
        // (0.1 threshold) fails from 4/h.
        let probes = vec![
            probe(1.0, &[0.0, 0.0, 0.0], 1.0, 0.0),
            probe(2.0, &[0.0, 0.2, 0.0], 2.0, 0.0),
            probe(4.0, &[0.45, 0.0, 0.0], 4.0, 0.0),
            probe(8.0, &[0.3, 0.3, 0.0], 8.0, 0.0),
        ];
        let a = summarise(probes, 0.1, 10.0);
        assert_eq!(a.no_fetch_failed_per_hour, Some(2.0));
        assert_eq!(
            a.no_fetch_failed_per_hour_by_seed,
            [Some(2.0), Some(1.0), Some(8.0)]
        );
        assert_eq!(a.no_fetch_failed_per_hour_seed_range, [1.0, 8.0]);
        assert_eq!(a.oom_dominated_at_per_hour, None);
        let c = Ceiling {
            gate: "lease".into(),
            per_hour: Some(30.0),
            per_hour_escalated: None,
            why: String::new(),
        };
        let v = verdict(&c, &a, 6);
        assert!(v.contains("above the 2/h (1-8/h on single seeds)"), "{v}");
        assert!(!is_capacity_guard(&c, &a));
    }

    #[test]
    fn failures_with_more_oom_kills_than_recycles_are_not_churn() {
        // The lowest rate fails, with 1.5 OOM kills an hour to 1 forced
        // recycle: OOM-dominated. Where churn outnumbers the OOM kills at
        // the lowest failing rate, the answer is churn.
        let oom = summarise(
            vec![
                probe(1.0, &[0.5, 0.5], 1.0, 1.5),
                probe(2.0, &[0.6, 0.6], 2.0, 0.2),
            ],
            0.1,
            10.0,
        );
        assert_eq!(oom.no_fetch_failed_per_hour, None);
        assert_eq!(oom.oom_dominated_at_per_hour, Some(1.0));
        assert_eq!(oom.no_fetch_failed_per_hour_seed_range, [0.0, 0.0]);
        let c = Ceiling {
            gate: "whole policy".into(),
            per_hour: Some(30.0),
            per_hour_escalated: None,
            why: String::new(),
        };
        let v = verdict(&c, &oom, 6);
        assert!(v.contains("even the lowest probed churn failed"), "{v}");
        assert!(v.contains("OOM kills outnumber the forced recycles"), "{v}");

        let churn = summarise(
            vec![
                probe(1.0, &[0.0, 0.0], 1.0, 3.0),
                probe(2.0, &[0.5, 0.5], 2.0, 1.0),
            ],
            0.1,
            10.0,
        );
        assert_eq!(churn.no_fetch_failed_per_hour, Some(1.0));
        assert_eq!(
            churn.oom_dominated_at_per_hour, None,
            "2 recycles > 1 OOM kill at 2/h"
        );
        assert!(!verdict(&c, &churn, 6).contains("OOM"));
    }
}
