//! `fleetsim replay --calibrate` and its validation: calibration recovers
//! the parameters of a known scenario from its own simulated window, the
//! two-sample Kolmogorov-Smirnov statistic on hand-made samples, and the
//! validation passing for a calibration and warning for a wrong scenario.

mod common;

use common::calibrate::{calibrate, raw, raw_of, recording, recycle_rows, value};
use fleetsim::Scenario;
use fleetsim::replay::calibrate::{Budget, Calibration, Options, fit_lognormal};
use fleetsim::replay::validate::{Validation, Verdict, kolmogorov_q, ks_two_sample, validate};
use fleetsim::replay::{Recording, import};
use std::path::Path;

/// The known truth: a pure-velocity leak (the model calibration fits), limits
/// and boot RSS moved away from the default so recovery is not luck.
const TRUTH: &[&str] = &[
    "run.duration_h=96",
    "fleet.boot_rss_mb=380",
    "fleet.leak.distribution=lognormal",
    "fleet.leak.mean_mb_per_request=0.15",
    "fleet.leak.cv=0.6",
    "fleet.leak.warmup_mb=0",
    "fleet.leak.step_probability=0",
    "policy.base_limit_mb=520",
    "policy.jitter_mb=30",
    "policy.hard_limit_mb=680",
];

/// A plain-leak fleet the embedded default did not generate: boot 420 (the
/// default's 360 plus 60), limits 540 +- 30, 1.6 rps constant, no
/// deferral. The failure: boot kept at the base's value, the leak
/// absorbing the error.
const PLAIN: &[&str] = &[
    "run.duration_h=24",
    "fleet.boot_rss_mb=420",
    "fleet.leak.mean_mb_per_request=0.15",
    "fleet.leak.cv=0.6",
    "fleet.leak.warmup_mb=0",
    "fleet.leak.step_probability=0",
    "policy.base_limit_mb=540",
    "policy.jitter_mb=30",
    "policy.hard_limit_mb=690",
    "workload.rps=1.6",
    "workload.profile=constant",
    "policy.busy_deferral=false",
];

/// Checks the tolerances on a calibration of `PLAIN`.
fn assert_recovers_plain(c: &Calibration) {
    let near = |key: &str, truth: f64, tol: f64| {
        let v = value(c, key);
        assert!(
            (v - truth).abs() <= tol,
            "{key}: {v} vs {truth} (+- {tol})\n{}",
            fleetsim::replay::calibrate::render(c)
        );
    };
    near("boot_plus_warmup_mb", 420.0, 25.0);
    near("effective_mb_per_request", 0.15, 0.15 * 0.15);
    near("policy.base_limit_mb", 540.0, 540.0 * 0.02);
    near("policy.jitter_mb", 30.0, 6.0);
    near("workload.rps", 1.6, 1.6 * 0.05);
    for f in c.fits.iter().filter(|f| f.key != "policy.tick_s") {
        let (se, lo, hi) = (f.se.unwrap(), f.lo.unwrap(), f.hi.unwrap());
        assert!(se > 0.0 && lo < hi, "{}: no uncertainty", f.key);
    }
    let chosen: Vec<_> = c.structure.candidates.iter().filter(|k| k.chosen).collect();
    assert_eq!(chosen.len(), 1);
    assert_eq!(chosen[0].memory, "plain", "{:?}", c.structure.candidates);
    assert!(!chosen[0].deferral, "{:?}", c.structure.candidates);
    assert_eq!(c.structure.profile, "constant");
}

