//! What a provider call produces: the assistant message (content blocks, usage, cost, stop
//! reason, error) and the events that build it while it streams.
//!
//! The message serializes to the reference's `AssistantMessage` (the `message` of a session
//! entry), key for key, so a caller can store it as it is.

use serde_json::{Map, Value, json};

use crate::models::Prices;

/// Why a response ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StopReason {
    Stop,
    Length,
    ToolUse,
    Error,
    Aborted,
}

impl StopReason {
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            StopReason::Stop => "stop",
            StopReason::Length => "length",
            StopReason::ToolUse => "toolUse",
            StopReason::Error => "error",
            StopReason::Aborted => "aborted",
        }
    }

    pub fn is_failure(self) -> bool {
        matches!(self, StopReason::Error | StopReason::Aborted)
    }
}

/// Dollars, per part of the usage.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct Cost {
    pub(crate) input: f64,
    pub(crate) output: f64,
    pub(crate) cache_read: f64,
    pub(crate) cache_write: f64,
    pub total: f64,
}

/// Token counts as the reference records them.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct Usage {
    pub input: u64,
    pub output: u64,
    pub cache_read: u64,
    pub cache_write: u64,
    pub total_tokens: u64,
    pub cost: Cost,
}

impl Usage {
    /// Recomputes the total and the cost (upstream's `calculateCost`).
    pub(crate) fn settle(&mut self, prices: &Prices) {
        self.total_tokens = self.input + self.output + self.cache_read + self.cache_write;
        let c = |price: f64, n: u64| price / 1_000_000.0 * n as f64;
        let prices = prices.for_input(self.input + self.cache_read + self.cache_write);
        self.cost.input = c(prices.input, self.input);
        self.cost.output = c(prices.output, self.output);
        self.cost.cache_read = c(prices.cache_read, self.cache_read);
        self.cost.cache_write = c(prices.cache_write, self.cache_write);
        self.cost.total =
            self.cost.input + self.cost.output + self.cost.cache_read + self.cost.cache_write;
    }

    /// Adds another request's usage (tokens and cost), as upstream sums the usage of the
    /// requests of one summary.
    pub fn add(&mut self, other: &Usage) {
        self.input += other.input;
        self.output += other.output;
        self.cache_read += other.cache_read;
        self.cache_write += other.cache_write;
        self.total_tokens += other.total_tokens;
        self.cost.input += other.cost.input;
        self.cost.output += other.cost.output;
        self.cost.cache_read += other.cost.cache_read;
        self.cost.cache_write += other.cost.cache_write;
        self.cost.total += other.cost.total;
    }

    /// The usage as a message records it (`{input, output, cacheRead, cacheWrite,
    /// totalTokens, cost}`).
    pub fn to_json(self) -> Value {
        json!({
            "input": self.input,
            "output": self.output,
            "cacheRead": self.cache_read,
            "cacheWrite": self.cache_write,
            "totalTokens": self.total_tokens,
            "cost": {
                "input": self.cost.input,
                "output": self.cost.output,
                "cacheRead": self.cost.cache_read,
                "cacheWrite": self.cost.cache_write,
                "total": self.cost.total,
            },
        })
    }
}

/// One content block of an assistant message.
#[derive(Debug, Clone, PartialEq)]
pub enum Block {
    Text {
        text: String,
        /// Where the text came from, for sending it back: the OpenAI Responses API's message
        /// item (`{"v":1,"id":…,"phase":…}`) or Google's thought signature; stored as
        /// `textSignature`.
        signature: Option<String>,
    },
    Thinking {
        thinking: String,
        /// Anthropic's signature, or the OpenAI-compatible field the reasoning came in
        /// (`reasoning_content`, `reasoning`, `reasoning_text`).
        signature: Option<String>,
        redacted: bool,
    },
    ToolCall {
        id: String,
        name: String,
        /// The parsed arguments (while streaming: of the text so far).
        arguments: Value,
        /// The arguments' JSON text as streamed (not part of the stored message).
        partial: String,
        thought_signature: Option<String>,
    },
}

impl Block {
    /// An empty text block.
    pub(crate) fn text() -> Block {
        Block::Text {
            text: String::new(),
            signature: None,
        }
    }

    /// An empty thinking block.
    pub(crate) fn thinking(signature: Option<String>) -> Block {
        Block::Thinking {
            thinking: String::new(),
            signature,
            redacted: false,
        }
    }

