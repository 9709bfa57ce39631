//! Histograms over the run's recycles: requests per worker (the seeds'
//! lifetime alarm), margin over the worker's limit (the jitter floor), and
//! gaps between recycles on the same instance and across instances (what a
//! cooldown and a lease each bound).

use super::ReportError;
use super::chart::{
    self, Area, DrawResult, LEGEND_W, Swatch, axis_style, bins, label_style, legend, log_keys,
    nice_width, render, short, titled,
};
use super::data::{Event, Mark, Policy};
use super::palette as pal;
use crate::metrics::summary::{LOW_MARGIN_MB, YOUNG_REQUESTS, quantile_sorted};
use crate::replay::analyse::regimes::instance_gaps;
use plotters::prelude::*;

const W: u32 = 1400;
const H: u32 = 460;

/// A vertical line a histogram is read against.
pub struct Marker {
    pub x: f64,
    pub label: String,
    pub color: RGBColor,
    pub dashed: bool,
}

/// A shaded x interval.
pub struct Band {
    pub lo: f64,
    pub hi: f64,
    pub label: String,
}

/// One histogram panel. With `log`, values, markers and bands are seconds
/// drawn on a log10 axis.
struct Hist<'a> {
    values: &'a [f64],
    x_desc: &'a str,
    y_desc: &'a str,
    /// Bars whose upper edge is at or below this get the alert colour.
    alert_below: Option<f64>,
    markers: &'a [Marker],
    bands: &'a [Band],
    log: bool,
    /// The bars' colour (`pal::BAR`; another population its own).
    color: RGBColor,
    /// A heading over the panel (side-by-side panels name their population).
    title: Option<&'a str>,
}

/// Where a log axis starts: gaps shorter than this are drawn at it.
const LOG_FLOOR_S: f64 = 0.1;

fn tx(h: &Hist, v: f64) -> f64 {
    if h.log { v.max(LOG_FLOOR_S).log10() } else { v }
}

fn panel(area: &Area<'_>, h: &Hist) -> DrawResult {
    let area = match h.title {
        Some(t) => {
            let (top, rest) = area.split_vertically(26);
            top.draw(&Text::new(t.to_string(), (80, 4), axis_style()))?;
            rest
        }
        None => area.clone(),
    };
    let area = &area;
    let vals: Vec<f64> = h
        .values
        .iter()
        .filter(|v| v.is_finite())
        .map(|v| tx(h, *v))
        .collect();
    let marks = h
        .markers
        .iter()
        .map(|m| tx(h, m.x))
        .chain(h.bands.iter().flat_map(|b| [tx(h, b.lo), tx(h, b.hi)]));
    let (mut lo, mut hi) = super::chart::span(vals.iter().copied().chain(marks), 0.0);
    let width = if h.log {
        lo = lo.floor();
        hi = hi.max(lo + 1.0);
        (hi - lo) / 40.0
    } else {
        let w = nice_width(hi - lo, 30);
        lo = (lo / w).floor() * w;
        hi = ((hi / w).floor() + 1.0) * w;
        w
    };
    let n = ((hi - lo) / width).round().max(1.0) as usize;
    let counts = bins(&vals, lo, hi, n);
    let top = counts.iter().copied().max().unwrap_or(0).max(1) as f64 * 1.12;
    let keys = if h.log { log_keys(lo, hi) } else { Vec::new() };
    let mut b = ChartBuilder::on(area);
    b.margin_left(10)
        .margin_right(20)
        .margin_top(10)
        .x_label_area_size(50)
        .y_label_area_size(70);
    if h.log {
        let mut ch =
            b.build_cartesian_2d(chart::Keyed::new(lo, hi, keys), chart::axis(0.0, top))?;
        let fmt = |v: &f64| format!("{} s", short(10f64.powf(*v)));
        ch.configure_mesh()
            .x_desc(h.x_desc)
            .y_desc(h.y_desc)
            .x_label_formatter(&fmt)
            .y_label_formatter(&chart::num_label)
            .axis_desc_style(axis_style())
            .label_style(label_style())
            .light_line_style(RGBColor(0xee, 0xee, 0xee))
            .draw()?;
        bars(&mut ch, h, &counts, lo, width, top)
    } else {
        let mut ch = b.build_cartesian_2d(chart::axis(lo, hi), chart::axis(0.0, top))?;
        let fmt = |v: &f64| short(*v);
        ch.configure_mesh()
            .x_desc(h.x_desc)
            .y_desc(h.y_desc)
            .x_label_formatter(&fmt)
            .y_label_formatter(&chart::num_label)
            .axis_desc_style(axis_style())
            .label_style(label_style())
            .light_line_style(RGBColor(0xee, 0xee, 0xee))
            .draw()?;
        bars(&mut ch, h, &counts, lo, width, top)
    }
}

