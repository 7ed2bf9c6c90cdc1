//! The OpenAI Responses API family, as the reference's providers speak it:
//!
//! - `openai-responses` (OpenAI, and the GitHub Copilot, OpenCode and Cloudflare models
//!   listed under it): `POST {baseUrl}/responses`, `Authorization: Bearer`;
//! - `azure-openai-responses`: `POST {resource}/openai/v1/responses?api-version=v1` with an
//!   `api-key` header; the resource comes from `AZURE_OPENAI_BASE_URL`, else
//!   `AZURE_OPENAI_RESOURCE_NAME`, else the model's `baseUrl`, and the deployment from
//!   `AZURE_OPENAI_DEPLOYMENT_NAME_MAP` (`model=deployment,…`), else the model id;
//! - `openai-codex-responses` (ChatGPT subscriptions): `POST {baseUrl}/codex/responses`
//!   with the OAuth token and the ChatGPT account it names; the system prompt goes in
//!   `instructions`. (The reference may also use a WebSocket; pi speaks the SSE transport,
//!   which the reference falls back to.)
//!
//! The answer streams as typed events (`response.output_item.added`, `…delta`,
//! `response.completed`, …). Reasoning items are kept whole (encrypted content included) as
//! the thinking block's signature, and message items' ids and phases as the text block's
//! signature, so the next request can send them back (see `crate::providers::responses::input`).
//!
//! One difference from the reference, on purpose: a stream that ends without
//! `response.completed` is an error (the reference reports it as a finished answer), and
//! `response.incomplete` (the output limit) ends the answer with stop reason `length` on
//! every API of the family (the reference does so for Codex only).

pub(crate) mod input;

use std::sync::OnceLock;

use serde_json::Value;

use crate::http::set_header;
use crate::json_partial;
use crate::message::{Block, Event, LlmError, StopReason};
use crate::providers::blocks::Assembler;
use crate::providers::openai::mapped;
use crate::providers::responses::input as wire_input;
use crate::providers::sse;
use crate::providers::{
    Call, Env, ErrorResponse, Prepared, Provider, max_tokens, retryable_status, thinking_level,
    with_caller,
};
use crate::request::{Options, Request, Target, ToolChoice, Wire};
use crate::value::{Obj, Value as Js};

/// Providers whose `call|item` tool-call ids OpenAI's and Codex's Responses APIs take as
/// they are.
pub(crate) const OPENAI_TOOL_CALL_PROVIDERS: [&str; 3] = ["openai", "openai-codex", "opencode"];
/// The same for Azure.
pub(crate) const AZURE_TOOL_CALL_PROVIDERS: [&str; 4] =
    ["openai", "openai-codex", "opencode", "azure"];

const DEFAULT_CODEX_BASE_URL: &str = "https://chatgpt.com/backend-api";
const CODEX_DEFAULT_INSTRUCTIONS: &str = "You are a helpful assistant.";

fn num(n: u64) -> Js {
    Js::Num(n as f64)
}

/// `model`, `input` and `stream`: how every request of the family starts. The input is
/// written for the APIs that take `call|item` tool-call ids from `providers` as they are.
fn start(target: &Target, req: &Request, model: &str, providers: &[&str]) -> Result<Obj, LlmError> {
    let input = wire_input::input(
        &req.messages,
        &target.model,
        req.system_prompt.as_deref(),
        providers,
        true,
    )
    .map_err(input_error)?;
    let mut b = Obj::new();
    b.set("model", Js::str(model));
    b.set("input", Js::Arr(input));
    b.set("stream", Js::Bool(true));
    Ok(b)
}

/// `max_output_tokens`, `temperature`, `tools` and `tool_choice` of OpenAI and Azure
/// requests.
fn limits_and_tools(b: &mut Obj, target: &Target, req: &Request, opts: &Options) {
    if let Some(n) = max_tokens(opts, &target.model).filter(|n| *n > 0) {
        b.set("max_output_tokens", num(n));
    }
    if let Some(t) = opts.temperature {
        b.set("temperature", Js::Num(t));
    }
    if !req.tools.is_empty() {
        b.set("tools", tools(req, Js::Bool(false)));
    }
    if let Some(tc) = &opts.tool_choice {
        b.set("tool_choice", tool_choice(tc));
    }
}

fn tools(req: &Request, strict: Js) -> Js {
    Js::Arr(
        req.tools
            .iter()
            .map(|t| {
                let mut o = Obj::new();
                o.set("type", Js::str("function"));
                o.set("name", Js::str(&t.name));
                o.set("description", Js::str(&t.description));
                o.set("parameters", crate::providers::openai::js(&t.parameters));
                o.set("strict", strict.clone());
                Js::Obj(o)
            })
            .collect(),
    )
}