#[test]
fn calibration_on_the_default_recovers_a_plain_fleet_from_recycle_rows() {
    let rec = recycle_rows(&recording(PLAIN, 11), true, false);
    let c = calibrate(&rec, &raw(&[]), 1).expect("calibrates");
    assert_recovers_plain(&c);
    assert_eq!(c.structure.rate_from, "complete slot lives");
    // The default hands an idle instance's requests to its workers in
    // turn, and the slot lives say so.
    let accept = c
        .structure
        .accept
        .as_ref()
        .expect("read off the slot lives");
    assert_eq!(accept.chosen, "longest_idle", "{accept:?}");
    assert!(!c.fixed.iter().any(|(k, _)| k == "fleet.accept"));
    // The draws: the fitted point first, then the bootstrap's of every
    // fit, pooled, less the few whose own window the recording rules out
    // (a 96 h window of a well-identified fleet: a handful at most).
    let b = Budget::DEFAULT;
    assert_eq!(c.draws.len() + c.draws_screened_out, b.fits * b.draws + 1);
    assert!(
        c.draws_screened_out <= 2 * b.fits,
        "{}",
        c.draws_screened_out
    );
    // Both fits' points are named, and their mean reported.
    assert!(
        c.notes
            .iter()
            .any(|n| n.starts_with("fits: 2 on independent simulation seeds")
                && n.contains("the point is the mean of both")),
        "{:?}",
        c.notes
    );
    let csv = c.draws_csv();
    assert!(csv.starts_with("draw,policy.base_limit_mb,"));
    // Values as a scenario file would say them: the base's tick is 45,
    // not exp(ln 45) = 44.99999999999999.
    let tick = csv
        .lines()
        .next()
        .unwrap()
        .split(',')
        .position(|h| h == "policy.tick_s")
        .expect("a tick column");
    assert!(
        csv.lines()
            .skip(1)
            .all(|l| l.split(',').nth(tick) == Some("45")),
        "{csv}"
    );
    // Validated over the draws, the fit reproduces its window; the canary
    // and pressure rows are not recorded, never warnings.
    let scenarios: Vec<Scenario> = (0..c.draws.len())
        .map(|i| calibrated_sets(fleetsim::scenario::DEFAULT_SCENARIO, &c.draw_overrides(i)))
        .collect();
    let seeds = fleetsim::replay::validate::seeds_for(&rec, 1, 32);
    let v = validate(&rec, &c.regime, &scenarios, &seeds).unwrap();
    assert!(v.reproduces, "{}", fleetsim::replay::validate::render(&v));
    assert_eq!(verdict(&v, "retry_ok per hour"), Verdict::NotRecorded);
}

#[test]
fn calibration_survives_whole_mb_rows_without_slots() {
    let rec = recycle_rows(&recording(PLAIN, 12), false, true);
    let c = calibrate(&rec, &raw(&[]), 1).expect("calibrates");
    assert_recovers_plain(&c);
    assert!(c.structure.whole_mb);
    assert_eq!(c.structure.rate_from, "lives chained within the fleet");
}

/// Whole-MB rows of a fleet whose leak velocities are nearly constant, from
/// the independent SimPy model (fleet 54 of issue 14's third held-out draw
/// with leak cv 0.02: boot 309, limits 561 +- 39, 0.295 MB/request, 1.13
/// rps; tests/recordings/README.md). An overshoot quantile that sits on one
/// whole MB of margin reads requests / (rss - boot), which follows the
/// velocity: with the pilot's sensitivities taken at the start at a fixed
/// leak it took all the weight, and the fit slid along the ridge of equal
/// requests per worker to boot 238 (the leak +28%). The pilot again at the
/// fitted point, along that ridge, gives the slope statistic its share and
/// boot lands within 25 MB.
#[test]
fn whole_mb_rows_of_near_constant_velocities_keep_boot() {
    let text = shipped("tests/recordings/truth-fleet54-cv002-whole-mb.csv");
    let part = import::parse("truth-fleet54-cv002-whole-mb.csv", &text).unwrap();
    let rec = Recording::assemble(vec![part]).unwrap();
    // A base that does not defer: no deferral scan, so boot is read at the
    // pilot's overshoot quantile (under the default's scan, off's whole
    // shape reads it, `tests/calibrate_structure.rs`).
    let c = calibrate(&rec, &raw(&["policy.busy_deferral=false"]), 2).expect("calibrates");
    assert!(c.structure.whole_mb);
    let boot = value(&c, "fleet.boot_rss_mb");
    let mean = value(&c, "fleet.leak.mean_mb_per_request");
    assert!(
        (boot - 309.0).abs() <= 25.0,
        "boot {boot} (truth 309), leak {mean}"
    );
    assert!(
        (mean / 0.295 - 1.0).abs() <= 0.15,
        "leak {mean} (truth 0.295), boot {boot}"
    );
    assert!(
        c.notes
            .iter()
            .any(|n| n.contains("weighed again at the fitted point")),
        "{:?}",
        c.notes
    );
}

