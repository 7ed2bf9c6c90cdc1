//! What listings and reports need from a session file, without reading it each time: its
//! header fields, name, first user message, message counts, last activity, and token and
//! cost totals per hour and provider/model.
//!
//! A [`Summary`] is computed by one pass over the file's complete lines (the same index
//! pass that opening a session makes, so invalid lines, extra headers and entries without
//! an id are skipped exactly as every other command skips them). It is kept as a record in
//! a log under `<agent dir>/cache/session-summaries/` (one JSON record a line, appended;
//! the last record of a file wins), keyed by the file's device and inode (so a renamed
//! session keeps its record). One file holds all the records because creating a file can
//! cost more than reading a whole session (0.35 ms each on the machine the benchmarks ran
//! on: a third of a cold listing of 331 sessions went into creating a record file for
//! each). On every use a record is checked against the file:
//!
//! - device and inode are those of the file;
//! - when size, modification and change times are the ones recorded, and the record was
//!   not written within [`crate::stamp::RACY`] of the file's last change (a change in the same clock tick
//!   would not move the times), the first and last 4 KiB of the summarized bytes must still
//!   hash to the recorded fingerprint: then nothing is read but a partial last line;
//! - when the file grew, the summarized bytes must still match a fingerprint of their first
//!   and last 4 KiB and of 16 blocks spread between them: then only the appended bytes are
//!   read and added;
//! - anything else (a shorter file, a same-size rewrite, a fingerprint mismatch, an
//!   unreadable or foreign cache file) rebuilds the summary from the whole file.
//!
//! The cache is only a shortcut: deleting it costs time, never correctness, and a failure
//! to write it is ignored. A line that is not a whole record (a write cut short, and the
//! record appended after it on the same line) is skipped; processes appending at once each
//! add whole lines (the records one listing makes are written in one append, at its end);
//! rewriting the log to drop superseded records may lose a record another process appended
//! meanwhile, which costs that file a rebuild. A file with an append under way or interrupted (a pending-append marker) is
//! read as opening it would, without the cache.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::fs::File;
use std::io;
use std::ops::ControlFlow;
use std::os::unix::fs::{FileExt, MetadataExt};
use std::path::{Path, PathBuf};
use std::sync::{Mutex, OnceLock};

use serde::{Deserialize, Serialize};

use super::index::{Header, Kind};
use super::preview;
use super::scan::{self, Acc, Visit};
use super::stamp::{Fresh, Stamp, fresh, stamp_of, write_record};
use super::store::Session;
use pi_base::clock;
use pi_base::json::{self, Kind as JsonKind, Member, RawStr};

/// Version 2: usage of tool results, `usage` entries and summaries counts (version 1:
/// assistant messages only).
const MAGIC: &str = "pi-session-summary/2";
/// The log of records, in the cache's directory.
const LOG: &str = "records.jsonl";

/// Files this large are summarized one at a time (each with several threads).
const BIG: u64 = 64 << 20;

/// Tokens and cost of one hour with one provider/model: of assistant messages, tool results,
/// `usage` entries and summaries, as the reference 1.6's session totals count them (tool
/// results and summaries with no provider or model).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Usage {
    /// Start of the hour (UTC), in ms since the epoch.
    pub hour_ms: i64,
    pub provider: String,
    pub model: String,
    /// Entries with a `usage` object.
    pub messages: u64,
    pub input: u64,
    pub output: u64,
    pub cache_read: u64,
    pub cache_write: u64,
    pub total_tokens: u64,
    /// `usage.cost.total` summed in units of 10⁻¹² (exact, so sums do not depend on order).
    pub cost_pico: i64,
}

impl Usage {
    pub fn cost(&self) -> f64 {
        self.cost_pico as f64 / 1e12
    }
}

/// The header fields of a session file.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct HeaderFields {
    pub id: String,
    pub cwd: String,
    pub timestamp: Option<String>,
    pub version: u32,
    pub parent_session: Option<String>,
}

impl HeaderFields {
    fn of(h: &Header) -> HeaderFields {
        HeaderFields {
            id: h.id.clone(),
            cwd: h.cwd.clone(),
            timestamp: h.timestamp.clone(),
            version: h.version,
            parent_session: h.parent_session.clone(),
        }
    }
}

/// What the entries of a session say (every branch).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Counts {
    /// Entries (lines after the header that are entries).
    pub entries: u64,
    /// `message` entries, and those of them with role user / assistant.
    pub messages: u64,
    pub user_messages: u64,
    pub assistant_messages: u64,
    /// The latest `session_info` name, trimmed (`Some("")` when the latest clears it).
    pub name: Option<String>,
    /// The text of the first user message with text.
    pub first_message: Option<String>,
    /// The latest time (ms) of a user or assistant message with content.
    pub last_activity: Option<f64>,
    /// The `timestamp` of the last entry in the file, as written.
    pub last_entry: Option<String>,
    /// Sorted by hour, provider, model.
    pub usage: Vec<Usage>,
}

/// The summary of one session file.
#[derive(Debug, Clone, PartialEq)]
pub struct Summary {
    pub path: PathBuf,
    /// Bytes summarized (the file's size when it was read, less an append under way).
    pub bytes: u64,
    /// The file's modification time (ms).
    pub mtime_ms: i64,
    pub header: HeaderFields,
    pub counts: Counts,
}

impl Summary {
    /// The session name, unless none was set or the latest one clears it.
    pub fn name(&self) -> Option<&str> {
        self.counts.name.as_deref().filter(|n| !n.is_empty())
    }

    /// Creation time (ms) from the header.
    pub(crate) fn created_ms(&self) -> Option<i64> {
        self.header.timestamp.as_deref().and_then(clock::parse_iso)
    }

    /// Last activity (ms): the latest user/assistant message, else the creation time, else
    /// the file's modification time.
    pub fn modified_ms(&self) -> i64 {
        match self.counts.last_activity {
            Some(t) if t > 0.0 => t as i64,
            _ => self.created_ms().unwrap_or(self.mtime_ms),
        }
    }

    /// Total cost of every entry with usage (the reference 1.6's session cost).
    pub fn cost(&self) -> f64 {
        self.counts.usage.iter().map(|u| u.cost_pico).sum::<i64>() as f64 / 1e12
    }

