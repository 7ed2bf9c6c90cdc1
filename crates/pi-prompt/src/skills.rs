//! Skills: Markdown files with a `name` and a `description` in their frontmatter, validated
//! against the Agent Skills rules, listed for the model in the system prompt and expanded by
//! `/skill:name args`.

use std::collections::HashSet;
use std::path::{Path, PathBuf};

use super::ignore;
use super::text::escape_xml;
use super::{Diagnostic, ResourceKind, Scope, SourceInfo, frontmatter, fsx};
use pi_base::js;

const MAX_NAME: usize = 64;
const MAX_DESCRIPTION: usize = 1024;

#[derive(Debug, Clone, PartialEq)]
pub struct Skill {
    pub name: String,
    /// Verbatim (multi-line descriptions keep their newlines).
    pub description: String,
    pub path: PathBuf,
    /// The directory holding the skill file; references in the skill are relative to it.
    pub base_dir: PathBuf,
    pub source: SourceInfo,
    /// `disable-model-invocation: true`: only `/skill:name` can use it, the model is not told.
    pub disable_model_invocation: bool,
}

/// What the Agent Skills rules say about a name (since the reference 1.6, a name that differs
/// from its directory's is fine).
fn name_problems(name: &str) -> Vec<String> {
    let mut out = Vec::new();
    let len = js::utf16_len(name);
    if len > MAX_NAME {
        out.push(format!("name exceeds {MAX_NAME} characters ({len})"));
    }
    if name.is_empty()
        || !name
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
    {
        out.push(
            "name contains invalid characters (must be lowercase a-z, 0-9, hyphens only)"
                .to_owned(),
        );
    }
    if name.starts_with('-') || name.ends_with('-') {
        out.push("name must not start or end with a hyphen".to_owned());
    }
    if name.contains("--") {
        out.push("name must not contain consecutive hyphens".to_owned());
    }
    out
}

/// Loads and validates one skill file. Every problem is a warning; the skill is still loaded
/// unless its description is missing, blank or not text, or the file cannot be read or
/// parsed. A file not named `SKILL.md` (a root `*.md` of a skills directory) that has no
/// description, or whose frontmatter is not valid YAML, is no skill and is skipped without a
/// word, so a `README.md` there is not reported. The name is the frontmatter's `name` when
/// that is non-empty text, else the directory's name.
pub(crate) fn load_file(
    path: &Path,
    source_of: &dyn Fn(&Path, &Path) -> SourceInfo,
) -> (Option<Skill>, Vec<Diagnostic>) {
    let mut diags = Vec::new();
    let declared = path.file_name().is_some_and(|n| n == "SKILL.md");
    let raw = match super::read_text(path) {
        Ok(r) => r,
        Err(e) => {
            diags.push(Diagnostic::warning(e.to_string(), path));
            return (None, diags);
        }
    };
    let parsed = match frontmatter::parse(&raw) {
        Ok(p) => p,
        Err(e) => {
            if declared {
                diags.push(Diagnostic::warning(e.0, path));
            }
            return (None, diags);
        }
    };
    let description = parsed
        .get("description")
        .and_then(frontmatter::Yaml::as_str)
        .filter(|d| !js::trim(d).is_empty());
    if !declared && description.is_none() {
        return (None, diags);
    }
    let base_dir = path.parent().map(Path::to_path_buf).unwrap_or_default();
    let parent = base_dir
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    match description {
        Some(d) => {
            let len = js::utf16_len(d);
            if len > MAX_DESCRIPTION {
                diags.push(Diagnostic::warning(
                    format!("description exceeds {MAX_DESCRIPTION} characters ({len})"),
                    path,
                ));
            }
        }
        None => diags.push(Diagnostic::warning("description is required", path)),
    }
    let name = parsed
        .get("name")
        .and_then(frontmatter::Yaml::as_str)
        .filter(|n| !n.is_empty())
        .map_or(parent, str::to_owned);
    for p in name_problems(&name) {
        diags.push(Diagnostic::warning(p, path));
    }
    let Some(description) = description.map(str::to_owned) else {
        return (None, diags);
    };
    let disable = matches!(
        parsed.get("disable-model-invocation"),
        Some(frontmatter::Yaml::Bool(true))
    );
    let source = source_of(path, &base_dir);
    (
        Some(Skill {
            name,
            description,
            path: path.to_path_buf(),
            base_dir,
            source,
            disable_model_invocation: disable,
        }),
        diags,
    )
}

