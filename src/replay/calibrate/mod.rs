//! Calibration: fit a scenario to one limit regime of a recording, so that
//! the simulator can be asked what the recorded fleet would do under
//! another policy.
//!
//! The method (docs/calibration.md, "Replay calibration"):
//!
//! 1. **Statistics** (`moments.rs`): from the regime's recycle rows
//!    (`rss_mb`, `limit_mb`, `requests`, and the slot when recorded), the
//!    limits' uniform, the fleet's rate (from complete slot lives when the
//!    rows name slots), the boot RSS at which the median overshoot in
//!    requests is half a tick's requests, and the lognormal of
//!    `(rss - boot) / requests`.
//! 2. **Structure**: the rate profile (constant, or diurnal when a cosine
//!    regression finds an amplitude over 3 standard errors) and the warm or
//!    cold start are read off the data; the memory model (plain, or the
//!    base's warm-up, steps and surges) and busy deferral (off, or the
//!    base's) are candidates, each fitted and scored (`fit::score`: KS
//!    distances of margins, requests per worker and overshoot), the lowest
//!    score chosen.
//! 3. **Indirect inference** (`fit.rs`): the parameters move until the mean
//!    of the statistics over simulated windows equals the recording's.
//! 4. **Draws**: a parametric bootstrap at the fitted point; `se` and the
//!    95% interval come from the draws, and validation and what-ifs run
//!    over them.
//!
//! Boot RSS and warm-up trade off in recycle rows (both only shift where a
//! worker starts its linear growth): their sum is what is identified, and
//! is reported as such.
//!
//! With an RSS series (`observed.rs`), boot and the leak velocity are
//! measured per life and held fixed; the boot statistic then answers for
//! the tick (unless holds gave it), and only the plain memory model is a
//! candidate (the series' growth per request already folds in warm-up and
//! steps).

mod active;
mod calibration;
mod client;
mod fit;
mod fits;
mod lognormal;
pub mod moments;
pub mod observed;
mod output;
mod screen;

use calibration::round;
pub use calibration::{Budget, Calibration, Candidate, Fit, SCHEMA, Structure};
pub use lognormal::fit_lognormal;
pub use output::{calibrated_toml, render};

use super::analyse::{infer, regimes};
use super::recording::Recording;
use crate::engine::rng::mix64;
use crate::scenario::{Override, RawScenario};
use active::Active;
use fit::{Look, Problem, Theta};
use moments::{Context, Moments, Shape};
use observed::Observed;
use std::sync::atomic::AtomicUsize;

#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum CalibrateError {
    #[error("no limit regime with recycles recording rss_mb, limit_mb and requests")]
    NoRecycles,
    #[error("regime {0}: only {1} usable recycles; calibration needs at least {MIN_ROWS}")]
    TooFew(String, usize),
    #[error("the lognormal fit failed: {0}")]
    Fit(String),
    #[error("the base scenario cannot take the fitted values: {0}")]
    Base(String),
    #[error("no simulated window at the starting point gave {MIN_ROWS} recycles: {0}")]
    NoSimulation(String),
}

/// Fewer usable recycles than this and nothing is fitted.
pub const MIN_ROWS: usize = 8;

/// The regime to calibrate: the longest span, the latest on a tie.
fn pick<'a>(views: &'a [regimes::RegimeView<'a>]) -> Option<&'a regimes::RegimeView<'a>> {
    views
        .iter()
        .filter(|v| !v.recycles.is_empty())
        .rev()
        .max_by(|a, b| (a.end_s - a.start_s).total_cmp(&(b.end_s - b.start_s)))
}

/// FNV-1a over the rows' times, RSS, limits and requests: the recording's
/// part of every simulated seed, so two recordings get different windows.
pub fn recording_hash(s: &moments::Sample) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for r in &s.rows {
        for x in [r.t_s, r.rss_mb, r.limit_mb, r.requests] {
            for b in x.to_bits().to_le_bytes() {
                h ^= b as u64;
                h = h.wrapping_mul(0x0100_0000_01b3);
            }
        }
    }
    h
}

