//! How a recycle got through: the path its marker's colour encodes, and the
//! trigger its shape encodes. The lease's outcome is replay's own
//! classification (`replay::analyse::bypass::classify`: the `pressure`
//! flag first, then the `lease` and `branch` labels, never a threshold
//! re-derived from `rss_mb`), so a chart never contradicts analysis.json:
//! the seeds' `lease=bypassed_hard_ceiling` row with `pressure=true` is a
//! pressure exit in both. A rate gate's exit (`bucket_bypass_*`,
//! `window_bypass_*`, `floor_bypass_*` in `branch`), which the lease
//! analysis does not see, is told apart only when the lease did not exit.

use crate::replay::analyse::bypass::{Class, classify};
use crate::replay::import::fields::parse_bool;
use crate::replay::recording::{Event as ReplayEvent, Kind, Lease, Origin};

/// The path through the fleet gates, as the charts colour it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum LeaseClass {
    /// The lease acquired, or every fleet gate open.
    Acquired,
    /// The lease's exit on instance pressure (by the `pressure` flag).
    BypassPressure,
    /// The lease's exit on the hard ceiling.
    BypassCeiling,
    /// A rate gate's emergency exit (token bucket, window cap, capacity floor).
    RateGateExit,
    /// A bypass whose branch no field tells.
    BypassUnknown,
    /// No fleet gate consulted (`none`, `ungated`), or nothing recorded.
    Ungated,
}

/// What a rate gate's exit token looks like in `branch`.
const RATE_EXITS: [&str; 3] = ["bucket_bypass_", "window_bypass_", "floor_bypass_"];
/// A rate gate passed open.
const RATE_OPEN: [&str; 3] = ["bucket_token", "window_ok", "floor_ok"];

fn tokens(branch: &str) -> impl Iterator<Item = &str> {
    branch.split('+').map(str::trim)
}

impl LeaseClass {
    /// The path of a recycle row from its `lease`, `branch` and `pressure`
    /// cells (empty = not recorded). A `pressure` cell that is no boolean
    /// counts as not recorded (replay refuses the file; the report draws it).
    pub fn of(lease: &str, branch: &str, pressure: &str) -> LeaseClass {
        let mut e = ReplayEvent::new(0.0, Kind::from_label("worker_recycled"), Origin::default());
        let (lease, branch) = (lease.trim(), branch.trim());
        e.lease = (!lease.is_empty()).then(|| Lease::from_label(lease));
        e.branch = (!branch.is_empty()).then(|| branch.to_string());
        e.pressure = parse_bool(pressure.trim());
        LeaseClass::from_analysis(classify(&e), branch)
    }

    /// The path for replay's lease class, refined by the rate gates in `branch`.
    pub fn from_analysis(class: Class, branch: &str) -> LeaseClass {
        let rate_exit = tokens(branch).any(|t| RATE_EXITS.iter().any(|p| t.starts_with(p)));
        let rate_open = tokens(branch).any(|t| RATE_OPEN.contains(&t));
        match class {
            Class::ExitPressure => LeaseClass::BypassPressure,
            Class::ExitHardCeiling => LeaseClass::BypassCeiling,
            Class::ExitUnknown => LeaseClass::BypassUnknown,
            _ if rate_exit => LeaseClass::RateGateExit,
            Class::Acquired => LeaseClass::Acquired,
            Class::NotRecorded if rate_open => LeaseClass::Acquired,
            Class::NotRecorded => LeaseClass::Ungated,
        }
    }

    /// Replay's lease class this path draws (what analysis.json counts).
    /// A rate gate's exit and an open rate gate are `NotRecorded` or
    /// `Acquired` there, as the lease saw them: `lease_acquired` in the
    /// branch tells which.
    pub fn analysis(self, branch: &str) -> Class {
        let acquired = tokens(branch).any(|t| t == "lease_acquired");
        match self {
            LeaseClass::BypassPressure => Class::ExitPressure,
            LeaseClass::BypassCeiling => Class::ExitHardCeiling,
            LeaseClass::BypassUnknown => Class::ExitUnknown,
            LeaseClass::Acquired | LeaseClass::RateGateExit | LeaseClass::Ungated if acquired => {
                Class::Acquired
            }
            _ => Class::NotRecorded,
        }
    }

