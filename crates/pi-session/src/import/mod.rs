//! Importing other agents' session files (Claude Code, Codex CLI) as pi sessions.
//!
//! [`convert`] reads a source file as a stream and turns each conversation in it into a
//! [`Part`]: the entry lines of one pi session, spooled to an unnamed temporary file, with
//! ids derived from the source's own ids (so that importing again yields the same ids), and
//! what was found on the way ([`Stats`], skipped lines, tree repairs). [`write_part`] then
//! writes a part as a new session file, or appends what an existing import of the same
//! source lacks (nothing, when the source has not grown).
//!
//! Entries are laid out so that the reference reads them as the source meant: the
//! conversation entries in source order, the main thread's newest entry last (it is the
//! leaf), and everything that has no place in the conversation (metadata lines, progress
//! lines, unknown line types) kept as `custom` entries on a chain of their own, written before
//! the conversation.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::fs::File;
use std::io::{self, BufRead, BufReader, BufWriter, Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};

use serde_json::{Map, Value, json};

use super::append::Appender;
use super::entry;
use pi_base::{clock, json as pjson};

pub mod claude;
pub mod codex;

/// A source format.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    Claude,
    Codex,
}

impl Format {
    pub fn as_str(self) -> &'static str {
        match self {
            Format::Claude => "claude",
            Format::Codex => "codex",
        }
    }

    /// The `customType` of the `custom` entries that keep what does not map.
    pub fn custom_type(self) -> &'static str {
        match self {
            Format::Claude => "import.claude",
            Format::Codex => "import.codex",
        }
    }
}

#[derive(Debug, thiserror::Error)]
pub enum ImportError {
    #[error("cannot read {path}")]
    Read {
        path: PathBuf,
        #[source]
        source: io::Error,
    },
    #[error("cannot write {path}")]
    Write {
        path: PathBuf,
        #[source]
        source: io::Error,
    },
    #[error("{path} is neither a Claude Code nor a Codex CLI session file")]
    Unknown { path: PathBuf },
    #[error("{path} holds no conversation to import")]
    Empty { path: PathBuf },
    #[error(transparent)]
    Append(#[from] super::append::AppendError),
}

/// A line left out, and why.
#[derive(Debug, Clone)]
pub struct Skipped {
    pub line: u64,
    pub reason: String,
}

/// A repair of the source's tree.
#[derive(Debug, Clone)]
pub struct Repair {
    pub line: u64,
    /// `dangling-parent`, `cycle`, `duplicate-uuid`, or `null-parent` (a message line
    /// without a parent after the first, chained to the line before it).
    pub kind: &'static str,
    /// The uuid concerned (the missing parent, the entry made a root, the duplicate).
    pub uuid: String,
}

/// Token counts of one message, in pi's terms.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Tokens {
    pub input: u64,
    pub output: u64,
    pub cache_read: u64,
    pub cache_write: u64,
}

/// A cost in dollars, split as pi's `usage.cost`.
#[derive(Debug, Clone, Copy, Default)]
pub struct Cost {
    pub input: f64,
    pub output: f64,
    pub cache_read: f64,
    pub cache_write: f64,
}

impl Cost {
    pub fn total(&self) -> f64 {
        self.input + self.output + self.cache_read + self.cache_write
    }
}

/// Prices a message's tokens: (provider, model, tokens) → cost, `None` when unknown.
pub type Pricer<'a> = &'a (dyn Fn(&str, &str, &Tokens) -> Option<Cost> + Sync);

/// Usage summed for one model.
#[derive(Debug, Clone, Copy, Default)]
pub struct UsageSum {
    pub messages: u64,
    pub tokens: Tokens,
    pub cost: f64,
}

