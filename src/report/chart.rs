//! What every chart shares: the SVG canvas, axis ranges that never
//! collapse, the legend column, histogram bins, and the two size bounds
//! (lines thinned to the pixel columns they can use, markers to one per
//! pixel), so a week-long run draws as fast and as small as an hour.

use super::ReportError;
use plotters::coord::Shift;
use plotters::coord::types::RangedCoordf64;
use plotters::prelude::*;
use std::collections::BTreeSet;

pub type Area<'a> = DrawingArea<SVGBackend<'a>, Shift>;
pub type DrawResult = Result<(), Box<dyn std::error::Error>>;

pub const FONT: &str = "sans-serif";
/// Width of the legend column on the right of every chart.
pub const LEGEND_W: u32 = 230;

pub fn title_style() -> TextStyle<'static> {
    (FONT, 22).into_font().style(FontStyle::Bold).into()
}

pub fn label_style() -> TextStyle<'static> {
    (FONT, 15).into()
}

pub fn axis_style() -> TextStyle<'static> {
    (FONT, 16).into()
}

/// Draws on a white canvas of `size` pixels and returns the SVG text.
pub fn render(
    size: (u32, u32),
    draw: impl for<'a> FnOnce(&Area<'a>) -> DrawResult,
) -> Result<String, ReportError> {
    let mut buf = String::new();
    {
        let root = SVGBackend::with_string(&mut buf, size).into_drawing_area();
        root.fill(&WHITE).map_err(chart_err)?;
        draw(&root).map_err(chart_err)?;
        root.present().map_err(chart_err)?;
    }
    Ok(buf)
}

fn chart_err(e: impl std::fmt::Display) -> ReportError {
    ReportError::Chart(e.to_string())
}

/// The chart's title across the top; returns the area below it.
pub fn titled<'a>(root: &Area<'a>, title: &str) -> Result<Area<'a>, Box<dyn std::error::Error>> {
    let (top, rest) = root.split_vertically(40);
    top.draw(&Text::new(title.to_string(), (14, 10), title_style()))?;
    Ok(rest)
}

/// The largest magnitude an axis reaches: finite values beyond it are
/// drawn at the edge. An eighth of `f64::MAX` leaves room for the padding
/// and for the axis code's own sums (a range of width infinity never ends
/// plotters' tick search).
pub const AXIS_MAX: f64 = f64::MAX / 8.0;

/// The narrowest range relative to its magnitude: a tick step under about
/// 1e-9 of the values would not move a value it is added to.
const MIN_RELATIVE_WIDTH: f64 = 1e-9;

/// A range over the finite values (clamped to +-`AXIS_MAX`), padded by
/// `pad` (at most 1) of its span; never empty, always finite, and wide
/// enough for its ticks to be distinct numbers: a single value or no value
/// at all gets a unit-wide range.
pub fn span(values: impl IntoIterator<Item = f64>, pad: f64) -> (f64, f64) {
    let (mut lo, mut hi) = (f64::INFINITY, f64::NEG_INFINITY);
    for v in values.into_iter().filter(|v| v.is_finite()) {
        let v = v.clamp(-AXIS_MAX, AXIS_MAX);
        lo = lo.min(v);
        hi = hi.max(v);
    }
    if !lo.is_finite() {
        return (0.0, 1.0);
    }
    let pad = if pad.is_finite() {
        pad.clamp(0.0, 1.0)
    } else {
        0.0
    };
    let w = hi - lo;
    let magnitude = lo.abs().max(hi.abs());
    if w <= MIN_RELATIVE_WIDTH * magnitude.max(1.0) {
        let d = (magnitude * 0.1).max(1.0);
        return (lo - d, hi + d);
    }
    (lo - w * pad, hi + w * pad)
}

/// The same, starting at zero when no value is negative.
pub fn span_from_zero(values: impl IntoIterator<Item = f64>, pad: f64) -> (f64, f64) {
    let v: Vec<f64> = values.into_iter().filter(|v| v.is_finite()).collect();
    let (lo, hi) = span(v.iter().copied(), pad);
    if v.iter().all(|x| *x >= 0.0) {
        (0.0, hi.max(1e-9))
    } else {
        (lo, hi)
    }
}

