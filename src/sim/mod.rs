//! The one event loop: the only code that mutates fleet state.
//!
//! Pure parts decide (`policy`, `coord`, `fleet::memory`, `traffic`); the
//! handlers here apply their answers and emit telemetry rows. Handlers are split by concern
//! (`traffic.rs`: requests and the client; `recycle.rs`: sampling, decisions, drains, boots,
//! OOM), but `run` is the single loop and `handle` the single exhaustive `match` over events.

mod aggregate;
mod ahead;
mod connections;
mod evil;
mod feed;
mod invariants;
mod kill;
mod lazy;
pub use lazy::{LAZY_MAX_LOAD, LAZY_MIN_WORKERS, fallback};
mod lifecycle;
mod memory;
mod platform;
mod recycle;
mod replace;
mod traffic;
mod warm;

use crate::engine::queue::Lane;
use crate::engine::rng::{self, Stream, StreamRng};
use crate::engine::{EventQueue, SimTime};
use crate::fleet::{Instance, RateWindow, Request, SurgeClock, Worker, WorkerState};
use crate::metrics::{Metrics, Observer, Summary, SurgeTotals, TimelineRow, WorkerSample};
use crate::scenario::{Replacement, Scenario};
use std::collections::VecDeque;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

/// The stop flag (`Sim::with_stop_flag`) is read once every this many
/// events: a Ctrl-C stops the loop within a millisecond, and the hot loop
/// keeps its one compare per event (shared with the event budget).
pub const STOP_CHECK_EVERY: u64 = 4096;

/// Everything that can happen, as plain data. Events for a worker carry its
/// generation: an event for a process that has since exited is ignored.
/// Events are kept small (16 bytes) because the queue moves them on every
/// push and pop: a retry's request waits in `Sim::retries`, not in the
/// event. Arrivals are not events: the next one travels beside the queue
/// (`Sim::next_arrival`, its key from `EventQueue::key_for`) and the loop
/// hands it to `Sim::arrive`.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Event {
    /// The oldest request in `Sim::retries` is sent again.
    Retry,
    ServiceDone {
        worker: u32,
        generation: u32,
        slot: u32,
    },
    Sample {
        worker: u32,
        generation: u32,
    },
    DrainDeadline {
        worker: u32,
        generation: u32,
    },
    BootDone {
        worker: u32,
        generation: u32,
    },
    LifetimeDue {
        worker: u32,
        generation: u32,
    },
    InstanceCheck {
        instance: u32,
    },
    /// uWSGI's memory thread reads the worker's RSS; the master kills on it.
    EvilCheck {
        worker: u32,
        generation: u32,
    },
    Timeline,
    /// Aggregate mode: credit every serving worker's requests of the step.
    Step,
    /// Aggregate mode: a draining worker's in-flight work has finished.
    Drained {
        worker: u32,
        generation: u32,
    },
    /// `memory.oom.group`: the killed container is back; its master forks.
    InstanceRestart {
        instance: u32,
    },
    /// A reload wave (`[[platform.reload]]`, by index).
    Reload {
        wave: u32,
    },
    /// Granian: the old worker's handover interval is over (`replace/`).
    Handover {
        worker: u32,
        generation: u32,
    },
    /// puma_worker_killer: a master's rolling-restart thread wakes.
    RollingRestart {
        instance: u32,
        epoch: u32,
    },
    /// uWSGI: a master's fork-bomb sleep is over.
    MasterWake {
        instance: u32,
    },
    /// The request on `slot` ran past `fleet.kill.request_timeout_s`.
    RequestTimeout {
        worker: u32,
        generation: u32,
        slot: u32,
    },
}

const _: () = assert!(std::mem::size_of::<Event>() == 16);

