//! `fleetsim replay`: import recorded windows (CSV, JSON Lines, platform
//! logs), analyse them per limit regime, print the report and write
//! `analysis.json` atomically.
//!
//! Exit codes: 0 done; 1 a run failed; 2 bad input, or a what-if refused
//! because the calibration does not reproduce its window (without
//! `--force`); 1 also with `--check` when the verdict is negative (the
//! calibration does not reproduce its window: `error: verdict: ...`), after
//! every file is written, whether or not it refused a what-if.

use super::Failure;
use super::output::{AtomicFile, Loaded, ScenarioArgs, load_scenario};
use super::progress::Progress;
use super::run_dir::Staging;
use clap::Args;
use fleetsim::replay::{self, Knobs, Options, Recording};
use std::fs::File;
use std::io::Write;
use std::path::{Path, PathBuf};

/// The most seeds `--calibrate` validates over (a limit on everything).
const MAX_SEEDS: u64 = 256;

#[derive(Args, Debug)]
#[command(
    after_help = "Exit codes: 0 done; 1 a run failed, or with --check a negative verdict: the \
    calibration does not reproduce its window (every file is still written; the message \
    starts `error: verdict:`); 2 bad input, or --what-if refused on a calibration that does \
    not reproduce its window (add --force)."
)]
pub struct ReplayArgs {
    /// Recordings: events.csv from `fleetsim run`, JSON Lines exports, or
    /// platform log lines (format detected per file).
    #[arg(required = true, value_name = "RECORDING")]
    pub recordings: Vec<PathBuf>,
    /// The instance a file's events belong to when its lines name none
    /// (a server's log): `FILE=NAME`, repeatable, FILE as given among the
    /// recordings (or its file name). Without it, a server log's instance
    /// comes from its file name: the name up to its first `.`, less any
    /// leading `gunicorn-`, `uvicorn-`, `uwsgi-`, `puma-`, `passenger-`,
    /// `error-`, `access-` words (`logs/gunicorn-inst-A.log` -> `inst-A`).
    /// Example: --instance logs/a/error.log=inst-A --instance logs/b/error.log=inst-B
    #[arg(long = "instance", value_name = "FILE=NAME")]
    pub instance: Vec<String>,
    /// Scenario whose policy (cooldown, tick, pressure cooldown, lease TTL)
    /// places the gap buckets; without it the recording's inferred values are used.
    #[arg(long)]
    pub scenario: Option<PathBuf>,
    /// Canary events this long after a recycle count as following it.
    #[arg(long, default_value_t = replay::analyse::CANARY_WINDOW_S)]
    pub canary_window_s: f64,
    /// Output directory for analysis.json [default: out/replay-<first recording>].
    #[arg(long)]
    pub out: Option<PathBuf>,
    /// Print analysis.json to stdout instead of the report.
    #[arg(long)]
    pub json: bool,
    /// Fit the workload to the longest limit regime and write
    /// calibrated.toml: `--scenario` (or the embedded default) with the
    /// fitted values; then validate it by simulation (validation.json).
    #[arg(long)]
    pub calibrate: bool,
    /// With --calibrate and a recording without holds (recycle_held rows) to
    /// infer the tick from: fit `policy.tick_s` jointly with boot RSS
    /// instead of taking the scenario's (both move the overshoot; fitting
    /// both widens boot's interval).
    #[arg(long)]
    pub fit_tick: bool,
    /// With --calibrate and --scenario: read busy deferral (`busy_rps`,
    /// `defer_max_s`, or off) off the recording's overshoot instead of
    /// keeping the scenario's; the scenario must defer (refused otherwise).
    /// Without --scenario it always is (the embedded default's deferral
    /// values are not the field reports').
    #[arg(long)]
    pub fit_deferral: bool,
    /// Seeds the validation (and each what-if) simulates the calibrated
    /// scenario over.
    #[arg(long, default_value_t = 32)]
    pub seeds: u64,
    /// The bootstrap's seed; the validation's seeds derive from it and a
    /// hash of the recording's recycle rows (printed and in validation.json).
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    /// With --calibrate: re-run the calibrated window under this policy
    /// (repeatable). The file's [policy] table is laid over the recorded
    /// policy key by key, so a fragment (or a preset that `extends` the
    /// deployed scenario, e.g. scenarios/render-2x3-fixed.toml) works.
    #[arg(long = "what-if", value_name = "POLICY.toml")]
    pub what_if: Vec<PathBuf>,
    /// Run the what-ifs even on a calibration that does not reproduce its
    /// window (refused otherwise, exit 2); the output is labelled as such.
    #[arg(long)]
    pub force: bool,
    /// Gate a deploy: with --calibrate, exit 1 when the verdict is negative
    /// (the calibration does not reproduce its window).
    #[arg(long)]
    pub check: bool,
}

