//! `fleetsim optimise`: search a sweep's parameter space with argmin
//! (screen, particle swarm, Nelder-Mead), then re-evaluate the best
//! candidates on fresh seeds and report the winner against the base.

use super::Failure;
use super::lock::DirLock;
use super::optimise_trace;
use super::output::{AtomicFile, output_dir, stem};
use super::progress::Progress;
use super::sweep::load_sweep;
use clap::Args;
use fleetsim::Sim;
use fleetsim::metrics::NullObserver;
use fleetsim::metrics::Summary;
use fleetsim::sweep::optimise::{self, Candidate, INFEASIBLE, Resume, Search, Settings};
use fleetsim::sweep::replication_seed;
use fleetsim::sweep::space::{Config, Sweep};
use fleetsim::sweep::spec::Direction;
use std::io::Write;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};

#[derive(Args, Debug)]
pub struct OptimiseArgs {
    /// The sweep file: its parameters are the search space, its objectives
    /// and constraints the cost; `replications` per evaluation.
    pub sweep: PathBuf,
    /// Evaluations for the search (each runs `replications` simulations), 4 to 1000000.
    #[arg(long, default_value_t = 100)]
    pub budget: u64,
    /// Fresh replications per finalist [default: 4 x replications, at least 16].
    #[arg(long)]
    pub fresh: Option<u64>,
    /// Output directory [default: out/<sweep>-optimise].
    #[arg(long)]
    pub out: Option<PathBuf>,
    /// Continue an interrupted search in `--out` from its trace.partial.csv
    /// (same sweep file, base, --budget and --fresh): byte-identical to an
    /// uninterrupted search.
    #[arg(long)]
    pub resume: bool,
}

fn config(sweep: &Sweep, x: &[f64]) -> Config {
    let mut c = sweep.fixed.clone();
    c.extend(
        sweep
            .params
            .iter()
            .zip(x)
            .map(|(p, u)| (p.key.clone(), p.at(*u))),
    );
    c
}

/// The scalar objective of one run, or the penalty when a constraint fails.
fn cost(sweep: &Sweep, s: &Summary) -> f64 {
    let m = s.metrics();
    let get = |name: &str| {
        m.iter()
            .find(|(k, _)| k == name)
            .map_or(f64::NAN, |(_, v)| *v)
    };
    if !sweep.constraints.iter().all(|c| c.holds(get(&c.metric))) {
        return INFEASIBLE;
    }
    sweep
        .objectives
        .iter()
        .map(|o| {
            let sign = if o.direction == Direction::Minimize {
                1.0
            } else {
                -1.0
            };
            o.weight * sign * get(&o.metric)
        })
        .sum()
}

/// Raised by Ctrl-C: the running simulations stop within 4,096 events.
static STOP: AtomicBool = AtomicBool::new(false);

