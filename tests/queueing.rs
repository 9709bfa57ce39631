//! The engine agrees with queueing theory: one instance of `C` sync workers,
//! no leak and nothing that could recycle, constant Poisson arrivals and
//! exponential service is an M/M/c queue, whose mean wait is Erlang C.
//!
//! Statistical honesty. The sample mean of waiting times at high load is
//! strongly autocorrelated: at rho = 0.9 one run of 10^6 requests has a
//! relative standard deviation of about 2.5 % (measured over 40 seeds:
//! sd 48.8 ms around 1969 ms), so a single run would miss a 2 % tolerance
//! about four times in ten. We therefore average `K` independent seeds and
//! estimate the standard error of that average from the spread between
//! seeds; the test asserts that the estimated standard error is at most a
//! third of the tolerance (so 2 % is >= 3 standard errors: a correct engine
//! fails with probability < 0.3 %, while a 2 % bias in the engine is caught
//! half the time or more, and anything larger almost surely) and then that
//! the average is within 2 % of Erlang C.
//!
//! The first seed of each load runs with every invariant checked after every
//! event; the others run unchecked (five times faster), since they only add
//! statistical weight to the same scenario.

mod common;

use common::{Recorder, erlang_c, run_checked, scenario};
use fleetsim::Sim;
use fleetsim::metrics::Summary;

/// Workers (servers) in the instance.
const C: u32 = 4;
/// Mean service time. Long against the 1 us clock so rounding is negligible.
const SERVICE_S: f64 = 1.0;
/// Requests per seed.
const REQUESTS_PER_RUN: f64 = 1.0e6;
/// Relative tolerance on the mean wait.
const TOLERANCE: f64 = 0.02;

/// Mean time in queue (before service) of an M/M/c queue, seconds.
fn mmc_wait_s(c: u32, lambda: f64, mu: f64) -> f64 {
    erlang_c(c, lambda / mu) / (c as f64 * mu - lambda)
}

#[test]
fn erlang_c_matches_known_values() {
    // M/M/1: P(wait) = rho and Wq = rho / (mu - lambda).
    for (lambda, mu) in [(0.5, 1.0), (9.0, 10.0), (3.0, 4.0)] {
        let rho: f64 = lambda / mu;
        assert!((erlang_c(1, rho) - rho).abs() < 1e-12);
        assert!((mmc_wait_s(1, lambda, mu) - rho / (mu - lambda)).abs() < 1e-12);
    }
    // M/M/2 at rho = 0.5 (a = 1): C = 1/3 (textbook closed form 2 rho^2 / (1 + rho)).
    assert!((erlang_c(2, 1.0) - 1.0 / 3.0).abs() < 1e-12);
    // M/M/4 at a = 3.6 by the explicit sum: (a^c/c!)(c/(c-a)) / (sum_{k<c} a^k/k! + that).
    let a: f64 = 3.6;
    let top = a.powi(4) / 24.0 * 4.0 / (4.0 - a);
    let sum = 1.0 + a + a * a / 2.0 + a.powi(3) / 6.0;
    assert!((erlang_c(4, a) - top / (sum + top)).abs() < 1e-12);
}

/// The M/M/c fleet: one instance, `C` sync workers, no memory growth, limits
/// and the cgroup far above anything, an unbounded backlog and no timeout.
fn mmc_sets(rps: f64, hours: f64) -> Vec<String> {
    vec![
        "fleet.instances=1".into(),
        format!("fleet.workers_per_instance={C}"),
        "fleet.concurrency=1".into(),
        "fleet.leak.mean_mb_per_request=0".into(),
        "fleet.leak.warmup_mb=0".into(),
        "fleet.leak.step_probability=0".into(),
        "fleet.warm_start=false".into(),
        "fleet.container_mb=100000".into(),
        "policy.base_limit_mb=50000".into(),
        "policy.hard_limit_mb=60000".into(),
        "workload.profile=constant".into(),
        format!("workload.rps={rps}"),
        "workload.service=exponential".into(),
        format!("workload.service_mean_ms={}", SERVICE_S * 1000.0),
        "workload.backlog_requests=4000000000".into(),
        "workload.queue_timeout_s=1000000".into(),
        "run.timeline_step_s=5".into(),
        format!("run.duration_h={hours}"),
    ]
}

struct Replicas {
    waits_ms: Vec<f64>,
    /// Little's law per replica: (time-average queue length, lambda * Wq).
    little: Vec<(f64, f64)>,
}

