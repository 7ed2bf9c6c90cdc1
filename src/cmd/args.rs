//! Option groups that several commands share, flattened into their arguments, and the value
//! parsers behind them.

use std::path::{Path, PathBuf};

use clap::Args;

use crate::output::Format;

/// `--format` with its `--json` shorthand, for commands with a human view.
#[derive(Debug, Clone, Args)]
pub struct FormatArgs {
    /// Output format: human text on a terminal and JSON otherwise (auto), or either
    #[arg(long, value_enum, default_value_t = Format::Auto, value_name = "FORMAT")]
    pub format: Format,
    /// Same as --format json
    #[arg(long, conflicts_with = "format")]
    pub json: bool,
}

impl FormatArgs {
    pub fn get(&self) -> Format {
        if self.json { Format::Json } else { self.format }
    }
}

/// The session a command works on: the argument SESSION, first of the positionals as it has
/// always been, or `-s/--session SESSION`, which can go anywhere. Either way it is a path to
/// a .jsonl file, a session id or a unique prefix of one, `-` for stdin where the command
/// only reads, and left out, the most recent session of the current directory.
///
/// Commands with positionals after SESSION read them with [`SessionArg::split`]; the others
/// with [`SessionArg::get`].
#[derive(Debug, Clone, Default, Args)]
#[group(id = "session_arg", multiple = true)]
pub struct SessionArg {
    /// The session: a path, a session id, a unique prefix or short id of one [default: the
    /// current session: PI_SESSION, the pin of `pi session use`, else the most recent]
    #[arg(value_name = "SESSION")]
    pub session: Option<String>,
    /// Same as SESSION, as an option
    #[arg(short = 's', long = "session", value_name = "SESSION")]
    pub session_opt: Option<String>,
}

impl SessionArg {
    /// The session named, for a command whose only positional is SESSION (`None`: the
    /// command's default). Naming it twice is a usage error.
    pub fn get(&self) -> anyhow::Result<Option<&str>> {
        match (&self.session, &self.session_opt) {
            (Some(_), Some(_)) => Err(twice()),
            (a, b) => Ok(a.as_deref().or(b.as_deref())),
        }
    }

    /// The session and the other positionals, for a command whose SESSION is followed by
    /// `N` positionals of which it needs `needed`.
    ///
    /// clap fills the positionals from the left, so when SESSION is left out the first value
    /// it holds belongs to the next one. The values are SESSION and the command's own when
    /// there are more than the command needs, and never when --session is given; otherwise
    /// they are all the command's own, and the session is its default.
    pub fn split<const N: usize>(
        self,
        rest: [Option<String>; N],
        needed: usize,
    ) -> anyhow::Result<(Option<String>, [Option<String>; N])> {
        let mut values: Vec<String> = std::iter::once(self.session)
            .chain(rest)
            .flatten()
            .collect();
        let session = match self.session_opt {
            Some(_) if values.len() > N => return Err(twice()),
            Some(s) => Some(s),
            None if values.len() > needed => Some(values.remove(0)),
            None => None,
        };
        let mut own = values.into_iter();
        Ok((session, std::array::from_fn(|_| own.next())))
    }
}

/// The help of SESSION for a command that only reads it.
pub const READ_SESSION_HELP: &str = "The session: a path, a session id or a unique prefix of one, \
     or - to read it from stdin [default: the current session: PI_SESSION, the pin of `pi session use`, \
     else the most recent]";

fn twice() -> anyhow::Error {
    crate::error::usage("the session is given twice: as SESSION and with --session")
}

/// What a rendering of a conversation shows (`pi session show`, `pi session export`).
#[derive(Debug, Clone, Args)]
pub struct ViewArgs {
    /// Show tool results whole instead of their first lines
    #[arg(long)]
    pub full: bool,
    /// Show the model's thinking
    #[arg(long)]
    pub thinking: bool,
    /// Leave out tool calls and their results
    #[arg(long)]
    pub no_tools: bool,
}

impl ViewArgs {
    pub fn options(&self) -> crate::render::text::Options {
        crate::render::text::Options {
            full: self.full,
            thinking: self.thinking,
            tools: !self.no_tools,
        }
    }
}

/// A model named on the command line as `PROVIDER/ID`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ModelRef {
    pub provider: String,
    pub id: String,
}

