//! `RawScenario` -> `Scenario`: every check names its key. The value
//! checks live in `checks`, the `[policy]` table in `policy`; this file
//! holds the run, engine, fleet, workload and client tables.

pub(crate) mod checks;
mod kill;
mod platform;
mod policy;
mod replace;

use super::budget::estimated_events;
use super::raw::*;
use super::*;
use crate::fleet::{Surge, VelocityDist};
use checks::*;
use policy::policy;

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

/// The most rows a run's timeline.csv may have (a 10-year run at a 31.5 s step).
const MAX_TIMELINE_ROWS: f64 = 1e7;
/// The most serving slots, or pinned connections, a fleet may have in all.
const MAX_SLOTS: u64 = 10_000_000;
/// The longest mean service time a scenario may name: a day.
const MAX_SERVICE_MEAN_MS: f64 = 86_400_000.0;

/// The highest mean or peak request rate a scenario may ask for.
const MAX_RPS: f64 = 1e9;

fn build(
    raw: &RawScenario,
    series: Option<Vec<(SimTime, f64)>>,
) -> Result<Scenario, (String, String)> {
    // Printed to terminals and written into every output: no control
    // characters (an escape sequence in a name rewrote the terminal).
    for (key, text, allowed) in [
        ("name", &raw.name, ""),
        ("description", &raw.description, "\n\t"),
    ] {
        if let Some(c) = text
            .chars()
            .find(|c| c.is_control() && !allowed.contains(*c))
        {
            fail(
                key,
                format!("holds the control character {:?}: write it as text", c),
            )?;
        }
    }
    positive("run.duration_h", raw.run.duration_h)?;
    // Checked in hours first: `1e308` h is infinite seconds, which the
    // seconds' check would report as "got inf".
    if raw.run.duration_h > checks::MAX_SECONDS / 3600.0 {
        fail(
            "run.duration_h",
            format!("{} h is longer than ten years", shown(raw.run.duration_h)),
        )?;
    }
    let window = duration("run.duration_h", raw.run.duration_h * 3600.0)?;
    // Rates are per hour of the window: one that rounds to nothing (or to
    // a few microseconds) has none to give.
    if window < SimTime::from_secs(1) {
        fail(
            "run.duration_h",
            format!(
                "{} h is under a second: a window must be at least 1 s",
                shown(raw.run.duration_h)
            ),
        )?;
    }
    if raw.run.max_events == 0 {
        fail("run.max_events", "must be > 0")?;
    }
    positive("run.timeline_step_s", raw.run.timeline_step_s)?;
    // Each row is a line of timeline.csv: a millisecond step over a day
    // would write gigabytes, under any event budget.
    let rows = raw.run.duration_h * 3600.0 / raw.run.timeline_step_s;
    if rows > MAX_TIMELINE_ROWS {
        fail(
            "run.timeline_step_s",
            format!(
                "{} s over {} h is {rows:.0} timeline rows, over the limit of {MAX_TIMELINE_ROWS:.0}: \
                 use a step of at least {:.4} s",
                raw.run.timeline_step_s,
                raw.run.duration_h,
                raw.run.duration_h * 3600.0 / MAX_TIMELINE_ROWS
            ),
        )?;
    }
    let fleet = fleet(&raw.fleet)?;
    if raw.engine.mode == EngineMode::Aggregate {
        kill::exact_only(&fleet.kill)?;
    }
    let workload = workload(&raw.workload, series)?;
    let client = client(&raw.client)?;
    // Each key has its own bound; their products are what is allocated
    // (a serving slot a worker and unit of concurrency, a connection a
    // pinned instance's): 10^4 instances x 10^5 connections asked for 64 GB
    // and aborted.
    let slots = raw.fleet.instances as u64
        * raw.fleet.workers_per_instance as u64
        * raw.fleet.concurrency as u64;
    if slots > MAX_SLOTS {
        fail(
            "fleet.concurrency",
            format!(
                "{slots} serving slots in all (instances x workers_per_instance x concurrency) \
                 is over the limit of {MAX_SLOTS}"
            ),
        )?;
    }
    if let Connections::Pinned { per_instance, .. } = client.connections {
        let conns = raw.fleet.instances as u64 * per_instance as u64;
        if conns > MAX_SLOTS {
            fail(
                "client.conns_per_instance",
                format!(
                    "{conns} pinned connections in all (fleet.instances x conns_per_instance) \
                     is over the limit of {MAX_SLOTS}"
                ),
            )?;
        }
    }
    if raw.engine.mode == EngineMode::Aggregate
        && matches!(client.connections, Connections::Pinned { .. })
    {
        fail(
            "client.connections",
            "\"pinned\" needs [engine] mode = \"exact\": the aggregate mode spreads a step's \
             requests over the serving workers (use \"pooled\" or \"close\")",
        )?;
    }
    if raw.engine.mode == EngineMode::Aggregate && fleet.accept != Accept::LongestIdle {
        fail(
            "fleet.accept",
            "only \"longest_idle\" in [engine] mode = \"aggregate\": it credits an \
             instance's requests to its serving workers in turn (use mode = \"exact\")",
        )?;
    }
    if raw.engine.mode == EngineMode::Aggregate && fleet.transient_mean_mb > 0.0 {
        fail(
            "fleet.leak.transient_mean_mb",
            "needs [engine] mode = \"exact\": the aggregate mode serves a step's requests \
             without drawing each one's working set",
        )?;
    }
    replace::engine_fits(raw)?;
    // The policy's memory checks see the pages a worker really shares.
    let shared = RawFleet {
        shared_mb: fleet.shared_mb,
        ..raw.fleet.clone()
    };
    let policy = policy(&raw.policy, &shared)?;
    let platform = platform::platform(&raw.platform, raw.fleet.instances, window)?;
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
        platform,
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
    megabytes("fleet.container_mb", f.container_mb)?;
    positive("fleet.boot_rss_mb", f.boot_rss_mb)?;
    megabytes("fleet.boot_rss_mb", f.boot_rss_mb)?;
    megabytes("fleet.shared_mb", f.shared_mb)?;
    if f.shared_mb > f.boot_rss_mb {
        fail(
            "fleet.shared_mb",
            format!(
                "{} MB shared is more than the {} MB a worker boots with",
                f.shared_mb, f.boot_rss_mb
            ),
        )?;
    }
    let memory = platform::memory(f)?;
    let booted =
        memory.master_mb + f.workers_per_instance as f64 * (f.boot_rss_mb - memory.shared_mb);
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
    megabytes("fleet.leak.mean_mb_per_request", l.mean_mb_per_request)?;
    non_negative("fleet.leak.cv", l.cv)?;
    if l.cv > MAX_LEAK_CV {
        fail(
            "fleet.leak.cv",
            format!(
                "{} is over {MAX_LEAK_CV}: past it the lognormal puts nearly every worker's \
                 leak at 0 and the mean in a few (the draw degenerates)",
                shown(l.cv)
            ),
        )?;
    }
    megabytes("fleet.leak.warmup_mb", l.warmup_mb)?;
    positive("fleet.leak.warmup_requests", l.warmup_requests)?;
    non_negative("fleet.leak.step_probability", l.step_probability)?;
    if l.step_probability > 1.0 {
        fail("fleet.leak.step_probability", "is a probability: at most 1")?;
    }
    megabytes("fleet.leak.step_mean_mb", l.step_mean_mb)?;
    megabytes("fleet.leak.transient_mean_mb", l.transient_mean_mb)?;
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
        shared_mb: memory.shared_mb,
        master_mb: memory.master_mb,
        cow: memory.cow,
        boot: duration("fleet.boot_s", f.boot_s)?,
        graceful_timeout: duration("fleet.graceful_timeout_s", f.graceful_timeout_s)?,
        kill: kill::kill(f)?,
        warm_start: f.warm_start,
        accept: f.accept,
        surge: surge(l.surge.as_ref(), f.container_mb)?,
        transient_mean_mb: l.transient_mean_mb,
        leak: LeakModel {
            velocity,
            warmup_mb: l.warmup_mb,
            warmup_rate: 1.0 - (-1.0 / l.warmup_requests).exp(),
            step_probability: l.step_probability,
            step_mean_mb: l.step_mean_mb,
        },
    })
}

