//! Reading a session file: one streaming pass builds a compact index of every entry (offset,
//! type, id, parent), so that even multi-gigabyte files are handled in bounded memory; entry
//! bytes are read back by offset only for the entries a command outputs.

use std::borrow::Cow;
use std::fs::File;
use std::io::{self, Read, Seek, Write};
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};

use super::id::{Id, IdIndex};
pub use super::index::{
    EntryLookupError, Header, Kind, LabelRec, NONE, NotASession, Problem, ProblemKind, Rec,
    Severity,
};
use super::scan::{self, NoVisit, Visit};
use super::upgrade;

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
    by_id: IdIndex,
    /// Label entries in file order.
    pub labels: Vec<LabelRec>,
    /// `session_info` entries: (entry index, trimmed name).
    pub names: Vec<(u32, String)>,
    pub problems: Vec<Problem>,
    pub problems_dropped: usize,
    /// Whether an append was under way or interrupted when the file was read.
    pub appending: Appending,
    /// Per-entry migration data for v1/v2 files (empty for v3).
    migration: Option<upgrade::Plan>,
    /// Where this index is to be recorded, and the lines read ([`Session::record_index`]).
    unrecorded: Option<(PathBuf, u32)>,
}

/// How a reader treats an interrupted append.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Mode {
    /// Recover it when the lock can be taken; otherwise read the file without it.
    Recover,
    /// Read it whole and report it (`check`: nothing is written).
    Inspect,
}

/// The appends to a file when it was read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Appending {
    /// None under way, none interrupted.
    Idle,
    /// Another process was writing a batch from byte `start`: the file was read up to
    /// there (or up to its incomplete last line).
    InProgress { start: u64 },
    /// A batch was interrupted at `start..end` and not recovered (its writer is gone and
    /// the file could not be written, or the reader does not write).
    Interrupted { start: u64, end: u64 },
}

/// What a session is read from: its file, or a copy of a stream (see [`spool`]).
#[derive(Debug)]
pub enum Source {
    File(PathBuf),
    /// An unnamed temporary file; `name` is what messages call it.
    Spooled {
        file: File,
        name: PathBuf,
    },
}

impl Source {
    /// The path of the file, or the name of the copy.
    pub fn name(&self) -> &Path {
        match self {
            Source::File(p) => p,
            Source::Spooled { name, .. } => name,
        }
    }
}

/// Copies `input` (stdin) into an unnamed temporary file, private (0600) and gone once
/// closed, so that it can be read as session files are: by byte offsets, more than once.
pub fn spool(mut input: impl io::Read) -> io::Result<File> {
    let mut file = tempfile::tempfile()?;
    io::copy(&mut input, &mut file)?;
    Ok(file)
}

#[derive(Debug, thiserror::Error)]
pub enum OpenError {
    #[error("cannot read {path}")]
    Io {
        path: PathBuf,
        #[source]
        source: io::Error,
    },
    #[error(transparent)]
    NotASession(#[from] NotASession),
}

impl Session {
    /// Opens and indexes a session file; fails when it has no valid session header.
    pub fn open(path: &Path) -> Result<Session, OpenError> {
        Ok(Self::open_with(path, NoVisit)?.0)
    }

    /// Opens a session, running `visitor` over every entry during the index pass.
    ///
    /// An interrupted append found on the way is recovered first when the lock can be
    /// taken (see [`super::pending`]); when it cannot be written (a read-only file), the
    /// session is read without the bytes the batch left, which gives the leaf and the
    /// context recovery would give. The batch of an append in progress is not read either.
    pub fn open_with<V: Visit>(path: &Path, visitor: V) -> Result<(Session, V), OpenError> {
        Self::with_header(Self::read(path, visitor, Mode::Recover, None)?)
    }

    /// [`Session::open`] with the index cache in `cache` (see [`super::index_cache`]): a
    /// large file unchanged since it was last indexed is not read again. Recording a new
    /// index is left to the caller ([`Session::record_index`]), who may do it alongside
    /// other work.
    pub fn open_unrecorded(path: &Path, cache: &Path) -> Result<Session, OpenError> {
        Self::open_cached_from(path, cache, super::index_cache::MIN_LEN)
    }

    /// [`Session::open_unrecorded`] for files of at least `min` bytes.
    pub(crate) fn open_cached_from(
        path: &Path,
        cache: &Path,
        min: u64,
    ) -> Result<Session, OpenError> {
        let read = Self::read(path, NoVisit, Mode::Recover, Some((cache, min)))?;
        Ok(Self::with_header(read)?.0)
    }

