//! The report page: one HTML file with inline CSS and inline SVG, readable
//! with scripts off and nothing fetched. Every text that comes from data is
//! escaped here.

use super::{Grid, KeyedTable, Report, palette as pal};
use serde_json::Value;
use std::fmt::Write;

/// Escapes text for HTML content and attribute values.
pub fn escape(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c => out.push(c),
        }
    }
    out
}

/// A unit and the factor a value is multiplied by to show in it.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Unit {
    pub label: &'static str,
    pub scale: f64,
}

/// The unit of a summary key, from its suffix (units last in every name),
/// after a statistic suffix: `latency_ms_p99` is in ms, `_fraction` shows
/// as a percentage.
pub fn unit(key: &str) -> Unit {
    let stats = [
        "_p10", "_p50", "_p90", "_p99", "_median", "_mean", "_min", "_max",
    ];
    let base = stats
        .iter()
        .find_map(|s| key.strip_suffix(s))
        .unwrap_or(key);
    let u = |label, scale| Unit { label, scale };
    let table: [(&str, Unit); 8] = [
        ("_fraction", u("%", 100.0)),
        ("_per_hour", u("/h", 1.0)),
        ("_mb_s", u("MB·s", 1.0)),
        ("_mb", u("MB", 1.0)),
        ("_ms", u("ms", 1.0)),
        ("_s", u("s", 1.0)),
        ("_h", u("h", 1.0)),
        ("requests_per_worker", u("requests", 1.0)),
    ];
    table
        .iter()
        .find(|(s, _)| base.ends_with(s))
        .map_or(u("", 1.0), |(_, unit)| *unit)
}

/// A number for reading: integers as they are, others to about four
/// significant digits.
pub fn number(v: f64) -> String {
    if v == v.trunc() && v.abs() < 1e15 {
        return format!("{v:.0}");
    }
    let a = v.abs();
    let decimals = if a >= 1000.0 {
        1
    } else if a >= 1.0 {
        3
    } else {
        (3.0 - a.log10().floor()).clamp(3.0, 8.0) as usize
    };
    let s = format!("{v:.decimals$}");
    let s = s.trim_end_matches('0').trim_end_matches('.');
    s.to_string()
}

/// A summary value as shown, and its unit.
pub fn show(key: &str, v: &Value) -> (String, &'static str) {
    match v {
        Value::Number(n) => {
            let u = unit(key);
            let x = n.as_f64().unwrap_or(f64::NAN);
            let text = if n.is_f64() || u.scale != 1.0 {
                number(x * u.scale)
            } else {
                n.to_string()
            };
            (text, u.label)
        }
        Value::Null => ("n/a".into(), ""),
        Value::String(s) => (s.clone(), ""),
        other => (other.to_string(), ""),
    }
}

