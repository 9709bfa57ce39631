//! Every kind of report page as a user sees it: rendered by headless
//! Chromium (Debian's `chromium`, which `.ci/run` installs), each page must
//! load with no error, every SVG it wrote must parse as XML in the
//! browser's own parser, and no text may overlap another in the key charts
//! (bounding boxes from the rendered layout). The check is a small script
//! added to a copy of the page (the page itself has none); Chromium's
//! `--dump-dom` returns the DOM after it ran, with its verdict in it.
//!
//! Without a browser the test says so and passes, unless
//! `FLEETSIM_REQUIRE_CHROMIUM=1` (set by `.ci/run`), where it fails.

mod common;

use common::TempDir;
use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;

fn ok(args: &[&str]) {
    let out = Command::new(env!("CARGO_BIN_EXE_fleetsim"))
        .args(args)
        .output()
        .expect("the binary runs");
    assert!(
        out.status.success(),
        "fleetsim {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// The browser: `FLEETSIM_CHROMIUM`, else the first of the usual names on PATH.
fn browser() -> Option<PathBuf> {
    if let Some(p) = std::env::var_os("FLEETSIM_CHROMIUM") {
        return Some(PathBuf::from(p));
    }
    let path = std::env::var_os("PATH")?;
    for dir in std::env::split_paths(&path) {
        for name in ["chromium", "chromium-browser", "google-chrome"] {
            let p = dir.join(name);
            if p.is_file() {
                return Some(p);
            }
        }
    }
    None
}

/// The check run in the page: errors caught from the first moment, each
/// SVG file parsed as XML, and text boxes compared within each key chart.
const CHECK: &str = r#"<script>
window.__errors = [];
window.addEventListener('error', e => window.__errors.push('error: ' + (e.message || (e.target && e.target.outerHTML) || '?')), true);
const oldError = console.error;
console.error = (...a) => { window.__errors.push('console.error: ' + a.join(' ')); oldError(...a); };
window.addEventListener('load', () => {
  const out = { errors: window.__errors, bad_svg: [], overlaps: [], texts: 0, svgs: 0 };
  for (const [name, text] of Object.entries(window.__svgs)) {
    out.svgs++;
    const doc = new DOMParser().parseFromString(text, 'image/svg+xml');
    const err = doc.getElementsByTagName('parsererror');
    if (err.length || doc.documentElement.nodeName !== 'svg') out.bad_svg.push(name + ': ' + (err.length ? err[0].textContent.slice(0, 200) : doc.documentElement.nodeName));
  }
  const figures = Array.from(document.querySelectorAll('figure'));
  for (const f of figures) {
    const file = (f.querySelector('figcaption code') || {}).textContent || '';
    if (!window.__key.includes(file)) continue;
    const boxes = Array.from(f.querySelectorAll('svg text'))
      .filter(t => t.textContent.trim() !== '')
      .map(t => [t.textContent, t.getBoundingClientRect()]);
    out.texts += boxes.length;
    for (let i = 0; i < boxes.length; i++) for (let j = i + 1; j < boxes.length; j++) {
      const [a, r] = boxes[i], [b, s] = boxes[j];
      const w = Math.min(r.right, s.right) - Math.max(r.left, s.left);
      const h = Math.min(r.bottom, s.bottom) - Math.max(r.top, s.top);
      if (w > 1 && h > 1) out.overlaps.push(file + ': "' + a + '" over "' + b + '"');
    }
  }
  const pre = document.createElement('pre');
  pre.id = 'fleetsim-check';
  pre.textContent = JSON.stringify(out);
  document.body.appendChild(pre);
});
</script>"#;

/// What the page's check found.
#[derive(serde::Deserialize, Debug)]
struct Verdict {
    errors: Vec<String>,
    bad_svg: Vec<String>,
    overlaps: Vec<String>,
    texts: usize,
    svgs: usize,
}

/// Renders `dir/report.html` with the check and returns its verdict.
fn render(chromium: &Path, dir: &Path, key: &[&str]) -> Verdict {
    let html = fs::read_to_string(dir.join("report.html")).unwrap();
    let mut svgs = serde_json::Map::new();
    let mut names: Vec<String> = fs::read_dir(dir)
        .unwrap()
        .filter_map(Result::ok)
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| n.ends_with(".svg"))
        .collect();
    names.sort();
    for n in &names {
        let text = fs::read_to_string(dir.join(n)).unwrap();
        svgs.insert(n.clone(), serde_json::Value::String(text));
    }
    // `</` inside a script's JSON would end the script: escape the slash.
    let data = serde_json::to_string(&svgs).unwrap().replace("</", "<\\/");
    let keys = serde_json::to_string(key).unwrap();
    let script = format!("<script>window.__svgs = {data}; window.__key = {keys};</script>{CHECK}");
    let page = html.replacen("<head>", &format!("<head>\n{script}"), 1);
    let wrapped = dir.join("browser-check.html");
    fs::write(&wrapped, page).unwrap();
    let out = Command::new(chromium)
        .args([
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--no-first-run",
            "--window-size=1440,1000",
            "--virtual-time-budget=10000",
            "--dump-dom",
        ])
        .arg(format!("file://{}", wrapped.display()))
        .output()
        .expect("chromium runs");
    let dom = String::from_utf8_lossy(&out.stdout);
    let Some(at) = dom.find("<pre id=\"fleetsim-check\">") else {
        panic!(
            "{}: the check never ran (status {:?}): {}",
            dir.display(),
            out.status,
            String::from_utf8_lossy(&out.stderr)
        );
    };
    let rest = &dom[at + "<pre id=\"fleetsim-check\">".len()..];
    let json = common::page::unescape(&rest[..rest.find("</pre>").unwrap()]);
    let v: Verdict = serde_json::from_str(&json).unwrap_or_else(|e| panic!("{e}: {json}"));
    assert_eq!(v.svgs, names.len());
    v
}

fn pages(root: &Path) -> Vec<(PathBuf, Vec<&'static str>)> {
    let manifest = env!("CARGO_MANIFEST_DIR");
    let p = |n: &str| root.join(n);
    let s = |p: &PathBuf| p.to_str().unwrap().to_string();
    let run = p("run");
    ok(&["run", "--out", &s(&run)]);
    ok(&["report", &s(&run)]);
    let fixed = p("fixed");
    let fixed_toml = format!("{manifest}/scenarios/render-2x3-fixed.toml");
    ok(&["run", &fixed_toml, "--out", &s(&fixed)]);
    let cmp = p("compare");
    ok(&["compare", &s(&run), &s(&fixed), "--out", &s(&cmp)]);
    let rec = p("replay");
    let recording = format!("{manifest}/scenarios/recordings/generated-24h.csv");
    ok(&["replay", &recording, "--out", &s(&rec)]);
    ok(&["report", &s(&rec)]);
    let seeds = p("replay-seeds");
    let log = format!("{manifest}/scenarios/recordings/seeds-31min.log");
    ok(&["replay", &log, "--out", &s(&seeds)]);
    ok(&["report", &s(&seeds)]);
    let sat = p("saturate");
    ok(&["saturate", "--seeds", "1", "--out", &s(&sat)]);
    ok(&["report", &s(&sat)]);
    vec![
        (run, vec!["timeline.svg", "zoom.svg"]),
        (cmp, vec!["timeline-0.svg", "timeline-1.svg"]),
        (rec, vec!["timeline.svg", "zoom.svg"]),
        (seeds, vec!["timeline.svg", "zoom.svg"]),
        (sat, vec!["ceilings.svg"]),
    ]
}

#[test]
fn every_page_renders_in_chromium_without_errors_or_overlaps() {
    let Some(chromium) = browser() else {
        assert!(
            std::env::var("FLEETSIM_REQUIRE_CHROMIUM").as_deref() != Ok("1"),
            "FLEETSIM_REQUIRE_CHROMIUM=1 and no chromium on PATH (nor FLEETSIM_CHROMIUM)"
        );
        eprintln!("SKIPPED: no chromium on PATH; set FLEETSIM_REQUIRE_CHROMIUM=1 to fail instead");
        return;
    };
    let dir = TempDir::new("browser");
    let mut failures = Vec::new();
    for (page, key) in pages(dir.path()) {
        let v = render(&chromium, &page, &key);
        assert!(
            v.texts > 0,
            "{}: no text measured in {key:?}",
            page.display()
        );
        for e in v.errors.iter().chain(&v.bad_svg).chain(&v.overlaps) {
            failures.push(format!("{}: {e}", page.display()));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

/// The check itself can fail: overlapping text, an SVG that is no XML and
/// a failed load are each reported.
#[test]
fn the_check_finds_overlaps_bad_svg_and_errors() {
    let Some(chromium) = browser() else {
        assert!(
            std::env::var("FLEETSIM_REQUIRE_CHROMIUM").as_deref() != Ok("1"),
            "FLEETSIM_REQUIRE_CHROMIUM=1 and no chromium on PATH (nor FLEETSIM_CHROMIUM)"
        );
        eprintln!("SKIPPED: no chromium on PATH");
        return;
    };
    let dir = TempDir::new("browser-bad");
    let svg = "<svg width=\"300\" height=\"100\"><text x=\"10\" y=\"50\">overlapping</text>\
               <text x=\"20\" y=\"52\">labels</text><text x=\"200\" y=\"90\">apart</text></svg>";
    let page = format!(
        "<!DOCTYPE html>\n<html><head><title>t</title></head><body>\
         <figure>{svg}<figcaption>c (<code>a.svg</code>)</figcaption></figure>\
         <img src=\"missing.png\" alt=\"\"></body></html>"
    );
    fs::write(dir.path().join("report.html"), page).unwrap();
    fs::write(dir.path().join("a.svg"), svg).unwrap();
    fs::write(dir.path().join("b.svg"), "<svg><text>unclosed</svg>").unwrap();
    let v = render(&chromium, dir.path(), &["a.svg"]);
    assert_eq!(v.texts, 3);
    assert_eq!(v.overlaps, ["a.svg: \"overlapping\" over \"labels\""]);
    assert_eq!(v.bad_svg.len(), 1, "{:?}", v.bad_svg);
    assert!(v.bad_svg[0].starts_with("b.svg"));
    assert_eq!(v.errors.len(), 1, "{:?}", v.errors);
}
