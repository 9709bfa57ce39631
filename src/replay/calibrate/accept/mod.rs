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

mod stats;
use stats::median;
pub use stats::{choose, dispersion, hot_dispersion, misfit, top_share};

use super::fit::{self, Theta};
use super::lives;
use super::lives::Lives;
use super::moments::Sample;
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

/// Simulated windows of each kind (eight at the default budget: their
/// spread judges whether the kind read fits, `misfit`).
pub fn windows(budget: super::Budget) -> usize {
    (budget.seeds / 2).max(4)
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
    pub top_share: Option<ByKind>,
    /// Where rows name no slot: the index of dispersion of lives chained
    /// one an instance at the instance's pace (`hot_dispersion`), recorded
    /// and the simulated windows' median under each kind.
    pub hot_index: Option<ByKind>,
    /// One of `KINDS`, or "none" where the windows of the kind nearest
    /// the recording and the next are within `SEPARABLE`, or where the
    /// nearest kind does not reproduce the recording (`misfit`): the
    /// base's is kept.
    pub chosen: &'static str,
    /// Where the kind nearest the recording is still off its own windows
    /// on a statistic (`misfit`), which and how far; else `None`.
    pub misfit: Option<Misfit>,
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
    /// Read off each instance's first recycle (rows name instances), else
    /// off the window's first.
    #[serde(skip)]
    pub by_instance: bool,
    pub chosen: bool,
}

/// The statistic on which the kind nearest the recording does not
/// reproduce it: the recorded value, the kind's windows' range, and how
/// many of the windows' standard deviations (in log) the recording lies
/// from their mean (`misfit`).
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Misfit {
    pub kind: &'static str,
    pub statistic: &'static str,
    pub recorded: f64,
    pub low: f64,
    pub high: f64,
    pub z: f64,
}

/// A statistic that tells the first idle slot taking requests apart (the
/// top share with slot ids, the hot index without), recorded and the
/// simulated windows' median under each kind.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct ByKind {
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

    /// Lives more unequal than racing workers' yet slots recycling about
    /// as alike as the even kinds': a concentration by connection, not by
    /// worker.
    fn pinned_like(&self) -> bool {
        self.recorded > 2.0 * self.random
            && self
                .top_share
                .as_ref()
                .is_some_and(|t| t.recorded < 0.5 * (t.random.max(t.longest_idle) + t.most_recent))
    }

    /// The fixed value the calibrated scenario carries.
    pub fn set(&self) -> (String, toml::Value) {
        (
            "fleet.accept".into(),
            toml::Value::String(self.chosen.into()),
        )
    }

    pub fn note(&self) -> String {
        let what = if self.misfit.is_some() {
            "none fits".to_string()
        } else if self.chosen == "none" {
            "not told apart (the simulated windows of the kinds nearest the recording are within \
             a factor of 2 here; the base's kept),"
                .to_string()
        } else {
            format!("{} read", self.chosen)
        };
        let first = self.first.map_or(String::new(), |f| {
            format!(", {f:.2} with the first idle slot")
        });
        let hot = self.hot_index.as_ref().map(|t| {
            format!(
                "; lives chained one an instance at its pace: index {:.2}, simulated {:.2}, \
                 {:.2}, {:.2}, {:.2}",
                t.recorded, t.longest_idle, t.random, t.most_recent, t.first
            )
        });
        let share = self.top_share.as_ref().map_or(
            hot.unwrap_or_else(|| "; the first slot's preference not read".to_string()),
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
                 ({} {:.2} lives in at its pace; simulated {:.2} begun warm, {:.2} cold)",
                if w.chosen { "warm" } else { "cold" },
                if w.by_instance {
                    "each instance's first recycle"
                } else {
                    "the window's first recycle"
                },
                w.recorded,
                w.warm,
                w.cold
            )
        });
        let misfit = self.misfit.as_ref().map_or(String::new(), |m| {
            format!(
                "; the nearest, {}, is off its own windows on the {} (recorded {:.2}, its \
                 windows {:.2}..{:.2}: {:.1} sd), so the base's is kept{}",
                m.kind,
                m.statistic,
                m.recorded,
                m.low,
                m.high,
                m.z,
                if self.pinned_like() {
                    ": each life's requests differ from its siblings' more than a fair share \
                     gives, yet the slots recycle alike, as where a connection stays with the \
                     worker that accepted it ([client] connections = \"pinned\")"
                } else {
                    ""
                }
            )
        });
        format!(
            "which idle worker takes a request (fleet.accept): {what} off {} {} \
             (their requests' index of dispersion {:.2}; simulated windows {:.2} with the \
             longest idle taking it, {:.2} with any idle one at random, {:.2} with the \
             latest idle{first}{share}){warm}{misfit}",
            self.lives,
            self.lives_from,
            self.recorded,
            self.longest_idle,
            self.random,
            self.most_recent
        )
    }
}

