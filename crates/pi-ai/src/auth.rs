//! API keys and request headers, resolved as the reference resolves them:
//!
//! 1. `<agent dir>/auth.json`: `{PROVIDER: {"type": "api_key", "key": K}}` or OAuth
//!    credentials (`{"type": "oauth", "access": T, "expires": MS, …}`; an expired token of
//!    Anthropic, OpenAI Codex or GitHub Copilot is refreshed, see `oauth`; other
//!    providers' must be renewed by the reference's `/login`);
//! 2. the provider's environment variable (`ANTHROPIC_API_KEY`, `OPENAI_API_KEY`, …), or
//!    the cloud credentials of Vertex and Bedrock (`ambient`);
//! 3. `apiKey` of the provider in `models.json`.
//!
//! A configured value (`key` in auth.json, `apiKey` and header values in models.json) is a
//! shell command when it starts with `!` (its output, trimmed), else the value of the
//! environment variable of that name if one is set, else the text itself.
//!
//! Keys never leave this process except in the request: [`Auth::secrets`] lists every value
//! that must be cut out of messages, and [`redact`] does it.

use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;

use crate::models::{Details, Model, Registry};

/// The environment variables holding a provider's key, in order of preference.
pub(crate) fn env_vars(provider: &str) -> &'static [&'static str] {
    match provider {
        "anthropic" => &["ANTHROPIC_OAUTH_TOKEN", "ANTHROPIC_API_KEY"],
        "github-copilot" => &["COPILOT_GITHUB_TOKEN", "GH_TOKEN", "GITHUB_TOKEN"],
        "openai" => &["OPENAI_API_KEY"],
        "azure-openai-responses" => &["AZURE_OPENAI_API_KEY"],
        "deepseek" => &["DEEPSEEK_API_KEY"],
        "google" => &["GEMINI_API_KEY"],
        "google-vertex" => &["GOOGLE_CLOUD_API_KEY"],
        "groq" => &["GROQ_API_KEY"],
        "cerebras" => &["CEREBRAS_API_KEY"],
        "xai" => &["XAI_API_KEY"],
        "openrouter" => &["OPENROUTER_API_KEY"],
        "vercel-ai-gateway" => &["AI_GATEWAY_API_KEY"],
        "zai" => &["ZAI_API_KEY"],
        "mistral" => &["MISTRAL_API_KEY"],
        "minimax" => &["MINIMAX_API_KEY"],
        "minimax-cn" => &["MINIMAX_CN_API_KEY"],
        "moonshotai" | "moonshotai-cn" => &["MOONSHOT_API_KEY"],
        "huggingface" => &["HF_TOKEN"],
        "fireworks" => &["FIREWORKS_API_KEY"],
        "opencode" | "opencode-go" => &["OPENCODE_API_KEY"],
        "kimi-coding" => &["KIMI_API_KEY"],
        "cloudflare-workers-ai" | "cloudflare-ai-gateway" => &["CLOUDFLARE_API_KEY"],
        "xiaomi" => &["XIAOMI_API_KEY"],
        "xiaomi-token-plan-cn" => &["XIAOMI_TOKEN_PLAN_CN_API_KEY"],
        "xiaomi-token-plan-ams" => &["XIAOMI_TOKEN_PLAN_AMS_API_KEY"],
        "xiaomi-token-plan-sgp" => &["XIAOMI_TOKEN_PLAN_SGP_API_KEY"],
        _ => &[],
    }
}

fn env(name: &str) -> Option<String> {
    std::env::var(name).ok().filter(|v| !v.is_empty())
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
        "google-vertex" => crate::providers::google::vertex::adc_source(
            &crate::providers::google::vertex::process_env,
        ),
        "amazon-bedrock" => crate::providers::bedrock::credential_source(
            &crate::providers::google::vertex::process_env,
        ),
        _ => None,
    }
}

/// The key a provider with [`ambient`] credentials is given (its requests use the
/// credentials instead).
pub(crate) const AMBIENT_KEY: &str = "<authenticated>";

/// Why a `!command` value gave no value.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum CommandError {
    #[error("cannot run the command: {0}")]
    Run(String),
    #[error("the command took more than 10 seconds")]
    Timeout,
    #[error("the command failed ({0})")]
    Failed(String),
    #[error("the command printed nothing")]
    Empty,
}

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

/// Resolves a configured value: `!command`, an environment variable name, or a literal.
/// A command that fails or prints nothing gives `Err`.
pub(crate) fn resolve_value(config: &str) -> Result<String, CommandError> {
    if let Some(cmd) = config.strip_prefix('!') {
        return run_command(cmd);
    }
    Ok(env(config).unwrap_or_else(|| config.to_owned()))
}

