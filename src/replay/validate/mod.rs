//! Validation of a calibration: simulate the calibrated scenario for the
//! recording's duration over several seeds, read each run's events back
//! through the same import and regime split as the recording, and compare
//! figure by figure.
//!
//! Rules (stated in the output too):
//! - a figure passes when the recorded value lies inside the 99%
//!   prediction interval of one new window: `|recorded - mean| <= t sd
//!   sqrt(1 + 1/n)` + 5% of the mean, with `t` Student's 0.995 quantile on
//!   `n - 1` degrees of freedom. Each seed simulates a window as long as
//!   the recording's, so the spread between seeds is the noise one
//!   recorded window carries, and `sqrt(1 + 1/n)` adds the error of the
//!   seeds' mean (for counts per hour, sd is at least the Poisson spread
//!   of the mean count: a few seeds of a rare event often all read 0);
//! - a distribution passes when the two-sample Kolmogorov-Smirnov test of
//!   the recorded sample against the seeds' pooled samples gives p >= 0.01,
//!   its statistic first divided by how much wider it spreads between the
//!   simulated windows themselves than between independent samples
//!   (`ks_inflation`, at least 1): a window's recycles are not independent
//!   draws (near-periodic lives, the calibration draws' mixture);
//! - a figure the recording has no field or event for (canaries, pressure,
//!   requests, RSS, instances) is "not recorded": shown, never a warning,
//!   and not counted against the verdict. It is decided from which fields
//!   the recording carries, never from a value being 0.
//!
//! Like with like: when every recycle's `rss_mb` and `limit_mb` is whole
//! MB, the simulated events are rounded to whole MB before any figure is
//! computed (a margin of exactly 0 is common in rounded logs and
//! impossible in continuous simulated data).
//!
//! The seeds are not a fixed block: `seeds_for` derives them from the
//! recording's recycle rows and the user's `--seed`, so two recordings get
//! different blocks. The simulated windows run over a set of scenarios
//! (calibration draws): window `j` is `scenarios[j % len]` on `seeds[j]`.
//!
//! A calibration that does not reproduce its window says so: the verdict
//! names every row that warns.
//!
//! Seeds run in parallel (rayon); results come back in seed order, so the
//! output does not depend on the thread count.

mod render;
mod simulated;
mod stats;
use super::analyse::regimes::{self, RegimeView};
use super::analyse::window;
use super::recording::Recording;
use crate::metrics::summary::{LOW_MARGIN_MB, YOUNG_REQUESTS};
use crate::metrics::{EventKind, summary::quantile_sorted};
use crate::{Scenario, SimError};
use rayon::prelude::*;
pub use render::render;
use serde::Serialize;
pub use simulated::{Written, simulate, simulated_recording};
pub use stats::{
    INFLATION_MIN_VALUES, INFLATION_MIN_WINDOWS, kolmogorov_q, ks_inflation, ks_lambda,
    ks_two_sample, normal_quantile, t_quantile,
};

/// validation.json's schema: 2 added `not_recorded`, `resolution_mb`,
/// recording-derived seeds and scenario draws; 3 the distributions'
/// `inflation` (their p-values are judged against the model's own windows).
pub const SCHEMA: &str = "fleetsim.validation/3";
/// A figure passes inside the prediction interval of this two-sided
/// coverage (Student t on the seeds' spread)...
pub const COVERAGE: f64 = 0.99;
/// ...plus this fraction of the seeds' mean.
pub const MEAN_SLACK: f64 = 0.05;
/// A distribution passes when the KS p-value is at least this.
pub const KS_ALPHA: f64 = 0.01;

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Verdict {
    Pass,
    Warn,
    /// The recording has no field or event this figure needs.
    NotRecorded,
}

impl Verdict {
    pub fn label(self) -> &'static str {
        match self {
            Verdict::Pass => "pass",
            Verdict::Warn => "WARN",
            Verdict::NotRecorded => "not recorded",
        }
    }
}

/// What a figure is computed from: a recording without it does not
/// record the figure.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Needs {
    /// Recycle rows alone.
    Recycles,
    /// A `requests` count on some recycle.
    Requests,
    /// An `rss_mb` on some recycle.
    Rss,
    /// Both `rss_mb` and `limit_mb` on some recycle.
    Margin,
    /// An `instance` on some recycle.
    Instance,
    /// A `pressure` field (or an attached pressure log line) on some recycle.
    Pressure,
    /// Any canary event (`retry_ok`, `fetch_failed`) in the recording.
    Canary,
}

