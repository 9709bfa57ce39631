//! The optimiser: a space-filling screen, bounded particle swarm, then
//! Nelder-Mead polishing (argmin), all on the sample average of a fixed
//! set of common-random-number replications; then the best candidates are
//! re-evaluated on fresh seeds with more replications, so the winner is not
//! a lucky draw (the winner's curse), and compared with the base, paired.
//!
//! The search runs on the unit cube `[0, 1]^d`; callers map a point to
//! parameter values. The objective is any function of (point, seeds).

use argmin::core::{CostFunction, Error, Executor};
use argmin::solver::neldermead::NelderMead;
use argmin::solver::particleswarm::ParticleSwarm;
use rand::SeedableRng;
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, Ordering};

/// A large finite penalty for infeasible points: the optimisers must be
/// able to compare them (infinity breaks simplex arithmetic).
pub const INFEASIBLE: f64 = 1.0e9;

/// One evaluation of the objective, for `trace.csv`.
#[derive(Clone, Debug, PartialEq)]
pub struct Evaluation {
    pub index: u64,
    pub phase: &'static str,
    pub x: Vec<f64>,
    pub cost: f64,
}

/// A re-evaluated candidate.
#[derive(Clone, Debug, PartialEq)]
pub struct Candidate {
    pub x: Vec<f64>,
    /// Mean cost over the search replications (biased low for the winner).
    pub search_cost: f64,
    /// Mean and 95% CI over fresh replications.
    pub fresh_mean: f64,
    pub fresh_ci95: f64,
    /// Cost minus the base's on the same fresh seeds, mean and 95% CI.
    pub diff_mean: f64,
    pub diff_ci95: f64,
    /// Fresh replications in which a constraint failed.
    pub fresh_infeasible: u64,
}

pub struct Settings {
    pub dim: usize,
    /// Evaluations for the search (screen + swarm + polish).
    pub budget: u64,
    pub seed: u64,
    /// Replications per search evaluation, and the fresh ones per candidate.
    pub replications: u64,
    pub fresh_replications: u64,
    /// Candidates re-evaluated on fresh seeds.
    pub finalists: usize,
}

/// `cost(x, replication)` for one replication; the optimiser averages.
pub type Objective<'a> = dyn Fn(Option<&[f64]>, u64) -> f64 + Sync + 'a;

/// Called with each new whole evaluation, in order, as it is recorded
/// (the CLI appends it to `trace.partial.csv`).
pub type Record<'a> = dyn Fn(&Evaluation) + Sync + 'a;

/// What a resumed search starts from: the whole evaluations an earlier,
/// interrupted search recorded, in order. The search is deterministic, so
/// it asks for the same points again: each is answered with its recorded
/// cost instead of simulations, until the record runs out.
pub struct Resume<'a> {
    pub done: Vec<Evaluation>,
    pub record: &'a Record<'a>,
}

/// The search phases, in order: the names `trace.csv` carries.
pub const PHASES: [&str; 3] = ["screen", "swarm", "polish"];

struct Problem<'a> {
    objective: &'a Objective<'a>,
    replications: Vec<u64>,
    trace: &'a Mutex<Vec<Evaluation>>,
    phase: &'static str,
    stop: &'a AtomicBool,
    resume: &'a Resume<'a>,
    /// Raised when the search asks for another point than the record's:
    /// the record is not this search's (it then stops like `stop`).
    diverged: &'a AtomicBool,
}