/// Runs `k` seeds of about `REQUESTS_PER_RUN` requests each at load `rho`.
fn replicate(rho: f64, k: u64) -> Replicas {
    let mu = 1.0 / SERVICE_S;
    let lambda = rho * C as f64 * mu;
    let hours = REQUESTS_PER_RUN / lambda / 3600.0;
    let sets = mmc_sets(lambda, hours);
    let sets: Vec<&str> = sets.iter().map(String::as_str).collect();
    let sc = scenario(&sets);
    let mut out = Replicas {
        waits_ms: Vec::new(),
        little: Vec::new(),
    };
    for seed in 1..=k {
        let mut rec = Recorder::default();
        let s: Summary = if seed == 1 {
            run_checked(&sc, seed, &mut rec)
        } else {
            Sim::new(&sc, seed, &mut rec).run().expect("run").summary
        };
        // Nothing may recycle, be killed or fail: it would not be M/M/c.
        assert_eq!(s.recycles, 0, "seed {seed}: recycled");
        assert_eq!(s.oom_kills + s.drain_kills, 0, "seed {seed}: killed");
        assert_eq!(s.requests_failed, 0, "seed {seed}: failures");
        assert_eq!(s.requests_reset, 0, "seed {seed}: resets");
        assert_eq!(s.capacity_loss_fraction, 0.0);
        assert!(
            (s.requests_total as f64 / REQUESTS_PER_RUN - 1.0).abs() < 0.01,
            "seed {seed}: {} requests",
            s.requests_total
        );
        let wait_ms = s.wait_ms_mean.expect("requests were served");
        out.waits_ms.push(wait_ms);
        let lambda_hat = s.requests_total as f64 / (hours * 3600.0);
        let lq = rec.backlog_sum as f64 / rec.timeline_rows as f64;
        out.little.push((lq, lambda_hat * wait_ms / 1000.0));
    }
    out
}

fn mean_and_se(xs: &[f64]) -> (f64, f64) {
    let n = xs.len() as f64;
    let mean = xs.iter().sum::<f64>() / n;
    let var = xs.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / (n - 1.0);
    (mean, (var / n).sqrt())
}

/// Mean wait over `k` seeds within `TOLERANCE` of Erlang C, with the
/// between-seed standard error small enough for that to mean something;
/// and Little's law `Lq = lambda Wq` on the same runs.
fn assert_erlang_c(rho: f64, k: u64) {
    let mu = 1.0 / SERVICE_S;
    let lambda = rho * C as f64 * mu;
    let expected_ms = mmc_wait_s(C, lambda, mu) * 1000.0;
    let r = replicate(rho, k);
    let (mean_ms, se_ms) = mean_and_se(&r.waits_ms);
    let rel_err = mean_ms / expected_ms - 1.0;
    let rel_se = se_ms / expected_ms;
    eprintln!(
        "rho {rho}: Erlang C Wq {expected_ms:.3} ms, measured {mean_ms:.3} ms \
         ({:+.2} %, se {:.2} %, {k} x 1e6 requests)",
        rel_err * 100.0,
        rel_se * 100.0
    );
    assert!(
        rel_se <= TOLERANCE / 3.0,
        "rho {rho}: standard error {:.2} % too large for a {:.0} % test: add seeds",
        rel_se * 100.0,
        TOLERANCE * 100.0
    );
    assert!(
        rel_err.abs() < TOLERANCE,
        "rho {rho}: mean wait {mean_ms:.3} ms vs Erlang C {expected_ms:.3} ms \
         ({:+.2} %, se {:.2} %)",
        rel_err * 100.0,
        rel_se * 100.0
    );
    // Little's law on each run: the time-average queue length (snapshots
    // every 5 s) equals the measured arrival rate times the mean wait. Both
    // come from the same sample path, so they agree far closer than either
    // agrees with theory; what is left is the snapshot sampling error.
    let lq: f64 = r.little.iter().map(|p| p.0).sum();
    let lw: f64 = r.little.iter().map(|p| p.1).sum();
    eprintln!(
        "rho {rho}: Little Lq {:.4} vs lambda Wq {:.4}",
        lq / k as f64,
        lw / k as f64
    );
    assert!(
        (lq / lw - 1.0).abs() < 0.02,
        "rho {rho}: Little's law: Lq {lq} vs lambda Wq {lw}"
    );
}

#[test]
fn mean_wait_is_erlang_c_at_rho_0_5() {
    // Per-run relative sd ~1.5 %: 12 seeds give se ~0.45 %.
    assert_erlang_c(0.5, 12);
}

#[test]
fn mean_wait_is_erlang_c_at_rho_0_9() {
    // Per-run relative sd ~2.5 %: 32 seeds give se ~0.45 %.
    assert_erlang_c(0.9, 32);
}