fn import(path: &Path) -> Result<replay::Part, Failure> {
    let name = path.display().to_string();
    let cannot = |e: std::io::Error| Failure::input(format!("{name}: cannot read: {e}"));
    // A named pipe is opened without waiting for a writer (limits.rs).
    if super::limits::is_fifo(path) {
        let mut bytes = Vec::new();
        super::limits::read_fifo(path, replay::import::MAX_BYTES, &mut bytes).map_err(cannot)?;
        return replay::import::read(&name, &bytes[..]).map_err(|e| Failure::input(e.to_string()));
    }
    let file = File::open(path).map_err(cannot)?;
    replay::import::read(&name, file).map_err(|e| Failure::input(e.to_string()))
}

/// For each recording, the instance `--instance FILE=NAME` gives it.
fn instance_names(args: &ReplayArgs) -> Result<Vec<Option<String>>, Failure> {
    let mut out: Vec<Option<String>> = vec![None; args.recordings.len()];
    for flag in &args.instance {
        let bad = |why: &str| {
            Failure::input(format!(
                "--instance {}: {why} (expected FILE=NAME, FILE one of the recordings)",
                fleetsim::text::one_line(flag)
            ))
        };
        let (file, name) = flag.rsplit_once('=').ok_or_else(|| bad("no `=`"))?;
        if name.is_empty() || name.chars().any(char::is_control) {
            return Err(bad("an empty or unprintable name"));
        }
        let as_given = |p: &PathBuf| p.as_os_str() == file;
        let by_name = |p: &PathBuf| p.file_name().is_some_and(|n| n == file);
        let mut hits: Vec<usize> = (0..args.recordings.len())
            .filter(|&i| as_given(&args.recordings[i]))
            .collect();
        if hits.is_empty() {
            hits = (0..args.recordings.len())
                .filter(|&i| by_name(&args.recordings[i]))
                .collect();
        }
        match hits.as_slice() {
            [i] if out[*i].is_none() => out[*i] = Some(name.to_string()),
            [_] => return Err(bad("a second name for one file")),
            [] => return Err(bad("not one of the recordings")),
            _ => return Err(bad("names several recordings: give the path as written")),
        }
    }
    Ok(out)
}

fn options(args: &ReplayArgs) -> Result<Options, Failure> {
    if !(args.canary_window_s.is_finite() && args.canary_window_s > 0.0) {
        return Err(Failure::input(
            "--canary-window-s must be a positive number of seconds",
        ));
    }
    let scenario = match &args.scenario {
        None => None,
        Some(p) => {
            let sa = ScenarioArgs {
                scenario: Some(p.clone()),
                set: Vec::new(),
            };
            Some(Knobs::from_scenario(&load_scenario(&sa, None)?.scenario))
        }
    };
    Ok(Options {
        scenario,
        canary_window_s: args.canary_window_s,
    })
}

