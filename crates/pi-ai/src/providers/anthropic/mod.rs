//! Anthropic Messages (`anthropic-messages`), as the reference's provider speaks it: the
//! request body and headers, and the streamed events turned into [`Event`]s and an
//! [`AssistantMessage`](crate::AssistantMessage).

pub mod messages;

use std::collections::HashMap;

use serde_json::Value;

use crate::json_partial;
use crate::message::{Block, Event, LlmError, StopReason};
use crate::models::Model;
use crate::providers::anthropic::messages as wire_messages;
use crate::providers::blocks::Assembler;
use crate::providers::sse;
use crate::providers::{Call, ErrorResponse, Prepared, Provider, max_tokens, thinking_level};
use crate::request::{Options, Request, Target, ToolChoice};
use crate::value::{Obj, Value as Js};

const FINE_GRAINED_TOOL_STREAMING: &str = "fine-grained-tool-streaming-2025-05-14";
const INTERLEAVED_THINKING: &str = "interleaved-thinking-2025-05-14";
const CLAUDE_CODE_VERSION: &str = "2.1.75";
/// The identity an OAuth (subscription) token must present, as the reference sends it.
const CLAUDE_CODE_IDENTITY: &str = "You are Claude Code, Anthropic's official CLI for Claude.";
const CLAUDE_CODE_TOOLS: [&str; 17] = [
    "Read",
    "Write",
    "Edit",
    "Bash",
    "Grep",
    "Glob",
    "AskUserQuestion",
    "EnterPlanMode",
    "ExitPlanMode",
    "KillShell",
    "NotebookEdit",
    "Skill",
    "Task",
    "TaskOutput",
    "TodoWrite",
    "WebFetch",
    "WebSearch",
];

/// Whether a key is an OAuth token (a Claude subscription) rather than an API key.
pub(crate) fn is_oauth(key: &str) -> bool {
    key.contains("sk-ant-oat")
}

fn claude_code_name(name: &str) -> String {
    CLAUDE_CODE_TOOLS
        .iter()
        .find(|t| t.eq_ignore_ascii_case(name))
        .map_or_else(|| name.to_owned(), |t| (*t).to_owned())
}

/// Models that think adaptively (an effort instead of a budget): those whose `compat`
/// says `forceAdaptiveThinking` (the reference 1.6 asks the catalogue, not the model id).
pub(crate) fn adaptive(model: &Model) -> bool {
    model.compat_bool("forceAdaptiveThinking") == Some(true)
}

fn eager_tool_input(model: &Model) -> bool {
    model
        .compat_bool("supportsEagerToolInputStreaming")
        .unwrap_or(true)
}

/// `POST {baseUrl}/v1/messages`.
pub(crate) fn url(model: &Model) -> String {
    format!("{}/v1/messages", model.base_url.trim_end_matches('/'))
}

/// The headers of a request (before the model's and the caller's own).
pub(crate) fn headers(target: &Target, req: &Request, api_key: &str) -> Vec<(String, String)> {
    let model = &target.model;
    let mut betas: Vec<&str> = Vec::new();
    if !req.tools.is_empty() && !eager_tool_input(model) {
        betas.push(FINE_GRAINED_TOOL_STREAMING);
    }
    if !adaptive(model) {
        betas.push(INTERLEAVED_THINKING);
    }
    let mut h: Vec<(String, String)> = vec![
        ("accept".into(), "application/json".into()),
        ("anthropic-version".into(), "2023-06-01".into()),
        (
            "anthropic-dangerous-direct-browser-access".into(),
            "true".into(),
        ),
    ];
    if model.provider == "github-copilot" {
        h.push(("authorization".into(), format!("Bearer {api_key}")));
    } else if is_oauth(api_key) {
        let mut all = vec!["claude-code-20250219", "oauth-2025-04-20"];
        all.extend(betas.iter().copied());
        h.push(("anthropic-beta".into(), all.join(",")));
        h.push(("authorization".into(), format!("Bearer {api_key}")));
        h.push((
            "user-agent".into(),
            format!("claude-cli/{CLAUDE_CODE_VERSION}"),
        ));
        h.push(("x-app".into(), "cli".into()));
        return h;
    } else if !api_key.is_empty() {
        h.push(("x-api-key".into(), api_key.to_owned()));
    }
    if !betas.is_empty() {
        h.push(("anthropic-beta".into(), betas.join(",")));
    }
    h
}

