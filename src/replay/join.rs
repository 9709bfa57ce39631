//! The same recycle seen by two instruments counts once.
//!
//! A real recording has several files that see one happening: the
//! recycler's `worker_recycled` telemetry row, gunicorn's `Worker exiting`
//! line, a Kubernetes `OOMKilled` next to gunicorn's `was sent SIGKILL!`.
//! The rule: an event of a later file joins the nearest event of an earlier
//! file when
//!
//! - both are of the same kind, one of `JOINED` (recycles and kills; a
//!   canary line has no instance to join on),
//! - both name the same instance (an event without one never joins),
//! - they may be the same worker: either names none, or they share an id
//!   (a row's `worker` or `pid`: a telemetry row with a slot id and a
//!   `pid` joins a server log line that names the pid),
//! - they lie within `JOIN_WINDOW_S` of each other, and
//! - the earlier file's event has not already joined an event of this file.
//!
//! The richer row (more fields set; the earlier file on a tie) is kept,
//! with the other's fields filling its empty ones; the other is dropped.
//! Every pair of files with events of one kind on a shared instance gets an
//! `Agreement`: how many of the later file's events joined the earlier
//! file's ("gunicorn log: 88 of 88 recycles matched telemetry rows"). An
//! event that joins nothing stays its own event.

use super::recording::{Agreement, Event, Source};
use crate::metrics::EventKind;
use std::collections::BTreeSet;

/// How far apart two records of one happening may be: gunicorn's default
/// `graceful_timeout` (30 s, the longest a drain lasts before its exit line)
/// plus 5 s for clocks and sampling.
pub const JOIN_WINDOW_S: f64 = 35.0;

/// The kinds joined across files.
pub const JOINED: [EventKind; 5] = [
    EventKind::WorkerRecycled,
    EventKind::OomKill,
    EventKind::EvilKill,
    EventKind::DrainKilled,
    EventKind::TimeoutKill,
];

fn joinable(a: &Event, b: &Event) -> bool {
    a.kind == b.kind
        && a.instance.is_some()
        && a.instance == b.instance
        && same_worker(a, b)
        && (a.t_s - b.t_s).abs() <= JOIN_WINDOW_S
}

/// The worker ids an event names: its `worker` and its `pid`.
fn ids(e: &Event) -> impl Iterator<Item = &String> {
    e.worker.iter().chain(e.pid.iter())
}

/// Whether two events may be the same worker's: either names none, or they
/// share an id (a telemetry row's pid is a server log's worker).
fn same_worker(a: &Event, b: &Event) -> bool {
    ids(a).next().is_none() || ids(b).next().is_none() || ids(a).any(|x| ids(b).any(|y| x == y))
}

/// How many optional fields an event has.
fn richness(e: &Event) -> usize {
    let f = [
        e.instance.is_some(),
        e.worker.is_some(),
        e.rss_mb.is_some(),
        e.limit_mb.is_some(),
        e.base_limit_mb.is_some(),
        e.hard_limit_mb.is_some(),
        e.requests.is_some(),
        e.pressure.is_some(),
        e.headroom_mb.is_some(),
        e.lease.is_some(),
        e.branch.is_some(),
        e.generation.is_some(),
        e.last_recycle_age_s.is_some(),
        e.latency_ms.is_some(),
        e.trigger.is_some(),
        e.pid.is_some(),
    ];
    f.iter().filter(|x| **x).count()
}

/// `rich` with `other`'s fields where it has none.
fn merge(mut rich: Event, other: &Event) -> Event {
    fn fill<T: Clone>(a: &mut Option<T>, b: &Option<T>) {
        if a.is_none() {
            a.clone_from(b);
        }
    }
    fill(&mut rich.worker, &other.worker);
    fill(&mut rich.rss_mb, &other.rss_mb);
    fill(&mut rich.limit_mb, &other.limit_mb);
    fill(&mut rich.base_limit_mb, &other.base_limit_mb);
    fill(&mut rich.hard_limit_mb, &other.hard_limit_mb);
    fill(&mut rich.requests, &other.requests);
    fill(&mut rich.pressure, &other.pressure);
    fill(&mut rich.headroom_mb, &other.headroom_mb);
    fill(&mut rich.lease, &other.lease);
    fill(&mut rich.branch, &other.branch);
    fill(&mut rich.generation, &other.generation);
    fill(&mut rich.last_recycle_age_s, &other.last_recycle_age_s);
    fill(&mut rich.latency_ms, &other.latency_ms);
    fill(&mut rich.trigger, &other.trigger);
    fill(&mut rich.pid, &other.pid);
    rich
}

