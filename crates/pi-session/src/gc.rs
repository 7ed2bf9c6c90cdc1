//! Retention: picking old, large or empty sessions and moving them to an archive (or deleting
//! them), never touching a session in use (its lock is held by a writer) nor one that a kept
//! session was forked from (`parentSession`).

use std::collections::HashMap;
use std::fs::File;
use std::io;
use std::ops::ControlFlow;
use std::path::{Path, PathBuf};

use super::find;
use super::summary::Cache;
use pi_base::json;

/// Which sessions are picked: all of the limits given must hold.
#[derive(Debug, Clone, Default)]
pub struct Criteria {
    /// Last modified more than this many milliseconds ago (with the text the user gave).
    pub older_than: Option<(i64, String)>,
    /// More than this many bytes (with the text the user gave).
    pub larger_than: Option<(u64, String)>,
    /// No message entry at all.
    pub empty: bool,
    /// The clock the ages are measured against.
    pub now_ms: i64,
}

/// What happens to a picked session.
#[derive(Debug, Clone)]
pub enum Disposal {
    /// Moved into `root`, at its path relative to `sessions_root` (or, for a session outside
    /// it, directly into `root`).
    Archive {
        root: PathBuf,
        sessions_root: PathBuf,
    },
    /// Unlinked.
    Delete,
}

/// Why a picked session stays where it is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Keep {
    /// A writer holds its lock: it is in use.
    Locked,
    /// A session that stays names it as `parentSession`.
    ParentOf(PathBuf),
    /// The archive already has a file at its place.
    Exists(PathBuf),
    /// It changed since it was picked (a writer appended meanwhile).
    Changed,
    /// Moving or deleting it failed.
    Failed(String),
}

impl std::fmt::Display for Keep {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Keep::Locked => write!(f, "locked (in use)"),
            Keep::ParentOf(p) => write!(f, "parent of kept session {}", p.display()),
            Keep::Exists(p) => write!(f, "{} already exists", p.display()),
            Keep::Changed => write!(f, "modified while gc ran"),
            Keep::Failed(e) => write!(f, "failed: {e}"),
        }
    }
}

/// A session the criteria picked, and what became of it.
#[derive(Debug, Clone)]
pub struct Candidate {
    pub path: PathBuf,
    pub id: String,
    pub bytes: u64,
    pub modified_ms: i64,
    /// The criteria it meets, as the user gave them (`older than 30d`, `empty`).
    pub reasons: Vec<String>,
    /// Where an archived session goes.
    pub to: Option<PathBuf>,
    /// Why it stays, if it does.
    pub keep: Option<Keep>,
}

/// The sessions among `files` that meet `criteria` (files that are not sessions are never
/// picked), in path order. `summaries` answers "no message at all" where it holds a valid
/// record (the count `pi session list` shows); other files are read up to their first
/// message.
pub fn select(files: &[PathBuf], criteria: &Criteria, summaries: &Cache) -> Vec<Candidate> {
    let mut out: Vec<Candidate> = files
        .iter()
        .filter_map(|p| candidate(p, criteria, summaries))
        .collect();
    out.sort_by(|a, b| a.path.cmp(&b.path));
    out.dedup_by(|a, b| a.path == b.path);
    out
}

fn candidate(path: &Path, c: &Criteria, summaries: &Cache) -> Option<Candidate> {
    let header = find::read_header(path)?;
    let meta = std::fs::metadata(path).ok()?;
    let modified_ms = mtime_ms(&meta);
    let mut reasons = Vec::new();
    if let Some((age, text)) = &c.older_than {
        if c.now_ms.saturating_sub(modified_ms) <= *age {
            return None;
        }
        reasons.push(format!("older than {text}"));
    }
    if let Some((size, text)) = &c.larger_than {
        if meta.len() <= *size {
            return None;
        }
        reasons.push(format!("larger than {text}"));
    }
    if c.empty {
        let has = match summaries.summary(path) {
            Some(s) => s.counts.messages > 0,
            None => has_message(path).unwrap_or(true),
        };
        if has {
            return None;
        }
        reasons.push("empty".to_owned());
    }
    Some(Candidate {
        path: path.to_owned(),
        id: header.id,
        bytes: meta.len(),
        modified_ms,
        reasons,
        to: None,
        keep: None,
    })
}

