//! Safe appends (docs/decisions.md §3): an exclusive lock on the file, the state read under the lock
//! from the two ends of the file (header and leaf) plus one raw byte scan for ids, one
//! `write(2)` per batch on an `O_APPEND` descriptor, then `fsync`.
//!
//! Every batch is bracketed by a pending-append marker, and an interrupted batch found when
//! the lock is taken is recovered before anything else is written (see [`super::pending`]).
//! The end of the file is looked at again before every write, so a line another program
//! left incomplete meanwhile is ended first and never glued to.
//!
//! New files (`session new`, `fork`, `migrate`) are written to a temporary file that is
//! synced and renamed into place, so no reader ever sees half a file.

use std::fs::{File, OpenOptions};
use std::io::{self, Write};
use std::os::unix::fs::{FileExt, MetadataExt};
use std::path::{Path, PathBuf};

use super::id::{Id, IdSet};
use super::idindex::{IdIndex, short_key};
use super::index::Header;
use super::pending::{self, Found, Recovery};
use pi_base::ids::Rng;
use pi_base::json::{self, RawStr};

#[derive(Debug, thiserror::Error)]
pub enum AppendError {
    #[error("cannot write {path}")]
    Io {
        path: PathBuf,
        #[source]
        source: io::Error,
    },
    #[error(transparent)]
    NotASession(#[from] super::index::NotASession),
    #[error(
        "{path} is a version {version} session file; it must be migrated before it can be appended to"
    )]
    OldVersion { path: PathBuf, version: u32 },
    #[error("{path} is a version {version} session file, newer than this program writes (3)")]
    NewerVersion { path: PathBuf, version: u32 },
}

/// A session file opened for appending, locked until dropped.
pub struct Appender {
    path: PathBuf,
    file: File,
    /// The length of the file as last seen (looked at again before every write).
    len: u64,
    pub header: Header,
    /// The current leaf: the last entry line in the file.
    pub leaf: Option<Id>,
    ids: Option<IdIndex>,
    /// The agent directory, holding the id index cache (none: no cache).
    cache: Option<PathBuf>,
    rng: Rng,
    /// The pending-append marker of the file.
    marker: PathBuf,
    /// A batch of ours may have been left half written (a write failed): recover it
    /// before writing again.
    pending: bool,
}

impl Appender {
    /// Opens and locks a session file for appending. `cache` is the agent directory, where
    /// the id index of the file is cached (`None`: scan it every time).
    pub fn open(path: &Path, cache: Option<&Path>) -> Result<Appender, AppendError> {
        match Self::open_locked(path, cache, true)? {
            Some(ap) => Ok(ap),
            None => Err(AppendError::Io {
                path: path.to_owned(),
                source: io::Error::other("the lock was not taken"),
            }),
        }
    }

    /// Like [`Appender::open`], but without waiting: `None` when another process holds the
    /// lock (a running writer, such as an agent run).
    pub fn try_open(path: &Path, cache: Option<&Path>) -> Result<Option<Appender>, AppendError> {
        Self::open_locked(path, cache, false)
    }

    /// Opens and locks the file (waiting for the lock, or `None` when it is held), making
    /// sure the file locked is the one at `path`: a migration may have renamed a new file
    /// over it meanwhile.
    fn open_locked(
        path: &Path,
        cache: Option<&Path>,
        wait: bool,
    ) -> Result<Option<Appender>, AppendError> {
        let io_err = |source| AppendError::Io {
            path: path.to_owned(),
            source,
        };
        let mut attempts = 0;
        let file = loop {
            let file = OpenOptions::new()
                .read(true)
                .append(true)
                .open(path)
                .map_err(io_err)?;
            if wait {
                lock(&file, path).map_err(io_err)?;
            } else {
                match file.try_lock() {
                    Ok(()) => {}
                    Err(std::fs::TryLockError::WouldBlock) => return Ok(None),
                    Err(std::fs::TryLockError::Error(e)) => return Err(io_err(e)),
                }
            }
            let (a, b) = (file.metadata().map_err(io_err)?, std::fs::metadata(path));
            match b {
                Ok(b) if a.dev() == b.dev() && a.ino() == b.ino() => break file,
                _ if attempts < 20 => attempts += 1,
                Ok(_) => break file,
                Err(e) => return Err(io_err(e)),
            }
        };
        Self::locked(path, file, cache).map(Some)
    }

