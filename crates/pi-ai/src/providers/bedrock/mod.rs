//! Amazon Bedrock Converse Stream (`bedrock-converse-stream`), as the reference's provider
//! speaks it through the AWS SDK: where a request goes (region and endpoint), its
//! credentials, its body, its SigV4 signature (the `aws-sigv4` crate of the AWS SDK for
//! Rust), and the streamed answer in AWS event-stream frames (decoded by
//! `aws-smithy-eventstream`) turned into [`Event`]s and an [`AssistantMessage`].
//!
//! Region: `AWS_REGION`, `AWS_DEFAULT_REGION`; else the region of a standard
//! `bedrock-runtime.{region}.amazonaws.com` base URL; else, with `AWS_PROFILE`, the profile's
//! `region`; else `us-east-1`. Endpoint: the model's `baseUrl`, except that a standard one is
//! replaced by the configured region's when a region or profile is configured.
//!
//! Credentials, in the AWS SDK's order: `AWS_BEARER_TOKEN_BEDROCK` (a Bedrock API key, sent
//! as `Authorization: Bearer`); `AWS_BEDROCK_SKIP_AUTH=1` (dummy keys, for proxies); the
//! `AWS_PROFILE` profile (then the environment keys are not used); `AWS_ACCESS_KEY_ID`,
//! `AWS_SECRET_ACCESS_KEY`, `AWS_SESSION_TOKEN`; the `default` profile; ECS container
//! credentials (`AWS_CONTAINER_CREDENTIALS_RELATIVE_URI` / `_FULL_URI`). Profiles come from
//! `~/.aws/credentials` and `~/.aws/config` (`AWS_SHARED_CREDENTIALS_FILE`,
//! `AWS_CONFIG_FILE`): static keys, or a `credential_process`. Not supported (the AWS SDK has
//! them): SSO and assume-role profiles, web identity tokens, EC2 instance metadata.
//!
//! A request is signed once; its retries (which come within the signature's 15 minutes)
//! send the same signature.

mod messages;

use std::collections::HashMap;
use std::path::PathBuf;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use aws_smithy_eventstream::frame::{DecodedFrame, MessageFrameDecoder};
use aws_smithy_types::event_stream::{HeaderValue, Message};
use serde_json::Value;

use crate::message::{AssistantMessage, Block, Event, LlmError, Sink, StopReason};
use crate::models::Model;
use crate::providers::bedrock::messages as wire_messages;
use crate::providers::blocks::{Assembler, Draft};
use crate::providers::{
    self, Call, Env, ErrorResponse, Parser, Prepared, Provider, anthropic, thinking_level,
};
use crate::request::{Options, Request, Target, ToolChoice};
use crate::value::{Obj, Value as Js};

/// AWS keys.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Credentials {
    pub access_key_id: String,
    pub secret_access_key: String,
    pub session_token: Option<String>,
}

/// How a request is authorized.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Auth {
    /// SigV4 with these keys.
    Keys(Credentials),
    /// A Bedrock API key.
    Bearer(String),
}

impl Auth {
    /// Values to cut out of messages.
    pub(crate) fn secrets(&self) -> Vec<String> {
        match self {
            Auth::Bearer(t) => vec![t.clone()],
            Auth::Keys(c) => {
                let mut v = vec![c.secret_access_key.clone()];
                v.extend(c.session_token.clone());
                v
            }
        }
    }
}

