//! The replacement modes, each pinned on the rule the real system follows
//! and with a contrast where the mode is off, so each check can fail:
//! Passenger detaches at once and queues in its proxy (503 when full),
//! Granian hands over one worker at a time on a timer, puma_worker_killer's
//! rolling restart TERMs a master's workers 60 s apart on one clock,
//! uWSGI's master sleeps on respawn bursts, and a cold replacement serves
//! slower. Every run checks every invariant after every event (one
//! Granian handover per instance; its old worker serves until, and drains
//! only after, the interval).

mod common;

use common::{Rows, check, check_with, preset};
use fleetsim::Sim;
use fleetsim::metrics::{EventKind, EventRow, Summary};
use fleetsim::policy::Cause;
use fleetsim::scenario::Scenario;

fn run(sc: &Scenario, seed: u64) -> (Summary, Vec<EventRow>) {
    let mut rows = Rows::default();
    let out = Sim::new(sc, seed, &mut rows)
        .with_invariant_checks()
        .run()
        .unwrap_or_else(|e| panic!("{e}"));
    (out.summary, rows.0)
}

fn json(s: &Summary) -> serde_json::Value {
    serde_json::from_str(&s.to_json()).unwrap()
}

/// Workers that reach their limit within minutes, on a slow boot.
const FAST: [&str; 4] = [
    "fleet.leak.mean_mb_per_request=2",
    "fleet.leak.warmup_mb=0",
    "run.duration_h=3",
    "fleet.boot_s=10",
];

#[test]
fn passenger_detaches_at_once_and_spawns_beside_the_detached_process() {
    let mut sets = FAST.to_vec();
    let (s, _) = run(&preset("passenger-rolling", &sets), 1);
    assert!(s.recycles > 30, "{}", s.recycles);
    let j = json(&s);
    // Every recycle found a spare struct and forked beside the drain.
    assert_eq!(j["detached_spawns"].as_u64(), Some(s.recycles));
    // Detached at once: the slot serves nothing while the replacement
    // boots (10 s), so capacity dips; under spawn-then-exit the old worker
    // serves on until its successor is ready and the fleet never dips.
    assert!(s.min_serving_workers < 6, "{}", s.min_serving_workers);
    let lost = s.capacity_loss_fraction;
    sets.push("policy.replacement=spawn_then_exit");
    let (first, _) = run(&preset("passenger-rolling", &sets), 1);
    assert_eq!(first.min_serving_workers, 6);
    assert!(first.capacity_loss_fraction < lost / 10.0);
    // The mode's figures appear only under it.
    let j = json(&first);
    assert!(j.get("detached_spawns").is_none() && j.get("proxy_queue_503").is_none());
    // Exit-then-spawn leaves the slot empty for drain + boot, not boot only.
    // Long requests make the drain count.
    sets.pop();
    sets.extend([
        "workload.service_mean_ms=1500",
        "workload.service_p99_ms=6000",
    ]);
    let (detach, _) = run(&preset("passenger-rolling", &sets), 1);
    sets.push("policy.replacement=exit_then_spawn");
    let (exit_first, _) = run(&preset("passenger-rolling", &sets), 1);
    let per = |s: &Summary| s.capacity_loss_fraction / s.recycles as f64;
    assert!(
        per(&detach) < per(&exit_first),
        "detach {} vs exit-then-spawn {} per recycle",
        per(&detach),
        per(&exit_first)
    );
}

#[test]
fn passenger_answers_503_once_its_proxy_queue_is_full() {
    // A small proxy queue on a fleet that loses capacity at each recycle.
    let mut sets = FAST.to_vec();
    sets.extend([
        "workload.rps=12",
        "policy.detach_and_spawn.max_request_queue_size=3",
    ]);
    let (s, _) = run(&preset("passenger-rolling", &sets), 2);
    let j = json(&s);
    let full = j["proxy_queue_503"].as_u64().unwrap();
    assert!(full > 0, "the 3-request queue never filled");
    assert_eq!(full, s.requests_failed_backlog_full);
    // Unbounded (0): nothing is refused.
    sets.pop();
    sets.push("policy.detach_and_spawn.max_request_queue_size=0");
    let (s, _) = run(&preset("passenger-rolling", &sets), 2);
    assert_eq!(json(&s)["proxy_queue_503"].as_u64(), Some(0));
}

