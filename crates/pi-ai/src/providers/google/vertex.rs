//! Google Vertex AI (`google-vertex`): where a request goes and how it is authorized, as the
//! reference reads its credentials.
//!
//! - An API key (the call's key or `GOOGLE_CLOUD_API_KEY`; the placeholders
//!   `gcp-vertex-credentials` and `<…>` do not count) is sent as `x-goog-api-key` to
//!   `https://aiplatform.googleapis.com/v1/publishers/google/models/{id}`.
//! - Otherwise application-default credentials: the JSON file named by
//!   `GOOGLE_APPLICATION_CREDENTIALS`, else `$CLOUDSDK_CONFIG` or `~/.config/gcloud`'s
//!   `application_default_credentials.json`, with the project in `GOOGLE_CLOUD_PROJECT` (or
//!   `GCLOUD_PROJECT`) and the location in `GOOGLE_CLOUD_LOCATION`. A `service_account` file
//!   signs a JWT (RS256, by ring) and trades it for an access token; an `authorized_user` file
//!   (`gcloud auth application-default login`) trades its refresh token. The token goes as
//!   `Authorization: Bearer`, the file's `quota_project_id` as `x-goog-user-project`, to
//!   `https://{location}-aiplatform.googleapis.com/v1/projects/{project}/locations/{location}/…`.
//!   Tokens are kept for the process until five minutes before they expire.
//! - A model `baseUrl` without `{location}` replaces the host (and the project path, as the
//!   SDK does for a custom base URL); `v1` is added unless the URL names a version.
//!
//! Not supported (the Google SDK has them): the metadata server of Google Cloud machines,
//! and `external_account` / `impersonated_service_account` files.

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::{Mutex, OnceLock};
use std::time::Duration;

use base64::Engine;
use serde_json::Value;

use crate::message::LlmError;
use crate::models::Model;
use crate::providers::Env;

const CLOUD_PLATFORM: &str = "https://www.googleapis.com/auth/cloud-platform";
/// Google's token endpoint (the JWT audience, and where tokens come from when the file names
/// no `token_uri`).
pub(crate) const TOKEN_URL: &str = "https://oauth2.googleapis.com/token";
const PLACEHOLDER: &str = "gcp-vertex-credentials";

/// The API key a call uses, if any: the call's key, else `GOOGLE_CLOUD_API_KEY`, trimmed;
/// empty values and placeholders (`gcp-vertex-credentials`, `<authenticated>`) do not count.
pub(crate) fn api_key(key: Option<&str>, env: Env) -> Option<String> {
    let k = key
        .map(str::trim)
        .filter(|k| !k.is_empty())
        .map(str::to_owned)
        .or_else(|| env("GOOGLE_CLOUD_API_KEY").map(|k| k.trim().to_owned()))?;
    // `<authenticated>` and the like stand for "configured elsewhere".
    let placeholder =
        k.len() > 2 && k.starts_with('<') && k.ends_with('>') && !k[1..k.len() - 1].contains('>');
    (!k.is_empty() && k != PLACEHOLDER && !placeholder).then_some(k)
}

fn includes_version(base: &str) -> bool {
    let path = match base.find("://") {
        Some(p) => {
            let rest = &base[p + 3..];
            rest.find('/').map_or("", |i| &rest[i..])
        }
        None => base,
    };
    path.split('/').any(|seg| {
        let Some(rest) = seg.strip_prefix('v') else {
            return false;
        };
        let digits = rest.trim_start_matches(|c: char| c.is_ascii_digit());
        digits.len() < rest.len()
            && (digits.is_empty()
                || digits
                    .strip_prefix("beta")
                    .is_some_and(|d| d.chars().all(|c| c.is_ascii_digit())))
    })
}

/// The request URL: with an API key or a custom base URL, no project path; otherwise the
/// regional (or global, or multi-regional) endpoint of the location with the project path.
pub(crate) fn url(model: &Model, with_key: bool, project: &str, location: &str) -> String {
    let path = format!(
        "{}:streamGenerateContent?alt=sse",
        crate::providers::google::model_path(&model.id, true)
    );
    let custom = model.base_url.trim();
    if !custom.is_empty() && !custom.contains("{location}") {
        let base = custom.trim_end_matches('/');
        return if includes_version(custom) {
            format!("{base}/{path}")
        } else {
            format!("{base}/v1/{path}")
        };
    }
    if with_key {
        return format!("https://aiplatform.googleapis.com/v1/{path}");
    }
    let host = match location {
        "global" => "aiplatform.googleapis.com".to_owned(),
        "us" | "eu" => format!("aiplatform.{location}.rep.googleapis.com"),
        l => format!("{l}-aiplatform.googleapis.com"),
    };
    format!("https://{host}/v1/projects/{project}/locations/{location}/{path}")
}

