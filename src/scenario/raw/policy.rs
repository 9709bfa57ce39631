//! The raw `[policy]` table and its sub-tables (gates, triggers, the presets'
//! knobs), as serde reads them with every default; checked by
//! `validate::policy`.

use super::replace::*;
use serde::{Deserialize, Serialize};

#[derive(Serialize, Deserialize, Clone, Copy, Debug, PartialEq, Eq)]
#[serde(rename_all = "snake_case")]
pub enum SamplingKind {
    /// Every `tick_s`, with a random phase per worker.
    Timer,
    /// After every `sample_every_requests` requests a worker serves.
    Requests,
}

#[derive(Serialize, Deserialize, Clone, Copy, Debug, PartialEq, Eq)]
#[serde(rename_all = "snake_case")]
pub enum SampleClockKind {
    PerWorker,
    PerInstance,
    WallClock,
}

#[derive(Serialize, Deserialize, Clone, Debug, PartialEq)]
#[serde(deny_unknown_fields, default)]
pub struct RawPolicy {
    /// The RSS trigger: a worker at or over its jittered limit asks to recycle...
    pub rss_trigger: bool,
    /// ...after this many samples in a row over it (Granian `--rss-samples`).
    pub rss_consecutive_samples: u32,
    /// What the RSS trigger compares with the limit: `rss` (shared pages
    /// included: uWSGI, Granian, unicorn-worker-killer, Leakless, the seeds)
    /// or `private` (the worker's private pages, RSS - `shared_mb`:
    /// Passenger's private dirty + swap, with no swap modelled) or `pss`
    /// (private pages + the shared ones divided among the master and the
    /// instance's live workers: uWSGI's `reload-on-pss`).
    pub rss_measure: RssMeasureKind,
    /// uWSGI `min-worker-lifetime`: a worker younger than this is held. 0 = off.
    pub min_worker_age_s: f64,
    /// Per-worker limit = base +- jitter, drawn at spawn.
    pub base_limit_mb: f64,
    pub jitter_mb: f64,
    /// RSS at which busy deferral is skipped and the hard-ceiling exits apply.
    pub hard_limit_mb: f64,
    /// Start-up check (the seeds' fix 4): refuse a scenario whose lowest
    /// jittered limit leaves less than this over the boot RSS. 0 = off.
    pub min_runway_mb: f64,
    pub sampling: SamplingKind,
    pub tick_s: f64,
    /// Whose clock the timer follows: `per_worker` (a random phase each),
    /// `per_instance` (one watcher per master reads every worker at once)
    /// or `wall_clock` (multiples of `tick_s` fleet-wide).
    pub sample_clock: SampleClockKind,
    /// Adaptive sampling (fix 2): sample every `near_tick_s` once RSS is
    /// within this fraction of the limit. 0 = off.
    pub near_limit_fraction: f64,
    pub near_tick_s: f64,
    pub sample_every_requests: u32,
    /// Minimum age of the instance's last recycle before another may start.
    pub cooldown_s: f64,
    /// The cooldown while the instance is under memory pressure.
    pub pressure_cooldown_s: f64,
    /// Ceiling escalation (fix 1): RSS at or over the hard limit uses the
    /// pressure cooldown.
    pub escalate_on_ceiling: bool,
    /// Instance headroom below which the instance is under pressure.
    pub min_headroom_mb: f64,
    pub busy_deferral: bool,
    /// Busy deferral: instance arrival rate above which a recycle waits...
    pub busy_rps: f64,
    /// ...for at most this long after the worker first asked.
    pub defer_max_s: f64,
    /// Trailing window over which the instance arrival rate is measured.
    pub busy_window_s: f64,
    /// `exit_then_spawn` (gunicorn, uWSGI, puma), `spawn_then_exit`
    /// (handover on readiness, Kubernetes maxSurge), `detach_and_spawn`
    /// (Passenger) or `timed_handover` (Granian).
    pub replacement: ReplacementKind,
    pub detach_and_spawn: RawDetach,
    pub timed_handover: RawTimedHandover,
    pub rolling_restart: RawRollingRestart,
    pub forkbomb: RawForkBomb,
    pub lease: RawLease,
    pub token_bucket: RawTokenBucket,
    pub window_cap: RawWindowCap,
    pub capacity_floor: RawCapacityFloor,
    pub max_requests: RawMaxRequests,
    pub lifetime: RawLifetime,
    pub drift: RawDrift,
    pub evil_rss: RawEvilRss,
    pub instance_memory: RawInstanceMemory,
}

