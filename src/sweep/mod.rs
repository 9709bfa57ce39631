//! Parameter sweeps: a space of configurations over dotted scenario keys,
//! sampled by grid, random, Latin hypercube or Sobol; replications with
//! common random numbers; objectives and constraints over summary metrics;
//! honest statistics (confidence intervals, paired differences against the
//! base); Pareto fronts. Trials run in parallel but results never depend on
//! thread count, order or sharding: every number derives from (master seed,
//! configuration index, replication).

pub mod aggregate;
pub mod csvio;
pub mod manifest;
pub mod optimise;
pub mod runner;
pub mod space;
pub mod spec;
pub mod stats;

pub use aggregate::{Aggregate, ConfigResult};
pub use space::{Sweep, validate};
pub use spec::RawSweep;

use crate::engine::rng::mix64;

/// The seed of replication `r`: the same for every configuration (common
/// random numbers), independent of thread, order and shard.
pub fn replication_seed(master: u64, r: u64) -> u64 {
    mix64(master ^ mix64(r.wrapping_add(0x243F_6A88_85A3_08D3)))
}

/// Trial index layout: configuration-major, so a configuration's
/// replications are neighbours. Configuration 0 is the base scenario.
pub fn trial_index(config: u64, replication: u64, replications: u64) -> u64 {
    config * replications + replication
}