pub fn run(args: ReplayArgs) -> Result<(), Failure> {
    super::interrupt::exit_on_interrupt("replay");
    let opts = options(&args)?;
    // Refused before anything is read or written.
    if !args.what_if.is_empty() && !args.calibrate {
        return Err(Failure::input(
            "--what-if re-runs the calibrated window: add --calibrate",
        ));
    }
    if args.check && !args.calibrate {
        return Err(Failure::input(
            "--check gates on the calibration's verdict: add --calibrate",
        ));
    }
    if args.fit_deferral {
        refuse_fit_deferral(&args)?;
    }
    // Read once, before any work: a missing or broken file is refused
    // before a calibration, and each draw lays the same text over.
    let what_ifs = args
        .what_if
        .iter()
        .map(|p| Ok((p.display().to_string(), what_if_file(p)?)))
        .collect::<Result<Vec<_>, Failure>>()?;
    if args.calibrate && !(1..=MAX_SEEDS).contains(&args.seeds) {
        return Err(Failure::input(format!(
            "--seeds must be between 1 and {MAX_SEEDS}"
        )));
    }
    let names = instance_names(&args)?;
    let mut parts = args
        .recordings
        .iter()
        .map(|p| import(p))
        .collect::<Result<Vec<_>, _>>()?;
    for (part, name) in parts.iter_mut().zip(names) {
        match name {
            Some(n) => part.set_instance(&n, replay::InstanceFrom::Flag),
            None if part.source.format.is_server_log() => {
                if let Some(n) = replay::import::instance_from_file_name(&part.source.name) {
                    part.set_instance(&n, replay::InstanceFrom::FileName);
                }
            }
            None => {}
        }
    }
    let rec = Recording::assemble(parts).map_err(|e| Failure::input(e.to_string()))?;
    let analysis = replay::analyse(&rec, &opts);
    let json = fleetsim::schema::to_json(fleetsim::schema::ANALYSIS, &analysis)
        .map_err(|e| Failure::run(e.to_string()))?;
    let out = args.out.clone().unwrap_or_else(|| {
        let stem = args.recordings[0]
            .file_stem()
            .map_or("recording".into(), |s| s.to_string_lossy().into_owned());
        PathBuf::from(format!("out/replay-{stem}"))
    });
    // Written whole into a staging directory and swapped in when complete
    // (`run_dir`): a replay that fails or is stopped leaves `out` as it was.
    let staging = Staging::begin_owned(&out, "fleetsim replay", replay_owned)?;
    let dir = Dirs {
        write: staging.path().to_path_buf(),
        shown: out.clone(),
    };
    let mut file = AtomicFile::create(dir.file("analysis.json"))?;
    write!(file, "{json}").map_err(|e| Failure::run(e.to_string()))?;
    file.commit()?;
    let mut file = AtomicFile::create(dir.file("recording.csv"))?;
    replay::export::write_csv(&rec, &mut file)
        .map_err(|e| Failure::run(format!("{}: {e}", out.join("recording.csv").display())))?;
    file.commit()?;
    if args.json {
        print!("{json}");
    } else {
        print!(
            "{}",
            fleetsim::text::terminal(&replay::render::report(&analysis))
        );
        println!(
            "wrote {} and recording.csv",
            out.join("analysis.json").display()
        );
    }
    let after = if args.calibrate {
        calibrate(&args, &rec, &what_ifs, &dir).map_err(|mut f| {
            // Its analysis said "wrote": it was written to the staging
            // directory, which goes with the failure.
            f.message += &format!(
                " ({} left as it was: this replay's files are discarded)",
                out.display()
            );
            f
        })?
    } else {
        None
    };
    staging.swap_in()?;
    after.map_or(Ok(()), Err)
}

/// Where a replay writes (its staging directory) and the directory its
/// messages name (`--out`, where the files are once swapped in).
struct Dirs {
    write: PathBuf,
    shown: PathBuf,
}

impl Dirs {
    fn file(&self, name: &str) -> PathBuf {
        self.write.join(name)
    }
    fn shown(&self, name: &str) -> PathBuf {
        self.shown.join(name)
    }
}

/// What a replay directory may hold: its files, with or without
/// `--calibrate`, and what `fleetsim report` draws from them.
fn replay_owned(name: &str) -> bool {
    const FILES: [&str; 7] = [
        "analysis.json",
        "recording.csv",
        "calibrated.toml",
        "calibration.json",
        "draws.csv",
        "validation.json",
        "whatif.json",
    ];
    FILES.contains(&name) || super::run_dir::drawn_or_temporary(name)
}

/// A what-if file's tables and keys that are not laid over the calibrated
/// scenario: everything but `[policy]` and a preset's `extends`, `name`
/// and `description` (its `[fleet]`, `[client]`... would change what the
/// calibration fitted). Tables by their dotted path, as the file names
/// them (`[fleet.cow]`), keys by name.
fn not_applied(fragment: &toml::Table) -> Vec<String> {
    fn walk(path: &str, t: &toml::Table, out: &mut Vec<String>) {
        if t.values().any(|v| !v.is_table()) {
            out.push(format!("[{path}]"));
        }
        for (k, v) in t {
            if let toml::Value::Table(sub) = v {
                walk(&format!("{path}.{k}"), sub, out);
            }
        }
    }
    let mut out = Vec::new();
    for (k, v) in fragment {
        match v {
            _ if matches!(k.as_str(), "policy" | "extends" | "name" | "description") => {}
            toml::Value::Table(t) => walk(k, t, &mut out),
            _ => out.push(format!("`{k}`")),
        }
    }
    out
}

