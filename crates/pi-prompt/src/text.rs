//! String helpers of the prompt layer: one-line snippets and XML escaping (JavaScript's own
//! string semantics are in [`pi_base::js`]).

/// Runs of JavaScript whitespace collapsed to one space, trimmed (a one-line snippet).
pub fn one_line(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    let mut pending = false;
    for c in s.chars() {
        if pi_base::js::is_space(c) {
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
pub(crate) fn escape_xml(s: &str) -> String {
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
