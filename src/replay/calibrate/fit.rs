//! Indirect inference: fleetsim itself is the model. The statistics of
//! `moments.rs` are computed on the recording and on simulated windows of
//! the same length; the parameters move until the simulated statistics'
//! mean equals the recorded ones (`theta += s_recorded - mean s_sim(theta)`,
//! the binding function's Jacobian being close to the identity because
//! each statistic is a hand-made estimator of its own parameter). Whatever
//! biases the hand-made estimators carry (censoring at the window's end,
//! holds, whole-MB rounding, warm start) the simulated windows carry too,
//! and they cancel.
//!
//! Uncertainty is a parametric bootstrap at the fitted point: fresh
//! simulated windows, each mapped through the same statistics, give draws
//! `theta* + (s_d - mean s) * sqrt(1 + 1/S)` (the recording's own sampling
//! noise, plus the noise of the S-window mean the fit matched).

use super::super::analyse::regimes;
use super::super::analyse::window;
use super::active::{Active, Jacobian};
use super::moments::{self, Context, Moments, Sample};
use crate::engine::rng::mix64;
use crate::scenario::{Override, Scenario};
use rayon::prelude::*;
use std::sync::atomic::{AtomicUsize, Ordering};

/// The fitted parameters, in the coordinates the fit moves them in.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Theta {
    pub base_mb: f64,
    pub jitter_mb: f64,
    pub boot_mb: f64,
    pub ln_mean: f64,
    pub ln_cv: f64,
    pub ln_rps: f64,
    /// The sampling interval, fitted when the recording has no holds to
    /// infer it from (`Problem::active` then moves it).
    pub ln_tick: f64,
}

/// Parameters and statistics; which pairs a fit uses is `Problem::active`.
pub const DIM: usize = 7;

impl Theta {
    pub fn to_vec(self) -> [f64; DIM] {
        [
            self.base_mb,
            self.jitter_mb,
            self.boot_mb,
            self.ln_mean,
            self.ln_cv,
            self.ln_rps,
            self.ln_tick,
        ]
    }

    pub fn from_vec(v: [f64; DIM]) -> Theta {
        Theta {
            base_mb: v[0],
            jitter_mb: v[1],
            boot_mb: v[2],
            ln_mean: v[3],
            ln_cv: v[4],
            ln_rps: v[5],
            ln_tick: v[6],
        }
    }

    /// Kept inside the values a scenario accepts and the data allows.
    pub fn clamp(self, floor_boot: f64) -> Theta {
        Theta {
            base_mb: self.base_mb.max(1.0),
            jitter_mb: self.jitter_mb.clamp(0.0, self.base_mb.max(1.0) * 0.5),
            // Below the lowest jittered limit: a scenario refuses workers
            // that would recycle at birth.
            boot_mb: self.boot_mb.clamp(
                floor_boot,
                (self.base_mb - self.jitter_mb - 1.0).max(floor_boot),
            ),
            ln_mean: self.ln_mean.clamp((1e-5f64).ln(), (50.0f64).ln()),
            ln_cv: self.ln_cv.clamp((0.01f64).ln(), (4.0f64).ln()),
            ln_rps: self.ln_rps.clamp((1e-4f64).ln(), (1e4f64).ln()),
            ln_tick: self.ln_tick.clamp(0.0, (600.0f64).ln()),
        }
    }

    /// The scenario keys the parameters set.
    pub fn overrides(self) -> Vec<(String, f64)> {
        vec![
            ("policy.base_limit_mb".into(), self.base_mb),
            ("policy.jitter_mb".into(), self.jitter_mb),
            ("fleet.boot_rss_mb".into(), self.boot_mb),
            ("fleet.leak.mean_mb_per_request".into(), self.ln_mean.exp()),
            ("fleet.leak.cv".into(), self.ln_cv.exp()),
            ("workload.rps".into(), self.ln_rps.exp()),
            ("policy.tick_s".into(), self.ln_tick.exp()),
        ]
    }
}

