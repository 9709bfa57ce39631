//! Platform log lines, as the seeds quote them:
//!
//! ```text
//! 20:17:02 RECYCLE inst-B rss=541 lim=498 after=410req
//! 20:21:28 RECYCLE inst-B
//! 20:15:38 retry_ok
//! 20:15:40 TypeError: fetch failed                 (Sentry)
//! recycle pressure: instance headroom 251MB < 350MB (with or without a time)
//! ```
//!
//! A timestamp is `HH:MM:SS[.fff]`, RFC 3339 (or a date and a time), or
//! Unix seconds, optionally in brackets. Lines that are none of these are
//! counted and kept (the first few, with line numbers): logs are noisy, so
//! they are reported, never silently dropped and never fatal.
//!
//! The pressure line is the metric's `pressure=true` in another vocabulary;
//! it becomes a `PressureNote` that `Recording::assemble` attaches to the
//! recycle it belongs to.

use super::fields::parse_bool;
use crate::metrics::EventKind;
use crate::replay::recording::{Event, Format, Kind, Lease, Origin, Part, PressureNote, Source};
use crate::replay::time::{TimeBase, TsReader};

/// A log file is recognised when one of its first lines is.
const DETECT_LINES: usize = 100;

enum Line {
    Blank,
    Event(Box<Event>),
    Note(PressureNote),
}

/// Whether any of the first lines is a known log line.
pub fn looks_like(text: &str) -> bool {
    let mut ts = TsReader::default();
    text.lines()
        .filter(|l| !l.trim().is_empty())
        .take(DETECT_LINES)
        .any(|l| {
            matches!(
                parse_line(l, &mut ts, Origin::default()),
                Ok(Line::Event(_) | Line::Note(_))
            )
        })
}

pub fn parse(name: &str, text: &str) -> Part {
    let mut source = Source::new(name, Format::Log);
    let mut ts = TsReader::default();
    let (mut events, mut notes) = (Vec::new(), Vec::new());
    for (i, line) in text.lines().enumerate() {
        let origin = Origin {
            source: 0,
            line: i + 1,
        };
        match parse_line(line, &mut ts, origin) {
            Ok(Line::Blank) => {}
            Ok(Line::Event(e)) => events.push(*e),
            Ok(Line::Note(n)) => notes.push(n),
            Err(reason) => source.unparsed(i + 1, line, reason),
        }
    }
    source.time_base = ts.base();
    source.events = events.len();
    source.pressure_notes = notes.len();
    let mut part = Part::new(source, events);
    part.notes = notes;
    part
}

fn parse_line(line: &str, ts: &mut TsReader, origin: Origin) -> Result<Line, String> {
    let line = line.trim();
    if line.is_empty() {
        return Ok(Line::Blank);
    }
    let (stamp, rest) = split_timestamp(line);
    let t_s = stamp.map(|s| ts.read(&s)).transpose()?;
    if rest.to_ascii_lowercase().contains("recycle pressure") {
        return Ok(Line::Note(pressure_note(rest, t_s, origin)));
    }
    let kind = line_kind(rest)
        .ok_or("not a known log line (RECYCLE, retry_ok, fetch failed, recycle pressure)")?;
    let t_s = t_s.ok_or("no timestamp")?;
    let mut e = Event::new(t_s, Kind::Known(kind), origin);
    if rest.to_ascii_lowercase().contains("fetch failed") {
        return Ok(Line::Event(Box::new(e)));
    }
    fill_fields(&mut e, rest.split_whitespace().skip(1))?;
    if kind == EventKind::WorkerRecycled && e.instance.is_none() {
        return Err("RECYCLE without an instance".into());
    }
    Ok(Line::Event(Box::new(e)))
}

/// The leading timestamp, if any, and the rest of the line.
fn split_timestamp(line: &str) -> (Option<String>, &str) {
    let mut words = line.splitn(3, char::is_whitespace);
    let first = words.next().unwrap_or("");
    let second = words.next();
    let unbracket = |w: &str| w.trim_start_matches('[').trim_end_matches(']').to_string();
    let one = unbracket(first);
    if let Some(second) = second {
        let two = format!("{one} {}", unbracket(second));
        if TimeBase::detect(&two) == Some(TimeBase::Rfc3339) {
            let rest = words.next().unwrap_or("");
            return (Some(two), rest.trim_start());
        }
    }
    // A bare number under 1e9 is text, not a stamp; every absolute form is one.
    let is_stamp = !matches!(TimeBase::detect(&one), Some(TimeBase::WindowSeconds) | None);
    if is_stamp {
        (Some(one), line[first.len()..].trim_start())
    } else {
        (None, line)
    }
}

