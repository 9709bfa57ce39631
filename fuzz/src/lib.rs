//! The fuzz harnesses: one entry point per target, each taking the bytes
//! libFuzzer hands it and driving the same library path the CLI takes.
//!
//! A harness returns normally when the input was accepted or rejected with
//! a clear error, and panics on a bug: a panic inside fleetsim, an error
//! message that is empty or longer than one line, an invariant failure in
//! the simulator, or a scenario the CLI would write (`scenario.toml`) that
//! does not load back to the same scenario.
//!
//! The fuzz targets (`fuzz_targets/*.rs`) are one-line wrappers; the stable
//! test `tests/fuzz_regressions.rs` includes this file and replays every
//! input under `fuzz/regressions/<target>/` through the same functions, so
//! a found crash stays fixed without a nightly compiler.

use arbitrary::Unstructured;
use fleetsim::Sim;
use fleetsim::metrics::CsvObserver;
use fleetsim::replay::{self, Knobs, Options, Recording};
use fleetsim::scenario::{DEFAULT_SCENARIO, Override, Scenario, load, parse_override};
use std::sync::OnceLock;

/// A harness: panics on a finding, returns otherwise.
pub type Harness = fn(&[u8]);

/// The targets, by name (the directories under `fuzz/regressions/`).
pub const TARGETS: [(&str, Harness); 4] = [
    ("scenario", scenario),
    ("sweep", sweep),
    ("recording", recording),
    ("sim", sim),
];

/// An error the user would see: it must say something, on one line.
fn one_line(what: &str, msg: &str) {
    assert!(!msg.trim().is_empty(), "{what}: empty error message");
    assert!(
        !msg.contains('\n') && !msg.contains('\r'),
        "{what}: error message is not one line: {msg:?}"
    );
}

/// Files a scenario may name (`extends`, `series_csv`): fixed contents, so
/// an input is the whole story.
fn fake_files(path: &str) -> Result<String, String> {
    match path {
        "render-2x3.toml" => Ok(DEFAULT_SCENARIO.to_string()),
        "series.csv" => Ok("t_s,rps\n0,1\n600,2.5\n1800,0.5\n".to_string()),
        _ => Err(format!("cannot read {path}: no such file")),
    }
}

/// The `--set` overrides carried by an input: its lines `#set KEY=VALUE`
/// (TOML comments, so the rest of the file still parses as written).
fn input_overrides(text: &str) -> Result<Vec<Override>, String> {
    text.lines()
        .filter_map(|l| l.strip_prefix("#set "))
        .map(parse_override)
        .collect()
}

/// Target `scenario`: bytes -> UTF-8 -> `--set` overrides -> TOML -> raw ->
/// validated scenario, as `fleetsim run FILE --set ...` loads it. An
/// accepted scenario must serialise to `scenario.toml` and load back equal.
pub fn scenario(data: &[u8]) {
    let Ok(text) = std::str::from_utf8(data) else {
        return; // the CLI refuses non-UTF-8 before parsing (tests/bad_inputs)
    };
    let _ = fleetsim::scenario::load::parse_series(text).map_err(|e| one_line("series", &e));
    let overrides = match input_overrides(text) {
        Ok(o) => o,
        Err(e) => return one_line("--set", &e),
    };
    match load(text, "fuzz.toml", &overrides, &mut fake_files) {
        Err(e) => one_line("scenario", &e.to_string()),
        Ok((raw, sc)) => {
            let resolved = toml::to_string(&raw).expect("a valid raw scenario serialises");
            let (_, again) = load(&resolved, "scenario.toml", &[], &mut fake_files)
                .unwrap_or_else(|e| panic!("scenario.toml does not load back: {e}\n{resolved}"));
            assert_eq!(again, sc, "scenario.toml loads back different\n{resolved}");
        }
    }
}

/// The embedded default scenario, loaded once.
fn default_raw() -> &'static fleetsim::scenario::RawScenario {
    static RAW: OnceLock<fleetsim::scenario::RawScenario> = OnceLock::new();
    RAW.get_or_init(|| {
        load(DEFAULT_SCENARIO, "<embedded>", &[], &mut fake_files)
            .expect("the default loads")
            .0
    })
}

