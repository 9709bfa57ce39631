//! Verdicts as exit codes a deploy pipeline can gate on: `saturate --check`
//! and `run --fail-if` exit 1 with the reason (`error: verdict: ...`) after
//! writing every output, 0 when the verdict is positive, and 2 naming the
//! expression when a threshold does not parse. (`replay --calibrate
//! --check`: tests/validation_rules.rs.)

mod common;

use common::TempDir;
use std::path::Path;
use std::process::Command;

fn fleetsim(args: &[&str]) -> (Option<i32>, String, String) {
    let o = Command::new(env!("CARGO_BIN_EXE_fleetsim"))
        .arg("--quiet")
        .args(args)
        .output()
        .expect("runs");
    let s = |b: &[u8]| String::from_utf8_lossy(b).into_owned();
    (o.status.code(), s(&o.stdout), s(&o.stderr))
}

fn json(path: &Path) -> serde_json::Value {
    serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
}

/// The embedded default's 120 s lease permits 30 recycles an hour, about
/// three times what its clients absorb: not a capacity guard. A lease
/// held for two hours permits 0.5 an hour: a guard.
#[test]
fn saturate_check_exits_1_on_a_policy_that_is_no_capacity_guard() {
    let tmp = TempDir::new("verdict-saturate");
    let bad = tmp.path().join("bad");
    let (code, _, err) = fleetsim(&["saturate", "--check", "--out", bad.to_str().unwrap()]);
    assert_eq!(code, Some(1), "{err}");
    assert!(
        err.starts_with("error: verdict: saturate --check: whole policy: permits 30.0/h")
            && err.contains("not a capacity guard"),
        "{err}"
    );
    let j = json(&bad.join("saturate.json"));
    assert_eq!(
        j["policy_is_capacity_guard"], false,
        "written before the verdict"
    );
    assert_eq!(j["schema_version"], 1);

    // Without --check the same verdict exits 0.
    let (code, out, _) = fleetsim(&["saturate", "--out", bad.to_str().unwrap()]);
    assert_eq!(code, Some(0));
    assert!(out.contains("not a capacity guard"));

    let good = tmp.path().join("good");
    let (code, out, err) = fleetsim(&[
        "saturate",
        "--check",
        "--set",
        "policy.lease.ttl_s=7200",
        "--out",
        good.to_str().unwrap(),
    ]);
    assert_eq!(code, Some(0), "{out}{err}");
    assert!(out.contains("whole policy: permits 0.5/h, within"), "{out}");
    assert_eq!(
        json(&good.join("saturate.json"))["policy_is_capacity_guard"],
        true
    );
}

#[test]
fn run_fail_if_gates_on_the_summary() {
    let tmp = TempDir::new("verdict-run");
    let out = tmp.path().join("run");
    let o = out.to_str().unwrap();
    let base = ["run", "--hours", "12", "--out", o];
    let with = |extra: &[&str]| {
        let mut args: Vec<&str> = base.to_vec();
        args.extend(extra);
        fleetsim(&args)
    };
    // Learn the run's figures, then put thresholds on either side of them.
    let (code, _, err) = with(&[]);
    assert_eq!(code, Some(0), "{err}");
    let s = json(&out.join("summary.json"));
    let retry_ok = s["retry_ok"].as_f64().unwrap();
    let hours = s["duration_h"].as_f64().unwrap();
    assert!(retry_ok > 0.0, "the default's recycles reset some requests");
    let per_hour = retry_ok / hours;

    let below = format!("retry_ok_per_hour > {}", per_hour * 0.9);
    let above = format!("retry_ok_per_hour > {}", per_hour * 1.1);
    let (code, _, err) = with(&["--fail-if", &above, "--fail-if", "oom_kills > 1000"]);
    assert_eq!(code, Some(0), "{err}");
    let (code, stdout, err) = with(&["--fail-if", &below, "--fail-if", "recycles < 1"]);
    assert_eq!(code, Some(1), "{err}");
    assert!(
        err.starts_with("error: verdict: --fail-if: 1 of 2 thresholds crossed"),
        "{err}"
    );
    assert!(
        err.contains(&format!("`{below}`: retry_ok_per_hour = ")),
        "{err}"
    );
    assert!(stdout.contains("reproduce with:"), "the run still reports");
    assert!(
        out.join("summary.json").exists(),
        "outputs written before the verdict"
    );

    // A bad expression: exit 2 before any work, naming it.
    let fresh = tmp.path().join("never");
    for (expr, says) in [
        ("fetch_failed_per_hour >> 1", "is not a finite number"),
        ("fetchfailed > 1", "unknown metric `fetchfailed`"),
        ("retry_ok", "expected METRIC OP NUMBER"),
    ] {
        let (code, _, err) =
            fleetsim(&["run", "--out", fresh.to_str().unwrap(), "--fail-if", expr]);
        assert_eq!(code, Some(2), "{err}");
        assert!(
            err.contains(&format!("--fail-if `{expr}`")) && err.contains(says),
            "{err}"
        );
        assert!(!fresh.exists(), "nothing ran");
    }
}