    /// Records the index of a file that [`Session::open_unrecorded`] read whole and found
    /// worth recording (best effort; nothing to do otherwise).
    pub fn record_index(&self) {
        let (Some((dir, lines)), Some(header)) = (&self.unrecorded, &self.header) else {
            return;
        };
        let parts = super::index_cache::Parts {
            header,
            entries: &self.entries,
            labels: &self.labels,
            names: &self.names,
            lines: *lines,
            ends_with_newline: self.ends_with_newline,
        };
        super::index_cache::save(dir, &self.file, self.len, &parts);
    }

    /// Indexes any file, recording every problem instead of failing (used by `check`). It
    /// never writes: an interrupted append is read whole and reported, not recovered.
    pub fn scan<V: Visit>(path: &Path, visitor: V) -> Result<(Session, V), OpenError> {
        Self::read(path, visitor, Mode::Inspect, None)
    }

    /// [`Session::open_with`] for a session file or a spooled copy; a copy is read as it
    /// is (it has no marker, and nothing writes to it).
    pub fn open_source<V: Visit>(source: Source, visitor: V) -> Result<(Session, V), OpenError> {
        match source {
            Source::File(path) => Self::open_with(&path, visitor),
            Source::Spooled { file, name } => {
                Self::with_header(Self::read_spooled(file, name, visitor)?)
            }
        }
    }

    /// [`Session::scan`] for a session file or a spooled copy.
    pub(crate) fn scan_source<V: Visit>(
        source: Source,
        visitor: V,
    ) -> Result<(Session, V), OpenError> {
        match source {
            Source::File(path) => Self::scan(&path, visitor),
            Source::Spooled { file, name } => Self::read_spooled(file, name, visitor),
        }
    }

    fn read_spooled<V: Visit>(
        file: File,
        name: PathBuf,
        visitor: V,
    ) -> Result<(Session, V), OpenError> {
        let len = file
            .metadata()
            .map_err(|source| OpenError::Io {
                path: name.clone(),
                source,
            })?
            .len();
        Self::index_file(name, file, len, Appending::Idle, None, visitor, None)
    }

    /// The session when it has a header; else why it is not a session file.
    fn with_header<V>((s, v): (Session, V)) -> Result<(Session, V), OpenError> {
        if s.header.is_none() {
            let reason = match s.problems.first() {
                _ if s.len == 0 => "the file is empty".to_owned(),
                Some(p) if p.kind == ProblemKind::NoHeader => p.message.clone(),
                _ => "it has no session header line".to_owned(),
            };
            return Err(NotASession {
                path: s.path,
                reason,
            }
            .into());
        }
        Ok((s, v))
    }

    /// Decides how much of the file to read (see [`Appending`]), reads it, and reports what
    /// it found about appends.
    fn read<V: Visit>(
        path: &Path,
        visitor: V,
        mode: Mode,
        cache: Option<(&Path, u64)>,
    ) -> Result<(Session, V), OpenError> {
        let io_err = |source| OpenError::Io {
            path: path.to_owned(),
            source,
        };
        let marker = super::pending::marker_path(path);
        let mut attempt = 0;
        let (file, len, appending) = loop {
            attempt += 1;
            let last = attempt >= 4;
            let file = File::open(path).map_err(io_err)?;
            // The length first, then the marker: a batch whose marker is gone by then was
            // written whole, so every byte up to `len` is acknowledged or being written by
            // a writer whose marker is there.
            let meta = file.metadata().map_err(io_err)?;
            let len = meta.len();
            let m = match super::pending::read(&marker).map_err(io_err)? {
                super::pending::Found::None => break (file, len, Appending::Idle),
                super::pending::Found::Marker(m) if m.is_for(&meta, len) => m,
                // A marker whose writer died before writing any of its batch, or one about
                // another file: nothing to leave out. It is removed under the lock.
                _ => {
                    let removed = mode == Mode::Recover
                        && !last
                        && matches!(super::append::Appender::try_open(path, None), Ok(Some(_)));
                    if removed {
                        continue;
                    }
                    break (file, len, Appending::Idle);
                }
            };
            let in_progress = Appending::InProgress { start: m.start };
            let interrupted = Appending::Interrupted {
                start: m.start,
                end: len,
            };
            match mode {
                Mode::Recover => match super::append::Appender::try_open(path, None) {
                    // Recovered under the lock (or the writer finished meanwhile): again.
                    Ok(Some(_)) if !last => continue,
                    Ok(Some(_)) | Ok(None) => break (file, m.start, in_progress),
                    Err(_) if m.start == len => break (file, len, Appending::Idle),
                    Err(_) => break (file, m.start, interrupted),
                },
                Mode::Inspect => {
                    let live = match file.try_lock_shared() {
                        Ok(()) => {
                            let _ = file.unlock();
                            false
                        }
                        Err(std::fs::TryLockError::WouldBlock) => true,
                        Err(std::fs::TryLockError::Error(e)) => return Err(io_err(e)),
                    };
                    if live {
                        break (file, m.start, in_progress);
                    }
                    if m.start == len {
                        // Nothing of it reached the file.
                        break (file, len, Appending::Idle);
                    }
                    // Its writer is gone, unless it just finished: the marker says which.
                    let again = super::pending::read(&marker).map_err(io_err)?;
                    if again == super::pending::Found::Marker(m) || last {
                        break (file, len, interrupted);
                    }
                }
            }
        };
        Self::index_file(
            path.to_owned(),
            file,
            len,
            appending,
            Some(&marker),
            visitor,
            cache,
        )
    }

