//! Telemetry rows: the seeds' `worker_recycled` schema plus the holds, kills
//! and client canary events, and one timeline row per step. The event loop
//! hands each row to an `Observer` as it happens (nothing is buffered).

use crate::engine::time::SimTime;
use crate::policy::{Cause, Decision};

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum EventKind {
    WorkerRecycled,
    RecycleHeld,
    OomKill,
    /// A draining worker still busy at the graceful timeout, killed.
    DrainKilled,
    /// The master SIGKILLed a worker over its evil RSS limit (no drain).
    EvilKill,
    /// A request ran past the request timeout: the master killed its worker.
    TimeoutKill,
    RetryOk,
    FetchFailed,
}

impl EventKind {
    pub const ALL: [EventKind; 8] = [
        EventKind::WorkerRecycled,
        EventKind::RecycleHeld,
        EventKind::OomKill,
        EventKind::DrainKilled,
        EventKind::EvilKill,
        EventKind::TimeoutKill,
        EventKind::RetryOk,
        EventKind::FetchFailed,
    ];

    /// The kind an `event` column names (`replay` reads them back).
    pub fn from_label(label: &str) -> Option<EventKind> {
        EventKind::ALL.into_iter().find(|k| k.label() == label)
    }

    pub fn label(self) -> &'static str {
        match self {
            EventKind::WorkerRecycled => "worker_recycled",
            EventKind::RecycleHeld => "recycle_held",
            EventKind::OomKill => "oom_kill",
            EventKind::DrainKilled => "drain_killed",
            EventKind::EvilKill => "evil_kill",
            EventKind::TimeoutKill => "timeout_kill",
            EventKind::RetryOk => "retry_ok",
            EventKind::FetchFailed => "fetch_failed",
        }
    }
}

/// The `lease` column: what the fleet lease said, by branch.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum LeaseOutcome {
    Acquired,
    Held,
    BypassedPressure,
    BypassedHardCeiling,
    /// The lease was not consulted (held earlier, no lease, not a decision).
    None,
}

impl LeaseOutcome {
    pub const ALL: [LeaseOutcome; 5] = [
        LeaseOutcome::Acquired,
        LeaseOutcome::Held,
        LeaseOutcome::BypassedPressure,
        LeaseOutcome::BypassedHardCeiling,
        LeaseOutcome::None,
    ];

    /// The outcome a `lease` column names (`replay` reads them back).
    pub fn from_label(label: &str) -> Option<LeaseOutcome> {
        LeaseOutcome::ALL.into_iter().find(|l| l.label() == label)
    }

    pub fn label(self) -> &'static str {
        match self {
            LeaseOutcome::Acquired => "acquired",
            LeaseOutcome::Held => "held",
            LeaseOutcome::BypassedPressure => "bypassed_pressure",
            LeaseOutcome::BypassedHardCeiling => "bypassed_hard_ceiling",
            LeaseOutcome::None => "none",
        }
    }
}

/// What the recorder knew about the worker at the event.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct WorkerFacts {
    pub slot: u32,
    pub generation: u32,
    pub rss_mb: f64,
    pub limit_mb: f64,
    pub requests: u64,
}

/// The `branch` column: a policy decision's label, or a kill no policy decided.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Branch {
    Decided(Decision),
    Kill(&'static str),
}

impl std::fmt::Display for Branch {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Branch::Decided(d) => d.fmt(f),
            Branch::Kill(label) => f.write_str(label),
        }
    }
}

/// The recycler's reading at a decision.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct DecisionFacts {
    pub pressure: bool,
    pub headroom_mb: f64,
    pub lease: LeaseOutcome,
    /// The branch that fired, e.g. `cooldown`, `bucket_token+lease_acquired`.
    pub branch: Branch,
    /// The trigger that made the worker ask.
    pub cause: Option<Cause>,
    /// Age of the instance's cooldown stamp at the decision.
    pub last_recycle_age_s: Option<f64>,
}

#[derive(Clone, Debug, PartialEq)]
pub struct EventRow {
    pub t: SimTime,
    pub kind: EventKind,
    pub instance: u32,
    pub worker: Option<WorkerFacts>,
    pub decision: Option<DecisionFacts>,
    /// Client events: end-to-end latency of the request.
    pub latency_ms: Option<f64>,
}

/// One row per timeline step: the state at the step's end and what
/// happened during it.
#[derive(Clone, Debug, PartialEq)]
pub struct TimelineRow {
    /// Start of the step.
    pub t: SimTime,
    pub serving: u32,
    pub booting: u32,
    pub draining: u32,
    pub backlog: u64,
    pub arrivals: u64,
    pub completions: u64,
    pub failures: u64,
    pub recycles: u64,
    /// Per instance: cgroup usage, headroom, largest worker RSS.
    pub usage_mb: Vec<f64>,
    pub headroom_mb: Vec<f64>,
    pub max_rss_mb: Vec<f64>,
    /// Memory-surge episode-seconds in the step (`fleet::surge`); `None`
    /// when surges are off, and then `timeline.csv` has no such column.
    pub surge_episode_s: Option<f64>,
}

/// One live worker at a timeline step (`workers.csv`).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct WorkerSample {
    /// Index in the fleet (instance-major), the same for every generation.
    pub index: u32,
    pub instance: u32,
    /// Index within the instance.
    pub slot: u32,
    pub generation: u32,
    pub rss_mb: f64,
    pub limit_mb: f64,
    /// Requests served so far (not in `workers.csv`; tests pair it with RSS).
    pub requests: u64,
}

/// Receives rows as the simulation produces them.
pub trait Observer {
    fn event(&mut self, _row: &EventRow) {}
    fn timeline(&mut self, _row: &TimelineRow) {}
    /// How many worker structs, from the fleet's first (instance, then slot
    /// order), to sample at each timeline step: the simulation builds
    /// samples for those only, and for none at 0 (most observers: sweeps
    /// and benchmarks pay nothing for them).
    fn workers_wanted(&self) -> usize {
        0
    }
    /// The live workers among the first `workers_wanted` structs at the end
    /// of a timeline step, at time `t`.
    fn workers(&mut self, _t: SimTime, _workers: &[WorkerSample]) {}
}

/// Discards everything (benchmarks, sweeps).
pub struct NullObserver;
impl Observer for NullObserver {}

impl<O: Observer + ?Sized> Observer for &mut O {
    fn event(&mut self, row: &EventRow) {
        (**self).event(row)
    }
    fn timeline(&mut self, row: &TimelineRow) {
        (**self).timeline(row)
    }
    fn workers_wanted(&self) -> usize {
        (**self).workers_wanted()
    }
    fn workers(&mut self, t: SimTime, workers: &[WorkerSample]) {
        (**self).workers(t, workers)
    }
}

/// Two observers fed the same rows (`fleetsim run`: the CSV files and
/// `workers.csv`).
impl<A: Observer, B: Observer> Observer for (A, B) {
    fn event(&mut self, row: &EventRow) {
        self.0.event(row);
        self.1.event(row);
    }
    fn timeline(&mut self, row: &TimelineRow) {
        self.0.timeline(row);
        self.1.timeline(row);
    }
    fn workers_wanted(&self) -> usize {
        self.0.workers_wanted().max(self.1.workers_wanted())
    }
    fn workers(&mut self, t: SimTime, workers: &[WorkerSample]) {
        self.0.workers(t, workers);
        self.1.workers(t, workers);
    }
}