/// Near events (the aggregate step; service completions) travel apart
/// from the far ones (ticks, timeline rows, boots, drains, retries), so they
/// do not sift past them in the queue.
impl Lane for Event {
    const LANES: usize = 3;
    #[inline]
    fn lane(&self) -> usize {
        match self {
            // The aggregate mode's step has the lane to itself.
            Event::Step => 0,
            Event::ServiceDone { .. } => 1,
            Event::Retry
            | Event::Sample { .. }
            | Event::DrainDeadline { .. }
            | Event::BootDone { .. }
            | Event::LifetimeDue { .. }
            | Event::InstanceCheck { .. }
            | Event::EvilCheck { .. }
            | Event::Drained { .. }
            | Event::InstanceRestart { .. }
            | Event::Reload { .. }
            | Event::Handover { .. }
            | Event::RollingRestart { .. }
            | Event::MasterWake { .. }
            | Event::RequestTimeout { .. }
            | Event::Timeline => 2,
        }
    }
}

#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum SimError {
    #[error(
        "event budget exhausted: {max} events processed by simulated t = {at}; \
         raise run.max_events or shorten the run"
    )]
    EventBudget { max: u64, at: SimTime },
    /// The caller's stop flag was raised (Ctrl-C): the run is incomplete.
    #[error("interrupted at simulated t = {at} after {events} events")]
    Interrupted { at: SimTime, events: u64 },
}

/// The streams drawn in arrival order (common to every policy).
struct Streams {
    arrivals: StreamRng,
    service: StreamRng,
    client: StreamRng,
    routing: StreamRng,
}

/// Counters of the current timeline step.
#[derive(Default)]
struct StepCounts {
    arrivals: u64,
    completions: u64,
    failures: u64,
    recycles: u64,
}

/// Workers per state, kept in step with every transition.
#[derive(Default, Clone, Copy)]
struct StateCounts {
    serving: u32,
    booting: u32,
    draining: u32,
    dead: u32,
}

pub struct Sim<'s, O: Observer> {
    sc: &'s Scenario,
    seed: u64,
    /// Worker structs per instance: `workers_per_instance`, doubled under
    /// spawn-then-exit for the successors (spare structs are `Dead`).
    spi: usize,
    q: EventQueue<Event>,
    workers: Vec<Worker>,
    /// Requests on the workers' serving slots (`Sim::slot_index`).
    in_service: Vec<Option<Request>>,
    instances: Vec<Instance>,
    /// The fleet state of the policy's gates (lease, bucket, window).
    gates: crate::policy::States,
    streams: Streams,
    /// Arrival times, drawn a block ahead (`ahead`).
    arrivals: ahead::ArrivalsAhead,
    /// The next arrival's queue key (`EventQueue::key_for`; `u128::MAX`:
    /// none): the one event always pending and always due soon travels
    /// beside the queue, and the loop merges it.
    next_arrival: u128,
    /// Service times, drawn a block ahead.
    service: ahead::ServiceAhead,
    /// Requests to retry with their due times: one delay for all, so first in, first due.
    retries: VecDeque<(SimTime, Request)>,
    rr_next: usize,
    counts: StateCounts,
    /// Last time the serving-capacity integral was brought up to date.
    accounted_at: SimTime,
    step_start: SimTime,
    step: StepCounts,
    m: Metrics,
    obs: O,
    check_invariants: bool,
    /// The aggregate mode's state; `None` in exact mode.
    agg: Option<aggregate::Aggregate>,
    /// The memory-surge schedule (`fleet::surge`); `None` when off.
    surge: Option<SurgeClock>,
    /// The pinned connection model's state; `None` under the others.
    pinned: Option<connections::Pinned>,
    /// The replacement modes' state (`replace/`).
    replace: replace::State,
    /// Requests an instance queues before it answers 503: the listen
    /// backlog, or Passenger's proxy queue.
    backlog_cap: usize,
    /// A gate reads the instances' arrival rate (`Instance::arrivals`, the
    /// busy deferral's): without one, the window is not kept at all.
    rate_window: bool,
    /// Raised by the caller (a signal handler) to stop the run early.
    stop: Option<&'s AtomicBool>,
    /// Where the loop publishes the simulated time it has reached
    /// (microseconds), at the stop flag's check (`with_progress`).
    progress: Option<&'s AtomicU64>,
    /// The fast path's lazy completions (`lazy/`); `None` when the
    /// scenario needs the event engine, or it was asked for.
    lazy: Option<lazy::Lazy>,
}

