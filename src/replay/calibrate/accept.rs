//! Which idle worker takes a request (`[fleet] accept`), read off the
//! recording's worker lives.
//!
//! Where an instance's idle workers wait in one queue ("longest_idle":
//! blocking `accept(2)` on the shared socket), a quiet instance hands its
//! requests to its workers in turn, and a worker's requests over a life
//! follow the instance's arrivals almost exactly: two instances of three
//! under round-robin give each worker every sixth request. Where they race
//! for it ("random": every worker polls the socket), each worker's count is
//! close to Poisson. Where the worker idle for the shortest time takes it
//! ("most_recent": `EPOLLEXCLUSIVE`), a quiet instance sends nearly all
//! its requests to one worker, and lives' paces differ many times over.
//! The index of dispersion of a life's requests about what the fleet's
//! pace gives it, `sum (n - e)^2 / sum e`, tells the three apart by a
//! factor of four or more (fleetsim and the clean-room model of
//! tools/truth/CLEANROOM.md alike: 0.14-0.23 in turn, 0.78-0.86 racing).
//!
//! It matters for boot: the overshoot of a recycle counts the requests
//! after the one that crossed the limit, and a worker served in turn has
//! about `(1 - 1/6) / 2` of a request fewer of them than a racing one.
//! At 7 requests a tick that is a tenth of the overshoot, which the boot
//! statistic reads as a tenth of the runway (h2 of docs/calibration.md:
//! 0.8 quantile 1.84 against 2.07 half-ticks at the true boot). The
//! overshoot's shape cannot say which (the two differ by a scale, as boot
//! moves it), so only the lives can. Rows without slot ids are read through
//! lives chained from each row's requests (`lives::chained_lives`): a
//! row's life is matched to the recycle it most likely began at, at the
//! fleet's pace, and the miss is its own requests' departure from that
//! pace (narrowed by the matching, which the simulated windows share).
//!
//! Where an instance's first idle worker takes it ("first": a fixed order,
//! HAProxy's `balance first`, or a model that scans its workers for the
//! first idle one), the complete lives are nearly all the first slot's,
//! all at one pace, and their index looks like any other kind's. The rows
//! say it another way: the first slot recycles and its siblings seldom
//! do. The share of an instance's recycles its most recycled slot has
//! (`top_share`: about 0.4 with three slots fed alike, 0.9 and more fed
//! first) tells it, where rows name their slots; without slot ids it is
//! not read (a first slot's lives chained at the fleet's pace look like
//! three slots' lives, and its overshoot like a slower worker's).
//!
//! The reading: the recording's index (and top share) against simulated
//! windows of each kind at the plain start point (the base's other
//! settings), read the recording's way; the kind whose windows' medians
//! are nearest in log, summed over the two, is chosen.

/// The kinds read, as `[fleet] accept` says them; the last only where rows
/// name their slots (`top_share`).
pub const KINDS: [&str; 4] = ["longest_idle", "random", "most_recent", "first"];

use super::fit::{self, Theta};
use super::lives::{self, Lives};
use super::moments::{Context, Sample};
use super::setup::{Boot, Regime, Structures};
use super::stages::Shared;
use crate::scenario::{Accept, Override, Scenario};
use rayon::prelude::*;
use serde::Serialize;
use std::sync::atomic::Ordering;

/// Complete lives needed to read the index (its sampling error is
/// about `sqrt(2 / lives)`: a third at 18 lives, against a factor of four
/// between the kinds).
pub const MIN_LIVES: usize = 18;

/// Complete lives a simulated window needs to count: its index is one of
/// several whose median is taken, so a window of a recording with few
/// lives counts even with fewer still.
pub const MIN_SIM_LIVES: usize = 8;

/// Simulated windows of each kind.
pub fn windows(budget: super::Budget) -> usize {
    (budget.seeds / 4).max(4)
}

