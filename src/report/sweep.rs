//! `fleetsim sweep` and `fleetsim optimise` as pictures: the Pareto front
//! of the first two objectives, a parallel-coordinates view of the best
//! configurations, and the optimiser's convergence.

use super::ReportError;
use super::chart::{
    self, Area, DrawResult, LEGEND_W, Swatch, axis_style, label_style, legend, render, short, span,
    titled,
};
use super::data::{Objective, Table};
use super::palette as pal;
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};
use std::collections::BTreeSet;

const W: u32 = 1400;

/// Cost at or above this is the optimiser's infeasibility penalty.
pub const INFEASIBLE_COST: f64 = crate::sweep::optimise::INFEASIBLE;

/// One configuration of results.csv.
#[derive(Clone, Debug, PartialEq)]
pub struct ConfigRow {
    pub config: u64,
    /// Parameter values; `None` for empty cells (the base's) and text.
    pub params: Vec<Option<f64>>,
    pub feasible: bool,
    pub objectives: Vec<Option<f64>>,
    pub scalar: Option<f64>,
}

/// results.csv, with its parameter and objective names.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct SweepResults {
    pub params: Vec<String>,
    pub objectives: Vec<Objective>,
    pub rows: Vec<ConfigRow>,
}

impl SweepResults {
    /// Reads results.csv: the parameters are the columns
    /// `csvio::results_param_columns` finds (between `is_base` and `n`;
    /// after `config` in layout 1), the objectives are the `<metric>_mean`
    /// columns with a `<metric>_ci95`. `directions` (from sweep.toml) says
    /// which to maximise.
    pub fn parse(bytes: &[u8], directions: &[Objective]) -> Result<SweepResults, ReportError> {
        let t = Table::parse("results.csv", bytes)?;
        let param_cols = crate::sweep::csvio::results_param_columns(&t.header);
        let params: Vec<String> = t.header[param_cols.clone()].to_vec();
        let objectives: Vec<Objective> = t
            .header
            .iter()
            .filter_map(|h| h.strip_suffix("_mean"))
            .filter(|m| !matches!(*m, "scalar" | "diff_vs_base"))
            .filter(|m| t.col(&format!("{m}_ci95")).is_some())
            .map(|m| Objective {
                metric: m.to_string(),
                minimize: directions
                    .iter()
                    .find(|o| o.metric == m)
                    .is_none_or(|o| o.minimize),
            })
            .collect();
        let (cfg, feas, scalar) = (t.col("config"), t.col("feasible"), t.col("scalar_mean"));
        let rows = t
            .rows
            .iter()
            .filter_map(|r| {
                Some(ConfigRow {
                    config: t.get(r, cfg).parse().ok()?,
                    params: param_cols.clone().map(|c| t.num(r, Some(c))).collect(),
                    feasible: t.get(r, feas) == "true",
                    objectives: objectives
                        .iter()
                        .map(|o| t.num(r, t.col(&format!("{}_mean", o.metric))))
                        .collect(),
                    scalar: t.num(r, scalar),
                })
            })
            .collect();
        Ok(SweepResults {
            params,
            objectives,
            rows,
        })
    }

    /// Feasible configurations, best scalar first (ties by index).
    pub fn ranked(&self) -> Vec<&ConfigRow> {
        let mut v: Vec<&ConfigRow> = self
            .rows
            .iter()
            .filter(|r| r.feasible && r.scalar.is_some())
            .collect();
        v.sort_by(|a, b| {
            a.scalar
                .unwrap_or(f64::INFINITY)
                .total_cmp(&b.scalar.unwrap_or(f64::INFINITY))
                .then(a.config.cmp(&b.config))
        });
        v
    }
}

/// The configurations listed in pareto.csv.
pub fn parse_front(bytes: &[u8]) -> Result<BTreeSet<u64>, ReportError> {
    let t = Table::parse("pareto.csv", bytes)?;
    let c = t.col("config");
    Ok(t.rows
        .iter()
        .filter_map(|r| t.get(r, c).parse().ok())
        .collect())
}

fn objective_desc(o: &Objective) -> String {
    let dir = if o.minimize {
        "lower is better"
    } else {
        "higher is better"
    };
    format!("{} (mean; {dir})", o.metric)
}

