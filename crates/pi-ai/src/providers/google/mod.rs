//! Google Gemini (`google-generative-ai`, and `google-vertex` through [`vertex`]), as the
//! reference's providers speak it through Google's SDK: the request body of
//! `streamGenerateContent`, and the streamed `GenerateContentResponse` chunks turned into
//! [`Event`]s and an [`AssistantMessage`].

mod contents;
pub(crate) mod vertex;

use std::sync::atomic::{AtomicU64, Ordering};

use serde_json::Value;

use crate::message::{Block, Event, LlmError, StopReason};
use crate::models::{Model, clamp_thinking_level};
use crate::providers::blocks::Assembler;
use crate::providers::google::contents as wire_contents;
use crate::providers::sse;
use crate::providers::{Call, ErrorResponse, Prepared, Provider, max_tokens};
use crate::request::{Options, Request, Target, ToolChoice, Wire};
use crate::value::{Obj, Value as Js};

/// The Gemini API's host, when a model has no `baseUrl`.
pub(crate) const DEFAULT_BASE_URL: &str = "https://generativelanguage.googleapis.com/v1beta";

/// `POST {baseUrl}/models/{id}:streamGenerateContent?alt=sse` (the base URL carries the API
/// version).
pub(crate) fn url(model: &Model) -> String {
    let base = match model.base_url.trim_end_matches('/') {
        "" => DEFAULT_BASE_URL,
        b => b,
    };
    format!(
        "{base}/{}:streamGenerateContent?alt=sse",
        model_path(&model.id, false)
    )
}

/// The model's resource path, as Google's SDK writes it: `models/{id}` for the Gemini API,
/// `publishers/google/models/{id}` for Vertex (`publisher/model` ids name the publisher).
pub(crate) fn model_path(id: &str, vertex: bool) -> String {
    if vertex {
        if ["publishers/", "projects/", "models/"]
            .iter()
            .any(|p| id.starts_with(p))
        {
            id.to_owned()
        } else if let Some((publisher, name)) = id.split_once('/') {
            let name = name.split('/').next().unwrap_or(name);
            format!("publishers/{publisher}/models/{name}")
        } else {
            format!("publishers/google/models/{id}")
        }
    } else if id.starts_with("models/") || id.starts_with("tunedModels/") {
        id.to_owned()
    } else {
        format!("models/{id}")
    }
}

fn lower_matches(id: &str, family: &str) -> bool {
    // `gemini-3(.N)?-{family}`
    let id = id.to_lowercase();
    let mut rest = id.as_str();
    while let Some(at) = rest.find("gemini-3") {
        let after = &rest[at + "gemini-3".len()..];
        let after = match after.strip_prefix('.') {
            Some(a) if a.starts_with(|c: char| c.is_ascii_digit()) => {
                a.trim_start_matches(|c: char| c.is_ascii_digit())
            }
            _ => after,
        };
        if after.starts_with(&format!("-{family}")) {
            return true;
        }
        rest = &rest[at + 1..];
    }
    false
}

fn gemini3_pro(id: &str) -> bool {
    lower_matches(id, "pro")
}

fn gemini3_flash(id: &str) -> bool {
    lower_matches(id, "flash")
}

fn gemma4(id: &str) -> bool {
    let id = id.to_lowercase();
    id.contains("gemma-4") || id.contains("gemma4")
}

