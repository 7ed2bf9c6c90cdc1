//! Full-text search over session files: the text people saw (message text, thinking,
//! tool-call arguments, tool results, summaries, labels, names), after JSON unescaping, in
//! every branch of a file.
//!
//! A literal pattern is first looked for in the raw bytes in the form a JSON writer gives it
//! (`"` as `\"`, a tab as `\t`, …), so lines that cannot match are never parsed; lines with
//! `\u` or `\/` escapes, which could spell the pattern another way, are always parsed.

use std::fs::File;
use std::ops::ControlFlow;
use std::path::{Path, PathBuf};

use regex::Regex;
use serde::Serialize;
use serde_json::Value;

use super::lines;

/// Characters of context before the first match in a snippet, and a snippet's usual length.
const BEFORE: usize = 40;
const WIDTH: usize = 160;

/// Which messages `--role` keeps.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Role {
    User,
    Assistant,
    /// Tool results and the user's `!command` runs (`toolResult`, `bashExecution`).
    Tool,
}

impl Role {
    fn admits(self, role: &str) -> bool {
        match self {
            Role::User => role == "user",
            Role::Assistant => role == "assistant",
            Role::Tool => matches!(role, "toolResult" | "bashExecution"),
        }
    }
}

/// What to look for and where.
pub struct Query {
    text: Regex,
    raw: Option<regex::bytes::Regex>,
    pub roles: Vec<Role>,
    pub types: Vec<String>,
    /// Entry timestamps from (inclusive), in Unix milliseconds.
    pub since_ms: Option<i64>,
    /// Entry timestamps up to (inclusive).
    pub until_ms: Option<i64>,
}

impl Query {
    /// A query for `pattern` (a regular expression with `regex`, else literal text).
    pub fn new(pattern: &str, regex: bool, ignore_case: bool) -> Result<Query, regex::Error> {
        let source = if regex {
            pattern.to_owned()
        } else {
            regex::escape(pattern)
        };
        let text = regex::RegexBuilder::new(&source)
            .case_insensitive(ignore_case)
            .build()?;
        let raw = if regex {
            None
        } else {
            let quick = format!(r"{}|\\u|\\/", regex::escape(&json_escaped(pattern)));
            Some(
                regex::bytes::RegexBuilder::new(&quick)
                    .case_insensitive(ignore_case)
                    .build()?,
            )
        };
        Ok(Query {
            text,
            raw,
            roles: Vec::new(),
            types: Vec::new(),
            since_ms: None,
            until_ms: None,
        })
    }
}

/// `s` as `JSON.stringify` writes it inside a string.
fn json_escaped(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            '\u{8}' => out.push_str("\\b"),
            '\u{c}' => out.push_str("\\f"),
            c if (c as u32) < 0x20 => out.push_str(&format!("\\u{:04x}", c as u32)),
            c => out.push(c),
        }
    }
    out
}

/// One field of one entry that matched.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Hit {
    pub session: String,
    pub path: PathBuf,
    pub entry_id: Option<String>,
    #[serde(rename = "type")]
    pub entry_type: String,
    pub role: Option<String>,
    pub timestamp: Option<String>,
    pub field: String,
    pub snippet: String,
    /// `[start, end)` of each match in the snippet, in characters (Unicode scalar values).
    pub matches: Vec<[usize; 2]>,
    /// Whether text was cut before / after the snippet (for the human view).
    #[serde(skip)]
    pub cut: (bool, bool),
}

/// The searchable text of an entry: (field name, text) pairs.
pub fn fields(entry: &Value) -> Vec<(String, &str)> {
    let mut out = Vec::new();
    let ty = entry.get("type").and_then(Value::as_str).unwrap_or("");
    fn str_of<'a>(v: &'a Value, k: &str) -> Option<&'a str> {
        v.get(k).and_then(Value::as_str)
    }
    match ty {
        "message" => {
            if let Some(m) = entry.get("message") {
                content(m.get("content"), &mut out);
                for k in ["command", "output", "summary", "errorMessage"] {
                    if let Some(s) = str_of(m, k) {
                        out.push((k.to_owned(), s));
                    }
                }
            }
        }
        "custom_message" => content(entry.get("content"), &mut out),
        "compaction" | "branch_summary" => {
            if let Some(s) = str_of(entry, "summary") {
                out.push(("summary".into(), s));
            }
        }
        "label" => {
            if let Some(s) = str_of(entry, "label") {
                out.push(("label".into(), s));
            }
        }
        "session_info" => {
            if let Some(s) = str_of(entry, "name") {
                out.push(("name".into(), s));
            }
        }
        _ => {}
    }
    out
}

fn content<'a>(c: Option<&'a Value>, out: &mut Vec<(String, &'a str)>) {
    match c {
        Some(Value::String(s)) => out.push(("text".into(), s)),
        Some(Value::Array(blocks)) => {
            for b in blocks {
                match b.get("type").and_then(Value::as_str) {
                    Some("text") => push_str(b, "text", "text", out),
                    Some("thinking") => push_str(b, "thinking", "thinking", out),
                    Some("toolCall") => {
                        if let Some(args) = b.get("arguments") {
                            strings(args, "arguments".into(), out);
                        }
                    }
                    _ => {}
                }
            }
        }
        _ => {}
    }
}

fn push_str<'a>(v: &'a Value, key: &str, field: &str, out: &mut Vec<(String, &'a str)>) {
    if let Some(s) = v.get(key).and_then(Value::as_str) {
        out.push((field.to_owned(), s));
    }
}