/// The region of a standard `bedrock-runtime[-fips].{region}.amazonaws.com[.cn]` URL.
pub(crate) fn endpoint_region(base_url: &str) -> Option<String> {
    let url = reqwest::Url::parse(base_url).ok()?;
    let host = url.host_str()?.to_lowercase();
    let rest = host
        .strip_prefix("bedrock-runtime-fips.")
        .or_else(|| host.strip_prefix("bedrock-runtime."))?;
    let region = rest
        .strip_suffix(".amazonaws.com")
        .or_else(|| rest.strip_suffix(".amazonaws.com.cn"))?;
    (!region.is_empty()
        && region
            .chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-'))
    .then(|| region.to_owned())
}

fn home(env: Env) -> Option<PathBuf> {
    env("HOME").map(PathBuf::from)
}

fn expand(path: &str, env: Env) -> PathBuf {
    match (path.strip_prefix("~/"), home(env)) {
        (Some(rest), Some(h)) => h.join(rest),
        _ => PathBuf::from(path),
    }
}

/// The sections of an AWS profile file: name → keys (lower-cased) → values.
fn parse_ini(text: &str) -> HashMap<String, HashMap<String, String>> {
    let mut out: HashMap<String, HashMap<String, String>> = HashMap::new();
    let mut current: Option<String> = None;
    for line in text.lines() {
        if line.starts_with([' ', '\t']) {
            // A nested property (`s3 =` and its indented lines): not used here.
            continue;
        }
        let t = line.trim();
        if t.is_empty() || t.starts_with('#') || t.starts_with(';') {
            continue;
        }
        if let Some(name) = t.strip_prefix('[').and_then(|r| r.split(']').next()) {
            let name = name.split_whitespace().collect::<Vec<_>>().join(" ");
            out.entry(name.clone()).or_default();
            current = Some(name);
            continue;
        }
        if let (Some(sec), Some((k, v))) = (&current, t.split_once('=')) {
            let v = v.trim();
            let v = v
                .split_once(" #")
                .or_else(|| v.split_once(" ;"))
                .map_or(v, |(a, _)| a.trim_end());
            out.entry(sec.clone())
                .or_default()
                .insert(k.trim().to_lowercase(), v.to_owned());
        }
    }
    out
}

/// A profile's settings: the credentials file's section over the config file's.
fn profile(name: &str, env: Env) -> Option<HashMap<String, String>> {
    let read = |var: &str, default: &str| -> HashMap<String, HashMap<String, String>> {
        let path = match env(var) {
            Some(p) => expand(&p, env),
            None => match home(env) {
                Some(h) => h.join(".aws").join(default),
                None => return HashMap::new(),
            },
        };
        std::fs::read_to_string(path)
            .map(|t| parse_ini(&t))
            .unwrap_or_default()
    };
    let config = read("AWS_CONFIG_FILE", "config");
    let credentials = read("AWS_SHARED_CREDENTIALS_FILE", "credentials");
    let config_name = if name == "default" {
        "default".to_owned()
    } else {
        format!("profile {name}")
    };
    let mut merged = config
        .get(&config_name)
        .or_else(|| {
            (name == "default")
                .then(|| config.get("profile default"))
                .flatten()
        })
        .cloned();
    if let Some(c) = credentials.get(name) {
        merged.get_or_insert_with(HashMap::new).extend(c.clone());
    }
    merged
}

fn keys_from(m: &HashMap<String, String>) -> Option<Credentials> {
    let id = m.get("aws_access_key_id").filter(|v| !v.is_empty())?;
    let secret = m.get("aws_secret_access_key").filter(|v| !v.is_empty())?;
    Some(Credentials {
        access_key_id: id.clone(),
        secret_access_key: secret.clone(),
        session_token: m
            .get("aws_session_token")
            .filter(|v| !v.is_empty())
            .cloned(),
    })
}

/// Keys from the JSON a `credential_process` prints.
fn process_keys(json: &str) -> Result<Credentials, String> {
    let v: Value =
        serde_json::from_str(json).map_err(|e| format!("its output is not JSON ({e})"))?;
    let s = |k: &str| v.get(k).and_then(Value::as_str).map(str::to_owned);
    match (s("AccessKeyId"), s("SecretAccessKey")) {
        (Some(id), Some(secret)) => Ok(Credentials {
            access_key_id: id,
            secret_access_key: secret,
            session_token: s("SessionToken"),
        }),
        _ => Err("its output has no AccessKeyId and SecretAccessKey".into()),
    }
}

/// The keys of a named profile.
fn profile_keys(name: &str, env: Env) -> Result<Option<Credentials>, LlmError> {
    let Some(p) = profile(name, env) else {
        return Ok(None);
    };
    if let Some(k) = keys_from(&p) {
        return Ok(Some(k));
    }
    if let Some(cmd) = p.get("credential_process").filter(|c| !c.is_empty()) {
        let out = crate::secrets::resolve_value(&format!("!{cmd}")).map_err(|e| {
            LlmError::new(format!(
                "the credential_process of AWS profile \"{name}\" failed: {e}"
            ))
        })?;
        return process_keys(&out).map(Some).map_err(|e| {
            LlmError::new(format!(
                "the credential_process of AWS profile \"{name}\" failed: {e}"
            ))
        });
    }
    let unsupported = [
        "role_arn",
        "sso_session",
        "sso_start_url",
        "web_identity_token_file",
    ]
    .iter()
    .find(|k| p.contains_key(**k));
    if let Some(k) = unsupported {
        return Err(LlmError::new(format!(
            "AWS profile \"{name}\" uses {k}, which pi does not support (it reads static keys \
             and credential_process); export keys with `aws configure export-credentials \
             --profile {name} --format env`"
        )));
    }
    Ok(None)
}

/// Where a call's credentials come from, as `pi models` shows it (no files are read): the
/// reference counts Bedrock as configured when one of these variables is set.
pub(crate) fn credential_source(env: Env) -> Option<String> {
    if env("AWS_BEARER_TOKEN_BEDROCK").is_some() {
        return Some("env AWS_BEARER_TOKEN_BEDROCK".into());
    }
    if let Some(p) = env("AWS_PROFILE") {
        return Some(format!("env AWS_PROFILE ({p})"));
    }
    if env("AWS_ACCESS_KEY_ID").is_some() && env("AWS_SECRET_ACCESS_KEY").is_some() {
        return Some("env AWS_ACCESS_KEY_ID".into());
    }
    [
        "AWS_CONTAINER_CREDENTIALS_RELATIVE_URI",
        "AWS_CONTAINER_CREDENTIALS_FULL_URI",
        "AWS_WEB_IDENTITY_TOKEN_FILE",
    ]
    .iter()
    .find(|k| env(k).is_some())
    .map(|k| format!("env {k}"))
}

/// The region and endpoint of calls to `model`.
pub(crate) fn region_and_endpoint(model: &Model, env: Env) -> Result<(String, String), LlmError> {
    let configured = env("AWS_REGION").or_else(|| env("AWS_DEFAULT_REGION"));
    let profile_name = env("AWS_PROFILE");
    let from_url = endpoint_region(&model.base_url);
    let explicit = from_url.is_none() || (configured.is_none() && profile_name.is_none());
    let region = match (configured, &from_url, &profile_name) {
        (Some(r), ..) => r,
        (None, Some(r), _) if explicit => r.clone(),
        (None, _, None) => "us-east-1".to_owned(),
        (None, _, Some(p)) => profile(p, env)
            .and_then(|m| m.get("region").cloned())
            .filter(|r| !r.is_empty())
            .ok_or_else(|| LlmError::new("Region is missing"))?,
    };
    let endpoint = if explicit && !model.base_url.trim().is_empty() {
        model.base_url.trim().trim_end_matches('/').to_owned()
    } else if region.starts_with("cn-") {
        format!("https://bedrock-runtime.{region}.amazonaws.com.cn")
    } else {
        format!("https://bedrock-runtime.{region}.amazonaws.com")
    };
    Ok((region, endpoint))
}

/// ECS container credentials.
async fn container_keys(
    http: &reqwest::Client,
    env: Env<'_>,
    timeout: Duration,
) -> Result<Option<Credentials>, LlmError> {
    let url = match (
        env("AWS_CONTAINER_CREDENTIALS_FULL_URI"),
        env("AWS_CONTAINER_CREDENTIALS_RELATIVE_URI"),
    ) {
        (Some(full), _) => full,
        (None, Some(rel)) => format!("http://169.254.170.2{rel}"),
        (None, None) => return Ok(None),
    };
    let token = match env("AWS_CONTAINER_AUTHORIZATION_TOKEN") {
        Some(t) => Some(t),
        None => env("AWS_CONTAINER_AUTHORIZATION_TOKEN_FILE")
            .and_then(|f| std::fs::read_to_string(f).ok())
            .map(|t| t.trim().to_owned()),
    };
    let mut rb = http.get(&url);
    if let Some(t) = &token {
        rb = rb.header("authorization", t);
    }
    let fail = |why: String| LlmError::new(format!("cannot get AWS container credentials: {why}"));
    let resp = match tokio::time::timeout(timeout, rb.send()).await {
        Err(_) => return Err(fail("timed out".into())),
        Ok(Err(e)) => return Err(fail(e.to_string())),
        Ok(Ok(r)) => r,
    };
    let status = resp.status();
    let text = resp.text().await.unwrap_or_default();
    if !status.is_success() {
        return Err(fail(format!("{} {}", status.as_u16(), text.trim())));
    }
    let v: Value = serde_json::from_str(&text).map_err(|e| fail(e.to_string()))?;
    let s = |k: &str| v.get(k).and_then(Value::as_str).map(str::to_owned);
    match (s("AccessKeyId"), s("SecretAccessKey")) {
        (Some(id), Some(secret)) => Ok(Some(Credentials {
            access_key_id: id,
            secret_access_key: secret,
            session_token: s("Token"),
        })),
        _ => Err(fail(
            "no AccessKeyId and SecretAccessKey in the answer".into(),
        )),
    }
}

/// The authorization of a call (see the module documentation for the order).
pub(crate) async fn auth(
    http: &reqwest::Client,
    env: Env<'_>,
    timeout: Duration,
) -> Result<Auth, LlmError> {
    let skip = env("AWS_BEDROCK_SKIP_AUTH").is_some_and(|v| v == "1");
    if !skip && let Some(t) = env("AWS_BEARER_TOKEN_BEDROCK") {
        return Ok(Auth::Bearer(t));
    }
    if skip {
        return Ok(Auth::Keys(Credentials {
            access_key_id: "dummy-access-key".into(),
            secret_access_key: "dummy-secret-key".into(),
            session_token: None,
        }));
    }
    if let Some(p) = env("AWS_PROFILE") {
        return match profile_keys(&p, env)? {
            Some(k) => Ok(Auth::Keys(k)),
            None => Err(LlmError::new(format!(
                "Could not resolve credentials using profile: [{p}] in configuration/credentials file(s)."
            ))),
        };
    }
    if let (Some(id), Some(secret)) = (env("AWS_ACCESS_KEY_ID"), env("AWS_SECRET_ACCESS_KEY")) {
        return Ok(Auth::Keys(Credentials {
            access_key_id: id,
            secret_access_key: secret,
            session_token: env("AWS_SESSION_TOKEN"),
        }));
    }
    if let Some(k) = profile_keys("default", env)? {
        return Ok(Auth::Keys(k));
    }
    if let Some(k) = container_keys(http, env, timeout).await? {
        return Ok(Auth::Keys(k));
    }
    if env("AWS_WEB_IDENTITY_TOKEN_FILE").is_some() {
        return Err(LlmError::new(
            "AWS web identity credentials (AWS_WEB_IDENTITY_TOKEN_FILE) are not supported by pi; \
             set AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY and AWS_SESSION_TOKEN",
        ));
    }
    Err(LlmError::new(
        "Could not load credentials from any providers",
    ))
}

/// `POST {endpoint}/model/{id}/converse-stream`, the id percent-encoded (`:` and `/` too).
pub(crate) fn url(endpoint: &str, model_id: &str) -> String {
    let mut id = String::new();
    for b in model_id.bytes() {
        if b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.' | b'~') {
            id.push(b as char);
        } else {
            id.push_str(&format!("%{b:02X}"));
        }
    }
    format!(
        "{}/model/{id}/converse-stream",
        endpoint.trim_end_matches('/')
    )
}

