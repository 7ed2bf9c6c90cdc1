//! OpenAI Chat Completions (`openai-completions`), as the reference's provider speaks it:
//! the request body, and the streamed chunks turned into [`Event`]s and an
//! [`AssistantMessage`]. Works with any server of that API (OpenAI, OpenRouter, Groq, vLLM,
//! llama.cpp, Ollama, LM Studio, …) through the model's `baseUrl` and `compat` flags.

pub mod messages;

use std::collections::HashMap;

use serde_json::Value;

use crate::message::{AssistantMessage, Block, Event, LlmError, StopReason};
use crate::models::Model;
use crate::providers::blocks::Assembler;
use crate::providers::openai::messages as wire_messages;
use crate::providers::sse;
use crate::providers::{Call, ErrorResponse, Prepared, Provider, max_tokens, thinking_level};
use crate::request::{Options, Request, Target, Tool, ToolChoice};
use crate::value::{Obj, Value as Js};

/// The compatibility flags that shape the request (beyond those of the messages, in
/// `crate::providers::openai::messages::Compat`): detected from the provider and base URL, overridden
/// by the model's `compat`.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Flags {
    pub(crate) supports_store: bool,
    pub(crate) supports_reasoning_effort: bool,
    pub(crate) supports_usage_in_streaming: bool,
    /// `max_completion_tokens` or `max_tokens`.
    pub(crate) max_tokens_field: String,
    /// `openai`, `openrouter`, `deepseek`, `zai`, `qwen`, `qwen-chat-template`.
    pub(crate) thinking_format: String,
    pub(crate) supports_strict_mode: bool,
    pub(crate) zai_tool_stream: bool,
    pub(crate) supports_long_cache_retention: bool,
    pub(crate) anthropic_cache_control: bool,
}

impl Flags {
    pub(crate) fn of(model: &Model) -> Flags {
        let wire_messages::Service {
            zai,
            moonshot,
            cf_workers,
            cf_gateway,
            grok,
            deepseek,
            openrouter,
            chutes,
            non_standard,
        } = wire_messages::Service::of(model);
        let use_max_tokens = chutes || moonshot || cf_gateway;
        let thinking = if deepseek {
            "deepseek"
        } else if zai {
            "zai"
        } else if openrouter {
            "openrouter"
        } else {
            "openai"
        };
        let b = |k: &str, d: bool| model.compat_bool(k).unwrap_or(d);
        Flags {
            supports_store: b("supportsStore", !non_standard),
            supports_reasoning_effort: b(
                "supportsReasoningEffort",
                !grok && !zai && !moonshot && !cf_gateway,
            ),
            supports_usage_in_streaming: b("supportsUsageInStreaming", true),
            max_tokens_field: model
                .compat_str("maxTokensField")
                .unwrap_or(if use_max_tokens {
                    "max_tokens"
                } else {
                    "max_completion_tokens"
                })
                .to_owned(),
            thinking_format: model
                .compat_str("thinkingFormat")
                .unwrap_or(thinking)
                .to_owned(),
            supports_strict_mode: b("supportsStrictMode", !moonshot && !cf_gateway),
            zai_tool_stream: b("zaiToolStream", false),
            supports_long_cache_retention: b(
                "supportsLongCacheRetention",
                !(cf_workers || cf_gateway),
            ),
            anthropic_cache_control: wire_messages::Compat::of(model).anthropic_cache_control,
        }
    }
}

/// `POST {baseUrl}/chat/completions`.
pub(crate) fn url(model: &Model) -> String {
    format!("{}/chat/completions", model.base_url.trim_end_matches('/'))
}

/// Converts a serde value into a JavaScript-ordered one.
pub(crate) fn js(v: &Value) -> Js {
    Js::parse(&serde_json::to_vec(v).unwrap_or_default()).unwrap_or_default()
}

fn num(n: u64) -> Js {
    Js::Num(n as f64)
}

/// Whether the conversation has tool calls or results (then `tools` must be sent).
fn has_tool_history(messages: &[Js]) -> bool {
    messages.iter().any(|m| {
        let role = m.get("role");
        role.is_some_and(|r| r.is_str("toolResult"))
            || (role.is_some_and(|r| r.is_str("assistant"))
                && m.get("content")
                    .and_then(Js::as_arr)
                    .unwrap_or_default()
                    .iter()
                    .any(|b| b.get("type").is_some_and(|t| t.is_str("toolCall"))))
    })
}

