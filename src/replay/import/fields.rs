//! The recording schema by column name, shared by the CSV and JSON Lines
//! importers: one row of named text values becomes one typed `Event`, or a
//! message naming the column and what is wrong with its value.

use crate::replay::recording::{Event, Kind, Lease, Origin};
use crate::replay::time::TsReader;

/// Every column the importers read, in `recording.csv` order (`events.csv`'s
/// then `pid`: `schema::events`). Others are ignored.
pub const COLUMNS: [&str; 18] = crate::schema::events::RECORDING_COLUMNS;

/// The columns a recording must have.
pub const REQUIRED: [&str; 2] = ["ts", "event"];

/// One row's values in `COLUMNS` order; empty text counts as absent.
pub struct Row<'a> {
    pub values: [Option<&'a str>; COLUMNS.len()],
}

impl<'a> Row<'a> {
    fn get(&self, column: &str) -> Option<&'a str> {
        let i = COLUMNS.iter().position(|c| *c == column)?;
        self.values[i].map(str::trim).filter(|v| !v.is_empty())
    }

    /// A name or label: at most `super::MAX_NAME_BYTES`.
    fn text(&self, column: &str) -> Result<Option<String>, String> {
        self.label(column).map(|v| v.map(str::to_string))
    }

    fn label(&self, column: &str) -> Result<Option<&'a str>, String> {
        let v = self.get(column);
        if let Some(v) = v {
            super::name_len(v).map_err(|e| format!("column `{column}`: {e}"))?;
        }
        Ok(v)
    }

    fn number(&self, column: &str) -> Result<Option<f64>, String> {
        let Some(v) = self.get(column) else {
            return Ok(None);
        };
        match v.parse::<f64>() {
            Ok(x) if x.is_finite() => Ok(Some(x)),
            _ => Err(format!("column `{column}`: `{v}` is not a number")),
        }
    }

    /// A number that cannot be negative (memory, ages, latencies).
    fn size(&self, column: &str) -> Result<Option<f64>, String> {
        match self.number(column)? {
            Some(x) if x < 0.0 => Err(format!("column `{column}`: {x} is negative")),
            v => Ok(v),
        }
    }

    /// A memory figure in MB within `super::MAX_MB`: a size (not
    /// negative), or with `signed` a headroom.
    fn mb(&self, column: &str, signed: bool) -> Result<Option<f64>, String> {
        let x = if signed {
            self.number(column)?
        } else {
            self.size(column)?
        };
        x.map(|x| super::memory_mb(x).map_err(|e| format!("column `{column}`: {e}")))
            .transpose()
    }

    fn count<T: std::str::FromStr>(&self, column: &str) -> Result<Option<T>, String> {
        let Some(v) = self.get(column) else {
            return Ok(None);
        };
        v.parse::<T>()
            .map(Some)
            .map_err(|_| format!("column `{column}`: `{v}` is not a whole number"))
    }

    fn flag(&self, column: &str) -> Result<Option<bool>, String> {
        let Some(v) = self.get(column) else {
            return Ok(None);
        };
        parse_bool(v)
            .map(Some)
            .ok_or_else(|| format!("column `{column}`: `{v}` is not true or false"))
    }
}

/// The schema's memory figures: each is read from `NAME_mb`, in MB.
const MEMORY: [&str; 5] = ["rss", "limit", "base_limit", "hard_limit", "headroom"];

/// Units a memory figure may be given in other than MB (the words of an
/// exporter's column names: `rss_bytes`, `limit_kb`, `rss_mib`).
const OTHER_UNITS: [&str; 19] = [
    "b",
    "byte",
    "bytes",
    "k",
    "kb",
    "kib",
    "kbytes",
    "kilobytes",
    "m",
    "mib",
    "mbytes",
    "megabytes",
    "g",
    "gb",
    "gib",
    "gbytes",
    "gigabytes",
    "pages",
    "words",
];

/// The name a folded column or key should have when it names one of the
/// schema's memory figures without saying MB (`rss`, `limit`, `rss_bytes`,
/// `limit_kb_max`): `rss_mb`, `limit_mb`, ... Such a column is refused
/// rather than ignored: ignored, its figures would be lost without a word.
pub fn unitless_memory(name: &str) -> Option<String> {
    MEMORY.into_iter().find_map(|stem| {
        let rest = name.strip_prefix(stem)?;
        let other = rest.is_empty()
            || rest
                .strip_prefix('_')
                .is_some_and(|r| r.split('_').any(|w| OTHER_UNITS.contains(&w)));
        other.then(|| format!("{stem}_mb"))
    })
}

/// Why a column (`what`: "column", "key") named `name` (as given) is
/// refused, if it names a memory figure without its unit.
pub fn unitless_memory_reason(what: &str, name: &str) -> Option<String> {
    let mb = unitless_memory(&name.to_ascii_lowercase())?;
    Some(format!(
        "{what} `{}`: memory {what}s are in MB and say so (the `_mb` suffix): convert the \
         values to MB and name the {what} `{mb}`",
        crate::text::one_line(name)
    ))
}

/// `true`/`false` in the spellings exporters use.
pub fn parse_bool(v: &str) -> Option<bool> {
    match v.to_ascii_lowercase().as_str() {
        "true" | "1" | "yes" => Some(true),
        "false" | "0" | "no" => Some(false),
        _ => None,
    }
}

