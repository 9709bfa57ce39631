//! The `pinned` connection model (`[client] connections = "pinned"`):
//! keep-alive connections as entities, each belonging to the worker whose
//! `accept()` took it.
//!
//! - The client holds `conns_per_instance` connections to each instance
//!   and sends its requests round-robin over them, one at a time on each
//!   (pipelining 1: a request for a busy connection waits client-side).
//! - A request goes down its connection to the worker that owns it; with
//!   every slot of that worker busy it waits there (`queued`), never on a
//!   sibling.
//! - A connection with no owner is (re)opened on its next request and
//!   accepted by one of the instance's serving workers, drawn uniformly
//!   (they race on the shared listening socket); with none serving it waits
//!   in the instance's backlog (the listen queue) for the first worker that
//!   serves. A booting replacement therefore serves nothing until some
//!   connection of its instance is reopened: a sibling's exit, the server's
//!   keep-alive timer, a reset.
//! - The server closes a connection when its worker drains (uvicorn closes
//!   idle keep-alive connections at shutdown; a response in flight carries
//!   `Connection: close`) or exits, and after `server_keepalive_s` idle.
//!   A request sent on a closed connection within `stale_window_s` of the
//!   close is reset (the client has not seen the FIN) and retried on the
//!   same connection, reopened; later, the client reconnects without error.
//! - The client drops a connection it has left idle for
//!   `client_idle_timeout_s` (undici's `keepAliveTimeout`, 4 s) and opens a
//!   new one for its next request: a server close it never reused the
//!   connection after costs nothing, so a server keep-alive longer than
//!   the client's causes no idle race.
//!
//! The fleet's balancer still picks the instance; this model decides the
//! worker. `connections = "pooled"` (the seeds' model, `traffic.rs`) sends
//! a request to any free worker instead.

use super::Sim;
use crate::engine::SimTime;
use crate::fleet::{Request, WorkerState};
use crate::metrics::Observer;
use crate::scenario::{Connections, Scenario};
use rand::Rng;
use std::collections::VecDeque;

/// No connection (a request not sent down a pinned one) or no owner.
pub(crate) const NONE: u32 = u32::MAX;

struct Conn {
    /// The worker struct that accepted it and its generation; `NONE`: the
    /// client opens it on its next request.
    owner: u32,
    generation: u32,
    /// When the server closed it (its worker drained or exited);
    /// `SimTime::MAX` while open.
    closed_at: SimTime,
    /// The last response on it (or its accept): the server's idle timer.
    last_used: SimTime,
    /// One of its requests is in flight or waiting for its worker.
    busy: bool,
    /// Requests waiting for it, client-side, oldest first.
    waiting: VecDeque<Request>,
}

pub(super) struct Pinned {
    per_instance: u32,
    keepalive: Option<SimTime>,
    /// The client's own idle timeout.
    client_idle: Option<SimTime>,
    /// Instance-major: connection `c` belongs to instance `c / per_instance`.
    conns: Vec<Conn>,
    /// The client's round-robin cursor per instance.
    next: Vec<u32>,
    /// Per worker struct: requests its connections brought while every
    /// slot was busy, oldest first.
    queued: Vec<VecDeque<Request>>,
    /// Connections freed during the current event: their waiting requests
    /// are sent once the event's state changes are done (`Sim::send_freed`).
    freed: Vec<u32>,
}

impl Pinned {
    pub(super) fn new(sc: &Scenario, workers: usize) -> Option<Self> {
        let Connections::Pinned {
            per_instance,
            server_keepalive,
            client_idle_timeout,
        } = sc.client.connections
        else {
            return None;
        };
        let n = sc.fleet.instances * per_instance as usize;
        Some(Pinned {
            per_instance,
            keepalive: server_keepalive,
            client_idle: client_idle_timeout,
            conns: (0..n)
                .map(|_| Conn {
                    owner: NONE,
                    generation: 0,
                    closed_at: SimTime::MAX,
                    last_used: SimTime::ZERO,
                    busy: false,
                    waiting: VecDeque::new(),
                })
                .collect(),
            next: vec![0; sc.fleet.instances],
            queued: (0..workers).map(|_| VecDeque::new()).collect(),
            freed: Vec::new(),
        })
    }

