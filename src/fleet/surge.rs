//! Memory surges: fleet-wide episodes of heavy requests.
//!
//! A Python web app's memory does not only creep. An hour of heavy reports
//! (a dashboard exporting large result sets, a cache warming after a
//! deploy) makes every request allocate megabytes that pymalloc's arenas
//! and the C allocator keep after the request ends: RSS climbs on every
//! worker at once, at a rate set by the traffic, not by the worker's own
//! leak velocity. That is what synchronises workers (several reach their
//! limits within minutes) and what drops an instance's headroom by hundreds
//! of MB "in six windows" (seed 002).
//!
//! The model: episodes start as a Poisson process (`episodes_per_day`) over
//! the whole fleet, each lasts a lognormal time (mean `duration_s`,
//! coefficient of variation `duration_cv`; 0: every episode lasts exactly
//! `duration_s`), and while `k` episodes are on, every request any worker
//! serves adds `k x mb_per_request` to its RSS on top of its leak, until
//! the latest episode has added `max_mb_per_worker` to that process (a
//! cache filled to its bound; a process forked later fills again). The
//! schedule is drawn once, before the run, from its own stream
//! (`Stream::Surge`), so turning surges on changes no other draw, and
//! turning them off changes nothing at all.

use super::memory::VelocityDist;
use crate::engine::rng::{self, Stream, open01};
use crate::engine::time::SimTime;

/// A validated `[fleet.leak.surge]` table.
#[derive(Clone, Debug, PartialEq)]
pub struct Surge {
    /// Mean episode starts per simulated day.
    pub episodes_per_day: f64,
    /// Mean episode length, in seconds.
    pub duration_s: f64,
    /// Coefficient of variation of the length (lognormal; 0 = fixed).
    pub duration_cv: f64,
    /// Extra RSS per request served while one episode is on.
    pub mb_per_request: f64,
    /// The most one episode adds to one worker process (a cache that fills
    /// to a bound); `f64::INFINITY` for no bound.
    pub max_mb_per_worker: f64,
}

/// One episode: on over `[start, end)`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Episode {
    pub start: SimTime,
    pub end: SimTime,
}

/// The run's episodes, in start order: starts over `[0, window)`, each end
/// clipped to nothing (an episode may run past the window's end).
pub fn schedule(s: &Surge, seed: u64, window: SimTime) -> Vec<Episode> {
    let mut out = Vec::new();
    if s.episodes_per_day <= 0.0 || s.duration_s <= 0.0 {
        return out;
    }
    let mut rng = rng::stream(seed, Stream::Surge);
    let mean_gap_s = 86_400.0 / s.episodes_per_day;
    let length = VelocityDist::lognormal(s.duration_s, s.duration_cv);
    let mut t_s = 0.0;
    loop {
        t_s += -open01(&mut rng).ln() * mean_gap_s;
        let start = SimTime::from_secs_f64(t_s);
        if start >= window {
            return out;
        }
        let length = SimTime::from_secs_f64(length.sample(&mut rng));
        out.push(Episode {
            start,
            end: start + length,
        });
    }
}

/// The schedule as the event loop reads it: how many episodes are on at a
/// time that never goes backwards, and how long episodes overlapped a span.
#[derive(Clone, Debug)]
pub struct SurgeClock {
    episodes: Vec<Episode>,
    /// The episodes' ends, sorted (episodes of different lengths end out
    /// of start order).
    ends: Vec<SimTime>,
    /// Episodes started (`start <= t`) and ended (`end <= t`) by the last
    /// time asked.
    started: usize,
    ended: usize,
    /// Prefix sums of the starts (in start order) and of the sorted ends,
    /// in microseconds: `starts_us[k]` is the sum of the first `k`.
    starts_us: Vec<u128>,
    ends_us: Vec<u128>,
    mb_per_request: f64,
    max_mb_per_worker: f64,
}

impl SurgeClock {
    pub fn new(s: &Surge, seed: u64, window: SimTime) -> Self {
        Self::of(
            schedule(s, seed, window),
            s.mb_per_request,
            s.max_mb_per_worker,
        )
    }

    /// A clock over given episodes (in start order).
    fn of(episodes: Vec<Episode>, mb_per_request: f64, max_mb_per_worker: f64) -> Self {
        debug_assert!(episodes.windows(2).all(|w| w[0].start <= w[1].start));
        let mut ends: Vec<SimTime> = episodes.iter().map(|e| e.end).collect();
        ends.sort_unstable();
        let prefix = |ts: &mut dyn Iterator<Item = SimTime>| {
            let mut sums = vec![0u128];
            for t in ts {
                sums.push(sums.last().unwrap() + t.0 as u128);
            }
            sums
        };
        let starts_us = prefix(&mut episodes.iter().map(|e| e.start));
        let ends_us = prefix(&mut ends.iter().copied());
        SurgeClock {
            episodes,
            ends,
            started: 0,
            ended: 0,
            starts_us,
            ends_us,
            mb_per_request,
            max_mb_per_worker,
        }
    }

