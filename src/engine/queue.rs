//! A binary-heap event queue ordered by `(time, seq)`.
//!
//! `seq` increases with every push, so two events at the same time pop in the
//! order they were scheduled: deterministic whatever the heap's internals.
//! Scheduling in the past is a bug in the caller and panics.
//!
//! Why a hand-written heap: a handler usually schedules one event right after
//! its own was popped (the next arrival, the next service completion). `pop`
//! therefore leaves the popped entry in place at the root, marked taken, and
//! the next `schedule` overwrites it and sifts down once, instead of a
//! remove (sift down to the bottom, sift up) followed by an insert (sift up).
//! Keys are unique, so the pop order is the same as any other heap's.

use super::time::SimTime;

#[derive(Clone, Copy)]
struct Entry<E> {
    /// `time << 64 | seq`: one integer compare orders the heap.
    key: u128,
    event: E,
}

impl<E> Entry<E> {
    fn time(&self) -> SimTime {
        SimTime((self.key >> 64) as u64)
    }
}

/// The pending events of one simulation.
pub struct EventQueue<E> {
    /// A min-heap on `key`: `heap[i].key < heap[2i+1].key, heap[2i+2].key`.
    heap: Vec<Entry<E>>,
    /// The root was popped and awaits removal or replacement.
    root_taken: bool,
    seq: u64,
    now: SimTime,
}

impl<E: Copy> Default for EventQueue<E> {
    fn default() -> Self {
        Self::new()
    }
}

impl<E: Copy> EventQueue<E> {
    pub fn new() -> Self {
        EventQueue {
            heap: Vec::with_capacity(1024),
            root_taken: false,
            seq: 0,
            now: SimTime::ZERO,
        }
    }

    /// The time of the last popped event.
    pub fn now(&self) -> SimTime {
        self.now
    }

    pub fn len(&self) -> usize {
        self.heap.len() - self.root_taken as usize
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Schedules `event` at absolute time `at`, which must not be in the past.
    #[inline]
    pub fn schedule(&mut self, at: SimTime, event: E) {
        assert!(
            at >= self.now,
            "scheduling in the past: {at} < now {}",
            self.now
        );
        let entry = Entry {
            key: ((at.0 as u128) << 64) | self.seq as u128,
            event,
        };
        self.seq += 1;
        if self.root_taken {
            // The new key is above the taken root's (later seq, no earlier
            // time), so the root's children still order below it correctly.
            self.root_taken = false;
            self.sift_down(entry);
        } else {
            self.heap.push(entry);
            self.sift_up(self.heap.len() - 1);
        }
    }

    /// Pops the earliest event and advances `now` to its time.
    #[inline]
    pub fn pop(&mut self) -> Option<(SimTime, E)> {
        self.remove_taken_root();
        let root = *self.heap.first()?;
        self.root_taken = true;
        let at = root.time();
        debug_assert!(at >= self.now);
        self.now = at;
        Some((at, root.event))
    }

    /// Pops the earliest event if it is due before `end`.
    #[inline]
    pub fn pop_before(&mut self, end: SimTime) -> Option<(SimTime, E)> {
        self.remove_taken_root();
        if self.heap.first()?.time() >= end {
            return None;
        }
        self.pop()
    }

    /// The time of the earliest pending event.
    pub fn peek_time(&self) -> Option<SimTime> {
        // With the root taken, the earliest pending entry is one of its children.
        let (first, end) = if self.root_taken { (1, 3) } else { (0, 1) };
        let candidates = &self.heap[first.min(self.heap.len())..end.min(self.heap.len())];
        candidates.iter().min_by_key(|e| e.key).map(Entry::time)
    }

    fn remove_taken_root(&mut self) {
        if !self.root_taken {
            return;
        }
        self.root_taken = false;
        let last = self.heap.pop().expect("a taken root is in the heap");
        if !self.heap.is_empty() {
            self.sift_down(last);
        }
    }

    /// Places `entry` at the root and moves it down to its place.
    fn sift_down(&mut self, entry: Entry<E>) {
        let heap = &mut self.heap[..];
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

    /// Moves the entry at `i` up to its place.
    fn sift_up(&mut self, mut i: usize) {
        let heap = &mut self.heap[..];
        let entry = heap[i];
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
}
#[cfg(test)]
mod tests {
    use super::*;

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
    #[should_panic(expected = "in the past")]
    fn scheduling_in_the_past_panics() {
        let mut q = EventQueue::new();
        q.schedule(SimTime(10), ());
        q.pop();
        q.schedule(SimTime(9), ());
    }
}
