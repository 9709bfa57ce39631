//! Worker lives from recycle rows, which the fleet's rate is read off
//! (`moments::traffic`): a slot's own consecutive recycles, or, where rows
//! name no slot that recycles again (a pid per life, no ids), lives chained
//! from each row's requests; and whether the rows show a cold start (a
//! slot's first recycle as late as a whole life).

use super::moments::{Row, Sample};
use std::collections::BTreeMap;

/// What the rows say of which recycle began each worker's life, from the
/// most to the least: the rate is requests over complete lives, however
/// they are found, and a simulated window is read the recording's way
/// (`Lives::coarser`), so what a way misses cancels in the fit.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Lives {
    /// Rows name a worker slot that recycles again (`w0`, `w1`...): a
    /// slot's consecutive recycles bound one life.
    Slots,
    /// Slots as above, one worker an instance taking nearly every request
    /// and which one changing (`[fleet] accept = "most_recent"`, read off
    /// the rows): the lives' rate is believed only as near the window's as
    /// the lives the window's ends cut allow (`moments::CHAIN_BAND`, as a
    /// chained rate is): within it, it is the truth's within 4% on four of
    /// five clean-room recordings fed so, and 27% over on the fifth, whose
    /// window's rate is 3% over.
    SlotsHot,
    /// Slots as above, fed unevenly (one worker an instance takes nearly
    /// every request: `[fleet] accept` most_recent or first, read off the
    /// rows): a hot worker's lives run at its instance's pace and its
    /// siblings' at a trickle, and their rate over complete lives hardly
    /// moves with the fleet's (a busier fleet completes more of the slow
    /// lives: 5.05 at the truth's 1.75 rps and 5.38 at 3.12 on
    /// tools/truth/CLEANROOM.md's f6 fed first), so the rate is the rows'
    /// requests over the window; the lives still give the accept reading.
    SlotsUneven,
    /// Rows name their instance but not a slot that recycles again (a pid
    /// per life): each life is chained to the instance's recycle it most
    /// likely began at (`chained_lives`).
    ChainedByInstance,
    /// Rows name no instance: chained within the whole fleet.
    ChainedInFleet,
    /// Rows name their instance but no slot, and the first idle slot of
    /// each takes nearly every request (`[fleet] accept = "first"`, read
    /// off lives chained one an instance: `accept::hot_dispersion`): one
    /// chain an instance at the instance's pace, the rate its lives'
    /// (`moments::traffic`). Its lives follow one another as a slot's own;
    /// the window's requests moved with where the window's first lives
    /// began, as `slots_since_first` says, and came out 5-10% high.
    HotByInstance,
    /// As `HotByInstance` where rows name no instance: as many chains in
    /// the fleet as it has instances.
    HotInFleet,
    /// Requests over the window (the tests' fixed rate).
    Window,
}

impl Lives {
    /// The way a window is read when the recording is read `other`'s way.
    pub fn coarser(self, other: Lives) -> Lives {
        self.max(other)
    }

    pub fn label(self) -> &'static str {
        match self {
            Lives::Slots => "complete slot lives",
            Lives::SlotsUneven => "requests over the window (slots fed unevenly)",
            Lives::SlotsHot => "complete slot lives (one worker an instance hot)",
            Lives::ChainedByInstance => "lives chained within each instance",
            Lives::ChainedInFleet => "lives chained within the fleet",
            Lives::HotByInstance => "lives chained one an instance (the first idle slot fed)",
            Lives::HotInFleet => {
                "lives chained within the fleet, one chain an instance (the first idle slot fed)"
            }
            Lives::Window => "requests over the window",
        }
    }
}

/// `workers * sum(requests) / sum(life)` over `lives`.
pub(super) fn rate(lives: &[(f64, f64, f64)], workers: f64) -> f64 {
    let n: f64 = lives.iter().map(|l| l.2).sum();
    let t: f64 = lives.iter().map(|l| l.1 - l.0).sum();
    workers * n / t
}

