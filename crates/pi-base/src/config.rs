//! Where things live: the agent directory, session directories and settings, resolved the
//! way upstream resolves them (same environment variables, same files).

use std::path::{Path, PathBuf};

use serde_json::{Map, Value};

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
    /// The `sessionDir` of the project's `.pi/settings.json`, when it decides (no flag or
    /// variable): not applied here. A cloned repository must not choose where your
    /// conversations are recorded, so the binary applies it only to a trusted project
    /// (`pi trust`), and otherwise keeps [`Dirs::session_dir`] from the global settings.
    pub project_session_dir: Option<PathBuf>,
    /// Warnings found while resolving (unreadable settings files).
    pub warnings: Vec<String>,
}

impl Dirs {
    /// `flag` is `--session-dir`; `launch_cwd` is where project settings are looked up.
    pub fn resolve(flag: Option<&Path>, launch_cwd: &Path) -> Dirs {
        let agent_dir = agent_dir();
        let mut warnings = Vec::new();
        let mut project_session_dir = None;
        let session_dir = if let Some(f) = flag {
            Some(launch_cwd.join(f))
        } else if let Some(v) = std::env::var("PI_CODING_AGENT_SESSION_DIR")
            .ok()
            .filter(|v| !v.is_empty())
        {
            Some(launch_cwd.join(expand_tilde(&v)))
        } else {
            let dir_of = |m: &Map<String, Value>| {
                m.get("sessionDir")
                    .and_then(Value::as_str)
                    .map(|v| launch_cwd.join(expand_tilde(v)))
            };
            let (global, w) = global_settings(&agent_dir);
            warnings.extend(w);
            let (project, w) = merge_settings(&[launch_cwd.join(".pi").join("settings.json")]);
            warnings.extend(w);
            project_session_dir = dir_of(&project);
            dir_of(&global)
        };
        // Unknown keys and values of the wrong type, once per command.
        warnings.extend(crate::settings_schema::check_files(&agent_dir, launch_cwd));
        Dirs {
            agent_dir,
            session_dir,
            project_session_dir,
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

/// The settings as upstream reads them: `<agent dir>/settings.json`, then
/// `<cwd>/.pi/settings.json` merged over it (objects merged at every depth, as in 1.6). Files that
/// cannot be read or parsed are skipped, with a warning each.
pub fn settings(agent_dir: &Path, cwd: &Path) -> (Map<String, Value>, Vec<String>) {
    merge_settings(&[
        agent_dir.join("settings.json"),
        cwd.join(".pi").join("settings.json"),
    ])
}

/// The global settings alone (`<agent dir>/settings.json`), for what an untrusted project may
/// not decide.
pub fn global_settings(agent_dir: &Path) -> (Map<String, Value>, Vec<String>) {
    merge_settings(&[agent_dir.join("settings.json")])
}

fn merge_settings(paths: &[PathBuf]) -> (Map<String, Value>, Vec<String>) {
    let mut merged = Map::new();
    let mut warnings = Vec::new();
    for path in paths {
        let text = match std::fs::read(path) {
            Ok(t) => t,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => continue,
            Err(e) => {
                warnings.push(format!("ignoring {}: cannot read it: {e}", path.display()));
                continue;
            }
        };
        match serde_json::from_slice::<Value>(&text) {
            Ok(Value::Object(mut o)) => {
                // `defaultTools` of only `+name`/`-name` entries changes the list it
                // goes over instead of replacing it (1.6).
                if let (Some(Value::Array(base)), Some(Value::Array(over))) =
                    (merged.get("defaultTools"), o.get("defaultTools"))
                    && over
                        .iter()
                        .all(|e| e.as_str().is_some_and(|e| e.starts_with(['+', '-'])))
                {
                    let mut joined = base.clone();
                    joined.extend(over.iter().cloned());
                    o.insert("defaultTools".into(), Value::Array(joined));
                }
                deep_merge(&mut merged, o)
            }
            Ok(_) => warnings.push(format!("ignoring {}: not a JSON object", path.display())),
            Err(e) => warnings.push(format!("ignoring {}: {e}", path.display())),
        }
    }
    (merged, warnings)
}

/// `over` merged into `base`: objects key by key at every depth, anything else replaced (the
/// reference 1.6's merge of project settings over the user's; 0.73 merged one level deep).
fn deep_merge(base: &mut Map<String, Value>, over: Map<String, Value>) {
    for (k, v) in over {
        match (base.get_mut(&k), v) {
            (Some(Value::Object(b)), Value::Object(o)) => deep_merge(b, o),
            (_, v) => {
                base.insert(k, v);
            }
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

    #[test]
    fn project_settings_merge_at_every_depth() {
        let obj = |v: serde_json::Value| v.as_object().unwrap().clone();
        let mut base = obj(serde_json::json!({"compaction": {"reserveTokens": 1,
            "modelOverrides": {"a/b": {"reserveTokens": 2}}}, "list": [1, 2]}));
        deep_merge(
            &mut base,
            obj(
                serde_json::json!({"compaction": {"modelOverrides": {"c/d": {"keepRecentTokens": 3}}},
                "list": [3]}),
            ),
        );
        assert_eq!(
            serde_json::Value::Object(base),
            serde_json::json!({"compaction": {"reserveTokens": 1, "modelOverrides": {
                "a/b": {"reserveTokens": 2}, "c/d": {"keepRecentTokens": 3}}}, "list": [3]})
        );
    }
}
