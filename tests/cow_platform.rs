//! Copy-on-write (`[fleet.cow]`) and the platform's events (`[platform]`):
//! each mechanism against its closed form or its contrast with it off, so
//! every check can fail.

mod common;

use common::{run_checked, scenario, try_scenario};
use fleetsim::engine::SimTime;
use fleetsim::metrics::rows::Branch;
use fleetsim::metrics::{EventKind, EventRow, Observer, TimelineRow};

/// Every event row and every timeline row, kept.
#[derive(Default)]
struct Rows {
    events: Vec<EventRow>,
    timeline: Vec<TimelineRow>,
}

impl Observer for &mut Rows {
    fn event(&mut self, row: &EventRow) {
        self.events.push(row.clone());
    }
    fn timeline(&mut self, row: &TimelineRow) {
        self.timeline.push(row.clone());
    }
}

/// Workers that neither leak nor recycle, started fresh: what moves the
/// cgroup is copy-on-write alone.
const FLAT: [&str; 8] = [
    "fleet.warm_start=false",
    "fleet.leak.distribution=constant",
    "fleet.leak.mean_mb_per_request=0",
    "fleet.leak.warmup_mb=0",
    "fleet.leak.step_probability=0",
    "policy.rss_trigger=false",
    "run.duration_h=2",
    "workload.rps=4",
];

/// Instagram's 2017 figures: of 250 MB shared, 10% reached by refcounts
/// and 38% of the rest by the collector's headers.
const INSTAGRAM: [&str; 4] = [
    "fleet.cow.refcount_fraction=0.1",
    "fleet.cow.refcount_half_life_requests=20",
    "fleet.cow.gc_fraction=0.38",
    "fleet.cow.gc_full_after_requests=300",
];

fn last_usage(sets: &[&str]) -> (Vec<f64>, f64, u64) {
    let mut rows = Rows::default();
    let s = run_checked(&scenario(sets), 1, &mut rows);
    let last = rows.timeline.last().expect("timeline rows");
    let rss = last.max_rss_mb.iter().copied().fold(0.0, f64::max);
    (last.usage_mb.clone(), rss, s.oom_kills)
}

#[test]
fn unsharing_grows_the_cgroup_by_the_closed_form_and_leaves_rss_alone() {
    let (off, rss_off, _) = last_usage(&FLAT);
    let on_sets: Vec<&str> = FLAT.iter().chain(&INSTAGRAM).copied().collect();
    let (on, rss_on, ooms) = last_usage(&on_sets);
    assert_eq!(ooms, 0);
    // RSS counts a copied page as it counted the shared one.
    assert_eq!(rss_off, 360.0);
    assert_eq!(rss_on, 360.0);
    // Master 360 + 3 workers x (360 - 135) with nothing unshared ...
    for u in &off {
        assert!((u - (360.0 + 3.0 * 225.0)).abs() < 1e-9, "{u}");
    }
    // ... and with every worker long past its half-lives and its first full
    // collection, 135 x (1 - 0.9 x 0.62) MB more per worker.
    let unshared = 135.0 * (1.0 - 0.9 * 0.62);
    for u in &on {
        let want = 360.0 + 3.0 * (225.0 + unshared);
        assert!((u - want).abs() < 0.01, "{u} vs {want}");
    }
}

#[test]
fn gc_freeze_removes_the_collectors_unsharing() {
    let with = |extra: &[&str]| {
        let sets: Vec<&str> = FLAT
            .iter()
            .chain(&INSTAGRAM)
            .chain(extra)
            .copied()
            .collect();
        last_usage(&sets).0[0]
    };
    let (collected, frozen) = (with(&[]), with(&["fleet.cow.gc_freeze=true"]));
    let refcount_only = 360.0 + 3.0 * (225.0 + 135.0 * 0.1);
    assert!((frozen - refcount_only).abs() < 0.01, "{frozen}");
    assert!(collected > frozen + 3.0 * 135.0 * 0.9 * 0.38 - 0.01);
}

