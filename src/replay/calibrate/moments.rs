//! The statistics a calibration matches: pure functions of one limit
//! regime's recycle rows, applied alike to the recording and to every
//! simulated window (indirect inference uses them as its auxiliary model,
//! so their biases cancel: see `fit.rs`).
//!
//! Each is an estimator a person would write by hand, and each is biased in
//! a way a simulation reproduces: the limits' uniform ends sit inside the
//! true ends, slow workers still alive at the window's end are missing,
//! held recycles overshoot by more than a tick, whole-MB logs round.

use super::super::analyse::regimes::RegimeView;
use std::collections::BTreeMap;

pub use super::lives::Lives;
pub use super::shape_match::{ShapeRef, shape_boot};

/// One usable recycle row.
#[derive(Clone, Debug, PartialEq)]
pub struct Row {
    pub t_s: f64,
    /// `(instance, worker)` when both were recorded.
    pub slot: Option<(String, String)>,
    /// The instance, when recorded (with or without a worker).
    pub instance: Option<String>,
    pub requests: f64,
    pub rss_mb: f64,
    pub limit_mb: f64,
}

/// A regime's rows and span, and what the emitter recorded.
#[derive(Clone, Debug, PartialEq)]
pub struct Sample {
    pub rows: Vec<Row>,
    pub start_s: f64,
    pub end_s: f64,
    /// Every row's `rss_mb` and `limit_mb` is a whole number.
    pub whole_mb: bool,
    /// How the rows bound workers' lives (the rate is read off lives).
    pub lives: Lives,
}

/// The rows of `v` with requests > 0, rss and limit.
pub fn sample(v: &RegimeView) -> Sample {
    let rows: Vec<Row> = v
        .recycles
        .iter()
        .filter_map(|e| {
            Some(Row {
                t_s: e.t_s,
                slot: e.instance.clone().zip(e.worker.clone()),
                instance: e.instance.clone(),
                requests: e.requests.filter(|n| *n > 0)? as f64,
                rss_mb: e.rss_mb.filter(|x| x.is_finite())?,
                limit_mb: e.limit_mb.filter(|x| x.is_finite())?,
            })
        })
        .collect();
    let whole_mb = !rows.is_empty()
        && rows
            .iter()
            .all(|r| r.rss_mb.fract() == 0.0 && r.limit_mb.fract() == 0.0);
    let mut per_slot: BTreeMap<&(String, String), usize> = BTreeMap::new();
    for r in &rows {
        if let Some(s) = &r.slot {
            *per_slot.entry(s).or_default() += 1;
        }
    }
    let repeated: usize = per_slot.values().filter(|n| **n > 1).sum();
    let lives = if repeated * 2 >= rows.len() && !rows.is_empty() {
        Lives::Slots
    } else if rows.iter().all(|r| r.instance.is_some()) {
        Lives::ChainedByInstance
    } else {
        Lives::ChainedInFleet
    };
    Sample {
        rows,
        start_s: v.start_s,
        end_s: v.end_s,
        whole_mb,
        lives,
    }
}

/// The rate profile's shape, fixed during a fit: the fleet's rate at
/// hour-of-day `h` is `rps * (1 + amplitude * cos(2 pi (h - peak_hour) / 24))`.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Shape {
    pub amplitude: f64,
    pub peak_hour: f64,
    /// The hour of day at the regime's start.
    pub start_hour: f64,
}

impl Shape {
    pub const CONSTANT: Shape = Shape {
        amplitude: 0.0,
        peak_hour: 0.0,
        start_hour: 0.0,
    };

    /// The rate at `t_s` seconds into the regime, per unit of mean rate.
    pub fn factor(&self, t_s: f64) -> f64 {
        let h = self.start_hour + t_s / 3600.0;
        1.0 + self.amplitude * (OMEGA * (h - self.peak_hour)).cos()
    }
}

const OMEGA: f64 = std::f64::consts::TAU / 24.0;

/// What the fit of the rate profile found: the mean rate and, from a
/// cosine regression, the diurnal amplitude with its standard error.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Traffic {
    /// Fleet requests per second, averaged over the profile.
    pub rps: f64,
    pub amplitude: f64,
    pub amplitude_se: f64,
    pub peak_hour: f64,
    /// How the lives were found the rate was read off (`Window`: none).
    pub from: Lives,
}

