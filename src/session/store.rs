//! Reading a session file: one streaming pass builds a compact index of every entry (offset,
//! type, id, parent), so that even multi-gigabyte files are handled in bounded memory; entry
//! bytes are read back by offset only for the entries a command outputs.

use std::borrow::Cow;
use std::fs::File;
use std::io::{self, Read};
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};

use super::id::{Id, IdMap, IdSet};
use super::migrate;
use crate::json::{self, Member, RawStr};

/// Sentinel for "no entry".
pub const NONE: u32 = u32::MAX;

/// The entry types of the v3 format (plus everything else, kept verbatim).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Kind {
    Message,
    ThinkingLevelChange,
    ModelChange,
    Compaction,
    BranchSummary,
    Custom,
    CustomMessage,
    Label,
    SessionInfo,
    Other,
}

impl Kind {
    pub const ALL: [Kind; 9] = [
        Kind::Message,
        Kind::ThinkingLevelChange,
        Kind::ModelChange,
        Kind::Compaction,
        Kind::BranchSummary,
        Kind::Custom,
        Kind::CustomMessage,
        Kind::Label,
        Kind::SessionInfo,
    ];

    pub fn from_type(t: &[u8]) -> Kind {
        match t {
            b"message" => Kind::Message,
            b"thinking_level_change" => Kind::ThinkingLevelChange,
            b"model_change" => Kind::ModelChange,
            b"compaction" => Kind::Compaction,
            b"branch_summary" => Kind::BranchSummary,
            b"custom" => Kind::Custom,
            b"custom_message" => Kind::CustomMessage,
            b"label" => Kind::Label,
            b"session_info" => Kind::SessionInfo,
            _ => Kind::Other,
        }
    }

    pub fn as_str(self) -> &'static str {
        match self {
            Kind::Message => "message",
            Kind::ThinkingLevelChange => "thinking_level_change",
            Kind::ModelChange => "model_change",
            Kind::Compaction => "compaction",
            Kind::BranchSummary => "branch_summary",
            Kind::Custom => "custom",
            Kind::CustomMessage => "custom_message",
            Kind::Label => "label",
            Kind::SessionInfo => "session_info",
            Kind::Other => "other",
        }
    }
}

/// One entry in the index.
#[derive(Debug, Clone)]
pub struct Rec {
    pub offset: u64,
    pub len: u32,
    /// 1-based line number in the file.
    pub line: u32,
    pub kind: Kind,
    pub id: Id,
    /// The `parentId` as written (`None` for `null` or absent).
    pub parent_id: Option<Id>,
    /// Index of the parent entry, or [`NONE`] for roots, self-parents and dangling parents.
    pub parent: u32,
}

