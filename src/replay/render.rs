//! The readable report `fleetsim replay` prints: one section per limit
//! regime, in the order the seeds worked. Pure: it returns a `String`.

use super::analyse::canary::Canary;
use super::analyse::gaps::{GapDist, Gaps};
use super::analyse::infer::{Estimate, Inferred};
use super::analyse::stats::{Dist, LabelCount};
use super::analyse::{Analysis, Regime};
use super::time::{Axis, format_t};
use std::fmt::Write;

struct Out {
    text: String,
    axis: Axis,
}

impl Out {
    fn line(&mut self, s: impl AsRef<str>) {
        self.text.push_str(s.as_ref());
        self.text.push('\n');
    }

    /// `label  value` with the label padded to one column.
    fn row(&mut self, label: &str, value: impl AsRef<str>) {
        let _ = writeln!(self.text, "  {label:<22}{}", value.as_ref());
    }

    fn t(&self, s: f64) -> String {
        format_t(self.axis, s)
    }
}

fn num(v: Option<f64>, decimals: usize) -> String {
    v.map_or("-".into(), |v| format!("{v:.decimals$}"))
}

fn pct(v: Option<f64>) -> String {
    v.map_or("-".into(), |v| format!("{:.0} %", v * 100.0))
}

fn labels(counts: &[LabelCount]) -> String {
    if counts.is_empty() {
        return "-".into();
    }
    let parts: Vec<String> = counts
        .iter()
        .map(|c| format!("{} {}", c.label, c.count))
        .collect();
    parts.join(", ")
}

fn dist(d: &Option<Dist>, unit: &str, decimals: usize) -> String {
    match d {
        None => "-".into(),
        Some(d) => format!(
            "min {:.decimals$} / p10 {:.decimals$} / median {:.decimals$} / max {:.decimals$}{unit} (n {})",
            d.min, d.p10, d.median, d.max, d.n
        ),
    }
}

pub fn report(a: &Analysis) -> String {
    let mut o = Out {
        text: String::new(),
        axis: a.axis.unwrap_or(Axis::Window),
    };
    header(&mut o, a);
    for r in &a.regimes {
        regime(&mut o, r, a.regimes.len() > 1);
    }
    if !a.warnings.is_empty() {
        o.line("");
        o.line("warnings:");
        for w in &a.warnings {
            o.line(format!("  - {w}"));
        }
    }
    o.text
}

fn source(o: &mut Out, s: &super::Source) {
    let base = s.time_base.map_or("no timestamps", |b| b.describe());
    let what = if s.samples > 0 {
        format!("{} RSS samples", s.samples)
    } else {
        format!("{} events, {} pressure lines", s.events, s.pressure_notes)
    };
    o.line(format!(
        "  {}: {}, ts = {base}, {what}, {} unparsed",
        s.name,
        s.format.label(),
        s.unparsed_count
    ));
    if let (Some(i), Some(from)) = (&s.instance, s.instance_from) {
        let how = match from {
            super::InstanceFrom::Flag => "from --instance",
            super::InstanceFrom::FileName => "from the file name",
        };
        o.line(format!("    instance {} ({how})", crate::text::one_line(i)));
    }
    if !s.rules.is_empty() {
        let rules: Vec<String> = s.rules.iter().map(|(r, n)| format!("{r} {n}")).collect();
        o.line(format!("    lines by rule: {}", rules.join("; ")));
    }
    for u in &s.unparsed {
        o.line(format!("    line {}: `{}` ({})", u.line, u.text, u.reason));
    }
}

fn joins(o: &mut Out, a: &Analysis) {
    for g in &a.joins.agreements {
        o.row(
            "joined",
            format!(
                "{}: {} of {} {} matched rows of {}",
                g.source, g.matched, g.events, g.kind, g.with
            ),
        );
    }
    if !a.joins.agreements.is_empty() {
        o.row("", format!("rule: {}", a.joins.rule));
    }
    if a.joins.duplicates_dropped > 0 {
        o.row(
            "duplicates",
            format!(
                "{} rows identical to an earlier file's dropped (overlapping exports)",
                a.joins.duplicates_dropped
            ),
        );
    }
}