/// Thins a line to at most two points (its min and max, in time order)
/// per bucket of `buckets` along x, so its shape survives at any length.
pub fn decimate(points: &[(f64, f64)], buckets: usize) -> Vec<(f64, f64)> {
    let pts: Vec<(f64, f64)> = points
        .iter()
        .copied()
        .filter(|(x, y)| x.is_finite() && y.is_finite())
        .collect();
    let buckets = buckets.max(1);
    if pts.len() <= 2 * buckets {
        return pts;
    }
    let (x0, x1) = (pts[0].0, pts[pts.len() - 1].0);
    let w = (x1 - x0).max(f64::MIN_POSITIVE);
    let bucket = |x: f64| ((((x - x0) / w) * buckets as f64) as usize).min(buckets - 1);
    let mut out = Vec::with_capacity(2 * buckets);
    let mut i = 0;
    while i < pts.len() {
        let b = bucket(pts[i].0);
        let mut j = i;
        let (mut lo, mut hi) = (i, i);
        while j < pts.len() && bucket(pts[j].0) == b {
            if pts[j].1 < pts[lo].1 {
                lo = j;
            }
            if pts[j].1 > pts[hi].1 {
                hi = j;
            }
            j += 1;
        }
        let (a, c) = if lo <= hi { (lo, hi) } else { (hi, lo) };
        out.push(pts[a]);
        if c != a {
            out.push(pts[c]);
        }
        i = j;
    }
    out
}

/// Keeps the first point that lands on each pixel: a marker drawn twice on
/// the same pixel adds bytes, not information. Past `MAX_MARKERS` the
/// cells grow (2, 4, 8... pixels) until the markers fit.
pub fn one_per_pixel(
    points: impl IntoIterator<Item = (f64, f64)>,
    to_pixel: impl Fn(&(f64, f64)) -> (i32, i32),
) -> Vec<(f64, f64)> {
    let pts: Vec<((f64, f64), (i32, i32))> = points
        .into_iter()
        .filter(|p| p.0.is_finite() && p.1.is_finite())
        .map(|p| (p, to_pixel(&p)))
        .collect();
    let mut cell = 1;
    loop {
        let mut seen = BTreeSet::new();
        let kept: Vec<(f64, f64)> = pts
            .iter()
            .filter(|(_, (x, y))| seen.insert((x.div_euclid(cell), y.div_euclid(cell))))
            .map(|(p, _)| *p)
            .collect();
        if kept.len() <= MAX_MARKERS || cell >= 64 {
            return kept;
        }
        cell *= 2;
    }
}

/// Markers one series draws at most (before its cells coarsen).
pub const MAX_MARKERS: usize = 2500;

/// Equal-width bins over [lo, hi): counts per bin.
pub fn bins(values: &[f64], lo: f64, hi: f64, n: usize) -> Vec<u64> {
    let mut out = vec![0u64; n.max(1)];
    let w = (hi - lo) / out.len() as f64;
    for v in values.iter().filter(|v| v.is_finite()) {
        let b = ((v - lo) / w).floor();
        let b = if b < 0.0 {
            0
        } else {
            (b as usize).min(out.len() - 1)
        };
        out[b] += 1;
    }
    out
}

/// A bin width from {1, 2, 5} x 10^k giving about `target` bins over `w`.
pub fn nice_width(w: f64, target: usize) -> f64 {
    let raw = (w / target.max(1) as f64).max(f64::MIN_POSITIVE);
    let mag = 10f64.powf(raw.log10().floor());
    [1.0, 2.0, 5.0, 10.0]
        .into_iter()
        .map(|m| m * mag)
        .find(|s| *s >= raw)
        .unwrap_or(10.0 * mag)
}

/// 1, 2, 5 x 10^k within [lo, hi] (in log10 units).
pub fn log_keys(lo: f64, hi: f64) -> Vec<f64> {
    let mut out = Vec::new();
    // Decades past f64's (10^-324..10^308) hold no value: a range of
    // infinities would otherwise walk four billion of them.
    let decade = |v: f64| v.clamp(-330.0, 310.0) as i32;
    let (first, last) = (decade(lo.floor()), decade(hi.ceil()));
    // Over more than a dozen decades, powers of ten only, every `every`th.
    let every = ((last - first) / 12).max(1);
    let mantissas: &[f64] = if last - first > 12 {
        &[1.0]
    } else {
        &[1.0, 2.0, 5.0]
    };
    for k in (first..=last).filter(|k| k.rem_euclid(every) == 0) {
        for &m in mantissas {
            let v = (m * 10f64.powi(k)).log10();
            if v >= lo && v <= hi {
                out.push(v);
            }
        }
    }
    out
}

/// A numeric axis whose ticks sit exactly at the given values (categories,
/// log-scale decades), or at plotters' own (`axis`). plotters' own
/// `WithKeyPoints` over `f64` cannot take a label formatter; this can.
/// Every chart's axes are these: a value far outside the range (1e308 on
/// an axis clamped to `AXIS_MAX`) is drawn one range-width past the edge
/// at most, so no pixel coordinate overflows.
#[derive(Clone)]
pub struct Keyed {
    inner: RangedCoordf64,
    keys: Option<Vec<f64>>,
}