/// The default thinking budget of a level (`xhigh` counts as `high`).
pub(crate) fn default_budget(level: &str) -> u64 {
    match level {
        "minimal" => 1024,
        "low" => 2048,
        "medium" => 8192,
        _ => 16_384,
    }
}

fn budget(level: &str, opts: &Options) -> u64 {
    let level = if matches!(level, "xhigh" | "max") {
        "high"
    } else {
        level
    };
    if let Some((_, b)) = opts.thinking_budgets.iter().find(|(l, _)| l == level) {
        return *b;
    }
    default_budget(level)
}

/// The effort of an adaptive model at a level: the model's value for it, else `low`,
/// `medium` or `high`.
pub(crate) fn effort_of(target: &Target, level: &str) -> String {
    if let Some(Value::String(s)) = target.details.thinking_level_map.get(level) {
        return s.clone();
    }
    match level {
        "minimal" | "low" => "low",
        "medium" => "medium",
        _ => "high",
    }
    .to_owned()
}

/// How a request thinks: `thinking`, `output_config` (the effort of adaptive models), and
/// the output limit (a thinking budget comes on top of it).
struct Thinking {
    thinking: Option<Js>,
    output_config: Option<Js>,
    max_tokens: u64,
}

fn thinking(target: &Target, opts: &Options, level: Option<&str>) -> Thinking {
    let model = &target.model;
    let mut max_tokens = max_tokens(opts, model).unwrap_or(0);
    let mut output_config = None;
    let thinking = model.reasoning.then(|| {
        let mut t = Obj::new();
        match level {
            Some(l) if adaptive(model) => {
                t.set("type", Js::str("adaptive"));
                t.set("display", Js::str("summarized"));
                let mut oc = Obj::new();
                oc.set("effort", Js::str(&effort_of(target, l)));
                output_config = Some(Js::Obj(oc));
            }
            Some(l) => {
                let mut b = budget(l, opts);
                max_tokens = (max_tokens + b).min(model.max_tokens);
                if max_tokens <= b {
                    b = max_tokens.saturating_sub(1024);
                }
                t.set("type", Js::str("enabled"));
                let b = if b == 0 { 1024.0 } else { b as f64 };
                t.set("budget_tokens", Js::Num(b));
                t.set("display", Js::str("summarized"));
            }
            None => t.set("type", Js::str("disabled")),
        }
        Js::Obj(t)
    });
    if max_tokens == 0 {
        max_tokens = model.max_tokens / 3;
    }
    Thinking {
        thinking,
        output_config,
        max_tokens,
    }
}

/// The request body (upstream's `streamSimpleAnthropic` and `buildParams`).
pub(crate) fn body(target: &Target, req: &Request, opts: &Options, oauth: bool) -> Vec<u8> {
    let model = &target.model;
    let retention = opts.cache_retention();
    let cc = wire_messages::cache_control(model, retention);
    let level = thinking_level(target, opts);
    let thinking = thinking(target, opts, level);
    let mut messages = wire_messages::messages(&req.messages, model, retention);
    if oauth {
        for m in &mut messages {
            rename_tool_uses(m);
        }
    }
    let mut b = Obj::new();
    b.set("model", Js::str(&model.id));
    b.set("messages", Js::Arr(messages));
    b.set("max_tokens", Js::Num(thinking.max_tokens as f64));
    b.set("stream", Js::Bool(true));
    let system = system(req, model, retention, oauth, cc.as_ref());
    if !system.is_empty() {
        b.set("system", Js::Arr(system));
    }
    // Not with thinking, nor for the models whose compat says they take none (1.6's
    // `supportsTemperature: false`, `supportsMidConvoEffort`).
    if let Some(t) = opts.temperature
        && !(level.is_some() && model.reasoning)
        && model.compat_bool("supportsTemperature") != Some(false)
        && model.compat_bool("supportsMidConvoEffort") != Some(true)
    {
        b.set("temperature", Js::Num(t));
    }
    if !req.tools.is_empty() {
        b.set("tools", tools(req, model, oauth, cc.as_ref()));
    }
    b.set_opt("thinking", thinking.thinking);
    b.set_opt("output_config", thinking.output_config);
    if let Some(tc) = &opts.tool_choice {
        b.set("tool_choice", tool_choice(tc));
    }
    Js::Obj(b).to_json()
}

