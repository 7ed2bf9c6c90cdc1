//! The `messages` of an OpenAI Chat Completions request, as the reference's
//! `openai-completions` provider writes them (after `transform`).

use crate::models::Model;
use crate::transform;
use crate::value::{JStr, Obj, Value};
use pi_base::js;

/// The compatibility flags that shape the messages: detected from the provider and base URL,
/// then overridden by the model's `compat`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Compat {
    pub(crate) supports_developer_role: bool,
    pub(crate) requires_tool_result_name: bool,
    pub(crate) requires_assistant_after_tool_result: bool,
    pub(crate) requires_thinking_as_text: bool,
    pub(crate) requires_reasoning_content: bool,
    /// `cacheControlFormat: "anthropic"` (OpenRouter's Claude models).
    pub(crate) anthropic_cache_control: bool,
    pub(crate) supports_long_cache_retention: bool,
}

/// Which OpenAI-compatible service a model is served by, from its provider and base URL:
/// the defaults of the compatibility flags depend on it (upstream's detection).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Service {
    pub(crate) zai: bool,
    pub(crate) moonshot: bool,
    pub(crate) cf_workers: bool,
    pub(crate) cf_gateway: bool,
    pub(crate) grok: bool,
    pub(crate) deepseek: bool,
    pub(crate) openrouter: bool,
    pub(crate) chutes: bool,
    /// Not OpenAI's own API, as far as its message and request flags go.
    pub(crate) non_standard: bool,
}

impl Service {
    pub(crate) fn of(model: &Model) -> Service {
        let p = model.provider.as_str();
        let url = model.base_url.as_str();
        let zai = p == "zai" || url.contains("api.z.ai");
        let moonshot = p == "moonshotai" || p == "moonshotai-cn" || url.contains("api.moonshot.");
        let cf_workers = p == "cloudflare-workers-ai" || url.contains("api.cloudflare.com");
        let cf_gateway = p == "cloudflare-ai-gateway" || url.contains("gateway.ai.cloudflare.com");
        let grok = p == "xai" || url.contains("api.x.ai");
        let chutes = url.contains("chutes.ai");
        let non_standard = p == "cerebras"
            || url.contains("cerebras.ai")
            || grok
            || chutes
            || url.contains("deepseek.com")
            || zai
            || moonshot
            || p == "opencode"
            || url.contains("opencode.ai")
            || cf_workers
            || cf_gateway;
        Service {
            zai,
            moonshot,
            cf_workers,
            cf_gateway,
            grok,
            deepseek: p == "deepseek" || url.contains("deepseek.com"),
            openrouter: p == "openrouter" || url.contains("openrouter.ai"),
            chutes,
            non_standard,
        }
    }
}

impl Compat {
    pub(crate) fn of(model: &Model) -> Compat {
        let p = model.provider.as_str();
        let Service {
            cf_workers,
            cf_gateway,
            deepseek,
            non_standard,
            ..
        } = Service::of(model);
        let b = |k: &str, d: bool| model.compat_bool(k).unwrap_or(d);
        let cache = match model.compat_str("cacheControlFormat") {
            Some(f) => f == "anthropic",
            None => p == "openrouter" && model.id.starts_with("anthropic/"),
        };
        Compat {
            supports_developer_role: b("supportsDeveloperRole", !non_standard),
            requires_tool_result_name: b("requiresToolResultName", false),
            requires_assistant_after_tool_result: b("requiresAssistantAfterToolResult", false),
            requires_thinking_as_text: b("requiresThinkingAsText", false),
            requires_reasoning_content: b("requiresReasoningContentOnAssistantMessages", deepseek),
            anthropic_cache_control: cache,
            supports_long_cache_retention: b(
                "supportsLongCacheRetention",
                !(cf_workers || cf_gateway),
            ),
        }
    }
}

/// Every UTF-16 code unit outside `[A-Za-z0-9_-]` becomes `_`.
pub(crate) fn sanitize_id(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        if c.is_ascii_alphanumeric() || c == '_' || c == '-' {
            out.push(c);
        } else {
            for _ in 0..c.len_utf16() {
                out.push('_');
            }
        }
    }
    out
}

