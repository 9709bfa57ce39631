//! What `fleetsim run` prints and reads (issue 18, items 7 and 10): the
//! table has a row per gate of the policy with each of its holds and
//! exits, equal to summary.json's counters; RSS-limit figures only for a
//! policy with the RSS trigger; notes for mechanisms left on fleetsim's
//! defaults; `hard_limit_mb = inf` is no ceiling; `extends` resolves from
//! the file that names it, and `extends = "default"` is the embedded
//! scenario.

mod common;

use common::{TempDir, fleetsim_in, ok};
use std::fs;
use std::path::{Path, PathBuf};

fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn summary(dir: &Path) -> serde_json::Value {
    serde_json::from_str(&fs::read_to_string(dir.join("summary.json")).unwrap()).unwrap()
}

/// The table's `gate NAME` rows: (name, [(count, summary.json key)]).
fn gate_rows(table: &str) -> Vec<(String, Vec<(u64, String)>)> {
    table
        .lines()
        .filter_map(|l| l.strip_prefix("gate "))
        .map(|l| {
            let (name, rest) = l.split_once(' ').unwrap();
            let counts = rest
                .trim()
                .split([';', ','])
                .map(|part| {
                    let part = part.trim();
                    let part = part.strip_prefix("held ").unwrap_or(part);
                    let part = part.strip_prefix("passed ").unwrap_or(part);
                    let (n, key) = part.split_once(' ').unwrap();
                    (n.parse().unwrap(), key.to_string())
                })
                .collect();
            (name.to_string(), counts)
        })
        .collect()
}

#[test]
fn every_gate_of_the_policy_has_its_holds_and_exits_in_the_table() {
    let tmp = TempDir::new("summary-gates");
    let out = tmp.path().join("run");
    let scenario = repo().join("scenarios/render-2x3-fixed.toml");
    let table = ok(
        tmp.path(),
        &[
            "run",
            scenario.to_str().unwrap(),
            "--hours",
            "12",
            "--out",
            out.to_str().unwrap(),
        ],
    );
    let rows = gate_rows(&table);
    let names: Vec<&str> = rows.iter().map(|(n, _)| n.as_str()).collect();
    // The fixed preset's pipeline, in order: the bucket and its exits show.
    assert_eq!(
        names,
        ["cooldown", "busy_deferral", "token_bucket", "lease"],
        "{table}"
    );
    let json = summary(&out);
    let mut keys = 0;
    for (_, counts) in &rows {
        for (n, key) in counts {
            let in_json = json
                .get(key)
                .or_else(|| json.get(format!("holds_{key}")))
                .and_then(|v| v.as_u64())
                .unwrap_or_else(|| panic!("`{key}` of the table is no summary.json counter"));
            assert_eq!(*n, in_json, "{key}");
            keys += 1;
        }
    }
    assert!(keys >= 8, "{table}");
    let bucket = &rows[2].1;
    assert!(
        bucket.iter().any(|(n, k)| k == "bucket_empty" && *n > 0),
        "{table}"
    );
    assert!(
        bucket
            .iter()
            .any(|(_, k)| k == "bucket_bypass_hard_ceiling"),
        "{table}"
    );
    assert!(table.contains("tripped < 25 MB over limit"), "{table}");
    assert!(
        !table.contains("note:"),
        "the preset sets its leak and ceiling: {table}"
    );
}

