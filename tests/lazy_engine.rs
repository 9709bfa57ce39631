//! The fast path (`sim/lazy/`: served requests credited late, not heap
//! events) against the event engine it replaces: every output byte the
//! same (summary, every events.csv row, every timeline and workers.csv
//! row), over scenarios that reach each of its branches: queueing and
//! queue timeouts, a full backlog, OOM kills at the cgroup limit, request
//! counts and per-request samples, retries, spawn-then-exit, uWSGI's evil
//! kill, copy-on-write; and with invariant checks on, which materialize
//! and fold every instance after every event (which must change nothing).

mod common;

use fleetsim::engine::SimTime;
use fleetsim::metrics::{EventRow, Observer, TimelineRow, WorkerSample};
use fleetsim::{Scenario, Sim};

/// Every row a run emits, as text.
#[derive(Default)]
struct Everything(Vec<String>);

impl Observer for Everything {
    fn event(&mut self, row: &EventRow) {
        self.0.push(format!("{row:?}"));
    }
    fn timeline(&mut self, row: &TimelineRow) {
        self.0.push(format!("{row:?}"));
    }
    fn workers_wanted(&self) -> usize {
        usize::MAX
    }
    fn workers(&mut self, t: SimTime, live: &[WorkerSample]) {
        self.0.push(format!("{t:?} {live:?}"));
    }
}

/// The summary and every row, on the engine `how` picks.
fn outputs(sc: &Scenario, seed: u64, how: &str) -> (String, Vec<String>) {
    let mut rows = Everything::default();
    let mut sim = Sim::new(sc, seed, &mut rows);
    match how {
        "events" => sim = sim.with_event_completions(),
        "events+threads" => sim = sim.with_event_completions().with_draw_threads(),
        "checked" => sim = sim.with_lazy_completions().with_invariant_checks(),
        "fast+threads" => sim = sim.with_lazy_completions().with_draw_threads(),
        _ => sim = sim.with_lazy_completions(),
    }
    let out = sim
        .run()
        .unwrap_or_else(|e| panic!("{how} seed {seed}: {e}"));
    (format!("{:?}", out.summary), rows.0)
}

/// The fast path and the event engine agree byte for byte on the default
/// plus `sets` over `seeds`; returns how many rows were compared.
fn same(sets: &[&str], seeds: std::ops::Range<u64>, checked: bool) -> usize {
    same_sc(
        &common::scenario(sets),
        &format!("{sets:?}"),
        seeds,
        checked,
    )
}

fn same_sc(sc: &Scenario, sets: &str, seeds: std::ops::Range<u64>, checked: bool) -> usize {
    assert_eq!(
        fleetsim::sim_fallback(sc),
        None,
        "{sets} must take the fast path"
    );
    let sc = sc.clone();
    let mut n = 0;
    for seed in seeds {
        let reference = outputs(&sc, seed, "events");
        let fast = outputs(&sc, seed, if checked { "checked" } else { "fast" });
        for (k, (a, b)) in reference.1.iter().zip(&fast.1).enumerate() {
            assert_eq!(a, b, "{sets} seed {seed}: row {k} differs");
        }
        assert_eq!(
            reference.1.len(),
            fast.1.len(),
            "{sets} seed {seed}: row count"
        );
        if reference.0 != fast.0 {
            let at = reference
                .0
                .bytes()
                .zip(fast.0.bytes())
                .position(|(a, b)| a != b)
                .unwrap_or(0);
            let from = at.saturating_sub(60);
            panic!(
                "{sets} seed {seed}: summary differs at {at}:\n events: {}\n fast:   {}",
                &reference.0[from..(at + 60).min(reference.0.len())],
                &fast.0[from..(at + 60).min(fast.0.len())]
            );
        }
        n += reference.1.len();
    }
    n
}

#[test]
fn the_default_is_the_event_engine_byte_for_byte() {
    same(&["run.duration_h=6"], 1..6, false);
}

#[test]
fn the_peer_fleet_at_20_rps_is_the_event_engine_byte_for_byte() {
    same(
        &[
            "run.duration_h=2",
            "workload.rps=20",
            "workload.profile=constant",
            "policy.busy_deferral=false",
            "fleet.warm_start=false",
            "client.keepalive_conns_per_worker=0",
        ],
        1..4,
        false,
    );
}

