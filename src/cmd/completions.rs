//! `pi completions SHELL`: the shell's completion script, and the completion engine the
//! script calls.
//!
//! The scripts are small: at every TAB the shell runs `PI_COMPLETE=SHELL pi -- WORDS…`, and
//! pi answers from its clap tree (clap_complete's dynamic engine) with the values that
//! depend on the machine: session ids and paths, the entry ids of the session the command
//! line names, models, entry types, template and skill names, hook events. Answering only
//! reads: session files are indexed without recovering anything, no settings are written,
//! no hook, tool or key command runs.

use std::ffi::{OsStr, OsString};
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use clap::{Args, ValueEnum};
use clap_complete::engine::{
    ArgValueCompleter, CompletionCandidate, PathCompleter, ValueCompleter,
};
use clap_complete::env::{CompleteEnv, Shells};

use crate::error::ExitStatus;
use pi_base::config::Dirs;

/// The variable that turns a run of pi into a completion request.
pub const VAR: &str = "PI_COMPLETE";

#[derive(Debug, Args)]
pub struct CompletionsArgs {
    /// The shell to print the script for
    #[arg(value_enum)]
    pub shell: Shell,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Shell {
    Bash,
    Zsh,
    Fish,
    Elvish,
    Powershell,
}

impl Shell {
    pub const ALL: [Shell; 5] = [
        Shell::Bash,
        Shell::Zsh,
        Shell::Fish,
        Shell::Elvish,
        Shell::Powershell,
    ];

    fn name(self) -> &'static str {
        match self {
            Shell::Bash => "bash",
            Shell::Zsh => "zsh",
            Shell::Fish => "fish",
            Shell::Elvish => "elvish",
            Shell::Powershell => "powershell",
        }
    }

    /// The file name the script is committed and installed under.
    pub fn file_name(self) -> &'static str {
        match self {
            Shell::Bash => "pi.bash",
            Shell::Zsh => "_pi",
            Shell::Fish => "pi.fish",
            Shell::Elvish => "pi.elv",
            Shell::Powershell => "pi.ps1",
        }
    }
}

/// The completion script for `shell`. It runs the `pi` found on PATH.
pub fn script(shell: Shell) -> anyhow::Result<Vec<u8>> {
    let shells = Shells::builtins();
    let completer = shells
        .completer(shell.name())
        .ok_or_else(|| anyhow::anyhow!("no completion support for {}", shell.name()))?;
    let mut buf = Vec::new();
    completer.write_registration(VAR, "pi", "pi", "pi", &mut buf)?;
    if shell == Shell::Zsh {
        // Loaded from fpath, the file is the body of `_pi`: complete on this first call too.
        buf.extend_from_slice(
            b"if [[ \"${funcstack[1]-}\" == _pi ]]; then\n    _clap_dynamic_completer_pi \"$@\"\nfi\n",
        );
    }
    Ok(buf)
}

pub fn run(args: CompletionsArgs, out: &mut impl std::io::Write) -> anyhow::Result<ExitStatus> {
    out.write_all(&script(args.shell)?)?;
    Ok(ExitStatus::Success)
}

/// The words of the command line before the one being completed (set while answering).
static WORDS: OnceLock<Vec<OsString>> = OnceLock::new();