/// The index of dispersion of `s`'s complete lives' requests (a slot's own, or chained) about
/// the pace they share, over each life after its first `ready_s` (the
/// replacement's boot), shaped by `cx.shape`; with the lives it used.
/// Robust: the mean squared standardized residual of the least dispersed
/// 90% of lives, over a chi-squared variable's (1 for Poisson counts), so
/// a few lives the rows bound wrong (a recycle missing from the rows joins
/// two lives) do not decide it. `None` without lives the rows bound or
/// with fewer than `min_lives` of them.
pub fn dispersion(
    s: &Sample,
    cx: &Context,
    ready_s: f64,
    min_lives: usize,
) -> Option<(f64, usize)> {
    let found = match s.lives {
        Lives::Slots | Lives::SlotsHot | Lives::SlotsUneven => lives::slot_lives(s),
        // Chained where each row's life most likely began: at a pace
        // shared by the fleet, the chain's miss is the life's own.
        Lives::ChainedByInstance | Lives::ChainedInFleet => {
            let span = (s.end_s - s.start_s).max(1.0);
            let n: f64 = s.rows.iter().map(|r| r.requests).sum();
            let pace = lives::Pace {
                per_worker: n / span / cx.workers.max(1.0),
                amplitude: cx.shape.amplitude,
                peak_hour: cx.shape.peak_hour,
                start_hour: cx.shape.start_hour,
            };
            lives::complete(s, cx.workers, cx.per_instance, pace)
        }
        Lives::Window => return None,
    };
    // Each life's requests against the profile's integral over it (in
    // seconds at the mean rate; Simpson's rule: a life is an hour or two
    // of a day's cosine), the pace the lives' median ratio (a rate over
    // the regime is not the profile's mean, and a joined life would pull
    // a mean).
    let lives: Vec<(f64, f64)> = found
        .into_iter()
        .filter_map(|(from, to, requests)| {
            let a = from + ready_s;
            let m = 0.5 * (a + to);
            let shape = (cx.shape.factor(a) + 4.0 * cx.shape.factor(m) + cx.shape.factor(to)) / 6.0;
            let seconds = shape * (to - a);
            (seconds > 0.0).then_some((requests, seconds))
        })
        .collect();
    if lives.len() < min_lives.max(2) {
        return None;
    }
    let pace = median(lives.iter().map(|(n, t)| n / t).collect())?;
    if !pace.is_finite() || pace <= 0.0 {
        return None;
    }
    let mut z2: Vec<f64> = lives
        .iter()
        .map(|(n, t)| (n - pace * t).powi(2) / (pace * t))
        .collect();
    let n = z2.len();
    z2.sort_by(f64::total_cmp);
    let kept = ((n as f64 * KEPT).floor() as usize).max(1);
    Some((
        z2[..kept].iter().sum::<f64>() / kept as f64 / CHI2_1_KEPT_MEAN,
        n,
    ))
}

/// The share of lives the index keeps, the least dispersed: a few lives
/// bound wrong (a recycle missing from the rows joins two) do not decide
/// it, and it keeps most of the mean's precision (on 34 lives of h2's
/// parameters, a racing fleet read as served in turn 1.5% of the time,
/// against 0.7% for the mean and 3.7% for the median).
const KEPT: f64 = 0.9;

/// The mean of a chi-squared variable of one degree of freedom (a Poisson
/// count's squared standardized residual) below its 0.9 quantile, 2.7055:
/// `F_3(2.7055) / 0.9`. The index is 1 for Poisson counts.
const CHI2_1_KEPT_MEAN: f64 = 0.623_015;