/// The first line of a session file.
#[derive(Debug, Clone)]
pub struct Header {
    pub raw: Vec<u8>,
    pub line: u32,
    pub id: String,
    pub cwd: String,
    pub timestamp: Option<String>,
    /// `version`, 1 when absent.
    pub version: u32,
    pub parent_session: Option<String>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Severity {
    Warning,
    Error,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ProblemKind {
    /// The last line has no newline and does not parse: an interrupted write.
    Torn,
    /// A line that is not valid JSON.
    Invalid,
    /// Valid JSON, but not an entry object (not an object, or no string `type`/`id`).
    NotEntry,
    /// No session header before the first entry.
    NoHeader,
    /// A second session header.
    ExtraHeader,
    DuplicateId,
    DanglingParent,
    SelfParent,
    Cycle,
    /// A reference (label target, kept entry) to an id that does not exist.
    DanglingReference,
    /// A v1/v2 file that needs `pi session migrate` before it can be appended to.
    OldVersion,
    /// A newer format version than this program knows.
    NewerVersion,
}

impl ProblemKind {
    pub fn as_str(self) -> &'static str {
        match self {
            ProblemKind::Torn => "torn-line",
            ProblemKind::Invalid => "invalid-json",
            ProblemKind::NotEntry => "not-an-entry",
            ProblemKind::NoHeader => "no-header",
            ProblemKind::ExtraHeader => "extra-header",
            ProblemKind::DuplicateId => "duplicate-id",
            ProblemKind::DanglingParent => "dangling-parent",
            ProblemKind::SelfParent => "self-parent",
            ProblemKind::Cycle => "cycle",
            ProblemKind::DanglingReference => "dangling-reference",
            ProblemKind::OldVersion => "old-version",
            ProblemKind::NewerVersion => "newer-version",
        }
    }

    pub fn severity(self) -> Severity {
        match self {
            ProblemKind::OldVersion | ProblemKind::NewerVersion => Severity::Warning,
            _ => Severity::Error,
        }
    }
}

#[derive(Debug, Clone)]
pub struct Problem {
    pub kind: ProblemKind,
    pub line: u32,
    /// 1-based column (characters) for syntax errors.
    pub column: Option<usize>,
    pub message: String,
}

/// At most this many problems are kept; the rest are only counted.
const MAX_PROBLEMS: usize = 10_000;

/// A label set on an entry (the latest `label` entry for that target).
#[derive(Debug, Clone)]
pub struct LabelRec {
    /// Index of the `label` entry.
    pub entry: u32,
    pub target: Id,
    pub label: Option<String>,
    pub timestamp: String,
}

/// An opened session file and its index.
pub struct Session {
    pub path: PathBuf,
    file: File,
    /// Bytes indexed (the file may grow while we read it; later bytes are ignored).
    pub len: u64,
    pub ends_with_newline: bool,
    pub header: Option<Header>,
    /// Entries in file order (headers and invalid lines excluded).
    pub entries: Vec<Rec>,
    /// id → index of the last entry with that id.
    pub by_id: IdMap<u32>,
    /// Label entries in file order.
    pub labels: Vec<LabelRec>,
    /// `session_info` entries: (entry index, trimmed name).
    pub names: Vec<(u32, String)>,
    pub problems: Vec<Problem>,
    pub problems_dropped: usize,
    /// Per-entry migration data for v1/v2 files (empty for v3).
    migration: Option<migrate::Plan>,
}

/// A visitor for extra per-entry data during the index pass.
pub type Visitor<'v> = dyn FnMut(u32, &[u8], &[Member<'_>]) + 'v;

#[derive(Debug, thiserror::Error)]
pub enum OpenError {
    #[error("cannot read {path}")]
    Io {
        path: PathBuf,
        #[source]
        source: io::Error,
    },
    #[error("{path} is not a session file: {reason}")]
    NotASession { path: PathBuf, reason: String },
}

impl Session {
    /// Opens and indexes a session file; fails when it has no valid session header.
    pub fn open(path: &Path) -> Result<Session, OpenError> {
        Self::open_with(path, &mut |_, _, _| {})
    }

    pub fn open_with(path: &Path, visit: &mut Visitor<'_>) -> Result<Session, OpenError> {
        let s = Self::scan(path, visit)?;
        if s.header.is_none() {
            let reason = match s.problems.first() {
                _ if s.len == 0 => "the file is empty".to_owned(),
                Some(p) if p.kind == ProblemKind::NoHeader => p.message.clone(),
                _ => "it has no session header line".to_owned(),
            };
            return Err(OpenError::NotASession {
                path: path.to_owned(),
                reason,
            });
        }
        Ok(s)
    }

    /// Indexes any file, recording every problem instead of failing (used by `check`).
    pub fn scan(path: &Path, visit: &mut Visitor<'_>) -> Result<Session, OpenError> {
        let io_err = |source| OpenError::Io {
            path: path.to_owned(),
            source,
        };
        let file = File::open(path).map_err(io_err)?;
        let mut s = Session {
            path: path.to_owned(),
            file,
            len: 0,
            ends_with_newline: true,
            header: None,
            entries: Vec::new(),
            by_id: IdMap::default(),
            labels: Vec::new(),
            names: Vec::new(),
            problems: Vec::new(),
            problems_dropped: 0,
            migration: None,
        };
        let mut builder = Builder::default();
        let file = s.file.try_clone().map_err(io_err)?;
        let (len, nl) = for_each_line(&file, |offset, line_no, line, terminated| {
            builder.line(&mut s, offset, line_no, line, terminated, visit);
        })
        .map_err(io_err)?;
        s.len = len;
        s.ends_with_newline = nl;
        builder.finish(&mut s);
        Ok(s)
    }

