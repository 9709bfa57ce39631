//! Gates: what may hold a worker that wants to recycle.
//!
//! The seeds' decision core is the pipeline cooldown -> busy deferral ->
//! lease, with the lease's two exits (DOMAIN.md, "The recycler"):
//!
//! ```text
//! pressure = headroom_mb < min_headroom_mb
//! effective_cooldown = pressure_cooldown_s if pressure else cooldown_s
//! if last_recycle_age_s < effective_cooldown: hold        # before the ceiling check
//! if not pressure and rps > busy_rps and over_limit_age_s < defer_max_s
//!    and rss < hard_limit_mb: defer                        # the ceiling skips only this
//! lease = try_acquire(ttl)
//! if not lease: allow only if pressure or rss >= hard_limit_mb
//! ```
//!
//! The rate gates of the seeds' fix 3 (token bucket, trailing-window cap,
//! capacity floor) slot in before the lease with the same exits. Every
//! outcome names its gate and branch: the seeds lost a day to one label
//! that covered two bypasses.

/// Everything the gates read, measured when the worker asks.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct View {
    pub rss_mb: f64,
    pub hard_limit_mb: f64,
    /// Instance-wide: container limit minus cgroup usage.
    pub headroom_mb: f64,
    /// Age of the instance's cooldown stamp; `None` before its first recycle.
    pub last_recycle_age_s: Option<f64>,
    /// Instance arrival rate over the trailing busy window.
    pub instance_rps: f64,
    /// Time since the worker first asked (first sample over its limit).
    pub over_limit_age_s: f64,
    /// Time since this worker was forked.
    pub worker_age_s: f64,
    /// Whether the fleet lease could be taken now.
    pub lease_free: bool,
    /// Whether the fleet token bucket holds a whole token now.
    pub bucket_has_token: bool,
    /// Fleet recycles in the cap's trailing window, this one excluded.
    pub window_count: u32,
    /// Fleet serving workers if this worker stops serving.
    pub serving_after: u32,
}

/// Which emergency exits a gate honours, checked in this order.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Exits {
    pub pressure: bool,
    pub hard_ceiling: bool,
}

impl Exits {
    pub const BOTH: Exits = Exits {
        pressure: true,
        hard_ceiling: true,
    };
}

#[derive(Clone, Debug, PartialEq)]
pub enum Gate {
    /// Per-instance stamp; runs before any ceiling check. With
    /// `escalate_on_ceiling` (the seeds' fix 1) a worker at or over the hard
    /// ceiling gets the pressure cooldown.
    Cooldown {
        cooldown_s: f64,
        pressure_cooldown_s: f64,
        escalate_on_ceiling: bool,
    },
    /// Hold while the instance is busy, up to `defer_max_s`; skipped under
    /// pressure or at the hard ceiling (the seeds' formula).
    BusyDeferral { busy_rps: f64, defer_max_s: f64 },
    /// A worker younger than this is not recycled (uWSGI
    /// `min-worker-lifetime`): a per-worker cooldown, no exits.
    MinAge { min_age_s: f64 },
    /// At most `rate_per_hour` recycles per hour fleet-wide, `burst` at once.
    TokenBucket { exits: Exits },
    /// At most `max_recycles` fleet-wide in any trailing window.
    WindowCap { max_recycles: u32, exits: Exits },
    /// Refuse while fleet serving workers would drop below `min_serving`
    /// (a PodDisruptionBudget's minAvailable).
    CapacityFloor { min_serving: u32, exits: Exits },
    /// A fleet lease held for its TTL (the seeds' valkey lease).
    Lease { exits: Exits },
}

pub use super::decision::{Decision, Hold, Pass, Passes, Verdict};

/// The gates, for per-gate counters and labels.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum GateKind {
    Cooldown,
    MinAge,
    BusyDeferral,
    TokenBucket,
    WindowCap,
    CapacityFloor,
    Lease,
}

impl GateKind {
    pub const ALL: [GateKind; 7] = [
        GateKind::Cooldown,
        GateKind::MinAge,
        GateKind::BusyDeferral,
        GateKind::TokenBucket,
        GateKind::WindowCap,
        GateKind::CapacityFloor,
        GateKind::Lease,
    ];
}

/// What a single gate says before exits are considered.
enum Says {
    Open,
    Holds(Hold),
}