fn name_of(target: &Target) -> Option<&str> {
    target.details.name.as_deref()
}

fn adaptive(target: &Target) -> bool {
    wire_messages::match_candidates(&target.model, name_of(target))
        .iter()
        .any(|s| {
            [
                "opus-4-6",
                "opus-4-7",
                "opus-4-8",
                "opus-5",
                "sonnet-4-6",
                "sonnet-5",
                "haiku-5",
                "fable-5",
            ]
            .iter()
            .any(|m| s.contains(m))
        })
}

fn effort(target: &Target, level: &str) -> String {
    let native_xhigh = wire_messages::match_candidates(&target.model, name_of(target))
        .iter()
        .any(|s| {
            [
                "opus-4-7", "opus-4-8", "opus-5", "sonnet-5", "haiku-5", "fable-5",
            ]
            .iter()
            .any(|m| s.contains(m))
        });
    if level == "xhigh" && native_xhigh {
        return "xhigh".into();
    }
    anthropic::effort_of(target, level)
}

/// The thinking budget of a Claude model that takes one, at `level`, and the output limit
/// that makes room for it (the budget comes on top of the limit).
fn budget(target: &Target, opts: &Options, level: &str, max_tokens: Option<u64>) -> (u64, u64) {
    let l = if matches!(level, "xhigh" | "max") {
        "high"
    } else {
        level
    };
    let mut b = opts
        .thinking_budgets
        .iter()
        .find(|(k, _)| k == l)
        .map_or_else(|| anthropic::default_budget(l), |(_, b)| *b);
    let m = (max_tokens.unwrap_or(0) + b).min(target.model.max_tokens);
    if m <= b {
        b = m.saturating_sub(1024);
    }
    (b, m)
}

