//! The reported values of a calibration: for each parameter its point, the
//! spread of its draws (se and the 95% interval) and how it was obtained:
//! fitted by simulation, inferred (the tick from holds), observed (boot and
//! leak from an RSS series), or the base's (not identifiable here).

use super::active::Active;
use super::calibration::Fit;
use super::fit::{DIM, Theta};
use super::moments::Moments;
use super::observed::{ObservedBoot, ObservedVelocity};
use crate::replay::analyse::infer::Estimate;

/// Everything the reported values are made of.
pub struct Reported<'a> {
    pub theta: Theta,
    pub draws: &'a [(Theta, [f64; DIM])],
    pub active: Active,
    pub tick: &'a Estimate,
    pub tick_s: f64,
    pub fit_tick: bool,
    pub data: &'a Moments,
    /// The chosen memory model's warm-up and mean step growth per request.
    pub warmup: f64,
    pub steps: f64,
    pub observed_boot: Option<ObservedBoot>,
    pub observed_velocity: Option<ObservedVelocity>,
    /// The boot search's floor (a worker holds at least what it shares
    /// with the master); its ceiling is the lowest jittered limit less 1 MB.
    pub floor_boot: f64,
}

/// Which bound of the boot search `boot` sits on (`Theta::clamp`'s), if any.
fn boot_bound(theta: &Theta, floor_boot: f64) -> Option<&'static str> {
    let ceiling = (theta.base_mb - theta.jitter_mb - 1.0).max(floor_boot);
    if theta.boot_mb <= floor_boot + 0.05 {
        Some("lower")
    } else if theta.boot_mb >= ceiling - 0.05 {
        Some("upper")
    } else {
        None
    }
}

/// A parameter an RSS series observed: its value and se from the series
/// (the draws hold it fixed).
fn observed_fit(r: &Reported, key: &str, value: f64) -> Option<Fit> {
    let fit = |se: f64, how: String| Fit {
        key: key.to_string(),
        value,
        se: Some(se),
        lo: Some(value - 1.96 * se),
        hi: Some(value + 1.96 * se),
        identified: true,
        at_bound: None,
        how,
    };
    match key {
        "fleet.boot_rss_mb" => r.observed_boot.map(|b| {
            fit(
                b.se,
                format!(
                    "observed: the median RSS at the start of {} lives in the RSS series (se of the median)",
                    b.lives
                ),
            )
        }),
        "fleet.leak.mean_mb_per_request" => r.observed_velocity.map(|v| {
            fit(
                v.mean_se,
                format!(
                    "observed: the lognormal of {} lives' growth per request in the RSS series",
                    v.lives
                ),
            )
        }),
        "fleet.leak.cv" => r.observed_velocity.map(|v| {
            // The cv's se, by the delta method on the lognormal's sigma.
            let s2 = (1.0 + v.cv * v.cv).ln();
            let se = (1.0 + v.cv * v.cv) * s2.sqrt() / (v.cv.max(1e-9) * (2.0 * v.lives as f64).sqrt());
            fit(
                se,
                format!("observed: the cv of the same lognormal ({} lives)", v.lives),
            )
        }),
        _ => None,
    }
}

