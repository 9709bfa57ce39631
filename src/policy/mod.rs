//! Recycle policies: pure functions from a view of one worker and its
//! instance to a decision that names the branch that fired. The event loop
//! builds the view, asks, and applies the answer (drain, hold, take the
//! lease). Nothing here mutates state or draws random numbers.

pub mod seeds;

pub use seeds::{Allow, Decision, Hold, RecycleView, SeedsRecycler};
