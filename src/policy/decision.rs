//! Decisions: what the gate pipeline answers, and the labels the
//! `branch` column and the summary counters use. Every hold and every pass
//! names its gate: the seeds lost a day to one label that covered two
//! bypasses.

use super::gate::GateKind;

/// Why a recycle that was asked for did not happen (yet).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Hold {
    Cooldown,
    CooldownPressure,
    /// Inside the pressure cooldown that the ceiling escalation applies.
    CooldownCeiling,
    /// The worker is younger than the minimum lifetime.
    TooYoung,
    BusyDeferral,
    BucketEmpty,
    WindowFull,
    BelowFloor,
    LeaseHeld,
}

impl Hold {
    pub const ALL: [Hold; 9] = [
        Hold::Cooldown,
        Hold::CooldownPressure,
        Hold::CooldownCeiling,
        Hold::TooYoung,
        Hold::BusyDeferral,
        Hold::BucketEmpty,
        Hold::WindowFull,
        Hold::BelowFloor,
        Hold::LeaseHeld,
    ];

    pub fn label(self) -> &'static str {
        match self {
            Hold::Cooldown => "cooldown",
            Hold::CooldownPressure => "cooldown_pressure",
            Hold::CooldownCeiling => "cooldown_ceiling",
            Hold::TooYoung => "too_young",
            Hold::BusyDeferral => "busy_deferral",
            Hold::BucketEmpty => "bucket_empty",
            Hold::WindowFull => "window_full",
            Hold::BelowFloor => "below_floor",
            Hold::LeaseHeld => "lease_held",
        }
    }
}

/// How a worker got through one gate.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Pass {
    /// The gate was open (for the lease: acquired; the bucket: a token).
    Open,
    /// The gate would hold; the pressure exit let the worker through.
    ExitPressure,
    /// The gate would hold; the hard-ceiling exit let the worker through.
    ExitHardCeiling,
}

/// The gates a worker passed, in order, without allocating.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Passes {
    items: [(GateKind, Pass); GateKind::ALL.len()],
    len: u8,
}

impl Default for Passes {
    fn default() -> Self {
        Passes {
            items: [(GateKind::Cooldown, Pass::Open); GateKind::ALL.len()],
            len: 0,
        }
    }
}

impl Passes {
    pub(super) fn push(&mut self, g: GateKind, p: Pass) {
        self.items[self.len as usize] = (g, p);
        self.len += 1;
    }

    pub fn iter(&self) -> impl Iterator<Item = (GateKind, Pass)> + '_ {
        self.items[..self.len as usize].iter().copied()
    }

    pub fn of(&self, g: GateKind) -> Option<Pass> {
        self.iter().find(|(k, _)| *k == g).map(|(_, p)| p)
    }

    /// The branch label: each stateful gate's outcome, `+`-joined, e.g.
    /// `bucket_token+lease_acquired` or `bypass_pressure`; `ungated` if none.
    pub fn label(&self) -> String {
        let parts: Vec<&str> = self.iter().filter_map(|(g, p)| pass_label(g, p)).collect();
        if parts.is_empty() {
            "ungated".into()
        } else {
            parts.join("+")
        }
    }
}

fn pass_label(g: GateKind, p: Pass) -> Option<&'static str> {
    use GateKind as G;
    use Pass as P;
    Some(match (g, p) {
        (G::Cooldown | G::MinAge | G::BusyDeferral, P::Open) => return None,
        (G::Cooldown | G::MinAge, _) => unreachable!("cooldowns have no exits"),
        (G::BusyDeferral, _) => unreachable!("busy deferral skips, it has no exits"),
        // The lease keeps the seeds' labels.
        (G::Lease, P::Open) => "lease_acquired",
        (G::Lease, P::ExitPressure) => "bypass_pressure",
        (G::Lease, P::ExitHardCeiling) => "bypass_hard_ceiling",
        (G::TokenBucket, P::Open) => "bucket_token",
        (G::TokenBucket, P::ExitPressure) => "bucket_bypass_pressure",
        (G::TokenBucket, P::ExitHardCeiling) => "bucket_bypass_hard_ceiling",
        (G::WindowCap, P::Open) => "window_ok",
        (G::WindowCap, P::ExitPressure) => "window_bypass_pressure",
        (G::WindowCap, P::ExitHardCeiling) => "window_bypass_hard_ceiling",
        (G::CapacityFloor, P::Open) => "floor_ok",
        (G::CapacityFloor, P::ExitPressure) => "floor_bypass_pressure",
        (G::CapacityFloor, P::ExitHardCeiling) => "floor_bypass_hard_ceiling",
    })
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Verdict {
    Recycle,
    Hold(Hold),
}

/// The answer: recycle or hold, the pressure reading, and every gate passed.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Decision {
    pub verdict: Verdict,
    pub pressure: bool,
    pub passes: Passes,
}

impl Decision {
    /// The `branch` column: the hold's label, or the passes' label.
    pub fn branch(&self) -> String {
        self.to_string()
    }
}

/// The `branch` label, written without allocating (decisions are frequent
/// when a busy deferral holds a worker at every sample).
impl std::fmt::Display for Decision {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self.verdict {
            Verdict::Hold(h) => f.write_str(h.label()),
            Verdict::Recycle => {
                let mut parts = self.passes.iter().filter_map(|(g, p)| pass_label(g, p));
                match parts.next() {
                    None => f.write_str("ungated"),
                    Some(first) => {
                        f.write_str(first)?;
                        parts.try_for_each(|p| write!(f, "+{p}"))
                    }
                }
            }
        }
    }
}