/// The statistics in the fit's coordinates: one per parameter.
pub fn stat_vec(m: &Moments) -> [f64; DIM] {
    [
        m.base_mb,
        m.jitter_mb,
        m.boot_mb,
        m.velocity_mean.max(1e-9).ln(),
        m.velocity_cv.max(1e-6).ln(),
        m.rps.max(1e-9).ln(),
        m.boot_slope,
    ]
}

/// How a simulated window is made to look like the recording before its
/// statistics are taken.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Look {
    pub whole_mb: bool,
    /// A whole-MB recording's rss_mb read as truncated over whole-MB
    /// limits (`written::read`), not rounded.
    pub floor_mb: bool,
    /// How the recording's rows bound lives (`moments::Lives`).
    pub lives: moments::Lives,
    /// The recording's regime begins at its first recycle row (absolute
    /// timestamps: the window is where events are) and ends at its last
    /// (rows alone: nothing says how long after the last recycle the
    /// recording ran). A simulated window is cut the same way, so that a
    /// rate of the rows' requests over the window reads both alike: ended
    /// at its last recycle, a window of 40 recycles a day reads about one
    /// gap's worth (2-4%) higher than over its whole span, and a fleet fed
    /// in a fixed order, whose rate is read so, came out 4% high on
    /// average (up to 11%) on sixteen clean-room recordings of one fleet.
    pub from_first_recycle: bool,
    pub to_last_recycle: bool,
}

impl Look {
    /// How `s` (the recording's sample) is read.
    pub fn of(s: &Sample) -> Look {
        let (first, last) = (s.rows.first(), s.rows.last());
        Look {
            whole_mb: s.whole_mb,
            floor_mb: false,
            lives: s.lives,
            from_first_recycle: first.is_some_and(|r| r.t_s <= s.start_s),
            to_last_recycle: last.is_some_and(|r| r.t_s >= s.end_s),
        }
    }

    /// `s` (a simulated window) cut as the recording's is.
    fn cut(self, s: &mut Sample) {
        if let (true, Some(r)) = (self.from_first_recycle, s.rows.first()) {
            s.start_s = r.t_s;
        }
        if let (true, Some(r)) = (self.to_last_recycle, s.rows.last()) {
            s.end_s = r.t_s;
        }
    }
}

/// Simulates `sc` on `seed`, reads the events back through the recording's
/// import and regime split, and takes the sample of the busiest regime.
pub fn simulate(sc: &Scenario, seed: u64, look: Look) -> Option<Sample> {
    let written = super::super::validate::Written::whole_mb(look.whole_mb, look.floor_mb);
    let rec = super::super::validate::simulated_recording(sc, seed, written).ok()?;
    let w = window(&rec);
    let views = regimes::split(&rec, (0.0, w.end_s.max(sc.duration.as_secs_f64())));
    let v = views.iter().max_by_key(|v| v.recycles.len())?;
    let mut s = moments::sample(v);
    s.lives = s.lives.coarser(look.lives);
    look.cut(&mut s);
    Some(s)
}

/// Everything one fit needs besides the parameters.
#[derive(Clone)]
pub struct Problem<'a> {
    pub data: &'a Moments,
    pub context: Context,
    pub look: Look,
    pub min_rows: usize,
    /// The structure's fixed overrides; a point's values are laid over them.
    pub sets: Vec<Override>,
    /// Loads the base scenario with overrides (`None` when it refuses them).
    pub load: &'a (dyn Fn(&[Override]) -> Option<Scenario> + Sync),
    pub floor_boot: f64,
    /// The parameters the fit moves and the statistic answering for each
    /// (the rest keep their start: a known tick, a boot the RSS series
    /// observed).
    pub active: Active,
    pub progress: &'a (dyn Fn(usize) + Sync),
    pub done: &'a AtomicUsize,
}

