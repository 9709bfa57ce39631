//! `fleetsim replay`: every importer on good and bad input, the round trip
//! run -> replay, and every analysis on hand-made recordings whose answers
//! are known, including the seeds' traps (a mid-window regime change, one
//! label for two branches, pressure in the log's vocabulary, an escalation
//! that never fired) and the seeds' own 31-minute excerpt.

mod common;

use common::replay::*;
use common::{PLAIN_FLEET, events_csv, scenario};
use fleetsim::Sim;
use fleetsim::metrics::{CsvObserver, KillPath, Summary};
use fleetsim::replay::analyse::Regime;
use fleetsim::replay::{self, Options, Recording, import};
use proptest::prelude::*;

#[test]
fn bad_rows_are_errors_with_file_and_line_never_panics() {
    let cases: &[(&str, &str, &str)] = &[
        (
            "rows.csv",
            "ts,event,rss_mb\n1,worker_recycled,500\n2,worker_recycled,lots\n",
            "rows.csv:3: column `rss_mb`: `lots` is not a number",
        ),
        (
            "short.csv",
            "ts,event,rss_mb\n1,worker_recycled\n",
            "short.csv:2: the row has 2 fields, the header 3",
        ),
        (
            "ts.csv",
            "ts,event\n10.5,retry_ok\n20:17:02,retry_ok\n",
            "ts.csv:3: column `ts`: timestamp `20:17:02` is not in the file's format",
        ),
        (
            "flag.csv",
            "ts,event,pressure\n1,worker_recycled,maybe\n",
            "flag.csv:2: column `pressure`: `maybe` is not true or false",
        ),
        (
            "x.jsonl",
            "{\"ts\": 1, \"event\": \"retry_ok\"}\n{\"ts\": \n",
            "x.jsonl:2: not a JSON object",
        ),
        (
            "y.jsonl",
            "{\"ts\": \"2024-05-01T20:17:02Z\", \"event\": \"retry_ok\"}\n{\"ts\": \"later\", \"event\": \"retry_ok\"}\n",
            "y.jsonl:2: column `ts`",
        ),
        (
            "s.toml",
            "[policy]\ncooldown_s = 120\n",
            "s.toml: not a recording",
        ),
    ];
    for (name, text, expected) in cases {
        let e = import::parse(name, text).unwrap_err().to_string();
        assert!(e.starts_with(expected), "{name}: {e}");
    }
}

#[test]
fn every_format_reads_the_same_recycle() {
    let csv = "ts,event,instance,rss_mb,limit_mb,requests,pressure\n\
               1714594622,worker_recycled,inst-A,564,507,858,false\n";
    let jsonl = "{\"ts\": \"2024-05-01T20:17:02Z\", \"event\": \"worker_recycled\", \
                 \"instance\": \"inst-A\", \"rss_mb\": 564, \"limit_mb\": 507, \
                 \"requests\": 858, \"pressure\": false}\n";
    let log = "2024-05-01T20:17:02Z RECYCLE inst-A rss=564 lim=507 after=858req pressure=false\n";
    let read = |name: &str, text: &str| import::parse(name, text).unwrap().events.remove(0);
    let (a, b, c) = (
        read("a.csv", csv),
        read("b.jsonl", jsonl),
        read("c.log", log),
    );
    for e in [&b, &c] {
        assert_eq!(e.t_s, a.t_s);
        assert_eq!(e.kind, a.kind);
        assert_eq!(e.instance, a.instance);
        assert_eq!(
            (e.rss_mb, e.limit_mb, e.requests),
            (a.rss_mb, a.limit_mb, a.requests)
        );
        assert_eq!(e.pressure, a.pressure);
    }
}

