//! Prints the benchmark workloads' throughput plainly, and runs one
//! workload once for profilers.
//!
//! ```text
//! cargo run --profile bench --example throughput            # the table
//! cargo run --profile bench --example throughput -- high_rate 1   # one run (callgrind)
//! cargo run --profile bench --example throughput -- default_24h 24 200   # 200 runs (perf)
//! ```
//!
//! Wall-clock figures come from runs repeated on one thread for two seconds:
//! the fastest run (throughput is computed from it) and the median. On a
//! shared machine compare builds side by side, or use callgrind.

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
        other => panic!("unknown workload {other}: default_24h, high_rate or engine_mmc"),
    }
}

/// The fastest and the median wall time of one run, over runs repeated for
/// `BUDGET`. On a shared machine the fastest is the least disturbed.
fn time_runs(sc: &Scenario) -> (Duration, Duration) {
    let mut times = Vec::new();
    let start = Instant::now();
    while times.len() < 5 || (start.elapsed() < BUDGET && times.len() < 1000) {
        let t = Instant::now();
        std::hint::black_box(common::run(std::hint::black_box(sc)));
        times.push(t.elapsed());
    }
    times.sort();
    (times[0], times[times.len() / 2])
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    if let [name, hours, rest @ ..] = args.as_slice() {
        let sc = workload(name, hours.parse().expect("hours is a number"));
        let runs: u32 = rest
            .first()
            .map_or(1, |r| r.parse().expect("runs is a count"));
        for _ in 1..runs {
            std::hint::black_box(common::run(&sc));
        }
        let s = common::run(&sc);
        println!(
            "{name}: {} events, {} requests",
            s.events_processed, s.requests_total
        );
        return;
    }
    println!(
        "{:<12} {:>5} {:>9} {:>9} {:>9} {:>9} {:>10} {:>10}",
        "workload", "hours", "events", "requests", "best_ms", "median_ms", "events/s", "requests/s"
    );
    for (name, hours) in [
        ("default_24h", 24.0),
        ("high_rate", 4.0),
        ("engine_mmc", 4.0),
    ] {
        let sc = workload(name, hours);
        let s = common::run(&sc);
        let (best, median) = time_runs(&sc);
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
