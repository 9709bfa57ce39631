//! `RawScenario` -> `Scenario`: every check names its key.

use super::budget::estimated_events;
use super::raw::*;
use super::*;
use crate::fleet::VelocityDist;

/// A failed check: the dotted key and the reason.
type Check = Result<(), (String, String)>;

fn fail(key: &str, reason: impl Into<String>) -> Check {
    Err((key.to_string(), reason.into()))
}

fn finite(key: &str, v: f64) -> Check {
    if v.is_finite() {
        Ok(())
    } else {
        fail(key, format!("must be a finite number, got {v}"))
    }
}

fn non_negative(key: &str, v: f64) -> Check {
    finite(key, v)?;
    if v < 0.0 {
        return fail(key, format!("must be >= 0, got {v}"));
    }
    Ok(())
}

fn positive(key: &str, v: f64) -> Check {
    finite(key, v)?;
    if v <= 0.0 {
        return fail(key, format!("must be > 0, got {v}"));
    }
    Ok(())
}

/// At most ten years in seconds: larger durations are typos, not scenarios.
const MAX_SECONDS: f64 = 10.0 * 365.0 * 86_400.0;

fn duration(key: &str, v: f64) -> Result<SimTime, (String, String)> {
    non_negative(key, v)?;
    if v > MAX_SECONDS {
        fail(key, format!("{v} s is longer than ten years"))?;
    }
    Ok(SimTime::from_secs_f64(v))
}

/// A duration that must stay positive once rounded to the clock's
/// microsecond: a tick or step of 0 us would reschedule itself forever.
fn positive_duration(key: &str, v: f64) -> Result<SimTime, (String, String)> {
    positive(key, v)?;
    let d = duration(key, v)?;
    if d == SimTime::ZERO {
        fail(key, format!("{v} s rounds to 0 us: must be at least 1 us"))?;
    }
    Ok(d)
}

fn count(key: &str, v: u32, min: u32, max: u32) -> Check {
    if v < min || v > max {
        return fail(key, format!("must be between {min} and {max}, got {v}"));
    }
    Ok(())
}

/// Checks a raw scenario. `series` holds the parsed `workload.series_csv`
/// when the profile is a series (the caller reads files; this module does not).
pub fn validate(
    raw: &RawScenario,
    origin: &str,
    series: Option<Vec<(SimTime, f64)>>,
) -> Result<Scenario, ScenarioError> {
    build(raw, series).map_err(|(key, reason)| ScenarioError {
        origin: origin.to_string(),
        line: None,
        key: Some(key),
        reason,
    })
}

fn build(
    raw: &RawScenario,
    series: Option<Vec<(SimTime, f64)>>,
) -> Result<Scenario, (String, String)> {
    positive("run.duration_h", raw.run.duration_h)?;
    let window = duration("run.duration_h", raw.run.duration_h * 3600.0)?;
    if raw.run.max_events == 0 {
        fail("run.max_events", "must be > 0")?;
    }
    positive("run.timeline_step_s", raw.run.timeline_step_s)?;
    let fleet = fleet(&raw.fleet)?;
    let workload = workload(&raw.workload, series)?;
    let client = client(&raw.client)?;
    let policy = policy(&raw.policy, &raw.fleet)?;
    let sc = Scenario {
        name: raw.name.clone(),
        duration: window,
        max_events: raw.run.max_events,
        saturate: raw.run.saturate,
        engine: engine(&raw.engine)?,
        timeline_step: positive_duration("run.timeline_step_s", raw.run.timeline_step_s)?,
        fleet,
        workload,
        client,
        policy,
    };
    let estimate = estimated_events(&sc);
    if estimate > sc.max_events as f64 {
        fail(
            "run.max_events",
            format!(
                "this run needs about {estimate:.3e} events, over the budget of {}: shorten \
                 run.duration_h (--hours), or raise the budget with --set run.max_events={:.0}",
                sc.max_events,
                (estimate * 1.5).ceil()
            ),
        )?;
    }
    Ok(sc)
}

/// The longest aggregate step: a leap longer than a minute would blur the
/// sampling tick (45 s in the seeds) and the boot time it is meant to resolve.
const MAX_STEP_S: f64 = 60.0;

fn engine(e: &RawEngine) -> Result<Engine, (String, String)> {
    let step = positive_duration("engine.step_s", e.step_s)?;
    if e.step_s > MAX_STEP_S {
        fail(
            "engine.step_s",
            format!("{} s is over the {MAX_STEP_S} s bound", e.step_s),
        )?;
    }
    Ok(Engine { mode: e.mode, step })
}

