//! Discovery of prompt templates and skills, in upstream's places and order:
//!
//! 1. entries of the `prompts` / `skills` arrays in `<cwd>/.pi/settings.json`, then in
//!    `<agent dir>/settings.json` (paths relative to `<cwd>/.pi` and the agent directory;
//!    entries starting with `!`, `+`, `-` or holding `*`/`?` are patterns that filter);
//! 2. auto-discovered files: `<cwd>/.pi/prompts/*.md`, `<cwd>/.pi/skills`, the `.agents/skills`
//!    directories from the cwd up to the git root, then `<agent dir>/prompts/*.md`,
//!    `<agent dir>/skills` and `~/.agents/skills`;
//! 3. ranked (project settings, project auto, user settings, user auto; stable), de-duplicated
//!    by real path, and followed by the explicit `--prompt-dir` / `--skill-dir` paths.
//!
//! The first template or skill of a name wins; later ones are reported as collisions.

use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};

use super::glob::minimatch;
use super::ignore::{self, Ignore};
use super::skills::{self, Mode, Skill};
use super::templates::{self, Template};
use super::{Diagnostic, ResourceKind, Scope, SourceInfo, fsx};

/// What to discover.
#[derive(Debug, Clone)]
pub struct Options {
    pub cwd: PathBuf,
    pub agent_dir: PathBuf,
    pub home: PathBuf,
    /// Explicit template paths (files or directories), as given.
    pub prompt_paths: Vec<String>,
    /// Explicit skill paths (files or directories), as given.
    pub skill_paths: Vec<String>,
    /// Skip settings entries and auto-discovery for templates (explicit paths still load).
    pub no_prompts: bool,
    /// Skip settings entries and auto-discovery for skills (explicit paths still load).
    pub no_skills: bool,
}

/// Everything found.
#[derive(Debug, Default)]
pub struct Resources {
    pub templates: Vec<Template>,
    pub template_diagnostics: Vec<Diagnostic>,
    pub skills: Vec<Skill>,
    pub skill_diagnostics: Vec<Diagnostic>,
    /// Settings files that could not be read (shown as warnings).
    pub warnings: Vec<String>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    Prompts,
    Skills,
}

#[derive(Debug, Clone)]
struct Meta {
    source: &'static str,
    scope: Scope,
    base_dir: PathBuf,
}

impl Meta {
    fn rank(&self) -> u8 {
        let base = if self.scope == Scope::Project { 0 } else { 2 };
        base + u8::from(self.source != "local")
    }

    fn info(&self) -> SourceInfo {
        SourceInfo {
            source: self.source,
            scope: self.scope,
            base_dir: self.base_dir.clone(),
        }
    }
}

/// Resources in insertion order; the first insertion of a path wins.
#[derive(Default)]
struct Acc {
    items: Vec<(PathBuf, Meta, bool)>,
    seen: HashSet<PathBuf>,
}

impl Acc {
    fn add(&mut self, path: PathBuf, meta: &Meta, enabled: bool) {
        if self.seen.insert(path.clone()) {
            self.items.push((path, meta.clone(), enabled));
        }
    }

    /// Ranked, de-duplicated by real path; returns the enabled paths and the metadata of every
    /// path.
    fn resolve(mut self) -> (Vec<PathBuf>, HashMap<PathBuf, Meta>) {
        self.items.sort_by_key(|(_, m, _)| m.rank());
        let mut seen = HashSet::new();
        self.items
            .retain(|(p, _, _)| seen.insert(fsx::canonical(p)));
        let mut metas = HashMap::new();
        for (p, m, _) in &self.items {
            metas.entry(p.clone()).or_insert_with(|| m.clone());
        }
        let enabled = self
            .items
            .into_iter()
            .filter(|(_, _, e)| *e)
            .map(|(p, _, _)| p)
            .collect();
        (enabled, metas)
    }
}

