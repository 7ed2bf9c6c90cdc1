//! The environment of the programs pi starts for a run: the `bash` tool's shell, hooks and
//! program tools (docs/decisions.md §6). It follows Codex's `shell_environment_policy`, with the keys
//! spelt as the reference's settings spell theirs (`shellEnvironmentPolicy` in
//! `settings.json`):
//!
//! ```json
//! {"shellEnvironmentPolicy": {
//!     "inherit": "all",
//!     "ignoreDefaultExcludes": false,
//!     "exclude": ["AWS_*"],
//!     "set": {"CI": "1"},
//!     "includeOnly": []
//! }}
//! ```
//!
//! The environment is built in Codex's order:
//!
//! 1. `inherit` picks the start: `all` (pi's whole environment, the default), `core` (only
//!    `HOME`, `LOGNAME`, `PATH`, `SHELL`, `USER`, `USERNAME`, `TMPDIR`, `TEMP`, `TMP`) or
//!    `none`;
//! 2. unless `ignoreDefaultExcludes` is true, variables whose names match `*KEY*`,
//!    `*SECRET*`, `*TOKEN*` or `*PASSWORD*` are removed (pi adds `PASSWORD` to Codex's
//!    three, and applies them by default);
//! 3. variables matching a pattern of `exclude` are removed;
//! 4. the variables of `set` are added (over what is there);
//! 5. when `includeOnly` is not empty, only variables matching one of its patterns stay.
//!
//! Patterns are globs over the whole name (`*` any text, `?` one character), compared
//! without regard to case. pi's own variables (`PI_CWD`, `PI_SESSION_FILE`, …) and the agent's
//! `bin` directory in front of `PATH` are added after the policy.

use std::ffi::OsString;
use std::path::Path;

use serde_json::{Map, Value};

/// The variables `inherit: "core"` keeps (Codex's list).
pub(crate) const CORE: [&str; 9] = [
    "HOME", "LOGNAME", "PATH", "SHELL", "USER", "USERNAME", "TMPDIR", "TEMP", "TMP",
];

/// Names that look like secrets, removed unless `ignoreDefaultExcludes` is true.
pub(crate) const DEFAULT_EXCLUDES: [&str; 4] = ["*KEY*", "*SECRET*", "*TOKEN*", "*PASSWORD*"];

/// The settings key.
pub(crate) const SETTING: &str = "shellEnvironmentPolicy";

/// Where the environment starts from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Inherit {
    #[default]
    All,
    Core,
    None,
}

/// How the environment of a child is made from pi's.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Policy {
    pub inherit: Inherit,
    pub ignore_default_excludes: bool,
    pub exclude: Vec<String>,
    /// Added after the excludes, in order.
    pub set: Vec<(String, String)>,
    pub include_only: Vec<String>,
}

/// Whether `name` matches the glob `pattern` (`*`, `?`; ASCII letters in any case).
pub fn matches(pattern: &str, name: &str) -> bool {
    let p: Vec<char> = pattern.chars().map(|c| c.to_ascii_uppercase()).collect();
    let n: Vec<char> = name.chars().map(|c| c.to_ascii_uppercase()).collect();
    // Iterative wildcard matching with backtracking to the last `*`.
    let (mut i, mut j) = (0usize, 0usize);
    let mut star: Option<(usize, usize)> = None;
    while j < n.len() {
        if i < p.len() && (p[i] == '?' || p[i] == n[j]) {
            i += 1;
            j += 1;
        } else if i < p.len() && p[i] == '*' {
            star = Some((i, j));
            i += 1;
        } else if let Some((si, sj)) = star {
            i = si + 1;
            j = sj + 1;
            star = Some((si, sj + 1));
        } else {
            return false;
        }
    }
    p[i..].iter().all(|&c| c == '*')
}

fn any_match(patterns: &[impl AsRef<str>], name: &str) -> bool {
    patterns.iter().any(|p| matches(p.as_ref(), name))
}

fn strings(v: &Value, key: &str, source: &str) -> Result<Vec<String>, String> {
    let err = || format!("{source}: \"{SETTING}.{key}\" must be a list of name patterns");
    v.as_array()
        .ok_or_else(err)?
        .iter()
        .map(|s| s.as_str().map(str::to_owned).ok_or_else(err))
        .collect()
}