/// Each branch of the fast path, on a scenario that takes it often.
const BRANCHES: &[(&str, &[&str])] = &[
    // Overload: most requests wait, many time out, the backlog fills.
    (
        "backlog and queue timeouts",
        &[
            "run.duration_h=1",
            "workload.rps=55",
            "workload.profile=constant",
            "workload.queue_timeout_s=1.5",
            "workload.backlog_requests=40",
        ],
    ),
    // A small container: the kernel kills at the cgroup limit.
    (
        "OOM kills",
        &[
            "run.duration_h=4",
            "fleet.container_mb=1750",
            "workload.rps=3",
        ],
    ),
    // A few huge requests: one that passes the projection makes every
    // completion of its instance an event (`promote_all`; the sim fuzz
    // target's input kept in fuzz/regressions/sim/fast-path-cgroup-projection).
    (
        "OOM kills after huge requests",
        &[
            "run.duration_h=0.4",
            "fleet.instances=1",
            "fleet.leak.distribution=\"exponential\"",
            "fleet.leak.mean_mb_per_request=20.0",
            "fleet.leak.cv=3.0",
            "fleet.leak.warmup_mb=300.0",
            "fleet.leak.warmup_requests=500.0",
            "fleet.leak.step_probability=0.0",
        ],
    ),
    // A queue timeout whose slot frees at a completion that OOM-kills its
    // own worker: the event engine never fails it there (the worker is
    // gone and the request stays in the backlog), so the fast path must
    // not credit it before that completion (the sim fuzz target's input,
    // kept in fuzz/regressions/sim/fast-path-timeout-behind-an-oom-kill).
    (
        "queue timeouts behind an OOM kill",
        &[
            "run.duration_h=0.13",
            "fleet.boot_s=60.0",
            "fleet.boot_rss_mb=283.7",
            "fleet.leak.distribution=\"constant\"",
            "fleet.leak.mean_mb_per_request=19.07",
            "fleet.leak.step_probability=0.34",
            "fleet.leak.step_mean_mb=0.0",
            "workload.rps=28.1",
            "workload.profile=\"constant\"",
            "policy.base_limit_mb=1653.8",
            "policy.hard_limit_mb=3000.0",
            "policy.busy_deferral=false",
            "policy.min_worker_age_s=2296.2",
        ],
    ),
    // No backlog at all: a request is served when a slot is free and
    // refused otherwise (the fast path refused every request; the sim
    // fuzz target's input, fuzz/regressions/sim/fast-path-no-backlog).
    (
        "no backlog",
        &[
            "run.duration_h=1",
            "workload.backlog_requests=0",
            "workload.rps=8",
        ],
    ),
    (
        "spawn-then-exit",
        &[
            "run.duration_h=4",
            "policy.replacement=\"spawn_then_exit\"",
            "workload.rps=3",
        ],
    ),
    (
        "per-request samples",
        &[
            "run.duration_h=3",
            "policy.sampling=\"requests\"",
            "policy.sample_every_requests=7",
        ],
    ),
    (
        "request-count trigger",
        &[
            "run.duration_h=3",
            "policy.max_requests.enabled=true",
            "policy.max_requests.requests=300",
            "policy.max_requests.jitter_requests=40",
        ],
    ),
    (
        "random balancer",
        &["run.duration_h=3", "workload.balancer=\"random\""],
    ),
    (
        "cold fleet",
        &[
            "run.duration_h=3",
            "fleet.warm_start=false",
            "workload.rps=4",
        ],
    ),
];

#[test]
fn every_branch_is_the_event_engine_byte_for_byte() {
    for (what, sets) in BRANCHES {
        eprintln!("{what}");
        let n = same(sets, 1..5, false);
        assert!(n > 100, "{what}: {n} rows");
    }
}

#[test]
fn drawing_on_helper_threads_changes_nothing() {
    // `Sim::with_draw_threads`, on both engines, against the event engine
    // drawing inline: the default (a diurnal day), a constant rate, a
    // rate series that stops (the arrivals end before the run), and the
    // branches.
    let mut series = common::scenario(&["run.duration_h=2"]);
    series.workload.profile = fleetsim::traffic::profile::RateProfile::Series {
        points: vec![
            (SimTime::ZERO, 3.0),
            (SimTime::from_secs(1800), 9.0),
            (SimTime::from_secs(3600), 0.0),
        ],
    };
    let mut scenarios: Vec<(String, Scenario)> = vec![
        ("default".into(), common::scenario(&["run.duration_h=4"])),
        ("series".into(), series),
    ];
    for (what, sets) in BRANCHES {
        scenarios.push((what.to_string(), common::scenario(sets)));
    }
    for (what, sc) in &scenarios {
        for seed in 1..3 {
            let reference = outputs(sc, seed, "events");
            for how in ["events+threads", "fast+threads"] {
                let threaded = outputs(sc, seed, how);
                assert!(reference == threaded, "{what} seed {seed}: {how} differs");
            }
        }
    }
}

