//! Calibration: fit the workload of a scenario to one limit regime of a
//! recording, so that the simulator can be asked what the recorded fleet
//! would do under another policy.
//!
//! What a recording identifies, and how (each value with a standard error:
//! a bootstrap over the regime's recycles, seeded so reruns agree, unless
//! said otherwise):
//!
//! - **Limits.** Each worker's `limit_mb` is uniform on `[base - jitter,
//!   base + jitter]`; the maximum-likelihood bounds are the sample min and
//!   max, which sit inside the true bounds by `range / (n - 1)` on average,
//!   so each is widened by that (the unbiased estimator of a uniform's ends);
//!   their standard errors are in closed form.
//! - **Boot RSS.** Not from the youngest recycles: every recycle is at or
//!   over its limit (>= base - jitter), whatever its age, so their RSS says
//!   where the limit is, not where the worker started. A worker that was
//!   held (`recycle_held`) and later recycled has two `(requests, rss)`
//!   points on its own growth line; the line's value at zero requests, less
//!   the scenario's warm-up, is its boot RSS. The median over workers
//!   ignores the few lines bent by a step between the two points. With no
//!   held worker the scenario's value is kept and the report says so.
//! - **Leak velocity.** Per recycle, the effective velocity `(rss - boot -
//!   warm-up) / requests` (the scenario's warm-up and step parameters are
//!   kept: a recycle row cannot separate them from the velocity), then a
//!   lognormal by maximum likelihood (Nelder-Mead on the negative
//!   log-likelihood, argmin); the steps' mean rate is taken off its mean. Recycles in a window are births in a window,
//!   one independent draw each, so the sample is not size-biased; the slow
//!   workers still alive at the window's end are missing (censored), which
//!   biases the mean up by a few percent on a day.
//! - **Traffic.** Every request is served by one worker, and every worker
//!   recycled in the window served (nearly) all its requests in it, so the
//!   fleet's mean rate is the sum of requests over recycles / the regime's
//!   span. The scenario's profile is kept and `workload.rps` scaled so its
//!   mean over the regime's hours (window start = the scenario's
//!   `start_hour`) equals that rate.
//! - **Hard ceiling.** Recorded (`hard_limit_mb`, the regime's key): set,
//!   not fitted.
//! - **Sampling interval.** The median interval between one worker's
//!   consecutive holds (the analysis's inferred tick).

use super::analyse::{infer, regimes};
use super::recording::{Event, Recording};
use crate::Scenario;
use crate::metrics::EventKind;
use crate::scenario::{Override, RawScenario};
use crate::traffic::RateProfile;
use argmin::core::{CostFunction, Executor};
use argmin::solver::neldermead::NelderMead;
use rand::{Rng, SeedableRng};
use serde::Serialize;

/// Bootstrap resamples per standard error.
pub const BOOTSTRAP: usize = 200;

#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum CalibrateError {
    #[error("no limit regime with recycles recording rss_mb, limit_mb and requests")]
    NoRecycles,
    #[error("regime {0}: only {1} usable recycles; calibration needs at least {MIN_ROWS}")]
    TooFew(String, usize),
    #[error("the lognormal fit failed: {0}")]
    Fit(String),
}

/// Fewer usable recycles than this and nothing is fitted.
pub const MIN_ROWS: usize = 8;

/// One fitted scenario value.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Fit {
    /// The dotted scenario key it overrides.
    pub key: String,
    pub value: f64,
    /// Standard error; `None` when the value was not identifiable.
    pub se: Option<f64>,
    pub how: String,
}

#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Calibration {
    pub regime: String,
    pub start_s: f64,
    pub end_s: f64,
    pub recycles: usize,
    /// Recycles with rss, limit and requests (the velocity sample).
    pub rows: usize,
    pub fits: Vec<Fit>,
    /// The lognormal of the velocity: `ln v ~ N(mu, sigma^2)`.
    pub velocity_mu: f64,
    pub velocity_sigma: f64,
    /// The scenario values set but not fitted: the regime's duration and
    /// start hour, and its recorded hard ceiling.
    pub fixed: Vec<(String, f64)>,
    pub notes: Vec<String>,
}

