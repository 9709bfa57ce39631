//! The seeds' arithmetic, reproduced on the simulator (DOMAIN.md,
//! "Consequences the simulator must show"):
//!
//! - worst over-ceiling dwell = cooldown + tick (seed 000, section 2);
//! - a 120 s lease permits 3600 / 120 = 30 recycles per hour, plus whatever
//!   its emergency exits let through (seed 000, section 1; seed 002);
//! - two instances under pressure bypass the lease and recycle seconds
//!   apart (seed 002);
//! - without the lease only the per-instance cooldown bounds the rate.
//!
//! Every run checks every invariant after every event, and every claim is
//! checked on several seeds (each run takes a fraction of a second).

mod common;

use common::{Recorder, check_with};
use fleetsim::metrics::LeaseOutcome;

/// A fleet whose workers leak 50 MB per request: a fresh worker passes its
/// jittered limit (460..539 MB) within three requests and the hard ceiling
/// (650 MB) within six, so every worker is over its limit almost all the
/// time. The cgroup is raised far above any RSS so that neither OOM kills
/// nor memory pressure (headroom < 350 MB) ever happen: the cooldown and
/// the sampling tick are the only things between a worker and its recycle.
/// Service is constant 10 ms, so a drain lasts at most 10 ms.
const SATURATED: &[&str] = &[
    "fleet.leak.distribution=constant",
    "fleet.leak.mean_mb_per_request=50",
    "fleet.container_mb=1000000",
    "workload.profile=constant",
    "workload.rps=4",
    "workload.service=constant",
    "workload.service_mean_ms=10",
    "run.duration_h=12",
    // The calibrated default defers recycles above 0.56 rps for up to an
    // hour (the seeds' ~1 rps fleet); at 4 rps that would hold everyone.
    // These claims are about the cooldown and the lease: deferral off.
    "policy.busy_deferral=false",
];

/// Each claim holds on every one of these seeds.
const SEEDS: [u64; 3] = [1, 2, 3];

fn with(base: &[&'static str], extra: &[&'static str]) -> Vec<&'static str> {
    base.iter().chain(extra).copied().collect()
}

/// Longest over-ceiling dwell for a worker alone on its instance.
///
/// Why one worker per instance: the seeds' bound is about a worker that is
/// held by its *own* instance's cooldown. Once it is over the ceiling:
/// - the busy deferral no longer applies (the ceiling skips it);
/// - the lease cannot hold it: if another instance holds the lease, the
///   hard-ceiling exit fires (`bypassed_hard_ceiling`);
/// - pressure would only *shorten* the wait (30 s cooldown), and the raised
///   cgroup keeps headroom far above 350 MB, so it never fires here;
/// - the cooldown stamp was set by this worker's predecessor's recycle, which
///   is before the crossing; it clears `cooldown` after that stamp and the
///   next sample comes at most `tick` later.
///
/// So the decision comes at most `cooldown + tick` after the crossing, and
/// the dwell (which the simulator closes when the process exits) is that
/// plus the drain, at most one 10 ms service. It is at least `cooldown` in
/// the worst cycle: the crossing comes ~5 s after the previous recycle
/// (2 s boot, six requests at 2 rps), so any cycle whose next sample lands
/// more than ~5 s after the cooldown clears exceeds it; over hundreds of
/// cycles with a fresh random sampling phase each, some do.
///
/// With siblings the bound does not hold for a worker (see
/// `siblings_queue_behind_the_instance_cooldown`).
#[test]
fn over_ceiling_dwell_lies_between_cooldown_and_cooldown_plus_tick() {
    let drain_s = 0.010;
    // (extra settings, cooldown_s, tick_s): the effective cooldown is the
    // pressure cooldown when every sample sees pressure.
    let cases: &[(&[&str], f64, f64)] = &[
        (&[], 120.0, 45.0),
        (&["policy.cooldown_s=60", "policy.tick_s=20"], 60.0, 20.0),
        // Pressure on every sample (a headroom floor above the whole cgroup):
        // the 30 s pressure cooldown replaces the 120 s one.
        (&["policy.min_headroom_mb=2000000"], 30.0, 45.0),
    ];
    for (&(extra, cooldown, tick), seed) in cases
        .iter()
        .flat_map(|c| SEEDS.iter().map(move |s| (c, *s)))
    {
        let sets = with(
            SATURATED,
            &["fleet.instances=2", "fleet.workers_per_instance=1"],
        );
        let sets: Vec<&str> = sets.iter().chain(extra).copied().collect();
        let mut rec = Recorder::default();
        let s = check_with(&sets, seed, &mut rec);
        let dwell = s.over_ceiling_dwell_max_s;
        eprintln!(
            "{extra:?} seed {seed}: dwell max {dwell:.3} s, {} recycles",
            s.recycles
        );
        assert!(
            (cooldown..=cooldown + tick + drain_s).contains(&dwell),
            "{extra:?} seed {seed}: longest over-ceiling dwell {dwell} s not in [{cooldown}, {}]",
            cooldown + tick
        );
        // The mechanism really was the cooldown: it held workers, no OOM
        // kill cut a dwell short, and the ceiling exit was what let
        // over-ceiling workers past a held lease.
        assert_eq!(s.oom_kills, 0);
        assert!(
            s.count("holds_cooldown") + s.count("holds_cooldown_pressure") > 100,
            "{s:?}"
        );
        assert!(s.count("lease_bypass_hard_ceiling") + s.count("lease_bypass_pressure") > 0);
        assert!(s.max_overshoot_mb > 0.0);
        let no_pressure = !extra.iter().any(|e| e.starts_with("policy.min_headroom"));
        if no_pressure {
            assert_eq!(s.pressure_recycles, 0, "{extra:?}: pressure fired");
            assert_eq!(s.count("holds_cooldown_pressure"), 0);
        } else {
            assert_eq!(s.pressure_recycles, s.recycles);
            assert_eq!(s.count("holds_cooldown"), 0);
        }
        assert!(s.recycles > 500, "{extra:?}: only {} recycles", s.recycles);
    }
}

