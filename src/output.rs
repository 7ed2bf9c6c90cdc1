//! Standard output: buffered, JSONL by default, human text on a terminal where a command has
//! a human view (DECISIONS §4).

use std::borrow::Cow;
use std::io::{self, IsTerminal, Write};

use clap::ValueEnum;

/// `--format`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum, Default)]
pub enum Format {
    /// Human text when stdout is a terminal, JSON otherwise.
    #[default]
    Auto,
    /// JSON (JSONL): one record per line.
    Json,
    /// Human-readable text.
    Human,
}

pub struct Out {
    w: io::BufWriter<io::Stdout>,
    pub tty: bool,
    kernel_copy: Option<bool>,
}

fn stdout_is_file_or_device() -> bool {
    use std::os::fd::AsFd;
    use std::os::unix::fs::FileTypeExt;
    let Ok(fd) = io::stdout().as_fd().try_clone_to_owned() else {
        return false;
    };
    std::fs::File::from(fd)
        .metadata()
        .map(|m| m.file_type().is_file() || m.file_type().is_char_device())
        .unwrap_or(false)
}

impl Out {
    pub fn stdout() -> Out {
        let stdout = io::stdout();
        let tty = stdout.is_terminal();
        Out {
            w: io::BufWriter::with_capacity(256 << 10, stdout),
            tty,
            kernel_copy: None,
        }
    }

    /// Whether a command with a human view should print it.
    pub fn human(&self, format: Format) -> bool {
        match format {
            Format::Auto => self.tty,
            Format::Json => false,
            Format::Human => true,
        }
    }

    /// Whether stdout gets colors (see [`color`]).
    pub fn color(&self) -> bool {
        color(self.tty)
    }

    /// Copies `file[start..end]` followed by a newline to stdout: by the kernel (sendfile,
    /// copy_file_range) when stdout is a file or device, else through a large buffer.
    pub fn copy_range(&mut self, file: &std::fs::File, start: u64, end: u64) -> io::Result<()> {
        use std::io::{Read, Seek, SeekFrom};
        use std::os::unix::fs::FileExt;
        self.w.flush()?;
        let kernel = *self
            .kernel_copy
            .get_or_insert_with(stdout_is_file_or_device);
        if kernel {
            let mut f = file.try_clone()?;
            f.seek(SeekFrom::Start(start))?;
            let mut lock = io::stdout().lock();
            let n = io::copy(&mut (&f).take(end - start), &mut lock)?;
            if n != end - start {
                return Err(io::Error::new(io::ErrorKind::UnexpectedEof, "file shrank"));
            }
            return lock.write_all(b"\n");
        }
        let mut buf = vec![0u8; (1usize << 20).min((end - start) as usize)];
        let mut pos = start;
        while pos < end {
            let n = ((end - pos) as usize).min(buf.len());
            file.read_exact_at(&mut buf[..n], pos)?;
            self.w.write_all(&buf[..n])?;
            pos += n as u64;
        }
        self.w.write_all(b"\n")
    }

    /// Writes `bytes` and a newline.
    pub fn line(&mut self, bytes: &[u8]) -> io::Result<()> {
        self.w.write_all(bytes)?;
        self.w.write_all(b"\n")
    }

    /// Writes a value as one compact JSON line. A failed write is returned as the I/O error
    /// it is (a closed pipe stays a closed pipe).
    pub fn json<T: serde::Serialize>(&mut self, v: &T) -> io::Result<()> {
        serde_json::to_writer(&mut self.w, v).map_err(io::Error::from)?;
        self.w.write_all(b"\n")
    }

    pub fn write_all(&mut self, bytes: &[u8]) -> io::Result<()> {
        self.w.write_all(bytes)
    }

    pub fn flush(&mut self) -> io::Result<()> {
        self.w.flush()
    }
}

impl Write for Out {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.w.write(buf)
    }

    fn flush(&mut self) -> io::Result<()> {
        self.w.flush()
    }
}

/// `--color`: when human output may use colors.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum, Default)]
pub enum ColorWhen {
    /// On a terminal, unless NO_COLOR is set.
    #[default]
    Auto,
    /// Always, also into a pipe or a file, and whatever NO_COLOR says.
    Always,
    /// Never.
    Never,
}

/// The `--color` of this process (0 auto, 1 always, 2 never).
static COLOR_WHEN: std::sync::atomic::AtomicU8 = std::sync::atomic::AtomicU8::new(0);

/// Sets the `--color` choice every later [`color`] decision follows.
pub fn set_color_when(when: ColorWhen) {
    let v = match when {
        ColorWhen::Auto => 0,
        ColorWhen::Always => 1,
        ColorWhen::Never => 2,
    };
    COLOR_WHEN.store(v, std::sync::atomic::Ordering::Relaxed);
}

