//! Where other programs can take part in a run: hooks that may change or stop what the loop
//! does (upstream's extension events `input`, `before_agent_start`, `context`, `tool_call`,
//! `tool_result`, `message_end`, `session_before_compact`), and the queue of messages typed
//! while the agent works (steering and follow-up, as an RPC mode feeds them).
//!
//! Hooks are also told about `turn_end` and `agent_end`, and may ask for more than their
//! answers ([`Effects`]: entries to record, custom messages, failures to report), which the
//! session collects after every call. `crate::extensions::hooks` runs programs for them;
//! [`NoHooks`] changes nothing.

use std::collections::VecDeque;
use std::future::Future;
use std::sync::{Arc, Mutex};

use serde_json::Value as Json;

use super::Message;
use crate::compact::BeforeCompact;
use pi_tools::ToolResult;

/// What the `input` hook does with a prompt.
#[derive(Debug, Clone, PartialEq)]
pub enum Input {
    /// Go on with this text (the original or a replacement).
    Continue(String),
    /// The hook took care of it: nothing is sent.
    Handled,
}

/// What the `tool_call` hook decides about a call (upstream's `beforeToolCall`).
#[derive(Debug, Clone, PartialEq)]
pub enum ToolCall {
    Allow,
    /// Run it with these arguments instead (they are checked like the model's).
    Modify(Json),
    /// Do not run it: an error result with this reason (default `Tool execution was
    /// blocked`).
    Block(Option<String>),
}

/// A hook that failed (it is reported as an `extension_error` event).
#[derive(Debug, Clone, PartialEq)]
pub struct HookError {
    /// The hook (its command).
    pub hook: String,
    /// The event it was run for.
    pub event: String,
    pub error: String,
}

/// What hooks asked for besides their answers; the session takes it after every call.
#[derive(Debug, Default, Clone, PartialEq)]
pub struct Effects {
    /// `custom` entries to record now: `(customType, data)`.
    pub entries: Vec<(String, Json)>,
    /// Custom messages (`role: "custom"`) to add to the context and record as
    /// `custom_message` entries, at the next point where a message may be added (before the
    /// next request, or when the run ends). They never make the model answer by themselves.
    pub messages: Vec<Message>,
    /// Hooks that failed.
    pub errors: Vec<HookError>,
    /// A failed hook whose `onError` is `block` stops what it guards (the prompt, the
    /// request): why.
    pub stop: Option<String>,
}

impl Effects {
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
            && self.messages.is_empty()
            && self.errors.is_empty()
            && self.stop.is_none()
    }
}

/// Hooks into the loop (and, through [`BeforeCompact`], into its compactions). Every
/// method has a default that changes nothing.
#[allow(clippy::manual_async_fn)]
pub trait Hooks: BeforeCompact {
    /// The token that cancels the run (hooks still running are stopped with it); told
    /// again whenever the session gets a new one.
    fn use_cancel(&mut self, cancel: &pi_tools::CancelToken) {
        let _ = cancel;
    }

    /// A prompt as given, before templates and skills are expanded.
    fn input(&mut self, text: String) -> impl Future<Output = Input> {
        async move { Input::Continue(text) }
    }

    /// Before a prompt starts a run: may change the system prompt of this run and add
    /// messages after the user's.
    fn before_agent_start(
        &mut self,
        prompt: &str,
        system_prompt: &mut String,
        extra: &mut Vec<Message>,
    ) -> impl Future<Output = ()> {
        let _ = (prompt, system_prompt, extra);
        async {}
    }

    /// The agent messages about to be sent (before conversion to LLM messages).
    fn context(&mut self, messages: Vec<Message>) -> impl Future<Output = Vec<Message>> {
        async move { messages }
    }

    /// A tool call whose arguments passed the checks, before it runs.
    fn tool_call(&mut self, id: &str, name: &str, args: &Json) -> impl Future<Output = ToolCall> {
        let _ = (id, name, args);
        async { ToolCall::Allow }
    }

    /// A finished tool call (upstream's `afterToolCall`): may replace the result.
    fn tool_result(
        &mut self,
        id: &str,
        name: &str,
        args: &Json,
        result: ToolResult,
    ) -> impl Future<Output = ToolResult> {
        let _ = (id, name, args);
        async move { result }
    }

    /// A finished message, before it is recorded: may replace it.
    fn message_end(&mut self, message: Message) -> impl Future<Output = Message> {
        async move { message }
    }

    /// A turn ended (notification).
    fn turn_end(
        &mut self,
        message: &Message,
        tool_results: &[Message],
    ) -> impl Future<Output = ()> {
        let _ = (message, tool_results);
        async {}
    }

    /// A run of the loop ended (notification).
    fn agent_end(&mut self, messages: &[Message]) -> impl Future<Output = ()> {
        let _ = messages;
        async {}
    }

