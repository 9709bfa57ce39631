//! Every invariant holds after every event across a table of scenarios
//! that each push one mechanism, and across random valid scenarios
//! (proptest, in the spirit of TigerBeetle's VOPR). Each table row also
//! asserts that the mechanism it targets actually fired: a scenario that
//! never reaches its code path would pass vacuously.

mod common;

use common::{Recorder, check, check_with, try_scenario};
use fleetsim::metrics::Summary;
use proptest::prelude::*;

/// One row: a name, overrides of the default, and what must have happened.
struct Row {
    name: &'static str,
    sets: &'static [&'static str],
    fired: fn(&Summary) -> bool,
}

/// Heavy traffic on the default fleet: 6 sync workers, ~0.75 busy each.
const BUSY: &[&str] = &[
    "workload.profile=constant",
    "workload.rps=30",
    "workload.service=exponential",
    "workload.service_mean_ms=150",
    "run.duration_h=2",
];

fn busy(extra: &'static [&'static str]) -> Vec<&'static str> {
    BUSY.iter().chain(extra).copied().collect()
}

const ROWS: &[Row] = &[
    Row {
        name: "the default (the seeds' fleet, 24 h)",
        sets: &[],
        fired: |s| s.recycles > 50 && s.retry_ok > 0 && s.count("holds_lease_held") > 0,
    },
    Row {
        name: "high rate: 20 rps for 3 h",
        sets: &["workload.rps=20", "run.duration_h=3"],
        fired: |s| s.requests_total > 150_000 && s.recycles_per_hour > 20.0,
    },
    Row {
        name: "concurrency 4: 12 erlangs on 6 workers x 4 slots",
        sets: &[
            "fleet.concurrency=4",
            "workload.profile=constant",
            "workload.rps=40",
            "workload.service=exponential",
            "workload.service_mean_ms=300",
            "run.duration_h=2",
        ],
        // Sync workers would be overloaded (rho 2) and fail en masse; with
        // four slots each the fleet keeps up with little waiting.
        fired: |s| {
            s.requests_failed_backlog_full + s.requests_failed_timeout == 0
                && s.wait_ms_mean.unwrap() < 50.0
                && s.recycles > 0
        },
    },
    Row {
        name: "sampling every 50 requests (no timer)",
        sets: &["policy.sampling=requests", "run.duration_h=12"],
        fired: |s| s.recycles > 20,
    },
    Row {
        name: "OOM-heavy: limits above what the cgroup holds",
        sets: &[
            "fleet.container_mb=1400",
            "policy.base_limit_mb=700",
            "policy.hard_limit_mb=800",
            "run.duration_h=12",
        ],
        fired: |s| s.oom_kills > 10 && s.requests_reset > 0,
    },
    Row {
        name: "balancer round_robin",
        sets: &["workload.balancer=round_robin", "run.duration_h=6"],
        fired: |s| s.recycles > 0,
    },
    Row {
        name: "balancer least_outstanding",
        sets: &["workload.balancer=least_outstanding", "run.duration_h=6"],
        fired: |s| s.recycles > 0,
    },
    Row {
        name: "balancer random",
        sets: &["workload.balancer=random", "run.duration_h=6"],
        fired: |s| s.recycles > 0,
    },
    Row {
        name: "accept random, two requests a worker",
        sets: &[
            "fleet.accept=random",
            "fleet.concurrency=2",
            "workload.rps=3",
            "run.duration_h=6",
        ],
        fired: |s| s.recycles > 0,
    },
    Row {
        name: "accept most_recent",
        sets: &["fleet.accept=most_recent", "run.duration_h=6"],
        fired: |s| s.recycles > 0,
    },
    Row {
        name: "accept first",
        sets: &["fleet.accept=first", "run.duration_h=6"],
        fired: |s| s.recycles > 0,
    },
    Row {
        name: "lease disabled",
        sets: &["policy.lease.enabled=false", "run.duration_h=12"],
        fired: |s| {
            s.recycles > 20
                && s.count("lease_acquired")
                    + s.count("lease_bypass_pressure")
                    + s.count("lease_bypass_hard_ceiling")
                    == 0
                && s.count("holds_lease_held") == 0
        },
    },
    Row {
        name: "long services against a short graceful timeout: drain kills",
        sets: &[
            "workload.service=exponential",
            "workload.service_mean_ms=20000",
            "workload.rps=0.25",
            "fleet.graceful_timeout_s=2",
            "fleet.kill.drain_ends=graceful_timeout",
            "fleet.leak.mean_mb_per_request=3",
            "run.duration_h=12",
        ],
        fired: |s| s.drain_kills > 0 && s.requests_reset > 0,
    },
    Row {
        name: "no backlog: 503s",
        sets: &[
            "workload.backlog_requests=0",
            "workload.profile=constant",
            "workload.rps=30",
            "workload.service=exponential",
            "workload.service_mean_ms=150",
            "run.duration_h=2",
        ],
        fired: |s| s.requests_failed_backlog_full > 0 && s.requests_failed_timeout == 0,
    },
    Row {
        name: "short queue timeout: 504s",
        sets: &[
            "workload.queue_timeout_s=0.2",
            "workload.profile=constant",
            "workload.rps=30",
            "workload.service=exponential",
            "workload.service_mean_ms=150",
            "run.duration_h=2",
        ],
        fired: |s| s.requests_failed_timeout > 0 && s.requests_failed_backlog_full == 0,
    },
    Row {
        name: "no client retries: every reset is a fetch_failed",
        sets: &["client.retries=0", "run.duration_h=12"],
        fired: |s| s.requests_reset > 0 && s.retry_ok == 0 && s.fetch_failed == s.requests_reset,
    },
    Row {
        name: "three retries",
        sets: &[
            "client.retries=3",
            "client.stale_window_s=30",
            "run.duration_h=12",
        ],
        fired: |s| s.retry_ok > 0 && s.requests_reset > s.fetch_failed,
    },
    Row {
        name: "memory pressure: both exits of the lease",
        sets: &[
            "fleet.leak.distribution=constant",
            "fleet.leak.mean_mb_per_request=0.5",
            "workload.profile=constant",
            "workload.rps=6",
            "run.duration_h=3",
        ],
        fired: |s| {
            s.pressure_recycles > 0
                && s.count("lease_bypass_pressure") > 0
                && s.count("lease_bypass_hard_ceiling") > 0
                && s.count("holds_cooldown_pressure") + s.count("holds_cooldown") > 0
        },
    },
    Row {
        name: "busy deferral",
        sets: &[
            "policy.busy_rps=0.1",
            "policy.defer_max_s=120",
            "run.duration_h=12",
        ],
        fired: |s| s.count("holds_busy_deferral") > 0 && s.recycles > 0,
    },
    Row {
        name: "cold start, boot 10 s, no keep-alive",
        sets: &[
            "fleet.warm_start=false",
            "fleet.boot_s=10",
            "client.keepalive_conns_per_worker=0",
            "run.duration_h=12",
        ],
        fired: |s| s.recycles > 0 && s.requests_reset == 0 && s.min_serving_workers < 6,
    },
    Row {
        name: "a bigger fleet: 8 x 4, concurrency 2",
        sets: &[
            "fleet.instances=8",
            "fleet.workers_per_instance=4",
            "fleet.concurrency=2",
            "fleet.container_mb=3000",
            "workload.rps=12",
            "run.duration_h=4",
        ],
        fired: |s| s.recycles > 20,
    },
    Row {
        name: "one instance, one worker",
        sets: &[
            "fleet.instances=1",
            "fleet.workers_per_instance=1",
            "workload.rps=0.5",
            "run.duration_h=12",
        ],
        fired: |s| s.recycles > 0 && s.min_serving_workers == 0,
    },
];