/// The system blocks: Claude Code's identity first for an OAuth token, then the prompt.
fn system(req: &Request, model: &Model, retention: &str, oauth: bool, cc: Option<&Js>) -> Vec<Js> {
    let mut system: Vec<Js> = Vec::new();
    if oauth {
        let mut id = Obj::new();
        id.set("type", Js::str("text"));
        id.set("text", Js::str(CLAUDE_CODE_IDENTITY));
        if let Some(c) = cc {
            id.set("cache_control", c.clone());
        }
        system.push(Js::Obj(id));
    }
    if let Some(sp) = req.system_prompt.as_deref().filter(|s| !s.is_empty()) {
        system.extend(wire_messages::system(sp, model, retention));
    }
    system
}

/// The tools (named as Claude Code's for an OAuth token), the last one marked for caching.
fn tools(req: &Request, model: &Model, oauth: bool, cc: Option<&Js>) -> Js {
    let n = req.tools.len();
    let schema_part = |t: &crate::request::Tool, k: &str, empty: Value| {
        crate::providers::openai::js(t.parameters.get(k).unwrap_or(&empty))
    };
    let tools = req.tools.iter().enumerate().map(|(k, t)| {
        let mut o = Obj::new();
        let name = if oauth {
            claude_code_name(&t.name)
        } else {
            t.name.clone()
        };
        o.set("name", Js::str(&name));
        o.set("description", Js::str(&t.description));
        if eager_tool_input(model) {
            o.set("eager_input_streaming", Js::Bool(true));
        }
        let mut schema = Obj::new();
        schema.set("type", Js::str("object"));
        let no_properties = Value::Object(serde_json::Map::new());
        schema.set("properties", schema_part(t, "properties", no_properties));
        schema.set(
            "required",
            schema_part(t, "required", Value::Array(Vec::new())),
        );
        o.set("input_schema", Js::Obj(schema));
        if k + 1 == n
            && let Some(c) = cc
        {
            o.set("cache_control", c.clone());
        }
        Js::Obj(o)
    });
    Js::Arr(tools.collect())
}

fn tool_choice(tc: &ToolChoice) -> Js {
    let mut o = Obj::new();
    match tc {
        ToolChoice::Auto => o.set("type", Js::str("auto")),
        ToolChoice::None => o.set("type", Js::str("none")),
        ToolChoice::Required => o.set("type", Js::str("any")),
        ToolChoice::Tool(name) => {
            o.set("type", Js::str("tool"));
            o.set("name", Js::str(name));
        }
    }
    Js::Obj(o)
}

fn rename_tool_uses(m: &mut Js) {
    let Js::Obj(o) = m else { return };
    let Some(Js::Arr(blocks)) = o.get("content").cloned() else {
        return;
    };
    let renamed: Vec<Js> = blocks
        .into_iter()
        .map(|mut b| {
            if b.get("type").is_some_and(|t| t.is_str("tool_use"))
                && let Some(n) = b
                    .get("name")
                    .and_then(Js::as_jstr)
                    .map(|n| n.text().into_owned())
                && let Js::Obj(bo) = &mut b
            {
                bo.set("name", Js::str(&claude_code_name(&n)));
            }
            b
        })
        .collect();
    o.set("content", Js::Arr(renamed));
}

