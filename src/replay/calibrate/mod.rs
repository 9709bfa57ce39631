//! Calibration: fit a scenario to one limit regime of a recording, so that
//! the simulator can be asked what the recorded fleet would do under
//! another policy.
//!
//! The method (docs/calibration.md, "Replay calibration"):
//!
//! 1. **Statistics** (`moments.rs`): from the regime's recycle rows
//!    (`rss_mb`, `limit_mb`, `requests`, and the slot when recorded), the
//!    limits' uniform, the fleet's rate (from complete lives: a slot's
//!    own when the rows name slots, else chained from each row's requests), the boot RSS at which the median overshoot in
//!    requests is half a tick's requests, and the lognormal of
//!    `(rss - boot) / requests`.
//! 2. **Structure**: the rate profile (constant, or diurnal when a cosine
//!    regression finds an amplitude over 3 standard errors) and the warm or
//!    cold start are read off the data; busy deferral is read off the
//!    overshoot's shape (`deferral.rs`, where the base defers); the memory
//!    model (plain, or the base's warm-up, steps and surges) is a
//!    candidate, each fitted and scored (`fit::score`: KS distances of
//!    margins, requests per worker and overshoot), the lowest score chosen.
//! 3. **Indirect inference** (`fit.rs`): the parameters move until the mean
//!    of the statistics over simulated windows equals the recording's.
//! 4. **Draws**: a parametric bootstrap at the fitted point; `se` and the
//!    95% interval come from the draws, and validation and what-ifs run
//!    over them.
//! 5. **Independent fits** (`ensemble.rs`): the pilot, the fits and the
//!    draws run `Budget::fits` times (2 by default) on independent seeds;
//!    the point is their mean and the draws are pooled, so the intervals
//!    carry the simulation's own noise in where a fit lands.
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

mod accept;
mod active;
mod calibration;
mod client;
mod deferral;
mod ensemble;
mod fit;
mod fits;
mod lives;
mod lognormal;
pub mod moments;
pub mod observed;
mod output;
mod plan;
mod ridge;
mod screen;
mod setup;
mod shape;
mod shape_match;
mod stages;
#[cfg(test)]
mod testkit;
mod written;

pub use calibration::{Budget, Calibration, Candidate, Fit, Options, SCHEMA, Structure};
pub use deferral::{deferral_candidates, scan_windows};
pub use lognormal::fit_lognormal;
pub use output::{calibrated_toml, render};
pub use plan::planned_simulations;

use super::analyse::regimes;
use super::recording::Recording;
use crate::engine::rng::mix64;
use crate::scenario::{Accept, Connections, Override, RawScenario};
use deferral::Deferral;
use observed::Observed;
use setup::{BaseText, Structures};
use stages::Shared;

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
/// `planned_simulations(budget, candidates, options, whole_mb)`: 2 candidates when
/// the deferral is read, else 4 (each memory model, off and the base's).
pub fn calibrate(
    rec: &Recording,
    base: &RawScenario,
    seed: u64,
    budget: Budget,
    options: Options,
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
        options,
        observed.as_ref(),
        progress,
    )
}