#[derive(Debug, Default, Clone)]
struct Settings {
    prompts: Vec<String>,
    skills: Vec<String>,
}

impl Settings {
    fn entries(&self, kind: Kind) -> &[String] {
        match kind {
            Kind::Prompts => &self.prompts,
            Kind::Skills => &self.skills,
        }
    }
}

fn read_settings(path: &Path, warnings: &mut Vec<String>) -> Settings {
    let Ok(bytes) = std::fs::read(path) else {
        return Settings::default();
    };
    let v: serde_json::Value = match serde_json::from_slice(&bytes) {
        Ok(v) => v,
        Err(e) => {
            warnings.push(format!("ignoring {}: {e}", path.display()));
            return Settings::default();
        }
    };
    let strings = |v: Option<&serde_json::Value>| -> Vec<String> {
        v.and_then(serde_json::Value::as_array)
            .map(|a| {
                a.iter()
                    .filter_map(|x| x.as_str().map(str::to_owned))
                    .collect()
            })
            .unwrap_or_default()
    };
    // The old form `"skills": {"customDirectories": [...]}` means the same as an array.
    let skills = match v.get("skills") {
        Some(serde_json::Value::Object(o)) => strings(o.get("customDirectories")),
        s => strings(s),
    };
    Settings {
        prompts: strings(v.get("prompts")),
        skills,
    }
}

fn is_pattern(s: &str) -> bool {
    s.starts_with(['!', '+', '-']) || s.contains(['*', '?'])
}

/// `**/x` style pattern matching of a resource against the relative path, the file name or the
/// absolute path (and, for a `SKILL.md`, the same for its directory).
fn matches_any(path: &Path, patterns: &[&str], base: &Path) -> bool {
    let rel = fsx::relative(base, path);
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let abs = path.to_string_lossy().replace('\\', "/");
    let skill_dir = (name == "SKILL.md").then(|| path.parent()).flatten();
    patterns.iter().any(|p| {
        let p = p.replace('\\', "/");
        if minimatch(&rel, &p) || minimatch(&name, &p) || minimatch(&abs, &p) {
            return true;
        }
        skill_dir.is_some_and(|d| {
            let drel = fsx::relative(base, d);
            let dname = d
                .file_name()
                .map(|n| n.to_string_lossy().into_owned())
                .unwrap_or_default();
            minimatch(&drel, &p)
                || minimatch(&dname, &p)
                || minimatch(&d.to_string_lossy().replace('\\', "/"), &p)
        })
    })
}

/// Exact matching for `+path` / `-path`.
fn matches_any_exact(path: &Path, patterns: &[&str], base: &Path) -> bool {
    let rel = fsx::relative(base, path);
    let abs = path.to_string_lossy().replace('\\', "/");
    let skill_dir = path
        .file_name()
        .filter(|n| *n == "SKILL.md")
        .and_then(|_| path.parent());
    patterns.iter().any(|p| {
        let p = p
            .strip_prefix("./")
            .or_else(|| p.strip_prefix(".\\"))
            .unwrap_or(p)
            .replace('\\', "/");
        if p == rel || p == abs {
            return true;
        }
        skill_dir.is_some_and(|d| {
            p == fsx::relative(base, d) || p == d.to_string_lossy().replace('\\', "/")
        })
    })
}

/// Whether the override patterns (`!x`, `+x`, `-x`) of a settings array leave an
/// auto-discovered file enabled.
fn enabled_by_overrides(path: &Path, entries: &[String], base: &Path) -> bool {
    let with =
        |c: char| -> Vec<&str> { entries.iter().filter_map(|e| e.strip_prefix(c)).collect() };
    let (ex, inc, fex) = (with('!'), with('+'), with('-'));
    let mut enabled = true;
    if !ex.is_empty() && matches_any(path, &ex, base) {
        enabled = false;
    }
    if !inc.is_empty() && matches_any_exact(path, &inc, base) {
        enabled = true;
    }
    if !fex.is_empty() && matches_any_exact(path, &fex, base) {
        enabled = false;
    }
    enabled
}