/// The request body (the reference's `streamSimpleBedrock` and command input, as the AWS
/// SDK writes it).
pub(crate) fn body(
    target: &Target,
    req: &Request,
    opts: &Options,
    region: &str,
) -> Result<Vec<u8>, LlmError> {
    let model = &target.model;
    let name = name_of(target);
    let retention = opts.cache_retention();
    let claude = wire_messages::is_claude(model, name);
    let level = thinking_level(target, opts);
    let mut max_tokens = providers::max_tokens(opts, model);
    let mut budget_tokens = None;
    if let Some(l) = level
        && claude
        && !adaptive(target)
    {
        let (b, m) = budget(target, opts, l, max_tokens);
        budget_tokens = Some(b);
        max_tokens = Some(m);
    }
    let messages = wire_messages::messages(&req.messages, model, name, retention)
        .map_err(|e| LlmError::new(e.to_string()))?;
    let mut b = Obj::new();
    b.set("messages", Js::Arr(messages));
    if let Some(s) = wire_messages::system(req.system_prompt.as_deref(), model, name, retention) {
        b.set("system", Js::Arr(s));
    }
    let mut ic = Obj::new();
    if let Some(n) = max_tokens {
        ic.set("maxTokens", Js::Num(n as f64));
    }
    if let Some(t) = opts.temperature {
        ic.set("temperature", Js::Num(t));
    }
    b.set("inferenceConfig", Js::Obj(ic));
    if !req.tools.is_empty() && opts.tool_choice != Some(ToolChoice::None) {
        b.set("toolConfig", tool_config(req, opts));
    }
    if let Some(l) = level
        && model.reasoning
        && claude
    {
        let fields = thinking_fields(target, region, l, budget_tokens);
        b.set("additionalModelRequestFields", Js::Obj(fields));
    }
    Ok(Js::Obj(b).to_json())
}

/// `toolConfig`: the tools as tool specs, and the tool choice.
fn tool_config(req: &Request, opts: &Options) -> Js {
    let tools = req
        .tools
        .iter()
        .map(|t| {
            let mut schema = Obj::new();
            schema.set("json", crate::providers::openai::js(&t.parameters));
            let mut spec = Obj::new();
            spec.set("name", Js::str(&t.name));
            spec.set("inputSchema", Js::Obj(schema));
            spec.set("description", Js::str(&t.description));
            let mut o = Obj::new();
            o.set("toolSpec", Js::Obj(spec));
            Js::Obj(o)
        })
        .collect();
    let mut tc = Obj::new();
    tc.set("tools", Js::Arr(tools));
    let choice = match &opts.tool_choice {
        Some(ToolChoice::Auto) => Some(("auto", None)),
        Some(ToolChoice::Required) => Some(("any", None)),
        Some(ToolChoice::Tool(n)) => Some(("tool", Some(n))),
        _ => None,
    };
    if let Some((kind, tool)) = choice {
        let mut inner = Obj::new();
        if let Some(n) = tool {
            inner.set("name", Js::str(n));
        }
        let mut c = Obj::new();
        c.set(kind, Js::Obj(inner));
        tc.set("toolChoice", Js::Obj(c));
    }
    Js::Obj(tc)
}

/// Claude's thinking, in `additionalModelRequestFields`: adaptive (an effort), or a budget
/// (`budget_tokens`) with interleaved thinking. GovCloud regions get no `display`.
fn thinking_fields(target: &Target, region: &str, level: &str, budget: Option<u64>) -> Obj {
    let gov = region.to_lowercase().starts_with("us-gov-") || {
        let id = target.model.id.to_lowercase();
        id.starts_with("us-gov.") || id.starts_with("arn:aws-us-gov:")
    };
    let mut thinking = Obj::new();
    let mut fields = Obj::new();
    match budget {
        None => thinking.set("type", Js::str("adaptive")),
        Some(b) => {
            thinking.set("type", Js::str("enabled"));
            thinking.set("budget_tokens", Js::Num(b as f64));
        }
    }
    if !gov {
        thinking.set("display", Js::str("summarized"));
    }
    fields.set("thinking", Js::Obj(thinking));
    match budget {
        None => {
            let mut oc = Obj::new();
            oc.set("effort", Js::str(&effort(target, level)));
            fields.set("output_config", Js::Obj(oc));
        }
        Some(_) => fields.set(
            "anthropic_beta",
            Js::Arr(vec![Js::str("interleaved-thinking-2025-05-14")]),
        ),
    }
    fields
}

/// What a SigV4 signature is made for.
#[derive(Debug, Clone)]
pub struct Scope<'a> {
    pub region: &'a str,
    /// `bedrock` for Bedrock.
    pub service: &'a str,
    pub now_ms: i64,
    /// Send and sign `x-amz-content-sha256` (as the AWS SDK does for Bedrock).
    pub content_sha256: bool,
}

