//! `fleetsim run`: one simulation, its summary, and its CSV recordings.

use super::Failure;
use super::output::{
    AtomicFile, Loaded, SERIES_COPY, ScenarioArgs, load_scenario, with_series_copy,
};
use super::run_dir::Staging;
use clap::Args;
use fleetsim::metrics::{CsvObserver, Summary, WorkersCsv, threshold};
use fleetsim::{Scenario, Sim, SimError};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

/// Raised by the Ctrl-C handler; the event loop reads it every few thousand events.
static STOP: AtomicBool = AtomicBool::new(false);

/// Where an interrupted run keeps its rows: names that say they are partial.
const PARTIAL: [(&str, &str); 3] = [
    ("events.csv", "events.partial.csv"),
    ("timeline.csv", "timeline.partial.csv"),
    ("workers.csv", "workers.partial.csv"),
];

#[derive(Args, Debug)]
pub struct RunArgs {
    #[command(flatten)]
    pub scenario: ScenarioArgs,
    /// Master seed; every random stream derives from it. Same seed, same bytes.
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    /// Simulated hours (overrides run.duration_h).
    #[arg(long)]
    pub hours: Option<f64>,
    /// Output directory [default: out/<scenario>-seed<N>].
    #[arg(long)]
    pub out: Option<PathBuf>,
    /// Print summary.json to stdout instead of the table.
    #[arg(long)]
    pub json: bool,
    /// Check every invariant after every event (slow; for debugging scenarios).
    #[arg(long)]
    pub check_invariants: bool,
    /// Exit 1 when the run crosses a threshold, k6-style: `METRIC OP NUMBER`
    /// on summary.json's metrics, or a count with `_per_hour` appended, e.g.
    /// --fail-if 'fetch_failed_per_hour > 0.1' (repeatable; every output is
    /// written first).
    #[arg(long = "fail-if", value_name = "EXPR")]
    pub fail_if: Vec<String>,
    /// Overwrite a complete run of another scenario, override set or seed
    /// in the output directory (refused without it).
    #[arg(long)]
    pub force: bool,
}