impl Problem<'_> {
    /// The scenario at a parameter point.
    pub fn build(&self, t: &Theta) -> Option<Scenario> {
        let mut all = self.sets.clone();
        all.extend(num_overrides(&t.overrides()));
        (self.load)(&all)
    }
}

/// The simulated windows at one point: their statistics (`None` where a
/// window had too few recycles).
pub fn evaluate(p: &Problem, theta: &Theta, seeds: &[u64]) -> Vec<Option<Moments>> {
    let Some(sc) = p.build(theta) else {
        return vec![None; seeds.len()];
    };
    seeds
        .par_iter()
        .map(|&s| {
            let x = simulate(&sc, s, p.look);
            let m = x.and_then(|x| moments::moments(&x, &p.context, p.min_rows));
            (p.progress)(p.done.fetch_add(1, Ordering::Relaxed) + 1);
            m
        })
        .collect()
}

/// Mean and sd of each statistic over the windows that gave one.
pub fn mean_sd(ms: &[Option<Moments>]) -> Option<([f64; DIM], [f64; DIM], usize)> {
    let xs: Vec<[f64; DIM]> = ms.iter().flatten().map(stat_vec).collect();
    if xs.len() < 2 {
        return None;
    }
    let n = xs.len() as f64;
    let mut mean = [0.0; DIM];
    let mut sd = [0.0; DIM];
    for j in 0..DIM {
        mean[j] = xs.iter().map(|x| x[j]).sum::<f64>() / n;
        sd[j] = (xs.iter().map(|x| (x[j] - mean[j]).powi(2)).sum::<f64>() / (n - 1.0)).sqrt();
    }
    Some((mean, sd, xs.len()))
}

/// One fitted structure: its point, the windows simulated there and the
/// standardised distance of their mean from the recording.
pub struct Fitted {
    pub theta: Theta,
    pub sims: Vec<Option<Moments>>,
    pub distance: f64,
}

/// Seeds for simulated windows: `n` derived from `key` (the recording's
/// hash with the user's seed and a purpose).
pub fn seeds(key: u64, purpose: u64, n: usize) -> Vec<u64> {
    (0..n as u64)
        .map(|i| mix64(mix64(key ^ purpose.wrapping_mul(0x9E37_79B9_7F4A_7C15)).wrapping_add(i)))
        .collect()
}

/// The fixed-point iteration from `start`, `iterations` steps on the same
/// seeds (common random numbers); returns the best point seen.
pub fn fit(p: &Problem, start: Theta, seeds: &[u64], iterations: usize) -> Option<Fitted> {
    let target = stat_vec(p.data);
    let mut theta = start.clamp(p.floor_boot);
    let mut best: Option<Fitted> = None;
    for _ in 0..iterations.max(1) {
        let sims = evaluate(p, &theta, seeds);
        let Some((mean, sd, _)) = mean_sd(&sims) else {
            break;
        };
        let distance = distance(&target, &mean, &sd, &p.active);
        if best.as_ref().is_none_or(|b| distance < b.distance) {
            best = Some(Fitted {
                theta,
                sims,
                distance,
            });
        }
        // Each parameter by its own statistic (the tick, paired with
        // another, waits for the Newton steps).
        let mut v = theta.to_vec();
        for &(j, s) in p.active.pairs() {
            if j == s {
                v[j] += target[j] - mean[j];
            }
        }
        theta = Theta::from_vec(v).clamp(p.floor_boot);
    }
    best
}

/// The least spread each statistic is standardised by: simulated limits
/// are whole MB (`sim/lifecycle.rs` floors them, as the seeds' `int()`
/// does), so the limits' statistics move in steps of half a MB, and where
/// every window drew the same extremes their spread is 0. Standardised by
/// 1e-9 there, a 0.15 MB miss of a fractional recorded base weighed 2e16,
/// and the fit's best point was whichever iteration happened to draw
/// different extremes (seen on SimPy recordings with float limits).
const SD_FLOOR: [f64; DIM] = [0.5, 0.5, 0.5, 1e-3, 1e-3, 1e-3, 0.5];

