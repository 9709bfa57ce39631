//! What defines each real recycler's preset, pinned on its own runs: not a
//! recycle count but the rule the real system follows (uWSGI never reloads
//! a worker younger than `min-worker-lifetime`; its evil reload kills
//! mid-request; Leakless's cooldown never holds; PHP-FPM's children age
//! together...). Each check also runs a contrast where the rule is off, so
//! it could fail.

mod common;

use common::{Rows, preset};
use fleetsim::Sim;
use fleetsim::engine::SimTime;
use fleetsim::metrics::{EventKind, EventRow, Metrics, Summary};
use fleetsim::policy::Cause;
use fleetsim::scenario::{Scenario, load, parse_override};
use std::path::Path;

fn run(sc: &Scenario, seed: u64) -> (Summary, Metrics, Vec<EventRow>) {
    let mut rows = Rows::default();
    let out = Sim::new(sc, seed, &mut rows)
        .with_invariant_checks()
        .run()
        .unwrap();
    (out.summary, out.metrics, rows.0)
}

/// A leak fast enough that workers reach reload-on-rss within seconds of
/// their fork, so `min-worker-lifetime` has young workers to hold.
const FAST_LEAK: [&str; 4] = [
    "fleet.leak.mean_mb_per_request=30",
    "fleet.leak.warmup_mb=0",
    "workload.rps=6",
    "run.duration_h=2",
];

#[test]
fn uwsgi_never_reloads_a_worker_younger_than_min_worker_lifetime() {
    let (s, m, _) = run(&preset("uwsgi-reload-on-rss", &FAST_LEAK), 1);
    assert!(m.recycles.len() > 50, "{}", m.recycles.len());
    assert!(
        s.count("holds_too_young") > 0,
        "the 10 s lifetime never held"
    );
    let youngest = m.recycles.iter().map(|r| r.age).min().unwrap();
    assert!(youngest >= SimTime::from_secs(10), "{youngest:?}");
    // Without min-worker-lifetime the same fleet reloads younger workers.
    let mut off = FAST_LEAK.to_vec();
    off.push("policy.min_worker_age_s=0");
    let (_, m, _) = run(&preset("uwsgi-reload-on-rss", &off), 1);
    assert!(m.recycles.iter().any(|r| r.age < SimTime::from_secs(10)));
}

#[test]
fn uwsgi_mercy_is_60_s_and_the_collector_reads_every_3_s() {
    let sc = preset("uwsgi-reload-on-rss", &[]);
    assert_eq!(
        sc.fleet.kill.drain,
        fleetsim::scenario::DrainDeadline::Mercy(SimTime::from_secs(60))
    );
    let evil = sc.policy.triggers.evil_rss.as_ref().unwrap();
    assert_eq!(evil.collector_interval, SimTime::from_secs(3));
    assert_eq!(evil.limit_mb, 650.0);
}

/// uWSGI's evil reload is the master's SIGKILL on the memory thread's
/// reading: it resets what the worker is serving, counted apart.
#[test]
fn uwsgi_evil_reload_kills_mid_request_and_counts_it_apart() {
    // Evil only (no reload-on-rss), long requests: a kill often finds one.
    let sets = [
        "policy.rss_trigger=false",
        "policy.max_requests.enabled=false",
        "policy.evil_rss.limit_mb=450",
        "workload.service_mean_ms=2000",
        "workload.service_p99_ms=6000",
        "workload.rps=0.9",
        "run.duration_h=6",
    ];
    let (s, _, rows) = run(&preset("uwsgi-reload-on-rss", &sets), 2);
    assert!(s.evil_kills > 10, "{}", s.evil_kills);
    assert_eq!(s.recycles, 0, "an evil kill is no recycle");
    let killed = s.evil_kill_requests.expect("the evil trigger is on");
    let branch = |r: &EventRow| r.decision.map(|d| d.branch.to_string());
    let evil: Vec<_> = rows
        .iter()
        .filter(|r| r.kind == EventKind::EvilKill)
        .collect();
    let hit = evil
        .iter()
        .filter(|r| branch(r).as_deref() == Some("evil_kill_in_flight"))
        .count() as u64;
    assert_eq!(evil.len() as u64, s.evil_kills);
    // One slot per worker (concurrency 1): one request per kill that hit one.
    assert!(hit > 0 && hit < s.evil_kills, "{hit} of {}", s.evil_kills);
    assert_eq!(killed, hit);
    assert!(s.requests_reset >= killed);
    assert!(
        evil.iter()
            .all(|r| r.decision.unwrap().cause == Some(Cause::EvilRss))
    );
    assert!(evil.iter().all(|r| r.worker.unwrap().rss_mb >= 450.0));
    // Without the evil trigger the summary has no such field.
    let (s, _, _) = run(&preset("render-2x3", &["run.duration_h=1"]), 2);
    assert_eq!(s.evil_kill_requests, None);
    assert!(!s.to_json().contains("evil_kill_requests"));
}

