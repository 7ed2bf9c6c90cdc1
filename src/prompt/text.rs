//! String helpers with JavaScript's semantics, where the reference implementation's behaviour
//! depends on them (what `trim` removes, lengths in UTF-16 code units).

/// Whether `c` is whitespace for JavaScript's `trim` and `\s` (WhiteSpace and LineTerminator).
pub fn js_is_space(c: char) -> bool {
    matches!(
        c,
        '\t' | '\n' | '\u{b}' | '\u{c}' | '\r' | ' ' | '\u{a0}' | '\u{1680}' | '\u{2000}'
            ..='\u{200a}'
                | '\u{2028}'
                | '\u{2029}'
                | '\u{202f}'
                | '\u{205f}'
                | '\u{3000}'
                | '\u{feff}'
    )
}

/// `String.prototype.trim`.
pub fn js_trim(s: &str) -> &str {
    s.trim_matches(js_is_space)
}

/// `.length` of a JavaScript string.
pub fn utf16_len(s: &str) -> usize {
    s.chars().map(char::len_utf16).sum()
}

/// The longest prefix of `s` that is at most `max` UTF-16 code units long (never splitting a
/// character).
pub fn utf16_prefix(s: &str, max: usize) -> &str {
    let mut units = 0;
    for (i, c) in s.char_indices() {
        units += c.len_utf16();
        if units > max {
            return &s[..i];
        }
    }
    s
}

/// Runs of JavaScript whitespace collapsed to one space, trimmed (a one-line snippet).
pub fn one_line(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    let mut pending = false;
    for c in s.chars() {
        if js_is_space(c) {
            pending = true;
        } else {
            if pending && !out.is_empty() {
                out.push(' ');
            }
            pending = false;
            out.push(c);
        }
    }
    out
}

/// The XML escaping upstream applies inside the skills index.
pub fn escape_xml(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&apos;"),
            c => out.push(c),
        }
    }
    out
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use super::*;

    #[test]
    fn trims_like_javascript() {
        assert_eq!(js_trim("\u{feff} a b\u{a0}\n"), "a b");
        assert_eq!(js_trim("\u{85}x"), "\u{85}x");
    }

    #[test]
    fn counts_utf16_units() {
        assert_eq!(utf16_len("a🎉é"), 4);
        assert_eq!(utf16_prefix("ab🎉c", 3), "ab");
        assert_eq!(utf16_prefix("ab🎉c", 4), "ab🎉");
        assert_eq!(utf16_prefix("abc", 10), "abc");
    }

    #[test]
    fn flattens_to_one_line() {
        assert_eq!(one_line("  a\r\n\n b\t c  "), "a b c");
        assert_eq!(one_line(" \n "), "");
    }

    #[test]
    fn escapes_xml() {
        assert_eq!(
            escape_xml(r#"<a & 'b' "c">"#),
            "&lt;a &amp; &apos;b&apos; &quot;c&quot;&gt;"
        );
    }
}