    pub fn version(&self) -> u32 {
        self.header.as_ref().map_or(3, |h| h.version)
    }

    pub fn session_id(&self) -> &str {
        self.header.as_ref().map_or("", |h| h.id.as_str())
    }

    /// The leaf: the last entry in the file.
    pub fn leaf(&self) -> Option<u32> {
        self.entries.len().checked_sub(1).map(|i| i as u32)
    }

    pub fn get(&self, id: &str) -> Option<u32> {
        self.by_id.get(&Id::new(id)).copied()
    }

    /// Resolves an entry id or unique id prefix.
    pub fn resolve_entry(&self, id: &str) -> Result<u32, EntryLookupError> {
        if let Some(i) = self.get(id) {
            return Ok(i);
        }
        if id.is_empty() {
            return Err(EntryLookupError::NotFound(id.to_owned()));
        }
        let mut matches: Vec<u32> = self
            .by_id
            .iter()
            .filter(|(k, _)| k.as_str().starts_with(id))
            .map(|(_, &v)| v)
            .collect();
        matches.sort_unstable();
        match matches.len() {
            0 => Err(EntryLookupError::NotFound(id.to_owned())),
            1 => Ok(matches[0]),
            _ => Err(EntryLookupError::Ambiguous {
                prefix: id.to_owned(),
                candidates: matches
                    .iter()
                    .take(8)
                    .map(|&i| self.entries[i as usize].id.to_string())
                    .collect(),
                count: matches.len(),
            }),
        }
    }

    /// Entries from the root to `leaf` (inclusive), following parent links; stops at a
    /// missing parent or a cycle.
    pub fn path_to(&self, leaf: u32) -> Vec<u32> {
        let mut path = Vec::new();
        let mut seen: Option<Vec<bool>> = None;
        let mut cur = leaf;
        while cur != NONE && (cur as usize) < self.entries.len() {
            if path.len() > 4096 {
                let seen = seen.get_or_insert_with(|| {
                    let mut v = vec![false; self.entries.len()];
                    for &p in &path {
                        v[p as usize] = true;
                    }
                    v
                });
                if seen[cur as usize] {
                    break;
                }
                seen[cur as usize] = true;
            } else if path.contains(&cur) {
                break;
            }
            path.push(cur);
            cur = self.entries[cur as usize].parent;
        }
        path.reverse();
        path
    }

    /// The resolved labels: target index → (label, label timestamp), in the order upstream's
    /// label map iterates them (insertion order; a cleared and re-set label moves to the end).
    pub fn resolved_labels(&self) -> Vec<(Id, String, String)> {
        let mut out: Vec<(Id, String, String)> = Vec::new();
        for l in &self.labels {
            if let Some(pos) = out.iter().position(|(t, _, _)| *t == l.target) {
                match &l.label {
                    Some(label) if !label.is_empty() => {
                        out[pos].1 = label.clone();
                        out[pos].2 = l.timestamp.clone();
                    }
                    _ => {
                        out.remove(pos);
                    }
                }
            } else if let Some(label) = l.label.as_ref().filter(|s| !s.is_empty()) {
                out.push((l.target.clone(), label.clone(), l.timestamp.clone()));
            }
        }
        out
    }

    /// The session name: the latest `session_info` entry's trimmed name (empty clears it).
    pub fn name(&self) -> Option<&str> {
        self.names
            .last()
            .map(|(_, n)| n.as_str())
            .filter(|n| !n.is_empty())
    }

