//! The fixes every provider applies to LLM messages before writing its request (upstream's
//! `transformMessages`): images the model cannot read become notes, thinking blocks and
//! signatures of other models are turned into text or dropped, tool-call ids are normalized
//! for the target API, failed and aborted assistant turns are left out, and tool calls that
//! never got a result get a synthetic error result.

use std::collections::{HashMap, HashSet};

use crate::models::Model;
use crate::value::{JStr, Obj, Value};

pub(crate) const USER_IMAGE_OMITTED: &str = "(image omitted: model does not support images)";
pub(crate) const TOOL_IMAGE_OMITTED: &str = "(tool image omitted: model does not support images)";
pub(crate) const NO_RESULT: &str = "No result provided";

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

/// The texts of a message's text blocks joined with newlines, as `Array.prototype.join`
/// writes them (nothing for a missing text).
pub(crate) fn joined_text(blocks: &[Value]) -> JStr {
    let mut text = JStr::default();
    for (k, b) in blocks.iter().filter(|b| is_type(b, "text")).enumerate() {
        if k > 0 {
            text.push_text("\n");
        }
        if let Some(v) = b.get("text").filter(|v| !matches!(v, Value::Null)) {
            text.push(&Value::js_string(Some(v)));
        }
    }
    text
}

/// The content of a user message as parts: its text as one part (`text`), or each of its
/// blocks (`block`).
pub(crate) fn user_parts(
    m: &Value,
    text: impl Fn(&JStr) -> Value,
    block: impl Fn(&Value) -> Value,
) -> Vec<Value> {
    match m.get("content") {
        Some(Value::Str(s)) => vec![text(s)],
        other => other
            .and_then(Value::as_arr)
            .unwrap_or_default()
            .iter()
            .map(block)
            .collect(),
    }
}

/// Whether an assistant message comes from the target model (provider, API and id).
pub(crate) fn same_model(m: &Value, target: &Model) -> bool {
    let eq = |k: &str, want: &str| m.get(k).is_some_and(|v| v.is_str(want));
    eq("provider", &target.provider) && eq("api", &target.api) && eq("model", &target.id)
}

fn str_of(v: Option<&Value>) -> Option<&JStr> {
    v.and_then(Value::as_jstr)
}

/// Upstream's `transformMessages(messages, model, normalizeToolCallId)`.
pub(crate) fn transform(
    messages: &[Value],
    target: &Model,
    normalize_id: &dyn Fn(&str) -> String,
) -> Vec<Value> {
    transform_with_source(messages, target, &|id, _| normalize_id(id))
}

/// [`transform`] with a normalizer that also sees the assistant message the tool call comes
/// from (the Responses API rewrites the ids of other providers' calls differently).
pub(crate) fn transform_with_source(
    messages: &[Value],
    target: &Model,
    normalize_id: &dyn Fn(&str, &Value) -> String,
) -> Vec<Value> {
    let images_ok = target.accepts_images();
    // Tool-call ids that were rewritten: old → new (their results follow them).
    let mut id_map: HashMap<String, String> = HashMap::new();
    let mut fixed: Vec<Value> = Vec::with_capacity(messages.len());
    for m in messages {
        let mut m = m.clone();
        if !images_ok {
            m = without_images(m);
        }
        if role_is(&m, "toolResult") {
            if let Some(id) = str_of(m.get("toolCallId")).map(|s| s.text().into_owned())
                && let Some(new) = id_map.get(&id)
                && *new != id
                && let Value::Obj(o) = &mut m
            {
                o.set("toolCallId", Value::str(new));
            }
        } else if role_is(&m, "assistant") {
            let content = assistant_content(&m, target, normalize_id, &mut id_map);
            m = with_content(&m, content);
        }
        fixed.push(m);
    }
    with_every_result(fixed)
}