#[test]
fn files_on_different_time_axes_are_not_joined() {
    let a = import::parse("a.csv", "ts,event\n10,retry_ok\n").unwrap();
    let b = import::parse("b.log", "20:15:38 retry_ok\n").unwrap();
    let e = Recording::assemble(vec![a, b]).unwrap_err().to_string();
    assert!(
        e.contains("a.csv") && e.contains("b.log") && e.contains("different axes"),
        "{e}"
    );
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, ..ProptestConfig::default() })]

    /// Any text, and any damage to a good CSV, is a result, never a panic.
    #[test]
    fn no_input_panics(text in ".{0,400}", cut in 0usize..400, junk in "[,a-z0-9:.\n{}\"-]{0,20}") {
        let _ = import::parse("any", &text).map(|p| {
            let rec = Recording::assemble(vec![p]).unwrap();
            replay::analyse(&rec, &Options::default())
        });
        let good = csv(&[r(10.0, "inst-A", 560.0), r(200.0, "inst-B", 600.0)], &["250,retry_ok,inst-A,,,,,,,,,,"]);
        let cut = cut.min(good.len());
        let damaged = format!("{}{junk}{}", &good[..cut], &good[cut..]);
        if let Ok(p) = import::parse("damaged.csv", &damaged) {
            let rec = Recording::assemble(vec![p]).unwrap();
            replay::analyse(&rec, &Options::default());
        }
    }
}

// --------------------------------------------------------------- round trip

/// Runs `sets` on the default scenario and returns events.csv and the summary.
fn simulate(sets: &[&str], seed: u64) -> (String, Summary) {
    let sc = scenario(sets);
    let (mut events, mut timeline) = (Vec::new(), Vec::new());
    let mut obs = CsvObserver::new(
        &mut events,
        &mut timeline,
        sc.policy.base_limit_mb,
        sc.policy.hard_limit_mb,
    );
    let out = Sim::new(&sc, seed, &mut obs)
        .run()
        .expect("the run completes");
    obs.finish().expect("in-memory writes succeed");
    (String::from_utf8(events).expect("UTF-8"), out.summary)
}

/// Rows per `event` label, counted straight from the text.
fn rows_per_kind(text: &str) -> Vec<(String, usize)> {
    let mut out: Vec<(String, usize)> = Vec::new();
    for line in text.lines().skip(1) {
        let kind = line.split(',').nth(1).expect("an event column").to_string();
        match out.iter_mut().find(|(k, _)| *k == kind) {
            Some((_, n)) => *n += 1,
            None => out.push((kind, 1)),
        }
    }
    out
}

#[test]
fn run_then_replay_reads_every_row_back() {
    let cases: &[&[&str]] = &[
        &["run.duration_h=24"],
        // Pressure recycles and a pressure exit (the seeds' 600 MB regime).
        &[
            "run.duration_h=12",
            "policy.base_limit_mb=600",
            "policy.hard_limit_mb=750",
        ],
        // Holds of every kind at saturation, ceiling exits.
        &[
            "run.duration_h=2",
            "fleet.leak.mean_mb_per_request=5",
            "workload.rps=4",
        ],
        // The replacement modes (tests/replacement_modes.rs): their rows
        // are the same kinds, read back alike.
        &[
            "run.duration_h=8",
            "policy.replacement=timed_handover",
            "policy.rolling_restart.enabled=true",
            "policy.rolling_restart.frequency_s=3600",
            "fleet.cold_start.factor=3",
            "fleet.cold_start.requests=10",
        ],
        &[
            "run.duration_h=8",
            "policy.replacement=detach_and_spawn",
            "policy.detach_and_spawn.max_request_queue_size=2",
        ],
        &[
            "run.duration_h=8",
            "policy.forkbomb.enabled=true",
            "workload.rps=30",
            "policy.max_requests.enabled=true",
            "policy.max_requests.requests=3",
        ],
        // Kill paths: request timeouts on a heavy tail, heartbeat drains.
        &[
            "run.duration_h=12",
            "workload.service_mean_ms=2000",
            "workload.service_p99_ms=28000",
            "fleet.kill.request_timeout_s=20",
        ],
    ];
    for sets in cases {
        let (text, s) = simulate(sets, 5);
        let a = analyse(&[("events.csv", &text)], None);
        let rows = rows_per_kind(&text);
        assert!(!rows.is_empty());
        for (kind, n) in &rows {
            assert_eq!(count(&a, kind), *n, "{sets:?}: {kind}");
        }
        assert_eq!(a.events.len(), rows.len(), "{sets:?}: no kind invented");
        assert_eq!(a.sources[0].unparsed_count, 0);
        check_against_summary(one_regime(&a), &s, sets);
        let timeouts = (s.kill_paths.get(KillPath::RequestTimeout)).map_or(0, |c| c.kills);
        assert_eq!(a.totals.timeout_kills as u64, timeouts, "{sets:?}");
        assert_eq!(a.totals.drain_killed as u64, s.drain_kills, "{sets:?}");
        assert_eq!(a.totals.oom_kills as u64, s.oom_kills, "{sets:?}");
    }
}

