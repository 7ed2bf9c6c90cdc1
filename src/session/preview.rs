//! One-line previews of entries, for the tree view and listings.

use std::borrow::Cow;

use crate::json::{self, Kind as JsonKind, Member, RawStr};

/// Longest preview kept, in characters.
pub const MAX: usize = 200;

fn field<'a>(line: &'a [u8], members: &[Member<'_>], key: &str) -> Option<&'a [u8]> {
    json::field(line, members, key)
}

fn string(v: Option<&[u8]>) -> Option<String> {
    v.and_then(RawStr::from_value)
        .map(|s| s.decode().into_owned())
}

/// The start of a string value, decoded (enough for a preview; long tool outputs are not
/// decoded whole).
fn string_prefix(v: &[u8], max: usize) -> String {
    // Not `RawStr::from_value`: that looks through the whole (maybe long) string.
    if v.len() >= 2 && v[0] == b'"' && v[v.len() - 1] == b'"' {
        let raw = &v[1..v.len() - 1];
        json::decode_str(&raw[..raw.len().min(max)]).into_owned()
    } else {
        String::new()
    }
}

/// Members of an object value, as a key → value lookup.
struct Obj<'a, 'm> {
    v: &'a [u8],
    members: Cow<'m, [Member<'a>]>,
}

impl<'a> Obj<'a, '_> {
    fn new(v: &'a [u8]) -> Self {
        Obj {
            v,
            members: Cow::Owned(json::members_valid(v).unwrap_or_default()),
        }
    }
    fn get(&self, key: &str) -> Option<&'a [u8]> {
        self.members
            .iter()
            .rev()
            .find(|m| m.key.eq_str(key))
            .map(|m| &self.v[m.value_start..m.value_end])
    }
    fn str(&self, key: &str) -> Option<String> {
        string(self.get(key))
    }
}

/// Collapses whitespace runs (newlines, tabs) to single spaces and trims.
pub fn normalize(s: &str) -> String {
    normalize_max(s, usize::MAX)
}

/// [`normalize`], stopped once it has more than `max` characters: its start, all a preview
/// cut to `max` characters needs.
fn normalize_max(s: &str, max: usize) -> String {
    const LIMIT: usize = MAX * 4;
    let mut out = String::with_capacity(s.len().min(LIMIT + 8).min(max.saturating_add(8)));
    let mut chars = 0usize;
    let mut space = false;
    let b = s.as_bytes();
    let mut i = 0;
    while i < b.len() {
        let c = b[i];
        if c.is_ascii() {
            if matches!(c, b' ' | b'\t'..=b'\r') {
                space = !out.is_empty();
                i += 1;
                continue;
            }
            // A run of other ASCII characters, copied at once: as one by one, it stops
            // after the character that takes the text past the limit.
            // A single space between two of them is kept as it is, so it is part of the run.
            let start = i;
            let other = |c: u8| c.is_ascii() && !matches!(c, b' ' | b'\t'..=b'\r');
            if space {
                out.push(' ');
                chars += 1;
                space = false;
            }
            // What may still be taken; the run is looked at one character further.
            let room = (LIMIT + 1)
                .saturating_sub(out.len())
                .max(1)
                .min(max.saturating_add(1).saturating_sub(chars).max(1));
            let stop = b.len().min(start.saturating_add(room + 1));
            while i < stop
                && (other(b[i]) || (b[i] == b' ' && b.get(i + 1).is_some_and(|&n| other(n))))
            {
                i += 1;
            }
            let mut take = (i - start).min(room);
            if b[start + take - 1] == b' ' {
                take += 1; // a space comes out with the character after it
            }
            out.push_str(&s[start..start + take]);
            chars += take;
        } else {
            let Some(ch) = s[i..].chars().next() else {
                break;
            };
            i += ch.len_utf8();
            if ch.is_whitespace() {
                space = !out.is_empty();
                continue;
            }
            if space {
                out.push(' ');
                chars += 1;
                space = false;
            }
            out.push(ch);
            chars += 1;
        }
        if out.len() > LIMIT || chars > max {
            break;
        }
    }
    out
}

/// The text of a content value: a string, or the `text` blocks joined with `sep`.
pub fn content_text(content: &[u8], sep: &str, limit: usize) -> String {
    content_parts(content, sep, limit, false).0
}

