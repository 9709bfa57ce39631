//! Copy-on-write after a `--preload` fork: which of the pages a worker
//! inherited from the master are still shared with it.
//!
//! After `fork()` every page of the preloaded master is shared; the kernel
//! copies a page the first time either process writes to it. CPython
//! writes to objects it only reads: every reference taken bumps the
//! object's refcount, and a collection of the oldest generation writes
//! the `PyGC_Head` of every object it tracks (Instagram, "Dismissing Python
//! Garbage Collection at Instagram", 2017: a worker's shared memory fell
//! from 250 MB to about 140 MB within seconds of the fork, and stayed at
//! 225 MB with the collector off; `gc.freeze()`, CPython 3.7,
//! `Doc/library/gc.rst`, moves the preloaded objects to a permanent
//! generation that no collection visits). So a worker's RSS hardly moves
//! (a copied page was resident and still is), but its private memory, and
//! the cgroup's usage, grow by the pages it unshares.
//!
//! The model is a pure function of the requests a worker has served, so
//! the exact and the aggregate modes agree whatever the batching:
//!
//! ```text
//! shared(n) = S * (1 - r * (1 - 2^(-n / h))) * (1 - g * [n >= N and not frozen])
//! ```
//!
//! with `S` the pages shared at fork (`fleet.shared_mb`), `r` the fraction
//! that requests' refcount writes ever reach, `h` their half-life in
//! requests, `g` the fraction holding the headers of GC-tracked objects and
//! `N` the requests until the first full collection (CPython runs one only
//! once the long-lived objects have grown by a quarter, so it comes late,
//! and it writes every tracked header at once). What neither reaches (code,
//! untouched data) stays shared: the floor `S (1 - r)(1 - g)`.

/// The unsharing of one worker's inherited pages (`[fleet.cow]`).
#[derive(Clone, Debug, PartialEq)]
pub struct Cow {
    /// Pages shared with the master at fork, MB.
    pub shared_mb: f64,
    /// Fraction of them the requests' refcount writes ever reach.
    pub refcount_fraction: f64,
    /// Requests after which half of that reach is unshared.
    pub refcount_half_life_requests: f64,
    /// Fraction holding the headers of GC-tracked objects.
    pub gc_fraction: f64,
    /// Requests served before the first full collection.
    pub gc_full_after_requests: u64,
    /// `gc.freeze()` before fork: no collection visits the inherited objects.
    pub gc_freeze: bool,
}

impl Cow {
    /// The pages still shared with the master after `n` served requests.
    #[inline]
    pub fn shared_after(&self, n: u64) -> f64 {
        let touched = 1.0 - (-(n as f64) / self.refcount_half_life_requests).exp2();
        let refcount = 1.0 - self.refcount_fraction * touched;
        self.shared_mb * refcount * (1.0 - self.gc_unshared(n))
    }

    /// The fraction of the pages that the collector has unshared after `n`.
    fn gc_unshared(&self, n: u64) -> f64 {
        if self.gc_freeze || n < self.gc_full_after_requests {
            0.0
        } else {
            self.gc_fraction
        }
    }

    /// What stays shared however long the worker lives.
    pub fn floor_mb(&self) -> f64 {
        let gc = if self.gc_freeze {
            0.0
        } else {
            self.gc_fraction
        };
        self.shared_mb * (1.0 - self.refcount_fraction) * (1.0 - gc)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn instagram() -> Cow {
        // 250 MB shared at fork, 225 with the collector off, 140 with it on.
        Cow {
            shared_mb: 250.0,
            refcount_fraction: 0.1,
            refcount_half_life_requests: 20.0,
            gc_fraction: 1.0 - 140.0 / 225.0,
            gc_full_after_requests: 500,
            gc_freeze: false,
        }
    }

    #[test]
    fn nothing_unshares_at_fork() {
        assert_eq!(instagram().shared_after(0), 250.0);
    }

    #[test]
    fn refcount_writes_follow_their_half_life() {
        let c = instagram();
        // One half-life: half of the 25 MB reach is private.
        assert!((c.shared_after(20) - 237.5).abs() < 1e-9);
        // Two: three quarters.
        assert!((c.shared_after(40) - 231.25).abs() < 1e-9);
        // Monotone, never below the floor.
        let mut last = f64::INFINITY;
        for n in 0..5_000 {
            let s = c.shared_after(n);
            assert!(s <= last + 1e-12 && s >= c.floor_mb() - 1e-9, "n={n}");
            last = s;
        }
    }

    #[test]
    fn the_first_full_collection_unshares_the_gc_headers_at_once() {
        let c = instagram();
        let before = c.shared_after(499);
        let after = c.shared_after(500);
        assert!(
            (after / before - 140.0 / 225.0).abs() < 1e-3,
            "{before} {after}"
        );
        // Long after: the published 140 MB.
        assert!((c.shared_after(100_000) - 140.0).abs() < 1e-6);
        assert!((c.floor_mb() - 140.0).abs() < 1e-9);
    }

    #[test]
    fn gc_freeze_removes_the_collectors_part() {
        let c = Cow {
            gc_freeze: true,
            ..instagram()
        };
        assert!((c.shared_after(100_000) - 225.0).abs() < 1e-6);
        assert!((c.floor_mb() - 225.0).abs() < 1e-9);
    }
}
