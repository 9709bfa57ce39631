//! Sweeps end to end through the binary: thread count, resume after a kill
//! and sharding never change a byte of the results.

mod common;

use common::TempDir;
use std::fs;
use std::path::Path;
use std::process::Command;

const SWEEP: &str = r#"
seed = 7
replications = 3
hours = 2.0
sampler = "grid"

[[param]]
key = "policy.base_limit_mb"
values = [460.0, 560.0]

[[param]]
key = "workload.rps"
min = 2.0
max = 6.0
steps = 2

# 150 under a 460 MB limit puts the lowest limit below boot RSS: those
# trials fail (a value invalid under every limit is refused up front).
[[param]]
key = "policy.jitter_mb"
values = [40.0, 150.0]

[[objective]]
metric = "capacity_loss_fraction"

[[objective]]
metric = "requests_reset"
weight = 0.001

[[constraint]]
metric = "oom_kills"
op = "=="
value = 0
"#;

fn fleetsim(args: &[&str]) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_fleetsim"))
        .args(args)
        .output()
        .expect("runs")
}

fn sweep_into(dir: &Path, sweep: &Path, extra: &[&str]) {
    let mut args = vec![
        "sweep",
        sweep.to_str().unwrap(),
        "--out",
        dir.to_str().unwrap(),
    ];
    args.extend(extra);
    let out = fleetsim(&args);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

fn read(dir: &Path, name: &str) -> String {
    fs::read_to_string(dir.join(name)).unwrap_or_else(|e| panic!("{}/{name}: {e}", dir.display()))
}

#[test]
fn threads_resume_and_shards_give_the_same_bytes() {
    let tmp = TempDir::new("sweep");
    let file = tmp.path().join("s.toml");
    fs::write(&file, SWEEP).unwrap();
    let one = tmp.path().join("one");
    sweep_into(&one, &file, &["--threads", "1"]);
    let two = tmp.path().join("two");
    sweep_into(&two, &file, &["--threads", "2"]);
    for f in ["trials.csv", "results.csv", "pareto.csv", "best.toml"] {
        assert_eq!(
            read(&one, f),
            read(&two, f),
            "{f} depends on the thread count"
        );
    }
    let trials = read(&one, "trials.csv");
    // 8 configurations + the base, 3 replications each, plus the header.
    assert_eq!(trials.lines().count(), 9 * 3 + 1);
    assert!(trials.contains("jitter"), "failed trials say why");
    let results = read(&one, "results.csv");
    let header: Vec<&str> = results.lines().next().unwrap().split(',').collect();
    let feasible = header.iter().position(|h| *h == "feasible").unwrap();
    assert!(
        results
            .lines()
            .skip(1)
            .any(|l| l.split(',').nth(feasible) == Some("false")),
        "invalid configurations are infeasible"
    );

    // A kill half-way: keep 10 rows and half of the next line, then resume.
    let killed = tmp.path().join("killed");
    sweep_into(&killed, &file, &["--threads", "2"]);
    let lines: Vec<&str> = trials.lines().collect();
    let mut cut = lines[..11].join("\n");
    cut.push('\n');
    cut.push_str(&lines[11][..lines[11].len() / 2]);
    fs::write(killed.join("trials.csv"), cut).unwrap();
    for f in ["results.csv", "pareto.csv", "best.toml"] {
        fs::remove_file(killed.join(f)).unwrap();
    }
    sweep_into(&killed, &file, &["--resume"]);
    for f in ["trials.csv", "results.csv", "pareto.csv", "best.toml"] {
        assert_eq!(read(&one, f), read(&killed, f), "{f} differs after resume");
    }

    // Rows that parse but are not this sweep's are refused by line, not
    // pooled: a duplicate, another seed, a `NaN` cell (written empty).
    let tampered = |edit: &dyn Fn(&mut Vec<String>)| {
        let mut rows: Vec<String> = lines[..11].iter().map(|l| l.to_string()).collect();
        edit(&mut rows);
        fs::write(killed.join("trials.csv"), rows.join("\n") + "\n").unwrap();
        let out = fleetsim(&[
            "sweep",
            file.to_str().unwrap(),
            "--out",
            killed.to_str().unwrap(),
            "--resume",
        ]);
        assert_eq!(out.status.code(), Some(2));
        String::from_utf8_lossy(&out.stderr).into_owned()
    };
    let err = tampered(&|r| r.insert(6, r[5].clone()));
    assert!(
        err.contains("line 7") && err.contains("not in trial order, or given twice"),
        "{err}"
    );
    let err = tampered(&|r| {
        let mut f: Vec<String> = r[4].split(',').map(String::from).collect();
        f[3] = "123".into();
        r[4] = f.join(",");
    });
    assert!(
        err.contains("line 5") && err.contains("seed 123 is not replication"),
        "{err}"
    );
    let err = tampered(&|r| {
        let mut f: Vec<String> = r[2].split(',').map(String::from).collect();
        *f.last_mut().unwrap() = "NaN".into();
        r[2] = f.join(",");
    });
    assert!(
        err.contains("line 3") && err.contains("is not a number"),
        "{err}"
    );

    // Three shards, merged.
    let mut dirs = Vec::new();
    for k in 0..3 {
        let d = tmp.path().join(format!("shard{k}"));
        sweep_into(&d, &file, &["--shard", &format!("{k}/3")]);
        dirs.push(d);
    }
    let merged = tmp.path().join("merged");
    let mut args = vec!["merge"];
    let dir_strs: Vec<String> = dirs.iter().map(|d| d.display().to_string()).collect();
    args.extend(dir_strs.iter().map(String::as_str));
    args.extend(["--out", merged.to_str().unwrap()]);
    let out = fleetsim(&args);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    for f in ["trials.csv", "results.csv", "pareto.csv", "best.toml"] {
        assert_eq!(read(&one, f), read(&merged, f), "{f} differs after merge");
    }

    // A missing shard is refused, not merged into a partial answer.
    let out = fleetsim(&[
        "merge",
        &dir_strs[0],
        &dir_strs[1],
        "--out",
        merged.to_str().unwrap(),
    ]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("do not add up"));

    // A shard given twice is refused: every trial must appear once.
    let mut twice = vec!["merge", dir_strs[0].as_str()];
    twice.extend(dir_strs.iter().map(String::as_str));
    twice.extend(["--out", merged.to_str().unwrap()]);
    let out = fleetsim(&twice);
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("duplicated") && !err.contains(" 0 duplicated"),
        "{err}"
    );

    // The merge streams shards in trial order: a shuffled file is named.
    let shuffled = tmp.path().join("shuffled");
    std::fs::create_dir_all(&shuffled).unwrap();
    for f in ["sweep.toml", "model.toml"] {
        std::fs::copy(dirs[1].join(f), shuffled.join(f)).unwrap();
    }
    let text = read(&dirs[1], "trials.csv");
    let mut lines: Vec<&str> = text.lines().collect();
    lines[1..].reverse();
    std::fs::write(shuffled.join("trials.csv"), lines.join("\n") + "\n").unwrap();
    let out = fleetsim(&[
        "merge",
        &dir_strs[0],
        shuffled.to_str().unwrap(),
        &dir_strs[2],
        "--out",
        merged.to_str().unwrap(),
    ]);
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("not in trial order") && err.contains("line 3"),
        "{err}"
    );

    // Re-running into a finished directory without --resume is refused.
    let out = fleetsim(&[
        "sweep",
        file.to_str().unwrap(),
        "--out",
        one.to_str().unwrap(),
    ]);
    assert_eq!(out.status.code(), Some(2));
}

