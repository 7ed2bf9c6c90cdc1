//! The system prompt: a custom one (`SYSTEM.md`, `--system-prompt`) or our default text with
//! the active tools and the guidelines that depend on them, then the appended text, the
//! context files, the skills index, the date and the working directory — in upstream's layout.

use std::collections::HashSet;
use std::path::Path;

use super::context::ContextFile;
use super::skills::{self, Skill};
use super::text::one_line;
use pi_base::js;

/// A tool as the system prompt sees it: a one-line summary (a tool without one is not listed)
/// and the guidelines it adds.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Tool {
    pub name: String,
    pub snippet: Option<String>,
    pub guidelines: Vec<String>,
}

impl Tool {
    fn new(name: &str, snippet: &str, guidelines: &[&str]) -> Tool {
        Tool {
            name: name.to_owned(),
            snippet: Some(snippet.to_owned()),
            guidelines: guidelines.iter().map(|g| (*g).to_owned()).collect(),
        }
    }

    /// A tool defined by the caller; the snippet is flattened to one line and guidelines are
    /// trimmed, with blank and repeated ones dropped.
    pub fn custom(name: &str, snippet: Option<&str>, guidelines: &[String]) -> Tool {
        let snippet = snippet.map(one_line).filter(|s| !s.is_empty());
        let mut seen = HashSet::new();
        let guidelines = guidelines
            .iter()
            .map(|g| js::trim(g).to_owned())
            .filter(|g| !g.is_empty() && seen.insert(g.clone()))
            .collect();
        Tool {
            name: name.to_owned(),
            snippet,
            guidelines,
        }
    }
}

/// The tools active when none are chosen.
pub const DEFAULT_TOOLS: [&str; 4] = ["read", "bash", "edit", "write"];

/// The built-in tools of the agent, with their one-liners and guidelines.
pub fn builtin_tools() -> Vec<Tool> {
    vec![
        Tool::new(
            "read",
            "Show the contents of a file",
            &["Look at files with read rather than with cat or sed."],
        ),
        Tool::new(
            "bash",
            "Run a shell command (ls, grep, find and the like)",
            &[],
        ),
        Tool::new(
            "edit",
            "Change a file by replacing exact pieces of its text; one call can make several separate changes",
            &[
                "Use edit for targeted changes; every edits[].oldText has to match the file exactly",
                "To change several places in one file, make one edit call with several entries in edits[] rather than several calls",
                "Every edits[].oldText is matched against the file as it was before the call, not as earlier edits leave it. Edits must not overlap or nest; merge changes that sit close together into one edit.",
                "Make each edits[].oldText as short as it can be while staying unique in the file. Do not pad it with long unchanged stretches.",
            ],
        ),
        Tool::new(
            "write",
            "Create a file, or replace everything in one",
            &["Use write only to create files or to rewrite one completely."],
        ),
        Tool::new(
            "grep",
            "Search file contents for a pattern, skipping what .gitignore excludes",
            &[],
        ),
        Tool::new(
            "find",
            "Find files whose paths match a glob pattern, skipping what .gitignore excludes",
            &[],
        ),
        Tool::new("ls", "List what a directory contains", &[]),
    ]
}

/// Everything the system prompt is built from.
#[derive(Debug, Clone)]
pub struct Options<'a> {
    /// A custom prompt replacing the default text (ignored when empty).
    pub custom_prompt: Option<String>,
    /// Text appended after the prompt (the values joined with blank lines).
    pub append: Option<String>,
    /// The active tools, in order.
    pub tools: &'a [Tool],
    pub context_files: &'a [ContextFile],
    pub skills: &'a [Skill],
    /// `YYYY-MM-DD`.
    pub date: String,
    pub cwd: String,
}

/// The last line of the default text's documentation block (everything after it is the
/// appended text, context files, skills, date and working directory, as upstream lays them
/// out).
pub const DOCS_LAST_LINE: &str =
    "- Read a page to the end and follow its references to related pages before acting on it";

