//! One palette for every chart, so a colour means the same thing wherever
//! it appears: an orange marker is a pressure bypass in the fleet timeline
//! and in its legend, a magenta one a `fetch_failed` in every chart.

use plotters::style::RGBColor;

/// A recycle that took the fleet lease (or passed every gate).
pub const ACQUIRED: RGBColor = RGBColor(0x1f, 0x77, 0xb4);
/// A recycle that bypassed a fleet gate on instance pressure.
pub const BYPASS_PRESSURE: RGBColor = RGBColor(0xff, 0x7f, 0x0e);
/// A recycle that bypassed a fleet gate on the hard ceiling; also the ceiling line.
pub const BYPASS_CEILING: RGBColor = RGBColor(0xd6, 0x27, 0x28);
/// A recycle that consulted no fleet gate (no lease configured, other triggers).
pub const UNGATED: RGBColor = RGBColor(0x17, 0xbe, 0xcf);
/// A recycle let through by a rate gate's emergency exit (token bucket,
/// window cap, capacity floor), the lease not bypassed.
pub const RATE_GATE_EXIT: RGBColor = RGBColor(0xbc, 0xbd, 0x22);
/// A bypass whose branch (pressure or ceiling) no recorded field tells.
pub const BYPASS_UNKNOWN: RGBColor = RGBColor(0x7f, 0x7f, 0x7f);
/// A `recycle_held` attempt (any gate that held it).
pub const HELD: RGBColor = RGBColor(0x94, 0x67, 0xbd);
/// A kernel OOM kill.
pub const OOM: RGBColor = RGBColor(0x00, 0x00, 0x00);
/// The master's SIGKILL over the evil RSS limit.
pub const EVIL_KILL: RGBColor = RGBColor(0x8c, 0x56, 0x4b);
/// A draining worker killed at the graceful timeout.
pub const DRAIN_KILLED: RGBColor = RGBColor(0xe3, 0x77, 0xc2);
/// The client canary: a reset whose retry succeeded.
pub const RETRY_OK: RGBColor = RGBColor(0x2c, 0xa0, 0x2c);
/// The client canary: a reset whose retry failed too.
pub const FETCH_FAILED: RGBColor = RGBColor(0xd6, 0x00, 0x6e);

/// Reference lines: base limit, policy thresholds, bins' outlines.
pub const REFERENCE: RGBColor = RGBColor(0x55, 0x55, 0x55);
/// The threshold a histogram is read against (p10, the 25 MB margin, the cooldown).
pub const THRESHOLD: RGBColor = RGBColor(0x22, 0x22, 0x22);
/// Bars on the wrong side of that threshold.
pub const BAR_ALERT: RGBColor = RGBColor(0xe8, 0x8a, 0x4f);
/// Background data: every sweep configuration, histogram bars.
pub const BACKGROUND: RGBColor = RGBColor(0xb0, 0xb0, 0xb0);
/// Histogram bars.
pub const BAR: RGBColor = RGBColor(0x6b, 0x8e, 0xae);
/// A second population's bars beside `BAR`'s (cross-instance gaps).
pub const BAR_ACROSS: RGBColor = RGBColor(0xa6, 0x76, 0x1d);
/// compare's better / worse pair, used by no other chart.
pub const BETTER: RGBColor = RGBColor(0x01, 0x66, 0x5e);
pub const WORSE: RGBColor = RGBColor(0x8c, 0x51, 0x0a);
/// The cooldown .. cooldown + tick band.
pub const BAND: RGBColor = RGBColor(0xf2, 0xc9, 0x4c);
/// Memory surge episodes, shaded behind the headroom lines.
pub const SURGE: RGBColor = RGBColor(0xf4, 0xb6, 0xc2);

/// Worker states in the capacity chart.
pub const SERVING: RGBColor = RGBColor(0xa1, 0xd9, 0x9b);
pub const DRAINING: RGBColor = RGBColor(0xfd, 0xae, 0x6b);
pub const BOOTING: RGBColor = RGBColor(0x9e, 0xca, 0xe1);

/// Saturation bars: what a gate permits, what the simulator reached, what
/// the clients absorb.
pub const PERMITTED: RGBColor = RGBColor(0x6b, 0x8e, 0xae);
pub const SIMULATED: RGBColor = BYPASS_PRESSURE;
pub const ABSORBABLE: RGBColor = RETRY_OK;

/// Optimiser phases.
pub const PHASE_SCREEN: RGBColor = RGBColor(0x7f, 0x7f, 0x7f);
pub const PHASE_SWARM: RGBColor = ACQUIRED;
pub const PHASE_POLISH: RGBColor = BYPASS_PRESSURE;

/// The base configuration of a sweep.
pub const BASE: RGBColor = BYPASS_CEILING;
/// The Pareto front and the best configurations.
pub const FRONT: RGBColor = ACQUIRED;

/// Per-instance lines (cycled), muted so event markers stay on top.
pub const INSTANCES: [RGBColor; 6] = [
    RGBColor(0x4e, 0x79, 0x5a),
    RGBColor(0x9c, 0x75, 0x5f),
    RGBColor(0x5f, 0x6f, 0xa8),
    RGBColor(0x4a, 0x9a, 0x9a),
    RGBColor(0xb0, 0x8a, 0x2e),
    RGBColor(0x70, 0x80, 0x90),
];

pub fn instance(i: usize) -> RGBColor {
    INSTANCES[i % INSTANCES.len()]
}

/// The colour of an optimiser phase by its label in trace.csv.
pub fn phase(label: &str) -> RGBColor {
    match label {
        "screen" => PHASE_SCREEN,
        "swarm" => PHASE_SWARM,
        _ => PHASE_POLISH,
    }
}

/// `#rrggbb` for HTML and CSS.
pub fn hex(c: RGBColor) -> String {
    format!("#{:02x}{:02x}{:02x}", c.0, c.1, c.2)
}
