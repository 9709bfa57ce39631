//! A sharded sweep on a real Slurm: `deploy/slurm/sweep-array.sh` submitted
//! as `sbatch --wait --array=0-(N-1)`, each array task running
//! `fleetsim sweep --shard K/N` into a shard folder far from the sweep
//! file, then `fleetsim merge` run from another folder; the merged outputs
//! must be byte-identical to the unsharded sweep's.
//!
//! Needs a cluster: `.ci/run` starts one (`deploy/slurm/ci-cluster.sh
//! start`, a single node on localhost) and sets FLEETSIM_REQUIRE_SLURM=1,
//! which turns a missing `sbatch` or a cluster that does not answer into a
//! failure. Without it the test says why it skips and passes.

mod common;

use common::TempDir;
use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

/// The array's size: shards of the sweep below.
const SHARDS: u64 = 3;
/// How long the array may take before the test cancels it and fails.
const WAIT: Duration = Duration::from_secs(300);

const BASE: &str = "[workload]\nprofile = \"constant\"\nrps = 1.2\n";
const SWEEP: &str = "base = \"../bases/slurm-base.toml\"\nseed = 11\nreplications = 2\nhours = 0.5\n\
                     [[param]]\nkey = \"policy.cooldown_s\"\nvalues = [30.0, 120.0, 300.0]\n\
                     [[param]]\nkey = \"policy.tick_s\"\nvalues = [15.0, 45.0]\n\
                     [[objective]]\nmetric = \"capacity_loss_fraction\"\n";
const FILES: [&str; 7] = [
    "sweep.toml",
    "base.toml",
    "model.toml",
    "trials.csv",
    "results.csv",
    "pareto.csv",
    "best.toml",
];

fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn on_path(cmd: &str) -> bool {
    std::env::var_os("PATH")
        .is_some_and(|p| std::env::split_paths(&p).any(|d| d.join(cmd).is_file()))
}

/// Whether the test may run; with FLEETSIM_REQUIRE_SLURM=1 a reason not
/// to is a failure.
fn cluster_ready() -> bool {
    let required = std::env::var("FLEETSIM_REQUIRE_SLURM").is_ok_and(|v| v == "1");
    let why = if !on_path("sbatch") {
        Some("sbatch is not on PATH".to_string())
    } else {
        let ping = Command::new("scontrol").arg("ping").output();
        match ping {
            Ok(o) if String::from_utf8_lossy(&o.stdout).contains("is UP") => None,
            Ok(o) => Some(format!(
                "slurmctld does not answer `scontrol ping`: {}{}",
                String::from_utf8_lossy(&o.stdout).trim(),
                String::from_utf8_lossy(&o.stderr).trim()
            )),
            Err(e) => Some(format!("scontrol: {e}")),
        }
    };
    match why {
        None => true,
        Some(why) if required => panic!(
            "FLEETSIM_REQUIRE_SLURM=1 but {why}: start the cluster with \
             `bash deploy/slurm/ci-cluster.sh start`"
        ),
        Some(why) => {
            eprintln!(
                "skipped: {why} (start one with `bash deploy/slurm/ci-cluster.sh start`; \
                 FLEETSIM_REQUIRE_SLURM=1 makes this a failure)"
            );
            false
        }
    }
}