impl ModelRef {
    /// Splits at the first `/` (model ids may contain more).
    pub fn parse(arg: &str) -> Result<ModelRef, String> {
        match arg.split_once('/') {
            Some((p, id)) if !p.is_empty() && !id.is_empty() => Ok(ModelRef {
                provider: p.to_owned(),
                id: id.to_owned(),
            }),
            _ => Err("expected PROVIDER/ID, for example anthropic/claude-sonnet-4-5".to_owned()),
        }
    }

    pub fn into_pair(self) -> (String, String) {
        (self.provider, self.id)
    }
}

/// Which sessions a many-sessions command reads: the current directory's (default), those of
/// `--cwd DIR`, or every directory's (`--all`).
#[derive(Debug, Clone, Args)]
pub struct ScopeArgs {
    /// Every directory's sessions
    #[arg(long, conflicts_with = "cwd")]
    pub all: bool,
    /// The sessions of DIR [default: the current directory]
    #[arg(long, value_name = "DIR")]
    pub cwd: Option<PathBuf>,
}

impl ScopeArgs {
    /// The session directories in scope.
    pub fn dirs(&self, ctx: &super::Ctx) -> anyhow::Result<Vec<PathBuf>> {
        Ok(if self.all {
            pi_session::find::all_session_dirs(&ctx.dirs)
        } else {
            vec![ctx.dirs.session_dir_for(&ctx.cwd_arg(self.cwd.as_deref())?)]
        })
    }

    /// The `*.jsonl` files of the directories in scope, most recently modified first.
    pub fn files_newest_first(&self, ctx: &super::Ctx) -> anyhow::Result<Vec<PathBuf>> {
        let files: Vec<PathBuf> = self
            .dirs(ctx)?
            .iter()
            .flat_map(|d| pi_session::find::jsonl_files(d))
            .collect();
        Ok(newest_first(files))
    }
}

/// `files` sorted by modification time, newest first (then by path).
pub fn newest_first(files: Vec<PathBuf>) -> Vec<PathBuf> {
    let mut timed: Vec<(std::time::SystemTime, PathBuf)> = files
        .into_iter()
        .map(|p| {
            let m = std::fs::metadata(&p)
                .and_then(|m| m.modified())
                .unwrap_or(std::time::UNIX_EPOCH);
            (m, p)
        })
        .collect();
    timed.sort_by(|a, b| b.0.cmp(&a.0).then_with(|| a.1.cmp(&b.1)));
    timed.into_iter().map(|(_, p)| p).collect()
}

/// `--since` / `--until`.
#[derive(Debug, Clone, Args)]
pub struct RangeArgs {
    /// From DATE on: YYYY-MM-DD or YYYYMMDD (a whole day), an ISO 8601 timestamp, or an
    /// age such as 12h, 7d, 2w
    #[arg(long, value_name = "DATE", value_parser = pi_session::usage::dates::DateArg::parse)]
    pub since: Option<pi_session::usage::dates::DateArg>,
    /// Up to DATE (a day counts whole); same forms as --since
    #[arg(long, value_name = "DATE", value_parser = pi_session::usage::dates::DateArg::parse)]
    pub until: Option<pi_session::usage::dates::DateArg>,
}

/// A whole number above 0 (token counts, turns).
pub fn positive(arg: &str) -> Result<u64, String> {
    match arg.trim().parse::<u64>() {
        Ok(0) => Err("must be at least 1".to_owned()),
        Ok(n) => Ok(n),
        Err(_) => Err("expected a whole number".to_owned()),
    }
}

/// [`positive`], for counts that fit 32 bits.
pub fn positive_u32(arg: &str) -> Result<u32, String> {
    let n = positive(arg)?;
    u32::try_from(n).map_err(|_| format!("at most {}", u32::MAX))
}

/// The model that writes a summary or runs the agent.
#[derive(Debug, Clone, Args)]
pub struct ModelArgs {
    /// The model, as PROVIDER/ID [default: the session's model if it has a key, else
    /// defaultProvider/defaultModel from settings.json]
    #[arg(long, value_name = "PROVIDER/ID", value_parser = ModelRef::parse)]
    pub model: Option<ModelRef>,
}

impl ModelArgs {
    pub fn pair(&self) -> Option<(String, String)> {
        self.model.clone().map(ModelRef::into_pair)
    }
}

