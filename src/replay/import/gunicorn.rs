//! gunicorn's error log, in its default format (gunicorn 23.0.0
//! `gunicorn/glogging.py`: `[%Y-%m-%d %H:%M:%S %z] [pid] [LEVEL] message`),
//! with uvicorn's lines as UvicornWorker writes them through it.
//!
//! The messages, from gunicorn 23.0.0:
//!
//! | message | source | read as |
//! | --- | --- | --- |
//! | `Autorestarting worker after current request.` | `gunicorn/workers/sync.py`, `gthread.py`, `base_async.py`, `gtornado.py` | a recycle, trigger `max_requests`; the worker is the line's pid |
//! | `Worker exiting (pid: N)` | `gunicorn/arbiter.py` `spawn_worker` | the end of worker N: a recycle with no trigger when no other line explains it (see `server.rs`) |
//! | `Worker (pid:N) was sent SIGKILL! Perhaps out of memory?` | `arbiter.py` `reap_workers` | an OOM kill, unless N timed out first |
//! | `WORKER TIMEOUT (pid:N)` | `arbiter.py` `murder_workers` | a `drain_killed` when N was draining after a recycle, else `timeout_kill` |
//! | `Worker (pid:N) exited with code N` (with or without a final `.`) | `arbiter.py` `reap_workers` | a crash: N's exit is no recycle |
//! | `Worker (pid:N) was sent SIGTERM!` / `was sent code N!` | `arbiter.py` `reap_workers` | known, no event |
//! | `Exception in worker process` | `arbiter.py` `spawn_worker` | a crash of the line's pid |
//! | `Handling signal: term` (`int`, `quit`, `hup`, `ttou`, `winch`) | `arbiter.py` `run` | a master signal: exits in the next 35 s are its doing |
//! | `Booting worker with pid: N`, `Starting gunicorn V`, `Listening at: ...`, `Using worker: ...`, `Handling signal: ttin` and others, `Shutting down: Master`, `Reason: ...`, `Arbiter booted`, `Hang up: ...`, `graceful stop of workers`, `Worker reloading: ... modified`, `Master has been promoted.`, `Ignoring unknown signal: ...`, `Unhandled signal: ...`, `USR2 signal ignored. ...`, and gunicorn 27's `Control socket listening at ...`, `Dirty arbiter listening on ...` | `arbiter.py`, `workers/base.py`, 27.0: `ctl/server.py`, `dirty/arbiter.py` | known, no event |
//!
//! uvicorn's messages (`uvicorn.rs`) are read in the same file: under
//! UvicornWorker a max-requests recycle is uvicorn's `Maximum request limit
//! of N exceeded. Terminating process.`, then gunicorn's `Worker exiting`,
//! and the two count once.

use super::prefix::Envelope;
use super::server::{Fields, Fired};
use super::uvicorn;

/// Signals after which gunicorn stops or replaces workers itself.
const STOPPING: [&str; 6] = ["term", "int", "quit", "hup", "ttou", "winch"];

const KNOWN: [&str; 18] = [
    "Booting worker with pid: ",
    "Starting gunicorn ",
    "Listening at: ",
    "Using worker: ",
    "Handling signal: ",
    "Shutting down: ",
    "Reason: ",
    "Arbiter booted",
    "Hang up: ",
    "graceful stop of workers",
    "Worker reloading: ",
    "Master has been promoted.",
    "Ignoring unknown signal: ",
    "Unhandled signal: ",
    "USR2 signal ignored.",
    "Current configuration:",
    // gunicorn 27 (`ctl/server.py`, `dirty/arbiter.py`).
    "Control socket listening at ",
    "Dirty arbiter listening on ",
];

/// Whether a line is in gunicorn's format with one of its messages.
pub fn looks_like(line: &str) -> bool {
    let env = super::prefix::envelope(line);
    env.pid.is_some() && env.level.is_some() && rule(&env).is_some()
}

