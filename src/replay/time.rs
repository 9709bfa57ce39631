//! Timestamps in recordings. A file's `ts` is one of: seconds since the
//! window start (what `fleetsim run` writes), Unix seconds, RFC 3339, or a
//! clock time of day (`20:17:02`, platform logs). The format is detected per
//! file from its first timestamp and every later one must match it.
//!
//! Everything is placed on one of three axes: window seconds, absolute
//! (Unix seconds; RFC 3339 converts to it) or seconds since midnight of an
//! unknown day. Files on different axes cannot be joined.

use serde::Serialize;

/// Unix seconds below this (2001-09-09) are taken for window seconds:
/// a recorded window never runs for 31 years.
pub const UNIX_MIN_S: f64 = 1e9;

/// A clock time that jumps back by more than this crossed midnight.
const MIDNIGHT_JUMP_S: f64 = 12.0 * 3600.0;

const DAY_S: f64 = 86_400.0;

/// How one file writes its timestamps.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum TimeBase {
    /// Seconds since the window start (`fleetsim run`'s `events.csv`).
    WindowSeconds,
    UnixSeconds,
    Rfc3339,
    /// `HH:MM:SS` without a date (platform log lines).
    ClockOfDay,
}

/// The time axis a file's timestamps land on.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Axis {
    Window,
    /// Unix seconds.
    Absolute,
    /// Seconds since midnight of the first day; later days add 86 400.
    ClockOfDay,
}

impl TimeBase {
    pub fn axis(self) -> Axis {
        match self {
            TimeBase::WindowSeconds => Axis::Window,
            TimeBase::UnixSeconds | TimeBase::Rfc3339 => Axis::Absolute,
            TimeBase::ClockOfDay => Axis::ClockOfDay,
        }
    }

    pub fn describe(self) -> &'static str {
        match self {
            TimeBase::WindowSeconds => "seconds since the window start",
            TimeBase::UnixSeconds => "Unix seconds",
            TimeBase::Rfc3339 => "RFC 3339 timestamps",
            TimeBase::ClockOfDay => "clock time of day (HH:MM:SS, no date)",
        }
    }

    /// The base a `ts` value is written in, from its text alone.
    pub fn detect(ts: &str) -> Option<TimeBase> {
        if let Ok(v) = ts.parse::<f64>() {
            return v.is_finite().then_some(if v >= UNIX_MIN_S {
                TimeBase::UnixSeconds
            } else {
                TimeBase::WindowSeconds
            });
        }
        if parse_rfc3339(ts).is_some() {
            return Some(TimeBase::Rfc3339);
        }
        parse_clock(ts).map(|_| TimeBase::ClockOfDay)
    }
}

/// Reads one file's timestamps: the base comes from the first one; clock
/// times that jump back by more than 12 h crossed midnight.
#[derive(Clone, Debug, Default)]
pub struct TsReader {
    base: Option<TimeBase>,
    last_clock_s: Option<f64>,
    day_offset_s: f64,
}

impl TsReader {
    pub fn base(&self) -> Option<TimeBase> {
        self.base
    }

    /// The timestamp on the file's axis, or what is wrong with it.
    pub fn read(&mut self, ts: &str) -> Result<f64, String> {
        let base = match self.base {
            Some(b) => b,
            None => {
                let b = TimeBase::detect(ts).ok_or_else(|| not_a_time(ts))?;
                self.base = Some(b);
                b
            }
        };
        let value = match base {
            TimeBase::WindowSeconds | TimeBase::UnixSeconds => ts
                .parse::<f64>()
                .ok()
                .filter(|v| v.is_finite() && *v >= 0.0),
            TimeBase::Rfc3339 => parse_rfc3339(ts),
            TimeBase::ClockOfDay => parse_clock(ts).map(|s| self.unwrap_midnight(s)),
        };
        value.ok_or_else(|| {
            format!(
                "timestamp `{ts}` is not in the file's format ({}, from its first row)",
                base.describe()
            )
        })
    }

    fn unwrap_midnight(&mut self, s: f64) -> f64 {
        if let Some(last) = self.last_clock_s
            && s < last - MIDNIGHT_JUMP_S
        {
            self.day_offset_s += DAY_S;
        }
        self.last_clock_s = Some(s);
        s + self.day_offset_s
    }
}

fn not_a_time(ts: &str) -> String {
    format!(
        "timestamp `{ts}` is neither seconds (since the window start or Unix), \
         RFC 3339 nor HH:MM:SS"
    )
}

/// `HH:MM:SS` or `HH:MM:SS.fff` as seconds since midnight.
pub fn parse_clock(s: &str) -> Option<f64> {
    let (hms, frac) = match s.split_once('.') {
        Some((a, b)) => (a, Some(b)),
        None => (s, None),
    };
    let mut parts = hms.split(':');
    let h = two_digits(parts.next()?)?;
    let m = two_digits(parts.next()?)?;
    let sec = two_digits(parts.next()?)?;
    if parts.next().is_some() || h > 23 || m > 59 || sec > 60 {
        return None;
    }
    let frac_s = match frac {
        Some(f) if !f.is_empty() && f.bytes().all(|b| b.is_ascii_digit()) => {
            format!("0.{f}").parse::<f64>().ok()?
        }
        Some(_) => return None,
        None => 0.0,
    };
    Some(f64::from(h * 3600 + m * 60 + sec) + frac_s)
}

fn two_digits(s: &str) -> Option<u32> {
    (s.len() == 2 && s.bytes().all(|b| b.is_ascii_digit()))
        .then(|| s.parse().ok())
        .flatten()
}

