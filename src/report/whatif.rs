//! `whatif.json` (written by `fleetsim replay --what-if`) in a replay
//! report: a table of each policy's figures against the recorded policy,
//! and a forest chart, one panel per figure on its own axis, of the paired
//! differences with their 95% intervals.
//!
//! The file is read as plain JSON: an interval that could not be computed
//! (one seed) is `null` there and shows as "-", never as zero. Schema 2
//! (`fleetsim.whatif/2`) is an object that says what the what-ifs rest on
//! (`calibration_reproduces`, `forced`, `warned`) and, per policy, the
//! gates that shadow its change; schema 3 adds, per policy, what of its
//! file was not applied (`not_applied`); schema 1 was the bare array of
//! policies.

use super::chart::{self, Area, DrawResult, LEGEND_W, Swatch, axis_style, label_style, legend};
use super::{Grid, ReportError, html, palette as pal};
use crate::replay::whatif::FIGURES;
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};
use serde_json::Value;

/// One figure of one policy, as the file has it.
#[derive(Clone, Debug, PartialEq)]
pub struct Cell {
    pub mean: Option<f64>,
    pub diff: Option<f64>,
    pub ci95: Option<f64>,
}

impl Cell {
    /// The interval excludes zero.
    fn significant(&self) -> bool {
        matches!((self.diff, self.ci95), (Some(d), Some(c)) if d.abs() > c)
    }
}

/// One policy: its name, a cell per entry of `FIGURES` (in that order),
/// and the notes on gates that shadow its change.
#[derive(Clone, Debug, PartialEq)]
pub struct Policy {
    pub name: String,
    pub cells: Vec<Cell>,
    pub shadowed: Vec<String>,
    /// What of the what-if file was not laid over the calibrated scenario
    /// (schema 3; empty before).
    pub not_applied: Vec<String>,
}

/// whatif.json: the policies, and the caveat they carry when the
/// calibration they rest on did not reproduce its window.
#[derive(Clone, Debug, PartialEq)]
pub struct WhatIfs {
    pub policies: Vec<Policy>,
    /// "the calibration does NOT reproduce its window (rows ...)": the
    /// what-ifs were run with `--force`. `None` for a validated
    /// calibration (and for schema 1 files, which did not say).
    pub caveat: Option<String>,
}

fn bad(message: String) -> ReportError {
    ReportError::Parse {
        file: "whatif.json".into(),
        message,
    }
}

fn caveat(v: &Value) -> Option<String> {
    if v.get("calibration_reproduces").and_then(Value::as_bool) != Some(false) {
        return None;
    }
    let rows: Vec<&str> = v
        .get("warned")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(Value::as_str)
        .collect();
    let forced = v.get("forced").and_then(Value::as_bool) == Some(true);
    Some(format!(
        "the calibration does NOT reproduce its window (rows {}): these what-ifs rest on it{}",
        rows.join(", "),
        if forced { " (run with --force)" } else { "" }
    ))
}

/// Reads whatif.json: an object with `policies` (schema 2), or a bare
/// array of policies (schema 1); the recorded policy first.
pub fn parse(bytes: &[u8]) -> Result<WhatIfs, ReportError> {
    let v: Value = serde_json::from_slice(bytes).map_err(|e| bad(e.to_string()))?;
    let arr = match &v {
        Value::Array(a) => a,
        Value::Object(o) => o
            .get("policies")
            .and_then(Value::as_array)
            .ok_or_else(|| bad("no `policies` array".into()))?,
        _ => {
            return Err(bad(
                "neither a what-if object nor an array of policies".into()
            ));
        }
    };
    let policies = policies(arr)?;
    Ok(WhatIfs {
        policies,
        caveat: caveat(&v),
    })
}

