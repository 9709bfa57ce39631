//! Busy deferral read off the recording's overshoot (the seeds' decision
//! core defers a due recycle while the instance is busy, for at most
//! `defer_max_s`, re-asking at each sample).
//!
//! A recycle no gate held is sampled a uniform fraction of a tick after
//! its worker crossed the limit: its overshoot is uniform on (0, 2)
//! half-ticks. A deferred one asks again a tick later, and again, until the
//! instance is quiet or `defer_max_s` has passed since the first ask: `k`
//! deferrals shift it to (2k, 2k + 2). The recording's overshoot is then a
//! mixture whose weights say how often the instance was busy (`busy_rps`
//! against its rate) and whose shift says `defer_max_s` in ticks. A wrong
//! boot scales every row's overshoot by nearly the same factor
//! (`(rss - boot) / (rss - boot')`) and keeps the mixture's shape, so the
//! scan reads the shape at the boot that matches best.
//!
//! The scan: simulated windows (the plain memory model, at the start
//! point) for deferral off, the base's, and a grid of `busy_rps` (multiples
//! of the instance's mean rate) and `defer_max_s` (multiples of the tick),
//! and off once more under the base's memory model where it has warm-up,
//! steps or surges (steps make recycles late without any deferral);
//! each scored by the least Cramér-von Mises distance between the
//! recording's overshoot at any boot and the windows' overshoot at their
//! own (known) boot. Off is kept wherever it fits within the recording's
//! noise of the best, and where a deferral fits better, only if it fits
//! off the floor of the boots tried (`choose`). A read deferral's simulated overshoot
//! quantiles become the boot statistic's targets; the chosen deferral's
//! (a read one's or off's) whole simulated overshoot is the boot
//! statistic's reference (`shape_match.rs`).

use super::calibration::{Options, round};
use super::fit::{self, Problem, Theta};
use super::moments::{self, Moments, OVERSHOOT_QUANTILES};
use super::setup::{Boot, Regime, Structures};
use super::stages::Shared;
use crate::scenario::RawScenario;

/// A structure's busy deferral.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Deferral {
    Off,
    /// The base scenario's `busy_rps` and `defer_max_s`.
    Base,
    /// Values the scan read off the recording.
    Read {
        busy_rps: f64,
        defer_max_s: f64,
    },
}

impl Deferral {
    pub fn is_on(self) -> bool {
        self != Deferral::Off
    }

    pub fn label(self) -> String {
        match self {
            Deferral::Off => "off".into(),
            Deferral::Base => "the base's".into(),
            Deferral::Read {
                busy_rps,
                defer_max_s,
            } => format!("busy_rps {busy_rps:.3}, defer_max_s {defer_max_s:.0}"),
        }
    }
}

/// `busy_rps` tried, in multiples of an instance's mean arrival rate: from
/// busy nearly always (0.8) to busy on a rare burst (1.2, with a 60 s
/// window at an instance's ~1 req/s).
pub const BUSY_RATIOS: [f64; 7] = [0.8, 0.9, 0.95, 1.0, 1.05, 1.1, 1.2];

/// `defer_max_s` tried, in ticks (a recycle re-asks once a tick, so values
/// between two multiples defer alike).
pub const DEFER_TICKS: [f64; 5] = [1.0, 2.0, 3.0, 4.0, 6.0];

/// How far over the least two-sample Cramér-von Mises statistic a point
/// still fits: the statistic's 95th percentile when both samples share a
/// distribution (its mean is 1/6).
pub const PLAUSIBLE: f64 = 0.461;

/// Boots tried for the recording's overshoot between the floor and the
/// lowest recycle RSS.
const BOOTS: usize = 120;

/// Simulated windows per scanned deferral: a quarter of a fit's.
fn windows_per_point(budget: super::Budget) -> usize {
    (budget.seeds / 4).max(2)
}

/// The scan's simulated windows (when the base defers).
pub fn scan_windows(budget: super::Budget) -> usize {
    (3 + BUSY_RATIOS.len() * DEFER_TICKS.len()) * windows_per_point(budget)
}