/// Where the application-default credentials file is (it may not exist).
pub(crate) fn adc_path(env: Env) -> Option<PathBuf> {
    if let Some(p) = env("GOOGLE_APPLICATION_CREDENTIALS") {
        return Some(PathBuf::from(p));
    }
    let dir = env("CLOUDSDK_CONFIG")
        .map(PathBuf::from)
        .or_else(|| env("HOME").map(|h| PathBuf::from(h).join(".config").join("gcloud")))?;
    Some(dir.join("application_default_credentials.json"))
}

/// Whether the reference counts Vertex as configured without a key: a credentials file
/// (`GOOGLE_APPLICATION_CREDENTIALS`, else `~/.config/gcloud/…`), a project and a location.
/// The description names the file.
pub(crate) fn adc_source(env: Env) -> Option<String> {
    let path = match env("GOOGLE_APPLICATION_CREDENTIALS") {
        Some(p) => PathBuf::from(p),
        None => PathBuf::from(env("HOME")?)
            .join(".config")
            .join("gcloud")
            .join("application_default_credentials.json"),
    };
    let project = env("GOOGLE_CLOUD_PROJECT").or_else(|| env("GCLOUD_PROJECT"));
    let location = env("GOOGLE_CLOUD_LOCATION");
    (path.exists() && project.is_some() && location.is_some())
        .then(|| format!("ADC {}", path.display()))
}

/// The project and location of a call with application-default credentials.
pub(crate) fn project_and_location(env: Env) -> Result<(String, String), LlmError> {
    let project = env("GOOGLE_CLOUD_PROJECT")
        .or_else(|| env("GCLOUD_PROJECT"))
        .ok_or_else(|| {
            LlmError::new(
                "Vertex AI requires a project ID. Set GOOGLE_CLOUD_PROJECT/GCLOUD_PROJECT or pass project in options.",
            )
        })?;
    let location = env("GOOGLE_CLOUD_LOCATION").ok_or_else(|| {
        LlmError::new(
            "Vertex AI requires a location. Set GOOGLE_CLOUD_LOCATION or pass location in options.",
        )
    })?;
    Ok((project, location))
}

/// An application-default credentials file.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Credentials {
    ServiceAccount {
        email: String,
        private_key: String,
        token_uri: String,
        quota_project: Option<String>,
    },
    AuthorizedUser {
        client_id: String,
        client_secret: String,
        refresh_token: String,
        token_uri: String,
        quota_project: Option<String>,
    },
}

impl Credentials {
    /// Reads a credentials file's JSON.
    pub(crate) fn from_json(text: &str) -> Result<Credentials, LlmError> {
        let v: Value = serde_json::from_str(text).map_err(|e| {
            LlmError::new(format!(
                "cannot read the Google credentials file: it is not JSON ({e})"
            ))
        })?;
        let s = |k: &str| v.get(k).and_then(Value::as_str).map(str::to_owned);
        let need = |k: &str| {
            s(k).ok_or_else(|| {
                LlmError::new(format!("the Google credentials file has no \"{k}\" field"))
            })
        };
        let token_uri = s("token_uri").unwrap_or_else(|| TOKEN_URL.to_owned());
        match s("type").as_deref() {
            Some("service_account") => Ok(Credentials::ServiceAccount {
                email: need("client_email")?,
                private_key: need("private_key")?,
                token_uri,
                quota_project: s("quota_project_id"),
            }),
            Some("authorized_user") => Ok(Credentials::AuthorizedUser {
                client_id: need("client_id")?,
                client_secret: need("client_secret")?,
                refresh_token: need("refresh_token")?,
                token_uri,
                quota_project: s("quota_project_id"),
            }),
            other => Err(LlmError::new(format!(
                "Google credentials of type {} are not supported by pi (it reads \
                 service_account and authorized_user files)",
                other.unwrap_or("(none)")
            ))),
        }
    }

