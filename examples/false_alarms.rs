//! The validation's false-alarm rate on good fits (issue 14, item 4): each
//! scenario is simulated on recording seeds 100..130, each run's events are
//! the "recording", and it is validated against the very scenario that
//! generated it; every row that warns is a false alarm. Prints the old rule
//! (fixed seeds 1..8, 2.5 sd + 5%) beside the new one (recording-derived
//! seeds, the 99% prediction interval). `tests/validation_rules.rs` runs a
//! smaller version.
//!
//! ```text
//! cargo run --release --example false_alarms            # 30 windows x 32 seeds per scenario
//! cargo run --release --example false_alarms -- 10 64   # 10 windows x 64 seeds
//! ```

#[path = "../tests/common/falsealarm.rs"]
mod falsealarm;

use fleetsim::scenario::{DEFAULT_SCENARIO, load};

fn main() {
    let args: Vec<usize> = std::env::args()
        .skip(1)
        .map(|a| a.parse().expect("usage: false_alarms [WINDOWS] [SEEDS]"))
        .collect();
    let windows = args.first().copied().unwrap_or(30) as u64;
    let seeds = args.get(1).copied().unwrap_or(32);
    let root = env!("CARGO_MANIFEST_DIR");
    let truth = std::fs::read_to_string(format!(
        "{root}/scenarios/recordings/generated-24h-truth.toml"
    ))
    .expect("the shipped truth scenario");
    let cases = [
        ("render-2x3 (default)", DEFAULT_SCENARIO.to_string()),
        ("generated-24h-truth", truth),
    ];
    println!(
        "| scenario | windows | old rows | old warned | old rate | new rows | new warned | new rate |"
    );
    println!("| --- | --- | --- | --- | --- | --- | --- | --- |");
    for (name, text) in cases {
        let sc = load(&text, name, &[], &mut |p: &str| {
            Err(format!("{p}: not read"))
        })
        .expect("the scenario loads")
        .1;
        let rec_seeds: Vec<u64> = (100..100 + windows).collect();
        let (old, new, warned) = falsealarm::good_fits(&sc, &rec_seeds, seeds);
        println!(
            "| {name} | {windows} | {} | {} | {:.2}% | {} | {} | {:.2}% |",
            old.rows,
            old.warned,
            old.rate() * 100.0,
            new.rows,
            new.warned,
            new.rate() * 100.0
        );
        for w in warned {
            eprintln!("  {name}: {w}");
        }
    }
}
