//! The two charts over simulated time: the fleet timeline (worker RSS,
//! every recycle, hold and kill, the client canary) and serving capacity.

use super::ReportError;
use super::chart::{
    self, Area, DrawResult, LEGEND_W, Swatch, axis_style, decimate, label_style, legend, render,
    span, span_from_zero, titled,
};
use super::data::{Event, Mark, Policy, Timeline, WorkerSeries};
use super::marks;
use super::palette as pal;
use plotters::prelude::*;

const W: u32 = 1400;

fn hours(t_s: f64) -> f64 {
    t_s / 3600.0
}

/// The x range in hours covering the timeline and every event.
fn time_range(tl: &Timeline, events: &[Event]) -> (f64, f64) {
    let ts = tl.t_s.iter().copied().chain(events.iter().map(|e| e.t_s));
    let (lo, hi) = span(ts.map(hours), 0.0);
    (lo.min(0.0), hi)
}

/// The limits drawn behind the RSS over one stretch of time: the jittered
/// band (base +- jitter), the base limit and the hard ceiling. A run has
/// one stretch; a recording one per limit regime.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Limits {
    pub t0_s: f64,
    pub t1_s: f64,
    pub base_mb: Option<f64>,
    pub jitter_mb: Option<f64>,
    pub hard_mb: Option<f64>,
}

/// What frames a fleet timeline: the time axis's description, the canary
/// lanes' labels (lane i holds instance i) and the limits.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Frame {
    pub x_desc: String,
    pub lanes: Vec<String>,
    pub limits: Vec<Limits>,
}

impl Frame {
    /// A run's frame: `inst-i` lanes, the scenario's limits over the whole run.
    pub fn run(tl: &Timeline, events: &[Event], policy: &Policy) -> Frame {
        let n = tl.instances.len().max(
            events
                .iter()
                .map(|e| e.instance as usize + 1)
                .max()
                .unwrap_or(1),
        );
        let (t0, t1) = time_range(tl, events);
        Frame {
            x_desc: "simulated time (h)".into(),
            lanes: (0..n).map(|i| format!("inst-{i}")).collect(),
            limits: vec![Limits {
                t0_s: t0 * 3600.0,
                t1_s: t1 * 3600.0,
                base_mb: policy.base_limit_mb,
                jitter_mb: policy.jitter_mb,
                hard_mb: ceiling(events, policy),
            }],
        }
    }

    fn distinct(&self, f: impl Fn(&Limits) -> Option<f64>) -> Vec<f64> {
        let mut v: Vec<f64> = self.limits.iter().filter_map(f).collect();
        v.sort_by(f64::total_cmp);
        v.dedup();
        v
    }
}

fn mb_list(v: &[f64]) -> String {
    v.iter()
        .map(|x| format!("{x:.0}"))
        .collect::<Vec<_>>()
        .join(", ")
}

/// The hard ceiling: the events' `hard_limit_mb` column, else the policy's;
/// none when it is `inf` (no ceiling).
fn ceiling(events: &[Event], policy: &Policy) -> Option<f64> {
    events
        .iter()
        .find_map(|e| e.hard_limit_mb)
        .or(policy.hard_limit_mb)
        .filter(|h| h.is_finite())
}

/// Per-instance largest-worker RSS over time, every recycle and hold at the
/// worker's RSS, kills, the hard ceiling, and the client canary below on
/// the same time axis.
pub fn fleet_timeline(
    tl: &Timeline,
    events: &[Event],
    policy: &Policy,
) -> Result<String, ReportError> {
    fleet_timeline_in(tl, events, &Frame::run(tl, events, policy))
}

/// The fleet timeline in a given frame (a recording's regimes and lanes).
pub fn fleet_timeline_in(
    tl: &Timeline,
    events: &[Event],
    frame: &Frame,
) -> Result<String, ReportError> {
    let title =
        "Fleet timeline: worker RSS, recycles by path and trigger, holds, kills, client canary";
    fleet_timeline_at(tl, events, frame, span_of(tl, events, frame), title)
}

/// The whole timeline on a given x range (hours), so several line up.
pub fn fleet_timeline_at(
    tl: &Timeline,
    events: &[Event],
    frame: &Frame,
    x: (f64, f64),
    title: &str,
) -> Result<String, ReportError> {
    let view = View {
        x,
        title: title.into(),
        clock: false,
    };
    draw_fleet(tl, events, frame, &view)
}

