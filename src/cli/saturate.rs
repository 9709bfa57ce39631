//! `fleetsim saturate`: "multiply your cooldown out". What each gate, and
//! the whole policy, permits at saturation; what a saturated fleet does;
//! and how much churn the scenario's clients absorb.

use super::Failure;
use super::output::{AtomicFile, ScenarioArgs, load_scenario, output_dir};
use clap::Args;
use fleetsim::whatif::{self, Absorbable, Ceiling, Saturated};
use serde::Serialize;
use std::io::Write;
use std::path::PathBuf;

#[derive(Args, Debug)]
pub struct SaturateArgs {
    #[command(flatten)]
    pub scenario: ScenarioArgs,
    /// First seed; the simulations use seeds SEED..SEED+SEEDS.
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    /// Replications per simulated figure (common random numbers across probes).
    #[arg(long, default_value_t = 3)]
    pub seeds: u64,
    /// Simulated hours per run (overrides run.duration_h).
    #[arg(long)]
    pub hours: Option<f64>,
    /// fetch_failed per hour below which a client "sees none" (absorbable churn).
    #[arg(long, default_value_t = 0.1)]
    pub fetch_failed_per_hour: f64,
    /// The retry_ok rate (per hour) the absorbable-churn scan reports crossing.
    #[arg(long, default_value_t = 10.0)]
    pub retry_ok_per_hour: f64,
    /// Output directory for saturate.json [default: out/<scenario>-saturate].
    #[arg(long)]
    pub out: Option<PathBuf>,
    /// Print the result as JSON instead of the table.
    #[arg(long)]
    pub json: bool,
    /// Exit 1 with the reason when the whole policy is not a capacity
    /// guard (its ceiling unbounded, above the churn the clients absorb,
    /// or the clients absorb none); saturate.json is written first.
    #[arg(long)]
    pub check: bool,
}

#[derive(Serialize)]
struct Report {
    scenario: String,
    workers: usize,
    ceilings: Vec<Ceiling>,
    policy_ceiling_per_hour: Option<f64>,
    policy_fleet_replacements_per_hour: Option<f64>,
    simulated: Saturated,
    absorbable: Absorbable,
    verdicts: Vec<String>,
    /// The whole policy's verdict as a flag: what `--check` gates on.
    policy_is_capacity_guard: bool,
}

pub fn run(args: SaturateArgs) -> Result<(), Failure> {
    super::interrupt::exit_on_interrupt("saturate");
    let hours = super::output::hours_override(args.hours);
    let loaded = load_scenario(&args.scenario, hours)
        .map_err(|f| super::output::blame_hours(f, args.hours))?;
    let sc = &loaded.scenario;
    // Each seed is a day-long simulation and a row kept in memory: capped
    // as `compare --seeds` is, and the seeds must not run past 2^64.
    if args.seeds == 0 || args.seeds > 10_000 {
        return Err(Failure::input(format!(
            "--seeds {}: 1 to 10000",
            args.seeds
        )));
    }
    let seeds: Vec<u64> = super::output::seed_range(args.seed, args.seeds, "--seed")?.collect();
    let workers = sc.fleet.workers();
    let (ceilings, policy) = whatif::ceilings(sc);
    let runs = seeds.len() * (1 + whatif::CHURN_GRID.len());
    let bar = super::progress::Progress::new("saturate", runs as u64, "simulations");
    let tick = || bar.inc(1);
    let simulated = whatif::saturate(sc, &seeds, &tick).map_err(|e| Failure::run(e.to_string()))?;
    let absorbable = whatif::absorbable(
        sc,
        &seeds,
        args.fetch_failed_per_hour,
        args.retry_ok_per_hour,
        &tick,
    )
    .map_err(|e| Failure::run(e.to_string()))?;
    bar.finish();
    let mut verdicts: Vec<String> = ceilings
        .iter()
        .map(|c| whatif::verdict(c, &absorbable, workers))
        .collect();
    let whole = Ceiling {
        gate: "whole policy".into(),
        per_hour: policy,
        per_hour_escalated: None,
        why: "the smallest gate ceiling".into(),
    };
    let policy_verdict = whatif::verdict(&whole, &absorbable, workers);
    let policy_is_capacity_guard = whatif::is_capacity_guard(&whole, &absorbable);
    verdicts.push(policy_verdict.clone());
    let report = Report {
        scenario: sc.name.clone(),
        workers,
        ceilings,
        policy_ceiling_per_hour: policy,
        policy_fleet_replacements_per_hour: policy.map(|p| p / workers as f64),
        simulated,
        absorbable,
        verdicts,
        policy_is_capacity_guard,
    };
    let json = fleetsim::schema::to_json(fleetsim::schema::SATURATE, &report)
        .map_err(|e| Failure::run(e.to_string()))?;
    let digest = super::output::overrides_digest(&args.scenario.set, args.hours)
        .map_or(String::new(), |d| format!("-{d}"));
    let out = output_dir(&args.out, &loaded.stem, &format!("-saturate{digest}"))?;
    super::output::remove_stale_report(&out)?;
    let mut file = AtomicFile::create(out.join("saturate.json"))?;
    write!(file, "{json}").map_err(|e| Failure::run(e.to_string()))?;
    file.commit()?;
    if args.json {
        print!("{json}");
    } else {
        print_report(&report, &seeds, sc.duration.as_secs_f64() / 3600.0);
        println!("wrote {}/saturate.json", out.display());
    }
    if args.check && !policy_is_capacity_guard {
        return Err(Failure::verdict(format!(
            "saturate --check: {policy_verdict}"
        )));
    }
    Ok(())
}