impl Gate {
    pub fn kind(&self) -> GateKind {
        match self {
            Gate::Cooldown { .. } => GateKind::Cooldown,
            Gate::BusyDeferral { .. } => GateKind::BusyDeferral,
            Gate::MinAge { .. } => GateKind::MinAge,
            Gate::TokenBucket { .. } => GateKind::TokenBucket,
            Gate::WindowCap { .. } => GateKind::WindowCap,
            Gate::CapacityFloor { .. } => GateKind::CapacityFloor,
            Gate::Lease { .. } => GateKind::Lease,
        }
    }

    fn exits(&self) -> Exits {
        match self {
            Gate::Cooldown { .. } | Gate::MinAge { .. } | Gate::BusyDeferral { .. } => Exits {
                pressure: false,
                hard_ceiling: false,
            },
            Gate::TokenBucket { exits }
            | Gate::WindowCap { exits, .. }
            | Gate::CapacityFloor { exits, .. }
            | Gate::Lease { exits } => *exits,
        }
    }

    fn says(&self, v: &View, pressure: bool) -> Says {
        let ceiling = v.rss_mb >= v.hard_limit_mb;
        match *self {
            Gate::Cooldown {
                cooldown_s,
                pressure_cooldown_s,
                escalate_on_ceiling,
            } => {
                let Some(age) = v.last_recycle_age_s else {
                    return Says::Open;
                };
                let (limit, hold) = if pressure {
                    (pressure_cooldown_s, Hold::CooldownPressure)
                } else if escalate_on_ceiling && ceiling {
                    (pressure_cooldown_s, Hold::CooldownCeiling)
                } else {
                    (cooldown_s, Hold::Cooldown)
                };
                if age < limit {
                    Says::Holds(hold)
                } else {
                    Says::Open
                }
            }
            Gate::BusyDeferral {
                busy_rps,
                defer_max_s,
            } => {
                if !pressure
                    && v.instance_rps > busy_rps
                    && v.over_limit_age_s < defer_max_s
                    && !ceiling
                {
                    Says::Holds(Hold::BusyDeferral)
                } else {
                    Says::Open
                }
            }
            Gate::MinAge { min_age_s } => open_if(v.worker_age_s >= min_age_s, Hold::TooYoung),
            Gate::TokenBucket { .. } => open_if(v.bucket_has_token, Hold::BucketEmpty),
            Gate::WindowCap { max_recycles, .. } => {
                open_if(v.window_count < max_recycles, Hold::WindowFull)
            }
            Gate::CapacityFloor { min_serving, .. } => {
                open_if(v.serving_after >= min_serving, Hold::BelowFloor)
            }
            Gate::Lease { .. } => open_if(v.lease_free, Hold::LeaseHeld),
        }
    }
}

fn open_if(open: bool, hold: Hold) -> Says {
    if open { Says::Open } else { Says::Holds(hold) }
}

/// The ordered gates of a policy and the pressure threshold they share.
#[derive(Clone, Debug, PartialEq)]
pub struct Pipeline {
    pub gates: Vec<Gate>,
    pub min_headroom_mb: f64,
}

impl Pipeline {
    pub fn pressure(&self, v: &View) -> bool {
        v.headroom_mb < self.min_headroom_mb
    }

    /// Runs the gates in order; the first that holds, and whose exits do
    /// not apply, holds the worker.
    pub fn decide(&self, v: &View) -> Decision {
        let pressure = self.pressure(v);
        let mut passes = Passes::default();
        for gate in &self.gates {
            let pass = match gate.says(v, pressure) {
                Says::Open => Pass::Open,
                Says::Holds(hold) => {
                    let exits = gate.exits();
                    if exits.pressure && pressure {
                        Pass::ExitPressure
                    } else if exits.hard_ceiling && v.rss_mb >= v.hard_limit_mb {
                        Pass::ExitHardCeiling
                    } else {
                        return Decision {
                            verdict: Verdict::Hold(hold),
                            pressure,
                            passes,
                        };
                    }
                }
            };
            passes.push(gate.kind(), pass);
        }
        Decision {
            verdict: Verdict::Recycle,
            pressure,
            passes,
        }
    }

