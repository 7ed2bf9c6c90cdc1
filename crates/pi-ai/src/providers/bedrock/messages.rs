//! The `messages` and `system` blocks of an Amazon Bedrock Converse request, as the
//! reference's `bedrock-converse-stream` provider writes them (after
//! [`transform`](crate::transform)), with the key order the AWS SDK sends.

use base64::Engine;

use crate::models::Model;
use crate::transform;
use crate::value::{JStr, Obj, Value};

/// An image Bedrock cannot take (it knows JPEG, PNG, GIF and WebP).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("Unknown image type: {0}")]
pub(super) struct ImageTypeError(pub String);

/// Tool-call ids from other models: characters outside `[A-Za-z0-9_-]` become `_`, at most
/// 64 characters.
pub(super) fn normalize_id(id: &str) -> String {
    crate::providers::openai::messages::sanitize_id(id)
        .chars()
        .take(64)
        .collect()
}

/// The model's id and name, lower-cased, as they are and with `[\s_.:]+` runs made `-`
/// (application inference profiles only show the model in the name).
pub(super) fn match_candidates(model: &Model, name: Option<&str>) -> Vec<String> {
    let mut out = Vec::new();
    for v in std::iter::once(model.id.as_str()).chain(name) {
        let lower = v.to_lowercase();
        let mut dashed = String::with_capacity(lower.len());
        let mut in_run = false;
        for c in lower.chars() {
            if c.is_whitespace() || matches!(c, '_' | '.' | ':') {
                if !in_run {
                    dashed.push('-');
                }
                in_run = true;
            } else {
                dashed.push(c);
                in_run = false;
            }
        }
        out.push(lower);
        out.push(dashed);
    }
    out
}

/// An Anthropic Claude model on Bedrock (by id, or by name for inference profiles).
pub(super) fn is_claude(model: &Model, name: Option<&str>) -> bool {
    let id = model.id.to_lowercase();
    let name = name.unwrap_or_default().to_lowercase();
    id.contains("anthropic.claude")
        || id.contains("anthropic/claude")
        || name.contains("anthropic.claude")
        || name.contains("anthropic/claude")
        || name.contains("claude")
}

/// Models that take cache points: Claude 4.x, 3.7 Sonnet and 3.5 Haiku (others only with
/// `AWS_BEDROCK_FORCE_CACHE=1`, for inference profiles whose names hide the model).
pub(super) fn caches_prompts(model: &Model, name: Option<&str>) -> bool {
    let c = match_candidates(model, name);
    if !c.iter().any(|s| s.contains("claude")) {
        return std::env::var("AWS_BEDROCK_FORCE_CACHE").is_ok_and(|v| v == "1");
    }
    c.iter().any(|s| {
        s.contains("-4-") || s.contains("claude-3-7-sonnet") || s.contains("claude-3-5-haiku")
    })
}

fn cache_point(retention: &str) -> Value {
    let mut cp = Obj::new();
    cp.set("type", Value::str("default"));
    if retention == "long" {
        cp.set("ttl", Value::str("1h"));
    }
    let mut o = Obj::new();
    o.set("cachePoint", Value::Obj(cp));
    Value::Obj(o)
}

fn is_type(b: &Value, t: &str) -> bool {
    b.get("type").is_some_and(|x| x.is_str(t))
}

fn role_is(m: &Value, r: &str) -> bool {
    m.get("role").is_some_and(|x| x.is_str(r))
}

fn text_of(v: Option<&Value>) -> JStr {
    match v {
        Some(Value::Str(s)) => s.without_lone_surrogates(),
        v => Value::js_string(v),
    }
}

fn text(t: JStr) -> Value {
    let mut o = Obj::new();
    o.set("text", Value::Str(t));
    Value::Obj(o)
}

