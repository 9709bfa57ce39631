//! The fleet lease (the seeds' valkey `SET NX EX 120`): one holder at a
//! time, held for its whole TTL, so it spaces recycles that take it by the
//! TTL; with its two emergency exits, pressure and the hard ceiling.

use super::*;
use crate::coord;
use crate::scenario::checks::{duration, positive};

#[derive(Clone, Debug, PartialEq)]
pub struct Lease {
    pub ttl: SimTime,
    pub exits: Exits,
}

pub const HOLD: Hold = Hold::new(GateKind::Lease, 0);

impl Rule for Lease {
    const NAME: &'static str = "lease";
    const HOLDS: &'static [&'static str] = &["lease_held"];
    // The seeds' labels: the lease counts its acquisitions too.
    const COUNTED: &'static [(Pass, &'static str)] = &[
        (Pass::Open, "lease_acquired"),
        (Pass::ExitPressure, "lease_bypass_pressure"),
        (Pass::ExitHardCeiling, "lease_bypass_hard_ceiling"),
    ];
    type State = coord::Lease;

    fn state(&self) -> coord::Lease {
        coord::Lease::default()
    }

    fn says(&self, v: &View, _: bool, s: &mut coord::Lease) -> Says {
        open_if(s.is_free(v.now), HOLD)
    }

    fn exits(&self) -> Exits {
        self.exits
    }

    fn grant(&self, pass: Pass, s: &mut coord::Lease, now: SimTime, worker: u32) {
        if pass == Pass::Open {
            assert!(
                s.try_acquire(now, self.ttl, worker),
                "the policy saw a free lease"
            );
        }
    }

    fn holder(s: &coord::Lease, now: SimTime) -> Option<u32> {
        s.holder(now)
    }

    /// The seeds' labels (no `lease_` prefix on the bypasses).
    fn pass_label(p: Pass) -> Option<&'static str> {
        Some(match p {
            Pass::Open => "lease_acquired",
            Pass::ExitPressure => "bypass_pressure",
            Pass::ExitHardCeiling => "bypass_hard_ceiling",
        })
    }

    fn ceiling(&self, _: &Scenario) -> Figures {
        let ttl = self.ttl.as_secs_f64();
        (
            Some(3600.0 / ttl),
            None,
            format!("one holder per {ttl} s TTL, fleet-wide: 3600 / {ttl}"),
        )
    }

    fn from_raw(p: &RawPolicy) -> Result<Option<Self>, Invalid> {
        let l = &p.lease;
        if !l.enabled {
            return Ok(None);
        }
        positive("policy.lease.ttl_s", l.ttl_s)?;
        Ok(Some(Lease {
            ttl: duration("policy.lease.ttl_s", l.ttl_s)?,
            exits: Exits {
                pressure: l.exit_on_pressure,
                hard_ceiling: l.exit_on_hard_ceiling,
            },
        }))
    }
}
