//! `pi prompt system`

use crate::error::ExitStatus;
use std::path::{Path, PathBuf};

use clap::Args;
use serde_json::json;

use super::DiscoveryArgs;
use crate::cmd::Ctx;
use crate::cmd::args::SystemPromptArgs;
use pi_prompt::system::{self, DEFAULT_TOOLS, Tool};

#[derive(Debug, Args)]
pub struct SystemArgs {
    #[command(flatten)]
    pub discovery: DiscoveryArgs,
    /// Active tools, comma-separated, in this order [default: read,bash,edit,write and the
    /// tools given by --tool-snippet/--tool-guideline]
    ///
    /// Built-in tools: read, bash, edit, write, grep, find, ls. Unknown names are ignored
    /// with a warning.
    #[arg(long, value_delimiter = ',', value_name = "NAMES")]
    pub tools: Option<Vec<String>>,
    /// No tools at all (unless --tools is also given)
    #[arg(long)]
    pub no_tools: bool,
    /// A program tool, as `pi run --tool` takes it (repeatable); the program tools of
    /// <agent dir>/tools/ and of a trusted project's .pi/tools/ are always included
    #[arg(long = "tool", value_name = "PATH")]
    pub tool: Vec<PathBuf>,
    /// Define a tool's one-line summary for the tool list, as NAME=TEXT (repeatable); a name
    /// that is not built in adds a custom tool
    #[arg(long, value_name = "NAME=TEXT")]
    pub tool_snippet: Vec<String>,
    /// Add a guideline that applies while tool NAME is active, as NAME=TEXT (repeatable)
    #[arg(long, value_name = "NAME=TEXT")]
    pub tool_guideline: Vec<String>,
    #[command(flatten)]
    pub system_prompt: SystemPromptArgs,
    /// Print {"text", "sections", "tools", "contextFiles", "skills"} as JSON instead of the
    /// text (`sections`: the named parts a session records, in order)
    #[arg(long)]
    pub json: bool,
}

fn split_def(def: &str, flag: &str) -> anyhow::Result<(String, String)> {
    match def.split_once('=') {
        Some((n, t)) if !n.trim().is_empty() => Ok((n.trim().to_owned(), t.to_owned())),
        _ => Err(crate::error::usage(format!(
            "{flag} expects NAME=TEXT, not {def:?}"
        ))),
    }
}

