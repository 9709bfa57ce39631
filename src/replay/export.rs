//! The assembled recording written back in the `events.csv` schema
//! (`recording.csv` in a replay's output directory): every file merged on
//! one time axis, pressure log lines joined to their recycles. `fleetsim
//! report` draws the replay's timeline and histograms from it, and `fleetsim
//! replay` reads it back as it reads any CSV recording.

use super::import::fields::COLUMNS;
use super::recording::{Event, Recording};
use std::io::{self, Write};

fn num(v: Option<f64>) -> String {
    v.map_or(String::new(), |x| x.to_string())
}

/// One event's cells in `COLUMNS` order; absent fields are empty cells.
fn cells(e: &Event) -> [String; COLUMNS.len()] {
    [
        e.t_s.to_string(),
        e.kind.label().to_string(),
        e.instance.clone().unwrap_or_default(),
        e.worker.clone().unwrap_or_default(),
        num(e.rss_mb),
        num(e.limit_mb),
        num(e.base_limit_mb),
        num(e.hard_limit_mb),
        e.requests.map_or(String::new(), |r| r.to_string()),
        e.pressure.map_or(String::new(), |p| p.to_string()),
        num(e.headroom_mb),
        e.lease
            .as_ref()
            .map_or(String::new(), |l| l.label().to_string()),
        e.branch.clone().unwrap_or_default(),
        e.generation.map_or(String::new(), |g| g.to_string()),
        num(e.last_recycle_age_s),
        num(e.latency_ms),
        e.trigger.clone().unwrap_or_default(),
        e.pid.clone().unwrap_or_default(),
    ]
}

/// Writes `rec`'s events, in time order, as CSV with the `events.csv` header.
pub fn write_csv(rec: &Recording, out: impl Write) -> io::Result<()> {
    let mut w = csv::Writer::from_writer(out);
    w.write_record(COLUMNS)?;
    for e in &rec.events {
        w.write_record(cells(e))?;
    }
    w.flush()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::replay::import;

    #[test]
    fn round_trips_through_the_csv_importer() {
        let text = "ts,event,instance,rss_mb,limit_mb,requests,pressure,lease,branch\n\
                    10.5,worker_recycled,inst-0,530.25,500,812,false,acquired,lease_acquired\n\
                    12,retry_ok,inst-1,,,,,,\n";
        let part = import::read("a.csv", text.as_bytes()).unwrap();
        let rec = Recording::assemble(vec![part]).unwrap();
        let mut buf = Vec::new();
        write_csv(&rec, &mut buf).unwrap();
        let again = import::read("b.csv", buf.as_slice()).unwrap();
        let rec2 = Recording::assemble(vec![again]).unwrap();
        assert_eq!(rec.events.len(), rec2.events.len());
        for (a, b) in rec.events.iter().zip(&rec2.events) {
            assert_eq!(cells(a), cells(b));
        }
    }
}
