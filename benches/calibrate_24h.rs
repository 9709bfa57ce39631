//! `fleetsim replay --calibrate`'s fit of one 24 h recording (recycle rows
//! only, as platform logs give them) on the embedded default as the base:
//! every candidate structure, the fixed-point steps and the draws, on all
//! cores. Target: under a minute on 2 cores (issue 14); it takes seconds.
//!
//! `cargo bench --bench calibrate_24h`.

use fleetsim::metrics::CsvObserver;
use fleetsim::replay::calibrate::{Budget, Options, calibrate};
use fleetsim::replay::{Recording, import};
use fleetsim::scenario::{DEFAULT_SCENARIO, load, parse_override};

/// A day of a plain-leak fleet, simulated and cut down to recycle rows.
fn recording() -> Recording {
    let sets: Vec<_> = [
        "fleet.boot_rss_mb=420",
        "policy.base_limit_mb=520",
        "policy.hard_limit_mb=670",
        "fleet.leak.mean_mb_per_request=0.15",
        "fleet.leak.cv=0.6",
        "fleet.leak.warmup_mb=0",
        "fleet.leak.step_probability=0",
        "workload.rps=1.5",
        "workload.profile=constant",
        "policy.busy_deferral=false",
    ]
    .iter()
    .map(|s| parse_override(s).unwrap())
    .collect();
    let (_, sc) = load(DEFAULT_SCENARIO, "<bench>", &sets, &mut |_| {
        Err(String::new())
    })
    .unwrap();
    let (mut events, mut timeline) = (Vec::new(), Vec::new());
    let mut obs = CsvObserver::new(&mut events, &mut timeline, 520.0, 670.0);
    fleetsim::Sim::new(&sc, 3, &mut obs).run().unwrap();
    obs.finish().unwrap();
    let text = String::from_utf8(events).unwrap();
    let mut rows = String::from("ts,event,instance,worker,rss_mb,limit_mb,requests\n");
    for line in text.lines().skip(1) {
        let f: Vec<&str> = line.split(',').collect();
        if f[1] == "worker_recycled" {
            rows += &format!(
                "{},{},{},{},{},{},{}\n",
                f[0], f[1], f[2], f[3], f[4], f[5], f[8]
            );
        }
    }
    Recording::assemble(vec![import::parse("bench.csv", &rows).unwrap()]).unwrap()
}

fn main() {
    divan::main();
}

#[divan::bench(sample_count = 3)]
fn calibrate_24h(bencher: divan::Bencher) {
    let rec = recording();
    let base = load(
        DEFAULT_SCENARIO,
        "<bench>",
        &[],
        &mut |_| Err(String::new()),
    )
    .unwrap()
    .0;
    bencher.bench_local(|| {
        calibrate(&rec, &base, 1, Budget::DEFAULT, Options::DEFAULT, &|_| ()).unwrap()
    });
}
