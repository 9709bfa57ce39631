//! Issue 14, items 4 and 5: validation compares like with like, and
//! what-ifs say what they rest on. Each test pins one behaviour and fails
//! when it is reverted: rows the recording has no events for are "not
//! recorded", seeds derive from the recording, whole-MB recordings are
//! compared at whole MB, good fits raise (almost) no false alarms, and the
//! CLI refuses a what-if on a failed calibration without --force, labels
//! it with, and exits 1 under --check.

mod common;

#[path = "common/falsealarm.rs"]
mod falsealarm;

use fleetsim::Scenario;
use fleetsim::replay::validate::{Recorded, Validation, Verdict, seeds_for, validate};
use fleetsim::replay::{Recording, import};
use std::path::Path;
use std::process::Command;

const ROOT: &str = env!("CARGO_MANIFEST_DIR");
const REGIME: &str = "base 500 MB / hard 650 MB";

fn shipped(name: &str) -> String {
    std::fs::read_to_string(Path::new(ROOT).join(name)).unwrap()
}

fn truth() -> Scenario {
    let text = shipped("scenarios/recordings/generated-24h-truth.toml");
    fleetsim::scenario::load(&text, "truth", &[], &mut |_: &str| Err(String::new()))
        .unwrap()
        .1
}

/// The shipped recording with each CSV row passed through `edit` (the
/// header kept); `None` drops the row.
fn edited(edit: impl Fn(Vec<String>) -> Option<Vec<String>>) -> Recording {
    let text = shipped("scenarios/recordings/generated-24h.csv");
    let mut lines = text.lines();
    let mut out = format!("{}\n", lines.next().unwrap());
    for l in lines {
        if let Some(f) = edit(l.split(',').map(str::to_string).collect()) {
            out += &(f.join(",") + "\n");
        }
    }
    let part = import::parse("edited.csv", &out).unwrap();
    Recording::assemble(vec![part]).unwrap()
}

fn verdict(v: &Validation, name: &str) -> Verdict {
    let f = v.figures.iter().map(|r| (&r.name, r.verdict));
    f.chain(v.distributions.iter().map(|r| (&r.name, r.verdict)))
        .find(|(n, _)| n.as_str() == name)
        .unwrap_or_else(|| panic!("no row {name}"))
        .1
}

const EVENT: usize = 1;
const RSS: usize = 4;
const PRESSURE: usize = 9;

#[test]
fn figures_the_recording_has_no_events_for_are_not_recorded() {
    // No canary rows and no pressure field: the rows that need them are
    // shown as "not recorded", never warn, and the verdict counts the rest.
    let rec = edited(|mut f| {
        if f[EVENT] == "retry_ok" || f[EVENT] == "fetch_failed" {
            return None;
        }
        f[PRESSURE].clear();
        Some(f)
    });
    let has = Recorded::of(&rec);
    assert!(!has.canary && !has.pressure && has.requests && has.margin);
    let seeds = seeds_for(&rec, 1, 32);
    let v = validate(&rec, REGIME, &[truth()], &seeds).unwrap();
    eprintln!("{}", fleetsim::replay::validate::render(&v));
    for name in [
        "retry_ok per hour",
        "fetch_failed per hour",
        "pressure recycles per hour",
    ] {
        assert_eq!(verdict(&v, name), Verdict::NotRecorded, "{name}");
    }
    assert!(v.reproduces, "{}", v.verdict);
    assert!(v.verdict.contains("(3 not recorded)"), "{}", v.verdict);
    let json = serde_json::to_value(&v).unwrap();
    assert_eq!(json["schema"], "fleetsim.validation/3");
    assert_eq!(json["figures"][10]["verdict"], "not_recorded");

    // Decided from the events the recording has, not from a value of 0:
    // with retry_ok rows but no fetch_failed, fetch_failed is judged (0).
    let rec = edited(|f| (f[EVENT] != "fetch_failed").then_some(f));
    let v = validate(&rec, REGIME, &[truth()], &seeds_for(&rec, 1, 32)).unwrap();
    let ff = v.figures.iter().find(|r| r.name == "fetch_failed per hour");
    assert_eq!(ff.unwrap().recorded, Some(0.0));
    assert_ne!(verdict(&v, "fetch_failed per hour"), Verdict::NotRecorded);
    assert_ne!(
        verdict(&v, "pressure recycles per hour"),
        Verdict::NotRecorded
    );
}

