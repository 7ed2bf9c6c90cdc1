// Kept hand-written: no crate repairs partial JSON as `parseStreamingJson` does.
//! Tool-call arguments arrive as JSON text in pieces. While they stream (and when a stream
//! is cut off) the text is incomplete; this turns any prefix of a JSON document into the
//! value it has so far, as the reference's `parseStreamingJson` does: strict parsing first,
//! then the same text with raw control characters and invalid escapes inside strings
//! repaired, then the text with open strings, arrays and objects closed (and an unfinished
//! member dropped). Anything else, and empty text, gives `{}`.

use serde_json::{Map, Value};

/// The value of a possibly incomplete JSON text.
pub(crate) fn parse(text: &str) -> Value {
    if text.trim().is_empty() {
        return empty();
    }
    if let Ok(v) = serde_json::from_str(text) {
        return v;
    }
    if let Ok(v) = serde_json::from_str(&repair(text)) {
        return v;
    }
    complete(text).unwrap_or_else(empty)
}

fn empty() -> Value {
    Value::Object(Map::new())
}

/// Escapes raw control characters inside strings and doubles backslashes before characters
/// that cannot be escaped.
pub(crate) fn repair(text: &str) -> String {
    let mut out = String::with_capacity(text.len() + 8);
    let mut in_string = false;
    let chars: Vec<char> = text.chars().collect();
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        if !in_string {
            out.push(c);
            in_string = c == '"';
            i += 1;
            continue;
        }
        match c {
            '"' => {
                out.push(c);
                in_string = false;
            }
            '\\' => match chars.get(i + 1) {
                None => out.push_str("\\\\"),
                Some('u')
                    if chars.len() >= i + 6
                        && chars[i + 2..i + 6].iter().all(char::is_ascii_hexdigit) =>
                {
                    out.extend(&chars[i..i + 6]);
                    i += 5;
                }
                Some(&n @ ('"' | '\\' | '/' | 'b' | 'f' | 'n' | 'r' | 't')) => {
                    out.push('\\');
                    out.push(n);
                    i += 1;
                }
                Some(_) => out.push_str("\\\\"),
            },
            '\u{8}' => out.push_str("\\b"),
            '\u{c}' => out.push_str("\\f"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            c if (c as u32) < 0x20 => out.push_str(&format!("\\u{:04x}", c as u32)),
            c => out.push(c),
        }
        i += 1;
    }
    out
}

/// Structure of a prefix: the open containers and whether it ends inside a string.
struct Scan {
    stack: Vec<char>,
    in_string: bool,
    /// Byte offsets of `,`, `{` and `[` outside strings.
    cuts: Vec<usize>,
}

fn scan(text: &str) -> Scan {
    let mut s = Scan {
        stack: Vec::new(),
        in_string: false,
        cuts: Vec::new(),
    };
    let mut escape = false;
    for (i, c) in text.char_indices() {
        if s.in_string {
            if escape {
                escape = false;
            } else if c == '\\' {
                escape = true;
            } else if c == '"' {
                s.in_string = false;
            }
            continue;
        }
        match c {
            '"' => s.in_string = true,
            '{' | '[' => {
                s.stack.push(c);
                s.cuts.push(i);
            }
            '}' | ']' => {
                s.stack.pop();
            }
            ',' => s.cuts.push(i),
            _ => {}
        }
    }
    s
}

/// Closes what is open, dropping unfinished members until the text parses.
fn complete(text: &str) -> Option<Value> {
    let mut t = text.trim_end().to_owned();
    for _ in 0..256 {
        let s = scan(&t);
        let mut closed = t.clone();
        if s.in_string {
            // An unfinished escape at the end cannot be kept.
            if let Some(p) = closed.rfind('\\')
                && closed[p..].len() < 6
                && closed[p + 1..]
                    .chars()
                    .all(|c| c == 'u' || c.is_ascii_hexdigit())
                && !closed[..p].ends_with('\\')
            {
                closed.truncate(p);
            }
            closed.push('"');
        }
        let trimmed = closed.trim_end();
        let mut closed = trimmed
            .strip_suffix(',')
            .unwrap_or(trimmed)
            .trim_end()
            .to_owned();
        if closed.ends_with(':') {
            closed.push_str("null");
        }
        for c in s.stack.iter().rev() {
            closed.push(if *c == '{' { '}' } else { ']' });
        }
        if let Ok(v) = serde_json::from_str::<Value>(&repair(&closed)) {
            return Some(v);
        }
        // Drop the last member (or element) and try again.
        let p = *s.cuts.last()?;
        if t.as_bytes()[p] == b',' {
            t.truncate(p);
        } else if p + 1 < t.len() {
            t.truncate(p + 1);
        } else {
            // Nothing after the opening bracket and still invalid: give up on it.
            t.truncate(p);
            if t.trim().is_empty() {
                return None;
            }
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn prefixes_of_a_document() {
        assert_eq!(parse(""), json!({}));
        assert_eq!(parse("  "), json!({}));
        assert_eq!(parse(r#"{"path":"a.ts"}"#), json!({"path": "a.ts"}));
        assert_eq!(parse(r#"{"path":"a."#), json!({"path": "a."}));
        assert_eq!(
            parse(r#"{"path":"a.ts","n":1"#),
            json!({"path": "a.ts", "n": 1})
        );
        assert_eq!(parse(r#"{"path":"a.ts","#), json!({"path": "a.ts"}));
        assert_eq!(parse(r#"{"path":"a.ts","n""#), json!({"path": "a.ts"}));
        assert_eq!(
            parse(r#"{"a":[1,2,{"b":"c"#),
            json!({"a": [1, 2, {"b": "c"}]})
        );
        assert_eq!(parse(r#"{"a":"x\"#), json!({"a": "x"}));
        assert_eq!(parse(r#"{"a":"x\u00"#), json!({"a": "x"}));
        assert_eq!(parse("{"), json!({}));
        assert_eq!(parse("nonsense"), json!({}));
    }

    #[test]
    fn every_prefix_gives_a_value() {
        let doc = r#"{"command":"ls -la \"x\"","list":[1,2.5,true,null],"o":{"k":"é😀"}}"#;
        for (i, _) in doc.char_indices() {
            let v = parse(&doc[..i]);
            assert!(v.is_object(), "prefix {i}: {v}");
        }
        assert_eq!(parse(doc), serde_json::from_str::<Value>(doc).unwrap());
    }

    #[test]
    fn repairs_raw_control_characters() {
        assert_eq!(
            parse("{\"a\":\"line\nbreak\"}"),
            json!({"a": "line\nbreak"})
        );
        assert_eq!(parse(r#"{"a":"c:\dir"}"#), json!({"a": "c:\\dir"}));
    }
}