    /// Reads the first `len` bytes of `file` (whose appends were found as `appending`, with
    /// the writers' marker at `marker`) and indexes them; `path` names the session. With
    /// `cache` (for a visitor that does nothing), the index of a large file is taken from
    /// there when it still describes the file; after a pass that found nothing to report,
    /// it is left to be recorded there ([`Session::record_index`]).
    fn index_file<V: Visit>(
        path: PathBuf,
        file: File,
        len: u64,
        appending: Appending,
        marker: Option<&Path>,
        visitor: V,
        cache: Option<(&Path, u64)>,
    ) -> Result<(Session, V), OpenError> {
        let cache = cache
            .filter(|&(_, min)| V::NOTHING && appending == Appending::Idle && len >= min)
            .map(|(dir, _)| dir);
        if let Some(ix) = cache.and_then(|dir| super::index_cache::load(dir, &file, len)) {
            let mut s = Session {
                path,
                file,
                len,
                ends_with_newline: ix.ends_with_newline,
                header: Some(ix.header),
                entries: ix.entries,
                by_id: IdIndex::default(),
                labels: ix.labels,
                names: ix.names,
                problems: Vec::new(),
                problems_dropped: 0,
                appending,
                migration: None,
                unrecorded: None,
            };
            s.index();
            s.settle_appends(&[], ix.lines, marker);
            return Ok((s, visitor));
        }
        let (acc, ends_with_newline) =
            scan::scan_file(&file, len, visitor).map_err(|source| OpenError::Io {
                path: path.clone(),
                source,
            })?;
        let mut migration = acc.plan();
        let recoveries = acc.recoveries;
        let mut s = Session {
            path,
            file,
            len,
            ends_with_newline,
            header: acc.header,
            entries: acc.recs,
            by_id: IdIndex::default(),
            labels: acc.labels,
            names: acc.names,
            problems: acc.problems,
            problems_dropped: acc.problems_dropped,
            appending,
            migration: None,
            unrecorded: None,
        };
        if let (Some(h), Some(plan)) = (&s.header, migration.as_mut()) {
            s.problems.push(Problem {
                kind: ProblemKind::OldVersion,
                line: h.line,
                offset: 0,
                column: None,
                message: format!(
                    "format version {}; `pi session migrate` rewrites it as version 3",
                    h.version
                ),
            });
            if h.version < 2 {
                plan.first_kept_index = acc.first_kept_index;
                plan.assign_v1(&mut s.entries, &acc.parsed_index);
            }
        }
        if let Some(h) = s.header.as_ref().filter(|h| h.version > 3) {
            s.problems.push(Problem {
                kind: ProblemKind::NewerVersion,
                line: h.line,
                offset: 0,
                column: None,
                message: format!(
                    "format version {} is newer than this program knows (3)",
                    h.version
                ),
            });
        }
        s.migration = migration;
        if let (Some(dir), Some(header)) = (cache, &s.header)
            && header.version == super::VERSION
            && s.migration.is_none()
            && s.problems.is_empty()
            && s.problems_dropped == 0
            && recoveries.is_empty()
        {
            s.unrecorded = Some((dir.to_owned(), acc.lines));
        }
        s.index();
        s.settle_appends(&recoveries, acc.lines, marker);
        Ok((s, acc.visitor))
    }