#[test]
fn seeds_derive_from_the_recording_and_the_seed() {
    let a = edited(Some);
    let b = edited(|mut f| {
        if f[EVENT] == "worker_recycled" && f[RSS] == "609.3" {
            f[RSS] = "609.4".into();
        }
        Some(f)
    });
    let sa = seeds_for(&a, 1, 32);
    assert_eq!(sa.len(), 32);
    assert_eq!(sa, seeds_for(&a, 1, 32), "same recording, same seeds");
    assert_ne!(
        sa,
        seeds_for(&b, 1, 32),
        "one RSS moved 0.1 MB: other seeds"
    );
    assert_ne!(sa, seeds_for(&a, 2, 32), "--seed moves the block");
    assert_ne!(sa, (1..=32).collect::<Vec<u64>>(), "not the fixed block");
    assert_eq!(
        sa[..8],
        seeds_for(&a, 1, 8)[..],
        "a prefix: more seeds extend"
    );
    let v = validate(&a, REGIME, &[truth()], &sa[..4]).unwrap();
    assert_eq!(v.seeds, sa[..4]);
}

#[test]
fn whole_mb_recordings_are_compared_at_whole_mb() {
    let sub_mb = edited(Some);
    let whole = edited(|mut f| {
        if let Ok(x) = f[RSS].parse::<f64>() {
            f[RSS] = format!("{}", x.round());
        }
        Some(f)
    });
    assert!(!Recorded::of(&sub_mb).whole_mb);
    assert!(Recorded::of(&whole).whole_mb);
    let seeds = seeds_for(&whole, 1, 8);
    let integral = |v: &Validation| {
        let m = v
            .distributions
            .iter()
            .find(|r| r.name == "margin over limit (MB)");
        m.unwrap().simulated_sample.iter().all(|x| x.fract() == 0.0)
    };
    let v = validate(&whole, REGIME, &[truth()], &seeds).unwrap();
    assert_eq!(v.resolution_mb, Some(1.0));
    assert!(integral(&v), "simulated margins rounded to whole MB");
    assert!(v.rules.iter().any(|r| r.contains("whole MB")));
    let v = validate(&sub_mb, REGIME, &[truth()], &seeds).unwrap();
    assert_eq!(v.resolution_mb, None);
    assert!(!integral(&v), "sub-MB recordings keep continuous values");
}

/// Good fits: the default scenario's own windows validated against it.
/// These six windows are ones the old rule (seeds 1..8, 2.5 sd + 5%)
/// warned on, 7 rows of 90; the prediction interval over 32
/// recording-derived seeds warns on none. The full figure (30 windows of
/// two scenarios): `cargo run --release --example false_alarms`.
#[test]
fn good_fits_raise_no_false_alarms() {
    let sc = common::scenario(&[]);
    let (old, new, warned) = falsealarm::good_fits(&sc, &[114, 116, 117, 118, 122, 124], 32);
    eprintln!("{warned:#?}");
    assert!(old.rate() > 0.05, "the old rule warned here: {old:?}");
    assert!(new.rate() <= 0.01, "false alarms: {new:?} {warned:?}");
}