/// The share of the recycles of each instance that its most recycled slot
/// has, over the instances (`sum max / sum all`), where rows name their
/// slots; `None` otherwise, or with fewer than `min_rows` rows.
pub fn top_share(s: &Sample, min_rows: usize) -> Option<f64> {
    if !matches!(s.lives, Lives::Slots | Lives::SlotsHot | Lives::SlotsUneven)
        || s.rows.len() < min_rows.max(1)
    {
        return None;
    }
    let mut counts: std::collections::BTreeMap<(&str, &str), usize> = Default::default();
    for r in &s.rows {
        let (i, w) = r.slot.as_ref()?;
        *counts.entry((i.as_str(), w.as_str())).or_default() += 1;
    }
    let mut top: std::collections::BTreeMap<&str, usize> = Default::default();
    for ((i, _), n) in counts {
        let t = top.entry(i).or_default();
        *t = (*t).max(n);
    }
    Some(top.values().sum::<usize>() as f64 / s.rows.len() as f64)
}

fn median_sorted(v: &[f64]) -> f64 {
    let k = v.len() / 2;
    if v.len() % 2 == 1 {
        v[k]
    } else {
        0.5 * (v[k - 1] + v[k])
    }
}

/// What the reading found, in calibration.json (`structure.accept`).
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Reading {
    /// The recording's index of dispersion and the lives it rests on,
    /// and how they were found (`Lives::label`).
    pub recorded: f64,
    pub lives: usize,
    pub lives_from: &'static str,
    /// The simulated windows' median index under each kind (`first`
    /// only where the top share is read).
    pub longest_idle: f64,
    pub random: f64,
    pub most_recent: f64,
    pub first: Option<f64>,
    /// The recording's top share and the simulated windows' median under
    /// each kind, where rows name their slots.
    pub top_share: Option<TopShare>,
    /// One of `KINDS`, or "none" where the windows of the kind nearest
    /// the recording and the next are within `SEPARABLE` (the base's is
    /// kept).
    pub chosen: &'static str,
    /// Where one worker an instance takes nearly every request (most_recent,
    /// first): whether the window began warm, read by simulation
    /// (`read_warm`), else `None`.
    pub warm_start: Option<WarmRead>,
}

/// A hot fleet's start read by simulation: how late each instance's first
/// recycle came, in lives at the instance's pace (`lives::hot_lateness`),
/// recorded and in simulated windows started warm and cold.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct WarmRead {
    pub recorded: f64,
    pub warm: f64,
    pub cold: f64,
    pub chosen: bool,
}

/// The share of an instance's recycles its most recycled slot has
/// (`top_share`), recorded and simulated under each kind.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct TopShare {
    pub recorded: f64,
    pub longest_idle: f64,
    pub random: f64,
    pub most_recent: f64,
    pub first: f64,
}

impl Reading {
    /// The kind read (`None`: not separable, the base's stands).
    pub fn accept(&self) -> Option<Accept> {
        match self.chosen {
            "longest_idle" => Some(Accept::LongestIdle),
            "random" => Some(Accept::Random),
            "most_recent" => Some(Accept::MostRecent),
            "first" => Some(Accept::First),
            _ => None,
        }
    }

    /// The fixed value the calibrated scenario carries.
    pub fn set(&self) -> (String, toml::Value) {
        (
            "fleet.accept".into(),
            toml::Value::String(self.chosen.into()),
        )
    }

