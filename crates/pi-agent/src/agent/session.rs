//! The agent session: the state of a run (the context's agent messages, the model, the
//! tools, the session file) and what happens around the loop, as upstream's `AgentSession`
//! does it: prompts, recording every finished message, automatic retries of transient
//! provider errors, and automatic compaction (before a prompt and after a run, at the
//! threshold; after a context overflow, with one retry), manual compaction (RPC
//! `compact`), and what hooks ask for besides their answers (entries, custom messages).

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use super::event::{Event, assistant_value};
use super::hooks::{self, Hooks, Queue};
use super::settings::Settings;
use super::store::{FileStore, file_details, is_assistant, role};
use super::{Message, Observer};
use crate::compact::{Budget, NoPlan, Summarizer};
use crate::compact::{Compact, CompactionReason, CompactionResult};
use crate::context::tokens;
use pi_ai::models::Registry;
use pi_ai::value::{Obj, Value};
use pi_ai::{
    AssistantMessage, Client, Options, StopReason, Target, ToolChoice, Usage, auth, overflow,
};
use pi_base::js;
use pi_session::entry::jstr;
use pi_tools::{CancelToken, Tool, ToolContext};

/// The text of `compaction_end.errorMessage` when an overflow comes back after one
/// compaction and retry.
pub(crate) const OVERFLOW_RECOVERY_FAILED: &str = "Context overflow recovery failed after one compact-and-retry attempt. Try reducing context or switching to a larger-context model.";

/// Keys and headers, resolved for every request (upstream re-reads them each time, so
/// `!command` keys and headers may change between requests).
pub struct Credentials {
    pub agent_dir: PathBuf,
    pub registry: Registry,
}

impl Credentials {
    /// `base` with the key, headers and secrets of a request to `target`.
    pub fn options(&self, target: &Target, base: &Options) -> Result<Options, auth::AuthError> {
        let a = auth::resolve(
            &self.agent_dir,
            &self.registry,
            &target.model,
            &target.details,
        )?;
        let mut o = base.clone();
        o.api_key = a.api_key;
        o.headers = a.headers;
        o.secrets = a.secrets;
        Ok(o)
    }
}

/// How tool calls of one response run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum ToolExecution {
    /// All at once (each reports its end when it finishes; results are recorded in call
    /// order).
    #[default]
    Parallel,
    /// One after another.
    Sequential,
}

/// What a run works with.
pub struct Config {
    pub target: Target,
    /// The effective thinking level (`off` … `xhigh`).
    pub thinking_level: String,
    /// The system prompt as text (what hooks see and may replace).
    pub system_prompt: String,
    /// The same prompt as named sections, recorded in the session as system messages
    /// (see [`super::loadout`]).
    pub system_sections: Vec<(String, String)>,
    /// The active tools (built-in and program tools), in order.
    pub tools: Vec<Tool>,
    pub tool_ctx: Arc<ToolContext>,
    pub tool_execution: ToolExecution,
    pub settings: Settings,
    /// Options of every request (retries, thinking budgets); key and headers are added per
    /// request from `credentials`.
    pub options: Options,
    pub credentials: Credentials,
    /// Stop after this many answers (the tools of the last one still run).
    pub max_turns: Option<u32>,
    /// Sent with every request (`None`: the provider's default, `auto`).
    pub tool_choice: Option<ToolChoice>,
}

/// Expands templates and skills in a prompt (an error stops the prompt).
pub type Expander = Box<dyn Fn(&str) -> Result<String, String>>;

/// How a prompt (or a continuation) ended.
#[derive(Debug, Clone, PartialEq)]
pub enum Outcome {
    /// The model finished.
    Done,
    /// The last answer failed (after any retries and compaction): its error.
    Failed(String),
    /// Stopped by the cancel token (Ctrl-C).
    Aborted,
    /// Stopped after `max_turns` answers.
    MaxTurns,
    /// The `input` hook handled the prompt; nothing was sent.
    Handled,
}

/// A prompt after its preflight: the `input` hook, expansion, `before_agent_start`.
#[derive(Debug, Clone, PartialEq)]
pub enum Accepted {
    /// The prompt to run.
    Prompt(Prepared),
    /// The `input` hook handled it: nothing is sent.
    Handled,
}

