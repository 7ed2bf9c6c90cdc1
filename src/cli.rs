//! The command-line interface: the clap command tree, dispatch, and the process's exit.

use std::ffi::OsString;
use std::io::{IsTerminal, Write};
use std::path::PathBuf;

use clap::{FromArgMatches, Parser, Subcommand, ValueEnum};

use crate::cmd::{self, help};
use crate::error::{self, ExitStatus};
use crate::output::{self, ColorWhen};

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
    max_term_width = 100
)]
pub struct Cli {
    /// Keep sessions in DIR instead of the per-project directory under the agent directory
    ///
    /// Also set by PI_CODING_AGENT_SESSION_DIR or the `sessionDir` setting. The agent
    /// directory is PI_CODING_AGENT_DIR, or ~/.pi/agent.
    #[arg(long, global = true, value_name = "DIR")]
    pub session_dir: Option<PathBuf>,

    /// When human output is colored: auto (on a terminal, unless NO_COLOR is set), always
    /// (also into pipes and files), never
    #[arg(
        long,
        global = true,
        value_enum,
        value_name = "WHEN",
        default_value_t = ColorWhen::Auto,
        hide_possible_values = true
    )]
    pub color: ColorWhen,

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
    /// Tokens and cost of every assistant message, by day, week, month, session, model or project
    #[command(after_long_help = EXIT_STATUS)]
    Usage(cmd::usage::UsageArgs),
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
    /// Print the completion script of a shell: bash, zsh, fish, elvish or powershell
    ///
    /// The script completes commands and options, and the values that depend on the
    /// machine: session ids (and paths), the entry ids of the session on the command line
    /// (--leaf, branch, label, fork), models (--model), entry types (--type), template and
    /// skill names (`pi prompt expand /`), hook events (--hook). At every TAB the shell
    /// asks the `pi` on PATH (with PI_COMPLETE set), which only reads.
    #[command(after_long_help = EXIT_STATUS)]
    Completions(cmd::completions::CompletionsArgs),
    /// Write the manual pages into a directory: DIR/man1/pi.1, DIR/man1/pi-session.1, …
    #[command(after_long_help = EXIT_STATUS)]
    Man(cmd::man::ManArgs),
    /// Write the man pages and shell completions (for packagers and the repository)
    #[command(hide = true)]
    Generate(cmd::generate::GenerateArgs),
    #[command(external_subcommand)]
    External(Vec<OsString>),
}

