//! Lazy completions: the exact engine's fast path, where a served request
//! is not a heap event.
//!
//! Per instance, requests are served first in, first out by its serving
//! slots, so a request's start and completion follow from the arrival
//! stream alone (the Kiefer-Wolfowitz recursion): at its arrival, a request
//! is assigned to the slot that frees first (ties in the order slots went
//! idle, which `IdleKey` spells out), starts at `max(arrival, free)` and is
//! done at start + service. Its RSS growth is drawn then, from its worker's
//! own stream: with one slot a worker (concurrency 1) a worker's requests
//! complete in the order they were assigned, so the draws come in the order
//! the event engine draws them at completion.
//!
//! A completion whose effects are local (counters, the latency histogram,
//! the worker's RSS, the instance's memory sum) is *credited* late, worker
//! by worker in each worker's own order: when its worker is next assigned
//! a request, or when an event touches the instance (all of its workers'
//! completions before the event's key, `(time, worker)` the order the
//! event engine breaks ties in, `EventQueue::schedule_tied`). What a credit
//! adds to is counts, maxima, the worker's own fields and exact mode's
//! memory sum and overshoot integral, which are exact whatever the order
//! of their terms (memory on a grid, `memory::quantize_mb`): so the
//! workers of an instance need not be credited in time order. A completion
//! that may act beyond its worker is scheduled as a `ServiceDone` event
//! instead: a retried request (its `retry_ok` row), the request that reaches
//! a request-count trigger or a per-request sample, every request assigned
//! while the instance's memory *projected* over its assigned requests could
//! pass the cgroup limit (so an OOM kill happens at its exact place), and
//! the requests in flight on an instance an event changes.
//!
//! Any event that changes an instance's workers (a drain, an exit, a fork,
//! a boot, a kill: `Sim::set_state` and `Sim::kill_in_flight`) first
//! *materializes* the instance into the event engine's form (requests in
//! slots with their completion events, the backlog, the idle list), so the
//! event engine's own handlers apply it unchanged; at the end of the event
//! the instance is folded back (`fold`), its backlog assigned again over
//! the slots as they are now. The two forms hold the same requests: the
//! outputs are the event engine's byte for byte (`tests/lazy_engine.rs`).
//!
//! The fast path needs one slot per worker and no mechanism that acts
//! inside a request (`fallback` names the first one a scenario has); those
//! scenarios run on the event engine.

use super::memory::{cow_copied, quantize_mb, set_rss_in, unshare_in};
use super::{Event, Sim, StepCounts};
use crate::engine::SimTime;
use crate::fleet::{Instance, Request, Worker, WorkerState};
use crate::metrics::{Metrics, Observer};
use crate::policy::Sampling;
use crate::scenario::{Accept, BalancerKind, Connections, Replacement, Scenario};
use queues::Queues;
use std::collections::VecDeque;

mod form;
mod parts;
mod queues;

use parts::{Follow, Parts};

/// Why a scenario runs on the event engine, or `None` for the fast path.
pub fn fallback(sc: &Scenario) -> Option<&'static str> {
    let f = &sc.fleet;
    let p = &sc.policy;
    Some(if sc.engine.is_aggregate() {
        "the aggregate engine"
    } else if f.accept != Accept::LongestIdle {
        "fleet.accept = \"random\", \"most_recent\" or \"first\" (a request does not take the slot idle longest)"
    } else if f.concurrency != 1 {
        "fleet.concurrency above 1 (a worker's requests can complete out of order)"
    } else if matches!(sc.client.connections, Connections::Pinned { .. }) {
        "client.connections = \"pinned\" (a request waits for its connection's worker)"
    } else if sc.workload.balancer == BalancerKind::LeastOutstanding {
        "workload.balancer = \"least_outstanding\" (it reads every instance at every arrival)"
    } else if f.kill.request_timeout.is_some() {
        "fleet.kill.request_timeout_s"
    } else if p.modes.cold_start.is_some() {
        "[fleet.cold_start]"
    } else if !matches!(
        p.replacement,
        Replacement::ExitThenSpawn | Replacement::SpawnThenExit
    ) {
        "policy.replacement detach_and_spawn or timed_handover"
    } else if f.surge.is_some() {
        "[fleet.leak.surge]"
    } else if p.triggers.drift.is_some() {
        "the drift trigger (it collects garbage after every request)"
    } else if f.transient_mean_mb > 0.0 {
        "fleet.leak.transient_mean_mb"
    } else if sc.platform.oom_group.is_some() || !sc.platform.reloads.is_empty() {
        "[platform] oom_group or reload waves"
    } else {
        return None;
    })
}

