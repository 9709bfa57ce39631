//! What the report reads, parsed from bytes into plain structs. Columns are
//! found by header name, so extra columns (or a reordering) never break a
//! report; a missing column leaves its field empty.

use super::ReportError;
use serde::Deserialize;
use serde::de::{Deserializer, MapAccess, Visitor};
use std::fmt;

pub use super::path::{LeaseClass, Trigger};

/// What happened, as the charts tell it apart.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Mark {
    Recycled(LeaseClass),
    Held,
    OomKill,
    EvilKill,
    DrainKilled,
    RetryOk,
    FetchFailed,
    Other,
}

impl Mark {
    /// A row's mark from its `event`, `lease`, `branch` and `pressure` cells.
    pub fn of(event: &str, lease: &str, branch: &str, pressure: &str) -> Mark {
        match event {
            "worker_recycled" => Mark::Recycled(LeaseClass::of(lease, branch, pressure)),
            "recycle_held" => Mark::Held,
            "oom_kill" => Mark::OomKill,
            "evil_kill" => Mark::EvilKill,
            "drain_killed" => Mark::DrainKilled,
            "retry_ok" => Mark::RetryOk,
            "fetch_failed" => Mark::FetchFailed,
            _ => Mark::Other,
        }
    }
}

/// One row of events.csv.
#[derive(Clone, Debug, PartialEq)]
pub struct Event {
    pub t_s: f64,
    pub mark: Mark,
    /// `inst-3` -> 3; rows without a parsable instance get 0.
    pub instance: u32,
    pub worker: String,
    pub rss_mb: Option<f64>,
    pub limit_mb: Option<f64>,
    pub hard_limit_mb: Option<f64>,
    pub requests: Option<f64>,
    pub branch: String,
    /// The `pressure` flag (instance headroom under the threshold), as recorded.
    pub pressure: Option<bool>,
    /// The `trigger` column (`rss_limit`, `max_requests`...; empty: not recorded).
    pub trigger: String,
}

pub(super) fn csv_err(file: &str, e: impl fmt::Display) -> ReportError {
    ReportError::Parse {
        file: file.to_string(),
        message: e.to_string(),
    }
}

/// A CSV file as a header and string rows.
pub struct Table {
    pub header: Vec<String>,
    pub rows: Vec<Vec<String>>,
}

impl Table {
    pub fn parse(file: &str, bytes: &[u8]) -> Result<Table, ReportError> {
        // Every fleetsim writer ends each row with a newline: a file that
        // does not was cut short (a full disk, a copy stopped), and its
        // last row would be drawn from part of its fields.
        if !bytes.is_empty() && !bytes.ends_with(b"\n") {
            let line = bytes.iter().filter(|&&b| b == b'\n').count() + 1;
            return Err(csv_err(
                file,
                format!("line {line} ends mid-row: the file was cut short"),
            ));
        }
        let mut r = csv::ReaderBuilder::new().flexible(true).from_reader(bytes);
        let header = r
            .headers()
            .map_err(|e| csv_err(file, e))?
            .iter()
            .map(str::to_string)
            .collect();
        let mut rows = Vec::new();
        for rec in r.records() {
            let rec = rec.map_err(|e| csv_err(file, e))?;
            rows.push(rec.iter().map(str::to_string).collect());
        }
        Ok(Table { header, rows })
    }

    pub fn col(&self, name: &str) -> Option<usize> {
        self.header.iter().position(|h| h == name)
    }

    pub fn get<'a>(&self, row: &'a [String], col: Option<usize>) -> &'a str {
        col.and_then(|c| row.get(c)).map_or("", String::as_str)
    }

    pub fn num(&self, row: &[String], col: Option<usize>) -> Option<f64> {
        self.get(row, col)
            .trim()
            .parse::<f64>()
            .ok()
            .filter(|v| v.is_finite())
    }
}

pub fn parse_events(bytes: &[u8]) -> Result<Vec<Event>, ReportError> {
    Ok(parse_run_events(bytes)?.0)
}

/// A run's events and the marks of its rows with no finite time (not
/// drawn; `events_cover` still counts them, and the report says so).
pub fn parse_run_events(bytes: &[u8]) -> Result<(Vec<Event>, Vec<Mark>), ReportError> {
    let (rows, untimed) = parse_rows("events.csv", bytes)?;
    Ok((rows.into_iter().map(|(e, _)| e).collect(), untimed))
}

