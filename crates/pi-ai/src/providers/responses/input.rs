//! The `input` of an OpenAI Responses request (`openai-responses`, `azure-openai-responses`,
//! `openai-codex-responses`), as the reference's shared converter writes it (after
//! [`transform`](crate::transform)):
//!
//! - the system prompt as a `developer` (reasoning models) or `system` message, unless the
//!   API takes it elsewhere (Codex's `instructions`);
//! - user messages as `input_text` / `input_image` parts;
//! - an assistant message as the items it was made of: the model's own reasoning items
//!   (kept whole, encrypted content included, in the thinking block's signature), one
//!   `message` item per text block (its id and phase from the text signature), and one
//!   `function_call` per tool call (`call_id|item_id` ids split back);
//! - tool results as `function_call_output` items (text, or parts with images).
//!
//! Tool-call ids of other providers are rewritten to what the API accepts: `[A-Za-z0-9_-]`,
//! at most 64 characters, and item ids starting with `fc_` (a hash of the foreign item id).

use crate::models::Model;
use crate::transform;
use crate::value::{JStr, Obj, Value};
use pi_base::js;

/// Why a context cannot be sent.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub(crate) enum InputError {
    /// A thinking block of the target model whose signature is not the JSON of a
    /// reasoning item.
    #[error("a thinking block's signature is not a reasoning item (invalid JSON): {0}")]
    Signature(String),
}

/// The reference's `shortHash`: two 32-bit multiplicative hashes of the UTF-16 code units,
/// written in base 36 (a short, stable replacement for long ids).
pub(crate) fn short_hash(s: &str) -> String {
    let mut h1: u32 = 0xdead_beef;
    let mut h2: u32 = 0x41c6_ce57;
    for ch in s.encode_utf16() {
        let ch = u32::from(ch);
        h1 = (h1 ^ ch).wrapping_mul(2_654_435_761);
        h2 = (h2 ^ ch).wrapping_mul(1_597_334_677);
    }
    h1 = (h1 ^ (h1 >> 16)).wrapping_mul(2_246_822_507)
        ^ (h2 ^ (h2 >> 13)).wrapping_mul(3_266_489_909);
    h2 = (h2 ^ (h2 >> 16)).wrapping_mul(2_246_822_507)
        ^ (h1 ^ (h1 >> 13)).wrapping_mul(3_266_489_909);
    format!("{}{}", base36(h2), base36(h1))
}

fn base36(mut n: u32) -> String {
    const DIGITS: &[u8; 36] = b"0123456789abcdefghijklmnopqrstuvwxyz";
    let mut out = Vec::new();
    loop {
        out.push(DIGITS[(n % 36) as usize]);
        n /= 36;
        if n == 0 {
            break;
        }
    }
    out.reverse();
    String::from_utf8_lossy(&out).into_owned()
}

/// One part of an id: every UTF-16 unit outside `[A-Za-z0-9_-]` becomes `_`, at most 64
/// units, trailing `_` removed.
pub(crate) fn id_part(part: &str) -> String {
    let sanitized = crate::providers::openai::messages::sanitize_id(part);
    js::utf16_prefix(&sanitized, 64)
        .trim_end_matches('_')
        .to_owned()
}

fn str_of(v: Option<&Value>) -> Option<&JStr> {
    v.and_then(Value::as_jstr)
}

fn text_of(v: Option<&Value>) -> String {
    str_of(v).map(|s| s.text().into_owned()).unwrap_or_default()
}

/// `sanitizeSurrogates(v)` of a string value (`""` for anything else).
fn clean(v: Option<&Value>) -> Value {
    match v {
        Some(Value::Str(s)) => Value::Str(s.without_lone_surrogates()),
        _ => Value::str(""),
    }
}

fn is_type(b: &Value, t: &str) -> bool {
    b.get("type").is_some_and(|x| x.is_str(t))
}

fn role_is(m: &Value, r: &str) -> bool {
    m.get("role").is_some_and(|x| x.is_str(r))
}

