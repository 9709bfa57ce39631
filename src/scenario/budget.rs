//! The up-front event-budget estimate: refusing a run that cannot fit its
//! `run.max_events` beats running for an hour and failing at the budget.

use super::Scenario;

/// Events a run will process, roughly. Exact mode: two per request
/// (arrival and completion), one per timer sample, one per timeline row.
/// Aggregate mode simulates no request one by one: one event per step
/// (which loops over the workers), plus the samples and timeline rows.
pub fn estimated_events(sc: &Scenario) -> f64 {
    let secs = sc.duration.as_secs_f64();
    let samples = match sc.policy.sampling.worst_blind_time() {
        Some(tick) => sc.fleet.workers() as f64 * secs / tick.as_secs_f64().max(1e-6),
        None => 0.0,
    };
    let timeline = secs / sc.timeline_step.as_secs_f64();
    if sc.engine.is_aggregate() {
        return secs / sc.engine.step.as_secs_f64() + samples + timeline;
    }
    let requests = sc.workload.profile.mean_rate(sc.duration) * secs;
    2.0 * requests + samples + timeline
}