/// The SigV4 headers of a request (`x-amz-date`, `x-amz-content-sha256`,
/// `x-amz-security-token`, `authorization`), signed by the `aws-sigv4` crate over `headers`
/// (which must hold the ones sent, `host` included).
pub fn sign_v4(
    method: &str,
    url: &str,
    headers: &[(String, String)],
    body: &[u8],
    creds: &Credentials,
    scope: &Scope,
) -> Result<Vec<(String, String)>, LlmError> {
    use aws_sigv4::http_request::{
        PayloadChecksumKind, SignableBody, SignableRequest, SigningSettings, sign,
    };
    let fail = |e: &dyn std::fmt::Display| LlmError::new(format!("cannot sign the request: {e}"));
    let identity: aws_smithy_runtime_api::client::identity::Identity =
        aws_credential_types::Credentials::new(
            &creds.access_key_id,
            &creds.secret_access_key,
            creds.session_token.clone(),
            None,
            "pi",
        )
        .into();
    let mut settings = SigningSettings::default();
    if scope.content_sha256 {
        settings.payload_checksum_kind = PayloadChecksumKind::XAmzSha256;
    }
    let params = aws_sigv4::sign::v4::SigningParams::builder()
        .identity(&identity)
        .region(scope.region)
        .name(scope.service)
        .time(system_time(scope.now_ms))
        .settings(settings)
        .build()
        .map_err(|e| fail(&e))?
        .into();
    let request = SignableRequest::new(
        method,
        url,
        headers.iter().map(|(k, v)| (k.as_str(), v.as_str())),
        SignableBody::Bytes(body),
    )
    .map_err(|e| fail(&e))?;
    let (instructions, _) = sign(request, &params).map_err(|e| fail(&e))?.into_parts();
    Ok(instructions
        .headers()
        .map(|(k, v)| (k.to_owned(), v.to_owned()))
        .collect())
}

/// The SigV4 headers of a Bedrock request (`POST`, service `bedrock`, the body's SHA-256
/// in `x-amz-content-sha256`), signed over `headers` (`host`, `content-type`,
/// `content-length`) at `now_ms`.
pub fn sign(
    url: &str,
    headers: &[(String, String)],
    body: &[u8],
    creds: &Credentials,
    region: &str,
    now_ms: i64,
) -> Result<Vec<(String, String)>, LlmError> {
    let scope = Scope {
        region,
        service: "bedrock",
        now_ms,
        content_sha256: true,
    };
    sign_v4("POST", url, headers, body, creds, &scope)
}

/// `host[:port]` of a URL, as an HTTP client sends it.
pub(crate) fn host_of(url: &str) -> Option<String> {
    let u = reqwest::Url::parse(url).ok()?;
    let host = u.host_str()?;
    let host = if host.contains(':') && !host.starts_with('[') {
        format!("[{host}]")
    } else {
        host.to_owned()
    };
    Some(match u.port() {
        Some(p) => format!("{host}:{p}"),
        None => host,
    })
}

/// Resolves region, endpoint and credentials, and writes and signs the request.
pub(crate) async fn prepare(
    http: &reqwest::Client,
    target: &Target,
    req: &Request,
    opts: &Options,
    env: Env<'_>,
    now_ms: i64,
) -> Result<Prepared, LlmError> {
    let (region, endpoint) = region_and_endpoint(&target.model, env)?;
    let body = body(target, req, opts, &region)?;
    let url = url(&endpoint, &target.model.id);
    let auth = auth(http, env, crate::http::timeout(opts)).await?;
    let secrets = auth.secrets();
    let mut headers = vec![("content-type".to_owned(), "application/json".to_owned())];
    match &auth {
        Auth::Bearer(t) => headers.push(("authorization".into(), format!("Bearer {t}"))),
        Auth::Keys(creds) => {
            let host = host_of(&url)
                .ok_or_else(|| LlmError::new(format!("invalid Bedrock endpoint URL: {url}")))?;
            let mut signed = headers.clone();
            signed.push(("content-length".into(), body.len().to_string()));
            signed.push(("host".into(), host));
            headers.extend(sign(&url, &signed, &body, creds, &region, now_ms)?);
        }
    }
    Ok(Prepared {
        url,
        headers,
        body,
        secrets,
    })
}

/// The prefixes the reference puts before the messages of Bedrock's exceptions.
fn error_prefix(name: &str) -> &str {
    match name {
        "InternalServerException" | "internalServerException" => "Internal server error",
        "ModelStreamErrorException" | "modelStreamErrorException" => "Model stream error",
        "ValidationException" | "validationException" => "Validation error",
        "ThrottlingException" | "throttlingException" => "Throttling error",
        "ServiceUnavailableException" | "serviceUnavailableException" => "Service unavailable",
        other => other,
    }
}

/// The message of an HTTP error: `PREFIX: MESSAGE` with the exception named by
/// `x-amzn-errortype` (or the body's `__type`), as the reference words it; `STATUS BODY` for
/// an answer that names none.
pub(crate) fn http_error(status: u16, error_type: Option<&str>, body: &str) -> String {
    let v: Option<Value> = serde_json::from_str(body).ok();
    let field = |k: &str| {
        v.as_ref()
            .and_then(|v| v.get(k))
            .and_then(Value::as_str)
            .map(str::to_owned)
    };
    let name = error_type
        .map(str::to_owned)
        .or_else(|| field("__type"))
        .or_else(|| field("code"))
        .map(|t| {
            let t = t.split(':').next().unwrap_or_default();
            t.rsplit('#').next().unwrap_or_default().trim().to_owned()
        })
        .filter(|t| !t.is_empty());
    let message = field("message").or_else(|| field("Message"));
    match (name, message) {
        (Some(n), Some(m)) => format!("{}: {m}", error_prefix(&n)),
        (Some(n), None) => format!(
            "{}: {}",
            error_prefix(&n),
            crate::message::status_message(status, body.trim())
        ),
        (None, _) => crate::message::status_message(status, body.trim()),
    }
}

