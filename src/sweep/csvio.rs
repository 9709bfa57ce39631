//! The sweep tables' schema, one home for their writers and readers:
//! `trials.csv` (one row per (configuration, replication), written in trial
//! order and read back for aggregation, resume and merge) and `results.csv`
//! / `pareto.csv` (one row per configuration, `results_header`).
//!
//! Typed for pandas and DuckDB: every parameter column holds only the
//! parameter's values (the base row leaves them empty, and `is_base` says
//! which row is the base), the one `seed` column is the exact u64, and
//! column names are unique. `SCHEMA_VERSION` is this layout's number,
//! recorded in `model.toml`; version 1 (before 2026-12-01) wrote `base` in
//! the base row's parameter cells and a second, f64-rounded `seed` column.

use super::aggregate::ConfigResult;
use super::runner::Trial;
use super::space::Sweep;
use crate::metrics::Summary;
use std::io::{self, BufRead, Write};

/// The layout of `trials.csv`, `results.csv` and `pareto.csv`.
pub const SCHEMA_VERSION: u32 = 2;

/// `trials.csv`'s columns before the parameters.
pub const TRIALS_LEAD: [&str; 5] = ["trial", "config", "replication", "seed", "is_base"];

/// `results.csv`'s (and `pareto.csv`'s) columns before the parameters; the
/// parameters end where `RESULTS_AFTER_PARAMS` starts.
pub const RESULTS_LEAD: [&str; 2] = ["config", "is_base"];
/// The first column after the parameters in `results.csv`.
pub const RESULTS_AFTER_PARAMS: &str = "n";

/// The message for a table in the layout of `SCHEMA_VERSION` 1, which this
/// build neither resumes nor merges.
pub const OLD_LAYOUT: &str = "written in the sweep table layout 1 of fleetsim before \
     2026-12-01 (`base` in parameter cells, two `seed` columns): resume or merge it \
     with the fleetsim that wrote it, or re-run the sweep into a new --out";