/// One scanned deferral and how the recording's overshoot compares.
#[derive(Clone, Debug, PartialEq)]
pub struct Point {
    pub deferral: Deferral,
    /// Simulated under the base's memory model (warm-up, steps, surges),
    /// not the plain one: off only, where the base has one
    /// (`Structures::base_memory`).
    pub base_memory: bool,
    /// The least Cramér-von Mises distance over boots (`f64::INFINITY` when its windows
    /// gave no recycles).
    pub distance: f64,
    /// The boot where it was least.
    pub boot_mb: f64,
    /// The distance at the lowest boot tried (the floor).
    pub floor_distance: f64,
    /// The windows' recycles pooled.
    pub pooled: usize,
    /// The share of the windows' recycles sampled more than a tick after
    /// the crossing (over 2 half-ticks).
    pub late: f64,
    /// The windows' overshoot quantiles at `OVERSHOOT_QUANTILES`.
    pub targets: [f64; 4],
    /// The windows' overshoot, pooled (`None` without recycles).
    pub shape: Option<moments::ShapeRef>,
}

/// One scanned deferral in calibration.json (`structure.deferral_scan`).
#[derive(Clone, Debug, PartialEq, serde::Serialize)]
pub struct ScanPoint {
    /// "off", "base" (the base scenario's values) or "read" (the grid's).
    pub deferral: &'static str,
    /// The memory model its windows were simulated under: "plain", or
    /// "base" (off under the base's warm-up, steps and surges).
    pub memory: &'static str,
    pub busy_rps: Option<f64>,
    pub defer_max_s: Option<f64>,
    /// The least Cramér-von Mises distance between the recording's
    /// overshoot (at any boot) and the simulated windows'.
    pub distance: f64,
    /// The boot it was least at.
    pub boot_mb: f64,
    /// The simulated recycles' share sampled more than a tick after the crossing.
    pub late_share: f64,
    /// Within the recording's noise of the best.
    pub plausible: bool,
    pub chosen: bool,
}

/// The scan's result.
pub struct Scan {
    pub chosen: Deferral,
    /// The boot statistic's targets under the chosen deferral (`None`: off
    /// or the base's, an unheld recycle's).
    pub targets: Option<[f64; 4]>,
    pub points: Vec<Point>,
    /// The points that fit as well as the recording's noise allows, with
    /// the boot each fits best at and whether under the base's memory.
    pub plausible: Vec<(Deferral, f64, bool)>,
    /// The chosen point was simulated under the base's memory (off only).
    pub chosen_base_memory: bool,
    /// The recording's share of recycles over 2 half-ticks at the chosen
    /// point's boot.
    pub late: f64,
    /// The chosen deferral's simulated overshoot (a read one's, or off's),
    /// for the boot statistic (`moments::shape_boot`).
    pub shape: Option<moments::ShapeRef>,
    /// Where several read deferrals fit alike, two more along their ridge
    /// (`ridge_members`), each fitted too, so that the draws carry the
    /// ridge (`ridge.rs`).
    pub ridge: Vec<Member>,
}

/// A read deferral along the scan's ridge, with what its fit needs.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Member {
    pub deferral: Deferral,
    /// The boot its shape matched best at, in the scan.
    pub boot_mb: f64,
    pub targets: [f64; 4],
    pub shape: moments::ShapeRef,
}

/// Which of the plausible read deferrals, sorted by the boot each fits at,
/// are fitted beside the chosen one at `median`: the lower and upper
/// quartiles, moved off the median where they would be it. None with fewer
/// than three.
pub fn ridge_members(len: usize, median: usize) -> Vec<usize> {
    if len < 3 {
        return Vec::new();
    }
    let mut lo = len / 4;
    let mut hi = (3 * len / 4).min(len - 1);
    if lo == median {
        lo = median.saturating_sub(1);
    }
    if hi == median {
        hi = (median + 1).min(len - 1);
    }
    [lo, hi].into_iter().filter(|&i| i != median).collect()
}