/// Which fields and events a recording carries, and at what resolution.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Recorded {
    pub requests: bool,
    pub rss: bool,
    pub margin: bool,
    pub instance: bool,
    pub pressure: bool,
    pub canary: bool,
    /// Every recycle's `rss_mb` and `limit_mb` is a whole number of MB
    /// (and there is at least one).
    pub whole_mb: bool,
}

impl Recorded {
    pub fn of(rec: &Recording) -> Recorded {
        let any = |f: &dyn Fn(&super::recording::Event) -> bool| rec.recycles().any(f);
        let mut mb = rec
            .recycles()
            .flat_map(|e| [e.rss_mb, e.limit_mb])
            .flatten()
            .peekable();
        let some_mb = mb.peek().is_some();
        Recorded {
            requests: any(&|e| e.requests.is_some()),
            rss: any(&|e| e.rss_mb.is_some()),
            margin: any(&|e| e.margin_mb().is_some()),
            instance: any(&|e| e.instance.is_some()),
            pressure: any(&|e| e.pressure.is_some() || e.pressure_from_log),
            canary: rec.events.iter().any(|e| e.kind.is_canary()),
            whole_mb: some_mb && mb.all(|x| x.fract() == 0.0),
        }
    }

    pub fn has(&self, n: Needs) -> bool {
        match n {
            Needs::Recycles => true,
            Needs::Requests => self.requests,
            Needs::Rss => self.rss,
            Needs::Margin => self.margin,
            Needs::Instance => self.instance,
            Needs::Pressure => self.pressure,
            Needs::Canary => self.canary,
        }
    }
}

/// The scalar figures, in the order `figures` computes them, with what
/// each is computed from.
pub const SCALARS: [(&str, Needs); 12] = [
    ("recycles per hour", Needs::Recycles),
    ("requests per worker p10", Needs::Requests),
    ("requests per worker median", Needs::Requests),
    ("requests per worker p90", Needs::Requests),
    ("low-margin fraction (< 25 MB)", Needs::Margin),
    ("young fraction (< 400 requests)", Needs::Requests),
    ("peak RSS (MB)", Needs::Rss),
    ("same-instance gap median (s)", Needs::Instance),
    ("cross-instance gap median (s)", Needs::Instance),
    ("pressure recycles per hour", Needs::Pressure),
    ("retry_ok per hour", Needs::Canary),
    ("fetch_failed per hour", Needs::Canary),
];

/// The distributions, with what each is computed from.
pub const DISTRIBUTIONS: [(&str, Needs); 3] = [
    ("requests per worker", Needs::Requests),
    ("margin over limit (MB)", Needs::Margin),
    ("same-instance gaps (s)", Needs::Instance),
];

/// FNV-1a, 64 bit.
fn fnv1a(h: u64, bytes: &[u8]) -> u64 {
    bytes
        .iter()
        .fold(h, |h, b| (h ^ *b as u64).wrapping_mul(0x100_0000_01b3))
}

/// SplitMix64's finaliser: a bijection that spreads neighbouring inputs.
fn mix(mut z: u64) -> u64 {
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

/// A hash of the recording's recycle rows (time, RSS, limit, requests).
pub fn fingerprint(rec: &Recording) -> u64 {
    rec.recycles().fold(0xcbf2_9ce4_8422_2325, |h, e| {
        let h = fnv1a(h, &e.t_s.to_bits().to_le_bytes());
        let h = fnv1a(h, &e.rss_mb.map_or(u64::MAX, f64::to_bits).to_le_bytes());
        let h = fnv1a(h, &e.limit_mb.map_or(u64::MAX, f64::to_bits).to_le_bytes());
        fnv1a(h, &e.requests.unwrap_or(u64::MAX).to_le_bytes())
    })
}

/// `n` validation seeds derived from the recording and `seed`: the same
/// recording and seed give the same block, two recordings different ones.
/// Seeds are below 2^40, short enough to read and to pass to `--seed`.
pub fn seeds_for(rec: &Recording, seed: u64, n: usize) -> Vec<u64> {
    let base = mix(fingerprint(rec) ^ mix(seed));
    (0..n as u64)
        .map(|j| mix(base.wrapping_add(j.wrapping_mul(0x9e37_79b9_7f4a_7c15))) >> 24)
        .collect()
}

/// One scalar figure, recorded vs simulated.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct FigureRow {
    pub name: String,
    pub recorded: Option<f64>,
    pub simulated_mean: Option<f64>,
    pub simulated_sd: Option<f64>,
    pub simulated_min: Option<f64>,
    pub simulated_max: Option<f64>,
    pub verdict: Verdict,
}