const CSS: &str = "
body { font-family: sans-serif; margin: 24px auto; padding: 0 16px; max-width: 1440px; color: #222; }
h1 { font-size: 26px; margin-bottom: 4px; }
h2 { font-size: 20px; margin-top: 32px; border-bottom: 1px solid #ddd; }
p.meta { color: #666; margin-top: 0; }
table { border-collapse: collapse; font-size: 14px; margin: 8px 0; }
th, td { padding: 3px 10px; border-bottom: 1px solid #eee; text-align: left; }
td.num { text-align: right; font-variant-numeric: tabular-nums; }
div.cols { display: flex; flex-wrap: wrap; gap: 0 28px; align-items: flex-start; }
figure { margin: 8px 0 24px 0; }
figure svg { box-sizing: border-box; max-width: 100%; height: auto; border: 1px solid #eee; }
figcaption { color: #555; font-size: 14px; max-width: 1100px; }
ul.notes li { margin: 4px 0; }
nav a { margin-right: 14px; }
div.wide { overflow-x: auto; }
table.compare tr.head td:first-child { font-weight: bold; }
td.better { background: #d7eee9; color: #01665e; }
td.worse { background: #f3e3cc; color: #8c510a; }
details { margin: 6px 0 12px 0; }
";

/// The whole page.
pub fn page(r: &Report) -> String {
    let mut h = String::new();
    let kind = r.kind.map_or("fleetsim", |k| k.label());
    let _ = write!(
        h,
        "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n\
         <title>fleetsim report: {name}</title>\n<style>{CSS}</style>\n</head>\n<body>\n\
         <h1>fleetsim report: {name}</h1>\n<p class=\"meta\">{kind} output</p>\n",
        name = escape(&r.name),
        kind = escape(kind),
    );
    h.push_str("<nav>");
    if r.summary.is_some() || !r.tables.is_empty() {
        h.push_str("<a href=\"#summary\">summary</a>");
    }
    for c in &r.charts {
        let _ = write!(
            h,
            "<a href=\"#{}\">{}</a>",
            anchor(&c.file),
            escape(&c.title)
        );
    }
    h.push_str("</nav>\n");
    if let Some(m) = &r.made_by {
        made_by(&mut h, m);
    }
    if let Some(s) = &r.summary {
        summary_table(&mut h, &s.0);
    }
    if !r.tables.is_empty() {
        h.push_str("<h2 id=\"summary\">Summary</h2>\n<div class=\"cols\">\n");
        for t in &r.tables {
            keyed_table(&mut h, t);
        }
        h.push_str("</div>\n");
    }
    for g in &r.grids {
        grid(&mut h, g);
    }
    for x in &r.extra_html {
        h.push_str(x);
    }
    if !r.notes.is_empty() {
        h.push_str("<ul class=\"notes\">\n");
        for n in &r.notes {
            let _ = writeln!(h, "<li>{}</li>", escape(n));
        }
        h.push_str("</ul>\n");
    }
    for c in &r.charts {
        let _ = write!(
            h,
            "<h2 id=\"{id}\">{title}</h2>\n<figure>\n{svg}\n<figcaption>{cap} \
             (<code>{file}</code>)</figcaption>\n</figure>\n",
            id = anchor(&c.file),
            title = escape(&c.title),
            svg = inline_svg(&c.svg),
            cap = escape(&c.caption),
            file = escape(&c.file),
        );
    }
    for g in &r.after {
        grid(&mut h, g);
    }
    let _ = write!(
        h,
        "<p class=\"meta\">Colours: <span style=\"color:{}\">lease acquired or gate open</span>, \
         <span style=\"color:{}\">pressure (the lease's exit; a ring: pressure=true)</span>, \
         <span style=\"color:{}\">hard ceiling (the lease's exit, the ceiling line)</span>, \
         <span style=\"color:{}\">a rate gate's exit</span>, \
         <span style=\"color:{}\">held</span>, <span style=\"color:{}\">OOM kill</span>, \
         <span style=\"color:{}\">retry_ok</span>, <span style=\"color:{}\">fetch_failed</span> \
         in every chart.</p>\n</body>\n</html>\n",
        pal::hex(pal::ACQUIRED),
        pal::hex(pal::BYPASS_PRESSURE),
        pal::hex(pal::BYPASS_CEILING),
        pal::hex(pal::RATE_GATE_EXIT),
        pal::hex(pal::HELD),
        pal::hex(pal::OOM),
        pal::hex(pal::RETRY_OK),
        pal::hex(pal::FETCH_FAILED),
    );
    h
}

/// What made a run: the reproduce command, the model, the keys that differ
/// from the embedded default, then every other key folded away.
fn made_by(h: &mut String, m: &super::provenance::MadeBy) {
    let _ = write!(
        h,
        "<h2 id=\"made-by\">What made this run</h2>\n<table class=\"made\">\n\
         <tr><th>reproduce</th><td><code>{}</code></td></tr>\n\
         <tr><th>model</th><td>{}</td></tr>\n<tr><th>scenario</th><td>{}</td></tr>\n</table>\n",
        escape(&m.reproduce),
        escape(&m.model),
        escape(&m.scenario),
    );
    let row = |h: &mut String, s: &super::provenance::Setting| {
        let _ = writeln!(
            h,
            "<tr><td><code>{}</code></td><td class=\"num\">{}</td><td class=\"num\">{}</td></tr>",
            escape(&s.key),
            escape(&s.value),
            escape(s.default.as_deref().unwrap_or("(no such key)")),
        );
    };
    let header = "<tr><th>key</th><th>this run</th><th>default</th></tr>\n";
    let _ = writeln!(
        h,
        "<h3>Policy and scenario: {} keys differ from the embedded default ({})</h3>",
        m.differing.len(),
        escape(&m.default_name)
    );
    if !m.differing.is_empty() {
        let _ = write!(h, "<table class=\"differing\">\n{header}");
        for s in &m.differing {
            row(h, s);
        }
        h.push_str("</table>\n");
    }
    if !m.same.is_empty() {
        let _ = write!(
            h,
            "<details><summary>the other {} keys, as the default has them</summary>\n\
             <table>\n{header}",
            m.same.len()
        );
        for s in &m.same {
            row(h, s);
        }
        h.push_str("</table>\n</details>\n");
    }
}

fn anchor(file: &str) -> String {
    file.trim_end_matches(".svg")
        .chars()
        .map(|c| if c.is_ascii_alphanumeric() { c } else { '-' })
        .collect()
}

/// An SVG document as an element of the page: inline SVG needs no XML
/// namespace declaration (and the page then names no URL at all).
pub fn inline_svg(svg: &str) -> String {
    svg.replacen(" xmlns=\"http://www.w3.org/2000/svg\"", "", 1)
        .trim()
        .to_string()
}

fn summary_table(h: &mut String, entries: &[(String, Value)]) {
    h.push_str("<h2 id=\"summary\">Summary (summary.json)</h2>\n<div class=\"cols\">\n");
    let per = entries.len().div_ceil(3).max(1);
    for part in entries.chunks(per) {
        h.push_str("<table class=\"summary\">\n");
        h.push_str("<tr><th>metric</th><th>value</th><th>unit</th></tr>\n");
        for (k, v) in part {
            let (text, unit) = show(k, v);
            let class = if matches!(v, Value::Number(_)) {
                " class=\"num\""
            } else {
                ""
            };
            let _ = writeln!(
                h,
                "<tr><td>{key}</td><td{class} data-key=\"{key}\" data-value=\"{raw}\">{text}</td>\
                 <td>{unit}</td></tr>",
                key = escape(k),
                raw = escape(&raw(v)),
                text = escape(&text),
                unit = escape(unit),
            );
        }
        h.push_str("</table>\n");
    }
    h.push_str("</div>\n");
}

/// A keyed table: each value cell carries its JSON pointer and raw value.
fn keyed_table(h: &mut String, t: &KeyedTable) {
    let _ = writeln!(
        h,
        "<table class=\"summary\">\n<caption>{}</caption>\n\
         <tr><th>figure</th><th>value</th><th>unit</th></tr>",
        escape(&t.title)
    );
    for r in &t.rows {
        let scale = if r.unit == "%" { 100.0 } else { 1.0 };
        let (text, class) = match &r.value {
            Value::Number(n) if n.is_f64() || scale != 1.0 => (
                number(n.as_f64().unwrap_or(f64::NAN) * scale),
                " class=\"num\"",
            ),
            Value::Number(n) => (n.to_string(), " class=\"num\""),
            Value::Null => ("n/a".into(), ""),
            Value::String(s) => (s.clone(), ""),
            other => (other.to_string(), ""),
        };
        let _ = writeln!(
            h,
            "<tr><td>{label}</td><td{class} data-key=\"{key}\" data-value=\"{raw}\">{text}</td>\
             <td>{unit}</td></tr>",
            label = escape(&r.label),
            key = escape(&r.key),
            raw = escape(&raw(&r.value)),
            text = escape(&text),
            unit = escape(r.unit),
        );
    }
    h.push_str("</table>\n");
}

/// A value as it is in the JSON file (strings without their quotes).
fn raw(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

fn grid(h: &mut String, g: &Grid) {
    let _ = writeln!(
        h,
        "<h2>{}</h2>\n<div class=\"wide\">\n<table>",
        escape(&g.title)
    );
    h.push_str("<tr>");
    for c in &g.header {
        let _ = write!(h, "<th>{}</th>", escape(c));
    }
    h.push_str("</tr>\n");
    for r in &g.rows {
        h.push_str("<tr>");
        for c in r {
            let num = c.parse::<f64>().is_ok();
            let class = if num { " class=\"num\"" } else { "" };
            let _ = write!(h, "<td{class}>{}</td>", escape(c));
        }
        h.push_str("</tr>\n");
    }
    h.push_str("</table>\n</div>\n");
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn units_from_suffixes() {
        assert_eq!(unit("max_rss_mb").label, "MB");
        assert_eq!(unit("overshoot_mb_s").label, "MB·s");
        assert_eq!(unit("over_ceiling_dwell_max_s").label, "s");
        assert_eq!(unit("latency_ms_p99").label, "ms");
        assert_eq!(unit("wait_ms_mean").label, "ms");
        assert_eq!(
            unit("capacity_loss_fraction"),
            Unit {
                label: "%",
                scale: 100.0
            }
        );
        assert_eq!(unit("recycles_per_hour").label, "/h");
        assert_eq!(unit("duration_h").label, "h");
        assert_eq!(unit("requests_per_worker_p10").label, "requests");
        assert_eq!(unit("oom_kills").label, "");
        assert_eq!(unit("holds_cooldown").label, "");
    }

    #[test]
    fn numbers_read_well() {
        assert_eq!(number(90.0), "90");
        assert_eq!(number(3.75), "3.75");
        assert_eq!(number(710.2346), "710.235");
        assert_eq!(number(12345.67), "12345.7");
        assert_eq!(number(0.000123456), "0.0001235");
    }

    #[test]
    fn escapes_markup() {
        assert_eq!(
            escape("<a href='x'>&\"</a>"),
            "&lt;a href=&#39;x&#39;&gt;&amp;&quot;&lt;/a&gt;"
        );
    }

    #[test]
    fn fractions_show_as_percent() {
        let v: Value = serde_json::from_str("0.5234").unwrap();
        assert_eq!(
            show("recycles_low_margin_fraction", &v),
            ("52.34".into(), "%")
        );
        let v: Value = serde_json::from_str("12").unwrap();
        assert_eq!(show("oom_kills", &v), ("12".into(), ""));
    }
}
