//! Mistral (`mistral-conversations`), as the reference's provider speaks it through Mistral's
//! SDK: `POST {baseUrl}/v1/chat/completions`, streamed as chat completion chunks.
//!
//! Where it differs from Chat Completions: its own tool-call ids (nine letters and digits,
//! see `crate::providers::mistral::messages`), thinking as typed content chunks (`{"type": "thinking",
//! "thinking": [{"type": "text", …}]}`) both ways, `max_tokens`, `prompt_mode: reasoning`
//! (Magistral) or `reasoning_effort` (Mistral Small 4, Medium 3.5) for thinking, and the
//! session id as `x-affinity` (Mistral's prompt-cache routing).

pub mod messages;

use serde_json::Value;

use crate::auth::set_header;
use crate::json_partial;
use crate::message::{AssistantMessage, Block, Event, LlmError, Sink, StopReason};
use crate::providers::mistral::messages as wire_messages;
use crate::providers::responses::Prepared;
use crate::request::{Options, Request, Target, ToolChoice};
use crate::value::{Obj, Value as Js};

/// How long an error body may be in a message (UTF-16 units, as the reference counts).
const MAX_ERROR_BODY: usize = 4000;

/// Models that take `reasoning_effort`; the other reasoning models take
/// `prompt_mode: reasoning`.
fn uses_reasoning_effort(id: &str) -> bool {
    matches!(
        id,
        "mistral-small-2603" | "mistral-small-latest" | "mistral-medium-3.5"
    )
}

/// The request.
pub fn request(target: &Target, req: &Request, opts: &Options, key: &str) -> Prepared {
    let model = &target.model;
    let mut b = Obj::new();
    b.set("model", Js::str(&model.id));
    if let Some(t) = opts.temperature {
        b.set("temperature", Js::Num(t));
    }
    let max = opts
        .max_tokens
        .or_else(|| (model.max_tokens > 0).then(|| model.max_tokens.min(32_000)));
    if let Some(n) = max {
        b.set("max_tokens", Js::Num(n as f64));
    }
    b.set("stream", Js::Bool(true));
    b.set(
        "messages",
        Js::Arr(wire_messages::messages(
            &req.messages,
            model,
            req.system_prompt.as_deref(),
        )),
    );
    if !req.tools.is_empty() {
        let tools = req
            .tools
            .iter()
            .map(|t| {
                let mut f = Obj::new();
                f.set("name", Js::str(&t.name));
                f.set("description", Js::str(&t.description));
                f.set("strict", Js::Bool(false));
                f.set("parameters", crate::providers::openai::js(&t.parameters));
                let mut o = Obj::new();
                o.set("type", Js::str("function"));
                o.set("function", Js::Obj(f));
                Js::Obj(o)
            })
            .collect();
        b.set("tools", Js::Arr(tools));
    }
    if let Some(tc) = &opts.tool_choice {
        b.set(
            "tool_choice",
            match tc {
                ToolChoice::Auto => Js::str("auto"),
                ToolChoice::None => Js::str("none"),
                ToolChoice::Required => Js::str("required"),
                ToolChoice::Tool(name) => {
                    let mut f = Obj::new();
                    f.set("name", Js::str(name));
                    let mut o = Obj::new();
                    o.set("type", Js::str("function"));
                    o.set("function", Js::Obj(f));
                    Js::Obj(o)
                }
            },
        );
    }
    if model.reasoning
        && let Some(level) = crate::providers::openai::effort(target, opts)
    {
        if uses_reasoning_effort(&model.id) {
            let effort = match target.details.thinking_level_map.get(level) {
                Some(Value::String(s)) => Js::str(s),
                _ => Js::str("high"),
            };
            b.set("reasoning_effort", effort);
        } else {
            b.set("prompt_mode", Js::str("reasoning"));
        }
    }
    let mut h = vec![
        ("accept".to_owned(), "text/event-stream".to_owned()),
        ("authorization".to_owned(), format!("Bearer {key}")),
        ("content-type".to_owned(), "application/json".to_owned()),
    ];
    for (k, v) in &opts.headers {
        set_header(&mut h, k, v.clone());
    }
    if let Some(s) = &opts.session_id
        && !h.iter().any(|(k, _)| k.eq_ignore_ascii_case("x-affinity"))
    {
        h.push(("x-affinity".to_owned(), s.clone()));
    }
    Prepared {
        url: format!(
            "{}/v1/chat/completions",
            model.base_url.trim_end_matches('/')
        ),
        headers: h,
        body: Js::Obj(b).to_json(),
    }
}

