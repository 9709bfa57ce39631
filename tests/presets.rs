//! Every scenario file under `scenarios/` loads, runs with invariant checks
//! on every event, and its summary is plausible for the system it models.

use fleetsim::Sim;
use fleetsim::metrics::{NullObserver, Summary};
use fleetsim::scenario::load;
use std::path::Path;

/// Presets too large to run with invariant checks on every event, and the
/// overrides that shrink them (the same policy on fewer instances, at the
/// same rate per worker, for less time).
const SHRUNK: [(&str, &[&str]); 1] = [(
    "large-fleet",
    &[
        "fleet.instances=25",
        "workload.rps=1000",
        "policy.token_bucket.rate_per_hour=360",
        "run.duration_h=2",
    ],
)];

fn run_file(path: &Path) -> Summary {
    let text = std::fs::read_to_string(path).unwrap();
    let dir = path.parent().unwrap().to_path_buf();
    let mut read = |rel: &str| std::fs::read_to_string(dir.join(rel)).map_err(|e| e.to_string());
    let stem = path.file_stem().unwrap().to_string_lossy();
    let sets: Vec<_> = SHRUNK
        .iter()
        .filter(|(name, _)| *name == stem)
        .flat_map(|(_, sets)| sets.iter())
        .map(|s| fleetsim::scenario::parse_override(s).unwrap())
        .collect();
    let (_, sc) = load(&text, &path.display().to_string(), &sets, &mut read)
        .unwrap_or_else(|e| panic!("{e}"));
    Sim::new(&sc, 1, NullObserver)
        .with_invariant_checks()
        .run()
        .unwrap_or_else(|e| panic!("{}: {e}", path.display()))
        .summary
}

