//! The server's kill paths (`[fleet.kill]`, `sim/kill.rs`), each on a
//! scenario built to make it fire and against a contrast where it is off:
//! a request timeout (uWSGI harakiri, unicorn, PHP-FPM, gunicorn's sync
//! worker) kills its worker at the request's start + the timeout and
//! resets what is in flight; gunicorn's heartbeat ends a UvicornWorker
//! drain 14-30 s after it began whatever graceful_timeout says; uWSGI's
//! mercy ends a reload at 60 s. Each is counted apart in summary.json only
//! when on, and read back by replay.

mod common;

use common::replay::analyse;
use common::{Rows, events_csv, preset, scenario};
use fleetsim::Sim;
use fleetsim::engine::SimTime;
use fleetsim::metrics::{EventKind, EventRow, KillPath, Summary};
use fleetsim::scenario::{DrainDeadline, Scenario};

fn run(sc: &Scenario, seed: u64) -> (Summary, Vec<EventRow>) {
    let mut rows = Rows::default();
    let out = Sim::new(sc, seed, &mut rows)
        .with_invariant_checks()
        .run()
        .unwrap();
    (out.summary, rows.0)
}

fn rows_of(rows: &[EventRow], kind: EventKind, branch: Option<&str>) -> Vec<EventRow> {
    rows.iter()
        .filter(|r| r.kind == kind)
        .filter(|r| {
            let b = r.decision.as_ref().map(|d| d.branch.to_string());
            b.as_deref() == branch
        })
        .cloned()
        .collect()
}

/// Constant 6 s requests, rare enough that a worker is nearly always free;
/// no keep-alive (a killed worker's stale connections would reset retries).
const SLOW: [&str; 7] = [
    "client.connections=close",
    "run.duration_h=2",
    "workload.service=constant",
    "workload.service_mean_ms=6000",
    "workload.rps=0.05",
    "workload.profile=constant",
    "fleet.kill.drain_ends=graceful_timeout",
];

#[test]
fn a_request_timeout_kills_at_start_plus_the_timeout_and_fails_what_was_in_flight() {
    let mut sets = SLOW.to_vec();
    sets.push("fleet.kill.request_timeout_s=5");
    let (s, rows) = run(&scenario(&sets), 3);
    let kills = rows_of(&rows, EventKind::TimeoutKill, Some("request_timeout"));
    let c = s.kill_paths.get(KillPath::RequestTimeout).unwrap();
    assert!(c.kills > 300, "{}", c.kills);
    assert_eq!(c.kills as usize, kills.len());
    // Concurrency 1: each kill resets exactly the request that timed out.
    assert_eq!(c.requests, c.kills);
    // No request of 6 s can finish; each is killed at its start + 5 s, its
    // retry (50 ms later, same request) again 5 s after it starts: a
    // request that never waited fails 10.05 s after it arrived.
    assert_eq!(s.retry_ok, 0);
    let failed: Vec<f64> = rows_of(&rows, EventKind::FetchFailed, None)
        .iter()
        .map(|r| r.latency_ms.unwrap())
        .collect();
    assert!(failed.len() as u64 * 2 >= c.kills - 2);
    assert!(failed.iter().all(|&l| l >= 10_050.0 - 1e-6), "{failed:?}");
    let exact = failed
        .iter()
        .filter(|&&l| (l - 10_050.0).abs() < 1e-6)
        .count();
    assert!(
        exact * 10 >= failed.len() * 9,
        "{exact} of {}",
        failed.len()
    );
    let json = s.to_json();
    assert!(json.contains("\"timeout_kills\"") && json.contains("\"timeout_kill_requests\""));

    // Requests that finish before the timeout are never killed.
    let mut short = sets.clone();
    short.push("workload.service_mean_ms=4900");
    let (s, rows) = run(&scenario(&short), 3);
    assert_eq!(s.kill_paths.get(KillPath::RequestTimeout).unwrap().kills, 0);
    assert!(rows_of(&rows, EventKind::TimeoutKill, Some("request_timeout")).is_empty());
    assert_eq!(s.requests_failed, 0);

    // Off: no kill, and summary.json has no key for the path.
    let (s, rows) = run(&scenario(&SLOW), 3);
    assert!(s.kill_paths.get(KillPath::RequestTimeout).is_none());
    assert!(rows.iter().all(|r| r.kind != EventKind::TimeoutKill));
    assert!(!s.to_json().contains("timeout_kill"));
    assert_eq!(s.requests_failed, 0);
}

/// A heavy tail: mean 1 s, p99 14 s (about 4% of requests over 5 s).
const HEAVY: [&str; 5] = [
    "run.duration_h=3",
    "workload.service_mean_ms=1000",
    "workload.service_p99_ms=14000",
    "workload.profile=constant",
    "fleet.kill.drain_ends=graceful_timeout",
];

