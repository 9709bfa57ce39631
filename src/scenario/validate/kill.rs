//! `[fleet.kill]`: request timeouts and drain deadlines.

use super::checks::*;
use crate::engine::time::SimTime;
use crate::scenario::kill::{DrainDeadline, Kill};
use crate::scenario::raw::{DrainEnds, RawFleet};

pub(super) fn kill(f: &RawFleet) -> Result<Kill, (String, String)> {
    let k = &f.kill;
    let timeout = duration("fleet.kill.request_timeout_s", k.request_timeout_s)?;
    let heartbeat = positive_duration("fleet.kill.heartbeat_timeout_s", k.heartbeat_timeout_s)?;
    let mercy = positive_duration("fleet.kill.mercy_s", k.mercy_s)?;
    let drain = match k.drain_ends {
        DrainEnds::GracefulTimeout => DrainDeadline::GracefulTimeout(duration(
            "fleet.graceful_timeout_s",
            f.graceful_timeout_s,
        )?),
        DrainEnds::Heartbeat => {
            if k.heartbeat_timeout_s < 2.0 {
                fail(
                    "fleet.kill.heartbeat_timeout_s",
                    format!(
                        "{} s is under 2 s: the worker notifies every half timeout plus the \
                         1 s of its event loop's check, which must come before the timeout",
                        shown(k.heartbeat_timeout_s)
                    ),
                )?;
            }
            DrainDeadline::Heartbeat {
                timeout: heartbeat,
                notify_every: notify_every(k.heartbeat_timeout_s),
            }
        }
        DrainEnds::Mercy => DrainDeadline::Mercy(mercy),
    };
    Ok(Kill {
        request_timeout: (timeout != SimTime::ZERO).then_some(timeout),
        drain,
    })
}

/// The aggregate mode has no request's own service time to time out.
pub(super) fn exact_only(k: &Kill) -> Result<(), (String, String)> {
    if k.request_timeout.is_some() {
        fail(
            "fleet.kill.request_timeout_s",
            "a request timeout needs [engine] mode = \"exact\": the aggregate mode has no \
             request's own service time to time out (set it to 0)",
        )?;
    }
    Ok(())
}

/// How often a UvicornWorker notifies gunicorn's arbiter: the arbiter
/// hands the worker half its timeout (`arbiter.py:730`, `self.timeout /
/// 2.0`), UvicornWorker passes it on as `timeout_notify`
/// (`uvicorn/workers.py:49`), and uvicorn's main loop checks it once a
/// second, notifying when more than that has passed (`uvicorn/server.py`,
/// `on_tick`, `counter % 10` at 0.1 s sleeps): the first whole second
/// past the half timeout (16 s for gunicorn's default 30 s).
fn notify_every(timeout_s: f64) -> SimTime {
    SimTime::from_secs_f64((timeout_s / 2.0).floor() + 1.0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn uvicorn_notifies_every_sixteen_seconds_under_the_default_timeout() {
        assert_eq!(notify_every(30.0), SimTime::from_secs(16));
        assert_eq!(notify_every(2.0), SimTime::from_secs(2));
    }
}
