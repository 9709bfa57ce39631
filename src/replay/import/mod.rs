//! Importers, one file per format, each producing a `Part` of typed events
//! (or, for RSS series, samples). The format is detected per file: a JSON
//! document (a Prometheus response, a `kubectl ... -o json`), a first line
//! (a JSON object, a CSV header: `ts` and `event` for events, `ts`,
//! `worker` and `rss_mb` for an RSS series), `kubectl describe pod` text,
//! or, among the first lines, one a server writes (gunicorn, uvicorn,
//! uWSGI, puma_worker_killer, Passenger) or a platform log line. Server
//! logs share one driver (`server.rs`) and one envelope reader
//! (`prefix.rs`); each server's file holds its rules, with the source
//! file and version each message was taken from.

pub mod csv;
pub(crate) mod fields;
pub mod gunicorn;
pub mod jsonl;
pub mod kubernetes;
pub mod logs;
pub mod passenger;
pub mod prefix;
pub mod prometheus;
pub mod puma;
pub mod rss;
pub mod server;
pub mod uvicorn;
pub mod uwsgi;

use super::recording::{Format, Part};
use crate::text::{brief, one_line};
use std::io::Read;

pub use fields::COLUMNS;

/// The largest file an importer reads (256 MiB: a day of a large fleet's
/// telemetry, or 10^6 Prometheus points, fit many times over).
pub const MAX_BYTES: u64 = 256 << 20;

/// The most memory a recorded size may say (MB): 10^7 MB, 10 TB, more
/// than any host a worker runs on (and a scenario's own bound). Past it a
/// value is a corrupt field or bytes in an MB column, not a measurement
/// (an `rss_mb` of 1e308 once went through to a report printing a
/// 309-digit peak RSS; 609300000, bytes, showed limits up to 582000000 MB).
pub const MAX_MB: f64 = 1e7;

/// `x` MB, if it is a memory size (or, signed, a headroom) a recording
/// can hold: at most `MAX_MB` either way.
pub fn memory_mb(x: f64) -> Result<f64, String> {
    if x.abs() <= MAX_MB {
        Ok(x)
    } else {
        Err(format!(
            "{x:e} MB is beyond any host's memory (at most {MAX_MB:e} MB either way)"
        ))
    }
}

/// The longest name or label a recorded field may hold, in bytes: an
/// instance, a worker, an event kind, a lease, a branch, a trigger, a pid.
/// A pod's name is at most 253; past this a field is a corrupt or pasted
/// one, and it would go whole into the report and `analysis.json` (one
/// 50 MB instance name once made a 150 MB analysis).
pub const MAX_NAME_BYTES: usize = 256;

/// Why `value` is no name, if it is longer than `MAX_NAME_BYTES`.
pub fn name_len(value: &str) -> Result<(), String> {
    if value.len() <= MAX_NAME_BYTES {
        return Ok(());
    }
    Err(format!(
        "a name of {} bytes, more than the {MAX_NAME_BYTES} a recorded name may have",
        value.len()
    ))
}

/// Refuses a part holding a name longer than `MAX_NAME_BYTES`, naming the
/// file, the line and the field: every format's events, pressure lines
/// and series keys (the CSV and log readers refuse theirs as they read).
fn refuse_long_names(name: &str, part: &Part) -> Result<(), ImportError> {
    let bad = |line: usize, field: &str, v: Option<&str>| match v.map(name_len) {
        Some(Err(why)) => Err(ImportError::row(name, line, format!("`{field}`: {why}"))),
        _ => Ok(()),
    };
    for e in &part.events {
        let line = e.origin.line;
        bad(line, "event", Some(e.kind.label()))?;
        bad(line, "instance", e.instance.as_deref())?;
        bad(line, "worker", e.worker.as_deref())?;
        bad(line, "lease", e.lease.as_ref().map(|l| l.label()))?;
        bad(line, "branch", e.branch.as_deref())?;
        bad(line, "trigger", e.trigger.as_deref())?;
        bad(line, "pid", e.pid.as_deref())?;
    }
    for n in &part.notes {
        bad(n.origin.line, "instance", n.instance.as_deref())?;
    }
    for s in &part.series.samples {
        let key = &part.series.keys[s.key];
        bad(s.origin.line, "instance", key.instance.as_deref())?;
        bad(s.origin.line, "worker", Some(&key.worker))?;
    }
    Ok(())
}

/// Lines looked at to recognise a server's log.
const DETECT_LINES: usize = 100;