#[test]
fn granian_hands_over_one_worker_at_a_time_on_its_timer() {
    // All three workers of an instance cross the limit close together:
    // the second and third wait for the first handover to finish.
    let sets = [
        "fleet.leak.mean_mb_per_request=2",
        "fleet.leak.cv=0",
        "fleet.leak.warmup_mb=0",
        "fleet.warm_start=false",
        "run.duration_h=2",
    ];
    let sc = preset("granian-max-rss", &sets);
    let (s, rows) = run(&sc, 3);
    let j = json(&s);
    let handovers = j["handovers"].as_u64().unwrap();
    let waited = j["handovers_waited"].as_u64().unwrap();
    assert!(waited > 0, "no handover ever waited its turn");
    assert!(j["handover_wait_s_max"].as_f64().unwrap() > 0.0);
    // Every granted recycle is handed over, bar those still queued at
    // the end (at most two per instance).
    assert!(handovers <= s.recycles && s.recycles - handovers <= 4);
    let recycled = rows
        .iter()
        .filter(|r| r.kind == EventKind::WorkerRecycled)
        .count() as u64;
    assert_eq!(recycled, s.recycles);
    // Spawn-then-exit hands over on readiness, every worker at once.
    let mut other = sets.to_vec();
    other.push("policy.replacement=spawn_then_exit");
    let (o, _) = run(&preset("granian-max-rss", &other), 3);
    assert!(json(&o).get("handovers").is_none());
}

#[test]
fn granian_terminates_the_old_worker_before_a_slow_successor_is_ready() {
    // Boot (10 s) longer than the interval (3.5 s): the server is a worker
    // short until the successor is ready; on readiness it never is.
    // Per-worker sampling phases: with the preset's one watcher, two
    // workers found over the limit together can both fork a successor and
    // OOM-kill one (seed 4: one kill, 5 serving), which is not what this
    // checks.
    let mut sets = FAST.to_vec();
    sets.push("policy.sample_clock=per_worker");
    let (s, _) = run(&preset("granian-max-rss", &sets), 4);
    assert!(s.recycles > 20);
    assert!(s.min_serving_workers < 6);
    sets.push("policy.replacement=spawn_then_exit");
    let (o, _) = run(&preset("granian-max-rss", &sets), 4);
    assert_eq!(o.min_serving_workers, 6);
    // A 0 s interval terminates the old worker at the successor's fork.
    sets.pop();
    sets.push("policy.timed_handover.respawn_interval_s=0");
    let (z, _) = run(&preset("granian-max-rss", &sets), 4);
    assert!(z.capacity_loss_fraction > s.capacity_loss_fraction);
}

/// The rolling restart's TERMs, per instance, in time order.
fn lifetime_times(rows: &[EventRow], instances: u32) -> Vec<Vec<u64>> {
    (0..instances)
        .map(|i| {
            rows.iter()
                .filter(|r| r.kind == EventKind::WorkerRecycled && r.instance == i)
                .filter(|r| r.decision.as_ref().and_then(|d| d.cause) == Some(Cause::Lifetime))
                .map(|r| r.t.0)
                .collect()
        })
        .collect()
}

const SECOND: u64 = 1_000_000;
const MINUTE: u64 = 60 * SECOND;

#[test]
fn puma_rolling_restart_terms_each_master_s_workers_60_s_apart() {
    let sets = [
        "run.duration_h=24",
        "policy.instance_memory.enabled=false",
        "fleet.leak.mean_mb_per_request=0",
        "fleet.leak.warmup_mb=0",
        "fleet.leak.step_probability=0",
    ];
    let sc = preset("puma-worker-killer", &sets);
    let (s, rows) = run(&sc, 5);
    let j = json(&s);
    let per = lifetime_times(&rows, 2);
    let mut starts = Vec::new();
    for times in &per {
        assert!(times.len() >= 9, "{times:?}");
        // Cycles of three TERMs 60 s apart, one master period between.
        for c in times.chunks(3) {
            if c.len() == 3 {
                assert_eq!(c[1] - c[0], MINUTE, "{times:?}");
                assert_eq!(c[2] - c[1], MINUTE, "{times:?}");
            }
        }
        let periods: Vec<u64> = times.chunks(3).map(|c| c[0]).collect();
        let gaps: Vec<u64> = periods.windows(2).map(|p| p[1] - p[0]).collect();
        // frequency + splay (drawn once) + three 60 s sleeps.
        assert!(gaps.iter().all(|g| *g == gaps[0]), "{gaps:?}");
        assert!(
            (21780 * SECOND..22080 * SECOND).contains(&gaps[0]),
            "{gaps:?}"
        );
        starts.push(periods[0]);
    }
    assert_ne!(starts[0], starts[1], "the masters' clocks are independent");
    let terms = j["rolling_restart_terms"].as_u64().unwrap();
    assert_eq!(terms as usize, per[0].len() + per[1].len());
    assert_eq!(s.count("recycles_lifetime"), terms);
    // The old per-worker lifetime gives no such rhythm.
    let old = [
        "policy.rolling_restart.enabled=false",
        "policy.lifetime.enabled=true",
        "policy.lifetime.max_s=21600",
        "policy.lifetime.jitter_s=300",
    ];
    let mut with_old = sets.to_vec();
    with_old.extend(old);
    let (_, rows) = run(&preset("puma-worker-killer", &with_old), 5);
    let per = lifetime_times(&rows, 2);
    let sixty = per
        .iter()
        .flat_map(|t| t.windows(2).map(|w| w[1] - w[0]))
        .filter(|g| *g == MINUTE)
        .count();
    assert_eq!(sixty, 0);
}