fn bars<X>(
    ch: &mut ChartContext<'_, SVGBackend<'_>, Cartesian2d<X, chart::Keyed>>,
    h: &Hist,
    counts: &[u64],
    lo: f64,
    width: f64,
    top: f64,
) -> DrawResult
where
    X: Ranged<ValueType = f64>,
{
    for b in h.bands {
        ch.draw_series(std::iter::once(Rectangle::new(
            [(tx(h, b.lo), 0.0), (tx(h, b.hi), top)],
            pal::BAND.mix(0.35).filled(),
        )))?;
    }
    let alert = h.alert_below.map(|a| tx(h, a));
    ch.draw_series(
        counts
            .iter()
            .enumerate()
            .filter(|(_, c)| **c > 0)
            .map(|(i, c)| {
                let (x0, x1) = (lo + i as f64 * width, lo + (i + 1) as f64 * width);
                let col = match alert {
                    Some(a) if x1 <= a + 1e-9 => pal::BAR_ALERT,
                    _ => h.color,
                };
                Rectangle::new([(x0, 0.0), (x1, *c as f64)], col.filled())
            }),
    )?;
    for m in h.markers {
        let x = tx(h, m.x);
        let style = m.color.stroke_width(2);
        if m.dashed {
            ch.draw_series(DashedLineSeries::new(vec![(x, 0.0), (x, top)], 8, 6, style))?;
        } else {
            ch.draw_series(LineSeries::new(vec![(x, 0.0), (x, top)], style))?;
        }
    }
    if counts.iter().all(|c| *c == 0) {
        super::chart::no_data(&ch.plotting_area().strip_coord_spec(), "recycles")?;
    }
    Ok(())
}

fn marker_entries(markers: &[Marker], bands: &[Band]) -> Vec<(String, Swatch)> {
    let mut out: Vec<(String, Swatch)> = markers
        .iter()
        .map(|m| {
            let sw = if m.dashed {
                Swatch::Dashed(m.color)
            } else {
                Swatch::Line(m.color)
            };
            (m.label.clone(), sw)
        })
        .collect();
    out.extend(
        bands
            .iter()
            .map(|b| (b.label.clone(), Swatch::Fill(pal::BAND))),
    );
    out
}

fn recycles(events: &[Event]) -> impl Iterator<Item = &Event> {
    events
        .iter()
        .filter(|e| matches!(e.mark, Mark::Recycled(_)))
}

fn pct(k: usize, n: usize) -> String {
    if n == 0 {
        "-".into()
    } else {
        format!("{:.0} %", 100.0 * k as f64 / n as f64)
    }
}

