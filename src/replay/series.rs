//! Per-worker RSS series: samples, not events. An RSS series CSV or a
//! Prometheus `query_range` response becomes a `Series` in its `Part`;
//! `Recording::assemble` puts every file's samples on the common time axis.
//!
//! What calibration wants from a series is per worker *lifetime* (one
//! process from its spawn to its exit): the RSS it booted at, how fast it
//! grew, and where it ended. `Recording::rss_lifetimes` derives them, and
//! `observed` summarises them for `analysis.json`.
//!
//! The lifetime rule: a series key is one worker (a pid, or a slot such as
//! `worker=2` that successive processes reuse). Its samples, in time order,
//! split into a new lifetime when
//!
//! - the `requests` counter goes down (a new process counts from 0), or
//! - RSS drops by more than `RESPAWN_DROP` of the previous sample (a leak
//!   only grows; a fresh fork starts low), or
//! - a recycle, OOM kill or evil kill event on the same instance and worker
//!   (or pid) lies between two samples.
//!
//! A lifetime "starts at the spawn" when it began at such a split, when its
//! first `requests` value is 0, or when its key first appears more than two
//! of its own sampling intervals after the series began (a pid born during
//! the window). Only those lifetimes give an observed boot RSS: a worker
//! already running when sampling began shows its RSS at that moment.

use super::analyse::stats::Dist;
use super::recording::{Event, Origin, Recording};
use crate::metrics::EventKind;
use serde::Serialize;
use std::collections::BTreeMap;

/// A drop of more than this fraction of the previous sample is a respawn.
pub const RESPAWN_DROP: f64 = 0.25;

/// The most samples one recording may hold (a limit on everything:
/// 2 million samples take about 100 MB).
pub const MAX_SAMPLES: usize = 2_000_000;

/// Which worker a series follows.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize)]
pub struct SeriesKey {
    pub instance: Option<String>,
    /// The worker's id or pid, as the series names it.
    pub worker: String,
}

/// One RSS sample.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Sample {
    /// On the recording's axis.
    pub t_s: f64,
    /// Index into `Series::keys`.
    pub key: usize,
    pub rss_mb: f64,
    /// The worker's served requests so far, when the series has them.
    pub requests: Option<u64>,
    pub origin: Origin,
}

/// Samples with their keys; after `assemble`, sorted by `(t_s, origin)`.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Series {
    pub keys: Vec<SeriesKey>,
    pub samples: Vec<Sample>,
}

/// Finds or adds a key in a `Series` in O(log n).
#[derive(Debug, Default)]
pub struct KeyIndex {
    map: BTreeMap<SeriesKey, usize>,
}

impl KeyIndex {
    /// The index of `key` in `series.keys`, added when new.
    pub fn get(&mut self, series: &mut Series, key: SeriesKey) -> usize {
        if let Some(&i) = self.map.get(&key) {
            return i;
        }
        series.keys.push(key.clone());
        self.map.insert(key, series.keys.len() - 1);
        series.keys.len() - 1
    }
}

/// One worker process's life as the series saw it.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct RssLifetime {
    pub instance: Option<String>,
    pub worker: String,
    /// Whether the first sample is the boot RSS (see the module docs).
    pub starts_at_spawn: bool,
    pub first_t_s: f64,
    pub first_rss_mb: f64,
    pub last_t_s: f64,
    pub last_rss_mb: f64,
    pub samples: usize,
    /// Served requests at the first and last sample, when recorded.
    pub first_requests: Option<u64>,
    pub last_requests: Option<u64>,
    /// Least-squares slope of RSS on the request count (2+ samples with
    /// requests and a moving counter).
    pub mb_per_request: Option<f64>,
    /// Least-squares slope of RSS on time (2+ samples over a positive span).
    pub mb_per_s: Option<f64>,
}

/// The series' figures in `analysis.json` (and the report).
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Observed {
    pub keys: usize,
    pub samples: usize,
    pub lifetimes: usize,
    pub lifetimes_from_spawn: usize,
    /// First sample of lifetimes that start at the spawn.
    pub boot_rss_mb: Option<Dist>,
    pub mb_per_request: Option<Dist>,
    pub mb_per_s: Option<Dist>,
    /// Last sample of lifetimes that end before the series does (the RSS at exit).
    pub exit_rss_mb: Option<Dist>,
    pub rule: String,
}

