//! Running trials: the base scenario with one configuration's overrides,
//! at one replication's seed. Trials run in parallel and come back in trial
//! order, so what is written never depends on the thread count:
//! `run_in_order` (worker threads taking trials from a shared counter, no
//! barrier; what `fleetsim sweep` uses) or `run_chunk` (one rayon chunk).

use super::space::{Config, Sweep};
use super::{replication_seed, trial_index};
use crate::metrics::NullObserver;
use crate::metrics::Summary;
use crate::scenario::{Override, RawScenario, ScenarioError, load};
use crate::{Scenario, Sim, SimError};
use rayon::prelude::*;
use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::mpsc;

/// The base scenario, resolved once (extends merged, files read), so that
/// trials on any thread rebuild it from text alone.
#[derive(Clone, Debug)]
pub struct Base {
    text: String,
    origin: String,
    /// `(workload.series_csv as written, its content)`.
    series: Option<(String, String)>,
    hours: Option<f64>,
}

impl Base {
    pub fn new(
        raw: &RawScenario,
        origin: &str,
        series: Option<String>,
        hours: Option<f64>,
    ) -> Self {
        Base {
            text: toml::to_string(raw).expect("a raw scenario serialises"),
            origin: origin.to_string(),
            series: series.map(|s| (raw.workload.series_csv.clone(), s)),
            hours,
        }
    }

    /// The base with `config` applied, through the raw mirror only (keys
    /// and types; `load_raw`): what a sweep file is checked against.
    pub fn raw(&self, config: &Config) -> Result<RawScenario, ScenarioError> {
        let overrides: Vec<Override> = config
            .iter()
            .map(|(k, v)| Override {
                key: k.clone(),
                value: v.clone(),
            })
            .collect();
        crate::scenario::load::load_raw(&self.text, &self.origin, &overrides, &mut |p| {
            Err(format!("{p}: not read when checking a sweep's keys"))
        })
    }

    /// The base with `config` applied, validated.
    pub fn scenario(&self, config: &Config) -> Result<(RawScenario, Scenario), ScenarioError> {
        let mut overrides: Vec<Override> = config
            .iter()
            .map(|(k, v)| Override {
                key: k.clone(),
                value: v.clone(),
            })
            .collect();
        if let Some(h) = self.hours {
            overrides.push(Override {
                key: "run.duration_h".into(),
                value: toml::Value::Float(h),
            });
        }
        let series = self.series.clone();
        let mut read = |p: &str| match &series {
            Some((name, content)) if name == p => Ok(content.clone()),
            _ => Err(format!("{p}: not the base's series file")),
        };
        load(&self.text, &self.origin, &overrides, &mut read)
    }
}

/// One finished trial.
#[derive(Clone, Debug)]
pub struct Trial {
    pub trial: u64,
    pub config: u64,
    pub replication: u64,
    pub seed: u64,
    pub result: Result<Summary, String>,
}

/// Runs one trial by index.
pub fn run_trial(base: &Base, sweep: &Sweep, trial: u64) -> Trial {
    run_trial_until(base, sweep, trial, &AtomicBool::new(false)).expect("no stop was raised")
}

/// Runs one trial by index, its simulation stopped once `stop` is raised
/// (within `sim::STOP_CHECK_EVERY` events): `None`, no trial, when it was.
/// A trial that completes is the same bytes with or without the flag.
pub fn run_trial_until(base: &Base, sweep: &Sweep, trial: u64, stop: &AtomicBool) -> Option<Trial> {
    let (config, replication) = (trial / sweep.replications, trial % sweep.replications);
    debug_assert_eq!(trial_index(config, replication, sweep.replications), trial);
    let seed = replication_seed(sweep.seed, replication);
    let result = match base.scenario(&sweep.config(config)) {
        Err(e) => Err(e.to_string()),
        Ok((_, sc)) => match Sim::new(&sc, seed, NullObserver).with_stop_flag(stop).run() {
            Err(SimError::Interrupted { .. }) => return None,
            r => r.map(|o| o.summary).map_err(|e| e.to_string()),
        },
    };
    Some(Trial {
        trial,
        config,
        replication,
        seed,
        result,
    })
}

/// Runs trials in parallel on the current rayon pool; results in input order.
pub fn run_chunk(base: &Base, sweep: &Sweep, trials: &[u64]) -> Vec<Trial> {
    trials
        .par_iter()
        .map(|&t| run_trial(base, sweep, t))
        .collect()
}

/// The operating system refused a worker thread (a memory or process
/// limit): the trials already handed on stand, and nothing else ran.
#[derive(Debug, thiserror::Error)]
#[error("cannot start a worker thread: {0}")]
pub struct SpawnError(#[from] pub std::io::Error);

impl From<SpawnError> for String {
    fn from(e: SpawnError) -> String {
        e.to_string()
    }
}

/// Runs `pending` on `threads` worker threads and hands every result to
/// `each` on the calling thread, in input order. Each worker takes the next
/// trial from a shared counter, so trials finish nearly in order (a handful
/// wait to be handed on) and no thread waits for another until the last
/// trials. Once `stop` is raised the running simulations stop within
/// `sim::STOP_CHECK_EVERY` events, unrecorded, and the workers take no new
/// trial; results after the first one missing are dropped (a resumed sweep
/// re-runs them).
/// An error from `each` makes the workers take no new trial (those
/// running finish first) and is returned; so is a thread the system
/// refuses to start (`SpawnError`), after the started ones stop.
pub fn run_in_order<E: From<SpawnError>>(
    base: &Base,
    sweep: &Sweep,
    pending: &[u64],
    threads: usize,
    stop: &AtomicBool,
    mut each: impl FnMut(Trial) -> Result<(), E>,
) -> Result<(), E> {
    let next = AtomicUsize::new(0);
    let abort = AtomicBool::new(false);
    let (tx, rx) = mpsc::channel::<(usize, Trial)>();
    std::thread::scope(|s| {
        for _ in 0..threads.max(1) {
            let (tx, next, abort) = (tx.clone(), &next, &abort);
            let started = std::thread::Builder::new().spawn_scoped(s, move || {
                while !stop.load(Ordering::Relaxed) && !abort.load(Ordering::Relaxed) {
                    let i = next.fetch_add(1, Ordering::Relaxed);
                    let Some(&t) = pending.get(i) else { break };
                    // A trial the stop cut short is no row: resume runs it.
                    let Some(trial) = run_trial_until(base, sweep, t, stop) else {
                        break;
                    };
                    if tx.send((i, trial)).is_err() {
                        break; // the receiver gave up on an error
                    }
                }
            });
            if let Err(e) = started {
                abort.store(true, Ordering::Relaxed);
                return Err(SpawnError(e).into());
            }
        }
        drop(tx);
        let mut waiting = BTreeMap::new();
        let mut want = 0usize;
        for (i, trial) in rx {
            waiting.insert(i, trial);
            while let Some(t) = waiting.remove(&want) {
                each(t)?;
                want += 1;
            }
        }
        Ok(())
    })
}

/// The trials a run still has to do: this shard's share of all trials
/// (configuration 0, the base, included), minus those already done.
pub fn pending(
    sweep: &Sweep,
    shard: (u64, u64),
    done: &std::collections::BTreeSet<u64>,
) -> Vec<u64> {
    let total = (sweep.config_count() + 1) * sweep.replications;
    (0..total)
        .filter(|t| t % shard.1 == shard.0 && !done.contains(t))
        .collect()
}