/// `thinkingConfig` of a request, as the reference's simple options set it: a level for
/// Gemini 3 (and Gemma 4 on the Gemini API), a budget for the others; with no reasoning,
/// the least thinking the model allows, without thoughts in the answer.
fn thinking_config(target: &Target, opts: &Options, vertex: bool) -> Option<Js> {
    let model = &target.model;
    if !model.reasoning {
        return None;
    }
    let id = model.id.as_str();
    let by_level = gemini3_pro(id) || gemini3_flash(id) || (!vertex && gemma4(id));
    let mut t = Obj::new();
    let Some(level) = opts.reasoning.as_deref().filter(|l| *l != "off") else {
        if gemini3_pro(id) {
            t.set("thinkingLevel", Js::str("LOW"));
        } else if gemini3_flash(id) || (!vertex && gemma4(id)) {
            t.set("thinkingLevel", Js::str("MINIMAL"));
        } else {
            t.set("thinkingBudget", Js::Num(0.0));
        }
        return Some(Js::Obj(t));
    };
    let clamped = clamp_thinking_level(model, &target.details, level);
    let effort = if clamped == "off" { "high" } else { clamped };
    t.set("includeThoughts", Js::Bool(true));
    if by_level {
        let l = match (effort, gemini3_pro(id), !vertex && gemma4(id)) {
            ("minimal" | "low", true, _) => Some("LOW"),
            ("medium" | "high", true, _) => Some("HIGH"),
            ("minimal" | "low", _, true) => Some("MINIMAL"),
            ("medium" | "high", _, true) => Some("HIGH"),
            ("minimal", ..) => Some("MINIMAL"),
            ("low", ..) => Some("LOW"),
            ("medium", ..) => Some("MEDIUM"),
            ("high", ..) => Some("HIGH"),
            _ => None,
        };
        if let Some(l) = l {
            t.set("thinkingLevel", Js::str(l));
        }
    } else if let Some(b) = budget(id, effort, opts, vertex) {
        t.set("thinkingBudget", Js::Num(b as f64));
    }
    Some(Js::Obj(t))
}

/// The thinking budget of a level: the settings' `thinkingBudgets`, else Google's figures
/// for Gemini 2.5, else -1 (dynamic).
fn budget(id: &str, effort: &str, opts: &Options, vertex: bool) -> Option<i64> {
    if let Some((_, b)) = opts.thinking_budgets.iter().find(|(l, _)| l == effort) {
        return Some(*b as i64);
    }
    let table: [i64; 4] = if id.contains("2.5-pro") {
        [128, 2048, 8192, 32768]
    } else if !vertex && id.contains("2.5-flash-lite") {
        [512, 2048, 8192, 24576]
    } else if id.contains("2.5-flash") {
        [128, 2048, 8192, 24576]
    } else {
        return Some(-1);
    };
    let k = ["minimal", "low", "medium", "high"]
        .iter()
        .position(|l| *l == effort)?;
    Some(table[k])
}

/// The request body (the reference's `buildParams`, as the SDK writes it on the wire).
pub(crate) fn body(target: &Target, req: &Request, opts: &Options, vertex: bool) -> Vec<u8> {
    let model = &target.model;
    let mut b = Obj::new();
    b.set(
        "contents",
        Js::Arr(wire_contents::contents(&req.messages, model, vertex)),
    );
    if let Some(sp) = req.system_prompt.as_deref().filter(|s| !s.is_empty()) {
        let mut part = Obj::new();
        part.set(
            "text",
            Js::Str(crate::value::JStr::new(sp).without_lone_surrogates()),
        );
        let mut si = Obj::new();
        si.set("parts", Js::Arr(vec![Js::Obj(part)]));
        si.set("role", Js::str("user"));
        b.set("systemInstruction", Js::Obj(si));
    }
    if !req.tools.is_empty() {
        let decls = req
            .tools
            .iter()
            .map(|t| {
                let mut d = Obj::new();
                if vertex {
                    d.set("description", Js::str(&t.description));
                    d.set("name", Js::str(&t.name));
                } else {
                    d.set("name", Js::str(&t.name));
                    d.set("description", Js::str(&t.description));
                }
                d.set(
                    "parametersJsonSchema",
                    crate::providers::openai::js(&t.parameters),
                );
                Js::Obj(d)
            })
            .collect();
        let mut tool = Obj::new();
        tool.set("functionDeclarations", Js::Arr(decls));
        b.set("tools", Js::Arr(vec![Js::Obj(tool)]));
        if let Some(tc) = &opts.tool_choice {
            let mut f = Obj::new();
            match tc {
                ToolChoice::Auto => f.set("mode", Js::str("AUTO")),
                ToolChoice::None => f.set("mode", Js::str("NONE")),
                ToolChoice::Required => f.set("mode", Js::str("ANY")),
                ToolChoice::Tool(name) => {
                    f.set("mode", Js::str("ANY"));
                    f.set("allowedFunctionNames", Js::Arr(vec![Js::str(name)]));
                }
            }
            let mut tc = Obj::new();
            tc.set("functionCallingConfig", Js::Obj(f));
            b.set("toolConfig", Js::Obj(tc));
        }
    }
    let mut g = Obj::new();
    if let Some(t) = opts.temperature {
        g.set("temperature", Js::Num(t));
    }
    let max = max_tokens(opts, model);
    if let Some(n) = max {
        g.set("maxOutputTokens", Js::Num(n as f64));
    }
    if let Some(t) = thinking_config(target, opts, vertex) {
        g.set("thinkingConfig", t);
    }
    if !g.is_empty() {
        b.set("generationConfig", Js::Obj(g));
    }
    Js::Obj(b).to_json()
}

