//! The replacement modes' figures in summary.json (`sim/replace/`): each
//! is `None`, and absent from the file, unless its mode is on, so a run
//! without them writes the same bytes as before.

use serde::Serialize;

#[derive(Serialize, Clone, Copy, Debug, Default, PartialEq)]
pub struct ReplacementTotals {
    /// Passenger: requests answered 503 by a full proxy queue.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub proxy_queue_503: Option<u64>,
    /// Passenger: replacements spawned beside a detached process.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub detached_spawns: Option<u64>,
    /// Granian: handovers started.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub handovers: Option<u64>,
    /// Granian: handovers that waited for another to finish.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub handovers_waited: Option<u64>,
    /// Granian: the longest such wait.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub handover_wait_s_max: Option<f64>,
    /// puma_worker_killer: rolling-restart cycles begun.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub rolling_restart_cycles: Option<u64>,
    /// puma_worker_killer: TERMs those cycles sent.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub rolling_restart_terms: Option<u64>,
    /// uWSGI: times a master slept on a respawn burst.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub forkbomb_sleeps: Option<u64>,
    /// uWSGI: respawns those sleeps held back.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub forkbomb_delayed_respawns: Option<u64>,
    /// Requests served by a cold replacement.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cold_start_requests: Option<u64>,
}