/// Events with the instance labels as written (`inst-A`, `web-3`...):
/// `inst-N` labels keep N as their index; any other labels are numbered in
/// sorted order; events naming no instance get one more lane, `(none)`.
/// Returns the events and the label of each index.
pub fn parse_events_labelled(
    file: &str,
    bytes: &[u8],
) -> Result<(Vec<Event>, Vec<String>), ReportError> {
    let (rows, _) = parse_rows(file, bytes)?;
    let named: std::collections::BTreeSet<&str> = rows
        .iter()
        .map(|(_, l)| l.as_str())
        .filter(|l| !l.is_empty())
        .collect();
    let numbered: Option<Vec<u32>> = named
        .iter()
        .map(|l| l.strip_prefix("inst-")?.parse::<u32>().ok())
        .collect();
    let mut labels: Vec<String> = match &numbered {
        Some(n) => {
            let top = n.iter().copied().max().map_or(0, |m| m as usize + 1);
            (0..top).map(|i| format!("inst-{i}")).collect()
        }
        None => named.iter().map(|l| l.to_string()).collect(),
    };
    let none = labels.len() as u32;
    if rows.iter().any(|(_, l)| l.is_empty()) {
        labels.push("(none)".into());
    }
    let events = rows
        .into_iter()
        .map(|(mut e, l)| {
            e.instance = if l.is_empty() {
                none
            } else if numbered.is_some() {
                e.instance
            } else {
                labels.iter().position(|x| *x == l).unwrap_or(0) as u32
            };
            e
        })
        .collect();
    Ok((events, labels))
}

/// Events with their instance label as written, and the marks of the rows
/// whose time is not a finite number (left out).
type Rows = (Vec<(Event, String)>, Vec<Mark>);

fn parse_rows(file: &str, bytes: &[u8]) -> Result<Rows, ReportError> {
    let t = Table::parse(file, bytes)?;
    let c = |n: &str| t.col(n);
    let (ts, ev, inst, worker) = (c("ts"), c("event"), c("instance"), c("worker"));
    let (rss, limit, hard, req) = (
        c("rss_mb"),
        c("limit_mb"),
        c("hard_limit_mb"),
        c("requests"),
    );
    let (lease, branch) = (c("lease"), c("branch"));
    let (pressure, trigger) = (c("pressure"), c("trigger"));
    if ts.is_none() || ev.is_none() {
        return Err(csv_err(file, "no `ts` or `event` column"));
    }
    let mut out = Vec::with_capacity(t.rows.len());
    let mut untimed = Vec::new();
    for row in &t.rows {
        let Some(t_s) = t.num(row, ts) else {
            untimed.push(Mark::of(t.get(row, ev), "", "", ""));
            continue;
        };
        let instance = t.get(row, inst).trim();
        let event = Event {
            t_s,
            mark: Mark::of(
                t.get(row, ev),
                t.get(row, lease),
                t.get(row, branch),
                t.get(row, pressure),
            ),
            instance: instance
                .trim_start_matches("inst-")
                .parse()
                .unwrap_or_default(),
            worker: t.get(row, worker).to_string(),
            rss_mb: t.num(row, rss),
            limit_mb: t.num(row, limit),
            hard_limit_mb: t.num(row, hard),
            requests: t.num(row, req),
            branch: t.get(row, branch).to_string(),
            pressure: crate::replay::import::fields::parse_bool(t.get(row, pressure).trim()),
            trigger: t.get(row, trigger).trim().to_string(),
        };
        out.push((event, instance.to_string()));
    }
    Ok((out, untimed))
}

/// One instance's columns of timeline.csv.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct InstanceSeries {
    pub usage_mb: Vec<f64>,
    pub headroom_mb: Vec<f64>,
    pub max_rss_mb: Vec<f64>,
}

/// timeline.csv, column by column (missing cells read as NaN).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Timeline {
    pub t_s: Vec<f64>,
    pub serving: Vec<f64>,
    pub booting: Vec<f64>,
    pub draining: Vec<f64>,
    pub instances: Vec<InstanceSeries>,
    /// Episode-seconds of memory surges in each row's step (the
    /// `surge_episode_s` column, written only with surges on; empty without).
    pub surge_s: Vec<f64>,
    /// workers.csv, one series per worker slot (empty without the file).
    pub workers: Vec<WorkerSeries>,
}