/// Amazon Bedrock's Converse Stream API (`bedrock-converse-stream`).
pub(crate) struct ConverseStream;

impl Provider for ConverseStream {
    type Parser = Frames;

    /// AWS credentials, not a key.
    fn needs_key(_wire: crate::request::Wire) -> bool {
        false
    }

    /// Signed as a whole: no other headers are added (the reference sends none).
    async fn request(call: &Call<'_>) -> Result<Prepared, LlmError> {
        prepare(
            call.http,
            call.target,
            call.req,
            call.opts,
            call.env,
            call.now_ms,
        )
        .await
    }

    fn http_error(_call: &Call<'_>, response: &ErrorResponse) -> String {
        let error_type = response.header("x-amzn-errortype");
        http_error(response.status, error_type, &response.body)
    }

    fn parser(call: &Call<'_>) -> Self::Parser {
        Frames::new(call)
    }
}

/// The parser of an answer in AWS event-stream frames: each frame is an event of the
/// answer, handed to [`Stream`].
pub(crate) struct Frames {
    decoder: MessageFrameDecoder,
    buf: bytes::BytesMut,
    draft: Draft,
    events: Stream,
}

impl Frames {
    fn new(call: &Call<'_>) -> Frames {
        Frames {
            decoder: MessageFrameDecoder::new(),
            buf: bytes::BytesMut::new(),
            draft: Draft::new(AssistantMessage::for_target(call.target, call.now_ms)),
            events: Stream::new(call.target),
        }
    }
}

/// The state of one streamed response (apart from its message).
pub(crate) struct Stream {
    /// The stream's content-block index of blocks still open → position in the content.
    open: HashMap<i64, usize>,
    prices: crate::models::Prices,
    stopped: bool,
}

fn header<'a>(m: &'a Message, name: &str) -> Option<&'a str> {
    m.headers()
        .iter()
        .find(|h| h.name().as_str() == name)
        .and_then(|h| match h.value() {
            HeaderValue::String(s) => Some(s.as_str()),
            _ => None,
        })
}

/// The error of an `exception` or `error` message, as the reference words it.
fn frame_error(m: &Message, payload: &Value) -> Option<LlmError> {
    match header(m, ":message-type") {
        Some("exception") => {
            let kind = header(m, ":exception-type").unwrap_or("UnknownError");
            let message = payload
                .get("message")
                .or_else(|| payload.get("Message"))
                .and_then(Value::as_str)
                .map_or_else(
                    || String::from_utf8_lossy(m.payload()).into_owned(),
                    str::to_owned,
                );
            let mut name = kind.to_owned();
            if let Some(first) = name.get_mut(..1) {
                first.make_ascii_uppercase();
            }
            Some(format!("{}: {message}", error_prefix(&name)).into())
        }
        Some("error") => {
            let message = header(m, ":error-message")
                .or_else(|| header(m, ":error-code"))
                .unwrap_or("Bedrock stream error");
            Some(message.into())
        }
        _ => None,
    }
}

impl Parser for Frames {
    fn message(&self) -> &AssistantMessage {
        self.draft.message()
    }

    fn into_message(self) -> AssistantMessage {
        self.draft.into_message()
    }

    /// `Start` comes with the stream's `messageStart`, as the reference sends it.
    fn start(&mut self, _sink: Sink) {}

    /// Handles the frames a chunk completes.
    fn feed(&mut self, chunk: Option<&[u8]>, sink: Sink) -> Result<bool, LlmError> {
        let Some(chunk) = chunk else {
            return Ok(true);
        };
        self.buf.extend_from_slice(chunk);
        let mut out = self.draft.assembler(sink);
        loop {
            match self.decoder.decode_frame(&mut self.buf) {
                Ok(DecodedFrame::Complete(m)) => self.events.frame(&mut out, &m)?,
                Ok(DecodedFrame::Incomplete) => return Ok(false),
                Err(e) => {
                    return Err(LlmError::new(format!(
                        "cannot read the Bedrock event stream: {e}"
                    )));
                }
            }
        }
    }

    /// The body ended: blocks left open are closed; it must have ended after a whole frame,
    /// in `messageStop`, with a stop reason that is not an error.
    fn finish(&mut self, sink: Sink) -> Result<(), LlmError> {
        let mut out = self.draft.assembler(sink);
        self.events.close_open(&mut out);
        if !self.buf.is_empty() {
            return Err(
                "terminated: the Bedrock event stream ended in the middle of a frame".into(),
            );
        }
        if !self.events.stopped {
            return Err("terminated: the Bedrock event stream ended without messageStop".into());
        }
        out.outcome()
    }
}

impl Stream {
    pub(crate) fn new(target: &Target) -> Stream {
        Stream {
            open: HashMap::new(),
            prices: target.details.prices.clone(),
            stopped: false,
        }
    }

    /// Ends the blocks still open, in content order.
    fn close_open(&mut self, out: &mut Assembler) {
        let mut open: Vec<usize> = self.open.drain().map(|(_, i)| i).collect();
        open.sort_unstable();
        for i in open {
            out.close(i);
        }
    }