    /// The state of a file just locked.
    fn locked(path: &Path, file: File, cache: Option<&Path>) -> Result<Appender, AppendError> {
        let io_err = |source| AppendError::Io {
            path: path.to_owned(),
            source,
        };
        let len = file.metadata().map_err(io_err)?.len();
        let header = read_header(&file, len).map_err(io_err)?.map_err(|reason| {
            super::index::NotASession {
                path: path.to_owned(),
                reason,
            }
        })?;
        if header.version < 3 {
            return Err(AppendError::OldVersion {
                path: path.to_owned(),
                version: header.version,
            });
        }
        if header.version > 3 {
            return Err(AppendError::NewerVersion {
                path: path.to_owned(),
                version: header.version,
            });
        }
        let leaf = find_leaf(&file, len).map_err(io_err)?;
        let rng = Rng::new(|| count_lines(&file, len));
        let mut ap = Appender {
            path: path.to_owned(),
            file,
            len,
            header,
            leaf,
            ids: None,
            cache: cache.map(Path::to_owned),
            rng,
            marker: pending::marker_path(path),
            pending: false,
        };
        ap.recover()?;
        Ok(ap)
    }

    fn io_err(&self) -> impl Fn(io::Error) -> AppendError + '_ {
        |source| AppendError::Io {
            path: self.path.clone(),
            source,
        }
    }

    fn marker_err(&self) -> impl Fn(io::Error) -> AppendError + '_ {
        |source| AppendError::Io {
            path: self.marker.clone(),
            source,
        }
    }

    /// Recovers an interrupted batch, if the marker says there is one: we hold the lock,
    /// so its writer is gone. When anything of the batch reached the file, an incomplete
    /// last line is ended and a recovery entry appended under the leaf from before the
    /// batch (see [`super::pending`]); then the marker is removed.
    fn recover(&mut self) -> Result<(), AppendError> {
        let found = pending::read(&self.marker).map_err(self.marker_err())?;
        if found == Found::None {
            self.pending = false;
            return Ok(());
        }
        let meta = self.file.metadata().map_err(self.io_err())?;
        let len = meta.len();
        let m = match found {
            Found::Marker(m) if m.is_for(&meta, len) && m.start < len => m,
            // Nothing of the batch was written, or the marker is not about this file.
            _ => {
                pending::remove(&self.marker).map_err(self.marker_err())?;
                self.pending = false;
                return Ok(());
            }
        };
        self.seen_len(len).map_err(self.io_err())?;
        let (entries, last) = whole_entries(&self.file, m.start, len).map_err(self.io_err())?;
        let before = find_leaf(&self.file, m.start).map_err(self.io_err())?;
        let newline = self.needs_newline().map_err(self.io_err())?;
        let end = len + u64::from(newline);
        let parent = match &before {
            Some(l) => Parent::Id(l.as_str().to_owned()),
            None => Parent::Root,
        };
        let last = last.map(|l| l.as_str().to_owned());
        let entry = NewEntry::new("custom", parent)
            .field("customType", super::entry::jstr(pending::CUSTOM_TYPE))
            .field(
                "data",
                pending::data(last.as_deref(), m.start, end, entries),
            );
        let ids = self.assign_ids(1)?;
        let lines = self.build_lines(&[entry], &ids);
        // The recovery itself needs no marker: if it is interrupted, the batch's marker is
        // still there and the next recovery covers it too.
        self.write_synced(&lines, newline)?;
        pending::remove(&self.marker).map_err(self.marker_err())?;
        self.pending = false;
        let id = ids.into_iter().next().unwrap_or_default();
        self.leaf = Some(Id::new(&id));
        let r = Recovery {
            path: self.path.clone(),
            start: m.start,
            end,
            entries,
            leaf: before.map(|l| l.as_str().to_owned()),
            id,
        };
        pending::recovered(&r);
        Ok(())
    }

    /// Looks at the file again (before every write): our own interrupted batch is
    /// recovered, and bytes another program appended since are taken into account (ids,
    /// leaf, an incomplete last line).
    fn refresh(&mut self) -> Result<(), AppendError> {
        if self.pending {
            self.recover()?;
        }
        let len = self.file.metadata().map_err(self.io_err())?.len();
        self.seen_len(len).map_err(self.io_err())
    }

    /// Takes in that the file is now `len` bytes long.
    fn seen_len(&mut self, len: u64) -> io::Result<()> {
        if len == self.len {
            return Ok(());
        }
        if len > self.len {
            if let Some(idx) = self.ids.as_mut() {
                // From a little before: an id cut in two at the old end.
                let _ = idx.extend_and_save(&self.file, self.len.saturating_sub(64), len);
            }
        } else {
            self.ids = None;
        }
        self.len = len;
        self.leaf = find_leaf(&self.file, len)?;
        Ok(())
    }

    /// Whether the file ends in an incomplete line (its last byte is not a newline).
    fn needs_newline(&self) -> io::Result<bool> {
        if self.len == 0 {
            return Ok(false);
        }
        let mut last = [0u8; 1];
        self.file.read_exact_at(&mut last, self.len - 1)?;
        Ok(last[0] != b'\n')
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    fn index(&mut self) -> io::Result<&IdIndex> {
        if self.ids.is_none() {
            let idx = IdIndex::load(&self.file, &self.path, self.len, self.cache.as_deref())?;
            self.ids = Some(idx);
        }
        match &self.ids {
            Some(i) => Ok(i),
            None => Err(io::Error::other("id index unavailable")),
        }
    }

    /// Replaces an index that came from the cache with one built from the file (a cache
    /// is trusted for what it finds, which is checked against the file, but not for what it
    /// misses: the file may have been edited in place). Whether it did.
    fn reindex(&mut self) -> io::Result<bool> {
        if !self.ids.as_ref().is_some_and(IdIndex::loaded_from_cache) {
            return Ok(false);
        }
        let idx = IdIndex::rebuild(&self.file, &self.path, self.len, self.cache.as_deref())?;
        self.ids = Some(idx);
        Ok(true)
    }

    /// Whether an entry with this id exists (exact: the lines where the id occurs are parsed
    /// and their top-level `id` compared).
    pub fn contains(&mut self, id: &str) -> io::Result<bool> {
        if self.contains_once(id)? {
            return Ok(true);
        }
        if short_key(id).is_some() && self.reindex()? {
            return self.contains_once(id);
        }
        Ok(false)
    }

    fn contains_once(&mut self, id: &str) -> io::Result<bool> {
        if let Some(k) = short_key(id) {
            let offsets = self.index()?.offsets(k)?;
            for off in offsets {
                if line_has_id(&read_line_at(&self.file, self.len, off)?, id) {
                    return Ok(true);
                }
            }
            return Ok(false);
        }
        // Other id forms are not indexed: search for them.
        let mut needle = Vec::new();
        json::write_str(&mut needle, id);
        let finder = memchr::memmem::Finder::new(&needle);
        let mut found = false;
        for_each_block(&self.file, self.len, needle.len(), |block, base| {
            for hit in finder.find_iter(block.data) {
                if hit >= block.limit {
                    break;
                }
                let line = read_line_at(&self.file, self.len, base + hit as u64)?;
                if line_has_id(&line, id) {
                    found = true;
                    break;
                }
            }
            Ok(!found)
        })?;
        Ok(found)
    }

    /// Resolves an entry id or a unique id prefix.
    pub fn resolve_entry(&mut self, arg: &str) -> Result<String, super::index::EntryLookupError> {
        use super::index::EntryLookupError;
        match self.resolve_once(arg) {
            // Not found with an index from the cache: look in the file before saying so.
            Err(EntryLookupError::NotFound(_)) if self.reindex().unwrap_or(false) => {
                self.resolve_once(arg)
            }
            r => r,
        }
    }

    fn resolve_once(&mut self, arg: &str) -> Result<String, super::index::EntryLookupError> {
        use super::index::EntryLookupError;
        let io = |e: io::Error| EntryLookupError::NotFound(format!("{arg} ({e})"));
        if !arg.is_empty() && self.contains(arg).map_err(io)? {
            return Ok(arg.to_owned());
        }
        if arg.is_empty() {
            return Err(EntryLookupError::NotFound(arg.to_owned()));
        }
        let mut candidates = self.index().map_err(io)?.with_prefix(arg).map_err(io)?;
        if short_key(&format!("{arg:0<8}")).is_none() {
            // Not a hex prefix: look at every id.
            candidates = super::index::scan_ids(&self.file, self.len)
                .map_err(io)?
                .iter()
                .filter(|k| k.as_str().starts_with(arg))
                .map(|k| k.as_str().to_owned())
                .collect();
        }
        candidates.sort();
        let mut matches = Vec::new();
        for c in candidates {
            if self.contains(&c).map_err(io)? {
                matches.push(c);
            }
        }
        match matches.len() {
            0 => Err(EntryLookupError::NotFound(arg.to_owned())),
            1 => Ok(matches.remove(0)),
            n => Err(EntryLookupError::Ambiguous {
                prefix: arg.to_owned(),
                candidates: matches.into_iter().take(8).collect(),
                count: n,
            }),
        }
    }

    /// A new entry id, unique among the ids in the file and `taken`.
    pub(crate) fn new_id(&mut self, taken: &IdSet) -> io::Result<String> {
        self.index()?;
        for _ in 0..100 {
            let id = self.rng.short_id();
            let in_file = match (&self.ids, short_key(&id)) {
                (Some(idx), Some(k)) => idx.contains(k)?,
                _ => true,
            };
            if !in_file && !taken.contains(&Id::new(&id)) {
                return Ok(id);
            }
        }
        Ok(self.rng.uuid_v4())
    }

    /// Appends complete lines (without newlines) in one write, then syncs: the end of the
    /// file is looked at first (an incomplete last line is ended with a newline), and the
    /// batch is bracketed by the pending-append marker, so that a batch interrupted midway
    /// is recovered rather than continued from. When this returns, the batch is written
    /// and synced and its marker is gone: it may be acknowledged.
    pub fn write(&mut self, lines: &[Vec<u8>]) -> Result<(), AppendError> {
        self.refresh()?;
        let newline = self.needs_newline().map_err(self.io_err())?;
        let size = lines.iter().map(|l| l.len() as u64 + 1).sum::<u64>() + u64::from(newline);
        let meta = self.file.metadata().map_err(self.io_err())?;
        let marker = pending::Marker::new(&meta, self.len, self.len + size);
        pending::create(&self.marker, &marker).map_err(self.marker_err())?;
        self.pending = true;
        self.write_synced(lines, newline)?;
        pending::remove(&self.marker).map_err(self.marker_err())?;
        self.pending = false;
        Ok(())
    }

    /// Writes `lines` (after a newline, if `newline`) with one write, and syncs.
    fn write_synced(&mut self, lines: &[Vec<u8>], newline: bool) -> Result<(), AppendError> {
        let mut buf = Vec::with_capacity(lines.iter().map(|l| l.len() + 1).sum::<usize>() + 1);
        if newline {
            buf.push(b'\n');
        }
        for l in lines {
            buf.extend_from_slice(l);
            buf.push(b'\n');
        }
        let io_err = |source| AppendError::Io {
            path: self.path.clone(),
            source,
        };
        self.file.write_all(&buf).map_err(io_err)?;
        self.file.sync_data().map_err(io_err)?;
        let old_len = self.len;
        self.len += buf.len() as u64;
        if let Some(idx) = self.ids.as_mut() {
            // Index the bytes just written (and cache the index).
            let _ = idx.extend_and_save(&self.file, old_len, self.len);
        }
        Ok(())
    }
}