/// The active tools: built-ins and custom tools, filtered and ordered by --tools.
fn active_tools(
    args: &SystemArgs,
    programs: &[std::sync::Arc<dyn pi_tools::CustomTool>],
    default_tools: Option<&[String]>,
) -> anyhow::Result<Vec<Tool>> {
    let mut registry = system::builtin_tools();
    let builtin_count = registry.len();
    let mut custom_names: Vec<String> = Vec::new();
    let mut program_names: Vec<String> = Vec::new();
    for p in programs {
        let t = p.prompt();
        program_names.push(t.name.clone());
        match registry.iter_mut().find(|r| r.name == t.name) {
            Some(r) => *r = t,
            None => registry.push(t),
        }
    }
    for def in &args.tool_snippet {
        let (name, text) = split_def(def, "--tool-snippet")?;
        let snippet = Tool::custom(&name, Some(&text), &[]).snippet;
        match registry.iter_mut().find(|t| t.name == name) {
            Some(t) => t.snippet = snippet,
            None => {
                custom_names.push(name.clone());
                registry.push(Tool {
                    name,
                    snippet,
                    guidelines: Vec::new(),
                });
            }
        }
    }
    for def in &args.tool_guideline {
        let (name, text) = split_def(def, "--tool-guideline")?;
        let idx = match registry.iter().position(|t| t.name == name) {
            Some(i) => i,
            None => {
                custom_names.push(name.clone());
                registry.push(Tool::custom(&name, None, &[]));
                registry.len() - 1
            }
        };
        let t = &mut registry[idx];
        let mut g = t.guidelines.clone();
        g.push(text);
        let snippet = t.snippet.clone();
        *t = Tool::custom(&name, None, &g);
        t.snippet = snippet;
    }
    let names: Vec<String> = match &args.tools {
        Some(list) => list
            .iter()
            .map(|n| n.trim().to_owned())
            .filter(|n| !n.is_empty())
            .collect(),
        None if args.no_tools => Vec::new(),
        // `defaultTools` in the settings chooses the built-in tools, as for `pi run`.
        None => {
            let sel = pi_tools::Selection {
                list: None,
                no_tools: false,
                no_builtin_tools: false,
                default_tools,
            };
            let builtin = sel
                .default_names()
                .unwrap_or_else(|| DEFAULT_TOOLS.iter().map(|s| (*s).to_owned()).collect());
            let removed = |n: &str| {
                default_tools.is_some_and(|d| d.iter().any(|e| e.strip_prefix('-') == Some(n)))
            };
            builtin
                .into_iter()
                .chain(program_names.into_iter().filter(|n| !removed(n)))
                .chain(custom_names)
                .collect()
        }
    };
    let mut out: Vec<Tool> = Vec::new();
    for n in names {
        if out.iter().any(|t| t.name == n) {
            continue;
        }
        match registry.iter().find(|t| t.name == n) {
            Some(t) => out.push(t.clone()),
            None => {
                let mut known: Vec<&str> = registry[..builtin_count]
                    .iter()
                    .map(|t| t.name.as_str())
                    .collect();
                known.extend(programs.iter().map(|p| p.definition().name.as_str()));
                crate::error::warn(&format!(
                    "unknown tool '{n}' ignored (tools: {})",
                    known.join(", ")
                ));
            }
        }
    }
    Ok(out)
}

pub fn run(args: SystemArgs, ctx: &mut Ctx) -> anyhow::Result<ExitStatus> {
    let (cwd, res) = args.discovery.load(ctx)?;
    super::warn_missing_paths(&res);
    let agent_dir = ctx.dirs.agent_dir.clone();
    let project = pi_tools::project::Project::load(&agent_dir, &cwd);
    let mut tool_warnings = project.warnings.clone();
    tool_warnings.extend(project.refused.clone());
    let programs = pi_tools::program::discover(
        &agent_dir,
        &project,
        &ctx.cwd,
        &args.tool,
        &mut tool_warnings,
    )
    .map_err(crate::error::usage)?;
    for w in &tool_warnings {
        crate::error::warn(w);
    }
    let default_tools = crate::cmd::run::default_tools(&agent_dir, &cwd);
    let tools = active_tools(&args, &programs, default_tools.as_deref())?;

    let custom = args.system_prompt.custom(&ctx.cwd)?;
    let assembled =
        args.system_prompt
            .assemble(custom, (&cwd, &agent_dir, &ctx.cwd), &tools, &res.skills);
    let text = assembled.text;
    let context_files = assembled.context_files;
    if args.json {
        let has_read = tools.iter().any(|t| t.name == "read" || t.name == "bash");
        let skills: Vec<&str> = res
            .skills
            .iter()
            .filter(|s| has_read && !s.disable_model_invocation)
            .map(|s| s.name.as_str())
            .collect();
        let tool_names: Vec<&str> = tools.iter().map(|t| t.name.as_str()).collect();
        let files: Vec<&Path> = context_files.iter().map(|f| f.path.as_path()).collect();
        let sections: serde_json::Map<String, serde_json::Value> = assembled
            .sections
            .iter()
            .map(|(n, t)| (n.clone(), json!(t)))
            .collect();
        ctx.out.json(&json!({
            "text": text,
            "sections": sections,
            "tools": tool_names,
            "contextFiles": files,
            "skills": skills,
        }))?;
    } else {
        ctx.out.line(text.as_bytes())?;
    }
    Ok(ExitStatus::Success)
}