/// Requests each recycled worker served, p10 and the "young" line marked.
pub fn requests_per_worker(events: &[Event]) -> Result<String, ReportError> {
    let mut v: Vec<f64> = recycles(events).filter_map(|e| e.requests).collect();
    v.sort_by(f64::total_cmp);
    let young = v.iter().filter(|r| **r < YOUNG_REQUESTS as f64).count();
    let mut markers = Vec::new();
    if let Some(p10) = quantile_sorted(&v, 0.10) {
        markers.push(Marker {
            x: p10,
            label: format!("p10 = {p10:.0} requests"),
            color: pal::THRESHOLD,
            dashed: false,
        });
    }
    markers.push(Marker {
        x: YOUNG_REQUESTS as f64,
        label: format!(
            "young < {YOUNG_REQUESTS}: {young} ({})",
            pct(young, v.len())
        ),
        color: pal::BAR_ALERT,
        dashed: true,
    });
    let h = Hist {
        values: &v,
        x_desc: "requests served before recycling (requests)",
        y_desc: "recycled workers",
        alert_below: Some(YOUNG_REQUESTS as f64),
        markers: &markers,
        bands: &[],
        log: false,
        color: pal::BAR,
        title: None,
    };
    let mut entries = vec![(format!("{} recycles", v.len()), Swatch::Fill(pal::BAR))];
    entries.extend(marker_entries(&markers, &[]));
    single(
        "Requests per worker at recycle (worker lifetime; the seeds' alarm is p10)",
        &h,
        &entries,
    )
}

/// RSS over the worker's own jittered limit at each recycle.
pub fn margin(events: &[Event]) -> Result<String, ReportError> {
    let v: Vec<f64> = recycles(events)
        .filter_map(|e| Some(e.rss_mb? - e.limit_mb?))
        .collect();
    let low = v.iter().filter(|m| **m < LOW_MARGIN_MB).count();
    let markers = [Marker {
        x: LOW_MARGIN_MB,
        label: format!(
            "< {LOW_MARGIN_MB:.0} MB over: {low} of {} ({})",
            v.len(),
            pct(low, v.len())
        ),
        color: pal::THRESHOLD,
        dashed: false,
    }];
    let h = Hist {
        values: &v,
        x_desc: "RSS over the worker's limit at recycle (MB)",
        y_desc: "recycles",
        alert_below: Some(LOW_MARGIN_MB),
        markers: &markers,
        bands: &[],
        log: false,
        color: pal::BAR,
        title: None,
    };
    let mut entries = vec![(format!("{} recycles", v.len()), Swatch::Fill(pal::BAR))];
    entries.extend(marker_entries(&markers, &[]));
    single(
        "Margin over limit at recycle (rss_mb - limit_mb)",
        &h,
        &entries,
    )
}

fn single(title: &str, h: &Hist, entries: &[(String, Swatch)]) -> Result<String, ReportError> {
    render((W, H), |root| {
        let area = titled(root, title)?;
        let (plot, side) = area.split_horizontally(W - LEGEND_W);
        panel(&plot, h)?;
        legend(&side.margin(20, 0, 0, 0), entries)
    })
}

/// Gaps between recycles, in `fleetsim replay`'s definition
/// (`analyse::regimes::instance_gaps`): per recycle, since the previous
/// recycle on the same instance (what the cooldown bounds) and since the
/// latest recycle on any other instance (what only a fleet gate bounds).
pub fn gaps(events: &[Event]) -> (Vec<f64>, Vec<f64>) {
    let mut rec: Vec<(f64, u32)> = recycles(events).map(|e| (e.t_s, e.instance)).collect();
    rec.sort_by(|a, b| a.0.total_cmp(&b.0));
    flat_gaps(rec.into_iter().map(|(t, i)| (t, Some(i))))
}

/// `instance_gaps` with the `None`s (an instance's first recycle, the
/// fleet's first) left out: the same-instance and the across gaps.
pub fn flat_gaps(recycles: impl IntoIterator<Item = (f64, Option<u32>)>) -> (Vec<f64>, Vec<f64>) {
    let (same, cross): (Vec<_>, Vec<_>) = instance_gaps(recycles).into_iter().unzip();
    (
        same.into_iter().flatten().collect(),
        cross.into_iter().flatten().collect(),
    )
}

fn min_label(v: &[f64]) -> String {
    v.iter()
        .copied()
        .min_by(f64::total_cmp)
        .map_or("-".into(), |m| format!("{m:.1} s"))
}

