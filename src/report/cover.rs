//! Whether a run's files hold the whole run: a CSV cut at a line boundary
//! (a copy stopped between rows, a full disk) has no broken row to tell it
//! by, so its length is checked against summary.json, which is written
//! last (`timeline_covers`, `events_cover`).

use super::ReportError;
use super::data::{Event, Mark, Ordered, Timeline, csv_err};

/// Whether a run's timeline reaches the end of its window (summary.json's
/// `duration_h`) within two of its steps: one cut at a line boundary has
/// no broken row to tell it by, and drew a day as its first hour.
pub fn timeline_covers(tl: &Timeline, summary: &Ordered) -> Result<(), ReportError> {
    let hours = summary
        .0
        .iter()
        .find(|(k, _)| k == "duration_h")
        .and_then(|(_, v)| v.as_f64());
    let (Some(hours), [first, second, .., last]) = (hours, tl.t_s.as_slice()) else {
        return Ok(());
    };
    let (step, window) = (second - first, hours * 3600.0);
    if step > 0.0 && last + 2.0 * step < window {
        return Err(csv_err(
            "timeline.csv",
            format!(
                "its rows end at {last} s of the run's {window} s (summary.json's duration_h): \
                 the file was cut short"
            ),
        ));
    }
    Ok(())
}

/// A kind of events.csv row, the summary key that counts it, and its mark.
type Counted = (&'static str, &'static str, fn(&Mark) -> bool);

/// Whether a run's events.csv holds every event its summary.json counts:
/// recycles, holds, OOM and evil kills and the client's canary events are
/// each one row (`metrics::rows`). A file cut at a line boundary has no
/// broken row to tell it by, and drew its first hours as the whole day.
pub fn events_cover(
    events: &[Event],
    untimed: &[Mark],
    summary: &Ordered,
) -> Result<(), ReportError> {
    let count = |key: &str| -> Option<u64> {
        let mut n = None;
        for (k, v) in &summary.0 {
            let hit = if key == "holds_" {
                k.starts_with(key)
            } else {
                k == key
            };
            if hit {
                n = Some(n.unwrap_or(0) + v.as_u64()?);
            }
        }
        n
    };
    let kinds: [Counted; 6] = [
        ("worker_recycled", "recycles", |m| {
            matches!(m, Mark::Recycled(_))
        }),
        ("recycle_held", "holds_", |m| *m == Mark::Held),
        ("oom_kill", "oom_kills", |m| *m == Mark::OomKill),
        ("evil_kill", "evil_kills", |m| *m == Mark::EvilKill),
        ("retry_ok", "retry_ok", |m| *m == Mark::RetryOk),
        ("fetch_failed", "fetch_failed", |m| *m == Mark::FetchFailed),
    ];
    for (event, key, is) in kinds {
        let Some(want) = count(key) else { continue };
        let marks = events.iter().map(|e| &e.mark).chain(untimed);
        let rows = marks.filter(|m| is(m)).count() as u64;
        if rows != want {
            let key = if key == "holds_" {
                "holds_* (summed)"
            } else {
                key
            };
            let why = if rows < want {
                "the file was cut short"
            } else {
                "the two files are not from the same run"
            };
            return Err(csv_err(
                "events.csv",
                format!("it has {rows} {event} rows where summary.json's {key} is {want}: {why}"),
            ));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::data::{parse_events, parse_run_events, parse_summary, parse_timeline};

    #[test]
    fn a_timeline_cut_at_a_line_is_refused_against_the_window() {
        let rows: String = (1..=60).map(|m| format!("{},6,0,0\n", m * 60)).collect();
        let tl =
            parse_timeline(format!("t_s,serving,booting,draining\n{rows}").as_bytes()).unwrap();
        let summary =
            |h: f64| parse_summary(format!("{{\"duration_h\": {h}}}").as_bytes()).unwrap();
        assert!(timeline_covers(&tl, &summary(1.0)).is_ok());
        let e = timeline_covers(&tl, &summary(24.0))
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("timeline.csv") && e.contains("end at 3600 s of the run's 86400 s"),
            "{e}"
        );
    }

    #[test]
    fn events_cut_at_a_line_are_refused_against_the_summary() {
        let csv = b"ts,event,instance\n1,worker_recycled,inst-0\n2,recycle_held,inst-1\n\
3,worker_recycled,inst-1\n4,retry_ok,inst-0\n";
        let ev = parse_events(csv).unwrap();
        let summary = |json: &str| parse_summary(json.as_bytes()).unwrap();
        let whole = r#"{"recycles": 2, "holds_cooldown": 1, "holds_lease_held": 0,
            "oom_kills": 0, "retry_ok": 1, "fetch_failed": 0}"#;
        assert!(events_cover(&ev, &[], &summary(whole)).is_ok());
        // No counts (another writer's summary): nothing to check against.
        assert!(events_cover(&ev, &[], &summary("{}")).is_ok());
        let cut = events_cover(&ev[..2], &[], &summary(whole))
            .unwrap_err()
            .to_string();
        assert!(
            cut.contains("events.csv")
                && cut.contains("1 worker_recycled rows where summary.json's recycles is 2")
                && cut.contains("cut short"),
            "{cut}"
        );
        // A row whose time is not a number is not drawn, but it is there.
        let nan = b"ts,event,instance\n1,worker_recycled,inst-0\nNaN,recycle_held,inst-1\n\
3,worker_recycled,inst-1\n4,retry_ok,inst-0\n";
        let (drawn, untimed) = parse_run_events(nan).unwrap();
        assert_eq!(
            (drawn.len(), untimed.as_slice()),
            (3, [Mark::Held].as_slice())
        );
        assert!(events_cover(&drawn, &untimed, &summary(whole)).is_ok());
        assert!(events_cover(&drawn, &[], &summary(whole)).is_err());
        let held = events_cover(
            &ev,
            &[],
            &summary(&whole.replace("\"holds_lease_held\": 0", "\"holds_lease_held\": 3")),
        )
        .unwrap_err()
        .to_string();
        assert!(
            held.contains("1 recycle_held rows where summary.json's holds_* (summed) is 4"),
            "{held}"
        );
        let other = events_cover(
            &ev,
            &[],
            &summary(&whole.replace("\"retry_ok\": 1", "\"retry_ok\": 0")),
        )
        .unwrap_err()
        .to_string();
        assert!(other.contains("not from the same run"), "{other}");
    }
}
