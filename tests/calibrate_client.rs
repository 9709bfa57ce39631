//! The client's stale-connection window is fitted to the recorded
//! `retry_ok` per recycle when the recording has canary events, and left
//! alone when it has none.

mod common;

use common::{PLAIN_FLEET, events_csv};
use fleetsim::metrics::EventKind;
use fleetsim::replay::calibrate::{Budget, Options, calibrate};
use fleetsim::replay::{Recording, import};
use fleetsim::scenario::RawScenario;

/// The plain fleet, its client's window 3 s.
fn truth(window: &str) -> Vec<String> {
    let mut v: Vec<String> = PLAIN_FLEET.iter().map(|s| s.to_string()).collect();
    v.push(format!("client.stale_window_s={window}"));
    v
}

/// The whole events.csv of a run: recycle rows and the client's canaries.
fn recording(window: &str, seed: u64, canaries: bool) -> Recording {
    let sets = truth(window);
    let sets: Vec<&str> = sets.iter().map(String::as_str).collect();
    let mut text = events_csv(&sets, seed);
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
    fits: 1,
};

#[test]
fn the_stale_window_is_fitted_to_the_recorded_resets_per_recycle() {
    let rec = recording("3.0", 31, true);
    let resets = rec.count(EventKind::RetryOk);
    assert!(resets > 20, "the truth must reset: {resets}");
    let c = calibrate(&rec, &base(), 1, BUDGET, Options::DEFAULT, &|_| ()).expect("calibrates");
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
    let rec = recording("3.0", 32, false);
    assert_eq!(rec.count(EventKind::RetryOk), 0);
    let c =
        calibrate(&rec, &base(), 1, Budget::TINY, Options::DEFAULT, &|_| ()).expect("calibrates");
    assert!(c.get("client.stale_window_s").is_none());
    assert!(!c.fixed.iter().any(|(k, _)| k == "client.stale_window_s"));
}

#[test]
fn a_window_the_recording_does_not_contradict_stays_the_bases() {
    // The truth's client is the base's (15 s): its resets are what the
    // base predicts, so nothing is fitted and a note says why.
    let rec = recording("15.0", 33, true);
    assert!(rec.count(EventKind::RetryOk) > 20);
    let c = calibrate(&rec, &base(), 1, BUDGET, Options::DEFAULT, &|_| ()).expect("calibrates");
    assert!(c.get("client.stale_window_s").is_none(), "{:?}", c.notes);
    assert!(
        c.notes
            .iter()
            .any(|n| n.starts_with("client.stale_window_s: the base's 15 s kept")),
        "{:?}",
        c.notes
    );
}
