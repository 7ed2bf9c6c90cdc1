//! JSON values as JavaScript sees them, for the messages of a context.
//!
//! The reference reads session lines with `JSON.parse`, transforms the objects and writes
//! them with `JSON.stringify`. To produce byte-identical records this module keeps the parts
//! of that round trip that show in the output:
//!
//! - object keys keep their insertion order, except that array-index keys (`"0"`, `"12"`)
//!   come first in ascending order, and a repeated key keeps its first position with the
//!   last value;
//! - strings keep their JSON escapes until they are written, so lone UTF-16 surrogates
//!   (`"\ud83d"`, which `JSON.parse` accepts) survive, and are written the way
//!   `JSON.stringify` writes them;
//! - numbers are doubles and are written in JavaScript's `Number#toString` form.
//!
//! Values nested deeper than `MAX_DEPTH` are kept as their minified source text (nothing
//! here recurses deeper than that), which only differs from the reference in the order of
//! array-index keys and repeated keys inside such a subtree.

use std::borrow::Cow;

use pi_base::{js, json};

/// Containers nested deeper than this are kept as raw text.
pub(crate) const MAX_DEPTH: usize = 96;

/// The inside of a JSON string literal, escapes kept (valid UTF-8, no raw control
/// characters, every escape valid).
#[derive(Clone, PartialEq, Eq, Default)]
pub struct JStr(String);

impl std::fmt::Debug for JStr {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "\"{}\"", self.0)
    }
}

/// A character, or a lone surrogate, as found while walking a [`JStr`].
enum Unit {
    Char(char),
    /// A `\uD800`–`\uDFFF` escape that is not half of a pair (one UTF-16 unit).
    Surrogate,
}

impl JStr {
    /// A string from plain text.
    pub fn new(text: &str) -> JStr {
        let mut out = Vec::with_capacity(text.len() + 2);
        json::write_str(&mut out, text);
        // write_str adds the quotes and produces valid UTF-8.
        let inner = &out[1..out.len() - 1];
        JStr(String::from_utf8_lossy(inner).into_owned())
    }

    /// From the raw bytes between the quotes of a validated JSON string; bytes that are not
    /// UTF-8 become U+FFFD (as they do when the reference reads the file).
    fn from_raw(raw: &[u8]) -> JStr {
        match std::str::from_utf8(raw) {
            Ok(s) => JStr(s.to_owned()),
            Err(_) => JStr(String::from_utf8_lossy(raw).into_owned()),
        }
    }

    pub(crate) fn raw(&self) -> &str {
        &self.0
    }

    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    fn escaped(&self) -> bool {
        self.0.as_bytes().contains(&b'\\')
    }

