//! The `messages` (and `system` blocks) of an Anthropic Messages request, as the reference's
//! `anthropic-messages` provider writes them (after `transform`), for an
//! API key (not an OAuth token, for which the reference also renames tools).

use crate::models::Model;
use crate::providers::openai::messages::sanitize_id;
use crate::transform;
use crate::value::{JStr, Obj, Value};

/// Tool-call ids from other models: characters outside `[A-Za-z0-9_-]` become `_`, at most
/// 64 characters.
pub(crate) fn normalize_id(id: &str) -> String {
    sanitize_id(id).chars().take(64).collect()
}

fn is_type(b: &Value, t: &str) -> bool {
    b.get("type").is_some_and(|x| x.is_str(t))
}

fn role_is(m: &Value, r: &str) -> bool {
    m.get("role").is_some_and(|x| x.is_str(r))
}

fn clean(v: Option<&Value>) -> Value {
    match v {
        Some(Value::Str(s)) => Value::Str(s.without_lone_surrogates()),
        Some(other) => other.clone(),
        None => Value::Null,
    }
}

fn text_block(text: Value) -> Value {
    let mut b = Obj::new();
    b.set("type", Value::str("text"));
    b.set("text", text);
    Value::Obj(b)
}

fn image_block(b: &Value) -> Value {
    let mut src = Obj::new();
    src.set("type", Value::str("base64"));
    src.set_opt("media_type", b.get("mimeType").cloned());
    src.set_opt("data", b.get("data").cloned());
    let mut o = Obj::new();
    o.set("type", Value::str("image"));
    o.set("source", Value::Obj(src));
    Value::Obj(o)
}

fn msg(role: &str, content: Value) -> Value {
    let mut m = Obj::new();
    m.set("role", Value::str(role));
    m.set("content", content);
    Value::Obj(m)
}

/// A text or image block of a user message or tool result, as Anthropic takes it.
fn content_block(b: &Value) -> Value {
    if is_type(b, "text") {
        text_block(clean(b.get("text")))
    } else {
        image_block(b)
    }
}

/// A tool result's content: its texts joined by newlines, or blocks when it has images.
fn tool_result_content(blocks: &[Value]) -> Value {
    if !blocks.iter().any(|b| is_type(b, "image")) {
        let mut t = JStr::default();
        for (k, b) in blocks.iter().enumerate() {
            if k > 0 {
                t.push_text("\n");
            }
            if let Some(v) = b.get("text").filter(|v| !matches!(v, Value::Null)) {
                t.push(&Value::js_string(Some(v)));
            }
        }
        return Value::Str(t.without_lone_surrogates());
    }
    let mut out: Vec<Value> = blocks.iter().map(content_block).collect();
    if !out.iter().any(|b| is_type(b, "text")) {
        out.insert(0, text_block(Value::str("(see attached image)")));
    }
    Value::Arr(out)
}

/// The cache marker, or `None` with retention `none`.
pub(crate) fn cache_control(target: &Model, cache_retention: &str) -> Option<Value> {
    if cache_retention == "none" {
        return None;
    }
    let mut cc = Obj::new();
    cc.set("type", Value::str("ephemeral"));
    if cache_retention == "long" && target.compat_bool("supportsLongCacheRetention") != Some(false)
    {
        cc.set("ttl", Value::str("1h"));
    }
    Some(Value::Obj(cc))
}

/// The request's `system` blocks for a system prompt.
pub fn system(system_prompt: &str, target: &Model, cache_retention: &str) -> Vec<Value> {
    let mut b = Obj::new();
    b.set("type", Value::str("text"));
    b.set(
        "text",
        Value::Str(JStr::new(system_prompt).without_lone_surrogates()),
    );
    if let Some(cc) = cache_control(target, cache_retention) {
        b.set("cache_control", cc);
    }
    vec![Value::Obj(b)]
}

/// The request's `messages`.
pub fn messages(llm: &[Value], target: &Model, cache_retention: &str) -> Vec<Value> {
    let msgs = transform::transform(llm, target, &normalize_id);
    let mut out: Vec<Value> = Vec::new();
    let mut i = 0;
    while i < msgs.len() {
        let m = &msgs[i];
        if role_is(m, "toolResult") {
            // A run of tool results goes in one user message.
            let end = msgs[i..]
                .iter()
                .position(|m| !role_is(m, "toolResult"))
                .map_or(msgs.len(), |k| i + k);
            let results = msgs[i..end].iter().map(tool_result).collect();
            out.push(msg("user", Value::Arr(results)));
            i = end;
            continue;
        }
        if role_is(m, "user") {
            out.extend(user(m));
        } else if role_is(m, "assistant") {
            let blocks: Vec<Value> = m
                .get("content")
                .and_then(Value::as_arr)
                .unwrap_or_default()
                .iter()
                .filter_map(assistant_block)
                .collect();
            if !blocks.is_empty() {
                out.push(msg("assistant", Value::Arr(blocks)));
            }
        }
        i += 1;
    }
    if let Some(cc) = cache_control(target, cache_retention) {
        mark_last_user_message(&mut out, cc);
    }
    out
}

