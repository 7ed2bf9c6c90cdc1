//! JavaScript semantics that show in the reference's output, in one place: how numbers are
//! written (`String(n)`, `JSON.stringify`) and read (`Number(s)`), what `trim` removes,
//! string lengths in UTF-16 code units, truthiness, and the property order of objects.
//!
//! The number formatting and white space are checked against values recorded from Node
//! (`scripts/js-goldens.mjs`, `tests/fixtures/js/`).

use serde_json::Value as Json;

/// JavaScript's `String(n)` (`Number.prototype.toString()`): `3`, `-2.5`, `1e+21`, `1.5e-7`,
/// `NaN`, `Infinity`; `-0` is `0`.
pub fn number(n: f64) -> String {
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
    // Rust's `{:e}` gives the shortest digits that read back to `n`, as JavaScript picks them.
    let sci = format!("{:e}", n.abs());
    let (mantissa, exp) = sci.split_once('e').unwrap_or((&sci, "0"));
    let digits: String = mantissa.chars().filter(char::is_ascii_digit).collect();
    let k = digits.len() as i32;
    // The value is 0.DIGITS × 10^point.
    let point = exp.parse::<i32>().unwrap_or(0) + 1;
    let body = if k <= point && point <= 21 {
        format!("{digits}{}", "0".repeat((point - k) as usize))
    } else if 0 < point && point <= 21 {
        let (int, frac) = digits.split_at(point as usize);
        format!("{int}.{frac}")
    } else if -6 < point && point <= 0 {
        format!("0.{}{digits}", "0".repeat((-point) as usize))
    } else {
        let e = point - 1;
        let e_sign = if e >= 0 { "+" } else { "-" };
        let (first, rest) = digits.split_at(1);
        let dot = if rest.is_empty() { "" } else { "." };
        format!("{first}{dot}{rest}e{e_sign}{}", e.abs())
    };
    format!("{sign}{body}")
}

/// `n` as a serde number that prints as `JSON.stringify(n)` does through [`stringify`]: an
/// integer when it is a safe one (`5`, not `5.0`), `null` when not finite.
pub fn json_number(n: f64) -> Json {
    if n.fract() == 0.0 && n.abs() < 9e15 {
        Json::from(n as i64)
    } else {
        serde_json::Number::from_f64(n).map_or(Json::Null, Json::Number)
    }
}

/// JavaScript's `Number(s)`: surrounding white space is ignored, the empty string is 0,
/// `0x`/`0o`/`0b` prefixes are read, anything else must be a decimal literal (or
/// `Infinity`). `None` where JavaScript gives `NaN`.
pub fn parse_number(s: &str) -> Option<f64> {
    let t = trim(s);
    if t.is_empty() {
        return Some(0.0);
    }
    for (prefix, radix) in [("0x", 16), ("0o", 8), ("0b", 2)] {
        let Some(digits) = t.get(..2).filter(|p| p.eq_ignore_ascii_case(prefix)) else {
            continue;
        };
        let digits = &t[digits.len()..];
        if digits.is_empty() {
            return None;
        }
        let mut n = 0f64;
        for c in digits.chars() {
            n = n * f64::from(radix) + f64::from(c.to_digit(radix)?);
        }
        return Some(n);
    }
    let (sign, body) = match t.as_bytes()[0] {
        b'+' => (1.0, &t[1..]),
        b'-' => (-1.0, &t[1..]),
        _ => (1.0, t),
    };
    if body == "Infinity" {
        return Some(sign * f64::INFINITY);
    }
    // digits [. digits] [e [sign] digits], with at least one digit before the exponent.
    let b = body.as_bytes();
    let int_end = digits_end(b, 0);
    let mut i = int_end;
    let mut mantissa_digits = int_end;
    if b.get(i) == Some(&b'.') {
        i = digits_end(b, i + 1);
        mantissa_digits += i - int_end - 1;
    }
    if mantissa_digits == 0 {
        return None;
    }
    if matches!(b.get(i), Some(b'e' | b'E')) {
        i += 1;
        if matches!(b.get(i), Some(b'+' | b'-')) {
            i += 1;
        }
        let start = i;
        i = digits_end(b, i);
        if i == start {
            return None;
        }
    }
    if i != b.len() {
        return None;
    }
    // Rust reads `5.` but not `.5`.
    let parsed = if body.starts_with('.') {
        format!("0{body}").parse::<f64>()
    } else {
        body.parse::<f64>()
    };
    parsed.ok().map(|n| sign * n)
}

