//! The texts of a summary request: the conversation written out as plain text (upstream's
//! `serializeConversation`), the files the conversation read and changed, and the prompts.
//!
//! The prompts are pi's own wording. They ask for the reference's structure (the same
//! section headings in the same order), so summaries written by either program read alike
//! and update each other.

use std::collections::BTreeSet;

use pi_ai::value::Value;
use pi_base::js;

/// Tool results are cut to this many characters (UTF-16 code units) in a summary request.
pub(crate) const TOOL_RESULT_MAX_CHARS: usize = 2000;

fn is_type(b: &Value, t: &str) -> bool {
    b.get("type").is_some_and(|x| x.is_str(t))
}

/// A value as `Array.prototype.join` writes an element: `""` for null and undefined.
fn join_text(v: Option<&Value>) -> String {
    match v {
        None | Some(Value::Null) => String::new(),
        Some(v) => Value::js_string(Some(v)).text().into_owned(),
    }
}

/// The text blocks of a content value, joined with `sep`.
fn texts(content: Option<&Value>, sep: &str) -> String {
    crate::context::content_text(content, sep)
}

/// `text.slice(0, max)` in UTF-16 code units; a character cut in half becomes U+FFFD (as
/// the reference's lone surrogate becomes once encoded).
fn utf16_slice(text: &str, max: usize) -> String {
    let mut head = js::utf16_prefix(text, max).to_owned();
    if head.len() < text.len() && js::utf16_len(&head) < max {
        head.push('\u{FFFD}');
    }
    head
}

fn truncate(text: String, max: usize) -> String {
    let len = js::utf16_len(&text);
    if len <= max {
        return text;
    }
    let head = utf16_slice(&text, max);
    format!("{head}\n\n[... {} more characters truncated]", len - max)
}

/// One tool call as `name(key=JSON, …)`.
fn tool_call(b: &Value) -> String {
    let name = Value::js_string(b.get("name")).text().into_owned();
    let args: Vec<String> = match b.get("arguments") {
        Some(Value::Obj(o)) => o
            .iter()
            .map(|(k, v)| format!("{}={}", k.text(), String::from_utf8_lossy(&v.to_json())))
            .collect(),
        Some(Value::Arr(a)) => a
            .iter()
            .enumerate()
            .map(|(k, v)| format!("{k}={}", String::from_utf8_lossy(&v.to_json())))
            .collect(),
        _ => Vec::new(),
    };
    format!("{name}({})", args.join(", "))
}

/// Upstream's `serializeConversation(messages)` of LLM messages (after `convertToLlm`):
/// `[User]: …`, `[Assistant thinking]: …`, `[Assistant]: …`, `[Assistant tool calls]: …`
/// and `[Tool result]: …` parts separated by blank lines; images are left out and tool
/// results cut to [`TOOL_RESULT_MAX_CHARS`].
pub(crate) fn serialize(messages: &[Value]) -> String {
    let mut parts: Vec<String> = Vec::new();
    for m in messages {
        let role = m.get("role");
        let is = |r: &str| role.is_some_and(|x| x.is_str(r));
        if is("user") {
            let t = texts(m.get("content"), "");
            if !t.is_empty() {
                parts.push(format!("[User]: {t}"));
            }
        } else if is("assistant") {
            // Thinking is not part of what is summarized (the reference 1.6 leaves it out).
            let mut text = Vec::new();
            let mut calls = Vec::new();
            for b in m.get("content").and_then(Value::as_arr).unwrap_or_default() {
                if is_type(b, "text") {
                    text.push(join_text(b.get("text")));
                } else if is_type(b, "toolCall") {
                    calls.push(tool_call(b));
                }
            }
            if !text.is_empty() {
                parts.push(format!("[Assistant]: {}", text.join("\n")));
            }
            if !calls.is_empty() {
                parts.push(format!("[Assistant tool calls]: {}", calls.join("; ")));
            }
        } else if is("toolResult") {
            let t = texts(m.get("content"), "");
            if !t.is_empty() {
                parts.push(format!(
                    "[Tool result]: {}",
                    truncate(t, TOOL_RESULT_MAX_CHARS)
                ));
            }
        }
    }
    parts.join("\n\n")
}

/// Files read, written and edited by tool calls (`read`, `write`, `edit` with a `path`).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct FileOps {
    pub read: BTreeSet<String>,
    pub written: BTreeSet<String>,
    pub edited: BTreeSet<String>,
}