/// An accepted prompt, ready to run.
#[derive(Debug, Clone, PartialEq)]
pub struct Prepared {
    /// The text to send (expanded).
    pub text: String,
    /// The system prompt of this run (`before_agent_start` may change it).
    system_prompt: String,
    /// Messages hooks add after the prompt.
    extra: Vec<Message>,
}

/// Why a compaction made nothing.
enum Unmade {
    /// No session file (`--no-session`).
    NoStore,
    /// No API key for the model.
    NoKey(String),
    NoPlan(NoPlan),
    /// A hook, or the cancel token.
    Cancelled,
    Failed(String),
}

/// Why a prompt was refused or a run could not go on.
#[derive(Debug, thiserror::Error)]
pub enum RunError {
    /// A hook refused the prompt; its reason.
    #[error("{0}")]
    Refused(String),
    /// The prompt's template or skill could not be expanded.
    #[error("{0}")]
    Expand(String),
    /// `continue` with an empty context.
    #[error("Cannot continue: no messages in context")]
    NothingToContinue,
    /// `continue` when the context ends with an answer.
    #[error("Cannot continue from message role: assistant")]
    EndsWithAnswer,
    /// The session could not be read or recorded to.
    #[error(transparent)]
    Store(#[from] super::store::StoreError),
}

/// A run's state: upstream's `AgentSession` around the loop of [`super::turns`].
pub struct AgentSession<'c, H: Hooks, O: Observer> {
    pub config: Config,
    pub(super) client: &'c Client,
    /// The active tools, in order.
    pub(super) tools: Vec<Tool>,
    /// Custom messages from hooks, waiting for a point where they may be added.
    pub(super) pending_custom: Vec<Message>,
    /// The context: agent messages as the model will see them next.
    pub messages: Vec<Message>,
    pub store: Option<FileStore>,
    pub observer: O,
    pub hooks: H,
    pub(super) cancel: CancelToken,
    pub queue: Queue,
    /// The system prompt of the current run (`before_agent_start` may change it).
    pub(super) system_prompt: String,
    /// Expands templates and skills in a prompt.
    expand: Option<Expander>,
    pub(super) retry_attempt: u32,
    pub(super) overflow_attempted: bool,
    /// The time of the latest compaction on the path (Unix ms).
    pub(super) last_compaction_ms: Option<i64>,
    /// Answers so far (for `max_turns`).
    pub(super) turns: u32,
    pub(super) max_turns_hit: bool,
    /// The last assistant message of the current run (upstream's `_lastAssistantMessage`).
    pub(super) last_assistant: Option<Message>,
    /// The failure of a run that threw (no message was recorded).
    pub(super) thrown: Option<String>,
}

/// A number field of a message.
fn num(m: &Message, k: &str) -> f64 {
    m.get(k).and_then(Value::as_f64).unwrap_or(0.0)
}

fn text_of(m: &Message, k: &str) -> Option<String> {
    m.get(k)
        .and_then(Value::as_jstr)
        .map(|s| s.text().into_owned())
}

/// What the overflow and retry rules look at in a recorded assistant message.
pub(crate) fn assistant_facts(m: &Message) -> AssistantMessage {
    let mut a = AssistantMessage::new(
        "",
        &text_of(m, "provider").unwrap_or_default(),
        &text_of(m, "model").unwrap_or_default(),
        num(m, "timestamp") as i64,
    );
    a.stop_reason = match m.get("stopReason").and_then(Value::as_jstr) {
        Some(s) if s.eq_str("error") => StopReason::Error,
        Some(s) if s.eq_str("aborted") => StopReason::Aborted,
        Some(s) if s.eq_str("length") => StopReason::Length,
        Some(s) if s.eq_str("toolUse") => StopReason::ToolUse,
        _ => StopReason::Stop,
    };
    a.error_message = text_of(m, "errorMessage");
    if let Some(u) = m.get("usage") {
        let n = |k: &str| {
            let v = num(u, k);
            if v.is_finite() && v > 0.0 {
                v as u64
            } else {
                0
            }
        };
        a.usage = Usage {
            input: n("input"),
            output: n("output"),
            cache_read: n("cacheRead"),
            cache_write: n("cacheWrite"),
            ..Usage::default()
        };
    }
    a
}

/// A user message with one text block.
pub fn user_message(text: &str) -> Message {
    user_message_with(text, Vec::new())
}