/// The text of a content value (see [`content_text`]) and, with `calls`, its tool calls
/// (`name main-argument`, joined with `, `), in one pass over the blocks.
fn content_parts(content: &[u8], sep: &str, limit: usize, calls: bool) -> (String, String) {
    match JsonKind::of(content) {
        Some(JsonKind::String) => (
            string_prefix(content, limit.saturating_mul(4)),
            String::new(),
        ),
        Some(JsonKind::Array) => {
            let mut out = String::new();
            let mut first = true;
            let mut found: Vec<String> = Vec::new();
            let _ = json::for_each_element_members_valid(content, |block| {
                let text_done = out.len() > limit;
                if text_done && !calls {
                    return;
                }
                let b = Obj {
                    v: content,
                    members: Cow::Borrowed(block.unwrap_or_default()),
                };
                if !text_done
                    && b.get("type") == Some(b"\"text\"")
                    && let Some(t) = b.get("text")
                {
                    if !first {
                        out.push_str(sep);
                    }
                    first = false;
                    out.push_str(&string_prefix(t, limit.saturating_mul(4)));
                }
                if calls && b.str("type").as_deref() == Some("toolCall") {
                    let name = b.str("name").unwrap_or_default();
                    let args = b.get("arguments").map(args_summary).unwrap_or_default();
                    found.push(if args.is_empty() {
                        name
                    } else {
                        format!("{name} {args}")
                    });
                }
            });
            (out, found.join(", "))
        }
        _ => (String::new(), String::new()),
    }
}

/// The most telling argument of a tool call (a path, a command, a pattern).
fn args_summary(args: &[u8]) -> String {
    let a = Obj::new(args);
    for key in ["path", "command", "pattern", "file_path", "query", "url"] {
        if let Some(v) = a.get(key) {
            return normalize_max(&string_prefix(v, MAX * 4), MAX);
        }
    }
    String::new()
}

