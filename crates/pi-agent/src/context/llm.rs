//! Agent messages → LLM messages (upstream's `convertToLlm`, and the `images.blockImages`
//! filter the coding agent wraps around it).
//!
//! The wrapper texts are data the model reads and are the reference's, verbatim.

use pi_ai::value::{JStr, Obj, Value};

pub(crate) const COMPACTION_SUMMARY_PREFIX: &str = "The conversation history before this point was compacted into the following summary:\n\n<summary>\n";
pub(crate) const COMPACTION_SUMMARY_SUFFIX: &str = "\n</summary>";
pub(crate) const BRANCH_SUMMARY_PREFIX: &str =
    "The following is a summary of a branch that this conversation came back from:\n\n<summary>\n";
pub(crate) const BRANCH_SUMMARY_SUFFIX: &str = "</summary>";
pub(crate) const IMAGES_BLOCKED: &str = "Image reading is disabled.";

/// The text a user shell command (`!cmd`) is shown to the model as.
pub(crate) fn bash_text(m: &Value) -> JStr {
    let mut t = JStr::new("Ran `");
    t.push(&Value::js_string(m.get("command")));
    t.push_text("`\n");
    match m.get("output").filter(|o| o.truthy()) {
        Some(out) => {
            t.push_text("```\n");
            t.push(&Value::js_string(Some(out)));
            t.push_text("\n```");
        }
        None => t.push_text("(no output)"),
    }
    if m.get("cancelled").is_some_and(Value::truthy) {
        t.push_text("\n\n(command cancelled)");
    } else if let Some(code) = m.get("exitCode").filter(|c| !matches!(c, Value::Null))
        && !matches!(code, Value::Num(n) if *n == 0.0)
    {
        t.push_text("\n\nCommand exited with code ");
        t.push(&Value::js_string(Some(code)));
    }
    if m.get("truncated").is_some_and(Value::truthy)
        && let Some(path) = m.get("fullOutputPath").filter(|p| p.truthy())
    {
        t.push_text("\n\n[Output truncated. Full output: ");
        t.push(&Value::js_string(Some(path)));
        t.push_text("]");
    }
    t
}

fn text_block(text: JStr) -> Value {
    let mut b = Obj::new();
    b.set("type", Value::str("text"));
    b.set("text", Value::Str(text));
    Value::Obj(b)
}

fn user(content: Option<Value>, timestamp: Option<&Value>) -> Value {
    let mut m = Obj::new();
    m.set("role", Value::str("user"));
    m.set_opt("content", content);
    m.set_opt("timestamp", timestamp.cloned());
    Value::Obj(m)
}

/// A user message of one text block.
fn user_text(text: JStr, timestamp: Option<&Value>) -> Value {
    user(Some(Value::Arr(vec![text_block(text)])), timestamp)
}

fn wrapped(prefix: &str, body: Option<&Value>, suffix: &str) -> JStr {
    let mut t = JStr::new(prefix);
    t.push(&Value::js_string(body));
    t.push_text(suffix);
    t
}

/// Converts one agent message; `None` when it is not sent.
pub fn convert_one(m: Value) -> Option<Value> {
    let role = m.get("role")?.as_jstr()?.text().into_owned();
    let ts = m.get("timestamp");
    match role.as_str() {
        "bashExecution" => {
            if m.get("excludeFromContext").is_some_and(Value::truthy) {
                return None;
            }
            Some(user_text(bash_text(&m), ts))
        }
        "custom" => {
            let content = match m.get("content") {
                Some(Value::Str(s)) => Some(Value::Arr(vec![text_block(s.clone())])),
                other => other.cloned(),
            };
            Some(user(content, ts))
        }
        "branchSummary" | "compactionSummary" => {
            let (prefix, suffix) = if role == "branchSummary" {
                (BRANCH_SUMMARY_PREFIX, BRANCH_SUMMARY_SUFFIX)
            } else {
                (COMPACTION_SUMMARY_PREFIX, COMPACTION_SUMMARY_SUFFIX)
            };
            Some(user_text(wrapped(prefix, m.get("summary"), suffix), ts))
        }
        // System messages (reference 1.6) carry the prompt and the tools; they stay in the
        // list, and each provider decides how to send them.
        "system" | "user" | "assistant" | "toolResult" => Some(m),
        _ => None,
    }
}