    /// Reads the application-default credentials file.
    pub(crate) fn load(env: Env) -> Result<Credentials, LlmError> {
        let missing = || {
            LlmError::new(
                "Could not load the default credentials. Browse to \
                 https://cloud.google.com/docs/authentication/getting-started for more information.",
            )
        };
        let path = adc_path(env).ok_or_else(missing)?;
        let text = match std::fs::read_to_string(&path) {
            Ok(t) => t,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Err(missing()),
            Err(e) => {
                return Err(LlmError::new(format!(
                    "cannot read the Google credentials file {}: {e}",
                    path.display()
                )));
            }
        };
        Credentials::from_json(&text)
    }

    fn token_uri(&self) -> &str {
        match self {
            Credentials::ServiceAccount { token_uri, .. }
            | Credentials::AuthorizedUser { token_uri, .. } => token_uri,
        }
    }

    pub(crate) fn quota_project(&self) -> Option<&str> {
        match self {
            Credentials::ServiceAccount { quota_project, .. }
            | Credentials::AuthorizedUser { quota_project, .. } => quota_project.as_deref(),
        }
    }

    /// The form posted to the token endpoint at `now_ms` (a signed JWT assertion, or the
    /// refresh token), as `application/x-www-form-urlencoded`.
    pub(crate) fn token_request(&self, now_ms: i64) -> Result<String, LlmError> {
        match self {
            Credentials::ServiceAccount {
                email, private_key, ..
            } => {
                let jwt = assertion(email, private_key, now_ms)?;
                Ok(form(&[
                    ("grant_type", "urn:ietf:params:oauth:grant-type:jwt-bearer"),
                    ("assertion", &jwt),
                ]))
            }
            Credentials::AuthorizedUser {
                client_id,
                client_secret,
                refresh_token,
                ..
            } => Ok(form(&[
                ("refresh_token", refresh_token),
                ("client_id", client_id),
                ("client_secret", client_secret),
                ("grant_type", "refresh_token"),
            ])),
        }
    }

    /// Values to cut out of messages.
    pub(crate) fn secrets(&self) -> Vec<String> {
        match self {
            Credentials::ServiceAccount { private_key, .. } => vec![private_key.clone()],
            Credentials::AuthorizedUser {
                client_secret,
                refresh_token,
                ..
            } => vec![client_secret.clone(), refresh_token.clone()],
        }
    }
}

/// `application/x-www-form-urlencoded`, as `URLSearchParams` writes it.
fn form(pairs: &[(&str, &str)]) -> String {
    let enc = |s: &str| {
        let mut out = String::new();
        for b in s.bytes() {
            match b {
                b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'*' | b'-' | b'.' | b'_' => {
                    out.push(b as char)
                }
                b' ' => out.push('+'),
                _ => out.push_str(&format!("%{b:02X}")),
            }
        }
        out
    };
    pairs
        .iter()
        .map(|(k, v)| format!("{}={}", enc(k), enc(v)))
        .collect::<Vec<_>>()
        .join("&")
}

fn b64url(bytes: &[u8]) -> String {
    base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(bytes)
}

/// The service account's signed JWT (RS256) asking for a cloud-platform token, issued at
/// `now_ms` for an hour, as google-auth-library writes it.
pub(crate) fn assertion(
    email: &str,
    private_key_pem: &str,
    now_ms: i64,
) -> Result<String, LlmError> {
    let iat = now_ms.div_euclid(1000);
    let header = b64url(br#"{"alg":"RS256"}"#);
    let claims = serde_json::json!({
        "iss": email,
        "scope": CLOUD_PLATFORM,
        "aud": TOKEN_URL,
        "exp": iat + 3600,
        "iat": iat,
    });
    let payload = b64url(claims.to_string().as_bytes());
    let signing_input = format!("{header}.{payload}");
    let bad =
        |why: &str| LlmError::new(format!("cannot sign with the service account's key: {why}"));
    let der = pem_body(private_key_pem).ok_or_else(|| bad("it is not a PEM private key"))?;
    let key = ring::rsa::KeyPair::from_pkcs8(&der)
        .or_else(|_| ring::rsa::KeyPair::from_der(&der))
        .map_err(|e| bad(&e.to_string()))?;
    let mut sig = vec![0u8; key.public().modulus_len()];
    key.sign(
        &ring::signature::RSA_PKCS1_SHA256,
        &ring::rand::SystemRandom::new(),
        signing_input.as_bytes(),
        &mut sig,
    )
    .map_err(|e| bad(&e.to_string()))?;
    Ok(format!("{signing_input}.{}", b64url(&sig)))
}

/// The bytes of a PEM block.
fn pem_body(pem: &str) -> Option<Vec<u8>> {
    let start = pem.find("-----BEGIN ")?;
    let rest = &pem[start..];
    let body_start = rest.find('\n')? + 1;
    let end = rest.find("-----END ")?;
    let b64: String = rest[body_start..end]
        .chars()
        .filter(|c| !c.is_ascii_whitespace())
        .collect();
    base64::engine::general_purpose::STANDARD.decode(b64).ok()
}

/// Access tokens by credentials: (token, expiry in Unix milliseconds).
fn cache() -> &'static Mutex<HashMap<String, (String, i64)>> {
    static CACHE: OnceLock<Mutex<HashMap<String, (String, i64)>>> = OnceLock::new();
    CACHE.get_or_init(|| Mutex::new(HashMap::new()))
}