impl Problem<'_> {
    fn mean(&self, x: &[f64]) -> f64 {
        use rayon::prelude::*;
        let clamped: Vec<f64> = x.iter().map(|v| v.clamp(0.0, 1.0)).collect();
        if self.stop.load(Ordering::Relaxed) || self.diverged.load(Ordering::Relaxed) {
            return INFEASIBLE; // stopped: the search runs out, unrecorded
        }
        if let Some(cost) = self.replayed(&clamped) {
            return cost;
        }
        let costs: Vec<f64> = self
            .replications
            .par_iter()
            .map(|&r| (self.objective)(Some(&clamped), r))
            .collect();
        if self.stop.load(Ordering::Relaxed) {
            return INFEASIBLE; // stopped mid-evaluation: not a whole one
        }
        let m = costs.iter().sum::<f64>() / costs.len() as f64;
        let cost = if m.is_finite() {
            m.min(INFEASIBLE)
        } else {
            INFEASIBLE
        };
        let mut t = self.trace.lock().expect("trace lock");
        let index = t.len() as u64;
        let e = Evaluation {
            index,
            phase: self.phase,
            x: clamped,
            cost,
        };
        (self.resume.record)(&e);
        t.push(e);
        cost
    }

    /// The recorded cost of the next evaluation, when a resumed search
    /// still replays its record; `None` once it is past it (or diverged).
    fn replayed(&self, x: &[f64]) -> Option<f64> {
        let mut t = self.trace.lock().expect("trace lock");
        let e = self.resume.done.get(t.len())?;
        if e.phase != self.phase || e.x != x {
            self.diverged.store(true, Ordering::SeqCst);
            return Some(INFEASIBLE);
        }
        t.push(e.clone());
        Some(e.cost)
    }
}

impl CostFunction for Problem<'_> {
    type Param = Vec<f64>;
    type Output = f64;
    fn cost(&self, x: &Vec<f64>) -> Result<f64, Error> {
        Ok(self.mean(x))
    }
}

/// Runs the search and the fresh re-evaluation; returns the candidates
/// (best fresh mean first) and every evaluation.
pub fn optimise(
    s: &Settings,
    objective: &Objective,
) -> Result<(Vec<Candidate>, Vec<Evaluation>), Error> {
    match optimise_until(s, objective, &AtomicBool::new(false))? {
        Search::Done(c, e) => Ok((c, e)),
        Search::Stopped(e) => Ok((Vec::new(), e)), // never: the flag stays down
    }
}

/// How a search ended.
pub enum Search {
    /// The candidates (best fresh mean first) and every evaluation.
    Done(Vec<Candidate>, Vec<Evaluation>),
    /// `stop` was raised: the whole evaluations before it, in order.
    Stopped(Vec<Evaluation>),
}

/// `optimise`, until `stop` is raised: from then no evaluation is
/// recorded (one in flight is dropped, its simulations cut short by the
/// objective), the search runs out on no work, and the fresh
/// re-evaluation is skipped.
pub fn optimise_until(
    s: &Settings,
    objective: &Objective,
    stop: &AtomicBool,
) -> Result<Search, Error> {
    let resume = Resume {
        done: Vec::new(),
        record: &|_| (),
    };
    optimise_resumed(s, objective, stop, &resume)
}

/// `optimise_until`, replaying `resume.done` first and handing every new
/// whole evaluation to `resume.record`. A record the search does not ask
/// for point by point (another sweep or settings) is an error naming the
/// first evaluation that differs.
pub fn optimise_resumed(
    s: &Settings,
    objective: &Objective,
    stop: &AtomicBool,
    resume: &Resume,
) -> Result<Search, Error> {
    let diverged = AtomicBool::new(false);
    let result = search(s, objective, stop, resume, &diverged)?;
    if diverged.load(Ordering::SeqCst) {
        let n = match &result {
            Search::Done(_, t) | Search::Stopped(t) => t.len(),
        };
        return Err(Error::msg(format!(
            "the recorded evaluation {n} is not the point this search asks for next \
             (another sweep file, budget or build wrote it)"
        )));
    }
    Ok(result)
}