/// What a part holds.
#[derive(Debug, Clone, Default)]
pub struct Stats {
    /// Messages by role (`user`, `assistant`, `toolResult`).
    pub messages: BTreeMap<String, u64>,
    pub compactions: u64,
    pub model_changes: u64,
    /// `custom` entries written for lines that do not map.
    pub custom: u64,
    /// Of those, lines of a type this importer does not know.
    pub unknown: u64,
    /// Leaves of the conversation tree (1 for a linear session).
    pub branches: u64,
    /// Usage by `provider/model`.
    pub usage: BTreeMap<String, UsageSum>,
}

/// What a part is to its source.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PartKind {
    /// The source's own conversation.
    Main,
    /// A Claude Code sidechain kept inside the main file (Claude Code 2.0 and older).
    Sidechain,
    /// A subagent's file (Claude Code `agent-*.jsonl`, a Codex subagent rollout).
    Subagent,
    /// A Codex fork of another rollout.
    Fork,
}

impl PartKind {
    pub fn as_str(self) -> &'static str {
        match self {
            PartKind::Main => "main",
            PartKind::Sidechain => "sidechain",
            PartKind::Subagent => "subagent",
            PartKind::Fork => "fork",
        }
    }
}

/// One pi session made from a source.
pub struct Part {
    /// The pi session id (the source's session id, or derived from it).
    pub id: String,
    /// The source's session id.
    pub source_id: String,
    pub kind: PartKind,
    pub cwd: Option<String>,
    /// The time of the source's first line (ms).
    pub start_ms: i64,
    /// The source session id of the session this one comes from (for `parentSession`).
    pub parent_id: Option<String>,
    pub stats: Stats,
    customs: Spool,
    convo: Spool,
}

impl Part {
    /// How many entries the part holds.
    pub fn len(&self) -> usize {
        self.customs.index.len() + self.convo.index.len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Whether the part holds any conversation entry.
    pub fn has_conversation(&self) -> bool {
        !self.convo.index.is_empty()
    }
}

/// The result of reading one source file.
pub struct Conversion {
    pub format: Format,
    pub parts: Vec<Part>,
    pub skipped: Vec<Skipped>,
    pub repairs: Vec<Repair>,
}

/// Entry lines written to an unnamed temporary file, with their ids.
struct Spool {
    out: BufWriter<File>,
    len: u64,
    index: Vec<(String, u64, u32)>,
}

impl Spool {
    fn new() -> io::Result<Spool> {
        Ok(Spool {
            out: BufWriter::new(tempfile::tempfile()?),
            len: 0,
            index: Vec::new(),
        })
    }

    fn push(&mut self, id: &str, line: &[u8]) -> io::Result<()> {
        self.out.write_all(line)?;
        self.index
            .push((id.to_owned(), self.len, line.len() as u32));
        self.len += line.len() as u64;
        Ok(())
    }

    /// Calls `f` with each line (id, bytes), in order.
    fn each(&mut self, mut f: impl FnMut(&str, &[u8]) -> io::Result<()>) -> io::Result<()> {
        self.out.flush()?;
        let file = self.out.get_mut();
        file.seek(SeekFrom::Start(0))?;
        let mut r = BufReader::new(&*file);
        let mut buf = Vec::new();
        for (id, _, len) in &self.index {
            buf.resize(*len as usize, 0);
            r.read_exact(&mut buf)?;
            f(id, &buf)?;
        }
        Ok(())
    }
}

/// Builds the lines of one part: ids derived from source keys, `custom` entries on their own
/// chain, conversation entries in order.
pub(crate) struct Builder<'p> {
    format: Format,
    taken: HashSet<String>,
    customs: Spool,
    convo: Spool,
    last_custom: Option<String>,
    pub(crate) stats: Stats,
    /// Children per conversation entry id (for counting leaves).
    children: std::collections::HashMap<String, u32>,
    convo_ids: Vec<String>,
    price: Pricer<'p>,
}

