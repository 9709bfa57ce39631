//! The calibration's stages that simulate nothing: the regime and its
//! clock, window and ceiling; the rate profile; the boot statistics and
//! which parameters the fit moves; the candidate structures and their
//! starts. Each is read off the recording and the base scenario alone;
//! `stages.rs` holds the ones that simulate.

use super::active::Active;
use super::calibration::round;
use super::deferral::Deferral;
use super::fit::{self, Theta};
use super::moments::{self, Context, Moments, Sample, Shape, Traffic};
use super::observed::{Observed, ObservedBoot, ObservedVelocity};
use super::{CalibrateError, Candidate, MIN_ROWS, Memory, Structure, pick};
use crate::policy::Sampling;
use crate::replay::analyse::infer::{self, Estimate};
use crate::replay::analyse::regimes::RegimeView;
use crate::scenario::raw::RawLeak;
use crate::scenario::{Override, RawScenario, Scenario, ScenarioError};

/// A dotted key and its value, fixed for every candidate structure.
pub type Fixed = Vec<(String, toml::Value)>;

/// `fixed` as scenario overrides.
pub fn overrides(fixed: &Fixed) -> Vec<Override> {
    fixed
        .iter()
        .map(|(k, v)| Override {
            key: k.clone(),
            value: v.clone(),
        })
        .collect()
}

/// The base scenario as TOML text, loaded again under each structure's and
/// point's overrides.
pub struct BaseText(String);

impl BaseText {
    pub fn new(base: &RawScenario) -> Result<BaseText, CalibrateError> {
        toml::to_string(base)
            .map(BaseText)
            .map_err(|e| CalibrateError::Base(e.to_string()))
    }

    /// The base under `sets`; it reads no side file.
    pub fn load(&self, sets: &[Override]) -> Result<(RawScenario, Scenario), ScenarioError> {
        crate::scenario::load(&self.0, "<calibration base>", sets, &mut |p| {
            Err(format!("{p}: not read during calibration"))
        })
    }
}

/// The regime calibrated and its usable recycle rows.
pub struct Regime<'a> {
    pub view: &'a RegimeView<'a>,
    pub sample: Sample,
    /// Its whole-MB rss_mb read as truncated over whole-MB limits
    /// (`written::read`): simulated windows are written so.
    pub floor_mb: bool,
}

/// The regime to calibrate: the longest with recycles (`pick`), with at
/// least `MIN_ROWS` usable rows, or nothing is fitted.
pub fn regime<'a>(views: &'a [RegimeView<'a>]) -> Result<Regime<'a>, CalibrateError> {
    let view = pick(views).ok_or(CalibrateError::NoRecycles)?;
    let sample = moments::sample(view);
    if sample.rows.len() < MIN_ROWS {
        return Err(CalibrateError::TooFew(view.key.label(), sample.rows.len()));
    }
    Ok(Regime {
        view,
        sample,
        floor_mb: false,
    })
}

impl Regime<'_> {
    fn too_few(&self, rows: usize) -> CalibrateError {
        CalibrateError::TooFew(self.view.key.label(), rows)
    }

    /// The recording's statistics under `context`.
    pub fn moments(&self, context: &Context) -> Result<Moments, CalibrateError> {
        moments::moments(&self.sample, context, MIN_ROWS)
            .ok_or_else(|| self.too_few(self.sample.rows.len()))
    }
}

/// The regime's clock and the fleet's size.
pub struct Clock {
    /// The hour of day the regime starts at.
    pub start_hour: f64,
    pub span_s: f64,
    pub workers: f64,
    /// Workers to an instance.
    pub per_instance: f64,
    /// What the regime's holds say of the tick.
    pub tick: Estimate,
    /// The inferred tick, else the base's.
    pub tick_s: f64,
    /// `--fit-tick`: fit the tick with boot where the recording allows.
    pub fit_tick: bool,
    /// The recycler samples every Nth request (the base's sampling, or read
    /// off the rows' request counts: `analyse::every`): the overshoot is
    /// counted in halves of N, and the tick is not used.
    pub every_requests: Option<u64>,
    /// `every_requests` was read off the rows (the calibration sets it).
    pub every_read: bool,
    /// One worker an instance takes nearly every request (`fleet.accept`
    /// most_recent or first, read off the rows): the overshoot is counted
    /// at the instance's pace (`Context::pace_workers`).
    pub hot: bool,
}