/// Tool-call ids from other models: the call id of `call|item` ids (sanitized, at most 40
/// characters), and OpenAI's own 40-character limit.
pub(crate) fn normalize_id(id: &str, provider: &str) -> String {
    if let Some((call, _)) = id.split_once('|') {
        return js::utf16_prefix(&sanitize_id(call), 40).to_owned();
    }
    if provider == "openai" && js::utf16_len(id) > 40 {
        return js::utf16_prefix(id, 40).to_owned();
    }
    id.to_owned()
}

fn str_of(v: Option<&Value>) -> Option<&JStr> {
    v.and_then(Value::as_jstr)
}

fn clean(v: Option<&Value>) -> Value {
    match v {
        Some(Value::Str(s)) => Value::Str(s.without_lone_surrogates()),
        Some(other) => other.clone(),
        None => Value::Null,
    }
}

fn part(t: &str, text: Value) -> Value {
    let mut p = Obj::new();
    p.set("type", Value::str(t));
    p.set("text", text);
    Value::Obj(p)
}

fn image_url(block: &Value) -> Value {
    let mut url = JStr::new("data:");
    url.push(&Value::js_string(block.get("mimeType")));
    url.push_text(";base64,");
    url.push(&Value::js_string(block.get("data")));
    let mut inner = Obj::new();
    inner.set("url", Value::Str(url));
    let mut p = Obj::new();
    p.set("type", Value::str("image_url"));
    p.set("image_url", Value::Obj(inner));
    Value::Obj(p)
}

fn is_type(b: &Value, t: &str) -> bool {
    b.get("type").is_some_and(|x| x.is_str(t))
}

fn role_is(m: &Value, r: &str) -> bool {
    m.get("role").is_some_and(|x| x.is_str(r))
}

fn msg(role: &str, content: Value) -> Value {
    let mut m = Obj::new();
    m.set("role", Value::str(role));
    m.set("content", content);
    Value::Obj(m)
}

const PROCESSED: &str = "I have processed the tool results.";

/// The request's `messages`: the system prompt first (if any), then the conversation.
/// `cache_retention` is `none`, `short` or `long` (upstream's `PI_CACHE_RETENTION`).
pub fn messages(
    llm: &[Value],
    target: &Model,
    system_prompt: Option<&str>,
    cache_retention: &str,
) -> Vec<Value> {
    let compat = Compat::of(target);
    let provider = target.provider.clone();
    let norm = move |id: &str| normalize_id(id, &provider);
    let msgs = transform::transform(llm, target, &norm);
    let mut out: Vec<Value> = Vec::new();
    if let Some(sp) = system_prompt.filter(|s| !s.is_empty()) {
        let role = if target.reasoning && compat.supports_developer_role {
            "developer"
        } else {
            "system"
        };
        out.push(msg(
            role,
            Value::Str(JStr::new(sp).without_lone_surrogates()),
        ));
    }
    // The role of the last message written (a message with nothing to send is skipped).
    let mut last_role: Option<&str> = None;
    let mut i = 0;
    while i < msgs.len() {
        let m = &msgs[i];
        if compat.requires_assistant_after_tool_result
            && last_role == Some("toolResult")
            && role_is(m, "user")
        {
            out.push(msg("assistant", Value::str(PROCESSED)));
        }
        if role_is(m, "toolResult") {
            // A run of tool results, then the images they returned.
            let end = msgs[i..]
                .iter()
                .position(|m| !role_is(m, "toolResult"))
                .map_or(msgs.len(), |k| i + k);
            last_role = Some(tool_results(&msgs[i..end], &compat, target, &mut out));
            i = end;
            continue;
        }
        let written = if role_is(m, "user") {
            user(m).map(|u| (u, "user"))
        } else if role_is(m, "assistant") {
            assistant(m, &compat, target).map(|a| (a, "assistant"))
        } else {
            last_role = None;
            None
        };
        if let Some((m, role)) = written {
            out.push(m);
            last_role = Some(role);
        }
        i += 1;
    }
    if compat.anthropic_cache_control && cache_retention != "none" {
        add_cache_points(&mut out, &compat, cache_retention);
    }
    out
}