/// The event a line's first word (or its Sentry message) names.
fn line_kind(rest: &str) -> Option<EventKind> {
    if rest.to_ascii_lowercase().contains("fetch failed") {
        return Some(EventKind::FetchFailed);
    }
    let word = rest.split_whitespace().next()?;
    match word.to_ascii_lowercase().as_str() {
        "recycle" => Some(EventKind::WorkerRecycled),
        "retry_ok" | "ssr_fetch_retry_ok" => Some(EventKind::RetryOk),
        w => EventKind::from_label(w),
    }
}

/// `inst-B rss=541 lim=498 after=410req` and the like.
fn fill_fields<'a>(e: &mut Event, words: impl Iterator<Item = &'a str>) -> Result<(), String> {
    for word in words {
        match word.split_once('=') {
            Some((k, v)) => set_field(e, k, v)?,
            None if e.instance.is_none() => e.instance = Some(name("instance", word)?),
            None => return Err(format!("unexpected `{word}` (fields are key=value)")),
        }
    }
    Ok(())
}

fn set_field(e: &mut Event, key: &str, value: &str) -> Result<(), String> {
    let num = |units: &[&str]| -> Result<Option<f64>, String> {
        let mut v = value;
        for u in units {
            v = v.strip_suffix(u).unwrap_or(v);
        }
        match v.parse::<f64>() {
            Ok(x) if x.is_finite() => Ok(Some(x)),
            _ => Err(format!("`{key}={value}` is not a number")),
        }
    };
    // A memory figure within `super::MAX_MB`; a size is not negative.
    let mb = |size: bool| -> Result<Option<f64>, String> {
        match num(&["MB", "mb"])? {
            Some(x) if size && x < 0.0 => Err(format!("`{key}={value}` is negative")),
            Some(x) => super::memory_mb(x)
                .map(Some)
                .map_err(|e| format!("`{key}={value}`: {e}")),
            None => Ok(None),
        }
    };
    match key {
        "rss" | "rss_mb" => e.rss_mb = mb(true)?,
        "lim" | "limit" | "limit_mb" => e.limit_mb = mb(true)?,
        "base" | "base_limit_mb" => e.base_limit_mb = mb(true)?,
        "hard" | "hard_limit_mb" => e.hard_limit_mb = mb(true)?,
        "headroom" | "headroom_mb" => e.headroom_mb = mb(false)?,
        "age" | "last_recycle_age_s" => e.last_recycle_age_s = num(&["s"])?,
        "latency_ms" => e.latency_ms = num(&["ms"])?,
        "after" | "requests" => e.requests = Some(request_count(key, value)?),
        "pressure" => {
            let b = parse_bool(value).ok_or(format!("`{key}={value}` is not true or false"))?;
            e.pressure = Some(b);
        }
        "lease" => e.lease = Some(Lease::from_label(&name(key, value)?)),
        "instance" => e.instance = Some(name(key, value)?),
        "worker" => e.worker = Some(name(key, value)?),
        "branch" => e.branch = Some(name(key, value)?),
        "trigger" => e.trigger = Some(name(key, value)?),
        _ => return Err(format!("unknown field `{key}`")),
    }
    Ok(())
}

/// A name a line gives (`what`: its key, or `instance` for the bare word),
/// at most `super::MAX_NAME_BYTES`.
fn name(what: &str, value: &str) -> Result<String, String> {
    super::name_len(value).map_err(|e| format!("`{what}`: {e}"))?;
    Ok(value.to_string())
}

/// `after=858req`'s count: a whole number of 64 bits at most, as the CSV
/// reader's `requests` (`858.0` and `1e3` read too). A count past it is
/// refused, never clamped to the largest count.
fn request_count(key: &str, value: &str) -> Result<u64, String> {
    let v = value.strip_suffix("reqs").unwrap_or(value);
    let v = v.strip_suffix("req").unwrap_or(v);
    if let Ok(n) = v.parse::<u64>() {
        return Ok(n);
    }
    // 2^64: the first whole number past u64::MAX, exact as an f64.
    const PAST_U64: f64 = 18_446_744_073_709_551_616.0;
    match v.parse::<f64>() {
        Ok(x) if x.is_finite() && x >= 0.0 && x.fract() == 0.0 && x < PAST_U64 => Ok(x as u64),
        Ok(x) if x.is_finite() && x >= PAST_U64 => Err(format!(
            "`{key}={value}` is beyond any request count (at most {})",
            u64::MAX
        )),
        _ => Err(format!("`{key}={value}` is not a request count")),
    }
}

