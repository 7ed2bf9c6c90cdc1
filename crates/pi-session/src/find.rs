//! Finding session files: by path, by id or unique id prefix, or the most recent one of a
//! working directory; `-` for a session read from stdin; and the short ids that name
//! sessions in listings.

use std::collections::HashMap;
use std::fs::File;
use std::io::{BufRead, BufReader, Read};
use std::path::{Path, PathBuf};

use pi_base::config::Dirs;
use pi_base::json::{self, RawStr};

#[derive(Debug, thiserror::Error)]
pub enum FindError {
    #[error("no session found for {cwd} (looked in {})", dir.display())]
    NoSessions { dir: PathBuf, cwd: String },
    #[error("no session file at {}", path.display())]
    NoSuchFile { path: PathBuf },
    #[error("{} is a directory, not a session file", path.display())]
    Directory { path: PathBuf },
    #[error("no session matches '{arg}'")]
    NotFound { arg: String },
    /// An empty argument (an unset variable, `pi session append "$S"`): never taken to mean
    /// "the most recent session", which only leaving the argument out means.
    #[error("the session argument is empty")]
    Empty,
    /// A prefix of several ids; `candidates` are the first of them, each as its shortest
    /// prefix that names it and its path, and `count` how many there are in all.
    #[error(
        "session id prefix '{arg}' is ambiguous: it matches {count} sessions{}{}",
        candidates.iter().map(|c| format!("\n    {c}")).collect::<String>(),
        if *count > candidates.len() {
            format!("\n    … and {} more", count - candidates.len())
        } else {
            String::new()
        }
    )]
    Ambiguous {
        arg: String,
        candidates: Vec<String>,
        count: usize,
    },
    /// `PI_SESSION` or the pin of `pi session use` names a session that cannot be had (gone,
    /// moved, ambiguous): an error, never a quiet fall back to the most recent session.
    #[error("{}: {cause}", from.describe())]
    Stale {
        from: Chosen,
        value: String,
        cause: Box<FindError>,
    },
    /// `-` given to a command that writes: stdin can only be read.
    #[error("a session from stdin ('-') can only be read: this command needs a session file")]
    Stdin,
}

/// The session argument that reads a session from stdin.
pub const STDIN_ARG: &str = "-";

/// How messages name a session read from stdin.
pub const STDIN_NAME: &str = "(stdin)";

/// A session argument of a command that only reads: a session file, or stdin.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Named {
    File(PathBuf),
    Stdin,
}

/// The quick view of a session file: its header, read from the first line only.
#[derive(Debug, Clone)]
pub struct HeaderInfo {
    pub path: PathBuf,
    pub id: String,
    pub cwd: String,
    /// The session's name or first user message, when known without reading the file
    /// (from its cached summary).
    pub title: Option<String>,
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
        title: None,
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

/// Creates `dir` if needed (0700, as new session files create it) and locks it, waiting for the
/// lock.
fn lock_dir(dir: &Path) -> std::io::Result<DirLock> {
    pi_base::fs::create_dir_all(dir)?;
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
pub(crate) fn looks_like_path(arg: &str) -> bool {
    arg.contains('/') || arg.contains('\\') || arg.ends_with(".jsonl")
}

/// Whether the session id `id` starts with `prefix`; a prefix without dashes may also leave
/// out the dashes of the id (`01a231e61b2` for `01a231e6-1b2…`).
pub(crate) fn id_has_prefix(id: &str, prefix: &str) -> bool {
    if id.starts_with(prefix) {
        return true;
    }
    if prefix.contains('-') || !id.contains('-') {
        return false;
    }
    let mut rest = id.chars().filter(|&c| c != '-');
    prefix.chars().all(|p| rest.next() == Some(p))
}

/// Where the session a command works on comes from, in the order they are asked: the
/// command's argument, `PI_SESSION` (a shell's or a cron job's), the session pinned for the
/// directory (`pi session use`), the most recently modified session of the directory.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Chosen {
    Argument,
    Env,
    Pin,
    MostRecent,
}

/// The variable that names the session of a shell or a cron job.
pub const SESSION_ENV: &str = "PI_SESSION";

impl Chosen {
    /// How messages name this source.
    pub fn describe(self) -> &'static str {
        match self {
            Chosen::Argument => "the session argument",
            Chosen::Env => "PI_SESSION",
            Chosen::Pin => "the pinned session (pi session use)",
            Chosen::MostRecent => "the most recently modified session of the directory",
        }
    }

    /// Its name in JSON records.
    pub fn key(self) -> &'static str {
        match self {
            Chosen::Argument => "argument",
            Chosen::Env => "env",
            Chosen::Pin => "pin",
            Chosen::MostRecent => "most-recent",
        }
    }
}

