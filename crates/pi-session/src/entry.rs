//! Building entry lines, and validating entries and messages given on stdin.

use std::borrow::Cow;
use std::collections::HashMap;
use std::fmt;

use pi_base::json::{self, Kind as JsonKind, RawStr};

/// Field order for a new entry, as upstream constructs each type: the base fields first,
/// except for `custom` and `custom_message`, whose own fields come first.
fn base_fields_last(ty: &str) -> bool {
    matches!(ty, "custom" | "custom_message")
}

/// Serializes a new entry line. `fields` are (key, raw JSON value) in order.
pub fn entry_line(
    ty: &str,
    id: &str,
    parent: Option<&str>,
    timestamp: &str,
    fields: &[(&str, &[u8])],
) -> Vec<u8> {
    let mut out = Vec::with_capacity(
        128 + fields
            .iter()
            .map(|(k, v)| k.len() + v.len() + 4)
            .sum::<usize>(),
    );
    out.extend_from_slice(b"{\"type\":");
    json::write_str(&mut out, ty);
    let base = |out: &mut Vec<u8>| {
        out.extend_from_slice(b",\"id\":");
        json::write_str(out, id);
        out.extend_from_slice(b",\"parentId\":");
        match parent {
            Some(p) => json::write_str(out, p),
            None => out.extend_from_slice(b"null"),
        }
        out.extend_from_slice(b",\"timestamp\":");
        json::write_str(out, timestamp);
    };
    let last = base_fields_last(ty);
    if !last {
        base(&mut out);
    }
    for (k, v) in fields {
        out.push(b',');
        json::write_str(&mut out, k);
        out.push(b':');
        out.extend_from_slice(v);
    }
    if last {
        base(&mut out);
    }
    out.push(b'}');
    out
}

/// A JSON string value.
pub fn jstr(s: &str) -> Vec<u8> {
    let mut v = Vec::with_capacity(s.len() + 2);
    json::write_str(&mut v, s);
    v
}

/// Invalid input, located in the input text.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct InputError {
    pub source: String,
    pub line: usize,
    pub column: usize,
    pub message: String,
}

impl fmt::Display for InputError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{}:{}:{}: {}",
            self.source, self.line, self.column, self.message
        )
    }
}

impl std::error::Error for InputError {}

/// One validated input record.
#[derive(Debug, Clone)]
pub struct InputRecord {
    /// Line of the record's start in the input (for messages about it).
    pub line: usize,
    pub column: usize,
    pub ty: String,
    /// The fields other than type/id/parentId/timestamp, as (key, minified raw value).
    pub fields: Vec<(String, Vec<u8>)>,
    /// The `id` the record had in the input, if any (references to it are remapped).
    pub input_id: Option<String>,
}

impl InputRecord {
    pub fn field(&self, key: &str) -> Option<&[u8]> {
        self.fields
            .iter()
            .rev()
            .find(|(k, _)| k == key)
            .map(|(_, v)| v.as_slice())
    }

    pub(crate) fn set_field(&mut self, key: &str, value: Vec<u8>) {
        if let Some(f) = self.fields.iter_mut().rev().find(|(k, _)| k == key) {
            f.1 = value;
        } else {
            self.fields.push((key.to_owned(), value));
        }
    }
}

/// Reference fields that name other entries: (entry type, field, must exist).
pub(crate) const REFERENCES: [(&str, &str, bool); 3] = [
    ("compaction", "firstKeptEntryId", true),
    ("label", "targetId", true),
    ("branch_summary", "fromId", false),
];

const THINKING_LEVELS: [&str; 7] = ["off", "minimal", "low", "medium", "high", "xhigh", "max"];
const STOP_REASONS: [&str; 5] = ["stop", "length", "toolUse", "error", "aborted"];
const ROLES: [&str; 6] = [
    "system",
    "user",
    "assistant",
    "toolResult",
    "bashExecution",
    "custom",
];

struct Checker<'a> {
    text: &'a [u8],
    source: &'a str,
}

type Check<T> = Result<T, InputError>;

/// The members of an object: (key, absolute value start, absolute value end). Keys borrow
/// from the input unless they hold escapes.
type Members<'a> = Vec<(Cow<'a, str>, usize, usize)>;

impl<'a> Checker<'a> {
    fn error(&self, offset: usize, message: String) -> InputError {
        let (line, column) = json::line_col(self.text, offset);
        InputError {
            source: self.source.to_owned(),
            line,
            column,
            message,
        }
    }

