//! The statistics validation judges with: Student's t and normal
//! quantiles for the prediction bands, the two-sample Kolmogorov-Smirnov
//! test, the Kolmogorov distribution and the simulated windows' inflation
//! of the statistic for the distributions. Pure functions of numbers, no
//! recordings.

/// Student's t quantile `p` (> 0.5) on `df` degrees of freedom:
/// Cornish-Fisher around the normal quantile (within 0.2% from 11 degrees
/// of freedom on); for the 0.995 quantile the table below that.
pub fn t_quantile(p: f64, df: u64) -> f64 {
    const T995: [f64; 10] = [
        63.657, 9.925, 5.841, 4.604, 4.032, 3.707, 3.499, 3.355, 3.250, 3.169,
    ];
    if p == 0.995 && (1..=10).contains(&df) {
        return T995[df as usize - 1];
    }
    if df == 0 {
        return f64::INFINITY;
    }
    let z = normal_quantile(p);
    let v = df as f64;
    let (z3, z5, z7) = (z.powi(3), z.powi(5), z.powi(7));
    z + (z3 + z) / (4.0 * v)
        + (5.0 * z5 + 16.0 * z3 + 3.0 * z) / (96.0 * v * v)
        + (3.0 * z7 + 19.0 * z5 + 17.0 * z3 - 15.0 * z) / (384.0 * v.powi(3))
}

/// The standard normal quantile (Acklam's rational approximation, relative
/// error below 1.2e-9), for `0 < p < 1`.
pub fn normal_quantile(p: f64) -> f64 {
    const A: [f64; 6] = [
        -3.969_683_028_665_376e1,
        2.209_460_984_245_205e2,
        -2.759_285_104_469_687e2,
        1.383_577_518_672_69e2,
        -3.066_479_806_614_716e1,
        2.506_628_277_459_239,
    ];
    const B: [f64; 5] = [
        -5.447_609_879_822_406e1,
        1.615_858_368_580_409e2,
        -1.556_989_798_598_866e2,
        6.680_131_188_771_972e1,
        -1.328_068_155_288_572e1,
    ];
    const C: [f64; 6] = [
        -7.784_894_002_430_293e-3,
        -3.223_964_580_411_365e-1,
        -2.400_758_277_161_838,
        -2.549_732_539_343_734,
        4.374_664_141_464_968,
        2.938_163_982_698_783,
    ];
    const D: [f64; 4] = [
        7.784_695_709_041_462e-3,
        3.224_671_290_700_398e-1,
        2.445_134_137_142_996,
        3.754_408_661_907_416,
    ];
    let tail = |q: f64| {
        (((((C[0] * q + C[1]) * q + C[2]) * q + C[3]) * q + C[4]) * q + C[5])
            / ((((D[0] * q + D[1]) * q + D[2]) * q + D[3]) * q + 1.0)
    };
    if p < 0.02425 {
        tail((-2.0 * p.ln()).sqrt())
    } else if p > 1.0 - 0.02425 {
        -tail((-2.0 * (1.0 - p).ln()).sqrt())
    } else {
        let q = p - 0.5;
        let r = q * q;
        (((((A[0] * r + A[1]) * r + A[2]) * r + A[3]) * r + A[4]) * r + A[5]) * q
            / (((((B[0] * r + B[1]) * r + B[2]) * r + B[3]) * r + B[4]) * r + 1.0)
    }
}

/// The two-sample Kolmogorov-Smirnov statistic `D = sup |F_a - F_b|` and
/// its asymptotic p-value (the Kolmogorov distribution at
/// `(sqrt(ne) + 0.12 + 0.11 / sqrt(ne)) D`, `ne = n m / (n + m)`, as in
/// Numerical Recipes). `None` when a sample is empty.
pub fn ks_two_sample(a: &[f64], b: &[f64]) -> Option<(f64, f64)> {
    if a.is_empty() || b.is_empty() {
        return None;
    }
    let mut a = a.to_vec();
    let mut b = b.to_vec();
    a.sort_by(f64::total_cmp);
    b.sort_by(f64::total_cmp);
    let (n, m) = (a.len() as f64, b.len() as f64);
    let (mut i, mut j, mut d) = (0, 0, 0.0f64);
    while i < a.len() && j < b.len() {
        let x = a[i].min(b[j]);
        while i < a.len() && a[i] <= x {
            i += 1;
        }
        while j < b.len() && b[j] <= x {
            j += 1;
        }
        d = d.max((i as f64 / n - j as f64 / m).abs());
    }
    Some((d, kolmogorov_q(ks_lambda(d, a.len(), b.len()))))
}

