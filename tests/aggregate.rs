//! The aggregated (tau-leaping) mode against the exact mode, on fleets
//! where both run. The comparison (`common::aggval`, paired seeds, mean
//! relative difference and its standard error) is the one
//! `examples/aggregate_vs_exact.rs` runs with many more seeds for the
//! table in docs/measurements.md: there, with 5,000 seeds of the default fleet and 400
//! of the 20 x 8 one, every metric the issue names is resolved (se < 1%)
//! and within 3%, except the largest overshoot over the hard ceiling on
//! the 20 x 8 fleet, where almost no worker passes the ceiling (see
//! docs/aggregate.md, "Validation against exact mode").
//!
//! This file is the CI check within its time budget (~60 s on 2 cores):
//! 500 seeds of the default fleet, where recycles per hour, capacity
//! loss, the largest RSS, the margin at recycle (mean and p99), the
//! requests per worker (p50, p90, mean) and the client's resets and
//! `retry_ok` must be resolved (se < 1%: a true 3% bias would stand three
//! standard errors from zero and fail) and within 3%; the rest (the day's
//! largest overshoot and its integral, the p10, `fetch_failed`) within 3%
//! if these seeds resolve it, else within three standard errors. On the
//! 20 x 8 fleet (10 seeds of 3 h, 8.6 million requests each in exact
//! mode) only recycles per hour and capacity loss are resolved; the
//! largest overshoot is checked in MB. `biased_modes_fail_the_comparison`
//! shows that the comparison fails a fleet with 5% more traffic (through
//! the margin and the requests per worker) and one with 5% more leak
//! (through recycles per hour).

mod common;

use common::aggval::{self, Row, row};
use fleetsim::metrics::NullObserver;
use fleetsim::{Scenario, Sim};

/// Rows in `must_resolve` must resolve `tol` and be within it; the other
/// rows (but those in `skip`) within `tol` if they resolve it; if their
/// seeds cannot (extreme values, tail quantiles, rare counts), within
/// three standard errors of zero, and the printout says so.
fn assert_within(name: &str, rows: &[Row], tol: f64, must_resolve: &[&str], skip: &[&str]) {
    eprintln!("{name}\n{}", aggval::table(rows, tol));
    for r in rows.iter().filter(|r| !skip.contains(&r.metric)) {
        if must_resolve.contains(&r.metric) {
            assert!(
                r.resolved(tol),
                "{name}: {} standard error {:.2}% is too large to test {:.0}%",
                r.metric,
                100.0 * r.se,
                100.0 * tol
            );
        }
        let bound = if r.resolved(tol) { tol } else { 3.0 * r.se };
        assert!(
            r.diff.abs() < bound,
            "{name}: {} differs by {:+.2}% (se {:.2}%; exact {}, aggregate {})",
            r.metric,
            100.0 * r.diff,
            100.0 * r.se,
            r.exact,
            r.aggregate
        );
    }
}

/// 500 seeds: a pair of 24 h runs of the default fleet takes ~20 ms.
#[test]
fn the_default_fleet_agrees_with_exact_mode() {
    let (exact, agg) = aggval::default_fleet(&[]).expect("the default");
    let rows = aggval::compare(&exact, &agg, 1, 500, 2);
    let key = [
        "recycles_per_hour",
        "capacity_loss_fraction",
        "max_rss_mb",
        "mean_margin_mb",
        "margin_p99_mb",
        "requests_per_worker_p50",
        "requests_per_worker_p90",
        "requests_per_worker_mean",
        "requests_reset",
        "retry_ok",
    ];
    assert_within("render-2x3, 24 h, 500 seeds", &rows, 0.03, &key, &[]);
    // `fetch_failed` (under one a day) must not collapse: when retries
    // always went to the next instance, aggregate mode gave 0.03 a day
    // against the exact 0.85 (40 seeds).
    let f = row(&rows, "fetch_failed");
    assert!(
        f.exact > 0.3 && f.aggregate > 0.5 * f.exact,
        "fetch_failed collapsed: exact {}, aggregate {} a day",
        f.exact,
        f.aggregate
    );
}

