//! The run's accumulators and the summary computed from them at the end.

use super::histogram::LogHistogram;
use crate::engine::time::SimTime;
use crate::policy::gates::MAX_HOLDS;
use crate::policy::{Cause, GateKind, Hold, Pass, Passes};
use serde::Serialize;
use serde::ser::SerializeMap;

/// One recycle, kept for the lifetime and margin statistics (few per hour).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct RecycleRecord {
    pub t: SimTime,
    pub instance: u32,
    /// The worker's age (since its fork) when it was let go.
    pub age: SimTime,
    pub requests: u64,
    /// RSS over the worker's own jittered limit when it was let go.
    pub margin_mb: f64,
    pub rss_mb: f64,
    pub pressure: bool,
    pub cause: Cause,
    /// How it got through each gate.
    pub passes: Passes,
}

/// Everything the event loop counts while it runs.
#[derive(Clone, Default)]
pub struct Metrics {
    /// Client requests (a retry is the same request).
    pub arrived: u64,
    pub completed: u64,
    pub failed: u64,
    pub failed_backlog_full: u64,
    pub failed_timeout: u64,
    /// Attempts that hit a connection error (stale connection or killed in flight).
    pub resets: u64,
    pub retry_ok: u64,
    pub fetch_failed: u64,
    pub pending_retries: u64,
    /// Exact mode: the waits of served requests, summed in whole us.
    pub wait_us: u64,
    /// Aggregate mode: the estimated waits (fractional), in us.
    pub wait_us_sum: f64,
    pub waits: u64,
    /// Served requests that waited in the backlog at all.
    pub waited: u64,
    pub latency_us: LogHistogram,
    pub recycles: Vec<RecycleRecord>,
    /// Holds by gate and the gate's hold index.
    pub holds: [[u64; MAX_HOLDS]; GateKind::COUNT],
    /// Workers the master SIGKILLed over the evil RSS limit.
    pub evil_kills: u64,
    /// Requests in flight on those workers, reset by the kill.
    pub evil_kill_requests: u64,
    /// Whole-container OOM kills (`memory.oom.group`).
    pub oom_group_kills: u64,
    /// The server's kill paths (`sim/kill.rs`), by `KillPath as usize`.
    pub kill_paths: [super::KillCounts; 3],
    /// Workers replaced by reload waves.
    pub reload_replacements: u64,
    pub oom_kills: u64,
    pub drain_kills: u64,
    pub max_rss_mb: f64,
    pub max_overshoot_mb: f64,
    /// Integral of (rss - hard limit)+ over time, MB x microseconds.
    pub overshoot_mb_us: f64,
    pub over_ceiling_dwell_max: SimTime,
    /// Integral of the number of serving workers over time, worker-microseconds.
    pub serving_area: f64,
    pub min_serving: u32,
    pub events: u64,
}

impl Metrics {
    pub fn hold(&mut self, h: Hold) {
        self.holds[h.gate as usize][h.index()] += 1;
    }

    pub fn holds_of(&self, h: Hold) -> u64 {
        self.holds[h.gate as usize][h.index()]
    }
}

/// The run's summary: `summary.json`. Field names are part of the interface.
#[derive(Clone, Debug, Serialize, PartialEq)]
pub struct Summary {
    pub scenario: String,
    pub seed: u64,
    pub duration_h: f64,
    pub requests_total: u64,
    pub requests_failed: u64,
    pub recycles: u64,
    pub recycles_per_hour: f64,
    pub peak_hour_recycles: u64,
    pub requests_per_worker_min: Option<f64>,
    pub requests_per_worker_p10: Option<f64>,
    pub requests_per_worker_median: Option<f64>,
    pub requests_per_worker_max: Option<f64>,
    pub recycles_low_margin_fraction: Option<f64>,
    pub recycles_young_fraction: Option<f64>,
    pub pressure_recycles: u64,
    /// Per gate and per trigger, built from their lists: see `Counters`.
    #[serde(flatten)]
    pub counters: Counters,
    pub evil_kills: u64,
    pub max_rss_mb: f64,
    pub max_overshoot_mb: f64,
    pub overshoot_mb_s: f64,
    pub over_ceiling_dwell_max_s: f64,
    pub oom_kills: u64,
    pub drain_kills: u64,
    pub requests_reset: u64,
    pub retry_ok: u64,
    pub fetch_failed: u64,
    pub requests_failed_backlog_full: u64,
    pub requests_failed_timeout: u64,
    pub capacity_loss_fraction: f64,
    pub min_serving_workers: u32,
    pub latency_ms_p50: Option<f64>,
    pub latency_ms_p99: Option<f64>,
    pub wait_ms_mean: Option<f64>,
    /// Fraction of served requests that waited (Erlang C's probability of waiting).
    pub wait_fraction: Option<f64>,
    pub events_processed: u64,
    /// Memory surges, when the scenario has them: written to `summary.json`
    /// by `to_json` only then, and never a sweep metric (a sweep's columns
    /// are the same for every scenario).
    #[serde(skip)]
    pub surge: Option<SurgeTotals>,
    /// Requests the evil RSS kills reset, when the scenario has that
    /// trigger: in `summary.json` only then (like the surges).
    #[serde(skip)]
    pub evil_kill_requests: Option<u64>,
    /// Whole-container OOM kills, with `[platform] oom_group` only.
    #[serde(skip)]
    pub oom_group_kills: Option<u64>,
    /// Workers replaced by reload waves, with `[[platform.reload]]` only.
    #[serde(skip)]
    pub reload_replacements: Option<u64>,
    /// The replacement modes' figures, each only when its mode is on.
    #[serde(skip)]
    pub replacement: super::replacement::ReplacementTotals,
    /// The kill paths the scenario turns on (`[fleet.kill]`), only those.
    #[serde(skip)]
    pub kill_paths: super::KillPaths,
}

