//! The conversation as text: for a terminal (colours, wrapped to its width, text from the
//! file escaped) or for a pipe (plain, unwrapped, as written).

use std::io::{self, Write};

use super::wrap::{self, wrap_line};
use super::{Block, Body, Content, Item, Meta, Summary, ToolCall, ToolResult, datetime};
use crate::output::{Style, escape, escape_text};

/// What to show, and how.
#[derive(Debug, Clone, Copy, Default)]
pub struct Options {
    /// Whole tool results instead of their first lines.
    pub full: bool,
    /// Thinking blocks.
    pub thinking: bool,
    /// Tool calls and their results.
    pub tools: bool,
}

/// Lines of a tool result shown without `--full`.
pub const PREVIEW_LINES: usize = 5;

/// How the text reaches its reader.
#[derive(Debug, Clone, Copy)]
pub struct Terminal {
    /// Colours.
    pub color: bool,
    /// Escape control characters of file text (on a terminal).
    pub escape: bool,
    /// Wrap to this many columns (0: no wrapping).
    pub width: usize,
}

pub struct TextView<'w> {
    /// Every line fitted to the width (headers and notes; text is wrapped at words first).
    w: wrap::Fit<'w>,
    opts: Options,
    term: Terminal,
    st: Style,
    /// The date of the previous header (a time alone is shown on the same day).
    last_day: String,
}

