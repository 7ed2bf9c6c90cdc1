//! API keys and request headers, resolved as the reference resolves them:
//!
//! 1. `<agent dir>/auth.json`: `{PROVIDER: {"type": "api_key", "key": K}}` or OAuth
//!    credentials (`{"type": "oauth", "access": T, "expires": MS, …}`; an expired token of
//!    Anthropic, OpenAI Codex or GitHub Copilot is refreshed, see `oauth`; other
//!    providers' must be renewed by the reference's `/login`);
//! 2. `apiKey` of the provider in `models.json` (when its `$NAME` references are set);
//! 3. the provider's environment variable (`ANTHROPIC_API_KEY`, `OPENAI_API_KEY`, …), or
//!    the cloud credentials of Vertex and Bedrock (`ambient`).
//!
//! That is the reference 1.6's order. A configured value (`key` in auth.json, `apiKey` and
//! header values in models.json) is a shell command when it starts with `!` (its output,
//! trimmed), else literal text in which `$NAME` and `${NAME}` stand for environment
//! variables (`$$` and `$!` for `$` and `!`); see `crate::secrets::resolve_value`.
//!
//! Keys never leave this process except in the request: [`Auth::secrets`] lists every value
//! that must be cut out of messages, and [`redact`] does it.

use std::path::Path;

use serde_json::Value;

use crate::http::set_header;
use crate::models::{Details, Model, Registry};
pub use crate::secrets::{CommandError, redact};
use crate::secrets::{auth_file, is_configured, resolve_value};

/// The environment variables holding a provider's key, in order of preference (the
/// reference 1.6's `getApiKeyEnvVars`). `ANTHROPIC_AUTH_TOKEN` is not a key: it is sent as
/// `Authorization: Bearer` (see [`resolve`]).
pub(crate) fn env_vars(provider: &str) -> &'static [&'static str] {
    match provider {
        "anthropic" => &[
            ANTHROPIC_AUTH_TOKEN,
            "ANTHROPIC_OAUTH_TOKEN",
            "ANTHROPIC_API_KEY",
        ],
        "github-copilot" => &["COPILOT_GITHUB_TOKEN"],
        "ant-ling" => &["ANT_LING_API_KEY"],
        "qwen-token-plan" => &["QWEN_TOKEN_PLAN_TEAM_API_KEY", "QWEN_TOKEN_PLAN_API_KEY"],
        "qwen-token-plan-cn" => &[
            "QWEN_TOKEN_PLAN_TEAM_CN_API_KEY",
            "QWEN_TOKEN_PLAN_CN_API_KEY",
        ],
        "qwen-token-plan-individual" => &[
            "QWEN_TOKEN_PLAN_INDIVIDUAL_API_KEY",
            "QWEN_TOKEN_PLAN_API_KEY",
        ],
        "qwen-token-plan-individual-cn" => &[
            "QWEN_TOKEN_PLAN_INDIVIDUAL_CN_API_KEY",
            "QWEN_TOKEN_PLAN_CN_API_KEY",
        ],
        "openai" => &["OPENAI_API_KEY"],
        "azure" => &["AZURE_OPENAI_API_KEY"],
        "nvidia" => &["NVIDIA_API_KEY"],
        "deepseek" => &["DEEPSEEK_API_KEY"],
        "google" => &["GEMINI_API_KEY"],
        "google-vertex" => &["GOOGLE_CLOUD_API_KEY"],
        "groq" => &["GROQ_API_KEY"],
        "cerebras" => &["CEREBRAS_API_KEY"],
        "xai" => &["XAI_API_KEY"],
        "typesafe" => &["TYPESAFE_API_KEY"],
        "radius" => &["RADIUS_API_KEY"],
        "openrouter" => &["OPENROUTER_API_KEY"],
        "vercel-ai-gateway" => &["AI_GATEWAY_API_KEY"],
        "zai" => &["ZAI_API_KEY"],
        "zai-coding-cn" => &["ZAI_CODING_CN_API_KEY"],
        "mistral" => &["MISTRAL_API_KEY"],
        "minimax" => &["MINIMAX_API_KEY"],
        "minimax-cn" => &["MINIMAX_CN_API_KEY"],
        "moonshotai" | "moonshotai-cn" => &["MOONSHOT_API_KEY"],
        "huggingface" => &["HF_TOKEN"],
        "fireworks" => &["FIREWORKS_API_KEY"],
        "together" => &["TOGETHER_API_KEY"],
        "baseten" => &["BASETEN_API_KEY"],
        "opencode" | "opencode-go" => &["OPENCODE_API_KEY"],
        "kimi-coding" => &["KIMI_API_KEY"],
        "meta" => &["META_API_KEY"],
        "cloudflare-workers-ai" | "cloudflare-ai-gateway" => &["CLOUDFLARE_API_KEY"],
        "xiaomi" => &["XIAOMI_API_KEY"],
        "xiaomi-token-plan-cn" => &["XIAOMI_TOKEN_PLAN_CN_API_KEY"],
        "xiaomi-token-plan-ams" => &["XIAOMI_TOKEN_PLAN_AMS_API_KEY"],
        "xiaomi-token-plan-sgp" => &["XIAOMI_TOKEN_PLAN_SGP_API_KEY"],
        _ => &[],
    }
}

