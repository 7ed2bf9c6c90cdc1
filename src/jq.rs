//! The embedded jq engine (jaq) for `--filter`.

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

    /// Runs the filter on one JSON text; returns its outputs or the first error.
    pub fn run(&self, input: &[u8]) -> Result<(Val, Vec<Val>), String> {
        let val = jaq_json::read::parse_single(input).map_err(|e| e.to_string())?;
        let ctx = Ctx::<D>::new(&self.filter.lut, Vars::new([]));
        let mut out = Vec::new();
        for r in self.filter.id.run((ctx, val.clone())).map(unwrap_valr) {
            out.push(r.map_err(|e| e.to_string())?);
        }
        Ok((val, out))
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
