//! `model.toml` beside a sweep's `trials.csv`: which model (draw regime,
//! `crate::MODEL_VERSION`) wrote its rows. `trials.csv` itself stays a plain
//! table (no constant column) that loads straight into pandas or DuckDB;
//! resume and merge read the manifest and refuse rows of another model, so
//! one sweep never mixes two random-number regimes.

use serde::{Deserialize, Serialize};

/// The manifest's file name in a sweep directory.
pub const FILE: &str = "model.toml";

/// The model that wrote a sweep's rows.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Manifest {
    /// The sweep tables' layout (`csvio::SCHEMA_VERSION`); 1 when absent
    /// (manifests written before it was recorded).
    #[serde(default = "layout_1")]
    pub schema_version: u32,
    pub model_version: u32,
    pub fleetsim_version: String,
}

fn layout_1() -> u32 {
    1
}

impl Manifest {
    /// This build's model.
    pub fn current() -> Self {
        Manifest {
            schema_version: super::csvio::SCHEMA_VERSION,
            model_version: crate::MODEL_VERSION,
            fleetsim_version: crate::VERSION.to_string(),
        }
    }

    /// "model 1 (fleetsim 0.1.0)".
    pub fn tag(&self) -> String {
        format!(
            "model {} (fleetsim {})",
            self.model_version, self.fleetsim_version
        )
    }

    /// The file's text: a comment saying what it is for, then the keys.
    pub fn to_toml(&self) -> String {
        let body = toml::to_string(self).expect("a manifest serialises");
        format!(
            "# The fleetsim model that wrote this sweep's trials.csv: `fleetsim sweep --resume`\n\
             # and `fleetsim merge` refuse a build with another schema_version (the tables'\n\
             # layout) or model_version.\n{body}"
        )
    }

    /// Reads a manifest; errors name the line and key.
    pub fn parse(text: &str) -> Result<Self, String> {
        toml::from_str(text).map_err(|e| {
            let line = e.span().map(|s| text[..s.start].matches('\n').count() + 1);
            let msg = crate::text::one_line(e.message());
            match line {
                Some(l) => format!(":{l}: {msg}"),
                None => format!(": {msg}"),
            }
        })
    }

    /// Whether rows written under this manifest may sit beside rows of the
    /// build running now (same table layout, same model version); the error
    /// names both tags.
    pub fn check_current(&self) -> Result<(), String> {
        let now = Manifest::current();
        if self.schema_version != now.schema_version {
            return Err(if self.schema_version == 1 {
                format!("its trials.csv was {}", super::csvio::OLD_LAYOUT)
            } else {
                format!(
                    "its tables are in layout {} and this build writes layout {}",
                    self.schema_version, now.schema_version
                )
            });
        }
        if self.model_version == now.model_version {
            return Ok(());
        }
        Err(format!(
            "its trials were written by {}, this build is {}: their draws differ, \
             and one sweep cannot mix them",
            self.tag(),
            now.tag()
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_manifest_reads_back() {
        let m = Manifest::current();
        assert_eq!(Manifest::parse(&m.to_toml()), Ok(m.clone()));
        assert!(m.check_current().is_ok());
        assert!(m.to_toml().contains("model_version = "));
    }

    #[test]
    fn another_model_is_refused_naming_both_tags() {
        let old = Manifest {
            model_version: crate::MODEL_VERSION + 1,
            fleetsim_version: "9.9.9".into(),
            ..Manifest::current()
        };
        let e = old.check_current().unwrap_err();
        assert!(e.contains(&old.tag()), "{e}");
        assert!(e.contains(&crate::model_tag()), "{e}");
        // Another crate version with the same model stays compatible.
        let same = Manifest {
            fleetsim_version: "9.9.9".into(),
            ..Manifest::current()
        };
        assert!(same.check_current().is_ok());
    }

    #[test]
    fn a_manifest_without_a_layout_is_layout_1_and_refused() {
        let text = format!(
            "model_version = {}\nfleetsim_version = \"0.1.0\"\n",
            crate::MODEL_VERSION
        );
        let m = Manifest::parse(&text).unwrap();
        assert_eq!(m.schema_version, 1);
        let e = m.check_current().unwrap_err();
        assert!(e.contains("layout 1") && e.contains("new --out"), "{e}");
    }

    #[test]
    fn a_bad_manifest_names_its_line() {
        let e = Manifest::parse("model_version = 1\nfleetsim_version = 2\n").unwrap_err();
        assert!(e.starts_with(":2:"), "{e}");
        let e = Manifest::parse("model_version = 1\n").unwrap_err();
        assert!(e.contains("fleetsim_version"), "{e}");
    }
}
