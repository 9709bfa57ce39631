//! Joining imported files into one `Recording`: one time axis, events
//! sorted by `(time, file, line)`, and every pressure log line attached to
//! the recycle it belongs to.
//!
//! The attachment rule (the seeds' vocabulary trap: the log's
//! `recycle pressure: instance headroom 251MB < 350MB` is the metric's
//! `pressure=true`): a pressure line goes to the nearest recycle on the
//! instance it names (any instance when it names none), within
//! `ATTACH_WINDOW_S` when it has a timestamp, else the nearest by line in the
//! same file; ties go to the later recycle, since the recycler logs the
//! reason before it acts. The recycle's `pressure` becomes true (unless a
//! field already says false: that conflict is reported, not overwritten).
//! A line with no recycle to join stays a pressure event of its own.

use super::import::ImportError;
use super::join::join;
use super::recording::{Event, Part, PressureNote, Recording};
use super::series::{KeyIndex, MAX_SAMPLES, Series};
use super::time::Axis;

/// How far in time a pressure log line may be from its recycle.
pub const ATTACH_WINDOW_S: f64 = 60.0;

impl Recording {
    /// One recording from imported files, in the order given.
    pub fn assemble(parts: Vec<Part>) -> Result<Recording, ImportError> {
        refuse_repeats(&parts)?;
        let axis = common_axis(&parts)?;
        let (mut sources, mut events, mut notes) = (Vec::new(), Vec::new(), Vec::new());
        let mut series = Series::default();
        let mut keys = KeyIndex::default();
        for (i, part) in parts.into_iter().enumerate() {
            events.extend(part.events.into_iter().map(|mut e| {
                e.origin.source = i;
                e
            }));
            notes.extend(part.notes.into_iter().map(|mut n| {
                n.origin.source = i;
                n
            }));
            let local: Vec<usize> = (part.series.keys.into_iter())
                .map(|k| keys.get(&mut series, k))
                .collect();
            series
                .samples
                .extend(part.series.samples.into_iter().map(|mut x| {
                    x.key = local[x.key];
                    x.origin.source = i;
                    x
                }));
            if series.samples.len() > MAX_SAMPLES {
                return Err(ImportError::file(
                    &part.source.name,
                    format!("the RSS series pass {MAX_SAMPLES} samples in all: thin them"),
                ));
            }
            sources.push(part.source);
        }
        let by_time = |a: &Event, b: &Event| a.t_s.total_cmp(&b.t_s).then(a.origin.cmp(&b.origin));
        events.sort_by(by_time);
        series
            .samples
            .sort_by(|a, b| a.t_s.total_cmp(&b.t_s).then(a.origin.cmp(&b.origin)));
        let (events, duplicates_dropped) = drop_duplicates(events);
        let (events, agreements) = join(events, &sources);
        let mut events = events;
        for note in &mut notes {
            note.attached_to = nearest_recycle(&events, note);
            if let Some(i) = note.attached_to {
                apply(&mut events[i], note);
            }
        }
        Ok(Recording {
            sources,
            axis,
            events,
            notes,
            series,
            agreements,
            duplicates_dropped,
        })
    }
}

/// The same file given twice would count every event twice: refused.
fn refuse_repeats(parts: &[Part]) -> Result<(), ImportError> {
    for (i, a) in parts.iter().enumerate() {
        if let Some(b) = parts[..i]
            .iter()
            .find(|b| b.digest != 0 && b.digest == a.digest)
        {
            return Err(ImportError::file(
                &a.source.name,
                format!(
                    "the same content as {} (identical files): give each recording once, \
                     or every event would count twice",
                    crate::text::one_line(&b.source.name)
                ),
            ));
        }
    }
    Ok(())
}