fn search(
    s: &Settings,
    objective: &Objective,
    stop: &AtomicBool,
    resume: &Resume,
    diverged: &AtomicBool,
) -> Result<Search, Error> {
    let trace = Mutex::new(Vec::new());
    let reps: Vec<u64> = (0..s.replications).collect();
    let problem = |phase: &'static str| Problem {
        objective,
        replications: reps.clone(),
        trace: &trace,
        phase,
        stop,
        resume,
        diverged,
    };
    let stop = &StopEither(stop, diverged);
    let stopped = |trace: Mutex<Vec<Evaluation>>| {
        Ok(Search::Stopped(trace.into_inner().expect("trace lock")))
    };
    let screen_n = (s.budget / 4).max(2 * s.dim as u64 + 2);
    let screen = problem("screen");
    for i in 0..screen_n {
        let x: Vec<f64> = (0..s.dim)
            .map(|d| sobol_burley::sample(i as u32, d as u32, s.seed as u32) as f64)
            .collect();
        screen.mean(&x);
    }
    if stop.load(Ordering::Relaxed) {
        return stopped(trace);
    }
    let best_screen = best_of(&trace.lock().expect("trace lock"));
    // The swarm: a few particles over the unit cube, the rest of half the budget.
    let particles = (4 + 2 * s.dim).min(20);
    let swarm_iters = ((s.budget / 2) / particles as u64).max(1);
    let pso = ParticleSwarm::new((vec![0.0; s.dim], vec![1.0; s.dim]), particles)
        .with_rng_generator(rand_xoshiro::Xoshiro256PlusPlus::seed_from_u64(s.seed));
    let res = Executor::new(problem("swarm"), pso)
        .configure(|st| st.max_iters(swarm_iters))
        .run()?;
    let swarm_best = res
        .state
        .best_individual
        .as_ref()
        .map(|p| p.position.clone())
        .unwrap_or(best_screen.clone());
    // Polish the better of the two with Nelder-Mead.
    let start = if cost_of(&trace, &swarm_best) <= cost_of(&trace, &best_screen) {
        swarm_best
    } else {
        best_screen
    };
    if stop.load(Ordering::Relaxed) {
        return stopped(trace);
    }
    let used = trace.lock().expect("trace lock").len() as u64;
    let polish_iters = s.budget.saturating_sub(used).max(1);
    let simplex = simplex_around(&start, 0.1);
    let nm = NelderMead::new(simplex).with_sd_tolerance(1e-6)?;
    Executor::new(problem("polish"), nm)
        .configure(|st| st.max_iters(polish_iters))
        .run()?;
    if stop.load(Ordering::Relaxed) {
        return stopped(trace);
    }
    let evaluations = trace.into_inner().expect("trace lock");
    let finalists = finalists(&evaluations, s.finalists);
    let candidates = reevaluate(s, objective, finalists);
    if stop.load(Ordering::Relaxed) {
        return Ok(Search::Stopped(evaluations));
    }
    Ok(Search::Done(candidates, evaluations))
}

/// The interruption flag or the divergence flag: the search stops on either.
struct StopEither<'a>(&'a AtomicBool, &'a AtomicBool);

impl StopEither<'_> {
    fn load(&self, o: Ordering) -> bool {
        self.0.load(o) || self.1.load(o)
    }
}

fn best_of(ev: &[Evaluation]) -> Vec<f64> {
    ev.iter()
        .min_by(|a, b| a.cost.total_cmp(&b.cost).then(a.index.cmp(&b.index)))
        .map(|e| e.x.clone())
        .expect("at least one evaluation")
}

fn cost_of(trace: &Mutex<Vec<Evaluation>>, x: &[f64]) -> f64 {
    trace
        .lock()
        .expect("trace lock")
        .iter()
        .find(|e| e.x == x)
        .map_or(f64::INFINITY, |e| e.cost)
}

fn simplex_around(x: &[f64], step: f64) -> Vec<Vec<f64>> {
    let mut s = vec![x.to_vec()];
    for d in 0..x.len() {
        let mut v = x.to_vec();
        v[d] = if v[d] + step <= 1.0 {
            v[d] + step
        } else {
            v[d] - step
        };
        s.push(v);
    }
    s
}

