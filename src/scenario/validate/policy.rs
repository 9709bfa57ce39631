//! `[policy]`: the limits, the gate pipeline in the seeds' order, the
//! triggers and the sampling mode, and the spawn-then-exit cgroup check.

use super::checks::*;
use crate::scenario::raw::*;
use crate::scenario::*;

/// Spawn-then-exit forks each successor before its predecessor exits, so
/// an instance may hold two processes per worker at once. If the cgroup
/// cannot hold them all freshly booted, the kernel kills a worker, the
/// master re-forks it at once, and the kill repeats at the same instant
/// without end (found by the `sim` fuzz target as a stack overflow).
fn spawn_first_fits(p: &RawPolicy, f: &RawFleet) -> Result<(), (String, String)> {
    if p.replacement == ReplacementKind::ExitThenSpawn {
        return Ok(());
    }
    // Granian hands over one worker at a time: one extra process at most.
    let n = match p.replacement {
        ReplacementKind::TimedHandover => f.workers_per_instance as usize + 1,
        _ => 2 * f.workers_per_instance as usize,
    };
    let both = f.boot_rss_mb + n as f64 * (f.boot_rss_mb - f.shared_mb);
    if both >= f.container_mb {
        fail(
            "fleet.container_mb",
            format!(
                "{} MB cannot hold the master and {} freshly booted workers ({both:.0} MB), \
                 which replacement = \"{}\" may run at once (each successor \
                 boots before its predecessor exits)",
                f.container_mb,
                n,
                replacement_label(p.replacement)
            ),
        )?;
    }
    Ok(())
}

fn replacement_label(k: ReplacementKind) -> &'static str {
    match k {
        ReplacementKind::ExitThenSpawn => "exit_then_spawn",
        ReplacementKind::SpawnThenExit => "spawn_then_exit",
        ReplacementKind::DetachAndSpawn => "detach_and_spawn",
        ReplacementKind::TimedHandover => "timed_handover",
    }
}

pub(super) fn policy(p: &RawPolicy, f: &RawFleet) -> Result<Policy, (String, String)> {
    limits(p, f)?;
    spawn_first_fits(p, f)?;
    let sampling = match p.sampling {
        SamplingKind::Timer => {
            positive("policy.tick_s", p.tick_s)?;
            non_negative("policy.near_limit_fraction", p.near_limit_fraction)?;
            if p.near_limit_fraction >= 1.0 {
                fail(
                    "policy.near_limit_fraction",
                    "is a fraction of the limit: below 1",
                )?;
            }
            let near = if p.near_limit_fraction > 0.0 {
                positive("policy.near_tick_s", p.near_tick_s)?;
                Some((
                    p.near_limit_fraction,
                    positive_duration("policy.near_tick_s", p.near_tick_s)?,
                ))
            } else {
                None
            };
            let clock = match p.sample_clock {
                SampleClockKind::PerWorker => SampleClock::PerWorker,
                SampleClockKind::PerInstance => SampleClock::PerInstance,
                SampleClockKind::WallClock => SampleClock::WallClock,
            };
            if near.is_some() && clock != SampleClock::PerWorker {
                fail(
                    "policy.sample_clock",
                    "a shared clock reads every worker at its ticks: adaptive sampling \
                     (near_limit_fraction > 0) needs sample_clock = \"per_worker\"",
                )?;
            }
            Sampling::Timer {
                tick: positive_duration("policy.tick_s", p.tick_s)?,
                near,
                clock,
            }
        }
        SamplingKind::Requests => {
            count(
                "policy.sample_every_requests",
                p.sample_every_requests,
                1,
                u32::MAX,
            )?;
            Sampling::EveryRequests {
                n: p.sample_every_requests as u64,
            }
        }
    };
    positive("policy.busy_window_s", p.busy_window_s)?;
    duration("policy.busy_window_s", p.busy_window_s)?;
    let pipeline = gates(p)?;
    Ok(Policy {
        base_limit_mb: p.base_limit_mb,
        jitter_mb: p.jitter_mb,
        hard_limit_mb: p.hard_limit_mb,
        sampling,
        triggers: triggers(p)?,
        pipeline,
        replacement: super::replace::replacement(p)?,
        modes: super::replace::modes(p, f)?,
        busy_window_s: p.busy_window_s.ceil() as u64,
    })
}