impl Keyed {
    pub fn new(lo: f64, hi: f64, keys: Vec<f64>) -> Keyed {
        Keyed {
            inner: (lo..hi).into(),
            keys: Some(keys),
        }
    }

    /// The value `map` draws: within one range-width of the range.
    fn bounded(&self, v: f64) -> f64 {
        let r = self.inner.range();
        let w = r.end - r.start;
        if w.is_finite() {
            v.clamp(r.start - w, r.end + w)
        } else {
            v.clamp(r.start, r.end)
        }
    }
}

/// A plain numeric axis over `lo..hi` with plotters' ticks.
pub fn axis(lo: f64, hi: f64) -> Keyed {
    Keyed {
        inner: (lo..hi).into(),
        keys: None,
    }
}

/// A y axis of `n` named rows, the first on top: row `k` sits at
/// `y = n - 1 - k`, with a tick at each row.
pub fn rows_axis(n: usize) -> Keyed {
    Keyed::new(-0.6, n as f64 - 0.4, (0..n).map(|k| k as f64).collect())
}

/// The label formatter of `rows_axis`: `names` in row order, first on top.
pub fn row_names(names: &[String]) -> impl Fn(&f64) -> String + '_ {
    move |v: &f64| {
        let k = v.round().max(0.0) as usize;
        names
            .len()
            .checked_sub(k + 1)
            .and_then(|i| names.get(i))
            .cloned()
            .unwrap_or_default()
    }
}

impl Ranged for Keyed {
    type FormatOption = plotters::coord::ranged1d::DefaultFormatting;
    type ValueType = f64;

    fn map(&self, value: &f64, limit: (i32, i32)) -> i32 {
        self.inner.map(&self.bounded(*value), limit)
    }

    fn key_points<Hint: plotters::coord::ranged1d::KeyPointHint>(&self, hint: Hint) -> Vec<f64> {
        match &self.keys {
            Some(keys) => keys.clone(),
            None => self.inner.key_points(hint),
        }
    }

    fn range(&self) -> std::ops::Range<f64> {
        self.inner.range()
    }
}

/// How a legend entry is drawn.
#[derive(Clone, Copy, Debug)]
pub enum Swatch {
    Line(RGBColor),
    Dashed(RGBColor),
    Dot(RGBColor),
    Ring(RGBColor),
    Cross(RGBColor),
    Tick(RGBColor),
    Fill(RGBColor),
    Square(RGBColor),
    Triangle(RGBColor),
    Diamond(RGBColor),
    /// A ring around a marker (the pressure flag).
    Halo(RGBColor),
}

/// A column of legend entries at the top of `area`.
pub fn legend(area: &Area<'_>, entries: &[(String, Swatch)]) -> DrawResult {
    let mut y = 14;
    for (label, sw) in entries {
        let (x, c) = (14, (22, y));
        match *sw {
            Swatch::Line(col) => {
                area.draw(&PathElement::new(
                    vec![(x, y), (x + 18, y)],
                    col.stroke_width(3),
                ))?;
            }
            Swatch::Dashed(col) => {
                for k in 0..3 {
                    area.draw(&PathElement::new(
                        vec![(x + 7 * k, y), (x + 7 * k + 4, y)],
                        col.stroke_width(2),
                    ))?;
                }
            }
            Swatch::Dot(col) => area.draw(&Circle::new(c, 5, col.filled()))?,
            Swatch::Ring(col) => area.draw(&Circle::new(c, 5, col.stroke_width(2)))?,
            Swatch::Cross(col) => area.draw(&Cross::new(c, 5, col.stroke_width(2)))?,
            Swatch::Tick(col) => area.draw(&PathElement::new(
                vec![(22, y - 7), (22, y + 7)],
                col.stroke_width(2),
            ))?,
            Swatch::Square(col) => {
                area.draw(&Rectangle::new([(18, y - 4), (26, y + 4)], col.filled()))?
            }
            Swatch::Triangle(col) => area.draw(&Polygon::new(
                vec![(22, y - 5), (27, y + 4), (17, y + 4)],
                col.filled(),
            ))?,
            Swatch::Diamond(col) => area.draw(&Polygon::new(
                vec![(22, y - 5), (27, y), (22, y + 5), (17, y)],
                col.filled(),
            ))?,
            Swatch::Halo(col) => area.draw(&Circle::new(c, 8, col.stroke_width(2)))?,
            Swatch::Fill(col) => area.draw(&Rectangle::new(
                [(x, y - 6), (x + 18, y + 6)],
                col.mix(0.8).filled(),
            ))?,
        }
        area.draw(&Text::new(label.clone(), (x + 26, y - 8), label_style()))?;
        y += 24;
    }
    Ok(())
}