/// Anthropic's bearer token variable (a gateway's token rather than an API key).
pub(crate) const ANTHROPIC_AUTH_TOKEN: &str = "ANTHROPIC_AUTH_TOKEN";

/// The variable a user sets to give a provider its key: Anthropic's API key variable, else
/// the first of [`env_vars`].
pub fn key_var(provider: &str) -> Option<&'static str> {
    match provider {
        "anthropic" => Some("ANTHROPIC_API_KEY"),
        _ => env_vars(provider).first().copied(),
    }
}

use crate::secrets::env;

/// The key the environment gives a provider (`getEnvApiKey`): the first of its variables
/// that is set, `ANTHROPIC_AUTH_TOKEN` left out.
pub(crate) fn env_api_key(provider: &str) -> Option<String> {
    env_vars(provider)
        .iter()
        .filter(|n| **n != ANTHROPIC_AUTH_TOKEN)
        .find_map(|n| env(n))
}

/// The first of the provider's environment variables that is set: (name, value).
pub(crate) fn env_key(provider: &str) -> Option<(&'static str, String)> {
    env_vars(provider)
        .iter()
        .find_map(|n| env(n).map(|v| (*n, v)))
}

/// Cloud credentials a provider uses without a key, as the reference counts them: Vertex's
/// application-default credentials (with a project and a location), Bedrock's AWS
/// variables. The text says which (for messages; no secret in it).
pub(crate) fn ambient(provider: &str) -> Option<String> {
    match provider {
        "google-vertex" => {
            crate::providers::google::vertex::adc_source(&crate::request::process_env)
        }
        "amazon-bedrock" => {
            crate::providers::bedrock::credential_source(&crate::request::process_env)
        }
        _ => None,
    }
}

/// The key a provider with [`ambient`] credentials is given (its requests use the
/// credentials instead).
pub(crate) const AMBIENT_KEY: &str = "<authenticated>";

/// Why a key or a header could not be resolved.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum AuthError {
    #[error("cannot resolve the API key for \"{provider}\" from auth.json: {error}")]
    AuthFileKey {
        provider: String,
        error: CommandError,
    },
    #[error(
        "the OAuth login for \"{provider}\" in auth.json has expired; log in again with the reference agent (/login {provider}) or set an API key"
    )]
    Expired { provider: String },
    #[error(
        "cannot refresh the OAuth login for \"{provider}\" in auth.json (left unchanged): {error}; log in again with the reference agent (/login {provider}) or set an API key"
    )]
    Refresh { provider: String, error: String },
    #[error("cannot resolve the API key for provider \"{provider}\" in models.json: {error}")]
    ModelsKey {
        provider: String,
        error: CommandError,
    },
    #[error("cannot resolve header \"{header}\" of \"{provider}/{model}\": {error}")]
    Header {
        header: String,
        provider: String,
        model: String,
        error: CommandError,
    },
    #[error("no API key found for \"{provider}\"")]
    NoKeyForHeader { provider: String },
}

/// Where a provider's key would come from, without running any command.
pub fn source(agent_dir: &Path, registry: &Registry, provider: &str) -> Option<String> {
    let auth = auth_file(agent_dir);
    if let Some(c) = auth.get(provider) {
        match c.get("type").and_then(Value::as_str) {
            Some("api_key") => return Some("auth.json".into()),
            Some("oauth") => return Some("auth.json (oauth)".into()),
            _ => {}
        }
    }
    if registry
        .providers
        .get(provider)
        .and_then(|p| p.api_key.as_deref())
        .is_some_and(is_configured)
    {
        return Some("models.json".into());
    }
    if let Some((name, _)) = env_key(provider) {
        return Some(format!("env {name}"));
    }
    ambient(provider)
}

