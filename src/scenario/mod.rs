//! Scenarios in two stages: the raw serde mirror (`raw`), then
//! `validate`, which checks every value and returns a typed `Scenario`.
//! Everything after loading takes a validated `&Scenario`.
//!
//! Errors name the origin (file), the line when it is known, the dotted key
//! and what is wrong, on one line.

mod budget;
pub mod kill;
pub mod load;
pub mod raw;
mod validate;

pub use budget::estimated_events;
pub use kill::{DrainDeadline, Kill};
pub use load::{DEFAULT_SCENARIO, DEFAULT_SCENARIO_NAME, Override, load, parse_override};
pub use raw::RawScenario;
pub(crate) use validate::checks;
pub use validate::validate;

use crate::engine::time::SimTime;
use crate::fleet::{Cow, LeakModel, Surge};
pub use crate::policy::{Pipeline, Replacement, SampleClock, Sampling, Triggers};
use crate::traffic::{RateProfile, ServiceDist};
pub use raw::{Accept, BalancerKind, ConnectionsKind, EngineMode, SamplingKind};
use std::fmt;

/// A scenario error: where, which key, and what is wrong.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub struct ScenarioError {
    pub origin: String,
    pub line: Option<usize>,
    pub key: Option<String>,
    pub reason: String,
}

impl fmt::Display for ScenarioError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        use crate::text::one_line;
        write!(f, "{}", one_line(&self.origin))?;
        if let Some(line) = self.line {
            write!(f, ":{line}")?;
        }
        if let Some(key) = &self.key {
            write!(f, ": key `{}`", one_line(key))?;
        }
        write!(f, ": {}", one_line(&self.reason))
    }
}

/// A checked scenario. Durations are simulated time; sizes are MB.
#[derive(Clone, Debug, PartialEq)]
pub struct Scenario {
    pub name: String,
    pub duration: SimTime,
    pub max_events: u64,
    pub timeline_step: SimTime,
    /// Every worker asks at every sample (`fleetsim saturate`).
    pub saturate: bool,
    pub engine: Engine,
    pub fleet: Fleet,
    pub workload: Workload,
    pub client: Client,
    pub policy: Policy,
    pub platform: Platform,
}

/// `[platform]`: what the container platform does to whole instances.
#[derive(Clone, Debug, PartialEq)]
pub struct Platform {
    /// `memory.oom.group`: an OOM kills the whole container, which restarts
    /// after this delay; `None`: the kernel kills the largest worker.
    pub oom_group: Option<SimTime>,
    /// Reload waves, in time order.
    pub reloads: Vec<Reload>,
}

/// A reload wave: every serving worker of `instance` (of every instance
/// when `None`) replaced at `at`.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Reload {
    pub at: SimTime,
    pub instance: Option<u32>,
}

/// How requests are simulated: one event each, or Poisson counts per step.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Engine {
    pub mode: EngineMode,
    /// The aggregate mode's step (unused in exact mode).
    pub step: SimTime,
}

impl Engine {
    pub fn is_aggregate(&self) -> bool {
        self.mode == EngineMode::Aggregate
    }
}

#[derive(Clone, Debug, PartialEq)]
pub struct Fleet {
    pub instances: usize,
    pub workers_per_instance: usize,
    pub concurrency: usize,
    pub container_mb: f64,
    pub boot_rss_mb: f64,
    /// Pages a worker shares with its master at fork (0 without preload).
    pub shared_mb: f64,
    /// The master's RSS: `boot_rss_mb` when it preloads the app,
    /// `fleet.cow.master_rss_mb` when it does not.
    pub master_mb: f64,
    /// Copy-on-write unsharing (`[fleet.cow]`); `None` when nothing unshares.
    pub cow: Option<Cow>,
    pub boot: SimTime,
    pub graceful_timeout: SimTime,
    /// The server's kill paths (`[fleet.kill]`).
    pub kill: Kill,
    pub warm_start: bool,
    /// Which idle worker takes a request (`[fleet] accept`).
    pub accept: Accept,
    pub leak: LeakModel,
    /// Mean transient working set of a request, MB (0 = none): raises a
    /// worker's peak RSS, not its RSS (`policy.rss_measure = "peak"`).
    pub transient_mean_mb: f64,
    /// Fleet-wide memory surges (`[fleet.leak.surge]`); `None` when off.
    pub surge: Option<Surge>,
}

impl Fleet {
    pub fn workers(&self) -> usize {
        self.instances * self.workers_per_instance
    }
}

#[derive(Clone, Debug, PartialEq)]
pub struct Workload {
    pub profile: RateProfile,
    pub balancer: BalancerKind,
    pub service: ServiceDist,
    pub backlog: usize,
    pub queue_timeout: SimTime,
}

#[derive(Clone, Debug, PartialEq)]
pub struct Client {
    pub retries: u32,
    pub retry_delay: SimTime,
    pub keepalive_conns_per_worker: u32,
    pub stale_window: SimTime,
    pub connections: Connections,
}

/// How requests reach a worker (`[client] connections`).
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Connections {
    Pooled,
    /// Connections pinned to the worker that accepted them (`sim::connections`).
    Pinned {
        per_instance: u32,
        /// The server closes a connection idle this long; `None`: never.
        server_keepalive: Option<SimTime>,
        /// The client closes a connection idle this long; `None`: never.
        client_idle_timeout: Option<SimTime>,
    },
    Close,
}

impl Scenario {
    /// The client's keep-alive pool to one instance: connections per
    /// worker times workers per instance. A request picks one of them, so
    /// `stale / pool` of its picks hit a connection the server closed.
    pub fn keepalive_pool(&self) -> f64 {
        (self.client.keepalive_conns_per_worker as usize * self.fleet.workers_per_instance) as f64
    }
}

#[derive(Clone, Debug, PartialEq)]
pub struct Policy {
    pub base_limit_mb: f64,
    pub jitter_mb: f64,
    pub hard_limit_mb: f64,
    pub sampling: Sampling,
    pub triggers: Triggers,
    pub pipeline: Pipeline,
    pub replacement: Replacement,
    /// The rolling restart clock, the fork-bomb delay, the cold start.
    pub modes: crate::policy::replace::Modes,
    pub busy_window_s: u64,
}
