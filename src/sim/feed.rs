//! Draws made on helper threads (`Sim::with_draw_threads`): the arrival
//! times and the service times, block by block, as `ahead` makes them.
//!
//! Each stream is a pure function of its own random stream (`ahead`'s
//! module docs), so a helper thread that owns the stream and makes the
//! very calls `ahead` would make (`Resume::fill`, through which `ahead`
//! fills its arrivals too, and `ServiceDist::fill`, a block of `BLOCK` at
//! a time) hands over the same
//! values in the same order: the output is byte-identical, whatever the
//! threads' timing. What moves off the simulation's thread is the draws'
//! arithmetic (two ziggurat draws and the lognormal's `exp` a request):
//! on the seeds' fleet, 773 instructions a request on one thread become
//! 589 on the simulation's (docs/performance.md, "Sixteenth session").
//!
//! Blocks travel `CHUNK` at a time over a bounded channel (`AHEAD` chunks
//! in flight: a helper waits when it is that far ahead), each
//! chunk with the stream's state after it. If a helper stops without its
//! stream's end (it cannot fail, but a thread can be refused or killed),
//! the simulation takes its state from the last chunk and draws the rest
//! itself: the same values again. When the simulation is dropped, the
//! channel closes and each helper returns at its next send.

use super::Sim;
use super::ahead::BLOCK;
use crate::engine::SimTime;
use crate::engine::rng::StreamRng;
use crate::metrics::Observer;
use crate::traffic::profile::{ArrivalProcess, RateProfile};
use crate::traffic::service::ServiceDist;
use std::sync::mpsc::{Receiver, SyncSender, sync_channel};

impl<O: Observer> Sim<'_, O> {
    /// Draws the arrival and the service times on two helper threads
    /// (this module's docs): the same outputs, byte for byte, with the
    /// draws' arithmetic off the simulation's thread. For one run on a
    /// machine with cores to spare (`fleetsim run`); runs in parallel
    /// (sweeps, calibration) keep their cores busy already. The aggregate
    /// mode draws its own way and is left as it is; so is a run already
    /// started.
    pub fn with_draw_threads(mut self) -> Self {
        if self.agg.is_none() {
            self.service
                .on_thread(&self.sc.workload.service, &self.streams.service);
            self.arrivals.on_thread(&self.streams.arrivals);
        }
        self
    }
}

/// Blocks a chunk: 4,096 draws, 32 KB.
const CHUNK: usize = 64;

/// Chunks in flight between a helper and the simulation.
const AHEAD: usize = 2;

/// A block as `ahead` fills it: its times and how many it holds (fewer
/// than `BLOCK` only at the end of the arrivals).
pub(super) type Filled = ([SimTime; BLOCK], usize);

/// A stream's state between two blocks: what the simulation needs to draw
/// on by itself.
pub(super) trait Resume: Clone + Send + 'static {
    /// Fills the next block into `out` (`ahead` fills the arrivals inline
    /// with it): how many times it holds.
    fn fill_into(&mut self, rng: &mut StreamRng, out: &mut [SimTime; BLOCK]) -> usize;
    /// The next block, as a helper sends it.
    fn fill(&mut self, rng: &mut StreamRng) -> Filled {
        let mut times = [SimTime::ZERO; BLOCK];
        let len = self.fill_into(rng, &mut times);
        (times, len)
    }
    /// No block comes after the last one filled.
    fn ended(&self) -> bool;
}

/// The service times' state: the distribution.
#[derive(Clone)]
pub(super) struct ServiceState {
    pub(super) dist: ServiceDist,
}

impl Resume for ServiceState {
    fn fill_into(&mut self, rng: &mut StreamRng, out: &mut [SimTime; BLOCK]) -> usize {
        self.dist.fill(rng, out);
        BLOCK
    }

    fn ended(&self) -> bool {
        false
    }
}

/// The arrivals' state: the process, where it is, and whether it ended.
#[derive(Clone)]
pub(super) struct ArrivalState {
    pub(super) profile: RateProfile,
    pub(super) end: SimTime,
    pub(super) process: ArrivalProcess,
    pub(super) last: SimTime,
    pub(super) done: bool,
}

impl Resume for ArrivalState {
    fn fill_into(&mut self, rng: &mut StreamRng, out: &mut [SimTime; BLOCK]) -> usize {
        if self.done {
            return 0;
        }
        let len = self
            .process
            .fill(&self.profile, self.last, self.end, rng, out);
        self.done = len < BLOCK;
        if len > 0 {
            self.last = out[len - 1];
        }
        len
    }

    fn ended(&self) -> bool {
        self.done
    }
}

/// A chunk of blocks with the stream's state after them.
struct Chunk<S> {
    blocks: Vec<Filled>,
    state: S,
    rng: StreamRng,
}

