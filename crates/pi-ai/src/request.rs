//! What a caller asks a model: the context (system prompt, LLM messages, tools) and the
//! options of one call, and the model it goes to ([`Target`]).

use crate::models::{Details, Model};
use crate::value::Value as JsValue;

/// A tool the model may call.
#[derive(Debug, Clone, PartialEq)]
pub struct Tool {
    pub name: String,
    pub description: String,
    /// JSON schema of the arguments (an object schema).
    pub parameters: serde_json::Value,
}

/// Which tool the model must (or must not) call.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ToolChoice {
    Auto,
    None,
    /// Some tool (OpenAI `required`, Anthropic `any`).
    Required,
    /// This tool.
    Tool(String),
}

/// The context of a call.
#[derive(Debug, Clone, Default)]
pub struct Request {
    pub system_prompt: Option<String>,
    /// LLM messages (user, assistant, toolResult), as `crate::context::llm::convert` makes
    /// them; each provider transforms them for its API.
    pub messages: Vec<JsValue>,
    pub tools: Vec<Tool>,
}

/// Retries of a request that failed before anything streamed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RetryPolicy {
    /// Retries after the first attempt (`retry.provider.maxRetries`, default 2).
    pub max_retries: u32,
    /// The longest wait a server may ask for (`retry.provider.maxRetryDelayMs`, default
    /// 60000; 0: no limit). A longer `retry-after` ends the call with the error.
    pub max_delay_ms: u64,
    /// Time allowed for the response headers, and between two chunks of the stream
    /// (`retry.provider.timeoutMs`, default 10 minutes).
    pub timeout_ms: u64,
}

impl Default for RetryPolicy {
    fn default() -> RetryPolicy {
        RetryPolicy {
            max_retries: 2,
            max_delay_ms: 60_000,
            timeout_ms: 600_000,
        }
    }
}

/// The options of one call.
#[derive(Debug, Clone, Default)]
pub struct Options {
    /// Output tokens [default: the model's output limit, at most 32000].
    pub max_tokens: Option<u64>,
    /// The thinking level (`minimal` … `xhigh`); `None` or `off` for none. Sent only to
    /// models with reasoning, clamped to the levels they support.
    pub reasoning: Option<String>,
    pub temperature: Option<f64>,
    pub tool_choice: Option<ToolChoice>,
    pub api_key: Option<String>,
    /// Extra headers (after the model's and the provider's).
    pub headers: Vec<(String, String)>,
    pub retry: RetryPolicy,
    /// `thinkingBudgets` from settings: level → budget tokens (Anthropic budget models).
    pub thinking_budgets: Vec<(String, u64)>,
    /// `short` (default), `long` or `none` (upstream's `PI_CACHE_RETENTION`).
    pub cache_retention: Option<String>,
    /// Values to cut out of every message (keys, configured header values).
    pub secrets: Vec<String>,
    /// The session the call belongs to (the agent's session id): the prompt-cache key and
    /// session headers of the APIs that take one (OpenAI Responses, Codex, Mistral).
    pub session_id: Option<String>,
    /// The environment provider settings (Azure's resource, Cloudflare's account), cloud
    /// credentials and the clock (`PI_NOW`) are read from [default: the process's]; tests
    /// and embedders give their own. The one way a call's environment is injected.
    pub env: Option<std::sync::Arc<std::collections::BTreeMap<String, String>>>,
}

impl Options {
    /// An environment variable as the call sees it ([`Options::env`]); empty counts as unset.
    pub(crate) fn var(&self, name: &str) -> Option<String> {
        match &self.env {
            Some(m) => m.get(name).filter(|v| !v.is_empty()).cloned(),
            None => crate::request::process_env(name),
        }
    }

    /// The time of the call in Unix milliseconds (`PI_NOW` of [`Options::env`] when given).
    pub(crate) fn now_ms(&self) -> i64 {
        self.env
            .as_ref()
            .and_then(|m| m.get("PI_NOW"))
            .and_then(|v| {
                let v = v.trim();
                v.parse::<i64>()
                    .ok()
                    .or_else(|| pi_base::clock::parse_iso(v))
            })
            .unwrap_or_else(pi_base::clock::now_ms)
    }

