//! Busy deferral: hold while the instance's arrival rate is over
//! `busy_rps`, for at most `defer_max_s` after the worker first asked;
//! skipped under pressure or at the hard ceiling (the seeds' formula), so
//! it has no exits of its own.

use super::*;
use crate::scenario::checks::{duration, non_negative};

#[derive(Clone, Debug, PartialEq)]
pub struct BusyDeferral {
    pub busy_rps: f64,
    pub defer_max_s: f64,
}

pub const HOLD: Hold = Hold::new(GateKind::BusyDeferral, 0);

impl Rule for BusyDeferral {
    const NAME: &'static str = "busy_deferral";
    const HOLDS: &'static [&'static str] = &["busy_deferral"];
    const COUNTED: &'static [(Pass, &'static str)] = &[];
    type State = ();

    fn state(&self) {}

    fn says(&self, v: &View, pressure: bool, _: &mut ()) -> Says {
        let busy = v.instance_rps > self.busy_rps && v.over_limit_age_s < self.defer_max_s;
        open_if(pressure || !busy || v.at_ceiling(), HOLD)
    }

    fn pass_label(_: Pass) -> Option<&'static str> {
        None
    }

    fn ceiling(&self, _: &Scenario) -> Figures {
        let d = self.defer_max_s;
        (
            None,
            None,
            format!("delays a recycle by at most {d} s: no rate bound"),
        )
    }

    fn from_raw(p: &RawPolicy) -> Result<Option<Self>, Invalid> {
        if !p.busy_deferral {
            return Ok(None);
        }
        non_negative("policy.busy_rps", p.busy_rps)?;
        duration("policy.defer_max_s", p.defer_max_s)?;
        Ok(Some(BusyDeferral {
            busy_rps: p.busy_rps,
            defer_max_s: p.defer_max_s,
        }))
    }
}