/// The message of an HTTP error, as the Anthropic SDK words it: `STATUS BODY` with a JSON
/// body written compactly, else the text.
pub(crate) fn http_error(status: u16, body: &str) -> String {
    let msg = match serde_json::from_str::<Value>(body) {
        Ok(v) => match v.get("message") {
            Some(Value::String(s)) if !s.is_empty() => s.clone(),
            _ => v.to_string(),
        },
        Err(_) => body.trim().to_owned(),
    };
    crate::message::status_message(status, &msg)
}

/// The Anthropic Messages API (`anthropic-messages`).
pub(crate) struct Messages;

impl Provider for Messages {
    type Parser = sse::Reader<Stream>;

    async fn request(call: &Call<'_>) -> Result<Prepared, LlmError> {
        let (target, req, opts) = (call.target, call.req, call.opts);
        let body = body(target, req, opts, is_oauth(call.key));
        let headers = headers(target, req, call.key);
        Ok(Prepared::json(opts, url(&target.model), headers, body))
    }

    fn http_error(_call: &Call<'_>, response: &ErrorResponse) -> String {
        http_error(response.status, &response.body)
    }

    fn parser(call: &Call<'_>) -> Self::Parser {
        let s = Stream::new(call.target, call.req, is_oauth(call.key));
        sse::Reader::new(call, s)
    }
}

/// The state of one streamed response.
pub(crate) struct Stream {
    /// The event's block `index` → position in the content.
    blocks: HashMap<i64, usize>,
    prices: crate::models::Prices,
    started: bool,
    stopped: bool,
    oauth: bool,
    tool_names: Vec<String>,
}

/// A token count of the stream.
fn count(v: Option<&Value>) -> Option<u64> {
    v.and_then(Value::as_f64).map(|f| f.max(0.0) as u64)
}

impl sse::Events for Stream {
    fn event(&mut self, out: &mut Assembler, ev: &sse::Event) -> Result<bool, LlmError> {
        self.on_event(out, ev.event.as_deref(), &ev.data)
            .map(|()| self.stopped)
    }

    /// The stream must have been complete and successful (blocks left open stay so).
    fn finish(&mut self, out: &mut Assembler) -> Result<(), LlmError> {
        if !self.started {
            return Err("Anthropic stream ended before message_start".into());
        }
        if !self.stopped {
            return Err("Anthropic stream ended before message_stop".into());
        }
        out.outcome()
    }
}

impl Stream {
    pub(crate) fn new(target: &Target, req: &Request, oauth: bool) -> Stream {
        Stream {
            blocks: HashMap::new(),
            prices: target.details.prices.clone(),
            started: false,
            stopped: false,
            oauth,
            tool_names: req.tools.iter().map(|t| t.name.clone()).collect(),
        }
    }

    fn settle_usage(&mut self, out: &mut Assembler) {
        out.msg.usage.settle(&self.prices);
        out.emit(&Event::Usage);
    }

    /// Handles one SSE event.
    fn on_event(
        &mut self,
        out: &mut Assembler,
        name: Option<&str>,
        data: &str,
    ) -> Result<(), LlmError> {
        let name = name.unwrap_or("");
        if name == "error" {
            return Err(data.into());
        }
        if !matches!(
            name,
            "message_start"
                | "message_delta"
                | "message_stop"
                | "content_block_start"
                | "content_block_delta"
                | "content_block_stop"
        ) {
            return Ok(());
        }
        let ev: Value = serde_json::from_str(data)
            .or_else(|_| serde_json::from_str(&json_partial::repair(data)))
            .map_err(|e| {
                LlmError::new(format!(
                    "Could not parse Anthropic SSE event {name}: {e}; data={data}"
                ))
            })?;
        let index = || ev.get("index").and_then(Value::as_i64).unwrap_or(-1);
        match ev.get("type").and_then(Value::as_str).unwrap_or(name) {
            "message_start" => self.message_start(out, ev.get("message")),
            "content_block_start" => self.block_start(out, index(), ev.get("content_block")),
            "content_block_delta" => self.block_delta(out, index(), ev.get("delta")),
            "content_block_stop" => {
                if let Some(i) = self.blocks.remove(&index()) {
                    out.close(i);
                }
            }
            "message_delta" => self.message_delta(out, &ev)?,
            "message_stop" => self.stopped = true,
            _ => {}
        }
        Ok(())
    }

