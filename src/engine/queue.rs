//! An event queue ordered by `(time, seq)`.
//!
//! `seq` increases with every push, so two events at the same time pop in the
//! order they were scheduled: deterministic whatever the heaps' internals.
//! Scheduling in the past is a bug in the caller and panics.
//!
//! Why lanes: events differ in how far ahead they are scheduled. The next
//! arrival and service completions are due within a second; sampling ticks
//! and timeline rows tens of seconds ahead. In one heap, every near event
//! sifts past the far ones. So each event type names its lane (`Lane`),
//! each lane is a binary min-heap, and `pop` takes the earliest lane root.
//! All lanes share one `seq`, so keys stay unique and the pop order is the
//! one a single heap gives.
//!
//! Why the root stays in place: a handler usually schedules one event in the
//! lane its own event came from right after the pop (the next arrival, the
//! next service completion). `pop` therefore leaves the popped root where it
//! is, marked taken, and the next `schedule` to that lane overwrites it and
//! sifts down once, instead of a removal (sift down) and an insertion (sift up).

use super::time::SimTime;

/// Which lane of the queue an event travels in.
pub trait Lane {
    /// How many lanes the event type uses, at most `MAX_LANES`.
    const LANES: usize;
    /// This event's lane, below `LANES`.
    fn lane(&self) -> usize;
}

/// The low half of a `schedule`d event's key starts here: a `schedule_tied`
/// event (tie below 2^32) sorts first among the events of its microsecond.
pub const SEQ_BASE: u64 = 1 << 32;

/// The most lanes a queue has.
pub const MAX_LANES: usize = 4;

#[derive(Clone, Copy)]
struct Entry<E> {
    /// `time << 64 | seq`: one integer compare orders the heap.
    key: u128,
    event: E,
}

impl<E> Entry<E> {
    fn time(&self) -> SimTime {
        time_of(self.key)
    }
}

fn time_of(key: u128) -> SimTime {
    SimTime((key >> 64) as u64)
}

/// The pending events of one simulation.
pub struct EventQueue<E> {
    /// One min-heap on `key` per lane: `h[i].key < h[2i+1].key, h[2i+2].key`.
    lanes: [Vec<Entry<E>>; MAX_LANES],
    /// The lane whose root was popped and awaits removal or replacement.
    taken: Option<usize>,
    /// The least root key over the lanes (`u128::MAX`: none) and its lane,
    /// exact whenever no root is taken: the loop merges its outside event
    /// (`pop_key_before`) with one compare, not a scan of the lanes.
    first: u128,
    first_lane: usize,
    seq: u64,
    now: SimTime,
}

impl<E: Copy + Lane> Default for EventQueue<E> {
    fn default() -> Self {
        Self::new()
    }
}

impl<E: Copy + Lane> EventQueue<E> {
    pub fn new() -> Self {
        assert!(E::LANES <= MAX_LANES, "at most {MAX_LANES} lanes");
        EventQueue {
            lanes: std::array::from_fn(|_| Vec::with_capacity(64)),
            taken: None,
            first: u128::MAX,
            first_lane: 0,
            seq: 0,
            now: SimTime::ZERO,
        }
    }

    /// The time of the last popped event.
    pub fn now(&self) -> SimTime {
        self.now
    }

