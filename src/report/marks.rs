//! The fleet timeline's event markers: a recycle's colour is its path
//! through the fleet gates (`path::LeaseClass`), its shape the trigger
//! that asked, and an orange halo marks `pressure=true` (the recorded
//! flag: a pressure recycle that took the lease is still blue inside the
//! halo); holds are rings, kills crosses. Markers that land on one pixel
//! cell are drawn once, and the legend says how many were merged. The
//! canary lanes draw counts per pixel column: a column's bar grows with
//! the events in it, so a dense hour shows its density, never a solid
//! block that hides a count.

use super::chart::{Keyed, Swatch, one_per_pixel};
use super::data::{Event, LeaseClass, Mark, Trigger};
use super::palette as pal;
use plotters::prelude::*;

type Chart<'a, 'b> = ChartContext<'a, SVGBackend<'b>, Cartesian2d<Keyed, Keyed>>;
type Drawn<T> = Result<T, Box<dyn std::error::Error>>;

/// Recycle paths in legend order.
pub const PATHS: [LeaseClass; 6] = [
    LeaseClass::Acquired,
    LeaseClass::BypassPressure,
    LeaseClass::BypassCeiling,
    LeaseClass::RateGateExit,
    LeaseClass::BypassUnknown,
    LeaseClass::Ungated,
];

/// The other memory-panel marks, in legend order.
pub const OTHER_MARKS: [(Mark, &str); 4] = [
    (Mark::Held, "recycle_held"),
    (Mark::OomKill, "oom_kill"),
    (Mark::EvilKill, "evil_kill"),
    (Mark::DrainKilled, "drain_killed"),
];

pub fn path_color(p: LeaseClass) -> RGBColor {
    match p {
        LeaseClass::Acquired => pal::ACQUIRED,
        LeaseClass::BypassPressure => pal::BYPASS_PRESSURE,
        LeaseClass::BypassCeiling => pal::BYPASS_CEILING,
        LeaseClass::RateGateExit => pal::RATE_GATE_EXIT,
        LeaseClass::BypassUnknown => pal::BYPASS_UNKNOWN,
        LeaseClass::Ungated => pal::UNGATED,
    }
}

pub fn mark_color(m: Mark) -> RGBColor {
    match m {
        Mark::Recycled(p) => path_color(p),
        Mark::Held => pal::HELD,
        Mark::OomKill => pal::OOM,
        Mark::EvilKill => pal::EVIL_KILL,
        Mark::DrainKilled => pal::DRAIN_KILLED,
        Mark::RetryOk => pal::RETRY_OK,
        Mark::FetchFailed => pal::FETCH_FAILED,
        Mark::Other => pal::REFERENCE,
    }
}

pub fn swatch(m: Mark) -> Swatch {
    let c = mark_color(m);
    match m {
        Mark::Held => Swatch::Ring(c),
        Mark::OomKill | Mark::EvilKill | Mark::DrainKilled => Swatch::Cross(c),
        Mark::RetryOk | Mark::FetchFailed => Swatch::Tick(c),
        _ => Swatch::Dot(c),
    }
}

fn trigger_swatch(t: Trigger) -> Swatch {
    let c = pal::REFERENCE;
    match t {
        Trigger::Rss => Swatch::Dot(c),
        Trigger::MaxRequests => Swatch::Square(c),
        Trigger::Lifetime => Swatch::Triangle(c),
        Trigger::Other => Swatch::Diamond(c),
    }
}

pub fn is_memory_mark(m: Mark) -> bool {
    matches!(m, Mark::Recycled(_)) || OTHER_MARKS.iter().any(|(o, _)| *o == m)
}

/// The legend entries of the memory panel's marks, with their counts.
pub fn memory_legend(events: &[Event], merged: usize) -> Vec<(String, Swatch)> {
    let n = |f: &dyn Fn(&Event) -> bool| events.iter().filter(|e| f(e)).count();
    let mut out = Vec::new();
    for p in PATHS {
        let k = n(&|e| e.mark == Mark::Recycled(p));
        // The three the seeds read are always listed; the rest when drawn.
        if k > 0 || p <= LeaseClass::BypassCeiling {
            out.push((format!("{} ({k})", p.label()), swatch(Mark::Recycled(p))));
        }
    }
    let recycles: Vec<&Event> = events
        .iter()
        .filter(|e| matches!(e.mark, Mark::Recycled(_)))
        .collect();
    let pressure = recycles.iter().filter(|e| e.pressure == Some(true)).count();
    out.push((
        format!("pressure=true recycles ({pressure})"),
        Swatch::Halo(pal::BYPASS_PRESSURE),
    ));
    for t in Trigger::ALL {
        let k = recycles
            .iter()
            .filter(|e| Trigger::of(&e.trigger) == t)
            .count();
        if k > 0 && (t != Trigger::Rss || k < recycles.len()) {
            out.push((format!("{} ({k})", t.label()), trigger_swatch(t)));
        }
    }
    for (m, label) in OTHER_MARKS {
        out.push((format!("{label} ({})", n(&|e| e.mark == m)), swatch(m)));
    }
    if merged > 0 {
        out.push((
            format!("{merged} merged: pixel taken"),
            Swatch::Line(pal::BACKGROUND),
        ));
    }
    out
}

