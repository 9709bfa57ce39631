//! `fleetsim compare`: two or more sides (a baseline first, then
//! candidates), each one or more runs' summary.json by seed, figure by
//! figure. Runs are paired by seed: for every figure the candidate's
//! difference from the baseline on each seed both sides ran, its mean, and
//! the 95% Student-t interval of that mean when two or more seeds pair
//! (one seed each: no interval, and the text says so). The relative
//! change is the mean difference over the baseline's mean on those seeds,
//! its interval the difference's interval over the same mean (the
//! baseline's mean taken as known). Pure: summaries in, a `Comparison`
//! (compare.json), a hyperfine-style text and an HTML page out.

use super::data::{self, Ordered};
use super::html::{self, escape};
use super::{Files, Rendered, Report, ReportError, chart, need, timeline};
use crate::sweep::stats::{Welford, t975};
use serde::Serialize;
use std::collections::BTreeMap;
use std::fmt::Write;

/// compare.json's layout version: bumped when a field changes meaning.
pub const SCHEMA_VERSION: u32 = 1;

/// Keys that identify a run rather than measure it.
const BOOKKEEPING: [&str; 6] = [
    "seed",
    "model_version",
    "fleetsim_version",
    "events_processed",
    "duration_h",
    "scenario",
];

/// The figures the text table prints (compare.json and the page have every one).
pub const HEADLINE: [&str; 10] = [
    "recycles_per_hour",
    "peak_hour_recycles",
    "pressure_recycles",
    "retry_ok",
    "fetch_failed",
    "capacity_loss_fraction",
    "max_overshoot_mb",
    "over_ceiling_dwell_max_s",
    "requests_per_worker_p10",
    "latency_ms_p99",
];

/// One side: a label and its runs' summaries by seed.
#[derive(Clone, Debug, PartialEq)]
pub struct Side {
    pub label: String,
    pub runs: BTreeMap<u64, Ordered>,
}

/// Which way a figure is better, when it has a way.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Better {
    Lower,
    Higher,
    Neither,
}

pub fn better(key: &str) -> Better {
    if key.starts_with("requests_per_worker") || key == "min_serving_workers" {
        Better::Higher
    } else if key.starts_with("holds_")
        || key.starts_with("lease_")
        || key.starts_with("recycles_")
            && !matches!(
                key,
                "recycles_per_hour" | "recycles_low_margin_fraction" | "recycles_young_fraction"
            )
        || key == "requests_total"
        || key.starts_with("surge_")
    {
        Better::Neither
    } else {
        Better::Lower
    }
}

/// One candidate's difference from the baseline on one figure.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Difference {
    pub candidate: String,
    /// Seeds both sides ran.
    pub paired_seeds: usize,
    pub baseline_mean: f64,
    pub candidate_mean: f64,
    /// Mean of the paired differences (candidate - baseline).
    pub difference: f64,
    /// Its 95% interval; None with fewer than two paired seeds.
    pub interval: Option<[f64; 2]>,
    /// difference / baseline_mean, and its interval likewise (None when the
    /// baseline's mean is 0).
    pub relative: Option<f64>,
    pub relative_interval: Option<[f64; 2]>,
    /// "better", "worse", "no clear change", or "" (no interval or no direction).
    pub verdict: String,
}

#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Figure {
    pub key: String,
    pub unit: String,
    pub better: Better,
    /// Each side's mean over all its seeds, in side order.
    pub means: Vec<Option<f64>>,
    pub differences: Vec<Difference>,
}

#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct SideInfo {
    pub label: String,
    pub seeds: Vec<u64>,
    pub scenario: String,
}

/// compare.json.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Comparison {
    pub schema_version: u32,
    pub baseline: String,
    pub sides: Vec<SideInfo>,
    pub method: String,
    pub figures: Vec<Figure>,
}

fn number(o: &Ordered, key: &str) -> Option<f64> {
    o.0.iter()
        .find(|(k, _)| k == key)
        .and_then(|(_, v)| v.as_f64())
        .filter(|v| v.is_finite())
}

/// The numeric figures of the baseline's first run, in file order, that
/// every side has.
fn keys(sides: &[Side]) -> Vec<String> {
    let Some(first) = sides.first().and_then(|s| s.runs.values().next()) else {
        return Vec::new();
    };
    first
        .0
        .iter()
        .filter(|(k, v)| v.is_number() && !BOOKKEEPING.contains(&k.as_str()))
        .map(|(k, _)| k.clone())
        .filter(|k| {
            sides
                .iter()
                .all(|s| s.runs.values().any(|r| number(r, k).is_some()))
        })
        .collect()
}

