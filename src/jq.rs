//! The embedded jq engine (jaq) for `--filter`.

use std::borrow::Cow;
use std::io::{self, Write};

use jaq_core::load::{Arena, File, Loader};
use jaq_core::{Compiler, Ctx, Vars, data, unwrap_valr};
use jaq_json::Val;

type D = data::JustLut<Val>;

/// Inputs nested deeper than this are not handed to the filter (its parser recurses).
pub const MAX_DEPTH: usize = 256;

pub struct Filter {
    filter: jaq_core::Filter<D>,
}

/// Line and column (1-based, characters) of `part` inside `whole`.
fn position(whole: &str, part: &str) -> (usize, usize) {
    let start = jaq_core::load::span(whole, part).start.min(whole.len());
    let (l, c) = crate::json::line_col(whole.as_bytes(), start);
    (l, c)
}

impl Filter {
    /// Compiles a jq program, with an error message that points into it.
    pub fn compile(code: &str) -> Result<Filter, String> {
        let defs = jaq_core::defs()
            .chain(jaq_std::defs())
            .chain(jaq_json::defs());
        let funs = jaq_core::funs()
            .chain(jaq_std::funs())
            .chain(jaq_json::funs());
        let loader = Loader::new(defs);
        let arena = Arena::default();
        let modules = loader
            .load(&arena, File { code, path: () })
            .map_err(|errs| {
                let mut msgs = Vec::new();
                for (_, e) in errs {
                    use jaq_core::load::Error;
                    match e {
                        Error::Io(v) => msgs.extend(v.into_iter().map(|(_, m)| m)),
                        Error::Lex(v) => msgs.extend(v.into_iter().map(|(expect, got)| {
                            let (l, c) = position(code, got);
                            let what = match expect {
                                jaq_core::load::lex::Expect::Delim(d) => match d {
                                    "(" => "a closing parenthesis",
                                    "[" => "a closing bracket",
                                    "{" => "a closing brace",
                                    _ => "a closing quote",
                                },
                                jaq_core::load::lex::Expect::Digit => "a digit",
                                jaq_core::load::lex::Expect::Ident => "an identifier",
                                jaq_core::load::lex::Expect::Escape => "an escape sequence",
                                jaq_core::load::lex::Expect::Unicode => "four hex digits",
                                _ => "a token",
                            };
                            format!("expected {what} at line {l}, column {c}")
                        })),
                        Error::Parse(v) => msgs.extend(v.into_iter().map(|(expect, got)| {
                            let (l, c) = position(code, got);
                            let found = if got.is_empty() {
                                "the end of the program".to_owned()
                            } else {
                                format!("'{}'", got.chars().take(20).collect::<String>())
                            };
                            format!(
                                "expected {} at line {l}, column {c}, found {found}",
                                expect.as_str()
                            )
                        })),
                    }
                }
                msgs.join("; ")
            })?;
        let filter = Compiler::default()
            .with_funs(funs)
            .compile(modules)
            .map_err(|errs| {
                let mut msgs = Vec::new();
                for (_, v) in errs {
                    for (name, undefined) in v {
                        let (l, c) = position(code, name);
                        msgs.push(format!(
                            "undefined {} '{name}' at line {l}, column {c}",
                            undefined.as_str()
                        ));
                    }
                }
                msgs.join("; ")
            })?;
        Ok(Filter { filter })
    }

    /// Runs the filter on one JSON text; returns its outputs or the first error. A lone
    /// surrogate escape in a string reaches the filter as U+FFFD (see
    /// [`replace_lone_surrogates`]).
    pub fn run(&self, input: &[u8]) -> Result<(Val, Vec<Val>), String> {
        let input = replace_lone_surrogates(input);
        let val = jaq_json::read::parse_single(&input).map_err(|e| e.to_string())?;
        let ctx = Ctx::<D>::new(&self.filter.lut, Vars::new([]));
        let mut out = Vec::new();
        for r in self.filter.id.run((ctx, val.clone())).map(unwrap_valr) {
            out.push(r.map_err(|e| e.to_string())?);
        }
        Ok((val, out))
    }
}

/// The four hex digits at `b[at..]` as a number.
fn hex4(b: &[u8], at: usize) -> Option<u16> {
    let digits = b.get(at..at + 4)?;
    if !digits.iter().all(u8::is_ascii_hexdigit) {
        return None;
    }
    u16::from_str_radix(std::str::from_utf8(digits).ok()?, 16).ok()
}

