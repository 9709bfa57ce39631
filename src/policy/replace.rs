//! The replacement modes' settings and their pure parts: the puma
//! rolling-restart clock's period and order, uWSGI's fork-bomb counter and
//! the cold-start penalty. The event loop applies them (`sim/replace/`).

use crate::engine::SimTime;

/// The modes that sit beside `Replacement` (each `None` when off).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Modes {
    pub rolling_restart: Option<RollingRestart>,
    pub forkbomb: Option<ForkBomb>,
    pub cold_start: Option<ColdStart>,
}

/// puma_worker_killer's rolling restart: one thread per master sleeps
/// `frequency + splay` (the splay drawn once, `lib/puma_worker_killer.rb:38`),
/// then TERMs every worker, smallest RSS first, sleeping `interval` after
/// each (`rolling_restart.rb:15-26`, `auto_reap.rb:14-18`).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct RollingRestart {
    pub frequency: SimTime,
    pub splay: SimTime,
    pub interval: SimTime,
}

impl RollingRestart {
    /// The master's sleep between cycles, for its splay draw `u` in [0, 1).
    pub fn period(&self, u: f64) -> SimTime {
        self.frequency + SimTime((u * self.splay.0 as f64) as u64)
    }
}

/// The order the rolling restart TERMs in: `PumaMemory#set_workers` sorts
/// by RSS ascending (`puma_memory.rb:70-78`); ties keep the master's order.
pub fn memory_order(workers: &mut [(u32, f64)]) {
    workers.sort_by(|a, b| a.1.total_cmp(&b.1).then(a.0.cmp(&b.0)));
}

/// uWSGI's fork-bomb guard (`--forkbomb-delay`).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct ForkBomb {
    pub delay: SimTime,
    pub check_interval_s: u64,
}

/// The master's respawn counter, `core/master.c:1089-1106`: a respawn
/// within `check_interval` whole seconds of the last one adds to the rate;
/// over the worker count the master sleeps `forkbomb-delay` and the rate
/// starts again; a later respawn resets it.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ForkBombGuard {
    /// `uwsgi.respawn_delta`: the whole second of the last respawn (the
    /// master's start, `core/uwsgi.c:3341`, before any).
    pub respawn_delta_s: u64,
    pub rate: u32,
}

impl ForkBombGuard {
    /// A respawn at whole second `now_s`: whether the master sleeps before
    /// it. The caller stamps the second it respawns at (`stamp`).
    pub fn respawn(&mut self, now_s: u64, workers: u32, fb: &ForkBomb) -> bool {
        if now_s <= self.respawn_delta_s + fb.check_interval_s {
            self.rate += 1;
            if self.rate > workers {
                self.rate = 0;
                return true;
            }
        } else {
            self.rate = 0;
        }
        false
    }

    pub fn stamp(&mut self, now_s: u64) {
        self.respawn_delta_s = now_s;
    }
}

/// A replacement's first requests are slower than a warm worker's.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct ColdStart {
    pub factor: f64,
    pub requests: u64,
    pub duration: SimTime,
}

impl ColdStart {
    /// Whether a replacement that has started `started` requests and has
    /// served for `serving_for` is still cold.
    pub fn is_cold(&self, started: u64, serving_for: SimTime) -> bool {
        started < self.requests || serving_for < self.duration
    }

    /// A cold worker's service time for a request `service` long warm.
    pub fn service(&self, service: SimTime) -> SimTime {
        SimTime((service.0 as f64 * self.factor).round() as u64)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fb() -> ForkBomb {
        ForkBomb {
            delay: SimTime::from_secs(2),
            check_interval_s: 1,
        }
    }

    #[test]
    fn the_guard_sleeps_on_the_respawn_past_the_worker_count() {
        let mut g = ForkBombGuard::default();
        g.stamp(100);
        // Three workers: respawns 2, 3, 4 within a second raise the rate
        // to 1, 2, 3; the fifth (rate 4 > 3) sleeps.
        let sleeps: Vec<bool> = (0..5)
            .map(|_| {
                let s = g.respawn(100, 3, &fb());
                g.stamp(100);
                s
            })
            .collect();
        assert_eq!(sleeps, [false, false, false, true, false]);
        // Respawns more than the check interval apart never sleep.
        let mut g = ForkBombGuard::default();
        for k in 0..20 {
            assert!(!g.respawn(10 + 2 * k, 3, &fb()));
            g.stamp(10 + 2 * k);
        }
        assert_eq!(g.rate, 0);
    }

    #[test]
    fn rolling_order_is_smallest_first() {
        let mut ws = [(4, 500.0), (5, 420.0), (6, 500.0), (7, 380.0)];
        memory_order(&mut ws);
        assert_eq!(ws.map(|w| w.0), [7, 5, 4, 6]);
        let r = RollingRestart {
            frequency: SimTime::from_secs(21600),
            splay: SimTime::from_secs(300),
            interval: SimTime::from_secs(60),
        };
        assert_eq!(r.period(0.0), SimTime::from_secs(21600));
        assert_eq!(r.period(0.5), SimTime::from_secs(21750));
    }

    #[test]
    fn cold_lasts_for_requests_or_time_whichever_ends_later() {
        let c = ColdStart {
            factor: 3.0,
            requests: 10,
            duration: SimTime::from_secs(5),
        };
        assert!(c.is_cold(9, SimTime::from_secs(60)));
        assert!(c.is_cold(50, SimTime::from_secs(4)));
        assert!(!c.is_cold(10, SimTime::from_secs(5)));
        assert_eq!(c.service(SimTime(1000)), SimTime(3000));
    }
}
