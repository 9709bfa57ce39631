//! fleetsim: a deterministic discrete-event simulator of worker recycling in
//! pre-fork web fleets. The library is the pure core: no files, no wall
//! clock, no threads, no printing. See ARCHITECTURE.md for the map.

pub mod coord;
pub mod engine;
pub mod fleet;
pub mod metrics;
pub mod policy;
pub mod replay;
pub mod report;
pub mod scenario;
pub mod sim;
pub mod sweep;
pub mod text;
pub mod traffic;
pub mod whatif;

pub use scenario::Scenario;
pub use sim::{Sim, SimError, SimOutput, run_summary};
