//! The shared value checks: each names the dotted key it failed on.

use crate::engine::time::SimTime;

/// A failed check: the dotted key and the reason.
pub(crate) type Check = Result<(), (String, String)>;

/// A value as a message shows it: `1e308`, not 309 digits.
pub(crate) fn shown(v: f64) -> String {
    crate::text::number(v)
}

pub(crate) fn fail(key: &str, reason: impl Into<String>) -> Check {
    Err((key.to_string(), reason.into()))
}

pub(crate) fn finite(key: &str, v: f64) -> Check {
    if v.is_finite() {
        Ok(())
    } else {
        fail(key, format!("must be a finite number, got {}", shown(v)))
    }
}

pub(crate) fn non_negative(key: &str, v: f64) -> Check {
    finite(key, v)?;
    if v < 0.0 {
        return fail(key, format!("must be >= 0, got {}", shown(v)));
    }
    Ok(())
}

pub(crate) fn positive(key: &str, v: f64) -> Check {
    finite(key, v)?;
    if v <= 0.0 {
        return fail(key, format!("must be > 0, got {}", shown(v)));
    }
    Ok(())
}

/// The largest memory any MB key may name: 10^7 MB (10 TB), more than
/// any machine's memory. Past it RSS over a run can reach infinity and
/// every figure drawn from it is meaningless.
pub(crate) const MAX_MB: f64 = 1e7;

/// A size in MB: finite, >= 0 and at most `MAX_MB`.
pub(crate) fn megabytes(key: &str, v: f64) -> Check {
    non_negative(key, v)?;
    if v > MAX_MB {
        return fail(
            key,
            format!(
                "{} MB is more than the 1e7 MB (10 TB) any machine holds",
                shown(v)
            ),
        );
    }
    Ok(())
}

/// At most ten years in seconds: larger durations are typos, not scenarios.
pub(super) const MAX_SECONDS: f64 = 10.0 * 365.0 * 86_400.0;

pub(crate) fn duration(key: &str, v: f64) -> Result<SimTime, (String, String)> {
    non_negative(key, v)?;
    if v > MAX_SECONDS {
        fail(key, format!("{} s is longer than ten years", shown(v)))?;
    }
    Ok(SimTime::from_secs_f64(v))
}

/// A duration that must stay positive once rounded to the clock's
/// microsecond: a tick or step of 0 us would reschedule itself forever.
pub(crate) fn positive_duration(key: &str, v: f64) -> Result<SimTime, (String, String)> {
    positive(key, v)?;
    let d = duration(key, v)?;
    if d == SimTime::ZERO {
        fail(key, format!("{v} s rounds to 0 us: must be at least 1 us"))?;
    }
    Ok(d)
}

pub(crate) fn count(key: &str, v: u32, min: u32, max: u32) -> Check {
    if v < min || v > max {
        return fail(key, format!("must be between {min} and {max}, got {v}"));
    }
    Ok(())
}

pub(crate) fn fraction(key: &str, v: f64) -> Check {
    non_negative(key, v)?;
    if v > 1.0 {
        return fail(key, format!("is a fraction: at most 1, got {}", shown(v)));
    }
    Ok(())
}
