//! The engine: integer simulated time, a deterministic event queue and
//! seeded random-number streams. Nothing here knows about fleets.
//!
//! Why integer time: floating-point clocks make tie order depend on rounding,
//! and ties decide which of two simultaneous events runs first. With integer
//! microseconds and a `(time, seq)` key, equal inputs give equal orders.

pub mod queue;
pub mod rng;
pub mod time;

pub use queue::EventQueue;
pub use rng::{Stream, StreamRng};
pub use time::SimTime;
