//! The two views of a run: the JSON event stream (one event per line on stdout, as the
//! reference's JSON mode prints it), and the human view (the assistant's text streamed to
//! stdout; on a terminal, a spinner with the running tool or the wait on stderr).

use std::borrow::Cow;
use std::io::{IsTerminal, Write};

use crate::output::{escape, escape_text};
use crate::progress::Spinner;
use pi_agent::agent::Observer;
use pi_agent::agent::event::Event;
use pi_ai;

/// JSON mode: every event as a line. A closed output stops the printing, not the run.
pub struct JsonLines<W: Write> {
    w: W,
    closed: bool,
}

impl<W: Write> JsonLines<W> {
    pub fn new(w: W) -> JsonLines<W> {
        JsonLines { w, closed: false }
    }

    /// Writes a line as it is (the session header that starts the stream).
    pub fn line(&mut self, bytes: &[u8]) {
        if self.closed {
            return;
        }
        let ok = self
            .w
            .write_all(bytes)
            .and_then(|()| self.w.write_all(b"\n"))
            .and_then(|()| self.w.flush());
        if ok.is_err() {
            self.closed = true;
        }
    }
}

impl<W: Write> Observer for JsonLines<W> {
    fn event(&mut self, e: &Event<'_>) {
        if let Some(line) = e.to_json() {
            self.line(&line);
        }
    }
}

/// The human view.
pub struct Human {
    /// Draws only when stderr is a terminal.
    spinner: Spinner,
    style: crate::output::Style,
    /// `provider/id` of the model, for the waiting status.
    model: String,
    /// Whether stdout is at the start of a line.
    at_line_start: bool,
    /// Whether stdout is a terminal: the answer's control characters are then escaped.
    escape_answer: bool,
    closed: bool,
}

/// The key argument of a tool call, on one line.
pub(crate) fn call_summary(name: &str, args: &serde_json::Value) -> String {
    let s = |k: &str| args.get(k).and_then(serde_json::Value::as_str);
    let text = match name {
        "bash" => s("command").map(str::to_owned),
        "grep" | "find" => s("pattern").map(|p| match s("path") {
            Some(path) => format!("{p} in {path}"),
            None => p.to_owned(),
        }),
        _ => s("path").or_else(|| s("file_path")).map(str::to_owned),
    };
    let text = text.unwrap_or_default();
    let mut lines = text.lines();
    let first = lines.next().unwrap_or_default().to_owned();
    if lines.next().is_some() {
        format!("{first} …")
    } else {
        first
    }
}

impl Human {
    /// Shows progress on stderr when it is a terminal.
    pub fn new(model: String) -> Human {
        Human {
            spinner: Spinner::new(),
            style: crate::output::Style {
                on: crate::output::color(std::io::stderr().is_terminal()),
            },
            model,
            at_line_start: true,
            escape_answer: std::io::stdout().is_terminal(),
            closed: false,
        }
    }

    fn status(&self, s: Option<String>) {
        match s {
            Some(s) => self.spinner.set_message(s),
            None => self.spinner.clear(),
        }
    }

    /// A line on stderr: above the spinner on a terminal, else as a `pi:` note. The
    /// line's text from the model, tools or files must already be escaped.
    fn note(&self, line: &str) {
        if self.spinner.is_active() {
            self.spinner.println(&self.style.dim(line));
        } else {
            crate::error::note(line);
        }
    }

    /// Writes model text to stdout (escaped on a terminal, newlines and tabs kept).
    fn out(&mut self, text: &str) {
        if self.closed || text.is_empty() {
            return;
        }
        let text = if self.escape_answer {
            escape_text(text)
        } else {
            Cow::Borrowed(text)
        };
        let mut o = std::io::stdout().lock();
        if o.write_all(text.as_bytes())
            .and_then(|()| o.flush())
            .is_err()
        {
            self.closed = true;
        }
        self.at_line_start = text.ends_with('\n');
    }

    fn end_line(&mut self) {
        if !self.at_line_start {
            self.out("\n");
        }
    }
}

impl Observer for Human {
    fn event(&mut self, e: &Event<'_>) {
        match e {
            Event::AgentStart | Event::TurnStart => {
                self.status(Some(format!("waiting for {}", self.model)));
            }
            Event::MessageUpdate { event, .. } => match event {
                pi_ai::Event::TextDelta { delta, .. } => {
                    self.status(None);
                    self.out(delta);
                }
                pi_ai::Event::ThinkingStart { .. } => self.status(Some("thinking".into())),
                pi_ai::Event::ToolCallStart { .. } => {
                    self.status(Some("preparing a tool call".into()));
                }
                _ => {}
            },
            Event::MessageEnd { message } if pi_agent::agent::store::is_assistant(message) => {
                self.end_line();
            }
            Event::ToolExecutionStart { name, args, .. } => {
                let line = format!(
                    "→ {}",
                    escape(&format!("{name} {}", call_summary(name, args)))
                );
                if self.spinner.is_active() {
                    self.spinner.println(&self.style.cyan(line.trim_end()));
                }
                self.status(Some(format!("running {}", escape(name))));
            }
            Event::ToolExecutionEnd {
                name,
                result,
                is_error: true,
                ..
            } if self.spinner.is_active() => {
                let text = result.text();
                let first = text.lines().find(|l| !l.trim().is_empty()).unwrap_or("");
                let line = escape(&format!("{name}: {first}")).into_owned();
                self.spinner
                    .println(&self.style.red(&format!("  ✗ {line}")));
            }
            Event::AgentEnd { .. } => self.status(None),
            Event::CompactionStart { reason } => {
                self.note(&format!("compacting the session ({})", reason.as_str()));
                self.status(Some("compacting".into()));
            }
            Event::CompactionEnd {
                result,
                aborted,
                error_message,
                ..
            } => {
                self.status(None);
                if let Some(r) = result {
                    self.note(&format!(
                        "compacted: {} tokens before; kept from entry {}",
                        pi_base::js::number(r.tokens_before),
                        escape(&r.first_kept_entry_id)
                    ));
                } else if let Some(e) = error_message {
                    crate::error::warn(&escape(e));
                } else if *aborted {
                    self.note("compaction cancelled");
                } else {
                    self.note("nothing to compact");
                }
            }
            Event::AutoRetryStart {
                attempt,
                max_attempts,
                delay_ms,
                error_message,
            } => {
                self.note(&format!(
                    "retrying in {:.1} s (attempt {attempt}/{max_attempts}) after: {}",
                    *delay_ms as f64 / 1000.0,
                    escape(error_message)
                ));
            }
            Event::ProviderRetry {
                attempt,
                max_retries,
                delay_ms,
                error,
            } => {
                self.note(&format!(
                    "sending the request again in {:.1} s ({attempt}/{max_retries}) after: {}",
                    *delay_ms as f64 / 1000.0,
                    escape(error)
                ));
            }
            _ => {}
        }
    }
}

