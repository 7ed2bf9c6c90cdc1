//! `/tree`: the session's tree (the server's `get_tree`), one line per entry, the current
//! leaf marked with `*`; a branch point indents its children.

use serde_json::Value as Json;

use crate::output::escape;

/// The lines of the tree, fitted to `width` columns.
pub(super) fn tree_lines(roots: &Json, leaf: &str, width: usize) -> Vec<String> {
    let mut out = Vec::new();
    let empty = Vec::new();
    let roots = roots.as_array().unwrap_or(&empty);
    // (node, depth), in reverse order of visit: written without recursion.
    let mut stack: Vec<(&Json, usize)> = roots.iter().rev().map(|n| (n, 0)).collect();
    while let Some((node, depth)) = stack.pop() {
        let e = &node["entry"];
        let id = e["id"].as_str().unwrap_or("?");
        let mark = if id == leaf { "*" } else { " " };
        let mut text = describe(e);
        if let Some(l) = node["label"].as_str() {
            text = format!("[{l}] {text}");
        }
        let head = format!("{mark} {}{} ", "  ".repeat(depth), escape(id));
        let room = width.saturating_sub(pi_base::text::width(&head)).max(12);
        let text = pi_base::text::truncate(&escape(&text), room);
        out.push(format!("{head}{text}"));
        let children = node["children"].as_array().unwrap_or(&empty);
        let next = if children.len() > 1 { depth + 1 } else { depth };
        stack.extend(children.iter().rev().map(|c| (c, next)));
    }
    out
}

/// What an entry is, on one line.
fn describe(e: &Json) -> String {
    let s = |v: &Json| v.as_str().unwrap_or_default().to_owned();
    let first = |t: &str| {
        t.lines()
            .find(|l| !l.trim().is_empty())
            .unwrap_or("")
            .to_owned()
    };
    match e["type"].as_str().unwrap_or("") {
        "message" => {
            let m = &e["message"];
            let role = s(&m["role"]);
            let text = match &m["content"] {
                Json::String(t) => first(t),
                Json::Array(b) => {
                    let texts: Vec<&str> = b.iter().filter_map(|x| x["text"].as_str()).collect();
                    let calls: Vec<&str> = b
                        .iter()
                        .filter(|x| x["type"] == "toolCall")
                        .filter_map(|x| x["name"].as_str())
                        .collect();
                    let t = first(&texts.join("\n"));
                    if t.is_empty() && !calls.is_empty() {
                        format!("→ {}", calls.join(", "))
                    } else {
                        t
                    }
                }
                _ => String::new(),
            };
            let role = match role.as_str() {
                "toolResult" => format!("tool {}", s(&m["toolName"])),
                _ => role,
            };
            format!("{role}: {text}")
        }
        "model_change" => format!("model {}/{}", s(&e["provider"]), s(&e["modelId"])),
        "thinking_level_change" => format!("thinking {}", s(&e["thinkingLevel"])),
        "compaction" => format!("compaction: {}", first(&s(&e["summary"]))),
        "branch_summary" => format!("branch summary: {}", first(&s(&e["summary"]))),
        "label" => format!("label {}", s(&e["targetId"])),
        "session_info" => format!("name: {}", s(&e["name"])),
        "custom" => format!("({})", s(&e["customType"])),
        other => other.to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_branch_point_indents_and_the_leaf_is_marked() {
        let t = serde_json::json!([{"entry": {"id": "a", "type": "message",
        "message": {"role": "user", "content": "hi\nthere"}},
        "children": [
            {"entry": {"id": "b", "type": "message", "message": {"role": "assistant",
                "content": [{"type": "text", "text": "hello"}]}}, "children": [],
             "label": "old"},
            {"entry": {"id": "c", "type": "model_change", "provider": "p",
                "modelId": "m"}, "children": []}
        ]}]);
        assert_eq!(
            tree_lines(&t, "c", 80),
            [
                "  a user: hi",
                "    b [old] assistant: hello",
                "*   c model p/m"
            ]
        );
    }
}
