//! Token and cost accounting over session files (`pi usage`): every assistant message's
//! `usage`, in every branch, a message copied into another file by a fork counted once.
//!
//! [`read_file`] is the per-file unit (a file to its usage facts, one small record per
//! assistant message): a cache of facts per file can replace it without changing the rest.
//! Which messages count follows `@ccusage/pi` 18.0.11, so the numbers agree with it: the
//! entry's `type` is absent or `message`, its `timestamp` a full ISO 8601 date-time, the
//! message an `assistant` one whose `usage` has numeric `input` and `output`.

use std::borrow::Cow;
use std::collections::{HashMap, HashSet};
use std::fs::File;
use std::path::{Path, PathBuf};
use std::sync::LazyLock;

use serde::Deserialize;

use dates::{Date, DateArg, TimeZone};

mod cache;
pub mod dates;

pub use cache::Cache;

/// A timestamp as written in the file: an ISO 8601 date-time (at most 29 ASCII bytes, as
/// the pattern facts must match allows), kept inline so facts need no allocation.
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
pub struct Ts {
    len: u8,
    bytes: [u8; 31],
}

impl Ts {
    pub fn new(s: &str) -> Option<Ts> {
        let b = s.as_bytes();
        let mut bytes = [0u8; 31];
        bytes.get_mut(..b.len())?.copy_from_slice(b);
        Some(Ts {
            len: b.len() as u8,
            bytes,
        })
    }

    /// The bytes of the timestamp (ordered as its text is).
    pub fn as_bytes(&self) -> &[u8] {
        &self.bytes[..usize::from(self.len).min(31)]
    }

    pub fn as_str(&self) -> &str {
        std::str::from_utf8(&self.bytes[..usize::from(self.len).min(31)]).unwrap_or("")
    }
}

impl std::fmt::Debug for Ts {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{:?}", self.as_str())
    }
}

/// No string (an index or offset field that is absent).
const NONE: u32 = u32::MAX;

/// One assistant message's usage. Its strings live in its [`FileUsage`].
#[derive(Debug, Clone, Copy)]
pub struct Fact {
    pub timestamp: Ts,
    pub ms: i64,
    /// Index into the file's `models`.
    pub model: u32,
    /// Index into the file's `stop_reasons` ([`NONE`]: none).
    stop_reason: u32,
    /// Byte range of the entry id in the file's `ids` ([`NONE`] start: none).
    entry_id: (u32, u32),
    /// The timestamp is the one `ms` formats to (`YYYY-MM-DDTHH:MM:SS.sssZ`), so `ms` alone
    /// tells it apart from other such timestamps.
    canonical: bool,
    pub tokens: Tokens,
}

/// Token counts and cost (JavaScript numbers, as the files hold them).
#[derive(Debug, Clone, Copy, Default)]
pub struct Tokens {
    pub input: f64,
    pub output: f64,
    pub cache_read: f64,
    pub cache_write: f64,
    pub total: f64,
    pub cost: f64,
}

impl Tokens {
    pub fn add(&mut self, o: &Tokens) {
        self.input += o.input;
        self.output += o.output;
        self.cache_read += o.cache_read;
        self.cache_write += o.cache_write;
        self.total += o.total;
        self.cost += o.cost;
    }
}

/// The provider and model an assistant message names.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Model {
    pub provider: Option<String>,
    pub model: Option<String>,
}

impl Model {
    /// The name a fact is counted under: `provider/model`.
    pub fn key(&self) -> String {
        match (&self.provider, &self.model) {
            (Some(p), Some(m)) => format!("{p}/{m}"),
            (None, Some(m)) => m.clone(),
            (_, None) => "unknown".into(),
        }
    }
}

/// The usage of one session file.
#[derive(Debug, Clone, Default)]
pub struct FileUsage {
    pub path: PathBuf,
    /// The header's id (else the file name's part after `_`).
    pub session: String,
    pub cwd: String,
    pub facts: Vec<Fact>,
    /// The provider/model pairs facts name (each once).
    pub models: Vec<Model>,
    /// The stop reasons facts name (each once).
    pub stop_reasons: Vec<String>,
    /// The entry ids of the facts, one after another.
    pub ids: String,
}

impl FileUsage {
    pub fn entry_id(&self, f: &Fact) -> Option<&str> {
        let (at, len) = (f.entry_id.0 as usize, f.entry_id.1 as usize);
        (f.entry_id.0 != NONE)
            .then(|| self.ids.get(at..at + len))
            .flatten()
    }

