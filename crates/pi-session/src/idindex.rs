//! Where the ids of a session file are: every `"id":"xxxxxxxx"` (8 lowercase hex digits, the
//! form new ids take) with the offset of its value, found by a raw byte scan — no JSON
//! parsing. Writers use it to keep new ids unique and to find the lines of the entries they
//! refer to.
//!
//! Session files only grow, so the index is kept in a cache file
//! (`<agent dir>/cache/session-ids/`) that is valid for the same file (device and inode) while
//! the bytes it covers are unchanged (checked by a fingerprint of their first and last 4 KiB).
//! Then only the bytes appended since are scanned, ids are looked up by binary search in the
//! cache file, and an append adds its ids at the cache's end: an append costs about the same
//! at any file size. The cache is only a shortcut: deleting it, or a stale one being
//! rejected, changes nothing but speed. Its validation cannot see an edit in the middle of
//! a file that keeps its size and inode, so what it finds is checked against the file and
//! what it misses is looked up again in an index built from the file
//! ([`IdIndex::rebuild`]) before a writer reports it missing. It is read and written under
//! the session file's writer lock.
//!
//! Cache layout: a 56-byte header (magic, device, inode, bytes covered, fingerprint, number
//! of sorted records, reserved), the sorted records, then unsorted records appended later;
//! a record is a u32 id and a u64 offset, little-endian.

use std::fs::{File, OpenOptions};
use std::io;
use std::os::unix::fs::{FileExt, MetadataExt};
use std::path::{Path, PathBuf};

use pi_base::json;

const MAGIC: &[u8; 8] = b"piids02\n";
const HEADER: u64 = 56;
const RECORD: u64 = 12;
const EDGE: u64 = 4096;
/// Unsorted records beyond which the cache is rewritten sorted.
const MAX_UNSORTED: usize = 1 << 16;

type Pair = (u32, u64);

/// `xxxxxxxx` (8 lowercase hex digits) as a number.
pub(crate) fn short_key(s: &str) -> Option<u32> {
    let b = s.as_bytes();
    if b.len() != 8
        || !b
            .iter()
            .all(|c| c.is_ascii_digit() || (b'a'..=b'f').contains(c))
    {
        return None;
    }
    u32::from_str_radix(s, 16).ok()
}

fn fnv(h: u64, b: &[u8]) -> u64 {
    b.iter()
        .fold(h, |h, &c| (h ^ u64::from(c)).wrapping_mul(0x0100_0000_01b3))
}

/// A fingerprint of the bytes `[0, len)`: their first and last 4 KiB.
fn fingerprint(file: &File, len: u64) -> io::Result<u64> {
    let mut h = 0xcbf2_9ce4_8422_2325u64 ^ len;
    let head = len.min(EDGE);
    let mut buf = vec![0u8; head as usize];
    file.read_exact_at(&mut buf, 0)?;
    h = fnv(h, &buf);
    let tail_start = len.saturating_sub(EDGE).max(head);
    buf.resize((len - tail_start) as usize, 0);
    file.read_exact_at(&mut buf, tail_start)?;
    Ok(fnv(h, &buf))
}

/// Calls `f(value, offset)` for every `"id"` key with a string value in `file[from..to]`
/// (`value` with its quotes, `offset` where it starts): a raw byte search, no JSON parsing.
pub(crate) fn for_each_id_value(
    file: &File,
    from: u64,
    to: u64,
    mut f: impl FnMut(&[u8], u64),
) -> io::Result<()> {
    const BLOCK: u64 = 8 << 20;
    const OVERLAP: u64 = 1024;
    let finder = memchr::memmem::Finder::new(b"\"id\"");
    let mut buf = Vec::new();
    let mut pos = from;
    while pos < to {
        let end = (pos + BLOCK).min(to);
        let read_end = (end + OVERLAP).min(to);
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
                f(&buf[j..e], pos + j as u64);
            }
        }
        pos = end;
    }
    Ok(())
}

/// Adds the `"id"` keys with short string values in `file[from..to]` to `out`.
fn scan(file: &File, from: u64, to: u64, out: &mut Vec<Pair>) -> io::Result<()> {
    for_each_id_value(file, from, to, |v, off| {
        if let Some(k) = std::str::from_utf8(&v[1..v.len() - 1])
            .ok()
            .and_then(short_key)
        {
            out.push((k, off));
        }
    })
}

fn encode(pairs: &[Pair], out: &mut Vec<u8>) {
    for &(k, off) in pairs {
        out.extend_from_slice(&k.to_le_bytes());
        out.extend_from_slice(&off.to_le_bytes());
    }
}

fn decode(b: &[u8]) -> Pair {
    let mut k = [0u8; 4];
    k.copy_from_slice(&b[..4]);
    let mut o = [0u8; 8];
    o.copy_from_slice(&b[4..12]);
    (u32::from_le_bytes(k), u64::from_le_bytes(o))
}