/// Drops events identical (all but their line) to an event of an earlier
/// file at the same time: overlapping exports of one instrument.
fn drop_duplicates(events: Vec<Event>) -> (Vec<Event>, usize) {
    let mut keep = vec![true; events.len()];
    let mut start = 0;
    while start < events.len() {
        let end = start + events[start..].partition_point(|e| e.t_s == events[start].t_s);
        for i in start..end {
            let twin = (start..i).any(|j| {
                keep[j]
                    && events[j].origin.source != events[i].origin.source
                    && same_but_origin(&events[j], &events[i])
            });
            keep[i] = !twin;
        }
        start = end;
    }
    let dropped = keep.iter().filter(|k| !**k).count();
    let kept = events
        .into_iter()
        .zip(keep)
        .filter_map(|(e, k)| k.then_some(e))
        .collect();
    (kept, dropped)
}

fn same_but_origin(a: &Event, b: &Event) -> bool {
    let mut b = b.clone();
    b.origin = a.origin;
    *a == b
}

fn common_axis(parts: &[Part]) -> Result<Option<Axis>, ImportError> {
    let mut axis: Option<(Axis, &str)> = None;
    for p in parts {
        let Some(base) = p.source.time_base else {
            continue;
        };
        match axis {
            None => axis = Some((base.axis(), &p.source.name)),
            Some((a, first)) if a != base.axis() => {
                return Err(ImportError::Axes(format!(
                    "cannot join {first} and {}: their timestamps are on different axes \
                     ({first}: {a:?}, {}: {}); replay them separately",
                    p.source.name,
                    p.source.name,
                    base.describe()
                )));
            }
            Some(_) => {}
        }
    }
    Ok(axis.map(|(a, _)| a))
}

fn same_instance(note: &PressureNote, e: &Event) -> bool {
    match &note.instance {
        Some(i) => e.instance.as_ref() == Some(i),
        None => true,
    }
}

/// How far recycle `e` is from pressure line `note`: seconds when the line
/// has a time (`None` beyond `ATTACH_WINDOW_S`), else lines in its file.
fn distance(note: &PressureNote, e: &Event) -> Option<f64> {
    match note.t_s {
        Some(t) => {
            let d = (e.t_s - t).abs();
            (d <= ATTACH_WINDOW_S).then_some(d)
        }
        None => (e.origin.source == note.origin.source)
            .then(|| (e.origin.line as f64 - note.origin.line as f64).abs()),
    }
}

/// The index of the recycle a pressure line belongs to, if any.
fn nearest_recycle(events: &[Event], note: &PressureNote) -> Option<usize> {
    // `<=` keeps the later of two equally near recycles.
    let mut best: Option<(usize, f64)> = None;
    for (i, e) in events.iter().enumerate() {
        if !e.is_recycle() || !same_instance(note, e) {
            continue;
        }
        if let Some(d) = distance(note, e)
            && best.is_none_or(|(_, b)| d <= b)
        {
            best = Some((i, d));
        }
    }
    best.map(|(i, _)| i)
}

