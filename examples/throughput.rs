//! Prints the benchmark workloads' throughput plainly, and runs one
//! workload once for profilers.
//!
//! ```text
//! cargo run --profile bench --example throughput            # the tables
//! cargo run --profile bench --example throughput -- high_rate 1   # one run (callgrind)
//! cargo run --profile bench --example throughput -- default_24h 24 200   # 200 runs (perf)
//! cargo run --profile bench --example throughput -- large_fleet 1   # one run, with peak memory
//! cargo run --profile bench --example throughput -- peer 24   # the SimPy peer's fleet, in process
//! cargo run --profile bench --example throughput -- high_rate+progress 1   # as `fleetsim run` drives it
//! cargo run --profile bench --example throughput -- high_rate+stop 1   # the Ctrl-C flag alone
//! cargo run --profile bench --example throughput -- peer+events 24   # on the event engine (side by side)
//! cargo run --profile bench --example throughput -- peer+lazy 24   # on the fast path (any fleet size)
//! cargo run --profile bench --example throughput -- peer+threads 24   # the draws on helper threads
//! cargo run --profile bench --example throughput -- scaling 0.25   # ns/request, 6 to 16,002 workers
//! cargo run --profile bench --example throughput -- scaled:200 0.25   # one of them (callgrind)
//! cargo run --profile bench --example throughput -- bare_mmc 4 5   # textbook engines, for scale:
//! cargo run --profile bench --example throughput -- bare_peer 24 5  # benches/common/bare.rs
//! cargo run --profile bench --example throughput -- floor_peer 24 5  # benches/common/floor.rs
//! cargo run --profile bench --example throughput -- floor_scaling 0.05  # the floor, 6 to 16,002 workers, batched by instance or not
//! cargo run --profile bench --example throughput -- floor:5334 0.05   # one of them (callgrind); floor_batched:5334 batched
//! ```
//!
//! Wall-clock figures come from runs repeated on one thread for two seconds
//! (at least five runs; three for the large fleet and the sweep): the
//! fastest run (throughput is computed from it) and the median. On a shared
//! machine compare builds side by side, or use callgrind.

#[path = "../benches/common/mod.rs"]
mod common;

use fleetsim::Scenario;
use std::time::{Duration, Instant};

/// Keep repeating a workload until this much wall time has passed.
const BUDGET: Duration = Duration::from_secs(2);

fn workload(name: &str, hours: f64) -> Scenario {
    match name {
        "default_24h" => common::default_scenario(hours),
        "high_rate" => common::high_rate(hours),
        "engine_mmc" => common::engine_mmc(hours),
        "large_fleet" => common::large_fleet(hours),
        "peer" => common::peer(hours),
        other if other.starts_with("scaled:") => {
            common::scaled(other[7..].parse().expect("scaled:INSTANCES"), hours)
        }
        other => panic!(
            "unknown workload {other}: default_24h, high_rate, engine_mmc, large_fleet or peer"
        ),
    }
}

/// The fastest and the median wall time of `f`, over at least `min_runs`
/// runs repeated for `BUDGET`. On a shared machine the fastest is the
/// least disturbed.
fn time_runs(min_runs: usize, mut f: impl FnMut()) -> (Duration, Duration) {
    let mut times = Vec::new();
    let start = Instant::now();
    while times.len() < min_runs || (start.elapsed() < BUDGET && times.len() < 1000) {
        let t = Instant::now();
        f();
        times.push(t.elapsed());
    }
    times.sort();
    (times[0], times[times.len() / 2])
}

