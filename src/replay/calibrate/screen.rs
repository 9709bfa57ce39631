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
    /// Draws whose own window agreed with the recording.
    pub passed: usize,
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
                passed: ok,
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
            passed: ok,
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

#[cfg(test)]
mod tests {
    use super::super::Budget;
    use super::super::active::Active;
    use super::super::fit::{DIM, Problem, Theta, evaluate, jacobian, mean_sd, seeds};
    use super::super::stages::{Shared, screened_draws};
    use super::super::testkit::{CONTEXT, LOOK, loader, plain, recording};
    use super::*;
    use std::sync::atomic::{AtomicUsize, Ordering};

    #[test]
    fn a_draw_the_recording_rules_out_is_left_out() {
        let (sets, truth) = plain();
        let load_sc = loader(sets);
        let data = recording(&load_sc, &truth);
        let done = AtomicUsize::new(0);
        let p = Problem {
            data: &data,
            context: CONTEXT,
            look: LOOK,
            min_rows: 10,
            sets: Vec::new(),
            load: &load_sc,
            floor_boot: 136.0,
            active: Active::KNOWN_TICK,
            progress: &|_| (),
            done: &done,
        };
        let point_sims = evaluate(&p, &truth, &seeds(1, 1, 16));
        // The truth and two draws a linearisation can make where boot is
        // weakly identified: boot 1 MB under the lowest limit (workers
        // recycle at birth) and a leak ten times the truth's.
        let floor = Theta {
            boot_mb: truth.base_mb - truth.jitter_mb - 1.0,
            ..truth
        };
        let fast = Theta {
            ln_mean: (1.5f64).ln(),
            ..truth
        };
        let mut draws = vec![(truth, [0.0; DIM]); 6];
        draws.insert(2, (floor, [0.0; DIM]));
        draws.insert(5, (fast, [0.0; DIM]));
        let (kept, screened) = screen(&p, draws, &point_sims, &seeds(1, 3, 8));
        assert_eq!(screened.rejected, 2, "{screened:?}");
        assert!(!screened.kept_least_bad);
        assert_eq!(kept.len(), 6);
        assert!(kept.iter().all(|d| d.0 == truth));
        // More than half ruled out: the least inconsistent half is kept.
        let draws = vec![(truth, [0.0; DIM]), (floor, [0.0; DIM]), (fast, [0.0; DIM])];
        let (kept, screened) = screen(&p, draws, &point_sims, &seeds(1, 3, 3));
        assert!(screened.kept_least_bad, "{screened:?}");
        assert_eq!(kept.len(), 2);
        assert_eq!(kept[0].0, truth);
    }

    #[test]
    fn draws_through_a_poor_jacobian_are_made_again_through_a_fresh_one() {
        let (sets, truth) = plain();
        let load_sc = loader(sets);
        let data = recording(&load_sc, &truth);
        let shared = Shared {
            look: LOOK,
            load: &load_sc,
            floor_boot: 136.0,
            active: Active::KNOWN_TICK,
            progress: &|_| (),
            done: AtomicUsize::new(0),
            key: 11,
            budget: Budget {
                seeds: 8,
                iterations: 1,
                draws: 16,
                refine: 0,
                fits: 1,
            },
            fit_seeds: seeds(11, 1, 8),
        };
        let p = shared.problem(&data, CONTEXT, Vec::new());
        let (mean, _, _) = mean_sd(&evaluate(&p, &truth, &shared.fit_seeds)).unwrap();
        let good = jacobian(&p, &truth, &shared.fit_seeds, &mean).unwrap();
        let mut notes = Vec::new();
        let (good_kept, screened) = screened_draws(&p, &truth, &good, &shared, &mut notes);
        assert!(!screened.kept_least_bad, "{screened:?} {notes:?}");
        assert!(good_kept.len() * 4 >= 16 * 3, "{screened:?} {notes:?}");
        assert!(
            !notes.iter().any(|n| n.contains("taken again")),
            "{notes:?}"
        );
        // The same Jacobian with boot's column 50 times too flat, as a
        // statistic that happened to barely move with boot makes it: every
        // window's deviation throws boot fifty times as far.
        let mut poor = good;
        let b = Active::KNOWN_TICK
            .pairs()
            .iter()
            .position(|&(k, _)| k == 2)
            .unwrap();
        for row in poor.m.iter_mut() {
            row[b] *= 0.02;
        }
        let before = shared.done.load(Ordering::Relaxed);
        let mut notes = Vec::new();
        let (kept, screened) = screened_draws(&p, &truth, &poor, &shared, &mut notes);
        let note = notes
            .iter()
            .find(|n| n.contains("so the Jacobian was taken again on fresh seeds"))
            .unwrap_or_else(|| panic!("{notes:?}"));
        assert!(note.contains("passed the screen"), "{note}");
        assert!(screened.passed * 4 >= 16 * 3, "{screened:?} {notes:?}");
        assert_eq!(kept.len(), 16 - screened.rejected);
        // What the path simulates is what `planned_simulations` counts for
        // it: the draws' windows, the Jacobian again (its point's windows and
        // one set a parameter it moves) and both screens.
        let spent = shared.done.load(Ordering::Relaxed) - before;
        assert!(spent <= 3 * 16 + (1 + DIM) * 8, "{spent}");
        // Its boot draws spread as the good Jacobian's do, not fifty times.
        let spread = |d: &[(Theta, [f64; DIM])]| {
            let b: Vec<f64> = d.iter().map(|x| x.0.boot_mb).collect();
            let m = b.iter().sum::<f64>() / b.len() as f64;
            (b.iter().map(|x| (x - m).powi(2)).sum::<f64>() / b.len() as f64).sqrt()
        };
        assert!(
            spread(&kept) < 3.0 * spread(&good_kept),
            "{} vs {}",
            spread(&kept),
            spread(&good_kept)
        );
    }
}