fn image(b: &Value) -> Result<Value, ImageTypeError> {
    let mime = b
        .get("mimeType")
        .and_then(Value::as_jstr)
        .map(|s| s.text().into_owned())
        .unwrap_or_default();
    let format = match mime.as_str() {
        "image/jpeg" | "image/jpg" => "jpeg",
        "image/png" => "png",
        "image/gif" => "gif",
        "image/webp" => "webp",
        _ => return Err(ImageTypeError(mime)),
    };
    // The SDK sends the bytes, written again in standard base64.
    let data = b
        .get("data")
        .and_then(Value::as_jstr)
        .map(|s| s.text().into_owned())
        .unwrap_or_default();
    let compact: String = data.chars().filter(|c| !c.is_ascii_whitespace()).collect();
    let engine = base64::engine::GeneralPurpose::new(
        &base64::alphabet::STANDARD,
        base64::engine::GeneralPurposeConfig::new()
            .with_decode_padding_mode(base64::engine::DecodePaddingMode::Indifferent)
            .with_decode_allow_trailing_bits(true),
    );
    let bytes = match engine.decode(compact.as_bytes()) {
        Ok(b) => base64::engine::general_purpose::STANDARD.encode(b),
        Err(_) => data,
    };
    let mut src = Obj::new();
    src.set("bytes", Value::str(&bytes));
    let mut img = Obj::new();
    img.set("format", Value::str(format));
    img.set("source", Value::Obj(src));
    let mut o = Obj::new();
    o.set("image", Value::Obj(img));
    Ok(Value::Obj(o))
}

fn message(role: &str, content: Vec<Value>) -> Value {
    let mut m = Obj::new();
    m.set("role", Value::str(role));
    m.set("content", Value::Arr(content));
    Value::Obj(m)
}

fn tool_result(t: &Value) -> Result<Value, ImageTypeError> {
    let mut content = Vec::new();
    for c in t.get("content").and_then(Value::as_arr).unwrap_or_default() {
        content.push(if is_type(c, "image") {
            image(c)?
        } else {
            text(text_of(c.get("text")))
        });
    }
    let mut r = Obj::new();
    r.set_opt("toolUseId", t.get("toolCallId").cloned());
    r.set("content", Value::Arr(content));
    let error = t.get("isError").is_some_and(Value::truthy);
    r.set(
        "status",
        Value::str(if error { "error" } else { "success" }),
    );
    let mut o = Obj::new();
    o.set("toolResult", Value::Obj(r));
    Ok(Value::Obj(o))
}

/// The request's `system` blocks (none without a system prompt).
pub(super) fn system(
    system_prompt: Option<&str>,
    model: &Model,
    name: Option<&str>,
    retention: &str,
) -> Option<Vec<Value>> {
    let sp = system_prompt.filter(|s| !s.is_empty())?;
    let mut out = vec![text(JStr::new(sp).without_lone_surrogates())];
    if retention != "none" && caches_prompts(model, name) {
        out.push(cache_point(retention));
    }
    Some(out)
}

/// The request's `messages`.
pub(super) fn messages(
    llm: &[Value],
    model: &Model,
    name: Option<&str>,
    retention: &str,
) -> Result<Vec<Value>, ImageTypeError> {
    let msgs = transform::transform(llm, model, &normalize_id);
    let signatures = is_claude(model, name);
    let mut out: Vec<Value> = Vec::new();
    let mut i = 0;
    while i < msgs.len() {
        let m = &msgs[i];
        if role_is(m, "user") {
            out.push(message("user", user_content(m)?));
        } else if role_is(m, "assistant") {
            let content: Vec<Value> = m
                .get("content")
                .and_then(Value::as_arr)
                .unwrap_or_default()
                .iter()
                .filter_map(|c| assistant_block(c, signatures))
                .collect();
            if !content.is_empty() {
                out.push(message("assistant", content));
            }
        } else if role_is(m, "toolResult") {
            // A run of tool results goes in one user message.
            let mut results = Vec::new();
            while i < msgs.len() && role_is(&msgs[i], "toolResult") {
                results.push(tool_result(&msgs[i])?);
                i += 1;
            }
            out.push(message("user", results));
            continue;
        }
        i += 1;
    }
    if retention != "none" && caches_prompts(model, name) {
        add_cache_point(&mut out, retention);
    }
    Ok(out)
}