fn digits_end(b: &[u8], mut i: usize) -> usize {
    while b.get(i).is_some_and(u8::is_ascii_digit) {
        i += 1;
    }
    i
}

/// The characters `String.prototype.trim` removes (and `\s` matches): WhiteSpace and
/// LineTerminator. Not U+0085 or U+180E.
pub fn is_space(c: char) -> bool {
    matches!(
        c,
        '\t' | '\n' | '\u{b}' | '\u{c}' | '\r' | ' ' | '\u{a0}' | '\u{1680}' | '\u{2000}'
            ..='\u{200a}'
                | '\u{2028}'
                | '\u{2029}'
                | '\u{202f}'
                | '\u{205f}'
                | '\u{3000}'
                | '\u{feff}'
    )
}

/// `String.prototype.trim`.
pub fn trim(s: &str) -> &str {
    s.trim_matches(is_space)
}

/// A string's `length` in JavaScript: UTF-16 code units.
pub fn utf16_len(s: &str) -> usize {
    // Every byte but a continuation byte starts a character; four-byte characters are two
    // units.
    s.bytes()
        .map(|c| usize::from(c & 0xC0 != 0x80) + usize::from(c >= 0xF0))
        .sum()
}

/// The longest prefix of `s` of at most `max` UTF-16 code units, never splitting a
/// character (`s.slice(0, max)` where that does not cut a surrogate pair).
pub fn utf16_prefix(s: &str, max: usize) -> &str {
    let mut units = 0;
    for (i, c) in s.char_indices() {
        units += c.len_utf16();
        if units > max {
            return &s[..i];
        }
    }
    s
}

/// Whether a number is truthy: not `0`, `-0` or `NaN`.
pub fn number_truthy(n: f64) -> bool {
    n != 0.0 && !n.is_nan()
}

/// JavaScript truthiness of a JSON value: `null`, `false`, `0`, `NaN` and `""` are falsy.
pub fn truthy(v: &Json) -> bool {
    match v {
        Json::Null => false,
        Json::Bool(b) => *b,
        Json::Number(n) => n.as_f64().is_some_and(number_truthy),
        Json::String(s) => !s.is_empty(),
        Json::Array(_) | Json::Object(_) => true,
    }
}

/// The index of an array-index property key (`"0"`, `"42"`, below 2³² − 1), which
/// JavaScript orders before all other keys of an object, ascending.
pub fn array_index(key: &str) -> Option<u32> {
    let b = key.as_bytes();
    if b.is_empty() || b.len() > 10 || (b.len() > 1 && b[0] == b'0') {
        return None;
    }
    if !b.iter().all(u8::is_ascii_digit) {
        return None;
    }
    key.parse::<u64>()
        .ok()
        .filter(|&n| n < u64::from(u32::MAX))
        .map(|n| n as u32)
}

/// `JSON.stringify` of a value as the reference holds it: array-index keys first in
/// ascending order, the other keys in insertion order, numbers as [`number`] writes them.
pub fn stringify(v: &Json) -> Vec<u8> {
    let mut out = Vec::new();
    write(&mut out, v);
    out
}