impl Recording {
    /// Every worker lifetime in the RSS series, by key then time. Pure:
    /// the same recording gives the same list.
    pub fn rss_lifetimes(&self) -> Vec<RssLifetime> {
        let s = &self.series;
        let start = s.samples.first().map_or(0.0, |x| x.t_s);
        let mut by_key: Vec<Vec<&Sample>> = vec![Vec::new(); s.keys.len()];
        for x in &s.samples {
            by_key[x.key].push(x);
        }
        // Exit times per (instance, worker), in time order (events are sorted).
        let mut exits: BTreeMap<(Option<&str>, &str), Vec<f64>> = BTreeMap::new();
        for e in self.events.iter().filter(|e| ends_a_life(e)) {
            if let Some(w) = e.worker.as_deref() {
                exits
                    .entry((e.instance.as_deref(), w))
                    .or_default()
                    .push(e.t_s);
            }
        }
        let mut out = Vec::new();
        for (key, mine) in s.keys.iter().zip(&by_key) {
            let ex = exits
                .get(&(key.instance.as_deref(), key.worker.as_str()))
                .map_or(&[][..], Vec::as_slice);
            out.extend(split(mine, ex, start, key));
        }
        out
    }

    /// The summary of `rss_lifetimes`, `None` without a series.
    pub fn observed_rss(&self) -> Option<Observed> {
        if self.series.samples.is_empty() {
            return None;
        }
        let lives = self.rss_lifetimes();
        let end = self.series.samples.last().map_or(0.0, |x| x.t_s);
        let spawned = lives.iter().filter(|l| l.starts_at_spawn);
        Some(Observed {
            keys: self.series.keys.len(),
            samples: self.series.samples.len(),
            lifetimes: lives.len(),
            lifetimes_from_spawn: spawned.clone().count(),
            boot_rss_mb: Dist::of(spawned.map(|l| l.first_rss_mb)),
            mb_per_request: Dist::of(lives.iter().filter_map(|l| l.mb_per_request)),
            mb_per_s: Dist::of(lives.iter().filter_map(|l| l.mb_per_s)),
            exit_rss_mb: Dist::of(
                lives
                    .iter()
                    .filter(|l| l.last_t_s < end)
                    .map(|l| l.last_rss_mb),
            ),
            rule: format!(
                "a worker's samples split into lifetimes where its request count falls, its RSS \
                 drops by more than {:.0}%, or a recycle or kill on its instance and worker lies \
                 between two samples; boot RSS is the first sample of lifetimes that start at a \
                 spawn, growth the least-squares slope per request (else per second)",
                RESPAWN_DROP * 100.0
            ),
        })
    }
}

/// Whether event `e` ends a worker process.
fn ends_a_life(e: &Event) -> bool {
    e.is_recycle()
        || e.is(EventKind::OomKill)
        || e.is(EventKind::EvilKill)
        || e.is(EventKind::TimeoutKill)
}

/// One key's samples (in time order) cut into lifetimes.
fn split(samples: &[&Sample], exits: &[f64], start: f64, key: &SeriesKey) -> Vec<RssLifetime> {
    let mut out = Vec::new();
    let mut from = 0;
    let interval = median_interval(samples);
    for i in 1..=samples.len() {
        let cut = i == samples.len() || {
            let (a, b) = (samples[i - 1], samples[i]);
            let reset = matches!((a.requests, b.requests), (Some(x), Some(y)) if y < x);
            let dropped = b.rss_mb < a.rss_mb * (1.0 - RESPAWN_DROP);
            let first_exit = exits.partition_point(|&t| t < a.t_s);
            let exited = exits.get(first_exit).is_some_and(|&t| t < b.t_s);
            reset || dropped || exited
        };
        if cut {
            let part = &samples[from..i];
            let late = part[0].t_s > start + 2.0 * interval.unwrap_or(f64::INFINITY);
            let at_spawn = from > 0 || part[0].requests == Some(0) || late;
            out.push(lifetime(part, at_spawn, key));
            from = i;
        }
    }
    out
}

