//! The tick from a slot's consecutive recycles. A worker samples its RSS on
//! a timer that starts when it is ready, and a hold does not move the
//! timer's phase, so a slot's next recycle comes its replacement's boot
//! (and the drain before it) plus a whole number of ticks after the last:
//! `gap = b + k x tick`. Over many gaps the phase `gap / tick` is the same
//! for the deployed tick (and for its fractions, tick / 2, tick / 3...) and
//! spread for any other period: the largest period at which the gaps agree
//! in phase is the tick. On an independent model's recordings, a tick the
//! calibration did not know (30-60 s where the base has 45) moved the
//! fitted boot by 30-66 MB (docs/calibration.md, twenty-ninth session).

use std::f64::consts::TAU;

/// Fewer gaps than this say nothing: with a few thousand periods tried,
/// chance agreement of 30 random phases past `AGREE` is about 1 in 500.
pub const MIN_GAPS: usize = 30;
/// The least mean resultant length of the gaps' phases that counts as
/// agreement (1: every gap the same phase; about `1 / sqrt(n)` by chance).
/// Drains, boot jitter and timestamps to the second cost little of it;
/// a gap that is not on the timer (a slot whose worker the kernel killed
/// between two recycles) costs its share.
pub const AGREE: f64 = 0.75;
/// The periods tried: 5 s to 10 minutes.
const SHORTEST_S: f64 = 5.0;
const LONGEST_S: f64 = 600.0;
/// Gaps longer than this are left out (more ticks a gap need a finer search).
const LONGEST_GAP_S: f64 = 8.0 * 3600.0;
/// At most this many gaps are used (the earliest).
const MOST_GAPS: usize = 400;

/// What the gaps say: the tick, how well its phases agree, and from how
/// many gaps.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Found {
    pub tick_s: f64,
    pub agreement: f64,
    pub gaps: usize,
}

/// The mean resultant length of the gaps' phases at frequency `f` (1/s).
fn agreement(gaps: &[f64], f: f64) -> f64 {
    let (mut c, mut s) = (0.0, 0.0);
    for g in gaps {
        let (sin, cos) = (TAU * g * f).sin_cos();
        c += cos;
        s += sin;
    }
    (c * c + s * s).sqrt() / gaps.len() as f64
}

/// The tick the gaps between a slot's consecutive recycles agree on, if
/// they agree on one (`None` with fewer than `MIN_GAPS` usable gaps, or no
/// period from 5 s to 10 minutes at which their phases reach `AGREE`).
/// How much less agreement a prior tick (the base's or the scenario's) may
/// have than the peak's and still be kept: the peak of a lobe a few ticks'
/// gaps wide wanders a few tenths of a second on noise (a held-out
/// recording of a 45 s fleet read 45.3 at 0.82), and the recording does
/// not contradict a prior it agrees with nearly as well.
pub const PRIOR_SLACK: f64 = 0.05;

/// `from_gaps`, keeping `prior` where the gaps agree on it within
/// `PRIOR_SLACK` of the tick they read.
pub fn near(gaps: &[f64], prior: Option<f64>) -> Option<Found> {
    let found = from_gaps(gaps)?;
    let Some(p) = prior.filter(|p| p.is_finite() && *p > 0.0 && *p != found.tick_s) else {
        return Some(found);
    };
    let usable: Vec<f64> = usable(gaps);
    let at_prior = agreement(&usable, 1.0 / p);
    Some(if at_prior >= found.agreement - PRIOR_SLACK {
        Found {
            tick_s: p,
            agreement: at_prior,
            gaps: found.gaps,
        }
    } else {
        found
    })
}

/// The gaps `from_gaps` reads: finite, positive, at most `LONGEST_GAP_S`,
/// the first `MOST_GAPS`.
fn usable(gaps: &[f64]) -> Vec<f64> {
    gaps.iter()
        .copied()
        .filter(|g| g.is_finite() && *g > 0.0 && *g <= LONGEST_GAP_S)
        .take(MOST_GAPS)
        .collect()
}

