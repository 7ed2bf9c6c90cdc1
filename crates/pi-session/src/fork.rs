//! New session files made from others: a copy of the path to an entry (`pi session fork`,
//! RPC `fork` and `clone`), and an empty session that names its parent (`pi session new
//! --parent-session`, RPC `new_session`).

use std::fs::File;
use std::io::Write;
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};

use pi_base::fs::FileError;

use super::id::{Id, IdSet};
use super::{Kind, Session, entry};
use pi_base::{clock, ids as rng, json};

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
fn write_new(dir: &Path, id: &str, now: i64, lines: &[&[u8]]) -> Result<PathBuf, FileError> {
    let path = dir.join(format!("{}_{id}.jsonl", clock::file_stamp(now)));
    let _private = pi_base::fs::PrivateUmask::set(); // 0600 (new folders 0700)
    pi_base::fs::write_with(&path, false, |w| {
        for l in lines {
            w.write_all(l)?;
            w.write_all(b"\n")?;
        }
        Ok(())
    })
    .map_err(FileError::of("create", &path))?;
    Ok(path)
}

/// Creates an empty session of `cwd` in `dir` (the header only, naming `parent`); returns
/// its path and header line.
pub fn create_empty(
    dir: &Path,
    cwd: &str,
    parent: Option<&str>,
) -> Result<(PathBuf, Vec<u8>), FileError> {
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
) -> Result<PathBuf, FileError> {
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
    let _private = pi_base::fs::PrivateUmask::set(); // 0600 (new folders 0700)
    pi_base::fs::write_with(&out_path, false, |w| {
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
    .map_err(FileError::of("write", &out_path))?;
    Ok(out_path)
}

/// Source runs shorter than this are read and written in batches; longer ones are copied
/// by the kernel.
const SMALL: u64 = 64 << 10;
/// The most bytes in one piece of work (a batch of short runs, or a part of a long one).
const PART: u64 = 32 << 20;

/// A piece of the copy, written at its own output offset `at`.
#[derive(Debug, Clone, PartialEq)]
enum Piece {
    /// Short runs (indices into the runs), each followed by a newline.
    Lines {
        runs: std::ops::Range<usize>,
        at: u64,
    },
    /// The source bytes `[start, end)` of a long run, then a newline when `nl` (its last part).
    Bytes {
        start: u64,
        end: u64,
        at: u64,
        nl: bool,
    },
}

/// Splits the copy of `runs` (each followed by a newline) to the output from offset `at` into
/// pieces of at most about `part` bytes; returns them and the offset where the copy ends.
fn plan(runs: &[(u64, u64)], mut at: u64, small: u64, part: u64) -> (Vec<Piece>, u64) {
    let mut pieces = Vec::new();
    let mut i = 0;
    while i < runs.len() {
        let (start, end) = runs[i];
        if end - start >= small {
            let mut s = start;
            while s < end {
                let e = end.min(s.saturating_add(part));
                pieces.push(Piece::Bytes {
                    start: s,
                    end: e,
                    at,
                    nl: e == end,
                });
                at += e - s;
                s = e;
            }
            at += 1;
            i += 1;
        } else {
            let (first, from) = (i, at);
            while i < runs.len() && runs[i].1 - runs[i].0 < small && at - from < part {
                at += runs[i].1 - runs[i].0 + 1;
                i += 1;
            }
            pieces.push(Piece::Lines {
                runs: first..i,
                at: from,
            });
        }
    }
    (pieces, at)
}

/// Writes the lines of the entries `order` (ascending) of a v3 file, each with a newline:
/// runs of adjacent lines are copied as byte ranges, the long ones by the kernel
/// (`copy_file_range`). The output offset of every run is known in advance, so pieces of
/// the copy run on several threads at once, and the writing to disk of each is started as
/// soon as it is copied, so that the final `fsync` has little left to wait for.
fn copy_runs(
    s: &Session,
    order: &[u32],
    out: &mut std::io::BufWriter<File>,
) -> std::io::Result<()> {
    use std::io::{Seek, SeekFrom};
    out.flush()?;
    let dst = out.get_mut();
    let base = dst.stream_position()?;
    let runs = s.byte_runs(order);
    let (pieces, end) = plan(&runs, base, SMALL, PART);
    let threads = pi_base::par::threads_at_most(4);
    copy_pieces(s.file(), &runs, &pieces, dst, threads)?;
    dst.seek(SeekFrom::Start(end))?;
    Ok(())
}

/// Copies `pieces` of `runs` of `src` to `dst` on up to `threads` threads; the first error
/// (in the order of the pieces) stops the others.
fn copy_pieces(
    src: &File,
    runs: &[(u64, u64)],
    pieces: &[Piece],
    dst: &File,
    threads: usize,
) -> std::io::Result<()> {
    let mut failed = None;
    pi_base::par::ordered(
        pieces.len(),
        threads,
        |i, _| copy_piece(src, runs, &pieces[i], dst, &mut Vec::new()),
        |_, done| match done {
            Ok(()) => std::ops::ControlFlow::Continue(()),
            Err(e) => {
                failed = Some(e);
                std::ops::ControlFlow::Break(())
            }
        },
    );
    failed.map_or(Ok(()), Err)
}

/// Writes one piece at its offset and starts its writing to disk.
fn copy_piece(
    src: &File,
    runs: &[(u64, u64)],
    p: &Piece,
    dst: &File,
    buf: &mut Vec<u8>,
) -> std::io::Result<()> {
    let (at, len) = match p {
        Piece::Lines { runs: r, at } => {
            buf.clear();
            for &(start, end) in &runs[r.clone()] {
                let n = buf.len();
                buf.resize(n + (end - start) as usize, 0);
                src.read_exact_at(&mut buf[n..], start)?;
                buf.push(b'\n');
            }
            dst.write_all_at(buf, *at)?;
            (*at, buf.len() as u64)
        }
        &Piece::Bytes { start, end, at, nl } => {
            kernel_copy(src, start, end, dst, at)?;
            if nl {
                dst.write_all_at(b"\n", at + (end - start))?;
            }
            (at, end - start + u64::from(nl))
        }
    };
    start_writeback(dst, at, len);
    Ok(())
}

/// Starts writing `dst[at..at + len]` to disk without waiting for it (Linux only).
#[cfg(target_os = "linux")]
fn start_writeback(dst: &File, at: u64, len: u64) {
    use std::os::fd::AsRawFd;
    let (Ok(at), Ok(len)) = (i64::try_from(at), i64::try_from(len)) else {
        return;
    };
    // SAFETY: a plain system call on an open descriptor; a failure only means the
    // write-back starts later, at the `fsync`.
    unsafe {
        libc::sync_file_range(dst.as_raw_fd(), at, len, libc::SYNC_FILE_RANGE_WRITE);
    }
}

#[cfg(not(target_os = "linux"))]
fn start_writeback(_dst: &File, _at: u64, _len: u64) {}

/// Copies `src[start..end]` to `dst` at `at`, through memory (systems without Linux's
/// `copy_file_range`).
#[cfg(not(target_os = "linux"))]
fn kernel_copy(src: &File, start: u64, end: u64, dst: &File, at: u64) -> std::io::Result<()> {
    copy_through(src, start, end - start, dst, at)
}

/// Copies `src[start..end]` to `dst` at `at` inside the kernel.
#[cfg(target_os = "linux")]
fn kernel_copy(src: &File, start: u64, end: u64, dst: &File, at: u64) -> std::io::Result<()> {
    use std::io::{Error, ErrorKind};
    use std::os::fd::AsRawFd;
    let mut off_in = i64::try_from(start).map_err(Error::other)?;
    let mut off_out = i64::try_from(at).map_err(Error::other)?;
    let mut left = end - start;
    while left > 0 {
        // SAFETY: both descriptors are open files owned by the callers; both offsets
        // outlive the call.
        let n = unsafe {
            libc::copy_file_range(
                src.as_raw_fd(),
                &mut off_in,
                dst.as_raw_fd(),
                &mut off_out,
                left as usize,
                0,
            )
        };
        if n < 0 {
            let e = Error::last_os_error();
            match e.raw_os_error() {
                Some(libc::EINTR) => continue,
                // Not supported between these files: copied through memory instead.
                Some(libc::EXDEV | libc::ENOSYS | libc::EINVAL | libc::EOPNOTSUPP) => {
                    return copy_through(src, off_in as u64, left, dst, off_out as u64);
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
        left -= n as u64;
    }
    Ok(())
}

/// [`kernel_copy`] through a buffer.
fn copy_through(src: &File, start: u64, len: u64, dst: &File, at: u64) -> std::io::Result<()> {
    let mut buf = vec![0u8; len.min(8 << 20) as usize];
    let mut done = 0;
    while done < len {
        let n = ((len - done) as usize).min(buf.len());
        src.read_exact_at(&mut buf[..n], start + done)?;
        dst.write_all_at(&buf[..n], at + done)?;
        done += n as u64;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// The output the copy must make: each run's bytes and a newline.
    fn expected(src: &[u8], runs: &[(u64, u64)]) -> Vec<u8> {
        let mut out = Vec::new();
        for &(s, e) in runs {
            out.extend_from_slice(&src[s as usize..e as usize]);
            out.push(b'\n');
        }
        out
    }

    /// Disjoint ascending runs in `0..len`, from (gap, length) pairs.
    fn runs_of(len: u64, shape: &[(u64, u64)]) -> Vec<(u64, u64)> {
        let mut runs = Vec::new();
        let mut at = 0;
        for &(gap, n) in shape {
            let start = at + gap;
            let end = start + n;
            if end > len {
                break;
            }
            runs.push((start, end));
            at = end + 1;
        }
        runs
    }

    #[test]
    fn the_plan_splits_long_runs_and_batches_short_ones() {
        let runs = [(0, 3), (4, 6), (10, 30), (31, 33)];
        let (pieces, end) = plan(&runs, 100, 5, 8);
        assert_eq!(
            pieces,
            [
                Piece::Lines {
                    runs: 0..2,
                    at: 100
                },
                Piece::Bytes {
                    start: 10,
                    end: 18,
                    at: 107,
                    nl: false
                },
                Piece::Bytes {
                    start: 18,
                    end: 26,
                    at: 115,
                    nl: false
                },
                Piece::Bytes {
                    start: 26,
                    end: 30,
                    at: 123,
                    nl: true
                },
                Piece::Lines {
                    runs: 3..4,
                    at: 128
                },
            ]
        );
        assert_eq!(end, 131);
        // A batch of short runs ends once it holds `part` bytes.
        let short = [(0, 2), (3, 5), (6, 8), (9, 11)];
        let (pieces, end) = plan(&short, 0, 5, 6);
        assert_eq!(
            pieces,
            [
                Piece::Lines { runs: 0..2, at: 0 },
                Piece::Lines { runs: 2..4, at: 6 },
            ]
        );
        assert_eq!(end, 12);
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(64))]
        /// Whatever the runs, piece sizes and number of threads, the output holds each run
        /// and its newline in order, and nothing else.
        #[test]
        fn pieces_copied_on_any_threads_make_the_runs_in_order(
            src in proptest::collection::vec(any::<u8>(), 0..3000),
            shape in proptest::collection::vec((0u64..20, 0u64..400), 0..40),
            small in 1u64..64,
            part in 1u64..200,
            threads in 1usize..5,
            base in 0u64..10,
        ) {
            let dir = tempfile::tempdir().unwrap();
            let sp = dir.path().join("src");
            std::fs::write(&sp, &src).unwrap();
            let runs = runs_of(src.len() as u64, &shape);
            let (pieces, end) = plan(&runs, base, small, part);
            let want = expected(&src, &runs);
            prop_assert_eq!(end, base + want.len() as u64);
            let dp = dir.path().join("dst");
            std::fs::write(&dp, vec![b'h'; base as usize]).unwrap();
            let dst = std::fs::OpenOptions::new().write(true).open(&dp).unwrap();
            copy_pieces(&File::open(&sp).unwrap(), &runs, &pieces, &dst, threads).unwrap();
            drop(dst);
            let got = std::fs::read(&dp).unwrap();
            prop_assert!(got[..base as usize].iter().all(|&c| c == b'h'));
            prop_assert_eq!(&got[base as usize..], &want[..]);
        }
    }

    /// A source shorter than its runs (cut while copied) is an error, not a short copy.
    #[test]
    fn a_source_cut_short_is_an_error() {
        let dir = tempfile::tempdir().unwrap();
        let sp = dir.path().join("src");
        std::fs::write(&sp, vec![b'x'; 100]).unwrap();
        let runs = [(0, 50), (60, 200)];
        let (pieces, _) = plan(&runs, 0, 10, 1000);
        let dst = File::create(dir.path().join("dst")).unwrap();
        let e = copy_pieces(&File::open(&sp).unwrap(), &runs, &pieces, &dst, 2).unwrap_err();
        assert_eq!(e.kind(), std::io::ErrorKind::UnexpectedEof);
    }
}
