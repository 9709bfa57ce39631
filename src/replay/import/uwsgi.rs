//! uWSGI's recycle lines (unbit/uwsgi master at 6cbb2177, 2025-09; the
//! 2.0.x forms where they differ). uWSGI writes most lines bare; with
//! `--log-date` (or through `uwsgi_log_verbose`) they start with a ctime
//! date, `Tue Dec  1 13:25:41 2026 - ` (local time, read as UTC), and a
//! platform timestamp may precede either.
//!
//! | message | source | read as |
//! | --- | --- | --- |
//! | `...The work of process N is done (max requests reached (A >= B)). Seeya!` | `core/utils.c` `uwsgi_close_request`, `core/uwsgi.c` `simple_goodbye_cruel_world` | a recycle of pid N, trigger `max_requests`, `requests` = A |
//! | `...The work of process N is done (reload-on-rss limit reached (A >= B)). Seeya!` (also `reload-on-uss`, `reload-on-pss`) | same | trigger `rss_limit`, `rss_mb` = A and `limit_mb` = B (bytes / 2^20) |
//! | `...The work of process N is done (reload-on-as limit reached (A >= B)). Seeya!` | same | trigger `as_limit` |
//! | `...The work of process N is done. Seeya!` (2.0.x: no reason) or another reason | same | a recycle of pid N, no trigger |
//! | `*** EVIL RELOAD ON WORKER W RSS: B (pid: N) ***` (`ADDRESS SPACE:` too) | `core/master_checks.c` | an `evil_kill` of pid N, `rss_mb` = B / 2^20 |
//! | `worker W lifetime reached, it was running for S second(s)` | `core/master_checks.c` | a recycle, trigger `lifetime` (the line names the worker slot, not its pid) |
//! | `*** HARAKIRI ON WORKER W (pid: N, try: T, graceful: G) ***` | `core/master_utils.c` | a request timeout of pid N |
//! | `DAMN ! worker W (pid: N) died, killed by signal 9 :( trying respawn ...` (and `MYSTERIOUSLY killed by signal 9`) | `core/master.c` | an OOM kill of pid N, unless an evil reload or harakiri explains it |
//! | `Respawned uWSGI worker W (new pid: N)`, `worker W killed successfully (pid: N)`, `worker W buried after S seconds`, other `DAMN ! worker` lines, `HARAKIRI triggered by ...`, `HARAKIRI: ...`, `chain reload starting...`, `chain reloading complete`, `...gracefully killing workers...`, `*** ... has been touched... workers reload !!! ***` | `core/master.c`, `core/master_utils.c`, `core/master_checks.c`, `core/uwsgi.c` | known, no event (the last two and `chain reload` are master signals) |

use super::prefix::{Envelope, count_after, number_after, whole};
use super::server::{Fields, Fired, size_mb};

const MB: f64 = 1024.0 * 1024.0;

const KNOWN: [&str; 5] = [
    "Respawned uWSGI worker ",
    "HARAKIRI triggered by ",
    "HARAKIRI (user) triggered by ",
    "HARAKIRI: ",
    "DAMN ! worker ",
];

/// Whether a line is one of uWSGI's.
pub fn looks_like(line: &str) -> bool {
    let env = super::prefix::envelope(line);
    rule(&env).is_some()
}

/// `(A >= B)` as two numbers, or why one is none (past 64 bits).
fn pair(text: &str) -> Result<(Option<u64>, Option<u64>), String> {
    let Some(inner) = text.split_once('(').map(|(_, r)| r) else {
        return Ok((None, None));
    };
    let mut it = inner.split(">=").map(|s| {
        let s = s.trim();
        let end = s
            .bytes()
            .position(|b| !b.is_ascii_digit())
            .unwrap_or(s.len());
        (end > 0).then(|| whole(&s[..end])).transpose()
    });
    Ok((
        it.next().transpose()?.flatten(),
        it.next().transpose()?.flatten(),
    ))
}

