//! uWSGI `min-worker-lifetime`: a worker younger than `min_age_s` is not
//! recycled; a per-worker cooldown with no exits, so it holds a young
//! worker even past the hard ceiling.

use super::*;
use crate::scenario::checks::duration;

#[derive(Clone, Debug, PartialEq)]
pub struct MinAge {
    pub min_age_s: f64,
}

/// The worker is younger than the minimum lifetime.
pub const HOLD: Hold = Hold::new(GateKind::MinAge, 0);

impl Rule for MinAge {
    const NAME: &'static str = "min_worker_age";
    const HOLDS: &'static [&'static str] = &["too_young"];
    const COUNTED: &'static [(Pass, &'static str)] = &[];
    type State = ();

    fn state(&self) {}

    fn says(&self, v: &View, _: bool, _: &mut ()) -> Says {
        open_if(v.worker_age_s >= self.min_age_s, HOLD)
    }

    fn pass_label(_: Pass) -> Option<&'static str> {
        None
    }

    fn ceiling(&self, sc: &Scenario) -> Figures {
        let workers = sc.fleet.workers() as f64;
        let m = self.min_age_s;
        (
            (m > 0.0).then(|| 3600.0 / m * workers),
            None,
            format!("each of {workers} workers at most once per {m} s of life"),
        )
    }

    /// On when `policy.min_worker_age_s` > 0.
    fn from_raw(p: &RawPolicy) -> Result<Option<Self>, Invalid> {
        if p.min_worker_age_s > 0.0 {
            duration("policy.min_worker_age_s", p.min_worker_age_s)?;
            return Ok(Some(MinAge {
                min_age_s: p.min_worker_age_s,
            }));
        }
        Ok(None)
    }
}
