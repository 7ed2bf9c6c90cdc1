//! The `messages` of a Mistral chat request (`mistral-conversations`), as the reference's
//! provider writes them through Mistral's SDK (after [`transform`](crate::transform)).
//!
//! Where this differs from Chat Completions: tool-call ids must be nine letters and digits
//! (other providers' ids are hashed into that form, distinct ids staying distinct), thinking
//! goes back as `thinking` content chunks, tool results carry their tool's name and an
//! `[tool error]` prefix, and the SDK writes `prefix: false` on assistant messages and
//! `index: 0` on their tool calls.

use std::cell::RefCell;
use std::collections::HashMap;

use crate::models::Model;
use crate::providers::responses::input::short_hash;
use crate::transform;
use crate::value::{JStr, Obj, Value};
use pi_base::js;

/// The length of a Mistral tool-call id.
pub(super) const TOOL_CALL_ID_LEN: usize = 9;

/// A Mistral id for a foreign tool-call id (`attempt` > 0 after a collision).
pub(super) fn derive_id(id: &str, attempt: u32) -> String {
    let normalized: String = id.chars().filter(char::is_ascii_alphanumeric).collect();
    if attempt == 0 && normalized.len() == TOOL_CALL_ID_LEN {
        return normalized;
    }
    let base = if normalized.is_empty() {
        id
    } else {
        &normalized
    };
    let seed = if attempt == 0 {
        base.to_owned()
    } else {
        format!("{base}:{attempt}")
    };
    short_hash(&seed)
        .chars()
        .filter(char::is_ascii_alphanumeric)
        .take(TOOL_CALL_ID_LEN)
        .collect()
}

/// Maps foreign ids to Mistral ids for one request, keeping distinct ids distinct.
#[derive(Default)]
struct IdMap {
    ids: HashMap<String, String>,
    owners: HashMap<String, String>,
}

impl IdMap {
    fn get(&mut self, id: &str) -> String {
        if let Some(m) = self.ids.get(id) {
            return m.clone();
        }
        let mut attempt = 0;
        loop {
            let candidate = derive_id(id, attempt);
            match self.owners.get(&candidate) {
                Some(owner) if owner != id => attempt += 1,
                _ => {
                    self.ids.insert(id.to_owned(), candidate.clone());
                    self.owners.insert(candidate.clone(), id.to_owned());
                    return candidate;
                }
            }
        }
    }
}

pub(super) const IMAGE_OMITTED: &str = "(image omitted: model does not support images)";

fn is_type(b: &Value, t: &str) -> bool {
    b.get("type").is_some_and(|x| x.is_str(t))
}

fn role_is(m: &Value, r: &str) -> bool {
    m.get("role").is_some_and(|x| x.is_str(r))
}

/// The text of a string value without lone surrogates (`""` for anything else).
fn clean_text(v: Option<&Value>) -> String {
    match v {
        Some(Value::Str(s)) => s.without_lone_surrogates().text().into_owned(),
        _ => String::new(),
    }
}

fn part(t: &str, key: &str, value: Value) -> Value {
    let mut p = Obj::new();
    p.set("type", Value::str(t));
    p.set(key, value);
    Value::Obj(p)
}

fn image_part(b: &Value) -> Value {
    let mut url = JStr::new("data:");
    url.push(&Value::js_string(b.get("mimeType")));
    url.push_text(";base64,");
    url.push(&Value::js_string(b.get("data")));
    part("image_url", "image_url", Value::Str(url))
}

fn tool_result_text(text: &str, has_images: bool, images_ok: bool, error: bool) -> String {
    let trimmed = js::trim(text);
    let prefix = if error { "[tool error] " } else { "" };
    if !trimmed.is_empty() {
        let suffix = if has_images && !images_ok {
            "\n[tool image omitted: model does not support images]"
        } else {
            ""
        };
        return format!("{prefix}{trimmed}{suffix}");
    }
    if has_images {
        let body = if images_ok {
            "(see attached image)"
        } else {
            IMAGE_OMITTED
        };
        return format!("{prefix}{body}");
    }
    format!("{prefix}(no tool output)")
}

/// The request's `messages`: the system prompt first (if any), then the conversation.
pub(super) fn messages(llm: &[Value], target: &Model, system_prompt: Option<&str>) -> Vec<Value> {
    let ids = RefCell::new(IdMap::default());
    let norm = |id: &str| ids.borrow_mut().get(id);
    let msgs = transform::transform(llm, target, &norm);
    let images_ok = target.accepts_images();
    let mut out: Vec<Value> = Vec::new();
    if let Some(sp) = system_prompt.filter(|s| !s.is_empty()) {
        let mut m = Obj::new();
        m.set("role", Value::str("system"));
        m.set(
            "content",
            Value::Str(JStr::new(sp).without_lone_surrogates()),
        );
        out.push(Value::Obj(m));
    }
    for m in &msgs {
        if role_is(m, "user") {
            out.extend(user(m, images_ok));
        } else if role_is(m, "assistant") {
            out.extend(assistant(m));
        } else {
            out.push(tool_result(m, images_ok));
        }
    }
    out
}