/// The first two objectives' means: every configuration in grey (hollow
/// when infeasible), the Pareto front joined, the base marked. With one
/// objective, the objective against the configuration index.
pub fn pareto(res: &SweepResults, front: &BTreeSet<u64>) -> Result<String, ReportError> {
    render((W, 640), |root| {
        let area = titled(root, "Sweep: Pareto front of the first two objectives")?;
        let (plot, side) = area.split_horizontally(W - LEGEND_W);
        pareto_panel(&plot, res, front)?;
        let infeasible = res.rows.iter().filter(|r| !r.feasible).count();
        let entries = vec![
            (
                format!("feasible ({})", res.rows.len() - infeasible),
                Swatch::Dot(pal::BACKGROUND),
            ),
            (
                format!("infeasible ({infeasible})"),
                Swatch::Ring(pal::BACKGROUND),
            ),
            (
                format!("Pareto front ({})", front.len()),
                Swatch::Dot(pal::FRONT),
            ),
            ("base (config 0)".into(), Swatch::Dot(pal::BASE)),
        ];
        legend(&side.margin(20, 0, 0, 0), &entries)
    })
}

fn pareto_panel(area: &Area<'_>, res: &SweepResults, front: &BTreeSet<u64>) -> DrawResult {
    let two = res.objectives.len() >= 2;
    let point = |r: &ConfigRow| -> Option<(f64, f64)> {
        if two {
            Some((r.objectives[0]?, r.objectives[1]?))
        } else {
            Some((r.config as f64, *r.objectives.first()?.as_ref()?))
        }
    };
    let pts: Vec<(&ConfigRow, (f64, f64))> = res
        .rows
        .iter()
        .filter_map(|r| Some((r, point(r)?)))
        .collect();
    let x = span(pts.iter().map(|p| p.1.0), 0.06);
    let y = span(pts.iter().map(|p| p.1.1), 0.08);
    let (xd, yd) = match (res.objectives.first(), res.objectives.get(1)) {
        (Some(a), Some(b)) => (objective_desc(a), objective_desc(b)),
        (Some(a), None) => ("configuration".to_string(), objective_desc(a)),
        _ => ("configuration".to_string(), "no objective".to_string()),
    };
    let mut ch = ChartBuilder::on(area)
        .margin_left(10)
        .margin_right(20)
        .margin_top(10)
        .x_label_area_size(50)
        .y_label_area_size(90)
        .build_cartesian_2d(chart::axis(x.0, x.1), chart::axis(y.0, y.1))?;
    let fx = |v: &f64| short(*v);
    let fy = |v: &f64| short(*v);
    ch.configure_mesh()
        .x_desc(xd)
        .y_desc(yd)
        .x_label_formatter(&fx)
        .y_label_formatter(&fy)
        .axis_desc_style(axis_style())
        .label_style(label_style())
        .light_line_style(RGBColor(0xee, 0xee, 0xee))
        .draw()?;
    ch.draw_series(pts.iter().map(|(r, p)| {
        let style = if r.feasible {
            pal::BACKGROUND.filled()
        } else {
            pal::BACKGROUND.stroke_width(1)
        };
        Circle::new(*p, 4, style)
    }))?;
    let mut fr: Vec<(f64, f64)> = pts
        .iter()
        .filter(|(r, _)| front.contains(&r.config))
        .map(|(_, p)| *p)
        .collect();
    fr.sort_by(|a, b| a.0.total_cmp(&b.0));
    if two {
        ch.draw_series(LineSeries::new(fr.clone(), pal::FRONT.stroke_width(2)))?;
    }
    ch.draw_series(fr.iter().map(|p| Circle::new(*p, 5, pal::FRONT.filled())))?;
    if let Some((_, p)) = pts.iter().find(|(r, _)| r.config == 0) {
        ch.draw_series([
            Circle::new(*p, 8, pal::BASE.filled()),
            Circle::new(*p, 8, BLACK.stroke_width(1)),
        ])?;
    }
    if pts.is_empty() {
        super::chart::no_data(&ch.plotting_area().strip_coord_spec(), "configurations")?;
    }
    Ok(())
}

/// How many of the best configurations the parallel-coordinates view draws.
pub const TOP: usize = 10;

/// Axes of the parallel-coordinates view: parameters, objectives, scalar.
fn axes(res: &SweepResults) -> Vec<(String, Vec<Option<f64>>)> {
    let mut out: Vec<(String, Vec<Option<f64>>)> = res
        .params
        .iter()
        .enumerate()
        .map(|(i, p)| {
            let name = p.strip_prefix("policy.").unwrap_or(p).to_string();
            (name, res.rows.iter().map(|r| r.params[i]).collect())
        })
        .collect();
    for (i, o) in res.objectives.iter().enumerate() {
        out.push((
            o.metric.clone(),
            res.rows.iter().map(|r| r.objectives[i]).collect(),
        ));
    }
    out.push((
        "scalar (lower is better)".into(),
        res.rows.iter().map(|r| r.scalar).collect(),
    ));
    out
}