/// Replay's figures equal the simulator's own summary.
fn check_against_summary(r: &Regime, s: &Summary, sets: &[&str]) {
    let l = &r.lifetime;
    let rpw = l.requests_per_worker.as_ref().expect("recycles");
    assert_eq!(r.rate.recycles as u64, s.recycles, "{sets:?}");
    assert_eq!(
        r.rate.peak_hour_recycles as u64, s.peak_hour_recycles,
        "{sets:?}"
    );
    assert_eq!(Some(rpw.min), s.requests_per_worker_min);
    assert_eq!(Some(rpw.p10), s.requests_per_worker_p10);
    assert_eq!(Some(rpw.median), s.requests_per_worker_median);
    assert_eq!(Some(rpw.max), s.requests_per_worker_max);
    assert_eq!(l.young_fraction, s.recycles_young_fraction);
    assert_eq!(
        r.pressure.pressure_recycles as u64, s.pressure_recycles,
        "{sets:?}"
    );
    let b = &r.bypasses;
    assert_eq!(b.acquired as u64, s.count("lease_acquired"), "{sets:?}");
    assert_eq!(
        b.exit_pressure as u64,
        s.count("lease_bypass_pressure"),
        "{sets:?}"
    );
    assert_eq!(
        b.exit_hard_ceiling as u64,
        s.count("lease_bypass_hard_ceiling"),
        "{sets:?}"
    );
    let holds: usize = b.holds.iter().map(|h| h.count).sum();
    let summary_holds = s.counters.holds_total();
    assert_eq!(holds as u64, summary_holds, "{sets:?}");
    assert_eq!(r.canary.retry_ok as u64, s.retry_ok);
    assert_eq!(r.canary.fetch_failed as u64, s.fetch_failed);
    // CSV rounds RSS to 0.1 MB and limits to 1 MB.
    let peak = r.ceiling.peak_rss_mb.expect("rss recorded");
    assert!(
        (peak - s.max_rss_mb).abs() <= 0.05 || peak < s.max_rss_mb,
        "{sets:?}"
    );
    let low = l.low_margin_fraction.unwrap() - s.recycles_low_margin_fraction.unwrap();
    assert!(
        low.abs() <= 2.0 / s.recycles as f64,
        "{sets:?}: low margin off by {low}"
    );
}

#[test]
fn the_simulated_tick_cooldown_and_ttl_are_recovered() {
    let (text, _) = simulate(&["run.duration_h=24"], 1);
    let a = analyse(&[("events.csv", &text)], None);
    let i = &one_regime(&a).inferred;
    assert_eq!(i.tick_s.inferred, Some(45.0));
    let cd = i.cooldown_s.inferred.unwrap();
    assert!((120.0..135.0).contains(&cd), "cooldown bound {cd}");
    // last_recycle_age_s (0.1 s) is the same-instance gap (ts to 1 ms).
    assert!((i.cooldown_s.recorded.unwrap() - cd).abs() <= 0.06);
    let ttl = i.lease_ttl_s.inferred.unwrap();
    assert!((120.0..135.0).contains(&ttl), "ttl bound {ttl}");
    assert_eq!(i.base_limit_mb.recorded, Some(500.0));
    assert!((i.base_limit_mb.inferred.unwrap() - 500.0).abs() <= 1.0);
    assert!((i.jitter_mb.inferred.unwrap() - 40.0).abs() <= 1.0);
}