/// The seeds' fleet shape (3 workers per instance), every worker over its
/// limit. The seeds' band is about the *instance*: every recycle comes
/// between `cooldown` and `cooldown + tick` after the previous one on the
/// same instance (seed 000: "zero recycles below the 120 s cooldown",
/// the 710 MB recycle 150.2 s after its predecessor). But a *worker* can
/// dwell over the ceiling far longer: after each recycle the first
/// over-limit sibling to be sampled wins, so a worker whose sampling phase
/// keeps losing waits several cooldowns. The seeds' "worst dwell =
/// cooldown + tick" holds only for one over-limit worker per instance.
#[test]
fn siblings_queue_behind_the_instance_cooldown() {
    SEEDS
        .iter()
        .for_each(|&seed| siblings_queue_behind_the_instance_cooldown_on(seed));
}

fn siblings_queue_behind_the_instance_cooldown_on(seed: u64) {
    let (cooldown, tick) = (120.0, 45.0);
    let mut rec = Recorder::default();
    let s = check_with(SATURATED, seed, &mut rec);
    assert_eq!(s.pressure_recycles, 0);
    assert_eq!(s.oom_kills, 0);
    let gaps: Vec<f64> = rec
        .recycles
        .iter()
        .filter_map(|r| r.last_recycle_age_s)
        .collect();
    assert!(gaps.len() > 500, "{} gaps", gaps.len());
    for g in &gaps {
        assert!(
            (cooldown..=cooldown + tick).contains(g),
            "same-instance recycle gap {g} s outside [{cooldown}, {}]",
            cooldown + tick
        );
    }
    let min = gaps.iter().copied().fold(f64::INFINITY, f64::min);
    let max = gaps.iter().copied().fold(0.0, f64::max);
    eprintln!(
        "same-instance gaps {min:.1}..{max:.1} s; worker dwell max {:.1} s",
        s.over_ceiling_dwell_max_s
    );
    assert!(
        s.over_ceiling_dwell_max_s > 2.0 * (cooldown + tick),
        "dwell {}",
        s.over_ceiling_dwell_max_s
    );
}

/// The default fleet, constant 6 rps, a 0.5 MB/request leak: every worker
/// is over its limit most of the time, the lease is contended, and the
/// 2 GiB cgroup runs out of headroom (pressure) while some workers also
/// pass the hard ceiling, so both emergency exits fire.
const CONTENDED: &[&str] = &[
    "fleet.leak.distribution=constant",
    "fleet.leak.mean_mb_per_request=0.5",
    "workload.profile=constant",
    "workload.rps=6",
    "run.duration_h=6",
    "policy.busy_deferral=false",
];

/// Recycles per sliding hour never exceed 3600 / TTL (lease acquisitions
/// are at least one TTL apart) plus the bypasses recorded in that hour.
#[test]
fn a_lease_bounds_rate_only_via_its_ttl_plus_bypasses() {
    SEEDS
        .iter()
        .for_each(|&seed| a_lease_bounds_rate_only_via_its_ttl_plus_bypasses_on(seed));
}