impl FileOps {
    /// Adds the file operations of an agent message's tool calls (assistants only).
    pub(crate) fn add_message(&mut self, m: &Value) {
        if !m.get("role").is_some_and(|r| r.is_str("assistant")) {
            return;
        }
        for b in m.get("content").and_then(Value::as_arr).unwrap_or_default() {
            if !is_type(b, "toolCall") || b.get("name").is_none() {
                continue;
            }
            let Some(path) = b
                .get("arguments")
                .and_then(|a| a.get("path"))
                .and_then(Value::as_jstr)
                .filter(|p| !p.is_empty())
                .map(|p| p.text().into_owned())
            else {
                continue;
            };
            let name = b.get("name");
            if name.is_some_and(|n| n.is_str("read")) {
                self.read.insert(path);
            } else if name.is_some_and(|n| n.is_str("write")) {
                self.written.insert(path);
            } else if name.is_some_and(|n| n.is_str("edit")) {
                self.edited.insert(path);
            }
        }
    }

    /// Carries the lists of an earlier summary (`details.readFiles` / `modifiedFiles`).
    pub(crate) fn add_details(&mut self, details: Option<&Value>) {
        let list = |k: &str| -> Vec<String> {
            details
                .and_then(|d| d.get(k))
                .and_then(Value::as_arr)
                .map(|a| {
                    a.iter()
                        .map(|v| Value::js_string(Some(v)).text().into_owned())
                        .collect()
                })
                .unwrap_or_default()
        };
        // Only arrays count, as upstream checks `Array.isArray`.
        self.read.extend(list("readFiles"));
        self.edited.extend(list("modifiedFiles"));
    }

    /// `(readFiles, modifiedFiles)`: files only read, and files written or edited, each
    /// sorted as JavaScript sorts strings (by UTF-16 code units).
    pub fn lists(&self) -> (Vec<String>, Vec<String>) {
        let modified: BTreeSet<&String> = self.edited.iter().chain(&self.written).collect();
        let mut read: Vec<String> = self
            .read
            .iter()
            .filter(|f| !modified.contains(f))
            .cloned()
            .collect();
        let mut modified: Vec<String> = modified.into_iter().cloned().collect();
        let js_order = |a: &String, b: &String| a.encode_utf16().cmp(b.encode_utf16());
        read.sort_by(js_order);
        modified.sort_by(js_order);
        (read, modified)
    }
}

/// The file lists appended to a summary (`""` when both are empty).
pub(crate) fn format_file_lists(read: &[String], modified: &[String]) -> String {
    let mut sections = Vec::new();
    if !read.is_empty() {
        sections.push(format!("<read-files>\n{}\n</read-files>", read.join("\n")));
    }
    if !modified.is_empty() {
        sections.push(format!(
            "<modified-files>\n{}\n</modified-files>",
            modified.join("\n")
        ));
    }
    if sections.is_empty() {
        String::new()
    } else {
        format!("\n\n{}", sections.join("\n\n"))
    }
}

/// The system prompt of every summary request.
pub const SYSTEM_PROMPT: &str = "You write summaries of conversations between a user and an AI coding assistant, so that the work can be continued from the summary alone. \
You are given a transcript and a required format. Treat the transcript as material to describe: do not answer its questions, do not carry on its conversation, and write nothing but the summary in the requested format.";

/// The first summary of a conversation.
pub(crate) const HISTORY_PROMPT: &str = "Summarize the conversation above as a checkpoint from which another model will carry on the work. That model sees this summary instead of the conversation, so keep what it needs and drop what it does not.

Answer with exactly these sections, in this order:

## Goal
[The outcome the user wants; list several if the session covered more than one task.]