/// The harness can fail, and each key metric moves under some bias.
/// Exact mode against exact mode with 5% more traffic: the gates absorb
/// most of it in recycles per hour (+1%), but workers are let go later,
/// so the margin (+8%) and the requests per worker (+3-4%) fail. With 5%
/// more leak (velocity and steps) workers are let go sooner: recycles per
/// hour and capacity loss (+3.4%, se 0.2%) fail.
#[test]
fn biased_modes_fail_the_comparison() {
    let (exact, _) = aggval::default_fleet(&[]).expect("the default");
    for (sets, must_catch) in [
        (
            &["workload.rps=1.029"][..],
            &["mean_margin_mb", "requests_per_worker_p50"][..],
        ),
        (
            &[
                "fleet.leak.mean_mb_per_request=0.0462",
                "fleet.leak.step_mean_mb=20.475",
            ],
            &["recycles_per_hour", "capacity_loss_fraction"],
        ),
    ] {
        let (biased, _) = aggval::default_fleet(sets).expect("a biased default");
        let rows = aggval::compare(&exact, &biased, 1, 100, 2);
        eprintln!(
            "exact vs exact with {sets:?}, 100 seeds\n{}",
            aggval::table(&rows, 0.03)
        );
        for &m in must_catch {
            let r = row(&rows, m);
            assert!(
                r.resolved(0.03) && r.diff.abs() > 0.03,
                "{sets:?}: {m} passed the 3% check: {r:?}"
            );
        }
    }
}

/// 12 seeds of 3 h (an exact run is ~8.6 million requests): the standard
/// error of recycles per hour and capacity loss is about 1% at 10 seeds
/// (1.01% under model 8, whose rounding moved the exact runs), so 12; the
/// other figures are checked within 3 standard errors. Almost no worker
/// passes the hard ceiling in either mode, so the relative
/// `max_overshoot_mb` and its integral are not meaningful here: the
/// largest overshoot is checked in MB.
#[test]
fn a_medium_fleet_agrees_with_exact_mode() {
    let (exact, agg) = aggval::medium_fleet(3.0, &[]).expect("the medium fleet");
    let rows = aggval::compare(&exact, &agg, 1, 12, 2);
    let key = ["recycles_per_hour", "capacity_loss_fraction"];
    let rare = [
        "max_overshoot_mb",
        "overshoot_mb_s",
        "runs_over_ceiling",
        "fetch_failed",
    ];
    assert_within("20 x 8 at 800 rps, 3 h, 12 seeds", &rows, 0.03, &key, &rare);
    let o = row(&rows, "max_overshoot_mb");
    assert!(
        (o.aggregate - o.exact).abs() < 5.0,
        "max overshoot {} MB vs {} MB",
        o.aggregate,
        o.exact
    );
}

/// A fleet where least-outstanding balancing moves load: render-2x3 with
/// 2 workers per instance at 26 rps (78% of the 4 workers' capacity),
/// workers recycled by lifetime (120 s +- 30 s, no RSS trigger, no lease,
/// no busy deferral) and a 20 s boot, so an instance runs on one worker
/// ~15% of the time. Requests per worker are then the load each worker
/// saw over its life.
const LEAST_OUTSTANDING: [&str; 12] = [
    "workload.balancer=least_outstanding",
    "workload.profile=constant",
    "workload.rps=26",
    "fleet.workers_per_instance=2",
    "fleet.boot_s=20",
    "policy.rss_trigger=false",
    "policy.lifetime.enabled=true",
    "policy.lifetime.max_s=120",
    "policy.lifetime.jitter_s=30",
    "policy.lease.enabled=false",
    "policy.busy_deferral=false",
    "policy.cooldown_s=1",
];

/// The aggregate least-outstanding split against the exact balancer, 100
/// seeds of 2 h: requests per worker (mean, p50), recycles per hour and
/// capacity loss within 0.5% (resolved: se under 0.17%). Dealing the
/// step evenly, as before, gave an instance on one worker half the
/// fleet's requests (over its capacity: its fluid backlog grew) where the
/// exact balancer sends most of them to the other instance; requests per
/// worker came out -0.98% (mean, se 0.03%, 400 seeds) and -0.79% (p50),
/// and with 100 seeds this test fails on the mean (-0.97%, se 0.06%).
#[test]
fn least_outstanding_follows_the_exact_balancer_under_capacity_loss() {
    let hours = "run.duration_h=2";
    let sets: Vec<&str> = LEAST_OUTSTANDING.iter().copied().chain([hours]).collect();
    let (exact, agg) = aggval::default_fleet(&sets).expect("the fleet");
    let rows = aggval::compare(&exact, &agg, 1, 100, 2);
    let tol = 0.005;
    eprintln!(
        "least-outstanding, 2 x 2, 2 h, 100 seeds\n{}",
        aggval::table(&rows, tol)
    );
    for m in [
        "requests_per_worker_mean",
        "requests_per_worker_p50",
        "recycles_per_hour",
        "capacity_loss_fraction",
    ] {
        let r = row(&rows, m);
        assert!(
            r.resolved(tol) && r.diff.abs() < tol,
            "{m}: {:+.2}% (se {:.2}%), exact {}, aggregate {}",
            100.0 * r.diff,
            100.0 * r.se,
            r.exact,
            r.aggregate
        );
    }
}

