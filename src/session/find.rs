//! Finding session files: by path, by id or unique id prefix, or the most recent one of a
//! working directory.

use std::fs::File;
use std::io::{BufRead, BufReader, Read};
use std::path::{Path, PathBuf};

use crate::config::Dirs;
use crate::json::{self, RawStr};

#[derive(Debug, thiserror::Error)]
pub enum FindError {
    #[error("no session found for {cwd} (looked in {})", dir.display())]
    NoSessions { dir: PathBuf, cwd: String },
    #[error("no session file at {}", path.display())]
    NoSuchFile { path: PathBuf },
    #[error("no session matches '{arg}'")]
    NotFound { arg: String },
    /// An empty argument (an unset variable, `pi session append "$S"`): never taken to mean
    /// "the most recent session", which only leaving the argument out means.
    #[error("the session argument is empty")]
    Empty,
    #[error("session id prefix '{arg}' is ambiguous: it matches {}", candidates.join(", "))]
    Ambiguous {
        arg: String,
        candidates: Vec<String>,
    },
}

/// The quick view of a session file: its header, read from the first line only.
#[derive(Debug, Clone)]
pub struct HeaderInfo {
    pub path: PathBuf,
    pub id: String,
    pub cwd: String,
    /// The session this one was forked from (`parentSession`: its path), if any.
    pub parent_session: Option<String>,
}

/// Reads the first line of `path` (at most 1 MiB) and returns its session header fields.
pub fn read_header(path: &Path) -> Option<HeaderInfo> {
    let file = File::open(path).ok()?;
    let mut line = Vec::new();
    BufReader::new(file.take(1 << 20))
        .read_until(b'\n', &mut line)
        .ok()?;
    if line.last() == Some(&b'\n') {
        line.pop();
    }
    json::validate(&line).ok()?;
    let start = json::skip_ws(&line, 0);
    let body = &line[start..];
    let string = |k: &str| {
        json::get(body, k)
            .and_then(RawStr::from_value)
            .map(|s| s.decode().into_owned())
    };
    if string("type").as_deref() != Some("session") {
        return None;
    }
    Some(HeaderInfo {
        path: path.to_owned(),
        id: string("id")?,
        cwd: string("cwd").unwrap_or_default(),
        parent_session: string("parentSession").filter(|p| !p.is_empty()),
    })
}

/// The session of `dir` whose header has the id `id`, if there is one.
pub fn with_id(dir: &Path, id: &str) -> Option<HeaderInfo> {
    jsonl_files(dir)
        .iter()
        .filter_map(|p| read_header(p))
        .find(|h| h.id == id)
}

/// An exclusive lock on a session directory, released when dropped. Creators of a session
/// with a chosen id hold it from the check that the id is free until the file is in place,
/// so of two creators of one id exactly one succeeds.
pub struct DirLock {
    _dir: File,
}

/// Creates `dir` if needed (as new session files create it) and locks it, waiting for the
/// lock.
fn lock_dir(dir: &Path) -> std::io::Result<DirLock> {
    std::fs::create_dir_all(dir)?;
    let handle = File::open(dir)?;
    handle.lock()?;
    Ok(DirLock { _dir: handle })
}

/// Why a chosen session id cannot be had.
#[derive(Debug, thiserror::Error)]
pub enum ClaimError {
    #[error("session id {id:?} is already used by {}", path.display())]
    Taken { id: String, path: PathBuf },
    #[error("cannot lock the session directory {}", dir.display())]
    Lock {
        dir: PathBuf,
        #[source]
        source: std::io::Error,
    },
}

/// Locks `dir` (see [`lock_dir`]) and checks that no session in it has the id `id`; the id
/// is the caller's while it holds the lock.
pub fn claim_id(dir: &Path, id: &str) -> Result<DirLock, ClaimError> {
    let lock = lock_dir(dir).map_err(|source| ClaimError::Lock {
        dir: dir.to_owned(),
        source,
    })?;
    match with_id(dir, id) {
        Some(h) => Err(ClaimError::Taken {
            id: id.to_owned(),
            path: h.path,
        }),
        None => Ok(lock),
    }
}

/// `*.jsonl` files directly in `dir`, sorted by name.
pub fn jsonl_files(dir: &Path) -> Vec<PathBuf> {
    let Ok(rd) = std::fs::read_dir(dir) else {
        return Vec::new();
    };
    let mut files: Vec<PathBuf> = rd
        .filter_map(Result::ok)
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|e| e == "jsonl") && p.is_file())
        .collect();
    files.sort();
    files
}

