//! Interrupted appends. A batch is written with one `write(2)`, but a process killed during
//! that write leaves part of it: some whole entries and an incomplete line. Those entries
//! were never acknowledged, yet they are the last lines of the file, so the reference (and
//! any reader that takes the last entry as the leaf) would continue the conversation from
//! them.
//!
//! So a writer, holding the session's lock, first records the batch it is about to write in
//! a small marker next to the session file (`<file>.pending`: the byte offset where the
//! batch starts and where it should end, and which file it is for), synced; then writes and
//! syncs the batch; then removes the marker (and syncs the directory); only then does it
//! report the batch as written. A marker therefore exists only while a batch is being
//! written, or after its writer died.
//!
//! Whoever finds a marker and can take the lock (its writer is gone) recovers the file, as
//! SQLite rolls back a hot journal: if anything of the batch reached the file, it ends an
//! incomplete last line with a newline and appends one `custom` entry of type
//! [`CUSTOM_TYPE`] whose parent is the leaf from before the batch, so that the last entry of
//! the file, the leaf for pi and for the reference, is back on the acknowledged path and the
//! entries of the batch form an abandoned side branch. Its `data` records the bytes the
//! batch left (`start`, `end`), how many whole entries they hold (`entries`) and the last of
//! them (`from`). Then the marker is removed. Nothing is truncated or rewritten.

use std::ffi::OsString;
use std::fs::{File, Metadata, OpenOptions};
use std::io::{self, Write};
use std::os::unix::fs::{MetadataExt, OpenOptionsExt};
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use serde::{Deserialize, Serialize};

use pi_base::json;

/// The `customType` of the entry that records a recovered batch.
pub(crate) const CUSTOM_TYPE: &str = "interrupted-append";

/// What a writer records before writing a batch.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Marker {
    /// The writer (for people reading the marker; liveness is decided by the lock).
    pub pid: u32,
    /// The session file (device and inode): a marker for another file is stale.
    pub dev: u64,
    pub ino: u64,
    /// Where the batch starts: the length of the file before it.
    pub start: u64,
    /// Where it ends when written whole.
    pub end: u64,
}

impl Marker {
    /// The marker of a batch of `file` occupying `start..end`.
    pub fn new(meta: &Metadata, start: u64, end: u64) -> Marker {
        Marker {
            pid: std::process::id(),
            dev: meta.dev(),
            ino: meta.ino(),
            start,
            end,
        }
    }

    /// Whether the marker is about this file, as it is now (`len` bytes long): a marker for
    /// another file (one renamed over the session since) or for bytes the file no longer
    /// has is stale.
    pub(crate) fn is_for(&self, meta: &Metadata, len: u64) -> bool {
        self.dev == meta.dev() && self.ino == meta.ino() && self.start <= len
    }
}

/// What was found next to a session file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Found {
    None,
    /// A marker that cannot be parsed: its writer died while writing it, so before it
    /// wrote anything of its batch.
    Unreadable,
    Marker(Marker),
}

/// The marker's path: `<file>.pending` next to the file itself (symbolic links resolved,
/// so every name of the file finds the same marker).
pub(crate) fn marker_path(session: &Path) -> PathBuf {
    let real = std::fs::canonicalize(session).unwrap_or_else(|_| session.to_owned());
    let mut name: OsString = real.file_name().map(OsString::from).unwrap_or_default();
    name.push(".pending");
    real.with_file_name(name)
}

/// Whether a marker is next to `session`, as [`read`] of [`marker_path`] tells, for readers
/// that check many files: a file that is not itself a symbolic link has its marker beside
/// it under any name of its directory, so only a link needs its path resolved.
pub(crate) fn read_for(session: &Path) -> io::Result<Found> {
    match (std::fs::symlink_metadata(session), session.file_name()) {
        (Ok(m), Some(name)) if !m.file_type().is_symlink() => {
            let mut name = OsString::from(name);
            name.push(".pending");
            read(&session.with_file_name(name))
        }
        _ => read(&marker_path(session)),
    }
}

/// Reads the marker at `path`.
pub fn read(path: &Path) -> io::Result<Found> {
    match std::fs::read(path) {
        Ok(bytes) => Ok(match serde_json::from_slice::<Marker>(&bytes) {
            Ok(m) => Found::Marker(m),
            Err(_) => Found::Unreadable,
        }),
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(Found::None),
        Err(e) => Err(e),
    }
}

/// Writes the marker at `path` and syncs it (private to the user, like the session).
pub fn create(path: &Path, m: &Marker) -> io::Result<()> {
    let mut text = serde_json::to_vec(m).map_err(io::Error::other)?;
    text.push(b'\n');
    let mut f = OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .mode(0o600)
        .open(path)?;
    f.write_all(&text)?;
    f.sync_all()
}

