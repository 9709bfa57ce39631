//! Requests: arrivals, the load balancer, dispatch to a free worker or the
//! backlog, completions, and the retrying client.
//!
//! The client model: the client keeps `keepalive_conns_per_worker` idle
//! connections per worker. When a worker exits, its connections close, but
//! the client may still pick one for `stale_window` (it has not seen the
//! FIN yet). A request that picks a closed connection is reset, as is a
//! request in flight on a killed worker. A reset request is retried (once,
//! in the seeds) on a fresh pick: success is a `retry_ok`, a second
//! connection error a `fetch_failed`. That is `[client] connections =
//! "pooled"`; `"close"` has no stale connections, and `"pinned"` sends a
//! request down a connection owned by one worker (`connections.rs`).

use super::connections::NONE;
use super::{Event, Sim};
use crate::engine::SimTime;
use crate::engine::rng::open01;
use crate::fleet::{Request, WorkerState};
use crate::metrics::{EventKind, EventRow, Observer};
use crate::scenario::{Accept, BalancerKind};
use rand::Rng;

/// Why a request failed without a connection error.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum HttpFailure {
    /// The instance backlog was full (503).
    BacklogFull,
    /// The request waited longer than the queue timeout (504).
    Timeout,
}

impl<O: Observer> Sim<'_, O> {
    /// Schedules the process's next arrival, if one comes before the end.
    #[inline]
    pub(super) fn schedule_next_arrival(&mut self) {
        let next = self.arrivals.next(&mut self.streams.arrivals);
        // Kept out of the queue, in the place `schedule` would give it.
        self.next_arrival = match next {
            Some(at) => self.q.key_for(at),
            None => u128::MAX,
        };
    }

    /// The next arrival (kept beside the queue, `next_arrival`), handled
    /// as `handle` handles an event, less what an arrival never needs: it settles nothing before it (`lazy_send` settles the
    /// instance the balancer picks), and no worker changes state in it (no
    /// path from `send` reaches `set_state` or `kill_in_flight`), so no
    /// instance is materialized to fold back and the serving count, whose
    /// minimum the loop samples after other events, is what it was.
    #[inline(always)]
    pub(super) fn arrive(&mut self, t: SimTime) {
        self.on_arrival(t);
        if self.pinned.is_some() {
            self.send_freed(t);
        }
        debug_assert!(!self.lazy_eager(), "an arrival materialized an instance");
    }

    pub(super) fn on_arrival(&mut self, t: SimTime) {
        self.schedule_next_arrival();
        self.m.arrived += 1;
        self.step.arrivals += 1;
        let service = self
            .service
            .next(&self.sc.workload.service, &mut self.streams.service);
        let req = Request {
            first_t: t,
            enq_t: t,
            service,
            attempt: 0,
            conn: NONE,
        };
        self.send(t, req);
    }

    pub(super) fn on_retry(&mut self, t: SimTime) {
        let (due, req) = self
            .retries
            .pop_front()
            .expect("a retry event has a request");
        assert_eq!(due, t, "retries are due in the order they were scheduled");
        self.m.pending_retries -= 1;
        self.send(t, req);
    }

    /// One attempt: pick an instance, maybe hit a stale connection, dispatch:
    /// one function per engine (`send_to`), so that neither engine's hot
    /// path is compiled around the other's.
    #[inline(always)]
    fn send(&mut self, t: SimTime, req: Request) {
        if self.lazy.is_some() {
            self.send_lazy(t, req);
        } else {
            self.send_events(t, req);
        }
    }

    /// `send` on the fast path (`lazy/`).
    #[inline(never)]
    fn send_lazy(&mut self, t: SimTime, req: Request) {
        self.send_to::<true>(t, req);
    }

    /// `send` on the event engine.
    #[inline(never)]
    fn send_events(&mut self, t: SimTime, req: Request) {
        self.send_to::<false>(t, req);
    }

    #[inline(always)]
    fn send_to<const LAZY: bool>(&mut self, t: SimTime, mut req: Request) {
        if self.pinned.is_some() {
            self.send_pinned(t, req);
            return;
        }
        let i = self.pick_instance();
        if self.rate_window {
            self.instances[i as usize].arrivals.record(t);
        }
        if self.stale_hit(t, i) {
            self.connection_error(t, i, req);
            return;
        }
        req.enq_t = t;
        if LAZY && self.is_lazy(i) {
            self.lazy_send(t, i, req);
        } else if LAZY {
            // An instance in the event form: only inside an event that
            // materialized it (a retry or a freed connection's request sent
            // by it), never at an arrival (every event folds what it
            // materialized before the next).
            self.send_eager(t, i, req);
        } else {
            self.send_eager_inline(t, i, req);
        }
    }

    /// The event form's dispatch, out of line for the fast path.
    #[cold]
    #[inline(never)]
    fn send_eager(&mut self, t: SimTime, i: u32, req: Request) {
        self.send_eager_inline(t, i, req);
    }

    /// The event form's dispatch: a free slot, the backlog, or a 503.
    #[inline(always)]
    fn send_eager_inline(&mut self, t: SimTime, i: u32, req: Request) {
        self.instances[i as usize].outstanding += 1;
        if let Some((w, slot)) = self.take_idle(i) {
            self.start_service(t, w, slot, req);
        } else if self.instances[i as usize].backlog.len() < self.backlog_cap {
            self.instances[i as usize].backlog.push_back(req);
        } else {
            self.instances[i as usize].outstanding -= 1;
            self.http_failure(t, HttpFailure::BacklogFull);
        }
    }

    #[inline(always)]
    pub(super) fn pick_instance(&mut self) -> u32 {
        let n = self.instances.len();
        match self.sc.workload.balancer {
            BalancerKind::RoundRobin => {
                let i = self.rr_next;
                self.rr_next = if i + 1 == n { 0 } else { i + 1 };
                i as u32
            }
            BalancerKind::Random => self.streams.routing.random_range(0..n) as u32,
            BalancerKind::LeastOutstanding => {
                // Ties go to the instance after the last pick, so equal
                // instances share the load round-robin.
                let start = self.rr_next;
                let best = (0..n)
                    .map(|k| (start + k) % n)
                    .min_by_key(|&i| self.instances[i].outstanding)
                    .expect("at least one instance");
                self.rr_next = (best + 1) % n;
                best as u32
            }
        }
    }

    /// Whether this attempt picks a connection the server already closed.
    #[inline(always)]
    pub(super) fn stale_hit(&mut self, t: SimTime, i: u32) -> bool {
        let per_worker = self.sc.client.keepalive_conns_per_worker;
        let inst = &mut self.instances[i as usize];
        while inst.stale_conns.front().is_some_and(|&exp| exp <= t) {
            inst.stale_conns.pop_front();
        }
        if inst.stale_conns.is_empty() || per_worker == 0 {
            return false;
        }
        let mut stale = inst.stale_conns.len();
        if self.agg.is_some() {
            // An aggregate step places its requests over the step after the
            // step's exits have run: a connection closed after `t` is not
            // stale yet (entries are in exit order, one window each).
            let window = self.sc.client.stale_window;
            stale = inst.stale_conns.partition_point(|&exp| exp <= t + window);
            if stale == 0 {
                return false;
            }
        }
        let p = (stale as f64 / self.sc.keepalive_pool()).min(1.0);
        if open01(&mut self.streams.client) < p {
            inst.stale_conns.pop_front();
            return true;
        }
        false
    }

    /// Where the request on worker `w`'s serving slot `slot` is kept
    /// (`Sim::in_service`, beside the workers: a `Worker` stays two cache
    /// lines, `fleet::Worker`).
    #[inline(always)]
    pub(super) fn slot_index(&self, w: u32, slot: u32) -> usize {
        w as usize * self.sc.fleet.concurrency + slot as usize
    }

    /// Worker `w`'s serving slots: the request on each, if any.
    #[inline(always)]
    pub(super) fn slots_of(&self, w: u32) -> &[Option<Request>] {
        let c = self.sc.fleet.concurrency;
        &self.in_service[w as usize * c..(w as usize + 1) * c]
    }

    /// A free serving slot of instance `i`, skipping stale idle entries:
    /// the one idle longest, or as `[fleet] accept` says.
    #[inline(always)]
    fn take_idle(&mut self, i: u32) -> Option<(u32, u32)> {
        if self.sc.fleet.accept != Accept::LongestIdle {
            return self.take_other_idle(i);
        }
        self.take_idle_end::<false>(i)
    }

    /// The kinds of `[fleet] accept` other than the default, out of line.
    #[cold]
    #[inline(never)]
    fn take_other_idle(&mut self, i: u32) -> Option<(u32, u32)> {
        match self.sc.fleet.accept {
            Accept::Random => self.take_random_idle(i),
            Accept::First => self.take_first_idle(i),
            _ => self.take_idle_end::<true>(i),
        }
    }

    /// The first live entry from the idle list's front (idle longest), or
    /// from its back (`BACK`: idle shortest).
    #[inline(always)]
    fn take_idle_end<const BACK: bool>(&mut self, i: u32) -> Option<(u32, u32)> {
        loop {
            let idle = &mut self.instances[i as usize].idle;
            let (w, generation) = if BACK {
                idle.pop_back()
            } else {
                idle.pop_front()
            }?;
            let worker = &self.workers[w as usize];
            if worker.generation != generation || worker.state != WorkerState::Serving {
                continue;
            }
            let slot = self.slots_of(w).iter().position(Option::is_none);
            debug_assert!(slot.is_some(), "idle entry for a full worker");
            if let Some(slot) = slot {
                return Some((w, slot as u32));
            }
        }
    }

    /// `fleet.accept = "random"`: a free serving slot of instance `i` drawn
    /// uniformly (on the routing stream) from its live idle entries, stale
    /// ones dropped first.
    fn take_random_idle(&mut self, i: u32) -> Option<(u32, u32)> {
        let workers = &self.workers;
        let idle = &mut self.instances[i as usize].idle;
        idle.retain(|&(w, generation)| {
            let worker = &workers[w as usize];
            worker.generation == generation && worker.state == WorkerState::Serving
        });
        if idle.is_empty() {
            return None;
        }
        let k = self.streams.routing.random_range(0..idle.len());
        let (w, _) = idle.remove(k).expect("k is an index of the idle list");
        let slot = self.slots_of(w).iter().position(Option::is_none);
        debug_assert!(slot.is_some(), "idle entry for a full worker");
        slot.map(|slot| (w, slot as u32))
    }

    /// `fleet.accept = "first"`: the free serving slot of instance `i`'s
    /// idle worker in the lowest slot (the lowest index: an instance's
    /// workers are numbered in slot order), stale entries dropped first.
    fn take_first_idle(&mut self, i: u32) -> Option<(u32, u32)> {
        let workers = &self.workers;
        let idle = &mut self.instances[i as usize].idle;
        idle.retain(|&(w, generation)| {
            let worker = &workers[w as usize];
            worker.generation == generation && worker.state == WorkerState::Serving
        });
        let (k, _) = idle.iter().enumerate().min_by_key(|(_, e)| e.0)?;
        let (w, _) = idle.remove(k).expect("k is an index of the idle list");
        let slot = self.slots_of(w).iter().position(Option::is_none);
        debug_assert!(slot.is_some(), "idle entry for a full worker");
        slot.map(|slot| (w, slot as u32))
    }

    #[inline(always)]
    pub(super) fn start_service(&mut self, t: SimTime, w: u32, slot: u32, req: Request) {
        self.m.wait_us += (t - req.enq_t).0;
        self.m.waits += 1;
        self.m.waited += (t > req.enq_t) as u64;
        let service = if self.sc.policy.modes.cold_start.is_some() {
            self.cold_service(t, w, req.service)
        } else {
            req.service
        };
        let k = self.slot_index(w, slot);
        debug_assert!(self.in_service[k].is_none());
        self.in_service[k] = Some(req);
        let worker = &mut self.workers[w as usize];
        worker.in_flight += 1;
        let generation = worker.generation;
        self.note_start(w, t + service);
        self.q.schedule_tied(
            t + service,
            self.completion_tie(w, slot),
            Event::ServiceDone {
                worker: w,
                generation,
                slot,
            },
        );
        self.arm_request_timeout(t, w, slot, req.service);
    }

    pub(super) fn on_service_done(&mut self, t: SimTime, w: u32, generation: u32, slot: u32) {
        let k = self.slot_index(w, slot);
        let worker = &mut self.workers[w as usize];
        if worker.generation != generation {
            return; // the process was killed; its requests already failed
        }
        let req = self.in_service[k]
            .take()
            .expect("a service completion for an empty slot");
        worker.in_flight -= 1;
        worker.requests += 1;
        let i = worker.instance;
        self.instances[i as usize].outstanding -= 1;
        let conn = req.conn;
        self.complete(t, i, req);
        if conn != NONE {
            self.conn_answered(t, conn);
        }
        self.grow(t, w);
        if self.oom_check(t, i) && self.workers[w as usize].generation != generation {
            return; // this worker was the OOM victim
        }
        let before = self.workers[w as usize].requests - 1;
        self.after_requests(t, w, before);
        if self.workers[w as usize].generation != generation {
            return; // a trigger recycled the idle worker and it exited at once
        }
        self.slot_freed(t, w, slot);
    }

    /// A slot of worker `w` has just freed: take queued work, go idle, or
    /// finish draining.
    pub(super) fn slot_freed(&mut self, t: SimTime, w: u32, slot: u32) {
        let worker = &self.workers[w as usize];
        // Pinned: a drain begun during this completion may already have
        // refilled the slot from the worker's queue.
        if self.pinned.is_some() && self.in_service[self.slot_index(w, slot)].is_some() {
            return;
        }
        let (i, generation, in_flight) = (worker.instance, worker.generation, worker.in_flight);
        match worker.state {
            WorkerState::Draining => {
                if let Some(req) = self.next_queued(w) {
                    self.start_service(t, w, slot, req);
                } else if in_flight == 0 {
                    self.exit(t, w);
                }
            }
            WorkerState::Serving if self.pinned.is_some() => {
                if let Some(req) = self.next_queued(w) {
                    self.start_service(t, w, slot, req);
                } else if let Some(req) = self.next_from_backlog(t, i) {
                    self.adopt(t, w, &req);
                    self.start_service(t, w, slot, req);
                }
            }
            WorkerState::Serving => match self.next_from_backlog(t, i) {
                Some(req) => self.start_service(t, w, slot, req),
                None => {
                    self.instances[i as usize].idle.push_back((w, generation));
                    self.note_idle(t, w, 0);
                }
            },
            WorkerState::Booting | WorkerState::Dead => {
                unreachable!("a booting or dead worker has no slots in use")
            }
        }
    }

    /// The oldest queued request that has not timed out; timed-out ones fail.
    #[inline(always)]
    pub(super) fn next_from_backlog(&mut self, t: SimTime, i: u32) -> Option<Request> {
        let timeout = self.sc.workload.queue_timeout;
        while let Some(req) = self.instances[i as usize].backlog.pop_front() {
            if t - req.enq_t >= timeout {
                self.instances[i as usize].outstanding -= 1;
                if req.conn != NONE {
                    self.conn_release(req.conn, true);
                }
                self.http_failure(t, HttpFailure::Timeout);
                continue;
            }
            return Some(req);
        }
        None
    }

    #[inline(always)]
    pub(super) fn complete(&mut self, t: SimTime, i: u32, req: Request) {
        self.m.completed += 1;
        self.step.completions += 1;
        let latency = t - req.first_t;
        self.m.latency_us.record(latency.0);
        if req.attempt > 0 {
            self.m.retry_ok += 1;
            self.client_row(t, i, EventKind::RetryOk, latency);
        }
    }

    pub(super) fn http_failure(&mut self, _t: SimTime, why: HttpFailure) {
        self.m.failed += 1;
        self.step.failures += 1;
        match why {
            HttpFailure::BacklogFull => self.m.failed_backlog_full += 1,
            HttpFailure::Timeout => self.m.failed_timeout += 1,
        }
    }

    /// The attempt was reset: retry if the client has retries left.
    pub(super) fn connection_error(&mut self, t: SimTime, i: u32, mut req: Request) {
        self.m.resets += 1;
        if req.conn != NONE {
            self.conn_release(req.conn, true);
        }
        if req.attempt < self.sc.client.retries {
            req.attempt += 1;
            self.m.pending_retries += 1;
            let due = t + self.sc.client.retry_delay;
            self.retries.push_back((due, req));
            self.q.schedule(due, Event::Retry);
        } else {
            self.m.failed += 1;
            self.m.fetch_failed += 1;
            self.step.failures += 1;
            self.client_row(t, i, EventKind::FetchFailed, t - req.first_t);
        }
    }

    fn client_row(&mut self, t: SimTime, i: u32, kind: EventKind, latency: SimTime) {
        self.obs.event(&EventRow {
            t,
            kind,
            instance: i,
            worker: None,
            decision: None,
            latency_ms: Some(latency.as_millis_f64()),
        });
    }
}
