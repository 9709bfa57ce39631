//! `fleetsim compare`: a baseline and one or more candidates side by side.
//! Each input is a run directory (summary.json: one seed), or a directory
//! of run directories (several seeds), or, with `--seeds N`, a scenario
//! file (`default`: the embedded one), which is run on seeds `--first-seed`
//! .. + N by this same binary's `fleetsim run` into `OUT/<label>/seed-K`,
//! so every side's runs are the bytes a user's `fleetsim run` writes.
//! Writes `compare.json`, `report.html` and one `timeline-K.svg` per side
//! (each side's first paired seed, on one time axis), and prints the
//! headline figures in hyperfine's style.

use super::limits::read_input;
use super::output::{AtomicFile, ScenarioArgs, blame_hours, hours_override, load_scenario, stem};
use super::{EXIT_INTERRUPTED, Failure};
use clap::Args;
use fleetsim::report::compare::{self, Side};
use fleetsim::report::{Files, data};
use std::collections::BTreeMap;
use std::fs;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, ExitStatus, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};

#[derive(Args, Debug)]
pub struct CompareArgs {
    /// The baseline first, then the candidates: run directories, directories
    /// of run directories (one per seed), or with --seeds scenario files
    /// (`default` for the embedded scenario).
    #[arg(required = true, num_args = 2..)]
    pub inputs: Vec<String>,
    /// Run each scenario on N seeds (paired: the same seeds for every side).
    #[arg(long, value_name = "N")]
    pub seeds: Option<u64>,
    /// The first seed of --seeds.
    #[arg(long, default_value_t = 1)]
    pub first_seed: u64,
    /// Simulated hours of each --seeds run (overrides run.duration_h).
    #[arg(long)]
    pub hours: Option<f64>,
    /// Output directory [default: out/compare-<baseline>-vs-<candidate>...].
    #[arg(long)]
    pub out: Option<PathBuf>,
    /// Print compare.json instead of the text table.
    #[arg(long)]
    pub json: bool,
    /// With --seeds: overwrite complete runs of another scenario or model
    /// under --out (passed to each `fleetsim run`).
    #[arg(long)]
    pub force: bool,
}

/// Labels from the inputs' names, made unique (`-2`, `-3`...).
fn labels(inputs: &[String]) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for i in inputs {
        let p = Path::new(i);
        let base = fs::canonicalize(p)
            .ok()
            .map(|c| stem(&c))
            .unwrap_or_else(|| stem(p));
        let mut l = base.clone();
        let mut k = 2;
        while out.contains(&l) {
            l = format!("{base}-{k}");
            k += 1;
        }
        out.push(l);
    }
    out
}

fn summary_of(dir: &Path) -> Result<data::Ordered, Failure> {
    let p = dir.join("summary.json");
    data::parse_summary(&read_input(&p)?)
        .map_err(|e| Failure::input(format!("{}: {e}", p.display())))
}

fn seed_of(s: &data::Ordered, dir: &Path) -> Result<u64, Failure> {
    s.0.iter()
        .find(|(k, _)| k == "seed")
        .and_then(|(_, v)| v.as_u64())
        .ok_or_else(|| {
            Failure::input(format!(
                "{}: summary.json has no `seed`",
                dir.join("summary.json").display()
            ))
        })
}

/// A side from a run directory, or a directory of them; with each seed's
/// directory.
fn side(label: &str, dir: &Path) -> Result<(Side, BTreeMap<u64, PathBuf>), Failure> {
    let mut dirs: Vec<PathBuf> = Vec::new();
    if dir.join("summary.json").exists() {
        dirs.push(dir.to_path_buf());
    } else {
        let rd = fs::read_dir(dir)
            .map_err(|e| Failure::input(format!("{}: not a run directory ({e})", dir.display())))?;
        let mut subs: Vec<PathBuf> = rd
            .filter_map(Result::ok)
            .map(|e| e.path())
            .filter(|p| p.join("summary.json").exists())
            .collect();
        subs.sort();
        dirs.extend(subs);
    }
    if dirs.is_empty() {
        return Err(Failure::input(format!(
            "{}: no summary.json in it or in its subdirectories: not a finished run",
            dir.display()
        )));
    }
    let mut runs = BTreeMap::new();
    let mut where_ = BTreeMap::new();
    for d in dirs {
        let s = summary_of(&d)?;
        let seed = seed_of(&s, &d)?;
        if let Some(other) = where_.insert(seed, d.clone()) {
            return Err(Failure::input(format!(
                "{}: seed {seed} twice in one side ({} and {})",
                dir.display(),
                other.display(),
                d.display()
            )));
        }
        runs.insert(seed, s);
    }
    let side = Side {
        label: label.to_string(),
        runs,
    };
    Ok((side, where_))
}