#[test]
fn leakless_cooldown_never_holds() {
    let (s, m, _) = run(&preset("leakless", &[]), 1);
    assert!(s.count("recycles_drift") > 0);
    assert_eq!(s.counters.holds_total(), 0, "{s:?}");
    // Recycles of one instance less than Leakless's 10 s apart: an
    // instance cooldown would have held the second.
    let mut by_instance = m.recycles.clone();
    by_instance.sort_by_key(|r| (r.instance, r.t));
    let close = by_instance
        .windows(2)
        .any(|p| p[0].instance == p[1].instance && p[1].t - p[0].t < SimTime::from_secs(10));
    assert!(close, "no two recycles of an instance within 10 s");
    // The old model (an instance cooldown of 10 s) held workers.
    let (s, _, _) = run(
        &preset(
            "leakless",
            &["policy.cooldown_s=10", "policy.pressure_cooldown_s=10"],
        ),
        1,
    );
    assert!(s.count("holds_cooldown") > 0);
}

#[test]
fn leakless_drift_limits_are_whole_mb_within_6_of_64() {
    let sc = preset("leakless", &[]);
    let d = sc.policy.triggers.drift.as_ref().unwrap();
    for k in 0..1000 {
        let l = d.limit(k as f64 / 1000.0);
        assert!((58.0..=70.0).contains(&l) && l.fract() == 0.0, "{l}");
    }
}

#[test]
fn php_fpm_children_start_and_age_together() {
    let sc = preset("php-fpm-max-requests", &[]);
    assert!(!sc.fleet.warm_start);
    let (_, m, _) = run(&sc, 1);
    let first_life = |ms: &Metrics, i: u32| -> Vec<SimTime> {
        ms.recycles
            .iter()
            .filter(|r| r.instance == i)
            .take(3)
            .map(|r| r.t)
            .collect()
    };
    for i in 0..2 {
        let ts = first_life(&m, i);
        let spread = *ts.iter().max().unwrap() - *ts.iter().min().unwrap();
        // Three children, 500 requests each, shared round-robin: their first
        // recycles come within a small part of a life of each other.
        assert!(spread.0 * 5 < ts[0].0, "instance {i}: {ts:?}");
    }
    assert!(m.recycles.iter().all(|r| r.requests == 500));
    // A warm fleet (random ages) does not.
    let (_, m, _) = run(
        &preset("php-fpm-max-requests", &["fleet.warm_start=true"]),
        1,
    );
    let ts = first_life(&m, 0);
    let spread = *ts.iter().max().unwrap() - *ts.iter().min().unwrap();
    assert!(spread.0 * 5 >= ts[0].0, "{ts:?}");
}

#[test]
fn puma_worker_killer_terms_the_largest_worker_only_over_99_percent() {
    let sc = preset("puma-worker-killer", &[]);
    let im = sc.policy.triggers.instance_memory.as_ref().unwrap();
    assert_eq!(
        (im.percent_usage, im.frequency),
        (0.99, SimTime::from_secs(10))
    );
    let (s, m, rows) = run(&sc, 1);
    assert!(s.count("recycles_instance_memory") > 0);
    let container = sc.fleet.container_mb;
    // It reads master + workers' RSS: shared pages once per process, so it
    // fires with up to shared_mb per worker of the cgroup's headroom left.
    let per_process = sc.fleet.workers_per_instance as f64 * sc.fleet.shared_mb;
    let headrooms: Vec<f64> = rows
        .iter()
        .filter(|r| r.kind == EventKind::WorkerRecycled)
        .map(|r| r.decision.unwrap())
        .filter(|d| d.cause == Some(Cause::InstanceMemory))
        .map(|d| d.headroom_mb)
        .collect();
    assert!(
        headrooms
            .iter()
            .all(|h| *h < 0.01 * container + per_process)
    );
    assert!(
        headrooms.iter().any(|h| *h >= 0.01 * container),
        "{headrooms:?}"
    );
    // Reading the cgroup instead, it fires only with under 1% left.
    let (_, _, rows) = run(
        &preset(
            "puma-worker-killer",
            &["policy.instance_memory.measure=cgroup"],
        ),
        1,
    );
    for r in rows.iter().filter(|r| r.kind == EventKind::WorkerRecycled) {
        let d = r.decision.unwrap();
        if d.cause == Some(Cause::InstanceMemory) {
            assert!(d.headroom_mb < 0.01 * container, "{}", d.headroom_mb);
        }
    }
    // Rolling restarts: one clock per master, every 6 h + a splay drawn
    // once, TERMing each worker 60 s apart (the rhythm is pinned in
    // tests/replacement_modes.rs); each TERM asks as the lifetime trigger.
    let j: serde_json::Value = serde_json::from_str(&s.to_json()).unwrap();
    let terms = j["rolling_restart_terms"].as_u64().unwrap();
    let lifetimes = m
        .recycles
        .iter()
        .filter(|r| r.cause == Cause::Lifetime)
        .count() as u64;
    assert!(
        lifetimes > 0 && lifetimes <= terms,
        "{lifetimes} of {terms}"
    );
    assert!(j["rolling_restart_cycles"].as_u64().unwrap() >= 2 * 3);
}

