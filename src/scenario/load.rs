//! Reading a scenario: TOML text -> table -> `--set` overrides -> raw
//! mirror -> validated scenario, with errors that name the line and key.

use super::raw::{ProfileKind, RawScenario};
use super::{Scenario, ScenarioError, validate};
use crate::engine::time::SimTime;
use std::path::{Path, PathBuf};

/// The embedded default: the field reports' fleet as deployed.
pub const DEFAULT_SCENARIO: &str = include_str!("../../scenarios/render-2x3.toml");
pub const DEFAULT_SCENARIO_NAME: &str = "render-2x3";

/// One `--set key=value`: a dotted key and a TOML value.
#[derive(Clone, Debug, PartialEq)]
pub struct Override {
    pub key: String,
    pub value: toml::Value,
}

/// Parses `policy.cooldown_s=60`. The value is read as TOML (number, bool,
/// quoted string); anything else is taken as a bare string (`profile=diurnal`).
pub fn parse_override(s: &str) -> Result<Override, String> {
    let (key, value) = s
        .split_once('=')
        .ok_or_else(|| format!("--set `{s}`: expected KEY=VALUE, e.g. policy.cooldown_s=60"))?;
    let key = key.trim();
    if key.is_empty() || key.split('.').any(|k| k.is_empty()) {
        return Err(format!("--set `{s}`: `{key}` is not a dotted key"));
    }
    let value = value.trim();
    let parsed = format!("v = {value}")
        .parse::<toml::Table>()
        .ok()
        .and_then(|mut t| t.remove("v"))
        .unwrap_or_else(|| toml::Value::String(value.to_string()));
    Ok(Override {
        key: key.to_string(),
        value: parsed,
    })
}

fn apply(table: &mut toml::Table, o: &Override) -> Result<(), String> {
    let parts: Vec<&str> = o.key.split('.').collect();
    let (last, parents) = parts.split_last().expect("keys are non-empty");
    let mut t = table;
    for p in parents {
        let entry = t
            .entry(p.to_string())
            .or_insert_with(|| toml::Value::Table(toml::Table::new()));
        t = entry
            .as_table_mut()
            .ok_or_else(|| format!("`{p}` is a value, not a section"))?;
    }
    t.insert(last.to_string(), o.value.clone());
    Ok(())
}

/// How deep `extends` chains may go (a loop would never end).
const MAX_EXTENDS_DEPTH: usize = 8;

/// The names `extends` gives the embedded default by (no file is read).
pub const EXTENDS_DEFAULT: [&str; 2] = ["default", DEFAULT_SCENARIO_NAME];

/// `extends = "base.toml"`: the file's keys are laid over the base's, table
/// by table, so presets share one fleet and workload and differ only in
/// what they set. The path is relative to the file that names it (`dir`:
/// that file's folder, relative to the first file's, which `read_file`
/// resolves), so a chain of files in different folders resolves the same
/// from anywhere; `extends = "default"` (or `"render-2x3"`) is the
/// embedded default.
fn resolve_extends(
    mut table: toml::Table,
    origin: &str,
    dir: &Path,
    read_file: &mut dyn FnMut(&str) -> Result<String, String>,
    depth: usize,
) -> Result<toml::Table, ScenarioError> {
    let Some(base) = table.remove("extends") else {
        return Ok(table);
    };
    let err = |reason: String| ScenarioError {
        origin: origin.to_string(),
        line: None,
        key: Some("extends".into()),
        reason,
    };
    let name = base.as_str().ok_or_else(|| {
        err("must be a file name, e.g. extends = \"render-2x3.toml\", or \"default\"".into())
    })?;
    if depth >= MAX_EXTENDS_DEPTH {
        return Err(err(format!(
            "more than {MAX_EXTENDS_DEPTH} levels of extends (a loop?)"
        )));
    }
    let (text, path, base_dir) = if EXTENDS_DEFAULT.contains(&name) {
        let origin = format!("<embedded {DEFAULT_SCENARIO_NAME}>");
        (DEFAULT_SCENARIO.to_string(), origin, PathBuf::new())
    } else {
        let joined = dir.join(name);
        let path = joined.to_string_lossy().into_owned();
        let text = read_file(&path).map_err(err)?;
        let base_dir = joined.parent().map(Path::to_path_buf).unwrap_or_default();
        (text, path, base_dir)
    };
    let base_table: toml::Table = text.parse().map_err(|e: toml::de::Error| {
        let (line, key, reason) = syntax_error(&text, &e);
        ScenarioError {
            origin: path.clone(),
            line,
            key,
            reason: format!("{reason} (extended by {origin})"),
        }
    })?;
    let mut merged = resolve_extends(base_table, &path, &base_dir, read_file, depth + 1)?;
    merge(&mut merged, table);
    Ok(merged)
}