fn tool_choice(tc: &ToolChoice) -> Js {
    match tc {
        ToolChoice::Auto => Js::str("auto"),
        ToolChoice::None => Js::str("none"),
        ToolChoice::Required => Js::str("required"),
        ToolChoice::Tool(name) => {
            let mut o = Obj::new();
            o.set("type", Js::str("function"));
            o.set("name", Js::str(name));
            Js::Obj(o)
        }
    }
}

/// `reasoning` (and `include`) of OpenAI and Azure requests: the level when thinking is
/// on; when it is off, the model's "off" value (default `none`) unless the model cannot
/// turn thinking off (its map says `off: null`; Copilot never gets one).
fn reasoning(target: &Target, opts: &Options, b: &mut Obj, copilot_off: bool) {
    if !target.model.reasoning {
        return;
    }
    match thinking_level(target, opts) {
        Some(e) => {
            let mut r = Obj::new();
            r.set("effort", mapped(target, e));
            r.set("summary", Js::str("auto"));
            b.set("reasoning", Js::Obj(r));
            b.set(
                "include",
                Js::Arr(vec![Js::str("reasoning.encrypted_content")]),
            );
        }
        None => {
            let off = target.details.thinking_level_map.get("off");
            if copilot_off || matches!(off, Some(Value::Null)) {
                return;
            }
            let mut r = Obj::new();
            r.set(
                "effort",
                match off {
                    Some(Value::String(s)) => Js::str(s),
                    _ => Js::str("none"),
                },
            );
            b.set("reasoning", Js::Obj(r));
        }
    }
}

fn input_error(e: wire_input::InputError) -> LlmError {
    LlmError::new(e.to_string())
}

/// Whether any user message or tool result has an image (Copilot's vision header).
fn has_images(req: &Request) -> bool {
    req.messages.iter().any(|m| {
        let role = m.get("role");
        (role.is_some_and(|r| r.is_str("user") || r.is_str("toolResult")))
            && m.get("content")
                .and_then(Js::as_arr)
                .unwrap_or_default()
                .iter()
                .any(|b| b.get("type").is_some_and(|t| t.is_str("image")))
    })
}

/// Copilot's headers of a request: who started it (the user, or the agent after a tool
/// result) and whether it has images.
fn copilot_headers(req: &Request, h: &mut Vec<(String, String)>) {
    let initiator = match req.messages.last() {
        Some(m) if !m.get("role").is_some_and(|r| r.is_str("user")) => "agent",
        _ => "user",
    };
    set_header(h, "X-Initiator", initiator.to_owned());
    set_header(h, "Openai-Intent", "conversation-edits".to_owned());
    if has_images(req) {
        set_header(h, "Copilot-Vision-Request", "true".to_owned());
    }
}

/// Cloudflare base URLs name the account and gateway as `{VARIABLE}`s of the environment.
fn cloudflare_url(target: &Target, env: Env) -> Result<String, LlmError> {
    let url = &target.model.base_url;
    let p = target.model.provider.as_str();
    if !(p == "cloudflare-workers-ai" || p == "cloudflare-ai-gateway") || !url.contains('{') {
        return Ok(url.clone());
    }
    let re = regex::Regex::new(r"\{([A-Z_][A-Z0-9_]*)\}").map_err(|e| e.to_string())?;
    let mut missing = None;
    let out = re.replace_all(url, |c: &regex::Captures| match env(&c[1]) {
        Some(v) => v,
        None => {
            missing.get_or_insert_with(|| c[1].to_owned());
            String::new()
        }
    });
    match missing {
        Some(name) => Err(format!("{name} is required for provider {p} but is not set.").into()),
        None => Ok(out.into_owned()),
    }
}

/// An `openai-responses` request.
fn openai(call: &Call<'_>) -> Result<Prepared, LlmError> {
    let (target, req, opts, key, env) = (call.target, call.req, call.opts, call.key, call.env);
    let model = &target.model;
    let retention = opts.cache_retention();
    let session = opts.session_id.as_deref().filter(|_| retention != "none");
    let mut b = start(target, req, &model.id, &OPENAI_TOOL_CALL_PROVIDERS)?;
    b.set_opt("prompt_cache_key", session.map(Js::str));
    if retention == "long"
        && model
            .compat_bool("supportsLongCacheRetention")
            .unwrap_or(true)
    {
        b.set("prompt_cache_retention", Js::str("24h"));
    }
    b.set("store", Js::Bool(false));
    limits_and_tools(&mut b, target, req, opts);
    reasoning(target, opts, &mut b, model.provider == "github-copilot");
    let mut h = vec![("accept".to_owned(), "application/json".to_owned())];
    if model.provider == "cloudflare-ai-gateway" {
        // The gateway's own key header; the provider key goes through it.
        h.push(("cf-aig-authorization".to_owned(), format!("Bearer {key}")));
    } else {
        h.push(("authorization".to_owned(), format!("Bearer {key}")));
    }
    h.push(("content-type".to_owned(), "application/json".to_owned()));
    if model.provider == "github-copilot" {
        copilot_headers(req, &mut h);
    }
    if let Some(s) = session {
        if model.compat_bool("sendSessionIdHeader").unwrap_or(true) {
            set_header(&mut h, "session_id", s.to_owned());
        }
        set_header(&mut h, "x-client-request-id", s.to_owned());
    }
    super::apply_sampling(&mut b, target, opts);
    Ok(Prepared {
        url: format!(
            "{}/responses",
            cloudflare_url(target, env)?.trim_end_matches('/')
        ),
        headers: with_caller(h, opts),
        body: Js::Obj(b).to_json(),
        secrets: Vec::new(),
    })
}

