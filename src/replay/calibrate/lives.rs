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
            let (groups, chains) = if s.lives == Lives::HotByInstance {
                (Lives::ChainedByInstance, 1.0)
            } else {
                (Lives::ChainedInFleet, workers / per_instance.max(1.0))
            };
            chained_lives(s, groups, chains.round().max(1.0) as usize, pace)
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
mod tests {
    use super::super::moments::traffic;
    use super::*;

    /// Two instances of three slots, each slot's lives 900-2700 s long at
    /// 0.5 requests a second, the first begun before the window: rows as a
    /// pid-per-life log writes them (a worker id never repeated).
    fn pid_rows(instances: bool) -> Vec<Row> {
        let mut rows = Vec::new();
        for slot in 0..6usize {
            let mut began = -(300.0 + 400.0 * slot as f64);
            let mut k = 0usize;
            loop {
                let life = 900.0 + ((slot * 7 + k * 11) % 10) as f64 * 200.0;
                let end = began + life;
                if end > 36_000.0 {
                    break;
                }
                let instance = instances.then(|| format!("i{}", slot / 3));
                rows.push(Row {
                    t_s: end,
                    slot: instance.clone().map(|i| (i, format!("pid{slot}-{k}"))),
                    instance,
                    requests: 0.5 * life,
                    rss_mb: 500.0,
                    limit_mb: 490.0,
                });
                began = end;
                k += 1;
            }
        }
        rows.sort_by(|a, b| a.t_s.total_cmp(&b.t_s));
        rows
    }

    #[test]
    fn lives_chained_from_a_pid_per_life_give_the_slots_rate() {
        for (instances, lives) in [
            (true, Lives::ChainedByInstance),
            (false, Lives::ChainedInFleet),
        ] {
            let rows = pid_rows(instances);
            let s = Sample {
                rows,
                start_s: 0.0,
                end_s: 36_000.0,
                whole_mb: false,
                lives: Lives::Window,
            };
            // The rows themselves say how they bound lives.
            let view_lives = if instances {
                Lives::ChainedByInstance
            } else {
                Lives::ChainedInFleet
            };
            assert_eq!(lives, view_lives);
            let window = traffic(&s, 6.0, 3.0, 0.0).unwrap();
            assert_eq!(window.from, Lives::Window);
            let s = Sample { lives, ..s };
            let t = traffic(&s, 6.0, 3.0, 0.0).unwrap();
            assert_eq!(t.from, lives);
            // 6 workers at 0.5 a second: 3 rps, which requests over the
            // window miss (the lives begun before it and those still
            // alive). Within an instance every match is right here; in the
            // fleet, six chains, a few are not, and the rate stays close.
            let tol = if instances { 1e-9 } else { 0.01 };
            assert!((t.rps - 3.0).abs() < tol, "{lives:?}: {}", t.rps);
            assert!((window.rps - 3.0).abs() > 0.03, "{}", window.rps);
        }
    }

    #[test]
    fn a_simulated_day_with_a_pid_per_life_gives_its_slots_rate() {
        use super::super::testkit::{LOOK, loader, plain};
        let (sets, truth) = plain();
        let sc = loader(sets)(&super::super::fit::num_overrides(&truth.overrides())).unwrap();
        for seed in [3, 4] {
            let s = super::super::fit::simulate(&sc, seed, LOOK).unwrap();
            assert_eq!(s.lives, Lives::Slots);
            let slots = traffic(&s, 6.0, 3.0, 0.0).unwrap();
            // The same rows as a pid-per-life log and as a log with no ids.
            let mut pids = s.clone();
            for (k, r) in pids.rows.iter_mut().enumerate() {
                r.slot = r.instance.clone().map(|i| (i, format!("pid{k}")));
            }
            pids.lives = Lives::ChainedByInstance;
            let mut bare = pids.clone();
            for r in &mut bare.rows {
                (r.slot, r.instance) = (None, None);
            }
            bare.lives = Lives::ChainedInFleet;
            let window = Sample {
                lives: Lives::Window,
                ..bare.clone()
            };
            let rate = |s: &Sample| traffic(s, 6.0, 3.0, 0.0).unwrap().rps;
            let err = |x: f64| (x / slots.rps - 1.0).abs();
            assert!(err(rate(&pids)) < 0.002, "{} vs {}", rate(&pids), slots.rps);
            assert!(err(rate(&bare)) < 0.005, "{} vs {}", rate(&bare), slots.rps);
            // Requests over the window, the estimate chaining replaced.
            assert!(err(rate(&window)) > 0.005, "{}", rate(&window));
        }
    }

