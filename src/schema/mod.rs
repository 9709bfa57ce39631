//! One home per output format's identity: every JSON file fleetsim writes
//! (and a sweep's `model.toml`) carries `schema_version` (its layout: keys,
//! units, meaning) and `model_version` (`crate::MODEL_VERSION`: the draw
//! regime that produced the numbers), written by `to_json` after the
//! body's keys, in the body's declared order. A reader that finds another
//! `schema_version` knows the layout changed; one that finds another
//! `model_version` knows the numbers would.
//!
//! The layouts themselves live beside their types: `metrics::Summary`
//! (summary.json), `whatif::Report` (saturate.json), `replay::Analysis`
//! (analysis.json), `replay::validate` (validation.json),
//! `replay::calibrate::Calibration` (calibration.json), `replay::whatif`
//! (whatif.json), `sweep::csvio` (trials.csv, results.csv, pareto.csv),
//! `sweep::manifest` (model.toml) and `events` here (events.csv,
//! recording.csv). docs/outputs.md lists every file.

pub mod events;

use serde::Serialize;

/// A JSON output: its file name and layout version.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Format {
    pub file: &'static str,
    pub version: u32,
}

/// `summary.json`: 2 added `schema_version` (1: `model_version` alone).
pub const SUMMARY: Format = Format {
    file: "summary.json",
    version: 2,
};
/// `saturate.json`: 1 is the first stamped layout.
pub const SATURATE: Format = Format {
    file: "saturate.json",
    version: 1,
};
/// `analysis.json`: 1 is the first stamped layout.
pub const ANALYSIS: Format = Format {
    file: "analysis.json",
    version: 1,
};
/// `validation.json`: the number of its `schema` string.
pub const VALIDATION: Format = Format {
    file: "validation.json",
    version: 2,
};
/// `calibration.json`: the number of its `schema` string.
pub const CALIBRATION: Format = Format {
    file: "calibration.json",
    version: 1,
};
/// `whatif.json`: the number of its `schema` string.
pub const WHATIF: Format = Format {
    file: "whatif.json",
    version: 2,
};

/// Every stamped JSON format, for docs and tests.
pub const JSON_FORMATS: [Format; 6] =
    [SUMMARY, SATURATE, ANALYSIS, VALIDATION, CALIBRATION, WHATIF];

#[derive(Serialize)]
struct Stamped<'a, T: Serialize> {
    #[serde(flatten)]
    body: &'a T,
    schema_version: u32,
    model_version: u32,
    fleetsim_version: &'static str,
}

/// `body` (a struct or map) as pretty JSON with the stamp's keys after its
/// own, and one newline at the end.
pub fn to_json<T: Serialize>(format: Format, body: &T) -> Result<String, serde_json::Error> {
    let stamped = Stamped {
        body,
        schema_version: format.version,
        model_version: crate::MODEL_VERSION,
        fleetsim_version: crate::VERSION,
    };
    Ok(serde_json::to_string_pretty(&stamped)? + "\n")
}

/// The stamp's keys, as `to_json` writes them after the body's.
pub const STAMP_KEYS: [&str; 3] = ["schema_version", "model_version", "fleetsim_version"];

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Serialize)]
    struct Body {
        b: u32,
        a: &'static str,
    }

    #[test]
    fn the_stamp_follows_the_body_in_declared_order() {
        let json = to_json(SATURATE, &Body { b: 1, a: "x" }).unwrap();
        let keys: Vec<&str> = json
            .lines()
            .filter_map(|l| l.trim().strip_prefix('"')?.split('"').next())
            .collect();
        assert_eq!(
            keys,
            [
                "b",
                "a",
                "schema_version",
                "model_version",
                "fleetsim_version"
            ]
        );
        assert!(json.ends_with("}\n"));
        let v: serde_json::Value = serde_json::from_str(&json).unwrap();
        assert_eq!(v["schema_version"], 1);
        assert_eq!(v["model_version"], crate::MODEL_VERSION);
    }
}
