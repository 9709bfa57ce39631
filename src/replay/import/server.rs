//! The one driver every server-log importer shares: each format's file
//! turns a message into the `Fired` rule that read it (pure, unit-tested per
//! format); this file turns a file's rules into events, with the few facts
//! that need more than one line:
//!
//! - A recycle or kill already recorded for a worker absorbs its later lines
//!   (uvicorn's `Maximum request limit ...` then gunicorn's `Worker exiting`
//!   is one recycle, counted once).
//! - A worker's exit with no reason logged is a recycle of unknown trigger
//!   (an in-app recycler's graceful exit), unless a master signal
//!   (`Handling signal: term`, `hup`, ...) came within `SIGNAL_WINDOW_S`
//!   before it, or the worker crashed (`Exception in worker process`).
//! - A SIGKILL of a worker that the heartbeat timed out is the heartbeat's
//!   kill, not an OOM kill (gunicorn sends SIGABRT, then SIGKILL).
//! - An exit naming a pid adopts the pending recycle that named none
//!   (standalone uvicorn logs `Maximum request limit ...` without a pid, then
//!   `Finished server process [N]`).
//!
//! Every line is counted under its rule in `Source::rules`; lines no rule
//! reads are counted and kept as unparsed, as for platform logs.

use super::prefix::{Envelope, envelope};
use crate::metrics::EventKind;
use crate::replay::recording::{Event, Format, Kind, Origin, Part, Source};
use crate::replay::time::TsReader;
use std::collections::{BTreeMap, BTreeSet};

/// Exits this soon after a master signal are the signal's doing (gunicorn's
/// default `graceful_timeout` is 30 s).
pub const SIGNAL_WINDOW_S: f64 = 35.0;

/// Lines for one worker this close to its recycle or kill belong to it.
pub const SAME_WORKER_S: f64 = 120.0;

/// What a rule read from one message.
#[derive(Clone, Debug, PartialEq)]
pub enum Fired {
    /// A recycle decided: its trigger and what the line says about it.
    Recycle {
        trigger: &'static str,
        worker: Option<String>,
        fields: Fields,
    },
    /// A kill: `EventKind::OomKill`, `EvilKill` or `DrainKilled`.
    Kill {
        kind: EventKind,
        worker: Option<String>,
        fields: Fields,
    },
    /// A SIGKILL that is an OOM kill unless the heartbeat timed the worker
    /// out or an evil reload or drain deadline of the worker sent it.
    SigKill { worker: String },
    /// A request timeout (gunicorn's heartbeat, uWSGI's harakiri): a
    /// `drain_killed` when the worker was draining, else `timeout_kill` (the
    /// simulator's request-timeout kill, `sim/kill.rs`).
    Timeout { worker: Option<String> },
    /// A worker process ended; a recycle when nothing else explains it.
    Exit { worker: String },
    /// A worker crashed (before or after its exit line): its exit is no recycle.
    Crash { worker: Option<String> },
    /// A master signal: the exits that follow are its doing.
    Signal,
    /// A line known to be no event (`Booting worker`, `Listening at`, ...).
    Known,
    /// A rule's line whose figure no recording can hold (a count past 64
    /// bits, an RSS of `inf` MB): kept as unparsed, with why.
    Unreadable(String),
}

/// Values a recycle or kill line states.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Fields {
    pub rss_mb: Option<f64>,
    pub limit_mb: Option<f64>,
    pub requests: Option<u64>,
}

/// A memory figure a line states (`what`: its name there), in MB: a size
/// within `super::MAX_MB`, or why it is none.
pub fn size_mb(what: &str, x: f64) -> Result<f64, String> {
    if !x.is_finite() || x < 0.0 {
        return Err(format!("{what} {x} MB is not a memory size"));
    }
    super::memory_mb(x).map_err(|e| format!("{what} {e}"))
}