/// A line of text in the middle of an empty plot.
pub fn no_data(area: &Area<'_>, what: &str) -> DrawResult {
    let (w, h) = area.dim_in_pixel();
    area.draw(&Text::new(
        format!("no {what} in this output"),
        (w as i32 / 2 - 120, h as i32 / 2),
        axis_style().color(&RGBColor(0x88, 0x88, 0x88)),
    ))?;
    Ok(())
}

/// An axis label formatter: `short` of the value.
pub fn num_label(v: &f64) -> String {
    short(*v)
}

/// Short number for axis labels: 1200 -> "1200", 0.5 -> "0.5", 1e-4 -> "1e-4".
pub fn short(v: f64) -> String {
    let a = v.abs();
    if a == 0.0 {
        "0".into()
    } else if !(1e-3..1e6).contains(&a) {
        format!("{v:.2e}")
    } else if a >= 100.0 {
        format!("{v:.0}")
    } else if a >= 1.0 {
        trim(format!("{v:.2}"))
    } else {
        trim(format!("{v:.3}"))
    }
}

fn trim(s: String) -> String {
    if s.contains('.') {
        s.trim_end_matches('0').trim_end_matches('.').to_string()
    } else {
        s
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn span_never_collapses() {
        assert_eq!(span([], 0.1), (0.0, 1.0));
        let (lo, hi) = span([5.0], 0.1);
        assert!(lo < 5.0 && hi > 5.0);
        assert_eq!(span([f64::NAN, 0.0, 10.0], 0.0), (0.0, 10.0));
    }

    #[test]
    fn span_is_finite_for_any_value() {
        for vals in [
            vec![-1e308, 1e308],
            vec![f64::MAX, f64::MIN, f64::INFINITY],
            vec![1e308],
            vec![1e16, 1e16 + 4.0],
            vec![-f64::MAX],
        ] {
            for pad in [0.0, 0.3, f64::INFINITY] {
                let (lo, hi) = span(vals.iter().copied(), pad);
                assert!(lo.is_finite() && hi.is_finite() && lo < hi, "{vals:?}");
                assert!((hi - lo).is_finite(), "{vals:?}: width overflows");
                // A tick a sixth of the width apart moves any value in range.
                let step = nice_width(hi - lo, 6);
                assert!(hi + step > hi && lo + step > lo, "{vals:?}");
            }
        }
    }

    #[test]
    fn decimate_keeps_extremes_and_bounds_length() {
        let pts: Vec<(f64, f64)> = (0..100_000)
            .map(|i| (i as f64, if i == 54_321 { 1e6 } else { (i % 7) as f64 }))
            .collect();
        let d = decimate(&pts, 500);
        assert!(d.len() <= 1000);
        assert!(d.iter().any(|p| p.1 == 1e6));
        assert!(d.windows(2).all(|w| w[0].0 <= w[1].0));
    }

    #[test]
    fn bins_count_every_finite_value() {
        let b = bins(
            &[0.0, 0.5, 1.0, 9.99, 10.0, 42.0, -3.0, f64::NAN],
            0.0,
            10.0,
            10,
        );
        assert_eq!(b.iter().sum::<u64>(), 7);
        assert_eq!(b[0], 3);
        assert_eq!(b[9], 3);
    }

    #[test]
    fn nice_widths() {
        assert_eq!(nice_width(100.0, 20), 5.0);
        assert_eq!(nice_width(3000.0, 30), 100.0);
        assert_eq!(nice_width(0.7, 7), 0.1);
    }

    #[test]
    fn log_keys_are_one_two_five() {
        let k: Vec<String> = log_keys(0.0, 2.0)
            .iter()
            .map(|v| short(10f64.powf(*v)))
            .collect();
        assert_eq!(k, ["1", "2", "5", "10", "20", "50", "100"]);
        // A range of every decade f64 has stays a handful of ticks.
        assert!(log_keys(-1.0, 308.0).len() <= 30);
        assert!(log_keys(f64::NEG_INFINITY, f64::INFINITY).len() <= 60);
    }

    #[test]
    fn short_labels() {
        assert_eq!(short(1200.0), "1200");
        assert_eq!(short(0.5), "0.5");
        assert_eq!(short(2.25), "2.25");
        assert_eq!(short(0.0), "0");
    }
}
