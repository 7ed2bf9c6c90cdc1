//! Prompt templates, skills, context files and the system prompt, discovered and assembled the
//! way the reference agent does it (see `commands/pi-prompt*.md` for the user-facing rules).
//!
//! - [`resources`] finds templates and skills (agent directory, project `.pi/`, `.agents/skills`,
//!   settings entries, explicit paths) with upstream's precedence and collision rules;
//! - [`templates`] and [`args`] expand `/name args`; [`skills`] loads and validates skills and
//!   expands `/skill:name args`;
//! - [`context`] finds `AGENTS.md`/`CLAUDE.md`; [`system`] assembles the system prompt.

pub mod args;
mod context;
pub mod frontmatter;
mod glob;
mod ignore;
pub mod resources;
pub mod skills;
pub mod system;
pub mod templates;
pub mod text;

use std::path::{Path, PathBuf};

use serde::Serialize;

/// Where a template or skill came from, as upstream records it (`sourceInfo`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct SourceInfo {
    /// `auto` (auto-discovered) or `local` (a settings entry or an explicit path).
    pub source: &'static str,
    /// `project`, `user` or `temporary` (an explicit path outside both).
    pub scope: Scope,
    #[serde(rename = "baseDir")]
    pub base_dir: PathBuf,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Scope {
    Project,
    User,
    Temporary,
}

impl Scope {
    pub fn name(self) -> &'static str {
        match self {
            Scope::Project => "project",
            Scope::User => "user",
            Scope::Temporary => "temporary",
        }
    }
}

/// What kind of resource a diagnostic or collision is about.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum ResourceKind {
    Prompt,
    Skill,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum DiagnosticType {
    Warning,
    Error,
    Collision,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Collision {
    #[serde(rename = "resourceType")]
    pub resource_type: ResourceKind,
    pub name: String,
    #[serde(rename = "winnerPath")]
    pub winner_path: PathBuf,
    #[serde(rename = "loserPath")]
    pub loser_path: PathBuf,
}

/// A problem found while loading templates or skills (upstream's resource diagnostics).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Diagnostic {
    #[serde(rename = "type")]
    pub ty: DiagnosticType,
    pub message: String,
    pub path: PathBuf,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub collision: Option<Collision>,
}

impl Diagnostic {
    pub fn warning(message: impl Into<String>, path: &Path) -> Diagnostic {
        Diagnostic {
            ty: DiagnosticType::Warning,
            message: message.into(),
            path: path.to_path_buf(),
            collision: None,
        }
    }

    pub fn error(message: impl Into<String>, path: &Path) -> Diagnostic {
        Diagnostic {
            ty: DiagnosticType::Error,
            message: message.into(),
            path: path.to_path_buf(),
            collision: None,
        }
    }

    pub fn collision(kind: ResourceKind, name: &str, winner: &Path, loser: &Path) -> Diagnostic {
        let shown = match kind {
            ResourceKind::Prompt => format!("/{name}"),
            ResourceKind::Skill => name.to_owned(),
        };
        Diagnostic {
            ty: DiagnosticType::Collision,
            message: format!("name \"{shown}\" collision"),
            path: loser.to_path_buf(),
            collision: Some(Collision {
                resource_type: kind,
                name: name.to_owned(),
                winner_path: winner.to_path_buf(),
                loser_path: loser.to_path_buf(),
            }),
        }
    }
}

/// Reads a file as text the way Node's `readFileSync(path, "utf-8")` does (invalid UTF-8
/// becomes U+FFFD, a byte-order mark is kept).
pub fn read_text(path: &Path) -> std::io::Result<String> {
    let bytes = std::fs::read(path)?;
    Ok(match String::from_utf8(bytes) {
        Ok(s) => s,
        Err(e) => String::from_utf8_lossy(e.as_bytes()).into_owned(),
    })
}

/// The file system helpers discovery needs: directory listings in byte order of the names (as
/// Node returns them), with symlinks followed.
pub(crate) mod fsx {
    use std::path::{Path, PathBuf};

    pub(crate) struct Entry {
        pub name: String,
        pub path: PathBuf,
        pub is_dir: bool,
        pub is_file: bool,
        /// A symlink to a directory that contains the directory it was listed in: walking
        /// into it would never end.
        pub loops: bool,
    }

    /// The entries of `dir`, sorted by name; broken symlinks are left out.
    pub(crate) fn list(dir: &Path) -> Option<Vec<Entry>> {
        let rd = std::fs::read_dir(dir).ok()?;
        let mut out = Vec::new();
        for e in rd.flatten() {
            let name = e.file_name().to_string_lossy().into_owned();
            let path = e.path();
            let Ok(ft) = e.file_type() else { continue };
            let (is_dir, is_file) = if ft.is_symlink() {
                match std::fs::metadata(&path) {
                    Ok(m) => (m.is_dir(), m.is_file()),
                    Err(_) => continue,
                }
            } else {
                (ft.is_dir(), ft.is_file())
            };
            let loops = is_dir && ft.is_symlink() && canonical(dir).starts_with(canonical(&path));
            out.push(Entry {
                name,
                path,
                is_dir,
                is_file,
                loops,
            });
        }
        out.sort_by(|a, b| a.name.as_bytes().cmp(b.name.as_bytes()));
        Some(out)
    }

