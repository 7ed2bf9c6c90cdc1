//! Output limits shared by the tools: at most [`DEFAULT_MAX_LINES`] lines and
//! [`DEFAULT_MAX_BYTES`] bytes, whichever is reached first, keeping either the beginning
//! ([`truncate_head`], for files and listings) or the end ([`truncate_tail`], for command
//! output). Lines are the pieces between `\n` (a trailing newline gives a last empty line),
//! sizes are UTF-8 bytes, and whole lines are kept except when the last line alone is over
//! the byte limit in a tail cut.
//!
//! The [`Truncation`] record is stored in tool results (`details.truncation`), so its field
//! names and order follow upstream's.

use serde::Serialize;

use pi_base::js;

pub(crate) const DEFAULT_MAX_LINES: usize = 2000;
pub(crate) const DEFAULT_MAX_BYTES: usize = 50 * 1024;
/// Longest line (in UTF-16 code units, as upstream counts) that grep shows whole.
pub(crate) const GREP_MAX_LINE_LENGTH: usize = 500;

/// Which limit cut the text.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum TruncatedBy {
    Lines,
    Bytes,
}

/// What a cut kept and what the whole was.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Truncation {
    pub content: String,
    pub truncated: bool,
    pub truncated_by: Option<TruncatedBy>,
    pub total_lines: usize,
    pub total_bytes: usize,
    pub output_lines: usize,
    pub output_bytes: usize,
    pub last_line_partial: bool,
    pub first_line_exceeds_limit: bool,
    pub max_lines: usize,
    pub max_bytes: usize,
}

impl Truncation {
    /// The record as a JSON value (for `details`).
    pub fn to_json(&self) -> serde_json::Value {
        serde_json::to_value(self).unwrap_or(serde_json::Value::Null)
    }
}

/// The limits of one cut.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Limits {
    pub max_lines: usize,
    pub max_bytes: usize,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            max_lines: DEFAULT_MAX_LINES,
            max_bytes: DEFAULT_MAX_BYTES,
        }
    }
}

impl Limits {
    /// Only the byte limit (listings, whose entry count is already capped). The line limit
    /// is JavaScript's largest safe integer, as upstream records it.
    pub(crate) fn bytes_only() -> Limits {
        Limits {
            max_lines: 9_007_199_254_740_991,
            max_bytes: DEFAULT_MAX_BYTES,
        }
    }
}

/// `1023B`, `50.0KB`, `1.5MB`: one decimal, halves rounded up (as JavaScript's `toFixed`
/// does for these exact binary fractions).
pub(crate) fn format_size(bytes: usize) -> String {
    let b = bytes as u128;
    if b < 1024 {
        format!("{b}B")
    } else if b < 1024 * 1024 {
        let tenths = (b * 10 + 512) / 1024;
        format!("{}.{}KB", tenths / 10, tenths % 10)
    } else {
        let tenths = (b * 10 + 524_288) / 1_048_576;
        format!("{}.{}MB", tenths / 10, tenths % 10)
    }
}

/// The record of keeping `out` (`output_lines` lines) of a text of `total_lines` lines and
/// `total_bytes` bytes; `by` is `None` when nothing was cut.
fn record(
    out: &str,
    output_lines: usize,
    (total_lines, total_bytes): (usize, usize),
    by: Option<TruncatedBy>,
    limits: Limits,
) -> Truncation {
    Truncation {
        content: out.to_owned(),
        truncated: by.is_some(),
        truncated_by: by,
        total_lines,
        total_bytes,
        output_lines,
        output_bytes: out.len(),
        last_line_partial: false,
        first_line_exceeds_limit: false,
        max_lines: limits.max_lines,
        max_bytes: limits.max_bytes,
    }
}