    pub fn note(&self) -> String {
        let what = if self.chosen == "none" {
            "not told apart (the simulated windows of the kinds nearest the recording are within \
             a factor of 2 here; the base's kept),"
                .to_string()
        } else {
            format!("{} read", self.chosen)
        };
        let first = self.first.map_or(String::new(), |f| {
            format!(", {f:.2} with the first idle slot")
        });
        let share = self.top_share.as_ref().map_or(
            "; the first slot's preference not read without slot ids".to_string(),
            |t| {
                format!(
                    "; the most recycled slot's share of its instance's recycles {:.2}, \
                     simulated {:.2}, {:.2}, {:.2}, {:.2}",
                    t.recorded, t.longest_idle, t.random, t.most_recent, t.first
                )
            },
        );
        let warm = self.warm_start.as_ref().map_or(String::new(), |w| {
            format!(
                "; one worker an instance takes nearly every request, and the window began {} \
                 (each instance's first recycle {:.2} lives in at its pace; simulated {:.2} \
                 begun warm, {:.2} cold)",
                if w.chosen { "warm" } else { "cold" },
                w.recorded,
                w.warm,
                w.cold
            )
        });
        format!(
            "which idle worker takes a request (fleet.accept): {what} off {} {} \
             (their requests' index of dispersion {:.2}; simulated windows {:.2} with the \
             longest idle taking it, {:.2} with any idle one at random, {:.2} with the \
             latest idle{first}{share}){warm}",
            self.lives,
            self.lives_from,
            self.recorded,
            self.longest_idle,
            self.random,
            self.most_recent
        )
    }
}

/// How far apart (in log, summed over the statistics) two kinds'
/// simulated medians must be for the recording to tell them apart: their
/// windows' own spread, a factor of about 1.3 at 70 lives, leaves a factor
/// of 2 clear.
pub const SEPARABLE: f64 = 2.0;

/// The kind (of `KINDS`, as many as `medians` has) whose simulated
/// medians are nearest the recorded ones in log, summed over the
/// statistics (the index, and the top share where read), the first on a
/// tie; `None` when the next nearest kind's medians are within
/// `SEPARABLE` of its (the windows cannot tell them apart here: a busy
/// fleet's workers are seldom all idle, so whichever takes a request
/// matters little).
pub fn choose(recorded: &[f64], medians: &[Vec<f64>]) -> Option<&'static str> {
    let ln = |x: f64| x.max(1e-9).ln();
    let apart = |a: &[f64], b: &[f64]| -> f64 {
        a.iter().zip(b).map(|(x, y)| (ln(*x) - ln(*y)).abs()).sum()
    };
    let mut order: Vec<usize> = (0..medians.len().min(KINDS.len())).collect();
    order.sort_by(|&a, &b| apart(recorded, &medians[a]).total_cmp(&apart(recorded, &medians[b])));
    let (best, next) = (*order.first()?, *order.get(1)?);
    (apart(&medians[best], &medians[next]) >= SEPARABLE.ln()).then_some(KINDS[best])
}

fn median(mut v: Vec<f64>) -> Option<f64> {
    if v.is_empty() {
        return None;
    }
    v.sort_by(f64::total_cmp);
    Some(median_sorted(&v))
}

