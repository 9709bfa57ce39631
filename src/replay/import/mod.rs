//! Importers, one file per format, each producing a `Part` of typed events.
//! The format is detected per file from its first line: a CSV header with
//! `ts` and `event`, a JSON object, or known platform log lines.

pub mod csv;
pub(crate) mod fields;
pub mod jsonl;
pub mod logs;

use super::recording::{Format, Part};
use crate::text::one_line;
use std::io::Read;

pub use fields::COLUMNS;

#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum ImportError {
    /// A bad row: the file, its line and what is wrong.
    #[error("{}:{line}: {}", one_line(.file), one_line(.reason))]
    Row {
        file: String,
        line: usize,
        reason: String,
    },
    /// The file as a whole: unreadable, not text, not a known format.
    #[error("{}: {}", one_line(.file), one_line(.reason))]
    File { file: String, reason: String },
    /// Files whose timestamps cannot be placed on one axis.
    #[error("{}", one_line(.0))]
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
    let first = text.lines().find(|l| !l.trim().is_empty())?;
    if jsonl::looks_like(first) {
        Some(Format::Jsonl)
    } else if csv::looks_like(first) {
        Some(Format::Csv)
    } else if logs::looks_like(text) {
        Some(Format::Log)
    } else {
        None
    }
}

/// Imports one file's text; `name` is how errors refer to it.
pub fn parse(name: &str, text: &str) -> Result<Part, ImportError> {
    match detect(text) {
        Some(Format::Csv) => csv::parse(name, text),
        Some(Format::Jsonl) => jsonl::parse(name, text),
        Some(Format::Log) => Ok(logs::parse(name, text)),
        None if text.trim().is_empty() => Err(ImportError::file(name, "empty: no events")),
        None => Err(ImportError::file(
            name,
            "not a recording: expected a CSV whose header names `ts` and `event` \
             (fleetsim run's events.csv), JSON Lines with those keys, or platform log \
             lines (`20:17:02 RECYCLE inst-A rss=564 lim=507 after=858req`, `retry_ok`, \
             `recycle pressure: ...`)",
        )),
    }
}

/// Reads and imports one file.
pub fn read(name: &str, mut input: impl Read) -> Result<Part, ImportError> {
    let mut bytes = Vec::new();
    input
        .read_to_end(&mut bytes)
        .map_err(|e| ImportError::file(name, format!("cannot read: {e}")))?;
    let text = String::from_utf8(bytes).map_err(|e| {
        ImportError::file(
            name,
            format!(
                "not UTF-8 text (byte {}): not a recording",
                e.utf8_error().valid_up_to()
            ),
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
    fn unknown_files_get_one_clear_error() {
        let e = parse("s.toml", "[policy]\ncooldown_s = 1\n").unwrap_err();
        assert!(e.to_string().starts_with("s.toml: not a recording"), "{e}");
        let e = read("b.bin", &[0xff, 0xfe, 0x00][..]).unwrap_err();
        assert!(e.to_string().contains("not UTF-8"), "{e}");
        let e = parse("e.csv", "\n  \n").unwrap_err();
        assert!(e.to_string().contains("empty"), "{e}");
    }
}