impl Calibration {
    pub fn get(&self, key: &str) -> Option<&Fit> {
        self.fits.iter().find(|f| f.key == key)
    }

    /// The fitted values as `--set` overrides, plus the leak distribution
    /// and the window's start hour and duration.
    pub fn overrides(&self) -> Vec<Override> {
        let mut out = vec![Override {
            key: "fleet.leak.distribution".into(),
            value: toml::Value::String("lognormal".into()),
        }];
        let num = |k: &str, v: f64| Override {
            key: k.to_string(),
            value: toml::Value::Float(v),
        };
        for f in &self.fits {
            out.push(num(&f.key, round(f.value, &f.key)));
        }
        for (k, v) in &self.fixed {
            out.push(num(k, *v));
        }
        out
    }
}

/// Rounds to what a scenario file would say (MB to 0.1, velocities to 5
/// significant digits).
fn round(v: f64, key: &str) -> f64 {
    let digits = if key.ends_with("_mb") || key.ends_with("_s") || key.ends_with("_h") {
        1
    } else {
        let mag = v.abs().max(1e-12).log10().floor() as i32;
        (4 - mag).max(0)
    };
    let p = 10f64.powi(digits);
    (v * p).round() / p
}

/// The regime to calibrate: the longest span, the latest on a tie.
fn pick<'a>(views: &'a [regimes::RegimeView<'a>]) -> Option<&'a regimes::RegimeView<'a>> {
    views
        .iter()
        .filter(|v| !v.recycles.is_empty())
        .rev()
        .max_by(|a, b| (a.end_s - a.start_s).total_cmp(&(b.end_s - b.start_s)))
}

/// One usable recycle: requests served, RSS and limit.
#[derive(Clone, Copy, Debug)]
struct Row {
    requests: f64,
    rss_mb: f64,
    limit_mb: f64,
}

fn rows(v: &regimes::RegimeView) -> Vec<Row> {
    v.recycles
        .iter()
        .filter_map(|e| {
            Some(Row {
                requests: e.requests.filter(|n| *n > 0)? as f64,
                rss_mb: e.rss_mb?,
                limit_mb: e.limit_mb?,
            })
        })
        .collect()
}

/// A growth line: `(requests, rss)` at a hold and at the recycle.
type Line = ((f64, f64), (f64, f64));

/// Per worker generation, its earliest hold and its recycle.
fn lines(v: &regimes::RegimeView) -> Vec<Line> {
    let id = |e: &Event| (e.instance.clone(), e.worker.clone(), e.generation);
    let point = |e: &Event| Some((e.requests? as f64, e.rss_mb?));
    v.recycles
        .iter()
        .filter(|r| r.worker.is_some())
        .filter_map(|r| {
            let end = point(r)?;
            let first = v
                .events
                .iter()
                .filter(|e| e.is(EventKind::RecycleHeld) && id(e) == id(r) && e.t_s <= r.t_s)
                .filter_map(|e| point(e))
                .find(|p| end.0 - p.0 >= 5.0)?;
            Some((first, end))
        })
        .collect()
}

/// The scenario's expected non-velocity growth after `n` requests.
fn extra_growth(sc: &Scenario, n: f64) -> f64 {
    sc.fleet.leak.expected_growth(0.0, n)
}

fn boot_of(sc: &Scenario, l: &Line) -> f64 {
    let ((n0, r0), (n1, r1)) = *l;
    let slope = ((r1 - extra_growth(sc, n1)) - (r0 - extra_growth(sc, n0))) / (n1 - n0);
    r1 - extra_growth(sc, n1) - slope * n1
}

fn median(xs: &mut [f64]) -> f64 {
    xs.sort_by(f64::total_cmp);
    let n = xs.len();
    if n % 2 == 1 {
        xs[n / 2]
    } else {
        (xs[n / 2 - 1] + xs[n / 2]) / 2.0
    }
}