fn difference(key: &str, base: &Side, cand: &Side) -> Difference {
    let mut d = Welford::default();
    let mut b = Welford::default();
    let mut c = Welford::default();
    for (seed, run) in &base.runs {
        let other = cand.runs.get(seed);
        if let (Some(x), Some(y)) = (number(run, key), other.and_then(|o| number(o, key))) {
            d.push(y - x);
            b.push(x);
            c.push(y);
        }
    }
    let n = d.n as usize;
    let interval = (d.n >= 2).then(|| {
        let h = t975(d.n - 1) * (d.variance() / d.n as f64).sqrt();
        [d.mean() - h, d.mean() + h]
    });
    let bm = b.mean();
    let rel_ok = n > 0 && bm != 0.0 && bm.is_finite();
    let relative = rel_ok.then(|| d.mean() / bm.abs());
    let relative_interval = interval
        .filter(|_| rel_ok)
        .map(|[lo, hi]| [lo / bm.abs(), hi / bm.abs()]);
    let verdict = match (interval, better(key)) {
        (Some([lo, hi]), dir) if dir != Better::Neither => {
            if lo <= 0.0 && hi >= 0.0 {
                "no clear change".to_string()
            } else if (hi < 0.0) == (dir == Better::Lower) {
                "better".into()
            } else {
                "worse".into()
            }
        }
        _ => String::new(),
    };
    Difference {
        candidate: cand.label.clone(),
        paired_seeds: n,
        baseline_mean: bm,
        candidate_mean: c.mean(),
        difference: d.mean(),
        interval,
        relative,
        relative_interval,
        verdict,
    }
}

/// Every figure of every side against the first side.
pub fn compare(sides: &[Side]) -> Comparison {
    let figures = keys(sides)
        .into_iter()
        .map(|key| {
            let means = sides
                .iter()
                .map(|s| {
                    let mut w = Welford::default();
                    s.runs
                        .values()
                        .filter_map(|r| number(r, &key))
                        .for_each(|x| w.push(x));
                    (w.n > 0).then(|| w.mean())
                })
                .collect();
            let differences = sides
                .iter()
                .skip(1)
                .map(|c| difference(&key, &sides[0], c))
                .collect();
            Figure {
                unit: html::unit(&key).label.to_string(),
                better: better(&key),
                key,
                means,
                differences,
            }
        })
        .collect();
    Comparison {
        schema_version: SCHEMA_VERSION,
        baseline: sides.first().map(|s| s.label.clone()).unwrap_or_default(),
        sides: sides
            .iter()
            .map(|s| SideInfo {
                label: s.label.clone(),
                seeds: s.runs.keys().copied().collect(),
                scenario: s
                    .runs
                    .values()
                    .next()
                    .and_then(|r| r.0.iter().find(|(k, _)| k == "scenario"))
                    .and_then(|(_, v)| v.as_str())
                    .unwrap_or("")
                    .to_string(),
            })
            .collect(),
        method: "paired by seed: mean of (candidate - baseline) over the seeds both ran, \
                 95% Student-t interval with two or more; relative = difference / baseline mean"
            .into(),
        figures,
    }
}

fn pct(x: f64) -> String {
    // Under half a percent either way reads as 0% (never "-0%").
    if (x * 100.0).abs() < 0.5 {
        return "0%".into();
    }
    format!("{:.0}%", x * 100.0)
}

/// A value with the figure's unit, as the page shows it (fractions in %).
fn shown(key: &str, v: f64) -> String {
    let u = html::unit(key);
    format!("{} {}", html::number(v * u.scale), u.label)
        .trim_end()
        .to_string()
}

