//! Commands: one module per leaf command (its arguments, then `run`), one folder per group.
//! Besides the commands: [`args`] holds the option groups several commands flatten into
//! theirs, and [`watch`] what a summarizing command shows on stderr. No command module
//! imports another.

pub mod args;
pub mod compact;
pub mod completions;
pub mod context;
pub mod external;
pub mod generate;
pub mod help;
pub mod man;
pub mod models;
pub mod prompt;
pub mod run;
pub mod session;
pub mod trust;
pub mod usage;
pub mod watch;

use std::io::IsTerminal;
use std::path::{Path, PathBuf};

use anyhow::Context;

use crate::output::Out;
use pi_base::config::{self, Dirs};
use pi_session::Session;
use pi_session::find::{self, Named};
use pi_session::scan::Visit;
use pi_session::store::{self, Source};

/// What every command gets: resolved directories, the working directory and stdout.
pub struct Ctx {
    pub dirs: Dirs,
    pub cwd: PathBuf,
    pub out: Out,
}

impl Ctx {
    pub fn new(session_dir: Option<&Path>) -> anyhow::Result<Ctx> {
        let cwd = config::current_dir().context("cannot determine the current directory")?;
        let dirs = Dirs::resolve(session_dir, &cwd);
        for w in &dirs.warnings {
            crate::error::warn(w);
        }
        Ok(Ctx {
            dirs,
            cwd,
            out: Out::stdout(),
        })
    }

    /// The working directory as a string (for session directories and headers).
    pub fn cwd_str(&self) -> String {
        self.cwd.to_string_lossy().into_owned()
    }

    /// `--cwd D` made absolute, or the current directory.
    pub fn cwd_arg(&self, arg: Option<&Path>) -> anyhow::Result<String> {
        match arg {
            None => Ok(self.cwd_str()),
            Some(p) => Ok(config::absolute_dir(&self.cwd.join(p))
                .with_context(|| format!("invalid directory {}", p.display()))?
                .to_string_lossy()
                .into_owned()),
        }
    }

    /// Resolves a session argument (path, id, id prefix, or when absent the most recent of
    /// the cwd; an empty one is an error, and so is `-`: stdin cannot be written to).
    pub fn session_path(&self, arg: Option<&str>) -> anyhow::Result<PathBuf> {
        Ok(find::resolve(arg, &self.dirs, &self.cwd_str())?)
    }

    /// The session of a command that only reads it: as [`Ctx::session_path`] resolves it,
    /// or for `-` a copy of stdin (an unnamed private temporary file that messages call
    /// `(stdin)`), which is read as it is: no recovery, no caches.
    pub fn session_source(&self, arg: Option<&str>) -> anyhow::Result<Source> {
        match find::resolve_reading(arg, &self.dirs, &self.cwd_str())? {
            Named::File(path) => Ok(Source::File(path)),
            Named::Stdin => {
                let stdin = std::io::stdin();
                if stdin.is_terminal() {
                    crate::error::note("reading the session from the terminal (end with Ctrl-D)");
                }
                let file = store::spool(stdin.lock())
                    .context("cannot copy the session from stdin to a temporary file")?;
                Ok(Source::Spooled {
                    file,
                    name: PathBuf::from(find::STDIN_NAME),
                })
            }
        }
    }

    /// Opens a session for reading, warning about skipped lines. A large file unchanged
    /// since it was last opened takes its index from the cache (see
    /// [`pi_session::index_cache`]).
    pub fn open(&self, path: &Path) -> anyhow::Result<Session> {
        let s = self.open_unrecorded(path)?;
        s.record_index();
        Ok(s)
    }

    /// [`Ctx::open`] that leaves recording a new index of the file to the caller
    /// ([`Session::record_index`]).
    pub fn open_unrecorded(&self, path: &Path) -> anyhow::Result<Session> {
        let cache = self.dirs.agent_dir.join("cache").join("session-index");
        let s = Session::open_unrecorded(path, &cache)?;
        for w in s.skipped_warnings() {
            crate::error::warn(&w);
        }
        Ok(s)
    }

    /// [`Ctx::open`] for a session file or a copy of stdin, running `visitor` over the
    /// entries as it indexes them (a file opened without a visitor goes through
    /// [`Ctx::open`] and its index cache).
    pub fn open_source<V: Visit>(
        &self,
        source: Source,
        visitor: V,
    ) -> anyhow::Result<(Session, V)> {
        if V::NOTHING
            && let Source::File(path) = &source
        {
            return Ok((self.open(path)?, visitor));
        }
        let (s, v) = Session::open_source(source, visitor)?;
        for w in s.skipped_warnings() {
            crate::error::warn(&w);
        }
        Ok((s, v))
    }
}