/// google-auth-library refreshes tokens this long before they expire.
const EARLY_REFRESH_MS: i64 = 5 * 60 * 1000;

/// An access token for the credentials (from the cache, or from the token endpoint).
pub(crate) async fn access_token(
    http: &reqwest::Client,
    creds: &Credentials,
    timeout: Duration,
    now: i64,
) -> Result<String, LlmError> {
    let key = format!("{creds:?}");
    if let Ok(c) = cache().lock()
        && let Some((t, exp)) = c.get(&key)
        && now < exp - EARLY_REFRESH_MS
    {
        return Ok(t.clone());
    }
    let body = creds.token_request(now)?;
    let url = creds.token_uri();
    let sent = http
        .post(url)
        .header(
            "content-type",
            "application/x-www-form-urlencoded;charset=UTF-8",
        )
        .header("accept", "application/json")
        .body(body)
        .send();
    let resp = match tokio::time::timeout(timeout, sent).await {
        Err(_) => return Err(LlmError::new("Request timed out.")),
        Ok(Err(e)) => {
            return Err(LlmError::new(format!(
                "Connection error. (cannot reach the Google token endpoint {url}: {e})"
            )));
        }
        Ok(Ok(r)) => r,
    };
    let status = resp.status().as_u16();
    let text = match tokio::time::timeout(timeout, resp.text()).await {
        Ok(Ok(t)) => t,
        _ => String::new(),
    };
    let json: Option<Value> = serde_json::from_str(&text).ok();
    if !(200..300).contains(&status) {
        let field = |k: &str| {
            json.as_ref()
                .and_then(|v| v.get(k))
                .and_then(Value::as_str)
                .map(str::to_owned)
        };
        let message = match (field("error"), field("error_description")) {
            (Some(e), Some(d)) => format!("{e}: {d}"),
            (Some(e), None) => e,
            _ => format!(
                "cannot get a Google access token from {url}: {}",
                crate::message::status_message(status, text.trim())
            ),
        };
        return Err(LlmError {
            message,
            status: Some(status),
        });
    }
    let token = json
        .as_ref()
        .and_then(|v| v.get("access_token"))
        .and_then(Value::as_str)
        .filter(|t| !t.is_empty())
        .ok_or_else(|| {
            LlmError::new(format!(
                "the Google token endpoint {url} sent no access_token"
            ))
        })?
        .to_owned();
    let expires_in = json
        .as_ref()
        .and_then(|v| v.get("expires_in"))
        .and_then(Value::as_f64)
        .unwrap_or(3600.0);
    if let Ok(mut c) = cache().lock() {
        c.insert(key, (token.clone(), now + (expires_in * 1000.0) as i64));
    }
    Ok(token)
}