    /// A tool call whose arguments have not streamed yet.
    pub(crate) fn tool_call(id: String, name: String) -> Block {
        Block::ToolCall {
            id,
            name,
            arguments: Value::Object(Map::new()),
            partial: String::new(),
            thought_signature: None,
        }
    }

    pub fn to_json(&self) -> Value {
        match self {
            Block::Text { text, signature } => {
                let mut m = Map::new();
                m.insert("type".into(), "text".into());
                m.insert("text".into(), text.clone().into());
                if let Some(s) = signature {
                    m.insert("textSignature".into(), s.clone().into());
                }
                Value::Object(m)
            }
            Block::Thinking {
                thinking,
                signature,
                redacted,
            } => {
                let mut m = Map::new();
                m.insert("type".into(), "thinking".into());
                m.insert("thinking".into(), thinking.clone().into());
                if let Some(s) = signature {
                    m.insert("thinkingSignature".into(), s.clone().into());
                }
                if *redacted {
                    m.insert("redacted".into(), true.into());
                }
                Value::Object(m)
            }
            Block::ToolCall {
                id,
                name,
                arguments,
                thought_signature,
                ..
            } => {
                let mut m = Map::new();
                m.insert("type".into(), "toolCall".into());
                m.insert("id".into(), id.clone().into());
                m.insert("name".into(), name.clone().into());
                m.insert("arguments".into(), arguments.clone());
                if let Some(s) = thought_signature {
                    m.insert("thoughtSignature".into(), s.clone().into());
                }
                Value::Object(m)
            }
        }
    }
}

/// An assistant message, complete or being streamed.
#[derive(Debug, Clone, PartialEq)]
pub struct AssistantMessage {
    pub content: Vec<Block>,
    pub(crate) api: String,
    pub provider: String,
    pub model: String,
    pub usage: Usage,
    pub stop_reason: StopReason,
    pub error_message: Option<String>,
    /// The HTTP status of a failed request (not stored; for telling failures apart).
    pub(crate) http_status: Option<u16>,
    /// Request start, Unix milliseconds.
    pub timestamp: i64,
    pub(crate) response_id: Option<String>,
    /// The model a router actually used, when it differs from `model`.
    pub(crate) response_model: Option<String>,
}

impl AssistantMessage {
    pub fn new(api: &str, provider: &str, model: &str, timestamp: i64) -> AssistantMessage {
        AssistantMessage {
            content: Vec::new(),
            api: api.to_owned(),
            provider: provider.to_owned(),
            model: model.to_owned(),
            usage: Usage::default(),
            stop_reason: StopReason::Stop,
            error_message: None,
            http_status: None,
            timestamp,
            response_id: None,
            response_model: None,
        }
    }

    /// An empty message of a call to `target`.
    pub fn for_target(target: &crate::Target, timestamp: i64) -> AssistantMessage {
        AssistantMessage::new(
            target.wire.api(),
            &target.model.provider,
            &target.model.id,
            timestamp,
        )
    }

    /// Takes what a parser may set between events without announcing it (the response's
    /// id and model, once each; the figures of the usage), in constant time.
    fn follow_meta(&mut self, m: &AssistantMessage) {
        if self.response_id.is_none() && m.response_id.is_some() {
            self.response_id.clone_from(&m.response_id);
        }
        if self.response_model.is_none() && m.response_model.is_some() {
            self.response_model.clone_from(&m.response_model);
        }
        self.usage = m.usage;
        self.stop_reason = m.stop_reason;
        self.http_status = m.http_status;
    }

    /// A copy of everything but the content.
    fn without_content(&self) -> AssistantMessage {
        AssistantMessage {
            content: Vec::new(),
            api: self.api.clone(),
            provider: self.provider.clone(),
            model: self.model.clone(),
            usage: self.usage,
            stop_reason: self.stop_reason,
            error_message: self.error_message.clone(),
            http_status: self.http_status,
            timestamp: self.timestamp,
            response_id: self.response_id.clone(),
            response_model: self.response_model.clone(),
        }
    }

    /// The text blocks joined with newlines (what a summary is made of).
    pub fn text(&self) -> String {
        let texts: Vec<&str> = self
            .content
            .iter()
            .filter_map(|b| match b {
                Block::Text { text, .. } => Some(text.as_str()),
                _ => None,
            })
            .collect();
        texts.join("\n")
    }

