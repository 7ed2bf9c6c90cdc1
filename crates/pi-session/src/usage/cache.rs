//! The usage facts of each session file, kept under `<agent dir>/cache/usage-facts/` so a
//! report reads a few compact records instead of parsing every session again.
//!
//! A record is checked against its file exactly as a session summary is (see
//! [`crate::summary`]): same device and inode, and either the same size and times
//! with the first and last 4 KiB unchanged (the record is used as it is), or a larger file
//! whose recorded bytes still match their sampled fingerprint (only the appended lines are
//! parsed and added). Anything else parses the whole file again. The facts of a last line
//! without its newline are read every time and never recorded. A file with an append under
//! way or interrupted is read directly. Deleting the cache costs time, never correctness.
//!
//! A record is a short JSON part (the stamp, the file's session id and cwd, and its model,
//! origin and stop-reason names) followed by the entry ids and one fixed-size binary record per
//! fact, so reading one costs little more than copying it.

use std::fs::File;
use std::io;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use super::{Fact, FileUsage, Model, Origin, Tokens, Ts};
use crate::stamp::{self, Fresh, Stamp};

/// Version 2: facts of every entry with usage (version 1: assistant messages only).
const MAGIC: &[u8] = b"pi-usage-facts/2\n";
/// Bytes of one fact: timestamp (length and 31 bytes), ms, model, stop reason, entry id
/// (offset, length), origin, and six numbers.
const FACT: usize = 32 + 8 + 5 * 4 + 6 * 8;

#[derive(Serialize, Deserialize)]
struct Meta {
    stamp: Stamp,
    session: String,
    cwd: String,
    facts: usize,
    ids: usize,
    models: Vec<Model>,
    origins: Vec<Origin>,
    stop_reasons: Vec<String>,
}

/// The usage-facts cache: a directory of records, or none (every file parsed).
#[derive(Debug, Clone, Default)]
pub struct Cache {
    dir: Option<PathBuf>,
}

impl Cache {
    /// The cache under `agent_dir`.
    pub fn new(agent_dir: &Path) -> Cache {
        Cache {
            dir: Some(agent_dir.join("cache").join("usage-facts")),
        }
    }

    /// No cache: every file is parsed.
    pub fn none() -> Cache {
        Cache { dir: None }
    }

    /// The usage facts of `path`, as [`super::read_file`] gives them.
    pub fn read(&self, path: &Path) -> io::Result<FileUsage> {
        let pending = crate::pending::read_for(path);
        let Some(dir) = self
            .dir
            .as_ref()
            .filter(|_| matches!(pending, Ok(crate::pending::Found::None)))
        else {
            return super::read_file(path);
        };
        let file = File::open(path)?;
        let meta = file.metadata()?;
        let record = dir.join(format!("{:x}-{:x}.bin", meta.dev(), meta.ino()));
        let stored = read_reusing(&record, |b| decode(b?, path))
            .and_then(|(stamp, u)| Some((stamp::fresh(&file, &meta, &stamp)?, stamp, u)));
        let (mut usage, covered, save) = match stored {
            Some((Fresh::Same, stamp, u)) => (u, stamp.covered, false),
            Some((Fresh::Grown, stamp, u)) => (u, stamp.covered, true),
            None => {
                let (session, cwd) = super::identity(path);
                let u = FileUsage {
                    path: path.to_owned(),
                    session,
                    cwd,
                    ..FileUsage::default()
                };
                (u, 0, true)
            }
        };
        let (complete, recorded) = super::add_facts(&file, covered, meta.len(), &mut usage)?;
        if save && let Ok(stamp) = stamp::stamp_of(&file, &meta, complete) {
            stamp::write_record(&record, &encode(&stamp, &usage, recorded));
        }
        Ok(usage)
    }
}

thread_local! {
    /// The buffer records are read into, kept by each reading thread.
    static BUF: std::cell::RefCell<Vec<u8>> = const { std::cell::RefCell::new(Vec::new()) };
}

/// Calls `f` with the bytes of the record at `path` (`None` when it cannot be read), read
/// into the thread's buffer.
fn read_reusing<T>(path: &Path, f: impl FnOnce(Option<&[u8]>) -> Option<T>) -> Option<T> {
    BUF.with(|buf| {
        let Ok(mut buf) = buf.try_borrow_mut() else {
            return f(std::fs::read(path).ok().as_deref());
        };
        buf.clear();
        let ok = File::open(path).and_then(|mut file| io::Read::read_to_end(&mut file, &mut buf));
        f(ok.ok().map(|_| buf.as_slice()))
    })
}