/// The hours a fleet timeline covers: its rows, events and limits, from 0.
pub fn span_of(tl: &Timeline, events: &[Event], frame: &Frame) -> (f64, f64) {
    let ends = frame.limits.iter().flat_map(|l| [l.t0_s, l.t1_s]);
    let (lo, hi) = span(
        tl.t_s
            .iter()
            .copied()
            .chain(events.iter().map(|e| e.t_s))
            .chain(ends)
            .map(hours),
        0.0,
    );
    (lo.min(0.0), hi)
}

/// A stretch of the fleet timeline, `t0_s..t1_s`, its time axis as a clock
/// (HH:MM from the start of the time axis), its counts those of the stretch.
pub fn fleet_window(
    tl: &Timeline,
    events: &[Event],
    frame: &Frame,
    window_s: (f64, f64),
    title: &str,
) -> Result<String, ReportError> {
    let (t0, t1) = window_s;
    let inside: Vec<Event> = events
        .iter()
        .filter(|e| e.t_s >= t0 && e.t_s <= t1)
        .cloned()
        .collect();
    let view = View {
        x: span([hours(t0), hours(t1)], 0.0),
        title: title.into(),
        clock: true,
    };
    draw_fleet(&tl.window(t0, t1), &inside, frame, &view)
}

/// What part of the time axis a fleet chart draws, and how it labels it.
struct View {
    x: (f64, f64),
    title: String,
    /// Tick labels as HH:MM (a zoom), else hours.
    clock: bool,
}

/// An hours value as `HH:MM` (hours past 99 keep counting).
pub fn clock(h: &f64) -> String {
    let m = (h * 60.0).round().clamp(0.0, 1e9) as u64;
    format!("{:02}:{:02}", m / 60, m % 60)
}

fn draw_fleet(
    tl: &Timeline,
    events: &[Event],
    frame: &Frame,
    view: &View,
) -> Result<String, ReportError> {
    render((W, 760), |root| {
        let area = titled(root, &view.title)?;
        let (plot, side) = area.split_horizontally(W - LEGEND_W);
        let (top, bottom) = plot.split_vertically(480);
        let x = view.x;
        let merged = memory_panel(&top, tl, events, frame, x)?;
        let most = canary_panel(&bottom, events, frame, view)?;
        let mut entries: Vec<(String, Swatch)> = if tl.workers.is_empty() {
            (0..tl.instances.len())
                .map(|i| {
                    (
                        format!("inst-{i} largest RSS"),
                        Swatch::Line(pal::instance(i)),
                    )
                })
                .collect()
        } else {
            let mut inst: Vec<u32> = tl.workers.iter().map(|w| w.instance).collect();
            inst.dedup();
            let mut e: Vec<(String, Swatch)> = inst
                .iter()
                .map(|i| {
                    (
                        format!("inst-{i} workers' RSS"),
                        Swatch::Line(pal::instance(*i as usize)),
                    )
                })
                .collect();
            e.push((
                "each worker's own limit".into(),
                Swatch::Dashed(pal::REFERENCE),
            ));
            e
        };
        let hard = frame.distinct(|l| l.hard_mb);
        if !hard.is_empty() {
            entries.push((
                format!("hard ceiling {} MB", mb_list(&hard)),
                Swatch::Line(pal::BYPASS_CEILING),
            ));
        }
        let base = frame.distinct(|l| l.base_mb);
        if !base.is_empty() {
            entries.push((
                format!("base limit {} MB", mb_list(&base)),
                Swatch::Dashed(pal::REFERENCE),
            ));
        }
        let jitter = frame.distinct(|l| l.jitter_mb);
        if !base.is_empty() && !jitter.is_empty() {
            entries.push((
                format!("jittered limits +-{} MB", mb_list(&jitter)),
                Swatch::Fill(RGBColor(0xe4, 0xe4, 0xe4)),
            ));
        }
        entries.extend(marks::memory_legend(events, merged));
        for (k, m) in [Mark::RetryOk, Mark::FetchFailed].into_iter().enumerate() {
            let label = if m == Mark::RetryOk {
                "retry_ok"
            } else {
                "fetch_failed"
            };
            let dense = if most[k] > 1 {
                format!(", up to {} per 2 px", most[k])
            } else {
                String::new()
            };
            entries.push((
                format!("{label} ({}{dense})", count(events, m)),
                marks::swatch(m),
            ));
        }
        let no_rss = events
            .iter()
            .filter(|e| e.rss_mb.is_none() && marks::is_memory_mark(e.mark))
            .count();
        if no_rss > 0 {
            entries.push((
                format!("{no_rss} without rss_mb: top edge"),
                Swatch::Line(pal::REFERENCE),
            ));
        }
        legend(&side.margin(40, 0, 0, 0), &entries)
    })
}