/// One sentence per candidate and figure: "candidate cuts recycles_per_hour
/// 42% (35-49%): 4.083 -> 2.368 /h, 10 paired seeds".
pub fn sentence(f: &Figure, d: &Difference) -> String {
    let verb = if d.difference == 0.0 {
        "leaves"
    } else if d.difference < 0.0 {
        "cuts"
    } else {
        "raises"
    };
    let rel_show = |x: f64| pct(x);
    let abs_show = |x: f64| shown(&f.key, x);
    let how = if d.difference == 0.0 {
        "unchanged".to_string()
    } else {
        let (size, lo, hi, show): (f64, Option<f64>, Option<f64>, &dyn Fn(f64) -> String) =
            match d.relative {
                Some(r) => (
                    r,
                    d.relative_interval.map(|i| i[0]),
                    d.relative_interval.map(|i| i[1]),
                    &rel_show,
                ),
                None => (
                    d.difference,
                    d.interval.map(|i| i[0]),
                    d.interval.map(|i| i[1]),
                    &abs_show,
                ),
            };
        let range = match (lo, hi) {
            // The interval on the side of the change: as sizes, smaller first.
            (Some(lo), Some(hi)) if hi < 0.0 => format!(" ({}-{})", show(-hi), show(-lo)),
            (Some(lo), Some(hi)) if lo > 0.0 => format!(" ({}-{})", show(lo), show(hi)),
            (Some(lo), Some(hi)) => {
                format!(" ({} to +{})", show(lo), show(hi).trim_start_matches('-'))
            }
            _ => String::new(),
        };
        let by = if d.relative.is_some() { "" } else { "by " };
        format!("{by}{}{range}", show(size.abs()))
    };
    let seeds = match d.paired_seeds {
        0 => "no seed in common".to_string(),
        1 => "one seed each: no interval".to_string(),
        n => format!("{n} paired seeds"),
    };
    let verdict = if d.verdict.is_empty() {
        String::new()
    } else {
        format!(" [{}]", d.verdict)
    };
    format!(
        "{} {verb} {} {how}: {} -> {}, {seeds}{verdict}",
        d.candidate,
        f.key,
        shown(&f.key, d.baseline_mean),
        shown(&f.key, d.candidate_mean),
    )
}

/// The text `fleetsim compare` prints: the headline figures, one line each.
pub fn text(c: &Comparison) -> String {
    let mut out = String::new();
    let sides: Vec<String> = c
        .sides
        .iter()
        .map(|s| {
            format!(
                "{} ({} seed{})",
                s.label,
                s.seeds.len(),
                if s.seeds.len() == 1 { "" } else { "s" }
            )
        })
        .collect();
    let _ = writeln!(
        out,
        "baseline {}; compared: {}",
        c.baseline,
        sides.join(", ")
    );
    for f in c
        .figures
        .iter()
        .filter(|f| HEADLINE.contains(&f.key.as_str()))
    {
        for d in &f.differences {
            let _ = writeln!(out, "  {}", sentence(f, d));
        }
    }
    out
}

/// The comparison table of the page: every figure, each side's mean, each
/// candidate's difference and interval, coloured better/worse.
pub fn table_html(c: &Comparison) -> String {
    let mut h = String::from("<div class=\"wide\"><table class=\"compare\">\n<tr><th>figure</th>");
    for s in &c.sides {
        let _ = write!(h, "<th>{}</th>", escape(&s.label));
    }
    for s in c.sides.iter().skip(1) {
        let _ = write!(h, "<th>{} - {}</th>", escape(&s.label), escape(&c.baseline));
    }
    h.push_str("</tr>\n");
    for f in &c.figures {
        let head = HEADLINE.contains(&f.key.as_str());
        let _ = write!(
            h,
            "<tr{}><td>{}</td>",
            if head { " class=\"head\"" } else { "" },
            escape(&f.key)
        );
        for m in &f.means {
            let text = m.map_or("n/a".to_string(), |v| shown(&f.key, v));
            let _ = write!(h, "<td class=\"num\">{}</td>", escape(&text));
        }
        for d in &f.differences {
            let class = match d.verdict.as_str() {
                "better" => " better",
                "worse" => " worse",
                _ => "",
            };
            let ci = d.interval.map_or(
                if d.paired_seeds == 1 {
                    " (one seed: no interval)".to_string()
                } else {
                    String::new()
                },
                |[lo, hi]| format!(" ({} to {})", shown(&f.key, lo), shown(&f.key, hi)),
            );
            let _ = write!(
                h,
                "<td class=\"num{class}\" data-key=\"{}\" data-value=\"{}\">{}{}</td>",
                escape(&f.key),
                d.difference,
                escape(&shown(&f.key, d.difference)),
                escape(&ci)
            );
        }
        h.push_str("</tr>\n");
    }
    h.push_str("</table></div>\n");
    h
}