    pub(crate) fn cache_retention(&self) -> &str {
        match self.cache_retention.as_deref() {
            Some(r) => r,
            None if std::env::var("PI_CACHE_RETENTION").is_ok_and(|v| v == "long") => "long",
            None => "short",
        }
    }
}

/// The wire protocol a call speaks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Wire {
    /// OpenAI Chat Completions: `POST {baseUrl}/chat/completions`.
    OpenAiCompletions,
    /// Anthropic Messages: `POST {baseUrl}/v1/messages`.
    AnthropicMessages,
    /// OpenAI Responses: `POST {baseUrl}/responses`.
    OpenAiResponses,
    /// Azure OpenAI Responses: `POST {resource}/openai/v1/responses?api-version=…`.
    AzureResponses,
    /// OpenAI Codex (ChatGPT subscriptions): `POST {baseUrl}/codex/responses`.
    CodexResponses,
    /// Mistral's chat API (`mistral-conversations`): `POST {baseUrl}/v1/chat/completions`.
    Mistral,
    /// Google Generative AI (Gemini API):
    /// `POST {baseUrl}/models/{id}:streamGenerateContent?alt=sse`.
    GoogleGenerativeAi,
    /// Google Vertex AI: the same request at a Vertex endpoint, with an API key or
    /// application-default credentials.
    GoogleVertex,
    /// Amazon Bedrock Converse Stream: `POST {endpoint}/model/{id}/converse-stream`, signed
    /// with SigV4, answered in AWS event-stream frames.
    BedrockConverseStream,
}

impl Wire {
    /// The protocol for a model's `api`.
    pub fn for_api(api: &str) -> Option<Wire> {
        match api {
            "openai-completions" => Some(Wire::OpenAiCompletions),
            "anthropic-messages" => Some(Wire::AnthropicMessages),
            "openai-responses" => Some(Wire::OpenAiResponses),
            "azure-openai-responses" => Some(Wire::AzureResponses),
            "openai-codex-responses" => Some(Wire::CodexResponses),
            "mistral-conversations" => Some(Wire::Mistral),
            "google-generative-ai" => Some(Wire::GoogleGenerativeAi),
            "google-vertex" => Some(Wire::GoogleVertex),
            "bedrock-converse-stream" => Some(Wire::BedrockConverseStream),
            _ => None,
        }
    }

    /// The `api` recorded in assistant messages.
    pub(crate) fn api(self) -> &'static str {
        match self {
            Wire::OpenAiCompletions => "openai-completions",
            Wire::AnthropicMessages => "anthropic-messages",
            Wire::OpenAiResponses => "openai-responses",
            Wire::AzureResponses => "azure-openai-responses",
            Wire::CodexResponses => "openai-codex-responses",
            Wire::Mistral => "mistral-conversations",
            Wire::GoogleGenerativeAi => "google-generative-ai",
            Wire::GoogleVertex => "google-vertex",
            Wire::BedrockConverseStream => "bedrock-converse-stream",
        }
    }
}

/// A model and what a request to it needs.
#[derive(Debug, Clone)]
pub struct Target {
    pub model: Model,
    pub details: Details,
    pub(crate) wire: Wire,
}

impl Target {
    /// `None` when pi does not speak the model's API. The model's `api` becomes the one
    /// spoken (what replies record).
    pub fn new(mut model: Model, details: Details) -> Option<Target> {
        let wire = Wire::for_api(&model.api)?;
        model.api = wire.api().to_owned();
        Some(Target {
            model,
            details,
            wire,
        })
    }
}
/// The process environment (empty values count as unset).
pub(crate) fn process_env(name: &str) -> Option<String> {
    std::env::var(name).ok().filter(|v| !v.is_empty())
}