/// Where a call goes and its authorization headers (fetching an access token when there is
/// no API key); also the values to cut out of messages.
pub(crate) async fn prepare(
    http: &reqwest::Client,
    model: &Model,
    key: Option<&str>,
    env: Env<'_>,
    timeout: Duration,
    now_ms: i64,
) -> Result<(String, Vec<(String, String)>, Vec<String>), LlmError> {
    if let Some(k) = api_key(key, env) {
        let url = url(model, true, "", "");
        return Ok((url, vec![("x-goog-api-key".into(), k.clone())], vec![k]));
    }
    let (project, location) = project_and_location(env)?;
    let creds = Credentials::load(env)?;
    let mut secrets = creds.secrets();
    let token = access_token(http, &creds, timeout, now_ms).await?;
    secrets.push(token.clone());
    let mut headers = vec![("authorization".to_owned(), format!("Bearer {token}"))];
    if let Some(q) = creds.quota_project() {
        headers.push(("x-goog-user-project".into(), q.to_owned()));
    }
    Ok((url(model, false, &project, &location), headers, secrets))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::models::Registry;
    use crate::providers::env_of;

    #[test]
    fn keys_and_placeholders() {
        let none = env_of(&[]);
        assert_eq!(api_key(Some(" k1 "), &none), Some("k1".into()));
        assert_eq!(api_key(Some("<authenticated>"), &none), None);
        assert_eq!(api_key(Some("gcp-vertex-credentials"), &none), None);
        let env = env_of(&[("GOOGLE_CLOUD_API_KEY", "k2")]);
        assert_eq!(api_key(None, &env), Some("k2".into()));
        assert_eq!(api_key(Some(""), &env), Some("k2".into()));
    }

    #[test]
    fn urls() {
        let r = Registry::builtin();
        let mut m = r.find("google-vertex", "gemini-2.5-pro").unwrap().clone();
        assert_eq!(
            url(&m, false, "p1", "us-central1"),
            "https://us-central1-aiplatform.googleapis.com/v1/projects/p1/locations/us-central1/publishers/google/models/gemini-2.5-pro:streamGenerateContent?alt=sse"
        );
        assert_eq!(
            url(&m, false, "p1", "global"),
            "https://aiplatform.googleapis.com/v1/projects/p1/locations/global/publishers/google/models/gemini-2.5-pro:streamGenerateContent?alt=sse"
        );
        assert!(
            url(&m, false, "p1", "eu").starts_with(
                "https://aiplatform.eu.rep.googleapis.com/v1/projects/p1/locations/eu/"
            )
        );
        assert_eq!(
            url(&m, true, "", ""),
            "https://aiplatform.googleapis.com/v1/publishers/google/models/gemini-2.5-pro:streamGenerateContent?alt=sse"
        );
        m.base_url = "https://proxy.example/vertex/v1beta1/".into();
        assert_eq!(
            url(&m, false, "p1", "l"),
            "https://proxy.example/vertex/v1beta1/publishers/google/models/gemini-2.5-pro:streamGenerateContent?alt=sse"
        );
        m.base_url = "http://127.0.0.1:9".into();
        assert_eq!(
            url(&m, true, "", ""),
            "http://127.0.0.1:9/v1/publishers/google/models/gemini-2.5-pro:streamGenerateContent?alt=sse"
        );
        assert!(!includes_version("https://x.example/vertex"));
        assert!(includes_version("https://x.example/v1"));
        assert!(!includes_version("https://v1.example/x"));
    }

    #[test]
    fn credentials_files() {
        let sa = Credentials::from_json(
            r#"{"type":"service_account","client_email":"a@b","private_key":"k","quota_project_id":"q"}"#,
        )
        .unwrap();
        assert_eq!(sa.token_uri(), TOKEN_URL);
        assert_eq!(sa.quota_project(), Some("q"));
        let user = Credentials::from_json(
            r#"{"type":"authorized_user","client_id":"c","client_secret":"s","refresh_token":"1//r t","token_uri":"http://t/token"}"#,
        )
        .unwrap();
        assert_eq!(
            user.token_request(0).unwrap(),
            "refresh_token=1%2F%2Fr+t&client_id=c&client_secret=s&grant_type=refresh_token"
        );
        assert_eq!(user.token_uri(), "http://t/token");
        let e = Credentials::from_json(r#"{"type":"external_account"}"#).unwrap_err();
        assert!(e.message.contains("external_account"), "{e}");
        let missing = env_of(&[("HOME", "/nonexistent-home")]);
        assert!(
            Credentials::load(&missing)
                .unwrap_err()
                .message
                .starts_with("Could not load the default credentials.")
        );
        assert!(
            project_and_location(&missing)
                .unwrap_err()
                .message
                .contains("GOOGLE_CLOUD_PROJECT")
        );
    }
}
