//! Asking a model for the summaries (upstream's `generateSummary`, the turn-prefix summary,
//! `compact` and `generateBranchSummary`), with pi's prompts.

use super::prepare::{Plan, Span};
use super::text::{self, FileOps};
use crate::context::llm;
use pi_ai::value::{Obj, Value};
use pi_ai::{Client, Event, LlmError, Options, Request, Target, Usage};

/// A model to summarize with, and how to call it.
pub struct Summarizer<'a> {
    pub client: &'a Client,
    pub target: &'a Target,
    /// Key, headers and retries (the token limit and reasoning are set per request).
    pub options: Options,
    /// The session's thinking level: sent with history and turn-prefix summaries to
    /// models with reasoning (unless `off`).
    pub thinking_level: Option<String>,
    /// Told about every event of every call (calls may run at the same time).
    pub progress: &'a dyn Fn(&Event),
}

/// Why a summary could not be written.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum SummaryError {
    /// The call failed (`what`: `Summarization`, `Turn prefix summarization`, `Branch
    /// summarization`).
    #[error("{what} failed: {error}")]
    Failed { what: &'static str, error: LlmError },
    /// An empty summary would replace the history by nothing.
    #[error("{what} failed: the model returned no text")]
    Empty { what: &'static str },
    /// The answer stopped at the output limit: a summary cut short is not saved.
    #[error(
        "{what} failed: the answer reached the model's output limit, so the summary is incomplete"
    )]
    Truncated { what: &'static str },
    /// The model called a tool instead of writing the summary.
    #[error("{what} failed: the model called a tool instead of writing a summary")]
    ToolCall { what: &'static str },
}

impl SummaryError {
    pub fn is_overflow(&self) -> bool {
        matches!(self, SummaryError::Failed { error, .. } if error.is_overflow())
    }

    pub fn is_auth(&self) -> bool {
        matches!(self, SummaryError::Failed { error, .. } if error.is_auth())
    }

    /// The model could not be reached: no connection, or no answer in time, after the
    /// retries (the messages `pi_ai::Client` gives these failures). A run over many
    /// sessions takes a few of these in a row to mean the model is down.
    pub(crate) fn is_unreachable(&self) -> bool {
        matches!(self, SummaryError::Failed { error, .. }
            if error.status.is_none()
                && (error.message.starts_with("Connection error.")
                    || error.message.starts_with("Request timed out")))
    }
}

/// A finished compaction, ready to be written.
#[derive(Debug, Clone, PartialEq)]
pub struct Compaction {
    pub summary: String,
    pub first_kept_entry_id: String,
    pub tokens_before: f64,
    /// The prompt and tools in effect, replayed from the context's system messages (saved
    /// as the entry's `systemMessage`).
    pub system: Option<Value>,
    pub read_files: Vec<String>,
    pub modified_files: Vec<String>,
    /// The summary requests' usage, summed (zero when no request was made).
    pub usage: Usage,
}

/// The user message of a summary request.
pub fn request(prompt: &str) -> Request {
    let mut block = Obj::new();
    block.set("type", Value::str("text"));
    block.set("text", Value::str(prompt));
    let mut m = Obj::new();
    m.set("role", Value::str("user"));
    m.set("content", Value::Arr(vec![Value::Obj(block)]));
    m.set("timestamp", Value::Num(pi_base::clock::now_ms() as f64));
    Request {
        system_prompt: Some(text::SYSTEM_PROMPT.to_owned()),
        messages: vec![Value::Obj(m)],
        tools: Vec::new(),
    }
}

/// The conversation of agent messages as summary text.
pub fn conversation(messages: &[Value]) -> String {
    text::serialize(&llm::convert(messages, false))
}

/// The conversation of a span, saying first how many older messages did not fit in the
/// request (when any did not).
fn span_text(span: &Span) -> String {
    let text = conversation(&span.messages);
    match span.omitted {
        0 => text,
        n => format!(
            "[{n} older message{} of this part did not fit in this request and are not shown.]\n\n{text}",
            if n == 1 { "" } else { "s" }
        ),
    }
}

/// The prompt of a history summary (initial, or an update of `previous`).
pub(crate) fn history_prompt(
    span: &Span,
    previous: Option<&str>,
    instructions: Option<&str>,
) -> String {
    let previous = previous.filter(|p| !p.is_empty());
    let mut base = if previous.is_some() {
        text::UPDATE_PROMPT.to_owned()
    } else {
        text::HISTORY_PROMPT.to_owned()
    };
    if let Some(i) = instructions.filter(|i| !i.is_empty()) {
        base.push_str(text::FOCUS_PREFIX);
        base.push_str(i);
    }
    text::request_text(&span_text(span), previous, &base)
}

/// The prompt of a turn-prefix summary.
pub(crate) fn turn_prefix_prompt(span: &Span) -> String {
    text::request_text(&span_text(span), None, text::TURN_PREFIX_PROMPT)
}

impl Summarizer<'_> {
    /// The options of one request for `prompt`: the model's output limit (`maxTokens`, as
    /// the reference 1.6 sizes summaries), or `max_tokens` when the limit is not known; never
    /// more than the model's window leaves after the request (its text estimated at four
    /// bytes a token), so that a small local model is not asked for what it must refuse.
    fn options(&self, max_tokens: u64, reasoning: bool, prompt: &str) -> Options {
        let mut o = self.options.clone();
        let model_max = self.target.model.max_tokens;
        let mut max = if model_max > 0 { model_max } else { max_tokens };
        let window = self.target.model.context_window;
        if window > 0 {
            let input = (prompt.len() + text::SYSTEM_PROMPT.len()).div_ceil(4) as u64;
            max = max.min(window.saturating_sub(input).max(1));
        }
        o.max_tokens = Some(max);
        o.reasoning = if reasoning && self.target.model.reasoning {
            self.thinking_level.clone().filter(|l| l != "off")
        } else {
            None
        };
        o
    }

    async fn call(
        &self,
        prompt: String,
        opts: Options,
        what: &'static str,
    ) -> Result<(String, Usage), SummaryError> {
        let req = request(&prompt);
        let progress = self.progress;
        let mut sink = |e: &Event, _: &pi_ai::AssistantMessage| progress(e);
        let reply = self
            .client
            .stream(self.target, &req, &opts, &mut sink)
            .await;
        if let Some(error) = reply.error() {
            return Err(SummaryError::Failed { what, error });
        }
        if reply.stop_reason == pi_ai::StopReason::Length {
            return Err(SummaryError::Truncated { what });
        }
        if reply
            .content
            .iter()
            .any(|b| matches!(b, pi_ai::Block::ToolCall { .. }))
        {
            return Err(SummaryError::ToolCall { what });
        }
        let text = reply.text();
        if text.trim().is_empty() {
            return Err(SummaryError::Empty { what });
        }
        Ok((text, reply.usage))
    }

    /// The summary of a plan (upstream's `compact`): the history summary, and for a split
    /// turn the turn-prefix summary requested at the same time; then the file lists.
    pub async fn compact(
        &self,
        plan: &Plan,
        instructions: Option<&str>,
    ) -> Result<Compaction, SummaryError> {
        let reserve = plan.budget.reserve_tokens;
        let history_tokens = (0.8 * reserve as f64).floor() as u64;
        let history = async {
            if plan.split_turn
                && !plan.turn_prefix.messages.is_empty()
                && plan.history.messages.is_empty()
            {
                // Nothing before the turn: carry the earlier summary (the reference writes
                // "No prior history." and loses it).
                let carried = plan
                    .previous_summary
                    .clone()
                    .filter(|p| !p.is_empty())
                    .unwrap_or_else(|| "No prior history.".to_owned());
                return Ok((carried, Usage::default()));
            }
            let prompt = history_prompt(
                &plan.history,
                plan.previous_summary.as_deref(),
                instructions,
            );
            let opts = self.options(history_tokens, true, &prompt);
            self.call(prompt, opts, "Summarization").await
        };
        let (summary, usage) = if plan.split_turn && !plan.turn_prefix.messages.is_empty() {
            let prefix_tokens = (0.5 * reserve as f64).floor() as u64;
            let prompt = turn_prefix_prompt(&plan.turn_prefix);
            let opts = self.options(prefix_tokens, true, &prompt);
            let prefix = self.call(prompt, opts, "Turn prefix summarization");
            let (h, p) = tokio::join!(history, prefix);
            let ((h, mut usage), (p, prefix_usage)) = (h?, p?);
            usage.add(&prefix_usage);
            (format!("{h}{}{p}", text::SPLIT_TURN_SEPARATOR), usage)
        } else {
            history.await?
        };
        let mut c = finish(plan, summary);
        c.usage = usage;
        Ok(c)
    }

    /// A branch summary (upstream's `generateBranchSummary`), or `None` when the branch has
    /// no messages (the summary is then "No content to summarize").
    pub async fn branch(
        &self,
        messages: &[Value],
        file_ops: &FileOps,
        instructions: Option<&str>,
    ) -> Result<(String, Vec<String>, Vec<String>, Usage), SummaryError> {
        if messages.is_empty() {
            return Ok((
                "No content to summarize".to_owned(),
                Vec::new(),
                Vec::new(),
                Usage::default(),
            ));
        }
        let mut prompt_text = text::BRANCH_PROMPT.to_owned();
        if let Some(i) = instructions.filter(|i| !i.is_empty()) {
            prompt_text.push_str(text::FOCUS_PREFIX);
            prompt_text.push_str(i);
        }
        let prompt = text::request_text(&conversation(messages), None, &prompt_text);
        let opts = self.options(2048, true, &prompt);
        let (text, usage) = self.call(prompt, opts, "Branch summarization").await?;
        let (read, modified) = file_ops.lists();
        let mut summary = format!("{}{text}", text::BRANCH_PREAMBLE);
        summary.push_str(&text::format_file_lists(&read, &modified));
        Ok((summary, read, modified, usage))
    }
}

/// A compaction from a summary: the file lists appended, as the reference appends them.
pub fn finish(plan: &Plan, mut summary: String) -> Compaction {
    let (read, modified) = plan.file_ops.lists();
    summary.push_str(&text::format_file_lists(&read, &modified));
    Compaction {
        summary,
        first_kept_entry_id: plan.first_kept_entry_id.clone(),
        tokens_before: plan.tokens_before,
        system: plan.system.clone(),
        read_files: read,
        modified_files: modified,
        usage: Usage::default(),
    }
}