    pub fn stop_reason(&self, f: &Fact) -> Option<&str> {
        self.stop_reasons
            .get(f.stop_reason as usize)
            .map(String::as_str)
    }

    pub fn model(&self, f: &Fact) -> Option<&Model> {
        self.models.get(f.model as usize)
    }

    /// Adds a parsed fact, its strings stored once.
    fn push(&mut self, p: Parsed<'_>, interned: &mut Interned) {
        let model = Model {
            provider: p.provider,
            model: p.model.map(Cow::into_owned),
        };
        let model = match interned.models.get(&model) {
            Some(&i) => i,
            None => {
                let i = self.models.len() as u32;
                interned.models.insert(model.clone(), i);
                self.models.push(model);
                i
            }
        };
        let stop_reason = match p.stop_reason {
            None => NONE,
            Some(s) => match interned.stops.get(&s) {
                Some(&i) => i,
                None => {
                    let i = self.stop_reasons.len() as u32;
                    interned.stops.insert(s.clone(), i);
                    self.stop_reasons.push(s);
                    i
                }
            },
        };
        let entry_id = match p.entry_id {
            Some(id) if self.ids.len() + id.len() < NONE as usize => {
                let at = self.ids.len() as u32;
                self.ids.push_str(&id);
                (at, id.len() as u32)
            }
            _ => (NONE, 0),
        };
        self.facts.push(Fact {
            timestamp: p.timestamp,
            ms: p.ms,
            model,
            stop_reason,
            entry_id,
            canonical: pi_base::clock::format_iso(p.ms) == p.timestamp.as_str(),
            tokens: p.tokens,
        });
    }
}

/// The strings a [`FileUsage`] under construction holds, by value.
#[derive(Default)]
struct Interned {
    models: HashMap<Model, u32>,
    stops: HashMap<String, u32>,
}

impl Interned {
    fn of(f: &FileUsage) -> Interned {
        Interned {
            models: f
                .models
                .iter()
                .enumerate()
                .map(|(i, m)| (m.clone(), i as u32))
                .collect(),
            stops: f
                .stop_reasons
                .iter()
                .enumerate()
                .map(|(i, s)| (s.clone(), i as u32))
                .collect(),
        }
    }
}

/// A fact as parsed from a line, before its strings are stored.
struct Parsed<'a> {
    timestamp: Ts,
    ms: i64,
    entry_id: Option<Cow<'a, str>>,
    provider: Option<String>,
    model: Option<Cow<'a, str>>,
    stop_reason: Option<String>,
    tokens: Tokens,
}

#[derive(Deserialize)]
struct Line<'a> {
    #[serde(rename = "type", borrow)]
    ty: Option<Cow<'a, str>>,
    #[serde(borrow)]
    timestamp: Cow<'a, str>,
    #[serde(borrow)]
    id: Option<Cow<'a, str>>,
    #[serde(borrow)]
    message: Msg<'a>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct Msg<'a> {
    #[serde(borrow)]
    role: Option<Cow<'a, str>>,
    #[serde(borrow)]
    model: Option<Cow<'a, str>>,
    provider: Option<serde_json::Value>,
    stop_reason: Option<serde_json::Value>,
    usage: Option<Usage>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct Usage {
    input: f64,
    output: f64,
    cache_read: Option<f64>,
    cache_write: Option<f64>,
    total_tokens: Option<f64>,
    cost: Option<Cost>,
}

#[derive(Deserialize)]
struct Cost {
    total: Option<f64>,
}

static ISO: LazyLock<Option<regex::Regex>> = LazyLock::new(|| {
    regex::Regex::new(r"^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(?:\.\d{3})?(?:Z|[+-]\d{2}:\d{2})$")
        .ok()
});

/// The bytes every line with a fact holds (the quick test before parsing a line).
const QUICK: &[u8] = b"\"usage\"";

fn fact(line: &[u8]) -> Option<Parsed<'_>> {
    let l: Line = serde_json::from_slice(line).ok()?;
    if l.ty.as_deref().is_some_and(|t| t != "message")
        || l.message.role.as_deref() != Some("assistant")
    {
        return None;
    }
    if !ISO.as_ref().is_some_and(|re| re.is_match(&l.timestamp)) {
        return None;
    }
    let u = l.message.usage?;
    let (cr, cw) = (u.cache_read.unwrap_or(0.0), u.cache_write.unwrap_or(0.0));
    let text = |v: Option<serde_json::Value>| v.and_then(|v| v.as_str().map(str::to_owned));
    Some(Parsed {
        ms: pi_base::clock::parse_iso(&l.timestamp)?,
        timestamp: Ts::new(&l.timestamp)?,
        entry_id: l.id,
        provider: text(l.message.provider),
        model: l.message.model,
        stop_reason: text(l.message.stop_reason),
        tokens: Tokens {
            input: u.input,
            output: u.output,
            cache_read: cr,
            cache_write: cw,
            total: u.total_tokens.unwrap_or(u.input + u.output + cr + cw),
            cost: u.cost.and_then(|c| c.total).unwrap_or(0.0),
        },
    })
}

