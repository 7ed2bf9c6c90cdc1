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
pub mod hooks;

use crate::agent::hooks::HookError;
pub use pi_tools::program as tools;
pub use pi_tools::project::Project;
pub use pi_tools::{env, process, trust};

/// What a command may use of the project in a directory: its hooks, tools and environment
/// policy when the project is trusted ([`trust`]), else only the global ones and those of
/// the command line.
/// The refusal as an `extension_error` of a run's event stream: the hook error that reports a project whose code was not run (`None` when it was, or
/// when it has none).
pub fn refusal(project: &Project) -> Option<HookError> {
    project.refused.as_ref().map(|why| HookError {
        hook: project.dir.join(".pi").to_string_lossy().into_owned(),
        event: "trust".to_owned(),
        error: why.clone(),
    })
}
