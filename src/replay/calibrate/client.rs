//! The client's stale-connection window (`client.stale_window_s`), fitted
//! to the recorded `retry_ok` per recycle when the recording has canary
//! events: how long a connection an exiting worker closed can still be
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
use crate::scenario::Override;
use rayon::prelude::*;

/// The scenario key fitted here.
pub const KEY: &str = "client.stale_window_s";

/// Proportional steps taken.
const STEPS: usize = 3;

/// The recorded target: canary counts over the regime's recycles.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Target {
    pub retry_ok: usize,
    pub recycles: usize,
}

impl Target {
    fn per_recycle(self) -> f64 {
        self.retry_ok as f64 / self.recycles.max(1) as f64
    }
}

/// `retry_ok` per recycle over simulated windows at `theta` with the window
/// `w` (summed counts over the windows).
fn simulated(p: &Problem, theta: &Theta, seeds: &[u64], w: f64) -> Option<f64> {
    let mut sets = p.sets.clone();
    sets.extend(num_overrides(&[(KEY.to_string(), w)]));
    let with = Problem { sets, ..p.clone() };
    let sc = with.build(theta)?;
    let counts: Vec<(usize, usize)> = seeds
        .par_iter()
        .filter_map(|&s| {
            let rec = crate::replay::validate::simulated_recording(&sc, s, false).ok()?;
            Some((rec.count(EventKind::RetryOk), rec.recycles().count()))
        })
        .collect();
    let (r, n) = counts.iter().fold((0, 0), |(a, b), (r, n)| (a + r, b + n));
    (n > 0).then(|| r as f64 / n as f64)
}

/// The fitted window and its report, from the base's `start` window.
pub fn fit(
    p: &Problem,
    theta: &Theta,
    seeds: &[u64],
    target: Target,
    start: f64,
) -> Option<(Override, Fit)> {
    let goal = target.per_recycle();
    let mut w = start.max(0.0);
    let mut sim = None;
    if target.retry_ok == 0 {
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
    let rel = 1.0 / (target.retry_ok.max(1) as f64).sqrt();
    let fit = Fit {
        key: KEY.into(),
        value: w,
        se: Some(w * rel),
        lo: Some((w * (1.0 - 1.96 * rel)).max(0.0)),
        hi: Some(w * (1.0 + 1.96 * rel)),
        identified: target.retry_ok > 0,
        at_bound: (target.retry_ok == 0).then(|| "lower".to_string()),
        how: format!(
            "matched the recorded retry_ok per recycle ({} over {} recycles, {:.3}) by simulation \
             at the fitted point ({:.3} simulated)",
            target.retry_ok,
            target.recycles,
            goal,
            sim.unwrap_or(f64::NAN)
        ),
    };
    let o = num_overrides(&[(KEY.to_string(), w)]).pop()?;
    Some((o, fit))
}
