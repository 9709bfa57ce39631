//! JSON Lines with the recording schema's keys (analytics exports): one
//! object per line; numbers may be JSON numbers or strings, `null` is
//! absent, other keys are ignored. Blank lines are skipped. As in a CSV,
//! the time may be keyed `timestamp`, `time`, ... (`csv::TS_ALIASES`), and
//! a file whose first object has no `event` but `rss_mb` and `limit_mb` is
//! a recycle log: a line without `event` is a `worker_recycled`.

use super::ImportError;
use super::csv::MAX_COLUMNS;
use super::fields::{self, COLUMNS, Row};
use crate::replay::recording::{Format, Origin, Part, Source};
use crate::replay::time::TsReader;
use serde_json::Value;
use std::collections::HashMap;

/// Whether a first line looks like this format.
pub fn looks_like(first_line: &str) -> bool {
    first_line.trim_start().starts_with('{')
}

pub fn parse(name: &str, text: &str) -> Result<Part, ImportError> {
    let mut ts = TsReader::default();
    let mut events = Vec::new();
    let event_i = COLUMNS.iter().position(|c| *c == "event");
    let mut recycle_log = None;
    for (i, line) in text.lines().enumerate() {
        let line_no = i + 1;
        if line.trim().is_empty() {
            continue;
        }
        let values = scalars(line).map_err(|r| ImportError::row(name, line_no, r))?;
        let mut row = Row {
            values: [None; COLUMNS.len()],
        };
        for (slot, v) in row.values.iter_mut().zip(&values) {
            *slot = v.as_deref();
        }
        let has = |c: &str| {
            COLUMNS
                .iter()
                .position(|k| *k == c)
                .is_some_and(|i| row.values[i].is_some())
        };
        let implied =
            *recycle_log.get_or_insert_with(|| !has("event") && has("rss_mb") && has("limit_mb"));
        if let (true, Some(i)) = (implied, event_i) {
            row.values[i] = row.values[i].or(Some("worker_recycled"));
        }
        let origin = Origin {
            source: 0,
            line: line_no,
        };
        let event =
            fields::event(&row, &mut ts, origin).map_err(|r| ImportError::row(name, line_no, r))?;
        events.push(event);
    }
    if recycle_log == Some(true) && !fields::mostly_recycles(&events) {
        return Err(ImportError::file(
            name,
            "no `event` key, and `rss_mb` is below `limit_mb` on most lines, so the lines are \
             not recycles (a recycle's RSS is at or over its limit): add an `event` key \
             (`worker_recycled` for a recycle)",
        ));
    }
    let mut source = Source::new(name, Format::Jsonl);
    source.time_base = ts.base();
    source.events = events.len();
    Ok(Part::new(source, events))
}

/// A JSON object's members in order, duplicates kept (a `Map` would keep
/// only the last of a key given twice, silently), at most `MAX_COLUMNS`
/// of them; `.1` counts every member, those past the bound skipped unread.
struct Members(Vec<(String, Value)>, usize);

impl<'de> serde::Deserialize<'de> for Members {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct Visit;
        impl<'de> serde::de::Visitor<'de> for Visit {
            type Value = Members;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("a JSON object")
            }
            fn visit_map<A: serde::de::MapAccess<'de>>(
                self,
                mut m: A,
            ) -> Result<Members, A::Error> {
                use serde::de::IgnoredAny;
                let mut out = Vec::new();
                while out.len() < MAX_COLUMNS {
                    match m.next_entry::<String, Value>()? {
                        Some(kv) => out.push(kv),
                        None => {
                            let n = out.len();
                            return Ok(Members(out, n));
                        }
                    }
                }
                let mut count = out.len();
                while m.next_entry::<IgnoredAny, IgnoredAny>()?.is_some() {
                    count += 1;
                }
                Ok(Members(out, count))
            }
        }
        d.deserialize_map(Visit)
    }
}

