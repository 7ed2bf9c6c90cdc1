// Kept hand-written (not the ignore crate): rule order and prefixes exactly as upstream.
//! `.gitignore`, `.ignore` and `.fdignore` files met while discovering templates and skills,
//! applied the way upstream applies them: the rules of a sub-directory are prefixed with its
//! path relative to the walk's root, the last matching rule wins, and `!` re-includes.

use std::path::Path;

use super::fsx::{self, Entry};
use super::glob::gitignore_match;

const FILES: [&str; 3] = [".gitignore", ".ignore", ".fdignore"];

#[derive(Debug, Clone)]
struct Rule {
    pattern: String,
    negated: bool,
    dir_only: bool,
}

/// The accumulated rules of one walk.
#[derive(Debug, Clone, Default)]
pub(crate) struct Ignore {
    rules: Vec<Rule>,
}

impl Ignore {
    /// Reads the ignore files in `dir` (a directory at or below `root`).
    pub(crate) fn add_dir(&mut self, dir: &Path, root: &Path) {
        let prefix = match dir.strip_prefix(root) {
            Ok(rel) if !rel.as_os_str().is_empty() => {
                format!("{}/", rel.to_string_lossy().replace('\\', "/"))
            }
            _ => String::new(),
        };
        for name in FILES {
            if let Ok(text) = std::fs::read(dir.join(name)) {
                for line in String::from_utf8_lossy(&text).split('\n') {
                    let line = line.strip_suffix('\r').unwrap_or(line);
                    self.add_line(line, &prefix);
                }
            }
        }
    }

    fn add_line(&mut self, line: &str, prefix: &str) {
        let trimmed = line.trim();
        if trimmed.is_empty() || (trimmed.starts_with('#') && !trimmed.starts_with("\\#")) {
            return;
        }
        let mut pattern = line;
        let mut negated = false;
        if let Some(p) = pattern.strip_prefix('!') {
            negated = true;
            pattern = p;
        } else if pattern.starts_with("\\!") {
            pattern = &pattern[1..];
        }
        let pattern = pattern.strip_prefix('/').unwrap_or(pattern);
        // Trailing unescaped spaces are not part of a pattern.
        let mut pattern = pattern.trim_end_matches(' ').to_owned();
        if pattern.ends_with('\\') && line.ends_with(' ') {
            pattern.push(' ');
        }
        let dir_only = pattern.ends_with('/');
        let pattern = pattern.trim_end_matches('/');
        if pattern.is_empty() {
            return;
        }
        self.rules.push(Rule {
            pattern: format!("{prefix}{pattern}"),
            negated,
            dir_only,
        });
    }

    fn matches(&self, path: &str, is_dir: bool) -> bool {
        let mut ignored = false;
        for r in &self.rules {
            if r.negated != ignored {
                continue;
            }
            if r.dir_only && !is_dir {
                continue;
            }
            if gitignore_match(&r.pattern, path) {
                ignored = !r.negated;
            }
        }
        ignored
    }

    /// Whether `rel` (relative to the root, `/`-separated, with a trailing `/` for a
    /// directory) is ignored, itself or through one of its parent directories.
    pub(crate) fn ignores(&self, rel: &str) -> bool {
        if self.rules.is_empty() {
            return false;
        }
        let is_dir = rel.ends_with('/');
        let rel = rel.trim_end_matches('/');
        let parts: Vec<&str> = rel.split('/').collect();
        for n in 1..parts.len() {
            if self.matches(&parts[..n].join("/"), true) {
                return true;
            }
        }
        self.matches(rel, is_dir)
    }
}

/// Walks `root` as discovery does, depth first in name order: ignore files apply, dot-names
/// and `node_modules` are skipped, symlink loops are not entered. `file(entry, at_root)` is
/// called for each file that is not ignored. With `claim`, a directory holding a file of
/// that name that is not ignored reports that file alone and is not searched further.
pub(crate) fn walk(root: &Path, claim: Option<&str>, file: &mut dyn FnMut(&Entry, bool)) {
    walk_dir(root, root, claim, &mut Ignore::default(), file);
}

fn walk_dir(
    dir: &Path,
    root: &Path,
    claim: Option<&str>,
    ig: &mut Ignore,
    file: &mut dyn FnMut(&Entry, bool),
) {
    if !dir.exists() {
        return;
    }
    ig.add_dir(dir, root);
    let Some(entries) = fsx::list(dir) else {
        return;
    };
    let at_root = dir == root;
    if let Some(e) = entries.iter().find(|e| Some(e.name.as_str()) == claim)
        && e.is_file
        && !ig.ignores(&fsx::relative(root, &e.path))
    {
        file(e, at_root);
        return;
    }
    for e in &entries {
        if e.name.starts_with('.') || e.name == "node_modules" {
            continue;
        }
        let rel = fsx::relative(root, &e.path);
        let shown = if e.is_dir { format!("{rel}/") } else { rel };
        if ig.ignores(&shown) {
            continue;
        }
        if e.is_dir && !e.loops {
            walk_dir(&e.path, root, claim, ig, file);
        } else if e.is_file {
            file(e, at_root);
        }
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use super::*;

    fn ig(lines: &[(&str, &str)]) -> Ignore {
        let mut i = Ignore::default();
        for (prefix, l) in lines {
            i.add_line(l, prefix);
        }
        i
    }

    #[test]
    fn rules() {
        let i = ig(&[
            ("", "drafts/"),
            ("", "*.tmp.md"),
            ("", "!keep.tmp.md"),
            ("sub/", "x.md"),
        ]);
        assert!(i.ignores("drafts/"));
        assert!(i.ignores("drafts/a.md"));
        assert!(!i.ignores("drafts.md"));
        assert!(i.ignores("a.tmp.md"));
        assert!(!i.ignores("keep.tmp.md"));
        assert!(i.ignores("sub/x.md"));
        assert!(!i.ignores("x.md"));
        assert!(!i.ignores("other/sub/x.md"));
    }

    #[test]
    fn comments_and_blanks() {
        let i = ig(&[("", "# c"), ("", "   "), ("", "\\#x.md"), ("", "/root.md")]);
        assert!(i.ignores("#x.md"));
        assert!(i.ignores("root.md"));
        assert!(!i.ignores("c"));
    }
}
