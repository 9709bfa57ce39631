//! The statistics the accept reading rests on (`super`), pure: a life's
//! requests' index of dispersion about the pace, the share of an
//! instance's recycles its most recycled slot has, the kind nearest the
//! recording, and whether that kind reproduces it at all.

use super::super::lives::{self, Lives};
use super::super::moments::{Context, Sample};
use super::KINDS;

/// The index of dispersion of `s`'s complete lives' requests (a slot's own, or chained) about
/// the pace they share, over each life after its first `ready_s` (the
/// replacement's boot), shaped by `cx.shape`; with the lives it used.
/// Robust: the mean squared standardized residual of the least dispersed
/// 90% of lives, over a chi-squared variable's (1 for Poisson counts), so
/// a few lives the rows bound wrong (a recycle missing from the rows joins
/// two lives) do not decide it. `None` without lives the rows bound or
/// with fewer than `min_lives` of them.
pub fn dispersion(
    s: &Sample,
    cx: &Context,
    ready_s: f64,
    min_lives: usize,
) -> Option<(f64, usize)> {
    let found = match s.lives {
        Lives::Slots | Lives::SlotsHot | Lives::SlotsUneven => lives::slot_lives(s),
        // Chained where each row's life most likely began: at a pace
        // shared by the fleet, the chain's miss is the life's own.
        Lives::ChainedByInstance | Lives::ChainedInFleet => {
            lives::complete(s, cx.workers, cx.per_instance, pace(s, cx, cx.workers))
        }
        Lives::HotByInstance | Lives::HotInFleet => {
            let instances = (cx.workers / cx.per_instance.max(1.0)).max(1.0);
            lives::complete(s, cx.workers, cx.per_instance, pace(s, cx, instances))
        }
        Lives::Window => return None,
    };
    index(found, cx, ready_s, min_lives)
}

/// The index of dispersion of lives chained one an instance at the
/// instance's pace, where rows name no slot (`s.lives` chained; `None`
/// otherwise, or with fewer than `min_lives` lives): where the first idle
/// slot takes nearly every request, its lives follow one another at that
/// pace and chain as a slot's own (0.3-4 on the clean-room model's fleets
/// fed first), while lives spread over three slots, or over whichever
/// was idle last, chain wrong and are hundreds of times over (200-5,600
/// fed at random, 390-4,200 the latest idle first; forty-eight held-out
/// recordings without ids, docs/calibration.md), and capped at
/// `HOT_INDEX_CAP`. It says `first` without slot ids, as the top share
/// does with them.
pub fn hot_dispersion(
    s: &Sample,
    cx: &Context,
    ready_s: f64,
    min_lives: usize,
) -> Option<(f64, usize)> {
    let by_instance = match s.lives {
        Lives::ChainedInFleet | Lives::HotInFleet => false,
        Lives::ChainedByInstance | Lives::HotByInstance => true,
        _ => return None,
    };
    let instances = (cx.workers / cx.per_instance.max(1.0)).max(1.0);
    let found = lives::hot_lives(s, by_instance, instances, pace(s, cx, instances));
    index(found, cx, ready_s, min_lives).map(|(d, n)| (d.min(HOT_INDEX_CAP), n))
}

/// Where `hot_dispersion` stops counting: past it the chains are no one
/// slot's, and how far past says nothing the kinds share (the latest idle
/// first's windows spread 705-1,694 where a recording of it read 4,396:
/// uncapped, a misfit, and the base's kind was kept). Fed first the index
/// is under 15 in every window and recording measured.
pub const HOT_INDEX_CAP: f64 = 50.0;

/// The window's requests a second over `shares`, shaped by the profile.
fn pace(s: &Sample, cx: &Context, shares: f64) -> lives::Pace {
    let span = (s.end_s - s.start_s).max(1.0);
    let n: f64 = s.rows.iter().map(|r| r.requests).sum();
    lives::Pace {
        per_worker: n / span / shares.max(1.0),
        amplitude: cx.shape.amplitude,
        peak_hour: cx.shape.peak_hour,
        start_hour: cx.shape.start_hour,
    }
}