/// The page: the comparison table, then each side's fleet timeline (its
/// first paired seed's run) on one time axis, so a bad hour lines up.
/// `runs` holds (title, the run directory's files) per side.
pub fn page(c: &Comparison, runs: &[(String, Files)]) -> Result<Rendered, ReportError> {
    let mut parsed = Vec::new();
    for (title, files) in runs {
        let (events, untimed) = data::parse_run_events(need(files, "events.csv")?)?;
        let mut tl = data::parse_timeline(need(files, "timeline.csv")?)?;
        if let Some(b) = files.get("summary.json") {
            let summary = data::parse_summary(b)?;
            super::cover::timeline_covers(&tl, &summary)?;
            super::cover::events_cover(&events, &untimed, &summary)?;
        }
        if let Some(b) = files.get("workers.csv") {
            tl.workers = data::parse_workers(b)?;
        }
        let policy = match files.get("scenario.toml") {
            Some(b) => data::parse_policy(b)?,
            None => data::Policy::default(),
        };
        let frame = timeline::Frame::run(&tl, &events, &policy);
        parsed.push((title, tl, events, frame));
    }
    let x = chart::span(
        parsed.iter().flat_map(|(_, tl, ev, fr)| {
            let (a, b) = timeline::span_of(tl, ev, fr);
            [a, b]
        }),
        0.0,
    );
    let mut charts = Vec::new();
    for (k, (title, tl, events, frame)) in parsed.iter().enumerate() {
        charts.push(super::Chart {
            file: format!("timeline-{k}.svg"),
            title: title.to_string(),
            caption: "The fleet timeline of this side's run, on the same time axis as the \
                      others' (colours, shapes and rings as on a run's page)."
                .into(),
            svg: timeline::fleet_timeline_at(
                tl,
                events,
                frame,
                x,
                &format!("Fleet timeline: {title}"),
            )?,
        });
    }
    let labels: Vec<&str> = c.sides.iter().map(|s| s.label.as_str()).collect();
    let report = Report {
        name: format!("compare {}", labels.join(" vs ")),
        notes: vec![
            format!("Method: {}.", c.method),
            "Green cells: the interval excludes zero on the better side; brown: on the worse \
             side (a colour pair no other chart uses). Bold rows are the figures the text \
             table prints."
                .into(),
        ],
        charts,
        extra_html: vec![table_html(c)],
        ..Default::default()
    };
    Ok(Rendered {
        html: html::page(&report),
        charts: report.charts,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn run(rph: f64, p10: f64) -> Ordered {
        Ordered(vec![
            ("seed".into(), json!(1)),
            ("recycles_per_hour".into(), json!(rph)),
            ("requests_per_worker_p10".into(), json!(p10)),
            ("scenario".into(), json!("x")),
        ])
    }

    fn side(label: &str, runs: &[(u64, f64, f64)]) -> Side {
        Side {
            label: label.into(),
            runs: runs.iter().map(|(s, a, b)| (*s, run(*a, *b))).collect(),
        }
    }

    #[test]
    fn paired_differences_and_their_interval() {
        let base = side(
            "base",
            &[(1, 10.0, 100.0), (2, 12.0, 100.0), (3, 11.0, 100.0)],
        );
        let cand = side(
            "cand",
            &[
                (1, 6.0, 150.0),
                (2, 7.0, 140.0),
                (3, 7.0, 160.0),
                (9, 1.0, 1.0),
            ],
        );
        let c = compare(&[base, cand]);
        assert_eq!(c.schema_version, SCHEMA_VERSION);
        let keys: Vec<&str> = c.figures.iter().map(|f| f.key.as_str()).collect();
        assert_eq!(keys, ["recycles_per_hour", "requests_per_worker_p10"]);
        let d = &c.figures[0].differences[0];
        // Differences -4, -5, -4: mean -13/3, sd 0.577, t(2) = 4.303.
        assert_eq!(d.paired_seeds, 3);
        assert!((d.difference + 13.0 / 3.0).abs() < 1e-12);
        let h = 4.303 * (1.0f64 / 3.0).sqrt() / 3f64.sqrt();
        let [lo, hi] = d.interval.unwrap();
        assert!((lo - (d.difference - h)).abs() < 1e-9 && (hi - (d.difference + h)).abs() < 1e-9);
        assert_eq!(d.verdict, "better");
        assert!((d.relative.unwrap() + 13.0 / 33.0).abs() < 1e-12);
        let s = sentence(&c.figures[0], d);
        assert!(s.starts_with("cand cuts recycles_per_hour 39% (2"), "{s}");
        assert!(s.contains("3 paired seeds [better]"), "{s}");
        // Higher is better for requests per worker.
        assert_eq!(c.figures[1].differences[0].verdict, "better");
    }

    #[test]
    fn one_seed_each_has_no_interval() {
        let c = compare(&[side("a", &[(1, 10.0, 1.0)]), side("b", &[(1, 5.0, 1.0)])]);
        let d = &c.figures[0].differences[0];
        assert_eq!(d.interval, None);
        assert_eq!(d.verdict, "");
        assert!(sentence(&c.figures[0], d).contains("one seed each: no interval"));
        // No seed in common: nothing paired.
        let c = compare(&[side("a", &[(1, 10.0, 1.0)]), side("b", &[(2, 5.0, 1.0)])]);
        assert_eq!(c.figures[0].differences[0].paired_seeds, 0);
    }
}