// ------------------------------------------------- analyses with known answers

#[test]
fn statistics_are_split_per_limit_regime() {
    // 600/750 until 02:00, then 500/650: lifetimes differ by 10x.
    let old = |t, req| R {
        base: 600.0,
        hard: 750.0,
        limit: 600.0,
        requests: req,
        ..r(t, if req % 2 == 0 { "inst-A" } else { "inst-B" }, 610.0)
    };
    let new = |t, req| R {
        requests: req,
        ..r(t, if req % 2 == 0 { "inst-A" } else { "inst-B" }, 510.0)
    };
    let rows = [
        old(600.0, 1000),
        old(1800.0, 1101),
        old(3000.0, 1200),
        old(6600.0, 1301),
        new(7800.0, 100),
        new(8000.0, 201),
        new(8200.0, 300),
        new(8400.0, 401),
        new(14400.0, 500),
    ];
    let a = analyse(
        &[("two.csv", &csv(&rows, &["7000,retry_ok,inst-A,,,,,,,,,,"]))],
        None,
    );
    assert_eq!(
        labels(&a),
        ["base 600 MB / hard 750 MB", "base 500 MB / hard 650 MB"]
    );
    let (o, n) = (&a.regimes[0], &a.regimes[1]);
    assert_eq!((o.first_s, o.last_s), (600.0, 6600.0));
    assert_eq!((n.first_s, n.last_s), (7800.0, 14400.0));
    assert_eq!(a.cutovers.len(), 1);
    assert_eq!(a.cutovers[0].last_of_previous_s, 6600.0);
    assert_eq!(a.cutovers[0].first_of_next_s, 7800.0);
    // The cutover interval splits at its midpoint, 7200 s.
    assert_eq!(
        (o.start_s, o.end_s, n.start_s, n.end_s),
        (0.0, 7200.0, 7200.0, 14400.0)
    );
    assert_eq!((o.rate.recycles, n.rate.recycles), (4, 5));
    assert_eq!(o.rate.per_hour, Some(2.0));
    assert_eq!(n.rate.per_hour, Some(2.5));
    assert_eq!(n.rate.peak_hour_recycles, 4);
    let median = |r: &Regime| r.lifetime.requests_per_worker.as_ref().unwrap().median;
    assert_eq!((median(o), median(n)), (1150.5, 300.0));
    assert_eq!(n.lifetime.young, 3);
    assert_eq!(o.lifetime.young, 0);
    // The canary at 7000 s has no regime fields: it belongs to the regime in force.
    assert_eq!((o.canary.retry_ok, n.canary.retry_ok), (1, 0));
    assert_eq!(o.ceiling.hard_limit_mb, Some(750.0));
    assert_eq!(n.ceiling.max_overshoot_mb, Some(510.0 - 650.0));
}

#[test]
fn one_label_for_two_branches_is_reported_and_classified_by_the_flag() {
    let bypass = |t, inst, pressure| R {
        lease: "bypassed_hard_ceiling",
        pressure,
        headroom: if pressure { 251.0 } else { 700.0 },
        ..r(t, inst, if pressure { 560.0 } else { 690.0 })
    };
    let rows = [
        r(0.0, "inst-A", 520.0),
        bypass(7.0, "inst-B", true),
        r(500.0, "inst-A", 520.0),
        bypass(513.0, "inst-B", true),
        r(1500.0, "inst-A", 520.0),
        bypass(1517.0, "inst-B", false),
    ];
    let a = analyse(&[("label.csv", &csv(&rows, &[]))], Some(seeds_knobs()));
    let b = &one_regime(&a).bypasses;
    assert_eq!(
        (b.acquired, b.exit_pressure, b.exit_hard_ceiling),
        (3, 2, 1)
    );
    assert!(
        warned(
            &a,
            "one label covers two branches: 2 of 3 `lease=bypassed_hard_ceiling`"
        ),
        "{:?}",
        a.warnings
    );
    assert!(warned(
        &a,
        "the label reports 3 ceiling breaches where there were 1"
    ));
    // The three cross-instance gaps under the TTL are listed with their flags.
    let g = &one_regime(&a).gaps;
    let short: Vec<(f64, Option<bool>)> = g
        .cross_below_lease_ttl_list
        .iter()
        .map(|s| (s.gap_s, s.pressure))
        .collect();
    assert_eq!(
        short,
        [(7.0, Some(true)), (13.0, Some(true)), (17.0, Some(false))]
    );
}