/// The deployment of a model: `AZURE_OPENAI_DEPLOYMENT_NAME_MAP` (`model=deployment`
/// pairs separated by commas), else the model id.
pub(crate) fn azure_deployment(model_id: &str, map: Option<&str>) -> String {
    for entry in map.unwrap_or_default().split(',') {
        let mut kv = entry.trim().split('=');
        if let (Some(m), Some(d)) = (kv.next(), kv.next())
            && m.trim() == model_id
            && !m.trim().is_empty()
            && !d.trim().is_empty()
        {
            return d.trim().to_owned();
        }
    }
    model_id.to_owned()
}

/// The base URL of Azure requests: `AZURE_OPENAI_BASE_URL`, else the resource's
/// (`AZURE_OPENAI_RESOURCE_NAME`), else the model's; an Azure host without a path gets
/// `/openai/v1`.
pub(crate) fn azure_base_url(model_base: &str, env: Env) -> Result<String, LlmError> {
    let base = env("AZURE_OPENAI_BASE_URL")
        .map(|s| s.trim().to_owned())
        .filter(|s| !s.is_empty())
        .or_else(|| {
            env("AZURE_OPENAI_RESOURCE_NAME")
                .map(|r| format!("https://{r}.openai.azure.com/openai/v1"))
        })
        .or_else(|| (!model_base.is_empty()).then(|| model_base.to_owned()))
        .ok_or_else(|| {
            LlmError::new(
                "Azure OpenAI base URL is required. Set AZURE_OPENAI_BASE_URL or \
                 AZURE_OPENAI_RESOURCE_NAME, or the model's baseUrl in models.json.",
            )
        })?;
    let trimmed = base.trim().trim_end_matches('/');
    let mut url = reqwest::Url::parse(trimmed)
        .map_err(|_| LlmError::new(format!("Invalid Azure OpenAI base URL: {base}")))?;
    let host = url.host_str().unwrap_or_default().to_owned();
    let azure =
        host.ends_with(".openai.azure.com") || host.ends_with(".cognitiveservices.azure.com");
    let path = url.path().trim_end_matches('/').to_owned();
    if azure && (path.is_empty() || path == "/openai") {
        url.set_path("/openai/v1");
        url.set_query(None);
    }
    Ok(url.as_str().trim_end_matches('/').to_owned())
}

/// An `azure-openai-responses` request.
fn azure(call: &Call<'_>) -> Result<Prepared, LlmError> {
    let (target, req, opts, key, env) = (call.target, call.req, call.opts, call.key, call.env);
    let model = &target.model;
    let base = azure_base_url(&model.base_url, env)?;
    let version = env("AZURE_OPENAI_API_VERSION").unwrap_or_else(|| "v1".to_owned());
    let deployment = azure_deployment(
        &model.id,
        env("AZURE_OPENAI_DEPLOYMENT_NAME_MAP").as_deref(),
    );
    let mut b = start(target, req, &deployment, &AZURE_TOOL_CALL_PROVIDERS)?;
    b.set_opt("prompt_cache_key", opts.session_id.as_deref().map(Js::str));
    limits_and_tools(&mut b, target, req, opts);
    reasoning(target, opts, &mut b, false);
    let h = vec![
        ("accept".to_owned(), "application/json".to_owned()),
        ("api-key".to_owned(), key.to_owned()),
        ("content-type".to_owned(), "application/json".to_owned()),
    ];
    let mut url = reqwest::Url::parse(&format!("{base}/responses"))
        .map_err(|_| LlmError::new(format!("Invalid Azure OpenAI base URL: {base}")))?;
    url.query_pairs_mut().append_pair("api-version", &version);
    super::apply_sampling(&mut b, target, opts);
    Ok(Prepared {
        url: url.to_string(),
        headers: with_caller(h, opts),
        body: Js::Obj(b).to_json(),
        secrets: Vec::new(),
    })
}

/// `POST …/codex/responses` of a Codex base URL.
pub(crate) fn codex_url(base: &str) -> String {
    let raw = if base.trim().is_empty() {
        DEFAULT_CODEX_BASE_URL
    } else {
        base
    };
    let n = raw.trim_end_matches('/');
    if n.ends_with("/codex/responses") {
        n.to_owned()
    } else if n.ends_with("/codex") {
        format!("{n}/responses")
    } else {
        format!("{n}/codex/responses")
    }
}