impl Default for RawPolicy {
    fn default() -> Self {
        RawPolicy {
            rss_trigger: true,
            rss_consecutive_samples: 1,
            rss_measure: RssMeasureKind::Rss,
            min_worker_age_s: 0.0,
            base_limit_mb: 500.0,
            jitter_mb: 40.0,
            hard_limit_mb: 650.0,
            min_runway_mb: 0.0,
            sampling: SamplingKind::Timer,
            tick_s: 45.0,
            sample_clock: SampleClockKind::PerWorker,
            near_limit_fraction: 0.0,
            near_tick_s: 5.0,
            sample_every_requests: 50,
            cooldown_s: 120.0,
            pressure_cooldown_s: 30.0,
            escalate_on_ceiling: false,
            min_headroom_mb: 350.0,
            busy_deferral: true,
            busy_rps: 50.0,
            defer_max_s: 60.0,
            busy_window_s: 60.0,
            replacement: ReplacementKind::ExitThenSpawn,
            detach_and_spawn: RawDetach::default(),
            timed_handover: RawTimedHandover::default(),
            rolling_restart: RawRollingRestart::default(),
            forkbomb: RawForkBomb::default(),
            lease: RawLease::default(),
            token_bucket: RawTokenBucket::default(),
            window_cap: RawWindowCap::default(),
            capacity_floor: RawCapacityFloor::default(),
            max_requests: RawMaxRequests::default(),
            lifetime: RawLifetime::default(),
            drift: RawDrift::default(),
            evil_rss: RawEvilRss::default(),
            instance_memory: RawInstanceMemory::default(),
        }
    }
}

#[derive(Serialize, Deserialize, Clone, Copy, Debug, PartialEq, Eq)]
#[serde(rename_all = "snake_case")]
pub enum RssMeasureKind {
    Rss,
    Private,
    /// Proportional set size: private pages plus each shared page divided
    /// by the processes sharing it (uWSGI `reload-on-pss`, master branch).
    Pss,
    /// The highest RSS of the process's life, a request's transient working
    /// set included (Celery's `ru_maxrss`, billiard `compat.py` `mem_rss`).
    Peak,
}

/// What puma_worker_killer-style instance checks read.
#[derive(Serialize, Deserialize, Clone, Copy, Debug, PartialEq, Eq)]
#[serde(rename_all = "snake_case")]
pub enum InstanceMeasureKind {
    /// The cgroup's usage: master + each worker's private pages (shared once).
    Cgroup,
    /// Master RSS + every worker's RSS: shared pages once per process
    /// (puma_worker_killer's `get_total`, `lib/puma_worker_killer/puma_memory.rb`).
    SummedRss,
}

#[derive(Serialize, Deserialize, Clone, Copy, Debug, PartialEq, Eq)]
#[serde(rename_all = "snake_case")]
pub enum ReplacementKind {
    ExitThenSpawn,
    SpawnThenExit,
    /// Passenger: detached from routing at once, the successor spawned
    /// beside it, requests waiting in the proxy queue.
    DetachAndSpawn,
    /// Granian: one handover at a time per server, the old worker
    /// terminated a fixed interval after its successor's spawn.
    TimedHandover,
}

#[derive(Serialize, Deserialize, Clone, Debug, PartialEq)]
#[serde(deny_unknown_fields, default)]
pub struct RawLease {
    pub enabled: bool,
    /// The lease is held for its whole TTL (the seeds' valkey lease is never released early).
    pub ttl_s: f64,
    /// Emergency exits: a held lease lets the worker through under pressure...
    pub exit_on_pressure: bool,
    /// ...or at the hard ceiling.
    pub exit_on_hard_ceiling: bool,
}

impl Default for RawLease {
    fn default() -> Self {
        RawLease {
            enabled: true,
            ttl_s: 120.0,
            exit_on_pressure: true,
            exit_on_hard_ceiling: true,
        }
    }
}

/// A fleet-wide token bucket (fix 3).
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq)]
#[serde(deny_unknown_fields, default)]
pub struct RawTokenBucket {
    pub enabled: bool,
    pub rate_per_hour: f64,
    pub burst: f64,
    pub exit_on_pressure: bool,
    pub exit_on_hard_ceiling: bool,
}

impl Default for RawTokenBucket {
    fn default() -> Self {
        RawTokenBucket {
            enabled: false,
            rate_per_hour: 6.0,
            burst: 2.0,
            exit_on_pressure: true,
            exit_on_hard_ceiling: true,
        }
    }
}

/// At most `max_recycles` fleet-wide in any trailing `window_s` (fix 3).
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq)]
#[serde(deny_unknown_fields, default)]
pub struct RawWindowCap {
    pub enabled: bool,
    pub max_recycles: u32,
    pub window_s: f64,
    pub exit_on_pressure: bool,
    pub exit_on_hard_ceiling: bool,
}