#[test]
fn consistent_labels_raise_no_warning() {
    let rows = [
        r(0.0, "inst-A", 520.0),
        R {
            lease: "bypassed_pressure",
            pressure: true,
            headroom: 251.0,
            ..r(7.0, "inst-B", 560.0)
        },
    ];
    let a = analyse(&[("ok.csv", &csv(&rows, &[]))], Some(seeds_knobs()));
    assert!(a.warnings.is_empty(), "{:?}", a.warnings);
    assert_eq!(one_regime(&a).bypasses.exit_pressure, 1);
}

const PRESSURE_LOG: &str = "\
20:00:00 RECYCLE inst-A rss=560 lim=500 after=800req
20:10:00 inst-B recycle pressure: instance headroom 251MB < 350MB
20:10:05 RECYCLE inst-B rss=593 lim=520 after=900req
recycle pressure: instance headroom 204MB < 350MB
20:10:12 RECYCLE inst-A rss=610 lim=505 after=700req
20:20:00 RECYCLE inst-B rss=530 lim=470 after=300req
21:00:00 recycle pressure: instance headroom 330MB < 350MB
";

#[test]
fn pressure_in_the_log_vocabulary_is_the_pressure_flag() {
    let a = analyse(&[("p.log", PRESSURE_LOG)], Some(seeds_knobs()));
    assert_eq!(a.pressure_lines.lines, 3);
    assert_eq!(a.pressure_lines.joined_to_a_recycle, 2);
    assert_eq!(a.pressure_lines.standalone, 1);
    let r = one_regime(&a);
    let p = &r.pressure;
    assert_eq!(
        (p.pressure_recycles, p.from_log_line, p.standalone_lines),
        (2, 2, 1)
    );
    assert_eq!(p.pressure_events, 3);
    assert_eq!(p.threshold_logged_mb, Some(350.0));
    let hp = p.headroom_pressure_mb.as_ref().unwrap();
    assert_eq!((hp.min, hp.max), (204.0, 251.0));
    // Pressure recycles seconds apart across instances, as in seed 002.
    assert_eq!(r.gaps.cross_instance.smallest_s[0], 7.0);
    assert_eq!(r.ceiling.peak_rss_pressure_mb, Some(610.0));
    assert_eq!(r.ceiling.peak_rss_no_pressure_mb, Some(560.0));
    assert_eq!(r.inferred.min_headroom_mb.recorded, Some(350.0));
}