/// When a slot went idle, as one ordered key: `(time, class, tie)`. A slot
/// freed by a completion (class 0, tie = its worker) comes before one freed
/// by another event at the same microsecond (class 1, tie = a counter in
/// event order): the event engine's idle list in the same order.
type IdleKey = u128;

fn idle_key(t: SimTime, class: u128, tie: u64) -> IdleKey {
    ((t.0 as u128) << 64) | (class << 63) | tie as u128
}

fn key_time(k: IdleKey) -> SimTime {
    SimTime((k >> 64) as u64)
}

/// When worker `w`'s first request is done, if it is credited late, else
/// `u64::MAX`.
#[inline(always)]
fn head_due(items: &Queues, w: u32) -> u64 {
    match items.front(w) {
        Some(it) if !it.event => it.done.0,
        _ => u64::MAX,
    }
}

/// A completion's place in the order of crediting: `(time, worker)`.
#[inline(always)]
fn due_key(done: u64, w: u32) -> u128 {
    ((done as u128) << 32) | w as u128
}

/// The first completion credited late among workers `first..first + n`
/// in `(time, worker)` order: its time (`u64::MAX`: none) and worker.
fn first_due(items: &Queues, first: usize, n: usize) -> (u64, u32) {
    let (mut best, mut at) = (u64::MAX, first as u32);
    for w in first..first + n {
        let d = head_due(items, w as u32);
        if d < best {
            (best, at) = (d, w as u32);
        }
    }
    (best, at)
}

/// Whether a serving slot is free at `t` (its last request done at or
/// before `t`), of an instance's slots `free`.
#[cold]
fn slot_free_at(free: &[IdleKey], t: SimTime) -> bool {
    free.iter().any(|&f| f != u128::MAX && key_time(f) <= t)
}

/// The growth of a worker's `n`-th request: its leak draw (on the memory
/// grid, as `Sim::grow` draws it), and what it adds to the instance's
/// memory sum (the pages it unshares too).
#[inline(always)]
fn growth_of(sc: &Scenario, worker: &mut Worker, n: u64) -> (f64, f64) {
    let d = quantize_mb(sc.fleet.leak.growth(
        worker.velocity_mb_per_request,
        &mut worker.warm_left_mb,
        &mut worker.noise,
    ));
    let copied = match &sc.fleet.cow {
        Some(c) => cow_copied(c, n),
        None => 0.0,
    };
    (d, d + copied)
}

/// A request assigned to a worker.
#[derive(Clone, Copy)]
struct Item {
    req: Request,
    start: SimTime,
    done: SimTime,
    /// Its RSS growth, drawn at assignment.
    growth_mb: f64,
    /// What it adds to the instance's memory sum: the growth and the pages
    /// it unshares (copy-on-write).
    private_mb: f64,
    /// Assignment order: the backlog's order when the instance materializes.
    order: u64,
    /// Its completion is a `ServiceDone` event, not credited late.
    event: bool,
    /// The `slot` field of that event: a waiting request can be assigned
    /// again (`materialize`, `fold`), which leaves its first event stale.
    /// 0 for a request started in the event form (whose event says slot 0).
    ticket: u32,
    /// Its wait is in the metrics already (it started in the event form).
    waited: bool,
    /// It was assigned to wait: the worker's draw state before it drew is
    /// kept beside it (`Queues::before`), restored if it goes back to the
    /// backlog.
    rewind: bool,
}

/// One instance's lazy state that a request reads: one cache line (what
/// it holds only under overload is in `Held`, counted here).
#[derive(Default)]
#[repr(C, align(64))]
struct Inst {
    /// In the event engine's form until the end of the current event.
    eager: bool,
    /// Growth drawn for assigned requests not yet credited.
    pending_mb: f64,
    /// Starts of the assigned requests that waited, in order (they never
    /// decrease): those after `t` are the backlog at `t`. The ones that
    /// have started are dropped at the next send, not at their credit.
    waits: VecDeque<SimTime>,
    /// `Held::timeouts.len()` (both counts wait in the backlog, so neither
    /// passes its bound, `workload.backlog_requests`, a `u32`).
    timeouts: u32,
    /// `Held::unassigned.len()`.
    unassigned: u32,
}