    /// Members of the object at `start..end` of `text`, as (key, abs value start, abs end).
    fn members(&self, start: usize, end: usize) -> Members<'a> {
        let text: &'a [u8] = self.text;
        let mut out = Vec::with_capacity(8);
        let ok = json::scan_object(&text[start..end], 0, |m| {
            out.push((m.key.decode(), start + m.value_start, start + m.value_end));
        });
        if ok.is_err() {
            out.clear();
        }
        out
    }

    /// The end, nesting depth and members of the object at `i` when it ends before `limit`.
    fn object_within(&self, i: usize, limit: usize) -> Option<(usize, usize, Members<'a>)> {
        let text: &'a [u8] = self.text;
        let mut out = Vec::with_capacity(8);
        let (end, depth) = json::scan_object(&text[i..limit], 0, |m| {
            out.push((m.key.decode(), i + m.value_start, i + m.value_end));
        })
        .ok()?;
        Some((i + end, depth, out))
    }

    fn kind(&self, s: usize, e: usize) -> Option<JsonKind> {
        JsonKind::of(&self.text[s..e])
    }

    fn expect(
        &self,
        obj: &[(Cow<'a, str>, usize, usize)],
        key: &str,
        path: &dyn fmt::Display,
        want: &[JsonKind],
        required: bool,
        at: usize,
    ) -> Check<Option<(usize, usize)>> {
        match obj.iter().rev().find(|(k, _, _)| k == key) {
            None if required => Err(self.error(
                at,
                format!("{path}{key} is missing (expected {})", names(want)),
            )),
            None => Ok(None),
            Some(&(_, s, e)) => {
                let k = self.kind(s, e);
                if k.is_some_and(|k| want.contains(&k)) {
                    Ok(Some((s, e)))
                } else {
                    Err(self.error(
                        s,
                        format!(
                            "{path}{key} must be {}, not {}",
                            names(want),
                            k.map_or("nothing", JsonKind::name)
                        ),
                    ))
                }
            }
        }
    }

    fn string(&self, s: usize, e: usize) -> String {
        RawStr::from_value(&self.text[s..e])
            .map(|r| r.decode().into_owned())
            .unwrap_or_default()
    }

    fn one_of(&self, span: (usize, usize), path: &dyn fmt::Display, allowed: &[&str]) -> Check<()> {
        let v = self.string(span.0, span.1);
        if allowed.contains(&v.as_str()) {
            Ok(())
        } else {
            Err(self.error(
                span.0,
                format!("{path} must be one of {}, not {v:?}", allowed.join(", ")),
            ))
        }
    }

    /// Content: a string (if allowed) or an array of blocks of the allowed types.
    fn content(
        &self,
        span: (usize, usize),
        path: &dyn fmt::Display,
        string_ok: bool,
        blocks: &[&str],
    ) -> Check<()> {
        let (s, e) = span;
        match self.kind(s, e) {
            Some(JsonKind::String) if string_ok => return Ok(()),
            Some(JsonKind::Array) => {}
            k => {
                let want = if string_ok {
                    "a string or an array of content blocks"
                } else {
                    "an array of content blocks"
                };
                return Err(self.error(
                    s,
                    format!(
                        "{path} must be {want}, not {}",
                        k.map_or("nothing", JsonKind::name)
                    ),
                ));
            }
        }
        let mut elements = Vec::new();
        let v = &self.text[s..e];
        let _ = json::for_each_element(v, |el| {
            let off = el.as_ptr() as usize - v.as_ptr() as usize;
            elements.push((s + off, s + off + el.len()));
        });
        for (n, &(bs, be)) in elements.iter().enumerate() {
            let p = Block { path, n };
            if self.kind(bs, be) != Some(JsonKind::Object) {
                return Err(self.error(bs, format!("{path}[{n}] must be a content block object")));
            }
            let m = self.members(bs, be);
            let ty = self
                .expect(&m, "type", &p, &[JsonKind::String], true, bs)?
                .map(|(a, b)| self.string(a, b))
                .unwrap_or_default();
            if !blocks.contains(&ty.as_str()) {
                return Err(self.error(
                    bs,
                    format!(
                        "{path}[{n}].type must be one of {}, not {ty:?}",
                        blocks.join(", ")
                    ),
                ));
            }
            let req: &[(&str, &[JsonKind])] = match ty.as_str() {
                "text" => &[("text", &[JsonKind::String])],
                "image" => &[
                    ("data", &[JsonKind::String]),
                    ("mimeType", &[JsonKind::String]),
                ],
                "thinking" => &[("thinking", &[JsonKind::String])],
                "toolCall" => &[
                    ("id", &[JsonKind::String]),
                    ("name", &[JsonKind::String]),
                    ("arguments", &[JsonKind::Object]),
                ],
                _ => &[],
            };
            for (key, want) in req {
                self.expect(&m, key, &p, want, true, bs)?;
            }
        }
        Ok(())
    }

    /// Validates a message object; returns whether it has a `timestamp`.
    fn message(&self, s: usize, e: usize, path: &str) -> Check<bool> {
        if self.kind(s, e) != Some(JsonKind::Object) {
            return Err(self.error(s, format!("{}must be a message object", path_prefix(path))));
        }
        self.message_members(&self.members(s, e), s, path)
    }

    /// [`Checker::message`] of an object whose members are known.
    fn message_members(&self, m: &Members<'a>, s: usize, path: &str) -> Check<bool> {
        use JsonKind::{Array, Bool, Number, Object, String as Str};
        let role_span = self.expect(m, "role", &path, &[Str], true, s)?;
        let role = role_span
            .map(|(a, b)| self.string(a, b))
            .unwrap_or_default();
        let at = role_span.map_or(s, |r| r.0);
        let f = |key: &str, want: &[JsonKind], req: bool| self.expect(m, key, &path, want, req, s);
        match role.as_str() {
            "system" => self.system_message(m, s, path)?,
            "user" => {
                let c = f("content", &[Str, Array], true)?;
                if let Some(c) = c {
                    self.content(c, &format_args!("{path}content"), true, &["text", "image"])?;
                }
            }
            "assistant" => {
                if let Some(c) = f("content", &[Array], true)? {
                    self.content(
                        c,
                        &format_args!("{path}content"),
                        false,
                        &["text", "thinking", "toolCall"],
                    )?;
                }
                f("api", &[Str], true)?;
                f("provider", &[Str], true)?;
                f("model", &[Str], true)?;
                if let Some((us, ue)) = f("usage", &[Object], true)? {
                    let um = self.members(us, ue);
                    for k in ["input", "output", "cacheRead", "cacheWrite"] {
                        self.expect(&um, k, &format_args!("{path}usage."), &[Number], true, us)?;
                    }
                }
                if let Some(sr) = f("stopReason", &[Str], true)? {
                    self.one_of(sr, &format_args!("{path}stopReason"), &STOP_REASONS)?;
                }
                f("errorMessage", &[Str], false)?;
            }
            "toolResult" => {
                f("toolCallId", &[Str], true)?;
                f("toolName", &[Str], true)?;
                if let Some(c) = f("content", &[Array], true)? {
                    self.content(c, &format_args!("{path}content"), false, &["text", "image"])?;
                }
                f("isError", &[Bool], true)?;
            }
            "bashExecution" => {
                f("command", &[Str], true)?;
                f("output", &[Str], true)?;
                f("exitCode", &[Number], false)?;
                f("cancelled", &[Bool], true)?;
                f("truncated", &[Bool], true)?;
                f("fullOutputPath", &[Str], false)?;
                f("excludeFromContext", &[Bool], false)?;
            }
            "custom" => {
                f("customType", &[Str], true)?;
                if let Some(c) = f("content", &[Str, Array], true)? {
                    self.content(c, &format_args!("{path}content"), true, &["text", "image"])?;
                }
                f("display", &[Bool], true)?;
            }
            "branchSummary" | "compactionSummary" => {
                return Err(self.error(
                    at,
                    format!(
                        "{path}role {role:?} is built from branch_summary/compaction entries and is never stored as a message; append a {} entry instead",
                        if role == "branchSummary" { "branch_summary" } else { "compaction" }
                    ),
                ));
            }
            _ => {
                return Err(self.error(
                    at,
                    format!(
                        "{path}role must be one of {}, not {role:?}",
                        ROLES.join(", ")
                    ),
                ));
            }
        }
        Ok(f("timestamp", &[Number], false)?.is_some())
    }

    /// A system message (reference 1.6): the prompt as `content` and/or named `sections`
    /// (`null` removes one), and the tools it declares (`toolsAdded`) or withdraws
    /// (`toolsRemoved`).
    fn system_message(&self, m: &Members<'a>, s: usize, path: &str) -> Check<()> {
        use JsonKind::{Array, Null, Object, String as Str};
        let f = |key: &str, want: &[JsonKind], req: bool| self.expect(m, key, &path, want, req, s);
        if let Some(c) = f("content", &[Str, Array, Null], false)?
            && self.kind(c.0, c.1) != Some(Null)
        {
            self.content(c, &format_args!("{path}content"), true, &["text"])?;
        }
        if let Some((ss, se)) = f("sections", &[Object], false)? {
            let sm = self.members(ss, se);
            let sp = format!("{path}sections.");
            for (k, _, _) in &sm {
                self.expect(&sm, k, &sp, &[Str, Null], true, ss)?;
            }
        }
        for key in ["toolsAdded", "toolsRemoved"] {
            let Some((ts, te)) = f(key, &[Array], false)? else {
                continue;
            };
            let mut tools = Vec::new();
            let v = &self.text[ts..te];
            let _ = json::for_each_element(v, |el| {
                let off = el.as_ptr() as usize - v.as_ptr() as usize;
                tools.push((ts + off, ts + off + el.len()));
            });
            for (n, &(a, b)) in tools.iter().enumerate() {
                if self.kind(a, b) != Some(Object) {
                    return Err(self.error(a, format!("{path}{key}[{n}] must be a tool object")));
                }
                let tm = self.members(a, b);
                self.expect(
                    &tm,
                    "name",
                    &format_args!("{path}{key}[{n}]."),
                    &[Str],
                    true,
                    a,
                )?;
            }
        }
        Ok(())
    }

    /// Validates an entry object of type `ty`, whose members are `m`; for a `message` entry,
    /// returns whether its message has a `timestamp`.
    fn entry(&self, m: &Members<'a>, s: usize, ty: &str) -> Check<Option<bool>> {
        use JsonKind::{Array, Bool, Number, Object, String as Str};
        let f = |key: &str, want: &[JsonKind], req: bool| self.expect(m, key, &"", want, req, s);
        match ty {
            "message" => {
                if let Some((ms, me)) = f("message", &[Object], true)? {
                    return self.message(ms, me, "message.").map(Some);
                }
            }
            "thinking_level_change" => {
                if let Some(t) = f("thinkingLevel", &[Str], true)? {
                    self.one_of(t, &"thinkingLevel", &THINKING_LEVELS)?;
                }
            }
            "model_change" => {
                f("provider", &[Str], true)?;
                f("modelId", &[Str], true)?;
            }
            "compaction" => {
                f("summary", &[Str], true)?;
                f("firstKeptEntryId", &[Str], true)?;
                f("tokensBefore", &[Number], true)?;
                f("fromHook", &[Bool], false)?;
                f("usage", &[Object], false)?;
                if let Some((ms, me)) = f("systemMessage", &[Object], false)? {
                    let mm = self.members(ms, me);
                    let role = self.expect(&mm, "role", &"systemMessage.", &[Str], true, ms)?;
                    if let Some(r) = role {
                        self.one_of(r, &"systemMessage.role", &["system"])?;
                    }
                    self.system_message(&mm, ms, "systemMessage.")?;
                }
            }
            "context_edit" => {
                f("targetId", &[Str], true)?;
                if let Some((rs, re)) = f("replacement", &[Object, JsonKind::Null], true)?
                    && self.kind(rs, re) == Some(Object)
                {
                    let rm = self.members(rs, re);
                    if let Some(c) =
                        self.expect(&rm, "content", &"replacement.", &[Str, Array], true, rs)?
                    {
                        self.content(
                            c,
                            &"replacement.content",
                            true,
                            &["text", "image", "thinking", "toolCall"],
                        )?;
                    }
                }
            }
            "usage" => {
                f("kind", &[Str], true)?;
                f("provider", &[Str], true)?;
                f("model", &[Str], true)?;
                if let Some((us, ue)) = f("usage", &[Object], true)? {
                    let um = self.members(us, ue);
                    for k in ["input", "output", "cacheRead", "cacheWrite"] {
                        self.expect(&um, k, &"usage.", &[Number], true, us)?;
                    }
                }
            }
            "branch_summary" => {
                f("fromId", &[Str], true)?;
                f("summary", &[Str], true)?;
                f("fromHook", &[Bool], false)?;
            }
            "custom" => {
                f("customType", &[Str], true)?;
            }
            "custom_message" => {
                f("customType", &[Str], true)?;
                if let Some(c) = f("content", &[Str, Array], true)? {
                    self.content(c, &"content", true, &["text", "image"])?;
                }
                f("display", &[Bool], true)?;
            }
            "label" => {
                f("targetId", &[Str], true)?;
                f("label", &[Str], false)?;
            }
            "session_info" => {
                f("name", &[Str], false)?;
            }
            "session" => {
                return Err(self.error(
                    s,
                    "a session header cannot be appended (use `pi session new`)".into(),
                ));
            }
            _ => {}
        }
        Ok(None)
    }
}

/// The path of block `n` of a content array, for messages about its fields.
struct Block<'p> {
    path: &'p dyn fmt::Display,
    n: usize,
}