/// What each preset must show; every file in scenarios/ must be listed.
fn plausible(name: &str, s: &Summary, seeds_default: &Summary) {
    assert!(s.recycles > 0, "{name}: no recycles");
    assert!(
        s.requests_failed * 100 < s.requests_total.max(1),
        "{name}: too many failures"
    );
    let all_by = |n: u64| n == s.recycles;
    match name {
        "render-2x3" => {
            assert!(s.count("lease_acquired") > 0 && s.count("recycles_rss_limit") == s.recycles);
        }
        "render-2x3-fixed" => {
            // Steps can still jump RSS over the ceiling, but the escalation
            // and adaptive sampling end it within pressure cooldown + near
            // tick (30 + 5 s, plus the drain of a request in flight).
            assert!(
                s.over_ceiling_dwell_max_s <= 40.0,
                "dwell {}",
                s.over_ceiling_dwell_max_s
            );
            assert!(s.overshoot_mb_s < seeds_default.overshoot_mb_s);
            assert!(
                s.count("holds_bucket_empty") > 0,
                "the token bucket never held"
            );
            // Every recycle passes the bucket: those it granted are bounded
            // by its burst (2) plus its rate (8 an hour); exits are apart.
            let granted = s.recycles
                - s.count("bucket_bypass_pressure")
                - s.count("bucket_bypass_hard_ceiling");
            assert!(
                granted as f64 <= 2.0 + 8.0 * s.duration_h,
                "the bucket granted {granted} in {} h",
                s.duration_h
            );
            assert!(s.recycles_young_fraction < seeds_default.recycles_young_fraction);
            assert!(s.requests_per_worker_p10 > seeds_default.requests_per_worker_p10);
        }
        "render-2x3-surges" => {
            // Seed 1 draws three episodes; every worker grows with them, so
            // the lease-paced train is longer than the default's busiest hour
            // and pressure recycles come from the surges.
            let surge = s.surge.expect("surges are on");
            assert!(surge.episodes > 0 && surge.episode_s > 0.0, "{surge:?}");
            assert!(s.peak_hour_recycles > seeds_default.peak_hour_recycles);
            assert!(s.pressure_recycles > 0);
            assert_eq!(s.oom_kills, 0);
        }
        "gunicorn-max-requests" => {
            assert!(all_by(s.count("recycles_max_requests")));
            assert!(s.requests_per_worker_min >= Some(1000.0));
            assert!(s.requests_per_worker_max <= Some(1100.0));
        }
        "php-fpm-max-requests" => {
            assert!(all_by(s.count("recycles_max_requests")));
            assert_eq!(s.requests_per_worker_min, Some(500.0));
            assert_eq!(s.requests_per_worker_max, Some(500.0));
        }
        "uvicorn-max-requests" => {
            // 1000 + randint(0, 100); the undici client drops idle
            // connections (4 s) before uvicorn's 5 s keep-alive does.
            assert!(all_by(s.count("recycles_max_requests")));
            assert!(s.requests_per_worker_min >= Some(1000.0));
            assert!(s.requests_per_worker_max <= Some(1100.0));
            assert!(s.retry_ok < seeds_default.retry_ok / 10, "{}", s.retry_ok);
        }
        "celery-max-memory" => {
            // ru_maxrss after every task, one limit for every child, and
            // tasks that come through pipes: no reset.
            assert!(all_by(s.count("recycles_rss_limit")));
            assert_eq!(s.retry_ok + s.fetch_failed, 0);
        }
        "octane-roadrunner" => {
            // RoadRunner's 500 + 0-14 % and a Go proxy that owns the
            // client's connections: no stale reset at all.
            assert!(all_by(s.count("recycles_max_requests")));
            assert!(s.requests_per_worker_min >= Some(500.0));
            assert!(s.requests_per_worker_max <= Some(570.0));
            assert_eq!(s.retry_ok + s.fetch_failed, 0);
        }
        "uwsgi-reload-on-rss" => {
            assert!(all_by(
                s.count("recycles_rss_limit") + s.count("recycles_max_requests")
            ));
            assert_eq!(s.count("lease_acquired"), 0);
        }
        "unicorn-worker-killer" => {
            assert!(all_by(
                s.count("recycles_rss_limit") + s.count("recycles_max_requests")
            ));
        }
        "puma-worker-killer" => {
            assert!(all_by(
                s.count("recycles_instance_memory") + s.count("recycles_lifetime")
            ));
            assert!(s.count("recycles_instance_memory") > 0);
            // It lets workers grow until the instance is nearly full.
            assert!(s.max_rss_mb > seeds_default.max_rss_mb);
        }
        "granian-max-rss" => {
            // The successor boots (2 s) inside the 3.5 s handover interval.
            assert!(all_by(s.count("recycles_rss_limit")));
            assert!(s.capacity_loss_fraction < seeds_default.capacity_loss_fraction / 10.0);
        }
        "passenger-rolling" => {
            // Detached at once: the slot serves nothing for the boot.
            assert!(all_by(s.count("recycles_rss_limit")));
            assert!(s.capacity_loss_fraction > 0.0);
        }
        "leakless" => {
            assert!(s.count("recycles_drift") > 0);
            assert!(all_by(
                s.count("recycles_drift")
                    + s.count("recycles_rss_limit")
                    + s.count("recycles_max_requests")
            ));
        }
        "large-fleet" => {
            // Aggregate mode, shrunk to 200 workers (SHRUNK): RSS recycles
            // through the bucket, no OOM, estimated client side.
            assert!(all_by(s.count("recycles_rss_limit")));
            assert_eq!(s.oom_kills, 0);
            assert!(s.retry_ok > 0 && s.latency_ms_p50.is_some());
            assert!(s.capacity_loss_fraction < 0.01);
        }
        other => panic!("scenarios/{other}.toml has no plausibility check: add one"),
    }
}

#[test]
fn every_scenario_file_runs_and_is_plausible() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("scenarios");
    let seeds_default = run_file(&dir.join("render-2x3.toml"));
    let mut files: Vec<_> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "toml"))
        .collect();
    files.sort();
    assert!(files.len() >= 10, "the presets are missing: {files:?}");
    for path in files {
        let name = path.file_stem().unwrap().to_string_lossy().into_owned();
        let s = run_file(&path);
        plausible(&name, &s, &seeds_default);
    }
}