/// The calibration base of the `recording` target: the default with an
/// event budget of `CALIBRATION_MAX_EVENTS`, so a recording whose regime
/// spans days (a simulated window as long) is refused by the budget in
/// milliseconds instead of simulated for seconds: the harness tests the
/// paths, not the CLI's patience (a 10.8 s calibration once timed out).
fn calibration_raw() -> &'static fleetsim::scenario::RawScenario {
    static RAW: OnceLock<fleetsim::scenario::RawScenario> = OnceLock::new();
    RAW.get_or_init(|| {
        let mut raw = default_raw().clone();
        raw.run.max_events = CALIBRATION_MAX_EVENTS;
        raw
    })
}

/// The `recording` target's event budget per simulated window.
pub const CALIBRATION_MAX_EVENTS: u64 = 100_000;

fn default_scenario() -> &'static Scenario {
    static SC: OnceLock<Scenario> = OnceLock::new();
    SC.get_or_init(|| {
        load(DEFAULT_SCENARIO, "<embedded>", &[], &mut fake_files)
            .expect("the default loads")
            .1
    })
}

/// Target `sweep`: a sweep file as `fleetsim sweep` reads it, then the
/// first, middle and last configurations laid over the default base (the
/// trial runner's path, without running the simulations).
pub fn sweep(data: &[u8]) {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let (_, sweep) = match fleetsim::sweep::spec::parse(text) {
        Ok(s) => s,
        Err(e) => return one_line("sweep", &format!("sweep.toml{e}")),
    };
    let count = sweep.config_count();
    let (raw, _) = load(DEFAULT_SCENARIO, "<embedded>", &[], &mut fake_files).expect("default");
    let base = fleetsim::sweep::runner::Base::new(&raw, "render-2x3", None, sweep.hours);
    for c in [0, 1, count / 2, count] {
        if c > count {
            continue;
        }
        let mut config = sweep.fixed.clone();
        config.extend(sweep.config(c));
        if let Err(e) = base.scenario(&config) {
            one_line("sweep config", &e.to_string());
        }
    }
}

/// Target `recording`: the input's NUL-separated pieces are recordings
/// (CSV, JSON Lines or logs, detected per file), imported, assembled,
/// analysed with and without a scenario, rendered, and calibrated.
pub fn recording(data: &[u8]) {
    let mut parts = Vec::new();
    for (i, piece) in data.split(|&b| b == 0).take(4).enumerate() {
        match replay::import::read(&format!("rec{i}"), piece) {
            Ok(p) => parts.push(p),
            Err(e) => return one_line("import", &e.to_string()),
        }
    }
    let rec = match Recording::assemble(parts) {
        Ok(r) => r,
        Err(e) => return one_line("assemble", &e.to_string()),
    };
    let sc = default_scenario();
    for opts in [
        Options::default(),
        Options {
            scenario: Some(Knobs::from_scenario(sc)),
            ..Options::default()
        },
    ] {
        let a = replay::analyse(&rec, &opts);
        let _ = replay::render::report(&a);
        serde_json::to_string(&a).expect("analysis.json serialises");
    }
    let cal = match replay::calibrate::calibrate(
        &rec,
        calibration_raw(),
        1,
        replay::calibrate::Budget::TINY,
        replay::calibrate::Options::DEFAULT,
        &|_| (),
    ) {
        Ok(c) => c,
        Err(e) => return one_line("calibrate", &e.to_string()),
    };
    let _ = replay::calibrate::render(&cal);
    // As the CLI does: the fits become `--set KEY=VALUE` strings.
    let sets: Result<Vec<Override>, String> = cal
        .overrides()
        .iter()
        .map(|o| parse_override(&format!("{}={}", o.key, o.value)))
        .collect();
    let sets = sets.expect("the calibration's overrides parse");
    match load(DEFAULT_SCENARIO, "<embedded>", &sets, &mut fake_files) {
        Ok((raw, _)) => {
            replay::calibrate::calibrated_toml(&raw, &cal).expect("calibrated.toml prints");
        }
        Err(e) => one_line("calibrated scenario", &e.to_string()),
    }
}

/// How one scenario key is drawn in the `sim` target.
enum Gen {
    Bool,
    Int(i64, i64),
    Float(f64, f64),
    Choice(&'static [&'static str]),
}

use Gen::{Bool, Choice, Float, Int};

const SPREAD: &[&str] = &["random", "per_worker"];

