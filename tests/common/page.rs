//! Checks of a report page shared by the report tests: well-formed,
//! self-contained, and its keyed cells readable back.

use std::fs;
use std::path::Path;

pub const VOID: [&str; 6] = ["meta", "br", "hr", "img", "link", "input"];

/// Checks that every tag is closed in order (void and self-closing tags
/// excepted); returns the tag names met.
pub fn balanced(doc: &str) -> Result<Vec<String>, String> {
    let mut stack: Vec<String> = Vec::new();
    let mut seen = Vec::new();
    let mut rest = doc;
    while let Some(i) = rest.find('<') {
        rest = &rest[i + 1..];
        if let Some(r) = rest.strip_prefix("!--") {
            let end = r.find("-->").ok_or("unclosed comment")?;
            rest = &r[end + 3..];
            continue;
        }
        let end = rest.find('>').ok_or("unclosed tag")?;
        let tag = &rest[..end];
        rest = &rest[end + 1..];
        if tag.starts_with('!') || tag.starts_with('?') {
            continue;
        }
        if let Some(name) = tag.strip_prefix('/') {
            let name = name.trim().to_ascii_lowercase();
            match stack.pop() {
                Some(open) if open == name => {}
                other => return Err(format!("</{name}> closes {other:?}")),
            }
            continue;
        }
        let name: String = tag
            .chars()
            .take_while(|c| !c.is_whitespace() && *c != '/')
            .collect::<String>()
            .to_ascii_lowercase();
        if name.is_empty() || !name.chars().all(|c| c.is_ascii_alphanumeric() || c == '-') {
            return Err(format!("bad tag <{tag}>"));
        }
        seen.push(name.clone());
        if !tag.ends_with('/') && !VOID.contains(&name.as_str()) {
            stack.push(name);
        }
    }
    match stack.is_empty() {
        true => Ok(seen),
        false => Err(format!("unclosed: {stack:?}")),
    }
}

/// Well-formed, self-contained (no URL, no external source, no script),
/// and holding `charts` inline SVGs.
pub fn check_page(html: &str, charts: usize) {
    let tags = balanced(html).unwrap_or_else(|e| panic!("report.html: {e}"));
    assert!(html.starts_with("<!DOCTYPE html>"));
    for bad in [
        "http://", "https://", "src=", "<script", "url(", "@import", "href=\"/",
    ] {
        assert!(!html.contains(bad), "report.html contains {bad:?}");
    }
    assert_eq!(tags.iter().filter(|t| *t == "svg").count(), charts);
    for t in ["html", "head", "title", "body", "h1"] {
        assert_eq!(tags.iter().filter(|x| *x == t).count(), 1, "<{t}>");
    }
}

pub fn check_svgs(dir: &Path, files: &[&str]) {
    for f in files {
        let svg = fs::read_to_string(dir.join(f)).unwrap_or_else(|e| panic!("{f}: {e}"));
        assert!(svg.starts_with("<svg"), "{f}");
        balanced(&svg).unwrap_or_else(|e| panic!("{f}: {e}"));
        assert!(svg.contains("<text"), "{f} has no text");
        assert!(!svg.contains("NaN"), "{f} has NaN coordinates");
    }
}

/// The summary cells: (key, data-value, shown text).
pub fn summary_cells(html: &str) -> Vec<(String, String, String)> {
    let mut out = Vec::new();
    for part in html.split("data-key=\"").skip(1) {
        let key = &part[..part.find('"').unwrap()];
        let v = part.split("data-value=\"").nth(1).unwrap();
        let value = &v[..v.find('"').unwrap()];
        let text = &v[v.find('>').unwrap() + 1..v.find("</td>").unwrap()];
        out.push((key.to_string(), value.to_string(), text.to_string()));
    }
    out
}

pub fn unescape(s: &str) -> String {
    s.replace("&quot;", "\"")
        .replace("&#39;", "'")
        .replace("&lt;", "<")
        .replace("&gt;", ">")
        .replace("&amp;", "&")
}
