//! A binary-heap event queue ordered by `(time, seq)`.
//!
//! `seq` increases with every push, so two events at the same time pop in the
//! order they were scheduled: deterministic whatever the heap's internals.
//! Scheduling in the past is a bug in the caller and panics.

use super::time::SimTime;
use std::cmp::Ordering;
use std::collections::BinaryHeap;

struct Entry<E> {
    /// `time << 64 | seq`: one integer compare orders the heap.
    key: u128,
    event: E,
}

impl<E> PartialEq for Entry<E> {
    fn eq(&self, other: &Self) -> bool {
        self.key == other.key
    }
}
impl<E> Eq for Entry<E> {}
impl<E> PartialOrd for Entry<E> {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}
impl<E> Ord for Entry<E> {
    fn cmp(&self, other: &Self) -> Ordering {
        // BinaryHeap is a max-heap: reverse so the earliest key pops first.
        other.key.cmp(&self.key)
    }
}

/// The pending events of one simulation.
pub struct EventQueue<E> {
    heap: BinaryHeap<Entry<E>>,
    seq: u64,
    now: SimTime,
}

impl<E> Default for EventQueue<E> {
    fn default() -> Self {
        Self::new()
    }
}

impl<E> EventQueue<E> {
    pub fn new() -> Self {
        EventQueue {
            heap: BinaryHeap::with_capacity(1024),
            seq: 0,
            now: SimTime::ZERO,
        }
    }

    /// The time of the last popped event.
    pub fn now(&self) -> SimTime {
        self.now
    }

    pub fn len(&self) -> usize {
        self.heap.len()
    }

    pub fn is_empty(&self) -> bool {
        self.heap.is_empty()
    }

    /// Schedules `event` at absolute time `at`, which must not be in the past.
    pub fn schedule(&mut self, at: SimTime, event: E) {
        assert!(
            at >= self.now,
            "scheduling in the past: {at} < now {}",
            self.now
        );
        let key = ((at.0 as u128) << 64) | self.seq as u128;
        self.seq += 1;
        self.heap.push(Entry { key, event });
    }

    /// Pops the earliest event and advances `now` to its time.
    pub fn pop(&mut self) -> Option<(SimTime, E)> {
        let entry = self.heap.pop()?;
        let at = SimTime((entry.key >> 64) as u64);
        debug_assert!(at >= self.now);
        self.now = at;
        Some((at, entry.event))
    }

    /// The time of the earliest pending event.
    pub fn peek_time(&self) -> Option<SimTime> {
        self.heap.peek().map(|e| SimTime((e.key >> 64) as u64))
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
    #[should_panic(expected = "in the past")]
    fn scheduling_in_the_past_panics() {
        let mut q = EventQueue::new();
        q.schedule(SimTime(10), ());
        q.pop();
        q.schedule(SimTime(9), ());
    }
}