/// Every key the `sim` target may set, with the range it draws from: wide
/// enough to reach the odd corners (zero cooldowns, one worker, huge leaks),
/// narrow enough that most draws validate.
const KEYS: &[(&str, Gen)] = &[
    ("run.timeline_step_s", Float(1.0, 3600.0)),
    ("run.saturate", Bool),
    ("fleet.instances", Int(1, 4)),
    ("fleet.workers_per_instance", Int(1, 6)),
    ("fleet.concurrency", Int(1, 4)),
    ("fleet.container_mb", Float(400.0, 8192.0)),
    ("fleet.boot_rss_mb", Float(20.0, 600.0)),
    ("fleet.shared_mb", Float(0.0, 300.0)),
    ("fleet.boot_s", Float(0.0, 60.0)),
    ("fleet.graceful_timeout_s", Float(0.0, 120.0)),
    ("fleet.warm_start", Bool),
    (
        "fleet.leak.distribution",
        Choice(&["constant", "lognormal", "exponential"]),
    ),
    ("fleet.leak.mean_mb_per_request", Float(0.0, 20.0)),
    ("fleet.leak.cv", Float(0.0, 3.0)),
    ("fleet.leak.warmup_mb", Float(0.0, 300.0)),
    ("fleet.leak.warmup_requests", Float(0.0, 500.0)),
    ("fleet.leak.step_probability", Float(0.0, 1.0)),
    ("fleet.leak.step_mean_mb", Float(0.0, 200.0)),
    ("workload.rps", Float(0.0, 40.0)),
    (
        "workload.profile",
        Choice(&["constant", "diurnal", "series"]),
    ),
    ("workload.series_csv", Choice(&["series.csv"])),
    ("workload.peak_to_trough", Float(1.0, 50.0)),
    ("workload.peak_hour", Float(0.0, 23.99)),
    ("workload.start_hour", Float(0.0, 23.99)),
    (
        "workload.balancer",
        Choice(&["round_robin", "least_outstanding", "random"]),
    ),
    (
        "workload.service",
        Choice(&["constant", "exponential", "lognormal"]),
    ),
    ("workload.service_mean_ms", Float(0.001, 60_000.0)),
    ("workload.service_p99_ms", Float(0.001, 120_000.0)),
    ("workload.backlog_requests", Int(0, 5000)),
    ("workload.queue_timeout_s", Float(0.0, 120.0)),
    ("client.retries", Int(0, 5)),
    ("client.retry_delay_ms", Float(0.0, 5000.0)),
    ("client.keepalive_conns_per_worker", Int(0, 8)),
    ("client.stale_window_s", Float(0.0, 120.0)),
    ("client.connections", Choice(&["pooled", "pinned", "close"])),
    ("client.conns_per_instance", Int(1, 40)),
    ("client.server_keepalive_s", Float(0.001, 30.0)),
    ("policy.rss_trigger", Bool),
    ("policy.rss_consecutive_samples", Int(1, 5)),
    ("policy.min_worker_age_s", Float(0.0, 3600.0)),
    ("policy.base_limit_mb", Float(20.0, 2000.0)),
    ("policy.jitter_mb", Float(0.0, 300.0)),
    ("policy.hard_limit_mb", Float(20.0, 3000.0)),
    ("policy.min_runway_mb", Float(0.0, 300.0)),
    ("policy.sampling", Choice(&["timer", "requests"])),
    ("policy.tick_s", Float(0.001, 600.0)),
    ("policy.near_limit_fraction", Float(0.0, 1.0)),
    ("policy.near_tick_s", Float(0.001, 120.0)),
    ("policy.sample_every_requests", Int(1, 500)),
    ("policy.cooldown_s", Float(0.0, 1200.0)),
    ("policy.pressure_cooldown_s", Float(0.0, 600.0)),
    ("policy.escalate_on_ceiling", Bool),
    ("policy.min_headroom_mb", Float(0.0, 4000.0)),
    ("policy.busy_deferral", Bool),
    ("policy.busy_rps", Float(0.0, 20.0)),
    ("policy.defer_max_s", Float(0.0, 7200.0)),
    ("policy.busy_window_s", Float(1.0, 600.0)),
    (
        "policy.replacement",
        Choice(&["exit_then_spawn", "spawn_then_exit"]),
    ),
    ("policy.lease.enabled", Bool),
    ("policy.lease.ttl_s", Float(0.001, 1200.0)),
    ("policy.lease.exit_on_pressure", Bool),
    ("policy.lease.exit_on_hard_ceiling", Bool),
    ("policy.token_bucket.enabled", Bool),
    ("policy.token_bucket.rate_per_hour", Float(0.01, 1000.0)),
    ("policy.token_bucket.burst", Float(1.0, 20.0)),
    ("policy.token_bucket.exit_on_pressure", Bool),
    ("policy.token_bucket.exit_on_hard_ceiling", Bool),
    ("policy.window_cap.enabled", Bool),
    ("policy.window_cap.max_recycles", Int(1, 20)),
    ("policy.window_cap.window_s", Float(0.001, 7200.0)),
    ("policy.window_cap.exit_on_pressure", Bool),
    ("policy.window_cap.exit_on_hard_ceiling", Bool),
    ("policy.capacity_floor.enabled", Bool),
    ("policy.capacity_floor.min_serving_workers", Int(0, 24)),
    ("policy.capacity_floor.exit_on_pressure", Bool),
    ("policy.capacity_floor.exit_on_hard_ceiling", Bool),
    ("policy.max_requests.enabled", Bool),
    ("policy.max_requests.requests", Int(1, 5000)),
    ("policy.max_requests.jitter_requests", Int(0, 2000)),
    ("policy.max_requests.spread", Choice(SPREAD)),
    ("policy.lifetime.enabled", Bool),
    ("policy.lifetime.max_s", Float(0.001, 7200.0)),
    ("policy.lifetime.jitter_s", Float(0.0, 3600.0)),
    ("policy.lifetime.spread", Choice(SPREAD)),
    ("policy.drift.enabled", Bool),
    ("policy.drift.max_drift_mb", Float(0.0, 500.0)),
    ("policy.drift.jitter_fraction", Float(0.0, 1.0)),
    ("policy.drift.gc_reclaim_fraction", Float(0.0, 1.0)),
    ("policy.drift.consecutive_violations", Int(1, 5)),
    ("policy.evil_rss.enabled", Bool),
    ("policy.evil_rss.limit_mb", Float(20.0, 3000.0)),
    ("policy.instance_memory.enabled", Bool),
    ("policy.instance_memory.percent_usage", Float(1.0, 100.0)),
    ("policy.instance_memory.frequency_s", Float(0.001, 600.0)),
    // The replacement modes, appended so earlier inputs keep their
    // meaning up to here (a second `policy.replacement` overrides the first).
    (
        "policy.replacement",
        Choice(&["detach_and_spawn", "timed_handover"]),
    ),
    (
        "policy.detach_and_spawn.max_request_queue_size",
        Int(0, 200),
    ),
    ("policy.timed_handover.respawn_interval_s", Float(0.0, 60.0)),
    ("policy.rolling_restart.enabled", Bool),
    ("policy.rolling_restart.frequency_s", Float(0.001, 7200.0)),
    ("policy.rolling_restart.splay_s", Float(0.0, 600.0)),
    ("policy.rolling_restart.interval_s", Float(0.001, 120.0)),
    ("policy.forkbomb.enabled", Bool),
    ("policy.forkbomb.delay_s", Float(0.001, 10.0)),
    ("policy.forkbomb.check_interval_s", Int(0, 5)),
    ("fleet.cold_start.factor", Float(1.0, 10.0)),
    ("fleet.cold_start.requests", Int(0, 100)),
    ("fleet.cold_start.duration_s", Float(0.0, 120.0)),
];

