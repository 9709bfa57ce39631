//! The draws' screen: each bootstrap draw of `fit::draws` simulated once
//! more and left out when its own window disagrees with the recording (an
//! ABC rejection step with the bootstrap as its proposal; docs/calibration.md).

use super::fit::{DIM, Problem, Theta, evaluate, mean_sd, stat_vec};
use super::moments::Moments;
use rayon::prelude::*;

/// What the screen of the draws found (`screen`).
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Screened {
    /// Draws whose own window the recording rules out, left out.
    pub rejected: usize,
    /// More than half were ruled out: the least inconsistent half was kept.
    pub kept_least_bad: bool,
}

/// The least p-value at which a draw's window still agrees with the
/// recording, per test: one window in ten thousand of a draw the recording
/// is consistent with falls below it. (At 0.001 the screen also trimmed
/// 4 of 64 draws of a well-identified 96 h fit, the bootstrap's own tails;
/// a draw with boot at the limit floor gives p near 1e-5 on a day of 40
/// recycles and 1e-9 over more.)
pub const SCREEN_P: f64 = 1e-4;

/// The draws the recording does not rule out. The draws are the fitted
/// point moved by the bootstrap's deviations mapped through the Jacobian,
/// a linearisation: where a statistic barely moves with its parameter
/// (boot on a day of 20-40 recycles), a draw can land where the model is
/// another fleet (boot a MB under the lowest limit: workers recycling at
/// birth, requests per worker of 13 where the recording's least is 571),
/// and validation and the what-ifs would run on it. Each draw is simulated
/// on one fresh seed (`seeds`, one per draw) and left out when its window
/// disagrees with the recording: a two-sample KS test of the margins,
/// requests per worker or overshoot below `SCREEN_P`, or its statistics
/// farther than the `1 - SCREEN_P` point of chi-square from the recording's (each
/// scaled by `sqrt(2)` times its spread over `point_sims`, the fitted
/// point's windows: a window against a window). A draw whose window has
/// too few recycles for statistics is left out too. When more than half
/// would go, the least inconsistent half is kept and the caller says so.
/// An ABC rejection step with the bootstrap as its proposal, and a loose
/// one: it trims the linearisation's impossible tails, it does not
/// reweigh the bulk (docs/calibration.md measures the coverage).
pub fn screen(
    p: &Problem,
    draws: Vec<(Theta, [f64; DIM])>,
    point_sims: &[Option<Moments>],
    seeds: &[u64],
) -> (Vec<(Theta, [f64; DIM])>, Screened) {
    let Some((_, sd, _)) = mean_sd(point_sims) else {
        return (draws, Screened::default());
    };
    let target = stat_vec(p.data);
    let k = p.active.pairs().len().max(1) as f64;
    let limit = chi2_quantile(k, 1.0 - SCREEN_P);
    // Per draw: how badly its window disagrees (0 when it agrees; larger
    // is worse), by the worst of its tests.
    let badness: Vec<f64> = draws
        .par_iter()
        .zip(seeds.par_iter())
        .map(|((theta, _), &seed)| {
            let m = evaluate(p, theta, &[seed]).pop().flatten();
            let Some(m) = m else {
                return f64::INFINITY;
            };
            let x = stat_vec(&m);
            let d2: f64 = p
                .active
                .pairs()
                .iter()
                .map(|&(_, j)| ((x[j] - target[j]) / (sd[j].max(1e-9) * 2f64.sqrt())).powi(2))
                .sum();
            let ks = [
                (&p.data.margins_mb, &m.margins_mb),
                (&p.data.requests, &m.requests),
                (&p.data.overshoot, &m.overshoot),
            ]
            .iter()
            .filter_map(|(a, b)| super::super::validate::ks_two_sample(a, b))
            .map(|(_, pv)| pv)
            .fold(1.0f64, f64::min);
            // Both on one scale: -log10 of how far below its threshold.
            let from_ks = (SCREEN_P / ks.max(1e-300)).log10().max(0.0);
            let from_d2 = if d2 > limit { d2 / limit } else { 0.0 };
            from_ks.max(from_d2)
        })
        .collect();
    let n = draws.len();
    let ok = badness.iter().filter(|b| **b == 0.0).count();
    if ok * 2 >= n {
        let kept: Vec<_> = draws
            .into_iter()
            .zip(&badness)
            .filter(|(_, b)| **b == 0.0)
            .map(|(d, _)| d)
            .collect();
        let rejected = n - kept.len();
        return (
            kept,
            Screened {
                rejected,
                kept_least_bad: false,
            },
        );
    }
    let mut order: Vec<usize> = (0..n).collect();
    order.sort_by(|&a, &b| badness[a].total_cmp(&badness[b]).then(a.cmp(&b)));
    let mut keep = vec![false; n];
    for &i in &order[..n.div_ceil(2)] {
        keep[i] = true;
    }
    let kept: Vec<_> = draws
        .into_iter()
        .zip(keep)
        .filter(|(_, k)| *k)
        .map(|(d, _)| d)
        .collect();
    let rejected = n - kept.len();
    (
        kept,
        Screened {
            rejected,
            kept_least_bad: true,
        },
    )
}

/// The chi-square quantile with `k` degrees of freedom at probability `p`
/// (Wilson-Hilferty: within 2% of the table from k = 3 up at p = 0.999).
pub fn chi2_quantile(k: f64, p: f64) -> f64 {
    let z = super::super::validate::normal_quantile(p);
    let a = 2.0 / (9.0 * k);
    k * (1.0 - a + z * a.sqrt()).powi(3)
}