/// Answers a completion request when the shell's script asks for one (`PI_COMPLETE` set);
/// `None` for an ordinary run.
pub fn answer() -> Option<u8> {
    let shell = std::env::var_os(VAR)?;
    if shell.is_empty() || shell == "0" {
        return None;
    }
    let args: Vec<OsString> = std::env::args_os().collect();
    if let Some(dash) = args.iter().position(|a| a == "--") {
        let words = &args[dash + 1..];
        // bash, zsh and elvish say which word is completed; fish and PowerShell pass the
        // words up to it.
        let index = std::env::var("_CLAP_COMPLETE_INDEX")
            .ok()
            .and_then(|i| i.parse::<usize>().ok())
            .unwrap_or(words.len().saturating_sub(1));
        let _ = WORDS.set(words[..index.min(words.len())].to_vec());
    }
    let cwd = std::env::current_dir().ok();
    let env = CompleteEnv::with_factory(command)
        .var(VAR)
        .bin("pi")
        .completer("pi");
    match env.try_complete(args, cwd.as_deref()) {
        Ok(true) => Some(ExitStatus::Success.code()),
        Ok(false) => None,
        // Nothing useful can be shown to a shell in the middle of a completion.
        Err(_) => Some(ExitStatus::Failure.code()),
    }
}

/// The clap tree with the completers of the values that depend on the machine.
pub fn command() -> clap::Command {
    with_completers(crate::cmd::command())
}

fn with_completers(cmd: clap::Command) -> clap::Command {
    let name = cmd.get_name().to_owned();
    cmd.mut_args(|a| {
        let completer = match a.get_id().as_str() {
            "session" => ArgValueCompleter::new(first_positional),
            "session_opt" => ArgValueCompleter::new(sessions),
            "leaf" => ArgValueCompleter::new(entries),
            "entry" => ArgValueCompleter::new(entry_positional),
            "model" => ArgValueCompleter::new(models),
            "types" => ArgValueCompleter::new(entry_types),
            "hook" => {
                use pi_agent::extensions::config::HookEvent;
                // `pi compact` and `pi session branch` take one event each; `pi run` the others.
                let events: Vec<HookEvent> = match name.as_str() {
                    "compact" => vec![HookEvent::SessionBeforeCompact],
                    "branch" => vec![HookEvent::SessionBeforeTree],
                    _ => HookEvent::ALL
                        .into_iter()
                        .filter(|e| *e != HookEvent::SessionBeforeTree)
                        .collect(),
                };
                ArgValueCompleter::new(move |current: &OsStr| hook_events(current, &events))
            }
            "text" if name == "expand" => ArgValueCompleter::new(prompt_words),
            "prompt" if name == "run" => ArgValueCompleter::new(prompt_words),
            _ => return a,
        };
        a.add(completer)
    })
    .mut_subcommands(with_completers)
}

/// The command line before the word being completed, parsed as far as it goes.
fn parsed() -> Option<clap::ArgMatches> {
    let words = WORDS.get()?;
    crate::cmd::command()
        .ignore_errors(true)
        .try_get_matches_from(words)
        .ok()
}

/// The deepest subcommand's matches.
fn leaf_matches(m: &clap::ArgMatches) -> &clap::ArgMatches {
    let mut m = m;
    while let Some((_, sub)) = m.subcommand() {
        m = sub;
    }
    m
}

fn string_of(m: &clap::ArgMatches, id: &str) -> Option<String> {
    m.try_get_one::<String>(id).ok().flatten().cloned()
}

/// The working directory and the session directories of the command line (`--session-dir`
/// and the settings, as the command would resolve them).
fn dirs(m: Option<&clap::ArgMatches>) -> Option<(PathBuf, Dirs)> {
    let cwd = pi_base::config::current_dir().ok()?;
    let flag = m.and_then(|m| {
        m.try_get_one::<PathBuf>("session_dir")
            .ok()
            .flatten()
            .cloned()
    });
    let dirs = super::resolve_dirs(flag.as_deref(), &cwd, false);
    Some((cwd, dirs))
}

fn starts_with(value: &str, current: &OsStr) -> bool {
    value.starts_with(current.to_string_lossy().as_ref())
}