/// One trigger's recycle markers, all in one path's colour.
fn draw_shapes(ch: &mut Chart<'_, '_>, pts: &[(f64, f64)], t: Trigger, c: RGBColor) -> Drawn<()> {
    let style = c.filled();
    let pts = pts.iter().copied();
    match t {
        Trigger::Rss => {
            ch.draw_series(pts.map(|p| EmptyElement::at(p) + Circle::new((0, 0), 4, style)))?;
        }
        Trigger::MaxRequests => {
            ch.draw_series(
                pts.map(|p| EmptyElement::at(p) + Rectangle::new([(-4, -4), (4, 4)], style)),
            )?;
        }
        Trigger::Lifetime => {
            ch.draw_series(pts.map(|p| {
                EmptyElement::at(p) + Polygon::new(vec![(0, -5), (5, 4), (-5, 4)], style)
            }))?;
        }
        Trigger::Other => {
            ch.draw_series(pts.map(|p| {
                EmptyElement::at(p) + Polygon::new(vec![(0, -5), (5, 0), (0, 5), (-5, 0)], style)
            }))?;
        }
    }
    Ok(())
}

/// Draws every memory-panel mark in the x range at its RSS (`top` when it
/// has none); returns how many landed on an already marked pixel cell.
pub fn draw_memory_marks(ch: &mut Chart<'_, '_>, events: &[Event], top: f64) -> Drawn<usize> {
    let hours = |t: f64| t / 3600.0;
    let mut merged = 0;
    // Holds (a held worker's climb) first, thin; recycles and kills on top.
    let at = |e: &Event| (hours(e.t_s), e.rss_mb.unwrap_or(top));
    let holds: Vec<(f64, f64)> = events
        .iter()
        .filter(|e| e.mark == Mark::Held)
        .map(at)
        .collect();
    let kept = one_per_pixel(holds.iter().copied(), |p| ch.backend_coord(p));
    merged += holds.len() - kept.len();
    let c = pal::HELD;
    ch.draw_series(
        kept.iter()
            .map(|p| Circle::new(*p, 3, c.mix(0.7).stroke_width(1))),
    )?;
    // Pressure halos under the recycle markers.
    let halos: Vec<(f64, f64)> = events
        .iter()
        .filter(|e| matches!(e.mark, Mark::Recycled(_)) && e.pressure == Some(true))
        .map(at)
        .collect();
    let kept = one_per_pixel(halos.iter().copied(), |p| ch.backend_coord(p));
    ch.draw_series(
        kept.iter()
            .map(|p| Circle::new(*p, 8, pal::BYPASS_PRESSURE.stroke_width(2))),
    )?;
    for p in PATHS {
        for t in Trigger::ALL {
            let pts: Vec<(f64, f64)> = events
                .iter()
                .filter(|e| e.mark == Mark::Recycled(p) && Trigger::of(&e.trigger) == t)
                .map(at)
                .collect();
            let kept = one_per_pixel(pts.iter().copied(), |q| ch.backend_coord(q));
            merged += pts.len() - kept.len();
            draw_shapes(ch, &kept, t, path_color(p))?;
        }
    }
    for (m, _) in OTHER_MARKS.iter().skip(1) {
        let pts: Vec<(f64, f64)> = events.iter().filter(|e| e.mark == *m).map(at).collect();
        let kept = one_per_pixel(pts.iter().copied(), |p| ch.backend_coord(p));
        merged += pts.len() - kept.len();
        let c = mark_color(*m);
        ch.draw_series(kept.iter().map(|p| Cross::new(*p, 6, c.stroke_width(2))))?;
    }
    Ok(merged)
}

/// Counts of `xs` (hours) per pixel column of width `col_px`: (x of the
/// column's centre, count), non-empty columns only.
pub fn per_column(ch: &Chart<'_, '_>, xs: &[f64], col_px: i32) -> Vec<(f64, usize)> {
    let (x0, x1) = {
        let r = ch.x_range();
        (r.start, r.end)
    };
    let w_px = ch.plotting_area().dim_in_pixel().0.max(1) as f64;
    let cols = (w_px / col_px.max(1) as f64).ceil().max(1.0) as usize;
    let mut counts = vec![0usize; cols];
    for x in xs
        .iter()
        .filter(|x| x.is_finite() && **x >= x0 && **x <= x1)
    {
        let k = (((x - x0) / (x1 - x0)) * cols as f64) as usize;
        counts[k.min(cols - 1)] += 1;
    }
    let w = (x1 - x0) / cols as f64;
    counts
        .into_iter()
        .enumerate()
        .filter(|(_, n)| *n > 0)
        .map(|(k, n)| (x0 + (k as f64 + 0.5) * w, n))
        .collect()
}

/// The canary lanes: per pixel column, a tick whose height grows with the
/// count of `retry_ok` (above the lane's line) or `fetch_failed` (below);
/// returns the largest count in one column of each, for the legend.
pub fn draw_canary(ch: &mut Chart<'_, '_>, events: &[Event], lanes: usize) -> Drawn<[usize; 2]> {
    let mut most = [0usize; 2];
    for (k, (m, dir)) in [(Mark::RetryOk, 1.0), (Mark::FetchFailed, -1.0)]
        .into_iter()
        .enumerate()
    {
        let c = mark_color(m);
        for lane in 0..lanes {
            let xs: Vec<f64> = events
                .iter()
                .filter(|e| e.mark == m && e.instance as usize == lane)
                .map(|e| e.t_s / 3600.0)
                .collect();
            let cols = per_column(ch, &xs, 2);
            let top = cols.iter().map(|c| c.1).max().unwrap_or(0);
            most[k] = most[k].max(top);
            let y = lane as f64;
            let w = 2;
            ch.draw_series(cols.iter().map(|&(x, n)| {
                // One event: a 0.14-lane tick; the densest column: 0.42.
                let h = 0.14 + 0.28 * ((n as f64 - 1.0) / (top.max(2) as f64 - 1.0));
                PathElement::new(vec![(x, y), (x, y + dir * h)], c.stroke_width(w))
            }))?;
        }
    }
    Ok(most)
}
