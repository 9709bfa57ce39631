//! Which parameters a fit moves, and which statistic answers for each:
//! the pairs of indirect inference's square system. By default each
//! parameter has its own hand-made statistic (`fit::stat_vec`, same index);
//! the tick, when it is fitted, pairs with the slope statistic, or, when an
//! RSS series has fixed boot, with the boot statistic itself (the overshoot
//! past the limit is in ticks: with boot known it measures the tick).
//!
//! The Jacobian lives here too: `d stat / d parameter` over the active pairs
//! only, solved by Gaussian elimination.

use super::fit::DIM;

/// The active `(parameter, statistic)` pairs, in parameter order.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Active {
    pairs: [(usize, usize); DIM],
    n: usize,
}

impl Active {
    /// Every parameter but the tick, each by its own statistic.
    pub const KNOWN_TICK: Active = Active::first(6);

    /// All `DIM` parameters, each by its own statistic.
    pub const ALL: Active = Active::first(DIM);

    const fn first(n: usize) -> Active {
        let mut pairs = [(0, 0); DIM];
        let mut i = 0;
        while i < n {
            pairs[i] = (i, i);
            i += 1;
        }
        Active { pairs, n }
    }

    /// From explicit pairs (parameters and statistics each used once).
    pub fn new(pairs: &[(usize, usize)]) -> Active {
        assert!(pairs.len() <= DIM, "at most DIM pairs");
        let mut a = Active {
            pairs: [(0, 0); DIM],
            n: pairs.len(),
        };
        a.pairs[..pairs.len()].copy_from_slice(pairs);
        a.pairs[..a.n].sort_unstable();
        for (i, p) in a.pairs[..a.n].iter().enumerate() {
            assert!(p.0 < DIM && p.1 < DIM, "index out of range");
            assert!(
                a.pairs[..i].iter().all(|q| q.0 != p.0 && q.1 != p.1),
                "a parameter or statistic used twice"
            );
        }
        a
    }

    pub fn pairs(&self) -> &[(usize, usize)] {
        &self.pairs[..self.n]
    }

    pub fn len(&self) -> usize {
        self.n
    }

    /// Whether the fit moves parameter `p`.
    pub fn moves(&self, p: usize) -> bool {
        self.pairs().iter().any(|q| q.0 == p)
    }

    /// Whether statistic `s` answers for a parameter.
    pub fn uses(&self, s: usize) -> bool {
        self.pairs().iter().any(|q| q.1 == s)
    }
}

/// `d stat / d theta` over the active pairs: row `a` is the statistic of
/// pair `a`, column `b` the parameter of pair `b`.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Jacobian {
    pub m: [[f64; DIM]; DIM],
    pub active: Active,
}

impl Jacobian {
    /// The identity over `active`: each parameter moves by its statistic's
    /// deviation (what the fixed-point steps assume).
    pub fn identity(active: Active) -> Jacobian {
        let mut m = [[0.0; DIM]; DIM];
        for (i, row) in m.iter_mut().enumerate().take(active.len()) {
            row[i] = 1.0;
        }
        Jacobian { m, active }
    }

    /// The parameter move `x` (full `DIM` coordinates, 0 off the active
    /// parameters) with `J x = r` on the active statistics, by Gaussian
    /// elimination with partial pivoting; `None` when `J` is singular.
    pub fn solve(&self, r: &[f64; DIM]) -> Option<[f64; DIM]> {
        let n = self.active.len();
        let mut a = self.m;
        let mut b = [0.0; DIM];
        for (i, (_, s)) in self.active.pairs().iter().enumerate() {
            b[i] = r[*s];
        }
        for c in 0..n {
            let piv = (c..n).max_by(|x, y| a[*x][c].abs().total_cmp(&a[*y][c].abs()))?;
            if !a[piv][c].is_finite() || a[piv][c].abs() < 1e-9 {
                return None;
            }
            a.swap(c, piv);
            b.swap(c, piv);
            let pivot_row = a[c];
            for row in c + 1..n {
                let f = a[row][c] / pivot_row[c];
                for (cell, p) in a[row][c..n].iter_mut().zip(&pivot_row[c..n]) {
                    *cell -= f * p;
                }
                b[row] -= f * b[c];
            }
        }
        let mut y = [0.0; DIM];
        for c in (0..n).rev() {
            let s: f64 = (c + 1..n).map(|k| a[c][k] * y[k]).sum();
            y[c] = (b[c] - s) / a[c][c];
        }
        let mut x = [0.0; DIM];
        for (i, (p, _)) in self.active.pairs().iter().enumerate() {
            x[*p] = y[i];
        }
        x.iter().all(|v| v.is_finite()).then_some(x)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pairs_are_sorted_and_checked() {
        let a = Active::new(&[(6, 2), (0, 0), (5, 5)]);
        assert_eq!(a.pairs(), &[(0, 0), (5, 5), (6, 2)]);
        assert!(a.moves(6) && !a.moves(2) && a.uses(2) && !a.uses(6));
        assert_eq!(Active::KNOWN_TICK.len(), 6);
        assert!(!Active::KNOWN_TICK.moves(6));
    }

    #[test]
    #[should_panic(expected = "used twice")]
    fn a_statistic_answers_for_one_parameter() {
        Active::new(&[(0, 0), (1, 0)]);
    }

    #[test]
    fn solve_maps_statistics_to_parameters_through_the_pairs() {
        // Parameter 6 (the tick) answers to statistic 2; parameter 0 to 0.
        // stat0 = 2 p0 + p6, stat2 = -3 p6.
        let active = Active::new(&[(0, 0), (6, 2)]);
        let mut j = Jacobian::identity(active);
        j.m[0][0] = 2.0;
        j.m[0][1] = 1.0;
        j.m[1][0] = 0.0;
        j.m[1][1] = -3.0;
        let mut r = [0.0; DIM];
        r[0] = 5.0;
        r[2] = -6.0;
        r[6] = 99.0; // not an active statistic: ignored
        let x = j.solve(&r).unwrap();
        assert!((x[6] - 2.0).abs() < 1e-12, "{x:?}");
        assert!((x[0] - 1.5).abs() < 1e-12, "{x:?}");
        assert_eq!(x[2], 0.0);
        assert_eq!(x[1], 0.0);
    }

    #[test]
    fn a_singular_jacobian_gives_none() {
        let mut j = Jacobian::identity(Active::new(&[(0, 0), (1, 1)]));
        j.m[1][1] = 0.0;
        assert!(j.solve(&[1.0; DIM]).is_none());
    }
}
