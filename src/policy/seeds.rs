//! The seeds' decision core, reproduced gate for gate (DOMAIN.md, "The
//! recycler"):
//!
//! ```text
//! pressure = headroom_mb < min_headroom_mb
//! effective_cooldown = pressure_cooldown_s if pressure else cooldown_s
//! if last_recycle_age_s < effective_cooldown: hold        # before the ceiling check
//! if not pressure and rps > busy_rps and over_limit_age_s < defer_max_s
//!    and rss < hard_limit_mb: defer                        # the ceiling skips only this
//! lease = try_acquire(ttl)
//! if not lease: allow only if pressure or rss >= hard_limit_mb
//! ```
//!
//! Every outcome names its branch: the seeds lost a day to one label that
//! covered two bypasses.

/// Everything the decision reads, measured at one RSS sample.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct RecycleView {
    pub rss_mb: f64,
    pub hard_limit_mb: f64,
    /// Instance-wide: container limit minus cgroup usage.
    pub headroom_mb: f64,
    /// Age of the instance's cooldown stamp; `None` before its first recycle.
    pub last_recycle_age_s: Option<f64>,
    /// Instance arrival rate over the trailing busy window.
    pub instance_rps: f64,
    /// Time since a sample first found this worker over its limit.
    pub over_limit_age_s: f64,
    /// Whether the fleet lease could be taken now.
    pub lease_free: bool,
}

/// Why a recycle that was asked for did not happen (yet).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Hold {
    /// Inside the normal cooldown.
    Cooldown,
    /// Inside the (shorter) pressure cooldown.
    CooldownPressure,
    /// The instance is busy and the worker has not waited `defer_max_s`.
    BusyDeferral,
    /// Another worker holds the fleet lease and no exit applies.
    LeaseHeld,
}

/// Which branch let a recycle through.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Allow {
    /// Took the fleet lease.
    LeaseAcquired,
    /// The lease was held; the instance was under pressure.
    BypassPressure,
    /// The lease was held; RSS was at or over the hard ceiling.
    BypassHardCeiling,
    /// No lease is configured.
    NoLease,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Decision {
    Recycle(Allow),
    Hold(Hold),
}

impl Hold {
    pub fn label(self) -> &'static str {
        match self {
            Hold::Cooldown => "cooldown",
            Hold::CooldownPressure => "cooldown_pressure",
            Hold::BusyDeferral => "busy_deferral",
            Hold::LeaseHeld => "lease_held",
        }
    }
}

impl Allow {
    pub fn label(self) -> &'static str {
        match self {
            Allow::LeaseAcquired => "lease_acquired",
            Allow::BypassPressure => "bypass_pressure",
            Allow::BypassHardCeiling => "bypass_hard_ceiling",
            Allow::NoLease => "no_lease",
        }
    }
}

/// The recycler as deployed in the seeds.
#[derive(Clone, Debug, PartialEq)]
pub struct SeedsRecycler {
    pub cooldown_s: f64,
    pub pressure_cooldown_s: f64,
    pub min_headroom_mb: f64,
    pub busy_rps: f64,
    pub defer_max_s: f64,
    pub lease_enabled: bool,
}

impl SeedsRecycler {
    pub fn pressure(&self, v: &RecycleView) -> bool {
        v.headroom_mb < self.min_headroom_mb
    }

    /// The decision for one worker found over its limit.
    pub fn decide(&self, v: &RecycleView) -> Decision {
        let pressure = self.pressure(v);
        if let Some(hold) = self.cooldown_gate(v, pressure) {
            return Decision::Hold(hold);
        }
        if self.busy_deferral(v, pressure) {
            return Decision::Hold(Hold::BusyDeferral);
        }
        self.lease_gate(v, pressure)
    }

    /// The per-instance cooldown; it runs before any ceiling check.
    fn cooldown_gate(&self, v: &RecycleView, pressure: bool) -> Option<Hold> {
        let age = v.last_recycle_age_s?;
        if pressure && age < self.pressure_cooldown_s {
            Some(Hold::CooldownPressure)
        } else if !pressure && age < self.cooldown_s {
            Some(Hold::Cooldown)
        } else {
            None
        }
    }

    /// Busy deferral: the only gate the hard ceiling skips on its own.
    fn busy_deferral(&self, v: &RecycleView, pressure: bool) -> bool {
        !pressure
            && v.instance_rps > self.busy_rps
            && v.over_limit_age_s < self.defer_max_s
            && v.rss_mb < v.hard_limit_mb
    }