/// Lays `over` onto `base`: tables merge key by key, other values replace.
fn merge(base: &mut toml::Table, over: toml::Table) {
    for (k, v) in over {
        match (base.get_mut(&k), v) {
            (Some(toml::Value::Table(b)), toml::Value::Table(o)) => merge(b, o),
            (_, v) => {
                base.insert(k, v);
            }
        }
    }
}

/// The 1-based line of a byte offset.
fn line_of(text: &str, offset: usize) -> usize {
    text[..offset.min(text.len())].matches('\n').count() + 1
}

/// The line that sets dotted `key` in `text`, found by tracking `[section]`
/// headers. Good enough for the files people write; `None` when not found.
pub fn find_key_line(text: &str, key: &str) -> Option<usize> {
    let mut section = String::new();
    for (i, line) in text.lines().enumerate() {
        let l = line.trim();
        if let Some(h) = l.strip_prefix('[').and_then(|h| h.strip_suffix(']')) {
            section = h.trim().to_string();
            continue;
        }
        let Some((k, _)) = l.split_once('=') else {
            continue;
        };
        let k = k.trim().trim_matches('"');
        let full = if section.is_empty() {
            k.to_string()
        } else {
            format!("{section}.{k}")
        };
        if full == key {
            return Some(i + 1);
        }
    }
    None
}

/// A TOML syntax error as (line, key, reason): the key is the dotted key
/// the error's line sets (its `[section]` header above, and the text before
/// `=`), so "duplicate key" or an out-of-range integer names it.
pub fn syntax_error(text: &str, e: &toml::de::Error) -> (Option<usize>, Option<String>, String) {
    let reason = e.message().trim().replace('\n', " ");
    let Some(span) = e.span() else {
        return (None, None, reason);
    };
    let line = line_of(text, span.start);
    (Some(line), key_on_line(text, line), reason)
}

/// The dotted key that line `n` (1-based) of `text` sets, if it sets one.
pub fn key_on_line(text: &str, n: usize) -> Option<String> {
    let mut section = String::new();
    for (i, raw) in text.lines().enumerate() {
        let l = raw.trim();
        let header = l
            .strip_prefix("[[")
            .and_then(|h| h.strip_suffix("]]"))
            .or_else(|| l.strip_prefix('[').and_then(|h| h.strip_suffix(']')));
        if let Some(h) = header {
            section = h.trim().to_string();
            if i + 1 == n {
                return Some(section).filter(|s| !s.is_empty());
            }
            continue;
        }
        if i + 1 == n {
            let (k, _) = l.split_once('=')?;
            let k: String = k
                .split('.')
                .map(|p| p.trim().trim_matches('"'))
                .collect::<Vec<_>>()
                .join(".");
            if k.is_empty() || k.starts_with('#') {
                return None;
            }
            return Some(if section.is_empty() {
                k
            } else {
                format!("{section}.{k}")
            });
        }
    }
    None
}

/// A scenario file's TOML with its `extends` chain laid in, before any
/// default or override: what the files set, for telling a user which
/// mechanisms run on defaults they never wrote.
pub fn resolved_table(
    text: &str,
    origin: &str,
    read_file: &mut dyn FnMut(&str) -> Result<String, String>,
) -> Result<toml::Table, ScenarioError> {
    let table: toml::Table = text.parse().map_err(|e: toml::de::Error| {
        let (line, key, reason) = syntax_error(text, &e);
        ScenarioError {
            origin: origin.to_string(),
            line,
            key,
            reason,
        }
    })?;
    resolve_extends(table, origin, Path::new(""), read_file, 0)
}