fn default_head(tools: &[Tool]) -> String {
    let names: Vec<&str> = tools.iter().map(|t| t.name.as_str()).collect();
    let listed: Vec<String> = tools
        .iter()
        .filter_map(|t| t.snippet.as_ref().map(|s| format!("- {}: {s}", t.name)))
        .collect();
    let tool_list = if listed.is_empty() {
        "(none)".to_owned()
    } else {
        listed.join("\n")
    };
    let mut guidelines: Vec<String> = Vec::new();
    let mut seen = HashSet::new();
    let mut add = |g: &str| {
        if seen.insert(g.to_owned()) {
            guidelines.push(g.to_owned());
        }
    };
    let has = |n: &str| names.contains(&n);
    let explorers = has("grep") || has("find") || has("ls");
    if has("bash") && !explorers {
        add("Use bash for file work such as ls, rg and find");
    } else if has("bash") {
        add(
            "For exploring files, prefer the grep, find and ls tools to bash: they are faster and honour .gitignore",
        );
    }
    for t in tools {
        for g in &t.guidelines {
            let g = js::trim(g);
            if !g.is_empty() {
                add(g);
            }
        }
    }
    add("Keep your responses concise");
    add("Show file paths clearly whenever you work with files");
    let guidelines: Vec<String> = guidelines.iter().map(|g| format!("- {g}")).collect();
    format!(
        "You are a coding assistant with deep software engineering expertise, running inside pi, a harness for coding agents. \
You work on the user's behalf: you read files, run commands, change code and create new files.

Available tools:
{tool_list}

The project may give you further custom tools besides the ones listed here.

Guidelines:
{}

Documentation for pi (consult it only when the user asks about pi itself: its sessions, prompt templates, skills, system prompt or commands):
- Overview: `pi --help`; each command explains itself with `pi <command> --help`
- Manual pages: `man pi`, one page per command group (`man pi-session`, `man pi-prompt`) and one per command (`man pi-session-append`, `man pi-prompt-expand`, ...)
- Where to look: session files and their entries (pi-session), templates and skills (pi-prompt-expand, pi-prompt-list), the system prompt (pi-prompt-system)
{DOCS_LAST_LINE}",
        guidelines.join("\n")
    )
}

/// Builds the system prompt.
pub fn build(o: &Options<'_>) -> String {
    let custom = o.custom_prompt.as_deref().filter(|c| !c.is_empty());
    let mut prompt = match custom {
        Some(c) => c.to_owned(),
        None => default_head(o.tools),
    };
    if let Some(a) = o.append.as_deref().filter(|a| !a.is_empty()) {
        prompt.push_str("\n\n");
        prompt.push_str(a);
    }
    if !o.context_files.is_empty() {
        prompt.push_str("\n\n# Project Context\n\n");
        prompt.push_str("Project-specific instructions and guidelines:\n\n");
        for f in o.context_files {
            prompt.push_str(&format!("## {}\n\n{}\n\n", f.path.display(), f.content));
        }
    }
    if o.tools.iter().any(|t| t.name == "read") && !o.skills.is_empty() {
        prompt.push_str(&skills::format_index(o.skills));
    }
    prompt.push_str(&format!("\nCurrent date: {}", o.date));
    prompt.push_str(&format!(
        "\nCurrent working directory: {}",
        o.cwd.replace('\\', "/")
    ));
    prompt
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use super::*;

    fn tools(names: &[&str]) -> Vec<Tool> {
        let all = builtin_tools();
        names
            .iter()
            .filter_map(|n| all.iter().find(|t| t.name == *n).cloned())
            .collect()
    }

    fn opts(tools: &[Tool]) -> Options<'_> {
        Options {
            custom_prompt: None,
            append: None,
            tools,
            context_files: &[],
            skills: &[],
            date: "2026-01-02".to_owned(),
            cwd: "/w".to_owned(),
        }
    }

    #[test]
    fn empty_tool_list() {
        let p = build(&opts(&[]));
        assert!(p.contains("Available tools:\n(none)"));
        assert!(p.contains("Show file paths clearly"));
        assert!(p.ends_with("\nCurrent date: 2026-01-02\nCurrent working directory: /w"));
    }

    #[test]
    fn default_tools_and_guidelines() {
        let t = tools(&DEFAULT_TOOLS);
        let p = build(&opts(&t));
        for n in DEFAULT_TOOLS {
            assert!(p.contains(&format!("\n- {n}: ")), "{n}");
        }
        let g = p.split("Guidelines:\n").nth(1).unwrap();
        let g: Vec<&str> = g.split("\n\n").next().unwrap().lines().collect();
        assert_eq!(g.len(), 9, "{g:?}");
        assert!(g[0].contains("bash"));
    }

    #[test]
    fn exploration_guideline_depends_on_tools() {
        let p = build(&opts(&tools(&["bash"])));
        assert!(p.contains("- Use bash for file work"));
        let p = build(&opts(&tools(&["bash", "grep"])));
        assert!(p.contains("- For exploring files, prefer the grep, find and ls tools"));
        assert!(!p.contains("- Use bash for file work"));
    }

    #[test]
    fn custom_tools() {
        let g = vec![
            "Use dynamic_tool for summaries.".to_owned(),
            "  Use dynamic_tool for summaries.  ".to_owned(),
            "   ".to_owned(),
        ];
        let mut t = tools(&["read"]);
        t.push(Tool::custom(
            "dynamic_tool",
            Some("Run dynamic\n test   behavior"),
            &g,
        ));
        t.push(Tool::custom("silent", None, &[]));
        let p = build(&opts(&t));
        assert!(p.contains("- dynamic_tool: Run dynamic test behavior"));
        assert_eq!(p.matches("- Use dynamic_tool for summaries.").count(), 1);
        assert!(!p.contains("- silent"));
    }

    #[test]
    fn custom_prompt_layout() {
        let files = [ContextFile {
            path: "/p/AGENTS.md".into(),
            content: "C".into(),
        }];
        let t = tools(&DEFAULT_TOOLS);
        let o = Options {
            custom_prompt: Some("X".into()),
            append: Some("Y".into()),
            tools: &t,
            context_files: &files,
            skills: &[],
            date: "2026-01-02".into(),
            cwd: "/w".into(),
        };
        assert_eq!(
            build(&o),
            "X\n\nY\n\n# Project Context\n\nProject-specific instructions and guidelines:\n\n## /p/AGENTS.md\n\nC\n\n\nCurrent date: 2026-01-02\nCurrent working directory: /w"
        );
    }
}