/// Upstream's `convertToLlm`, then, with `block`, every image in a user message or tool
/// result replaced by a note (consecutive notes collapsed into one).
pub fn convert(messages: &[Value], block: bool) -> Vec<Value> {
    messages
        .iter()
        .cloned()
        .filter_map(convert_one)
        .map(|m| block_images(m, block))
        .collect()
}

/// The `images.blockImages` filter on one converted message (a no-op unless `block`).
pub fn block_images(mut m: Value, block: bool) -> Value {
    if block {
        block_images_in(&mut m);
    }
    m
}

fn is_type(b: &Value, t: &str) -> bool {
    b.get("type").is_some_and(|x| x.is_str(t))
}

fn is_note(b: &Value) -> bool {
    is_type(b, "text") && b.get("text").is_some_and(|t| t.is_str(IMAGES_BLOCKED))
}

fn block_images_in(m: &mut Value) {
    let role_ok = m
        .get("role")
        .is_some_and(|r| r.is_str("user") || r.is_str("toolResult"));
    let Value::Obj(o) = m else { return };
    if !role_ok {
        return;
    }
    let Some(Value::Arr(content)) = o.get("content") else {
        return;
    };
    if !content.iter().any(|c| is_type(c, "image")) {
        return;
    }
    let mapped: Vec<Value> = content
        .iter()
        .map(|c| {
            if is_type(c, "image") {
                text_block(JStr::new(IMAGES_BLOCKED))
            } else {
                c.clone()
            }
        })
        .collect();
    let kept: Vec<Value> = mapped
        .iter()
        .enumerate()
        .filter(|(i, c)| !(is_note(c) && *i > 0 && is_note(&mapped[i - 1])))
        .map(|(_, c)| c.clone())
        .collect();
    o.set("content", Value::Arr(kept));
}

#[cfg(test)]
mod tests {
    use super::*;

    fn v(s: &str) -> Value {
        Value::parse(s.as_bytes()).unwrap()
    }

    fn text_of(m: &Value) -> String {
        m.get("content").unwrap().as_arr().unwrap()[0]
            .get("text")
            .unwrap()
            .as_jstr()
            .unwrap()
            .text()
            .into_owned()
    }

    #[test]
    fn bash_execution_text() {
        let m = v(
            r#"{"role":"bashExecution","command":"ls","output":"a\nb","exitCode":2,"cancelled":false,"truncated":true,"fullOutputPath":"/tmp/o","timestamp":1}"#,
        );
        assert_eq!(
            text_of(&convert_one(m).unwrap()),
            "Ran `ls`\n```\na\nb\n```\n\nCommand exited with code 2\n\n[Output truncated. Full output: /tmp/o]"
        );
        let m = v(
            r#"{"role":"bashExecution","command":"x","output":"","exitCode":null,"cancelled":true}"#,
        );
        assert_eq!(
            text_of(&convert_one(m).unwrap()),
            "Ran `x`\n(no output)\n\n(command cancelled)"
        );
        let m =
            v(r#"{"role":"bashExecution","command":"x","output":"","excludeFromContext":true}"#);
        assert!(convert_one(m).is_none());
    }

    #[test]
    fn summaries_are_wrapped() {
        let m = v(r#"{"role":"branchSummary","summary":"S","fromId":"a","timestamp":5}"#);
        let u = convert_one(m).unwrap();
        assert_eq!(text_of(&u), format!("{BRANCH_SUMMARY_PREFIX}S</summary>"));
        assert_eq!(
            String::from_utf8(u.to_json()).unwrap(),
            format!(
                r#"{{"role":"user","content":[{{"type":"text","text":{}}}],"timestamp":5}}"#,
                serde_json::to_string(&format!("{BRANCH_SUMMARY_PREFIX}S</summary>")).unwrap()
            )
        );
    }

    #[test]
    fn blocked_images_collapse() {
        let m = v(
            r#"{"role":"user","content":[{"type":"image","data":"a"},{"type":"image","data":"b"},{"type":"text","text":"x"},{"type":"image","data":"c"}]}"#,
        );
        let out = convert(&[m], true);
        assert_eq!(
            String::from_utf8(out[0].to_json()).unwrap(),
            r#"{"role":"user","content":[{"type":"text","text":"Image reading is disabled."},{"type":"text","text":"x"},{"type":"text","text":"Image reading is disabled."}]}"#
        );
    }
}
