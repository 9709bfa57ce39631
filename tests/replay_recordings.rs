//! `fleetsim replay` on the shipped recordings (the seeds' 31-minute
//! excerpt, the generated 24 h window) and through the binary.

mod common;

use common::TempDir;
use common::replay::*;
use fleetsim::metrics::EventKind;
use fleetsim::replay::analyse::Regime;
use fleetsim::replay::import;
use std::path::Path;
use std::process::Command;

// ---------------------------------------------------- the shipped recordings

fn recording(name: &str) -> String {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("scenarios/recordings")
        .join(name);
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

#[test]
fn the_seeds_excerpt_parses_line_for_line() {
    let text = recording("seeds-31min.log");
    let part = import::parse("seeds-31min.log", &text).unwrap();
    let recycles: Vec<_> = part.events.iter().filter(|e| e.is_recycle()).collect();
    let with_fields = recycles.iter().filter(|e| e.rss_mb.is_some()).count();
    assert_eq!(
        (recycles.len(), with_fields),
        (6, 4),
        "4 with rss/lim/after, 2 bare"
    );
    assert!(recycles.iter().all(|e| e.instance.is_some()));
    let retry_ok = part
        .events
        .iter()
        .filter(|e| e.is(EventKind::RetryOk))
        .count();
    assert_eq!(retry_ok, 4);
    assert_eq!(part.source.unparsed_count, 1);
    assert_eq!(
        (
            part.source.unparsed[0].line,
            part.source.unparsed[0].text.as_str()
        ),
        (9, "...")
    );

    let a = analyse(&[("seeds-31min.log", &text)], Some(seeds_knobs()));
    let r = one_regime(&a);
    assert_eq!(r.label, "base ? / hard ?");
    assert_eq!(r.rate.peak_hour_recycles, 6);
    let b = r.canary.peak_hour.as_ref().unwrap();
    assert!(
        (b.span_min - 30.9).abs() < 0.05,
        "the 31-minute interleave: {}",
        b.span_min
    );
    assert_eq!(
        b.timeline.len(),
        10,
        "every event, retry_ok 20:15:38 included"
    );
    // Same-instance gaps all > 120 s, cross-instance ~2 minutes.
    assert_eq!(r.gaps.same_instance.dist.as_ref().unwrap().min, 130.0);
    assert_eq!(r.gaps.cross_instance.dist.as_ref().unwrap().min, 123.0);
    let rpw = r.lifetime.requests_per_worker.as_ref().unwrap();
    assert_eq!((rpw.min, rpw.max, rpw.n), (210.0, 858.0, 4));
    assert!(warned(
        &a,
        "1 unparsed lines (first at lines 9); some lie between recorded events"
    ));
}

#[test]
fn the_generated_window_has_its_known_regimes() {
    let text = recording("generated-24h.csv");
    let a = analyse(&[("generated-24h.csv", &text)], Some(seeds_knobs()));
    assert_eq!(
        labels(&a),
        ["base 600 MB / hard 750 MB", "base 500 MB / hard 650 MB"]
    );
    let (o, n) = (&a.regimes[0], &a.regimes[1]);
    // generated-24h.md: each half's summary.json.
    assert_eq!((o.rate.recycles, n.rate.recycles), (22, 74));
    assert_eq!(
        (o.rate.peak_hour_recycles, n.rate.peak_hour_recycles),
        (5, 10)
    );
    let p10 = |r: &Regime| r.lifetime.requests_per_worker.as_ref().unwrap().p10;
    assert!((p10(o) - 624.8).abs() < 1e-9 && (p10(n) - 339.7).abs() < 1e-9);
    assert_eq!(
        (o.pressure.pressure_recycles, n.pressure.pressure_recycles),
        (3, 0)
    );
    assert_eq!(o.pressure.bimodal, Some(true));
    assert_eq!(
        (o.bypasses.exit_pressure, o.bypasses.exit_hard_ceiling),
        (1, 0)
    );
    assert!(warned(&a, "one label covers two branches: 1 of 1"));
    assert_eq!(o.escalations[0].exercised, Some(false));
    assert_eq!(n.inferred.tick_s.inferred, Some(45.0));
}

// ----------------------------------------------------------------- the CLI

fn fleetsim(dir: &Path, args: &[&str]) -> (Option<i32>, String, String) {
    let o = Command::new(env!("CARGO_BIN_EXE_fleetsim"))
        .args(args)
        .current_dir(dir)
        .output()
        .expect("spawn fleetsim");
    (
        o.status.code(),
        String::from_utf8_lossy(&o.stdout).into_owned(),
        String::from_utf8_lossy(&o.stderr).into_owned(),
    )
}

#[test]
fn cli_round_trip_writes_analysis_json() {
    let dir = TempDir::new("replay-cli");
    let (code, _, err) = fleetsim(dir.path(), &["run", "--hours", "3", "--out", "run"]);
    assert_eq!(code, Some(0), "{err}");
    let (code, out, err) = fleetsim(dir.path(), &["replay", "run/events.csv", "--out", "rep"]);
    assert_eq!(code, Some(0), "{err}");
    assert!(out.contains("limit regimes"), "{out}");
    let json: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(dir.path().join("rep/analysis.json")).unwrap(),
    )
    .unwrap();
    let summary: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(dir.path().join("run/summary.json")).unwrap(),
    )
    .unwrap();
    let events = json["events"].as_array().unwrap();
    let n = |label: &str| {
        events
            .iter()
            .find(|c| c["label"] == label)
            .map_or(0, |c| c["count"].as_u64().unwrap())
    };
    assert_eq!(n("worker_recycled"), summary["recycles"].as_u64().unwrap());
    assert_eq!(n("retry_ok"), summary["retry_ok"].as_u64().unwrap());
    let left: Vec<_> = std::fs::read_dir(dir.path().join("rep"))
        .unwrap()
        .filter_map(Result::ok)
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| n.contains(".partial"))
        .collect();
    assert!(left.is_empty(), "temporary files left: {left:?}");
}

#[test]
fn cli_bad_input_exits_2_with_one_line() {
    let dir = TempDir::new("replay-bad");
    std::fs::write(dir.path().join("x.toml"), "[policy]\ncooldown_s = 1\n").unwrap();
    std::fs::write(
        dir.path().join("bad.csv"),
        "ts,event,rss_mb\n1,worker_recycled,big\n",
    )
    .unwrap();
    for (file, needle) in [
        ("x.toml", "x.toml: not a recording"),
        ("bad.csv", "bad.csv:2: column `rss_mb`"),
        ("missing.csv", "missing.csv: cannot read"),
    ] {
        let (code, _, err) = fleetsim(dir.path(), &["replay", file, "--out", "o"]);
        assert_eq!(code, Some(2), "{file}: {err}");
        assert_eq!(err.lines().count(), 1, "{file}: {err}");
        assert!(err.contains(needle), "{file}: {err}");
    }
}
