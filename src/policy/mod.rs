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
    /// ready (Passenger rolling restarts, Granian, Kubernetes `maxSurge`):
    /// capacity holds, but both processes cost memory meanwhile.
    SpawnThenExit,
}
pub use trigger::{Cause, Triggers};