impl Clock {
    /// The workers the rate is shared among at a recycling worker's pace:
    /// the fleet's, or one an instance where one takes nearly every
    /// request (`hot`).
    pub fn pace_workers(&self) -> f64 {
        if self.hot {
            (self.workers / self.per_instance.max(1.0)).max(1.0)
        } else {
            self.workers
        }
    }
}

/// The regime's clock: the base's start hour moved by where the regime
/// starts, its span, the base's fleet size, and the tick, inferred from the
/// regime's holds or else the base's (noted: the boot estimate rests on it).
pub fn clock(
    base: &RawScenario,
    base_sc: &Scenario,
    v: &RegimeView,
    window_start_s: f64,
    fit_tick: bool,
    notes: &mut Vec<String>,
) -> Clock {
    let start_hour =
        (base.workload.start_hour + (v.start_s - window_start_s) / 3600.0).rem_euclid(24.0);
    let span_s = (v.end_s - v.start_s).max(1.0);
    let workers = base_sc.fleet.workers() as f64;
    let per_instance = base_sc.fleet.workers_per_instance as f64;
    let tick = infer::tick(v, Some(base.policy.tick_s));
    let (every_requests, every_read) = match base_sc.policy.sampling {
        Sampling::EveryRequests { n } => (Some(n), false),
        Sampling::Timer { .. } => match infer::every_requests(v) {
            Some(e) => {
                notes.push(format!(
                    "sampling: {}; policy.sampling = \"requests\", policy.sample_every_requests = \
                     {} (the tick is not used)",
                    e.how(),
                    e.n
                ));
                (Some(e.n), true)
            }
            None => (None, false),
        },
    };
    let fit_tick = if every_requests.is_some() && fit_tick {
        notes.push("--fit-tick: not applicable: the recycler samples every Nth request".into());
        false
    } else {
        fit_tick
    };
    let tick_s = match tick.inferred {
        Some(t) => t,
        None if every_requests.is_some() => base.policy.tick_s,
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
    Clock {
        start_hour,
        span_s,
        workers,
        per_instance,
        tick,
        tick_s,
        fit_tick,
        every_requests,
        every_read,
        hot: false,
    }
}

/// The sampling keys the calibration sets where the rows say the recycler
/// samples every Nth request.
pub fn sampling_keys(clock: &Clock) -> Fixed {
    match (clock.every_requests, clock.every_read) {
        (Some(n), true) => vec![
            (
                "policy.sampling".into(),
                toml::Value::String("requests".into()),
            ),
            (
                "policy.sample_every_requests".into(),
                toml::Value::Integer(n.min(i64::MAX as u64) as i64),
            ),
        ],
        _ => Vec::new(),
    }
}

/// The window and the hard ceiling, fixed for every candidate: the window
/// to the millisecond (a lab's 300 s must not become 360); the ceiling
/// recorded, else the base's offset over the rows' base limit (noted).
pub fn window_and_ceiling(
    base: &RawScenario,
    regime: &Regime,
    span_s: f64,
    notes: &mut Vec<String>,
) -> Fixed {
    let mut fixed: Fixed = vec![(
        "run.duration_h".into(),
        toml::Value::Float((span_s * 1e3).round() / 3.6e6),
    )];
    let limits: Vec<f64> = regime.sample.rows.iter().map(|r| r.limit_mb).collect();
    let (base_mid, _) = moments::uniform(&limits);
    let hard = match regime.view.key.hard_limit_mb {
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
    fixed.push((
        "policy.hard_limit_mb".into(),
        toml::Value::Float(round(hard, "_mb")),
    ));
    fixed
}

/// The rate profile and start read off the rows.
pub struct Profile {
    pub traffic: Traffic,
    pub diurnal: bool,
    pub shape: Shape,
    pub warm: bool,
}

/// The rate profile: diurnal where the rows' cosine regression finds an
/// amplitude over 3 standard errors (and 0.1), else constant; and the warm
/// or cold start. Both are fixed for every candidate, with the lognormal
/// leak.
pub fn rate_profile(
    regime: &Regime,
    clock: &Clock,
    fixed: &mut Fixed,
) -> Result<Profile, CalibrateError> {
    let tr = moments::traffic(
        &regime.sample,
        clock.workers,
        clock.per_instance,
        clock.start_hour,
    )
    .ok_or_else(|| regime.too_few(0))?;
    let clear = moments::clear_amplitude(tr.amplitude, tr.amplitude_se);
    let diurnal = clear.is_some();
    let fnum = toml::Value::Float;
    let shape = if let Some(a) = clear {
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
            fnum((clock.start_hour * 100.0).round() / 100.0),
        ));
        Shape {
            amplitude: a,
            peak_hour: tr.peak_hour,
            start_hour: clock.start_hour,
        }
    } else {
        fixed.push((
            "workload.profile".into(),
            toml::Value::String("constant".into()),
        ));
        Shape::CONSTANT
    };
    let warm = !super::lives::cold_start(&regime.sample, tr.rps / clock.pace_workers());
    fixed.push(("fleet.warm_start".into(), toml::Value::Boolean(warm)));
    fixed.push((
        "fleet.leak.distribution".into(),
        toml::Value::String("lognormal".into()),
    ));
    Ok(Profile {
        traffic: tr,
        diurnal,
        shape,
        warm,
    })
}

