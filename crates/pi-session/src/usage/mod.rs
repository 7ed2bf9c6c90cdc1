//! Token and cost accounting over session files (`pi usage`): the usage of every entry that
//! carries one, in every branch, an entry copied into another file by a fork counted once.
//!
//! [`read_file`] is the per-file unit (a file to its usage facts, one small record per entry
//! with usage): a cache of facts per file can replace it without changing the rest.
//! Which entries count follows the reference 1.6's session totals (`getSessionStats`):
//! assistant messages, tool results with `usage`, `usage` entries, and compactions and branch
//! summaries with `usage`; tokens are input + output + cache reads + cache writes, cost is
//! `usage.cost.total`, and a message is attributed to its `responseModel` when it names one.
//! Tool results and summaries name no model ([`Model::unattributed`]). As `@ccusage/pi`
//! 18.0.11 (whose numbers equal the assistant messages' share), an entry needs a full
//! ISO 8601 `timestamp` and a `usage` with numeric `input` and `output`; a message entry's
//! `type` may be absent (docs/decisions.md §1).

use std::borrow::Cow;
use std::collections::{HashMap, HashSet};
use std::fs::File;
use std::path::{Path, PathBuf};
use std::sync::LazyLock;

use serde::Deserialize;

use dates::{Date, DateArg, TimeZone};

pub mod blocks;
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

/// One entry's usage. Its strings live in its [`FileUsage`].
#[derive(Debug, Clone, Copy)]
pub struct Fact {
    pub timestamp: Ts,
    pub ms: i64,
    /// Index into the file's `models`.
    pub model: u32,
    /// Index into the file's `origins`.
    pub origin: u32,
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

/// The key under which the reference 1.6 groups usage that names no model (tool results,
/// compactions, branch summaries) in its cost breakdown.
pub const UNATTRIBUTED: &str = "Tools/summaries";

/// The provider and model an entry names.
#[derive(Debug, Clone, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
pub struct Model {
    pub provider: Option<String>,
    /// The model requested (`model`).
    pub model: Option<String>,
    /// The model the provider reports having answered (`responseModel`), when it differs or
    /// is recorded.
    pub response: Option<String>,
    /// Usage of an entry that names no model: a tool result's or a summary's.
    pub unattributed: bool,
}

impl Model {
    /// The name a fact is counted under: `provider/model`, the model being the one that
    /// answered ([`UNATTRIBUTED`] for tool results and summaries).
    pub fn key(&self) -> String {
        if self.unattributed {
            return UNATTRIBUTED.into();
        }
        match (
            &self.provider,
            self.response.as_ref().or(self.model.as_ref()),
        ) {
            (Some(p), Some(m)) => format!("{p}/{m}"),
            (None, Some(m)) => m.clone(),
            (_, None) => "unknown".into(),
        }
    }
}

/// The kind of entry a usage comes from.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, serde::Serialize, serde::Deserialize,
)]
pub enum Source {
    /// An assistant message (all `@ccusage/pi` counts).
    #[serde(rename = "assistant")]
    Assistant,
    /// A tool result that reports the model calls its tool made.
    #[serde(rename = "toolResult")]
    ToolResult,
    /// A `usage` entry (cache warming and other model calls outside the conversation).
    #[serde(rename = "usage")]
    Usage,
    /// The model call that wrote a compaction's summary.
    #[serde(rename = "compaction")]
    Compaction,
    /// The model call that wrote a branch summary.
    #[serde(rename = "branch_summary")]
    BranchSummary,
}

impl Source {
    /// The name of the source: the message role or the entry type.
    pub fn name(self) -> &'static str {
        match self {
            Source::Assistant => "assistant",
            Source::ToolResult => "toolResult",
            Source::Usage => "usage",
            Source::Compaction => "compaction",
            Source::BranchSummary => "branch_summary",
        }
    }
}

/// Where a fact's usage comes from: the kind of entry and, for `usage` entries, its `kind`
/// (such as `cache_warm`).
#[derive(
    Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, serde::Serialize, serde::Deserialize,
)]
pub struct Origin {
    pub source: Source,
    pub kind: Option<String>,
}