/// The KS statistic `d` of samples of `n` and `m` values scaled to the
/// Kolmogorov distribution: `(sqrt(ne) + 0.12 + 0.11 / sqrt(ne)) d`, `ne =
/// n m / (n + m)`.
pub fn ks_lambda(d: f64, n: usize, m: usize) -> f64 {
    let (n, m) = (n as f64, m as f64);
    let ne = n * m / (n + m);
    (ne.sqrt() + 0.12 + 0.11 / ne.sqrt()) * d
}

/// `Q(l) = 2 sum_{k>=1} (-1)^(k-1) exp(-2 k^2 l^2)`, the Kolmogorov
/// distribution's tail.
pub fn kolmogorov_q(l: f64) -> f64 {
    if l < 0.2 {
        return 1.0;
    }
    let mut sum = 0.0;
    for k in 1..=100 {
        let k = k as f64;
        let term = (-2.0 * k * k * l * l).exp();
        sum += if k as u64 % 2 == 1 { term } else { -term };
        if term < 1e-12 {
            break;
        }
    }
    (2.0 * sum).clamp(0.0, 1.0)
}

/// How much wider the KS statistic spreads between the simulated windows
/// than between independent samples: `sqrt(mean(lambda_j^2) / (pi^2 /
/// 12))`, where `lambda_j` is window `j`'s scaled statistic against the
/// other windows pooled and `pi^2 / 12` is the Kolmogorov distribution's
/// mean square. At least 1; 1 with fewer than `INFLATION_MIN_WINDOWS`
/// windows of `INFLATION_MIN_VALUES` values or more.
///
/// A window's values are not independent draws: with near-constant leak
/// velocities a worker's lives are almost periodic, so one day's recycle
/// gaps are set by a few phases, and the windows run over calibration
/// draws, so the pooled sample is a mixture a single window is not. The
/// plain KS p-value then warns on windows the model itself produces; the
/// model's own windows say by how much (`ks_row`).
pub fn ks_inflation(windows: &[&[f64]]) -> f64 {
    let used: Vec<usize> = (0..windows.len())
        .filter(|&j| windows[j].len() >= INFLATION_MIN_VALUES)
        .collect();
    if used.len() < INFLATION_MIN_WINDOWS {
        return 1.0;
    }
    let mut sum = 0.0;
    let mut counted = 0usize;
    for &j in &used {
        let rest: Vec<f64> = (0..windows.len())
            .filter(|&k| k != j)
            .flat_map(|k| windows[k].iter().copied())
            .collect();
        if let Some((d, _)) = ks_two_sample(windows[j], &rest) {
            let l = ks_lambda(d, windows[j].len(), rest.len());
            sum += l * l;
            counted += 1;
        }
    }
    if counted < INFLATION_MIN_WINDOWS {
        return 1.0;
    }
    let mean_square = std::f64::consts::PI.powi(2) / 12.0;
    (sum / counted as f64 / mean_square).sqrt().max(1.0)
}

/// Windows with fewer values than this do not enter `ks_inflation`...
pub const INFLATION_MIN_VALUES: usize = 5;
/// ...and fewer such windows than this leave it at 1.
pub const INFLATION_MIN_WINDOWS: usize = 8;

#[cfg(test)]
mod tests {
    use super::*;

    /// Windows of independent draws from one distribution spread as the
    /// Kolmogorov distribution says (inflation about 1); windows that each
    /// carry their own offset spread wider, and the inflation says how much.
    #[test]
    fn the_inflation_measures_dependence_within_windows() {
        let mut x = 0x2545_f491_4f6c_dd1du64;
        let mut u = move || {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            (x >> 11) as f64 / (1u64 << 53) as f64
        };
        let iid: Vec<Vec<f64>> = (0..32).map(|_| (0..40).map(|_| u()).collect()).collect();
        let shifted: Vec<Vec<f64>> = (0..32)
            .map(|_| {
                let off = 0.6 * u();
                (0..40).map(|_| u() + off).collect()
            })
            .collect();
        let of = |w: &[Vec<f64>]| ks_inflation(&w.iter().map(Vec::as_slice).collect::<Vec<_>>());
        let (a, b) = (of(&iid), of(&shifted));
        assert!(a < 1.1, "independent windows: {a}");
        assert!(b > 1.5, "offset windows: {b}");
        // Too few windows of enough values: no correction.
        assert_eq!(of(&shifted[..7]), 1.0);
        let short: Vec<Vec<f64>> = shifted.iter().map(|w| w[..4].to_vec()).collect();
        assert_eq!(of(&short), 1.0);
    }
}