fn fleet(f: &RawFleet) -> Result<Fleet, (String, String)> {
    count("fleet.instances", f.instances, 1, 100_000)?;
    count(
        "fleet.workers_per_instance",
        f.workers_per_instance,
        1,
        4096,
    )?;
    count("fleet.concurrency", f.concurrency, 1, 10_000)?;
    if f.instances as u64 * f.workers_per_instance as u64 > 1_000_000 {
        fail("fleet.instances", "more than 1,000,000 workers in all")?;
    }
    positive("fleet.container_mb", f.container_mb)?;
    positive("fleet.boot_rss_mb", f.boot_rss_mb)?;
    non_negative("fleet.shared_mb", f.shared_mb)?;
    if f.shared_mb > f.boot_rss_mb {
        fail(
            "fleet.shared_mb",
            format!(
                "{} MB shared is more than the {} MB a worker boots with",
                f.shared_mb, f.boot_rss_mb
            ),
        )?;
    }
    let booted = f.boot_rss_mb + f.workers_per_instance as f64 * (f.boot_rss_mb - f.shared_mb);
    if booted >= f.container_mb {
        fail(
            "fleet.container_mb",
            format!(
                "{} MB cannot hold the master and {} freshly booted workers ({booted:.0} MB)",
                f.container_mb, f.workers_per_instance
            ),
        )?;
    }
    let l = &f.leak;
    non_negative("fleet.leak.mean_mb_per_request", l.mean_mb_per_request)?;
    non_negative("fleet.leak.cv", l.cv)?;
    non_negative("fleet.leak.warmup_mb", l.warmup_mb)?;
    positive("fleet.leak.warmup_requests", l.warmup_requests)?;
    non_negative("fleet.leak.step_probability", l.step_probability)?;
    if l.step_probability > 1.0 {
        fail("fleet.leak.step_probability", "is a probability: at most 1")?;
    }
    non_negative("fleet.leak.step_mean_mb", l.step_mean_mb)?;
    let velocity = match l.distribution {
        LeakDistribution::Constant => VelocityDist::Constant {
            mb: l.mean_mb_per_request,
        },
        LeakDistribution::Lognormal => VelocityDist::lognormal(l.mean_mb_per_request, l.cv),
        LeakDistribution::Exponential => VelocityDist::Exponential {
            mean_mb: l.mean_mb_per_request,
        },
    };
    Ok(Fleet {
        instances: f.instances as usize,
        workers_per_instance: f.workers_per_instance as usize,
        concurrency: f.concurrency as usize,
        container_mb: f.container_mb,
        boot_rss_mb: f.boot_rss_mb,
        shared_mb: f.shared_mb,
        boot: duration("fleet.boot_s", f.boot_s)?,
        graceful_timeout: duration("fleet.graceful_timeout_s", f.graceful_timeout_s)?,
        warm_start: f.warm_start,
        leak: LeakModel {
            velocity,
            warmup_mb: l.warmup_mb,
            warmup_rate: 1.0 - (-1.0 / l.warmup_requests).exp(),
            step_probability: l.step_probability,
            step_mean_mb: l.step_mean_mb,
        },
    })
}

fn workload(
    w: &RawWorkload,
    series: Option<Vec<(SimTime, f64)>>,
) -> Result<Workload, (String, String)> {
    let profile = match w.profile {
        ProfileKind::Constant => {
            positive("workload.rps", w.rps)?;
            RateProfile::Constant { rps: w.rps }
        }
        ProfileKind::Diurnal => {
            positive("workload.rps", w.rps)?;
            finite("workload.peak_to_trough", w.peak_to_trough)?;
            if w.peak_to_trough < 1.0 {
                fail("workload.peak_to_trough", "must be >= 1 (peak over trough)")?;
            }
            hour("workload.peak_hour", w.peak_hour)?;
            hour("workload.start_hour", w.start_hour)?;
            RateProfile::Diurnal {
                mean_rps: w.rps,
                amplitude: (w.peak_to_trough - 1.0) / (w.peak_to_trough + 1.0),
                peak_hour: w.peak_hour,
                start_hour: w.start_hour,
            }
        }
        ProfileKind::Series => {
            let Some(points) = series else {
                return Err((
                    "workload.series_csv".into(),
                    "profile = \"series\" needs a series_csv file".into(),
                ));
            };
            RateProfile::Series { points }
        }
    };
    if profile.peak_rate() <= 0.0 {
        fail("workload.rps", "the rate profile never sends a request")?;
    }
    positive("workload.service_mean_ms", w.service_mean_ms)?;
    let mean_us = w.service_mean_ms * 1000.0;
    let service = match w.service {
        ServiceKind::Constant => ServiceDist::Constant { us: mean_us },
        ServiceKind::Exponential => ServiceDist::Exponential { mean_us },
        ServiceKind::Lognormal => {
            positive("workload.service_p99_ms", w.service_p99_ms)?;
            ServiceDist::lognormal_from_mean_p99(mean_us, w.service_p99_ms * 1000.0).ok_or_else(
                || {
                    (
                        "workload.service_p99_ms".to_string(),
                        format!(
                            "no lognormal has mean {} ms and p99 {} ms (p99 must be between \
                             the mean and ~15x the mean)",
                            w.service_mean_ms, w.service_p99_ms
                        ),
                    )
                },
            )?
        }
    };
    positive("workload.queue_timeout_s", w.queue_timeout_s)?;
    Ok(Workload {
        profile,
        balancer: w.balancer,
        service,
        backlog: w.backlog_requests as usize,
        queue_timeout: duration("workload.queue_timeout_s", w.queue_timeout_s)?,
    })
}