/// The simulation's end of a helper: the blocks received and not yet
/// taken, and the state after them.
pub(super) struct Feed<S: Resume> {
    rx: Option<Receiver<Chunk<S>>>,
    blocks: std::vec::IntoIter<Filled>,
    /// The stream after the blocks received (the start, before any).
    state: S,
    rng: StreamRng,
}

impl<S: Resume> Feed<S> {
    /// A helper thread drawing from `state` and `rng` on; `None` when the
    /// thread cannot be started (the caller draws inline, as before).
    pub(super) fn spawn(name: &str, state: S, rng: StreamRng) -> Option<Self> {
        let (tx, rx) = sync_channel(AHEAD);
        let (mut s, mut r) = (state.clone(), rng.clone());
        std::thread::Builder::new()
            .name(name.into())
            .spawn(move || produce(&tx, &mut s, &mut r))
            .ok()?;
        Some(Feed {
            rx: Some(rx),
            blocks: Vec::new().into_iter(),
            state,
            rng,
        })
    }

    /// The next block: from the helper, or drawn here once it has stopped.
    pub(super) fn next_block(&mut self) -> Filled {
        loop {
            if let Some(b) = self.blocks.next() {
                return b;
            }
            let chunk = match &self.rx {
                Some(rx) => rx.recv().ok(),
                None => None,
            };
            match chunk {
                Some(c) => {
                    self.blocks = c.blocks.into_iter();
                    (self.state, self.rng) = (c.state, c.rng);
                }
                None => {
                    // Stopped, at the end of its stream or not: on from its
                    // last state, inline.
                    self.rx = None;
                    return self.state.fill(&mut self.rng);
                }
            }
        }
    }
}

/// A helper's loop: chunks until its stream ends or the simulation hangs up.
fn produce<S: Resume>(tx: &SyncSender<Chunk<S>>, state: &mut S, rng: &mut StreamRng) {
    loop {
        let mut blocks = Vec::with_capacity(CHUNK);
        while blocks.len() < CHUNK && !state.ended() {
            blocks.push(state.fill(rng));
        }
        let ended = state.ended();
        let chunk = Chunk {
            blocks,
            state: state.clone(),
            rng: rng.clone(),
        };
        if tx.send(chunk).is_err() || ended {
            return;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::rng::{Stream, stream};

    fn service(dist: &ServiceDist) -> ServiceState {
        ServiceState { dist: dist.clone() }
    }

    #[test]
    fn a_helper_hands_over_the_blocks_drawn_inline() {
        let dist = ServiceDist::lognormal_from_mean_p99(120_000.0, 900_000.0).unwrap();
        let mut inline = (service(&dist), stream(4, Stream::Service));
        let mut feed = Feed::spawn("test", service(&dist), stream(4, Stream::Service)).unwrap();
        for _ in 0..5 * CHUNK + 3 {
            assert_eq!(feed.next_block(), inline.0.fill(&mut inline.1));
        }
    }

    #[test]
    fn arrivals_end_where_they_end_inline() {
        let profile = RateProfile::Constant { rps: 50.0 };
        let end = SimTime::from_secs(600);
        let state = || ArrivalState {
            profile: profile.clone(),
            end,
            process: ArrivalProcess::new(&profile),
            last: SimTime::ZERO,
            done: false,
        };
        let mut inline = (state(), stream(6, Stream::Arrivals));
        let mut feed = Feed::spawn("test", state(), stream(6, Stream::Arrivals)).unwrap();
        let mut n = 0;
        loop {
            let want = inline.0.fill(&mut inline.1);
            assert_eq!(feed.next_block(), want, "block {n}");
            n += 1;
            if want.1 == 0 {
                break;
            }
        }
        assert!(n > 2 * CHUNK, "{n} blocks");
        // Past the end, empty blocks, as inline.
        assert_eq!(feed.next_block().1, 0);
    }

    #[test]
    fn a_helper_that_stops_early_is_carried_on_inline() {
        // The helper's end of the channel gone after two chunks: the
        // simulation goes on from the second chunk's state.
        let dist = ServiceDist::Exponential { mean_us: 50_000.0 };
        let (tx, rx) = sync_channel(AHEAD);
        let (mut s, mut r) = (service(&dist), stream(8, Stream::Service));
        for _ in 0..2 {
            let blocks = (0..CHUNK).map(|_| s.fill(&mut r)).collect();
            tx.send(Chunk {
                blocks,
                state: s.clone(),
                rng: r.clone(),
            })
            .unwrap();
        }
        drop(tx);
        let mut feed = Feed {
            rx: Some(rx),
            blocks: Vec::new().into_iter(),
            state: service(&dist),
            rng: stream(8, Stream::Service),
        };
        let mut inline = (service(&dist), stream(8, Stream::Service));
        for _ in 0..4 * CHUNK {
            assert_eq!(feed.next_block(), inline.0.fill(&mut inline.1));
        }
        assert!(feed.rx.is_none(), "the channel closed: inline from then on");
    }
}