/// The message of an HTTP error as Google's SDK words it: the JSON error body written
/// compactly, or, for a body that is not JSON, `{"error":{"message":BODY,"code":STATUS,
/// "status":REASON}}`.
pub(crate) fn http_error(status: u16, content_type: &str, body: &str) -> String {
    if content_type.contains("application/json")
        && let Some(v) = Js::parse(body.as_bytes())
    {
        return String::from_utf8_lossy(&v.to_json()).into_owned();
    }
    let reason = reqwest::StatusCode::from_u16(status)
        .ok()
        .and_then(|s| s.canonical_reason())
        .unwrap_or("");
    let mut e = Obj::new();
    e.set("message", Js::str(body));
    e.set("code", Js::Num(f64::from(status)));
    e.set("status", Js::str(reason));
    let mut o = Obj::new();
    o.set("error", Js::Obj(e));
    String::from_utf8_lossy(&Js::Obj(o).to_json()).into_owned()
}

/// Google's Gemini APIs: `google-generative-ai` (an API key) and `google-vertex` (an API key
/// or application-default credentials, see [`vertex`]).
pub(crate) struct Gemini;

impl Provider for Gemini {
    type Parser = sse::Reader<Stream>;

    fn needs_key(wire: Wire) -> bool {
        wire != Wire::GoogleVertex
    }

    async fn request(call: &Call<'_>) -> Result<Prepared, LlmError> {
        let (target, opts) = (call.target, call.opts);
        let vertex = target.wire == Wire::GoogleVertex;
        let (url, headers, secrets) = if vertex {
            let key = (!call.key.is_empty()).then_some(call.key);
            let timeout = crate::http::timeout(opts);
            vertex::prepare(
                call.http,
                &target.model,
                key,
                call.env,
                timeout,
                call.now_ms,
            )
            .await?
        } else {
            let key = ("x-goog-api-key".to_owned(), call.key.to_owned());
            (url(&target.model), vec![key], Vec::new())
        };
        let body = body(target, call.req, opts, vertex);
        let mut prepared = Prepared::json(opts, url, headers, body);
        prepared.secrets = secrets;
        Ok(prepared)
    }

    fn http_error(_call: &Call<'_>, response: &ErrorResponse) -> String {
        let content_type = response.header("content-type").unwrap_or_default();
        http_error(response.status, content_type, &response.body)
    }

    /// Google's SDK sends a request once (the agent's own retries still apply).
    fn max_retries(_call: &Call<'_>) -> u32 {
        0
    }

    fn parser(call: &Call<'_>) -> Self::Parser {
        sse::Reader::new(call, Stream::new(call.target))
    }
}

/// Tool calls without an id (or with one already used) get `{name}_{ms}_{n}`.
static TOOL_CALLS: AtomicU64 = AtomicU64::new(0);

/// The state of one streamed response.
pub(crate) struct Stream {
    prices: crate::models::Prices,
}

/// A part's thought signature, if it has one.
fn thought_signature(part: &Value) -> Option<&str> {
    part.get("thoughtSignature")
        .and_then(Value::as_str)
        .filter(|s| !s.is_empty())
}