/// Events (sorted by time) with cross-file duplicates joined, and the
/// agreement per pair of files and kind.
pub fn join(mut events: Vec<Event>, sources: &[Source]) -> (Vec<Event>, Vec<Agreement>) {
    let mut alive = vec![true; events.len()];
    // (later source, earlier source, kind) -> matched
    let mut matched = std::collections::BTreeMap::new();
    for b in 1..sources.len() {
        let mut taken: BTreeSet<usize> = BTreeSet::new();
        for i in 0..events.len() {
            let e = &events[i];
            if !alive[i] || e.origin.source != b || !JOINED.iter().any(|k| e.is(*k)) {
                continue;
            }
            let Some(j) = nearest(&events, &alive, &taken, i) else {
                continue;
            };
            taken.insert(j);
            let key = (b, events[j].origin.source, e.kind.label().to_string());
            *matched.entry(key).or_insert(0usize) += 1;
            let (keep, drop) = if richness(&events[i]) > richness(&events[j]) {
                (i, j)
            } else {
                (j, i)
            };
            events[keep] = merge(events[keep].clone(), &events[drop]);
            alive[drop] = false;
            // The kept row stands for both files from now on.
            taken.insert(keep);
        }
    }
    let agreements = agreements(&events, sources, &matched);
    let kept = events
        .into_iter()
        .zip(alive)
        .filter_map(|(e, a)| a.then_some(e))
        .collect();
    (kept, agreements)
}

/// The nearest live event of an earlier file that event `i` joins.
fn nearest(events: &[Event], alive: &[bool], taken: &BTreeSet<usize>, i: usize) -> Option<usize> {
    let e = &events[i];
    let lo = events.partition_point(|x| x.t_s < e.t_s - JOIN_WINDOW_S);
    let hi = events.partition_point(|x| x.t_s <= e.t_s + JOIN_WINDOW_S);
    (lo..hi)
        .filter(|&j| {
            alive[j]
                && events[j].origin.source < e.origin.source
                && !taken.contains(&j)
                && joinable(&events[j], e)
        })
        .min_by(|&x, &y| {
            let d = |j: usize| (events[j].t_s - e.t_s).abs();
            d(x).total_cmp(&d(y)).then(x.cmp(&y))
        })
}

type Matched = std::collections::BTreeMap<(usize, usize, String), usize>;

/// For each pair of files and joined kind with events on a shared
/// instance: the later file's events there, and how many joined. Called
/// before dropped events are removed, so `events` holds every file's own.
fn agreements(events: &[Event], sources: &[Source], matched: &Matched) -> Vec<Agreement> {
    let mut out = Vec::new();
    for b in 1..sources.len() {
        for a in 0..b {
            for kind in JOINED {
                let on = |s: usize| -> BTreeSet<&str> {
                    events
                        .iter()
                        .filter(|e| e.is(kind) && e.origin.source == s)
                        .filter_map(|e| e.instance.as_deref())
                        .collect()
                };
                let m = matched
                    .get(&(b, a, kind.label().to_string()))
                    .copied()
                    .unwrap_or(0);
                let shared: BTreeSet<&str> = on(a).intersection(&on(b)).copied().collect();
                if shared.is_empty() && m == 0 {
                    continue;
                }
                // Every event of `b` is still in `events` (dropped ones too).
                let standing = events
                    .iter()
                    .filter(|e| e.is(kind) && e.origin.source == b)
                    .filter(|e| e.instance.as_deref().is_some_and(|i| shared.contains(i)))
                    .count();
                out.push(Agreement {
                    source: sources[b].name.clone(),
                    with: sources[a].name.clone(),
                    kind: kind.label().to_string(),
                    events: standing,
                    matched: m,
                });
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::replay::recording::{Kind, Origin};

    fn recycle(t: f64, worker: Option<&str>, pid: Option<&str>) -> Event {
        let mut e = Event::new(t, Kind::Known(EventKind::WorkerRecycled), Origin::default());
        e.instance = Some("A".into());
        e.worker = worker.map(str::to_string);
        e.pid = pid.map(str::to_string);
        e
    }

    #[test]
    fn a_slot_row_with_a_pid_is_the_worker_a_server_log_names_by_pid() {
        let row = recycle(10.0, Some("w0"), Some("2105"));
        assert!(same_worker(&row, &recycle(12.0, Some("2105"), None)));
        assert!(!same_worker(&row, &recycle(12.0, Some("2106"), None)));
        assert!(!same_worker(&row, &recycle(12.0, Some("w1"), Some("2107"))));
        assert!(same_worker(&row, &recycle(12.0, None, None)));
        assert!(joinable(&row, &recycle(40.0, Some("2105"), None)));
        assert!(
            !joinable(&row, &recycle(50.0, Some("2105"), None)),
            "outside the window"
        );
        let merged = merge(row.clone(), &recycle(12.0, Some("2105"), Some("2105")));
        assert_eq!(merged.worker.as_deref(), Some("w0"));
        assert_eq!(merged.pid.as_deref(), Some("2105"));
    }
}
