//! What `pi chat` shows of a run: the answer as it streams, thinking dimmed (or one line,
//! `hideThinkingBlock`), one line per tool call with its result summarised (the whole
//! output kept for `/show`), a footer after each prompt with tokens, cost and context use.
//! Everything from the model or tools is escaped; in a pipe nothing is styled.

use std::io::Write;
use std::sync::{Arc, Mutex};

use pi_agent::agent::event::Event;
use pi_agent::agent::{Message, Observer};
use pi_ai::value::Value;

use crate::output::{Style, escape, escape_text};
use crate::render::run::call_summary;

/// A tool call of the session, for `/show`.
#[derive(Debug, Clone)]
pub struct ToolRun {
    pub line: String,
    pub output: String,
}

/// What the view and the front end share.
#[derive(Debug, Default)]
pub struct Board {
    /// The tool calls shown so far, oldest first.
    pub tools: Vec<ToolRun>,
    /// The model's context window (0: unknown), for the footer.
    pub window: u64,
}

pub type SharedBoard = Arc<Mutex<Board>>;

pub fn lock(b: &SharedBoard) -> std::sync::MutexGuard<'_, Board> {
    b.lock().unwrap_or_else(|e| e.into_inner())
}

/// How the view writes.
#[derive(Debug, Clone, Copy)]
pub struct Look {
    /// A terminal: footer and thinking shown.
    pub tty: bool,
    pub color: bool,
    /// Thinking as one line rather than its text.
    pub hide_thinking: bool,
    /// Columns, for the tool lines.
    pub width: usize,
}

pub struct View {
    look: Look,
    st: Style,
    board: SharedBoard,
    at_line_start: bool,
    in_thinking: bool,
    /// Usage of the answers of the prompt being run: input (cached included), output, cost.
    tokens: (f64, f64, f64),
    /// Context size reported by the last answer.
    context: f64,
    answered: bool,
    /// The answer's line being streamed (escaped), and whether it is in a fenced block.
    cur: String,
    fence: bool,
}

impl View {
    pub fn new(look: Look, board: SharedBoard) -> View {
        View {
            look,
            st: Style { on: look.color },
            board,
            at_line_start: true,
            in_thinking: false,
            tokens: (0.0, 0.0, 0.0),
            context: 0.0,
            answered: false,
            cur: String::new(),
            fence: false,
        }
    }

    fn write(&mut self, s: &str) {
        if s.is_empty() {
            return;
        }
        let mut o = std::io::stdout().lock();
        let _ = o.write_all(s.as_bytes()).and_then(|()| o.flush());
        self.at_line_start = s.ends_with('\n');
    }

    fn end_line(&mut self) {
        if !self.at_line_start {
            self.write("\n");
        }
    }

    /// A line of its own.
    fn line(&mut self, s: &str) {
        self.end_line();
        self.write(&format!("{s}\n"));
    }

    /// Streams answer text. On a colored terminal each finished line is drawn again with
    /// its Markdown styled (when it fits on one row).
    fn answer(&mut self, delta: &str) {
        let t = escape_text(delta).into_owned();
        if !(self.look.tty && self.look.color) {
            self.write(&t);
            return;
        }
        let mut rest = t.as_str();
        while let Some(k) = rest.find('\n') {
            self.write(&rest[..k]);
            self.cur.push_str(&rest[..k]);
            self.finish_answer_line(true);
            rest = &rest[k + 1..];
        }
        self.write(rest);
        self.cur.push_str(rest);
    }

    /// Draws the line being streamed again, styled; `newline` ends it.
    fn finish_answer_line(&mut self, newline: bool) {
        let line = std::mem::take(&mut self.cur);
        let end = if newline { "\n" } else { "" };
        let fits = pi_base::text::width(&line) < self.look.width;
        if !line.is_empty() || newline {
            match styled_line(&line, &mut self.fence, &self.st) {
                Some(s) if fits && !line.is_empty() => self.write(&format!("\r\x1b[2K{s}{end}")),
                _ => self.write(end),
            }
        }
        if !newline {
            self.fence = false;
        }
    }