/// The deferrals scanned: off, the base's, and the grid around the
/// instance's mean rate `instance_rps`.
pub fn grid(instance_rps: f64, tick_s: f64) -> Vec<Deferral> {
    let mut out = vec![Deferral::Off, Deferral::Base];
    for r in BUSY_RATIOS {
        for k in DEFER_TICKS {
            // As the calibrated scenario will say them.
            out.push(Deferral::Read {
                busy_rps: round(r * instance_rps, "busy_rps"),
                defer_max_s: round(k * tick_s, "defer_max_s"),
            });
        }
    }
    out
}

/// Scans the grid at the plain start (`structures.start`) on purpose-8
/// seeds. The recording's overshoot is read at boots from the floor to its
/// lowest RSS (at the observed boot alone when an RSS series gave one).
pub fn scan(
    regime: &Regime,
    boot: &Boot,
    structures: &Structures,
    instances: f64,
    shared: &Shared,
) -> Scan {
    let data = &boot.data;
    let cx = boot.context;
    let at: Theta = structures
        .start(super::Memory::Plain, data)
        .clamp(shared.floor_boot);
    let boots: Vec<f64> = match boot.observed_boot {
        Some(b) => vec![b.mb],
        None => {
            let lo = shared.floor_boot;
            let hi = regime
                .sample
                .rows
                .iter()
                .map(|r| r.rss_mb)
                .fold(f64::INFINITY, f64::min)
                - 0.5;
            (0..BOOTS)
                .map(|i| lo + (hi - lo).max(0.0) * i as f64 / (BOOTS - 1) as f64)
                .collect()
        }
    };
    let recorded: Vec<Vec<f64>> = boots
        .iter()
        .map(|&b| moments::overshoots_at(&regime.sample, &cx, data.rps, b))
        .collect();
    // The windows' overshoot over their own boot.
    let mut sim_cx = cx;
    sim_cx.known_boot_mb = Some(at.boot_mb);
    let seeds = fit::seeds(shared.key, 8, windows_per_point(shared.budget));
    let tick_s = at.ln_tick.exp();
    let points: Vec<Point> = grid(data.rps / instances.max(1.0), tick_s)
        .into_iter()
        .filter_map(|d| {
            let sets = structures.checked_sets(super::Memory::Plain, d).ok()?;
            let p: Problem = shared.problem(data, sim_cx, sets);
            let sims = fit::evaluate(&p, &at, &seeds);
            Some(point(d, &sims, &boots, &recorded))
        })
        .collect();
    // Off under the base's memory too, where it has warm-up, steps or
    // surges: an overshoot made of steps (the embedded default's 19.5 MB at
    // 0.0055 a request) is late past any tick without a deferral, and read
    // under the plain model alone a deferral the fleet does not have won
    // the scan (boot + warm-up 175 MB low, docs/calibration.md, thirtieth
    // session).
    let mut points = points;
    if structures.base_memory() {
        let at = structures
            .start(super::Memory::Base, data)
            .clamp(shared.floor_boot);
        let mut cx = sim_cx;
        cx.known_boot_mb = Some(at.boot_mb);
        if let Ok(sets) = structures.checked_sets(super::Memory::Base, Deferral::Off) {
            let p: Problem = shared.problem(data, cx, sets);
            let sims = fit::evaluate(&p, &at, &seeds);
            let mut off = point(Deferral::Off, &sims, &boots, &recorded);
            off.base_memory = true;
            points.push(off);
        }
    }
    choose(points, regime.sample.rows.len(), &boots, &recorded)
}