#[test]
fn an_escalation_that_never_fired_is_reported_as_such() {
    // The seeds: pressure recycles 471.4 s and 3945.9 s after their
    // instance's previous recycle, against a 120 s cooldown.
    let p = |t, inst| R {
        pressure: true,
        headroom: 300.0,
        ..r(t, inst, 593.0)
    };
    let rows = [
        r(0.0, "inst-A", 520.0),
        r(1000.0, "inst-B", 520.0),
        p(471.4, "inst-A"),
        p(4945.9, "inst-B"),
    ];
    let mut rows = rows.to_vec();
    rows.sort_by(|a, b| a.t.total_cmp(&b.t));
    let a = analyse(&[("never.csv", &csv(&rows, &[]))], Some(seeds_knobs()));
    let reg = one_regime(&a);
    let e = &reg.escalations[0];
    assert_eq!(e.name, "pressure cooldown");
    assert_eq!(e.exercised, Some(false));
    assert!(e.evidence.contains("471.4-3945.9 s"), "{}", e.evidence);
    assert!(e.evidence.contains("explains nothing"), "{}", e.evidence);
    assert_eq!(reg.inferred.pressure_cooldown_s.inferred, None);
    // One pressure recycle 40 s after its instance's previous: exercised,
    // and, against a normal cooldown of at most 200 s, it bounds the
    // pressure cooldown.
    rows.push(p(5000.0, "inst-A"));
    rows.push(p(5040.0, "inst-A"));
    rows.push(r(6000.0, "inst-B", 520.0));
    rows.push(r(6200.0, "inst-B", 520.0));
    let a = analyse(&[("fired.csv", &csv(&rows, &[]))], Some(seeds_knobs()));
    let reg = one_regime(&a);
    assert_eq!(reg.escalations[0].exercised, Some(true));
    assert_eq!(reg.escalations[0].count, 1);
    assert_eq!(reg.inferred.pressure_cooldown_s.inferred, Some(40.0));
    // Rows that never say whether they were under pressure: unknown, not
    // "never exercised" (an independent model's recording read so).
    let bare = "ts,event,instance,worker,rss_mb,limit_mb\n\
                0,worker_recycled,inst-A,w0,520,500\n\
                471.4,worker_recycled,inst-A,w1,593,500\n\
                1000,worker_recycled,inst-B,w0,520,500\n";
    let a = analyse(&[("bare.csv", bare)], Some(seeds_knobs()));
    let e = &one_regime(&a).escalations[0];
    assert_eq!((e.name.as_str(), e.exercised), ("pressure cooldown", None));
    assert_eq!(e.evidence, "no pressure flag recorded");
}

#[test]
fn gap_buckets_show_the_cooldown_hold_non_monotonically() {
    // Non-pressure recycles on one instance: two held past the ceiling in
    // the 120-165 s band, two routine ones later; a pressure recycle apart.
    let pressure = R {
        pressure: true,
        headroom: 300.0,
        ..r(3000.0, "inst-A", 640.0)
    };
    let rows = [
        r(0.0, "inst-A", 520.0),
        r(150.2, "inst-A", 710.0),
        r(290.2, "inst-A", 690.0),
        r(690.2, "inst-A", 520.0),
        r(1590.2, "inst-A", 530.0),
        pressure,
    ];
    let a = analyse(&[("dwell.csv", &csv(&rows, &[]))], Some(seeds_knobs()));
    let g = &one_regime(&a).gaps;
    let shape: Vec<(usize, Option<f64>, usize)> = g
        .buckets
        .iter()
        .map(|b| (b.recycles, b.mean_rss_mb, b.over_ceiling))
        .collect();
    assert_eq!(
        shape,
        [(0, None, 0), (2, Some(700.0), 2), (2, Some(525.0), 0)]
    );
    assert_eq!(g.buckets[1].mean_overshoot_mb, Some(50.0));
    assert_eq!(g.buckets[1].label, "cooldown..cooldown+tick (120-165 s)");
    assert_eq!(g.same_instance_pressure.as_ref().unwrap().n, 1);
    let c = &one_regime(&a).ceiling;
    assert_eq!(
        (c.peak_rss_mb, c.max_overshoot_mb),
        (Some(710.0), Some(60.0))
    );
    assert!((c.peak_same_instance_gap_s.unwrap() - 150.2).abs() < 1e-9);
    assert_eq!(c.over_ceiling, 2);
    // Without a scenario the inferred cooldown places the edges instead.
    let a = analyse(&[("dwell.csv", &csv(&rows, &[]))], None);
    let r = one_regime(&a);
    assert!(r.knobs.source.contains("inferred"));
    assert_eq!(r.gaps.buckets[0].recycles, 0);
    assert!((r.knobs.cooldown_s.unwrap() - 140.0).abs() < 1e-9);
}