/// The trials header: ids, the parameters, an error column, then every metric.
pub fn header(sweep: &Sweep) -> Vec<String> {
    let mut h: Vec<String> = TRIALS_LEAD.iter().map(|s| s.to_string()).collect();
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

/// Configuration `config`'s parameter cells in `sweep.params` order: each
/// value as the sweep file gives it, empty where the configuration leaves
/// the base's (always, for the base).
pub fn param_cells(sweep: &Sweep, config: u64) -> Vec<String> {
    let c = sweep.config(config);
    sweep
        .params
        .iter()
        .map(|p| {
            c.iter()
                .find(|(k, _)| *k == p.key)
                .map(|(_, v)| value_text(v))
                .unwrap_or_default()
        })
        .collect()
}

/// The `is_base` cell: the base is configuration 0.
pub fn is_base_cell(config: u64) -> String {
    (config == 0).to_string()
}

/// One CSV line for a trial (no newline).
pub fn row(sweep: &Sweep, t: &Trial) -> Vec<String> {
    let mut r = vec![
        t.trial.to_string(),
        t.config.to_string(),
        t.replication.to_string(),
        t.seed.to_string(),
        is_base_cell(t.config),
    ];
    r.extend(param_cells(sweep, t.config));
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
pub struct Rows<'s, R> {
    r: R,
    sweep: &'s Sweep,
    /// The last row's trial: rows come in trial order, each once.
    last_trial: Option<u64>,
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

impl<'s, R: BufRead> Rows<'s, R> {
    pub fn new(sweep: &'s Sweep, mut r: R) -> Result<Self, String> {
        let want = header(sweep);
        let first_metric = want.len() - Summary::metric_names().len();
        let mut line = String::new();
        let n = r.read_line(&mut line).map_err(|e| format!("line 1: {e}"))?;
        let ended = n == 0 || !line.ends_with('\n');
        if !ended {
            let got = csv_fields(line.trim_end_matches(['\n', '\r']))?;
            if got != want && is_old_layout(&got) {
                return Err(format!("line 1: {OLD_LAYOUT}"));
            }
            if got != want {
                return Err("line 1: the header does not match this sweep file \
                     (another sweep's output?)"
                    .into());
            }
        }
        Ok(Rows {
            r,
            sweep,
            last_trial: None,
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
        // A metric the run could not compute is written empty, never `NaN`.
        let metrics = f[first_metric..]
            .iter()
            .zip(&want[first_metric..])
            .map(|(s, name)| {
                if s.is_empty() {
                    return Ok(f64::NAN);
                }
                match s.parse::<f64>() {
                    Ok(v) if !v.is_nan() => Ok(v),
                    _ => Err(format!("line {lineno}: `{name}` = `{s}` is not a number")),
                }
            })
            .collect::<Result<Vec<f64>, String>>()?;
        let row = Row {
            trial: int(0)?,
            config: int(1)?,
            replication: int(2)?,
            error: !f[first_metric - 1].is_empty(),
            metrics,
        };
        self.check_identity(&row, &f)
            .map_err(|e| format!("line {lineno}: {e} (edited by hand?)"))?;
        self.last_trial = Some(row.trial);
        self.complete_len += n as u64;
        Ok(Some(row))
    }

    /// A row's ids as this sweep writes them: its trial after the last
    /// one, its trial the index of its configuration and replication, its
    /// seed the replication's, `is_base` and the parameter cells its
    /// configuration's. A row that merely parses (a duplicate, another
    /// seed) was pooled into the results.
    fn check_identity(&self, row: &Row, f: &[String]) -> Result<(), String> {
        let sweep = self.sweep;
        if let Some(last) = self.last_trial
            && row.trial <= last
        {
            return Err(format!(
                "trial {} after trial {last}: not in trial order, or given twice; a sweep \
                 writes each trial once, in order (sort it by trial before merging)",
                row.trial
            ));
        }
        if row.replication >= sweep.replications || row.config > sweep.config_count() {
            return Err(format!(
                "configuration {} replication {} is not in this sweep ({} configurations \
                 besides the base, {} replications)",
                row.config,
                row.replication,
                sweep.config_count(),
                sweep.replications
            ));
        }
        let trial = super::trial_index(row.config, row.replication, sweep.replications);
        if row.trial != trial {
            return Err(format!(
                "trial {} is configuration {} replication {}'s index {trial}",
                row.trial, row.config, row.replication
            ));
        }
        let seed = super::replication_seed(sweep.seed, row.replication).to_string();
        if f[3] != seed {
            return Err(format!(
                "seed {} is not replication {}'s seed {seed}",
                f[3], row.replication
            ));
        }
        let lead = TRIALS_LEAD.len();
        let params = param_cells(sweep, row.config);
        if f[4] != is_base_cell(row.config) || f[lead..lead + params.len()] != params[..] {
            return Err(format!(
                "its is_base and parameter cells are not configuration {}'s",
                row.config
            ));
        }
        Ok(())
    }
}

/// Whether a header is layout 1's: no `is_base`, or `seed` twice.
pub fn is_old_layout(header: &[String]) -> bool {
    !header.iter().any(|h| h == "is_base") || header.iter().filter(|h| *h == "seed").count() > 1
}

/// The header of `results.csv` and `pareto.csv`.
pub fn results_header(sweep: &Sweep) -> Vec<String> {
    let mut head: Vec<String> = RESULTS_LEAD.iter().map(|s| s.to_string()).collect();
    head.extend(sweep.params.iter().map(|p| p.key.clone()));
    head.extend([RESULTS_AFTER_PARAMS, "errors", "feasible"].map(String::from));
    for o in &sweep.objectives {
        head.push(format!("{}_mean", o.metric));
        head.push(format!("{}_ci95", o.metric));
    }
    head.extend(
        [
            "scalar_mean",
            "scalar_ci95",
            "diff_vs_base_mean",
            "diff_vs_base_ci95",
        ]
        .map(String::from),
    );
    head
}

/// `results.csv` (or `pareto.csv`) as rows, the header first.
pub fn results_rows(sweep: &Sweep, results: &[ConfigResult]) -> Vec<Vec<String>> {
    let mut rows = vec![results_header(sweep)];
    for r in results {
        let mut row = vec![r.config.to_string(), is_base_cell(r.config)];
        row.extend(param_cells(sweep, r.config));
        row.extend([
            r.n.to_string(),
            r.errors.to_string(),
            r.feasible.to_string(),
        ]);
        for (m, c) in r.objective_mean.iter().zip(&r.objective_ci95) {
            row.push(num(*m));
            row.push(num(*c));
        }
        row.extend([
            num(r.scalar_mean),
            num(r.scalar_ci95),
            num(r.diff_mean),
            num(r.diff_ci95),
        ]);
        rows.push(row);
    }
    rows
}

/// The range of `results.csv` columns that hold the parameters, from its
/// header: after `RESULTS_LEAD` (after `config` alone in layout 1) up to
/// `RESULTS_AFTER_PARAMS`.
pub fn results_param_columns(header: &[String]) -> std::ops::Range<usize> {
    let start = header
        .iter()
        .position(|h| h == "is_base")
        .map_or(1, |i| i + 1)
        .min(header.len());
    let end = header
        .iter()
        .position(|h| h == RESULTS_AFTER_PARAMS)
        .unwrap_or(header.len())
        .max(start);
    start..end
}

fn num(x: f64) -> String {
    if x.is_finite() {
        format!("{x}")
    } else {
        String::new()
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
