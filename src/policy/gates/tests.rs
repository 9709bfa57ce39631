//! The gate pipeline's branches, table by table, and the checks that
//! every gate is in every list.

use super::*;
use std::collections::BTreeSet;

/// A view plus the fleet state the old single `View` carried: whether the
/// lease is free, the bucket has a token, and the window's count.
#[derive(Clone, Copy, Debug)]
struct V {
    rss_mb: f64,
    hard_limit_mb: f64,
    headroom_mb: f64,
    last_recycle_age_s: Option<f64>,
    instance_rps: f64,
    over_limit_age_s: f64,
    worker_age_s: f64,
    lease_free: bool,
    bucket_has_token: bool,
    window_count: u32,
    serving_after: u32,
}

/// Sets the gates' states up as `v` says, then decides.
fn decide(p: &Pipeline, v: V) -> Decision {
    let now = SimTime::from_secs(10_000);
    let mut states = p.states();
    for (g, s) in p.gates.iter().zip(&mut states.0) {
        match (g, s) {
            (Gate::Lease(l), State::Lease(s)) if !v.lease_free => {
                assert!(s.try_acquire(now, l.ttl, 99));
            }
            (Gate::TokenBucket(_), State::TokenBucket(b)) if !v.bucket_has_token => {
                while b.has_token(now) {
                    b.take(now);
                }
            }
            (Gate::WindowCap(_), State::WindowCap(w)) => {
                for _ in 0..v.window_count {
                    w.record(now);
                }
            }
            _ => {}
        }
    }
    let view = View {
        now,
        rss_mb: v.rss_mb,
        hard_limit_mb: v.hard_limit_mb,
        headroom_mb: v.headroom_mb,
        last_recycle_age_s: v.last_recycle_age_s,
        instance_rps: v.instance_rps,
        over_limit_age_s: v.over_limit_age_s,
        worker_age_s: v.worker_age_s,
        serving_after: v.serving_after,
    };
    p.decide(&view, &mut states)
}

/// The seeds' deployed recycler.
fn seeds() -> Pipeline {
    Pipeline {
        gates: vec![
            Gate::Cooldown(cooldown::Cooldown {
                cooldown_s: 120.0,
                pressure_cooldown_s: 30.0,
                escalate_on_ceiling: false,
            }),
            Gate::BusyDeferral(busy::BusyDeferral {
                busy_rps: 5.0,
                defer_max_s: 60.0,
            }),
            Gate::Lease(lease::Lease {
                ttl: SimTime::from_secs(120),
                exits: Exits::BOTH,
            }),
        ],
        min_headroom_mb: 350.0,
    }
}

fn view() -> V {
    V {
        rss_mb: 520.0,
        hard_limit_mb: 650.0,
        headroom_mb: 800.0,
        last_recycle_age_s: None,
        instance_rps: 1.0,
        over_limit_age_s: 0.0,
        worker_age_s: 1000.0,
        lease_free: true,
        bucket_has_token: true,
        window_count: 0,
        serving_after: 5,
    }
}

fn branch(p: &Pipeline, v: V) -> String {
    decide(p, v).branch()
}