/// Which of `all` the patterns of a settings array enable.
fn apply_patterns(all: &[PathBuf], patterns: &[&str], base: &Path) -> HashSet<PathBuf> {
    let mut inc = Vec::new();
    let mut ex = Vec::new();
    let mut finc = Vec::new();
    let mut fex = Vec::new();
    for p in patterns {
        if let Some(x) = p.strip_prefix('+') {
            finc.push(x);
        } else if let Some(x) = p.strip_prefix('-') {
            fex.push(x);
        } else if let Some(x) = p.strip_prefix('!') {
            ex.push(x);
        } else {
            inc.push(*p);
        }
    }
    let mut result: Vec<&PathBuf> = if inc.is_empty() {
        all.iter().collect()
    } else {
        all.iter().filter(|f| matches_any(f, &inc, base)).collect()
    };
    if !ex.is_empty() {
        result.retain(|f| !matches_any(f, &ex, base));
    }
    if !finc.is_empty() {
        for f in all {
            if !result.contains(&f) && matches_any_exact(f, &finc, base) {
                result.push(f);
            }
        }
    }
    if !fex.is_empty() {
        result.retain(|f| !matches_any_exact(f, &fex, base));
    }
    result.into_iter().cloned().collect()
}

/// All `*.md` files below `dir` (recursively, honouring ignore files).
fn collect_md_recursive(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    ignore::walk(dir, None, &mut |e, _| {
        if e.name.ends_with(".md") {
            out.push(e.path.clone());
        }
    });
    out
}

/// The direct `*.md` children of a prompts directory (honouring its ignore files).
fn collect_auto_prompts(dir: &Path) -> Vec<PathBuf> {
    let mut ig = Ignore::default();
    if !dir.exists() {
        return Vec::new();
    }
    ig.add_dir(dir, dir);
    let Some(entries) = fsx::list(dir) else {
        return Vec::new();
    };
    entries
        .into_iter()
        .filter(|e| !e.name.starts_with('.') && e.name != "node_modules")
        .filter(|e| !ig.ignores(&fsx::relative(dir, &e.path)))
        .filter(|e| e.is_file && e.name.ends_with(".md"))
        .map(|e| e.path)
        .collect()
}

fn collect_resource_files(dir: &Path, kind: Kind) -> Vec<PathBuf> {
    match kind {
        Kind::Skills => skills::collect_files(dir, Mode::Pi),
        Kind::Prompts => collect_md_recursive(dir),
    }
}

/// `<dir>/.agents/skills` for the cwd and each ancestor up to the git root (the first
/// ancestor holding `.git`), or to the file system root outside a repository.
pub(crate) fn ancestor_agents_skill_dirs(cwd: &Path) -> Vec<PathBuf> {
    let git_root = cwd.ancestors().find(|d| d.join(".git").exists());
    let mut out = Vec::new();
    for d in cwd.ancestors() {
        out.push(d.join(".agents").join("skills"));
        if Some(d) == git_root {
            break;
        }
    }
    out
}

struct Discovery<'a> {
    opts: &'a Options,
    project_base: PathBuf,
    project: Settings,
    global: Settings,
}

