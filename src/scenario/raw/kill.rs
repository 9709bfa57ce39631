//! `[fleet.kill]`: the server's own kill paths (a request timeout that
//! kills its worker, and what ends a drain), raw. The mechanisms are in
//! `sim/kill.rs`; the presets cite each system's source.

use serde::{Deserialize, Serialize};

/// `[fleet.kill]`. The defaults change nothing: no request timeout, and a
/// drain ends at `fleet.graceful_timeout_s`.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq)]
#[serde(deny_unknown_fields, default)]
pub struct RawKill {
    /// A request still running this long after it started kills its worker
    /// (SIGKILL: every request in flight on it fails, the master forks a
    /// replacement): uWSGI `harakiri`, unicorn `timeout`, PHP-FPM
    /// `request_terminate_timeout`, gunicorn's sync worker under
    /// `--timeout`. 0 (the default) is off, as in uWSGI and PHP-FPM.
    pub request_timeout_s: f64,
    /// What ends a drain whose requests are still running: the graceful
    /// timeout, gunicorn's heartbeat (UvicornWorker stops notifying the
    /// arbiter once it shuts down), or uWSGI's reload mercy.
    pub drain_ends: DrainEnds,
    /// gunicorn `--timeout`: a worker silent this long is killed. Read with
    /// `drain_ends = "heartbeat"`.
    pub heartbeat_timeout_s: f64,
    /// uWSGI `worker-reload-mercy`: a worker that reloads gracefully is
    /// killed this long after it began. Read with `drain_ends = "mercy"`.
    pub mercy_s: f64,
}

impl Default for RawKill {
    fn default() -> Self {
        RawKill {
            request_timeout_s: 0.0,
            drain_ends: DrainEnds::GracefulTimeout,
            heartbeat_timeout_s: 30.0,
            mercy_s: 60.0,
        }
    }
}

/// `fleet.kill.drain_ends`: which deadline kills a drain still busy.
#[derive(Serialize, Deserialize, Clone, Copy, Debug, PartialEq, Eq)]
#[serde(rename_all = "snake_case")]
pub enum DrainEnds {
    /// `fleet.graceful_timeout_s` after the drain began (`drain_kills`).
    GracefulTimeout,
    /// The arbiter's heartbeat check: `heartbeat_timeout_s` after the
    /// worker's last notification (`heartbeat_kills`).
    Heartbeat,
    /// uWSGI's mercy: `mercy_s` after the drain began (`mercy_kills`).
    Mercy,
}