/// Where the parts of the system prompt come from, as `pi run` and `pi prompt system` take
/// them.
pub struct Sources<'a> {
    /// The session's working directory.
    pub cwd: &'a Path,
    pub agent_dir: &'a Path,
    /// Where relative `--append-system-prompt` file names are taken from.
    pub launch_dir: &'a Path,
    /// `--system-prompt` / `--system-prompt-file` (replaces the default text and
    /// `SYSTEM.md`).
    pub custom: Option<String>,
    /// `--append-system-prompt` values (files or text); when given, `APPEND_SYSTEM.md` is
    /// not used.
    pub append: &'a [String],
    /// Whether the AGENTS.md / CLAUDE.md context files are read.
    pub context_files: bool,
    /// The active tools, in order.
    pub tools: &'a [Tool],
    pub skills: &'a [Skill],
    pub now_ms: i64,
}

/// A system prompt put together, with what went into it.
#[derive(Debug, Clone)]
pub struct Assembled {
    pub text: String,
    pub context_files: Vec<ContextFile>,
    pub warnings: Vec<String>,
}

impl Sources<'_> {
    pub fn assemble(&self) -> Assembled {
        let mut warnings = Vec::new();
        let custom = self
            .custom
            .clone()
            .or_else(|| super::discover(self.cwd, self.agent_dir, "SYSTEM.md", &mut warnings));
        let append: Vec<String> = if self.append.is_empty() {
            super::discover(self.cwd, self.agent_dir, "APPEND_SYSTEM.md", &mut warnings)
                .into_iter()
                .collect()
        } else {
            self.append
                .iter()
                .filter_map(|v| super::file_or_literal(v, self.launch_dir, &mut warnings))
                .collect()
        };
        let context_files = if self.context_files {
            super::context::load(self.cwd, self.agent_dir, &mut warnings)
        } else {
            Vec::new()
        };
        let text = build(&Options {
            custom_prompt: custom,
            append: (!append.is_empty()).then(|| append.join("\n\n")),
            tools: self.tools,
            context_files: &context_files,
            skills: self.skills,
            date: pi_base::clock::local_date(self.now_ms),
            cwd: self.cwd.to_string_lossy().into_owned(),
        });
        Assembled {
            text,
            context_files,
            warnings,
        }
    }
}
