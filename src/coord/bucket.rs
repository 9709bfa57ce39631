//! A fleet-wide token bucket: recycles spend a token; tokens refill at
//! `rate_per_hour` up to `burst`. Unlike a lease it bounds *rate*: over any
//! window of T hours at most `burst + rate * T` recycles pass through it
//! (emergency exits spend no token and are counted apart).

use crate::engine::SimTime;

#[derive(Clone, Debug)]
pub struct TokenBucket {
    tokens: f64,
    burst: f64,
    rate_per_us: f64,
    updated: SimTime,
}

impl TokenBucket {
    /// A full bucket at time zero.
    pub fn new(rate_per_hour: f64, burst: f64) -> Self {
        TokenBucket {
            tokens: burst,
            burst,
            rate_per_us: rate_per_hour / 3.6e9,
            updated: SimTime::ZERO,
        }
    }

    fn refill(&mut self, now: SimTime) {
        let dt = now.saturating_sub(self.updated).0 as f64;
        self.tokens = (self.tokens + dt * self.rate_per_us).min(self.burst);
        self.updated = self.updated.max(now);
    }

    /// Tokens available at `now` (never above the burst).
    pub fn tokens(&mut self, now: SimTime) -> f64 {
        self.refill(now);
        self.tokens
    }

    pub fn has_token(&mut self, now: SimTime) -> bool {
        self.tokens(now) >= 1.0
    }

    /// Spends one token; the caller checked `has_token`.
    pub fn take(&mut self, now: SimTime) {
        self.refill(now);
        assert!(self.tokens >= 1.0, "spent a token the bucket did not have");
        self.tokens -= 1.0;
    }

    pub fn burst(&self) -> f64 {
        self.burst
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn never_above_burst_and_refills_at_rate() {
        let mut b = TokenBucket::new(6.0, 2.0);
        assert_eq!(b.tokens(SimTime::from_secs(100_000)), 2.0);
        b.take(SimTime::from_secs(100_000));
        b.take(SimTime::from_secs(100_000));
        assert!(!b.has_token(SimTime::from_secs(100_000)));
        // 6 per hour = one every 600 s.
        assert!(!b.has_token(SimTime::from_secs(100_599)));
        assert!(b.has_token(SimTime::from_secs(100_600)));
    }

    #[test]
    fn saturated_bucket_grants_burst_plus_rate() {
        let mut b = TokenBucket::new(12.0, 3.0);
        let mut granted = 0;
        for s in 0..3600 {
            let t = SimTime::from_secs(s);
            if b.has_token(t) {
                b.take(t);
                granted += 1;
            }
            assert!(b.tokens(t) <= 3.0);
        }
        assert_eq!(granted, 3 + 11, "burst, then one per 300 s after the first");
    }
}
