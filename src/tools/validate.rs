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

use serde_json::{Map, Number, Value};

/// Converts and checks `args` against `schema`. `Ok` holds the converted arguments; `Err`
/// the full error text.
pub fn validate_arguments(tool: &str, schema: &Value, args: &Value) -> Result<Value, String> {
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
                Value::Number(n) => Some(js_number(n.as_f64().unwrap_or(0.0))),
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
                Value::String(s) => js_parse_number(s).filter(|n| n.is_finite()),
                Value::Bool(b) => Some(if *b { 1.0 } else { 0.0 }),
                Value::Null => Some(0.0),
                _ => None,
            };
            if let Some(n) = n {
                *value = number_value(n);
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

/// A JSON number for `n`: an integer when it is one, as JavaScript would print it.
pub(crate) fn number_value(n: f64) -> Value {
    if n.fract() == 0.0 && n.abs() < 9.0e15 {
        Value::Number(Number::from(n as i64))
    } else {
        Number::from_f64(n).map_or(Value::Null, Value::Number)
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

pub(crate) fn is_js_space(c: char) -> bool {
    matches!(
        c,
        '\t' | '\n' | '\u{0B}' | '\u{0C}' | '\r' | ' ' | '\u{A0}' | '\u{1680}' | '\u{2000}'
            ..='\u{200A}'
                | '\u{2028}'
                | '\u{2029}'
                | '\u{202F}'
                | '\u{205F}'
                | '\u{3000}'
                | '\u{FEFF}'
    )
}

/// JavaScript's `Number(string)`: surrounding white space is ignored, the empty string is 0,
/// `0x`/`0o`/`0b` prefixes are read, anything else must be a decimal literal (or
/// `Infinity`). `None` where JavaScript gives `NaN`.
pub(crate) fn js_parse_number(s: &str) -> Option<f64> {
    let t = s.trim_matches(is_js_space);
    if t.is_empty() {
        return Some(0.0);
    }
    for (prefix, radix) in [
        ("0x", 16),
        ("0X", 16),
        ("0o", 8),
        ("0O", 8),
        ("0b", 2),
        ("0B", 2),
    ] {
        if let Some(digits) = t.strip_prefix(prefix) {
            if digits.is_empty() || !digits.chars().all(|c| c.is_digit(radix)) {
                return None;
            }
            let mut n = 0f64;
            for c in digits.chars() {
                n = n * f64::from(radix) + f64::from(c.to_digit(radix).unwrap_or(0));
            }
            return Some(n);
        }
    }
    let (sign, body) = match t.as_bytes()[0] {
        b'+' => (1.0, &t[1..]),
        b'-' => (-1.0, &t[1..]),
        _ => (1.0, t),
    };
    if body == "Infinity" {
        return Some(sign * f64::INFINITY);
    }
    // Decimal literal: digits [. digits] [e [sign] digits], at least one mantissa digit.
    let b = body.as_bytes();
    let mut i = 0;
    let mut mantissa_digits = 0;
    while i < b.len() && b[i].is_ascii_digit() {
        i += 1;
        mantissa_digits += 1;
    }
    if i < b.len() && b[i] == b'.' {
        i += 1;
        while i < b.len() && b[i].is_ascii_digit() {
            i += 1;
            mantissa_digits += 1;
        }
    }
    if mantissa_digits == 0 {
        return None;
    }
    if i < b.len() && (b[i] == b'e' || b[i] == b'E') {
        i += 1;
        if i < b.len() && (b[i] == b'+' || b[i] == b'-') {
            i += 1;
        }
        let start = i;
        while i < b.len() && b[i].is_ascii_digit() {
            i += 1;
        }
        if i == start {
            return None;
        }
    }
    if i != b.len() {
        return None;
    }
    let text = if body.starts_with('.') {
        format!("0{body}")
    } else {
        body.to_owned()
    };
    text.parse::<f64>().ok().map(|n| sign * n)
}

/// JavaScript's `String(number)`: `3`, `1.5`, `1e+21`, `1.5e-7`, `NaN`, `Infinity`.
pub(crate) fn js_number(n: f64) -> String {
    if n.is_nan() {
        return "NaN".to_owned();
    }
    if n.is_infinite() {
        return if n > 0.0 { "Infinity" } else { "-Infinity" }.to_owned();
    }
    if n == 0.0 {
        return "0".to_owned();
    }
    let sign = if n < 0.0 { "-" } else { "" };
    // Shortest round-trip digits and exponent, e.g. "1.5e300".
    let e = format!("{:e}", n.abs());
    let (mantissa, exp) = e.split_once('e').unwrap_or((&e, "0"));
    let exp: i32 = exp.parse().unwrap_or(0);
    let digits: String = mantissa.chars().filter(char::is_ascii_digit).collect();
    let k = digits.len() as i32;
    let point = exp + 1; // position of the decimal point after the first `point` digits
    let body = if k <= point && point <= 21 {
        format!("{digits}{}", "0".repeat((point - k) as usize))
    } else if 0 < point && point <= 21 {
        format!(
            "{}.{}",
            &digits[..point as usize],
            &digits[point as usize..]
        )
    } else if -6 < point && point <= 0 {
        format!("0.{}{digits}", "0".repeat((-point) as usize))
    } else {
        let e = point - 1;
        let e = if e >= 0 {
            format!("+{e}")
        } else {
            e.to_string()
        };
        if k == 1 {
            format!("{digits}e{e}")
        } else {
            format!("{}.{}e{e}", &digits[..1], &digits[1..])
        }
    };
    format!("{sign}{body}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbers_print_like_javascript() {
        assert_eq!(js_number(3.0), "3");
        assert_eq!(js_number(-2.5), "-2.5");
        assert_eq!(js_number(1.5e300), "1.5e+300");
        assert_eq!(js_number(1e21), "1e+21");
        assert_eq!(js_number(123456789012.0), "123456789012");
        assert_eq!(js_number(0.000001), "0.000001");
        assert_eq!(js_number(1.5e-7), "1.5e-7");
        assert_eq!(js_number(0.1 + 0.2), "0.30000000000000004");
    }

    #[test]
    fn strings_parse_like_javascript() {
        assert_eq!(js_parse_number(" 3 "), Some(3.0));
        assert_eq!(js_parse_number(""), Some(0.0));
        assert_eq!(js_parse_number("0x10"), Some(16.0));
        assert_eq!(js_parse_number("0b11"), Some(3.0));
        assert_eq!(js_parse_number("-0x10"), None);
        assert_eq!(js_parse_number("1e2"), Some(100.0));
        assert_eq!(js_parse_number("5."), Some(5.0));
        assert_eq!(js_parse_number(".5"), Some(0.5));
        assert_eq!(js_parse_number("+3"), Some(3.0));
        assert_eq!(js_parse_number("3px"), None);
        assert_eq!(js_parse_number("1_000"), None);
        assert_eq!(js_parse_number("inf"), None);
        assert_eq!(js_parse_number("."), None);
        assert_eq!(js_parse_number("1e"), None);
    }
}