    /// Token and cost totals per UTC day (`YYYY-MM-DD`) and provider/model.
    pub fn daily(&self) -> Vec<(String, Usage)> {
        let mut days: BTreeMap<(String, String, String), Usage> = BTreeMap::new();
        for u in &self.counts.usage {
            let day = clock::format_iso(u.hour_ms)[..10].to_owned();
            let key = (day, u.provider.clone(), u.model.clone());
            match days.get_mut(&key) {
                Some(d) => d.add(u),
                None => {
                    let mut d = u.clone();
                    d.hour_ms = u.hour_ms - u.hour_ms.rem_euclid(86_400_000);
                    days.insert(key, d);
                }
            }
        }
        days.into_iter().map(|((day, _, _), u)| (day, u)).collect()
    }
}

impl Usage {
    fn add(&mut self, o: &Usage) {
        self.messages += o.messages;
        self.input += o.input;
        self.output += o.output;
        self.cache_read += o.cache_read;
        self.cache_write += o.cache_write;
        self.total_tokens += o.total_tokens;
        self.cost_pico += o.cost_pico;
    }
}

/// The per-entry pass (see [`Counts`]).
#[derive(Default)]
struct Visitor {
    counts: Counts,
    usage: BTreeMap<(i64, String, String), Usage>,
    /// The totals of the latest run of messages with one hour and provider/model, and
    /// their key: added to `usage` when the key changes ([`Visitor::settle`]), so that a run
    /// costs one map lookup instead of one per message.
    run: Option<((i64, String, String), Usage)>,
    /// The last entry's `timestamp` as written (a JSON string, quotes included), or `None`
    /// when it has none; `None` outside until this visitor sees an entry. Decoded once, at
    /// the end ([`Visitor::into_counts`]), instead of for every entry.
    last_ts: Option<Option<Vec<u8>>>,
}

/// A member's key, decoded only when it holds an escape.
fn key<'a>(m: &Member<'a>) -> std::borrow::Cow<'a, [u8]> {
    if m.key.escaped {
        std::borrow::Cow::Owned(json::decode_str(m.key.raw).into_owned().into_bytes())
    } else {
        std::borrow::Cow::Borrowed(m.key.raw)
    }
}

fn count(v: Option<&[u8]>) -> u64 {
    v.and_then(json::number)
        .filter(|n| n.is_finite() && *n > 0.0)
        .map_or(0, |n| n as u64)
}

impl Visitor {
    fn from_counts(mut counts: Counts) -> Visitor {
        let usage = std::mem::take(&mut counts.usage)
            .into_iter()
            .map(|u| ((u.hour_ms, u.provider.clone(), u.model.clone()), u))
            .collect();
        Visitor {
            counts,
            usage,
            run: None,
            last_ts: None,
        }
    }

    /// Adds the current run's totals to `usage`.
    fn settle(&mut self) {
        if let Some((key, u)) = self.run.take() {
            match self.usage.get_mut(&key) {
                Some(mine) => mine.add(&u),
                None => {
                    self.usage.insert(key, u);
                }
            }
        }
    }

    fn into_counts(mut self) -> Counts {
        self.settle();
        self.counts.usage = self.usage.into_values().collect();
        if let Some(ts) = self.last_ts {
            self.counts.last_entry = ts
                .as_deref()
                .and_then(RawStr::from_value)
                .map(|r| r.decode().into_owned());
        }
        self.counts
    }

    /// `msg_members`: the members of the message object (offsets into `line`), collected in
    /// the line's pass; `entry_ts`: the entry's `timestamp`.
    /// `below`: the members of the objects [`Visitor::PATH`] leads to in the message, each
    /// with the offset of its object.
    fn message(
        &mut self,
        line: &[u8],
        entry_ts: Option<&[u8]>,
        msg_members: &[Member<'_>],
        below: &[(usize, Member<'_>)],
    ) {
        let f = MessageFields::of(line, msg_members);
        let role = f.role.and_then(RawStr::from_value);
        let role_is = |r: &str| role.is_some_and(|role| role.eq_str(r));
        let (user, assistant) = (role_is("user"), role_is("assistant"));
        let tool_result = !user && !assistant && role_is("toolResult");
        if user {
            self.counts.user_messages += 1;
        } else if assistant {
            self.counts.assistant_messages += 1;
        }
        let entry_time = || {
            entry_ts
                .and_then(RawStr::from_value)
                .and_then(|s| clock::parse_iso(&s.decode()))
                .map(|ms| ms as f64)
        };
        let time = f.timestamp.and_then(json::number).or_else(entry_time);
        if (assistant || tool_result)
            && let Some(usage) = f.usage
            && JsonKind::of(usage) == Some(JsonKind::Object)
        {
            let row = usage_row(line, usage, below, hour_of(time));
            // A tool result's usage names no model.
            let (provider, model) = if assistant {
                (
                    f.provider.and_then(RawStr::from_value),
                    f.model.and_then(RawStr::from_value),
                )
            } else {
                (None, None)
            };
            self.add_to_run(row, provider, model);
        }
        if (user || assistant)
            && let Some(content) = f.content
        {
            self.chat_message(time, content, user);
        }
    }

    /// The usage of a `usage` entry (`usage_entry`, named by its `provider` and `model`), a
    /// compaction or a branch summary: `usage` is the entry's member, `ts` its `timestamp`.
    fn entry_usage(&mut self, line: &[u8], usage: &[u8], ts: Option<&[u8]>, usage_entry: bool) {
        if JsonKind::of(usage) != Some(JsonKind::Object) {
            return;
        }
        let Some(at) = line.iter().position(|&b| b == b'{') else {
            return;
        };
        let (mut top, mut below) = (Vec::new(), Vec::new());
        let scanned = json::path_members_valid(line, at, Self::PATH, &mut |o, m| {
            if o == at {
                top.push(m);
            } else {
                below.push((o, m));
            }
        });
        if scanned.is_err() {
            return;
        }
        let time = ts
            .and_then(RawStr::from_value)
            .and_then(|s| clock::parse_iso(&s.decode()))
            .map(|ms| ms as f64);
        let row = usage_row(line, usage, &below, hour_of(time));
        let named = |k: &str| {
            top.iter()
                .rev()
                .find(|m| usage_entry && m.key.eq_str(k))
                .and_then(|m| RawStr::from_value(&line[m.value_start..m.value_end]))
        };
        let (provider, model) = (named("provider"), named("model"));
        self.add_to_run(row, provider, model);
    }

    /// Adds an entry's usage to the current run, or starts a new run when the hour or the
    /// provider/model differs.
    #[inline]
    fn add_to_run(&mut self, row: Usage, provider: Option<RawStr<'_>>, model: Option<RawStr<'_>>) {
        // Messages in a row mostly share the hour and the model: then they add to the
        // run's totals, found without building a key (or decoding the names).
        let same_str = |kept: &str, v: Option<RawStr<'_>>| match v {
            Some(r) => r.eq_str(kept),
            None => kept.is_empty(),
        };
        match &mut self.run {
            Some((k, u))
                if k.0 == row.hour_ms && same_str(&k.1, provider) && same_str(&k.2, model) =>
            {
                u.add(&row);
            }
            _ => {
                self.settle();
                let owned =
                    |v: Option<RawStr<'_>>| v.map(|r| r.decode().into_owned()).unwrap_or_default();
                let (provider, model) = (owned(provider), owned(model));
                let row = Usage {
                    provider: provider.clone(),
                    model: model.clone(),
                    ..row
                };
                self.run = Some(((row.hour_ms, provider, model), row));
            }
        }
    }

    /// Counts a user or assistant message with content: the last activity, and the first
    /// user message's text.
    #[inline]
    fn chat_message(&mut self, time: Option<f64>, content: &[u8], user: bool) {
        if let Some(t) = time {
            let t = t.max(0.0);
            self.counts.last_activity = Some(self.counts.last_activity.map_or(t, |a| a.max(t)));
        }
        if self.counts.first_message.is_none() && user {
            let text = match JsonKind::of(content) {
                Some(JsonKind::String | JsonKind::Array) => {
                    preview::content_text(content, " ", usize::MAX)
                }
                _ => String::new(),
            };
            if !text.is_empty() {
                self.counts.first_message = Some(text);
            }
        }
    }
}

/// The members of a message that the counts need, as written (the last of a repeated key
/// wins, as in `JSON.parse`).
#[derive(Default)]
struct MessageFields<'a> {
    role: Option<&'a [u8]>,
    timestamp: Option<&'a [u8]>,
    usage: Option<&'a [u8]>,
    provider: Option<&'a [u8]>,
    model: Option<&'a [u8]>,
    content: Option<&'a [u8]>,
}

impl<'a> MessageFields<'a> {
    /// The fields among the message's members, in one look.
    #[inline]
    fn of(line: &'a [u8], msg_members: &[Member<'_>]) -> MessageFields<'a> {
        let mut f = MessageFields::default();
        for m in msg_members {
            let slot = match &*key(m) {
                b"role" => &mut f.role,
                b"timestamp" => &mut f.timestamp,
                b"usage" => &mut f.usage,
                b"provider" => &mut f.provider,
                b"model" => &mut f.model,
                b"content" => &mut f.content,
                _ => continue,
            };
            *slot = Some(&line[m.value_start..m.value_end]);
        }
        f
    }
}

