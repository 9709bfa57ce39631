//! A per-worker RSS series as CSV: `ts,instance,worker,rss_mb[,requests]`
//! (a header naming `ts`, `worker` and `rss_mb`, and no `event`; other
//! columns ignored, `instance` optional). `worker` is the worker's id or
//! pid; `requests` its served requests so far. A bad row is an error
//! naming the file, the line and the column, like any recording CSV.

use super::ImportError;
use crate::replay::recording::{Format, Origin, Part, Source};
use crate::replay::series::{KeyIndex, MAX_SAMPLES, Sample, SeriesKey};
use crate::replay::time::TsReader;

/// Whether a first line is this format's header.
pub fn looks_like(first_line: &str) -> bool {
    let names = super::csv::folded(first_line);
    let has = |c: &str| names.iter().any(|n| n == c);
    ["ts", "worker", "rss_mb"].into_iter().all(has) && !has("event")
}

/// Whether a text's header has this format's columns, `event` aside (a
/// recycle log's header whose rows turned out not to be recycles).
pub fn looks_like_without_event(text: &str) -> bool {
    let Some(first) = text.lines().find(|l| !l.trim().is_empty()) else {
        return false;
    };
    let names = super::csv::folded(first);
    ["ts", "worker", "rss_mb"]
        .into_iter()
        .all(|c| names.iter().any(|n| n == c))
}

pub fn parse(name: &str, text: &str) -> Result<Part, ImportError> {
    super::csv::check_width(name, text)?;
    let mut reader = csv::ReaderBuilder::new()
        .has_headers(true)
        .trim(csv::Trim::All)
        .from_reader(text.as_bytes());
    let header = reader
        .headers()
        .map_err(|e| super::csv::error(name, &e))?
        .clone();
    let names = super::csv::folded_names(name, &header)?;
    let col = |c: &str| names.iter().position(|h| h == c);
    let (Some(ts_i), Some(worker_i), Some(rss_i)) = (col("ts"), col("worker"), col("rss_mb"))
    else {
        return Err(ImportError::row(
            name,
            1,
            "the header needs `ts`, `worker` and `rss_mb`",
        ));
    };
    let (instance_i, requests_i) = (col("instance"), col("requests"));
    let mut part = Part::new(Source::new(name, Format::RssCsv), Vec::new());
    let mut keys = KeyIndex::default();
    let mut ts = TsReader::default();
    for record in reader.records() {
        let record = record.map_err(|e| super::csv::error(name, &e))?;
        let line = record.position().map_or(0, |p| p.line() as usize);
        let bad = |reason: String| ImportError::row(name, line, reason);
        let get = |i: usize| record.get(i).unwrap_or("");
        let t_s = ts
            .read(get(ts_i))
            .map_err(|e| bad(format!("column `ts`: {e}")))?;
        let worker = get(worker_i);
        if worker.is_empty() {
            return Err(bad("column `worker` is empty".into()));
        }
        super::name_len(worker).map_err(|e| bad(format!("column `worker`: {e}")))?;
        let rss_mb = rss(get(rss_i)).map_err(|e| bad(format!("column `rss_mb`: {e}")))?;
        let requests = match requests_i.map(get).filter(|v| !v.is_empty()) {
            None => None,
            Some(v) => Some(
                v.parse::<u64>()
                    .map_err(|_| bad(format!("column `requests`: `{v}` is not a whole number")))?,
            ),
        };
        let instance = instance_i
            .map(get)
            .filter(|v| !v.is_empty())
            .map(str::to_string);
        if let Some(i) = &instance {
            super::name_len(i).map_err(|e| bad(format!("column `instance`: {e}")))?;
        }
        let key = keys.get(
            &mut part.series,
            SeriesKey {
                instance,
                worker: worker.to_string(),
            },
        );
        if part.series.samples.len() >= MAX_SAMPLES {
            return Err(bad(format!(
                "more than {MAX_SAMPLES} samples: thin the series"
            )));
        }
        part.series.samples.push(Sample {
            t_s,
            key,
            rss_mb,
            requests,
            origin: Origin { source: 0, line },
        });
    }
    if part.series.samples.is_empty() {
        return Err(ImportError::row(
            name,
            1,
            "a header and no rows: nothing was recorded",
        ));
    }
    part.source.time_base = ts.base();
    part.source.samples = part.series.samples.len();
    Ok(part)
}

/// An RSS in MB: finite, not negative, within `super::MAX_MB`.
pub fn rss(v: &str) -> Result<f64, String> {
    rss_in(v, 1.0)
}

/// An RSS given in units of `per_mb` (2^20 for bytes), in MB: bounded
/// once converted.
pub fn rss_in(v: &str, per_mb: f64) -> Result<f64, String> {
    match v.parse::<f64>() {
        Ok(x) if x.is_finite() && x >= 0.0 => super::memory_mb(x / per_mb),
        Ok(_) => Err(format!("`{v}` is not an RSS (finite, not negative)")),
        Err(_) => Err(format!("`{v}` is not a number")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_samples_with_and_without_requests() {
        let p = parse(
            "rss.csv",
            "ts,instance,worker,rss_mb,requests\n\
             1764594000,inst-A,0,412.5,0\n\
             1764594010,inst-A,0,415.0,40\n\
             1764594000,inst-B,0,409.0,\n",
        )
        .unwrap();
        assert_eq!(p.series.samples.len(), 3);
        assert_eq!(p.series.keys.len(), 2);
        assert_eq!(p.series.samples[1].requests, Some(40));
        assert_eq!(p.series.samples[2].requests, None);
        assert_eq!(p.source.samples, 3);
        assert!(looks_like("ts,instance,worker,rss_mb"));
        assert!(!looks_like("ts,event,worker,rss_mb"));
    }

    #[test]
    fn a_header_in_another_case_reads_and_an_empty_name_is_refused() {
        let head = "TS,Instance,Worker,RSS_MB";
        assert!(looks_like(head));
        assert!(!looks_like("TS,Event,Worker,RSS_MB"));
        let p = parse("r.csv", &format!("{head}\n1764594000,inst-A,0,412.5\n")).unwrap();
        assert_eq!(p.series.samples.len(), 1);
        assert_eq!(p.series.samples[0].rss_mb, 412.5);
        let e = parse("r.csv", "ts,,worker,rss_mb\n1764594000,x,0,412.5\n")
            .unwrap_err()
            .to_string();
        assert!(
            e.starts_with("r.csv:1: field 2 of the header is an empty column name"),
            "{e}"
        );
    }

    #[test]
    fn bad_rows_name_file_line_and_column() {
        for (row, column) in [
            ("1764594000,inst-A,0,-5", "rss_mb"),
            ("1764594000,inst-A,0,NaN", "rss_mb"),
            ("1764594000,inst-A,,400", "worker"),
            ("soon,inst-A,0,400", "ts"),
        ] {
            let text = format!("ts,instance,worker,rss_mb\n1764594000,inst-A,0,400\n{row}\n");
            let e = parse("r.csv", &text).unwrap_err().to_string();
            assert!(
                e.starts_with("r.csv:3: column `") && e.contains(column),
                "{e}"
            );
        }
    }
}