/// The ChatGPT account of a Codex OAuth token (a JWT's
/// `https://api.openai.com/auth.chatgpt_account_id` claim).
pub(crate) fn codex_account_id(token: &str) -> Option<String> {
    use base64::Engine;
    let parts: Vec<&str> = token.split('.').collect();
    let [_, payload, _] = parts.as_slice() else {
        return None;
    };
    let cleaned: String = payload
        .trim_end_matches('=')
        .replace('-', "+")
        .replace('_', "/");
    let bytes = base64::engine::general_purpose::STANDARD_NO_PAD
        .decode(cleaned)
        .ok()?;
    let v: Value = serde_json::from_slice(&bytes).ok()?;
    v.get("https://api.openai.com/auth")?
        .get("chatgpt_account_id")?
        .as_str()
        .filter(|s| !s.is_empty())
        .map(str::to_owned)
}

/// `pi (PLATFORM RELEASE; ARCH)`, as Node names them.
pub(crate) fn codex_user_agent() -> String {
    static UA: OnceLock<String> = OnceLock::new();
    UA.get_or_init(|| {
        let platform = match std::env::consts::OS {
            "macos" => "darwin",
            "windows" => "win32",
            other => other,
        };
        let arch = match std::env::consts::ARCH {
            "x86_64" => "x64",
            "aarch64" => "arm64",
            "x86" => "ia32",
            other => other,
        };
        let release = std::fs::read_to_string("/proc/sys/kernel/osrelease")
            .ok()
            .or_else(|| {
                std::process::Command::new("uname")
                    .arg("-r")
                    .output()
                    .ok()
                    .map(|o| String::from_utf8_lossy(&o.stdout).into_owned())
            })
            .map(|s| s.trim().to_owned())
            .filter(|s| !s.is_empty())
            .unwrap_or_else(|| "unknown".to_owned());
        format!("pi ({platform} {release}; {arch})")
    })
    .clone()
}

/// An `openai-codex-responses` request (the SSE transport).
fn codex(call: &Call<'_>) -> Result<Prepared, LlmError> {
    let (target, req, opts, key) = (call.target, call.req, call.opts, call.key);
    let model = &target.model;
    let account = codex_account_id(key)
        .ok_or_else(|| LlmError::new("Failed to extract accountId from token"))?;
    let mut b = Obj::new();
    b.set("model", Js::str(&model.id));
    b.set("store", Js::Bool(false));
    b.set("stream", Js::Bool(true));
    b.set(
        "instructions",
        Js::str(
            req.system_prompt
                .as_deref()
                .filter(|s| !s.is_empty())
                .unwrap_or(CODEX_DEFAULT_INSTRUCTIONS),
        ),
    );
    b.set(
        "input",
        Js::Arr(
            wire_input::input(
                &req.messages,
                model,
                None,
                &OPENAI_TOOL_CALL_PROVIDERS,
                false,
            )
            .map_err(input_error)?,
        ),
    );
    let mut text = Obj::new();
    text.set("verbosity", Js::str("low"));
    b.set("text", Js::Obj(text));
    b.set(
        "include",
        Js::Arr(vec![Js::str("reasoning.encrypted_content")]),
    );
    b.set_opt("prompt_cache_key", opts.session_id.as_deref().map(Js::str));
    b.set(
        "tool_choice",
        opts.tool_choice
            .as_ref()
            .map_or_else(|| Js::str("auto"), tool_choice),
    );
    b.set("parallel_tool_calls", Js::Bool(true));
    if let Some(t) = opts.temperature {
        b.set("temperature", Js::Num(t));
    }
    if !req.tools.is_empty() {
        b.set("tools", tools(req, Js::Null));
    }
    if let Some(e) = thinking_level(target, opts) {
        let mut r = Obj::new();
        r.set("effort", mapped(target, e));
        r.set("summary", Js::str("auto"));
        b.set("reasoning", Js::Obj(r));
    }
    // The caller's headers first: Codex's own win.
    let mut h = with_caller(Vec::new(), opts);
    for (k, v) in [
        ("Authorization", format!("Bearer {key}")),
        ("chatgpt-account-id", account),
        ("originator", "pi".to_owned()),
        ("User-Agent", codex_user_agent()),
        ("OpenAI-Beta", "responses=experimental".to_owned()),
        ("accept", "text/event-stream".to_owned()),
        ("content-type", "application/json".to_owned()),
    ] {
        set_header(&mut h, k, v);
    }
    if let Some(s) = &opts.session_id {
        set_header(&mut h, "session_id", s.clone());
        set_header(&mut h, "x-client-request-id", s.clone());
    }
    Ok(Prepared {
        url: codex_url(&model.base_url),
        headers: h,
        body: Js::Obj(b).to_json(),
        secrets: Vec::new(),
    })
}

