//! Text for people to read: text from a file or a model with its control characters made
//! visible ([`escape`]), and text cut for one-line views ([`truncate`]).

use std::borrow::Cow;

/// Cuts `s` to at most `max` terminal columns, marking the cut with `…`. Columns are
/// counted as a terminal draws them: two for a wide (CJK, most emoji) character, none for a
/// combining mark; a control character (escaped before it reaches a view) counts one.
pub fn truncate(s: &str, max: usize) -> String {
    match cut_at(s, max) {
        None => s.to_owned(),
        Some(cut) => {
            let mut out = String::with_capacity(cut + 3);
            out.push_str(&s[..cut]);
            out.push('…');
            out
        }
    }
}

/// [`truncate`] in the string's own allocation.
pub fn truncate_owned(mut s: String, max: usize) -> String {
    if let Some(cut) = cut_at(&s, max) {
        s.truncate(cut);
        s.push('…');
    }
    s
}

/// The columns `c` takes on a terminal.
fn char_width(c: char) -> usize {
    unicode_width::UnicodeWidthChar::width(c).unwrap_or(1)
}

/// The columns `s` takes on a terminal (see [`truncate`]).
pub fn width(s: &str) -> usize {
    if s.is_ascii() {
        return s.len();
    }
    s.chars().map(char_width).sum()
}

/// `s` padded with spaces on the right to `cols` columns (see [`width`]).
pub fn pad_right(s: &str, cols: usize) -> String {
    let mut out = s.to_owned();
    out.extend(std::iter::repeat_n(' ', cols.saturating_sub(width(s))));
    out
}

/// `s` padded with spaces on the left to `cols` columns (see [`width`]).
pub fn pad_left(s: &str, cols: usize) -> String {
    let mut out: String = std::iter::repeat_n(' ', cols.saturating_sub(width(s))).collect();
    out.push_str(s);
    out
}

/// Where [`truncate`] cuts `s` (before the `…`), or `None` when it takes at most `max`
/// columns.
fn cut_at(s: &str, max: usize) -> Option<usize> {
    // No character takes more columns than it has bytes.
    if s.len() <= max {
        return None;
    }
    if max > 0 && s.as_bytes().get(..=max).is_some_and(<[u8]>::is_ascii) {
        return Some(max - 1); // characters `max - 1` and `max` are one byte and one column
    }
    let room = max.saturating_sub(1); // what the text may take beside the `…`
    let (mut used, mut cut) = (0usize, None);
    for (i, c) in s.char_indices() {
        let w = char_width(c);
        if cut.is_none() && used + w > room {
            cut = Some(i);
        }
        used += w;
        if used > max {
            return cut;
        }
    }
    None
}

/// Whether `c` may not reach a terminal as it is: the C0 controls (tab and newline
/// included), DEL, the C1 controls, and the bidirectional embeddings, overrides and
/// isolates (U+202A–U+202E, U+2066–U+2069), which reorder what follows them.
pub fn is_unsafe_char(c: char) -> bool {
    matches!(
        c,
        '\0'..='\x1f' | '\x7f'..='\u{9f}' | '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}'
    )
}

/// Text from a file or a model, ready for a human view on a terminal: every character of
/// [`is_unsafe_char`] is written as a visible escape, `\n`, `\r` and `\t` for the usual
/// three and `\u{HEX}` (lowercase hex, as Rust writes it) for the others: ESC is `\u{1b}`,
/// BEL `\u{7}`, DEL `\u{7f}`, U+202E `\u{202e}`. Backslashes stay as they are (a view, not
/// a round trip: `--json` has the exact text). Only pi's own styling reaches the terminal.
pub fn escape(s: &str) -> Cow<'_, str> {
    escape_with(s, false)
}

/// [`escape`] for running text, such as an answer streamed to a terminal: newlines and
/// tabs are kept so that it reads as it was written; every other control is escaped.
pub fn escape_text(s: &str) -> Cow<'_, str> {
    escape_with(s, true)
}