/// The fleet's rate from a sample: `workers * sum(requests) / sum(life)`
/// over complete lives (no censoring at either end), a slot's own or
/// chained (`chained_lives`, `per_instance` workers to an instance, at
/// the window's pace shaped by the hourly recycle counts' cosine where it
/// is clear of noise); else every recycled worker's requests over the
/// span. A chained rate further from the window's than the lives cut at
/// the window's ends can account for is not believed (`CHAIN_BAND`): the
/// window's rate stands. The cosine regression
/// `workers * requests = rps * L + c1 * int cos + c2 * int sin` over lives
/// (or over hourly recycle counts without them) gives the diurnal shape.
pub fn traffic(s: &Sample, workers: f64, per_instance: f64, start_hour: f64) -> Option<Traffic> {
    let span = (s.end_s - s.start_s).max(1.0);
    let n: f64 = s.rows.iter().map(|r| r.requests).sum();
    let window_rate = n / span;
    // Hourly recycle counts, scaled to requests: the shape, not the level.
    let hours = (span / 3600.0).floor().max(1.0) as usize;
    let mut counts = vec![0.0; hours];
    for r in &s.rows {
        let h = (((r.t_s - s.start_s) / 3600.0) as usize).min(hours - 1);
        counts[h] += 1.0;
    }
    let per = n / s.rows.len().max(1) as f64;
    let hourly: Vec<(f64, f64, f64)> = counts
        .iter()
        .enumerate()
        .map(|(h, c)| (h as f64 * 3600.0, (h + 1) as f64 * 3600.0, c * per))
        .collect();
    let shape = cosine(&hourly, start_hour, span);
    // The lives' clocks: every worker, or one an instance fed first.
    let clocks = match s.lives {
        Lives::HotByInstance | Lives::HotInFleet => (workers / per_instance.max(1.0)).max(1.0),
        _ => workers,
    };
    let pace = super::lives::Pace {
        per_worker: window_rate / clocks,
        amplitude: shape
            .and_then(|(a, se, _)| clear_amplitude(a, se))
            .unwrap_or(0.0),
        peak_hour: shape.map_or(0.0, |s| s.2),
        start_hour,
    };
    let ls = super::lives::complete(s, workers, per_instance, pace);
    let over_lives = super::lives::rate(&ls, clocks);
    // The band counts every worker's lives the window's ends cut, a hot
    // chain's siblings' too (their first lives began before the window).
    let from = if ls.len() >= 4 && believable(s, over_lives, window_rate, workers, span) {
        s.lives
    } else {
        Lives::Window
    };
    let uneven = s.lives == Lives::SlotsUneven;
    let (rate, obs): (f64, Vec<(f64, f64, f64)>) = if from != Lives::Window && !uneven {
        (
            over_lives,
            ls.iter().map(|l| (l.0, l.1, clocks * l.2)).collect(),
        )
    } else if uneven && from != Lives::Window {
        (
            super::lives::slots_since_first(s).unwrap_or(window_rate),
            hourly,
        )
    } else {
        (window_rate, hourly)
    };
    if !rate.is_finite() || rate <= 0.0 {
        return None;
    }
    let (amplitude, amplitude_se, peak_hour) =
        cosine(&obs, start_hour, span).unwrap_or((0.0, f64::INFINITY, 0.0));
    Some(Traffic {
        rps: rate,
        amplitude,
        amplitude_se,
        peak_hour,
        from,
    })
}

/// The diurnal amplitude a cosine fit shows, where it is clear of noise:
/// over 3 standard errors (noise passes that about once in a hundred
/// constant windows) and over 0.1, capped at 0.9. The one test both the
/// chaining's pace and the calibrated profile (`setup::rate_profile`) use.
pub fn clear_amplitude(amplitude: f64, se: f64) -> Option<f64> {
    (se.is_finite() && amplitude > 3.0 * se && amplitude > 0.1).then(|| amplitude.min(0.9))
}

/// How far a rate from complete lives may sit from the window's requests
/// over its span, in units of the lives the window's two ends cut (one
/// worker's 90th-percentile life at each end, per worker): what is missed
/// at the end and counted from before the start moves the window's rate
/// by at most about one such life a worker.
const CHAIN_BAND: f64 = 1.0;