/// Loads the skills of a directory given explicitly: if it holds a `SKILL.md`, that file
/// alone; otherwise its `*.md` files and, in sub-directories (recursively), `SKILL.md` files,
/// where again a directory with a `SKILL.md` is not searched further. Dot-names,
/// `node_modules` and ignored paths are skipped.
pub(crate) fn load_dir(
    dir: &Path,
    source_of: &dyn Fn(&Path, &Path) -> SourceInfo,
) -> (Vec<Skill>, Vec<Diagnostic>) {
    let mut skills = Vec::new();
    let mut diags = Vec::new();
    for file in collect_files(dir, Mode::Pi) {
        let (s, d) = load_file(&file, source_of);
        skills.extend(s);
        diags.extend(d);
    }
    (skills, diags)
}

/// Which auto-discovery rules apply to a skills directory: in "pi" directories (the agent
/// directory's and the project's `.pi/skills`, settings entries) root-level `*.md` files are
/// skills; in `.agents/skills` directories root-level ones are not, but those in grouping
/// directories below (without a `SKILL.md`) are, as in the reference 1.6.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    Pi,
    Agents,
}

/// The skill files auto-discovery collects in `dir` (see [`Mode`]); a directory with a
/// `SKILL.md` contributes that file only.
pub(crate) fn collect_files(dir: &Path, mode: Mode) -> Vec<PathBuf> {
    let mut out = Vec::new();
    ignore::walk(dir, Some("SKILL.md"), &mut |e, at_root| {
        // A file named SKILL.md only gets here as the one its directory is claimed by.
        let loose = e.name.ends_with(".md") && (at_root == (mode == Mode::Pi));
        if e.name == "SKILL.md" || loose {
            out.push(e.path.clone());
        }
    });
    out
}

/// Skills accepted so far: first name wins, the same real file is taken once.
#[derive(Debug, Default)]
pub(crate) struct SkillSet {
    pub skills: Vec<Skill>,
    pub diagnostics: Vec<Diagnostic>,
    pub collisions: Vec<Diagnostic>,
    real_paths: HashSet<PathBuf>,
}

impl SkillSet {
    pub(crate) fn add(&mut self, skills: Vec<Skill>, diags: Vec<Diagnostic>) {
        self.diagnostics.extend(diags);
        for s in skills {
            let real = fsx::canonical(&s.path);
            if self.real_paths.contains(&real) {
                continue;
            }
            if let Some(w) = self.skills.iter().find(|w| w.name == s.name) {
                self.collisions.push(Diagnostic::collision(
                    ResourceKind::Skill,
                    &s.name,
                    &w.path,
                    &s.path,
                ));
            } else {
                self.real_paths.insert(real);
                self.skills.push(s);
            }
        }
    }

    /// Skills, then loading diagnostics followed by collisions.
    pub(crate) fn finish(self) -> (Vec<Skill>, Vec<Diagnostic>) {
        let mut d = self.diagnostics;
        d.extend(self.collisions);
        (self.skills, d)
    }
}

