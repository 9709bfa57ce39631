//! The calibration check: the embedded default scenario, run for one
//! simulated day on 20 seeds, lands near the seeds' 24 h production window
//! (shared/seeds/000: "one 24h production window, n=88-90 recycles").
//!
//! One production day is one sample, so every tolerance below is the
//! sampling noise of the seeds' own figure (a Poisson standard error for a
//! count, a binomial one for a fraction of ~90 recycles, the day-to-day
//! spread for order statistics), not of the 20-day simulated mean, whose
//! own standard error is ~4.5x smaller. The test fails if the calibration
//! drifts by more than about one such error. docs/calibration.md has the
//! table; tools/calibrate.py produced the fit.

use fleetsim::Sim;
use fleetsim::metrics::{EventKind, EventRow, Observer, Summary};
use fleetsim::scenario::{DEFAULT_SCENARIO, Override, load, parse_override};

const SEEDS: std::ops::RangeInclusive<u64> = 1..=20;

/// One `worker_recycled` row: what the seeds' analyses read.
#[derive(Clone, Copy)]
struct Recycle {
    t_s: f64,
    instance: u32,
    rss_mb: f64,
    pressure: bool,
    headroom_mb: f64,
}

#[derive(Default)]
struct Recorder {
    recycles: Vec<Recycle>,
    retry_ok_s: Vec<f64>,
}

impl Observer for Recorder {
    fn event(&mut self, row: &EventRow) {
        match row.kind {
            EventKind::WorkerRecycled => {
                let (w, d) = (row.worker.expect("a worker"), row.decision.expect("facts"));
                self.recycles.push(Recycle {
                    t_s: row.t.as_secs_f64(),
                    instance: row.instance,
                    rss_mb: w.rss_mb,
                    pressure: d.pressure,
                    headroom_mb: d.headroom_mb,
                });
            }
            EventKind::RetryOk => self.retry_ok_s.push(row.t.as_secs_f64()),
            _ => {}
        }
    }
}

/// One simulated day, reduced to the seeds' figures.
struct Day {
    s: Summary,
    nonpressure_headroom_median_mb: f64,
    pressure_rss_mb: Vec<f64>,
    /// retry_ok per recycle in the busiest hour (seeds: 20 for 13).
    busiest_hour_retry_ok_per_recycle: f64,
    min_same_instance_gap_s: f64,
}

fn day(overrides: &[Override], seed: u64) -> Day {
    let (_, sc) = load(DEFAULT_SCENARIO, "default", overrides, &mut |_| {
        Err("no files".into())
    })
    .expect("the default scenario loads");
    let mut rec = Recorder::default();
    let s = Sim::new(&sc, seed, &mut rec).run().expect("runs").summary;
    let rs = &rec.recycles;
    let mut hr: Vec<f64> = rs
        .iter()
        .filter(|r| !r.pressure)
        .map(|r| r.headroom_mb)
        .collect();
    hr.sort_by(f64::total_cmp);
    // The busiest 60-minute window opening at a recycle, as the seeds' bad hour.
    let (mut best, mut start) = (0, 0.0);
    for r in rs {
        let n = rs
            .iter()
            .filter(|x| x.t_s >= r.t_s && x.t_s < r.t_s + 3600.0)
            .count();
        if n > best {
            (best, start) = (n, r.t_s);
        }
    }
    let retries = rec
        .retry_ok_s
        .iter()
        .filter(|&&t| t >= start && t < start + 3600.0);
    let mut last = vec![f64::NAN; sc.fleet.instances];
    let mut min_gap = f64::INFINITY;
    for r in rs {
        let prev = last[r.instance as usize];
        if !prev.is_nan() {
            min_gap = min_gap.min(r.t_s - prev);
        }
        last[r.instance as usize] = r.t_s;
    }
    Day {
        nonpressure_headroom_median_mb: median(&hr),
        pressure_rss_mb: rs.iter().filter(|r| r.pressure).map(|r| r.rss_mb).collect(),
        busiest_hour_retry_ok_per_recycle: retries.count() as f64 / best.max(1) as f64,
        min_same_instance_gap_s: min_gap,
        s,
    }
}

/// NaN when empty: a figure with no data misses rather than panics.
fn median(sorted: &[f64]) -> f64 {
    let n = sorted.len();
    if n == 0 {
        return f64::NAN;
    }
    (sorted[(n - 1) / 2] + sorted[n / 2]) / 2.0
}

fn mean(xs: &[f64]) -> f64 {
    xs.iter().sum::<f64>() / xs.len() as f64
}

fn sd(xs: &[f64]) -> f64 {
    let m = mean(xs);
    (xs.iter().map(|x| (x - m) * (x - m)).sum::<f64>() / (xs.len() - 1) as f64).sqrt()
}

fn sorted(mut xs: Vec<f64>) -> Vec<f64> {
    xs.sort_by(f64::total_cmp);
    xs
}