/// Runs `fleetsim replay` on the shipped recording with its true base.
/// A fleet whose workers' lives are nearly periodic (near-constant leak
/// velocity, little jitter, two instances of three at 0.8 rps: 44
/// recycles a day): one day's recycle gaps are set by a few phases, so its
/// values are far from independent draws. A plain KS test of one window
/// against the pooled windows warns on windows the scenario itself made;
/// judged against the spread of the scenario's own windows it does not,
/// and a wrong fit still warns. (Found on SimPy recordings of fleet 47 of
/// the third draw with leak cv 0.02: 2 of 16 recordings failed validation
/// on this row and on requests per worker, every parameter within target.)
#[test]
fn near_periodic_lives_are_judged_against_the_scenarios_own_windows() {
    use fleetsim::replay::validate::{kolmogorov_q, ks_lambda};
    let fleet = [
        "fleet.instances=2",
        "fleet.workers_per_instance=3",
        "fleet.boot_rss_mb=310",
        "fleet.leak.mean_mb_per_request=0.17",
        "fleet.leak.cv=0.02",
        "fleet.leak.warmup_mb=0",
        "fleet.leak.step_probability=0",
        "workload.rps=0.81",
        "workload.profile=constant",
        "policy.busy_deferral=false",
        "policy.base_limit_mb=582",
        "policy.jitter_mb=21",
        "policy.hard_limit_mb=732",
    ];
    let sc = common::scenario(&fleet);
    let gaps = "same-instance gaps (s)";
    let recordings: Vec<u64> = (3..27).collect();
    let (mut gap_warns, mut rows, mut warns) = (0, 0, 0);
    let (mut plain_square, mut inflation) = (0.0, 0.0);
    for &s in &recordings {
        let rec = falsealarm::recording(&sc, s);
        let label = falsealarm::regime(&rec);
        let v = validate(
            &rec,
            &label,
            std::slice::from_ref(&sc),
            &seeds_for(&rec, 1, 32),
        )
        .unwrap();
        let row = v.distributions.iter().find(|r| r.name == gaps).unwrap();
        let l = ks_lambda(row.ks_d.unwrap(), row.recorded_n, row.simulated_n);
        plain_square += l * l;
        inflation += row.inflation;
        gap_warns += usize::from(row.verdict == Verdict::Warn);
        let judged = v.figures.iter().map(|r| r.verdict);
        let judged = judged.chain(v.distributions.iter().map(|r| r.verdict));
        for verdict in judged.filter(|v| *v != Verdict::NotRecorded) {
            rows += 1;
            warns += usize::from(verdict == Verdict::Warn);
        }
        eprintln!(
            "recording {s}: plain p {:.4}, inflation {:.3}, p {:.4} {:?}",
            kolmogorov_q(l),
            row.inflation,
            row.p_value.unwrap(),
            warned(&v)
        );
    }
    let n = recordings.len() as f64;
    // Independent samples give the Kolmogorov distribution, mean square
    // pi^2 / 12; these windows spread wider, and their inflation says so.
    let excess = plain_square / n / (std::f64::consts::PI.powi(2) / 12.0);
    eprintln!("mean square {excess:.2}x the Kolmogorov's; {warns} of {rows} rows warn");
    assert!(
        excess > 1.2,
        "the plain statistic's mean square is {excess:.2}x the Kolmogorov's"
    );
    assert!(inflation / n > 1.15, "mean inflation {:.3}", inflation / n);
    // At p < 0.01 a calibrated test warns on about a quarter of one of 24
    // windows; the plain one warned on 3 (its p < 0.05 on 8).
    assert!(
        gap_warns <= 2,
        "the gaps warned on {gap_warns} of {n} good fits"
    );
    assert!(
        warns as f64 <= 0.02 * rows as f64,
        "{warns} of {rows} rows warn on good fits"
    );
    // A wrong fit still warns, on the distribution itself: the leak 20%
    // slower.
    let wrong = [&fleet[..], &["fleet.leak.mean_mb_per_request=0.136"]].concat();
    let wrong = common::scenario(&wrong);
    for &s in &recordings[..8] {
        let rec = falsealarm::recording(&sc, s);
        let label = falsealarm::regime(&rec);
        let seeds = seeds_for(&rec, 1, 32);
        let v = validate(&rec, &label, std::slice::from_ref(&wrong), &seeds).unwrap();
        assert_eq!(
            verdict(&v, "requests per worker"),
            Verdict::Warn,
            "recording {s}: a 20% slower leak passed the KS test"
        );
    }
}

fn warned(v: &Validation) -> Vec<String> {
    fleetsim::replay::validate::warned(v)
}

fn replay(out: &Path, extra: &[&str]) -> (Option<i32>, String, String) {
    let mut args = vec![
        "replay",
        "scenarios/recordings/generated-24h.csv",
        "--scenario",
        "scenarios/recordings/generated-24h-truth.toml",
        "--calibrate",
        "--out",
        out.to_str().unwrap(),
    ];
    args.extend_from_slice(extra);
    let o = Command::new(env!("CARGO_BIN_EXE_fleetsim"))
        .current_dir(ROOT)
        .args(&args)
        .output()
        .unwrap();
    let s = |b: &[u8]| String::from_utf8_lossy(b).into_owned();
    (o.status.code(), s(&o.stdout), s(&o.stderr))
}

