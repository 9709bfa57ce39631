//! The per-instance cooldown: a stamp set at every recycle of the instance;
//! a worker asking within `cooldown_s` of it is held, before any ceiling
//! check (the seeds). Under pressure the shorter `pressure_cooldown_s`
//! applies; with `escalate_on_ceiling` (the seeds' fix 1) so it does for
//! a worker at or over the hard ceiling.

use super::*;
use crate::scenario::checks::{duration, finite};

#[derive(Clone, Debug, PartialEq)]
pub struct Cooldown {
    pub cooldown_s: f64,
    pub pressure_cooldown_s: f64,
    pub escalate_on_ceiling: bool,
}

pub const HOLD: Hold = Hold::new(GateKind::Cooldown, 0);
pub const HOLD_PRESSURE: Hold = Hold::new(GateKind::Cooldown, 1);
/// Inside the pressure cooldown that the ceiling escalation applies.
pub const HOLD_CEILING: Hold = Hold::new(GateKind::Cooldown, 2);

impl Rule for Cooldown {
    const NAME: &'static str = "cooldown";
    const HOLDS: &'static [&'static str] = &["cooldown", "cooldown_pressure", "cooldown_ceiling"];
    const COUNTED: &'static [(Pass, &'static str)] = &[];
    type State = ();

    fn state(&self) {}

    fn says(&self, v: &View, pressure: bool, _: &mut ()) -> Says {
        let Some(age) = v.last_recycle_age_s else {
            return Says::Open;
        };
        let (limit, hold) = if pressure {
            (self.pressure_cooldown_s, HOLD_PRESSURE)
        } else if self.escalate_on_ceiling && v.at_ceiling() {
            (self.pressure_cooldown_s, HOLD_CEILING)
        } else {
            (self.cooldown_s, HOLD)
        };
        open_if(age >= limit, hold)
    }

    fn pass_label(_: Pass) -> Option<&'static str> {
        None
    }

    fn ceiling(&self, sc: &Scenario) -> Figures {
        let instances = sc.fleet.instances as f64;
        let per = |s: f64| (s > 0.0).then(|| 3600.0 / s * instances);
        let (c, p) = (self.cooldown_s, self.pressure_cooldown_s);
        (
            per(c),
            per(p),
            format!(
                "per-instance stamp: {instances} instances x 3600 / {c} s \
                 (x 3600 / {p} s under pressure)"
            ),
        )
    }

    /// Always on (0 s = no hold).
    fn from_raw(p: &RawPolicy) -> Result<Option<Self>, Invalid> {
        duration("policy.cooldown_s", p.cooldown_s)?;
        duration("policy.pressure_cooldown_s", p.pressure_cooldown_s)?;
        finite("policy.min_headroom_mb", p.min_headroom_mb)?;
        Ok(Some(Cooldown {
            cooldown_s: p.cooldown_s,
            pressure_cooldown_s: p.pressure_cooldown_s,
            escalate_on_ceiling: p.escalate_on_ceiling,
        }))
    }
}