/// A message's role, if the entry is a message.
pub fn role(line: &[u8], members: &[Member<'_>]) -> Option<String> {
    field(line, members, "message").and_then(|m| json::get_str(m, "role").map(|r| r.into_owned()))
}

/// The preview of a message value (its text, not yet cut to [`MAX`]) and its role.
fn message_text(msg: &[u8]) -> (String, Option<String>) {
    let m = Obj::new(msg);
    let role = m.str("role");
    let name = role.clone().unwrap_or_default();
    let content = m.get("content").unwrap_or(b"null");
    let text = match name.as_str() {
        "user" => format!(
            "user: {}",
            normalize_max(&content_text(content, "", MAX * 4), MAX)
        ),
        "assistant" => {
            let (t, calls) = content_parts(content, " ", MAX * 4, true);
            let t = normalize_max(&t, MAX);
            let body = match (t.is_empty(), calls.is_empty()) {
                (false, true) => t,
                (false, false) => format!("{t} → {calls}"),
                (true, false) => format!("→ {calls}"),
                (true, true) if m.get("stopReason") == Some(b"\"aborted\"") => "(aborted)".into(),
                (true, true) => match m.str("errorMessage") {
                    Some(e) => format!("error: {}", normalize_max(&e, MAX)),
                    None => "(no content)".into(),
                },
            };
            format!("assistant: {body}")
        }
        "toolResult" => {
            let name = m.str("toolName").unwrap_or_default();
            let out = normalize_max(&content_text(content, " ", MAX * 4), MAX);
            let err = m.get("isError") == Some(b"true");
            format!("[{name}]{} {out}", if err { " error:" } else { "" })
        }
        "bashExecution" => format!(
            "[bash]: {}",
            normalize_max(
                &m.get("command")
                    .map(|c| string_prefix(c, MAX * 4))
                    .unwrap_or_default(),
                MAX
            )
        ),
        "custom" => format!(
            "[{}]: {}",
            m.str("customType").unwrap_or_default(),
            normalize_max(&content_text(content, "", MAX * 4), MAX)
        ),
        r => format!("[{r}]"),
    };
    (text, role)
}

/// [`preview`] of a `message` entry from its `message` value, and the message's role.
pub fn message_preview(msg: &[u8]) -> (String, Option<String>) {
    let (text, role) = message_text(msg);
    (crate::output::truncate(&text, MAX), role)
}

/// A one-line description of an entry: `user: …`, `assistant: …`, `[compaction: 12k tokens]`.
pub fn preview(ty: &str, line: &[u8], members: &[Member<'_>]) -> String {
    preview_and_role(ty, line, members).0
}

/// [`preview`] and, for a message, its role ([`role`]), reading the message once.
pub fn preview_and_role(ty: &str, line: &[u8], members: &[Member<'_>]) -> (String, Option<String>) {
    let mut message_role = None;
    let text = match ty {
        "message" => {
            let Some(msg) = field(line, members, "message") else {
                return ("[message]".into(), role(line, members));
            };
            let (text, role) = message_text(msg);
            message_role = role;
            text
        }
        "custom_message" => format!(
            "[{}]: {}",
            string(field(line, members, "customType")).unwrap_or_default(),
            normalize_max(
                &content_text(
                    field(line, members, "content").unwrap_or(b"null"),
                    "",
                    MAX * 4
                ),
                MAX
            )
        ),
        "compaction" => {
            let t = field(line, members, "tokensBefore")
                .and_then(json::number)
                .unwrap_or(0.0);
            format!("[compaction: {}k tokens]", (t / 1000.0).round())
        }
        "branch_summary" => format!(
            "[branch summary]: {}",
            normalize_max(
                &string(field(line, members, "summary")).unwrap_or_default(),
                MAX
            )
        ),
        "model_change" => format!(
            "[model: {}]",
            string(field(line, members, "modelId")).unwrap_or_default()
        ),
        "thinking_level_change" => format!(
            "[thinking: {}]",
            string(field(line, members, "thinkingLevel")).unwrap_or_default()
        ),
        "custom" => format!(
            "[custom: {}]",
            string(field(line, members, "customType")).unwrap_or_default()
        ),
        "label" => match string(field(line, members, "label")).filter(|l| !l.is_empty()) {
            Some(l) => format!("[label: {l}]"),
            None => "[label: (cleared)]".into(),
        },
        "session_info" => match string(field(line, members, "name")).map(|n| n.trim().to_owned()) {
            Some(n) if !n.is_empty() => format!("[title: {n}]"),
            _ => "[title: (cleared)]".into(),
        },
        other => format!("[{other}]"),
    };
    let role = if ty == "message" {
        message_role
    } else {
        role(line, members)
    };
    (crate::output::truncate(&text, MAX), role)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `normalize` one character at a time, as it was before the ASCII runs.
    fn normalize_chars(s: &str) -> String {
        let mut out = String::new();
        let mut space = false;
        for c in s.chars() {
            if c.is_whitespace() {
                space = !out.is_empty();
            } else {
                if space {
                    out.push(' ');
                    space = false;
                }
                out.push(c);
                if out.len() > MAX * 4 {
                    break;
                }
            }
        }
        out
    }

    #[test]
    fn normalize_matches_one_character_at_a_time() {
        let long = "word ".repeat(400);
        let wide = "é\u{3000}→ x\u{2028}".repeat(300);
        let cases = [
            "",
            "  a\tb\n\nc  ",
            "\u{1c}x\u{0b}y\u{0c}z\u{85}w\u{a0}v",
            long.as_str(),
            wide.as_str(),
            &"a".repeat(2000),
            &format!("{} {}", "a".repeat(800), "b".repeat(10)),
            &format!("{}é{}", "a".repeat(799), "b".repeat(10)),
            &format!("{} é", "a".repeat(799)),
            &"ab cd ".repeat(300),
            &"a b".repeat(400),
            &format!("{} b c", "a".repeat(799)),
            &format!("{} b", "a".repeat(798)),
            &format!("x{}", " y".repeat(500)),
            " a  b \t c ",
            &format!("{} b c", "a".repeat(800)),
        ];
        for c in cases {
            assert_eq!(normalize(c), normalize_chars(c), "{c:?}");
            for max in [0, 1, 5, 199, 200, 201, 799, 800] {
                let full = crate::output::truncate(&normalize(c), max);
                assert_eq!(
                    crate::output::truncate(&normalize_max(c, max), max),
                    full,
                    "{c:?} {max}"
                );
            }
        }
    }
}