/// The best distinct points of the search (by search cost).
fn finalists(ev: &[Evaluation], n: usize) -> Vec<(Vec<f64>, f64)> {
    let mut sorted: Vec<&Evaluation> = ev.iter().filter(|e| e.cost < INFEASIBLE).collect();
    sorted.sort_by(|a, b| a.cost.total_cmp(&b.cost).then(a.index.cmp(&b.index)));
    let mut out: Vec<(Vec<f64>, f64)> = Vec::new();
    for e in sorted {
        let close = out.iter().any(|(x, _)| {
            x.iter()
                .zip(&e.x)
                .map(|(a, b)| (a - b).abs())
                .fold(0.0, f64::max)
                < 1e-3
        });
        if !close {
            out.push((e.x.clone(), e.cost));
        }
        if out.len() == n {
            break;
        }
    }
    out
}

/// Fresh seeds: replication indices after the search's, never seen by it.
fn reevaluate(
    s: &Settings,
    objective: &Objective,
    finalists: Vec<(Vec<f64>, f64)>,
) -> Vec<Candidate> {
    use super::stats::Welford;
    use rayon::prelude::*;
    let fresh: Vec<u64> = (s.replications..s.replications + s.fresh_replications).collect();
    let base: Vec<f64> = fresh.par_iter().map(|&r| objective(None, r)).collect();
    let mut out: Vec<Candidate> = finalists
        .into_iter()
        .map(|(x, search_cost)| {
            let costs: Vec<f64> = fresh.par_iter().map(|&r| objective(Some(&x), r)).collect();
            let (mut m, mut d) = (Welford::default(), Welford::default());
            for (c, b) in costs.iter().zip(&base) {
                m.push(c.min(INFEASIBLE));
                d.push(c.min(INFEASIBLE) - b.min(INFEASIBLE));
            }
            Candidate {
                x,
                search_cost,
                fresh_mean: m.mean(),
                fresh_ci95: m.ci95(),
                diff_mean: d.mean(),
                diff_ci95: d.ci95(),
                fresh_infeasible: costs.iter().filter(|c| **c >= INFEASIBLE).count() as u64,
            }
        })
        .collect();
    out.sort_by(|a, b| a.fresh_mean.total_cmp(&b.fresh_mean));
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::rng::{Stream, keyed, open01};

    /// A noisy bowl with its minimum at (0.3, 0.7): each replication adds a
    /// common offset and point-dependent noise.
    fn bowl(x: Option<&[f64]>, r: u64) -> f64 {
        let Some(x) = x else { return 1.0 }; // the "base": a mediocre policy
        let true_cost = (x[0] - 0.3).powi(2) + (x[1] - 0.7).powi(2);
        let bits: Vec<u64> = x.iter().map(|v| v.to_bits()).chain([r]).collect();
        let noise = open01(&mut keyed(9, Stream::Sampler, &bits)) - 0.5;
        true_cost + 0.05 * noise
    }

    #[test]
    fn finds_the_optimum_of_a_noisy_bowl_and_reports_it_honestly() {
        let s = Settings {
            dim: 2,
            budget: 200,
            seed: 3,
            replications: 4,
            fresh_replications: 32,
            finalists: 5,
        };
        let (cands, trace) = optimise(&s, &bowl).unwrap();
        assert!(
            trace.len() as u64 >= s.budget / 2,
            "used {} evaluations",
            trace.len()
        );
        let w = &cands[0];
        assert!(
            (w.x[0] - 0.3).abs() < 0.1 && (w.x[1] - 0.7).abs() < 0.1,
            "winner {:?}",
            w.x
        );
        // The search cost of the best point is biased low (it was picked
        // for its luck); the fresh estimate is not: it covers the truth.
        let truth = (w.x[0] - 0.3).powi(2) + (w.x[1] - 0.7).powi(2);
        assert!(
            (w.fresh_mean - truth).abs() <= w.fresh_ci95 + 1e-3,
            "{} vs {truth}",
            w.fresh_mean
        );
        let min_search = trace.iter().map(|e| e.cost).fold(f64::INFINITY, f64::min);
        assert!(
            min_search < w.fresh_mean,
            "the search minimum is the lucky draw"
        );
        assert!(
            w.diff_mean + w.diff_ci95 < 0.0,
            "better than the base, with confidence"
        );
    }
}