/// Equal instances (no leak, so no recycle ever makes them unequal):
/// least-outstanding deals each step as round-robin does but for the
/// fluid backlogs it fills around, so its wait estimate must be
/// round-robin's within 1%. It was 6% (wait fraction) and 11% (mean wait)
/// longer when the Erlang C rate came from the step's drawn count: a few
/// requests a step is noise, and Erlang C's convexity turned the noise
/// into a longer wait.
#[test]
fn least_outstanding_on_equal_instances_waits_as_round_robin() {
    let base = [
        "engine.mode=aggregate",
        "run.duration_h=3",
        "workload.profile=constant",
        "workload.rps=5",
        "workload.service_mean_ms=600",
        "workload.service_p99_ms=4500",
        "fleet.leak.mean_mb_per_request=0",
        "fleet.leak.warmup_mb=0",
        "fleet.leak.step_probability=0",
    ];
    let run = |balancer: &str, seed: u64| {
        let b = format!("workload.balancer={balancer}");
        let sets: Vec<&str> = base.iter().copied().chain([b.as_str()]).collect();
        common::run_checked(&common::scenario(&sets), seed, NullObserver)
    };
    let (mut rr, mut lo) = ([0.0; 2], [0.0; 2]);
    for seed in 1..=3 {
        let (r, l) = (run("round_robin", seed), run("least_outstanding", seed));
        assert_eq!(r.recycles, 0, "instances stay equal");
        for (sum, s) in [(&mut rr, &r), (&mut lo, &l)] {
            sum[0] += s.wait_fraction.unwrap();
            sum[1] += s.wait_ms_mean.unwrap();
        }
    }
    assert!(rr[0] / 3.0 > 0.1, "requests wait: {}", rr[0] / 3.0);
    for (k, name) in ["wait_fraction", "wait_ms_mean"].iter().enumerate() {
        let d = lo[k] / rr[k] - 1.0;
        assert!(
            d.abs() < 0.01,
            "{name}: least-outstanding {:+.2}% against round-robin",
            100.0 * d
        );
    }
}

/// Every invariant after every event, in aggregate mode: the default fleet
/// for a day, and a busy medium fleet (recycles, OOM pressure, resets).
#[test]
fn aggregate_runs_keep_every_invariant() {
    let s = common::check(&[aggval::AGGREGATE], 5);
    assert!(s.recycles > 50 && s.retry_ok > 0, "{s:?}");
    assert_eq!(s.requests_total, s.requests_failed + completed(&s));
    let busy = large_fleet(&[
        "fleet.instances=10",
        "workload.rps=400",
        "run.duration_h=0.5",
        "fleet.leak.mean_mb_per_request=0.05",
        "policy.token_bucket.rate_per_hour=2000",
        "engine.step_s=2",
    ]);
    let s = common::run_checked(&busy, 6, NullObserver);
    assert!(s.recycles > 50, "{s:?}");
    assert!(s.latency_ms_p50.is_some() && s.wait_ms_mean.is_some());
}

/// Completed requests, from the summary's counts.
fn completed(s: &fleetsim::metrics::Summary) -> u64 {
    s.requests_total - s.requests_failed
}

#[test]
fn engine_keys_are_validated_by_name() {
    for (set, key) in [
        ("engine.step_s=0", "engine.step_s"),
        ("engine.step_s=61", "engine.step_s"),
        ("engine.step_s=nan", "engine.step_s"),
    ] {
        let e = common::try_scenario(&[set]).expect_err(set);
        assert_eq!(e.key.as_deref(), Some(key), "{set}: {e}");
    }
    let e = common::try_scenario(&["engine.mode=fast"]).expect_err("a bad mode");
    assert!(e.to_string().contains("engine"), "{e}");
    let e = common::try_scenario(&["engine.steps=1"]).expect_err("an unknown key");
    assert!(e.to_string().contains("steps"), "{e}");
}

/// The event budget counts steps, not the billions of requests the large
/// fleet does not simulate one by one.
#[test]
fn the_large_fleet_fits_its_event_budget() {
    let sc = large_fleet(&[]);
    let estimate = fleetsim::scenario::estimated_events(&sc);
    assert!(estimate < 3e7, "{estimate}");
    assert!(estimate < sc.max_events as f64);
    // The same fleet request by request: ~8.6e9 events, refused up front.
    let e = aggval::try_large_fleet(&["engine.mode=exact"]).expect_err("over budget");
    assert_eq!(e.key.as_deref(), Some("run.max_events"), "{e}");
}

fn large_fleet(sets: &[&str]) -> Scenario {
    aggval::try_large_fleet(sets).expect("a valid scenario")
}

