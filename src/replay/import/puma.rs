//! puma_worker_killer's lines (schneems/puma_worker_killer 0.3.1, master at
//! 8107b09), written through puma's cluster-mode log (`[pid] message`,
//! where pid is puma's master), usually after a platform timestamp
//! (`2026-12-01T13:25:41.123456+00:00 app[web.1]: ` on Heroku is read from
//! its first word).
//!
//! | message | source | read as |
//! | --- | --- | --- |
//! | `PumaWorkerKiller: Out of memory. N workers consuming total: X mb out of max: Y mb. Sending TERM to pid P consuming Z mb.` | `lib/puma_worker_killer/reaper.rb` | a recycle of pid P, trigger `instance_memory` (the sum of master and workers against `ram`), `rss_mb` = Z |
//! | `PumaWorkerKiller: Rolling Restart. N workers consuming total: X mb. Sending TERM to pid P.` | `lib/puma_worker_killer/rolling_restart.rb` | a recycle of pid P, trigger `rolling_restart` |
//! | `PumaWorkerKiller: Consuming X mb with master and N workers.` | `lib/puma_worker_killer/reaper.rb` | known, no event |

use super::prefix::{Envelope, number_after};
use super::server::{Fields, Fired, size_mb};

/// Whether a line is one of puma_worker_killer's.
pub fn looks_like(line: &str) -> bool {
    line.contains("PumaWorkerKiller: ") && rule(&super::prefix::envelope(line)).is_some()
}

/// The rule that reads a puma_worker_killer message (anywhere in the line:
/// platforms put their own words before it).
pub fn rule(env: &Envelope) -> Option<(&'static str, Fired)> {
    let at = env.message.find("PumaWorkerKiller: ")?;
    let m = &env.message[at + "PumaWorkerKiller: ".len()..];
    let worker = number_after(m, "Sending TERM to pid ").map(|p| p.to_string());
    if m.starts_with("Out of memory.") {
        let label = "puma_worker_killer: Out of memory. ... Sending TERM to pid P";
        let rss = m
            .split_once(" consuming ")
            .and_then(|(_, r)| r.rsplit_once(" consuming "))
            .and_then(|(_, z)| z.trim_end_matches(" mb.").trim().parse::<f64>().ok())
            .map(|x| size_mb("the worker's", x))
            .transpose();
        let rss_mb = match rss {
            Ok(rss) => rss,
            Err(why) => return Some((label, Fired::Unreadable(why))),
        };
        let fields = Fields {
            rss_mb,
            ..Fields::default()
        };
        let fired = Fired::Recycle {
            trigger: "instance_memory",
            worker: Some(worker?),
            fields,
        };
        return Some((label, fired));
    }
    if m.starts_with("Rolling Restart.") {
        let fired = Fired::Recycle {
            trigger: "rolling_restart",
            worker: Some(worker?),
            fields: Fields::default(),
        };
        return Some((
            "puma_worker_killer: Rolling Restart. ... Sending TERM to pid P",
            fired,
        ));
    }
    m.starts_with("Consuming ").then_some((
        "puma_worker_killer: Consuming X mb with master and N workers.",
        Fired::Known,
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::replay::recording::Format;

    #[test]
    fn lines_as_the_reaper_and_rolling_restart_write_them() {
        // lib/puma_worker_killer/reaper.rb and rolling_restart.rb, through
        // puma's `[pid] ` prefix, with `kubectl logs --timestamps` times.
        let p = super::super::server::parse(
            "p.log",
            "2026-12-01T13:00:00Z [4242] PumaWorkerKiller: Consuming 1200.5 mb with master and 2 workers.\n\
             2026-12-01T13:00:10Z [4242] PumaWorkerKiller: Out of memory. 2 workers consuming total: 1600.25 mb out of max: 1536.0 mb. Sending TERM to pid 4250 consuming 700.5 mb.\n\
             2026-12-01T19:00:00Z [4242] PumaWorkerKiller: Rolling Restart. 2 workers consuming total: 900.0 mb. Sending TERM to pid 4251.\n",
            Format::PumaWorkerKiller,
            rule,
        );
        assert_eq!(p.events.len(), 2);
        assert_eq!(p.events[0].worker.as_deref(), Some("4250"));
        assert_eq!(p.events[0].rss_mb, Some(700.5));
        assert_eq!(p.events[0].trigger.as_deref(), Some("instance_memory"));
        assert_eq!(p.events[1].trigger.as_deref(), Some("rolling_restart"));
        assert_eq!(p.source.unparsed_count, 0);
    }
}
