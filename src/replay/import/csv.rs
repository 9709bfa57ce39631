//! CSV with a header: the schema `fleetsim run` writes to `events.csv`.
//! Columns are found by name; extra columns are ignored, optional ones may
//! be missing, `ts` and `event` are required. A CSV with no `event` column
//! whose header names `rss_mb` and `limit_mb` is a platform's recycle log
//! (one row per recycle, as issue 14's recordings are): each row is read as
//! a `worker_recycled` (`parse_recycles`). The time column may also be
//! spelt `timestamp`, `time`, `time_s`, `t` or `t_s` (`TS_ALIASES`). A bad
//! row is an error naming the file, the line and the column.

use super::ImportError;
use super::fields::{self, COLUMNS, REQUIRED, Row};
use crate::replay::recording::{Format, Origin, Part, Source};
use crate::replay::time::TsReader;
use std::collections::HashMap;

/// Other names a recording's time column goes by (a platform's export, a
/// notebook's data frame): read as `ts` when the header has no `ts` and
/// names exactly one of them.
pub const TS_ALIASES: [&str; 5] = ["timestamp", "time", "time_s", "t", "t_s"];

/// Whether a first line looks like this format's header.
pub fn looks_like(first_line: &str) -> bool {
    let names = folded(first_line);
    REQUIRED.iter().all(|r| names.iter().any(|n| n == r))
}

/// Whether a first line is a recycle log's header: a time column,
/// `rss_mb` and `limit_mb`, and no `event`.
pub fn looks_like_recycles(first_line: &str) -> bool {
    let names = folded(first_line);
    let has = |c: &str| names.iter().any(|n| n == c);
    ["ts", "rss_mb", "limit_mb"].into_iter().all(has) && !has("event")
}

/// A first line's names as the importers match them (`folded_names`).
pub fn folded(first_line: &str) -> Vec<String> {
    // At most one name past `MAX_COLUMNS`: enough to tell a format; the
    // reader refuses a wider header (`check_width`).
    let mut names: Vec<String> = first_line
        .split(',')
        .take(MAX_COLUMNS + 1)
        .map(|n| n.trim().trim_matches('"').to_ascii_lowercase())
        .collect();
    alias_ts(&mut names);
    names
}

/// Renames the one `TS_ALIASES` column to `ts` when there is no `ts`.
fn alias_ts(names: &mut [String]) {
    if names.iter().any(|n| n == "ts") {
        return;
    }
    let mut found = names
        .iter()
        .enumerate()
        .filter(|(_, n)| TS_ALIASES.contains(&n.as_str()))
        .map(|(i, _)| i);
    if let (Some(i), None) = (found.next(), found.next()) {
        names[i] = "ts".to_string();
    }
}

pub fn parse(name: &str, text: &str) -> Result<Part, ImportError> {
    parse_as(name, text, None)
}

/// A recycle log with no `event` column: every row a `worker_recycled`.
/// `Ok(None)` when the rows are not recycles: `rss_mb` is below
/// `limit_mb` on most rows that give both (a sampled RSS series with its
/// limit beside it), which the caller reads as a series instead.
pub fn parse_recycles(name: &str, text: &str) -> Result<Option<Part>, ImportError> {
    let part = parse_as(name, text, Some("worker_recycled"))?;
    Ok(fields::mostly_recycles(&part.events).then_some(part))
}

/// Reads the rows; `implied` is the event of every row when the header
/// has no `event` column.
fn parse_as(name: &str, text: &str, implied: Option<&'static str>) -> Result<Part, ImportError> {
    check_width(name, text)?;
    let mut reader = csv::ReaderBuilder::new()
        .has_headers(true)
        .trim(csv::Trim::All)
        .from_reader(text.as_bytes());
    let header = reader.headers().map_err(|e| error(name, &e))?.clone();
    let index = column_index(name, &header, implied.is_some())?;
    let event_i = COLUMNS.iter().position(|c| *c == "event");
    let mut ts = TsReader::default();
    let mut events = Vec::new();
    for record in reader.records() {
        let record = record.map_err(|e| error(name, &e))?;
        let line = record.position().map_or(0, |p| p.line() as usize);
        let mut values = [None; COLUMNS.len()];
        for (v, i) in values.iter_mut().zip(&index) {
            *v = i.and_then(|i| record.get(i));
        }
        if let (Some(event), Some(i)) = (implied, event_i) {
            values[i] = Some(event);
        }
        let origin = Origin { source: 0, line };
        let event = fields::event(&Row { values }, &mut ts, origin)
            .map_err(|reason| ImportError::row(name, line, reason))?;
        events.push(event);
    }
    if events.is_empty() {
        return Err(ImportError::row(
            name,
            1,
            "a header and no rows: nothing was recorded".to_string(),
        ));
    }
    let format = if implied.is_some() {
        Format::RecycleCsv
    } else {
        Format::Csv
    };
    let mut source = Source::new(name, format);
    source.time_base = ts.base();
    source.events = events.len();
    Ok(Part::new(source, events))
}