#[test]
fn puma_rolling_restart_terms_the_smallest_worker_first() {
    let sets = [
        "run.duration_h=7",
        "policy.instance_memory.enabled=false",
        "fleet.warm_start=true",
    ];
    let (_, rows) = run(&preset("puma-worker-killer", &sets), 6);
    let firsts: Vec<&EventRow> = rows
        .iter()
        .filter(|r| r.kind == EventKind::WorkerRecycled)
        .collect();
    assert!(!firsts.is_empty());
    for i in 0..2 {
        let cycle: Vec<f64> = firsts
            .iter()
            .filter(|r| r.instance == i)
            .take(3)
            .map(|r| r.worker.as_ref().unwrap().rss_mb)
            .collect();
        // RSS read at the cycle's start, TERMed over two minutes of growth:
        // the first TERMed is the smallest of the three at its own TERM.
        assert_eq!(cycle.len(), 3);
        assert!(cycle[0] <= cycle[1] && cycle[0] <= cycle[2], "{cycle:?}");
    }
}

#[test]
fn uwsgi_master_sleeps_on_a_respawn_burst() {
    // Every worker exits after 2 requests: respawns come faster than one
    // per worker per second.
    let sets = [
        "run.duration_h=1",
        "workload.rps=60",
        "policy.min_worker_age_s=0",
        "policy.max_requests.requests=2",
        "policy.max_requests.jitter_requests=0",
        "fleet.boot_s=0.2",
    ];
    let (s, _) = run(&preset("uwsgi-reload-on-rss", &sets), 7);
    let j = json(&s);
    let sleeps = j["forkbomb_sleeps"].as_u64().unwrap();
    assert!(sleeps > 10, "{sleeps}");
    assert!(j["forkbomb_delayed_respawns"].as_u64().unwrap() >= sleeps);
    let mut off = sets.to_vec();
    off.push("policy.forkbomb.enabled=false");
    let (o, _) = run(&preset("uwsgi-reload-on-rss", &off), 7);
    assert!(json(&o).get("forkbomb_sleeps").is_none());
    // Each sleep holds a respawn 2 s: capacity the guard costs.
    assert!(s.capacity_loss_fraction > o.capacity_loss_fraction);
    // The shipped preset: recycles far apart, the guard never fires.
    let (p, _) = run(&preset("uwsgi-reload-on-rss", &["run.duration_h=6"]), 1);
    assert_eq!(json(&p)["forkbomb_sleeps"].as_u64(), Some(0));
}

#[test]
fn a_cold_replacement_serves_its_first_requests_slower() {
    let base = ["run.duration_h=6"];
    let warm = check(&base, 8);
    let cold_sets = [
        "run.duration_h=6",
        "fleet.cold_start.factor=4",
        "fleet.cold_start.requests=20",
    ];
    let cold = check(&cold_sets, 8);
    let j = json(&cold);
    let n = j["cold_start_requests"].as_u64().unwrap();
    assert!(n > 0 && n <= 20 * cold.recycles.max(1) + 20 * 6, "{n}");
    assert!(cold.latency_ms_p99 > warm.latency_ms_p99);
    // Off (factor 1): the same bytes as a scenario without the table.
    let off = check(&["run.duration_h=6", "fleet.cold_start.requests=20"], 8);
    assert_eq!(off.to_json(), warm.to_json());
    assert!(json(&warm).get("cold_start_requests").is_none());
    // By time: the first 30 s serving.
    let timed = check(
        &[
            "run.duration_h=6",
            "fleet.cold_start.factor=4",
            "fleet.cold_start.duration_s=30",
        ],
        8,
    );
    assert!(json(&timed)["cold_start_requests"].as_u64().unwrap() > 0);
}