/// Session ids (the current directory's sessions first, newest first): short ids, or the
/// whole ids for a word longer than its session's short id; paths when the word looks like
/// one.
fn sessions(current: &OsStr) -> Vec<CompletionCandidate> {
    let cur = current.to_string_lossy();
    if cur.contains('/') || cur.starts_with('.') || cur.starts_with('~') {
        return PathCompleter::any().complete(current);
    }
    let m = parsed();
    let Some((cwd, dirs)) = dirs(m.as_ref()) else {
        return Vec::new();
    };
    pi_session::find::completion_candidates(&dirs, &cwd.to_string_lossy())
        .into_iter()
        .filter_map(|c| {
            let value = c.completes(&cur)?.to_owned();
            let h = c.header;
            let help = match h.title {
                Some(t) => format!("{} — {}", h.cwd, pi_session::preview::normalize(&t)),
                None => h.cwd,
            };
            let help = pi_base::text::truncate(&crate::output::escape(&help), 80);
            Some(CompletionCandidate::new(value).help(Some(help.into())))
        })
        .collect()
}

/// The first positional, SESSION as clap sees it: with `-s SESSION` on the line it is the
/// command's next argument instead, an entry for `branch`, `label` and `fork`. Without it,
/// `branch` and `label` take an entry of the most recent session there too.
fn first_positional(current: &OsStr) -> Vec<CompletionCandidate> {
    let m = parsed();
    let leaf = m.as_ref().map(leaf_matches);
    let takes_entry = leaf.is_some_and(|l| l.try_get_one::<String>("entry").is_ok());
    if leaf.is_some_and(|l| string_of(l, "session_opt").is_some()) {
        return if takes_entry {
            entries(current)
        } else {
            Vec::new()
        };
    }
    let command = m
        .as_ref()
        .and_then(|m| m.subcommand())
        .and_then(|(_, s)| s.subcommand_name());
    let mut out = sessions(current);
    if takes_entry && matches!(command, Some("branch" | "label")) {
        out.extend(entries(current));
    }
    out
}

/// ENTRY as clap sees it: with `-s SESSION` and a value before it, the argument after the
/// entry (a label), which has no candidates.
fn entry_positional(current: &OsStr) -> Vec<CompletionCandidate> {
    let m = parsed();
    let shifted = m.as_ref().map(leaf_matches).is_some_and(|l| {
        string_of(l, "session_opt").is_some() && string_of(l, "session").is_some()
    });
    if shifted {
        return Vec::new();
    }
    entries(current)
}

/// Most candidates that get a description (the rest are listed bare).
const DESCRIBED: usize = 200;

/// The entry ids of the session named on the command line (or the most recent one of the
/// current directory), newest first, each with its one-line preview.
fn entries(current: &OsStr) -> Vec<CompletionCandidate> {
    let m = parsed();
    let mut out = Vec::new();
    if "root".starts_with(current.to_string_lossy().as_ref())
        && m.as_ref()
            .and_then(|m| m.subcommand())
            .and_then(|(_, s)| s.subcommand_name())
            == Some("branch")
    {
        out.push(CompletionCandidate::new("root").help(Some("start a new root".into())));
    }
    let Some((cwd, dirs)) = dirs(m.as_ref()) else {
        return out;
    };
    let arg = m
        .as_ref()
        .map(leaf_matches)
        .and_then(|l| string_of(l, "session_opt").or_else(|| string_of(l, "session")));
    let env = super::session_env();
    let Ok((path, _)) = pi_session::find::choose(
        arg.as_deref(),
        env.as_deref(),
        &dirs,
        &cwd.to_string_lossy(),
    ) else {
        return out;
    };
    out.extend(entry_candidates(&path, current));
    out
}