/// Whether a rate from slot lives is taken as it is, or a chained one
/// lies within `CHAIN_BAND` of the window's rate.
fn believable(s: &Sample, rate: f64, window_rate: f64, workers: f64, span: f64) -> bool {
    if matches!(s.lives, Lives::Slots | Lives::SlotsUneven) {
        return true;
    }
    let mut q: Vec<f64> = s.rows.iter().map(|r| r.requests).collect();
    q.sort_by(f64::total_cmp);
    let q90 = q
        .get((q.len() * 9 / 10).min(q.len().saturating_sub(1)))
        .copied()
        .unwrap_or(0.0);
    (rate - window_rate).abs() <= CHAIN_BAND * workers * q90 / span
}

/// Weighted least squares of `y = a L + c1 C + c2 S` (`C`, `S` the
/// integrals of cos and sin of the hour over each interval), weights `1/L`.
/// Returns `(amplitude, its se, peak hour)`; `None` when the window is
/// shorter than 12 h or the system is singular.
fn cosine(obs: &[(f64, f64, f64)], start_hour: f64, span: f64) -> Option<(f64, f64, f64)> {
    if span < 12.0 * 3600.0 || obs.len() < 6 {
        return None;
    }
    let integral = |t0: f64, t1: f64, sin: bool| {
        let ph = |t: f64| OMEGA * (start_hour + t / 3600.0);
        let k = 3600.0 / OMEGA;
        if sin {
            -k * (ph(t1).cos() - ph(t0).cos())
        } else {
            k * (ph(t1).sin() - ph(t0).sin())
        }
    };
    let mut xtx = [[0.0f64; 3]; 3];
    let mut xty = [0.0f64; 3];
    let mut rows = Vec::with_capacity(obs.len());
    for &(t0, t1, y) in obs {
        let l = t1 - t0;
        let x = [l, integral(t0, t1, false), integral(t0, t1, true)];
        let w = 1.0 / l;
        for i in 0..3 {
            for j in 0..3 {
                xtx[i][j] += w * x[i] * x[j];
            }
            xty[i] += w * x[i] * y;
        }
        rows.push((x, y, w));
    }
    let inv = invert3(&xtx)?;
    let b: Vec<f64> = (0..3)
        .map(|i| (0..3).map(|j| inv[i][j] * xty[j]).sum())
        .collect();
    let rss: f64 = rows
        .iter()
        .map(|(x, y, w)| w * (y - (0..3).map(|i| b[i] * x[i]).sum::<f64>()).powi(2))
        .sum();
    let s2 = rss / (rows.len() as f64 - 3.0).max(1.0);
    if b[0] <= 0.0 {
        return None;
    }
    let amp = (b[1] * b[1] + b[2] * b[2]).sqrt() / b[0];
    // Delta method on amp = |c| / a.
    let c = (b[1] * b[1] + b[2] * b[2]).sqrt().max(1e-12);
    let g = [-amp / b[0], b[1] / (c * b[0]), b[2] / (c * b[0])];
    let var: f64 = (0..3)
        .map(|i| (0..3).map(|j| g[i] * inv[i][j] * g[j]).sum::<f64>())
        .sum::<f64>()
        * s2;
    let peak = (b[2].atan2(b[1]) / OMEGA).rem_euclid(24.0);
    Some((amp, var.max(0.0).sqrt(), peak))
}

fn invert3(m: &[[f64; 3]; 3]) -> Option<[[f64; 3]; 3]> {
    let det = m[0][0] * (m[1][1] * m[2][2] - m[1][2] * m[2][1])
        - m[0][1] * (m[1][0] * m[2][2] - m[1][2] * m[2][0])
        + m[0][2] * (m[1][0] * m[2][1] - m[1][1] * m[2][0]);
    if !det.is_finite() || det.abs() <= 1e-300 {
        return None;
    }
    let mut inv = [[0.0; 3]; 3];
    for (i, row) in inv.iter_mut().enumerate() {
        for (j, cell) in row.iter_mut().enumerate() {
            let (a, b) = ((j + 1) % 3, (j + 2) % 3);
            let (c, d) = ((i + 1) % 3, (i + 2) % 3);
            *cell = (m[a][c] * m[b][d] - m[a][d] * m[b][c]) / det;
        }
    }
    Some(inv)
}

