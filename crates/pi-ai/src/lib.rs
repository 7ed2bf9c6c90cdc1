//! Talking to models: the model catalogue and providers configured as the reference
//! configures them (`models.json`, `settings.json`, `auth.json`, API-key environment
//! variables, OAuth logins, cloud credentials), the LLM messages of a context, and
//! streaming calls over the OpenAI Chat Completions and Responses, Anthropic Messages,
//! Mistral, Google Gemini (Generative AI and Vertex) and Amazon Bedrock Converse Stream APIs
//! into one event stream.
//!
//! - [`models`]: the catalogue (built-in models with `models.json` applied).
//! - [`request`]: what a call sends (system prompt, LLM messages, tools, options) and to
//!   which model ([`Target`]), over which wire API ([`Wire`]).
//! - [`client`]: the HTTP call with retries and timeouts, its body read chunk by chunk into
//!   the provider's parser, giving [`Event`]s and a final [`AssistantMessage`] (text,
//!   thinking, tool calls, usage and cost, stop reason).
//! - [`providers`]: one folder per wire API behind one `Provider` trait (the request, the
//!   HTTP errors, the retry rules, the stream parser), and the assembly of content blocks
//!   they share; beside them, in private modules, the rest they share: server-sent events
//!   (`sse`), partial JSON (`json_partial`), the cross-provider message fixes (`transform`).
//! - [`auth`]: keys and headers, and cutting them out of every message; OAuth logins are
//!   refreshed as the reference refreshes them.
//! - [`config`]: the settings of calls, and which model a command uses.
//! - [`overflow`]: context-overflow and retryable errors, by upstream's patterns.
//! - [`value`]: JSON values in JavaScript's order and string semantics (what requests are
//!   written in).
//!
//! Nothing here prints; commands decide what the user sees. Commands that call a model build
//! a tokio runtime for that call only, so the others start without one.

pub mod auth;
pub mod client;
pub mod config;
mod http;
mod json_partial;
mod message;
pub mod models;
mod oauth;
pub mod overflow;
pub mod providers;
pub mod request;
mod secrets;
mod transform;
pub mod value;

pub use client::Client;
pub use message::{AssistantMessage, Block, Event, Follower, LlmError, StopReason, Usage};
pub use request::{Options, Request, RetryPolicy, Target, Tool, ToolChoice, Wire};

/// What the benchmarks (`cargo bench -p pi-ai`) run of the crate's private parts.
#[doc(hidden)]
pub mod bench {
    /// Reads `body` as server-sent events, fed in chunks of `chunk` bytes as a response
    /// arrives; returns the number of events and the bytes of their data.
    pub fn sse(body: &[u8], chunk: usize) -> (usize, usize) {
        let mut parser = crate::providers::sse::Parser::new();
        let (mut events, mut data) = (0, 0);
        for part in body.chunks(chunk.max(1)) {
            for ev in parser.feed(part) {
                events += 1;
                data += ev.data.len();
            }
        }
        if let Some(ev) = parser.finish() {
            events += 1;
            data += ev.data.len();
        }
        (events, data)
    }
}