    /// The real path, or the path itself when it cannot be resolved.
    pub(crate) fn canonical(p: &Path) -> PathBuf {
        std::fs::canonicalize(p).unwrap_or_else(|_| p.to_path_buf())
    }

    /// `path.resolve(base, p)`: `p` if absolute, else joined to `base`, with `.` and `..`
    /// segments removed lexically.
    pub(crate) fn resolve(base: &Path, p: &Path) -> PathBuf {
        let joined = if p.is_absolute() {
            p.to_path_buf()
        } else {
            base.join(p)
        };
        normalize(&joined)
    }

    pub(crate) fn normalize(p: &Path) -> PathBuf {
        use std::path::Component;
        let mut out = PathBuf::new();
        for c in p.components() {
            match c {
                Component::CurDir => {}
                Component::ParentDir => {
                    if !out.pop() {
                        out.push(c);
                    }
                }
                c => out.push(c),
            }
        }
        if out.as_os_str().is_empty() {
            out.push(".");
        }
        out
    }

    /// Whether `target` is `root` or inside it (lexically).
    pub(crate) fn is_under(target: &Path, root: &Path) -> bool {
        target.starts_with(root)
    }

    /// `path.relative(from, to)` with `/` separators.
    pub(crate) fn relative(from: &Path, to: &Path) -> String {
        let f: Vec<_> = from.components().collect();
        let t: Vec<_> = to.components().collect();
        let common = f.iter().zip(&t).take_while(|(a, b)| a == b).count();
        let mut parts: Vec<String> = Vec::new();
        for _ in common..f.len() {
            parts.push("..".to_owned());
        }
        for c in &t[common..] {
            parts.push(c.as_os_str().to_string_lossy().into_owned());
        }
        parts.join("/")
    }

    /// A path or pattern as the reference 1.6 reads one from settings or the command line
    /// (`normalizePath`): `~` and `~/x` against `$HOME` (not `~x`, which 0.73 also expanded),
    /// and a `file://` URL as its path. The input is trimmed first.
    pub(crate) fn expand_home(input: &str, home: &Path) -> PathBuf {
        PathBuf::from(normalize_input(pi_base::js::trim(input), home))
    }

    /// [`expand_home`] without the trimming, for patterns.
    pub(crate) fn normalize_input(t: &str, home: &Path) -> String {
        if t == "~" {
            home.to_string_lossy().into_owned()
        } else if let Some(rest) = t.strip_prefix("~/") {
            home.join(rest).to_string_lossy().into_owned()
        } else if let Some(url) = t.strip_prefix("file://") {
            let path = url.strip_prefix("localhost").unwrap_or(url);
            percent_decode(path)
        } else {
            t.to_owned()
        }
    }

    /// `%XX` escapes decoded (invalid UTF-8 replaced); other text as it is.
    fn percent_decode(s: &str) -> String {
        let b = s.as_bytes();
        let mut out = Vec::with_capacity(b.len());
        let mut i = 0;
        while i < b.len() {
            let hex = |c: u8| (c as char).to_digit(16);
            if b[i] == b'%'
                && let (Some(h), Some(l)) = (
                    b.get(i + 1).copied().and_then(hex),
                    b.get(i + 2).copied().and_then(hex),
                )
            {
                out.push((h * 16 + l) as u8);
                i += 3;
            } else {
                out.push(b[i]);
                i += 1;
            }
        }
        String::from_utf8_lossy(&out).into_owned()
    }
}

/// A value that names an existing file stands for the file's contents (upstream's rule for
/// `--system-prompt` and `--append-system-prompt`); an empty value is no value.
pub fn file_or_literal(v: &str, base: &Path, warnings: &mut Vec<String>) -> Option<String> {
    if v.is_empty() {
        return None;
    }
    let p = base.join(v);
    if p.is_file() {
        match read_text(&p) {
            Ok(s) => return Some(s),
            Err(e) => warnings.push(format!("cannot read {v}: {e}")),
        }
    }
    Some(v.to_owned())
}

/// The first of `<cwd>/.pi/NAME` and `<agent dir>/NAME` that exists, read (`SYSTEM.md`,
/// `APPEND_SYSTEM.md`).
pub fn discover(
    cwd: &Path,
    agent_dir: &Path,
    name: &str,
    warnings: &mut Vec<String>,
) -> Option<String> {
    let p = [cwd.join(".pi").join(name), agent_dir.join(name)]
        .into_iter()
        .find(|p| p.exists())?;
    match read_text(&p) {
        Ok(s) => Some(s),
        Err(e) => {
            warnings.push(format!("cannot read {}: {e}", p.display()));
            None
        }
    }
}
