//! How a whole-MB recording's `rss_mb` was written: rounded, or truncated
//! over whole-MB limits (`validate::Written`). Rows cannot say it alone:
//! a limit drawn whole and one rounded from a fraction look alike, and the
//! share of margins of 0 against 1 depends on how far recycles overshoot
//! (0.44-1.36 rounded and 0.90-2.60 truncated on an independent model's
//! fleets), and read at the start point, before boot is fitted, a
//! simulated reading misread 2 of 6 (boot and the rule trade off). So the
//! first fit is run under each rule and the structure score
//! (`fit::score`: KS of margins, requests and overshoot, after the fit)
//! decides, truncated only where it scores `FLOOR_MARGIN` lower; every
//! later window is written by the rule kept. Truncated logs
//! read as rounded failed validation's margin row on 7 of that model's 16
//! recordings (4 of its 8 fleets) and moved boot by 26-74 MB (docs/calibration.md,
//! thirtieth session).

/// How much lower the truncated rule's score must be to be read: rounded
/// is the rule every earlier study assumed and the ninth session measured,
/// and the two fits' scores, on common seeds, differed by 0.29-0.35 either
/// way on three rounded logs, where truncated logs scored 0.94-2.6 lower
/// truncated (14 logs of two independent models, docs/calibration.md,
/// thirtieth session: a margin read off them, not a noise model).
pub const FLOOR_MARGIN: f64 = 0.5;

/// The first fit's chosen structure's score under each rule (`None`: the
/// fit failed).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Reading {
    pub round_score: Option<f64>,
    pub floor_score: Option<f64>,
}

impl Reading {
    /// Truncated over whole-MB limits is kept where its fit scores lower
    /// by `FLOOR_MARGIN` (rounded otherwise, or where that fit alone
    /// succeeded).
    pub fn floor(&self) -> bool {
        match (self.round_score, self.floor_score) {
            (Some(r), Some(f)) => f < r - FLOOR_MARGIN,
            (None, Some(_)) => true,
            _ => false,
        }
    }

    pub fn note(&self) -> String {
        let shown = |x: Option<f64>| x.map_or("failed".to_string(), |s| format!("{s:.2}"));
        format!(
            "whole MB: rss_mb read as {} (the first fit under each rule, the chosen \
             structure's score {} with simulated windows rounded, {} truncated over \
             whole-MB limits; truncated kept where {FLOOR_MARGIN} lower)",
            if self.floor() {
                "truncated over whole-MB limits, as int(rss) or kB / 1024 writes it"
            } else {
                "rounded"
            },
            shown(self.round_score),
            shown(self.floor_score)
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn truncated_must_score_lower_by_the_margin_else_rounded() {
        let r = |a: Option<f64>, b: Option<f64>| Reading {
            round_score: a,
            floor_score: b,
        };
        assert!(r(Some(3.0), Some(2.4)).floor());
        assert!(
            !r(Some(2.11), Some(1.82)).floor(),
            "within the margin: rounded"
        );
        assert!(!r(Some(2.5), Some(3.0)).floor());
        assert!(!r(Some(2.5), Some(2.5)).floor());
        assert!(r(None, Some(9.0)).floor());
        assert!(!r(Some(9.0), None).floor());
        assert!(
            r(Some(3.0), Some(2.4))
                .note()
                .contains("truncated over whole-MB limits, as int")
        );
        assert!(
            r(Some(2.0), None)
                .note()
                .contains("2.00 with simulated windows rounded, failed")
        );
    }
}
