//! The busy deferral's ridge carried into the draws. Where the recycles
//! mostly defer, the overshoot's shape cannot tell one tick of deferral at
//! a lower boot from two at a higher one, nor a busier threshold from a
//! quieter one (`deferral.rs`: every plausible deferral fits within the
//! recording's noise). The fit takes the one at the plausible deferrals'
//! median boot; two more, at their lower and upper quartiles
//! (`deferral::ridge_members`), are fitted too, and their draws join the
//! pool, each carrying its own `busy_rps` and `defer_max_s`: boot's
//! interval, validation and every what-if then span the ridge, where draws
//! under the chosen deferral alone had intervals that missed the truth
//! (h1 fed first, h3 of docs/calibration.md). The point is still the
//! chosen deferral's.

use super::deferral::Deferral;
use super::fit::Theta;
use super::stages::Draw;

/// A ridge fit's draws, under its own deferral.
pub struct Fitted<'a> {
    pub deferral: Deferral,
    pub draws: &'a [Draw],
}

/// The pooled draws, each with the deferral it was drawn under (`None`:
/// the chosen one's).
pub fn pool(chosen: &[Draw], ridge: &[Fitted]) -> (Vec<Draw>, Vec<Option<Deferral>>) {
    let mut draws = chosen.to_vec();
    let mut under = vec![None; chosen.len()];
    for f in ridge {
        draws.extend_from_slice(f.draws);
        under.extend(std::iter::repeat_n(Some(f.deferral), f.draws.len()));
    }
    (draws, under)
}

/// The fitted point's overrides, then each draw's; where any draw is under
/// a ridge deferral, every row also says its `busy_rps` and `defer_max_s`
/// (the chosen deferral's where it is under that one), laid over the
/// calibration's fixed values.
pub fn all_draws(
    theta: Theta,
    chosen: Deferral,
    draws: &[Draw],
    under: &[Option<Deferral>],
) -> Vec<Vec<(String, f64)>> {
    let ridge = under.iter().any(Option::is_some);
    let row = |t: &Theta, d: Deferral| {
        let mut o = t.overrides();
        if let (
            true,
            Deferral::Read {
                busy_rps,
                defer_max_s,
            },
        ) = (ridge, d)
        {
            o.push(("policy.busy_rps".into(), busy_rps));
            o.push(("policy.defer_max_s".into(), defer_max_s));
        }
        o
    };
    let mut all = vec![row(&theta, chosen)];
    for (i, (t, _)) in draws.iter().enumerate() {
        all.push(row(t, under.get(i).copied().flatten().unwrap_or(chosen)));
    }
    all
}

/// The note on the ridge's fits: each one's deferral and boot, and how many
/// of its draws joined the pool.
pub fn note(fits: &[(Deferral, f64, usize)]) -> String {
    let each: Vec<String> = fits
        .iter()
        .map(|(d, boot, n)| format!("{} at boot {boot:.1} MB, {n} draws", d.label()))
        .collect();
    format!(
        "busy deferral's ridge: fitted too along it ({}); their draws join the pool, each under \
         its own deferral, so boot's interval, validation and the what-ifs carry how far the \
         recording leaves the deferral open; the point is the chosen deferral's",
        each.join("; ")
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::replay::calibrate::fit::DIM;

    fn draw(boot: f64) -> Draw {
        let t = Theta {
            base_mb: 560.0,
            jitter_mb: 40.0,
            boot_mb: boot,
            ln_mean: 0.1f64.ln(),
            ln_cv: 0.5f64.ln(),
            ln_rps: 0.0,
            ln_tick: 45f64.ln(),
        };
        (t, [0.0; DIM])
    }

    #[test]
    fn ridge_draws_carry_their_deferral_and_the_others_the_chosen_one() {
        let chosen = Deferral::Read {
            busy_rps: 1.0,
            defer_max_s: 45.0,
        };
        let low = Deferral::Read {
            busy_rps: 1.05,
            defer_max_s: 90.0,
        };
        let (main, lows) = ([draw(330.0), draw(320.0)], [draw(240.0)]);
        let (draws, under) = pool(
            &main,
            &[Fitted {
                deferral: low,
                draws: &lows,
            }],
        );
        assert_eq!(draws.len(), 3);
        assert_eq!(under, vec![None, None, Some(low)]);
        let all = all_draws(draw(325.0).0, chosen, &draws, &under);
        assert_eq!(all.len(), 4);
        let get = |row: &Vec<(String, f64)>, k: &str| {
            row.iter().find(|(key, _)| key == k).map(|(_, v)| *v)
        };
        // Every row names its deferral: the point and the chosen's draws 45 s.
        for row in &all[..3] {
            assert_eq!(get(row, "policy.defer_max_s"), Some(45.0));
        }
        assert_eq!(get(&all[3], "policy.defer_max_s"), Some(90.0));
        assert_eq!(get(&all[3], "policy.busy_rps"), Some(1.05));
        assert_eq!(get(&all[3], "fleet.boot_rss_mb"), Some(240.0));
        // Without a ridge the draws are the fitted values alone.
        let plain = all_draws(draw(325.0).0, chosen, &main, &[None, None]);
        assert!(plain.iter().all(|r| get(r, "policy.busy_rps").is_none()));
    }
}
