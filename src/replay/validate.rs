//! Validation of a calibration: simulate the calibrated scenario for the
//! recording's duration over several seeds, read each run's events back
//! through the same import and regime split as the recording, and compare
//! figure by figure.
//!
//! Rules (stated in the output too):
//! - a figure passes when the recorded value lies within 2.5 standard
//!   deviations of the seeds' mean, plus 5% of the mean: each seed
//!   simulates a window as long as the recording's, so the spread between
//!   seeds is the noise one recorded window carries (for counts per hour,
//!   at least the Poisson spread of the mean count: eight seeds of a rare
//!   event often all read 0);
//! - a distribution passes when the two-sample Kolmogorov-Smirnov test of
//!   the recorded sample against the seeds' pooled samples gives p >= 0.01.
//!
//! A calibration that does not reproduce its window says so: the verdict
//! names every row that warns.
//!
//! Seeds run in parallel (rayon); results come back in seed order, so the
//! output does not depend on the thread count.

use super::analyse::regimes::{self, RegimeView};
use super::analyse::window;
use super::import;
use super::recording::Recording;
use crate::metrics::summary::{LOW_MARGIN_MB, YOUNG_REQUESTS};
use crate::metrics::{CsvObserver, EventKind, summary::quantile_sorted};
use crate::{Scenario, Sim, SimError};
use rayon::prelude::*;
use serde::Serialize;

/// A figure passes within this many standard deviations between seeds...
pub const SD_TOLERANCE: f64 = 2.5;
/// ...plus this fraction of the seeds' mean.
pub const MEAN_SLACK: f64 = 0.05;
/// A distribution passes when the KS p-value is at least this.
pub const KS_ALPHA: f64 = 0.01;

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Verdict {
    Pass,
    Warn,
}

impl Verdict {
    pub fn label(self) -> &'static str {
        match self {
            Verdict::Pass => "pass",
            Verdict::Warn => "WARN",
        }
    }
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
    pub p_value: Option<f64>,
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
    pub regime: String,
    pub hours: f64,
    pub seeds: Vec<u64>,
    pub figures: Vec<FigureRow>,
    pub distributions: Vec<KsRow>,
    pub rules: Vec<String>,
    pub reproduces: bool,
    pub verdict: String,
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
    let scalars = vec![
        ("recycles per hour", per_h(v.recycles.len())),
        ("requests per worker p10", q(&rpw, 0.1)),
        ("requests per worker median", q(&rpw, 0.5)),
        ("requests per worker p90", q(&rpw, 0.9)),
        ("low-margin fraction (< 25 MB)", frac(low, margins.len())),
        ("young fraction (< 400 requests)", frac(young, rpw.len())),
        (
            "peak RSS (MB)",
            v.recycles.iter().filter_map(|e| e.rss_mb).reduce(f64::max),
        ),
        ("same-instance gap median (s)", q(&same, 0.5)),
        ("cross-instance gap median (s)", q(&cross, 0.5)),
        (
            "pressure recycles per hour",
            per_h(v.recycles.iter().filter(|e| e.pressure_true()).count()),
        ),
        ("retry_ok per hour", per_h(count(EventKind::RetryOk))),
        (
            "fetch_failed per hour",
            per_h(count(EventKind::FetchFailed)),
        ),
    ];
    Figures {
        scalars,
        requests_per_worker: rpw,
        margins_mb: margins,
        same_gaps_s: same,
    }
}

/// The two-sample Kolmogorov-Smirnov statistic `D = sup |F_a - F_b|` and
/// its asymptotic p-value (the Kolmogorov distribution at
/// `(sqrt(ne) + 0.12 + 0.11 / sqrt(ne)) D`, `ne = n m / (n + m)`, as in
/// Numerical Recipes). `None` when a sample is empty.
pub fn ks_two_sample(a: &[f64], b: &[f64]) -> Option<(f64, f64)> {
    if a.is_empty() || b.is_empty() {
        return None;
    }
    let mut a = a.to_vec();
    let mut b = b.to_vec();
    a.sort_by(f64::total_cmp);
    b.sort_by(f64::total_cmp);
    let (n, m) = (a.len() as f64, b.len() as f64);
    let (mut i, mut j, mut d) = (0, 0, 0.0f64);
    while i < a.len() && j < b.len() {
        let x = a[i].min(b[j]);
        while i < a.len() && a[i] <= x {
            i += 1;
        }
        while j < b.len() && b[j] <= x {
            j += 1;
        }
        d = d.max((i as f64 / n - j as f64 / m).abs());
    }
    let ne = n * m / (n + m);
    let lambda = (ne.sqrt() + 0.12 + 0.11 / ne.sqrt()) * d;
    Some((d, kolmogorov_q(lambda)))
}