    pub fn len(&self) -> usize {
        let stored: usize = self.lanes.iter().map(Vec::len).sum();
        stored - self.taken.is_some() as usize
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Schedules `event` at absolute time `at`, which must not be in the past.
    ///
    /// Always inlined: called out of line, the event goes through memory as
    /// four-byte field stores read back by one 16-byte load, which the CPU
    /// cannot forward from its store buffer (a stall on every schedule).
    #[inline(always)]
    pub fn schedule(&mut self, at: SimTime, event: E) {
        let tie = SEQ_BASE + self.seq;
        self.seq += 1;
        self.schedule_key(at, tie, event);
    }

    /// Schedules `event` at `at` ahead of every `schedule`d event of the
    /// same microsecond, ordered among its kind by `tie` (below 2^32): the
    /// engine's service completions, by worker slot, so that the order of
    /// completions at one microsecond does not depend on when they were
    /// scheduled (the lazy completions of `sim::lazy` keep the same order
    /// without scheduling most of them).
    #[inline(always)]
    pub fn schedule_tied(&mut self, at: SimTime, tie: u32, event: E) {
        self.schedule_key(at, tie as u64, event);
    }

    #[inline(always)]
    fn schedule_key(&mut self, at: SimTime, tie: u64, event: E) {
        if at < self.now {
            scheduled_in_the_past(at, self.now);
        }
        let entry = Entry {
            key: ((at.0 as u128) << 64) | tie as u128,
            event,
        };
        let lane = event.lane();
        if self.taken == Some(lane) {
            // Replacing the taken root and sifting the new entry down keeps
            // the heap, whatever the new key.
            self.taken = None;
            sift_down(&mut self.lanes[lane], entry);
            self.find_first();
        } else {
            push(&mut self.lanes[lane], entry);
            // (With a root taken, `first` is found again once it is gone.)
            if self.taken.is_none() && entry.key < self.first {
                (self.first, self.first_lane) = (entry.key, lane);
            }
        }
    }

    /// The key `schedule(at, ..)` would give an event, for one that its
    /// caller keeps outside the queue (the engine's next arrival, which is
    /// always due soon and always one): it takes the same place in the
    /// `(time, seq)` order, and `pop_key_before` merges it.
    #[inline(always)]
    pub fn key_for(&mut self, at: SimTime) -> u128 {
        if at < self.now {
            scheduled_in_the_past(at, self.now);
        }
        let tie = SEQ_BASE + self.seq;
        self.seq += 1;
        ((at.0 as u128) << 64) | tie as u128
    }

    /// Pops the earliest event if it is due before `end` and comes before
    /// the outside event keyed `outside` (`key_for`; `u128::MAX`: none):
    /// `Some(None)` when the outside one comes first (`now` advances to
    /// it, and the caller handles it), `None` when neither is due.
    #[inline(always)]
    pub fn pop_key_before(&mut self, end: SimTime, outside: u128) -> Option<Option<(SimTime, E)>> {
        self.remove_taken_root();
        // (`<=`: keys are unique, so the two are equal only when both are
        // `u128::MAX`, no event at all, and that returns `None` below.)
        if outside <= self.first {
            let at = time_of(outside);
            if outside == u128::MAX || at >= end {
                return None;
            }
            debug_assert!(at >= self.now);
            self.now = at;
            return Some(None);
        }
        let lane = self.first_lane;
        if time_of(self.first) >= end {
            return None;
        }
        Some(Some(self.take_root(lane)))
    }

    /// Pops the earliest event and advances `now` to its time.
    #[inline]
    pub fn pop(&mut self) -> Option<(SimTime, E)> {
        self.remove_taken_root();
        let lane = self.earliest_lane()?;
        Some(self.take_root(lane))
    }

    /// Pops the earliest event if it is due before `end`.
    ///
    /// Always inlined into the event loop: out of line, its `Option` result
    /// went back through the stack on every event.
    #[inline(always)]
    pub fn pop_before(&mut self, end: SimTime) -> Option<(SimTime, E)> {
        self.remove_taken_root();
        let lane = self.earliest_lane()?;
        if self.lanes[lane][0].time() >= end {
            return None;
        }
        Some(self.take_root(lane))
    }

    /// Returns the root of `lane`, leaving it in place marked taken.
    #[inline]
    fn take_root(&mut self, lane: usize) -> (SimTime, E) {
        let root = self.lanes[lane][0];
        let at = root.time();
        debug_assert!(at >= self.now);
        self.taken = Some(lane);
        self.now = at;
        (at, root.event)
    }

    /// The time of the earliest pending event.
    pub fn peek_time(&self) -> Option<SimTime> {
        let mut best: Option<u128> = None;
        for (lane, heap) in self.lanes.iter().enumerate() {
            // With the root taken, the earliest pending entry is one of its children.
            let (first, end) = if self.taken == Some(lane) {
                (1, 3)
            } else {
                (0, 1)
            };
            let candidates = &heap[first.min(heap.len())..end.min(heap.len())];
            for e in candidates {
                best = Some(best.map_or(e.key, |b| b.min(e.key)));
            }
        }
        best.map(time_of)
    }

    /// The lane with the earliest root (no root is taken).
    #[inline(always)]
    fn earliest_lane(&self) -> Option<usize> {
        debug_assert!(self.taken.is_none());
        (self.first != u128::MAX).then_some(self.first_lane)
    }

    /// Finds `first` again: a lane's root has changed (no root is taken).
    #[inline]
    fn find_first(&mut self) {
        let mut best = (u128::MAX, 0);
        for (lane, heap) in self.lanes[..E::LANES].iter().enumerate() {
            if let Some(root) = heap.first()
                && root.key < best.0
            {
                best = (root.key, lane);
            }
        }
        (self.first, self.first_lane) = best;
    }

    #[inline(always)]
    fn remove_taken_root(&mut self) {
        let Some(lane) = self.taken.take() else {
            return;
        };
        let heap = &mut self.lanes[lane];
        let last = heap.pop().expect("a taken root is in its heap");
        if !heap.is_empty() {
            sift_down(heap, last);
        }
        self.find_first();
    }
}

/// The panic of `schedule`, out of line so that `schedule` inlines.
#[cold]
#[inline(never)]
fn scheduled_in_the_past(at: SimTime, now: SimTime) -> ! {
    panic!("scheduling in the past: {at} < now {now}");
}

/// Places `entry` at the root of `heap` and moves it down to its place.
#[inline]
fn sift_down<E: Copy>(heap: &mut [Entry<E>], entry: Entry<E>) {
    let n = heap.len();
    let mut i = 0;
    loop {
        let left = 2 * i + 1;
        if left >= n {
            break;
        }
        let right = left + 1;
        let child = if right < n && heap[right].key < heap[left].key {
            right
        } else {
            left
        };
        if entry.key < heap[child].key {
            break;
        }
        heap[i] = heap[child];
        i = child;
    }
    heap[i] = entry;
}

/// Adds `entry` to `heap`, moving it up from the end to its place.
///
/// The entry is compared from the argument, not read back from the heap: a
/// read right after the push would wait on the push's field-sized stores.
#[inline]
fn push<E: Copy>(heap: &mut Vec<Entry<E>>, entry: Entry<E>) {
    heap.push(entry);
    // A slice, so that its length stays in a register through the loop.
    let heap = heap.as_mut_slice();
    let mut i = heap.len() - 1;
    while i > 0 {
        let parent = (i - 1) / 2;
        if heap[parent].key < entry.key {
            break;
        }
        heap[i] = heap[parent];
        i = parent;
    }
    heap[i] = entry;
}

#[cfg(test)]
mod tests {
    use super::*;

