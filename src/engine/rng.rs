//! Seeded random streams, one per subsystem, all derived from one seed.
//!
//! Each subsystem draws from its own stream so that a change in one place
//! (a policy parameter that recycles a worker earlier) does not shift the
//! numbers another place sees (the arrival sequence). Per-worker draws are
//! keyed by the worker's slot and generation, so the k-th worker to occupy
//! a slot gets the same leak velocity and limit under every policy: common
//! random numbers, which sweeps rely on to compare configurations fairly.

use rand::{RngCore, SeedableRng};
use rand_xoshiro::Xoshiro256PlusPlus;

/// The subsystems that own a random stream.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Stream {
    Arrivals = 1,
    Service = 2,
    Leak = 3,
    Jitter = 4,
    SamplingPhase = 5,
    Client = 6,
    Routing = 7,
    MemoryNoise = 8,
    WarmStart = 9,
    Trigger = 10,
    Sampler = 11,
    /// The fleet's memory-surge schedule (`fleet::surge`), drawn once per run.
    Surge = 12,
    /// The phase of a generation-0 worker's evil-RSS memory thread.
    EvilPhase = 13,
    /// A master's rolling-restart splay and phase (`sim/replace/rolling.rs`).
    RollingRestart = 20,
}

/// The generator every stream uses.
pub type StreamRng = Xoshiro256PlusPlus;

/// SplitMix64 finaliser: a good 64-bit mixer.
pub fn mix64(mut z: u64) -> u64 {
    z = z.wrapping_add(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// A stream for a whole subsystem.
pub fn stream(seed: u64, which: Stream) -> StreamRng {
    keyed(seed, which, &[])
}

/// A stream keyed by extra integers (worker slot, generation, ...).
pub fn keyed(seed: u64, which: Stream, keys: &[u64]) -> StreamRng {
    let mut h = mix64(seed ^ mix64(which as u64));
    for &k in keys {
        h = mix64(h ^ mix64(k.wrapping_add(0x5851_F42D_4C95_7F2D)));
    }
    let mut s = [0u8; 32];
    let mut x = h;
    for chunk in s.chunks_mut(8) {
        x = mix64(x);
        chunk.copy_from_slice(&x.to_le_bytes());
    }
    Xoshiro256PlusPlus::from_seed(s)
}

/// A uniform draw in the open interval (0, 1): safe for `ln`.
#[inline]
pub fn open01(rng: &mut StreamRng) -> f64 {
    ((rng.next_u64() >> 11) as f64 + 0.5) * (1.0 / (1u64 << 53) as f64)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn streams_differ_and_repeat() {
        let a1 = stream(7, Stream::Arrivals).next_u64();
        let a2 = stream(7, Stream::Arrivals).next_u64();
        let s = stream(7, Stream::Service).next_u64();
        let other_seed = stream(8, Stream::Arrivals).next_u64();
        assert_eq!(a1, a2);
        assert_ne!(a1, s);
        assert_ne!(a1, other_seed);
        assert_ne!(
            keyed(7, Stream::Leak, &[0, 1]).next_u64(),
            keyed(7, Stream::Leak, &[1, 0]).next_u64()
        );
    }

    #[test]
    fn open01_is_open() {
        let mut r = stream(1, Stream::Client);
        for _ in 0..10_000 {
            let u = open01(&mut r);
            assert!(u > 0.0 && u < 1.0);
        }
    }
}