    /// The message as the reference stores it.
    pub fn to_json(&self) -> Value {
        let mut m = Map::new();
        m.insert("role".into(), "assistant".into());
        m.insert(
            "content".into(),
            Value::Array(self.content.iter().map(Block::to_json).collect()),
        );
        m.insert("api".into(), self.api.clone().into());
        m.insert("provider".into(), self.provider.clone().into());
        m.insert("model".into(), self.model.clone().into());
        if let Some(r) = &self.response_model {
            m.insert("responseModel".into(), r.clone().into());
        }
        if let Some(r) = &self.response_id {
            m.insert("responseId".into(), r.clone().into());
        }
        m.insert("usage".into(), self.usage.to_json());
        m.insert("stopReason".into(), self.stop_reason.as_str().into());
        if let Some(e) = &self.error_message {
            m.insert("errorMessage".into(), e.clone().into());
        }
        m.insert("timestamp".into(), self.timestamp.into());
        Value::Object(m)
    }

    /// Why the call failed, when it did (stopped with an error or aborted).
    pub fn error(&self) -> Option<LlmError> {
        self.stop_reason.is_failure().then(|| LlmError {
            message: self
                .error_message
                .clone()
                .unwrap_or_else(|| "Unknown error".to_owned()),
            status: self.http_status,
        })
    }

    /// Ends the message as failed (keeping the content produced so far).
    pub fn fail(&mut self, reason: StopReason, message: String) {
        self.stop_reason = reason;
        self.error_message = Some(message);
        for b in &mut self.content {
            if let Block::ToolCall { partial, .. } = b {
                partial.clear();
            }
        }
    }
}

/// The text of an HTTP error as the reference's SDKs write it: `STATUS MESSAGE`, or
/// `STATUS status code (no body)`.
pub(crate) fn status_message(status: u16, msg: &str) -> String {
    if msg.is_empty() {
        format!("{status} status code (no body)")
    } else {
        format!("{status} {msg}")
    }
}

/// A failed model call: the message the reference reports (`errorMessage`), and the HTTP
/// status when the provider answered with an error status.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{message}")]
pub struct LlmError {
    pub message: String,
    pub status: Option<u16>,
}

impl From<String> for LlmError {
    fn from(message: String) -> LlmError {
        LlmError::new(message)
    }
}

impl From<&str> for LlmError {
    fn from(message: &str) -> LlmError {
        LlmError::new(message)
    }
}

impl LlmError {
    pub(crate) fn new(message: impl Into<String>) -> LlmError {
        LlmError {
            message: message.into(),
            status: None,
        }
    }

    /// The provider refused the key (401, 403).
    pub fn is_auth(&self) -> bool {
        matches!(self.status, Some(401 | 403))
    }
}

/// What happens while a response streams, in order. `index` is the position of the block
/// in the message's content. The partial message is passed along with each event.
#[derive(Debug, Clone, PartialEq)]
pub enum Event {
    /// The provider accepted the request and the response started.
    Start,
    TextStart {
        index: usize,
    },
    TextDelta {
        index: usize,
        delta: String,
    },
    TextEnd {
        index: usize,
    },
    ThinkingStart {
        index: usize,
    },
    ThinkingDelta {
        index: usize,
        delta: String,
    },
    ThinkingEnd {
        index: usize,
    },
    ToolCallStart {
        index: usize,
    },
    /// A fragment of the arguments' JSON text (may be empty).
    ToolCallDelta {
        index: usize,
        delta: String,
    },
    ToolCallEnd {
        index: usize,
    },
    /// The usage changed (the message holds the new figures).
    Usage,
    /// A request failed and is tried again after `delay_ms` (before anything streamed).
    Retry {
        attempt: u32,
        max_retries: u32,
        delay_ms: u64,
        error: String,
    },
    /// The response ended normally (`stop`, `length` or `toolUse`).
    Done,
    /// The response failed (`error` or `aborted`); the message says why.
    Error,
}

/// Receives events with the message as it stands.
pub(crate) type Sink<'a> = &'a mut dyn FnMut(&Event, &AssistantMessage);

/// A copy of a message as it streams, kept from its events at a cost linear in the
/// answer (a copy of the whole message at every event would cost its square): deltas are
/// appended, a block is copied when it starts and when it ends, the rest of the message at
/// the events without a block. For a caller that must keep what streamed when it stops
/// the stream (an abort).
#[derive(Debug, Default, Clone)]
pub struct Follower {
    copy: Option<AssistantMessage>,
}