/// A deferral's windows against the recording at each boot.
fn point(d: Deferral, sims: &[Option<Moments>], boots: &[f64], recorded: &[Vec<f64>]) -> Point {
    let mut pooled: Vec<f64> = sims
        .iter()
        .flatten()
        .flat_map(|m| m.overshoot.iter().copied())
        .collect();
    pooled.sort_by(f64::total_cmp);
    let (distance, boot_mb) = recorded
        .iter()
        .zip(boots)
        .filter_map(|(r, &b)| Some((cramer_von_mises(r, &pooled)?, b)))
        .fold(
            (f64::INFINITY, f64::NAN),
            |a, x| if x.0 < a.0 { x } else { a },
        );
    let floor_distance = recorded
        .first()
        .and_then(|r| cramer_von_mises(r, &pooled))
        .unwrap_or(f64::INFINITY);
    Point {
        deferral: d,
        base_memory: false,
        distance,
        boot_mb,
        floor_distance,
        pooled: pooled.len(),
        late: late(&pooled),
        targets: OVERSHOOT_QUANTILES.map(|q| moments::quantile(&pooled, q)),
        shape: moments::ShapeRef::of(&pooled),
    }
}

/// The two-sample Cramér-von Mises distance of sorted samples: the mean
/// of `(F_a - F_b)^2` over the pooled values (more sensitive than KS to a
/// mixture's weights, which spread over the whole distribution).
pub fn cramer_von_mises(a: &[f64], b: &[f64]) -> Option<f64> {
    if a.is_empty() || b.is_empty() {
        return None;
    }
    let (n, m) = (a.len() as f64, b.len() as f64);
    let (mut i, mut j, mut sum) = (0, 0, 0.0);
    while i < a.len() || j < b.len() {
        let x = match (a.get(i), b.get(j)) {
            (Some(&x), Some(&y)) => x.min(y),
            (Some(&x), None) => x,
            (None, Some(&y)) => y,
            (None, None) => break,
        };
        let (i0, j0) = (i, j);
        while i < a.len() && a[i] <= x {
            i += 1;
        }
        while j < b.len() && b[j] <= x {
            j += 1;
        }
        let d = i as f64 / n - j as f64 / m;
        sum += d * d * ((i - i0) + (j - j0)) as f64;
    }
    Some(sum / (n + m))
}

/// The share of values over 2 half-ticks.
fn late(sorted: &[f64]) -> f64 {
    if sorted.is_empty() {
        return f64::NAN;
    }
    sorted.iter().filter(|x| **x > 2.0).count() as f64 / sorted.len() as f64
}

