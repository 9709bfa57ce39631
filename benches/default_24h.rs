//! The embedded default scenario (the seeds' fleet, diurnal ~1 rps) over
//! 24 simulated hours: the run a user makes most. Target: under 10 ms.
//!
//! `cargo bench --bench default_24h`; items/s are simulated events per second.
//! `default_24h_stop_flag` and `default_24h_progress` drive the loop as
//! `fleetsim run` does (Ctrl-C flag; flag and progress hook): the hook's
//! cost is their difference (docs/outputs.md, "Progress", has the figures
//! and the callgrind counts of `examples/throughput.rs`).

mod common;

use divan::counter::ItemsCount;

fn main() {
    // Printed before divan's table, which a mid-table line would split.
    common::describe("default_24h", &common::default_scenario(24.0));
    divan::main();
}

#[divan::bench(sample_count = 200)]
fn default_24h(bencher: divan::Bencher) {
    let sc = common::default_scenario(24.0);
    bencher
        .counter(ItemsCount::new(common::run(&sc).events_processed))
        .bench_local(|| common::run(divan::black_box(&sc)));
}

#[divan::bench(sample_count = 200)]
fn default_24h_stop_flag(bencher: divan::Bencher) {
    let sc = common::default_scenario(24.0);
    bencher
        .counter(ItemsCount::new(common::run(&sc).events_processed))
        .bench_local(|| common::run_hooked(divan::black_box(&sc), false));
}

#[divan::bench(sample_count = 200)]
fn default_24h_progress(bencher: divan::Bencher) {
    let sc = common::default_scenario(24.0);
    bencher
        .counter(ItemsCount::new(common::run(&sc).events_processed))
        .bench_local(|| common::run_hooked(divan::black_box(&sc), true));
}