/// What a finished run returns.
pub struct SimOutput {
    pub summary: Summary,
    pub metrics: Metrics,
}

impl<'s, O: Observer> Sim<'s, O> {
    pub fn new(sc: &'s Scenario, seed: u64, obs: O) -> Self {
        // A reload forks every successor before its predecessor exits.
        let spi = if sc.policy.replacement.spawns_first() || !sc.platform.reloads.is_empty() {
            2 * sc.fleet.workers_per_instance
        } else {
            sc.fleet.workers_per_instance
        };
        let backlog_cap = match sc.policy.replacement {
            Replacement::DetachAndSpawn { max_request_queue } => max_request_queue,
            _ => sc.workload.backlog,
        };
        let instances = (0..sc.fleet.instances)
            .map(|i| Instance {
                first_worker: (i * spi) as u32,
                private_mb: 0.0,
                backlog: VecDeque::new(),
                idle: VecDeque::new(),
                last_recycle: None,
                stale_conns: VecDeque::new(),
                arrivals: RateWindow::new(sc.policy.busy_window_s),
                outstanding: 0,
                dead: 0,
                overshoot_q: 0,
                restarting: false,
            })
            .collect();
        Sim {
            sc,
            seed,
            spi,
            q: EventQueue::new(),
            workers: Vec::with_capacity(sc.fleet.instances * spi),
            in_service: vec![None; sc.fleet.instances * spi * sc.fleet.concurrency],
            instances,
            gates: sc.policy.pipeline.states(),
            streams: Streams {
                arrivals: rng::stream(seed, Stream::Arrivals),
                service: rng::stream(seed, Stream::Service),
                client: rng::stream(seed, Stream::Client),
                routing: rng::stream(seed, Stream::Routing),
            },
            arrivals: ahead::ArrivalsAhead::new(&sc.workload.profile, sc.duration),
            next_arrival: u128::MAX,
            service: ahead::ServiceAhead::new(),
            retries: VecDeque::new(),
            rr_next: 0,
            counts: StateCounts::default(),
            accounted_at: SimTime::ZERO,
            step_start: SimTime::ZERO,
            step: StepCounts::default(),
            m: Metrics::default(),
            obs,
            check_invariants: false,
            agg: aggregate::Aggregate::new(sc, spi),
            surge: (sc.fleet.surge.as_ref()).map(|s| SurgeClock::new(s, seed, sc.duration)),
            pinned: connections::Pinned::new(sc, sc.fleet.instances * spi),
            replace: replace::State::new(sc),
            backlog_cap,
            rate_window: sc
                .policy
                .pipeline
                .has(crate::policy::GateKind::BusyDeferral),
            stop: None,
            progress: None,
            lazy: lazy::chosen(sc)
                .then(|| lazy::Lazy::new(sc, sc.fleet.instances * spi))
                .flatten(),
        }
    }

    /// Whether this run takes the fast path (`lazy/`).
    pub fn lazy_completions(&self) -> bool {
        self.lazy.is_some()
    }

    /// Takes the fast path (`lazy/`) on a fleet of any size and load, where
    /// the scenario allows it (`fallback`); `Sim::new` takes it from
    /// `LAZY_MIN_WORKERS` up, and below that at an offered load up to
    /// `LAZY_MAX_LOAD`. The outputs are the same bytes either way.
    pub fn with_lazy_completions(mut self) -> Self {
        if self.lazy.is_none() && self.m.events == 0 {
            self.lazy = lazy::Lazy::new(self.sc, self.sc.fleet.instances * self.spi);
        }
        self
    }