impl Origin {
    /// The name a fact's source is counted under: the source's name, and for `usage` entries
    /// with a kind `usage:KIND`.
    pub fn key(&self) -> String {
        match &self.kind {
            Some(k) => format!("{}:{k}", self.source.name()),
            None => self.source.name().into(),
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
    /// The origins of facts (each once).
    pub origins: Vec<Origin>,
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

    pub fn origin(&self, f: &Fact) -> Option<&Origin> {
        self.origins.get(f.origin as usize)
    }

    /// Adds a parsed fact, its strings stored once.
    fn push(&mut self, p: Parsed<'_>, interned: &mut Interned) {
        let model = intern(&mut self.models, &mut interned.models, p.model);
        let origin = intern(&mut self.origins, &mut interned.origins, p.origin);
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
            origin,
            stop_reason,
            entry_id,
            canonical: pi_base::clock::format_iso(p.ms) == p.timestamp.as_str(),
            tokens: p.tokens,
        });
    }
}

/// The index of `value` in `list`, added when new.
fn intern<T: Clone + Eq + std::hash::Hash>(
    list: &mut Vec<T>,
    index: &mut HashMap<T, u32>,
    value: T,
) -> u32 {
    match index.get(&value) {
        Some(&i) => i,
        None => {
            let i = list.len() as u32;
            index.insert(value.clone(), i);
            list.push(value);
            i
        }
    }
}

/// The strings a [`FileUsage`] under construction holds, by value.
#[derive(Default)]
struct Interned {
    models: HashMap<Model, u32>,
    origins: HashMap<Origin, u32>,
    stops: HashMap<String, u32>,
}

impl Interned {
    fn of(f: &FileUsage) -> Interned {
        Interned {
            models: index_of(&f.models),
            origins: index_of(&f.origins),
            stops: index_of(&f.stop_reasons),
        }
    }
}

/// Each value of `l` to its index.
fn index_of<T: Clone + Eq + std::hash::Hash>(l: &[T]) -> HashMap<T, u32> {
    l.iter()
        .enumerate()
        .map(|(i, v)| (v.clone(), i as u32))
        .collect()
}

/// A fact as parsed from a line, before its strings are stored.
struct Parsed<'a> {
    timestamp: Ts,
    ms: i64,
    entry_id: Option<Cow<'a, str>>,
    model: Model,
    origin: Origin,
    stop_reason: Option<String>,
    tokens: Tokens,
}

/// The fields of an entry that usage facts are made of: a message's, or those of `usage`,
/// `compaction` and `branch_summary` entries.
#[derive(Deserialize)]
struct Line<'a> {
    #[serde(rename = "type", borrow)]
    ty: Option<Cow<'a, str>>,
    #[serde(borrow)]
    timestamp: Cow<'a, str>,
    #[serde(borrow)]
    id: Option<Cow<'a, str>>,
    #[serde(borrow)]
    message: Option<Msg<'a>>,
    usage: Option<Usage>,
    kind: Option<serde_json::Value>,
    provider: Option<serde_json::Value>,
    model: Option<serde_json::Value>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct Msg<'a> {
    #[serde(borrow)]
    role: Option<Cow<'a, str>>,
    #[serde(borrow)]
    model: Option<Cow<'a, str>>,
    response_model: Option<serde_json::Value>,
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

fn text(v: Option<serde_json::Value>) -> Option<String> {
    match v {
        Some(serde_json::Value::String(s)) => Some(s),
        _ => None,
    }
}

/// Usage that names no model (a tool result's, a summary's).
fn unattributed() -> Model {
    Model {
        provider: None,
        model: None,
        response: None,
        unattributed: true,
    }
}