/// With `--seeds`, every scenario is loaded with `--hours` before any
/// folder is made or any run starts: a bad file, or a bad `--hours`
/// (named as the source, as `run` names it), is refused at once.
fn check_scenarios(args: &CompareArgs) -> Result<(), Failure> {
    if args.seeds.is_none() {
        return Ok(());
    }
    for input in &args.inputs {
        let scenario = ScenarioArgs {
            scenario: (input != "default").then(|| PathBuf::from(input)),
            set: Vec::new(),
        };
        load_scenario(&scenario, hours_override(args.hours))
            .map_err(|f| blame_hours(f, args.hours))?;
    }
    Ok(())
}

/// Runs one scenario on the seeds with this binary's `fleetsim run`.
fn run_seeds(args: &CompareArgs, input: &str, dir: &Path, n: u64) -> Result<(), Failure> {
    let exe = std::env::current_exe()
        .map_err(|e| Failure::run(format!("cannot find the fleetsim binary: {e}")))?;
    for seed in super::output::seed_range(args.first_seed, n, "--first-seed")? {
        let out = dir.join(format!("seed-{seed}"));
        let mut cmd = Command::new(&exe);
        cmd.arg("run");
        if input != "default" {
            cmd.arg(input);
        }
        cmd.args(["--seed", &seed.to_string(), "--json", "--out"])
            .arg(&out);
        if let Some(h) = args.hours {
            cmd.args(["--hours", &h.to_string()]);
        }
        if args.force {
            cmd.arg("--force");
        }
        let (status, stderr) = run_child(cmd, &exe)?;
        if status.code() == Some(EXIT_INTERRUPTED) || STOP.load(Ordering::SeqCst) {
            return Err(Failure::interrupted(format!(
                "compare interrupted during seed {seed} of {}: the seeds' runs finished so far \
                 are complete under {}, the interrupted seed's has no summary.json (a \
                 complete run already there is kept); run the same command again",
                args.seeds.unwrap_or(0),
                dir.display()
            )));
        }
        if !status.success() {
            // The run's own `error: ` line, without its prefix (main adds
            // one), and without the progress lines before it.
            let text = String::from_utf8_lossy(&stderr);
            let err = text
                .lines()
                .rev()
                .find_map(|l| l.strip_prefix("error: "))
                .unwrap_or(text.trim())
                .to_string();
            let f = match status.code() {
                Some(2) => Failure::input(err),
                _ => Failure::run(format!("fleetsim run {input} --seed {seed}: {err}")),
            };
            return Err(f);
        }
    }
    Ok(())
}

/// Raised by Ctrl-C or SIGTERM (a pod's stop reaches this process alone).
static STOP: AtomicBool = AtomicBool::new(false);

/// Runs one `fleetsim run` to its end, or until Ctrl-C or SIGTERM: then the
/// child is killed (its staging directory, hidden, is removed by the next
/// run into that folder) and never outlives this process. Its stderr is
/// read by a thread, so a chatty child cannot fill the pipe.
fn run_child(mut cmd: Command, exe: &Path) -> Result<(ExitStatus, Vec<u8>), Failure> {
    let mut child = cmd
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| Failure::run(format!("cannot run {}: {e}", exe.display())))?;
    let mut pipe = child.stderr.take().expect("stderr is piped");
    let reader = std::thread::spawn(move || {
        let mut bytes = Vec::new();
        let _ = std::io::Read::read_to_end(&mut pipe, &mut bytes);
        bytes
    });
    let status = loop {
        if let Some(status) = child
            .try_wait()
            .map_err(|e| Failure::run(format!("{}: {e}", exe.display())))?
        {
            break status;
        }
        if STOP.load(Ordering::SeqCst) {
            let _ = child.kill();
            break child
                .wait()
                .map_err(|e| Failure::run(format!("{}: {e}", exe.display())))?;
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    };
    Ok((status, reader.join().unwrap_or_default()))
}

