//! The raw mirror of a scenario file: what serde reads, with every default
//! filled in. Nothing here is checked beyond types; `validate` does that.
//! `fleetsim scenario show` prints this struct, so every key a user can set
//! appears here with its default.

use serde::{Deserialize, Serialize};

mod kill;
mod platform;
mod policy;
mod replace;
pub use kill::*;
pub use platform::*;
pub use policy::*;
pub use replace::*;

#[derive(Serialize, Deserialize, Clone, Debug, PartialEq)]
#[serde(deny_unknown_fields, default)]
pub struct RawScenario {
    pub name: String,
    pub description: String,
    pub run: RawRun,
    pub engine: RawEngine,
    pub fleet: RawFleet,
    pub workload: RawWorkload,
    pub client: RawClient,
    pub policy: RawPolicy,
    pub platform: RawPlatform,
}

impl Default for RawScenario {
    fn default() -> Self {
        RawScenario {
            name: "unnamed".into(),
            description: String::new(),
            run: RawRun::default(),
            engine: RawEngine::default(),
            fleet: RawFleet::default(),
            workload: RawWorkload::default(),
            client: RawClient::default(),
            policy: RawPolicy::default(),
            platform: RawPlatform::default(),
        }
    }
}

#[derive(Serialize, Deserialize, Clone, Debug, PartialEq)]
#[serde(deny_unknown_fields, default)]
pub struct RawRun {
    /// Simulated window length; `--hours` overrides it.
    pub duration_h: f64,
    /// Hard bound on processed events: a run that would exceed it stops with an error.
    pub max_events: u64,
    /// Row spacing of `timeline.csv`.
    pub timeline_step_s: f64,
    /// Saturation: every worker asks to recycle at every sample (its limit
    /// is its boot RSS), so the run shows what the gates permit.
    pub saturate: bool,
}

impl Default for RawRun {
    fn default() -> Self {
        RawRun {
            duration_h: 24.0,
            max_events: 2_000_000_000,
            timeline_step_s: 60.0,
            saturate: false,
        }
    }
}

#[derive(Serialize, Deserialize, Clone, Copy, Debug, PartialEq, Eq)]
#[serde(rename_all = "snake_case")]
pub enum EngineMode {
    /// One event per request: every arrival, completion and retry.
    Exact,
    /// Tau-leaping: each serving worker's requests over `step_s` are one
    /// Poisson count; recycles, boots, drains and samples stay exact events.
    Aggregate,
}

/// How requests are simulated (docs/aggregate.md).
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq)]
#[serde(deny_unknown_fields, default)]
pub struct RawEngine {
    pub mode: EngineMode,
    /// Aggregate mode: the leap, in seconds (0 < step_s <= 60).
    pub step_s: f64,
}

impl Default for RawEngine {
    fn default() -> Self {
        RawEngine {
            mode: EngineMode::Exact,
            step_s: 1.0,
        }
    }
}

#[derive(Serialize, Deserialize, Clone, Debug, PartialEq)]
#[serde(deny_unknown_fields, default)]
pub struct RawFleet {
    pub instances: u32,
    pub workers_per_instance: u32,
    /// Requests one worker serves at once (1 = sync worker).
    pub concurrency: u32,
    /// The cgroup memory limit of one instance (container).
    pub container_mb: f64,
    /// RSS of the preloaded master; a forked worker starts here.
    pub boot_rss_mb: f64,
    /// Copy-on-write pages a worker still shares with the master, counted
    /// once by the cgroup: instance usage = master + sum(worker rss - shared).
    pub shared_mb: f64,
    /// Time from fork to serving the first request.
    pub boot_s: f64,
    /// How long a draining worker may finish in-flight work before it is
    /// killed, with `fleet.kill.drain_ends = "graceful_timeout"` (the default).
    pub graceful_timeout_s: f64,
    /// Start the window with workers of random age rather than all freshly forked.
    pub warm_start: bool,
    /// Which idle worker of an instance takes a request (pooled and close
    /// connections; a pinned connection is reopened onto any serving
    /// worker, uniformly). Written to scenario.toml only when not the
    /// default, so older runs' files are unchanged.
    #[serde(skip_serializing_if = "Accept::is_longest_idle")]
    pub accept: Accept,
    pub leak: RawLeak,
    pub cow: RawCow,
    pub cold_start: RawColdStart,
    pub kill: RawKill,
}

impl Default for RawFleet {
    fn default() -> Self {
        RawFleet {
            instances: 2,
            workers_per_instance: 3,
            concurrency: 1,
            container_mb: 2048.0,
            boot_rss_mb: 360.0,
            shared_mb: 120.0,
            boot_s: 2.0,
            graceful_timeout_s: 30.0,
            warm_start: true,
            accept: Accept::LongestIdle,
            leak: RawLeak::default(),
            cow: RawCow::default(),
            cold_start: RawColdStart::default(),
            kill: RawKill::default(),
        }
    }
}