/// The file that holds the session pinned for `cwd` (by `pi session use`): its path, on one
/// line, in `<agent dir>/current-session/<encoded cwd>`.
pub fn pin_file(dirs: &Dirs, cwd: &str) -> PathBuf {
    dirs.agent_dir
        .join("current-session")
        .join(pi_base::config::encode_cwd(cwd))
}

/// The session pinned for `cwd`, as it was written (a path), if any.
pub fn read_pin(dirs: &Dirs, cwd: &str) -> Option<String> {
    let text = std::fs::read_to_string(pin_file(dirs, cwd)).ok()?;
    let line = text.lines().next()?.trim();
    (!line.is_empty()).then(|| line.to_owned())
}

/// Pins `session` for `cwd`: written whole or not at all (0600, in a 0700 folder).
pub fn write_pin(dirs: &Dirs, cwd: &str, session: &Path) -> std::io::Result<()> {
    use std::io::Write;
    let dest = pin_file(dirs, cwd);
    if let Some(dir) = dest.parent() {
        pi_base::fs::create_dir_all(dir)?;
    }
    let mut f = pi_base::fs::AtomicFile::create(&dest)?;
    writeln!(f.writer(), "{}", session.to_string_lossy())?;
    f.commit()
}

/// Removes the pin of `cwd`; whether there was one.
pub fn clear_pin(dirs: &Dirs, cwd: &str) -> std::io::Result<bool> {
    match std::fs::remove_file(pin_file(dirs, cwd)) {
        Ok(()) => Ok(true),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(false),
        Err(e) => Err(e),
    }
}

/// The session a command works on, and where it came from: `arg`, else `env` (the value of
/// [`SESSION_ENV`], which the caller reads; empty counts as unset), else the pin of `cwd`,
/// else the most recent session of `cwd`. A value of `env` or the pin that names no session
/// is a [`FindError::Stale`] error.
pub fn choose(
    arg: Option<&str>,
    env: Option<&str>,
    dirs: &Dirs,
    cwd: &str,
) -> Result<(PathBuf, Chosen), FindError> {
    if arg.is_some() {
        return resolve(arg, dirs, cwd).map(|p| (p, Chosen::Argument));
    }
    fn stale(from: Chosen, value: &str) -> impl FnOnce(FindError) -> FindError + '_ {
        move |e| FindError::Stale {
            from,
            value: value.to_owned(),
            cause: Box::new(e),
        }
    }
    if let Some(v) = env.filter(|v| !v.trim().is_empty()) {
        return resolve(Some(v), dirs, cwd)
            .map(|p| (p, Chosen::Env))
            .map_err(stale(Chosen::Env, v));
    }
    if let Some(pin) = read_pin(dirs, cwd) {
        return resolve(Some(&pin), dirs, cwd)
            .map(|p| (p, Chosen::Pin))
            .map_err(stale(Chosen::Pin, &pin));
    }
    resolve(None, dirs, cwd).map(|p| (p, Chosen::MostRecent))
}

/// [`choose`] for a command that only reads: `-` is stdin.
pub fn choose_reading(
    arg: Option<&str>,
    env: Option<&str>,
    dirs: &Dirs,
    cwd: &str,
) -> Result<Named, FindError> {
    if arg == Some(STDIN_ARG) {
        return Ok(Named::Stdin);
    }
    choose(arg, env, dirs, cwd).map(|(p, _)| Named::File(p))
}

/// [`resolve`] for a command that only reads: `-` is stdin.
pub fn resolve_reading(arg: Option<&str>, dirs: &Dirs, cwd: &str) -> Result<Named, FindError> {
    if arg == Some(STDIN_ARG) {
        return Ok(Named::Stdin);
    }
    resolve(arg, dirs, cwd).map(Named::File)
}

/// Resolves a session argument (path, id, unique id prefix) or, when absent, the most recent
/// session of `cwd`. An empty (or blank) argument is an error, not an absent one, and so is
/// `-` (stdin: see [`resolve_reading`]).
pub fn resolve(arg: Option<&str>, dirs: &Dirs, cwd: &str) -> Result<PathBuf, FindError> {
    if arg.is_some_and(|a| a.trim().is_empty()) {
        return Err(FindError::Empty);
    }
    if arg == Some(STDIN_ARG) {
        return Err(FindError::Stdin);
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
        } else if p.is_dir() {
            Err(FindError::Directory { path: p })
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
                } else if id_has_prefix(&h.id, arg) || id_has_tail(&h.id, arg) {
                    prefix.push(h);
                }
            }
        }
        let found = if exact.is_empty() { prefix } else { exact };
        match found.len() {
            0 => continue,
            1 => return Ok(found[0].path.clone()),
            count => return Err(ambiguous(arg, found, count)),
        }
    }
    Err(FindError::NotFound {
        arg: arg.to_owned(),
    })
}