    pub fn label(self) -> &'static str {
        match self {
            LeaseClass::Acquired => "lease acquired / gate open",
            LeaseClass::BypassPressure => "lease exit: pressure",
            LeaseClass::BypassCeiling => "lease exit: hard ceiling",
            LeaseClass::RateGateExit => "rate-gate exit",
            LeaseClass::BypassUnknown => "bypass, branch unrecorded",
            LeaseClass::Ungated => "no fleet gate",
        }
    }
}

/// What made a worker ask, as the marker's shape draws it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Trigger {
    /// `rss_limit`, or no trigger recorded (the seeds' recycler has only it).
    Rss,
    MaxRequests,
    Lifetime,
    /// Leakless drift, instance memory, evil RSS, rolling restarts...
    Other,
}

impl Trigger {
    pub fn of(label: &str) -> Trigger {
        match label.trim() {
            "" | "rss_limit" => Trigger::Rss,
            "max_requests" => Trigger::MaxRequests,
            "lifetime" => Trigger::Lifetime,
            _ => Trigger::Other,
        }
    }

    pub fn label(self) -> &'static str {
        match self {
            Trigger::Rss => "trigger rss_limit (or none recorded)",
            Trigger::MaxRequests => "trigger max_requests",
            Trigger::Lifetime => "trigger lifetime",
            Trigger::Other => "trigger drift / memory / other",
        }
    }

    pub const ALL: [Trigger; 4] = [
        Trigger::Rss,
        Trigger::MaxRequests,
        Trigger::Lifetime,
        Trigger::Other,
    ];
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn recycles_classified_as_replay_does() {
        let c = LeaseClass::of;
        assert_eq!(
            c("acquired", "lease_acquired", "false"),
            LeaseClass::Acquired
        );
        assert_eq!(
            c("bypassed_pressure", "bypass_pressure", "true"),
            LeaseClass::BypassPressure
        );
        assert_eq!(
            c(
                "bypassed_hard_ceiling",
                "bucket_token+bypass_hard_ceiling",
                "false"
            ),
            LeaseClass::BypassCeiling
        );
        // The seeds' trap: one label for two branches, the flag decides.
        assert_eq!(
            c("bypassed_hard_ceiling", "bypass_pressure", "true"),
            LeaseClass::BypassPressure
        );
        assert_eq!(
            c("bypassed_hard_ceiling", "", ""),
            LeaseClass::BypassCeiling
        );
        assert_eq!(c("bypassed", "", ""), LeaseClass::BypassUnknown);
        assert_eq!(
            c("acquired", "bucket_bypass_pressure+lease_acquired", "true"),
            LeaseClass::RateGateExit
        );
        assert_eq!(
            c("none", "window_bypass_hard_ceiling", "false"),
            LeaseClass::RateGateExit
        );
        assert_eq!(c("none", "bucket_token", "false"), LeaseClass::Acquired);
        assert_eq!(c("none", "ungated", "false"), LeaseClass::Ungated);
        assert_eq!(c("", "", ""), LeaseClass::Ungated);
    }

    #[test]
    fn the_path_maps_back_to_the_analysis_class() {
        for (lease, branch, p) in [
            ("acquired", "lease_acquired", "false"),
            ("bypassed_hard_ceiling", "bypass_pressure", "true"),
            ("bypassed_hard_ceiling", "bypass_hard_ceiling", "false"),
            ("acquired", "bucket_bypass_pressure+lease_acquired", "true"),
            ("none", "bucket_token", "false"),
            ("none", "ungated", ""),
            ("bypassed", "", ""),
        ] {
            let mut e =
                ReplayEvent::new(0.0, Kind::from_label("worker_recycled"), Origin::default());
            e.lease = Some(Lease::from_label(lease));
            e.branch = (!branch.is_empty()).then(|| branch.to_string());
            e.pressure = parse_bool(p);
            assert_eq!(
                LeaseClass::of(lease, branch, p).analysis(branch),
                classify(&e),
                "{lease} {branch} {p}"
            );
        }
    }

    #[test]
    fn triggers_by_label() {
        assert_eq!(Trigger::of(""), Trigger::Rss);
        assert_eq!(Trigger::of("max_requests"), Trigger::MaxRequests);
        assert_eq!(Trigger::of("lifetime"), Trigger::Lifetime);
        assert_eq!(Trigger::of("drift"), Trigger::Other);
    }
}