/// Bytes as MB, a memory size (`what`: its name in the line).
fn bytes_mb(what: &str, bytes: Option<u64>) -> Result<Option<f64>, String> {
    bytes.map(|b| size_mb(what, b as f64 / MB)).transpose()
}

/// The rule that reads a uWSGI message.
pub fn rule(env: &Envelope) -> Option<(&'static str, Fired)> {
    let m = env.message;
    if let Some(rest) = m.strip_prefix("...The work of process ") {
        return Some(goodbye(rest));
    }
    if let Some(rest) = m.strip_prefix("*** EVIL RELOAD ON WORKER ") {
        let label = "uwsgi: *** EVIL RELOAD ON WORKER W ... (pid: N) ***";
        let worker = number_after(rest, "(pid: ").map(|p| p.to_string());
        let rss = count_after(rest, "RSS: ").transpose();
        let rss_mb = match rss.and_then(|b| bytes_mb("the RSS", b)) {
            Ok(rss) => rss,
            Err(why) => return Some((label, Fired::Unreadable(why))),
        };
        let fields = Fields {
            rss_mb,
            ..Fields::default()
        };
        let kind = crate::metrics::EventKind::EvilKill;
        let fired = Fired::Kill {
            kind,
            worker,
            fields,
        };
        return Some((label, fired));
    }
    if m.starts_with("worker ") && m.contains(" lifetime reached, it was running for ") {
        let fired = Fired::Recycle {
            trigger: "lifetime",
            worker: None,
            fields: Fields::default(),
        };
        return Some(("uwsgi: worker W lifetime reached", fired));
    }
    if let Some(rest) = m.strip_prefix("*** HARAKIRI ON WORKER ") {
        let worker = number_after(rest, "(pid: ").map(|p| p.to_string());
        return Some((
            "uwsgi: *** HARAKIRI ON WORKER W (pid: N ...) ***",
            Fired::Timeout { worker },
        ));
    }
    if m.starts_with("DAMN ! worker ") && m.contains("killed by signal 9 ") {
        let worker = number_after(m, "(pid: ")?.to_string();
        return Some((
            "uwsgi: DAMN ! worker W (pid: N) ... killed by signal 9",
            Fired::SigKill { worker },
        ));
    }
    if m.starts_with("...gracefully killing workers...")
        || m.starts_with("chain reload starting")
        || (m.starts_with("*** ") && m.contains("has been touched... workers reload"))
    {
        return Some(("uwsgi: workers reload", Fired::Signal));
    }
    let plain = m.starts_with("worker ")
        && (m.contains(" killed successfully (pid: ") || m.contains(" buried after "));
    if plain || m.starts_with("chain reloading complete") {
        return Some(("uwsgi: worker W killed/buried, chain reload", Fired::Known));
    }
    let k = KNOWN.iter().find(|k| m.starts_with(*k))?;
    Some((k, Fired::Known))
}

