//! The aggregated mode against the exact mode with enough seeds to resolve
//! 3% (the figures behind the README's validation table; not a CI test:
//! `tests/aggregate.rs` runs a smaller version of it).
//!
//! ```text
//! cargo run --release --example aggregate_vs_exact -- default 4000
//! cargo run --release --example aggregate_vs_exact -- medium 200 --hours 3
//! cargo run --release --example aggregate_vs_exact -- medium 40 --hours 3 --set engine.step_s=2
//! ```
//!
//! Arguments: the fleet (`default`: render-2x3, 24 h; `medium`: the large
//! fleet's policy on 20 x 8 at 800 rps), the seed count, then optionally
//! `--hours H`, `--first-seed N` (default 1), `--threads N` (default 2) and
//! `--set key=value` (repeatable, applied to both modes). Prints a markdown
//! table: seed means, mean paired difference relative to exact, its
//! standard error, and a verdict at 3%. The table does not depend on the
//! thread count.

#[path = "../tests/common/aggval.rs"]
mod aggval;

use std::time::Instant;

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    if let Err(e) = run(&args) {
        eprintln!("error: {e}");
        eprintln!(
            "usage: aggregate_vs_exact default|medium SEEDS [--hours H] [--first-seed N] [--threads N] [--set key=value]..."
        );
        std::process::exit(2);
    }
}

fn run(args: &[String]) -> Result<(), String> {
    let fleet = args.first().ok_or("missing the fleet")?;
    let seeds: u64 = args
        .get(1)
        .ok_or("missing the seed count")?
        .parse()
        .map_err(|e| format!("seed count: {e}"))?;
    if seeds < 2 {
        return Err("at least 2 seeds".into());
    }
    let (mut hours, mut first, mut threads, mut sets) = (None, 1u64, 2usize, Vec::new());
    let mut rest = args[2..].iter();
    while let Some(flag) = rest.next() {
        let value = rest.next().ok_or(format!("{flag} needs a value"))?;
        let bad = |e: &dyn std::fmt::Display| format!("{flag} {value}: {e}");
        match flag.as_str() {
            "--hours" => hours = Some(value.parse::<f64>().map_err(|e| bad(&e))?),
            "--first-seed" => first = value.parse().map_err(|e| bad(&e))?,
            "--threads" => threads = value.parse().map_err(|e| bad(&e))?,
            "--set" => {
                fleetsim::scenario::parse_override(value)?;
                sets.push(value.clone())
            }
            other => return Err(format!("unknown option {other}")),
        }
    }
    let sets: Vec<&str> = sets.iter().map(String::as_str).collect();
    let (exact, agg, hours) = match fleet.as_str() {
        "default" => {
            let h = hours.unwrap_or(24.0);
            let hs = format!("run.duration_h={h}");
            let all: Vec<&str> = [hs.as_str()]
                .into_iter()
                .chain(sets.iter().copied())
                .collect();
            let (e, a) = aggval::default_fleet(&all).map_err(|e| e.to_string())?;
            (e, a, h)
        }
        "medium" => {
            let h = hours.unwrap_or(3.0);
            let (e, a) = aggval::medium_fleet(h, &sets).map_err(|e| e.to_string())?;
            (e, a, h)
        }
        other => return Err(format!("unknown fleet {other}: default or medium")),
    };
    let start = Instant::now();
    let rows = aggval::compare(&exact, &agg, first, seeds, threads);
    println!(
        "{fleet}, {hours} h, seeds {first}..={}, step {} s, {threads} threads, {:.1} s wall",
        first + seeds - 1,
        agg.engine.step.as_secs_f64(),
        start.elapsed().as_secs_f64()
    );
    print!("{}", aggval::table(&rows, 0.03));
    Ok(())
}