/// The jittered limit, the hard ceiling and the runway start-up check.
fn limits(p: &RawPolicy, f: &RawFleet) -> Check {
    positive("policy.base_limit_mb", p.base_limit_mb)?;
    megabytes("policy.base_limit_mb", p.base_limit_mb)?;
    megabytes("policy.jitter_mb", p.jitter_mb)?;
    if p.jitter_mb >= p.base_limit_mb {
        fail(
            "policy.jitter_mb",
            format!(
                "jitter {} MB must be below the base limit {} MB",
                shown(p.jitter_mb),
                shown(p.base_limit_mb)
            ),
        )?;
    }
    let floor = p.base_limit_mb - p.jitter_mb;
    // A forked worker's measure: its boot RSS, or its private part of it.
    let (born_mb, born) = match p.rss_measure {
        RssMeasureKind::Rss => (f.boot_rss_mb, "boot RSS"),
        // A forked child's peak starts at its RSS at fork (the kernel's
        // dup_mm sets hiwater_rss to it).
        RssMeasureKind::Peak => (f.boot_rss_mb, "boot RSS (a forked child's first peak)"),
        RssMeasureKind::Private => (f.boot_rss_mb - f.shared_mb, "boot private memory"),
        RssMeasureKind::Pss => {
            let sharers = 1.0 + f.workers_per_instance as f64;
            (
                f.boot_rss_mb - f.shared_mb + f.shared_mb / sharers,
                "boot PSS",
            )
        }
    };
    if p.rss_trigger && floor <= born_mb {
        fail(
            "policy.base_limit_mb",
            format!(
                "the lowest jittered limit ({} - {} = {floor} MB) is not above the {born} \
                 ({born_mb} MB): workers would recycle at birth",
                p.base_limit_mb, p.jitter_mb
            ),
        )?;
    }
    megabytes("policy.min_runway_mb", p.min_runway_mb)?;
    let runway = floor - born_mb;
    if p.rss_trigger && runway < p.min_runway_mb {
        fail(
            "policy.min_runway_mb",
            format!(
                "runway {runway} MB = limit floor {floor} MB (base_limit_mb {} - jitter_mb {}) \
                 - {born} {born_mb} MB is below min_runway_mb {}: workers drawing the floor \
                 die young",
                p.base_limit_mb, p.jitter_mb, p.min_runway_mb
            ),
        )?;
    }
    // `inf` is "no hard ceiling" (gunicorn, PHP-FPM have none); NaN and
    // -inf are no ceiling at all.
    if p.hard_limit_mb.is_nan() || p.hard_limit_mb == f64::NEG_INFINITY {
        fail(
            "policy.hard_limit_mb",
            format!(
                "must be a number of MB, or inf for no hard ceiling, got {}",
                p.hard_limit_mb
            ),
        )?;
    }
    if p.hard_limit_mb.is_finite() && p.hard_limit_mb > MAX_MB {
        fail(
            "policy.hard_limit_mb",
            format!(
                "{} MB is more than the 1e7 MB (10 TB) any machine holds (inf = no hard ceiling)",
                shown(p.hard_limit_mb)
            ),
        )?;
    }
    if p.hard_limit_mb < p.base_limit_mb {
        fail(
            "policy.hard_limit_mb",
            format!(
                "hard ceiling {} MB is below the base limit {} MB",
                p.hard_limit_mb, p.base_limit_mb
            ),
        )?;
    }
    Ok(())
}

/// The gate pipeline: every gate the table turns on, in pipeline order
/// (`policy::gates::from_raw`; each gate reads its own keys).
fn gates(p: &RawPolicy) -> Result<Pipeline, (String, String)> {
    Ok(Pipeline {
        gates: crate::policy::gates::from_raw(p)?,
        min_headroom_mb: p.min_headroom_mb,
    })
}

