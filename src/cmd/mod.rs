//! Commands: the clap command tree ([`Cli`], [`Command`]) and its dispatch ([`run`]); one
//! module per leaf command (its arguments, then `run`), one folder per group.
//! Besides the commands: [`args`] holds the option groups several commands flatten into
//! theirs, and [`watch`] what a summarizing command shows on stderr. No command module
//! imports another.

pub mod args;
pub mod chat;
pub mod compact;
pub mod completions;
pub mod context;
pub mod external;
pub mod generate;
pub mod help;
pub mod man;
pub mod models;
pub mod pages;
pub mod prompt;
pub mod run;
pub mod session;
pub mod trust;
pub mod usage;
pub mod watch;

use std::ffi::OsString;
use std::io::IsTerminal;
use std::path::{Path, PathBuf};

use anyhow::Context;
use clap::{Parser, Subcommand};

use crate::error::ExitStatus;
use crate::output::{ColorWhen, Out};
use pi_base::config::{self, Dirs};
use pi_session::Session;
use pi_session::find::{self, Named};
use pi_session::scan::Visit;
use pi_session::store::{self, Source};

/// The heading of the options every command takes, listed after the command's own.
const GLOBAL: &str = "Global options";

pub const EXIT_STATUS: &str = "\
Exit status:
  0  success
  1  the operation failed (I/O error, nothing found where something was required)
  2  usage error or invalid input (nothing was written)";

#[derive(Debug, Parser)]
#[command(
    name = "pi",
    version,
    about = "Scriptable memory for coding agents",
    long_about = "Scriptable memory for coding agents.\n\n\
        A session is an append-only JSONL file whose entries form a tree (id/parentId): \
        branches without copies, summaries instead of deletions. Every pi command reads \
        and writes JSONL on stdin/stdout, so sessions can be scripted with pipes, jq and \
        cron. The files are those of the pi coding agent (@mariozechner/pi-coding-agent): \
        each opens in the other.\n\n\
        `pi foo` runs `pi-foo` from PATH when foo is not a built-in command. \
        `pi help COMMAND` and `man pi-COMMAND` describe a command; `pi completions SHELL` \
        prints a completion script, `pi man --out DIR` installs the manual pages.",
    after_long_help = EXIT_STATUS,
    propagate_version = true,
    disable_version_flag = true,
    max_term_width = 100
)]
pub struct Cli {
    /// Keep sessions in DIR instead of the per-project directory under the agent directory
    ///
    /// Also set by PI_CODING_AGENT_SESSION_DIR or the `sessionDir` setting. The agent
    /// directory is PI_CODING_AGENT_DIR, or ~/.pi/agent.
    #[arg(long, global = true, value_name = "DIR", help_heading = GLOBAL)]
    pub session_dir: Option<PathBuf>,

    /// When human output is colored: auto (on a terminal, unless NO_COLOR is set), always
    /// (also into pipes and files), never
    #[arg(
        long,
        global = true,
        value_enum,
        value_name = "WHEN",
        default_value_t = ColorWhen::Auto,
        hide_possible_values = true,
        help_heading = GLOBAL
    )]
    pub color: ColorWhen,

    /// Print the version
    #[arg(short = 'V', long, global = true, action = clap::ArgAction::Version, help_heading = GLOBAL)]
    version: Option<bool>,

    #[command(subcommand)]
    pub command: Command,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Create, read, extend and check session files
    #[command(after_long_help = EXIT_STATUS)]
    Session(session::SessionArgs),
    /// Expand prompt templates and skills, list them, and assemble the system prompt
    #[command(after_long_help = EXIT_STATUS)]
    Prompt(prompt::PromptArgs),
    /// Build the context a model sees from a session, and measure it
    #[command(after_long_help = EXIT_STATUS)]
    Context(context::ContextArgs),
    /// Summarize older entries of a session with a model, from the shell or cron
    #[command(after_long_help = compact::EXIT_STATUS)]
    Compact(compact::CompactArgs),
    /// Tokens and cost of every model call a session records, by day, week, month, session, model
    /// or project
    #[command(after_long_help = EXIT_STATUS)]
    Usage(usage::UsageArgs),
    /// List the configured models
    #[command(after_long_help = EXIT_STATUS)]
    Models(models::ModelsArgs),
    /// Run the agent: send a prompt, let the model use tools, and record it all in a session
    #[command(after_long_help = run::EXIT_STATUS)]
    Run(run::RunArgs),
    /// Talk with the agent in the terminal: the loop of `pi run`, a line editor, slash
    /// commands
    #[command(after_long_help = chat::EXIT_STATUS)]
    Chat(chat::ChatArgs),
    /// Let a project's own hooks and tools (its .pi/) run, list trusted projects, revoke
    ///
    /// Hooks in a project's .pi/settings.json, its program tools (.pi/tools/) and its
    /// shellEnvironmentPolicy are used only after `pi trust DIR`, and only while
    /// .pi/settings.json and the files under .pi/tools/ and .pi/hooks/ are those that were
    /// trusted. Global hooks and tools, and those given with --hook and --tool, always run.
    /// Trusted projects are kept in <agent dir>/trust.json.
    #[command(after_long_help = trust::EXIT_STATUS)]
    Trust(trust::TrustArgs),
    /// Print the completion script of a shell: bash, zsh, fish, elvish or powershell
    ///
    /// The script completes commands and options, and the values that depend on the
    /// machine: session ids (and paths), the entry ids of the session on the command line
    /// (--leaf, branch, label, fork), models (--model), entry types (--type), template and
    /// skill names (`pi prompt expand /`), hook events (--hook). At every TAB the shell
    /// asks the `pi` on PATH (with PI_COMPLETE set), which only reads.
    #[command(after_long_help = EXIT_STATUS)]
    Completions(completions::CompletionsArgs),
    /// Write the manual pages into a directory: DIR/man1/pi.1, DIR/man1/pi-session.1, …
    #[command(after_long_help = EXIT_STATUS)]
    Man(man::ManArgs),
    /// Write the man pages and shell completions (for packagers and the repository)
    #[command(hide = true)]
    Generate(generate::GenerateArgs),
    #[command(external_subcommand)]
    External(Vec<OsString>),
}