/// `N is done (REASON). Seeya!` or, in 2.0.x, `N is done. Seeya!`
fn goodbye(rest: &str) -> (&'static str, Fired) {
    let pid: String = rest.chars().take_while(char::is_ascii_digit).collect();
    let worker = (!pid.is_empty()).then_some(pid);
    let reason = rest.split_once(" is done (").map(|(_, r)| r).unwrap_or("");
    let pair = pair(reason);
    let (label, trigger, fields) = if reason.starts_with("max requests reached") {
        let label = "uwsgi: The work of process N is done (max requests reached)";
        let requests = match pair {
            Ok((a, _)) => a,
            Err(why) => return (label, Fired::Unreadable(format!("the requests {why}"))),
        };
        let f = Fields {
            requests,
            ..Fields::default()
        };
        (label, "max_requests", f)
    } else if ["reload-on-rss", "reload-on-uss", "reload-on-pss"]
        .iter()
        .any(|r| reason.starts_with(r))
    {
        let label = "uwsgi: The work of process N is done (reload-on-rss/uss/pss)";
        let sizes =
            pair.and_then(|(a, b)| Ok((bytes_mb("the RSS", a)?, bytes_mb("the limit", b)?)));
        let (rss_mb, limit_mb) = match sizes {
            Ok(sizes) => sizes,
            Err(why) => return (label, Fired::Unreadable(why)),
        };
        let f = Fields {
            rss_mb,
            limit_mb,
            requests: None,
        };
        (label, "rss_limit", f)
    } else if reason.starts_with("reload-on-as") {
        (
            "uwsgi: The work of process N is done (reload-on-as)",
            "as_limit",
            Fields::default(),
        )
    } else {
        let fired = Fired::Exit {
            worker: worker.unwrap_or_default(),
        };
        return ("uwsgi: The work of process N is done", fired);
    };
    let fired = Fired::Recycle {
        trigger,
        worker,
        fields,
    };
    (label, fired)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::replay::recording::Format;

    fn parse(text: &str) -> crate::replay::Part {
        super::super::server::parse("uwsgi.log", text, Format::Uwsgi, rule)
    }

    #[test]
    fn recycle_lines_as_uwsgi_writes_them() {
        // core/utils.c goodbye_cruel_world reasons, core/uwsgi.c's Seeya line,
        // core/master_checks.c's evil reload and lifetime lines, with --log-date.
        let p = parse(
            "Tue Dec  1 13:00:00 2026 - ...The work of process 201 is done (reload-on-rss limit reached (536870912 >= 524288000)). Seeya!\n\
             Tue Dec  1 13:00:01 2026 - worker 1 killed successfully (pid: 201)\n\
             Tue Dec  1 13:00:01 2026 - Respawned uWSGI worker 1 (new pid: 205)\n\
             Tue Dec  1 13:05:00 2026 - ...The work of process 202 is done (max requests reached (1000 >= 1000)). Seeya!\n\
             Tue Dec  1 13:06:00 2026 - *** EVIL RELOAD ON WORKER 3 RSS: 1073741824 (pid: 203) ***\n\
             Tue Dec  1 13:06:00 2026 - DAMN ! worker 3 (pid: 203) died, killed by signal 9 :( trying respawn ...\n\
             Tue Dec  1 13:07:00 2026 - DAMN ! worker 2 (pid: 206) died, killed by signal 9 :( trying respawn ...\n\
             Tue Dec  1 13:08:00 2026 - worker 4 lifetime reached, it was running for 3601 second(s)\n\
             Tue Dec  1 13:09:00 2026 - *** HARAKIRI ON WORKER 1 (pid: 205, try: 1, graceful: no) ***\n\
             Tue Dec  1 13:09:00 2026 - DAMN ! worker 1 (pid: 205) died, killed by signal 9 :( trying respawn ...\n",
        );
        let kinds: Vec<&str> = p.events.iter().map(|e| e.kind.label()).collect();
        assert_eq!(
            kinds,
            [
                "worker_recycled",
                "worker_recycled",
                "evil_kill",
                "oom_kill",
                "worker_recycled",
                "timeout_kill"
            ]
        );
        assert_eq!(p.events[0].trigger.as_deref(), Some("rss_limit"));
        assert_eq!(p.events[0].rss_mb, Some(512.0));
        assert_eq!(p.events[0].limit_mb, Some(500.0));
        assert_eq!(p.events[1].requests, Some(1000));
        assert_eq!(p.events[2].rss_mb, Some(1024.0));
        assert_eq!(p.events[4].trigger.as_deref(), Some("lifetime"));
        assert_eq!(p.source.unparsed_count, 0);
    }

    #[test]
    fn the_2_0_goodbye_has_no_reason() {
        let p = parse("2026-12-01T13:00:00Z ...The work of process 201 is done. Seeya!\n");
        assert_eq!(p.events.len(), 1);
        assert_eq!(p.events[0].trigger, None);
        assert_eq!(p.events[0].worker.as_deref(), Some("201"));
    }
}