/// The top configurations by scalar objective as lines across one axis per
/// parameter and objective, each axis scaled to its range over the sweep.
pub fn parallel(res: &SweepResults) -> Result<String, ReportError> {
    let ranked = res.ranked();
    let top: Vec<u64> = ranked.iter().take(TOP).map(|r| r.config).collect();
    render((W, 620), |root| {
        let area = titled(
            root,
            &format!(
                "Sweep: the {} best configurations by scalar objective, across parameters and objectives",
                top.len()
            ),
        )?;
        let (plot, side) = area.split_horizontally(W - LEGEND_W);
        parallel_panel(&plot, res, &top)?;
        let mut entries = vec![(
            "other configurations".to_string(),
            Swatch::Line(pal::BACKGROUND),
        )];
        for (k, c) in top.iter().enumerate() {
            entries.push((
                format!("#{} config {c}", k + 1),
                Swatch::Line(rank_color(k, top.len())),
            ));
        }
        legend(&side.margin(20, 0, 0, 0), &entries)
    })
}

/// Best dark blue, fading with rank.
fn rank_color(k: usize, n: usize) -> RGBColor {
    let f = if n <= 1 {
        0.0
    } else {
        k as f64 / (n - 1) as f64 * 0.7
    };
    let mix = |a: u8| (a as f64 + (255.0 - a as f64) * f) as u8;
    let c = pal::FRONT;
    RGBColor(mix(c.0), mix(c.1), mix(c.2))
}

fn parallel_panel(area: &Area<'_>, res: &SweepResults, top: &[u64]) -> DrawResult {
    let ax = axes(res);
    let m = ax.len().max(2);
    let mut ch = ChartBuilder::on(area)
        .margin_left(60)
        .margin_right(60)
        .margin_top(20)
        .margin_bottom(10)
        .build_cartesian_2d(chart::axis(-0.2, m as f64 - 0.8), chart::axis(-0.32, 1.08))?;
    let ranges: Vec<(f64, f64)> = ax
        .iter()
        .map(|(_, v)| span(v.iter().flatten().copied(), 0.0))
        .collect();
    let norm = |a: usize, v: f64| (v - ranges[a].0) / (ranges[a].1 - ranges[a].0);
    let line = |row: usize| -> Vec<(f64, f64)> {
        ax.iter()
            .enumerate()
            .filter_map(|(a, (_, v))| Some((a as f64, norm(a, v[row]?))))
            .collect()
    };
    let centered = label_style().pos(Pos::new(HPos::Center, VPos::Top));
    for (a, (name, _)) in ax.iter().enumerate() {
        let x = a as f64;
        ch.draw_series(LineSeries::new(
            vec![(x, 0.0), (x, 1.0)],
            BLACK.stroke_width(1),
        ))?;
        let (lo, hi) = ranges[a];
        ch.draw_series([
            Text::new(short(hi), (x, 1.06), centered.clone()),
            Text::new(short(lo), (x, -0.03), centered.clone()),
            Text::new(
                name.clone(),
                (x, if a % 2 == 0 { -0.12 } else { -0.21 }),
                axis_style().pos(Pos::new(HPos::Center, VPos::Top)),
            ),
        ])?;
    }
    let in_top = |c: u64| top.contains(&c);
    for (i, r) in res.rows.iter().enumerate() {
        if !in_top(r.config) {
            ch.draw_series(LineSeries::new(
                line(i),
                pal::BACKGROUND.mix(0.5).stroke_width(1),
            ))?;
        }
    }
    for (k, c) in top.iter().enumerate().rev() {
        if let Some(i) = res.rows.iter().position(|r| r.config == *c) {
            let w = if k == 0 { 4 } else { 2 };
            ch.draw_series(LineSeries::new(
                line(i),
                rank_color(k, top.len()).stroke_width(w),
            ))?;
        }
    }
    if res.rows.is_empty() {
        super::chart::no_data(area, "configurations")?;
    }
    Ok(())
}

/// One evaluation of trace.csv.
#[derive(Clone, Debug, PartialEq)]
pub struct TracePoint {
    pub evaluation: f64,
    pub phase: String,
    pub cost: f64,
}