/// The events one `sim` execution may process: enough for a busy hour of a
/// small fleet, few enough that an execution takes milliseconds.
pub const SIM_MAX_EVENTS: u64 = 30_000;

/// Events times worker structs one `sim` execution may check: the
/// invariant checker visits every worker after every event, so a fleet of
/// thousands got its 30,000 events in seconds (an input that took 2.2 s
/// alone and 13 s beside a build, a libFuzzer timeout though nothing hung).
/// Big fleets get fewer events, so an execution stays in milliseconds.
pub const SIM_MAX_WORK: u64 = 3_000_000;

fn draw(u: &mut Unstructured, g: &Gen) -> arbitrary::Result<toml::Value> {
    Ok(match g {
        Bool => toml::Value::Boolean(u.arbitrary()?),
        Int(lo, hi) => toml::Value::Integer(u.int_in_range(*lo..=*hi)?),
        Choice(c) => toml::Value::String(u.choose(c)?.to_string()),
        // The ends and zero are the corners bugs live in; otherwise a
        // uniform draw over the range.
        Float(lo, hi) => toml::Value::Float(match u.int_in_range(0..=7u8)? {
            0 => *lo,
            1 => *hi,
            2 => 0.0f64.clamp(*lo, *hi),
            _ => lo + (hi - lo) * (u.int_in_range(0..=u32::MAX)? as f64 / u32::MAX as f64),
        }),
    })
}