/// A user message: its text, or its parts (none when it has no parts).
fn user(m: &Value) -> Option<Value> {
    match m.get("content") {
        Some(Value::Str(s)) => Some(msg("user", Value::Str(s.without_lone_surrogates()))),
        other => {
            let blocks = other.and_then(Value::as_arr).unwrap_or_default();
            let parts: Vec<Value> = blocks
                .iter()
                .map(|b| {
                    if is_type(b, "text") {
                        part("text", clean(b.get("text")))
                    } else {
                        image_url(b)
                    }
                })
                .collect();
            (!parts.is_empty()).then(|| msg("user", Value::Arr(parts)))
        }
    }
}

/// An assistant message: its text, its thinking (as the server wants it), its tool calls;
/// none when it has nothing to send.
fn assistant(m: &Value, compat: &Compat, target: &Model) -> Option<Value> {
    let blocks = m.get("content").and_then(Value::as_arr).unwrap_or_default();
    let mut a = Obj::new();
    a.set("role", Value::str("assistant"));
    a.set(
        "content",
        if compat.requires_assistant_after_tool_result {
            Value::str("")
        } else {
            Value::Null
        },
    );
    let texts: Vec<JStr> = blocks
        .iter()
        .filter(|b| is_type(b, "text"))
        .filter_map(|b| str_of(b.get("text")))
        .filter(|t| !t.is_blank())
        .map(JStr::without_lone_surrogates)
        .collect();
    let thinking: Vec<&Value> = blocks
        .iter()
        .filter(|b| is_type(b, "thinking"))
        .filter(|b| str_of(b.get("thinking")).is_some_and(|t| !t.is_blank()))
        .collect();
    set_text_and_thinking(&mut a, &texts, &thinking, compat);
    let calls: Vec<&Value> = blocks.iter().filter(|b| is_type(b, "toolCall")).collect();
    if !calls.is_empty() {
        set_tool_calls(&mut a, &calls);
    }
    if compat.requires_reasoning_content && target.reasoning && a.get("reasoning_content").is_none()
    {
        a.set("reasoning_content", Value::str(""));
    }
    let has_content = match a.get("content") {
        Some(Value::Str(s)) => !s.is_empty(),
        Some(Value::Arr(x)) => !x.is_empty(),
        _ => false,
    };
    (has_content || a.get("tool_calls").is_some()).then_some(Value::Obj(a))
}

/// The text of an assistant message, and its thinking: as text parts before the text, or
/// under the field it came in (its signature), joined.
fn set_text_and_thinking(a: &mut Obj, texts: &[JStr], thinking: &[&Value], compat: &Compat) {
    let mut joined = JStr::default();
    for t in texts {
        joined.push(t);
    }
    let joined_thinking = |sep: &str, clean: bool| {
        let mut t = JStr::default();
        for (k, b) in thinking.iter().enumerate() {
            if k > 0 {
                t.push_text(sep);
            }
            if let Some(s) = str_of(b.get("thinking")) {
                t.push(&if clean {
                    s.without_lone_surrogates()
                } else {
                    s.clone()
                });
            }
        }
        t
    };
    if thinking.is_empty() {
        if !joined.is_empty() {
            a.set("content", Value::Str(joined));
        }
    } else if compat.requires_thinking_as_text {
        let mut parts = vec![part("text", Value::Str(joined_thinking("\n\n", true)))];
        parts.extend(texts.iter().map(|t| part("text", Value::Str(t.clone()))));
        a.set("content", Value::Arr(parts));
    } else {
        if !joined.is_empty() {
            a.set("content", Value::Str(joined));
        }
        if let Some(sig) = str_of(thinking[0].get("thinkingSignature")).filter(|s| !s.is_empty()) {
            a.set_key(sig.clone(), Value::Str(joined_thinking("\n", false)));
        }
    }
}

/// `tool_calls`, and OpenRouter's `reasoning_details` kept in their signatures.
fn set_tool_calls(a: &mut Obj, calls: &[&Value]) {
    let tool_calls = calls
        .iter()
        .map(|c| {
            let mut f = Obj::new();
            f.set_opt("name", c.get("name").cloned());
            f.set_opt(
                "arguments",
                c.get("arguments")
                    .map(|a| Value::Str(JStr::new(&String::from_utf8_lossy(&a.to_json())))),
            );
            let mut t = Obj::new();
            t.set_opt("id", c.get("id").cloned());
            t.set("type", Value::str("function"));
            t.set("function", Value::Obj(f));
            Value::Obj(t)
        })
        .collect();
    a.set("tool_calls", Value::Arr(tool_calls));
    let details: Vec<Value> = calls
        .iter()
        .filter_map(|c| str_of(c.get("thoughtSignature")).filter(|s| !s.is_empty()))
        .filter_map(|s| Value::parse(s.text().as_bytes()))
        .filter(Value::truthy)
        .collect();
    if !details.is_empty() {
        a.set("reasoning_details", Value::Arr(details));
    }
}