    fn thinking(&mut self, delta: &str) {
        if !self.look.tty {
            return;
        }
        if self.look.hide_thinking {
            if !self.in_thinking {
                self.in_thinking = true;
                let l = self.st.dim("thinking…");
                self.line(&l);
            }
            return;
        }
        if !self.in_thinking {
            self.in_thinking = true;
            self.end_line();
        }
        let text = self.st.dim(&escape_text(delta));
        self.write(&text);
    }

    fn usage(&mut self, m: &Message) {
        let Some(u) = m.get("usage") else {
            return;
        };
        let n = |k: &str| u.get(k).and_then(Value::as_f64).unwrap_or(0.0);
        self.tokens.0 += n("input") + n("cacheRead") + n("cacheWrite");
        self.tokens.1 += n("output");
        self.tokens.2 += u
            .get("cost")
            .and_then(|c| c.get("total"))
            .and_then(Value::as_f64)
            .unwrap_or(0.0);
        let size = pi_agent::context::tokens::context_tokens(u).0;
        if size > 0.0 {
            self.context = size;
        }
    }

    /// The footer after a prompt: `↑1,234 ↓56 · $0.0123 · context 3% of 200k`.
    fn footer(&mut self) -> String {
        let (i, o, c) = self.tokens;
        let window = lock(&self.board).window;
        let mut s = format!(
            "↑{} ↓{} · ${c:.4}",
            pi_base::js::number(i.round()),
            pi_base::js::number(o.round())
        );
        if window > 0 && self.context > 0.0 {
            let pct = self.context / window as f64 * 100.0;
            let pct = if pct < 1.0 {
                "<1".to_owned()
            } else {
                format!("{pct:.0}")
            };
            s.push_str(&format!(" · context {pct}% of {}", short_count(window)));
        }
        s
    }

    fn message_end(&mut self, m: &Message) {
        if !pi_agent::agent::store::is_assistant(m) {
            return;
        }
        self.usage(m);
        self.finish_answer_line(false);
        self.end_line();
        let reason = m.get("stopReason").and_then(Value::as_jstr);
        let reason = reason.map(|r| r.text().into_owned()).unwrap_or_default();
        if reason == "aborted" {
            let l = self.st.yellow("(aborted)");
            self.line(&l);
        } else if reason == "error" {
            let e = m
                .get("errorMessage")
                .and_then(Value::as_jstr)
                .map(|t| t.text().into_owned())
                .unwrap_or_else(|| "the model failed".into());
            let l = self.st.red(&format!("error: {}", escape(&e)));
            self.line(&l);
        }
    }

    fn compaction_end(
        &mut self,
        result: Option<&pi_agent::compact::CompactionResult>,
        aborted: bool,
        error_message: Option<&str>,
    ) {
        let l = if let Some(r) = result {
            format!(
                "compacted: {} tokens before; kept from entry {}",
                pi_base::js::number(r.tokens_before),
                escape(&r.first_kept_entry_id)
            )
        } else if let Some(e) = error_message {
            format!("compaction failed: {}", escape(e))
        } else if aborted {
            "compaction cancelled".into()
        } else {
            "nothing to compact".into()
        };
        let l = self.st.yellow(&l);
        self.write(&format!("{l}\n"));
        self.context = 0.0;
    }

    fn tool_start(&mut self, name: &str, args: &serde_json::Value) {
        let summary = call_summary(name, args);
        let text = escape(&format!("{name} {summary}")).trim_end().to_owned();
        let text = pi_base::text::truncate(&text, self.look.width.saturating_sub(2).max(20));
        let l = self.st.cyan(&format!("→ {text}"));
        self.line(&l);
        lock(&self.board).tools.push(ToolRun {
            line: text.to_string(),
            output: String::new(),
        });
    }

    fn tool_end(&mut self, name: &str, result: &pi_tools::ToolResult, is_error: bool) {
        let text = result.text();
        let summary = result_summary(name, &text, result.details.as_ref(), is_error);
        let k = {
            let mut b = lock(&self.board);
            if let Some(t) = b.tools.last_mut() {
                t.output = text;
            }
            b.tools.len()
        };
        let room = self.look.width.saturating_sub(4).max(20);
        let summary = pi_base::text::truncate(&escape(&summary), room).to_string();
        let mark = if is_error {
            self.st.red("✗")
        } else {
            self.st.green("✓")
        };
        let hint = self.st.dim(&format!(" (/show {k})"));
        self.line(&format!("  {mark} {}{hint}", self.st.dim(&summary)));
    }
}

