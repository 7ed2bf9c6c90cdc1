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

use std::path::{Path, PathBuf};

use anyhow::Context;

use crate::config::{self, Dirs};
use crate::output::Out;
use crate::session::{Session, find};

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
    /// the cwd; an empty one is an error).
    pub fn session_path(&self, arg: Option<&str>) -> anyhow::Result<PathBuf> {
        Ok(find::resolve(arg, &self.dirs, &self.cwd_str())?)
    }

    /// Opens a session for reading, warning about skipped lines.
    pub fn open(&self, path: &Path) -> anyhow::Result<Session> {
        let s = Session::open(path)?;
        for w in s.skipped_warnings() {
            crate::error::warn(&w);
        }
        Ok(s)
    }
}
