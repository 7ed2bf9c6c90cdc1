//! The process: the arguments parsed with the command tree of [`crate::cmd`], clap's own
//! errors written the way pi writes its errors, the command run, and its exit status.

use std::ffi::OsString;
use std::io::{IsTerminal, Write};

use clap::{FromArgMatches, ValueEnum};

use crate::cmd::{self, Cli, command, help, run};
use crate::error::{self, ExitStatus};
use crate::output::{self, ColorWhen};

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
    // `pi help --help`: the help of the help command (clap's own has no flags).
    if args.get(1).is_some_and(|a| a == "help")
        && args[2..].iter().any(|a| a == "--help" || a == "-h")
    {
        let mut doc = cmd::man::documented();
        if let Some(h) = doc.find_subcommand_mut("help") {
            let text = h.render_long_help().to_string();
            let mut out = std::io::stdout().lock();
            return match out.write_all(text.as_bytes()).and_then(|()| out.flush()) {
                Ok(()) => ExitStatus::Success.code(),
                Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => ExitStatus::Success.code(),
                Err(e) => error::report(&anyhow::Error::from(e)).code(),
            };
        }
    }
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