fn encode(stamp: &Stamp, u: &FileUsage, facts: usize) -> Vec<u8> {
    let facts = &u.facts[..facts.min(u.facts.len())];
    let meta = Meta {
        stamp: stamp.clone(),
        session: u.session.clone(),
        cwd: u.cwd.clone(),
        facts: facts.len(),
        ids: u.ids.len(),
        models: u.models.clone(),
        origins: u.origins.clone(),
        stop_reasons: u.stop_reasons.clone(),
    };
    let json = serde_json::to_vec(&meta).unwrap_or_default();
    let mut out =
        Vec::with_capacity(MAGIC.len() + 4 + json.len() + u.ids.len() + facts.len() * FACT);
    out.extend_from_slice(MAGIC);
    out.extend_from_slice(&(json.len() as u32).to_le_bytes());
    out.extend_from_slice(&json);
    out.extend_from_slice(u.ids.as_bytes());
    for f in facts {
        out.push(f.timestamp.len | if f.canonical { 0x80 } else { 0 });
        out.extend_from_slice(&f.timestamp.bytes);
        out.extend_from_slice(&f.ms.to_le_bytes());
        for n in [f.model, f.stop_reason, f.entry_id.0, f.entry_id.1, f.origin] {
            out.extend_from_slice(&n.to_le_bytes());
        }
        let t = &f.tokens;
        for x in [
            t.input,
            t.output,
            t.cache_read,
            t.cache_write,
            t.total,
            t.cost,
        ] {
            out.extend_from_slice(&x.to_le_bytes());
        }
    }
    out
}