fn hour(key: &str, h: f64) -> Check {
    finite(key, h)?;
    if !(0.0..24.0).contains(&h) {
        return fail(key, format!("is an hour of the day: 0 <= h < 24, got {h}"));
    }
    Ok(())
}

fn client(c: &RawClient) -> Result<Client, (String, String)> {
    count("client.retries", c.retries, 0, 10)?;
    count(
        "client.keepalive_conns_per_worker",
        c.keepalive_conns_per_worker,
        0,
        10_000,
    )?;
    Ok(Client {
        retries: c.retries,
        retry_delay: duration("client.retry_delay_ms", c.retry_delay_ms / 1000.0)
            .map_err(|(k, r)| (k, r.replace(" s ", " ms / 1000 ")))?,
        keepalive_conns_per_worker: c.keepalive_conns_per_worker,
        stale_window: duration("client.stale_window_s", c.stale_window_s)?,
    })
}

/// Spawn-then-exit forks each successor before its predecessor exits, so
/// an instance may hold two processes per worker at once. If the cgroup
/// cannot hold them all freshly booted, the kernel kills a worker, the
/// master re-forks it at once, and the kill repeats at the same instant
/// without end (found by the `sim` fuzz target as a stack overflow).
fn spawn_first_fits(p: &RawPolicy, f: &RawFleet) -> Result<(), (String, String)> {
    if p.replacement != ReplacementKind::SpawnThenExit {
        return Ok(());
    }
    let both = f.boot_rss_mb + 2.0 * f.workers_per_instance as f64 * (f.boot_rss_mb - f.shared_mb);
    if both >= f.container_mb {
        fail(
            "fleet.container_mb",
            format!(
                "{} MB cannot hold the master and {} freshly booted workers ({both:.0} MB), \
                 which replacement = \"spawn_then_exit\" may run at once (each successor \
                 boots before its predecessor exits)",
                f.container_mb,
                2 * f.workers_per_instance
            ),
        )?;
    }
    Ok(())
}

