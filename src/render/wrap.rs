//! Word wrapping by display width (East Asian wide characters count two columns).
//!
//! Not the `textwrap` crate: a word longer than a line starts where the line has room
//! here (textwrap moves it to a line of its own, which would change every view with a long
//! path or URL), and [`fit_ansi`] closes a colour at a break and opens it again after it.

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
        assert_eq!(
            wrap_line("日本語のテキスト", 6),
            ["日本語", "のテキ", "スト"]
        );
        assert_eq!(wrap_line("anything", 0), ["anything"]);
        assert_eq!(expand_tabs("a\tb\n\tc"), "a   b\n    c");
        assert_eq!(cut("abcdef", 4), "abc…");
        assert_eq!(cut("abc", 4), "abc");
    }
}

/// Breaks a line that may hold ANSI colour codes (`ESC [ … m`, which take no room) into
/// lines of at most `max` columns: at the last space that fits, else inside a word.
/// Continuation lines start with two spaces; a colour open at a break is closed before it
/// and opened again after it. `max` of 0 keeps the line whole.
pub fn fit_ansi(line: &str, max: usize) -> Vec<String> {
    if max < 8 || width_ansi(line) <= max {
        return vec![line.to_owned()];
    }
    // Tokens: (text, is_escape).
    let mut toks: Vec<(&str, bool)> = Vec::new();
    let mut rest = line;
    while !rest.is_empty() {
        match rest.find('\u{1b}') {
            Some(0) => {
                let end = rest.find('m').map_or(rest.len(), |e| e + 1);
                toks.push((&rest[..end], true));
                rest = &rest[end..];
            }
            Some(i) => {
                toks.push((&rest[..i], false));
                rest = &rest[i..];
            }
            None => {
                toks.push((rest, false));
                rest = "";
            }
        }
    }
    let mut out = Vec::new();
    let mut cur = String::new();
    let mut w = 0;
    let mut style = String::new();
    // The byte length of `cur` and its width at its last space.
    let mut last_space: Option<(usize, usize)> = None;
    let indent = "  ";
    for (t, esc) in toks {
        if esc {
            cur.push_str(t);
            if t == "\u{1b}[0m" {
                style.clear();
            } else {
                style.push_str(t);
            }
            continue;
        }
        for c in t.chars() {
            let cw = c.width().unwrap_or(0);
            if w + cw > max {
                let (head, tail) = match last_space {
                    Some((at, _)) if at > indent.len() => {
                        let tail = cur[at..].trim_start_matches(' ').to_owned();
                        cur.truncate(at);
                        (std::mem::take(&mut cur), tail)
                    }
                    _ => (std::mem::take(&mut cur), String::new()),
                };
                let mut head = head;
                if !style.is_empty() {
                    head.push_str("\u{1b}[0m");
                }
                out.push(head);
                cur.push_str(indent);
                cur.push_str(&style);
                cur.push_str(&tail);
                w = indent.len() + width_ansi(&tail);
                last_space = None;
            }
            if c == ' ' {
                last_space = Some((cur.len(), w));
            }
            cur.push(c);
            w += cw;
        }
    }
    out.push(cur);
    out
}

/// Display width, not counting ANSI colour codes.
pub fn width_ansi(s: &str) -> usize {
    let mut w = 0;
    let mut in_esc = false;
    for c in s.chars() {
        if in_esc {
            in_esc = c != 'm';
        } else if c == '\u{1b}' {
            in_esc = true;
        } else {
            w += c.width().unwrap_or(0);
        }
    }
    w
}

/// A writer that fits every line it is given to `max` columns ([`fit_ansi`]).
pub struct Fit<'w> {
    inner: &'w mut dyn std::io::Write,
    max: usize,
    buf: Vec<u8>,
}

impl<'w> Fit<'w> {
    pub fn new(inner: &'w mut dyn std::io::Write, max: usize) -> Fit<'w> {
        Fit {
            inner,
            max,
            buf: Vec::new(),
        }
    }
}

impl std::io::Write for Fit<'_> {
    fn write(&mut self, data: &[u8]) -> std::io::Result<usize> {
        if self.max == 0 {
            return self.inner.write(data);
        }
        for &b in data {
            if b != b'\n' {
                self.buf.push(b);
                continue;
            }
            let line = String::from_utf8_lossy(&self.buf).into_owned();
            self.buf.clear();
            for l in fit_ansi(&line, self.max) {
                self.inner.write_all(l.as_bytes())?;
                self.inner.write_all(b"\n")?;
            }
        }
        Ok(data.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        if !self.buf.is_empty() {
            let rest = std::mem::take(&mut self.buf);
            self.inner.write_all(&rest)?;
        }
        self.inner.flush()
    }
}

#[cfg(test)]
mod ansi_tests {
    use super::*;

    #[test]
    fn coloured_lines_are_fitted() {
        let red = "\u{1b}[31m";
        let reset = "\u{1b}[0m";
        let line = format!("head {red}one two three four{reset} tail");
        let out = fit_ansi(&line, 12);
        for l in &out {
            assert!(width_ansi(l) <= 12, "{l:?}");
        }
        assert_eq!(out[0], format!("head {red}one{reset}"));
        assert_eq!(out[1], format!("  {red}two three{reset}"));
        assert_eq!(fit_ansi("short", 12), ["short"]);
    }
}