/// The most candidates an ambiguous prefix lists.
const CANDIDATES_SHOWN: usize = 10;

/// The error for a prefix of the ids of `found` (sessions of one scope of [`resolve`]): the
/// first of them by id, each with the prefix that tells it from the others, which resolves
/// to it (resolving looks in the same scope first).
fn ambiguous(arg: &str, mut found: Vec<HeaderInfo>, count: usize) -> FindError {
    found.sort_by(|a, b| a.id.cmp(&b.id).then_with(|| a.path.cmp(&b.path)));
    let short = ShortIds::new(found.iter().map(|h| h.id.as_str()));
    let shown: Vec<(std::borrow::Cow<'_, str>, &HeaderInfo)> = found
        .iter()
        .take(CANDIDATES_SHOWN)
        .map(|h| (pi_base::text::escape(short.get(&h.id)), h))
        .collect();
    let width = shown
        .iter()
        .map(|(s, _)| s.chars().count())
        .max()
        .unwrap_or(0);
    FindError::Ambiguous {
        arg: arg.to_owned(),
        candidates: shown
            .iter()
            .map(|(s, h)| {
                let path = h.path.to_string_lossy();
                format!("{s:<width$}  {}", pi_base::text::escape(&path))
            })
            .collect(),
        count,
    }
}

/// A session a shell offers to complete a session argument with.
#[derive(Debug, Clone)]
pub struct Candidate {
    pub header: HeaderInfo,
    /// Its short id among every session (see [`ShortIds`]).
    pub short_id: String,
}

impl Candidate {
    /// What completes `word`: the short id when it starts with `word`, else the full id
    /// when that does (a word longer than the short id), else nothing. A unique session
    /// thus completes to its short id, which resolves as well as the id.
    pub fn completes(&self, word: &str) -> Option<&str> {
        if self.short_id.starts_with(word) {
            Some(&self.short_id)
        } else if self.header.id.starts_with(word) {
            Some(&self.header.id)
        } else {
            None
        }
    }
}

/// The sessions a shell offers to complete a session argument with: those of `cwd` first,
/// then every other one, each group newest first (by file modification time), with their
/// short ids. A session with a valid cached summary (see [`super::summary`]) is taken from
/// it, with its name or first message as a title; the others from their first line. Nothing
/// is written. (The one place completion learns what names a session; see `pi completions`.)
pub fn completion_candidates(dirs: &Dirs, cwd: &str) -> Vec<Candidate> {
    let cache = super::summary::Cache::read_only(&dirs.agent_dir);
    let local = dirs.session_dir_for(cwd);
    let newest_first = |dirs: Vec<PathBuf>| {
        let mut found: Vec<(std::time::SystemTime, HeaderInfo)> = dirs
            .iter()
            .flat_map(|d| jsonl_files(d))
            .filter_map(|p| {
                let modified = std::fs::metadata(&p).ok()?.modified().ok()?;
                let info = match cache.summary(&p) {
                    Some(s) => HeaderInfo {
                        title: s
                            .name()
                            .map(str::to_owned)
                            .or_else(|| s.counts.first_message.clone()),
                        path: s.path,
                        id: s.header.id,
                        cwd: s.header.cwd,
                        parent_session: s.header.parent_session.filter(|p| !p.is_empty()),
                    },
                    None => read_header(&p)?,
                };
                Some((modified, info))
            })
            .collect();
        found.sort_by(|a, b| b.0.cmp(&a.0).then_with(|| a.1.path.cmp(&b.1.path)));
        found.into_iter().map(|(_, h)| h)
    };
    let others: Vec<PathBuf> = all_session_dirs(dirs)
        .into_iter()
        .filter(|d| *d != local)
        .collect();
    let headers: Vec<HeaderInfo> = newest_first(vec![local])
        .chain(newest_first(others))
        .collect();
    let short = ShortIds::new(headers.iter().map(|h| h.id.as_str()));
    headers
        .into_iter()
        .map(|h| Candidate {
            short_id: short.get(&h.id).to_owned(),
            header: h,
        })
        .collect()
}

/// The fewest characters a short id has.
pub const SHORT_ID_MIN: usize = 8;

/// The most characters of a UUID's random tail a short id takes (all of its last group).
const TAIL_MAX: usize = 12;

/// The random tail of a UUID-shaped id (8-4-4-4-12 hex digits): its last group, 12 hex
/// digits (48 random bits in a v7 UUID, whose first 12 digits are its creation time).
fn uuid_tail(id: &str) -> Option<&str> {
    let b = id.as_bytes();
    if b.len() != 36 {
        return None;
    }
    let shaped = b.iter().enumerate().all(|(i, c)| {
        if matches!(i, 8 | 13 | 18 | 23) {
            *c == b'-'
        } else {
            c.is_ascii_hexdigit()
        }
    });
    shaped.then(|| &id[24..])
}

/// Whether `arg` is a short id taken from the random tail of the UUID-shaped `id`: 8 to 12
/// hex digits that end it.
pub(crate) fn id_has_tail(id: &str, arg: &str) -> bool {
    (SHORT_ID_MIN..=TAIL_MAX).contains(&arg.len())
        && arg.bytes().all(|c| c.is_ascii_hexdigit())
        && uuid_tail(id).is_some_and(|t| t.ends_with(arg))
}

/// The short ids of a set of sessions.
///
/// A UUID-shaped id (every id pi and the reference agent create) is shortened to the end of
/// its random tail: its last [`SHORT_ID_MIN`] hex digits, or up to 12 when another id of the
/// set ends the same way or starts with them. Its first digits are its creation time, shared
/// by every session made in the same minute, so a prefix that tells sessions apart today is
/// ambiguous after the next `pi session new`; the random end stays unique as sessions are
/// added (two of a million sessions share 32 random bits about once in 8,600 stores).
///
/// Any other id (one chosen with `--id`) is shortened as git abbreviates hashes: its
/// shortest prefix that no other id of the set starts with, at least [`SHORT_ID_MIN`]
/// characters and not ending in a dash.
///
/// [`resolve`] takes both, and any unique prefix of an id as before.
#[derive(Debug, Default)]
pub struct ShortIds {
    /// id → the byte range of its short id.
    spans: HashMap<String, (usize, usize)>,
}

impl ShortIds {
    pub fn new<'a>(ids: impl IntoIterator<Item = &'a str>) -> ShortIds {
        let mut sorted: Vec<&str> = ids.into_iter().collect();
        sorted.sort_unstable();
        sorted.dedup();
        let common =
            |a: &str, b: &str| a.chars().zip(b.chars()).take_while(|(x, y)| x == y).count();
        let mut spans = HashMap::with_capacity(sorted.len());
        // Prefixes, for ids that are not UUIDs: one shared with no neighbour in sorted order
        // is shared with no other id.
        for (i, id) in sorted.iter().enumerate() {
            if uuid_tail(id).is_some() {
                continue;
            }
            let before = i.checked_sub(1).map_or(0, |j| common(sorted[j], id));
            let after = sorted.get(i + 1).map_or(0, |next| common(id, next));
            let total = id.chars().count();
            let mut len = (before.max(after) + 1).max(SHORT_ID_MIN);
            if id.chars().nth(len.saturating_sub(1)) == Some('-') {
                len += 1;
            }
            let end = id
                .char_indices()
                .nth(len.min(total))
                .map_or(id.len(), |(e, _)| e);
            spans.insert((*id).to_owned(), (0, end));
        }
        // Tails, for UUIDs: neighbours in the order of the reversed tails share the longest
        // endings; a tail must also not begin any other id (prefixes resolve too).
        let mut tails: Vec<(String, &str)> = sorted
            .iter()
            .filter_map(|id| uuid_tail(id).map(|t| (t.chars().rev().collect(), *id)))
            .collect();
        tails.sort_unstable();
        let mut bare: Vec<String> = sorted.iter().map(|id| id.replace('-', "")).collect();
        bare.sort_unstable();
        let begins_another = |s: &str, own: &str| {
            let own = own.replace('-', "");
            let from = bare.partition_point(|b| b.as_str() < s);
            bare[from..]
                .iter()
                .take_while(|b| b.starts_with(s))
                .any(|b| *b != own)
        };
        for (i, (rev, id)) in tails.iter().enumerate() {
            let before = i.checked_sub(1).map_or(0, |j| common(&tails[j].0, rev));
            let after = tails.get(i + 1).map_or(0, |next| common(rev, &next.0));
            let mut len = (before.max(after) + 1).max(SHORT_ID_MIN);
            while len <= TAIL_MAX && begins_another(&id[id.len() - len..], id) {
                len += 1;
            }
            let span = if len <= TAIL_MAX {
                (id.len() - len, id.len())
            } else {
                (0, id.len())
            };
            spans.insert((*id).to_owned(), span);
        }
        ShortIds { spans }
    }

    /// The short ids of every session (every session directory), from their header lines.
    pub fn of_all(dirs: &Dirs) -> ShortIds {
        let headers: Vec<HeaderInfo> = all_session_dirs(dirs)
            .iter()
            .flat_map(|d| jsonl_files(d))
            .filter_map(|p| read_header(&p))
            .collect();
        ShortIds::new(headers.iter().map(|h| h.id.as_str()))
    }

    /// The short id of `id` (when the set lacks it: the last [`SHORT_ID_MIN`] digits of a
    /// UUID, the first [`SHORT_ID_MIN`] characters of anything else).
    pub fn get<'a>(&self, id: &'a str) -> &'a str {
        if let Some(&(start, end)) = self.spans.get(id) {
            return id.get(start..end).unwrap_or(id);
        }
        if uuid_tail(id).is_some() {
            return &id[id.len() - SHORT_ID_MIN..];
        }
        match id.char_indices().nth(SHORT_ID_MIN) {
            Some((end, _)) => &id[..end],
            None => id,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn short_ids_of_uuids_are_their_random_ends() {
        let ids = [
            "019b7ca9-1b2c-7aaa-8000-0000a0000001",
            "019b7ca9-1b2c-7aab-8000-0000b0000001",
            "019b7ca9-1b2d-7000-8000-000000000003",
            "019b7caa-0000-7000-8000-000000000004",
            "000003ab-0000-7000-8000-0000000003ab",
        ];
        let s = ShortIds::new(ids);
        // Two ending alike: as much more as tells them apart.
        assert_eq!(s.get(ids[0]), "a0000001");
        assert_eq!(s.get(ids[1]), "b0000001");
        assert_eq!(s.get(ids[2]), "00000003");
        assert_eq!(s.get(ids[3]), "00000004");
        // An end that begins another id (here its own) is fine; one that begins another
        // is made longer.
        assert_eq!(s.get(ids[4]), "000003ab");
        let t = ShortIds::new([ids[4], "000003ab-1111-7000-8000-000000000000"]);
        assert_eq!(t.get(ids[4]), "0000003ab");
        // Equal 12-digit ends: the whole id.
        let u = ShortIds::new([ids[3], "019b7cab-0000-7000-8000-000000000004"]);
        assert_eq!(u.get(ids[3]), ids[3]);
        // Not in the set.
        assert_eq!(s.get("019b7cab-0000-7000-8000-0000feedbeef"), "feedbeef");
        for id in ids {
            assert!(id_has_tail(id, s.get(id)) || s.get(id) == id);
        }
        assert!(!id_has_tail(ids[0], "0000001"));
        assert!(!id_has_tail("not-a-uuid-0000a0000001", "a0000001"));
    }

    #[test]
    fn short_ids_of_other_ids_are_the_shortest_unique_prefixes() {
        let ids = [
            "019b7ca9-1b2c-7aaa",
            "019b7ca9-1b2c-7aab",
            "019b7caa",
            "abc",
        ];
        let s = ShortIds::new(ids);
        assert_eq!(s.get(ids[0]), "019b7ca9-1b2c-7aaa");
        assert_eq!(s.get(ids[1]), "019b7ca9-1b2c-7aab");
        // Unique after 8 characters: 8 all the same.
        assert_eq!(s.get(ids[2]), "019b7caa");
        assert_eq!(s.get("abc"), "abc");
        // Never ending in the dash: one more character.
        let t = ShortIds::new(["01234567-a", "01234567-b", "01234568-c"]);
        assert_eq!(t.get("01234568-c"), "01234568");
        let u = ShortIds::new(["012345678", "01234567-b"]);
        assert_eq!(u.get("01234567-b"), "01234567-b");
        // An id not in the set, and one that is a prefix of another.
        assert_eq!(s.get("0123456789abcdef"), "01234567");
        let v = ShortIds::new(["0123456789", "0123456789ab"]);
        assert_eq!(v.get("0123456789"), "0123456789");
        assert_eq!(v.get("0123456789ab"), "0123456789a");
    }

    #[test]
    fn prefixes_may_leave_out_the_dashes() {
        let id = "019b7ca9-1b2c-7aaa-8000-000000000001";
        assert!(id_has_prefix(id, "019b7ca9"));
        assert!(id_has_prefix(id, "019b7ca9-1b2"));
        assert!(id_has_prefix(id, "019b7ca91b2c7a"));
        assert!(!id_has_prefix(id, "019b7ca91b2d"));
        assert!(!id_has_prefix(id, "019b7ca9-1b2c7"));
        assert!(!id_has_prefix("plain", "pl-"));
    }
}