impl Discovery<'_> {
    fn resolve_from(&self, p: &str, base: &Path) -> PathBuf {
        fsx::resolve(base, &fsx::expand_home(p, &self.opts.home))
    }

    fn local_entries(&self, acc: &mut Acc, kind: Kind, entries: &[String], meta: &Meta) {
        if entries.is_empty() {
            return;
        }
        let (patterns, plain): (Vec<&String>, Vec<&String>) =
            entries.iter().partition(|e| is_pattern(e));
        let mut all = Vec::new();
        for p in plain {
            let path = self.resolve_from(p, &meta.base_dir);
            match std::fs::metadata(&path) {
                Ok(m) if m.is_file() => all.push(path),
                Ok(m) if m.is_dir() => all.extend(collect_resource_files(&path, kind)),
                _ => {}
            }
        }
        let patterns = self.normalize_patterns(patterns);
        let patterns: Vec<&str> = patterns.iter().map(String::as_str).collect();
        let enabled = apply_patterns(&all, &patterns, &meta.base_dir);
        for f in all {
            let on = enabled.contains(&f);
            acc.add(f, meta, on);
        }
    }

    /// Settings patterns with `~/` and `file://` read as the reference 1.6 reads them (after
    /// their `!`, `+` or `-`).
    fn normalize_patterns<'s>(&self, entries: impl IntoIterator<Item = &'s String>) -> Vec<String> {
        entries
            .into_iter()
            .map(|e| {
                let (prefix, rest) = match e.chars().next() {
                    Some(c @ ('!' | '+' | '-')) => e.split_at(c.len_utf8()),
                    _ => ("", e.as_str()),
                };
                format!("{prefix}{}", fsx::normalize_input(rest, &self.opts.home))
            })
            .collect()
    }

    fn auto(&self, acc: &mut Acc, paths: Vec<PathBuf>, meta: &Meta, overrides: &[String]) {
        let overrides = self.normalize_patterns(overrides);
        for p in paths {
            let on = enabled_by_overrides(&p, &overrides, &meta.base_dir);
            acc.add(p, meta, on);
        }
    }

    /// The ranked, enabled paths of one kind and the metadata of every discovered path.
    fn paths(&self, kind: Kind) -> (Vec<PathBuf>, HashMap<PathBuf, Meta>) {
        let o = self.opts;
        let local = |scope, base_dir: &Path| Meta {
            source: "local",
            scope,
            base_dir: base_dir.to_path_buf(),
        };
        let auto = |scope, base_dir: &Path| Meta {
            source: "auto",
            scope,
            base_dir: base_dir.to_path_buf(),
        };
        let mut acc = Acc::default();
        self.local_entries(
            &mut acc,
            kind,
            self.project.entries(kind),
            &local(Scope::Project, &self.project_base),
        );
        self.local_entries(
            &mut acc,
            kind,
            self.global.entries(kind),
            &local(Scope::User, &o.agent_dir),
        );
        let project_auto = auto(Scope::Project, &self.project_base);
        let user_auto = auto(Scope::User, &o.agent_dir);
        match kind {
            Kind::Prompts => {
                self.auto(
                    &mut acc,
                    collect_auto_prompts(&self.project_base.join("prompts")),
                    &project_auto,
                    self.project.entries(kind),
                );
                self.auto(
                    &mut acc,
                    collect_auto_prompts(&o.agent_dir.join("prompts")),
                    &user_auto,
                    self.global.entries(kind),
                );
            }
            Kind::Skills => {
                let user_agents = o.home.join(".agents").join("skills");
                let mut files = skills::collect_files(&self.project_base.join("skills"), Mode::Pi);
                for d in ancestor_agents_skill_dirs(&o.cwd) {
                    if fsx::normalize(&d) != fsx::normalize(&user_agents) {
                        files.extend(skills::collect_files(&d, Mode::Agents));
                    }
                }
                self.auto(&mut acc, files, &project_auto, self.project.entries(kind));
                let mut files = skills::collect_files(&o.agent_dir.join("skills"), Mode::Pi);
                files.extend(skills::collect_files(&user_agents, Mode::Agents));
                self.auto(&mut acc, files, &user_auto, self.global.entries(kind));
            }
        }
        acc.resolve()
    }

    /// Discovered paths (unless disabled) followed by the explicit ones, de-duplicated by real
    /// path.
    fn merge(&self, discovered: Vec<PathBuf>, explicit: &[String]) -> Vec<PathBuf> {
        let mut seen = HashSet::new();
        let mut out = Vec::new();
        let explicit = explicit
            .iter()
            .map(|p| self.resolve_from(p, &self.opts.cwd));
        for p in discovered.into_iter().chain(explicit) {
            if seen.insert(fsx::canonical(&p)) {
                out.push(p);
            }
        }
        out
    }
}