const _: () = assert!(std::mem::size_of::<Inst>() == 64, "Inst is one cache line");

/// One instance's requests that are not assigned to a worker's queue: the
/// rest of its lazy state (`Inst` counts them).
#[derive(Default)]
struct Held {
    /// Requests that will time out in the backlog, at the time a slot
    /// would have taken them.
    /// `(start, w, order, request)`: `w` is the worker whose slot frees at
    /// `start` and fails it, in the event engine inside that worker's
    /// completion event, so it is credited after that completion (and not
    /// at all when the completion OOM-kills its own worker: the instance
    /// materializes first and the request goes back to the backlog).
    timeouts: VecDeque<(SimTime, u32, u64, Request)>,
    /// Requests that came while no worker was serving.
    unassigned: VecDeque<(u64, Request)>,
}

pub(super) struct Lazy {
    /// Per worker struct: its assigned requests, in flight first.
    items: Queues,
    /// Per worker struct: when it can take the next request (`IdleKey`:
    /// its last request's completion, or when it went idle), `u128::MAX`
    /// when it is not serving (`assign` takes the least).
    free: Vec<IdleKey>,
    /// Per worker struct, in the event form: when its request in flight is
    /// done, and the growth drawn for it (`None`: drawn when folded).
    busy_until: Vec<SimTime>,
    in_flight_growth: Vec<Option<f64>>,
    /// The ticket of its completion event (0: scheduled by the event form).
    in_flight_ticket: Vec<u32>,
    inst: Vec<Inst>,
    held: Vec<Held>,
    order: u64,
    /// Class-1 idle keys (`IdleKey`) handed out so far.
    others: u64,
    /// Completion-event tickets handed out so far (`Item::ticket`).
    tickets: u32,
    /// Instances materialized during the current event.
    eager: Vec<u32>,
    /// Completion events made void by a re-assignment, as (worker,
    /// ticket) -> (time, generation) of the event in the heap: uncounted
    /// when they pop, as the event engine never had them, or taken again
    /// by an assignment with the same completion (`reuse_void`).
    void: std::collections::BTreeMap<(u32, u32), (SimTime, u32)>,
    /// The worker whose completion event is being handled: its slot is
    /// free in the event form until the handler's `slot_freed`.
    completing: Option<u32>,
}

/// From this many workers `Sim::new` takes the fast path whatever the
/// load: at 60 workers and up it is faster in wall time, by 1.4x (60) to
/// 2.6x-2.8x (16,002) (`throughput`, docs/performance.md, 2026-12-02 round
/// 3). Below it, only when the offered load is at most `LAZY_MAX_LOAD`.
pub const LAZY_MIN_WORKERS: usize = 32;

/// The offered load (peak arrival rate x mean service time over the
/// workers) up to which a fleet of fewer than `LAZY_MIN_WORKERS` takes the
/// fast path. Measured side by side (callgrind, profiling build, the
/// thirteenth session): the peer's 6 workers at 0.4, 783 instructions a
/// request against the event engine's 920; the embedded default's day
/// 86.6 M against 93.1 M; but the saturated seeds' fleet (`high_rate`, 1.0:
/// long backlogs, every recycle materializes and folds its instance) 1,428
/// against about 920. A queue at 0.8 backlogs rarely enough.
pub const LAZY_MAX_LOAD: f64 = 0.8;

/// Whether `Sim::new` takes the fast path for `sc` (where `fallback`
/// allows it): a large fleet always, a small one when not loaded near
/// saturation. The outputs are the same bytes either way.
pub fn chosen(sc: &Scenario) -> bool {
    let workers = sc.fleet.workers();
    let load = sc.workload.profile.peak_rate() * sc.workload.service.mean_us() * 1e-6
        / (workers.max(1) as f64 * sc.fleet.concurrency.max(1) as f64);
    workers >= LAZY_MIN_WORKERS || load <= LAZY_MAX_LOAD
}

impl Lazy {
    /// The fast path's state, every instance in the event form (the fleet
    /// is built by the event engine's code, then folded: `Sim::start`);
    /// `None` when the scenario needs the event engine.
    pub(super) fn new(sc: &Scenario, structs: usize) -> Option<Self> {
        if fallback(sc).is_some() {
            return None;
        }
        let instances = sc.fleet.instances;
        Some(Lazy {
            items: Queues::new(structs),
            free: vec![u128::MAX; structs],
            busy_until: vec![SimTime::ZERO; structs],
            in_flight_growth: vec![None; structs],
            in_flight_ticket: vec![0; structs],
            inst: (0..instances)
                .map(|_| Inst {
                    eager: true,
                    ..Inst::default()
                })
                .collect(),
            held: (0..instances).map(|_| Held::default()).collect(),
            order: 0,
            others: 0,
            tickets: 0,
            eager: (0..instances as u32).collect(),
            completing: None,
            void: std::collections::BTreeMap::new(),
        })
    }
}