#[test]
fn invariants_hold_and_each_mechanism_fires() {
    for row in ROWS {
        let s = check(row.sets, 1);
        assert!(
            (row.fired)(&s),
            "{}: mechanism did not fire: {s:#?}",
            row.name
        );
        // Requests are accounted for: everything that arrived either
        // completed or failed by the end, or is still in the system.
        assert!(s.requests_failed <= s.requests_total, "{}", row.name);
        assert!(
            s.fetch_failed + s.retry_ok <= s.requests_reset,
            "{}",
            row.name
        );
        assert!(
            (0.0..=1.0).contains(&s.capacity_loss_fraction),
            "{}",
            row.name
        );
    }
}

/// Each balancer spreads traffic over every instance, and under load
/// joining the least-outstanding instance waits less than picking one at
/// random (join-the-shortest-queue beats random routing).
#[test]
fn balancers_route_to_every_instance_and_least_outstanding_waits_least() {
    let mut waits = Vec::new();
    for b in ["round_robin", "least_outstanding", "random"] {
        let set = format!("workload.balancer={b}");
        let mut sets = busy(&["fleet.leak.mean_mb_per_request=0.05"]);
        sets.push(&set);
        let mut rec = Recorder::default();
        let s = check_with(&sets, 1, &mut rec);
        for i in 0..2 {
            assert!(
                rec.recycles.iter().any(|r| r.instance == i),
                "{b}: no recycle on instance {i}: did it get traffic?"
            );
        }
        waits.push((b, s.wait_ms_mean.unwrap()));
    }
    eprintln!("mean wait by balancer: {waits:?}");
    let wait = |b| waits.iter().find(|w| w.0 == b).unwrap().1;
    assert!(wait("least_outstanding") < wait("random"), "{waits:?}");
    assert!(wait("least_outstanding") < wait("round_robin"), "{waits:?}");
}