/// The rule that reads a gunicorn (or uvicorn) message.
pub fn rule(env: &Envelope) -> Option<(&'static str, Fired)> {
    let m = env.message;
    let pid = || env.pid.clone();
    let fired = if m.starts_with("Autorestarting worker after current request.") {
        (
            "gunicorn: Autorestarting worker after current request.",
            Fired::Recycle {
                trigger: "max_requests",
                worker: pid(),
                fields: Fields::default(),
            },
        )
    } else if let Some(n) = m.strip_prefix("Worker exiting (pid: ") {
        let worker = n.trim_end_matches(')').to_string();
        ("gunicorn: Worker exiting (pid: N)", Fired::Exit { worker })
    } else if let Some(n) = m.strip_prefix("WORKER TIMEOUT (pid:") {
        let worker = Some(n.trim_end_matches(')').to_string());
        (
            "gunicorn: WORKER TIMEOUT (pid:N)",
            Fired::Timeout { worker },
        )
    } else if let Some(rest) = m.strip_prefix("Worker (pid:") {
        return reaped(rest);
    } else if m.starts_with("Exception in worker process") {
        (
            "gunicorn: Exception in worker process",
            Fired::Crash { worker: pid() },
        )
    } else if let Some(sig) = m.strip_prefix("Handling signal: ") {
        let fired = if STOPPING.contains(&sig.trim()) {
            Fired::Signal
        } else {
            Fired::Known
        };
        ("gunicorn: Handling signal: S", fired)
    } else if let Some(k) = KNOWN.iter().find(|k| m.starts_with(*k)) {
        (*k, Fired::Known)
    } else {
        return uvicorn::rule(env);
    };
    Some(fired)
}