/// The index of `found` lives (`(from, to, requests)`), `None` with fewer
/// than `min_lives`.
fn index(
    found: Vec<(f64, f64, f64)>,
    cx: &Context,
    ready_s: f64,
    min_lives: usize,
) -> Option<(f64, usize)> {
    // Each life's requests against the profile's integral over it (in
    // seconds at the mean rate; Simpson's rule: a life is an hour or two
    // of a day's cosine), the pace the lives' median ratio (a rate over
    // the regime is not the profile's mean, and a joined life would pull
    // a mean).
    let lives: Vec<(f64, f64)> = found
        .into_iter()
        .filter_map(|(from, to, requests)| {
            let a = from + ready_s;
            let m = 0.5 * (a + to);
            let shape = (cx.shape.factor(a) + 4.0 * cx.shape.factor(m) + cx.shape.factor(to)) / 6.0;
            let seconds = shape * (to - a);
            (seconds > 0.0).then_some((requests, seconds))
        })
        .collect();
    if lives.len() < min_lives.max(2) {
        return None;
    }
    let pace = median(lives.iter().map(|(n, t)| n / t).collect())?;
    if !pace.is_finite() || pace <= 0.0 {
        return None;
    }
    let mut z2: Vec<f64> = lives
        .iter()
        .map(|(n, t)| (n - pace * t).powi(2) / (pace * t))
        .collect();
    let n = z2.len();
    z2.sort_by(f64::total_cmp);
    let kept = ((n as f64 * KEPT).floor() as usize).max(1);
    Some((
        z2[..kept].iter().sum::<f64>() / kept as f64 / CHI2_1_KEPT_MEAN,
        n,
    ))
}

/// The share of lives the index keeps, the least dispersed: a few lives
/// bound wrong (a recycle missing from the rows joins two) do not decide
/// it, and it keeps most of the mean's precision (on 34 lives of h2's
/// parameters, a racing fleet read as served in turn 1.5% of the time,
/// against 0.7% for the mean and 3.7% for the median).
const KEPT: f64 = 0.9;

/// The mean of a chi-squared variable of one degree of freedom (a Poisson
/// count's squared standardized residual) below its 0.9 quantile, 2.7055:
/// `F_3(2.7055) / 0.9`. The index is 1 for Poisson counts.
const CHI2_1_KEPT_MEAN: f64 = 0.623_015;

/// The share of the recycles of each instance that its most recycled slot
/// has, over the instances (`sum max / sum all`), where rows name their
/// slots; `None` otherwise, or with fewer than `min_rows` rows.
pub fn top_share(s: &Sample, min_rows: usize) -> Option<f64> {
    if !matches!(s.lives, Lives::Slots | Lives::SlotsHot | Lives::SlotsUneven)
        || s.rows.len() < min_rows.max(1)
    {
        return None;
    }
    let mut counts: std::collections::BTreeMap<(&str, &str), usize> = Default::default();
    for r in &s.rows {
        let (i, w) = r.slot.as_ref()?;
        *counts.entry((i.as_str(), w.as_str())).or_default() += 1;
    }
    let mut top: std::collections::BTreeMap<&str, usize> = Default::default();
    for ((i, _), n) in counts {
        let t = top.entry(i).or_default();
        *t = (*t).max(n);
    }
    Some(top.values().sum::<usize>() as f64 / s.rows.len() as f64)
}

fn median_sorted(v: &[f64]) -> f64 {
    let k = v.len() / 2;
    if v.len() % 2 == 1 {
        v[k]
    } else {
        0.5 * (v[k - 1] + v[k])
    }
}

/// How far apart (in log, summed over the statistics) two kinds'
/// simulated medians must be for the recording to tell them apart: their
/// windows' own spread, a factor of about 1.3 at 70 lives, leaves a factor
/// of 2 clear.
pub const SEPARABLE: f64 = 2.0;

/// The kind (of `KINDS`, as many as `medians` has) whose simulated
/// medians are nearest the recorded ones in log, summed over the
/// statistics (the index, and the top share where read), the first on a
/// tie; `None` when the next nearest kind's medians are within
/// `SEPARABLE` of its (the windows cannot tell them apart here: a busy
/// fleet's workers are seldom all idle, so whichever takes a request
/// matters little).
pub fn choose(recorded: &[f64], medians: &[Vec<f64>]) -> Option<&'static str> {
    let ln = |x: f64| x.max(1e-9).ln();
    let apart = |a: &[f64], b: &[f64]| -> f64 {
        a.iter().zip(b).map(|(x, y)| (ln(*x) - ln(*y)).abs()).sum()
    };
    let mut order: Vec<usize> = (0..medians.len().min(KINDS.len())).collect();
    order.sort_by(|&a, &b| apart(recorded, &medians[a]).total_cmp(&apart(recorded, &medians[b])));
    let (best, next) = (*order.first()?, *order.get(1)?);
    (apart(&medians[best], &medians[next]) >= SEPARABLE.ln()).then_some(KINDS[best])
}

/// How many of its windows' standard deviations (in log) a recording
/// may lie from a kind's windows' mean on one statistic and still be one
/// of them: the 99.9% two-sided point of a t of seven degrees of freedom
/// is 5.4, of a normal 3.3; with the windows' mean's own error
/// (`sqrt(1 + 1/n)`) a recording of the kind is called a misfit about
/// one time in a hundred on each statistic, on eight windows.
pub const MISFIT_SD: f64 = 3.5;

