//! The lazy form and the event engine's form of an instance, one into the
//! other (`materialize`, `fold`), what the event loop asks of the fast
//! path around its handlers, and the fast path's own invariants.

use super::{IdleKey, Item, idle_key};
use crate::engine::SimTime;
use crate::fleet::{Request, WorkerState};
use crate::metrics::Observer;
use crate::sim::{Event, Sim};

impl<O: Observer> Sim<'_, O> {
    /// Puts lazy instance `i` in the event engine's form at `t` (the event
    /// settled it): the request in flight on each worker in its slot, with
    /// its completion event; the waiting ones in the backlog in arrival
    /// order, their draws given back; free slots in the idle list in
    /// `IdleKey` order. Folded back at the end of the event (`fold`).
    pub(in crate::sim) fn materialize(&mut self, i: u32, t: SimTime) {
        let ws = self.instance_workers(i);
        let Some(lz) = &mut self.lazy else { return };
        if lz.inst[i as usize].eager {
            return;
        }
        lz.inst[i as usize].eager = true;
        lz.eager.push(i);
        let inst = &mut lz.inst[i as usize];
        inst.pending_mb = 0.0;
        inst.waits.clear();
        let held = &mut lz.held[i as usize];
        let mut waiting: Vec<(u64, Request)> =
            held.timeouts.drain(..).map(|(_, _, o, r)| (o, r)).collect();
        waiting.extend(held.unassigned.drain(..));
        (inst.timeouts, inst.unassigned) = (0, 0);
        let mut idle: Vec<(IdleKey, u32)> = Vec::new();
        for w in ws {
            lz.free[w as usize] = u128::MAX;
            let items = lz.items.take(w);
            let worker = &mut self.workers[w as usize];
            let mut rewound = false;
            let completing = lz.completing == Some(w);
            // Each item with its draw state before it drew, if it was
            // assigned to wait (`Item::rewind`).
            for (k, (it, before)) in items.into_iter().enumerate() {
                if k == 0 && it.start <= t && !completing {
                    if !it.waited {
                        self.m.wait_us += (it.start - it.req.enq_t).0;
                        self.m.waits += 1;
                        self.m.waited += (it.start > it.req.enq_t) as u64;
                    }
                    self.in_service[w as usize] = Some(it.req);
                    worker.in_flight = 1;
                    lz.busy_until[w as usize] = it.done;
                    lz.in_flight_growth[w as usize] = Some(it.growth_mb);
                    // Its event: the one it has, or a new one (ticketed, so
                    // `fold` can hand it back).
                    let ticket = if it.event {
                        it.ticket
                    } else {
                        lz.tickets = lz.tickets.checked_add(1).unwrap_or(1);
                        let generation = worker.generation;
                        self.q.schedule_tied(
                            it.done,
                            w * self.sc.fleet.concurrency as u32,
                            Event::ServiceDone {
                                worker: w,
                                generation,
                                slot: lz.tickets,
                            },
                        );
                        lz.tickets
                    };
                    lz.in_flight_ticket[w as usize] = ticket;
                    continue;
                }
                if it.event {
                    // Its event is void now, and the event engine never had
                    // it: `on_lazy_service_done` uncounts it when it pops,
                    // unless `fold` assigns a request the same completion
                    // (`Lazy::reuse_void`).
                    lz.void.insert((w, it.ticket), (it.done, worker.generation));
                }
                if !rewound {
                    let (noise, warm) = before.expect("a waiting request kept its worker's draws");
                    worker.noise = noise;
                    worker.warm_left_mb = warm;
                    rewound = true;
                }
                waiting.push((it.order, it.req));
            }
            if worker.in_flight == 0 && worker.state == WorkerState::Serving && !completing {
                idle.push((lz.items.idle(w), w));
            }
        }
        // One sorted run per worker (their orders are unique): a stable sort
        // merges the runs instead of partitioning them again.
        waiting.sort_by_key(|&(o, _)| o);
        idle.sort_unstable();
        let instance = &mut self.instances[i as usize];
        debug_assert!(instance.backlog.is_empty() && instance.idle.is_empty());
        instance.backlog.extend(waiting.into_iter().map(|(_, r)| r));
        for (_, w) in idle {
            instance
                .idle
                .push_back((w, self.workers[w as usize].generation));
        }
    }

    /// Puts every instance materialized during the event back in the lazy
    /// form, at the event's time `t`.
    #[inline(always)]
    pub(in crate::sim) fn fold_all(&mut self, t: SimTime) {
        if self.lazy.as_ref().is_some_and(|lz| !lz.eager.is_empty()) {
            self.fold_eager(t);
        }
    }

    #[cold]
    #[inline(never)]
    fn fold_eager(&mut self, t: SimTime) {
        let Some(lz) = &mut self.lazy else { return };
        let eager = std::mem::take(&mut lz.eager);
        for i in eager {
            self.fold(i, t);
        }
    }

    /// The event form of instance `i` back to the lazy one: each request in
    /// flight keeps its completion event, the backlog is assigned again in
    /// order over the slots as they are now.
    fn fold(&mut self, i: u32, t: SimTime) {
        let ws = self.instance_workers(i);
        let lz = self.lazy.as_mut().expect("lazy");
        lz.inst[i as usize].eager = false;
        lz.inst[i as usize].pending_mb = 0.0;
        for w in ws {
            let serving = self.workers[w as usize].state == WorkerState::Serving;
            let lz = self.lazy.as_mut().expect("lazy");
            lz.free[w as usize] = if serving { lz.items.idle(w) } else { u128::MAX };
            let Some(req) = self.in_service[w as usize].take() else {
                continue;
            };
            self.workers[w as usize].in_flight = 0;
            let lz = self.lazy.as_mut().expect("lazy");
            let grown = lz.in_flight_growth[w as usize].take();
            let ticket = std::mem::take(&mut lz.in_flight_ticket[w as usize]);
            let done = lz.busy_until[w as usize];
            let n = self.workers[w as usize].requests + 1;
            // Started in the event form: its growth is drawn now, before
            // anything assigned after it (the order the event engine draws).
            let (growth_mb, private_mb) = match grown {
                Some(d) => {
                    let copied = self
                        .sc
                        .fleet
                        .cow
                        .as_ref()
                        .map_or(0.0, |c| crate::sim::memory::cow_copied(c, n));
                    (d, d + copied)
                }
                None => self.draw_growth(w, n),
            };
            let lz = self.lazy.as_mut().expect("lazy");
            lz.inst[i as usize].pending_mb += private_mb;
            if serving {
                lz.free[w as usize] = idle_key(done, 0, w as u64);
            }
            lz.items.push_back(
                w,
                Item {
                    req,
                    start: t,
                    done,
                    growth_mb,
                    private_mb,
                    order: 0,
                    event: true,
                    ticket,
                    waited: true,
                    rewind: false,
                },
                None,
            );
        }
        self.instances[i as usize].idle.clear();
        let backlog = std::mem::take(&mut self.instances[i as usize].backlog);
        for req in backlog {
            let lz = self.lazy.as_mut().expect("lazy");
            let order = lz.order;
            lz.order += 1;
            self.assign(t, i, order, req);
        }
    }

    /// A worker's slot went on the idle list in the event form (`class`:
    /// 0 at a completion, 1 at any other event).
    pub(in crate::sim) fn note_idle(&mut self, t: SimTime, w: u32, class: u128) {
        if let Some(lz) = &mut self.lazy {
            let tie = if class == 0 {
                w as u64
            } else {
                lz.others += 1;
                lz.others
            };
            lz.items.set_idle(w, idle_key(t, class, tie));
        }
    }

    /// A request started in the event form on `w`, done at `done`.
    pub(in crate::sim) fn note_start(&mut self, w: u32, done: SimTime) {
        if let Some(lz) = &mut self.lazy {
            lz.busy_until[w as usize] = done;
            lz.in_flight_growth[w as usize] = None;
            lz.in_flight_ticket[w as usize] = 0;
        }
    }

    /// Whether an instance was materialized during the current event.
    pub(in crate::sim) fn lazy_eager(&self) -> bool {
        self.lazy.as_ref().is_some_and(|lz| !lz.eager.is_empty())
    }

    /// Completion events in the heap made void and not yet popped.
    pub(in crate::sim) fn void_events(&self) -> usize {
        self.lazy.as_ref().map_or(0, |lz| lz.void.len())
    }

    /// Whether instance `i` is in the lazy form now.
    pub(in crate::sim) fn is_lazy(&self, i: u32) -> bool {
        self.lazy
            .as_ref()
            .is_some_and(|lz| !lz.inst[i as usize].eager)
    }

    /// Requests waiting at `t` on lazy instance `i` (the event form's
    /// backlog length).
    pub(in crate::sim) fn lazy_backlog(&self, i: u32, t: SimTime) -> usize {
        let Some(lz) = &self.lazy else { return 0 };
        let inst = &lz.inst[i as usize];
        inst.waits.iter().filter(|&&s| s > t).count() + inst.unassigned as usize
    }

    /// Before event `ev` at `t`: credits the completions due before it on
    /// the instances it touches (arrivals and retries settle theirs once
    /// the balancer has picked it, in `lazy_send`).
    pub(in crate::sim) fn settle_for(&mut self, t: SimTime, ev: Event) {
        let of = |s: &Self, w: u32| s.workers[w as usize].instance;
        match ev {
            Event::Retry => {}
            Event::ServiceDone { worker, .. } => {
                let tie = self.completion_tie(worker, 0);
                self.settle(of(self, worker), t, tie);
            }
            Event::Sample { worker, .. }
            | Event::DrainDeadline { worker, .. }
            | Event::BootDone { worker, .. }
            | Event::LifetimeDue { worker, .. }
            | Event::EvilCheck { worker, .. }
            | Event::Drained { worker, .. }
            | Event::Handover { worker, .. }
            | Event::RequestTimeout { worker, .. } => self.settle(of(self, worker), t, u32::MAX),
            Event::InstanceCheck { instance }
            | Event::InstanceRestart { instance }
            | Event::RollingRestart { instance, .. }
            | Event::MasterWake { instance } => self.settle(instance, t, u32::MAX),
            Event::Timeline | Event::Reload { .. } | Event::Step => self.settle_all(t, u32::MAX),
        }
    }

    /// The lazy form's own invariants (tests): every request is counted
    /// once, each worker's requests are in order, back to back, and only a
    /// serving worker is assigned work to start.
    pub(in crate::sim) fn assert_lazy(&self, t: SimTime) {
        let lz = self.lazy.as_ref().expect("lazy");
        for (i, inst) in lz.inst.iter().enumerate() {
            let h = &lz.held[i];
            assert_eq!(
                (inst.timeouts as usize, inst.unassigned as usize),
                (h.timeouts.len(), h.unassigned.len()),
                "t={t}: instance {i}'s held requests counted"
            );
            let mut held = h.timeouts.len() + h.unassigned.len();
            for w in self.instance_workers(i as u32) {
                let items = &lz.items;
                held += items.len(w) as usize;
                assert!(items.befores_kept(w), "t={t}: worker {w} draw states kept");
                let mut prev: Option<&Item> = None;
                for (k, it) in items.iter(w).enumerate() {
                    // (A request started in the event form keeps its
                    // completion, not its start: `fold`.)
                    assert!(
                        it.waited || it.done == it.start + it.req.service,
                        "t={t}: worker {w} item {k}"
                    );
                    assert!(it.start >= it.req.enq_t, "t={t}: worker {w} starts early");
                    if let Some(p) = prev {
                        assert_eq!(
                            it.start,
                            p.done.max(it.req.enq_t),
                            "t={t}: worker {w} not back to back"
                        );
                    } else {
                        assert!(it.done >= t, "t={t}: worker {w} head was due");
                    }
                    prev = Some(it);
                }
                let state = self.workers[w as usize].state;
                assert!(
                    items.len(w) <= 1 || state == WorkerState::Serving,
                    "t={t}: worker {w} ({state:?}) has work waiting"
                );
            }
            assert_eq!(
                held, self.instances[i].outstanding as usize,
                "t={t}: instance {i} outstanding"
            );
        }
    }

    /// At the end of the run: the requests that started before `end` but
    /// are not done count their wait (the event engine counts it at the
    /// start).
    pub(in crate::sim) fn finish_lazy(&mut self, end: SimTime) {
        let Some(lz) = &self.lazy else { return };
        for w in 0..self.workers.len() as u32 {
            for it in lz.items.iter(w).filter(|it| it.start < end && !it.waited) {
                self.m.wait_us += (it.start - it.req.enq_t).0;
                self.m.waits += 1;
                self.m.waited += (it.start > it.req.enq_t) as u64;
            }
        }
    }
}