/// The widest spread of leak velocities across workers (calibration fits
/// at most 4): the same bound as the surge lengths'.
const MAX_LEAK_CV: f64 = 10.0;

/// The most episodes a day: one a minute. More is a typo for a rate.
const MAX_SURGES_PER_DAY: f64 = 1440.0;
/// The widest spread of episode lengths: past this a lognormal's mean is
/// carried by a few episodes far longer than the run.
const MAX_DURATION_CV: f64 = 10.0;

/// `[fleet.leak.surge]`: `None` when absent or at 0 episodes a day (off:
/// the run is the one without the table, byte for byte).
fn surge(s: Option<&RawSurge>, container_mb: f64) -> Result<Option<Surge>, (String, String)> {
    let Some(s) = s else {
        return Ok(None);
    };
    let key = |k: &str| format!("fleet.leak.surge.{k}");
    non_negative(&key("episodes_per_day"), s.episodes_per_day)?;
    if s.episodes_per_day > MAX_SURGES_PER_DAY {
        fail(
            &key("episodes_per_day"),
            format!(
                "{} is over {MAX_SURGES_PER_DAY} a day (one a minute)",
                s.episodes_per_day
            ),
        )?;
    }
    positive_duration(&key("duration_s"), s.duration_s)?;
    non_negative(&key("duration_cv"), s.duration_cv)?;
    if s.duration_cv > MAX_DURATION_CV {
        fail(
            &key("duration_cv"),
            format!("{} is over {MAX_DURATION_CV}", s.duration_cv),
        )?;
    }
    positive(&key("mb_per_request"), s.mb_per_request)?;
    if s.mb_per_request > container_mb {
        fail(
            &key("mb_per_request"),
            format!(
                "{} MB per request is more than the {container_mb} MB container",
                s.mb_per_request
            ),
        )?;
    }
    // Above 0 MB, or `inf` for no bound: 0 is not "no bound", so a sweep
    // whose range reaches 0 means almost no surge there, not an unbounded one.
    let bound = s.max_mb_per_worker;
    if bound.is_nan() || bound <= 0.0 {
        fail(
            &key("max_mb_per_worker"),
            format!(
                "{bound} MB: the bound must be above 0 MB (leave the key out, or inf, for no bound)"
            ),
        )?;
    }
    if bound.is_finite() && bound > container_mb {
        fail(
            &key("max_mb_per_worker"),
            format!("{bound} MB is more than the {container_mb} MB container (inf = no bound)"),
        )?;
    }
    Ok((s.episodes_per_day > 0.0).then_some(Surge {
        episodes_per_day: s.episodes_per_day,
        duration_s: s.duration_s,
        duration_cv: s.duration_cv,
        mb_per_request: s.mb_per_request,
        max_mb_per_worker: bound,
    }))
}