impl fmt::Display for Block<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}[{}].", self.path, self.n)
    }
}

fn path_prefix(path: &str) -> String {
    match path.strip_suffix('.') {
        Some(p) => format!("{p} "),
        None => String::new(),
    }
}

fn names(kinds: &[JsonKind]) -> String {
    let v: Vec<&str> = kinds.iter().map(|k| k.name()).collect();
    v.join(" or ")
}

/// Line and column (1-based, characters) of offsets met in increasing order, each counted on
/// from the one before, so that locating every record costs one pass over the input, not one
/// pass per record.
struct Positions<'a> {
    text: &'a [u8],
    offset: usize,
    line: usize,
    line_start: usize,
    column: usize,
}

impl<'a> Positions<'a> {
    /// Positions counted on from `offset` (a character boundary), itself counted from the
    /// start.
    fn starting_at(text: &'a [u8], offset: usize) -> Positions<'a> {
        let offset = offset.min(text.len());
        let (line, column) = json::line_col(text, offset);
        Positions {
            text,
            offset,
            line,
            line_start: memchr::memrchr(b'\n', &text[..offset]).map_or(0, |p| p + 1),
            column,
        }
    }

    /// The position of `offset` (a character boundary). Offsets before the previous one are
    /// counted from the start (as [`json::line_col`] does).
    fn at(&mut self, offset: usize) -> (usize, usize) {
        let offset = offset.min(self.text.len());
        if offset < self.offset {
            return json::line_col(self.text, offset);
        }
        let gap = &self.text[self.offset..offset];
        match memchr::memrchr(b'\n', gap) {
            Some(last) => {
                self.line += memchr::memchr_iter(b'\n', gap).count();
                self.line_start = self.offset + last + 1;
                self.column = 1 + chars(&self.text[self.line_start..offset]);
            }
            None => self.column += chars(gap),
        }
        self.offset = offset;
        (self.line, self.column)
    }
}

/// Number of characters in `b`, counted as [`json::line_col`] counts them.
fn chars(b: &[u8]) -> usize {
    match std::str::from_utf8(b) {
        Ok(s) => s.chars().count(),
        Err(_) => String::from_utf8_lossy(b).chars().count(),
    }
}

/// The offset of the first byte of `text` that is not UTF-8, and a description of it.
fn first_invalid_utf8(text: &[u8]) -> Option<(usize, String)> {
    let e = std::str::from_utf8(text).err()?;
    let at = e.valid_up_to();
    let what = match e.error_len() {
        Some(_) => format!("byte 0x{:02x} is not valid here", text[at]),
        None => "the input ends inside a character".to_owned(),
    };
    Some((
        at,
        format!("invalid UTF-8: {what} (input must be UTF-8 text)"),
    ))
}

/// The end and depth of the JSON value at `i`, or the error that says where it goes wrong
/// (the first byte that is not UTF-8, when that comes first).
fn scan(
    ck: &Checker<'_>,
    i: usize,
    bad_utf8: &Option<(usize, String)>,
) -> Result<(usize, usize), InputError> {
    let text = ck.text;
    json::scan_value(text, i).map_err(|e| {
        if let Some((at, msg)) = &bad_utf8
            && *at <= e.offset
        {
            return ck.error(*at, msg.clone());
        }
        if json::skip_ws(text, e.offset) >= text.len() {
            // The input ends inside the value: point after its last character.
            let last = text.len() - text.iter().rev().take_while(|&&c| json::is_ws(c)).count();
            let (l, c) = json::line_col(text, i);
            ck.error(
                last,
                format!(
                    "invalid JSON: the input ends inside the value that starts at {l}:{c} ({e})"
                ),
            )
        } else {
            ck.error(e.offset, format!("invalid JSON: {e}"))
        }
    })
}

/// Parses and validates every JSON value in `text` (JSONL, or any whitespace-separated JSON
/// values): a bare message (an object with `role` and no `type`) becomes a `message` record;
/// an entry keeps its type and fields. The text must be UTF-8 (bytes that are not are an
/// error at their position, like any other). Nothing is returned unless all of it is valid.
///
/// A large input is cut at line breaks into parts parsed at once on several threads; a part
/// whose start turns out to be inside a value of the part before (a value over several lines)
/// is parsed again from where that one ended. Records and errors are the same as in one pass:
/// the first error in the input is the one returned.
pub fn parse_input(text: &[u8], source: &str, now_ms: i64) -> Result<Vec<InputRecord>, InputError> {
    let ck = Checker { text, source };
    let bad_utf8 = first_invalid_utf8(text);
    let bounds = parts(text);
    let run = |from: usize, limit: usize| parse_range(&ck, &bad_utf8, from, limit, now_ms);
    if bounds.len() <= 2 {
        return run(json::skip_ws(text, 0), text.len()).map(|(records, _)| records);
    }
    let ranges: Vec<(usize, usize)> = bounds.windows(2).map(|w| (w[0], w[1])).collect();
    let threads = ranges.len();
    let results = pi_base::par::map(ranges, threads, |(from, limit)| run(from, limit));
    let mut out = Vec::new();
    let mut expected = bounds[0];
    for (k, result) in results.into_iter().enumerate() {
        let (from, limit) = (bounds[k], bounds[k + 1]);
        let result = if from == expected {
            result
        } else {
            // The part before ended past this one's start.
            run(expected, limit.max(expected))
        };
        let (records, next) = result?;
        out.extend(records);
        expected = next;
    }
    Ok(out)
}

/// Records parsed from a part of the input, and where the next value starts.
type Parsed = Result<(Vec<InputRecord>, usize), InputError>;

/// Where the input is cut for parsing on several threads: offsets just after line breaks
/// (and whitespace), the first value's start first and the end of the input last.
fn parts(text: &[u8]) -> Vec<usize> {
    const SMALLEST: usize = 4 << 20;
    let start = json::skip_ws(text, 0);
    let threads = pi_base::par::threads_at_most(8);
    let mut bounds = vec![start];
    if threads > 1 && text.len() >= SMALLEST {
        for k in 1..threads {
            let target = text.len() / threads * k;
            let Some(p) = memchr::memchr(b'\n', &text[target..]) else {
                break;
            };
            let b = json::skip_ws(text, target + p + 1);
            if b > *bounds.last().unwrap_or(&0) && b < text.len() {
                bounds.push(b);
            }
        }
    }
    bounds.push(text.len());
    bounds
}

/// Parses the values that start at or after `from` and before `limit` (the last may end past
/// it). Returns them and the offset of the next value (or the end of the input).
fn parse_range(
    ck: &Checker<'_>,
    bad_utf8: &Option<(usize, String)>,
    from: usize,
    limit: usize,
    now_ms: i64,
) -> Parsed {
    let text = ck.text;
    let mut positions = Positions::starting_at(text, from);
    let mut out = Vec::new();
    // Values from here on share their line with the one before: they are scanned on their own
    // (the one-line shortcut would look at the rest of the line again for each).
    let mut shared_line_until = 0;
    let mut i = from;
    while i < text.len() && i < limit {
        let line_end = if i < shared_line_until {
            shared_line_until
        } else {
            memchr::memchr(b'\n', &text[i..]).map_or(text.len(), |p| i + p)
        };
        let own_line = i >= shared_line_until;
        let (end, members) = object_at(ck, bad_utf8, i, own_line.then_some(line_end))?;
        let next = json::skip_ws(text, end);
        if next < line_end {
            shared_line_until = line_end;
        }
        let at = positions.at(i);
        let record = if let Some(&(_, ts, te)) = last(&members, "type") {
            entry_record(ck, &members, i, (ts, te), at, now_ms)?
        } else if last(&members, "role").is_some() {
            message_record(ck, &members, (i, end), at, now_ms)?
        } else {
            return Err(ck.error(
                i,
                "expected an entry (an object with \"type\") or a message (an object with \"role\")"
                    .into(),
            ));
        };
        out.push(record);
        i = next;
    }
    Ok((out, i))
}

/// The end and the members of the value at `i`, which must be valid UTF-8, nested at most
/// 512 levels deep and an object. With `line_end` (the value starts its line), an object
/// that ends on its line is scanned once for its end and members (JSONL).
fn object_at<'a>(
    ck: &Checker<'a>,
    bad_utf8: &Option<(usize, String)>,
    i: usize,
    line_end: Option<usize>,
) -> Check<(usize, Members<'a>)> {
    let one_line = match line_end {
        Some(line_end) if ck.text[i] == b'{' => ck.object_within(i, line_end),
        _ => None,
    };
    let (end, depth, known) = match one_line {
        Some((end, depth, members)) => (end, depth, Some(members)),
        None => {
            let (end, depth) = scan(ck, i, bad_utf8)?;
            (end, depth, None)
        }
    };
    if let Some((at, msg)) = &bad_utf8
        && *at < end
    {
        return Err(ck.error(*at, msg.to_owned()));
    }
    if depth > 512 {
        return Err(ck.error(i, "JSON nested more than 512 levels deep".into()));
    }
    if ck.kind(i, end) != Some(JsonKind::Object) {
        return Err(ck.error(
            i,
            format!(
                "expected an entry object (with \"type\") or a message object (with \"role\"), not {}",
                ck.kind(i, end).map_or("nothing", JsonKind::name)
            ),
        ));
    }
    Ok((end, known.unwrap_or_else(|| ck.members(i, end))))
}

