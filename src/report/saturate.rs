//! `fleetsim saturate` as pictures: what each gate permits against what a
//! saturated fleet did and what the clients absorb, on one axis; and the
//! forced-churn probe the absorbable figure comes from.

use super::ReportError;
use super::chart::{
    self, Area, DrawResult, LEGEND_W, Swatch, axis_style, label_style, legend, log_keys, render,
    short, span_from_zero, titled,
};
use super::data::Saturate;
use super::palette as pal;
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};

const W: u32 = 1400;

/// One bar: a label, its value (None: unbounded or not found), an
/// escalated value drawn as an outline, and its colour.
struct Bar {
    label: String,
    value: Option<f64>,
    escalated: Option<f64>,
    color: RGBColor,
    none: &'static str,
}

fn bar_rows(s: &Saturate) -> Vec<Bar> {
    let mut rows: Vec<Bar> = s
        .ceilings
        .iter()
        .map(|c| Bar {
            label: format!("gate: {}", c.gate),
            value: c.per_hour,
            escalated: c.per_hour_escalated,
            color: pal::PERMITTED,
            none: "unbounded",
        })
        .collect();
    rows.push(Bar {
        label: "whole policy permits".into(),
        value: s.policy_ceiling_per_hour,
        escalated: None,
        color: pal::PERMITTED,
        none: "unbounded",
    });
    rows.push(Bar {
        label: "simulated at saturation".into(),
        value: Some(s.simulated.recycles_per_hour),
        escalated: None,
        color: pal::SIMULATED,
        none: "-",
    });
    rows.push(Bar {
        label: "absorbable churn".into(),
        value: s.absorbable.no_fetch_failed_per_hour,
        escalated: None,
        color: pal::ABSORBABLE,
        none: "none of the probed rates",
    });
    rows
}

/// Permitted ceiling per gate vs simulated vs absorbable churn, recycles
/// per hour fleet-wide, on one axis.
pub fn ceilings(s: &Saturate) -> Result<String, ReportError> {
    let rows = bar_rows(s);
    let h = 140 + 46 * rows.len() as u32;
    render((W, h), |root| {
        let area = titled(
            root,
            "What the policy permits at saturation vs what the clients absorb (recycles/h, fleet-wide)",
        )?;
        let (plot, side) = area.split_horizontally(W - LEGEND_W);
        bars_panel(&plot, &rows, s.absorbable.no_fetch_failed_per_hour)?;
        let entries = vec![
            (
                "permitted (analytic)".to_string(),
                Swatch::Fill(pal::PERMITTED),
            ),
            ("with escalation".to_string(), Swatch::Line(pal::PERMITTED)),
            (
                "simulated, every worker over".to_string(),
                Swatch::Fill(pal::SIMULATED),
            ),
            (
                format!(
                    "absorbable: fetch_failed < {}/h",
                    short(s.absorbable.fetch_failed_threshold_per_hour)
                ),
                Swatch::Fill(pal::ABSORBABLE),
            ),
        ];
        legend(&side.margin(20, 0, 0, 0), &entries)
    })
}

fn bars_panel(area: &Area<'_>, rows: &[Bar], absorbable: Option<f64>) -> DrawResult {
    let n = rows.len();
    let vals = rows.iter().flat_map(|r| [r.value, r.escalated]).flatten();
    let x = span_from_zero(vals, 0.3);
    let mut ch = ChartBuilder::on(area)
        .margin_left(10)
        .margin_right(30)
        .margin_top(10)
        .x_label_area_size(50)
        .y_label_area_size(230)
        .build_cartesian_2d(chart::axis(x.0, x.1), chart::rows_axis(n))?;
    let labels: Vec<String> = rows.iter().map(|r| r.label.clone()).collect();
    let fmt = chart::row_names(&labels);
    ch.configure_mesh()
        .x_desc("recycles per hour, fleet-wide (/h)")
        .x_label_formatter(&chart::num_label)
        .y_label_formatter(&fmt)
        .disable_y_mesh()
        .axis_desc_style(axis_style())
        .label_style(label_style())
        .light_line_style(RGBColor(0xee, 0xee, 0xee))
        .draw()?;
    let left = label_style().pos(Pos::new(HPos::Left, VPos::Center));
    for (k, r) in rows.iter().enumerate() {
        let y = (n - 1 - k) as f64;
        if let Some(e) = r.escalated {
            ch.draw_series(std::iter::once(Rectangle::new(
                [(0.0, y - 0.3), (e, y + 0.3)],
                r.color.stroke_width(2),
            )))?;
        }
        let text = match r.value {
            Some(v) => {
                ch.draw_series(std::iter::once(Rectangle::new(
                    [(0.0, y - 0.3), (v, y + 0.3)],
                    r.color.filled(),
                )))?;
                let esc = r
                    .escalated
                    .map_or(String::new(), |e| format!(" ({e:.1}/h escalated)"));
                (v.max(r.escalated.unwrap_or(0.0)), format!("{v:.1}/h{esc}"))
            }
            None => (0.0, r.none.to_string()),
        };
        ch.draw_series(std::iter::once(
            EmptyElement::at((text.0, y)) + Text::new(text.1, (8, 0), left.clone()),
        ))?;
    }
    if let Some(a) = absorbable {
        ch.draw_series(DashedLineSeries::new(
            vec![(a, -0.6), (a, n as f64 - 0.4)],
            8,
            6,
            pal::ABSORBABLE.stroke_width(2),
        ))?;
    }
    Ok(())
}

