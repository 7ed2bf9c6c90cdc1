//! The index of a large session file (every entry's offset, length, line, type, id and
//! parent; the labels and names), kept under `<agent dir>/cache/session-index/` so that
//! opening the same unchanged file again skips the validating pass over all its bytes.
//! `pi session fork` of a 2 GB session spends a third of its time in that pass.
//!
//! Only files of at least [`MIN_LEN`] bytes are recorded (smaller ones open in a few
//! milliseconds), and only when their pass found nothing to report: a v3 file whose lines
//! are all valid entries after one header, with no append under way, interrupted or
//! recovered. A record is used only when the file is exactly as recorded: the same device
//! and inode, size, modification and change times (not written within the clock tick of
//! the file's last change), and the same first and last 4 KiB (see
//! [`super::stamp::fresh`]). A file that grew or changed in any other way is read whole
//! again and its record replaced. The structural checks (duplicate ids, dangling parents,
//! cycles) are not recorded: they are made again from the entries on every open. The cache
//! is only a shortcut: deleting it costs time, never correctness; a record that cannot be
//! read or written is ignored.
//!
//! Layout: a magic line, a little-endian u32 length and that many bytes of JSON (the
//! stamp, header, counts, labels and names), then one 22-byte record per entry (offset
//! u64, length u32, line u32, type u8, whether it has a parent u8, id length u16, parent
//! length u16), then the ids and parents' bytes in entry order.

use std::fs::File;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use super::id::Id;
use super::index::{Header, Kind, LabelRec, Rec};
use super::stamp::{self, Fresh, Stamp};

// 2: the kinds `context_edit` and `usage` (reference 1.6) joined `Kind::ALL`.
const MAGIC: &[u8] = b"pi-session-index/2\n";
/// Files smaller than this are not recorded.
pub(crate) const MIN_LEN: u64 = 64 << 20;
const REC: usize = 22;

/// What an open needs from its pass over the file, besides the visitor.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Indexed {
    pub header: Header,
    pub entries: Vec<Rec>,
    pub labels: Vec<LabelRec>,
    pub names: Vec<(u32, String)>,
    /// Lines read (the header's included).
    pub lines: u32,
    pub ends_with_newline: bool,
}

#[derive(Serialize, Deserialize)]
struct Meta {
    stamp: Stamp,
    header_raw: Vec<u8>,
    header_line: u32,
    id: String,
    cwd: String,
    timestamp: Option<String>,
    version: u32,
    parent_session: Option<String>,
    entries: usize,
    lines: u32,
    ends_with_newline: bool,
    /// (entry, target, label, timestamp)
    labels: Vec<(u32, String, Option<String>, String)>,
    names: Vec<(u32, String)>,
}

/// Where the record of the file with `meta` is kept in `dir`.
fn record_path(dir: &Path, meta: &std::fs::Metadata) -> PathBuf {
    dir.join(format!("{:x}-{:x}.idx", meta.dev(), meta.ino()))
}

/// The recorded index of `file` (of `len` bytes read), when there is one that still
/// describes it exactly.
pub(crate) fn load(dir: &Path, file: &File, len: u64) -> Option<Indexed> {
    let meta = file.metadata().ok()?;
    if meta.len() != len {
        return None;
    }
    let bytes = std::fs::read(record_path(dir, &meta)).ok()?;
    let (m, recs, blob) = split(&bytes)?;
    if m.stamp.covered != len || stamp::fresh(file, &meta, &m.stamp)? != Fresh::Same {
        return None;
    }
    decode(m, recs, blob)
}

/// What [`save`] records: the parts of an [`Indexed`], borrowed.
pub(crate) struct Parts<'a> {
    pub header: &'a Header,
    pub entries: &'a [Rec],
    pub labels: &'a [LabelRec],
    pub names: &'a [(u32, String)],
    pub lines: u32,
    pub ends_with_newline: bool,
}

/// Records `ix`, the index of all `len` bytes of `file` (best effort).
pub(crate) fn save(dir: &Path, file: &File, len: u64, ix: &Parts<'_>) {
    let Ok(meta) = file.metadata() else { return };
    if meta.len() != len {
        return;
    }
    let Ok(stamp) = stamp::stamp_of(file, &meta, len) else {
        return;
    };
    if let Some(bytes) = encode(stamp, ix) {
        stamp::write_record(&record_path(dir, &meta), &bytes);
    }
}