/// Every session directory: the sub-directories of the sessions root, plus an explicit
/// session directory.
pub fn all_session_dirs(dirs: &Dirs) -> Vec<PathBuf> {
    let mut out = Vec::new();
    if let Ok(rd) = std::fs::read_dir(dirs.sessions_root()) {
        let mut subs: Vec<PathBuf> = rd
            .filter_map(Result::ok)
            .map(|e| e.path())
            .filter(|p| p.is_dir())
            .collect();
        subs.sort();
        out.extend(subs);
    }
    if let Some(d) = &dirs.session_dir
        && !out.contains(d)
    {
        out.push(d.clone());
    }
    out
}

/// The most recently modified valid session file in `dir` (what `--continue` picks).
pub fn most_recent(dir: &Path) -> Option<PathBuf> {
    jsonl_files(dir)
        .into_iter()
        .filter(|p| read_header(p).is_some())
        .filter_map(|p| {
            let m = std::fs::metadata(&p).ok()?.modified().ok()?;
            Some((m, p))
        })
        .max_by(|a, b| a.0.cmp(&b.0).then_with(|| a.1.cmp(&b.1)))
        .map(|(_, p)| p)
}

/// Whether an argument names a file rather than an id: it contains a path separator or
/// ends with `.jsonl` (upstream's rule).
pub fn looks_like_path(arg: &str) -> bool {
    arg.contains('/') || arg.contains('\\') || arg.ends_with(".jsonl")
}

/// Resolves a session argument (path, id, unique id prefix) or, when absent, the most recent
/// session of `cwd`. An empty (or blank) argument is an error, not an absent one.
pub fn resolve(arg: Option<&str>, dirs: &Dirs, cwd: &str) -> Result<PathBuf, FindError> {
    if arg.is_some_and(|a| a.trim().is_empty()) {
        return Err(FindError::Empty);
    }
    let Some(arg) = arg else {
        let dir = dirs.session_dir_for(cwd);
        return most_recent(&dir).ok_or_else(|| FindError::NoSessions {
            dir,
            cwd: cwd.to_owned(),
        });
    };
    if looks_like_path(arg) || Path::new(arg).is_file() {
        let p = PathBuf::from(arg);
        return if p.is_file() {
            Ok(std::path::absolute(&p).unwrap_or(p))
        } else {
            Err(FindError::NoSuchFile { path: p })
        };
    }
    // An id or id prefix: the current project first, then everywhere.
    let local = dirs.session_dir_for(cwd);
    let mut scopes = vec![vec![local.clone()]];
    scopes.push(
        all_session_dirs(dirs)
            .into_iter()
            .filter(|d| *d != local)
            .collect(),
    );
    for scope in scopes {
        let mut exact = Vec::new();
        let mut prefix = Vec::new();
        for dir in scope {
            for p in jsonl_files(&dir) {
                let Some(h) = read_header(&p) else { continue };
                if h.id == arg {
                    exact.push(h);
                } else if h.id.starts_with(arg) {
                    prefix.push(h);
                }
            }
        }
        let found = if exact.is_empty() { prefix } else { exact };
        match found.len() {
            0 => continue,
            1 => return Ok(found[0].path.clone()),
            _ => {
                return Err(FindError::Ambiguous {
                    arg: arg.to_owned(),
                    candidates: found
                        .iter()
                        .take(6)
                        .map(|h| format!("{} ({})", h.id, h.path.display()))
                        .collect(),
                });
            }
        }
    }
    Err(FindError::NotFound {
        arg: arg.to_owned(),
    })
}

/// The sessions a shell offers to complete a session argument with: those of `cwd` first,
/// then every other one, each group newest first. Only the first line of each file is read.
/// (The one place completion learns what names a session; see `pi completions`.)
pub fn completion_candidates(dirs: &Dirs, cwd: &str) -> Vec<HeaderInfo> {
    let local = dirs.session_dir_for(cwd);
    let newest_first = |dirs: Vec<PathBuf>| {
        let mut found: Vec<(std::time::SystemTime, HeaderInfo)> = dirs
            .iter()
            .flat_map(|d| jsonl_files(d))
            .filter_map(|p| {
                let modified = std::fs::metadata(&p).ok()?.modified().ok()?;
                Some((modified, read_header(&p)?))
            })
            .collect();
        found.sort_by(|a, b| b.0.cmp(&a.0).then_with(|| a.1.path.cmp(&b.1.path)));
        found.into_iter().map(|(_, h)| h)
    };
    let others: Vec<PathBuf> = all_session_dirs(dirs)
        .into_iter()
        .filter(|d| *d != local)
        .collect();
    newest_first(vec![local])
        .chain(newest_first(others))
        .collect()
}