/// The typed event of one row, or what is wrong with it.
pub fn event(row: &Row, ts: &mut TsReader, origin: Origin) -> Result<Event, String> {
    let t_text = row.get("ts").ok_or("column `ts` is empty")?;
    let t_s = ts.read(t_text).map_err(|e| format!("column `ts`: {e}"))?;
    let kind = Kind::from_label(row.label("event")?.ok_or("column `event` is empty")?);
    let mut e = Event::new(t_s, kind, origin);
    e.instance = row.text("instance")?;
    e.worker = row.text("worker")?;
    e.rss_mb = row.mb("rss_mb", false)?;
    e.limit_mb = row.mb("limit_mb", false)?;
    e.base_limit_mb = row.mb("base_limit_mb", false)?;
    e.hard_limit_mb = row.mb("hard_limit_mb", false)?;
    e.requests = row.count("requests")?;
    e.pressure = row.flag("pressure")?;
    e.headroom_mb = row.mb("headroom_mb", true)?;
    e.lease = row.label("lease")?.map(Lease::from_label);
    e.branch = row.text("branch")?;
    e.generation = row.count("generation")?;
    e.last_recycle_age_s = row.size("last_recycle_age_s")?;
    e.latency_ms = row.size("latency_ms")?;
    e.trigger = row.text("trigger")?;
    e.pid = row.text("pid")?;
    Ok(e)
}

/// Whether a recycle log's rows are recycles: `rss_mb` at or over
/// `limit_mb` on at least half the recycles that give both (a recycle's
/// RSS is at or over its limit; a sampled series' mostly is not). The CSV
/// and JSON Lines readers both ask it of a file with no `event` column.
pub fn mostly_recycles(events: &[Event]) -> bool {
    let (mut both, mut over) = (0usize, 0usize);
    for e in events.iter().filter(|e| e.is_recycle()) {
        if let (Some(rss), Some(limit)) = (e.rss_mb, e.limit_mb) {
            both += 1;
            over += usize::from(rss >= limit);
        }
    }
    2 * over >= both
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row<'a>(pairs: &[(&str, &'a str)]) -> Row<'a> {
        let mut values = [None; COLUMNS.len()];
        for (k, v) in pairs {
            let i = COLUMNS.iter().position(|c| c == k).unwrap();
            values[i] = Some(*v);
        }
        Row { values }
    }

    #[test]
    fn a_row_becomes_a_typed_event() {
        let r = row(&[
            ("ts", "12.5"),
            ("event", "worker_recycled"),
            ("instance", "inst-0"),
            ("rss_mb", "541.0"),
            ("requests", "410"),
            ("pressure", "false"),
            ("lease", "bypassed_hard_ceiling"),
            ("branch", ""),
        ]);
        let e = event(&r, &mut TsReader::default(), Origin::default()).unwrap();
        assert_eq!(e.t_s, 12.5);
        assert!(e.is_recycle());
        assert_eq!(e.rss_mb, Some(541.0));
        assert_eq!(e.requests, Some(410));
        assert_eq!(e.pressure, Some(false));
        assert_eq!(
            e.lease.as_ref().map(Lease::label),
            Some("bypassed_hard_ceiling")
        );
        assert_eq!(e.branch, None);
    }

    #[test]
    fn bad_values_name_their_column() {
        let cases = [
            (
                vec![("ts", "1"), ("event", "retry_ok"), ("rss_mb", "big")],
                "rss_mb",
            ),
            (
                vec![("ts", "1"), ("event", "retry_ok"), ("pressure", "maybe")],
                "pressure",
            ),
            (
                vec![("ts", "1"), ("event", "retry_ok"), ("requests", "4.5")],
                "requests",
            ),
            (vec![("ts", "yesterday"), ("event", "retry_ok")], "ts"),
            (vec![("ts", "1")], "event"),
            (
                vec![("ts", "1"), ("event", "retry_ok"), ("rss_mb", "-500")],
                "rss_mb",
            ),
            (
                vec![("ts", "1"), ("event", "retry_ok"), ("latency_ms", "-1")],
                "latency_ms",
            ),
        ];
        for (pairs, column) in cases {
            let e = event(&row(&pairs), &mut TsReader::default(), Origin::default()).unwrap_err();
            assert!(e.contains(column), "{e}");
        }
    }

    #[test]
    fn memory_named_without_mb_is_told_apart() {
        for name in [
            "rss",
            "limit",
            "rss_bytes",
            "rss_kb",
            "rss_kib",
            "rss_mib",
            "rss_gb",
            "limit_bytes",
            "limit_kb",
            "base_limit",
            "hard_limit_bytes",
            "headroom",
            "headroom_mib",
            "rss_bytes_max",
        ] {
            assert!(unitless_memory(name).is_some(), "{name}");
        }
        assert_eq!(unitless_memory("limit_bytes").as_deref(), Some("limit_mb"));
        assert_eq!(
            unitless_memory("hard_limit_kb").as_deref(),
            Some("hard_limit_mb")
        );
        for name in COLUMNS.iter().chain(&[
            "rss_mb_p99",
            "limit_requests",
            "limit_ms",
            "rss_pct",
            "rssi",
            "limits",
            "kind",
        ]) {
            assert_eq!(unitless_memory(name), None, "{name}");
        }
    }
}
