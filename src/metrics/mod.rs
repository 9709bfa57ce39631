//! What a run measures: streaming counters and sketches (no per-request
//! vectors), the telemetry rows the seeds' recorders emit, the per-minute
//! timeline, and the final summary.

pub mod histogram;
pub mod kills;
pub mod replacement;
pub mod rows;
pub mod summary;
pub mod threshold;
pub mod writers;

pub use histogram::LogHistogram;
pub use kills::{KillCounts, KillPath, KillPaths};
pub use replacement::ReplacementTotals;
pub use rows::{
    EventKind, EventRow, LeaseOutcome, NullObserver, Observer, TimelineRow, WorkerSample,
};
pub use summary::{
    Counter, Counters, Metrics, RecycleRecord, Summary, SurgeTotals, quantile_sorted,
};
pub use writers::{CsvObserver, WORKERS_CSV_MAX, WorkersCsv};
