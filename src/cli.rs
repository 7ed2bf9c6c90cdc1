//! The command-line interface: the clap command tree, dispatch, and the process's exit.

use std::ffi::OsString;
use std::path::PathBuf;

use clap::{Parser, Subcommand};

use crate::cmd;
use crate::error;

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
        Err(e) => {
            let code = e.exit_code();
            let _ = e.print();
            return u8::try_from(code).unwrap_or(error::USAGE);
        }
    };
    match run(cli) {
        Ok(code) => code,
        Err(e) => error::report(&e),
    }
}

pub fn run(cli: Cli) -> anyhow::Result<u8> {
    match cli.command {
        Command::External(args) => cmd::external::run(args),
        Command::Generate(args) => cmd::generate::run(args),
        Command::Session(args) => {
            let mut ctx = cmd::Ctx::new(cli.session_dir.as_deref())?;
            let code = cmd::session::run(args, &mut ctx)?;
            ctx.out.flush()?;
            Ok(code)
        }
        Command::Prompt(args) => {
            let mut ctx = cmd::Ctx::new(cli.session_dir.as_deref())?;
            let code = cmd::prompt::run(args, &mut ctx)?;
            ctx.out.flush()?;
            Ok(code)
        }
        Command::Context(args) => {
            let mut ctx = cmd::Ctx::new(cli.session_dir.as_deref())?;
            let code = cmd::context::run(args, &mut ctx)?;
            ctx.out.flush()?;
            Ok(code)
        }
        Command::Compact(args) => {
            let mut ctx = cmd::Ctx::new(cli.session_dir.as_deref())?;
            let code = cmd::compact::run(args, &mut ctx)?;
            ctx.out.flush()?;
            Ok(code)
        }
        Command::Run(args) => {
            let mut ctx = cmd::Ctx::new(cli.session_dir.as_deref())?;
            let code = cmd::run::run(args, &mut ctx)?;
            ctx.out.flush()?;
            Ok(code)
        }
        Command::Models(args) => {
            let mut ctx = cmd::Ctx::new(cli.session_dir.as_deref())?;
            let code = cmd::models::run(args, &mut ctx)?;
            ctx.out.flush()?;
            Ok(code)
        }
    }
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
