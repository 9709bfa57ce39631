//! Scenarios shared by the benchmarks and `examples/throughput.rs`.
//!
//! Every workload is the embedded default scenario plus `--set`-style
//! overrides, so a benchmark is reproducible from the command line:
//! `fleetsim run --set workload.rps=50 --set workload.profile=constant`.

#![allow(dead_code)] // Each bench target uses only some of these.

use fleetsim::Scenario;
use fleetsim::metrics::Summary;
use fleetsim::scenario::{DEFAULT_SCENARIO, load, parse_override};

/// The seed every benchmark runs with.
pub const SEED: u64 = 7;

/// Workers of the M/M/c reference instance.
pub const MMC_WORKERS: u32 = 8;
/// Mean service time of the M/M/c reference.
pub const MMC_SERVICE_MS: f64 = 100.0;
/// Utilisation of the M/M/c reference.
pub const MMC_RHO: f64 = 0.8;

/// The embedded default scenario with `overrides` applied (`key=value` each).
pub fn scenario(overrides: &[String]) -> Scenario {
    let parsed: Vec<_> = overrides
        .iter()
        .map(|s| parse_override(s).expect("a benchmark override parses"))
        .collect();
    let (_, sc) = load(DEFAULT_SCENARIO, "default", &parsed, &mut |_| {
        Err("no files".into())
    })
    .expect("a benchmark scenario is valid");
    sc
}

fn hours(h: f64) -> String {
    format!("run.duration_h={h}")
}

/// The embedded default scenario (the seeds' fleet, diurnal ~1 rps) for `h` hours.
pub fn default_scenario(h: f64) -> Scenario {
    scenario(&[hours(h)])
}

/// The seeds' fleet under a constant 50 rps: saturated, recycling hard.
pub fn high_rate(h: f64) -> Scenario {
    scenario(&[
        hours(h),
        "workload.rps=50".into(),
        "workload.profile=constant".into(),
    ])
}

/// One instance of `MMC_WORKERS` sync workers, exponential service, constant
/// Poisson arrivals at utilisation `MMC_RHO`; no leak, so no recycling and
/// no OOM: the engine alone (arrival, dispatch, heap, completion, histogram).
pub fn engine_mmc(h: f64) -> Scenario {
    let rps = MMC_RHO * MMC_WORKERS as f64 / (MMC_SERVICE_MS / 1000.0);
    scenario(&[
        hours(h),
        "fleet.instances=1".into(),
        format!("fleet.workers_per_instance={MMC_WORKERS}"),
        "fleet.concurrency=1".into(),
        "fleet.container_mb=1e9".into(),
        "fleet.warm_start=false".into(),
        "fleet.leak.distribution=constant".into(),
        "fleet.leak.mean_mb_per_request=0.0".into(),
        "fleet.leak.warmup_mb=0.0".into(),
        "fleet.leak.step_probability=0.0".into(),
        "policy.base_limit_mb=1e8".into(),
        "policy.hard_limit_mb=1e8".into(),
        "workload.profile=constant".into(),
        format!("workload.rps={rps}"),
        "workload.service=exponential".into(),
        format!("workload.service_mean_ms={MMC_SERVICE_MS}"),
    ])
}

/// One run without output.
pub fn run(sc: &Scenario) -> Summary {
    fleetsim::run_summary(sc, SEED).expect("a benchmark run stays within its event budget")
}

/// Events and requests of one run, printed once so `events/s` can be
/// derived from a benchmark that counts requests (and the reverse).
pub fn describe(name: &str, sc: &Scenario) -> Summary {
    let s = run(sc);
    eprintln!(
        "{name}: {:.1} h simulated, {} events, {} requests ({:.2} events/request) per run",
        s.duration_h,
        s.events_processed,
        s.requests_total,
        s.events_processed as f64 / s.requests_total.max(1) as f64
    );
    s
}