/// One distribution, recorded vs the seeds' pooled samples.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct KsRow {
    pub name: String,
    pub recorded_n: usize,
    pub simulated_n: usize,
    pub ks_d: Option<f64>,
    /// The KS p-value with the statistic divided by `inflation`.
    pub p_value: Option<f64>,
    /// How much wider the statistic spreads between the model's own
    /// windows than between independent samples (`ks_inflation`, >= 1).
    pub inflation: f64,
    pub verdict: Verdict,
    /// The recorded sample, sorted (thinned as `thin` says), for overlays.
    pub recorded_sample: Vec<f64>,
    /// The seeds' pooled sample, sorted and thinned the same way.
    pub simulated_sample: Vec<f64>,
}

/// The most values a sample keeps in validation.json: beyond it, evenly
/// spaced order statistics (the same distribution function to 1/2000).
pub const SAMPLE_KEPT: usize = 2000;

/// Sorts `xs` and keeps at most `SAMPLE_KEPT` evenly spaced order
/// statistics, the smallest and the largest among them.
pub fn thin(xs: &[f64]) -> Vec<f64> {
    let mut v: Vec<f64> = xs.iter().copied().filter(|x| x.is_finite()).collect();
    v.sort_by(f64::total_cmp);
    if v.len() <= SAMPLE_KEPT {
        return v;
    }
    let last = v.len() - 1;
    (0..SAMPLE_KEPT)
        .map(|k| v[k * last / (SAMPLE_KEPT - 1)])
        .collect()
}

#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Validation {
    pub schema: &'static str,
    pub regime: String,
    pub hours: f64,
    /// The seeds, derived from the recording and `--seed` (`seeds_for`).
    pub seeds: Vec<u64>,
    /// Scenario draws the windows ran over (window `j`: draw `j % draws`).
    pub draws: usize,
    /// The recording's RSS resolution the simulated values were rounded
    /// to: 1 when every recycle's rss_mb and limit_mb is whole MB.
    pub resolution_mb: Option<f64>,
    pub figures: Vec<FigureRow>,
    pub distributions: Vec<KsRow>,
    pub rules: Vec<String>,
    pub reproduces: bool,
    pub verdict: String,
    /// The calibration's structure (rate profile, start, memory model and
    /// busy deferral) and every candidate's fit score (`score`: the sum of
    /// its KS distances; the lowest was chosen), when the scenario came
    /// from `replay --calibrate` (set by its caller).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub structure: Option<crate::replay::calibrate::Structure>,
}

/// What one window shows, per hour where it is a count.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Figures {
    /// `(name, value)`; names ending in `per hour` are counts per hour.
    pub scalars: Vec<(&'static str, Option<f64>)>,
    pub requests_per_worker: Vec<f64>,
    pub margins_mb: Vec<f64>,
    pub same_gaps_s: Vec<f64>,
}

fn q(xs: &[f64], p: f64) -> Option<f64> {
    quantile_sorted(xs, p)
}

fn frac(n: usize, of: usize) -> Option<f64> {
    (of > 0).then(|| n as f64 / of as f64)
}

