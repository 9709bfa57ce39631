//! `fleetsim sweep` and `fleetsim merge`: parallel, resumable, shardable
//! parameter sweeps. Rows are appended to `trials.csv` in trial order as
//! chunks finish (flushed), final files are written atomically.

use super::Failure;
use super::limits::{read_input_text, thread_count};
use super::lock::DirLock;
use super::output::{
    AtomicFile, InPlace, ScenarioArgs, link_refused, load_scenario, open_in_place, output_dir,
    stem, with_series_copy,
};
use super::sweep_dir::{self, Tally};
use clap::Args;
use fleetsim::metrics::Summary;
use fleetsim::sweep::Sweep;
use fleetsim::sweep::aggregate::{self, Aggregate, ConfigResult};
use fleetsim::sweep::csvio::{self, Row};
use fleetsim::sweep::runner::{self, Base};
use std::collections::BTreeSet;
use std::fs;
use std::io::{BufReader, Write};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

#[derive(Args, Debug)]
pub struct SweepArgs {
    /// The sweep file (TOML): base scenario, parameters, sampler, objectives.
    pub sweep: PathBuf,
    /// Output directory [default: out/<sweep>].
    #[arg(long)]
    pub out: Option<PathBuf>,
    /// Worker threads, 1 to 4096, capped to the machine's [default: all
    /// cores]. Results do not depend on it.
    #[arg(long)]
    pub threads: Option<u64>,
    /// Run only trials with index % N == K, e.g. --shard $JOB_COMPLETION_INDEX/8.
    #[arg(long, value_name = "K/N")]
    pub shard: Option<String>,
    /// Continue an interrupted sweep from its trials.csv.
    #[arg(long)]
    pub resume: bool,
}

#[derive(Args, Debug)]
pub struct MergeArgs {
    /// Shard output directories of one sweep.
    #[arg(required = true)]
    pub dirs: Vec<PathBuf>,
    /// Where the merged outputs go.
    #[arg(long)]
    pub out: PathBuf,
}

/// A sweep loaded with its resolved base.
pub struct Loaded {
    pub text: String,
    pub sweep: Sweep,
    pub base: Base,
    /// The resolved base as `base.toml` stores it (its series renamed to
    /// the copy beside it).
    pub base_toml: String,
    /// The base's traffic series, when it reads one (`series.csv`).
    pub series: Option<String>,
}

pub fn load_sweep(path: &Path) -> Result<Loaded, Failure> {
    let text = read_input_text(path)?;
    let (raw, sweep) = fleetsim::sweep::spec::parse(&text)
        .map_err(|e| Failure::input(format!("{}{e}", path.display())))?;
    let dir = path.parent().map(Path::to_path_buf).unwrap_or_default();
    let scenario_args = ScenarioArgs {
        scenario: raw.base.as_ref().map(|b| dir.join(b)),
        set: vec![],
    };
    let loaded = load_scenario(&scenario_args, None)
        .map_err(|f| Failure::input(format!("{} (base of {})", f.message, path.display())))?;
    // The base as its directory stores it: a series is read from the copy
    // beside base.toml, so the trials (and best.toml) run from there.
    let raw = with_series_copy(&loaded.raw);
    let base = Base::new(&raw, &loaded.stem, loaded.series.clone(), sweep.hours);
    super::sweep_check::check_keys(path, &text, &sweep, &base)?;
    let base_toml = toml::to_string(&raw).map_err(|e| Failure::run(e.to_string()))?;
    Ok(Loaded {
        text,
        sweep,
        base,
        base_toml,
        series: loaded.series,
    })
}

fn parse_shard(s: &Option<String>) -> Result<(u64, u64), Failure> {
    let Some(s) = s else { return Ok((0, 1)) };
    let bad = || {
        Failure::input(format!(
            "--shard `{s}`: expected K/N with 0 <= K < N, e.g. 3/8"
        ))
    };
    let (k, n) = s.split_once('/').ok_or_else(bad)?;
    let (k, n): (u64, u64) = (
        k.trim().parse().map_err(|_| bad())?,
        n.trim().parse().map_err(|_| bad())?,
    );
    if n == 0 || k >= n {
        return Err(bad());
    }
    Ok((k, n))
}

fn io_err(p: &Path) -> impl Fn(std::io::Error) -> Failure + '_ {
    move |e| Failure::run(format!("{}: {e}", p.display()))
}