/// `input` (valid JSON) with every lone UTF-16 surrogate escape, a `\uD800`-`\uDBFF` not
/// followed by a `\uDC00`-`\uDFFF` or one of the latter alone, written `\ufffd`: the
/// replacement character, which is what jq makes of a lone low surrogate and what decoders
/// make of broken UTF-16. The reference writes such escapes (`JSON.stringify` of a string cut
/// inside a pair); the parser of the filter rejects them, so without this an entry the
/// session holds would be one `--filter` cannot see.
fn replace_lone_surrogates(input: &[u8]) -> Cow<'_, [u8]> {
    const LOW: std::ops::RangeInclusive<u16> = 0xdc00..=0xdfff;
    const HIGH: std::ops::RangeInclusive<u16> = 0xd800..=0xdbff;
    let mut out: Option<Vec<u8>> = None;
    let mut copied = 0; // input[..copied] is in `out` (when there is one)
    let mut i = 0;
    while let Some(p) = input.get(i..).and_then(|rest| memchr::memchr(b'\\', rest)) {
        let at = i + p;
        if input.get(at + 1) != Some(&b'u') {
            i = at + 2; // a one-character escape (or the end)
            continue;
        }
        let Some(unit) = hex4(input, at + 2) else {
            i = at + 2;
            continue;
        };
        let paired = HIGH.contains(&unit)
            && input.get(at + 6..at + 8) == Some(b"\\u")
            && hex4(input, at + 8).is_some_and(|u| LOW.contains(&u));
        if paired {
            i = at + 12;
        } else if HIGH.contains(&unit) || LOW.contains(&unit) {
            let o = out.get_or_insert_with(|| Vec::with_capacity(input.len()));
            o.extend_from_slice(&input[copied..at]);
            o.extend_from_slice(b"\\ufffd");
            copied = at + 6;
            i = at + 6;
        } else {
            i = at + 6;
        }
    }
    match out {
        None => Cow::Borrowed(input),
        Some(mut o) => {
            o.extend_from_slice(&input[copied..]);
            Cow::Owned(o)
        }
    }
}

/// Writes a value as compact JSON (or, with `raw`, a string's text without quotes).
pub fn write(w: &mut dyn Write, v: &Val, raw: bool) -> io::Result<()> {
    if raw && let Val::TStr(s) = v {
        w.write_all(s)?;
        return w.write_all(b"\n");
    }
    jaq_json::write::write(w, &jaq_json::write::Pp::default(), 0, v)?;
    w.write_all(b"\n")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fixed(s: &str) -> String {
        String::from_utf8(replace_lone_surrogates(s.as_bytes()).into_owned()).unwrap()
    }

    #[test]
    fn lone_surrogates_become_replacement_characters() {
        assert_eq!(fixed(r#""a\ud800b""#), r#""a\ufffdb""#);
        assert_eq!(fixed(r#""\uDC00""#), r#""\ufffd""#);
        assert_eq!(fixed(r#""\ud800\ud800\udc00""#), r#""\ufffd\ud800\udc00""#);
        assert_eq!(fixed(r#""\ud800\u0041""#), r#""\ufffd\u0041""#);
        assert_eq!(fixed(r#""\udfff\ud800""#), r#""\ufffd\ufffd""#);
        assert_eq!(
            fixed(r#"{"\ud800":["\udbff"]}"#),
            r#"{"\ufffd":["\ufffd"]}"#
        );
        // Pairs, escaped backslashes and other escapes stay as they are.
        for s in [
            r#""\ud83d\ude00""#,
            r#""\\ud800""#,
            r#""\\\u0041\n\"""#,
            r#""x\u00e9""#,
            r#""\""#,
            "\\",
            r#""\u+fff\ud8""#,
            "",
        ] {
            assert_eq!(fixed(s), s);
            assert!(matches!(
                replace_lone_surrogates(s.as_bytes()),
                Cow::Borrowed(_)
            ));
        }
    }

    #[test]
    fn filters_see_lone_surrogates_as_replacement_characters() {
        let f = Filter::compile(".a").unwrap();
        let (_, out) = f.run(br#"{"a":"x\ud800y"}"#).unwrap();
        let mut w = Vec::new();
        write(&mut w, &out[0], true).unwrap();
        assert_eq!(String::from_utf8(w).unwrap(), "x\u{fffd}y\n");
    }
}