#[test]
fn without_preload_every_worker_holds_its_own_copy() {
    let mut sets = FLAT.to_vec();
    sets.extend(INSTAGRAM);
    sets.extend(["fleet.cow.preload=false", "fleet.cow.master_rss_mb=30"]);
    let (usage, _, _) = last_usage(&sets);
    // The master without the app, then three full private copies: nothing
    // is shared, so nothing unshares.
    assert!(
        (usage[0] - (30.0 + 3.0 * 360.0)).abs() < 1e-9,
        "{}",
        usage[0]
    );
    let err = try_scenario(&["fleet.cow.preload=false"]).unwrap_err();
    assert_eq!(err.key.as_deref(), Some("fleet.cow.master_rss_mb"));
    let err = try_scenario(&["fleet.cow.gc_fraction=1.5"]).unwrap_err();
    assert_eq!(err.key.as_deref(), Some("fleet.cow.gc_fraction"));
}

#[test]
fn the_private_measure_reads_the_unshared_pages() {
    // Passenger reads private dirty memory: unsharing brings its limit
    // closer, so workers recycle at a lower RSS; an RSS reader sees nothing.
    let base = ["policy.rss_measure=private", "run.duration_h=6"];
    let recycled_rss = |extra: &[&str]| {
        let sets: Vec<&str> = base.iter().chain(extra).copied().collect();
        let mut rows = Rows::default();
        run_checked(&scenario(&sets), 3, &mut rows);
        let rss: Vec<f64> = (rows.events.iter())
            .filter(|r| r.kind == EventKind::WorkerRecycled)
            .map(|r| r.worker.as_ref().unwrap().rss_mb - r.worker.as_ref().unwrap().limit_mb)
            .collect();
        assert!(rss.len() > 10, "{}", rss.len());
        rss.iter().sum::<f64>() / rss.len() as f64
    };
    let (off, on) = (recycled_rss(&[]), recycled_rss(&INSTAGRAM));
    // The aggregate mode unshares by the same closed form.
    let mut agg = INSTAGRAM.to_vec();
    agg.push("engine.mode=aggregate");
    assert!(recycled_rss(&agg) < off - 40.0);
    // RSS over the limit at a recycle: the shared pages (135 MB) without
    // copy-on-write, what is left of them (about 75 MB) with it, each plus
    // the overshoot of a 45 s tick.
    assert!(off > 135.0, "{off}");
    assert!(on < off - 40.0, "{on} vs {off}");
}

/// A leak fast enough to OOM a container that nothing recycles.
const OOMING: [&str; 6] = [
    "policy.rss_trigger=false",
    "fleet.leak.mean_mb_per_request=2",
    "fleet.leak.warmup_mb=0",
    "workload.rps=6",
    "run.duration_h=2",
    "run.timeline_step_s=1",
];

/// The OOM kill rows of a run, grouped by (time, instance).
fn oom_groups(rows: &Rows) -> Vec<(SimTime, u32, usize, bool)> {
    let mut groups: Vec<(SimTime, u32, usize, bool)> = Vec::new();
    for r in rows.events.iter().filter(|r| r.kind == EventKind::OomKill) {
        let group = matches!(
            r.decision.as_ref().unwrap().branch,
            Branch::Kill("oom_group_kill")
        );
        match groups.last_mut() {
            Some(g) if g.0 == r.t && g.1 == r.instance => g.2 += 1,
            _ => groups.push((r.t, r.instance, 1, group)),
        }
    }
    groups
}