/// Whether a failed Codex request is worth sending again: 429, 500, 502–504, or an error
/// that reads like a rate limit or an unreachable upstream.
pub(crate) fn codex_retryable(status: u16, text: &str) -> bool {
    static RE: OnceLock<Option<regex::Regex>> = OnceLock::new();
    matches!(status, 429 | 500 | 502 | 503 | 504)
        || RE
            .get_or_init(|| {
                regex::Regex::new(
                    r"(?i)rate.?limit|overloaded|service.?unavailable|upstream.?connect|connection.?refused",
                )
                .ok()
            })
            .as_ref()
            .is_some_and(|r| r.is_match(text))
}

/// The message of a failed Codex request: the error's message, or for a usage limit
/// `You have hit your ChatGPT usage limit (PLAN plan). Try again in ~N min.`
pub(crate) fn codex_http_error(status: u16, body: &str, now_ms: i64) -> String {
    let fallback = if body.is_empty() {
        reqwest::StatusCode::from_u16(status)
            .ok()
            .and_then(|s| s.canonical_reason())
            .unwrap_or("Request failed")
            .to_owned()
    } else {
        body.to_owned()
    };
    let Ok(v) = serde_json::from_str::<Value>(body) else {
        return fallback;
    };
    let Some(err) = v.get("error").filter(|e| truthy(e)) else {
        return fallback;
    };
    let s = |k: &str| {
        err.get(k)
            .and_then(Value::as_str)
            .filter(|s| !s.is_empty())
            .map(str::to_owned)
    };
    let code = s("code").or_else(|| s("type")).unwrap_or_default();
    let limit = {
        let c = code.to_ascii_lowercase();
        c.contains("usage_limit_reached")
            || c.contains("usage_not_included")
            || c.contains("rate_limit_exceeded")
    };
    if limit || status == 429 {
        let plan = s("plan_type")
            .map(|p| format!(" ({} plan)", p.to_lowercase()))
            .unwrap_or_default();
        let when = err
            .get("resets_at")
            .and_then(Value::as_f64)
            .filter(|r| *r != 0.0)
            .map(|r| {
                let mins = ((r * 1000.0 - now_ms as f64) / 60_000.0).round().max(0.0);
                format!(" Try again in ~{mins} min.")
            })
            .unwrap_or_default();
        return format!("You have hit your ChatGPT usage limit{plan}.{when}")
            .trim()
            .to_owned();
    }
    s("message").unwrap_or(fallback)
}

fn truthy(v: &Value) -> bool {
    match v {
        Value::Null => false,
        Value::Bool(b) => *b,
        Value::Number(n) => n.as_f64().is_some_and(|f| f != 0.0 && !f.is_nan()),
        Value::String(s) => !s.is_empty(),
        _ => true,
    }
}

/// The OpenAI Responses API family: `openai-responses`, `azure-openai-responses` and
/// `openai-codex-responses` (the wire says which).
pub(crate) struct Responses;

impl Provider for Responses {
    type Parser = sse::Reader<Stream>;

    async fn request(call: &Call<'_>) -> Result<Prepared, LlmError> {
        match call.target.wire {
            Wire::AzureResponses => azure(call),
            Wire::CodexResponses => codex(call),
            _ => openai(call),
        }
    }

    fn http_error(call: &Call<'_>, response: &ErrorResponse) -> String {
        if call.target.wire == Wire::CodexResponses {
            codex_http_error(response.status, &response.body, pi_base::clock::now_ms())
        } else {
            crate::providers::openai::http_error(response.status, &response.body)
        }
    }

    /// Codex also retries errors that read like a rate limit.
    fn retryable(call: &Call<'_>, response: &ErrorResponse) -> bool {
        let status = response.status;
        retryable_status(status)
            || (call.target.wire == Wire::CodexResponses && codex_retryable(status, &response.body))
    }

    fn parser(call: &Call<'_>) -> Self::Parser {
        sse::Reader::new(call, Stream::new(call.target))
    }
}

/// Which output item is being streamed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    Reasoning,
    Message,
    FunctionCall,
}

#[derive(Debug, Clone)]
struct Item {
    kind: Kind,
    /// The reasoning summary's parts so far.
    summary: usize,
    /// The message's content parts so far: whether each is a refusal (else output text).
    content: Vec<bool>,
}

impl Item {
    fn new(kind: Kind) -> Item {
        Item {
            kind,
            summary: 0,
            content: Vec::new(),
        }
    }
}

/// The state of one streamed response.
pub(crate) struct Stream {
    wire: Wire,
    prices: crate::models::Prices,
    model_id: String,
    /// The output item being streamed (the last one added).
    item: Option<Item>,
    /// The content block of that item, until the item is done.
    block: Option<usize>,
    /// Nothing more to read (the response completed, or `[DONE]`).
    done: bool,
    /// `response.completed` (or, for Codex, `response.done`) arrived.
    completed: bool,
}

fn str_at<'a>(v: &'a Value, k: &str) -> Option<&'a str> {
    v.get(k).and_then(Value::as_str)
}