/// The provider's value for a level (`thinkingLevelMap`), else the level.
pub(crate) fn mapped(target: &Target, level: &str) -> Js {
    match target.details.thinking_level_map.get(level) {
        Some(Value::String(s)) => Js::str(s),
        _ => Js::str(level),
    }
}

/// The request body (upstream's `buildParams` for `streamSimple`).
pub(crate) fn body(target: &Target, req: &Request, opts: &Options) -> Vec<u8> {
    let model = &target.model;
    let flags = Flags::of(model);
    let retention = opts.cache_retention();
    let mut b = Obj::new();
    b.set("model", Js::str(&model.id));
    let messages = wire_messages::messages(
        &req.messages,
        model,
        req.system_prompt.as_deref(),
        retention,
    );
    // Set last (its place in the body is second).
    b.set("messages", Js::Arr(Vec::new()));
    b.set("stream", Js::Bool(true));
    if retention == "long" && flags.supports_long_cache_retention {
        b.set("prompt_cache_retention", Js::str("24h"));
    }
    if flags.supports_usage_in_streaming {
        let mut so = Obj::new();
        so.set("include_usage", Js::Bool(true));
        b.set("stream_options", Js::Obj(so));
    }
    if flags.supports_store {
        b.set("store", Js::Bool(false));
    }
    if let Some(n) = max_tokens(opts, model).filter(|n| *n > 0) {
        b.set(&flags.max_tokens_field, num(n));
    }
    if let Some(t) = opts.temperature {
        b.set("temperature", Js::Num(t));
    }
    set_tools(&mut b, &flags, req, retention);
    if let Some(tc) = &opts.tool_choice {
        b.set("tool_choice", tool_choice(tc));
    }
    if model.reasoning {
        set_thinking(&mut b, &flags, target, thinking_level(target, opts));
    }
    set_routing(&mut b, model);
    b.set("messages", Js::Arr(messages));
    super::apply_sampling(&mut b, target, opts);
    Js::Obj(b).to_json()
}

/// `tools` (the last one marked for caching where the server wants Anthropic's cache
/// control), and `tools: []` for a conversation with tool calls but no tools now.
fn set_tools(b: &mut Obj, flags: &Flags, req: &Request, retention: &str) {
    if req.tools.is_empty() {
        if has_tool_history(&req.messages) {
            b.set("tools", Js::Arr(Vec::new()));
        }
        return;
    }
    let mut tools: Vec<Js> = req
        .tools
        .iter()
        .map(|t| {
            let mut f = described(t);
            f.set("parameters", js(&t.parameters));
            if flags.supports_strict_mode {
                f.set("strict", Js::Bool(false));
            }
            function(f)
        })
        .collect();
    if flags.anthropic_cache_control
        && retention != "none"
        && let Some(Js::Obj(last)) = tools.last_mut()
    {
        let mut cc = Obj::new();
        cc.set("type", Js::str("ephemeral"));
        if retention == "long" && flags.supports_long_cache_retention {
            cc.set("ttl", Js::str("1h"));
        }
        last.set("cache_control", Js::Obj(cc));
    }
    b.set("tools", Js::Arr(tools));
    if flags.zai_tool_stream {
        b.set("tool_stream", Js::Bool(true));
    }
}

/// A function's `name` and `description`.
pub(crate) fn described(t: &Tool) -> Obj {
    let mut f = Obj::new();
    f.set("name", Js::str(&t.name));
    f.set("description", Js::str(&t.description));
    f
}

/// `{"type": "function", "function": f}`.
pub(crate) fn function(f: Obj) -> Js {
    let mut o = Obj::new();
    o.set("type", Js::str("function"));
    o.set("function", Js::Obj(f));
    Js::Obj(o)
}

/// `tool_choice` of a Chat Completions request (Mistral's too).
pub(crate) fn tool_choice(tc: &ToolChoice) -> Js {
    match tc {
        ToolChoice::Auto => Js::str("auto"),
        ToolChoice::None => Js::str("none"),
        ToolChoice::Required => Js::str("required"),
        ToolChoice::Tool(name) => {
            let mut f = Obj::new();
            f.set("name", Js::str(name));
            function(f)
        }
    }
}