#[test]
fn harakiri_on_a_heavy_tail_resets_every_request_of_the_killed_worker() {
    let mut sets = HEAVY.to_vec();
    sets.extend(["fleet.kill.request_timeout_s=5", "fleet.concurrency=4"]);
    let (s, rows) = run(&scenario(&sets), 1);
    let c = s.kill_paths.get(KillPath::RequestTimeout).unwrap();
    let kills = rows_of(&rows, EventKind::TimeoutKill, Some("request_timeout"));
    assert!(c.kills > 50, "{}", c.kills);
    assert_eq!(c.kills as usize, kills.len());
    // Each kill resets the request that timed out and the others in flight.
    assert!(
        c.requests > c.kills,
        "{} resets for {} kills",
        c.requests,
        c.kills
    );
    assert!(s.requests_reset >= c.requests);
    // The same fleet without harakiri kills nothing.
    let (s, rows) = run(&scenario(&HEAVY), 1);
    assert!(s.kill_paths.get(KillPath::RequestTimeout).is_none());
    assert!(rows.iter().all(|r| r.kind != EventKind::TimeoutKill));
}

/// (kill time - its worker's recycle time) for each drain kill row of
/// `branch`, paired by instance, slot and generation.
fn drain_lengths(rows: &[EventRow], branch: Option<&str>) -> Vec<f64> {
    let key = |r: &EventRow| {
        let w = r.worker.unwrap();
        (r.instance, w.slot, w.generation)
    };
    rows_of(rows, EventKind::DrainKilled, branch)
        .iter()
        .map(|k| {
            let began = rows
                .iter()
                .rev()
                .filter(|r| r.kind == EventKind::WorkerRecycled && r.t <= k.t)
                .find(|r| key(r) == key(k))
                .expect("a drain kill follows its recycle");
            (k.t - began.t).as_secs_f64()
        })
        .collect()
}

#[test]
fn the_heartbeat_ends_a_uvicorn_drain_14_to_30_s_after_it_began() {
    let sc = scenario(&[]);
    assert!(
        matches!(sc.fleet.kill.drain, DrainDeadline::Heartbeat { timeout, .. } if timeout == SimTime::from_secs(30)),
        "the default is gunicorn + UvicornWorker"
    );
    // Long drains: a heavy tail and the fleet busy enough that a recycled
    // worker is often mid-request; graceful_timeout far away.
    let sets = [
        "run.duration_h=24",
        "workload.service_mean_ms=2000",
        "workload.service_p99_ms=28000",
        "fleet.kill.drain_ends=heartbeat",
        "fleet.graceful_timeout_s=300",
    ];
    let (s, rows) = run(&scenario(&sets), 2);
    let c = s.kill_paths.get(KillPath::Heartbeat).unwrap();
    let lengths = drain_lengths(&rows, Some("heartbeat_kill"));
    assert!(c.kills >= 5, "{}", c.kills);
    assert_eq!(c.kills as usize, lengths.len());
    assert_eq!(s.drain_kills, c.kills);
    assert_eq!(
        c.requests, c.kills,
        "concurrency 1: the one request in flight"
    );
    // Within (30 - 16, 30] s of the drain's start, never at graceful_timeout.
    for l in &lengths {
        assert!(*l > 14.0 && *l <= 30.0, "{lengths:?}");
    }
    assert!(lengths.iter().any(|l| *l < 29.0), "{lengths:?}");
    // The graceful timeout instead: every drain kill exactly 30 s after its
    // recycle, counted as drain_kills only (no heartbeat key, no branch).
    let mut graceful = sets.to_vec();
    graceful.extend([
        "fleet.kill.drain_ends=graceful_timeout",
        "fleet.graceful_timeout_s=30",
    ]);
    let (s, rows) = run(&scenario(&graceful), 2);
    assert!(s.kill_paths.get(KillPath::Heartbeat).is_none());
    assert!(!s.to_json().contains("heartbeat"));
    let lengths = drain_lengths(&rows, None);
    assert!(!lengths.is_empty());
    assert!(
        lengths.iter().all(|l| (l - 30.0).abs() < 1e-6),
        "{lengths:?}"
    );
    assert_eq!(s.drain_kills as usize, lengths.len());
}

#[test]
fn uwsgi_mercy_kills_a_reload_still_busy_at_60_s() {
    let sc = preset("uwsgi-reload-on-rss", &[]);
    assert_eq!(
        sc.fleet.kill.drain,
        DrainDeadline::Mercy(SimTime::from_secs(60))
    );
    assert_eq!(
        sc.fleet.kill.request_timeout, None,
        "harakiri is off by default"
    );
    // Threads, so a reload after one request leaves others in flight, and
    // requests long enough to outlast the mercy.
    let sets = [
        "run.duration_h=12",
        "fleet.concurrency=4",
        "workload.service_mean_ms=6000",
        "workload.service_p99_ms=80000",
    ];
    let (s, rows) = run(&preset("uwsgi-reload-on-rss", &sets), 1);
    let c = s.kill_paths.get(KillPath::Mercy).unwrap();
    let lengths = drain_lengths(&rows, Some("mercy_kill"));
    assert!(c.kills >= 3, "{}", c.kills);
    assert_eq!(c.kills as usize, lengths.len());
    assert_eq!(s.drain_kills, c.kills);
    assert!(c.requests >= c.kills);
    assert!(
        lengths.iter().all(|l| (l - 60.0).abs() < 1e-6),
        "{lengths:?}"
    );
    assert!(s.to_json().contains("\"mercy_kills\""));
}