/// A small sweep: two configurations plus the base, one replication.
const SMALL: &str = r#"
seed = 3
replications = 1
hours = 0.5
sampler = "grid"

[[param]]
key = "policy.cooldown_s"
values = [30.0, 120.0]

[[objective]]
metric = "capacity_loss_fraction"
"#;

/// Runs `args` and returns stderr, asserting exit code 2 (bad input).
fn refused(args: &[&str]) -> String {
    let out = fleetsim(args);
    let err = String::from_utf8_lossy(&out.stderr).into_owned();
    assert_eq!(out.status.code(), Some(2), "{err}");
    err
}

/// A sweep records the model that wrote its rows in model.toml (trials.csv
/// stays a plain table); `--resume` and `merge` refuse rows of another
/// model, naming the file and both tags, and a directory from before model
/// tags with a message that says to re-run.
#[test]
fn resume_and_merge_refuse_another_model() {
    let tmp = TempDir::new("sweep-model");
    let file = tmp.path().join("s.toml");
    fs::write(&file, SMALL).unwrap();
    let dir = tmp.path().join("one");
    sweep_into(&dir, &file, &[]);
    let model = read(&dir, "model.toml");
    let current = format!(
        "model_version = {}\nfleetsim_version = \"{}\"\n",
        fleetsim::MODEL_VERSION,
        fleetsim::VERSION
    );
    assert!(model.ends_with(&current), "{model}");
    assert!(read(&dir, "trials.csv").starts_with("trial,config,replication,seed,is_base,"));
    let (f, d, m) = (
        file.to_str().unwrap(),
        dir.to_str().unwrap(),
        tmp.path().join("merged"),
    );
    let m = m.to_str().unwrap();
    // The same model resumes (nothing left to run) and merges.
    sweep_into(&dir, &file, &["--resume"]);
    assert!(fleetsim(&["merge", d, "--out", m]).status.success());
    assert_eq!(read(Path::new(m), "model.toml"), model);

    // Another model: refused, naming the file and both tags.
    let other = fleetsim::MODEL_VERSION + 1;
    fs::write(
        dir.join("model.toml"),
        format!(
            "schema_version = {}\nmodel_version = {other}\nfleetsim_version = \"0.0.1\"\n",
            fleetsim::sweep::csvio::SCHEMA_VERSION
        ),
    )
    .unwrap();
    for args in [
        vec!["sweep", f, "--out", d, "--resume"],
        vec!["merge", d, "--out", m],
    ] {
        let err = refused(&args);
        assert!(err.contains(&format!("{d}/model.toml")), "{err}");
        assert!(
            err.contains(&format!("model {other} (fleetsim 0.0.1)")),
            "{err}"
        );
        assert!(err.contains(&fleetsim::model_tag()), "{err}");
    }

    // A bad manifest names its line.
    fs::write(dir.join("model.toml"), "model_version = \"one\"\n").unwrap();
    let err = refused(&["sweep", f, "--out", d, "--resume"]);
    assert!(err.contains(&format!("{d}/model.toml:1:")), "{err}");

    // Before model tags: refused with what to do.
    fs::remove_file(dir.join("model.toml")).unwrap();
    for args in [
        vec!["sweep", f, "--out", d, "--resume"],
        vec!["merge", d, "--out", m],
    ] {
        let err = refused(&args);
        assert!(err.contains(&format!("{d}/model.toml: missing")), "{err}");
        assert!(
            err.contains("older than model tags") && err.contains("re-run"),
            "{err}"
        );
    }
}