/// What the model's answers of a run used, from their `usage`.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Totals {
    /// Input tokens, cached ones included.
    pub input: f64,
    /// Of those, read from the provider's cache.
    pub cached: f64,
    pub output: f64,
    /// `usage.cost.total`, in dollars.
    pub cost: f64,
}

impl Totals {
    /// Adds the usage of an assistant message.
    pub fn add(&mut self, message: &pi_agent::agent::Message) {
        let Some(u) = message.get("usage") else {
            return;
        };
        let n = |v: Option<&pi_ai::value::Value>| {
            v.and_then(pi_ai::value::Value::as_f64)
                .filter(|n| n.is_finite() && *n > 0.0)
                .unwrap_or(0.0)
        };
        self.input += n(u.get("input")) + n(u.get("cacheRead")) + n(u.get("cacheWrite"));
        self.cached += n(u.get("cacheRead"));
        self.output += n(u.get("output"));
        self.cost += n(u.get("cost").and_then(|c| c.get("total")));
    }

    /// The line a run ends with on a terminal: `1,234 tokens in (1,000 cached), 56 out ·
    /// $0.0123 · 4.2 s · session 019b7ca9` (`session`: its short id, `None` when nothing
    /// was recorded).
    pub fn line(&self, elapsed: std::time::Duration, session: Option<&str>) -> String {
        let cached = if self.cached > 0.0 {
            format!(" ({} cached)", thousands(self.cached))
        } else {
            String::new()
        };
        let secs = elapsed.as_secs_f64();
        let time = if secs < 60.0 {
            format!("{secs:.1} s")
        } else {
            let s = elapsed.as_secs();
            format!("{} min {:02} s", s / 60, s % 60)
        };
        let session = match session {
            Some(id) => format!("session {}", escape(id)),
            None => "no session recorded".to_owned(),
        };
        format!(
            "{} tokens in{cached}, {} out · ${:.4} · {time} · {session}",
            thousands(self.input),
            thousands(self.output),
            self.cost
        )
    }
}

/// `1234567` → `1,234,567`.
fn thousands(n: f64) -> String {
    let digits = format!("{}", n.max(0.0).round() as u64);
    let mut out = String::with_capacity(digits.len() + digits.len() / 3);
    for (k, c) in digits.chars().enumerate() {
        if k > 0 && (digits.len() - k) % 3 == 0 {
            out.push(',');
        }
        out.push(c);
    }
    out
}

/// A view that also counts what the answers of the run used.
pub struct Tally<O> {
    pub view: O,
    pub totals: Totals,
}

impl<O: Observer> Tally<O> {
    pub fn new(view: O) -> Tally<O> {
        Tally {
            view,
            totals: Totals::default(),
        }
    }
}

impl<O: Observer> Observer for Tally<O> {
    fn event(&mut self, e: &Event<'_>) {
        if let Event::MessageEnd { message } = e
            && pi_agent::agent::store::is_assistant(message)
        {
            self.totals.add(message);
        }
        self.view.event(e);
    }

    fn messages_changed(&mut self, messages: &[pi_agent::agent::Message]) {
        self.view.messages_changed(messages);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn totals_and_their_line() {
        let mut t = Totals::default();
        let m = |s: &str| pi_ai::value::Value::parse(s.as_bytes()).unwrap_or_default();
        t.add(&m(
            r#"{"role":"assistant","usage":{"input":1200,"output":30,"cacheRead":1000,"cacheWrite":34,"cost":{"total":0.0123}}}"#,
        ));
        t.add(&m(
            r#"{"role":"assistant","usage":{"input":10,"output":5}}"#,
        ));
        t.add(&m(r#"{"role":"assistant"}"#));
        assert_eq!(
            t.line(std::time::Duration::from_millis(4210), Some("019b7ca9")),
            "2,244 tokens in (1,000 cached), 35 out · $0.0123 · 4.2 s · session 019b7ca9"
        );
        assert_eq!(
            Totals::default().line(std::time::Duration::from_secs(125), None),
            "0 tokens in, 0 out · $0.0000 · 2 min 05 s · no session recorded"
        );
    }
}
