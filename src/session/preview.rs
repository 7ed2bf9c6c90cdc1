//! One-line previews of entries, for the tree view and listings.

use crate::json::{self, Kind as JsonKind, Member, RawStr};

/// Longest preview kept, in characters.
pub const MAX: usize = 200;

fn field<'a>(line: &'a [u8], members: &[Member<'_>], key: &str) -> Option<&'a [u8]> {
    members
        .iter()
        .rev()
        .find(|m| m.key.eq_str(key))
        .map(|m| &line[m.value_start..m.value_end])
}

fn string(v: Option<&[u8]>) -> Option<String> {
    v.and_then(RawStr::from_value)
        .map(|s| s.decode().into_owned())
}

/// Collapses whitespace runs (newlines, tabs) to single spaces and trims.
pub fn normalize(s: &str) -> String {
    let mut out = String::with_capacity(s.len().min(MAX * 4));
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

/// The text of a content value: a string, or the `text` blocks joined with `sep`.
pub fn content_text(content: &[u8], sep: &str, limit: usize) -> String {
    match JsonKind::of(content) {
        Some(JsonKind::String) => string(Some(content)).unwrap_or_default(),
        Some(JsonKind::Array) => {
            let mut out = String::new();
            let mut first = true;
            let _ = json::for_each_element(content, |block| {
                if out.len() > limit {
                    return;
                }
                if json::get_str(block, "type").as_deref() == Some("text")
                    && let Some(t) = json::get_str(block, "text")
                {
                    if !first {
                        out.push_str(sep);
                    }
                    first = false;
                    out.push_str(&t);
                }
            });
            out
        }
        _ => String::new(),
    }
}

fn tool_calls(content: &[u8]) -> String {
    let mut calls = Vec::new();
    let _ = json::for_each_element(content, |block| {
        if json::get_str(block, "type").as_deref() == Some("toolCall") {
            let name = json::get_str(block, "name")
                .unwrap_or_default()
                .into_owned();
            let args = json::get(block, "arguments")
                .map(args_summary)
                .unwrap_or_default();
            calls.push(if args.is_empty() {
                name
            } else {
                format!("{name} {args}")
            });
        }
    });
    calls.join(", ")
}

/// The most telling argument of a tool call (a path, a command, a pattern).
fn args_summary(args: &[u8]) -> String {
    for key in ["path", "command", "pattern", "file_path", "query", "url"] {
        if let Some(v) = json::get_str(args, key) {
            return normalize(&v);
        }
    }
    String::new()
}

/// A message's role, if the entry is a message.
pub fn role(line: &[u8], members: &[Member<'_>]) -> Option<String> {
    field(line, members, "message").and_then(|m| json::get_str(m, "role").map(|r| r.into_owned()))
}

/// A one-line description of an entry: `user: …`, `assistant: …`, `[compaction: 12k tokens]`.
pub fn preview(ty: &str, line: &[u8], members: &[Member<'_>]) -> String {
    let text = match ty {
        "message" => {
            let Some(msg) = field(line, members, "message") else {
                return "[message]".into();
            };
            let role = json::get_str(msg, "role").unwrap_or_default().into_owned();
            let content = json::get(msg, "content").unwrap_or(b"null");
            match role.as_str() {
                "user" => format!("user: {}", normalize(&content_text(content, "", MAX * 4))),
                "assistant" => {
                    let t = normalize(&content_text(content, " ", MAX * 4));
                    let calls = tool_calls(content);
                    let stop = json::get_str(msg, "stopReason").unwrap_or_default();
                    let body = match (t.is_empty(), calls.is_empty()) {
                        (false, true) => t,
                        (false, false) => format!("{t} → {calls}"),
                        (true, false) => format!("→ {calls}"),
                        (true, true) if stop == "aborted" => "(aborted)".into(),
                        (true, true) => match json::get_str(msg, "errorMessage") {
                            Some(e) => format!("error: {}", normalize(&e)),
                            None => "(no content)".into(),
                        },
                    };
                    format!("assistant: {body}")
                }
                "toolResult" => {
                    let name = json::get_str(msg, "toolName").unwrap_or_default();
                    let out = normalize(&content_text(content, " ", MAX * 4));
                    let err = json::get(msg, "isError") == Some(b"true");
                    format!("[{name}]{} {out}", if err { " error:" } else { "" })
                }
                "bashExecution" => format!(
                    "[bash]: {}",
                    normalize(&json::get_str(msg, "command").unwrap_or_default())
                ),
                "custom" => format!(
                    "[{}]: {}",
                    json::get_str(msg, "customType").unwrap_or_default(),
                    normalize(&content_text(content, "", MAX * 4))
                ),
                r => format!("[{r}]"),
            }
        }
        "custom_message" => format!(
            "[{}]: {}",
            string(field(line, members, "customType")).unwrap_or_default(),
            normalize(&content_text(
                field(line, members, "content").unwrap_or(b"null"),
                "",
                MAX * 4
            ))
        ),
        "compaction" => {
            let t = field(line, members, "tokensBefore")
                .and_then(json::number)
                .unwrap_or(0.0);
            format!("[compaction: {}k tokens]", (t / 1000.0).round())
        }
        "branch_summary" => format!(
            "[branch summary]: {}",
            normalize(&string(field(line, members, "summary")).unwrap_or_default())
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
    crate::output::truncate(&text, MAX)
}