/// The message of an HTTP error: `Mistral API error (STATUS): BODY` (long bodies cut).
pub fn http_error(status: u16, body: &str) -> String {
    let body = body.trim();
    if body.is_empty() {
        return format!("Mistral API error ({status}): status code (no body)");
    }
    let units = pi_base::js::utf16_len(body);
    let text = if units > MAX_ERROR_BODY {
        format!(
            "{}... [truncated {} chars]",
            pi_base::js::utf16_prefix(body, MAX_ERROR_BODY),
            units - MAX_ERROR_BODY
        )
    } else {
        body.to_owned()
    };
    format!("Mistral API error ({status}): {text}")
}

/// The state of one streamed response.
pub struct Stream {
    pub msg: AssistantMessage,
    prices: crate::models::Prices,
    /// The text or thinking block being streamed.
    current: Option<usize>,
    /// Tool calls by `id:index`, in the order they started.
    tools: Vec<(String, usize)>,
    /// `data: [DONE]` arrived.
    pub done: bool,
    finish_seen: bool,
}

impl Stream {
    pub fn new(target: &Target, timestamp: i64) -> Stream {
        Stream {
            msg: AssistantMessage::for_target(target, timestamp),
            prices: target.details.prices,
            current: None,
            tools: Vec::new(),
            done: false,
            finish_seen: false,
        }
    }

    /// Ends the text or thinking block being streamed.
    fn close(&mut self, sink: Sink) {
        if let Some(index) = self.current.take() {
            let ev = match self.msg.content.get(index) {
                Some(Block::Thinking { .. }) => Event::ThinkingEnd { index },
                _ => Event::TextEnd { index },
            };
            sink(&ev, &self.msg);
        }
    }

    /// Appends to the open block of that kind, starting one if needed.
    fn append(&mut self, thinking: bool, delta: &str, sink: Sink) {
        let open = self.current.filter(|i| {
            matches!(
                (self.msg.content.get(*i), thinking),
                (Some(Block::Thinking { .. }), true) | (Some(Block::Text { .. }), false)
            )
        });
        let index = match open {
            Some(i) => i,
            None => {
                self.close(sink);
                self.msg.content.push(if thinking {
                    Block::Thinking {
                        thinking: String::new(),
                        signature: None,
                        redacted: false,
                    }
                } else {
                    Block::Text {
                        text: String::new(),
                        signature: None,
                    }
                });
                let i = self.msg.content.len() - 1;
                self.current = Some(i);
                sink(
                    &if thinking {
                        Event::ThinkingStart { index: i }
                    } else {
                        Event::TextStart { index: i }
                    },
                    &self.msg,
                );
                i
            }
        };
        match self.msg.content.get_mut(index) {
            Some(Block::Thinking { thinking: t, .. }) => t.push_str(delta),
            Some(Block::Text { text, .. }) => text.push_str(delta),
            _ => {}
        }
        let delta = delta.to_owned();
        sink(
            &if thinking {
                Event::ThinkingDelta { index, delta }
            } else {
                Event::TextDelta { index, delta }
            },
            &self.msg,
        );
    }

