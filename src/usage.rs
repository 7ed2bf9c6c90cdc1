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
use std::ops::ControlFlow;
use std::path::{Path, PathBuf};
use std::sync::LazyLock;

use jiff::tz::TimeZone;
use serde::Deserialize;

use crate::dates::{self, DateArg};
use crate::session::lines;

/// One assistant message's usage.
#[derive(Debug, Clone)]
pub struct Fact {
    pub timestamp: String,
    pub ms: i64,
    pub entry_id: Option<String>,
    pub provider: Option<String>,
    pub model: Option<String>,
    pub stop_reason: Option<String>,
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

/// The usage of one session file.
#[derive(Debug, Clone)]
pub struct FileUsage {
    pub path: PathBuf,
    /// The header's id (else the file name's part after `_`).
    pub session: String,
    pub cwd: String,
    pub facts: Vec<Fact>,
}

#[derive(Deserialize)]
struct Line<'a> {
    #[serde(rename = "type", borrow)]
    ty: Option<Cow<'a, str>>,
    #[serde(borrow)]
    timestamp: Cow<'a, str>,
    id: Option<String>,
    message: Msg,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct Msg {
    role: Option<String>,
    model: Option<String>,
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
static QUICK: LazyLock<Option<regex::bytes::Regex>> =
    LazyLock::new(|| regex::bytes::Regex::new(r#""usage""#).ok());

fn fact(line: &[u8]) -> Option<Fact> {
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
    Some(Fact {
        ms: crate::clock::parse_iso(&l.timestamp)?,
        timestamp: l.timestamp.into_owned(),
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

/// The usage facts of one file, in file order. Lines that are not JSON or not assistant
/// messages with usage are skipped.
pub fn read_file(path: &Path) -> std::io::Result<FileUsage> {
    let header = crate::session::find::read_header(path);
    let file = File::open(path)?;
    let mut facts = Vec::new();
    lines::each_line(&file, QUICK.as_ref(), |line| {
        facts.extend(fact(line));
        ControlFlow::Continue(())
    })?;
    let name_id = || {
        let stem = path
            .file_stem()
            .map(|s| s.to_string_lossy().into_owned())
            .unwrap_or_default();
        stem.split_once('_')
            .map_or(stem.clone(), |(_, id)| id.to_owned())
    };
    Ok(FileUsage {
        path: path.to_owned(),
        session: header.as_ref().map_or_else(name_id, |h| h.id.clone()),
        cwd: header.map(|h| h.cwd).unwrap_or_default(),
        facts,
    })
}

/// Drops the facts already seen in an earlier file (same timestamp and total tokens: a
/// fork's copy), so each message counts once, in the file that comes first.
pub fn dedup(files: &mut [FileUsage]) {
    let mut seen: HashSet<(String, u64)> = HashSet::new();
    for f in files {
        f.facts
            .retain(|x| seen.insert((x.timestamp.clone(), x.tokens.total.to_bits())));
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

/// The model a fact is counted under: `provider/model`.
pub fn model_key(f: &Fact) -> String {
    match (&f.provider, &f.model) {
        (Some(p), Some(m)) => format!("{p}/{m}"),
        (None, Some(m)) => m.clone(),
        (_, None) => "unknown".into(),
    }
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
    fn admits(&self, ms: i64, tz: &TimeZone) -> bool {
        let day = dates::day_of(ms, tz);
        let ok = |b: DateArg, lower: bool| match b {
            DateArg::Day(d) => day.is_some_and(|x| if lower { x >= d } else { x <= d }),
            _ if lower => ms >= b.start_ms(tz, self.now_ms),
            _ => ms <= b.end_ms(tz, self.now_ms),
        };
        self.since.is_none_or(|b| ok(b, true)) && self.until.is_none_or(|b| ok(b, false))
    }
}

/// Groups the facts of `files` (already deduplicated) into rows, newest first (models and
/// projects: most expensive first).
pub fn report(files: &[FileUsage], by: By, tz: &TimeZone, range: &Range) -> Vec<Row> {
    let mut rows: Vec<Row> = Vec::new();
    let mut index: HashMap<String, usize> = HashMap::new();
    for f in files {
        let mut last: Option<&Fact> = None;
        for x in &f.facts {
            if by == By::Session {
                if last.is_none_or(|l| x.timestamp > l.timestamp) {
                    last = Some(x);
                }
            } else if !range.admits(x.ms, tz) {
                continue;
            }
            let day = || dates::day_of(x.ms, tz).map_or_else(String::new, |d| d.to_string());
            let key = match by {
                By::Daily => day(),
                By::Weekly => dates::day_of(x.ms, tz)
                    .map_or_else(String::new, |d| dates::week_start(d).to_string()),
                By::Monthly => day().chars().take(7).collect(),
                By::Session => f.path.to_string_lossy().into_owned(),
                By::Model => model_key(x),
                By::Project => f.cwd.clone(),
            };
            let i = *index.entry(key.clone()).or_insert_with(|| {
                rows.push(Row {
                    key,
                    session: None,
                    tokens: Tokens::default(),
                    models: Vec::new(),
                });
                rows.len() - 1
            });
            let row = &mut rows[i];
            row.tokens.add(&x.tokens);
            let m = model_key(x);
            match row.models.iter_mut().find(|(k, _)| *k == m) {
                Some((_, t)) => t.add(&x.tokens),
                None => row.models.push((m, x.tokens)),
            }
        }
        if by == By::Session
            && let (Some(l), Some(&i)) = (last, index.get(f.path.to_string_lossy().as_ref()))
        {
            if !range.admits(l.ms, tz) {
                index.remove(f.path.to_string_lossy().as_ref());
                rows[i].key.clear();
                continue;
            }
            let day = dates::day_of(l.ms, tz).map_or_else(String::new, |d| d.to_string());
            rows[i].session = Some((f.path.clone(), f.cwd.clone(), day));
            rows[i].key = f.session.clone();
        }
    }
    rows.retain(|r| !r.key.is_empty());
    match by {
        By::Session => rows.sort_by(|a, b| last_day(b).cmp(last_day(a))),
        By::Model | By::Project => rows.sort_by(|a, b| b.tokens.cost.total_cmp(&a.tokens.cost)),
        _ => rows.sort_by(|a, b| b.key.cmp(&a.key)),
    }
    rows
}

fn last_day(r: &Row) -> &str {
    r.session.as_ref().map_or("", |s| s.2.as_str())
}