fn write(path: PathBuf, text: &str) -> Result<(), Failure> {
    let mut f = AtomicFile::create(path.clone())?;
    f.write_all(text.as_bytes())
        .map_err(|e| Failure::run(format!("{}: {e}", path.display())))?;
    f.commit()
}

fn run_files(dir: &Path) -> Result<Files, Failure> {
    let mut files = Files::new();
    for (name, needed) in [
        ("events.csv", true),
        ("timeline.csv", true),
        ("summary.json", false),
        ("workers.csv", false),
        ("scenario.toml", false),
    ] {
        let p = dir.join(name);
        if !needed && !p.exists() {
            continue;
        }
        files.insert(name.to_string(), read_input(&p)?);
    }
    Ok(files)
}

pub fn run(args: CompareArgs) -> Result<(), Failure> {
    if args.seeds == Some(0) || args.seeds.is_some_and(|n| n > 10_000) {
        return Err(Failure::input("--seeds: 1 to 10000"));
    }
    if let Some(n) = args.seeds {
        super::output::seed_range(args.first_seed, n, "--first-seed")?;
    }
    if args.hours.is_some() && args.seeds.is_none() {
        return Err(Failure::input(
            "--hours needs --seeds (run directories are compared as they are)",
        ));
    }
    check_scenarios(&args)?;
    if args.seeds.is_some() {
        // One handler per process; a second install is ignored.
        let _ = ctrlc::set_handler(|| STOP.store(true, Ordering::SeqCst));
    }
    let labels = labels(&args.inputs);
    let out = args
        .out
        .clone()
        .unwrap_or_else(|| PathBuf::from(format!("out/compare-{}", labels.join("-vs-"))));
    fs::create_dir_all(&out)
        .map_err(|e| Failure::run(format!("{}: cannot create: {e}", out.display())))?;
    let mut sides = Vec::new();
    let mut dirs = Vec::new();
    for (input, label) in args.inputs.iter().zip(&labels) {
        let dir = match args.seeds {
            Some(n) => {
                let d = out.join(label);
                run_seeds(&args, input, &d, n)?;
                d
            }
            None => PathBuf::from(input),
        };
        let (s, d) = side(label, &dir)?;
        sides.push(s);
        dirs.push(d);
    }
    let cmp = compare::compare(&sides);
    // Each side's timeline: the smallest seed every side ran, else its first.
    let common = dirs[0]
        .keys()
        .find(|s| dirs.iter().all(|d| d.contains_key(s)))
        .copied();
    let mut runs = Vec::new();
    for (s, d) in sides.iter().zip(&dirs) {
        let (seed, dir) = common
            .and_then(|c| d.get_key_value(&c))
            .or_else(|| d.iter().next())
            .expect("a side has a run");
        runs.push((format!("{} (seed {seed})", s.label), run_files(dir)?));
    }
    let rendered = compare::page(&cmp, &runs)
        .map_err(|e| Failure::input(format!("{}: {e}", out.display())))?;
    let json = serde_json::to_string_pretty(&cmp).map_err(|e| Failure::run(e.to_string()))? + "\n";
    write(out.join("compare.json"), &json)?;
    for c in &rendered.charts {
        write(out.join(&c.file), &c.svg)?;
    }
    write(out.join("report.html"), &rendered.html)?;
    if args.json {
        print!("{json}");
    } else {
        print!("{}", compare::text(&cmp));
        println!(
            "wrote {}/{{compare.json,report.html,timeline-*.svg}}",
            out.display()
        );
    }
    Ok(())
}
