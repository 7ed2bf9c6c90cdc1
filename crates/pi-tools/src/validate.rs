//! Tool arguments checked against the tool's JSON schema the way upstream checks them
//! (TypeBox): scalars are first converted where that is unambiguous (`"3"` → 3, `"true"` →
//! true, 5 → `"5"`, a lone value → a one-element array), then every problem becomes one line
//! of the error text the model sees:
//!
//! ```text
//! Validation failed for tool "read":
//!   - path: must have required properties path
//!
//! Received arguments:
//! {}
//! ```

use serde_json::{Map, Value};

use pi_base::js;

/// Converts and checks `args` against `schema`. `Ok` holds the converted arguments; `Err`
/// the full error text.
pub(crate) fn validate_arguments(
    tool: &str,
    schema: &Value,
    args: &Value,
) -> Result<Value, String> {
    let mut converted = args.clone();
    convert(&mut converted, schema);
    let mut errors = Vec::new();
    check(&converted, schema, "", &mut errors);
    if errors.is_empty() {
        return Ok(converted);
    }
    let lines: Vec<String> = errors
        .iter()
        .map(|(path, msg)| format!("  - {path}: {msg}"))
        .collect();
    let received = serde_json::to_string_pretty(args).unwrap_or_else(|_| args.to_string());
    Err(format!(
        "Validation failed for tool \"{tool}\":\n{}\n\nReceived arguments:\n{received}",
        lines.join("\n")
    ))
}

fn schema_type(schema: &Value) -> &str {
    schema.get("type").and_then(Value::as_str).unwrap_or("")
}

fn convert(value: &mut Value, schema: &Value) {
    match schema_type(schema) {
        "object" => {
            if let (Value::Object(map), Some(Value::Object(props))) =
                (&mut *value, schema.get("properties"))
            {
                for (key, sub) in props {
                    if let Some(v) = map.get_mut(key) {
                        convert(v, sub);
                    }
                }
            }
        }
        "array" => {
            if !value.is_array() {
                *value = Value::Array(vec![value.take()]);
            }
            if let (Value::Array(items), Some(sub)) = (&mut *value, schema.get("items")) {
                for item in items {
                    convert(item, sub);
                }
            }
        }
        "string" => {
            let s = match &*value {
                Value::Number(n) => Some(js::number(n.as_f64().unwrap_or(0.0))),
                Value::Bool(b) => Some(b.to_string()),
                Value::Null => Some("null".to_owned()),
                _ => None,
            };
            if let Some(s) = s {
                *value = Value::String(s);
            }
        }
        "number" => {
            let n = match &*value {
                Value::String(s) => js::parse_number(s).filter(|n| n.is_finite()),
                Value::Bool(b) => Some(if *b { 1.0 } else { 0.0 }),
                Value::Null => Some(0.0),
                _ => None,
            };
            if let Some(n) = n {
                *value = js::json_number(n);
            }
        }
        "boolean" => {
            let b = match &*value {
                Value::String(s) if s.eq_ignore_ascii_case("true") || s == "1" => Some(true),
                Value::String(s) if s.eq_ignore_ascii_case("false") || s == "0" => Some(false),
                Value::Number(n) if n.as_f64() == Some(1.0) => Some(true),
                Value::Number(n) if n.as_f64() == Some(0.0) => Some(false),
                Value::Null => Some(false),
                _ => None,
            };
            if let Some(b) = b {
                *value = Value::Bool(b);
            }
        }
        _ => {}
    }
}

fn join(path: &str, key: &str) -> String {
    if path.is_empty() {
        key.to_owned()
    } else {
        format!("{path}.{key}")
    }
}

fn or_root(path: &str) -> String {
    if path.is_empty() {
        "root".to_owned()
    } else {
        path.to_owned()
    }
}

fn check(value: &Value, schema: &Value, path: &str, errors: &mut Vec<(String, String)>) {
    match schema_type(schema) {
        "object" => {
            let Value::Object(map) = value else {
                errors.push((or_root(path), "must be object".to_owned()));
                return;
            };
            check_object(map, schema, path, errors);
        }
        "array" => {
            let Value::Array(items) = value else {
                errors.push((or_root(path), "must be array".to_owned()));
                return;
            };
            if let Some(sub) = schema.get("items") {
                for (i, item) in items.iter().enumerate() {
                    check(item, sub, &join(path, &i.to_string()), errors);
                }
            }
        }
        "string" if !value.is_string() => errors.push((or_root(path), "must be string".into())),
        "number" if !value.is_number() => errors.push((or_root(path), "must be number".into())),
        "boolean" if !value.is_boolean() => {
            errors.push((or_root(path), "must be boolean".into()));
        }
        _ => {}
    }
}

fn check_object(
    map: &Map<String, Value>,
    schema: &Value,
    path: &str,
    errors: &mut Vec<(String, String)>,
) {
    let empty = Map::new();
    let props = schema
        .get("properties")
        .and_then(Value::as_object)
        .unwrap_or(&empty);
    let missing: Vec<&str> = schema
        .get("required")
        .and_then(Value::as_array)
        .map(|r| {
            r.iter()
                .filter_map(Value::as_str)
                .filter(|k| !map.contains_key(*k))
                .collect()
        })
        .unwrap_or_default();
    if let Some(first) = missing.first() {
        errors.push((
            join(path, first),
            format!("must have required properties {}", missing.join(", ")),
        ));
    }
    if schema.get("additionalProperties") == Some(&Value::Bool(false)) {
        let extra: Vec<&String> = map.keys().filter(|k| !props.contains_key(*k)).collect();
        for k in &extra {
            errors.push((join(path, k), "schema is false".to_owned()));
        }
        if !extra.is_empty() {
            errors.push((
                or_root(path),
                "must not have additional properties".to_owned(),
            ));
        }
    }
    for (key, sub) in props {
        if let Some(v) = map.get(key) {
            check(v, sub, &join(path, key), errors);
        }
    }
}