/// Every string inside `v`, named by its path (`arguments.command`, `arguments.edits.0`).
fn strings<'a>(v: &'a Value, path: String, out: &mut Vec<(String, &'a str)>) {
    match v {
        Value::String(s) => out.push((path, s)),
        Value::Array(a) => {
            for (i, x) in a.iter().enumerate() {
                strings(x, format!("{path}.{i}"), out);
            }
        }
        Value::Object(o) => {
            for (k, x) in o {
                strings(x, format!("{path}.{k}"), out);
            }
        }
        _ => {}
    }
}

/// The snippet around the matches of `re` in `text`, or `None` when it does not match.
/// A snippet, the matches in it (characters), and whether text was cut before / after it.
pub(crate) type Snippet = (String, Vec<[usize; 2]>, (bool, bool));

pub fn snippet(re: &Regex, text: &str) -> Option<Snippet> {
    let found: Vec<(usize, usize)> = re
        .find_iter(text)
        .filter(|m| !m.is_empty())
        .map(|m| (m.start(), m.end()))
        .collect();
    let &(first, first_end) = found.first()?;
    let start = text[..first]
        .char_indices()
        .rev()
        .nth(BEFORE - 1)
        .map_or(0, |(i, _)| i);
    let room = text[start..]
        .char_indices()
        .nth(WIDTH)
        .map_or(text.len(), |(i, _)| start + i);
    let end = room.max(first_end);
    let window = &text[start..end];
    let chars = |b: usize| text[start..b].chars().count();
    let matches = found
        .iter()
        .filter(|&&(s, _)| s < end)
        .map(|&(s, e)| [chars(s), chars(e.min(end))])
        .collect();
    Some((window.to_owned(), matches, (start > 0, end < text.len())))
}

/// Searches one file, calling `hit` for each matching field of each entry (in file order)
/// until it breaks. A file that is not a session (no header) has no hits. Lines that are
/// not JSON are skipped: a search reports what it can read.
pub fn search_file(
    path: &Path,
    q: &Query,
    mut hit: impl FnMut(Hit) -> ControlFlow<()>,
) -> std::io::Result<()> {
    let Some(header) = super::find::read_header(path) else {
        return Ok(());
    };
    let file = File::open(path)?;
    lines::each_line(&file, q.raw.as_ref(), |line| {
        let Ok(entry) = pi_base::json::to_value(line) else {
            return ControlFlow::Continue(());
        };
        let Some(base) = admitted(&entry, q, &header.id, path) else {
            return ControlFlow::Continue(());
        };
        for (field, text) in fields(&entry) {
            if let Some((snippet, matches, cut)) = snippet(&q.text, text) {
                hit(Hit {
                    field,
                    snippet,
                    matches,
                    cut,
                    ..base.clone()
                })?;
            }
        }
        ControlFlow::Continue(())
    })
}

/// The hit fields an entry shares, when the filters of `q` let it through.
fn admitted(entry: &Value, q: &Query, session: &str, path: &Path) -> Option<Hit> {
    let ty = entry.get("type").and_then(Value::as_str)?;
    if ty == "session" || (!q.types.is_empty() && !q.types.iter().any(|t| t == ty)) {
        return None;
    }
    let role = entry
        .get("message")
        .and_then(|m| m.get("role"))
        .and_then(Value::as_str);
    if !q.roles.is_empty() && !role.is_some_and(|r| q.roles.iter().any(|x| x.admits(r))) {
        return None;
    }
    let timestamp = entry.get("timestamp").and_then(Value::as_str);
    if q.since_ms.is_some() || q.until_ms.is_some() {
        let t = timestamp.and_then(pi_base::clock::parse_iso)?;
        if q.since_ms.is_some_and(|s| t < s) || q.until_ms.is_some_and(|u| t > u) {
            return None;
        }
    }
    Some(Hit {
        session: session.to_owned(),
        path: path.to_owned(),
        entry_id: entry.get("id").and_then(Value::as_str).map(str::to_owned),
        entry_type: ty.to_owned(),
        role: role.map(str::to_owned),
        timestamp: timestamp.map(str::to_owned),
        field: String::new(),
        snippet: String::new(),
        matches: Vec::new(),
        cut: (false, false),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn json_escaping_matches_what_writers_write() {
        let s = "a\"b\\c\td\u{1}é";
        let written = serde_json::to_string(s).unwrap();
        assert_eq!(format!("\"{}\"", json_escaped(s)), written);
    }

    #[test]
    fn snippets_keep_match_offsets_in_characters() {
        let re = Regex::new("needle").unwrap();
        let text = format!("{}ééneedle and needle{}", "x".repeat(100), "y".repeat(300));
        let (snip, m, cut) = snippet(&re, &text).unwrap();
        let chars: Vec<char> = snip.chars().collect();
        for [s, e] in &m {
            assert_eq!(chars[*s..*e].iter().collect::<String>(), "needle");
        }
        assert_eq!(m.len(), 2);
        assert_eq!(cut, (true, true));
        assert!(snippet(&re, "nothing").is_none());
    }

    #[test]
    fn fields_name_what_matched() {
        let e: Value = serde_json::json!({"type":"message","message":{"role":"assistant",
            "content":[{"type":"thinking","thinking":"t"},{"type":"toolCall","id":"c","name":"bash",
            "arguments":{"command":"ls"}}]}});
        let f = fields(&e);
        assert_eq!(
            f,
            vec![("thinking".into(), "t"), ("arguments.command".into(), "ls")]
        );
    }
}