/// Removes the marker at `path` (if it is there) and syncs its directory, so the removal
/// survives a crash of the machine (where directories can be synced).
pub fn remove(path: &Path) -> io::Result<()> {
    match std::fs::remove_file(path) {
        Ok(()) => {}
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(()),
        Err(e) => return Err(e),
    }
    let dir = match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d,
        _ => Path::new("."),
    };
    match File::open(dir).and_then(|d| d.sync_all()) {
        Err(e)
            if matches!(
                e.kind(),
                io::ErrorKind::InvalidInput | io::ErrorKind::Unsupported
            ) =>
        {
            Ok(())
        }
        r => r,
    }
}

/// The `data` of a recovery entry: the bytes the batch left (`start..end`, the newline
/// that ended its incomplete line included), the whole entries among them and the last one.
pub fn data(from: Option<&str>, start: u64, end: u64, entries: u64) -> Vec<u8> {
    let mut out = b"{\"from\":".to_vec();
    match from {
        Some(id) => json::write_str(&mut out, id),
        None => out.extend_from_slice(b"null"),
    }
    out.extend_from_slice(
        format!(",\"start\":{start},\"end\":{end},\"entries\":{entries}}}").as_bytes(),
    );
    out
}

/// The byte range (`start`, `end`) recorded in a recovery entry's `data`.
pub(crate) fn recorded_range(data: &[u8]) -> Option<(u64, u64)> {
    let start = json::skip_ws(data, 0);
    let body = &data[start..];
    let members = json::members(body).ok()?;
    let int = |k: &str| {
        json::field(body, &members, k)
            .and_then(json::number)
            .filter(|n| *n >= 0.0 && n.fract() == 0.0 && *n < 9.0e15)
            .map(|n| n as u64)
    };
    let (s, e) = (int("start")?, int("end")?);
    (s <= e).then_some((s, e))
}

/// What a recovery did.
#[derive(Debug, Clone)]
pub struct Recovery {
    pub path: PathBuf,
    /// The bytes the interrupted batch left.
    pub start: u64,
    pub end: u64,
    /// Whole entries among them (now an abandoned branch).
    pub entries: u64,
    /// The leaf restored: the last entry before the batch.
    pub leaf: Option<String>,
    /// The id of the recovery entry.
    pub id: String,
}

/// Told when a batch was recovered (set once by the program; the library says nothing by
/// itself).
static ON_RECOVER: OnceLock<fn(&Recovery)> = OnceLock::new();

/// Sets what happens when an interrupted batch is recovered (e.g. a note on stderr). Only
/// the first call counts.
pub fn on_recover(f: fn(&Recovery)) {
    let _ = ON_RECOVER.set(f);
}

pub(crate) fn recovered(r: &Recovery) {
    if let Some(f) = ON_RECOVER.get() {
        f(r);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn data_round_trips_its_range() {
        let d = data(Some("ab\"c"), 10, 250, 3);
        assert_eq!(
            String::from_utf8_lossy(&d),
            r#"{"from":"ab\"c","start":10,"end":250,"entries":3}"#
        );
        assert_eq!(recorded_range(&d), Some((10, 250)));
        assert_eq!(recorded_range(&data(None, 0, 0, 0)), Some((0, 0)));
        assert_eq!(recorded_range(br#"{"start":5,"end":4}"#), None);
        assert_eq!(recorded_range(br#"{"start":-1,"end":4}"#), None);
        assert_eq!(recorded_range(br#"{"start":1.5,"end":4}"#), None);
        assert_eq!(recorded_range(b"[1,2]"), None);
        assert_eq!(recorded_range(b"{\"start\":1"), None);
    }

    #[test]
    fn markers_are_written_read_and_removed() {
        let dir = std::env::temp_dir().join(format!("pi-pending-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let session = dir.join("s.jsonl");
        std::fs::write(&session, "{}\n").unwrap();
        let path = marker_path(&session);
        assert!(path.to_string_lossy().ends_with("s.jsonl.pending"));
        assert_eq!(read(&path).unwrap(), Found::None);
        let meta = std::fs::metadata(&session).unwrap();
        let m = Marker::new(&meta, 3, 90);
        create(&path, &m).unwrap();
        assert_eq!(read(&path).unwrap(), Found::Marker(m));
        assert!(m.is_for(&meta, 3));
        assert!(!m.is_for(&meta, 2));
        std::fs::write(&path, "{\"pid\":1,\"dev\"").unwrap();
        assert_eq!(read(&path).unwrap(), Found::Unreadable);
        remove(&path).unwrap();
        remove(&path).unwrap();
        assert_eq!(read(&path).unwrap(), Found::None);
        let _ = std::fs::remove_dir_all(&dir);
    }
}