/// The thinking parameters of a reasoning model, in the server's format.
fn set_thinking(b: &mut Obj, flags: &Flags, target: &Target, effort: Option<&str>) {
    let off_value = target.details.thinking_level_map.get("off");
    match flags.thinking_format.as_str() {
        "zai" | "qwen" => b.set("enable_thinking", Js::Bool(effort.is_some())),
        "qwen-chat-template" => {
            let mut k = Obj::new();
            k.set("enable_thinking", Js::Bool(effort.is_some()));
            k.set("preserve_thinking", Js::Bool(true));
            b.set("chat_template_kwargs", Js::Obj(k));
        }
        "deepseek" => {
            let mut t = Obj::new();
            let on = if effort.is_some() {
                "enabled"
            } else {
                "disabled"
            };
            t.set("type", Js::str(on));
            b.set("thinking", Js::Obj(t));
            if let Some(e) = effort {
                b.set("reasoning_effort", mapped(target, e));
            }
        }
        "openrouter" => {
            let value = match (effort, off_value) {
                (Some(e), _) => mapped(target, e),
                (None, Some(Value::Null)) => return,
                (None, Some(Value::String(s))) => Js::str(s),
                (None, _) => Js::str("none"),
            };
            let mut r = Obj::new();
            r.set("effort", value);
            b.set("reasoning", Js::Obj(r));
        }
        _ if flags.supports_reasoning_effort => match (effort, off_value) {
            (Some(e), _) => b.set("reasoning_effort", mapped(target, e)),
            (None, Some(Value::String(s))) => b.set("reasoning_effort", Js::str(s)),
            (None, _) => {}
        },
        _ => {}
    }
}

/// OpenRouter's `provider` and the Vercel AI Gateway's `providerOptions`, from the model's
/// routing settings.
fn set_routing(b: &mut Obj, model: &Model) {
    if model.base_url.contains("openrouter.ai")
        && let Some(r) = model.compat.get("openRouterRouting")
    {
        b.set("provider", js(r));
    }
    if model.base_url.contains("ai-gateway.vercel.sh")
        && let Some(r) = model.compat.get("vercelGatewayRouting")
    {
        let mut g = Obj::new();
        if let Some(o) = r.get("only") {
            g.set("only", js(o));
        }
        if let Some(o) = r.get("order") {
            g.set("order", js(o));
        }
        if !g.is_empty() {
            let mut po = Obj::new();
            po.set("gateway", Js::Obj(g));
            b.set("providerOptions", Js::Obj(po));
        }
    }
}

/// The message of an HTTP error, as the OpenAI SDK words it: `STATUS MESSAGE`, where the
/// message is `error.message` of a JSON body, else the JSON of `error`, else the text.
pub(crate) fn http_error(status: u16, body: &str) -> String {
    let msg = match serde_json::from_str::<Value>(body) {
        Ok(v) => match v.get("error") {
            Some(e) => match e.get("message") {
                Some(Value::String(s)) if !s.is_empty() => s.clone(),
                Some(m) if !m.is_null() && m != &Value::Bool(false) && m.as_str() != Some("") => {
                    m.to_string()
                }
                _ => e.to_string(),
            },
            None => String::new(),
        },
        Err(_) => body.trim().to_owned(),
    };
    crate::message::status_message(status, &msg)
}

/// The OpenAI Chat Completions API (`openai-completions`).
pub(crate) struct Completions;

impl Provider for Completions {
    type Parser = sse::Reader<Stream>;

    async fn request(call: &Call<'_>) -> Result<Prepared, LlmError> {
        let headers = vec![
            ("accept".to_owned(), "application/json".to_owned()),
            ("authorization".to_owned(), format!("Bearer {}", call.key)),
        ];
        let body = body(call.target, call.req, call.opts);
        Ok(Prepared::json(
            call.opts,
            url(&call.target.model),
            headers,
            body,
        ))
    }

    fn http_error(_call: &Call<'_>, response: &ErrorResponse) -> String {
        http_error(response.status, &response.body)
    }