/// The least standard deviation (in log) a statistic's windows are taken
/// to have: windows that all agree (one slot of each instance recycling
/// alone, a top share of 1 in every window) would otherwise call a
/// recording one recycle away a misfit.
const LEAST_SD: f64 = 0.05;

/// Where the recording lies more than `MISFIT_SD` of `windows`' spread
/// from their mean on some statistic (in log, the spread at least
/// `LEAST_SD`), the farthest such: its index and how far. `windows` is
/// per statistic, the kind's windows' values.
pub fn misfit(recorded: &[f64], windows: &[Vec<f64>]) -> Option<(usize, f64)> {
    let ln = |x: f64| x.max(1e-9).ln();
    recorded
        .iter()
        .zip(windows)
        .enumerate()
        .filter(|(_, (_, w))| w.len() >= 2)
        .map(|(j, (&r, w))| {
            let n = w.len() as f64;
            let mean = w.iter().map(|&x| ln(x)).sum::<f64>() / n;
            let var = w.iter().map(|&x| (ln(x) - mean).powi(2)).sum::<f64>() / (n - 1.0);
            let sd = var.sqrt().max(LEAST_SD) * (1.0 + 1.0 / n).sqrt();
            (j, (ln(r) - mean).abs() / sd)
        })
        .filter(|(_, z)| *z > MISFIT_SD)
        .max_by(|a, b| a.1.total_cmp(&b.1))
}

