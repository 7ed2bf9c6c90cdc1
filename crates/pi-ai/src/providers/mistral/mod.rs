//! Mistral (`mistral-conversations`), as the reference's provider speaks it through Mistral's
//! SDK: `POST {baseUrl}/v1/chat/completions`, streamed as chat completion chunks.
//!
//! Where it differs from Chat Completions: its own tool-call ids (nine letters and digits,
//! see `crate::providers::mistral::messages`), thinking as typed content chunks (`{"type": "thinking",
//! "thinking": [{"type": "text", …}]}`) both ways, `max_tokens`, `prompt_mode: reasoning`
//! (Magistral) or `reasoning_effort` (Mistral Small 4, Medium 3.5) for thinking, and the
//! session id as `x-affinity` (Mistral's prompt-cache routing).

mod messages;

use serde_json::Value;

use crate::message::{Block, Event, LlmError, StopReason};
use crate::providers::blocks::Assembler;
use crate::providers::mistral::messages as wire_messages;
use crate::providers::sse;
use crate::providers::{
    Call, ErrorResponse, Prepared, Provider, max_tokens, openai, thinking_level, with_caller,
};
use crate::request::{Options, Request, Target};
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
pub(crate) fn request(target: &Target, req: &Request, opts: &Options, key: &str) -> Prepared {
    let model = &target.model;
    let mut b = Obj::new();
    b.set("model", Js::str(&model.id));
    if let Some(t) = opts.temperature {
        b.set("temperature", Js::Num(t));
    }
    if let Some(n) = max_tokens(opts, model) {
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
                let mut f = openai::described(t);
                f.set("strict", Js::Bool(false));
                f.set("parameters", openai::js(&t.parameters));
                openai::function(f)
            })
            .collect();
        b.set("tools", Js::Arr(tools));
    }
    if let Some(tc) = &opts.tool_choice {
        b.set("tool_choice", openai::tool_choice(tc));
    }
    if model.reasoning
        && let Some(level) = thinking_level(target, opts)
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
    let h = vec![
        ("accept".to_owned(), "text/event-stream".to_owned()),
        ("authorization".to_owned(), format!("Bearer {key}")),
        ("content-type".to_owned(), "application/json".to_owned()),
    ];
    let mut h = with_caller(h, opts);
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
        secrets: Vec::new(),
    }
}