    /// The text, with lone surrogates as U+FFFD.
    pub fn text(&self) -> Cow<'_, str> {
        if self.escaped() {
            json::decode_str(self.0.as_bytes())
        } else {
            Cow::Borrowed(&self.0)
        }
    }

    pub fn eq_str(&self, s: &str) -> bool {
        if self.escaped() {
            self.text() == s
        } else {
            self.0 == s
        }
    }

    fn for_each_unit(&self, mut f: impl FnMut(Unit)) {
        let b = self.0.as_bytes();
        let mut i = 0;
        while i < b.len() {
            if b[i] != b'\\' {
                let end = memchr::memchr(b'\\', &b[i..]).map_or(b.len(), |k| i + k);
                for c in self.0[i..end].chars() {
                    f(Unit::Char(c));
                }
                i = end;
                continue;
            }
            if let Some(c) = json::simple_escape(b.get(i + 1).copied().unwrap_or(b'\\')) {
                f(Unit::Char(char::from(c)));
                i += 2;
                continue;
            }
            let (u, len) = json::unicode_escape(b, i);
            i += len;
            match char::from_u32(u) {
                Some(c) => f(Unit::Char(c)),
                None => f(Unit::Surrogate),
            }
        }
    }

    /// `string.length` in JavaScript: UTF-16 code units.
    pub fn utf16_len(&self) -> usize {
        if !self.escaped() {
            return js::utf16_len(&self.0);
        }
        let mut n = 0;
        self.for_each_unit(|u| {
            n += match u {
                Unit::Char(c) => c.len_utf16(),
                Unit::Surrogate => 1,
            }
        });
        n
    }

    /// `s.trim().length === 0` in JavaScript.
    pub(crate) fn is_blank(&self) -> bool {
        let mut blank = true;
        self.for_each_unit(|u| {
            if !matches!(u, Unit::Char(c) if js::is_space(c)) {
                blank = false;
            }
        });
        blank
    }

    /// Appends another string (JavaScript's `+`).
    pub fn push(&mut self, other: &JStr) {
        self.0.push_str(&other.0);
    }

    pub fn push_text(&mut self, text: &str) {
        self.push(&JStr::new(text));
    }

    /// The string with unpaired surrogates removed (upstream's `sanitizeSurrogates`).
    pub(crate) fn without_lone_surrogates(&self) -> JStr {
        if !self.escaped() {
            return self.clone();
        }
        let mut lone = false;
        self.for_each_unit(|u| lone |= matches!(u, Unit::Surrogate));
        if !lone {
            return self.clone();
        }
        let mut out = String::with_capacity(self.0.len());
        let mut buf = Vec::new();
        self.for_each_unit(|u| {
            if let Unit::Char(c) = u {
                buf.clear();
                json::write_str(&mut buf, c.encode_utf8(&mut [0u8; 4]));
                out.push_str(&String::from_utf8_lossy(&buf[1..buf.len() - 1]));
            }
        });
        JStr(out)
    }

    /// Writes the string literal as `JSON.stringify` does.
    pub(crate) fn write(&self, out: &mut Vec<u8>) {
        out.push(b'"');
        let b = self.0.as_bytes();
        let mut i = 0;
        while i < b.len() {
            // Text between escapes is already as JSON.stringify writes it.
            let end = memchr::memchr(b'\\', &b[i..]).map_or(b.len(), |k| i + k);
            out.extend_from_slice(&b[i..end]);
            i = end;
            if i >= b.len() {
                break;
            }
            match b.get(i + 1) {
                Some(b'u') => {
                    let (u, len) = json::unicode_escape(b, i);
                    i += len;
                    match (u, char::from_u32(u)) {
                        (0x22, _) => out.extend_from_slice(b"\\\""),
                        (0x5C, _) => out.extend_from_slice(b"\\\\"),
                        (0x08, _) => out.extend_from_slice(b"\\b"),
                        (0x0C, _) => out.extend_from_slice(b"\\f"),
                        (0x0A, _) => out.extend_from_slice(b"\\n"),
                        (0x0D, _) => out.extend_from_slice(b"\\r"),
                        (0x09, _) => out.extend_from_slice(b"\\t"),
                        (0..0x20, _) | (_, None) => {
                            out.extend_from_slice(format!("\\u{u:04x}").as_bytes())
                        }
                        (_, Some(c)) => {
                            out.extend_from_slice(c.encode_utf8(&mut [0u8; 4]).as_bytes())
                        }
                    }
                }
                Some(b'/') => {
                    out.push(b'/');
                    i += 2;
                }
                Some(_) => {
                    out.extend_from_slice(&b[i..i + 2]);
                    i += 2;
                }
                None => break,
            }
        }
        out.push(b'"');
    }
}

/// A JSON value.
#[derive(Clone, Debug, PartialEq, Default)]
pub enum Value {
    #[default]
    Null,
    Bool(bool),
    Num(f64),
    Str(JStr),
    Arr(Vec<Value>),
    Obj(Obj),
    /// A subtree nested too deeply to be parsed, as minified JSON text.
    Raw(Box<str>),
}

/// An object with JavaScript's property order.
#[derive(Clone, Debug, PartialEq, Default)]
pub struct Obj(Vec<(JStr, Value)>);

/// Whether a key is an array index (`"0"`, `"42"`, below 2³² − 1), which JavaScript orders
/// before all other keys.
fn index_key(k: &JStr) -> Option<u32> {
    js::array_index(&k.text())
}

fn same_key(a: &JStr, b: &JStr) -> bool {
    if a.escaped() || b.escaped() {
        a.text() == b.text()
    } else {
        a.0 == b.0
    }
}

impl Obj {
    pub fn new() -> Obj {
        Obj(Vec::new())
    }

    pub fn get(&self, key: &str) -> Option<&Value> {
        self.0.iter().find(|(k, _)| k.eq_str(key)).map(|(_, v)| v)
    }

    fn position(&self, key: &JStr) -> Option<usize> {
        if key.escaped() {
            let t = key.text();
            self.0.iter().position(|(k, _)| k.eq_str(&t))
        } else {
            self.0.iter().position(|(k, _)| k.eq_str(key.raw()))
        }
    }