/// Loads skills from explicit paths (files or directories, already resolved), classifying
/// each by where it lies: under `user_dir` → user, under `project_dir` → project, else a
/// temporary path.
pub(crate) fn load_paths(
    paths: &[PathBuf],
    user_dir: &Path,
    project_dir: &Path,
) -> (Vec<Skill>, Vec<Diagnostic>) {
    let mut set = SkillSet::default();
    for p in paths {
        let scope = if fsx::is_under(p, user_dir) {
            Scope::User
        } else if fsx::is_under(p, project_dir) {
            Scope::Project
        } else {
            Scope::Temporary
        };
        let source_of = move |_: &Path, base: &Path| SourceInfo {
            source: "local",
            scope,
            base_dir: base.to_path_buf(),
        };
        let meta = std::fs::metadata(p);
        match meta {
            Err(_) => set
                .diagnostics
                .push(Diagnostic::warning("skill path does not exist", p)),
            Ok(m) if m.is_dir() => {
                let (s, d) = load_dir(p, &source_of);
                set.add(s, d);
            }
            Ok(m) if m.is_file() && p.to_string_lossy().ends_with(".md") => {
                let (s, d) = load_file(p, &source_of);
                match s {
                    Some(s) => set.add(vec![s], d),
                    None => set.diagnostics.extend(d),
                }
            }
            Ok(_) => set
                .diagnostics
                .push(Diagnostic::warning("skill path is not a markdown file", p)),
        }
    }
    set.finish()
}

/// The skills index for the system prompt (skills hidden from the model are left out; empty
/// when none remain). The XML is upstream's, since the model reads it; the instructions
/// before it are ours, covering the same points.
pub fn format_index(skills: &[Skill], reader: &str) -> String {
    let visible: Vec<&Skill> = skills
        .iter()
        .filter(|s| !s.disable_model_invocation)
        .collect();
    if visible.is_empty() {
        return String::new();
    }
    let mut lines = vec![
        "\n\nThe following skills provide specialized instructions for particular kinds of work.".to_owned(),
        match reader {
            "read" => "Use the read tool to load a skill's file once the task at hand fits its description.",
            "bash" => "Use bash to load a skill's file once the task at hand fits its description.",
            _ => "Load a skill's file once the task at hand fits its description.",
        }
        .to_owned(),
        "Paths in a skill file are relative to the folder holding its SKILL.md: make them absolute before passing them to a tool.".to_owned(),
        String::new(),
        "<available_skills>".to_owned(),
    ];
    for s in visible {
        lines.push("  <skill>".to_owned());
        lines.push(format!("    <name>{}</name>", escape_xml(&s.name)));
        lines.push(format!(
            "    <description>{}</description>",
            escape_xml(&s.description)
        ));
        lines.push(format!(
            "    <location>{}</location>",
            escape_xml(&s.path.to_string_lossy())
        ));
        lines.push("  </skill>".to_owned());
    }
    lines.push("</available_skills>".to_owned());
    lines.join("\n")
}

/// Why `/skill:name` could not be expanded.
#[derive(Debug)]
pub enum ExpandError {
    Unknown(String),
    Read(PathBuf, std::io::Error),
}

/// Expands `/skill:name args` into the block the model sees:
/// `<skill name="…" location="…">`, a line saying what references are relative to, the body,
/// `</skill>`, then the arguments after a blank line. `Ok(None)` if `text` is not a skill
/// command.
pub fn expand<'a>(
    text: &str,
    skills: &'a [Skill],
) -> Result<Option<(String, &'a Skill)>, ExpandError> {
    let Some(rest) = text.strip_prefix("/skill:") else {
        return Ok(None);
    };
    let (name, args) = match rest.find(' ') {
        Some(i) => (&rest[..i], js::trim(&rest[i + 1..])),
        None => (rest, ""),
    };
    let Some(skill) = skills.iter().find(|s| s.name == name) else {
        return Err(ExpandError::Unknown(name.to_owned()));
    };
    let raw =
        super::read_text(&skill.path).map_err(|e| ExpandError::Read(skill.path.clone(), e))?;
    let body = frontmatter::strip(&raw);
    let body = js::trim(&body);
    let block = format!(
        "<skill name=\"{}\" location=\"{}\">\nReferences are relative to {}.\n\n{body}\n</skill>",
        skill.name,
        skill.path.display(),
        skill.base_dir.display()
    );
    Ok(Some((
        if args.is_empty() {
            block
        } else {
            format!("{block}\n\n{args}")
        },
        skill,
    )))
}