pub fn from_gaps(gaps: &[f64]) -> Option<Found> {
    let gaps = usable(gaps);
    if gaps.len() < MIN_GAPS {
        return None;
    }
    let longest = gaps.iter().copied().fold(0.0, f64::max);
    // A step in frequency that turns the longest gap's phase by 1/16 of a
    // cycle: the peak is never missed by more than 1/32 of one.
    let step = 1.0 / (16.0 * longest);
    let (lo, hi) = (1.0 / LONGEST_S, 1.0 / SHORTEST_S);
    let n = ((hi - lo) / step).ceil() as usize;
    // Each gap's phasor, turned by `step` at each frequency: one complex
    // product a gap a frequency.
    let mut z: Vec<(f64, f64)> = gaps
        .iter()
        .map(|g| {
            let (s, c) = (TAU * g * lo).sin_cos();
            (c, s)
        })
        .collect();
    let w: Vec<(f64, f64)> = gaps
        .iter()
        .map(|g| {
            let (s, c) = (TAU * g * step).sin_cos();
            (c, s)
        })
        .collect();
    let len = gaps.len() as f64;
    // The first stretch of frequencies (from the longest period) over
    // which the phases agree, and its best point: a lobe as wide as the
    // typical gap is short, so its first point can be far down its flank
    // (a 45 s fleet's lobe crossed the threshold at 45.3 s).
    let mut peak: Option<(f64, f64)> = None;
    for k in 0..=n {
        let (mut c, mut s) = (0.0, 0.0);
        for (zi, wi) in z.iter_mut().zip(&w) {
            c += zi.0;
            s += zi.1;
            *zi = (zi.0 * wi.0 - zi.1 * wi.1, zi.0 * wi.1 + zi.1 * wi.0);
        }
        let a = (c * c + s * s).sqrt() / len;
        if a >= AGREE {
            if peak.is_none_or(|(_, best)| a > best) {
                peak = Some((lo + k as f64 * step, a));
            }
        } else if peak.is_some() {
            break;
        }
    }
    let (coarse, _) = peak?;
    // Finely around it, computed afresh (no accumulated turns).
    let fine = step / 64.0;
    let (mut best_f, mut best) = (coarse, 0.0);
    for k in 0..=128 {
        let f = coarse - step + k as f64 * fine;
        let a = agreement(&gaps, f);
        if a > best {
            (best_f, best) = (f, a);
        }
    }
    Some(Found {
        // To a tenth of a second: a tick is configured in whole seconds or
        // tenths, and a recording's timestamps rarely resolve finer.
        tick_s: (10.0 / best_f).round() / 10.0,
        agreement: best,
        gaps: gaps.len(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Gaps `b + k x tick + jitter` with `k` spread like lives of minutes to
    /// hours, from a small deterministic generator.
    fn timer_gaps(tick: f64, b: f64, jitter: f64, n: usize) -> Vec<f64> {
        let mut x: u64 = 0x9E37_79B9_7F4A_7C15;
        let mut next = move || {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            (x >> 11) as f64 / (1u64 << 53) as f64
        };
        (0..n)
            .map(|_| {
                let k = 1 + (next() * 200.0) as u64;
                b + k as f64 * tick + (next() - 0.5) * 2.0 * jitter
            })
            .collect()
    }

    #[test]
    fn the_tick_is_read_off_gaps_on_the_timer() {
        for tick in [30.0, 31.6, 45.0, 48.2, 60.0, 120.0] {
            let f = from_gaps(&timer_gaps(tick, 2.4, 0.5, 120)).expect("found");
            assert_eq!(f.tick_s, tick, "{f:?}");
            assert!(f.agreement > 0.9, "{f:?}");
        }
        // Timestamps to the whole second.
        let rounded: Vec<f64> = timer_gaps(48.2, 3.0, 0.1, 150)
            .iter()
            .map(|g| g.round())
            .collect();
        assert_eq!(from_gaps(&rounded).map(|f| f.tick_s), Some(48.2));
    }

    #[test]
    fn a_prior_the_gaps_agree_on_nearly_as_well_is_kept() {
        // Short lives (1 to 6 ticks of 45.3 s): 45.0 is nearly as good.
        let g: Vec<f64> = (0..60).map(|k| 2.0 + (1 + k % 6) as f64 * 45.3).collect();
        let read = from_gaps(&g).expect("found");
        assert!((read.tick_s - 45.3).abs() < 0.15, "{read:?}");
        let kept = near(&g, Some(45.0)).expect("found");
        assert_eq!(kept.tick_s, 45.0, "{read:?} {kept:?}");
        assert!(kept.agreement >= read.agreement - PRIOR_SLACK);
        // A prior the gaps disagree with is not kept; none changes nothing.
        assert_eq!(near(&g, Some(60.0)).map(|f| f.tick_s), Some(read.tick_s));
        assert_eq!(near(&g, None), Some(read));
        // Long lives resolve 45.3 from 45.0: the reading stands.
        let long: Vec<f64> = (0..60).map(|k| 2.0 + (40 + k) as f64 * 45.3).collect();
        assert_eq!(near(&long, Some(45.0)).map(|f| f.tick_s), Some(45.3));
    }

    #[test]
    fn a_fifth_of_gaps_off_the_timer_still_agree() {
        let mut g = timer_gaps(45.0, 2.0, 0.3, 100);
        g.extend((0..25).map(|k| 137.0 + 611.3 * k as f64));
        assert_eq!(from_gaps(&g).map(|f| f.tick_s), Some(45.0));
    }

    #[test]
    fn gaps_off_any_timer_or_too_few_say_nothing() {
        // Gaps anywhere from 100 s to 5 h: no period agrees.
        let spread: Vec<f64> = timer_gaps(1.0, 0.0, 0.0, 300)
            .iter()
            .zip(timer_gaps(97.3, 11.0, 48.0, 300))
            .map(|(a, b)| 100.0 + (a * 7.31 + b).rem_euclid(18_000.0))
            .collect();
        assert_eq!(from_gaps(&spread), None);
        assert_eq!(from_gaps(&timer_gaps(45.0, 2.0, 0.3, MIN_GAPS - 1)), None);
        // The jitter of a whole tick: the timer's phase is lost.
        assert_eq!(from_gaps(&timer_gaps(45.0, 2.0, 40.0, 200)), None);
    }
}