/// Reads `[fleet] accept` off the recording where its lives allow
/// (`None`: too few lives, or the simulated windows gave too few), on
/// purpose-9 seeds at the plain start point without busy deferral.
pub fn read(
    regime: &Regime,
    boot: &Boot,
    structures: &Structures,
    base: &Scenario,
    shared: &Shared,
) -> Option<Reading> {
    let cx = boot.context;
    let data = &boot.data;
    let ready_s = base.fleet.boot.as_secs_f64();
    let (recorded, lives) = dispersion(&regime.sample, &cx, ready_s, MIN_LIVES)?;
    let share = top_share(&regime.sample, MIN_LIVES);
    let kinds = if share.is_some() { KINDS.len() } else { 3 };
    // At the rows' requests over the window, not the lives' rate: a first
    // slot's lives run at its instance's pace, which read as every
    // worker's would simulate a fleet several times busier than the
    // recording's (a window's rate misses a few percent: enough here).
    let mut at: Theta = structures
        .start(super::Memory::Plain, data)
        .clamp(shared.floor_boot);
    let s = &regime.sample;
    let window_rate = s.rows.iter().map(|r| r.requests).sum::<f64>() / (s.end_s - s.start_s);
    if window_rate.is_finite() && window_rate > 0.0 {
        at.ln_rps = window_rate.ln();
    }
    // Where one worker an instance would take nearly every request, its
    // siblings' first recycles come late whatever the start: the cold
    // start those kinds are simulated with is read off each instance's
    // first recycle at the instance's pace (the profile's read every
    // slot's).
    let instances = (cx.workers / cx.per_instance.max(1.0)).max(1.0);
    let hot_warm = !lives::hot_cold_start(s, window_rate / instances);
    let seeds = fit::seeds(shared.key, 9, windows(shared.budget));
    // Per kind, the windows' median index and top share.
    let mut medians = Vec::new();
    for kind in &KINDS[..kinds] {
        let mut extra = vec![set("fleet.accept", toml::Value::String((*kind).into()))];
        if matches!(*kind, "most_recent" | "first") {
            extra.push(set("fleet.warm_start", toml::Value::Boolean(hot_warm)));
        }
        let got = simulated(structures, shared, boot, &at, extra, &seeds, |x| {
            let d = dispersion(x, &cx, ready_s, MIN_SIM_LIVES)?.0;
            Some((d, top_share(x, MIN_SIM_LIVES)))
        })?;
        let mut m = vec![median(got.iter().map(|g| g.0).collect())?];
        if share.is_some() {
            m.push(median(got.iter().filter_map(|g| g.1).collect())?);
        }
        medians.push(m);
    }
    let mut recorded_stats = vec![recorded];
    recorded_stats.extend(share);
    Some(Reading {
        recorded,
        lives,
        lives_from: regime.sample.lives.label(),
        longest_idle: medians[0][0],
        random: medians[1][0],
        most_recent: medians[2][0],
        first: medians.get(3).map(|m| m[0]),
        top_share: share.map(|recorded| TopShare {
            recorded,
            longest_idle: medians[0][1],
            random: medians[1][1],
            most_recent: medians[2][1],
            first: medians[3][1],
        }),
        chosen: choose(&recorded_stats, &medians).unwrap_or("none"),
        warm_start: None,
    })
    .map(|mut r| {
        if matches!(r.chosen, "most_recent" | "first") {
            r.warm_start = read_warm(r.chosen, regime, boot, structures, shared);
        }
        r
    })
}

/// Whether a hot fleet's window began warm: where the worker taking the
/// requests changes (most_recent), a life's pace is not the instance's,
/// and each instance's first recycle comes about a life in whether the
/// window began warm or cold (1.15 and 1.08 on CLEANROOM.md's h4 fed the
/// latest idle, which began warm), so the rule the profile applies reads
/// it cold. Windows of the read kind started either way say where the
/// recording's lateness sits; the nearer is taken.
fn read_warm(
    kind: &str,
    regime: &Regime,
    boot: &Boot,
    structures: &Structures,
    shared: &Shared,
) -> Option<WarmRead> {
    let cx = boot.context;
    let instances = (cx.workers / cx.per_instance.max(1.0)).max(1.0);
    let late = |s: &Sample| {
        let rate = s.rows.iter().map(|r| r.requests).sum::<f64>() / (s.end_s - s.start_s);
        lives::hot_lateness(s, rate / instances)
    };
    let recorded = late(&regime.sample)?;
    let mut at: Theta = structures
        .start(super::Memory::Plain, &boot.data)
        .clamp(shared.floor_boot);
    let s = &regime.sample;
    let window_rate = s.rows.iter().map(|r| r.requests).sum::<f64>() / (s.end_s - s.start_s);
    if window_rate.is_finite() && window_rate > 0.0 {
        at.ln_rps = window_rate.ln();
    }
    let seeds = fit::seeds(shared.key, 10, windows(shared.budget));
    let mut medians = [0.0; 2];
    for (k, warm) in [true, false].into_iter().enumerate() {
        let extra = vec![
            set("fleet.accept", toml::Value::String(kind.into())),
            set("fleet.warm_start", toml::Value::Boolean(warm)),
        ];
        let got = simulated(structures, shared, boot, &at, extra, &seeds, late)?;
        medians[k] = median(got)?;
    }
    let [warm, cold] = medians;
    Some(WarmRead {
        recorded,
        warm,
        cold,
        chosen: (recorded - warm).abs() <= (recorded - cold).abs(),
    })
}

