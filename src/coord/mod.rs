//! Fleet coordination primitives: state shared by every instance (in
//! production a Redis/valkey key or similar). Each primitive answers a
//! question purely from its state and `now`; the event loop applies the
//! answer.

pub mod lease;

pub use lease::Lease;
