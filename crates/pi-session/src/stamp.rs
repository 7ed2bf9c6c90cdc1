//! How a cache tells whether a session file is still the one it described: a [`Stamp`] of
//! the file (device, inode, size, times, fingerprints of the bytes described) recorded
//! with each cache record, checked with [`fresh`] on every use (the rules are in
//! [`crate::summary`]'s documentation), and cache records written atomically.

use std::fs::File;
use std::io;
use std::os::unix::fs::{FileExt, MetadataExt};
use std::path::Path;

use serde::{Deserialize, Serialize};

const EDGE: u64 = 4096;
const SAMPLES: u64 = 16;
/// A cache record written this soon after the file's last change cannot vouch that an
/// equal size and times mean equal bytes (a change within the same tick of the file
/// system's clock keeps the times): 100 ms where times have sub-second parts, 2 s where
/// they are whole seconds (or FAT's even seconds).
pub(crate) const RACY: std::time::Duration = std::time::Duration::from_millis(100);
const RACY_COARSE: std::time::Duration = std::time::Duration::from_secs(2);

/// What a cache records about the file it describes (also used by the usage-facts cache).
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub(crate) struct Stamp {
    pub(crate) dev: u64,
    pub(crate) ino: u64,
    len: u64,
    mtime: (i64, i64),
    ctime: (i64, i64),
    /// Recorded within [`RACY`] of the file's last change.
    pub(crate) racy: bool,
    /// Bytes summarized: complete lines only.
    pub(crate) covered: u64,
    /// Fingerprints of `[0, covered)`: its edges, and its edges plus samples.
    edges: u64,
    sampled: u64,
}

/// A fingerprint of `file[..len]`: its first and last 4 KiB, and with `samples` 16 blocks
/// of 4 KiB spread between them.
fn fingerprint(file: &File, len: u64, samples: bool) -> io::Result<u64> {
    let mut h = 0xcbf2_9ce4_8422_2325u64 ^ len;
    let mut buf = vec![0u8; EDGE as usize];
    let mut block = |at: u64, h: &mut u64| -> io::Result<()> {
        let n = (len - at).min(EDGE) as usize;
        file.read_exact_at(&mut buf[..n], at)?;
        *h = fnv(*h, &buf[..n]);
        Ok(())
    };
    block(0, &mut h)?;
    if samples && len > 2 * EDGE {
        let span = len - 2 * EDGE;
        for k in 1..=SAMPLES {
            block(EDGE + span * k / (SAMPLES + 1), &mut h)?;
        }
    }
    if len > EDGE {
        block(len.saturating_sub(EDGE).max(EDGE), &mut h)?;
    }
    Ok(h)
}

/// How a file relates to the stamp a cache recorded for it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Fresh {
    /// The file is as recorded.
    Same,
    /// The file grew; its recorded bytes are unchanged.
    Grown,
}

/// Whether a record stamped `s` still describes the file (see the module docs): `None`
/// means it must be rebuilt from the whole file.
pub(crate) fn fresh(file: &File, meta: &std::fs::Metadata, s: &Stamp) -> Option<Fresh> {
    let len = meta.len();
    if s.dev != meta.dev() || s.ino != meta.ino() || s.covered > len || s.covered > s.len {
        return None;
    }
    let same_stat = len == s.len
        && s.mtime == (meta.mtime(), meta.mtime_nsec())
        && s.ctime == (meta.ctime(), meta.ctime_nsec());
    if same_stat && !s.racy {
        return (fingerprint(file, s.covered, false).ok()? == s.edges).then_some(Fresh::Same);
    }
    if len > s.len && fingerprint(file, s.covered, true).ok()? == s.sampled {
        return Some(Fresh::Grown);
    }
    None
}

/// The stamp of `file[..covered]` as it is now.
pub(crate) fn stamp_of(file: &File, meta: &std::fs::Metadata, covered: u64) -> io::Result<Stamp> {
    let changed = std::time::UNIX_EPOCH
        + std::time::Duration::new(
            meta.ctime().max(meta.mtime()).max(0) as u64,
            meta.ctime_nsec()
                .max(meta.mtime_nsec())
                .clamp(0, 999_999_999) as u32,
        );
    let window = if meta.mtime_nsec() == 0 && meta.ctime_nsec() == 0 {
        RACY_COARSE
    } else {
        RACY
    };
    let racy = std::time::SystemTime::now()
        .duration_since(changed)
        .map_or(true, |d| d < window);
    Ok(Stamp {
        dev: meta.dev(),
        ino: meta.ino(),
        len: meta.len(),
        mtime: (meta.mtime(), meta.mtime_nsec()),
        ctime: (meta.ctime(), meta.ctime_nsec()),
        racy,
        covered,
        edges: fingerprint(file, covered, false)?,
        sampled: fingerprint(file, covered, true)?,
    })
}

/// Replaces the cache file at `path` with `bytes`, atomically (best effort: a cache that
/// cannot be written is only slower next time).
pub(crate) fn write_record(path: &Path, bytes: &[u8]) {
    let Some(dir) = path.parent() else { return };
    if pi_base::fs::create_dir_all(dir).is_ok() {
        let _ = pi_base::fs::write_atomic(path, bytes);
    }
}

/// FNV-1a over 8-byte words (then the remaining bytes one by one).
fn fnv(h: u64, b: &[u8]) -> u64 {
    let mut words = b.chunks_exact(8);
    let mut h = words.by_ref().fold(h, |h, w| {
        let mut x = [0u8; 8];
        x.copy_from_slice(w);
        (h ^ u64::from_le_bytes(x)).wrapping_mul(0x0100_0000_01b3)
    });
    for &c in words.remainder() {
        h = (h ^ u64::from(c)).wrapping_mul(0x0100_0000_01b3);
    }
    h
}
