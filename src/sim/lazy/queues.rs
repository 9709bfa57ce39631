//! Each worker's assigned requests, first in, first out, in one slab.
//!
//! A worker serves one request at a time, so its queue is almost always
//! zero to two requests long: a `VecDeque` per worker paid for its generic
//! ring arithmetic and an out-of-line push on every request. Here every
//! queue is a linked list through one slab of items. Slot `w` of the slab
//! is worker `w`'s own (its *home*): a request assigned while the home is
//! free (always when the queue is empty, which is most assignments below
//! saturation) goes there, so the items a
//! round-robin sweep of the fleet reads lie in worker order, as the
//! workers do, and the hardware's prefetchers follow the sweep (one slab
//! of freed slots, taken last in first out, put a large fleet's items at
//! random places: a cache miss at every credit). Other items take freed
//! slots past the homes; the links keep each queue's order either way. A worker's ends sit together (`Ends`),
//! two workers to a cache line.

use super::{IdleKey, Item};
use crate::engine::SimTime;
use crate::engine::rng::StreamRng;

/// A worker's draw state before an item drew (`Item::rewind`): its leak
/// noise stream and warm-up left.
pub(super) type Before = (StreamRng, f64);

/// No item: the end of a list.
pub(super) const NIL: u32 = u32::MAX;

/// A worker's queue: its first and last item and its length, with the
/// key of when its slot last went idle beside them (`IdleKey`, written when
/// a credit empties the queue: one bounds check and one cache line for
/// what a credit touches of its worker's lazy state).
#[derive(Clone, Copy)]
struct Ends {
    idle: IdleKey,
    head: u32,
    tail: u32,
    len: u32,
    /// Whether its home slot holds one of its items.
    home: bool,
}

pub(super) struct Queues {
    slab: Vec<Item>,
    /// Per slab slot: the draw state kept for an item assigned to wait
    /// (`Item::rewind`), read only if it goes back to the backlog. Beside
    /// the slab, so keeping it costs one write where it is needed and
    /// nothing at the item's credit.
    before: Vec<Option<Before>>,
    /// Per slab slot: the next item of its list (a queue or the free list).
    next: Vec<u32>,
    /// The first free slot past the homes (`0..workers`).
    free: u32,
    /// The slots below are the workers' homes.
    homes: u32,
    /// Per worker struct.
    ends: Vec<Ends>,
}

impl Queues {
    pub(super) fn new(workers: usize) -> Self {
        let vacant = Item {
            req: crate::fleet::Request {
                first_t: SimTime::ZERO,
                enq_t: SimTime::ZERO,
                service: SimTime::ZERO,
                attempt: 0,
                conn: NIL,
            },
            start: SimTime::ZERO,
            done: SimTime::ZERO,
            growth_mb: 0.0,
            private_mb: 0.0,
            order: 0,
            event: false,
            ticket: 0,
            waited: false,
            rewind: false,
        };
        Queues {
            slab: vec![vacant; workers],
            before: vec![None; workers],
            next: vec![NIL; workers],
            free: NIL,
            homes: u32::try_from(workers).expect("fewer than 2^32 workers"),
            ends: vec![
                Ends {
                    idle: 0,
                    head: NIL,
                    tail: NIL,
                    len: 0,
                    home: false,
                };
                workers
            ],
        }
    }

    /// When worker `w`'s slot last went idle (`IdleKey`).
    #[inline(always)]
    pub(super) fn idle(&self, w: u32) -> IdleKey {
        self.ends[w as usize].idle
    }

    #[inline(always)]
    pub(super) fn set_idle(&mut self, w: u32, k: IdleKey) {
        self.ends[w as usize].idle = k;
    }

    /// Requests assigned to worker `w`.
    #[inline(always)]
    pub(super) fn len(&self, w: u32) -> u32 {
        self.ends[w as usize].len
    }

    #[inline(always)]
    pub(super) fn is_empty(&self, w: u32) -> bool {
        self.ends[w as usize].len == 0
    }

    /// Worker `w`'s request in flight or next to start.
    #[inline(always)]
    pub(super) fn front(&self, w: u32) -> Option<&Item> {
        let h = self.ends[w as usize].head;
        (h != NIL).then(|| &self.slab[h as usize])
    }

    #[inline(always)]
    pub(super) fn pop_front(&mut self, w: u32) -> Option<Item> {
        self.pop_front_ref(w).copied()
    }