/// retry_ok/h (left axis) and fetch_failed/h (right axis) against the
/// forced churn rate, log x, with the permitted and absorbable rates marked.
pub fn probe_curve(s: &Saturate) -> Result<String, ReportError> {
    render((W, 560), |root| {
        let area = titled(
            root,
            "Absorbable churn: client resets per hour at each forced recycle rate",
        )?;
        let (plot, side) = area.split_horizontally(W - LEGEND_W);
        probe_panel(&plot, s)?;
        let a = &s.absorbable;
        let mut entries = vec![
            (
                "retry_ok/h (left axis)".to_string(),
                Swatch::Line(pal::RETRY_OK),
            ),
            (
                "fetch_failed/h (right axis)".to_string(),
                Swatch::Line(pal::FETCH_FAILED),
            ),
            (
                format!(
                    "fetch_failed threshold {}/h",
                    short(a.fetch_failed_threshold_per_hour)
                ),
                Swatch::Dashed(pal::FETCH_FAILED),
            ),
        ];
        if let Some(p) = s.policy_ceiling_per_hour {
            entries.push((
                format!("policy permits {p:.1}/h"),
                Swatch::Dashed(pal::PERMITTED),
            ));
        }
        if let Some(v) = a.no_fetch_failed_per_hour {
            entries.push((
                format!("absorbable {v:.0}/h"),
                Swatch::Dashed(pal::ABSORBABLE),
            ));
        }
        legend(&side.margin(20, 0, 0, 0), &entries)
    })
}

fn probe_panel(area: &Area<'_>, s: &Saturate) -> DrawResult {
    let a = &s.absorbable;
    let lg = |v: f64| v.max(0.1).log10();
    let xs = a
        .probes
        .iter()
        .map(|p| lg(p.target_per_hour))
        .chain(s.policy_ceiling_per_hour.map(lg))
        .chain(a.no_fetch_failed_per_hour.map(lg));
    let (mut lo, mut hi) = super::chart::span(xs, 0.0);
    lo = lo.floor();
    hi = hi.max(lo + 1.0);
    let hi = hi + 0.05 * (hi - lo);
    let y1 = span_from_zero(a.probes.iter().map(|p| p.retry_ok_per_hour), 0.1);
    let y2 = span_from_zero(
        a.probes
            .iter()
            .map(|p| p.fetch_failed_per_hour)
            .chain([a.fetch_failed_threshold_per_hour]),
        0.1,
    );
    let mut ch = ChartBuilder::on(area)
        .margin_left(10)
        .margin_right(10)
        .margin_top(10)
        .x_label_area_size(50)
        .y_label_area_size(80)
        .right_y_label_area_size(80)
        .build_cartesian_2d(
            chart::Keyed::new(lo, hi, log_keys(lo, hi)),
            chart::axis(y1.0, y1.1),
        )?
        .set_secondary_coord(chart::axis(lo, hi), chart::axis(y2.0, y2.1));
    let fmt = |v: &f64| short(10f64.powf(*v));
    ch.configure_mesh()
        .x_desc("forced recycle rate (recycles/h, log scale)")
        .y_desc("retry_ok per hour (/h)")
        .x_label_formatter(&fmt)
        .y_label_formatter(&chart::num_label)
        .axis_desc_style(axis_style())
        .label_style(label_style())
        .light_line_style(RGBColor(0xee, 0xee, 0xee))
        .draw()?;
    ch.configure_secondary_axes()
        .y_desc("fetch_failed per hour (/h)")
        .y_label_formatter(&chart::num_label)
        .axis_desc_style(axis_style())
        .label_style(label_style())
        .draw()?;
    let vline = |x: f64, c: RGBColor| {
        DashedLineSeries::new(vec![(lg(x), y1.0), (lg(x), y1.1)], 8, 6, c.stroke_width(2))
    };
    if let Some(p) = s.policy_ceiling_per_hour {
        ch.draw_series(vline(p, pal::PERMITTED))?;
    }
    if let Some(v) = a.no_fetch_failed_per_hour {
        ch.draw_series(vline(v, pal::ABSORBABLE))?;
    }
    let t = a.fetch_failed_threshold_per_hour;
    ch.draw_secondary_series(DashedLineSeries::new(
        vec![(lo, t), (hi, t)],
        4,
        4,
        pal::FETCH_FAILED.stroke_width(1),
    ))?;
    let ok: Vec<(f64, f64)> = a
        .probes
        .iter()
        .map(|p| (lg(p.target_per_hour), p.retry_ok_per_hour))
        .collect();
    let ff: Vec<(f64, f64)> = a
        .probes
        .iter()
        .map(|p| (lg(p.target_per_hour), p.fetch_failed_per_hour))
        .collect();
    ch.draw_series(LineSeries::new(ok.clone(), pal::RETRY_OK.stroke_width(2)))?;
    ch.draw_series(
        ok.iter()
            .map(|p| Circle::new(*p, 4, pal::RETRY_OK.filled())),
    )?;
    ch.draw_secondary_series(LineSeries::new(
        ff.clone(),
        pal::FETCH_FAILED.stroke_width(2),
    ))?;
    ch.draw_secondary_series(
        ff.iter()
            .map(|p| Circle::new(*p, 4, pal::FETCH_FAILED.filled())),
    )?;
    if a.probes.is_empty() {
        super::chart::no_data(&ch.plotting_area().strip_coord_spec(), "churn probes")?;
    }
    Ok(())
}