    /// Handles one event-stream message.
    fn frame(&mut self, out: &mut Assembler, m: &Message) -> Result<(), LlmError> {
        let payload: Value = serde_json::from_slice(m.payload()).unwrap_or(Value::Null);
        if let Some(e) = frame_error(m, &payload) {
            return Err(e);
        }
        let index = payload
            .get("contentBlockIndex")
            .and_then(Value::as_i64)
            .unwrap_or(-1);
        match header(m, ":event-type") {
            Some("messageStart") => {
                if payload.get("role").and_then(Value::as_str) != Some("assistant") {
                    return Err(
                        "Unexpected assistant message start but got user message start instead"
                            .into(),
                    );
                }
                out.emit(&Event::Start);
            }
            Some("contentBlockStart") => {
                if let Some(t) = payload.get("start").and_then(|s| s.get("toolUse")) {
                    let s = |k: &str| t.get(k).and_then(Value::as_str).unwrap_or_default();
                    let block = Block::tool_call(s("toolUseId").to_owned(), s("name").to_owned());
                    let i = out.open(block);
                    self.open.insert(index, i);
                }
            }
            Some("contentBlockDelta") => self.delta(out, index, payload.get("delta")),
            Some("contentBlockStop") => {
                if let Some(i) = self.open.remove(&index) {
                    out.close(i);
                }
            }
            Some("messageStop") => {
                self.stopped = true;
                out.msg.stop_reason = match payload.get("stopReason").and_then(Value::as_str) {
                    Some("end_turn" | "stop_sequence") => StopReason::Stop,
                    Some("max_tokens" | "model_context_window_exceeded") => StopReason::Length,
                    Some("tool_use") => StopReason::ToolUse,
                    _ => StopReason::Error,
                };
            }
            Some("metadata") => {
                if let Some(u) = payload.get("usage").filter(|u| u.is_object()) {
                    self.usage(out, u);
                }
            }
            _ => {}
        }
        Ok(())
    }

    fn usage(&mut self, out: &mut Assembler, u: &Value) {
        let n = |k: &str| {
            u.get(k)
                .and_then(Value::as_f64)
                .filter(|f| f.is_finite() && *f > 0.0)
                .map_or(0, |f| f as u64)
        };
        let usage = &mut out.msg.usage;
        usage.input = n("inputTokens");
        usage.output = n("outputTokens");
        usage.cache_read = n("cacheReadInputTokens");
        usage.cache_write = n("cacheWriteInputTokens");
        usage.settle(&self.prices);
        usage.total_tokens = match n("totalTokens") {
            0 => usage.input + usage.output,
            t => t,
        };
        out.emit(&Event::Usage);
    }

    /// The block open at the stream's `index`, or a new one of that kind.
    fn block_at(&mut self, out: &mut Assembler, index: i64, new: fn() -> Block) -> usize {
        if let Some(&i) = self.open.get(&index) {
            return i;
        }
        let i = out.open(new());
        self.open.insert(index, i);
        i
    }

    fn delta(&mut self, out: &mut Assembler, index: i64, delta: Option<&Value>) {
        let Some(d) = delta else { return };
        if let Some(text) = d.get("text").filter(|t| !t.is_null()) {
            let text = text
                .as_str()
                .map_or_else(|| text.to_string(), str::to_owned);
            let i = self.block_at(out, index, Block::text);
            out.append_text(i, &text);
        } else if let Some(tu) = d.get("toolUse") {
            let Some(&i) = self.open.get(&index) else {
                return;
            };
            let input = tu.get("input").and_then(Value::as_str).unwrap_or_default();
            out.append_arguments(i, input);
        } else if let Some(rc) = d.get("reasoningContent") {
            let i = self.block_at(out, index, || Block::thinking(Some(String::new())));
            let text = |k: &str| rc.get(k).and_then(Value::as_str).filter(|s| !s.is_empty());
            if let Some(s) = text("signature")
                && let Some(Block::Thinking { signature, .. }) = out.msg.content.get_mut(i)
            {
                signature.get_or_insert_with(String::new).push_str(s);
            }
            if let Some(t) = text("text") {
                out.append_thinking(i, t);
            }
        }
    }
}