/// The pace a chained life is assumed to have served its requests at:
/// the fleet's rate per worker, shaped by the diurnal cosine the hourly
/// recycle counts show (`amplitude` 0 where they show none).
#[derive(Clone, Copy, Debug, PartialEq)]
pub(super) struct Pace {
    /// Requests a second per worker, averaged over the profile.
    pub per_worker: f64,
    pub amplitude: f64,
    pub peak_hour: f64,
    /// The hour of day at the regime's start (`Sample::start_s`).
    pub start_hour: f64,
}

impl Pace {
    /// When a life that ended at `t` (from the regime's start) after
    /// `requests` began, at this pace: where a worker's requests served
    /// since the start, `per_worker * (t + wave(t))`, were `requests`
    /// fewer (bisection; they rise at least at `1 - amplitude` of the mean
    /// pace, which bounds the search).
    pub(super) fn began(&self, t: f64, requests: f64) -> f64 {
        if self.amplitude == 0.0 {
            return t - requests / self.per_worker;
        }
        let w = std::f64::consts::TAU / 24.0;
        let phase = |t: f64| w * (self.start_hour + t / 3600.0 - self.peak_hour);
        let k = self.amplitude * 3600.0 / w;
        // Requests a worker serves in `[0, x]`, less their constant part.
        let served = |x: f64| self.per_worker * (x + k * phase(x).sin());
        let target = served(t) - requests;
        let (mut lo, mut hi) = (
            t - requests / (self.per_worker * (1.0 - self.amplitude)) - 1.0,
            t,
        );
        // 2^-48 of a span below a few days: well under a millisecond.
        for _ in 0..48 {
            let mid = 0.5 * (lo + hi);
            if served(mid) < target {
                lo = mid;
            } else {
                hi = mid;
            }
        }
        0.5 * (lo + hi)
    }
}

/// The complete lives `s`'s rows bound, the way `s.lives` says
/// (`workers` in the fleet, `per_instance` to an instance); chained
/// lives are found at `pace` (one pass: the chaining barely depends on
/// the pace's level, while refining the level from the chained lives
/// themselves ran away, to several times the rate, on windows whose
/// pace the chaining had wrong).
pub(super) fn complete(
    s: &Sample,
    workers: f64,
    per_instance: f64,
    pace: Pace,
) -> Vec<(f64, f64, f64)> {
    match s.lives {
        Lives::Slots | Lives::SlotsHot | Lives::SlotsUneven => slot_lives(s),
        Lives::Window => Vec::new(),
        Lives::HotByInstance | Lives::HotInFleet => {
            if !(pace.per_worker.is_finite() && pace.per_worker > 0.0) {
                return Vec::new();
            }
            hot_lives(
                s,
                s.lives == Lives::HotByInstance,
                workers / per_instance.max(1.0),
                pace,
            )
        }
        chained => {
            let slots = if chained == Lives::ChainedByInstance {
                per_instance
            } else {
                workers
            };
            if !(pace.per_worker.is_finite() && pace.per_worker > 0.0) {
                return Vec::new();
            }
            chained_lives(s, chained, slots.round() as usize, pace)
        }
    }
}

/// One life bounded by two recycles of a slot: `(from_s, to_s, requests)`,
/// times relative to the regime's start.
pub(super) fn slot_lives(s: &Sample) -> Vec<(f64, f64, f64)> {
    let mut by_slot: BTreeMap<&(String, String), Vec<&Row>> = BTreeMap::new();
    for r in &s.rows {
        if let Some(k) = &r.slot {
            by_slot.entry(k).or_default().push(r);
        }
    }
    let mut out = Vec::new();
    for rows in by_slot.values_mut() {
        rows.sort_by(|a, b| a.t_s.total_cmp(&b.t_s));
        for w in rows.windows(2) {
            let (a, b) = (w[0].t_s - s.start_s, w[1].t_s - s.start_s);
            if b > a {
                out.push((a, b, w[1].requests));
            }
        }
    }
    out
}

