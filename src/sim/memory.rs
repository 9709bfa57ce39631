//! Exact mode's memory grid and the RSS accounting both engines share:
//! every RSS and shared size on a grid of 2^-20 MB, so the instance's
//! memory sum and the overshoot integral do not depend on the order of
//! their terms (the fast path credits per worker because of it).

use crate::engine::SimTime;
use crate::fleet::{Instance, Worker, memory::max_mb};
use crate::metrics::Metrics;
use crate::scenario::Scenario;

/// Exact mode's memory grid, in steps a MB: every RSS and shared size a
/// worker holds is a multiple of 2^-20 MB (`quantize_mb`), so every sum
/// of them (the instance's `private_mb`, kept incrementally) is exact in
/// `f64` and does not depend on the order of its terms; the overshoot
/// integral is kept in these units times microseconds, as an integer
/// (`Instance::overshoot_q`). The aggregate mode keeps raw floats.
pub(crate) const MEM_STEPS: f64 = 1_048_576.0;

/// `x` rounded to the nearest multiple of 2^-20 (`MEM_STEPS`), ties to
/// even: added to 1.5 x 2^32, whose unit in the last place is 2^-20, and
/// taken off again (both exact). Sizes of 2^31 MB and more are left as
/// they are (no fleet has them: sizes past 10^9 MB are refused).
#[inline(always)]
pub(crate) fn quantize_mb(x: f64) -> f64 {
    const K: f64 = 1.5 * 4_294_967_296.0;
    if x.abs() < 2_147_483_648.0 {
        (x + K) - K
    } else {
        x
    }
}

/// One term of the exact mode's overshoot integral, in 2^-20 MB x us:
/// `rss` (on the memory grid) over the ceiling `hard` (rounded to it) for
/// `dt` microseconds. The difference of two grid values is exact, and so
/// is its count of steps.
#[inline]
pub(super) fn overshoot_q(rss: f64, hard: f64, dt: u64) -> i128 {
    let steps = ((rss - quantize_mb(hard)) * MEM_STEPS) as i64;
    steps as i128 * dt as i128
}

/// Copy-on-write: what a worker's `n`-th request unshares, on exact
/// mode's memory grid (what `unshare_in` adds to the instance's sum).
#[inline(always)]
pub(super) fn cow_copied(c: &crate::fleet::Cow, n: u64) -> f64 {
    quantize_mb(c.shared_after(n - 1)) - quantize_mb(c.shared_after(n))
}

/// `Sim::set_rss` on the worker's fields and its instance's, borrowed
/// apart (the fast path's crediting holds them already): the overshoot
/// integral (fleet-wide in aggregate mode, `agg`, else the instance's, in
/// integer units), the worker's RSS, peak and time over the ceiling, the
/// cgroup's sum. In exact mode `rss` is on the memory grid already (the
/// caller's: a grid value plus a leak step drawn on it is one).
#[inline(always)]
pub(super) fn set_rss_in(
    sc: &Scenario,
    agg: bool,
    m: &mut Metrics,
    worker: &mut Worker,
    instance: &mut Instance,
    t: SimTime,
    rss: f64,
) {
    let hard = sc.policy.hard_limit_mb;
    let old = worker.rss_mb;
    debug_assert!(agg || rss == quantize_mb(rss), "an RSS off the memory grid");
    if old > hard {
        let dt = (t - worker.rss_changed_at).0;
        if agg {
            m.overshoot_mb_us += (old - hard) * dt as f64;
        } else {
            instance.overshoot_q += overshoot_q(old, hard, dt);
        }
    }
    worker.rss_changed_at = t;
    worker.rss_mb = rss;
    worker.peak_mb = max_mb(worker.peak_mb, rss);
    if rss >= hard && worker.cold.over_ceiling_since.is_none() {
        worker.cold.over_ceiling_since = Some(t);
    }
    instance.private_mb += rss - old;
    m.max_rss_mb = max_mb(m.max_rss_mb, rss);
    m.max_overshoot_mb = max_mb(m.max_overshoot_mb, rss - hard);
}

/// `Sim::unshare` on the worker and its instance, borrowed apart (`agg`:
/// the aggregate mode, off the memory grid).
#[inline(always)]
pub(super) fn unshare_in(sc: &Scenario, agg: bool, worker: &mut Worker, instance: &mut Instance) {
    let f = &sc.fleet;
    let shared = f
        .cow
        .as_ref()
        .map_or(f.shared_mb, |c| c.shared_after(worker.requests));
    let shared = if agg { shared } else { quantize_mb(shared) };
    let copied = worker.shared_mb - shared;
    if copied > 0.0 {
        worker.shared_mb = shared;
        instance.private_mb += copied;
    }
}
