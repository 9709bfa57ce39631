//! The detail under the overview: which stretch of a timeline a page
//! zooms on (the busiest hour, the seeds' bad hour: the most recycles in a
//! sliding 60 minutes, as `metrics::summary::peak_hour` counts them; or the
//! window `report --from --to` names), the timeline cut to it, and its
//! events as one interleaved table, like the seeds' 31-minute log.

use super::Grid;
use super::data::{Event, Mark, Timeline, WorkerSeries};
use super::timeline::clock;

/// The most events a window's table lists; the rest are counted in its title.
pub const MAX_ROWS: usize = 400;

/// The busiest hour: `(from_s, to_s, recycles)`, the earliest window
/// `[t, t + 3600)` that starts at a recycle and holds the most recycles
/// (the count `peak_hour_recycles` reports). None without recycles.
pub fn busiest_hour(events: &[Event]) -> Option<(f64, f64, usize)> {
    let mut t: Vec<f64> = events
        .iter()
        .filter(|e| matches!(e.mark, Mark::Recycled(_)))
        .map(|e| e.t_s)
        .collect();
    t.sort_by(f64::total_cmp);
    let mut best: Option<(usize, usize)> = None;
    let mut hi = 0;
    for lo in 0..t.len() {
        hi = hi.max(lo);
        while hi < t.len() && t[hi] - t[lo] < 3600.0 {
            hi += 1;
        }
        if best.is_none_or(|(_, n)| hi - lo > n) {
            best = Some((lo, hi - lo));
        }
    }
    best.map(|(lo, n)| (t[lo], t[lo] + 3600.0, n))
}

/// A time on the command line: seconds from the start of the time axis
/// (`5400`, `5400s`), minutes or hours with their unit (`90m`, `1.5h`), or
/// a clock reading from the start (`H:MM` or `H:MM:SS`; `20:15` is 20 h 15
/// min in). Returns seconds, or what is wrong.
pub fn parse_time(text: &str) -> Result<f64, String> {
    let t = text.trim();
    let bad = || {
        format!(
            "`{text}` is no time: give seconds from the start (5400, 5400s), 90m, 1.5h or H:MM[:SS]"
        )
    };
    let v = if t.contains(':') {
        let parts: Vec<&str> = t.split(':').collect();
        if parts.len() > 3 || parts.iter().any(|p| p.is_empty()) {
            return Err(bad());
        }
        let mut s = 0.0;
        for (k, p) in parts.iter().enumerate() {
            let x: f64 = p.parse().map_err(|_| bad())?;
            if k > 0 && !(0.0..60.0).contains(&x) {
                return Err(format!("`{text}`: minutes and seconds are 0 to 59"));
            }
            s += x * [3600.0, 60.0, 1.0][k];
        }
        s
    } else {
        let (num, scale) = match t.char_indices().last() {
            Some((i, 's')) => (&t[..i], 1.0),
            Some((i, 'm')) => (&t[..i], 60.0),
            Some((i, 'h')) => (&t[..i], 3600.0),
            _ => (t, 1.0),
        };
        num.trim().parse::<f64>().map_err(|_| bad())? * scale
    };
    if (0.0..=1e12).contains(&v) {
        Ok(v)
    } else {
        Err(format!("`{text}`: a time from 0 to 1e12 s"))
    }
}

/// A window as `HH:MM-HH:MM` on the time axis.
pub fn window_label(t0_s: f64, t1_s: f64) -> String {
    format!("{}-{}", clock(&(t0_s / 3600.0)), clock(&(t1_s / 3600.0)))
}

/// Rows whose time is in `[t0, t1]`, and the one on each side (so a line
/// reaches the window's edges).
fn kept(t: &[f64], t0: f64, t1: f64) -> std::ops::Range<usize> {
    let lo = t.partition_point(|x| *x < t0).saturating_sub(1);
    let hi = (t.partition_point(|x| *x <= t1) + 1).min(t.len());
    lo..hi.max(lo)
}

impl Timeline {
    /// The rows around `[t0_s, t1_s]` (timeline.csv and workers.csv are in
    /// time order, as written).
    pub fn window(&self, t0_s: f64, t1_s: f64) -> Timeline {
        let r = kept(&self.t_s, t0_s, t1_s);
        let cut = |v: &[f64]| v.get(r.clone()).map_or_else(Vec::new, <[f64]>::to_vec);
        Timeline {
            t_s: cut(&self.t_s),
            serving: cut(&self.serving),
            booting: cut(&self.booting),
            draining: cut(&self.draining),
            instances: self
                .instances
                .iter()
                .map(|i| super::data::InstanceSeries {
                    usage_mb: cut(&i.usage_mb),
                    headroom_mb: cut(&i.headroom_mb),
                    max_rss_mb: cut(&i.max_rss_mb),
                })
                .collect(),
            surge_s: cut(&self.surge_s),
            workers: self
                .workers
                .iter()
                .map(|w| {
                    let r = kept(&w.t_s, t0_s, t1_s);
                    let cut = |v: &[f64]| v.get(r.clone()).map_or_else(Vec::new, <[f64]>::to_vec);
                    WorkerSeries {
                        instance: w.instance,
                        worker: w.worker.clone(),
                        t_s: cut(&w.t_s),
                        rss_mb: cut(&w.rss_mb),
                        limit_mb: cut(&w.limit_mb),
                        generation: cut(&w.generation),
                    }
                })
                .collect(),
        }
    }
}