fn rss_series(o: &mut Out, r: &super::Observed) {
    let median = |d: &Option<Dist>, unit: &str, decimals: usize| {
        d.as_ref().map_or("not observed".to_string(), |d| {
            format!("{:.decimals$}{unit} (median of {})", d.median, d.n)
        })
    };
    o.row(
        "RSS series",
        format!(
            "{} samples of {} workers, {} lifetimes ({} from a spawn)",
            r.samples, r.keys, r.lifetimes, r.lifetimes_from_spawn
        ),
    );
    o.row(
        "  boot RSS observed",
        format!(
            "{} (from the RSS series, {} lifetimes)",
            median(&r.boot_rss_mb, " MB", 0),
            r.lifetimes_from_spawn
        ),
    );
    o.row(
        "  growth observed",
        median(&r.mb_per_request, " MB/request", 4),
    );
    o.row("", median(&r.mb_per_s, " MB/s", 4));
    o.row("  RSS at exit", median(&r.exit_rss_mb, " MB", 0));
}

fn header(o: &mut Out, a: &Analysis) {
    o.line(format!(
        "replay: {} file(s), window {} .. {} ({:.1} h)",
        a.sources.len(),
        o.t(a.window.start_s),
        o.t(a.window.end_s),
        a.window.hours
    ));
    for s in &a.sources {
        source(o, s);
    }
    o.row("events", labels(&a.events));
    let t = &a.totals;
    o.row(
        "recycles and kills",
        format!(
            "{} recycles ({}), {} OOM kills, {} evil kills, {} drains killed",
            t.recycles,
            labels(&t.recycles_by_trigger),
            t.oom_kills,
            t.evil_kills,
            t.drain_killed
        ),
    );
    joins(o, a);
    if let Some(r) = &a.rss_series {
        rss_series(o, r);
    }
    let p = &a.pressure_lines;
    if p.lines > 0 {
        o.row(
            "pressure log lines",
            format!(
                "{} ({} joined to a recycle, {} standalone)",
                p.lines, p.joined_to_a_recycle, p.standalone
            ),
        );
        o.row("", format!("rule: {}", p.rule));
    }
    o.line("");
    o.line("limit regimes (every statistic below is computed within one):");
    for r in &a.regimes {
        o.line(format!(
            "  {:<28} first {}  last {}  {} recycles",
            r.label,
            o.t(r.first_s),
            o.t(r.last_s),
            r.rate.recycles
        ));
    }
    for c in &a.cutovers {
        o.line(format!(
            "  cutover {} -> {}: after {}, by {}",
            c.from,
            c.to,
            o.t(c.last_of_previous_s),
            o.t(c.first_of_next_s)
        ));
    }
}

fn regime(o: &mut Out, r: &Regime, several: bool) {
    o.line("");
    o.line(format!(
        "== {}{}: {} .. {} ({:.1} h) ==",
        if several { "regime " } else { "" },
        r.label,
        o.t(r.start_s),
        o.t(r.end_s),
        r.rate.hours
    ));
    o.row("policy values from", &r.knobs.source);
    rate_and_lifetime(o, r);
    ceiling(o, r);
    gaps(o, &r.gaps);
    bypasses(o, r);
    pressure(o, r);
    for e in &r.escalations {
        let verdict = match e.exercised {
            Some(true) => "exercised",
            Some(false) => "NEVER exercised",
            None => "unknown",
        };
        o.row(
            "escalation",
            format!("{}: {verdict}: {}", e.name, e.evidence),
        );
    }
    canary(o, &r.canary);
    inferred(o, &r.inferred);
}