/// JavaScript's `String(v)` of an optional value in a message.
fn js_text(v: Option<&Value>) -> String {
    match v {
        None => "undefined".to_owned(),
        Some(Value::String(s)) => s.clone(),
        Some(Value::Null) => "null".to_owned(),
        Some(other) => other.to_string(),
    }
}

/// The texts of an item's parts (`summary` or `content`), joined as the reference joins
/// them.
fn joined_texts(item: &Value, key: &str) -> String {
    item.get(key)
        .and_then(Value::as_array)
        .map(|parts| {
            parts
                .iter()
                .map(|p| js_text(p.get("text")))
                .collect::<Vec<_>>()
                .join("\n\n")
        })
        .unwrap_or_default()
}

/// The text of a finished message item: its output texts and refusals.
fn message_text(item: &Value) -> String {
    item.get("content")
        .and_then(Value::as_array)
        .map(|parts| {
            parts
                .iter()
                .map(|p| {
                    if str_at(p, "type") == Some("output_text") {
                        js_text(p.get("text"))
                    } else {
                        js_text(p.get("refusal"))
                    }
                })
                .collect::<String>()
        })
        .unwrap_or_default()
}

/// The text block's signature of a message item, for sending it back:
/// `{"v":1,"id":…,"phase":…}`.
fn message_signature(item: &Value) -> String {
    let mut sig = serde_json::Map::new();
    sig.insert("v".into(), 1.into());
    sig.insert("id".into(), item.get("id").cloned().unwrap_or(Value::Null));
    if let Some(p) = item.get("phase").filter(|p| !p.is_null()) {
        sig.insert("phase".into(), p.clone());
    }
    Value::Object(sig).to_string()
}

/// The price factor of a service tier.
fn tier_factor(tier: Option<&str>, model_id: &str) -> f64 {
    match tier {
        Some("flex") => 0.5,
        Some("priority") if model_id == "gpt-5.5" => 2.5,
        Some("priority") => 2.0,
        _ => 1.0,
    }
}

impl sse::Events for Stream {
    fn event(&mut self, out: &mut Assembler, ev: &sse::Event) -> Result<bool, LlmError> {
        self.data(out, &ev.data).map(|()| self.done)
    }

    /// The stream must have completed, without an error status.
    fn finish(&mut self, out: &mut Assembler) -> Result<(), LlmError> {
        if !self.completed {
            return Err(
                "the stream ended before the response was complete (no response.completed)".into(),
            );
        }
        out.outcome()
    }
}

impl Stream {
    pub(crate) fn new(target: &Target) -> Stream {
        Stream {
            wire: target.wire,
            prices: target.details.prices.clone(),
            model_id: target.model.id.clone(),
            item: None,
            block: None,
            done: false,
            completed: false,
        }
    }

    fn codex(&self) -> bool {
        self.wire == Wire::CodexResponses
    }

    /// Opens the block of the item just added.
    fn push(&mut self, out: &mut Assembler, kind: Kind, block: Block) {
        self.item = Some(Item::new(kind));
        self.block = Some(out.open(block));
    }

    fn kind(&self) -> Option<Kind> {
        self.item.as_ref().map(|i| i.kind)
    }

    /// The open block, if it is a thinking block (`thinking`), a text block or a tool call.
    fn open(&self, out: &Assembler, want: fn(&Block) -> bool) -> Option<usize> {
        self.block
            .filter(|i| out.msg.content.get(*i).is_some_and(want))
    }

    /// Handles the data of one SSE event.
    fn data(&mut self, out: &mut Assembler, data: &str) -> Result<(), LlmError> {
        let data = data.trim();
        if data.is_empty() {
            return Ok(());
        }
        if data.starts_with("[DONE]") {
            self.done = true;
            return Ok(());
        }
        let ev: Value = serde_json::from_str(data).map_err(|e| {
            LlmError::new(if self.codex() {
                format!("Invalid Codex SSE JSON: {e}")
            } else {
                format!("Could not parse a stream event: {e}")
            })
        })?;
        if !self.codex()
            && let Some(e) = ev.get("error").filter(|e| truthy(e))
        {
            return Err(match str_at(e, "message") {
                Some(m) if !m.is_empty() => m.to_owned(),
                _ => e.to_string(),
            }
            .into());
        }
        match str_at(&ev, "type") {
            Some(ty) => self.on_event(out, ty, &ev),
            None => Ok(()),
        }
    }