pub fn run(args: RunArgs) -> Result<(), Failure> {
    let hours = super::output::hours_override(args.hours);
    // Thresholds are checked before any work: a typo fails in a second.
    let thresholds = args
        .fail_if
        .iter()
        .map(|t| threshold::parse(t).map_err(Failure::input))
        .collect::<Result<Vec<_>, _>>()?;
    // The duration came from the flag, not the file: a refusal says so.
    let loaded = load_scenario(&args.scenario, hours)
        .map_err(|f| super::output::blame_hours(f, args.hours))?;
    let sc = &loaded.scenario;
    // The resolved scenario (every default, every --set applied), written
    // as scenario.toml so the directory says which policy produced it.
    // (with a series, it names the copy beside it: what write_scenario writes)
    let resolved =
        toml::to_string(&with_series_copy(&loaded.raw)).map_err(|e| Failure::run(e.to_string()))?;
    let digest = super::output::overrides_digest(&args.scenario.set, args.hours)
        .map_or(String::new(), |d| format!("-{d}"));
    let target = args
        .out
        .clone()
        .unwrap_or_else(|| PathBuf::from(format!("out/{}-seed{}{digest}", loaded.stem, args.seed)));
    refuse_another_run(&target, &resolved, args.seed, args.force)?;
    // Every file is written into a fresh hidden directory beside the
    // target, swapped in only when complete: a run that fails or is
    // killed leaves the target as it was (run_dir.rs).
    let staging = Staging::begin(&target)?;
    let out = staging.path().to_path_buf();
    // Installed before the loop starts; a second handler (never, in one
    // `run`) would fail, and Ctrl-C would then end the process as usual.
    let _ = ctrlc::set_handler(|| STOP.store(true, Ordering::SeqCst));
    let mut events = AtomicFile::create(out.join("events.csv"))?;
    let mut timeline = AtomicFile::create(out.join("timeline.csv"))?;
    let mut workers = AtomicFile::create(out.join("workers.csv"))?;
    let mut obs = (
        CsvObserver::new(
            &mut events,
            &mut timeline,
            sc.policy.base_limit_mb,
            sc.policy.hard_limit_mb,
        ),
        WorkersCsv::new(&mut workers),
    );
    let clock = Arc::new(AtomicU64::new(0));
    let bar = super::progress::Progress::clock(
        format!("run {} seed {}", loaded.stem, args.seed),
        sc.duration.as_secs_f64().ceil() as u64,
        clock.clone(),
    );
    let mut sim = Sim::new(sc, args.seed, &mut obs)
        .with_stop_flag(&STOP)
        .with_progress(&clock);
    if args.check_invariants {
        sim = sim.with_invariant_checks();
    }
    // One run: where a core is spare, the draws are made beside it (the
    // same bytes, `Sim::with_draw_threads`).
    if std::thread::available_parallelism().is_ok_and(|n| n.get() > 1) {
        sim = sim.with_draw_threads();
    }
    let result = sim.run();
    match &result {
        Ok(_) => bar.finish(),
        Err(_) => bar.abandon(),
    }
    let (csv, per_worker) = obs;
    csv.finish()
        .map_err(|e| Failure::run(format!("{}: {e}", target.display())))?;
    per_worker
        .finish()
        .map_err(|e| Failure::run(format!("{}: {e}", target.join("workers.csv").display())))?;
    let output = match result {
        Ok(output) => output,
        Err(SimError::Interrupted { at, events: n }) => {
            events.commit_as(out.join(PARTIAL[0].1))?;
            timeline.commit_as(out.join(PARTIAL[1].1))?;
            workers.commit_as(out.join(PARTIAL[2].1))?;
            return Err(interrupted(
                &args,
                sc,
                staging,
                &target,
                at.as_secs_f64(),
                n,
            ));
        }
        Err(e) => return Err(Failure::run(e.to_string())),
    };
    events.commit()?;
    timeline.commit()?;
    workers.commit()?;
    write_scenario(&out, &loaded)?;
    let json = output.summary.to_json();
    let mut summary_file = AtomicFile::create(out.join("summary.json"))?;
    summary_file
        .write_all(json.as_bytes())
        .map_err(|e| Failure::run(e.to_string()))?;
    summary_file.commit()?;
    staging.swap_in()?;
    let out = target;
    if args.json {
        print!("{json}");
    } else {
        print_table(&output.summary, sc);
        for note in default_notes(&loaded) {
            println!("note: {note}");
        }
        println!(
            "wrote {}/{{summary.json,events.csv,timeline.csv,workers.csv,scenario.toml}}",
            out.display()
        );
        let cmd = command(&args);
        println!("reproduce with: {cmd} --seed {}", args.seed);
    }
    let failed = threshold::failures(&output.summary, &thresholds);
    if !failed.is_empty() {
        return Err(Failure::verdict(format!(
            "--fail-if: {} of {} thresholds crossed: {}",
            failed.len(),
            thresholds.len(),
            failed.join("; ")
        )));
    }
    Ok(())
}

/// Refuses to overwrite a complete run (summary.json and scenario.toml)
/// of another resolved scenario or seed, unless `force`. An unfinished or
/// interrupted run's files, and the same run again, are overwritten.
fn refuse_another_run(out: &Path, resolved: &str, seed: u64, force: bool) -> Result<(), Failure> {
    let (summary, scenario) = (out.join("summary.json"), out.join("scenario.toml"));
    if force || !summary.exists() || !scenario.exists() {
        return Ok(());
    }
    let before = super::limits::read_input_text(&scenario)?;
    let old_seed =
        serde_json::from_str::<serde_json::Value>(&super::limits::read_input_text(&summary)?)
            .ok()
            .and_then(|v| v["seed"].as_u64());
    let why = if before != resolved {
        let line = before
            .lines()
            .zip(resolved.lines())
            .position(|(a, b)| a != b)
            .map_or(before.lines().count().min(resolved.lines().count()), |i| i)
            + 1;
        format!(
            "a complete run of another scenario (its scenario.toml differs from this run's at \
             line {line})"
        )
    } else if old_seed != Some(seed) {
        format!(
            "a complete run of seed {}",
            old_seed.map_or("(unknown)".into(), |s| s.to_string())
        )
    } else {
        return Ok(());
    };
    Err(Failure::input(format!(
        "{}: holds {why}; choose another --out, or add --force to overwrite it",
        out.display()
    )))
}

/// The command that reproduces this run, without `--seed` and `--out`.
fn command(args: &RunArgs) -> String {
    use fleetsim::text::shell_quote;
    let mut cmd = String::from("fleetsim run");
    if let Some(p) = &args.scenario.scenario {
        cmd += &format!(" {}", shell_quote(&p.to_string_lossy()));
    }
    for s in &args.scenario.set {
        cmd += &format!(" --set {}", shell_quote(s));
    }
    if let Some(h) = args.hours {
        cmd += &format!(" --hours {h}");
    }
    cmd
}

