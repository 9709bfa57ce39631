//! `lives`' unit tests.

use super::super::moments::traffic;
use super::*;

/// Two instances of three slots, each slot's lives 900-2700 s long at
/// 0.5 requests a second, the first begun before the window: rows as a
/// pid-per-life log writes them (a worker id never repeated).
fn pid_rows(instances: bool) -> Vec<Row> {
    let mut rows = Vec::new();
    for slot in 0..6usize {
        let mut began = -(300.0 + 400.0 * slot as f64);
        let mut k = 0usize;
        loop {
            let life = 900.0 + ((slot * 7 + k * 11) % 10) as f64 * 200.0;
            let end = began + life;
            if end > 36_000.0 {
                break;
            }
            let instance = instances.then(|| format!("i{}", slot / 3));
            rows.push(Row {
                t_s: end,
                slot: instance.clone().map(|i| (i, format!("pid{slot}-{k}"))),
                instance,
                requests: 0.5 * life,
                rss_mb: 500.0,
                limit_mb: 490.0,
            });
            began = end;
            k += 1;
        }
    }
    rows.sort_by(|a, b| a.t_s.total_cmp(&b.t_s));
    rows
}

#[test]
fn lives_chained_from_a_pid_per_life_give_the_slots_rate() {
    for (instances, lives) in [
        (true, Lives::ChainedByInstance),
        (false, Lives::ChainedInFleet),
    ] {
        let rows = pid_rows(instances);
        let s = Sample {
            rows,
            start_s: 0.0,
            end_s: 36_000.0,
            whole_mb: false,
            lives: Lives::Window,
        };
        // The rows themselves say how they bound lives.
        let view_lives = if instances {
            Lives::ChainedByInstance
        } else {
            Lives::ChainedInFleet
        };
        assert_eq!(lives, view_lives);
        let window = traffic(&s, 6.0, 3.0, 0.0).unwrap();
        assert_eq!(window.from, Lives::Window);
        let s = Sample { lives, ..s };
        let t = traffic(&s, 6.0, 3.0, 0.0).unwrap();
        assert_eq!(t.from, lives);
        // 6 workers at 0.5 a second: 3 rps, which requests over the
        // window miss (the lives begun before it and those still
        // alive). Within an instance every match is right here; in the
        // fleet, six chains, a few are not, and the rate stays close.
        let tol = if instances { 1e-9 } else { 0.01 };
        assert!((t.rps - 3.0).abs() < tol, "{lives:?}: {}", t.rps);
        assert!((window.rps - 3.0).abs() > 0.03, "{}", window.rps);
    }
}

#[test]
fn a_simulated_day_with_a_pid_per_life_gives_its_slots_rate() {
    use super::super::testkit::{LOOK, loader, plain};
    let (sets, truth) = plain();
    let sc = loader(sets)(&super::super::fit::num_overrides(&truth.overrides())).unwrap();
    for seed in [3, 4] {
        let s = super::super::fit::simulate(&sc, seed, LOOK).unwrap();
        assert_eq!(s.lives, Lives::Slots);
        let slots = traffic(&s, 6.0, 3.0, 0.0).unwrap();
        // The same rows as a pid-per-life log and as a log with no ids.
        let mut pids = s.clone();
        for (k, r) in pids.rows.iter_mut().enumerate() {
            r.slot = r.instance.clone().map(|i| (i, format!("pid{k}")));
        }
        pids.lives = Lives::ChainedByInstance;
        let mut bare = pids.clone();
        for r in &mut bare.rows {
            (r.slot, r.instance) = (None, None);
        }
        bare.lives = Lives::ChainedInFleet;
        let window = Sample {
            lives: Lives::Window,
            ..bare.clone()
        };
        let rate = |s: &Sample| traffic(s, 6.0, 3.0, 0.0).unwrap().rps;
        let err = |x: f64| (x / slots.rps - 1.0).abs();
        assert!(err(rate(&pids)) < 0.002, "{} vs {}", rate(&pids), slots.rps);
        assert!(err(rate(&bare)) < 0.005, "{} vs {}", rate(&bare), slots.rps);
        // Requests over the window, the estimate chaining replaced.
        assert!(err(rate(&window)) > 0.005, "{}", rate(&window));
    }
}

