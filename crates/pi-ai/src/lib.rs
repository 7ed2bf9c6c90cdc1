//! Talking to models: providers configured as the reference configures them (`models.json`,
//! `settings.json`, `auth.json`, API-key environment variables, cloud credentials), and
//! streaming calls over the OpenAI Chat Completions, Anthropic Messages, Google Gemini
//! (Generative AI and Vertex) and Amazon Bedrock Converse Stream APIs into one event stream.
//!
//! - [`request`]: what a call sends (system prompt, LLM messages, tools, options) and to
//!   which model ([`request::Target`]).
//! - [`client`]: the HTTP call with retries, streamed through [`sse`] (or AWS event-stream
//!   frames) into the provider's parser ([`openai`], [`anthropic`], [`google`], [`bedrock`]),
//!   giving [`message::Event`]s and a final [`message::AssistantMessage`] (text, thinking,
//!   tool calls, usage and cost, stop reason).
//! - [`vertex`], [`bedrock`]: the cloud credentials (Google access tokens, AWS SigV4).
//! - [`auth`]: keys and headers, and cutting them out of every message.
//! - [`config`]: the settings of calls, and which model a command uses.
//! - [`overflow`]: context-overflow and retryable errors, by upstream's patterns.
//!
//! Nothing here prints; commands decide what the user sees. Commands that call a model build
//! a tokio runtime for that call only, so the others start without one.

pub mod auth;
pub mod client;
pub mod config;
pub mod json_partial;
pub mod message;
pub mod models;
pub mod oauth;
pub mod overflow;
pub mod providers;
pub mod request;
pub mod sse;
pub mod transform;
pub mod value;

pub use client::Client;
pub use message::{AssistantMessage, Block, Event, LlmError, StopReason, Usage};
pub use request::{Options, Request, RetryPolicy, Target, Tool, ToolChoice, Wire};
