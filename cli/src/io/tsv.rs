//! One TSV field from free text (class names, file names): control characters and the
//! backslash are escaped, so a value never splits a column or a line and never sends a raw
//! control sequence (ESC …) to a terminal. Writers refuse control characters in class names
//! (`class_table::class_name_problem`); this is the defence for names in files written
//! before that rule.
//!
//! Escapes: `\\` for a backslash, `\t`, `\n`, `\r`, and `\u{H…}` (hex code point) for any other
//! control character (Unicode category Cc). Every other character is written as it is.

use std::borrow::Cow;
use std::fmt::Write;

/// `s` as a TSV field (borrowed when it needs no escape).
pub fn tsv_field(s: &str) -> Cow<'_, str> {
    if !s.chars().any(|c| c == '\\' || c.is_control()) {
        return Cow::Borrowed(s);
    }
    let mut out = String::with_capacity(s.len() + 8);
    for c in s.chars() {
        match c {
            '\\' => out.push_str("\\\\"),
            '\t' => out.push_str("\\t"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            c if c.is_control() => {
                let _ = write!(out, "\\u{{{:x}}}", c as u32);
            }
            c => out.push(c),
        }
    }
    Cow::Owned(out)
}

#[cfg(test)]
mod tests {
    use super::tsv_field;

    #[test]
    fn control_characters_and_backslashes_are_escaped_and_nothing_else() {
        assert!(matches!(
            tsv_field("sneaker"),
            std::borrow::Cow::Borrowed(_)
        ));
        assert_eq!(tsv_field("ankle boot, größe 42"), "ankle boot, größe 42");
        assert_eq!(tsv_field("a\tb\nc\rd\\e"), "a\\tb\\nc\\rd\\\\e");
        assert_eq!(tsv_field("\x1b[31mred\x1b[0m"), "\\u{1b}[31mred\\u{1b}[0m");
        assert_eq!(tsv_field("del\x7f c1\u{85}"), "del\\u{7f} c1\\u{85}");
        let escaped = tsv_field("x\u{0}\u{1f}\u{9f}y");
        assert!(!escaped.chars().any(char::is_control), "{escaped}");
    }
}
