//! Traffic: the arrival rate profile, service-time distributions and the
//! load balancer's choice of instance. The retrying client lives in the
//! event loop (`sim.rs`) because it reacts to worker exits; its pure parts
//! (the stale-connection draw) are here.

pub mod profile;
pub mod service;

pub use profile::RateProfile;
pub use service::ServiceDist;