#[test]
fn canary_events_are_joined_to_the_recycles_before_them() {
    let rows = [r(1000.0, "inst-A", 520.0), r(5000.0, "inst-B", 520.0)];
    let canary = |t: f64, kind: &str| format!("{t},{kind},inst-A,,,,500,650,,,,none,");
    let extra = [
        canary(1010.0, "retry_ok"),
        canary(1050.0, "fetch_failed"),
        canary(3000.0, "retry_ok"),
        canary(5059.0, "retry_ok"),
        canary(5061.0, "retry_ok"),
    ];
    let extra: Vec<&str> = extra.iter().map(String::as_str).collect();
    let a = analyse(&[("canary.csv", &csv(&rows, &extra))], None);
    let c = &one_regime(&a).canary;
    assert_eq!((c.retry_ok, c.fetch_failed), (4, 1));
    assert_eq!(c.after_recycle, 3);
    assert_eq!(c.covered_fraction, Some(120.0 / 5061.0));
    let lag = c.lag_s.as_ref().unwrap();
    assert_eq!((lag.min, lag.max), (10.0, 2000.0));
    let b = c.peak_hour.as_ref().unwrap();
    assert_eq!((b.recycles, b.canaries), (1, 3));
}

#[test]
fn an_rss_series_alone_has_the_window_of_its_samples() {
    // Three workers sampled every 45 s for an hour, no event at all: the
    // window is the samples' span, not 1970-01-01 and 0 h.
    let mut text = String::from("ts,instance,worker,rss_mb,requests\n");
    let t0 = 1_764_650_000u64;
    for k in 0..=80u64 {
        for w in 0..3u64 {
            let rss = 360.0 + 0.5 * k as f64 + w as f64;
            text += &format!("{},inst-A,w{w},{rss:.1},{}\n", t0 + 45 * k + w, 10 * k);
        }
    }
    let a = analyse(&[("rss.csv", &text)], None);
    assert_eq!(a.window.start_s, t0 as f64);
    assert_eq!(a.window.end_s, (t0 + 45 * 80 + 2) as f64);
    assert!((a.window.hours - 1.0006).abs() < 1e-3, "{}", a.window.hours);
}

/// Recycle rows alone (no holds), slots named: the tick is the period on
/// which the gaps between a slot's consecutive recycles agree in phase. On
/// samples that keep a clock's phase (`wall_clock`: multiples of the tick;
/// a timer started at each worker's readiness, as two independent models
/// of the fleet had) it is read to the tenth of a second whatever the
/// base's tick; on fleetsim's per-worker sampler, whose phase is drawn
/// afresh each life, the gaps agree on nothing and the tick is not read.
#[test]
fn the_tick_is_read_off_a_slots_consecutive_recycles_on_a_clock() {
    let recycles_only = |sets: &[&str]| -> String {
        events_csv(sets, 3)
            .lines()
            .enumerate()
            .filter(|(k, l)| *k == 0 || l.contains(",worker_recycled,"))
            .map(|(_, l)| format!("{l}\n"))
            .collect()
    };
    for tick in ["30", "52.5"] {
        let tick_set = format!("policy.tick_s={tick}");
        let mut sets = PLAIN_FLEET.to_vec();
        sets.extend(["policy.sample_clock=wall_clock", tick_set.as_str()]);
        let a = analyse(&[("clock.csv", &recycles_only(&sets))], None);
        let t = &one_regime(&a).inferred.tick_s;
        assert_eq!(t.inferred, Some(tick.parse().unwrap()), "{}", t.how);
        assert!(t.how.contains("agree in phase"), "{}", t.how);
    }
    let mut sets = PLAIN_FLEET.to_vec();
    sets.push("policy.tick_s=30");
    let a = analyse(&[("phases.csv", &recycles_only(&sets))], None);
    let t = &one_regime(&a).inferred.tick_s;
    assert_eq!(t.inferred, None, "{}", t.how);
    assert!(t.how.contains("none agreeing"), "{}", t.how);
}