fn a_lease_bounds_rate_only_via_its_ttl_plus_bypasses_on(seed: u64) {
    let ttl = 120.0;
    let per_hour = (3600.0 / ttl) as usize;
    let mut rec = Recorder::default();
    let s = check_with(CONTENDED, seed, &mut rec);
    let r = &rec.recycles;
    assert_eq!(r.len() as u64, s.recycles);
    let count = |o: LeaseOutcome| r.iter().filter(|x| x.lease == o).count() as u64;
    assert_eq!(count(LeaseOutcome::Acquired), s.count("lease_acquired"));
    assert_eq!(
        count(LeaseOutcome::BypassedPressure),
        s.count("lease_bypass_pressure")
    );
    assert_eq!(
        count(LeaseOutcome::BypassedHardCeiling),
        s.count("lease_bypass_hard_ceiling")
    );
    assert_eq!(
        s.recycles,
        s.count("lease_acquired")
            + s.count("lease_bypass_pressure")
            + s.count("lease_bypass_hard_ceiling")
    );
    // Both exits fire, and the lease also holds: the bound is exercised.
    assert!(s.count("lease_bypass_pressure") > 0 && s.count("lease_bypass_hard_ceiling") > 0);
    assert!(s.count("holds_lease_held") > 0);
    // Every window [t, t + 1 h) that starts at a recycle (the windows with
    // the most recycles start at one).
    let mut max_acquired = 0;
    for (i, start) in r.iter().enumerate() {
        let window: Vec<_> = r[i..]
            .iter()
            .take_while(|x| x.t_s < start.t_s + 3600.0)
            .collect();
        let acquired = window
            .iter()
            .filter(|x| x.lease == LeaseOutcome::Acquired)
            .count();
        let bypasses = window
            .iter()
            .filter(|x| {
                matches!(
                    x.lease,
                    LeaseOutcome::BypassedPressure | LeaseOutcome::BypassedHardCeiling
                )
            })
            .count();
        assert!(acquired <= per_hour, "t={}: {acquired} acquired", start.t_s);
        assert!(window.len() <= per_hour + bypasses);
        max_acquired = max_acquired.max(acquired);
    }
    // Saturated: the lease, not the traffic, is what bounds acquisitions
    // (each waits for the first sample after the TTL, so a few short of 30).
    assert!(max_acquired >= 25, "max acquired per hour {max_acquired}");
    assert!(
        s.peak_hour_recycles
            <= per_hour as u64
                + s.count("lease_bypass_pressure")
                + s.count("lease_bypass_hard_ceiling")
    );
    eprintln!(
        "peak hour {} recycles, max {max_acquired} acquired in an hour, {} + {} bypasses",
        s.peak_hour_recycles,
        s.count("lease_bypass_pressure"),
        s.count("lease_bypass_hard_ceiling")
    );
}

/// Seed 002: two instances under pressure both bypass the lease and
/// recycle seconds apart (observed 7, 13 and 17 s).
#[test]
fn pressure_bypasses_put_cross_instance_recycles_seconds_apart() {
    SEEDS
        .iter()
        .for_each(|&seed| pressure_bypasses_put_cross_instance_recycles_seconds_apart_on(seed));
}

fn pressure_bypasses_put_cross_instance_recycles_seconds_apart_on(seed: u64) {
    let mut rec = Recorder::default();
    let s = check_with(CONTENDED, seed, &mut rec);
    let close: Vec<(f64, f64)> = rec
        .recycles
        .windows(2)
        .filter(|p| {
            p[0].instance != p[1].instance
                && p[1].t_s - p[0].t_s < 20.0
                && p[1].lease == LeaseOutcome::BypassedPressure
        })
        .map(|p| (p[0].t_s, p[1].t_s - p[0].t_s))
        .collect();
    assert!(
        !close.is_empty(),
        "no cross-instance gap < 20 s by pressure"
    );
    for w in rec.recycles.windows(2) {
        if w[1].lease == LeaseOutcome::BypassedPressure {
            assert!(w[1].pressure, "a pressure bypass without pressure");
        }
    }
    // Pressure is instance-wide memory, not a tweaked threshold: the
    // default floor (350 MB) against the default 2 GiB cgroup.
    assert!(s.pressure_recycles > 0);
    eprintln!(
        "{} cross-instance pressure-bypass gaps < 20 s, e.g. {:?}",
        close.len(),
        &close[..close.len().min(3)]
    );
}

/// A lease bounds concurrency, not rate; without it only the per-instance
/// cooldown spaces recycles: 2 instances x 3600 / (120 s + a sample) is
/// well over 30 per hour. The same fleet with the lease on, and neither
/// exit able to fire (no pressure, ceiling out of reach), stays within 30.
#[test]
fn without_the_lease_recycles_exceed_30_per_hour_at_saturation() {
    SEEDS
        .iter()
        .for_each(|&seed| without_the_lease_recycles_exceed_30_per_hour_at_saturation_on(seed));
}

fn without_the_lease_recycles_exceed_30_per_hour_at_saturation_on(seed: u64) {
    let base = with(
        SATURATED,
        &["policy.hard_limit_mb=1000000", "run.duration_h=6"],
    );
    let off = with(&base, &["policy.lease.enabled=false"]);
    let s = check_with(&off, seed, Recorder::default());
    eprintln!(
        "lease off: {:.1}/h, peak hour {}",
        s.recycles_per_hour, s.peak_hour_recycles
    );
    assert_eq!(s.count("lease_acquired"), 0);
    assert!(s.recycles_per_hour > 30.0, "{} /h", s.recycles_per_hour);
    assert!(s.peak_hour_recycles > 30);
    let on = check_with(&base, seed, Recorder::default());
    eprintln!(
        "lease on: {:.1}/h, peak hour {}",
        on.recycles_per_hour, on.peak_hour_recycles
    );
    assert_eq!(
        on.count("lease_bypass_pressure") + on.count("lease_bypass_hard_ceiling"),
        0
    );
    assert!(on.count("holds_lease_held") > 0);
    assert!(on.peak_hour_recycles <= 30);
}
