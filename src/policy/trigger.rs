//! Triggers: what makes a worker want to go. Each is a pure check on the
//! worker's own numbers; per-worker thresholds are drawn at spawn by the
//! event loop from the functions here.
//!
//! | trigger | real system | checked |
//! | --- | --- | --- |
//! | RSS over jittered limit | the seeds; uWSGI `reload-on-rss`; Passenger `memory_limit` | at each sample |
//! | drift over own baseline, GC, N consecutive | Leakless `maxDriftMb` | after each request |
//! | request count + jitter | gunicorn `max_requests(_jitter)`, uWSGI `max-requests(-delta)`, unicorn-worker-killer, PHP-FPM `pm.max_requests` | after each request |
//! | lifetime + jitter | uWSGI `max-worker-lifetime(-delta)`, puma rolling restarts with splay | at its deadline |
//! | instance memory over a fraction | puma_worker_killer `percent_usage` (largest worker) | every `frequency_s` per instance |
//! | hard RSS kill by the master | uWSGI `evil-reload-on-rss` (SIGKILL, no drain, no gates, kills what is in flight) | on its own per-worker timer (`collector_interval_s`, 3 s) |

use crate::engine::SimTime;

macro_rules! causes {
    ($($(#[$doc:meta])* $variant:ident => $label:literal,)*) => {
        /// Which trigger made a worker ask (the `trigger` column).
        #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
        pub enum Cause {
            $($(#[$doc])* $variant,)*
        }

        impl Cause {
            /// Every trigger, derived from the one list below.
            pub const ALL: [Cause; [$(Cause::$variant,)*].len()] = [$(Cause::$variant,)*];

            pub fn label(self) -> &'static str {
                match self {
                    $(Cause::$variant => $label,)*
                }
            }
        }
    };
}

// One line per trigger: its variant and its `trigger` column label.
causes! {
    RssLimit => "rss_limit",
    Drift => "drift",
    MaxRequests => "max_requests",
    Lifetime => "lifetime",
    InstanceMemory => "instance_memory",
    /// The master's SIGKILL: a kill, not a recycle (`evil_kills`).
    EvilRss => "evil_rss",
}

impl Cause {
    /// Whether the trigger asks the gates for a graceful recycle (and so
    /// has a `recycles_<label>` counter); the evil kill asks nobody.
    pub fn is_recycle(self) -> bool {
        self != Cause::EvilRss
    }
}

/// How a per-worker threshold is spread.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Spread {
    /// `base + uniform[0, jitter]` (gunicorn `randint(0, max_requests_jitter)`;
    /// unicorn-worker-killer's `[min, max]` is `base = min, jitter = max - min`).
    Random,
    /// `base + slot * jitter` (uWSGI's `-delta` options, by worker id).
    PerWorker,
}

#[derive(Clone, Debug, PartialEq)]
pub struct MaxRequests {
    pub requests: u64,
    pub jitter: u64,
    pub spread: Spread,
}

impl MaxRequests {
    /// This worker's request limit, from a uniform draw `u` in [0, 1).
    pub fn limit(&self, slot: u32, u: f64) -> u64 {
        match self.spread {
            Spread::Random => self.requests + (u * (self.jitter + 1) as f64) as u64,
            Spread::PerWorker => self.requests + slot as u64 * self.jitter,
        }
    }
}

#[derive(Clone, Debug, PartialEq)]
pub struct Lifetime {
    pub max: SimTime,
    pub jitter: SimTime,
    pub spread: Spread,
}

impl Lifetime {
    /// This worker's lifetime, from a uniform draw `u` in [0, 1).
    pub fn of(&self, slot: u32, u: f64) -> SimTime {
        match self.spread {
            Spread::Random => self.max + SimTime((u * self.jitter.0 as f64) as u64),
            Spread::PerWorker => self.max + SimTime(self.jitter.0 * slot as u64),
        }
    }
}

/// Leakless: drift over the worker's own boot baseline, checked after each
/// request; on a breach a GC reclaims the collectable part of the growth
/// and the check runs again; `consecutive` breaches in a row trigger.
#[derive(Clone, Debug, PartialEq)]
pub struct Drift {
    pub max_drift_mb: f64,
    /// The per-worker drift limit is `max_drift_mb * (1 +- jitter_fraction)`.
    pub jitter_fraction: f64,
    /// Fraction of each request's growth that is garbage a GC can free.
    pub gc_reclaim_fraction: f64,
    pub consecutive: u32,
}

impl Drift {
    /// This worker's drift limit, from a uniform draw `u` in [0, 1), as
    /// Leakless draws it (`calculateEffectiveDriftLimit` in
    /// `packages/runtime/src/Leakless.php`): a whole number of MB
    /// `mt_rand(-j, j)` added to the limit, `j = round(max_drift_mb *
    /// jitter_fraction)`, and never below 1 MB.
    pub fn limit(&self, u: f64) -> f64 {
        let j = (self.max_drift_mb * self.jitter_fraction).round();
        if j <= 0.0 {
            return self.max_drift_mb;
        }
        let k = (u * (2.0 * j + 1.0)).floor().min(2.0 * j) - j;
        (self.max_drift_mb + k).max(1.0)
    }
}

/// What the drift check concludes after one request.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum DriftCheck {
    /// Under the limit (the violation streak resets).
    Ok,
    /// Over the limit before GC; `freed_mb` reclaimed; still over or not.
    Collected { freed_mb: f64, still_over: bool },
}

impl Drift {
    /// The check after a request: `drift` over `limit` runs a GC that frees
    /// `garbage_mb`, then looks again.
    pub fn check(&self, drift_mb: f64, limit_mb: f64, garbage_mb: f64) -> DriftCheck {
        if drift_mb <= limit_mb {
            return DriftCheck::Ok;
        }
        DriftCheck::Collected {
            freed_mb: garbage_mb,
            still_over: drift_mb - garbage_mb > limit_mb,
        }
    }
}

/// puma_worker_killer: every `frequency`, if the instance uses more than
/// `percent_usage` of its memory, the largest worker is asked to go.
#[derive(Clone, Debug, PartialEq)]
pub struct InstanceMemory {
    pub percent_usage: f64,
    pub frequency: SimTime,
    pub measure: InstanceMeasure,
}

/// The memory an instance check reads.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum InstanceMeasure {
    /// The cgroup's usage: master + private pages, shared pages once.
    Cgroup,
    /// Master RSS + the sum of the workers' RSS, shared pages once per
    /// process (puma_worker_killer, `puma_memory.rb` `get_total`): the
    /// cgroup's usage + the pages each live worker still shares.
    SummedRss,
}

