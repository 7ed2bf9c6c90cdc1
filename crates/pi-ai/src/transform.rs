//! The fixes every provider applies to LLM messages before writing its request (upstream's
//! `transformMessages`): images the model cannot read become notes, thinking blocks and
//! signatures of other models are turned into text or dropped, tool-call ids are normalized
//! for the target API, failed and aborted assistant turns are left out, and tool calls that
//! never got a result get a synthetic error result.

use std::collections::{HashMap, HashSet};

use crate::models::Model;
use crate::value::{JStr, Obj, Value};

pub const USER_IMAGE_OMITTED: &str = "(image omitted: model does not support images)";
pub const TOOL_IMAGE_OMITTED: &str = "(tool image omitted: model does not support images)";
pub const NO_RESULT: &str = "No result provided";

fn is_type(b: &Value, t: &str) -> bool {
    b.get("type").is_some_and(|x| x.is_str(t))
}

fn role_is(m: &Value, r: &str) -> bool {
    m.get("role").is_some_and(|x| x.is_str(r))
}

fn text_block(text: &str) -> Value {
    let mut b = Obj::new();
    b.set("type", Value::str("text"));
    b.set("text", Value::str(text));
    Value::Obj(b)
}

fn replace_images(content: &[Value], note: &str) -> Vec<Value> {
    let mut out = Vec::with_capacity(content.len());
    let mut prev_note = false;
    for b in content {
        if is_type(b, "image") {
            if !prev_note {
                out.push(text_block(note));
            }
            prev_note = true;
            continue;
        }
        out.push(b.clone());
        prev_note = b.get("text").is_some_and(|t| t.is_str(note));
    }
    out
}

fn with_content(m: &Value, content: Vec<Value>) -> Value {
    let mut m = m.clone();
    if let Value::Obj(o) = &mut m {
        o.set("content", Value::Arr(content));
    }
    m
}

/// Whether an assistant message comes from the target model (provider, API and id).
pub fn same_model(m: &Value, target: &Model) -> bool {
    let eq = |k: &str, want: &str| m.get(k).is_some_and(|v| v.is_str(want));
    eq("provider", &target.provider) && eq("api", &target.api) && eq("model", &target.id)
}

fn str_of(v: Option<&Value>) -> Option<&JStr> {
    v.and_then(Value::as_jstr)
}

/// Upstream's `transformMessages(messages, model, normalizeToolCallId)`.
pub fn transform(
    messages: &[Value],
    target: &Model,
    normalize_id: &dyn Fn(&str) -> String,
) -> Vec<Value> {
    transform_with_source(messages, target, &|id, _| normalize_id(id))
}