/// The most columns a recording's header may name: the schema has 18
/// and an export adds its own, a few dozen, a few hundred at most; past
/// this a header is no recording's (a row pasted as a header, a wide
/// pivot), and refusing it keeps the names' memory and matching bounded.
pub const MAX_COLUMNS: usize = 1000;

/// The header's names as the importers match them (also the RSS series'
/// reader's): in ASCII lower case, so a spreadsheet's or a BI tool's
/// export (`TS,Event,RSS_MB`) reads as the columns it names; every
/// column's name is lower case and there is no other spelling it could
/// mean. An empty name (a stray comma) is refused, and so is a column
/// named twice in any case: which one a reader takes would be a guess;
/// so is a header of more than `MAX_COLUMNS` columns.
pub fn folded_names(name: &str, header: &csv::StringRecord) -> Result<Vec<String>, ImportError> {
    if header.len() > MAX_COLUMNS {
        return Err(too_wide(name, header.len()));
    }
    let mut names: Vec<String> = header.iter().map(str::to_ascii_lowercase).collect();
    // Each name's first field and the next that names it again: the
    // first name (in field order) with a second is the one refused.
    let mut seen: HashMap<&str, (usize, Option<usize>)> = HashMap::with_capacity(names.len());
    for (i, h) in names.iter().enumerate() {
        seen.entry(h.as_str())
            .and_modify(|(_, second)| {
                second.get_or_insert(i);
            })
            .or_insert((i, None));
    }
    for (i, h) in names.iter().enumerate() {
        if h.is_empty() {
            return Err(ImportError::row(
                name,
                1,
                format!(
                    "field {} of the header is an empty column name: name every column \
                     (a stray comma makes one)",
                    i + 1
                ),
            ));
        }
        if let Some(&(first, Some(j))) = seen.get(h.as_str())
            && first == i
        {
            let (a, b) = (&header[i], &header[j]);
            let spelt = if a == b {
                String::new()
            } else {
                format!(
                    ", as `{}` and `{}`",
                    crate::text::one_line(a),
                    crate::text::one_line(b)
                )
            };
            return Err(ImportError::row(
                name,
                1,
                format!(
                    "the header names column `{}` twice (fields {} and {}{spelt})",
                    crate::text::one_line(h),
                    i + 1,
                    j + 1
                ),
            ));
        }
    }
    if let Some(why) = header
        .iter()
        .find_map(|h| fields::unitless_memory_reason("column", h))
    {
        return Err(ImportError::row(name, 1, why));
    }
    alias_ts(&mut names);
    Ok(names)
}

/// A header of `columns` columns, more than `MAX_COLUMNS`: refused on line 1.
fn too_wide(name: &str, columns: usize) -> ImportError {
    ImportError::row(
        name,
        1,
        format!(
            "the header has {columns} columns, more than the {MAX_COLUMNS} a recording's may \
             have: keep the recording's columns (`ts`, `event`, `rss_mb`, ...) and drop the rest"
        ),
    )
}

/// Refuses a first line of more than `MAX_COLUMNS` fields before the CSV
/// reader holds them all (a 256 MiB line of commas is 10^8 fields). It
/// counts commas, quoted ones too: a header that needs more than
/// `MAX_COLUMNS` of them is refused either way.
pub fn check_width(name: &str, text: &str) -> Result<(), ImportError> {
    let Some(first) = text.lines().find(|l| !l.trim().is_empty()) else {
        return Ok(());
    };
    let fields = first.bytes().filter(|b| *b == b',').count() + 1;
    if fields > MAX_COLUMNS {
        return Err(too_wide(name, fields));
    }
    Ok(())
}