/// A user message; images go only to models that read them (none when nothing is left).
fn user(m: &Value, images_ok: bool) -> Option<Value> {
    let mut u = Obj::new();
    u.set("role", Value::str("user"));
    match m.get("content") {
        Some(Value::Str(s)) => u.set("content", Value::Str(s.without_lone_surrogates())),
        other => {
            let blocks = other.and_then(Value::as_arr).unwrap_or_default();
            let had_images = blocks.iter().any(|b| is_type(b, "image"));
            let parts: Vec<Value> = blocks
                .iter()
                .filter(|b| is_type(b, "text") || images_ok)
                .map(|b| {
                    if is_type(b, "text") {
                        part("text", "text", Value::str(&clean_text(b.get("text"))))
                    } else {
                        image_part(b)
                    }
                })
                .collect();
            if !parts.is_empty() {
                u.set("content", Value::Arr(parts));
            } else if had_images && !images_ok {
                u.set("content", Value::str(IMAGE_OMITTED));
            } else {
                return None;
            }
        }
    }
    Some(Value::Obj(u))
}

/// An assistant message: text and thinking chunks, and tool calls (none when it has
/// neither).
fn assistant(m: &Value) -> Option<Value> {
    let mut parts: Vec<Value> = Vec::new();
    let mut calls: Vec<Value> = Vec::new();
    for b in m.get("content").and_then(Value::as_arr).unwrap_or_default() {
        if is_type(b, "text") {
            let t = clean_text(b.get("text"));
            if !js::trim(&t).is_empty() {
                parts.push(part("text", "text", Value::str(&t)));
            }
        } else if is_type(b, "thinking") {
            let t = clean_text(b.get("thinking"));
            if !js::trim(&t).is_empty() {
                let inner = part("text", "text", Value::str(&t));
                parts.push(part("thinking", "thinking", Value::Arr(vec![inner])));
            }
        } else {
            calls.push(tool_call(b));
        }
    }
    if parts.is_empty() && calls.is_empty() {
        return None;
    }
    let mut a = Obj::new();
    a.set("role", Value::str("assistant"));
    if !parts.is_empty() {
        a.set("content", Value::Arr(parts));
    }
    if !calls.is_empty() {
        a.set("tool_calls", Value::Arr(calls));
    }
    a.set("prefix", Value::Bool(false));
    Some(Value::Obj(a))
}

fn tool_call(b: &Value) -> Value {
    let args = match b.get("arguments") {
        Some(a) if a.truthy() => a.to_json(),
        _ => b"{}".to_vec(),
    };
    let mut f = Obj::new();
    f.set_opt("name", b.get("name").cloned());
    f.set(
        "arguments",
        Value::Str(JStr::new(&String::from_utf8_lossy(&args))),
    );
    let mut c = Obj::new();
    c.set_opt("id", b.get("id").cloned());
    c.set("type", Value::str("function"));
    c.set("function", Value::Obj(f));
    c.set("index", Value::Num(0.0));
    Value::Obj(c)
}

/// A tool result: its text (marked when it is an error), and its images for models that
/// read them.
fn tool_result(m: &Value, images_ok: bool) -> Value {
    let blocks = m.get("content").and_then(Value::as_arr).unwrap_or_default();
    let texts: Vec<String> = blocks
        .iter()
        .filter(|b| is_type(b, "text"))
        .map(|b| clean_text(b.get("text")))
        .collect();
    let has_images = blocks.iter().any(|b| is_type(b, "image"));
    let error = m.get("isError").is_some_and(Value::truthy);
    let text = tool_result_text(&texts.join("\n"), has_images, images_ok, error);
    let mut content = vec![part("text", "text", Value::str(&text))];
    if images_ok {
        content.extend(
            blocks
                .iter()
                .filter(|b| is_type(b, "image"))
                .map(image_part),
        );
    }
    let mut r = Obj::new();
    r.set("role", Value::str("tool"));
    r.set("content", Value::Arr(content));
    r.set_opt("tool_call_id", m.get("toolCallId").cloned());
    r.set_opt("name", m.get("toolName").cloned());
    Value::Obj(r)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tool_call_ids() {
        assert_eq!(derive_id("Ab12Cd34E", 0), "Ab12Cd34E");
        assert_eq!(derive_id("toolu_01ABCdef+/=", 0), "9o5szclp9");
        let mut m = IdMap::default();
        let a = m.get("call_1|fc_1");
        assert_eq!(a.len(), 9);
        assert_eq!(m.get("call_1|fc_1"), a);
        assert_ne!(m.get("call_2|fc_2"), a);
    }
}