    fn parser(call: &Call<'_>) -> Self::Parser {
        sse::Reader::new(call, Stream::new(call.target))
    }
}

/// A stream of chat completion chunks that ended with neither a finish reason nor `[DONE]`.
pub(crate) const INCOMPLETE: &str =
    "the stream ended before the response was complete (no finish_reason, no [DONE])";

/// A chunk of the stream (Mistral's too).
pub(crate) fn parse_chunk(data: &str) -> Result<Value, LlmError> {
    serde_json::from_str(data)
        .map_err(|e| LlmError::new(format!("could not parse a stream chunk: {e}")))
}

/// The error of an error object in the stream: its message, else its JSON.
pub(crate) fn stream_error(e: &Value) -> LlmError {
    match e.get("message").and_then(Value::as_str) {
        Some(s) if !s.is_empty() => s.into(),
        _ => e.to_string().into(),
    }
}

/// Records the first non-empty chunk `id` as the response id.
pub(crate) fn note_response_id(msg: &mut AssistantMessage, chunk: &Value) {
    if msg.response_id.is_none()
        && let Some(id) = chunk.get("id").and_then(Value::as_str)
        && !id.is_empty()
    {
        msg.response_id = Some(id.to_owned());
    }
}

/// The first choice of a chunk.
pub(crate) fn first_choice(chunk: &Value) -> Option<&Value> {
    chunk
        .get("choices")
        .and_then(Value::as_array)
        .and_then(|c| c.first())
}

/// The state of one streamed response.
pub(crate) struct Stream {
    /// The text block (one per answer, however the deltas interleave).
    text: Option<usize>,
    /// The thinking block (one per answer).
    thinking: Option<usize>,
    /// Tool calls by the stream's `index`, and by their `id`.
    by_index: HashMap<i64, usize>,
    by_id: HashMap<String, usize>,
    prices: crate::models::Prices,
    model_id: String,
    /// `data: [DONE]` arrived.
    done: bool,
    finish_seen: bool,
}

fn usage_from(raw: &Value, prices: &crate::models::Prices) -> crate::message::Usage {
    let n = |v: Option<&Value>| v.and_then(Value::as_f64).unwrap_or(0.0).max(0.0) as u64;
    let details = raw.get("prompt_tokens_details");
    let prompt = n(raw.get("prompt_tokens"));
    let reported_cached = details
        .and_then(|d| d.get("cached_tokens"))
        .or_else(|| raw.get("prompt_cache_hit_tokens"));
    let reported_cached = n(reported_cached);
    let cache_write = n(details.and_then(|d| d.get("cache_write_tokens")));
    let cache_read = if cache_write > 0 {
        reported_cached.saturating_sub(cache_write)
    } else {
        reported_cached
    };
    let mut u = crate::message::Usage {
        input: prompt.saturating_sub(cache_read + cache_write),
        output: n(raw.get("completion_tokens")),
        cache_read,
        cache_write,
        ..Default::default()
    };
    u.settle(prices);
    u
}

/// The reasoning text of a delta, and the field it came in.
fn reasoning(delta: &Value) -> Option<(&'static str, &str)> {
    ["reasoning_content", "reasoning", "reasoning_text"]
        .iter()
        .find_map(|f| {
            delta
                .get(*f)
                .and_then(Value::as_str)
                .filter(|s| !s.is_empty())
                .map(|s| (*f, s))
        })
}

/// Sets a field of a tool call that is still empty.
fn fill(field: &mut String, value: Option<&str>) {
    if field.is_empty()
        && let Some(v) = value
    {
        *field = v.to_owned();
    }
}

impl sse::Events for Stream {
    fn event(&mut self, out: &mut Assembler, ev: &sse::Event) -> Result<bool, LlmError> {
        self.data(out, &ev.data).map(|()| self.done)
    }

    /// Closes the blocks and checks that the response is complete.
    fn finish(&mut self, out: &mut Assembler) -> Result<(), LlmError> {
        out.close_all();
        if !self.done && !self.finish_seen {
            return Err(INCOMPLETE.into());
        }
        match out.msg.stop_reason {
            StopReason::Error => Err(out
                .msg
                .error_message
                .clone()
                .unwrap_or_else(|| "Provider returned an error stop reason".into())
                .into()),
            StopReason::Aborted => Err("Request was aborted".into()),
            _ => Ok(()),
        }
    }
}

