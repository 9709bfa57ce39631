//! Phusion Passenger's process-recycling lines (Passenger 6.0.24, open
//! source), in its log format (`[ D 2026-12-01 13:25:41.1234 987/T5
//! file:line ]: message`, `src/cxx_supportlib/LoggingKit/Implementation.cpp`;
//! local time, read as UTC). The max-requests and shutdown lines are logged
//! at debug level: set `passenger_log_level 7` (`PassengerLogLevel 7`) to
//! record them.
//!
//! | message | source | read as |
//! | --- | --- | --- |
//! | `Process (pid=P, group=G) has reached its maximum number of requests (N); detaching it` | `src/agent/Core/ApplicationPool/Group/SessionManagement.cpp` | a recycle of pid P, trigger `max_requests`, `requests` = N |
//! | `Detached process (pid=P, group=G) has shut down. Cleaning up associated resources.` | `src/agent/Core/ApplicationPool/Group/ProcessListManagement.cpp` | the end of pid P |
//! | `Detached process (pid=P, group=G) didn't shut down within ... Forcefully killing it with SIGKILL.` | same | a `drain_killed` of pid P |
//!
//! Not read: Passenger Enterprise's `memory_limit` restarts. Enterprise is
//! closed source, so its exact lines could not be checked; they stay
//! unparsed (counted and listed) rather than guessed.

use super::prefix::{Envelope, count_after, number_after};
use super::server::{Fields, Fired};
use crate::metrics::EventKind;

/// Whether a line is one of Passenger's recycling lines.
pub fn looks_like(line: &str) -> bool {
    let env = super::prefix::envelope(line);
    env.pid.is_some() && rule(&env).is_some()
}

/// The rule that reads a Passenger message.
pub fn rule(env: &Envelope) -> Option<(&'static str, Fired)> {
    let m = env.message;
    let worker = number_after(m, "(pid=").map(|p| p.to_string());
    if m.starts_with("Process (pid=") && m.contains(" has reached its maximum number of requests (")
    {
        let label = "passenger: has reached its maximum number of requests";
        let requests = match count_after(m, "maximum number of requests (").transpose() {
            Ok(n) => n,
            Err(why) => return Some((label, Fired::Unreadable(format!("the maximum {why}")))),
        };
        let fields = Fields {
            requests,
            ..Fields::default()
        };
        let fired = Fired::Recycle {
            trigger: "max_requests",
            worker,
            fields,
        };
        return Some((label, fired));
    }
    if m.starts_with("Detached process (pid=") {
        if m.contains(" has shut down.") {
            return Some((
                "passenger: Detached process ... has shut down",
                Fired::Exit { worker: worker? },
            ));
        }
        if m.contains("Forcefully killing it with SIGKILL") {
            let fired = Fired::Kill {
                kind: EventKind::DrainKilled,
                worker,
                fields: Fields::default(),
            };
            return Some((
                "passenger: Detached process ... Forcefully killing it with SIGKILL",
                fired,
            ));
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::replay::recording::Format;

    #[test]
    fn lines_as_passenger_logs_them() {
        // SessionManagement.cpp and ProcessListManagement.cpp messages in
        // LoggingKit's format.
        let p = super::super::server::parse(
            "passenger.log",
            "[ D 2026-12-01 13:25:41.1234 987/T5 age/Cor/App/Group/SessionManagement.cpp:219 ]: Process (pid=5678, group=/app (production)) has reached its maximum number of requests (1000); detaching it\n\
             [ D 2026-12-01 13:25:43.0001 987/T5 age/Cor/App/Group/ProcessListManagement.cpp:343 ]: Detached process (pid=5678, group=/app (production)) has shut down. Cleaning up associated resources.\n\
             [ W 2026-12-01 13:40:00.0001 987/T5 age/Cor/App/Group/ProcessListManagement.cpp:347 ]: Detached process (pid=5679, group=/app (production)) didn't shut down within 1 minute. Forcefully killing it with SIGKILL.\n",
            Format::Passenger,
            rule,
        );
        let kinds: Vec<&str> = p.events.iter().map(|e| e.kind.label()).collect();
        assert_eq!(kinds, ["worker_recycled", "drain_killed"]);
        assert_eq!(p.events[0].requests, Some(1000));
        assert_eq!(p.events[0].worker.as_deref(), Some("5678"));
        assert_eq!(p.source.unparsed_count, 0);
    }
}