fn rate_and_lifetime(o: &mut Out, r: &Regime) {
    let rate = &r.rate;
    let peak = rate
        .peak_hour_start_s
        .map_or(String::new(), |s| format!(" from {}", o.t(s)));
    o.row(
        "recycles",
        format!(
            "{} ({}/h), peak hour {}{peak}; per instance {}",
            rate.recycles,
            num(rate.per_hour, 2),
            rate.peak_hour_recycles,
            labels(&rate.per_instance)
        ),
    );
    let l = &r.lifetime;
    o.row("requests per worker", dist(&l.requests_per_worker, "", 0));
    o.row(
        "young / low margin",
        format!(
            "{} < 400 requests ({}); {} < 25 MB over the limit ({}), {} at rss == limit exactly",
            l.young,
            pct(l.young_fraction),
            l.low_margin,
            pct(l.low_margin_fraction),
            l.at_limit
        ),
    );
    if let Some(d) = &l.limit_mb {
        o.row("jittered limits", format!("{:.0}-{:.0} MB", d.min, d.max));
    }
}

fn ceiling(o: &mut Out, r: &Regime) {
    let c = &r.ceiling;
    let Some(peak) = c.peak_rss_mb else {
        o.row("peak RSS", "- (no rss recorded)");
        return;
    };
    let gap = c.peak_same_instance_gap_s.map_or(String::new(), |g| {
        format!(", {g:.1} s after the previous recycle on its instance")
    });
    let over = match (c.max_overshoot_mb, c.hard_limit_mb) {
        (Some(m), Some(h)) => format!("; {m:+.1} MB against the {h:.0} MB ceiling"),
        _ => String::new(),
    };
    o.row(
        "peak RSS",
        format!(
            "{peak:.1} MB at {} on {} (pressure={}){gap}{over}",
            o.t(c.peak_at_s.unwrap_or_default()),
            c.peak_instance.as_deref().unwrap_or("?"),
            c.peak_pressure.map_or("?".into(), |p| p.to_string())
        ),
    );
    o.row(
        "",
        format!(
            "{} recycles at or over the ceiling; peak pressure {} MB, non-pressure {} MB",
            c.over_ceiling,
            num(c.peak_rss_pressure_mb, 1),
            num(c.peak_rss_no_pressure_mb, 1)
        ),
    );
}

fn gap_line(g: &GapDist) -> String {
    let Some(d) = &g.dist else { return "-".into() };
    let mode = g.mode.as_ref().map_or(String::new(), |m| {
        format!(", mode {:.0}-{:.0} s ({})", m.lo_s, m.hi_s, m.count)
    });
    let smallest: Vec<String> = g.smallest_s.iter().map(|s| format!("{s:.1}")).collect();
    format!(
        "n {}, min {:.1} s, median {:.1} s{mode}; smallest {}",
        d.n,
        d.min,
        d.median,
        smallest.join(", ")
    )
}

fn gaps(o: &mut Out, g: &Gaps) {
    o.row("same-instance gaps", gap_line(&g.same_instance));
    o.row("", "non-pressure recycles by same-instance gap:");
    for b in &g.buckets {
        o.row(
            "",
            format!(
                "  {:<44} {:>3} recycles, mean RSS {} MB (max {}), mean overshoot {} MB, {} over the ceiling",
                b.label,
                b.recycles,
                num(b.mean_rss_mb, 1),
                num(b.max_rss_mb, 1),
                num(b.mean_overshoot_mb, 1),
                b.over_ceiling
            ),
        );
    }
    if let Some(p) = &g.same_instance_pressure {
        o.row(
            "",
            format!(
                "  pressure recycles: {} gaps, {:.1}-{:.1} s",
                p.n, p.min, p.max
            ),
        );
    }
    o.row("cross-instance gaps", gap_line(&g.cross_instance));
    if g.cross_below_lease_ttl > 0 {
        o.row(
            "",
            format!("{} under the lease TTL:", g.cross_below_lease_ttl),
        );
        for s in &g.cross_below_lease_ttl_list {
            o.row(
                "",
                format!(
                    "  {:.1} s at {} on {} (pressure={}, lease={})",
                    s.gap_s,
                    o.t(s.at_s),
                    s.instance.as_deref().unwrap_or("?"),
                    s.pressure.map_or("?".into(), |p| p.to_string()),
                    s.lease.as_deref().unwrap_or("?")
                ),
            );
        }
    }
}

