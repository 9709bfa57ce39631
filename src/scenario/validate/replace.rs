//! `policy.replacement` and the replacement modes' tables: Passenger's
//! proxy queue, Granian's handover interval, puma_worker_killer's rolling
//! restart, uWSGI's fork-bomb delay and `[fleet.cold_start]`.

use super::checks::*;
use crate::policy::replace::{ColdStart, ForkBomb, Modes, RollingRestart};
use crate::scenario::raw::*;
use crate::scenario::*;

pub(super) fn replacement(p: &RawPolicy) -> Result<Replacement, (String, String)> {
    Ok(match p.replacement {
        ReplacementKind::ExitThenSpawn => Replacement::ExitThenSpawn,
        ReplacementKind::SpawnThenExit => Replacement::SpawnThenExit,
        ReplacementKind::DetachAndSpawn => {
            let q = p.detach_and_spawn.max_request_queue_size;
            Replacement::DetachAndSpawn {
                max_request_queue: match q {
                    0 => usize::MAX,
                    q => usize::try_from(q).unwrap_or(usize::MAX),
                },
            }
        }
        ReplacementKind::TimedHandover => {
            let key = "policy.timed_handover.respawn_interval_s";
            non_negative(key, p.timed_handover.respawn_interval_s)?;
            Replacement::TimedHandover {
                respawn_interval: duration(key, p.timed_handover.respawn_interval_s)?,
            }
        }
    })
}

pub(super) fn modes(p: &RawPolicy, f: &RawFleet) -> Result<Modes, (String, String)> {
    let r = &p.rolling_restart;
    let rolling_restart = if r.enabled {
        positive("policy.rolling_restart.frequency_s", r.frequency_s)?;
        positive("policy.rolling_restart.interval_s", r.interval_s)?;
        Some(RollingRestart {
            frequency: positive_duration("policy.rolling_restart.frequency_s", r.frequency_s)?,
            splay: duration("policy.rolling_restart.splay_s", r.splay_s)?,
            interval: positive_duration("policy.rolling_restart.interval_s", r.interval_s)?,
        })
    } else {
        None
    };
    let b = &p.forkbomb;
    let forkbomb = if b.enabled {
        if p.replacement != ReplacementKind::ExitThenSpawn {
            fail(
                "policy.forkbomb.enabled",
                "uWSGI's fork-bomb delay holds the master's respawns: it needs \
                 replacement = \"exit_then_spawn\"",
            )?;
        }
        if b.check_interval_s > 3600 {
            fail("policy.forkbomb.check_interval_s", "at most 3600 s")?;
        }
        Some(ForkBomb {
            delay: positive_duration("policy.forkbomb.delay_s", b.delay_s)?,
            check_interval_s: b.check_interval_s,
        })
    } else {
        None
    };
    let c = &f.cold_start;
    finite("fleet.cold_start.factor", c.factor)?;
    if c.factor < 1.0 {
        fail(
            "fleet.cold_start.factor",
            format!(
                "{} would make a fresh worker faster than a warm one: 1 (off) or more",
                shown(c.factor)
            ),
        )?;
    }
    if c.factor > 1000.0 {
        fail("fleet.cold_start.factor", "at most 1000")?;
    }
    let span = duration("fleet.cold_start.duration_s", c.duration_s)?;
    let cold_start =
        (c.factor > 1.0 && (c.requests > 0 || span > SimTime::ZERO)).then_some(ColdStart {
            factor: c.factor,
            requests: c.requests,
            duration: span,
        });
    Ok(Modes {
        rolling_restart,
        forkbomb,
        cold_start,
    })
}

/// The modes the aggregate engine does not simulate (it has no request
/// slots to slow down, and no handover order within a step).
pub(super) fn engine_fits(raw: &RawScenario) -> Check {
    if raw.engine.mode != EngineMode::Aggregate {
        return Ok(());
    }
    match raw.policy.replacement {
        ReplacementKind::DetachAndSpawn | ReplacementKind::TimedHandover => fail(
            "policy.replacement",
            "\"detach_and_spawn\" and \"timed_handover\" need [engine] mode = \"exact\"",
        )?,
        ReplacementKind::ExitThenSpawn | ReplacementKind::SpawnThenExit => {}
    }
    if raw.fleet.cold_start.factor > 1.0 {
        fail(
            "fleet.cold_start.factor",
            "the cold-start penalty needs [engine] mode = \"exact\" (the aggregate \
             mode draws no service time per request)",
        )?;
    }
    Ok(())
}
