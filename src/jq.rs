//! The embedded jq engine (jaq) for `--filter`: jaq's core, standard library and JSON
//! definitions (`@sh`, `@text`, `@json`, `@html`, `@uri`, `@base64`, `@base64d` among them),
//! plus what the jq people know has and jaq leaves to its command line: `@csv`, `@tsv`,
//! `$ENV`, `$ARGS` and the variables of `--arg` and `--argjson`.

use std::borrow::Cow;
use std::io::{self, Write};

use jaq_core::load::{Arena, File, Loader};
use jaq_core::{Compiler, Ctx, ValT, Vars, data, unwrap_valr};
use jaq_json::Val;

type D = data::JustLut<Val>;

/// Inputs nested deeper than this are not handed to the filter (its parser recurses).
pub const MAX_DEPTH: usize = 256;

/// jq's `@csv` and `@tsv`, which jaq does not define: an array becomes one line of
/// comma-separated (strings quoted, `"` doubled) or tab-separated (`\t`, `\n`, `\r` and `\\`
/// escaped) values; numbers and booleans as JSON, null as nothing, anything else an error.
const DEFS: &str = r#"
def @csv:
  if type != "array" then error("\(type) (\(tojson)) cannot be csv-formatted, only an array can be")
  else map(
    if type == "string" then "\"" + (split("\"") | join("\"\"")) + "\""
    elif type == "number" or type == "boolean" then tojson
    elif . == null then ""
    else error("\(type) (\(tojson)) is not valid in a csv row") end
  ) | join(",") end;
def @tsv:
  if type != "array" then error("\(type) (\(tojson)) cannot be tsv-formatted, only an array can be")
  else map(
    if type == "string" then split("\\") | join("\\\\") | split("\t") | join("\\t")
      | split("\n") | join("\\n") | split("\r") | join("\\r")
    elif type == "number" or type == "boolean" then tojson
    elif . == null then ""
    else error("\(type) (\(tojson)) is not valid in a tsv row") end
  ) | join("\t") end;
"#;

/// The variables a program sees besides its own: `--arg NAME VALUE` (a string) and
/// `--argjson NAME JSON`, in the order given (a later one of the same name wins).
#[derive(Debug, Clone, Default)]
pub struct Globals {
    named: Vec<(String, Val)>,
}

impl Globals {
    /// `--arg NAME VALUE`.
    pub fn arg(&mut self, name: &str, value: &str) {
        self.set(name, Val::from(value.to_owned()));
    }

    /// `--argjson NAME JSON`; an error when JSON is not one JSON value.
    pub fn argjson(&mut self, name: &str, json: &str) -> Result<(), String> {
        let v = parse(json.trim().as_bytes()).map_err(|e| format!("invalid JSON: {e}"))?;
        self.set(name, v);
        Ok(())
    }

    fn set(&mut self, name: &str, v: Val) {
        self.named.retain(|(n, _)| n != name);
        self.named.push((name.to_owned(), v));
    }

    /// The names (with `$`) and values: `$ENV`, `$ARGS`, then the named ones.
    fn vars(&self) -> (Vec<String>, Vec<Val>) {
        let env = std::env::vars_os().map(|(k, v)| {
            (
                Val::from(k.to_string_lossy().into_owned()),
                Val::from(v.to_string_lossy().into_owned()),
            )
        });
        let object = |entries: Vec<(Val, Val)>| Val::from_map(entries).unwrap_or(Val::Null);
        let named = object(
            self.named
                .iter()
                .map(|(n, v)| (Val::from(n.clone()), v.clone()))
                .collect(),
        );
        let args = object(vec![
            (Val::from("positional".to_owned()), Val::from_iter([])),
            (Val::from("named".to_owned()), named),
        ]);
        let mut names = vec!["$ENV".to_owned(), "$ARGS".to_owned()];
        let mut values = vec![object(env.collect()), args];
        for (n, v) in &self.named {
            names.push(format!("${n}"));
            values.push(v.clone());
        }
        (names, values)
    }
}

pub struct Filter {
    filter: jaq_core::Filter<D>,
    /// The values of the global variables, in the order they were declared.
    vars: Vec<Val>,
}

/// Line and column (1-based, characters) of `part` inside `whole`.
fn position(whole: &str, part: &str) -> (usize, usize) {
    let start = jaq_core::load::span(whole, part).start.min(whole.len());
    let (l, c) = pi_base::json::line_col(whole.as_bytes(), start);
    (l, c)
}

impl Filter {
    /// Compiles a jq program that may use the variables of `globals` (and `$ENV`, `$ARGS`).
    pub fn with_globals(code: &str, globals: &Globals) -> Result<Filter, String> {
        let ours = jaq_core::load::parse(DEFS, |p| p.defs())
            .ok_or_else(|| "the built-in definitions do not parse".to_owned())?;
        let defs = jaq_core::defs()
            .chain(jaq_std::defs())
            .chain(jaq_json::defs())
            .chain(ours);
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
        let (names, vars) = globals.vars();
        let filter = Compiler::default()
            .with_funs(funs)
            .with_global_vars(names.iter().map(String::as_str))
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
        Ok(Filter { filter, vars })
    }