/// Adds the facts of the lines of `file[from..to]` to `into` (the facts of a last line
/// without its `\n` too). Returns the offset after the last complete line, and how many of
/// `into`'s facts come from complete lines.
fn add_facts(
    file: &File,
    from: u64,
    to: u64,
    into: &mut FileUsage,
) -> std::io::Result<(u64, usize)> {
    let mut interned = Interned::of(into);
    let (mut complete, mut recorded) = (from, into.facts.len());
    let finder = memchr::memmem::Finder::new(QUICK);
    if from < to {
        crate::scan::for_each_line_in(file, from, to, |at, _, line, terminated| {
            if finder.find(line).is_some()
                && let Some(p) = fact(line)
            {
                into.push(p, &mut interned);
            }
            if terminated {
                complete = at + line.len() as u64 + 1;
                recorded = into.facts.len();
            }
        })?;
    }
    Ok((complete, recorded))
}

/// The session id and cwd of a file: its header's, else the file name's part after `_`.
fn identity(path: &Path) -> (String, String) {
    let header = crate::find::read_header(path);
    let name_id = || {
        let stem = path
            .file_stem()
            .map(|s| s.to_string_lossy().into_owned())
            .unwrap_or_default();
        stem.split_once('_')
            .map_or(stem.clone(), |(_, id)| id.to_owned())
    };
    (
        header.as_ref().map_or_else(name_id, |h| h.id.clone()),
        header.map(|h| h.cwd).unwrap_or_default(),
    )
}

/// The usage facts of one file, in file order, read from the file. Lines that are not JSON
/// or not assistant messages with usage are skipped.
pub(crate) fn read_file(path: &Path) -> std::io::Result<FileUsage> {
    let file = File::open(path)?;
    let len = file.metadata()?.len();
    let (session, cwd) = identity(path);
    let mut out = FileUsage {
        path: path.to_owned(),
        session,
        cwd,
        ..FileUsage::default()
    };
    add_facts(&file, 0, len, &mut out)?;
    Ok(out)
}

/// A quick multiplicative hash (the keys are timestamps and numbers from the user's own
/// files; SipHash's protection against chosen collisions is not worth its time here).
#[derive(Default, Clone, Copy)]
struct Quick(u64);

impl Quick {
    fn add(&mut self, w: u64) {
        self.0 = (self.0.rotate_left(5) ^ w).wrapping_mul(0x517c_c1b7_2722_0a95);
    }
}

impl std::hash::Hasher for Quick {
    fn write(&mut self, bytes: &[u8]) {
        let mut words = bytes.chunks_exact(8);
        for w in &mut words {
            let mut b = [0u8; 8];
            b.copy_from_slice(w);
            self.add(u64::from_le_bytes(b));
        }
        let mut b = [0u8; 8];
        let rest = words.remainder();
        b[..rest.len()].copy_from_slice(rest);
        self.add(u64::from_le_bytes(b) ^ ((rest.len() as u64) << 56));
    }

    fn write_u8(&mut self, n: u8) {
        self.add(u64::from(n));
    }

    fn write_u64(&mut self, n: u64) {
        self.add(n);
    }

    fn write_usize(&mut self, n: usize) {
        self.add(n as u64);
    }

    fn finish(&self) -> u64 {
        self.0
    }
}