fn fact(line: &[u8]) -> Option<Parsed<'_>> {
    let l: Line = serde_json::from_slice(line).ok()?;
    let origin = |source| Origin { source, kind: None };
    let (origin, usage, model, stop_reason) = match l.ty.as_deref() {
        None | Some("message") => {
            let m = l.message?;
            match m.role.as_deref() {
                Some("assistant") => (
                    origin(Source::Assistant),
                    m.usage?,
                    Model {
                        provider: text(m.provider),
                        model: m.model.map(Cow::into_owned),
                        response: text(m.response_model),
                        unattributed: false,
                    },
                    text(m.stop_reason),
                ),
                Some("toolResult") => (origin(Source::ToolResult), m.usage?, unattributed(), None),
                _ => return None,
            }
        }
        Some("usage") => (
            Origin {
                source: Source::Usage,
                kind: text(l.kind),
            },
            l.usage?,
            Model {
                provider: text(l.provider),
                model: text(l.model),
                response: None,
                unattributed: false,
            },
            None,
        ),
        Some("compaction") => (origin(Source::Compaction), l.usage?, unattributed(), None),
        Some("branch_summary") => (
            origin(Source::BranchSummary),
            l.usage?,
            unattributed(),
            None,
        ),
        Some(_) => return None,
    };
    if !ISO.as_ref().is_some_and(|re| re.is_match(&l.timestamp)) {
        return None;
    }
    let (cr, cw) = (
        usage.cache_read.unwrap_or(0.0),
        usage.cache_write.unwrap_or(0.0),
    );
    Some(Parsed {
        ms: pi_base::clock::parse_iso(&l.timestamp)?,
        timestamp: Ts::new(&l.timestamp)?,
        entry_id: l.id,
        model,
        origin,
        stop_reason,
        tokens: Tokens {
            input: usage.input,
            output: usage.output,
            cache_read: cr,
            cache_write: cw,
            // The reference 1.6's total, whatever `totalTokens` says (docs/decisions.md §1).
            total: usage.input + usage.output + cr + cw,
            cost: usage.cost.and_then(|c| c.total).unwrap_or(0.0),
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

/// The facts seen so far, for counting each entry once: a fact with the source, timestamp
/// and total tokens of one already seen (a fork's copy) is dropped.
#[derive(Default)]
pub struct Seen {
    /// Facts with a canonical timestamp, by instant (the same instant means the same
    /// timestamp among them), total tokens and source: half the memory of the text.
    canonical: HashSet<(i64, u64, Source), std::hash::BuildHasherDefault<Quick>>,
    /// The others, by timestamp as written.
    other: HashSet<(Ts, u64, Source), std::hash::BuildHasherDefault<Quick>>,
}

impl Seen {
    /// Drops the facts of `f` that were seen in an earlier file (or earlier in `f`), so
    /// each entry counts in the file that comes first; give the files in order.
    pub fn admit(&mut self, f: &mut FileUsage) {
        self.canonical.reserve(f.facts.len());
        let origins = &f.origins;
        f.facts.retain(|x| {
            let total = x.tokens.total.to_bits();
            let source = origins
                .get(x.origin as usize)
                .map_or(Source::Assistant, |o| o.source);
            if x.canonical {
                self.canonical.insert((x.ms, total, source))
            } else {
                self.other.insert((x.timestamp, total, source))
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
    /// Per origin (where the usage comes from), in [`Origin`]'s order: assistant messages,
    /// tool results, `usage` entries by kind, compactions, branch summaries.
    pub origins: Vec<(Origin, Tokens)>,
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
    for r in &mut rows {
        r.origins.sort_by(|a, b| a.0.cmp(&b.0));
    }
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
        // Per model and per origin of the file: the row's breakdown slot, found once per row.
        let (mut models, mut origins) = (Slots::default(), Slots::default());
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
            let m = models.slot(&mut row.models, i, x.model, || model_key(&keys, x.model));
            row.models[m].1.add(&x.tokens);
            let o = origins.slot(&mut row.origins, i, x.origin, || {
                f.origin(x).cloned().unwrap_or(Origin {
                    source: Source::Assistant,
                    kind: None,
                })
            });
            row.origins[o].1.add(&x.tokens);
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
                origins: Vec::new(),
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

/// Where rows keep the breakdown entry of each of a file's models (or origins), found once
/// per row; most facts share theirs with the fact before.
#[derive(Default)]
struct Slots {
    by_id: QuickMap<(usize, u32)>,
    last: Option<((usize, u32), usize)>,
}

impl Slots {
    /// The index in `list` (the breakdown of row `row`) of the file's model or origin `id`,
    /// whose key is `key()`; added when new.
    fn slot<K: PartialEq>(
        &mut self,
        list: &mut Vec<(K, Tokens)>,
        row: usize,
        id: u32,
        key: impl FnOnce() -> K,
    ) -> usize {
        let k = match (self.last, self.by_id.get(&(row, id))) {
            (Some((s, k)), _) if s == (row, id) => k,
            (_, Some(&k)) => k,
            (_, None) => {
                let key = key();
                let k = match list.iter().position(|(x, _)| *x == key) {
                    Some(k) => k,
                    None => {
                        list.push((key, Tokens::default()));
                        list.len() - 1
                    }
                };
                self.by_id.insert((row, id), k);
                k
            }
        };
        self.last = Some(((row, id), k));
        k
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
            model: unattributed(),
            origin: Origin {
                source: Source::Assistant,
                kind: None,
            },
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

    /// Each entry type that carries usage in the reference 1.6 is a fact of its source; its
    /// total is the four counts added, whatever `totalTokens` says.
    #[test]
    fn facts_of_every_source() {
        let ts = r#""timestamp":"2026-01-01T00:00:00.000Z""#;
        let u = r#""usage":{"input":10,"output":5,"cacheRead":100,"cacheWrite":1,"totalTokens":15,"cost":{"total":0.5}}"#;
        let line = |body: String| format!("{{{ts},{body}}}");
        let cases = [
            (
                line(format!(
                    r#""type":"message","message":{{"role":"assistant","provider":"openrouter","model":"auto","responseModel":"x/y","stopReason":"stop",{u}}}"#
                )),
                Some((Source::Assistant, None, "openrouter/x/y")),
            ),
            (
                line(format!(
                    r#""message":{{"role":"assistant","model":"m",{u}}}"#
                )),
                Some((Source::Assistant, None, "m")),
            ),
            (
                line(format!(
                    r#""type":"message","message":{{"role":"toolResult","toolCallId":"c",{u}}}"#
                )),
                Some((Source::ToolResult, None, UNATTRIBUTED)),
            ),
            (
                line(format!(
                    r#""type":"usage","kind":"cache_warm","provider":"anthropic","model":"m",{u}"#
                )),
                Some((Source::Usage, Some("cache_warm"), "anthropic/m")),
            ),
            (
                line(format!(r#""type":"usage","provider":"p","model":"m",{u}"#)),
                Some((Source::Usage, None, "p/m")),
            ),
            (
                line(format!(r#""type":"compaction","summary":"s",{u}"#)),
                Some((Source::Compaction, None, UNATTRIBUTED)),
            ),
            (
                line(format!(r#""type":"branch_summary","fromId":"a",{u}"#)),
                Some((Source::BranchSummary, None, UNATTRIBUTED)),
            ),
            // Without usage, of another type or role, or without a full timestamp: no fact.
            (
                line(
                    r#""type":"message","message":{"role":"toolResult","details":{"usage":1}}"#
                        .into(),
                ),
                None,
            ),
            (
                line(r#""type":"compaction","summary":"usage""#.into()),
                None,
            ),
            (line(format!(r#""type":"custom","data":{{{u}}}"#)), None),
            (
                line(format!(
                    r#""type":"message","message":{{"role":"user",{u}}}"#
                )),
                None,
            ),
            (
                format!(r#"{{"timestamp":"2026-01-01","type":"usage",{u}}}"#),
                None,
            ),
        ];
        for (text, want) in cases {
            let got = fact(text.as_bytes());
            match (got, want) {
                (None, None) => {}
                (Some(p), Some((source, kind, key))) => {
                    assert_eq!(p.origin.source, source, "{text}");
                    assert_eq!(p.origin.kind.as_deref(), kind, "{text}");
                    assert_eq!(p.model.key(), key, "{text}");
                    assert_eq!(p.tokens.total, 116.0, "{text}");
                    assert_eq!(p.tokens.cost, 0.5, "{text}");
                    assert_eq!(p.stop_reason.is_some(), text.contains("stopReason"));
                }
                (got, want) => panic!("{text}: {:?} != {want:?}", got.map(|p| p.origin)),
            }
        }
    }

    /// A fork's copy of a `usage` entry counts once; an assistant message with the same time
    /// and tokens is another fact.
    #[test]
    fn copies_are_told_apart_by_source() {
        let text = [
            r#"{"type":"usage","timestamp":"2026-01-01T00:00:00.000Z","kind":"k","usage":{"input":1,"output":1}}"#,
            r#"{"type":"message","timestamp":"2026-01-01T00:00:00.000Z","message":{"role":"assistant","usage":{"input":1,"output":1}}}"#,
        ];
        let file = |lines: &[&str]| {
            let mut f = FileUsage::default();
            let mut i = Interned::default();
            for l in lines {
                f.push(fact(l.as_bytes()).unwrap(), &mut i);
            }
            f
        };
        let mut files = vec![file(&text), file(&text[..1])];
        dedup(&mut files);
        assert_eq!((files[0].facts.len(), files[1].facts.len()), (2, 0));
        assert_eq!(files[0].origins.len(), 2);
    }
}