/// Whether dotted `key` (`fleet.leak`, `policy.hard_limit_mb`) is set in
/// `table` (a `resolved_table`).
pub fn sets_key(table: &toml::Table, key: &str) -> bool {
    let mut parts = key.split('.');
    let Some(first) = parts.next() else {
        return false;
    };
    let mut at = table.get(first);
    for p in parts {
        at = at.and_then(|v| v.as_table()).and_then(|t| t.get(p));
    }
    at.is_some()
}

/// The first stage of `load`: TOML, `extends`, `--set` overrides and the
/// raw mirror, so unknown keys and wrong types, and nothing else. A value
/// that passes here may still fail validation, alone or with others.
pub fn load_raw(
    text: &str,
    origin: &str,
    overrides: &[Override],
    read_file: &mut dyn FnMut(&str) -> Result<String, String>,
) -> Result<RawScenario, ScenarioError> {
    let err = |line, key: Option<String>, reason: String| ScenarioError {
        origin: origin.to_string(),
        line,
        key,
        reason,
    };
    // Every file the extends chain read, so an error in one of them is
    // located there (its name and line), not in the file that extends it.
    let mut extended: Vec<(String, String)> = Vec::new();
    let mut reading = |p: &str| {
        let t = read_file(p)?;
        extended.push((p.to_string(), t.clone()));
        Ok(t)
    };
    let mut table = resolved_table(text, origin, &mut reading)?;
    for o in overrides {
        apply(&mut table, o).map_err(|r| err(None, Some(o.key.clone()), format!("--set: {r}")))?;
    }
    let raw: RawScenario =
        serde_path_to_error::deserialize(toml::Value::Table(table)).map_err(|e| {
            let key = e.path().to_string();
            let from_set = overrides.iter().any(|o| key.starts_with(&o.key));
            let line = if from_set {
                None
            } else {
                find_key_line(text, &key)
            };
            let mut reason = e.inner().message().trim().replace('\n', " ");
            if from_set {
                reason.push_str(" (from --set)");
            }
            let inherited = (line.is_none() && !from_set)
                .then(|| {
                    extended
                        .iter()
                        .find_map(|(p, t)| find_key_line(t, &key).map(|l| (p, l)))
                })
                .flatten();
            if let Some((path, l)) = inherited {
                return ScenarioError {
                    origin: path.clone(),
                    line: Some(l),
                    key: Some(key),
                    reason: format!("{reason} (extended by {origin})"),
                };
            }
            err(line, Some(key).filter(|k| k != "."), reason)
        })?;
    Ok(raw)
}

/// Loads a scenario from TOML text. `origin` names it in errors (a path, or
/// `<embedded render-2x3>`); `read_file` resolves `series_csv` relative to it.
pub fn load(
    text: &str,
    origin: &str,
    overrides: &[Override],
    read_file: &mut dyn FnMut(&str) -> Result<String, String>,
) -> Result<(RawScenario, Scenario), ScenarioError> {
    let err = |line, key: Option<String>, reason: String| ScenarioError {
        origin: origin.to_string(),
        line,
        key,
        reason,
    };
    let raw = load_raw(text, origin, overrides, read_file)?;
    let series = if raw.workload.profile == ProfileKind::Series {
        let path = &raw.workload.series_csv;
        if path.is_empty() {
            return Err(err(
                find_key_line(text, "workload.profile"),
                Some("workload.series_csv".into()),
                "profile = \"series\" needs series_csv = \"FILE.csv\"".into(),
            ));
        }
        let csv_text = read_file(path).map_err(|r| {
            err(
                find_key_line(text, "workload.series_csv"),
                Some("workload.series_csv".into()),
                r,
            )
        })?;
        Some(parse_series(&csv_text).map_err(|r| {
            err(
                None,
                Some("workload.series_csv".into()),
                format!("{path}: {r}"),
            )
        })?)
    } else {
        None
    };
    let scenario = validate(&raw, origin, series).map_err(|mut e| {
        let from_set = overrides
            .iter()
            .any(|o| e.key.as_deref() == Some(o.key.as_str()));
        e.line = e
            .key
            .as_deref()
            .filter(|_| !from_set)
            .and_then(|k| find_key_line(text, k));
        e
    })?;
    Ok((raw, scenario))
}