pub fn parse_trace(bytes: &[u8]) -> Result<Vec<TracePoint>, ReportError> {
    let t = Table::parse("trace.csv", bytes)?;
    let (e, p, c) = (t.col("evaluation"), t.col("phase"), t.col("cost"));
    Ok(t.rows
        .iter()
        .filter_map(|r| {
            Some(TracePoint {
                evaluation: t.num(r, e)?,
                phase: t.get(r, p).to_string(),
                cost: t.get(r, c).trim().parse().unwrap_or(f64::INFINITY),
            })
        })
        .collect())
}

/// A cost this large carries the penalty of at least one infeasible
/// replication (the optimiser averages the 1e9 penalty into the mean).
pub const PENALISED_COST: f64 = INFEASIBLE_COST / 1e3;

pub fn feasible(cost: f64) -> bool {
    cost.is_finite() && cost < PENALISED_COST
}

/// Every evaluation's cost coloured by phase, infeasible ones as crosses
/// along the top, and the best-so-far cost as a step line.
pub fn convergence(trace: &[TracePoint]) -> Result<String, ReportError> {
    let phases: Vec<String> = trace.iter().fold(Vec::new(), |mut v, p| {
        if !v.contains(&p.phase) {
            v.push(p.phase.clone());
        }
        v
    });
    render((W, 560), |root| {
        let area = titled(root, "Optimise: cost per evaluation and best so far")?;
        let (plot, side) = area.split_horizontally(W - LEGEND_W);
        convergence_panel(&plot, trace)?;
        let mut entries: Vec<(String, Swatch)> = phases
            .iter()
            .map(|p| {
                let n = trace.iter().filter(|t| &t.phase == p).count();
                (format!("{p} ({n})"), Swatch::Dot(pal::phase(p)))
            })
            .collect();
        entries.push(("best so far".into(), Swatch::Line(pal::THRESHOLD)));
        let bad = trace.iter().filter(|t| !feasible(t.cost)).count();
        entries.push((
            format!("infeasible in a replication ({bad})"),
            Swatch::Cross(pal::REFERENCE),
        ));
        legend(&side.margin(20, 0, 0, 0), &entries)
    })
}

fn convergence_panel(area: &Area<'_>, trace: &[TracePoint]) -> DrawResult {
    let ok: Vec<&TracePoint> = trace.iter().filter(|t| feasible(t.cost)).collect();
    let x = span(trace.iter().map(|t| t.evaluation), 0.02);
    let y = span(ok.iter().map(|t| t.cost), 0.08);
    let mut ch = ChartBuilder::on(area)
        .margin_left(10)
        .margin_right(20)
        .margin_top(10)
        .x_label_area_size(50)
        .y_label_area_size(90)
        .build_cartesian_2d(chart::axis(x.0, x.1), chart::axis(y.0, y.1))?;
    let fy = |v: &f64| short(*v);
    ch.configure_mesh()
        .x_desc("evaluation")
        .x_label_formatter(&chart::num_label)
        .y_desc("cost (scalar objective, lower is better)")
        .y_label_formatter(&fy)
        .axis_desc_style(axis_style())
        .label_style(label_style())
        .light_line_style(RGBColor(0xee, 0xee, 0xee))
        .draw()?;
    ch.draw_series(
        ok.iter()
            .map(|t| Circle::new((t.evaluation, t.cost), 3, pal::phase(&t.phase).filled())),
    )?;
    let top = y.1 - (y.1 - y.0) * 0.02;
    ch.draw_series(
        trace
            .iter()
            .filter(|t| !feasible(t.cost))
            .map(|t| Cross::new((t.evaluation, top), 4, pal::REFERENCE.stroke_width(1))),
    )?;
    let mut best = f64::INFINITY;
    let mut steps = Vec::new();
    for t in trace.iter().filter(|t| feasible(t.cost)) {
        if t.cost < best {
            if let Some(&(_, b)) = steps.last() {
                steps.push((t.evaluation, b));
            }
            best = t.cost;
            steps.push((t.evaluation, best));
        }
    }
    if let Some(&(_, b)) = steps.last() {
        steps.push((x.1, b));
    }
    ch.draw_series(LineSeries::new(steps, pal::THRESHOLD.stroke_width(2)))?;
    if trace.is_empty() {
        super::chart::no_data(&ch.plotting_area().strip_coord_spec(), "evaluations")?;
    }
    Ok(())
}