    fn message_start(&mut self, out: &mut Assembler, m: Option<&Value>) {
        self.started = true;
        if let Some(id) = m.and_then(|m| m.get("id")).and_then(Value::as_str) {
            out.msg.response_id = Some(id.to_owned());
        }
        let u = m.and_then(|m| m.get("usage"));
        let get = |k: &str| count(u.and_then(|u| u.get(k))).unwrap_or(0);
        let usage = &mut out.msg.usage;
        usage.input = get("input_tokens");
        usage.output = get("output_tokens");
        usage.cache_read = get("cache_read_input_tokens");
        usage.cache_write = get("cache_creation_input_tokens");
        self.settle_usage(out);
    }

    /// The block a `content_block_start` opens (none for a type pi does not know).
    fn new_block(&self, cb: &Value) -> Option<Block> {
        let text = |k: &str| cb.get(k).and_then(Value::as_str).unwrap_or_default();
        Some(match text("type") {
            "text" => Block::text(),
            "thinking" => Block::thinking(Some(String::new())),
            "redacted_thinking" => Block::Thinking {
                thinking: "[Reasoning redacted]".into(),
                signature: cb.get("data").and_then(Value::as_str).map(str::to_owned),
                redacted: true,
            },
            "tool_use" => {
                let name = text("name");
                // An OAuth request renamed the tools as Claude Code's: back to the caller's.
                let name = match self
                    .tool_names
                    .iter()
                    .find(|t| t.eq_ignore_ascii_case(name))
                {
                    Some(t) if self.oauth => t.clone(),
                    _ => name.to_owned(),
                };
                let mut block = Block::tool_call(text("id").to_owned(), name);
                if let (Block::ToolCall { arguments, .. }, Some(input)) =
                    (&mut block, cb.get("input").filter(|v| !v.is_null()))
                {
                    *arguments = input.clone();
                }
                block
            }
            _ => return None,
        })
    }

    fn block_start(&mut self, out: &mut Assembler, index: i64, cb: Option<&Value>) {
        if let Some(block) = self.new_block(cb.unwrap_or(&Value::Null)) {
            let i = out.open(block);
            self.blocks.insert(index, i);
        }
    }

    fn block_delta(&mut self, out: &mut Assembler, index: i64, d: Option<&Value>) {
        let Some(&i) = self.blocks.get(&index) else {
            return;
        };
        let d = d.unwrap_or(&Value::Null);
        let s = |k: &str| d.get(k).and_then(Value::as_str).unwrap_or_default();
        match d.get("type").and_then(Value::as_str) {
            Some("text_delta") => out.append_text(i, s("text")),
            Some("thinking_delta") => out.append_thinking(i, s("thinking")),
            Some("input_json_delta") => out.append_arguments(i, s("partial_json")),
            Some("signature_delta") => {
                if let Some(Block::Thinking { signature, .. }) = out.msg.content.get_mut(i) {
                    signature
                        .get_or_insert_with(String::new)
                        .push_str(s("signature"));
                }
            }
            _ => {}
        }
    }