impl Profile {
    /// The structure as reported, with the candidates' scores.
    pub fn structure(
        &self,
        whole_mb: bool,
        whole_mb_floor: bool,
        candidates: Vec<Candidate>,
        deferral_scan: Vec<super::deferral::ScanPoint>,
        accept: Option<super::accept::Reading>,
    ) -> Structure {
        let tr = &self.traffic;
        Structure {
            profile: if self.diurnal { "diurnal" } else { "constant" }.into(),
            amplitude: tr.amplitude,
            amplitude_se: tr.amplitude_se,
            peak_hour: tr.peak_hour,
            warm_start: self.warm,
            rate_from: tr.from.label().into(),
            whole_mb,
            whole_mb_floor,
            candidates,
            deferral_scan,
            accept,
        }
    }
}

/// The recording's statistics and what an RSS series observed.
#[derive(Clone)]
pub struct Boot {
    pub context: Context,
    /// The recording's statistics under `context`.
    pub data: Moments,
    /// The overshoot quantiles off their bound in the recording.
    pub eligible: Vec<usize>,
    /// The highest overshoot quantile sits at its bound in the recording.
    pub over_stuck: bool,
    pub observed_boot: Option<ObservedBoot>,
    /// Only with an observed boot.
    pub observed_velocity: Option<ObservedVelocity>,
    /// The tick is fitted to the overshoot over an observed boot.
    pub tick_free: bool,
    /// The tick the fit starts from.
    pub tick_start: f64,
}

/// The boot statistics: the recording's statistics with the overshoot
/// weighed half, or not at all when its highest quantile sits at its bound
/// (holds or steps dominate the overshoot's tail, and a lower quantile sits
/// in what is left: the embedded default's own window put boot at 75 MB
/// there), the slope alone. An observed boot then makes the overshoot the
/// tick's statistic (`observe`).
pub fn boot_statistics(
    regime: &Regime,
    clock: &Clock,
    shape: Shape,
    observed: Option<&Observed>,
    targets: [f64; 4],
    notes: &mut Vec<String>,
) -> Result<Boot, CalibrateError> {
    let mut context = Context {
        tick_s: clock.tick_s,
        every_requests: clock.every_requests.map(|n| n as f64),
        workers: clock.workers,
        per_instance: clock.per_instance,
        pace_workers: clock.pace_workers(),
        shape,
        overshoot_weight: 0.5,
        overshoot_quantile: moments::OVERSHOOT_QUANTILE,
        overshoot_targets: targets,
        known_boot_mb: None,
        overshoot_shape: None,
    };
    let mut data = regime.moments(&context)?;
    let eligible: Vec<usize> = (0..moments::OVERSHOOT_QUANTILES.len())
        .filter(|&i| !data.boot_over_at[i].1)
        .collect();
    let over_stuck = data.boot_over_at[moments::OVERSHOOT_STUCK_AT].1;
    if over_stuck {
        context.overshoot_weight = 0.0;
        data = regime.moments(&context)?;
    }
    let observed_boot = observed.and_then(Observed::boot);
    let mut boot = Boot {
        context,
        data,
        eligible,
        over_stuck,
        observed_boot,
        observed_velocity: observed_boot.and(observed.and_then(Observed::velocity)),
        tick_free: observed_boot.is_some()
            && clock.tick.inferred.is_none()
            && clock.every_requests.is_none()
            && !over_stuck,
        tick_start: clock.tick_s,
    };
    if let Some(b) = observed_boot {
        let src = observed.map_or("", |o| o.source.as_str());
        boot.observe(regime, b, src, notes)?;
    }
    Ok(boot)
}