/// One counter of `summary.json` that a gate or trigger keeps.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Counter {
    /// Recycles that passed a gate this way (`Rule::COUNTED`: its key).
    Passed(GateKind, Pass, &'static str),
    /// Holds by one gate's branch (`holds_<label>`).
    Held(Hold),
    /// Recycles a trigger asked for (`recycles_<label>`).
    Caused(Cause),
}

impl Counter {
    pub fn key(&self) -> String {
        match self {
            Counter::Passed(_, _, key) => key.to_string(),
            Counter::Held(h) => format!("holds_{}", h.label()),
            Counter::Caused(c) => format!("recycles_{}", c.label()),
        }
    }

    /// Every counter, in `summary.json` order: the gates' pass counters
    /// (the lease's first), every hold in pipeline order, then recycles by
    /// trigger. Derived from the gate and trigger lists, never by hand.
    pub fn all() -> impl Iterator<Item = Counter> {
        let passed = GateKind::counter_order().flat_map(|g| {
            g.counted()
                .iter()
                .map(move |(p, key)| Counter::Passed(g, *p, key))
        });
        let causes = Cause::ALL.into_iter().filter(|c| c.is_recycle());
        passed
            .chain(Hold::all().map(Counter::Held))
            .chain(causes.map(Counter::Caused))
    }
}

/// The gate and trigger counters of a run, in `Counter::all` order;
/// flattened into `summary.json`, one key each.
#[derive(Clone, Debug, PartialEq)]
pub struct Counters(Vec<(Counter, u64)>);

impl Serialize for Counters {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut map = s.serialize_map(Some(self.0.len()))?;
        for (c, n) in &self.0 {
            map.serialize_entry(&c.key(), n)?;
        }
        map.end()
    }
}

impl Counters {
    pub fn iter(&self) -> impl Iterator<Item = (Counter, u64)> + '_ {
        self.0.iter().copied()
    }

    fn find(&self, pred: impl Fn(&Counter) -> bool) -> u64 {
        self.0.iter().find(|(c, _)| pred(c)).map_or(0, |(_, n)| *n)
    }

    /// Recycles that passed gate `g` as `p` (0 for a pass it does not count).
    pub fn passed(&self, g: GateKind, p: Pass) -> u64 {
        self.find(|c| matches!(c, Counter::Passed(k, q, _) if *k == g && *q == p))
    }

    pub fn holds(&self, h: Hold) -> u64 {
        self.find(|c| *c == Counter::Held(h))
    }

    pub fn caused(&self, cause: Cause) -> u64 {
        self.find(|c| *c == Counter::Caused(cause))
    }

    /// Every hold, whichever gate held.
    pub fn holds_total(&self) -> u64 {
        self.iter()
            .filter(|(c, _)| matches!(c, Counter::Held(_)))
            .map(|(_, n)| n)
            .sum()
    }

    /// Recycles that went through any gate by an emergency exit.
    pub fn exits(&self) -> u64 {
        self.iter()
            .filter(|(c, _)| matches!(c, Counter::Passed(_, p, _) if *p != Pass::Open))
            .map(|(_, n)| n)
            .sum()
    }

    /// A counter by its `summary.json` key.
    pub fn get(&self, key: &str) -> Option<u64> {
        self.iter().find(|(c, _)| c.key() == key).map(|(_, n)| n)
    }
}

