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
//! | hard RSS kill by the master | uWSGI `evil-reload-on-rss` (SIGKILL, no drain, no gates) | at each sample |

use crate::engine::SimTime;

/// Which trigger made a worker ask (the `trigger` column).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Cause {
    RssLimit,
    Drift,
    MaxRequests,
    Lifetime,
    InstanceMemory,
    EvilRss,
}

impl Cause {
    pub const ALL: [Cause; 6] = [
        Cause::RssLimit,
        Cause::Drift,
        Cause::MaxRequests,
        Cause::Lifetime,
        Cause::InstanceMemory,
        Cause::EvilRss,
    ];

    pub fn label(self) -> &'static str {
        match self {
            Cause::RssLimit => "rss_limit",
            Cause::Drift => "drift",
            Cause::MaxRequests => "max_requests",
            Cause::Lifetime => "lifetime",
            Cause::InstanceMemory => "instance_memory",
            Cause::EvilRss => "evil_rss",
        }
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
    pub fn limit(&self, u: f64) -> f64 {
        self.max_drift_mb * (1.0 + self.jitter_fraction * (2.0 * u - 1.0))
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
}

/// The triggers a policy turns on.
#[derive(Clone, Debug, PartialEq)]
pub struct Triggers {
    /// RSS at or over the worker's jittered limit (the seeds).
    pub rss_limit: bool,
    /// Samples in a row over the limit before the RSS trigger fires.
    pub rss_consecutive_samples: u32,
    pub drift: Option<Drift>,
    pub max_requests: Option<MaxRequests>,
    pub lifetime: Option<Lifetime>,
    pub instance_memory: Option<InstanceMemory>,
    /// uWSGI `evil-reload-on-rss`: the master SIGKILLs at this RSS.
    pub evil_rss_mb: Option<f64>,
}

#[cfg(test)]
mod tests {
    use super::*;

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
        assert_eq!(d.limit(0.0), 57.6);
        assert!((d.limit(1.0) - 70.4).abs() < 1e-9);
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
