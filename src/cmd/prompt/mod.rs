//! `pi prompt …`

pub mod expand;
pub mod list;
pub mod system;

use crate::error::ExitStatus;
use std::path::PathBuf;

use anyhow::Context;
use clap::{Args, Subcommand};

use super::Ctx;
use crate::cmd::EXIT_STATUS;
use crate::error::usage;
use pi_prompt::resources::{self, Resources};
use pi_prompt::{Diagnostic, DiagnosticType};

#[derive(Debug, Args)]
#[command(subcommand_required = true, arg_required_else_help = true)]
pub struct PromptArgs {
    #[command(subcommand)]
    pub command: PromptCommand,
}

#[derive(Debug, Subcommand)]
pub enum PromptCommand {
    /// Expand `/template args` or `/skill:name args`; other text passes through unchanged
    #[command(after_long_help = EXIT_STATUS)]
    Expand(expand::ExpandArgs),
    /// List the prompt templates and skills found, and the problems met loading them
    #[command(after_long_help = EXIT_STATUS)]
    List(list::ListArgs),
    /// Print the system prompt assembled for a directory
    #[command(after_long_help = EXIT_STATUS)]
    System(system::SystemArgs),
}

pub fn run(args: PromptArgs, ctx: &mut Ctx) -> anyhow::Result<ExitStatus> {
    match args.command {
        PromptCommand::Expand(a) => expand::run(a, ctx),
        PromptCommand::List(a) => list::run(a, ctx),
        PromptCommand::System(a) => system::run(a, ctx),
    }
}

/// Where templates and skills are looked for.
#[derive(Debug, Clone, Args)]
pub struct DiscoveryArgs {
    /// Work as if started in DIR: its .pi/ directory, .agents/skills and context files
    #[arg(long, value_name = "DIR")]
    pub cwd: Option<PathBuf>,
    /// Also load templates from PATH, a .md file or a directory of them (repeatable; they
    /// lose name collisions with discovered ones). Relative to the current directory
    #[arg(
        long = "prompt-dir",
        visible_alias = "prompt-template",
        value_name = "PATH"
    )]
    pub prompt_dirs: Vec<String>,
    /// Also load skills from PATH, a skill file or a directory (repeatable; they lose name
    /// collisions with discovered ones). Relative to the current directory
    #[arg(long = "skill-dir", visible_alias = "skill", value_name = "PATH")]
    pub skill_dirs: Vec<String>,
    /// Do not discover templates; load only the --prompt-dir paths
    #[arg(long)]
    pub no_prompt_templates: bool,
    /// Do not discover skills; load only the --skill-dir paths
    #[arg(long)]
    pub no_skills: bool,
}

impl DiscoveryArgs {
    /// The working directory to discover from (absolute; must exist).
    pub fn cwd(&self, ctx: &Ctx) -> anyhow::Result<PathBuf> {
        let dir = PathBuf::from(ctx.cwd_arg(self.cwd.as_deref())?);
        if !dir.is_dir() {
            return Err(usage(format!("--cwd {}: not a directory", dir.display())));
        }
        Ok(dir)
    }

    /// Finds templates and skills; settings problems are reported on stderr.
    pub fn load(&self, ctx: &Ctx) -> anyhow::Result<(PathBuf, Resources)> {
        let cwd = self.cwd(ctx)?;
        let home = pi_base::config::expand_tilde("~");
        let opts = resources::Options {
            cwd: cwd.clone(),
            agent_dir: ctx.dirs.agent_dir.clone(),
            home,
            prompt_paths: self.prompt_dirs.iter().map(|p| from_here(ctx, p)).collect(),
            skill_paths: self.skill_dirs.iter().map(|p| from_here(ctx, p)).collect(),
            no_prompts: self.no_prompt_templates,
            no_skills: self.no_skills,
        };
        let res = resources::load(&opts);
        for w in &res.warnings {
            crate::error::warn(w);
        }
        Ok((cwd, res))
    }
}

/// A path from the command line, relative to the directory pi was started in (not `--cwd`).
fn from_here(ctx: &Ctx, p: &str) -> String {
    // Surrounding whitespace is trimmed later, as by the reference.
    let p = pi_base::js::trim(p);
    let path = std::path::Path::new(p);
    if p == "~" || p.starts_with("~/") || p.starts_with("file://") || path.is_absolute() {
        p.to_owned()
    } else {
        ctx.cwd.join(path).to_string_lossy().into_owned()
    }
}

/// Warns about explicit paths that do not exist (the other diagnostics are for `pi prompt
/// list`).
pub fn warn_missing_paths(res: &Resources) {
    let missing = |d: &&Diagnostic| {
        d.ty == DiagnosticType::Error
            || (d.ty == DiagnosticType::Warning && d.message == "skill path does not exist")
    };
    let mut seen = std::collections::HashSet::new();
    for d in res
        .template_diagnostics
        .iter()
        .chain(&res.skill_diagnostics)
        .filter(missing)
    {
        let shown = d.path.display().to_string();
        if seen.insert(shown.clone()) {
            crate::error::warn(&format!("{shown}: no such file or directory"));
        }
    }
}

/// Reads all of stdin as text.
pub fn read_stdin() -> anyhow::Result<String> {
    use std::io::Read;
    let mut buf = Vec::new();
    std::io::stdin()
        .lock()
        .read_to_end(&mut buf)
        .context("cannot read stdin")?;
    Ok(String::from_utf8_lossy(&buf).into_owned())
}
