//! What a calibration prints: `calibrated.toml` with the fitted values'
//! comments, and the text table.

use super::Calibration;
use crate::scenario::RawScenario;

/// `raw` as TOML, with a comment after each fitted key giving the estimate,
/// its standard error and how it was fitted.
pub fn calibrated_toml(raw: &RawScenario, cal: &Calibration) -> Result<String, toml::ser::Error> {
    let text = toml::to_string(raw)?;
    let mut out = format!(
        "# Calibrated by `fleetsim replay --calibrate` to regime {} ({:.0}-{:.0} s, {} recycles).\n\
         # Fitted values carry `# fitted: estimate +- standard error [95% interval]; how`;\n\
         # the parameter draws are in draws.csv beside this file.\n",
        cal.regime, cal.start_s, cal.end_s, cal.recycles
    );
    for f in cal.fits.iter().filter(|f| !f.key.contains('.')) {
        out += &format!(
            "# identified: {} = {:.4} +- {}; {}\n",
            f.key,
            f.value,
            f.se.map_or("n/a".into(), |s| format!("{s:.4}")),
            f.how
        );
    }
    let mut section = String::new();
    for line in text.lines() {
        out.push_str(line);
        let t = line.trim();
        if t.starts_with('[') {
            section = t.trim_matches(|c| c == '[' || c == ']').to_string();
        } else if let Some((k, _)) = t.split_once(" = ") {
            let key = if section.is_empty() {
                k.to_string()
            } else {
                format!("{section}.{k}")
            };
            if let Some(f) = cal.get(&key) {
                let se = f.se.map_or("n/a".into(), |s| format!("{s:.4}"));
                let ci = match (f.lo, f.hi) {
                    (Some(a), Some(b)) => format!(" [{a:.4}, {b:.4}]"),
                    _ => String::new(),
                };
                out.push_str(&format!(
                    "  # fitted: {:.4} +- {se}{ci}; {}",
                    f.value, f.how
                ));
            }
        }
        out.push('\n');
    }
    Ok(out)
}

/// The calibration as a text table: key, estimate, standard error, interval.
pub fn render(cal: &Calibration) -> String {
    let mut o = format!(
        "\ncalibration: regime {} ({:.0}-{:.0} s, {} recycles, {} with rss, limit and requests), \
         {} simulated windows\n",
        cal.regime, cal.start_s, cal.end_s, cal.recycles, cal.rows, cal.seeds_simulated
    );
    o += &format!(
        "  {:<32} {:>10} {:>10} {:>23}\n",
        "key", "estimate", "+- se", "95% interval"
    );
    for f in &cal.fits {
        let se = f.se.map_or("n/a".into(), |s| format!("{s:.4}"));
        let ci = match (f.lo, f.hi) {
            (Some(a), Some(b)) => format!("[{a:.4}, {b:.4}]"),
            _ => "-".into(),
        };
        let mut flag = String::new();
        if !f.identified && f.how.starts_with("not fitted") {
            flag += "  (not fitted: the base's)";
        } else if !f.identified {
            flag += "  (not identified alone)";
        }
        if let Some(b) = &f.at_bound {
            flag += &format!("  (at its {b} bound)");
        }
        o += &format!(
            "  {:<32} {:>10.4} {:>10} {:>23}{flag}\n",
            f.key, f.value, se, ci
        );
    }
    o += "  structure candidates (score = KS margin + requests + overshoot; lowest chosen):\n";
    for c in &cal.structure.candidates {
        o += &format!(
            "    {} memory {}, deferral {}: score {:.2} ({:.2} + {:.2} + {:.2})\n",
            if c.chosen { "*" } else { " " },
            c.memory,
            match (c.deferral, c.busy_rps, c.defer_max_s) {
                (false, ..) => "off".to_string(),
                (true, Some(r), Some(d)) => format!("busy_rps {r:.3}, defer_max_s {d:.0}"),
                _ => "base's".to_string(),
            },
            c.score,
            c.ks_margin,
            c.ks_requests,
            c.ks_overshoot
        );
    }
    for (k, v) in &cal.fixed {
        o += &format!("  {k:<32} {:>10} {:>10}  set\n", v.to_string(), "");
    }
    for n in &cal.notes {
        o += &format!("  note: {n}\n");
    }
    o
}