/// A record's stamp and facts; `None` for anything that is not a whole record.
fn decode(b: &[u8], path: &Path) -> Option<(Stamp, FileUsage)> {
    let rest = b.strip_prefix(MAGIC)?;
    let (len, rest) = rest.split_first_chunk::<4>()?;
    let (json, rest) = rest.split_at_checked(u32::from_le_bytes(*len) as usize)?;
    let meta: Meta = serde_json::from_slice(json).ok()?;
    let (ids, rest) = rest.split_at_checked(meta.ids)?;
    let ids = std::str::from_utf8(ids).ok()?.to_owned();
    if rest.len() != meta.facts.checked_mul(FACT)? {
        return None;
    }
    let u32_at = |r: &[u8], at: usize| {
        r.get(at..at + 4)
            .and_then(|s| s.try_into().ok())
            .map_or(0, u32::from_le_bytes)
    };
    let f64_at = |r: &[u8], at: usize| {
        r.get(at..at + 8)
            .and_then(|s| s.try_into().ok())
            .map_or(0.0, f64::from_le_bytes)
    };
    let mut facts = Vec::with_capacity(meta.facts);
    for r in rest.chunks_exact(FACT) {
        let mut ts = Ts {
            len: (r[0] & 0x7f).min(31),
            bytes: [0; 31],
        };
        ts.bytes.copy_from_slice(&r[1..32]);
        facts.push(Fact {
            timestamp: ts,
            ms: r
                .get(32..40)
                .and_then(|s| s.try_into().ok())
                .map_or(0, i64::from_le_bytes),
            model: u32_at(r, 40),
            stop_reason: u32_at(r, 44),
            entry_id: (u32_at(r, 48), u32_at(r, 52)),
            origin: u32_at(r, 56),
            canonical: r[0] & 0x80 != 0,
            tokens: Tokens {
                input: f64_at(r, 60),
                output: f64_at(r, 68),
                cache_read: f64_at(r, 76),
                cache_write: f64_at(r, 84),
                total: f64_at(r, 92),
                cost: f64_at(r, 100),
            },
        });
    }
    let usage = FileUsage {
        path: path.to_owned(),
        session: meta.session,
        cwd: meta.cwd,
        facts,
        models: meta.models,
        origins: meta.origins,
        stop_reasons: meta.stop_reasons,
        ids,
    };
    Some((meta.stamp, usage))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    fn assistant(id: &str, ts: &str, total: u32) -> String {
        format!(
            "{{\"type\":\"message\",\"id\":\"{id}\",\"parentId\":null,\"timestamp\":\"{ts}\",\"message\":{{\"role\":\"assistant\",\"provider\":\"p\",\"model\":\"m\",\"stopReason\":\"stop\",\"usage\":{{\"input\":{total},\"output\":0,\"cost\":{{\"total\":0.5}}}}}}}}\n"
        )
    }

    fn stamp_of_record(dir: &Path) -> Stamp {
        let e = dir.read_dir().unwrap().next().unwrap().unwrap();
        decode(&std::fs::read(e.path()).unwrap(), Path::new("x"))
            .unwrap()
            .0
    }

    #[test]
    fn records_are_used_extended_and_never_hold_a_torn_line() {
        let tmp = tempfile::tempdir().unwrap();
        let path = tmp.path().join("s.jsonl");
        let head = "{\"type\":\"session\",\"version\":3,\"id\":\"S\",\"timestamp\":\"2025-01-01T00:00:00.000Z\",\"cwd\":\"/w\"}\n";
        std::fs::write(
            &path,
            format!("{head}{}", assistant("e1", "2025-01-01T00:00:01.000Z", 3)),
        )
        .unwrap();
        let cache = Cache::new(tmp.path());
        let dir = tmp.path().join("cache").join("usage-facts");
        let first = cache.read(&path).unwrap();
        assert_eq!((first.session.as_str(), first.cwd.as_str()), ("S", "/w"));
        assert_eq!(first.facts.len(), 1);
        assert_eq!(first.entry_id(&first.facts[0]), Some("e1"));
        assert_eq!(first.stop_reason(&first.facts[0]), Some("stop"));
        let len = std::fs::metadata(&path).unwrap().len();
        assert_eq!(stamp_of_record(&dir).covered, len);

        // Appended: one complete line and a torn one. The record grows by the complete
        // line only; the torn line's fact is read but not recorded.
        let more = assistant("e2", "2025-01-01T00:00:02.000Z", 4);
        let torn = assistant("e3", "2025-01-01T00:00:03.000Z", 5);
        let mut f = std::fs::OpenOptions::new()
            .append(true)
            .open(&path)
            .unwrap();
        f.write_all(more.as_bytes()).unwrap();
        f.write_all(&torn.as_bytes()[..torn.len() - 1]).unwrap();
        let grown = cache.read(&path).unwrap();
        let ids: Vec<_> = grown.facts.iter().map(|x| grown.entry_id(x)).collect();
        assert_eq!(ids, [Some("e1"), Some("e2"), Some("e3")]);
        assert_eq!(stamp_of_record(&dir).covered, len + more.len() as u64);
        assert_eq!(grown.models.len(), 1, "one model, stored once");

        // The same answer from the record as from the file.
        std::thread::sleep(std::time::Duration::from_millis(150));
        let again = cache.read(&path).unwrap();
        let direct = super::super::read_file(&path).unwrap();
        for u in [&again, &direct] {
            let got: Vec<_> = u
                .facts
                .iter()
                .map(|x| {
                    (
                        x.timestamp.as_str().to_owned(),
                        x.tokens.total,
                        u.entry_id(x),
                    )
                })
                .collect();
            assert_eq!(
                got,
                [
                    ("2025-01-01T00:00:01.000Z".to_owned(), 3.0, Some("e1")),
                    ("2025-01-01T00:00:02.000Z".to_owned(), 4.0, Some("e2")),
                    ("2025-01-01T00:00:03.000Z".to_owned(), 5.0, Some("e3")),
                ]
            );
        }
    }

    #[test]
    fn damaged_records_are_not_records() {
        let stamp: Stamp = serde_json::from_value(serde_json::json!({
            "dev": 1, "ino": 2, "len": 3, "mtime": [0, 0], "ctime": [0, 0], "racy": false,
            "covered": 3, "edges": 0, "sampled": 0
        }))
        .unwrap();
        let mut u = FileUsage::default();
        u.facts.push(Fact {
            timestamp: Ts::new("2025-01-01T00:00:01Z").unwrap(),
            ms: 1,
            model: 0,
            origin: 0,
            stop_reason: super::super::NONE,
            entry_id: (super::super::NONE, 0),
            canonical: false,
            tokens: Tokens::default(),
        });
        u.origins.push(Origin {
            source: super::super::Source::Usage,
            kind: Some("cache_warm".into()),
        });
        u.facts[0].origin = 0;
        let bytes = encode(&stamp, &u, 1);
        let back = decode(&bytes, Path::new("x")).unwrap().1;
        assert_eq!(back.origin(&back.facts[0]), u.origins.first());
        for cut in [0, 5, MAGIC.len() + 2, bytes.len() - 1] {
            assert!(decode(&bytes[..cut], Path::new("x")).is_none(), "{cut}");
        }
        let mut longer = bytes.clone();
        longer.push(0);
        assert!(decode(&longer, Path::new("x")).is_none());
    }
}
