//! The one typed form every importer produces: a `Recording` of events on
//! one time axis, with where each came from, and the log lines that say
//! "pressure" in their own vocabulary.

use super::series::Series;
use super::time::{Axis, TimeBase};
use crate::metrics::{EventKind, LeaseOutcome};
use serde::Serialize;
use std::collections::BTreeMap;

/// What happened. The simulator's labels, plus any other label a recording
/// carries (kept and counted, never dropped).
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Kind {
    Known(EventKind),
    Other(String),
}

impl Kind {
    pub fn from_label(label: &str) -> Kind {
        match EventKind::from_label(label) {
            Some(k) => Kind::Known(k),
            None => Kind::Other(label.to_string()),
        }
    }

    pub fn label(&self) -> &str {
        match self {
            Kind::Known(k) => k.label(),
            Kind::Other(s) => s,
        }
    }

    pub fn is(&self, k: EventKind) -> bool {
        *self == Kind::Known(k)
    }

    /// A client canary: what users feel (`retry_ok`, `fetch_failed`).
    pub fn is_canary(&self) -> bool {
        self.is(EventKind::RetryOk) || self.is(EventKind::FetchFailed)
    }
}

/// The `lease` column. `bypassed` without a branch is what some emitters
/// write; any other label is kept as written.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Lease {
    Known(LeaseOutcome),
    /// A bypass whose branch the emitter did not name.
    Bypassed,
    Other(String),
}

impl Lease {
    pub fn from_label(label: &str) -> Lease {
        match LeaseOutcome::from_label(label) {
            Some(l) => Lease::Known(l),
            None if label == "bypassed" => Lease::Bypassed,
            None => Lease::Other(label.to_string()),
        }
    }

    pub fn label(&self) -> &str {
        match self {
            Lease::Known(l) => l.label(),
            Lease::Bypassed => "bypassed",
            Lease::Other(s) => s,
        }
    }

    pub fn is_bypass(&self) -> bool {
        matches!(
            self,
            Lease::Known(LeaseOutcome::BypassedPressure | LeaseOutcome::BypassedHardCeiling)
                | Lease::Bypassed
        )
    }
}

/// Where a row came from: the file (index into `Recording::sources`) and
/// its 1-based line.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Serialize)]
pub struct Origin {
    pub source: usize,
    pub line: usize,
}

/// One recorded event: the seeds' schema, every field optional but the
/// time and the kind.
#[derive(Clone, Debug, PartialEq)]
pub struct Event {
    /// On the recording's axis (see `time.rs`).
    pub t_s: f64,
    pub kind: Kind,
    pub instance: Option<String>,
    pub worker: Option<String>,
    pub rss_mb: Option<f64>,
    pub limit_mb: Option<f64>,
    pub base_limit_mb: Option<f64>,
    pub hard_limit_mb: Option<f64>,
    pub requests: Option<u64>,
    pub pressure: Option<bool>,
    pub headroom_mb: Option<f64>,
    pub lease: Option<Lease>,
    pub branch: Option<String>,
    pub generation: Option<u32>,
    pub last_recycle_age_s: Option<f64>,
    pub latency_ms: Option<f64>,
    pub trigger: Option<String>,
    /// The worker's process id, when the row names one besides its
    /// `worker` (a slot id): server logs name workers by pid, so this is
    /// what lets them join the row.
    pub pid: Option<String>,
    /// `pressure` was set by a pressure log line, not a field.
    pub pressure_from_log: bool,
    pub origin: Origin,
}

impl Event {
    /// An event with every optional field empty.
    pub fn new(t_s: f64, kind: Kind, origin: Origin) -> Event {
        Event {
            t_s,
            kind,
            instance: None,
            worker: None,
            rss_mb: None,
            limit_mb: None,
            base_limit_mb: None,
            hard_limit_mb: None,
            requests: None,
            pressure: None,
            headroom_mb: None,
            lease: None,
            branch: None,
            generation: None,
            last_recycle_age_s: None,
            latency_ms: None,
            trigger: None,
            pid: None,
            pressure_from_log: false,
            origin,
        }
    }