/// The facts seen so far, for counting each message once: a fact with the timestamp and
/// total tokens of one already seen (a fork's copy) is dropped.
#[derive(Default)]
pub struct Seen {
    /// Facts with a canonical timestamp, by instant (the same instant means the same
    /// timestamp among them) and total tokens: half the memory of the text.
    canonical: HashSet<(i64, u64), std::hash::BuildHasherDefault<Quick>>,
    /// The others, by timestamp as written.
    other: HashSet<(Ts, u64), std::hash::BuildHasherDefault<Quick>>,
}

impl Seen {
    /// Drops the facts of `f` that were seen in an earlier file (or earlier in `f`), so
    /// each message counts in the file that comes first; give the files in order.
    pub fn admit(&mut self, f: &mut FileUsage) {
        self.canonical.reserve(f.facts.len());
        f.facts.retain(|x| {
            let total = x.tokens.total.to_bits();
            if x.canonical {
                self.canonical.insert((x.ms, total))
            } else {
                self.other.insert((x.timestamp, total))
            }
        });
    }
}

/// [`Seen::admit`] over `files`, in order.
pub fn dedup(files: &mut [FileUsage]) {
    let mut seen = Seen::default();
    for f in files {
        seen.admit(f);
    }
}

/// How rows are grouped.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum By {
    Daily,
    Weekly,
    Monthly,
    Session,
    Model,
    Project,
}

/// One row of a report.
#[derive(Debug, Clone)]
pub struct Row {
    /// The day, the Monday of the week, the month, the session id, the model or the cwd.
    pub key: String,
    /// For sessions: the file, the cwd and the day of the last message.
    pub session: Option<(PathBuf, String, String)>,
    pub tokens: Tokens,
    /// Per model, in the order first used.
    pub models: Vec<(String, Tokens)>,
}

/// The date filter of a report: whole days in the report's zone, or instants.
pub struct Range {
    pub since: Option<DateArg>,
    pub until: Option<DateArg>,
    pub now_ms: i64,
}

impl Range {
    /// Whether the range lets in an instant of the day `day` (that instant's calendar day).
    pub fn admits(&self, ms: i64, day: Option<Date>, tz: &TimeZone) -> bool {
        let ok = |b: DateArg, lower: bool| match b {
            DateArg::Day(d) => day.is_some_and(|x| if lower { x >= d } else { x <= d }),
            _ if lower => ms >= b.start_ms(tz, self.now_ms),
            _ => ms <= b.end_ms(tz, self.now_ms),
        };
        self.since.is_none_or(|b| ok(b, true)) && self.until.is_none_or(|b| ok(b, false))
    }
}

/// Calendar days of instants in one zone, remembering the last day's span: facts come
/// mostly in time order, so most need no time-zone arithmetic.
pub struct Days<'a> {
    tz: &'a TimeZone,
    /// `[start, end)` in ms, and its day.
    last: Option<(i64, i64, Date)>,
}

impl<'a> Days<'a> {
    pub fn new(tz: &'a TimeZone) -> Days<'a> {
        Days { tz, last: None }
    }

    pub fn of(&mut self, ms: i64) -> Option<Date> {
        if let Some((start, end, d)) = self.last
            && (start..end).contains(&ms)
        {
            return Some(d);
        }
        let d = dates::day_of(ms, self.tz)?;
        let start = dates::day_start_ms(d, self.tz);
        let end = d
            .succ_opt()
            .map_or(i64::MIN, |n| dates::day_start_ms(n, self.tz));
        // Only a span that holds the instant is remembered (odd zones stay exact).
        self.last = (start..end).contains(&ms).then_some((start, end, d));
        Some(d)
    }
}

/// What a fact is grouped by, before it becomes a row's key.
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
enum Group {
    Day(Date),
    File(usize),
    Model(usize, u32),
    None,
}

/// Groups the facts of `files` (already deduplicated) into rows, newest first (models and
/// projects: most expensive first).
pub fn report(files: &[FileUsage], by: By, tz: &TimeZone, range: &Range) -> Vec<Row> {
    let mut report = Report {
        by,
        tz,
        range,
        rows: Vec::new(),
        by_key: HashMap::new(),
        by_group: HashMap::default(),
        days: Days::new(tz),
    };
    for (fi, f) in files.iter().enumerate() {
        report.add_file(fi, f);
    }
    let mut rows = report.rows;
    rows.retain(|r| !r.key.is_empty());
    match by {
        By::Session => rows.sort_by(|a, b| last_day(b).cmp(last_day(a))),
        By::Model | By::Project => rows.sort_by(|a, b| b.tokens.cost.total_cmp(&a.tokens.cost)),
        _ => rows.sort_by(|a, b| b.key.cmp(&a.key)),
    }
    rows
}

/// A map with [`Quick`] hashing.
type QuickMap<K> = HashMap<K, usize, std::hash::BuildHasherDefault<Quick>>;

/// A report while its rows are gathered, file by file.
struct Report<'a> {
    by: By,
    tz: &'a TimeZone,
    range: &'a Range,
    rows: Vec<Row>,
    /// The row of each key.
    by_key: HashMap<String, usize>,
    /// The row of each group (groups of a file, and of its models, only while it is added).
    by_group: QuickMap<Group>,
    days: Days<'a>,
}

