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
//!
//! **A gate is one file and one line.** Each file here holds one gate: its
//! settings (the variant's payload), its fleet state if it has one (the
//! lease, the bucket), its hold and pass labels, the summary counters it
//! keeps, its analytic ceiling for `fleetsim saturate`, and how it is read
//! from the `[policy]` table (`Rule`). The `gates!` list below makes the
//! `Gate` variant, its `GateKind`, its `State`, `GateKind::ALL` (in
//! pipeline order: the order the scenario builds them in) and every
//! dispatch from that one line, so no list can forget a gate.

use crate::engine::SimTime;
use crate::scenario::{Scenario, raw::RawPolicy};

pub mod busy;
pub mod capacity_floor;
pub mod cooldown;
pub mod lease;
pub mod min_age;
pub mod token_bucket;
pub mod window_cap;

pub use super::decision::{Decision, Hold, Pass, Passes, Verdict};

/// Everything the gates read from the worker and its instance, measured
/// when the worker asks. Fleet state (the lease, the bucket, the window)
/// is each gate's own `State`.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct View {
    pub now: SimTime,
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
    /// Fleet serving workers if this worker stops serving.
    pub serving_after: u32,
}

impl View {
    pub fn at_ceiling(&self) -> bool {
        self.rss_mb >= self.hard_limit_mb
    }
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
    pub const NONE: Exits = Exits {
        pressure: false,
        hard_ceiling: false,
    };
}

/// What a single gate says before exits are considered.
pub enum Says {
    Open,
    Holds(Hold),
}

pub(crate) fn open_if(open: bool, hold: Hold) -> Says {
    if open { Says::Open } else { Says::Holds(hold) }
}

/// A gate's analytic ceiling at saturation (`whatif::ceilings`): recycles
/// per hour fleet-wide (`None`: no rate bound), with its escalation, and
/// how it was derived.
pub type Figures = (Option<f64>, Option<f64>, String);

/// A validation error: the dotted key and what is wrong.
pub type Invalid = (String, String);

/// What every gate provides. Labels and counters are per kind (associated
/// items); settings, state and decisions per gate.
pub trait Rule: Sized {
    /// Its name in `fleetsim saturate`'s table.
    const NAME: &'static str;
    /// Its hold labels (the `branch` column, `holds_<label>` in summary.json).
    const HOLDS: &'static [&'static str];
    /// The summary counters it keeps of recycles that passed it, in order:
    /// (how it passed, `summary.json` key). Every exit it can take is here.
    const COUNTED: &'static [(Pass, &'static str)];
    /// Its fleet state (`()` for none).
    type State: Clone + std::fmt::Debug;
    fn state(&self) -> Self::State;
    /// Brings the state up to `now` (a bucket refills, a window forgets):
    /// run for every gate at every decision, before any gate answers.
    fn refresh(_s: &mut Self::State, _now: SimTime) {}
    fn says(&self, v: &View, pressure: bool, s: &mut Self::State) -> Says;
    fn exits(&self) -> Exits {
        Exits::NONE
    }
    /// Applies a recycle that passed this gate (take the lease, spend a token).
    fn grant(&self, _pass: Pass, _s: &mut Self::State, _now: SimTime, _worker: u32) {}
    /// The worker holding the gate at `now`, if it is held by one (the lease).
    fn holder(_s: &Self::State, _now: SimTime) -> Option<u32> {
        None
    }
    /// The `branch` label of a pass; `None` when the pass is silent.
    fn pass_label(p: Pass) -> Option<&'static str>;
    fn ceiling(&self, sc: &Scenario) -> Figures;
    /// The gate from the `[policy]` table, `None` when it is off.
    fn from_raw(p: &RawPolicy) -> Result<Option<Self>, Invalid>;
}

/// The most hold labels one gate may have (a compile-time check below).
pub const MAX_HOLDS: usize = 4;