    /// Accounts for appends in the problems: the lines a recovered batch left are part of
    /// it (one warning instead of an error for its incomplete line), an interrupted batch
    /// not yet recovered is a warning, and an incomplete last line that is still being
    /// written is not damage.
    fn settle_appends(
        &mut self,
        recoveries: &[(u32, (u64, u64))],
        lines: u32,
        marker: Option<&Path>,
    ) {
        for &(i, range) in recoveries {
            self.settle_recovery(i, range);
        }
        match self.appending {
            Appending::Idle => self.settle_torn(marker),
            Appending::InProgress { start } => {
                let line = self.line_at(start, lines);
                self.push_problem(
                    ProblemKind::AppendInProgress,
                    line,
                    start,
                    format!(
                        "another process is appending to the file (from byte {start}); what it writes was not read"
                    ),
                );
            }
            Appending::Interrupted { start, end } => self.settle_interrupted(start, end, lines),
        }
        let added = self.problems.iter().any(|p| {
            matches!(
                p.kind,
                ProblemKind::InterruptedAppend | ProblemKind::AppendInProgress
            )
        });
        if added {
            self.problems.sort_by_key(|p| p.line);
        }
    }

    /// The problems of the lines a batch left in `start..end` that entry `i` recovered (when
    /// the range ends where that entry starts: only such a range is one it recorded) become
    /// one warning.
    fn settle_recovery(&mut self, i: u32, (start, end): (u64, u64)) {
        let r = &self.entries[i as usize];
        if end != r.offset {
            return;
        }
        let (line, offset, id) = (r.line, r.offset, r.id.to_string());
        let parent = r
            .parent_id
            .as_ref()
            .map_or_else(|| "a new root".to_owned(), |p| format!("'{p}'"));
        let left = self.lines_from(start, end);
        let incomplete = self.drop_problems(|p| {
            (start..end).contains(&p.offset)
                && matches!(
                    p.kind,
                    ProblemKind::Torn | ProblemKind::Invalid | ProblemKind::NotEntry
                )
        });
        let message = format!(
            "an append was interrupted; entry '{id}' recovered it: what it left, {}{}, is an abandoned branch, and the conversation continues from {parent}",
            batch_lines(left.len(), incomplete),
            line_span(&left, incomplete, line),
        );
        self.push_problem(ProblemKind::InterruptedAppend, line, offset, message);
    }

    /// With no append known: an incomplete last line while the file grows (or a writer's
    /// marker appeared) is an append in progress, not damage.
    fn settle_torn(&mut self, marker: Option<&Path>) {
        let Some(t) = self
            .problems
            .iter()
            .position(|p| p.kind == ProblemKind::Torn)
        else {
            return;
        };
        let grew = self.file.metadata().is_ok_and(|m| m.len() > self.len);
        let marked = marker.is_some_and(|m| {
            matches!(
                super::pending::read(m),
                Ok(super::pending::Found::Marker(_))
            )
        });
        if grew || marked {
            let p = self.problems.remove(t);
            self.appending = Appending::InProgress { start: p.offset };
            self.push_problem(
                ProblemKind::AppendInProgress,
                p.line,
                p.offset,
                "another process is appending to the file; its last line is still being written and was not read".into(),
            );
        }
    }

    /// An interrupted append not yet recovered, from byte `start` (to `end` when its marker
    /// knows): one warning instead of the problem of its incomplete line.
    fn settle_interrupted(&mut self, start: u64, end: u64, lines: u32) {
        let left = self.lines_from(start, u64::MAX);
        let incomplete = self.drop_problems(|p| p.offset >= start && p.kind == ProblemKind::Torn);
        let line = self.line_at(start, lines);
        let message = if self.len >= end && end > start {
            format!(
                "an append was interrupted (its writer is gone) and left {}{}, never acknowledged; the next `pi` command that can write the file moves the leaf back before them",
                batch_lines(left.len(), incomplete),
                line_span(&left, incomplete, lines + 1),
            )
        } else {
            format!(
                "an append was interrupted (its writer is gone) and could not be recovered; the {} bytes it left from byte {start} were not read",
                end.saturating_sub(start)
            )
        };
        self.push_problem(ProblemKind::InterruptedAppend, line, start, message);
    }