/// Lives from rows that name no slot that recycles again (a pid per life,
/// or no ids): within each instance (`per_instance` workers) or the whole
/// fleet (`workers`), each row in time order is chained to the earlier
/// recycle its life most likely began at, the one nearest the time its
/// requests began at `pace` (`Pace::began`) of a slot free by then, or to
/// the window's start when the life began before it (a censored life,
/// left out). Each group holds as many chains as it has workers. A
/// group's lives add up to its chains' last ends less their first, so a
/// match that is wrong here and there moves the rate only through which
/// rows begin a chain: on 36 SimPy days of three fleets (pids dropped),
/// the rate from chained lives equalled the one from the slots' own
/// lives, where requests over the window erred by -6 to -2% (sd
/// 2.6-5.4%). A pace too fast all along is not so harmless: every row
/// then looks young and joins the latest recycle, one chain takes most
/// rows and the rate comes out up to `workers` times too high (a diurnal
/// day read at a constant pace: 2.7x, and more when refined from its own
/// lives). Hence the diurnal shape in `pace`, and `moments::traffic`'s
/// check of the result against the window's requests.
pub(super) fn chained_lives(
    s: &Sample,
    groups: Lives,
    slots: usize,
    pace: Pace,
) -> Vec<(f64, f64, f64)> {
    let mut by_group: BTreeMap<Option<&str>, Vec<&Row>> = BTreeMap::new();
    for r in &s.rows {
        let key = match groups {
            Lives::ChainedByInstance => r.instance.as_deref(),
            _ => None,
        };
        by_group.entry(key).or_default().push(r);
    }
    let slots = slots.max(1);
    let mut out = Vec::new();
    for rows in by_group.values_mut() {
        rows.sort_by(|a, b| a.t_s.total_cmp(&b.t_s));
        // Each chain's last recycle (`None`: none yet in the window).
        let mut ends: Vec<Option<f64>> = vec![None; slots];
        for r in rows.iter() {
            let began = s.start_s + pace.began(r.t_s - s.start_s, r.requests);
            let distance = |e: &Option<f64>| match *e {
                None => (began - s.start_s).max(0.0),
                Some(e) => (began - e).abs(),
            };
            let pick = ends
                .iter()
                .enumerate()
                .filter(|(_, e)| e.is_none_or(|e| e < r.t_s))
                .min_by(|a, b| distance(a.1).total_cmp(&distance(b.1)))
                .map(|(k, _)| k);
            let Some(k) = pick else {
                continue;
            };
            if let Some(e) = ends[k] {
                out.push((e - s.start_s, r.t_s - s.start_s, r.requests));
            }
            ends[k] = Some(r.t_s);
        }
    }
    out
}

/// Lives chained one an instance at `pace` (the instance's): within each
/// instance where `by_instance`, else `instances` chains in the fleet.
pub(super) fn hot_lives(
    s: &Sample,
    by_instance: bool,
    instances: f64,
    pace: Pace,
) -> Vec<(f64, f64, f64)> {
    let (groups, chains) = if by_instance {
        (Lives::ChainedByInstance, 1.0)
    } else {
        (Lives::ChainedInFleet, instances)
    };
    chained_lives(s, groups, chains.round().max(1.0) as usize, pace)
}

/// Whether the cold start is what the rows show: a slot's first recycle
/// (or the window's first) comes as late as a whole life would take at
/// `per_worker` requests a second. Fed unevenly (`Lives::SlotsUneven`),
/// a cold sibling's first recycle comes late whatever the start: each
/// instance's first is read, at its hot worker's pace (`hot_cold_start`).
pub(super) fn cold_start(s: &Sample, per_worker: f64) -> bool {
    match s.lives {
        Lives::Slots => firsts_late(s, per_worker, |r| r.slot.clone()),
        Lives::SlotsUneven | Lives::SlotsHot => hot_cold_start(s, per_worker),
        _ => window_cold_start(s, per_worker),
    }
}

/// `cold_start` where one worker an instance takes nearly every request:
/// each instance's first recycle (the window's, without instances).
pub(super) fn hot_cold_start(s: &Sample, per_worker: f64) -> bool {
    match hot_lateness(s, per_worker) {
        Some(late) => late > 0.75,
        None => window_cold_start(s, per_worker),
    }
}

/// How late each instance's first recycle came, in lives at `per_worker`
/// (`firsts_late`'s mean), where every row names its instance.
pub(super) fn hot_lateness(s: &Sample, per_worker: f64) -> Option<f64> {
    if !s.rows.iter().all(|r| r.instance.is_some()) {
        return None;
    }
    hot_lateness_by(s, per_worker, true)
}