/// saturate's absorbable churn carries its spread over seeds (each seed
/// scanned alone) and says when OOM kills, not churn, fail the requests:
/// on a fleet in 1,600 MB containers with no client retry, the lowest
/// forced churn leaves workers to outgrow their containers (about four OOM
/// kills an hour to one recycle), and the verdict blames them; on the
/// embedded default the forced recycles outnumber the OOM kills wherever
/// requests fail, and nothing blames OOM.
#[test]
fn saturate_separates_oom_failures_from_churn_and_spans_the_seeds() {
    let tmp = TempDir::new("verdict-oom");
    let oom = tmp.path().join("oom");
    let (code, out, err) = fleetsim(&[
        "saturate",
        "--hours",
        "12",
        "--seeds",
        "2",
        "--set",
        "client.retries=0",
        "--set",
        "workload.rps=3",
        "--set",
        "fleet.container_mb=1600",
        "--out",
        oom.to_str().unwrap(),
    ]);
    assert_eq!(code, Some(0), "{err}");
    let a = &json(&oom.join("saturate.json"))["absorbable"];
    assert_eq!(a["oom_dominated_at_per_hour"], 1.0, "{a}");
    let lowest = &a["probes"][0];
    assert!(
        lowest["oom_kills_per_hour"].as_f64().unwrap()
            > 2.0 * lowest["recycles_per_hour"].as_f64().unwrap(),
        "{lowest}"
    );
    assert_eq!(
        lowest["fetch_failed_per_hour_by_seed"]
            .as_array()
            .unwrap()
            .len(),
        2
    );
    assert!(
        out.contains("whole policy: permits 30.0/h, but even the lowest probed churn failed requests (at 1/h, the lowest that failed, OOM kills outnumber the forced recycles"),
        "{out}"
    );

    let base = tmp.path().join("base");
    let (code, out, err) = fleetsim(&["saturate", "--seeds", "3", "--out", base.to_str().unwrap()]);
    assert_eq!(code, Some(0), "{err}");
    let a = &json(&base.join("saturate.json"))["absorbable"];
    assert!(a["oom_dominated_at_per_hour"].is_null(), "{a}");
    assert!(!out.contains("OOM kills outnumber"), "{out}");
    let by_seed = a["no_fetch_failed_per_hour_by_seed"].as_array().unwrap();
    assert_eq!(by_seed.len(), 3);
    let range = a["no_fetch_failed_per_hour_seed_range"].as_array().unwrap();
    let (lo, hi) = (range[0].as_f64().unwrap(), range[1].as_f64().unwrap());
    let own: Vec<f64> = by_seed.iter().map(|v| v.as_f64().unwrap_or(0.0)).collect();
    assert_eq!(lo, own.iter().copied().fold(f64::INFINITY, f64::min));
    assert_eq!(hi, own.iter().copied().fold(f64::NEG_INFINITY, f64::max));
    if lo < hi {
        assert!(
            out.contains(&format!("on single seeds: {lo:.0}-{hi:.0}/h over 3 seeds")),
            "{out}"
        );
    }
}