pub fn sweep(args: SweepArgs) -> Result<(), Failure> {
    let threads = thread_count("--threads", args.threads)?;
    let shard = parse_shard(&args.shard)?;
    // A resume reads the directory's stored inputs, under its lock (a
    // writer that just started it is named, not "nothing to resume"); a
    // fresh sweep reads the file.
    let (l, out, _lock) = if args.resume {
        let out = sweep_dir::resume_dir(&args.out, &stem(&args.sweep))?;
        let lock = DirLock::take(&out, "sweep")?;
        (
            sweep_dir::for_resume(&args.sweep, &out, sweep_dir::TRIALS)?,
            out,
            lock,
        )
    } else {
        let l = load_sweep(&args.sweep)?;
        let out = output_dir(&args.out, &stem(&args.sweep), "")?;
        let lock = DirLock::take(&out, "sweep")?;
        (l, out, lock)
    };
    let trials_path = out.join("trials.csv");
    let done = prepare(&l, &out, &trials_path, args.resume)?;
    let pending = runner::pending(&l.sweep, shard, &done);
    let total = (l.sweep.config_count() + 1) * l.sweep.replications;
    eprintln!(
        "sweep {}: {} configurations + base x {} replications = {total} trials; this run: {} ({} done before){}",
        args.sweep.display(),
        l.sweep.config_count(),
        l.sweep.replications,
        pending.len(),
        done.len(),
        if shard.1 > 1 {
            format!(", shard {}/{}", shard.0, shard.1)
        } else {
            String::new()
        }
    );
    let stopped = run_pending(&l, &pending, &trials_path, threads)?;
    if stopped {
        eprintln!(
            "interrupted: finished trials are in {}; resume with: fleetsim sweep {} --out {} --resume{}",
            trials_path.display(),
            args.sweep.display(),
            out.display(),
            args.shard
                .as_ref()
                .map(|s| format!(" --shard {s}"))
                .unwrap_or_default()
        );
        return Err(Failure::interrupted("sweep interrupted"));
    }
    if shard.1 > 1 {
        println!(
            "shard {}/{} done: {}; combine the shards with: fleetsim merge DIR... --out DIR",
            shard.0,
            shard.1,
            trials_path.display()
        );
        return Ok(());
    }
    finalize(&l, &out, &trials_path)
}

/// Writes the sweep's inputs beside its outputs and opens trials.csv:
/// fresh (refusing to overwrite) or resumed (cutting a partial last line;
/// `sweep_dir::for_resume` has checked the directory's inputs).
fn prepare(l: &Loaded, out: &Path, trials: &Path, resume: bool) -> Result<BTreeSet<u64>, Failure> {
    if resume {
        let mut done = BTreeSet::new();
        let complete_len = scan_file(&l.sweep, trials, |r, _| {
            done.insert(r.trial);
            Ok(())
        })?;
        let file = open_in_place(trials, InPlace::Write)?;
        file.set_len(complete_len).map_err(io_err(trials))?;
        if complete_len == 0 {
            write_header(&l.sweep, trials)?;
        }
        return Ok(done);
    }
    if trials.is_symlink() {
        return Err(link_refused(trials));
    }
    if trials.exists() {
        return Err(Failure::input(format!(
            "{} exists: add --resume to continue it, or choose another --out",
            trials.display()
        )));
    }
    sweep_dir::write_inputs(l, out)?;
    write_header(&l.sweep, trials)?;
    Ok(BTreeSet::new())
}

fn write_header(sweep: &Sweep, trials: &Path) -> Result<(), Failure> {
    let f = open_in_place(trials, InPlace::Create)?;
    csvio::write_rows(f, &[csvio::header(sweep)]).map_err(io_err(trials))
}

/// Runs the pending trials chunk by chunk, appending each chunk's rows in
/// order. Returns whether Ctrl-C stopped it.
fn run_pending(
    l: &Loaded,
    pending: &[u64],
    trials: &Path,
    threads: usize,
) -> Result<bool, Failure> {
    let stop = Arc::new(AtomicBool::new(false));
    let flag = stop.clone();
    // A second handler cannot be installed (merge after sweep in one process): ignore.
    let _ = ctrlc::set_handler(move || flag.store(true, Ordering::SeqCst));
    let bar = super::progress::Progress::new("sweep", pending.len() as u64, "trials");
    let mut file = open_in_place(trials, InPlace::Append)?;
    // Each row is appended and flushed as soon as every earlier trial has
    // been: a kill leaves whole rows in trial order (at most a partial last
    // line, which --resume cuts).
    let mut written = 0usize;
    runner::run_in_order(&l.base, &l.sweep, pending, threads, &stop, |t| {
        csvio::write_rows(&mut file, &[csvio::row(&l.sweep, &t)]).map_err(io_err(trials))?;
        written += 1;
        bar.inc(1);
        Ok::<(), Failure>(())
    })?;
    // Stopped only if trials are missing: a Ctrl-C after the last row is
    // written leaves a finished sweep, which goes on to its results.
    if written < pending.len() {
        bar.abandon();
        return Ok(true);
    }
    bar.finish();
    Ok(false)
}