fn mtime_ms(meta: &std::fs::Metadata) -> i64 {
    meta.modified()
        .ok()
        .and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok())
        .map_or(0, |d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX))
}

/// Whether the session has at least one `message` entry (reading stops at the first).
pub(crate) fn has_message(path: &Path) -> io::Result<bool> {
    let file = File::open(path)?;
    let mut found = false;
    super::lines::each_line(&file, None, |line| {
        let start = json::skip_ws(line, 0);
        if line.get(start) == Some(&b'{')
            && json::get_str(&line[start..], "type").as_deref() == Some("message")
        {
            found = true;
            return ControlFlow::Break(());
        }
        ControlFlow::Continue(())
    })?;
    Ok(found)
}

/// The caches kept per session file under `<agent dir>/cache/`, named `<dev>-<inode>.<ext>`
/// after the file they describe.
const PER_FILE_CACHES: [&str; 2] = ["usage-facts", "session-index"];

/// Removes the cache records (session summaries, usage facts, session indexes) whose file
/// is none of `live` (sessions deleted or moved away; a record of a moved session is only
/// rebuilt when it is read again), and the record files the summaries kept before they
/// were one log. Returns how many were removed. Best effort: a record that cannot be removed stays, and one
/// removed while another process uses it costs that process time only.
pub fn prune_caches(agent_dir: &Path, live: &[PathBuf]) -> usize {
    use std::os::unix::fs::MetadataExt;
    let ids: std::collections::HashSet<(u64, u64)> = live
        .iter()
        .filter_map(|p| std::fs::metadata(p).ok())
        .map(|m| (m.dev(), m.ino()))
        .collect();
    let keep: std::collections::HashSet<String> =
        ids.iter().map(|(d, i)| format!("{d:x}-{i:x}")).collect();
    let mut removed = super::summary::prune_log(agent_dir, &ids);
    let old_records = agent_dir.join("cache").join("session-summaries");
    for cache in PER_FILE_CACHES {
        let Ok(rd) = std::fs::read_dir(agent_dir.join("cache").join(cache)) else {
            continue;
        };
        for e in rd.filter_map(Result::ok) {
            let name = e.file_name();
            let name = name.to_string_lossy();
            // Only records (temporary files of a writer start with a dot).
            let Some((stem, _ext)) = name.rsplit_once('.') else {
                continue;
            };
            if stem.is_empty() || stem.starts_with('.') || keep.contains(stem) {
                continue;
            }
            if std::fs::remove_file(e.path()).is_ok() {
                removed += 1;
            }
        }
    }
    // Summaries were once a file each, `<dev>-<inode>.json`: none is read any more.
    if let Ok(rd) = std::fs::read_dir(&old_records) {
        for e in rd.filter_map(Result::ok) {
            let name = e.file_name();
            let name = name.to_string_lossy();
            let old = name.strip_suffix(".json").is_some_and(|stem| {
                stem.split_once('-').is_some_and(|(d, i)| {
                    !d.is_empty()
                        && !i.is_empty()
                        && (d.chars().chain(i.chars())).all(|c| c.is_ascii_hexdigit())
                })
            });
            if old && std::fs::remove_file(e.path()).is_ok() {
                removed += 1;
            }
        }
    }
    removed
}

/// Whether a writer holds the session's lock.
pub(crate) fn is_locked(path: &Path) -> io::Result<bool> {
    let file = File::open(path)?;
    match file.try_lock() {
        Ok(()) => {
            let _ = file.unlock();
            Ok(false)
        }
        Err(std::fs::TryLockError::WouldBlock) => Ok(true),
        Err(std::fs::TryLockError::Error(e)) => Err(e),
    }
}

/// The sessions that name each session as their parent: canonical parent path → children,
/// over every file in `live` (all the sessions that exist, not only those in scope).
pub fn children(live: &[PathBuf]) -> HashMap<PathBuf, Vec<PathBuf>> {
    let mut map: HashMap<PathBuf, Vec<PathBuf>> = HashMap::new();
    for p in live {
        if let Some(parent) = find::read_header(p).and_then(|h| h.parent_session) {
            let parent = canonical(Path::new(&parent));
            let child = canonical(p);
            if parent != child {
                map.entry(parent).or_default().push(p.clone());
            }
        }
    }
    for v in map.values_mut() {
        v.sort();
    }
    map
}

fn canonical(p: &Path) -> PathBuf {
    std::fs::canonicalize(p).unwrap_or_else(|_| p.to_owned())
}