fn escape_with(s: &str, keep_layout: bool) -> Cow<'_, str> {
    // Printable ASCII needs nothing: skipped sixteen bytes at a time, without stopping
    // early inside a group, which lets the check run on vectors. What follows a skipped
    // group starts a character.
    let printable = |group: &[u8]| {
        group
            .iter()
            .fold(true, |all, &b| all & matches!(b, 0x20..=0x7e))
    };
    let skip = 16 * s.as_bytes().chunks(16).take_while(|g| printable(g)).count();
    let unsafe_here = |c: char| is_unsafe_char(c) && !(keep_layout && matches!(c, '\n' | '\t'));
    let Some(first) = s.get(skip..).and_then(|rest| rest.find(unsafe_here)) else {
        return Cow::Borrowed(s);
    };
    let first = skip + first;
    let mut out = String::with_capacity(s.len() + 8);
    out.push_str(&s[..first]);
    for c in s[first..].chars() {
        if !unsafe_here(c) {
            out.push(c);
            continue;
        }
        match c {
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            c => {
                use std::fmt::Write as _;
                let _ = write!(out, "\\u{{{:x}}}", u32::from(c));
            }
        }
    }
    Cow::Owned(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn truncate_keeps_max_columns_with_the_mark() {
        // As counted one character at a time.
        let by_cols = |s: &str, max: usize| {
            if width(s) <= max {
                return s.to_owned();
            }
            let mut out = String::new();
            for c in s.chars() {
                if width(&out) + char_width(c) > max.saturating_sub(1) {
                    break;
                }
                out.push(c);
            }
            out.push('…');
            out
        };
        let cases = [
            "",
            "a",
            "abc",
            "éé→x",
            "ab\u{3000}cd",
            "日本語のテキスト",
            "a日b本c",
            "🎉🎉x🎉",
            "e\u{301}e\u{301}e\u{301}x",
            &"x".repeat(300),
        ];
        for s in cases {
            for max in [0, 1, 2, 3, 4, 5, 6, 7, 200, 201] {
                let want = by_cols(s, max);
                assert_eq!(truncate(s, max), want, "{s:?} {max}");
                assert_eq!(truncate_owned(s.to_owned(), max), want, "{s:?} {max}");
                if max > 0 {
                    assert!(width(&want) <= max, "{s:?} {max}");
                }
            }
        }
        assert_eq!(truncate("abcdef", 4), "abc…");
        assert_eq!(width("日本"), 4);
        assert_eq!(width("e\u{301}"), 1);
        assert_eq!(truncate("日本語", 4), "日…");
        assert_eq!(truncate("日本語", 6), "日本語");
    }

    #[test]
    fn escape_makes_every_control_visible() {
        assert!(matches!(
            escape("plain text, ünïcode → ok"),
            Cow::Borrowed(_)
        ));
        assert_eq!(
            escape("a\x1b]52;c;aGk=\x07b\x1b[2J\rc\nd\te\x7f\u{85}\u{9b}"),
            "a\\u{1b}]52;c;aGk=\\u{7}b\\u{1b}[2J\\rc\\nd\\te\\u{7f}\\u{85}\\u{9b}"
        );
        assert_eq!(
            escape("\u{202a}\u{202e}x\u{2066}\u{2069}\0"),
            "\\u{202a}\\u{202e}x\\u{2066}\\u{2069}\\u{0}"
        );
        // Neighbours of the ranges stay as they are.
        assert_eq!(
            escape("\u{a0}\u{2029}\u{202f}\u{2065}\u{206a}"),
            "\u{a0}\u{2029}\u{202f}\u{2065}\u{206a}"
        );
        assert_eq!(
            escape_text("one\n\ttwo\r\n\x1b[31m"),
            "one\n\ttwo\\r\n\\u{1b}[31m"
        );
        assert!(matches!(escape_text("a\nb\tc"), Cow::Borrowed(_)));
    }

    proptest::proptest! {
        /// The skip over printable ASCII changes nothing: the same text as one character
        /// at a time, wherever the first character to escape is.
        #[test]
        fn escape_matches_a_character_loop(
            parts in proptest::collection::vec(
                proptest::sample::select(vec!["abcdefgh", "x", " ", "\n", "\t", "\x1b", "\x7f",
                    "é", "…", "\u{202e}", "\u{9b}", "~"]),
                0..40,
            ),
            keep_layout: bool,
        ) {
            let s = parts.concat();
            let mut want = String::new();
            for c in s.chars() {
                match c {
                    '\n' | '\t' if keep_layout => want.push(c),
                    '\n' => want.push_str("\\n"),
                    '\r' => want.push_str("\\r"),
                    '\t' => want.push_str("\\t"),
                    c if is_unsafe_char(c) => want.push_str(&format!("\\u{{{:x}}}", u32::from(c))),
                    c => want.push(c),
                }
            }
            let got = escape_with(&s, keep_layout);
            proptest::prop_assert_eq!(matches!(got, Cow::Borrowed(_)), want == s);
            proptest::prop_assert_eq!(got, want);
        }
    }
}