impl Policy {
    fn inherit_from(&mut self, i: Inherit) -> Result<(), String> {
        self.inherit = i;
        Ok(())
    }

    /// Reads a `shellEnvironmentPolicy` object. A field with a wrong value is left at its
    /// default, with a warning (so a typo never lets more through than the default does).
    pub fn from_json(o: &Map<String, Value>, source: &str, warnings: &mut Vec<String>) -> Policy {
        let mut p = Policy::default();
        for (k, v) in o {
            let r: Result<(), String> = match k.as_str() {
                "inherit" => match v.as_str() {
                    Some("all") => p.inherit_from(Inherit::All),
                    Some("core") => p.inherit_from(Inherit::Core),
                    Some("none") => p.inherit_from(Inherit::None),
                    _ => Err(format!(
                        "{source}: \"{SETTING}.inherit\" must be \"all\", \"core\" or \"none\""
                    )),
                },
                "ignoreDefaultExcludes" => match v {
                    Value::Bool(b) => {
                        p.ignore_default_excludes = *b;
                        Ok(())
                    }
                    _ => Err(format!(
                        "{source}: \"{SETTING}.ignoreDefaultExcludes\" must be true or false"
                    )),
                },
                "exclude" => strings(v, k, source).map(|l| p.exclude = l),
                "includeOnly" => strings(v, k, source).map(|l| p.include_only = l),
                "set" => match v.as_object() {
                    Some(m) => m
                        .iter()
                        .map(|(k, v)| match v {
                            Value::String(s) => Ok((k.clone(), s.clone())),
                            _ => Err(format!(
                                "{source}: \"{SETTING}.set\" must be an object of strings"
                            )),
                        })
                        .collect::<Result<Vec<_>, _>>()
                        .map(|l| p.set = l),
                    None => Err(format!(
                        "{source}: \"{SETTING}.set\" must be an object of strings"
                    )),
                },
                other => Err(format!(
                    "{source}: unknown field \"{other}\" in \"{SETTING}\" (fields: inherit, ignoreDefaultExcludes, exclude, set, includeOnly)"
                )),
            };
            if let Err(e) = r {
                warnings.push(format!("{e}; ignored"));
            }
        }
        p
    }

    /// The policy of a command working in `cwd`: `shellEnvironmentPolicy` of
    /// `<agent dir>/settings.json`, with that of the project's `.pi/settings.json` over it
    /// (key by key) when `project` is true (the project is trusted). Unreadable files are
    /// reported by the settings reader; a field with a wrong value is a warning.
    pub fn load(agent_dir: &Path, cwd: &Path, project: bool) -> (Policy, Vec<String>) {
        let mut files = vec![agent_dir.join("settings.json")];
        if project {
            files.push(cwd.join(".pi").join("settings.json"));
        }
        let mut merged = Map::new();
        let mut sources = Vec::new();
        let mut warnings = Vec::new();
        for f in files {
            let Ok(text) = std::fs::read(&f) else {
                continue;
            };
            let Ok(Value::Object(mut o)) = serde_json::from_slice::<Value>(&text) else {
                continue;
            };
            match o.remove(SETTING) {
                None => {}
                Some(Value::Object(p)) => {
                    merged.extend(p);
                    sources.push(f.display().to_string());
                }
                Some(_) => warnings.push(format!(
                    "{}: \"{SETTING}\" must be an object; ignored",
                    f.display()
                )),
            }
        }
        let source = sources.join(", ");
        let policy = Policy::from_json(&merged, &source, &mut warnings);
        (policy, warnings)
    }

    /// The environment made from `vars` (names that are not UTF-8 are matched as their
    /// lossy text).
    pub(crate) fn environment_from(
        &self,
        vars: impl IntoIterator<Item = (OsString, OsString)>,
    ) -> Vec<(OsString, OsString)> {
        let mut env: Vec<(OsString, OsString)> = vars
            .into_iter()
            .filter(|(k, _)| {
                let name = k.to_string_lossy();
                match self.inherit {
                    Inherit::All => true,
                    Inherit::Core => CORE.contains(&name.as_ref()),
                    Inherit::None => false,
                }
            })
            .filter(|(k, _)| {
                let name = k.to_string_lossy();
                (self.ignore_default_excludes || !any_match(&DEFAULT_EXCLUDES, &name))
                    && !any_match(&self.exclude, &name)
            })
            .collect();
        for (k, v) in &self.set {
            env.retain(|(n, _)| n.to_string_lossy() != *k);
            env.push((k.into(), v.into()));
        }
        if !self.include_only.is_empty() {
            env.retain(|(k, _)| any_match(&self.include_only, &k.to_string_lossy()));
        }
        env
    }