    pub fn is(&self, k: EventKind) -> bool {
        self.kind.is(k)
    }

    pub fn is_recycle(&self) -> bool {
        self.is(EventKind::WorkerRecycled)
    }

    pub fn pressure_true(&self) -> bool {
        self.pressure == Some(true)
    }

    /// RSS over the worker's own (jittered) limit.
    pub fn margin_mb(&self) -> Option<f64> {
        Some(self.rss_mb? - self.limit_mb?)
    }

    /// RSS over the hard ceiling (negative below it).
    pub fn overshoot_mb(&self) -> Option<f64> {
        Some(self.rss_mb? - self.hard_limit_mb?)
    }
}

/// A platform log line such as `recycle pressure: instance headroom 251MB
/// < 350MB`: the same event as a recycle row's `pressure=true`, in another
/// vocabulary. `Recording::assemble` attaches it to its recycle.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct PressureNote {
    pub t_s: Option<f64>,
    pub instance: Option<String>,
    pub headroom_mb: Option<f64>,
    /// The threshold the line states (`< 350MB`): the deployed `min_headroom_mb`.
    pub threshold_mb: Option<f64>,
    pub origin: Origin,
    /// Index into `Recording::events` of the recycle it was attached to.
    pub attached_to: Option<usize>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Format {
    Csv,
    Jsonl,
    Log,
    /// gunicorn's error log (and uvicorn's lines through UvicornWorker).
    Gunicorn,
    /// uvicorn's own log format (`INFO:     ...`).
    Uvicorn,
    Uwsgi,
    PumaWorkerKiller,
    Passenger,
    /// `kubectl get pod(s) -o json`, `kubectl get events -o json`, `kubectl describe pod`.
    Kubernetes,
    /// `ts,instance,worker,rss_mb[,requests]`.
    RssCsv,
    /// A CSV of recycles with no `event` column (`ts,rss_mb,limit_mb,...`):
    /// one `worker_recycled` per row, as a platform's recycle log exports.
    RecycleCsv,
    /// A Prometheus `query_range` JSON response.
    Prometheus,
}

impl Format {
    pub fn label(self) -> &'static str {
        match self {
            Format::Csv => "CSV",
            Format::Jsonl => "JSON Lines",
            Format::Log => "platform log lines",
            Format::Gunicorn => "gunicorn error log",
            Format::Uvicorn => "uvicorn log",
            Format::Uwsgi => "uWSGI log",
            Format::PumaWorkerKiller => "puma_worker_killer log",
            Format::Passenger => "Passenger log",
            Format::Kubernetes => "Kubernetes pod status / events",
            Format::RssCsv => "RSS series CSV",
            Format::RecycleCsv => "recycle rows CSV (no `event` column: one worker_recycled a row)",
            Format::Prometheus => "Prometheus query_range JSON",
        }
    }

    /// A server's own log: one file is one instance, which the lines do not name.
    pub fn is_server_log(self) -> bool {
        matches!(
            self,
            Format::Gunicorn
                | Format::Uvicorn
                | Format::Uwsgi
                | Format::PumaWorkerKiller
                | Format::Passenger
        )
    }
}

/// Where a source's instance name came from.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum InstanceFrom {
    /// `--instance FILE=NAME`.
    Flag,
    /// The file name (`gunicorn-inst-A.log` -> `inst-A`).
    FileName,
}

/// A line the importer could not read (log files only; a bad CSV or JSON
/// row is an error).
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Unparsed {
    pub line: usize,
    pub text: String,
    pub reason: String,
}

/// Unparsed lines kept verbatim per file; the rest are only counted.
pub const UNPARSED_KEPT: usize = 10;

