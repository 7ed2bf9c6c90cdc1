//! Where things live: the agent directory, session directories and settings, resolved the
//! way upstream resolves them (same environment variables, same files).

use std::path::{Path, PathBuf};

/// Expands a leading `~` or `~/` to the home directory.
pub fn expand_tilde(s: &str) -> PathBuf {
    let home = || std::env::var_os("HOME").map(PathBuf::from);
    if s == "~" {
        if let Some(h) = home() {
            return h;
        }
    } else if let Some(rest) = s.strip_prefix("~/")
        && let Some(h) = home()
    {
        return h.join(rest);
    }
    PathBuf::from(s)
}

/// `PI_CODING_AGENT_DIR`, else `~/.pi/agent`.
pub fn agent_dir() -> PathBuf {
    match std::env::var("PI_CODING_AGENT_DIR") {
        Ok(v) if !v.is_empty() => expand_tilde(&v),
        _ => expand_tilde("~/.pi/agent"),
    }
}

/// The directory name upstream uses for a working directory's sessions:
/// `/home/u/proj` → `--home-u-proj--`.
pub fn encode_cwd(cwd: &str) -> String {
    let rest = cwd
        .strip_prefix('/')
        .or_else(|| cwd.strip_prefix('\\'))
        .unwrap_or(cwd);
    format!("--{}--", rest.replace(['/', '\\', ':'], "-"))
}

/// Paths resolved for one invocation.
#[derive(Debug, Clone)]
pub struct Dirs {
    pub agent_dir: PathBuf,
    /// An explicit session directory (`--session-dir`, `PI_CODING_AGENT_SESSION_DIR` or the
    /// `sessionDir` setting): every session goes straight into it.
    pub session_dir: Option<PathBuf>,
    /// Warnings found while resolving (unreadable settings files).
    pub warnings: Vec<String>,
}

impl Dirs {
    /// `flag` is `--session-dir`; `launch_cwd` is where project settings are looked up.
    pub fn resolve(flag: Option<&Path>, launch_cwd: &Path) -> Dirs {
        let agent_dir = agent_dir();
        let mut warnings = Vec::new();
        let session_dir = if let Some(f) = flag {
            Some(launch_cwd.join(f))
        } else if let Some(v) = std::env::var("PI_CODING_AGENT_SESSION_DIR")
            .ok()
            .filter(|v| !v.is_empty())
        {
            Some(launch_cwd.join(expand_tilde(&v)))
        } else {
            let project = launch_cwd.join(".pi").join("settings.json");
            let global = agent_dir.join("settings.json");
            [project, global].iter().find_map(|p| {
                setting_str(p, "sessionDir", &mut warnings)
                    .map(|v| launch_cwd.join(expand_tilde(&v)))
            })
        };
        Dirs {
            agent_dir,
            session_dir,
            warnings,
        }
    }

    pub fn sessions_root(&self) -> PathBuf {
        self.agent_dir.join("sessions")
    }

    /// The directory holding the sessions of `cwd`.
    pub fn session_dir_for(&self, cwd: &str) -> PathBuf {
        match &self.session_dir {
            Some(d) => d.clone(),
            None => self.sessions_root().join(encode_cwd(cwd)),
        }
    }
}

/// A string setting from a settings file, if the file exists and has it.
fn setting_str(path: &Path, key: &str, warnings: &mut Vec<String>) -> Option<String> {
    let text = std::fs::read(path).ok()?;
    match serde_json::from_slice::<serde_json::Value>(&text) {
        Ok(v) => v.get(key)?.as_str().map(str::to_owned),
        Err(e) => {
            warnings.push(format!("ignoring {}: {e}", path.display()));
            None
        }
    }
}

/// The process's working directory as upstream sees it (`process.cwd()`).
pub fn current_dir() -> std::io::Result<PathBuf> {
    std::env::current_dir()
}

/// Makes a `--cwd` argument absolute, resolving symlinks when the directory exists (as the
/// working directory of a process started there would be).
pub fn absolute_dir(p: &Path) -> std::io::Result<PathBuf> {
    match std::fs::canonicalize(p) {
        Ok(c) => Ok(c),
        Err(_) => std::path::absolute(p),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn encodes_like_upstream() {
        assert_eq!(encode_cwd("/Users/alice/proj"), "--Users-alice-proj--");
        assert_eq!(encode_cwd("/tmp"), "--tmp--");
        assert_eq!(encode_cwd("C:\\Users\\bob\\x"), "--C--Users-bob-x--");
        assert_eq!(encode_cwd("/home/u/my.project"), "--home-u-my.project--");
        assert_eq!(encode_cwd("//srv/a"), "---srv-a--");
    }
}