    /// The bytes of entry `i` as a v3 line (migrated in memory for v1/v2 files).
    pub fn line(&self, i: u32) -> io::Result<Cow<'static, [u8]>> {
        let r = &self.entries[i as usize];
        let mut buf = vec![0u8; r.len as usize];
        self.file.read_exact_at(&mut buf, r.offset)?;
        Ok(self.migrated(i, buf))
    }

    fn migrated(&self, i: u32, raw: Vec<u8>) -> Cow<'static, [u8]> {
        match &self.migration {
            None => Cow::Owned(raw),
            Some(plan) => Cow::Owned(plan.entry_line(self, i, &raw)),
        }
    }

    /// The header line as v3.
    pub fn header_line(&self) -> Option<Vec<u8>> {
        let h = self.header.as_ref()?;
        Some(match &self.migration {
            None => h.raw.clone(),
            Some(_) => migrate::header_line(&h.raw),
        })
    }

    /// Calls `f` with the v3 bytes of each entry in `order`, reading the file in large
    /// sequential blocks (entries in file order, forwards or backwards, cost one pass).
    pub fn for_each_line(
        &self,
        order: &[u32],
        mut f: impl FnMut(u32, &[u8]) -> io::Result<()>,
    ) -> io::Result<()> {
        const WINDOW: u64 = 4 << 20;
        let mut buf: Vec<u8> = Vec::new();
        let mut win_start = 0u64;
        let mut win_end = 0u64;
        for &i in order {
            let r = &self.entries[i as usize];
            let (start, end) = (r.offset, r.offset + u64::from(r.len));
            if start < win_start || end > win_end {
                // Refill: forwards from this entry, or backwards ending at it.
                let backwards = end <= win_start;
                let size = WINDOW.max(u64::from(r.len));
                let (ws, we) = if backwards {
                    (end.saturating_sub(size).min(start), end)
                } else {
                    (start, (start + size).min(self.len).max(end))
                };
                buf.resize((we - ws) as usize, 0);
                self.file.read_exact_at(&mut buf, ws)?;
                win_start = ws;
                win_end = we;
            }
            let s = (start - win_start) as usize;
            let line = &buf[s..s + r.len as usize];
            if self.migration.is_some() {
                let line = self.migrated(i, line.to_vec());
                f(i, &line)?;
            } else {
                f(i, line)?;
            }
        }
        Ok(())
    }

    pub fn has_errors(&self) -> bool {
        self.problems
            .iter()
            .any(|p| p.kind.severity() == Severity::Error)
    }

    /// Prints problems that readers skip over (unreadable lines) as warnings on stderr.
    pub fn warn_skipped(&self) {
        let skipped: Vec<&Problem> = self
            .problems
            .iter()
            .filter(|p| {
                matches!(
                    p.kind,
                    ProblemKind::Torn | ProblemKind::Invalid | ProblemKind::NotEntry
                )
            })
            .collect();
        for p in skipped.iter().take(3) {
            crate::error::warn(&format!(
                "{}:{}: skipped: {}",
                self.path.display(),
                p.line,
                p.message
            ));
        }
        if skipped.len() > 3 {
            crate::error::warn(&format!(
                "{}: {} more unreadable lines skipped; run `pi session check` for the list",
                self.path.display(),
                skipped.len() - 3 + self.problems_dropped
            ));
        }
    }
}

#[derive(Debug, thiserror::Error)]
pub enum EntryLookupError {
    #[error("no entry with id '{0}'")]
    NotFound(String),
    #[error("entry id prefix '{prefix}' is ambiguous: it matches {count} entries ({})", candidates.join(", "))]
    Ambiguous {
        prefix: String,
        candidates: Vec<String>,
        count: usize,
    },
}

/// Top-level fields of an entry line that the index needs.
#[derive(Default)]
struct Top<'a> {
    ty: Option<&'a [u8]>,
    id: Option<&'a [u8]>,
    parent: Option<&'a [u8]>,
}

#[derive(Default)]
struct Builder {
    members: Vec<(usize, usize, usize, usize, bool)>,
    /// Count of lines that parsed as JSON (the index space of v1 `firstKeptEntryIndex`).
    parsed: u32,
    /// For v1 files: the parsed-line index of each entry.
    parsed_index: Vec<u32>,
    saw_entry: bool,
}

impl Builder {
    fn problem(s: &mut Session, kind: ProblemKind, line: u32, column: Option<usize>, msg: String) {
        if s.problems.len() < MAX_PROBLEMS {
            s.problems.push(Problem {
                kind,
                line,
                column,
                message: msg,
            });
        } else {
            s.problems_dropped += 1;
        }
    }