/// The scan's choice. Each point's distance is scaled to the two-sample
/// Cramér-von Mises statistic `T = n m / (n + m) * distance` (`n` the
/// recording's rows, `m` the windows' pooled recycles). Every point within
/// `PLAUSIBLE` of the least `T` fits the recording as well as its noise
/// allows, unless it does so only at an end of the boots tried, and off
/// only where it also fits off the floor of the boots tried or fits best
/// of all. Off, if among them, is chosen (a deferral must earn its place);
/// else, of the deferrals among them, the one whose boot is their median:
/// a recording where every recycle defers cannot tell a shift of one tick
/// at a lower boot from two ticks at a higher one, and the median keeps
/// the choice off either end of the ridge (f2 of tools/truth/CLEANROOM.md:
/// 45 s at 288 MB and 90 s at 404 MB fit alike, the truth 90 s at 402).
fn choose(points: Vec<Point>, rows: usize, boots: &[f64], recorded: &[Vec<f64>]) -> Scan {
    let n = rows.max(1) as f64;
    let t = |p: &Point| p.distance * n * p.pooled as f64 / (n + p.pooled as f64);
    let best = points
        .iter()
        .filter(|p| p.distance.is_finite() && p.pooled > 0)
        .map(t)
        .fold(f64::INFINITY, f64::min);
    // A point that matches best at an end of the boots tried fits only by
    // leaving the search (f8 of tools/truth/CLEANROOM.md: two at the 136 MB
    // floor pulled the median off the truth's deferral).
    let inside = |b: f64| boots.len() == 1 || (b > boots[0] && b < boots[boots.len() - 1]);
    // Off, preferred wherever it fits, must fit off the floor too where a
    // deferral fits better: where the floor fits it as well as its best
    // within the noise, off fits only by a boot the search cannot go under
    // (k9 of the second held-out draw in tools/truth/CLEANROOM.md: 28 of 50
    // recycles deferred, off's best at 146 MB over a 136 MB floor, boot 180
    // MB low). Where off fits best of all it stays (a recording of few
    // rows fits off alike at any boot: k8 of that draw, 38 whole-MB rows).
    let t_floor = |p: &Point| p.floor_distance * n * p.pooled as f64 / (n + p.pooled as f64);
    let off_the_floor = |p: &Point| {
        p.deferral != Deferral::Off
            || boots.len() == 1
            || t(p) <= best
            || t_floor(p) > t(p) + PLAUSIBLE
    };
    let plausible: Vec<&Point> = points
        .iter()
        .filter(|p| {
            p.pooled > 0 && t(p) <= best + PLAUSIBLE && inside(p.boot_mb) && off_the_floor(p)
        })
        .collect();
    // Of off under the plain memory and under the base's, the nearer.
    let off = plausible
        .iter()
        .filter(|p| p.deferral == Deferral::Off)
        .min_by(|a, b| t(a).total_cmp(&t(b)));
    let mut on: Vec<&&Point> = plausible.iter().filter(|p| p.deferral.is_on()).collect();
    on.sort_by(|a, b| a.boot_mb.total_cmp(&b.boot_mb).then(t(a).total_cmp(&t(b))));
    let median = on.len().saturating_sub(1) / 2;
    let chosen = match (off, on.get(median)) {
        (Some(p), _) => *p,
        (None, Some(p)) => *p,
        (None, None) => match points.iter().find(|p| p.deferral == Deferral::Off) {
            Some(p) => p,
            None => {
                return Scan {
                    chosen: Deferral::Off,
                    targets: None,
                    plausible: Vec::new(),
                    chosen_base_memory: false,
                    points,
                    late: f64::NAN,
                    shape: None,
                    ridge: Vec::new(),
                };
            }
        },
    };
    let at = boots.iter().position(|&b| b == chosen.boot_mb);
    let late = at.map_or(f64::NAN, |i| late(&recorded[i]));
    Scan {
        chosen: chosen.deferral,
        // A read deferral's overshoot is tick-shaped; the base's may hold
        // until pressure (0.56 req/s for up to 3600 s on the default), and
        // its quantiles as targets put boot 180 MB low on a 1 x 6 fleet it
        // generated (tests/calibrate_shape.rs), where the unheld targets
        // and the slope statistic had it within 25 MB.
        targets: matches!(chosen.deferral, Deferral::Read { .. }).then_some(chosen.targets),
        late,
        shape: match chosen.deferral {
            Deferral::Read { .. } | Deferral::Off => chosen.shape,
            _ => None,
        },
        ridge: match (off, chosen.deferral) {
            (None, Deferral::Read { .. }) => ridge_members(on.len(), median)
                .into_iter()
                .filter_map(|i| {
                    let p = on[i];
                    Some(Member {
                        deferral: p.deferral,
                        boot_mb: p.boot_mb,
                        targets: p.targets,
                        shape: p.shape?,
                    })
                })
                .filter(|m| matches!(m.deferral, Deferral::Read { .. }))
                .collect(),
            _ => Vec::new(),
        },
        plausible: plausible
            .iter()
            .map(|p| (p.deferral, p.boot_mb, p.base_memory))
            .collect(),
        chosen_base_memory: chosen.base_memory,
        points,
    }
}

impl Scan {
    /// Whether `p` fits within the recording's noise.
    fn plausible_point(&self, p: &Point) -> bool {
        self.plausible
            .iter()
            .any(|x| x.0 == p.deferral && x.2 == p.base_memory)
    }

    /// The scanned points as reported in calibration.json.
    pub fn report(&self) -> Vec<ScanPoint> {
        self.points
            .iter()
            .map(|p| {
                let (busy_rps, defer_max_s) = match p.deferral {
                    Deferral::Read {
                        busy_rps,
                        defer_max_s,
                    } => (Some(busy_rps), Some(defer_max_s)),
                    _ => (None, None),
                };
                ScanPoint {
                    deferral: match p.deferral {
                        Deferral::Off => "off",
                        Deferral::Base => "base",
                        Deferral::Read { .. } => "read",
                    },
                    busy_rps,
                    defer_max_s,
                    distance: p.distance,
                    boot_mb: p.boot_mb,
                    late_share: p.late,
                    memory: if p.base_memory { "base" } else { "plain" },
                    plausible: self.plausible_point(p),
                    chosen: p.deferral == self.chosen && p.base_memory == self.chosen_base_memory,
                }
            })
            .collect()
    }