    /// Handles an event of type `ty`.
    fn on_event(&mut self, out: &mut Assembler, ty: &str, ev: &Value) -> Result<(), LlmError> {
        let delta = || str_at(ev, "delta").unwrap_or_default();
        match ty {
            "error" => return Err(self.error_event(ev)),
            "response.failed" => return Err(self.failed(ev.get("response"))),
            "response.created" => {
                if let Some(id) = ev
                    .get("response")
                    .and_then(|r| str_at(r, "id"))
                    .filter(|s| !s.is_empty())
                {
                    out.msg.response_id = Some(id.to_owned());
                }
            }
            "response.completed" | "response.incomplete" => {
                return self.completed(out, ev.get("response"), ty);
            }
            "response.done" if self.codex() => {
                return self.completed(out, ev.get("response"), ty);
            }
            "response.output_item.added" => {
                if let Some(item) = ev.get("item") {
                    self.item_added(out, item);
                }
            }
            "response.reasoning_summary_part.added" => {
                if let Some(item) = self.item.as_mut().filter(|i| i.kind == Kind::Reasoning) {
                    item.summary += 1;
                }
            }
            "response.reasoning_summary_text.delta" => self.summary_delta(out, delta()),
            "response.reasoning_summary_part.done" => self.summary_delta(out, "\n\n"),
            "response.reasoning_text.delta" => {
                if let Some(i) = self.block.filter(|_| self.kind() == Some(Kind::Reasoning)) {
                    out.append_thinking(i, delta());
                }
            }
            "response.content_part.added" => self.content_part(ev.get("part")),
            "response.output_text.delta" => self.text_delta(out, false, delta()),
            "response.refusal.delta" => self.text_delta(out, true, delta()),
            "response.function_call_arguments.delta" => {
                if let Some(i) = self
                    .block
                    .filter(|_| self.kind() == Some(Kind::FunctionCall))
                {
                    out.append_arguments(i, delta());
                }
            }
            "response.function_call_arguments.done" => {
                let all = str_at(ev, "arguments").unwrap_or_default();
                self.arguments_done(out, all);
            }
            "response.output_item.done" => {
                if let Some(item) = ev.get("item") {
                    self.item_done(out, item);
                }
            }
            _ => {}
        }
        Ok(())
    }

    /// The error of an `error` event.
    fn error_event(&self, ev: &Value) -> LlmError {
        if self.codex() {
            let m = [str_at(ev, "message"), str_at(ev, "code")]
                .into_iter()
                .flatten()
                .find(|s| !s.is_empty())
                .map_or_else(|| ev.to_string(), str::to_owned);
            return format!("Codex error: {m}").into();
        }
        format!(
            "Error Code {}: {}",
            js_text(ev.get("code")),
            js_text(ev.get("message"))
        )
        .into()
    }

    /// The error of a `response.failed` event.
    fn failed(&self, r: Option<&Value>) -> LlmError {
        let err = r.and_then(|r| r.get("error")).filter(|e| truthy(e));
        if self.codex() {
            let m = err
                .and_then(|e| str_at(e, "message"))
                .filter(|m| !m.is_empty())
                .unwrap_or("Codex response failed");
            return m.into();
        }
        let reason = r
            .and_then(|r| r.get("incomplete_details"))
            .and_then(|d| str_at(d, "reason"))
            .filter(|s| !s.is_empty());
        let field = |e: &Value, k: &str, d: &str| {
            str_at(e, k)
                .filter(|s| !s.is_empty())
                .unwrap_or(d)
                .to_owned()
        };
        match (err, reason) {
            (Some(e), _) => format!(
                "{}: {}",
                field(e, "code", "unknown"),
                field(e, "message", "no message")
            ),
            (None, Some(r)) => format!("incomplete: {r}"),
            (None, None) => "Unknown error (no error details in response)".to_owned(),
        }
        .into()
    }

    fn item_added(&mut self, out: &mut Assembler, item: &Value) {
        match str_at(item, "type") {
            Some("reasoning") => self.push(out, Kind::Reasoning, Block::thinking(None)),
            Some("message") => self.push(out, Kind::Message, Block::text()),
            Some("function_call") => {
                let id = format!(
                    "{}|{}",
                    js_text(item.get("call_id")),
                    js_text(item.get("id"))
                );
                let name = str_at(item, "name").unwrap_or_default().to_owned();
                let mut block = Block::tool_call(id, name);
                if let Block::ToolCall { partial, .. } = &mut block {
                    *partial = str_at(item, "arguments").unwrap_or_default().to_owned();
                }
                self.push(out, Kind::FunctionCall, block);
            }
            _ => {}
        }
    }

    /// Text of the reasoning summary (once a summary part was added).
    fn summary_delta(&mut self, out: &mut Assembler, delta: &str) {
        if self.kind() != Some(Kind::Reasoning) {
            return;
        }
        let Some(index) = self.open(out, |b| matches!(b, Block::Thinking { .. })) else {
            return;
        };
        if self.item.as_ref().is_none_or(|i| i.summary == 0) {
            return;
        }
        out.append_thinking(index, delta);
    }

    fn content_part(&mut self, part: Option<&Value>) {
        if let Some(item) = self.item.as_mut().filter(|i| i.kind == Kind::Message)
            && let Some(part) = part
        {
            match str_at(part, "type") {
                Some("output_text") => item.content.push(false),
                Some("refusal") => item.content.push(true),
                _ => {}
            }
        }
    }

