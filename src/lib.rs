//! fleetsim: a deterministic discrete-event simulator of worker recycling in
//! pre-fork web fleets. The library is the pure core: no files, no wall
//! clock, no threads, no printing. See ARCHITECTURE.md for the map.

pub mod coord;
pub mod engine;
pub mod fleet;
pub mod metrics;
pub mod policy;
pub mod replay;
pub mod report;
pub mod scenario;
pub mod schema;
pub mod sim;
pub mod sweep;
pub mod text;
pub mod traffic;
pub mod whatif;

pub use scenario::Scenario;
/// Why a scenario runs on the event engine, not the fast path (`None`).
pub use sim::fallback as sim_fallback;
pub use sim::{Sim, SimError, SimOutput, run_summary};

/// The model and its draw regime: what a scenario and a seed turn into.
/// Bump it in the same commit as any change that changes an output for the
/// same scenario and seed (a new draw, a reordered stream, a different
/// sampler, a fixed mechanism), and say in that commit's message why.
/// Outputs carry it (`summary.json`, a sweep's `model.toml`), and
/// `fleetsim sweep --resume` and `fleetsim merge` refuse rows written under
/// another: one sweep never mixes two regimes (ARCHITECTURE.md, Invariants).
///
/// 1: the first tagged model (arrivals thinned per rate band, ziggurat
/// exponentials); untagged outputs come from earlier builds.
/// 2: aggregate mode's fixes of 2026-11-30 (an OOM victim's share of the
/// step counted, a kill after a busy drain finds work in flight, a retry
/// takes its round-robin turn, a step's requests do not see connections
/// closed later in the step). Exact mode's outputs are model 1's.
/// 3: aggregate mode's least-outstanding balancer: a step's count split by
/// the level model of the exact balancer (`leap::LeastOutstanding`) rather
/// than dealt evenly, and a retry's pick from it rather than round-robin's.
/// Round-robin and random outputs, and exact mode's, are model 2's.
/// 4: the real recyclers' presets (issue 16): uWSGI's evil reload on its own
/// 3 s memory-thread timer (it kills mid-request; `collector_interval_s`, a
/// new stream `EvilPhase`), Leakless's drift limit jittered by whole MB,
/// the presets' code defaults (uWSGI min-worker-lifetime 10 s and mercy
/// 60 s, puma_worker_killer 0.99 / 10 s / 6 h, unicorn-worker-killer
/// 1-2 GiB, Granian rss-samples 1, PHP-FPM children started together, no
/// instance cooldown for Leakless), the memory each one reads (Passenger's
/// private pages, `rss_measure`; puma_worker_killer's summed RSS,
/// `instance_memory.measure`), "no cooldown" presets without the
/// inherited 30 s pressure cooldown, and every `scenario.toml` with the new
/// `policy.evil_rss.collector_interval_s`, `policy.rss_measure` and
/// `policy.instance_memory.measure` keys. The seeds' default and its
/// fixed, surges and large-fleet variants give model 3's summaries.
/// 5: copy-on-write and the platform (issue 16): every `scenario.toml` has
/// the new `[fleet.cow]` and `[platform]` tables; their defaults (no
/// unsharing, the kernel's single-worker OOM kill, no reload wave) leave
/// every summary as model 4 wrote it (the pinned digests did not move).
/// 6: the replacement modes (issue 16, item 4): Passenger's preset detaches
/// at once and spawns beside the drain behind its 100-request proxy queue
/// (`replacement = "detach_and_spawn"`), Granian's hands over one worker
/// at a time on its 3.5 s timer (`"timed_handover"`), puma_worker_killer's
/// rolling restart is one clock per master (`[policy.rolling_restart]`,
/// a new stream `RollingRestart`), uWSGI's has the fork-bomb delay; every
/// `scenario.toml` has the new `[policy.detach_and_spawn]`,
/// `[policy.timed_handover]`, `[policy.rolling_restart]`,
/// `[policy.forkbomb]` and `[fleet.cold_start]` tables. Of the pinned
/// digests only Passenger's moved; the other scenarios, the seeds'
/// default among them, give model 5's summaries.
/// Also 6, the kill paths (issue 16 item 6, `[fleet.kill]`): every
/// `scenario.toml` has the new table; the seeds' default (gunicorn +
/// UvicornWorker) ends a drain at gunicorn's heartbeat instead of the
/// graceful timeout, which writes `heartbeat_kills` and
/// `heartbeat_kill_requests` into its summary.json (0 on the default's
/// service times: events.csv, timeline.csv and every other figure as
/// model 5 wrote them, seeds 1-5); the gunicorn sync and unicorn presets
/// time requests out (`timeout_kills`), uWSGI's mercy is counted apart
/// (`mercy_kills`). The pinned digests (the summary without those keys)
/// did not move.
///
/// 7: the exact engine's completions at one microsecond come first among
/// that microsecond's events and in worker-slot order
/// (`EventQueue::schedule_tied`), not in the order they were scheduled,
/// and the overshoot integral is summed per instance; that order is what
/// the fast path (`sim/lazy/`, lazy completions) keeps without
/// scheduling most completions at all, so both give the same bytes
/// (`tests/lazy_engine.rs`). Ties at a microsecond are rare, the sum's
/// order moves `overshoot_mb_s` in its last digits: of the pinned digests
/// the default's, the gunicorn sync preset's and the surges' moved; the
/// aggregate mode's did not (its sum stays fleet-wide).
///
/// 8: exact mode keeps memory on a grid of 2^-20 MB (every RSS, shared
/// size and leak step a worker takes is rounded to it), so the instance's
/// memory sum is exact whatever the order of its terms, and the overshoot
/// integral is an integer of 2^-20 MB x us per instance: the lazy fast
/// path may then credit a worker's completions in a batch. Figures move
/// at rounding level (a step of at most 2^-21 MB); the aggregate mode is
/// untouched (its pinned digests did not move).
///
/// 9: a warm start that puts an instance over its container opens as the
/// running fleet would, after its kernel's kills: the largest worker is in
/// a later life, drawn again, until the instance fits (`sim/warm.rs`).
/// Only fleets whose warm ages overfilled a container move (among the
/// presets unicorn-worker-killer, which opened every run on an OOM kill at
/// time zero); no pinned digest moved.
///
/// `tests/model_version.rs` pins a few scenario/seed pairs per mode: an
/// output change without a bump fails it.
pub const MODEL_VERSION: u32 = 9;

/// The crate version, recorded beside `MODEL_VERSION` for the reader (the
/// refusals compare the model version only: a release that keeps every
/// output keeps its sweeps resumable).
pub const VERSION: &str = env!("CARGO_PKG_VERSION");

/// `MODEL_VERSION` and `VERSION` as one tag: "model 1 (fleetsim 0.1.0)".
pub fn model_tag() -> String {
    format!("model {MODEL_VERSION} (fleetsim {VERSION})")
}
