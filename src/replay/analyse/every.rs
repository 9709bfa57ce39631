//! A sampler every Nth request, read off the rows' request counts. A
//! recycler that checks RSS every Nth request a worker serves (the field
//! reports' earlier sampler, "every 50th request"; a middleware's or an
//! `after_request` hook's) recycles a worker only at a multiple of N of its
//! requests, so every recycle row's `requests` is one. A timer's recycles
//! fall on any count: a share of `1 / N` of them on a multiple of N, so 30
//! rows with 95% on multiples of N >= 2 do not happen by chance.
//!
//! Read as a timer, such a fleet's overshoot is counted in the wrong unit
//! (requests in half a tick, not in half of N), the boot statistic sits at
//! its bound and the fit comes off the slope alone: three plain-leak
//! fleetsim windows sampled every 50th request calibrated boot 58-75 MB
//! low and MB/request 18-51% high, validation passing (docs/calibration.md,
//! thirtieth session).

/// Fewer rows than this say nothing.
pub const MIN_ROWS: usize = 30;
/// The least share of rows on multiples of N (a kill or a drain's extra
/// requests may move a few).
pub const SHARE: f64 = 0.95;
/// At least this many distinct multiples: one count on every row is a
/// request-count trigger (`max_requests`), not a sampler.
const MIN_DISTINCT: usize = 3;
/// The rows whose counts' divisors are the candidates (a multiple of N is
/// among the first few unless more than 5% are off it).
const CANDIDATE_ROWS: usize = 8;

/// What the rows say: N, and on how many of how many rows.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Every {
    pub n: u64,
    pub multiples: usize,
    pub rows: usize,
}

impl Every {
    /// The reading in words.
    pub fn how(&self) -> String {
        format!(
            "{} of {} rows' requests are multiples of {}: the recycler samples every {}th \
             request, not on a timer",
            self.multiples, self.rows, self.n, self.n
        )
    }
}

/// Divisors of `v` from 2 up, unordered.
fn divisors(v: u64) -> Vec<u64> {
    let mut d = Vec::new();
    let mut k = 1u64;
    while k.saturating_mul(k) <= v {
        if v.is_multiple_of(k) {
            d.push(k);
            d.push(v / k);
        }
        k += 1;
    }
    d.retain(|&x| x >= 2);
    d
}

/// The largest N >= 2 that at least `SHARE` of the rows' request counts
/// (zeros left out) are multiples of, on at least `MIN_DISTINCT` distinct
/// multiples; `None` with fewer than `MIN_ROWS` counts or no such N.
pub fn read(requests: &[u64]) -> Option<Every> {
    let counts: Vec<u64> = requests.iter().copied().filter(|&r| r > 0).collect();
    if counts.len() < MIN_ROWS {
        return None;
    }
    let need = (SHARE * counts.len() as f64).ceil() as usize;
    let mut candidates: Vec<u64> = counts
        .iter()
        .take(CANDIDATE_ROWS)
        // A count past 10^12 has no sampler's N worth a divisor search.
        .filter(|&&c| c <= 1_000_000_000_000)
        .flat_map(|&c| divisors(c))
        .collect();
    candidates.sort_unstable_by(|a, b| b.cmp(a));
    candidates.dedup();
    for n in candidates {
        let on: Vec<u64> = counts
            .iter()
            .filter(|&&c| c.is_multiple_of(n))
            .map(|&c| c / n)
            .collect();
        if on.len() < need {
            continue;
        }
        let mut distinct = on.clone();
        distinct.sort_unstable();
        distinct.dedup();
        if distinct.len() < MIN_DISTINCT {
            continue;
        }
        return Some(Every {
            n,
            multiples: on.len(),
            rows: counts.len(),
        });
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_fiftieth_request_is_read() {
        let rows: Vec<u64> = (0..60).map(|i| 50 * (8 + (i * 7) % 23)).collect();
        let e = read(&rows).expect("a sampler");
        assert_eq!((e.n, e.multiples, e.rows), (50, 60, 60));
        assert!(e.how().contains("every 50th request"), "{}", e.how());
    }

    #[test]
    fn a_few_rows_off_the_multiples_still_read() {
        // Two of 40 moved by a kill's or a drain's requests.
        let mut rows: Vec<u64> = (0..40).map(|i| 25 * (10 + (i * 5) % 31)).collect();
        rows[3] += 7;
        rows[17] += 1;
        let e = read(&rows).expect("a sampler");
        assert_eq!((e.n, e.multiples), (25, 38));
        rows[20] += 3; // a third: 37 of 40 is under 95%
        assert_eq!(read(&rows), None);
    }

    #[test]
    fn a_timers_counts_read_nothing() {
        // Counts on no grid (a timer's recycles), from a fixed LCG.
        let mut x = 12345u64;
        let rows: Vec<u64> = (0..400)
            .map(|_| {
                x = x
                    .wrapping_mul(6364136223846793005)
                    .wrapping_add(1442695040888963407);
                200 + (x >> 33) % 1500
            })
            .collect();
        assert_eq!(read(&rows), None);
    }

    #[test]
    fn too_few_rows_or_one_count_read_nothing() {
        let rows: Vec<u64> = (0..29).map(|i| 50 * (8 + i)).collect();
        assert_eq!(read(&rows), None, "29 rows");
        // A request-count trigger: every life 1,000 requests (or two values).
        let fixed: Vec<u64> = (0..100)
            .map(|i| if i % 2 == 0 { 1000 } else { 2000 })
            .collect();
        assert_eq!(read(&fixed), None);
    }
}
