//! Every scenario the benchmarks and `examples/throughput.rs` run is one a
//! user could load: built (each panics on a scenario the validator
//! refuses) and the M/M/c reference run for a few simulated minutes. A
//! validation rule tightened later (the MB keys' 1e7 MB bound) made
//! `engine_mmc` panic in `cargo bench` unnoticed; this catches the next one.

#[path = "../benches/common/mod.rs"]
mod common;

#[test]
fn every_benchmark_scenario_is_valid() {
    let hours = 0.1;
    for (name, sc) in [
        ("default_24h", common::default_scenario(hours)),
        ("high_rate", common::high_rate(hours)),
        ("engine_mmc", common::engine_mmc(hours)),
        ("peer", common::peer(hours)),
        ("scaled", common::scaled(2, hours)),
        ("large_fleet", common::large_fleet(hours)),
        (
            "large_fleet_aggregate",
            common::large_fleet_aggregate(hours),
        ),
    ] {
        assert!(sc.duration.0 > 0, "{name}: no simulated time");
    }
    let (_, sweep, trials) = common::sweep_1000();
    assert_eq!(
        trials.len() as u64,
        (sweep.config_count() + 1) * sweep.replications
    );
}

#[test]
fn the_mmc_reference_serves_with_no_recycle() {
    let s = common::run(&common::engine_mmc(0.1));
    // 8 workers at rho 0.8 and 100 ms: 64 rps, about 23,000 requests in 6 min.
    assert!(s.requests_total > 20_000, "{}", s.requests_total);
    assert_eq!(s.requests_failed, 0);
    assert_eq!(s.recycles, 0);
}