fn encode(stamp: Stamp, ix: &Parts<'_>) -> Option<Vec<u8>> {
    let h = ix.header;
    let meta = Meta {
        stamp,
        header_raw: h.raw.clone(),
        header_line: h.line,
        id: h.id.clone(),
        cwd: h.cwd.clone(),
        timestamp: h.timestamp.clone(),
        version: h.version,
        parent_session: h.parent_session.clone(),
        entries: ix.entries.len(),
        lines: ix.lines,
        ends_with_newline: ix.ends_with_newline,
        labels: ix
            .labels
            .iter()
            .map(|l| {
                let target = l.target.as_str().to_owned();
                (l.entry, target, l.label.clone(), l.timestamp.clone())
            })
            .collect(),
        names: ix.names.to_vec(),
    };
    let json = serde_json::to_vec(&meta).ok()?;
    let mut out = Vec::with_capacity(MAGIC.len() + 4 + json.len() + ix.entries.len() * 40);
    out.extend_from_slice(MAGIC);
    out.extend_from_slice(&u32::try_from(json.len()).ok()?.to_le_bytes());
    out.extend_from_slice(&json);
    let mut blob = Vec::new();
    for r in ix.entries {
        let id = r.id.as_str().as_bytes();
        let parent = r
            .parent_id
            .as_ref()
            .map_or(&b""[..], |p| p.as_str().as_bytes());
        out.extend_from_slice(&r.offset.to_le_bytes());
        out.extend_from_slice(&r.len.to_le_bytes());
        out.extend_from_slice(&r.line.to_le_bytes());
        out.push(kind_code(r.kind));
        out.push(u8::from(r.parent_id.is_some()));
        out.extend_from_slice(&u16::try_from(id.len()).ok()?.to_le_bytes());
        out.extend_from_slice(&u16::try_from(parent.len()).ok()?.to_le_bytes());
        blob.extend_from_slice(id);
        blob.extend_from_slice(parent);
    }
    out.extend_from_slice(&blob);
    Some(out)
}

/// The meta, the entry records and the id bytes of a record; `None` unless it is whole.
fn split(b: &[u8]) -> Option<(Meta, &[u8], &[u8])> {
    let rest = b.strip_prefix(MAGIC)?;
    let (len, rest) = rest.split_first_chunk::<4>()?;
    let (json, rest) = rest.split_at_checked(u32::from_le_bytes(*len) as usize)?;
    let meta: Meta = serde_json::from_slice(json).ok()?;
    let (recs, blob) = rest.split_at_checked(meta.entries.checked_mul(REC)?)?;
    Some((meta, recs, blob))
}

fn decode(m: Meta, recs: &[u8], blob: &[u8]) -> Option<Indexed> {
    let mut entries = Vec::with_capacity(m.entries);
    let mut at = 0usize;
    let mut take = |n: usize| -> Option<&str> {
        let s = blob.get(at..at.checked_add(n)?)?;
        at += n;
        std::str::from_utf8(s).ok()
    };
    for r in recs.chunks_exact(REC) {
        let (offset, r) = r.split_first_chunk::<8>()?;
        let (len, r) = r.split_first_chunk::<4>()?;
        let (line, r) = r.split_first_chunk::<4>()?;
        let (&[kind, has_parent], r) = r.split_first_chunk::<2>()?;
        let (id_len, r) = r.split_first_chunk::<2>()?;
        let parent_len = r.first_chunk::<2>()?;
        let id = Id::new(take(usize::from(u16::from_le_bytes(*id_len)))?);
        let parent = take(usize::from(u16::from_le_bytes(*parent_len)))?;
        entries.push(Rec {
            offset: u64::from_le_bytes(*offset),
            len: u32::from_le_bytes(*len),
            line: u32::from_le_bytes(*line),
            kind: kind_of(kind)?,
            id,
            parent_id: (has_parent != 0).then(|| Id::new(parent)),
            parent: super::index::NONE,
        });
    }
    if at != blob.len() {
        return None;
    }
    Some(Indexed {
        header: Header {
            raw: m.header_raw,
            line: m.header_line,
            id: m.id,
            cwd: m.cwd,
            timestamp: m.timestamp,
            version: m.version,
            parent_session: m.parent_session,
        },
        entries,
        labels: m
            .labels
            .into_iter()
            .map(|(entry, target, label, timestamp)| LabelRec {
                entry,
                target: Id::new(&target),
                label,
                timestamp,
            })
            .collect(),
        names: m.names,
        lines: m.lines,
        ends_with_newline: m.ends_with_newline,
    })
}

fn kind_code(k: Kind) -> u8 {
    Kind::ALL
        .iter()
        .position(|&x| x == k)
        .map_or(Kind::ALL.len() as u8, |p| p as u8)
}