fn set(key: &str, value: toml::Value) -> Override {
    Override {
        key: key.into(),
        value,
    }
}

/// `stat` of each window of the plain structure without busy deferral,
/// `extra` set, at `at` on `seeds`; `None` where fewer than half the
/// windows gave one.
fn simulated<T: Send>(
    structures: &Structures,
    shared: &Shared,
    boot: &Boot,
    at: &Theta,
    extra: Vec<Override>,
    seeds: &[u64],
    stat: impl Fn(&Sample) -> Option<T> + Sync,
) -> Option<Vec<T>> {
    let mut sets = structures
        .checked_sets(super::Memory::Plain, super::Deferral::Off)
        .ok()?;
    sets.extend(extra);
    let p = shared.problem(&boot.data, boot.context, sets);
    let sc = p.build(at)?;
    let got: Vec<T> = seeds
        .par_iter()
        .map(|&seed| {
            let d = fit::simulate(&sc, seed, p.look).and_then(|x| stat(&x));
            (p.progress)(p.done.fetch_add(1, Ordering::Relaxed) + 1);
            d
        })
        .collect::<Vec<_>>()
        .into_iter()
        .flatten()
        .collect();
    (got.len() * 2 >= seeds.len()).then_some(got)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::replay::calibrate::moments::{Row, Shape};

    fn context() -> Context {
        Context {
            tick_s: 45.0,
            workers: 6.0,
            per_instance: 3.0,
            shape: Shape::CONSTANT,
            overshoot_weight: 1.0,
            overshoot_quantile: 0.7,
            overshoot_targets: crate::replay::calibrate::moments::UNHELD_TARGETS,
            known_boot_mb: None,
            pace_workers: 6.0,
        }
    }

    /// Six slots whose lives end every 3000 s, each with `requests(k)`.
    fn sample(requests: impl Fn(usize) -> f64) -> Sample {
        let mut rows = Vec::new();
        for slot in 0..6usize {
            for life in 0..5usize {
                let k = slot * 5 + life;
                rows.push(Row {
                    t_s: 100.0 * slot as f64 + 3000.0 * life as f64,
                    slot: Some((format!("i{}", slot / 3), format!("w{slot}"))),
                    instance: Some(format!("i{}", slot / 3)),
                    requests: requests(k),
                    rss_mb: 500.0,
                    limit_mb: 490.0,
                });
            }
        }
        Sample {
            rows,
            start_s: 0.0,
            end_s: 15_000.0,
            whole_mb: false,
            lives: Lives::Slots,
        }
    }

    #[test]
    fn lives_served_exactly_at_the_pace_have_no_dispersion_and_noisy_ones_do() {
        // 0.1 req/s a worker (0.6 fleet-wide) over 3000 s less a 2 s boot:
        // 299.8 requests a life.
        let cx = context();
        let exact = sample(|_| 299.8);
        let (d, lives) = dispersion(&exact, &cx, 2.0, MIN_LIVES).unwrap();
        assert_eq!(lives, 24, "four complete lives a slot");
        assert!(d < 1e-9, "{d}");
        // +-17.31 requests about the pace: squared and standardized,
        // 17.31^2 / 299.8 = 1.0, over the kept mean of a chi-squared: 1.605.
        let noisy = sample(|k| 299.8 + if k % 2 == 0 { 17.31 } else { -17.31 });
        let (d, _) = dispersion(&noisy, &cx, 2.0, MIN_LIVES).unwrap();
        assert!((d - 1.0 / 0.623_015).abs() < 0.01, "{d}");
        // Two lives bound wrong (one joined by a missing row, 3000
        // requests over; one cut short, 250 under) do not move it.
        let joined = sample(|k| match k {
            1 => 3299.8,
            14 => 49.8,
            k if k % 2 == 0 => 299.8 + 17.31,
            _ => 299.8 - 17.31,
        });
        let (d2, _) = dispersion(&joined, &cx, 2.0, MIN_LIVES).unwrap();
        assert!((d2 - d).abs() < 1e-9, "{d2} vs {d}");
    }

    #[test]
    fn rows_that_bound_no_lives_or_few_give_no_index() {
        let cx = context();
        let mut s = sample(|_| 300.0);
        s.lives = Lives::Window;
        assert_eq!(dispersion(&s, &cx, 2.0, MIN_LIVES), None);
        // Without slots, lives chained within each instance: these rows'
        // lives all run at the pace, and the chaining finds them.
        let mut s = sample(|_| 299.8);
        s.lives = Lives::ChainedByInstance;
        let (d, lives) = dispersion(&s, &cx, 2.0, MIN_LIVES).expect("chained lives");
        assert!(lives >= 18 && d < 0.01, "{d} over {lives}");
        let mut s = sample(|_| 300.0);
        s.rows.retain(|r| r.t_s < 9000.0);
        assert_eq!(
            dispersion(&s, &cx, 2.0, MIN_LIVES),
            None,
            "two lives a slot: 12"
        );
    }

    #[test]
    fn the_nearer_kind_in_log_is_chosen_where_the_kinds_differ() {
        let m: Vec<Vec<f64>> = [0.18, 0.85, 40.0].iter().map(|&x| vec![x]).collect();
        let c = |x: f64| choose(&[x], &m);
        assert_eq!(c(0.2), Some("longest_idle"));
        assert_eq!(c(0.7), Some("random"));
        // Between two: their geometric mean decides (0.39, 5.8).
        assert_eq!(c(0.38), Some("longest_idle"));
        assert_eq!(c(0.41), Some("random"));
        assert_eq!(c(5.7), Some("random"));
        assert_eq!(c(5.9), Some("most_recent"));
        // A busy fleet: in turn and racing alike.
        let busy: Vec<Vec<f64>> = [75.4, 73.9, 1099.0].iter().map(|&x| vec![x]).collect();
        assert_eq!(choose(&[70.0], &busy), None);
        assert_eq!(choose(&[900.0], &busy), Some("most_recent"));
    }

    #[test]
    fn the_first_slots_preference_is_read_off_the_top_share_where_the_index_is_alike() {
        // f6 of tools/truth/CLEANROOM.md fed first: an index between in
        // turn and racing, but one slot of each instance recycling.
        let m = vec![
            vec![0.31, 0.41],
            vec![0.73, 0.43],
            vec![11.4, 0.62],
            vec![0.40, 0.97],
        ];
        assert_eq!(choose(&[0.46, 0.98], &m), Some("first"));
        // The same index with the slots recycling alike: in turn.
        assert_eq!(choose(&[0.40, 0.42], &m), Some("longest_idle"));
        assert_eq!(choose(&[0.70, 0.45], &m), Some("random"));
    }

    #[test]
    fn the_top_share_counts_each_instances_most_recycled_slot() {
        // Six slots (two instances of three), five recycles each: 5 of 15.
        let s = sample(|_| 300.0);
        assert!((top_share(&s, 1).unwrap() - 1.0 / 3.0).abs() < 1e-12);
        // One slot of each instance recycling alone: 1.
        let mut s = sample(|_| 300.0);
        s.rows
            .retain(|r| matches!(r.slot.as_ref().map(|x| x.1.as_str()), Some("w0" | "w3")));
        assert_eq!(top_share(&s, 1), Some(1.0));
        assert_eq!(top_share(&s, 11), None, "10 rows");
        s.lives = Lives::ChainedByInstance;
        assert_eq!(top_share(&s, 1), None, "no slot ids");
    }
}