/// RFC 3339 (`2024-05-01T20:17:02.5Z`, `+02:00` offsets; a space for the
/// `T` is accepted) as Unix seconds.
pub fn parse_rfc3339(s: &str) -> Option<f64> {
    if s.len() < 20 || !s.is_ascii() {
        return None;
    }
    let (date, rest) = s.split_at(10);
    let sep = rest.as_bytes()[0];
    if !matches!(sep, b'T' | b't' | b' ') {
        return None;
    }
    let rest = &rest[1..];
    let zone_at = rest.find(['Z', 'z', '+', '-'])?;
    let (clock, zone) = rest.split_at(zone_at);
    let days = parse_date(date)?;
    let secs = parse_clock(clock)?;
    let offset = parse_offset(zone)?;
    Some(days as f64 * DAY_S + secs - offset)
}

fn parse_date(s: &str) -> Option<i64> {
    let b = s.as_bytes();
    if b.len() != 10 || b[4] != b'-' || b[7] != b'-' {
        return None;
    }
    let y: i64 = s[0..4].parse().ok()?;
    let m: u32 = s[5..7].parse().ok()?;
    let d: u32 = s[8..10].parse().ok()?;
    if !(1..=12).contains(&m) || !(1..=31).contains(&d) {
        return None;
    }
    Some(days_from_civil(y, m, d))
}

fn parse_offset(z: &str) -> Option<f64> {
    if z.eq_ignore_ascii_case("z") {
        return Some(0.0);
    }
    let sign = match z.as_bytes().first()? {
        b'+' => 1.0,
        b'-' => -1.0,
        _ => return None,
    };
    let (h, m) = z[1..].split_once(':')?;
    let (h, m) = (two_digits(h)?, two_digits(m)?);
    Some(sign * f64::from(h * 3600 + m * 60))
}

/// Days since 1970-01-01 of a proleptic Gregorian date (H. Hinnant).
fn days_from_civil(y: i64, m: u32, d: u32) -> i64 {
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let mp = i64::from((m + 9) % 12);
    let doy = (153 * mp + 2) / 5 + i64::from(d) - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

/// The date of a day count since 1970-01-01 (H. Hinnant).
fn civil_from_days(z: i64) -> (i64, u32, u32) {
    let z = z + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let m = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    (yoe + era * 400 + i64::from(m <= 2), m, d)
}

fn clock_text(s: f64) -> String {
    let whole = s.floor() as i64;
    let (h, m, sec) = (whole / 3600, (whole / 60) % 60, whole % 60);
    let frac = s - whole as f64;
    if frac >= 0.05 {
        format!("{h:02}:{m:02}:{sec:02}.{:01}", (frac * 10.0).floor() as i64)
    } else {
        format!("{h:02}:{m:02}:{sec:02}")
    }
}

/// A point on `axis` as a person reads it.
pub fn format_t(axis: Axis, t: f64) -> String {
    match axis {
        Axis::Window => format!("{t:.1} s ({})", clock_text(t)),
        Axis::Absolute => {
            let days = (t / DAY_S).floor() as i64;
            let (y, m, d) = civil_from_days(days);
            let clock = clock_text(t - days as f64 * DAY_S);
            format!("{y:04}-{m:02}-{d:02}T{clock}Z")
        }
        Axis::ClockOfDay => {
            let day = (t / DAY_S).floor() as i64;
            let clock = clock_text(t - day as f64 * DAY_S);
            if day == 0 {
                clock
            } else {
                format!("day+{day} {clock}")
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bases_are_detected_from_the_text() {
        assert_eq!(TimeBase::detect("12.5"), Some(TimeBase::WindowSeconds));
        assert_eq!(TimeBase::detect("1714594622"), Some(TimeBase::UnixSeconds));
        assert_eq!(
            TimeBase::detect("2024-05-01T20:17:02Z"),
            Some(TimeBase::Rfc3339)
        );
        assert_eq!(TimeBase::detect("20:17:02"), Some(TimeBase::ClockOfDay));
        assert_eq!(TimeBase::detect("soon"), None);
        assert_eq!(TimeBase::detect("NaN"), None);
    }

    #[test]
    fn rfc3339_round_trips_through_unix_seconds() {
        let t = parse_rfc3339("2024-05-01T20:17:02Z").unwrap();
        assert_eq!(t, 1_714_594_622.0);
        assert_eq!(parse_rfc3339("2024-05-01T22:17:02+02:00"), Some(t));
        assert_eq!(parse_rfc3339("2024-05-01 20:17:02.500Z"), Some(t + 0.5));
        assert_eq!(format_t(Axis::Absolute, t), "2024-05-01T20:17:02Z");
        assert_eq!(parse_rfc3339("2024-13-01T20:17:02Z"), None);
        assert_eq!(parse_rfc3339("2024-05-01T20:17:02"), None);
    }

    #[test]
    fn clock_times_cross_midnight() {
        let mut r = TsReader::default();
        assert_eq!(r.read("23:59:50"), Ok(86_390.0));
        assert_eq!(r.read("00:00:10"), Ok(86_410.0));
        assert_eq!(format_t(Axis::ClockOfDay, 86_410.0), "day+1 00:00:10");
        assert!(r.read("12.5").is_err());
    }

    #[test]
    fn a_file_keeps_its_first_base() {
        let mut r = TsReader::default();
        assert_eq!(r.read("0.5"), Ok(0.5));
        assert_eq!(r.base(), Some(TimeBase::WindowSeconds));
        let e = r.read("20:17:02").unwrap_err();
        assert!(e.contains("seconds since the window start"), "{e}");
        assert!(r.read("-3").is_err());
    }
}