    /// Output text (or refusal text) of the message's current content part.
    fn text_delta(&mut self, out: &mut Assembler, refusal: bool, delta: &str) {
        if self.kind() != Some(Kind::Message) {
            return;
        }
        let Some(index) = self.open(out, |b| matches!(b, Block::Text { .. })) else {
            return;
        };
        if self.item.as_ref().and_then(|i| i.content.last()) != Some(&refusal) {
            return;
        }
        out.append_text(index, delta);
    }

    /// The whole arguments of the function call: what had not streamed yet is reported.
    fn arguments_done(&mut self, out: &mut Assembler, all: &str) {
        if self.kind() != Some(Kind::FunctionCall) {
            return;
        }
        let Some(index) = self.block else { return };
        if let Some(Block::ToolCall {
            arguments, partial, ..
        }) = out.msg.content.get_mut(index)
        {
            let before = std::mem::replace(partial, all.to_owned());
            *arguments = json_partial::parse(partial);
            if let Some(rest) = all.strip_prefix(before.as_str())
                && !rest.is_empty()
            {
                let delta = rest.to_owned();
                out.emit(&Event::ToolCallDelta { index, delta });
            }
        }
    }

    /// The item is done: its block takes the item's final text (and signature) and ends.
    fn item_done(&mut self, out: &mut Assembler, item: &Value) {
        let Some(index) = self.block else { return };
        let Some(block) = out.msg.content.get_mut(index) else {
            return;
        };
        match (str_at(item, "type"), block) {
            (
                Some("reasoning"),
                Block::Thinking {
                    thinking,
                    signature,
                    ..
                },
            ) => {
                let summary = joined_texts(item, "summary");
                let content = joined_texts(item, "content");
                if !summary.is_empty() {
                    *thinking = summary;
                } else if !content.is_empty() {
                    *thinking = content;
                }
                *signature = Some(item.to_string());
            }
            (Some("message"), Block::Text { text, signature }) => {
                *text = message_text(item);
                *signature = Some(message_signature(item));
            }
            (Some("function_call"), Block::ToolCall { partial, .. }) => {
                if partial.is_empty() {
                    *partial = str_at(item, "arguments").unwrap_or("{}").to_owned();
                }
            }
            _ => return,
        }
        self.block = None;
        out.close(index);
    }

    fn completed(
        &mut self,
        out: &mut Assembler,
        r: Option<&Value>,
        ty: &str,
    ) -> Result<(), LlmError> {
        self.done = true;
        self.completed = true;
        let empty = Value::Null;
        let r = r.unwrap_or(&empty);
        if let Some(id) = str_at(r, "id").filter(|s| !s.is_empty()) {
            out.msg.response_id = Some(id.to_owned());
        }
        self.usage(out, r);
        out.emit(&Event::Usage);
        let status = str_at(r, "status");
        out.msg.stop_reason = match status {
            None if ty == "response.incomplete" => StopReason::Length,
            None | Some("completed" | "in_progress" | "queued") => StopReason::Stop,
            Some("incomplete") => StopReason::Length,
            Some("failed" | "cancelled") => StopReason::Error,
            Some(_) if self.codex() => StopReason::Stop,
            Some(other) => return Err(format!("Unhandled stop reason: {other}").into()),
        };
        if out.msg.stop_reason == StopReason::Stop && out.has_tool_calls() {
            out.msg.stop_reason = StopReason::ToolUse;
        }
        Ok(())
    }

    /// The usage and cost of a completed response (its service tier's price included).
    fn usage(&mut self, out: &mut Assembler, r: &Value) {
        let usage = &mut out.msg.usage;
        if let Some(u) = r.get("usage").filter(|u| truthy(u)) {
            let n = |v: Option<&Value>| v.and_then(Value::as_f64).unwrap_or(0.0);
            let cached = n(u
                .get("input_tokens_details")
                .and_then(|d| d.get("cached_tokens")));
            let input = n(u.get("input_tokens"));
            usage.input = (input - cached).max(0.0) as u64;
            usage.output = n(u.get("output_tokens")).max(0.0) as u64;
            usage.cache_read = cached.max(0.0) as u64;
            usage.cache_write = 0;
            usage.settle(&self.prices);
            usage.total_tokens = n(u.get("total_tokens")).max(0.0) as u64;
        } else {
            let total = usage.total_tokens;
            usage.settle(&self.prices);
            usage.total_tokens = total;
        }
        let tier = match self.wire {
            Wire::OpenAiResponses | Wire::CodexResponses => str_at(r, "service_tier"),
            _ => None,
        };
        let factor = tier_factor(tier, &self.model_id);
        if factor != 1.0 {
            let c = &mut usage.cost;
            c.input *= factor;
            c.output *= factor;
            c.cache_read *= factor;
            c.cache_write *= factor;
            c.total = c.input + c.output + c.cache_read + c.cache_write;
        }
    }
}