/// The figures of one regime view over `hours`.
pub fn figures(v: &RegimeView, hours: f64) -> Figures {
    let mut rpw: Vec<f64> = v
        .recycles
        .iter()
        .filter_map(|e| e.requests.map(|n| n as f64))
        .collect();
    rpw.sort_by(f64::total_cmp);
    let mut margins: Vec<f64> = v.recycles.iter().filter_map(|e| e.margin_mb()).collect();
    margins.sort_by(f64::total_cmp);
    let mut same: Vec<f64> = v.same_gap_s.iter().flatten().copied().collect();
    same.sort_by(f64::total_cmp);
    let mut cross: Vec<f64> = v.cross_gap_s.iter().flatten().copied().collect();
    cross.sort_by(f64::total_cmp);
    let per_h = |n: usize| (hours > 0.0).then(|| n as f64 / hours);
    let count = |k: EventKind| v.events.iter().filter(|e| e.is(k)).count();
    let young = rpw.iter().filter(|r| **r < YOUNG_REQUESTS as f64).count();
    let low = margins.iter().filter(|m| **m < LOW_MARGIN_MB).count();
    let values = [
        per_h(v.recycles.len()),
        q(&rpw, 0.1),
        q(&rpw, 0.5),
        q(&rpw, 0.9),
        frac(low, margins.len()),
        frac(young, rpw.len()),
        v.recycles.iter().filter_map(|e| e.rss_mb).reduce(f64::max),
        q(&same, 0.5),
        q(&cross, 0.5),
        per_h(v.recycles.iter().filter(|e| e.pressure_true()).count()),
        per_h(count(EventKind::RetryOk)),
        per_h(count(EventKind::FetchFailed)),
    ];
    let scalars = SCALARS.iter().map(|s| s.0).zip(values).collect();
    Figures {
        scalars,
        requests_per_worker: rpw,
        margins_mb: margins,
        same_gaps_s: same,
    }
}

/// The view of `rec` labelled `label`, or the one with the most recycles.
fn view<'a>(views: &'a [RegimeView<'a>], label: Option<&str>) -> Option<&'a RegimeView<'a>> {
    match label {
        Some(l) => views.iter().find(|v| v.key.label() == l),
        None => views.iter().max_by_key(|v| v.recycles.len()),
    }
}

fn mean_sd(xs: &[f64]) -> Option<(f64, f64)> {
    let n = xs.len() as f64;
    if xs.is_empty() {
        return None;
    }
    let m = xs.iter().sum::<f64>() / n;
    let sd = if xs.len() > 1 {
        (xs.iter().map(|x| (x - m).powi(2)).sum::<f64>() / (n - 1.0)).sqrt()
    } else {
        0.0
    };
    Some((m, sd))
}

/// The spread a figure is judged by: the seeds' sd, and for a count per
/// hour at least its Poisson sd over the window (a few seeds of a rare
/// event often all read 0: no spread is not no noise).
fn spread(name: &str, mean: f64, sd: f64, hours: f64) -> f64 {
    if name.ends_with("per hour") && hours > 0.0 {
        sd.max((mean * hours).max(1.0).sqrt() / hours)
    } else {
        sd
    }
}

/// The half-width a figure passes within: the prediction interval of one
/// new window from `n` simulated ones, plus the slack.
pub fn band(name: &str, mean: f64, sd: f64, n: usize, hours: f64) -> f64 {
    let t = t_quantile(0.5 + COVERAGE / 2.0, n.saturating_sub(1) as u64);
    let pi = (1.0 + 1.0 / n.max(1) as f64).sqrt();
    t * spread(name, mean, sd, hours) * pi + MEAN_SLACK * mean.abs()
}

fn figure_row(
    name: &str,
    recorded: Option<f64>,
    sims: &[f64],
    hours: f64,
    in_recording: bool,
) -> FigureRow {
    let ms = mean_sd(sims);
    let verdict = match (recorded, ms) {
        _ if !in_recording => Verdict::NotRecorded,
        (Some(r), Some((m, sd))) if (r - m).abs() <= band(name, m, sd, sims.len(), hours) => {
            Verdict::Pass
        }
        (None, None) => Verdict::Pass,
        _ => Verdict::Warn,
    };
    FigureRow {
        name: name.to_string(),
        recorded,
        simulated_mean: ms.map(|x| x.0),
        simulated_sd: ms.map(|x| x.1),
        simulated_min: sims.iter().copied().reduce(f64::min),
        simulated_max: sims.iter().copied().reduce(f64::max),
        verdict,
    }
}