/// Collects every figure that misses, so one run names all of them; prints
/// every figure (`cargo test --profile checked --test seeds_window -- --nocapture`).
#[derive(Default)]
struct Check {
    misses: Vec<String>,
}

impl Check {
    fn within(&mut self, figure: &str, got: f64, seeds: f64, tolerance: f64) {
        let ok = (got - seeds).abs() <= tolerance;
        self.holds(
            figure,
            ok,
            format!("simulated {got:.3}, seeds {seeds} +- {tolerance}"),
        );
    }

    fn holds(&mut self, figure: &str, ok: bool, detail: String) {
        println!("{} {figure}: {detail}", if ok { "ok  " } else { "MISS" });
        if !ok {
            self.misses.push(format!("{figure}: {detail}"));
        }
    }
}

/// The simulated days, and the per-day values of one figure.
struct Days(Vec<Day>);

impl Days {
    fn of(&self, f: &dyn Fn(&Day) -> f64) -> Vec<f64> {
        self.0.iter().map(f).collect()
    }
}

fn opt(v: Option<f64>) -> f64 {
    v.unwrap_or(f64::NAN)
}

/// Runs the default scenario (with `overrides`) on the 20 seeds and returns
/// the figures that miss the seeds' window.
fn window_misses(overrides: &[Override]) -> Vec<String> {
    let days = Days(SEEDS.map(|seed| day(overrides, seed)).collect());
    let mut c = Check::default();
    rate_and_lifetimes(&mut c, &days);
    margins_and_pressure(&mut c, &days);
    headroom_gaps_and_client(&mut c, &days);
    c.misses
}

fn rate_and_lifetimes(c: &mut Check, days: &Days) {
    // 88/88 recycles (seed 000, two instruments agreeing; 90 over 23.4 h).
    // Poisson standard error of one day's count: sqrt(89) = 9.4. The daily
    // count is also stable ("4x that every day for a week"): the simulated
    // days may not scatter more than a Poisson count would.
    let recycles = days.of(&|d| d.s.recycles as f64);
    c.within("recycles per day (mean)", mean(&recycles), 89.0, 9.4);
    c.holds(
        "recycles per day (sd over days)",
        sd(&recycles) <= 9.4,
        format!("sd {:.1}, at most 9.4", sd(&recycles)),
    );

    // Requests per worker: median 817 (seed 000). The median of ~90 lifetimes
    // varies by ~80 requests from day to day (sd over the simulated days;
    // the asymptotic 1.25 sd/sqrt(n) with a lifetime sd of ~550 gives ~72):
    // tolerance 1.25 of that, 100.
    let rpw_median = days.of(&|d| opt(d.s.requests_per_worker_median));
    c.within(
        "requests per worker median",
        mean(&rpw_median),
        817.0,
        100.0,
    );

    // Min 48 and max 2794 are extreme order statistics of ~90 lifetimes and
    // swing by a factor of ~2 from day to day: the seeds' value must be one
    // the simulated days actually produce (inside their range), and the
    // typical simulated day must be within a factor of 3 (min) or 25% (max).
    let mins = sorted(days.of(&|d| opt(d.s.requests_per_worker_min)));
    let maxs = sorted(days.of(&|d| opt(d.s.requests_per_worker_max)));
    let range = |xs: &[f64], v: f64| xs[0] <= v && v <= xs[xs.len() - 1];
    c.holds(
        "requests per worker min 48 within the simulated days' range",
        range(&mins, 48.0),
        format!("simulated {:.0}..{:.0}", mins[0], mins[mins.len() - 1]),
    );
    c.holds(
        "requests per worker min, median day within 16..144",
        (16.0..=144.0).contains(&median(&mins)),
        format!("median day {:.0}", median(&mins)),
    );
    c.holds(
        "requests per worker max 2794 within the simulated days' range",
        range(&maxs, 2794.0),
        format!("simulated {:.0}..{:.0}", maxs[0], maxs[maxs.len() - 1]),
    );
    c.within(
        "requests per worker max, median day",
        median(&maxs),
        2794.0,
        0.25 * 2794.0,
    );
}

