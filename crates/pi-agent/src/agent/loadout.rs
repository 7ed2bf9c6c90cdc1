//! The prompt and tool loadout a session records, as the reference 1.6 does: the first
//! request of a session records a system message holding every prompt section and tool
//! declaration; later runs record only what changed (sections replaced by name, `null`
//! removing one; `toolsAdded` / `toolsRemoved`). A request replays the context's system
//! messages into one leading prompt and sends the other messages after it (1.6's
//! `collapseSystemMessages`, what it does for every model that does not take system
//! messages mid-conversation, the default for all of them).

use super::Message;
use crate::context::{content_text, current_system};
use pi_ai::value::{Obj, Value};

/// A tool as a system message declares it: `{name, description, parameters}`.
pub fn declaration(name: &str, description: &str, parameters: &serde_json::Value) -> Value {
    let mut o = Obj::new();
    o.set("name", Value::str(name));
    o.set("description", Value::str(description));
    let params = serde_json::to_vec(parameters)
        .ok()
        .and_then(|b| Value::parse(&b))
        .unwrap_or_else(|| Value::Obj(Obj::new()));
    o.set("parameters", params);
    Value::Obj(o)
}

/// A declaration reduced to what the model sees, serialized for comparison (1.6's
/// `declarationsEqual`).
fn declared_form(t: &Value) -> Vec<u8> {
    let mut o = Obj::new();
    for k in ["name", "description", "parameters", "constrainedSampling"] {
        if let Some(v) = t.get(k) {
            o.set(k, v.clone());
        }
    }
    Value::Obj(o).to_json()
}

fn name_of(t: &Value) -> String {
    t.get("name")
        .map(|n| Value::js_string(Some(n)).text().into_owned())
        .unwrap_or_default()
}

/// The system message that brings what `messages` replay to (their prompt sections and
/// tools) to `sections` and `tools`, or `None` when nothing differs. Sections that changed
/// or are new carry their text, those no longer wanted `null`; a tool whose declaration
/// changed is removed and added again.
pub fn patch(
    messages: &[Message],
    sections: &[(String, String)],
    tools: &[Value],
    now_ms: i64,
) -> Option<Message> {
    let current = current_system(messages.iter());
    let recorded: Vec<(String, Value)> = match current.as_ref().and_then(|c| c.get("sections")) {
        Some(Value::Obj(o)) => o
            .iter()
            .map(|(k, v)| (k.text().into_owned(), v.clone()))
            .collect(),
        _ => Vec::new(),
    };
    let mut changed = Obj::new();
    for (name, text) in sections {
        let same = recorded
            .iter()
            .any(|(n, v)| n == name && v.as_jstr().is_some_and(|s| s.text() == text.as_str()));
        if !same {
            changed.set(name, Value::str(text));
        }
    }
    for (name, _) in &recorded {
        if !sections.iter().any(|(n, _)| n == name) {
            changed.set(name, Value::Null);
        }
    }
    let before: Vec<Value> = current
        .as_ref()
        .and_then(|c| c.get("toolsAdded"))
        .and_then(Value::as_arr)
        .map(<[Value]>::to_vec)
        .unwrap_or_default();
    let same_tool = |a: &Value, list: &[Value]| {
        list.iter()
            .any(|b| name_of(a) == name_of(b) && declared_form(a) == declared_form(b))
    };
    let added: Vec<Value> = tools
        .iter()
        .filter(|t| !same_tool(t, &before))
        .cloned()
        .collect();
    let removed: Vec<Value> = before
        .iter()
        .filter(|t| !same_tool(t, tools))
        .map(|t| {
            let mut o = Obj::new();
            o.set("name", Value::str(&name_of(t)));
            Value::Obj(o)
        })
        .collect();
    if changed.is_empty() && added.is_empty() && removed.is_empty() {
        return None;
    }
    let mut o = Obj::new();
    o.set("role", Value::str("system"));
    o.set("content", Value::str(""));
    if !changed.is_empty() {
        o.set("sections", Value::Obj(changed));
    }
    if !added.is_empty() {
        o.set("toolsAdded", Value::Arr(added));
    }
    if !removed.is_empty() {
        o.set("toolsRemoved", Value::Arr(removed));
    }
    o.set("timestamp", Value::Num(now_ms as f64));
    Some(Value::Obj(o))
}