    /// Runs on the event engine even where the fast path applies: every
    /// served request is a `ServiceDone` event (the reference the fast
    /// path is tested against: same outputs, byte for byte).
    pub fn with_event_completions(mut self) -> Self {
        self.lazy = None;
        self
    }

    /// Checks every invariant after every event (tests; slow on big fleets).
    pub fn with_invariant_checks(mut self) -> Self {
        self.check_invariants = true;
        self
    }

    /// Stops the run with `SimError::Interrupted` once `stop` is raised,
    /// checked every `STOP_CHECK_EVERY` events. The library installs no
    /// handler: the CLI raises the flag on Ctrl-C.
    pub fn with_stop_flag(mut self, stop: &'s AtomicBool) -> Self {
        self.stop = Some(stop);
        self
    }

    /// Publishes the simulated time reached (microseconds) into `at_us`
    /// every `STOP_CHECK_EVERY` events, at the stop flag's check: the
    /// caller's progress bar reads it from another thread. The hot loop
    /// keeps its one compare per event (`benches/default_24h.rs` measures
    /// both).
    pub fn with_progress(mut self, at_us: &'s AtomicU64) -> Self {
        self.progress = Some(at_us);
        self
    }

    /// Runs the window `[0, duration)` and returns the summary.
    pub fn run(mut self) -> Result<SimOutput, SimError> {
        let end = self.sc.duration;
        self.start();
        if self.check_invariants {
            self.check_all(SimTime::ZERO);
        }
        // One compare per event covers both limits: the budget and, every
        // STOP_CHECK_EVERY events, the stop flag.
        let budget_end = self.sc.max_events.saturating_add(1);
        let mut check_at = budget_end.min(STOP_CHECK_EVERY + 1);
        while let Some(next) = self.q.pop_key_before(end, self.next_arrival) {
            let t = next.map_or_else(|| self.q.now(), |(t, _)| t);
            self.m.events += 1;
            if self.m.events >= check_at {
                self.check_limits(t)?;
                check_at = budget_end.min(self.m.events + STOP_CHECK_EVERY);
            }
            if let Some((t, ev)) = next {
                self.handle(t, ev);
                // Sampled between events: a hand-over inside one event (old
                // worker drains, successor serves) is not a dip in capacity.
                self.m.min_serving = self.m.min_serving.min(self.counts.serving);
            } else {
                self.arrive(t);
            }
            if self.check_invariants {
                self.check_all(t);
            }
        }
        Ok(self.finish(end))
    }

    /// Every invariant after an event; the fast path's instances are
    /// checked in their own form, then in the event engine's (settled,
    /// materialized, folded back: which must change no output).
    #[cold]
    fn check_all(&mut self, t: SimTime) {
        let mut before = None;
        if self.lazy.is_some() {
            self.settle_all(t, u32::MAX);
            self.assert_lazy(t);
            before = Some((self.q.len(), self.void_events()));
            for i in 0..self.instances.len() as u32 {
                self.materialize(i, t);
            }
        }
        self.assert_invariants(t);
        self.fold_all(t);
        if let Some(before) = before {
            // The round trip takes back every completion event it voided
            // (`Lazy::reuse_void`): without that the heap grew by one event
            // per evented request waiting, after every event. (A request in
            // flight keeps the event `materialize` gave it: at most one
            // more a worker.)
            let (heap, void) = (self.q.len(), self.void_events());
            assert!(
                void <= before.1 && heap <= before.0 + self.workers.len(),
                "t={t}: materialize and fold left events behind: heap {} -> {heap}, void {} -> {void}",
                before.0,
                before.1
            );
        }
    }

    /// Before event number `self.m.events` (not yet handled): over the
    /// budget, or the stop flag raised? Publishes the progress too.
    #[cold]
    fn check_limits(&self, t: SimTime) -> Result<(), SimError> {
        if let Some(p) = self.progress {
            p.store(t.0, Ordering::Relaxed);
        }
        if self.m.events > self.sc.max_events {
            return Err(SimError::EventBudget {
                max: self.sc.max_events,
                at: t,
            });
        }
        if self.stop.is_some_and(|s| s.load(Ordering::Relaxed)) {
            return Err(SimError::Interrupted {
                at: t,
                events: self.m.events - 1,
            });
        }
        Ok(())
    }

