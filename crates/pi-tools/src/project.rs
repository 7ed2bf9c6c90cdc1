//! A project directory as the tools see it: whether its code (hooks, program tools, the
//! environment policy in `.pi/settings.json`) may run, why not, and the environment its
//! programs get.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use crate::{env, trust};

#[derive(Debug, Clone)]
pub struct Project {
    /// The directory (a session's working directory).
    pub dir: PathBuf,
    /// Whether the project's `.pi/` hooks, tools and `shellEnvironmentPolicy` are used.
    pub trusted: bool,
    /// Why they are not, when the project has some: the one warning to show.
    pub refused: Option<String>,
    /// The environment of the programs started for it.
    pub policy: Arc<env::Policy>,
    /// Problems met (a bad policy, an unreadable trust store).
    pub warnings: Vec<String>,
}

impl Project {
    /// Decides for the project in `dir`, with the trust store of `agent_dir`.
    pub fn load(agent_dir: &Path, dir: &Path) -> Project {
        let mut warnings = Vec::new();
        let fp = trust::fingerprint(dir);
        let has_code = match &fp {
            Ok(fp) => fp.has_code,
            Err(e) => {
                // Unreadable files: code that cannot be checked.
                warnings.push(format!("cannot read {}: {e}", dir.join(".pi").display()));
                true
            }
        };
        let (trusted, refused) = if !has_code {
            // Nothing to run; the project's other settings apply as always.
            (false, None)
        } else {
            let store = trust::Store::new(agent_dir);
            let status = match &fp {
                Ok(fp) => store.status_of(dir, fp),
                Err(_) => store.status(dir),
            }
            .unwrap_or_else(|e| {
                warnings.push(format!("{e}; no project is trusted"));
                trust::Status::Untrusted
            });
            let hint = format!(
                "review them, then run `pi trust {}`",
                shell_words::quote(&dir.to_string_lossy())
            );
            match status {
                trust::Status::Trusted => (true, None),
                trust::Status::Changed(files) => (
                    false,
                    Some(format!(
                        "{} changed since it was trusted ({}): its hooks and tools were not run; {hint}",
                        dir.display(),
                        files.join(", ")
                    )),
                ),
                trust::Status::Untrusted | trust::Status::Missing => (
                    false,
                    Some(format!(
                        "{} is not a trusted project: its hooks and tools (.pi/) were not run; {hint}",
                        dir.display()
                    )),
                ),
            }
        };
        let (policy, policy_warnings) = env::Policy::load(agent_dir, dir, trusted);
        warnings.extend(policy_warnings);
        Project {
            dir: dir.to_owned(),
            trusted,
            refused,
            policy: Arc::new(policy),
            warnings,
        }
    }
}