impl Default for RawWindowCap {
    fn default() -> Self {
        RawWindowCap {
            enabled: false,
            max_recycles: 6,
            window_s: 3600.0,
            exit_on_pressure: true,
            exit_on_hard_ceiling: true,
        }
    }
}

/// Refuse while fleet serving workers would drop below a floor (fix 3, a
/// PodDisruptionBudget's `minAvailable`).
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq)]
#[serde(deny_unknown_fields, default)]
pub struct RawCapacityFloor {
    pub enabled: bool,
    pub min_serving_workers: u32,
    pub exit_on_pressure: bool,
    pub exit_on_hard_ceiling: bool,
}

impl Default for RawCapacityFloor {
    fn default() -> Self {
        RawCapacityFloor {
            enabled: false,
            min_serving_workers: 5,
            exit_on_pressure: true,
            exit_on_hard_ceiling: true,
        }
    }
}

#[derive(Serialize, Deserialize, Clone, Copy, Debug, PartialEq, Eq)]
#[serde(rename_all = "snake_case")]
pub enum SpreadKind {
    /// base + uniform[0, jitter] per worker (gunicorn, unicorn-worker-killer).
    Random,
    /// base + worker index * jitter (uWSGI's -delta options).
    PerWorker,
}

/// Recycle after a number of requests (gunicorn `max_requests` +
/// `max_requests_jitter`, uWSGI `max-requests` + `max-requests-delta`).
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq)]
#[serde(deny_unknown_fields, default)]
pub struct RawMaxRequests {
    pub enabled: bool,
    pub requests: u64,
    pub jitter_requests: u64,
    pub spread: SpreadKind,
}

impl Default for RawMaxRequests {
    fn default() -> Self {
        RawMaxRequests {
            enabled: false,
            requests: 1000,
            jitter_requests: 50,
            spread: SpreadKind::Random,
        }
    }
}

/// Recycle after a lifetime (uWSGI `max-worker-lifetime` + delta; puma
/// rolling restarts with splay).
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq)]
#[serde(deny_unknown_fields, default)]
pub struct RawLifetime {
    pub enabled: bool,
    pub max_s: f64,
    pub jitter_s: f64,
    pub spread: SpreadKind,
}

impl Default for RawLifetime {
    fn default() -> Self {
        RawLifetime {
            enabled: false,
            max_s: 3600.0,
            jitter_s: 0.0,
            spread: SpreadKind::Random,
        }
    }
}

/// Leakless: drift over the worker's own boot baseline.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq)]
#[serde(deny_unknown_fields, default)]
pub struct RawDrift {
    pub enabled: bool,
    pub max_drift_mb: f64,
    /// Per-worker drift limit = max_drift_mb * (1 +- jitter_fraction).
    pub jitter_fraction: f64,
    /// Fraction of each request's growth a GC can free on a breach.
    pub gc_reclaim_fraction: f64,
    pub consecutive_violations: u32,
}

impl Default for RawDrift {
    fn default() -> Self {
        RawDrift {
            enabled: false,
            max_drift_mb: 64.0,
            jitter_fraction: 0.1,
            gc_reclaim_fraction: 0.0,
            consecutive_violations: 5,
        }
    }
}

/// uWSGI `evil-reload-on-rss`: the master SIGKILLs a worker at this RSS:
/// no drain, no gates, whatever it is serving. A memory thread in each
/// worker reads its RSS every `collector_interval_s` (`mem-collector-freq`,
/// 3 s by default: uWSGI `core/init.c`), and the master kills on that value.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq)]
#[serde(deny_unknown_fields, default)]
pub struct RawEvilRss {
    pub enabled: bool,
    pub limit_mb: f64,
    pub collector_interval_s: f64,
}

impl Default for RawEvilRss {
    fn default() -> Self {
        RawEvilRss {
            enabled: false,
            limit_mb: 700.0,
            collector_interval_s: 3.0,
        }
    }
}

/// puma_worker_killer: every `frequency_s`, if the instance uses more than
/// `percent_usage` of `container_mb`, its largest worker is asked to go.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq)]
#[serde(deny_unknown_fields, default)]
pub struct RawInstanceMemory {
    pub enabled: bool,
    pub percent_usage: f64,
    pub frequency_s: f64,
    /// `cgroup` (usage as the kernel counts it) or `summed_rss`.
    pub measure: InstanceMeasureKind,
}

impl Default for RawInstanceMemory {
    fn default() -> Self {
        RawInstanceMemory {
            enabled: false,
            percent_usage: 0.98,
            frequency_s: 5.0,
            measure: InstanceMeasureKind::Cgroup,
        }
    }
}