fn margins_and_pressure(c: &mut Check, days: &Days) {
    // 47 of 90 (52%) tripped < 25 MB over their limit; 19 of 90 (21%) lived
    // < 400 requests. Binomial standard errors over 90 recycles:
    // sqrt(.52 .48 / 90) = 0.053 and sqrt(.21 .79 / 90) = 0.043.
    let low = days.of(&|d| opt(d.s.recycles_low_margin_fraction));
    c.within("low-margin fraction (< 25 MB)", mean(&low), 0.52, 0.053);
    let young = days.of(&|d| opt(d.s.recycles_young_fraction));
    c.within("young fraction (< 400 requests)", mean(&young), 0.21, 0.043);

    // 7 pressure recycles (seed 000: "7/7 pressure events"): Poisson standard
    // error sqrt(7) = 2.6. "A few" every day: at most 2 of the 20 days may
    // have none or more than 15.
    let pressure = days.of(&|d| d.s.pressure_recycles as f64);
    c.within(
        "pressure recycles per day (mean)",
        mean(&pressure),
        7.0,
        2.6,
    );
    let odd = pressure
        .iter()
        .filter(|&&p| !(1.0..=15.0).contains(&p))
        .count();
    c.holds(
        "pressure recycles on (almost) every day",
        odd <= 2,
        format!("{odd} of 20 days with none or > 15, at most 2"),
    );
    // Pressure-culled workers: mean 593 MB over 7 rows (spread ~40 MB, so a
    // standard error of ~15): tolerance 2 standard errors, pooled over days.
    let prss: Vec<f64> = days
        .0
        .iter()
        .flat_map(|d| d.pressure_rss_mb.clone())
        .collect();
    c.within("pressure-culled RSS mean (MB)", mean(&prss), 593.0, 30.0);
}

fn headroom_gaps_and_client(c: &mut Check, days: &Days) {
    // Non-pressure rows: headroom median 653 MB. The day-to-day sd of this
    // median is ~15 MB; 30 MB (2 sd) is also 10 MB of fleet.shared_mb.
    let hr = days.of(&|d| d.nonpressure_headroom_median_mb);
    c.within("non-pressure headroom median (MB)", mean(&hr), 653.0, 30.0);

    // Peak RSS 710 MB (60 over the 650 ceiling, a cooldown-held worker). A
    // one-day maximum: the simulated days' sd is ~35 MB.
    let max_rss = days.of(&|d| d.s.max_rss_mb);
    c.within("max RSS (MB)", mean(&max_rss), 710.0, 40.0);

    // Zero recycles below the 120 s cooldown, observed min 123.9 s: the
    // typical day's minimum same-instance gap sits just above the cooldown.
    let gaps = sorted(days.of(&|d| d.min_same_instance_gap_s));
    c.holds(
        "min same-instance gap, median day within 120..165 s",
        (120.0..=165.0).contains(&median(&gaps)),
        format!("median day {:.1} s", median(&gaps)),
    );

    // The bad hour: 20 retry_ok for 13 recycles = 1.54 per recycle; Poisson
    // standard error of 20 is 4.5, i.e. 0.34 per recycle. fetch_failed was
    // rare (one in that hour): at most 2 per day on average.
    let ratio = days.of(&|d| d.busiest_hour_retry_ok_per_recycle);
    c.within(
        "retry_ok per recycle, busiest hour",
        mean(&ratio),
        1.54,
        0.35,
    );
    let ff = mean(&days.of(&|d| d.s.fetch_failed as f64));
    c.holds(
        "fetch_failed rare",
        ff <= 2.0,
        format!("{ff:.2} per day, at most 2"),
    );

    // No OOM kill in the window (the base went 600 -> 500 to stop them).
    let ooms: u64 = days.0.iter().map(|d| d.s.oom_kills).sum();
    c.holds("no OOM kills", ooms == 0, format!("{ooms} over 20 days"));

    // Peak hour: the seeds saw 13 against a 3.84/h mean. The model does NOT
    // reach it (~9.4; docs/calibration.md explains the missing mechanism);
    // this only guards the clustering it does produce: well above the mean
    // rate, and not above the seeds' hour.
    let peak = days.of(&|d| d.s.peak_hour_recycles as f64);
    c.holds(
        "peak hour within 8..13 (seeds 13, not matched)",
        (8.0..=13.0).contains(&mean(&peak)),
        format!("mean {:.2}", mean(&peak)),
    );
}

#[test]
fn the_default_scenario_lands_in_the_seeds_window() {
    let misses = window_misses(&[]);
    assert!(
        misses.is_empty(),
        "the default scenario left the seeds' window:\n  {}",
        misses.join("\n  ")
    );
}

/// The check can fail: a modest miscalibration of each kind leaves the
/// window. Without the busy deferral (the mechanism that lets over-limit
/// workers pile up until pressure fires), or with 15 MB more shared pages,
/// the pressure count misses; with 36% more leak steps, the rate and the
/// lifetimes miss.
#[test]
fn a_miscalibrated_workload_leaves_the_window() {
    let misses = |s: &str| window_misses(&[parse_override(s).expect("an override")]);
    let named = |misses: &[String], figure: &str| misses.iter().any(|m| m.starts_with(figure));
    let no_deferral = misses("policy.busy_rps=50");
    assert!(named(&no_deferral, "pressure recycles"), "{no_deferral:?}");
    let more_shared = misses("fleet.shared_mb=150");
    assert!(named(&more_shared, "pressure recycles"), "{more_shared:?}");
    let more_steps = misses("fleet.leak.step_probability=0.0075");
    assert!(named(&more_steps, "recycles per day"), "{more_steps:?}");
    assert!(
        named(&more_steps, "requests per worker median"),
        "{more_steps:?}"
    );
}
