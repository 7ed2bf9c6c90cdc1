//! Word wrapping by display width (East Asian wide characters count two columns).

use unicode_width::UnicodeWidthChar;

/// Display width of `s`.
pub fn width(s: &str) -> usize {
    s.chars().map(|c| c.width().unwrap_or(0)).sum()
}

/// Tabs as spaces to the next multiple of 4 columns.
pub fn expand_tabs(s: &str) -> String {
    if !s.contains('\t') {
        return s.to_owned();
    }
    let mut out = String::with_capacity(s.len() + 8);
    let mut col = 0;
    for c in s.chars() {
        match c {
            '\t' => {
                let n = 4 - col % 4;
                out.extend(std::iter::repeat_n(' ', n));
                col += n;
            }
            '\n' => {
                out.push(c);
                col = 0;
            }
            c => {
                out.push(c);
                col += c.width().unwrap_or(0);
            }
        }
    }
    out
}

/// Breaks one line (no newlines in it) into pieces of at most `max` columns, at spaces
/// where it can and inside words where a word is longer than a line. `max` of 0 keeps the
/// line whole.
pub fn wrap_line(line: &str, max: usize) -> Vec<String> {
    if max == 0 || width(line) <= max {
        return vec![line.to_owned()];
    }
    let mut out = Vec::new();
    let mut cur = String::new();
    let mut cur_w = 0;
    // Words with the spaces before them.
    let mut rest = line;
    while !rest.is_empty() {
        let spaces = rest.len() - rest.trim_start_matches(' ').len();
        let after = &rest[spaces..];
        let word_len = after.find(' ').unwrap_or(after.len());
        let word = &after[..word_len];
        rest = &after[word_len..];
        let (sw, ww) = (spaces, width(word));
        if cur_w > 0 && cur_w + sw + ww > max {
            out.push(std::mem::take(&mut cur));
            cur_w = 0;
        } else if cur_w > 0 || out.is_empty() {
            cur.extend(std::iter::repeat_n(' ', sw));
            cur_w += sw;
        }
        if cur_w + ww <= max {
            cur.push_str(word);
            cur_w += ww;
            continue;
        }
        // A word longer than the line: cut it.
        for c in word.chars() {
            let cw = c.width().unwrap_or(0);
            if cur_w + cw > max && cur_w > 0 {
                out.push(std::mem::take(&mut cur));
                cur_w = 0;
            }
            cur.push(c);
            cur_w += cw;
        }
    }
    if !cur.is_empty() || out.is_empty() {
        out.push(cur);
    }
    out
}

/// Cuts `s` to `max` columns, marking the cut with `…`.
pub fn cut(s: &str, max: usize) -> String {
    if width(s) <= max {
        return s.to_owned();
    }
    let mut out = String::new();
    let mut w = 0;
    for c in s.chars() {
        let cw = c.width().unwrap_or(0);
        if w + cw + 1 > max {
            break;
        }
        out.push(c);
        w += cw;
    }
    out.push('…');
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn wraps_at_spaces_and_cuts_long_words() {
        assert_eq!(wrap_line("one two three", 7), ["one two", "three"]);
        assert_eq!(wrap_line("abcdefghij", 4), ["abcd", "efgh", "ij"]);
        assert_eq!(wrap_line("  indented text", 10), ["  indented", "text"]);
        assert_eq!(wrap_line("", 5), [""]);
        assert_eq!(wrap_line("日本語のテキスト", 6), ["日本語", "のテキ", "スト"]);
        assert_eq!(wrap_line("anything", 0), ["anything"]);
        assert_eq!(expand_tabs("a\tb\n\tc"), "a   b\n    c");
        assert_eq!(cut("abcdef", 4), "abc…");
        assert_eq!(cut("abc", 4), "abc");
    }
}