/// Keeps the first lines that fit both limits; never a partial line. When the first line
/// alone is over the byte limit the content is empty and `first_line_exceeds_limit` is set.
pub(crate) fn truncate_head(content: &str, limits: Limits) -> Truncation {
    let total = (content.split('\n').count(), content.len());
    if total.0 <= limits.max_lines && total.1 <= limits.max_bytes {
        return record(content, total.0, total, None, limits);
    }
    let first_len = content.split('\n').next().map_or(0, str::len);
    if first_len > limits.max_bytes {
        return Truncation {
            first_line_exceeds_limit: true,
            ..record("", 0, total, Some(TruncatedBy::Bytes), limits)
        };
    }
    let (kept, bytes) = fit(content.split('\n'), limits);
    // `bytes` is exactly the length of the kept lines joined with `\n`.
    let by = reached(kept, bytes, limits);
    record(&content[..bytes], kept, total, Some(by), limits)
}

/// Keeps the last lines that fit both limits. When the last line alone is over the byte
/// limit, its last `max_bytes` bytes are kept (from a character boundary) and
/// `last_line_partial` is set.
pub(crate) fn truncate_tail(content: &str, limits: Limits) -> Truncation {
    let total = (content.split('\n').count(), content.len());
    if total.0 <= limits.max_lines && total.1 <= limits.max_bytes {
        return record(content, total.0, total, None, limits);
    }
    let (mut kept, mut bytes) = fit(content.rsplit('\n'), limits);
    let mut partial = None;
    if kept == 0 && limits.max_lines > 0 {
        // The last line alone is over the byte limit: its end is kept.
        let last = content.rsplit('\n').next().unwrap_or_default();
        let tail = tail_bytes(last, limits.max_bytes);
        (kept, bytes, partial) = (1, tail.len(), Some(tail));
    }
    let out = partial.unwrap_or(&content[content.len() - bytes..]);
    Truncation {
        last_line_partial: partial.is_some(),
        ..record(out, kept, total, Some(reached(kept, bytes, limits)), limits)
    }
}

/// Takes `lines` (in the order they are kept) while both limits hold: how many, and their
/// size joined with `\n`.
fn fit<'a>(lines: impl Iterator<Item = &'a str>, limits: Limits) -> (usize, usize) {
    let (mut kept, mut bytes) = (0, 0);
    for line in lines.take(limits.max_lines) {
        let cost = line.len() + usize::from(kept > 0);
        if bytes + cost > limits.max_bytes {
            break;
        }
        kept += 1;
        bytes += cost;
    }
    (kept, bytes)
}

/// The limit a cut is said to have reached: upstream names the line limit whenever the kept
/// lines reach it within the byte limit, else the byte limit.
fn reached(kept: usize, bytes: usize, limits: Limits) -> TruncatedBy {
    if kept >= limits.max_lines && bytes <= limits.max_bytes {
        TruncatedBy::Lines
    } else {
        TruncatedBy::Bytes
    }
}

/// The last `max` bytes of `s`, starting at a character boundary.
fn tail_bytes(s: &str, max: usize) -> &str {
    if s.len() <= max {
        return s;
    }
    let mut start = s.len() - max;
    while !s.is_char_boundary(start) {
        start += 1;
    }
    &s[start..]
}

/// A grep line longer than `max` UTF-16 code units becomes its first `max` units plus
/// `... [truncated]`; the flag says whether that happened. (A surrogate pair that the cut
/// would split is dropped whole.)
pub(crate) fn truncate_line(line: &str, max: usize) -> (String, bool) {
    let head = js::utf16_prefix(line, max);
    if head.len() == line.len() {
        return (line.to_owned(), false);
    }
    (format!("{head}... [truncated]"), true)
}