fn run_command(cmd: &str) -> Result<String, CommandError> {
    let mut child = Command::new("sh")
        .arg("-c")
        .arg(cmd)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .map_err(|e| CommandError::Run(e.to_string()))?;
    let start = Instant::now();
    loop {
        match child.try_wait() {
            Ok(Some(_)) => break,
            Ok(None) if start.elapsed() < Duration::from_secs(10) => {
                std::thread::sleep(Duration::from_millis(10));
            }
            Ok(None) => {
                let _ = child.kill();
                let _ = child.wait();
                return Err(CommandError::Timeout);
            }
            Err(e) => return Err(CommandError::Run(e.to_string())),
        }
    }
    let out = child
        .wait_with_output()
        .map_err(|e| CommandError::Run(e.to_string()))?;
    if !out.status.success() {
        return Err(CommandError::Failed(out.status.to_string()));
    }
    let v = String::from_utf8_lossy(&out.stdout).trim().to_owned();
    if v.is_empty() {
        return Err(CommandError::Empty);
    }
    Ok(v)
}

/// `<agent dir>/auth.json`, or nothing when it is missing or unreadable.
pub(crate) fn auth_file(agent_dir: &Path) -> serde_json::Map<String, Value> {
    std::fs::read(agent_dir.join("auth.json"))
        .ok()
        .and_then(|t| serde_json::from_slice::<Value>(&t).ok())
        .and_then(|v| match v {
            Value::Object(o) => Some(o),
            _ => None,
        })
        .unwrap_or_default()
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
    if let Some((name, _)) = env_key(provider) {
        return Some(format!("env {name}"));
    }
    if let Some(a) = ambient(provider) {
        return Some(a);
    }
    if registry
        .providers
        .get(provider)
        .is_some_and(|p| p.api_key.is_some())
    {
        return Some("models.json".into());
    }
    None
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
    if a.api_key.is_none()
        && let Some((name, v)) = env_key(provider)
    {
        a.api_key = Some(v);
        a.source = Some(format!("env {name}"));
    }
    if a.api_key.is_none()
        && let Some(desc) = ambient(provider)
    {
        a.api_key = Some(AMBIENT_KEY.to_owned());
        a.source = Some(desc);
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

/// Sets a header, replacing one of the same name (names compare case-insensitively).
pub(crate) fn set_header(headers: &mut Vec<(String, String)>, name: &str, value: String) {
    headers.retain(|(k, _)| !k.eq_ignore_ascii_case(name));
    headers.push((name.to_owned(), value));
}

/// The shortest piece of a secret that is cut out on its own: a text holding the first 12
/// characters of a key (a truncated key in an error message) gives the key away.
pub(crate) const REDACT_PREFIX: usize = 12;

/// Cuts secrets (keys, header values) out of a text: each as it is, JSON-escaped or
/// percent-encoded (as a URL or a form carries it), in any mix of upper and lower case, and
/// any piece of 12 or more characters that starts it. Values shorter than 6 characters are
/// left alone (they are not secrets: `none`, `x`, `local`).
pub fn redact(text: &str, secrets: &[String]) -> String {
    let mut ranges: Vec<(usize, usize)> = Vec::new();
    for s in secrets.iter().filter(|s| s.chars().count() >= 6) {
        for form in forms(s) {
            find_prefixes(text.as_bytes(), form.as_bytes(), &mut ranges);
        }
    }
    if ranges.is_empty() {
        return text.to_owned();
    }
    ranges.sort_unstable();
    let mut out = String::with_capacity(text.len());
    let mut at = 0;
    for (start, end) in ranges {
        if end <= at {
            continue;
        }
        if start >= at {
            out.push_str(&text[at..start]);
            out.push_str("[redacted]");
        }
        at = end;
    }
    out.push_str(&text[at..]);
    out
}

/// The ways a secret may be written in a text.
fn forms(s: &str) -> Vec<String> {
    let mut out = vec![s.to_owned()];
    if let Ok(q) = serde_json::to_string(s) {
        let json = q[1..q.len() - 1].to_owned();
        // Escapes some writers add: `\\/`, and every non-ASCII character as `\\uXXXX`.
        let mut ascii = String::new();
        for c in json.chars() {
            if c.is_ascii() {
                ascii.push(c);
            } else {
                let mut buf = [0u16; 2];
                for u in c.encode_utf16(&mut buf) {
                    ascii.push_str(&format!("\\u{u:04x}"));
                }
            }
        }
        for j in [json, ascii] {
            out.push(j.replace('/', "\\/"));
            out.push(j);
        }
    }
    let url = percent_encode(s);
    out.push(url.replace("%20", "+"));
    out.push(url);
    out.sort();
    out.dedup();
    out
}

/// Adds to `out` every place where `text` holds `form` (ASCII letters in any case), or a
/// piece of it at least [`REDACT_PREFIX`] characters long that starts it.
fn find_prefixes(text: &[u8], form: &[u8], out: &mut Vec<(usize, usize)>) {
    let Some(&first) = form.first() else {
        return;
    };
    // The shortest piece that counts, in bytes, at a character boundary of `form`.
    let boundary =
        |n: usize| (n..=form.len()).find(|&k| k == form.len() || (form[k] & 0xC0) != 0x80);
    let min = match form.iter().filter(|b| (**b & 0xC0) != 0x80).count() {
        n if n > REDACT_PREFIX => {
            let nth = form
                .iter()
                .enumerate()
                .filter(|(_, b)| (**b & 0xC0) != 0x80)
                .nth(REDACT_PREFIX)
                .map_or(form.len(), |(i, _)| i);
            boundary(nth).unwrap_or(form.len())
        }
        _ => form.len(),
    };
    let mut i = 0;
    while i < text.len() {
        if !text[i].eq_ignore_ascii_case(&first) {
            i += 1;
            continue;
        }
        let mut n = text[i..]
            .iter()
            .zip(form)
            .take_while(|(a, b)| a.eq_ignore_ascii_case(b))
            .count();
        // Only whole characters of the form (and so of the text).
        while n > 0 && n < form.len() && (form[n] & 0xC0) == 0x80 {
            n -= 1;
        }
        if n >= min {
            out.push((i, i + n));
            i += n;
        } else {
            i += 1;
        }
    }
}

fn percent_encode(s: &str) -> String {
    let mut out = String::new();
    for b in s.bytes() {
        if b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.' | b'~') {
            out.push(b as char);
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn redaction() {
        let secrets = vec![
            "sk-secret-123".to_owned(),
            "x".to_owned(),
            "a b/c=d".to_owned(),
        ];
        assert_eq!(
            redact(
                "401 bad key sk-secret-123 at http://h/?k=a%20b%2Fc%3Dd",
                &secrets
            ),
            "401 bad key [redacted] at http://h/?k=[redacted]"
        );
        assert_eq!(redact("x marks", &secrets), "x marks");
    }

    #[test]
    fn redaction_catches_variants() {
        let key = "sk-Proj-9f8e7d6c5b4a3210".to_owned();
        let s = std::slice::from_ref(&key);
        assert_eq!(redact("k=SK-PROJ-9F8E7D6C5B4A3210!", s), "k=[redacted]!");
        assert_eq!(redact("k=sk-proj-9f8e7d6c5b4a3210", s), "k=[redacted]");
        // A prefix of 12 characters or more, as error messages show keys.
        assert_eq!(
            redact("Incorrect API key provided: sk-Proj-9f8e****3210.", s),
            "Incorrect API key provided: [redacted]****3210."
        );
        assert_eq!(redact("sk-Proj-9f8e", s), "[redacted]");
        assert_eq!(redact("sk-Proj-9f8", s), "sk-Proj-9f8");
        // Escaped forms.
        let odd = "p@ss/wörd \"quoted\" 123".to_owned();
        let s = std::slice::from_ref(&odd);
        let json = serde_json::to_string(&odd).unwrap();
        assert_eq!(redact(&format!("body {json}"), s), "body \"[redacted]\"");
        assert_eq!(
            redact(r#"{"k":"p@ss\/w\u00f6rd \"quoted\" 123"}"#, s),
            r#"{"k":"[redacted]"}"#
        );
        assert_eq!(
            redact("?k=p%40ss%2Fw%C3%B6rd+%22quoted%22+123&x", s),
            "?k=[redacted]&x"
        );
        assert_eq!(
            redact("?k=p%40ss%2fw%c3%b6rd%20%22quoted%22%20123", s),
            "?k=[redacted]"
        );
        // Overlapping finds make one cut.
        let two = vec!["abcdefghijklmnop".to_owned(), "ghijklmnopqrstuv".to_owned()];
        assert_eq!(redact("xabcdefghijklmnopqrstuvx", &two), "x[redacted]x");
    }

    #[test]
    fn config_values() {
        assert_eq!(resolve_value("!printf ' k1 '").unwrap(), "k1");
        assert!(resolve_value("!exit 3").is_err());
        assert_eq!(
            resolve_value("LITERAL_VALUE_NOT_AN_ENV_VAR").unwrap(),
            "LITERAL_VALUE_NOT_AN_ENV_VAR"
        );
        assert_eq!(
            resolve_value("PATH").unwrap(),
            std::env::var("PATH").unwrap()
        );
    }
}