/// `run_in_order` hands rows on in trial order with no gap, whatever the
/// thread count; a stop raised after k rows ends with an in-order prefix
/// (no row past a missing one), and an error from `each` is returned and
/// stops the run.
#[test]
fn run_in_order_keeps_an_in_order_prefix_on_stop_and_error() {
    use fleetsim::scenario::{DEFAULT_SCENARIO, load};
    use fleetsim::sweep::runner::{Base, run_in_order};
    use std::sync::atomic::{AtomicBool, Ordering};
    let raw: fleetsim::sweep::RawSweep = toml::from_str(
        "seed = 3\nreplications = 1\nhours = 24.0\nsampler = \"random\"\n\
         samples = 100\n[[param]]\nkey = \"policy.cooldown_s\"\nmin = 30.0\nmax = 300.0\n\
         [[objective]]\nmetric = \"recycles_per_hour\"\n",
    )
    .unwrap();
    let sweep = fleetsim::sweep::validate(&raw).unwrap();
    let (raw_sc, _) = load(DEFAULT_SCENARIO, "default", &[], &mut |_| Err("no".into())).unwrap();
    let base = Base::new(&raw_sc, "default", None, sweep.hours);
    let pending: Vec<u64> = (0..(sweep.config_count() + 1) * sweep.replications).collect();
    // A day each (~6 ms): after a stop at row 7 the workers cannot run the
    // ~90 trials left before the receiver hands on the next row.
    assert!(pending.len() > 90);
    let never = AtomicBool::new(false);
    for threads in [1, 2, 4] {
        let mut seen = Vec::new();
        run_in_order::<String>(&base, &sweep, &pending, threads, &never, |t| {
            seen.push(t.trial);
            Ok(())
        })
        .unwrap();
        assert_eq!(seen, pending, "{threads} threads");
        // Stopped after 7 rows: a prefix of the trials, in order.
        let stop = AtomicBool::new(false);
        let mut seen = Vec::new();
        run_in_order::<String>(&base, &sweep, &pending, threads, &stop, |t| {
            seen.push(t.trial);
            if seen.len() == 7 {
                stop.store(true, Ordering::Relaxed);
            }
            Ok(())
        })
        .unwrap();
        assert!(seen.len() >= 7 && seen.len() < pending.len(), "{seen:?}");
        assert_eq!(seen, pending[..seen.len()], "{threads} threads");
        // An error at the fifth row is returned; nothing is handed on after it.
        let mut seen = Vec::new();
        let r = run_in_order(&base, &sweep, &pending, threads, &never, |t| {
            seen.push(t.trial);
            if seen.len() == 5 {
                Err("disk full".to_string())
            } else {
                Ok(())
            }
        });
        assert_eq!(r, Err("disk full".to_string()));
        assert_eq!(seen, pending[..5]);
    }
}
