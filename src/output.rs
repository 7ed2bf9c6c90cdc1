//! Standard output: buffered, JSONL by default, human text on a terminal where a command has
//! a human view (docs/decisions.md §4).

pub use pi_base::text::{escape, escape_text, is_unsafe_char};

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
}

impl Out {
    pub fn stdout() -> Out {
        let stdout = io::stdout();
        let tty = stdout.is_terminal();
        Out {
            w: io::BufWriter::with_capacity(256 << 10, stdout),
            tty,
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

    /// Copies `file[start..end]` followed by a newline to stdout through a large buffer,
    /// bytes that are not UTF-8 written as U+FFFD (as the reference reads them), so the
    /// output is valid UTF-8 whatever the file holds. (A kernel copy, `sendfile`, would be
    /// quicker to a file, but could not look at the bytes.)
    pub fn copy_text_range(
        &mut self,
        file: &std::fs::File,
        start: u64,
        end: u64,
    ) -> io::Result<()> {
        use std::os::unix::fs::FileExt;
        let len = usize::try_from(end - start).unwrap_or(usize::MAX);
        // Room for a character cut at the end of a block, carried to the next.
        let mut buf = vec![0u8; (1usize << 20).min(len) + 4];
        let block = buf.len() - 4;
        let mut pos = start;
        let mut carry = 0usize;
        while pos < end {
            let n = ((end - pos) as usize).min(block);
            file.read_exact_at(&mut buf[carry..carry + n], pos)?;
            pos += n as u64;
            let filled = carry + n;
            carry = 0;
            let mut at = 0;
            while at < filled {
                match std::str::from_utf8(&buf[at..filled]) {
                    Ok(_) => {
                        self.w.write_all(&buf[at..filled])?;
                        break;
                    }
                    Err(e) => {
                        let ok = at + e.valid_up_to();
                        self.w.write_all(&buf[at..ok])?;
                        match e.error_len() {
                            Some(bad) => {
                                self.w.write_all("\u{FFFD}".as_bytes())?;
                                at = ok + bad;
                            }
                            None if pos < end => {
                                buf.copy_within(ok..filled, 0);
                                carry = filled - ok;
                                break;
                            }
                            None => {
                                self.w.write_all("\u{FFFD}".as_bytes())?;
                                break;
                            }
                        }
                    }
                }
            }
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

#[cfg(test)]
mod tests {
    use super::*;

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