    /// Removes the problems `drop` picks; returns how many.
    fn drop_problems(&mut self, drop: impl Fn(&Problem) -> bool) -> usize {
        let before = self.problems.len();
        self.problems.retain(|p| !drop(p));
        before - self.problems.len()
    }

    /// The line numbers of the entries that start in `start..end`.
    fn lines_from(&self, start: u64, end: u64) -> Vec<u32> {
        let from = self.entries.partition_point(|e| e.offset < start);
        let to = self.entries.partition_point(|e| e.offset < end);
        self.entries[from..to.max(from)]
            .iter()
            .map(|e| e.line)
            .collect()
    }

    /// The line number of the line that starts at byte `at` (or of the line after the
    /// last one).
    fn line_at(&self, at: u64, lines: u32) -> u32 {
        let first = self.entries.partition_point(|e| e.offset < at);
        let rec = self.entries.get(first).map(|e| e.line);
        let problem = self
            .problems
            .iter()
            .filter(|p| p.offset >= at && p.line > 0)
            .map(|p| p.line)
            .min();
        match (rec, problem) {
            (Some(a), Some(b)) => a.min(b),
            (Some(a), None) | (None, Some(a)) => a,
            (None, None) => lines + 1,
        }
    }

    fn push_problem(&mut self, kind: ProblemKind, line: u32, offset: u64, message: String) {
        self.problems.push(Problem {
            kind,
            line,
            offset,
            column: None,
            message,
        });
    }

    /// Indexes ids (the last entry with an id wins), resolves parents, reports duplicates
    /// and dangling parents.
    fn index(&mut self) {
        let mut found = Vec::new();
        let entries = &self.entries;
        let id_of = |k: u32| &entries[k as usize].id;
        self.by_id = IdIndex::with_capacity(entries.len());
        for (i, r) in entries.iter().enumerate() {
            if let Some(prev) = self.by_id.insert(id_of, i as u32) {
                let msg = format!(
                    "id '{}' was already used on line {}",
                    r.id, self.entries[prev as usize].line
                );
                found.push((ProblemKind::DuplicateId, r.line, r.offset, msg));
            }
        }
        // Without repeated ids, an id names the entry that has it: most entries follow their
        // parent, which then needs no lookup in the map.
        let unique = found.is_empty();
        let mut parents = Vec::with_capacity(entries.len());
        for (i, r) in entries.iter().enumerate() {
            let Some(p) = &r.parent_id else {
                parents.push(NONE);
                continue;
            };
            let parent = if *p == r.id {
                let msg = format!("entry '{}' names itself as its parent", r.id);
                found.push((ProblemKind::SelfParent, r.line, r.offset, msg));
                None
            } else if unique && i > 0 && entries[i - 1].id == *p {
                Some(i as u32 - 1)
            } else {
                let parent = self.by_id.get(id_of, p);
                if parent.is_none() {
                    let msg = format!("entry '{}' has parent '{p}', which does not exist", r.id);
                    found.push((ProblemKind::DanglingParent, r.line, r.offset, msg));
                }
                parent
            };
            parents.push(parent.unwrap_or(NONE));
        }
        for (r, p) in self.entries.iter_mut().zip(parents) {
            r.parent = p;
        }
        for (kind, line, offset, message) in found {
            if self.problems.len() < scan::MAX_PROBLEMS {
                self.push_problem(kind, line, offset, message);
            } else {
                self.problems_dropped += 1;
            }
        }
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
        self.get_id(&Id::new(id))
    }

