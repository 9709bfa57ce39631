//! The envelope of a server's log line: the timestamp and process id the
//! logging library (or the platform collecting the log) puts before the
//! message. Each server's importer reads the message; this file reads what
//! comes before it, in every form the servers write:
//!
//! | form | example | written by |
//! | --- | --- | --- |
//! | gunicorn | `[2026-12-01 13:25:41 +0000] [1234] [INFO] msg` | gunicorn 23.0.0 `gunicorn/glogging.py`: `error_fmt = "%(asctime)s [%(process)d] [%(levelname)s] %(message)s"`, `datefmt = "[%Y-%m-%d %H:%M:%S %z]"` |
//! | uvicorn | `INFO:     msg` | uvicorn 0.54.0 `uvicorn/config.py` (`"%(levelprefix)s %(message)s"`), `uvicorn/logging.py` (level, `:`, padded to 9 characters) |
//! | Passenger | `[ N 2026-12-01 13:25:41.1234 1234/T5 age/Cor/App/Group.cpp:219 ]: msg` | Passenger 6.0.24 `src/cxx_supportlib/LoggingKit/Implementation.cpp` (local time, no zone) |
//! | uWSGI | `Tue Dec  1 13:25:41 2026 - msg` | uWSGI `core/logging.c` `uwsgi_log_verbose` (ctime, local time) |
//! | puma | `[1234] msg` | puma's cluster-mode log writer (no time) |
//! | a platform | `2026-12-01T13:25:41.123456789Z msg` | `kubectl logs --timestamps`, journald/Docker exports |
//!
//! A platform timestamp may precede any of the others. Times without a
//! zone (Passenger, uWSGI) are read as UTC: run the server with `TZ=UTC` or
//! replay its log with files of the same zone.

use crate::replay::time::parse_rfc3339;

/// A line's envelope and message.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Envelope<'a> {
    /// The timestamp as RFC 3339 text, when the line has one.
    pub stamp: Option<String>,
    /// The process field (gunicorn, Passenger, puma), when there is one.
    pub pid: Option<String>,
    pub level: Option<&'a str>,
    pub message: &'a str,
}

/// Splits a line into its envelope and message.
pub fn envelope(line: &str) -> Envelope<'_> {
    let line = line.trim();
    let (platform, rest) = platform_stamp(line);
    let mut env = server_prefix(rest);
    if env.stamp.is_none() {
        env.stamp = platform;
    }
    env
}

/// A leading RFC 3339 word (`kubectl logs --timestamps`).
fn platform_stamp(line: &str) -> (Option<String>, &str) {
    let (first, rest) = line.split_once(' ').unwrap_or((line, ""));
    match parse_rfc3339(first) {
        Some(_) => (Some(first.to_string()), rest.trim_start()),
        None => (None, line),
    }
}

fn server_prefix(line: &str) -> Envelope<'_> {
    gunicorn(line)
        .or_else(|| passenger(line))
        .or_else(|| uwsgi(line))
        .or_else(|| uvicorn(line))
        .or_else(|| puma(line))
        .unwrap_or(Envelope {
            message: line,
            ..Envelope::default()
        })
}

/// `[2026-12-01 13:25:41 +0000] [1234] [INFO] msg`
fn gunicorn(line: &str) -> Option<Envelope<'_>> {
    let rest = line.strip_prefix('[')?;
    let (date, rest) = rest.split_once("] [")?;
    let (pid, rest) = rest.split_once("] [")?;
    let (level, message) = rest.split_once("] ").or_else(|| {
        let level = rest.strip_suffix(']')?;
        Some((level, ""))
    })?;
    let stamp = space_zone(date)?;
    digits(pid)?;
    Some(Envelope {
        stamp: Some(stamp),
        pid: Some(pid.to_string()),
        level: Some(level),
        message,
    })
}

