//! A fleet-wide lease with a TTL (the seeds' valkey `SET NX EX 120`).
//!
//! A lease bounds *concurrency*: at most one holder at a time. It is not
//! released when the recycle finishes, so it also spaces recycles by the
//! TTL; that spacing is the only rate bound it gives (3600 / TTL per hour).

use crate::engine::time::SimTime;

#[derive(Clone, Debug, Default)]
pub struct Lease {
    holder: Option<u32>,
    expires_at: SimTime,
    /// Successful acquisitions, for the invariant and the saturation maths.
    pub acquired: u64,
}

impl Lease {
    /// Whether `try_acquire` at `now` would succeed.
    pub fn is_free(&self, now: SimTime) -> bool {
        self.holder.is_none() || now >= self.expires_at
    }

    /// Takes the lease for `ttl` if it is free; returns whether it did.
    pub fn try_acquire(&mut self, now: SimTime, ttl: SimTime, who: u32) -> bool {
        if !self.is_free(now) {
            return false;
        }
        self.holder = Some(who);
        self.expires_at = now + ttl;
        self.acquired += 1;
        true
    }

    /// The current holder, if the lease has not expired.
    pub fn holder(&self, now: SimTime) -> Option<u32> {
        if self.is_free(now) { None } else { self.holder }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn single_holder_until_expiry() {
        let mut l = Lease::default();
        let ttl = SimTime::from_secs(120);
        assert!(l.try_acquire(SimTime::from_secs(10), ttl, 1));
        assert!(!l.try_acquire(SimTime::from_secs(11), ttl, 2));
        assert_eq!(l.holder(SimTime::from_secs(129)), Some(1));
        assert!(!l.try_acquire(SimTime(SimTime::from_secs(130).0 - 1), ttl, 2));
        assert!(l.try_acquire(SimTime::from_secs(130), ttl, 2));
        assert_eq!(l.holder(SimTime::from_secs(131)), Some(2));
        assert_eq!(l.acquired, 2);
    }

    #[test]
    fn a_saturated_lease_grants_one_per_ttl() {
        // Every second somebody asks: over an hour the lease grants 3600/120.
        let mut l = Lease::default();
        let ttl = SimTime::from_secs(120);
        let granted = (0..3600)
            .filter(|s| l.try_acquire(SimTime::from_secs(*s), ttl, (*s % 6) as u32))
            .count();
        assert_eq!(granted, 30);
    }
}