#[test]
fn each_preset_carries_its_kill_paths() {
    let timeout = |name: &str| preset(name, &[]).fleet.kill.request_timeout;
    assert_eq!(
        timeout("gunicorn-max-requests"),
        Some(SimTime::from_secs(30))
    );
    assert_eq!(
        timeout("unicorn-worker-killer"),
        Some(SimTime::from_secs(60))
    );
    for off in [
        "puma-worker-killer",
        "php-fpm-max-requests",
        "uwsgi-reload-on-rss",
        "granian-max-rss",
        "passenger-rolling",
        "leakless",
        "render-2x3",
    ] {
        assert_eq!(timeout(off), None, "{off}");
    }
    for graceful in [
        "gunicorn-max-requests",
        "unicorn-worker-killer",
        "puma-worker-killer",
        "php-fpm-max-requests",
        "granian-max-rss",
        "passenger-rolling",
        "leakless",
    ] {
        let sc = preset(graceful, &[]);
        assert_eq!(
            sc.fleet.kill.drain,
            DrainDeadline::GracefulTimeout(sc.fleet.graceful_timeout),
            "{graceful}"
        );
    }
}

#[test]
fn replay_reads_the_kill_rows_back() {
    let sets = [
        "run.duration_h=6",
        "workload.service_mean_ms=2000",
        "workload.service_p99_ms=28000",
        "fleet.kill.request_timeout_s=20",
    ];
    let text = events_csv(&sets, 2);
    let (s, _) = run(&scenario(&sets), 2);
    let a = analyse(&[("events.csv", &text)], None);
    let t = s.kill_paths.get(KillPath::RequestTimeout).unwrap();
    assert!(t.kills > 0);
    assert_eq!(a.totals.timeout_kills as u64, t.kills);
    assert_eq!(a.totals.drain_killed as u64, s.drain_kills);
    assert!(
        a.warnings.iter().all(|w| !w.contains("unknown kind")),
        "{:?}",
        a.warnings
    );
}

#[test]
fn bad_kill_settings_name_their_key() {
    let e = common::try_scenario(&["fleet.kill.request_timeout_s=-1"]).unwrap_err();
    assert_eq!(
        e.key.as_deref(),
        Some("fleet.kill.request_timeout_s"),
        "{e}"
    );
    let e = common::try_scenario(&["fleet.kill.heartbeat_timeout_s=1"]).unwrap_err();
    assert_eq!(
        e.key.as_deref(),
        Some("fleet.kill.heartbeat_timeout_s"),
        "{e}"
    );
    let e = common::try_scenario(&["fleet.kill.mercy_s=0"]).unwrap_err();
    assert_eq!(e.key.as_deref(), Some("fleet.kill.mercy_s"), "{e}");
    let e = common::try_scenario(&["fleet.kill.request_timeout_s=5", "engine.mode=aggregate"])
        .unwrap_err();
    assert_eq!(
        e.key.as_deref(),
        Some("fleet.kill.request_timeout_s"),
        "{e}"
    );
    assert!(e.reason.contains("exact"), "{e}");
    let e = common::try_scenario(&["fleet.kill.drain_ends=never"]).unwrap_err();
    assert!(e.to_string().contains("drain_ends"), "{e}");
}

#[test]
fn the_aggregate_mode_ends_drains_at_the_same_deadline() {
    // 40 s requests: a busy drain's residual (20 s) often outlasts the
    // heartbeat's deadline, and the kill is counted as in exact mode.
    let sets = [
        "engine.mode=aggregate",
        "run.duration_h=24",
        "workload.service=constant",
        "workload.service_mean_ms=40000",
        "workload.rps=0.1",
        "fleet.concurrency=8",
    ];
    let (s, rows) = run(&scenario(&sets), 1);
    let c = s.kill_paths.get(KillPath::Heartbeat).unwrap();
    assert!(c.kills > 0, "{}", c.kills);
    assert_eq!(s.drain_kills, c.kills);
    assert_eq!(
        rows_of(&rows, EventKind::DrainKilled, Some("heartbeat_kill")).len() as u64,
        c.kills
    );
    for l in drain_lengths(&rows, Some("heartbeat_kill")) {
        assert!(l > 14.0 && l <= 30.0, "{l}");
    }
}