/// Table of (what changes, expected branch): each row one branch of the seeds' core.
#[test]
fn every_seeds_branch_is_named() {
    let p = seeds();
    let cases: Vec<(&str, V, &str)> = vec![
        ("free lease", view(), "lease_acquired"),
        (
            "cooldown",
            V {
                last_recycle_age_s: Some(119.9),
                ..view()
            },
            "cooldown",
        ),
        (
            "cooldown holds past the hard ceiling",
            V {
                last_recycle_age_s: Some(100.0),
                rss_mb: 710.0,
                ..view()
            },
            "cooldown",
        ),
        (
            "pressure shortens the cooldown",
            V {
                last_recycle_age_s: Some(31.0),
                headroom_mb: 251.0,
                ..view()
            },
            "lease_acquired",
        ),
        (
            "pressure cooldown",
            V {
                last_recycle_age_s: Some(29.0),
                headroom_mb: 251.0,
                ..view()
            },
            "cooldown_pressure",
        ),
        (
            "busy deferral",
            V {
                instance_rps: 6.0,
                over_limit_age_s: 10.0,
                ..view()
            },
            "busy_deferral",
        ),
        (
            "busy deferral expires",
            V {
                instance_rps: 6.0,
                over_limit_age_s: 60.0,
                ..view()
            },
            "lease_acquired",
        ),
        (
            "the ceiling skips busy deferral",
            V {
                instance_rps: 6.0,
                rss_mb: 650.0,
                ..view()
            },
            "lease_acquired",
        ),
        (
            "lease held",
            V {
                lease_free: false,
                ..view()
            },
            "lease_held",
        ),
        (
            "pressure bypass",
            V {
                lease_free: false,
                headroom_mb: 300.0,
                ..view()
            },
            "bypass_pressure",
        ),
        (
            "ceiling bypass",
            V {
                lease_free: false,
                rss_mb: 650.0,
                ..view()
            },
            "bypass_hard_ceiling",
        ),
        (
            "both exits: pressure is checked first",
            V {
                lease_free: false,
                rss_mb: 700.0,
                headroom_mb: 200.0,
                ..view()
            },
            "bypass_pressure",
        ),
    ];
    for (name, v, want) in cases {
        assert_eq!(branch(&p, v), want, "{name}");
    }
    let no_lease = Pipeline {
        gates: seeds().gates[..2].to_vec(),
        ..seeds()
    };
    assert_eq!(
        branch(
            &no_lease,
            V {
                lease_free: false,
                ..view()
            }
        ),
        "ungated"
    );
}

#[test]
fn ceiling_escalation_uses_the_pressure_cooldown() {
    let mut p = seeds();
    p.gates[0] = Gate::Cooldown(cooldown::Cooldown {
        cooldown_s: 120.0,
        pressure_cooldown_s: 30.0,
        escalate_on_ceiling: true,
    });
    let over = V {
        rss_mb: 660.0,
        ..view()
    };
    assert_eq!(
        branch(
            &p,
            V {
                last_recycle_age_s: Some(29.0),
                ..over
            }
        ),
        "cooldown_ceiling"
    );
    assert_eq!(
        branch(
            &p,
            V {
                last_recycle_age_s: Some(31.0),
                lease_free: false,
                ..over
            }
        ),
        "bypass_hard_ceiling"
    );
    // Below the ceiling nothing changes.
    assert_eq!(
        branch(
            &p,
            V {
                last_recycle_age_s: Some(31.0),
                ..view()
            }
        ),
        "cooldown"
    );
}

#[test]
fn min_age_holds_young_workers_even_past_the_ceiling() {
    let p = Pipeline {
        gates: vec![Gate::MinAge(min_age::MinAge { min_age_s: 60.0 })],
        min_headroom_mb: 350.0,
    };
    let young = V {
        worker_age_s: 59.0,
        rss_mb: 700.0,
        headroom_mb: 10.0,
        ..view()
    };
    assert_eq!(branch(&p, young), "too_young");
    assert_eq!(
        branch(
            &p,
            V {
                worker_age_s: 60.0,
                ..view()
            }
        ),
        "ungated"
    );
}

