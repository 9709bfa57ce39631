//! Recorded vs simulated, one panel per distribution `fleetsim replay
//! --calibrate` validates (requests per worker, margin over limit,
//! same-instance gaps): the recording as bars, the seeds' pooled sample as
//! an outline, both as the fraction of their sample per bin (the pool is
//! eight seeds long, the recording one), with the KS distance and p-value
//! that judged them.

use super::ReportError;
use super::chart::{
    self, Area, DrawResult, LEGEND_W, Swatch, axis_style, bins, label_style, legend, log_keys,
    nice_width, render, short, titled,
};
use super::palette as pal;
use plotters::prelude::*;
use serde::Deserialize;

const W: u32 = 1400;
const H: u32 = 500;
/// Gaps shorter than this are drawn at it on the log axis.
const LOG_FLOOR: f64 = 0.1;

/// One distribution of validation.json (`distributions[]`).
#[derive(Clone, Debug, Default, Deserialize, PartialEq)]
#[serde(default)]
pub struct Distribution {
    pub name: String,
    pub recorded_n: usize,
    pub simulated_n: usize,
    pub ks_d: Option<f64>,
    pub p_value: Option<f64>,
    pub verdict: String,
    /// Sorted, thinned to at most 2,000 order statistics by `fleetsim
    /// replay`; absent in validation.json files written before the report.
    pub recorded_sample: Vec<f64>,
    pub simulated_sample: Vec<f64>,
}

impl Distribution {
    /// Gaps span decades: drawn on a log axis.
    fn log(&self) -> bool {
        self.name.contains("gap")
    }

    pub fn drawable(&self) -> bool {
        !self.recorded_sample.is_empty() || !self.simulated_sample.is_empty()
    }
}

fn tx(log: bool, v: f64) -> f64 {
    if log { v.max(LOG_FLOOR).log10() } else { v }
}

fn fractions(values: &[f64], lo: f64, hi: f64, n: usize) -> Vec<f64> {
    let counts = bins(values, lo, hi, n);
    let total = values.len().max(1) as f64;
    counts.iter().map(|c| *c as f64 / total).collect()
}

fn panel(area: &Area<'_>, d: &Distribution) -> DrawResult {
    let log = d.log();
    let rec: Vec<f64> = d.recorded_sample.iter().map(|v| tx(log, *v)).collect();
    let sim: Vec<f64> = d.simulated_sample.iter().map(|v| tx(log, *v)).collect();
    let (mut lo, mut hi) = chart::span(rec.iter().chain(&sim).copied(), 0.0);
    let width = if log {
        lo = lo.floor();
        hi = hi.max(lo + 1.0);
        (hi - lo) / 30.0
    } else {
        let w = nice_width(hi - lo, 24);
        lo = (lo / w).floor() * w;
        hi = ((hi / w).floor() + 1.0) * w;
        w
    };
    let n = ((hi - lo) / width).round().max(1.0) as usize;
    let (fr, fs) = (fractions(&rec, lo, hi, n), fractions(&sim, lo, hi, n));
    let top = fr.iter().chain(&fs).copied().fold(0.0, f64::max).max(0.01) * 1.15;
    let title = format!(
        "{}: n {} recorded, {} simulated",
        d.name, d.recorded_n, d.simulated_n
    );
    let ks = format!(
        "KS D {}, p {}: {}",
        d.ks_d.map_or("-".into(), short),
        d.p_value.map_or("-".into(), |p| format!("{p:.2e}")),
        d.verdict
    );
    let (head, body) = area.split_vertically(48);
    head.draw(&Text::new(title, (12, 4), label_style()))?;
    let ks_color = if d.verdict == "pass" {
        pal::RETRY_OK
    } else {
        pal::BYPASS_CEILING
    };
    head.draw(&Text::new(ks, (12, 24), label_style().color(&ks_color)))?;
    let mut b = ChartBuilder::on(&body);
    b.margin_left(6)
        .margin_right(16)
        .margin_top(6)
        .x_label_area_size(50)
        .y_label_area_size(62);
    let keys = if log { log_keys(lo, hi) } else { Vec::new() };
    let x_desc = if log {
        format!("{} (log scale)", d.name)
    } else {
        d.name.clone()
    };
    let mut ch = if log {
        b.build_cartesian_2d(chart::Keyed::new(lo, hi, keys), chart::axis(0.0, top))?
    } else {
        let step = nice_width(hi - lo, 6);
        let mut k = Vec::new();
        let mut v = (lo / step).ceil() * step;
        while v <= hi + 1e-9 {
            k.push(v);
            v += step;
        }
        b.build_cartesian_2d(chart::Keyed::new(lo, hi, k), chart::axis(0.0, top))?
    };
    let fmt = |v: &f64| {
        if log {
            format!("{} s", short(10f64.powf(*v)))
        } else {
            short(*v)
        }
    };
    let pct = |v: &f64| format!("{} %", short(v * 100.0));
    ch.configure_mesh()
        .x_desc(x_desc)
        .y_desc("share of the sample")
        .x_label_formatter(&fmt)
        .y_label_formatter(&pct)
        .axis_desc_style(axis_style())
        .label_style(label_style())
        .light_line_style(RGBColor(0xee, 0xee, 0xee))
        .draw()?;
    let edge = |i: usize| lo + i as f64 * width;
    ch.draw_series(
        fr.iter()
            .enumerate()
            .filter(|(_, f)| **f > 0.0)
            .map(|(i, f)| Rectangle::new([(edge(i), 0.0), (edge(i + 1), *f)], pal::BAR.filled())),
    )?;
    let mut outline = vec![(lo, 0.0)];
    for (i, f) in fs.iter().enumerate() {
        outline.push((edge(i), *f));
        outline.push((edge(i + 1), *f));
    }
    outline.push((hi, 0.0));
    if !sim.is_empty() {
        ch.draw_series(LineSeries::new(outline, pal::SIMULATED.stroke_width(2)))?;
    }
    if rec.is_empty() && sim.is_empty() {
        chart::no_data(&ch.plotting_area().strip_coord_spec(), "samples")?;
    }
    Ok(())
}

/// The distributions side by side, with one legend.
pub fn recorded_vs_simulated(dists: &[Distribution], seeds: usize) -> Result<String, ReportError> {
    let shown: Vec<&Distribution> = dists.iter().filter(|d| d.drawable()).collect();
    render((W, H), |root| {
        let area = titled(
            root,
            "Recorded vs simulated: the calibrated scenario's seeds against the recording",
        )?;
        let (plot, side) = area.split_horizontally(W - LEGEND_W);
        let k = shown.len().max(1) as u32;
        let pw = (W - LEGEND_W) / k;
        let mut rest = plot;
        for d in &shown {
            let (here, next) = rest.split_horizontally(pw);
            panel(&here, d)?;
            rest = next;
        }
        if shown.is_empty() {
            chart::no_data(&rest, "distribution samples")?;
        }
        let mut entries = vec![
            ("recorded".to_string(), Swatch::Fill(pal::BAR)),
            (
                format!("simulated: {seeds} seeds pooled"),
                Swatch::Line(pal::SIMULATED),
            ),
        ];
        entries.push(("KS p >= 0.01: pass".into(), Swatch::Tick(pal::RETRY_OK)));
        entries.push((
            "KS p < 0.01: warn".into(),
            Swatch::Tick(pal::BYPASS_CEILING),
        ));
        legend(&side.margin(40, 0, 0, 0), &entries)
    })
}