/// `calibrate`, with what an RSS series observed of the regime's lives.
///
/// The stages, in the order of every simulated window and random draw
/// (`setup.rs` those that simulate nothing, `stages.rs` the rest): the
/// regime, its clock, window and ceiling; the rate profile; the boot
/// statistics and what the fit moves; the candidate structures; the pilot;
/// a fit per structure, each with its Newton steps; the pilot again at the
/// chosen one's point and, when its weights changed, the chosen one's
/// fixed-point steps again from that point under the new statistics (the
/// first window set re-scores it; the best point seen is kept); the chosen
/// one's Newton steps again from its point; the client's stale window; the
/// draws and their screen (these simulating stages are `fit_once`, run
/// `budget.fits` times, each on its own seeds, one after the other); the
/// fits merged; the reported values and notes.
pub fn calibrate_observed(
    rec: &Recording,
    base: &RawScenario,
    seed: u64,
    budget: Budget,
    options: Options,
    observed: Option<&Observed>,
    progress: &(dyn Fn(usize) + Sync),
) -> Result<Calibration, CalibrateError> {
    let w = super::analyse::window(rec);
    let views = regimes::split(rec, (w.start_s, w.end_s));
    let mut regime = setup::regime(&views)?;
    let base_text = BaseText::new(base)?;
    let load_base = |sets: &[Override]| {
        base_text
            .load(sets)
            .map(|x| x.1)
            .map_err(|e| CalibrateError::Base(e.to_string()))
    };
    let load_sc = |sets: &[Override]| base_text.load(sets).ok().map(|x| x.1);
    let mut notes = Vec::new();
    // The recording's instances and workers, where its names say them.
    let shape = shape::fleet_shape(regime.view, &load_base(&[])?, &mut notes);
    let base_sc = load_base(&setup::overrides(&shape))?;

    let mut clock = setup::clock(
        base,
        &base_sc,
        regime.view,
        w.start_s,
        options.fit_tick,
        &mut notes,
    );
    let mut fixed = shape;
    fixed.extend(setup::sampling_keys(&clock));
    fixed.extend(setup::window_and_ceiling(
        base,
        &regime,
        clock.span_s,
        &mut notes,
    ));
    // Slots recycling very unequally (`shape::named`: one an instance at
    // under a quarter of its busiest sibling's recycles, or one slot named
    // an instance that recycles again and again) are not fed alike:
    // a life's rate is its slot's, not every worker's, and a sibling's
    // rare long life read beside them is a dip the profile would read as a
    // day's (h1 of docs/calibration.md fed first: a diurnal amplitude of
    // 0.25 +- 0.07 on a constant fleet). The rate and profile come off the
    // window; the lives still give the accept reading.
    if regime.sample.lives == moments::Lives::Slots && shape::named(regime.view).fed_unevenly() {
        regime.sample.lives = moments::Lives::SlotsUneven;
    }
    let before_profile = fixed.clone();
    let bound = regime.sample.lives;
    let mut profile = setup::rate_profile(&regime, &clock, &mut fixed)?;
    // A chained rate the window's requests rule out (`moments::traffic`):
    // the recording and every simulated window are read the window's way.
    regime.sample.lives = regime.sample.lives.coarser(profile.traffic.from);
    let key = mix64(recording_hash(&regime.sample) ^ mix64(seed));
    let mut boot_notes = Vec::new();
    let mut boot = setup::boot_statistics(
        &regime,
        &clock,
        profile.shape,
        observed,
        moments::UNHELD_TARGETS,
        &mut boot_notes,
    )?;
    // Which idle worker takes a request, where complete slot lives say it
    // (pinned connections are accepted by any serving worker already).
    let mut before = 0;
    let mut accept_reading = None;
    if !matches!(base_sc.client.connections, Connections::Pinned { .. }) {
        let structures = Structures::new(base, &base_text, fixed.clone(), &boot);
        let active = boot.active(&clock, &mut Vec::new());
        let shared = Shared::new(base, &regime, &load_sc, active, progress, key, budget);
        match accept::read(&regime, bound, &boot, &structures, &base_sc, &shared) {
            Some(r) => {
                notes.push(r.note());
                if r.accept().is_some_and(|a| a != base_sc.fleet.accept) {
                    fixed.push(r.set());
                }
                if matches!(r.accept(), Some(Accept::MostRecent | Accept::First)) {
                    // One worker an instance takes nearly every request: the
                    // rate is read off the window fed first
                    // (`Lives::SlotsUneven`), and off the lives only as near
                    // the window's as its ends allow where the hot worker
                    // changes (`Lives::SlotsHot`); the window's start is
                    // read by simulation, and a recycle's overshoot counted
                    // at the instance's pace (`Clock::hot`). The profile and
                    // the boot statistics are read again so.
                    regime.sample.lives = match (r.accept(), regime.sample.lives) {
                        (
                            Some(Accept::First),
                            moments::Lives::Slots | moments::Lives::SlotsUneven,
                        ) => moments::Lives::SlotsUneven,
                        // Rows without slot ids: one chain an instance.
                        (Some(Accept::First), _) if bound == moments::Lives::ChainedByInstance => {
                            moments::Lives::HotByInstance
                        }
                        (Some(Accept::First), _) if bound == moments::Lives::ChainedInFleet => {
                            moments::Lives::HotInFleet
                        }
                        (Some(Accept::First), _) => moments::Lives::Window,
                        (_, moments::Lives::Slots) => moments::Lives::SlotsHot,
                        // Lives chained at the fleet's pace, where one worker
                        // an instance takes nearly every request at several
                        // times it: the chains join the wrong recycles, and
                        // the rate read off them came out 5-18% high.
                        (_, moments::Lives::ChainedByInstance | moments::Lives::ChainedInFleet) => {
                            moments::Lives::Window
                        }
                        (_, lives) => lives,
                    };
                    clock.hot = true;
                    fixed = before_profile.clone();
                    profile = setup::rate_profile(&regime, &clock, &mut fixed)?;
                    regime.sample.lives = regime.sample.lives.coarser(profile.traffic.from);
                    fixed.push(r.set());
                    if let Some(w) = &r.warm_start {
                        let warm = toml::Value::Boolean(w.chosen);
                        fixed.retain(|(k, _)| k != "fleet.warm_start");
                        fixed.push(("fleet.warm_start".into(), warm));
                        profile.warm = w.chosen;
                    }
                    boot_notes.clear();
                    boot = setup::boot_statistics(
                        &regime,
                        &clock,
                        profile.shape,
                        observed,
                        moments::UNHELD_TARGETS,
                        &mut boot_notes,
                    )?;
                }
                accept_reading = Some(r);
            }
            None if bound == moments::Lives::Window => notes.push(
                "which idle worker takes a request (fleet.accept): not identifiable without \
                 lives the rows bound (it moves the overshoot as boot does); the base's"
                    .into(),
            ),
            None => notes.push(format!(
                "which idle worker takes a request (fleet.accept): not read (fewer than {} \
                 complete lives, or too few simulated recycles); the base's",
                accept::MIN_LIVES
            )),
        }
        before = shared.done.into_inner();
    }
    // Busy deferral read off the overshoot's shape, where the base defers;
    // a deferral's overshoot targets make the boot statistics again.
    // Without the scan, `given_deferrals`.
    let mut deferrals = deferral::given_deferrals(base, options);
    if deferrals == [Deferral::Base] {
        notes.push(format!(
            "busy deferral: the scenario's (busy_rps {}, defer_max_s {}), simulated as given; \
             --fit-deferral reads it off the overshoot instead",
            base.policy.busy_rps, base.policy.defer_max_s
        ));
    }
    let mut deferral_scan = Vec::new();
    let mut along_ridge: Vec<deferral::Member> = Vec::new();
    if base.policy.busy_deferral && options.read_deferral {
        let structures = Structures::new(base, &base_text, fixed.clone(), &boot);
        let active = boot.active(&clock, &mut Vec::new());
        let offset = before;
        let counted = move |n: usize| progress(offset + n);
        let shared = Shared::new(base, &regime, &load_sc, active, &counted, key, budget);
        let instances = clock.workers / clock.per_instance.max(1.0);
        let scan = deferral::scan(&regime, &boot, &structures, instances, &shared);
        before += shared.done.into_inner();
        notes.push(scan.note());
        deferral_scan = scan.report();
        deferrals = vec![scan.chosen];
        along_ridge = scan.ridge.clone();
        if let Some(targets) = scan.targets {
            boot_notes.clear();
            boot = setup::boot_statistics(
                &regime,
                &clock,
                profile.shape,
                observed,
                targets,
                &mut boot_notes,
            )?;
        }
        // Against the chosen deferral's own windows (a read one's, or off's),
        // the overshoot's whole shape is the boot statistic, weighed alone
        // (`moments::shape_boot`). Under off too: off is kept wherever it
        // fits within the noise, also where a third of the recycles deferred
        // (k11 of tools/truth/CLEANROOM.md), and one quantile, in the
        // deferred tail, read that tail as boot (-164 MB there). Not under
        // off where the overshoot's highest quantile sits at its bound (holds
        // dominate its tail and the slope statistic reads boot alone: k6 of
        // the third held-out draw went +19 -> -61 MB under the shape).
        let windows = match scan.chosen {
            Deferral::Off if boot.over_stuck => None,
            Deferral::Off => Some("the simulated windows without deferral"),
            _ => Some("the read deferral's simulated windows"),
        };
        if let (Some(windows), Some(shape)) = (windows, scan.shape)
            && boot.against_shape(&regime, shape)?
        {
            boot_notes.push(format!(
                "boot: the overshoot statistic is the boot where the rows' whole overshoot \
                 matches {windows} best ({:.1} MB, Cramér-von Mises), weighed alone",
                boot.data.boot_over
            ));
        }
    }
    notes.append(&mut boot_notes);
    let active = boot.active(&clock, &mut notes);
    let mut structures = Structures::new(base, &base_text, fixed.clone(), &boot);
    structures.deferrals = deferrals;
    // The fits on independent seeds (the first on the recording's own key),
    // each counting its windows after the ones before it. On whole-MB rows
    // the first is fitted twice, its windows written rounded and truncated
    // over whole-MB limits (`written.rs`), and the nearer rule is kept for
    // every later window.
    let mut runs: Vec<Run> = Vec::new();
    for r in 0..budget.fits.max(1) {
        let run_key = if r == 0 {
            key
        } else {
            mix64(key ^ mix64(FIT_SALT + r as u64))
        };
        let rules: &[bool] = if r == 0 && regime.sample.whole_mb {
            &[false, true]
        } else {
            &[regime.floor_mb]
        };
        let mut tried: Vec<(bool, Result<Run, CalibrateError>)> = Vec::new();
        for &floor in rules {
            regime.floor_mb = floor;
            let counted = |n: usize| progress(before + n);
            let shared = Shared::new(base, &regime, &load_sc, active, &counted, run_key, budget);
            let run = fit_once(
                r + 1,
                rec,
                base,
                &regime,
                boot.clone(),
                &structures,
                &shared,
            );
            before += shared.done.into_inner();
            tried.push((floor, run));
        }
        if tried.len() == 2 {
            let score = |x: &Result<Run, CalibrateError>| x.as_ref().ok().map(Run::score);
            let reading = written::Reading {
                round_score: score(&tried[0].1),
                floor_score: score(&tried[1].1),
            };
            regime.floor_mb = reading.floor();
            notes.push(reading.note());
            tried.retain(|(floor, _)| *floor == regime.floor_mb);
        }
        let (_, run) = tried.pop().expect("a fit under the rule kept");
        match run {
            Ok(run) => runs.push(run),
            // The first fit's failure is the calibration's; a later one is
            // only a fit fewer.
            Err(e) if r == 0 => return Err(e),
            Err(e) => notes.push(format!("fit {}: failed ({e}); left out", r + 1)),
        }
    }
    // Along the deferral's ridge, a fit at each member under the first
    // fit's memory model; their draws join the pool (`ridge.rs`).
    let mut ridge_runs: Vec<(Deferral, Run)> = Vec::new();
    for (k, m) in along_ridge.iter().enumerate() {
        let mut rboot = setup::boot_statistics(
            &regime,
            &clock,
            profile.shape,
            observed,
            m.targets,
            &mut Vec::new(),
        )?;
        rboot.against_shape(&regime, m.shape)?;
        let mut rs = Structures::new(base, &base_text, fixed.clone(), &rboot);
        rs.deferrals = vec![m.deferral];
        let run_key = mix64(key ^ mix64(RIDGE_SALT + k as u64));
        let counted = |n: usize| progress(before + n);
        let shared = Shared::new(base, &regime, &load_sc, active, &counted, run_key, budget);
        let run = fit_once(runs.len() + k + 1, rec, base, &regime, rboot, &rs, &shared);
        before += shared.done.into_inner();
        match run {
            Ok(run) if run.chosen.memory == runs[0].chosen.memory => {
                ridge_runs.push((m.deferral, run))
            }
            Ok(_) => notes.push(format!(
                "busy deferral's ridge: the fit under {} chose another memory model; left out",
                m.deferral.label()
            )),
            Err(e) => notes.push(format!(
                "busy deferral's ridge: the fit under {} failed ({e}); left out",
                m.deferral.label()
            )),
        }
    }
    let first = &runs[0];
    let members: Vec<ensemble::Member> = runs
        .iter()
        .map(|run| ensemble::Member {
            number: run.number,
            theta: run.theta,
            draws: &run.draws,
            // The memory model changes what boot means (boot or boot +
            // warm-up), and a deferral read off the overshoot trades with
            // boot: a fit under another structure is not averaged in.
            same_structure: run.chosen.memory == first.chosen.memory
                && run.chosen.deferral == first.chosen.deferral,
        })
        .collect();
    let merged = ensemble::merge(&members);
    notes.extend(first.notes.iter().cloned());
    // What the other fits met that the first did not (a Jacobian taken
    // again, draws screened out), under their number.
    for run in &runs[1..] {
        for n in run.notes.iter().filter(|n| !first.notes.contains(n)) {
            notes.push(format!("fit {}: {n}", run.number));
        }
    }
    if runs.len() > 1 {
        notes.push(ensemble::note(&members, &merged));
    }
    let theta = merged.theta;
    let ridge_fitted: Vec<ridge::Fitted> = ridge_runs
        .iter()
        .map(|(d, run)| ridge::Fitted {
            deferral: *d,
            draws: &run.draws,
        })
        .collect();
    let (pooled, under) = ridge::pool(&merged.draws, &ridge_fitted);
    if !ridge_runs.is_empty() {
        notes.push(ridge::note(
            &ridge_runs
                .iter()
                .map(|(d, run)| (*d, run.theta.boot_mb, run.draws.len()))
                .collect::<Vec<_>>(),
        ));
    }
    let screened_out = merged.used.iter().map(|&i| runs[i].rejected).sum::<usize>()
        + ridge_runs
            .iter()
            .map(|(_, run)| run.rejected)
            .sum::<usize>();
    let (chosen, boot) = (&first.chosen, &first.boot);

    let growth = structures.growth(chosen.memory);
    let mut fits = stages::reported(
        theta,
        &pooled,
        active,
        &clock,
        boot,
        (growth.0, growth.1, structures.floor_boot),
        &mut notes,
    );
    fits.extend(first.client.clone());
    stages::closing_notes(&profile, chosen, regime.sample.whole_mb, &mut notes);
    let v = regime.view;
    Ok(Calibration {
        schema: SCHEMA,
        regime: v.key.label(),
        start_s: v.start_s,
        end_s: v.end_s,
        recycles: v.recycles.len(),
        rows: regime.sample.rows.len(),
        fits,
        structure: profile.structure(
            regime.sample.whole_mb,
            regime.floor_mb,
            chosen.candidates.clone(),
            deferral_scan,
            accept_reading,
        ),
        fixed: first
            .sets
            .iter()
            .map(|o| (o.key.clone(), o.value.clone()))
            .collect(),
        draws: ridge::all_draws(theta, first.chosen.deferral, &pooled, &under),
        draws_screened_out: screened_out,
        seeds_simulated: before,
        notes,
    })
}