fn policies(arr: &[Value]) -> Result<Vec<Policy>, ReportError> {
    arr.iter()
        .enumerate()
        .map(|(k, p)| {
            let name = p
                .get("policy")
                .and_then(Value::as_str)
                .ok_or_else(|| bad(format!("policy {k}: no `policy` name")))?;
            let figures = p
                .get("figures")
                .and_then(Value::as_array)
                .ok_or_else(|| bad(format!("policy {name}: no `figures` array")))?;
            let cells = FIGURES
                .iter()
                .map(|(metric, _)| {
                    let f = figures
                        .iter()
                        .find(|f| f.get("metric").and_then(Value::as_str) == Some(metric));
                    let n = |key: &str| f.and_then(|f| f.get(key)).and_then(Value::as_f64);
                    Cell {
                        mean: n("mean"),
                        diff: n("diff_mean"),
                        ci95: n("diff_ci95"),
                    }
                })
                .collect();
            let strings = |key: &str| -> Vec<String> {
                p.get(key)
                    .and_then(Value::as_array)
                    .into_iter()
                    .flatten()
                    .filter_map(|n| n.as_str().map(str::to_string))
                    .collect()
            };
            Ok(Policy {
                name: name.to_string(),
                cells,
                shadowed: strings("shadowed"),
                not_applied: strings("not_applied"),
            })
        })
        .collect()
}

/// How a figure is shown: capacity loss as a percentage, the rest as is.
fn scale(metric: &str) -> (f64, &'static str) {
    if metric == "capacity_loss_fraction" {
        (100.0, " %")
    } else {
        (1.0, "")
    }
}

/// The table: a row per figure, the recorded policy's mean, then each
/// alternative's mean and its paired difference.
pub fn grid(policies: &[Policy], caveat: Option<&str>) -> Grid {
    let mut header = vec!["figure".to_string()];
    for (k, p) in policies.iter().enumerate() {
        header.push(if k == 0 {
            format!("{} (mean)", p.name)
        } else {
            format!("{}: mean, difference +- 95% CI", p.name)
        });
    }
    let rows = FIGURES
        .iter()
        .enumerate()
        .map(|(i, (metric, label))| {
            let (x, unit) = scale(metric);
            let show = |v: Option<f64>| v.map_or("-".to_string(), |v| html::number(v * x));
            let mut row = vec![format!("{label}{unit}")];
            for (k, p) in policies.iter().enumerate() {
                let c = &p.cells[i];
                if k == 0 {
                    row.push(show(c.mean));
                } else {
                    let sign = if c.diff.is_some_and(|d| d >= 0.0) {
                        "+"
                    } else {
                        ""
                    };
                    row.push(format!(
                        "{}: {sign}{} +- {}{}",
                        show(c.mean),
                        show(c.diff),
                        show(c.ci95),
                        if c.significant() { " *" } else { "" }
                    ));
                }
            }
            row
        })
        .collect();
    let title = "What-if (whatif.json): each policy on the calibrated window, the same seeds; \
                 differences against the recorded policy, paired (* the 95% interval excludes zero)";
    Grid {
        title: match caveat {
            Some(c) => format!("{title}. WARNING: {c}"),
            None => title.into(),
        },
        header,
        rows,
    }
}

const W: u32 = 1400;
const PANEL_H: u32 = 46;

/// A panel per figure, each on its own axis (the figures' units differ):
/// every alternative's difference against the recorded policy, a dot with
/// its 95% interval, filled where the interval excludes zero.
pub fn forest(policies: &[Policy]) -> Result<String, ReportError> {
    let alts = &policies[1.min(policies.len())..];
    let panel = PANEL_H * alts.len().max(1) as u32 + 70;
    let h = 40 + panel * FIGURES.len() as u32;
    chart::render((W, h), |root| {
        let area = chart::titled(
            root,
            "What-if: difference against the recorded policy, paired by seed (95% interval)",
        )?;
        let (plot, side) = area.split_horizontally(W - LEGEND_W);
        let panels = plot.split_evenly((FIGURES.len(), 1));
        for (i, p) in panels.iter().enumerate() {
            figure_panel(p, alts, i)?;
        }
        let entries = vec![
            (
                "better: interval excludes zero".to_string(),
                Swatch::Fill(pal::BETTER),
            ),
            (
                "worse: interval excludes zero".to_string(),
                Swatch::Fill(pal::WORSE),
            ),
            (
                "interval includes zero".to_string(),
                Swatch::Line(pal::REFERENCE),
            ),
        ];
        legend(&side.margin(20, 0, 0, 0), &entries)
    })
}