/// For each of `COLUMNS`, its position in the header; `implied_event`:
/// the rows' event is given, so the header needs no `event` column.
fn column_index(
    name: &str,
    header: &csv::StringRecord,
    implied_event: bool,
) -> Result<Vec<Option<usize>>, ImportError> {
    let names = folded_names(name, header)?;
    let index: Vec<Option<usize>> = COLUMNS
        .iter()
        .map(|c| names.iter().position(|h| h == c))
        .collect();
    for r in REQUIRED {
        if names.iter().all(|h| h != r) && !(implied_event && r == "event") {
            return Err(ImportError::row(
                name,
                1,
                format!("the header has no `{r}` column"),
            ));
        }
    }
    Ok(index)
}

/// A csv crate error as a row error naming the file and line.
pub(super) fn error(name: &str, e: &csv::Error) -> ImportError {
    let line = e.position().map_or(0, |p| p.line() as usize);
    let reason = match e.kind() {
        csv::ErrorKind::UnequalLengths {
            expected_len, len, ..
        } => format!("the row has {len} fields, the header {expected_len}"),
        csv::ErrorKind::Utf8 { .. } => "not UTF-8 text".to_string(),
        _ => e.to_string(),
    };
    ImportError::row(name, line, reason)
}

#[cfg(test)]
mod tests {
    use super::*;

    const GOOD: &str = "ts,event,instance,rss_mb,limit_mb,pressure,lease,extra\n\
                        10.0,worker_recycled,inst-0,541.0,498,false,acquired,x\n\
                        70.5,retry_ok,inst-1,,,,none,y\n";

    #[test]
    fn reads_good_rows_ignoring_extra_columns() {
        let p = parse("a.csv", GOOD).unwrap();
        assert_eq!(p.events.len(), 2);
        assert_eq!(p.events[0].rss_mb, Some(541.0));
        assert_eq!(p.events[0].origin.line, 2);
        assert_eq!(p.events[1].origin.line, 3);
        assert_eq!(p.events[1].rss_mb, None);
        assert_eq!(
            p.source.time_base,
            Some(crate::replay::time::TimeBase::WindowSeconds)
        );
    }