#[test]
fn unicorn_worker_killer_limits_are_1_to_2_gib_checked_every_16_requests() {
    let sc = preset("unicorn-worker-killer", &[]);
    let (s, m, rows) = run(&sc, 1);
    for r in &rows {
        if let Some(w) = r.worker {
            assert!((1024.0..2048.0).contains(&w.limit_mb), "{}", w.limit_mb);
        }
    }
    // On the seeds' 2 GiB fleet the request limit recycles first; each
    // served 3072-4096 requests (a warm worker counts what it served).
    assert!(s.count("recycles_max_requests") > 0);
    for r in m.recycles.iter().filter(|r| r.cause == Cause::MaxRequests) {
        assert!((3072..=4096).contains(&r.requests), "{}", r.requests);
    }
    // The memory check runs on every 16th request only.
    for r in m.recycles.iter().filter(|r| r.cause == Cause::RssLimit) {
        assert_eq!(r.requests % 16, 0, "{}", r.requests);
    }
}

/// Passenger compares private dirty + swap with its limit, not RSS: a
/// worker goes only once its private pages pass 500 MB.
#[test]
fn passenger_limits_private_memory_not_rss() {
    let sc = preset("passenger-rolling", &[]);
    let shared = sc.fleet.shared_mb;
    let (s, m, _) = run(&sc, 1);
    assert!(s.count("recycles_rss_limit") > 0);
    for r in &m.recycles {
        assert!(r.rss_mb - shared >= 500.0, "rss {}", r.rss_mb);
        assert!(r.margin_mb >= 0.0);
    }
    // By RSS the same limit lets workers go 135 MB earlier: more recycles.
    let (s_rss, m_rss, _) = run(&preset("passenger-rolling", &["policy.rss_measure=rss"]), 1);
    assert!(m_rss.recycles.iter().any(|r| r.rss_mb - shared < 500.0));
    assert!(
        s_rss.recycles > 2 * s.recycles,
        "{} vs {}",
        s_rss.recycles,
        s.recycles
    );
}

#[test]
fn granian_respawns_on_one_sample_over_the_limit() {
    let sc = preset("granian-max-rss", &[]);
    assert_eq!(sc.policy.triggers.rss_consecutive_samples, 1);
    let (_, m, _) = run(&sc, 1);
    // One 30 s sample over 500 MB is enough: the lowest margin at recycle is
    // what one sample interval of growth gives, and three samples (the old
    // preset) leave workers over the limit longer.
    let (_, m3, _) = run(
        &preset("granian-max-rss", &["policy.rss_consecutive_samples=3"]),
        1,
    );
    let mean =
        |m: &Metrics| m.recycles.iter().map(|r| r.margin_mb).sum::<f64>() / m.recycles.len() as f64;
    assert!(mean(&m) < mean(&m3), "{} vs {}", mean(&m), mean(&m3));
}