pub fn run(cli: Cli) -> anyhow::Result<ExitStatus> {
    let dir = cli.session_dir.as_deref();
    match cli.command {
        Command::External(args) => external::run(args),
        Command::Generate(args) => generate::run(args),
        Command::Completions(args) => completions::run(args, &mut std::io::stdout().lock()),
        Command::Man(args) => man::run(args),
        Command::Session(args) => with_ctx(dir, |ctx| session::run(args, ctx)),
        Command::Prompt(args) => with_ctx(dir, |ctx| prompt::run(args, ctx)),
        Command::Context(args) => with_ctx(dir, |ctx| context::run(args, ctx)),
        Command::Compact(args) => with_ctx(dir, |ctx| compact::run(args, ctx)),
        Command::Run(args) => with_ctx(dir, |ctx| run::run(args, ctx)),
        Command::Chat(args) => with_ctx(dir, |ctx| chat::run(args, ctx)),
        Command::Models(args) => with_ctx(dir, |ctx| models::run(args, ctx)),
        Command::Usage(args) => with_ctx(dir, |ctx| usage::run(args, ctx)),
        Command::Trust(args) => with_ctx(dir, |ctx| trust::run(args, ctx)),
    }
}

/// Runs a command with the directories, working directory and stdout it works with.
fn with_ctx(
    session_dir: Option<&std::path::Path>,
    f: impl FnOnce(&mut Ctx) -> anyhow::Result<ExitStatus>,
) -> anyhow::Result<ExitStatus> {
    let mut ctx = Ctx::new(session_dir)?;
    let status = f(&mut ctx)?;
    ctx.out.flush()?;
    Ok(status)
}

/// The clap command tree (for man pages, completions and tests).
pub fn command() -> clap::Command {
    pages::decorate(<Cli as clap::CommandFactory>::command(), "pi")
}

/// The directories of a command run in `cwd`: the project's `sessionDir` applies only when
/// the project is trusted (`pi trust`); otherwise it is ignored, with a one-line warning
/// when `tell` (issue 30: a cloned repository must not record your conversations inside
/// itself, ready to be committed).
pub fn resolve_dirs(flag: Option<&Path>, cwd: &Path, tell: bool) -> Dirs {
    let mut dirs = Dirs::resolve(flag, cwd);
    if let Some(project) = dirs.project_session_dir.take() {
        if dirs.session_dir.as_ref() == Some(&project) {
            return dirs;
        }
        let trusted = matches!(
            pi_tools::trust::Store::new(&dirs.agent_dir).status(cwd),
            Ok(pi_tools::trust::Status::Trusted)
        );
        if trusted {
            dirs.session_dir = Some(project);
        } else if tell {
            let file = cwd.join(".pi").join("settings.json");
            dirs.warnings.push(format!(
                "ignoring sessionDir in {}: the project is not trusted; review it, then run `pi trust {}`",
                file.display(),
                shell_words::quote(&cwd.to_string_lossy())
            ));
        }
    }
    dirs
}

/// The session `PI_SESSION` names, if set (to something other than blanks).
pub fn session_env() -> Option<String> {
    std::env::var(find::SESSION_ENV)
        .ok()
        .filter(|v| !v.trim().is_empty())
}

/// What every command gets: resolved directories, the working directory and stdout.
pub struct Ctx {
    pub dirs: Dirs,
    pub cwd: PathBuf,
    pub out: Out,
}

impl Ctx {
    pub fn new(session_dir: Option<&Path>) -> anyhow::Result<Ctx> {
        let cwd = config::current_dir().context("cannot determine the current directory")?;
        let dirs = resolve_dirs(session_dir, &cwd, true);
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
        Ok(self.choose_session(arg, &self.cwd_str())?.0)
    }

    /// The session a command works on and where it came from (see [`find::choose`]): the
    /// argument, `PI_SESSION`, the session pinned for `cwd`, the most recent one of `cwd`.
    pub fn choose_session(
        &self,
        arg: Option<&str>,
        cwd: &str,
    ) -> Result<(PathBuf, find::Chosen), find::FindError> {
        find::choose(arg, session_env().as_deref(), &self.dirs, cwd)
    }

    /// The session of a command that only reads it: as [`Ctx::session_path`] resolves it,
    /// or for `-` a copy of stdin (an unnamed private temporary file that messages call
    /// `(stdin)`), which is read as it is: no recovery, no caches.
    pub fn session_source(&self, arg: Option<&str>) -> anyhow::Result<Source> {
        match find::choose_reading(arg, session_env().as_deref(), &self.dirs, &self.cwd_str())? {
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

#[cfg(test)]
mod tests {
    #[test]
    fn verify_cli() {
        super::command().debug_assert();
    }
}