fn ks_row(
    (name, needs): (&str, Needs),
    has: Recorded,
    recorded: &[f64],
    sims: &[Figures],
    pick: fn(&Figures) -> &[f64],
) -> KsRow {
    let pooled: Vec<f64> = sims.iter().flat_map(|f| pick(f).iter().copied()).collect();
    let windows: Vec<&[f64]> = sims.iter().map(pick).collect();
    let inflation = ks_inflation(&windows);
    let ks = ks_two_sample(recorded, &pooled).map(|(d, _)| {
        let l = ks_lambda(d, recorded.len(), pooled.len());
        (d, kolmogorov_q(l / inflation))
    });
    KsRow {
        name: name.to_string(),
        recorded_n: recorded.len(),
        simulated_n: pooled.len(),
        ks_d: ks.map(|k| k.0),
        p_value: ks.map(|k| k.1),
        inflation,
        verdict: match ks {
            _ if !has.has(needs) => Verdict::NotRecorded,
            Some((_, p)) if p >= KS_ALPHA => Verdict::Pass,
            None if recorded.is_empty() == pooled.is_empty() => Verdict::Pass,
            _ => Verdict::Warn,
        },
        recorded_sample: thin(recorded),
        simulated_sample: thin(&pooled),
    }
}

/// Compares regime `label` of `rec` with simulated windows: window `j` is
/// `scenarios[j % scenarios.len()]` (a calibration draw) on `seeds[j]`.
/// One scenario is the plain point calibration.
pub fn validate(
    rec: &Recording,
    label: &str,
    scenarios: &[Scenario],
    seeds: &[u64],
) -> Result<Validation, SimError> {
    validate_with(rec, label, scenarios, seeds, &|| ())
}

/// `validate`, calling `tick` as each simulated window finishes (from the
/// rayon workers, in any order): a progress display's hook.
pub fn validate_with(
    rec: &Recording,
    label: &str,
    scenarios: &[Scenario],
    seeds: &[u64],
    tick: &(dyn Fn() + Sync),
) -> Result<Validation, SimError> {
    validate_written(rec, label, scenarios, seeds, false, tick)
}

/// `validate_with`, a whole-MB recording's rss_mb read as truncated over
/// whole-MB limits where `floor` says (as the calibration read it:
/// `Structure::whole_mb_floor`), else rounded.
pub fn validate_written(
    rec: &Recording,
    label: &str,
    scenarios: &[Scenario],
    seeds: &[u64],
    floor: bool,
    tick: &(dyn Fn() + Sync),
) -> Result<Validation, SimError> {
    assert!(!scenarios.is_empty(), "validation needs a scenario");
    let w = window(rec);
    let views = regimes::split(rec, (w.start_s, w.end_s));
    let v = view(&views, Some(label)).or_else(|| view(&views, None));
    let recorded = v.map_or_else(Figures::default, |v| figures(v, v.hours()));
    let has = Recorded::of(rec);
    let sims: Vec<Figures> = seeds
        .par_iter()
        .enumerate()
        .map(|(j, s)| {
            let f = simulate(
                &scenarios[j % scenarios.len()],
                *s,
                Written::whole_mb(has.whole_mb, floor),
            );
            tick();
            f
        })
        .collect::<Result<_, _>>()?;
    let hours = scenarios[0].duration.as_secs_f64() / 3600.0;
    let figures: Vec<FigureRow> = recorded
        .scalars
        .iter()
        .zip(SCALARS)
        .enumerate()
        .map(|(i, ((name, r), (_, needs)))| {
            let xs: Vec<f64> = sims.iter().filter_map(|f| f.scalars[i].1).collect();
            figure_row(name, *r, &xs, hours, has.has(needs))
        })
        .collect();
    let [rpw, margin, gaps] = DISTRIBUTIONS;
    let distributions = vec![
        ks_row(rpw, has, &recorded.requests_per_worker, &sims, |f| {
            &f.requests_per_worker
        }),
        ks_row(margin, has, &recorded.margins_mb, &sims, |f| &f.margins_mb),
        ks_row(gaps, has, &recorded.same_gaps_s, &sims, |f| &f.same_gaps_s),
    ];
    let verdicts = || {
        let f = figures.iter().map(|r| (&r.name, r.verdict));
        f.chain(distributions.iter().map(|r| (&r.name, r.verdict)))
    };
    let warned: Vec<String> = verdicts()
        .filter(|(_, v)| *v == Verdict::Warn)
        .map(|(n, _)| n.clone())
        .collect();
    let unrecorded = verdicts()
        .filter(|(_, v)| *v == Verdict::NotRecorded)
        .count();
    let judged = figures.len() + distributions.len() - unrecorded;
    let aside = if unrecorded > 0 {
        format!(" ({unrecorded} not recorded)")
    } else {
        String::new()
    };
    let reproduces = warned.is_empty();
    let verdict = if reproduces {
        format!(
            "the calibrated scenario reproduces its window: {judged} of {judged} rows pass{aside}"
        )
    } else {
        format!(
            "the calibrated scenario does NOT reproduce its window: {} of {judged} rows warn \
             ({}){aside}",
            warned.len(),
            warned.join(", ")
        )
    };
    Ok(Validation {
        schema: SCHEMA,
        regime: label.to_string(),
        hours,
        seeds: seeds.to_vec(),
        draws: scenarios.len(),
        resolution_mb: has.whole_mb.then_some(1.0),
        figures,
        distributions,
        rules: rules(Written::whole_mb(has.whole_mb, floor)),
        reproduces,
        verdict,
        structure: None,
    })
}

