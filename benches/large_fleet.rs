//! A large fleet: 100 instances x 8 sync workers at a constant 2,000 rps
//! (20 rps per instance) for one simulated hour, ~7.2 million requests.
//! Containers are 8 GiB so eight forked workers fit, and `policy.busy_rps`
//! is 40 so the busy deferral does not hold every worker (see
//! `common::large_fleet`).
//!
//! `large_fleet_aggregate` runs `scenarios/large-fleet.toml` (10,000
//! workers, 50,000 rps, aggregate mode) for 2 simulated hours; the whole
//! day is `fleetsim run scenarios/large-fleet.toml` (docs/aggregate.md).
//!
//! `cargo bench --bench large_fleet`; items/s are simulated requests per
//! second (the events of one run are printed first). Peak memory:
//! `cargo run --profile bench --example throughput -- large_fleet 1`
//! prints the process's `VmHWM`.

mod common;

use divan::counter::ItemsCount;

fn main() {
    // Printed before divan's table, which a mid-table line would split.
    common::describe("large_fleet 1 h", &common::large_fleet(1.0));
    common::describe(
        "large_fleet_aggregate 2 h",
        &common::large_fleet_aggregate(2.0),
    );
    divan::main();
}

#[divan::bench(sample_count = 5, sample_size = 1)]
fn large_fleet(bencher: divan::Bencher) {
    let sc = common::large_fleet(1.0);
    bencher
        .counter(ItemsCount::new(common::run(&sc).requests_total))
        .bench_local(|| common::run(divan::black_box(&sc)));
}

#[divan::bench(sample_count = 3, sample_size = 1)]
fn large_fleet_aggregate(bencher: divan::Bencher) {
    let sc = common::large_fleet_aggregate(2.0);
    bencher
        .counter(ItemsCount::new(common::run(&sc).requests_total))
        .bench_local(|| common::run(divan::black_box(&sc)));
}