macro_rules! gates {
    ($($(#[$doc:meta])* $variant:ident($module:ident::$ty:ident),)*) => {
        /// A gate with its settings.
        #[derive(Clone, Debug, PartialEq)]
        pub enum Gate {
            $($(#[$doc])* $variant($module::$ty),)*
        }

        /// The gates, for per-gate counters and labels.
        #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
        pub enum GateKind {
            $($variant,)*
        }

        /// A gate's fleet state, owned by the event loop.
        #[derive(Clone, Debug)]
        pub enum State {
            $($variant(<$module::$ty as Rule>::State),)*
        }

        impl GateKind {
            pub const COUNT: usize = [$(GateKind::$variant,)*].len();
            /// Every gate, in pipeline order.
            pub const ALL: [GateKind; GateKind::COUNT] = [$(GateKind::$variant,)*];

            pub fn name(self) -> &'static str {
                match self { $(GateKind::$variant => <$module::$ty as Rule>::NAME,)* }
            }

            pub fn holds(self) -> &'static [&'static str] {
                match self { $(GateKind::$variant => <$module::$ty as Rule>::HOLDS,)* }
            }

            pub fn counted(self) -> &'static [(Pass, &'static str)] {
                match self { $(GateKind::$variant => <$module::$ty as Rule>::COUNTED,)* }
            }

            pub fn pass_label(self, p: Pass) -> Option<&'static str> {
                match self { $(GateKind::$variant => <$module::$ty as Rule>::pass_label(p),)* }
            }

            fn build(self, p: &RawPolicy) -> Result<Option<Gate>, Invalid> {
                match self {
                    $(GateKind::$variant => Ok(<$module::$ty>::from_raw(p)?.map(Gate::$variant)),)*
                }
            }
        }

        const _: () = {
            $(assert!(<$module::$ty as Rule>::HOLDS.len() <= MAX_HOLDS);)*
        };

        impl Gate {
            pub fn kind(&self) -> GateKind {
                match self { $(Gate::$variant(_) => GateKind::$variant,)* }
            }

            pub fn state(&self) -> State {
                match self { $(Gate::$variant(g) => State::$variant(g.state()),)* }
            }

            fn exits(&self) -> Exits {
                match self { $(Gate::$variant(g) => g.exits(),)* }
            }

            pub fn ceiling(&self, sc: &Scenario) -> Figures {
                match self { $(Gate::$variant(g) => g.ceiling(sc),)* }
            }
        }

        impl State {
            fn refresh(&mut self, now: SimTime) {
                match self { $(State::$variant(s) => <$module::$ty as Rule>::refresh(s, now),)* }
            }

            fn holder(&self, now: SimTime) -> Option<u32> {
                match self { $(State::$variant(s) => <$module::$ty as Rule>::holder(s, now),)* }
            }
        }

        fn says(g: &Gate, v: &View, pressure: bool, s: &mut State) -> Says {
            match (g, s) {
                $((Gate::$variant(g), State::$variant(s)) => g.says(v, pressure, s),)*
                #[allow(unreachable_patterns)]
                _ => unreachable!("a gate is given its own state"),
            }
        }

        fn grant(g: &Gate, pass: Pass, s: &mut State, now: SimTime, worker: u32) {
            match (g, s) {
                $((Gate::$variant(g), State::$variant(s)) => g.grant(pass, s, now, worker),)*
                #[allow(unreachable_patterns)]
                _ => unreachable!("a gate is given its own state"),
            }
        }
    };
}

// The pipeline order: a scenario's gates run in this order.
gates! {
    /// Per-instance stamp; runs before any ceiling check.
    Cooldown(cooldown::Cooldown),
    /// uWSGI `min-worker-lifetime`: a per-worker cooldown, no exits.
    MinAge(min_age::MinAge),
    /// Hold while the instance is busy; skipped under pressure or at the ceiling.
    BusyDeferral(busy::BusyDeferral),
    /// At most `rate_per_hour` recycles per hour fleet-wide, `burst` at once.
    TokenBucket(token_bucket::TokenBucket),
    /// At most `max_recycles` fleet-wide in any trailing window.
    WindowCap(window_cap::WindowCap),
    /// Refuse while fleet serving workers would drop below a floor.
    CapacityFloor(capacity_floor::CapacityFloor),
    /// A fleet lease held for its TTL (the seeds' valkey lease).
    Lease(lease::Lease),
}