impl Boot {
    /// The boot statistic made the overshoot's whole shape against the
    /// deferral scan's chosen windows (a read deferral's, or off's:
    /// `shape_match.rs`), weighed alone; not where an RSS series observed
    /// boot (the overshoot then measures the tick). Whether it applies.
    pub fn against_shape(
        &mut self,
        regime: &Regime,
        shape: moments::ShapeRef,
    ) -> Result<bool, CalibrateError> {
        if self.observed_boot.is_some() {
            return Ok(false);
        }
        self.context.overshoot_shape = Some(shape);
        self.context.overshoot_weight = 1.0;
        self.data = regime.moments(&self.context)?;
        Ok(true)
    }

    /// An observed boot: the statistics over it, at the lowest overshoot
    /// quantile off its bound (the one holds touch least), the overshoot
    /// weighed alone unless stuck; with a free tick, the tick's start
    /// scaled by the overshoot quantile over its target (unheld samples
    /// come a uniform fraction of a tick after the crossing).
    fn observe(
        &mut self,
        regime: &Regime,
        b: ObservedBoot,
        src: &str,
        notes: &mut Vec<String>,
    ) -> Result<(), CalibrateError> {
        self.context.known_boot_mb = Some(b.mb);
        self.context.overshoot_weight = if self.over_stuck { 0.0 } else { 1.0 };
        if let Some(&i) = self.eligible.first() {
            self.context.overshoot_quantile = moments::OVERSHOOT_QUANTILES[i];
        }
        self.data = regime.moments(&self.context)?;
        notes.push(format!(
            "boot RSS observed in the RSS series ({src}): {:.1} MB, the median over {} lives; {}",
            b.mb,
            b.lives,
            match self.observed_velocity {
                Some(v) => format!(
                    "leak velocity observed too: lognormal mean {:.4} MB/request, cv {:.2}, over {} lives",
                    v.mean, v.cv, v.lives
                ),
                None => "the leak velocity is fitted over that boot (the series counts no requests)".into(),
            }
        ));
        if self.tick_free {
            let q = moments::quantile(&self.data.overshoot, self.context.overshoot_quantile);
            let i = self
                .eligible
                .first()
                .copied()
                .unwrap_or(moments::OVERSHOOT_STUCK_AT);
            let ratio = q / self.context.overshoot_targets[i];
            if ratio.is_finite() && ratio > 0.0 {
                self.tick_start *= ratio.clamp(0.25, 4.0);
            }
        }
        Ok(())
    }

    /// Which (parameter, statistic) pairs the fit moves: over an observed
    /// boot, all but boot (and the velocity when observed), the tick against
    /// the overshoot when it is free; else the tick only with `--fit-tick`
    /// where no holds gave it and both boot statistics are off their bounds
    /// (noted when asked for and not identifiable).
    pub fn active(&self, clock: &Clock, notes: &mut Vec<String>) -> Active {
        let (tick, fit_tick) = (&clock.tick, clock.fit_tick);
        let (over_stuck, slope_at_bound) = (self.over_stuck, self.data.slope_at_bound);
        if self.observed_boot.is_none()
            && fit_tick
            && tick.inferred.is_none()
            && (over_stuck || slope_at_bound)
        {
            notes.push(
                "--fit-tick: the tick is not identifiable here (a boot statistic sits at its \
                 bound in the recording, so only one of the two moves): kept the base's"
                    .into(),
            );
        }
        if self.observed_boot.is_some() {
            let mut pairs = vec![(0, 0), (1, 1), (5, 5)];
            if self.observed_velocity.is_none() {
                pairs.extend([(3, 3), (4, 4)]);
            }
            if self.tick_free {
                pairs.push((6, 2));
            }
            Active::new(&pairs)
        } else if tick.inferred.is_some() || over_stuck || slope_at_bound || !fit_tick {
            Active::KNOWN_TICK
        } else {
            Active::ALL
        }
    }
}

/// The candidate structures (memory model x the deferral the scan read)
/// and what their fits share: the fixed overrides and how a start is read off the data.
pub struct Structures<'a> {
    base_text: &'a BaseText,
    fixed: Fixed,
    leak: &'a RawLeak,
    pub base_deferral: bool,
    /// The busy deferrals each memory model is a candidate under: the
    /// scan's, or off and the base's (off alone until set).
    pub deferrals: Vec<Deferral>,
    /// The boot search's floor: a worker holds at least what it shares
    /// with the master.
    pub floor_boot: f64,
    observed_boot: Option<ObservedBoot>,
    observed_velocity: Option<ObservedVelocity>,
    tick_start: f64,
}