/// The line's values for `COLUMNS`, as text. Keys are matched in any case,
/// as the CSV header's names are (`csv::folded_names`: an export's `TS`,
/// `RSS_MB`); a key given twice, in one case or two, is refused.
fn scalars(line: &str) -> Result<Vec<Option<String>>, String> {
    let Members(members, count) =
        serde_json::from_str(line).map_err(|e| format!("not a JSON object: {e}"))?;
    if count > MAX_COLUMNS {
        return Err(format!(
            "an object of {count} keys, more than the {MAX_COLUMNS} a recording's line may \
             have: keep the recording's keys (`ts`, `event`, `rss_mb`, ...) and drop the rest"
        ));
    }
    let mut seen: HashMap<String, &str> = HashMap::with_capacity(members.len());
    for (k, _) in &members {
        if let Some(why) = fields::unitless_memory_reason("key", k) {
            return Err(why);
        }
        if let Some(o) = seen.insert(k.to_ascii_lowercase(), k) {
            let spelt = if o == k {
                String::new()
            } else {
                format!(
                    " (as `{}` and `{}`)",
                    crate::text::one_line(o),
                    crate::text::one_line(k)
                )
            };
            return Err(format!(
                "key `{}` given twice{spelt}: which one is meant is a guess",
                crate::text::one_line(&k.to_ascii_lowercase())
            ));
        }
    }
    let key = |c: &str| {
        members
            .iter()
            .find(|(k, _)| k.eq_ignore_ascii_case(c))
            .map(|(_, v)| v)
    };
    // The time under another name: the one alias given, when `ts` is not.
    let mut aliases = super::csv::TS_ALIASES.iter().filter_map(|a| key(a));
    let ts_alias = match (aliases.next(), aliases.next()) {
        (Some(v), None) => Some(v),
        _ => None,
    };
    let get = |c: &str| key(c).or(if c == "ts" { ts_alias } else { None });
    COLUMNS
        .iter()
        .map(|c| match get(c) {
            None | Some(Value::Null) => Ok(None),
            Some(Value::String(s)) => Ok(Some(s.clone())),
            Some(Value::Number(n)) => Ok(Some(n.to_string())),
            Some(Value::Bool(b)) => Ok(Some(b.to_string())),
            Some(_) => Err(format!("key `{c}`: expected a string, number or boolean")),
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_numbers_strings_and_nulls() {
        let text = r#"{"ts": 1714594622, "event": "worker_recycled", "instance": "inst-A", "rss_mb": 564, "limit_mb": "507", "pressure": false, "lease": null, "extra": [1]}

{"ts": 1714594758.5, "event": "retry_ok"}
"#;
        let p = parse("a.jsonl", text).unwrap();
        assert_eq!(p.events.len(), 2);
        assert_eq!(p.events[0].limit_mb, Some(507.0));
        assert_eq!(p.events[0].lease, None);
        assert_eq!(p.events[1].origin.line, 3);
        assert_eq!(
            p.source.time_base,
            Some(crate::replay::time::TimeBase::UnixSeconds)
        );
    }

    #[test]
    fn a_recycle_log_without_event_keys_is_one_recycle_a_line() {
        let text = r#"{"timestamp": 10.5, "instance": "a", "rss_mb": 564, "limit_mb": 507, "requests": 900}
{"timestamp": 70, "instance": "b", "rss_mb": 530.2, "limit_mb": 512, "requests": 811}
{"timestamp": 75, "event": "retry_ok"}
"#;
        let p = parse("r.jsonl", text).unwrap();
        assert_eq!(p.events.len(), 3);
        assert!(p.events[..2].iter().all(|e| e.is_recycle()));
        assert_eq!((p.events[0].t_s, p.events[1].requests), (10.5, Some(811)));
        assert!(!p.events[2].is_recycle());
        let under = "{\"t\": 1, \"rss_mb\": 400, \"limit_mb\": 500}\n";
        let e = parse("u.jsonl", under).unwrap_err().to_string();
        assert!(
            e.contains("u.jsonl: no `event` key, and `rss_mb` is below"),
            "{e}"
        );
        // Two time keys: which is meant is not guessed.
        let two = "{\"time\": 1, \"timestamp\": 2, \"event\": \"retry_ok\"}\n";
        let e = parse("t.jsonl", two).unwrap_err().to_string();
        assert!(e.contains("t.jsonl:1: column `ts` is empty"), "{e}");
    }

    #[test]
    fn bad_lines_name_file_line_and_key() {
        let e = parse(
            "b.jsonl",
            "{\"ts\": 1, \"event\": \"retry_ok\"}\n{\"ts\": 2,\n",
        )
        .unwrap_err()
        .to_string();
        assert!(e.starts_with("b.jsonl:2: not a JSON object"), "{e}");
        let e = parse(
            "c.jsonl",
            "{\"ts\": 1, \"event\": \"retry_ok\", \"rss_mb\": {}}\n",
        )
        .unwrap_err()
        .to_string();
        assert!(e.starts_with("c.jsonl:1: key `rss_mb`"), "{e}");
        let e = parse(
            "d.jsonl",
            "{\"ts\": 1, \"event\": \"retry_ok\", \"rss_mb\": \"x\"}\n",
        )
        .unwrap_err()
        .to_string();
        assert!(e.starts_with("d.jsonl:1: column `rss_mb`"), "{e}");
        let e = parse(
            "e.jsonl",
            "{\"ts\": 1, \"ts\": 2, \"event\": \"retry_ok\"}\n",
        )
        .unwrap_err()
        .to_string();
        assert!(e.starts_with("e.jsonl:1: key `ts` given twice"), "{e}");
        let e = parse(
            "f.jsonl",
            "{\"TS\": 1, \"ts\": 2, \"event\": \"retry_ok\"}\n",
        )
        .unwrap_err()
        .to_string();
        assert!(
            e.starts_with("f.jsonl:1: key `ts` given twice (as `TS` and `ts`)"),
            "{e}"
        );
    }

    #[test]
    fn keys_are_matched_in_any_case() {
        // A BI tool's export spells the schema's keys in upper case.
        let text = r#"{"TS": 100, "Event": "worker_recycled", "RSS_MB": 564.5, "Limit_MB": 507, "requests": 12}"#;
        let p = parse("upper.jsonl", text).unwrap();
        assert_eq!(p.events.len(), 1);
        assert_eq!(p.events[0].rss_mb, Some(564.5));
        assert_eq!(p.events[0].limit_mb, Some(507.0));
        assert_eq!(p.events[0].requests, Some(12));
    }

    #[test]
    fn an_object_of_too_many_keys_is_refused_at_once() {
        // 100,000 keys took 11 s to check for repeats, pair by pair.
        let keys: Vec<String> = (0..100_000).map(|i| format!("\"k{i}\": 1")).collect();
        let text = format!(
            "{{\"ts\": 1, \"event\": \"retry_ok\"}}\n{{\"ts\": 2, {}}}\n",
            keys.join(", ")
        );
        let started = std::time::Instant::now();
        let e = parse("w.jsonl", &text).unwrap_err().to_string();
        assert!(
            e.starts_with("w.jsonl:2: an object of 100001 keys, more than the 1000"),
            "{e}"
        );
        assert!(
            started.elapsed().as_secs_f64() < 1.0,
            "{:?}",
            started.elapsed()
        );
        let mut keys: Vec<String> = (0..998).map(|i| format!("\"k{i}\": 1")).collect();
        let ok = format!(
            "{{\"ts\": 1, \"event\": \"retry_ok\", {}}}\n",
            keys.join(", ")
        );
        assert_eq!(parse("ok.jsonl", &ok).unwrap().events.len(), 1);
        keys[997] = "\"K3\": 2".into();
        let dup = format!(
            "{{\"ts\": 1, \"event\": \"retry_ok\", {}}}\n",
            keys.join(", ")
        );
        let e = parse("d.jsonl", &dup).unwrap_err().to_string();
        assert!(
            e.starts_with("d.jsonl:1: key `k3` given twice (as `k3` and `K3`)"),
            "{e}"
        );
    }

    #[test]
    fn memory_keys_without_mb_are_refused_naming_the_key() {
        let text = "{\"ts\": 1, \"event\": \"retry_ok\"}\n\
                    {\"ts\": 2, \"event\": \"worker_recycled\", \"rss\": 600, \"limit_mb\": 500}\n";
        let e = parse("m.jsonl", text).unwrap_err().to_string();
        assert!(
            e.starts_with(
                "m.jsonl:2: key `rss`: memory keys are in MB and say so (the `_mb` suffix): \
                 convert the values to MB and name the key `rss_mb`"
            ),
            "{e}"
        );
        let text = "{\"ts\": 1, \"event\": \"worker_recycled\", \"Limit_Bytes\": 5e8}\n";
        let e = parse("b.jsonl", text).unwrap_err().to_string();
        assert!(
            e.starts_with("b.jsonl:1: key `Limit_Bytes`: memory keys"),
            "{e}"
        );
    }
}