/// The last member with the key `key` (as with any repeated key).
fn last<'m, 'a>(members: &'m Members<'a>, key: &str) -> Option<&'m (Cow<'a, str>, usize, usize)> {
    members.iter().rev().find(|(k, _, _)| k == key)
}

/// The record of an entry object at `i` whose `type` is at `ts..te`: checked, and its
/// message stamped with `now_ms` when it has no timestamp.
fn entry_record<'a>(
    ck: &Checker<'a>,
    members: &Members<'a>,
    i: usize,
    (ts, te): (usize, usize),
    (line, column): (usize, usize),
    now_ms: i64,
) -> Check<InputRecord> {
    if ck.kind(ts, te) != Some(JsonKind::String) {
        return Err(ck.error(ts, "type must be a string".into()));
    }
    let ty = ck.string(ts, te);
    let has_ts = ck.entry(members, i, &ty)?;
    // The message validated is the last one (as with any repeated key).
    let checked = members.iter().rposition(|(k, _, _)| k == "message");
    let input_id = last(members, "id")
        .filter(|(_, s, e)| ck.kind(*s, *e) == Some(JsonKind::String))
        .map(|(_, s, e)| ck.string(*s, *e));
    let mut fields = Vec::new();
    for (n, (k, s, e)) in members.iter().enumerate() {
        if matches!(k.as_ref(), "type" | "id" | "parentId" | "timestamp") {
            continue;
        }
        let mut v = compact(&ck.text[*s..*e]).into_owned();
        if ty == "message" && k == "message" {
            let stamped = match has_ts {
                Some(has) if checked == Some(n) => has,
                _ => message_has_timestamp(&v),
            };
            if !stamped {
                v = add_timestamp(&v, now_ms);
            }
        }
        fields.push((k.to_string(), v));
    }
    Ok(InputRecord {
        line,
        column,
        ty,
        fields,
        input_id,
    })
}