impl<'a> Structures<'a> {
    pub fn new(
        base: &'a RawScenario,
        base_text: &'a BaseText,
        fixed: Fixed,
        boot: &Boot,
    ) -> Structures<'a> {
        Structures {
            base_text,
            fixed,
            leak: &base.fleet.leak,
            base_deferral: base.policy.busy_deferral,
            deferrals: vec![Deferral::Off],
            floor_boot: base.fleet.shared_mb + 1.0,
            observed_boot: boot.observed_boot,
            observed_velocity: boot.observed_velocity,
            tick_start: boot.tick_start,
        }
    }

    /// The candidates: each memory model under each of `self.deferrals`, the
    /// base's only where it has warm-up, steps or surges, and over an
    /// observed boot the plain memory model only (the series' growth per
    /// request already folds in warm-up and steps).
    pub fn candidates(&self) -> Vec<(Memory, Deferral)> {
        let base_memory = self.base_memory();
        let deferrals = if self.base_deferral {
            &self.deferrals[..]
        } else {
            &[Deferral::Off][..]
        };
        let mut candidates = Vec::new();
        for &d in deferrals {
            candidates.push((Memory::Plain, d));
            if base_memory {
                candidates.push((Memory::Base, d));
            }
        }
        candidates
    }

    /// Whether the base's memory model is a candidate beside the plain
    /// one: it has warm-up, steps or surges, and no RSS series observed
    /// boot (the series' growth per request already folds them in).
    pub fn base_memory(&self) -> bool {
        let leak = self.leak;
        let has = leak.warmup_mb > 0.0
            || leak.step_probability > 0.0
            || leak
                .surge
                .as_ref()
                .is_some_and(|s| s.episodes_per_day > 0.0);
        has && self.observed_boot.is_none()
    }

    /// A structure's overrides: the fixed ones, the plain model's zero
    /// warm-up, steps and surges, and the deferral (the read one's
    /// `busy_rps` and `defer_max_s`).
    pub fn sets(&self, m: Memory, deferral: Deferral) -> Vec<Override> {
        let mut s = overrides(&self.fixed);
        if m == Memory::Plain {
            s.extend(fit::num_overrides(&[
                ("fleet.leak.warmup_mb".into(), 0.0),
                ("fleet.leak.step_probability".into(), 0.0),
            ]));
            if self.leak.surge.is_some() {
                s.extend(fit::num_overrides(&[(
                    "fleet.leak.surge.episodes_per_day".into(),
                    0.0,
                )]));
            }
        }
        s.push(Override {
            key: "policy.busy_deferral".into(),
            value: toml::Value::Boolean(deferral.is_on() && self.base_deferral),
        });
        if let Deferral::Read {
            busy_rps,
            defer_max_s,
        } = deferral
        {
            s.extend(fit::num_overrides(&[
                ("policy.busy_rps".into(), round(busy_rps, "busy_rps")),
                (
                    "policy.defer_max_s".into(),
                    round(defer_max_s, "defer_max_s"),
                ),
            ]));
        }
        s
    }

    /// A structure's overrides, or why the base refuses them.
    pub fn checked_sets(&self, m: Memory, deferral: Deferral) -> Result<Vec<Override>, String> {
        let sets = self.sets(m, deferral);
        match self.base_text.load(&sets) {
            Ok(_) => Ok(sets),
            Err(e) => Err(e.to_string()),
        }
    }

    /// A memory model's warm-up and mean step growth per request.
    pub fn growth(&self, m: Memory) -> (f64, f64) {
        match m {
            Memory::Plain => (0.0, 0.0),
            Memory::Base => (
                self.leak.warmup_mb,
                self.leak.step_probability * self.leak.step_mean_mb,
            ),
        }
    }

    /// A structure's start: the recording's statistics less the model's
    /// warm-up and steps, with what the series observed in their place.
    pub fn start(&self, m: Memory, data: &Moments) -> Theta {
        let (warmup, steps) = self.growth(m);
        let mean = (data.velocity_mean - steps).max(data.velocity_mean / 10.0);
        let (mean, cv) = self
            .observed_velocity
            .map_or((mean, data.velocity_cv), |v| (v.mean, v.cv));
        Theta {
            base_mb: data.base_mb,
            jitter_mb: data.jitter_mb,
            boot_mb: self.observed_boot.map_or(data.boot_mb - warmup, |b| b.mb),
            ln_mean: mean.ln(),
            ln_cv: cv.max(0.05).ln(),
            ln_rps: data.rps.ln(),
            ln_tick: self.tick_start.ln(),
        }
    }
}
