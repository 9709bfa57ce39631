//! The replacement modes' tables, raw: Passenger's proxy queue, Granian's
//! timed handover, puma_worker_killer's rolling restart, uWSGI's fork-bomb
//! delay (`[policy.*]`) and the cold-start penalty (`[fleet.cold_start]`).
//! Each is off (or unused) by default, so a scenario that names none of
//! them runs as before.

use serde::{Deserialize, Serialize};

/// `[policy.detach_and_spawn]`: read with `replacement = "detach_and_spawn"`.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq)]
#[serde(deny_unknown_fields, default)]
pub struct RawDetach {
    /// Passenger's `max_request_queue_size`: requests waiting in the
    /// proxy for a process; one more is answered 503. 0 = unbounded.
    /// Default 100 (`src/cxx_supportlib/Constants.h:61`).
    pub max_request_queue_size: u64,
}

impl Default for RawDetach {
    fn default() -> Self {
        RawDetach {
            max_request_queue_size: 100,
        }
    }
}

/// `[policy.timed_handover]`: read with `replacement = "timed_handover"`.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq)]
#[serde(deny_unknown_fields, default)]
pub struct RawTimedHandover {
    /// Granian's `respawn_interval`: from spawning the new worker to
    /// terminating the old one, whether or not the new one is ready.
    /// Default 3.5 s (`granian/server/common.py:126`).
    pub respawn_interval_s: f64,
}

impl Default for RawTimedHandover {
    fn default() -> Self {
        RawTimedHandover {
            respawn_interval_s: 3.5,
        }
    }
}

/// `[policy.rolling_restart]`: puma_worker_killer's rolling restart, one
/// clock per master.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq)]
#[serde(deny_unknown_fields, default)]
pub struct RawRollingRestart {
    pub enabled: bool,
    /// `rolling_restart_frequency`: 6 h (`lib/puma_worker_killer.rb:15`).
    pub frequency_s: f64,
    /// `rolling_restart_splay_seconds`: a uniform draw in [0, splay),
    /// added to the frequency once per master boot (`:16`, `:38`).
    pub splay_s: f64,
    /// `seconds_between_worker_kill`: 60 s (`rolling_restart.rb:15`).
    pub interval_s: f64,
}

impl Default for RawRollingRestart {
    fn default() -> Self {
        RawRollingRestart {
            enabled: false,
            frequency_s: 21600.0,
            splay_s: 300.0,
            interval_s: 60.0,
        }
    }
}

/// `[policy.forkbomb]`: uWSGI's guard against respawn storms.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq)]
#[serde(deny_unknown_fields, default)]
pub struct RawForkBomb {
    pub enabled: bool,
    /// `forkbomb-delay`: how long the master sleeps, 2 s (`core/init.c:120`).
    pub delay_s: f64,
    /// `check-interval`: respawns count as one burst while each comes
    /// within this many whole seconds of the last, 1 (`core/master.c:349`).
    pub check_interval_s: u64,
}

impl Default for RawForkBomb {
    fn default() -> Self {
        RawForkBomb {
            enabled: false,
            delay_s: 2.0,
            check_interval_s: 1,
        }
    }
}

/// `[fleet.cold_start]`: a replacement's first requests are slower than a
/// warm worker's (caches, JIT, lazy imports). Off with `factor = 1`.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq)]
#[serde(deny_unknown_fields, default)]
pub struct RawColdStart {
    /// Service-time multiplier while cold (1 = off).
    pub factor: f64,
    /// A replacement is cold for its first this many requests...
    pub requests: u64,
    /// ...or this long after it starts serving, whichever ends later
    /// (0 and 0: never cold).
    pub duration_s: f64,
}

impl Default for RawColdStart {
    fn default() -> Self {
        RawColdStart {
            factor: 1.0,
            requests: 0,
            duration_s: 0.0,
        }
    }
}