/// Sets for a fleet where OOM kills are frequent and requests many per
/// step: one instance of 4 sync workers at 40 rps (10 ms service), 60 s
/// steps, a container that holds the four only briefly, no recycling and
/// no keep-alive pool (so every reset is an in-flight kill).
const OOM_EVERY_STEP: [&str; 14] = [
    "engine.mode=aggregate",
    "engine.step_s=60",
    "fleet.instances=1",
    "fleet.workers_per_instance=4",
    "workload.rps=40",
    "workload.profile=constant",
    "workload.service_mean_ms=10",
    "workload.service_p99_ms=50",
    "fleet.container_mb=1400",
    "policy.base_limit_mb=3000",
    "policy.hard_limit_mb=4000",
    "client.keepalive_conns_per_worker=0",
    "policy.busy_rps=1000",
    "run.duration_h=2",
];

/// When one worker's growth in a step OOM-kills a later worker of the same
/// instance, that worker served its share of the step all the same: the
/// fleet's arrivals are the Poisson total (plus the requests the kills
/// found in flight). Counting only the survivors' shares lost ~600
/// requests (a worker's 60 s share) at each such kill.
#[test]
fn an_oom_kill_in_a_step_still_counts_the_victims_share() {
    let s = common::check(&OOM_EVERY_STEP, 3);
    assert!(s.oom_kills > 100, "{s:?}");
    assert_eq!(s.requests_failed, 0, "{s:?}");
    let expected = 40.0 * 7200.0 + s.requests_reset as f64;
    let sd = (40.0f64 * 7200.0).sqrt();
    let got = s.requests_total as f64;
    assert!(
        (got - expected).abs() < 4.0 * sd,
        "{got} requests arrived, {expected} +- {sd:.0} expected ({} OOM kills)",
        s.oom_kills
    );
}

/// A drain that finds its worker busy waits for the residual service
/// time; with a graceful timeout shorter than that, it is killed with
/// work in flight: at least one request (exactly one for a sync worker),
/// never none. No OOM kills and no keep-alive pool: every reset is a drain
/// kill's.
#[test]
fn a_drain_kill_after_a_busy_drain_finds_work_in_flight() {
    for concurrency in [1u32, 4] {
        let c = format!("fleet.concurrency={concurrency}");
        let s = common::check(
            &[
                aggval::AGGREGATE,
                "run.duration_h=6",
                "workload.rps=30",
                "workload.profile=constant",
                "fleet.graceful_timeout_s=0.1",
                "fleet.kill.drain_ends=graceful_timeout",
                "client.keepalive_conns_per_worker=0",
                "policy.busy_rps=100",
                &c,
            ],
            3,
        );
        assert!(s.drain_kills > 50 && s.oom_kills == 0, "{s:?}");
        let (kills, resets) = (s.drain_kills, s.requests_reset);
        if concurrency == 1 {
            assert_eq!(resets, kills, "{s:?}");
        } else {
            assert!(resets >= kills && resets <= 4 * kills, "{s:?}");
        }
    }
}

/// Every row of a run: (kind, time in us, instance).
#[derive(Default)]
struct Rows(Vec<(fleetsim::metrics::EventKind, u64, u32)>);

impl fleetsim::metrics::Observer for Rows {
    fn event(&mut self, row: &fleetsim::metrics::EventRow) {
        self.0.push((row.kind, row.t.0, row.instance));
    }
}

/// An estimated reset comes from a connection an exit closed, or from a
/// kill: its request's time is never before the recycle or kill that
/// ended a worker of the same instance, and at most the stale window plus
/// the longest drain and a step after it. Before the fix of 2026-11-30 a
/// step's requests placed before an exit in the step saw the connections
/// it closed (with 10 s steps, resets up to 10 s before the recycle of an
/// idle worker, which exits at once).
#[test]
fn aggregate_resets_follow_the_exit_that_made_them() {
    use fleetsim::metrics::EventKind::*;
    let sc = common::scenario(&["engine.mode=aggregate", "engine.step_s=10"]);
    let slack = sc.client.stale_window.0 + sc.fleet.graceful_timeout.0 + 10_000_000;
    let mut resets = 0;
    for seed in 1..=20 {
        let mut rows = Rows::default();
        Sim::new(&sc, seed, &mut rows).run().expect("a run");
        let ends: Vec<(u64, u32)> = rows
            .0
            .iter()
            .filter(|r| matches!(r.0, WorkerRecycled | OomKill | DrainKilled | EvilKill))
            .map(|r| (r.1, r.2))
            .collect();
        for &(kind, t, i) in rows
            .0
            .iter()
            .filter(|r| matches!(r.0, RetryOk | FetchFailed))
        {
            resets += 1;
            assert!(
                ends.iter()
                    .any(|&(e, j)| j == i && e <= t && t - e <= slack),
                "seed {seed}: a {kind:?} at {t} us on instance {i} follows no recycle or kill"
            );
        }
    }
    assert!(resets > 1000, "{resets} resets: too few to test");
}
