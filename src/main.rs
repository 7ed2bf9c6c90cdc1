//! `pi`: scriptable memory for coding agents. The binary: the command line (clap), one file
//! per command under [`cmd`], the views for people ([`render`], [`output`], [`pager`],
//! [`progress`]), RPC mode ([`rpc`]), and the one place where errors become messages and
//! exit statuses ([`error`]). What the commands do lives in the library crates under
//! `crates/` (see `docs/architecture.md`).

mod chat;
mod cli;
mod cmd;
mod error;
mod jq;
mod output;
mod pager;
mod progress;
mod render;
mod rpc;

fn main() -> std::process::ExitCode {
    std::process::ExitCode::from(cli::main())
}