    #[inline(always)]
    fn handle(&mut self, t: SimTime, ev: Event) {
        if self.lazy.is_some() {
            self.settle_for(t, ev);
        }
        match ev {
            Event::Retry => self.on_retry(t),
            Event::ServiceDone {
                worker,
                generation,
                slot,
            } if self.lazy.is_some() => self.on_lazy_service_done(t, worker, generation, slot),
            Event::ServiceDone {
                worker,
                generation,
                slot,
            } => self.on_service_done(t, worker, generation, slot),
            Event::Sample { worker, generation } => self.on_sample(t, worker, generation),
            Event::DrainDeadline { worker, generation } => {
                self.on_drain_deadline(t, worker, generation)
            }
            Event::BootDone { worker, generation } => self.on_boot_done(t, worker, generation),
            Event::LifetimeDue { worker, generation } => {
                self.on_lifetime_due(t, worker, generation)
            }
            Event::InstanceCheck { instance } => self.on_instance_check(t, instance),
            Event::EvilCheck { worker, generation } => self.on_evil_check(t, worker, generation),
            Event::Timeline => self.on_timeline(t),
            Event::Step => self.on_step(t),
            Event::Drained { worker, generation } => self.on_drained(t, worker, generation),
            Event::InstanceRestart { instance } => self.on_instance_restart(t, instance),
            Event::Reload { wave } => self.on_reload(t, wave),
            Event::Handover { worker, generation } => self.on_handover(t, worker, generation),
            Event::RollingRestart { instance, epoch } => {
                self.on_rolling_restart(t, instance, epoch)
            }
            Event::MasterWake { instance } => self.on_master_wake(t, instance),
            Event::RequestTimeout {
                worker,
                generation,
                slot,
            } => self.on_request_timeout(t, worker, generation, slot),
        }
        if self.pinned.is_some() {
            self.send_freed(t);
        }
        if self.lazy.is_some() {
            self.fold_all(t);
        }
    }

    /// The worker structs of instance `i`.
    fn instance_workers(&self, i: u32) -> std::ops::Range<u32> {
        let first = self.instances[i as usize].first_worker;
        first..first + self.spi as u32
    }

    /// Brings the serving-capacity integral up to `t`; call before any
    /// change of `counts`.
    fn account(&mut self, t: SimTime) {
        let dt = (t - self.accounted_at).0 as f64;
        self.m.serving_area += self.counts.serving as f64 * dt;
        self.accounted_at = t;
    }

    fn set_state(&mut self, t: SimTime, w: u32, to: WorkerState) {
        if self.lazy.is_some() {
            self.materialize(self.workers[w as usize].instance, t);
        }
        self.account(t);
        let worker = &mut self.workers[w as usize];
        let (from, i) = (worker.state, worker.instance as usize);
        worker.state = to;
        *self.count_of(from) -= 1;
        *self.count_of(to) += 1;
        let dead = &mut self.instances[i].dead;
        *dead = *dead - (from == WorkerState::Dead) as u32 + (to == WorkerState::Dead) as u32;
    }

    fn count_of(&mut self, s: WorkerState) -> &mut u32 {
        match s {
            WorkerState::Serving => &mut self.counts.serving,
            WorkerState::Booting => &mut self.counts.booting,
            WorkerState::Draining => &mut self.counts.draining,
            WorkerState::Dead => &mut self.counts.dead,
        }
    }

    fn on_timeline(&mut self, t: SimTime) {
        self.emit_timeline_row(t);
        self.q.schedule(t + self.sc.timeline_step, Event::Timeline);
    }

