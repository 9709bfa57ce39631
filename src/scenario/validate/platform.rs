//! `[fleet.cow]` and `[platform]`: copy-on-write after a preload fork, the
//! whole-container OOM kill and the reload waves.

use super::checks::*;
use crate::fleet::Cow;
use crate::scenario::raw::*;
use crate::scenario::*;

/// What `[fleet.cow]` makes of the fleet's memory: the pages a worker
/// shares with its master at fork, the master's own RSS, and the
/// unsharing model (`None` when nothing unshares).
pub(super) struct Memory {
    pub shared_mb: f64,
    pub master_mb: f64,
    pub cow: Option<Cow>,
}

pub(super) fn memory(f: &RawFleet) -> Result<Memory, (String, String)> {
    let c = &f.cow;
    megabytes("fleet.cow.master_rss_mb", c.master_rss_mb)?;
    fraction("fleet.cow.refcount_fraction", c.refcount_fraction)?;
    positive(
        "fleet.cow.refcount_half_life_requests",
        c.refcount_half_life_requests,
    )?;
    fraction("fleet.cow.gc_fraction", c.gc_fraction)?;
    if !c.preload {
        if c.master_rss_mb <= 0.0 {
            fail(
                "fleet.cow.master_rss_mb",
                "preload = false needs the master's own RSS (it holds no app): set it > 0",
            )?;
        }
        if c.master_rss_mb > f.boot_rss_mb {
            fail(
                "fleet.cow.master_rss_mb",
                format!(
                    "{} MB is more than the {} MB a worker boots with, the app included",
                    c.master_rss_mb, f.boot_rss_mb
                ),
            )?;
        }
        // Each worker holds its own copy: nothing is shared, nothing unshares.
        return Ok(Memory {
            shared_mb: 0.0,
            master_mb: c.master_rss_mb,
            cow: None,
        });
    }
    if c.master_rss_mb != 0.0 {
        fail(
            "fleet.cow.master_rss_mb",
            "is read only with preload = false (a preloaded master's RSS is fleet.boot_rss_mb)",
        )?;
    }
    let unshares = c.refcount_fraction > 0.0 || (c.gc_fraction > 0.0 && !c.gc_freeze);
    Ok(Memory {
        shared_mb: f.shared_mb,
        master_mb: f.boot_rss_mb,
        cow: unshares.then_some(Cow {
            shared_mb: f.shared_mb,
            refcount_fraction: c.refcount_fraction,
            refcount_half_life_requests: c.refcount_half_life_requests,
            gc_fraction: c.gc_fraction,
            gc_full_after_requests: c.gc_full_after_requests,
            gc_freeze: c.gc_freeze,
        }),
    })
}

pub(super) fn platform(
    p: &RawPlatform,
    instances: u32,
    window: SimTime,
) -> Result<Platform, (String, String)> {
    let restart = duration("platform.restart_delay_s", p.restart_delay_s)?;
    let mut reloads = Vec::with_capacity(p.reload.len());
    for (k, r) in p.reload.iter().enumerate() {
        let at = duration(&format!("platform.reload[{k}].at_s"), r.at_s)?;
        if at >= window {
            fail(
                &format!("platform.reload[{k}].at_s"),
                format!("{} s is not inside the {window} window", r.at_s),
            )?;
        }
        let instance = match r.scope {
            ReloadScope::Fleet => None,
            ReloadScope::Instance => {
                if r.instance >= instances {
                    fail(
                        &format!("platform.reload[{k}].instance"),
                        format!("the fleet has instances 0..={}", instances - 1),
                    )?;
                }
                Some(r.instance)
            }
        };
        reloads.push(Reload { at, instance });
    }
    reloads.sort_by_key(|r| r.at);
    Ok(Platform {
        oom_group: p.oom_group.then_some(restart),
        reloads,
    })
}
