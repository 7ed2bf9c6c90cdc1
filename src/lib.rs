//! `pi`: a scriptable toolkit for the memory of coding agents.
//!
//! The library holds the domain (`session`, `json`, …) and the command layer (`cli`, `cmd`);
//! the binary is a thin wrapper around [`cli::main`].

pub use pi_agent::agent;
pub mod cli;
pub use pi_base::clock;
pub mod cmd;
pub use pi_agent::compact;
pub use pi_agent::context;
pub use pi_base::config;
pub use pi_session::usage::dates;
pub mod error;
pub use pi_agent::extensions;
pub mod jq;
pub use pi_base::js;
pub use pi_base::json;
pub mod llm {
    //! Transitional: the providers crate under its old name.
    pub use pi_ai::providers::google::vertex;
    pub use pi_ai::providers::{anthropic, bedrock, google, mistral, openai, responses};
    pub use pi_ai::*;
}
pub use pi_ai::models;
pub mod output;
pub mod pager;
pub use pi_base::fs as private;
pub use pi_base::par;
pub mod progress;
pub use pi_prompt as prompt;
pub mod render;
pub mod rpc;
pub use pi_agent::runtime;
pub use pi_base::ids as rng;
pub use pi_session as session;
pub use pi_session::usage;
pub use pi_tools as tools;