/// [`transform`] with a normalizer that also sees the assistant message the tool call comes
/// from (the Responses API rewrites the ids of other providers' calls differently).
pub fn transform_with_source(
    messages: &[Value],
    target: &Model,
    normalize_id: &dyn Fn(&str, &Value) -> String,
) -> Vec<Value> {
    let images_ok = target.accepts_images();
    let mut id_map: HashMap<String, String> = HashMap::new();
    let mut first: Vec<Value> = Vec::with_capacity(messages.len());
    for m in messages {
        let mut m = m.clone();
        if !images_ok {
            if role_is(&m, "user")
                && let Some(Value::Arr(c)) = m.get("content")
            {
                m = with_content(&m, replace_images(c, USER_IMAGE_OMITTED));
            } else if role_is(&m, "toolResult")
                && let Some(Value::Arr(c)) = m.get("content")
            {
                m = with_content(&m, replace_images(c, TOOL_IMAGE_OMITTED));
            }
        }
        if role_is(&m, "toolResult") {
            if let Some(id) = str_of(m.get("toolCallId")).map(|s| s.text().into_owned())
                && let Some(new) = id_map.get(&id)
                && *new != id
                && let Value::Obj(o) = &mut m
            {
                o.set("toolCallId", Value::str(new));
            }
            first.push(m);
            continue;
        }
        if !role_is(&m, "assistant") {
            first.push(m);
            continue;
        }
        let same = same_model(&m, target);
        let blocks = m.get("content").and_then(Value::as_arr).unwrap_or_default();
        let mut out: Vec<Value> = Vec::with_capacity(blocks.len());
        for b in blocks {
            if is_type(b, "thinking") {
                if b.get("redacted").is_some_and(Value::truthy) {
                    if same {
                        out.push(b.clone());
                    }
                    continue;
                }
                if same && b.get("thinkingSignature").is_some_and(Value::truthy) {
                    out.push(b.clone());
                    continue;
                }
                let thinking = b.get("thinking");
                let blank = match thinking {
                    Some(Value::Str(s)) => s.is_blank(),
                    Some(v) => !v.truthy(),
                    None => true,
                };
                if blank {
                    continue;
                }
                if same {
                    out.push(b.clone());
                } else {
                    let mut t = Obj::new();
                    t.set("type", Value::str("text"));
                    t.set_opt("text", thinking.cloned());
                    out.push(Value::Obj(t));
                }
            } else if is_type(b, "text") {
                if same {
                    out.push(b.clone());
                } else {
                    let mut t = Obj::new();
                    t.set("type", Value::str("text"));
                    t.set_opt("text", b.get("text").cloned());
                    out.push(Value::Obj(t));
                }
            } else if is_type(b, "toolCall") {
                let mut call = b.clone();
                if !same && let Value::Obj(o) = &mut call {
                    if b.get("thoughtSignature").is_some_and(Value::truthy) {
                        o.remove("thoughtSignature");
                    }
                    if let Some(id) = str_of(b.get("id")).map(|s| s.text().into_owned()) {
                        let new = normalize_id(&id, &m);
                        if new != id {
                            id_map.insert(id, new.clone());
                            o.set("id", Value::str(&new));
                        }
                    }
                }
                out.push(call);
            } else {
                out.push(b.clone());
            }
        }
        first.push(with_content(&m, out));
    }
    // Tool-call bookkeeping: a result for every call, failed turns dropped.
    let mut result: Vec<Value> = Vec::with_capacity(first.len());
    let mut pending: Vec<Value> = Vec::new();
    let mut seen: HashSet<String> = HashSet::new();
    let flush = |result: &mut Vec<Value>, pending: &mut Vec<Value>, seen: &mut HashSet<String>| {
        for call in pending.drain(..) {
            let id = str_of(call.get("id")).map(|s| s.text().into_owned());
            if id.as_ref().is_some_and(|id| seen.contains(id)) {
                continue;
            }
            let mut r = Obj::new();
            r.set("role", Value::str("toolResult"));
            r.set_opt("toolCallId", call.get("id").cloned());
            r.set_opt("toolName", call.get("name").cloned());
            r.set("content", Value::Arr(vec![text_block(NO_RESULT)]));
            r.set("isError", Value::Bool(true));
            result.push(Value::Obj(r));
        }
        seen.clear();
    };
    for m in first {
        if role_is(&m, "assistant") {
            flush(&mut result, &mut pending, &mut seen);
            let stop = m.get("stopReason");
            if stop.is_some_and(|s| s.is_str("error") || s.is_str("aborted")) {
                continue;
            }
            let calls: Vec<Value> = m
                .get("content")
                .and_then(Value::as_arr)
                .unwrap_or_default()
                .iter()
                .filter(|b| is_type(b, "toolCall"))
                .cloned()
                .collect();
            if !calls.is_empty() {
                pending = calls;
                seen.clear();
            }
            result.push(m);
        } else if role_is(&m, "toolResult") {
            if let Some(id) = str_of(m.get("toolCallId")) {
                seen.insert(id.text().into_owned());
            }
            result.push(m);
        } else if role_is(&m, "user") {
            flush(&mut result, &mut pending, &mut seen);
            result.push(m);
        } else {
            result.push(m);
        }
    }
    flush(&mut result, &mut pending, &mut seen);
    result
}
