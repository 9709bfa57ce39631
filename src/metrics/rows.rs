//! Telemetry rows: the seeds' `worker_recycled` schema plus the holds, kills
//! and client canary events, and one timeline row per step. The event loop
//! hands each row to an `Observer` as it happens (nothing is buffered).

use crate::engine::time::SimTime;
use crate::policy::Cause;

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum EventKind {
    WorkerRecycled,
    RecycleHeld,
    OomKill,
    /// A draining worker still busy at the graceful timeout, killed.
    DrainKilled,
    /// The master SIGKILLed a worker over its evil RSS limit (no drain).
    EvilKill,
    RetryOk,
    FetchFailed,
}

impl EventKind {
    pub const ALL: [EventKind; 7] = [
        EventKind::WorkerRecycled,
        EventKind::RecycleHeld,
        EventKind::OomKill,
        EventKind::DrainKilled,
        EventKind::EvilKill,
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

/// The recycler's reading at a decision.
#[derive(Clone, Debug, PartialEq)]
pub struct DecisionFacts {
    pub pressure: bool,
    pub headroom_mb: f64,
    pub lease: LeaseOutcome,
    /// The branch that fired, e.g. `cooldown`, `bucket_token+lease_acquired`.
    pub branch: String,
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
}

/// Receives rows as the simulation produces them.
pub trait Observer {
    fn event(&mut self, _row: &EventRow) {}
    fn timeline(&mut self, _row: &TimelineRow) {}
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
}