fn rate(v: Option<f64>) -> String {
    v.map_or_else(|| "unbounded".into(), |r| format!("{r:.1}"))
}

fn print_report(r: &Report, seeds: &[u64], hours: f64) {
    println!("{}: {} workers", r.scenario, r.workers);
    println!("\npermitted at saturation (analytic), recycles per hour fleet-wide:");
    println!(
        "{:<16} {:>10} {:>12} {:>10}  derivation",
        "gate", "per hour", "fleet x/h", "escalated"
    );
    for c in &r.ceilings {
        println!(
            "{:<16} {:>10} {:>12} {:>10}  {}",
            c.gate,
            rate(c.per_hour),
            c.per_hour
                .map_or("-".into(), |p| format!("{:.1}", p / r.workers as f64)),
            c.per_hour_escalated
                .map_or("-".into(), |p| format!("{p:.1}")),
            c.why
        );
    }
    println!(
        "{:<16} {:>10} {:>12}",
        "whole policy",
        rate(r.policy_ceiling_per_hour),
        r.policy_fleet_replacements_per_hour
            .map_or("-".into(), |p| format!("{p:.1}"))
    );
    let s = &r.simulated;
    println!(
        "\nsimulated at saturation ({} seeds from {}, {hours:.0} h each): {:.1} recycles/h \
         (peak hour {:.1}), {:.2} exits/h, capacity loss {:.3} %, {:.1} retry_ok/h, \
         {:.2} fetch_failed/h",
        seeds.len(),
        seeds[0],
        s.recycles_per_hour,
        s.peak_hour_recycles,
        s.exits_per_hour,
        s.capacity_loss_fraction * 100.0,
        s.retry_ok_per_hour,
        s.fetch_failed_per_hour
    );
    let a = &r.absorbable;
    println!("\nabsorbable churn (forced churn on this fleet and traffic):");
    println!(
        "{:>10} {:>12} {:>12} {:>16} {:>12} {:>14}",
        "target/h", "recycles/h", "retry_ok/h", "fetch_failed/h", "oom_kills/h", "capacity loss"
    );
    for p in &a.probes {
        println!(
            "{:>10.0} {:>12.1} {:>12.1} {:>16.3} {:>12.2} {:>13.3}%",
            p.target_per_hour,
            p.recycles_per_hour,
            p.retry_ok_per_hour,
            p.fetch_failed_per_hour,
            p.oom_kills_per_hour,
            p.capacity_loss_fraction * 100.0
        );
    }
    let or_none = |v: Option<f64>, none: &str| v.map_or(none.to_string(), |r| format!("{r:.0}/h"));
    println!(
        "absorbable: fetch_failed stays under {}/h up to {}; retry_ok exceeds {}/h from {}",
        a.fetch_failed_threshold_per_hour,
        or_none(a.no_fetch_failed_per_hour, "no probed rate"),
        a.retry_ok_threshold_per_hour,
        or_none(a.retry_ok_exceeded_at_per_hour, "no probed rate")
    );
    let [lo, hi] = a.no_fetch_failed_per_hour_seed_range;
    if a.no_fetch_failed_per_hour_by_seed.len() > 1 && hi > 0.0 {
        println!(
            "  on single seeds: {lo:.0}-{hi:.0}/h over {} seeds (0: even the lowest probed rate \
             failed); more seeds narrow the mean's scan, not this range",
            a.no_fetch_failed_per_hour_by_seed.len()
        );
    }
    if let Some(at) = a.oom_dominated_at_per_hour {
        println!(
            "  at {at:.0}/h, the lowest that failed, OOM kills outnumber the forced recycles: \
             those failures are mostly the fleet outgrowing its containers, not churn"
        );
    }
    println!("\nverdicts:");
    for v in &r.verdicts {
        println!("  {v}");
    }
}