/// Rewrites the id of a tool call that came from another model (upstream's
/// `normalizeToolCallId` of the Responses providers). `allowed`: the providers whose
/// `call|item` ids the API takes as such.
fn normalize_id(id: &str, target: &Model, source: &Value, allowed: &[&str]) -> String {
    if !allowed.contains(&target.provider.as_str()) {
        return id_part(id);
    }
    let Some((call, rest)) = id.split_once('|') else {
        return id_part(id);
    };
    let item = rest.split('|').next().unwrap_or_default();
    let foreign = !source
        .get("provider")
        .is_some_and(|p| p.is_str(&target.provider))
        || !source.get("api").is_some_and(|a| a.is_str(&target.api));
    let mut item_id = if foreign {
        js::utf16_prefix(&format!("fc_{}", short_hash(item)), 64).to_owned()
    } else {
        id_part(item)
    };
    if !item_id.starts_with("fc_") {
        item_id = id_part(&format!("fc_{item_id}"));
    }
    format!("{}|{item_id}", id_part(call))
}

/// The id and phase of a text block's signature: `{"v":1,"id":…,"phase":…}`, or a plain id
/// (older sessions).
fn text_signature(sig: Option<&JStr>) -> Option<(String, Option<&'static str>)> {
    let sig = sig.filter(|s| !s.is_empty())?.text().into_owned();
    if sig.starts_with('{')
        && let Ok(v) = serde_json::from_str::<serde_json::Value>(&sig)
        && v.get("v").and_then(serde_json::Value::as_f64) == Some(1.0)
        && let Some(id) = v.get("id").and_then(serde_json::Value::as_str)
    {
        let phase = match v.get("phase").and_then(serde_json::Value::as_str) {
            Some("commentary") => Some("commentary"),
            Some("final_answer") => Some("final_answer"),
            _ => None,
        };
        return Some((id.to_owned(), phase));
    }
    Some((sig, None))
}

fn data_url(b: &Value) -> Value {
    let mut url = JStr::new("data:");
    url.push(&Value::js_string(b.get("mimeType")));
    url.push_text(";base64,");
    url.push(&Value::js_string(b.get("data")));
    Value::Str(url)
}

fn input_text(text: Value) -> Value {
    let mut p = Obj::new();
    p.set("type", Value::str("input_text"));
    p.set("text", text);
    Value::Obj(p)
}

fn input_image(b: &Value) -> Value {
    let mut p = Obj::new();
    p.set("type", Value::str("input_image"));
    p.set("detail", Value::str("auto"));
    p.set("image_url", data_url(b));
    Value::Obj(p)
}

/// The request's `input`. `allowed`: the providers whose `call|item` tool-call ids the API
/// accepts; `system`: whether the system prompt goes into the input.
pub(crate) fn input(
    llm: &[Value],
    target: &Model,
    system_prompt: Option<&str>,
    allowed: &[&str],
    system: bool,
) -> Result<Vec<Value>, InputError> {
    let norm = |id: &str, source: &Value| normalize_id(id, target, source, allowed);
    let msgs = transform::transform_with_source(llm, target, &norm);
    let mut out: Vec<Value> = Vec::new();
    if system && let Some(sp) = system_prompt.filter(|s| !s.is_empty()) {
        let mut m = Obj::new();
        m.set(
            "role",
            Value::str(if target.reasoning {
                "developer"
            } else {
                "system"
            }),
        );
        m.set(
            "content",
            Value::Str(JStr::new(sp).without_lone_surrogates()),
        );
        out.push(Value::Obj(m));
    }
    // The position of the message among those written (it names text items without ids).
    let mut index = 0usize;
    for m in &msgs {
        let items = if role_is(m, "user") {
            user(m).into_iter().collect()
        } else if role_is(m, "assistant") {
            assistant_items(m, target, index)?
        } else if role_is(m, "toolResult") {
            vec![tool_output(m, target)]
        } else {
            index += 1;
            continue;
        };
        if items.is_empty() {
            continue;
        }
        out.extend(items);
        index += 1;
    }
    Ok(out)
}

/// A user message (none when it has no content).
fn user(m: &Value) -> Option<Value> {
    let text = |s: &JStr| input_text(Value::Str(s.without_lone_surrogates()));
    let content = transform::user_parts(m, text, |b| {
        if is_type(b, "text") {
            input_text(clean(b.get("text")))
        } else {
            input_image(b)
        }
    });
    if content.is_empty() {
        return None;
    }
    let mut u = Obj::new();
    u.set("role", Value::str("user"));
    u.set("content", Value::Arr(content));
    Some(Value::Obj(u))
}