/// The standardised distance over the active statistics.
fn distance(target: &[f64; DIM], mean: &[f64; DIM], sd: &[f64; DIM], active: &Active) -> f64 {
    active
        .pairs()
        .iter()
        .map(|&(_, j)| ((target[j] - mean[j]) / sd[j].max(SD_FLOOR[j])).powi(2))
        .sum()
}

/// The binding function's Jacobian at `theta`: how the mean statistics
/// move per unit of each parameter, by one-sided differences on the same
/// seeds (common random numbers keep the differences smooth). `mean` is
/// the statistics' mean at `theta` on those seeds.
pub fn jacobian(p: &Problem, theta: &Theta, seeds: &[u64], mean: &[f64; DIM]) -> Option<Jacobian> {
    // Steps: MB for the limits and boot, logs for the rest.
    let h = [2.0, 1.5, 12.0, 0.1, 0.1, 0.05, 0.15];
    let mut jac = Jacobian::identity(p.active);
    for (b, &(k, _)) in p.active.pairs().iter().enumerate() {
        let mut v = theta.to_vec();
        let mut step = h[k];
        if k == 2 && theta.boot_mb + step > theta.base_mb - theta.jitter_mb - 1.0 {
            step = -step;
        }
        v[k] += step;
        let moved = Theta::from_vec(v).clamp(p.floor_boot);
        let actual = moved.to_vec()[k] - theta.to_vec()[k];
        if actual.abs() < 1e-9 {
            return None;
        }
        let (m, _, _) = mean_sd(&evaluate(p, &moved, seeds))?;
        for (a, &(_, i)) in p.active.pairs().iter().enumerate() {
            jac.m[a][b] = (m[i] - mean[i]) / actual;
        }
    }
    Some(jac)
}

/// The largest move one Newton step makes per parameter (MB, MB, MB, and
/// logs): a noisy Jacobian must not throw the fit across the space.
const MAX_STEP: [f64; DIM] = [10.0, 10.0, 60.0, 0.5, 0.5, 0.2, 0.3];

/// Newton steps from `fitted` with the Jacobian taken there: `theta +=
/// J^-1 (s_rec - mean s_sim)`, kept while the distance falls. Returns the
/// best point and the Jacobian (the draws map through it too).
pub fn refine(p: &Problem, fitted: Fitted, seeds: &[u64], steps: usize) -> (Fitted, Jacobian) {
    let target = stat_vec(p.data);
    let Some((mean, _, _)) = mean_sd(&fitted.sims) else {
        return (fitted, Jacobian::identity(p.active));
    };
    let Some(jac) = jacobian(p, &fitted.theta, seeds, &mean) else {
        return (fitted, Jacobian::identity(p.active));
    };
    let mut best = fitted;
    let mut mean = mean;
    for _ in 0..steps {
        let r: [f64; DIM] = std::array::from_fn(|i| {
            if p.active.uses(i) {
                target[i] - mean[i]
            } else {
                0.0
            }
        });
        let Some(dx) = jac.solve(&r) else {
            break;
        };
        // One full step, kept only if the distance falls: a backtracking
        // search was tried and chased the simulation noise of a weakly
        // identified boot (a 16-window mean), moving fits that validated.
        let mut v = best.theta.to_vec();
        for k in 0..DIM {
            v[k] += dx[k].clamp(-MAX_STEP[k], MAX_STEP[k]);
        }
        let theta = Theta::from_vec(v).clamp(p.floor_boot);
        let sims = evaluate(p, &theta, seeds);
        let Some((m, sd, _)) = mean_sd(&sims) else {
            break;
        };
        let distance = distance(&target, &m, &sd, &p.active);
        if distance >= best.distance {
            break;
        }
        best = Fitted {
            theta,
            sims,
            distance,
        };
        mean = m;
    }
    (best, jac)
}