/// `Worker (pid:N) ...`: the master's reaping lines.
fn reaped(rest: &str) -> Option<(&'static str, Fired)> {
    let (worker, what) = rest.split_once(") ")?;
    if worker.is_empty() || !worker.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    let worker = worker.to_string();
    if what.starts_with("was sent SIGKILL!") {
        Some((
            "gunicorn: Worker (pid:N) was sent SIGKILL! Perhaps out of memory?",
            Fired::SigKill { worker },
        ))
    } else if what.starts_with("exited with code ") {
        Some((
            "gunicorn: Worker (pid:N) exited with code N",
            Fired::Crash {
                worker: Some(worker),
            },
        ))
    } else if what.starts_with("was sent ") {
        Some(("gunicorn: Worker (pid:N) was sent SIGNAL!", Fired::Known))
    } else {
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::metrics::EventKind;
    use crate::replay::recording::Format;

    fn parse(text: &str) -> crate::replay::Part {
        super::super::server::parse("g.log", text, Format::Gunicorn, rule)
    }

    // Lines as gunicorn 23.0.0 writes them: the format from
    // gunicorn/glogging.py, the messages from gunicorn/arbiter.py and
    // gunicorn/workers/sync.py.
    const LOG: &str = "\
[2026-12-01 13:00:00 +0000] [100] [INFO] Starting gunicorn 23.0.0
[2026-12-01 13:00:00 +0000] [100] [INFO] Listening at: http://127.0.0.1:8000 (100)
[2026-12-01 13:00:00 +0000] [100] [INFO] Using worker: sync
[2026-12-01 13:00:00 +0000] [101] [INFO] Booting worker with pid: 101
[2026-12-01 13:00:00 +0000] [102] [INFO] Booting worker with pid: 102
[2026-12-01 13:10:00 +0000] [101] [INFO] Autorestarting worker after current request.
[2026-12-01 13:10:00 +0000] [101] [INFO] Worker exiting (pid: 101)
[2026-12-01 13:10:01 +0000] [103] [INFO] Booting worker with pid: 103
[2026-12-01 13:20:00 +0000] [100] [ERROR] Worker (pid:102) was sent SIGKILL! Perhaps out of memory?
[2026-12-01 13:20:00 +0000] [104] [INFO] Booting worker with pid: 104
[2026-12-01 13:30:00 +0000] [100] [CRITICAL] WORKER TIMEOUT (pid:103)
[2026-12-01 13:30:00 +0000] [103] [INFO] Worker exiting (pid: 103)
[2026-12-01 13:30:30 +0000] [100] [ERROR] Worker (pid:103) was sent SIGKILL! Perhaps out of memory?
[2026-12-01 13:40:00 +0000] [104] [INFO] Worker exiting (pid: 104)
[2026-12-01 13:50:00 +0000] [100] [INFO] Handling signal: term
[2026-12-01 13:50:00 +0000] [105] [INFO] Worker exiting (pid: 105)
[2026-12-01 13:50:01 +0000] [100] [INFO] Shutting down: Master
";

    #[test]
    fn recycles_kills_and_known_lines() {
        let p = parse(LOG);
        let kinds: Vec<&str> = p.events.iter().map(|e| e.kind.label()).collect();
        assert_eq!(
            kinds,
            [
                "worker_recycled",
                "oom_kill",
                "timeout_kill",
                "worker_recycled"
            ]
        );
        assert_eq!(p.events[0].trigger.as_deref(), Some("max_requests"));
        assert_eq!(p.events[0].worker.as_deref(), Some("101"));
        assert_eq!(p.events[1].worker.as_deref(), Some("102"));
        assert_eq!(p.events[3].trigger, None, "an exit with no reason logged");
        assert_eq!(p.source.unparsed_count, 0);
        assert_eq!(p.source.rules["Booting worker with pid"], 4);
        assert_eq!(p.source.rules["gunicorn: Worker exiting (pid: N)"], 4);
    }

    #[test]
    fn a_drain_killed_by_the_heartbeat_and_a_crash() {
        let p = parse(
            "[2026-12-01 13:10:00 +0000] [101] [INFO] Autorestarting worker after current request.\n\
             [2026-12-01 13:10:30 +0000] [100] [CRITICAL] WORKER TIMEOUT (pid:101)\n\
             [2026-12-01 13:11:00 +0000] [102] [ERROR] Exception in worker process\n\
             [2026-12-01 13:11:00 +0000] [102] [INFO] Worker exiting (pid: 102)\n\
             [2026-12-01 13:12:00 +0000] [103] [INFO] Worker exiting (pid: 103)\n\
             [2026-12-01 13:12:00 +0000] [100] [ERROR] Worker (pid:103) exited with code 3\n",
        );
        let kinds: Vec<&str> = p.events.iter().map(|e| e.kind.label()).collect();
        assert_eq!(kinds, ["worker_recycled", "drain_killed", "worker_crashed"]);
        assert!(p.events[1].is(EventKind::DrainKilled));
    }

    #[test]
    fn uvicorn_worker_lines_count_one_recycle() {
        // uvicorn 0.54.0 uvicorn/server.py and lifespan/on.py, through gunicorn's format.
        let p = parse(
            "[2026-12-01 13:10:00 +0000] [101] [INFO] Maximum request limit of 1042 exceeded. Terminating process.\n\
             [2026-12-01 13:10:00 +0000] [101] [INFO] Shutting down\n\
             [2026-12-01 13:10:00 +0000] [101] [INFO] Waiting for application shutdown.\n\
             [2026-12-01 13:10:00 +0000] [101] [INFO] Application shutdown complete.\n\
             [2026-12-01 13:10:00 +0000] [101] [INFO] Finished server process [101]\n\
             [2026-12-01 13:10:00 +0000] [101] [INFO] Worker exiting (pid: 101)\n\
             [2026-12-01 13:10:01 +0000] [104] [INFO] Booting worker with pid: 104\n\
             [2026-12-01 13:10:01 +0000] [104] [INFO] Started server process [104]\n",
        );
        assert_eq!(p.events.len(), 1);
        assert_eq!(p.events[0].requests, Some(1042));
        assert_eq!(p.events[0].trigger.as_deref(), Some("max_requests"));
        assert_eq!(p.source.unparsed_count, 0);
    }

    #[test]
    fn detection_needs_the_format_and_a_message() {
        assert!(looks_like(
            "[2026-12-01 13:25:41 +0000] [1234] [INFO] Booting worker with pid: 1234"
        ));
        assert!(!looks_like(
            "[2026-12-01 13:25:41 +0000] [1234] [INFO] hello"
        ));
        assert!(!looks_like("20:17:02 RECYCLE inst-A"));
    }
}