pub fn run(args: OptimiseArgs) -> Result<(), Failure> {
    if !(4..=1_000_000).contains(&args.budget) {
        return Err(Failure::input(format!(
            "--budget {}: 4 to 1000000 evaluations",
            args.budget
        )));
    }
    if let Some(f) = args.fresh.filter(|f| !(1..=1_000_000).contains(f)) {
        return Err(Failure::input(format!(
            "--fresh {f}: 1 to 1000000 replications"
        )));
    }
    // A resume reads the directory's stored inputs, under its lock; a
    // fresh search reads the file and stores them.
    let (l, out, _lock) = if args.resume {
        let out =
            super::sweep_dir::resume_dir(&args.out, &format!("{}-optimise", stem(&args.sweep)))
                .map_err(|_| nothing_to_resume(&args))?;
        let lock = DirLock::take(&out, "optimise")?;
        let l = super::sweep_dir::for_resume(&args.sweep, &out, optimise_trace::PARTIAL)?;
        (l, out, lock)
    } else {
        let l = load_sweep(&args.sweep)?;
        let out = output_dir(&args.out, &stem(&args.sweep), "-optimise")?;
        let lock = DirLock::take(&out, "optimise")?;
        (l, out, lock)
    };
    let sweep = &l.sweep;
    // Set once the settings are known; the objective only counts.
    let bar = std::sync::OnceLock::<Progress>::new();
    let objective = |x: Option<&[f64]>, r: u64| -> f64 {
        if STOP.load(Ordering::Relaxed) {
            return INFEASIBLE;
        }
        let cfg = x.map(|x| config(sweep, x)).unwrap_or_default();
        let seed = replication_seed(sweep.seed, r);
        let c = match l.base.scenario(&cfg) {
            Ok((_, sc)) => Sim::new(&sc, seed, NullObserver)
                .with_stop_flag(&STOP)
                .run()
                .map_or(INFEASIBLE, |o| cost(sweep, &o.summary)),
            Err(_) => INFEASIBLE,
        };
        if let Some(b) = bar.get() {
            b.inc(1);
        }
        c
    };
    let settings = Settings {
        dim: sweep.params.len(),
        budget: args.budget,
        seed: sweep.seed,
        replications: sweep.replications,
        fresh_replications: args.fresh.unwrap_or((4 * sweep.replications).max(16)),
        finalists: 5,
    };
    let (journal, done) = if args.resume {
        optimise_trace::resume(&out, sweep, &settings)?
    } else {
        super::output::remove_stale_report(&out)?;
        optimise_trace::remove_partial(&out)?;
        super::sweep_dir::write_inputs(&l, &out)?;
        (
            optimise_trace::Journal::create(&out, sweep, &settings)?,
            Vec::new(),
        )
    };
    eprintln!(
        "optimise {}: {} parameters, budget {} evaluations x {} replications, then 5 finalists x {} fresh{}",
        args.sweep.display(),
        settings.dim,
        settings.budget,
        settings.replications,
        settings.fresh_replications,
        if args.resume {
            format!(" (resumed after {} recorded evaluations)", done.len())
        } else {
            String::new()
        }
    );
    // The search's simulations, then the finalists' and the base's on
    // fresh seeds (the search may use a few more: the total then grows).
    let planned = settings.budget * settings.replications
        + (settings.finalists as u64 + 1) * settings.fresh_replications;
    let progress = Progress::new("optimise", planned, "simulations");
    progress.inc(done.len() as u64 * settings.replications);
    let _ = bar.set(progress);
    // A second handler cannot be installed in one process: Ctrl-C then ends it as usual.
    let _ = ctrlc::set_handler(|| STOP.store(true, Ordering::SeqCst));
    let resume = Resume {
        done,
        record: &|e| journal.record(sweep, e, &STOP),
    };
    let search = optimise::optimise_resumed(&settings, &objective, &STOP, &resume);
    if let Some(b) = bar.get() {
        match &search {
            Ok(Search::Done(..)) => b.finish(),
            _ => b.abandon(),
        }
    }
    let partial = journal.path().to_path_buf();
    journal.finish()?;
    let search = search.map_err(|e| {
        Failure::input(format!(
            "{}: {e}; start the search again without --resume",
            partial.display()
        ))
    })?;
    let (cands, trace) = match search {
        Search::Done(cands, trace) => (cands, trace),
        Search::Stopped(trace) => {
            eprintln!(
                "interrupted after {} whole evaluations, kept in {}; resume with: {}",
                trace.len(),
                partial.display(),
                resume_command(&args, &out, &settings)
            );
            return Err(Failure::interrupted("optimise interrupted"));
        }
    };
    optimise_trace::write_complete(sweep, &out, &trace)?;
    let Some(best) = cands.first().filter(|c| c.fresh_mean < INFEASIBLE) else {
        println!("no feasible point found; see {}/trace.csv", out.display());
        return Ok(());
    };
    let winner = config(sweep, &best.x);
    let (mut raw, _) = l
        .base
        .scenario(&winner)
        .map_err(|e| Failure::run(e.to_string()))?;
    super::output::name_winner(
        &mut raw,
        "optimise",
        &format!("search of {}", stem(&args.sweep)),
        &winner[sweep.fixed.len()..],
    );
    let mut f = AtomicFile::create(out.join("best.toml"))?;
    let against = match base_infeasible(best.diff_mean, settings.fresh_replications) {
        Some(n) => format!(
            "the base infeasible in {n} of {} fresh replications",
            settings.fresh_replications
        ),
        None => format!(
            "{:+.6} +- {:.6} against the base",
            best.diff_mean, best.diff_ci95
        ),
    };
    let head = format!(
        "# fleetsim optimise {}: fresh-seed cost {:.6} +- {:.6}, {against} (95% CI, paired)\n",
        args.sweep.display(),
        best.fresh_mean,
        best.fresh_ci95,
    );
    let body = toml::to_string(&raw).map_err(|e| Failure::run(e.to_string()))?;
    f.write_all(head.as_bytes())
        .and_then(|_| f.write_all(body.as_bytes()))
        .map_err(|e| Failure::run(e.to_string()))?;
    f.commit()?;
    // best.toml names its series as the copy beside it.
    super::sweep_dir::write_series(&l, &out)?;
    print_candidates(sweep, &cands, settings.fresh_replications);
    println!("wrote {}/{{trace.csv,best.toml}}", out.display());
    Ok(())
}