/// One worker slot's rows of workers.csv, across its generations.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct WorkerSeries {
    pub instance: u32,
    pub worker: String,
    pub t_s: Vec<f64>,
    pub rss_mb: Vec<f64>,
    pub limit_mb: Vec<f64>,
    pub generation: Vec<f64>,
}

/// workers.csv grouped by slot, in (instance, worker) order.
pub fn parse_workers(bytes: &[u8]) -> Result<Vec<WorkerSeries>, ReportError> {
    let t = Table::parse("workers.csv", bytes)?;
    let c = |n: &str| t.col(n);
    let (ts, inst, worker) = (c("t_s"), c("instance"), c("worker"));
    let (rss, limit, generation) = (c("rss_mb"), c("limit_mb"), c("generation"));
    if ts.is_none() || inst.is_none() || rss.is_none() {
        return Err(csv_err(
            "workers.csv",
            "no `t_s`, `instance` or `rss_mb` column",
        ));
    }
    let mut by: std::collections::BTreeMap<(u32, String), WorkerSeries> = Default::default();
    for row in &t.rows {
        let (Some(t_s), Some(r)) = (t.num(row, ts), t.num(row, rss)) else {
            continue;
        };
        let label = t.get(row, inst).trim();
        let i: u32 = label
            .trim_start_matches("inst-")
            .parse()
            .unwrap_or_default();
        let w = t.get(row, worker).to_string();
        let s = by.entry((i, w.clone())).or_insert_with(|| WorkerSeries {
            instance: i,
            worker: w,
            ..Default::default()
        });
        s.t_s.push(t_s);
        s.rss_mb.push(r);
        s.limit_mb.push(t.num(row, limit).unwrap_or(f64::NAN));
        s.generation
            .push(t.num(row, generation).unwrap_or(f64::NAN));
    }
    Ok(by.into_values().collect())
}

impl Timeline {
    /// The stretches with a memory surge on, as `(from_s, to_s)`: a row
    /// covers its step, `[t_s, next t_s)` (the last row the step before
    /// it), and stretches less than `merge_s` apart are one (so a chart
    /// draws at most one per pixel column). Empty without surges.
    pub fn surge_spans(&self, merge_s: f64) -> Vec<(f64, f64)> {
        let mut spans: Vec<(f64, f64)> = Vec::new();
        let t = &self.t_s;
        for (i, s) in self.surge_s.iter().enumerate() {
            if s.is_nan() || *s <= 0.0 || i >= t.len() {
                continue;
            }
            let end = match (t.get(i + 1), i.checked_sub(1)) {
                (Some(next), _) => *next,
                (None, Some(p)) => t[i] + (t[i] - t[p]),
                (None, None) => t[i],
            };
            match spans.last_mut() {
                Some(last) if t[i] - last.1 < merge_s => last.1 = end,
                _ => spans.push((t[i], end)),
            }
        }
        spans
    }
}

pub fn parse_timeline(bytes: &[u8]) -> Result<Timeline, ReportError> {
    let t = Table::parse("timeline.csv", bytes)?;
    let column = |name: &str| -> Vec<f64> {
        let c = t.col(name);
        t.rows
            .iter()
            .map(|r| t.num(r, c).unwrap_or(f64::NAN))
            .collect()
    };
    let mut instances = Vec::new();
    while t
        .col(&format!("inst{}_usage_mb", instances.len()))
        .is_some()
    {
        let i = instances.len();
        instances.push(InstanceSeries {
            usage_mb: column(&format!("inst{i}_usage_mb")),
            headroom_mb: column(&format!("inst{i}_headroom_mb")),
            max_rss_mb: column(&format!("inst{i}_max_rss_mb")),
        });
    }
    Ok(Timeline {
        t_s: column("t_s"),
        serving: column("serving"),
        booting: column("booting"),
        draining: column("draining"),
        instances,
        surge_s: if t.col("surge_episode_s").is_some() {
            column("surge_episode_s")
        } else {
            Vec::new()
        },
        workers: Vec::new(),
    })
}