    /// Sets a property (JavaScript's `o[key] = value`).
    pub(crate) fn set_key(&mut self, key: JStr, value: Value) {
        if let Some(p) = self.position(&key) {
            self.0[p].1 = value;
            return;
        }
        if let Some(n) = index_key(&key) {
            let at = self
                .0
                .iter()
                .position(|(k, _)| index_key(k).is_none_or(|m| m > n))
                .unwrap_or(self.0.len());
            self.0.insert(at, (key, value));
        } else {
            self.0.push((key, value));
        }
    }

    pub fn set(&mut self, key: &str, value: Value) {
        self.set_key(JStr::new(key), value);
    }

    /// Sets `key` unless `value` is `None` (JavaScript's `undefined` is not written).
    pub fn set_opt(&mut self, key: &str, value: Option<Value>) {
        if let Some(v) = value {
            self.set(key, v);
        }
    }

    /// An object from parsed members, as `JSON.parse` builds it: a repeated key keeps its
    /// first position and takes the last value; array-index keys come first, ascending.
    fn from_members(members: Vec<(JStr, Value)>) -> Obj {
        let mut out: Vec<(JStr, Value)> = Vec::with_capacity(members.len());
        let mut any_index = false;
        if members.len() <= 16 {
            for (k, v) in members {
                match out.iter().position(|(x, _)| same_key(x, &k)) {
                    Some(p) => out[p].1 = v,
                    None => {
                        any_index |= index_key(&k).is_some();
                        out.push((k, v));
                    }
                }
            }
        } else {
            let mut seen: std::collections::HashMap<String, usize> =
                std::collections::HashMap::with_capacity(members.len());
            for (k, v) in members {
                let text = k.text().into_owned();
                match seen.get(&text) {
                    Some(&p) => out[p].1 = v,
                    None => {
                        any_index |= index_key(&k).is_some();
                        seen.insert(text, out.len());
                        out.push((k, v));
                    }
                }
            }
        }
        if any_index {
            // Stable: the other keys keep their order.
            out.sort_by_key(|(k, _)| index_key(k).map_or(u64::MAX, u64::from));
        }
        Obj(out)
    }

    pub fn remove(&mut self, key: &str) -> Option<Value> {
        let p = self.0.iter().position(|(k, _)| k.eq_str(key))?;
        Some(self.0.remove(p).1)
    }

    pub fn iter(&self) -> impl Iterator<Item = (&JStr, &Value)> {
        self.0.iter().map(|(k, v)| (k, v))
    }

    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
}

impl Value {
    pub fn str(s: &str) -> Value {
        Value::Str(JStr::new(s))
    }

    /// Parses a validated JSON text; `None` if it is not valid JSON after all.
    pub fn parse(b: &[u8]) -> Option<Value> {
        let mut i = json::skip_ws(b, 0);
        let v = parse_at(b, &mut i, 0)?;
        (json::skip_ws(b, i) == b.len()).then_some(v)
    }

    pub fn get(&self, key: &str) -> Option<&Value> {
        match self {
            Value::Obj(o) => o.get(key),
            _ => None,
        }
    }

    pub fn as_arr(&self) -> Option<&[Value]> {
        match self {
            Value::Arr(a) => Some(a),
            _ => None,
        }
    }

    pub fn as_jstr(&self) -> Option<&JStr> {
        match self {
            Value::Str(s) => Some(s),
            _ => None,
        }
    }

    pub fn as_f64(&self) -> Option<f64> {
        match self {
            Value::Num(n) => Some(*n),
            _ => None,
        }
    }

    /// Whether this is the string `s`.
    pub fn is_str(&self, s: &str) -> bool {
        matches!(self, Value::Str(j) if j.eq_str(s))
    }

    /// JavaScript truthiness.
    pub fn truthy(&self) -> bool {
        match self {
            Value::Null => false,
            Value::Bool(b) => *b,
            Value::Num(n) => js::number_truthy(*n),
            Value::Str(s) => !s.is_empty(),
            _ => true,
        }
    }