/// A line of Markdown for the terminal: fences and code blocks green, headings bold,
/// list bullets as `•`, `**bold**` bold and `` `code` `` cyan; `None` when nothing changes.
fn styled_line(line: &str, fence: &mut bool, st: &Style) -> Option<String> {
    let green = anstyle::AnsiColor::Green.on_default();
    if line.trim_start().starts_with("```") {
        *fence = !*fence;
        return Some(st.paint(green, line));
    }
    if *fence {
        return Some(st.paint(green, line));
    }
    let body = line.trim_start();
    let indent = &line[..line.len() - body.len()];
    if body.starts_with('#') && body.trim_start_matches('#').starts_with(' ') {
        return Some(st.bold(line));
    }
    let (bullet, text) = match body.strip_prefix("- ").or_else(|| body.strip_prefix("* ")) {
        Some(t) => ("• ", t),
        None => ("", body),
    };
    let inline = inline_styles(text, st);
    if bullet.is_empty() && inline == text {
        return None;
    }
    Some(format!("{indent}{bullet}{inline}"))
}

/// `**bold**` and `` `code` `` of a line (unclosed markers stay as they are).
fn inline_styles(text: &str, st: &Style) -> String {
    let mut out = String::new();
    let mut rest = text;
    loop {
        let bold = rest.find("**");
        let code = rest.find('`');
        let (at, marker) = match (bold, code) {
            (Some(b), Some(c)) if c < b => (c, "`"),
            (Some(b), _) => (b, "**"),
            (None, Some(c)) => (c, "`"),
            (None, None) => break,
        };
        let after = &rest[at + marker.len()..];
        let Some(end) = after.find(marker).filter(|&e| e > 0) else {
            break;
        };
        out.push_str(&rest[..at]);
        let inner = &after[..end];
        if marker == "`" {
            out.push_str(&st.cyan(inner));
        } else {
            out.push_str(&st.bold(inner));
        }
        rest = &after[end + marker.len()..];
    }
    out.push_str(rest);
    out
}

/// `200000` → `200k`.
fn short_count(n: u64) -> String {
    if n >= 1_000_000 && n.is_multiple_of(1_000_000) {
        format!("{}M", n / 1_000_000)
    } else if n >= 1000 {
        format!("{}k", n / 1000)
    } else {
        n.to_string()
    }
}

/// A tool's result on one line: the exit code of `bash`, the lines added and removed by
/// `edit`, else the first line and how many follow.
fn result_summary(
    name: &str,
    text: &str,
    details: Option<&serde_json::Value>,
    is_error: bool,
) -> String {
    let lines: Vec<&str> = text.lines().filter(|l| !l.trim().is_empty()).collect();
    if name == "edit"
        && !is_error
        && let Some(diff) = details
            .and_then(|d| d.get("diff"))
            .and_then(serde_json::Value::as_str)
    {
        let added = diff.lines().filter(|l| l.starts_with('+')).count();
        let removed = diff.lines().filter(|l| l.starts_with('-')).count();
        return format!("edited: +{added} -{removed} lines");
    }
    let more = |n: usize| {
        if n > 1 {
            format!(" (+{} lines)", n - 1)
        } else {
            String::new()
        }
    };
    if name == "bash" {
        let code = lines
            .last()
            .and_then(|l| l.strip_prefix("Command exited with code "))
            .map(str::to_owned);
        let body: Vec<&&str> = lines
            .iter()
            .filter(|l| !l.starts_with("Command exited with code "))
            .collect();
        let first = body.first().map_or("(no output)", |l| **l);
        let exit = code.unwrap_or_else(|| if is_error { "?".into() } else { "0".into() });
        return format!("exit {exit} · {first}{}", more(body.len()));
    }
    match lines.first() {
        Some(first) => format!("{first}{}", more(lines.len())),
        None => "(no output)".into(),
    }
}

