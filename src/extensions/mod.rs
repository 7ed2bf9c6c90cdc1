//! Extending pi with programs, the Unix way: any executable, in any language, that reads
//! JSON on stdin and prints JSON on stdout.
//!
//! - [`config`]: which hooks run for which event, from `settings.json` (`hooks`, global then
//!   project) and `--hook EVENT=COMMAND`.
//! - [`hooks`]: running them. [`hooks::ProgramHooks`] plugs into the agent loop
//!   ([`crate::agent::hooks::Hooks`]); [`hooks::before_compact`] and [`hooks::before_tree`]
//!   serve `pi compact` and `pi session branch`.
//! - [`tools`]: program tools (`--tool PATH`, `tools/` folders): described by
//!   `PROGRAM --describe`, run with the arguments on stdin.
//! - [`process`]: running one program (its own process group, a timeout, bounded output).
//! - [`trust`]: which projects' code may run (`pi trust`), and [`Project`], the one gate
//!   every command passes a project's extensions through.
//! - [`env`]: the environment of the programs pi starts (`shellEnvironmentPolicy`).
//!
//! The protocol is documented in `commands/pi-extensions.md`.

pub mod config;
pub mod env;
pub mod hooks;
pub mod process;
pub mod tools;
pub mod trust;

use std::path::{Path, PathBuf};
use std::sync::Arc;

use crate::agent::hooks::HookError;

/// What a command may use of the project in a directory: its hooks, tools and environment
/// policy when the project is trusted ([`trust`]), else only the global ones and those of
/// the command line.
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

    /// The refusal as an `extension_error` of a run's event stream.
    pub fn refusal(&self) -> Option<HookError> {
        self.refused.as_ref().map(|why| HookError {
            hook: self.dir.join(".pi").to_string_lossy().into_owned(),
            event: "trust".to_owned(),
            error: why.clone(),
        })
    }
}
