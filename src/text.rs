//! Error text on one line. Errors quote what the user wrote (keys, values,
//! file names); a quoted TOML key or a CSV field may hold a newline or
//! other control character, which would break the one-line error the CLI
//! promises. Found by the `sweep` fuzz target (fuzz/README.md).

use std::borrow::Cow;

/// `s` with every control character escaped (`\n`, `\r`, `\t`, `\u{1b}`),
/// so it prints on one line. Idempotent; borrows when nothing needs escaping.
pub fn one_line(s: &str) -> Cow<'_, str> {
    if !s.chars().any(char::is_control) {
        return Cow::Borrowed(s);
    }
    let mut out = String::with_capacity(s.len() + 8);
    for c in s.chars() {
        if c.is_control() {
            out.extend(c.escape_default());
        } else {
            out.push(c);
        }
    }
    Cow::Owned(out)
}

#[cfg(test)]
mod tests {
    use super::one_line;

    #[test]
    fn control_characters_are_escaped_and_the_rest_kept() {
        assert_eq!(one_line("key `a.b`: bad"), "key `a.b`: bad");
        assert_eq!(one_line("a\nb\r\tc\u{1b}"), "a\\nb\\r\\tc\\u{1b}");
        assert_eq!(one_line(&one_line("x\ny")), "x\\ny");
        assert_eq!(one_line("naïve \\ ok"), "naïve \\ ok");
    }
}
