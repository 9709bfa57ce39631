//! The seeds' fleet at a constant 50 rps (saturated: backlogs, timeouts and
//! recycles under pressure). Target: at least 5 million simulated requests
//! per second of wall time on one core.
//!
//! `cargo bench --bench high_rate`; items/s are simulated requests per second.

mod common;

use divan::counter::ItemsCount;

/// Simulated hours per run.
const HOURS: [f64; 2] = [1.0, 24.0];

fn main() {
    // Printed before divan's table, which a mid-table line would split.
    for hours in HOURS {
        common::describe(&format!("high_rate {hours} h"), &common::high_rate(hours));
    }
    divan::main();
}

#[divan::bench(args = HOURS, sample_count = 10, sample_size = 1)]
fn high_rate(bencher: divan::Bencher, hours: f64) {
    let sc = common::high_rate(hours);
    bencher
        .counter(ItemsCount::new(common::run(&sc).requests_total))
        .bench_local(|| common::run(divan::black_box(&sc)));
}
