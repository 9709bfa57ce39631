//! The fleet's shape as the recording names it: how many instances, and
//! how many workers each, read off the rows' `instance` and `worker` names.
//!
//! A simulated window must have the recording's shape for its statistics
//! to match: a 4 x 4 fleet's day calibrated on the embedded 2 x 3 default
//! failed validation on 5 of 12 rows with nothing saying why. Names are
//! data only where they are stable: an instance is counted when every
//! named instance has events in both halves of the regime (a renamed pod
//! does not), and workers per instance when worker names are reused, as
//! slot names are (`w0`, `w1`... fleetsim's own and most platforms'), at
//! least twice a name on average; a pid per process is not, and says
//! nothing. What is read and differs from the base is set for every
//! simulation, with a note; what cannot be read keeps the base's value.
//! What it cannot know: a slot that never recycled in the window is not
//! named (workers per instance is the most any instance names). Where an
//! instance's named slots recycle very unequally (one of them less than a
//! quarter as often as its busiest sibling: a fixed order of preference,
//! `[fleet] accept = "first"`), a slot fed last may never recycle at all,
//! so fewer names than the base's workers are not read (the base's count
//! stays, with a note); so too where every instance names one slot that
//! recycled again and again (its siblings, if any, never did); more names
//! than the base's always are. Fewer workers keep the base's container
//! (a smaller one invented memory pressure the rows cannot show); more
//! scale the workers' share of it and keep the master's. And a
//! recording of part of a fleet is calibrated as that part, so the
//! fleet-wide gates (lease, bucket) then span fewer instances than the
//! deployed fleet's; the note names the change, and `--scenario` does not
//! override the rows.

use super::setup::Fixed;
use crate::replay::analyse::regimes::RegimeView;
use crate::scenario::Scenario;
use std::collections::BTreeMap;

/// What the rows of one instance name.
#[derive(Default)]
struct Seen<'a> {
    early: bool,
    late: bool,
    recycles: usize,
    /// Recycles per named worker.
    workers: BTreeMap<&'a str, usize>,
}

/// What the rows name: instances and workers per instance (each `None`
/// when the names are not stable enough to count), and whether some
/// instance's named slots recycle unequally enough that a slot may have
/// gone unnamed (`UNEQUAL`).
pub struct Named {
    pub instances: Option<usize>,
    pub workers: Option<usize>,
    pub unequal: bool,
    /// Every instance names one slot, and one of them recycled at least
    /// `UNEQUAL_BUSIEST` times: its siblings, if it has any, never did,
    /// which is as unequal as slots get (fed first at a few per cent of a
    /// worker's capacity, the first slot takes all but the overflow).
    pub lone: bool,
}

impl Named {
    /// Whether the named slots are not fed alike: some instance's recycle
    /// very unequally, or one slot an instance takes every recycle. A
    /// life's rate is then its slot's, not every worker's (`mod.rs` reads
    /// the rate off the window, `Lives::SlotsUneven`).
    pub fn fed_unevenly(&self) -> bool {
        self.unequal || self.lone
    }
}

/// An instance's least recycled named slot below this share of its
/// busiest's recycles: the slots are not fed alike, and one fed last may
/// not have recycled at all (fed alike, a slot's count is Poisson about
/// its siblings': below a quarter of 8 or more recycles is rare, and a
/// slot that recycles less than twice a day is not counted at all).
const UNEQUAL: f64 = 0.25;

/// The busiest slot's recycles below which no inequality is read: fed
/// alike at a few recycles a slot, one of 1 beside one of 5 is common
/// (h6 of docs/calibration.md, fed at random: 1, 5 and 4).
const UNEQUAL_BUSIEST: usize = 8;

/// The instances and workers per instance `view` names.
pub fn named(view: &RegimeView) -> Named {
    let mid = 0.5 * (view.start_s + view.end_s);
    let mut seen: BTreeMap<&str, Seen> = BTreeMap::new();
    for e in &view.events {
        let Some(i) = e.instance.as_deref() else {
            continue;
        };
        let s = seen.entry(i).or_default();
        if e.t_s < mid {
            s.early = true;
        } else {
            s.late = true;
        }
        if e.is_recycle() {
            s.recycles += 1;
        }
        if let Some(w) = e.worker.as_deref() {
            *s.workers.entry(w).or_default() += e.is_recycle() as usize;
        }
    }
    let instances =
        (!seen.is_empty() && seen.values().all(|s| s.early && s.late)).then_some(seen.len());
    let names: usize = seen.values().map(|s| s.workers.len()).sum();
    let recycles: usize = seen.values().map(|s| s.recycles).sum();
    let workers = (names > 0 && recycles >= 2 * names)
        .then(|| seen.values().map(|s| s.workers.len()).max().unwrap_or(0));
    let unequal = seen
        .values()
        .any(|s| unequal(&s.workers.values().copied().collect::<Vec<_>>()));
    let lone = workers == Some(1)
        && seen
            .values()
            .any(|s| s.workers.values().any(|&n| n >= UNEQUAL_BUSIEST));
    Named {
        instances,
        workers,
        unequal,
        lone,
    }
}

