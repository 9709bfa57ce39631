//! Helpers for the calibration tests (`tests/calibrate.rs`,
//! `tests/calibrate_structure.rs`): a simulated window read back as a
//! recording, recycle rows cut from it as platform logs give them, and a
//! calibration on the default budget.

use fleetsim::replay::calibrate::{Budget, Calibration, Options};
use fleetsim::replay::{Recording, import};
use fleetsim::scenario::RawScenario;

use super::scenario;

/// Simulates `sets` on the default scenario and reads events.csv back
/// (`validate::simulated_recording`, at the simulation's resolution).
pub fn recording(sets: &[&str], seed: u64) -> Recording {
    fleetsim::replay::validate::simulated_recording(
        &scenario(sets),
        seed,
        fleetsim::replay::validate::Written::Fine,
    )
    .expect("the run completes")
}

/// The raw scenario of `text` with `sets`.
pub fn raw_of(text: &str, sets: &[&str]) -> RawScenario {
    let overrides: Vec<_> = sets
        .iter()
        .map(|s| fleetsim::scenario::parse_override(s).unwrap())
        .collect();
    fleetsim::scenario::load(text, "<base>", &overrides, &mut |p: &str| {
        Err(format!("no side files ({p})"))
    })
    .unwrap_or_else(|e| panic!("the base loads: {e}"))
    .0
}

pub fn raw(sets: &[&str]) -> RawScenario {
    raw_of(fleetsim::scenario::DEFAULT_SCENARIO, sets)
}

pub fn calibrate(
    rec: &Recording,
    base: &RawScenario,
    seed: u64,
) -> Result<Calibration, fleetsim::replay::calibrate::CalibrateError> {
    fleetsim::replay::calibrate::calibrate(
        rec,
        base,
        seed,
        Budget::DEFAULT,
        Options::DEFAULT,
        &|_| (),
    )
}

/// The value `c` fixed for `key` in the calibrated scenario, if any.
pub fn fixed(c: &Calibration, key: &str) -> Option<toml::Value> {
    c.fixed.iter().find(|(k, _)| k == key).map(|x| x.1.clone())
}

pub fn value(c: &Calibration, key: &str) -> f64 {
    c.get(key)
        .unwrap_or_else(|| panic!("{key} not fitted"))
        .value
}

/// Asserts that `c`'s value for `key` is within `tol` of `truth`, showing
/// the calibration where it is not.
pub fn near(c: &Calibration, key: &str, truth: f64, tol: f64) {
    let v = value(c, key);
    assert!(
        (v - truth).abs() <= tol,
        "{key}: {v} vs {truth}\n{}",
        fleetsim::replay::calibrate::render(c)
    );
}

/// `rec` cut down to what platform logs give: recycle rows with time,
/// instance and worker (unless `ids` is false), rss, limit and requests,
/// optionally rounded to whole MB.
pub fn recycle_rows(rec: &Recording, ids: bool, whole_mb: bool) -> Recording {
    let mut text = String::from(if ids {
        "ts,event,instance,worker,rss_mb,limit_mb,requests\n"
    } else {
        "ts,event,rss_mb,limit_mb,requests\n"
    });
    let mb = |x: f64| {
        if whole_mb {
            format!("{}", x.round())
        } else {
            format!("{x:.1}")
        }
    };
    for e in rec.recycles() {
        let (Some(rss), Some(limit), Some(n)) = (e.rss_mb, e.limit_mb, e.requests) else {
            continue;
        };
        let who = if ids {
            format!(
                "{},{},",
                e.instance.as_deref().unwrap_or(""),
                e.worker.as_deref().unwrap_or("")
            )
        } else {
            String::new()
        };
        text += &format!(
            "{:.3},worker_recycled,{who}{},{},{n}\n",
            e.t_s,
            mb(rss),
            mb(limit)
        );
    }
    Recording::assemble(vec![import::parse("rows.csv", &text).unwrap()]).unwrap()
}

/// A recording checked in under `tests/recordings/` (its README says how
/// each was made).
pub fn checked_in(name: &str) -> fleetsim::replay::Recording {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/recordings")
        .join(name);
    let text = std::fs::read_to_string(&path).unwrap();
    let part = fleetsim::replay::import::parse(name, &text).unwrap();
    fleetsim::replay::Recording::assemble(vec![part]).unwrap()
}