    impl Lane for char {
        const LANES: usize = 2;
        fn lane(&self) -> usize {
            *self as usize % 2
        }
    }

    impl Lane for () {
        const LANES: usize = 1;
        fn lane(&self) -> usize {
            0
        }
    }

    impl Lane for u32 {
        const LANES: usize = 3;
        fn lane(&self) -> usize {
            (*self % 7 % 3) as usize
        }
    }

    #[test]
    fn pops_in_time_then_schedule_order() {
        let mut q = EventQueue::new();
        q.schedule(SimTime(5), 'a');
        q.schedule(SimTime(1), 'b');
        q.schedule(SimTime(5), 'c');
        q.schedule(SimTime(1), 'd');
        let order: Vec<char> = std::iter::from_fn(|| q.pop().map(|(_, e)| e)).collect();
        assert_eq!(order, vec!['b', 'd', 'a', 'c']);
        assert_eq!(q.now(), SimTime(5));
    }

    #[test]
    fn matches_a_sorted_reference_under_random_interleaving() {
        use crate::engine::rng::{Stream, stream};
        use rand::Rng;
        let mut rng = stream(11, Stream::Routing);
        let mut q = EventQueue::new();
        let mut reference = std::collections::BTreeSet::new();
        let mut id = 0u32;
        for _ in 0..20_000 {
            if rng.random_bool(0.52) {
                let at = SimTime(q.now().0 + rng.random_range(0..50));
                q.schedule(at, id);
                reference.insert((at, id));
                id += 1;
            } else {
                assert_eq!(q.peek_time(), reference.first().map(|e| e.0));
                assert_eq!(q.pop(), reference.pop_first());
            }
            assert_eq!(q.len(), reference.len());
        }
        let end = SimTime(q.now().0 + 20);
        while let Some(e) = q.pop_before(end) {
            assert_eq!(Some(e), reference.pop_first());
        }
        assert!(reference.first().is_none_or(|e| e.0 >= end));
    }