    /// Handles the data of one SSE event.
    pub fn data(&mut self, data: &str, sink: Sink) -> Result<(), LlmError> {
        let data = data.trim();
        if data == "[DONE]" {
            self.done = true;
            return Ok(());
        }
        let chunk: Value = serde_json::from_str(data)
            .map_err(|e| LlmError::new(format!("could not parse a stream chunk: {e}")))?;
        if chunk.get("object").and_then(Value::as_str) == Some("error")
            || chunk.get("error").is_some_and(|e| !e.is_null())
        {
            let e = chunk
                .get("error")
                .filter(|e| !e.is_null())
                .unwrap_or(&chunk);
            let m = match e.get("message").and_then(Value::as_str) {
                Some(s) if !s.is_empty() => s.to_owned(),
                _ => e.to_string(),
            };
            return Err(m.into());
        }
        if self.msg.response_id.is_none()
            && let Some(id) = chunk.get("id").and_then(Value::as_str)
            && !id.is_empty()
        {
            self.msg.response_id = Some(id.to_owned());
        }
        if let Some(u) = chunk.get("usage").filter(|u| u.is_object()) {
            let n = |k: &str| u.get(k).and_then(Value::as_f64).unwrap_or(0.0).max(0.0) as u64;
            let usage = &mut self.msg.usage;
            usage.input = n("prompt_tokens");
            usage.output = n("completion_tokens");
            usage.cache_read = 0;
            usage.cache_write = 0;
            usage.settle(&self.prices);
            let total = n("total_tokens");
            usage.total_tokens = if total > 0 {
                total
            } else {
                usage.input + usage.output
            };
            sink(&Event::Usage, &self.msg);
        }
        let Some(choice) = chunk
            .get("choices")
            .and_then(Value::as_array)
            .and_then(|c| c.first())
        else {
            return Ok(());
        };
        if let Some(reason) = choice.get("finish_reason").and_then(Value::as_str) {
            self.finish_seen = true;
            self.msg.stop_reason = match reason {
                "length" | "model_length" => StopReason::Length,
                "tool_calls" => StopReason::ToolUse,
                "error" => StopReason::Error,
                _ => StopReason::Stop,
            };
        }
        let Some(delta) = choice.get("delta") else {
            return Ok(());
        };
        let items: Vec<Value> = match delta.get("content") {
            None | Some(Value::Null) => Vec::new(),
            Some(Value::Array(a)) => a.clone(),
            Some(other) => vec![other.clone()],
        };
        for item in &items {
            if let Some(s) = item.as_str() {
                self.append(false, s, sink);
                continue;
            }
            match item.get("type").and_then(Value::as_str) {
                Some("thinking") => {
                    let text: String = item
                        .get("thinking")
                        .and_then(Value::as_array)
                        .unwrap_or(&Vec::new())
                        .iter()
                        .filter_map(|p| p.get("text").and_then(Value::as_str))
                        .collect();
                    if !text.is_empty() {
                        self.append(true, &text, sink);
                    }
                }
                Some("text") => {
                    let text = item.get("text").and_then(Value::as_str).unwrap_or_default();
                    self.append(false, text, sink);
                }
                _ => {}
            }
        }
        for call in delta
            .get("tool_calls")
            .and_then(Value::as_array)
            .unwrap_or(&Vec::new())
        {
            self.close(sink);
            let at = call.get("index").and_then(Value::as_i64).unwrap_or(0);
            let id = match call.get("id").and_then(Value::as_str) {
                Some(id) if !id.is_empty() && id != "null" => id.to_owned(),
                _ => wire_messages::derive_id(&format!("toolcall:{at}"), 0),
            };
            let key = format!("{id}:{at}");
            let index = match self.tools.iter().find(|(k, _)| *k == key) {
                Some((_, i)) => *i,
                None => {
                    let name = call
                        .get("function")
                        .and_then(|f| f.get("name"))
                        .and_then(Value::as_str)
                        .unwrap_or_default();
                    self.msg.content.push(Block::ToolCall {
                        id,
                        name: name.to_owned(),
                        arguments: Value::Object(serde_json::Map::new()),
                        partial: String::new(),
                        thought_signature: None,
                    });
                    let i = self.msg.content.len() - 1;
                    self.tools.push((key, i));
                    sink(&Event::ToolCallStart { index: i }, &self.msg);
                    i
                }
            };
            let delta = match call.get("function").and_then(|f| f.get("arguments")) {
                Some(Value::String(s)) => s.clone(),
                Some(v) if !v.is_null() && v != &Value::Bool(false) => v.to_string(),
                _ => "{}".to_owned(),
            };
            if let Some(Block::ToolCall {
                arguments, partial, ..
            }) = self.msg.content.get_mut(index)
            {
                partial.push_str(&delta);
                *arguments = json_partial::parse(partial);
            }
            sink(&Event::ToolCallDelta { index, delta }, &self.msg);
        }
        Ok(())
    }

    /// Ends the stream: closes the blocks and checks that the response is complete.
    pub fn finish(&mut self, sink: Sink) -> Result<(), LlmError> {
        self.close(sink);
        for (_, index) in std::mem::take(&mut self.tools) {
            if let Some(Block::ToolCall {
                arguments, partial, ..
            }) = self.msg.content.get_mut(index)
            {
                *arguments = json_partial::parse(partial);
                partial.clear();
            }
            sink(&Event::ToolCallEnd { index }, &self.msg);
        }
        if !self.done && !self.finish_seen {
            return Err(
                "the stream ended before the response was complete (no finish_reason, no [DONE])"
                    .into(),
            );
        }
        if self.msg.stop_reason.is_failure() {
            return Err("An unknown error occurred".into());
        }
        Ok(())
    }
}