/// How [`run`] goes about it.
pub struct Plan<'a> {
    pub disposal: &'a Disposal,
    /// Change nothing: only find out what would happen.
    pub dry_run: bool,
    /// Also take sessions that kept sessions name as their parent.
    pub include_parents: bool,
    /// From [`children`].
    pub children: &'a HashMap<PathBuf, Vec<PathBuf>>,
}

/// Archives or deletes the candidates (or, dry, finds out which would be), setting each one's
/// `to` and `keep`. Children are settled before their parents, so a child that turns out to
/// stay (locked, failed) keeps its parent too.
pub fn run(cands: &mut [Candidate], plan: &Plan<'_>) {
    let keys: Vec<PathBuf> = cands.iter().map(|c| canonical(&c.path)).collect();
    let index: HashMap<&Path, usize> = keys
        .iter()
        .enumerate()
        .map(|(i, k)| (k.as_path(), i))
        .collect();
    // The candidates among each candidate's children.
    let kids: Vec<Vec<usize>> = keys
        .iter()
        .map(|k| {
            plan.children.get(k).map_or(Vec::new(), |ch| {
                ch.iter()
                    .filter_map(|c| index.get(canonical(c).as_path()).copied())
                    .collect()
            })
        })
        .collect();
    let mut done = vec![false; cands.len()];
    let mut left = cands.len();
    while left > 0 {
        let ready: Vec<usize> = (0..cands.len())
            .filter(|&i| !done[i] && kids[i].iter().all(|&k| done[k] || k == i))
            .collect();
        // A cycle of parents (malformed headers): settle the first one left.
        let ready = if ready.is_empty() {
            (0..cands.len()).filter(|&i| !done[i]).take(1).collect()
        } else {
            ready
        };
        for i in ready {
            let kept_child = if plan.include_parents {
                None
            } else {
                plan.children.get(&keys[i]).and_then(|ch| {
                    ch.iter()
                        .find(|c| match index.get(canonical(c).as_path()) {
                            Some(&k) => k != i && (!done[k] || cands[k].keep.is_some()),
                            None => true,
                        })
                        .cloned()
                })
            };
            let c = &mut cands[i];
            c.to = destination(&c.path, plan.disposal);
            c.keep = match kept_child {
                Some(child) => Some(Keep::ParentOf(child)),
                None if plan.dry_run => probe(c),
                None => dispose(c, plan.disposal).err(),
            };
            done[i] = true;
            left -= 1;
        }
    }
}

/// Where an archived session goes.
pub fn destination(path: &Path, disposal: &Disposal) -> Option<PathBuf> {
    let Disposal::Archive {
        root,
        sessions_root,
    } = disposal
    else {
        return None;
    };
    Some(match path.strip_prefix(sessions_root) {
        Ok(rel) => root.join(rel),
        Err(_) => root.join(path.file_name().unwrap_or(path.as_os_str())),
    })
}

/// What a dry run can tell: whether the session is locked or its place in the archive taken.
fn probe(c: &Candidate) -> Option<Keep> {
    match is_locked(&c.path) {
        Ok(true) => return Some(Keep::Locked),
        Ok(false) => {}
        Err(e) => return Some(Keep::Failed(e.to_string())),
    }
    match &c.to {
        Some(to) if to.exists() => Some(Keep::Exists(to.clone())),
        _ => None,
    }
}

/// Moves or deletes the session under its lock.
fn dispose(c: &Candidate, disposal: &Disposal) -> Result<(), Keep> {
    let failed = |e: io::Error| Keep::Failed(e.to_string());
    let file = File::open(&c.path).map_err(failed)?;
    match file.try_lock() {
        Ok(()) => {}
        Err(std::fs::TryLockError::WouldBlock) => return Err(Keep::Locked),
        Err(std::fs::TryLockError::Error(e)) => return Err(failed(e)),
    }
    let meta = file.metadata().map_err(failed)?;
    if meta.len() != c.bytes || mtime_ms(&meta) != c.modified_ms {
        return Err(Keep::Changed);
    }
    let marker = super::pending::marker_path(&c.path);
    match (&c.to, disposal) {
        (Some(to), Disposal::Archive { .. }) => {
            move_file(&c.path, to)?;
            if marker.exists() {
                let mut name = to.file_name().unwrap_or_default().to_owned();
                name.push(".pending");
                let _ = move_file(&marker, &to.with_file_name(name));
            }
        }
        _ => {
            std::fs::remove_file(&c.path).map_err(failed)?;
            let _ = std::fs::remove_file(&marker);
            sync_dir(&c.path);
        }
    }
    drop(file);
    Ok(())
}