/// The time of `now_ms`.
fn system_time(now_ms: i64) -> SystemTime {
    UNIX_EPOCH + Duration::from_millis(u64::try_from(now_ms).unwrap_or(0))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::models::Registry;
    use crate::providers::env_of;

    #[test]
    fn regions_and_endpoints() {
        let r = Registry::builtin();
        let m = r
            .find(
                "amazon-bedrock",
                "eu.anthropic.claude-sonnet-4-5-20250929-v1:0",
            )
            .unwrap()
            .clone();
        assert_eq!(
            endpoint_region(&m.base_url).as_deref(),
            Some("eu-central-1")
        );
        let none = env_of(&[]);
        assert_eq!(
            region_and_endpoint(&m, &none).unwrap(),
            (
                "eu-central-1".into(),
                "https://bedrock-runtime.eu-central-1.amazonaws.com".into()
            )
        );
        let env = env_of(&[("AWS_REGION", "us-west-2")]);
        assert_eq!(
            region_and_endpoint(&m, &env).unwrap(),
            (
                "us-west-2".into(),
                "https://bedrock-runtime.us-west-2.amazonaws.com".into()
            )
        );
        let mut proxy = m.clone();
        proxy.base_url = "http://127.0.0.1:9/bedrock/".into();
        assert_eq!(
            region_and_endpoint(&proxy, &env).unwrap(),
            ("us-west-2".into(), "http://127.0.0.1:9/bedrock".into())
        );
        assert_eq!(region_and_endpoint(&proxy, &none).unwrap().0, "us-east-1");
        let profile = env_of(&[("AWS_PROFILE", "p"), ("HOME", "/nonexistent")]);
        assert_eq!(
            region_and_endpoint(&m, &profile).unwrap_err().message,
            "Region is missing"
        );
        assert_eq!(
            url("https://h", "us.anthropic.claude-x-v1:0"),
            "https://h/model/us.anthropic.claude-x-v1%3A0/converse-stream"
        );
        assert_eq!(
            url(
                "https://h/",
                "arn:aws:bedrock:us-east-1:1:application-inference-profile/ab"
            ),
            "https://h/model/arn%3Aaws%3Abedrock%3Aus-east-1%3A1%3Aapplication-inference-profile%2Fab/converse-stream"
        );
        assert_eq!(
            host_of("http://127.0.0.1:8080/x").as_deref(),
            Some("127.0.0.1:8080")
        );
        assert_eq!(
            host_of("https://a.example:443/x").as_deref(),
            Some("a.example")
        );
    }

    #[test]
    fn profiles_and_credentials() {
        let dir = tempfile::tempdir().unwrap();
        let creds = dir.path().join("credentials");
        let config = dir.path().join("config");
        std::fs::write(
            &creds,
            "[default]\naws_access_key_id = AKD\naws_secret_access_key = sd\n\n[work] # comment\naws_access_key_id=AKW\naws_secret_access_key = sw\naws_session_token = tw\n",
        )
        .unwrap();
        std::fs::write(
            &config,
            "[default]\nregion = us-east-2\n[profile work]\nregion = eu-west-1\ns3 =\n  max_concurrent_requests = 2\n[profile proc]\ncredential_process = printf '{\"Version\":1,\"AccessKeyId\":\"AKP\",\"SecretAccessKey\":\"sp\"}'\n[profile sso]\nsso_session = x\n",
        )
        .unwrap();
        let c = creds.to_string_lossy().into_owned();
        let f = config.to_string_lossy().into_owned();
        let base = [
            ("AWS_SHARED_CREDENTIALS_FILE", c.as_str()),
            ("AWS_CONFIG_FILE", f.as_str()),
        ];
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        let _ = rustls::crypto::ring::default_provider().install_default();
        let http = reqwest::Client::new();
        let run = |vars: &[(&str, &str)]| {
            let mut all = base.to_vec();
            all.extend_from_slice(vars);
            let env = env_of(&all);
            rt.block_on(auth(&http, &env, Duration::from_secs(5)))
        };
        let keys = |id: &str, secret: &str, token: Option<&str>| {
            Ok(Auth::Keys(Credentials {
                access_key_id: id.into(),
                secret_access_key: secret.into(),
                session_token: token.map(str::to_owned),
            }))
        };
        assert_eq!(run(&[]), keys("AKD", "sd", None));
        assert_eq!(
            run(&[
                ("AWS_ACCESS_KEY_ID", "AKE"),
                ("AWS_SECRET_ACCESS_KEY", "se")
            ]),
            keys("AKE", "se", None)
        );
        // AWS_PROFILE wins over the environment's keys, as in the AWS SDK.
        assert_eq!(
            run(&[
                ("AWS_PROFILE", "work"),
                ("AWS_ACCESS_KEY_ID", "AKE"),
                ("AWS_SECRET_ACCESS_KEY", "se")
            ]),
            keys("AKW", "sw", Some("tw"))
        );
        assert_eq!(run(&[("AWS_PROFILE", "proc")]), keys("AKP", "sp", None));
        assert!(
            run(&[("AWS_PROFILE", "sso")])
                .unwrap_err()
                .message
                .contains("sso_session")
        );
        assert!(
            run(&[("AWS_PROFILE", "nope")])
                .unwrap_err()
                .message
                .contains("[nope]")
        );
        assert_eq!(
            run(&[("AWS_BEARER_TOKEN_BEDROCK", "bt")]),
            Ok(Auth::Bearer("bt".into()))
        );
        assert_eq!(
            run(&[
                ("AWS_BEARER_TOKEN_BEDROCK", "bt"),
                ("AWS_BEDROCK_SKIP_AUTH", "1")
            ]),
            keys("dummy-access-key", "dummy-secret-key", None)
        );
        let env = env_of(&[
            ("AWS_PROFILE", "work"),
            ("AWS_SHARED_CREDENTIALS_FILE", &c),
            ("AWS_CONFIG_FILE", &f),
        ]);
        let m = Registry::builtin()
            .find("amazon-bedrock", "amazon.nova-pro-v1:0")
            .unwrap()
            .clone();
        assert_eq!(region_and_endpoint(&m, &env).unwrap().0, "eu-west-1");
        let nothing = env_of(&[("HOME", "/nonexistent")]);
        assert_eq!(
            rt.block_on(auth(&http, &nothing, Duration::from_secs(5)))
                .unwrap_err()
                .message,
            "Could not load credentials from any providers"
        );
    }

    #[test]
    fn error_messages() {
        assert_eq!(
            http_error(
                400,
                Some("ValidationException:http://internal.amazon.com/coral/com.amazon.bedrock/"),
                r#"{"message":"Input is too long for requested model."}"#
            ),
            "Validation error: Input is too long for requested model."
        );
        assert_eq!(
            http_error(
                403,
                None,
                r#"{"__type":"com.amazon.coral#AccessDeniedException","Message":"no"}"#
            ),
            "AccessDeniedException: no"
        );
        assert_eq!(
            http_error(500, None, "upstream connect error"),
            "500 upstream connect error"
        );
    }
}
