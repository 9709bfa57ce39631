//! The lognormal's maximum-likelihood fit by Nelder-Mead: the check on the
//! closed form the statistics use (`tests/calibrate.rs`).

use super::CalibrateError;
use argmin::core::{CostFunction, Executor};
use argmin::solver::neldermead::NelderMead;

/// The lognormal negative log-likelihood of positive values, over
/// `(mu, ln sigma)`.
struct LognormalNll<'a> {
    ln_x: &'a [f64],
}

impl CostFunction for LognormalNll<'_> {
    type Param = Vec<f64>;
    type Output = f64;
    fn cost(&self, p: &Vec<f64>) -> Result<f64, argmin::core::Error> {
        let (mu, sigma) = (p[0], p[1].exp());
        let n = self.ln_x.len() as f64;
        let ss: f64 = self.ln_x.iter().map(|l| (l - mu).powi(2)).sum();
        let sum_ln: f64 = self.ln_x.iter().sum();
        Ok(n * sigma.ln() + sum_ln + ss / (2.0 * sigma * sigma))
    }
}

/// Maximum-likelihood lognormal `(mu, sigma)` by Nelder-Mead (the closed
/// form's check; the statistics use the closed form).
pub fn fit_lognormal(x: &[f64]) -> Result<(f64, f64), CalibrateError> {
    let ln_x: Vec<f64> = x.iter().filter(|v| **v > 0.0).map(|v| v.ln()).collect();
    if ln_x.len() < 2 {
        return Err(CalibrateError::Fit("fewer than 2 positive values".into()));
    }
    let m = ln_x.iter().sum::<f64>() / ln_x.len() as f64;
    let s = (ln_x.iter().map(|l| (l - m).powi(2)).sum::<f64>() / ln_x.len() as f64)
        .sqrt()
        .max(1e-3);
    let start = vec![m + 0.5, (s * 1.5).ln()];
    let simplex = vec![
        start.clone(),
        vec![start[0] + 0.3, start[1]],
        vec![start[0], start[1] + 0.3],
    ];
    let nm = NelderMead::new(simplex)
        .with_sd_tolerance(1e-10)
        .map_err(|e| CalibrateError::Fit(e.to_string()))?;
    let res = Executor::new(LognormalNll { ln_x: &ln_x }, nm)
        .configure(|st| st.max_iters(500))
        .run()
        .map_err(|e| CalibrateError::Fit(e.to_string()))?;
    let p = res
        .state
        .best_param
        .ok_or_else(|| CalibrateError::Fit("no best point".into()))?;
    Ok((p[0], p[1].exp()))
}