    /// Requests waiting client-side or at a worker (the conservation check).
    pub(super) fn waiting(&self) -> u64 {
        let at_conns: usize = self.conns.iter().map(|c| c.waiting.len()).sum();
        let at_workers: usize = self.queued.iter().map(VecDeque::len).sum();
        (at_conns + at_workers) as u64
    }

    /// Requests of instance `i` waiting client-side or at its workers.
    pub(super) fn waiting_at(&self, i: usize, workers: std::ops::Range<usize>) -> usize {
        let per = self.per_instance as usize;
        let at_conns: usize = self.conns[i * per..(i + 1) * per]
            .iter()
            .map(|c| c.waiting.len())
            .sum();
        at_conns
            + self.queued[workers]
                .iter()
                .map(VecDeque::len)
                .sum::<usize>()
    }

    pub(super) fn queued_at(&self, w: usize) -> usize {
        self.queued[w].len()
    }
}

impl<O: Observer> Sim<'_, O> {
    /// One attempt in the pinned model: a fresh request takes the next
    /// connection of the balancer's instance; a retry goes down the
    /// connection that was reset, reopened.
    #[inline(never)]
    pub(super) fn send_pinned(&mut self, t: SimTime, mut req: Request) {
        let c = if req.conn != NONE {
            req.conn
        } else {
            let i = self.pick_instance() as usize;
            let p = self.pinned.as_mut().expect("pinned model");
            let k = p.next[i];
            p.next[i] = if k + 1 == p.per_instance { 0 } else { k + 1 };
            i as u32 * p.per_instance + k
        };
        let i = self.conn_instance(c);
        if self.rate_window {
            self.instances[i as usize].arrivals.record(t);
        }
        req.conn = c;
        req.enq_t = t;
        self.instances[i as usize].outstanding += 1;
        let p = self.pinned.as_mut().expect("pinned model");
        if p.conns[c as usize].busy {
            p.conns[c as usize].waiting.push_back(req);
        } else {
            self.send_on(t, c, req);
        }
    }

    fn conn_instance(&self, c: u32) -> u32 {
        c / self.pinned.as_ref().expect("pinned model").per_instance
    }

    /// Sends `req` down idle connection `c`: a reset if the server closed
    /// it within the client's stale window, else to its worker (opened
    /// first if it has none).
    fn send_on(&mut self, t: SimTime, c: u32, req: Request) {
        let i = self.conn_instance(c);
        let stale_window = self.sc.client.stale_window;
        let p = self.pinned.as_mut().expect("pinned model");
        let (keepalive, client_idle) = (p.keepalive, p.client_idle);
        let conn = &mut p.conns[c as usize];
        debug_assert!(!conn.busy);
        if conn.owner != NONE {
            let mut closed = conn.closed_at;
            if let Some(k) = keepalive {
                closed = closed.min(conn.last_used + k);
            }
            // The client dropped the connection itself, idle: a new one.
            let dropped = client_idle.is_some_and(|k| t >= conn.last_used + k);
            if dropped || t >= closed {
                conn.owner = NONE;
                if !dropped && t < closed + stale_window {
                    self.instances[i as usize].outstanding -= 1;
                    self.connection_error(t, i, req);
                    return;
                }
            }
        }
        conn.busy = true;
        if conn.owner == NONE {
            match self.accepting_worker(i) {
                Some(w) => {
                    let generation = self.workers[w as usize].generation;
                    let p = self.pinned.as_mut().expect("pinned model");
                    let conn = &mut p.conns[c as usize];
                    conn.owner = w;
                    conn.generation = generation;
                    conn.closed_at = SimTime::MAX;
                    conn.last_used = t;
                }
                None => {
                    // No worker serves: the connection waits in the listen queue.
                    if self.instances[i as usize].backlog.len() < self.backlog_cap {
                        self.instances[i as usize].backlog.push_back(req);
                    } else {
                        self.instances[i as usize].outstanding -= 1;
                        self.conn_release(c, true);
                        self.http_failure(t, super::traffic::HttpFailure::BacklogFull);
                    }
                    return;
                }
            }
        }
        let w = self.pinned.as_ref().expect("pinned model").conns[c as usize].owner;
        self.deliver(t, w, req);
    }

    /// A serving worker of instance `i`, uniformly (they race on accept).
    fn accepting_worker(&mut self, i: u32) -> Option<u32> {
        let first = self.instances[i as usize].first_worker;
        let serving =
            |s: &Self, k: u32| s.workers[(first + k) as usize].state == WorkerState::Serving;
        let n = (0..self.spi as u32).filter(|&k| serving(self, k)).count();
        if n == 0 {
            return None;
        }
        let mut pick = self.streams.routing.random_range(0..n);
        for k in 0..self.spi as u32 {
            if serving(self, k) {
                if pick == 0 {
                    return Some(first + k);
                }
                pick -= 1;
            }
        }
        unreachable!("a serving worker was counted")
    }

    /// Worker `w` takes `req`: a free slot, or its queue.
    fn deliver(&mut self, t: SimTime, w: u32, req: Request) {
        match self.slots_of(w).iter().position(Option::is_none) {
            Some(slot) => self.start_service(t, w, slot as u32, req),
            None => self.pinned.as_mut().expect("pinned model").queued[w as usize].push_back(req),
        }
    }

    /// A worker took `req` from the listen queue: the connection is its.
    pub(super) fn adopt(&mut self, t: SimTime, w: u32, req: &Request) {
        let generation = self.workers[w as usize].generation;
        let p = self.pinned.as_mut().expect("pinned model");
        let conn = &mut p.conns[req.conn as usize];
        debug_assert_eq!(conn.owner, NONE);
        conn.owner = w;
        conn.generation = generation;
        conn.closed_at = SimTime::MAX;
        conn.last_used = t;
    }

    /// The next request worker `w`'s connections brought, if any.
    pub(super) fn next_queued(&mut self, w: u32) -> Option<Request> {
        self.pinned.as_mut()?.queued[w as usize].pop_front()
    }

    /// A request on `c` is done (answered, failed or reset): the connection
    /// is free for its next one. `closed`: the client knows the connection
    /// is gone (a reset, a refused connect, or `Connection: close` from a
    /// worker that no longer serves), so its next request reopens it.
    pub(super) fn conn_release(&mut self, c: u32, closed: bool) {
        let p = self.pinned.as_mut().expect("pinned model");
        let conn = &mut p.conns[c as usize];
        conn.busy = false;
        if closed {
            conn.owner = NONE;
        }
        if !conn.waiting.is_empty() {
            p.freed.push(c);
        }
    }

    /// A response on `c` at `t`.
    pub(super) fn conn_answered(&mut self, t: SimTime, c: u32) {
        let p = self.pinned.as_ref().expect("pinned model");
        let conn = &p.conns[c as usize];
        let owner = conn.owner;
        let gone = owner == NONE
            || self.workers[owner as usize].generation != conn.generation
            || self.workers[owner as usize].state != WorkerState::Serving;
        self.pinned.as_mut().expect("pinned model").conns[c as usize].last_used = t;
        self.conn_release(c, gone);
    }

    /// Worker `w`'s server closes its connections (drain or exit).
    pub(super) fn close_conns_of(&mut self, t: SimTime, w: u32) {
        let generation = self.workers[w as usize].generation;
        let Some(p) = self.pinned.as_mut() else {
            return;
        };
        for conn in &mut p.conns {
            if conn.owner == w && conn.generation == generation {
                conn.closed_at = conn.closed_at.min(t);
            }
        }
    }

    /// Worker `w` starts what its connections queued, on every free slot.
    pub(super) fn serve_queued(&mut self, t: SimTime, w: u32) {
        while let Some(slot) = self.slots_of(w).iter().position(Option::is_none) {
            let Some(req) = self.next_queued(w) else {
                return;
            };
            self.start_service(t, w, slot as u32, req);
        }
    }

    /// Worker `w` was killed: what its connections brought and it had not
    /// started is reset with it.
    pub(super) fn reset_queued(&mut self, t: SimTime, w: u32) {
        let i = self.workers[w as usize].instance;
        while let Some(req) = self.next_queued(w) {
            self.instances[i as usize].outstanding -= 1;
            self.connection_error(t, i, req);
        }
    }

    /// After an event: requests waiting for a connection freed during it go.
    #[inline(never)]
    pub(super) fn send_freed(&mut self, t: SimTime) {
        while let Some(c) = self.pinned.as_mut().and_then(|p| p.freed.pop()) {
            loop {
                let p = self.pinned.as_mut().expect("pinned model");
                let conn = &mut p.conns[c as usize];
                if conn.busy {
                    break;
                }
                let Some(req) = conn.waiting.pop_front() else {
                    break;
                };
                self.send_on(t, c, req);
            }
        }
    }
}