impl Observer for View {
    fn event(&mut self, e: &Event<'_>) {
        match e {
            Event::AgentStart => {
                self.tokens = (0.0, 0.0, 0.0);
                self.answered = false;
            }
            Event::MessageUpdate { event, .. } => match event {
                pi_ai::Event::TextDelta { delta, .. } => {
                    if self.in_thinking {
                        self.in_thinking = false;
                        self.end_line();
                    }
                    self.answered = true;
                    self.answer(delta);
                }
                pi_ai::Event::ThinkingDelta { delta, .. } => self.thinking(delta),
                pi_ai::Event::ThinkingEnd { .. } => {
                    if self.in_thinking && !self.look.hide_thinking {
                        self.end_line();
                    }
                    self.in_thinking = false;
                }
                _ => {}
            },
            Event::MessageEnd { message } => {
                self.in_thinking = false;
                self.message_end(message);
            }
            Event::ToolExecutionStart { name, args, .. } => self.tool_start(name, args),
            Event::ToolExecutionEnd {
                name,
                result,
                is_error,
                ..
            } => self.tool_end(name, result, *is_error),
            Event::AgentSettled { .. } => {
                self.end_line();
                if self.look.tty {
                    let f = self.footer();
                    let l = self.st.dim(&f);
                    self.line(&l);
                }
            }
            // One line: the start, then how it ended.
            Event::CompactionStart { reason } => {
                self.end_line();
                let l = self
                    .st
                    .yellow(&format!("compacting the session ({})… ", reason.as_str()));
                self.write(&l);
            }
            // A manual compaction's failure is its command's answer (the front end's).
            Event::CompactionEnd {
                reason,
                result: None,
                error_message: Some(_),
                ..
            } if reason.as_str() == "manual" => self.end_line(),
            Event::CompactionEnd {
                result,
                aborted,
                error_message,
                ..
            } => self.compaction_end(*result, *aborted, *error_message),
            Event::AutoRetryStart {
                attempt,
                max_attempts,
                delay_ms,
                error_message,
            } => {
                let l = format!(
                    "retrying in {:.1} s (attempt {attempt}/{max_attempts}) after: {}",
                    *delay_ms as f64 / 1000.0,
                    escape(error_message)
                );
                let l = self.st.yellow(&l);
                self.line(&l);
            }
            Event::ExtensionError { hook, error, .. } => {
                let l = self
                    .st
                    .red(&format!("hook {} failed: {}", escape(hook), escape(error)));
                self.line(&l);
            }
            _ => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn summaries() {
        assert_eq!(
            result_summary("bash", "a\nb\n\nCommand exited with code 3", None, true),
            "exit 3 · a (+1 lines)"
        );
        assert_eq!(result_summary("bash", "hi\n", None, false), "exit 0 · hi");
        let d = serde_json::json!({"diff": " 1 a\n-2 x\n+2 y\n+3 z"});
        assert_eq!(
            result_summary("edit", "ok", Some(&d), false),
            "edited: +2 -1 lines"
        );
        assert_eq!(result_summary("read", "", None, false), "(no output)");
        assert_eq!(
            call_summary("bash", &serde_json::json!({"command": "ls\npwd"})),
            "ls …"
        );
        let st = Style { on: true };
        let mut fence = false;
        assert_eq!(styled_line("plain text", &mut fence, &st), None);
        assert_eq!(
            styled_line("- a **b** `c`", &mut fence, &st).unwrap(),
            format!("• a {} {}", st.bold("b"), st.cyan("c"))
        );
        assert_eq!(
            styled_line("## Title", &mut fence, &st).unwrap(),
            st.bold("## Title")
        );
        assert!(styled_line("```rust", &mut fence, &st).is_some() && fence);
        assert!(styled_line("let **x** = 1;", &mut fence, &st).is_some());
        assert!(styled_line("```", &mut fence, &st).is_some() && !fence);
        assert_eq!(styled_line("a ** b", &mut fence, &st), None);
        assert_eq!(short_count(200_000), "200k");
        assert_eq!(short_count(1_000_000), "1M");
    }
}