/// The start of the hour (ms) of a time, 0 for none.
fn hour_of(time: Option<f64>) -> i64 {
    let hour = time.filter(|t| t.is_finite()).unwrap_or(0.0) as i64;
    hour - hour.rem_euclid(3_600_000)
}

/// The usage of one entry in the hour starting at `hour` (provider and model
/// left empty): `usage` is its object, `below` the members of `usage` and of its `cost`
/// collected in the line's pass (the last of a repeated key wins, as in `JSON.parse`).
#[inline]
fn usage_row(line: &[u8], usage: &[u8], below: &[(usize, Member<'_>)], hour: i64) -> Usage {
    let at = |v: &[u8]| v.as_ptr() as usize - line.as_ptr() as usize;
    let usage_at = at(usage);
    let mut fields: [Option<&[u8]>; 6] = [None; 6];
    for (o, m) in below {
        if *o != usage_at {
            continue;
        }
        let k = match &*key(m) {
            b"input" => 0,
            b"output" => 1,
            b"cacheRead" => 2,
            b"cacheWrite" => 3,
            b"totalTokens" => 4,
            b"cost" => 5,
            _ => continue,
        };
        fields[k] = Some(&line[m.value_start..m.value_end]);
    }
    let [input, output, cache_read, cache_write, total_tokens, cost] = fields;
    let cost_at = cost.map(at);
    let cost = below
        .iter()
        .rev()
        .find(|(o, m)| Some(*o) == cost_at && m.key.eq_str("total"))
        .map(|(_, m)| &line[m.value_start..m.value_end])
        .and_then(json::number)
        .filter(|c| c.is_finite())
        .map_or(0, |c| (c * 1e12).round() as i64);
    Usage {
        hour_ms: hour,
        provider: String::new(),
        model: String::new(),
        messages: 1,
        input: count(input),
        output: count(output),
        cache_read: count(cache_read),
        cache_write: count(cache_write),
        total_tokens: count(total_tokens),
        cost_pico: cost,
    }
}

impl Visit for Visitor {
    fn entry(&mut self, i: u32, line: &[u8], members: &[Member<'_>]) {
        // Only reached without the line's pass collecting the members below the top level.
        let (mut nested, mut below) = (Vec::new(), Vec::new());
        if let Some(m) = members.iter().rev().find(|m| m.key.eq_str("message"))
            && line.get(m.value_start) == Some(&b'{')
        {
            let at = m.value_start;
            let _ = json::path_members_valid(line, at, Self::PATH, &mut |o, m| {
                if o == at {
                    nested.push(m);
                } else {
                    below.push((o, m));
                }
            });
        }
        self.entry_below(i, line, members, &nested, &below);
    }

    const NESTED: Option<&'static str> = Some("message");
    const PATH: &'static [&'static str] = &["usage", "cost"];

    const RECORDS: bool = false;

    fn entry_nested(&mut self, i: u32, line: &[u8], members: &[Member<'_>], _: &[Member<'_>]) {
        // Only reached without the line's pass collecting what is below the message.
        self.entry(i, line, members);
    }

    fn entry_below(
        &mut self,
        _i: u32,
        line: &[u8],
        members: &[Member<'_>],
        msg_members: &[Member<'_>],
        below: &[(usize, Member<'_>)],
    ) {
        self.counts.entries += 1;
        let (mut ts, mut ty, mut name, mut message) = (None, None, None, false);
        let mut usage = None;
        for m in members {
            let v = &line[m.value_start..m.value_end];
            match &*key(m) {
                b"timestamp" => ts = Some(v),
                b"type" => ty = Some(v),
                b"name" => name = Some(v),
                b"message" => message = true,
                b"usage" => usage = Some(v),
                _ => {}
            }
        }
        // Into the same buffer every time: only the last one is kept.
        let kept = self.last_ts.get_or_insert(None);
        // A string (decoded at the end, if it is the last).
        let is_str = |t: &&[u8]| t.len() >= 2 && t[0] == b'"' && t[t.len() - 1] == b'"';
        match (ts.filter(is_str), kept) {
            (Some(t), Some(buf)) => {
                buf.clear();
                buf.extend_from_slice(t);
            }
            (t, kept) => *kept = t.map(<[u8]>::to_vec),
        }
        let Some(ty) = ty.and_then(RawStr::from_value) else {
            return;
        };
        match Kind::from_type(ty.raw) {
            Kind::SessionInfo => {
                let name = name
                    .and_then(RawStr::from_value)
                    .map(|r| r.decode().trim().to_owned());
                self.counts.name = Some(name.unwrap_or_default());
            }
            Kind::Message => {
                self.counts.messages += 1;
                if message {
                    self.message(line, ts, msg_members, below);
                }
            }
            Kind::Compaction | Kind::BranchSummary => {
                if let Some(u) = usage {
                    self.entry_usage(line, u, ts, false);
                }
            }
            Kind::Usage => {
                if let Some(u) = usage {
                    self.entry_usage(line, u, ts, true);
                }
            }
            _ => {}
        }
    }

    fn split(&self) -> Self {
        Visitor::default()
    }

    fn merge(&mut self, mut next: Self, _offset: u32) {
        next.settle();
        let Visitor {
            counts: n,
            usage,
            last_ts,
            ..
        } = next;
        let c = &mut self.counts;
        c.entries += n.entries;
        c.messages += n.messages;
        c.user_messages += n.user_messages;
        c.assistant_messages += n.assistant_messages;
        if n.name.is_some() {
            c.name = n.name;
        }
        if c.first_message.is_none() {
            c.first_message = n.first_message;
        }
        c.last_activity = match (c.last_activity, n.last_activity) {
            (Some(a), Some(b)) => Some(a.max(b)),
            (a, b) => a.or(b),
        };
        if n.entries > 0 {
            self.last_ts = last_ts;
        }
        for (k, u) in usage {
            match self.usage.get_mut(&k) {
                Some(mine) => mine.add(&u),
                None => {
                    self.usage.insert(k, u);
                }
            }
        }
    }
}

#[derive(Debug, Clone, Serialize, Deserialize)]
struct Record {
    magic: String,
    stamp: Stamp,
    header: HeaderFields,
    counts: Counts,
}

/// Offset just after the last `\n` in `file[..len]` (0 when there is none).
pub(crate) fn complete_end(file: &File, len: u64) -> io::Result<u64> {
    let mut buf = vec![0u8; 64 << 10];
    let mut end = len;
    while end > 0 {
        let start = end.saturating_sub(buf.len() as u64);
        let n = (end - start) as usize;
        file.read_exact_at(&mut buf[..n], start)?;
        if let Some(k) = memchr::memrchr(b'\n', &buf[..n]) {
            return Ok(start + k as u64 + 1);
        }
        end = start;
    }
    Ok(0)
}

/// The summary cache: a log of records, or none (every summary read from its file).
#[derive(Debug, Default)]
pub struct Cache {
    dir: Option<PathBuf>,
    /// Use records but never write them (and read no file without a valid record).
    read_only: bool,
    /// The log's records by device and inode, read on first use, with the records this
    /// process appended since.
    records: OnceLock<Mutex<HashMap<(u64, u64), Record>>>,
    /// While [`Cache::summaries`] runs: the records to append, one append for them all.
    batch: Mutex<Option<Vec<u8>>>,
}

impl Clone for Cache {
    /// The same cache, its log read again when used.
    fn clone(&self) -> Cache {
        Cache {
            dir: self.dir.clone(),
            read_only: self.read_only,
            records: OnceLock::new(),
            batch: Mutex::new(None),
        }
    }
}

/// The records of the log in `dir` by device and inode (the last of each), and how many
/// lines it has.
fn read_log(dir: &Path) -> (HashMap<(u64, u64), Record>, usize) {
    let mut records = HashMap::new();
    let Ok(bytes) = std::fs::read(dir.join(LOG)) else {
        return (records, 0);
    };
    let mut lines = 0;
    for line in bytes.split(|&b| b == b'\n').filter(|l| !l.is_empty()) {
        lines += 1;
        if let Ok(r) = serde_json::from_slice::<Record>(line)
            && r.magic == MAGIC
        {
            records.insert((r.stamp.dev, r.stamp.ino), r);
        }
    }
    (records, lines)
}

/// Replaces the log in `dir` with `records` (best effort), through a temporary file and a
/// rename.
fn rewrite_log<'a>(dir: &Path, records: impl Iterator<Item = &'a Record>) {
    let mut bytes = Vec::new();
    for r in records {
        if serde_json::to_writer(&mut bytes, r).is_ok() {
            bytes.push(b'\n');
        }
    }
    write_record(&dir.join(LOG), &bytes);
}

/// Appends a record to the log in `dir` (best effort), in one write.
/// Appends `r` to `lines` as a line of the log.
fn log_line(r: &Record, lines: &mut Vec<u8>) {
    if serde_json::to_writer(&mut *lines, r).is_ok() {
        lines.push(b'\n');
    }
}

/// Appends whole lines to the log, in one write.
fn append_log(dir: &Path, lines: &[u8]) {
    use std::io::Write;
    use std::os::unix::fs::OpenOptionsExt;
    if lines.is_empty() || pi_base::fs::create_dir_all(dir).is_err() {
        return;
    }
    if let Ok(mut f) = std::fs::OpenOptions::new()
        .append(true)
        .create(true)
        .mode(0o600)
        .open(dir.join(LOG))
    {
        let _ = f.write_all(lines);
    }
}

/// Drops from the log under `agent_dir` the records of files that are none of `live`
/// (device and inode). Returns how many were dropped.
pub(crate) fn prune_log(agent_dir: &Path, live: &HashSet<(u64, u64)>) -> usize {
    let dir = agent_dir.join("cache").join("session-summaries");
    let (records, _) = read_log(&dir);
    let kept: Vec<&Record> = records
        .iter()
        .filter(|(k, _)| live.contains(k))
        .map(|(_, r)| r)
        .collect();
    let dropped = records.len() - kept.len();
    if dropped > 0 {
        rewrite_log(&dir, kept.into_iter());
    }
    dropped
}

impl Cache {
    /// The cache under `agent_dir` (`<agent dir>/cache/session-summaries`).
    pub fn new(agent_dir: &Path) -> Cache {
        Cache {
            dir: Some(agent_dir.join("cache").join("session-summaries")),
            read_only: false,
            records: OnceLock::new(),
            batch: Mutex::new(None),
        }
    }

    /// The cache under `agent_dir`, read but never written; [`Cache::summary`] then gives
    /// only what a valid record (plus the bytes appended since) gives, and `None` for
    /// files without one. For shell completion, which must not write.
    pub fn read_only(agent_dir: &Path) -> Cache {
        Cache {
            read_only: true,
            ..Cache::new(agent_dir)
        }
    }

    /// No cache: every summary is read from its file.
    pub fn none() -> Cache {
        Cache {
            dir: None,
            read_only: false,
            records: OnceLock::new(),
            batch: Mutex::new(None),
        }
    }

    /// The records, the log read on first use. A log that is mostly superseded records is
    /// rewritten with the current ones.
    fn records(&self, dir: &Path) -> &Mutex<HashMap<(u64, u64), Record>> {
        self.records.get_or_init(|| {
            let (records, lines) = read_log(dir);
            if !self.read_only && lines > 64 && lines > 2 * records.len() {
                rewrite_log(dir, records.values());
            }
            Mutex::new(records)
        })
    }

    /// The record of the file with `meta`.
    fn record(&self, meta: &std::fs::Metadata) -> Option<Record> {
        let dir = self.dir.as_deref()?;
        let records = self.records(dir).lock().ok()?;
        records.get(&(meta.dev(), meta.ino())).cloned()
    }

    /// Records `r` (best effort: a failure only costs speed later).
    fn save(&self, r: Record) {
        let Some(dir) = self.dir.as_deref().filter(|_| !self.read_only) else {
            return;
        };
        match self.batch.lock().as_deref_mut() {
            Ok(Some(batch)) => log_line(&r, batch),
            _ => {
                let mut line = Vec::new();
                log_line(&r, &mut line);
                append_log(dir, &line);
            }
        }
        if let Ok(mut records) = self.records(dir).lock() {
            records.insert((r.stamp.dev, r.stamp.ino), r);
        }
    }

    /// The summary of one file; `None` when it cannot be read or is not a session file.
    pub fn summary(&self, path: &Path) -> Option<Summary> {
        if !matches!(
            super::pending::read_for(path),
            Ok(super::pending::Found::None)
        ) {
            return (!self.read_only).then(|| through_session(path)).flatten();
        }
        let file = File::open(path).ok()?;
        let meta = file.metadata().ok()?;
        let stored = self.record(&meta);
        let (header, counts, covered, stamp) = match stored.and_then(|r| reuse(&file, &meta, r)) {
            Some(Reuse::Same(r)) => (r.header, r.counts, r.stamp.covered, None),
            Some(Reuse::Grown(r)) => extend(&file, &meta, r).ok()?,
            None if self.read_only => return None,
            None => build(&file, &meta).ok()??,
        };
        if let Some(stamp) = &stamp {
            self.save(Record {
                magic: MAGIC.to_owned(),
                stamp: stamp.clone(),
                header: header.clone(),
                counts: counts.clone(),
            });
        }
        // A last line without its newline yet: read every time, never recorded.
        let counts = with_tail(&file, &header, counts, covered, meta.len());
        Some(Summary {
            path: path.to_owned(),
            bytes: meta.len(),
            mtime_ms: mtime_ms(&meta),
            header,
            counts,
        })
    }

    /// The summaries of `paths` (those that are session files), in the same order, read in
    /// parallel.
    pub fn summaries(&self, paths: &[PathBuf]) -> Vec<Summary> {
        if let Ok(mut batch) = self.batch.lock() {
            batch.get_or_insert_with(Vec::new);
        }
        let found = self.summaries_batched(paths);
        let batch = self.batch.lock().ok().and_then(|mut b| b.take());
        if let (Some(dir), Some(lines)) = (self.dir.as_deref(), batch) {
            append_log(dir, &lines);
        }
        found
    }

    /// [`Cache::summaries`], the records it makes collected in `batch`.
    fn summaries_batched(&self, paths: &[PathBuf]) -> Vec<Summary> {
        let (big, small): (Vec<usize>, Vec<usize>) = (0..paths.len())
            .partition(|&i| std::fs::metadata(&paths[i]).is_ok_and(|m| m.len() >= BIG));
        let mut out: Vec<Option<Summary>> = vec![None; paths.len()];
        for i in big {
            out[i] = self.summary(&paths[i]);
        }
        let threads = pi_base::par::threads_at_most(8);
        pi_base::par::ordered(
            small.len(),
            threads,
            |k, _| self.summary(&paths[small[k]]),
            |k, summary| {
                out[small[k]] = summary;
                ControlFlow::Continue(())
            },
        );
        out.into_iter().flatten().collect()
    }
}

fn mtime_ms(meta: &std::fs::Metadata) -> i64 {
    meta.mtime() * 1000 + meta.mtime_nsec() / 1_000_000
}

/// A file with an append under way or interrupted: opened as every reader opens it.
fn through_session(path: &Path) -> Option<Summary> {
    let (s, v) = Session::open_with(path, Visitor::default()).ok()?;
    let header = HeaderFields::of(s.header.as_ref()?);
    let meta = std::fs::metadata(path).ok()?;
    Some(Summary {
        path: path.to_owned(),
        bytes: s.len,
        mtime_ms: mtime_ms(&meta),
        header,
        counts: v.into_counts(),
    })
}

enum Reuse {
    /// The file is as recorded.
    Same(Record),
    /// The file grew; its recorded bytes are unchanged.
    Grown(Record),
}

/// Whether (and how) a record can be used for the file.
fn reuse(file: &File, meta: &std::fs::Metadata, r: Record) -> Option<Reuse> {
    match fresh(file, meta, &r.stamp)? {
        Fresh::Same => Some(Reuse::Same(r)),
        Fresh::Grown => Some(Reuse::Grown(r)),
    }
}

/// Header, counts, bytes they cover, and the stamp to record (none: do not record).
type Built = (HeaderFields, Counts, u64, Option<Stamp>);

/// Summarizes the complete lines of the file from the start; `None` when the file holds
/// no session header. When they hold none but the whole file does (the header is an
/// unterminated last line), the whole file is summarized and nothing is recorded.
fn build(file: &File, meta: &std::fs::Metadata) -> io::Result<Option<Built>> {
    let covered = complete_end(file, meta.len())?;
    let (acc, _) = scan::scan_file(file, covered, Visitor::default())?;
    if let Some(h) = acc.header.as_ref() {
        let header = HeaderFields::of(h);
        let stamp = stamp_of(file, meta, covered)?;
        return Ok(Some((
            header,
            acc.visitor.into_counts(),
            covered,
            Some(stamp),
        )));
    }
    if covered == meta.len() {
        return Ok(None);
    }
    let (acc, _) = scan::scan_file(file, meta.len(), Visitor::default())?;
    Ok(acc
        .header
        .as_ref()
        .map(HeaderFields::of)
        .map(|h| (h, acc.visitor.into_counts(), meta.len(), None)))
}

/// Adds the complete lines appended after the record's coverage.
fn extend(file: &File, meta: &std::fs::Metadata, r: Record) -> io::Result<Built> {
    let covered = complete_end(file, meta.len())?.max(r.stamp.covered);
    let counts = add_lines(file, &r.header, r.counts, r.stamp.covered, covered)?;
    let stamp = stamp_of(file, meta, covered)?;
    Ok((r.header, counts, covered, Some(stamp)))
}

fn add_lines(
    file: &File,
    header: &HeaderFields,
    counts: Counts,
    from: u64,
    to: u64,
) -> io::Result<Counts> {
    if from >= to {
        return Ok(counts);
    }
    let h = Header {
        raw: Vec::new(),
        line: 1,
        id: header.id.clone(),
        cwd: header.cwd.clone(),
        timestamp: header.timestamp.clone(),
        version: header.version,
        parent_session: header.parent_session.clone(),
    };
    let mut acc = Acc::new(Some(h), false, Visitor::default());
    // The summary's visitor keeps no records (`Visit::RECORDS`): the pass holds only counts.
    scan::for_each_line_into(file, from, to, &mut acc)?;
    let mut v = Visitor::from_counts(counts);
    v.merge(acc.visitor, 0);
    Ok(v.into_counts())
}

/// The counts with the bytes after `covered` (an unterminated last line) added.
fn with_tail(file: &File, header: &HeaderFields, counts: Counts, covered: u64, len: u64) -> Counts {
    if covered >= len {
        return counts;
    }
    add_lines(file, header, counts.clone(), covered, len).unwrap_or(counts)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn dir() -> PathBuf {
        let d = std::env::temp_dir().join(format!("pi-summary-{}", std::process::id()));
        std::fs::create_dir_all(&d).unwrap();
        d
    }

    /// The record of `path` in the log under `d`, made trustworthy (as if written long
    /// after the file changed).
    fn settled(d: &Path, path: &Path) -> Record {
        let meta = std::fs::metadata(path).unwrap();
        let dir = d.join("cache").join("session-summaries");
        let (mut records, _) = read_log(&dir);
        let r = records.get_mut(&(meta.dev(), meta.ino())).unwrap();
        r.stamp.racy = false;
        let r = r.clone();
        rewrite_log(&dir, records.values());
        r
    }

    /// The visitor's plain `entry` (which scans the message itself) counts what the line
    /// pass with the message's members collected counts.
    #[test]
    fn plain_and_nested_entries_count_alike() {
        let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/fixtures/sessions");
        for name in ["every-type.jsonl", "gen-200-s1.jsonl", "gen-200-s2.jsonl"] {
            let path = root.join(name);
            let file = File::open(&path).unwrap();
            let len = file.metadata().unwrap().len();
            let (acc, _) = scan::scan_file(&file, len, Visitor::default()).unwrap();
            let nested = acc.visitor.into_counts();
            let mut plain = Visitor::default();
            let text = std::fs::read(&path).unwrap();
            for (i, line) in text.split(|&b| b == b'\n').skip(1).enumerate() {
                let Ok(members) = json::members(line) else {
                    continue;
                };
                if json::field(line, &members, "id").is_none() {
                    continue;
                }
                plain.entry(i as u32, line, &members);
            }
            let plain = plain.into_counts();
            assert!(nested.messages > 0, "{name}");
            assert_eq!(plain, nested, "{name}");
        }
    }

    #[test]
    fn records_are_reused_extended_or_dropped() {
        let d = dir();
        let s = d.join("s.jsonl");
        let head = "{\"type\":\"session\",\"version\":3,\"id\":\"x\",\"cwd\":\"/\"}\n";
        let msg = |id: &str, text: &str| {
            format!(
                "{{\"type\":\"message\",\"id\":\"{id}\",\"parentId\":null,\"message\":{{\"role\":\"user\",\"content\":\"{text}\",\"timestamp\":5}}}}\n"
            )
        };
        std::fs::write(&s, format!("{head}{}", msg("00000001", "hi"))).unwrap();
        let cold = Cache::new(&d).summary(&s).unwrap();
        assert_eq!(cold.counts.messages, 1);
        let r = settled(&d, &s);
        let file = File::open(&s).unwrap();
        let meta = file.metadata().unwrap();
        assert!(matches!(reuse(&file, &meta, r), Some(Reuse::Same(_))));
        assert_eq!(Cache::new(&d).summary(&s).unwrap(), cold);
        // Grown: only the new line is read.
        let mut f = std::fs::OpenOptions::new().append(true).open(&s).unwrap();
        std::io::Write::write_all(&mut f, msg("00000002", "more").as_bytes()).unwrap();
        let r = settled(&d, &s);
        let meta = file.metadata().unwrap();
        assert!(matches!(reuse(&file, &meta, r), Some(Reuse::Grown(_))));
        let warm = Cache::new(&d).summary(&s).unwrap();
        assert_eq!(warm.counts.messages, 2);
        assert_eq!(warm, Cache::none().summary(&s).unwrap());
        // Same size, other bytes in the middle: the times moved, so the record is dropped.
        let r = settled(&d, &s);
        let text = std::fs::read_to_string(&s)
            .unwrap()
            .replace("\"hi\"", "\"HI\"");
        std::thread::sleep(std::time::Duration::from_millis(20));
        std::fs::write(&s, text).unwrap();
        let meta = file.metadata().unwrap();
        assert!(reuse(&file, &meta, r).is_none());
        assert_eq!(
            Cache::new(&d)
                .summary(&s)
                .unwrap()
                .counts
                .first_message
                .as_deref(),
            Some("HI")
        );
        let _ = std::fs::remove_dir_all(&d);
    }

    /// A log that is mostly superseded records is rewritten with the current ones (not by
    /// a read-only cache), and a line that is not a record is skipped, not fatal.
    #[test]
    fn a_mostly_superseded_log_is_rewritten() {
        let d = std::env::temp_dir().join(format!("pi-summary-log-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        std::fs::create_dir_all(&d).unwrap();
        let s = d.join("s.jsonl");
        std::fs::write(
            &s,
            "{\"type\":\"session\",\"version\":3,\"id\":\"x\",\"cwd\":\"/\"}\n\
             {\"type\":\"message\",\"id\":\"m1\",\"parentId\":null,\"message\":{\"role\":\"user\",\"content\":\"hi\"}}\n",
        )
        .unwrap();
        let cold = Cache::none().summary(&s).unwrap();
        assert_eq!(Cache::new(&d).summary(&s).unwrap(), cold);
        // Trusted, as if written long after the file changed (a read-only cache reads no
        // file without a trusted record).
        settled(&d, &s);
        let log = d.join("cache").join("session-summaries").join(LOG);
        let line = std::fs::read_to_string(&log).unwrap();
        assert_eq!(line.lines().count(), 1);
        let bloated = format!("not a record\n{}", line.repeat(100));
        std::fs::write(&log, &bloated).unwrap();
        let lines = || std::fs::read_to_string(&log).unwrap().lines().count();
        assert_eq!(Cache::read_only(&d).summary(&s).unwrap(), cold);
        assert_eq!(lines(), 101, "a read-only cache writes nothing");
        assert_eq!(Cache::new(&d).summary(&s).unwrap(), cold);
        assert!(lines() <= 2, "{}", lines());
        let _ = std::fs::remove_dir_all(&d);
    }
}

/// The per-entry pass against an independent reading of the same lines (`serde_json`, whose
/// objects keep the last of a repeated key, as `JSON.parse` does): repeated and escaped keys,
/// names written with escapes, runs of one hour and model broken and resumed, and chunk
/// boundaries anywhere (the parallel scan merges visitors with a run still open).
#[cfg(test)]
mod oracle {
    use super::*;
    use proptest::prelude::*;
    use serde_json::{Value, json};

    /// One entry: (kind 0..8, hour 0..3, provider 0..3, model 0..2, tokens, spelling 0..4).
    type Spec = (u8, u8, u8, u8, u32, u8);

    fn line(i: usize, (kind, hour, provider, model, tokens, spelling): Spec) -> String {
        let ts = format!("2026-01-01T0{hour}:00:00.000Z");
        let ms = 1_767_225_600_000i64 + i64::from(hour) * 3_600_000 + i as i64;
        let providers = ["anthropic", "open\\u0061i", "", "x\\\"y"];
        let p = providers[provider as usize % providers.len()];
        let m = ["m1", "m\\u0032"][model as usize % 2];
        // The cost: plain, its total repeated, or a second cost object without a total.
        let cost = match tokens % 3 {
            0 => format!("\"cost\":{{\"input\":0.5,\"total\":0.0{tokens}1}}"),
            1 => format!(
                "\"cost\":{{\"total\":0.25,\"sub\":{{\"total\":2}},\"total\":0.0{tokens}1}}"
            ),
            _ => format!("\"cost\":{{\"total\":0.0{tokens}1}},\"cost\":{{\"input\":0.5}}"),
        };
        let usage = format!(
            "{{\"input\":{tokens},\"output\":7,\"cacheRead\":1,\"cacheWrite\":0,\"totalTokens\":{},{cost}}}",
            tokens + 8
        );
        // A first `usage` that the second one replaces.
        let replaced = "{\"input\":1000,\"output\":1000,\"cost\":{\"total\":9}}";
        let id = format!("{i:08x}");
        match (kind, spelling) {
            // An assistant message, its role key escaped or repeated.
            (0 | 1, 0) => format!(
                "{{\"type\":\"message\",\"id\":\"{id}\",\"timestamp\":\"{ts}\",\"message\":{{\"ro\\u006ce\":\"assistant\",\"content\":\"a\",\"provider\":\"{p}\",\"model\":\"{m}\",\"usage\":{usage},\"timestamp\":{ms}}}}}"
            ),
            (0 | 1, 1) => format!(
                "{{\"type\":\"message\",\"id\":\"{id}\",\"message\":{{\"role\":\"user\",\"role\":\"assistant\",\"content\":[],\"provider\":\"{p}\",\"model\":\"{m}\",\"usage\":{replaced},\"usage\":{usage}}},\"timestamp\":\"{ts}\"}}"
            ),
            (0 | 1, _) => format!(
                "{{\"type\":\"message\",\"id\":\"{id}\",\"timestamp\":\"{ts}\",\"message\":{{\"role\":\"assistant\",\"content\":\"a\",\"provider\":\"{p}\",\"model\":\"{m}\",\"usage\":{usage},\"timestamp\":{ms}}}}}"
            ),
            (2, _) => format!(
                "{{\"type\":\"message\",\"id\":\"{id}\",\"timestamp\":\"{ts}\",\"message\":{{\"role\":\"user\",\"content\":\"hello {i}\"}}}}"
            ),
            (3, 0) => format!(
                "{{\"type\":\"message\",\"id\":\"{id}\",\"timestamp\":\"{ts}\",\"message\":{{\"role\":\"toolResult\",\"content\":[],\"usage\":{usage},\"timestamp\":{ms}}}}}"
            ),
            (3, _) => format!(
                "{{\"type\":\"message\",\"id\":\"{id}\",\"timestamp\":{ms},\"message\":{{\"role\":\"toolResult\",\"content\":[]}}}}"
            ),
            // Usage outside messages: a `usage` entry (its kind, provider and model escaped or
            // not), a compaction and a branch summary with or without usage.
            (6, 0 | 1) => format!(
                "{{\"type\":\"usage\",\"id\":\"{id}\",\"timestamp\":\"{ts}\",\"kind\":\"cache_warm\",\"provider\":\"{p}\",\"model\":\"{m}\",\"usage\":{usage}}}"
            ),
            (6, _) => format!(
                "{{\"type\":\"compaction\",\"id\":\"{id}\",\"timestamp\":\"{ts}\",\"summary\":\"s\",\"usage\":{usage},\"provider\":\"{p}\"}}"
            ),
            (7, 0) => format!(
                "{{\"type\":\"branch_summary\",\"id\":\"{id}\",\"timestamp\":\"{ts}\",\"summary\":\"s\",\"usage\":{usage}}}"
            ),
            (7, _) => format!(
                "{{\"type\":\"compaction\",\"id\":\"{id}\",\"timestamp\":\"{ts}\",\"summary\":\"usage\"}}"
            ),
            (4, _) => format!(
                "{{\"type\":\"session_info\",\"id\":\"{id}\",\"timestamp\":\"{ts}\",\"name\":\" n\\u00e9 {i} \"}}"
            ),
            _ => format!("{{\"t\\u0079pe\":\"custom\",\"id\":\"{id}\",\"timestamp\":\"{ts}\"}}"),
        }
    }

    /// Adds the usage `u` of the hour `hour` with `provider` and `model` to `usage`.
    fn add(
        usage: &mut BTreeMap<(i64, String, String), Usage>,
        u: &Value,
        time: f64,
        provider: &str,
        model: &str,
    ) {
        let hour = time as i64 / 3_600_000 * 3_600_000;
        let key = (hour, provider.to_owned(), model.to_owned());
        let n = |k: &str| u[k].as_u64().unwrap();
        let row = Usage {
            hour_ms: hour,
            provider: key.1.clone(),
            model: key.2.clone(),
            messages: 1,
            input: n("input"),
            output: n("output"),
            cache_read: n("cacheRead"),
            cache_write: n("cacheWrite"),
            total_tokens: n("totalTokens"),
            cost_pico: u["cost"]["total"]
                .as_f64()
                .map_or(0, |c| (c * 1e12).round() as i64),
        };
        match usage.get_mut(&key) {
            Some(t) => t.add(&row),
            None => {
                usage.insert(key, row);
            }
        }
    }

    /// The counts `serde_json` reads from `lines`.
    fn expected(lines: &[String]) -> Counts {
        let mut c = Counts::default();
        let mut usage: BTreeMap<(i64, String, String), Usage> = BTreeMap::new();
        for l in lines {
            let v: Value = serde_json::from_str(l).unwrap();
            c.entries += 1;
            c.last_entry = v["timestamp"].as_str().map(str::to_owned);
            let entry_time = || {
                v["timestamp"]
                    .as_str()
                    .and_then(clock::parse_iso)
                    .map(|t| t as f64)
            };
            match v["type"].as_str() {
                Some(t @ ("usage" | "compaction" | "branch_summary")) if v["usage"].is_object() => {
                    let named = |k: &str| match t {
                        "usage" => v[k].as_str().unwrap().to_owned(),
                        _ => String::new(),
                    };
                    let time = entry_time().unwrap();
                    add(
                        &mut usage,
                        &v["usage"],
                        time,
                        &named("provider"),
                        &named("model"),
                    );
                }
                Some("session_info") => {
                    c.name = Some(v["name"].as_str().unwrap().trim().to_owned());
                }
                Some("message") => {
                    c.messages += 1;
                    let m = &v["message"];
                    let role = m["role"].as_str();
                    let time = m["timestamp"].as_f64().or_else(entry_time);
                    if role == Some("user") {
                        c.user_messages += 1;
                        if c.first_message.is_none() {
                            c.first_message = m["content"].as_str().map(str::to_owned);
                        }
                    }
                    if role == Some("assistant") {
                        c.assistant_messages += 1;
                        let (p, model) = (m["provider"].as_str(), m["model"].as_str());
                        add(
                            &mut usage,
                            &m["usage"],
                            time.unwrap(),
                            p.unwrap(),
                            model.unwrap(),
                        );
                    }
                    if role == Some("toolResult") && m["usage"].is_object() {
                        add(&mut usage, &m["usage"], time.unwrap(), "", "");
                    }
                    if matches!(role, Some("user" | "assistant")) {
                        let t = time.unwrap();
                        c.last_activity = Some(c.last_activity.map_or(t, |a: f64| a.max(t)));
                    }
                }
                _ => {}
            }
        }
        c.usage = usage.into_values().collect();
        c
    }

    /// The visitor over `lines`, split into chunks at `cuts` and merged as the parallel scan
    /// merges them.
    fn visited(lines: &[String], cuts: &[usize]) -> Counts {
        let mut bounds: Vec<usize> = cuts.iter().map(|&c| c % (lines.len() + 1)).collect();
        bounds.extend([0, lines.len()]);
        bounds.sort_unstable();
        let mut total = Visitor::default();
        for w in bounds.windows(2) {
            let mut part = total.split();
            for (i, l) in lines[w[0]..w[1]].iter().enumerate() {
                let l = l.as_bytes();
                let members = json::members(l).unwrap();
                part.entry(i as u32, l, &members);
            }
            total.merge(part, 0);
        }
        total.into_counts()
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(200))]
        #[test]
        fn counts_equal_an_independent_reading(
            specs in proptest::collection::vec(
                (0u8..8, 0u8..3, 0u8..4, 0u8..2, 0u32..50, 0u8..4), 0..40),
            cuts in proptest::collection::vec(0usize..41, 0..3),
        ) {
            let lines: Vec<String> = specs.iter().enumerate().map(|(i, s)| line(i, *s)).collect();
            prop_assert_eq!(visited(&lines, &cuts), expected(&lines));
        }
    }

    #[test]
    fn the_lines_are_valid_and_spell_names_with_escapes() {
        let l = line(3, (0, 1, 1, 1, 5, 0));
        let v: Value = serde_json::from_str(&l).unwrap();
        assert_eq!(v["message"]["provider"], json!("openai"));
        assert_eq!(v["message"]["model"], json!("m2"));
        assert_eq!(v["message"]["role"], json!("assistant"));
    }
}