/// The `sim` target's scenario: the embedded default, shortened to at most
/// two simulated hours, with each key of `KEYS` set or left by the input.
pub fn sim_overrides(data: &[u8]) -> (u64, Vec<Override>) {
    let mut u = Unstructured::new(data);
    let seed = u.arbitrary::<u64>().unwrap_or(1);
    let secs = u.int_in_range(1..=7200u32).unwrap_or(600);
    let mut sets = vec![Override {
        key: "run.duration_h".into(),
        value: toml::Value::Float(secs as f64 / 3600.0),
    }];
    for (key, g) in KEYS {
        if !u.arbitrary::<bool>().unwrap_or(false) {
            continue;
        }
        let Ok(value) = draw(&mut u, g) else { break };
        sets.push(Override {
            key: key.to_string(),
            value,
        });
    }
    sets.push(Override {
        key: "run.max_events".into(),
        value: toml::Value::Integer(SIM_MAX_EVENTS as i64),
    });
    (seed, sets)
}

/// Target `sim`: a structured input mapped onto a small scenario, run with
/// every invariant checked after every event and the CSV writers on. A
/// validation error or the event budget is a fine answer; a panic is a bug.
pub fn sim(data: &[u8]) {
    let (seed, sets) = sim_overrides(data);
    if std::env::var_os("FUZZ_SHOW").is_some() {
        // `FUZZ_SHOW=1 cargo test --test fuzz_regressions -- --nocapture`
        // prints the scenario an input maps to.
        let shown: Vec<String> = sets
            .iter()
            .map(|o| format!("{}={}", o.key, o.value))
            .collect();
        eprintln!("sim input: --seed {seed} --set {}", shown.join(" --set "));
    }
    let mut sc = match load(DEFAULT_SCENARIO, "<fuzz sim>", &sets, &mut fake_files) {
        Ok((_, sc)) => sc,
        Err(e) => return one_line("sim scenario", &e.to_string()),
    };
    // Every worker struct, spares included (spawn-then-exit doubles them).
    let structs = 2 * sc.fleet.workers().max(1) as u64;
    sc.max_events = sc.max_events.min((SIM_MAX_WORK / structs).max(100));
    let mut obs = CsvObserver::new(
        std::io::sink(),
        std::io::sink(),
        sc.policy.base_limit_mb,
        sc.policy.hard_limit_mb,
    );
    // The event engine with every invariant checked after every event,
    // and, where the scenario allows it, the fast path (forced at every
    // fleet size), which must write the same summary, byte for byte. The
    // fast path runs unchecked: its check materializes and folds every
    // instance after every event, re-assigning (and re-drawing) the whole
    // backlog each time, and an overloaded fleet with 2,000 requests
    // waiting ran 44 s (the fuzzer's timeout is 10 s); tests/lazy_engine.rs
    // runs it checked on scenarios that reach each of its branches.
    match Sim::new(&sc, seed, &mut obs)
        .with_event_completions()
        .with_invariant_checks()
        .run()
    {
        Ok(out) => {
            let json = serde_json::to_string(&out.summary).expect("summary.json serialises");
            if fleetsim::sim_fallback(&sc).is_none() {
                let fast = Sim::new(&sc, seed, fleetsim::metrics::NullObserver)
                    .with_lazy_completions()
                    .run();
                // (Its event count reaches the budget no sooner: it counts a
                // completion when it credits it, at or after its time.)
                if let Ok(fast) = fast {
                    let fast = serde_json::to_string(&fast.summary).expect("serialises");
                    assert_eq!(json, fast, "the fast path and the event engine differ");
                }
            }
        }
        Err(e) => one_line("sim run", &e.to_string()),
    }
    obs.finish().expect("the sinks take every row");
}