/// `peak RSS` as printed: MB, or why it is missing.
fn peak_rss() -> String {
    common::peak_rss_kb().map_or("n/a (no /proc/self/status)".into(), |kb| {
        format!("{:.1} MB", kb as f64 / 1024.0)
    })
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    if let [name, hours] = args.as_slice()
        && name == "scaling"
    {
        scaling(hours.parse().expect("hours is a number"));
        return;
    }
    if let [name, hours] = args.as_slice()
        && name == "floor_scaling"
    {
        floor_scaling(hours.parse().expect("hours is a number"));
        return;
    }
    if let [name, hours, rest @ ..] = args.as_slice() {
        let hours: f64 = hours.parse().expect("hours is a number");
        let runs: u32 = rest
            .first()
            .map_or(1, |r| r.parse().expect("runs is a count"));
        // A textbook engine (for scale) or a fleetsim workload: (events,
        // requests, the bare engine's mean wait).
        // `+progress`: the Ctrl-C flag and the progress hook wired, as
        // `fleetsim run` does; `+stop`: the flag alone.
        // `+events`: on the event engine, every request a heap event;
        // `+lazy`: on the fast path whatever the fleet's size.
        let (name, hook) = match name.split_once('+') {
            Some((n, "progress")) => (n, Some(true)),
            Some((n, "stop")) => (n, Some(false)),
            Some((n, "events")) | Some((n, "lazy")) | Some((n, "threads")) => (n, None),
            Some((_, h)) => {
                panic!("unknown hook +{h}: +progress, +stop, +events, +lazy or +threads")
            }
            None => (name.as_str(), None),
        };
        let events_engine = args[0].ends_with("+events");
        let lazy_engine = args[0].ends_with("+lazy");
        let threads = args[0].ends_with("+threads");
        let scale = scale_engine(name);
        let sc = scale.is_none().then(|| workload(name, hours));
        let once = || match (scale, &sc) {
            (Some(Scale::Bare(b)), _) => {
                let r = std::hint::black_box(common::bare::run(b, hours, common::SEED));
                (
                    r.events,
                    r.requests,
                    Some(format!("mean wait {:.4} s", r.mean_wait_s)),
                )
            }
            (Some(Scale::Floor(instances, batch)), _) => {
                let r = std::hint::black_box(common::floor::run_fleet(
                    instances,
                    batch,
                    hours,
                    common::SEED,
                ));
                let note = format!(
                    "mean wait {:.4} s, {} waited, p99 {:.3} s, {} refused, {} evented, \
                     {} recycles, overshoot {:.1} MB s",
                    r.mean_wait_s,
                    r.waited,
                    r.p99_latency_s,
                    r.refused,
                    r.evented,
                    r.recycles,
                    r.overshoot_mb_s
                );
                (r.events, r.requests, Some(note))
            }
            (None, Some(sc)) => {
                let s = match hook {
                    Some(p) => common::run_hooked(sc, p),
                    None if events_engine => common::run_events(sc),
                    None if lazy_engine => common::run_lazy(sc),
                    None if threads => common::run_threads(sc),
                    None => common::run(sc),
                };
                (s.events_processed, s.requests_total, None)
            }
            (None, None) => unreachable!("a workload or an engine for scale"),
        };
        let mut times = Vec::new();
        let mut last = None;
        for _ in 0..runs.max(1) {
            let t = Instant::now();
            last = Some(once());
            times.push(t.elapsed().as_secs_f64());
        }
        let (events, requests, note) = last.expect("at least one run");
        times.sort_by(f64::total_cmp);
        let (best, median) = (times[0], times[times.len() / 2]);
        println!(
            "{name}: {events} events, {requests} requests; {} runs, best {best:.3} s, median {median:.3} s; \
             best {:.3e} events/s, {:.3e} requests/s; {}",
            times.len(),
            events as f64 / best,
            requests as f64 / best,
            note.unwrap_or_else(|| format!("peak RSS (VmHWM) {}", peak_rss()))
        );
        return;
    }
    workloads();
    println!();
    sweep();
    println!(
        "\npeak RSS of this process (VmHWM, every workload above): {}",
        peak_rss()
    );
}

/// ns/request of the peer's fleet grown at the same load per worker
/// (`common::scaled`), each size beside the smallest, on the fast path
/// (`Sim::with_lazy_completions`, whatever the size) and on the event
/// engine (`Sim::with_event_completions`): the cost a
/// request adds as the fleet's working set leaves the caches. Sizes and
/// engines alternate round by round, so a busy spell of the machine hits
/// them alike; each one's best round is printed.
fn scaling(hours: f64) {
    let fleets: Vec<_> = common::SCALING_INSTANCES
        .iter()
        .map(|&n| (n, common::scaled(n, hours)))
        .collect();
    let mut best = vec![[f64::INFINITY; 2]; fleets.len()];
    let mut requests = vec![0u64; fleets.len()];
    for _round in 0..3 {
        for (k, (_, sc)) in fleets.iter().enumerate() {
            for (e, run) in [common::run_lazy, common::run_events].iter().enumerate() {
                let (fastest, _) = time_runs(1, || {
                    requests[k] = std::hint::black_box(run(sc)).requests_total;
                });
                best[k][e] = best[k][e].min(fastest.as_secs_f64() * 1e9 / requests[k] as f64);
            }
        }
    }
    let sizes: Vec<usize> = fleets.iter().map(|&(n, _)| n as usize).collect();
    print_scaling(["fast path", "event engine"], &sizes, &requests, &best);
}

/// The scaling table: per size (instances of 3 workers), ns a request of
/// two engines and each against the smallest fleet.
fn print_scaling(engines: [&str; 2], sizes: &[usize], requests: &[u64], best: &[[f64; 2]]) {
    println!(
        "{:>8} {:>9} {:>11} {:>13} {:>9} {:>13} {:>9}",
        "workers", "rps", "requests", engines[0], "vs first", engines[1], "vs first"
    );
    for (k, n) in sizes.iter().enumerate() {
        println!(
            "{:>8} {:>9} {:>11} {:>13.1} {:>8.2}x {:>13.1} {:>8.2}x",
            n * 3,
            10 * n,
            requests[k],
            best[k][0],
            best[k][0] / best[0][0],
            best[k][1],
            best[k][1] / best[0][1]
        );
    }
}

/// The stretch of simulated time the batched floor files arrivals by
/// instance over: 15 s, a third of the sample interval, as if each
/// instance's three workers were sampled at staggered phases.
const FLOOR_BATCH_US: u64 = 15_000_000;

