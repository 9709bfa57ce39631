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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn t_quantiles_match_the_tables() {
        for (df, want) in [
            (5, 4.032),
            (11, 3.106),
            (20, 2.845),
            (31, 2.744),
            (100, 2.626),
        ] {
            let t = t_quantile(0.995, df);
            assert!(
                (t - want).abs() < 0.005,
                "t(0.995, {df}) = {t}, table {want}"
            );
        }
        assert!((t_quantile(0.975, 30) - 2.042).abs() < 0.002);
        assert!((normal_quantile(0.995) - 2.575_829).abs() < 1e-5);
        assert_eq!(t_quantile(0.995, 0), f64::INFINITY);
    }

    /// The rule is the 99% prediction interval of one new window: t on
    /// n - 1 degrees of freedom, times sd sqrt(1 + 1/n), plus the slack.
    #[test]
    fn the_band_is_a_prediction_interval() {
        let b = band("peak RSS (MB)", 100.0, 10.0, 32, 24.0);
        let want = t_quantile(0.995, 31) * 10.0 * (1.0 + 1.0 / 32.0f64).sqrt() + 5.0;
        assert!((b - want).abs() < 1e-12, "{b} vs {want}");
        assert!(b > 2.5 * 10.0 + 5.0 + 2.0, "wider than the old 2.5 sd: {b}");
        // Counts per hour: at least the Poisson sd of the mean count.
        let b = band("retry_ok per hour", 0.0, 0.0, 32, 12.0);
        assert!(b > 0.0, "a rare count of zero still has a band");
    }
}