/// The command that continues an interrupted search, shell-quoted.
fn resume_command(args: &OptimiseArgs, out: &std::path::Path, s: &Settings) -> String {
    use fleetsim::text::shell_quote;
    format!(
        "fleetsim optimise {} --out {} --budget {} --fresh {} --resume",
        shell_quote(&args.sweep.to_string_lossy()),
        shell_quote(&out.to_string_lossy()),
        s.budget,
        s.fresh_replications
    )
}

fn nothing_to_resume(args: &OptimiseArgs) -> Failure {
    let dir = args
        .out
        .clone()
        .unwrap_or_else(|| PathBuf::from(format!("out/{}-optimise", stem(&args.sweep))));
    Failure::input(format!(
        "{}: nothing to resume (no {}): start the search without --resume",
        dir.display(),
        optimise_trace::PARTIAL
    ))
}

/// A parameter value as printed: floats to 4 significant digits (the
/// search's resolution is far coarser than f64's 17), others as TOML.
fn shown(v: &toml::Value) -> String {
    match v {
        toml::Value::Float(x) if x.is_finite() && *x != 0.0 => {
            let digits = (3 - x.abs().log10().floor() as i32).max(0) as usize;
            let t = format!("{x:.digits$}");
            if t.contains('.') {
                t.trim_end_matches('0').trim_end_matches('.').to_string()
            } else {
                t
            }
        }
        v => v.to_string(),
    }
}

/// How many of `fresh` paired replications the base was infeasible in,
/// when it was: each such replication puts the `INFEASIBLE` penalty into
/// the base's side of the paired difference, so the difference is no
/// comparison then.
fn base_infeasible(diff_mean: f64, fresh: u64) -> Option<u64> {
    let n = (-diff_mean * fresh as f64 / INFEASIBLE).round();
    (n >= 1.0).then_some(n as u64)
}

fn print_candidates(sweep: &Sweep, cands: &[Candidate], fresh_n: u64) {
    println!("finalists, re-evaluated on fresh seeds (cost: smaller is better; vs base paired):");
    for (i, c) in cands.iter().enumerate() {
        let params: Vec<String> = config(sweep, &c.x)[sweep.fixed.len()..]
            .iter()
            .map(|(k, v)| format!("{k}={}", shown(v)))
            .collect();
        let fresh = if c.fresh_infeasible > 0 {
            format!("infeasible in {} fresh replications", c.fresh_infeasible)
        } else if let Some(n) = base_infeasible(c.diff_mean, fresh_n) {
            format!(
                "fresh {:.5} +- {:.5}, base infeasible in {n} of {fresh_n} fresh replications: no paired difference",
                c.fresh_mean, c.fresh_ci95
            )
        } else {
            format!(
                "fresh {:.5} +- {:.5}, vs base {:+.5} +- {:.5}: {}",
                c.fresh_mean,
                c.fresh_ci95,
                c.diff_mean,
                c.diff_ci95,
                if c.diff_mean + c.diff_ci95 < 0.0 {
                    "better than base"
                } else {
                    "not shown better than base"
                }
            )
        };
        println!(
            "{}{} search {:.5}, {fresh}\n    {}",
            if i == 0 { "winner " } else { "       " },
            i + 1,
            c.search_cost,
            params.join(" ")
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parameters_print_to_four_significant_digits() {
        let f = |x: f64| shown(&toml::Value::Float(x));
        assert_eq!(f(57.123456789012345), "57.12");
        assert_eq!(f(0.012345678), "0.01235");
        assert_eq!(f(540.0), "540");
        assert_eq!(f(12345.6), "12346");
        assert_eq!(f(0.0), "0.0");
        assert_eq!(shown(&toml::Value::Integer(45)), "45");
    }

    #[test]
    fn an_infeasible_base_is_counted_not_compared() {
        // 3 of 32 replications carry the base's penalty: the mean paired
        // difference is about -3/32 of it, plus the costs' own few units.
        let diff = (12.0 - 3.0 * (INFEASIBLE + 10.0) - 29.0 * 10.0) / 32.0;
        assert_eq!(base_infeasible(diff, 32), Some(3));
        assert_eq!(base_infeasible(-7.4, 32), None);
        assert_eq!(base_infeasible(4.0, 32), None);
    }
}