/// The system prompt of a request and the messages sent after it: the system messages of
/// `messages` replayed into one text (their prompt text, then their sections), the others
/// in order. A `forced` prompt (a `before_agent_start` hook's) is sent instead of the
/// replayed one, and is not recorded.
pub fn collapse(messages: Vec<Message>, forced: Option<&str>) -> (String, Vec<Message>) {
    let text = match forced {
        Some(f) => f.to_owned(),
        None => current_system(messages.iter())
            .map(|m| prompt_text(&m))
            .unwrap_or_default(),
    };
    let rest = messages
        .into_iter()
        .filter(|m| !m.get("role").is_some_and(|r| r.is_str("system")))
        .collect();
    (text, rest)
}

/// A system message as prompt text: its content, then its sections, blank lines between
/// (1.6's `getSystemMessageText`).
fn prompt_text(m: &Value) -> String {
    let mut parts = vec![content_text(m.get("content"), "\n")];
    if let Some(Value::Obj(s)) = m.get("sections") {
        for (_, v) in s.iter() {
            if let Some(t) = v.as_jstr() {
                parts.push(t.text().into_owned());
            }
        }
    }
    parts.retain(|p| !p.is_empty());
    parts.join("\n\n")
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use super::*;

    fn v(s: &str) -> Value {
        Value::parse(s.as_bytes()).unwrap()
    }

    fn secs(list: &[(&str, &str)]) -> Vec<(String, String)> {
        list.iter()
            .map(|(a, b)| ((*a).to_owned(), (*b).to_owned()))
            .collect()
    }

    #[test]
    fn first_run_records_everything_then_nothing() {
        let tools = [declaration(
            "read",
            "Read",
            &serde_json::json!({"type":"object"}),
        )];
        let s = secs(&[("preamble", "P"), ("cwd", "<cwd>\n/w\n</cwd>")]);
        let first = patch(&[], &s, &tools, 5).unwrap();
        assert_eq!(
            String::from_utf8(first.to_json()).unwrap(),
            r#"{"role":"system","content":"","sections":{"preamble":"P","cwd":"<cwd>\n/w\n</cwd>"},"toolsAdded":[{"name":"read","description":"Read","parameters":{"type":"object"}}],"timestamp":5}"#
        );
        assert!(patch(std::slice::from_ref(&first), &s, &tools, 6).is_none());
    }

    #[test]
    fn changes_only() {
        let old = v(
            r#"{"role":"system","content":"Custom.","sections":{"preamble":"P","skills":"S"},"toolsAdded":[{"name":"read","description":"old","parameters":{}},{"name":"ls","description":"L","parameters":{}}],"timestamp":1}"#,
        );
        let tools = [
            declaration("read", "new", &serde_json::json!({})),
            declaration("ls", "L", &serde_json::json!({})),
        ];
        let p = patch(
            std::slice::from_ref(&old),
            &secs(&[("preamble", "P"), ("cwd", "C")]),
            &tools,
            9,
        )
        .unwrap();
        assert_eq!(
            String::from_utf8(p.to_json()).unwrap(),
            r#"{"role":"system","content":"","sections":{"cwd":"C","skills":null},"toolsAdded":[{"name":"read","description":"new","parameters":{}}],"toolsRemoved":[{"name":"read"}],"timestamp":9}"#
        );
        let (text, rest) = collapse(vec![old, p, v(r#"{"role":"user","content":"hi"}"#)], None);
        assert_eq!(text, "Custom.\n\nP\n\nC");
        assert_eq!(rest.len(), 1);
        let (text, _) = collapse(vec![v(r#"{"role":"user","content":"hi"}"#)], Some("F"));
        assert_eq!(text, "F");
    }
}