/// The memory surges of a run (`fleet::surge`).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct SurgeTotals {
    /// Episodes that started in the window.
    pub episodes: u64,
    /// Episode-seconds inside the window (overlapping episodes add up).
    pub episode_s: f64,
}

/// A recycle whose RSS was less than this over its limit tripped "low margin".
pub const LOW_MARGIN_MB: f64 = 25.0;
/// A worker recycled before serving this many requests died "young".
pub const YOUNG_REQUESTS: u64 = 400;

/// Linear-interpolation quantile of sorted data (numpy's default).
pub fn quantile_sorted(xs: &[f64], q: f64) -> Option<f64> {
    if xs.is_empty() {
        return None;
    }
    let pos = q.clamp(0.0, 1.0) * (xs.len() - 1) as f64;
    let (lo, hi) = (pos.floor() as usize, pos.ceil() as usize);
    Some(xs[lo] + (xs[hi] - xs[lo]) * (pos - lo as f64))
}

/// The most recycles in any 60-minute sliding window.
pub fn peak_hour(times: &[SimTime]) -> u64 {
    let hour = SimTime::from_secs(3600);
    let (mut best, mut lo) = (0usize, 0usize);
    for hi in 0..times.len() {
        while times[hi] - times[lo] >= hour {
            lo += 1;
        }
        best = best.max(hi - lo + 1);
    }
    best as u64
}

impl Metrics {
    /// The gate and trigger counters, from the recycles and the holds.
    pub fn counters(&self) -> Counters {
        let count = |c: &Counter| match *c {
            Counter::Passed(g, p, _) => self
                .recycles
                .iter()
                .filter(|r| r.passes.of(g) == Some(p))
                .count() as u64,
            Counter::Held(h) => self.holds_of(h),
            Counter::Caused(cause) => {
                self.recycles.iter().filter(|r| r.cause == cause).count() as u64
            }
        };
        Counters(Counter::all().map(|c| (c, count(&c))).collect())
    }

    pub fn summary(&self, scenario: &str, seed: u64, duration: SimTime, workers: usize) -> Summary {
        let hours = duration.as_secs_f64() / 3600.0;
        let n = self.recycles.len();
        let mut rpw: Vec<f64> = self.recycles.iter().map(|r| r.requests as f64).collect();
        rpw.sort_by(f64::total_cmp);
        let frac = |pred: &dyn Fn(&RecycleRecord) -> bool| {
            (n > 0).then(|| self.recycles.iter().filter(|r| pred(r)).count() as f64 / n as f64)
        };
        let times: Vec<SimTime> = self.recycles.iter().map(|r| r.t).collect();
        let total_worker_us = workers as f64 * duration.0 as f64;
        Summary {
            scenario: scenario.to_string(),
            seed,
            duration_h: hours,
            requests_total: self.arrived,
            requests_failed: self.failed,
            recycles: n as u64,
            recycles_per_hour: n as f64 / hours,
            peak_hour_recycles: peak_hour(&times),
            requests_per_worker_min: rpw.first().copied(),
            requests_per_worker_p10: quantile_sorted(&rpw, 0.10),
            requests_per_worker_median: quantile_sorted(&rpw, 0.5),
            requests_per_worker_max: rpw.last().copied(),
            recycles_low_margin_fraction: frac(&|r| r.margin_mb < LOW_MARGIN_MB),
            recycles_young_fraction: frac(&|r| r.requests < YOUNG_REQUESTS),
            pressure_recycles: self.recycles.iter().filter(|r| r.pressure).count() as u64,
            counters: self.counters(),
            evil_kills: self.evil_kills,
            max_rss_mb: self.max_rss_mb,
            max_overshoot_mb: self.max_overshoot_mb,
            overshoot_mb_s: self.overshoot_mb_us / 1e6,
            over_ceiling_dwell_max_s: self.over_ceiling_dwell_max.as_secs_f64(),
            oom_kills: self.oom_kills,
            drain_kills: self.drain_kills,
            requests_reset: self.resets,
            retry_ok: self.retry_ok,
            fetch_failed: self.fetch_failed,
            requests_failed_backlog_full: self.failed_backlog_full,
            requests_failed_timeout: self.failed_timeout,
            capacity_loss_fraction: if total_worker_us > 0.0 {
                (1.0 - self.serving_area / total_worker_us).max(0.0)
            } else {
                0.0
            },
            min_serving_workers: self.min_serving,
            latency_ms_p50: self.latency_us.quantile(0.5).map(|u| u / 1000.0),
            latency_ms_p99: self.latency_us.quantile(0.99).map(|u| u / 1000.0),
            // One of the two is zero; an integer sum below 2^53 us converts
            // exactly, so this equals an f64 sum of every wait.
            wait_ms_mean: (self.waits > 0)
                .then(|| (self.wait_us as f64 + self.wait_us_sum) / self.waits as f64 / 1000.0),
            wait_fraction: (self.waits > 0).then(|| self.waited as f64 / self.waits as f64),
            events_processed: self.events,
            surge: None,
            evil_kill_requests: None,
            oom_group_kills: None,
            reload_replacements: None,
            replacement: Default::default(),
            kill_paths: super::KillPaths::default(),
        }
    }
}