    fn line(
        &mut self,
        s: &mut Session,
        offset: u64,
        line_no: u32,
        line: &[u8],
        terminated: bool,
        visit: &mut Visitor<'_>,
    ) {
        let start = json::skip_ws(line, 0);
        if start == line.len() {
            return; // blank
        }
        if line.len() > u32::MAX as usize {
            Self::problem(
                s,
                ProblemKind::Invalid,
                line_no,
                None,
                "line longer than 4 GiB".into(),
            );
            return;
        }
        self.members.clear();
        let members = &mut self.members;
        let scanned = if line[start] == b'{' {
            json::scan_object(line, start, |m| {
                members.push((
                    m.key_start,
                    m.key_end,
                    m.value_start,
                    m.value_end,
                    m.key.escaped,
                ))
            })
            .and_then(|(end, _)| {
                let rest = json::skip_ws(line, end);
                if rest == line.len() {
                    Ok(())
                } else {
                    Err(json::SyntaxError {
                        offset: rest,
                        expected: "the end of the line",
                    })
                }
            })
        } else {
            json::validate(line).map(|_| ())
        };
        if let Err(e) = scanned {
            let column = json::line_col(line, e.offset).1;
            if !terminated {
                Self::problem(
                    s,
                    ProblemKind::Torn,
                    line_no,
                    Some(column),
                    format!(
                        "the last line is incomplete (an interrupted write?): {e} at column {column}"
                    ),
                );
            } else {
                Self::problem(
                    s,
                    ProblemKind::Invalid,
                    line_no,
                    Some(column),
                    format!("not valid JSON: {e} at column {column}"),
                );
            }
            return;
        }
        self.parsed += 1;
        let parsed_idx = self.parsed - 1;
        if line[start] != b'{' {
            Self::problem(
                s,
                ProblemKind::NotEntry,
                line_no,
                Some(json::line_col(line, start).1),
                "a JSON value that is not an object".into(),
            );
            return;
        }
        // Rebuild member views (borrowing `line`).
        let members: Vec<Member<'_>> = self
            .members
            .iter()
            .map(
                |&(key_start, key_end, value_start, value_end, escaped)| Member {
                    key: RawStr {
                        raw: &line[key_start + 1..key_end - 1],
                        escaped,
                    },
                    key_start,
                    key_end,
                    value_start,
                    value_end,
                },
            )
            .collect();
        let mut top = Top::default();
        for m in &members {
            let v = &line[m.value_start..m.value_end];
            if m.key.eq_str("type") {
                top.ty = Some(v);
            } else if m.key.eq_str("id") {
                top.id = Some(v);
            } else if m.key.eq_str("parentId") {
                top.parent = Some(v);
            }
        }
        let ty = top.ty.and_then(RawStr::from_value);
        let Some(ty) = ty else {
            Self::problem(
                s,
                ProblemKind::NotEntry,
                line_no,
                None,
                "an object without a string \"type\"".into(),
            );
            return;
        };
        let ty_dec = ty.decode();
        if ty_dec == "session" {
            if s.header.is_none() && !self.saw_entry {
                match header_from(line, &members, line_no) {
                    Ok(h) => {
                        if h.version < 3 {
                            Self::problem(
                                s,
                                ProblemKind::OldVersion,
                                line_no,
                                None,
                                format!(
                                    "format version {}; `pi session migrate` rewrites it as version 3",
                                    h.version
                                ),
                            );
                            s.migration = Some(migrate::Plan::new(h.version, &h.id));
                        } else if h.version > 3 {
                            Self::problem(
                                s,
                                ProblemKind::NewerVersion,
                                line_no,
                                None,
                                format!(
                                    "format version {} is newer than this program knows (3)",
                                    h.version
                                ),
                            );
                        }
                        s.header = Some(h);
                    }
                    Err(msg) => {
                        self.saw_entry = true;
                        Self::problem(s, ProblemKind::NoHeader, line_no, None, msg);
                    }
                }
            } else {
                Self::problem(
                    s,
                    ProblemKind::ExtraHeader,
                    line_no,
                    None,
                    "a second session header (skipped)".into(),
                );
            }
            return;
        }
        if s.header.is_none() && !self.saw_entry {
            self.saw_entry = true;
            Self::problem(
                s,
                ProblemKind::NoHeader,
                line_no,
                None,
                format!("the first entry (line {line_no}) comes before any session header line"),
            );
        }
        if s.header.is_none() {
            return;
        }
        let idx = s.entries.len() as u32;
        let kind = Kind::from_type(ty.raw);
        let v1 = s.version() < 2;
        let (id, parent_id) = if v1 {
            (Id::new(""), None) // assigned by the migration plan in finish()
        } else {
            let Some(id) = top.id.and_then(RawStr::from_value) else {
                Self::problem(
                    s,
                    ProblemKind::NotEntry,
                    line_no,
                    None,
                    "an entry without a string \"id\"".into(),
                );
                return;
            };
            let parent_id = top
                .parent
                .and_then(RawStr::from_value)
                .map(|p| Id::new(&p.decode()));
            (Id::new(&id.decode()), parent_id)
        };
        if v1 {
            self.parsed_index.push(parsed_idx);
            if kind == Kind::Compaction {
                if let Some(plan) = s.migration.as_mut() {
                    let fk = members
                        .iter()
                        .rev()
                        .find(|m| m.key.eq_str("firstKeptEntryIndex"))
                        .and_then(|m| json::number(&line[m.value_start..m.value_end]));
                    plan.first_kept_index.push((idx, fk));
                }
            }
        }
        if kind == Kind::Label || kind == Kind::SessionInfo {
            let field = |k: &str| {
                members
                    .iter()
                    .rev()
                    .find(|m| m.key.eq_str(k))
                    .map(|m| &line[m.value_start..m.value_end])
            };
            let string = |k: &str| {
                field(k)
                    .and_then(RawStr::from_value)
                    .map(|r| r.decode().into_owned())
            };
            if kind == Kind::Label {
                if let Some(target) = string("targetId") {
                    s.labels.push(LabelRec {
                        entry: idx,
                        target: Id::new(&target),
                        label: string("label"),
                        timestamp: string("timestamp").unwrap_or_default(),
                    });
                }
            } else {
                s.names
                    .push((idx, string("name").unwrap_or_default().trim().to_owned()));
            }
        }
        visit(idx, line, &members);
        s.entries.push(Rec {
            offset,
            len: line.len() as u32,
            line: line_no,
            kind,
            id,
            parent_id,
            parent: NONE,
        });
    }