/// The message of an HTTP error: `Mistral API error (STATUS): BODY` (long bodies cut).
pub(crate) fn http_error(status: u16, body: &str) -> String {
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

/// Mistral's chat API (`mistral-conversations`).
pub(crate) struct Conversations;

impl Provider for Conversations {
    type Parser = sse::Reader<Stream>;

    async fn request(call: &Call<'_>) -> Result<Prepared, LlmError> {
        Ok(request(call.target, call.req, call.opts, call.key))
    }

    fn http_error(_call: &Call<'_>, response: &ErrorResponse) -> String {
        http_error(response.status, &response.body)
    }

    fn parser(call: &Call<'_>) -> Self::Parser {
        sse::Reader::new(call, Stream::new(call.target))
    }
}

/// The state of one streamed response.
pub(crate) struct Stream {
    prices: crate::models::Prices,
    /// Tool calls by `id:index`, in the order they started.
    tools: Vec<(String, usize)>,
    /// `data: [DONE]` arrived.
    done: bool,
    finish_seen: bool,
}

/// The error object of a chunk, if it is one or has one.
fn error_of(chunk: &Value) -> Option<&Value> {
    let error = chunk.get("error").filter(|e| !e.is_null());
    if chunk.get("object").and_then(Value::as_str) == Some("error") {
        return Some(error.unwrap_or(chunk));
    }
    error
}

impl sse::Events for Stream {
    fn event(&mut self, out: &mut Assembler, ev: &sse::Event) -> Result<bool, LlmError> {
        self.data(out, &ev.data).map(|()| self.done)
    }

    /// Closes the blocks and checks that the response is complete.
    fn finish(&mut self, out: &mut Assembler) -> Result<(), LlmError> {
        out.close_current();
        for (_, index) in std::mem::take(&mut self.tools) {
            out.close(index);
        }
        if !self.done && !self.finish_seen {
            return Err(openai::INCOMPLETE.into());
        }
        out.outcome()
    }
}

impl Stream {
    pub(crate) fn new(target: &Target) -> Stream {
        Stream {
            prices: target.details.prices.clone(),
            tools: Vec::new(),
            done: false,
            finish_seen: false,
        }
    }

    /// Appends to the open block of that kind, starting one if needed.
    fn append(&mut self, out: &mut Assembler, thinking: bool, delta: &str) {
        let index = out.current(thinking);
        if thinking {
            out.append_thinking(index, delta);
        } else {
            out.append_text(index, delta);
        }
    }

    /// Handles the data of one SSE event.
    fn data(&mut self, out: &mut Assembler, data: &str) -> Result<(), LlmError> {
        let data = data.trim();
        if data == "[DONE]" {
            self.done = true;
            return Ok(());
        }
        let chunk = openai::parse_chunk(data)?;
        if let Some(e) = error_of(&chunk) {
            return Err(openai::stream_error(e));
        }
        openai::note_response_id(out.msg, &chunk);
        if let Some(u) = chunk.get("usage").filter(|u| u.is_object()) {
            self.usage(out, u);
        }
        let Some(choice) = openai::first_choice(&chunk) else {
            return Ok(());
        };
        if let Some(reason) = choice.get("finish_reason").and_then(Value::as_str) {
            self.finish_seen = true;
            out.msg.stop_reason = match reason {
                "length" | "model_length" => StopReason::Length,
                "tool_calls" => StopReason::ToolUse,
                "error" => StopReason::Error,
                _ => StopReason::Stop,
            };
        }
        let Some(delta) = choice.get("delta") else {
            return Ok(());
        };
        match delta.get("content") {
            None | Some(Value::Null) => {}
            Some(Value::Array(items)) => items.iter().for_each(|i| self.content(out, i)),
            Some(item) => self.content(out, item),
        }
        for call in delta
            .get("tool_calls")
            .and_then(Value::as_array)
            .unwrap_or(&Vec::new())
        {
            self.tool_call(out, call);
        }
        Ok(())
    }

    fn usage(&mut self, out: &mut Assembler, u: &Value) {
        let n = |k: &str| u.get(k).and_then(Value::as_f64).unwrap_or(0.0).max(0.0) as u64;
        let usage = &mut out.msg.usage;
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
        out.emit(&Event::Usage);
    }

    /// One content chunk: text (a string or a `text` chunk) or a `thinking` chunk.
    fn content(&mut self, out: &mut Assembler, item: &Value) {
        if let Some(s) = item.as_str() {
            self.append(out, false, s);
            return;
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
                    self.append(out, true, &text);
                }
            }
            Some("text") => {
                let text = item.get("text").and_then(Value::as_str).unwrap_or_default();
                self.append(out, false, text);
            }
            _ => {}
        }
    }

    fn tool_call(&mut self, out: &mut Assembler, call: &Value) {
        out.close_current();
        let at = call.get("index").and_then(Value::as_i64).unwrap_or(0);
        let id = match call.get("id").and_then(Value::as_str) {
            Some(id) if !id.is_empty() && id != "null" => id.to_owned(),
            _ => wire_messages::derive_id(&format!("toolcall:{at}"), 0),
        };
        let key = format!("{id}:{at}");
        let function = call.get("function");
        let index = match self.tools.iter().find(|(k, _)| *k == key) {
            Some((_, i)) => *i,
            None => {
                let name = function
                    .and_then(|f| f.get("name"))
                    .and_then(Value::as_str)
                    .unwrap_or_default();
                let i = out.open(Block::tool_call(id, name.to_owned()));
                self.tools.push((key, i));
                i
            }
        };
        let delta = match function.and_then(|f| f.get("arguments")) {
            Some(Value::String(s)) => s.clone(),
            Some(v) if !v.is_null() && v != &Value::Bool(false) => v.to_string(),
            _ => "{}".to_owned(),
        };
        out.append_arguments(index, &delta);
    }
}