/// The policy numbers the charts mark, from the run's scenario.toml.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Policy {
    pub cooldown_s: Option<f64>,
    pub pressure_cooldown_s: Option<f64>,
    pub tick_s: Option<f64>,
    pub base_limit_mb: Option<f64>,
    pub jitter_mb: Option<f64>,
    pub hard_limit_mb: Option<f64>,
    pub min_headroom_mb: Option<f64>,
}

pub fn parse_policy(bytes: &[u8]) -> Result<Policy, ReportError> {
    let text = std::str::from_utf8(bytes).map_err(|e| csv_err("scenario.toml", e))?;
    let v: toml::Table = toml::from_str(text).map_err(|e| csv_err("scenario.toml", e))?;
    let p = v.get("policy").and_then(toml::Value::as_table);
    let get = |k: &str| -> Option<f64> {
        let x = p?.get(k)?;
        x.as_float().or_else(|| x.as_integer().map(|i| i as f64))
    };
    Ok(Policy {
        cooldown_s: get("cooldown_s"),
        pressure_cooldown_s: get("pressure_cooldown_s"),
        tick_s: get("tick_s"),
        base_limit_mb: get("base_limit_mb"),
        jitter_mb: get("jitter_mb"),
        hard_limit_mb: get("hard_limit_mb"),
        min_headroom_mb: get("min_headroom_mb"),
    })
}

/// A JSON object's entries in file order (serde_json's own map sorts keys).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Ordered(pub Vec<(String, serde_json::Value)>);

impl<'de> Deserialize<'de> for Ordered {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = Ordered;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a JSON object")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut m: A) -> Result<Ordered, A::Error> {
                let mut out = Vec::new();
                while let Some((k, v)) = m.next_entry::<String, serde_json::Value>()? {
                    out.push((k, v));
                }
                Ok(Ordered(out))
            }
        }
        d.deserialize_map(V)
    }
}

pub fn parse_summary(bytes: &[u8]) -> Result<Ordered, ReportError> {
    serde_json::from_slice(bytes).map_err(|e| csv_err("summary.json", e))
}

/// saturate.json, the parts the report draws.
#[derive(Clone, Debug, Default, Deserialize, PartialEq)]
#[serde(default)]
pub struct Saturate {
    pub scenario: String,
    pub workers: u64,
    pub ceilings: Vec<SatCeiling>,
    pub policy_ceiling_per_hour: Option<f64>,
    pub simulated: SatSimulated,
    pub absorbable: SatAbsorbable,
    pub verdicts: Vec<String>,
}

#[derive(Clone, Debug, Default, Deserialize, PartialEq)]
#[serde(default)]
pub struct SatCeiling {
    pub gate: String,
    pub per_hour: Option<f64>,
    pub per_hour_escalated: Option<f64>,
    pub why: String,
}

#[derive(Clone, Debug, Default, Deserialize, PartialEq)]
#[serde(default)]
pub struct SatSimulated {
    pub recycles_per_hour: f64,
    pub exits_per_hour: f64,
    pub capacity_loss_fraction: f64,
    pub retry_ok_per_hour: f64,
    pub fetch_failed_per_hour: f64,
}

#[derive(Clone, Debug, Default, Deserialize, PartialEq)]
#[serde(default)]
pub struct SatAbsorbable {
    pub fetch_failed_threshold_per_hour: f64,
    pub no_fetch_failed_per_hour: Option<f64>,
    pub retry_ok_threshold_per_hour: f64,
    pub retry_ok_exceeded_at_per_hour: Option<f64>,
    pub probes: Vec<SatProbe>,
}

#[derive(Clone, Debug, Default, Deserialize, PartialEq)]
#[serde(default)]
pub struct SatProbe {
    pub target_per_hour: f64,
    pub recycles_per_hour: f64,
    pub retry_ok_per_hour: f64,
    pub fetch_failed_per_hour: f64,
    pub capacity_loss_fraction: f64,
}

pub fn parse_saturate(bytes: &[u8]) -> Result<Saturate, ReportError> {
    serde_json::from_slice(bytes).map_err(|e| csv_err("saturate.json", e))
}

/// One objective of a sweep: its metric and whether smaller is better.
#[derive(Clone, Debug, PartialEq)]
pub struct Objective {
    pub metric: String,
    pub minimize: bool,
}

