//! What crediting and assigning a request touch, borrowed apart from the
//! rest of `Sim` once a request (`Sim::lazy_parts`): the settle, credit
//! and assignment steps of the fast path (`super`'s module docs).

use super::*;

/// What crediting and assigning a request touch, borrowed apart from the
/// rest of `Sim` (`Sim::lazy_parts`, with the instance's `Inst` and
/// `Instance`): one borrow a request, each index checked once.
pub(super) struct Parts<'a> {
    pub(super) sc: &'a Scenario,
    pub(super) items: &'a mut Queues,
    /// Per instance.
    pub(super) held: &'a mut [Held],
    pub(super) free: &'a mut [IdleKey],
    pub(super) order: &'a mut u64,
    pub(super) workers: &'a mut [Worker],
    pub(super) m: &'a mut Metrics,
    pub(super) step: &'a mut StepCounts,
}

/// What an assignment leaves to be done out of line (`Sim::follow`): its
/// completion is an event (scheduled by `Sim::evented`), or the
/// instance's projected memory could pass the limit (`Sim::promote_all`).
pub(super) struct Follow {
    pub(super) w: u32,
    pub(super) done: SimTime,
    pub(super) generation: u32,
    pub(super) event: bool,
    pub(super) over: bool,
}

impl Parts<'_> {
    /// Credits the instance's completions before the event keyed `(t,
    /// tie)` (`Sim::settle`, when no request of the instance times out in
    /// its backlog): its workers are `first..first + spi`, each worker's in
    /// its own order. Exact mode's memory sums and overshoot integral do
    /// not depend on the order of their terms (`memory::quantize_mb`),
    /// so the workers need not be interleaved in time order.
    #[inline(always)]
    pub(super) fn settle(
        &mut self,
        inst: &mut Inst,
        instance: &mut Instance,
        (first, spi): (usize, usize),
        t: SimTime,
        tie: u32,
    ) {
        for w in first..first + spi {
            self.settle_worker(inst, instance, w as u32, t, tie);
        }
    }

    /// Credits worker `w`'s completions before `(t, tie)` in order,
    /// stopping at one that is an event.
    #[inline(always)]
    pub(super) fn settle_worker(
        &mut self,
        inst: &mut Inst,
        instance: &mut Instance,
        w: u32,
        t: SimTime,
        tie: u32,
    ) {
        while let Some(it) = self.items.front(w) {
            // `(done, w) < (t, tie)`
            if it.event || it.done.0 > t.0 || (it.done.0 == t.0 && w >= tie) {
                return;
            }
            self.credit(inst, instance, w);
        }
    }

    /// A completion with local effects only, credited at its time: what
    /// `Sim::served` does (with `Sim::complete` and `Sim::apply_growth`)
    /// for a request that is not a retry.
    #[inline(always)]
    pub(super) fn credit(&mut self, inst: &mut Inst, instance: &mut Instance, w: u32) {
        let it = self.items.pop_front_ref(w).expect("an item");
        let (done, start, enq_t, first_t) = (it.done, it.start, it.req.enq_t, it.req.first_t);
        let (waited, growth_mb, private_mb) = (it.waited, it.growth_mb, it.private_mb);
        debug_assert!(it.req.attempt == 0, "a retried request is an event");
        let empty = self.items.is_empty(w);
        // (`Inst::waits` keeps its start until `lazy_send` drops what has
        // started.)
        inst.pending_mb -= private_mb;
        if empty {
            self.items.set_idle(w, idle_key(done, 0, w as u64));
        }
        let m = &mut *self.m;
        m.events += 1;
        if !waited {
            m.wait_us += (start - enq_t).0;
            m.waits += 1;
            m.waited += (start > enq_t) as u64;
        }
        let worker = &mut self.workers[w as usize];
        worker.requests += 1;
        instance.outstanding -= 1;
        m.completed += 1;
        self.step.completions += 1;
        m.latency_us.record((done - first_t).0);
        if growth_mb > 0.0 {
            let rss = worker.rss_mb + growth_mb;
            set_rss_in(self.sc, false, m, worker, instance, done, rss);
        }
        if self.sc.fleet.cow.is_some() {
            unshare_in(self.sc, false, worker, instance);
        }
        debug_assert!(
            instance.usage_mb(self.sc.fleet.master_mb) <= self.sc.fleet.container_mb,
            "a lazy completion passed the cgroup limit"
        );
    }

    /// Kiefer-Wolfowitz: the serving slot that frees first takes `req`
    /// (`Sim::assign`), its worker's completions done by `now` credited
    /// first (so its queue holds what is in flight or waiting, and what a
    /// later event must see credited is on a worker it touches anyway);
    /// what must follow out of line, if anything.
    #[inline(always)]
    pub(super) fn assign(
        &mut self,
        inst: &mut Inst,
        instance: &mut Instance,
        (first, spi): (usize, usize),
        now: SimTime,
        order: u64,
        req: Request,
    ) -> Option<Follow> {
        let free = &self.free[first..first + spi];
        let (mut key, mut at) = (free[0], 0);
        for (k, &f) in free.iter().enumerate().skip(1) {
            if f < key {
                (key, at) = (f, k);
            }
        }
        if key == u128::MAX {
            self.held[first / spi].unassigned.push_back((order, req));
            inst.unassigned += 1;
            return None;
        }
        let w = (first + at) as u32;
        let start = key_time(key).max(req.enq_t).max(now);
        let rewind = start > req.enq_t;
        if rewind && start - req.enq_t >= self.sc.workload.queue_timeout {
            inst.waits.push_back(start);
            self.held[first / spi]
                .timeouts
                .push_back((start, w, order, req));
            inst.timeouts += 1;
            return None;
        }
        self.settle_worker(inst, instance, w, now, u32::MAX);
        let worker = &mut self.workers[w as usize];
        let n = worker.requests + self.items.len(w) as u64 + 1;
        let before = rewind.then(|| (worker.noise.clone(), worker.warm_left_mb));
        let (growth_mb, private_mb) = growth_of(self.sc, worker, n);
        let (generation, max_requests) = (worker.generation, worker.max_requests);
        inst.pending_mb += private_mb;
        let projected = instance.usage_mb(self.sc.fleet.master_mb) + inst.pending_mb;
        let every = match self.sc.policy.sampling {
            Sampling::EveryRequests { n: every } => n.is_multiple_of(every),
            _ => false,
        };
        let over = projected > self.sc.fleet.container_mb - 1e-6;
        let event = req.attempt > 0 || n >= max_requests || every || over;
        if rewind {
            inst.waits.push_back(start);
        }
        let done = start + req.service;
        self.free[w as usize] = idle_key(done, 0, w as u64);
        // (An evented request's ticket is set by `Sim::follow`.)
        self.items.push_back(
            w,
            Item {
                req,
                start,
                done,
                growth_mb,
                private_mb,
                order,
                event,
                ticket: 0,
                waited: false,
                rewind,
            },
            before,
        );
        (event || over).then_some(Follow {
            w,
            done,
            generation,
            event,
            over,
        })
    }
}