fn entry_candidates(path: &Path, current: &OsStr) -> Vec<CompletionCandidate> {
    use pi_session::{Session, preview, scan::NoVisit};
    // `scan` only reads: an interrupted append is reported, never recovered.
    let Ok((s, _)) = Session::scan(path, NoVisit) else {
        return Vec::new();
    };
    let leaf = s.leaf();
    let mut out = Vec::new();
    for (i, rec) in s.entries.iter().enumerate().rev() {
        let id = rec.id.as_str();
        if !starts_with(id, current) {
            continue;
        }
        let mut c = CompletionCandidate::new(id.to_owned());
        if out.len() < DESCRIBED
            && let Ok(idx) = u32::try_from(i)
            && let Ok(line) = s.line(idx)
        {
            let members = pi_base::json::members(&line).unwrap_or_default();
            let mut text = preview::preview(rec.kind.as_str(), &line, &members);
            if leaf == Some(idx) {
                text.push_str("  (leaf)");
            }
            c = c.help(Some(crate::output::escape(&text).into_owned().into()));
        }
        out.push(c);
    }
    out
}

/// `PROVIDER/ID` of every model pi knows (built in, and models.json).
fn models(current: &OsStr) -> Vec<CompletionCandidate> {
    let m = parsed();
    let Some((_, dirs)) = dirs(m.as_ref()) else {
        return Vec::new();
    };
    let registry = pi_ai::models::Registry::load(&dirs.agent_dir);
    registry
        .models
        .iter()
        .map(|m| {
            let name = registry.details_of(&m.provider, &m.id).name;
            (format!("{}/{}", m.provider, m.id), name)
        })
        .filter(|(v, _)| starts_with(v, current))
        .map(|(v, name)| CompletionCandidate::new(v).help(name.map(Into::into)))
        .collect()
}

/// The entry types of `--type`.
fn entry_types(current: &OsStr) -> Vec<CompletionCandidate> {
    pi_session::store::Kind::ALL
        .iter()
        .map(|k| k.as_str())
        .filter(|t| starts_with(t, current))
        .map(CompletionCandidate::new)
        .collect()
}

/// `EVENT=` for `--hook EVENT=COMMAND`.
fn hook_events(
    current: &OsStr,
    events: &[pi_agent::extensions::config::HookEvent],
) -> Vec<CompletionCandidate> {
    if current.to_string_lossy().contains('=') {
        return Vec::new();
    }
    events
        .iter()
        .map(|e| format!("{}=", e.as_str()))
        .filter(|e| starts_with(e, current))
        .map(CompletionCandidate::new)
        .collect()
}

/// `/template` and `/skill:name` for the first word of a prompt.
fn prompt_words(current: &OsStr) -> Vec<CompletionCandidate> {
    let cur = current.to_string_lossy();
    if !(cur.is_empty() || cur.starts_with('/')) {
        return Vec::new();
    }
    let m = parsed();
    let leaf = m.as_ref().map(leaf_matches);
    // Only the first word of `pi prompt expand TEXT…` names a template.
    if leaf
        .and_then(|l| l.try_get_many::<String>("text").ok().flatten())
        .is_some_and(|mut v| v.next().is_some())
    {
        return Vec::new();
    }
    let Some((cwd, dirs)) = dirs(m.as_ref()) else {
        return Vec::new();
    };
    let dir = leaf
        .and_then(|l| l.try_get_one::<PathBuf>("cwd").ok().flatten())
        .map_or_else(|| cwd.clone(), |d| cwd.join(d));
    let opts = pi_prompt::resources::Options {
        cwd: dir,
        agent_dir: dirs.agent_dir.clone(),
        home: pi_base::config::expand_tilde("~"),
        prompt_paths: Vec::new(),
        skill_paths: Vec::new(),
        no_prompts: false,
        no_skills: false,
    };
    let res = pi_prompt::resources::load(&opts);
    let first_line = |s: &str| s.lines().next().unwrap_or_default().to_owned();
    res.templates
        .iter()
        .map(|t| (format!("/{}", t.name), first_line(&t.description)))
        .chain(
            res.skills
                .iter()
                .map(|s| (format!("/skill:{}", s.name), first_line(&s.description))),
        )
        .filter(|(v, _)| v.starts_with(cur.as_ref()))
        .map(|(v, d)| CompletionCandidate::new(v).help(Some(d.into())))
        .collect()
}