/// The names of the rows that warn.
pub fn warned(v: &Validation) -> Vec<String> {
    let f = v.figures.iter().map(|r| (&r.name, r.verdict));
    f.chain(v.distributions.iter().map(|r| (&r.name, r.verdict)))
        .filter(|(_, v)| *v == Verdict::Warn)
        .map(|(n, _)| n.clone())
        .collect()
}

fn rules(written: Written) -> Vec<String> {
    let mut rules = vec![
        format!(
            "figure: pass when |recorded - mean| <= t({:.3}, n - 1) sd sqrt(1 + 1/n) + {:.0}% of \
             the mean: the {:.0}% prediction interval of one new window (mean and sd over the n \
             seeds, each a window as long as the recording's; for a count per hour, sd is at \
             least the Poisson sd of the mean count)",
            0.5 + COVERAGE / 2.0,
            MEAN_SLACK * 100.0,
            COVERAGE * 100.0
        ),
        format!(
            "distribution: pass when the two-sample Kolmogorov-Smirnov p-value (recorded vs \
             the seeds pooled) is >= {KS_ALPHA}, the statistic first divided by its inflation: \
             how much wider it spreads between the simulated windows, each against the others \
             pooled, than between independent samples (at least 1)"
        ),
        "not recorded: the recording has no field or event the row needs (canaries, pressure, \
         requests, RSS, instances): shown, not judged"
            .to_string(),
    ];
    match written {
        Written::Fine => {}
        Written::Round => rules.push(
            "resolution: the recording's rss_mb and limit_mb are whole MB, so the simulated \
             ones were rounded to whole MB"
                .to_string(),
        ),
        Written::Floor => rules.push(
            "resolution: the recording's rss_mb and limit_mb are whole MB, read as truncated \
             rss_mb over whole-MB limits (as the calibration read them), so the simulated \
             limits were rounded and each margin over the limit floored"
                .to_string(),
        ),
    }
    rules
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn t_quantiles_match_the_tables() {
        for (df, want) in [
            (5, 4.032),
            (11, 3.106),
            (20, 2.845),
            (31, 2.744),
            (100, 2.626),
        ] {
            let t = t_quantile(0.995, df);
            assert!(
                (t - want).abs() < 0.005,
                "t(0.995, {df}) = {t}, table {want}"
            );
        }
        assert!((t_quantile(0.975, 30) - 2.042).abs() < 0.002);
        assert!((normal_quantile(0.995) - 2.575_829).abs() < 1e-5);
        assert_eq!(t_quantile(0.995, 0), f64::INFINITY);
    }

    /// The rule is the 99% prediction interval of one new window: t on
    /// n - 1 degrees of freedom, times sd sqrt(1 + 1/n), plus the slack.
    #[test]
    fn the_band_is_a_prediction_interval() {
        let b = band("peak RSS (MB)", 100.0, 10.0, 32, 24.0);
        let want = t_quantile(0.995, 31) * 10.0 * (1.0 + 1.0 / 32.0f64).sqrt() + 5.0;
        assert!((b - want).abs() < 1e-12, "{b} vs {want}");
        assert!(b > 2.5 * 10.0 + 5.0 + 2.0, "wider than the old 2.5 sd: {b}");
        // Counts per hour: at least the Poisson sd of the mean count.
        let b = band("retry_ok per hour", 0.0, 0.0, 32, 12.0);
        assert!(b > 0.0, "a rare count of zero still has a band");
    }
}