impl Follower {
    /// Brings the copy up to date with `m`, which `ev` changed.
    pub fn follow(&mut self, ev: &Event, m: &AssistantMessage) {
        let Some(copy) = self.copy.as_mut() else {
            self.copy = Some(m.clone());
            return;
        };
        let kept = match ev {
            Event::TextDelta { index, delta } => match copy.content.get_mut(*index) {
                Some(Block::Text { text, .. }) => {
                    text.push_str(delta);
                    true
                }
                _ => false,
            },
            Event::ThinkingDelta { index, delta } => match copy.content.get_mut(*index) {
                Some(Block::Thinking { thinking, .. }) => {
                    thinking.push_str(delta);
                    true
                }
                _ => false,
            },
            Event::ToolCallDelta { index, delta } => match copy.content.get_mut(*index) {
                Some(Block::ToolCall { partial, .. }) => {
                    partial.push_str(delta);
                    true
                }
                _ => false,
            },
            Event::TextStart { index }
            | Event::ThinkingStart { index }
            | Event::ToolCallStart { index } => {
                match (*index == copy.content.len(), m.content.get(*index)) {
                    (true, Some(b)) => {
                        copy.content.push(b.clone());
                        true
                    }
                    _ => false,
                }
            }
            Event::TextEnd { index }
            | Event::ThinkingEnd { index }
            | Event::ToolCallEnd { index } => {
                match (copy.content.get_mut(*index), m.content.get(*index)) {
                    (Some(mine), Some(b)) => {
                        mine.clone_from(b);
                        true
                    }
                    _ => false,
                }
            }
            Event::Start | Event::Usage | Event::Retry { .. } | Event::Done | Event::Error => {
                if copy.content.len() == m.content.len() {
                    let content = std::mem::take(&mut copy.content);
                    *copy = m.without_content();
                    copy.content = content;
                    true
                } else {
                    false
                }
            }
        };
        if kept {
            copy.follow_meta(m);
        } else {
            self.copy = Some(m.clone());
        }
    }

    /// The copy (`None` before the first event), with the arguments of tool calls still
    /// streaming parsed from their text so far.
    pub fn into_message(self) -> Option<AssistantMessage> {
        let mut m = self.copy?;
        for block in &mut m.content {
            if let Block::ToolCall {
                arguments, partial, ..
            } = block
                && !partial.is_empty()
            {
                *arguments = crate::json_partial::parse(partial);
            }
        }
        Some(m)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cost_from_prices() {
        let mut u = Usage {
            input: 1_000_000,
            output: 500_000,
            cache_read: 200_000,
            cache_write: 0,
            ..Usage::default()
        };
        let mut prices = Prices {
            input: 3.0,
            output: 15.0,
            cache_read: 0.3,
            cache_write: 3.75,
            tiers: Vec::new(),
        };
        u.settle(&prices);
        assert_eq!(u.total_tokens, 1_700_000);
        assert!((u.cost.total - (3.0 + 7.5 + 0.06)).abs() < 1e-9);
        // Tiers: the highest threshold below the request's input (1.2M with the cache
        // reads) prices the whole request; a threshold it does not pass does nothing.
        let tier = |above: f64, input: f64| crate::models::Tier {
            input_tokens_above: above,
            input,
            output: 2.0 * input,
            cache_read: input / 10.0,
            cache_write: input,
        };
        prices.tiers = vec![
            tier(1_000_000.0, 6.0),
            tier(200_000.0, 4.0),
            tier(1_200_000.0, 9.0),
        ];
        u.settle(&prices);
        assert!((u.cost.input - 6.0).abs() < 1e-9, "{:?}", u.cost);
        assert!((u.cost.output - 6.0).abs() < 1e-9, "{:?}", u.cost);
        assert!((u.cost.cache_read - 0.12).abs() < 1e-9, "{:?}", u.cost);
    }

    #[test]
    fn serializes_like_the_reference() {
        let mut m = AssistantMessage::new("openai-completions", "p", "m", 5);
        m.content.push(Block::Text {
            text: "hi".into(),
            signature: None,
        });
        m.content.push(Block::ToolCall {
            id: "c1".into(),
            name: "read".into(),
            arguments: json!({"path": "a"}),
            partial: "{\"path\":\"a\"}".into(),
            thought_signature: None,
        });
        let v = m.to_json();
        assert_eq!(
            serde_json::to_string(&v["content"]).unwrap(),
            r#"[{"type":"text","text":"hi"},{"type":"toolCall","id":"c1","name":"read","arguments":{"path":"a"}}]"#
        );
        assert_eq!(v["stopReason"], "stop");
        assert_eq!(m.text(), "hi");
    }
}
