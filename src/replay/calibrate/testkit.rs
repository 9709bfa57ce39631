//! Fixtures the calibration's unit tests share: a plain fleet on the
//! embedded default, its truth, and the recording it makes.

use super::fit::{Look, Theta, num_overrides, simulate};
use super::moments::{self, Context, Moments, Row};
use crate::scenario::{DEFAULT_SCENARIO, Override, Scenario, load, parse_override};

/// A plain fleet (boot 380, limits 520 +- 30, 0.15 MB/request, 2 rps, a
/// day) on the embedded default: the overrides that make it plain, and its
/// truth.
pub fn plain() -> (Vec<Override>, Theta) {
    let sets: Vec<Override> = [
        "run.duration_h=24",
        "fleet.leak.distribution=\"lognormal\"",
        "fleet.leak.warmup_mb=0.0",
        "fleet.leak.step_probability=0.0",
        "workload.profile=\"constant\"",
        "policy.busy_deferral=false",
    ]
    .iter()
    .map(|s| parse_override(s).unwrap())
    .collect();
    let truth = Theta {
        base_mb: 520.0,
        jitter_mb: 30.0,
        boot_mb: 380.0,
        ln_mean: 0.15f64.ln(),
        ln_cv: 0.6f64.ln(),
        ln_rps: 2.0f64.ln(),
        ln_tick: 45.0f64.ln(),
    };
    (sets, truth)
}

/// The embedded default with `sets`, then a point's overrides.
pub fn loader(sets: Vec<Override>) -> impl Fn(&[Override]) -> Option<Scenario> + Sync {
    move |extra: &[Override]| {
        let mut all = sets.clone();
        all.extend_from_slice(extra);
        load(
            DEFAULT_SCENARIO,
            "<test>",
            &all,
            &mut |_| Err(String::new()),
        )
        .ok()
        .map(|x| x.1)
    }
}

pub const LOOK: Look = Look {
    whole_mb: false,
    floor_mb: false,
    lives: moments::Lives::Slots,
    from_first_recycle: false,
    to_last_recycle: false,
};

pub const CONTEXT: Context = Context {
    tick_s: 45.0,
    every_requests: None,
    workers: 6.0,
    per_instance: 3.0,
    pace_workers: 6.0,
    shape: moments::Shape::CONSTANT,
    overshoot_weight: 1.0,
    overshoot_quantile: moments::OVERSHOOT_QUANTILE,
    overshoot_targets: moments::UNHELD_TARGETS,
    known_boot_mb: None,
    overshoot_shape: None,
};

/// The recording `truth` makes on seed 7, as statistics.
pub fn recording(load: &dyn Fn(&[Override]) -> Option<Scenario>, truth: &Theta) -> Moments {
    let sc = load(&num_overrides(&truth.overrides())).unwrap();
    moments::moments(&simulate(&sc, 7, LOOK).unwrap(), &CONTEXT, 10).unwrap()
}

/// A recycle row of slot `slot` of `inst-0` at `t`: a life at `v` MB a
/// request from `boot` that crossed `limit` after `n` requests and was
/// recycled `over` requests later.
pub fn row(t: f64, slot: usize, n: f64, boot: f64, v: f64, limit: f64, over: f64) -> Row {
    Row {
        t_s: t,
        slot: Some(("inst-0".into(), format!("w{slot}"))),
        instance: Some("inst-0".into()),
        requests: n + over,
        rss_mb: boot + v * (n + over),
        limit_mb: limit,
    }
}