/// A user message with a text block, then these blocks (images).
pub fn user_message_with(text: &str, images: Vec<Message>) -> Message {
    let mut block = Obj::new();
    block.set("type", Value::str("text"));
    block.set("text", Value::str(text));
    let mut content = vec![Value::Obj(block)];
    content.extend(images);
    let mut m = Obj::new();
    m.set("role", Value::str("user"));
    m.set("content", Value::Arr(content));
    m.set("timestamp", Value::Num(pi_base::clock::now_ms() as f64));
    Value::Obj(m)
}

fn set_modes(queue: &Queue, settings: &Settings) {
    let mode = |all: bool| {
        if all {
            hooks::Mode::All
        } else {
            hooks::Mode::OneAtATime
        }
    };
    queue.set_modes(mode(settings.steering_all), mode(settings.follow_up_all));
}

fn stop_reason(m: &Message) -> Option<std::borrow::Cow<'_, str>> {
    m.get("stopReason")
        .and_then(Value::as_jstr)
        .map(|s| s.text())
}

impl<'c, H: Hooks, O: Observer> AgentSession<'c, H, O> {
    /// A session over `messages` (the context of the path being continued), recording to
    /// `store` (none: nothing is recorded). `last_compaction_ms` is the time of the latest
    /// compaction on the path.
    #[allow(clippy::too_many_arguments)]
    pub fn new(
        config: Config,
        client: &'c Client,
        messages: Vec<Message>,
        store: Option<FileStore>,
        last_compaction_ms: Option<i64>,
        observer: O,
        hooks: H,
        cancel: CancelToken,
    ) -> AgentSession<'c, H, O> {
        let queue = Queue::default();
        set_modes(&queue, &config.settings);
        let mut hooks = hooks;
        hooks.use_cancel(&cancel);
        AgentSession {
            system_prompt: config.system_prompt.clone(),
            tools: config.tools.clone(),
            pending_custom: Vec::new(),
            config,
            client,
            messages,
            store,
            observer,
            hooks,
            cancel,
            queue,
            expand: None,
            retry_attempt: 0,
            overflow_attempted: false,
            last_compaction_ms,
            turns: 0,
            max_turns_hit: false,
            last_assistant: None,
            thrown: None,
        }
    }

    /// Works on another session from now on: its file (`store`; the old one is unlocked when
    /// dropped), its context `messages` and the time of its latest compaction; messages
    /// queued for the old session are dropped.
    pub fn switch_to(
        &mut self,
        store: Option<FileStore>,
        messages: Vec<Message>,
        last_compaction_ms: Option<i64>,
    ) {
        self.store = store;
        self.messages = messages;
        self.last_compaction_ms = last_compaction_ms;
        self.queue.clear();
    }

    /// Uses `queue` for steering and follow-up messages (keep a clone to feed the run from
    /// elsewhere); its modes are set from `steeringMode` / `followUpMode`.
    pub fn set_queue(&mut self, queue: Queue) {
        set_modes(&queue, &self.config.settings);
        self.queue = queue;
    }

    /// Expands templates and skills in prompts with `f` (an error stops the prompt).
    pub fn set_expander(&mut self, f: Expander) {
        self.expand = Some(f);
    }

    /// Expands templates and skills in `text` as prompts are expanded.
    pub fn expand(&self, text: &str) -> Result<String, String> {
        match &self.expand {
            Some(f) => f(text),
            None => Ok(text.to_owned()),
        }
    }

    /// The active tools.
    pub fn tools(&self) -> &[Tool] {
        &self.tools
    }

    /// Uses a new cancel token (a cancelled run leaves the old one cancelled).
    pub fn set_cancel(&mut self, cancel: CancelToken) {
        self.hooks.use_cancel(&cancel);
        self.cancel = cancel;
    }

    /// The time of the latest compaction on the path (Unix ms).
    pub fn last_compaction_ms(&self) -> Option<i64> {
        self.last_compaction_ms
    }

    /// Records a setting change of the session (`model_change`, `thinking_level_change`)
    /// through the run's writer.
    pub fn store_mut(&mut self) -> Option<&mut FileStore> {
        self.store.as_mut()
    }

    /// The session file, if the run records one.
    pub fn store(&self) -> Option<&FileStore> {
        self.store.as_ref()
    }

    pub(super) fn emit(&mut self, e: Event<'_>) {
        self.observer.event(&e);
    }

    /// Sends a prompt and runs until the model stops (with retries and compaction).
    pub async fn prompt(&mut self, text: &str) -> Result<Outcome, RunError> {
        match self.accept(text).await? {
            Accepted::Handled => Ok(Outcome::Handled),
            Accepted::Prompt(p) => self.start(p, Vec::new()).await,
        }
    }

    /// The preflight of a prompt: the `input` hook, template and skill expansion, then the
    /// `before_agent_start` hook. An error refuses the prompt (nothing was sent or
    /// recorded, except what hooks asked for).
    pub async fn accept(&mut self, text: &str) -> Result<Accepted, RunError> {
        let input = self.hooks.input(text.to_owned()).await;
        if let Some(stop) = self.apply_effects()? {
            self.flush_custom(None)?;
            return Err(RunError::Refused(stop));
        }
        let text = match input {
            hooks::Input::Continue(t) => t,
            hooks::Input::Handled => {
                self.flush_custom(None)?;
                return Ok(Accepted::Handled);
            }
        };
        let text = self.expand(&text).map_err(RunError::Expand)?;
        let mut system_prompt = self.config.system_prompt.clone();
        let mut extra = Vec::new();
        self.hooks
            .before_agent_start(&text, &mut system_prompt, &mut extra)
            .await;
        if let Some(stop) = self.apply_effects()? {
            self.flush_custom(None)?;
            return Err(RunError::Refused(stop));
        }
        Ok(Accepted::Prompt(Prepared {
            text,
            system_prompt,
            extra,
        }))
    }

    /// Runs an accepted prompt (with images: content blocks after the text) until the model
    /// stops, with retries and compaction.
    pub async fn start(&mut self, p: Prepared, images: Vec<Message>) -> Result<Outcome, RunError> {
        let outcome = self.start_inner(p, images).await;
        self.flush_custom(None)?;
        self.settled(&outcome);
        outcome
    }

    /// `agent_settled`: the prompt's work is over (1.6 tells it after the last `agent_end`
    /// and whatever retries, compactions and queued messages followed).
    fn settled(&mut self, outcome: &Result<Outcome, RunError>) {
        let aborted = matches!(outcome, Ok(Outcome::Aborted)) || self.cancel.is_cancelled();
        self.emit(Event::AgentSettled { aborted });
    }

    async fn start_inner(
        &mut self,
        p: Prepared,
        images: Vec<Message>,
    ) -> Result<Outcome, RunError> {
        // Compact first when the last answer (aborted ones included) passed the threshold.
        if let Some(last) = self
            .messages
            .iter()
            .rev()
            .find(|m| is_assistant(m))
            .cloned()
        {
            self.check_compaction(&last, false).await?;
        }
        // An accepted prompt runs even when it was aborted at once: the loop records it and
        // ends with an `aborted` answer, so `agent_start` … `agent_end` are always seen.
        self.system_prompt = p.system_prompt;
        let mut prompts: Vec<Message> = self.loadout_patch().into_iter().collect();
        prompts.push(user_message_with(&p.text, images));
        prompts.extend(p.extra);
        self.run(Some(prompts)).await
    }

    /// Continues from the context as it is (its last message must be a user message or
    /// tool results: an interrupted run), upstream's `continue()`.
    pub async fn resume(&mut self) -> Result<Outcome, RunError> {
        match self.messages.last() {
            None => return Err(RunError::NothingToContinue),
            Some(m) if is_assistant(m) => {
                return Err(RunError::EndsWithAnswer);
            }
            Some(_) => {}
        }
        self.system_prompt = self.config.system_prompt.clone();
        let patch = self.loadout_patch().map(|m| vec![m]);
        let outcome = self.run(patch).await;
        self.flush_custom(None)?;
        self.settled(&outcome);
        outcome
    }

    /// The system message to record before a run's first request: the prompt sections and
    /// tool declarations of this run that the context does not replay to already.
    fn loadout_patch(&self) -> Option<Message> {
        let tools: Vec<Value> = self
            .tools
            .iter()
            .map(|t| {
                let d = t.definition();
                super::loadout::declaration(&d.name, &d.description, &d.parameters)
            })
            .collect();
        super::loadout::patch(
            &self.messages,
            &self.config.system_sections,
            &tools,
            pi_base::clock::now_ms(),
        )
    }

    /// The prompt a hook put in place of the configured one, if any.
    pub(super) fn forced_prompt(&self) -> Option<&str> {
        (self.system_prompt != self.config.system_prompt).then_some(self.system_prompt.as_str())
    }

    /// Runs the loop, then retries and compacts as upstream does after `agent_end`.
    async fn run(&mut self, prompts: Option<Vec<Message>>) -> Result<Outcome, RunError> {
        let mut next = prompts;
        loop {
            self.last_assistant = None;
            self.thrown = None;
            self.agent_loop(next.take().unwrap_or_default()).await?;
            if self.cancel.is_cancelled() {
                return Ok(Outcome::Aborted);
            }
            if self.max_turns_hit {
                return Ok(Outcome::MaxTurns);
            }
            if let Some(e) = self.thrown.take() {
                return Ok(Outcome::Failed(e));
            }
            let Some(msg) = self.last_assistant.take() else {
                return Ok(Outcome::Done);
            };
            if self.retryable(&msg) && self.retry(&msg).await {
                continue;
            }
            if self.cancel.is_cancelled() {
                return Ok(Outcome::Aborted);
            }
            if self.check_compaction(&msg, true).await? {
                if !self.pause(Duration::from_millis(100)).await {
                    return Ok(Outcome::Aborted);
                }
                continue;
            }
            if self.cancel.is_cancelled() {
                return Ok(Outcome::Aborted);
            }
            match stop_reason(&msg).as_deref() {
                Some("error") => {
                    return Ok(Outcome::Failed(
                        text_of(&msg, "errorMessage").unwrap_or_else(|| "Request error".into()),
                    ));
                }
                Some("aborted") => return Ok(Outcome::Aborted),
                _ => {}
            }
            // Messages queued while the run was ending (during `agent_end`) start another
            // run, as upstream's `continue()` takes them: steering first, else follow-ups.
            let mut queued = self.queue.take_steering();
            if queued.is_empty() {
                queued = self.queue.take_follow_up();
            }
            if queued.is_empty() {
                return Ok(Outcome::Done);
            }
            next = Some(queued);
        }
    }

    /// Sleeps unless cancelled first; `false` when cancelled.
    async fn pause(&self, d: Duration) -> bool {
        tokio::select! {
            () = tokio::time::sleep(d) => true,
            () = self.cancel.cancelled() => false,
        }
    }

    fn window(&self) -> u64 {
        self.config.target.model.context_window
    }

    fn retryable(&self, msg: &Message) -> bool {
        self.config.settings.retry_enabled
            && overflow::is_retryable(&assistant_facts(msg), self.window())
    }

    /// Whether the last answer of a run's messages will be retried (1.6's `willRetry` of
    /// `agent_end`): retries are on, attempts are left, and its error is transient.
    pub(super) fn will_retry(&self, produced: &[Message]) -> bool {
        self.retry_attempt < self.config.settings.max_retries
            && produced
                .iter()
                .rev()
                .find(|m| is_assistant(m))
                .is_some_and(|m| self.retryable(m))
    }

    /// Drops a trailing assistant message from the context (it stays in the file).
    fn drop_trailing_assistant(&mut self, only_errors: bool) {
        if let Some(last) = self.messages.last()
            && is_assistant(last)
            && (!only_errors || stop_reason(last).as_deref() == Some("error"))
        {
            self.messages.pop();
            self.observer.messages_changed(&self.messages);
        }
    }

    /// Upstream's `_handleRetryableError`: `true` when the run is to be continued.
    async fn retry(&mut self, msg: &Message) -> bool {
        let error = text_of(msg, "errorMessage").unwrap_or_else(|| "Unknown error".into());
        self.retry_attempt += 1;
        let max = self.config.settings.max_retries;
        if self.retry_attempt > max {
            let attempt = self.retry_attempt - 1;
            self.emit(Event::AutoRetryEnd {
                success: false,
                attempt,
                final_error: Some(&error),
            });
            self.retry_attempt = 0;
            return false;
        }
        let delay_ms = self.config.settings.retry_delay_ms(self.retry_attempt);
        self.emit(Event::AutoRetryStart {
            attempt: self.retry_attempt,
            max_attempts: max,
            delay_ms,
            error_message: &error,
        });
        self.drop_trailing_assistant(false);
        if !self.pause(Duration::from_millis(delay_ms)).await {
            let attempt = self.retry_attempt;
            self.retry_attempt = 0;
            self.emit(Event::AutoRetryEnd {
                success: false,
                attempt,
                final_error: Some("Retry cancelled"),
            });
            return false;
        }
        true
    }

    /// Upstream's `_checkCompaction`: compacts when `msg` shows an overflow or a context
    /// above the threshold. `true` when the run is to be continued (after an overflow, or
    /// with queued messages).
    pub(super) async fn check_compaction(
        &mut self,
        msg: &Message,
        skip_aborted: bool,
    ) -> Result<bool, RunError> {
        let settings = &self.config.settings;
        if !settings.compaction_enabled {
            return Ok(false);
        }
        let facts = assistant_facts(msg);
        if skip_aborted && facts.stop_reason == StopReason::Aborted {
            return Ok(false);
        }
        let model = &self.config.target.model;
        let window = model.context_window;
        let same_model = facts.provider == model.provider && facts.model == model.id;
        if let Some(t) = self.last_compaction_ms
            && facts.timestamp <= t
        {
            return Ok(false);
        }
        if same_model && overflow::is_context_overflow(&facts, window) {
            if self.overflow_attempted {
                self.emit(Event::CompactionEnd {
                    reason: CompactionReason::Overflow,
                    result: None,
                    aborted: false,
                    will_retry: false,
                    error_message: Some(OVERFLOW_RECOVERY_FAILED),
                });
                return Ok(false);
            }
            self.overflow_attempted = true;
            self.drop_trailing_assistant(false);
            return self.compact(CompactionReason::Overflow, true).await;
        }
        // The context size: this answer's usage, or after a failed answer the estimate
        // from the last usage before it (stale when that predates the latest compaction).
        let (tokens, stale) = if facts.stop_reason == StopReason::Error {
            let est = tokens::estimate_context(&self.messages);
            let Some(k) = est.last_usage_index else {
                return Ok(false);
            };
            let source = &self.messages[k];
            let stale = self
                .last_compaction_ms
                .is_some_and(|t| is_assistant(source) && num(source, "timestamp") as i64 <= t);
            (est.tokens, stale)
        } else {
            let tokens = msg
                .get("usage")
                .map_or(0.0, |u| tokens::context_tokens(u).0);
            (tokens, false)
        };
        let need = tokens::Need::judge(
            tokens,
            window,
            self.reserves().reserve_tokens,
            settings.compaction_enabled,
            stale,
        );
        if window > 0 && need.compact() {
            return self.compact(CompactionReason::Threshold, false).await;
        }
        Ok(false)
    }

    /// `reserveTokens` and `keepRecentTokens` for the model's window (pi's rule for small
    /// windows, [`tokens::Reserves::fit`]; `pi run` warns about it when it starts).
    fn reserves(&self) -> tokens::Reserves {
        let m = &self.config.target.model;
        self.config
            .settings
            .reserves_for(&m.provider, &m.id)
            .fit(m.context_window)
            .used
    }

    fn compaction_end(
        &mut self,
        reason: CompactionReason,
        result: Option<&CompactionResult>,
        aborted: bool,
        will_retry: bool,
        error: Option<&str>,
    ) {
        self.emit(Event::CompactionEnd {
            reason,
            result,
            aborted,
            will_retry,
            error_message: error,
        });
    }

    /// Upstream's `_runAutoCompaction`.
    async fn compact(
        &mut self,
        reason: CompactionReason,
        will_retry: bool,
    ) -> Result<bool, RunError> {
        self.emit(Event::CompactionStart { reason });
        let failed = |e: &str| match reason {
            CompactionReason::Overflow => format!("Context overflow recovery failed: {e}"),
            _ => format!("Auto-compaction failed: {e}"),
        };
        let result = match self.make_compaction(reason, None).await? {
            Ok(r) => r,
            Err(Unmade::NoStore) => {
                let e = failed("there is no session file to compact (--no-session)");
                self.compaction_end(reason, None, false, false, Some(&e));
                return Ok(false);
            }
            Err(Unmade::NoKey(_) | Unmade::NoPlan(_)) => {
                self.compaction_end(reason, None, false, false, None);
                return Ok(false);
            }
            Err(Unmade::Cancelled) => {
                self.compaction_end(reason, None, true, false, None);
                return Ok(false);
            }
            Err(Unmade::Failed(e)) => {
                let e = failed(&e);
                self.compaction_end(reason, None, false, false, Some(&e));
                return Ok(false);
            }
        };
        self.compaction_end(reason, Some(&result), false, will_retry, None);
        if will_retry {
            self.drop_trailing_assistant(true);
            return Ok(true);
        }
        Ok(self.queue.has_queued())
    }

    /// A compaction asked for (upstream's `compact()`, RPC `compact`): `compaction_start`
    /// and `compaction_end` with reason `manual`. `Err` is the error text for the caller
    /// (upstream's messages: `Nothing to compact (session too small)`, `Already compacted`,
    /// `Compaction cancelled`, …).
    pub async fn compact_manual(
        &mut self,
        instructions: Option<&str>,
    ) -> Result<Result<CompactionResult, String>, RunError> {
        let reason = CompactionReason::Manual;
        self.emit(Event::CompactionStart { reason });
        let error = match self.make_compaction(reason, instructions).await? {
            Ok(r) => {
                self.compaction_end(reason, Some(&r), false, false, None);
                return Ok(Ok(r));
            }
            Err(Unmade::Cancelled) => {
                self.compaction_end(reason, None, true, false, None);
                return Ok(Err("Compaction cancelled".to_owned()));
            }
            Err(Unmade::NoStore) => "there is no session file to compact (--no-session)".to_owned(),
            Err(Unmade::NoKey(provider)) => format!("No API key for provider \"{provider}\""),
            Err(Unmade::NoPlan(NoPlan::TooSmall)) => {
                "Nothing to compact (session too small)".to_owned()
            }
            Err(Unmade::NoPlan(NoPlan::AlreadyCompacted)) => "Already compacted".to_owned(),
            Err(Unmade::Failed(e)) => e,
        };
        let shown = format!("Compaction failed: {error}");
        self.compaction_end(reason, None, false, false, Some(&shown));
        Ok(Err(error))
    }

    /// Plans a compaction of the path to the leaf, has it summarized (by a
    /// `session_before_compact` hook or the model), records it and rebuilds the context.
    async fn make_compaction(
        &mut self,
        reason: CompactionReason,
        instructions: Option<&str>,
    ) -> Result<Result<CompactionResult, Unmade>, RunError> {
        let Some(store) = self.store.as_ref() else {
            return Ok(Err(Unmade::NoStore));
        };
        let options = match self
            .config
            .credentials
            .options(&self.config.target, &self.config.options)
        {
            Ok(o) if o.api_key.is_some() => o,
            _ => {
                return Ok(Err(Unmade::NoKey(
                    self.config.target.model.provider.clone(),
                )));
            }
        };
        let reserves = self.reserves();
        let budget = Budget {
            window: self.config.target.model.context_window,
            reserve_tokens: reserves.reserve_tokens,
            keep_recent_tokens: reserves.keep_recent_tokens,
        };
        let plan = match store.compaction_plan(budget) {
            Ok(Ok(p)) => p,
            Ok(Err(e)) => return Ok(Err(Unmade::NoPlan(e))),
            Err(e) => return Ok(Err(Unmade::Failed(format!("{e:#}")))),
        };
        let system = plan.system.clone();
        let answer = self.hooks.before_compact(&plan, reason, instructions).await;
        self.apply_effects()?;
        let (mut result, from_hook) = match answer {
            Compact::Cancel => return Ok(Err(Unmade::Cancelled)),
            Compact::Use(r) => (r, true),
            Compact::Proceed => {
                let level = self.config.thinking_level.clone();
                let progress = |_: &pi_ai::Event| {};
                let summarizer = Summarizer {
                    client: self.client,
                    target: &self.config.target,
                    options,
                    thinking_level: Some(level),
                    progress: &progress,
                };
                let cancel = self.cancel.clone();
                let outcome = tokio::select! {
                    r = summarizer.compact(&plan, instructions) => Some(r),
                    () = cancel.cancelled() => None,
                };
                match outcome {
                    None => return Ok(Err(Unmade::Cancelled)),
                    Some(Err(e)) => return Ok(Err(Unmade::Failed(e.to_string()))),
                    Some(Ok(c)) => (
                        CompactionResult {
                            details: file_details(&c.read_files, &c.modified_files),
                            summary: c.summary,
                            first_kept_entry_id: c.first_kept_entry_id,
                            tokens_before: c.tokens_before,
                            estimated_tokens_after: None,
                            usage: Some(Box::new(c.usage)),
                        },
                        false,
                    ),
                }
            }
        };
        let Some(store) = self.store.as_mut() else {
            return Ok(Err(Unmade::NoStore));
        };
        store.append_compaction(&result, from_hook, system.as_ref())?;
        let (messages, t) = store.context()?;
        self.messages = messages;
        self.last_compaction_ms = t.or(Some(pi_base::clock::now_ms()));
        self.observer.messages_changed(&self.messages);
        // 1.6's estimate of the rebuilt context: every message estimated, no usage trusted.
        result.estimated_tokens_after =
            Some(self.messages.iter().map(tokens::estimate).sum::<u64>() as f64);
        Ok(Ok(result))
    }

    /// Takes what hooks asked for: failures are reported (`extension_error`), `custom`
    /// entries recorded, custom messages kept for the next point where they may be added.
    /// Returns why a failed hook stops what it guards, if one does.
    pub(super) fn apply_effects(&mut self) -> Result<Option<String>, RunError> {
        let fx = self.hooks.take_effects();
        if fx.is_empty() {
            return Ok(None);
        }
        for e in &fx.errors {
            self.emit(Event::ExtensionError {
                hook: &e.hook,
                event: &e.event,
                error: &e.error,
            });
        }
        if let Some(store) = self.store.as_mut() {
            for (ty, data) in &fx.entries {
                store.append(
                    "custom",
                    vec![("customType", jstr(ty)), ("data", js::stringify(data))],
                )?;
            }
        }
        self.pending_custom.extend(fx.messages);
        Ok(fx.stop)
    }

    /// Adds the custom messages hooks asked for to the context and records them
    /// (`custom_message` entries), with `message_start` / `message_end`.
    pub(super) fn flush_custom(
        &mut self,
        mut produced: Option<&mut Vec<Message>>,
    ) -> Result<(), RunError> {
        for m in std::mem::take(&mut self.pending_custom) {
            self.emit(Event::MessageStart { message: &m });
            if let Some(store) = self.store.as_mut() {
                store.append_custom_message(&m)?;
            }
            self.emit(Event::MessageEnd { message: &m });
            self.messages.push(m.clone());
            if let Some(p) = produced.as_deref_mut() {
                p.push(m);
            }
        }
        Ok(())
    }

    /// Bookkeeping of a finished message (upstream's `_processAgentEvent` on
    /// `message_end`), after hooks and recording.
    pub(super) fn after_message_end(&mut self, m: &Message) {
        if !is_assistant(m) {
            return;
        }
        self.last_assistant = Some(m.clone());
        let error = stop_reason(m).as_deref() == Some("error");
        if !error {
            self.overflow_attempted = false;
            if self.retry_attempt > 0 {
                let attempt = self.retry_attempt;
                self.retry_attempt = 0;
                self.emit(Event::AutoRetryEnd {
                    success: true,
                    attempt,
                    final_error: None,
                });
            }
        }
    }

    /// Records a finished message (user, assistant, tool result) and tells observers.
    pub(super) async fn finish_message(&mut self, m: Message) -> Result<Message, RunError> {
        let m = self.hooks.message_end(m).await;
        if let Some(store) = self.store.as_mut() {
            // Other roles (summaries, shell commands) are recorded by what makes them.
            match role(&m).as_deref() {
                Some("system" | "user" | "assistant" | "toolResult") => store.append_message(&m)?,
                Some("custom") => store.append_custom_message(&m)?,
                _ => {}
            }
        }
        self.emit(Event::MessageEnd { message: &m });
        self.after_message_end(&m);
        self.apply_effects()?;
        Ok(m)
    }

    /// Announces a message that starts (a user message resets the overflow flag).
    pub(super) fn start_message(&mut self, m: &Message) {
        if role(m).as_deref() == Some("user") {
            self.overflow_attempted = false;
        }
        self.emit(Event::MessageStart { message: m });
    }

    /// The synthetic message of a run that failed before producing one (upstream's
    /// `handleRunFailure`): not recorded; only `agent_end` carries it.
    pub(super) fn thrown_message(&self, error: &str) -> Message {
        let model = &self.config.target.model;
        let mut m = AssistantMessage::new(
            &model.api,
            &model.provider,
            &model.id,
            pi_base::clock::now_ms(),
        );
        m.content.push(pi_ai::Block::Text {
            text: String::new(),
            signature: None,
        });
        let aborted = self.cancel.is_cancelled();
        m.fail(
            if aborted {
                StopReason::Aborted
            } else {
                StopReason::Error
            },
            error.to_owned(),
        );
        assistant_value(&m)
    }
}