/// Draws of the parameters at `fitted`: each fresh window's statistics
/// relative to their mean, mapped back through the Jacobian (`J^-1 (s_d -
/// mean s)`: a statistic that barely moves with its parameter gives that
/// parameter a wide spread) and scaled by `sqrt(1 + 1/s)`. Returns each
/// draw and its statistics' deviation.
///
/// A draw the linear map throws past a bound (a window whose statistics
/// point where the Jacobian barely moves) is not clamped coordinate by
/// coordinate, which would keep its other coordinates' full move (boot at
/// its floor with the leak still 100 times the fit's): it is shrunk toward
/// the fit along its own direction, to the last point inside the bounds
/// (`shrink_to_bounds`), so every draw is a point the linearisation
/// describes. Also returns how many were shrunk.
pub fn draws(
    fitted: &Theta,
    sims: &[Option<Moments>],
    s: usize,
    floor_boot: f64,
    jac: &Jacobian,
) -> (Vec<(Theta, [f64; DIM])>, usize) {
    let Some((mean, _, _)) = mean_sd(sims) else {
        return (Vec::new(), 0);
    };
    let k = (1.0 + 1.0 / s.max(1) as f64).sqrt();
    sims.iter()
        .flatten()
        .map(|m| {
            let x = stat_vec(m);
            let dev: [f64; DIM] = std::array::from_fn(|j| {
                if jac.active.uses(j) {
                    (x[j] - mean[j]) * k
                } else {
                    0.0
                }
            });
            let dx = jac.solve(&dev).unwrap_or_else(|| {
                // Singular: each parameter by its own statistic where it has one.
                std::array::from_fn(|j| if jac.active.moves(j) { dev[j] } else { 0.0 })
            });
            let (theta, shrunk) = shrink_to_bounds(fitted, &dx, floor_boot);
            (theta, dev, shrunk)
        })
        .fold((Vec::new(), 0), |(mut all, n), (theta, dev, shrunk)| {
            all.push((theta, dev));
            (all, n + shrunk as usize)
        })
}

/// `centre + a dx` for the largest `a` in [0, 1] that stays inside the
/// bounds (`Theta::clamp` leaves it unchanged), and whether `a < 1`.
/// `centre` itself must be inside.
pub fn shrink_to_bounds(centre: &Theta, dx: &[f64; DIM], floor_boot: f64) -> (Theta, bool) {
    let c = centre.to_vec();
    let at = |a: f64| Theta::from_vec(std::array::from_fn(|j| c[j] + a * dx[j]));
    let inside = |t: Theta| {
        let k = t.clamp(floor_boot).to_vec();
        t.to_vec()
            .iter()
            .zip(k)
            .all(|(x, y)| (x - y).abs() <= 1e-9 * (1.0 + x.abs()))
    };
    if inside(at(1.0)) {
        return (at(1.0), false);
    }
    let (mut lo, mut hi) = (0.0, 1.0);
    for _ in 0..50 {
        let mid = 0.5 * (lo + hi);
        if inside(at(mid)) {
            lo = mid;
        } else {
            hi = mid;
        }
    }
    (at(lo).clamp(floor_boot), true)
}

/// The two-sample KS statistic scaled by `sqrt(n m / (n + m))`: how far
/// two samples' distributions are, comparable across sample sizes.
pub fn ks_lambda(a: &[f64], b: &[f64]) -> f64 {
    match super::super::validate::ks_two_sample(a, b) {
        Some((d, _)) => {
            let (n, m) = (a.len() as f64, b.len() as f64);
            d * (n * m / (n + m)).sqrt()
        }
        None => f64::INFINITY,
    }
}