#[test]
fn a_memory_model_with_warm_up_reports_boot_as_not_separable() {
    // The default's own window (warm-up 62 MB, steps, busy deferral): the
    // base's memory model fits better than a plain leak, and boot alone is
    // not identified, only boot + warm-up.
    let rec = recycle_rows(
        &recording(
            &["workload.profile=constant", "policy.busy_deferral=false"],
            5,
        ),
        true,
        false,
    );
    let c = calibrate(
        &rec,
        &raw(&["workload.profile=constant", "policy.busy_deferral=false"]),
        1,
    )
    .expect("calibrates");
    let chosen = c.structure.candidates.iter().find(|k| k.chosen).unwrap();
    assert!(
        chosen.memory.starts_with("base"),
        "{:?}",
        c.structure.candidates
    );
    let boot = c.get("fleet.boot_rss_mb").unwrap();
    assert!(!boot.identified, "{boot:?}");
    let sum = value(&c, "boot_plus_warmup_mb");
    assert!((sum - value(&c, "fleet.boot_rss_mb") - 62.0).abs() < 1e-9);
    // How close the sum comes under steps is measured, not pinned here
    // (docs/calibration.md): steps carry two thirds of this fleet's growth.
    assert!(sum > 300.0 && sum < 460.0, "boot + warm-up {sum}");
}

#[test]
fn nelder_mead_lands_on_the_closed_form_lognormal() {
    let xs = [0.1, 0.2, 0.15, 0.4, 0.05, 0.12, 0.3];
    let ln: Vec<f64> = xs.iter().map(|x: &f64| x.ln()).collect();
    let m = ln.iter().sum::<f64>() / ln.len() as f64;
    let s = (ln.iter().map(|l| (l - m).powi(2)).sum::<f64>() / ln.len() as f64).sqrt();
    let (mu, sigma) = fit_lognormal(&xs).unwrap();
    assert!(
        (mu - m).abs() < 1e-4 && (sigma - s).abs() < 1e-4,
        "{mu} {sigma} vs {m} {s}"
    );
}

// ------------------------------------------------------------ Kolmogorov-Smirnov

#[test]
fn ks_statistic_on_hand_made_samples() {
    let a = [1.0, 2.0, 3.0, 4.0, 5.0];
    let (d, p) = ks_two_sample(&a, &a).unwrap();
    assert_eq!((d, p), (0.0, 1.0), "identical samples");
    let (d, p) = ks_two_sample(&a, &[6.0, 7.0, 8.0]).unwrap();
    assert_eq!(d, 1.0, "disjoint samples");
    assert!(p < 0.05, "{p}");
    // By hand: after 2 of a (F_a = 0.4) none of b is below 2.5 (F_b = 0);
    // at 3.5, F_a = 0.6 and F_b = 2/4 (2.5, 3.5): the sup is 0.4.
    let (d, _) = ks_two_sample(&a, &[2.5, 3.5, 4.5, 9.0]).unwrap();
    assert!((d - 0.4).abs() < 1e-12, "{d}");
    // Ties count once on both sides.
    let (d, _) = ks_two_sample(&[1.0, 1.0, 2.0], &[1.0, 2.0, 2.0]).unwrap();
    assert!((d - 1.0 / 3.0).abs() < 1e-12, "{d}");
    assert_eq!(ks_two_sample(&[], &a), None);
    // The Kolmogorov distribution's textbook critical values.
    assert!((kolmogorov_q(1.358) - 0.05).abs() < 1e-3);
    assert!((kolmogorov_q(1.628) - 0.01).abs() < 1e-3);
}

