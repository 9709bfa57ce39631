//! The client's connection models (`[client] connections`): `pooled` (any
//! free worker, stale picks by probability), `close` (no keep-alive) and
//! `pinned` (connections as entities owned by the worker that accepted
//! them). Every run checks every invariant after every event.

mod common;

use common::{run_checked, scenario, try_scenario};
use fleetsim::Scenario;
use fleetsim::engine::SimTime;
use fleetsim::metrics::{EventKind, EventRow, Observer, Summary, WorkerSample};
use std::collections::BTreeMap;

/// The lab's fleet (lab/fleet.toml) on one instance: 3 async workers, a
/// leak that recycles a worker every ~45 s, 80 rps.
fn lab_like(extra: &[&str]) -> Scenario {
    let mut sets = vec![
        "fleet.instances=1",
        "fleet.workers_per_instance=3",
        "fleet.concurrency=16",
        "fleet.container_mb=850",
        "fleet.boot_rss_mb=104",
        "fleet.shared_mb=93",
        "fleet.boot_s=0.3",
        "fleet.graceful_timeout_s=1.5",
        "fleet.kill.drain_ends=graceful_timeout",
        "fleet.warm_start=false",
        "fleet.leak.distribution=lognormal",
        "fleet.leak.mean_mb_per_request=0.17",
        "fleet.leak.cv=0.5",
        "fleet.leak.warmup_mb=0",
        "fleet.leak.step_probability=0",
        "workload.rps=80",
        "workload.profile=constant",
        "workload.service=lognormal",
        "workload.service_mean_ms=6",
        "workload.service_p99_ms=45",
        "workload.queue_timeout_s=1.5",
        "policy.base_limit_mb=250",
        "policy.jitter_mb=40",
        "policy.hard_limit_mb=400",
        "policy.tick_s=2.25",
        "policy.cooldown_s=6",
        "policy.pressure_cooldown_s=1.5",
        "policy.busy_deferral=false",
        "policy.lease.enabled=false",
        "client.retry_delay_ms=1",
        "client.stale_window_s=0.05",
        "run.timeline_step_s=1",
        "run.duration_h=0.5",
    ];
    sets.extend_from_slice(extra);
    scenario(&sets)
}

/// Worker samples per (struct, generation), one per timeline step.
#[derive(Default)]
struct Lives {
    /// Requests served at each sample of each life.
    samples: BTreeMap<(u32, u32), Vec<u64>>,
    resets_at: Vec<f64>,
    recycles_at: Vec<f64>,
}

impl Observer for Lives {
    fn workers_wanted(&self) -> usize {
        usize::MAX
    }
    fn workers(&mut self, _t: SimTime, ws: &[WorkerSample]) {
        for w in ws {
            self.samples
                .entry((w.index, w.generation))
                .or_default()
                .push(w.requests);
        }
    }
    fn event(&mut self, row: &EventRow) {
        match row.kind {
            EventKind::RetryOk | EventKind::FetchFailed => self.resets_at.push(row.t.as_secs_f64()),
            EventKind::WorkerRecycled => self.recycles_at.push(row.t.as_secs_f64()),
            _ => {}
        }
    }
}

impl Lives {
    /// Fraction of worker samples (lives after the first ones, which all
    /// start together) that found the worker with nothing served yet.
    fn idle_at_boot_fraction(&self) -> f64 {
        let (mut idle, mut all) = (0usize, 0usize);
        for ((_, generation), reqs) in &self.samples {
            if *generation == 0 {
                continue;
            }
            idle += reqs.iter().filter(|&&r| r == 0).count();
            all += reqs.len();
        }
        idle as f64 / all as f64
    }
}

fn lives(sc: &Scenario, seed: u64) -> (Summary, Lives) {
    let mut lives = Lives::default();
    let s = run_checked(sc, seed, &mut lives);
    (s, lives)
}

#[test]
fn a_pinned_replacement_serves_nothing_until_a_connection_reopens() {
    // Pooled: a fresh worker takes the next request at once. Pinned with
    // no server keep-alive timer: it waits for a sibling's exit (every
    // ~15 s here), as the lab's workers did (docs/lab.md: a third of
    // worker-time at boot RSS). A server timer shorter than the gap
    // between a connection's requests (16 connections at 80 rps: 0.2 s)
    // reopens connections all the time and brings pinned back near pooled.
    let pooled = lab_like(&["client.connections=pooled"]);
    let pinned = lab_like(&["client.connections=pinned", "client.conns_per_instance=16"]);
    let churned = lab_like(&[
        "client.connections=pinned",
        "client.conns_per_instance=16",
        "client.server_keepalive_s=0.05",
    ]);
    let (sp, lp) = lives(&pooled, 1);
    let (sn, ln) = lives(&pinned, 1);
    let (_, lc) = lives(&churned, 1);
    assert!(
        sp.recycles >= 60 && sn.recycles >= 60,
        "{} {}",
        sp.recycles,
        sn.recycles
    );
    let (fp, fnn, fc) = (
        lp.idle_at_boot_fraction(),
        ln.idle_at_boot_fraction(),
        lc.idle_at_boot_fraction(),
    );
    assert!(fp < 0.05, "pooled: {fp}");
    assert!(fnn > 0.2, "pinned: {fnn}");
    assert!(fc < 0.1, "pinned, 50 ms server keep-alive: {fc}");
    // Requests per life are set by the leak, not by where they were served.
    let per_life = |s: &Summary| s.requests_total as f64 / s.recycles as f64;
    let (a, b) = (per_life(&sp), per_life(&sn));
    assert!(
        (a / b - 1.0).abs() < 0.15,
        "requests per recycle {a} vs {b}"
    );
}

