//! The client's stale-connection window is fitted to the recorded
//! `retry_ok` per recycle when the recording has canary events, and left
//! alone when it has none.

mod common;

use common::scenario;
use fleetsim::Sim;
use fleetsim::metrics::{CsvObserver, EventKind};
use fleetsim::replay::calibrate::{Budget, calibrate};
use fleetsim::replay::{Recording, import};
use fleetsim::scenario::RawScenario;

/// A plain-leak fleet recycling ~5 times an hour, its client's window 3 s.
const TRUTH: &[&str] = &[
    "run.duration_h=24",
    "fleet.boot_rss_mb=420",
    "fleet.leak.mean_mb_per_request=0.15",
    "fleet.leak.cv=0.6",
    "fleet.leak.warmup_mb=0",
    "fleet.leak.step_probability=0",
    "policy.base_limit_mb=540",
    "policy.jitter_mb=30",
    "policy.hard_limit_mb=690",
    "workload.rps=1.6",
    "workload.profile=constant",
    "policy.busy_deferral=false",
    "client.stale_window_s=3.0",
];

/// The whole events.csv of a run: recycle rows and the client's canaries.
fn recording(seed: u64, canaries: bool) -> Recording {
    let sc = scenario(TRUTH);
    let (mut events, mut timeline) = (Vec::new(), Vec::new());
    let mut obs = CsvObserver::new(
        &mut events,
        &mut timeline,
        sc.policy.base_limit_mb,
        sc.policy.hard_limit_mb,
    );
    Sim::new(&sc, seed, &mut obs).run().expect("runs");
    obs.finish().expect("in memory");
    let mut text = String::from_utf8(events).unwrap();
    if !canaries {
        text = text
            .lines()
            .enumerate()
            .filter(|(i, l)| *i == 0 || !(l.contains(",retry_ok,") || l.contains(",fetch_failed,")))
            .map(|(_, l)| format!("{l}\n"))
            .collect();
    }
    Recording::assemble(vec![import::parse("sim.csv", &text).unwrap()]).unwrap()
}

fn base() -> RawScenario {
    // The base's window is the default's 15 s: five times the truth.
    fleetsim::scenario::load(
        fleetsim::scenario::DEFAULT_SCENARIO,
        "<base>",
        &[],
        &mut |p| Err(format!("no side files ({p})")),
    )
    .unwrap()
    .0
}

const BUDGET: Budget = Budget {
    seeds: 8,
    iterations: 3,
    draws: 8,
    refine: 0,
};

#[test]
fn the_stale_window_is_fitted_to_the_recorded_resets_per_recycle() {
    let rec = recording(31, true);
    let resets = rec.count(EventKind::RetryOk);
    assert!(resets > 20, "the truth must reset: {resets}");
    let c = calibrate(&rec, &base(), 1, BUDGET, false, &|_| ()).expect("calibrates");
    let f = c.get("client.stale_window_s").expect("fitted");
    assert!(f.identified, "{f:?}");
    assert!((f.value - 3.0).abs() < 1.0, "{f:?}");
    let (lo, hi) = (f.lo.unwrap(), f.hi.unwrap());
    assert!(lo < f.value && f.value < hi, "{f:?}");
    assert!(
        c.fixed.iter().any(|(k, _)| k == "client.stale_window_s"),
        "the fitted window is part of every draw's scenario"
    );
}

#[test]
fn without_canary_events_the_window_stays_the_bases() {
    let rec = recording(32, false);
    assert_eq!(rec.count(EventKind::RetryOk), 0);
    let c = calibrate(&rec, &base(), 1, Budget::TINY, false, &|_| ()).expect("calibrates");
    assert!(c.get("client.stale_window_s").is_none());
    assert!(!c.fixed.iter().any(|(k, _)| k == "client.stale_window_s"));
}

#[test]
fn a_window_the_recording_does_not_contradict_stays_the_bases() {
    // The truth's client is the base's (15 s): its resets are what the
    // base predicts, so nothing is fitted and a note says why.
    let mut sets = TRUTH.to_vec();
    *sets.last_mut().unwrap() = "client.stale_window_s=15.0";
    let sc = scenario(&sets);
    let (mut events, mut timeline) = (Vec::new(), Vec::new());
    let mut obs = CsvObserver::new(
        &mut events,
        &mut timeline,
        sc.policy.base_limit_mb,
        sc.policy.hard_limit_mb,
    );
    Sim::new(&sc, 33, &mut obs).run().expect("runs");
    obs.finish().expect("in memory");
    let text = String::from_utf8(events).unwrap();
    let rec = Recording::assemble(vec![import::parse("sim.csv", &text).unwrap()]).unwrap();
    assert!(rec.count(EventKind::RetryOk) > 20);
    let c = calibrate(&rec, &base(), 1, BUDGET, false, &|_| ()).expect("calibrates");
    assert!(c.get("client.stale_window_s").is_none(), "{:?}", c.notes);
    assert!(
        c.notes
            .iter()
            .any(|n| n.starts_with("client.stale_window_s: the base's 15 s kept")),
        "{:?}",
        c.notes
    );
}