/// The structure score: KS distances of the recording's margins, requests
/// per worker and overshoot in half-ticks from the simulated windows pooled.
pub fn score(data: &Moments, sims: &[Option<Moments>]) -> [f64; 3] {
    let pool = |f: fn(&Moments) -> &Vec<f64>| -> Vec<f64> {
        sims.iter()
            .flatten()
            .flat_map(|m| f(m).iter().copied())
            .collect()
    };
    [
        ks_lambda(&data.margins_mb, &pool(|m| &m.margins_mb)),
        ks_lambda(&data.requests, &pool(|m| &m.requests)),
        ks_lambda(&data.overshoot, &pool(|m| &m.overshoot)),
    ]
}

/// The weight `w` of `a` in `w a + (1 - w) b` that makes the sum the most
/// precise estimate of the parameter, and that estimate's variance per
/// unit of the parameter squared: the least `var / sensitivity^2`, with
/// `sens` each statistic's change per unit of the parameter (a statistic
/// stuck at a bound has no sensitivity and gets no weight). `(0.5, inf)`
/// with too few pairs or no sensitivity at all. The weight of `a` is at
/// least `w_min` (1: `a` alone, when `b` sits at a bound of its search in
/// the recording, where it says nothing however it spreads over simulated
/// windows).
pub fn best_weight_cost(pairs: &[(f64, f64)], sens: (f64, f64), w_min: f64) -> (f64, f64) {
    let n = pairs.len() as f64;
    if pairs.len() < 4 || !(sens.0.is_finite() && sens.1.is_finite()) {
        return (0.5, f64::INFINITY);
    }
    let ma = pairs.iter().map(|p| p.0).sum::<f64>() / n;
    let mb = pairs.iter().map(|p| p.1).sum::<f64>() / n;
    let va = pairs.iter().map(|p| (p.0 - ma).powi(2)).sum::<f64>() / n;
    let vb = pairs.iter().map(|p| (p.1 - mb).powi(2)).sum::<f64>() / n;
    let c = pairs.iter().map(|p| (p.0 - ma) * (p.1 - mb)).sum::<f64>() / n;
    let cost = |w: f64| {
        let s = w * sens.0 + (1.0 - w) * sens.1;
        let v = w * w * va + (1.0 - w) * (1.0 - w) * vb + 2.0 * w * (1.0 - w) * c;
        if s.abs() < 1e-3 {
            f64::INFINITY
        } else {
            v.max(1e-12) / (s * s)
        }
    };
    let best = (0..=40)
        .map(|k| k as f64 / 40.0)
        .filter(|w| *w >= w_min.min(1.0))
        .min_by(|a, b| cost(*a).total_cmp(&cost(*b)))
        .expect("non-empty");
    if cost(best).is_finite() {
        (best, cost(best))
    } else {
        (0.5, f64::INFINITY)
    }
}