    /// What the hooks asked for since the last call (taken, so the next call starts empty).
    /// Before RPC mode leaves the session for another (`new_session`: reason `new`;
    /// `switch_session`: `resume`, with the target file): `true` cancels the change.
    fn before_switch(
        &mut self,
        reason: &str,
        target: Option<&std::path::Path>,
    ) -> impl Future<Output = bool> {
        let _ = (reason, target);
        async { false }
    }

    /// Before RPC mode forks the session at an entry (`fork`: position `before`; `clone`:
    /// `at`): `true` cancels it.
    fn before_fork(&mut self, entry_id: &str, position: &str) -> impl Future<Output = bool> {
        let _ = (entry_id, position);
        async { false }
    }

    /// The session now works in `cwd` and records to `file` (after a change of session).
    fn session_changed(&mut self, cwd: &std::path::Path, file: Option<&std::path::Path>) {
        let _ = (cwd, file);
    }

    fn take_effects(&mut self) -> Effects {
        Effects::default()
    }
}

/// How a queue hands out its messages.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Mode {
    /// One message per poll (upstream's default).
    #[default]
    OneAtATime,
    /// Everything queued.
    All,
}

impl Mode {
    /// `one-at-a-time` or `all`, as settings and RPC name them.
    pub fn as_str(self) -> &'static str {
        match self {
            Mode::OneAtATime => "one-at-a-time",
            Mode::All => "all",
        }
    }

    pub fn parse(s: &str) -> Option<Mode> {
        match s {
            "one-at-a-time" => Some(Mode::OneAtATime),
            "all" => Some(Mode::All),
            _ => None,
        }
    }
}

#[derive(Debug, Default)]
struct Queues {
    steering: VecDeque<Message>,
    follow_up: VecDeque<Message>,
    steering_mode: Mode,
    follow_up_mode: Mode,
}

/// Messages waiting for the loop: *steering* messages are delivered after the current
/// turn's tools finish, *follow-up* messages when the agent would otherwise stop. Clones
/// share the queue, so another task (an RPC reader) can feed a running loop.
#[derive(Debug, Clone, Default)]
pub struct Queue(Arc<Mutex<Queues>>);

impl Queue {
    fn with<T>(&self, f: impl FnOnce(&mut Queues) -> T) -> T {
        match self.0.lock() {
            Ok(mut q) => f(&mut q),
            Err(poisoned) => f(&mut poisoned.into_inner()),
        }
    }

    pub fn steer(&self, m: Message) {
        self.with(|q| q.steering.push_back(m));
    }

    pub fn follow_up(&self, m: Message) {
        self.with(|q| q.follow_up.push_back(m));
    }

    pub fn set_modes(&self, steering: Mode, follow_up: Mode) {
        self.with(|q| {
            q.steering_mode = steering;
            q.follow_up_mode = follow_up;
        });
    }

    fn take(q: &mut VecDeque<Message>, mode: Mode) -> Vec<Message> {
        match mode {
            Mode::All => q.drain(..).collect(),
            Mode::OneAtATime => q.pop_front().into_iter().collect(),
        }
    }

    /// The steering messages to deliver now.
    pub(crate) fn take_steering(&self) -> Vec<Message> {
        self.with(|q| Self::take(&mut q.steering, q.steering_mode))
    }

    /// The follow-up messages to deliver now.
    pub(crate) fn take_follow_up(&self) -> Vec<Message> {
        self.with(|q| Self::take(&mut q.follow_up, q.follow_up_mode))
    }

    /// How many messages wait: (steering, follow-up).
    pub fn counts(&self) -> (usize, usize) {
        self.with(|q| (q.steering.len(), q.follow_up.len()))
    }

    /// The modes: (steering, follow-up).
    pub fn modes(&self) -> (Mode, Mode) {
        self.with(|q| (q.steering_mode, q.follow_up_mode))
    }

    pub(crate) fn has_queued(&self) -> bool {
        self.with(|q| !q.steering.is_empty() || !q.follow_up.is_empty())
    }

    /// Empties both queues, returning what was in them (steering, then follow-up).
    pub fn clear(&self) -> (Vec<Message>, Vec<Message>) {
        self.with(|q| {
            (
                q.steering.drain(..).collect(),
                q.follow_up.drain(..).collect(),
            )
        })
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use pi_ai::value::Value;

    #[test]
    fn queue_modes() {
        let q = Queue::default();
        for t in ["a", "b"] {
            q.steer(Value::str(t));
            q.follow_up(Value::str(t));
        }
        assert_eq!(q.take_steering(), vec![Value::str("a")]);
        q.set_modes(Mode::All, Mode::All);
        assert_eq!(q.take_steering(), vec![Value::str("b")]);
        assert!(q.take_steering().is_empty());
        assert_eq!(q.take_follow_up().len(), 2);
        assert!(!q.has_queued());
    }
}
