//! Invariants checked after every event when enabled (all tests do).
//! Each is a sentence in ARCHITECTURE.md.

use super::Sim;
use crate::engine::SimTime;
use crate::fleet::WorkerState;
use crate::metrics::Observer;

impl<O: Observer> Sim<'_, O> {
    pub(super) fn assert_invariants(&self, t: SimTime) {
        let f = &self.sc.fleet;
        let m = &self.m;
        // Invariant: requests are conserved.
        let in_service: u64 = self.workers.iter().map(|w| w.in_flight as u64).sum();
        let queued: u64 = self
            .instances
            .iter()
            .map(|i| i.backlog.len() as u64)
            .sum::<u64>()
            + self.pinned.as_ref().map_or(0, |p| p.waiting());
        assert_eq!(
            m.arrived,
            m.completed + m.failed + in_service + queued + m.pending_retries,
            "t={t}: requests not conserved"
        );
        // Invariant: state counters match the workers, serving <= configured.
        let count = |s| self.workers.iter().filter(|w| w.state == s).count() as u32;
        assert_eq!(
            count(WorkerState::Serving),
            self.counts.serving,
            "t={t}: serving"
        );
        assert_eq!(
            count(WorkerState::Booting),
            self.counts.booting,
            "t={t}: booting"
        );
        assert_eq!(
            count(WorkerState::Draining),
            self.counts.draining,
            "t={t}: draining"
        );
        assert_eq!(count(WorkerState::Dead), self.counts.dead, "t={t}: dead");
        // Granian's timed handover may serve one extra worker per server.
        let extra = self.replace_handover_on() as usize;
        assert!(self.counts.serving as usize <= f.workers() + extra * self.instances.len());
        for (wi, w) in self.workers.iter().enumerate() {
            if w.state == WorkerState::Dead {
                assert_eq!(w.in_flight, 0, "t={t}: dead worker {wi} serves");
                continue;
            }
            // Invariant: RSS never below boot.
            // (Exact mode: the boot RSS on the memory grid.)
            assert!(
                w.rss_mb >= self.mem_mb(f.boot_rss_mb) - 1e-9,
                "t={t}: worker {wi} rss below boot"
            );
            let busy = self
                .slots_of(wi as u32)
                .iter()
                .filter(|s| s.is_some())
                .count() as u32;
            assert_eq!(busy, w.in_flight, "t={t}: worker {wi} in-flight count");
            assert!(w.state != WorkerState::Booting || w.in_flight == 0);
        }
        // Aggregate mode: nothing in flight or queued one by one, and the
        // fluid backlogs are real numbers of requests.
        if let Some(agg) = &self.agg {
            assert_eq!(
                in_service + queued + m.pending_retries,
                0,
                "t={t}: aggregate"
            );
            assert!(agg.queue_ok(), "t={t}: fluid backlog");
        }
        // Invariant: at most one lease holder (per gate), and it is a real worker.
        for h in self.gates.holders(t) {
            assert!((h as usize) < self.workers.len());
        }
        for (ii, inst) in self.instances.iter().enumerate() {
            self.assert_instance(t, ii, inst);
        }
    }

    /// Invariant (Granian): at most one handover per instance, the one its
    /// server runs, and its old worker stops serving once the interval
    /// after its successor's fork is over.
    fn assert_handover(&self, t: SimTime, ii: usize, ws: &[crate::fleet::Worker]) {
        let handing = ws
            .iter()
            .filter(|w| w.state != WorkerState::Dead && w.cold.successor.is_some())
            .count();
        assert!(
            handing <= 1,
            "t={t}: instance {ii} runs {handing} handovers"
        );
        let Some(((old, generation), since)) = self.handover_current(ii) else {
            assert_eq!(
                handing, 0,
                "t={t}: instance {ii} hands over outside its server"
            );
            return;
        };
        let w = &self.workers[old as usize];
        assert_eq!(
            w.generation, generation,
            "t={t}: instance {ii} handover of an exited worker"
        );
        let crate::policy::Replacement::TimedHandover { respawn_interval } =
            self.sc.policy.replacement
        else {
            unreachable!()
        };
        let due = since + respawn_interval;
        assert!(
            w.state != WorkerState::Serving || t <= due,
            "t={t}: worker {old} serves past its handover interval"
        );
        assert!(
            w.state != WorkerState::Draining || t >= due,
            "t={t}: worker {old} drains before its handover interval is over"
        );
    }

    fn assert_instance(&self, t: SimTime, ii: usize, inst: &crate::fleet::Instance) {
        let f = &self.sc.fleet;
        let ws = &self.workers[inst.first_worker as usize..][..self.spi];
        let private: f64 = ws
            .iter()
            .filter(|w| w.state != WorkerState::Dead)
            .map(|w| w.rss_mb - w.shared_mb)
            .sum();
        // Invariant: at most `workers_per_instance` workers serve per instance.
        let serving = ws
            .iter()
            .filter(|w| w.state == WorkerState::Serving)
            .count();
        let extra = self.replace_handover_on() as usize;
        assert!(
            serving <= f.workers_per_instance + extra,
            "t={t}: instance {ii} over-serves"
        );
        if extra > 0 {
            self.assert_handover(t, ii, ws);
        }
        // Invariant: the instance's count of dead structs (its spares under
        // spawn-then-exit) matches its workers.
        let dead = ws.iter().filter(|w| w.state == WorkerState::Dead).count();
        assert_eq!(dead, inst.dead as usize, "t={t}: instance {ii} dead count");
        // Exact mode keeps memory on a grid (`memory::quantize_mb`):
        // the incremental sum is the sum from scratch, to the bit.
        if self.agg.is_none() {
            assert!(
                private == inst.private_mb,
                "t={t}: instance {ii} private memory drifted ({private} against {})",
                inst.private_mb
            );
        }
        assert!(
            (private - inst.private_mb).abs() < 1e-6 * private.abs().max(1.0),
            "t={t}: instance {ii} private memory drifted"
        );
        // Invariant: cgroup usage never above the limit once the event
        // (and the OOM kill it triggers) is done.
        assert!(
            inst.usage_mb(f.master_mb) <= f.container_mb + 1e-9,
            "t={t}: instance {ii} over its cgroup limit without an OOM kill"
        );
        let in_flight: u32 = ws.iter().map(|w| w.in_flight).sum();
        let first = inst.first_worker as usize;
        let pinned_waiting = self
            .pinned
            .as_ref()
            .map_or(0, |p| p.waiting_at(ii, first..first + self.spi));
        assert_eq!(
            inst.outstanding as usize,
            in_flight as usize + inst.backlog.len() + pinned_waiting,
            "t={t}: instance {ii} outstanding"
        );
        // Invariant: the idle queue is bounded by the instance's slots: an
        // exited worker's entries leave with it (`exit`), a draining one's
        // at its drain.
        assert!(
            inst.idle.len() <= self.spi * f.concurrency,
            "t={t}: instance {ii} idle queue of {} entries for {} slots",
            inst.idle.len(),
            self.spi * f.concurrency
        );
        // Invariant: idle entries match free slots; no one waits while a slot is free.
        for (k, w) in ws.iter().enumerate() {
            let wid = inst.first_worker + k as u32;
            let entries = inst
                .idle
                .iter()
                .filter(|(e, g)| *e == wid && *g == w.generation)
                .count();
            // Aggregate mode keeps no slots: no idle entries.
            // Pinned connections: work reaches a worker down its
            // connections, not through the idle list.
            let free = f.concurrency - w.in_flight as usize;
            let expected = match w.state {
                WorkerState::Serving if self.agg.is_none() && self.pinned.is_none() => free,
                _ => 0,
            };
            // Invariant (pinned): a worker's queue waits only while its slots are busy.
            if let Some(p) = &self.pinned {
                assert!(
                    p.queued_at(wid as usize) == 0 || free == 0,
                    "t={t}: worker {wid} queues with a free slot"
                );
                if w.state == WorkerState::Serving {
                    assert!(
                        free == 0 || inst.backlog.is_empty(),
                        "t={t}: instance {ii} listen queue waits while worker {wid} is free"
                    );
                }
            }
            assert_eq!(entries, expected, "t={t}: worker {wid} idle entries");
            assert!(
                expected == 0 || inst.backlog.is_empty(),
                "t={t}: instance {ii} queues while worker {wid} is free"
            );
        }
    }
}