fn ok(o: Output, what: &str) -> Output {
    assert!(
        o.status.success(),
        "{what}: {}{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    );
    o
}

fn read(dir: &Path, name: &str) -> String {
    fs::read_to_string(dir.join(name)).unwrap_or_else(|e| panic!("{}/{name}: {e}", dir.display()))
}

/// Every array task's log, for a failure message.
fn logs(dir: &Path) -> String {
    let mut names: Vec<PathBuf> = fs::read_dir(dir)
        .map(|d| d.flatten().map(|e| e.path()).collect())
        .unwrap_or_default();
    names.sort();
    names
        .iter()
        .map(|p| {
            format!(
                "--- {}\n{}",
                p.display(),
                fs::read_to_string(p).unwrap_or_default()
            )
        })
        .collect()
}

/// `sbatch --wait`, bounded: past `WAIT` the job is cancelled and the test
/// fails with the tasks' logs.
fn submit_and_wait(root: &Path, sweep: &Path, results: &Path, log_dir: &Path) {
    let script = repo().join("deploy/slurm/sweep-array.sh");
    let mut child = Command::new("sbatch")
        .current_dir(root)
        .args([
            "--wait",
            "--parsable",
            &format!("--array=0-{}", SHARDS - 1),
            "--job-name=fleetsim-ci-sweep",
            &format!("--output={}/%A_%a.out", log_dir.display()),
        ])
        .arg(&script)
        .env("FLEETSIM", env!("CARGO_BIN_EXE_fleetsim"))
        .env("SWEEP", sweep)
        .env("RESULTS", results)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("sbatch starts");
    let start = Instant::now();
    let status = loop {
        if let Some(s) = child.try_wait().expect("sbatch waits") {
            break s;
        }
        if start.elapsed() > WAIT {
            let _ = Command::new("scancel")
                .args(["--name", "fleetsim-ci-sweep"])
                .status();
            let _ = child.kill();
            panic!("the array did not finish in {WAIT:?}\n{}", logs(log_dir));
        }
        std::thread::sleep(Duration::from_millis(200));
    };
    let out = child.wait_with_output().expect("sbatch's output");
    assert!(
        status.success(),
        "sbatch --wait: {status}: {}{}\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr),
        logs(log_dir)
    );
}

#[test]
fn a_slurm_job_array_merges_to_the_unsharded_sweep() {
    if !cluster_ready() {
        return;
    }
    let tmp = TempDir::new("slurm");
    let root = tmp.path();
    let (sweeps, bases) = (root.join("cfg/sweeps"), root.join("cfg/bases"));
    fs::create_dir_all(&sweeps).unwrap();
    fs::create_dir_all(&bases).unwrap();
    fs::write(bases.join("slurm-base.toml"), BASE).unwrap();
    let sweep = sweeps.join("s.toml");
    fs::write(&sweep, SWEEP).unwrap();
    let one = root.join("unsharded");
    let bin = env!("CARGO_BIN_EXE_fleetsim");
    ok(
        Command::new(bin)
            .args([
                "sweep",
                sweep.to_str().unwrap(),
                "--out",
                one.to_str().unwrap(),
            ])
            .output()
            .unwrap(),
        "the unsharded sweep",
    );
    let results = root.join("scratch/results");
    let log_dir = root.join("slurm-logs");
    fs::create_dir_all(&log_dir).unwrap();
    submit_and_wait(root, &sweep, &results, &log_dir);
    for k in 0..SHARDS {
        let t = results.join(format!("shard-{k}/trials.csv"));
        assert!(
            t.is_file(),
            "{}: not written\n{}",
            t.display(),
            logs(&log_dir)
        );
    }
    let mut shards: Vec<String> = (0..SHARDS)
        .map(|k| format!("../scratch/results/shard-{k}"))
        .collect();
    // From another folder, with the sweep's folder gone.
    fs::rename(root.join("cfg"), root.join("cfg-gone")).unwrap();
    let elsewhere = root.join("elsewhere");
    fs::create_dir_all(&elsewhere).unwrap();
    let mut args = vec!["merge".to_string()];
    args.append(&mut shards);
    args.extend(["--out".into(), "merged".into()]);
    ok(
        Command::new(bin)
            .current_dir(&elsewhere)
            .args(&args)
            .output()
            .unwrap(),
        "merge",
    );
    for f in FILES {
        assert_eq!(
            read(&one, f),
            read(&elsewhere.join("merged"), f),
            "{f}: the Slurm shards merged differ from the unsharded sweep"
        );
    }
}
