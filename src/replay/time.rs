//! Timestamps in recordings. A file's `ts` is one of: seconds since the
//! window start (what `fleetsim run` writes), Unix seconds (or
//! milliseconds, microseconds, nanoseconds: told apart by magnitude, since
//! each lands 1970-2100 in one unit only), RFC 3339 (parsed by the `time`
//! crate: `2024-02-31` is no date), or a clock time of day (`20:17:02`,
//! platform logs). The format is detected per file from its first
//! timestamp and every later one must match it. Absolute times outside
//! 1970-2100 are refused.
//!
//! Everything is placed on one of three axes: window seconds, absolute
//! (Unix seconds; RFC 3339 converts to it) or seconds since midnight of an
//! unknown day. Files on different axes cannot be joined.

use serde::Serialize;

/// Unix seconds below this (2001-09-09) are taken for window seconds:
/// a recorded window never runs for 31 years.
pub const UNIX_MIN_S: f64 = 1e9;

/// 2100-01-01T00:00:00Z in Unix seconds: absolute times from here on are
/// refused (a unit mix-up, not a recording).
pub const UNIX_MAX_S: f64 = 4_102_444_800.0;

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
    UnixMillis,
    UnixMicros,
    UnixNanos,
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
            TimeBase::UnixSeconds
            | TimeBase::UnixMillis
            | TimeBase::UnixMicros
            | TimeBase::UnixNanos
            | TimeBase::Rfc3339 => Axis::Absolute,
            TimeBase::ClockOfDay => Axis::ClockOfDay,
        }
    }

    pub fn describe(self) -> &'static str {
        match self {
            TimeBase::WindowSeconds => "seconds since the window start",
            TimeBase::UnixSeconds => "Unix seconds",
            TimeBase::UnixMillis => "Unix milliseconds",
            TimeBase::UnixMicros => "Unix microseconds",
            TimeBase::UnixNanos => "Unix nanoseconds",
            TimeBase::Rfc3339 => "RFC 3339 timestamps",
            TimeBase::ClockOfDay => "clock time of day (HH:MM:SS, no date)",
        }
    }

    /// Seconds per unit of a numeric base (1 for window and Unix seconds).
    fn unit_s(self) -> f64 {
        match self {
            TimeBase::UnixMillis => 1e-3,
            TimeBase::UnixMicros => 1e-6,
            TimeBase::UnixNanos => 1e-9,
            _ => 1.0,
        }
    }

    /// The numeric base of a number: window seconds below 1e9, else the
    /// one Unix unit that puts it in 2001-2100; `None` if none does.
    fn of_number(v: f64) -> Option<TimeBase> {
        if !v.is_finite() {
            return None;
        }
        if v < UNIX_MIN_S {
            return Some(TimeBase::WindowSeconds);
        }
        [
            TimeBase::UnixSeconds,
            TimeBase::UnixMillis,
            TimeBase::UnixMicros,
            TimeBase::UnixNanos,
        ]
        .into_iter()
        .find(|b| {
            let s = v * b.unit_s();
            (UNIX_MIN_S..UNIX_MAX_S).contains(&s)
        })
    }

    /// The base a `ts` value is written in, from its text alone.
    pub fn detect(ts: &str) -> Option<TimeBase> {
        if let Ok(v) = ts.parse::<f64>() {
            return TimeBase::of_number(v);
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
            TimeBase::WindowSeconds => ts
                .parse::<f64>()
                .ok()
                .filter(|v| v.is_finite() && (0.0..UNIX_MIN_S).contains(v)),
            TimeBase::UnixSeconds
            | TimeBase::UnixMillis
            | TimeBase::UnixMicros
            | TimeBase::UnixNanos => {
                let v = ts.parse::<f64>().ok().filter(|v| v.is_finite());
                match v.map(|v| v * base.unit_s()) {
                    Some(s) if (0.0..UNIX_MAX_S).contains(&s) => Some(s),
                    Some(_) => return Err(out_of_range(ts)),
                    None => None,
                }
            }
            TimeBase::Rfc3339 => match parse_rfc3339_any(ts) {
                Some(s) if (0.0..UNIX_MAX_S).contains(&s) => Some(s),
                Some(_) => return Err(out_of_range(ts)),
                None => None,
            },
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
    if let Ok(v) = ts.parse::<f64>() {
        if v.is_finite() {
            return format!(
                "timestamp `{ts}` is no time: under 1e9 it would be seconds since the window \
                 start, above it Unix seconds, milliseconds, microseconds or nanoseconds, \
                 but in none of those units does it fall in 2001-2100"
            );
        }
        return format!("timestamp `{ts}` is not a finite number");
    }
    if parse_rfc3339_any(ts).is_some() {
        return out_of_range(ts);
    }
    format!(
        "timestamp `{ts}` is neither seconds (since the window start or Unix), \
         RFC 3339 (a real date: `2024-02-31` is none) nor HH:MM:SS"
    )
}

fn out_of_range(ts: &str) -> String {
    format!("timestamp `{ts}` is outside 1970-2100")
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
/// `T` is accepted) as Unix seconds, 1970-2100 only.
pub fn parse_rfc3339(s: &str) -> Option<f64> {
    parse_rfc3339_any(s).filter(|v| (0.0..UNIX_MAX_S).contains(v))
}

/// RFC 3339 as Unix seconds, any year the `time` crate reads. The date
/// must exist (`2024-02-31` does not) and the clock be in range.
fn parse_rfc3339_any(s: &str) -> Option<f64> {
    use time::format_description::well_known::Rfc3339;
    if s.len() < 20 || !s.is_ascii() {
        return None;
    }
    // Platform logs write a space for the `T`: the only leniency.
    let text = if s.as_bytes()[10] == b' ' {
        format!("{}T{}", &s[..10], &s[11..])
    } else {
        s.to_string()
    };
    let t = time::OffsetDateTime::parse(&text, &Rfc3339).ok()?;
    Some(t.unix_timestamp_nanos() as f64 / 1e9)
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
    fn impossible_dates_and_far_times_are_refused() {
        assert_eq!(parse_rfc3339("2024-02-31T00:00:00Z"), None);
        assert_eq!(parse_rfc3339("2023-02-29T00:00:00Z"), None);
        assert!(parse_rfc3339("2024-02-29T00:00:00Z").is_some());
        assert_eq!(parse_rfc3339("2150-01-01T00:00:00Z"), None);
        assert_eq!(parse_rfc3339("1960-01-01T00:00:00Z"), None);
        assert_eq!(parse_rfc3339("2024-05-01T24:00:01Z"), None);
        let e = TsReader::default()
            .read("2150-01-01T00:00:00Z")
            .unwrap_err();
        assert!(e.contains("outside 1970-2100"), "{e}");
        let e = TsReader::default()
            .read("2024-02-31T00:00:00Z")
            .unwrap_err();
        assert!(e.contains("real date"), "{e}");
        let e = TsReader::default().read("1e300").unwrap_err();
        assert!(e.contains("2001-2100"), "{e}");
        // A later row far outside the range is refused by name too.
        let mut r = TsReader::default();
        r.read("1714594622").unwrap();
        assert!(r.read("1e300").unwrap_err().contains("outside 1970-2100"));
    }

    #[test]
    fn unix_milli_micro_and_nanoseconds_are_told_apart_by_magnitude() {
        let t = 1_714_594_622.0;
        for (text, base) in [
            ("1714594622", TimeBase::UnixSeconds),
            ("1714594622000", TimeBase::UnixMillis),
            ("1714594622000000", TimeBase::UnixMicros),
            ("1714594622000000000", TimeBase::UnixNanos),
        ] {
            let mut r = TsReader::default();
            let v = r.read(text).unwrap();
            assert!((v - t).abs() < 1e-3, "{text}: {v}");
            assert_eq!(r.base(), Some(base), "{text}");
        }
        // 5e10 is 3554 in seconds and 1971 in ms: in no unit 2001-2100.
        assert_eq!(TimeBase::detect("50000000000"), None);
        let mut r = TsReader::default();
        r.read("1714594622500").unwrap();
        assert_eq!(r.read("1714594623500"), Ok(1_714_594_623.5));
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