/// The sorted records: in memory, or in the cache file (searched with `pread`).
enum Sorted {
    Mem(Vec<Pair>),
    File { file: File, count: u64 },
}

impl Sorted {
    fn len(&self) -> u64 {
        match self {
            Sorted::Mem(v) => v.len() as u64,
            Sorted::File { count, .. } => *count,
        }
    }

    fn get(&self, i: u64) -> io::Result<Pair> {
        match self {
            Sorted::Mem(v) => Ok(v[i as usize]),
            Sorted::File { file, .. } => {
                let mut b = [0u8; RECORD as usize];
                file.read_exact_at(&mut b, HEADER + i * RECORD)?;
                Ok(decode(&b))
            }
        }
    }

    /// Index of the first record with id ≥ `k`.
    fn lower_bound(&self, k: u64) -> io::Result<u64> {
        let (mut lo, mut hi) = (0u64, self.len());
        while lo < hi {
            let mid = lo + (hi - lo) / 2;
            if u64::from(self.get(mid)?.0) < k {
                lo = mid + 1;
            } else {
                hi = mid;
            }
        }
        Ok(lo)
    }

    /// Records with ids in `[lo, hi)`.
    fn range(&self, lo: u64, hi: u64) -> io::Result<Vec<Pair>> {
        let mut i = self.lower_bound(lo)?;
        let mut out = Vec::new();
        while i < self.len() {
            let p = self.get(i)?;
            if u64::from(p.0) >= hi {
                break;
            }
            out.push(p);
            i += 1;
        }
        Ok(out)
    }

    fn all(&self) -> io::Result<Vec<Pair>> {
        match self {
            Sorted::Mem(v) => Ok(v.clone()),
            Sorted::File { file, count } => {
                let mut b = vec![0u8; (count * RECORD) as usize];
                file.read_exact_at(&mut b, HEADER)?;
                Ok(b.chunks_exact(RECORD as usize).map(decode).collect())
            }
        }
    }
}

pub(crate) struct IdIndex {
    sorted: Sorted,
    /// Records not in the sorted part: the cache's unsorted ones, then new ones.
    extra: Vec<Pair>,
    /// How many of `extra` are already in the cache file.
    persisted: usize,
    covered: u64,
    cache: Option<PathBuf>,
    /// Loaded from the cache (rather than built from the whole file in this process).
    from_cache: bool,
}

fn cache_path(agent_dir: &Path, session: &Path) -> PathBuf {
    let canonical = std::fs::canonicalize(session).unwrap_or_else(|_| session.to_owned());
    let h = fnv(
        0xcbf2_9ce4_8422_2325,
        canonical.to_string_lossy().as_bytes(),
    );
    agent_dir
        .join("cache")
        .join("session-ids")
        .join(format!("{h:016x}.bin"))
}

impl IdIndex {
    /// The index of `file[..len]`, from the cache where it is valid (`cache` is the agent
    /// directory, or `None` to scan the whole file).
    pub(crate) fn load(
        file: &File,
        session: &Path,
        len: u64,
        cache: Option<&Path>,
    ) -> io::Result<IdIndex> {
        let path = cache.map(|dir| cache_path(dir, session));
        let mut idx = match path.as_deref().and_then(|p| open_cache(p, file, len)) {
            Some(idx) => idx,
            None => IdIndex {
                sorted: Sorted::Mem(Vec::new()),
                extra: Vec::new(),
                persisted: 0,
                covered: 0,
                cache: None,
                from_cache: false,
            },
        };
        idx.cache = path;
        if idx.covered == 0 {
            let mut all = Vec::new();
            scan(file, 0, len, &mut all)?;
            all.sort_unstable();
            all.dedup();
            idx.sorted = Sorted::Mem(all);
        } else {
            // Only what the cache does not cover, from a little before (a token cut in two
            // at the end of the covered bytes); repeats are harmless.
            scan(file, idx.covered.saturating_sub(64), len, &mut idx.extra)?;
        }
        idx.covered = len;
        Ok(idx)
    }

    /// The index of `file[..len]` built from the file alone; it replaces the cache at the
    /// next save.
    pub(crate) fn rebuild(
        file: &File,
        session: &Path,
        len: u64,
        cache: Option<&Path>,
    ) -> io::Result<IdIndex> {
        let mut all = Vec::new();
        scan(file, 0, len, &mut all)?;
        all.sort_unstable();
        all.dedup();
        Ok(IdIndex {
            sorted: Sorted::Mem(all),
            extra: Vec::new(),
            persisted: 0,
            covered: len,
            cache: cache.map(|dir| cache_path(dir, session)),
            from_cache: false,
        })
    }

