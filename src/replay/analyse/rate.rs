//! Recycles per hour and the peak hour (most recycles in any sliding
//! 60 minutes): the seeds' "13 in one hour against a 3.84/h mean".

use super::regimes::RegimeView;
use super::stats::{LabelCount, label_counts};
use serde::Serialize;

pub const HOUR_S: f64 = 3600.0;

#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Rate {
    pub recycles: usize,
    /// The span the regime was in force.
    pub hours: f64,
    pub per_hour: Option<f64>,
    pub peak_hour_recycles: usize,
    /// Start of the peak hour: the first recycle in it.
    pub peak_hour_start_s: Option<f64>,
    pub per_instance: Vec<LabelCount>,
}

/// The most recycles in any `[t, t + 1 h)` and the earliest `t` reaching it
/// (`times` sorted).
pub fn peak_hour(times: &[f64]) -> (usize, Option<f64>) {
    let (mut best, mut best_start, mut lo) = (0, None, 0);
    for hi in 0..times.len() {
        while times[hi] - times[lo] >= HOUR_S {
            lo += 1;
        }
        if hi - lo + 1 > best {
            best = hi - lo + 1;
            best_start = Some(times[lo]);
        }
    }
    (best, best_start)
}

pub fn rate(v: &RegimeView) -> Rate {
    let times: Vec<f64> = v.recycles.iter().map(|e| e.t_s).collect();
    let (peak, start) = peak_hour(&times);
    let hours = v.hours();
    Rate {
        recycles: times.len(),
        hours,
        per_hour: (hours > 0.0).then(|| times.len() as f64 / hours),
        peak_hour_recycles: peak,
        peak_hour_start_s: start,
        per_instance: label_counts(
            v.recycles
                .iter()
                .map(|e| e.instance.as_deref().unwrap_or("(none)")),
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_peak_hour_slides() {
        assert_eq!(peak_hour(&[]), (0, None));
        assert_eq!(peak_hour(&[0.0, 3599.0, 3600.0, 3700.0]), (3, Some(3599.0)));
        assert_eq!(peak_hour(&[0.0, 4000.0, 8000.0]), (1, Some(0.0)));
    }
}