/// A run of tool results, as `tool` messages; the images they returned follow in a user
/// message (the API takes none in tool messages). Returns the role written last.
fn tool_results(
    results: &[Value],
    compat: &Compat,
    target: &Model,
    out: &mut Vec<Value>,
) -> &'static str {
    let mut images: Vec<Value> = Vec::new();
    for t in results {
        let blocks = t.get("content").and_then(Value::as_arr).unwrap_or_default();
        let text = transform::joined_text(blocks);
        let content = if text.is_empty() {
            JStr::new("(see attached image)")
        } else {
            text.without_lone_surrogates()
        };
        let mut r = Obj::new();
        r.set("role", Value::str("tool"));
        r.set("content", Value::Str(content));
        r.set_opt("tool_call_id", t.get("toolCallId").cloned());
        if compat.requires_tool_result_name
            && let Some(name) = t.get("toolName").filter(|n| n.truthy())
        {
            r.set("name", name.clone());
        }
        out.push(Value::Obj(r));
        if target.accepts_images() {
            images.extend(blocks.iter().filter(|b| is_type(b, "image")).map(image_url));
        }
    }
    if images.is_empty() {
        return "toolResult";
    }
    if compat.requires_assistant_after_tool_result {
        out.push(msg("assistant", Value::str(PROCESSED)));
    }
    let mut parts = vec![part(
        "text",
        Value::str("Attached image(s) from tool result:"),
    )];
    parts.extend(images);
    out.push(msg("user", Value::Arr(parts)));
    "user"
}

/// Anthropic's cache control (OpenRouter's Claude models): the system prompt and the last
/// user or assistant message with text are marked.
fn add_cache_points(out: &mut [Value], compat: &Compat, cache_retention: &str) {
    let mut cc = Obj::new();
    cc.set("type", Value::str("ephemeral"));
    if cache_retention == "long" && compat.supports_long_cache_retention {
        cc.set("ttl", Value::str("1h"));
    }
    let cc = Value::Obj(cc);
    if let Some(m) = out
        .iter_mut()
        .find(|m| role_is(m, "system") || role_is(m, "developer"))
    {
        add_cache_control(m, &cc);
    }
    for m in out.iter_mut().rev() {
        if (role_is(m, "user") || role_is(m, "assistant")) && add_cache_control(m, &cc) {
            break;
        }
    }
}

/// Marks the last text part of a message (a string content becomes one text part).
fn add_cache_control(m: &mut Value, cc: &Value) -> bool {
    let Value::Obj(o) = m else { return false };
    match o.get("content") {
        Some(Value::Str(s)) => {
            if s.is_empty() {
                return false;
            }
            let mut p = Obj::new();
            p.set("type", Value::str("text"));
            p.set("text", Value::Str(s.clone()));
            p.set("cache_control", cc.clone());
            o.set("content", Value::Arr(vec![Value::Obj(p)]));
            true
        }
        Some(Value::Arr(parts)) => {
            let mut parts = parts.clone();
            let Some(p) = parts.iter_mut().rev().find(|p| is_type(p, "text")) else {
                return false;
            };
            if let Value::Obj(po) = p {
                po.set("cache_control", cc.clone());
            }
            o.set("content", Value::Arr(parts));
            true
        }
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tool_call_ids() {
        assert_eq!(normalize_id("call_abc|fc_1+/=", "openai"), "call_abc");
        assert_eq!(normalize_id("a.b|c", "groq"), "a_b");
        let long = "x".repeat(50);
        assert_eq!(normalize_id(&long, "openai").len(), 40);
        assert_eq!(normalize_id(&long, "openrouter").len(), 50);
        assert_eq!(sanitize_id("a😀b"), "a__b");
    }
}