fn user_content(m: &Value) -> Result<Vec<Value>, ImageTypeError> {
    let blocks = match m.get("content") {
        Some(Value::Str(s)) => return Ok(vec![text(s.without_lone_surrogates())]),
        other => other.and_then(Value::as_arr).unwrap_or_default(),
    };
    let mut v = Vec::new();
    for c in blocks {
        if is_type(c, "text") {
            v.push(text(text_of(c.get("text"))));
        } else if is_type(c, "image") {
            v.push(image(c)?);
        }
    }
    Ok(v)
}

/// A block of an assistant message (none for a blank text or thinking). A Claude model's
/// thinking goes back with its signature, or as text without one.
fn assistant_block(c: &Value, signatures: bool) -> Option<Value> {
    if is_type(c, "text") {
        let t = text_of(c.get("text"));
        return (!t.is_blank()).then(|| text(t));
    }
    if is_type(c, "toolCall") {
        let mut u = Obj::new();
        u.set_opt("toolUseId", c.get("id").cloned());
        u.set_opt("name", c.get("name").cloned());
        u.set_opt("input", c.get("arguments").cloned());
        let mut o = Obj::new();
        o.set("toolUse", Value::Obj(u));
        return Some(Value::Obj(o));
    }
    if !is_type(c, "thinking") {
        return None;
    }
    let t = text_of(c.get("thinking"));
    if t.is_blank() {
        return None;
    }
    let sig = c
        .get("thinkingSignature")
        .and_then(Value::as_jstr)
        .filter(|s| !s.is_blank());
    if signatures && sig.is_none() {
        // Bedrock refuses a Claude reasoning block without its signature.
        return Some(text(t));
    }
    let mut rt = Obj::new();
    rt.set("text", Value::Str(t));
    if signatures && let Some(s) = sig {
        rt.set("signature", Value::Str(s.clone()));
    }
    let mut rc = Obj::new();
    rc.set("reasoningText", Value::Obj(rt));
    let mut o = Obj::new();
    o.set("reasoningContent", Value::Obj(rc));
    Some(Value::Obj(o))
}

/// Ends the conversation with a cache point, when it ends with the user's message.
fn add_cache_point(out: &mut [Value], retention: &str) {
    if let Some(Value::Obj(last)) = out.last_mut()
        && last.get("role").is_some_and(|r| r.is_str("user"))
    {
        let mut content = last
            .get("content")
            .and_then(Value::as_arr)
            .unwrap_or_default()
            .to_vec();
        content.push(cache_point(retention));
        last.set("content", Value::Arr(content));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::models::Registry;

    #[test]
    fn model_families() {
        let r = Registry::builtin();
        let m = |id: &str| r.find("amazon-bedrock", id).unwrap().clone();
        let sonnet = m("us.anthropic.claude-sonnet-4-5-20250929-v1:0");
        assert!(is_claude(&sonnet, None));
        assert!(caches_prompts(&sonnet, None));
        let nova = m("amazon.nova-pro-v1:0");
        assert!(!is_claude(&nova, None));
        assert!(!caches_prompts(&nova, Some("Nova Pro")));
        // Claude 3 Haiku (no longer in the catalogue): no prompt caching.
        let mut haiku3 = sonnet.clone();
        haiku3.id = "anthropic.claude-3-haiku-20240307-v1:0".into();
        assert!(!caches_prompts(&haiku3, None));
        // An application inference profile names the model only in its name.
        let mut profile = nova.clone();
        profile.id = "arn:aws:bedrock:us-east-1:123:application-inference-profile/x".into();
        assert!(is_claude(&profile, Some("Claude Sonnet 4.5")));
        assert!(caches_prompts(&profile, Some("claude sonnet 4 5")));
        assert_eq!(
            match_candidates(&profile, Some("A_b  c.d:e")),
            vec![
                profile.id.clone(),
                "arn-aws-bedrock-us-east-1-123-application-inference-profile/x".to_owned(),
                "a_b  c.d:e".to_owned(),
                "a-b-c-d-e".to_owned()
            ]
        );
        assert_eq!(normalize_id("call_1|fc+/="), "call_1_fc___");
    }
}
