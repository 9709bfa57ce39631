//! The engine alone on an M/M/c reference: one instance of 8 sync workers,
//! exponential service (mean 100 ms), Poisson arrivals at utilisation 0.8,
//! no leak, so no recycling, no OOM and no client retries.
//!
//! `cargo bench --bench engine_mmc`; items/s are simulated events per second.
//! `bare_mmc` is a textbook binary-heap M/M/c engine on the same parameters,
//! for scale (`benches/common/bare.rs`).

mod common;

use divan::counter::ItemsCount;

fn main() {
    // Printed before divan's table, which a mid-table line would split.
    common::describe("engine_mmc 4 h", &common::engine_mmc(4.0));
    divan::main();
}

#[divan::bench(sample_count = 20, sample_size = 1)]
fn engine_mmc(bencher: divan::Bencher) {
    let sc = common::engine_mmc(4.0);
    bencher
        .counter(ItemsCount::new(common::run(&sc).events_processed))
        .bench_local(|| common::run(divan::black_box(&sc)));
}

/// For scale: a textbook `BinaryHeap` M/M/c engine on the same parameters
/// (`benches/common/bare.rs`), nothing of fleetsim in it.
#[divan::bench(sample_count = 20, sample_size = 1)]
fn bare_mmc(bencher: divan::Bencher) {
    bencher
        .counter(ItemsCount::new(
            common::bare::run(common::bare::Bare::mmc(), 4.0, common::SEED).events,
        ))
        .bench_local(|| {
            common::bare::run(
                common::bare::Bare::mmc(),
                divan::black_box(4.0),
                common::SEED,
            )
        });
}