#[test]
fn materializing_every_instance_after_every_event_changes_nothing() {
    for (_, sets) in BRANCHES.iter().take(3) {
        same(sets, 1..3, true);
    }
    same(&["run.duration_h=3"], 1..3, true);
}

#[test]
fn every_preset_the_fast_path_takes_is_the_event_engine_byte_for_byte() {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("scenarios");
    let mut taken = Vec::new();
    let mut names: Vec<String> = std::fs::read_dir(&dir)
        .unwrap()
        .filter_map(|e| {
            let p = e.unwrap().path();
            (p.extension()? == "toml")
                .then(|| p.file_stem().unwrap().to_string_lossy().into_owned())
        })
        .collect();
    names.sort();
    for name in &names {
        // Kill paths and surges are the event engine's: turned off here to
        // reach the rest of each preset (its trigger, sampler, memory model).
        for sets in [
            &["run.duration_h=3"][..],
            &["run.duration_h=3", "fleet.kill.request_timeout_s=0"],
        ] {
            let sc = common::preset(name, sets);
            if fleetsim::sim_fallback(&sc).is_none() {
                same_sc(&sc, name, 1..3, false);
                taken.push(name.clone());
                break;
            }
        }
    }
    eprintln!("presets on the fast path: {taken:?}");
    assert!(taken.len() >= 9, "presets on the fast path: {taken:?}");
}

/// A warm start whose independently drawn ages put an instance over its
/// container (unicorn-worker-killer: three workers near 1-2 GiB limits in a
/// 2 GiB container) opens as a running fleet would, after the kernel's
/// kills (`sim/warm.rs`): no OOM kill at time zero, on either engine,
/// which agree on every row. Before, every seed opened on one (8 of 8 in
/// 2 h runs), and `min_serving_workers` differed between the engines on 9
/// of 59 seeds until `start` sampled it (session 28).
#[test]
fn a_warm_fleet_never_opens_on_an_oom_kill() {
    let sc = common::preset(
        "unicorn-worker-killer",
        &["run.duration_h=1", "fleet.kill.request_timeout_s=0"],
    );
    let mut ooms = 0;
    for seed in 1..25 {
        let (summary, rows) = outputs(&sc, seed, "events");
        assert_eq!(
            (summary.clone(), rows.clone()),
            outputs(&sc, seed, "fast"),
            "seed {seed}"
        );
        let at_zero = rows
            .iter()
            .filter(|r| r.starts_with("EventRow { t: SimTime(0), kind: OomKill"))
            .count();
        assert_eq!(at_zero, 0, "seed {seed}: an OOM kill at time zero");
        ooms += rows.iter().filter(|r| r.contains("kind: OomKill")).count();
    }
    // The fleet does OOM (the check above looks where kills are written).
    assert!(ooms >= 3, "{ooms} OOM kills in 24 one-hour runs");
}

#[test]
fn a_large_fleet_takes_the_fast_path_by_itself_and_a_small_one_unless_saturated() {
    // 20 instances of 3: past LAZY_MIN_WORKERS, `Sim::new` alone.
    let sets = [
        "run.duration_h=0.5",
        "fleet.instances=20",
        "workload.rps=30",
    ];
    let sc = common::scenario(&sets);
    assert!(sc.fleet.workers() >= fleetsim::sim::LAZY_MIN_WORKERS);
    let run = |sim: Sim<'_, &mut Everything>| sim.run().unwrap().summary;
    let (mut a, mut b) = (Everything::default(), Everything::default());
    let sim = Sim::new(&sc, 1, &mut a);
    assert!(sim.lazy_completions(), "a fleet of 60 takes the fast path");
    let by_itself = run(sim);
    let events = run(Sim::new(&sc, 1, &mut b).with_event_completions());
    assert_eq!(format!("{by_itself:?}"), format!("{events:?}"));
    assert_eq!(a.0, b.0);
    same(&sets, 1..3, false);
    // The seeds' 6 workers: the fast path at their own load, the event
    // engine saturated (LAZY_MAX_LOAD), unless asked.
    let small = common::scenario(&[]);
    let sim = Sim::new(&small, 1, fleetsim::metrics::NullObserver);
    assert!(
        sim.lazy_completions(),
        "the seeds' 6 workers at about 1 rps"
    );
    let saturated = common::scenario(&["workload.rps=50", "workload.profile=\"constant\""]);
    let sim = Sim::new(&saturated, 1, fleetsim::metrics::NullObserver);
    assert!(
        !sim.lazy_completions(),
        "the seeds' 6 workers saturated take the event engine"
    );
    assert!(sim.with_lazy_completions().lazy_completions());
    let sets = [
        "run.duration_h=0.2",
        "workload.rps=50",
        "workload.profile=\"constant\"",
    ];
    same(&sets, 1..2, false);
}
