//! CSV writers for `events.csv` and `timeline.csv`, streaming to any
//! `io::Write`. Values are plain numbers and identifiers (no quoting needed),
//! so the files load straight into pandas or DuckDB.

use super::rows::{EventRow, Observer, TimelineRow, WorkerSample};
use crate::engine::time::SimTime;
use crate::text::Fixed;
use std::io::{self, Write};

/// Instances beyond this many get no per-instance timeline columns.
pub const TIMELINE_INSTANCE_COLUMNS: usize = 64;

pub struct CsvObserver<E: Write, T: Write> {
    events: E,
    timeline: T,
    base_limit_mb: f64,
    hard_limit_mb: f64,
    header_done: bool,
    error: Option<io::Error>,
}

impl<E: Write, T: Write> CsvObserver<E, T> {
    pub fn new(mut events: E, timeline: T, base_limit_mb: f64, hard_limit_mb: f64) -> Self {
        // The columns are `schema::events::EVENTS_COLUMNS`; `write_event`
        // writes a row's cells in that order.
        let error = writeln!(events, "{}", crate::schema::events::events_header()).err();
        CsvObserver {
            events,
            timeline,
            base_limit_mb,
            hard_limit_mb,
            header_done: false,
            error,
        }
    }

    /// Flushes both writers and returns the first error met, if any.
    pub fn finish(mut self) -> io::Result<(E, T)> {
        if let Some(e) = self.error.take() {
            return Err(e);
        }
        self.events.flush()?;
        self.timeline.flush()?;
        Ok((self.events, self.timeline))
    }

    fn keep(&mut self, r: io::Result<()>) {
        if let (Err(e), None) = (r, &self.error) {
            self.error = Some(e);
        }
    }
}

fn opt<T: std::fmt::Display>(v: Option<T>) -> String {
    v.map(|v| v.to_string()).unwrap_or_default()
}

/// The `hard_limit_mb` cell: whole MB, empty for no hard ceiling (`inf`),
/// which a reader takes as a recording without the field.
struct Ceiling(f64);

impl std::fmt::Display for Ceiling {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if self.0.is_finite() {
            std::fmt::Display::fmt(&Fixed(self.0, 0), f)
        } else {
            Ok(())
        }
    }
}

fn write_event(w: &mut impl Write, r: &EventRow, base: f64, hard: f64) -> io::Result<()> {
    let (base, hard) = (Fixed(base, 0), Ceiling(hard));
    write!(
        w,
        "{},{},inst-{},",
        Fixed(r.t.as_secs_f64(), 3),
        r.kind.label(),
        r.instance
    )?;
    match &r.worker {
        Some(f) => write!(
            w,
            "w{},{},{},{base},{hard},{},",
            f.slot,
            Fixed(f.rss_mb, 1),
            Fixed(f.limit_mb, 0),
            f.requests
        )?,
        None => write!(w, ",,,{base},{hard},,")?,
    }
    match &r.decision {
        Some(d) => write!(
            w,
            "{},{},{},{},",
            d.pressure,
            Fixed(d.headroom_mb, 1),
            d.lease.label(),
            d.branch
        )?,
        None => write!(w, ",,none,,")?,
    }
    let d = r.decision.as_ref();
    writeln!(
        w,
        "{},{},{},{}",
        opt(r.worker.map(|f| f.generation)),
        opt(d.and_then(|d| d.last_recycle_age_s).map(|a| Fixed(a, 1))),
        opt(r.latency_ms.map(|l| Fixed(l, 1))),
        d.and_then(|d| d.cause).map(|c| c.label()).unwrap_or("")
    )
}

fn write_timeline_header(w: &mut impl Write, instances: usize, surge: bool) -> io::Result<()> {
    write!(
        w,
        "t_s,serving,booting,draining,backlog,arrivals,completions,failures,recycles,\
         min_headroom_mb,max_rss_mb"
    )?;
    for i in 0..instances.min(TIMELINE_INSTANCE_COLUMNS) {
        write!(
            w,
            ",inst{i}_usage_mb,inst{i}_headroom_mb,inst{i}_max_rss_mb"
        )?;
    }
    if surge {
        // Last, and only with surges on: the schema without them is unchanged.
        write!(w, ",surge_episode_s")?;
    }
    writeln!(w)
}