#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum ImportError {
    /// A bad row: the file, its line and what is wrong.
    #[error("{}:{line}: {}", one_line(.file), brief(.reason))]
    Row {
        file: String,
        line: usize,
        reason: String,
    },
    /// The file as a whole: unreadable, not text, not a known format.
    #[error("{}: {}", one_line(.file), brief(.reason))]
    File { file: String, reason: String },
    /// Files whose timestamps cannot be placed on one axis.
    #[error("{}", brief(.0))]
    Axes(String),
}

impl ImportError {
    pub fn row(file: &str, line: usize, reason: impl Into<String>) -> Self {
        ImportError::Row {
            file: file.to_string(),
            line,
            reason: reason.into(),
        }
    }

    pub fn file(file: &str, reason: impl Into<String>) -> Self {
        ImportError::File {
            file: file.to_string(),
            reason: reason.into(),
        }
    }
}

/// The format of a file's text, if it is one.
pub fn detect(text: &str) -> Option<Format> {
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    if prometheus::looks_like(text) {
        return Some(Format::Prometheus);
    }
    if kubernetes::looks_like_json(text) {
        return Some(Format::Kubernetes);
    }
    let first = text.lines().find(|l| !l.trim().is_empty())?;
    if jsonl::looks_like(first) {
        return Some(Format::Jsonl);
    }
    if csv::looks_like_recycles(first) {
        return Some(Format::RecycleCsv);
    }
    if rss::looks_like(first) {
        return Some(Format::RssCsv);
    }
    if csv::looks_like(first) {
        return Some(Format::Csv);
    }
    if kubernetes::looks_like_describe(text) {
        return Some(Format::Kubernetes);
    }
    let server = text
        .lines()
        .filter(|l| !l.trim().is_empty())
        .take(DETECT_LINES)
        .find_map(server_format);
    if server.is_some() {
        return server;
    }
    logs::looks_like(text).then_some(Format::Log)
}

/// A CSV with no `event` column whose rows are mostly under their limit.
const NOT_RECYCLES: &str = "no `event` column, and `rss_mb` is below `limit_mb` on most rows, \
     so the rows are not recycles (a recycle's RSS is at or over its limit): add an `event` \
     column (`worker_recycled` for a recycle), or a `worker` column to read the rows as an RSS \
     series";

/// Why a first line that is a CSV header is no recording's, if it is one:
/// the columns it lacks, and memory columns named without their unit.
fn csv_header_mismatch(text: &str) -> Option<String> {
    let first = text.lines().find(|l| !l.trim().is_empty())?;
    let names = csv::folded(first);
    if names.len() < 2 || names.iter().any(|n| n.is_empty() || n.contains(' ')) {
        return None;
    }
    let has = |c: &str| names.iter().any(|n| n == c);
    if let Some(why) = names
        .iter()
        .find_map(|n| fields::unitless_memory_reason("column", n))
    {
        return Some(why);
    }
    let time = if has("ts") {
        String::new()
    } else {
        format!(
            "a time column (`ts`, or one of `{}`) and ",
            csv::TS_ALIASES.join("`, `")
        )
    };
    Some(format!(
        "not a recording: a CSV header ({}) that is no recording's: it needs {time}`event` \
         (an events CSV), `rss_mb` and `limit_mb` (one recycle a row), or `worker` and \
         `rss_mb` (an RSS series)",
        crate::text::one_line(&names.join(","))
    ))
}

/// A format's test of one line.
type LooksLike = fn(&str) -> bool;

/// The server whose log line this is, if any.
fn server_format(line: &str) -> Option<Format> {
    let checks: [(LooksLike, Format); 5] = [
        (gunicorn::looks_like, Format::Gunicorn),
        (passenger::looks_like, Format::Passenger),
        (puma::looks_like, Format::PumaWorkerKiller),
        (uwsgi::looks_like, Format::Uwsgi),
        (uvicorn::looks_like, Format::Uvicorn),
    ];
    checks.iter().find(|(f, _)| f(line)).map(|(_, fmt)| *fmt)
}