#[test]
fn oom_group_kills_the_whole_container_and_restarts_it_after_the_delay() {
    let mut sets = OOMING.to_vec();
    sets.push("platform.oom_group=true");
    let mut rows = Rows::default();
    let s = run_checked(&scenario(&sets), 1, &mut rows);
    let groups = oom_groups(&rows);
    assert!(groups.len() >= 3, "{groups:?}");
    assert_eq!(s.oom_group_kills, Some(groups.len() as u64));
    // Every kill takes all three workers of the instance at once.
    assert!(groups.iter().all(|g| g.2 == 3 && g.3), "{groups:?}");
    // The instance serves nothing until the restart (10 s) and the boot
    // (2 s): 12 one-second timeline rows at most 3 serving (of 6).
    let first = groups[0].0;
    let down = (rows.timeline.iter())
        .filter(|r| r.t > first && r.t <= first + SimTime::from_secs(12))
        .filter(|r| r.serving <= 3)
        .count();
    assert!(down >= 11, "{down}");
    // The aggregate mode goes through the same kill and restart.
    sets.push("engine.mode=aggregate");
    let mut rows = Rows::default();
    let s = run_checked(&scenario(&sets), 1, &mut rows);
    let groups = oom_groups(&rows);
    assert!(!groups.is_empty() && groups.iter().all(|g| g.2 == 3 && g.3));
    assert_eq!(s.oom_group_kills, Some(groups.len() as u64));
    // The kernel's default kills one worker at a time.
    let mut rows = Rows::default();
    let s = run_checked(&scenario(&OOMING), 1, &mut rows);
    let groups = oom_groups(&rows);
    assert_eq!(s.oom_group_kills, None);
    assert!(groups.iter().all(|g| g.2 < 3 && !g.3), "{groups:?}");
}

#[test]
fn a_reload_wave_forks_every_successor_and_terms_the_old_workers_at_once() {
    let wave = [
        "run.duration_h=2",
        "run.timeline_step_s=1",
        "platform.reload=[{at_s = 3600.5}]",
    ];
    let mut rows = Rows::default();
    let s = run_checked(&scenario(&wave), 2, &mut rows);
    assert_eq!(s.reload_replacements, Some(6));
    // gunicorn's reload: the new workers boot (2 s) while the old ones have
    // been told to go, so the fleet serves nothing for the boot.
    let at = |secs: u64| {
        (rows.timeline.iter())
            .find(|r| r.t == SimTime::from_secs(secs))
            .unwrap()
    };
    assert_eq!(at(3601).serving, 0);
    assert_eq!(at(3601).booting, 6);
    assert_eq!(at(3603).serving, 6);
    // One instance only.
    let one = [
        "run.duration_h=2",
        "run.timeline_step_s=1",
        "platform.reload=[{at_s = 3600.5, scope = \"instance\", instance = 1}]",
    ];
    let mut rows = Rows::default();
    let s = run_checked(&scenario(&one), 2, &mut rows);
    assert_eq!(s.reload_replacements, Some(3));
    let row = rows
        .timeline
        .iter()
        .find(|r| r.t == SimTime::from_secs(3601));
    assert_eq!(row.unwrap().serving, 3);
    // Without the wave nothing is replaced then.
    let mut rows = Rows::default();
    let s = run_checked(&scenario(&wave[..2]), 2, &mut rows);
    assert_eq!(s.reload_replacements, None);
    let row = rows
        .timeline
        .iter()
        .find(|r| r.t == SimTime::from_secs(3601));
    assert!(row.unwrap().serving >= 5);
}

#[test]
fn pss_divides_the_shared_pages_among_their_sharers() {
    // RSS over the limit at a recycle: none of the 135 shared MB under
    // `rss`, all of them under `private`, and under `pss` the part the
    // master and the other two workers carry (3/4 of them), each plus the
    // overshoot of a 45 s tick.
    let over = |measure: &str| {
        let set = format!("policy.rss_measure={measure}");
        let mut rows = Rows::default();
        run_checked(&scenario(&[&set, "run.duration_h=6"]), 3, &mut rows);
        let over: Vec<f64> = (rows.events.iter())
            .filter(|r| r.kind == EventKind::WorkerRecycled)
            .map(|r| r.worker.as_ref().unwrap().rss_mb - r.worker.as_ref().unwrap().limit_mb)
            .collect();
        over.iter().sum::<f64>() / over.len() as f64
    };
    let (rss, pss, private) = (over("rss"), over("pss"), over("private"));
    assert!(rss < pss && pss < private, "{rss} {pss} {private}");
    assert!((pss - rss - 0.75 * 135.0).abs() < 20.0, "{rss} {pss}");
    assert!(
        (private - pss - 0.25 * 135.0).abs() < 20.0,
        "{pss} {private}"
    );
}