/// The `--color` choice in force.
pub fn color_when() -> ColorWhen {
    match COLOR_WHEN.load(std::sync::atomic::Ordering::Relaxed) {
        1 => ColorWhen::Always,
        2 => ColorWhen::Never,
        _ => ColorWhen::Auto,
    }
}

/// Whether to color a stream: as `--color` says; for `auto` (the default) only a terminal,
/// and never with `NO_COLOR` set (non-empty).
pub fn color(is_terminal: bool) -> bool {
    match color_when() {
        ColorWhen::Always => true,
        ColorWhen::Never => false,
        ColorWhen::Auto => is_terminal && std::env::var_os("NO_COLOR").is_none_or(|v| v.is_empty()),
    }
}

/// Terminal styles (ANSI), or nothing.
#[derive(Clone, Copy)]
pub struct Style {
    pub on: bool,
}

impl Style {
    pub const CYAN: anstyle::Style = anstyle::AnsiColor::Cyan.on_default();
    pub const YELLOW: anstyle::Style = anstyle::AnsiColor::Yellow.on_default();
    pub const RED: anstyle::Style = anstyle::AnsiColor::Red.on_default();
    pub const MAGENTA: anstyle::Style = anstyle::AnsiColor::Magenta.on_default();

    /// Appends [`Style::paint`] of `s` to `out`.
    pub fn paint_to(&self, out: &mut String, style: anstyle::Style, s: &str) {
        use std::fmt::Write as _;
        if self.on && !s.is_empty() && style != anstyle::Style::new() {
            let _ = write!(out, "{style}{s}{style:#}");
        } else {
            out.push_str(s);
        }
    }

    /// `s` in `style` (then a reset), or `s` as it is when styles are off.
    pub fn paint(&self, style: anstyle::Style, s: &str) -> String {
        let mut out = String::new();
        self.paint_to(&mut out, style, s);
        out
    }
    fn fg(&self, color: anstyle::AnsiColor, s: &str) -> String {
        self.paint(color.on_default(), s)
    }
    pub fn dim(&self, s: &str) -> String {
        self.paint(anstyle::Style::new().dimmed(), s)
    }
    pub fn bold(&self, s: &str) -> String {
        self.paint(anstyle::Style::new().bold(), s)
    }
    pub fn yellow(&self, s: &str) -> String {
        self.fg(anstyle::AnsiColor::Yellow, s)
    }
    pub fn cyan(&self, s: &str) -> String {
        self.fg(anstyle::AnsiColor::Cyan, s)
    }
    pub fn green(&self, s: &str) -> String {
        self.fg(anstyle::AnsiColor::Green, s)
    }
    pub fn red(&self, s: &str) -> String {
        self.fg(anstyle::AnsiColor::Red, s)
    }
    pub fn magenta(&self, s: &str) -> String {
        self.fg(anstyle::AnsiColor::Magenta, s)
    }
}

/// The width for human views: `COLUMNS` when set (tests and users rely on it), else the
/// width of the terminal on stdout, else 100; widths under 20 are ignored.
pub fn term_width() -> usize {
    let columns = std::env::var("COLUMNS")
        .ok()
        .and_then(|c| c.trim().parse().ok());
    columns
        .or_else(|| terminal_size::terminal_size_of(io::stdout()).map(|(w, _)| usize::from(w.0)))
        .filter(|&w: &usize| w >= 20)
        .unwrap_or(100)
}

/// The height of the terminal on stdout, for the pager rule: `LINES` when set, else the
/// terminal's, else 24.
pub fn term_height() -> usize {
    let lines = std::env::var("LINES")
        .ok()
        .and_then(|c| c.trim().parse().ok());
    lines
        .or_else(|| terminal_size::terminal_size_of(io::stdout()).map(|(_, h)| usize::from(h.0)))
        .filter(|&h: &usize| h >= 2)
        .unwrap_or(24)
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

    #[test]
    fn styles_are_plain_ansi() {
        let on = Style { on: true };
        assert_eq!(on.dim("x"), "\x1b[2mx\x1b[0m");
        assert_eq!(on.bold("x"), "\x1b[1mx\x1b[0m");
        assert_eq!(on.yellow("x"), "\x1b[33mx\x1b[0m");
        assert_eq!(on.cyan("x"), "\x1b[36mx\x1b[0m");
        assert_eq!(on.green("x"), "\x1b[32mx\x1b[0m");
        assert_eq!(on.red("x"), "\x1b[31mx\x1b[0m");
        assert_eq!(on.magenta("x"), "\x1b[35mx\x1b[0m");
        assert_eq!(on.red(""), "");
        assert_eq!(Style { on: false }.red("x"), "x");
    }
}
