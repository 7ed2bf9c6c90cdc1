//! `pi session …`

pub mod append;
pub mod branch;
pub mod check;
mod edit;
pub mod export;
pub mod fork;
pub mod gc;
pub mod import;
mod label;
pub mod list;
pub mod log;
pub mod migrate;
pub mod name;
pub mod new;
pub mod resume;
pub mod search;
pub mod show;
pub mod tree;
pub mod use_;

use crate::error::ExitStatus;
use clap::{Args, Subcommand};

use super::Ctx;
use crate::cmd::EXIT_STATUS;

#[derive(Debug, Args)]
#[command(subcommand_required = true, arg_required_else_help = true)]
pub struct SessionArgs {
    #[command(subcommand)]
    pub command: SessionCommand,
}

/// Where a SESSION argument is accepted, it is a path to a .jsonl file, a session id or a
/// unique prefix of one (the current project is searched first, then all projects), or, when
/// omitted, the current session: PI_SESSION, the pin of `pi session use`, else the most
/// recently modified session of the current directory.
#[derive(Debug, Subcommand)]
pub enum SessionCommand {
    /// Create a session file and print its path
    #[command(after_long_help = EXIT_STATUS)]
    New(new::NewArgs),
    /// List sessions, newest first
    #[command(after_long_help = EXIT_STATUS)]
    List(list::ListArgs),
    /// Print entries as JSONL: the active path from root to leaf, or all of them
    #[command(after_long_help = EXIT_STATUS)]
    Log(log::LogArgs),
    /// Append entries or messages read as JSONL from stdin
    #[command(after_long_help = EXIT_STATUS)]
    Append(append::AppendArgs),
    /// Move the session's leaf to an earlier entry, optionally with a summary of what is left
    #[command(after_long_help = EXIT_STATUS)]
    Branch(branch::BranchArgs),
    /// Show the whole entry tree
    #[command(after_long_help = EXIT_STATUS)]
    Tree(tree::TreeArgs),
    /// Show the conversation of the active path as people read it
    #[command(after_long_help = EXIT_STATUS)]
    Show(show::ShowArgs),
    /// Export the session as a self-contained HTML page, Markdown, or a (redacted) session file
    #[command(after_long_help = EXIT_STATUS)]
    Export(export::ExportArgs),
    /// Search the text of sessions (every branch), newest session first
    #[command(after_long_help = search::EXIT_STATUS)]
    Search(search::SearchArgs),
    /// Print the path of the current session of a directory, and say where it came from
    ///
    /// The current session is the one every command uses when none is named: PI_SESSION,
    /// else the session pinned with `pi session use`, else the most recently modified one.
    #[command(after_long_help = resume::EXIT_STATUS)]
    Resume(resume::ResumeArgs),
    /// Pin the session commands use when none is named, print the pin, or clear it
    ///
    /// `pi session use SESSION` pins a session for the current directory (kept in
    /// <agent dir>/current-session/); every command that takes a session then uses it when
    /// none is named, before the most recent one. PI_SESSION comes before the pin (for a
    /// shell or a cron job), and a SESSION argument before both. A pin or PI_SESSION naming a
    /// session that is gone is an error, never a quiet fall back.
    #[command(name = "use", after_long_help = use_::EXIT_STATUS)]
    Use(use_::UseArgs),
    /// Set or clear the label of an entry
    #[command(after_long_help = EXIT_STATUS)]
    Label(label::LabelArgs),
    /// Change what the model sees of an entry, without rewriting history
    ///
    /// Appends a `context_edit` entry (the reference 1.6's format): from here on the branch
    /// sends the model the entry's replacement, or nothing with --omit. The entry itself stays
    /// in the file, in `log`, `show`, exports and usage. The latest edit of an entry wins; an
    /// edit on one branch leaves the others alone. Prints the entry written.
    #[command(after_long_help = EXIT_STATUS)]
    Edit(edit::EditArgs),
    /// Set or clear the session's name
    #[command(after_long_help = EXIT_STATUS)]
    Name(name::NameArgs),
    /// Copy the path from the root to an entry into a new session file
    #[command(after_long_help = EXIT_STATUS)]
    Fork(fork::ForkArgs),
    /// Check a session file for problems, without changing it
    #[command(after_long_help = check::EXIT_STATUS)]
    Check(check::CheckArgs),
    /// Rewrite a version 1 or 2 session file as version 3, keeping a backup
    #[command(after_long_help = EXIT_STATUS)]
    Migrate(migrate::MigrateArgs),
    /// Import Claude Code and Codex CLI sessions as pi sessions, branches kept, usage once
    ///
    /// Each source conversation becomes a pi session in the sessions directory of its
    /// working directory, with ids derived from the source's, so that importing again writes
    /// nothing and a source that has grown gets only its new entries appended. One JSON
    /// record per source file (see pi-session-import(1)).
    #[command(after_long_help = import::EXIT_STATUS)]
    Import(import::ImportArgs),
    /// Archive (or delete) old, large or empty sessions, never one in use
    ///
    /// Picks the sessions that meet every criterion given and moves them into the archive
    /// (<agent dir>/archive, or --archive DIR) at the same place below it as below the
    /// sessions directory, where --session-dir reads them; --delete unlinks them instead. A
    /// session whose lock a writer holds is never touched, nor one that a kept session names
    /// as its parentSession (unless --include-parents). One JSON record per session picked
    /// ({path, bytes, reason, action}) and a total; --dry-run changes nothing and prints the
    /// same records.
    #[command(after_long_help = gc::EXIT_STATUS)]
    Gc(gc::GcArgs),
}

pub fn run(args: SessionArgs, ctx: &mut Ctx) -> anyhow::Result<ExitStatus> {
    match args.command {
        SessionCommand::New(a) => new::run(a, ctx),
        SessionCommand::List(a) => list::run(a, ctx),
        SessionCommand::Log(a) => log::run(a, ctx),
        SessionCommand::Append(a) => append::run(a, ctx),
        SessionCommand::Branch(a) => branch::run(a, ctx),
        SessionCommand::Tree(a) => tree::run(a, ctx),
        SessionCommand::Show(a) => show::run(a, ctx),
        SessionCommand::Export(a) => export::run(a, ctx),
        SessionCommand::Search(a) => search::run(a, ctx),
        SessionCommand::Resume(a) => resume::run(a, ctx),
        SessionCommand::Use(a) => use_::run(a, ctx),
        SessionCommand::Label(a) => label::run(a, ctx),
        SessionCommand::Edit(a) => edit::run(a, ctx),
        SessionCommand::Name(a) => name::run(a, ctx),
        SessionCommand::Fork(a) => fork::run(a, ctx),
        SessionCommand::Check(a) => check::run(a, ctx),
        SessionCommand::Migrate(a) => migrate::run(a, ctx),
        SessionCommand::Gc(a) => gc::run(a, ctx),
        SessionCommand::Import(a) => import::run(a, ctx),
    }
}