/// `hot_lateness` by instance, or (`by_instance` false: rows that name no
/// instance, and simulated windows read as they are) the window's first
/// recycle alone, in lives at `per_worker`: a warm window's first comes at
/// the least of the instances' hot workers' remaining lives, a cold one's
/// a whole life in.
pub(super) fn hot_lateness_by(s: &Sample, per_worker: f64, by_instance: bool) -> Option<f64> {
    lateness(s, per_worker, |r| match by_instance {
        true => r.instance.clone().map(|i| (i, String::new())),
        false => Some((String::new(), String::new())),
    })
}

/// Whether the first recycle of each group `key` names came, on average,
/// three quarters of its own life or more into the window.
fn firsts_late(
    s: &Sample,
    per_worker: f64,
    key: impl Fn(&Row) -> Option<(String, String)>,
) -> bool {
    lateness(s, per_worker, key).is_some_and(|late| late > 0.75)
}

/// How far into the window the first recycle of each group `key` names
/// came, in its own life's requests at `per_worker` (each capped at 1.5),
/// averaged; `None` without groups.
fn lateness(
    s: &Sample,
    per_worker: f64,
    key: impl Fn(&Row) -> Option<(String, String)>,
) -> Option<f64> {
    let mut firsts: Vec<(Option<(String, String)>, &Row)> = Vec::new();
    for r in &s.rows {
        let k = key(r);
        if k.is_some() && !firsts.iter().any(|f| f.0 == k) {
            firsts.push((k, r));
        }
    }
    let ratios: Vec<f64> = firsts
        .iter()
        .map(|(_, r)| ((r.t_s - s.start_s) * per_worker / r.requests).min(1.5))
        .collect();
    (!ratios.is_empty()).then(|| ratios.iter().sum::<f64>() / ratios.len() as f64)
}

/// `cold_start` read off the window's first recycle: as late as a third
/// of a median life or more.
fn window_cold_start(s: &Sample, per_worker: f64) -> bool {
    let mut n: Vec<f64> = s.rows.iter().map(|r| r.requests).collect();
    if n.is_empty() {
        return false;
    }
    n.sort_by(f64::total_cmp);
    let median = n[n.len() / 2];
    let first = s.rows.iter().map(|r| r.t_s).fold(f64::INFINITY, f64::min);
    (first - s.start_s) * per_worker / median > 0.35
}

/// Slots fed unevenly (`Lives::SlotsUneven`): each slot's requests after
/// its first recycle over the window's time after it, summed over the
/// slots that recycle twice or more (`None` where none does). A slot's
/// first row counts a life begun before the window: as long as the
/// window's opening found it in a fleet that had run for long (lives are
/// met in proportion to their length: 1.68 mean lives' requests on
/// sixteen clean-room recordings of one fleet), one the simulated warm
/// start drew as the worker's own (1.05), or a whole life where the window
/// opened on freshly started workers. A rate of every row's requests over
/// the window moved with all three, and the start is read, not known
/// (`hot_cold_start`: cold on 5 of 15 of those warm recordings, whose rate
/// then came out 2-7% high). What is missed after each slot's last
/// recycle is missed alike in the simulated windows, cut as the
/// recording's is (`fit::Look`).
pub(super) fn slots_since_first(s: &Sample) -> Option<f64> {
    let mut slots: BTreeMap<&(String, String), (f64, f64, usize)> = BTreeMap::new();
    for r in &s.rows {
        let Some(k) = &r.slot else { continue };
        let e = slots.entry(k).or_insert((r.t_s, 0.0, 0));
        if e.2 > 0 {
            e.1 += r.requests;
        }
        e.2 += 1;
    }
    let rates: Vec<f64> = slots
        .values()
        .filter(|(first, _, n)| *n >= 2 && s.end_s > *first)
        .map(|(first, requests, _)| requests / (s.end_s - first))
        .collect();
    (!rates.is_empty()).then(|| rates.iter().sum())
}

#[cfg(test)]
mod tests;