/// A user message or tool result with its images replaced by a note.
fn without_images(m: Value) -> Value {
    let note = if role_is(&m, "user") {
        USER_IMAGE_OMITTED
    } else if role_is(&m, "toolResult") {
        TOOL_IMAGE_OMITTED
    } else {
        return m;
    };
    match m.get("content") {
        Some(Value::Arr(c)) => with_content(&m, replace_images(c, note)),
        _ => m,
    }
}

/// The blocks of an assistant message as the target takes them: another model's thinking
/// becomes text (or goes, when blank or redacted), its texts lose their signatures, its
/// tool calls get ids the target accepts (recorded in `id_map`) and lose their thought
/// signatures.
fn assistant_content(
    m: &Value,
    target: &Model,
    normalize_id: &dyn Fn(&str, &Value) -> String,
    id_map: &mut HashMap<String, String>,
) -> Vec<Value> {
    let same = same_model(m, target);
    let blocks = m.get("content").and_then(Value::as_arr).unwrap_or_default();
    let mut out: Vec<Value> = Vec::with_capacity(blocks.len());
    for b in blocks {
        if is_type(b, "thinking") {
            out.extend(thinking_block(b, same));
        } else if is_type(b, "text") && !same {
            let mut t = Obj::new();
            t.set("type", Value::str("text"));
            t.set_opt("text", b.get("text").cloned());
            out.push(Value::Obj(t));
        } else if is_type(b, "toolCall") && !same {
            let mut call = b.clone();
            if let Value::Obj(o) = &mut call {
                if b.get("thoughtSignature").is_some_and(Value::truthy) {
                    o.remove("thoughtSignature");
                }
                if let Some(id) = str_of(b.get("id")).map(|s| s.text().into_owned()) {
                    let new = normalize_id(&id, m);
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
    out
}

/// A thinking block as the target takes it: the same model's as it is (when signed or not
/// blank), another model's text as a text block; none when blank or another model's
/// redacted thinking.
fn thinking_block(b: &Value, same: bool) -> Option<Value> {
    if b.get("redacted").is_some_and(Value::truthy) {
        return same.then(|| b.clone());
    }
    if same && b.get("thinkingSignature").is_some_and(Value::truthy) {
        return Some(b.clone());
    }
    let thinking = b.get("thinking");
    let blank = match thinking {
        Some(Value::Str(s)) => s.is_blank(),
        Some(v) => !v.truthy(),
        None => true,
    };
    if blank {
        return None;
    }
    if same {
        return Some(b.clone());
    }
    let mut t = Obj::new();
    t.set("type", Value::str("text"));
    t.set_opt("text", thinking.cloned());
    Some(Value::Obj(t))
}

/// Tool calls of the last assistant message, and the results seen for them.
#[derive(Default)]
struct Pending {
    calls: Vec<Value>,
    seen: HashSet<String>,
}

impl Pending {
    /// An error result for each call that got none.
    fn flush(&mut self, result: &mut Vec<Value>) {
        for call in self.calls.drain(..) {
            let id = str_of(call.get("id")).map(|s| s.text().into_owned());
            if id.as_ref().is_some_and(|id| self.seen.contains(id)) {
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
        self.seen.clear();
    }
}

/// Tool-call bookkeeping: a result for every call (before the next assistant or user
/// message), failed and aborted turns dropped.
fn with_every_result(messages: Vec<Value>) -> Vec<Value> {
    let mut result: Vec<Value> = Vec::with_capacity(messages.len());
    let mut pending = Pending::default();
    for m in messages {
        if role_is(&m, "assistant") {
            pending.flush(&mut result);
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
                pending.calls = calls;
                pending.seen.clear();
            }
        } else if role_is(&m, "toolResult") {
            if let Some(id) = str_of(m.get("toolCallId")) {
                pending.seen.insert(id.text().into_owned());
            }
        } else if role_is(&m, "user") {
            pending.flush(&mut result);
        }
        result.push(m);
    }
    pending.flush(&mut result);
    result
}