/// Uniform `[lo, hi]` from a sample: min and max widened by `range / (n - 1)`.
fn uniform(limits: &[f64]) -> (f64, f64) {
    let lo = limits.iter().copied().fold(f64::INFINITY, f64::min);
    let hi = limits.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    let pad = (hi - lo) / (limits.len().max(2) - 1) as f64;
    ((lo + hi) / 2.0, (hi - lo) / 2.0 + pad)
}

/// Standard errors of the uniform's midpoint and half-width from `n`
/// draws over width `w`, in closed form (a bootstrap of a sample's extremes
/// underestimates them): the midpoint of min and max has variance
/// `w^2 / (2 (n+1) (n+2))`; the range over `w` is Beta(n-1, 2).
fn uniform_se(w: f64, n: usize) -> (f64, f64) {
    let n = n.max(2) as f64;
    let mid = w / (2.0 * (n + 1.0) * (n + 2.0)).sqrt();
    let range_sd = w * (2.0 * (n - 1.0) / ((n + 1.0).powi(2) * (n + 2.0))).sqrt();
    (mid, range_sd * (n + 1.0) / (2.0 * (n - 1.0)))
}

/// The lognormal negative log-likelihood of positive values, over
/// `(mu, ln sigma)`.
struct LognormalNll<'a> {
    ln_x: &'a [f64],
}

impl CostFunction for LognormalNll<'_> {
    type Param = Vec<f64>;
    type Output = f64;
    fn cost(&self, p: &Vec<f64>) -> Result<f64, argmin::core::Error> {
        let (mu, sigma) = (p[0], p[1].exp());
        let n = self.ln_x.len() as f64;
        let ss: f64 = self.ln_x.iter().map(|l| (l - mu).powi(2)).sum();
        let sum_ln: f64 = self.ln_x.iter().sum();
        Ok(n * sigma.ln() + sum_ln + ss / (2.0 * sigma * sigma))
    }
}

/// Maximum-likelihood lognormal `(mu, sigma)` by Nelder-Mead.
pub fn fit_lognormal(x: &[f64]) -> Result<(f64, f64), CalibrateError> {
    let ln_x: Vec<f64> = x.iter().filter(|v| **v > 0.0).map(|v| v.ln()).collect();
    if ln_x.len() < 2 {
        return Err(CalibrateError::Fit("fewer than 2 positive values".into()));
    }
    let m = ln_x.iter().sum::<f64>() / ln_x.len() as f64;
    let s = (ln_x.iter().map(|l| (l - m).powi(2)).sum::<f64>() / ln_x.len() as f64)
        .sqrt()
        .max(1e-3);
    // Start away from the answer (the closed form) so the solver does the work.
    let start = vec![m + 0.5, (s * 1.5).ln()];
    let simplex = vec![
        start.clone(),
        vec![start[0] + 0.3, start[1]],
        vec![start[0], start[1] + 0.3],
    ];
    let nm = NelderMead::new(simplex)
        .with_sd_tolerance(1e-10)
        .map_err(|e| CalibrateError::Fit(e.to_string()))?;
    let res = Executor::new(LognormalNll { ln_x: &ln_x }, nm)
        .configure(|st| st.max_iters(500))
        .run()
        .map_err(|e| CalibrateError::Fit(e.to_string()))?;
    let p = res
        .state
        .best_param
        .ok_or_else(|| CalibrateError::Fit("no best point".into()))?;
    Ok((p[0], p[1].exp()))
}

/// The scenario's warm-up growth after `n` requests (no velocity, no steps).
fn warmup(sc: &Scenario, n: f64) -> f64 {
    let l = &sc.fleet.leak;
    l.warmup_mb * (1.0 - (1.0 - l.warmup_rate).powf(n))
}

/// Effective velocity per row (steps included), given the boot RSS.
fn velocities(sc: &Scenario, rows: &[Row], boot: f64) -> Vec<f64> {
    rows.iter()
        .map(|r| (r.rss_mb - boot - warmup(sc, r.requests)) / r.requests)
        .filter(|v| *v > 0.0)
        .collect()
}