    /// Writes the value as `JSON.stringify` does.
    pub fn write(&self, out: &mut Vec<u8>) {
        match self {
            Value::Null => out.extend_from_slice(b"null"),
            Value::Bool(true) => out.extend_from_slice(b"true"),
            Value::Bool(false) => out.extend_from_slice(b"false"),
            Value::Num(n) => write_num(out, *n),
            Value::Str(s) => s.write(out),
            Value::Arr(a) => {
                out.push(b'[');
                for (k, v) in a.iter().enumerate() {
                    if k > 0 {
                        out.push(b',');
                    }
                    v.write(out);
                }
                out.push(b']');
            }
            Value::Obj(o) => {
                out.push(b'{');
                for (k, (key, v)) in o.0.iter().enumerate() {
                    if k > 0 {
                        out.push(b',');
                    }
                    key.write(out);
                    out.push(b':');
                    v.write(out);
                }
                out.push(b'}');
            }
            Value::Raw(r) => write_raw(out, r.as_bytes()),
        }
    }

    pub fn to_json(&self) -> Vec<u8> {
        let mut out = Vec::new();
        self.write(&mut out);
        out
    }

    /// `JSON.stringify(v).length` (UTF-16 code units).
    pub fn json_utf16_len(&self) -> usize {
        let out = self.to_json();
        String::from_utf8_lossy(&out)
            .chars()
            .map(char::len_utf16)
            .sum()
    }

    /// The value as JavaScript's `String(v)` (template literals).
    pub fn js_string(v: Option<&Value>) -> JStr {
        match v {
            None => JStr::new("undefined"),
            Some(Value::Null) => JStr::new("null"),
            Some(Value::Bool(b)) => JStr::new(if *b { "true" } else { "false" }),
            Some(Value::Num(n)) => JStr::new(&js::number(*n)),
            Some(Value::Str(s)) => s.clone(),
            Some(Value::Arr(a)) => {
                let mut out = JStr::default();
                for (k, x) in a.iter().enumerate() {
                    if k > 0 {
                        out.push_text(",");
                    }
                    if !matches!(x, Value::Null) {
                        out.push(&Value::js_string(Some(x)));
                    }
                }
                out
            }
            Some(Value::Obj(_) | Value::Raw(_)) => JStr::new("[object Object]"),
        }
    }
}

fn parse_at(b: &[u8], i: &mut usize, depth: usize) -> Option<Value> {
    let start = *i;
    match b.get(start)? {
        b'{' | b'[' if depth >= MAX_DEPTH => {
            let (end, _) = json::scan_value(b, start).ok()?;
            *i = end;
            let text = json::minify(&b[start..end]);
            Some(Value::Raw(String::from_utf8_lossy(&text).into()))
        }
        b'{' => {
            let mut members = Vec::new();
            *i = json::skip_ws(b, start + 1);
            if b.get(*i) == Some(&b'}') {
                *i += 1;
                return Some(Value::Obj(Obj::new()));
            }
            loop {
                if b.get(*i) != Some(&b'"') {
                    return None;
                }
                let (kend, _) = json::scan_string(b, *i).ok()?;
                let key = JStr::from_raw(&b[*i + 1..kend - 1]);
                *i = json::skip_ws(b, kend);
                if b.get(*i) != Some(&b':') {
                    return None;
                }
                *i = json::skip_ws(b, *i + 1);
                let v = parse_at(b, i, depth + 1)?;
                members.push((key, v));
                *i = json::skip_ws(b, *i);
                match b.get(*i)? {
                    b',' => *i = json::skip_ws(b, *i + 1),
                    b'}' => {
                        *i += 1;
                        return Some(Value::Obj(Obj::from_members(members)));
                    }
                    _ => return None,
                }
            }
        }
        b'[' => {
            let mut a = Vec::new();
            *i = json::skip_ws(b, start + 1);
            if b.get(*i) == Some(&b']') {
                *i += 1;
                return Some(Value::Arr(a));
            }
            loop {
                a.push(parse_at(b, i, depth + 1)?);
                *i = json::skip_ws(b, *i);
                match b.get(*i)? {
                    b',' => *i = json::skip_ws(b, *i + 1),
                    b']' => {
                        *i += 1;
                        return Some(Value::Arr(a));
                    }
                    _ => return None,
                }
            }
        }
        b'"' => {
            let (end, _) = json::scan_string(b, start).ok()?;
            *i = end;
            Some(Value::Str(JStr::from_raw(&b[start + 1..end - 1])))
        }
        b't' | b'f' | b'n' | b'-' | b'0'..=b'9' => {
            let (end, _) = json::scan_value(b, start).ok()?;
            *i = end;
            Some(match &b[start..end] {
                b"true" => Value::Bool(true),
                b"false" => Value::Bool(false),
                b"null" => Value::Null,
                n => Value::Num(json::number(n)?),
            })
        }
        _ => None,
    }
}