/// The objectives in sweep.toml, in order.
pub fn parse_objectives(bytes: &[u8]) -> Result<Vec<Objective>, ReportError> {
    let text = std::str::from_utf8(bytes).map_err(|e| csv_err("sweep.toml", e))?;
    let v: toml::Table = toml::from_str(text).map_err(|e| csv_err("sweep.toml", e))?;
    let list = v.get("objective").and_then(toml::Value::as_array);
    Ok(list
        .into_iter()
        .flatten()
        .filter_map(|o| {
            let metric = o.get("metric")?.as_str()?.to_string();
            let dir = o.get("direction").and_then(toml::Value::as_str);
            Some(Objective {
                metric,
                minimize: dir != Some("maximize"),
            })
        })
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn surge_spans_cover_their_rows_steps_and_merge_close_ones() {
        let csv = "t_s,serving,surge_episode_s\n0,6,0\n60,6,30\n120,6,60\n180,6,0\n\
                   240,6,0\n300,6,10\n360,6,0\n420,6,5\n";
        let tl = parse_timeline(csv.as_bytes()).unwrap();
        assert_eq!(tl.surge_s.len(), 8);
        // Rows 60 and 120 cover [60, 180); 300 covers [300, 360); the last
        // row, 420, covers a step like the one before it.
        assert_eq!(
            tl.surge_spans(1.0),
            [(60.0, 180.0), (300.0, 360.0), (420.0, 480.0)]
        );
        // Closer than 150 s: one stretch.
        assert_eq!(tl.surge_spans(150.0), [(60.0, 480.0)]);
        // No column: none.
        let plain = parse_timeline(b"t_s,serving\n0,6\n60,6\n").unwrap();
        assert!(plain.surge_s.is_empty() && plain.surge_spans(1.0).is_empty());
    }

    #[test]
    fn a_file_cut_mid_row_is_refused() {
        let cut = b"ts,event,instance\n1.0,worker_recycled,inst-0\n2.0,worker_rec";
        let e = parse_events(cut)
            .map(|_| ())
            .expect_err("refused")
            .to_string();
        assert!(
            e.contains("events.csv") && e.contains("line 3 ends mid-row"),
            "{e}"
        );
        let whole = cut.iter().rposition(|&b| b == b'\n').unwrap() + 1;
        assert!(parse_events(&cut[..whole]).is_ok());
    }

    #[test]
    fn events_parse_by_header_name() {
        let csv = b"event,ts,instance,lease,branch,rss_mb\n\
worker_recycled,12.5,inst-1,acquired,lease_acquired,530.1\n\
retry_ok,13.0,inst-0,none,,\n";
        let ev = parse_events(csv).unwrap();
        assert_eq!(ev.len(), 2);
        assert_eq!(ev[0].t_s, 12.5);
        assert_eq!(ev[0].instance, 1);
        assert_eq!(ev[0].mark, Mark::Recycled(LeaseClass::Acquired));
        assert_eq!(ev[0].rss_mb, Some(530.1));
        assert_eq!(ev[1].mark, Mark::RetryOk);
        assert_eq!(ev[1].rss_mb, None);
    }

    #[test]
    fn instance_labels_become_lanes() {
        let csv =
            b"ts,event,instance\n1,worker_recycled,inst-B\n2,retry_ok,\n3,worker_recycled,inst-A\n";
        let (ev, labels) = parse_events_labelled("recording.csv", csv).unwrap();
        assert_eq!(labels, ["inst-A", "inst-B", "(none)"]);
        let lanes: Vec<u32> = ev.iter().map(|e| e.instance).collect();
        assert_eq!(lanes, [1, 2, 0]);
        let csv = b"ts,event,instance\n1,worker_recycled,inst-2\n";
        let (ev, labels) = parse_events_labelled("recording.csv", csv).unwrap();
        assert_eq!(labels, ["inst-0", "inst-1", "inst-2"]);
        assert_eq!(ev[0].instance, 2);
    }

    #[test]
    fn summary_keeps_file_order() {
        let s = parse_summary(br#"{"b": 1, "a": null, "c": "x"}"#).unwrap();
        let keys: Vec<&str> = s.0.iter().map(|(k, _)| k.as_str()).collect();
        assert_eq!(keys, ["b", "a", "c"]);
    }
}