    #[test]
    fn bad_rows_name_file_line_and_column() {
        let bad = "ts,event,rss_mb\n1,worker_recycled,500\n2,worker_recycled,lots\n";
        let e = parse("b.csv", bad).unwrap_err().to_string();
        assert!(e.starts_with("b.csv:3: column `rss_mb`"), "{e}");
        let short = "ts,event,rss_mb\n1,worker_recycled\n";
        let e = parse("c.csv", short).unwrap_err().to_string();
        assert!(e.starts_with("c.csv:2: the row has 2 fields"), "{e}");
        let e = parse("e.csv", "ts,event,rss_mb,rss_mb\n1,retry_ok,1,2\n")
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("e.csv:1: the header names column `rss_mb` twice (fields 3 and 4)"),
            "{e}"
        );
        let e = parse("f.csv", "ts,event\n").unwrap_err().to_string();
        assert!(e.contains("f.csv:1: a header and no rows"), "{e}");
        let no_event = "ts,kind\n1,x\n";
        let e = parse("d.csv", no_event).unwrap_err().to_string();
        assert!(
            e.contains("d.csv:1: the header has no `event` column"),
            "{e}"
        );
    }

    #[test]
    fn a_header_in_another_case_names_the_same_columns() {
        let excel = "TS,Event,Instance,RSS_MB\n10,worker_recycled,inst-0,541\n";
        assert!(looks_like("TS,Event,Instance,RSS_MB"));
        let p = parse("x.csv", excel).unwrap();
        assert_eq!(p.events[0].rss_mb, Some(541.0));
        assert_eq!(p.events[0].instance.as_deref(), Some("inst-0"));
        let e = parse("y.csv", "ts,event,rss_mb,RSS_MB\n1,retry_ok,1,2\n")
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("y.csv:1: the header names column `rss_mb` twice (fields 3 and 4, as `rss_mb` and `RSS_MB`)"),
            "{e}"
        );
    }

    #[test]
    fn an_empty_column_name_is_refused_on_line_1() {
        for (text, field) in [
            ("ts,event,,rss_mb\n1,retry_ok,x,2\n", 3),
            ("ts,event,rss_mb,\n1,retry_ok,2,\n", 4),
            ("ts,event, \n1,retry_ok,\n", 3),
        ] {
            let e = parse("z.csv", text).unwrap_err().to_string();
            assert!(
                e.starts_with(&format!(
                    "z.csv:1: field {field} of the header is an empty column name"
                )),
                "{text:?}: {e}"
            );
        }
    }

    #[test]
    fn a_wide_header_is_refused_at_once_on_line_1() {
        // 200,000 names took half a minute to check for repeats, pair by pair.
        let wide: Vec<String> = (0..200_000).map(|i| format!("c{i}")).collect();
        let text = format!("ts,event,{}\n", wide.join(","));
        let started = std::time::Instant::now();
        let e = parse("w.csv", &text).unwrap_err().to_string();
        assert!(
            e.starts_with("w.csv:1: the header has 200002 columns, more than the 1000"),
            "{e}"
        );
        assert!(
            started.elapsed().as_secs_f64() < 1.0,
            "{:?}",
            started.elapsed()
        );
        // At the bound, a header reads; its repeats are found in one pass,
        // the first name given twice reported with its next field.
        let mut names: Vec<String> = (0..MAX_COLUMNS - 2).map(|i| format!("c{i}")).collect();
        let ok = format!(
            "ts,event,{}\n1,retry_ok{}\n",
            names.join(","),
            ",x".repeat(names.len())
        );
        assert_eq!(parse("ok.csv", &ok).unwrap().events.len(), 1);
        names[MAX_COLUMNS - 3] = "C5".into();
        names[10] = "ts".into();
        let text = format!("ts,event,{}\n", names.join(","));
        let header = csv::StringRecord::from(text.trim_end().split(',').collect::<Vec<_>>());
        let e = folded_names("d.csv", &header).unwrap_err().to_string();
        assert!(
            e.starts_with("d.csv:1: the header names column `ts` twice (fields 1 and 13)"),
            "{e}"
        );
    }

    #[test]
    fn memory_columns_without_mb_are_refused_naming_the_column() {
        // Ignored, `rss` and `rss_bytes` lost every row's RSS without a word.
        for (header, column, mb) in [
            ("ts,event,instance,rss,limit", "rss", "rss_mb"),
            ("ts,event,instance,rss_mb,limit", "limit", "limit_mb"),
            ("ts,event,RSS_Bytes,limit_mb", "RSS_Bytes", "rss_mb"),
            ("ts,event,rss_mb,limit_kb", "limit_kb", "limit_mb"),
            (
                "ts,event,rss_mb,hard_limit_mib",
                "hard_limit_mib",
                "hard_limit_mb",
            ),
            ("ts,rss_kb,limit_mb", "rss_kb", "rss_mb"),
        ] {
            let cells = header.split(',').count();
            let text = format!("{header}\n1,worker_recycled{}\n", ",1".repeat(cells - 2));
            let e = parse("m.csv", &text).unwrap_err().to_string();
            assert!(
                e.starts_with(&format!(
                    "m.csv:1: column `{column}`: memory columns are in MB and say so \
                     (the `_mb` suffix): convert the values to MB and name the column `{mb}`"
                )),
                "{header}: {e}"
            );
        }
        let all = "ts,event,rss_mb,limit_mb,base_limit_mb,hard_limit_mb,headroom_mb,limit_ms\n\
                   1,worker_recycled,600,500,500,700,-100,3\n";
        let p = parse("ok.csv", all).unwrap();
        assert_eq!(p.events[0].hard_limit_mb, Some(700.0));
        assert_eq!(p.events[0].headroom_mb, Some(-100.0));
    }

    #[test]
    fn a_name_past_256_bytes_is_refused_naming_line_and_column() {
        // A 50 MB instance went whole to stdout and into analysis.json.
        let head = "ts,event,instance,worker,lease,trigger,rss_mb\n";
        let at_most = "i".repeat(crate::replay::import::MAX_NAME_BYTES);
        let ok = format!("{head}1,worker_recycled,{at_most},w,acquired,t,500\n");
        assert_eq!(
            parse("ok.csv", &ok).unwrap().events[0].instance,
            Some(at_most)
        );
        let long = "n".repeat(1 << 20);
        for (row, column) in [
            (format!("1,worker_recycled,{long},w,,,500"), "instance"),
            (format!("1,worker_recycled,a,{long},,,500"), "worker"),
            (format!("1,{long},a,w,,,500"), "event"),
            (format!("1,worker_recycled,a,w,{long},,500"), "lease"),
            (format!("1,worker_recycled,a,w,,{long},500"), "trigger"),
        ] {
            let text = format!("{head}0,retry_ok,,,,,\n{row}\n");
            let e = parse("n.csv", &text).unwrap_err().to_string();
            assert_eq!(
                e,
                format!(
                    "n.csv:3: column `{column}`: a name of 1048576 bytes, more than the 256 a \
                     recorded name may have"
                )
            );
        }
    }
}
