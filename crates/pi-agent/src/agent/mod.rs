//! The agent: a model and its tools working in a session, as the reference's newest release
//! (0.73) runs it, with every finished message recorded as it completes.
//!
//! - [`session::AgentSession`]: the state of a run and what happens around the loop:
//!   prompts (templates and skills expanded), recording, automatic retries of transient
//!   provider errors (`retry.*`), automatic compaction at the threshold (before a prompt and
//!   after a run) and after a context overflow (compact, then retry once).
//! - [`turns`]: the loop itself: streamed answers, tool calls run at the same time with
//!   their results recorded in call order, steering and follow-up messages, `max_turns`,
//!   cancellation (the aborted answer is recorded as upstream records it).
//! - [`event::Event`]: what happens, with the JSON form of upstream's JSON mode; an
//!   [`Observer`] sees every event (the `pi` binary renders them as JSON or for people).
//! - [`hooks`]: where other programs can take part (upstream's extension events that change
//!   behaviour), and the queue of steering and follow-up messages.
//! - [`store`]: the session file, locked for the whole run.
//! - [`setup`] and [`settings`]: what a run starts from.
//!
//! No command-line concerns here; `pi run` builds the runtime, handles signals and picks the
//! view.

pub mod event;
pub mod hooks;
pub mod loadout;
pub mod session;
pub mod settings;
pub mod setup;
pub mod store;
pub mod turns;

pub use event::Event;
pub use session::{AgentSession, Config, Credentials, Outcome, ToolExecution};

/// An agent message (user, assistant, tool result, or a summary/custom message from the
/// session), as JavaScript holds it.
pub type Message = pi_ai::value::Value;

/// A message from serde JSON (numbers and key order as JavaScript keeps them).
pub fn message_from_json(j: &serde_json::Value) -> Message {
    Message::parse(&pi_base::js::stringify(j)).unwrap_or_default()
}

/// A message as serde JSON.
pub fn message_to_json(m: &Message) -> serde_json::Value {
    serde_json::from_slice(&m.to_json()).unwrap_or(serde_json::Value::Null)
}

/// Sees every event of a run, in order.
pub trait Observer {
    fn event(&mut self, e: &Event<'_>);

    /// The context changed other than by a message that ended (`message_end` adds that
    /// one): after a compaction, a retry dropping a failed answer, or a failure that made no
    /// message. `messages` is the whole context now.
    fn messages_changed(&mut self, messages: &[Message]) {
        let _ = messages;
    }
}

impl<T: Observer + ?Sized> Observer for &mut T {
    fn event(&mut self, e: &Event<'_>) {
        (**self).event(e);
    }

    fn messages_changed(&mut self, messages: &[Message]) {
        (**self).messages_changed(messages);
    }
}

/// Collects events as JSON lines (for tests and embedding).
#[derive(Debug, Default)]
pub struct Recorder(pub Vec<String>);

impl Observer for Recorder {
    fn event(&mut self, e: &Event<'_>) {
        if let Some(l) = e.to_json() {
            self.0.push(String::from_utf8_lossy(&l).into_owned());
        }
    }
}
