//! Text helpers.
//!
//! `one_line`: error text on one line. Errors quote what the user wrote
//! (keys, values, file names); a quoted TOML key or a CSV field may hold a
//! newline or other control character, which would break the one-line error
//! the CLI promises. Found by the `sweep` fuzz target (fuzz/README.md).
//!
//! `brief`: `one_line`, cut to a length a terminal can show.
//!
//! `Fixed`: a float with a fixed number of decimals, byte for byte what
//! `format!("{:.N}", x)` writes, without its exact decimal expansion (the
//! CSV writers format tens of thousands of floats a run, and std's
//! fixed-precision path was ~7% of a `fleetsim run`).

use std::borrow::Cow;
use std::fmt;

/// `s` with every control character escaped (`\n`, `\r`, `\t`, `\u{1b}`)
/// and every bidirectional formatting character (`\u{202e}`...), so it
/// prints on one line and in the order it was written. Idempotent; borrows
/// when nothing needs escaping.
pub fn one_line(s: &str) -> Cow<'_, str> {
    escape(s, |_| false)
}

/// `one_line`, at most `BRIEF_CHARS` characters of it: an error quoting a
/// recorded value must not repeat a 50 MB field back (a recording's line
/// has no length bound but the file's). The cut says how much it left out.
pub fn brief(s: &str) -> Cow<'_, str> {
    match one_line(s) {
        Cow::Borrowed(b) => cut(b, BRIEF_CHARS),
        Cow::Owned(o) => Cow::Owned(cut(&o, BRIEF_CHARS).into_owned()),
    }
}

/// `s`, at most `max` characters of it, and how many more there were.
pub fn cut(s: &str, max: usize) -> Cow<'_, str> {
    match s.char_indices().nth(max) {
        None => Cow::Borrowed(s),
        Some((at, _)) => {
            let rest = s[at..].chars().count();
            Cow::Owned(format!("{}... ({rest} more characters)", &s[..at]))
        }
    }
}

/// How much of an error's quoted text `brief` keeps.
pub const BRIEF_CHARS: usize = 1000;

/// Text for a terminal: `one_line` but for its line breaks, so a report
/// quoting recorded names (an instance called `\u{1b}[2J`) cannot drive
/// the terminal or reorder what it shows.
pub fn terminal(s: &str) -> Cow<'_, str> {
    escape(s, |c| c == '\n')
}

/// `s` as one POSIX shell word: as is when every character is safe
/// unquoted, else in single quotes (a `'` inside becomes `'\''`), so a
/// printed reproduce command runs as printed whatever the path or value.
pub fn shell_quote(s: &str) -> Cow<'_, str> {
    let safe = |c: char| c.is_ascii_alphanumeric() || "_-./=:,+@%".contains(c);
    if !s.is_empty() && s.chars().all(safe) {
        return Cow::Borrowed(s);
    }
    Cow::Owned(format!("'{}'", s.replace('\'', "'\\''")))
}

/// A number as a message shows it: `1e308`, not 309 digits (exponent
/// form outside 1e-4 to 1e9), else as written (`0.5`, `NaN`, `-inf`).
pub fn number(v: f64) -> String {
    let a = v.abs();
    if a != 0.0 && a.is_finite() && !(1e-4..1e9).contains(&a) {
        format!("{v:e}")
    } else {
        format!("{v}")
    }
}

/// Unicode's explicit bidirectional formatting characters (UAX #9) and
/// marks: they reorder the text around them on display.
fn is_bidi(c: char) -> bool {
    matches!(c, '\u{061c}' | '\u{200e}' | '\u{200f}' | '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}')
}

fn escape(s: &str, keep: impl Fn(char) -> bool) -> Cow<'_, str> {
    let bad = |c: char| (c.is_control() || is_bidi(c)) && !keep(c);
    if !s.chars().any(bad) {
        return Cow::Borrowed(s);
    }
    let mut out = String::with_capacity(s.len() + 8);
    for c in s.chars() {
        if bad(c) {
            out.extend(c.escape_default());
        } else {
            out.push(c);
        }
    }
    Cow::Owned(out)
}

/// `x` with `decimals` digits after the point, exactly as `{:.decimals}`
/// formats it: the exact binary value rounded half to even.
///
/// `x * 10^decimals` is rounded once by the multiplication (at most half an
/// ulp), so unless the product lies within two ulps of a half, its nearest
/// integer is the exact value's. Near a half, for large or non-finite
/// values, and beyond 6 decimals, std formats it.
#[derive(Clone, Copy, Debug)]
pub struct Fixed(pub f64, pub usize);