/// A format's rule: the rule's name and what it read, or `None`.
pub type Rule = fn(&Envelope) -> Option<(&'static str, Fired)>;

/// The label of a worker that exited with an error (`exited with code 1`).
pub const WORKER_CRASHED: &str = "worker_crashed";

#[derive(Default)]
struct State {
    events: Vec<Event>,
    /// Per worker (None: a line naming none), its open event and its time.
    open: BTreeMap<Option<String>, (usize, f64)>,
    timed_out: BTreeSet<String>,
    crashed: BTreeSet<String>,
    /// Events made from an exit line alone (a later crash line undoes them).
    from_exit: BTreeSet<usize>,
    signal_at: Option<f64>,
}

impl State {
    fn open_for(&self, worker: &Option<String>, t: f64) -> Option<usize> {
        let &(i, at) = self.open.get(worker)?;
        (t - at <= SAME_WORKER_S).then_some(i)
    }

    fn push(&mut self, e: Event, worker: Option<String>) {
        self.open.insert(worker, (self.events.len(), e.t_s));
        self.events.push(e);
    }
}

/// Reads a whole server log with `rule`.
pub fn parse(name: &str, text: &str, format: Format, rule: Rule) -> Part {
    let mut source = Source::new(name, format);
    let mut ts = TsReader::default();
    let mut st = State::default();
    for (i, line) in text.lines().enumerate() {
        if line.trim().is_empty() {
            continue;
        }
        let origin = Origin {
            source: 0,
            line: i + 1,
        };
        let env = envelope(line);
        let Some((label, fired)) = rule(&env) else {
            source.unparsed(i + 1, line, format!("not a known {} line", format.label()));
            continue;
        };
        if let Fired::Unreadable(why) = fired {
            source.unparsed(i + 1, line, format!("{label}: {why}"));
            continue;
        }
        let t = match env.stamp.as_deref().map(|s| ts.read(s)) {
            Some(Ok(t)) => Some(t),
            Some(Err(e)) => {
                source.unparsed(i + 1, line, e);
                continue;
            }
            None => None,
        };
        match (t, &fired) {
            (_, Fired::Known | Fired::Signal) | (Some(_), _) => {}
            (None, _) => {
                let why = format!("{label}: no timestamp, so the event cannot be placed");
                source.unparsed(i + 1, line, why);
                continue;
            }
        }
        source.fired(label.trim_end_matches([' ', ':', '[']));
        if let Some(t) = t {
            apply(&mut st, fired, t, origin);
        }
    }
    source.time_base = ts.base();
    source.events = st.events.len();
    Part::new(source, st.events)
}

fn event(kind: Kind, t: f64, origin: Origin, worker: &Option<String>, f: &Fields) -> Event {
    let mut e = Event::new(t, kind, origin);
    e.worker.clone_from(worker);
    e.rss_mb = f.rss_mb;
    e.limit_mb = f.limit_mb;
    e.requests = f.requests;
    e
}

fn fill(e: &mut Event, f: &Fields) {
    e.rss_mb = e.rss_mb.or(f.rss_mb);
    e.limit_mb = e.limit_mb.or(f.limit_mb);
    e.requests = e.requests.or(f.requests);
}

fn apply(st: &mut State, fired: Fired, t: f64, origin: Origin) {
    match fired {
        Fired::Recycle {
            trigger,
            worker,
            fields,
        } => match st.open_for(&worker, t) {
            Some(i) if st.events[i].is_recycle() => {
                fill(&mut st.events[i], &fields);
                if st.events[i].trigger.is_none() {
                    st.events[i].trigger = Some(trigger.to_string());
                }
            }
            _ => {
                let mut e = event(
                    Kind::Known(EventKind::WorkerRecycled),
                    t,
                    origin,
                    &worker,
                    &fields,
                );
                e.trigger = Some(trigger.to_string());
                st.push(e, worker);
            }
        },
        Fired::Kill {
            kind,
            worker,
            fields,
        } => kill(st, kind, worker, &fields, t, origin),
        Fired::SigKill { worker } => {
            let w = Some(worker);
            // An evil reload's or a drain deadline's own SIGKILL is that kill.
            let explained = st.open_for(&w, t).is_some_and(|i| {
                let e = &st.events[i];
                e.is(EventKind::EvilKill) || e.is(EventKind::DrainKilled)
            });
            let timed_out = w.as_ref().is_some_and(|w| st.timed_out.contains(w));
            if !explained && !timed_out {
                kill(st, EventKind::OomKill, w, &Fields::default(), t, origin);
            }
        }
        Fired::Timeout { worker } => {
            let draining = st
                .open_for(&worker, t)
                .is_some_and(|i| st.events[i].is_recycle());
            let kind = if draining {
                Kind::Known(EventKind::DrainKilled)
            } else {
                Kind::Known(EventKind::TimeoutKill)
            };
            if let Some(w) = &worker {
                st.timed_out.insert(w.clone());
            }
            let e = event(kind, t, origin, &worker, &Fields::default());
            st.push(e, worker);
        }
        Fired::Exit { worker } => exit(st, worker, t, origin),
        Fired::Crash { worker } => {
            if let Some(i) = st.open_for(&worker, t)
                && st.from_exit.contains(&i)
            {
                st.events[i].kind = Kind::Other(WORKER_CRASHED.to_string());
            }
            st.crashed.extend(worker);
        }
        Fired::Signal => st.signal_at = Some(t),
        Fired::Known | Fired::Unreadable(_) => {}
    }
}

fn kill(
    st: &mut State,
    kind: EventKind,
    worker: Option<String>,
    f: &Fields,
    t: f64,
    origin: Origin,
) {
    if let Some(i) = st.open_for(&worker, t)
        && st.events[i].is(kind)
    {
        fill(&mut st.events[i], f);
        return;
    }
    let e = event(Kind::Known(kind), t, origin, &worker, f);
    st.push(e, worker);
}

fn exit(st: &mut State, worker: String, t: f64, origin: Origin) {
    let w = Some(worker.clone());
    if st.open_for(&w, t).is_some() || st.timed_out.contains(&worker) {
        return;
    }
    if let Some(i) = st.open_for(&None, t) {
        // The pending recycle that named no worker was this one's.
        st.events[i].worker = Some(worker);
        st.open.remove(&None);
        st.open.insert(w, (i, t));
        return;
    }
    let signalled = st.signal_at.is_some_and(|s| t - s <= SIGNAL_WINDOW_S);
    if signalled || st.crashed.contains(&worker) {
        return;
    }
    let mut e = Event::new(t, Kind::Known(EventKind::WorkerRecycled), origin);
    e.worker = w.clone();
    st.from_exit.insert(st.events.len());
    st.push(e, w);
}