fn kind_of(code: u8) -> Option<Kind> {
    match Kind::ALL.get(usize::from(code)) {
        Some(&k) => Some(k),
        None if usize::from(code) == Kind::ALL.len() => Some(Kind::Other),
        None => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Session;
    use std::io::Write;

    /// A session of `n` entries: messages on a chain with a side branch, labels (one
    /// cleared), a name, an entry of an unknown type and ids too long to keep inline.
    fn session(n: usize) -> String {
        let mut t = String::from(
            "{\"type\":\"session\",\"version\":3,\"id\":\"s1\",\"timestamp\":\"2026-01-01T00:00:00.000Z\",\"cwd\":\"/w\"}\n",
        );
        let mut parent = "null".to_owned();
        for i in 0..n {
            let id = if i % 7 == 3 {
                format!("a-much-longer-id-than-the-inline-ones-{i}")
            } else {
                format!("{i:08x}")
            };
            let line = match i % 5 {
                0 => format!(
                    "{{\"type\":\"label\",\"id\":\"{id}\",\"parentId\":{parent},\"timestamp\":\"t{i}\",\"targetId\":\"00000001\",\"label\":{}}}",
                    if i % 10 == 0 {
                        "\"alpha\"".to_owned()
                    } else {
                        "null".to_owned()
                    }
                ),
                1 => format!(
                    "{{\"type\":\"session_info\",\"id\":\"{id}\",\"parentId\":{parent},\"name\":\"alpha {i}\"}}"
                ),
                2 => format!("{{\"type\":\"strange\",\"id\":\"{id}\",\"parentId\":{parent}}}"),
                _ => format!(
                    "{{\"type\":\"message\",\"id\":\"{id}\",\"parentId\":{parent},\"message\":{{\"role\":\"user\",\"content\":\"hi {i}\"}}}}"
                ),
            };
            t.push_str(&line);
            t.push('\n');
            // Every ninth entry is left behind: the next one hangs from the one before it.
            if i % 9 != 4 {
                parent = format!("\"{id}\"");
            }
        }
        t
    }

    /// What an open found, to compare a cached open with a cold one.
    fn view(s: &Session) -> String {
        format!(
            "{:?}\n{:?}\n{:?}\n{:?}\n{:?}\n{} {}",
            s.header, s.entries, s.labels, s.names, s.problems, s.len, s.ends_with_newline
        )
    }

    fn cold(path: &Path) -> String {
        view(&Session::open(path).unwrap())
    }

    fn cached(path: &Path, dir: &Path) -> String {
        let s = Session::open_cached_from(path, dir, 0).unwrap();
        s.record_index();
        view(&s)
    }

    fn record(dir: &Path) -> Option<PathBuf> {
        std::fs::read_dir(dir)
            .ok()?
            .flatten()
            .map(|e| e.path())
            .find(|p| p.extension().is_some_and(|x| x == "idx"))
    }

    /// Rewrites every `alpha` in the record as `omega` (same length): a use of the record
    /// shows.
    fn tamper(dir: &Path) {
        let p = record(dir).unwrap();
        let mut b = std::fs::read(&p).unwrap();
        for k in 0..b.len().saturating_sub(5) {
            if &b[k..k + 5] == b"alpha" {
                b[k..k + 5].copy_from_slice(b"omega");
            }
        }
        std::fs::write(&p, b).unwrap();
    }

    #[test]
    fn a_record_serves_the_unchanged_file_and_no_other() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path().join("cache");
        let path = tmp.path().join("s.jsonl");
        std::fs::write(&path, session(200)).unwrap();
        // Past the clock tick of the file's last change, so the record can vouch for it.
        std::thread::sleep(std::time::Duration::from_millis(150));
        assert_eq!(cached(&path, &dir), cold(&path));
        assert!(record(&dir).is_some());
        tamper(&dir);
        let used = cached(&path, &dir);
        assert_ne!(used, cold(&path), "the record was not used");
        assert!(used.contains("omega"));
        assert!(!used.contains("alpha"));

        // Each change is seen, the tampered record left unused and replaced.
        type Change<'a> = (&'a str, &'a dyn Fn(&Path));
        let changes: [Change<'_>; 5] = [
            ("an append", &|p| {
                let mut f = std::fs::OpenOptions::new().append(true).open(p).unwrap();
                f.write_all(b"{\"type\":\"custom\",\"id\":\"ffffffff\",\"parentId\":null}\n")
                    .unwrap();
            }),
            ("a same-size edit in place", &|p| {
                let t = std::fs::read_to_string(p)
                    .unwrap()
                    .replacen("hi 3", "ho 3", 1);
                std::fs::OpenOptions::new()
                    .write(true)
                    .open(p)
                    .unwrap()
                    .write_all(t.as_bytes())
                    .unwrap();
            }),
            ("a truncation", &|p| {
                let t = std::fs::read_to_string(p).unwrap();
                let cut = t[..t.len() - 1].rfind('\n').unwrap() + 1;
                std::fs::OpenOptions::new()
                    .write(true)
                    .open(p)
                    .unwrap()
                    .set_len(cut as u64)
                    .unwrap();
            }),
            ("the same inode rewritten", &|p| {
                std::fs::write(p, session(150)).unwrap();
            }),
            ("a rename", &|p| {
                let other = p.with_extension("moved");
                std::fs::rename(p, &other).unwrap();
                std::fs::rename(&other, p).unwrap();
            }),
        ];
        for (what, change) in changes {
            std::thread::sleep(std::time::Duration::from_millis(150));
            std::fs::remove_dir_all(&dir).unwrap();
            assert_eq!(cached(&path, &dir), cold(&path), "{what}: first open");
            tamper(&dir);
            assert!(
                cached(&path, &dir).contains("omega"),
                "{what}: the record is used"
            );
            change(&path);
            assert_eq!(cached(&path, &dir), cold(&path), "{what}");
            assert!(!cached(&path, &dir).contains("omega"), "{what}");
        }

        // A damaged or deleted record only costs a pass over the file.
        let p = record(&dir).unwrap();
        let b = std::fs::read(&p).unwrap();
        std::fs::write(&p, &b[..b.len() - 3]).unwrap();
        assert_eq!(cached(&path, &dir), cold(&path));
        std::fs::remove_dir_all(&dir).unwrap();
        assert_eq!(cached(&path, &dir), cold(&path));
    }

    /// A file whose pass found something to report (here an invalid line) is not recorded:
    /// its warnings come from reading it.
    #[test]
    fn a_file_with_problems_is_not_recorded() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path().join("cache");
        let path = tmp.path().join("s.jsonl");
        std::fs::write(&path, session(20) + "{not json\n").unwrap();
        let s = Session::open_cached_from(&path, &dir, 0).unwrap();
        s.record_index();
        assert!(!s.problems.is_empty());
        assert!(record(&dir).is_none());
        // Small files are not recorded either.
        let small = tmp.path().join("small.jsonl");
        std::fs::write(&small, session(20)).unwrap();
        Session::open_cached_from(&small, &dir, 1 << 20)
            .unwrap()
            .record_index();
        assert!(record(&dir).is_none());
        // Nor is one nobody asks to record.
        let s = Session::open_cached_from(&small, &dir, 0).unwrap();
        assert!(record(&dir).is_none());
        s.record_index();
        assert!(record(&dir).is_some());
    }

    #[test]
    fn records_decode_to_what_was_encoded_and_nothing_partial() {
        let tmp = tempfile::tempdir().unwrap();
        let path = tmp.path().join("s.jsonl");
        std::fs::write(&path, session(60)).unwrap();
        let s = Session::open(&path).unwrap();
        let stamp = stamp::stamp_of(s.file(), &s.file().metadata().unwrap(), s.len).unwrap();
        let header = s.header.clone().unwrap();
        let parts = Parts {
            header: &header,
            entries: &s.entries,
            labels: &s.labels,
            names: &s.names,
            lines: 61,
            ends_with_newline: true,
        };
        let bytes = encode(stamp, &parts).unwrap();
        let (m, recs, blob) = split(&bytes).unwrap();
        let back = decode(m, recs, blob).unwrap();
        // The parent links are made again on every open.
        let unlinked: Vec<Rec> = s
            .entries
            .iter()
            .map(|r| Rec {
                parent: crate::store::NONE,
                ..r.clone()
            })
            .collect();
        assert_eq!(back.entries, unlinked);
        assert!(back.entries.iter().any(|r| r.kind == Kind::Other));
        assert!(back.entries.iter().any(|r| r.id.as_str().len() > 30));
        assert_eq!(
            (back.labels, back.names),
            (s.labels.clone(), s.names.clone())
        );
        assert_eq!(back.header, header);
        for cut in [1, REC, bytes.len() / 2, bytes.len() - 1] {
            let short = &bytes[..bytes.len() - cut];
            assert!(
                split(short).and_then(|(m, r, b)| decode(m, r, b)).is_none(),
                "{cut}"
            );
        }
    }
}
