//! The `contents` of a Gemini request (Google Generative AI and Vertex), as the reference's
//! `google-generative-ai` and `google-vertex` providers write them (after
//! [`transform`](crate::transform)), with the key order of the Google SDK's two wire
//! converters (`vertex` selects Vertex's).

use crate::models::Model;
use crate::transform;
use crate::value::{JStr, Obj, Value};

/// Models behind Google's APIs that need the ids of function calls and responses.
pub(super) fn requires_tool_call_id(model_id: &str) -> bool {
    model_id.starts_with("claude-") || model_id.starts_with("gpt-oss-")
}

/// Tool-call ids for those models: characters outside `[A-Za-z0-9_-]` become `_`, at most 64
/// characters.
fn normalize_id(model_id: &str, id: &str) -> String {
    if !requires_tool_call_id(model_id) {
        return id.to_owned();
    }
    crate::providers::openai::messages::sanitize_id(id)
        .chars()
        .take(64)
        .collect()
}

/// The major version of a `gemini-N…` model.
fn gemini_major(model_id: &str) -> Option<u32> {
    let id = model_id.to_lowercase();
    let rest = id.strip_prefix("gemini-")?;
    let rest = rest.strip_prefix("live-").unwrap_or(rest);
    let digits: String = rest.chars().take_while(char::is_ascii_digit).collect();
    digits.parse().ok()
}

/// Whether images of a tool result can go inside the function response (Gemini 3 and later,
/// and models that are not Gemini); older Gemini models get them in a user turn of their own.
fn multimodal_function_response(model_id: &str) -> bool {
    gemini_major(model_id).is_none_or(|v| v >= 3)
}

/// Google takes only base64 thought signatures.
fn valid_signature(s: &JStr) -> bool {
    let t = s.text();
    !t.is_empty() && t.len().is_multiple_of(4) && {
        let body = t.trim_end_matches('=');
        t.len() - body.len() <= 2
            && !body.is_empty()
            && body
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b == b'+' || b == b'/')
    }
}

fn is_type(b: &Value, t: &str) -> bool {
    b.get("type").is_some_and(|x| x.is_str(t))
}

fn role_is(m: &Value, r: &str) -> bool {
    m.get("role").is_some_and(|x| x.is_str(r))
}

fn str_of(v: Option<&Value>) -> Option<&JStr> {
    v.and_then(Value::as_jstr)
}

fn text_part(text: &JStr) -> Value {
    let mut p = Obj::new();
    p.set("text", Value::Str(text.without_lone_surrogates()));
    Value::Obj(p)
}

fn inline_data(b: &Value, vertex: bool) -> Value {
    let mut d = Obj::new();
    if vertex {
        d.set_opt("mimeType", b.get("mimeType").cloned());
        d.set_opt("data", b.get("data").cloned());
    } else {
        d.set_opt("data", b.get("data").cloned());
        d.set_opt("mimeType", b.get("mimeType").cloned());
    }
    let mut p = Obj::new();
    p.set("inlineData", Value::Obj(d));
    Value::Obj(p)
}

fn content(role: &str, parts: Vec<Value>) -> Value {
    let mut c = Obj::new();
    c.set("parts", Value::Arr(parts));
    c.set("role", Value::str(role));
    Value::Obj(c)
}

/// A part with a thought signature added (when there is one to keep).
fn signed(mut part: Obj, signature: Option<&JStr>) -> Value {
    if let Some(s) = signature {
        part.set("thoughtSignature", Value::Str(s.clone()));
    }
    Value::Obj(part)
}

/// How the contents are written for a model.
struct Writer<'a> {
    model: &'a Model,
    /// Vertex's SDK orders some fields differently.
    vertex: bool,
    /// Whether tool calls and results carry their ids.
    with_id: bool,
}

/// The request's `contents`.
pub(super) fn contents(llm: &[Value], model: &Model, vertex: bool) -> Vec<Value> {
    let id = model.id.clone();
    let msgs = transform::transform(llm, model, &|x| normalize_id(&id, x));
    let w = Writer {
        model,
        vertex,
        with_id: requires_tool_call_id(&model.id),
    };
    let mut out: Vec<Value> = Vec::new();
    for m in &msgs {
        if role_is(m, "user") {
            out.extend(w.user(m));
        } else if role_is(m, "assistant") {
            out.extend(w.assistant(m));
        } else if role_is(m, "toolResult") {
            w.tool_result(m, &mut out);
        }
    }
    out
}

