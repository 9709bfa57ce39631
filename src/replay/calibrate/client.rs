//! The client's stale-connection window (`client.stale_window_s`), fitted
//! to the recorded resets per recycle (`retry_ok` + `fetch_failed`: every
//! reset is retried, and either succeeds or fails) when the recording has
//! canary events: how long a connection an exiting worker closed can still be
//! picked is the client's and the proxy's, not the recycler's, and no
//! default transfers (the seeds' undici saw 1.5 resets per recycle; a
//! uvicorn fleet that closes idle keep-alive connections itself sees a
//! few in a hundred).
//!
//! The window does not move the recycle rows (a reset request is retried
//! and served), so it is fitted after them, at the fitted point, by
//! proportional steps: resets per recycle grow about linearly with the
//! window while it is short against the gaps between recycles.

use super::calibration::Fit;
use super::fit::{Problem, Theta, num_overrides};
use crate::metrics::EventKind;
use crate::replay::Recording;
use crate::replay::analyse::regimes::RegimeView;
use crate::scenario::Override;
use rayon::prelude::*;

/// The scenario key fitted here.
pub const KEY: &str = "client.stale_window_s";

/// Proportional steps taken.
const STEPS: usize = 3;

/// The recorded target: resets (`retry_ok` + `fetch_failed`) over the
/// regime's recycles.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Target {
    pub resets: usize,
    pub recycles: usize,
}

impl Target {
    fn per_recycle(self) -> f64 {
        self.resets as f64 / self.recycles.max(1) as f64
    }
}

fn resets(rec: &Recording) -> usize {
    rec.count(EventKind::RetryOk) + rec.count(EventKind::FetchFailed)
}

/// Resets per recycle over simulated windows at `theta` with the window
/// `w` (summed counts over the windows).
fn simulated(p: &Problem, theta: &Theta, seeds: &[u64], w: f64) -> Option<f64> {
    let mut sets = p.sets.clone();
    sets.extend(num_overrides(&[(KEY.to_string(), w)]));
    let with = Problem { sets, ..p.clone() };
    let sc = with.build(theta)?;
    let counts: Vec<(usize, usize)> = seeds
        .par_iter()
        .filter_map(|&s| {
            let rec = crate::replay::validate::simulated_recording(
                &sc,
                s,
                crate::replay::validate::Written::Fine,
            )
            .ok()?;
            Some((resets(&rec), rec.recycles().count()))
        })
        .collect();
    let (r, n) = counts.iter().fold((0, 0), |(a, b), (r, n)| (a + r, b + n));
    (n > 0).then(|| r as f64 / n as f64)
}

/// How far (in Poisson standard deviations) the recorded reset count may
/// sit from the base window's prediction before the window is fitted: the
/// base's stays when the recording does not contradict it.
pub const KEEP_Z: f64 = 2.58;

/// What became of the window: fitted (the override and its report), or the
/// base's kept, with the note that says why.
pub enum Outcome {
    Fitted(Override, Fit),
    Kept(String),
}

/// The fitted window and its report, from the base's `start` window, or the
/// base's window when the recorded resets are within `KEEP_Z` Poisson
/// standard deviations of what it predicts. `None` when no simulated window
/// had a recycle.
pub fn fit(
    p: &Problem,
    theta: &Theta,
    seeds: &[u64],
    target: Target,
    start: f64,
) -> Option<Outcome> {
    let goal = target.per_recycle();
    let mut w = start.max(0.0);
    let at_base = simulated(p, theta, seeds, w)?;
    let expected = at_base * target.recycles as f64;
    let z = (target.resets as f64 - expected) / expected.max(1.0).sqrt();
    if z.abs() < KEEP_Z {
        return Some(Outcome::Kept(format!(
            "client.stale_window_s: the base's {start} s kept: it predicts {expected:.1} resets \
             (retry_ok + fetch_failed) for the {} recycles, the recording has {} ({z:+.1} Poisson sd)",
            target.recycles, target.resets
        )));
    }
    let mut sim = None;
    if target.resets == 0 {
        w = 0.0;
        sim = simulated(p, theta, seeds, w);
    } else {
        for _ in 0..STEPS {
            let s = simulated(p, theta, seeds, w)?;
            sim = Some(s);
            let factor = if s > 0.0 { goal / s } else { 4.0 };
            w = (w.max(0.01) * factor.clamp(0.1, 10.0)).min(600.0);
        }
        sim = simulated(p, theta, seeds, w).or(sim);
    }
    // A Poisson count of recorded resets: relative se 1/sqrt(count).
    let rel = 1.0 / (target.resets.max(1) as f64).sqrt();
    let fit = Fit {
        key: KEY.into(),
        value: w,
        se: Some(w * rel),
        lo: Some((w * (1.0 - 1.96 * rel)).max(0.0)),
        hi: Some(w * (1.0 + 1.96 * rel)),
        identified: target.resets > 0,
        at_bound: (target.resets == 0).then(|| "lower".to_string()),
        how: format!(
            "matched the recorded resets (retry_ok + fetch_failed) per recycle ({} over {} \
             recycles, {:.3}) by simulation at the fitted point ({:.3} simulated)",
            target.resets,
            target.recycles,
            goal,
            sim.unwrap_or(f64::NAN)
        ),
    };
    let o = num_overrides(&[(KEY.to_string(), w)]).pop()?;
    Some(Outcome::Fitted(o, fit))
}

/// The window for regime `v` of `rec`: `None` when the recording has no
/// canary events (nothing to fit to) or no simulated window recycled.
pub fn for_regime(
    rec: &Recording,
    v: &RegimeView,
    p: &Problem,
    theta: &Theta,
    seeds: &[u64],
    start: f64,
) -> Option<Outcome> {
    if !rec.events.iter().any(|e| e.kind.is_canary()) {
        return None;
    }
    let resets = rec
        .events
        .iter()
        .filter(|e| e.t_s >= v.start_s && e.t_s <= v.end_s)
        .filter(|e| e.is(EventKind::RetryOk) || e.is(EventKind::FetchFailed))
        .count();
    let target = Target {
        resets,
        recycles: v.recycles.len(),
    };
    fit(p, theta, seeds, target, start)
}