    /// The (last) entry with the id `id`.
    pub fn get_id(&self, id: &Id) -> Option<u32> {
        self.by_id.get(|k| &self.entries[k as usize].id, id)
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
            .entries()
            .filter(|&k| self.entries[k as usize].id.as_str().starts_with(id))
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

    /// Writes the lines of the entries in `order`, each with a newline, as [`Session::line`]
    /// gives them. Without a migration, runs of lines that follow each other in the file are
    /// copied as byte ranges, by the kernel when they are large.
    pub(crate) fn copy_lines(
        &self,
        order: &[u32],
        out: &mut io::BufWriter<File>,
    ) -> io::Result<()> {
        const SMALL: u64 = 64 << 10;
        if self.migration.is_some() {
            return self.for_each_line(order, |_, line| {
                out.write_all(line)?;
                out.write_all(b"\n")
            });
        }
        let mut k = 0;
        let mut buf = Vec::new();
        while k < order.len() {
            let first = &self.entries[order[k] as usize];
            let (start, mut end) = (first.offset, first.offset + u64::from(first.len));
            k += 1;
            while let Some(&next) = order.get(k) {
                let r = &self.entries[next as usize];
                if r.offset != end + 1 {
                    break;
                }
                end = r.offset + u64::from(r.len);
                k += 1;
            }
            if end - start < SMALL {
                buf.resize((end - start) as usize, 0);
                self.file.read_exact_at(&mut buf, start)?;
                out.write_all(&buf)?;
            } else {
                out.flush()?;
                (&self.file).seek(io::SeekFrom::Start(start))?;
                let copied = io::copy(&mut (&self.file).take(end - start), out.get_mut())?;
                if copied != end - start {
                    return Err(io::Error::new(
                        io::ErrorKind::UnexpectedEof,
                        "the session file was cut short while it was copied",
                    ));
                }
            }
            out.write_all(b"\n")?;
        }
        Ok(())
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
            Some(plan) => Cow::Owned(plan.entry_line(&self.entries[i as usize], i, &raw)),
        }
    }

    /// The header line as v3.
    pub fn header_line(&self) -> Option<Vec<u8>> {
        let h = self.header.as_ref()?;
        Some(match &self.migration {
            None => h.raw.clone(),
            Some(_) => upgrade::header_line(&h.raw),
        })
    }

    /// Whether lines are served as stored (a v3 file): then [`Session::byte_runs`] applies.
    pub fn is_current(&self) -> bool {
        self.migration.is_none()
    }

    /// The byte ranges of the lines of `order` (ascending entries), merging entries that are
    /// adjacent in the file; each range ends just after its last line (without the newline).
    pub fn byte_runs(&self, order: &[u32]) -> Vec<(u64, u64)> {
        let mut runs: Vec<(u64, u64)> = Vec::new();
        for &i in order {
            let r = &self.entries[i as usize];
            let (start, end) = (r.offset, r.offset + u64::from(r.len));
            match runs.last_mut() {
                Some(last) if last.1 + 1 == start => last.1 = end,
                _ => runs.push((start, end)),
            }
        }
        runs
    }

    pub fn file(&self) -> &File {
        &self.file
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

    /// Warnings about the problems readers skip over (unreadable lines): the first three,
    /// then how many more.
    pub fn skipped_warnings(&self) -> Vec<String> {
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
        let mut out: Vec<String> = skipped
            .iter()
            .take(3)
            .map(|p| format!("{}:{}: skipped: {}", self.path.display(), p.line, p.message))
            .collect();
        if skipped.len() > 3 {
            out.push(format!(
                "{}: {} more unreadable lines skipped; run `pi session check` for the list",
                self.path.display(),
                skipped.len() - 3 + self.problems_dropped
            ));
        }
        if let Appending::Interrupted { start, end } = self.appending
            && self.len < end
        {
            out.push(format!(
                "{}: an append to this file was interrupted and could not be recovered here (the file cannot be written); the {} bytes it left from byte {start} were not read",
                self.path.display(),
                end - start
            ));
        }
        out
    }
}

/// "3 entries and an incomplete line", "an incomplete line", "nothing but a newline".
fn batch_lines(entries: usize, incomplete: usize) -> String {
    let whole = match entries {
        0 => None,
        1 => Some("1 entry".to_owned()),
        n => Some(format!("{n} entries")),
    };
    let part = match incomplete {
        0 => None,
        1 => Some("an incomplete line".to_owned()),
        n => Some(format!("{n} unreadable lines")),
    };
    match (whole, part) {
        (Some(w), Some(p)) => format!("{w} and {p}"),
        (Some(x), None) | (None, Some(x)) => x,
        (None, None) => "nothing but a newline".to_owned(),
    }
}

/// " (lines a–b)" for the lines of a batch that ends before line `next`.
fn line_span(entry_lines: &[u32], incomplete: usize, next: u32) -> String {
    let first = entry_lines.iter().min().copied();
    let last = if incomplete > 0 {
        Some(next.saturating_sub(1))
    } else {
        entry_lines.iter().max().copied()
    };
    match (first.or(last), last) {
        (Some(a), Some(b)) if a == b => format!(" (line {a})"),
        (Some(a), Some(b)) => format!(" (lines {a}\u{2013}{b})"),
        _ => String::new(),
    }
}
