//! The overshoot's whole shape as the boot statistic, under a busy
//! deferral read off the recording (`deferral.rs`): the boot at which the
//! rows' overshoot in half-ticks lies nearest the deferral's simulated
//! windows' (`moments::Context::overshoot_shape`).

use super::moments::{Context, Sample, overshoots_at, quantile};

/// Quantiles kept of a reference overshoot (`ShapeRef`).
pub const SHAPE_LEVELS: usize = 41;

/// A reference overshoot distribution in half-ticks, as its quantiles at
/// `(i + 0.5) / SHAPE_LEVELS` (a busy deferral's simulated windows pooled:
/// a thousand recycles or more, so its own noise is small against a
/// recording's). Kept as quantiles, not the sample, so that `Context`
/// stays `Copy`; hence a one-sample Cramér-von Mises against it here,
/// beside the scan's two-sample `deferral::cramer_von_mises` over whole
/// samples.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct ShapeRef(pub [f64; SHAPE_LEVELS]);

impl ShapeRef {
    /// The reference of a sorted sample, `None` when it is empty.
    pub fn of(sorted: &[f64]) -> Option<ShapeRef> {
        if sorted.is_empty() {
            return None;
        }
        let mut q = [0.0; SHAPE_LEVELS];
        for (i, x) in q.iter_mut().enumerate() {
            *x = quantile(sorted, (i as f64 + 0.5) / SHAPE_LEVELS as f64);
        }
        Some(ShapeRef(q))
    }

    /// Its distribution function, linear between the kept quantiles (from
    /// 0 at no overshoot, to 1 one quantile step past the last).
    pub fn cdf(&self, x: f64) -> f64 {
        let q = &self.0;
        let level = |i: usize| (i as f64 + 0.5) / SHAPE_LEVELS as f64;
        let n = SHAPE_LEVELS;
        if x < q[0] {
            return if q[0] > 0.0 {
                (level(0) * x / q[0]).max(0.0)
            } else {
                0.0
            };
        }
        let i = q.partition_point(|&v| v <= x) - 1;
        if i + 1 < n {
            let (a, b) = (q[i], q[i + 1]);
            if b > a {
                return level(i) + (level(i + 1) - level(i)) * (x - a) / (b - a);
            }
            return level(i);
        }
        let step = (q[n - 1] - q[n - 2]).max(1e-9);
        (level(n - 1) + (1.0 - level(n - 1)) * (x - q[n - 1]) / step).min(1.0)
    }

    /// The Cramér-von Mises statistic of a sorted sample against it,
    /// `1 / (12 n) + sum over i = 1..n of (F(x_i) - (2 i - 1) / (2 n))^2`.
    pub fn cramer_von_mises(&self, sorted: &[f64]) -> f64 {
        let n = sorted.len() as f64;
        1.0 / (12.0 * n)
            + sorted
                .iter()
                .enumerate()
                .map(|(i, &x)| (self.cdf(x) - (2.0 * i as f64 + 1.0) / (2.0 * n)).powi(2))
                .sum::<f64>()
    }
}

/// Boots on the grid `shape_boot` scans before it narrows.
const SHAPE_GRID: usize = 64;

/// The boot in `[0, hi]` at which the rows' overshoot lies nearest `r`
/// (least Cramér-von Mises statistic: a grid, then golden-section search
/// between the grid points either side of its least), with the bound it
/// sits at, if any. A busy deferral read off a ridge of deferrals that fit
/// alike is wrong in its details (how long, how often within a grid step),
/// and one quantile of the overshoot reads those details as boot (the 0.8
/// quantile put h3 of docs/calibration.md 81 MB low, the 0.5 quantile f8
/// 155 MB low); the whole shape averages over them, as the scan does.
pub fn shape_boot(
    s: &Sample,
    cx: &Context,
    rps: f64,
    r: &ShapeRef,
    hi: f64,
) -> (f64, Option<&'static str>) {
    if hi.partial_cmp(&0.0) != Some(std::cmp::Ordering::Greater) || s.rows.is_empty() {
        return (0.0, Some("lower"));
    }
    let d = |b: f64| r.cramer_von_mises(&overshoots_at(s, cx, rps, b));
    let step = hi / (SHAPE_GRID - 1) as f64;
    let at = |k: usize| step * k as f64;
    let k = (0..SHAPE_GRID)
        .map(|k| (k, d(at(k))))
        .fold((0, f64::INFINITY), |a, x| if x.1 < a.1 { x } else { a })
        .0;
    if k == 0 {
        return (0.0, Some("lower"));
    }
    if k == SHAPE_GRID - 1 {
        return (hi, Some("upper"));
    }
    let (mut a, mut b) = (at(k - 1), at(k + 1));
    let g = (5f64.sqrt() - 1.0) / 2.0;
    let (mut c, mut e) = (b - g * (b - a), a + g * (b - a));
    let (mut dc, mut de) = (d(c), d(e));
    for _ in 0..24 {
        if dc <= de {
            b = e;
            (e, de) = (c, dc);
            c = b - g * (b - a);
            dc = d(c);
        } else {
            a = c;
            (c, dc) = (e, de);
            e = a + g * (b - a);
            de = d(e);
        }
    }
    ((a + b) / 2.0, None)
}

#[cfg(test)]
mod tests {
    use super::super::moments::{Context, Lives, Row, Sample, moments};
    use super::super::testkit::{CONTEXT, row};
    use super::*;

    #[test]
    fn the_shape_statistic_is_the_boot_where_the_whole_overshoot_matches() {
        // As above, 41 rows overshooting evenly over (0, 2) half-ticks,
        // against a reference uniform on (0, 2): the least distance is at
        // the rows' boot; against one twice as wide the rows must overshoot
        // twice as many requests, so boot goes up (the runway down).
        let boot = 350.0;
        let rows: Vec<Row> = (0..41)
            .map(|i| {
                let v = 0.1 + 0.005 * i as f64;
                let limit = 480.0 + 1.5 * i as f64;
                let n = (limit - boot) / v;
                let over = 10.0 * (i as f64 + 0.5) / 41.0;
                row(100.0 * i as f64, i % 3, n, boot, v, limit, over)
            })
            .collect();
        let total: f64 = rows.iter().map(|r| r.requests).sum();
        let s = Sample {
            rows,
            start_s: 0.0,
            end_s: total / 6.0,
            whole_mb: false,
            lives: Lives::Window,
        };
        let uniform: Vec<f64> = (0..2001).map(|i| 2.0 * i as f64 / 2000.0).collect();
        let r = ShapeRef::of(&uniform).unwrap();
        assert!((r.cdf(1.0) - 0.5).abs() < 0.01 && r.cdf(2.5) == 1.0 && r.cdf(0.0) == 0.0);
        let cx = Context {
            tick_s: 10.0,
            overshoot_shape: Some(r),
            ..CONTEXT
        };
        let m = moments(&s, &cx, 2).expect("moments");
        assert!((m.boot_over - boot).abs() < 2.0, "boot {}", m.boot_over);
        assert!(m.boot_at_bound.is_none());
        let wide: Vec<f64> = uniform.iter().map(|x| 2.0 * x).collect();
        let cx = Context {
            overshoot_shape: ShapeRef::of(&wide),
            ..cx
        };
        let high = moments(&s, &cx, 2).expect("moments").boot_over;
        assert!(high > boot + 50.0, "boot {high}");
        assert!(ShapeRef::of(&[]).is_none());
    }
}