impl Report<'_> {
    /// Adds the facts of the file `f` (the `fi`th) to their rows.
    fn add_file(&mut self, fi: usize, f: &FileUsage) {
        let keys: Vec<String> = f.models.iter().map(Model::key).collect();
        // Per model of the file: the row's breakdown slot, found once per row.
        let mut slots: QuickMap<(usize, u32)> = HashMap::default();
        // The last fact's row and breakdown slot: most facts share them with the one before.
        let mut last_slot: Option<((usize, u32), usize)> = None;
        let mut last_row: Option<(Group, usize)> = None;
        let mut last: Option<&Fact> = None;
        for x in &f.facts {
            let day = self.days.of(x.ms);
            if self.by == By::Session {
                if last.is_none_or(|l| x.timestamp.as_bytes() > l.timestamp.as_bytes()) {
                    last = Some(x);
                }
            } else if !self.range.admits(x.ms, day, self.tz) {
                continue;
            }
            let group = match self.by {
                By::Daily => day.map_or(Group::None, Group::Day),
                By::Weekly => day.map_or(Group::None, |d| Group::Day(dates::week_start(d))),
                By::Monthly => day.map_or(Group::None, |d| Group::Day(dates::month_start(d))),
                By::Session | By::Project => Group::File(fi),
                By::Model => Group::Model(fi, x.model),
            };
            let i = match (last_row, self.by_group.get(&group)) {
                (Some((g, i)), _) if g == group => i,
                (_, Some(&i)) => i,
                (_, None) => self.row_of(group, f, &keys, x.model),
            };
            last_row = Some((group, i));
            let row = &mut self.rows[i];
            row.tokens.add(&x.tokens);
            let slot = match (last_slot, slots.get(&(i, x.model))) {
                (Some((s, k)), _) if s == (i, x.model) => k,
                (_, Some(&k)) => k,
                (_, None) => {
                    let k = model_slot(row, model_key(&keys, x.model));
                    slots.insert((i, x.model), k);
                    k
                }
            };
            last_slot = Some(((i, x.model), slot));
            row.models[slot].1.add(&x.tokens);
        }
        // Groups of files (and of a file's models) are not shared with the next file.
        self.by_group.retain(|g, _| matches!(g, Group::Day(_)));
        if self.by == By::Session
            && let Some(l) = last
        {
            self.end_session(f, l);
        }
    }

    /// The row of a group not seen yet: the row of its key, made when new.
    fn row_of(&mut self, group: Group, f: &FileUsage, keys: &[String], model: u32) -> usize {
        let key = match (self.by, group) {
            (By::Daily | By::Weekly, Group::Day(d)) => d.to_string(),
            (By::Monthly, Group::Day(d)) => d.to_string().chars().take(7).collect(),
            (By::Session, _) => f.path.to_string_lossy().into_owned(),
            (By::Model, _) => model_key(keys, model),
            (By::Project, _) => f.cwd.clone(),
            _ => String::new(),
        };
        let rows = &mut self.rows;
        let i = *self.by_key.entry(key.clone()).or_insert_with(|| {
            rows.push(Row {
                key,
                session: None,
                tokens: Tokens::default(),
                models: Vec::new(),
            });
            rows.len() - 1
        });
        self.by_group.insert(group, i);
        i
    }

    /// Completes the row of a session file whose last message is `l`: keyed by the session
    /// id, with its file, cwd and day; dropped when that message is out of the range.
    fn end_session(&mut self, f: &FileUsage, l: &Fact) {
        let path_key = f.path.to_string_lossy();
        let Some(&i) = self.by_key.get(path_key.as_ref()) else {
            return;
        };
        let day = self.days.of(l.ms);
        if !self.range.admits(l.ms, day, self.tz) {
            self.by_key.remove(path_key.as_ref());
            self.rows[i].key.clear();
            return;
        }
        let day = day.map_or_else(String::new, |d| d.to_string());
        self.rows[i].session = Some((f.path.clone(), f.cwd.clone(), day));
        self.rows[i].key = f.session.clone();
    }
}

