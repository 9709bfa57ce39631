//! `policy.sample_clock`: whose clock the timer samples follow. A shared
//! clock reads every worker at its ticks, so every RSS recycle (decided at
//! a sample) lands on one: multiples of the tick fleet-wide for
//! `wall_clock`, an instance's own phase for `per_instance`. The seeds'
//! per-worker phases (the contrast) land anywhere.

use fleetsim::Sim;
use fleetsim::metrics::{Metrics, NullObserver};
use fleetsim::scenario::{load, parse_override};
use std::collections::BTreeMap;
use std::path::Path;

fn run(sets: &[&str]) -> Metrics {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("scenarios");
    let path = dir.join("granian-max-rss.toml");
    let text = std::fs::read_to_string(&path).unwrap();
    let mut read = |rel: &str| std::fs::read_to_string(dir.join(rel)).map_err(|e| e.to_string());
    let sets: Vec<_> = sets.iter().map(|s| parse_override(s).unwrap()).collect();
    let (_, sc) = load(&text, "granian.toml", &sets, &mut read).unwrap();
    Sim::new(&sc, 3, NullObserver)
        .with_invariant_checks()
        .run()
        .unwrap()
        .metrics
}

/// Each recycle's time modulo the 30 s tick, per instance, in microseconds.
fn phases(m: &Metrics) -> BTreeMap<u32, Vec<u64>> {
    let mut by = BTreeMap::<u32, Vec<u64>>::new();
    for r in &m.recycles {
        by.entry(r.instance).or_default().push(r.t.0 % 30_000_000);
    }
    by
}

#[test]
fn wall_clock_samples_land_on_multiples_of_the_tick() {
    let m = run(&["policy.sample_clock=wall_clock"]);
    assert!(m.recycles.len() > 50);
    assert!(phases(&m).values().flatten().all(|&p| p == 0));
}

#[test]
fn per_instance_samples_share_their_instance_phase() {
    // The Granian preset's own clock (one watcher per server).
    assert_eq!(
        run(&[]).recycles.len(),
        run(&["policy.sample_clock=per_instance"]).recycles.len()
    );
    let m = run(&["policy.sample_clock=per_instance"]);
    assert!(m.recycles.len() > 50);
    let by = phases(&m);
    for ps in by.values() {
        assert!(ps.iter().all(|&p| p == ps[0]), "{ps:?}");
    }
    // Two instances, two phases drawn apart.
    let firsts: Vec<u64> = by.values().map(|ps| ps[0]).collect();
    assert!(firsts.len() == 2 && firsts[0] != firsts[1], "{firsts:?}");
    // Per-worker phases (the seeds' sampler) do not line up.
    let own = phases(&run(&["policy.sample_clock=per_worker"]));
    assert!(own.values().any(|ps| ps.iter().any(|&p| p != ps[0])));
}

#[test]
fn a_shared_clock_refuses_adaptive_sampling() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("scenarios");
    let text = std::fs::read_to_string(dir.join("granian-max-rss.toml")).unwrap();
    let mut read = |rel: &str| std::fs::read_to_string(dir.join(rel)).map_err(|e| e.to_string());
    let sets: Vec<_> = [
        "policy.sample_clock=per_instance",
        "policy.near_limit_fraction=0.1",
    ]
    .iter()
    .map(|s| parse_override(s).unwrap())
    .collect();
    let e = load(&text, "granian.toml", &sets, &mut read)
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("policy.sample_clock") && e.contains("per_worker"),
        "{e}"
    );
}