fn spread(s: SpreadKind) -> crate::policy::trigger::Spread {
    use crate::policy::trigger::Spread;
    match s {
        SpreadKind::Random => Spread::Random,
        SpreadKind::PerWorker => Spread::PerWorker,
    }
}

fn triggers(p: &RawPolicy) -> Result<Triggers, (String, String)> {
    use crate::policy::trigger::{Drift, InstanceMemory, Lifetime, MaxRequests};
    let m = &p.max_requests;
    let max_requests = if m.enabled {
        if m.requests == 0 {
            fail("policy.max_requests.requests", "must be > 0")?;
        }
        Some(MaxRequests {
            requests: m.requests,
            jitter: m.jitter_requests,
            spread: spread(m.spread),
        })
    } else {
        None
    };
    let l = &p.lifetime;
    let lifetime = if l.enabled {
        positive("policy.lifetime.max_s", l.max_s)?;
        Some(Lifetime {
            max: positive_duration("policy.lifetime.max_s", l.max_s)?,
            jitter: duration("policy.lifetime.jitter_s", l.jitter_s)?,
            spread: spread(l.spread),
        })
    } else {
        None
    };
    let d = &p.drift;
    let drift = if d.enabled {
        positive("policy.drift.max_drift_mb", d.max_drift_mb)?;
        megabytes("policy.drift.max_drift_mb", d.max_drift_mb)?;
        fraction("policy.drift.jitter_fraction", d.jitter_fraction)?;
        fraction("policy.drift.gc_reclaim_fraction", d.gc_reclaim_fraction)?;
        count(
            "policy.drift.consecutive_violations",
            d.consecutive_violations,
            1,
            u32::MAX,
        )?;
        Some(Drift {
            max_drift_mb: d.max_drift_mb,
            jitter_fraction: d.jitter_fraction,
            gc_reclaim_fraction: d.gc_reclaim_fraction,
            consecutive: d.consecutive_violations,
        })
    } else {
        None
    };
    let e = &p.evil_rss;
    let evil_rss = if e.enabled {
        positive("policy.evil_rss.limit_mb", e.limit_mb)?;
        megabytes("policy.evil_rss.limit_mb", e.limit_mb)?;
        positive(
            "policy.evil_rss.collector_interval_s",
            e.collector_interval_s,
        )?;
        Some(crate::policy::trigger::EvilRss {
            limit_mb: e.limit_mb,
            collector_interval: positive_duration(
                "policy.evil_rss.collector_interval_s",
                e.collector_interval_s,
            )?,
        })
    } else {
        None
    };
    let im = &p.instance_memory;
    let instance_memory = if im.enabled {
        positive("policy.instance_memory.percent_usage", im.percent_usage)?;
        if im.percent_usage > 1.0 {
            fail(
                "policy.instance_memory.percent_usage",
                "is a fraction of container_mb: at most 1",
            )?;
        }
        positive("policy.instance_memory.frequency_s", im.frequency_s)?;
        Some(InstanceMemory {
            percent_usage: im.percent_usage,
            frequency: positive_duration("policy.instance_memory.frequency_s", im.frequency_s)?,
            measure: match im.measure {
                InstanceMeasureKind::Cgroup => crate::policy::trigger::InstanceMeasure::Cgroup,
                InstanceMeasureKind::SummedRss => {
                    crate::policy::trigger::InstanceMeasure::SummedRss
                }
            },
        })
    } else {
        None
    };
    count(
        "policy.rss_consecutive_samples",
        p.rss_consecutive_samples,
        1,
        u32::MAX,
    )?;
    Ok(Triggers {
        rss_limit: p.rss_trigger,
        rss_consecutive_samples: p.rss_consecutive_samples,
        rss_measure: match p.rss_measure {
            RssMeasureKind::Rss => crate::policy::trigger::RssMeasure::Rss,
            RssMeasureKind::Private => crate::policy::trigger::RssMeasure::Private,
            RssMeasureKind::Pss => crate::policy::trigger::RssMeasure::Pss,
            RssMeasureKind::Peak => crate::policy::trigger::RssMeasure::Peak,
        },
        drift,
        max_requests,
        lifetime,
        instance_memory,
        evil_rss,
    })
}