impl Stream {
    pub(crate) fn new(target: &Target) -> Stream {
        Stream {
            text: None,
            thinking: None,
            by_index: HashMap::new(),
            by_id: HashMap::new(),
            prices: target.details.prices.clone(),
            model_id: target.model.id.clone(),
            done: false,
            finish_seen: false,
        }
    }

    /// Handles the data of one SSE event.
    fn data(&mut self, out: &mut Assembler, data: &str) -> Result<(), LlmError> {
        if data.trim() == "[DONE]" {
            self.done = true;
            return Ok(());
        }
        let chunk = parse_chunk(data)?;
        if !chunk.is_object() {
            return Ok(());
        }
        if let Some(e) = chunk.get("error").filter(|e| !e.is_null()) {
            return Err(stream_error(e));
        }
        note_response_id(out.msg, &chunk);
        if out.msg.response_model.is_none()
            && let Some(m) = chunk.get("model").and_then(Value::as_str)
            && !m.is_empty()
            && m != self.model_id
        {
            out.msg.response_model = Some(m.to_owned());
        }
        let usage = chunk.get("usage").filter(|u| u.is_object());
        if let Some(u) = usage {
            self.usage(out, u);
        }
        let Some(choice) = first_choice(&chunk) else {
            return Ok(());
        };
        if usage.is_none()
            && let Some(u) = choice.get("usage").filter(|u| u.is_object())
        {
            self.usage(out, u);
        }
        if let Some(reason) = choice.get("finish_reason").and_then(Value::as_str)
            && !reason.is_empty()
        {
            self.finish_reason(out, reason);
        }
        if let Some(delta) = choice.get("delta").filter(|d| d.is_object()) {
            self.delta(out, delta);
        }
        Ok(())
    }

    fn usage(&mut self, out: &mut Assembler, raw: &Value) {
        out.msg.usage = usage_from(raw, &self.prices);
        out.emit(&Event::Usage);
    }

    fn finish_reason(&mut self, out: &mut Assembler, reason: &str) {
        self.finish_seen = true;
        out.msg.stop_reason = match reason {
            "stop" | "end" => StopReason::Stop,
            "length" => StopReason::Length,
            "function_call" | "tool_calls" => StopReason::ToolUse,
            other => {
                out.msg.error_message = Some(format!("Provider finish_reason: {other}"));
                StopReason::Error
            }
        };
    }

    /// The text, reasoning and tool calls of a choice's delta.
    fn delta(&mut self, out: &mut Assembler, delta: &Value) {
        if let Some(text) = delta.get("content").and_then(Value::as_str)
            && !text.is_empty()
        {
            let index = *self.text.get_or_insert_with(|| out.open(Block::text()));
            out.append_text(index, text);
        }
        if let Some((field, text)) = reasoning(delta) {
            let index = *self
                .thinking
                .get_or_insert_with(|| out.open(Block::thinking(Some(field.to_owned()))));
            out.append_thinking(index, text);
        }
        if let Some(calls) = delta.get("tool_calls").and_then(Value::as_array) {
            for call in calls {
                self.tool_call_delta(out, call);
            }
        }
        if let Some(details) = delta.get("reasoning_details").and_then(Value::as_array) {
            self.reasoning_details(out, details);
        }
    }

    fn tool_call_delta(&mut self, out: &mut Assembler, call: &Value) {
        let stream_index = call.get("index").and_then(Value::as_i64);
        let id = call
            .get("id")
            .and_then(Value::as_str)
            .filter(|s| !s.is_empty());
        let function = call.get("function");
        let name = function
            .and_then(|f| f.get("name"))
            .and_then(Value::as_str)
            .filter(|s| !s.is_empty());
        let known = stream_index
            .and_then(|k| self.by_index.get(&k).copied())
            .or_else(|| id.and_then(|id| self.by_id.get(id).copied()));
        let index = match known {
            Some(i) => i,
            None => {
                let block = Block::tool_call(
                    id.unwrap_or_default().to_owned(),
                    name.unwrap_or_default().to_owned(),
                );
                out.open(block)
            }
        };
        if let Some(k) = stream_index {
            self.by_index.entry(k).or_insert(index);
        }
        if let Some(id) = id {
            self.by_id.insert(id.to_owned(), index);
        }
        if let Some(Block::ToolCall {
            id: bid,
            name: bname,
            ..
        }) = out.msg.content.get_mut(index)
        {
            fill(bid, id);
            fill(bname, name);
        }
        let arguments = function
            .and_then(|f| f.get("arguments"))
            .and_then(Value::as_str)
            .unwrap_or_default();
        out.append_arguments(index, arguments);
    }

