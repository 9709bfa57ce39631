//! The files in deploy/ are real and agree with each other: the Kubernetes
//! YAML parses, its shard count, commands, image and volumes match the
//! layout README describes, and its shell commands, run here against a
//! small sweep, shard and merge byte-identical to an unsharded sweep; the
//! Slurm array script does the same with the variables Slurm sets; the
//! Dockerfile builds with the script CI runs; `--version`, `man` and
//! `completions` work (tests/slurm.rs submits the Slurm script to a real
//! cluster).

mod common;

use common::TempDir;
use serde::Deserialize;
use serde_json::Value;
use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

/// Shards in deploy/k8s/sweep.yaml.
const K8S_SHARDS: u64 = 8;

/// Ten trials (4 configurations + the base, 2 replications): every one of
/// eight shards gets at least one.
const SMALL: &str = "seed = 9\nreplications = 2\nhours = 0.25\n\
                     [[param]]\nkey = \"policy.cooldown_s\"\nvalues = [30.0, 240.0]\n\
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

fn repo(path: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join(path)
}

fn text(path: &str) -> String {
    fs::read_to_string(repo(path)).unwrap_or_else(|e| panic!("{path}: {e}"))
}

fn bin() -> &'static str {
    env!("CARGO_BIN_EXE_fleetsim")
}

