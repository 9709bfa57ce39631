//! A capacity floor (the seeds' fix 3, a PodDisruptionBudget's
//! `minAvailable`): refuse while fleet serving workers would drop below
//! `min_serving`. It reads the fleet's serving count: no state of its own.

use super::*;
use crate::policy::Replacement;

#[derive(Clone, Debug, PartialEq)]
pub struct CapacityFloor {
    pub min_serving: u32,
    pub exits: Exits,
}

pub const HOLD: Hold = Hold::new(GateKind::CapacityFloor, 0);

impl Rule for CapacityFloor {
    const NAME: &'static str = "capacity_floor";
    const HOLDS: &'static [&'static str] = &["below_floor"];
    const COUNTED: &'static [(Pass, &'static str)] = &[
        (Pass::ExitPressure, "floor_bypass_pressure"),
        (Pass::ExitHardCeiling, "floor_bypass_hard_ceiling"),
    ];
    type State = ();

    fn state(&self) {}

    fn says(&self, v: &View, _: bool, _: &mut ()) -> Says {
        open_if(v.serving_after >= self.min_serving, HOLD)
    }

    fn exits(&self) -> Exits {
        self.exits
    }

    fn pass_label(p: Pass) -> Option<&'static str> {
        Some(match p {
            Pass::Open => "floor_ok",
            Pass::ExitPressure => "floor_bypass_pressure",
            Pass::ExitHardCeiling => "floor_bypass_hard_ceiling",
        })
    }

    fn ceiling(&self, sc: &Scenario) -> Figures {
        let out = (sc.fleet.workers() as f64 - self.min_serving as f64).max(0.0);
        if sc.policy.replacement == Replacement::SpawnThenExit {
            return (
                None,
                None,
                "spawn-then-exit never drops serving workers below the fleet: no bound".into(),
            );
        }
        // Each recycle keeps a slot out of service for at least drain +
        // boot; take the mean service time as the drain.
        let away_s = sc.fleet.boot.as_secs_f64() + sc.workload.service.mean_us() / 1e6;
        (
            Some(out * 3600.0 / away_s),
            None,
            format!(
                "{out} workers may be out at once, each for boot + drain ~ {away_s:.2} s: \
                 {out} x 3600 / {away_s:.2}"
            ),
        )
    }

    fn from_raw(p: &RawPolicy) -> Result<Option<Self>, Invalid> {
        let c = &p.capacity_floor;
        Ok(c.enabled.then_some(CapacityFloor {
            min_serving: c.min_serving_workers,
            exits: Exits {
                pressure: c.exit_on_pressure,
                hard_ceiling: c.exit_on_hard_ceiling,
            },
        }))
    }
}