/// `scaling` for the floor (`benches/common/floor.rs`), request by request
/// and batched by instance: the same figures (checked), ns a request.
fn floor_scaling(hours: f64) {
    let sizes = common::SCALING_INSTANCES.map(|n| n as usize);
    let mut best = vec![[f64::INFINITY; 2]; sizes.len()];
    let mut requests = vec![0u64; sizes.len()];
    for _round in 0..3 {
        for (k, &n) in sizes.iter().enumerate() {
            let mut runs = [None, None];
            for (e, batch) in [None, Some(FLOOR_BATCH_US)].into_iter().enumerate() {
                let (fastest, _) = time_runs(1, || {
                    runs[e] = Some(std::hint::black_box(common::floor::run_fleet(
                        n,
                        batch,
                        hours,
                        common::SEED,
                    )));
                });
                requests[k] = runs[e].as_ref().expect("a run").requests;
                best[k][e] = best[k][e].min(fastest.as_secs_f64() * 1e9 / requests[k] as f64);
            }
            assert_eq!(runs[0], runs[1], "batching changed the floor's figures");
        }
    }
    print_scaling(["in order", "batched"], &sizes, &requests, &best);
}

/// An engine for scale, not fleetsim: a textbook one
/// (`benches/common/bare.rs`) or the floor (`benches/common/floor.rs`).
#[derive(Clone, Copy)]
enum Scale {
    Bare(common::bare::Bare),
    /// Instances, and the stretch batched by instance (us).
    Floor(usize, Option<u64>),
}

fn scale_engine(name: &str) -> Option<Scale> {
    match name {
        "bare_mmc" => Some(Scale::Bare(common::bare::Bare::mmc())),
        "bare_peer" => Some(Scale::Bare(common::bare::Bare::peer())),
        "floor_peer" => Some(Scale::Floor(2, None)),
        other if other.starts_with("floor:") => Some(Scale::Floor(
            other[6..].parse().expect("floor:INSTANCES"),
            None,
        )),
        other if other.starts_with("floor_batched:") => Some(Scale::Floor(
            other[14..].parse().expect("floor_batched:INSTANCES"),
            Some(FLOOR_BATCH_US),
        )),
        _ => None,
    }
}

fn workloads() {
    println!(
        "{:<12} {:>5} {:>9} {:>9} {:>9} {:>9} {:>10} {:>10}",
        "workload", "hours", "events", "requests", "best_ms", "median_ms", "events/s", "requests/s"
    );
    for (name, hours, min_runs) in [
        ("default_24h", 24.0, 5),
        ("high_rate", 4.0, 5),
        ("engine_mmc", 4.0, 5),
        ("large_fleet", 1.0, 3),
        ("peer", 24.0, 5),
    ] {
        let sc = workload(name, hours);
        let s = common::run(&sc);
        let (best, median) = time_runs(min_runs, || {
            std::hint::black_box(common::run(std::hint::black_box(&sc)));
        });
        let secs = best.as_secs_f64();
        println!(
            "{name:<12} {hours:>5} {:>9} {:>9} {:>9.3} {:>9.3} {:>10.3e} {:>10.3e}",
            s.events_processed,
            s.requests_total,
            secs * 1e3,
            median.as_secs_f64() * 1e3,
            s.events_processed as f64 / secs,
            s.requests_total as f64 / secs
        );
    }
}

/// The 1,000-configuration sweep on the library runner, on one rayon
/// thread and on every core.
fn sweep() {
    let (base, sweep, trials) = common::sweep_1000();
    println!(
        "{:<12} {:>7} {:>11} {:>9} {:>9} {:>10} {:>10}",
        "sweep", "threads", "simulations", "best_s", "median_s", "sims/s", "events/s"
    );
    for threads in [1, 0] {
        let pool = rayon::ThreadPoolBuilder::new()
            .num_threads(threads)
            .build()
            .expect("a rayon pool");
        let mut events = 0;
        let (best, median) = time_runs(3, || {
            events = pool.install(|| common::run_sweep(&base, &sweep, &trials));
        });
        let secs = best.as_secs_f64();
        println!(
            "{:<12} {:>7} {:>11} {:>9.3} {:>9.3} {:>10.1} {:>10.3e}",
            "sweep_1000",
            pool.current_num_threads(),
            trials.len(),
            secs,
            median.as_secs_f64(),
            trials.len() as f64 / secs,
            events as f64 / secs
        );
    }
    let (best, median) = time_runs(3, || {
        std::hint::black_box(common::load_sweep_scenarios(&base, &sweep, &trials));
    });
    println!(
        "{:<12} {:>7} {:>11} {:>9.3} {:>9.3} {:>10.1}  (set-up only: scenarios built, not run)",
        "sweep_setup",
        1,
        trials.len(),
        best.as_secs_f64(),
        median.as_secs_f64(),
        trials.len() as f64 / best.as_secs_f64()
    );
}