    fn emit_timeline_row(&mut self, t: SimTime) {
        let master = self.sc.fleet.master_mb;
        let container = self.sc.fleet.container_mb;
        let spi = self.spi;
        let usage: Vec<f64> = self.instances.iter().map(|i| i.usage_mb(master)).collect();
        let row = TimelineRow {
            t: self.step_start,
            serving: self.counts.serving,
            booting: self.counts.booting,
            draining: self.counts.draining,
            backlog: (0..self.instances.len() as u32)
                .map(|i| {
                    (self.instances[i as usize].backlog.len() + self.lazy_backlog(i, t)) as u64
                })
                .sum::<u64>()
                + self.agg.as_ref().map_or(0, |a| a.backlog()),
            arrivals: self.step.arrivals,
            completions: self.step.completions,
            failures: self.step.failures,
            recycles: self.step.recycles,
            headroom_mb: usage.iter().map(|u| container - u).collect(),
            usage_mb: usage,
            max_rss_mb: self
                .workers
                .chunks(spi)
                .map(|ws| {
                    ws.iter()
                        .filter(|w| w.state != WorkerState::Dead)
                        .map(|w| w.rss_mb)
                        .fold(0.0, f64::max)
                })
                .collect(),
            surge_episode_s: self
                .surge
                .as_ref()
                .map(|s| s.episode_s_within(self.step_start, t)),
        };
        self.obs.timeline(&row);
        let wanted = self.obs.workers_wanted().min(self.workers.len());
        if wanted > 0 {
            let live: Vec<WorkerSample> = self.workers[..wanted]
                .iter()
                .enumerate()
                .filter(|(_, w)| w.state != WorkerState::Dead)
                .map(|(i, w)| WorkerSample {
                    index: i as u32,
                    instance: w.instance,
                    slot: w.cold.slot,
                    generation: w.generation,
                    rss_mb: w.rss_mb,
                    limit_mb: w.cold.limit_mb,
                    requests: w.requests,
                })
                .collect();
            self.obs.workers(t, &live);
        }
        self.step = StepCounts::default();
        self.step_start = t;
    }

    fn finish(mut self, end: SimTime) -> SimOutput {
        if self.agg.is_some() {
            self.finish_aggregate(end);
        }
        self.settle_all(end, 0);
        self.finish_lazy(end);
        self.account(end);
        for w in 0..self.workers.len() as u32 {
            self.close_rss_accounting(end, w);
        }
        if self.agg.is_none() {
            // Integers (2^-20 MB x us): the lazy path's order of crediting
            // leaves the sum as it is.
            let q: i128 = self.instances.iter().map(|i| i.overshoot_q).sum();
            self.m.overshoot_mb_us = q as f64 / memory::MEM_STEPS;
        }
        if self.step_start < end {
            self.emit_timeline_row(end);
        }
        let mut summary = self.m.summary(
            &self.sc.name,
            self.seed,
            self.sc.duration,
            self.sc.fleet.workers(),
        );
        summary.evil_kill_requests = (self.sc.policy.triggers.evil_rss)
            .as_ref()
            .map(|_| self.m.evil_kill_requests);
        summary.oom_group_kills = self.sc.platform.oom_group.map(|_| self.m.oom_group_kills);
        summary.reload_replacements =
            (!self.sc.platform.reloads.is_empty()).then_some(self.m.reload_replacements);
        summary.replacement = self.replacement_totals();
        summary.kill_paths = self.kill_path_totals();
        summary.surge = self.surge.as_ref().map(|s| SurgeTotals {
            episodes: s.episodes().len() as u64,
            episode_s: s.episode_s_within(SimTime::ZERO, end),
        });
        SimOutput {
            summary,
            metrics: self.m,
        }
    }
}

/// Runs a scenario with no observer: the summary only.
pub fn run_summary(sc: &Scenario, seed: u64) -> Result<Summary, SimError> {
    Sim::new(sc, seed, crate::metrics::NullObserver)
        .run()
        .map(|o| o.summary)
}