    /// Worker `w`'s last request.
    #[inline]
    pub(super) fn back_mut(&mut self, w: u32) -> Option<&mut Item> {
        let t = self.ends[w as usize].tail;
        (t != NIL).then(|| &mut self.slab[t as usize])
    }

    /// `pop_front` by reference: the item stays in its (now free) slot
    /// until the next `push_back`, so it is read in place, not copied.
    #[inline(always)]
    pub(super) fn pop_front_ref(&mut self, w: u32) -> Option<&Item> {
        let e = &mut self.ends[w as usize];
        let h = e.head;
        if h == NIL {
            return None;
        }
        let n = self.next[h as usize];
        e.head = n;
        if n == NIL {
            e.tail = NIL;
        }
        e.len -= 1;
        if h < self.homes {
            e.home = false;
        } else {
            self.next[h as usize] = self.free;
            self.free = h;
        }
        Some(&self.slab[h as usize])
    }

    /// Appends `it` to worker `w`'s queue, with the draw state kept for
    /// it when it is assigned to wait (`Item::rewind`).
    #[inline(always)]
    pub(super) fn push_back(&mut self, w: u32, it: Item, before: Option<Before>) {
        debug_assert_eq!(it.rewind, before.is_some(), "a draw state iff rewind");
        let s = if !self.ends[w as usize].home {
            self.ends[w as usize].home = true;
            self.slab[w as usize] = it;
            self.next[w as usize] = NIL;
            w
        } else if self.free != NIL {
            let s = self.free;
            self.free = self.next[s as usize];
            self.slab[s as usize] = it;
            self.next[s as usize] = NIL;
            s
        } else {
            self.slab.push(it);
            self.next.push(NIL);
            self.before.push(None);
            (self.slab.len() - 1) as u32
        };
        if before.is_some() {
            self.before[s as usize] = before;
        }
        let e = &mut self.ends[w as usize];
        if e.tail == NIL {
            e.head = s;
        } else {
            self.next[e.tail as usize] = s;
        }
        e.tail = s;
        e.len += 1;
    }

    /// Worker `w`'s requests, in order.
    pub(super) fn iter(&self, w: u32) -> impl Iterator<Item = &Item> {
        let mut at = self.ends[w as usize].head;
        std::iter::from_fn(move || {
            (at != NIL).then(|| {
                let it = &self.slab[at as usize];
                at = self.next[at as usize];
                it
            })
        })
    }

    /// Whether each of worker `w`'s requests assigned to wait has a draw
    /// state in its slot (the invariant checker). A credited item leaves
    /// its state behind (clearing it would cost the write `before` saves),
    /// so this cannot tell an item's own state from a stale one: that each
    /// is its own is `push_back`'s, which writes it whenever `rewind` is set
    /// (and asserts so), and `take` returns it (`tests::each_waiting_item_gets_its_own_draw_state`).
    pub(super) fn befores_kept(&self, w: u32) -> bool {
        let mut at = self.ends[w as usize].head;
        while at != NIL {
            if self.slab[at as usize].rewind && self.before[at as usize].is_none() {
                return false;
            }
            at = self.next[at as usize];
        }
        true
    }

    /// Applies `f` to each of worker `w`'s requests, in order.
    pub(super) fn for_each_mut(&mut self, w: u32, mut f: impl FnMut(&mut Item)) {
        let mut at = self.ends[w as usize].head;
        while at != NIL {
            f(&mut self.slab[at as usize]);
            at = self.next[at as usize];
        }
    }