fn median_interval(samples: &[&Sample]) -> Option<f64> {
    let gaps: Vec<f64> = samples.windows(2).map(|w| w[1].t_s - w[0].t_s).collect();
    Dist::of(gaps).map(|d| d.median)
}

fn lifetime(part: &[&Sample], starts_at_spawn: bool, key: &SeriesKey) -> RssLifetime {
    let (first, last) = (part[0], part[part.len() - 1]);
    let by_request: Vec<(f64, f64)> = part
        .iter()
        .filter_map(|s| Some((s.requests? as f64, s.rss_mb)))
        .collect();
    let by_time: Vec<(f64, f64)> = part.iter().map(|s| (s.t_s, s.rss_mb)).collect();
    RssLifetime {
        instance: key.instance.clone(),
        worker: key.worker.clone(),
        starts_at_spawn,
        first_t_s: first.t_s,
        first_rss_mb: first.rss_mb,
        last_t_s: last.t_s,
        last_rss_mb: last.rss_mb,
        samples: part.len(),
        first_requests: first.requests,
        last_requests: last.requests,
        mb_per_request: slope(&by_request),
        mb_per_s: slope(&by_time),
    }
}

/// The least-squares slope of y on x; `None` with fewer than two points or
/// no spread in x.
pub fn slope(points: &[(f64, f64)]) -> Option<f64> {
    if points.len() < 2 {
        return None;
    }
    let n = points.len() as f64;
    let mx = points.iter().map(|p| p.0).sum::<f64>() / n;
    let my = points.iter().map(|p| p.1).sum::<f64>() / n;
    let sxx: f64 = points.iter().map(|p| (p.0 - mx).powi(2)).sum();
    let sxy: f64 = points.iter().map(|p| (p.0 - mx) * (p.1 - my)).sum();
    (sxx > 0.0).then(|| sxy / sxx).filter(|s| s.is_finite())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample(t_s: f64, key: usize, rss_mb: f64, requests: Option<u64>) -> Sample {
        Sample {
            t_s,
            key,
            rss_mb,
            requests,
            origin: Origin::default(),
        }
    }

    #[test]
    fn slopes_fit_a_line() {
        assert_eq!(slope(&[(0.0, 1.0), (2.0, 5.0), (4.0, 9.0)]), Some(2.0));
        assert_eq!(slope(&[(1.0, 1.0)]), None);
        assert_eq!(slope(&[(1.0, 1.0), (1.0, 3.0)]), None);
    }

    #[test]
    fn a_request_reset_or_a_drop_starts_a_new_lifetime() {
        let key = SeriesKey {
            instance: Some("inst-A".into()),
            worker: "0".into(),
        };
        let xs = [
            sample(0.0, 0, 300.0, Some(100)),
            sample(10.0, 0, 310.0, Some(200)),
            sample(20.0, 0, 320.0, Some(300)),
            sample(30.0, 0, 250.0, Some(0)),
            sample(40.0, 0, 255.0, Some(50)),
            sample(50.0, 0, 100.0, None),
        ];
        let refs: Vec<&Sample> = xs.iter().collect();
        let lives = split(&refs, &[], 0.0, &key);
        assert_eq!(lives.len(), 3);
        assert!(!lives[0].starts_at_spawn, "running when sampling began");
        assert_eq!(lives[0].mb_per_request, Some(0.1));
        assert_eq!(lives[0].mb_per_s, Some(1.0));
        assert!(lives[1].starts_at_spawn);
        assert_eq!(
            (lives[1].first_rss_mb, lives[1].last_rss_mb),
            (250.0, 255.0)
        );
        assert_eq!(lives[2].samples, 1);
    }

    #[test]
    fn an_exit_event_between_samples_splits() {
        let key = SeriesKey {
            instance: None,
            worker: "7".into(),
        };
        let xs = [sample(0.0, 0, 300.0, None), sample(10.0, 0, 290.0, None)];
        let refs: Vec<&Sample> = xs.iter().collect();
        assert_eq!(split(&refs, &[5.0], 0.0, &key).len(), 2);
        assert_eq!(split(&refs, &[15.0], 0.0, &key).len(), 1);
    }
}
