//! Worker lifetime and trip margin: requests per worker (the seeds' p10
//! alarm), trips within 25 MB of the limit, young deaths under 400
//! requests, and the jittered limits' span.

use super::regimes::RegimeView;
use super::stats::{Dist, fraction};
use crate::metrics::summary::{LOW_MARGIN_MB, YOUNG_REQUESTS};
use serde::Serialize;

#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Lifetime {
    /// Requests served by each recycled worker (recycles that record it).
    pub requests_per_worker: Option<Dist>,
    pub young: usize,
    /// Of the recycles that record requests, the share under `YOUNG_REQUESTS`.
    pub young_fraction: Option<f64>,
    /// RSS over the worker's own limit at the trip (recycles recording both).
    pub margin_mb: Option<Dist>,
    pub low_margin: usize,
    /// Of the recycles recording a margin, the share under `LOW_MARGIN_MB`.
    pub low_margin_fraction: Option<f64>,
    /// Trips at exactly `rss == limit`.
    pub at_limit: usize,
    /// The recorded jittered limits.
    pub limit_mb: Option<Dist>,
}

pub fn lifetime(v: &RegimeView) -> Lifetime {
    let requests: Vec<f64> = v
        .recycles
        .iter()
        .filter_map(|e| e.requests.map(|r| r as f64))
        .collect();
    let margins: Vec<f64> = v.recycles.iter().filter_map(|e| e.margin_mb()).collect();
    let young = requests
        .iter()
        .filter(|r| **r < YOUNG_REQUESTS as f64)
        .count();
    let low_margin = margins.iter().filter(|m| **m < LOW_MARGIN_MB).count();
    Lifetime {
        requests_per_worker: Dist::of(requests.iter().copied()),
        young,
        young_fraction: fraction(young, requests.len()),
        margin_mb: Dist::of(margins.iter().copied()),
        low_margin,
        low_margin_fraction: fraction(low_margin, margins.len()),
        at_limit: margins.iter().filter(|m| **m == 0.0).count(),
        limit_mb: Dist::of(v.recycles.iter().filter_map(|e| e.limit_mb)),
    }
}
