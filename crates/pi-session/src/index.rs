//! What the index pass records of a session file: the kinds of entries, the record kept
//! for each entry and label, the header, the problems met, and the errors that name them.
//! [`crate::store`] builds these records; the scan, the index cache, migration and
//! summaries read them.

use std::fs::File;
use std::io;
use std::path::PathBuf;

use crate::id::{Id, IdSet};
use pi_base::json;

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
    /// `context_edit` (reference 1.6): an edit of an earlier entry's model context.
    ContextEdit,
    /// `usage` (reference 1.6): model usage outside the conversation (cache warming, ...).
    Usage,
    Other,
}

impl Kind {
    pub const ALL: [Kind; 11] = [
        Kind::Message,
        Kind::ThinkingLevelChange,
        Kind::ModelChange,
        Kind::Compaction,
        Kind::BranchSummary,
        Kind::Custom,
        Kind::CustomMessage,
        Kind::Label,
        Kind::SessionInfo,
        Kind::ContextEdit,
        Kind::Usage,
    ];

    pub(crate) fn from_type(t: &[u8]) -> Kind {
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
            b"context_edit" => Kind::ContextEdit,
            b"usage" => Kind::Usage,
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
            Kind::ContextEdit => "context_edit",
            Kind::Usage => "usage",
            Kind::Other => "other",
        }
    }
}

/// One entry in the index.
#[derive(Debug, Clone, PartialEq)]
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
#[derive(Debug, Clone, PartialEq)]
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
    /// Not a problem, but worth knowing (an append in progress).
    Note,
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
    /// An append that was interrupted (its writer killed): recovered, or waiting for the
    /// next writer or reader to recover it.
    InterruptedAppend,
    /// Another process was appending while the file was read; what it writes was not read.
    AppendInProgress,
    /// Bytes that are not UTF-8 inside a line (read as U+FFFD, as the reference reads them).
    InvalidUtf8,
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
            ProblemKind::InterruptedAppend => "interrupted-append",
            ProblemKind::AppendInProgress => "append-in-progress",
            ProblemKind::InvalidUtf8 => "invalid-utf8",
        }
    }

    pub fn severity(self) -> Severity {
        match self {
            ProblemKind::OldVersion
            | ProblemKind::NewerVersion
            | ProblemKind::InterruptedAppend => Severity::Warning,
            ProblemKind::AppendInProgress => Severity::Note,
            _ => Severity::Error,
        }
    }
}

#[derive(Debug, Clone, PartialEq)]
pub struct Problem {
    pub kind: ProblemKind,
    pub line: u32,
    /// Byte offset of the start of the line.
    pub offset: u64,
    /// 1-based column (characters) for syntax errors.
    pub column: Option<usize>,
    pub message: String,
}

/// A label set on an entry (the latest `label` entry for that target).
#[derive(Debug, Clone, PartialEq)]
pub struct LabelRec {
    /// Index of the `label` entry.
    pub entry: u32,
    pub target: Id,
    pub label: Option<String>,
    pub timestamp: String,
}

/// A file that is not a session file (no valid header line), and why.
#[derive(Debug, thiserror::Error)]
#[error("{} is not a session file: {reason}", path.display())]
pub struct NotASession {
    pub path: PathBuf,
    pub reason: String,
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

/// Every string value of an `"id"` key in a file, found by a raw byte scan (no JSON
/// parsing): a superset of the entry ids.
pub(crate) fn scan_ids(file: &File, len: u64) -> io::Result<IdSet> {
    let mut ids = IdSet::default();
    crate::idindex::for_each_id_value(file, 0, len, |v, _| {
        ids.insert(Id::new(&json::decode_str(&v[1..v.len() - 1])));
    })?;
    Ok(ids)
}