    pub fn episodes(&self) -> &[Episode] {
        &self.episodes
    }

    /// Episodes on at `t` (`start <= t < end`); `t` must not go backwards.
    #[inline]
    pub fn on_at(&mut self, t: SimTime) -> usize {
        while self.started < self.episodes.len() && self.episodes[self.started].start <= t {
            self.started += 1;
        }
        while self.ended < self.ends.len() && self.ends[self.ended] <= t {
            self.ended += 1;
        }
        self.started - self.ended
    }

    /// `extra` MB of surge growth for a worker, bounded by what the latest
    /// episode (started by the last time asked) may still add to it:
    /// `episode` and `left_mb` are the worker's budget, renewed when a new
    /// episode has started since it was last charged (or the process is new).
    #[inline]
    pub fn bounded(&self, extra: f64, episode: &mut usize, left_mb: &mut f64) -> f64 {
        if self.max_mb_per_worker == f64::INFINITY {
            return extra;
        }
        let latest = self.started;
        if *episode != latest {
            *episode = latest;
            *left_mb = self.max_mb_per_worker;
        }
        let d = extra.min(*left_mb);
        *left_mb -= d;
        d
    }

    /// The extra RSS of one request served at `t`; `t` must not go backwards.
    #[inline]
    pub fn mb_per_request_at(&mut self, t: SimTime) -> f64 {
        match self.on_at(t) {
            0 => 0.0,
            k => k as f64 * self.mb_per_request,
        }
    }

    /// Episode-seconds inside `[t0, t1)`: the sum over episodes of their
    /// overlap with the span (two episodes on for a minute count 120 s).
    /// Two binary searches, whatever the episodes' lengths: `F(t1) - F(t0)`.
    pub fn episode_s_within(&self, t0: SimTime, t1: SimTime) -> f64 {
        if t1 <= t0 {
            return 0.0;
        }
        (self.episode_us_before(t1) - self.episode_us_before(t0)) as f64 / 1e6
    }

    /// `F(t)`, episode-microseconds inside `[0, t)`: an episode's overlap
    /// is `t - start` once started, less `t - end` once ended, so `F(t)` is
    /// `t` times the starts before it less their sum, less the same of
    /// the ends: exact integers from the prefix sums.
    fn episode_us_before(&self, t: SimTime) -> u128 {
        let tt = t.0 as u128;
        let started = self.episodes.partition_point(|e| e.start < t);
        let ended = self.ends.partition_point(|&e| e < t);
        let on = tt * started as u128 - self.starts_us[started];
        let off = tt * ended as u128 - self.ends_us[ended];
        on - off
    }

