//! How many windows a calibration simulates, at most: the progress bar's
//! length (`cli/replay.rs`) and what the tests bound the count by.

use super::{Budget, Options, accept, deferral, fit};

/// Simulated windows `calibrate` runs with `budget` on `candidates`
/// structures, with the busy-deferral scan (`deferral::scan`) where
/// `options` reads deferral (at most: the scan runs only where the base
/// defers, and the fits along its ridge only where several deferrals fit;
/// on `whole_mb` rows, the first fit twice: `written.rs`).
pub fn planned_simulations(
    budget: Budget,
    candidates: usize,
    options: Options,
    whole_mb: bool,
) -> usize {
    let scan = if options.read_deferral {
        deferral::scan_windows(budget)
    } else {
        0
    };
    // The accept reading, where the rows bound lives (four kinds where
    // they name slots, three otherwise, and a hot fleet's start warm and
    // cold: at most).
    let scan = scan + (accept::KINDS.len() + 2) * accept::windows(budget);

    // Each candidate's Newton steps take a Jacobian first, when there are any.
    let newton = if budget.refine > 0 {
        fit::DIM + budget.refine
    } else {
        0
    };
    // The pilot at the start and at the fitted point (two sets of twice the
    // seeds each); when the second changed the weights, the chosen
    // structure's fixed-point steps again from its point.
    let pilots = 4 + 4;
    let again = budget.iterations.max(1);
    // When the screen rules out more than half the draws, the Jacobian
    // again on fresh seeds (its point's windows, then one set a
    // parameter) and its draws screened (`stages::screened_draws`).
    let retaken = 1 + fit::DIM;
    // Where the deferral is read off a ridge, two more fits along it.
    let ridge = if options.read_deferral { 2 } else { 0 };
    ((candidates * (budget.iterations.max(1) + newton)
        + pilots
        + again
        + fit::DIM
        + budget.refine
        + retaken)
        * budget.seeds
        + 3 * budget.draws)
        * (budget.fits.max(1) + ridge + usize::from(whole_mb))
        + scan
}