/// `2026-12-01 13:25:41 +0000` (strftime `%Y-%m-%d %H:%M:%S %z`) as RFC 3339.
pub fn space_zone(s: &str) -> Option<String> {
    let (date_time, zone) = s.rsplit_once(' ')?;
    let (date, time) = date_time.split_once(' ')?;
    let zone = numeric_zone(zone)?;
    let text = format!("{date}T{time}{zone}");
    parse_rfc3339(&text).map(|_| text)
}

/// `+0000` or `-0530` as `+00:00` / `-05:30`.
fn numeric_zone(z: &str) -> Option<String> {
    let b = z.as_bytes();
    let ok = b.len() == 5 && matches!(b[0], b'+' | b'-') && b[1..].iter().all(u8::is_ascii_digit);
    ok.then(|| format!("{}:{}", &z[..3], &z[3..]))
}

/// `[ N 2026-12-01 13:25:41.1234 1234/T5 file:line ]: msg`
fn passenger(line: &str) -> Option<Envelope<'_>> {
    let rest = line.strip_prefix("[ ")?;
    let (head, message) = rest.split_once(" ]: ")?;
    let mut words = head.split_whitespace();
    let level = words.next()?;
    let (date, time) = (words.next()?, words.next()?);
    let pid = words.next()?.split('/').next()?;
    digits(pid)?;
    let text = format!("{date}T{time}Z");
    parse_rfc3339(&text)?;
    Some(Envelope {
        stamp: Some(text),
        pid: Some(pid.to_string()),
        level: Some(level),
        message,
    })
}

/// `Tue Dec  1 13:25:41 2026 - msg` (ctime, then ` - `).
fn uwsgi(line: &str) -> Option<Envelope<'_>> {
    let (stamp, message) = line.split_once(" - ")?;
    Some(Envelope {
        stamp: Some(ctime(stamp)?),
        message,
        ..Envelope::default()
    })
}

const MONTHS: [&str; 12] = [
    "Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec",
];

fn month(name: &str) -> Option<usize> {
    MONTHS.iter().position(|m| *m == name).map(|i| i + 1)
}

/// `Tue Dec  1 13:25:41 2026` as RFC 3339 (read as UTC).
pub fn ctime(s: &str) -> Option<String> {
    let w: Vec<&str> = s.split_whitespace().collect();
    let [_, mon, day, time, year] = w.as_slice() else {
        return None;
    };
    let day: u32 = day.parse().ok()?;
    let text = format!("{year}-{:02}-{day:02}T{time}Z", month(mon)?);
    parse_rfc3339(&text).map(|_| text)
}

/// `Tue, 01 Dec 2026 13:25:41 +0000` (RFC 1123 with a numeric zone, as
/// `kubectl describe` prints times) as RFC 3339.
pub fn rfc1123(s: &str) -> Option<String> {
    let w: Vec<&str> = s.split_whitespace().collect();
    let [_, day, mon, year, time, zone] = w.as_slice() else {
        return None;
    };
    let day: u32 = day.parse().ok()?;
    let zone = numeric_zone(zone)?;
    let text = format!("{year}-{:02}-{day:02}T{time}{zone}", month(mon)?);
    parse_rfc3339(&text).map(|_| text)
}

/// `INFO:     msg`: a level name, a colon, padding to 9 characters.
fn uvicorn(line: &str) -> Option<Envelope<'_>> {
    let (level, message) = line.split_once(':')?;
    let known = ["CRITICAL", "ERROR", "WARNING", "INFO", "DEBUG", "TRACE"];
    if !known.contains(&level) || !message.starts_with(' ') {
        return None;
    }
    Some(Envelope {
        level: Some(level),
        message: message.trim_start(),
        ..Envelope::default()
    })
}

/// `[1234] msg` (puma in cluster mode).
fn puma(line: &str) -> Option<Envelope<'_>> {
    let (pid, message) = line.strip_prefix('[')?.split_once("] ")?;
    digits(pid)?;
    Some(Envelope {
        pid: Some(pid.to_string()),
        message,
        ..Envelope::default()
    })
}