    /// A diurnal day (peak to trough 3) written without ids: at the
    /// window's constant pace the chaining ran away (each row joined the
    /// latest recycle; 2.7x the rate on a SimPy day, more when refined from
    /// its own lives). Paced by the hourly recycle counts' cosine it gives
    /// the slots' rate.
    #[test]
    fn a_diurnal_day_without_ids_is_chained_at_its_own_pace() {
        use super::super::testkit::{LOOK, loader, plain};
        use crate::scenario::parse_override;
        let (mut sets, truth) = plain();
        for o in [
            "workload.profile=\"diurnal\"",
            "workload.peak_to_trough=3.0",
            "workload.peak_hour=20.0",
            "workload.start_hour=0.0",
        ] {
            sets.push(parse_override(o).unwrap());
        }
        let sc = loader(sets)(&super::super::fit::num_overrides(&truth.overrides())).unwrap();
        let mut believed = 0;
        for seed in [3, 4, 5] {
            let s = super::super::fit::simulate(&sc, seed, LOOK).unwrap();
            let slots = traffic(&s, 6.0, 3.0, 0.0).unwrap();
            assert_eq!(slots.from, Lives::Slots);
            let mut bare = s.clone();
            for r in &mut bare.rows {
                (r.slot, r.instance) = (None, None);
            }
            bare.lives = Lives::ChainedInFleet;
            let t = traffic(&bare, 6.0, 3.0, 0.0).unwrap();
            let err = t.rps / slots.rps - 1.0;
            assert!(
                err.abs() < 0.03,
                "seed {seed}: {} vs {} ({:?})",
                t.rps,
                slots.rps,
                t.from
            );
            // Chained at the diurnal pace, the rate is the slots' own; at
            // a constant pace the band rejects every day's chaining.
            if t.from == Lives::ChainedInFleet {
                believed += 1;
                assert!(err.abs() < 0.005, "seed {seed}: {} vs {}", t.rps, slots.rps);
            }
            // The constant pace, as before: further off.
            let flat = Pace {
                per_worker: bare.rows.iter().map(|r| r.requests).sum::<f64>()
                    / (bare.end_s - bare.start_s)
                    / 6.0,
                amplitude: 0.0,
                peak_hour: 0.0,
                start_hour: 0.0,
            };
            let ls = chained_lives(&bare, Lives::ChainedInFleet, 6, flat);
            let paced = Pace {
                amplitude: 0.5,
                peak_hour: 20.0,
                ..flat
            };
            let good = chained_lives(&bare, Lives::ChainedInFleet, 6, paced);
            let (r_flat, r_paced) = (rate(&ls, 6.0), rate(&good, 6.0));
            assert!(
                (r_paced / slots.rps - 1.0).abs() < (r_flat / slots.rps - 1.0).abs(),
                "seed {seed}: paced {r_paced}, flat {r_flat}, slots {}",
                slots.rps
            );
        }
        assert!(
            believed >= 2,
            "chained lives believed on {believed} of 3 days"
        );
    }

    /// Each instance's hot worker (`w0`) recycling every `life` seconds at
    /// 1 request a second, its first `first` seconds into the window; its
    /// siblings once, late.
    fn hot_rows(first: f64, life: f64) -> Sample {
        let mut rows = Vec::new();
        for i in 0..2 {
            let inst = format!("i{i}");
            let mut t = first + 100.0 * i as f64;
            while t < 86_400.0 {
                rows.push(Row {
                    t_s: t,
                    slot: Some((inst.clone(), "w0".into())),
                    instance: Some(inst.clone()),
                    requests: life,
                    rss_mb: 500.0,
                    limit_mb: 490.0,
                });
                t += life;
            }
            rows.push(Row {
                t_s: 80_000.0,
                slot: Some((inst.clone(), "w1".into())),
                instance: Some(inst.clone()),
                requests: 300.0,
                rss_mb: 500.0,
                limit_mb: 490.0,
            });
        }
        rows.sort_by(|a, b| a.t_s.total_cmp(&b.t_s));
        Sample {
            rows,
            start_s: 0.0,
            end_s: 86_400.0,
            whole_mb: false,
            lives: Lives::SlotsUneven,
        }
    }

