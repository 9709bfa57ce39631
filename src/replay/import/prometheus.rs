//! A Prometheus `query_range` (or instant `query`) JSON response, as the
//! HTTP API returns it (`/api/v1/query_range`):
//! `{"status":"success","data":{"resultType":"matrix","result":[{"metric":
//! {...labels...},"values":[[1764594000,"432013312"],...]}]}}`.
//!
//! Each series is one worker. Its labels map as follows: the instance is
//! `pod`, else `instance`; the worker is `worker`, else `pid`, else
//! `worker_id` (a series with none of them is refused, naming its labels).
//! Units: a metric named `*_bytes` (`process_resident_memory_bytes`,
//! `container_memory_rss`... with `_bytes`) is divided by 2^20; `*_mb` or
//! `*_megabytes` is MB; with no `__name__` (an expression), a series whose
//! first value is at least 10^5 is bytes (no worker has 100 GB; none has
//! 100 kB), else MB. The rule used is counted in the source's `rules`.
//!
//! The whole response is parsed into typed points (about 50 bytes each):
//! with the importer's size limit and `MAX_SAMPLES` that stays bounded.

use super::ImportError;
use crate::replay::recording::{Format, Origin, Part, Source};
use crate::replay::series::{KeyIndex, MAX_SAMPLES, Sample, SeriesKey};
use crate::replay::time::TsReader;
use serde::Deserialize;
use std::collections::BTreeMap;

const MB: f64 = 1024.0 * 1024.0;

/// Values from this up are bytes when the metric's name does not say.
pub const BYTES_FROM: f64 = 1e5;

#[derive(Deserialize)]
struct Response {
    status: String,
    data: Option<Data>,
    error: Option<String>,
}

#[derive(Deserialize)]
struct Data {
    #[serde(rename = "resultType")]
    result_type: String,
    result: Vec<Series>,
}

#[derive(Deserialize)]
struct Series {
    metric: BTreeMap<String, String>,
    values: Option<Vec<(f64, String)>>,
    value: Option<(f64, String)>,
}

/// Whether the text is a Prometheus API response.
pub fn looks_like(text: &str) -> bool {
    let head: String = text.chars().take(4096).collect();
    head.trim_start().starts_with('{')
        && head.contains("\"status\"")
        && head.contains("\"resultType\"")
}

pub fn parse(name: &str, text: &str) -> Result<Part, ImportError> {
    let r: Response = serde_json::from_str(text)
        .map_err(|e| ImportError::row(name, e.line(), format!("not a Prometheus response: {e}")))?;
    if r.status != "success" {
        let why = r.error.unwrap_or_default();
        return Err(ImportError::file(
            name,
            format!("a Prometheus error response: `{}` {why}", r.status),
        ));
    }
    let data = r
        .data
        .ok_or_else(|| ImportError::file(name, "a response without `data`"))?;
    if !["matrix", "vector"].contains(&data.result_type.as_str()) {
        return Err(ImportError::file(
            name,
            format!(
                "resultType `{}`: expected `matrix` (query_range) or `vector`",
                data.result_type
            ),
        ));
    }
    let mut part = Part::new(Source::new(name, Format::Prometheus), Vec::new());
    let mut keys = KeyIndex::default();
    let mut ts = TsReader::default();
    for (n, s) in data.result.into_iter().enumerate() {
        let what = |m: String| {
            ImportError::row(name, 1, format!("series {n} ({}): {m}", labels(&s.metric)))
        };
        let key =
            key(&s.metric).ok_or_else(|| what("no `worker`, `pid` or `worker_id` label".into()))?;
        let points: Vec<(f64, String)> = s.values.into_iter().flatten().chain(s.value).collect();
        let (scale, rule) = unit(&s.metric, &points);
        part.source.fired(rule);
        let k = keys.get(&mut part.series, key);
        for (j, (t, v)) in points.into_iter().enumerate() {
            let t_s = ts
                .read(&t.to_string())
                .map_err(|e| what(format!("point {j}: {e}")))?;
            let rss_mb =
                super::rss::rss_in(&v, scale).map_err(|e| what(format!("point {j}: {e}")))?;
            if part.series.samples.len() >= MAX_SAMPLES {
                return Err(what(format!(
                    "more than {MAX_SAMPLES} samples: use a coarser step"
                )));
            }
            let origin = Origin { source: 0, line: 1 };
            part.series.samples.push(Sample {
                t_s,
                key: k,
                rss_mb,
                requests: None,
                origin,
            });
        }
    }
    if part.series.samples.is_empty() {
        // As a CSV header with no rows: a query that matched nothing.
        return Err(ImportError::file(
            name,
            "a response with no samples (an empty `result`): nothing was recorded",
        ));
    }
    part.source.time_base = ts.base();
    part.source.samples = part.series.samples.len();
    Ok(part)
}