/// Why a candidate finished, as a stop reason.
fn stop_reason(reason: &str) -> Result<StopReason, LlmError> {
    Ok(match reason {
        "STOP" => StopReason::Stop,
        "MAX_TOKENS" => StopReason::Length,
        "BLOCKLIST"
        | "PROHIBITED_CONTENT"
        | "SPII"
        | "SAFETY"
        | "IMAGE_SAFETY"
        | "IMAGE_PROHIBITED_CONTENT"
        | "IMAGE_RECITATION"
        | "IMAGE_OTHER"
        | "RECITATION"
        | "FINISH_REASON_UNSPECIFIED"
        | "OTHER"
        | "LANGUAGE"
        | "MALFORMED_FUNCTION_CALL"
        | "UNEXPECTED_TOOL_CALL"
        | "NO_IMAGE" => StopReason::Error,
        other => return Err(format!("Unhandled stop reason: {other}").into()),
    })
}

impl sse::Events for Stream {
    /// The stream is complete when the body ends.
    fn event(&mut self, out: &mut Assembler, ev: &sse::Event) -> Result<bool, LlmError> {
        self.data(out, &ev.data).map(|()| false)
    }

    /// Closes the open block; a stop reason that is an error fails.
    fn finish(&mut self, out: &mut Assembler) -> Result<(), LlmError> {
        out.close_current();
        out.outcome()
    }
}

impl Stream {
    pub(crate) fn new(target: &Target) -> Stream {
        Stream {
            prices: target.details.prices.clone(),
        }
    }

    fn text_part(&mut self, out: &mut Assembler, part: &Value, text: &str) {
        let thought = part.get("thought") == Some(&Value::Bool(true));
        let index = out.current(thought);
        if let Some(s) = thought_signature(part)
            && let Some(Block::Thinking { signature, .. } | Block::Text { signature, .. }) =
                out.msg.content.get_mut(index)
        {
            *signature = Some(s.to_owned());
        }
        if thought {
            out.append_thinking(index, text);
        } else {
            out.append_text(index, text);
        }
    }

    /// A call comes whole: it starts, gets its arguments and ends at once.
    fn function_call(&mut self, out: &mut Assembler, part: &Value, call: &Value) {
        out.close_current();
        let name = call
            .get("name")
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_owned();
        let given = call
            .get("id")
            .and_then(Value::as_str)
            .filter(|s| !s.is_empty());
        let taken = |id: &str| {
            out.msg
                .content
                .iter()
                .any(|b| matches!(b, Block::ToolCall { id: x, .. } if x == id))
        };
        let id = match given {
            Some(id) if !taken(id) => id.to_owned(),
            _ => format!(
                "{name}_{}_{}",
                out.msg.timestamp,
                TOOL_CALLS.fetch_add(1, Ordering::Relaxed) + 1
            ),
        };
        let arguments = match call.get("args") {
            Some(a) if !a.is_null() => a.clone(),
            _ => Value::Object(serde_json::Map::new()),
        };
        let delta = arguments.to_string();
        let block = Block::ToolCall {
            id,
            name,
            arguments,
            partial: String::new(),
            thought_signature: thought_signature(part).map(str::to_owned),
        };
        let index = out.open(block);
        out.emit(&Event::ToolCallDelta { index, delta });
        out.close(index);
    }