fn apply(e: &mut Event, note: &PressureNote) {
    if e.pressure.is_none() {
        e.pressure = Some(true);
        e.pressure_from_log = true;
    }
    if e.headroom_mb.is_none() {
        e.headroom_mb = note.headroom_mb;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::replay::import::logs;

    fn rec(text: &str) -> Recording {
        Recording::assemble(vec![logs::parse("x.log", text)]).unwrap()
    }

    #[test]
    fn a_timed_pressure_line_flags_the_nearest_recycle_on_its_instance() {
        let r = rec("20:00:00 RECYCLE inst-A\n\
                     20:00:20 inst-B recycle pressure: instance headroom 251MB < 350MB\n\
                     20:00:30 RECYCLE inst-B\n\
                     20:10:00 RECYCLE inst-B\n");
        let flagged: Vec<bool> = r.recycles().map(|e| e.pressure_true()).collect();
        assert_eq!(flagged, [false, true, false]);
        let b = r.recycles().nth(1).unwrap();
        assert!(b.pressure_from_log);
        assert_eq!(b.headroom_mb, Some(251.0));
    }

    #[test]
    fn an_untimed_pressure_line_joins_the_nearest_recycle_by_line() {
        let r = rec("20:00:00 RECYCLE inst-A\n\
                     recycle pressure: instance headroom 251MB < 350MB\n\
                     20:00:30 RECYCLE inst-B\n");
        let flagged: Vec<bool> = r.recycles().map(|e| e.pressure_true()).collect();
        assert_eq!(flagged, [false, true], "ties go to the later recycle");
    }

    #[test]
    fn a_pressure_line_far_from_any_recycle_stays_its_own_event() {
        let r = rec(
            "20:00:00 RECYCLE inst-A\n20:30:00 recycle pressure: instance headroom 251MB < 350MB\n",
        );
        assert_eq!(r.notes.len(), 1);
        assert_eq!(r.notes[0].attached_to, None);
        assert!(!r.recycles().any(|e| e.pressure_true()));
    }

    #[test]
    fn a_field_that_says_false_is_not_overwritten() {
        let csv = "ts,event,instance,pressure\n100,worker_recycled,inst-A,false\n";
        let log = "1970-01-01T00:01:40Z recycle pressure: instance headroom 251MB < 350MB\n";
        let e = Recording::assemble(vec![
            crate::replay::import::csv::parse("a.csv", csv).unwrap(),
            logs::parse("b.log", log),
        ])
        .unwrap_err();
        assert!(e.to_string().contains("different axes"), "{e}");
        let csv = "ts,event,instance,pressure\n1000000100,worker_recycled,inst-A,false\n";
        let log = "2001-09-09T01:48:20Z recycle pressure: instance headroom 251MB < 350MB\n";
        let r = Recording::assemble(vec![
            crate::replay::import::csv::parse("a.csv", csv).unwrap(),
            logs::parse("b.log", log),
        ])
        .unwrap();
        assert_eq!(r.notes[0].attached_to, Some(0));
        assert_eq!(r.events[0].pressure, Some(false));
    }

    fn jsonl(name: &str, text: &str) -> Part {
        crate::replay::import::parse(name, text).unwrap()
    }

    #[test]
    fn two_instruments_of_one_recycle_count_once() {
        let rows = "{\"ts\": 1796130598, \"event\": \"worker_recycled\", \"instance\": \"a\", \"worker\": \"101\", \"rss_mb\": 540}\n\
                    {\"ts\": 1796131000, \"event\": \"worker_recycled\", \"instance\": \"a\", \"worker\": \"102\"}\n";
        let mut log = jsonl(
            "gunicorn-a.log",
            "[2026-12-01 13:10:00 +0000] [101] [INFO] Worker exiting (pid: 101)\n\
             [2026-12-01 13:20:00 +0000] [103] [INFO] Worker exiting (pid: 103)\n",
        );
        log.set_instance("a", crate::replay::InstanceFrom::FileName);
        let r = Recording::assemble(vec![jsonl("t.jsonl", rows), log]).unwrap();
        assert_eq!(
            r.recycles().count(),
            3,
            "101 joined; 102 and 103 stay their own"
        );
        assert_eq!(r.events[0].rss_mb, Some(540.0));
        assert_eq!(r.events[0].origin.source, 0, "the richer row is kept");
        let g = &r.agreements[0];
        assert_eq!((g.matched, g.events), (1, 2));
    }

    #[test]
    fn repeats_are_refused_and_duplicate_rows_dropped() {
        let a = "ts,event,instance\n10,retry_ok,a\n20,worker_recycled,a\n";
        let e = Recording::assemble(vec![jsonl("x.csv", a), jsonl("y.csv", a)]).unwrap_err();
        assert!(
            e.to_string()
                .starts_with("y.csv: the same content as x.csv"),
            "{e}"
        );
        let b = "ts,event,instance\n10,retry_ok,a\n30,retry_ok,a\n";
        let r = Recording::assemble(vec![jsonl("x.csv", a), jsonl("z.csv", b)]).unwrap();
        assert_eq!(r.duplicates_dropped, 1);
        assert_eq!(r.events.len(), 3);
    }
}