    fn finish(self, s: &mut Session) {
        if s.version() < 2 && s.header.is_some() {
            if let Some(mut plan) = s.migration.take() {
                plan.assign_v1(&mut s.entries, &self.parsed_index);
                s.migration = Some(plan);
            }
        }
        // Index ids (the last entry with an id wins) and report duplicates.
        let mut dup_first: Vec<(u32, u32)> = Vec::new();
        for (i, r) in s.entries.iter().enumerate() {
            if let Some(prev) = s.by_id.insert(r.id.clone(), i as u32) {
                dup_first.push((prev, i as u32));
            }
        }
        for (prev, i) in dup_first {
            let (pl, r) = (s.entries[prev as usize].line, &s.entries[i as usize]);
            Self::problem(
                s,
                ProblemKind::DuplicateId,
                r.line,
                None,
                format!("id '{}' was already used on line {pl}", r.id),
            );
        }
        // Resolve parents.
        let mut dangling = Vec::new();
        for i in 0..s.entries.len() {
            let r = &s.entries[i];
            let Some(p) = &r.parent_id else { continue };
            if *p == r.id {
                dangling.push((i, true));
                continue;
            }
            match s.by_id.get(p) {
                Some(&pi) => s.entries[i].parent = pi,
                None => dangling.push((i, false)),
            }
        }
        for (i, self_parent) in dangling {
            let r = &s.entries[i];
            let (kind, msg) = if self_parent {
                (
                    ProblemKind::SelfParent,
                    format!("entry '{}' names itself as its parent", r.id),
                )
            } else {
                (
                    ProblemKind::DanglingParent,
                    format!(
                        "entry '{}' has parent '{}', which does not exist",
                        r.id,
                        r.parent_id.as_ref().map_or("", |p| p.as_str())
                    ),
                )
            };
            let line = r.line;
            Self::problem(s, kind, line, None, msg);
        }
    }
}

