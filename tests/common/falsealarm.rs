//! The validation's false-alarm rate on good fits: a scenario simulated on
//! one seed is the "recording", validated against the very scenario that
//! generated it. Every row that warns is a false alarm. Shared by
//! `tests/validation_rules.rs` (a modest version) and
//! `examples/false_alarms.rs` (the full figure).

use fleetsim::Scenario;
use fleetsim::replay::Recording;
use fleetsim::replay::analyse::regimes;
use fleetsim::replay::analyse::window;
use fleetsim::replay::validate::{self, FigureRow, Verdict};

/// `sc` simulated on `seed`, its events.csv read back as a recording
/// (`validate::simulated_recording`, at the simulation's resolution).
pub fn recording(sc: &Scenario, seed: u64) -> Recording {
    validate::simulated_recording(sc, seed, validate::Written::Fine).expect("the run completes")
}

/// The label of the recording's regime with the most recycles.
pub fn regime(rec: &Recording) -> String {
    let w = window(rec);
    let views = regimes::split(rec, (w.start_s, w.end_s));
    views
        .iter()
        .max_by_key(|v| v.recycles.len())
        .map(|v| v.key.label().to_string())
        .expect("a regime")
}

/// The rule before issue 14: 2.5 seeds' sd (at least the Poisson sd for a
/// count per hour) + 5% of the mean, no prediction-interval factor.
pub fn old_rule_warns(r: &FigureRow, hours: f64) -> bool {
    match (r.recorded, r.simulated_mean, r.simulated_sd) {
        (Some(x), Some(m), Some(sd)) => {
            let sd = if r.name.ends_with("per hour") {
                sd.max((m * hours).max(1.0).sqrt() / hours)
            } else {
                sd
            };
            (x - m).abs() > 2.5 * sd + 0.05 * m.abs()
        }
        (None, None, _) => false,
        _ => true,
    }
}

/// Rows judged and rows warned over the good fits.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Tally {
    pub rows: usize,
    pub warned: usize,
}

impl Tally {
    pub fn rate(&self) -> f64 {
        self.warned as f64 / self.rows.max(1) as f64
    }
}

/// Validates `sc` on each of `recording_seeds`' windows of itself: the old
/// rule on the fixed block 1..8, the new one on `seeds` recording-derived
/// seeds. Returns (old, new) and the rows that warned, as "old|new seed S: row".
pub fn good_fits(
    sc: &Scenario,
    recording_seeds: &[u64],
    seeds: usize,
) -> (Tally, Tally, Vec<String>) {
    let (mut old, mut new, mut names) = (Tally::default(), Tally::default(), Vec::new());
    let hours = sc.duration.as_secs_f64() / 3600.0;
    let fixed: Vec<u64> = (1..=8).collect();
    for &s in recording_seeds {
        let rec = recording(sc, s);
        let label = regime(&rec);
        let scs = std::slice::from_ref(sc);
        let o = validate::validate(&rec, &label, scs, &fixed).expect("validates");
        for r in &o.figures {
            old.rows += 1;
            if old_rule_warns(r, hours) {
                old.warned += 1;
                names.push(format!("old seed {s}: {}", r.name));
            }
        }
        for r in &o.distributions {
            old.rows += 1;
            if r.verdict == Verdict::Warn {
                old.warned += 1;
                names.push(format!("old seed {s}: {}", r.name));
            }
        }
        let n = validate::validate(&rec, &label, scs, &validate::seeds_for(&rec, 1, seeds))
            .expect("validates");
        let rows = n.figures.iter().map(|r| (&r.name, r.verdict));
        for (name, v) in rows.chain(n.distributions.iter().map(|r| (&r.name, r.verdict))) {
            if v != Verdict::NotRecorded {
                new.rows += 1;
            }
            if v == Verdict::Warn {
                new.warned += 1;
                names.push(format!("new seed {s}: {name}"));
            }
        }
    }
    (old, new, names)
}