/// The record of a bare message object at `i..end`: checked, and stamped with `now_ms`
/// when it has no timestamp.
fn message_record<'a>(
    ck: &Checker<'a>,
    members: &Members<'a>,
    (i, end): (usize, usize),
    (line, column): (usize, usize),
    now_ms: i64,
) -> Check<InputRecord> {
    let has_ts = ck.message_members(members, i, "")?;
    let mut msg = compact(&ck.text[i..end]).into_owned();
    if !has_ts {
        msg = add_timestamp(&msg, now_ms);
    }
    Ok(InputRecord {
        line,
        column,
        ty: "message".into(),
        fields: vec![("message".into(), msg)],
        input_id: None,
    })
}

/// A valid JSON value without whitespace between its tokens: itself when it has none (as
/// `pi session log` writes entries), found without copying it.
fn compact(value: &[u8]) -> Cow<'_, [u8]> {
    // Raw tabs, carriage returns and line feeds cannot be inside strings: any is whitespace
    // between tokens. A space can be either; strings are skipped to tell.
    if memchr::memchr3(b'\n', b'\r', b'\t', value).is_some() {
        return json::minify(value);
    }
    let mut i = 0;
    while let Some(p) = memchr::memchr2(b'"', b' ', &value[i..]) {
        let at = i + p;
        if value[at] == b' ' {
            return json::minify(value);
        }
        // Past the string (the value is valid: an escape is a backslash and the character
        // after it, whatever follows).
        i = at + 1;
        loop {
            match memchr::memchr2(b'"', b'\\', &value[i.min(value.len())..]) {
                Some(q) if value[i + q] == b'\\' => i += q + 2,
                Some(q) => {
                    i += q + 1;
                    break;
                }
                None => return json::minify(value),
            }
        }
    }
    Cow::Borrowed(value)
}