/// A diurnal day (peak to trough 3) written without ids: at the
/// window's constant pace the chaining ran away (each row joined the
/// latest recycle; 2.7x the rate on a SimPy day, more when refined from
/// its own lives). Paced by the hourly recycle counts' cosine it gives
/// the slots' rate.
#[test]
fn a_diurnal_day_without_ids_is_chained_at_its_own_pace() {
    use super::super::testkit::{LOOK, loader, plain};
    use crate::scenario::parse_override;
    let (mut sets, truth) = plain();
    for o in [
        "workload.profile=\"diurnal\"",
        "workload.peak_to_trough=3.0",
        "workload.peak_hour=20.0",
        "workload.start_hour=0.0",
    ] {
        sets.push(parse_override(o).unwrap());
    }
    let sc = loader(sets)(&super::super::fit::num_overrides(&truth.overrides())).unwrap();
    let mut believed = 0;
    for seed in [3, 4, 5] {
        let s = super::super::fit::simulate(&sc, seed, LOOK).unwrap();
        let slots = traffic(&s, 6.0, 3.0, 0.0).unwrap();
        assert_eq!(slots.from, Lives::Slots);
        let mut bare = s.clone();
        for r in &mut bare.rows {
            (r.slot, r.instance) = (None, None);
        }
        bare.lives = Lives::ChainedInFleet;
        let t = traffic(&bare, 6.0, 3.0, 0.0).unwrap();
        let err = t.rps / slots.rps - 1.0;
        assert!(
            err.abs() < 0.03,
            "seed {seed}: {} vs {} ({:?})",
            t.rps,
            slots.rps,
            t.from
        );
        // Chained at the diurnal pace, the rate is the slots' own; at
        // a constant pace the band rejects every day's chaining.
        if t.from == Lives::ChainedInFleet {
            believed += 1;
            assert!(err.abs() < 0.005, "seed {seed}: {} vs {}", t.rps, slots.rps);
        }
        // The constant pace, as before: further off.
        let flat = Pace {
            per_worker: bare.rows.iter().map(|r| r.requests).sum::<f64>()
                / (bare.end_s - bare.start_s)
                / 6.0,
            amplitude: 0.0,
            peak_hour: 0.0,
            start_hour: 0.0,
        };
        let ls = chained_lives(&bare, Lives::ChainedInFleet, 6, flat);
        let paced = Pace {
            amplitude: 0.5,
            peak_hour: 20.0,
            ..flat
        };
        let good = chained_lives(&bare, Lives::ChainedInFleet, 6, paced);
        let (r_flat, r_paced) = (rate(&ls, 6.0), rate(&good, 6.0));
        assert!(
            (r_paced / slots.rps - 1.0).abs() < (r_flat / slots.rps - 1.0).abs(),
            "seed {seed}: paced {r_paced}, flat {r_flat}, slots {}",
            slots.rps
        );
    }
    assert!(
        believed >= 2,
        "chained lives believed on {believed} of 3 days"
    );
}

/// Each instance's hot worker (`w0`) recycling every `life` seconds at
/// 1 request a second, its first `first` seconds into the window; its
/// siblings once, late.
fn hot_rows(first: f64, life: f64) -> Sample {
    let mut rows = Vec::new();
    for i in 0..2 {
        let inst = format!("i{i}");
        let mut t = first + 100.0 * i as f64;
        while t < 86_400.0 {
            rows.push(Row {
                t_s: t,
                slot: Some((inst.clone(), "w0".into())),
                instance: Some(inst.clone()),
                requests: life,
                rss_mb: 500.0,
                limit_mb: 490.0,
            });
            t += life;
        }
        rows.push(Row {
            t_s: 80_000.0,
            slot: Some((inst.clone(), "w1".into())),
            instance: Some(inst.clone()),
            requests: 300.0,
            rss_mb: 500.0,
            limit_mb: 490.0,
        });
    }
    rows.sort_by(|a, b| a.t_s.total_cmp(&b.t_s));
    Sample {
        rows,
        start_s: 0.0,
        end_s: 86_400.0,
        whole_mb: false,
        lives: Lives::SlotsUneven,
    }
}

#[test]
fn a_hot_fleets_cold_start_is_read_off_each_instances_first_recycle() {
    // A whole life in: cold. A fifth: warm, though each cold sibling's
    // first recycle (80,000 s, 300 requests) reads as late as can be.
    assert!(cold_start(&hot_rows(1500.0, 1500.0), 1.0));
    assert!(!cold_start(&hot_rows(300.0, 1500.0), 1.0));
    let mut s = hot_rows(300.0, 1500.0);
    s.lives = Lives::Slots;
    assert!(
        cold_start(&s, 1.0),
        "read slot by slot, the siblings decide"
    );
}

