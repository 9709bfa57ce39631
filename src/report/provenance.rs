//! What made a run: its resolved scenario (scenario.toml) against the
//! embedded default, key by key, the command that reproduces it and the
//! model that produced it (summary.json's `model_version`). Pure: the
//! default is resolved from the text compiled in, never from a file.

use super::ReportError;
use super::data::Ordered;
use crate::scenario::{DEFAULT_SCENARIO, DEFAULT_SCENARIO_NAME};
use std::collections::BTreeMap;

/// One key of the scenario: its dotted name, its value and the default's
/// (None when the default has no such key).
#[derive(Clone, Debug, PartialEq)]
pub struct Setting {
    pub key: String,
    pub value: String,
    pub default: Option<String>,
}

/// What the page's "made by" section says.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct MadeBy {
    pub reproduce: String,
    pub model: String,
    pub scenario: String,
    /// Keys whose value differs from the embedded default, in key order.
    pub differing: Vec<Setting>,
    /// Every other key, folded away on the page.
    pub same: Vec<Setting>,
    pub default_name: String,
}

/// Flattens a TOML table to dotted keys and their values as TOML writes them.
fn flatten(prefix: &str, t: &toml::Table, out: &mut BTreeMap<String, String>) {
    for (k, v) in t {
        let key = if prefix.is_empty() {
            k.clone()
        } else {
            format!("{prefix}.{k}")
        };
        match v {
            toml::Value::Table(inner) => flatten(&key, inner, out),
            other => {
                out.insert(key, other.to_string());
            }
        }
    }
}

fn parse_err(e: impl std::fmt::Display) -> ReportError {
    ReportError::Parse {
        file: "scenario.toml".into(),
        message: e.to_string(),
    }
}

/// The embedded default, resolved as `fleetsim run` writes scenario.toml.
fn default_keys() -> BTreeMap<String, String> {
    let mut out = BTreeMap::new();
    let raw = crate::scenario::load::load_raw(DEFAULT_SCENARIO, "<embedded>", &[], &mut |p| {
        Err(format!("{p}: the embedded default reads no file"))
    });
    let text = raw.ok().and_then(|r| toml::to_string(&r).ok());
    if let Some(t) = text.and_then(|t| t.parse::<toml::Table>().ok()) {
        flatten("", &t, &mut out);
    }
    out
}

/// The "made by" section from scenario.toml's bytes (if any) and summary.json.
pub fn made_by(
    name: &str,
    scenario_toml: Option<&[u8]>,
    summary: &Ordered,
) -> Result<MadeBy, ReportError> {
    let get = |k: &str| summary.0.iter().find(|(n, _)| n == k).map(|(_, v)| v);
    let seed = get("seed").and_then(serde_json::Value::as_u64);
    let model = match (get("model_version"), get("fleetsim_version")) {
        (Some(m), Some(v)) => format!("model {m} (fleetsim {})", v.as_str().unwrap_or("?")),
        (Some(m), None) => format!("model {m}"),
        _ => "not recorded (summary.json written before model tags)".into(),
    };
    let scenario = get("scenario")
        .and_then(serde_json::Value::as_str)
        .unwrap_or("")
        .to_string();
    let seed_arg = seed.map_or(String::new(), |s| format!(" --seed {s}"));
    let mut out = MadeBy {
        model,
        scenario,
        default_name: DEFAULT_SCENARIO_NAME.into(),
        ..Default::default()
    };
    let Some(bytes) = scenario_toml else {
        out.reproduce = format!(
            "not known: no scenario.toml in this directory (fleetsim run{seed_arg} with the \
             scenario that made it)"
        );
        return Ok(out);
    };
    let text = std::str::from_utf8(bytes).map_err(parse_err)?;
    let table: toml::Table = text.parse().map_err(parse_err)?;
    out.reproduce = format!("cd {name} && fleetsim run scenario.toml{seed_arg} --out rerun");
    let mut keys = BTreeMap::new();
    flatten("", &table, &mut keys);
    let defaults = default_keys();
    for (key, value) in keys {
        let default = defaults.get(&key).cloned();
        let s = Setting {
            key,
            value,
            default,
        };
        if s.default.as_deref() == Some(s.value.as_str()) {
            out.same.push(s);
        } else {
            out.differing.push(s);
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_default_differs_from_itself_nowhere() {
        let text = toml::to_string(
            &crate::scenario::load::load_raw(DEFAULT_SCENARIO, "x", &[], &mut |_| {
                Err(String::new())
            })
            .unwrap(),
        )
        .unwrap();
        let summary = Ordered(vec![
            ("seed".into(), serde_json::json!(7)),
            ("model_version".into(), serde_json::json!(3)),
        ]);
        let m = made_by("d", Some(text.as_bytes()), &summary).unwrap();
        assert!(m.differing.is_empty(), "{:?}", m.differing);
        assert!(m.same.iter().any(|s| s.key == "policy.cooldown_s"));
        assert!(m.reproduce.contains("--seed 7"));
        assert_eq!(m.model, "model 3");
        let changed = text.replace("cooldown_s = 120", "cooldown_s = 60");
        let m = made_by("d", Some(changed.as_bytes()), &summary).unwrap();
        let keys: Vec<&str> = m.differing.iter().map(|s| s.key.as_str()).collect();
        assert_eq!(keys, ["policy.cooldown_s"]);
        assert_eq!(m.differing[0].default.as_deref(), Some("120.0"));
    }
}