#[test]
fn pinned_resets_come_only_from_closes_inside_the_stale_window() {
    // No stale window: the client always sees the FIN first, so the only
    // resets are kills (none here: drains finish in milliseconds).
    let none = lab_like(&[
        "client.connections=pinned",
        "client.stale_window_s=0",
        "client.server_keepalive_s=0.3",
    ]);
    let (s, _) = lives(&none, 2);
    assert!(s.recycles > 50);
    assert_eq!(s.drain_kills + s.oom_kills, 0);
    assert_eq!(s.requests_reset, 0);
    // A window: resets appear, every one within the window after a
    // recycle's drain or a keep-alive close. With no keep-alive timer only
    // drains close, so each reset follows a recycle: its client row comes
    // when the retry ends (the window, the 1 ms retry delay, then the
    // retry's wait and service: under a second here).
    let window = lab_like(&["client.connections=pinned", "client.stale_window_s=0.05"]);
    let (s, l) = lives(&window, 2);
    assert!(s.requests_reset > 0, "no resets");
    assert_eq!(s.retry_ok + s.fetch_failed, s.requests_reset);
    for r in &l.resets_at {
        let near = l.recycles_at.iter().any(|&c| *r >= c && *r <= c + 1.0);
        assert!(near, "a reset at {r} s follows no recycle");
    }
}

#[test]
fn close_has_no_stale_connections() {
    let close = lab_like(&["client.connections=close", "client.stale_window_s=10"]);
    let pooled = lab_like(&["client.connections=pooled", "client.stale_window_s=10"]);
    let sc = run_checked(&close, 3, fleetsim::metrics::NullObserver);
    let sp = run_checked(&pooled, 3, fleetsim::metrics::NullObserver);
    assert!(sc.recycles > 50);
    assert_eq!(sc.requests_reset, 0, "close: resets without a kill");
    assert!(
        sp.requests_reset > 100,
        "the control: pooled resets {}",
        sp.requests_reset
    );
}

/// Mean wait of an exponential single server at `lambda`, `mu`: M/M/1's Wq.
fn mm1_wait_s(lambda: f64, mu: f64) -> f64 {
    lambda / (mu * (mu - lambda))
}

#[test]
fn one_pinned_connection_is_an_mm1_queue_however_many_workers() {
    // One connection, pipelining 1: a request waits for the previous one
    // on its connection, so 3 workers serve as one M/M/1 server (Wq =
    // rho / (mu - lambda) = 2.333 s at rho 0.7). Pooled, the same fleet is
    // M/M/3 (Wq 0.19 s): the control that tells the models apart.
    let base = [
        "fleet.instances=1",
        "fleet.workers_per_instance=3",
        "fleet.concurrency=1",
        "fleet.leak.mean_mb_per_request=0",
        "fleet.leak.warmup_mb=0",
        "fleet.leak.step_probability=0",
        "fleet.container_mb=100000",
        "policy.base_limit_mb=50000",
        "policy.hard_limit_mb=60000",
        "workload.profile=constant",
        "workload.rps=0.7",
        "workload.service=exponential",
        "workload.service_mean_ms=1000",
        "workload.backlog_requests=1000000",
        "workload.queue_timeout_s=1000000",
        "run.timeline_step_s=60",
        "run.duration_h=40",
    ];
    let mut pinned: Vec<&str> = base.to_vec();
    pinned.extend(["client.connections=pinned", "client.conns_per_instance=1"]);
    let sc = scenario(&pinned);
    let waits: Vec<f64> = (1..=8)
        .map(|seed| {
            let s = if seed == 1 {
                run_checked(&sc, seed, fleetsim::metrics::NullObserver)
            } else {
                fleetsim::Sim::new(&sc, seed, fleetsim::metrics::NullObserver)
                    .run()
                    .expect("run")
                    .summary
            };
            assert_eq!(s.requests_failed + s.requests_reset, 0);
            s.wait_ms_mean.expect("served") / 1000.0
        })
        .collect();
    let n = waits.len() as f64;
    let mean = waits.iter().sum::<f64>() / n;
    let se = (waits.iter().map(|w| (w - mean).powi(2)).sum::<f64>() / (n - 1.0) / n).sqrt();
    let want = mm1_wait_s(0.7, 1.0);
    assert!(se < 0.03 * want, "se {se} too large to test against {want}");
    assert!(
        (mean - want).abs() < 0.08 * want && (mean - want).abs() < 4.0 * se,
        "pinned, one connection: mean wait {mean:.3} s (se {se:.3}), M/M/1 {want:.3} s"
    );
    let mut pooled: Vec<&str> = base.to_vec();
    pooled.push("client.connections=pooled");
    let s = run_checked(&scenario(&pooled), 1, fleetsim::metrics::NullObserver);
    assert!(
        s.wait_ms_mean.expect("served") / 1000.0 < 0.5,
        "pooled is M/M/3"
    );
}