/// `recycle pressure: instance headroom 251MB < 350MB`, maybe naming an
/// instance (`inst-B`, `instance=inst-B`).
fn pressure_note(rest: &str, t_s: Option<f64>, origin: Origin) -> PressureNote {
    let words: Vec<&str> = rest.split_whitespace().collect();
    let mb = |w: &str| {
        w.trim_end_matches(|c: char| c.is_ascii_alphabetic() || c == ',')
            .parse::<f64>()
            .ok()
    };
    let after = |key: &str| {
        let i = words.iter().position(|w| w.eq_ignore_ascii_case(key))?;
        mb(words.get(i + 1)?)
    };
    let instance = words.iter().find_map(|w| {
        let w = w.trim_matches(|c: char| "[]():,".contains(c));
        let name = w.strip_prefix("instance=").unwrap_or(w);
        name.starts_with("inst-").then(|| name.to_string())
    });
    PressureNote {
        t_s,
        instance,
        headroom_mb: after("headroom"),
        threshold_mb: after("<"),
        origin,
        attached_to: None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn one(line: &str) -> Result<Line, String> {
        parse_line(line, &mut TsReader::default(), Origin::default())
    }

    fn event(line: &str) -> Event {
        match one(line) {
            Ok(Line::Event(e)) => *e,
            _ => panic!("not an event: {line}"),
        }
    }

    #[test]
    fn recycle_lines_with_and_without_fields() {
        let e = event("20:17:02 RECYCLE inst-A rss=564 lim=507 after=858req");
        assert!(e.is_recycle());
        assert_eq!(e.t_s, 20.0 * 3600.0 + 17.0 * 60.0 + 2.0);
        assert_eq!(e.instance.as_deref(), Some("inst-A"));
        assert_eq!(
            (e.rss_mb, e.limit_mb, e.requests),
            (Some(564.0), Some(507.0), Some(858))
        );
        let most = event("20:17:02 RECYCLE inst-A requests=18446744073709551615");
        assert_eq!(most.requests, Some(u64::MAX));
        assert_eq!(
            event("20:17:02 RECYCLE inst-A after=858.0req").requests,
            Some(858)
        );
        let bare = event("20:21:28 RECYCLE inst-B");
        assert_eq!(bare.instance.as_deref(), Some("inst-B"));
        assert_eq!(bare.rss_mb, None);
        let iso = event("2024-05-01T20:17:02Z RECYCLE inst-A rss=564MB pressure=true");
        assert_eq!(iso.pressure, Some(true));
        let spaced = event("[2024-05-01 20:17:02Z] RECYCLE inst-A");
        assert_eq!(spaced.t_s, iso.t_s);
    }

    #[test]
    fn canary_lines() {
        assert!(event("20:15:38 retry_ok").is(EventKind::RetryOk));
        assert!(event("20:15:38 ssr_fetch_retry_ok").is(EventKind::RetryOk));
        assert!(event("20:31:02 TypeError: fetch failed").is(EventKind::FetchFailed));
        assert!(event("20:31:02 fetch_failed").is(EventKind::FetchFailed));
    }

    #[test]
    fn pressure_lines_with_and_without_a_time() {
        let Ok(Line::Note(n)) = one("recycle pressure: instance headroom 251MB < 350MB") else {
            panic!("not a note");
        };
        assert_eq!(
            (n.t_s, n.headroom_mb, n.threshold_mb),
            (None, Some(251.0), Some(350.0))
        );
        let Ok(Line::Note(n)) =
            one("20:40:00 inst-B recycle pressure: instance headroom 204MB < 350MB")
        else {
            panic!("not a note");
        };
        assert_eq!(n.instance.as_deref(), Some("inst-B"));
        assert!(n.t_s.is_some());
    }

    #[test]
    fn bad_lines_say_why() {
        for (line, why) in [
            ("...", "not a known log line"),
            ("RECYCLE inst-A", "no timestamp"),
            ("20:17:02 RECYCLE", "without an instance"),
            ("20:17:02 RECYCLE inst-A rss=lots", "not a number"),
            ("20:17:02 RECYCLE inst-A colour=red", "unknown field"),
            ("20:17:02 RECYCLE inst-A inst-B", "unexpected"),
            ("25:17:02 RECYCLE inst-A", "not a known log line"),
            (
                "20:17:02 RECYCLE inst-A after=99999999999999999999999req",
                "`after=99999999999999999999999req` is beyond any request count",
            ),
            (
                "20:17:02 RECYCLE inst-A after=1e30req",
                "beyond any request count",
            ),
            ("20:17:02 RECYCLE inst-A after=-1req", "not a request count"),
            (
                "20:17:02 RECYCLE inst-A after=1.5req",
                "not a request count",
            ),
        ] {
            match one(line) {
                Err(e) => assert!(e.contains(why), "{line}: {e}"),
                Ok(_) => panic!("parsed: {line}"),
            }
        }
    }

    #[test]
    fn files_count_unparsed_lines_with_their_numbers() {
        let p = parse(
            "x.log",
            "20:15:38 retry_ok\n\n...\n20:17:02 RECYCLE inst-A\n",
        );
        assert_eq!(p.events.len(), 2);
        assert_eq!(p.source.unparsed_count, 1);
        assert_eq!(p.source.unparsed[0].line, 3);
        assert_eq!(p.source.unparsed[0].text, "...");
        assert!(looks_like("junk\n20:15:38 retry_ok\n"));
        assert!(!looks_like("[policy]\ncooldown_s = 1\n"));
    }
}