fn labels(m: &BTreeMap<String, String>) -> String {
    let all: Vec<String> = m.iter().map(|(k, v)| format!("{k}={v:?}")).collect();
    all.join(", ")
}

fn key(m: &BTreeMap<String, String>) -> Option<SeriesKey> {
    let instance = m.get("pod").or_else(|| m.get("instance")).cloned();
    let worker = m
        .get("worker")
        .or_else(|| m.get("pid"))
        .or_else(|| m.get("worker_id"))?;
    Some(SeriesKey {
        instance,
        worker: worker.clone(),
    })
}

/// What to divide the values by for MB, and the rule that said so.
fn unit(m: &BTreeMap<String, String>, points: &[(f64, String)]) -> (f64, &'static str) {
    match m.get("__name__").map(String::as_str) {
        Some(n) if n.ends_with("_bytes") => (MB, "prometheus: a *_bytes metric, bytes"),
        Some(n) if n.ends_with("_mb") || n.ends_with("_megabytes") => {
            (1.0, "prometheus: a *_mb metric, MB")
        }
        _ => {
            let first = points
                .first()
                .and_then(|p| p.1.parse::<f64>().ok())
                .unwrap_or(0.0);
            if first >= BYTES_FROM {
                (MB, "prometheus: unnamed, values >= 1e5: bytes")
            } else {
                (1.0, "prometheus: unnamed, values < 1e5: MB")
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    // The response shape of Prometheus' HTTP API (docs: "Range queries").
    const RESPONSE: &str = r#"{"status":"success","data":{"resultType":"matrix","result":[
        {"metric":{"__name__":"process_resident_memory_bytes","pod":"web-a","pid":"4242"},
         "values":[[1764594000,"432013312"],[1764594015.5,"433061888"]]},
        {"metric":{"__name__":"worker_rss_mb","instance":"inst-B:9100","worker":"1"},
         "values":[[1764594000,"400.5"]]}]}}"#;

    #[test]
    fn labels_and_units() {
        assert!(looks_like(RESPONSE));
        let p = parse("q.json", RESPONSE).unwrap();
        assert_eq!(p.series.samples.len(), 3);
        assert_eq!(p.series.keys[0].instance.as_deref(), Some("web-a"));
        assert_eq!(p.series.keys[0].worker, "4242");
        assert!((p.series.samples[0].rss_mb - 412.0).abs() < 0.01);
        assert_eq!(p.series.samples[2].rss_mb, 400.5);
        assert_eq!(p.series.keys[1].instance.as_deref(), Some("inst-B:9100"));
    }

    /// Bytes are bounded once converted: a 1.5 GiB worker in bytes
    /// (1.6e9) was refused against the MB bound, 2^60 bytes (2^40 MB) is.
    #[test]
    fn a_bytes_series_is_bounded_in_mb() {
        let one = |v: &str| {
            RESPONSE
                .replace("\"432013312\"", &format!("\"{v}\""))
                .replace("\"433061888\"", &format!("\"{v}\""))
        };
        let p = parse("q.json", &one("1610612736")).unwrap();
        assert_eq!(p.series.samples[0].rss_mb, 1536.0);
        let e = parse("q.json", &one("1152921504606846976")).unwrap_err();
        assert!(e.to_string().contains("beyond any host's memory"), "{e}");
    }

    #[test]
    fn bad_responses_say_what_and_where() {
        let e = parse(
            "e.json",
            r#"{"status":"error","errorType":"bad_data","error":"parse error"}"#,
        )
        .unwrap_err();
        assert!(e.to_string().contains("error response"), "{e}");
        let e = parse(
            "t.json",
            "{\"status\":\"success\",\n\"data\":{\"resultType\":\"matrix\",\"result\":[",
        )
        .unwrap_err();
        assert!(
            e.to_string()
                .starts_with("t.json:2: not a Prometheus response"),
            "{e}"
        );
        let no_worker = r#"{"status":"success","data":{"resultType":"matrix","result":[{"metric":{"job":"x"},"values":[[1764594000,"1"]]}]}}"#;
        let e = parse("w.json", no_worker).unwrap_err();
        assert!(e.to_string().contains("series 0 (job=\"x\")"), "{e}");
        let nan = r#"{"status":"success","data":{"resultType":"matrix","result":[{"metric":{"pid":"1"},"values":[[1764594000,"NaN"]]}]}}"#;
        assert!(
            parse("n.json", nan)
                .unwrap_err()
                .to_string()
                .contains("point 0")
        );
    }
}