#[test]
fn pinned_survives_kills_queues_and_a_full_listen_queue() {
    // Concurrency 1 with 16 connections: requests queue at their worker;
    // a tight cgroup OOM-kills workers with queued work; a listen queue of
    // 2 overflows while every worker boots; spawn-then-exit hands over.
    for extra in [
        &["fleet.concurrency=1", "fleet.container_mb=520"][..],
        &[
            "fleet.concurrency=1",
            "workload.backlog_requests=2",
            "fleet.boot_s=2",
        ][..],
        &["policy.replacement=spawn_then_exit"][..],
        &[
            "client.retries=0",
            "fleet.graceful_timeout_s=0.001",
            "fleet.kill.drain_ends=graceful_timeout",
        ][..],
        // A per-request trigger recycles a worker with requests queued on
        // its connections (found by the sim fuzz target): the drain serves
        // them before it exits.
        &[
            "fleet.concurrency=1",
            "policy.max_requests.enabled=true",
            "policy.max_requests.requests=150",
            "fleet.graceful_timeout_s=0",
            "fleet.kill.drain_ends=graceful_timeout",
        ][..],
    ] {
        let mut sets = vec!["client.connections=pinned", "client.server_keepalive_s=0.5"];
        sets.extend_from_slice(extra);
        let sc = lab_like(&sets);
        let a = run_checked(&sc, 5, fleetsim::metrics::NullObserver);
        let b = run_checked(&sc, 5, fleetsim::metrics::NullObserver);
        assert_eq!(
            serde_json::to_string(&a).unwrap(),
            serde_json::to_string(&b).unwrap(),
            "{extra:?}: same seed, same summary"
        );
        assert!(a.requests_total - a.requests_failed > 10_000, "{extra:?}");
    }
}

#[test]
fn pinned_is_refused_in_aggregate_mode_and_checked() {
    let e = try_scenario(&["engine.mode=aggregate", "client.connections=pinned"])
        .expect_err("pinned in aggregate mode");
    assert!(e.to_string().contains("client.connections"), "{e}");
    let e = try_scenario(&["client.connections=pinned", "client.conns_per_instance=0"])
        .expect_err("no connections");
    assert!(e.to_string().contains("client.conns_per_instance"), "{e}");
    let e = try_scenario(&["client.connections=pinned", "client.server_keepalive_s=-1"])
        .expect_err("negative keep-alive");
    assert!(e.to_string().contains("client.server_keepalive_s"), "{e}");
    assert!(try_scenario(&["engine.mode=aggregate", "client.connections=close"]).is_ok());
}

/// `fleetsim run PRESET --json [--set ...]`'s summary.
fn preset_summary(preset: &str, sets: &[&str]) -> serde_json::Value {
    let dir = common::TempDir::new("connections-preset");
    let path = format!("{}/scenarios/{preset}.toml", env!("CARGO_MANIFEST_DIR"));
    let mut args = vec!["run", path.as_str(), "--json", "--seed", "3", "--out"];
    let out = dir.path().join("out");
    args.push(out.to_str().unwrap());
    for s in sets {
        args.extend(["--set", s]);
    }
    let o = std::process::Command::new(env!("CARGO_BIN_EXE_fleetsim"))
        .args(&args)
        .output()
        .unwrap();
    assert_eq!(
        o.status.code(),
        Some(0),
        "{preset}: {}",
        String::from_utf8_lossy(&o.stderr)
    );
    serde_json::from_slice(&o.stdout).unwrap()
}

#[test]
fn servers_that_close_every_connection_show_no_stale_retries() {
    // gunicorn's sync worker and unicorn send `Connection: close`; PHP-FPM's
    // FastCGI, Passenger's proxy and uWSGI behind nginx keep the client's
    // connection off the worker: a recycle resets only what a kill cuts
    // (each preset cites its source). The control: the same preset with
    // the pooled keep-alive client shows the stale resets.
    for preset in [
        "gunicorn-max-requests",
        "php-fpm-max-requests",
        "unicorn-worker-killer",
        "passenger-rolling",
        "uwsgi-reload-on-rss",
    ] {
        let s = preset_summary(preset, &[]);
        let n = |k: &str| s[k].as_u64().unwrap_or(0);
        assert!(n("recycles") > 5, "{preset}: {s}");
        let kills = n("oom_kills") + n("drain_kills") + n("evil_kills");
        assert!(
            n("requests_reset") <= 2 * kills,
            "{preset}: {} resets from {kills} kills",
            n("requests_reset")
        );
        let pooled = preset_summary(preset, &["client.connections=pooled"]);
        assert!(
            pooled["requests_reset"].as_u64().unwrap() > 20,
            "{preset} pooled: {pooled}"
        );
    }
}
