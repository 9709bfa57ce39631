//! Scenarios shared by the benchmarks and `examples/throughput.rs`.
//!
//! Every workload is the embedded default scenario plus `--set`-style
//! overrides, so a benchmark is reproducible from the command line:
//! `fleetsim run --set workload.rps=50 --set workload.profile=constant`.

#![allow(dead_code)] // Each bench target uses only some of these.

use fleetsim::Scenario;
use fleetsim::metrics::Summary;
use fleetsim::scenario::{DEFAULT_SCENARIO, load, parse_override};
use fleetsim::sweep::runner::{Base, run_chunk};
use fleetsim::sweep::{RawSweep, Sweep};

pub mod bare;
pub mod floor;

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
        "fleet.container_mb=1e7".into(),
        "fleet.warm_start=false".into(),
        "fleet.leak.distribution=constant".into(),
        "fleet.leak.mean_mb_per_request=0.0".into(),
        "fleet.leak.warmup_mb=0.0".into(),
        "fleet.leak.step_probability=0.0".into(),
        "policy.base_limit_mb=1e7".into(),
        "policy.hard_limit_mb=1e7".into(),
        "workload.profile=constant".into(),
        format!("workload.rps={rps}"),
        "workload.service=exponential".into(),
        format!("workload.service_mean_ms={MMC_SERVICE_MS}"),
    ])
}

/// The fleet `benches/peer/fleet_simpy.py` restates: the seeds' 2 x 3 fleet
/// at a constant 20 rps, busy deferral off, a cold start and no keep-alive
/// resets (the overrides `benches/peer/compare.sh` passes to `fleetsim run`).
pub fn peer(h: f64) -> Scenario {
    scenario(&[
        hours(h),
        "workload.rps=20".into(),
        "workload.profile=constant".into(),
        "policy.busy_deferral=false".into(),
        "fleet.warm_start=false".into(),
        "client.keepalive_conns_per_worker=0".into(),
    ])
}

/// Fleet sizes of the scaling workload, in instances of 3 workers: 6 to
/// 16,002 workers.
pub const SCALING_INSTANCES: [u32; 5] = [2, 20, 200, 2000, 5334];

/// The peer's fleet (`peer`) grown to `instances` instances at the same load
/// per worker (10 rps an instance) for `h` hours, so that a bigger fleet
/// does the same work per worker and only the engine's cost per request
/// can change: a warm start (workers at random ages, as in steady state),
/// and the fleet lease's TTL shrunk in proportion (120 s x 2 / instances),
/// so the lease allows each instance the recycles it allows the seeds'
/// two. `throughput scaling H` prints ns/request per size beside the
/// smallest; `benches/fleet_size.rs` runs the same fleets.
pub fn scaled(instances: u32, h: f64) -> Scenario {
    scenario(&[
        hours(h),
        format!("fleet.instances={instances}"),
        format!("workload.rps={}", 10.0 * instances as f64),
        "workload.profile=constant".into(),
        "policy.busy_deferral=false".into(),
        "client.keepalive_conns_per_worker=0".into(),
        format!("policy.lease.ttl_s={}", 240.0 / instances as f64),
    ])
}

/// Instances of the large fleet.
pub const LARGE_INSTANCES: u32 = 100;
/// Workers per instance of the large fleet.
pub const LARGE_WORKERS: u32 = 8;
/// Fleet arrival rate of the large fleet: 20 rps per instance.
pub const LARGE_RPS: f64 = 2000.0;

/// 100 instances x 8 sync workers under a constant 2,000 rps (~7.2 M
/// requests an hour). The containers grow to 8 GiB so eight forked workers
/// fit at boot, and the busy deferral's threshold moves from the seeds'
/// 0.56 rps per instance to 40 (above the 20 rps each instance gets), so it
/// does not hold every worker.
pub fn large_fleet(h: f64) -> Scenario {
    scenario(&[
        hours(h),
        format!("fleet.instances={LARGE_INSTANCES}"),
        format!("fleet.workers_per_instance={LARGE_WORKERS}"),
        "fleet.container_mb=8192".into(),
        format!("workload.rps={LARGE_RPS}"),
        "workload.profile=constant".into(),
        "policy.busy_rps=40".into(),
    ])
}

/// `scenarios/large-fleet.toml`: 1,250 x 8 = 10,000 workers at a mean
/// 50,000 rps in aggregate mode.
pub const LARGE_FLEET_TOML: &str = include_str!("../../scenarios/large-fleet.toml");

