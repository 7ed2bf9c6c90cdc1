//! The system prompt: a custom one (`SYSTEM.md`, `--system-prompt`) or our default text with
//! the active tools and the rules that depend on them, then the appended text, the context
//! files, the skills index and the working directory, as named sections in the layout of the
//! reference 1.6 (which records them in the session as system messages).

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
    pub cwd: String,
}

/// The last line of the default text's documentation section.
pub const DOCS_LAST_LINE: &str =
    "- Read a page to the end and follow its references to related pages before acting on it";

/// The prompt as the reference 1.6 records it: named sections in order. `preamble` is plain
/// text; every other section is wrapped in a tag of its name (`<tools>…</tools>`), so a later
/// system message can replace it by name.
pub type Sections = Vec<(String, String)>;

fn tool_list(tools: &[Tool]) -> String {
    let listed: Vec<String> = tools
        .iter()
        .filter_map(|t| t.snippet.as_ref().map(|s| format!("- {}: {s}", t.name)))
        .collect();
    let list = if listed.is_empty() {
        "(none)".to_owned()
    } else {
        listed.join("\n")
    };
    format!("{list}\n\nThe project may give you further custom tools besides the ones listed here.")
}

fn rules(tools: &[Tool]) -> String {
    let names: Vec<&str> = tools.iter().map(|t| t.name.as_str()).collect();
    let mut rules: Vec<String> = Vec::new();
    let mut seen = HashSet::new();
    let mut add = |g: &str| {
        let g = js::trim(g);
        if !g.is_empty() && seen.insert(g.to_owned()) {
            rules.push(format!("- {g}"));
        }
    };
    let has = |n: &str| names.contains(&n);
    if has("bash") && !(has("grep") || has("find") || has("ls")) {
        add("Use bash for file work such as ls, rg and find");
    }
    for t in tools {
        for g in &t.guidelines {
            add(g);
        }
    }
    add("Keep your responses concise");
    add("Show file paths clearly whenever you work with files");
    rules.join("\n")
}

const PREAMBLE: &str = "You are a coding assistant with deep software engineering expertise, running inside pi, a harness for coding agents. \
You work on the user's behalf: you read files, run commands, change code and create new files.";

fn docs() -> String {
    format!(
        "Documentation for pi (consult it only when the user asks about pi itself: its sessions, prompt templates, skills, system prompt or commands):
- Overview: `pi --help`; each command explains itself with `pi <command> --help`
- Manual pages: `man pi`, one page per command group (`man pi-session`, `man pi-prompt`) and one per command (`man pi-session-append`, `man pi-prompt-expand`, ...)
- Where to look: session files and their entries (pi-session), templates and skills (pi-prompt-expand, pi-prompt-list), the system prompt (pi-prompt-system)
{DOCS_LAST_LINE}"
    )
}

/// The intro line of the project context section.
pub const PROJECT_CONTEXT_INTRO: &str = "Instructions for this project, from its context files:";

fn project_context(files: &[ContextFile]) -> String {
    let mut parts = vec![PROJECT_CONTEXT_INTRO.to_owned()];
    for f in files {
        parts.push(format!(
            "<project_instructions path=\"{}\">\n{}\n</project_instructions>",
            f.path.display(),
            f.content
        ));
    }
    parts.join("\n\n")
}