/// How the system prompt is put together (`pi run`, `pi prompt system`).
#[derive(Debug, Clone, Args)]
pub struct SystemPromptArgs {
    /// Use TEXT instead of the default prompt and SYSTEM.md (if TEXT names an existing
    /// file, its contents)
    #[arg(long, value_name = "TEXT", conflicts_with = "system_prompt_file")]
    pub system_prompt: Option<String>,
    /// Use the contents of FILE instead of the default prompt and SYSTEM.md
    #[arg(long, value_name = "FILE")]
    pub system_prompt_file: Option<PathBuf>,
    /// Append TEXT (if it names an existing file, its contents); repeatable, joined by blank
    /// lines; replaces APPEND_SYSTEM.md
    #[arg(long, value_name = "TEXT")]
    pub append_system_prompt: Vec<String>,
    /// Leave out the AGENTS.md / CLAUDE.md context files
    #[arg(long)]
    pub no_context_files: bool,
}

impl SystemPromptArgs {
    /// The custom prompt given (`--system-prompt-file` read, or `--system-prompt` TEXT or
    /// the file it names), relative names taken from `base`. `None`: SYSTEM.md or the
    /// default text.
    /// A file that cannot be read is a usage error (exit status 2).
    pub fn custom(&self, base: &Path) -> anyhow::Result<Option<String>> {
        if let Some(f) = &self.system_prompt_file {
            return pi_prompt::read_text(&base.join(f))
                .map(Some)
                .map_err(|e| crate::error::usage(format!("cannot read {}: {e}", f.display())));
        }
        let mut warnings = Vec::new();
        // Given but empty: the default text (and not SYSTEM.md).
        let custom = self
            .system_prompt
            .as_deref()
            .map(|v| pi_prompt::file_or_literal(v, base, &mut warnings).unwrap_or_default());
        for w in &warnings {
            crate::error::warn(w);
        }
        Ok(custom)
    }

    /// The system prompt of a session in `cwd` from these options and the `custom` prompt
    /// they gave ([`SystemPromptArgs::custom`]), launched from `launch_dir`; its warnings
    /// are printed.
    pub fn assemble(
        &self,
        custom: Option<String>,
        dirs: (&Path, &Path, &Path),
        tools: &[pi_prompt::system::Tool],
        skills: &[pi_prompt::skills::Skill],
    ) -> pi_prompt::system::Assembled {
        let (cwd, agent_dir, launch_dir) = dirs;
        let assembled = pi_prompt::system::Sources {
            cwd,
            agent_dir,
            launch_dir,
            custom,
            append: &self.append_system_prompt,
            context_files: !self.no_context_files,
            tools,
            skills,
        }
        .assemble();
        for w in &assembled.warnings {
            crate::error::warn(w);
        }
        assembled
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn model_refs_split_at_the_first_slash() {
        assert_eq!(
            ModelRef::parse("openrouter/meta/llama-3").map(ModelRef::into_pair),
            Ok(("openrouter".into(), "meta/llama-3".into()))
        );
        assert!(ModelRef::parse("nope").is_err());
        assert!(ModelRef::parse("/x").is_err());
        assert!(ModelRef::parse("x/").is_err());
    }

    #[test]
    fn positive_numbers() {
        assert_eq!(positive("12"), Ok(12));
        assert!(positive("0").is_err());
        assert!(positive("-3").is_err());
        assert!(positive_u32("4294967296").is_err());
    }
}

/// `--since` / `--until`: a span of time by calendar days or instants.
#[derive(Debug, Clone, Default, Args)]
pub struct DateRangeArgs {
    /// Only from DATE on: a day (YYYY-MM-DD, local time) or an ISO-8601 timestamp
    #[arg(long, value_name = "DATE", value_parser = date_bound)]
    pub since: Option<(i64, i64)>,
    /// Only up to DATE (a whole day, or up to a timestamp)
    #[arg(long, value_name = "DATE", value_parser = date_bound)]
    pub until: Option<(i64, i64)>,
}

impl DateRangeArgs {
    /// Whether the time `ms` is within the span.
    pub fn contains(&self, ms: i64) -> bool {
        self.since.is_none_or(|(start, _)| ms >= start)
            && self.until.is_none_or(|(_, end)| ms <= end)
    }
}

/// A `--since`/`--until` value (see [`pi_base::clock::parse_bound`]).
pub fn date_bound(arg: &str) -> Result<(i64, i64), String> {
    pi_base::clock::parse_bound(arg).ok_or_else(|| {
        "expected a date (YYYY-MM-DD) or an ISO-8601 timestamp (2025-01-02T03:04:05Z)".to_owned()
    })
}
