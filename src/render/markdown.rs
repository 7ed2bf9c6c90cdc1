//! The conversation as GitHub-flavoured Markdown, for pasting into an issue: a heading per
//! message, the messages' own Markdown as written, tool output in fenced blocks, thinking
//! in `<details>`.

use std::io::{self, Write};

use super::text::{Options, PREVIEW_LINES, size};
use super::{Block, Body, Content, Item, Meta, Summary, ToolCall, ToolResult, datetime};

pub struct MarkdownView<'w> {
    w: &'w mut dyn Write,
    opts: Options,
}

/// The length of the longest run of backticks in `text`.
fn longest_backticks(text: &str) -> usize {
    let mut longest = 0;
    let mut run = 0;
    for c in text.chars() {
        if c == '`' {
            run += 1;
            longest = longest.max(run);
        } else {
            run = 0;
        }
    }
    longest
}

/// A fence of backticks longer than any run of backticks in `text` (at least three).
pub fn fence_for(text: &str) -> String {
    "`".repeat((longest_backticks(text) + 1).max(3))
}

/// `text` as inline code, whatever backticks it holds.
pub fn code_span(text: &str) -> String {
    let text = super::one_line(text);
    let longest = longest_backticks(&text);
    let ticks = "`".repeat(longest + 1);
    if longest > 0 || text.starts_with(' ') || text.ends_with(' ') {
        format!("{ticks} {text} {ticks}")
    } else {
        format!("{ticks}{text}{ticks}")
    }
}

/// Text that must not start Markdown or HTML structure (names, labels): `\`-escaped.
pub fn escape_inline(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in super::one_line(s).chars() {
        if matches!(
            c,
            '\\' | '`' | '*' | '_' | '[' | ']' | '<' | '>' | '#' | '|' | '~' | '!' | '&'
        ) {
            out.push('\\');
        }
        out.push(c);
    }
    out
}

/// Text placed inside `<details>`: a closing tag in it must not end the block.
fn in_details(s: &str) -> String {
    s.replace("</details", "&lt;/details")
        .replace("</summary", "&lt;/summary")
}