/// Told when a writer has to wait for another one's lock (set once by the program; the
/// library says nothing by itself).
static ON_WAIT: std::sync::OnceLock<fn(&Path)> = std::sync::OnceLock::new();

/// Sets what happens when an append has to wait for another writer's lock (e.g. a note on
/// a terminal). Only the first call counts.
pub fn on_wait(f: fn(&Path)) {
    let _ = ON_WAIT.set(f);
}

fn lock(file: &File, path: &Path) -> io::Result<()> {
    match file.try_lock() {
        Ok(()) => Ok(()),
        Err(std::fs::TryLockError::WouldBlock) => {
            if let Some(f) = ON_WAIT.get() {
                f(path);
            }
            file.lock()
        }
        Err(std::fs::TryLockError::Error(e)) => Err(e),
    }
}

fn line_has_id(line: &[u8], id: &str) -> bool {
    let start = json::skip_ws(line, 0);
    let mut ty = None;
    let mut found = None;
    let ok = json::scan_object(line, start, |m| {
        if m.key.eq_str("id") {
            found = Some((m.value_start, m.value_end));
        } else if m.key.eq_str("type") {
            ty = Some((m.value_start, m.value_end));
        }
    })
    .is_ok_and(|(end, _)| json::skip_ws(line, end) == line.len());
    let is_header = ty
        .and_then(|(s, e)| RawStr::from_value(&line[s..e]))
        .is_some_and(|t| t.eq_str("session"));
    ok && !is_header
        && found
            .and_then(|(s, e)| RawStr::from_value(&line[s..e]))
            .is_some_and(|v| v.eq_str(id))
}