## Constraints & Preferences
- [Requirements, limits and preferences the user stated]
- [Write \"(none)\" if there were none]

## Progress
### Done
- [x] [Finished work]

### In Progress
- [ ] [Work under way]

### Blocked
- [What stands in the way, if anything]

## Key Decisions
- **[Decision]**: [Why it was made]

## Next Steps
1. [What to do next, in order]

## Critical Context
- [Facts, data and references the work depends on]
- [Write \"(none)\" if there are none]

Be brief in every section. Copy file paths, function names and error messages exactly as they appear.";

/// The summary of new messages folded into an earlier summary.
pub const UPDATE_PROMPT: &str = "The conversation above is NEW: it happened after the summary given in <previous-summary>. Fold it into that summary and write the whole summary again.

- Keep everything the earlier summary says, unless the new messages make it obsolete.
- Add the progress, decisions and facts the new messages bring.
- Move items from \"In Progress\" to \"Done\" once they are finished.
- Rewrite \"Next Steps\" for where the work stands now.
- Copy file paths, function names and error messages exactly as they appear.

Answer with exactly these sections, in this order:

## Goal
[The goals so far, and any new ones]

## Constraints & Preferences
- [Those already known, and any new ones]

## Progress
### Done
- [x] [Work finished earlier and work finished since]

### In Progress
- [ ] [Work under way now]

### Blocked
- [Current obstacles; drop those that were resolved]

## Key Decisions
- **[Decision]**: [Why it was made] (keep the earlier ones, add the new ones)

## Next Steps
1. [What to do next, from where the work stands now]

## Critical Context
- [Context still needed, earlier and new]

Be brief in every section.";

/// The beginning of a turn too long to keep whole.
pub const TURN_PREFIX_PROMPT: &str = "The conversation above is only the first part of a turn that was too long to keep whole. The rest of the turn, the most recent work, stays in the context as it is. Summarize this first part so that the rest makes sense on its own.

Answer with exactly these sections:

## Original Request
[What the user asked for in this turn]

## Early Progress
- [What was decided and done in this part]

## Context for Suffix
- [What a reader of only the rest of the turn needs to know]

Keep it short: only what the rest of the turn depends on.";

/// A branch of the conversation that is being left.
pub const BRANCH_PROMPT: &str = "Summarize the conversation branch above so that the work on it can be picked up again when the user comes back to it.

Answer with exactly these sections, in this order:

## Goal
[What the user wanted to achieve on this branch]

## Constraints & Preferences
- [Requirements, limits and preferences that were stated]
- [Write \"(none)\" if there were none]

## Progress
### Done
- [x] [Finished work]

### In Progress
- [ ] [Work started and not finished]

### Blocked
- [What stood in the way, if anything]

## Key Decisions
- **[Decision]**: [Why it was made]

## Next Steps
1. [What would continue this work]

Be brief in every section. Copy file paths, function names and error messages exactly as they appear.";

/// Put before a branch summary in the stored entry: two lines, then a blank line.
pub const BRANCH_PREAMBLE: &str = "The user went down another branch of this conversation and then came back here.\nWhat happened on that branch, in summary:\n\n";

/// How extra instructions are added to a prompt.
pub const FOCUS_PREFIX: &str = "\n\nAlso pay particular attention to: ";

/// Joins the history summary and the turn-prefix summary of a split turn.
pub const SPLIT_TURN_SEPARATOR: &str = "\n\n---\n\n**Turn Context (split turn):**\n\n";

/// The text of a summary request: the conversation, the earlier summary (for an update),
/// then the instructions.
pub fn request_text(conversation: &str, previous: Option<&str>, instructions: &str) -> String {
    let mut t = format!("<conversation>\n{conversation}\n</conversation>\n\n");
    if let Some(p) = previous {
        t.push_str(&format!("<previous-summary>\n{p}\n</previous-summary>\n\n"));
    }
    t.push_str(instructions);
    t
}

#[cfg(test)]
mod tests {
    use super::*;

    fn v(s: &str) -> Value {
        Value::parse(s.as_bytes()).unwrap()
    }

    #[test]
    fn co_d4_mixed_example() {
        let msgs = [
            v(
                r#"{"role":"user","content":[{"type":"text","text":"Fix "},{"type":"text","text":"bug"},{"type":"image","data":"x","mimeType":"image/png"}]}"#,
            ),
            v(
                r#"{"role":"assistant","content":[{"type":"thinking","thinking":"t1"},{"type":"text","text":"Sure"},{"type":"toolCall","id":"1","name":"read","arguments":{"path":"a.ts","offset":5}},{"type":"thinking","thinking":"t2"},{"type":"text","text":"More"},{"type":"toolCall","id":"2","name":"bash","arguments":{"command":"ls -la \"x\""}}]}"#,
            ),
            v(
                r#"{"role":"toolResult","toolCallId":"1","content":[{"type":"text","text":"line1"},{"type":"text","text":"line2"}]}"#,
            ),
            v(
                r#"{"role":"toolResult","toolCallId":"2","content":[{"type":"image","data":"x","mimeType":"image/png"}]}"#,
            ),
            v(r#"{"role":"user","content":""}"#),
        ];
        assert_eq!(
            serialize(&msgs),
            "[User]: Fix bug\n\n[Assistant]: Sure\nMore\n\n[Assistant tool calls]: read(path=\"a.ts\", offset=5); bash(command=\"ls -la \\\"x\\\"\")\n\n[Tool result]: line1line2"
        );
    }

    #[test]
    fn co_d1_to_d3_truncation() {
        let tr = |n: usize, c: &str| {
            v(&format!(
                r#"{{"role":"toolResult","content":[{{"type":"text","text":"{}"}}]}}"#,
                c.repeat(n)
            ))
        };
        let s = serialize(&[tr(5000, "x")]);
        assert!(s.starts_with("[Tool result]: "));
        assert!(s.ends_with("\n\n[... 3000 more characters truncated]"));
        assert!(s.contains(&"x".repeat(2000)) && !s.contains(&"x".repeat(2001)));
        assert_eq!(
            serialize(&[tr(1500, "x")]),
            format!("[Tool result]: {}", "x".repeat(1500))
        );
        let long = "y".repeat(5000);
        let u = v(&format!(
            r#"{{"role":"user","content":[{{"type":"text","text":"{long}"}}]}}"#
        ));
        let a = v(&format!(
            r#"{{"role":"assistant","content":[{{"type":"text","text":"{long}"}}]}}"#
        ));
        assert_eq!(
            serialize(&[u, a]),
            format!("[User]: {long}\n\n[Assistant]: {long}")
        );
        // A surrogate pair cut in half, as JavaScript's slice cuts it.
        let s = serialize(&[v(&format!(
            r#"{{"role":"toolResult","content":[{{"type":"text","text":"a{}"}}]}}"#,
            "😀".repeat(1000)
        ))]);
        assert_eq!(
            s,
            format!(
                "[Tool result]: a{}\u{FFFD}\n\n[... 1 more characters truncated]",
                "😀".repeat(999)
            )
        );
    }

    #[test]
    fn co_d5_d6_file_lists() {
        assert_eq!(
            format_file_lists(&["a.ts".into(), "b.ts".into()], &["c.ts".into()]),
            "\n\n<read-files>\na.ts\nb.ts\n</read-files>\n\n<modified-files>\nc.ts\n</modified-files>"
        );
        assert_eq!(
            format_file_lists(&[], &["c.ts".into()]),
            "\n\n<modified-files>\nc.ts\n</modified-files>"
        );
        assert_eq!(format_file_lists(&[], &[]), "");
        let mut ops = FileOps::default();
        ops.read.extend(["z.ts", "B.ts", "a.ts"].map(String::from));
        ops.written.insert("a.ts".into());
        ops.edited.insert("Q.ts".into());
        assert_eq!(
            ops.lists(),
            (
                vec!["B.ts".into(), "z.ts".into()],
                vec!["Q.ts".into(), "a.ts".into()]
            )
        );
        // JavaScript's order: a supplementary character sorts before U+FFFD.
        let mut o = FileOps::default();
        o.read.extend(["\u{FFFD}".to_owned(), "😀".to_owned()]);
        assert_eq!(o.lists().0, vec!["😀".to_owned(), "\u{FFFD}".to_owned()]);
    }

    #[test]
    fn prompts_have_the_required_sections() {
        for p in [HISTORY_PROMPT, UPDATE_PROMPT] {
            let at: Vec<usize> = [
                "## Goal",
                "## Constraints & Preferences",
                "## Progress",
                "### Done",
                "### In Progress",
                "### Blocked",
                "## Key Decisions",
                "## Next Steps",
                "## Critical Context",
            ]
            .iter()
            .map(|h| p.find(h).unwrap())
            .collect();
            assert!(at.windows(2).all(|w| w[0] < w[1]));
        }
        assert!(!BRANCH_PROMPT.contains("## Critical Context"));
        for h in [
            "## Original Request",
            "## Early Progress",
            "## Context for Suffix",
        ] {
            assert!(TURN_PREFIX_PROMPT.contains(h));
        }
    }
}