/// The resolved scenario (every default, every --set applied), so the
/// directory says which policy produced it (`fleetsim report` reads it) and
/// running it reproduces the run from anywhere: a traffic series is copied
/// beside it as `series.csv`, which it then names.
fn write_scenario(out: &Path, loaded: &Loaded) -> Result<(), Failure> {
    if let Some(series) = &loaded.series {
        let mut f = AtomicFile::create(out.join(SERIES_COPY))?;
        f.write_all(series.as_bytes())
            .map_err(|e| Failure::run(format!("{}: {e}", out.join(SERIES_COPY).display())))?;
        f.commit()?;
    }
    let raw = with_series_copy(&loaded.raw);
    let resolved = toml::to_string(&raw).map_err(|e| Failure::run(e.to_string()))?;
    let mut scenario_file = AtomicFile::create(out.join("scenario.toml"))?;
    scenario_file
        .write_all(resolved.as_bytes())
        .map_err(|e| Failure::run(e.to_string()))?;
    scenario_file.commit()
}

/// Ctrl-C stopped the loop: the rows so far are kept as `*.partial.csv`
/// in the target, unless it holds a complete run, which is left as it was
/// (and the partial rows are dropped); the message says how to run it
/// again. A run cannot resume half-way, but it is deterministic: the same
/// command and seed give the same bytes.
fn interrupted(
    args: &RunArgs,
    sc: &Scenario,
    staging: Staging,
    out: &Path,
    at_s: f64,
    events: u64,
) -> Failure {
    let mut cmd = command(args);
    // The restart goes into the same folder: without the `--force` this run
    // had, a folder holding another complete run would refuse it.
    if args.force {
        cmd += " --force";
    }
    if let Some(o) = &args.out {
        cmd += &format!(
            " --out {}",
            fleetsim::text::shell_quote(&o.to_string_lossy())
        );
    }
    let at = format!(
        "interrupted at simulated t = {:.2} h of {:.2} h ({events} events)",
        at_s / 3600.0,
        sc.duration.as_secs_f64() / 3600.0
    );
    if super::run_dir::holds_complete_run(out) {
        drop(staging);
        eprintln!(
            "{at}: the complete run already in {} is left as it was; this run's rows were \
             dropped and no summary.json was written (the run is incomplete)",
            out.display()
        );
    } else {
        if let Err(f) = staging.swap_in() {
            return f;
        }
        eprintln!(
            "{at}: the rows so far are in {}/{{{},{},{}}}; no summary.json was written (the run \
             is incomplete)",
            out.display(),
            PARTIAL[0].1,
            PARTIAL[1].1,
            PARTIAL[2].1,
        );
    }
    eprintln!(
        "runs are deterministic: restart from scratch with: {cmd} --seed {} (same seed, same bytes)",
        args.seed
    );
    Failure::interrupted("run interrupted")
}

fn opt(v: Option<f64>, decimals: usize) -> String {
    v.map(|v| format!("{v:.decimals$}"))
        .unwrap_or_else(|| "-".into())
}

