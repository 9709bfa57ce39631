//! The typed `[fleet.kill]`: a server's own kill paths (`sim/kill.rs`
//! applies them).

use crate::engine::time::SimTime;

/// A server's kill paths besides the kernel's OOM kill and uWSGI's evil
/// reload (a trigger, `[policy.evil_rss]`).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Kill {
    /// A request still running this long after it started kills its
    /// worker; `None`: off.
    pub request_timeout: Option<SimTime>,
    /// What kills a drain still busy.
    pub drain: DrainDeadline,
}

/// The deadline that ends a drain whose requests are still running.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum DrainDeadline {
    /// `fleet.graceful_timeout_s` after the drain began.
    GracefulTimeout(SimTime),
    /// gunicorn's arbiter kills a worker silent for `timeout`; a shutting
    /// down UvicornWorker no longer notifies, so the drain ends `timeout`
    /// after its last notification, which came every `notify_every` from
    /// the moment it started serving.
    Heartbeat {
        timeout: SimTime,
        notify_every: SimTime,
    },
    /// uWSGI's `worker-reload-mercy` after the drain began.
    Mercy(SimTime),
}

impl DrainDeadline {
    /// When a drain that begins at `t`, of a worker serving since
    /// `serving_since`, is killed if still busy. Always after `t`.
    pub fn at(&self, t: SimTime, serving_since: SimTime) -> SimTime {
        match *self {
            DrainDeadline::GracefulTimeout(d) | DrainDeadline::Mercy(d) => t + d,
            DrainDeadline::Heartbeat {
                timeout,
                notify_every,
            } => {
                let since = (t - serving_since).0;
                let last = serving_since.0 + since - since % notify_every.0;
                SimTime(last + timeout.0)
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_heartbeat_ends_a_drain_a_timeout_after_the_last_notification() {
        let hb = DrainDeadline::Heartbeat {
            timeout: SimTime::from_secs(30),
            notify_every: SimTime::from_secs(16),
        };
        let s = SimTime::from_secs(100);
        // Notified at 100, 116, 132...: a drain at 120 dies at 116 + 30.
        assert_eq!(hb.at(SimTime::from_secs(120), s), SimTime::from_secs(146));
        // At a notification itself: that one counts.
        assert_eq!(hb.at(SimTime::from_secs(132), s), SimTime::from_secs(162));
        assert_eq!(hb.at(s, s), SimTime::from_secs(130));
        // Always 14-30 s after the drain began (timeout - notify_every .. timeout].
        for k in 0..200 {
            let t = s + SimTime::from_secs_f64(k as f64 * 0.37);
            let left = hb.at(t, s) - t;
            assert!(left > SimTime::from_secs(14) && left <= SimTime::from_secs(30));
        }
        let g = DrainDeadline::GracefulTimeout(SimTime::from_secs(30));
        assert_eq!(g.at(SimTime::from_secs(120), s), SimTime::from_secs(150));
    }
}