    /// Whether the index came from the cache (and may miss ids edited into the file).
    pub(crate) fn loaded_from_cache(&self) -> bool {
        self.from_cache
    }

    pub(crate) fn contains(&self, k: u32) -> io::Result<bool> {
        if self.extra.iter().any(|p| p.0 == k) {
            return Ok(true);
        }
        let i = self.sorted.lower_bound(u64::from(k))?;
        Ok(i < self.sorted.len() && self.sorted.get(i)?.0 == k)
    }

    /// Offsets where the id occurs as an `"id"` value.
    pub(crate) fn offsets(&self, k: u32) -> io::Result<Vec<u64>> {
        let mut v: Vec<u64> = self
            .sorted
            .range(u64::from(k), u64::from(k) + 1)?
            .into_iter()
            .map(|p| p.1)
            .collect();
        v.extend(self.extra.iter().filter(|p| p.0 == k).map(|p| p.1));
        v.sort_unstable();
        v.dedup();
        Ok(v)
    }

    /// Ids (as strings) that start with `prefix` (hex digits only).
    pub(crate) fn with_prefix(&self, prefix: &str) -> io::Result<Vec<String>> {
        if prefix.is_empty()
            || prefix.len() > 8
            || !prefix
                .bytes()
                .all(|c| c.is_ascii_digit() || (b'a'..=b'f').contains(&c))
        {
            return Ok(Vec::new());
        }
        let shift = 4 * (8 - prefix.len() as u32);
        let Ok(p) = u32::from_str_radix(prefix, 16) else {
            return Ok(Vec::new());
        };
        let lo = u64::from(p) << shift;
        let hi = lo + (1u64 << shift);
        let mut keys: Vec<u32> = self
            .sorted
            .range(lo, hi)?
            .into_iter()
            .map(|p| p.0)
            .collect();
        keys.extend(
            self.extra
                .iter()
                .filter(|(k, _)| (lo..hi).contains(&u64::from(*k)))
                .map(|p| p.0),
        );
        keys.sort_unstable();
        keys.dedup();
        Ok(keys.into_iter().map(|k| format!("{k:08x}")).collect())
    }

    /// Adds the ids in `file[from..to]` (bytes just appended) and updates the cache (best
    /// effort: a failure only costs speed later).
    pub(crate) fn extend_and_save(&mut self, file: &File, from: u64, to: u64) -> io::Result<()> {
        scan(file, from, to, &mut self.extra)?;
        self.covered = to;
        if let Some(path) = self.cache.clone() {
            let _ = self.save(file, &path);
        }
        Ok(())
    }

    fn save(&mut self, file: &File, path: &Path) -> io::Result<()> {
        let meta = file.metadata()?;
        let header = |sorted: u64| -> io::Result<Vec<u8>> {
            let mut h = Vec::with_capacity(HEADER as usize);
            h.extend_from_slice(MAGIC);
            for v in [
                meta.dev(),
                meta.ino(),
                self.covered,
                fingerprint(file, self.covered)?,
                sorted,
                0,
            ] {
                h.extend_from_slice(&v.to_le_bytes());
            }
            Ok(h)
        };
        let in_file = matches!(self.sorted, Sorted::File { .. });
        if in_file && self.extra.len() <= MAX_UNSORTED {
            // Add the new records at the end, then point the header at the new length.
            let c = OpenOptions::new().read(true).write(true).open(path)?;
            let mut out = Vec::new();
            encode(&self.extra[self.persisted..], &mut out);
            let end = c.metadata()?.len();
            c.write_all_at(&out, end)?;
            c.write_all_at(&header(self.sorted.len())?, 0)?;
            self.persisted = self.extra.len();
            return Ok(());
        }
        // Rewrite the cache sorted.
        let mut all = self.sorted.all()?;
        all.extend_from_slice(&self.extra);
        all.sort_unstable();
        all.dedup();
        let mut out = header(all.len() as u64)?;
        encode(&all, &mut out);
        let dir = path.parent().unwrap_or(Path::new("."));
        pi_base::fs::create_dir_all(dir)?;
        pi_base::fs::write_atomic(path, &out)?;
        let count = all.len() as u64;
        self.sorted = match File::open(path) {
            Ok(file) => Sorted::File { file, count },
            Err(_) => Sorted::Mem(all),
        };
        self.extra.clear();
        self.persisted = 0;
        Ok(())
    }
}