fn write(out: &mut Vec<u8>, v: &Json) {
    match v {
        Json::Null => out.extend_from_slice(b"null"),
        Json::Bool(true) => out.extend_from_slice(b"true"),
        Json::Bool(false) => out.extend_from_slice(b"false"),
        Json::Number(n) => match n.as_f64().filter(|f| f.is_finite()) {
            Some(f) => out.extend_from_slice(number(f).as_bytes()),
            None => out.extend_from_slice(b"null"),
        },
        Json::String(s) => crate::json::write_str(out, s),
        Json::Array(items) => {
            out.push(b'[');
            for (k, item) in items.iter().enumerate() {
                if k > 0 {
                    out.push(b',');
                }
                write(out, item);
            }
            out.push(b']');
        }
        Json::Object(map) => {
            let mut members: Vec<(&String, &Json)> = map.iter().collect();
            // Stable: the other keys keep their order.
            members.sort_by_key(|(k, _)| array_index(k).map_or(u64::MAX, u64::from));
            out.push(b'{');
            for (k, (key, value)) in members.into_iter().enumerate() {
                if k > 0 {
                    out.push(b',');
                }
                crate::json::write_str(out, key);
                out.push(b':');
                write(out, value);
            }
            out.push(b'}');
        }
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use serde_json::json;

    use super::*;

    fn bits(v: &Json) -> f64 {
        f64::from_bits(u64::from_str_radix(v.as_str().unwrap(), 16).unwrap())
    }

    fn lines(text: &str) -> impl Iterator<Item = Json> + '_ {
        text.lines().map(|l| serde_json::from_str(l).unwrap())
    }

    #[test]
    fn numbers_are_written_as_node_writes_them() {
        let golden = include_str!("../tests/fixtures/js/numbers.jsonl");
        let mut count = 0;
        for rec in lines(golden) {
            let n = bits(&rec["bits"]);
            assert_eq!(number(n), rec["string"], "String({n:e})");
            let json = String::from_utf8(stringify(&json_number(n))).unwrap();
            assert_eq!(json, rec["json"], "JSON.stringify({n:e})");
            count += 1;
        }
        assert!(count > 1000);
    }

    #[test]
    fn strings_are_read_as_node_reads_them() {
        let golden = include_str!("../tests/fixtures/js/parse.jsonl");
        for rec in lines(golden) {
            let input = rec["input"].as_str().unwrap();
            let want = (!rec["bits"].is_null()).then(|| bits(&rec["bits"]));
            let got = parse_number(input);
            assert_eq!(
                got.map(f64::to_bits),
                want.map(f64::to_bits),
                "Number({input:?})"
            );
        }
    }

    #[test]
    fn white_space_is_what_node_trims() {
        let golden: Json =
            serde_json::from_str(include_str!("../tests/fixtures/js/whitespace.json")).unwrap();
        let want: Vec<u32> = golden["trim"]
            .as_array()
            .unwrap()
            .iter()
            .map(|c| c.as_u64().unwrap() as u32)
            .collect();
        let got: Vec<u32> = (0..=0x10FFFF)
            .filter_map(char::from_u32)
            .filter(|&c| is_space(c))
            .map(u32::from)
            .collect();
        assert_eq!(got, want);
        assert_eq!(trim("\u{feff} a b\u{a0}\n"), "a b");
        assert_eq!(trim("\u{85}x"), "\u{85}x");
    }

    #[test]
    fn lengths_count_utf16_units() {
        assert_eq!(utf16_len(""), 0);
        assert_eq!(utf16_len("a🎉é"), 4);
        assert_eq!(utf16_len("😀😀😀"), 6);
        assert_eq!(utf16_len("€"), 1);
        assert_eq!(utf16_prefix("ab🎉c", 3), "ab");
        assert_eq!(utf16_prefix("ab🎉c", 4), "ab🎉");
        assert_eq!(utf16_prefix("abc", 10), "abc");
    }

    #[test]
    fn truthiness() {
        for v in [json!(null), json!(false), json!(0), json!(-0.0), json!("")] {
            assert!(!truthy(&v), "{v}");
        }
        for v in [
            json!(true),
            json!(1),
            json!(0.5),
            json!("0"),
            json!([]),
            json!({}),
        ] {
            assert!(truthy(&v), "{v}");
        }
        assert!(!number_truthy(f64::NAN));
    }

    #[test]
    fn stringify_orders_index_keys_first() {
        let v =
            json!({"b": 1, "2": 2.0, "a": [1e21, -0.0, "x\u{1}"], "1": {"10": 1, "9": 2}, "01": 0});
        assert_eq!(
            String::from_utf8(stringify(&v)).unwrap(),
            r#"{"1":{"9":2,"10":1},"2":2,"b":1,"a":[1e+21,0,"x\u0001"],"01":0}"#
        );
        assert_eq!(array_index("4294967294"), Some(4_294_967_294));
        assert_eq!(array_index("4294967295"), None);
        assert_eq!(array_index("-1"), None);
    }
}