// ------------------------------------------------------------------ validation

/// `base` with `overrides` applied.
fn calibrated_sets(base_text: &str, overrides: &[fleetsim::scenario::Override]) -> Scenario {
    fleetsim::scenario::load(base_text, "<base>", overrides, &mut |p: &str| {
        Err(format!("no side files ({p})"))
    })
    .unwrap_or_else(|e| panic!("the calibrated scenario loads: {e}"))
    .1
}

/// `base` plus `sets` with the calibration's fitted values applied.
fn calibrated(base_text: &str, sets: &[&str], c: &Calibration) -> Scenario {
    let mut overrides: Vec<_> = sets
        .iter()
        .map(|s| fleetsim::scenario::parse_override(s).unwrap())
        .collect();
    overrides.extend(c.overrides());
    fleetsim::scenario::load(base_text, "<base>", &overrides, &mut |p: &str| {
        Err(format!("no side files ({p})"))
    })
    .unwrap_or_else(|e| panic!("the calibrated scenario loads: {e}"))
    .1
}

fn verdict(v: &Validation, name: &str) -> Verdict {
    v.figures
        .iter()
        .map(|r| (&r.name, r.verdict))
        .chain(v.distributions.iter().map(|r| (&r.name, r.verdict)))
        .find(|(n, _)| n.as_str() == name)
        .unwrap_or_else(|| panic!("no row {name}"))
        .1
}

const SEEDS: [u64; 8] = [1, 2, 3, 4, 5, 6, 7, 8];

#[test]
fn a_simulated_window_validates_against_its_own_calibration_only() {
    let mut sets = TRUTH.to_vec();
    sets[0] = "run.duration_h=24";
    let rec = recording(&sets, 21);
    let base_sets = ["fleet.leak.warmup_mb=0", "fleet.leak.step_probability=0"];
    let base = raw(&base_sets);
    let c = calibrate(&rec, &base, 1).expect("calibrates");
    let sc = calibrated(fleetsim::scenario::DEFAULT_SCENARIO, &base_sets, &c);
    let v = validate(&rec, &c.regime, std::slice::from_ref(&sc), &SEEDS).unwrap();
    eprintln!("{}", fleetsim::replay::validate::render(&v));
    assert!(v.reproduces, "{}", v.verdict);

    let wrong = Scenario {
        policy: fleetsim::scenario::Policy {
            base_limit_mb: 470.0,
            ..sc.policy.clone()
        },
        ..sc.clone()
    };
    let w = validate(&rec, &c.regime, &[wrong], &SEEDS).unwrap();
    assert!(!w.reproduces, "a 50 MB lower limit passed: {}", w.verdict);
    assert!(w.verdict.contains("does NOT reproduce"));
}

fn shipped(name: &str) -> String {
    let p = Path::new(env!("CARGO_MANIFEST_DIR")).join(name);
    std::fs::read_to_string(&p).unwrap_or_else(|e| panic!("{}: {e}", p.display()))
}