impl Lazy {
    /// A void completion event of worker `w` (its generation `generation`)
    /// at `done`, taken back for a request assigned that same completion:
    /// its ticket. Without it every materialize and fold of an instance
    /// with evented requests waiting would leave one more void event per
    /// request in the heap (under invariant checks, which fold after every
    /// event, the heap grew by gigabytes on an overloaded instance).
    fn reuse_void(&mut self, w: u32, done: SimTime, generation: u32) -> Option<u32> {
        if self.void.is_empty() {
            return None;
        }
        let key = self
            .void
            .range((w, 0)..=(w, u32::MAX))
            .find(|(_, at)| **at == (done, generation))
            .map(|(k, _)| *k)?;
        self.void.remove(&key);
        Some(key.1)
    }
}

impl<O: Observer> Sim<'_, O> {
    /// The `ServiceDone` tie of a slot (`EventQueue::schedule_tied`).
    #[inline(always)]
    pub(super) fn completion_tie(&self, w: u32, slot: u32) -> u32 {
        w * self.sc.fleet.concurrency as u32 + slot
    }

    /// Credits instance `i`'s completions that come before the event
    /// keyed `(t, tie)` (`tie = u32::MAX`: all at or before `t`).
    #[inline]
    pub(super) fn settle(&mut self, i: u32, t: SimTime, tie: u32) {
        self.settle_inline(i, t, tie);
    }

    /// `settle`, inlined into `lazy_send` (once a request: the call's
    /// saving and restoring of registers cost about 17 instructions).
    #[inline(always)]
    fn settle_inline(&mut self, i: u32, t: SimTime, tie: u32) {
        let Some(lz) = &mut self.lazy else { return };
        let inst = &lz.inst[i as usize];
        if inst.eager {
            return;
        }
        if inst.timeouts > 0 {
            self.settle_with_timeouts(i, t, tie);
            return;
        }
        let slots = (i as usize * self.spi, self.spi);
        let (mut p, inst, instance) = self.lazy_parts(i);
        p.settle(inst, instance, slots, t, tie);
    }

    /// The parts of the fast path's state a request touches, borrowed
    /// apart, with instance `i`'s own.
    #[inline(always)]
    fn lazy_parts(&mut self, i: u32) -> (Parts<'_>, &mut Inst, &mut Instance) {
        let Sim {
            sc,
            lazy,
            workers,
            instances,
            m,
            step,
            ..
        } = self;
        let Lazy {
            items,
            held,
            free,
            inst,
            order,
            ..
        } = lazy.as_mut().expect("lazy");
        let parts = Parts {
            sc,
            items,
            held,
            free,
            order,
            workers,
            m,
            step,
        };
        (parts, &mut inst[i as usize], &mut instances[i as usize])
    }

    /// `settle` with requests that time out in the backlog, credited in
    /// their place among the completions.
    #[cold]
    #[inline(never)]
    fn settle_with_timeouts(&mut self, i: u32, t: SimTime, tie: u32) {
        let upto = due_key(t.0, tie);
        let first = (i as usize) * self.spi;
        loop {
            let lz = self.lazy.as_ref().expect("lazy");
            let (best, w) = first_due(&lz.items, first, self.spi);
            let key = due_key(best, w);
            if let Some(&(start, w, _, _)) = lz.held[i as usize].timeouts.front() {
                // After the completion that frees its slot (the same key).
                let s = due_key(start.0, w);
                if s < upto && s < key {
                    self.credit_timeout(i);
                    continue;
                }
            }
            if key >= upto {
                return;
            }
            self.credit(i, w);
        }
    }

    /// Settles every instance up to `t` (timeline rows, the end).
    pub(super) fn settle_all(&mut self, t: SimTime, tie: u32) {
        if self.lazy.is_some() {
            for i in 0..self.instances.len() as u32 {
                self.settle(i, t, tie);
            }
        }
    }

    fn credit_timeout(&mut self, i: u32) {
        let lz = self.lazy.as_mut().expect("lazy");
        let inst = &mut lz.inst[i as usize];
        let (s, _, _, _) = lz.held[i as usize].timeouts.pop_front().expect("a timeout");
        inst.timeouts -= 1;
        while inst.waits.front().is_some_and(|&x| x <= s) {
            inst.waits.pop_front();
        }
        // (No event of its own: the event engine fails it inside the event
        // that frees the slot.)
        self.instances[i as usize].outstanding -= 1;
        self.http_failure(s, super::traffic::HttpFailure::Timeout);
    }

    /// A completion with local effects only, credited at its time.
    #[inline(always)]
    fn credit(&mut self, i: u32, w: u32) {
        let (mut p, inst, instance) = self.lazy_parts(i);
        p.credit(inst, instance, w);
    }

    /// What a completion does to its worker and the metrics.
    #[inline(always)]
    fn served(&mut self, t: SimTime, i: u32, w: u32, it: &Item) {
        if !it.waited {
            self.m.wait_us += (it.start - it.req.enq_t).0;
            self.m.waits += 1;
            self.m.waited += (it.start > it.req.enq_t) as u64;
        }
        self.workers[w as usize].requests += 1;
        self.instances[i as usize].outstanding -= 1;
        self.complete(t, i, it.req);
        self.apply_growth(t, w, it.growth_mb);
    }

    /// A `ServiceDone` event under the fast path (the request was one that
    /// may act beyond its worker).
    pub(super) fn on_lazy_service_done(
        &mut self,
        t: SimTime,
        w: u32,
        generation: u32,
        ticket: u32,
    ) {
        let lz = self.lazy.as_mut().expect("lazy");
        if ticket != 0 && !lz.void.is_empty() && lz.void.remove(&(w, ticket)).is_some() {
            // The request went back to the backlog (`materialize`): the
            // loop counted an event the event engine never had.
            self.m.events -= 1;
            return;
        }
        if self.workers[w as usize].generation != generation {
            return; // the process was killed; its requests already failed
        }
        let i = self.workers[w as usize].instance;
        let lz = self.lazy.as_mut().expect("lazy");
        if lz
            .items
            .front(w)
            .is_none_or(|it| !it.event || it.ticket != ticket || it.done != t)
        {
            debug_assert!(false, "a completion event neither current nor void");
            return;
        }
        let it = lz
            .items
            .pop_front(w)
            .expect("a completion event for an assigned request");
        debug_assert!(it.event && it.done == t);
        let empty = lz.items.is_empty(w);
        lz.inst[i as usize].pending_mb -= it.private_mb;
        lz.completing = Some(w);
        self.served(t, i, w, &it);
        let killed = self.oom_check(t, i) && self.workers[w as usize].generation != generation;
        if !killed {
            let before = self.workers[w as usize].requests - 1;
            self.after_requests(t, w, before);
        }
        let lz = self.lazy.as_mut().expect("lazy");
        lz.completing = None;
        if killed || self.workers[w as usize].generation != generation {
            // The OOM victim, or a trigger recycled the idle worker and it
            // exited at once.
            return;
        }
        if lz.inst[i as usize].eager {
            self.slot_freed(t, w, 0); // an event of this one changed the instance
        } else if empty {
            match self.workers[w as usize].state {
                WorkerState::Draining => self.exit(t, w),
                _ => lz.items.set_idle(w, idle_key(t, 0, w as u64)),
            }
        }
    }

    /// One RSS growth already drawn (`grow` without the draw).
    #[inline(always)]
    fn apply_growth(&mut self, t: SimTime, w: u32, d: f64) {
        if d > 0.0 {
            let rss = self.workers[w as usize].rss_mb + d;
            self.set_rss(t, w, rss);
        }
        if self.sc.fleet.cow.is_some() {
            self.unshare(w);
        }
    }

    /// The growth of worker `w`'s `n`-th request (`growth_of`).
    fn draw_growth(&mut self, w: u32, n: u64) -> (f64, f64) {
        growth_of(self.sc, &mut self.workers[w as usize], n)
    }

    /// A request reaches lazy instance `i` at `t` (after the balancer and
    /// the stale-connection draw): the backlog bound, then its slot.
    pub(super) fn lazy_send(&mut self, t: SimTime, i: u32, req: Request) {
        let slots = (i as usize * self.spi, self.spi);
        let cap = self.backlog_cap;
        let lz = self.lazy.as_ref().expect("lazy");
        debug_assert!(!lz.inst[i as usize].eager, "a lazy instance");
        let timeouts = lz.inst[i as usize].timeouts > 0;
        if timeouts {
            self.settle_with_timeouts(i, t, u32::MAX);
        }
        // (Without timeouts, nothing here reads what a credit changes: the
        // assignment credits its worker's completions.)
        let (mut p, inst, instance) = self.lazy_parts(i);
        while inst.waits.front().is_some_and(|&s| s <= t) {
            inst.waits.pop_front();
        }
        let queued = inst.waits.len() + inst.unassigned as usize;
        // The bound is on requests that wait: with none waiting, a slot
        // free now serves the request whatever the bound (a bound of 0
        // refused every request here, found by the sim fuzz target).
        let free = &p.free[slots.0..slots.0 + slots.1];
        if queued >= cap && (queued > 0 || !slot_free_at(free, t)) {
            self.http_failure(t, super::traffic::HttpFailure::BacklogFull);
            return;
        }
        instance.outstanding += 1;
        let order = *p.order;
        *p.order += 1;
        if let Some(f) = p.assign(inst, instance, slots, t, order, req) {
            self.follow(i, t, f);
        }
    }

    /// Kiefer-Wolfowitz: the serving slot that frees first takes `req`
    /// (`Parts::assign`).
    fn assign(&mut self, now: SimTime, i: u32, order: u64, req: Request) {
        let slots = (i as usize * self.spi, self.spi);
        let (mut p, inst, instance) = self.lazy_parts(i);
        if let Some(f) = p.assign(inst, instance, slots, now, order, req) {
            self.follow(i, now, f);
        }
    }

    /// What an assignment left to do out of line: the ticket of its
    /// completion event, then the promotion of the instance's completions.
    #[cold]
    #[inline(never)]
    fn follow(&mut self, i: u32, now: SimTime, f: Follow) {
        if f.event {
            let ticket = self.evented(f.w, f.done, f.generation);
            let lz = self.lazy.as_mut().expect("lazy");
            lz.items.back_mut(f.w).expect("the item assigned").ticket = ticket;
        }
        if f.over {
            self.promote_all(i, now);
        }
    }

    /// A request assigned to worker `w` whose completion at `done` is an
    /// event: a void one taken back, or a new one scheduled. Its ticket.
    #[cold]
    #[inline(never)]
    fn evented(&mut self, w: u32, done: SimTime, generation: u32) -> u32 {
        let lz = self.lazy.as_mut().expect("lazy");
        if let Some(ticket) = lz.reuse_void(w, done, generation) {
            return ticket;
        }
        lz.tickets = lz.tickets.checked_add(1).unwrap_or(1);
        let ticket = lz.tickets;
        self.q.schedule_tied(
            done,
            self.completion_tie(w, 0),
            Event::ServiceDone {
                worker: w,
                generation,
                slot: ticket,
            },
        );
        ticket
    }

    /// The instance's memory, projected over its assigned requests, could
    /// pass the cgroup limit: every completion still credited late becomes
    /// an event, since once a later one is served an earlier one could be
    /// the request that crosses the limit (found by the `sim` fuzz target).
    /// Completions done by `now` are credited first (the assignment
    /// credits only its own worker's).
    #[cold]
    fn promote_all(&mut self, i: u32, now: SimTime) {
        self.settle(i, now, u32::MAX);
        let first = i as usize * self.spi;
        for w in first..first + self.spi {
            let generation = self.workers[w].generation;
            let lz = self.lazy.as_mut().expect("lazy");
            let mut promoted = Vec::new();
            let mut items = std::mem::replace(&mut lz.items, Queues::new(0));
            items.for_each_mut(w as u32, |it| {
                if it.event {
                    return;
                }
                it.event = true;
                it.ticket = match lz.reuse_void(w as u32, it.done, generation) {
                    Some(ticket) => ticket,
                    None => {
                        lz.tickets = lz.tickets.checked_add(1).unwrap_or(1);
                        promoted.push((it.done, lz.tickets));
                        lz.tickets
                    }
                };
            });
            lz.items = items;
            for (done, ticket) in promoted {
                self.q.schedule_tied(
                    done,
                    self.completion_tie(w as u32, 0),
                    Event::ServiceDone {
                        worker: w as u32,
                        generation,
                        slot: ticket,
                    },
                );
            }
        }
    }
}