#[test]
fn rate_gates_hold_and_exit_by_branch() {
    let exits = Exits {
        pressure: true,
        hard_ceiling: false,
    };
    let p = Pipeline {
        gates: vec![
            Gate::TokenBucket(token_bucket::TokenBucket {
                rate_per_hour: 6.0,
                burst: 2.0,
                exits,
            }),
            Gate::WindowCap(window_cap::WindowCap {
                max_recycles: 3,
                window: SimTime::from_secs(3600),
                exits,
            }),
            Gate::CapacityFloor(capacity_floor::CapacityFloor {
                min_serving: 5,
                exits,
            }),
            Gate::Lease(lease::Lease {
                ttl: SimTime::from_secs(120),
                exits: Exits::BOTH,
            }),
        ],
        min_headroom_mb: 350.0,
    };
    assert_eq!(
        branch(&p, view()),
        "bucket_token+window_ok+floor_ok+lease_acquired"
    );
    assert_eq!(
        branch(
            &p,
            V {
                bucket_has_token: false,
                ..view()
            }
        ),
        "bucket_empty"
    );
    assert_eq!(
        branch(
            &p,
            V {
                window_count: 3,
                ..view()
            }
        ),
        "window_full"
    );
    assert_eq!(
        branch(
            &p,
            V {
                serving_after: 4,
                ..view()
            }
        ),
        "below_floor"
    );
    // This gate's exits exclude the ceiling: it holds a worker over it.
    assert_eq!(
        branch(
            &p,
            V {
                bucket_has_token: false,
                rss_mb: 700.0,
                ..view()
            }
        ),
        "bucket_empty"
    );
    let d = decide(
        &p,
        V {
            bucket_has_token: false,
            headroom_mb: 100.0,
            lease_free: false,
            ..view()
        },
    );
    assert_eq!(d.verdict, Verdict::Recycle);
    assert_eq!(d.passes.of(GateKind::TokenBucket), Some(Pass::ExitPressure));
    assert_eq!(
        d.branch(),
        "bucket_bypass_pressure+window_ok+floor_ok+bypass_pressure"
    );
}

/// The lists the macro derives hold every gate once, in declaration order,
/// and no two labels or counters collide.
#[test]
fn every_gate_is_in_every_list() {
    // An exhaustive match: a new variant fails to compile here until it
    // gets its position, and the position must be its place in `ALL`.
    let position = |k: GateKind| match k {
        GateKind::Cooldown => 0,
        GateKind::MinAge => 1,
        GateKind::BusyDeferral => 2,
        GateKind::TokenBucket => 3,
        GateKind::WindowCap => 4,
        GateKind::CapacityFloor => 5,
        GateKind::Lease => 6,
    };
    for (i, k) in GateKind::ALL.into_iter().enumerate() {
        assert_eq!(position(k), i, "{k:?}");
        assert_eq!(k as usize, i, "{k:?}");
    }
    let mut labels = BTreeSet::new();
    for h in Hold::all() {
        assert!(labels.insert(h.label()), "hold label {} twice", h.label());
    }
    let mut counters = BTreeSet::new();
    for k in GateKind::counter_order() {
        for (pass, key) in k.counted() {
            assert!(counters.insert(*key), "counter {key} twice");
            assert!(k.pass_label(*pass).is_some(), "{k:?} counts a silent pass");
        }
        // Every exit a gate can label is counted apart.
        for pass in [Pass::ExitPressure, Pass::ExitHardCeiling] {
            if k.pass_label(pass).is_some() {
                assert!(
                    k.counted().iter().any(|(p, _)| *p == pass),
                    "{k:?} {pass:?}"
                );
            }
        }
        let names: BTreeSet<_> = GateKind::ALL.iter().map(|k| k.name()).collect();
        assert_eq!(names.len(), GateKind::COUNT);
    }
    assert_eq!(GateKind::counter_order().count(), GateKind::COUNT);
}

/// The shipped default builds the seeds' pipeline from the raw table, in
/// pipeline order.
#[test]
fn the_default_table_builds_the_seeds_pipeline() {
    let gates = from_raw(&RawPolicy::default()).unwrap();
    let kinds: Vec<GateKind> = gates.iter().map(Gate::kind).collect();
    assert_eq!(
        kinds,
        [GateKind::Cooldown, GateKind::BusyDeferral, GateKind::Lease]
    );
}