fn bypasses(o: &mut Out, r: &Regime) {
    let b = &r.bypasses;
    o.row(
        "lease",
        format!(
            "{} acquired, {} exit on pressure, {} exit on the hard ceiling, {} exit of unknown branch, {} not recorded",
            b.acquired, b.exit_pressure, b.exit_hard_ceiling, b.exit_unknown, b.not_recorded
        ),
    );
    o.row(
        "",
        format!(
            "exits {}/h vs holds {}/h; labels: {}; holds: {}",
            num(b.exits_per_hour, 2),
            num(b.holds_per_hour, 2),
            labels(&b.lease_labels),
            labels(&b.holds)
        ),
    );
    o.row("", format!("classified {}", b.method));
}

fn pressure(o: &mut Out, r: &Regime) {
    let p = &r.pressure;
    o.row(
        "pressure events",
        format!(
            "{} ({} recycles, {} flagged only by a log line, {} standalone log lines)",
            p.pressure_events, p.pressure_recycles, p.from_log_line, p.standalone_lines
        ),
    );
    let bimodal = match p.bimodal {
        Some(true) => "bimodal: ",
        _ => "",
    };
    o.row("headroom", format!("{bimodal}{}", p.note));
}

fn canary(o: &mut Out, c: &Canary) {
    o.row(
        "canary",
        format!(
            "{} retry_ok, {} fetch_failed; {} ({}) within {:.0} s after a recycle, where those windows \
             cover {} of the time: lift {}",
            c.retry_ok,
            c.fetch_failed,
            c.after_recycle,
            pct(c.after_recycle_fraction),
            c.window_s,
            pct(c.covered_fraction),
            num(c.lift, 1)
        ),
    );
    o.row(
        "",
        format!("lag from the latest recycle: {}", dist(&c.lag_s, " s", 1)),
    );
    let Some(b) = &c.peak_hour else { return };
    o.row(
        "peak hour",
        format!(
            "{} recycles from {} to {} ({:.1} min) with {} canary events in the hour ({}/h elsewhere)",
            b.recycles,
            o.t(b.first_recycle_s),
            o.t(b.last_recycle_s),
            b.span_min,
            b.canaries,
            num(b.canaries_per_hour_elsewhere, 2)
        ),
    );
    for l in &b.timeline {
        let inst = l.instance.as_deref().unwrap_or("");
        let line = format!("  {} {} {inst}", o.t(l.t_s), l.event);
        o.row("", line.trim_end());
    }
}

fn estimate(o: &mut Out, name: &str, e: &Estimate) {
    o.row(
        "",
        format!(
            "{name:<20} {:>8} {:>9} {:>9}   {}",
            num(e.inferred, 1),
            num(e.recorded, 1),
            num(e.scenario, 1),
            e.how
        ),
    );
}

fn inferred(o: &mut Out, i: &Inferred) {
    o.row(
        "deployed config",
        format!(
            "{:<20} {:>8} {:>9} {:>9}",
            "", "inferred", "recorded", "scenario"
        ),
    );
    estimate(o, "cooldown_s", &i.cooldown_s);
    estimate(o, "pressure_cooldown_s", &i.pressure_cooldown_s);
    estimate(o, "lease ttl_s", &i.lease_ttl_s);
    estimate(o, "tick_s", &i.tick_s);
    estimate(o, "base_limit_mb", &i.base_limit_mb);
    estimate(o, "jitter_mb", &i.jitter_mb);
    estimate(o, "hard_limit_mb", &i.hard_limit_mb);
    estimate(o, "min_headroom_mb", &i.min_headroom_mb);
}