fn count(events: &[Event], m: Mark) -> usize {
    events.iter().filter(|e| e.mark == m).count()
}

fn memory_panel(
    area: &Area<'_>,
    tl: &Timeline,
    events: &[Event],
    frame: &Frame,
    x: (f64, f64),
) -> Result<usize, Box<dyn std::error::Error>> {
    let rss = tl
        .instances
        .iter()
        .flat_map(|i| i.max_rss_mb.iter().copied())
        .chain(tl.workers.iter().flat_map(|w| w.rss_mb.iter().copied()))
        .chain(events.iter().filter_map(|e| e.rss_mb))
        .chain(
            frame
                .limits
                .iter()
                .flat_map(|l| [l.hard_mb, l.base_mb])
                .flatten(),
        );
    let y = span(rss, 0.06);
    let mut ch = ChartBuilder::on(area)
        .margin_left(10)
        .margin_right(20)
        .margin_top(10)
        .x_label_area_size(0)
        .y_label_area_size(80)
        .build_cartesian_2d(chart::axis(x.0, x.1), chart::axis(y.0, y.1))?;
    ch.configure_mesh()
        .y_desc("RSS (MB)")
        .y_label_formatter(&chart::num_label)
        .axis_desc_style(axis_style())
        .label_style(label_style())
        .light_line_style(RGBColor(0xee, 0xee, 0xee))
        .draw()?;
    let px = ch.plotting_area().dim_in_pixel().0 as usize;
    let clip = |t_s: f64| hours(t_s).clamp(x.0, x.1);
    for l in &frame.limits {
        let (t0, t1) = (clip(l.t0_s), clip(l.t1_s));
        if let (Some(b), Some(j)) = (l.base_mb, l.jitter_mb) {
            ch.draw_series(std::iter::once(Rectangle::new(
                [(t0, b - j), (t1, b + j)],
                pal::REFERENCE.mix(0.08).filled(),
            )))?;
        }
        if let Some(b) = l.base_mb {
            ch.draw_series(DashedLineSeries::new(
                vec![(t0, b), (t1, b)],
                8,
                6,
                pal::REFERENCE.stroke_width(1),
            ))?;
        }
    }
    if tl.workers.is_empty() {
        for (i, inst) in tl.instances.iter().enumerate() {
            let pts: Vec<(f64, f64)> = tl
                .t_s
                .iter()
                .zip(&inst.max_rss_mb)
                .map(|(t, r)| (hours(*t), *r))
                .collect();
            ch.draw_series(LineSeries::new(
                decimate(&pts, px),
                pal::instance(i).mix(0.75).stroke_width(1),
            ))?;
        }
    }
    for w in &tl.workers {
        let c = pal::instance(w.instance as usize);
        let pixel_s = (x.1 - x.0) * 3600.0 / px.max(1) as f64;
        for (t0, t1, limit) in limit_steps(w, pixel_s) {
            ch.draw_series(DashedLineSeries::new(
                vec![(hours(t0), limit), (hours(t1), limit)],
                5,
                4,
                c.mix(0.55).stroke_width(1),
            ))?;
        }
        let pts: Vec<(f64, f64)> = w
            .t_s
            .iter()
            .zip(&w.rss_mb)
            .map(|(t, r)| (hours(*t), *r))
            .collect();
        ch.draw_series(LineSeries::new(
            decimate(&pts, px),
            c.mix(0.6).stroke_width(1),
        ))?;
    }
    for l in &frame.limits {
        if let Some(c) = l.hard_mb {
            ch.draw_series(LineSeries::new(
                vec![(clip(l.t0_s), c), (clip(l.t1_s), c)],
                pal::BYPASS_CEILING.stroke_width(2),
            ))?;
        }
    }
    marks::draw_memory_marks(&mut ch, events, y.1)
}