    /// Handles the data of one SSE event (a `GenerateContentResponse`).
    fn data(&mut self, out: &mut Assembler, data: &str) -> Result<(), LlmError> {
        let data = data.trim();
        if data.is_empty() {
            return Ok(());
        }
        let chunk: Value = serde_json::from_str(data)
            .map_err(|e| LlmError::new(format!("exception parsing stream chunk {data}. {e}")))?;
        // An error object in the stream (the reference ignores it and ends the turn as
        // complete; pi reports it, worded as the SDK words an error chunk).
        if let Some(e) = chunk.get("error").filter(|e| e.is_object()) {
            let status = e.get("status").and_then(Value::as_str).unwrap_or_default();
            let mut err = LlmError::new(format!("got status: {status}. {data}"));
            err.status = e
                .get("code")
                .and_then(Value::as_u64)
                .and_then(|c| u16::try_from(c).ok());
            return Err(err);
        }
        if out.msg.response_id.is_none()
            && let Some(id) = chunk
                .get("responseId")
                .and_then(Value::as_str)
                .filter(|s| !s.is_empty())
        {
            out.msg.response_id = Some(id.to_owned());
        }
        let candidate = chunk
            .get("candidates")
            .and_then(Value::as_array)
            .and_then(|c| c.first());
        if let Some(candidate) = candidate {
            self.candidate(out, candidate)?;
        }
        if let Some(u) = chunk.get("usageMetadata").filter(|u| u.is_object()) {
            self.usage(out, u);
        }
        Ok(())
    }

    /// The parts of the first candidate, and why it finished.
    fn candidate(&mut self, out: &mut Assembler, candidate: &Value) -> Result<(), LlmError> {
        if let Some(parts) = candidate
            .get("content")
            .and_then(|c| c.get("parts"))
            .and_then(Value::as_array)
        {
            for part in parts {
                if let Some(t) = part.get("text").filter(|t| !t.is_null()) {
                    let text = match t {
                        Value::String(s) => s.clone(),
                        other => other.to_string(),
                    };
                    self.text_part(out, part, &text);
                }
                if let Some(call) = part.get("functionCall").filter(|c| c.is_object()) {
                    self.function_call(out, part, call);
                }
            }
        }
        if let Some(reason) = candidate
            .get("finishReason")
            .and_then(Value::as_str)
            .filter(|s| !s.is_empty())
        {
            out.msg.stop_reason = stop_reason(reason)?;
            if out.has_tool_calls() {
                out.msg.stop_reason = StopReason::ToolUse;
            }
        }
        Ok(())
    }

    fn usage(&mut self, out: &mut Assembler, u: &Value) {
        let n = |k: &str| {
            u.get(k)
                .and_then(Value::as_f64)
                .filter(|f| f.is_finite())
                .unwrap_or(0.0)
        };
        let cached = n("cachedContentTokenCount");
        let usage = &mut out.msg.usage;
        usage.input = (n("promptTokenCount") - cached).max(0.0) as u64;
        usage.output = (n("candidatesTokenCount") + n("thoughtsTokenCount")).max(0.0) as u64;
        usage.cache_read = cached.max(0.0) as u64;
        usage.cache_write = 0;
        usage.settle(&self.prices);
        usage.total_tokens = n("totalTokenCount").max(0.0) as u64;
        out.emit(&Event::Usage);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn model_families_and_paths() {
        assert!(gemini3_pro("gemini-3-pro-preview"));
        assert!(gemini3_pro("gemini-3.1-pro-preview-customtools"));
        assert!(!gemini3_pro("gemini-3-flash-preview"));
        assert!(gemini3_flash("gemini-3.1-flash-lite-preview"));
        assert!(!gemini3_flash("gemini-2.5-flash"));
        assert!(gemma4("gemma-4-31b-it"));
        assert_eq!(model_path("gemini-2.5-pro", false), "models/gemini-2.5-pro");
        assert_eq!(model_path("tunedModels/x", false), "tunedModels/x");
        assert_eq!(
            model_path("gemini-2.5-pro", true),
            "publishers/google/models/gemini-2.5-pro"
        );
        assert_eq!(
            model_path("anthropic/claude-x", true),
            "publishers/anthropic/models/claude-x"
        );
    }

    #[test]
    fn errors_read_like_the_sdk() {
        assert_eq!(
            http_error(
                400,
                "application/json; charset=UTF-8",
                "{\n  \"error\": {\"code\": 400, \"message\": \"bad\"}\n}"
            ),
            r#"{"error":{"code":400,"message":"bad"}}"#
        );
        assert_eq!(
            http_error(502, "text/html", "<b>x</b>"),
            r#"{"error":{"message":"<b>x</b>","code":502,"status":"Bad Gateway"}}"#
        );
    }
}
