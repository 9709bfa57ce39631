//! What a calibration returns: the fitted values with their draws, the
//! structure it chose, and how much simulation it may spend.

use super::fit;
use crate::scenario::Override;
use serde::Serialize;

/// How much simulation a calibration spends.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Budget {
    /// Simulated windows per fixed-point step.
    pub seeds: usize,
    /// Fixed-point steps per candidate structure.
    pub iterations: usize,
    /// Parametric-bootstrap draws at the chosen point.
    pub draws: usize,
    /// Newton steps on each candidate structure, then on the chosen one
    /// again (each after a Jacobian).
    pub refine: usize,
    /// Independent fits, each on its own seeds, merged (`ensemble.rs`):
    /// their mean point, their draws pooled.
    pub fits: usize,
}

impl Budget {
    pub const DEFAULT: Budget = Budget {
        seeds: 16,
        iterations: 5,
        draws: 64,
        refine: 3,
        fits: 2,
    };
    /// For fuzzing and smoke tests.
    pub const TINY: Budget = Budget {
        seeds: 2,
        iterations: 1,
        draws: 2,
        refine: 0,
        fits: 1,
    };
}

/// What the calibration may fit besides the fleet's own parameters.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Options {
    /// Fit the tick with boot where no holds gave it (`--fit-tick`).
    pub fit_tick: bool,
    /// Read busy deferral off the recording (`deferral.rs`). `replay
    /// --calibrate` does without `--scenario`: the embedded default's
    /// deferral values are not the field reports'. A given scenario's are
    /// the user's policy, kept unless `--fit-deferral`; its deferral and
    /// off are then the candidates, as before the scan.
    pub read_deferral: bool,
}

impl Options {
    pub const DEFAULT: Options = Options {
        fit_tick: false,
        read_deferral: true,
    };
}

/// One fitted value.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Fit {
    /// The dotted scenario key it overrides, or a derived figure's name
    /// (`boot_plus_warmup_mb`, `effective_mb_per_request`).
    pub key: String,
    pub value: f64,
    /// Standard deviation of the draws; `None` when not fitted.
    pub se: Option<f64>,
    /// 2.5% and 97.5% quantiles of the draws.
    pub lo: Option<f64>,
    pub hi: Option<f64>,
    /// False when the recording cannot tell this value (it is the base's).
    pub identified: bool,
    /// Which bound of its search the value sits on, if any.
    pub at_bound: Option<String>,
    pub how: String,
}

/// One candidate structure and how well it fitted.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Candidate {
    pub memory: String,
    pub deferral: bool,
    /// The deferral's values where they were read off the recording
    /// (`None`: off, or the base's).
    pub busy_rps: Option<f64>,
    pub defer_max_s: Option<f64>,
    /// Sum of the KS distances (margins, requests per worker, overshoot).
    pub score: f64,
    pub ks_margin: f64,
    pub ks_requests: f64,
    pub ks_overshoot: f64,
    /// Standardised distance of the simulated statistics' mean from the
    /// recording's at the fitted point.
    pub distance: f64,
    pub chosen: bool,
}

#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Structure {
    /// "constant" or "diurnal".
    pub profile: String,
    pub amplitude: f64,
    pub amplitude_se: f64,
    pub peak_hour: f64,
    pub warm_start: bool,
    pub rate_from: String,
    pub whole_mb: bool,
    /// A whole-MB recording's rss_mb read as truncated over whole-MB
    /// limits (`written.rs`), not rounded: validation writes its windows so.
    pub whole_mb_floor: bool,
    pub candidates: Vec<Candidate>,
    /// The busy deferrals scanned against the recording's overshoot (empty
    /// when the base has no busy deferral).
    pub deferral_scan: Vec<super::deferral::ScanPoint>,
    /// Which idle worker takes a request, read off complete slot lives
    /// (`null` where the rows have too few, or no slot ids).
    pub accept: Option<super::accept::Reading>,
}

#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Calibration {
    pub schema: &'static str,
    pub regime: String,
    pub start_s: f64,
    pub end_s: f64,
    pub recycles: usize,
    /// Recycles with rss, limit and requests.
    pub rows: usize,
    pub fits: Vec<Fit>,
    pub structure: Structure,
    /// Scenario values set, not fitted: the structure's switches, the
    /// regime's duration, start hour and hard ceiling, the tick.
    pub fixed: Vec<(String, toml::Value)>,
    /// The parameter draws, each a set of scenario values (laid over
    /// `fixed`); the first is the fitted point itself.
    #[serde(skip)]
    pub draws: Vec<Vec<(String, f64)>>,
    /// Bootstrap draws left out because their own window disagreed with
    /// the recording (`screen::screen`); `draws.csv` holds the others.
    pub draws_screened_out: usize,
    pub seeds_simulated: usize,
    pub notes: Vec<String>,
}

pub const SCHEMA: &str = "fleetsim.calibration/1";

impl Calibration {
    pub fn get(&self, key: &str) -> Option<&Fit> {
        self.fits.iter().find(|f| f.key == key)
    }

    fn fixed_overrides(&self) -> Vec<Override> {
        self.fixed
            .iter()
            .map(|(k, v)| Override {
                key: k.clone(),
                value: v.clone(),
            })
            .collect()
    }

    /// The fitted point as `--set` overrides: the fixed values, then every
    /// fitted scenario key.
    pub fn overrides(&self) -> Vec<Override> {
        let mut out = self.fixed_overrides();
        for f in self.fits.iter().filter(|f| f.key.contains('.')) {
            out.push(Override {
                key: f.key.clone(),
                value: toml::Value::Float(round(f.value, &f.key)),
            });
        }
        out
    }

    /// Draw `i` as overrides (draw 0 is the fitted point).
    pub fn draw_overrides(&self, i: usize) -> Vec<Override> {
        let mut out = self.fixed_overrides();
        out.extend(fit::num_overrides(&self.draws[i % self.draws.len().max(1)]));
        out
    }

    /// The draws as CSV: a `draw` column, then one column per key.
    pub fn draws_csv(&self) -> String {
        let Some(first) = self.draws.first() else {
            return "draw\n".into();
        };
        let mut o = String::from("draw");
        for (k, _) in first {
            o += &format!(",{k}");
        }
        o.push('\n');
        for (i, d) in self.draws.iter().enumerate() {
            o += &i.to_string();
            // As a scenario file would say them (a tick of exp(ln 45) is 45).
            for (k, v) in d {
                o += &format!(",{}", round(*v, k));
            }
            o.push('\n');
        }
        o
    }
}

/// Rounds to what a scenario file would say (MB to 0.1; times to 4
/// significant digits and at least 0.1, so a time-compressed lab's 2.25 s
/// tick or a 3 ms stale window survive; velocities to 5 significant digits).
pub(super) fn round(v: f64, key: &str) -> f64 {
    let digits = if key.ends_with("_mb") {
        1
    } else if key.ends_with("_s") || key.ends_with("_h") {
        let mag = v.abs().max(1e-12).log10().floor() as i32;
        (3 - mag).clamp(1, 9)
    } else {
        let mag = v.abs().max(1e-12).log10().floor() as i32;
        (4 - mag).max(0)
    };
    let p = 10f64.powi(digits);
    (v * p).round() / p
}