/// With 32 seeds the shipped window fails one row: its generating seed
/// drew 4 fetch_failed in 12 h where the scenario gives 0.35 on average
/// (generated-24h.md). With 8 seeds the band is wide enough to pass.
#[test]
fn what_ifs_on_a_failed_calibration_are_refused_or_forced_and_labelled() {
    let dir = common::TempDir::new("validation-rules-whatif");
    let bucket = "scenarios/whatif/token-bucket.toml";
    let out = dir.path().join("refused");
    let (code, _, err) = replay(&out, &["--what-if", bucket]);
    assert_eq!(code, Some(2), "{err}");
    assert!(
        err.contains("--what-if refused") && err.contains("rows fetch_failed per hour"),
        "{err}"
    );
    assert!(err.contains("--force"), "{err}");
    assert!(out.join("validation.json").exists());
    assert!(
        !out.join("whatif.json").exists(),
        "a refused what-if writes nothing"
    );

    let out = dir.path().join("forced");
    // A what-if file with tables beyond its [policy]: they are not laid
    // over the calibrated scenario, and the output says so.
    let extra = dir.path().join("limit-and-fleet.toml");
    std::fs::write(
        &extra,
        "name = \"x\"\n[policy]\nbase_limit_mb = 480\n[fleet]\nworkers_per_instance = 8\n\
         [fleet.cow]\npreload = false\n[client.x]\ny = 1\n",
    )
    .unwrap();
    let extra = extra.to_str().unwrap();
    let (code, stdout, err) = replay(&out, &["--what-if", bucket, "--what-if", extra, "--force"]);
    assert_eq!(code, Some(0), "{err}");
    assert!(
        stdout.contains(
            "not applied: [client.x], [fleet], [fleet.cow] (a what-if lays only the file's \
             [policy] over"
        ),
        "{stdout}"
    );
    assert!(
        stdout.contains(
            "WARNING: calibration does NOT reproduce its window (rows fetch_failed per hour); \
             these what-ifs rest on it (--force)"
        ),
        "{stdout}"
    );
    let w: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(out.join("whatif.json")).unwrap()).unwrap();
    assert_eq!(w["schema"], "fleetsim.whatif/3");
    assert_eq!(w["calibration_reproduces"], false);
    assert_eq!(w["policies"][1]["not_applied"], serde_json::json!([]));
    assert_eq!(
        w["policies"][2]["not_applied"],
        serde_json::json!(["[client.x]", "[fleet]", "[fleet.cow]"])
    );
    assert_eq!(w["forced"], true);
    assert_eq!(w["warned"][0], "fetch_failed per hour");
    assert_eq!(w["policies"][0]["policy"], "recorded");
    assert_eq!(w["seeds"].as_array().unwrap().len(), 32);
}

/// `--fit-deferral` needs a calibration and a scenario that defers: over
/// one that does not there is nothing to read, and it said nothing.
#[test]
fn fit_deferral_is_refused_where_there_is_no_deferral_to_read() {
    let dir = common::TempDir::new("validation-rules-fit-deferral");
    let run = |args: &[&str]| {
        let o = Command::new(env!("CARGO_BIN_EXE_fleetsim"))
            .current_dir(ROOT)
            .args(["replay", "scenarios/recordings/generated-24h.csv", "--out"])
            .arg(dir.path().join("out"))
            .args(args)
            .output()
            .unwrap();
        (
            o.status.code(),
            String::from_utf8_lossy(&o.stderr).into_owned(),
        )
    };
    let (code, err) = run(&[
        "--calibrate",
        "--fit-deferral",
        "--scenario",
        "scenarios/unicorn-worker-killer.toml",
    ]);
    assert_eq!(code, Some(2), "{err}");
    assert!(
        err.contains("unicorn-worker-killer.toml does not defer (policy.busy_deferral = false)"),
        "{err}"
    );
    let (code, err) = run(&["--fit-deferral"]);
    assert_eq!(code, Some(2), "{err}");
    assert!(err.contains("add --calibrate"), "{err}");
    assert!(!dir.path().join("out").exists(), "refused before any work");
}

