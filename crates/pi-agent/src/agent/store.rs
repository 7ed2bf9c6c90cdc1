//! Recording a run: one writer lock on the session file for the whole run, and every
//! finished message appended through it as it completes (one write and one `fsync` each),
//! so an interrupted run leaves a valid file that resumes where it stopped. Entries chain
//! from the run's own leaf (the leaf of the file, or `--leaf`).
//!
//! The lock keeps other pi processes out, not other programs: before every entry the
//! appender looks at the end of the file again, so a line a hook or tool left incomplete
//! meanwhile (`printf X >> "$PI_SESSION_FILE"`) is ended first instead of having the entry
//! glued to it, and each entry is bracketed by the pending-append marker like any batch
//! (an entry whose write was cut short is recovered before the next one).
//!
//! A run without a session (`--no-session`) records nothing.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use serde_json::json;

use super::Message;
use crate::compact::CompactionResult;
use crate::compact::{self, Budget, NoPlan, Plan};
use pi_ai::value::Value;
use pi_base::{clock, ids as rng, js, json};
use pi_session::Session;
use pi_session::append::{AppendError, Appender, NewEntry, Parent};
use pi_session::entry::jstr;

/// Why the session could not be opened for the run.
#[derive(Debug, thiserror::Error)]
pub enum OpenError {
    #[error("{} is in use by another process (another `pi run`?)", .0.display())]
    Busy(PathBuf),
    #[error(transparent)]
    Append(#[from] AppendError),
}

/// Why recording a run or reading its session failed.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    /// An entry could not be appended.
    #[error("cannot record the run in {}", path.display())]
    Record {
        path: PathBuf,
        #[source]
        source: AppendError,
    },
    /// The session could not be opened again to read it.
    #[error("cannot read {}", path.display())]
    Open {
        path: PathBuf,
        #[source]
        source: pi_session::store::OpenError,
    },
    /// Its entries could not be read.
    #[error("cannot read {}", path.display())]
    Read {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    /// A new session file could not be created.
    #[error(transparent)]
    Create(#[from] pi_base::fs::FileError),
}

/// The session file a run writes to, locked while the run lasts.
pub struct FileStore {
    appender: Appender,
    path: PathBuf,
    agent_dir: PathBuf,
    /// The entry new entries attach to.
    leaf: Option<String>,
}

impl FileStore {
    /// Locks the session for writing. Another writer's short append is waited for (up to
    /// `wait`); a file held longer (another run) is [`OpenError::Busy`].
    pub fn open(path: &Path, agent_dir: &Path, wait: Duration) -> Result<FileStore, OpenError> {
        let start = Instant::now();
        loop {
            if let Some(appender) = Appender::try_open(path, Some(agent_dir))? {
                let leaf = appender.leaf.as_ref().map(|l| l.as_str().to_owned());
                return Ok(FileStore {
                    appender,
                    path: path.to_owned(),
                    agent_dir: agent_dir.to_owned(),
                    leaf,
                });
            }
            if start.elapsed() >= wait {
                return Err(OpenError::Busy(path.to_owned()));
            }
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    pub fn leaf(&self) -> Option<&str> {
        self.leaf.as_deref()
    }

    /// Attaches the next entries to `leaf` (`None`: a new root).
    pub fn set_leaf(&mut self, leaf: Option<String>) {
        self.leaf = leaf;
    }

    /// Appends one entry under the leaf, which it becomes; returns the line written.
    pub fn append(
        &mut self,
        ty: &str,
        fields: Vec<(&str, Vec<u8>)>,
    ) -> Result<Vec<u8>, StoreError> {
        self.append_at(ty, fields, pi_base::clock::now_ms())
    }

    /// [`Store::append`] with the entry's `timestamp` at `now_ms`.
    fn append_at(
        &mut self,
        ty: &str,
        fields: Vec<(&str, Vec<u8>)>,
        now_ms: i64,
    ) -> Result<Vec<u8>, StoreError> {
        let parent = match &self.leaf {
            Some(l) => Parent::Id(l.clone()),
            None => Parent::Root,
        };
        let mut e = NewEntry::new(ty, parent);
        for (k, v) in fields {
            e = e.field(k, v);
        }
        let mut lines =
            self.appender
                .append_at(&[e], now_ms)
                .map_err(|source| StoreError::Record {
                    path: self.path.clone(),
                    source,
                })?;
        self.leaf = self.appender.leaf.as_ref().map(|l| l.as_str().to_owned());
        Ok(lines.pop().unwrap_or_default())
    }

    pub fn append_message(&mut self, m: &Message) -> Result<(), StoreError> {
        self.append("message", vec![("message", m.to_json())])
            .map(drop)
    }

    /// Records a `custom` agent message (one a hook added) as a `custom_message` entry.
    pub(crate) fn append_custom_message(&mut self, m: &Message) -> Result<(), StoreError> {
        let mut fields = Vec::new();
        for k in ["customType", "content", "display", "details"] {
            if let Some(v) = m.get(k) {
                fields.push((k, v.to_json()));
            }
        }
        self.append("custom_message", fields).map(drop)
    }

    pub fn append_model_change(
        &mut self,
        provider: &str,
        model_id: &str,
    ) -> Result<(), StoreError> {
        self.append(
            "model_change",
            vec![("provider", jstr(provider)), ("modelId", jstr(model_id))],
        )
        .map(drop)
    }

    pub fn append_thinking_level(&mut self, level: &str) -> Result<(), StoreError> {
        self.append(
            "thinking_level_change",
            vec![("thinkingLevel", jstr(level))],
        )
        .map(drop)
    }

    /// The session as it is on disk now.
    fn session(&self) -> Result<Session, StoreError> {
        Session::open(&self.path).map_err(|source| StoreError::Open {
            path: self.path.clone(),
            source,
        })
    }

    /// The index of the run's leaf in `s`.
    fn leaf_index(&self, s: &Session) -> Option<u32> {
        self.leaf.as_deref().and_then(|l| s.get(l))
    }

    /// The compaction plan for the path to the run's leaf.
    pub(crate) fn compaction_plan(
        &self,
        budget: Budget,
    ) -> Result<Result<Plan, NoPlan>, StoreError> {
        let s = self.session()?;
        let Some(leaf) = self.leaf_index(&s) else {
            return Ok(Err(NoPlan::TooSmall));
        };
        compact::prepare(&s, leaf, budget).map_err(|source| StoreError::Read {
            path: self.path.clone(),
            source,
        })
    }

    /// Appends a `compaction` entry under the leaf.
    /// Appends a `compaction` entry under the leaf, with the summary requests' `usage` and
    /// the `systemMessage` in effect (`system`) as the reference 1.6 writes them.
    pub(crate) fn append_compaction(
        &mut self,
        c: &CompactionResult,
        from_hook: bool,
        system: Option<&pi_ai::value::Value>,
    ) -> Result<(), StoreError> {
        use crate::compact::record::{system_field, usage_field};
        let now = pi_base::clock::now_ms();
        let mut fields = vec![
            ("summary", jstr(&c.summary)),
            ("firstKeptEntryId", jstr(&c.first_kept_entry_id)),
            ("tokensBefore", js::number(c.tokens_before).into_bytes()),
            ("details", js::stringify(&c.details)),
        ];
        if let Some(u) = c.usage.as_deref().and_then(usage_field) {
            fields.push(("usage", u));
        }
        fields.push((
            "fromHook",
            if from_hook {
                b"true".to_vec()
            } else {
                b"false".to_vec()
            },
        ));
        if let Some(sys) = system_field(system, now) {
            fields.push(("systemMessage", sys));
        }
        self.append_at("compaction", fields, now).map(drop)
    }

    /// The agent messages of the path to the leaf (after a compaction), and the time of the
    /// latest compaction on it.
    pub fn context(&self) -> Result<(Vec<Message>, Option<i64>), StoreError> {
        let s = self.session()?;
        let leaf = self.leaf_index(&s);
        let c = crate::context::build(&s, leaf).map_err(|source| StoreError::Read {
            path: self.path.clone(),
            source,
        })?;
        let t = c.info.compaction.and_then(|i| compaction_time(&s, i));
        Ok((c.messages, t))
    }

    pub fn agent_dir(&self) -> &Path {
        &self.agent_dir
    }
}

/// The time of a compaction entry (`timestamp`, Unix milliseconds).
pub fn compaction_time(s: &Session, entry: u32) -> Option<i64> {
    let line = s.line(entry).ok()?;
    let ts = json::get_str(&line, "timestamp")?;
    clock::parse_iso(&ts)
}

/// The header of a new session of `cwd` (version 3, a new v7 id, now).
pub fn new_header(cwd: &str) -> (String, Vec<u8>, i64) {
    let now = clock::now_ms();
    let mut rng = rng::Rng::new(|| now as u64);
    let id = rng.uuid_v7(now);
    let mut header = Vec::new();
    header.extend_from_slice(b"{\"type\":\"session\",\"version\":3,\"id\":");
    json::write_str(&mut header, &id);
    header.extend_from_slice(b",\"timestamp\":");
    json::write_str(&mut header, &clock::format_iso(now));
    header.extend_from_slice(b",\"cwd\":");
    json::write_str(&mut header, cwd);
    header.push(b'}');
    (id, header, now)
}

/// Creates a new session file of `cwd` in `dir` (the header only, written at once) and
/// returns its path and header line.
pub fn create(dir: &Path, cwd: &str) -> Result<(PathBuf, Vec<u8>), StoreError> {
    let (id, header, now) = new_header(cwd);
    let path = dir.join(format!("{}_{id}.jsonl", clock::file_stamp(now)));
    let _private = pi_base::fs::PrivateUmask::set(); // 0600 (new folders 0700)
    pi_base::fs::write_with(&path, false, |w| {
        w.write_all(&header)?;
        w.write_all(b"\n")
    })
    .map_err(pi_base::fs::FileError::of("create", &path))?;
    Ok((path, header))
}

/// A `details` object for a compaction's file lists.
pub(crate) fn file_details(read: &[String], modified: &[String]) -> serde_json::Value {
    json!({"readFiles": read, "modifiedFiles": modified})
}

/// Whether a message is an assistant message.
pub fn is_assistant(m: &Message) -> bool {
    m.get("role").is_some_and(|r| r.is_str("assistant"))
}

/// `role` of a message.
pub fn role(m: &Message) -> Option<std::borrow::Cow<'_, str>> {
    m.get("role").and_then(Value::as_jstr).map(|r| r.text())
}