/// Parses a traffic series: a CSV with header `t_s,rps`, times increasing.
/// Its messages are one line: a quoted cell may hold a line break, which is
/// escaped (found by the `scenario` fuzz target).
pub fn parse_series(text: &str) -> Result<Vec<(SimTime, f64)>, String> {
    let mut rdr = csv::ReaderBuilder::new()
        .trim(csv::Trim::All)
        .from_reader(text.as_bytes());
    let headers = rdr.headers().map_err(|e| format!("line 1: {e}"))?.clone();
    let col = |name: &str| {
        headers
            .iter()
            .position(|h| h == name)
            .ok_or_else(|| format!("line 1: missing column `{name}` (need t_s,rps)"))
    };
    let (ti, ri) = (col("t_s")?, col("rps")?);
    let mut points: Vec<(SimTime, f64)> = Vec::new();
    for (n, rec) in rdr.records().enumerate() {
        let line = n + 2;
        let rec = rec.map_err(|e| format!("line {line}: {e}"))?;
        let num = |i: usize, name: &str| -> Result<f64, String> {
            let s = rec.get(i).unwrap_or("");
            let v: f64 = s.parse().map_err(|_| {
                let s = crate::text::one_line(s);
                format!("line {line}: `{name}` = `{s}` is not a number")
            })?;
            if !v.is_finite() || v < 0.0 {
                let v = crate::text::number(v);
                return Err(format!(
                    "line {line}: `{name}` = {v} must be finite and >= 0"
                ));
            }
            Ok(v)
        };
        let (t, r) = (num(ti, "t_s")?, num(ri, "rps")?);
        if t > 10.0 * 365.0 * 86_400.0 {
            let t = crate::text::number(t);
            return Err(format!("line {line}: t_s = {t} is more than ten years"));
        }
        let t = SimTime::from_secs_f64(t);
        if points.last().is_some_and(|p| p.0 >= t) {
            return Err(format!("line {line}: t_s must increase"));
        }
        points.push((t, r));
    }
    if points.is_empty() {
        return Err("no rows".into());
    }
    Ok(points)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn no_files(p: &str) -> Result<String, String> {
        Err(format!("no file {p}"))
    }

    fn load_str(text: &str, sets: &[&str]) -> Result<Scenario, ScenarioError> {
        let o: Vec<Override> = sets.iter().map(|s| parse_override(s).unwrap()).collect();
        load(text, "t.toml", &o, &mut no_files).map(|(_, s)| s)
    }

    #[test]
    fn the_embedded_default_loads() {
        let s = load_str(DEFAULT_SCENARIO, &[]).unwrap();
        assert_eq!(s.fleet.instances, 2);
        assert_eq!(s.fleet.workers_per_instance, 3);
    }

    #[test]
    fn overrides_change_values() {
        let s = load_str(
            DEFAULT_SCENARIO,
            &["policy.cooldown_s=60", "workload.profile=constant"],
        )
        .unwrap();
        assert!(matches!(
            s.policy.pipeline.gates[0],
            crate::policy::Gate::Cooldown(crate::policy::gates::cooldown::Cooldown {
                cooldown_s: 60.0,
                ..
            })
        ));
        assert!(matches!(
            s.workload.profile,
            crate::traffic::RateProfile::Constant { .. }
        ));
    }

    #[test]
    fn errors_name_line_and_key() {
        let e = load_str("[policy]\ncooldwn_s = 3\n", &[]).unwrap_err();
        assert_eq!(
            (e.line, e.key.as_deref()),
            (Some(2), Some("policy.cooldwn_s"))
        );
        assert!(e.reason.contains("unknown field"), "{e}");
        let e = load_str("[policy]\n\ncooldown_s = -3\n", &[]).unwrap_err();
        assert_eq!(
            (e.line, e.key.as_deref()),
            (Some(3), Some("policy.cooldown_s"))
        );
        let e = load_str("[policy]\ncooldown_s = \"x\"\n", &[]).unwrap_err();
        assert_eq!(
            (e.line, e.key.as_deref()),
            (Some(2), Some("policy.cooldown_s"))
        );
        let e = load_str("[policy\n", &[]).unwrap_err();
        assert_eq!(e.line, Some(1));
        let e = load_str("", &["policy.jitter_mb=600"]).unwrap_err();
        assert_eq!(e.key.as_deref(), Some("policy.jitter_mb"));
        assert_eq!(e.to_string().lines().count(), 1);
    }

    #[test]
    fn extends_lays_a_file_over_its_base() {
        let mut files = |p: &str| match p {
            "base.toml" => Ok(
                "name = \"base\"\n[policy]\ncooldown_s = 60\n[policy.lease]\nttl_s = 90\n".into(),
            ),
            "loop.toml" => Ok("extends = \"loop.toml\"\n".into()),
            _ => Err(format!("no file {p}")),
        };
        let text = "extends = \"base.toml\"\n[policy.lease]\nenabled = false\n";
        let (raw, _) = load(text, "t.toml", &[], &mut files).unwrap();
        assert_eq!(raw.name, "base");
        assert_eq!(raw.policy.cooldown_s, 60.0);
        assert_eq!(
            (raw.policy.lease.ttl_s, raw.policy.lease.enabled),
            (90.0, false)
        );
        let e = load("extends = \"loop.toml\"", "t.toml", &[], &mut files).unwrap_err();
        assert!(e.reason.contains("levels"), "{e}");
        let e = load("extends = \"nope.toml\"", "t.toml", &[], &mut files).unwrap_err();
        assert_eq!(e.key.as_deref(), Some("extends"));
    }

    #[test]
    fn extends_resolves_from_the_file_that_names_it() {
        // top.toml -> ../b/mid.toml -> base.toml, which sits in ../b/ too:
        // `read_file` gets each path relative to the first file's folder.
        let mut asked = Vec::new();
        let mut files = |p: &str| {
            asked.push(p.to_string());
            match p {
                "../b/mid.toml" => {
                    Ok("extends = \"base.toml\"\n[policy]\ncooldown_s = 61\n".into())
                }
                "../b/base.toml" => Ok("name = \"b\"\n[policy]\ntick_s = 9\n".into()),
                _ => Err(format!("no file {p}")),
            }
        };
        let raw = load_raw(
            "extends = \"../b/mid.toml\"\n",
            "a/top.toml",
            &[],
            &mut files,
        )
        .unwrap();
        assert_eq!(
            (raw.name.as_str(), raw.policy.cooldown_s, raw.policy.tick_s),
            ("b", 61.0, 9.0)
        );
        assert_eq!(asked, ["../b/mid.toml", "../b/base.toml"]);
    }

    #[test]
    fn extends_default_is_the_embedded_scenario() {
        let mut no_files = |p: &str| Err(format!("read {p}"));
        for name in EXTENDS_DEFAULT {
            let text =
                format!("extends = \"{name}\"\nname = \"mine\"\n[policy]\ncooldown_s = 60\n");
            let (raw, _) = load(&text, "mine.toml", &[], &mut no_files).unwrap();
            let (default, _) = load(DEFAULT_SCENARIO, "d", &[], &mut no_files).unwrap();
            assert_eq!(raw.name, "mine");
            assert_eq!(raw.policy.cooldown_s, 60.0);
            assert_eq!(raw.policy.tick_s, default.policy.tick_s);
            assert_eq!(raw.fleet.instances, default.fleet.instances);
        }
    }

    #[test]
    fn series_parses_and_rejects() {
        let p = parse_series("t_s,rps\n0,1\n60,2.5\n").unwrap();
        assert_eq!(p, vec![(SimTime::ZERO, 1.0), (SimTime::from_secs(60), 2.5)]);
        assert!(
            parse_series("t_s,rps\n0,1\n0,2\n")
                .unwrap_err()
                .contains("line 3")
        );
        assert!(parse_series("t,rps\n0,1\n").unwrap_err().contains("t_s"));
        assert!(
            parse_series("t_s,rps\n0,abc\n")
                .unwrap_err()
                .contains("line 2")
        );
        assert!(parse_series("t_s,rps\n").is_err());
        // A quoted cell's line break is escaped: the message is one line.
        let e = parse_series("t_s,rps\n0,1.00\n09,\"\"\"\n986,1.0\n").unwrap_err();
        assert_eq!(e, "line 3: `rps` = `\"\\n986,1.0` is not a number");
        let e = parse_series("t_s,rps\n1e300,1\n").unwrap_err();
        assert_eq!(e, "line 2: t_s = 1e300 is more than ten years");
    }
}