#[test]
fn the_shipped_recording_validates_on_its_true_base_and_matches_margins_on_the_default() {
    let part = import::parse(
        "generated-24h.csv",
        &shipped("scenarios/recordings/generated-24h.csv"),
    )
    .unwrap();
    let rec = Recording::assemble(vec![part]).unwrap();
    let truth_text = shipped("scenarios/recordings/generated-24h-truth.toml");
    let base = raw_of(&truth_text, &[]);
    let c = calibrate(&rec, &base, 1).unwrap();
    assert_eq!(c.regime, "base 500 MB / hard 650 MB");
    let v = validate(&rec, &c.regime, &[calibrated(&truth_text, &[], &c)], &SEEDS).unwrap();
    eprintln!("{}", fleetsim::replay::validate::render(&v));
    // fetch_failed warns: the generating seed drew 4 in 12 h where the same
    // scenario gives 0-2 on 11 other seeds (generated-24h.md).
    for r in &v.figures {
        if r.name != "fetch_failed per hour" {
            assert_eq!(r.verdict, Verdict::Pass, "{}", r.name);
        }
    }
    for r in &v.distributions {
        assert_eq!(r.verdict, Verdict::Pass, "{}", r.name);
    }

    // The current default's memory model (steps, busy deferral) is not what
    // generated the window; calibrated by simulation on it, the structure
    // is chosen from the data and the margins now match (they failed with
    // KS D = 0.64 when the base's steps and deferral were kept).
    let default_text = fleetsim::scenario::DEFAULT_SCENARIO;
    let c = calibrate(&rec, &raw(&[]), 1).unwrap();
    let w = validate(
        &rec,
        &c.regime,
        &[calibrated(default_text, &[], &c)],
        &SEEDS,
    )
    .unwrap();
    eprintln!("{}", fleetsim::replay::validate::render(&w));
    assert_eq!(verdict(&w, "margin over limit (MB)"), Verdict::Pass);
    // The window's 4 margins past 25 MB came from steps, which the plain
    // memory model chosen has not: the fraction sits at its band's 5% edge
    // (0.946 recorded against 0.99-1.00), on one side or the other as the
    // pilot's windows fall; what the structure must get right is the
    // margins' distribution, above.
    let low = w
        .figures
        .iter()
        .find(|r| r.name == "low-margin fraction (< 25 MB)")
        .unwrap();
    let (rec_low, sim_low) = (low.recorded.unwrap(), low.simulated_mean.unwrap());
    assert!((rec_low - sim_low).abs() < 0.07, "{rec_low} vs {sim_low}");
    let chosen = c.structure.candidates.iter().find(|k| k.chosen).unwrap();
    assert!(!chosen.deferral, "{:?}", c.structure.candidates);
}

#[test]
fn cli_calibrate_writes_a_loadable_scenario_and_validation_json() {
    let dir = common::TempDir::new("calibrate-cli");
    let root = env!("CARGO_MANIFEST_DIR");
    let run = |args: &[&str]| {
        let o = std::process::Command::new(env!("CARGO_BIN_EXE_fleetsim"))
            .args(args)
            .current_dir(dir.path())
            .output()
            .expect("spawn fleetsim");
        let text = String::from_utf8_lossy(&o.stdout).into_owned();
        assert_eq!(
            o.status.code(),
            Some(0),
            "{text}{}",
            String::from_utf8_lossy(&o.stderr)
        );
        text
    };
    let out = run(&[
        "replay",
        &format!("{root}/scenarios/recordings/generated-24h.csv"),
        "--scenario",
        &format!("{root}/scenarios/recordings/generated-24h-truth.toml"),
        "--calibrate",
        "--out",
        "cal",
    ]);
    assert!(
        out.contains("calibration: regime base 500 MB / hard 650 MB"),
        "{out}"
    );
    assert!(out.contains("verdict:"), "{out}");
    let toml = std::fs::read_to_string(dir.path().join("cal/calibrated.toml")).unwrap();
    assert!(
        toml.contains("boot_rss_mb = ") && toml.contains("# fitted: "),
        "{toml}"
    );
    let json: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(dir.path().join("cal/validation.json")).unwrap(),
    )
    .unwrap();
    assert_eq!(json["distributions"].as_array().unwrap().len(), 3);
    // The structure chosen, with every candidate's fit score, the lowest
    // chosen (issue 14: one fit score in validation.json).
    let cands = json["structure"]["candidates"].as_array().unwrap();
    assert!(cands.len() >= 2, "{}", json["structure"]);
    let score = |c: &serde_json::Value| c["score"].as_f64().unwrap();
    let chosen: Vec<_> = cands.iter().filter(|c| c["chosen"] == true).collect();
    assert_eq!(chosen.len(), 1);
    assert!(cands.iter().all(|c| score(c) >= score(chosen[0])));
    assert!(json["structure"]["profile"].is_string());
    let shown = run(&["scenario", "show", "cal/calibrated.toml"]);
    assert!(shown.contains("duration_h = 12.0"), "{shown}");
}

