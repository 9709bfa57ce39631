//! Fleet coordination primitives: state shared by every instance (in
//! production a Redis/valkey key or similar). Each primitive answers a
//! question purely from its state and `now`; the event loop applies the
//! answer. The capacity floor needs no state of its own: it reads the
//! fleet's serving count.

pub mod bucket;
pub mod lease;
pub mod window;

pub use bucket::TokenBucket;
pub use lease::Lease;
pub use window::WindowCap;
