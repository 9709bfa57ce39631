//! Cost per request as the fleet grows at the same load per worker: the
//! peer's fleet (`common::peer`) at 6 to 16,002 workers, 10 rps an
//! instance of 3, for a quarter of a simulated hour (`common::scaled`).
//!
//! `cargo bench --bench fleet_size`; items/s are simulated requests per
//! second. `cargo run --profile bench --example throughput -- scaling 0.25`
//! prints ns/request per size beside the 6-worker fleet's, on the fast
//! path and on the event engine, sizes and engines alternated round by
//! round (issue 20's target: 16,002 within 1.3x of 6).

mod common;

use divan::counter::ItemsCount;

const HOURS: f64 = 0.25;

fn main() {
    for n in common::SCALING_INSTANCES {
        common::describe(&format!("{} workers", n * 3), &common::scaled(n, HOURS));
    }
    divan::main();
}

/// On the fast path at every size (`Sim::with_lazy_completions`).
#[divan::bench(args = common::SCALING_INSTANCES, sample_count = 3, sample_size = 1)]
fn fleet_size(bencher: divan::Bencher, instances: u32) {
    let sc = common::scaled(instances, HOURS);
    bencher
        .counter(ItemsCount::new(common::run_lazy(&sc).requests_total))
        .bench_local(|| common::run_lazy(divan::black_box(&sc)));
}

/// The same on the event engine (`Sim::with_event_completions`), beside it.
#[divan::bench(args = common::SCALING_INSTANCES, sample_count = 3, sample_size = 1)]
fn fleet_size_event_engine(bencher: divan::Bencher, instances: u32) {
    let sc = common::scaled(instances, HOURS);
    bencher
        .counter(ItemsCount::new(common::run_events(&sc).requests_total))
        .bench_local(|| common::run_events(divan::black_box(&sc)));
}