fn what(e: &Event) -> String {
    match e.mark {
        Mark::Recycled(p) => format!("worker_recycled: {}", p.label()),
        Mark::Held => format!("recycle_held: {}", e.branch),
        Mark::OomKill => "oom_kill".into(),
        Mark::EvilKill => "evil_kill".into(),
        Mark::DrainKilled => "drain_killed".into(),
        Mark::RetryOk => "retry_ok".into(),
        Mark::FetchFailed => "fetch_failed".into(),
        Mark::Other => "other".into(),
    }
}

fn opt(v: Option<f64>) -> String {
    v.map_or(String::new(), |x| format!("{x:.0}"))
}

/// The window's events in time order, one row each (holds of one worker
/// in a row folded into one line with their count), at most `MAX_ROWS`.
pub fn events_table(events: &[Event], lanes: &[String], t0: f64, t1: f64, title: &str) -> Grid {
    let mut inside: Vec<&Event> = events
        .iter()
        .filter(|e| e.t_s >= t0 && e.t_s <= t1)
        .collect();
    inside.sort_by(|a, b| a.t_s.total_cmp(&b.t_s));
    let mut rows: Vec<Vec<String>> = Vec::new();
    let mut last_hold: Option<(u32, String)> = None;
    let mut folded = 0;
    for e in &inside {
        let lane = lanes
            .get(e.instance as usize)
            .cloned()
            .unwrap_or_else(|| format!("inst-{}", e.instance));
        let key = (e.instance, e.worker.clone());
        if e.mark == Mark::Held
            && last_hold.as_ref() == Some(&key)
            && let Some(r) = rows.last_mut()
        {
            let n: usize = r[7].trim_start_matches("x").parse().unwrap_or(1);
            r[7] = format!("x{}", n + 1);
            r[3] = opt(e.rss_mb);
            folded += 1;
            continue;
        }
        last_hold = (e.mark == Mark::Held).then_some(key);
        let pressure = match (e.mark, e.pressure) {
            (Mark::Recycled(_), Some(true)) => "pressure",
            _ => "",
        };
        rows.push(vec![
            clock_s(e.t_s),
            lane,
            e.worker.clone(),
            opt(e.rss_mb),
            opt(e.limit_mb),
            what(e),
            pressure.into(),
            String::new(),
        ]);
    }
    let shown = rows.len();
    rows.truncate(MAX_ROWS);
    let more = if shown > MAX_ROWS {
        format!("; the first {MAX_ROWS} of {shown} rows")
    } else {
        String::new()
    };
    Grid {
        title: format!(
            "{title}: {} events{}{more}",
            inside.len(),
            if folded > 0 {
                ", consecutive holds of one worker folded (x N)".to_string()
            } else {
                String::new()
            }
        ),
        header: [
            "time",
            "instance",
            "worker",
            "rss MB",
            "limit MB",
            "event: path",
            "flag",
            "holds",
        ]
        .map(String::from)
        .to_vec(),
        rows,
    }
}

/// Seconds as `HH:MM:SS` from the start.
pub fn clock_s(t: f64) -> String {
    let s = t.round().clamp(0.0, 1e12) as u64;
    format!("{:02}:{:02}:{:02}", s / 3600, s / 60 % 60, s % 60)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::data::LeaseClass;

    fn rec(t: f64) -> Event {
        Event {
            t_s: t,
            mark: Mark::Recycled(LeaseClass::Acquired),
            instance: 0,
            worker: "w0".into(),
            rss_mb: None,
            limit_mb: None,
            hard_limit_mb: None,
            requests: None,
            branch: String::new(),
            pressure: None,
            trigger: String::new(),
        }
    }

    #[test]
    fn busiest_hour_is_the_peak_hour() {
        assert_eq!(busiest_hour(&[]), None);
        let ev: Vec<Event> = [10.0, 4000.0, 4100.0, 7500.0, 7599.0, 7600.0, 0.0]
            .map(rec)
            .to_vec();
        // [4000, 7600): 4000, 4100, 7500, 7599 = 4; 7600 is out.
        assert_eq!(busiest_hour(&ev), Some((4000.0, 7600.0, 4)));
        let times: Vec<crate::engine::SimTime> = ev
            .iter()
            .map(|e| crate::engine::SimTime::from_secs(e.t_s as u64))
            .collect::<std::collections::BTreeSet<_>>()
            .into_iter()
            .collect();
        assert_eq!(crate::metrics::summary::peak_hour(&times), 4);
    }

    #[test]
    fn times_in_every_form() {
        assert_eq!(parse_time("5400"), Ok(5400.0));
        assert_eq!(parse_time("5400s"), Ok(5400.0));
        assert_eq!(parse_time("90m"), Ok(5400.0));
        assert_eq!(parse_time("1.5h"), Ok(5400.0));
        assert_eq!(parse_time("1:30"), Ok(5400.0));
        assert_eq!(parse_time("20:15:30"), Ok(72930.0));
        for bad in ["", "x", "1:60", "-5", "1::2", "inf", "1e300h"] {
            assert!(parse_time(bad).is_err(), "{bad}");
        }
    }
}