impl Summary {
    /// A gate or trigger counter by its `summary.json` key (`holds_cooldown`,
    /// `lease_bypass_pressure`, `recycles_drift`...).
    ///
    /// # Panics
    /// On a key no gate or trigger keeps: a caller's typo, not input.
    pub fn count(&self, key: &str) -> u64 {
        self.counters
            .get(key)
            .unwrap_or_else(|| panic!("no counter `{key}` in summary.json"))
    }

    /// Every numeric metric by its `summary.json` name, in field order;
    /// `None` values (no recycles, no latency) are NaN. The scenario's name
    /// and the seed are no metrics (a u64 seed does not survive an f64:
    /// trials.csv has its own exact `seed` column).
    pub fn metrics(&self) -> Vec<(String, f64)> {
        let v = serde_json::to_value(self).expect("a summary serialises");
        let map = v.as_object().expect("a summary is an object");
        map.iter()
            .filter(|(k, _)| !matches!(k.as_str(), "scenario" | "seed"))
            .map(|(k, v)| (k.clone(), v.as_f64().unwrap_or(f64::NAN)))
            .collect()
    }

    /// `summary.json` as `fleetsim run` writes it (pretty, one newline at
    /// the end): the summary's fields, the surge totals when surges ran,
    /// then the stamp of `schema::SUMMARY` (`schema_version`,
    /// `model_version`, `fleetsim_version`: not metrics, a sweep's
    /// trials.csv has no column for them).
    pub fn to_json(&self) -> String {
        #[derive(Serialize)]
        struct Body<'a> {
            #[serde(flatten)]
            summary: &'a Summary,
            #[serde(skip_serializing_if = "Option::is_none")]
            surge_episodes: Option<u64>,
            #[serde(skip_serializing_if = "Option::is_none")]
            surge_episode_s: Option<f64>,
            #[serde(skip_serializing_if = "Option::is_none")]
            evil_kill_requests: Option<u64>,
            #[serde(skip_serializing_if = "Option::is_none")]
            oom_group_kills: Option<u64>,
            #[serde(skip_serializing_if = "Option::is_none")]
            reload_replacements: Option<u64>,
            #[serde(flatten)]
            replacement: &'a super::replacement::ReplacementTotals,
            #[serde(flatten)]
            kill_paths: &'a super::KillPaths,
        }
        let body = Body {
            summary: self,
            surge_episodes: self.surge.map(|s| s.episodes),
            surge_episode_s: self.surge.map(|s| s.episode_s),
            evil_kill_requests: self.evil_kill_requests,
            oom_group_kills: self.oom_group_kills,
            reload_replacements: self.reload_replacements,
            replacement: &self.replacement,
            kill_paths: &self.kill_paths,
        };
        crate::schema::to_json(crate::schema::SUMMARY, &body).expect("a summary serialises")
    }

    /// The names `metrics` returns, for validating sweep objectives.
    pub fn metric_names() -> Vec<String> {
        Metrics::default()
            .summary("", 0, SimTime(1), 1)
            .metrics()
            .into_iter()
            .map(|(k, _)| k)
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quantiles_interpolate_like_numpy() {
        let xs = [1.0, 2.0, 3.0, 4.0];
        assert_eq!(quantile_sorted(&xs, 0.5), Some(2.5));
        assert_eq!(quantile_sorted(&xs, 0.0), Some(1.0));
        assert_eq!(quantile_sorted(&xs, 1.0), Some(4.0));
        assert!((quantile_sorted(&xs, 0.1).unwrap() - 1.3).abs() < 1e-12);
        assert_eq!(quantile_sorted(&[], 0.5), None);
    }

    #[test]
    fn peak_hour_slides() {
        let t = |s| SimTime::from_secs(s);
        assert_eq!(peak_hour(&[]), 0);
        assert_eq!(peak_hour(&[t(0), t(3599), t(3600), t(3700)]), 3);
        assert_eq!(peak_hour(&[t(0), t(4000), t(8000)]), 1);
    }
}