/// A resolved key and the headers of a request.
#[derive(Debug, Clone, Default)]
pub struct Auth {
    pub api_key: Option<String>,
    pub headers: Vec<(String, String)>,
    /// Where the key came from (for messages; never the key itself).
    pub(crate) source: Option<String>,
    /// Everything to cut out of messages: the key and configured header values.
    pub secrets: Vec<String>,
}

fn now_ms() -> i64 {
    match std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH) {
        Ok(d) => i64::try_from(d.as_millis()).unwrap_or(i64::MAX),
        Err(_) => 0,
    }
}

/// The key of a provider from its environment variables, else its cloud credentials.
fn from_environment(provider: &str, a: &mut Auth) {
    if let Some((name, v)) = env_key(provider) {
        if name == ANTHROPIC_AUTH_TOKEN {
            // A bearer token: no key of its own (so no `x-api-key`), sent as authorization.
            a.secrets.push(v.clone());
            a.headers
                .push(("Authorization".into(), format!("Bearer {v}")));
            a.api_key = Some(String::new());
        } else {
            a.api_key = Some(v);
        }
        a.source = Some(format!("env {name}"));
    } else if let Some(desc) = ambient(provider) {
        a.api_key = Some(AMBIENT_KEY.to_owned());
        a.source = Some(desc);
    }
}

/// Resolves the key and headers for a request to `model` (upstream's
/// `getApiKeyAndHeaders`, then the provider's own environment fallback).
pub fn resolve(
    agent_dir: &Path,
    registry: &Registry,
    model: &Model,
    details: &Details,
) -> Result<Auth, AuthError> {
    let provider = model.provider.as_str();
    let mut a = Auth::default();
    let auth = auth_file(agent_dir);
    match auth.get(provider) {
        Some(c) if c.get("type").and_then(Value::as_str) == Some("api_key") => {
            if let Some(k) = c.get("key").and_then(Value::as_str) {
                let v = resolve_value(k).map_err(|error| AuthError::AuthFileKey {
                    provider: provider.to_owned(),
                    error,
                })?;
                a.api_key = Some(v);
                a.source = Some("auth.json".into());
            }
        }
        Some(c) if c.get("type").and_then(Value::as_str) == Some("oauth") => {
            let expires = c.get("expires").and_then(Value::as_f64).unwrap_or(0.0);
            match c.get("access").and_then(Value::as_str) {
                Some(t) if (now_ms() as f64) < expires => {
                    a.api_key = Some(t.to_owned());
                    a.source = Some("auth.json (oauth)".into());
                }
                _ if crate::oauth::supports(provider) => {
                    let path = agent_dir.join("auth.json");
                    let token = crate::oauth::refresh(&path, provider).map_err(|error| {
                        AuthError::Refresh {
                            provider: provider.to_owned(),
                            error,
                        }
                    })?;
                    a.api_key = Some(token);
                    a.source = Some("auth.json (oauth, refreshed)".into());
                }
                _ => {
                    return Err(AuthError::Expired {
                        provider: provider.to_owned(),
                    });
                }
            }
        }
        _ => {}
    }
    let config = registry.providers.get(provider);
    if a.api_key.is_none()
        && let Some(k) = config.and_then(|c| c.api_key.as_deref())
    {
        let v = resolve_value(k).map_err(|error| AuthError::ModelsKey {
            provider: provider.to_owned(),
            error,
        })?;
        a.api_key = Some(v);
        a.source = Some("models.json".into());
    }
    if a.api_key.is_none() {
        from_environment(provider, &mut a);
    }
    // Headers: the model's own, then the provider's and the model's from models.json.
    a.headers.extend(details.headers.iter().cloned());
    let configured = config
        .map(|c| c.headers.as_slice())
        .unwrap_or_default()
        .iter()
        .chain(details.config_headers.iter());
    for (k, v) in configured {
        let value = resolve_value(v).map_err(|error| AuthError::Header {
            header: k.clone(),
            provider: provider.to_owned(),
            model: model.id.clone(),
            error,
        })?;
        a.secrets.push(value.clone());
        set_header(&mut a.headers, k, value);
    }
    if config.is_some_and(|c| c.auth_header) {
        let Some(key) = &a.api_key else {
            return Err(AuthError::NoKeyForHeader {
                provider: provider.to_owned(),
            });
        };
        set_header(&mut a.headers, "Authorization", format!("Bearer {key}"));
    }
    if let Some(k) = &a.api_key {
        a.secrets.push(k.clone());
    }
    Ok(a)
}