fn write_timeline(w: &mut impl Write, r: &TimelineRow) -> io::Result<()> {
    let min_headroom = r.headroom_mb.iter().copied().fold(f64::INFINITY, f64::min);
    let max_rss = r.max_rss_mb.iter().copied().fold(0.0, f64::max);
    write!(
        w,
        "{},{},{},{},{},{},{},{},{},{},{}",
        Fixed(r.t.as_secs_f64(), 0),
        r.serving,
        r.booting,
        r.draining,
        r.backlog,
        r.arrivals,
        r.completions,
        r.failures,
        r.recycles,
        Fixed(min_headroom, 1),
        Fixed(max_rss, 1)
    )?;
    for i in 0..r.usage_mb.len().min(TIMELINE_INSTANCE_COLUMNS) {
        write!(
            w,
            ",{},{},{}",
            Fixed(r.usage_mb[i], 1),
            Fixed(r.headroom_mb[i], 1),
            Fixed(r.max_rss_mb[i], 1)
        )?;
    }
    if let Some(s) = r.surge_episode_s {
        write!(w, ",{}", Fixed(s, 1))?;
    }
    writeln!(w)
}

impl<E: Write, T: Write> Observer for CsvObserver<E, T> {
    fn event(&mut self, row: &EventRow) {
        let r = write_event(
            &mut self.events,
            row,
            self.base_limit_mb,
            self.hard_limit_mb,
        );
        self.keep(r);
    }

    fn timeline(&mut self, row: &TimelineRow) {
        if !self.header_done {
            self.header_done = true;
            let r = write_timeline_header(
                &mut self.timeline,
                row.usage_mb.len(),
                row.surge_episode_s.is_some(),
            );
            self.keep(r);
        }
        let r = write_timeline(&mut self.timeline, row);
        self.keep(r);
    }
}

/// `workers.csv` keeps the first this many worker slots of the fleet (in
/// instance, then slot order): one line per slot is what the timeline can
/// show; a 24 h run of the seeds' 2 x 3 fleet at the 60 s timeline step is
/// 8,640 rows (about 260 KB).
pub const WORKERS_CSV_MAX: usize = 64;

/// The `workers.csv` header.
pub const WORKERS_HEADER: &str = "t_s,instance,worker,generation,rss_mb,limit_mb";

/// Streams every live worker's RSS and own jittered limit at each timeline
/// step to `workers.csv` (`fleetsim run`; the report draws one line per slot).
pub struct WorkersCsv<W: Write> {
    out: W,
    error: Option<io::Error>,
}

impl<W: Write> WorkersCsv<W> {
    pub fn new(mut out: W) -> Self {
        let error = writeln!(out, "{WORKERS_HEADER}").err();
        WorkersCsv { out, error }
    }

    /// Flushes and returns the first error met, if any.
    pub fn finish(mut self) -> io::Result<W> {
        if let Some(e) = self.error.take() {
            return Err(e);
        }
        self.out.flush()?;
        Ok(self.out)
    }
}

impl<W: Write> Observer for WorkersCsv<W> {
    fn workers_wanted(&self) -> usize {
        if self.error.is_none() {
            WORKERS_CSV_MAX
        } else {
            0
        }
    }

    fn workers(&mut self, t: SimTime, workers: &[WorkerSample]) {
        // Beside an observer that wants more, keep our own first slots.
        let kept = workers
            .iter()
            .filter(|w| (w.index as usize) < WORKERS_CSV_MAX);
        for w in kept {
            let r = writeln!(
                self.out,
                "{},inst-{},w{},{},{},{}",
                Fixed(t.as_secs_f64(), 0),
                w.instance,
                w.slot,
                w.generation,
                Fixed(w.rss_mb, 1),
                Fixed(w.limit_mb, 0)
            );
            if let Err(e) = r {
                self.error = Some(e);
                return;
            }
        }
    }
}
