//! `pi`: a scriptable toolkit for the memory of coding agents.
//!
//! The library holds the domain (`session`, `json`, …) and the command layer (`cli`, `cmd`);
//! the binary is a thin wrapper around [`cli::main`].

pub mod agent;
pub mod cli;
pub mod clock;
pub mod cmd;
pub mod compact;
pub mod config;
pub mod context;
pub mod dates;
pub mod error;
pub mod extensions;
pub mod jq;
pub mod js;
pub mod json;
pub mod llm;
pub mod models;
pub mod output;
pub mod pager;
pub mod par;
pub mod private;
pub mod progress;
pub mod prompt;
pub mod render;
pub mod rng;
pub mod runtime;
pub mod session;
pub mod tools;
pub mod usage;