struct Block<'a> {
    data: &'a [u8],
    /// Hits at or after this offset belong to the next block.
    limit: usize,
}

/// Reads the file in blocks that overlap by `overlap` bytes, so a pattern of that length is
/// never split. `f` returns whether to continue.
fn for_each_block(
    file: &File,
    len: u64,
    overlap: usize,
    mut f: impl FnMut(Block<'_>, u64) -> io::Result<bool>,
) -> io::Result<()> {
    const BLOCK: u64 = 8 << 20;
    let mut buf = Vec::new();
    let mut pos = 0u64;
    while pos < len {
        let end = (pos + BLOCK).min(len);
        let read_end = (end + overlap as u64).min(len);
        buf.resize((read_end - pos) as usize, 0);
        file.read_exact_at(&mut buf, pos)?;
        let keep_going = f(
            Block {
                data: &buf,
                limit: (end - pos) as usize,
            },
            pos,
        )?;
        if !keep_going {
            break;
        }
        pos = end;
    }
    Ok(())
}

/// The whole line containing byte `at`.
fn read_line_at(file: &File, len: u64, at: u64) -> io::Result<Vec<u8>> {
    const STEP: u64 = 64 << 10;
    // Find the start.
    let mut start = at;
    let mut buf = Vec::new();
    loop {
        let from = start.saturating_sub(STEP);
        buf.resize((start - from) as usize, 0);
        file.read_exact_at(&mut buf, from)?;
        if let Some(p) = memchr::memrchr(b'\n', &buf) {
            start = from + p as u64 + 1;
            break;
        }
        start = from;
        if from == 0 {
            break;
        }
    }
    // Read to the end.
    let mut line = Vec::new();
    let mut pos = start;
    while pos < len {
        let n = STEP.min(len - pos) as usize;
        let old = line.len();
        line.resize(old + n, 0);
        file.read_exact_at(&mut line[old..], pos)?;
        if let Some(p) = memchr::memchr(b'\n', &line[old..]) {
            line.truncate(old + p);
            break;
        }
        pos += n as u64;
    }
    Ok(line)
}

/// The header: the first line that parses as JSON must be a session header.
pub(crate) fn read_header(file: &File, len: u64) -> io::Result<Result<Header, String>> {
    let mut pos = 0u64;
    let mut line_no = 0u32;
    while pos < len {
        let line = read_line_at(file, len, pos)?;
        line_no += 1;
        let next = pos + line.len() as u64 + 1;
        let start = json::skip_ws(&line, 0);
        if start < line.len() && json::validate(&line).is_ok() {
            return Ok(parse_header(&line, line_no));
        }
        pos = next;
        if line_no > 1000 {
            break;
        }
    }
    Ok(Err(if len == 0 {
        "the file is empty".to_owned()
    } else {
        "it has no session header line".to_owned()
    }))
}

fn parse_header(line: &[u8], line_no: u32) -> Result<Header, String> {
    let start = json::skip_ws(line, 0);
    let members = json::members(&line[start..])
        .map_err(|_| format!("line {line_no} is not a JSON object"))?;
    let body = &line[start..];
    let is_header = json::field(body, &members, "type")
        .and_then(RawStr::from_value)
        .is_some_and(|t| t.eq_str("session"));
    if !is_header {
        return Err(format!(
            "its first line ({line_no}) is not a session header"
        ));
    }
    super::scan::header_from(body, &members, line_no)
}

/// The id of the last entry line (valid JSON object with string `type` other than `session`
/// and a string `id`), scanning backwards from the end; `None` when only the header precedes.
///
/// Blocks are read backwards only to find line breaks; a line is parsed from the block when
/// it lies inside it, else read once on its own, so every byte is read at most twice however
/// long the lines are.
fn find_leaf(file: &File, len: u64) -> io::Result<Option<Id>> {
    const STEP: u64 = 256 << 10;
    let mut line_end = len; // exclusive end of the next line to examine (the one before it)
    let mut end = len; // exclusive end of the region not yet searched for line breaks
    let mut buf = Vec::new();
    while end > 0 {
        let from = end.saturating_sub(STEP);
        buf.resize((end - from) as usize, 0);
        file.read_exact_at(&mut buf, from)?;
        let mut breaks = memchr::memrchr_iter(b'\n', &buf);
        loop {
            let start = match breaks.next() {
                Some(p) => from + p as u64 + 1,
                None if from == 0 => 0,
                None => break,
            };
            if let Some(id) = entry_id_between(file, &buf, from, start, line_end)? {
                return Ok(Some(id));
            }
            if start == 0 {
                return Ok(None);
            }
            line_end = start - 1;
        }
        end = from;
    }
    Ok(None)
}

/// The entry id of the line `start..end` of the file, taken from `buf` (the bytes at `from`)
/// when the line lies inside it, else read from the file.
fn entry_id_between(
    file: &File,
    buf: &[u8],
    from: u64,
    start: u64,
    end: u64,
) -> io::Result<Option<Id>> {
    let buf_end = from + buf.len() as u64;
    if end <= buf_end {
        let (s, e) = ((start - from) as usize, (end - from) as usize);
        return Ok(entry_id(&buf[s..e]));
    }
    // The line goes on past the block: only an object can be an entry, so look at its first
    // character (in the block) before reading it whole.
    let head = &buf[(start - from) as usize..];
    let first = head.iter().find(|c| !json::is_ws(**c));
    if first.is_some_and(|&c| c != b'{') {
        return Ok(None);
    }
    let mut line = vec![0u8; (end - start) as usize];
    file.read_exact_at(&mut line, start)?;
    Ok(entry_id(&line))
}

#[cfg(test)]
mod find_leaf_tests {
    use super::*;

    /// The leaf as the definition says: the last line that is an entry.
    fn naive(bytes: &[u8]) -> Option<String> {
        bytes
            .split(|&c| c == b'\n')
            .rev()
            .find_map(entry_id)
            .map(|i| i.as_str().to_owned())
    }

    fn leaf_of(bytes: &[u8]) -> Option<String> {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("s.jsonl");
        std::fs::write(&path, bytes).unwrap();
        let f = File::open(&path).unwrap();
        find_leaf(&f, bytes.len() as u64)
            .unwrap()
            .map(|i| i.as_str().to_owned())
    }

    fn entry(id: &str, pad: usize) -> String {
        format!(
            r#"{{"type":"custom","customType":"x","data":"{}","id":"{id}","parentId":null,"timestamp":"t"}}"#,
            "y".repeat(pad)
        )
    }

    #[test]
    fn the_last_entry_line_whatever_the_line_lengths() {
        const STEP: usize = 256 << 10;
        let header = r#"{"type":"session","version":3,"id":"s","timestamp":"t","cwd":"/"}"#;
        let tails: [&[u8]; 7] = [
            b"",
            b"\n",
            b"\n\n   \n",
            b"\n{\"type\":\"custom\",\"id\":\"torn\",\"data\":\"abc",
            b"\n[1,2]\n\"str\"\n{\"no\":\"id\"}\n",
            b"\n{\"type\":\"session\",\"id\":\"h2\"}\n",
            b"\n   {\"type\":\"x\",\"id\":\"spaced\"}   ",
        ];
        let mut sizes = vec![0, 10, 1000];
        for k in [1, 2] {
            for d in [-100i64, -99, -1, 0, 1] {
                sizes.push((k * STEP as i64 + d).max(0) as usize);
            }
        }
        for &a in &[0usize, STEP - 120] {
            for &b in &sizes {
                for tail in tails {
                    let mut f = format!("{header}\n");
                    if a > 0 {
                        f.push_str(&entry("first", a));
                        f.push('\n');
                    }
                    f.push_str(&entry("last", b));
                    let mut bytes = f.into_bytes();
                    bytes.extend_from_slice(tail);
                    let got = leaf_of(&bytes);
                    assert_eq!(got, naive(&bytes), "a={a} b={b} tail={tail:?}");
                    let want = if tail.starts_with(b"\n   {") {
                        "spaced"
                    } else {
                        "last"
                    };
                    assert_eq!(got.as_deref(), Some(want));
                }
            }
        }
        // Nothing but a header, or nothing at all.
        assert_eq!(leaf_of(format!("{header}\n").as_bytes()), None);
        assert_eq!(leaf_of(b""), None);
        // A huge torn last line is skipped for the whole entry before it.
        let mut bytes = format!("{header}\n{}\n", entry("whole", 3)).into_bytes();
        bytes.extend_from_slice(b"{\"type\":\"custom\",\"id\":\"torn\",\"data\":\"");
        bytes.resize(bytes.len() + 3 * STEP + 17, b'z');
        assert_eq!(leaf_of(&bytes).as_deref(), Some("whole"));
    }
}

fn entry_id(line: &[u8]) -> Option<Id> {
    let start = json::skip_ws(line, 0);
    if start == line.len() || line[start] != b'{' {
        return None;
    }
    let mut ty = None;
    let mut id = None;
    let (end, _) = json::scan_object(line, start, |m| {
        if m.key.eq_str("id") {
            id = Some((m.value_start, m.value_end));
        } else if m.key.eq_str("type") {
            ty = Some((m.value_start, m.value_end));
        }
    })
    .ok()?;
    if json::skip_ws(line, end) != line.len() {
        return None;
    }
    let ty = RawStr::from_value(&line[ty?.0..ty?.1])?;
    if ty.eq_str("session") {
        return None;
    }
    let id = RawStr::from_value(&line[id?.0..id?.1])?;
    Some(Id::new(&id.decode()))
}

/// Where a new entry attaches.
#[derive(Debug, Clone)]
pub enum Parent {
    /// The current leaf (for the second entry of a batch on: the previous new entry).
    Leaf,
    /// No parent: a new root.
    Root,
    /// A given entry.
    Id(String),
}

/// An entry to append: its type, parent and fields (key, raw JSON value), in order.
#[derive(Debug, Clone)]
pub struct NewEntry {
    pub ty: String,
    pub parent: Parent,
    pub fields: Vec<(String, Vec<u8>)>,
}

impl NewEntry {
    pub fn new(ty: &str, parent: Parent) -> NewEntry {
        NewEntry {
            ty: ty.to_owned(),
            parent,
            fields: Vec::new(),
        }
    }

    pub fn field(mut self, key: &str, value: Vec<u8>) -> NewEntry {
        self.fields.push((key.to_owned(), value));
        self
    }
}

impl Appender {
    /// Assigns ids, parents and timestamps, writes the batch in one write, and returns the
    /// lines written. Each entry with `Parent::Leaf` chains from the one before it.
    pub fn append(&mut self, entries: &[NewEntry]) -> Result<Vec<Vec<u8>>, AppendError> {
        self.append_at(entries, pi_base::clock::now_ms())
    }

    /// [`Appender::append`] with the entries' `timestamp` at `now_ms` (for an entry that
    /// repeats its own time inside, as a compaction's `systemMessage` does).
    pub fn append_at(
        &mut self,
        entries: &[NewEntry],
        now_ms: i64,
    ) -> Result<Vec<Vec<u8>>, AppendError> {
        self.refresh()?;
        let ids = self.assign_ids(entries.len())?;
        let lines = self.build_lines_at(entries, &ids, now_ms);
        self.write(&lines)?;
        if let Some(last) = ids.last() {
            self.leaf = Some(Id::new(last));
        }
        Ok(lines)
    }

    /// `n` fresh ids, unique in the file and among themselves.
    pub fn assign_ids(&mut self, n: usize) -> Result<Vec<String>, AppendError> {
        let mut taken = IdSet::default();
        let mut ids = Vec::with_capacity(n);
        for _ in 0..n {
            let id = self.new_id(&taken).map_err(|source| AppendError::Io {
                path: self.path.clone(),
                source,
            })?;
            taken.insert(Id::new(&id));
            ids.push(id);
        }
        Ok(ids)
    }

    /// The lines for `entries` with the given ids (nothing is written).
    pub fn build_lines(&self, entries: &[NewEntry], ids: &[String]) -> Vec<Vec<u8>> {
        self.build_lines_at(entries, ids, pi_base::clock::now_ms())
    }

    fn build_lines_at(&self, entries: &[NewEntry], ids: &[String], now_ms: i64) -> Vec<Vec<u8>> {
        let ts = pi_base::clock::format_iso(now_ms);
        let mut prev: Option<String> = self.leaf.as_ref().map(|l| l.as_str().to_owned());
        let mut lines = Vec::with_capacity(entries.len());
        for (e, id) in entries.iter().zip(ids) {
            let parent = match &e.parent {
                Parent::Leaf => prev.clone(),
                Parent::Root => None,
                Parent::Id(p) => Some(p.clone()),
            };
            let fields: Vec<(&str, &[u8])> = e
                .fields
                .iter()
                .map(|(k, v)| (k.as_str(), v.as_slice()))
                .collect();
            lines.push(super::entry::entry_line(
                &e.ty,
                id,
                parent.as_deref(),
                &ts,
                &fields,
            ));
            prev = Some(id.clone());
        }
        lines
    }
}

/// The whole entries in `file[start..end]` (the bytes an interrupted batch left): how many,
/// and the id of the last one.
fn whole_entries(file: &File, start: u64, end: u64) -> io::Result<(u64, Option<Id>)> {
    let mut n = 0u64;
    let mut last = None;
    super::scan::for_each_line_in(file, start, end, |_, _, line, _| {
        if let Some(id) = entry_id(line) {
            n += 1;
            last = Some(id);
        }
    })?;
    Ok((n, last))
}

/// Number of newlines in the first `len` bytes (a reproducible salt for seeded ids).
fn count_lines(file: &File, len: u64) -> u64 {
    let mut n = 0u64;
    let _ = for_each_block(file, len, 0, |block, _| {
        n += memchr::memchr_iter(b'\n', &block.data[..block.limit]).count() as u64;
        Ok(true)
    });
    n
}

#[cfg(test)]
mod tests {
    use super::*;

    fn session(name: &str) -> PathBuf {
        let dir = std::env::temp_dir().join(format!("pi-append-{}-{name}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("s.jsonl");
        std::fs::write(
            &path,
            "{\"type\":\"session\",\"version\":3,\"id\":\"s\",\"timestamp\":\"t\",\"cwd\":\"/\"}\n",
        )
        .unwrap();
        path
    }

    fn message(text: &str) -> NewEntry {
        NewEntry::new("message", Parent::Leaf).field("message", jstr_message(text))
    }

    fn jstr_message(text: &str) -> Vec<u8> {
        let mut v = b"{\"role\":\"user\",\"content\":".to_vec();
        json::write_str(&mut v, text);
        v.push(b'}');
        v
    }

    /// One appender, held across writes (as a run holds it): a partial line another
    /// program appends in between is ended before the next entry.
    #[test]
    fn every_write_looks_at_the_end_of_the_file_again() {
        let path = session("tail");
        let mut ap = Appender::open(&path, None).unwrap();
        ap.append(&[message("one")]).unwrap();
        OpenOptions::new()
            .append(true)
            .open(&path)
            .unwrap()
            .write_all(b"X")
            .unwrap();
        let lines = ap.append(&[message("two")]).unwrap();
        drop(ap);
        let text = std::fs::read_to_string(&path).unwrap();
        let all: Vec<&str> = text.lines().collect();
        assert_eq!(all.len(), 4);
        assert_eq!(all[2], "X");
        assert_eq!(all[3].as_bytes(), lines[0].as_slice());
        assert!(!pending::marker_path(&path).exists());
        let _ = std::fs::remove_dir_all(path.parent().unwrap());
    }

    /// A batch left behind its marker is recovered when the file is opened for writing:
    /// the leaf goes back to the entry before it.
    #[test]
    fn opening_recovers_an_interrupted_batch() {
        let path = session("recover");
        let mut ap = Appender::open(&path, None).unwrap();
        let first = ap.append(&[message("kept")]).unwrap();
        let kept = entry_id(&first[0]).unwrap();
        drop(ap);
        let meta = std::fs::metadata(&path).unwrap();
        let start = meta.len();
        let orphan = b"{\"type\":\"message\",\"id\":\"0rphan00\",\"parentId\":null,\"timestamp\":\"t\",\"message\":{}}\n{\"type\":\"mess";
        pending::create(
            &pending::marker_path(&path),
            &pending::Marker::new(&meta, start, start + 500),
        )
        .unwrap();
        OpenOptions::new()
            .append(true)
            .open(&path)
            .unwrap()
            .write_all(orphan)
            .unwrap();
        let ap = Appender::open(&path, None).unwrap();
        let text = std::fs::read_to_string(&path).unwrap();
        let last = text.lines().last().unwrap();
        assert_eq!(ap.leaf, entry_id(last.as_bytes()));
        assert!(last.contains("\"customType\":\"interrupted-append\""));
        assert!(last.contains(&format!("\"parentId\":\"{kept}\"")));
        let end = start + orphan.len() as u64 + 1;
        assert!(last.contains(&format!(
            "\"data\":{{\"from\":\"0rphan00\",\"start\":{start},\"end\":{end},\"entries\":1}}"
        )));
        assert!(!pending::marker_path(&path).exists());
        let _ = std::fs::remove_dir_all(path.parent().unwrap());
    }
}