fn digits(s: &str) -> Option<()> {
    (!s.is_empty() && s.len() <= 10 && s.bytes().all(|b| b.is_ascii_digit())).then_some(())
}

/// The digits right after `key` in `text`, when it has the key and a digit
/// follows it.
fn digits_after<'a>(text: &'a str, key: &str) -> Option<&'a str> {
    let rest = &text[text.find(key)? + key.len()..];
    let end = rest
        .bytes()
        .position(|b| !b.is_ascii_digit())
        .unwrap_or(rest.len());
    (end > 0).then(|| &rest[..end])
}

/// The number after `key` in `text` (`"pid: "` in `Worker exiting (pid:
/// 1234)`); `None` when there is none, or when it does not fit 64 bits
/// (no pid does).
pub fn number_after(text: &str, key: &str) -> Option<u64> {
    digits_after(text, key)?.parse().ok()
}

/// The count after `key` in `text`, when there is one (`limit of 500`):
/// `Err` when its digits do not fit 64 bits. Such a line is refused, never
/// read as its first 20 digits nor clamped to the largest count.
pub fn count_after(text: &str, key: &str) -> Option<Result<u64, String>> {
    digits_after(text, key).map(whole)
}

/// Digits as a count, or why they are none (`whole("12")`).
pub fn whole(digits: &str) -> Result<u64, String> {
    digits.parse().map_err(|_| {
        format!(
            "{} is beyond any count (at most {})",
            crate::text::cut(digits, 40),
            u64::MAX
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn gunicorn_lines_as_glogging_writes_them() {
        // gunicorn 23.0.0 gunicorn/glogging.py: error_fmt and datefmt.
        let e = envelope("[2026-12-01 13:25:41 +0000] [1234] [INFO] Booting worker with pid: 1234");
        assert_eq!(e.stamp.as_deref(), Some("2026-12-01T13:25:41+00:00"));
        assert_eq!(e.pid.as_deref(), Some("1234"));
        assert_eq!(e.level, Some("INFO"));
        assert_eq!(e.message, "Booting worker with pid: 1234");
        let local = envelope("[2026-12-01 14:25:41 +0100] [7] [CRITICAL] WORKER TIMEOUT (pid:9)");
        assert_eq!(
            parse_rfc3339(local.stamp.as_deref().unwrap()),
            parse_rfc3339("2026-12-01T13:25:41Z")
        );
    }

    #[test]
    fn platform_stamps_precede_any_envelope() {
        let e = envelope("2026-12-01T13:25:41.123456789Z INFO:     Shutting down");
        assert_eq!(e.stamp.as_deref(), Some("2026-12-01T13:25:41.123456789Z"));
        assert_eq!(e.level, Some("INFO"));
        assert_eq!(e.message, "Shutting down");
        let p = envelope("2026-12-01T13:25:41Z [4242] PumaWorkerKiller: Rolling Restart.");
        assert_eq!(p.pid.as_deref(), Some("4242"));
        assert!(p.stamp.is_some());
    }

    #[test]
    fn passenger_uwsgi_and_kubectl_times() {
        let p = envelope(
            "[ D 2026-12-01 13:25:41.1234 987/T5 age/Cor/App/Group/SessionManagement.cpp:219 ]: \
             Process (pid=5678, group=/app (production)) has reached its maximum number of \
             requests (1000); detaching it",
        );
        assert_eq!(p.pid.as_deref(), Some("987"));
        assert!(p.message.starts_with("Process (pid=5678"));
        let u = envelope(
            "Tue Dec  1 13:25:41 2026 - worker 1 lifetime reached, it was running for 3601 second(s)",
        );
        assert_eq!(u.stamp.as_deref(), Some("2026-12-01T13:25:41Z"));
        assert_eq!(
            rfc1123("Tue, 01 Dec 2026 13:25:41 +0000").as_deref(),
            Some("2026-12-01T13:25:41+00:00")
        );
        assert_eq!(
            number_after("Worker exiting (pid: 1234)", "pid: "),
            Some(1234)
        );
    }
}
