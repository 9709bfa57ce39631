//! `trials.csv`: one row per (configuration, replication), written in trial
//! order and read back for aggregation, resume and merge.

use super::runner::Trial;
use super::space::Sweep;
use crate::metrics::Summary;
use std::io::{self, BufRead, Write};

/// The header: ids, the parameters, an error column, then every metric.
pub fn header(sweep: &Sweep) -> Vec<String> {
    let mut h: Vec<String> = ["trial", "config", "replication", "seed"]
        .iter()
        .map(|s| s.to_string())
        .collect();
    h.extend(sweep.params.iter().map(|p| p.key.clone()));
    h.push("error".into());
    h.extend(Summary::metric_names());
    h
}

fn value_text(v: &toml::Value) -> String {
    match v {
        toml::Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

/// One CSV line for a trial (no newline).
pub fn row(sweep: &Sweep, t: &Trial) -> Vec<String> {
    let mut r = vec![
        t.trial.to_string(),
        t.config.to_string(),
        t.replication.to_string(),
        t.seed.to_string(),
    ];
    let config = sweep.config(t.config);
    for p in &sweep.params {
        let v = config
            .iter()
            .find(|(k, _)| *k == p.key)
            .map(|(_, v)| value_text(v));
        r.push(v.unwrap_or_else(|| "base".into()));
    }
    match &t.result {
        Ok(s) => {
            r.push(String::new());
            r.extend(s.metrics().into_iter().map(|(_, v)| {
                if v.is_nan() {
                    String::new()
                } else {
                    format!("{v}")
                }
            }));
        }
        Err(e) => {
            r.push(e.replace(['\n', '\r'], " "));
            r.extend(Summary::metric_names().iter().map(|_| String::new()));
        }
    }
    r
}

/// Writes rows as CSV records (quoted where needed).
pub fn write_rows<W: Write>(w: W, rows: &[Vec<String>]) -> io::Result<()> {
    let mut wr = csv::WriterBuilder::new().has_headers(false).from_writer(w);
    for r in rows {
        wr.write_record(r)?;
    }
    wr.flush()
}

/// A trial read back from `trials.csv`.
#[derive(Clone, Debug, PartialEq)]
pub struct Row {
    pub trial: u64,
    pub config: u64,
    pub replication: u64,
    pub error: bool,
    /// Metric values in `Summary::metric_names()` order (NaN = empty).
    pub metrics: Vec<f64>,
}

/// Streams `trials.csv` row by row into `each`, with the row's line as
/// written; returns the bytes that hold complete rows. See [`Rows`].
pub fn scan<R: BufRead>(
    sweep: &Sweep,
    r: R,
    mut each: impl FnMut(Row, &str) -> Result<(), String>,
) -> Result<u64, String> {
    let mut rows = Rows::new(sweep, r)?;
    while let Some(row) = rows.next_row()? {
        let lineno = rows.lineno;
        each(row, &rows.line).map_err(|e| format!("line {lineno}: {e}"))?;
    }
    Ok(rows.complete_len)
}

/// A pull reader of `trials.csv`: checks the header against the sweep, then
/// yields one row at a time (memory flat in the number of trials). A killed
/// run may leave a partial last line: it is not yielded, and `complete_len`
/// stops before it. Row errors name the line.
pub struct Rows<R> {
    r: R,
    want: Vec<String>,
    first_metric: usize,
    /// The last row's line as written, newline included.
    pub line: String,
    /// The last row's line number (1 = the header).
    pub lineno: u64,
    /// Bytes holding the header and the complete rows read so far.
    pub complete_len: u64,
    ended: bool,
}

impl<R: BufRead> Rows<R> {
    pub fn new(sweep: &Sweep, mut r: R) -> Result<Self, String> {
        let want = header(sweep);
        let first_metric = want.len() - Summary::metric_names().len();
        let mut line = String::new();
        let n = r.read_line(&mut line).map_err(|e| format!("line 1: {e}"))?;
        let ended = n == 0 || !line.ends_with('\n');
        if !ended {
            let got = csv_fields(line.trim_end_matches(['\n', '\r']))?;
            if got != want {
                return Err("line 1: the header does not match this sweep file \
                     (another sweep's output?)"
                    .into());
            }
        }
        Ok(Rows {
            r,
            want,
            first_metric,
            line,
            lineno: 1,
            complete_len: if ended { 0 } else { n as u64 },
            ended,
        })
    }

    /// The next complete row, or `None` at the end.
    pub fn next_row(&mut self) -> Result<Option<Row>, String> {
        if self.ended {
            return Ok(None);
        }
        self.line.clear();
        self.lineno += 1;
        let lineno = self.lineno;
        let n = self
            .r
            .read_line(&mut self.line)
            .map_err(|e| format!("line {lineno}: {e}"))?;
        if n == 0 || !self.line.ends_with('\n') {
            self.ended = true; // end, or a partial line left by a kill
            return Ok(None);
        }
        let (want, first_metric) = (&self.want, self.first_metric);
        let f = csv_fields(self.line.trim_end_matches(['\n', '\r']))
            .map_err(|e| format!("line {lineno}: {e}"))?;
        if f.len() != want.len() {
            return Err(format!(
                "line {lineno}: {} fields, expected {}",
                f.len(),
                want.len()
            ));
        }
        let int = |i: usize| {
            f[i].parse::<u64>().map_err(|_| {
                format!(
                    "line {lineno}: `{}` = `{}` is not an integer",
                    want[i], f[i]
                )
            })
        };
        let metrics = f[first_metric..]
            .iter()
            .map(|s| {
                if s.is_empty() {
                    f64::NAN
                } else {
                    s.parse().unwrap_or(f64::NAN)
                }
            })
            .collect();
        let row = Row {
            trial: int(0)?,
            config: int(1)?,
            replication: int(2)?,
            error: !f[first_metric - 1].is_empty(),
            metrics,
        };
        self.complete_len += n as u64;
        Ok(Some(row))
    }
}

fn csv_fields(line: &str) -> Result<Vec<String>, String> {
    let mut rdr = csv::ReaderBuilder::new()
        .has_headers(false)
        .from_reader(line.as_bytes());
    match rdr.records().next() {
        Some(Ok(rec)) => Ok(rec.iter().map(str::to_string).collect()),
        Some(Err(e)) => Err(e.to_string()),
        None => Ok(vec![]),
    }
}