/// Streams a trials file row by row (see `csvio::scan`); returns the
/// bytes that hold complete rows.
fn scan_file(
    sweep: &Sweep,
    path: &Path,
    each: impl FnMut(Row, &str) -> Result<(), String>,
) -> Result<u64, Failure> {
    let f = fs::File::open(path).map_err(io_err(path))?;
    csvio::scan(sweep, BufReader::new(f), each)
        .map_err(|e| Failure::input(format!("{}: {e}", path.display())))
}

/// Combines shard outputs by merging their trials files, each in trial
/// order, into one: streaming, so memory stays flat in the number of
/// trials. Every trial must appear exactly once.
pub fn merge(args: MergeArgs) -> Result<(), Failure> {
    for d in &args.dirs {
        super::output::refuse_non_dir("merge:", d)?;
    }
    super::output::refuse_non_dir("--out", &args.out)?;
    let l = sweep_dir::for_merge(&args.dirs)?;
    let mut shards: Vec<Shard> = args
        .dirs
        .iter()
        .map(|d| Shard::open(&l.sweep, d.join("trials.csv")))
        .collect::<Result<_, _>>()?;
    fs::create_dir_all(&args.out).map_err(io_err(&args.out))?;
    let _lock = DirLock::take(&args.out, "merge")?;
    let merged = args.out.join("trials.csv");
    let mut f = AtomicFile::create(merged.clone())?;
    csvio::write_rows(&mut f, &[csvio::header(&l.sweep)]).map_err(io_err(&merged))?;
    let total = (l.sweep.config_count() + 1) * l.sweep.replications;
    let mut tally = Tally::default();
    // A k-way merge on the smallest next trial.
    while let Some(i) = (0..shards.len())
        .filter(|&i| shards[i].head.is_some())
        .min_by_key(|&i| shards[i].head.as_ref().map(|(t, _)| *t))
    {
        let (trial, line) = shards[i].head.take().expect("filtered on a head");
        if tally.see(trial, i) {
            f.write_all(line.as_bytes()).map_err(io_err(&merged))?;
        }
        shards[i].advance()?;
    }
    tally.check(total, &args.dirs)?;
    f.commit()?;
    // The merged directory is a sweep directory like a shard's: it
    // resumes, merges and reports from wherever it is.
    sweep_dir::write_inputs(&l, &args.out)?;
    finalize(&l, &args.out, &merged)
}

/// One shard's trials file, read one row ahead.
struct Shard<'s> {
    path: PathBuf,
    rows: csvio::Rows<'s, BufReader<fs::File>>,
    head: Option<(u64, String)>,
}

impl<'s> Shard<'s> {
    fn open(sweep: &'s Sweep, path: PathBuf) -> Result<Self, Failure> {
        let f = fs::File::open(&path).map_err(io_err(&path))?;
        let rows = csvio::Rows::new(sweep, BufReader::new(f))
            .map_err(|e| Failure::input(format!("{}: {e}", path.display())))?;
        let mut s = Shard {
            path,
            rows,
            head: None,
        };
        s.advance()?;
        Ok(s)
    }

    /// Reads the next row (`csvio::Rows` refuses one out of trial order,
    /// which merging relies on).
    fn advance(&mut self) -> Result<(), Failure> {
        let row = self
            .rows
            .next_row()
            .map_err(|e| Failure::input(format!("{}: {e}", self.path.display())))?;
        self.head = row.map(|r| (r.trial, self.rows.line.clone()));
        Ok(())
    }
}