    pub fn has(&self, kind: GateKind) -> bool {
        self.gates.iter().any(|g| g.kind() == kind)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The seeds' deployed recycler.
    fn seeds() -> Pipeline {
        Pipeline {
            gates: vec![
                Gate::Cooldown {
                    cooldown_s: 120.0,
                    pressure_cooldown_s: 30.0,
                    escalate_on_ceiling: false,
                },
                Gate::BusyDeferral {
                    busy_rps: 5.0,
                    defer_max_s: 60.0,
                },
                Gate::Lease { exits: Exits::BOTH },
            ],
            min_headroom_mb: 350.0,
        }
    }

    fn view() -> View {
        View {
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

    fn branch(p: &Pipeline, v: View) -> String {
        p.decide(&v).branch()
    }

    /// Table of (what changes, expected branch): each row one branch of the seeds' core.
    #[test]
    fn every_seeds_branch_is_named() {
        let p = seeds();
        let cases: Vec<(&str, View, &str)> = vec![
            ("free lease", view(), "lease_acquired"),
            (
                "cooldown",
                View {
                    last_recycle_age_s: Some(119.9),
                    ..view()
                },
                "cooldown",
            ),
            (
                "cooldown holds past the hard ceiling",
                View {
                    last_recycle_age_s: Some(100.0),
                    rss_mb: 710.0,
                    ..view()
                },
                "cooldown",
            ),
            (
                "pressure shortens the cooldown",
                View {
                    last_recycle_age_s: Some(31.0),
                    headroom_mb: 251.0,
                    ..view()
                },
                "lease_acquired",
            ),
            (
                "pressure cooldown",
                View {
                    last_recycle_age_s: Some(29.0),
                    headroom_mb: 251.0,
                    ..view()
                },
                "cooldown_pressure",
            ),
            (
                "busy deferral",
                View {
                    instance_rps: 6.0,
                    over_limit_age_s: 10.0,
                    ..view()
                },
                "busy_deferral",
            ),
            (
                "busy deferral expires",
                View {
                    instance_rps: 6.0,
                    over_limit_age_s: 60.0,
                    ..view()
                },
                "lease_acquired",
            ),
            (
                "the ceiling skips busy deferral",
                View {
                    instance_rps: 6.0,
                    rss_mb: 650.0,
                    ..view()
                },
                "lease_acquired",
            ),
            (
                "lease held",
                View {
                    lease_free: false,
                    ..view()
                },
                "lease_held",
            ),
            (
                "pressure bypass",
                View {
                    lease_free: false,
                    headroom_mb: 300.0,
                    ..view()
                },
                "bypass_pressure",
            ),
            (
                "ceiling bypass",
                View {
                    lease_free: false,
                    rss_mb: 650.0,
                    ..view()
                },
                "bypass_hard_ceiling",
            ),
            (
                "both exits: pressure is checked first",
                View {
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
                View {
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
        p.gates[0] = Gate::Cooldown {
            cooldown_s: 120.0,
            pressure_cooldown_s: 30.0,
            escalate_on_ceiling: true,
        };
        let over = View {
            rss_mb: 660.0,
            ..view()
        };
        assert_eq!(
            branch(
                &p,
                View {
                    last_recycle_age_s: Some(29.0),
                    ..over
                }
            ),
            "cooldown_ceiling"
        );
        assert_eq!(
            branch(
                &p,
                View {
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
                View {
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
            gates: vec![Gate::MinAge { min_age_s: 60.0 }],
            min_headroom_mb: 350.0,
        };
        let young = View {
            worker_age_s: 59.0,
            rss_mb: 700.0,
            headroom_mb: 10.0,
            ..view()
        };
        assert_eq!(branch(&p, young), "too_young");
        assert_eq!(
            branch(
                &p,
                View {
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
                Gate::TokenBucket { exits },
                Gate::WindowCap {
                    max_recycles: 3,
                    exits,
                },
                Gate::CapacityFloor {
                    min_serving: 5,
                    exits,
                },
                Gate::Lease { exits: Exits::BOTH },
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
                View {
                    bucket_has_token: false,
                    ..view()
                }
            ),
            "bucket_empty"
        );
        assert_eq!(
            branch(
                &p,
                View {
                    window_count: 3,
                    ..view()
                }
            ),
            "window_full"
        );
        assert_eq!(
            branch(
                &p,
                View {
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
                View {
                    bucket_has_token: false,
                    rss_mb: 700.0,
                    ..view()
                }
            ),
            "bucket_empty"
        );
        let d = p.decide(&View {
            bucket_has_token: false,
            headroom_mb: 100.0,
            lease_free: false,
            ..view()
        });
        assert_eq!(d.verdict, Verdict::Recycle);
        assert_eq!(d.passes.of(GateKind::TokenBucket), Some(Pass::ExitPressure));
        assert_eq!(
            d.branch(),
            "bucket_bypass_pressure+window_ok+floor_ok+bypass_pressure"
        );
    }
}
