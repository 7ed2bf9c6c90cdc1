//! Context files: `AGENTS.md` (or `CLAUDE.md`) from the agent directory and from every
//! directory between the file system root and the working directory.

use std::collections::HashSet;
use std::path::{Path, PathBuf};

const CANDIDATES: [&str; 4] = ["AGENTS.md", "AGENTS.MD", "CLAUDE.md", "CLAUDE.MD"];

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ContextFile {
    pub path: PathBuf,
    pub content: String,
}

/// The first readable candidate of `dir`; unreadable candidates produce a warning and the
/// next one is tried.
fn from_dir(dir: &Path, warnings: &mut Vec<String>) -> Option<ContextFile> {
    for name in CANDIDATES {
        let path = dir.join(name);
        if !path.exists() {
            continue;
        }
        match super::read_text(&path) {
            Ok(content) => return Some(ContextFile { path, content }),
            Err(e) => warnings.push(format!("cannot read {}: {e}", path.display())),
        }
    }
    None
}

/// The context files in prompt order: the agent directory's, then the ancestors of `cwd`
/// from the root-most down to `cwd` itself (each path once).
pub(crate) fn load(cwd: &Path, agent_dir: &Path, warnings: &mut Vec<String>) -> Vec<ContextFile> {
    let mut out = Vec::new();
    let mut seen = HashSet::new();
    if let Some(f) = from_dir(agent_dir, warnings) {
        seen.insert(f.path.clone());
        out.push(f);
    }
    let mut ancestors = Vec::new();
    for dir in cwd.ancestors() {
        if let Some(f) = from_dir(dir, warnings)
            && seen.insert(f.path.clone())
        {
            ancestors.push(f);
        }
    }
    ancestors.reverse();
    out.extend(ancestors);
    out
}
