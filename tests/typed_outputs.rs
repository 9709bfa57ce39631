//! The sweep tables load as typed tables: `trials.csv`, `results.csv` and
//! `pareto.csv` have unique column names, parameter columns that hold only
//! numbers (the base row leaves them empty, `is_base` marks it), and one
//! exact `seed` column. Checked twice: the rules directly on the bytes, and
//! by pandas itself (`tools/csv_types.py`, in a venv that
//! `tools/pandas-venv.sh` makes on first use). Set `FLEETSIM_SKIP_PANDAS=1`
//! to skip the pandas half where PyPI cannot be reached; CI never sets it,
//! so there the pandas check runs or the test fails.

mod common;

use common::TempDir;
use std::collections::BTreeSet;
use std::fs;
use std::path::Path;
use std::process::Command;

const SWEEP: &str = r#"
seed = 11
replications = 2
hours = 0.5
sampler = "grid"

[[param]]
key = "policy.cooldown_s"
values = [30, 120.0]

[[param]]
key = "policy.jitter_mb"
values = [20.0, 40.0]

[[objective]]
metric = "capacity_loss_fraction"

[[objective]]
metric = "requests_reset"
weight = 0.001
"#;

const PARAMS: [&str; 2] = ["policy.cooldown_s", "policy.jitter_mb"];

fn fleetsim(args: &[&str]) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_fleetsim"))
        .args(args)
        .output()
        .expect("runs")
}

