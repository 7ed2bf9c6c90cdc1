//! The command-line interface: the clap command tree, dispatch, and the process's exit.

use std::ffi::OsString;
use std::io::{IsTerminal, Write};
use std::path::PathBuf;

use clap::{Parser, Subcommand};

use crate::cmd;
use crate::error::{self, ExitStatus};

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
        `pi foo` runs `pi-foo` from PATH when foo is not a built-in command.",
    after_long_help = EXIT_STATUS,
    propagate_version = true,
    disable_help_subcommand = true,
    max_term_width = 100
)]
pub struct Cli {
    /// Keep sessions in DIR instead of the per-project directory under the agent directory
    ///
    /// Also set by PI_CODING_AGENT_SESSION_DIR or the `sessionDir` setting. The agent
    /// directory is PI_CODING_AGENT_DIR, or ~/.pi/agent.
    #[arg(long, global = true, value_name = "DIR")]
    pub session_dir: Option<PathBuf>,

    #[command(subcommand)]
    pub command: Command,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Create, read, extend and check session files
    #[command(after_long_help = EXIT_STATUS)]
    Session(cmd::session::SessionArgs),
    /// Expand prompt templates and skills, list them, and assemble the system prompt
    #[command(after_long_help = EXIT_STATUS)]
    Prompt(cmd::prompt::PromptArgs),
    /// Build the context a model sees from a session, and measure it
    #[command(after_long_help = EXIT_STATUS)]
    Context(cmd::context::ContextArgs),
    /// Summarize older entries of a session with a model, from the shell or cron
    #[command(after_long_help = cmd::compact::EXIT_STATUS)]
    Compact(cmd::compact::CompactArgs),
    /// List the configured models
    #[command(after_long_help = EXIT_STATUS)]
    Models(cmd::models::ModelsArgs),
    /// Run the agent: send a prompt, let the model use tools, and record it all in a session
    #[command(after_long_help = cmd::run::EXIT_STATUS)]
    Run(cmd::run::RunArgs),
    /// Let a project's own hooks and tools (its .pi/) run, list trusted projects, revoke
    ///
    /// Hooks in a project's .pi/settings.json, its program tools (.pi/tools/) and its
    /// shellEnvironmentPolicy are used only after `pi trust DIR`, and only while
    /// .pi/settings.json and the files under .pi/tools/ and .pi/hooks/ are those that were
    /// trusted. Global hooks and tools, and those given with --hook and --tool, always run.
    /// Trusted projects are kept in <agent dir>/trust.json.
    #[command(after_long_help = cmd::trust::EXIT_STATUS)]
    Trust(cmd::trust::TrustArgs),
    /// Write the man pages and shell completions (for packagers and the repository)
    #[command(hide = true)]
    Generate(cmd::generate::GenerateArgs),
    #[command(external_subcommand)]
    External(Vec<OsString>),
}

/// Parses the arguments, runs the command and returns the exit status.
pub fn main() -> u8 {
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        Err(e) => return clap_error(&e),
    };
    crate::session::pending::on_recover(|r| {
        let restored = match &r.leaf {
            Some(l) => format!("the leaf is back at {l}"),
            None => "the leaf is back at the start".to_owned(),
        };
        error::note(&format!(
            "{}: recovered an interrupted append: the {} whole {} it left (bytes {}\u{2013}{}) are now an abandoned branch; {restored} (entry {})",
            r.path.display(),
            r.entries,
            if r.entries == 1 { "entry" } else { "entries" },
            r.start,
            r.end,
            r.id
        ));
    });
    crate::session::append::on_wait(|path| {
        if std::io::stderr().is_terminal() {
            error::note(&format!(
                "waiting for another writer to release {}",
                path.display()
            ));
        }
    });
    match run(cli) {
        Ok(status) => status.code(),
        Err(e) => error::report(&e).code(),
    }
}

/// Prints a parse error of clap's the way pi prints its own errors (`pi: error: …`, then
/// the usage and hints indented); help and version go out as clap writes them.
fn clap_error(e: &clap::Error) -> u8 {
    use clap::error::ErrorKind;
    let code = u8::try_from(e.exit_code()).unwrap_or(ExitStatus::Usage.code());
    if matches!(
        e.kind(),
        ErrorKind::DisplayHelp
            | ErrorKind::DisplayVersion
            | ErrorKind::DisplayHelpOnMissingArgumentOrSubcommand
    ) {
        let _ = e.print();
        return code;
    }
    let text = e.render().to_string();
    let mut out = String::new();
    for line in text.lines().map(str::trim_end).filter(|l| !l.is_empty()) {
        if let Some(rest) = line.strip_prefix("error: ") {
            out.push_str(&format!("pi: error: {rest}\n"));
        } else if let Some(rest) = line.strip_prefix("Usage: ") {
            out.push_str(&format!("  usage: {rest}\n"));
        } else if let Some(rest) = line.trim_start().strip_prefix("tip: ") {
            out.push_str(&format!("  hint: {rest}\n"));
        } else if let Some(rest) = line.strip_prefix("For more information, try ") {
            let rest = rest.trim_end_matches('.');
            out.push_str(&format!("  hint: for more information, try {rest}\n"));
        } else {
            out.push_str(&format!("  {}\n", line.trim_start()));
        }
    }
    let _ = std::io::stderr().lock().write_all(out.as_bytes());
    code
}

pub fn run(cli: Cli) -> anyhow::Result<ExitStatus> {
    let dir = cli.session_dir.as_deref();
    match cli.command {
        Command::External(args) => cmd::external::run(args),
        Command::Generate(args) => cmd::generate::run(args),
        Command::Session(args) => with_ctx(dir, |ctx| cmd::session::run(args, ctx)),
        Command::Prompt(args) => with_ctx(dir, |ctx| cmd::prompt::run(args, ctx)),
        Command::Context(args) => with_ctx(dir, |ctx| cmd::context::run(args, ctx)),
        Command::Compact(args) => with_ctx(dir, |ctx| cmd::compact::run(args, ctx)),
        Command::Run(args) => with_ctx(dir, |ctx| cmd::run::run(args, ctx)),
        Command::Models(args) => with_ctx(dir, |ctx| cmd::models::run(args, ctx)),
        Command::Trust(args) => with_ctx(dir, |ctx| cmd::trust::run(args, ctx)),
    }
}

/// Runs a command with the directories, working directory and stdout it works with.
fn with_ctx(
    session_dir: Option<&std::path::Path>,
    f: impl FnOnce(&mut cmd::Ctx) -> anyhow::Result<ExitStatus>,
) -> anyhow::Result<ExitStatus> {
    let mut ctx = cmd::Ctx::new(session_dir)?;
    let status = f(&mut ctx)?;
    ctx.out.flush()?;
    Ok(status)
}

/// The clap command tree (for man pages, completions and tests).
pub fn command() -> clap::Command {
    <Cli as clap::CommandFactory>::command()
}

#[cfg(test)]
mod tests {
    #[test]
    fn verify_cli() {
        super::command().debug_assert();
    }
}