/// The table `fleetsim run` prints. The gate rows come from the scenario's
/// pipeline and each gate's own hold labels and pass counters (the `gates!`
/// list), so a gate the policy has is never missing from it; figures
/// measured against the per-worker RSS limit only appear when the policy has
/// the RSS trigger.
fn print_table(s: &Summary, sc: &Scenario) {
    let pct = |v: Option<f64>| opt(v.map(|x| x * 100.0), 1) + " %";
    let rss_trigger = sc.policy.triggers.rss_limit;
    let mut rows: Vec<(String, String)> = vec![
        ("scenario".into(), s.scenario.clone()),
        ("seed".into(), s.seed.to_string()),
        ("simulated".into(), format!("{:.1} h", s.duration_h)),
        (
            "requests".into(),
            format!("{} ({} failed)", s.requests_total, s.requests_failed),
        ),
        (
            "recycles".into(),
            format!(
                "{} ({:.2}/h, peak hour {})",
                s.recycles, s.recycles_per_hour, s.peak_hour_recycles
            ),
        ),
        (
            "requests per worker".into(),
            format!(
                "min {} / p10 {} / median {} / max {}",
                opt(s.requests_per_worker_min, 0),
                opt(s.requests_per_worker_p10, 0),
                opt(s.requests_per_worker_median, 0),
                opt(s.requests_per_worker_max, 0)
            ),
        ),
    ];
    if rss_trigger {
        rows.push((
            "tripped < 25 MB over limit".into(),
            pct(s.recycles_low_margin_fraction),
        ));
    }
    rows.push((
        "recycled < 400 requests".into(),
        pct(s.recycles_young_fraction),
    ));
    rows.extend(gate_rows(s, sc));
    rows.push(("pressure recycles".into(), s.pressure_recycles.to_string()));
    let ceiling = sc.policy.hard_limit_mb.is_finite();
    let peak = if ceiling {
        format!(
            "{:.1} MB ({:.1} MB over the {:.0} MB ceiling, {:.0} MB*s, longest dwell {:.1} s)",
            s.max_rss_mb,
            s.max_overshoot_mb.max(0.0),
            sc.policy.hard_limit_mb,
            s.overshoot_mb_s,
            s.over_ceiling_dwell_max_s
        )
    } else {
        format!("{:.1} MB (no hard ceiling)", s.max_rss_mb)
    };
    rows.push(("peak RSS".into(), peak));
    let tail: [(&str, String); 5] = [
        ("OOM kills", s.oom_kills.to_string()),
        (
            "client",
            format!(
                "{} resets -> {} retry_ok, {} fetch_failed",
                s.requests_reset, s.retry_ok, s.fetch_failed
            ),
        ),
        (
            "capacity loss",
            format!(
                "{:.3} % (min serving workers {})",
                s.capacity_loss_fraction * 100.0,
                s.min_serving_workers
            ),
        ),
        (
            "latency",
            format!(
                "p50 {} ms, p99 {} ms, mean wait {} ms",
                opt(s.latency_ms_p50, 1),
                opt(s.latency_ms_p99, 1),
                opt(s.wait_ms_mean, 2)
            ),
        ),
        ("events", s.events_processed.to_string()),
    ];
    rows.extend(tail.into_iter().map(|(k, v)| (k.to_string(), v)));
    let width = rows.iter().map(|r| r.0.len()).max().unwrap_or(0);
    for (k, v) in rows {
        println!("{k:<width$}  {v}");
    }
}

/// One row per gate of the scenario's pipeline, in pipeline order: how many
/// recycles it held by each of its hold labels and let through by each of
/// its counted passes (its exits), named as in summary.json.
fn gate_rows(s: &Summary, sc: &Scenario) -> Vec<(String, String)> {
    use fleetsim::policy::gates::{GateKind, Hold};
    let kinds: Vec<GateKind> = sc.policy.pipeline.gates.iter().map(|g| g.kind()).collect();
    kinds
        .into_iter()
        .map(|g| {
            let held: Vec<String> = (0..g.holds().len())
                .map(|i| {
                    let h = Hold::new(g, i as u8);
                    format!("{} {}", s.counters.holds(h), h.label())
                })
                .collect();
            let passed: Vec<String> = g
                .counted()
                .iter()
                .map(|(p, key)| format!("{} {key}", s.counters.passed(g, *p)))
                .collect();
            let mut v = format!("held {}", held.join(", "));
            if !passed.is_empty() {
                v.push_str(&format!("; passed {}", passed.join(", ")));
            }
            (format!("gate {}", g.name()), v)
        })
        .collect()
}

/// Mechanisms that ran on fleetsim's defaults because neither the scenario
/// files nor a `--set` gave them: said after the table, since a default
/// leak or ceiling shapes every figure above.
fn default_notes(loaded: &Loaded) -> Vec<String> {
    let raw = &loaded.raw;
    let mut notes = Vec::new();
    if !loaded.user_sets("fleet.leak") {
        let l = &raw.fleet.leak;
        let distribution = format!("{:?}", l.distribution).to_lowercase();
        notes.push(format!(
            "[fleet.leak] not set: fleetsim's default leak model ran ({distribution} velocity, \
             mean {} MB/request, cv {}, warm-up {} MB, steps p {} of {} MB)",
            l.mean_mb_per_request, l.cv, l.warmup_mb, l.step_probability, l.step_mean_mb
        ));
    }
    if !loaded.user_sets("policy.hard_limit_mb") && raw.policy.hard_limit_mb.is_finite() {
        notes.push(format!(
            "policy.hard_limit_mb not set: fleetsim's default {} MB hard ceiling applied (set `inf` for none)",
            raw.policy.hard_limit_mb
        ));
    }
    notes
}
