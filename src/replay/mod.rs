//! `fleetsim replay`: read recorded production windows back and compute
//! what the seeds computed by hand.
//!
//! - `import/`: one file per format (CSV with the `events.csv` schema, JSON
//!   Lines, platform log lines, gunicorn/uvicorn/uWSGI/puma_worker_killer/
//!   Passenger logs, Kubernetes pod status and events, RSS series as CSV or
//!   Prometheus JSON), each producing a `Part` of typed events (and
//!   samples); bad CSV/JSON rows are errors naming file and line,
//!   unparseable log lines are counted and kept (logs are noisy; nothing is
//!   dropped unseen).
//! - `assemble.rs`: parts become one `Recording` on one time axis, with the
//!   log's pressure vocabulary joined to the recycle it belongs to and the
//!   same happening seen by two files joined into one (`join.rs`).
//! - `series.rs`: per-worker RSS samples and the lifetimes calibration
//!   reads (`Recording::rss_lifetimes`).
//! - `analyse/`: pure functions over a `Recording` returning serialisable
//!   structs, every statistic computed per limit regime (the seeds' first
//!   rule), bypasses classified from the categorical fields (their second).
//!
//! - `export.rs`: the assembled recording back in the `events.csv` schema
//!   (`recording.csv`, which `fleetsim report` draws).
//! - `calibrate.rs`: fit a scenario's workload to one regime
//!   (`calibrated.toml`); `validate.rs`: simulate the fit over several seeds
//!   and compare it with the recording, figure by figure and by
//!   Kolmogorov-Smirnov on the distributions (`validation.json`).
//!
//! Like the rest of the library: no files, no printing. The CLI owns paths.

pub mod analyse;
mod assemble;
pub mod calibrate;
pub mod export;
pub mod import;
mod join;
pub mod recording;
pub mod render;
pub mod series;
pub mod time;
pub mod validate;
pub mod whatif;

pub use analyse::{Analysis, Knobs, Options, analyse};
pub use assemble::ATTACH_WINDOW_S;
pub use import::ImportError;
pub use join::JOIN_WINDOW_S;
pub use recording::{
    Agreement, Event, Format, InstanceFrom, Kind, Lease, Origin, Part, PressureNote, Recording,
    Source,
};
pub use series::{Observed, RssLifetime, Sample, Series, SeriesKey};