impl Writer<'_> {
    /// A user message (none when it has no parts).
    fn user(&self, m: &Value) -> Option<Value> {
        let parts = transform::user_parts(m, text_part, |b| {
            if is_type(b, "text") {
                text_part(&Value::js_string(b.get("text")))
            } else {
                inline_data(b, self.vertex)
            }
        });
        (!parts.is_empty()).then(|| content("user", parts))
    }

    /// An assistant message, as the model's turn (none when it has no parts). Only the same
    /// model's thoughts stay thoughts (others become text), and only its signatures are
    /// sent back.
    fn assistant(&self, m: &Value) -> Option<Value> {
        let eq = |k: &str, want: &str| m.get(k).is_some_and(|v| v.is_str(want));
        let same = eq("provider", &self.model.provider) && eq("model", &self.model.id);
        let keep = |sig: Option<&Value>| -> Option<JStr> {
            let s = str_of(sig)?;
            (same && valid_signature(s)).then(|| s.clone())
        };
        let mut parts: Vec<Value> = Vec::new();
        for b in m.get("content").and_then(Value::as_arr).unwrap_or_default() {
            let text = |k: &str| {
                let t = str_of(b.get(k)).filter(|t| !t.is_blank())?;
                let mut p = Obj::new();
                p.set("text", Value::Str(t.without_lone_surrogates()));
                Some(p)
            };
            if is_type(b, "text") {
                if let Some(p) = text("text") {
                    parts.push(signed(p, keep(b.get("textSignature")).as_ref()));
                }
            } else if is_type(b, "thinking") {
                let Some(mut p) = text("thinking") else {
                    continue;
                };
                if same {
                    p.set("thought", Value::Bool(true));
                    parts.push(signed(p, keep(b.get("thinkingSignature")).as_ref()));
                } else {
                    parts.push(Value::Obj(p));
                }
            } else if is_type(b, "toolCall") {
                let mut p = Obj::new();
                p.set("functionCall", Value::Obj(self.function_call(b)));
                parts.push(signed(p, keep(b.get("thoughtSignature")).as_ref()));
            }
        }
        (!parts.is_empty()).then(|| content("model", parts))
    }

    fn function_call(&self, b: &Value) -> Obj {
        let args = match b.get("arguments") {
            None | Some(Value::Null) => Value::Obj(Obj::new()),
            Some(a) => a.clone(),
        };
        let mut call = Obj::new();
        if self.vertex {
            call.set_opt("name", b.get("name").cloned());
            call.set("args", args);
            if self.with_id {
                call.set_opt("id", b.get("id").cloned());
            }
        } else {
            if self.with_id {
                call.set_opt("id", b.get("id").cloned());
            }
            call.set("args", args);
            call.set_opt("name", b.get("name").cloned());
        }
        call
    }

    /// A tool result, as a function response in a user turn (with the other responses
    /// just before it); its images go in the response (models that take them there) or in
    /// a user turn after it.
    fn tool_result(&self, m: &Value, out: &mut Vec<Value>) {
        let blocks = m.get("content").and_then(Value::as_arr).unwrap_or_default();
        let text = transform::joined_text(blocks);
        let images: Vec<Value> = if self.model.accepts_images() {
            blocks
                .iter()
                .filter(|b| is_type(b, "image"))
                .map(|b| inline_data(b, self.vertex))
                .collect()
        } else {
            Vec::new()
        };
        let has_images = !images.is_empty();
        let nested = multimodal_function_response(&self.model.id);
        let value = if !text.is_empty() {
            Value::Str(text.without_lone_surrogates())
        } else if has_images {
            Value::str("(see attached image)")
        } else {
            Value::str("")
        };
        let mut response = Obj::new();
        let is_error = m.get("isError").is_some_and(Value::truthy);
        response.set(if is_error { "error" } else { "output" }, value);
        let mut fr = Obj::new();
        fr.set_opt("name", m.get("toolName").cloned());
        fr.set("response", Value::Obj(response));
        if has_images && nested {
            fr.set("parts", Value::Arr(images.clone()));
        }
        if self.with_id {
            fr.set_opt("id", m.get("toolCallId").cloned());
        }
        let mut part = Obj::new();
        part.set("functionResponse", Value::Obj(fr));
        add_function_response(out, Value::Obj(part));
        if has_images && !nested {
            let mut parts = vec![text_part(&JStr::new("Tool result image:"))];
            parts.extend(images);
            out.push(content("user", parts));
        }
    }
}

/// Adds a function response to the user turn of function responses just written, or in a
/// user turn of its own.
fn add_function_response(out: &mut Vec<Value>, part: Value) {
    if let Some(Value::Obj(last)) = out.last_mut()
        && last.get("role").is_some_and(|r| r.is_str("user"))
        && let Some(parts) = last.get("parts").and_then(Value::as_arr)
        && parts.iter().any(|p| p.get("functionResponse").is_some())
    {
        let mut parts = parts.to_vec();
        parts.push(part);
        last.set("parts", Value::Arr(parts));
        return;
    }
    out.push(content("user", vec![part]));
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn versions_and_signatures() {
        assert_eq!(gemini_major("gemini-2.5-flash"), Some(2));
        assert_eq!(gemini_major("gemini-live-2.5-flash"), Some(2));
        assert_eq!(gemini_major("gemini-3-pro-preview"), Some(3));
        assert_eq!(gemini_major("gemma-3-27b-it"), None);
        assert!(multimodal_function_response("claude-sonnet-4"));
        assert!(!multimodal_function_response("gemini-2.0-flash"));
        assert!(valid_signature(&JStr::new("c2lnbmF0dXJlLTE=")));
        assert!(!valid_signature(&JStr::new("abc")));
        assert!(!valid_signature(&JStr::new("ab-c")));
        assert!(!valid_signature(&JStr::new("====")));
        assert_eq!(normalize_id("claude-x", "a|b"), "a_b");
        assert_eq!(normalize_id("gemini-2.5-pro", "a|b"), "a|b");
    }
}