/// `key=value` overrides as the loader takes them.
pub fn num_overrides(kv: &[(String, f64)]) -> Vec<Override> {
    kv.iter()
        .map(|(k, v)| Override {
            key: k.clone(),
            value: toml::Value::Float(*v),
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::super::screen::chi2_quantile;
    use super::*;

    #[test]
    fn windows_that_agree_on_whole_mb_limits_do_not_weigh_a_fraction_of_a_mb() {
        // Every window drew the same whole-MB extremes (sd 0), the recording
        // has a fractional base: a 0.15 MB miss is a small distance, and a
        // 10 MB miss on boot still outweighs it.
        let target = [516.15, 48.6, 360.0, -0.7, -0.69, 1.02, 360.0];
        let mean = [516.0, 48.6, 360.0, -0.7, -0.69, 1.02, 360.0];
        let sd = [0.0, 0.0, 10.0, 0.05, 0.03, 0.002, 20.0];
        let base_miss = distance(&target, &mean, &sd, &Active::KNOWN_TICK);
        assert!(base_miss < 0.1, "{base_miss}");
        let mut boot_off = mean;
        boot_off[2] -= 10.0;
        let boot_miss = distance(&target, &boot_off, &sd, &Active::KNOWN_TICK);
        assert!(
            boot_miss > 10.0 * base_miss,
            "{boot_miss} against {base_miss}"
        );
    }

    #[test]
    fn chi_square_quantiles_match_the_table() {
        for (k, p, table) in [
            (6.0, 0.999, 22.458),
            (3.0, 0.999, 16.266),
            (10.0, 0.95, 18.307),
        ] {
            let q = chi2_quantile(k, p);
            assert!(
                (q / table - 1.0).abs() < 0.02,
                "k {k} p {p}: {q} vs {table}"
            );
        }
    }

    #[test]
    fn the_overshoot_alone_when_the_slope_sits_at_its_bound() {
        // Pairs where b spreads least: free, it takes most of the weight;
        // with w_min 1 it gets none.
        let pairs: Vec<(f64, f64)> = (0..16)
            .map(|i| (10.0 * ((i * 7) % 5) as f64, ((i * 3) % 4) as f64))
            .collect();
        let (w, _) = best_weight_cost(&pairs, (1.0, 1.0), 0.0);
        assert!(w < 0.5, "{w}");
        let (w, cost) = best_weight_cost(&pairs, (1.0, 1.0), 1.0);
        assert_eq!(w, 1.0);
        assert!(cost.is_finite());
    }

    /// A recording of rows alone ends at its last recycle: a simulated
    /// window is read to its own last recycle, not to the simulated span's
    /// end; one that starts at its first row (absolute timestamps) is read
    /// from its own first.
    #[test]
    fn a_simulated_window_is_cut_where_the_recordings_rows_bound_it() {
        let row = |t_s: f64| moments::Row {
            t_s,
            slot: None,
            instance: None,
            requests: 100.0,
            rss_mb: 500.0,
            limit_mb: 490.0,
        };
        let sample = |start_s: f64, end_s: f64| Sample {
            rows: vec![row(500.0), row(2_000.0), row(7_000.0)],
            start_s,
            end_s,
            whole_mb: false,
            lives: moments::Lives::Slots,
        };
        let rows_alone = Look::of(&sample(0.0, 7_000.0));
        assert!(rows_alone.to_last_recycle && !rows_alone.from_first_recycle);
        let absolute = Look::of(&sample(500.0, 7_000.0));
        assert!(absolute.to_last_recycle && absolute.from_first_recycle);
        let with_an_end = Look::of(&sample(0.0, 9_000.0));
        assert!(!with_an_end.to_last_recycle && !with_an_end.from_first_recycle);

        let mut simulated = sample(0.0, 10_000.0);
        rows_alone.cut(&mut simulated);
        assert_eq!((simulated.start_s, simulated.end_s), (0.0, 7_000.0));
        let mut simulated = sample(0.0, 10_000.0);
        absolute.cut(&mut simulated);
        assert_eq!((simulated.start_s, simulated.end_s), (500.0, 7_000.0));
        let mut simulated = sample(0.0, 10_000.0);
        with_an_end.cut(&mut simulated);
        assert_eq!((simulated.start_s, simulated.end_s), (0.0, 10_000.0));

        // A simulated window read the recording's way.
        use super::super::testkit::{LOOK, loader, plain};
        let (sets, truth) = plain();
        let sc = loader(sets)(&num_overrides(&truth.overrides())).unwrap();
        let to_last = Look {
            to_last_recycle: true,
            ..LOOK
        };
        let s = simulate(&sc, 3, to_last).unwrap();
        assert_eq!(s.end_s, s.rows.last().unwrap().t_s);
        let whole = simulate(&sc, 3, LOOK).unwrap();
        assert!(whole.end_s > s.end_s, "{} vs {}", whole.end_s, s.end_s);
    }
}