    /// Runs the filter on one JSON text; returns its outputs or the first error. A lone
    /// surrogate escape in a string reaches the filter as U+FFFD (see
    /// [`replace_lone_surrogates`]).
    pub fn run(&self, input: &[u8]) -> Result<(Val, Vec<Val>), String> {
        let val = parse(input)?;
        Ok((val.clone(), self.run_value(val)?))
    }

    /// Runs the filter on a value; returns its outputs or the first error.
    pub fn run_value(&self, val: Val) -> Result<Vec<Val>, String> {
        let ctx = Ctx::<D>::new(&self.filter.lut, Vars::new(self.vars.iter().cloned()));
        let mut out = Vec::new();
        for r in self.filter.id.run((ctx, val)).map(unwrap_valr) {
            out.push(r.map_err(|e| e.to_string())?);
        }
        Ok(out)
    }
}

/// One JSON text as a value for a filter (lone surrogate escapes as U+FFFD, see
/// [`replace_lone_surrogates`]).
pub fn parse(input: &[u8]) -> Result<Val, String> {
    let input = replace_lone_surrogates(input);
    jaq_json::read::parse_single(&input).map_err(|e| e.to_string())
}

/// An array of values (what `--slurp` hands to a filter).
pub fn array(values: Vec<Val>) -> Val {
    values.into_iter().collect()
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

    /// The outputs of `code` on `input`, each written as `-r` writes it.
    fn outputs(code: &str, globals: &Globals, input: &str) -> Result<Vec<String>, String> {
        let f = Filter::with_globals(code, globals)?;
        let (_, out) = f.run(input.as_bytes())?;
        Ok(out
            .iter()
            .map(|v| {
                let mut w = Vec::new();
                write(&mut w, v, true).unwrap();
                String::from_utf8(w)
                    .unwrap()
                    .trim_end_matches('\n')
                    .to_owned()
            })
            .collect())
    }

    #[test]
    fn format_strings() {
        let g = Globals::default();
        let run = |code: &str, input: &str| outputs(code, &g, input).unwrap();
        assert_eq!(
            run("@csv", r#"[1,"a,b","say \"hi\"",null,true,1.5]"#),
            [r#"1,"a,b","say ""hi""",,true,1.5"#]
        );
        assert_eq!(
            run("@tsv", r#"["a\tb","c\nd","e\\f",2,null,false]"#),
            [r"a\tb	c\nd	e\\f	2		false"]
        );
        assert_eq!(run("@csv", "[]"), [""]);
        assert_eq!(run("@sh", r#"["it's", 3]"#), [r"'it'\''s' 3"]);
        assert_eq!(run("@json", r#"{"a":[1]}"#), [r#"{"a":[1]}"#]);
        assert_eq!(run("@text", "[1]"), ["[1]"]);
        assert_eq!(run("@base64", r#""hi""#), ["aGk="]);
        assert_eq!(run("@base64d", r#""aGk=""#), ["hi"]);
        assert_eq!(run("@uri", r#""a b&c""#), ["a%20b%26c"]);
        assert_eq!(
            run("@html", r#""<a href='x'>""#),
            ["&lt;a href=&apos;x&apos;&gt;"]
        );
        assert_eq!(run(r#"@csv "row: \(.)""#, r#"["x"]"#), [r#"row: "x""#]);
        let err = outputs("@csv", &g, r#"{"a":1}"#).unwrap_err();
        assert!(err.contains("cannot be csv-formatted"), "{err}");
        let err = outputs("@tsv", &g, "[[1]]").unwrap_err();
        assert!(err.contains("is not valid in a tsv row"), "{err}");
    }

    #[test]
    fn named_arguments_env_and_args() {
        let mut g = Globals::default();
        g.arg("who", "-world");
        g.argjson("n", " [1, 2] ").unwrap();
        g.arg("x", "first");
        g.arg("x", "second");
        assert_eq!(
            outputs("[$who, $n, $x] | tojson", &g, "null").unwrap(),
            [r#"["-world",[1,2],"second"]"#]
        );
        assert_eq!(
            outputs("$ARGS | tojson", &g, "null").unwrap(),
            [r#"{"positional":[],"named":{"who":"-world","n":[1,2],"x":"second"}}"#]
        );
        assert_eq!(outputs("$ENV | type", &g, "null").unwrap(), ["object"]);
        assert!(g.argjson("bad", "{").is_err());
        assert!(g.argjson("two", "1 2").is_err());
        let err = Filter::with_globals("$missing", &g).err().unwrap();
        assert!(err.contains("undefined variable '$missing'"), "{err}");
        // Slurped values.
        let f = Filter::with_globals("map(.a) | add", &Globals::default()).unwrap();
        let vals = vec![parse(br#"{"a":1}"#).unwrap(), parse(br#"{"a":2}"#).unwrap()];
        let out = f.run_value(array(vals)).unwrap();
        assert_eq!(out.len(), 1);
        assert_eq!(out[0].to_string(), "3");
    }

    #[test]
    fn filters_see_lone_surrogates_as_replacement_characters() {
        let f = Filter::with_globals(".a", &Globals::default()).unwrap();
        let (_, out) = f.run(br#"{"a":"x\ud800y"}"#).unwrap();
        let mut w = Vec::new();
        write(&mut w, &out[0], true).unwrap();
        assert_eq!(String::from_utf8(w).unwrap(), "x\u{fffd}y\n");
    }
}