impl fmt::Display for Fixed {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        const POW10: [f64; 7] = [1.0, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6];
        const DIV: [u64; 7] = [1, 10, 100, 1_000, 10_000, 100_000, 1_000_000];
        let Fixed(x, n) = *self;
        if n >= POW10.len() || !x.is_finite() {
            return write!(f, "{x:.n$}");
        }
        let y = x.abs() * POW10[n];
        // Below 2^52 every integer and every half is representable, and
        // `y - floor(y)` is exact.
        if y >= (1u64 << 52) as f64 {
            return write!(f, "{x:.n$}");
        }
        let floor = y as u64 as f64;
        let frac = y - floor;
        let ulp = f64::from_bits(y.to_bits() + 1) - y;
        if (frac - 0.5).abs() <= 2.0 * ulp {
            return write!(f, "{x:.n$}");
        }
        let r = floor as u64 + (frac > 0.5) as u64;
        // std writes a minus for every negative value, zero included.
        let sign = if x.is_sign_negative() { "-" } else { "" };
        if n == 0 {
            write!(f, "{sign}{r}")
        } else {
            write!(f, "{sign}{}.{:0n$}", r / DIV[n], r % DIV[n])
        }
    }
}

#[cfg(test)]
mod tests {
    use super::{BRIEF_CHARS, Fixed, brief, one_line};

    #[test]
    fn a_long_quoted_value_is_cut_and_says_how_much() {
        let long = format!(
            "column `requests`: `{}` is not a whole number",
            "9".repeat(50_000)
        );
        let b = brief(&long);
        let tail = format!("... ({} more characters)", long.len() - BRIEF_CHARS);
        assert_eq!(b.chars().count(), BRIEF_CHARS + tail.len());
        assert!(b.starts_with("column `requests`: `999"));
        assert!(b.ends_with(&tail), "{b}");
        // Short text is kept whole (and still on one line).
        assert_eq!(brief("a\nb"), "a\\nb");
        assert_eq!(brief("short"), "short");
        // The cut falls on a character boundary.
        let wide = "\u{e9}".repeat(BRIEF_CHARS + 100);
        assert_eq!(
            brief(&wide).chars().filter(|&c| c == '\u{e9}').count(),
            BRIEF_CHARS
        );
    }

    #[test]
    fn control_characters_are_escaped_and_the_rest_kept() {
        assert_eq!(one_line("key `a.b`: bad"), "key `a.b`: bad");
        assert_eq!(one_line("a\nb\r\tc\u{1b}"), "a\\nb\\r\\tc\\u{1b}");
        assert_eq!(one_line(&one_line("x\ny")), "x\\ny");
        assert_eq!(one_line("naïve \\ ok"), "naïve \\ ok");
    }

    #[test]
    fn fixed_writes_what_std_writes() {
        use crate::engine::rng::{Stream, stream};
        use rand::RngCore;
        let edges = [
            0.0,
            -0.0,
            0.05,
            -0.05,
            0.25,
            0.35,
            0.5,
            1.5,
            2.5,
            -2.5,
            0.45,
            0.95,
            9.95,
            99.95,
            123.456_5,
            1e-300,
            -1e-300,
            4.5e15,
            1e300,
            f64::INFINITY,
            f64::NEG_INFINITY,
            f64::NAN,
            f64::MAX,
            f64::MIN_POSITIVE,
            699.45,
            474.05,
        ];
        for x in edges {
            for n in 0..9 {
                assert_eq!(
                    Fixed(x, n).to_string(),
                    format!("{x:.n$}"),
                    "{x:e} with {n}"
                );
            }
        }
        let mut rng = stream(9, Stream::Service);
        for _ in 0..300_000 {
            let bits = rng.next_u64();
            // Magnitudes 2^-20 .. 2^43, either sign; and values on a
            // decimal grid, where halves are likeliest.
            let x = f64::from_bits((bits >> 12) | ((1003 + (bits & 63)) << 52));
            let x = if bits & 64 == 0 { x } else { -x };
            let grid = ((bits >> 20) % 2_000_000) as f64 / 200.0;
            for v in [x, grid, grid / 10.0] {
                for n in [0, 1, 3] {
                    assert_eq!(
                        Fixed(v, n).to_string(),
                        format!("{v:.n$}"),
                        "{v:e} with {n}"
                    );
                }
            }
        }
    }
}