/// Reads `[fleet] accept` off the recording where its lives allow
/// (`None`: too few lives, or the simulated windows gave too few), on
/// purpose-9 seeds at the plain start point without busy deferral.
///
/// `bound` is how the rows bound lives before the rate was read: rows
/// that name no slot are chained for the reading even where the chained
/// rate was not believed (`moments::traffic`'s band) and the rate comes
/// off the window, as it does where one worker an instance takes nearly
/// every request at several times the fleet's pace (seven of sixteen
/// such recordings without ids: the kind was not read, the base's racing
/// workers stood, and boot came out 40-220 MB low).
pub fn read(
    regime: &Regime,
    bound: Lives,
    boot: &Boot,
    structures: &Structures,
    base: &Scenario,
    shared: &Shared,
) -> Option<Reading> {
    let cx = boot.context;
    let data = &boot.data;
    let ready_s = base.fleet.boot.as_secs_f64();
    let chained = matches!(bound, Lives::ChainedByInstance | Lives::ChainedInFleet);
    // A sample read as the rows bound lives (simulated windows alike).
    let read_as = |x: &Sample| -> Option<Sample> {
        (chained && x.lives != bound).then(|| Sample {
            lives: bound,
            ..x.clone()
        })
    };
    let rec = read_as(&regime.sample);
    let rec = rec.as_ref().unwrap_or(&regime.sample);
    let (recorded, lives) = dispersion(rec, &cx, ready_s, MIN_LIVES)?;
    let share = top_share(rec, MIN_LIVES);
    let hot = hot_dispersion(rec, &cx, ready_s, MIN_LIVES).map(|h| h.0);
    let second = share.or(hot);
    let kinds = if second.is_some() { KINDS.len() } else { 3 };
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
    // Per kind, the windows' index and top share, and their medians.
    let mut medians = Vec::new();
    let mut windows_of = Vec::new();
    for kind in &KINDS[..kinds] {
        let mut extra = vec![set("fleet.accept", toml::Value::String((*kind).into()))];
        if matches!(*kind, "most_recent" | "first") {
            extra.push(set("fleet.warm_start", toml::Value::Boolean(hot_warm)));
        }
        let got = simulated(structures, shared, boot, &at, extra, &seeds, |x| {
            let y = read_as(x);
            let x = y.as_ref().unwrap_or(x);
            let d = dispersion(x, &cx, ready_s, MIN_SIM_LIVES)?.0;
            let second = if share.is_some() {
                top_share(x, MIN_SIM_LIVES)
            } else {
                hot_dispersion(x, &cx, ready_s, MIN_SIM_LIVES).map(|h| h.0)
            };
            Some((d, second))
        })?;
        let mut w = vec![got.iter().map(|g| g.0).collect::<Vec<_>>()];
        if second.is_some() {
            w.push(got.iter().filter_map(|g| g.1).collect());
        }
        medians.push(
            w.iter()
                .map(|x| median(x.clone()))
                .collect::<Option<Vec<_>>>()?,
        );
        windows_of.push(w);
    }
    let mut recorded_stats = vec![recorded];
    recorded_stats.extend(second);
    // The kind read must reproduce the recording on each statistic, not
    // only lie nearest it: a concentration no kind makes (connections
    // pinned to the worker that accepted them: lives unequal, slots
    // alike) would otherwise be read as the latest idle taking it.
    let chosen = choose(&recorded_stats, &medians);
    let misfit = chosen.and_then(|c| {
        let k = KINDS.iter().position(|x| *x == c)?;
        let (j, z) = misfit(&recorded_stats, &windows_of[k])?;
        let w = &windows_of[k][j];
        Some(Misfit {
            kind: c,
            statistic: match (j, share.is_some()) {
                (0, _) => "index of dispersion",
                (_, true) => "top share",
                _ => "index of lives chained one an instance",
            },
            recorded: recorded_stats[j],
            low: w.iter().copied().fold(f64::INFINITY, f64::min),
            high: w.iter().copied().fold(f64::NEG_INFINITY, f64::max),
            z,
        })
    });
    Some(Reading {
        recorded,
        lives,
        lives_from: rec.lives.label(),
        longest_idle: medians[0][0],
        random: medians[1][0],
        most_recent: medians[2][0],
        first: medians.get(3).map(|m| m[0]),
        hot_index: hot.filter(|_| share.is_none()).map(|recorded| ByKind {
            recorded,
            longest_idle: medians[0][1],
            random: medians[1][1],
            most_recent: medians[2][1],
            first: medians[3][1],
        }),
        top_share: share.map(|recorded| ByKind {
            recorded,
            longest_idle: medians[0][1],
            random: medians[1][1],
            most_recent: medians[2][1],
            first: medians[3][1],
        }),
        chosen: if misfit.is_some() {
            "none"
        } else {
            chosen.unwrap_or("none")
        },
        misfit,
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
    // By instance where the rows name them; else the window's first
    // recycle, in the simulated windows too (their rows name them).
    let by_instance = regime.sample.rows.iter().all(|r| r.instance.is_some());
    let late = |s: &Sample| {
        let rate = s.rows.iter().map(|r| r.requests).sum::<f64>() / (s.end_s - s.start_s);
        lives::hot_lateness_by(s, rate / instances, by_instance)
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
        by_instance,
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
