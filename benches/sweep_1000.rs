//! The sweep runner on 1,000 configurations of the default scenario
//! (`benches/sweeps/configs-1000.toml`: 999 Sobol points + the base, one
//! replication, 24 h each), through the library's rayon `run_chunk`: each
//! trial rebuilds its scenario from the base's text plus its overrides,
//! validates it and simulates, as in `fleetsim sweep`, whose own runner
//! (`runner::run_in_order`: threads on a shared counter, rows handed back
//! in trial order) this bench does not time; the 80,000-trial CLI run in
//! docs/measurements.md does.
//!
//! `cargo bench --bench sweep_1000`; items/s are simulations per second,
//! on one rayon thread and on every core.

mod common;

use divan::counter::ItemsCount;

/// Rayon threads; 0 = one per core.
const THREADS: [usize; 2] = [1, 0];

fn main() {
    let (_, sweep, trials) = common::sweep_1000();
    eprintln!(
        "sweep_1000: {} configurations + base x {} replication = {} simulations per run",
        sweep.config_count(),
        sweep.replications,
        trials.len()
    );
    divan::main();
}

#[divan::bench(args = THREADS, sample_count = 3, sample_size = 1)]
fn sweep_1000(bencher: divan::Bencher, threads: usize) {
    let (base, sweep, trials) = common::sweep_1000();
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(threads)
        .build()
        .expect("a rayon pool");
    bencher
        .counter(ItemsCount::new(trials.len()))
        .bench_local(|| {
            pool.install(|| common::run_sweep(&base, &sweep, divan::black_box(&trials)))
        });
}

/// The trials' set-up alone: each scenario rebuilt from the base's text,
/// overridden and validated, not run (one thread).
#[divan::bench(sample_count = 10, sample_size = 1)]
fn sweep_1000_setup_only(bencher: divan::Bencher) {
    let (base, sweep, trials) = common::sweep_1000();
    bencher
        .counter(ItemsCount::new(trials.len()))
        .bench_local(|| common::load_sweep_scenarios(&base, &sweep, divan::black_box(&trials)));
}