/// results.csv, pareto.csv, best.toml and the printed table.
fn finalize(l: &Loaded, out: &Path, trials: &Path) -> Result<(), Failure> {
    super::output::remove_stale_report(out)?;
    let names = Summary::metric_names();
    let lookup = |r: &Row, m: &str| {
        names
            .iter()
            .position(|n| n == m)
            .map_or(f64::NAN, |i| r.metrics[i])
    };
    // Two streaming passes: the base's replications first (the paired
    // differences need them), then every trial.
    let mut agg = Aggregate::new(&l.sweep);
    scan_file(&l.sweep, trials, |r, _| {
        if r.config == 0 && !r.error {
            agg.base(r.replication, &|m| lookup(&r, m));
        }
        Ok(())
    })?;
    scan_file(&l.sweep, trials, |r, _| {
        let f = |m: &str| lookup(&r, m);
        agg.push(
            r.config,
            r.replication,
            (!r.error).then_some(&f as &dyn Fn(&str) -> f64),
        );
        Ok(())
    })?;
    let results = agg.finish();
    write_results(l, &out.join("results.csv"), &results)?;
    let front: Vec<ConfigResult> = aggregate::pareto(&l.sweep, &results)
        .into_iter()
        .cloned()
        .collect();
    write_results(l, &out.join("pareto.csv"), &front)?;
    let ranked = aggregate::ranked(&results);
    let Some(best) = ranked.first() else {
        println!(
            "no feasible configuration; see {}",
            out.join("results.csv").display()
        );
        return Ok(());
    };
    write_best(l, &out.join("best.toml"), best)?;
    print_top(l, &results, &ranked);
    println!(
        "wrote {}/{{trials,results,pareto}}.csv and best.toml",
        out.display()
    );
    Ok(())
}

fn params_of(l: &Loaded, config: u64) -> Vec<String> {
    let c = l.sweep.config(config);
    l.sweep
        .params
        .iter()
        .map(|p| {
            c.iter()
                .find(|(k, _)| *k == p.key)
                .map_or("base".into(), |(_, v)| v.to_string())
        })
        .collect()
}

fn write_results(l: &Loaded, path: &Path, results: &[ConfigResult]) -> Result<(), Failure> {
    let rows = csvio::results_rows(&l.sweep, results);
    let mut f = AtomicFile::create(path.to_path_buf())?;
    csvio::write_rows(&mut f, &rows).map_err(io_err(path))?;
    f.commit()
}

fn write_best(l: &Loaded, path: &Path, best: &ConfigResult) -> Result<(), Failure> {
    let config = l.sweep.config(best.config);
    let (mut raw, _) = l
        .base
        .scenario(&config)
        .map_err(|e| Failure::run(e.to_string()))?;
    let source = format!("configuration {} of the sweep", best.config);
    super::output::name_winner(&mut raw, "sweep", &source, &config);
    let body = toml::to_string(&raw).map_err(|e| Failure::run(e.to_string()))?;
    let mut f = AtomicFile::create(path.to_path_buf())?;
    let head = format!(
        "# best configuration {} of the sweep: scalar objective {:.6} +- {:.6} (95% CI),\n\
         # {:+.6} +- {:.6} against the base, paired over {} replications\n",
        best.config, best.scalar_mean, best.scalar_ci95, best.diff_mean, best.diff_ci95, best.n
    );
    f.write_all(head.as_bytes())
        .and_then(|_| f.write_all(body.as_bytes()))
        .map_err(io_err(path))?;
    f.commit()
}

fn print_top(l: &Loaded, results: &[ConfigResult], ranked: &[&ConfigResult]) {
    let base = results.iter().find(|r| r.config == 0);
    let keys: Vec<&str> = l.sweep.params.iter().map(|p| p.key.as_str()).collect();
    println!(
        "top configurations (scalar objective, smaller is better; differences paired with the base):"
    );
    println!(
        "{:>7}  {:<40}  {:>24}  {:>26}",
        "config",
        keys.join(", "),
        "scalar (95% CI)",
        "vs base (95% CI)"
    );
    if let Some(b) = base {
        println!(
            "{:>7}  {:<40}  {:>24}",
            "base",
            "-",
            format!("{:.5} +- {:.5}", b.scalar_mean, b.scalar_ci95)
        );
    }
    for r in ranked.iter().take(10) {
        let verdict = if r.diff_mean + r.diff_ci95 < 0.0 {
            " better"
        } else {
            ""
        };
        println!(
            "{:>7}  {:<40}  {:>24}  {:>26}{verdict}",
            r.config,
            params_of(l, r.config).join(", "),
            format!("{:.5} +- {:.5}", r.scalar_mean, r.scalar_ci95),
            format!("{:+.5} +- {:.5}", r.diff_mean, r.diff_ci95)
        );
    }
}