fn message_has_timestamp(msg: &[u8]) -> bool {
    json::get(msg, "timestamp").is_some()
}

fn add_timestamp(msg: &[u8], now_ms: i64) -> Vec<u8> {
    super::upgrade::splice(msg, &[("timestamp", Some(now_ms.to_string().into_bytes()))])
}

/// Replaces references to ids given in the input with the ids the records were written
/// under. Returns the references that must exist in the file (record index, field, id).
pub fn remap_references(
    records: &mut [InputRecord],
    new_ids: &HashMap<String, String>,
) -> Vec<(usize, &'static str, String)> {
    let mut must_exist = Vec::new();
    for (n, r) in records.iter_mut().enumerate() {
        for (ty, field, required) in REFERENCES {
            if r.ty != ty {
                continue;
            }
            let Some(v) = r
                .field(field)
                .and_then(RawStr::from_value)
                .map(|s| s.decode().into_owned())
            else {
                continue;
            };
            if let Some(new) = new_ids.get(&v) {
                r.set_field(field, jstr(new));
            } else if required {
                must_exist.push((n, field, v));
            }
        }
    }
    must_exist
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(s: &str) -> Result<Vec<InputRecord>, InputError> {
        parse_input(s.as_bytes(), "stdin", 1000)
    }

    #[test]
    fn wraps_bare_messages_and_adds_timestamps() {
        let r = parse(r#"{"role":"user","content":"hi"}"#).unwrap();
        assert_eq!(r[0].ty, "message");
        assert_eq!(
            r[0].field("message").unwrap(),
            br#"{"role":"user","content":"hi","timestamp":1000}"#
        );
    }

    #[test]
    fn keeps_entry_fields_in_order() {
        let r = parse(
            r#"{"type":"custom","id":"x","customType":"a","data": {"k" : 1},"timestamp":"t"}"#,
        )
        .unwrap();
        let keys: Vec<&str> = r[0].fields.iter().map(|(k, _)| k.as_str()).collect();
        assert_eq!(keys, ["customType", "data"]);
        assert_eq!(r[0].field("data").unwrap(), br#"{"k":1}"#);
        assert_eq!(r[0].input_id.as_deref(), Some("x"));
    }

    #[test]
    fn errors_name_line_column_and_field() {
        let e = parse("{\"role\":\"user\",\"content\":\"a\"}\n{\"role\":\"user\",\"content\":42}")
            .unwrap_err();
        assert_eq!((e.line, e.column), (2, 26));
        assert!(
            e.message.contains("content must be a string or an array"),
            "{}",
            e.message
        );
        let e = parse("{\"role\":\"user\"").unwrap_err();
        assert_eq!(e.line, 1);
        assert!(e.message.starts_with("invalid JSON"));
        let e = parse(r#"{"type":"thinking_level_change","thinkingLevel":"ultra"}"#).unwrap_err();
        assert!(e.message.contains("one of off, minimal"), "{}", e.message);
        let e = parse(r#"{"role":"robot"}"#).unwrap_err();
        assert!(e.message.contains("role must be one of"), "{}", e.message);
        let e = parse("[1]").unwrap_err();
        assert!(e.message.contains("not an array"), "{}", e.message);
    }

    #[test]
    fn positions_counted_on_agree_with_counting_from_the_start() {
        let text = "{\"a\":1}\n\n  {\"é\":\"ü\"} {\"b\":[\n1]}\r\n\t{}\n😀😀 x\n\nyz".as_bytes();
        let boundaries: Vec<usize> = (0..=text.len())
            .filter(|&o| o == text.len() || (text[o] as i8) >= -0x40)
            .collect();
        for step in 1..5 {
            let mut p = Positions::starting_at(text, 0);
            for &o in boundaries.iter().step_by(step) {
                assert_eq!(p.at(o), json::line_col(text, o), "offset {o}, step {step}");
            }
            // Going back is answered too.
            assert_eq!(p.at(3), json::line_col(text, 3));
        }
    }

    #[test]
    fn records_are_located_on_every_line_of_a_long_input() {
        let mut text = String::new();
        let mut starts = Vec::new();
        for n in 0..3000 {
            let pad = " ".repeat(n % 7);
            let sep = if n % 5 == 0 { " " } else { "\n" };
            text.push_str(&pad);
            starts.push(text.len());
            text.push_str(&format!("{{\"role\":\"user\",\"content\":\"ü{n}\"}}{sep}"));
        }
        let recs = parse(&text).unwrap();
        assert_eq!(recs.len(), starts.len());
        for (r, &o) in recs.iter().zip(&starts) {
            assert_eq!((r.line, r.column), json::line_col(text.as_bytes(), o));
        }
        // An error after them all is still placed exactly.
        text.push_str("\n  {\"role\":\"user\",\"content\":7}");
        let e = parse(&text).unwrap_err();
        let (l, _) = json::line_col(text.as_bytes(), text.len());
        assert_eq!((e.line, e.column), (l, 28));
    }

    #[test]
    fn bytes_that_are_not_utf8_are_errors_where_they_are() {
        let p = |b: &[u8]| parse_input(b, "stdin", 0);
        let e = p(b"{\"role\":\"user\",\"content\":\"ok\"}\n{\"role\":\"user\",\"content\":\"\xc3\xa9\xff\"}")
            .unwrap_err();
        assert_eq!((e.line, e.column), (2, 28));
        assert!(
            e.message.starts_with("invalid UTF-8: byte 0xff"),
            "{}",
            e.message
        );
        // Between values, and cut inside a character at the end.
        let e = p(b"{\"role\":\"user\",\"content\":\"ok\"}\n\xfe").unwrap_err();
        assert_eq!((e.line, e.column), (2, 1));
        let e = p(b"{\"role\":\"user\",\"content\":\"ok\xe2\x82").unwrap_err();
        assert_eq!((e.line, e.column), (1, 29));
        assert!(
            e.message.contains("ends inside a character"),
            "{}",
            e.message
        );
        // An earlier problem is reported first.
        let e = p(b"{\"role\":\"user\",\"content\":1}\n{\"role\":\"user\",\"content\":\"\xff\"}")
            .unwrap_err();
        assert_eq!(e.line, 1);
        // Escapes are not bytes: a lone surrogate escape is valid JSON text.
        assert!(p(br#"{"role":"user","content":"\ud800"}"#).is_ok());
    }

    #[test]
    fn compact_values_are_borrowed_and_others_minified() {
        for v in [
            r#"{"a":"x y","b":[1,2,{"c":" "}],"d":"\" \\"}"#,
            r#""just a string with spaces""#,
            "[]",
            "12",
        ] {
            assert!(matches!(compact(v.as_bytes()), Cow::Borrowed(_)), "{v}");
        }
        for v in [
            "{\"a\": 1}",
            "{\"a\":\"x y\"\n}",
            "[1,\t2]",
            "{\"a\":\"q\\\" \" ,\"b\":1}",
            "[\"a\",\r\"b\"]",
        ] {
            let c = compact(v.as_bytes());
            assert!(matches!(c, Cow::Owned(_)), "{v}");
            assert_eq!(c, json::minify(v.as_bytes()), "{v}");
        }
    }

    /// An input of `n` values over several lines each (so that cuts fall inside values),
    /// with the offsets where the values start.
    fn pretty_input(n: usize) -> (String, Vec<usize>) {
        let mut text = String::new();
        let mut starts = Vec::new();
        for k in 0..n {
            starts.push(text.len());
            text.push_str(&format!(
                "{{\n  \"role\": \"user\",\n  \"content\": [\n    {{\"type\": \"text\", \"text\": \"é {k} {}\"}}\n  ]\n}}\n",
                "w".repeat(k % 300)
            ));
        }
        (text, starts)
    }

    #[test]
    fn large_inputs_parsed_in_parts_give_what_one_pass_gives() {
        assert!(parts(b"{}\n{}").len() == 2, "small inputs are not cut");
        // JSONL, and values over several lines, each well over the size that is cut.
        let mut jsonl = String::new();
        let mut jsonl_starts = Vec::new();
        for k in 0..40_000 {
            jsonl_starts.push(jsonl.len());
            jsonl.push_str(&format!(
                "{{\"role\":\"user\",\"content\":\"ü {k} {}\"}}\n",
                "v".repeat(k % 200)
            ));
        }
        let (pretty, pretty_starts) = pretty_input(30_000);
        for (text, starts) in [(&jsonl, &jsonl_starts), (&pretty, &pretty_starts)] {
            assert!(text.len() > 4 << 20);
            let recs = parse(text).unwrap();
            assert_eq!(recs.len(), starts.len());
            // (Counting from the start for each would take long: a sample, and the last.)
            for (r, &o) in recs
                .iter()
                .zip(starts)
                .step_by(331)
                .chain(recs.iter().zip(starts).next_back())
            {
                assert_eq!((r.line, r.column), json::line_col(text.as_bytes(), o));
            }
            // An error near the end is found where it is...
            let mut bad = text.clone();
            bad.push_str("{\"role\":\"user\",\"content\":false}\n");
            let e = parse(&bad).unwrap_err();
            assert_eq!(e.line, text.lines().count() + 1);
            assert_eq!(e.column, 26);
            // ... and one near the start comes first.
            let bad = format!("{{\"role\":\"user\",\"content\":1}}\n{bad}");
            assert_eq!(parse(&bad).unwrap_err().line, 1);
        }
    }

    #[test]
    fn entry_line_orders_keys_like_upstream() {
        assert_eq!(
            entry_line("label", "a", Some("b"), "t", &[("targetId", b"\"c\"")]),
            br#"{"type":"label","id":"a","parentId":"b","timestamp":"t","targetId":"c"}"#
        );
        assert_eq!(
            entry_line("custom", "a", None, "t", &[("customType", b"\"x\"")]),
            br#"{"type":"custom","customType":"x","id":"a","parentId":null,"timestamp":"t"}"#
        );
    }
}