pub(super) fn median(mut v: Vec<f64>) -> Option<f64> {
    if v.is_empty() {
        return None;
    }
    v.sort_by(f64::total_cmp);
    Some(median_sorted(&v))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::replay::calibrate::accept::MIN_LIVES;
    use crate::replay::calibrate::moments::{Row, Shape};

    fn context() -> Context {
        Context {
            tick_s: 45.0,
            every_requests: None,
            workers: 6.0,
            per_instance: 3.0,
            shape: Shape::CONSTANT,
            overshoot_weight: 1.0,
            overshoot_quantile: 0.7,
            overshoot_targets: crate::replay::calibrate::moments::UNHELD_TARGETS,
            known_boot_mb: None,
            overshoot_shape: None,
            pace_workers: 6.0,
        }
    }

    /// Six slots whose lives end every 3000 s, each with `requests(k)`.
    fn sample(requests: impl Fn(usize) -> f64) -> Sample {
        let mut rows = Vec::new();
        for slot in 0..6usize {
            for life in 0..5usize {
                let k = slot * 5 + life;
                rows.push(Row {
                    t_s: 100.0 * slot as f64 + 3000.0 * life as f64,
                    slot: Some((format!("i{}", slot / 3), format!("w{slot}"))),
                    instance: Some(format!("i{}", slot / 3)),
                    requests: requests(k),
                    rss_mb: 500.0,
                    limit_mb: 490.0,
                });
            }
        }
        Sample {
            rows,
            start_s: 0.0,
            end_s: 15_000.0,
            whole_mb: false,
            lives: Lives::Slots,
        }
    }

    #[test]
    fn lives_served_exactly_at_the_pace_have_no_dispersion_and_noisy_ones_do() {
        // 0.1 req/s a worker (0.6 fleet-wide) over 3000 s less a 2 s boot:
        // 299.8 requests a life.
        let cx = context();
        let exact = sample(|_| 299.8);
        let (d, lives) = dispersion(&exact, &cx, 2.0, MIN_LIVES).unwrap();
        assert_eq!(lives, 24, "four complete lives a slot");
        assert!(d < 1e-9, "{d}");
        // +-17.31 requests about the pace: squared and standardized,
        // 17.31^2 / 299.8 = 1.0, over the kept mean of a chi-squared: 1.605.
        let noisy = sample(|k| 299.8 + if k % 2 == 0 { 17.31 } else { -17.31 });
        let (d, _) = dispersion(&noisy, &cx, 2.0, MIN_LIVES).unwrap();
        assert!((d - 1.0 / 0.623_015).abs() < 0.01, "{d}");
        // Two lives bound wrong (one joined by a missing row, 3000
        // requests over; one cut short, 250 under) do not move it.
        let joined = sample(|k| match k {
            1 => 3299.8,
            14 => 49.8,
            k if k % 2 == 0 => 299.8 + 17.31,
            _ => 299.8 - 17.31,
        });
        let (d2, _) = dispersion(&joined, &cx, 2.0, MIN_LIVES).unwrap();
        assert!((d2 - d).abs() < 1e-9, "{d2} vs {d}");
    }

    #[test]
    fn rows_that_bound_no_lives_or_few_give_no_index() {
        let cx = context();
        let mut s = sample(|_| 300.0);
        s.lives = Lives::Window;
        assert_eq!(dispersion(&s, &cx, 2.0, MIN_LIVES), None);
        // Without slots, lives chained within each instance: these rows'
        // lives all run at the pace, and the chaining finds them.
        let mut s = sample(|_| 299.8);
        s.lives = Lives::ChainedByInstance;
        let (d, lives) = dispersion(&s, &cx, 2.0, MIN_LIVES).expect("chained lives");
        assert!(lives >= 18 && d < 0.01, "{d} over {lives}");
        let mut s = sample(|_| 300.0);
        s.rows.retain(|r| r.t_s < 9000.0);
        assert_eq!(
            dispersion(&s, &cx, 2.0, MIN_LIVES),
            None,
            "two lives a slot: 12"
        );
    }

    #[test]
    fn the_nearer_kind_in_log_is_chosen_where_the_kinds_differ() {
        let m: Vec<Vec<f64>> = [0.18, 0.85, 40.0].iter().map(|&x| vec![x]).collect();
        let c = |x: f64| choose(&[x], &m);
        assert_eq!(c(0.2), Some("longest_idle"));
        assert_eq!(c(0.7), Some("random"));
        // Between two: their geometric mean decides (0.39, 5.8).
        assert_eq!(c(0.38), Some("longest_idle"));
        assert_eq!(c(0.41), Some("random"));
        assert_eq!(c(5.7), Some("random"));
        assert_eq!(c(5.9), Some("most_recent"));
        // A busy fleet: in turn and racing alike.
        let busy: Vec<Vec<f64>> = [75.4, 73.9, 1099.0].iter().map(|&x| vec![x]).collect();
        assert_eq!(choose(&[70.0], &busy), None);
        assert_eq!(choose(&[900.0], &busy), Some("most_recent"));
    }

    #[test]
    fn the_first_slots_preference_is_read_off_the_top_share_where_the_index_is_alike() {
        // f6 of tools/truth/CLEANROOM.md fed first: an index between in
        // turn and racing, but one slot of each instance recycling.
        let m = vec![
            vec![0.31, 0.41],
            vec![0.73, 0.43],
            vec![11.4, 0.62],
            vec![0.40, 0.97],
        ];
        assert_eq!(choose(&[0.46, 0.98], &m), Some("first"));
        // The same index with the slots recycling alike: in turn.
        assert_eq!(choose(&[0.40, 0.42], &m), Some("longest_idle"));
        assert_eq!(choose(&[0.70, 0.45], &m), Some("random"));
    }

    #[test]
    fn a_recording_far_off_the_nearest_kinds_windows_is_a_misfit() {
        // The lab's pinned fleet against the latest idle's eight windows:
        // its lives as unequal, its slots recycling alike.
        let windows = vec![
            vec![342.7, 256.4, 89.4, 87.6, 160.0, 120.0, 210.0, 150.0],
            vec![0.66, 0.59, 0.73, 0.56, 0.91, 0.62, 0.70, 0.64],
        ];
        let (j, z) = misfit(&[79.5, 0.37], &windows).expect("the top share is off");
        assert_eq!(j, 1);
        assert!(z > MISFIT_SD && z < 6.0, "{z}");
        // A recording among its windows on both: no misfit.
        assert_eq!(misfit(&[120.0, 0.60], &windows), None);
        // Windows that all agree (one slot recycling alone): the least
        // spread keeps a recycle or two elsewhere a fit, not a whole slot.
        let first = vec![vec![0.4; 8], vec![1.0; 8]];
        assert_eq!(misfit(&[0.45, 0.93], &first), None);
        assert_eq!(misfit(&[0.45, 0.70], &first).map(|m| m.0), Some(1));
        // One window: no spread to judge by.
        assert_eq!(misfit(&[1000.0], &[vec![1.0]]), None);
    }

    #[test]
    fn the_top_share_counts_each_instances_most_recycled_slot() {
        // Six slots (two instances of three), five recycles each: 5 of 15.
        let s = sample(|_| 300.0);
        assert!((top_share(&s, 1).unwrap() - 1.0 / 3.0).abs() < 1e-12);
        // One slot of each instance recycling alone: 1.
        let mut s = sample(|_| 300.0);
        s.rows
            .retain(|r| matches!(r.slot.as_ref().map(|x| x.1.as_str()), Some("w0" | "w3")));
        assert_eq!(top_share(&s, 1), Some(1.0));
        assert_eq!(top_share(&s, 11), None, "10 rows");
        s.lives = Lives::ChainedByInstance;
        assert_eq!(top_share(&s, 1), None, "no slot ids");
    }
}