fn write_num(out: &mut Vec<u8>, n: f64) {
    if n.is_finite() {
        out.extend_from_slice(js::number(n).as_bytes());
    } else {
        out.extend_from_slice(b"null");
    }
}

/// Writes minified raw JSON in `JSON.stringify`'s spelling of strings and numbers.
fn write_raw(out: &mut Vec<u8>, b: &[u8]) {
    let mut i = 0;
    while i < b.len() {
        match b[i] {
            b'"' => {
                let end = json::scan_string(b, i).map_or(b.len(), |(e, _)| e);
                JStr::from_raw(&b[i + 1..end.saturating_sub(1).max(i + 1)]).write(out);
                i = end;
            }
            b'-' | b'0'..=b'9' => {
                let end = json::scan_value(b, i).map_or(b.len(), |(e, _)| e);
                match json::number(&b[i..end]) {
                    Some(n) => write_num(out, n),
                    None => out.extend_from_slice(&b[i..end]),
                }
                i = end.max(i + 1);
            }
            c if json::is_ws(c) => i += 1,
            c => {
                out.push(c);
                i += 1;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn round(s: &str) -> String {
        String::from_utf8(Value::parse(s.as_bytes()).unwrap().to_json()).unwrap()
    }

    #[test]
    fn stringify_round_trip() {
        assert_eq!(
            round(r#" { "a" : 1.0 , "b":[ true,null ] } "#),
            r#"{"a":1,"b":[true,null]}"#
        );
        assert_eq!(
            round(r#"{"b":1,"2":2,"a":3,"1":4}"#),
            r#"{"1":4,"2":2,"b":1,"a":3}"#
        );
        assert_eq!(round(r#"{"a":1,"b":2,"a":3}"#), r#"{"a":3,"b":2}"#);
        assert_eq!(
            round(r#""\u00e9\/\u0001\ud83d\ude00\ud83d""#),
            "\"é/\\u0001😀\\ud83d\""
        );
        assert_eq!(round(r#"1e400"#), "null");
    }

    #[test]
    fn lengths_and_blanks_count_utf16_units() {
        let s = |t: &str| match Value::parse(t.as_bytes()).unwrap() {
            Value::Str(s) => s,
            _ => unreachable!(),
        };
        assert_eq!(s(r#""😀😀😀""#).utf16_len(), 6);
        assert_eq!(s(r#""\ud83d\ude00\ud83d""#).utf16_len(), 3);
        assert!(s(r#"" \n\u00a0\ufeff""#).is_blank());
        assert!(!s(r#""\u0085""#).is_blank());
        assert!(!s(r#""\ud800""#).is_blank());
        let mut out = Vec::new();
        s(r#""a\ud800b\ud83d\ude00""#)
            .without_lone_surrogates()
            .write(&mut out);
        assert_eq!(out, "\"ab😀\"".as_bytes());
    }

    #[test]
    fn wide_objects_parse_in_linear_time() {
        let n = 200_000;
        let mut text = String::from("{");
        for k in 0..n {
            text.push_str(&format!("\"k{k}\":{k},"));
        }
        text.push_str("\"k0\":\"last\",\"7\":1}");
        let v = Value::parse(text.as_bytes()).unwrap();
        let Value::Obj(o) = &v else {
            panic!("not an object: {v:?}");
        };
        assert_eq!(o.iter().count(), n + 1);
        assert!(o.get("k0").unwrap().is_str("last"));
        assert_eq!(o.iter().next().unwrap().0.raw(), "7");
    }

    #[test]
    fn deep_values_stay_raw() {
        let deep = format!("{}1{}", "[".repeat(5000), "]".repeat(5000));
        let v = Value::parse(deep.as_bytes()).unwrap();
        assert_eq!(v.to_json(), deep.as_bytes());
    }

    #[test]
    fn js_string_conversions() {
        assert_eq!(Value::js_string(None).raw(), "undefined");
        assert_eq!(Value::js_string(Some(&Value::Num(2.0))).raw(), "2");
        let a = Value::parse(br#"[1,null,"x"]"#).unwrap();
        assert_eq!(Value::js_string(Some(&a)).raw(), "1,,x");
    }
}