/// The velocity's mean and cv once the scenario's steps (`step_rate` MB per
/// request on average) are taken out of the effective velocity: the mean
/// drops by the step rate (floored at a tenth of it), the spread across
/// workers is kept. Exact without steps; with them, the step noise inside a
/// worker's life is counted as spread across workers (cv slightly high).
fn without_steps((mean, cv): (f64, f64), step_rate: f64) -> (f64, f64) {
    let v = (mean - step_rate).max(mean / 10.0);
    (v, cv * mean / v)
}

/// Mean and cv of a lognormal.
fn moments(mu: f64, sigma: f64) -> (f64, f64) {
    (
        (mu + sigma * sigma / 2.0).exp(),
        ((sigma * sigma).exp() - 1.0).sqrt(),
    )
}

/// Standard deviation of `f` over bootstrap resamples of `xs`.
fn bootstrap<T: Copy>(
    xs: &[T],
    rng: &mut rand_xoshiro::Xoshiro256PlusPlus,
    mut f: impl FnMut(&[T]) -> Option<Vec<f64>>,
) -> Vec<Option<f64>> {
    let mut draws: Vec<Vec<f64>> = Vec::new();
    let mut sample = Vec::with_capacity(xs.len());
    for _ in 0..BOOTSTRAP {
        sample.clear();
        sample.extend((0..xs.len()).map(|_| xs[rng.random_range(0..xs.len())]));
        if let Some(d) = f(&sample) {
            draws.push(d);
        }
    }
    let k = draws.first().map_or(0, Vec::len);
    (0..k)
        .map(|j| {
            let n = draws.len() as f64;
            (n >= 2.0).then(|| {
                let m = draws.iter().map(|d| d[j]).sum::<f64>() / n;
                (draws.iter().map(|d| (d[j] - m).powi(2)).sum::<f64>() / (n - 1.0)).sqrt()
            })
        })
        .collect()
}

/// The profile's mean over the regime's hours per unit of `workload.rps`.
fn profile_factor(sc: &Scenario, start_hour: f64, hours: f64) -> f64 {
    let dur = crate::engine::time::SimTime::from_secs_f64(hours * 3600.0);
    match &sc.workload.profile {
        RateProfile::Diurnal {
            amplitude,
            peak_hour,
            ..
        } => RateProfile::Diurnal {
            mean_rps: 1.0,
            amplitude: *amplitude,
            peak_hour: *peak_hour,
            start_hour,
        }
        .mean_rate(dur),
        _ => 1.0,
    }
}

/// Fits `base`'s workload to the longest limit regime of `rec`.
pub fn calibrate(
    rec: &Recording,
    base: &Scenario,
    seed: u64,
) -> Result<Calibration, CalibrateError> {
    let w = super::analyse::window(rec);
    let views = regimes::split(rec, (w.start_s, w.end_s));
    let v = pick(&views).ok_or(CalibrateError::NoRecycles)?;
    let rows = rows(v);
    if rows.len() < MIN_ROWS {
        return Err(CalibrateError::TooFew(v.key.label(), rows.len()));
    }
    let mut f = Fitter {
        base,
        rng: rand_xoshiro::Xoshiro256PlusPlus::seed_from_u64(seed),
        fits: Vec::new(),
        notes: Vec::new(),
    };
    f.limits(&rows);
    let boot = f.boot(v);
    let (mu, sigma) = f.velocity(v, &rows, boot)?;
    let start_hour = match &base.workload.profile {
        RateProfile::Diurnal { start_hour, .. } => {
            (start_hour + (v.start_s - w.start_s) / 3600.0).rem_euclid(24.0)
        }
        _ => 0.0,
    };
    let hours = f.traffic(v, start_hour);
    f.tick(v);

    let mut fixed = vec![("run.duration_h".to_string(), round(hours, "_h"))];
    if let Some(h) = v.key.hard_limit_mb {
        fixed.push(("policy.hard_limit_mb".into(), h));
    }
    if matches!(base.workload.profile, RateProfile::Diurnal { .. }) {
        fixed.push((
            "workload.start_hour".into(),
            (start_hour * 100.0).round() / 100.0,
        ));
    }
    Ok(Calibration {
        regime: v.key.label(),
        start_s: v.start_s,
        end_s: v.end_s,
        recycles: v.recycles.len(),
        rows: rows.len(),
        fits: f.fits,
        velocity_mu: mu,
        velocity_sigma: sigma,
        fixed,
        notes: f.notes,
    })
}