/// The overshoot of one recycle in requests, given a boot RSS `b`: with a
/// constant velocity `v = (rss - b) / n`, the worker crossed its limit
/// `(rss - limit) / v` requests before the sample that recycled it.
fn overshoot_requests(r: &Row, b: f64) -> f64 {
    ((r.rss_mb - r.limit_mb).max(0.0) * r.requests / (r.rss_mb - b).max(1e-9)).max(0.0)
}

/// The quantiles of the overshoot in half-ticks the boot statistic may use
/// (the calibration's pilot picks the most precise for the recording): an
/// unheld recycle's sample comes a uniform fraction of a tick after the
/// crossing, so its overshoot is uniform on (0, 2) half-ticks; held ones
/// sit in the tail. The higher the quantile, the nearer the uniform's sharp
/// upper edge and the less it spreads per MB of boot (its relative spread
/// goes as `sqrt((1 - q) / q)`), so 0.8 wins where holds are rare: on
/// fleets of 20-40 recycles a day it spread 20-30% less than 0.7 (SimPy
/// recordings, docs/calibration.md). Where a third of the recycles were
/// held the upper quantiles sit among them, and a lower one keeps the
/// statistic on the unheld ones.
pub const OVERSHOOT_QUANTILES: [f64; 4] = [0.3, 0.5, 0.7, 0.8];

/// The index in `OVERSHOOT_QUANTILES` of the quantile whose bound in the
/// recording says the overshoot's tail is all holds or steps (0.7): past
/// it the calibration drops the overshoot statistic.
pub const OVERSHOOT_STUCK_AT: usize = 2;

/// The quantile used when nothing chose another.
pub const OVERSHOOT_QUANTILE: f64 = 0.7;

/// The quantiles `OVERSHOOT_QUANTILES` of an unheld recycle's overshoot in
/// half-ticks, `2 q`; the simulation calibrates away what holds and
/// discrete requests add. A structure that defers busy recycles has its
/// own (`deferral.rs`).
pub const UNHELD_TARGETS: [f64; 4] = [0.6, 1.0, 1.4, 1.6];

/// Each row's overshoot in half-ticks of a worker's requests at `rps`
/// (shaped by the profile), given a boot RSS `b`, sorted.
pub fn overshoots_at(s: &Sample, cx: &Context, rps: f64, b: f64) -> Vec<f64> {
    sorted(
        s.rows
            .iter()
            .map(|r| {
                let tick = match cx.every_requests {
                    Some(n) => n,
                    None => rps * cx.shape.factor(r.t_s - s.start_s) / cx.pace_workers * cx.tick_s,
                };
                overshoot_requests(r, b) / (tick / 2.0).max(1e-9)
            })
            .collect(),
    )
}

pub fn quantile(sorted: &[f64], p: f64) -> f64 {
    if sorted.is_empty() {
        return f64::NAN;
    }
    let x = p * (sorted.len() - 1) as f64;
    let (i, f) = (x.floor() as usize, x.fract());
    let j = (i + 1).min(sorted.len() - 1);
    sorted[i] * (1.0 - f) + sorted[j] * f
}

/// Bisection for the root of a function increasing in `b` on `[lo, hi]`;
/// a root outside the interval gives the bound and names it.
fn solve(lo: f64, hi: f64, f: impl Fn(f64) -> f64) -> (f64, Option<&'static str>) {
    if hi.partial_cmp(&lo) != Some(std::cmp::Ordering::Greater) {
        return (lo, Some("lower"));
    }
    if f(lo) >= 0.0 {
        return (lo, Some("lower"));
    }
    if f(hi) <= 0.0 {
        return (hi, Some("upper"));
    }
    let (mut a, mut b) = (lo, hi);
    for _ in 0..60 {
        let m = (a + b) / 2.0;
        if f(m) < 0.0 {
            a = m;
        } else {
            b = m;
        }
    }
    ((a + b) / 2.0, None)
}