/// Mixed into the key of every fit after the first.
const FIT_SALT: u64 = 0xF175_0000;

/// Mixed into the key of each fit along the deferral's ridge.
const RIDGE_SALT: u64 = 0x21D6_E000;

/// What one fit gives: its point and draws, the structure it chose, the
/// statistics it weighed, the client's fit and scenario values, its notes.
struct Run {
    /// Which fit, from 1.
    number: usize,
    theta: fit::Theta,
    draws: Vec<stages::Draw>,
    rejected: usize,
    boot: setup::Boot,
    chosen: stages::Chosen,
    sets: Vec<Override>,
    client: Option<Fit>,
    notes: Vec<String>,
}

impl Run {
    /// The chosen structure's score (`fit::score`: its KS distances).
    fn score(&self) -> f64 {
        self.chosen
            .candidates
            .iter()
            .find(|c| c.chosen)
            .map_or(f64::INFINITY, |c| c.score)
    }
}

/// Fit `number` (from 1) on `shared`'s seeds: the pilot, a fit per structure, the pilot
/// again at the chosen point (and the fixed-point steps again when its
/// weights changed), the Newton steps, the client's window, the draws and
/// their screen.
fn fit_once(
    number: usize,
    rec: &Recording,
    base: &RawScenario,
    regime: &setup::Regime,
    mut boot: setup::Boot,
    structures: &Structures,
    shared: &Shared,
) -> Result<Run, CalibrateError> {
    let budget = shared.budget;
    let mut notes = Vec::new();
    // An observed boot needs no pilot: the overshoot statistic measures the tick.
    // Nor does the overshoot's whole shape: it is one statistic, weighed alone.
    let weighed = boot.observed_boot.is_none() && boot.context.overshoot_shape.is_none();
    if weighed {
        stages::pilot(regime, &mut boot, structures, shared, &mut notes)?;
    }
    let candidates = structures.candidates();
    let (chosen, mut fitted) = stages::fit_structures(&boot, structures, &candidates, shared)?;
    // The pilot's weights again where the fit landed; when they changed,
    // the chosen structure's fixed-point steps again from its point.
    let warmup = structures.growth(chosen.memory).0;
    if weighed
        && stages::repilot(
            regime,
            &mut boot,
            &chosen,
            &fitted.theta,
            warmup,
            shared,
            &mut notes,
        )?
    {
        // The fixed-point steps again from the first fit's point, under the
        // new statistics: their first window set re-scores that point, and
        // the best seen is kept (the Newton steps alone, from a point on
        // the old weights' ridge, did not move it: fleet 54, leak cv 0.02).
        let p = shared.problem(&boot.data, boot.context, chosen.sets.clone());
        let (seeds, iterations) = (&shared.fit_seeds, budget.iterations);
        let theta = fitted.theta;
        fitted = fit::fit(&p, theta, seeds, iterations).unwrap_or(fit::Fitted {
            theta,
            sims: Vec::new(),
            distance: f64::INFINITY,
        });
    }

    let mut p = shared.problem(&boot.data, boot.context, chosen.sets.clone());
    // Newton steps for the chosen structure, with the Jacobian at its point.
    let (fitted, jac) = fit::refine(&p, fitted, &shared.fit_seeds, budget.refine);
    let theta = fitted.theta;
    let client = stages::client_window(rec, regime, &mut p, &theta, shared, base, &mut notes);
    let (draws, screened) = stages::screened_draws(&p, &theta, &jac, shared, &mut notes);
    let sets = p.sets;
    Ok(Run {
        number,
        theta,
        draws,
        rejected: screened.rejected,
        boot,
        chosen,
        sets,
        client,
        notes,
    })
}
