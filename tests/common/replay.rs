//! Helpers shared by the replay test crates: hand-made recordings in the
//! seeds' schema and one-call analysis.

use super::scenario;
use fleetsim::replay::analyse::Regime;
use fleetsim::replay::{self, Analysis, Knobs, Options, Recording, import};

const HEADER: &str = "ts,event,instance,worker,rss_mb,limit_mb,base_limit_mb,hard_limit_mb,\
                      requests,pressure,headroom_mb,lease,branch";

/// One `worker_recycled` row of the seeds' schema.
#[derive(Clone, Copy)]
pub struct R {
    pub t: f64,
    pub inst: &'static str,
    pub rss: f64,
    pub limit: f64,
    pub base: f64,
    pub hard: f64,
    pub requests: u64,
    pub pressure: bool,
    pub headroom: f64,
    pub lease: &'static str,
}

/// A non-pressure, lease-acquired recycle in the seeds' deployed regime.
pub fn r(t: f64, inst: &'static str, rss: f64) -> R {
    R {
        t,
        inst,
        rss,
        limit: 500.0,
        base: 500.0,
        hard: 650.0,
        requests: 800,
        pressure: false,
        headroom: 800.0,
        lease: "acquired",
    }
}

pub fn csv(rows: &[R], extra: &[&str]) -> String {
    let mut out = format!("{HEADER}\n");
    for x in rows {
        out += &format!(
            "{},worker_recycled,{},w0,{},{},{},{},{},{},{},{},\n",
            x.t,
            x.inst,
            x.rss,
            x.limit,
            x.base,
            x.hard,
            x.requests,
            x.pressure,
            x.headroom,
            x.lease
        );
    }
    for line in extra {
        out += line;
        out.push('\n');
    }
    out
}

pub fn seeds_knobs() -> Knobs {
    Knobs::from_scenario(&scenario(&[]))
}

/// Imports `files` as `(name, text)`, joins and analyses them.
pub fn analyse(files: &[(&str, &str)], knobs: Option<Knobs>) -> Analysis {
    let parts = files
        .iter()
        .map(|(name, text)| import::parse(name, text).unwrap_or_else(|e| panic!("{e}")))
        .collect();
    let rec = Recording::assemble(parts).unwrap_or_else(|e| panic!("{e}"));
    let opts = Options {
        scenario: knobs,
        ..Options::default()
    };
    replay::analyse(&rec, &opts)
}

pub fn one_regime(a: &Analysis) -> &Regime {
    assert_eq!(a.regimes.len(), 1, "regimes: {:?}", labels(a));
    &a.regimes[0]
}

pub fn labels(a: &Analysis) -> Vec<String> {
    a.regimes.iter().map(|r| r.label.clone()).collect()
}

pub fn count(a: &Analysis, label: &str) -> usize {
    a.events
        .iter()
        .find(|c| c.label == label)
        .map_or(0, |c| c.count)
}

pub fn warned(a: &Analysis, needle: &str) -> bool {
    a.warnings.iter().any(|w| w.contains(needle))
}

// ---------------------------------------------------------------- importers
