//! New session files made from others: a copy of the path to an entry (`pi session fork`,
//! RPC `fork` and `clone`), and an empty session that names its parent (`pi session new
//! --parent-session`, RPC `new_session`).

use std::io::Write;
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
    let mut on_path = IdSet::default();
    for &i in &path {
        on_path.insert(s.entries[i as usize].id.clone());
    }
    let now = clock::now_ms();
    // The files already in `dir` keep seeded ids (PI_SEED) of several forks apart.
    let mut rng =
        rng::Rng::new(|| now as u64 ^ s.entries.len() as u64 ^ files_in(dir).rotate_left(17));
    let mut prev = path.last().map(|&i| s.entries[i as usize].id.to_string());
    let mut label_lines = Vec::new();
    for (target, label, ts) in s.resolved_labels() {
        if !on_path.contains(&target) {
            continue;
        }
        let mut id = rng.short_id();
        for _ in 0..100 {
            if !on_path.contains(&Id::new(&id)) {
                break;
            }
            id = rng.short_id();
        }
        on_path.insert(Id::new(&id));
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
        s.copy_lines(&path, w)?;
        for l in &label_lines {
            w.write_all(l)?;
            w.write_all(b"\n")?;
        }
        Ok(())
    })
    .with_context(|| format!("cannot write {}", out_path.display()))?;
    Ok(out_path)
}