    /// The fleet lease with its two emergency exits, pressure first.
    fn lease_gate(&self, v: &RecycleView, pressure: bool) -> Decision {
        if !self.lease_enabled {
            Decision::Recycle(Allow::NoLease)
        } else if v.lease_free {
            Decision::Recycle(Allow::LeaseAcquired)
        } else if pressure {
            Decision::Recycle(Allow::BypassPressure)
        } else if v.rss_mb >= v.hard_limit_mb {
            Decision::Recycle(Allow::BypassHardCeiling)
        } else {
            Decision::Hold(Hold::LeaseHeld)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn seeds() -> SeedsRecycler {
        SeedsRecycler {
            cooldown_s: 120.0,
            pressure_cooldown_s: 30.0,
            min_headroom_mb: 350.0,
            busy_rps: 5.0,
            defer_max_s: 60.0,
            lease_enabled: true,
        }
    }

    fn view() -> RecycleView {
        RecycleView {
            rss_mb: 520.0,
            hard_limit_mb: 650.0,
            headroom_mb: 800.0,
            last_recycle_age_s: None,
            instance_rps: 1.0,
            over_limit_age_s: 0.0,
            lease_free: true,
        }
    }

    /// Table of (what changes, expected decision): each row one branch.
    #[test]
    fn every_branch_is_named() {
        use Decision::{Hold as H, Recycle};
        let p = seeds();
        let cases: Vec<(&str, RecycleView, Decision)> = vec![
            ("free lease", view(), Recycle(Allow::LeaseAcquired)),
            (
                "cooldown",
                RecycleView {
                    last_recycle_age_s: Some(119.9),
                    ..view()
                },
                H(Hold::Cooldown),
            ),
            (
                "cooldown holds past the hard ceiling",
                RecycleView {
                    last_recycle_age_s: Some(100.0),
                    rss_mb: 710.0,
                    ..view()
                },
                H(Hold::Cooldown),
            ),
            (
                "pressure shortens the cooldown",
                RecycleView {
                    last_recycle_age_s: Some(31.0),
                    headroom_mb: 251.0,
                    ..view()
                },
                Recycle(Allow::LeaseAcquired),
            ),
            (
                "pressure cooldown",
                RecycleView {
                    last_recycle_age_s: Some(29.0),
                    headroom_mb: 251.0,
                    ..view()
                },
                H(Hold::CooldownPressure),
            ),
            (
                "busy deferral",
                RecycleView {
                    instance_rps: 6.0,
                    over_limit_age_s: 10.0,
                    ..view()
                },
                H(Hold::BusyDeferral),
            ),
            (
                "busy deferral expires",
                RecycleView {
                    instance_rps: 6.0,
                    over_limit_age_s: 60.0,
                    ..view()
                },
                Recycle(Allow::LeaseAcquired),
            ),
            (
                "the ceiling skips busy deferral",
                RecycleView {
                    instance_rps: 6.0,
                    rss_mb: 650.0,
                    ..view()
                },
                Recycle(Allow::LeaseAcquired),
            ),
            (
                "lease held",
                RecycleView {
                    lease_free: false,
                    ..view()
                },
                H(Hold::LeaseHeld),
            ),
            (
                "pressure bypass",
                RecycleView {
                    lease_free: false,
                    headroom_mb: 300.0,
                    ..view()
                },
                Recycle(Allow::BypassPressure),
            ),
            (
                "ceiling bypass",
                RecycleView {
                    lease_free: false,
                    rss_mb: 650.0,
                    ..view()
                },
                Recycle(Allow::BypassHardCeiling),
            ),
            (
                "both exits: pressure is checked first",
                RecycleView {
                    lease_free: false,
                    rss_mb: 700.0,
                    headroom_mb: 200.0,
                    ..view()
                },
                Recycle(Allow::BypassPressure),
            ),
        ];
        for (name, v, want) in cases {
            assert_eq!(p.decide(&v), want, "{name}");
        }
        let no_lease = SeedsRecycler {
            lease_enabled: false,
            ..seeds()
        };
        assert_eq!(
            no_lease.decide(&RecycleView {
                lease_free: false,
                ..view()
            }),
            Recycle(Allow::NoLease)
        );
    }
}