/// The provider/model key of a file's model `model`.
fn model_key(keys: &[String], model: u32) -> String {
    keys.get(model as usize).cloned().unwrap_or_default()
}

/// Where the row's breakdown keeps the model `m` (added when new).
fn model_slot(row: &mut Row, m: String) -> usize {
    match row.models.iter().position(|(k, _)| *k == m) {
        Some(k) => k,
        None => {
            row.models.push((m, Tokens::default()));
            row.models.len() - 1
        }
    }
}

fn last_day(r: &Row) -> &str {
    r.session.as_ref().map_or("", |s| s.2.as_str())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The remembered day span gives the day `dates::day_of` gives, across daylight-saving
    /// changes, half-hour zones and going back in time.
    #[test]
    fn remembered_days_equal_computed_ones() {
        for zone in ["Europe/Berlin", "America/St_Johns", "Asia/Kolkata", "UTC"] {
            let tz = TimeZone::get(zone).unwrap();
            let mut days = Days::new(&tz);
            // 2025-03-29 to 2025-04-01 (a spring change) in 17-minute steps, then backwards.
            let start = pi_base::clock::parse_iso("2025-03-29T00:00:00.000Z").unwrap();
            let steps: Vec<i64> = (0..300).map(|k| start + k * 17 * 60_000).collect();
            for &ms in steps.iter().chain(steps.iter().rev()) {
                assert_eq!(days.of(ms), dates::day_of(ms, &tz), "{zone} {ms}");
            }
        }
    }

    #[test]
    fn quick_hash_tells_keys_apart() {
        use std::hash::{BuildHasher, BuildHasherDefault};
        let b = BuildHasherDefault::<Quick>::default();
        let a = Ts::new("2025-01-01T00:00:00.000Z").unwrap();
        let c = Ts::new("2025-01-01T00:00:00.001Z").unwrap();
        assert_ne!(b.hash_one((a, 1u64)), b.hash_one((c, 1u64)));
        assert_ne!(b.hash_one((a, 1u64)), b.hash_one((a, 2u64)));
        assert_eq!(b.hash_one((a, 1u64)), b.hash_one((a, 1u64)));
        assert!(Ts::new(&"x".repeat(32)).is_none());
        assert_eq!(Ts::new("abc").unwrap().as_str(), "abc");
    }

    /// Timestamps that name the same instant in different forms are different messages,
    /// as `@ccusage/pi` counts them; the same form twice is one.
    #[test]
    fn copies_are_told_by_timestamp_as_written_and_total() {
        let fact = |ts: &str, total: f64| Parsed {
            timestamp: Ts::new(ts).unwrap(),
            ms: pi_base::clock::parse_iso(ts).unwrap(),
            entry_id: None,
            provider: None,
            model: None,
            stop_reason: None,
            tokens: Tokens {
                total,
                ..Tokens::default()
            },
        };
        let file = |facts: Vec<Parsed<'static>>| {
            let mut f = FileUsage::default();
            let mut i = Interned::default();
            for p in facts {
                f.push(p, &mut i);
            }
            f
        };
        let mut files = vec![
            file(vec![
                fact("2025-01-01T00:00:00.000Z", 5.0),
                fact("2025-01-01T00:00:00Z", 5.0),
            ]),
            file(vec![
                fact("2025-01-01T00:00:00.000Z", 5.0),
                fact("2025-01-01T00:00:00Z", 5.0),
                fact("2025-01-01T00:00:00.000+00:00", 5.0),
                fact("2025-01-01T00:00:00.000Z", 6.0),
            ]),
        ];
        assert!(files[0].facts[0].canonical && !files[0].facts[1].canonical);
        dedup(&mut files);
        assert_eq!(files[0].facts.len(), 2);
        let left: Vec<_> = files[1]
            .facts
            .iter()
            .map(|x| (x.timestamp.as_str(), x.tokens.total))
            .collect();
        assert_eq!(
            left,
            [
                ("2025-01-01T00:00:00.000+00:00", 5.0),
                ("2025-01-01T00:00:00.000Z", 6.0)
            ]
        );
    }
}
