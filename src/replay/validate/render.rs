//! The validation as a text table: recorded vs simulated, row by row.

use super::Validation;

fn num(v: Option<f64>) -> String {
    match v {
        None => "-".into(),
        Some(x) if x.abs() >= 100.0 => format!("{x:.0}"),
        Some(x) if x.abs() >= 1.0 => format!("{x:.2}"),
        Some(x) => format!("{x:.3}"),
    }
}

/// Recorded vs simulated, side by side, with the verdict per row.
pub fn render(v: &Validation) -> String {
    let draws = if v.draws > 1 {
        format!(" over {} scenario draws", v.draws)
    } else {
        String::new()
    };
    let seeds: Vec<String> = v.seeds.iter().map(u64::to_string).collect();
    let mut o = format!(
        "\nvalidation: regime {} vs the calibrated scenario, {:.1} h x {} seeds{draws}\n  \
         seeds (from the recording and --seed): {}\n",
        v.regime,
        v.hours,
        v.seeds.len(),
        seeds.join(" ")
    );
    o += &format!(
        "  {:<34} {:>9} {:>9} {:>8} {:>17}\n",
        "figure", "recorded", "sim mean", "sim sd", "sim min..max"
    );
    for r in &v.figures {
        o += &format!(
            "  {:<34} {:>9} {:>9} {:>8} {:>17}  {}\n",
            r.name,
            num(r.recorded),
            num(r.simulated_mean),
            num(r.simulated_sd),
            format!("{}..{}", num(r.simulated_min), num(r.simulated_max)),
            r.verdict.label()
        );
    }
    o += &format!(
        "  {:<34} {:>9} {:>9} {:>8} {:>17}\n",
        "distribution (two-sample KS)", "n rec", "n sim", "D", "p"
    );
    for r in &v.distributions {
        o += &format!(
            "  {:<34} {:>9} {:>9} {:>8} {:>17}  {}\n",
            r.name,
            r.recorded_n,
            r.simulated_n,
            num(r.ks_d),
            num(r.p_value),
            r.verdict.label()
        );
    }
    for rule in &v.rules {
        o += &format!("  rule: {rule}\n");
    }
    o += &format!("  verdict: {}\n", v.verdict);
    o
}