/// The shipped large fleet (aggregate mode) for `h` hours.
pub fn large_fleet_aggregate(h: f64) -> Scenario {
    let o = parse_override(&hours(h)).expect("an override");
    let (_, sc) = load(LARGE_FLEET_TOML, "large-fleet.toml", &[o], &mut |_| {
        Err("no files".into())
    })
    .expect("the large fleet is valid");
    sc
}

/// The 1,000-configuration sweep file: 999 Sobol points + the base, one
/// replication each, 24 h of the embedded default per trial.
pub const SWEEP_1000: &str = include_str!("../sweeps/configs-1000.toml");

/// The 1,000-configuration sweep, loaded as `fleetsim sweep` loads it (the
/// base is the embedded default), and every trial index.
pub fn sweep_1000() -> (Base, Sweep, Vec<u64>) {
    let raw: RawSweep = toml::from_str(SWEEP_1000).expect("the sweep file parses");
    let sweep = fleetsim::sweep::validate(&raw).expect("the sweep file is valid");
    let (raw_sc, _) = load(DEFAULT_SCENARIO, "default", &[], &mut |_| {
        Err("no files".into())
    })
    .expect("the default scenario is valid");
    let base = Base::new(&raw_sc, "default", None, sweep.hours);
    let trials = (0..(sweep.config_count() + 1) * sweep.replications).collect();
    (base, sweep, trials)
}

/// Runs every trial of a sweep on the current rayon pool; panics on a
/// failed trial. Returns the events simulated.
pub fn run_sweep(base: &Base, sweep: &Sweep, trials: &[u64]) -> u64 {
    run_chunk(base, sweep, trials)
        .iter()
        .map(|t| {
            t.result
                .as_ref()
                .expect("a sweep trial runs")
                .events_processed
        })
        .sum()
}

/// Builds (parses, overrides, validates) every trial's scenario without
/// running it: the runner's per-trial set-up cost.
pub fn load_sweep_scenarios(base: &Base, sweep: &Sweep, trials: &[u64]) -> usize {
    trials
        .iter()
        .map(|&t| {
            let (_, sc) = base
                .scenario(&sweep.config(t / sweep.replications))
                .expect("a sweep configuration is valid");
            sc.fleet.workers()
        })
        .sum()
}

/// The peak resident set of this process so far (`VmHWM`), in kB; `None`
/// off Linux.
pub fn peak_rss_kb() -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|l| l.starts_with("VmHWM:"))?;
    line.split_whitespace().nth(1)?.parse().ok()
}

/// One run without output.
pub fn run(sc: &Scenario) -> Summary {
    fleetsim::run_summary(sc, SEED).expect("a benchmark run stays within its event budget")
}

/// `run` on the event engine (`Sim::with_event_completions`): every
/// served request a heap event, the reference the fast path is measured
/// against side by side.
pub fn run_events(sc: &Scenario) -> Summary {
    fleetsim::Sim::new(sc, SEED, fleetsim::metrics::NullObserver)
        .with_event_completions()
        .run()
        .expect("a benchmark run stays within its event budget")
        .summary
}

/// `run` on the fast path whatever the fleet's size
/// (`Sim::with_lazy_completions`; `Sim::new` takes it from
/// `LAZY_MIN_WORKERS` up).
pub fn run_lazy(sc: &Scenario) -> Summary {
    fleetsim::Sim::new(sc, SEED, fleetsim::metrics::NullObserver)
        .with_lazy_completions()
        .run()
        .expect("a benchmark run stays within its event budget")
        .summary
}

/// `run` with the draws on helper threads (`Sim::with_draw_threads`), as
/// `fleetsim run` makes them on a machine with cores to spare.
pub fn run_threads(sc: &Scenario) -> Summary {
    fleetsim::Sim::new(sc, SEED, fleetsim::metrics::NullObserver)
        .with_draw_threads()
        .run()
        .expect("a benchmark run stays within its event budget")
        .summary
}

/// `run` as `fleetsim run` drives the loop: with the Ctrl-C flag and the
/// progress hook (`Sim::with_progress`) wired, or with the flag alone
/// (`progress = false`, the loop as it was before the hook).
pub fn run_hooked(sc: &Scenario, progress: bool) -> Summary {
    use std::sync::atomic::{AtomicBool, AtomicU64};
    let (stop, at) = (AtomicBool::new(false), AtomicU64::new(0));
    let mut sim =
        fleetsim::Sim::new(sc, SEED, fleetsim::metrics::NullObserver).with_stop_flag(&stop);
    if progress {
        sim = sim.with_progress(&at);
    }
    let s = sim
        .run()
        .expect("a benchmark run stays within its event budget")
        .summary;
    assert!(!progress || at.into_inner() > 0 || s.events_processed < 4096);
    s
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
