//! Recycle policies as composable parts, each a pure function that names
//! the branch it took:
//!
//! - **triggers** (`trigger.rs`): what makes a worker want to go (RSS over
//!   its jittered limit, drift over its own baseline, request count,
//!   lifetime, instance memory, the master's hard RSS kill);
//! - **gates** (`gate.rs`): what may hold it (cooldown, busy deferral, fleet
//!   lease, token bucket, trailing-window cap, capacity floor), each with the
//!   same configurable emergency exits (pressure, hard ceiling);
//! - **escalations**: the pressure cooldown, the ceiling-overshoot
//!   escalation (a cooldown option) and adaptive sampling (`sampling.rs`).
//!
//! The event loop builds a `View`, asks `Pipeline::decide`, and applies the
//! answer (take the lease, spend a token, drain). Nothing here mutates state
//! or draws random numbers.

pub mod gate;
pub mod sampling;
pub mod trigger;

pub use gate::{Decision, Exits, Gate, GateKind, Hold, Pass, Passes, Pipeline, Verdict, View};
pub use sampling::Sampling;
pub use trigger::{Cause, Triggers};