/// Whether one instance's named slots, by their recycles, recycle
/// unequally (`UNEQUAL`, `UNEQUAL_BUSIEST`). Names seen only holding (no
/// recycle yet) say nothing of it.
fn unequal(recycles: &[usize]) -> bool {
    let counts = || recycles.iter().copied().filter(|&n| n > 0);
    let most = counts().max().unwrap_or(0);
    let least = counts().min().unwrap_or(0);
    most >= UNEQUAL_BUSIEST && (least as f64) < UNEQUAL * most as f64
}

/// The overrides that give the simulated fleet the recording's shape, with
/// a note for each change and for what could not be read. The rows do not
/// say the container's size: fewer workers than the base's keep its
/// container, more scale the workers' share of it with them and keep the
/// master's.
pub fn fleet_shape(view: &RegimeView, base: &Scenario, notes: &mut Vec<String>) -> Fixed {
    let f = &base.fleet;
    let Named {
        instances,
        workers,
        unequal,
        lone,
    } = named(view);
    let mut sets = Fixed::new();
    let mut changed = Vec::new();
    match instances {
        Some(n) if n != f.instances => {
            sets.push(("fleet.instances".into(), toml::Value::Integer(n as i64)));
            let s = if n == 1 { "" } else { "s" };
            changed.push(format!("{n} instance{s} (the base has {})", f.instances));
        }
        Some(_) => {}
        None => notes.push(format!(
            "fleet.instances: not read from the rows (their instance names do not all span the \
             window: renamed, or too few events); the base's {}",
            f.instances
        )),
    }
    match workers {
        Some(n) if n < f.workers_per_instance && unequal => notes.push(format!(
            "fleet.workers_per_instance: the rows name at most {n} workers an instance, but \
             an instance's slots recycle unequally (one less than a quarter as often as a \
             sibling), so a slot fed last may not have recycled at all; the base's {}",
            f.workers_per_instance
        )),
        Some(1) if f.workers_per_instance > 1 && lone => notes.push(format!(
            "fleet.workers_per_instance: the rows name one worker an instance, which recycled \
             again and again while no sibling ever did: a fleet fed in a fixed order \
             (`[fleet] accept = \"first\"`) at a few per cent of a worker's capacity looks so, \
             and so does one worker an instance; the base's {} (with one worker an instance the \
             rate reads high by the share the siblings would have taken: calibrate on a base with \
             `workers_per_instance = 1` if that is the fleet)",
            f.workers_per_instance
        )),
        Some(n) if n < f.workers_per_instance && n > 0 => {
            // The rows do not say the container's size. Fewer workers in
            // the base's container is how fleets are sized (workers by
            // cores, the container by the platform's plan), and a smaller
            // one put a fleet under a pressure the rows cannot show: with
            // 2 workers of 3 the default's 2048 MB became 1485, and at a
            // fitted base limit near 600 MB its headroom fell under the 350
            // MB threshold at every limit: about 3 pressure recycles an
            // hour (past the lease, on the short cooldown) that an
            // independent model of the fleet did not have, which moved the
            // fitted boot and leak (issue 14's held-out check, twenty-ninth
            // session).
            sets.push((
                "fleet.workers_per_instance".into(),
                toml::Value::Integer(n as i64),
            ));
            changed.push(format!(
                "{n} workers an instance (the base has {}; the base's {:.0} MB container kept)",
                f.workers_per_instance, f.container_mb
            ));
        }
        Some(n) if n != f.workers_per_instance && n > 0 => {
            // More workers than the base's: the container must hold them.
            // The master's memory does not scale with its workers; their
            // share of the rest does.
            let master = f.master_mb;
            let share = (f.container_mb - master) / f.workers_per_instance as f64;
            let container = (master + share * n as f64).round();
            sets.push((
                "fleet.workers_per_instance".into(),
                toml::Value::Integer(n as i64),
            ));
            sets.push(("fleet.container_mb".into(), toml::Value::Float(container)));
            changed.push(format!(
                "{n} workers an instance (the base has {}; the workers' share of the \
                 container's memory scaled with them, the master's kept: {:.0} -> \
                 {container:.0} MB)",
                f.workers_per_instance, f.container_mb
            ));
        }
        Some(_) => {}
        None => notes.push(format!(
            "fleet.workers_per_instance: not read from the rows (worker names are not reused, as \
             pids are not, or none were recorded); the base's {}",
            f.workers_per_instance
        )),
    }
    if !changed.is_empty() {
        notes.push(format!(
            "fleet shape from the recording's instance and worker names: {}",
            changed.join(", ")
        ));
    }
    sets
}

#[cfg(test)]
mod tests {
    use super::unequal;

    #[test]
    fn slots_recycle_unequally_only_past_what_chance_gives_a_few_recycles() {
        // Fed first (h1 of docs/calibration.md): the first slot forty
        // times, a sibling once.
        assert!(unequal(&[40, 1]));
        assert!(unequal(&[8, 1, 7]));
        // Fed at random at a few recycles a slot (h6): 1 beside 5 is chance.
        assert!(!unequal(&[1, 5, 4]));
        assert!(!unequal(&[7, 1]));
        // Alike, and names that only held.
        assert!(!unequal(&[12, 9, 12]));
        assert!(!unequal(&[12, 0, 10]));
        assert!(!unequal(&[]));
    }
}
