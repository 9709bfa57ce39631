//! A trailing-window cap (the seeds' fix 3): at most `max_recycles`
//! fleet-wide in any trailing `window`. Every recycle is recorded, exits
//! included, so exits also use up the window.

use super::*;
use crate::coord;
use crate::scenario::checks::{count, duration, positive};

#[derive(Clone, Debug, PartialEq)]
pub struct WindowCap {
    pub max_recycles: u32,
    pub window: SimTime,
    pub exits: Exits,
}

pub const HOLD: Hold = Hold::new(GateKind::WindowCap, 0);

impl Rule for WindowCap {
    const NAME: &'static str = "window_cap";
    const HOLDS: &'static [&'static str] = &["window_full"];
    const COUNTED: &'static [(Pass, &'static str)] = &[
        (Pass::ExitPressure, "window_bypass_pressure"),
        (Pass::ExitHardCeiling, "window_bypass_hard_ceiling"),
    ];
    type State = coord::WindowCap;

    fn state(&self) -> coord::WindowCap {
        coord::WindowCap::new(self.window)
    }

    fn refresh(s: &mut coord::WindowCap, now: SimTime) {
        s.count(now);
    }

    fn says(&self, v: &View, _: bool, s: &mut coord::WindowCap) -> Says {
        open_if(s.count(v.now) < self.max_recycles, HOLD)
    }

    fn exits(&self) -> Exits {
        self.exits
    }

    fn grant(&self, _: Pass, s: &mut coord::WindowCap, now: SimTime, _: u32) {
        s.record(now);
    }

    fn pass_label(p: Pass) -> Option<&'static str> {
        Some(match p {
            Pass::Open => "window_ok",
            Pass::ExitPressure => "window_bypass_pressure",
            Pass::ExitHardCeiling => "window_bypass_hard_ceiling",
        })
    }

    fn ceiling(&self, _: &Scenario) -> Figures {
        let (n, w) = (self.max_recycles, self.window.as_secs_f64());
        (
            Some(n as f64 * 3600.0 / w),
            None,
            format!("{n} per {w} s window"),
        )
    }

    fn from_raw(p: &RawPolicy) -> Result<Option<Self>, Invalid> {
        let w = &p.window_cap;
        if !w.enabled {
            return Ok(None);
        }
        count(
            "policy.window_cap.max_recycles",
            w.max_recycles,
            1,
            u32::MAX,
        )?;
        positive("policy.window_cap.window_s", w.window_s)?;
        Ok(Some(WindowCap {
            max_recycles: w.max_recycles,
            window: duration("policy.window_cap.window_s", w.window_s)?,
            exits: Exits {
                pressure: w.exit_on_pressure,
                hard_ceiling: w.exit_on_hard_ceiling,
            },
        }))
    }
}
