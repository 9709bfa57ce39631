//! Calibration with an RSS series: boot and the leak velocity are observed
//! per life and held fixed, and the overshoot past the limit then measures
//! the tick, which recycle rows alone confound with boot.

mod common;

use common::{PLAIN_FLEET, events_csv};
use fleetsim::replay::calibrate::observed::Observed;
use fleetsim::replay::calibrate::{Budget, Calibration, Options, calibrate, calibrate_observed};
use fleetsim::replay::{Recording, import};
use fleetsim::scenario::RawScenario;
use rand::SeedableRng;
use rand_distr::{Distribution, LogNormal, Normal};

/// The plain fleet (sampled every 45 s, the default's tick), recorded as
/// platform recycle rows.
fn rows(seed: u64) -> Recording {
    let full = events_csv(PLAIN_FLEET, seed);
    let all = Recording::assemble(vec![import::parse("sim.csv", &full).unwrap()]).unwrap();
    let mut text = String::from("ts,event,instance,worker,rss_mb,limit_mb,requests\n");
    for e in all.recycles() {
        let (Some(rss), Some(limit), Some(n)) = (e.rss_mb, e.limit_mb, e.requests) else {
            continue;
        };
        text += &format!(
            "{:.3},worker_recycled,{},{},{rss:.1},{limit:.1},{n}\n",
            e.t_s,
            e.instance.as_deref().unwrap_or(""),
            e.worker.as_deref().unwrap_or("")
        );
    }
    Recording::assemble(vec![import::parse("rows.csv", &text).unwrap()]).unwrap()
}

/// The default scenario with the deployed tick wrong (30 s, the window's is 45 s).
fn base() -> RawScenario {
    let o = [fleetsim::scenario::parse_override("policy.tick_s=30").unwrap()];
    fleetsim::scenario::load(
        fleetsim::scenario::DEFAULT_SCENARIO,
        "<base>",
        &o,
        &mut |p| Err(format!("no side files ({p})")),
    )
    .unwrap()
    .0
}

/// What a series would show of 60 lives: boot 420 with a few MB of
/// allocator noise, velocities from the fleet's lognormal.
fn observed() -> Observed {
    let mut rng = rand_xoshiro::Xoshiro256PlusPlus::seed_from_u64(7);
    let noise = Normal::new(0.0, 3.0).unwrap();
    let (mean, cv) = (0.15f64, 0.6f64);
    let s2 = (1.0 + cv * cv).ln();
    let v = LogNormal::new(mean.ln() - s2 / 2.0, s2.sqrt()).unwrap();
    Observed {
        boot_mb: (0..60).map(|_| 420.0 + noise.sample(&mut rng)).collect(),
        mb_per_request: (0..60).map(|_| v.sample(&mut rng)).collect(),
        source: "test series: 60 lives".into(),
    }
}

fn get<'a>(c: &'a Calibration, key: &str) -> &'a fleetsim::replay::calibrate::Fit {
    c.get(key).unwrap_or_else(|| panic!("{key} missing"))
}

#[test]
fn an_observed_boot_and_leak_are_kept_and_the_tick_is_fitted_over_them() {
    let rec = rows(21);
    let obs = observed();
    let c = calibrate_observed(
        &rec,
        &base(),
        1,
        Budget::DEFAULT,
        Options::DEFAULT,
        Some(&obs),
        &|_| (),
    )
    .expect("calibrates");
    let boot = get(&c, "fleet.boot_rss_mb");
    assert!((boot.value - 420.0).abs() < 3.0, "{boot:?}");
    assert!(boot.how.starts_with("observed"), "{}", boot.how);
    let leak = get(&c, "fleet.leak.mean_mb_per_request");
    assert!(leak.how.starts_with("observed"), "{}", leak.how);
    assert!((leak.value - 0.15).abs() < 0.15 * 0.15, "{leak:?}");
    // The tick: fitted from the base's 30 s to the window's 45 s, within
    // two of its own standard errors (this window reads high: 51.6, se
    // 6.6, under model 7; 54.3, se 5.8, under model 8, whose memory grid
    // moved its draws; a fixed 9 s band was passed by 0.3 s), and clear
    // of the base's 30 s.
    let tick = get(&c, "policy.tick_s");
    assert!(tick.identified, "{tick:?}");
    let se = tick.se.expect("a fitted tick has an se");
    assert!((tick.value - 45.0).abs() < 2.0 * se, "{tick:?}");
    assert!(tick.value - 30.0 > 2.0 * se, "{tick:?}");
    for (key, truth, tol) in [
        ("policy.base_limit_mb", 540.0, 540.0 * 0.02),
        ("policy.jitter_mb", 30.0, 6.0),
        ("workload.rps", 1.6, 1.6 * 0.05),
    ] {
        let v = get(&c, key).value;
        assert!((v - truth).abs() <= tol, "{key}: {v} vs {truth}");
    }
    assert!(
        c.notes
            .iter()
            .any(|n| n.contains("observed in the RSS series")),
        "{:?}",
        c.notes
    );
    // Without the series the same rows keep the base's 30 s tick.
    let plain = calibrate(&rec, &base(), 1, Budget::TINY, Options::DEFAULT, &|_| ()).unwrap();
    let t = get(&plain, "policy.tick_s");
    assert!(!t.identified && t.value == 30.0, "{t:?}");
}