/// The reported fits; notes about them go to `notes`.
pub fn reported(r: &Reported, notes: &mut Vec<String>) -> Vec<Fit> {
    let spread = |xs: Vec<f64>| -> (Option<f64>, Option<f64>, Option<f64>) {
        if xs.len() < 2 {
            return (None, None, None);
        }
        let n = xs.len() as f64;
        let m = xs.iter().sum::<f64>() / n;
        let sd = (xs.iter().map(|x| (x - m).powi(2)).sum::<f64>() / (n - 1.0)).sqrt();
        let mut s = xs;
        s.sort_by(f64::total_cmp);
        let q = |p: f64| s[((p * (s.len() - 1) as f64).round() as usize).min(s.len() - 1)];
        (Some(sd), Some(q(0.025)), Some(q(0.975)))
    };
    let Reported {
        theta,
        draws,
        active,
        tick,
        tick_s,
        fit_tick,
        data,
        warmup,
        steps,
        floor_boot,
        ..
    } = *r;
    // A bound of the boot statistic in the recording, else of the search.
    let boot_at_bound = data
        .boot_at_bound
        .or_else(|| boot_bound(&theta, floor_boot));
    let point = theta.overrides();
    let mut fits = Vec::new();
    let hows = [
        "midpoint of the uniform fitted to limit_mb (min/max widened by range/(n-1)), matched by simulation",
        "half-width of the same uniform, matched by simulation",
        "the boot RSS at which the overshoot in requests, (rss - limit) * requests / (rss - boot), has its quantile q (0.3, 0.5, 0.7 or 0.8, the pilot's choice) at 2q half-ticks' requests (weighed with the slope of ln requests on ln(limit - boot) being 1); matched by simulation",
        "mean of the lognormal fitted to (rss - boot) / requests, matched by simulation",
        "cv of the same lognormal, matched by simulation",
        "fleet rate from complete lives (a slot's own, or chained within an instance or the fleet from each row's requests), matched by simulation",
        "fitted jointly with boot (the overshoot statistic is in ticks, the slope statistic is not)",
    ];
    for (j, (k, val)) in point.iter().enumerate() {
        let xs: Vec<f64> = draws.iter().map(|(t, _)| t.overrides()[j].1).collect();
        let (se, lo, hi) = spread(xs);
        let mut how = hows[j].to_string();
        if k == "policy.tick_s" && active.moves(6) && r.observed_boot.is_some() {
            how = "fitted over the observed boot: the overshoot past the limit, in ticks, \
                   matched by simulation"
                .into();
        }
        if let Some(f) = observed_fit(r, k, *val) {
            fits.push(f);
            continue;
        }
        let mut identified = true;
        let mut at_bound = None;
        if k == "policy.tick_s" && !active.moves(6) {
            let (se, lo, hi) = (None, None, None);
            let (identified, how) = match tick.inferred {
                Some(_) => (
                    true,
                    format!("{} (no spread: sampling is a timer)", tick.how),
                ),
                None if fit_tick => (
                    false,
                    format!(
                        "not identifiable ({}; the overshoot statistic is at its bound): the base's",
                        tick.how
                    ),
                ),
                None => (false, format!("not fitted ({}): the base's", tick.how)),
            };
            fits.push(Fit {
                key: k.clone(),
                value: tick_s,
                se,
                lo,
                hi,
                identified,
                at_bound: None,
                how,
            });
            continue;
        }
        if k == "fleet.boot_rss_mb" {
            if let Some(b) = data.boot_at_bound {
                at_bound = Some(b.to_string());
                notes.push(format!(
                    "boot RSS: the overshoot statistic sits at its {b} bound (the recording's \
                     overshoots do not fit a linear growth from any boot); the value is the bound"
                ));
            } else if let Some(b) = boot_at_bound {
                at_bound = Some(b.to_string());
                notes.push(format!(
                    "boot RSS: the fit stopped at the {b} bound of its search ({}); the \
                     recording's statistics pull it further, so the value is the bound, not an \
                     estimate",
                    if b == "lower" {
                        format!(
                            "{floor_boot:.1} MB, the base's shared_mb + 1: a worker holds at least \
                             what it shares with the master"
                        )
                    } else {
                        "the lowest jittered limit less 1 MB".to_string()
                    }
                ));
            }
            if warmup > 0.0 {
                identified = false;
                how = format!(
                    "boot + warm-up is identified (boot_plus_warmup_mb), not each: the base's \
                     warm-up ({warmup:.1} MB) was kept and boot is the rest; {how}"
                );
            }
        }
        if k == "fleet.leak.mean_mb_per_request" && steps > 0.0 {
            how = format!(
                "{how}; the base's steps ({steps:.4} MB/request) on top (effective_mb_per_request is the sum)"
            );
        }
        fits.push(Fit {
            key: k.clone(),
            value: *val,
            se,
            lo,
            hi,
            identified,
            at_bound,
            how,
        });
    }
    // The identified sums, from the parameter draws (or the series).
    let (se, lo, hi) = match r.observed_boot {
        Some(b) => (
            Some(b.se),
            Some(theta.boot_mb + warmup - 1.96 * b.se),
            Some(theta.boot_mb + warmup + 1.96 * b.se),
        ),
        None => spread(draws.iter().map(|(t, _)| t.boot_mb + warmup).collect()),
    };
    fits.push(Fit {
        key: "boot_plus_warmup_mb".into(),
        value: theta.boot_mb + warmup,
        se,
        lo,
        hi,
        identified: true,
        at_bound: boot_at_bound.map(str::to_string),
        how: "where a worker's linear growth starts: boot RSS plus warm-up (recycle rows cannot \
              separate them)"
            .into(),
    });
    let eff = theta.ln_mean.exp() + steps;
    let (se, lo, hi) = match r.observed_velocity {
        Some(v) => (
            Some(v.mean_se),
            Some(eff - 1.96 * v.mean_se),
            Some(eff + 1.96 * v.mean_se),
        ),
        None => spread(draws.iter().map(|(t, _)| t.ln_mean.exp() + steps).collect()),
    };
    fits.push(Fit {
        key: "effective_mb_per_request".into(),
        value: eff,
        se,
        lo,
        hi,
        identified: true,
        at_bound: None,
        how: "mean growth per request, velocity and steps together".into(),
    });
    fits
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(boot_mb: f64) -> Theta {
        Theta {
            base_mb: 550.0,
            jitter_mb: 40.0,
            boot_mb,
            ln_mean: 0.1f64.ln(),
            ln_cv: 0.5f64.ln(),
            ln_rps: 1.0f64.ln(),
            ln_tick: 45.0f64.ln(),
        }
    }

    #[test]
    fn boot_at_either_end_of_its_search_is_a_bound() {
        // The clamp's floor (shared_mb + 1) and ceiling (the lowest limit
        // less 1 MB, 509 here): the clean-room model's f2 sat at 136 MB
        // unmarked.
        assert_eq!(boot_bound(&at(136.0), 136.0), Some("lower"));
        assert_eq!(boot_bound(&at(509.0), 136.0), Some("upper"));
        assert_eq!(boot_bound(&at(360.0), 136.0), None);
        assert_eq!(boot_bound(&at(136.2), 136.0), None);
    }
}