impl<'w> MarkdownView<'w> {
    pub fn new(w: &'w mut dyn Write, opts: Options) -> MarkdownView<'w> {
        MarkdownView { w, opts }
    }

    pub fn header(&mut self, s: &Summary) -> io::Result<()> {
        let title = s.name.as_deref().unwrap_or("Session");
        writeln!(self.w, "# {}\n", escape_inline(title))?;
        let mut parts = vec![code_span(&s.cwd)];
        if let Some(t) = s.created {
            parts.push(format!("{} UTC", datetime(t)));
        }
        parts.push(format!("session {}", code_span(&s.session_id)));
        writeln!(self.w, "{}", parts.join(" · "))?;
        Ok(())
    }

    pub fn section(&mut self, title: &str) -> io::Result<()> {
        writeln!(self.w, "\n---\n\n# {}", escape_inline(title))
    }

    pub fn footer(&mut self, s: &Summary) -> io::Result<()> {
        writeln!(self.w, "\n---\n")?;
        let plural = |n: usize, w: &str| format!("{n} {w}{}", if n == 1 { "" } else { "s" });
        let mut line = format!(
            "**Total:** {} · {} · {} · {}",
            plural(s.user_messages, "user message"),
            plural(s.assistant_messages, "assistant message"),
            plural(s.tool_calls, "tool call"),
            super::usage_line(&s.usage)
        );
        if s.usage.cost == 0.0 {
            line.push_str(" · $0");
        }
        writeln!(self.w, "{line}")?;
        if !s.models.is_empty() {
            let models: Vec<String> = s.models.iter().map(|m| code_span(m)).collect();
            writeln!(self.w, "\n**Models:** {}", models.join(", "))?;
        }
        Ok(())
    }

    fn stamp(meta: &Meta) -> String {
        let mut parts = Vec::new();
        if let Some(t) = meta.time {
            parts.push(datetime(t));
        }
        if !meta.id.is_empty() {
            parts.push(code_span(&meta.id));
        }
        if let Some(l) = &meta.label {
            parts.push(format!("🏷 {}", escape_inline(l)));
        }
        if let Some(e) = meta.edit {
            parts.push(super::text::edit_mark(e).to_owned());
        }
        parts.join(" · ")
    }

    fn heading(&mut self, what: &str, meta: &Meta) -> io::Result<()> {
        let stamp = Self::stamp(meta);
        if stamp.is_empty() {
            writeln!(self.w, "\n### {what}")
        } else {
            writeln!(self.w, "\n### {what} · {stamp}")
        }
    }

    /// Every block starts with a blank line.
    fn text(&mut self, t: &str) -> io::Result<()> {
        writeln!(self.w, "\n{}", t.trim_end())
    }

    fn content(&mut self, c: &Content) -> io::Result<()> {
        self.content_with(c, Self::text)
    }

    /// The text of `c` written by `text` (unless blank), then a line for each image.
    fn content_with(
        &mut self,
        c: &Content,
        text: impl FnOnce(&mut Self, &str) -> io::Result<()>,
    ) -> io::Result<()> {
        let t = c.text();
        if !t.trim().is_empty() {
            text(self, &t)?;
        }
        for (mime, data) in c.images() {
            writeln!(
                self.w,
                "\n*[image: {}, {}]*",
                escape_inline(mime),
                size(data.len() / 4 * 3)
            )?;
        }
        Ok(())
    }

    fn fenced(&mut self, text: &str, lang: &str) -> io::Result<()> {
        let text = text.trim_end_matches('\n');
        let lines: Vec<&str> = text.split('\n').collect();
        let shown = if self.opts.full {
            lines.len()
        } else {
            lines.len().min(PREVIEW_LINES)
        };
        let body = lines[..shown].join("\n");
        let fence = fence_for(&body);
        writeln!(self.w, "\n{fence}{lang}\n{body}\n{fence}")?;
        if shown < lines.len() {
            let more = lines.len() - shown;
            writeln!(
                self.w,
                "*… {more} more line{}*",
                if more == 1 { "" } else { "s" }
            )?;
        }
        Ok(())
    }

    fn call(&mut self, c: &ToolCall) -> io::Result<()> {
        let result = c.result().map(|(_, r)| r);
        self.call_head(&c.name, &c.key_arg(), result)?;
        if let Some(r) = result {
            self.result(r)?;
        }
        Ok(())
    }

    fn call_head(&mut self, name: &str, arg: &str, r: Option<&ToolResult>) -> io::Result<()> {
        let mark = match r {
            Some(r) if r.is_error => " ❌ error",
            Some(_) => "",
            None => " *(no result)*",
        };
        if arg.is_empty() {
            writeln!(self.w, "\n**{}**{mark}", escape_inline(name))
        } else {
            writeln!(
                self.w,
                "\n**{}** {}{mark}",
                escape_inline(name),
                code_span(arg)
            )
        }
    }

    fn result(&mut self, r: &ToolResult) -> io::Result<()> {
        if let Some(d) = r.diff() {
            return self.fenced(d, "diff");
        }
        self.content_with(&r.content, |v, t| v.fenced(t, "text"))
    }

    fn note(&mut self, meta: &Meta, text: &str) -> io::Result<()> {
        writeln!(self.w, "\n*{text}* · {}", Self::stamp(meta))
    }

    fn quote(&mut self, head: &str, text: &str) -> io::Result<()> {
        writeln!(self.w, "\n> {head}\n>")?;
        for line in text.trim_end().split('\n') {
            if line.is_empty() {
                writeln!(self.w, ">")?;
            } else {
                writeln!(self.w, "> {line}")?;
            }
        }
        Ok(())
    }

    pub fn item(&mut self, item: &Item) -> io::Result<()> {
        let meta = &item.meta;
        match &item.body {
            Body::User(c) => {
                self.heading("👤 User", meta)?;
                self.content(c)?;
            }
            Body::Assistant(a) => {
                let what = if a.model.is_empty() {
                    "🤖 Assistant".to_owned()
                } else {
                    format!("🤖 Assistant ({})", escape_inline(&a.model))
                };
                self.heading(&what, meta)?;
                for b in &a.blocks {
                    match b {
                        Block::Text(t) if !t.trim().is_empty() => self.text(t)?,
                        Block::Thinking { text, redacted } if self.opts.thinking => {
                            let body = if *redacted {
                                "*(redacted by the provider)*".to_owned()
                            } else {
                                in_details(text.trim())
                            };
                            writeln!(
                                self.w,
                                "\n<details><summary>Thinking</summary>\n\n{body}\n\n</details>"
                            )?;
                        }
                        Block::ToolCall(c) if self.opts.tools => self.call(c)?,
                        _ => {}
                    }
                }
                if let Some(e) = &a.error {
                    writeln!(self.w, "\n**Error:** {}", escape_inline(e))?;
                } else if a.stop_reason == "aborted" {
                    writeln!(self.w, "\n*(aborted)*")?;
                }
                if let Some(u) = &a.usage {
                    writeln!(self.w, "\n<sub>{}</sub>", super::usage_line(u))?;
                }
            }
            Body::ToolResult(r) => {
                if self.opts.tools {
                    self.heading("🔧 Tool result", meta)?;
                    self.call_head(&r.name, "", Some(r))?;
                    self.result(r)?;
                }
            }
            Body::Bash(b) => {
                self.heading("👤 User ran", meta)?;
                writeln!(self.w, "\n{}", code_span(&format!("$ {}", b.command)))?;
                let mut out = b.output.clone();
                if b.cancelled {
                    out.push_str("\n(cancelled)");
                } else if let Some(c) = b.exit_code.filter(|c| *c != 0.0) {
                    out.push_str(&format!("\n(exit code {c})"));
                }
                if !out.trim().is_empty() {
                    self.fenced(&out, "text")?;
                }
            }
            Body::CustomMessage {
                custom_type,
                content,
                ..
            } => {
                self.heading(&format!("🧩 {}", escape_inline(custom_type)), meta)?;
                self.content(content)?;
            }
            Body::Compaction {
                summary,
                tokens_before,
                ..
            } => {
                let head = format!(
                    "**Compaction** · {} tokens summarized · {}",
                    super::tokens(*tokens_before),
                    Self::stamp(meta)
                );
                self.quote(&head, summary)?;
            }
            Body::BranchSummary { summary, .. } => {
                let head = format!("**Branch summary** · {}", Self::stamp(meta));
                self.quote(&head, summary)?;
            }
            Body::ModelChange { provider, model_id } => {
                let m = code_span(&format!("{provider}/{model_id}"));
                self.note(meta, &format!("model → {m}"))?;
            }
            Body::ThinkingLevel(l) => {
                self.note(meta, &format!("thinking level → {}", code_span(l)))?
            }
            Body::Label { target, label } => {
                let text = match label {
                    Some(l) => format!("label “{}” on {}", escape_inline(l), code_span(target)),
                    None => format!("label cleared on {}", code_span(target)),
                };
                self.note(meta, &text)?;
            }
            Body::SessionInfo(n) => {
                let text = match n {
                    Some(n) => format!("session named “{}”", escape_inline(n)),
                    None => "session name cleared".to_owned(),
                };
                self.note(meta, &text)?;
            }
            Body::Custom(t) => self.note(meta, &format!("custom entry {}", code_span(t)))?,
            Body::Note { head, text } => self.note(
                meta,
                &format!("{}: {}", escape_inline(head), escape_inline(text)),
            )?,
            Body::Other(t) => self.note(meta, &format!("entry of type {}", code_span(t)))?,
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fences_and_spans_outgrow_their_content() {
        assert_eq!(fence_for("plain"), "```");
        assert_eq!(fence_for("a ```` b"), "`````");
        assert_eq!(code_span("ls"), "`ls`");
        assert_eq!(code_span("a`b"), "`` a`b ``");
        assert_eq!(escape_inline("<b>*x*</b>"), "\\<b\\>\\*x\\*\\</b\\>");
    }
}