impl InstanceMeasure {
    /// The measure, from the cgroup usage and the pages the live workers
    /// share with the master, summed over them (once per worker).
    pub fn of(self, cgroup_mb: f64, shared_mb: f64) -> f64 {
        match self {
            InstanceMeasure::Cgroup => cgroup_mb,
            InstanceMeasure::SummedRss => cgroup_mb + shared_mb,
        }
    }
}

/// The per-worker memory the RSS trigger compares with the limit.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RssMeasure {
    /// Resident set size, shared pages included.
    Rss,
    /// Private pages only (RSS - the pages still shared, which copy-on-write
    /// shrinks, `fleet::cow`): Passenger's private dirty +
    /// swap (`ProcessMetricsCollector.h`), with no swap modelled.
    Private,
    /// Proportional set size: private pages + each shared page divided by
    /// its sharers, the master and the instance's live workers (uWSGI
    /// `reload-on-pss`, `core/utils.c`, master branch; a worker's remaining
    /// shared pages are taken as shared by every process alike).
    Pss,
    /// The highest RSS of the process's life (`ru_maxrss`), which a
    /// request's transient working set raises (Celery's
    /// `worker_max_memory_per_child`, checked after each task: billiard
    /// `pool.py:378-385`, `mem_rss` in `compat.py:275-279`).
    Peak,
}

impl RssMeasure {
    /// What to subtract from RSS to get the measure, for a worker whose
    /// `shared_mb` pages are shared by `sharers` processes and whose peak
    /// is `peak_above_mb` over its RSS now.
    pub fn offset_mb(self, shared_mb: f64, sharers: usize, peak_above_mb: f64) -> f64 {
        match self {
            RssMeasure::Rss => 0.0,
            RssMeasure::Peak => -peak_above_mb,
            RssMeasure::Private => shared_mb,
            RssMeasure::Pss => shared_mb - shared_mb / sharers.max(1) as f64,
        }
    }
}