#[test]
fn rss_limit_figures_only_with_the_rss_trigger_and_inf_is_no_ceiling() {
    let tmp = TempDir::new("summary-rss");
    let out = tmp.path().join("run");
    let scenario = repo().join("scenarios/gunicorn-max-requests.toml");
    let args = |ceiling: &'static str| {
        vec![
            "run".to_string(),
            scenario.display().to_string(),
            "--hours".into(),
            "6".into(),
            "--set".into(),
            format!("policy.hard_limit_mb={ceiling}"),
            "--out".into(),
            out.display().to_string(),
            "--force".into(),
        ]
    };
    let run = |ceiling| {
        let a = args(ceiling);
        ok(
            tmp.path(),
            &a.iter().map(String::as_str).collect::<Vec<_>>(),
        )
    };
    let finite = run("650");
    assert!(
        !finite.contains("tripped < 25 MB"),
        "no RSS trigger: {finite}"
    );
    assert!(finite.contains("over the 650 MB ceiling"), "{finite}");
    let none = run("inf");
    assert!(none.contains("(no hard ceiling)"), "{none}");
    let json = summary(&out);
    assert_eq!(json["max_overshoot_mb"], 0.0);
    assert_eq!(json["over_ceiling_dwell_max_s"], 0.0);
    // events.csv leaves the ceiling empty, and replay reads it back.
    let events = fs::read_to_string(out.join("events.csv")).unwrap();
    let row = events.lines().nth(1).expect("a recycle row");
    assert_eq!(row.split(',').nth(7), Some(""), "{row}");
    let replayed = tmp.path().join("replay");
    ok(
        tmp.path(),
        &[
            "replay",
            out.join("events.csv").to_str().unwrap(),
            "--out",
            replayed.to_str().unwrap(),
        ],
    );
    // NaN is no ceiling at all.
    let (code, _, err) = fleetsim_in(tmp.path(), &["run", "--set", "policy.hard_limit_mb=nan"]);
    assert_eq!(code, Some(2), "{err}");
    assert!(
        err.contains("policy.hard_limit_mb") && err.contains("inf"),
        "{err}"
    );
}

#[test]
fn defaults_the_user_did_not_set_are_noted() {
    let tmp = TempDir::new("summary-notes");
    fs::write(tmp.path().join("bare.toml"), "name = \"bare\"\n").unwrap();
    let table = ok(tmp.path(), &["run", "bare.toml", "--hours", "1"]);
    assert!(table.contains("note: [fleet.leak] not set"), "{table}");
    assert!(
        table.contains("note: policy.hard_limit_mb not set"),
        "{table}"
    );
    let set = ok(
        tmp.path(),
        &[
            "run",
            "bare.toml",
            "--hours",
            "1",
            "--set",
            "fleet.leak.cv=0.4",
            "--set",
            "policy.hard_limit_mb=700",
        ],
    );
    assert!(!set.contains("note:"), "{set}");
    let default = ok(tmp.path(), &["run", "--hours", "1"]);
    assert!(
        !default.contains("note:"),
        "the embedded default sets both: {default}"
    );
}

#[test]
fn extends_resolves_from_the_naming_file_and_default_by_name() {
    let tmp = TempDir::new("summary-extends");
    let (a, b, elsewhere) = (
        tmp.path().join("a"),
        tmp.path().join("b"),
        tmp.path().join("c"),
    );
    for d in [&a, &b, &elsewhere] {
        fs::create_dir_all(d).unwrap();
    }
    fs::write(
        a.join("top.toml"),
        "extends = \"../b/mid.toml\"\nname = \"top\"\n",
    )
    .unwrap();
    fs::write(
        b.join("mid.toml"),
        "extends = \"base.toml\"\n[policy]\ncooldown_s = 61\n",
    )
    .unwrap();
    fs::write(
        b.join("base.toml"),
        "extends = \"default\"\n[policy]\ntick_s = 9\n",
    )
    .unwrap();
    let top = a.join("top.toml");
    // From a folder that holds none of them, by an absolute and a relative path.
    for path in [top.display().to_string(), "../a/top.toml".to_string()] {
        let shown = ok(&elsewhere, &["scenario", "show", &path]);
        let v: toml::Table = shown.parse().unwrap();
        assert_eq!(v["name"].as_str(), Some("top"));
        assert_eq!(v["policy"]["cooldown_s"].as_float(), Some(61.0), "{shown}");
        assert_eq!(v["policy"]["tick_s"].as_float(), Some(9.0));
        // Everything else is the embedded default's.
        assert_eq!(v["policy"]["base_limit_mb"].as_float(), Some(500.0));
        assert_eq!(v["fleet"]["instances"].as_integer(), Some(2));
    }
    // A missing base names the path it tried, relative to the naming file.
    fs::write(b.join("mid.toml"), "extends = \"nope.toml\"\n").unwrap();
    let (code, _, err) = fleetsim_in(&elsewhere, &["scenario", "show", top.to_str().unwrap()]);
    assert_eq!(code, Some(2), "{err}");
    assert!(
        err.contains("b/nope.toml") && err.contains("extends"),
        "{err}"
    );
}