    fn message_delta(&mut self, out: &mut Assembler, ev: &Value) -> Result<(), LlmError> {
        if let Some(r) = ev
            .get("delta")
            .and_then(|d| d.get("stop_reason"))
            .and_then(Value::as_str)
        {
            out.msg.stop_reason = match r {
                "end_turn" | "pause_turn" | "stop_sequence" => StopReason::Stop,
                "max_tokens" => StopReason::Length,
                "tool_use" => StopReason::ToolUse,
                "refusal" | "sensitive" => StopReason::Error,
                other => return Err(format!("Unhandled stop reason: {other}").into()),
            };
        }
        let u = ev.get("usage");
        let get = |k: &str| count(u.and_then(|u| u.get(k)));
        let usage = &mut out.msg.usage;
        for (k, field) in [
            ("input_tokens", &mut usage.input),
            ("output_tokens", &mut usage.output),
            ("cache_read_input_tokens", &mut usage.cache_read),
            ("cache_creation_input_tokens", &mut usage.cache_write),
        ] {
            if let Some(v) = get(k) {
                *field = v;
            }
        }
        self.settle_usage(out);
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::message::AssistantMessage;
    use crate::models::Registry;
    use crate::providers::blocks::Draft;
    use crate::providers::sse::Events as _;
    use serde_json::json;

    fn target(provider: &str, id: &str) -> Target {
        let r = Registry::builtin();
        Target::new(
            r.find(provider, id).unwrap().clone(),
            r.details_of(provider, id),
        )
        .unwrap()
    }

    #[test]
    fn stream_events() {
        let t = target("anthropic", "claude-sonnet-4-5");
        let mut s = Stream::new(&t, &Request::default(), false);
        let mut draft = Draft::new(AssistantMessage::for_target(&t, 7));
        let mut events = Vec::new();
        let mut sink = |e: &Event, _: &AssistantMessage| events.push(e.clone());
        let mut out = draft.assembler(&mut sink);
        let script = [
            (
                "message_start",
                r#"{"type":"message_start","message":{"id":"msg_1","usage":{"input_tokens":1000,"output_tokens":1,"cache_read_input_tokens":200}}}"#,
            ),
            (
                "content_block_start",
                r#"{"type":"content_block_start","index":0,"content_block":{"type":"thinking","thinking":""}}"#,
            ),
            (
                "content_block_delta",
                r#"{"type":"content_block_delta","index":0,"delta":{"type":"thinking_delta","thinking":"hm"}}"#,
            ),
            (
                "content_block_delta",
                r#"{"type":"content_block_delta","index":0,"delta":{"type":"signature_delta","signature":"sig"}}"#,
            ),
            (
                "content_block_stop",
                r#"{"type":"content_block_stop","index":0}"#,
            ),
            (
                "content_block_start",
                r#"{"type":"content_block_start","index":1,"content_block":{"type":"text","text":""}}"#,
            ),
            (
                "content_block_delta",
                r#"{"type":"content_block_delta","index":1,"delta":{"type":"text_delta","text":"Hi"}}"#,
            ),
            (
                "content_block_stop",
                r#"{"type":"content_block_stop","index":1}"#,
            ),
            (
                "content_block_start",
                r#"{"type":"content_block_start","index":2,"content_block":{"type":"tool_use","id":"toolu_1","name":"read","input":{}}}"#,
            ),
            (
                "content_block_delta",
                r#"{"type":"content_block_delta","index":2,"delta":{"type":"input_json_delta","partial_json":"{\"path\":"}}"#,
            ),
            (
                "content_block_delta",
                r#"{"type":"content_block_delta","index":2,"delta":{"type":"input_json_delta","partial_json":"\"a.ts\"}"}}"#,
            ),
            (
                "content_block_stop",
                r#"{"type":"content_block_stop","index":2}"#,
            ),
            ("ping", "{}"),
            (
                "message_delta",
                r#"{"type":"message_delta","delta":{"stop_reason":"tool_use"},"usage":{"output_tokens":50,"input_tokens":null}}"#,
            ),
            ("message_stop", r#"{"type":"message_stop"}"#),
        ];
        for (name, data) in script {
            s.on_event(&mut out, Some(name), data).unwrap();
        }
        assert_eq!(s.finish(&mut out), Ok(()));
        let m = draft.into_message();
        assert_eq!(m.stop_reason, StopReason::ToolUse);
        assert_eq!(m.response_id.as_deref(), Some("msg_1"));
        assert_eq!(
            (
                m.usage.input,
                m.usage.output,
                m.usage.cache_read,
                m.usage.total_tokens
            ),
            (1000, 50, 200, 1250)
        );
        assert_eq!(
            serde_json::to_value(m.content.iter().map(Block::to_json).collect::<Vec<_>>()).unwrap(),
            json!([
                {"type":"thinking","thinking":"hm","thinkingSignature":"sig"},
                {"type":"text","text":"Hi"},
                {"type":"toolCall","id":"toolu_1","name":"read","arguments":{"path":"a.ts"}}
            ])
        );
        assert!(events.contains(&Event::ToolCallDelta {
            index: 2,
            delta: "{\"path\":".into()
        }));
    }

    #[test]
    fn incomplete_and_failed_streams() {
        let t = target("anthropic", "claude-sonnet-4-5");
        let mut s = Stream::new(&t, &Request::default(), false);
        let mut draft = Draft::new(AssistantMessage::for_target(&t, 7));
        let mut sink = |_: &Event, _: &AssistantMessage| {};
        let mut out = draft.assembler(&mut sink);
        s.on_event(
            &mut out,
            Some("message_start"),
            r#"{"type":"message_start","message":{"id":"m","usage":{}}}"#,
        )
        .unwrap();
        assert_eq!(
            s.finish(&mut out),
            Err("Anthropic stream ended before message_stop".into())
        );
        let err = s.on_event(
            &mut out,
            Some("error"),
            r#"{"type":"error","error":{"type":"overloaded_error"}}"#,
        );
        assert_eq!(
            err,
            Err(r#"{"type":"error","error":{"type":"overloaded_error"}}"#.into())
        );
        let bad = s.on_event(
            &mut out,
            Some("message_delta"),
            r#"{"type":"message_delta","delta":{"stop_reason":"weird"},"usage":{}}"#,
        );
        assert_eq!(bad, Err("Unhandled stop reason: weird".into()));
        assert_eq!(
            http_error(
                529,
                r#"{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}"#
            ),
            r#"529 {"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}"#
        );
    }

    #[test]
    fn thinking_budget_and_headers() {
        let t = target("anthropic", "claude-sonnet-4-5");
        let req = Request {
            system_prompt: Some("S".into()),
            messages: vec![Js::parse(br#"{"role":"user","content":"hi"}"#).unwrap()],
            tools: Vec::new(),
        };
        let o = Options {
            max_tokens: Some(1000),
            reasoning: Some("medium".into()),
            ..Options::default()
        };
        let b: Value = serde_json::from_slice(&body(&t, &req, &o, false)).unwrap();
        assert_eq!(b["max_tokens"], 9192);
        assert_eq!(
            b["thinking"],
            json!({"type":"enabled","budget_tokens":8192,"display":"summarized"})
        );
        assert_eq!(b["system"][0]["text"], "S");
        let none = Options {
            max_tokens: Some(1000),
            ..Options::default()
        };
        let b: Value = serde_json::from_slice(&body(&t, &req, &none, false)).unwrap();
        assert_eq!(b["thinking"], json!({"type":"disabled"}));
        let h = headers(&t, &req, "sk-ant-api-1");
        assert!(h.contains(&("x-api-key".into(), "sk-ant-api-1".into())));
        assert!(h.contains(&("anthropic-beta".into(), INTERLEAVED_THINKING.into())));
        let h = headers(&t, &req, "sk-ant-oat-1");
        assert!(
            h.iter()
                .any(|(k, v)| k == "authorization" && v == "Bearer sk-ant-oat-1")
        );
        assert!(!h.iter().any(|(k, _)| k == "x-api-key"));
    }
}
