//! New session files made from others: a copy of the path to an entry (`pi session fork`,
//! RPC `fork` and `clone`), and an empty session that names its parent (`pi session new
//! --parent-session`, RPC `new_session`).

use std::fs::File;
use std::io::Write;
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};

use anyhow::Context as _;

use super::id::{Id, IdSet};
use super::{Kind, Session, append, entry};
use crate::{clock, json, rng};

/// A session header line: version 3, `id`, now, `cwd`, and `parentSession` when given.
pub fn header(id: &str, now_ms: i64, cwd: &str, parent: Option<&str>) -> Vec<u8> {
    let mut h = b"{\"type\":\"session\",\"version\":3,\"id\":".to_vec();
    json::write_str(&mut h, id);
    h.extend_from_slice(b",\"timestamp\":");
    json::write_str(&mut h, &clock::format_iso(now_ms));
    h.extend_from_slice(b",\"cwd\":");
    json::write_str(&mut h, cwd);
    if let Some(p) = parent {
        h.extend_from_slice(b",\"parentSession\":");
        json::write_str(&mut h, p);
    }
    h.push(b'}');
    h
}

/// How many files `dir` holds (a salt for seeded ids).
fn files_in(dir: &Path) -> u64 {
    std::fs::read_dir(dir).map_or(0, |d| d.count() as u64)
}

/// Writes `lines` as a new private (0600) session file in `dir`, named
/// `<stamp>_<id>.jsonl`; returns its path.
fn write_new(dir: &Path, id: &str, now: i64, lines: &[&[u8]]) -> anyhow::Result<PathBuf> {
    let path = dir.join(format!("{}_{id}.jsonl", clock::file_stamp(now)));
    let _private = crate::private::PrivateUmask::set(); // 0600 (new folders 0700)
    append::write_new_file(&path, false, |w| {
        for l in lines {
            w.write_all(l)?;
            w.write_all(b"\n")?;
        }
        Ok(())
    })
    .with_context(|| format!("cannot create {}", path.display()))?;
    Ok(path)
}

/// Creates an empty session of `cwd` in `dir` (the header only, naming `parent`); returns
/// its path and header line.
pub fn create_empty(
    dir: &Path,
    cwd: &str,
    parent: Option<&str>,
) -> anyhow::Result<(PathBuf, Vec<u8>)> {
    let now = clock::now_ms();
    let id = rng::Rng::new(|| now as u64 ^ files_in(dir).rotate_left(17)).uuid_v7(now);
    let h = header(&id, now, cwd, parent);
    let path = write_new(dir, &id, now, &[&h])?;
    Ok((path, h))
}

/// Copies the path from the root to `end` (`None`: nothing) of `s` (the file `src`) into a
/// new session of `cwd` in `dir` whose header names `src` as its parent. Labels are left
/// out of the path and recreated after it for the entries copied. Returns the new path.
pub fn write_fork(
    s: &Session,
    src: &Path,
    end: Option<u32>,
    cwd: &str,
    dir: &Path,
) -> anyhow::Result<PathBuf> {
    let path: Vec<u32> = end
        .map(|e| s.path_to(e))
        .unwrap_or_default()
        .into_iter()
        .filter(|&i| s.entries[i as usize].kind != Kind::Label)
        .collect();
    // Which ids the copy holds, by entry number. An entry on a path is the last one with its
    // id (parents and the end are found by id, which names the last entry with it; the leaf
    // is the file's last entry), so looking an id up finds the entry that is on the path.
    let mut on_path = vec![false; s.entries.len()];
    for &i in &path {
        on_path[i as usize] = true;
    }
    let mut new_ids = IdSet::default();
    let copied = |id: &Id, new_ids: &IdSet| {
        new_ids.contains(id) || s.get_id(id).is_some_and(|k| on_path[k as usize])
    };
    let now = clock::now_ms();
    // The files already in `dir` keep seeded ids (PI_SEED) of several forks apart.
    let mut rng =
        rng::Rng::new(|| now as u64 ^ s.entries.len() as u64 ^ files_in(dir).rotate_left(17));
    let mut prev = path.last().map(|&i| s.entries[i as usize].id.to_string());
    let mut label_lines = Vec::new();
    for (target, label, ts) in s.resolved_labels() {
        if !copied(&target, &new_ids) {
            continue;
        }
        let mut id = rng.short_id();
        for _ in 0..100 {
            if !copied(&Id::new(&id), &new_ids) {
                break;
            }
            id = rng.short_id();
        }
        new_ids.insert(Id::new(&id));
        label_lines.push(entry::entry_line(
            "label",
            &id,
            prev.as_deref(),
            &ts,
            &[
                ("targetId", &entry::jstr(target.as_str())),
                ("label", &entry::jstr(&label)),
            ],
        ));
        prev = Some(id);
    }
    let sid = rng.uuid_v7(now);
    let h = header(&sid, now, cwd, Some(&src.to_string_lossy()));
    let out_path = dir.join(format!("{}_{sid}.jsonl", clock::file_stamp(now)));
    let _private = crate::private::PrivateUmask::set(); // 0600 (new folders 0700)
    append::write_new_file(&out_path, false, |w| {
        w.write_all(&h)?;
        w.write_all(b"\n")?;
        if s.is_current() {
            copy_runs(s, &path, w)?;
        } else {
            s.copy_lines(&path, w)?;
        }
        for l in &label_lines {
            w.write_all(l)?;
            w.write_all(b"\n")?;
        }
        Ok(())
    })
    .with_context(|| format!("cannot write {}", out_path.display()))?;
    Ok(out_path)
}

