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

/// The generated window's recycles as a platform's recycle log writes
/// them: no `event` column, the time column named `timestamp`.
fn recycle_log(text: &str) -> String {
    let mut lines = text.lines();
    let header: Vec<&str> = lines.next().unwrap().split(',').collect();
    let col = |c: &str| header.iter().position(|h| *h == c).unwrap();
    let names = [
        "ts",
        "instance",
        "worker",
        "rss_mb",
        "limit_mb",
        "base_limit_mb",
        "hard_limit_mb",
        "requests",
    ];
    let keep = names.map(col);
    let mut out = format!("timestamp,{}\n", names[1..].join(","));
    for line in lines {
        let cells: Vec<&str> = line.split(',').collect();
        if cells[col("event")] == "worker_recycled" {
            let row: Vec<&str> = keep.iter().map(|&i| cells[i]).collect();
            out += &(row.join(",") + "\n");
        }
    }
    out
}

#[test]
fn a_recycle_log_without_an_event_column_is_one_recycle_a_row() {
    let text = recording("generated-24h.csv");
    let log = recycle_log(&text);
    let part = import::parse("recycles.csv", &log).unwrap();
    assert_eq!(
        part.source.format,
        fleetsim::replay::recording::Format::RecycleCsv
    );
    assert_eq!(part.events.len(), 96);
    assert!(part.events.iter().all(|e| e.is_recycle()));
    // The same recycles as the window's own rows: every regime's figures.
    let a = analyse(&[("recycles.csv", &log)], Some(seeds_knobs()));
    let b = analyse(&[("generated-24h.csv", &text)], Some(seeds_knobs()));
    assert_eq!(labels(&a), labels(&b));
    for (x, y) in a.regimes.iter().zip(&b.regimes) {
        assert_eq!(x.rate.recycles, y.rate.recycles);
        let json = |r: &Regime| serde_json::to_value(&r.lifetime).unwrap();
        assert_eq!(json(x), json(y));
    }
    assert!(!warned(&a, "limit_mb moved"));
    // Without base_limit_mb the two configurations are one regime, and the
    // analysis says where the limits moved (the cutover is at 12 h).
    let bare: String = log
        .lines()
        .map(|l| {
            let c: Vec<&str> = l.split(',').collect();
            format!("{},{},{},{},{},{}\n", c[0], c[1], c[2], c[3], c[4], c[7])
        })
        .collect();
    assert!(bare.starts_with("timestamp,instance,worker,rss_mb,limit_mb,requests\n"));
    let one = analyse(&[("bare.csv", &bare)], None);
    assert_eq!(labels(&one), ["base ? / hard ?"]);
    let moved = one
        .warnings
        .iter()
        .find(|w| w.contains("the recycles' limit_mb moved between"))
        .expect("the move is warned");
    assert!(moved.contains("41384 s and 44120 s"), "{moved}");
    // An RSS series with its limit beside it stays a series; rows mostly
    // under their limit and no worker column are refused, saying why.
    let series = "ts,worker,rss_mb,limit_mb\n0,w0,400,600\n30,w0,410,600\n60,w0,601,600\n";
    let p = import::parse("s.csv", series).unwrap();
    assert_eq!((p.events.len(), p.series.samples.len()), (0, 3));
    let e = import::parse("g.csv", "ts,rss_mb,limit_mb\n0,400,600\n30,410,600\n")
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("g.csv: no `event` column, and `rss_mb` is below"),
        "{e}"
    );
}

#[test]
fn a_header_that_is_no_recording_says_what_it_lacks() {
    for (text, needle) in [
        (
            "t,worker_id,rss,limit,requests\n1,w0,541,498,900\n",
            "x.csv:1: column `rss`: memory columns are in MB and say so",
        ),
        (
            "when,instance,rss_mb\n1,a,541\n",
            "x.csv:1: not a recording: a CSV header (when,instance,rss_mb) that is no \
             recording's: it needs a time column (`ts`, or one of `timestamp`",
        ),
        (
            "time,timestamp,event\n1,2,retry_ok\n",
            "it needs a time column",
        ),
        (
            "ts,instance\n1,a\n",
            "(ts,instance) that is no recording's: it needs `event` (an events CSV), `rss_mb`",
        ),
    ] {
        let e = import::parse("x.csv", text).unwrap_err().to_string();
        assert!(e.contains(needle), "{text:?}: {e}");
    }
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
