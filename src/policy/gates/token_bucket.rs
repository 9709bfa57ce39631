//! A fleet-wide token bucket (the seeds' fix 3): a recycle that passes it
//! open spends a token; tokens refill at `rate_per_hour` up to `burst`, so
//! it bounds rate, not concurrency. Exits spend no token.

use super::*;
use crate::coord;
use crate::scenario::checks::{fail, finite, positive};

#[derive(Clone, Debug, PartialEq)]
pub struct TokenBucket {
    pub rate_per_hour: f64,
    pub burst: f64,
    pub exits: Exits,
}

pub const HOLD: Hold = Hold::new(GateKind::TokenBucket, 0);

impl Rule for TokenBucket {
    const NAME: &'static str = "token_bucket";
    const HOLDS: &'static [&'static str] = &["bucket_empty"];
    const COUNTED: &'static [(Pass, &'static str)] = &[
        (Pass::ExitPressure, "bucket_bypass_pressure"),
        (Pass::ExitHardCeiling, "bucket_bypass_hard_ceiling"),
    ];
    type State = coord::TokenBucket;

    fn state(&self) -> coord::TokenBucket {
        coord::TokenBucket::new(self.rate_per_hour, self.burst)
    }

    fn refresh(s: &mut coord::TokenBucket, now: SimTime) {
        s.tokens(now);
    }

    fn says(&self, v: &View, _: bool, s: &mut coord::TokenBucket) -> Says {
        open_if(s.has_token(v.now), HOLD)
    }

    fn exits(&self) -> Exits {
        self.exits
    }

    fn grant(&self, pass: Pass, s: &mut coord::TokenBucket, now: SimTime, _: u32) {
        if pass == Pass::Open {
            s.take(now);
        }
    }

    fn pass_label(p: Pass) -> Option<&'static str> {
        Some(match p {
            Pass::Open => "bucket_token",
            Pass::ExitPressure => "bucket_bypass_pressure",
            Pass::ExitHardCeiling => "bucket_bypass_hard_ceiling",
        })
    }

    fn ceiling(&self, _: &Scenario) -> Figures {
        let (rate, burst) = (self.rate_per_hour, self.burst);
        (
            Some(rate),
            None,
            format!("{rate} tokens per hour (+ a burst of {burst} in the first hour)"),
        )
    }

    fn from_raw(p: &RawPolicy) -> Result<Option<Self>, Invalid> {
        let b = &p.token_bucket;
        if !b.enabled {
            return Ok(None);
        }
        positive("policy.token_bucket.rate_per_hour", b.rate_per_hour)?;
        finite("policy.token_bucket.burst", b.burst)?;
        if b.burst < 1.0 {
            fail(
                "policy.token_bucket.burst",
                "must be >= 1 (one recycle at a time)",
            )?;
        }
        Ok(Some(TokenBucket {
            rate_per_hour: b.rate_per_hour,
            burst: b.burst,
            exits: Exits {
                pressure: b.exit_on_pressure,
                hard_ceiling: b.exit_on_hard_ceiling,
            },
        }))
    }
}