/// The cached index, if it is valid for `file[..len]`.
fn open_cache(path: &Path, file: &File, len: u64) -> Option<IdIndex> {
    let c = File::open(path).ok()?;
    let size = c.metadata().ok()?.len();
    let mut h = [0u8; HEADER as usize];
    c.read_exact_at(&mut h, 0).ok()?;
    if &h[..8] != MAGIC {
        return None;
    }
    let word = |i: usize| {
        let mut a = [0u8; 8];
        a.copy_from_slice(&h[8 + i * 8..16 + i * 8]);
        u64::from_le_bytes(a)
    };
    let (dev, ino, covered, print, count) = (word(0), word(1), word(2), word(3), word(4));
    let meta = file.metadata().ok()?;
    let sorted_end = HEADER.checked_add(count.checked_mul(RECORD)?)?;
    if dev != meta.dev()
        || ino != meta.ino()
        || covered == 0
        || covered > len
        || sorted_end > size
        || (size - sorted_end) % RECORD != 0
        || fingerprint(file, covered).ok()? != print
    {
        return None;
    }
    let mut tail = vec![0u8; (size - sorted_end) as usize];
    c.read_exact_at(&mut tail, sorted_end).ok()?;
    let extra: Vec<Pair> = tail.chunks_exact(RECORD as usize).map(decode).collect();
    Some(IdIndex {
        persisted: extra.len(),
        extra,
        sorted: Sorted::File { file: c, count },
        covered,
        cache: None,
        from_cache: true,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_and_prefixes() {
        assert_eq!(short_key("0000000a"), Some(10));
        assert_eq!(short_key("ABCDEF12"), None);
        assert_eq!(short_key("abc"), None);
        let idx = IdIndex {
            sorted: Sorted::Mem(vec![(0x1a2b_3c4d, 5), (0x1a2f_0000, 9), (0x2000_0000, 1)]),
            extra: vec![(0x1a20_0001, 11)],
            persisted: 0,
            covered: 12,
            cache: None,
            from_cache: false,
        };
        assert_eq!(
            idx.with_prefix("1a2").unwrap(),
            ["1a200001", "1a2b3c4d", "1a2f0000"]
        );
        assert_eq!(idx.with_prefix("1a2b3c4d").unwrap(), ["1a2b3c4d"]);
        assert!(idx.with_prefix("xyz").unwrap().is_empty());
        assert!(idx.contains(0x2000_0000).unwrap());
        assert!(idx.contains(0x1a20_0001).unwrap());
        assert!(!idx.contains(0x1a20_0002).unwrap());
        assert_eq!(idx.offsets(0x1a2f_0000).unwrap(), [9]);
    }

    #[test]
    fn the_cache_is_used_extended_and_rejected_when_stale() {
        let dir = tempfile_dir();
        let session = dir.join("s.jsonl");
        std::fs::write(
            &session,
            "{\"type\":\"session\",\"id\":\"x\"}\n{\"type\":\"m\",\"id\":\"0000000a\"}\n",
        )
        .unwrap();
        let file = File::open(&session).unwrap();
        let len = file.metadata().unwrap().len();
        let mut idx = IdIndex::load(&file, &session, len, Some(&dir)).unwrap();
        assert!(idx.contains(10).unwrap());
        idx.extend_and_save(&file, len, len).unwrap();
        // Append more (as a writer would) and load through the cache.
        std::fs::OpenOptions::new()
            .append(true)
            .open(&session)
            .and_then(|mut f| {
                std::io::Write::write_all(&mut f, b"{\"type\":\"m\",\"id\":\"0000000b\"}\n")
            })
            .unwrap();
        let len2 = file.metadata().unwrap().len();
        let mut idx = IdIndex::load(&file, &session, len2, Some(&dir)).unwrap();
        assert!(matches!(idx.sorted, Sorted::File { .. }));
        assert!(idx.contains(10).unwrap() && idx.contains(11).unwrap());
        idx.extend_and_save(&file, len2, len2).unwrap();
        let idx = IdIndex::load(&file, &session, len2, Some(&dir)).unwrap();
        assert_eq!(idx.offsets(11).unwrap().len(), 1);
        // Rewritten in place with other content: the cache no longer matches.
        std::fs::write(&session, "{\"type\":\"session\",\"id\":\"y\"}\n{\"type\":\"m\",\"id\":\"0000000c\"}\n{\"type\":\"m\",\"id\":\"0000000d\"}\n").unwrap();
        let file = File::open(&session).unwrap();
        let len3 = file.metadata().unwrap().len();
        let idx = IdIndex::load(&file, &session, len3, Some(&dir)).unwrap();
        assert!(!idx.contains(10).unwrap());
        assert!(idx.contains(12).unwrap() && idx.contains(13).unwrap());
        let _ = std::fs::remove_dir_all(&dir);
    }

    fn tempfile_dir() -> PathBuf {
        let d = std::env::temp_dir().join(format!(
            "pi-idindex-{}-{:?}",
            std::process::id(),
            std::thread::current().id()
        ));
        std::fs::create_dir_all(&d).unwrap();
        d
    }
}