/// A worker slot's limit as steps: (from, to, limit_mb), one per run of
/// equal limits (a generation's own jittered limit). Steps shorter than
/// `min_s` (under a pixel) are left out, so the count is bounded by the
/// chart's width whatever the run length.
fn limit_steps(w: &WorkerSeries, min_s: f64) -> Vec<(f64, f64, f64)> {
    let mut out: Vec<(f64, f64, f64)> = Vec::new();
    for (t, l) in w.t_s.iter().zip(&w.limit_mb) {
        if !(t.is_finite() && l.is_finite()) {
            continue;
        }
        match out.last_mut() {
            Some(last) if last.2 == *l => last.1 = *t,
            _ => out.push((*t, *t, *l)),
        }
    }
    out.retain(|s| s.1 - s.0 >= min_s);
    out
}

fn canary_panel(
    area: &Area<'_>,
    events: &[Event],
    frame: &Frame,
    view: &View,
) -> Result<[usize; 2], Box<dyn std::error::Error>> {
    let n = frame.lanes.len().max(
        events
            .iter()
            .map(|e| e.instance as usize + 1)
            .max()
            .unwrap_or(1),
    );
    let keys: Vec<f64> = (0..n).map(|i| i as f64).collect();
    let x = view.x;
    let mut ch = ChartBuilder::on(area)
        .margin_left(10)
        .margin_right(20)
        .margin_top(6)
        .x_label_area_size(50)
        .y_label_area_size(80)
        .build_cartesian_2d(
            chart::axis(x.0, x.1),
            chart::Keyed::new(-0.5, n as f64 - 0.5, keys),
        )?;
    let fmt = |v: &f64| {
        let i = v.round().max(0.0) as usize;
        frame
            .lanes
            .get(i)
            .cloned()
            .unwrap_or_else(|| format!("inst-{i}"))
    };
    let x_desc = if view.clock {
        format!("{} as HH:MM", frame.x_desc.replace(" (h)", ""))
    } else {
        frame.x_desc.clone()
    };
    let x_fmt: &dyn Fn(&f64) -> String = if view.clock {
        &clock
    } else {
        &chart::num_label
    };
    ch.configure_mesh()
        .x_desc(x_desc.as_str())
        .x_label_formatter(x_fmt)
        .y_desc("client canary")
        .y_label_formatter(&fmt)
        .axis_desc_style(axis_style())
        .label_style(label_style())
        .light_line_style(RGBColor(0xee, 0xee, 0xee))
        .draw()?;
    marks::draw_canary(&mut ch, events, n)
}

/// Serving, draining and booting workers stacked over time, and each
/// instance's cgroup headroom with the pressure threshold.
pub fn capacity(tl: &Timeline, policy: &Policy) -> Result<String, ReportError> {
    render((W, 620), |root| {
        let area = titled(
            root,
            "Serving capacity: workers by state at each timeline step, headroom per instance",
        )?;
        let (plot, side) = area.split_horizontally(W - LEGEND_W);
        let (top, bottom) = plot.split_vertically(260);
        let x = time_range(tl, &[]);
        workers_panel(&top, tl, x)?;
        headroom_panel(&bottom, tl, policy, x)?;
        let mut entries = vec![
            ("serving".to_string(), Swatch::Fill(pal::SERVING)),
            ("draining".to_string(), Swatch::Fill(pal::DRAINING)),
            ("booting".to_string(), Swatch::Fill(pal::BOOTING)),
        ];
        for i in 0..tl.instances.len() {
            entries.push((format!("inst-{i} headroom"), Swatch::Line(pal::instance(i))));
        }
        if let Some(h) = policy.min_headroom_mb {
            entries.push((
                format!("pressure below {h:.0} MB"),
                Swatch::Dashed(pal::BYPASS_PRESSURE),
            ));
        }
        if !tl.surge_spans(1.0).is_empty() {
            entries.push(("memory surge".to_string(), Swatch::Fill(pal::SURGE)));
        }
        legend(&side.margin(40, 0, 0, 0), &entries)
    })
}