#[test]
fn too_short_a_series_changes_nothing() {
    let rec = rows(22);
    let few = Observed {
        boot_mb: vec![420.0; 3],
        mb_per_request: vec![0.15; 3],
        source: "3 lives".into(),
    };
    let with = calibrate_observed(
        &rec,
        &base(),
        1,
        Budget::TINY,
        Options::DEFAULT,
        Some(&few),
        &|_| (),
    )
    .unwrap();
    let without = calibrate(&rec, &base(), 1, Budget::TINY, Options::DEFAULT, &|_| ()).unwrap();
    assert_eq!(with.fits, without.fits);
}

/// Every candidate structure is scored after its own Newton steps: each
/// takes a Jacobian (a set of windows per parameter the fit moves: six
/// with a known tick) before its KS score, not only the chosen one after
/// the choice (on recordings with steps the fixed-point steps alone left
/// the base's memory model unconverged, and plain won). The progress
/// bar's plan still bounds the count.
#[test]
fn every_candidate_is_scored_after_its_newton_steps() {
    let rec = rows(23);
    let b = Budget {
        seeds: 2,
        iterations: 1,
        draws: 2,
        refine: 1,
        fits: 1,
    };
    let c = calibrate(&rec, &base(), 1, b, Options::DEFAULT, &|_| ()).unwrap();
    let candidates = c.structure.candidates.len();
    assert!(candidates >= 2, "{:?}", c.structure.candidates);
    // Per candidate: its fixed-point step and its Jacobian; then the
    // pilot twice (two sets of twice the seeds each) and the chosen one's
    // Jacobian.
    let least = (candidates * (b.iterations + 6) + 8 + 6) * b.seeds;
    assert!(
        c.seeds_simulated >= least,
        "{} windows, at least {least} with a Jacobian per candidate",
        c.seeds_simulated
    );
    let whole_mb = fleetsim::replay::validate::Recorded::of(&rec).whole_mb;
    let planned =
        fleetsim::replay::calibrate::planned_simulations(b, candidates, Options::DEFAULT, whole_mb);
    assert!(
        c.seeds_simulated <= planned,
        "{} > {planned}",
        c.seeds_simulated
    );
    // Without Newton steps no candidate takes a Jacobian it would throw
    // away: only the chosen one's (the draws map through it).
    let none = Budget { refine: 0, ..b };
    let c0 = calibrate(&rec, &base(), 1, none, Options::DEFAULT, &|_| ()).unwrap();
    // (The pilot runs twice, at the start and at the fitted point, and the
    // chosen one's fixed-point steps again when the second moved its weights;
    // the Jacobian again, on fresh seeds, when the screen ruled out more than
    // half the draws: its point's windows and one set a parameter, then its
    // draws screened; before them all, the busy-deferral scan, once.)
    let most = (candidates * none.iterations + 8 + none.iterations + 6 + (1 + 6)) * none.seeds
        + 3 * none.draws
        + fleetsim::replay::calibrate::scan_windows(none);
    assert!(
        c0.seeds_simulated <= most,
        "{} > {most}",
        c0.seeds_simulated
    );
}