/// Same-instance and cross-instance gap histograms on log axes, with the
/// cooldown and the cooldown .. cooldown + tick band (the seeds' worst
/// over-ceiling dwell) marked.
pub fn gap_histograms(events: &[Event], policy: &Policy) -> Result<String, ReportError> {
    let (same, cross) = gaps(events);
    gap_histograms_of(&same, &cross, policy)
}

/// The same chart over gaps computed elsewhere (a replay uses analysis.json's
/// definition of a cross-instance gap).
pub fn gap_histograms_of(
    same: &[f64],
    cross: &[f64],
    policy: &Policy,
) -> Result<String, ReportError> {
    let mut markers = Vec::new();
    let mut bands = Vec::new();
    if let Some(c) = policy.cooldown_s {
        markers.push(Marker {
            x: c,
            label: format!("cooldown {c:.0} s"),
            color: pal::THRESHOLD,
            dashed: false,
        });
        if let Some(t) = policy.tick_s {
            bands.push(Band {
                lo: c,
                hi: c + t,
                label: format!("cooldown + tick: {c:.0}-{:.0} s", c + t),
            });
        }
    }
    if let Some(p) = policy.pressure_cooldown_s {
        markers.push(Marker {
            x: p,
            label: format!("pressure cooldown {p:.0} s"),
            color: pal::BYPASS_PRESSURE,
            dashed: true,
        });
    }
    render((W, 520), |root| {
        let area = titled(
            root,
            "Gaps between recycles: same instance vs across instances",
        )?;
        let (plot, side) = area.split_horizontally(W - LEGEND_W);
        let (left, right) = plot.split_horizontally((W - LEGEND_W) / 2);
        let descs = [
            (
                &left,
                same,
                "same-instance gap (s, log scale)",
                pal::BAR,
                "Same instance: since its previous recycle",
            ),
            (
                &right,
                cross,
                "cross-instance gap (s, log scale)",
                pal::BAR_ACROSS,
                "Across instances: since any other's latest",
            ),
        ];
        for (a, v, d, color, title) in descs {
            let h = Hist {
                values: v,
                x_desc: d,
                y_desc: "recycles",
                alert_below: None,
                markers: &markers,
                bands: &bands,
                log: true,
                color,
                title: Some(title),
            };
            panel(a, &h)?;
        }
        let mut entries = vec![
            (
                format!("same instance: {} (min {})", same.len(), min_label(same)),
                Swatch::Fill(pal::BAR),
            ),
            (
                format!("across: {} (min {})", cross.len(), min_label(cross)),
                Swatch::Fill(pal::BAR_ACROSS),
            ),
        ];
        if policy.cooldown_s.is_none() {
            entries.push((
                "cooldown unknown: no scenario.toml".into(),
                Swatch::Dashed(pal::REFERENCE),
            ));
        }
        entries.extend(marker_entries(&markers, &bands));
        legend(&side.margin(20, 0, 0, 0), &entries)
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::data::LeaseClass;

    fn rec(t: f64, i: u32) -> Event {
        Event {
            t_s: t,
            mark: Mark::Recycled(LeaseClass::Acquired),
            instance: i,
            worker: "w0".into(),
            rss_mb: Some(520.0),
            limit_mb: Some(500.0),
            hard_limit_mb: Some(650.0),
            requests: Some(800.0),
            branch: String::new(),
            pressure: None,
            trigger: String::new(),
        }
    }

    #[test]
    fn gaps_split_same_and_cross_instance() {
        // Out of time order in the file: sorted first. Across: since the
        // latest recycle on any other instance, so instance 1's recycle at
        // 150 s, which follows its own at 7 s, has one too (150 s since
        // instance 0's): consecutive pairs on different instances skip it.
        let ev = [
            rec(0.0, 0),
            rec(7.0, 1),
            rec(400.0, 0),
            rec(150.0, 1),
            rec(401.0, 2),
        ];
        let (same, cross) = gaps(&ev);
        assert_eq!(same, vec![143.0, 400.0]);
        assert_eq!(cross, vec![7.0, 150.0, 250.0, 1.0]);
    }
}