/// The least-squares slope of `ln requests` on `ln(limit - b)`.
fn slope(rows: &[Row], b: f64) -> f64 {
    let pts: Vec<(f64, f64)> = rows
        .iter()
        .filter(|r| r.limit_mb - b > 0.0)
        .map(|r| ((r.limit_mb - b).ln(), r.requests.ln()))
        .collect();
    let n = pts.len() as f64;
    if n < 2.0 {
        return 0.0;
    }
    let mx = pts.iter().map(|p| p.0).sum::<f64>() / n;
    let my = pts.iter().map(|p| p.1).sum::<f64>() / n;
    let sxx: f64 = pts.iter().map(|p| (p.0 - mx).powi(2)).sum();
    let sxy: f64 = pts.iter().map(|p| (p.0 - mx) * (p.1 - my)).sum();
    if sxx <= 0.0 { 0.0 } else { sxy / sxx }
}

/// The auxiliary statistics of one window.
#[derive(Clone, Debug, PartialEq)]
pub struct Moments {
    /// The uniform's midpoint and half-width, from the limits' min and max
    /// widened by `range / (n - 1)`.
    pub base_mb: f64,
    pub jitter_mb: f64,
    /// The boot RSS (plus warm-up) that makes the median overshoot equal
    /// half a tick's requests.
    pub boot_mb: f64,
    /// The two boot statistics `boot_mb` weighs: the boot at which the
    /// overshoot in half-ticks has its `OVERSHOOT_QUANTILE` at 1.4 (so a
    /// few long holds do not move it), and the boot at which the slope of
    /// `ln requests` on `ln(limit - boot)` is 1 (a worker's requests to its
    /// limit are its runway over its velocity, and velocity does not depend
    /// on the jittered limit).
    pub boot_over: f64,
    /// `boot_over` at each of `OVERSHOOT_QUANTILES`, and whether it sits at
    /// a bound of its search there (the pilot's choice).
    pub boot_over_at: [(f64, bool); OVERSHOOT_QUANTILES.len()],
    pub boot_slope: f64,
    /// `boot_slope` sits at a bound of its search (the slope is below or
    /// above 1 for every boot): it then says nothing about boot or tick.
    pub slope_at_bound: bool,
    /// `boot_mb` hit a bound of its search.
    pub boot_at_bound: Option<&'static str>,
    /// Mean and cv of the lognormal fitted to `(rss - boot) / requests`.
    pub velocity_mean: f64,
    pub velocity_cv: f64,
    pub rps: f64,
    /// Recycles per hour.
    pub rate_per_h: f64,
    /// Sorted: requests per worker, margin over the limit, and the
    /// overshoot in requests over half a tick's requests (1 = the median
    /// of an unheld recycle).
    pub requests: Vec<f64>,
    pub margins_mb: Vec<f64>,
    pub overshoot: Vec<f64>,
}

/// What the statistics need besides the rows.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Context {
    pub tick_s: f64,
    /// The recycler samples every this many requests a worker: the
    /// overshoot is counted in halves of it, whatever the rate and tick.
    pub every_requests: Option<f64>,
    pub workers: f64,
    /// Workers to an instance (the chains of `Lives::ChainedByInstance`).
    pub per_instance: f64,
    /// The workers the rate is shared among at the pace of a worker near
    /// its limit (the overshoot's half-ticks): the fleet's, or one an
    /// instance where one worker takes nearly every request
    /// (`Clock::hot`: `fleet.accept` most_recent or first, read off the
    /// rows; read at every worker's pace, their recycles overshoot by
    /// about three times the half-ticks an unheld recycle does, past the
    /// statistic's every boot).
    pub pace_workers: f64,
    pub shape: Shape,
    /// The weight of the overshoot statistic in the boot estimate (the
    /// rest is the slope statistic's): chosen once per calibration from
    /// the two statistics' spread over simulated windows.
    pub overshoot_weight: f64,
    /// The quantile of the overshoot in half-ticks the overshoot statistic
    /// uses (one of `OVERSHOOT_QUANTILES`, chosen with the weight).
    pub overshoot_quantile: f64,
    /// The overshoot's quantiles in half-ticks at `OVERSHOOT_QUANTILES`
    /// that the boot statistic solves for: `UNHELD_TARGETS`, or a
    /// deferring structure's own.
    pub overshoot_targets: [f64; 4],
    /// A boot an RSS series observed: the velocities and the overshoot in
    /// requests are taken over it (the boot statistics are still computed:
    /// with boot known they measure the tick).
    pub known_boot_mb: Option<f64>,
    /// Under a busy deferral read off the overshoot (`deferral.rs`), the
    /// overshoot statistic is the boot where the rows' whole overshoot
    /// matches the deferral's simulated one best (`shape_boot`), not one
    /// quantile.
    pub overshoot_shape: Option<ShapeRef>,
}