/// PATH with the binary under test first, so `fleetsim` in a script is it.
fn path_with_bin() -> String {
    let dir = Path::new(bin()).parent().unwrap();
    format!(
        "{}:{}",
        dir.display(),
        std::env::var("PATH").unwrap_or_default()
    )
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

/// `sh -c SCRIPT` with `env`, bounded in time (the merge's wait loop must
/// end once every shard is done).
fn sh(script: &str, env: &[(&str, String)]) -> Output {
    let mut c = Command::new("sh");
    c.arg("-c").arg(script).env("PATH", path_with_bin());
    for (k, v) in env {
        c.env(k, v);
    }
    let mut child = c
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("sh starts");
    let start = Instant::now();
    while child.try_wait().expect("sh waits").is_none() {
        if start.elapsed() > Duration::from_secs(120) {
            let _ = child.kill();
            panic!("`{script}` did not finish in 120 s");
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    child.wait_with_output().unwrap()
}

fn read(dir: &Path, name: &str) -> String {
    fs::read_to_string(dir.join(name)).unwrap_or_else(|e| panic!("{}/{name}: {e}", dir.display()))
}

/// The unsharded sweep of `sweep` into `root/unsharded`.
fn unsharded(root: &Path, sweep: &Path) -> PathBuf {
    let one = root.join("unsharded");
    let args = [
        "sweep",
        sweep.to_str().unwrap(),
        "--out",
        one.to_str().unwrap(),
    ];
    ok(
        Command::new(bin()).args(args).output().unwrap(),
        "unsharded sweep",
    );
    one
}

fn same_outputs(one: &Path, merged: &Path) {
    for f in FILES {
        assert_eq!(
            read(one, f),
            read(merged, f),
            "{f}: merged differs from unsharded"
        );
    }
}

fn docs() -> Vec<Value> {
    let yaml = text("deploy/k8s/sweep.yaml");
    serde_norway::Deserializer::from_str(&yaml)
        .map(|d| Value::deserialize(d).expect("deploy/k8s/sweep.yaml parses"))
        .collect()
}

fn kind<'a>(docs: &'a [Value], kind: &str, name: &str) -> &'a Value {
    docs.iter()
        .find(|d| d["kind"] == kind && d["metadata"]["name"] == name)
        .unwrap_or_else(|| panic!("no {kind} {name} in deploy/k8s/sweep.yaml"))
}

fn script(container: &Value) -> String {
    let cmd = container["command"].as_array().expect("a command list");
    assert_eq!(cmd[..2], [Value::from("sh"), Value::from("-c")], "{cmd:?}");
    cmd[2].as_str().unwrap().to_string()
}

/// Every container's image is the one deploy/Dockerfile builds.
fn check_pod(pod: &Value) {
    let image = format!("fleetsim:{}", env!("CARGO_PKG_VERSION"));
    let containers = pod["containers"].as_array().unwrap();
    let init = pod["initContainers"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    for c in containers.iter().chain(&init) {
        assert_eq!(c["image"], image.as_str(), "{}", c["name"]);
        for m in c["volumeMounts"].as_array().unwrap() {
            let vol = pod["volumes"]
                .as_array()
                .unwrap()
                .iter()
                .find(|v| v["name"] == m["name"])
                .unwrap_or_else(|| panic!("mount {} has no volume", m["name"]));
            match m["mountPath"].as_str().unwrap() {
                "/results" => assert_eq!(
                    vol["persistentVolumeClaim"]["claimName"],
                    "fleetsim-results"
                ),
                "/sweeps" => assert_eq!(vol["configMap"]["name"], "fleetsim-sweep"),
                other => panic!("unexpected mount {other}"),
            }
        }
    }
}

#[test]
fn the_kubernetes_jobs_shard_and_merge_as_readme_says() {
    let docs = docs();
    let n = K8S_SHARDS;
    // The ConfigMap's sweep is the repo's cooldown sweep on the embedded
    // default, which is the base that sweep names.
    let cm = kind(&docs, "ConfigMap", "fleetsim-sweep");
    let shipped: Vec<String> = text("scenarios/sweeps/render-2x3-cooldown.toml")
        .lines()
        .filter(|l| !l.starts_with("base = "))
        .map(String::from)
        .collect();
    let in_cm: Vec<&str> = cm["data"]["sweep.toml"].as_str().unwrap().lines().collect();
    assert_eq!(in_cm, shipped, "the ConfigMap's sweep.toml drifted");
    assert!(
        text("scenarios/sweeps/render-2x3-cooldown.toml").contains("base = \"../render-2x3.toml\"")
    );
    assert_eq!(
        fleetsim::scenario::DEFAULT_SCENARIO,
        text("scenarios/render-2x3.toml")
    );
    kind(&docs, "PersistentVolumeClaim", "fleetsim-results");
    let job = &kind(&docs, "Job", "fleetsim-sweep")["spec"];
    assert_eq!(job["completionMode"], "Indexed");
    assert_eq!(job["completions"], n);
    assert_eq!(job["parallelism"], n);
    check_pod(&job["template"]["spec"]);
    let shard = script(&job["template"]["spec"]["containers"][0]);
    assert!(
        shard.contains(&format!("--shard \"$JOB_COMPLETION_INDEX/{n}\"")),
        "{shard}"
    );
    let merge_job = &kind(&docs, "Job", "fleetsim-merge")["spec"]["template"]["spec"];
    check_pod(merge_job);
    let wait = script(&merge_job["initContainers"][0]);
    assert!(wait.contains(&format!("-lt {n}")), "{wait}");
    let merge = script(&merge_job["containers"][0]);
    let dirs: Vec<String> = (0..n).map(|k| format!("/results/shard-{k}")).collect();
    assert!(
        merge.contains(&format!(
            "fleetsim merge {} --out /results/merged",
            dirs.join(" ")
        )),
        "{merge}"
    );

    // The commands themselves, on this machine: /sweeps and /results are
    // folders here, the sweep a small one.
    let tmp = TempDir::new("deploy-k8s");
    let root = tmp.path();
    let (sweeps, results) = (root.join("sweeps"), root.join("results"));
    fs::create_dir_all(&sweeps).unwrap();
    fs::create_dir_all(&results).unwrap();
    fs::write(sweeps.join("sweep.toml"), SMALL).unwrap();
    let local = |s: &str| {
        s.replace("/sweeps/", &format!("{}/", sweeps.display()))
            .replace("/results", &results.display().to_string())
    };
    for k in 0..n {
        let env = [("JOB_COMPLETION_INDEX", k.to_string())];
        ok(sh(&local(&shard), &env), &format!("shard {k}"));
        if k == 3 {
            // A restarted pod: the shard resumes, with nothing left to do.
            ok(sh(&local(&shard), &env), "shard 3 restarted");
        }
    }
    ok(sh(&local(&wait), &[]), "the merge's wait");
    ok(sh(&local(&merge), &[]), "the merge");
    same_outputs(
        &unsharded(root, &sweeps.join("sweep.toml")),
        &results.join("merged"),
    );
}

#[test]
fn the_slurm_array_script_shards_with_the_variables_slurm_sets() {
    let tmp = TempDir::new("deploy-slurm");
    let root = tmp.path();
    let sweep = root.join("cfg/s.toml");
    fs::create_dir_all(sweep.parent().unwrap()).unwrap();
    fs::write(&sweep, SMALL).unwrap();
    let results = root.join("results");
    let script = repo("deploy/slurm/sweep-array.sh");
    let n = 3u64;
    for k in 0..n {
        let env = [
            ("SLURM_ARRAY_TASK_ID", k.to_string()),
            ("SLURM_ARRAY_TASK_COUNT", n.to_string()),
            ("SWEEP", sweep.display().to_string()),
            ("RESULTS", results.display().to_string()),
            ("FLEETSIM", bin().to_string()),
        ];
        ok(
            sh(&format!("sh {}", script.display()), &env),
            &format!("task {k}"),
        );
    }
    // Without Slurm's variables it refuses, saying how to submit it.
    let o = sh(
        &format!("sh {}", script.display()),
        &[("SWEEP", sweep.display().to_string())],
    );
    assert!(!o.status.success());
    assert!(String::from_utf8_lossy(&o.stderr).contains("sbatch --array"));
    let merged = root.join("merged");
    let mut args = vec!["merge".to_string()];
    args.extend((0..n).map(|k| results.join(format!("shard-{k}")).display().to_string()));
    args.extend(["--out".into(), merged.display().to_string()]);
    ok(Command::new(bin()).args(&args).output().unwrap(), "merge");
    same_outputs(&unsharded(root, &sweep), &merged);
}

#[test]
fn the_image_builds_with_the_script_ci_runs() {
    let docker = text("deploy/Dockerfile");
    let stages: Vec<&str> = docker.lines().filter(|l| l.starts_with("FROM ")).collect();
    assert_eq!(
        stages.len(),
        2,
        "a build stage and a small final one: {stages:?}"
    );
    assert!(stages[0].ends_with(" AS build"), "{}", stages[0]);
    assert!(stages[1].contains("-slim"), "{}", stages[1]);
    assert!(docker.contains("RUN bash deploy/build.sh release /out"));
    assert!(docker.contains("COPY --from=build /out/ /usr/local/"));
    let tag = format!("-t fleetsim:{} .", env!("CARGO_PKG_VERSION"));
    assert!(docker.contains(&tag), "the Dockerfile's tag is not {tag}");
    let ci = text(".ci/run");
    assert!(
        ci.contains("bash deploy/build.sh checked"),
        "CI builds with deploy/build.sh"
    );
    assert!(ci.contains("bash deploy/slurm/ci-cluster.sh start"));
    assert!(ci.contains("FLEETSIM_REQUIRE_SLURM=1 cargo test"));
}

#[test]
fn version_license_man_pages_and_completions() {
    let run = |args: &[&str]| {
        ok(
            Command::new(bin()).args(args).output().unwrap(),
            &args.join(" "),
        )
    };
    let v = String::from_utf8(run(&["--version"]).stdout).unwrap();
    assert_eq!(
        v,
        format!(
            "fleetsim {} (model {})\n",
            fleetsim::VERSION,
            fleetsim::MODEL_VERSION
        )
    );
    let cargo: toml::Table = text("Cargo.toml").parse().unwrap();
    let package = cargo["package"].as_table().unwrap();
    assert_eq!(package["license"].as_str(), Some("MIT"));
    assert!(text("LICENSE").starts_with("MIT License\n"));
    assert!(
        package["description"]
            .as_str()
            .is_some_and(|d| d.len() > 20)
    );
    for shell in ["bash", "zsh", "fish", "elvish", "powershell"] {
        let out = String::from_utf8(run(&["completions", shell]).stdout).unwrap();
        assert!(out.contains("fleetsim") && out.contains("merge"), "{shell}");
    }
    let page = String::from_utf8(run(&["man"]).stdout).unwrap();
    assert!(
        page.contains(".TH fleetsim 1"),
        "{}",
        &page[..page.len().min(300)]
    );
    assert!(page.contains("completions"));
    let tmp = TempDir::new("deploy-man");
    run(&["man", "--out", tmp.path().to_str().unwrap()]);
    for name in [
        "fleetsim",
        "fleetsim-run",
        "fleetsim-sweep",
        "fleetsim-merge",
        "fleetsim-man",
    ] {
        let p = read(tmp.path(), &format!("{name}.1"));
        assert!(p.contains(&format!(".TH {name} 1")), "{name}.1");
    }
    let run_page = read(tmp.path(), "fleetsim-run.1");
    assert!(
        run_page.contains("seed"),
        "fleetsim-run.1 lists run's flags"
    );
}