impl<'p> Builder<'p> {
    pub(crate) fn new(format: Format, price: Pricer<'p>) -> io::Result<Builder<'p>> {
        Ok(Builder {
            format,
            taken: HashSet::new(),
            customs: Spool::new()?,
            convo: Spool::new()?,
            last_custom: None,
            stats: Stats::default(),
            children: std::collections::HashMap::new(),
            convo_ids: Vec::new(),
            price,
        })
    }

    /// An entry id for a source key: 8 hex digits of its hash, the same on every import of
    /// the same source; on a clash, the key is hashed again with a counter.
    pub(crate) fn id_for(&mut self, key: &str) -> String {
        let mut n = 0u32;
        loop {
            let h = if n == 0 {
                fnv(key.as_bytes())
            } else {
                fnv(format!("{key}#{n}").as_bytes())
            };
            let id = format!("{:08x}", (h ^ (h >> 32)) as u32);
            if self.taken.insert(id.clone()) {
                return id;
            }
            n += 1;
        }
    }

    /// Keeps a source line that does not map as a `custom` entry.
    pub(crate) fn custom(
        &mut self,
        key: &str,
        ts: &str,
        line: u64,
        kind: &str,
        unknown: bool,
        data: Value,
    ) -> io::Result<()> {
        let id = self.id_for(key);
        let data = json!({"line": line, "kind": kind, "source": data});
        let fields: Vec<(&str, Vec<u8>)> = vec![
            ("customType", entry::jstr(self.format.custom_type())),
            ("data", to_vec(&data)),
        ];
        let l = line_of("custom", &id, self.last_custom.as_deref(), ts, &fields);
        self.customs.push(&id, &l)?;
        self.last_custom = Some(id);
        self.stats.custom += 1;
        if unknown {
            self.stats.unknown += 1;
        }
        Ok(())
    }

    /// Writes a conversation entry with a given id.
    pub(crate) fn entry(
        &mut self,
        ty: &str,
        id: &str,
        parent: Option<&str>,
        ts: &str,
        fields: &[(&str, Vec<u8>)],
    ) -> io::Result<()> {
        let l = line_of(ty, id, parent, ts, fields);
        self.convo.push(id, &l)?;
        self.convo_ids.push(id.to_owned());
        if let Some(p) = parent {
            *self.children.entry(p.to_owned()).or_insert(0) += 1;
        }
        match ty {
            "usage" => {
                let get = |k: &str| {
                    fields
                        .iter()
                        .find(|(f, _)| *f == k)
                        .and_then(|(_, v)| serde_json::from_slice::<Value>(v).ok())
                        .unwrap_or(Value::Null)
                };
                let key = format!(
                    "{}/{}",
                    get("provider").as_str().unwrap_or(""),
                    get("model").as_str().unwrap_or("")
                );
                self.count_usage(key, &get("usage"));
            }
            "compaction" => self.stats.compactions += 1,
            "model_change" => self.stats.model_changes += 1,
            _ => {}
        }
        Ok(())
    }

    /// Writes a message entry, counting it (and its usage).
    pub(crate) fn message(
        &mut self,
        id: &str,
        parent: Option<&str>,
        ts: &str,
        message: &Value,
    ) -> io::Result<()> {
        let role = message["role"].as_str().unwrap_or("").to_owned();
        *self.stats.messages.entry(role).or_insert(0) += 1;
        if message["role"] == "assistant"
            && let Some(u) = message.get("usage")
        {
            let key = format!(
                "{}/{}",
                message["provider"].as_str().unwrap_or(""),
                message["model"].as_str().unwrap_or("")
            );
            let u = u.clone();
            self.count_usage(key, &u);
        }
        self.entry("message", id, parent, ts, &[("message", to_vec(message))])
    }

    fn count_usage(&mut self, key: String, u: &Value) {
        let s = self.stats.usage.entry(key).or_default();
        s.messages += 1;
        let n = |k: &str| u[k].as_u64().unwrap_or(0);
        s.tokens.input += n("input");
        s.tokens.output += n("output");
        s.tokens.cache_read += n("cacheRead");
        s.tokens.cache_write += n("cacheWrite");
        s.cost += u["cost"]["total"].as_f64().unwrap_or(0.0);
    }

    /// pi's `usage` object for a message, priced when the source has no cost.
    pub(crate) fn usage(&self, provider: &str, model: &str, t: &Tokens) -> Value {
        let c = (self.price)(provider, model, t).unwrap_or_default();
        json!({
            "input": t.input,
            "output": t.output,
            "cacheRead": t.cache_read,
            "cacheWrite": t.cache_write,
            "totalTokens": t.input + t.output + t.cache_read + t.cache_write,
            "cost": {
                "input": c.input,
                "output": c.output,
                "cacheRead": c.cache_read,
                "cacheWrite": c.cache_write,
                "total": c.total(),
            }
        })
    }

    pub(crate) fn finish(
        mut self,
        id: String,
        source_id: String,
        kind: PartKind,
        cwd: Option<String>,
        start_ms: i64,
        parent_id: Option<String>,
    ) -> Part {
        self.stats.branches = self
            .convo_ids
            .iter()
            .filter(|i| !self.children.contains_key(i.as_str()))
            .count() as u64;
        Part {
            id,
            source_id,
            kind,
            cwd,
            start_ms,
            parent_id,
            stats: self.stats,
            customs: self.customs,
            convo: self.convo,
        }
    }
}

fn fnv(b: &[u8]) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for &x in b {
        h ^= u64::from(x);
        h = h.wrapping_mul(0x0100_0000_01b3);
    }
    // splitmix64's finalizer, so that similar keys give unrelated ids
    h = (h ^ (h >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    h = (h ^ (h >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    h ^ (h >> 31)
}

pub(crate) fn to_vec(v: &Value) -> Vec<u8> {
    serde_json::to_vec(v).unwrap_or_else(|_| b"null".to_vec())
}

fn line_of(
    ty: &str,
    id: &str,
    parent: Option<&str>,
    ts: &str,
    fields: &[(&str, Vec<u8>)],
) -> Vec<u8> {
    let f: Vec<(&str, &[u8])> = fields.iter().map(|(k, v)| (*k, v.as_slice())).collect();
    let mut l = entry::entry_line(ty, id, parent, ts, &f);
    l.push(b'\n');
    l
}

/// A source timestamp as pi writes one (ms, `Z`), and its epoch ms.
pub(crate) fn norm_ts(v: &Value) -> Option<(String, i64)> {
    let s = v.as_str()?;
    let ms = clock::parse_iso(s)?;
    Some((clock::format_iso(ms), ms))
}

/// Reads lines with their numbers and byte offsets, in bounded memory.
pub(crate) struct Lines<R> {
    r: R,
    pub(crate) buf: Vec<u8>,
    pub(crate) number: u64,
    pub(crate) offset: u64,
    next: u64,
}

impl<R: BufRead> Lines<R> {
    pub(crate) fn new(r: R) -> Lines<R> {
        Lines {
            r,
            buf: Vec::new(),
            number: 0,
            offset: 0,
            next: 0,
        }
    }

    /// The next line (without its newline); false at the end.
    pub(crate) fn next_line(&mut self) -> io::Result<bool> {
        self.buf.clear();
        let n = self.r.read_until(b'\n', &mut self.buf)?;
        if n == 0 {
            return Ok(false);
        }
        self.offset = self.next;
        self.next += n as u64;
        self.number += 1;
        while matches!(self.buf.last(), Some(b'\n' | b'\r')) {
            self.buf.pop();
        }
        Ok(true)
    }
}

/// Parses a line as a JSON object; a reason when it is not one (`None` for a blank line).
pub(crate) fn parse_line(buf: &[u8]) -> Option<Result<Map<String, Value>, String>> {
    if buf.iter().all(u8::is_ascii_whitespace) {
        return None;
    }
    Some(match serde_json::from_slice::<Value>(buf) {
        Ok(Value::Object(m)) => Ok(m),
        Ok(_) => Err("not a JSON object".to_owned()),
        Err(e) => Err(format!("invalid JSON: {e}")),
    })
}

/// Which format a file is in, from its first lines (`None`: neither).
pub fn detect(path: &Path) -> Result<Option<Format>, ImportError> {
    let f = File::open(path).map_err(|source| ImportError::Read {
        path: path.to_owned(),
        source,
    })?;
    let mut lines = Lines::new(BufReader::new(f));
    let mut seen = 0;
    while seen < 50 {
        match lines.next_line() {
            Ok(true) => {}
            Ok(false) => break,
            Err(source) => {
                return Err(ImportError::Read {
                    path: path.to_owned(),
                    source,
                });
            }
        }
        let Some(Ok(m)) = parse_line(&lines.buf) else {
            continue;
        };
        seen += 1;
        if let Some(f) = detect_line(&m, lines.number == 1) {
            return Ok(Some(f));
        }
    }
    Ok(None)
}

fn detect_line(m: &Map<String, Value>, first: bool) -> Option<Format> {
    let ty = m.get("type").and_then(Value::as_str);
    if m.contains_key("payload")
        && matches!(
            ty,
            Some("session_meta" | "turn_context" | "response_item" | "event_msg" | "compacted")
        )
    {
        return Some(Format::Codex);
    }
    if (m.contains_key("uuid") || m.contains_key("message")) && m.contains_key("sessionId") {
        return Some(Format::Claude);
    }
    if ty == Some("file-history-snapshot") {
        return Some(Format::Claude);
    }
    if matches!(ty, Some("user" | "assistant")) && m.get("message").is_some_and(Value::is_object) {
        return Some(Format::Claude);
    }
    if matches!(
        ty,
        Some(
            "user"
                | "assistant"
                | "summary"
                | "file-history-snapshot"
                | "queue-operation"
                | "custom-title"
                | "ai-title"
        )
    ) && (m.contains_key("uuid") || m.contains_key("sessionId") || ty == Some("summary"))
    {
        return Some(Format::Claude);
    }
    // Codex's legacy rollouts: a bare header, then bare response items.
    if first && ty.is_none() && m.contains_key("id") && m.contains_key("timestamp") {
        return Some(Format::Codex);
    }
    if m.contains_key("record_type")
        || (matches!(
            ty,
            Some("message" | "function_call" | "function_call_output" | "reasoning")
        ) && !m.contains_key("uuid"))
    {
        return Some(Format::Codex);
    }
    None
}

/// Reads a source file into parts. `format` forces a format; else it is detected.
pub fn convert(
    path: &Path,
    format: Option<Format>,
    price: Pricer<'_>,
) -> Result<Conversion, ImportError> {
    let format = match format {
        Some(f) => f,
        None => detect(path)?.ok_or_else(|| ImportError::Unknown {
            path: path.to_owned(),
        })?,
    };
    let read_err = |source| ImportError::Read {
        path: path.to_owned(),
        source,
    };
    let conv = match format {
        Format::Claude => claude::convert(path, price).map_err(read_err)?,
        Format::Codex => codex::convert(path, price).map_err(read_err)?,
    };
    if conv.parts.iter().all(|p| !p.has_conversation()) && conv.parts.iter().all(Part::is_empty) {
        return Err(ImportError::Empty {
            path: path.to_owned(),
        });
    }
    Ok(conv)
}

/// Where a part goes.
pub enum Target<'a> {
    /// A new file at this path.
    New(&'a Path),
    /// An existing import of the same source: only what it lacks is appended.
    Existing(&'a Path),
    /// A stream (the whole session, header first).
    Stream(&'a mut dyn Write),
}

/// The header line of a part's session.
pub fn header_line(
    part: &Part,
    format: Format,
    source: &Path,
    cwd: &str,
    parent_session: Option<&str>,
) -> Vec<u8> {
    let mut h = super::fork::header(&part.id, part.start_ms, cwd, parent_session);
    h.pop(); // the closing brace
    h.extend_from_slice(b",\"importedFrom\":{\"format\":");
    pjson::write_str(&mut h, format.as_str());
    h.extend_from_slice(b",\"path\":");
    pjson::write_str(&mut h, &source.to_string_lossy());
    h.extend_from_slice(b",\"id\":");
    pjson::write_str(&mut h, &part.source_id);
    h.extend_from_slice(b"}}\n");
    h
}

/// Writes a part; returns how many entries were written.
pub fn write_part(part: &mut Part, header: &[u8], target: Target<'_>) -> Result<u64, ImportError> {
    match target {
        Target::Stream(w) => {
            let werr = |source| ImportError::Write {
                path: PathBuf::from("-"),
                source,
            };
            w.write_all(header).map_err(werr)?;
            let n = part.len() as u64;
            write_all(part, w).map_err(werr)?;
            Ok(n)
        }
        Target::New(path) => {
            let _private = pi_base::fs::PrivateUmask::set();
            let n = part.len() as u64;
            pi_base::fs::write_with(path, false, |w| {
                w.write_all(header)?;
                write_all(part, w)
            })
            .map_err(|source| ImportError::Write {
                path: path.to_owned(),
                source,
            })?;
            Ok(n)
        }
        Target::Existing(path) => {
            // Under the file's lock: what the file lacks, then one synced write of it.
            let mut ap = Appender::open(path, None)?;
            let (lines, convo_new) = lacking(part, path)?;
            // Growth is written with the conversation it belongs to, so the last line
            // written is always the conversation's newest entry (the leaf).
            if !convo_new {
                return Ok(0);
            }
            ap.write(&lines)?;
            Ok(lines.len() as u64)
        }
    }
}

/// The lines of `part` whose ids the session at `path` lacks (without their newlines), and
/// whether any of them is a conversation entry.
///
/// An assistant message the session already has may have grown since (Claude Code writes a
/// message one content block at a time, so an import can catch it mid-stream): its new
/// blocks are appended as a completion, an assistant message holding only those blocks and
/// the usage they add, after the message (or its latest completion); what the source adds
/// under the message continues from the completion. Nothing written is changed.
fn lacking(part: &mut Part, path: &Path) -> Result<(Vec<Vec<u8>>, bool), ImportError> {
    let s = super::Session::open(path).map_err(|e| ImportError::Read {
        path: path.to_owned(),
        source: io::Error::other(e.to_string()),
    })?;
    let mut lines: Vec<Vec<u8>> = Vec::new();
    let mut convo_new = false;
    part.customs
        .each(|id, line| {
            if s.get(id).is_none() {
                lines.push(line[..line.len().saturating_sub(1)].to_vec());
            }
            Ok(())
        })
        .map_err(|source| ImportError::Read {
            path: path.to_owned(),
            source,
        })?;
    // Message id → the id of its latest completion (what its children now follow).
    let mut moved: HashMap<String, String> = HashMap::new();
    part.convo
        .each(|id, line| {
            let body = &line[..line.len().saturating_sub(1)];
            if s.get(id).is_none() {
                lines.push(reparent(body, &moved));
                convo_new = true;
                return Ok(());
            }
            if let Some((last, completion)) = completion(&s, id, body)? {
                if let Some(c) = completion {
                    lines.push(c);
                    convo_new = true;
                }
                moved.insert(id.to_owned(), last);
            }
            Ok(())
        })
        .map_err(|source| ImportError::Read {
            path: path.to_owned(),
            source,
        })?;
    Ok((lines, convo_new))
}

/// The id of the `k`th completion of message `id`.
fn completion_id(id: &str, k: u32) -> String {
    let h = fnv(format!("{id}+{k}").as_bytes());
    format!("{:08x}", (h ^ (h >> 32)) as u32)
}

/// For an assistant message `id` the session has: the id its children follow (its latest
/// completion) and, when `line` (the message as the source has it now) holds blocks the
/// session lacks, a new completion with them. `None` when the message has no completion
/// and needs none.
fn completion(
    s: &super::Session,
    id: &str,
    line: &[u8],
) -> io::Result<Option<(String, Option<Vec<u8>>)>> {
    let Some(first) = s.get(id) else {
        return Ok(None);
    };
    // The same line as written: the message has not grown (and so has no completion).
    let written = s.line(first)?;
    let trim = |b: &[u8]| b.strip_suffix(b"\n").map_or(b.len(), <[u8]>::len);
    if written[..trim(&written)] == line[..trim(line)] {
        return Ok(None);
    }
    if !line.starts_with(b"{\"type\":\"message\"") {
        return Ok(None);
    }
    let Ok(now) = serde_json::from_slice::<Value>(line) else {
        return Ok(None);
    };
    if now["message"]["role"] != "assistant" {
        return Ok(None);
    }
    let read = |i: u32| -> io::Result<Value> {
        let l = s.line(i)?;
        Ok(serde_json::from_slice(&l).unwrap_or(Value::Null))
    };
    // What the session holds of the message: the message, then its completions.
    let mut had = vec![read(first)?];
    let mut last = id.to_owned();
    let mut k = 1;
    loop {
        let cid = completion_id(id, k);
        match s.get(&cid) {
            Some(i) => {
                let e = read(i)?;
                if e["parentId"] != json!(last) {
                    break;
                }
                had.push(e);
                last = cid;
                k += 1;
            }
            None => break,
        }
    }
    let blocks = |e: &Value| e["message"]["content"].as_array().map_or(0, Vec::len);
    let held: usize = had.iter().map(blocks).sum();
    let all = now["message"]["content"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    if all.len() <= held {
        return Ok((k > 1).then_some((last, None)));
    }
    let cid = completion_id(id, k);
    if s.get(&cid).is_some() {
        return Ok(Some((last, None)));
    }
    let mut msg = now["message"].clone();
    msg["content"] = Value::Array(all[held..].to_vec());
    // The usage the new blocks add: what the message counts now, less what was counted.
    if let Some(u) = msg.get_mut("usage") {
        for key in ["input", "output", "cacheRead", "cacheWrite", "totalTokens"] {
            let had_n: u64 = had
                .iter()
                .map(|e| e["message"]["usage"][key].as_u64().unwrap_or(0))
                .sum();
            u[key] = json!(u[key].as_u64().unwrap_or(0).saturating_sub(had_n));
        }
        for key in ["input", "output", "cacheRead", "cacheWrite", "total"] {
            let had_c: f64 = had
                .iter()
                .map(|e| e["message"]["usage"]["cost"][key].as_f64().unwrap_or(0.0))
                .sum();
            let c = u["cost"][key].as_f64().unwrap_or(0.0) - had_c;
            u["cost"][key] = json!(c.max(0.0));
        }
    }
    let ts = now["timestamp"].as_str().unwrap_or("").to_owned();
    let l = entry::entry_line(
        "message",
        &cid,
        Some(&last),
        &ts,
        &[("message", to_vec(&msg).as_slice())],
    );
    Ok(Some((cid, Some(l))))
}

/// A new line whose parent is a message that got a completion follows the completion.
fn reparent(line: &[u8], moved: &HashMap<String, String>) -> Vec<u8> {
    if moved.is_empty() {
        return line.to_vec();
    }
    let Ok(mut v) = serde_json::from_slice::<Value>(line) else {
        return line.to_vec();
    };
    let Some(to) = v["parentId"].as_str().and_then(|p| moved.get(p)) else {
        return line.to_vec();
    };
    v["parentId"] = json!(to);
    to_vec(&v)
}

/// How many entries [`write_part`] would append to the existing import at `path`.
pub fn missing(part: &mut Part, path: &Path) -> Result<u64, ImportError> {
    let (lines, convo_new) = lacking(part, path)?;
    Ok(if convo_new { lines.len() as u64 } else { 0 })
}

fn write_all(part: &mut Part, w: &mut dyn Write) -> io::Result<()> {
    part.customs.each(|_, l| w.write_all(l))?;
    part.convo.each(|_, l| w.write_all(l))?;
    w.flush()
}