impl GateKind {
    /// The order of the pass counters in `summary.json`: the lease's first
    /// (the seeds' gate, whose counters came first), then pipeline order.
    pub fn counter_order() -> impl Iterator<Item = GateKind> {
        let lease = std::iter::once(GateKind::Lease);
        lease.chain(GateKind::ALL.into_iter().filter(|k| *k != GateKind::Lease))
    }
}

/// The gates of a `[policy]` table, in pipeline order.
pub fn from_raw(p: &RawPolicy) -> Result<Vec<Gate>, Invalid> {
    let mut gates = Vec::new();
    for kind in GateKind::ALL {
        gates.extend(kind.build(p)?);
    }
    Ok(gates)
}

/// The ordered gates of a policy and the pressure threshold they share.
#[derive(Clone, Debug, PartialEq)]
pub struct Pipeline {
    pub gates: Vec<Gate>,
    pub min_headroom_mb: f64,
}

/// The fleet state of a pipeline's gates, one per gate, in its order.
#[derive(Clone, Debug)]
pub struct States(Vec<State>);

impl States {
    /// The workers holding a gate now (at most one per gate).
    pub fn holders(&self, now: SimTime) -> impl Iterator<Item = u32> + '_ {
        self.0.iter().filter_map(move |s| s.holder(now))
    }
}

impl Pipeline {
    pub fn pressure(&self, v: &View) -> bool {
        v.headroom_mb < self.min_headroom_mb
    }

    /// Fresh state for every gate (time zero: a full bucket, a free lease).
    pub fn states(&self) -> States {
        States(self.gates.iter().map(Gate::state).collect())
    }

    /// Runs the gates in order; the first that holds, and whose exits do
    /// not apply, holds the worker. `states` is only brought up to `now`.
    pub fn decide(&self, v: &View, states: &mut States) -> Decision {
        for s in &mut states.0 {
            s.refresh(v.now);
        }
        let pressure = self.pressure(v);
        let mut passes = Passes::default();
        for (gate, state) in self.gates.iter().zip(&mut states.0) {
            let pass = match says(gate, v, pressure, state) {
                Says::Open => Pass::Open,
                Says::Holds(hold) => {
                    let exits = gate.exits();
                    if exits.pressure && pressure {
                        Pass::ExitPressure
                    } else if exits.hard_ceiling && v.at_ceiling() {
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

    /// Applies a recycle `decide` allowed: every gate it passed grants it.
    pub fn grant(&self, d: &Decision, states: &mut States, now: SimTime, worker: u32) {
        debug_assert_eq!(d.verdict, Verdict::Recycle);
        let passed = self.gates.iter().zip(&mut states.0).zip(d.passes.iter());
        for ((gate, state), (kind, pass)) in passed {
            debug_assert_eq!(gate.kind(), kind);
            grant(gate, pass, state, now, worker);
        }
    }

    pub fn has(&self, kind: GateKind) -> bool {
        self.gates.iter().any(|g| g.kind() == kind)
    }

    /// The fleet lease's TTL, when the policy has a lease.
    pub fn lease_ttl(&self) -> Option<SimTime> {
        self.gates.iter().find_map(|g| match g {
            Gate::Lease(l) => Some(l.ttl),
            _ => None,
        })
    }

    /// The per-instance cooldown, when the policy has one.
    pub fn cooldown(&self) -> Option<&cooldown::Cooldown> {
        self.gates.iter().find_map(|g| match g {
            Gate::Cooldown(c) => Some(c),
            _ => None,
        })
    }
}

#[cfg(test)]
mod tests;