/// Fed first without ids: lives chained one an instance at the
/// instance's pace follow each instance's first slot, and their rate
/// leaves out each chain's first row, a life begun before the window
/// (here three lives long, as a length-biased one can be), which the
/// window's requests count whole.
#[test]
fn lives_chained_one_an_instance_give_a_first_slots_rate_without_ids() {
    let mut s = hot_rows(300.0, 1500.0);
    let firsts = [300.0, 400.0];
    for r in s.rows.iter_mut() {
        if firsts.contains(&r.t_s) {
            r.requests *= 3.0;
        }
        r.slot = None;
        r.instance = None;
    }
    s.lives = Lives::HotInFleet;
    let hot = traffic(&s, 6.0, 3.0, 0.0).expect("a rate");
    assert_eq!(hot.from, Lives::HotInFleet);
    assert!((hot.rps / 2.0 - 1.0).abs() < 0.01, "{hot:?}");
    s.lives = Lives::Window;
    let window = traffic(&s, 6.0, 3.0, 0.0).expect("a rate");
    assert!(window.rps / 2.0 - 1.0 > 0.03, "{window:?}");
    // With instance names, one chain an instance.
    let mut s = hot_rows(300.0, 1500.0);
    for r in s.rows.iter_mut() {
        r.slot = None;
    }
    s.lives = Lives::HotByInstance;
    let by = traffic(&s, 6.0, 3.0, 0.0).expect("a rate");
    assert_eq!(by.from, Lives::HotByInstance);
    assert!((by.rps / 2.0 - 1.0).abs() < 0.01, "{by:?}");
}

/// Without instance names, the window's first recycle alone: a fifth
/// of a life in (warm), where each instance's first averages 0.23.
#[test]
fn a_hot_fleets_start_without_instance_names_is_the_windows_first_recycle() {
    let mut s = hot_rows(300.0, 1500.0);
    let by = hot_lateness_by(&s, 1.0, true).expect("instances named");
    assert!((by - (300.0 + 400.0) / 1500.0 / 2.0).abs() < 1e-9, "{by}");
    for r in s.rows.iter_mut() {
        r.instance = None;
        r.slot = None;
    }
    assert_eq!(hot_lateness(&s, 1.0), None);
    let first = hot_lateness_by(&s, 1.0, false).expect("the window's first");
    assert!((first - 0.2).abs() < 1e-9, "{first}");
}

/// A slot's first row (a life begun before the window, of any length)
/// and a slot that recycled once say nothing of the rate; the rest is
/// each slot's requests over the window's time after its first.
#[test]
fn slots_fed_unevenly_are_read_from_their_first_recycle_on() {
    let row = |t_s: f64, slot: &str, requests: f64| Row {
        t_s,
        slot: Some(("i0".into(), slot.into())),
        instance: Some("i0".into()),
        requests,
        rss_mb: 500.0,
        limit_mb: 490.0,
    };
    let sample = |first: f64| Sample {
        rows: vec![
            row(1_000.0, "w0", first),
            row(3_000.0, "w0", 1_000.0),
            row(5_000.0, "w0", 1_000.0),
            row(6_000.0, "w1", 900.0),
            row(7_000.0, "w0", 1_000.0),
            row(9_000.0, "w0", 1_000.0),
        ],
        start_s: 0.0,
        end_s: 9_000.0,
        whole_mb: false,
        lives: Lives::SlotsUneven,
    };
    // w0: 4,000 requests in the 8,000 s after its first recycle.
    for first in [100.0, 5_000.0] {
        assert!((slots_since_first(&sample(first)).unwrap() - 0.5).abs() < 1e-12);
        // The rate a fleet fed unevenly is read at.
        let t = traffic(&sample(first), 6.0, 3.0, 0.0).unwrap();
        assert_eq!(t.from, Lives::SlotsUneven);
        assert!((t.rps - 0.5).abs() < 1e-12, "{}", t.rps);
    }
    let mut once = sample(100.0);
    once.rows.retain(|r| r.t_s < 2_000.0 || r.t_s == 6_000.0);
    assert_eq!(slots_since_first(&once), None);
}
