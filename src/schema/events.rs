//! `events.csv` (what `fleetsim run` writes) and `recording.csv` (what
//! `fleetsim replay` writes back): one list of columns, read by the run's
//! writer (`metrics::writers`), the importers (`replay::import::fields`)
//! and the replay's exporter (`replay::export`).

/// `events.csv`'s columns, in order: the field reports' recycler telemetry
/// (`ts` to `lease`), then what the simulator adds.
pub const EVENTS_COLUMNS: [&str; 17] = [
    "ts",
    "event",
    "instance",
    "worker",
    "rss_mb",
    "limit_mb",
    "base_limit_mb",
    "hard_limit_mb",
    "requests",
    "pressure",
    "headroom_mb",
    "lease",
    "branch",
    "generation",
    "last_recycle_age_s",
    "latency_ms",
    "trigger",
];

/// `recording.csv`'s columns: `events.csv`'s, then the process id a server
/// log names. The importers read exactly these (others are ignored).
pub const RECORDING_COLUMNS: [&str; 18] = with_pid();

const fn with_pid() -> [&'static str; 18] {
    let mut out = [""; 18];
    let mut i = 0;
    while i < EVENTS_COLUMNS.len() {
        out[i] = EVENTS_COLUMNS[i];
        i += 1;
    }
    out[17] = "pid";
    out
}

/// The header line of `events.csv` (no newline).
pub fn events_header() -> String {
    EVENTS_COLUMNS.join(",")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_recording_extends_the_events_file() {
        assert_eq!(&RECORDING_COLUMNS[..17], &EVENTS_COLUMNS[..]);
        assert_eq!(RECORDING_COLUMNS[17], "pid");
        assert!(events_header().starts_with("ts,event,instance,worker,rss_mb,"));
    }
}