/// The output of a listing tool (find, grep, ls): the lines cut to the byte limit, then the
/// notices in brackets, with the matching `details`. `limit` is set when the result limit was
/// reached: (what is counted, the hint after "Use limit=N for more", the details key, the
/// limit); `extra` are further notices after the byte-limit one, with their details.
pub(crate) fn listing_output(
    lines: &[String],
    limit: Option<(&str, &str, &str, f64)>,
    extra: Vec<(String, &str, serde_json::Value)>,
) -> super::ToolOutput {
    let truncation = truncate_head(&lines.join("\n"), Limits::bytes_only());
    let mut output = truncation.content.clone();
    let mut details = serde_json::Map::new();
    let mut notices = Vec::new();
    if let Some((what, hint, key, n)) = limit {
        notices.push(format!(
            "{} {what} limit reached. Use limit={} for more{hint}",
            js::number(n),
            js::number(n * 2.0)
        ));
        details.insert(key.into(), js::json_number(n));
    }
    if truncation.truncated {
        notices.push(format!("{} limit reached", format_size(DEFAULT_MAX_BYTES)));
        details.insert("truncation".into(), truncation.to_json());
    }
    for (notice, key, value) in extra {
        notices.push(notice);
        details.insert(key.into(), value);
    }
    if !notices.is_empty() {
        output.push_str(&format!("\n\n[{}]", notices.join(". ")));
    }
    super::ToolOutput {
        content: vec![super::Content::text(output)],
        details: (!details.is_empty()).then_some(serde_json::Value::Object(details)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn limits(max_lines: usize, max_bytes: usize) -> Limits {
        Limits {
            max_lines,
            max_bytes,
        }
    }

    #[test]
    fn sizes() {
        assert_eq!(format_size(0), "0B");
        assert_eq!(format_size(1023), "1023B");
        assert_eq!(format_size(1024), "1.0KB");
        assert_eq!(format_size(1280), "1.3KB"); // 1.25 rounds up, as toFixed does
        assert_eq!(format_size(51200), "50.0KB");
        assert_eq!(format_size(1024 * 1024 - 1), "1024.0KB");
        assert_eq!(format_size(1024 * 1024), "1.0MB");
        assert_eq!(format_size(3 * 1024 * 1024 / 2), "1.5MB");
    }

    #[test]
    fn head_fits() {
        let t = truncate_head("a\nb\n", Limits::default());
        assert!(!t.truncated);
        assert_eq!(t.total_lines, 3);
        assert_eq!(t.content, "a\nb\n");
    }

    #[test]
    fn head_by_lines_and_bytes() {
        let t = truncate_head("a\nb\nc\nd", limits(2, 100));
        assert_eq!(t.content, "a\nb");
        assert_eq!(t.truncated_by, Some(TruncatedBy::Lines));
        assert_eq!((t.output_lines, t.output_bytes), (2, 3));
        let t = truncate_head("aaa\nbbb\nccc", limits(10, 8));
        assert_eq!(t.content, "aaa\nbbb");
        assert_eq!(t.truncated_by, Some(TruncatedBy::Bytes));
        let t = truncate_head("aaaaaaaaaa\nb", limits(10, 5));
        assert!(t.first_line_exceeds_limit);
        assert_eq!(t.content, "");
    }

    #[test]
    fn tail_cuts() {
        let t = truncate_tail("a\nb\nc\nd", limits(2, 100));
        assert_eq!(t.content, "c\nd");
        assert_eq!(t.truncated_by, Some(TruncatedBy::Lines));
        let t = truncate_tail("x\néééé", limits(10, 5));
        // 8 bytes of é; the last 5 start inside a character, so 4 bytes are kept.
        assert_eq!(t.content, "éé");
        assert!(t.last_line_partial);
        assert_eq!(t.output_lines, 1);
        assert_eq!(t.truncated_by, Some(TruncatedBy::Bytes));
        // As upstream: the line limit is named when the one line it allows is cut.
        let t = truncate_tail("a\nbbbbbb", limits(1, 3));
        assert_eq!(t.content, "bbb");
        assert!(t.last_line_partial);
        assert_eq!(t.truncated_by, Some(TruncatedBy::Lines));
    }

    #[test]
    fn lines_cut_by_utf16_units() {
        let (s, cut) = truncate_line(&"x".repeat(501), 500);
        assert!(cut);
        assert_eq!(s, format!("{}... [truncated]", "x".repeat(500)));
        let (s, cut) = truncate_line(&"😀".repeat(250), 500);
        assert!(!cut);
        assert_eq!(s.chars().count(), 250);
        let (s, cut) = truncate_line(&format!("{}😀", "x".repeat(499)), 500);
        assert!(cut);
        assert_eq!(s, format!("{}... [truncated]", "x".repeat(499)));
    }
}