/// Moves `from` to `to` without ever replacing a file at `to`: a hard link and an unlink, or
/// (across file systems) a copy written in full and synced before the original goes.
fn move_file(from: &Path, to: &Path) -> Result<(), Keep> {
    let failed = |e: io::Error| Keep::Failed(e.to_string());
    if let Some(dir) = to.parent() {
        pi_base::fs::create_dir_all(dir).map_err(failed)?;
    }
    match std::fs::hard_link(from, to) {
        Ok(()) => {}
        Err(e) if e.kind() == io::ErrorKind::AlreadyExists => {
            return Err(Keep::Exists(to.to_owned()));
        }
        Err(_) => copy_new(from, to).map_err(|e| match e.kind() {
            io::ErrorKind::AlreadyExists => Keep::Exists(to.to_owned()),
            _ => failed(e),
        })?,
    }
    sync_dir(to);
    if let Err(e) = std::fs::remove_file(from) {
        // Leave no second copy behind.
        let _ = std::fs::remove_file(to);
        return Err(failed(e));
    }
    sync_dir(from);
    Ok(())
}

fn copy_new(from: &Path, to: &Path) -> io::Result<()> {
    let mut src = File::open(from)?;
    let mut dst = pi_base::fs::create_new(to)?;
    let copied = io::copy(&mut src, &mut dst).and_then(|_| dst.sync_all());
    if copied.is_err() {
        let _ = std::fs::remove_file(to);
    }
    copied
}

/// Makes the change of the directory holding `path` durable (best effort).
fn sync_dir(path: &Path) {
    if let Some(dir) = path.parent()
        && let Ok(d) = File::open(dir)
    {
        let _ = d.sync_all();
    }
}

/// `500`, `12K`, `1.5M`, `2G`, `1T` (powers of 1024; a trailing `B` or `iB` is allowed).
pub fn parse_size(s: &str) -> Option<u64> {
    let t = s.trim();
    let t = t
        .strip_suffix("iB")
        .or_else(|| t.strip_suffix('B'))
        .unwrap_or(t);
    let (num, mult) = match t.chars().last()? {
        'k' | 'K' => (&t[..t.len() - 1], 1u64 << 10),
        'm' | 'M' => (&t[..t.len() - 1], 1 << 20),
        'g' | 'G' => (&t[..t.len() - 1], 1 << 30),
        't' | 'T' => (&t[..t.len() - 1], 1 << 40),
        _ => (t, 1),
    };
    if num.is_empty() || !num.chars().all(|c| c.is_ascii_digit() || c == '.') {
        return None;
    }
    let n: f64 = num.parse().ok()?;
    let bytes = n * mult as f64;
    (bytes.is_finite() && bytes >= 0.0 && bytes < u64::MAX as f64).then_some(bytes as u64)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes() {
        assert_eq!(parse_size("500"), Some(500));
        assert_eq!(parse_size("12K"), Some(12 * 1024));
        assert_eq!(parse_size("12kB"), Some(12 * 1024));
        assert_eq!(parse_size("1.5M"), Some(1536 * 1024));
        assert_eq!(parse_size("2GiB"), Some(2 << 30));
        assert_eq!(parse_size("0"), Some(0));
        for bad in ["", "K", "-1", "1X", "1..2M", "nan", "1e3"] {
            assert_eq!(parse_size(bad), None, "{bad}");
        }
    }

    #[test]
    fn archive_keeps_the_layout_below_the_sessions_root() {
        let d = Disposal::Archive {
            root: "/a/archive".into(),
            sessions_root: "/a/sessions".into(),
        };
        assert_eq!(
            destination(Path::new("/a/sessions/--p--/x.jsonl"), &d),
            Some(PathBuf::from("/a/archive/--p--/x.jsonl"))
        );
        assert_eq!(
            destination(Path::new("/elsewhere/y.jsonl"), &d),
            Some(PathBuf::from("/a/archive/y.jsonl"))
        );
        assert_eq!(destination(Path::new("/x"), &Disposal::Delete), None);
    }
}
