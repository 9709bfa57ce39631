//! Independent fits, merged. A fit's point is a fixed point of simulated
//! statistics on its own seeds, so it carries the simulation's own Monte
//! Carlo error, which its parametric-bootstrap draws (all taken around that
//! point) do not: on a recording with a flat ridge (leak cv 0.9, whole-MB
//! rows), fits on four seed blocks put boot at +10, +46, +169 and -18 MB
//! from the truth, each with an interval of +-30 MB. `calibrate_observed`
//! runs `Budget::fits` fits on independent seeds; this merges them: the
//! point is their mean in the fit's coordinates (the simulated statistics'
//! error averaged), and the draws of all are pooled, so the spread of the
//! reported draws includes the points' spread (docs/calibration.md,
//! "Independent fits, pooled").

use super::fit::{DIM, Theta};
use super::stages::Draw;

/// One fit's point and draws, and whether it chose the first fit's memory
/// model (points under another are not comparable: boot is boot + warm-up
/// under one, boot under the other).
pub struct Member<'a> {
    /// Which fit it is, from 1 (a fit that failed has no member).
    pub number: usize,
    pub theta: Theta,
    pub draws: &'a [Draw],
    pub same_structure: bool,
}

/// What the merge reports and which fits it used.
pub struct Merged {
    pub theta: Theta,
    pub draws: Vec<Draw>,
    /// Indices of the fits in the mean and the pool (the first always).
    pub used: Vec<usize>,
}

/// The mean point of the fits under the first one's structure and their
/// pooled draws, in fit order.
pub fn merge(members: &[Member]) -> Merged {
    let used: Vec<usize> = members
        .iter()
        .enumerate()
        .filter(|(i, m)| *i == 0 || m.same_structure)
        .map(|(i, _)| i)
        .collect();
    let mut sum = [0.0; DIM];
    for &i in &used {
        for (s, x) in sum.iter_mut().zip(members[i].theta.to_vec()) {
            *s += x;
        }
    }
    let theta = if used.len() == 1 {
        members[0].theta
    } else {
        Theta::from_vec(sum.map(|s| s / used.len() as f64))
    };
    let draws = used
        .iter()
        .flat_map(|&i| members[i].draws.iter().copied())
        .collect();
    Merged { theta, draws, used }
}

/// The note on the merge: each fit's boot and MB/request, which were used.
pub fn note(members: &[Member], merged: &Merged) -> String {
    let points: Vec<String> = members
        .iter()
        .map(|m| {
            format!(
                "boot {:.1} MB, {:.4} MB/request",
                m.theta.boot_mb,
                m.theta.ln_mean.exp()
            )
        })
        .collect();
    let head = format!(
        "fits: {} on independent simulation seeds ({})",
        members.len(),
        points.join("; ")
    );
    let left: Vec<String> = (0..members.len())
        .filter(|i| !merged.used.contains(i))
        .map(|i| format!("{}", members[i].number))
        .collect();
    let left = if left.is_empty() {
        String::new()
    } else {
        format!(
            "; fit {} chose another structure (memory model or busy deferral) than the first and is left out",
            left.join(", ")
        )
    };
    if merged.used.len() > 1 {
        format!(
            "{head}; the point is the mean of {} and their draws are pooled, so the intervals \
             include the fits' own Monte Carlo spread{left}",
            if left.is_empty() {
                "both".to_string()
            } else {
                format!("{}", merged.used.len())
            }
        )
    } else {
        format!("{head}; the first fit alone is reported{left}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn theta(boot: f64, mean: f64) -> Theta {
        Theta {
            base_mb: 520.0,
            jitter_mb: 30.0,
            boot_mb: boot,
            ln_mean: f64::ln(mean),
            ln_cv: f64::ln(0.5),
            ln_rps: f64::ln(2.0),
            ln_tick: f64::ln(45.0),
        }
    }

    fn draw(boot: f64) -> Draw {
        (theta(boot, 0.2), [0.0; DIM])
    }

    /// Fit 1 at boot 345 MB and 0.1 MB/request over `a`, fit 2 at `second`
    /// (boot, MB/request) over `b`, under the same memory model or not.
    fn members<'a>(
        a: &'a [Draw],
        b: &'a [Draw],
        second: (f64, f64),
        same: bool,
    ) -> [Member<'a>; 2] {
        [
            Member {
                number: 1,
                theta: theta(345.0, 0.1),
                draws: a,
                same_structure: true,
            },
            Member {
                number: 2,
                theta: theta(second.0, second.1),
                draws: b,
                same_structure: same,
            },
        ]
    }

    #[test]
    fn the_point_is_the_mean_and_the_draws_are_pooled() {
        let (a, b) = ([draw(340.0), draw(350.0)], [draw(380.0)]);
        let mut members = members(&a, &b, (385.0, 0.4), true);
        members[1].theta.ln_tick = f64::ln(80.0);
        let m = merge(&members);
        assert_eq!(m.used, vec![0, 1]);
        assert!((m.theta.boot_mb - 365.0).abs() < 1e-9);
        // A fitted tick too: sqrt(45 x 80) = 60 s.
        assert!((m.theta.ln_tick.exp() - 60.0).abs() < 1e-9);
        // The mean in the fit's coordinates: a geometric mean of MB/request.
        assert!((m.theta.ln_mean.exp() - 0.2).abs() < 1e-12);
        let boots: Vec<f64> = m.draws.iter().map(|d| d.0.boot_mb).collect();
        assert_eq!(boots, vec![340.0, 350.0, 380.0]);
        let n = note(&members, &m);
        assert!(
            n.contains("boot 345.0 MB") && n.contains("boot 385.0 MB"),
            "{n}"
        );
        assert!(n.contains("mean of both"), "{n}");
    }

    #[test]
    fn a_fit_under_another_structure_is_left_out() {
        let (a, b) = ([draw(340.0)], [draw(200.0)]);
        let members = members(&a, &b, (210.0, 0.4), false);
        let m = merge(&members);
        assert_eq!(m.used, vec![0]);
        assert_eq!(m.theta, members[0].theta);
        assert_eq!(m.draws.len(), 1);
        let n = note(&members, &m);
        assert!(n.contains("first fit alone is reported"), "{n}");
        assert!(n.contains("fit 2 chose another structure"), "{n}");
    }
}