/// A candidate memory model.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Memory {
    /// A constant per-worker velocity: no warm-up, steps or surges.
    Plain,
    /// The base's warm-up, steps and surges, with the velocity fitted.
    Base,
}

impl Memory {
    fn label(self) -> &'static str {
        match self {
            Memory::Plain => "plain",
            Memory::Base => "base (warm-up, steps, surges as the base scenario has them)",
        }
    }
}

/// Fits `base` to the longest limit regime of `rec`. `progress` is called
/// with the number of simulated windows done so far, out of
/// `planned_simulations(budget, 4)`.
pub fn calibrate(
    rec: &Recording,
    base: &RawScenario,
    seed: u64,
    budget: Budget,
    fit_tick: bool,
    progress: &(dyn Fn(usize) + Sync),
) -> Result<Calibration, CalibrateError> {
    let w = super::analyse::window(rec);
    let views = regimes::split(rec, (w.start_s, w.end_s));
    let observed = pick(&views).and_then(|v| Observed::from_recording(rec, v.start_s, v.end_s));
    calibrate_observed(
        rec,
        base,
        seed,
        budget,
        fit_tick,
        observed.as_ref(),
        progress,
    )
}

/// `calibrate`, with what an RSS series observed of the regime's lives.
pub fn calibrate_observed(
    rec: &Recording,
    base: &RawScenario,
    seed: u64,
    budget: Budget,
    fit_tick: bool,
    observed: Option<&Observed>,
    progress: &(dyn Fn(usize) + Sync),
) -> Result<Calibration, CalibrateError> {
    let w = super::analyse::window(rec);
    let views = regimes::split(rec, (w.start_s, w.end_s));
    let v = pick(&views).ok_or(CalibrateError::NoRecycles)?;
    let sample = moments::sample(v);
    if sample.rows.len() < MIN_ROWS {
        return Err(CalibrateError::TooFew(v.key.label(), sample.rows.len()));
    }
    let base_text = toml::to_string(base).map_err(|e| CalibrateError::Base(e.to_string()))?;
    let load = |sets: &[Override]| {
        crate::scenario::load(&base_text, "<calibration base>", sets, &mut |p| {
            Err(format!("{p}: not read during calibration"))
        })
    };
    let (_, base_sc) = load(&[]).map_err(|e| CalibrateError::Base(e.to_string()))?;
    let load_sc = |sets: &[Override]| load(sets).ok().map(|x| x.1);
    let mut notes = Vec::new();
    let mut fixed: Vec<(String, toml::Value)> = Vec::new();
    let fnum = |x: f64| toml::Value::Float(x);

    // The regime's clock: the base's start hour, moved by where the regime starts.
    let start_hour = (base.workload.start_hour + (v.start_s - w.start_s) / 3600.0).rem_euclid(24.0);
    let span_s = (v.end_s - v.start_s).max(1.0);
    let workers = base_sc.fleet.workers() as f64;
    let tick = infer::infer(v, None).tick_s;
    let tick_s = match tick.inferred {
        Some(t) => t,
        None => {
            notes.push(format!(
                "tick: {}; {:.0} s from the base (the boot estimate rests on it: the overshoot \
                 statistic is in ticks; give the deployed tick in --scenario, or --fit-tick to fit \
                 it jointly with boot, which costs boot precision)",
                tick.how, base.policy.tick_s
            ));
            base.policy.tick_s
        }
    };
    // The window to the millisecond: a lab's 300 s must not become 360.
    fixed.push((
        "run.duration_h".into(),
        fnum((span_s * 1e3).round() / 3.6e6),
    ));

    // The hard ceiling: recorded, else the base's offset over the fitted base.
    let limits: Vec<f64> = sample.rows.iter().map(|r| r.limit_mb).collect();
    let (base_mid, _) = moments::uniform(&limits);
    let hard = match v.key.hard_limit_mb {
        Some(h) => h,
        None => {
            let h = base_mid + (base.policy.hard_limit_mb - base.policy.base_limit_mb);
            notes.push(format!(
                "hard ceiling not recorded: the base's offset ({:+.0} MB) over the fitted base, \
                 {h:.0} MB",
                base.policy.hard_limit_mb - base.policy.base_limit_mb
            ));
            h
        }
    };
    fixed.push(("policy.hard_limit_mb".into(), fnum(round(hard, "_mb"))));

    // The rate profile, from the rows.
    let tr = moments::traffic(&sample, workers, start_hour)
        .ok_or_else(|| CalibrateError::TooFew(v.key.label(), 0))?;
    let diurnal =
        tr.amplitude_se.is_finite() && tr.amplitude > 3.0 * tr.amplitude_se && tr.amplitude > 0.1;
    let shape = if diurnal {
        let a = tr.amplitude.min(0.9);
        fixed.push((
            "workload.profile".into(),
            toml::Value::String("diurnal".into()),
        ));
        fixed.push((
            "workload.peak_to_trough".into(),
            fnum(round((1.0 + a) / (1.0 - a), "_h")),
        ));
        fixed.push(("workload.peak_hour".into(), fnum(round(tr.peak_hour, "_h"))));
        fixed.push((
            "workload.start_hour".into(),
            fnum((start_hour * 100.0).round() / 100.0),
        ));
        Shape {
            amplitude: a,
            peak_hour: tr.peak_hour,
            start_hour,
        }
    } else {
        fixed.push((
            "workload.profile".into(),
            toml::Value::String("constant".into()),
        ));
        Shape::CONSTANT
    };
    let warm = !moments::cold_start(&sample, tr.rps, workers);
    fixed.push(("fleet.warm_start".into(), toml::Value::Boolean(warm)));
    fixed.push((
        "fleet.leak.distribution".into(),
        toml::Value::String("lognormal".into()),
    ));

    let mut context = Context {
        tick_s,
        workers,
        shape,
        overshoot_weight: 0.5,
        overshoot_quantile: moments::OVERSHOOT_QUANTILE,
        known_boot_mb: None,
    };
    let mut data = moments::moments(&sample, &context, MIN_ROWS)
        .ok_or_else(|| CalibrateError::TooFew(v.key.label(), sample.rows.len()))?;
    // An overshoot quantile at its bound in the recording says nothing
    // about boot; with the highest there (holds or steps dominate the
    // overshoot's tail, and a lower quantile sits in what is left: the
    // embedded default's own window put boot at 75 MB there), the slope
    // alone.
    let eligible: Vec<usize> = (0..moments::OVERSHOOT_QUANTILES.len())
        .filter(|&i| !data.boot_over_at[i].1)
        .collect();
    let over_stuck = data.boot_over_at[moments::OVERSHOOT_STUCK_AT].1;
    if over_stuck {
        context.overshoot_weight = 0.0;
        data = moments::moments(&sample, &context, MIN_ROWS)
            .ok_or_else(|| CalibrateError::TooFew(v.key.label(), sample.rows.len()))?;
    }
    // An observed boot: the overshoot over it measures the tick.
    let obs_boot = observed.and_then(Observed::boot);
    let obs_vel = obs_boot.and(observed.and_then(Observed::velocity));
    let tick_free = obs_boot.is_some() && tick.inferred.is_none() && !over_stuck;
    let mut tick_start = tick_s;
    if let Some(b) = obs_boot {
        context.known_boot_mb = Some(b.mb);
        context.overshoot_weight = if over_stuck { 0.0 } else { 1.0 };
        // The lowest quantile off its bound: the one holds touch least.
        if let Some(&i) = eligible.first() {
            context.overshoot_quantile = moments::OVERSHOOT_QUANTILES[i];
        }
        data = moments::moments(&sample, &context, MIN_ROWS)
            .ok_or_else(|| CalibrateError::TooFew(v.key.label(), sample.rows.len()))?;
        let src = observed.map_or("", |o| o.source.as_str());
        notes.push(format!(
            "boot RSS observed in the RSS series ({src}): {:.1} MB, the median over {} lives; {}",
            b.mb,
            b.lives,
            match obs_vel {
                Some(v) => format!(
                    "leak velocity observed too: lognormal mean {:.4} MB/request, cv {:.2}, over {} lives",
                    v.mean, v.cv, v.lives
                ),
                None => "the leak velocity is fitted over that boot (the series counts no requests)".into(),
            }
        ));
        if tick_free {
            // Unheld samples come a uniform fraction of a tick after the
            // crossing: the overshoot quantile over its target scales the tick.
            let q = moments::quantile(&data.overshoot, context.overshoot_quantile);
            let ratio = q / (2.0 * context.overshoot_quantile);
            if ratio.is_finite() && ratio > 0.0 {
                tick_start = tick_s * ratio.clamp(0.25, 4.0);
            }
        }
    }
    // The tick moves with boot only where the two boot statistics can
    // separate them: no holds to infer it from, and an overshoot statistic
    // off its bound.
    if obs_boot.is_none()
        && fit_tick
        && tick.inferred.is_none()
        && (over_stuck || data.slope_at_bound)
    {
        notes.push(
            "--fit-tick: the tick is not identifiable here (a boot statistic sits at its bound in \
             the recording, so only one of the two moves): kept the base's"
                .into(),
        );
    }
    let active = if obs_boot.is_some() {
        let mut pairs = vec![(0, 0), (1, 1), (5, 5)];
        if obs_vel.is_none() {
            pairs.extend([(3, 3), (4, 4)]);
        }
        if tick_free {
            pairs.push((6, 2));
        }
        Active::new(&pairs)
    } else if tick.inferred.is_some() || over_stuck || data.slope_at_bound || !fit_tick {
        Active::KNOWN_TICK
    } else {
        Active::ALL
    };
    let look = Look {
        whole_mb: sample.whole_mb,
        slot_lives: sample.slot_lives,
    };
    let key = mix64(recording_hash(&sample) ^ mix64(seed));

    // Candidates: memory x deferral, the base's variants only where it has them.
    let leak = &base.fleet.leak;
    let base_memory = leak.warmup_mb > 0.0
        || leak.step_probability > 0.0
        || leak
            .surge
            .as_ref()
            .is_some_and(|s| s.episodes_per_day > 0.0);
    let base_deferral = base.policy.busy_deferral;
    let base_memory = base_memory && obs_boot.is_none();
    let mut candidates = vec![(Memory::Plain, false)];
    if base_memory {
        candidates.push((Memory::Base, false));
    }
    if base_deferral {
        candidates.push((Memory::Plain, true));
        if base_memory {
            candidates.push((Memory::Base, true));
        }
    }
    let done = AtomicUsize::new(0);
    let fit_seeds = fit::seeds(key, 1, budget.seeds);
    // A worker boots with at least what it shares with the master.
    let floor_boot = base.fleet.shared_mb + 1.0;
    let structure_sets = |m: Memory, deferral: bool| {
        let mut s: Vec<Override> = fixed
            .iter()
            .map(|(k, v)| Override {
                key: k.clone(),
                value: v.clone(),
            })
            .collect();
        if m == Memory::Plain {
            s.extend(fit::num_overrides(&[
                ("fleet.leak.warmup_mb".into(), 0.0),
                ("fleet.leak.step_probability".into(), 0.0),
            ]));
            if leak.surge.is_some() {
                s.extend(fit::num_overrides(&[(
                    "fleet.leak.surge.episodes_per_day".into(),
                    0.0,
                )]));
            }
        }
        s.push(Override {
            key: "policy.busy_deferral".into(),
            value: toml::Value::Boolean(deferral && base_deferral),
        });
        s
    };
    let start = |m: Memory, data: &Moments| {
        let (warmup, steps) = match m {
            Memory::Plain => (0.0, 0.0),
            Memory::Base => (leak.warmup_mb, leak.step_probability * leak.step_mean_mb),
        };
        let mean = (data.velocity_mean - steps).max(data.velocity_mean / 10.0);
        let (mean, cv) = obs_vel.map_or((mean, data.velocity_cv), |v| (v.mean, v.cv));
        Theta {
            base_mb: data.base_mb,
            jitter_mb: data.jitter_mb,
            boot_mb: obs_boot.map_or(data.boot_mb - warmup, |b| b.mb),
            ln_mean: mean.ln(),
            ln_cv: cv.max(0.05).ln(),
            ln_rps: data.rps.ln(),
            ln_tick: tick_start.ln(),
        }
    };
    // The pilot: how the two boot statistics spread over windows at the
    // plain start, which sets their weights (least variance of the sum).
    // An observed boot needs none: the overshoot statistic measures the tick.
    if obs_boot.is_none() {
        let sets = structure_sets(Memory::Plain, false);
        let pilot_data = data.clone();
        let p = Problem {
            data: &pilot_data,
            context,
            look,
            min_rows: MIN_ROWS,
            sets,
            load: &load_sc,
            floor_boot,
            active,
            progress,
            done: &done,
        };
        // Two points 25 MB of boot apart: each statistic's spread and how
        // far it moves per MB of boot.
        let at = start(Memory::Plain, &data).clamp(floor_boot);
        let mut moved = at;
        moved.boot_mb += if at.boot_mb + 25.0 < at.base_mb - at.jitter_mb {
            25.0
        } else {
            -25.0
        };
        let delta = moved.boot_mb - at.boot_mb;
        // Twice the fit's windows: with 16 the choice of quantile was
        // mostly noise (0.3 picked where 0.8 spreads a third as much).
        let pilot_seeds = fit::seeds(key, 4, 2 * budget.seeds);
        let pilot = fit::evaluate(&p, &at, &pilot_seeds);
        let pilot_moved = fit::evaluate(&p, &moved, &pilot_seeds);
        let pairs = |ms: &[Option<Moments>], i: usize| -> Vec<(f64, f64)> {
            ms.iter()
                .flatten()
                .map(|m| (m.boot_over_at[i].0, m.boot_slope))
                .collect()
        };
        let mean = |xs: &[(f64, f64)], j: usize| {
            xs.iter()
                .map(|x| if j == 0 { x.0 } else { x.1 })
                .sum::<f64>()
                / xs.len().max(1) as f64
        };
        // Each quantile off its bound, weighed with the slope statistic:
        // the pair with the least variance per MB of boot wins, and a
        // higher quantile wins within `PILOT_TOLERANCE` of it (near the
        // uniform's sharp edge a quantile spreads less per MB of boot
        // unless holds crowd it, which shows as a cost several times
        // larger, not a few tens of per cent).
        let mut costs: Vec<(usize, f64, f64)> = Vec::new();
        for &i in &eligible {
            let (a, b) = (pairs(&pilot, i), pairs(&pilot_moved, i));
            let sens = (
                (mean(&b, 0) - mean(&a, 0)) / delta,
                (mean(&b, 1) - mean(&a, 1)) / delta,
            );
            // The slope statistic at its bound in the recording (jitter
            // too narrow against the runway) says nothing there: the
            // overshoot alone (it had weight 0.12 at 0 MB and pulled a
            // 305 MB boot to 167).
            let w_min = if data.slope_at_bound { 1.0 } else { 0.0 };
            let (w, cost) = fit::best_weight_cost(&a, sens, w_min);
            if cost.is_finite() {
                costs.push((i, w, cost));
            }
        }
        let least = costs.iter().map(|c| c.2).fold(f64::INFINITY, f64::min);
        let best = costs
            .iter()
            .copied()
            .filter(|c| c.2 <= PILOT_TOLERANCE * least)
            .max_by_key(|c| c.0);
        let (qi, w) = match (best, eligible.last()) {
            _ if over_stuck => (moments::OVERSHOOT_STUCK_AT, 0.0),
            (Some((i, w, _)), _) => (i, w),
            (None, Some(&i)) => (i, 0.5),
            (None, None) => (moments::OVERSHOOT_STUCK_AT, 0.0),
        };
        let pairs = pairs(&pilot, qi);
        context.overshoot_quantile = moments::OVERSHOOT_QUANTILES[qi];
        context.overshoot_weight = w;
        data = moments::moments(&sample, &context, MIN_ROWS)
            .ok_or_else(|| CalibrateError::TooFew(v.key.label(), sample.rows.len()))?;
        notes.push(format!(
            "boot: the overshoot statistic at its {:.1} quantile ({:.1} MB) weighed {w:.2}, the slope \
             statistic ({:.1} MB) {:.2}, by their spread and sensitivity over {} simulated windows{}",
            context.overshoot_quantile,
            data.boot_over,
            data.boot_slope,
            1.0 - w,
            pairs.len(),
            match (over_stuck, sample.whole_mb) {
                (true, true) => {
                    " (the overshoot statistic is at its bound in the recording: held recycles, \
                     or whole-MB rows whose overshoot is mostly under 1 MB, leave it nothing to \
                     read; boot then rests on the slope statistic alone, weak where the jitter is \
                     narrow against the runway: see its interval)"
                }
                (true, false) => {
                    " (the overshoot statistic is at its bound in the recording: held recycles \
                     dominate it)"
                }
                _ => "",
            }
        ));
    }
    // Every fit below shares all but the structure's overrides.
    let template = Problem {
        data: &data,
        context,
        look,
        min_rows: MIN_ROWS,
        sets: Vec::new(),
        load: &load_sc,
        floor_boot,
        active,
        progress,
        done: &done,
    };
    let mut results = Vec::new();
    let mut last_error = String::new();
    for &(m, deferral) in &candidates {
        let sets = structure_sets(m, deferral);
        if let Err(e) = load(&sets) {
            last_error = e.to_string();
            continue;
        }
        let p = Problem {
            sets: sets.clone(),
            ..template.clone()
        };
        if let Some(f) = fit::fit(&p, start(m, &data), &fit_seeds, budget.iterations) {
            let ks = fit::score(&data, &f.sims);
            results.push((m, deferral, sets, f, ks));
        }
    }
    if results.is_empty() {
        return Err(CalibrateError::NoSimulation(if last_error.is_empty() {
            "every candidate structure's windows had too few recycles".into()
        } else {
            last_error
        }));
    }
    let total = |ks: &[f64; 3]| ks.iter().sum::<f64>();
    let best = (0..results.len())
        .min_by(|&a, &b| total(&results[a].4).total_cmp(&total(&results[b].4)))
        .expect("non-empty");
    let cands: Vec<Candidate> = results
        .iter()
        .enumerate()
        .map(|(i, (m, d, _, f, ks))| Candidate {
            memory: m.label().into(),
            deferral: *d,
            score: total(ks),
            ks_margin: ks[0],
            ks_requests: ks[1],
            ks_overshoot: ks[2],
            distance: f.distance,
            chosen: i == best,
        })
        .collect();
    let (memory, deferral, mut sets, fitted, _) = results.swap_remove(best);

    // Draws: fresh windows at the fitted point.
    let p = Problem {
        sets: sets.clone(),
        ..template
    };
    // Newton steps for the chosen structure, with the Jacobian at its point.
    let (fitted, jac) = fit::refine(&p, fitted, &fit_seeds, budget.refine);
    // The client's stale window, where the recording has canary events.
    let seeds = &fit_seeds[..fit_seeds.len().min(8)];
    let client_fit =
        client::for_regime(rec, v, &p, &fitted.theta, seeds, base.client.stale_window_s).and_then(
            |o| match o {
                client::Outcome::Fitted(o, f) => Some((o, f)),
                client::Outcome::Kept(note) => {
                    notes.push(note);
                    None
                }
            },
        );
    let p = match &client_fit {
        Some((o, _)) => {
            sets.push(o.clone());
            Problem {
                sets: sets.clone(),
                ..p
            }
        }
        None => p,
    };
    let draw_seeds = fit::seeds(key, 2, budget.draws);
    let draw_sims = fit::evaluate(&p, &fitted.theta, &draw_seeds);
    let (draws, shrunk) = fit::draws(&fitted.theta, &draw_sims, budget.seeds, floor_boot, &jac);
    if shrunk > 0 {
        notes.push(format!(
            "draws: {shrunk} of {} reached a bound and were shrunk toward the fit along their \
             own direction (their windows' statistics point where the fit barely moves)",
            draws.len()
        ));
    }
    // Each draw on a window of its own: the ones the recording rules out go.
    let made = draws.len();
    let (draws, screened) = screen::screen(&p, draws, &draw_sims, &fit::seeds(key, 3, made));
    if screened.rejected > 0 {
        notes.push(format!(
            "draws: {} of {made} left out, their own window disagreeing with the recording \
             (KS of margins, requests per worker or overshoot p < {}, or the statistics past \
             chi-square's point there){}",
            screened.rejected,
            screen::SCREEN_P,
            if screened.kept_least_bad {
                "; more than half disagreed, so the least inconsistent half was kept: the \
                 linearised uncertainty is a poor description of this recording"
            } else {
                ""
            }
        ));
    }

    // The reported values: the fitted point, se and interval from the draws.
    let theta = fitted.theta;
    let warmup = match memory {
        Memory::Plain => 0.0,
        Memory::Base => leak.warmup_mb,
    };
    let steps = match memory {
        Memory::Plain => 0.0,
        Memory::Base => leak.step_probability * leak.step_mean_mb,
    };
    let point = theta.overrides();
    let mut fits = fits::reported(
        &fits::Reported {
            theta,
            draws: &draws,
            active,
            tick: &tick,
            tick_s,
            fit_tick,
            data: &data,
            warmup,
            steps,
            observed_boot: obs_boot,
            observed_velocity: obs_vel,
        },
        &mut notes,
    );
    if let Some((_, f)) = client_fit {
        fits.push(f);
    }
    if !data.velocity_cv.is_finite() || data.velocity_cv < 0.02 {
        notes.push(
            "leak cv: the velocities barely differ; the cv is at the edge of what the rows resolve"
                .into(),
        );
    }
    let mut all_draws = vec![point.clone()];
    all_draws.extend(draws.iter().map(|(t, _)| t.overrides()));
    if !warm {
        notes.push("the rows show a cold start (slots recycle first after a whole life): fleet.warm_start = false".into());
    }
    notes.push(format!(
        "structure: memory {}, busy deferral {}, profile {}; chosen by the lowest KS score of {} \
         candidates",
        memory.label(),
        if deferral { "the base's" } else { "off" },
        if diurnal { "diurnal" } else { "constant" },
        cands.len()
    ));
    if sample.whole_mb {
        notes.push(
            "rss_mb and limit_mb are whole MB: simulated windows are rounded the same way".into(),
        );
    }
    Ok(Calibration {
        schema: SCHEMA,
        regime: v.key.label(),
        start_s: v.start_s,
        end_s: v.end_s,
        recycles: v.recycles.len(),
        rows: sample.rows.len(),
        fits,
        structure: Structure {
            profile: if diurnal { "diurnal" } else { "constant" }.into(),
            amplitude: tr.amplitude,
            amplitude_se: tr.amplitude_se,
            peak_hour: tr.peak_hour,
            warm_start: warm,
            rate_from: if tr.from_lives {
                "complete slot lives"
            } else {
                "requests over the window"
            }
            .into(),
            whole_mb: sample.whole_mb,
            candidates: cands,
        },
        fixed: sets
            .iter()
            .map(|o| (o.key.clone(), o.value.clone()))
            .collect(),
        draws: all_draws,
        draws_screened_out: screened.rejected,
        seeds_simulated: done.into_inner(),
        notes,
    })
}

/// How much more variance per MB of boot (the pilot's cost) a higher
/// overshoot quantile may have and still be chosen over the least.
const PILOT_TOLERANCE: f64 = 1.5;

/// Simulated windows `calibrate` runs with `budget` on `candidates` structures.
pub fn planned_simulations(budget: Budget, candidates: usize) -> usize {
    (candidates * budget.iterations.max(1) + 4 + fit::DIM + budget.refine) * budget.seeds
        + 2 * budget.draws
}