/// What-if: the recorded row differs from itself by exactly zero; a token
/// bucket of 4/h on a ~6/h window cuts recycles with a paired interval
/// that excludes zero; without --calibrate the flag is refused.
#[test]
fn what_if_compares_policies_paired_on_the_calibrated_window() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let out = common::TempDir::new("whatif");
    let run = std::process::Command::new(env!("CARGO_BIN_EXE_fleetsim"))
        .current_dir(root)
        .args([
            "replay",
            "scenarios/recordings/generated-24h.csv",
            "--calibrate",
            "--seeds",
            "4",
            "--scenario",
            "scenarios/recordings/generated-24h-truth.toml",
            "--force",
            "--what-if",
            "scenarios/whatif/token-bucket.toml",
            "--out",
            out.path().to_str().unwrap(),
        ])
        .output()
        .unwrap();
    assert!(
        run.status.success(),
        "{}",
        String::from_utf8_lossy(&run.stderr)
    );
    let json: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(out.path().join("whatif.json")).unwrap())
            .unwrap();
    let fig = |row: usize, metric: &str| {
        json["policies"][row]["figures"]
            .as_array()
            .unwrap()
            .iter()
            .find(|f| f["metric"] == metric)
            .cloned()
            .unwrap()
    };
    assert_eq!(json["policies"][0]["policy"], "recorded");
    assert_eq!(fig(0, "recycles_per_hour")["diff_mean"], 0.0);
    let r = fig(1, "recycles_per_hour");
    let (d, ci) = (
        r["diff_mean"].as_f64().unwrap(),
        r["diff_ci95"].as_f64().unwrap(),
    );
    assert!(
        d < 0.0 && d + ci < 0.0,
        "the bucket should cut recycles: {d} +- {ci}"
    );
    let refused = std::process::Command::new(env!("CARGO_BIN_EXE_fleetsim"))
        .current_dir(root)
        .args([
            "replay",
            "scenarios/recordings/generated-24h.csv",
            "--what-if",
            "x.toml",
            "--out",
            out.path().join("refused").to_str().unwrap(),
        ])
        .output()
        .unwrap();
    assert_eq!(refused.status.code(), Some(2));
    assert!(
        String::from_utf8_lossy(&refused.stderr).contains("add --calibrate"),
        "{}",
        String::from_utf8_lossy(&refused.stderr)
    );
    assert!(
        !out.path().join("refused").exists(),
        "a refused command writes nothing"
    );
}

#[test]
fn the_tick_is_the_bases_unless_asked_to_fit_it() {
    let rec = recycle_rows(&recording(PLAIN, 13), true, false);
    let base = raw(&["policy.tick_s=30"]);
    // One fit each: the tick's handling is the same in every fit, and the
    // two 96 h calibrations are this file's longest.
    let one = Budget {
        fits: 1,
        ..Budget::DEFAULT
    };
    let kept =
        fleetsim::replay::calibrate::calibrate(&rec, &base, 1, one, Options::DEFAULT, &|_| ())
            .expect("calibrates");
    // One fit is a fit alone: its draws only, and no note of a merge.
    assert_eq!(kept.draws.len() + kept.draws_screened_out, one.draws + 1);
    assert!(
        !kept.notes.iter().any(|n| n.starts_with("fits:")),
        "{:?}",
        kept.notes
    );
    let tick = kept.get("policy.tick_s").unwrap();
    assert_eq!(tick.value, 30.0);
    assert!(!tick.identified && tick.se.is_none(), "{tick:?}");
    assert!(tick.how.starts_with("not fitted"), "{}", tick.how);
    let fitted = fleetsim::replay::calibrate::calibrate(
        &rec,
        &base,
        1,
        one,
        Options {
            fit_tick: true,
            ..Options::DEFAULT
        },
        &|_| (),
    )
    .expect("calibrates");
    let tick = fitted.get("policy.tick_s").unwrap();
    let (lo, hi) = (tick.lo.unwrap(), tick.hi.unwrap());
    assert!(tick.identified && lo < hi, "{tick:?}");
    // Fitted from 30 s toward the window's true 45 s, with an interval.
    assert!(tick.value > 30.0 && lo <= 45.0 && 45.0 <= hi, "{tick:?}");
}