/// uvicorn alone: each worker's limit is 1000 + randint(0, 100), drawn once
/// per process, and nothing is preloaded (workers are spawned, not forked
/// from a loaded master). The undici client drops a connection idle for
/// 4 s, before uvicorn's 5 s keep-alive closes it: without that, nearly
/// every request on an idle connection races the server's close.
#[test]
fn uvicorn_limits_requests_per_process_and_its_client_outlasts_no_idle_close() {
    let sc = preset("uvicorn-max-requests", &[]);
    // No preload: nothing shared with the master, which holds only its own 30 MB.
    assert_eq!((sc.fleet.shared_mb, sc.fleet.master_mb), (0.0, 30.0));
    let (s, m, _) = run(&sc, 1);
    assert!(m.recycles.len() > 20);
    let requests: Vec<u64> = m.recycles.iter().map(|r| r.requests).collect();
    assert!(
        requests.iter().all(|&n| (1000..=1100).contains(&n)),
        "{requests:?}"
    );
    // The jitter spreads the limits over the whole range.
    let (lo, hi) = (
        requests.iter().min().unwrap(),
        requests.iter().max().unwrap(),
    );
    assert!(hi - lo > 60, "{lo}..{hi}");
    // The client's own idle timeout is what keeps the idle race away.
    let (s_race, _, _) = run(
        &preset(
            "uvicorn-max-requests",
            &["client.client_idle_timeout_s=inf"],
        ),
        1,
    );
    assert!(
        s_race.retry_ok > 100 * (s.retry_ok + 1),
        "{} vs {}",
        s_race.retry_ok,
        s.retry_ok
    );
}

/// Octane on RoadRunner: 500 + 500 x (0..14) / 100 requests, and a proxy
/// that owns every client connection, so a recycle resets nothing.
#[test]
fn octane_roadrunner_jitters_up_to_14_percent_and_resets_nothing() {
    let sc = preset("octane-roadrunner", &[]);
    let (s, m, _) = run(&sc, 1);
    assert!(m.recycles.len() > 50);
    assert!(m.recycles.iter().all(|r| (500..=570).contains(&r.requests)));
    assert_eq!(s.retry_ok + s.fetch_failed, 0);
    // The same fleet with the seeds' pooled keep-alive client resets.
    let (pooled, _, _) = run(
        &preset("octane-roadrunner", &["client.connections=pooled"]),
        1,
    );
    assert!(pooled.retry_ok > 0);
}

/// Celery reads the child's peak RSS (`ru_maxrss`) after every task: a
/// task's working set, freed after it, still counts. With transient working
/// sets, children go while their RSS is below the limit; by RSS now (the
/// contrast) they would not.
#[test]
fn celery_recycles_on_the_peak_not_on_rss_now() {
    let sets = ["fleet.leak.transient_mean_mb=20"];
    let sc = preset("celery-max-memory", &sets);
    let (s, m, _) = run(&sc, 1);
    assert!(m.recycles.len() > 100);
    // The margin is the peak's over the limit: never negative.
    assert!(m.recycles.iter().all(|r| r.margin_mb >= 0.0));
    let below = m.recycles.iter().filter(|r| r.rss_mb < 500.0).count();
    assert!(
        below * 2 > m.recycles.len(),
        "{below} of {}",
        m.recycles.len()
    );
    let (s_rss, m_rss, _) = run(
        &preset("celery-max-memory", &[sets[0], "policy.rss_measure=rss"]),
        1,
    );
    assert!(m_rss.recycles.iter().all(|r| r.rss_mb >= 500.0));
    assert!(
        s.recycles > 3 * s_rss.recycles,
        "{} vs {}",
        s.recycles,
        s_rss.recycles
    );
    // Without transients the peak is the RSS (it never falls here).
    let (_, m0, _) = run(&preset("celery-max-memory", &[]), 1);
    assert!(m0.recycles.iter().all(|r| r.rss_mb >= 500.0));
}

#[test]
fn transient_working_sets_are_refused_where_they_cannot_be_drawn() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("scenarios");
    let path = dir.join("celery-max-memory.toml");
    let text = std::fs::read_to_string(&path).unwrap();
    let mut read = |rel: &str| std::fs::read_to_string(dir.join(rel)).map_err(|e| e.to_string());
    for (sets, says) in [
        (
            vec!["fleet.leak.transient_mean_mb=20", "engine.mode=aggregate"],
            "needs [engine] mode = \"exact\"",
        ),
        (
            vec!["fleet.leak.transient_mean_mb=-1"],
            "fleet.leak.transient_mean_mb",
        ),
    ] {
        let sets: Vec<_> = sets.iter().map(|s| parse_override(s).unwrap()).collect();
        let e = load(&text, "celery.toml", &sets, &mut read)
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("fleet.leak.transient_mean_mb") && e.contains(says),
            "{e}"
        );
    }
}