    /// OpenRouter's encrypted reasoning: kept as the signature of the tool call it names.
    fn reasoning_details(&mut self, out: &mut Assembler, details: &[Value]) {
        for d in details {
            if d.get("type").and_then(Value::as_str) != Some("reasoning.encrypted")
                || d.get("data").is_none_or(|x| x.is_null())
            {
                continue;
            }
            let Some(id) = d.get("id").and_then(Value::as_str) else {
                continue;
            };
            for b in &mut out.msg.content {
                if let Block::ToolCall {
                    id: cid,
                    thought_signature,
                    ..
                } = b
                    && cid == id
                {
                    *thought_signature = Some(d.to_string());
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::models::{Details, Registry};
    use crate::providers::blocks::Draft;
    use crate::providers::sse::Events as _;
    use serde_json::json;

    fn target(provider: &str, id: &str) -> Target {
        let r = Registry::builtin();
        let m = r.find(provider, id).unwrap().clone();
        let d = r.details_of(provider, id);
        Target::new(m, d).unwrap()
    }

    fn run(chunks: &[&str]) -> (AssistantMessage, Vec<Event>, Result<(), LlmError>) {
        let t = target("openai", "gpt-4o");
        let mut s = Stream::new(&t);
        let mut draft = Draft::new(AssistantMessage::for_target(&t, 1));
        let mut events = Vec::new();
        let mut sink = |e: &Event, _: &AssistantMessage| events.push(e.clone());
        let mut out = draft.assembler(&mut sink);
        let mut res = Ok(());
        for c in chunks {
            if let Err(e) = s.data(&mut out, c) {
                res = Err(e);
                break;
            }
        }
        if res.is_ok() {
            res = s.finish(&mut out);
        }
        (draft.into_message(), events, res)
    }

    #[test]
    fn text_reasoning_tool_calls_and_usage() {
        let (m, events, res) = run(&[
            r#"{"id":"c1","model":"gpt-4o-2024","choices":[{"index":0,"delta":{"role":"assistant","reasoning_content":"think"}}]}"#,
            r#"{"choices":[{"delta":{"content":"Hel"}}]}"#,
            r#"{"choices":[{"delta":{"content":"lo"}}]}"#,
            r#"{"choices":[{"delta":{"tool_calls":[{"index":0,"id":"call_1","type":"function","function":{"name":"read","arguments":"{\"pa"}}]}}]}"#,
            r#"{"choices":[{"delta":{"tool_calls":[{"index":0,"function":{"arguments":"th\":\"a.ts\"}"}}]}}]}"#,
            r#"{"choices":[{"delta":{"tool_calls":[{"index":1,"id":"call_2","function":{"name":"bash","arguments":"{}"}}]}}]}"#,
            r#"{"choices":[{"delta":{},"finish_reason":"tool_calls"}]}"#,
            r#"{"choices":[],"usage":{"prompt_tokens":100,"completion_tokens":20,"prompt_tokens_details":{"cached_tokens":30}}}"#,
            "[DONE]",
        ]);
        assert_eq!(res, Ok(()));
        assert_eq!(m.stop_reason, StopReason::ToolUse);
        assert_eq!(m.response_id.as_deref(), Some("c1"));
        assert_eq!(m.response_model.as_deref(), Some("gpt-4o-2024"));
        assert_eq!(
            serde_json::to_value(m.content.iter().map(Block::to_json).collect::<Vec<_>>()).unwrap(),
            json!([
                {"type":"thinking","thinking":"think","thinkingSignature":"reasoning_content"},
                {"type":"text","text":"Hello"},
                {"type":"toolCall","id":"call_1","name":"read","arguments":{"path":"a.ts"}},
                {"type":"toolCall","id":"call_2","name":"bash","arguments":{}}
            ])
        );
        assert_eq!(
            (m.usage.input, m.usage.output, m.usage.cache_read),
            (70, 20, 30)
        );
        assert_eq!(m.usage.total_tokens, 120);
        // gpt-4o: $2.5 / $10 / $1.25 per million.
        assert!(
            (m.usage.cost.total - (70.0 * 2.5 + 20.0 * 10.0 + 30.0 * 1.25) / 1e6).abs() < 1e-12
        );
        assert!(events.contains(&Event::ToolCallDelta {
            index: 2,
            delta: "th\":\"a.ts\"}".into()
        }));
        assert_eq!(events.last(), Some(&Event::ToolCallEnd { index: 3 }));
    }

    #[test]
    fn errors_in_stream() {
        let (_, _, res) =
            run(&[r#"{"choices":[{"delta":{"content":"x"},"finish_reason":"content_filter"}]}"#]);
        assert_eq!(res, Err("Provider finish_reason: content_filter".into()));
        let (m, _, res) = run(&[r#"{"choices":[{"delta":{"content":"partial"}}]}"#]);
        assert!(
            res.unwrap_err()
                .message
                .contains("ended before the response was complete")
        );
        assert_eq!(m.text(), "partial");
        let (_, _, res) = run(&[r#"{"error":{"message":"overloaded","type":"x"}}"#]);
        assert_eq!(res, Err("overloaded".into()));
    }

    #[test]
    fn http_errors_read_like_the_sdk() {
        assert_eq!(
            http_error(
                400,
                r#"{"error":{"message":"This model's maximum context length is 8192 tokens","type":"invalid"}}"#
            ),
            "400 This model's maximum context length is 8192 tokens"
        );
        assert_eq!(http_error(500, ""), "500 status code (no body)");
        assert_eq!(http_error(502, "Bad gateway"), "502 Bad gateway");
        assert_eq!(
            http_error(429, r#"{"error":{"code":1}}"#),
            r#"429 {"code":1}"#
        );
    }

    #[test]
    fn body_pr3_pr4_pr5() {
        use crate::request::Tool;
        let t = target("openai", "gpt-4o");
        let req = Request {
            system_prompt: Some("sys".into()),
            messages: vec![Js::parse(br#"{"role":"user","content":"hi","timestamp":1}"#).unwrap()],
            tools: vec![Tool {
                name: "read".into(),
                description: "Read a file".into(),
                parameters: json!({"type":"object","properties":{"path":{"type":"string"}},"required":["path"]}),
            }],
        };
        let opts = Options {
            max_tokens: Some(100),
            tool_choice: Some(ToolChoice::Required),
            ..Options::default()
        };
        let b: Value = serde_json::from_slice(&body(&t, &req, &opts)).unwrap();
        assert_eq!(b["tool_choice"], "required");
        assert_eq!(b["tools"][0]["function"]["strict"], false);
        assert_eq!(b["max_completion_tokens"], 100);
        assert_eq!(b["stream_options"]["include_usage"], true);
        assert_eq!(b["store"], false);
        assert_eq!(b["messages"][0], json!({"role":"system","content":"sys"}));
        // PR4: no strict key when the provider rejects it.
        let mut t2 = t.clone();
        t2.model
            .compat
            .insert("supportsStrictMode".into(), json!(false));
        let b: Value = serde_json::from_slice(&body(&t2, &req, &opts)).unwrap();
        assert!(b["tools"][0]["function"].get("strict").is_none());
        // PR5: groq's qwen3 maps medium to "default"; gpt-oss keeps it.
        let q = target("groq", "qwen/qwen3.6-27b");
        let o = Options {
            reasoning: Some("medium".into()),
            ..Options::default()
        };
        let b: Value = serde_json::from_slice(&body(&q, &Request::default(), &o)).unwrap();
        assert_eq!(b["reasoning_effort"], "default");
        let g = target("groq", "openai/gpt-oss-20b");
        let b: Value = serde_json::from_slice(&body(&g, &Request::default(), &o)).unwrap();
        assert_eq!(b["reasoning_effort"], "medium");
        let _ = Details::default();
    }
}