    #[test]
    fn the_first_root_is_kept_with_an_outside_event() {
        // `pop_key_before` merging an outside event, random schedules
        // between: the order a sorted reference gives, and `first`
        // always the least root once no root is taken.
        use crate::engine::rng::{Stream, stream};
        use rand::Rng;
        const OUT: u32 = u32::MAX;
        let mut rng = stream(12, Stream::Routing);
        let mut q = EventQueue::new();
        let mut reference = std::collections::BTreeSet::new();
        let (mut seq, mut id) = (0u64, 0u32);
        let mut outside = u128::MAX;
        for _ in 0..30_000 {
            let at = SimTime(q.now().0 + rng.random_range(0..40));
            match rng.random_range(0..6) {
                0 | 1 => {
                    q.schedule(at, id);
                    reference.insert((at, seq, id));
                    (seq, id) = (seq + 1, id + 1);
                }
                2 if outside == u128::MAX => {
                    outside = q.key_for(at);
                    reference.insert((at, seq, OUT));
                    seq += 1;
                }
                _ => match q.pop_key_before(SimTime(u64::MAX), outside) {
                    None => assert!(reference.is_empty()),
                    Some(None) => {
                        let e = reference.pop_first().expect("the outside event");
                        assert_eq!((e.0, e.2), (q.now(), OUT));
                        outside = u128::MAX;
                    }
                    Some(Some((t, e))) => {
                        let r = reference.pop_first().expect("an event");
                        assert_eq!((r.0, r.2), (t, e));
                    }
                },
            }
            if q.taken.is_none() {
                let least = q
                    .lanes
                    .iter()
                    .filter_map(|h| h.first())
                    .map(|r| r.key)
                    .min();
                assert_eq!(q.first, least.unwrap_or(u128::MAX));
            }
        }
    }

    #[test]
    fn an_outside_event_takes_its_scheduled_place() {
        // The same events, one kept outside by its key: the same order.
        let (mut a, mut b) = (EventQueue::new(), EventQueue::new());
        let mut outside = u128::MAX;
        for (k, at) in [5u64, 1, 5, 1, 3, 5].into_iter().enumerate() {
            a.schedule(SimTime(at), k as u32);
            if k == 2 {
                outside = b.key_for(SimTime(at));
            } else {
                b.schedule(SimTime(at), k as u32);
            }
        }
        let end = SimTime(100);
        let mut merged = Vec::new();
        while let Some(next) = b.pop_key_before(end, outside) {
            match next {
                Some((t, e)) => merged.push((t, e)),
                None => {
                    merged.push((b.now(), 2));
                    outside = u128::MAX;
                }
            }
        }
        let plain: Vec<_> = std::iter::from_fn(|| a.pop_before(end)).collect();
        assert_eq!(merged, plain);
        let at_end = b.key_for(SimTime(100));
        assert_eq!(b.pop_key_before(end, at_end), None);
    }

    #[test]
    #[should_panic(expected = "in the past")]
    fn scheduling_in_the_past_panics() {
        let mut q = EventQueue::new();
        q.schedule(SimTime(10), ());
        q.pop();
        q.schedule(SimTime(9), ());
    }
}