/// Imports one file's text; `name` is how errors refer to it.
pub fn parse(name: &str, text: &str) -> Result<Part, ImportError> {
    let digest = fnv1a(text.as_bytes());
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    let format = detect(text);
    let server = |fmt, rule| server::parse(name, text, fmt, rule);
    let mut part = match format {
        Some(Format::Csv) => csv::parse(name, text)?,
        Some(Format::Jsonl) => jsonl::parse(name, text)?,
        Some(Format::Log) => logs::parse(name, text),
        Some(Format::RssCsv) => rss::parse(name, text)?,
        Some(Format::RecycleCsv) => match csv::parse_recycles(name, text)? {
            Some(part) => part,
            None if rss::looks_like_without_event(text) => rss::parse(name, text)?,
            None => return Err(ImportError::file(name, NOT_RECYCLES)),
        },
        Some(Format::Prometheus) => prometheus::parse(name, text)?,
        Some(Format::Kubernetes) if kubernetes::looks_like_json(text) => {
            kubernetes::parse_json(name, text)?
        }
        Some(Format::Kubernetes) => kubernetes::parse_describe(name, text),
        Some(f @ Format::Gunicorn) => server(f, gunicorn::rule),
        Some(f @ Format::Uvicorn) => server(f, uvicorn::rule),
        Some(f @ Format::Uwsgi) => server(f, uwsgi::rule),
        Some(f @ Format::PumaWorkerKiller) => server(f, puma::rule),
        Some(f @ Format::Passenger) => server(f, passenger::rule),
        None if text.trim().is_empty() => return Err(ImportError::file(name, "empty: no events")),
        None => {
            if let Some(why) = csv_header_mismatch(text) {
                return Err(ImportError::row(name, 1, why));
            }
            return Err(ImportError::file(
                name,
                "not a recording: expected a CSV whose header names `ts` and `event` \
             (fleetsim run's events.csv) or `ts`, `worker` and `rss_mb` (an RSS series), JSON \
             Lines with those keys, a Prometheus query_range response, kubectl's pod or event \
             JSON or `describe pod` text, a gunicorn, uvicorn, uWSGI, puma_worker_killer or \
             Passenger log, or platform log lines (`20:17:02 RECYCLE inst-A rss=564 lim=507 \
             after=858req`, `retry_ok`, `recycle pressure: ...`)",
            ));
        }
    };
    refuse_long_names(name, &part)?;
    part.digest = digest;
    Ok(part)
}

/// Words a server log's file name may start with before its instance.
const NAME_WORDS: [&str; 7] = [
    "gunicorn",
    "uvicorn",
    "uwsgi",
    "puma",
    "passenger",
    "error",
    "access",
];

/// A server log's instance from its file name: the name up to its first
/// `.`, less leading `NAME_WORDS` each followed by `-`, `_` or `.`
/// (`logs/gunicorn-inst-A.log` -> `inst-A`, `gunicorn-error-b.log` -> `b`);
/// the whole stem when nothing is left (`gunicorn.log` -> `gunicorn`).
pub fn instance_from_file_name(path: &str) -> Option<String> {
    let file = path.rsplit(['/', '\\']).next()?;
    let stem = file.split('.').next().filter(|s| !s.is_empty())?;
    let mut rest = stem;
    'strip: loop {
        for w in NAME_WORDS {
            let lower = rest.to_ascii_lowercase();
            if lower.starts_with(w) && rest[w.len()..].starts_with(['-', '_']) {
                rest = &rest[w.len() + 1..];
                continue 'strip;
            }
        }
        break;
    }
    Some(if rest.is_empty() { stem } else { rest }.to_string())
}

/// FNV-1a, 64 bits: the digest `assemble` compares to refuse a file given twice.
fn fnv1a(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0xcbf2_9ce4_8422_2325, |h, b| {
        (h ^ u64::from(*b)).wrapping_mul(0x0100_0000_01b3)
    })
}