/// A what-if file read and parsed, with its `[policy]` table.
fn what_if_file(path: &Path) -> Result<toml::Table, Failure> {
    let name = path.display();
    let text = super::limits::read_input_text(path)?;
    let fragment: toml::Table = text
        .parse()
        .map_err(|e: toml::de::Error| Failure::input(format!("{name}: {}", e.message().trim())))?;
    if !matches!(fragment.get("policy"), Some(toml::Value::Table(_))) {
        return Err(Failure::input(format!(
            "{name}: key `policy`: a what-if file needs a [policy] table"
        )));
    }
    Ok(fragment)
}

/// The calibrated scenario with what-if file `name`'s [policy] laid over
/// its policy, and what of the file was not laid over (`not_applied`).
fn alternative(
    calibrated: &str,
    name: &str,
    fragment: &toml::Table,
) -> Result<(fleetsim::Scenario, Vec<String>), Failure> {
    let policy = fragment
        .get("policy")
        .and_then(toml::Value::as_table)
        .ok_or_else(|| Failure::input(format!("{name}: key `policy`: no [policy] table")))?;
    let mut base: toml::Table = calibrated
        .parse()
        .map_err(|e: toml::de::Error| Failure::run(e.to_string()))?;
    let merged = base
        .get_mut("policy")
        .and_then(toml::Value::as_table_mut)
        .ok_or_else(|| Failure::run("the calibrated scenario has no [policy]"))?;
    lay_over(merged, policy);
    let text = toml::to_string(&base).map_err(|e| Failure::run(e.to_string()))?;
    let (_, sc) =
        fleetsim::scenario::load(&text, name, &[], &mut |p| Err(format!("{p}: not read")))
            .map_err(|mut e| {
                e.line = None; // the text is the calibrated scenario, not the file
                Failure::input(format!("{e} (laid over the calibrated scenario)"))
            })?;
    Ok((sc, not_applied(fragment)))
}

fn lay_over(base: &mut toml::Table, over: &toml::Table) {
    for (k, v) in over {
        match (base.get_mut(k), v) {
            (Some(toml::Value::Table(b)), toml::Value::Table(o)) => lay_over(b, o),
            _ => {
                base.insert(k.clone(), v.clone());
            }
        }
    }
}

/// The calibration's scenario draws, validated and run by every what-if
/// (window `j` on draw `j % len`): the fitted point first (the one
/// calibrated.toml prints), then the parametric-bootstrap draws.
fn scenario_draws(
    args: &ReplayArgs,
    cal: &replay::calibrate::Calibration,
) -> Result<Vec<Loaded>, Failure> {
    let load = |sets: Vec<fleetsim::scenario::Override>| {
        load_scenario(
            &ScenarioArgs {
                scenario: args.scenario.clone(),
                set: sets
                    .iter()
                    .map(|o| format!("{}={}", o.key, o.value))
                    .collect(),
            },
            None,
        )
    };
    let mut out = vec![load(cal.overrides())?];
    let mut refused = 0;
    for i in 1..cal.draws.len() {
        match load(cal.draw_overrides(i)) {
            Ok(d) => out.push(d),
            Err(_) => refused += 1,
        }
    }
    if refused > 0 && !args.json {
        println!(
            "note: {refused} of {} calibration draws fail the scenario's start-up checks and are \
             left out of validation and what-ifs",
            cal.draws.len() - 1
        );
    }
    Ok(out)
}

/// Writes `value` as `format`'s file in `out`, stamped (`schema::to_json`).
fn write_json<T: serde::Serialize>(
    dir: &Dirs,
    format: fleetsim::schema::Format,
    value: &T,
) -> Result<(), Failure> {
    let json = fleetsim::schema::to_json(format, value).map_err(|e| Failure::run(e.to_string()))?;
    let mut file = AtomicFile::create(dir.file(format.file))?;
    write!(file, "{json}").map_err(|e| Failure::run(e.to_string()))?;
    file.commit()
}