/// The fits so far, the bootstrap's stream and the base scenario.
struct Fitter<'a> {
    base: &'a Scenario,
    rng: rand_xoshiro::Xoshiro256PlusPlus,
    fits: Vec<Fit>,
    notes: Vec<String>,
}

impl Fitter<'_> {
    fn push(&mut self, key: &str, value: f64, se: Option<f64>, how: String) {
        self.fits.push(Fit {
            key: key.into(),
            value,
            se,
            how,
        });
    }

    fn limits(&mut self, rows: &[Row]) {
        let limits: Vec<f64> = rows.iter().map(|r| r.limit_mb).collect();
        let (base_mb, jitter_mb) = uniform(&limits);
        let se = uniform_se(2.0 * jitter_mb, limits.len());
        let range = format!(
            "limit_mb of {} recycles, min/max widened by range/(n-1)",
            limits.len()
        );
        let how = format!("midpoint of the uniform fitted to {range}");
        self.push("policy.base_limit_mb", base_mb, Some(se.0), how);
        let how = format!("half-width of the uniform fitted to {range}");
        self.push("policy.jitter_mb", jitter_mb, Some(se.1), how);
    }

    fn boot(&mut self, v: &regimes::RegimeView) -> f64 {
        let base = self.base;
        let ls = lines(v);
        if ls.len() < 2 {
            let kept = base.fleet.boot_rss_mb;
            self.notes.push(format!(
                "boot RSS not identifiable ({} held-then-recycled workers): kept the scenario's \
                 {kept:.1} MB",
                ls.len()
            ));
            let how = "not identifiable from this recording: the scenario's value".into();
            self.push("fleet.boot_rss_mb", kept, None, how);
            return kept;
        }
        let mut b: Vec<f64> = ls.iter().map(|l| boot_of(base, l)).collect();
        let se = bootstrap(&ls, &mut self.rng, |s| {
            let mut b: Vec<f64> = s.iter().map(|l| boot_of(base, l)).collect();
            Some(vec![median(&mut b)])
        });
        let boot = median(&mut b);
        let how = format!(
            "median intercept of {} workers' growth lines (a hold and the recycle), less the \
             scenario's warm-up",
            ls.len()
        );
        self.push("fleet.boot_rss_mb", boot, se[0], how);
        boot
    }

    fn velocity(
        &mut self,
        v: &regimes::RegimeView,
        rows: &[Row],
        boot: f64,
    ) -> Result<(f64, f64), CalibrateError> {
        let vs = velocities(self.base, rows, boot);
        if vs.len() < MIN_ROWS {
            return Err(CalibrateError::TooFew(v.key.label(), vs.len()));
        }
        if vs.len() < rows.len() {
            self.notes.push(format!(
                "{} recycles grew less than the scenario's warm-up: left out of the velocity fit",
                rows.len() - vs.len()
            ));
        }
        let leak = &self.base.fleet.leak;
        let step_rate = leak.step_probability * leak.step_mean_mb;
        let (mu, sigma) = fit_lognormal(&vs)?;
        let (mean, cv) = without_steps(moments(mu, sigma), step_rate);
        let se = bootstrap(&vs, &mut self.rng, |s| {
            let (m, sd) = fit_lognormal(s).ok()?;
            let (mean, cv) = without_steps(moments(m, sd), step_rate);
            Some(vec![mean, cv])
        });
        let how = format!(
            "lognormal MLE (Nelder-Mead) of (rss - boot - warm-up) / requests over {} recycles: \
             mu {mu:.3}, sigma {sigma:.3}, mean {:.4}, less the scenario's steps ({step_rate:.4} \
             MB/request), same sd",
            vs.len(),
            moments(mu, sigma).0
        );
        self.push("fleet.leak.mean_mb_per_request", mean, se[0], how.clone());
        self.push("fleet.leak.cv", cv, se[1], how);
        Ok((mu, sigma))
    }

    /// Fits `workload.rps`; returns the regime's hours.
    fn traffic(&mut self, v: &regimes::RegimeView, start_hour: f64) -> f64 {
        let span = (v.end_s - v.start_s).max(1.0);
        let hours = span / 3600.0;
        let factor = profile_factor(self.base, start_hour, hours);
        let reqs: Vec<f64> = v
            .recycles
            .iter()
            .filter_map(|e| e.requests.map(|n| n as f64))
            .collect();
        let rate = |s: &[f64]| s.iter().sum::<f64>() / span / factor;
        let se = bootstrap(&reqs, &mut self.rng, |s| Some(vec![rate(s)]));
        let how = format!(
            "{:.0} requests over {} recycles / {span:.0} s, divided by the profile's mean over \
             those hours ({factor:.3} x rps)",
            reqs.iter().sum::<f64>(),
            reqs.len()
        );
        self.push("workload.rps", rate(&reqs), se[0], how);
        if matches!(self.base.workload.profile, RateProfile::Series { .. }) {
            self.notes
                .push("series profile: workload.rps set, the series itself not rescaled".into());
        }
        hours
    }

    fn tick(&mut self, v: &regimes::RegimeView) {
        let tick = infer::infer(v, None).tick_s;
        match tick.inferred {
            Some(t) => {
                let how = format!("{} (no spread: sampling is a timer)", tick.how);
                self.push("policy.tick_s", t, None, how);
            }
            None => self
                .notes
                .push(format!("tick: {}; kept the scenario's", tick.how)),
        }
    }
}