/// Reads and imports one file, at most `MAX_BYTES` of it.
pub fn read(name: &str, input: impl Read) -> Result<Part, ImportError> {
    let mut bytes = Vec::new();
    input
        .take(MAX_BYTES + 1)
        .read_to_end(&mut bytes)
        .map_err(|e| ImportError::file(name, format!("cannot read: {e}")))?;
    if bytes.len() as u64 > MAX_BYTES {
        return Err(ImportError::file(
            name,
            format!(
                "larger than {} MiB, the most replay reads: split or thin it",
                MAX_BYTES >> 20
            ),
        ));
    }
    let text = String::from_utf8(bytes).map_err(|e| {
        let at = e.utf8_error().valid_up_to();
        let line = e.as_bytes()[..at].iter().filter(|b| **b == b'\n').count() + 1;
        ImportError::row(
            name,
            line,
            format!("not UTF-8 text (byte {at}): not a recording"),
        )
    })?;
    parse(name, &text)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn formats_are_detected_from_the_first_line() {
        assert_eq!(detect("\nts,event\n1,retry_ok\n"), Some(Format::Csv));
        assert_eq!(detect("{\"ts\": 1}\n"), Some(Format::Jsonl));
        assert_eq!(detect("20:15:38 retry_ok\n"), Some(Format::Log));
        assert_eq!(detect("name = \"x\"\n[policy]\n"), None);
    }

    #[test]
    fn instances_from_file_names() {
        let name = |p| instance_from_file_name(p);
        assert_eq!(name("logs/gunicorn-inst-A.log").as_deref(), Some("inst-A"));
        assert_eq!(name("gunicorn_error-b.log.1").as_deref(), Some("b"));
        assert_eq!(name("inst-C.log").as_deref(), Some("inst-C"));
        assert_eq!(name("gunicorn.log").as_deref(), Some("gunicorn"));
        assert_eq!(name("/x/.hidden"), None);
    }

    #[test]
    fn server_logs_and_documents_are_detected() {
        let g = "[2026-12-01 13:25:41 +0000] [1234] [INFO] Booting worker with pid: 1234\n";
        assert_eq!(detect(g), Some(Format::Gunicorn));
        assert_eq!(
            detect("INFO:     Started server process [7]\n"),
            Some(Format::Uvicorn)
        );
        assert_eq!(
            detect("...The work of process 9 is done. Seeya!\n"),
            Some(Format::Uwsgi)
        );
        assert_eq!(
            detect(
                "[42] PumaWorkerKiller: Rolling Restart. 2 workers consuming total: 9 mb. Sending TERM to pid 43.\n"
            ),
            Some(Format::PumaWorkerKiller)
        );
        assert_eq!(detect("ts,instance,worker,rss_mb\n"), Some(Format::RssCsv));
        assert_eq!(detect("Time,worker,RSS_MB\n"), Some(Format::RssCsv));
        assert_eq!(
            detect("\"timestamp\",\"rss_mb\",\"limit_mb\"\n"),
            Some(Format::RecycleCsv)
        );
        assert_eq!(detect("t_s,event\n"), Some(Format::Csv));
        assert_eq!(detect("ts,time,event\n"), Some(Format::Csv));
        assert_eq!(detect("time,timestamp,event\n"), None, "which is the time?");
        assert_eq!(
            detect("{\"status\":\"success\",\"data\":{\"resultType\":\"matrix\",\"result\":[]}}"),
            Some(Format::Prometheus)
        );
        assert_eq!(
            detect("{\n \"apiVersion\": \"v1\",\n \"kind\": \"Pod\"\n}\n"),
            Some(Format::Kubernetes)
        );
        assert_eq!(detect("\u{feff}ts,event\n1,retry_ok\n"), Some(Format::Csv));
    }

    #[test]
    fn unknown_files_get_one_clear_error() {
        let e = parse("s.toml", "[policy]\ncooldown_s = 1\n").unwrap_err();
        assert!(e.to_string().starts_with("s.toml: not a recording"), "{e}");
        let e = read("b.bin", &[0xff, 0xfe, 0x00][..]).unwrap_err();
        assert!(e.to_string().contains("not UTF-8"), "{e}");
        let e = parse("e.csv", "\n  \n").unwrap_err();
        assert!(e.to_string().contains("empty"), "{e}");
    }

    #[test]
    fn every_format_refuses_a_name_past_256_bytes() {
        // A server log's worker is its pid's digits, however many.
        let pid = "7".repeat(300);
        let uvicorn = format!(
            "2026-12-01T13:00:00Z INFO:     Started server process [7]\n\
             2026-12-01T13:00:05Z INFO:     Finished server process [{pid}]\n"
        );
        let e = parse("u.log", &uvicorn).unwrap_err().to_string();
        assert_eq!(
            e,
            "u.log:2: `worker`: a name of 300 bytes, more than the 256 a recorded name may have"
        );
        // A platform log's line with one is listed as unparsed, its others read.
        let name = "b".repeat(257);
        let log = format!("20:15:38 retry_ok\n20:17:02 RECYCLE {name} rss=564\n");
        let p = parse("p.log", &log).unwrap();
        assert_eq!((p.events.len(), p.source.unparsed_count), (1, 1));
        assert!(
            p.source.unparsed[0]
                .reason
                .starts_with("`instance`: a name of 257 bytes"),
            "{}",
            p.source.unparsed[0].reason
        );
        let pressure =
            format!("20:17:02 inst-{name} recycle pressure: instance headroom 2MB < 3MB\n");
        let e = parse("q.log", &pressure).unwrap_err().to_string();
        assert!(
            e.starts_with("q.log:1: `instance`: a name of 262 bytes"),
            "{e}"
        );
    }
}
