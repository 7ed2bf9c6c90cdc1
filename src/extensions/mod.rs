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
//!
//! The protocol is documented in `commands/pi-extensions.md`.

pub mod config;
pub mod hooks;
pub mod process;
pub mod tools;