#[test]
fn the_modes_run_under_the_aggregate_engine_or_are_refused_by_name() {
    let s = check(
        &[
            "engine.mode=aggregate",
            "run.duration_h=12",
            "policy.rolling_restart.enabled=true",
            "policy.rolling_restart.frequency_s=3600",
            "policy.forkbomb.enabled=true",
        ],
        9,
    );
    assert!(json(&s)["rolling_restart_terms"].as_u64().unwrap() > 0);
    for (set, key) in [
        ("policy.replacement=timed_handover", "policy.replacement"),
        ("policy.replacement=detach_and_spawn", "policy.replacement"),
        ("fleet.cold_start.factor=2", "fleet.cold_start.factor"),
    ] {
        let e = common::try_scenario(&["engine.mode=aggregate", set]).unwrap_err();
        assert_eq!(e.key.as_deref(), Some(key), "{e}");
    }
    let e = common::try_scenario(&[
        "policy.forkbomb.enabled=true",
        "policy.replacement=spawn_then_exit",
    ])
    .unwrap_err();
    assert_eq!(e.key.as_deref(), Some("policy.forkbomb.enabled"));
    let e = common::try_scenario(&["fleet.cold_start.factor=0.5"]).unwrap_err();
    assert!(e.to_string().contains("fleet.cold_start.factor"), "{e}");
}

#[test]
fn scenario_show_lists_every_mode_key() {
    let dir = common::TempDir::new("replace-show");
    let out = common::ok(dir.path(), &["scenario", "show"]);
    for key in [
        "replacement = \"exit_then_spawn\"",
        "[policy.detach_and_spawn]",
        "max_request_queue_size = 100",
        "[policy.timed_handover]",
        "respawn_interval_s = 3.5",
        "[policy.rolling_restart]",
        "interval_s = 60.0",
        "[policy.forkbomb]",
        "delay_s = 2.0",
        "[fleet.cold_start]",
        "factor = 1.0",
    ] {
        assert!(
            out.contains(key),
            "`{key}` missing from scenario show:\n{out}"
        );
    }
}

#[test]
fn every_mode_with_its_default_off_leaves_the_default_s_bytes() {
    let plain = check_with(&["run.duration_h=4"], 1, fleetsim::metrics::NullObserver);
    let named = check(
        &[
            "run.duration_h=4",
            "policy.timed_handover.respawn_interval_s=9",
            "policy.detach_and_spawn.max_request_queue_size=7",
            "policy.rolling_restart.frequency_s=60",
            "policy.forkbomb.delay_s=9",
        ],
        1,
    );
    assert_eq!(plain.to_json(), named.to_json());
}

#[test]
fn the_modes_keep_every_invariant_beside_the_other_mechanisms() {
    // Fast churn, with what interacts with a replacement: concurrency,
    // pinned connections, whole-container OOM kills, reload waves.
    let churn = [
        "run.duration_h=3",
        "fleet.leak.mean_mb_per_request=3",
        "fleet.leak.warmup_mb=0",
        "workload.rps=8",
        "policy.cooldown_s=0",
        "policy.pressure_cooldown_s=0",
        "policy.lease.enabled=false",
        "policy.busy_deferral=false",
    ];
    let cases: &[&[&str]] = &[
        &[
            "policy.replacement=timed_handover",
            "fleet.concurrency=2",
            "client.connections=pinned",
            "platform.reload=[{at_s = 3600.5}, {at_s = 3601.0}]",
        ],
        &[
            "policy.replacement=timed_handover",
            "platform.oom_group=true",
            "fleet.boot_s=6",
        ],
        &[
            "policy.replacement=detach_and_spawn",
            "policy.detach_and_spawn.max_request_queue_size=1",
            "client.connections=pinned",
            "platform.oom_group=true",
        ],
        &[
            "policy.forkbomb.enabled=true",
            "policy.max_requests.enabled=true",
            "policy.max_requests.requests=3",
            "platform.oom_group=true",
            "platform.reload=[{at_s = 1800.5}]",
        ],
        &[
            "policy.rolling_restart.enabled=true",
            "policy.rolling_restart.frequency_s=600",
            "policy.rolling_restart.interval_s=5",
            "platform.oom_group=true",
            "fleet.cold_start.factor=5",
            "fleet.cold_start.duration_s=20",
        ],
    ];
    for extra in cases {
        let mut sets = churn.to_vec();
        sets.extend_from_slice(extra);
        for seed in 1..=3 {
            let s = check(&sets, seed);
            assert!(s.recycles > 0, "{extra:?} seed {seed}");
        }
    }
}