    /// Takes all of worker `w`'s requests out, in order, each with the
    /// draw state kept for it (`Item::rewind`).
    pub(super) fn take(&mut self, w: u32) -> Vec<(Item, Option<Before>)> {
        let mut out = Vec::with_capacity(self.len(w) as usize);
        while self.ends[w as usize].head != NIL {
            let h = self.ends[w as usize].head as usize;
            let before = if self.slab[h].rewind {
                self.before[h].take()
            } else {
                None
            };
            let it = self.pop_front(w).expect("an item");
            out.push((it, before));
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fleet::Request;
    use std::collections::VecDeque;

    fn item(k: u64) -> Item {
        Item {
            req: Request {
                first_t: SimTime(k),
                enq_t: SimTime(k),
                service: SimTime(1),
                attempt: 0,
                conn: u32::MAX,
            },
            start: SimTime(k),
            done: SimTime(k + 1),
            growth_mb: 0.0,
            private_mb: 0.0,
            order: k,
            ticket: 0,
            event: false,
            waited: false,
            rewind: false,
        }
    }

    #[test]
    fn each_worker_is_first_in_first_out() {
        use crate::engine::rng::{Stream, stream};
        use rand::Rng;
        let mut rng = stream(3, Stream::Routing);
        let mut q = Queues::new(5);
        let mut reference: Vec<VecDeque<u64>> = vec![VecDeque::new(); 5];
        let mut peak = 0;
        for k in 0..20_000u64 {
            peak = peak.max(reference.iter().map(VecDeque::len).sum::<usize>());
            let w = rng.random_range(0..5u32);
            if rng.random_bool(0.5) {
                q.push_back(w, item(k), None);
                reference[w as usize].push_back(k);
            } else {
                assert_eq!(
                    q.pop_front(w).map(|it| it.order),
                    reference[w as usize].pop_front()
                );
            }
            assert_eq!(q.len(w) as usize, reference[w as usize].len());
            assert_eq!(
                q.front(w).map(|it| it.order),
                reference[w as usize].front().copied()
            );
            let orders: Vec<u64> = q.iter(w).map(|it| it.order).collect();
            assert!(orders.iter().eq(reference[w as usize].iter()));
        }
        let taken: Vec<u64> = q.take(2).into_iter().map(|(it, _)| it.order).collect();
        assert!(taken.iter().eq(reference[2].iter()));
        assert!(q.is_empty(2));
        // Slots are reused: past the five homes, the slab holds at most
        // what was in use at once.
        assert!(
            q.slab.len() <= 5 + peak + 1,
            "{} > 5 + {peak}",
            q.slab.len()
        );
    }

    #[test]
    fn a_request_to_a_free_home_goes_there() {
        let mut q = Queues::new(4);
        // An empty queue: worker 2's item in slot 2, not past the homes.
        q.push_back(2, item(1), None);
        assert_eq!(q.ends[2].head, 2);
        assert_eq!(q.slab.len(), 4);
        // Its home busy, the next item goes past the homes, after it.
        q.push_back(2, item(2), None);
        assert!(q.ends[2].tail >= 4, "{}", q.ends[2].tail);
        // The home freed by the first credit takes the third item, which
        // still comes last.
        assert_eq!(q.pop_front(2).map(|it| it.order), Some(1));
        q.push_back(2, item(3), None);
        assert_eq!(q.ends[2].tail, 2);
        let orders: Vec<u64> = q.iter(2).map(|it| it.order).collect();
        assert_eq!(orders, vec![2, 3]);
        // A freed slot past the homes is reused, not grown.
        q.pop_front(2);
        q.push_back(1, item(4), None);
        q.push_back(1, item(5), None);
        assert_eq!(q.slab.len(), 5);
    }

    #[test]
    fn each_waiting_item_gets_its_own_draw_state() {
        use crate::engine::rng::{Stream, stream};
        // A waiting item's state: its order as the warm-up left.
        let waiting = |k: u64| {
            let mut it = item(k);
            it.rewind = true;
            (it, Some((stream(k, Stream::MemoryNoise), k as f64)))
        };
        let mut q = Queues::new(2);
        // Slots 0-2 hold states of waiting items 0-2; crediting them leaves
        // those states behind in free slots.
        for k in 0..3 {
            let (it, before) = waiting(k);
            q.push_back(0, it, before);
        }
        for _ in 0..3 {
            q.pop_front(0);
        }
        // Reused slots: a request that did not wait, then two that did.
        q.push_back(1, item(10), None);
        for k in [11, 12] {
            let (it, before) = waiting(k);
            q.push_back(1, it, before);
        }
        assert!(q.befores_kept(1));
        let taken = q.take(1);
        let got: Vec<(u64, Option<f64>)> = taken
            .iter()
            .map(|(it, b)| (it.order, b.as_ref().map(|b| b.1)))
            .collect();
        assert_eq!(got, vec![(10, None), (11, Some(11.0)), (12, Some(12.0))]);
        // Each with its own stream, not a stale one from the slot.
        for (it, b) in &taken[1..] {
            let mut want = stream(it.order, Stream::MemoryNoise);
            let mut have = b.clone().expect("a state").0;
            use rand::RngCore;
            assert_eq!(have.next_u64(), want.next_u64());
        }
    }
}