/// The prompt's sections, in the reference 1.6's order: `preamble` (the custom prompt, or
/// our default text followed by `tools`, `rules` and `docs`), then `addendum` (appended
/// text), `project_context` (context files), `skills` (when `read` or `bash` can load them)
/// and `cwd`.
pub fn sections(o: &Options<'_>) -> Sections {
    let mut raw: Vec<(&str, String)> = Vec::new();
    match o.custom_prompt.as_deref().filter(|c| !c.is_empty()) {
        Some(c) => raw.push(("preamble", c.to_owned())),
        None => {
            raw.push(("preamble", PREAMBLE.to_owned()));
            raw.push(("tools", tool_list(o.tools)));
            raw.push(("rules", rules(o.tools)));
            raw.push(("docs", docs()));
        }
    }
    if let Some(a) = o.append.as_deref().filter(|a| !a.is_empty()) {
        raw.push(("addendum", a.to_owned()));
    }
    if !o.context_files.is_empty() {
        raw.push(("project_context", project_context(o.context_files)));
    }
    let reader = ["read", "bash"]
        .into_iter()
        .find(|r| o.tools.iter().any(|t| t.name == *r));
    if let Some(reader) = reader {
        let index = skills::format_index(o.skills, reader);
        let index = index.trim();
        if !index.is_empty() {
            raw.push(("skills", index.to_owned()));
        }
    }
    raw.push(("cwd", o.cwd.replace('\\', "/")));
    raw.into_iter()
        .filter(|(_, text)| !text.is_empty())
        .map(|(name, text)| {
            let text = if name == "preamble" {
                text
            } else {
                format!("<{name}>\n{text}\n</{name}>")
            };
            (name.to_owned(), text)
        })
        .collect()
}

/// The prompt text of `sections`: each one, in order, separated by a blank line (the
/// reference 1.6's `getSystemMessageText`).
pub fn render(sections: &Sections) -> String {
    let parts: Vec<&str> = sections
        .iter()
        .map(|(_, t)| t.as_str())
        .filter(|t| !t.is_empty())
        .collect();
    parts.join("\n\n")
}

/// Builds the system prompt text.
pub fn build(o: &Options<'_>) -> String {
    render(&sections(o))
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
            cwd: "/w".to_owned(),
        }
    }

    fn section<'a>(s: &'a Sections, name: &str) -> Option<&'a str> {
        s.iter().find(|(n, _)| n == name).map(|(_, t)| t.as_str())
    }

    #[test]
    fn empty_tool_list() {
        let s = sections(&opts(&[]));
        let names: Vec<&str> = s.iter().map(|(n, _)| n.as_str()).collect();
        assert_eq!(names, ["preamble", "tools", "rules", "docs", "cwd"]);
        assert!(
            section(&s, "tools")
                .unwrap()
                .starts_with("<tools>\n(none)\n")
        );
        assert!(
            section(&s, "rules")
                .unwrap()
                .contains("Show file paths clearly")
        );
        assert_eq!(section(&s, "cwd"), Some("<cwd>\n/w\n</cwd>"));
        assert!(build(&opts(&[])).ends_with("\n\n<cwd>\n/w\n</cwd>"));
    }

    #[test]
    fn default_tools_and_rules() {
        let t = tools(&DEFAULT_TOOLS);
        let s = sections(&opts(&t));
        let list = section(&s, "tools").unwrap();
        for n in DEFAULT_TOOLS {
            assert!(list.contains(&format!("\n- {n}: ")), "{n}");
        }
        let rules: Vec<&str> = section(&s, "rules").unwrap().lines().collect();
        assert_eq!(rules.len(), 2 + 9, "{rules:?}");
        assert!(rules[1].contains("bash"));
    }

    #[test]
    fn bash_rule_depends_on_tools() {
        let p = build(&opts(&tools(&["bash"])));
        assert!(p.contains("- Use bash for file work"));
        let p = build(&opts(&tools(&["bash", "grep"])));
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
            cwd: "C:\\w".into(),
        };
        assert_eq!(
            build(&o),
            format!(
                "X\n\n<addendum>\nY\n</addendum>\n\n<project_context>\n{PROJECT_CONTEXT_INTRO}\n\n<project_instructions path=\"/p/AGENTS.md\">\nC\n</project_instructions>\n</project_context>\n\n<cwd>\nC:/w\n</cwd>"
            )
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
}

/// A system prompt put together, with what went into it.
#[derive(Debug, Clone)]
pub struct Assembled {
    pub text: String,
    pub sections: Sections,
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
        let sections = sections(&Options {
            custom_prompt: custom,
            append: (!append.is_empty()).then(|| append.join("\n\n")),
            tools: self.tools,
            context_files: &context_files,
            skills: self.skills,
            cwd: self.cwd.to_string_lossy().into_owned(),
        });
        Assembled {
            text: render(&sections),
            sections,
            context_files,
            warnings,
        }
    }
}