/// Parses the arguments, runs the command and returns the exit status.
pub fn main() -> u8 {
    if let Some(code) = cmd::completions::answer() {
        return code;
    }
    let args: Vec<OsString> = std::env::args_os().collect();
    // The --color of the command line, for clap's own help and errors too.
    let when = color_flag(&args).unwrap_or_default();
    output::set_color_when(when);
    let mut cmd = command().color(match when {
        ColorWhen::Auto => clap::ColorChoice::Auto,
        ColorWhen::Always => clap::ColorChoice::Always,
        ColorWhen::Never => clap::ColorChoice::Never,
    });
    if let Some(name) = help::extension_help(&args, &cmd) {
        return match cmd::external::run(vec![name.into(), "--help".into()]) {
            Ok(status) => status.code(),
            Err(e) => error::report(&e).code(),
        };
    }
    let cli = match cmd
        .try_get_matches_from_mut(&args)
        .and_then(|m| Cli::from_arg_matches(&m))
    {
        Ok(cli) => cli,
        Err(e) => return clap_error(&e, &cmd),
    };
    output::set_color_when(cli.color);
    pi_session::pending::on_recover(|r| {
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
    pi_session::append::on_wait(|path| {
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

/// The last `--color WHEN` (or `--color=WHEN`) before `--`, when WHEN is valid.
fn color_flag(args: &[OsString]) -> Option<ColorWhen> {
    let mut when = None;
    let mut words = args.iter().skip(1).map(|a| a.to_str());
    while let Some(w) = words.next() {
        let value = match w {
            Some("--") => break,
            Some("--color") => words.next().flatten(),
            Some(w) => w.strip_prefix("--color="),
            None => None,
        };
        if let Some(v) = value.and_then(|v| ColorWhen::from_str(v, false).ok()) {
            when = Some(v);
        }
    }
    when
}

/// The command names of a usage line: `pi session [OPTIONS] <COMMAND>` → pi, session.
fn usage_path(usage: &str) -> Vec<&str> {
    usage
        .trim()
        .trim_start_matches("Usage: ")
        .split_whitespace()
        .take_while(|w| !w.starts_with(['[', '<', '-']))
        .collect()
}

/// The command at `path` (without the leading `pi`) in the built tree.
fn command_at<'a>(cmd: &'a clap::Command, path: &[&str]) -> Option<&'a clap::Command> {
    let mut c = cmd;
    for name in path {
        c = c.find_subcommand(name)?;
    }
    Some(c)
}

/// Prints a parse error of clap's the way pi prints its own errors (`pi: error: …`, then
/// the usage and hints indented); help and version go out as clap writes them. An unknown
/// command gets the nearest ones as a hint.
fn clap_error(e: &clap::Error, cmd: &clap::Command) -> u8 {
    use clap::error::{ContextKind, ContextValue, ErrorKind};
    let code = u8::try_from(e.exit_code()).unwrap_or(ExitStatus::Usage.code());
    match e.kind() {
        ErrorKind::DisplayHelp | ErrorKind::DisplayVersion => {
            let _ = e.print();
            return code;
        }
        ErrorKind::DisplayHelpOnMissingArgumentOrSubcommand => return missing_command(e, cmd),
        ErrorKind::MissingSubcommand => {
            if let Some(ContextValue::StyledStr(usage)) = e.get(ContextKind::Usage) {
                return no_command(&usage.to_string(), cmd);
            }
        }
        _ => {}
    }
    let mut did_you_mean = None;
    if let (Some(ContextValue::String(typed)), Some(ContextValue::StyledStr(usage))) = (
        e.get(ContextKind::InvalidSubcommand),
        e.get(ContextKind::Usage),
    ) {
        let usage = usage.to_string();
        let path = usage_path(&usage);
        if let Some(sub) = command_at(cmd, path.get(1..).unwrap_or_default()) {
            let names = help::command_names(sub);
            let mut near = help::similar(typed, names.iter().map(String::as_str));
            if let Some(ContextValue::Strings(theirs)) = e.get(ContextKind::SuggestedSubcommand) {
                for t in theirs {
                    if !near.contains(&t.as_str()) {
                        near.push(t);
                    }
                }
            }
            did_you_mean = help::did_you_mean(&near);
        }
    }
    let text = e.render().to_string();
    let mut head: Vec<String> = Vec::new();
    let mut usage = None;
    // Ours replaces clap's "a similar subcommand exists".
    let suggested = did_you_mean.is_some();
    let mut hints: Vec<String> = did_you_mean.into_iter().collect();
    let mut more = None;
    for line in text.lines().map(str::trim_end).filter(|l| !l.is_empty()) {
        let inner = line.trim_start();
        if let Some(rest) = line.strip_prefix("error: ") {
            // The words of pi's own message for an unknown command.
            let rest = match rest.strip_prefix("unrecognized subcommand ") {
                Some(name) => format!("unknown command {name}"),
                None => rest.to_owned(),
            };
            head.push(rest);
        } else if let Some(rest) = line.strip_prefix("Usage: ") {
            usage = Some(rest.to_owned());
        } else if let Some(rest) = inner.strip_prefix("tip: ") {
            if !(suggested && rest.starts_with("a similar subcommand exists")) {
                hints.push(rest.to_owned());
            }
        } else if let Some(rest) = line.strip_prefix("For more information, try ") {
            more = Some(format!(
                "for more information, try {}",
                rest.trim_end_matches('.')
            ));
        } else if let Some(list) = inner.strip_prefix('[').and_then(|l| l.strip_suffix(']')) {
            // `[possible values: a, b]`, `[subcommands: x, y]`
            hints.push(list.to_owned());
        } else {
            head.push(inner.to_owned());
        }
    }
    hints.extend(more);
    let mut out = String::new();
    // A message that ends in a colon continues with the list it introduces.
    let mut lines = head.into_iter();
    let first = lines.next().unwrap_or_default();
    let rest: Vec<String> = lines.collect();
    if first.ends_with(':') && !rest.is_empty() {
        out.push_str(&format!("pi: error: {first} {}\n", rest.join(", ")));
    } else {
        out.push_str(&format!("pi: error: {first}\n"));
        for l in rest {
            out.push_str(&format!("  {l}\n"));
        }
    }
    if let Some(u) = usage {
        out.push_str(&format!("  usage: {u}\n"));
    }
    for h in hints {
        out.push_str(&format!("  hint: {h}\n"));
    }
    let _ = std::io::stderr().lock().write_all(out.as_bytes());
    code
}

/// `pi` or a command group without a command: on a terminal the short help, as cargo
/// prints it (exit status 0); otherwise an error with the usage and the commands, since a
/// script that runs `pi` alone has a bug (exit status 2).
fn missing_command(e: &clap::Error, cmd: &clap::Command) -> u8 {
    let help = e.render();
    let stdout = std::io::stdout();
    if stdout.is_terminal() {
        let text = if output::color(true) {
            help.ansi().to_string()
        } else {
            help.to_string()
        };
        let _ = stdout.lock().write_all(text.as_bytes());
        return ExitStatus::Success.code();
    }
    let plain = help.to_string();
    let usage = plain
        .lines()
        .find_map(|l| l.strip_prefix("Usage: "))
        .unwrap_or("pi <COMMAND>");
    no_command(usage, cmd)
}

/// The error for a command group (or `pi`) run without a command, with the commands it has.
fn no_command(usage: &str, cmd: &clap::Command) -> u8 {
    let usage = usage.trim().trim_start_matches("Usage: ");
    let path = usage_path(usage);
    let sub = command_at(cmd, path.get(1..).unwrap_or_default()).unwrap_or(cmd);
    let names = help::command_names(sub);
    let below: Vec<&str> = path.iter().skip(1).copied().collect();
    let help_cmd = if below.is_empty() {
        "pi help".to_owned()
    } else {
        format!("pi help {}", below.join(" "))
    };
    let out = format!(
        "pi: error: '{}' requires a command\n  usage: {usage}\n  hint: the commands are {}; `{help_cmd}` describes them\n",
        path.join(" "),
        names.join(", ")
    );
    let _ = std::io::stderr().lock().write_all(out.as_bytes());
    ExitStatus::Usage.code()
}

pub fn run(cli: Cli) -> anyhow::Result<ExitStatus> {
    let dir = cli.session_dir.as_deref();
    match cli.command {
        Command::External(args) => cmd::external::run(args),
        Command::Generate(args) => cmd::generate::run(args),
        Command::Completions(args) => cmd::completions::run(args, &mut std::io::stdout().lock()),
        Command::Man(args) => cmd::man::run(args),
        Command::Session(args) => with_ctx(dir, |ctx| cmd::session::run(args, ctx)),
        Command::Prompt(args) => with_ctx(dir, |ctx| cmd::prompt::run(args, ctx)),
        Command::Context(args) => with_ctx(dir, |ctx| cmd::context::run(args, ctx)),
        Command::Compact(args) => with_ctx(dir, |ctx| cmd::compact::run(args, ctx)),
        Command::Run(args) => with_ctx(dir, |ctx| cmd::run::run(args, ctx)),
        Command::Models(args) => with_ctx(dir, |ctx| cmd::models::run(args, ctx)),
        Command::Usage(args) => with_ctx(dir, |ctx| cmd::usage::run(args, ctx)),
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