impl<'w> TextView<'w> {
    pub fn new(w: &'w mut dyn Write, opts: Options, term: Terminal) -> TextView<'w> {
        TextView {
            w: wrap::Fit::new(w, term.width),
            opts,
            term,
            st: Style { on: term.color },
            last_day: String::new(),
        }
    }

    fn esc<'a>(&self, s: &'a str) -> std::borrow::Cow<'a, str> {
        if self.term.escape {
            escape(s)
        } else {
            std::borrow::Cow::Borrowed(s)
        }
    }

    /// Writes `text` (from the file) with every line prefixed by `indent`, wrapped.
    fn body(
        &mut self,
        text: &str,
        indent: &str,
        paint: impl Fn(&Style, &str) -> String,
    ) -> io::Result<()> {
        let text = if self.term.escape {
            escape_text(text)
        } else {
            std::borrow::Cow::Borrowed(text)
        };
        let text = wrap::expand_tabs(text.trim_end_matches('\n'));
        let max = if self.term.width == 0 {
            0
        } else {
            self.term.width.saturating_sub(wrap::width(indent)).max(20)
        };
        for line in text.split('\n') {
            for piece in wrap_line(line, max) {
                let painted = paint(&self.st, &piece);
                writeln!(self.w, "{}{}", self.st.dim(indent), painted)?;
            }
        }
        Ok(())
    }

    fn plain(&mut self, text: &str, indent: &str) -> io::Result<()> {
        self.body(text, indent, |_, s| s.to_owned())
    }

    /// `when · id [label]`, for headers.
    fn stamp(&mut self, meta: &Meta) -> String {
        let mut parts = Vec::new();
        if let Some(t) = meta.time {
            let dt = datetime(t);
            let (day, time) = dt.split_at(dt.find(' ').unwrap_or(0));
            if day == self.last_day {
                parts.push(time.trim().to_owned());
            } else {
                self.last_day = day.to_owned();
                parts.push(dt.clone());
            }
        }
        let mut s = self.st.dim(&parts.join(""));
        if !meta.id.is_empty() {
            if !s.is_empty() {
                s.push_str(&self.st.dim(" · "));
            }
            s.push_str(&self.st.yellow(&self.esc(&meta.id)));
        }
        if let Some(l) = &meta.label {
            s.push(' ');
            s.push_str(&self.st.magenta(&format!("[{}]", self.esc(l))));
        }
        if let Some(e) = meta.edit {
            s.push(' ');
            s.push_str(&self.st.dim(edit_mark(e)));
        }
        s
    }

    /// The session's name, directory and id.
    pub fn header(&mut self, s: &Summary) -> io::Result<()> {
        if let Some(n) = &s.name {
            let n = self.esc(n).into_owned();
            writeln!(self.w, "{}", self.st.bold(&n))?;
        }
        let mut parts = vec![self.esc(&s.cwd).into_owned()];
        if let Some(t) = s.created {
            parts.push(format!("{} UTC", datetime(t)));
        }
        parts.push(format!("session {}", self.esc(&s.session_id)));
        writeln!(self.w, "{}", self.st.dim(&parts.join(" · ")))?;
        Ok(())
    }

    /// Totals over what was shown.
    pub fn footer(&mut self, s: &Summary) -> io::Result<()> {
        writeln!(self.w)?;
        let mut parts = vec![
            count(s.user_messages, "user message"),
            count(s.assistant_messages, "assistant message"),
            count(s.tool_calls, "tool call"),
        ];
        parts.push(super::usage_line(&s.usage));
        if s.usage.cost == 0.0 {
            parts.push("$0".into());
        }
        let line = format!("total: {}", parts.join(" · "));
        writeln!(self.w, "{}", self.st.bold(&line))?;
        if !s.models.is_empty() {
            let models: Vec<String> = s.models.iter().map(|m| self.esc(m).into_owned()).collect();
            writeln!(
                self.w,
                "{}",
                self.st.dim(&format!("models: {}", models.join(", ")))
            )?;
        }
        Ok(())
    }

    /// Shows one item.
    pub fn item(&mut self, item: &Item) -> io::Result<()> {
        let meta = &item.meta;
        match &item.body {
            Body::User(c) => {
                let stamp = self.stamp(meta);
                writeln!(
                    self.w,
                    "\n{} {}",
                    self.st.green(&self.st.bold("user")),
                    stamp
                )?;
                self.content(c, "  ")?;
            }
            Body::Assistant(a) => {
                let stamp = self.stamp(meta);
                let model = if a.model.is_empty() {
                    String::new()
                } else {
                    format!(" {}", self.st.dim(&self.esc(&a.model)))
                };
                writeln!(
                    self.w,
                    "\n{}{} {}",
                    self.st.cyan(&self.st.bold("assistant")),
                    model,
                    stamp
                )?;
                for b in &a.blocks {
                    match b {
                        Block::Text(t) if !t.trim().is_empty() => self.plain(t, "  ")?,
                        Block::Text(_) => {}
                        Block::Thinking { text, redacted } if self.opts.thinking => {
                            writeln!(self.w, "  {}", self.st.dim("thinking:"))?;
                            if *redacted {
                                writeln!(
                                    self.w,
                                    "  {}",
                                    self.st.dim("│ (redacted by the provider)")
                                )?;
                            } else {
                                self.body(text, "  │ ", |st, s| st.dim(s))?;
                            }
                        }
                        Block::Thinking { .. } => {}
                        Block::ToolCall(c) if self.opts.tools => self.call(c)?,
                        Block::ToolCall(_) => {}
                    }
                }
                if let Some(e) = &a.error {
                    let e = format!("error: {}", self.esc(e));
                    writeln!(self.w, "  {}", self.st.red(&e))?;
                } else if a.stop_reason == "aborted" {
                    writeln!(self.w, "  {}", self.st.red("(aborted)"))?;
                }
                if let Some(u) = &a.usage {
                    writeln!(self.w, "  {}", self.st.dim(&super::usage_line(u)))?;
                }
            }
            Body::ToolResult(r) => {
                if self.opts.tools {
                    let stamp = self.stamp(meta);
                    writeln!(self.w, "\n{} {}", self.st.dim("tool result"), stamp)?;
                    let line = self.call_line(&r.name, "", Some(r));
                    writeln!(self.w, "{line}")?;
                    self.result(r)?;
                }
            }
            Body::Bash(b) => {
                let stamp = self.stamp(meta);
                let what = if b.excluded {
                    "user ran (not sent)"
                } else {
                    "user ran"
                };
                writeln!(self.w, "\n{} {}", self.st.green(&self.st.bold(what)), stamp)?;
                let cmd = format!("$ {}", self.esc(&super::one_line(&b.command)));
                writeln!(self.w, "  {}", self.st.bold(&cmd))?;
                self.output(&b.output, "    ", false)?;
                if b.cancelled {
                    writeln!(self.w, "    {}", self.st.red("(cancelled)"))?;
                } else if let Some(c) = b.exit_code.filter(|c| *c != 0.0) {
                    writeln!(self.w, "    {}", self.st.red(&format!("exit code {c}")))?;
                }
                if b.truncated {
                    writeln!(self.w, "    {}", self.st.dim("(output truncated)"))?;
                }
            }
            Body::CustomMessage {
                custom_type,
                content,
                display,
            } => {
                let stamp = self.stamp(meta);
                let name = format!("[{}]", self.esc(custom_type));
                let hidden = if *display { "" } else { " (not displayed)" };
                writeln!(
                    self.w,
                    "\n{}{} {}",
                    self.st.magenta(&name),
                    self.st.dim(hidden),
                    stamp
                )?;
                self.content(content, "  ")?;
            }
            Body::Compaction {
                summary,
                tokens_before,
                ..
            } => {
                let head = format!(
                    "┃ compaction: {} tokens summarized",
                    super::tokens(*tokens_before)
                );
                self.summary(meta, &head, summary)?;
            }
            Body::BranchSummary { summary, from_id } => {
                let from = if from_id.is_empty() {
                    String::new()
                } else {
                    format!(" (from {})", self.esc(from_id))
                };
                self.summary(meta, &format!("┃ branch summary{from}"), summary)?;
            }
            Body::ModelChange { provider, model_id } => {
                let m = format!("{}/{}", self.esc(provider), self.esc(model_id));
                self.note(meta, &format!("model → {m}"))?;
            }
            Body::ThinkingLevel(l) => {
                let l = self.esc(l).into_owned();
                self.note(meta, &format!("thinking level → {l}"))?;
            }
            Body::Label { target, label } => {
                let t = self.esc(target).into_owned();
                let text = match label {
                    Some(l) => format!("label \"{}\" on {t}", self.esc(l)),
                    None => format!("label cleared on {t}"),
                };
                self.note(meta, &text)?;
            }
            Body::SessionInfo(name) => {
                let text = match name {
                    Some(n) => format!("session named \"{}\"", self.esc(n)),
                    None => "session name cleared".to_owned(),
                };
                self.note(meta, &text)?;
            }
            Body::Custom(t) => {
                let t = self.esc(t).into_owned();
                self.note(meta, &format!("custom entry ({t})"))?;
            }
            Body::Note { head, text } => {
                let t = format!("{}: {}", self.esc(head), self.esc(text));
                self.note(meta, &t)?;
            }
            Body::Other(t) => {
                let t = self.esc(t).into_owned();
                self.note(meta, &format!("entry of type \"{t}\""))?;
            }
        }
        Ok(())
    }

    /// A summary (of a compaction or a branch): its heading `head` with the stamp, then
    /// its text behind `┃ `.
    fn summary(&mut self, meta: &Meta, head: &str, text: &str) -> io::Result<()> {
        let stamp = self.stamp(meta);
        writeln!(
            self.w,
            "\n{} {}",
            self.st.magenta(&self.st.bold(head)),
            stamp
        )?;
        self.plain(text, "┃ ")
    }

    fn note(&mut self, meta: &Meta, text: &str) -> io::Result<()> {
        let stamp = self.stamp(meta);
        writeln!(self.w, "\n{} {}", self.st.dim(&format!("· {text}")), stamp)
    }

    fn content(&mut self, c: &Content, indent: &str) -> io::Result<()> {
        let text = c.text();
        if !text.trim().is_empty() {
            self.plain(&text, indent)?;
        }
        for (mime, data) in c.images() {
            let line = format!("[image: {}, {}]", self.esc(mime), size(data.len() / 4 * 3));
            writeln!(self.w, "{indent}{}", self.st.dim(&line))?;
        }
        Ok(())
    }

    /// `  → name: key argument`, red with ✗ for an error result, dim `(no result)` without one.
    fn call_line(&self, name: &str, arg: &str, result: Option<&ToolResult>) -> String {
        let failed = result.is_some_and(|r| r.is_error);
        let mark = if failed { "✗" } else { "→" };
        let head = if arg.is_empty() {
            self.esc(name).into_owned()
        } else {
            format!("{}: {}", self.esc(name), self.esc(arg))
        };
        let head = if self.term.width > 0 {
            wrap::cut(&head, self.term.width.saturating_sub(4).max(20))
        } else {
            head
        };
        let mut line = if failed {
            format!("  {}", self.st.red(&format!("{mark} {head}")))
        } else {
            format!("  {} {}", self.st.cyan(mark), self.st.bold(&head))
        };
        if result.is_none() {
            line.push_str(&self.st.dim("  (no result)"));
        }
        line
    }

    fn call(&mut self, c: &ToolCall) -> io::Result<()> {
        let result = c.result();
        let line = self.call_line(&c.name, &c.key_arg(), result.map(|(_, r)| r));
        writeln!(self.w, "{line}")?;
        if let Some((_, r)) = result {
            self.result(r)?;
        }
        Ok(())
    }

    fn result(&mut self, r: &ToolResult) -> io::Result<()> {
        if let Some(d) = r.diff() {
            let d = d.to_owned();
            return self.output(&d, "    ", true);
        }
        let text = r.content.text();
        self.output(&text, "    ", false)?;
        for (mime, data) in r.content.images() {
            let line = format!("[image: {}, {}]", self.esc(mime), size(data.len() / 4 * 3));
            writeln!(self.w, "    {}", self.st.dim(&line))?;
        }
        Ok(())
    }

    /// Tool or command output: the first lines unless `--full`, then how many more.
    fn output(&mut self, text: &str, indent: &str, diff: bool) -> io::Result<()> {
        let text = text.trim_end_matches('\n');
        if text.is_empty() {
            return Ok(());
        }
        let lines: Vec<&str> = text.split('\n').collect();
        let shown = if self.opts.full {
            lines.len()
        } else {
            lines.len().min(PREVIEW_LINES)
        };
        for line in &lines[..shown] {
            let painted = |st: &Style, s: &str| -> String {
                if !diff {
                    return st.dim(s);
                }
                match s.as_bytes().first() {
                    Some(b'+') => st.green(s),
                    Some(b'-') => st.red(s),
                    _ => st.dim(s),
                }
            };
            if self.opts.full || self.term.width == 0 {
                self.body(line, indent, painted)?;
            } else {
                // Previews: one screen line per output line.
                let shown = if self.term.escape {
                    escape_text(line)
                } else {
                    std::borrow::Cow::Borrowed(*line)
                };
                let shown = wrap::expand_tabs(&shown);
                let max = self.term.width.saturating_sub(wrap::width(indent)).max(20);
                let cut = wrap::cut(&shown, max);
                writeln!(self.w, "{indent}{}", painted(&self.st, &cut))?;
            }
        }
        if shown < lines.len() {
            let more = lines.len() - shown;
            let s = format!(
                "… {} more line{} (--full shows them)",
                more,
                if more == 1 { "" } else { "s" }
            );
            writeln!(self.w, "{indent}{}", self.st.dim(&s))?;
        }
        Ok(())
    }
}

/// How `show` marks an entry a `context_edit` on the path changes.
pub(crate) fn edit_mark(e: super::Edit) -> &'static str {
    match e {
        super::Edit::Omitted => "(left out of the model's context)",
        super::Edit::Replaced => "(edited for the model)",
    }
}

fn count(n: usize, what: &str) -> String {
    format!("{n} {what}{}", if n == 1 { "" } else { "s" })
}

/// `512 B`, `12 KB`, `1.5 MB`.
pub fn size(bytes: usize) -> String {
    if bytes < 1024 {
        format!("{bytes} B")
    } else if bytes < 1024 * 1024 {
        format!("{} KB", bytes.div_ceil(1024))
    } else {
        format!("{:.1} MB", bytes as f64 / 1048576.0)
    }
}