/// Which of an instance's idle workers takes the next request
/// (`[fleet] accept`).
#[derive(Serialize, Deserialize, Clone, Copy, Debug, Default, PartialEq, Eq)]
#[serde(rename_all = "snake_case")]
pub enum Accept {
    /// The one idle longest: workers blocked in `accept(2)` on the shared
    /// socket wait in one exclusive queue and the kernel wakes its head
    /// (gunicorn's sync workers between `select` calls come close), so an
    /// idle instance hands requests to its workers in turn.
    #[default]
    LongestIdle,
    /// Any idle worker, uniformly: every worker polls the shared socket
    /// (asyncio's epoll under UvicornWorker, a thundering herd) and the
    /// first to call `accept` wins.
    Random,
    /// The one idle for the shortest time: `EPOLLEXCLUSIVE` wakes the
    /// waiter that went back to `epoll_wait` last, so a quiet instance
    /// sends nearly all its requests to one worker and its siblings age
    /// slowly.
    MostRecent,
    /// The idle worker in the lowest slot: a fixed order of preference,
    /// as HAProxy's `balance first` gives servers (the first with a free
    /// connection slot) and as a model that scans its workers for the
    /// first idle one does. A quiet instance sends nearly all its requests
    /// to its first worker, whatever has happened since.
    First,
}

impl Accept {
    pub fn is_longest_idle(&self) -> bool {
        *self == Accept::LongestIdle
    }
}

#[derive(Serialize, Deserialize, Clone, Copy, Debug, PartialEq, Eq)]
#[serde(rename_all = "snake_case")]
pub enum LeakDistribution {
    Constant,
    Lognormal,
    Exponential,
}

#[derive(Serialize, Deserialize, Clone, Debug, PartialEq)]
#[serde(deny_unknown_fields, default)]
pub struct RawLeak {
    /// How the per-worker leak velocity is drawn at spawn.
    pub distribution: LeakDistribution,
    /// Mean leak velocity across workers.
    pub mean_mb_per_request: f64,
    /// Coefficient of variation of the velocity across workers (lognormal only).
    pub cv: f64,
    /// Memory a fresh worker gains while warming caches, approached exponentially.
    pub warmup_mb: f64,
    /// Requests over which the warm-up growth is 63% done.
    pub warmup_requests: f64,
    /// Chance that one request also adds a step (a large allocation never returned).
    pub step_probability: f64,
    /// Mean size of such a step (exponentially distributed).
    pub step_mean_mb: f64,
    /// Mean working set a request holds while it runs and frees after
    /// (exponentially distributed; 0 = none): seen by the `peak` measure.
    pub transient_mean_mb: f64,
    /// Fleet-wide memory surges; absent (off) unless the table is given.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub surge: Option<RawSurge>,
}

/// `[fleet.leak.surge]`: episodes of heavy requests that hit every worker
/// at once (`fleet::surge`). Off when absent or `episodes_per_day = 0`.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq)]
#[serde(deny_unknown_fields, default)]
pub struct RawSurge {
    /// Mean episode starts per simulated day (a Poisson process); 0 = off.
    pub episodes_per_day: f64,
    /// Mean episode length.
    pub duration_s: f64,
    /// Coefficient of variation of the episode length (lognormal; 0 = every
    /// episode lasts `duration_s`).
    pub duration_cv: f64,
    /// Extra RSS every served request adds while an episode is on.
    pub mb_per_request: f64,
    /// The most one episode adds to one worker process (a cache that fills
    /// to a bound); `inf` (the default) = no bound.
    pub max_mb_per_worker: f64,
}

impl Default for RawSurge {
    fn default() -> Self {
        RawSurge {
            episodes_per_day: 0.0,
            duration_s: 1800.0,
            duration_cv: 0.5,
            mb_per_request: 1.0,
            max_mb_per_worker: f64::INFINITY,
        }
    }
}

impl Default for RawLeak {
    fn default() -> Self {
        RawLeak {
            distribution: LeakDistribution::Lognormal,
            mean_mb_per_request: 0.1,
            cv: 0.5,
            warmup_mb: 0.0,
            warmup_requests: 100.0,
            step_probability: 0.0,
            step_mean_mb: 0.0,
            transient_mean_mb: 0.0,
            surge: None,
        }
    }
}

#[derive(Serialize, Deserialize, Clone, Copy, Debug, PartialEq, Eq)]
#[serde(rename_all = "snake_case")]
pub enum ProfileKind {
    Constant,
    Diurnal,
    Series,
}