/// `Q(l) = 2 sum_{k>=1} (-1)^(k-1) exp(-2 k^2 l^2)`, the Kolmogorov
/// distribution's tail.
pub fn kolmogorov_q(l: f64) -> f64 {
    if l < 0.2 {
        return 1.0;
    }
    let mut sum = 0.0;
    for k in 1..=100 {
        let k = k as f64;
        let term = (-2.0 * k * k * l * l).exp();
        sum += if k as u64 % 2 == 1 { term } else { -term };
        if term < 1e-12 {
            break;
        }
    }
    (2.0 * sum).clamp(0.0, 1.0)
}

/// The view of `rec` labelled `label`, or the one with the most recycles.
fn view<'a>(views: &'a [RegimeView<'a>], label: Option<&str>) -> Option<&'a RegimeView<'a>> {
    match label {
        Some(l) => views.iter().find(|v| v.key.label() == l),
        None => views.iter().max_by_key(|v| v.recycles.len()),
    }
}

/// Simulates `sc` on `seed` and returns its figures, read back as a recording.
pub fn simulate(sc: &Scenario, seed: u64) -> Result<Figures, SimError> {
    let (mut events, mut timeline) = (Vec::new(), Vec::new());
    let mut obs = CsvObserver::new(
        &mut events,
        &mut timeline,
        sc.policy.base_limit_mb,
        sc.policy.hard_limit_mb,
    );
    Sim::new(sc, seed, &mut obs).run()?;
    obs.finish().expect("in-memory writes succeed");
    let text = String::from_utf8(events).expect("the CSV writer writes UTF-8");
    let part = import::parse("simulated.csv", &text).expect("the simulator's CSV parses");
    let rec = Recording::assemble(vec![part]).expect("one file assembles");
    let w = window(&rec);
    let views = regimes::split(&rec, (0.0, w.end_s.max(sc.duration.as_secs_f64())));
    let hours = sc.duration.as_secs_f64() / 3600.0;
    Ok(view(&views, None).map_or_else(Figures::default, |v| figures(v, hours)))
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

fn figure_row(name: &str, recorded: Option<f64>, sims: &[f64], hours: f64) -> FigureRow {
    let ms = mean_sd(sims);
    let verdict = match (recorded, ms) {
        (Some(r), Some((m, sd)))
            if (r - m).abs()
                <= SD_TOLERANCE * spread(name, m, sd, hours) + MEAN_SLACK * m.abs() =>
        {
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

fn ks_row(name: &str, recorded: &[f64], sims: &[Figures], pick: fn(&Figures) -> &[f64]) -> KsRow {
    let pooled: Vec<f64> = sims.iter().flat_map(|f| pick(f).iter().copied()).collect();
    let ks = ks_two_sample(recorded, &pooled);
    KsRow {
        name: name.to_string(),
        recorded_n: recorded.len(),
        simulated_n: pooled.len(),
        ks_d: ks.map(|k| k.0),
        p_value: ks.map(|k| k.1),
        verdict: match ks {
            Some((_, p)) if p >= KS_ALPHA => Verdict::Pass,
            None if recorded.is_empty() == pooled.is_empty() => Verdict::Pass,
            _ => Verdict::Warn,
        },
        recorded_sample: thin(recorded),
        simulated_sample: thin(&pooled),
    }
}

/// Compares regime `label` of `rec` with `sc` simulated on `seeds`.
pub fn validate(
    rec: &Recording,
    label: &str,
    sc: &Scenario,
    seeds: &[u64],
) -> Result<Validation, SimError> {
    let w = window(rec);
    let views = regimes::split(rec, (w.start_s, w.end_s));
    let v = view(&views, Some(label)).or_else(|| view(&views, None));
    let recorded = v.map_or_else(Figures::default, |v| figures(v, v.hours()));
    let sims: Vec<Figures> = seeds
        .par_iter()
        .map(|s| simulate(sc, *s))
        .collect::<Result<_, _>>()?;
    let figures: Vec<FigureRow> = recorded
        .scalars
        .iter()
        .enumerate()
        .map(|(i, (name, r))| {
            let xs: Vec<f64> = sims.iter().filter_map(|f| f.scalars[i].1).collect();
            figure_row(name, *r, &xs, sc.duration.as_secs_f64() / 3600.0)
        })
        .collect();
    let distributions = vec![
        ks_row(
            "requests per worker",
            &recorded.requests_per_worker,
            &sims,
            |f| &f.requests_per_worker,
        ),
        ks_row("margin over limit (MB)", &recorded.margins_mb, &sims, |f| {
            &f.margins_mb
        }),
        ks_row(
            "same-instance gaps (s)",
            &recorded.same_gaps_s,
            &sims,
            |f| &f.same_gaps_s,
        ),
    ];
    let warned: Vec<String> = figures
        .iter()
        .filter(|r| r.verdict == Verdict::Warn)
        .map(|r| r.name.clone())
        .chain(
            distributions
                .iter()
                .filter(|r| r.verdict == Verdict::Warn)
                .map(|r| r.name.clone()),
        )
        .collect();
    let total = figures.len() + distributions.len();
    let reproduces = warned.is_empty();
    let verdict = if warned.is_empty() {
        format!("the calibrated scenario reproduces its window: {total} of {total} rows pass")
    } else {
        format!(
            "the calibrated scenario does NOT reproduce its window: {} of {total} rows warn ({})",
            warned.len(),
            warned.join(", ")
        )
    };
    Ok(Validation {
        regime: label.to_string(),
        hours: sc.duration.as_secs_f64() / 3600.0,
        seeds: seeds.to_vec(),
        figures,
        distributions,
        rules: vec![
            format!(
                "figure: pass when |recorded - mean| <= {SD_TOLERANCE} sd + {:.0}% of the mean \
                 (mean and sd over the seeds, each a window as long as the recording's; for a \
                 count per hour, sd is at least the Poisson sd of the mean count)",
                MEAN_SLACK * 100.0
            ),
            format!(
                "distribution: pass when the two-sample Kolmogorov-Smirnov p-value (recorded vs \
                 the seeds pooled) is >= {KS_ALPHA}"
            ),
        ],
        reproduces,
        verdict,
    })
}

fn num(v: Option<f64>) -> String {
    match v {
        None => "-".into(),
        Some(x) if x.abs() >= 100.0 => format!("{x:.0}"),
        Some(x) if x.abs() >= 1.0 => format!("{x:.2}"),
        Some(x) => format!("{x:.3}"),
    }
}

/// Recorded vs simulated, side by side, with the verdict per row.
pub fn render(v: &Validation) -> String {
    let mut o = format!(
        "\nvalidation: regime {} vs the calibrated scenario, {:.1} h x {} seeds ({}..{})\n",
        v.regime,
        v.hours,
        v.seeds.len(),
        v.seeds.first().unwrap_or(&0),
        v.seeds.last().unwrap_or(&0)
    );
    o += &format!(
        "  {:<34} {:>9} {:>9} {:>8} {:>17}\n",
        "figure", "recorded", "sim mean", "sim sd", "sim min..max"
    );
    for r in &v.figures {
        o += &format!(
            "  {:<34} {:>9} {:>9} {:>8} {:>17}  {}\n",
            r.name,
            num(r.recorded),
            num(r.simulated_mean),
            num(r.simulated_sd),
            format!("{}..{}", num(r.simulated_min), num(r.simulated_max)),
            r.verdict.label()
        );
    }
    o += &format!(
        "  {:<34} {:>9} {:>9} {:>8} {:>17}\n",
        "distribution (two-sample KS)", "n rec", "n sim", "D", "p"
    );
    for r in &v.distributions {
        o += &format!(
            "  {:<34} {:>9} {:>9} {:>8} {:>17}  {}\n",
            r.name,
            r.recorded_n,
            r.simulated_n,
            num(r.ks_d),
            num(r.p_value),
            r.verdict.label()
        );
    }
    for rule in &v.rules {
        o += &format!("  rule: {rule}\n");
    }
    o += &format!("  verdict: {}\n", v.verdict);
    o
}
