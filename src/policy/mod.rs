//! Recycle policies as composable parts, each a pure function that names
//! the branch it took:
//!
//! - **triggers** (`trigger.rs`): what makes a worker want to go (RSS over
//!   its jittered limit, drift over its own baseline, request count,
//!   lifetime, instance memory, the master's hard RSS kill);
//! - **gates** (`gates/`, one file each): what may hold it (cooldown, busy deferral, fleet
//!   lease, token bucket, trailing-window cap, capacity floor), each with the
//!   same configurable emergency exits (pressure, hard ceiling);
//! - **escalations**: the pressure cooldown, the ceiling-overshoot
//!   escalation (a cooldown option) and adaptive sampling (`sampling.rs`).
//!
//! The event loop builds a `View`, asks `Pipeline::decide`, and applies the
//! answer (take the lease, spend a token, drain). Nothing here mutates state
//! or draws random numbers.

pub mod decision;
pub mod gates;
pub mod replace;
pub mod sampling;
pub mod trigger;

pub use gates::{
    Decision, Exits, Gate, GateKind, Hold, Pass, Passes, Pipeline, States, Verdict, View,
};
pub use sampling::{SampleClock, Sampling};

/// How capacity is handed over when a worker recycles.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Replacement {
    /// The old worker drains and exits, then the master forks its
    /// replacement (gunicorn, uWSGI): the slot is empty for drain + boot.
    ExitThenSpawn,
    /// The replacement boots first and the old worker drains once it is
    /// ready (Kubernetes `maxSurge`): capacity holds, but both processes
    /// cost memory meanwhile.
    SpawnThenExit,
    /// Passenger: the old process is detached from routing at once (it
    /// finishes what it has, takes nothing new) and its replacement is
    /// spawned beside it; requests wait in Passenger's proxy queue, at most
    /// `max_request_queue` of them (`usize::MAX`: unbounded), then 503.
    DetachAndSpawn { max_request_queue: usize },
    /// Granian: one handover at a time per server: spawn the new worker,
    /// wait `respawn_interval` (not its readiness), terminate the old one,
    /// wait for it to exit, then the next worker that asked.
    TimedHandover {
        respawn_interval: crate::engine::SimTime,
    },
}

impl Replacement {
    /// Whether a successor is forked before its predecessor has exited
    /// (the instance keeps a spare worker struct per worker for it).
    pub fn spawns_first(self) -> bool {
        self != Replacement::ExitThenSpawn
    }
}
pub use trigger::{Cause, Triggers};