/// uWSGI `evil-reload-on-rss`: a memory thread in each worker stores its
/// RSS every `collector_interval` (`mem_collector` in `core/uwsgi.c`, sleeping
/// `mem-collector-freq` = 3 s by default, `core/init.c`); the master
/// SIGKILLs a worker whose stored RSS is at or over `limit_mb`
/// (`core/master_checks.c`), mid-request or not.
#[derive(Clone, Debug, PartialEq)]
pub struct EvilRss {
    pub limit_mb: f64,
    pub collector_interval: SimTime,
}

/// The triggers a policy turns on.
#[derive(Clone, Debug, PartialEq)]
pub struct Triggers {
    /// RSS at or over the worker's jittered limit (the seeds).
    pub rss_limit: bool,
    /// Samples in a row over the limit before the RSS trigger fires.
    pub rss_consecutive_samples: u32,
    /// What the RSS trigger reads.
    pub rss_measure: RssMeasure,
    pub drift: Option<Drift>,
    pub max_requests: Option<MaxRequests>,
    pub lifetime: Option<Lifetime>,
    pub instance_memory: Option<InstanceMemory>,
    /// uWSGI `evil-reload-on-rss`: the master SIGKILLs at this RSS.
    pub evil_rss: Option<EvilRss>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_cause_is_listed_once() {
        // An exhaustive match: a new trigger fails to compile here until
        // it gets its position, which must be its place in `ALL`.
        let position = |c: Cause| match c {
            Cause::RssLimit => 0,
            Cause::Drift => 1,
            Cause::MaxRequests => 2,
            Cause::Lifetime => 3,
            Cause::InstanceMemory => 4,
            Cause::EvilRss => 5,
        };
        let labels: std::collections::BTreeSet<_> = Cause::ALL.iter().map(|c| c.label()).collect();
        assert_eq!(labels.len(), Cause::ALL.len());
        for (i, c) in Cause::ALL.into_iter().enumerate() {
            assert_eq!(position(c), i, "{c:?}");
        }
    }

    #[test]
    fn request_limits_spread_as_the_real_systems_do() {
        let g = MaxRequests {
            requests: 1000,
            jitter: 50,
            spread: Spread::Random,
        };
        assert_eq!(g.limit(0, 0.0), 1000);
        assert_eq!(g.limit(0, 0.999_999), 1050, "randint is inclusive");
        let u = MaxRequests {
            requests: 1000,
            jitter: 10,
            spread: Spread::PerWorker,
        };
        assert_eq!((u.limit(0, 0.7), u.limit(3, 0.7)), (1000, 1030));
    }

    #[test]
    fn lifetimes_spread() {
        let l = Lifetime {
            max: SimTime::from_secs(3600),
            jitter: SimTime::from_secs(60),
            spread: Spread::Random,
        };
        assert_eq!(l.of(0, 0.5), SimTime::from_secs(3630));
        let d = Lifetime {
            spread: Spread::PerWorker,
            ..l
        };
        assert_eq!(d.of(2, 0.5), SimTime::from_secs(3720));
    }

    #[test]
    fn drift_collects_before_it_counts() {
        let d = Drift {
            max_drift_mb: 64.0,
            jitter_fraction: 0.1,
            gc_reclaim_fraction: 0.5,
            consecutive: 5,
        };
        // j = round(6.4) = 6: whole MB from 58 to 70, each of the 13 alike.
        assert_eq!(d.limit(0.0), 58.0);
        assert_eq!(d.limit(0.999_999), 70.0);
        assert_eq!(d.limit(6.5 / 13.0), 64.0);
        let limits: std::collections::BTreeSet<u64> = (0..1300)
            .map(|k| d.limit(k as f64 / 1300.0) as u64)
            .collect();
        assert_eq!(limits, (58..=70).collect());
        let tiny = Drift {
            max_drift_mb: 2.0,
            jitter_fraction: 1.0,
            ..d.clone()
        };
        assert_eq!(tiny.limit(0.0), 1.0, "never below 1 MB");
        assert_eq!(d.check(60.0, 64.0, 10.0), DriftCheck::Ok);
        assert_eq!(
            d.check(70.0, 64.0, 10.0),
            DriftCheck::Collected {
                freed_mb: 10.0,
                still_over: false
            }
        );
        assert_eq!(
            d.check(80.0, 64.0, 10.0),
            DriftCheck::Collected {
                freed_mb: 10.0,
                still_over: true
            }
        );
    }
}