    /// The extra RSS per request averaged over `[t0, t1)` (aggregate mode:
    /// a step's requests are spread evenly over it).
    pub fn mean_mb_per_request(&self, t0: SimTime, t1: SimTime) -> f64 {
        if t1 <= t0 {
            return 0.0;
        }
        let span_s = (t1 - t0).as_secs_f64();
        self.episode_s_within(t0, t1) / span_s * self.mb_per_request
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn surge(per_day: f64, duration_s: f64) -> Surge {
        Surge {
            episodes_per_day: per_day,
            duration_s,
            duration_cv: 1.0,
            mb_per_request: 2.0,
            max_mb_per_worker: f64::INFINITY,
        }
    }

    #[test]
    fn episodes_arrive_at_the_asked_rate_and_last_the_asked_mean() {
        let days = 2000.0;
        let window = SimTime::from_secs_f64(days * 86_400.0);
        let e = schedule(&surge(3.0, 1200.0), 11, window);
        let per_day = e.len() as f64 / days;
        assert!((per_day / 3.0 - 1.0).abs() < 0.05, "{per_day}");
        let mean_s = e
            .iter()
            .map(|e| (e.end - e.start).as_secs_f64())
            .sum::<f64>()
            / e.len() as f64;
        assert!((mean_s / 1200.0 - 1.0).abs() < 0.05, "{mean_s}");
        assert!(e.windows(2).all(|p| p[0].start <= p[1].start));
        assert!(e.iter().all(|e| e.start < window));
        let fixed = Surge {
            duration_cv: 0.0,
            ..surge(3.0, 1200.0)
        };
        let f = schedule(&fixed, 11, SimTime::from_secs(100 * 86_400));
        assert!(f.len() > 200);
        assert!(
            f.iter()
                .all(|e| e.end - e.start == SimTime::from_secs(1200))
        );
    }

    #[test]
    fn same_seed_same_schedule_other_seed_other() {
        let w = SimTime::from_secs(10 * 86_400);
        let a = schedule(&surge(2.0, 900.0), 5, w);
        assert_eq!(a, schedule(&surge(2.0, 900.0), 5, w));
        assert_ne!(a, schedule(&surge(2.0, 900.0), 6, w));
        assert!(schedule(&surge(0.0, 900.0), 5, w).is_empty());
    }

    #[test]
    fn the_clock_counts_overlapping_episodes() {
        let s = |a, b| Episode {
            start: SimTime::from_secs(a),
            end: SimTime::from_secs(b),
        };
        let mut c = SurgeClock::of(vec![s(10, 100), s(20, 30), s(200, 210)], 1.5, 4.0);
        let t = SimTime::from_secs;
        assert_eq!(c.episode_s_within(t(0), t(300)), 90.0 + 10.0 + 10.0);
        assert_eq!(c.episode_s_within(t(25), t(35)), 10.0 + 5.0);
        assert_eq!(c.episode_s_within(t(100), t(200)), 0.0);
        assert_eq!(c.mean_mb_per_request(t(20), t(30)), 3.0);
        let seen: Vec<usize> = [0, 10, 19, 20, 29, 30, 99, 100, 205, 210]
            .iter()
            .map(|&s| c.on_at(t(s)))
            .collect();
        assert_eq!(seen, [0, 1, 1, 2, 2, 1, 1, 0, 1, 0]);
        assert_eq!(c.mb_per_request_at(t(500)), 0.0);
    }

    /// The prefix-sum form against the plain sum of overlaps, on episodes
    /// of very different lengths (one spanning most of the others).
    #[test]
    fn episode_seconds_match_the_sum_of_overlaps() {
        let mut rng = rng::stream(5, Stream::Surge);
        let mut episodes: Vec<Episode> = (0..300)
            .map(|_| {
                let start = (open01(&mut rng) * 1e10) as u64;
                let len = (open01(&mut rng).powi(6) * 5e9) as u64 + 1;
                Episode {
                    start: SimTime(start),
                    end: SimTime(start + len),
                }
            })
            .collect();
        episodes.sort_by_key(|e| e.start);
        let c = SurgeClock::of(episodes.clone(), 1.0, f64::INFINITY);
        for _ in 0..2000 {
            let a = (open01(&mut rng) * 1.2e10) as u64;
            let b = a + (open01(&mut rng) * 3e8) as u64;
            let (t0, t1) = (SimTime(a), SimTime(b));
            let plain: u64 = episodes
                .iter()
                .map(|e| e.end.min(t1).0.saturating_sub(e.start.max(t0).0))
                .sum();
            assert_eq!(c.episode_s_within(t0, t1), plain as f64 / 1e6, "[{a}, {b})");
        }
        assert_eq!(c.episode_s_within(SimTime(9), SimTime(9)), 0.0);
    }

    #[test]
    fn a_bound_caps_each_episode_per_worker_and_renews_with_the_next() {
        let s = |a, b| Episode {
            start: SimTime::from_secs(a),
            end: SimTime::from_secs(b),
        };
        let mut c = SurgeClock::of(vec![s(10, 100), s(200, 300)], 1.5, 4.0);
        let t = SimTime::from_secs;
        let (mut episode, mut left) = (usize::MAX, 0.0);
        let mut take = |c: &mut SurgeClock, at| {
            let x = c.mb_per_request_at(t(at));
            c.bounded(x, &mut episode, &mut left)
        };
        // 1.5 + 1.5 + 1 (the bound) + 0 in the first episode...
        let first: Vec<f64> = [20, 30, 40, 50].iter().map(|&a| take(&mut c, a)).collect();
        assert_eq!(first, [1.5, 1.5, 1.0, 0.0]);
        // ...none between, and a fresh 4 MB in the second.
        assert_eq!(take(&mut c, 150), 0.0);
        assert_eq!(take(&mut c, 210), 1.5);
        // A new process (budget reset) takes the full bound again.
        let (mut e2, mut l2) = (usize::MAX, 0.0);
        assert_eq!(c.bounded(9.0, &mut e2, &mut l2), 4.0);
    }
}