/// A user message, without blank texts (none when nothing is left).
fn user(m: &Value) -> Option<Value> {
    match m.get("content") {
        Some(Value::Str(s)) => {
            (!s.is_blank()).then(|| msg("user", Value::Str(s.without_lone_surrogates())))
        }
        other => {
            let blocks: Vec<Value> = other
                .and_then(Value::as_arr)
                .unwrap_or_default()
                .iter()
                .map(content_block)
                .filter(|b| {
                    !is_type(b, "text")
                        || b.get("text")
                            .and_then(Value::as_jstr)
                            .is_some_and(|t| !t.is_blank())
                })
                .collect();
            (!blocks.is_empty()).then(|| msg("user", Value::Arr(blocks)))
        }
    }
}

/// A block of an assistant message as Anthropic takes it back: text, thinking (a text block
/// when it has no signature to prove it), redacted thinking, tool use. Blank texts are
/// dropped.
fn assistant_block(b: &Value) -> Option<Value> {
    let nonblank = |k: &str| b.get(k).and_then(Value::as_jstr).filter(|t| !t.is_blank());
    if is_type(b, "text") {
        let t = nonblank("text")?;
        return Some(text_block(Value::Str(t.without_lone_surrogates())));
    }
    if is_type(b, "thinking") {
        if b.get("redacted").is_some_and(Value::truthy) {
            let mut r = Obj::new();
            r.set("type", Value::str("redacted_thinking"));
            r.set_opt("data", b.get("thinkingSignature").cloned());
            return Some(Value::Obj(r));
        }
        let t = nonblank("thinking")?;
        let Some(sig) = nonblank("thinkingSignature") else {
            return Some(text_block(Value::Str(t.without_lone_surrogates())));
        };
        let mut o = Obj::new();
        o.set("type", Value::str("thinking"));
        o.set("thinking", Value::Str(t.without_lone_surrogates()));
        o.set("signature", Value::Str(sig.clone()));
        return Some(Value::Obj(o));
    }
    if is_type(b, "toolCall") {
        let mut o = Obj::new();
        o.set("type", Value::str("tool_use"));
        o.set_opt("id", b.get("id").cloned());
        o.set_opt("name", b.get("name").cloned());
        let input = match b.get("arguments") {
            None | Some(Value::Null) => Value::Obj(Obj::new()),
            Some(a) => a.clone(),
        };
        o.set("input", input);
        return Some(Value::Obj(o));
    }
    None
}

fn tool_result(t: &Value) -> Value {
    let mut r = Obj::new();
    r.set("type", Value::str("tool_result"));
    r.set_opt("tool_use_id", t.get("toolCallId").cloned());
    let blocks = t.get("content").and_then(Value::as_arr).unwrap_or_default();
    r.set("content", tool_result_content(blocks));
    r.set_opt("is_error", t.get("isError").cloned());
    Value::Obj(r)
}

/// Marks the last block of the conversation's last message for caching, when it is the
/// user's (a text content becomes a text block).
fn mark_last_user_message(out: &mut [Value], cc: Value) {
    let Some(Value::Obj(last)) = out.last_mut() else {
        return;
    };
    if !last.get("role").is_some_and(|r| r.is_str("user")) {
        return;
    }
    match last.get("content") {
        Some(Value::Arr(blocks)) => {
            let mut blocks = blocks.clone();
            if let Some(Value::Obj(b)) = blocks.last_mut() {
                let t = b.get("type");
                if t.is_some_and(|t| {
                    t.is_str("text") || t.is_str("image") || t.is_str("tool_result")
                }) {
                    b.set("cache_control", cc);
                }
            }
            last.set("content", Value::Arr(blocks));
        }
        Some(Value::Str(s)) => {
            let mut b = Obj::new();
            b.set("type", Value::str("text"));
            b.set("text", Value::Str(s.clone()));
            b.set("cache_control", cc);
            last.set("content", Value::Arr(vec![Value::Obj(b)]));
        }
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tool_call_ids() {
        assert_eq!(normalize_id("call_1|fc+/="), "call_1_fc___");
        assert_eq!(normalize_id(&"a".repeat(80)).len(), 64);
    }
}
