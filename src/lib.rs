//! `pi`: a scriptable toolkit for the memory of coding agents.
//!
//! The library holds the domain (`session`, `json`, …) and the command layer (`cli`, `cmd`);
//! the binary is a thin wrapper around [`cli::main`].

pub mod agent;
pub mod cli;
pub use pi_base::clock;
pub mod cmd;
pub mod compact;
pub use pi_base::config;
pub mod context;
pub use pi_session::usage::dates;
pub mod error;
pub mod extensions;
pub mod jq;
pub use pi_base::js;
pub use pi_base::json;
pub mod llm {
    //! Transitional: the providers crate under its old name.
    pub use pi_ai::providers::{anthropic, bedrock, openai};
    pub use pi_ai::*;
}
pub use pi_ai::models;
pub mod output;
pub mod pager;
pub use pi_base::fs as private;
pub use pi_base::par;
pub mod progress;
pub mod prompt;
pub mod render;
pub use pi_base::ids as rng;
pub mod runtime;
pub use pi_session as session;
pub mod tools;
pub use pi_session::usage;