fn table(path: &Path) -> (Vec<String>, Vec<Vec<String>>) {
    let mut r = csv::Reader::from_path(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let header = r.headers().unwrap().iter().map(String::from).collect();
    let rows = r
        .records()
        .map(|rec| rec.unwrap().iter().map(String::from).collect())
        .collect();
    (header, rows)
}

/// The typing rules, checked on the bytes; returns the table.
fn check_typed(path: &Path) -> (Vec<String>, Vec<Vec<String>>) {
    let (header, rows) = table(path);
    let unique: BTreeSet<&String> = header.iter().collect();
    assert_eq!(unique.len(), header.len(), "{}: {header:?}", path.display());
    let col = |name: &str| {
        header
            .iter()
            .position(|h| h == name)
            .unwrap_or_else(|| panic!("{}: no column {name}", path.display()))
    };
    let (config, is_base) = (col("config"), col("is_base"));
    for row in &rows {
        let base = row[config] == "0";
        assert_eq!(
            row[is_base],
            base.to_string(),
            "{}: {row:?}",
            path.display()
        );
        for p in PARAMS {
            let cell = &row[col(p)];
            if base {
                assert!(
                    cell.is_empty(),
                    "{}: the base's {p} is `{cell}`",
                    path.display()
                );
            } else {
                assert!(
                    cell.parse::<f64>().is_ok(),
                    "{}: {p} = `{cell}`",
                    path.display()
                );
            }
        }
    }
    (header, rows)
}

fn pandas_python() -> Option<String> {
    if std::env::var("FLEETSIM_SKIP_PANDAS").is_ok_and(|v| v == "1") {
        eprintln!("SKIPPED the pandas half: FLEETSIM_SKIP_PANDAS=1");
        return None;
    }
    let root = env!("CARGO_MANIFEST_DIR");
    let out = Command::new("sh")
        .arg(format!("{root}/tools/pandas-venv.sh"))
        .output()
        .expect("sh runs");
    assert!(
        out.status.success(),
        "tools/pandas-venv.sh could not make a Python with pandas (set FLEETSIM_SKIP_PANDAS=1 \
         to skip where PyPI is out of reach): {}",
        String::from_utf8_lossy(&out.stderr)
    );
    Some(String::from_utf8(out.stdout).unwrap().trim().to_string())
}

fn pandas_check(python: &str, path: &Path, extra: &[&str]) {
    let root = env!("CARGO_MANIFEST_DIR");
    let out = Command::new(python)
        .arg(format!("{root}/tools/csv_types.py"))
        .arg(path)
        .args(["--numeric", &PARAMS.join(",")])
        .args(extra)
        .output()
        .expect("python runs");
    assert!(
        out.status.success(),
        "pandas: {}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
}

#[test]
fn sweep_tables_are_typed_for_pandas() {
    let tmp = TempDir::new("typed");
    let file = tmp.path().join("s.toml");
    fs::write(&file, SWEEP).unwrap();
    let dir = tmp.path().join("out");
    let out = fleetsim(&[
        "sweep",
        file.to_str().unwrap(),
        "--out",
        dir.to_str().unwrap(),
    ]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );

    let (header, rows) = check_typed(&dir.join("trials.csv"));
    assert_eq!(header.iter().filter(|h| *h == "seed").count(), 1);
    let (rep, seed) = (
        header.iter().position(|h| h == "replication").unwrap(),
        header.iter().position(|h| h == "seed").unwrap(),
    );
    assert_eq!(rows.len(), 5 * 2);
    for row in &rows {
        let r: u64 = row[rep].parse().unwrap();
        assert_eq!(
            row[seed],
            fleetsim::sweep::replication_seed(11, r).to_string(),
            "the seed is exact"
        );
    }
    let (_, results) = check_typed(&dir.join("results.csv"));
    assert_eq!(results.len(), 5);
    check_typed(&dir.join("pareto.csv"));

    // An integer and a float in one parameter's values both load as numbers.
    assert!(rows.iter().any(|r| r.iter().any(|c| c == "30")));

    if let Some(py) = pandas_python() {
        pandas_check(&py, &dir.join("trials.csv"), &["--seed", "--base"]);
        pandas_check(&py, &dir.join("results.csv"), &["--base"]);
        pandas_check(&py, &dir.join("pareto.csv"), &[]);
        // The check can fail: layout 1's base row is refused.
        let old = tmp.path().join("old.csv");
        let text = fs::read_to_string(dir.join("results.csv")).unwrap();
        let mut lines: Vec<String> = text.lines().map(String::from).collect();
        lines[1] = lines[1].replacen("0,true,,,", "0,true,base,base,", 1);
        fs::write(&old, lines.join("\n") + "\n").unwrap();
        let out = Command::new(&py)
            .arg(format!("{}/tools/csv_types.py", env!("CARGO_MANIFEST_DIR")))
            .arg(&old)
            .args(["--numeric", &PARAMS.join(","), "--base"])
            .output()
            .unwrap();
        assert!(
            !out.status.success(),
            "a text cell in a parameter column must fail"
        );
        assert!(String::from_utf8_lossy(&out.stderr).contains("policy.cooldown_s"));
    }
}

/// A sweep directory of the old layout (model.toml without schema_version,
/// or a trials.csv header without is_base) is refused by resume and merge
/// with what to do.
#[test]
fn the_old_layout_is_refused_with_what_to_do() {
    let tmp = TempDir::new("typed-old");
    let file = tmp.path().join("s.toml");
    fs::write(
        &file,
        SWEEP.replace("values = [20.0, 40.0]", "values = [20.0]"),
    )
    .unwrap();
    let dir = tmp.path().join("out");
    let (f, d) = (file.to_str().unwrap(), dir.to_str().unwrap());
    assert!(fleetsim(&["sweep", f, "--out", d]).status.success());
    let merged = tmp.path().join("merged");
    let m = merged.to_str().unwrap();

    let model = fs::read_to_string(dir.join("model.toml")).unwrap();
    let old_model: String = model
        .lines()
        .filter(|l| !l.starts_with("schema_version"))
        .map(|l| format!("{l}\n"))
        .collect();
    fs::write(dir.join("model.toml"), &old_model).unwrap();
    for args in [
        vec!["sweep", f, "--out", d, "--resume"],
        vec!["merge", d, "--out", m],
    ] {
        let out = fleetsim(&args);
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{err}");
        assert!(
            err.contains("model.toml") && err.contains("layout 1"),
            "{err}"
        );
        assert!(err.contains("new --out"), "{err}");
    }

    // A current manifest over a layout-1 header: the header is refused.
    fs::write(dir.join("model.toml"), &model).unwrap();
    let trials = fs::read_to_string(dir.join("trials.csv")).unwrap();
    let old = trials.replacen(",seed,is_base,", ",seed,", 1);
    fs::write(dir.join("trials.csv"), old).unwrap();
    let out = fleetsim(&["merge", d, "--out", m]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(
        err.contains("trials.csv: line 1:") && err.contains("layout 1"),
        "{err}"
    );
}