/// Better or worse by the figure's direction (`compare::better`), in the
/// pair no other chart uses; grey when the interval includes zero.
fn direction_color(metric: &str, diff: f64, significant: bool) -> RGBColor {
    use super::compare::{Better, better};
    match (significant, better(metric)) {
        (false, _) | (_, Better::Neither) => pal::REFERENCE,
        (true, b) if (diff < 0.0) == (b == Better::Lower) => pal::BETTER,
        _ => pal::WORSE,
    }
}

fn figure_panel(area: &Area<'_>, alts: &[Policy], i: usize) -> DrawResult {
    let (metric, label) = FIGURES[i];
    let (x, unit) = scale(metric);
    let ends = alts.iter().flat_map(|p| {
        let c = &p.cells[i];
        let d = c.diff.unwrap_or(0.0) * x;
        let h = c.ci95.unwrap_or(0.0) * x;
        [d - h, d + h, 0.0]
    });
    let span = chart::span(ends, 0.15);
    let n = alts.len().max(1);
    let mut ch = ChartBuilder::on(area)
        .margin_left(10)
        .margin_right(30)
        .margin_top(6)
        .x_label_area_size(34)
        .y_label_area_size(300)
        .build_cartesian_2d(chart::axis(span.0, span.1), chart::rows_axis(n))?;
    let names: Vec<String> = alts.iter().map(|p| p.name.clone()).collect();
    let fmt = chart::row_names(&names);
    // A tick a rounding error away from zero reads as zero, not -1.11e-16.
    let tiny = (span.1 - span.0) * 1e-9;
    let tick = |v: &f64| chart::short(if v.abs() < tiny { 0.0 } else { *v });
    ch.configure_mesh()
        .x_desc(format!("{label}{unit}: difference"))
        .x_label_formatter(&tick)
        .y_label_formatter(&fmt)
        .disable_y_mesh()
        .axis_desc_style(axis_style())
        .label_style(label_style())
        .light_line_style(RGBColor(0xee, 0xee, 0xee))
        .draw()?;
    ch.draw_series(LineSeries::new(
        vec![(0.0, -0.6), (0.0, n as f64 - 0.4)],
        pal::REFERENCE.stroke_width(1),
    ))?;
    let right = label_style().pos(Pos::new(HPos::Left, VPos::Center));
    for (k, p) in alts.iter().enumerate() {
        let y = (n - 1 - k) as f64;
        let c = &p.cells[i];
        let Some(d) = c.diff.map(|d| d * x) else {
            continue;
        };
        let color = direction_color(metric, d, c.significant());
        if let Some(h) = c.ci95.map(|h| h * x) {
            ch.draw_series(LineSeries::new(
                vec![(d - h, y), (d + h, y)],
                color.stroke_width(3),
            ))?;
        }
        let dot = if c.significant() {
            Circle::new((d, y), 6, color.filled())
        } else {
            Circle::new((d, y), 6, color.stroke_width(2))
        };
        ch.draw_series(std::iter::once(dot))?;
        let text = match c.ci95 {
            Some(h) => format!("{} +- {}", html::number(d), html::number(h * x)),
            None => html::number(d),
        };
        ch.draw_series(std::iter::once(
            EmptyElement::at((d, y)) + Text::new(text, (10, -14), right.clone()),
        ))?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn better_and_worse_by_the_figure_s_direction() {
        assert_eq!(
            direction_color("recycles_per_hour", -1.0, true),
            pal::BETTER
        );
        assert_eq!(direction_color("recycles_per_hour", 1.0, true), pal::WORSE);
        assert_eq!(
            direction_color("requests_per_worker_p10", 5.0, true),
            pal::BETTER
        );
        assert_eq!(
            direction_color("requests_per_worker_p10", -5.0, true),
            pal::WORSE
        );
        assert_eq!(
            direction_color("recycles_per_hour", -1.0, false),
            pal::REFERENCE
        );
        // The pair is used by no recycle path and no other mark.
        for p in crate::report::marks::PATHS {
            let c = crate::report::marks::path_color(p);
            assert!(c != pal::BETTER && c != pal::WORSE);
        }
    }
}