fn sorted(mut v: Vec<f64>) -> Vec<f64> {
    v.sort_by(f64::total_cmp);
    v
}

/// Uniform `[lo, hi]` from a sample: min and max widened by `range / (n - 1)`.
pub fn uniform(limits: &[f64]) -> (f64, f64) {
    let lo = limits.iter().copied().fold(f64::INFINITY, f64::min);
    let hi = limits.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    let pad = (hi - lo) / (limits.len().max(2) - 1) as f64;
    ((lo + hi) / 2.0, (hi - lo) / 2.0 + pad)
}

/// The statistics of `s`, or `None` with fewer than `min_rows` rows.
pub fn moments(s: &Sample, cx: &Context, min_rows: usize) -> Option<Moments> {
    if s.rows.len() < min_rows.max(2) {
        return None;
    }
    let limits: Vec<f64> = s.rows.iter().map(|r| r.limit_mb).collect();
    let (base_mb, jitter_mb) = uniform(&limits);
    let tr = traffic(s, cx.workers, cx.per_instance, cx.shape.start_hour)?;
    let q_quantile = |b: f64, p: f64| quantile(&overshoots_at(s, cx, tr.rps, b), p);
    let target = |p: f64| {
        OVERSHOOT_QUANTILES
            .iter()
            .position(|&q| q == p)
            .map_or(2.0 * p, |i| cx.overshoot_targets[i])
    };
    let hi_over = s
        .rows
        .iter()
        .map(|r| r.rss_mb)
        .fold(f64::INFINITY, f64::min)
        - 0.5;
    let over_at = |p: f64| solve(0.0, hi_over, |b| q_quantile(b, p) - target(p));
    let (boot_over, over_bound) = match &cx.overshoot_shape {
        Some(r) => shape_boot(s, cx, tr.rps, r, hi_over),
        None => over_at(cx.overshoot_quantile),
    };
    let boot_over_at = OVERSHOOT_QUANTILES.map(|p| {
        let (b, bound) = over_at(p);
        (b, bound.is_some())
    });
    let hi_slope = limits.iter().copied().fold(f64::INFINITY, f64::min) - 0.5;
    let (boot_slope, slope_bound) = solve(0.0, hi_slope, |b| 1.0 - slope(&s.rows, b));
    let w = cx.overshoot_weight.clamp(0.0, 1.0);
    let boot_mb = w * boot_over + (1.0 - w) * boot_slope;
    let boot_at_bound = match (w, over_bound, slope_bound) {
        (w, Some(b), _) if w >= 0.5 => Some(b),
        (w, _, Some(b)) if w < 0.5 => Some(b),
        _ => None,
    };
    let over_boot = cx.known_boot_mb.unwrap_or(boot_mb);
    let ln_v: Vec<f64> = s
        .rows
        .iter()
        .map(|r| (r.rss_mb - over_boot) / r.requests)
        .filter(|v| *v > 0.0)
        .map(f64::ln)
        .collect();
    if ln_v.len() < 2 {
        return None;
    }
    let n = ln_v.len() as f64;
    let mu = ln_v.iter().sum::<f64>() / n;
    let sigma = (ln_v.iter().map(|l| (l - mu).powi(2)).sum::<f64>() / n).sqrt();
    let overshoot = overshoots_at(s, cx, tr.rps, over_boot);
    let hours = ((s.end_s - s.start_s) / 3600.0).max(1e-9);
    Some(Moments {
        base_mb,
        jitter_mb,
        boot_mb,
        boot_over,
        boot_over_at,
        boot_slope,
        slope_at_bound: slope_bound.is_some(),
        boot_at_bound,
        velocity_mean: (mu + sigma * sigma / 2.0).exp(),
        velocity_cv: ((sigma * sigma).exp() - 1.0).sqrt(),
        rps: tr.rps,
        rate_per_h: s.rows.len() as f64 / hours,
        requests: sorted(s.rows.iter().map(|r| r.requests).collect()),
        margins_mb: sorted(s.rows.iter().map(|r| r.rss_mb - r.limit_mb).collect()),
        overshoot,
    })
}