fn policy(p: &RawPolicy, f: &RawFleet) -> Result<Policy, (String, String)> {
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
            Sampling::Timer {
                tick: positive_duration("policy.tick_s", p.tick_s)?,
                near,
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
    let (pipeline, lease_ttl, bucket, window) = gates(p)?;
    Ok(Policy {
        base_limit_mb: p.base_limit_mb,
        jitter_mb: p.jitter_mb,
        hard_limit_mb: p.hard_limit_mb,
        sampling,
        triggers: triggers(p)?,
        pipeline,
        replacement: match p.replacement {
            ReplacementKind::ExitThenSpawn => Replacement::ExitThenSpawn,
            ReplacementKind::SpawnThenExit => Replacement::SpawnThenExit,
        },
        busy_window_s: p.busy_window_s.ceil() as u64,
        lease_ttl,
        bucket,
        window,
    })
}

/// The jittered limit, the hard ceiling and the runway start-up check.
fn limits(p: &RawPolicy, f: &RawFleet) -> Check {
    positive("policy.base_limit_mb", p.base_limit_mb)?;
    non_negative("policy.jitter_mb", p.jitter_mb)?;
    if p.jitter_mb >= p.base_limit_mb {
        fail(
            "policy.jitter_mb",
            format!(
                "jitter {} MB must be below the base limit {} MB",
                p.jitter_mb, p.base_limit_mb
            ),
        )?;
    }
    let floor = p.base_limit_mb - p.jitter_mb;
    if p.rss_trigger && floor <= f.boot_rss_mb {
        fail(
            "policy.base_limit_mb",
            format!(
                "the lowest jittered limit ({} - {} = {floor} MB) is not above the boot RSS \
                 ({} MB): workers would recycle at birth",
                p.base_limit_mb, p.jitter_mb, f.boot_rss_mb
            ),
        )?;
    }
    non_negative("policy.min_runway_mb", p.min_runway_mb)?;
    let runway = floor - f.boot_rss_mb;
    if p.rss_trigger && runway < p.min_runway_mb {
        fail(
            "policy.min_runway_mb",
            format!(
                "runway {runway} MB = limit floor {floor} MB (base_limit_mb {} - jitter_mb {}) \
                 - boot_rss_mb {} is below min_runway_mb {}: workers drawing the floor die young",
                p.base_limit_mb, p.jitter_mb, f.boot_rss_mb, p.min_runway_mb
            ),
        )?;
    }
    finite("policy.hard_limit_mb", p.hard_limit_mb)?;
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

type Gates = (
    Pipeline,
    Option<SimTime>,
    Option<(f64, f64)>,
    Option<SimTime>,
);

/// The gate pipeline in the seeds' order, rate gates before the lease.
fn gates(p: &RawPolicy) -> Result<Gates, (String, String)> {
    use crate::policy::{Exits, Gate};
    let exits = |pressure, hard_ceiling| Exits {
        pressure,
        hard_ceiling,
    };
    duration("policy.cooldown_s", p.cooldown_s)?;
    duration("policy.pressure_cooldown_s", p.pressure_cooldown_s)?;
    finite("policy.min_headroom_mb", p.min_headroom_mb)?;
    let mut gates = vec![Gate::Cooldown {
        cooldown_s: p.cooldown_s,
        pressure_cooldown_s: p.pressure_cooldown_s,
        escalate_on_ceiling: p.escalate_on_ceiling,
    }];
    if p.min_worker_age_s > 0.0 {
        duration("policy.min_worker_age_s", p.min_worker_age_s)?;
        gates.push(Gate::MinAge {
            min_age_s: p.min_worker_age_s,
        });
    }
    if p.busy_deferral {
        non_negative("policy.busy_rps", p.busy_rps)?;
        duration("policy.defer_max_s", p.defer_max_s)?;
        gates.push(Gate::BusyDeferral {
            busy_rps: p.busy_rps,
            defer_max_s: p.defer_max_s,
        });
    }
    let b = &p.token_bucket;
    let bucket = if b.enabled {
        positive("policy.token_bucket.rate_per_hour", b.rate_per_hour)?;
        finite("policy.token_bucket.burst", b.burst)?;
        if b.burst < 1.0 {
            fail(
                "policy.token_bucket.burst",
                "must be >= 1 (one recycle at a time)",
            )?;
        }
        gates.push(Gate::TokenBucket {
            exits: exits(b.exit_on_pressure, b.exit_on_hard_ceiling),
        });
        Some((b.rate_per_hour, b.burst))
    } else {
        None
    };
    let w = &p.window_cap;
    let window = if w.enabled {
        count(
            "policy.window_cap.max_recycles",
            w.max_recycles,
            1,
            u32::MAX,
        )?;
        positive("policy.window_cap.window_s", w.window_s)?;
        gates.push(Gate::WindowCap {
            max_recycles: w.max_recycles,
            exits: exits(w.exit_on_pressure, w.exit_on_hard_ceiling),
        });
        Some(duration("policy.window_cap.window_s", w.window_s)?)
    } else {
        None
    };
    let c = &p.capacity_floor;
    if c.enabled {
        gates.push(Gate::CapacityFloor {
            min_serving: c.min_serving_workers,
            exits: exits(c.exit_on_pressure, c.exit_on_hard_ceiling),
        });
    }
    let lease_ttl = if p.lease.enabled {
        positive("policy.lease.ttl_s", p.lease.ttl_s)?;
        gates.push(Gate::Lease {
            exits: exits(p.lease.exit_on_pressure, p.lease.exit_on_hard_ceiling),
        });
        Some(duration("policy.lease.ttl_s", p.lease.ttl_s)?)
    } else {
        None
    };
    let pipeline = Pipeline {
        gates,
        min_headroom_mb: p.min_headroom_mb,
    };
    Ok((pipeline, lease_ttl, bucket, window))
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
    let evil_rss_mb = if e.enabled {
        positive("policy.evil_rss.limit_mb", e.limit_mb)?;
        Some(e.limit_mb)
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
        drift,
        max_requests,
        lifetime,
        instance_memory,
        evil_rss_mb,
    })
}

fn fraction(key: &str, v: f64) -> Check {
    non_negative(key, v)?;
    if v > 1.0 {
        return fail(key, format!("is a fraction: at most 1, got {v}"));
    }
    Ok(())
}