#[test]
fn check_exits_1_when_the_verdict_is_negative() {
    let dir = common::TempDir::new("validation-rules-check");
    let (code, stdout, err) = replay(&dir.path().join("fails"), &["--check"]);
    assert_eq!(code, Some(1), "{stdout}{err}");
    assert!(
        err.contains("error: verdict: --check") && err.contains("fetch_failed per hour"),
        "{err}"
    );
    assert!(
        dir.path().join("fails/validation.json").exists(),
        "files still written"
    );
    // Gated, the negative verdict is the answer also where it refuses a
    // what-if (a pipeline reads 1, not the refusal's 2).
    let gated = dir.path().join("gated");
    let bucket = "scenarios/whatif/token-bucket.toml";
    let (code, _, err) = replay(&gated, &["--check", "--what-if", bucket]);
    assert_eq!(code, Some(1), "{err}");
    assert!(
        err.contains("error: verdict: --check") && err.contains("--what-if not run"),
        "{err}"
    );
    assert!(!gated.join("whatif.json").exists());
    // A window the base's own structure made reproduces: --check exits 0.
    let made = dir.path().join("made");
    let run = Command::new(env!("CARGO_BIN_EXE_fleetsim"))
        .current_dir(ROOT)
        .args(["run", "--seed", "3", "--out"])
        .arg(&made)
        .args([
            "--set",
            "fleet.boot_rss_mb=420",
            "--set",
            "policy.base_limit_mb=540",
            "--set",
            "policy.hard_limit_mb=690",
            "--set",
            "fleet.leak.mean_mb_per_request=0.15",
            "--set",
            "fleet.leak.cv=0.6",
            "--set",
            "fleet.leak.warmup_mb=0",
            "--set",
            "fleet.leak.step_probability=0",
            "--set",
            "workload.rps=1.6",
            "--set",
            "workload.profile=constant",
            "--set",
            "policy.busy_deferral=false",
        ])
        .output()
        .unwrap();
    assert!(
        run.status.success(),
        "{}",
        String::from_utf8_lossy(&run.stderr)
    );
    let o = Command::new(env!("CARGO_BIN_EXE_fleetsim"))
        .current_dir(ROOT)
        .args(["replay", "--calibrate", "--check", "--out"])
        .arg(dir.path().join("passes"))
        .arg(made.join("events.csv"))
        .output()
        .unwrap();
    assert_eq!(
        o.status.code(),
        Some(0),
        "{}{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    );
    // Without --check a negative verdict is a report, not a failure.
    let (code, _, err) = replay(&dir.path().join("plain"), &[]);
    assert_eq!(code, Some(0), "{err}");
    // --check needs --calibrate: refused before anything is written.
    let o = Command::new(env!("CARGO_BIN_EXE_fleetsim"))
        .current_dir(ROOT)
        .args([
            "replay",
            "scenarios/recordings/generated-24h.csv",
            "--check",
            "--out",
        ])
        .arg(dir.path().join("refused"))
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2));
    assert!(!dir.path().join("refused").exists());
    let help = Command::new(env!("CARGO_BIN_EXE_fleetsim"))
        .args(["replay", "--help"])
        .output()
        .unwrap();
    let help = String::from_utf8_lossy(&help.stdout);
    assert!(
        help.contains("Exit codes:") && help.contains("with --check a negative verdict"),
        "{help}"
    );
}

/// Scenario draws: window j runs draw j % len, so two identical draws give
/// exactly the one-scenario validation, and a different second draw moves
/// the figures.
#[test]
fn validation_runs_over_scenario_draws() {
    let rec = edited(Some);
    let seeds = seeds_for(&rec, 1, 6);
    let one = validate(&rec, REGIME, &[truth()], &seeds).unwrap();
    let two = validate(&rec, REGIME, &[truth(), truth()], &seeds).unwrap();
    assert_eq!(one.figures, two.figures);
    assert_eq!(two.draws, 2);
    let mut other = truth();
    other.policy.base_limit_mb = 470.0;
    let mixed = validate(&rec, REGIME, &[truth(), other], &seeds).unwrap();
    assert_ne!(
        one.figures[0].simulated_mean,
        mixed.figures[0].simulated_mean
    );
}

/// What-if draws: seed j runs draw j % len under both policies, so
/// repeating one draw changes nothing, and the notes name the gate that
/// shadows a change (a 60 s cooldown under the 120 s lease).
#[test]
fn what_if_runs_over_scenario_draws_and_names_shadowing_gates() {
    use fleetsim::replay::whatif::what_if;
    let rec = truth();
    let mut alt = truth();
    alt.policy = common::scenario(&["policy.cooldown_s=60"]).policy;
    alt.policy.base_limit_mb = rec.policy.base_limit_mb;
    alt.policy.jitter_mb = rec.policy.jitter_mb;
    alt.policy.hard_limit_mb = rec.policy.hard_limit_mb;
    let seeds = [5, 6, 7, 8];
    let one = what_if(
        std::slice::from_ref(&rec),
        &[("cooldown 60".into(), vec![alt.clone()])],
        &seeds,
    )
    .unwrap();
    let two = what_if(
        &[rec.clone(), rec.clone()],
        &[("cooldown 60".into(), vec![alt.clone(), alt])],
        &seeds,
    )
    .unwrap();
    assert_eq!(one, two);
    assert!(one[0].shadowed.is_empty());
    assert_eq!(one[1].shadowed.len(), 1, "{:?}", one[1].shadowed);
    assert!(one[1].shadowed[0].contains("fleet lease (ttl 120 s)"));
}