fn select(options: &'static [&'static str]) -> impl Strategy<Value = &'static str> {
    prop::sample::select(options)
}

/// Overrides for one random, valid scenario.
fn random_sets() -> impl Strategy<Value = Vec<String>> {
    let fleet = (
        1u32..=4,
        1u32..=4,
        1u32..=3,
        0.0..2000.0f64,
        0.0..=1.0f64,
        any::<bool>(),
    );
    let leak = (
        select(&["constant", "lognormal", "exponential"]),
        0.0..3.0f64,
        0.0..50.0f64,
        0.0..0.05f64,
    );
    let traffic = (
        0.2..15.0f64,
        select(&["constant", "diurnal"]),
        select(&["round_robin", "least_outstanding", "random"]),
        select(&["constant", "exponential", "lognormal"]),
        10.0..2000.0f64,
        0u32..50,
        0.1..60.0f64,
    );
    let limits = (0.0..60.0f64, 10.0..300.0f64, 0.0..200.0f64);
    let recycler = (
        0.0..300.0f64,
        0.0..60.0f64,
        1.0..120.0f64,
        1u32..100,
        any::<bool>(),
        0.0..1000.0f64,
        0.0..10.0f64,
        0.0..120.0f64,
    );
    let lease = (any::<bool>(), 1.0..300.0f64);
    let other = (
        0u32..=3,
        0.0..=30.0f64,
        0.0..=5.0f64,
        any::<bool>(),
        0.1..1.5f64,
    );
    let client = (
        0u32..=4,
        0.0..10.0f64,
        0.0..200.0f64,
        0.0..50.0f64,
        1.0..120.0f64,
    );
    (fleet, leak, traffic, limits, recycler, lease, other, client).prop_map(
        |(fleet, leak, traffic, limits, recycler, lease, other, client)| {
            let (instances, wpi, conc, spare_mb, shared_frac, spawn_first) = fleet;
            let (dist, leak_mb, warmup_mb, step_p) = leak;
            let (rps, profile, balancer, service, service_ms, backlog, queue_timeout) = traffic;
            let (jitter, runway, ceiling) = limits;
            let (cooldown, p_cooldown, tick, every, timer, min_headroom, busy_rps, defer) =
                recycler;
            let (lease_on, ttl) = lease;
            let (retries, graceful, boot, warm, hours) = other;
            let (keepalive, stale_s, retry_ms, step_mb, busy_window) = client;
            let boot_rss = 360.0;
            let shared = (shared_frac * boot_rss).floor();
            // The cgroup must hold the master and freshly booted workers:
            // two generations of them under spawn-then-exit.
            let generations = if spawn_first { 2.0 } else { 1.0 };
            let booted = boot_rss + generations * wpi as f64 * (boot_rss - shared);
            let base = (boot_rss + jitter + runway).ceil();
            vec![
                format!("fleet.instances={instances}"),
                format!("fleet.workers_per_instance={wpi}"),
                format!("fleet.concurrency={conc}"),
                format!("fleet.shared_mb={shared}"),
                format!("fleet.container_mb={}", (booted + 1.0 + spare_mb).ceil()),
                format!("fleet.boot_s={boot}"),
                format!("fleet.graceful_timeout_s={graceful}"),
                // The kill paths, from draws already made: every drain
                // deadline, and a request timeout near the service times.
                format!(
                    "fleet.kill.drain_ends={}",
                    ["graceful_timeout", "heartbeat", "mercy"][every as usize % 3]
                ),
                format!(
                    "fleet.kill.request_timeout_s={}",
                    if every % 2 == 0 {
                        0.0
                    } else {
                        service_ms * 3.0 / 1000.0
                    }
                ),
                format!("fleet.warm_start={warm}"),
                format!("fleet.leak.distribution={dist}"),
                format!("fleet.leak.mean_mb_per_request={leak_mb}"),
                format!("fleet.leak.warmup_mb={warmup_mb}"),
                format!("fleet.leak.step_probability={step_p}"),
                format!("workload.rps={rps}"),
                format!("workload.profile={profile}"),
                format!("workload.balancer={balancer}"),
                format!("workload.service={service}"),
                format!("workload.service_mean_ms={service_ms}"),
                format!("workload.service_p99_ms={}", service_ms * 5.0),
                format!("workload.backlog_requests={backlog}"),
                format!("workload.queue_timeout_s={queue_timeout}"),
                format!("client.retries={retries}"),
                format!("client.keepalive_conns_per_worker={keepalive}"),
                format!("client.stale_window_s={stale_s}"),
                format!("client.retry_delay_ms={retry_ms}"),
                format!("fleet.leak.step_mean_mb={step_mb}"),
                format!("policy.busy_window_s={busy_window}"),
                format!("policy.base_limit_mb={base}"),
                format!("policy.jitter_mb={jitter}"),
                format!("policy.hard_limit_mb={}", base + ceiling),
                format!(
                    "policy.sampling={}",
                    if timer { "timer" } else { "requests" }
                ),
                format!("policy.tick_s={tick}"),
                format!("policy.sample_every_requests={every}"),
                format!("policy.cooldown_s={cooldown}"),
                format!("policy.pressure_cooldown_s={p_cooldown}"),
                format!("policy.min_headroom_mb={min_headroom}"),
                format!("policy.busy_rps={busy_rps}"),
                format!("policy.defer_max_s={defer}"),
                format!("policy.lease.enabled={lease_on}"),
                format!("policy.lease.ttl_s={ttl}"),
                format!("run.duration_h={hours}"),
                format!(
                    "policy.replacement={}",
                    if spawn_first {
                        "spawn_then_exit"
                    } else {
                        "exit_then_spawn"
                    }
                ),
            ]
        },
    )
}

proptest! {
    #![proptest_config(ProptestConfig {
        cases: 64,
        // Failing cases are saved beside this file and replayed first.
        failure_persistence: Some(Box::new(
            proptest::test_runner::FileFailurePersistence::WithSource("proptest-regressions"),
        )),
        ..ProptestConfig::default()
    })]

    /// Random valid scenarios: the scenario loads, and a run with every
    /// invariant checked after every event neither panics nor errors.
    #[test]
    fn random_valid_scenarios_keep_every_invariant(sets in random_sets(), seed in any::<u64>()) {
        let sets: Vec<&str> = sets.iter().map(String::as_str).collect();
        let sc = try_scenario(&sets);
        prop_assert!(sc.is_ok(), "generated an invalid scenario: {}", sc.unwrap_err());
        let s = check(&sets, seed);
        prop_assert!(s.requests_failed <= s.requests_total);
        prop_assert!((0.0..=1.0).contains(&s.capacity_loss_fraction));
    }
}