fn header_from(line: &[u8], members: &[Member<'_>], line_no: u32) -> Result<Header, String> {
    let field = |k: &str| {
        members
            .iter()
            .rev()
            .find(|m| m.key.eq_str(k))
            .map(|m| &line[m.value_start..m.value_end])
    };
    let string = |k: &str| {
        field(k)
            .and_then(RawStr::from_value)
            .map(|r| r.decode().into_owned())
    };
    let Some(id) = string("id") else {
        return Err(format!(
            "the session header on line {line_no} has no string \"id\""
        ));
    };
    let version = match field("version").and_then(json::number) {
        None => 1,
        Some(v) if v >= 0.0 && v.fract() == 0.0 && v < 1e9 => v as u32,
        Some(v) => return Err(format!("the session header has an invalid version {v}")),
    };
    Ok(Header {
        raw: line.to_vec(),
        line: line_no,
        id,
        cwd: string("cwd").unwrap_or_default(),
        timestamp: string("timestamp"),
        version,
        parent_session: string("parentSession"),
    })
}

/// Reads `file` in large blocks and calls `f(offset, line_number, line, terminated)` for every
/// line (without its `\n`). Returns the number of bytes read and whether they end in `\n`.
pub fn for_each_line(
    mut file: &File,
    mut f: impl FnMut(u64, u32, &[u8], bool),
) -> io::Result<(u64, bool)> {
    const BLOCK: usize = 8 << 20;
    let mut buf: Vec<u8> = Vec::with_capacity(BLOCK);
    let mut base = 0u64; // file offset of buf[0]
    let mut line_no = 0u32;
    let mut total = 0u64;
    loop {
        let filled = buf.len();
        if buf.capacity() - filled < BLOCK / 2 {
            buf.reserve(BLOCK);
        }
        let cap = buf.capacity();
        buf.resize(cap, 0);
        let n = loop {
            match file.read(&mut buf[filled..]) {
                Ok(n) => break n,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(e) => return Err(e),
            }
        };
        buf.truncate(filled + n);
        total += n as u64;
        let eof = n == 0;
        let mut start = 0;
        for nl in memchr::memchr_iter(b'\n', &buf[..]) {
            line_no = line_no.saturating_add(1);
            f(base + start as u64, line_no, &buf[start..nl], true);
            start = nl + 1;
        }
        if eof {
            if start < buf.len() {
                line_no = line_no.saturating_add(1);
                f(base + start as u64, line_no, &buf[start..], false);
                return Ok((total, false));
            }
            return Ok((total, true));
        }
        buf.drain(..start);
        base += start as u64;
    }
}

/// The ids already used in a file, found by a raw byte scan for `"id"` keys (no JSON
/// parsing): used to keep new ids unique without indexing the whole file.
pub fn scan_ids(file: &File, len: u64) -> io::Result<IdSet> {
    let mut ids = IdSet::default();
    let finder = memchr::memmem::Finder::new(b"\"id\"");
    const BLOCK: u64 = 8 << 20;
    const OVERLAP: u64 = 1024;
    let mut buf = Vec::new();
    let mut pos = 0u64;
    while pos < len {
        let end = (pos + BLOCK).min(len);
        let read_end = (end + OVERLAP).min(len);
        buf.resize((read_end - pos) as usize, 0);
        file.read_exact_at(&mut buf, pos)?;
        let limit = (end - pos) as usize;
        for hit in finder.find_iter(&buf) {
            if hit >= limit {
                break;
            }
            let mut j = json::skip_ws(&buf, hit + 4);
            if buf.get(j) != Some(&b':') {
                continue;
            }
            j = json::skip_ws(&buf, j + 1);
            if buf.get(j) != Some(&b'"') {
                continue;
            }
            if let Ok((e, _)) = json::scan_string(&buf, j) {
                ids.insert(Id::new(&json::decode_str(&buf[j + 1..e - 1])));
            }
        }
        pos = end;
    }
    Ok(ids)
}