    #[test]
    fn a_hot_fleets_cold_start_is_read_off_each_instances_first_recycle() {
        // A whole life in: cold. A fifth: warm, though each cold sibling's
        // first recycle (80,000 s, 300 requests) reads as late as can be.
        assert!(cold_start(&hot_rows(1500.0, 1500.0), 1.0));
        assert!(!cold_start(&hot_rows(300.0, 1500.0), 1.0));
        let mut s = hot_rows(300.0, 1500.0);
        s.lives = Lives::Slots;
        assert!(
            cold_start(&s, 1.0),
            "read slot by slot, the siblings decide"
        );
    }

    /// Fed first without ids: lives chained one an instance at the
    /// instance's pace follow each instance's first slot, and their rate
    /// leaves out each chain's first row, a life begun before the window
    /// (here three lives long, as a length-biased one can be), which the
    /// window's requests count whole.
    #[test]
    fn lives_chained_one_an_instance_give_a_first_slots_rate_without_ids() {
        let mut s = hot_rows(300.0, 1500.0);
        let firsts = [300.0, 400.0];
        for r in s.rows.iter_mut() {
            if firsts.contains(&r.t_s) {
                r.requests *= 3.0;
            }
            r.slot = None;
            r.instance = None;
        }
        s.lives = Lives::HotInFleet;
        let hot = traffic(&s, 6.0, 3.0, 0.0).expect("a rate");
        assert_eq!(hot.from, Lives::HotInFleet);
        assert!((hot.rps / 2.0 - 1.0).abs() < 0.01, "{hot:?}");
        s.lives = Lives::Window;
        let window = traffic(&s, 6.0, 3.0, 0.0).expect("a rate");
        assert!(window.rps / 2.0 - 1.0 > 0.03, "{window:?}");
        // With instance names, one chain an instance.
        let mut s = hot_rows(300.0, 1500.0);
        for r in s.rows.iter_mut() {
            r.slot = None;
        }
        s.lives = Lives::HotByInstance;
        let by = traffic(&s, 6.0, 3.0, 0.0).expect("a rate");
        assert_eq!(by.from, Lives::HotByInstance);
        assert!((by.rps / 2.0 - 1.0).abs() < 0.01, "{by:?}");
    }

    /// Without instance names, the window's first recycle alone: a fifth
    /// of a life in (warm), where each instance's first averages 0.23.
    #[test]
    fn a_hot_fleets_start_without_instance_names_is_the_windows_first_recycle() {
        let mut s = hot_rows(300.0, 1500.0);
        let by = hot_lateness_by(&s, 1.0, true).expect("instances named");
        assert!((by - (300.0 + 400.0) / 1500.0 / 2.0).abs() < 1e-9, "{by}");
        for r in s.rows.iter_mut() {
            r.instance = None;
            r.slot = None;
        }
        assert_eq!(hot_lateness(&s, 1.0), None);
        let first = hot_lateness_by(&s, 1.0, false).expect("the window's first");
        assert!((first - 0.2).abs() < 1e-9, "{first}");
    }

    /// A slot's first row (a life begun before the window, of any length)
    /// and a slot that recycled once say nothing of the rate; the rest is
    /// each slot's requests over the window's time after its first.
    #[test]
    fn slots_fed_unevenly_are_read_from_their_first_recycle_on() {
        let row = |t_s: f64, slot: &str, requests: f64| Row {
            t_s,
            slot: Some(("i0".into(), slot.into())),
            instance: Some("i0".into()),
            requests,
            rss_mb: 500.0,
            limit_mb: 490.0,
        };
        let sample = |first: f64| Sample {
            rows: vec![
                row(1_000.0, "w0", first),
                row(3_000.0, "w0", 1_000.0),
                row(5_000.0, "w0", 1_000.0),
                row(6_000.0, "w1", 900.0),
                row(7_000.0, "w0", 1_000.0),
                row(9_000.0, "w0", 1_000.0),
            ],
            start_s: 0.0,
            end_s: 9_000.0,
            whole_mb: false,
            lives: Lives::SlotsUneven,
        };
        // w0: 4,000 requests in the 8,000 s after its first recycle.
        for first in [100.0, 5_000.0] {
            assert!((slots_since_first(&sample(first)).unwrap() - 0.5).abs() < 1e-12);
            // The rate a fleet fed unevenly is read at.
            let t = traffic(&sample(first), 6.0, 3.0, 0.0).unwrap();
            assert_eq!(t.from, Lives::SlotsUneven);
            assert!((t.rps - 0.5).abs() < 1e-12, "{}", t.rps);
        }
        let mut once = sample(100.0);
        once.rows.retain(|r| r.t_s < 2_000.0 || r.t_s == 6_000.0);
        assert_eq!(slots_since_first(&once), None);
    }
}