/// `--calibrate`: fit, write calibrated.toml, validate, write
/// validation.json; then the what-ifs, and the `--check` verdict. The
/// failures that come after every file is written (a negative verdict
/// under `--check`, a what-if refused) are returned as `Ok(Some(..))`:
/// the directory is complete, and swapped in before they are reported.
fn calibrate(
    args: &ReplayArgs,
    rec: &Recording,
    what_if: &[(String, toml::Table)],
    dir: &Dirs,
) -> Result<Option<Failure>, Failure> {
    let base_args = ScenarioArgs {
        scenario: args.scenario.clone(),
        set: Vec::new(),
    };
    let base = load_scenario(&base_args, None)?;
    let budget = replay::calibrate::Budget::DEFAULT;
    let options = replay::calibrate::Options {
        fit_tick: args.fit_tick,
        read_deferral: args.scenario.is_none() || args.fit_deferral,
    };
    // Each memory model (plain, the base's) under each busy deferral.
    let candidates = 2 * replay::calibrate::deferral_candidates(&base.raw, options);
    // Whole-MB rows fit the first fit twice (rounded and truncated).
    let whole_mb = replay::validate::Recorded::of(rec).whole_mb;
    let planned =
        replay::calibrate::planned_simulations(budget, candidates, options, whole_mb) as u64;
    let bar = Progress::new("calibrate", planned, "simulated windows");
    let cal = replay::calibrate::calibrate(rec, &base.raw, args.seed, budget, options, &|done| {
        bar.set_position(done as u64)
    })
    .map_err(|e| Failure::input(format!("--calibrate: {e}")))?;
    bar.finish_counted();
    write_json(dir, fleetsim::schema::CALIBRATION, &cal)?;
    let mut file = AtomicFile::create(dir.file("draws.csv"))?;
    write!(file, "{}", cal.draws_csv()).map_err(|e| Failure::run(e.to_string()))?;
    file.commit()?;
    let draws = scenario_draws(args, &cal)?;
    let text = replay::calibrate::calibrated_toml(&draws[0].raw, &cal)
        .map_err(|e| Failure::run(format!("cannot print the calibrated scenario: {e}")))?;
    let path = dir.shown("calibrated.toml");
    let mut file = AtomicFile::create(dir.file("calibrated.toml"))?;
    write!(file, "{text}").map_err(|e| Failure::run(e.to_string()))?;
    file.commit()?;
    if !args.json {
        print!(
            "{}",
            fleetsim::text::terminal(&replay::calibrate::render(&cal))
        );
        println!("wrote {}", path.display());
    }
    let seeds = replay::validate::seeds_for(rec, args.seed, args.seeds as usize);
    let scenarios: Vec<fleetsim::Scenario> = draws.iter().map(|d| d.scenario.clone()).collect();
    let bar = Progress::new("validate", seeds.len() as u64, "simulated windows");
    let mut v = replay::validate::validate_written(
        rec,
        &cal.regime,
        &scenarios,
        &seeds,
        cal.structure.whole_mb_floor,
        &|| bar.inc(1),
    )
    .map_err(|e| Failure::run(format!("validation run failed: {e}")))?;
    v.structure = Some(cal.structure.clone());
    bar.finish();
    let path = dir.shown(fleetsim::schema::VALIDATION.file);
    write_json(dir, fleetsim::schema::VALIDATION, &v)?;
    if !args.json {
        print!(
            "{}",
            fleetsim::text::terminal(&replay::validate::render(&v))
        );
        println!("wrote {}", path.display());
        println!(
            "reproduce with: fleetsim replay ... --calibrate --seed {} --seeds {}",
            args.seed,
            seeds.len()
        );
    }
    let verdict = || {
        format!(
            "--check: {} (rows {})",
            v.verdict,
            replay::validate::warned(&v).join(", ")
        )
    };
    if !what_if.is_empty() {
        if !v.reproduces && !args.force {
            // Gated, the verdict is the answer (exit 1), also where it
            // refuses the what-ifs.
            return Ok(Some(if args.check {
                Failure::verdict(format!(
                    "{}; --what-if not run: it would rest on a fit the recording rejects \
                     (--force runs it labelled as such)",
                    verdict()
                ))
            } else {
                Failure::input(format!(
                    "--what-if refused: the calibration does not reproduce its window (rows \
                     {}); its what-ifs would rest on a fit the recording rejects: fix the \
                     calibration, or add --force to run them labelled as such",
                    replay::validate::warned(&v).join(", ")
                ))
            }));
        }
        what_ifs(args, what_if, &v, &draws, &seeds, dir)?;
    }
    if args.check && !v.reproduces {
        return Ok(Some(Failure::verdict(verdict())));
    }
    Ok(None)
}