/// An assistant message's items: reasoning items (kept whole in the thinking signatures),
/// message items, function calls.
fn assistant_items(m: &Value, target: &Model, index: usize) -> Result<Vec<Value>, InputError> {
    let different_model = !m.get("model").is_some_and(|x| x.is_str(&target.id))
        && m.get("provider")
            .is_some_and(|x| x.is_str(&target.provider))
        && m.get("api").is_some_and(|x| x.is_str(&target.api));
    let mut items: Vec<Value> = Vec::new();
    for b in m.get("content").and_then(Value::as_arr).unwrap_or_default() {
        if is_type(b, "thinking") {
            if let Some(sig) = str_of(b.get("thinkingSignature")).filter(|s| !s.is_empty()) {
                let item = Value::parse(sig.text().as_bytes())
                    .ok_or_else(|| InputError::Signature(sig.text().into_owned()))?;
                items.push(item);
            }
        } else if is_type(b, "text") {
            items.push(message_item(b, index));
        } else if is_type(b, "toolCall") {
            items.push(function_call(b, different_model));
        }
    }
    Ok(items)
}

/// A text block as a message item, with the id and phase of its signature (a made-up id
/// without one).
fn message_item(b: &Value, index: usize) -> Value {
    let (id, phase) = match text_signature(str_of(b.get("textSignature"))) {
        Some((id, phase)) if js::utf16_len(&id) > 64 => (format!("msg_{}", short_hash(&id)), phase),
        Some((id, phase)) if !id.is_empty() => (id, phase),
        Some((_, phase)) => (format!("msg_{index}"), phase),
        None => (format!("msg_{index}"), None),
    };
    let mut part = Obj::new();
    part.set("type", Value::str("output_text"));
    part.set("text", clean(b.get("text")));
    part.set("annotations", Value::Arr(Vec::new()));
    let mut item = Obj::new();
    item.set("type", Value::str("message"));
    item.set("role", Value::str("assistant"));
    item.set("content", Value::Arr(vec![Value::Obj(part)]));
    item.set("status", Value::str("completed"));
    item.set("id", Value::str(&id));
    item.set_opt("phase", phase.map(Value::str));
    Value::Obj(item)
}

/// A tool call as a function call item: its `call|item` id split (another model's `fc_`
/// item id is left out).
fn function_call(b: &Value, different_model: bool) -> Value {
    let id = text_of(b.get("id"));
    let mut parts = id.split('|');
    let call_id = parts.next().unwrap_or_default();
    let item_id = parts
        .next()
        .filter(|i| !(different_model && i.starts_with("fc_")));
    let mut item = Obj::new();
    item.set("type", Value::str("function_call"));
    item.set_opt("id", item_id.map(Value::str));
    item.set("call_id", Value::str(call_id));
    item.set_opt("name", b.get("name").cloned());
    item.set_opt(
        "arguments",
        b.get("arguments")
            .map(|a| Value::Str(JStr::new(&String::from_utf8_lossy(&a.to_json())))),
    );
    Value::Obj(item)
}

/// A tool result as a function call output: its text, with its images for a model that
/// reads them.
fn tool_output(m: &Value, target: &Model) -> Value {
    let blocks = m.get("content").and_then(Value::as_arr).unwrap_or_default();
    let mut text = JStr::default();
    for (k, b) in blocks.iter().filter(|b| is_type(b, "text")).enumerate() {
        if k > 0 {
            text.push_text("\n");
        }
        if let Some(s) = str_of(b.get("text")) {
            text.push(s);
        }
    }
    let has_images = blocks.iter().any(|b| is_type(b, "image"));
    let output = if has_images && target.accepts_images() {
        let mut parts = Vec::new();
        if !text.is_empty() {
            parts.push(input_text(Value::Str(text.without_lone_surrogates())));
        }
        parts.extend(
            blocks
                .iter()
                .filter(|b| is_type(b, "image"))
                .map(input_image),
        );
        Value::Arr(parts)
    } else if text.is_empty() {
        Value::str("(see attached image)")
    } else {
        Value::Str(text.without_lone_surrogates())
    };
    let id = text_of(m.get("toolCallId"));
    let mut r = Obj::new();
    r.set("type", Value::str("function_call_output"));
    r.set(
        "call_id",
        Value::str(id.split('|').next().unwrap_or_default()),
    );
    r.set("output", output);
    Value::Obj(r)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn short_hash_matches_the_reference() {
        // Values of the reference's shortHash.
        assert_eq!(
            short_hash(&format!("msg_{}", "x".repeat(70))),
            "1f43gnm1wcb1pr"
        );
        assert_eq!(id_part("toolu_01ABCdef+/="), "toolu_01ABCdef");
        assert_eq!(id_part(&"a".repeat(70)).len(), 64);
    }
}