/// Finds and loads every template and skill.
pub fn load(opts: &Options) -> Resources {
    let mut res = Resources::default();
    let project_base = opts.cwd.join(".pi");
    let project = read_settings(&project_base.join("settings.json"), &mut res.warnings);
    let global = read_settings(&opts.agent_dir.join("settings.json"), &mut res.warnings);
    let d = Discovery {
        opts,
        project_base,
        project,
        global,
    };
    let user_prompts = opts.agent_dir.join("prompts");
    let project_prompts = d.project_base.join("prompts");
    let user_skills = opts.agent_dir.join("skills");
    let project_skills = d.project_base.join("skills");

    // Templates.
    let (found, metas) = if opts.no_prompts {
        (Vec::new(), HashMap::new())
    } else {
        d.paths(Kind::Prompts)
    };
    let paths = d.merge(found, &opts.prompt_paths);
    let source_of = |file: &Path| -> SourceInfo {
        if let Some(m) = metas.get(file) {
            return m.info();
        }
        let (scope, base_dir) = if fsx::is_under(file, &user_prompts) {
            (Scope::User, user_prompts.clone())
        } else if fsx::is_under(file, &project_prompts) {
            (Scope::Project, project_prompts.clone())
        } else {
            let parent = file.parent().map(Path::to_path_buf).unwrap_or_default();
            (Scope::Temporary, parent)
        };
        SourceInfo {
            source: "local",
            scope,
            base_dir,
        }
    };
    let mut all = Vec::new();
    for p in &paths {
        match std::fs::metadata(p) {
            Ok(m) if m.is_dir() => {
                let (t, d) = templates::load_dir(p, &source_of);
                all.extend(t);
                res.template_diagnostics.extend(d);
            }
            Ok(m) if m.is_file() && p.to_string_lossy().ends_with(".md") => {
                match templates::load_file(p, source_of(p)) {
                    Ok(t) => all.push(t),
                    Err(d) => res.template_diagnostics.push(*d),
                }
            }
            _ => {}
        }
    }
    for t in all {
        if let Some(w) = res.templates.iter().find(|w| w.name == t.name) {
            res.template_diagnostics.push(Diagnostic::collision(
                ResourceKind::Prompt,
                &t.name,
                &w.path,
                &t.path,
            ));
        } else {
            res.templates.push(t);
        }
    }
    for raw in &opts.prompt_paths {
        let resolved = d.resolve_from(raw, &opts.cwd);
        let raw_path = PathBuf::from(raw);
        if !resolved.exists() && !res.template_diagnostics.iter().any(|x| x.path == raw_path) {
            res.template_diagnostics.push(Diagnostic::error(
                "Prompt template path does not exist",
                &raw_path,
            ));
        }
    }

    // Skills.
    let (found, metas) = if opts.no_skills {
        (Vec::new(), HashMap::new())
    } else {
        d.paths(Kind::Skills)
    };
    let paths = d.merge(found, &opts.skill_paths);
    let (mut skills, diags) = skills::load_paths(&paths, &user_skills, &project_skills);
    for s in &mut skills {
        if let Some(m) = metas.get(&s.path) {
            s.source = m.info();
        }
    }
    res.skills = skills;
    res.skill_diagnostics = diags;
    for raw in &opts.skill_paths {
        let resolved = d.resolve_from(raw, &opts.cwd);
        let raw_path = PathBuf::from(raw);
        if !resolved.exists() && !res.skill_diagnostics.iter().any(|x| x.path == raw_path) {
            res.skill_diagnostics
                .push(Diagnostic::error("Skill path does not exist", &raw_path));
        }
    }
    res
}
