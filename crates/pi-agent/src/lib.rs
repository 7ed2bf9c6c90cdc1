//! The agent, above the session store, the providers, the prompts and the tools: the context
//! a model sees ([`context`]), compaction and branch summaries ([`compact`]), the agent loop
//! that records a run as it goes ([`agent`]), programs that take part in it as hooks
//! ([`extensions`]), and the async runtime the calls run on ([`runtime`]).

pub mod agent;
pub mod compact;
pub mod context;
pub mod extensions;
pub mod runtime;
