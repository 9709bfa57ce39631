//! A trailing-window cap: at most `max` recycles fleet-wide in any window
//! of `window` length ("refuse to drain when trailing-window recycles
//! exceed N", the seeds' fix 3). Every recycle is recorded, exits included,
//! so exits also use up the window.

use crate::engine::SimTime;
use std::collections::VecDeque;

#[derive(Clone, Debug)]
pub struct WindowCap {
    window: SimTime,
    times: VecDeque<SimTime>,
}

impl WindowCap {
    pub fn new(window: SimTime) -> Self {
        WindowCap {
            window,
            times: VecDeque::new(),
        }
    }

    /// Recycles in the trailing window `(now - window, now]`.
    pub fn count(&mut self, now: SimTime) -> u32 {
        while self
            .times
            .front()
            .is_some_and(|&t| now.saturating_sub(t) >= self.window)
        {
            self.times.pop_front();
        }
        self.times.len() as u32
    }

    pub fn record(&mut self, now: SimTime) {
        self.times.push_back(now);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_only_the_trailing_window() {
        let mut w = WindowCap::new(SimTime::from_secs(3600));
        for s in [0, 100, 200] {
            w.record(SimTime::from_secs(s));
        }
        assert_eq!(w.count(SimTime::from_secs(3599)), 3);
        assert_eq!(w.count(SimTime::from_secs(3600)), 2);
        assert_eq!(w.count(SimTime::from_secs(3800)), 0);
    }
}