#[cfg(test)]
mod tests {
    use super::super::testkit::row;
    use super::*;

    #[test]
    fn boot_is_where_the_overshoot_quantile_is_its_uniform_value() {
        // Workers at 1 rps each (6 workers, 6 rps), tick 10 s: half a tick
        // is 5 requests; rows overshoot 0..10 requests, whose 0.7 quantile
        // (7 requests) is 1.4 half-ticks, as for a uniform on (0, 2).
        let boot = 350.0;
        let rows: Vec<Row> = (0..11)
            .map(|i| {
                let v = 0.1 + 0.02 * i as f64;
                let limit = 480.0 + 5.0 * i as f64;
                let n = (limit - boot) / v;
                row(100.0 * i as f64, i % 3, n, boot, v, limit, i as f64)
            })
            .collect();
        let s = Sample {
            rows,
            start_s: 0.0,
            end_s: 36000.0,
            whole_mb: false,
            lives: Lives::Window,
        };
        let cx = Context {
            tick_s: 10.0,
            every_requests: None,
            workers: 6.0,
            per_instance: 3.0,
            shape: Shape::CONSTANT,
            overshoot_weight: 1.0,
            overshoot_quantile: OVERSHOOT_QUANTILE,
            overshoot_targets: UNHELD_TARGETS,
            known_boot_mb: None,
            overshoot_shape: None,
            pace_workers: 6.0,
        };
        // Force the rate the test assumes: requests over the span give it.
        let total: f64 = s.rows.iter().map(|r| r.requests).sum();
        let s = Sample {
            end_s: total / 6.0,
            ..s
        };
        let m = moments(&s, &cx, 2).expect("moments");
        assert!((m.boot_mb - boot).abs() < 1.0, "boot {}", m.boot_mb);
        assert!(m.boot_at_bound.is_none());
        // Moved boot, moved quantile: the statistic is the boot.
        assert!(
            (quantile(&m.overshoot, 0.7) - 1.4).abs() < 1e-6,
            "{:?}",
            m.overshoot
        );
    }

    #[test]
    fn lives_give_the_rate_without_censoring() {
        // One slot recycled every 100 s after 50 requests: 0.5 rps per worker.
        let rows: Vec<Row> = (1..=20)
            .map(|k| Row {
                t_s: 100.0 * k as f64,
                slot: Some(("i".into(), "w".into())),
                instance: Some("i".into()),
                requests: 50.0,
                rss_mb: 500.0,
                limit_mb: 490.0,
            })
            .collect();
        let s = Sample {
            rows,
            start_s: 0.0,
            end_s: 5000.0,
            whole_mb: true,
            lives: Lives::Slots,
        };
        let t = traffic(&s, 6.0, 3.0, 0.0).unwrap();
        assert_eq!(t.from, Lives::Slots);
        assert!((t.rps - 3.0).abs() < 1e-9, "{}", t.rps);
    }

    #[test]
    fn cosine_regression_finds_a_diurnal_peak() {
        // Hourly counts of a 2:1 diurnal peaking at 15:00, over two days.
        let obs: Vec<(f64, f64, f64)> = (0..48)
            .map(|h| {
                let mid = h as f64 + 0.5;
                let y = 3600.0 * (1.0 + (1.0 / 3.0) * (OMEGA * (mid - 15.0)).cos());
                (h as f64 * 3600.0, (h + 1) as f64 * 3600.0, y)
            })
            .collect();
        let (amp, _, peak) = cosine(&obs, 0.0, 48.0 * 3600.0).unwrap();
        assert!((amp - 1.0 / 3.0).abs() < 0.01, "{amp}");
        assert!((peak - 15.0).abs() < 0.1, "{peak}");
    }

    #[test]
    fn uniform_ends_are_widened() {
        let (mid, half) = uniform(&[460.0, 540.0, 500.0]);
        assert_eq!(mid, 500.0);
        assert_eq!(half, 40.0 + 40.0);
    }
}