/// `raw` as TOML, with a comment after each fitted key giving the estimate,
/// its standard error and how it was fitted.
pub fn calibrated_toml(raw: &RawScenario, cal: &Calibration) -> Result<String, toml::ser::Error> {
    let text = toml::to_string(raw)?;
    let mut out = format!(
        "# Calibrated by `fleetsim replay --calibrate` to regime {} ({:.0}-{:.0} s, {} recycles).\n\
         # Fitted values carry `# fitted: estimate +- standard error; how`.\n",
        cal.regime, cal.start_s, cal.end_s, cal.recycles
    );
    let mut section = String::new();
    for line in text.lines() {
        out.push_str(line);
        let t = line.trim();
        if t.starts_with('[') {
            section = t.trim_matches(|c| c == '[' || c == ']').to_string();
        } else if let Some((k, _)) = t.split_once(" = ") {
            let key = if section.is_empty() {
                k.to_string()
            } else {
                format!("{section}.{k}")
            };
            if let Some(f) = cal.get(&key) {
                let se = f.se.map_or("n/a".into(), |s| format!("{s:.4}"));
                out.push_str(&format!("  # fitted: {:.4} +- {se}; {}", f.value, f.how));
            }
        }
        out.push('\n');
    }
    Ok(out)
}

/// The calibration as a text table: key, estimate, standard error, how.
pub fn render(cal: &Calibration) -> String {
    let mut o = format!(
        "\ncalibration: regime {} ({:.0}-{:.0} s, {} recycles, {} with rss, limit and requests)\n",
        cal.regime, cal.start_s, cal.end_s, cal.recycles, cal.rows
    );
    o += &format!("  {:<32} {:>10} {:>10}  how\n", "key", "estimate", "+- se");
    for f in &cal.fits {
        let se = f.se.map_or("n/a".into(), |s| format!("{s:.4}"));
        o += &format!("  {:<32} {:>10.4} {:>10}  {}\n", f.key, f.value, se, f.how);
    }
    for (k, v) in &cal.fixed {
        o += &format!("  {k:<32} {v:>10.2} {:>10}  the regime's own\n", "set");
    }
    for n in &cal.notes {
        o += &format!("  note: {n}\n");
    }
    o
}