    /// What the scan read, for the notes.
    pub fn note(&self) -> String {
        let off = self
            .points
            .iter()
            .filter(|p| p.deferral == Deferral::Off)
            .map(|p| p.distance)
            .fold(f64::NAN, f64::min);
        let chosen = self.points.iter().find(|p| p.deferral == self.chosen);
        let boots = self.plausible.iter().filter(|x| x.0.is_on()).map(|x| x.1);
        let on = boots.clone().count();
        let lo = boots.clone().fold(f64::INFINITY, f64::min);
        let hi = boots.fold(f64::NEG_INFINITY, f64::max);
        match (self.chosen, chosen) {
            (Deferral::Off, _) | (_, None) => {
                // Recycle rows cannot rule out a deferral at another boot
                // (docs/calibration.md, "Long deferrals and cold starts":
                // off read on two fleets that deferred, boot 36 and 56 MB
                // low, outside its interval): say what boot rests on.
                let also = if on > 0 {
                    format!(
                        "; {on} deferrals fit as well, at boots from {lo:.0} to {hi:.0} MB: \
                         recycle rows cannot tell a fleet that never defers from one that \
                         defers at another boot, so boot and its interval rest on off; if \
                         the fleet defers recycles while busy, give its busy_rps and \
                         defer_max_s in --scenario"
                    )
                } else {
                    String::new()
                };
                format!(
                    "busy deferral: off (the recording's overshoot fits off within its noise, \
                     Cramér-von Mises distance {off:.4}; {} deferrals scanned{also})",
                    self.points.len()
                )
            }
            (d, Some(p)) => {
                let ridge = if self.plausible.len() > 1 {
                    format!(
                        "; {} deferrals fit within the recording's noise, at boots from {lo:.0} \
                         to {hi:.0} MB: the overshoot's shape trades the deferral against boot, \
                         and the one at their median boot is fitted, boot read off the \
                         overshoot's whole shape against its windows': one quantile reads \
                         the details of a deferral misread along the ridge as boot",
                        self.plausible.len()
                    )
                } else {
                    String::new()
                };
                format!(
                    "busy deferral: {} read off the overshoot's shape (Cramér-von Mises \
                     distance {:.4} against off's {off:.4}; {:.0}% of the recording's recycles \
                     and {:.0}% of the simulated ones sampled more than a tick after the \
                     crossing; {} deferrals scanned{ridge})",
                    d.label(),
                    p.distance,
                    100.0 * self.late,
                    100.0 * p.late,
                    self.points.len()
                )
            }
        }
    }
}

/// The busy deferrals the structures are fitted under before any scan: a
/// base that does not defer, off (the base's is off too: both would fit
/// one structure twice); a base that defers, its deployed deferral as
/// given where it is not read (`Options::read_deferral`: recycle rows
/// cannot tell off from a deferral at another boot, so off beside it was
/// chosen on noise, boot 47 and 232 MB low: docs/calibration.md, "Long
/// deferrals and cold starts"), else the scan's choice replaces both.
pub(super) fn given_deferrals(base: &RawScenario, options: Options) -> Vec<Deferral> {
    match (base.policy.busy_deferral, options.read_deferral) {
        (false, _) => vec![Deferral::Off],
        (true, false) => vec![Deferral::Base],
        (true, true) => vec![Deferral::Off, Deferral::Base],
    }
}

/// How many busy deferrals the structures are fitted under: one, the
/// scan's choice, the base's own deferral or off (`given_deferrals`).
pub fn deferral_candidates(base: &RawScenario, options: Options) -> usize {
    if base.policy.busy_deferral && options.read_deferral {
        1
    } else {
        given_deferrals(base, options).len()
    }
}

#[cfg(test)]
mod tests;