/// One input file.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Source {
    pub name: String,
    pub format: Format,
    /// `None` when the file holds no timestamp at all.
    pub time_base: Option<TimeBase>,
    pub events: usize,
    pub pressure_notes: usize,
    pub unparsed_count: usize,
    /// The first `UNPARSED_KEPT` unparsed lines.
    pub unparsed: Vec<Unparsed>,
    /// Lines by the rule that read them (server logs: events and lines
    /// known to be no event, such as `Listening at`), sorted by rule.
    pub rules: BTreeMap<String, usize>,
    /// RSS samples read (series formats).
    pub samples: usize,
    /// The instance given to this file's events that name none.
    pub instance: Option<String>,
    pub instance_from: Option<InstanceFrom>,
}

impl Source {
    pub fn new(name: &str, format: Format) -> Source {
        Source {
            name: name.to_string(),
            format,
            time_base: None,
            events: 0,
            pressure_notes: 0,
            unparsed_count: 0,
            unparsed: Vec::new(),
            rules: BTreeMap::new(),
            samples: 0,
            instance: None,
            instance_from: None,
        }
    }

    /// Counts a line read by `rule`.
    pub fn fired(&mut self, rule: &str) {
        *self.rules.entry(rule.to_string()).or_insert(0) += 1;
    }

    pub fn unparsed(&mut self, line: usize, text: &str, reason: String) {
        self.unparsed_count += 1;
        if self.unparsed.len() < UNPARSED_KEPT {
            self.unparsed.push(Unparsed {
                line,
                text: text.chars().take(200).collect(),
                // (A reason quotes the field it could not read: cut too.)
                reason: crate::text::cut(&reason, 300).into_owned(),
            });
        }
    }
}

/// What one importer read from one file.
#[derive(Clone, Debug, PartialEq)]
pub struct Part {
    pub source: Source,
    pub events: Vec<Event>,
    pub notes: Vec<PressureNote>,
    pub series: Series,
    /// A digest of the file's bytes (`assemble` refuses the same file twice).
    pub digest: u64,
}

impl Part {
    pub fn new(source: Source, events: Vec<Event>) -> Part {
        Part {
            source,
            events,
            notes: Vec::new(),
            series: Series::default(),
            digest: 0,
        }
    }

    /// Names the instance of every event and sample that names none.
    pub fn set_instance(&mut self, name: &str, from: InstanceFrom) {
        for e in self.events.iter_mut().filter(|e| e.instance.is_none()) {
            e.instance = Some(name.to_string());
        }
        for n in self.notes.iter_mut().filter(|n| n.instance.is_none()) {
            n.instance = Some(name.to_string());
        }
        for k in self.series.keys.iter_mut().filter(|k| k.instance.is_none()) {
            k.instance = Some(name.to_string());
        }
        self.source.instance = Some(name.to_string());
        self.source.instance_from = Some(from);
    }
}

/// How one pair of files' records of the same happenings agreed
/// (`assemble`'s join).
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Agreement {
    /// The file whose rows were matched against `with`'s.
    pub source: String,
    pub with: String,
    pub kind: String,
    /// `source`'s events of `kind` on instances `with` also records.
    pub events: usize,
    pub matched: usize,
}

/// Recordings from several files on one axis, sorted by time.
#[derive(Clone, Debug, PartialEq)]
pub struct Recording {
    pub sources: Vec<Source>,
    /// `None` only when no file held a timestamp.
    pub axis: Option<Axis>,
    /// Sorted by `(t_s, origin)`.
    pub events: Vec<Event>,
    pub notes: Vec<PressureNote>,
    /// Per-worker RSS samples, sorted by `(t_s, origin)`.
    pub series: Series,
    /// One row per pair of files with events of one kind joined.
    pub agreements: Vec<Agreement>,
    /// Rows identical to a row of an earlier file, dropped (overlapping exports).
    pub duplicates_dropped: usize,
}

impl Recording {
    pub fn recycles(&self) -> impl Iterator<Item = &Event> {
        self.events.iter().filter(|e| e.is_recycle())
    }

    pub fn count(&self, k: EventKind) -> usize {
        self.events.iter().filter(|e| e.is(k)).count()
    }
}
