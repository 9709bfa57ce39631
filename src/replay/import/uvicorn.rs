//! uvicorn's own log lines, in its default format (uvicorn 0.54.0
//! `uvicorn/config.py` `LOGGING_CONFIG`: `"%(levelprefix)s %(message)s"`,
//! e.g. `INFO:     Shutting down`) or through gunicorn's (UvicornWorker).
//! uvicorn's default format has no time: a recycle line needs one from the
//! platform (`kubectl logs --timestamps`, a journald export) or a
//! `--log-config` with `%(asctime)s`; without, it is listed as unparsed
//! with that reason.
//!
//! | message | source | read as |
//! | --- | --- | --- |
//! | `Maximum request limit of N exceeded. Terminating process.` | `uvicorn/server.py` `on_tick` | a recycle, trigger `max_requests`, `requests` = N (the worker's jittered limit) |
//! | `Finished server process [N]` | `uvicorn/server.py` `_serve` | the end of process N (names the pid a standalone recycle line lacks) |
//! | `Started server process [N]`, `Shutting down`, `Waiting for application startup.`, `Application startup complete.`, `Waiting for application shutdown.`, `Application shutdown complete.`, `Waiting for connections to close. (CTRL+C to force quit)`, `Waiting for background tasks to complete. (CTRL+C to force quit)`, `Uvicorn running on ...` | `uvicorn/server.py`, `uvicorn/lifespan/on.py` | known, no event |

use super::prefix::{Envelope, count_after};
use super::server::{Fields, Fired};

const KNOWN: [&str; 9] = [
    "Started server process [",
    "Shutting down",
    "Waiting for application startup.",
    "Application startup complete.",
    "Waiting for application shutdown.",
    "Application shutdown complete.",
    "Waiting for connections to close.",
    "Waiting for background tasks to complete.",
    "Uvicorn running on ",
];

/// Whether a line is in uvicorn's default format with one of its messages.
pub fn looks_like(line: &str) -> bool {
    let env = super::prefix::envelope(line);
    env.pid.is_none() && env.level.is_some() && rule(&env).is_some()
}

/// The rule that reads a uvicorn message.
pub fn rule(env: &Envelope) -> Option<(&'static str, Fired)> {
    let m = env.message;
    if m.starts_with("Maximum request limit of ") && m.ends_with("exceeded. Terminating process.") {
        let label = "uvicorn: Maximum request limit of N exceeded. Terminating process.";
        let requests = match count_after(m, "limit of ").transpose() {
            Ok(n) => n,
            Err(why) => return Some((label, Fired::Unreadable(format!("the limit {why}")))),
        };
        let fields = Fields {
            requests,
            ..Fields::default()
        };
        return Some((
            label,
            Fired::Recycle {
                trigger: "max_requests",
                worker: env.pid.clone(),
                fields,
            },
        ));
    }
    if let Some(n) = m.strip_prefix("Finished server process [") {
        let worker = n.trim_end_matches(']').to_string();
        if worker.is_empty() || !worker.bytes().all(|b| b.is_ascii_digit()) {
            return None;
        }
        return Some((
            "uvicorn: Finished server process [N]",
            Fired::Exit { worker },
        ));
    }
    let k = KNOWN.iter().find(|k| m.starts_with(*k))?;
    Some((k, Fired::Known))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::replay::recording::Format;

    fn parse(text: &str) -> crate::replay::Part {
        super::super::server::parse("u.log", text, Format::Uvicorn, rule)
    }

    #[test]
    fn standalone_lines_with_platform_times() {
        // uvicorn 0.54.0 uvicorn/server.py, in its default format, with
        // `kubectl logs --timestamps` times before them.
        let p = parse(
            "2026-12-01T13:00:00.000000000Z INFO:     Started server process [7]\n\
             2026-12-01T13:00:00.100000000Z INFO:     Application startup complete.\n\
             2026-12-01T13:10:00.000000000Z INFO:     Maximum request limit of 500 exceeded. Terminating process.\n\
             2026-12-01T13:10:00.100000000Z INFO:     Shutting down\n\
             2026-12-01T13:10:00.200000000Z INFO:     Finished server process [7]\n",
        );
        assert_eq!(p.events.len(), 1);
        assert_eq!(
            p.events[0].worker.as_deref(),
            Some("7"),
            "the pid comes from the exit"
        );
        assert_eq!(p.events[0].requests, Some(500));
        assert_eq!(p.source.unparsed_count, 0);
    }

    #[test]
    fn an_untimed_recycle_is_listed_with_the_reason() {
        let p = parse(
            "INFO:     Started server process [7]\n\
             INFO:     Maximum request limit of 500 exceeded. Terminating process.\n",
        );
        assert!(p.events.is_empty());
        assert_eq!(p.source.unparsed_count, 1);
        assert!(
            p.source.unparsed[0].reason.contains("no timestamp"),
            "{:?}",
            p.source.unparsed
        );
        assert!(looks_like("INFO:     Started server process [7]"));
        assert!(!looks_like(
            "INFO:     127.0.0.1:5000 - \"GET / HTTP/1.1\" 200 OK"
        ));
    }
}