/// Writes the lines of the entries `order` (ascending) of a v3 file, each with a newline:
/// runs of adjacent lines are copied as byte ranges, the large ones by the kernel
/// (`copy_file_range`), whose writing to disk is started as each part is copied so that the
/// final `fsync` has little left to wait for.
fn copy_runs(
    s: &Session,
    order: &[u32],
    out: &mut std::io::BufWriter<File>,
) -> std::io::Result<()> {
    const SMALL: u64 = 64 << 10;
    let mut buf = Vec::new();
    for (start, end) in s.byte_runs(order) {
        if end - start < SMALL {
            buf.resize((end - start) as usize, 0);
            s.file().read_exact_at(&mut buf, start)?;
            out.write_all(&buf)?;
        } else {
            out.flush()?;
            kernel_copy(s.file(), start, end, out.get_mut())?;
        }
        out.write_all(b"\n")?;
    }
    Ok(())
}

/// Copies `src[start..end]` to the end of `dst` (at its file position), through memory
/// (systems without Linux's `copy_file_range` and `sync_file_range`).
#[cfg(not(target_os = "linux"))]
fn kernel_copy(src: &File, start: u64, end: u64, dst: &mut File) -> std::io::Result<()> {
    copy_through(src, start, end - start, dst)
}

/// Copies `src[start..end]` to the end of `dst` (at its file position), in parts of
/// `PART` bytes whose write-back is started as soon as each is copied.
#[cfg(target_os = "linux")]
fn kernel_copy(src: &File, start: u64, end: u64, dst: &mut File) -> std::io::Result<()> {
    use std::io::{Error, ErrorKind, Seek};
    use std::os::fd::AsRawFd;
    const PART: u64 = 32 << 20;
    let mut at = dst.stream_position()?;
    let mut off = i64::try_from(start).map_err(Error::other)?;
    let mut left = end - start;
    while left > 0 {
        let want = left.min(PART) as usize;
        // SAFETY: both descriptors are open files owned by the callers; `off` outlives the
        // call and the output offset is the file's own (null).
        let n = unsafe {
            libc::copy_file_range(
                src.as_raw_fd(),
                &mut off,
                dst.as_raw_fd(),
                std::ptr::null_mut(),
                want,
                0,
            )
        };
        if n < 0 {
            let e = Error::last_os_error();
            match e.raw_os_error() {
                Some(libc::EINTR) => continue,
                // Not supported between these files: copied through memory instead.
                Some(libc::EXDEV | libc::ENOSYS | libc::EINVAL | libc::EOPNOTSUPP) => {
                    return copy_through(src, off as u64, left, dst);
                }
                _ => return Err(e),
            }
        }
        if n == 0 {
            return Err(Error::new(
                ErrorKind::UnexpectedEof,
                "the session file was cut short while it was copied",
            ));
        }
        // SAFETY: a plain system call on an open descriptor; a failure only means the
        // write-back starts later, at the `fsync`.
        unsafe {
            libc::sync_file_range(
                dst.as_raw_fd(),
                at as i64,
                n as i64,
                libc::SYNC_FILE_RANGE_WRITE,
            );
        }
        at += n as u64;
        left -= n as u64;
    }
    Ok(())
}

/// [`kernel_copy`] through a buffer.
fn copy_through(src: &File, start: u64, len: u64, dst: &mut File) -> std::io::Result<()> {
    let mut buf = vec![0u8; len.min(8 << 20) as usize];
    let (mut at, end) = (start, start + len);
    while at < end {
        let n = ((end - at) as usize).min(buf.len());
        src.read_exact_at(&mut buf[..n], at)?;
        dst.write_all(&buf[..n])?;
        at += n as u64;
    }
    Ok(())
}