    /// The environment of a child, made from pi's.
    pub fn environment(&self) -> Vec<(OsString, OsString)> {
        self.environment_from(std::env::vars_os())
    }

    /// Gives `cmd` the policy's environment (and nothing else of pi's).
    pub fn apply(&self, cmd: &mut tokio::process::Command) {
        cmd.env_clear().envs(self.environment());
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use serde_json::json;

    fn vars(pairs: &[(&str, &str)]) -> Vec<(OsString, OsString)> {
        pairs.iter().map(|(k, v)| (k.into(), v.into())).collect()
    }

    fn names(env: &[(OsString, OsString)]) -> Vec<String> {
        env.iter()
            .map(|(k, v)| format!("{}={}", k.to_string_lossy(), v.to_string_lossy()))
            .collect()
    }

    fn policy(v: Value) -> Policy {
        let mut w = Vec::new();
        let p = Policy::from_json(v.as_object().unwrap(), "s", &mut w);
        assert!(w.is_empty(), "{w:?}");
        p
    }

    #[test]
    fn globs() {
        assert!(matches("*KEY*", "OPENAI_API_KEY"));
        assert!(matches("*key*", "OPENAI_API_KEY"));
        assert!(matches("*KEY*", "keyring"));
        assert!(!matches("*KEY*", "HOME"));
        assert!(matches("AWS_*", "aws_region"));
        assert!(matches("A?C", "abc"));
        assert!(!matches("A?C", "abbc"));
        assert!(matches("*", ""));
        assert!(matches("a*b*c", "axxbyyc"));
        assert!(!matches("a*b*c", "axxbyy"));
    }

    #[test]
    fn default_removes_secret_looking_names() {
        let env = vars(&[
            ("PATH", "/bin"),
            ("OPENAI_API_KEY", "sk"),
            ("github_token", "t"),
            ("DB_PASSWORD", "p"),
            ("MY_SECRET_THING", "s"),
            ("LANG", "C"),
        ]);
        assert_eq!(
            names(&Policy::default().environment_from(env)),
            ["PATH=/bin", "LANG=C"]
        );
    }

    #[test]
    fn codex_order() {
        let env = vars(&[
            ("PATH", "/bin"),
            ("HOME", "/h"),
            ("LANG", "C"),
            ("AWS_REGION", "x"),
            ("API_KEY", "k"),
        ]);
        let p = policy(json!({"inherit": "core", "set": {"CI": "1", "PATH": "/x"}}));
        assert_eq!(
            names(&p.environment_from(env.clone())),
            ["HOME=/h", "CI=1", "PATH=/x"]
        );
        let p =
            policy(json!({"inherit": "all", "ignoreDefaultExcludes": true, "exclude": ["aws_*"]}));
        assert_eq!(
            names(&p.environment_from(env.clone())),
            ["PATH=/bin", "HOME=/h", "LANG=C", "API_KEY=k"]
        );
        // includeOnly comes last: it also filters what `set` added.
        let p = policy(json!({"set": {"CI": "1", "KEEP": "y"}, "includeOnly": ["PATH", "KEEP"]}));
        assert_eq!(
            names(&p.environment_from(env.clone())),
            ["PATH=/bin", "KEEP=y"]
        );
        let p = policy(json!({"inherit": "none", "set": {"A": "b"}}));
        assert_eq!(names(&p.environment_from(env)), ["A=b"]);
    }

    #[test]
    fn bad_fields_are_warnings_and_keep_defaults() {
        let mut w = Vec::new();
        let p = Policy::from_json(
            json!({"inherit": "everything", "exclude": "X", "set": {"A": 1}, "includ": []})
                .as_object()
                .unwrap(),
            "s.json",
            &mut w,
        );
        assert_eq!(p, Policy::default());
        assert_eq!(w.len(), 4, "{w:?}");
        assert!(w[0].contains("\"shellEnvironmentPolicy.inherit\" must be"));
    }
}