#[derive(Serialize, Deserialize, Clone, Copy, Debug, PartialEq, Eq)]
#[serde(rename_all = "snake_case")]
pub enum BalancerKind {
    RoundRobin,
    LeastOutstanding,
    Random,
}

#[derive(Serialize, Deserialize, Clone, Copy, Debug, PartialEq, Eq)]
#[serde(rename_all = "snake_case")]
pub enum ServiceKind {
    Constant,
    Exponential,
    Lognormal,
}

#[derive(Serialize, Deserialize, Clone, Debug, PartialEq)]
#[serde(deny_unknown_fields, default)]
pub struct RawWorkload {
    /// Mean arrival rate over the whole fleet (the profile's mean).
    pub rps: f64,
    pub profile: ProfileKind,
    /// Diurnal: ratio of the peak rate to the trough rate.
    pub peak_to_trough: f64,
    /// Diurnal: clock hour of the peak.
    pub peak_hour: f64,
    /// Clock hour at the window start (diurnal phase; replay timestamps).
    pub start_hour: f64,
    /// Series: a CSV `t_s,rps`, relative to the scenario file; steps between rows.
    pub series_csv: String,
    pub balancer: BalancerKind,
    pub service: ServiceKind,
    pub service_mean_ms: f64,
    /// Lognormal only: the 99th percentile of service time.
    pub service_p99_ms: f64,
    /// Requests that may wait per instance; a full backlog fails the request (503).
    pub backlog_requests: u32,
    /// A request that waited this long in the backlog fails (504).
    pub queue_timeout_s: f64,
}

impl Default for RawWorkload {
    fn default() -> Self {
        RawWorkload {
            rps: 1.0,
            profile: ProfileKind::Constant,
            peak_to_trough: 3.0,
            peak_hour: 20.0,
            start_hour: 0.0,
            series_csv: String::new(),
            balancer: BalancerKind::RoundRobin,
            service: ServiceKind::Lognormal,
            service_mean_ms: 100.0,
            service_p99_ms: 800.0,
            backlog_requests: 2048,
            queue_timeout_s: 30.0,
        }
    }
}

#[derive(Serialize, Deserialize, Clone, Debug, PartialEq)]
#[serde(deny_unknown_fields, default)]
pub struct RawClient {
    /// Retries on a connection error (undici in the seeds: 1).
    pub retries: u32,
    pub retry_delay_ms: f64,
    /// Idle keep-alive connections the client holds to each worker.
    pub keepalive_conns_per_worker: u32,
    /// How long the client may still pick a connection the server has closed.
    pub stale_window_s: f64,
    /// How requests reach a worker (`pooled`, `pinned` or `close`; see
    /// `ConnectionsKind`).
    pub connections: ConnectionsKind,
    /// `pinned`: the keep-alive connections the client holds to each instance.
    pub conns_per_instance: u32,
    /// `pinned`: the server closes a connection idle this long (gunicorn's
    /// `--keepalive`, 2 s, is UvicornWorker's `timeout_keep_alive`; uvicorn
    /// alone: 5 s); `inf`: never.
    pub server_keepalive_s: f64,
    /// `pinned`: the client closes its own connection idle this long and
    /// opens a new one for its next request (undici's `keepAliveTimeout`,
    /// 4 s); a server close later than this is never seen; `inf`: never.
    pub client_idle_timeout_s: f64,
}

/// How the client's requests reach a worker.
#[derive(Serialize, Deserialize, Clone, Copy, Debug, PartialEq, Eq)]
#[serde(rename_all = "snake_case")]
pub enum ConnectionsKind {
    /// Keep-alive connections pooled over the instance: a request goes to
    /// any free worker, and `keepalive_conns_per_worker` connections per
    /// exited worker stay pickable for `stale_window_s` (the seeds' model).
    Pooled,
    /// Keep-alive connections as entities: each belongs to the worker that
    /// accepted it, and a request goes down its connection to that worker
    /// (UvicornWorker, gthread, puma, Node's undici on the client side).
    Pinned,
    /// `Connection: close`: one connection per request, taken by any free
    /// worker, never stale (gunicorn sync, unicorn, FastCGI to PHP-FPM).
    Close,
}

impl Default for RawClient {
    fn default() -> Self {
        RawClient {
            retries: 1,
            retry_delay_ms: 50.0,
            keepalive_conns_per_worker: 2,
            stale_window_s: 4.0,
            connections: ConnectionsKind::Pooled,
            conns_per_instance: 16,
            server_keepalive_s: f64::INFINITY,
            client_idle_timeout_s: f64::INFINITY,
        }
    }
}
