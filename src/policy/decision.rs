//! Decisions: what the gate pipeline answers, and the labels the
//! `branch` column and the summary counters use. Every hold and every pass
//! names its gate: the seeds lost a day to one label that covered two
//! bypasses.

use super::gates::GateKind;

/// Why a recycle that was asked for did not happen (yet): a gate and
/// one of its hold labels (`GateKind::holds`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Hold {
    pub gate: GateKind,
    index: u8,
}

impl Hold {
    /// The gate's `index`-th hold; a gate names its holds as constants.
    pub const fn new(gate: GateKind, index: u8) -> Hold {
        Hold { gate, index }
    }

    pub fn index(self) -> usize {
        self.index as usize
    }

    pub fn label(self) -> &'static str {
        self.gate.holds()[self.index as usize]
    }

    /// Every hold of every gate, in pipeline order.
    pub fn all() -> impl Iterator<Item = Hold> {
        GateKind::ALL
            .into_iter()
            .flat_map(|g| (0..g.holds().len()).map(move |i| Hold::new(g, i as u8)))
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
    items: [(GateKind, Pass); GateKind::COUNT],
    len: u8,
}

impl Default for Passes {
    fn default() -> Self {
        Passes {
            items: [(GateKind::Cooldown, Pass::Open); GateKind::COUNT],
            len: 0,
        }
    }
}

impl Passes {
    pub(crate) fn push(&mut self, g: GateKind, p: Pass) {
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
    g.pass_label(p)
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