fn workload(
    w: &RawWorkload,
    series: Option<Vec<(SimTime, f64)>>,
) -> Result<Workload, (String, String)> {
    // The diurnal keys are checked under every profile: a NaN or an hour
    // of 1e308 is a mistake even where the profile does not read it.
    finite("workload.peak_to_trough", w.peak_to_trough)?;
    if w.peak_to_trough < 1.0 {
        fail("workload.peak_to_trough", "must be >= 1 (peak over trough)")?;
    }
    hour("workload.peak_hour", w.peak_hour)?;
    hour("workload.start_hour", w.start_hour)?;
    let profile = match w.profile {
        ProfileKind::Constant => {
            positive("workload.rps", w.rps)?;
            RateProfile::Constant { rps: w.rps }
        }
        ProfileKind::Diurnal => {
            positive("workload.rps", w.rps)?;
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
    if profile.peak_rate() > MAX_RPS {
        let key = match w.profile {
            ProfileKind::Series => "workload.series_csv",
            _ => "workload.rps",
        };
        fail(
            key,
            format!(
                "a rate of {} requests/s is over {MAX_RPS:.0}: no fleet serves it, and no run could simulate it",
                shown(profile.peak_rate())
            ),
        )?;
    }
    if profile.peak_rate() <= 0.0 {
        fail("workload.rps", "the rate profile never sends a request")?;
    }
    positive("workload.service_mean_ms", w.service_mean_ms)?;
    // Service times are drawn without bound above (exponential, lognormal):
    // a mean of a day keeps every draw far from the clock's range; past it
    // a request's completion can overflow simulated time.
    if w.service_mean_ms > MAX_SERVICE_MEAN_MS {
        fail(
            "workload.service_mean_ms",
            format!(
                "{} ms is longer than a day ({MAX_SERVICE_MEAN_MS:.0} ms): no request is served that slowly",
                shown(w.service_mean_ms)
            ),
        )?;
    }
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
        connections: connections(c)?,
    })
}

fn connections(c: &RawClient) -> Result<Connections, (String, String)> {
    Ok(match c.connections {
        ConnectionsKind::Pooled => Connections::Pooled,
        ConnectionsKind::Close => Connections::Close,
        ConnectionsKind::Pinned => {
            count(
                "client.conns_per_instance",
                c.conns_per_instance,
                1,
                100_000,
            )?;
            let idle = |key: &str, s: f64| {
                if s == f64::INFINITY {
                    Ok(None)
                } else {
                    positive_duration(key, s).map(Some)
                }
            };
            Connections::Pinned {
                per_instance: c.conns_per_instance,
                server_keepalive: idle("client.server_keepalive_s", c.server_keepalive_s)?,
                client_idle_timeout: idle("client.client_idle_timeout_s", c.client_idle_timeout_s)?,
            }
        }
    })
}