/// Each structure is fitted under one busy deferral: a base that does not
/// defer under off alone (its own policy is off too: fitting both fitted
/// one structure twice), one that defers under the scan's choice or, not
/// read (`replay --scenario` without `--fit-deferral`), its own as given.
#[test]
fn each_structure_is_fitted_under_one_deferral() {
    use fleetsim::replay::calibrate::deferral_candidates;
    let given = Options {
        read_deferral: false,
        ..Options::DEFAULT
    };
    let off = raw(&["policy.busy_deferral=false"]);
    let defers = raw(&["policy.busy_deferral=true"]);
    assert_eq!(deferral_candidates(&off, Options::DEFAULT), 1);
    assert_eq!(deferral_candidates(&off, given), 1);
    assert_eq!(deferral_candidates(&defers, Options::DEFAULT), 1);
    assert_eq!(deferral_candidates(&defers, given), 1);
}

/// An independent model's log whose rss_mb is truncated to whole MB over
/// whole-MB limits (`int(rss)`, as kB / 1024 writes it): a margin of 0 is
/// twice as common as rounding makes it. Read as rounded, its validation
/// failed on the margin row (KS p 0.001) and boot + warm-up came out 34.5
/// MB high; the first fit is now run both ways and the truncated rule
/// kept where it scores lower by `FLOOR_MARGIN`.
#[test]
fn a_log_that_truncates_to_whole_mb_is_read_so_and_validates() {
    let dir = common::TempDir::new("calibrate-truncated");
    let root = env!("CARGO_MANIFEST_DIR");
    let o = std::process::Command::new(env!("CARGO_BIN_EXE_fleetsim"))
        .args([
            "replay",
            &format!("{root}/tests/recordings/indep30-fleet1-truncated-mb.csv"),
            "--calibrate",
            "--out",
            "cal",
            "-q",
        ])
        .current_dir(dir.path())
        .output()
        .expect("spawn fleetsim");
    let out = String::from_utf8_lossy(&o.stdout).into_owned();
    assert_eq!(o.status.code(), Some(0), "{out}");
    assert!(out.contains("whole MB: rss_mb read as truncated"), "{out}");
    let read = |f: &str| -> serde_json::Value {
        serde_json::from_str(&std::fs::read_to_string(dir.path().join("cal").join(f)).unwrap())
            .unwrap()
    };
    let cal = read("calibration.json");
    assert_eq!(cal["structure"]["whole_mb_floor"], true, "{out}");
    let boot = cal["fits"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f["key"] == "boot_plus_warmup_mb")
        .unwrap()["value"]
        .as_f64()
        .unwrap();
    assert!((boot - 408.9).abs() <= 25.0, "boot + warm-up {boot}\n{out}");
    let v = read("validation.json");
    let margin = v["distributions"]
        .as_array()
        .unwrap()
        .iter()
        .find(|d| d["name"].as_str().unwrap().starts_with("margin over limit"))
        .unwrap();
    assert_eq!(margin["verdict"], "pass", "{margin}");
    assert_eq!(v["reproduces"], true, "{out}");
}