/// Mean per bucket: areas keep their level when thinned (min/max would
/// draw a solid band).
fn bucket_mean(t: &[f64], v: &[f64], buckets: usize) -> Vec<(f64, f64)> {
    let pts: Vec<(f64, f64)> = t
        .iter()
        .zip(v)
        .map(|(t, v)| (hours(*t), *v))
        .filter(|(t, v)| t.is_finite() && v.is_finite())
        .collect();
    let k = pts.len().div_ceil(buckets.max(1)).max(1);
    pts.chunks(k)
        .map(|c| {
            let n = c.len() as f64;
            (c[0].0, c.iter().map(|p| p.1).sum::<f64>() / n)
        })
        .collect()
}

fn workers_panel(area: &Area<'_>, tl: &Timeline, x: (f64, f64)) -> DrawResult {
    let sd: Vec<f64> = tl
        .serving
        .iter()
        .zip(&tl.draining)
        .map(|(s, d)| s + d)
        .collect();
    let total: Vec<f64> = sd.iter().zip(&tl.booting).map(|(x, b)| x + b).collect();
    let y = span_from_zero(total.iter().copied(), 0.08);
    let mut ch = ChartBuilder::on(area)
        .margin_left(10)
        .margin_right(20)
        .margin_top(10)
        .x_label_area_size(0)
        .y_label_area_size(80)
        .build_cartesian_2d(chart::axis(x.0, x.1), chart::axis(y.0, y.1))?;
    ch.configure_mesh()
        .y_desc("workers")
        .y_label_formatter(&chart::num_label)
        .axis_desc_style(axis_style())
        .label_style(label_style())
        .light_line_style(RGBColor(0xee, 0xee, 0xee))
        .draw()?;
    if tl.t_s.is_empty() {
        return chart::no_data(&ch.plotting_area().strip_coord_spec(), "timeline rows");
    }
    let px = ch.plotting_area().dim_in_pixel().0 as usize;
    for (v, c) in [
        (&total, pal::BOOTING),
        (&sd, pal::DRAINING),
        (&tl.serving, pal::SERVING),
    ] {
        let pts = bucket_mean(&tl.t_s, v, px);
        ch.draw_series(AreaSeries::new(pts, 0.0, c.filled()))?;
    }
    Ok(())
}

fn headroom_panel(area: &Area<'_>, tl: &Timeline, policy: &Policy, x: (f64, f64)) -> DrawResult {
    let vals = tl
        .instances
        .iter()
        .flat_map(|i| i.headroom_mb.iter().copied())
        .chain(policy.min_headroom_mb);
    let y = span_from_zero(vals, 0.08);
    let mut ch = ChartBuilder::on(area)
        .margin_left(10)
        .margin_right(20)
        .margin_top(10)
        .x_label_area_size(50)
        .y_label_area_size(80)
        .build_cartesian_2d(chart::axis(x.0, x.1), chart::axis(y.0, y.1))?;
    ch.configure_mesh()
        .x_desc("simulated time (h)")
        .y_desc("headroom (MB)")
        .x_label_formatter(&chart::num_label)
        .y_label_formatter(&chart::num_label)
        .axis_desc_style(axis_style())
        .label_style(label_style())
        .light_line_style(RGBColor(0xee, 0xee, 0xee))
        .draw()?;
    let px = ch.plotting_area().dim_in_pixel().0 as usize;
    // Surge episodes behind the lines; spans closer than a pixel merge.
    let pixel_s = (x.1 - x.0) * 3600.0 / px.max(1) as f64;
    ch.draw_series(tl.surge_spans(pixel_s).into_iter().map(|(a, b)| {
        Rectangle::new(
            [(hours(a), y.0), (hours(b), y.1)],
            pal::SURGE.mix(0.5).filled(),
        )
    }))?;
    for (i, inst) in tl.instances.iter().enumerate() {
        let pts: Vec<(f64, f64)> = tl
            .t_s
            .iter()
            .zip(&inst.headroom_mb)
            .map(|(t, h)| (hours(*t), *h))
            .collect();
        ch.draw_series(LineSeries::new(
            decimate(&pts, px),
            pal::instance(i).stroke_width(1),
        ))?;
    }
    if let Some(h) = policy.min_headroom_mb {
        ch.draw_series(DashedLineSeries::new(
            vec![(x.0, h), (x.1, h)],
            8,
            6,
            pal::BYPASS_PRESSURE.stroke_width(2),
        ))?;
    }
    Ok(())
}