/// `--fit-deferral` reads the busy deferral a calibration simulates: it
/// needs `--calibrate`, and a `--scenario` that defers (the scan varies
/// its `busy_rps` and `defer_max_s`, off among them; over a scenario that
/// does not defer there is nothing to vary, and reading nothing silently
/// would say the flag was honoured).
fn refuse_fit_deferral(args: &ReplayArgs) -> Result<(), Failure> {
    if !args.calibrate {
        return Err(Failure::input(
            "--fit-deferral reads busy deferral while calibrating: add --calibrate",
        ));
    }
    let Some(path) = &args.scenario else {
        return Ok(());
    };
    let base = load_scenario(
        &ScenarioArgs {
            scenario: Some(path.clone()),
            set: Vec::new(),
        },
        None,
    )?;
    if base.raw.policy.busy_deferral {
        return Ok(());
    }
    Err(Failure::input(format!(
        "--fit-deferral: {} does not defer (policy.busy_deferral = false), so there is no \
         deferral to read; set policy.busy_deferral = true in it to read whether and how the \
         fleet defers (off is among the deferrals scanned), or drop --fit-deferral",
        path.display()
    )))
}

/// `--what-if` (on a calibration that reproduces its window, or with
/// `--force`): each file's policy over every draw.
fn what_ifs(
    args: &ReplayArgs,
    files: &[(String, toml::Table)],
    v: &replay::validate::Validation,
    draws: &[Loaded],
    seeds: &[u64],
    dir: &Dirs,
) -> Result<(), Failure> {
    let warned = replay::validate::warned(v);
    let texts = draws
        .iter()
        .map(|d| toml::to_string(&d.raw).map_err(|e| Failure::run(e.to_string())))
        .collect::<Result<Vec<_>, _>>()?;
    // A draw whose fitted values the alternative policy refuses (its
    // start-up checks: a limit floor under the draw's boot RSS) is left out
    // on both sides, so the comparison stays paired; the fitted point (draw
    // 0) must pass.
    let mut kept: Vec<usize> = Vec::new();
    let mut per_file: Vec<(String, Vec<fleetsim::Scenario>)> = files
        .iter()
        .map(|(name, _)| (name.clone(), Vec::new()))
        .collect();
    let mut refused = 0usize;
    let mut unapplied: Vec<Vec<String>> = Vec::new();
    for (i, text) in texts.iter().enumerate() {
        let alts: Result<Vec<_>, Failure> = files
            .iter()
            .map(|(name, f)| alternative(text, name, f))
            .collect();
        match alts {
            Ok(alts) => {
                kept.push(i);
                for (slot, (sc, left)) in per_file.iter_mut().zip(alts) {
                    slot.1.push(sc);
                    if i == 0 {
                        unapplied.push(left);
                    }
                }
            }
            Err(e) if i == 0 => return Err(e),
            Err(_) => refused += 1,
        }
    }
    if refused > 0 && !args.json {
        println!(
            "note: {refused} of {} calibration draws left out of the what-ifs: the policy refuses \
             them at start-up (each draw's boot RSS and limits checked as the fitted point's)",
            texts.len()
        );
    }
    let alternatives = per_file;
    let recorded: Vec<fleetsim::Scenario> =
        kept.iter().map(|&i| draws[i].scenario.clone()).collect();
    let runs = replay::whatif::what_if_runs(&recorded, alternatives.len(), seeds.len());
    let bar = Progress::new("what-if", runs as u64, "simulated windows");
    let mut policies =
        replay::whatif::what_if_with(&recorded, &alternatives, seeds, &|| bar.inc(1))
            .map_err(|e| Failure::run(format!("what-if run failed: {e}")))?;
    bar.finish();
    // (The recorded policy comes first; then one result a file, in order.)
    for (p, left) in policies.iter_mut().skip(1).zip(unapplied) {
        p.not_applied = left;
    }
    let w = replay::whatif::WhatIf {
        schema: replay::whatif::SCHEMA,
        calibration_reproduces: v.reproduces,
        forced: !v.reproduces && args.force,
        warned,
        seeds: seeds.to_vec(),
        draws: kept.len(),
        policies,
    };
    let path = dir.shown(fleetsim::schema::WHATIF.file);
    write_json(dir, fleetsim::schema::WHATIF, &w)?;
    if !args.json {
        print!("{}", fleetsim::text::terminal(&replay::whatif::render(&w)));
        println!("wrote {}", path.display());
    }
    Ok(())
}
