//! Refreshing expired OAuth logins in `auth.json` (Claude Pro/Max, ChatGPT subscriptions
//! through Codex, GitHub Copilot), as the reference refreshes them: the refresh token is
//! exchanged at the provider's token endpoint and the provider's entry is replaced by the new
//! credentials. Logging in (the browser and device flows) stays with the reference.
//!
//! Several processes may find the same token expired at once, and a refresh token may be
//! good for one exchange only; so the whole read-refresh-write runs under two locks:
//! pi's own (`flock` on `.auth.json.lock`, released by the kernel if pi dies) and the
//! reference's (the directory `auth.json.lock` that its `proper-lockfile` creates; one older
//! than 30 seconds is stale, as the reference takes it). Under the locks the file is read
//! again: a token another process has just refreshed is used as it is. The new file is
//! written to a temporary file, synced and renamed over `auth.json` (mode 0600), so a
//! reader sees the old file or the new one, never a part. A refresh that fails leaves the
//! file as it was.
//!
//! `PI_OAUTH_TOKEN_ORIGIN` (`http://HOST:PORT`, for tests) sends the token requests to that
//! origin instead of the providers' hosts, with the same paths.

use std::io::{self};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant, SystemTime};

use serde_json::{Map, Value, json};

use crate::secrets::redact;

/// The environment variable that points the token endpoints elsewhere (tests).
pub(crate) const ORIGIN_ENV: &str = "PI_OAUTH_TOKEN_ORIGIN";

/// Anthropic's public OAuth client (Claude Code's).
const ANTHROPIC_CLIENT_ID: &str = "9d1c250a-e61b-44d9-88ed-5944d1962f5e";
/// OpenAI Codex's public OAuth client.
const CODEX_CLIENT_ID: &str = "app_EMoamEEZ73f0CkXaXp7hrann";
/// Headers Copilot's token endpoint expects (those of VS Code's Copilot Chat).
const COPILOT_HEADERS: [(&str, &str); 4] = [
    ("User-Agent", "GitHubCopilotChat/0.35.0"),
    ("Editor-Version", "vscode/1.107.0"),
    ("Editor-Plugin-Version", "copilot-chat/0.35.0"),
    ("Copilot-Integration-Id", "vscode-chat"),
];
/// Anthropic's and Copilot's tokens count as expired five minutes early.
const MARGIN_MS: f64 = 5.0 * 60.0 * 1000.0;
/// How long to wait for the locks of another process.
const LOCK_WAIT: Duration = Duration::from_secs(15);
/// The reference's lock directory is stale after this long.
const STALE: Duration = Duration::from_secs(30);

/// Whether pi can refresh the OAuth login of `provider`.
pub(crate) fn supports(provider: &str) -> bool {
    matches!(provider, "anthropic" | "openai-codex" | "github-copilot")
}

fn now_ms() -> f64 {
    match SystemTime::now().duration_since(SystemTime::UNIX_EPOCH) {
        Ok(d) => d.as_millis() as f64,
        Err(_) => 0.0,
    }
}

/// Refreshes the OAuth login of `provider` in the auth file `path` if it has expired (also
/// when another process has done so meanwhile), and returns the access token to use.
/// On failure the file is unchanged and the error says why (secrets cut out).
pub(crate) fn refresh(path: &Path, provider: &str) -> Result<String, String> {
    let dir = path.parent().unwrap_or(Path::new("."));
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| "auth.json".to_owned());
    let own = pi_base::fs::lock_path(&dir.join(format!(".{name}.lock")))
        .map_err(|e| format!("cannot lock {}: {e}", path.display()))?;
    let theirs = ReferenceLock::take(&dir.join(format!("{name}.lock")))?;
    let text = std::fs::read(path).map_err(|e| format!("cannot read {}: {e}", path.display()))?;
    let mut data: Map<String, Value> = match serde_json::from_slice(&text) {
        Ok(Value::Object(m)) => m,
        _ => return Err(format!("{} is not a JSON object", path.display())),
    };
    let cred = match data.get(provider) {
        Some(Value::Object(c)) if c.get("type").and_then(Value::as_str) == Some("oauth") => {
            c.clone()
        }
        _ => return Err(format!("auth.json has no OAuth login for \"{provider}\"")),
    };
    let expires = cred.get("expires").and_then(Value::as_f64).unwrap_or(0.0);
    if let Some(access) = cred.get("access").and_then(Value::as_str)
        && now_ms() < expires
    {
        return Ok(access.to_owned());
    }
    let refresh_token = cred
        .get("refresh")
        .and_then(Value::as_str)
        .filter(|s| !s.is_empty())
        .ok_or_else(|| format!("the OAuth login for \"{provider}\" has no refresh token"))?
        .to_owned();
    let secrets = [
        refresh_token.clone(),
        cred.get("access")
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_owned(),
    ];
    let fresh = exchange(provider, &refresh_token, &cred).map_err(|e| redact(&e, &secrets))?;
    let access = fresh
        .get("access")
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_owned();
    data.insert(provider.to_owned(), Value::Object(fresh));
    write_atomically(path, &data).map_err(|e| format!("cannot write {}: {e}", path.display()))?;
    drop(theirs);
    drop(own);
    Ok(access)
}

/// The new credentials of a provider (`{"type": "oauth", …}`), from its token endpoint.
fn exchange(
    provider: &str,
    refresh_token: &str,
    cred: &Map<String, Value>,
) -> Result<Map<String, Value>, String> {
    let origin = std::env::var(ORIGIN_ENV).ok().filter(|v| !v.is_empty());
    let at = |default: &str, path: &str| match &origin {
        Some(o) => format!("{}{path}", o.trim_end_matches('/')),
        None => format!("{default}{path}"),
    };
    let fresh = match provider {
        "anthropic" => refresh_anthropic(
            &at("https://platform.claude.com", "/v1/oauth/token"),
            refresh_token,
        )?,
        "openai-codex" => refresh_codex(
            &at("https://auth.openai.com", "/oauth/token"),
            refresh_token,
        )?,
        "github-copilot" => {
            let enterprise = cred
                .get("enterpriseUrl")
                .and_then(Value::as_str)
                .filter(|s| !s.is_empty());
            let domain = enterprise.unwrap_or("github.com");
            let url = at(
                &format!("https://api.{domain}"),
                "/copilot_internal/v2/token",
            );
            refresh_copilot(&url, refresh_token, enterprise)?
        }
        _ => return Err(format!("pi cannot refresh OAuth logins of \"{provider}\"")),
    };
    match fresh {
        Value::Object(mut m) => {
            // Whole milliseconds, as the reference stores them.
            if let Some(e) = m.get("expires").and_then(Value::as_f64) {
                m.insert("expires".into(), json!(e.floor() as i64));
            }
            Ok(m)
        }
        _ => Err("internal error: credentials are not an object".into()),
    }
}

fn refresh_anthropic(url: &str, refresh_token: &str) -> Result<Value, String> {
    let body = json!({"grant_type": "refresh_token", "client_id": ANTHROPIC_CLIENT_ID,
                      "refresh_token": refresh_token});
    let (status, text) = send(Call::Post {
        url,
        content_type: "application/json",
        body: body.to_string(),
    })
    .map_err(|e| format!("Anthropic token refresh request failed ({url}): {e}"))?;
    if !(200..300).contains(&status) {
        return Err(format!(
            "Anthropic token refresh failed ({status}, {url}): {}",
            text.trim()
        ));
    }
    let v = parse(&text, "Anthropic")?;
    let (access, refresh, expires_in) = fields(&v, "access_token", "expires_in")?;
    Ok(
        json!({"type": "oauth", "refresh": refresh.unwrap_or(refresh_token), "access": access,
               "expires": now_ms() + expires_in * 1000.0 - MARGIN_MS}),
    )
}

fn refresh_codex(url: &str, refresh_token: &str) -> Result<Value, String> {
    let mut form = reqwest::Url::parse("http://form/").map_err(|e| e.to_string())?;
    form.query_pairs_mut()
        .append_pair("grant_type", "refresh_token")
        .append_pair("refresh_token", refresh_token)
        .append_pair("client_id", CODEX_CLIENT_ID);
    let (status, text) = send(Call::Post {
        url,
        content_type: "application/x-www-form-urlencoded",
        body: form.query().unwrap_or_default().to_owned(),
    })
    .map_err(|e| format!("OpenAI Codex token refresh error: {e}"))?;
    if !(200..300).contains(&status) {
        return Err(format!(
            "OpenAI Codex token refresh failed ({status}): {}",
            text.trim()
        ));
    }
    let v = parse(&text, "OpenAI Codex")?;
    let (access, refresh, expires_in) = fields(&v, "access_token", "expires_in")?;
    let refresh = refresh.ok_or("the OpenAI Codex token response has no refresh_token")?;
    let account = crate::providers::responses::codex_account_id(access)
        .ok_or("Failed to extract accountId from token")?;
    Ok(
        json!({"type": "oauth", "access": access, "refresh": refresh,
              "expires": now_ms() + expires_in * 1000.0, "accountId": account}),
    )
}

/// GitHub Copilot trades the GitHub token (the "refresh" token) for a Copilot token.
fn refresh_copilot(
    url: &str,
    refresh_token: &str,
    enterprise: Option<&str>,
) -> Result<Value, String> {
    let (status, text) = send(Call::Get {
        url,
        bearer: refresh_token,
    })
    .map_err(|e| format!("GitHub Copilot token request failed: {e}"))?;
    if !(200..300).contains(&status) {
        return Err(format!(
            "GitHub Copilot token refresh failed ({status}): {}",
            text.trim()
        ));
    }
    let v = parse(&text, "GitHub Copilot")?;
    let (token, _, expires_at) = fields(&v, "token", "expires_at")?;
    let mut c = json!({"type": "oauth", "refresh": refresh_token, "access": token,
                       "expires": expires_at * 1000.0 - MARGIN_MS});
    if let Some(e) = enterprise {
        c["enterpriseUrl"] = json!(e);
    }
    Ok(c)
}

fn parse(text: &str, who: &str) -> Result<Value, String> {
    serde_json::from_str(text)
        .map_err(|e| format!("{who} token refresh returned invalid JSON ({e}): {text}"))
}

/// The token (a non-empty string), the refresh token if any, and the number of `time`.
fn fields<'a>(
    v: &'a Value,
    token: &str,
    time: &str,
) -> Result<(&'a str, Option<&'a str>, f64), String> {
    let t = v
        .get(token)
        .and_then(Value::as_str)
        .filter(|s| !s.is_empty());
    let n = v.get(time).and_then(Value::as_f64);
    match (t, n) {
        (Some(t), Some(n)) => Ok((
            t,
            v.get("refresh_token")
                .and_then(Value::as_str)
                .filter(|s| !s.is_empty()),
            n,
        )),
        _ => Err(format!(
            "the token response lacks \"{token}\" or \"{time}\""
        )),
    }
}

enum Call<'a> {
    Post {
        url: &'a str,
        content_type: &'static str,
        body: String,
    },
    Get {
        url: &'a str,
        bearer: &'a str,
    },
}

/// Makes one HTTP call on a thread of its own (callers may be inside an async runtime) and
/// returns its status and body.
fn send(call: Call) -> Result<(u16, String), String> {
    std::thread::scope(|s| {
        s.spawn(|| {
            let rt = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .map_err(|e| e.to_string())?;
            rt.block_on(send_async(call))
        })
        .join()
        .unwrap_or_else(|_| Err("the token request failed unexpectedly".into()))
    })
}

async fn send_async(call: Call<'_>) -> Result<(u16, String), String> {
    let _ = rustls::crypto::ring::default_provider().install_default();
    let http = reqwest::Client::builder()
        .user_agent(concat!("pi/", env!("CARGO_PKG_VERSION")))
        .timeout(Duration::from_secs(30))
        .build()
        .map_err(|e| crate::http::error_chain(&e))?;
    let req = match call {
        Call::Post {
            url,
            content_type,
            body,
        } => http
            .post(url)
            .header("content-type", content_type)
            .header("accept", "application/json")
            .body(body),
        Call::Get { url, bearer } => {
            let mut r = http
                .get(url)
                .header("accept", "application/json")
                .header("authorization", format!("Bearer {bearer}"));
            for (k, v) in COPILOT_HEADERS {
                r = r.header(k, v);
            }
            r
        }
    };
    let resp = req.send().await.map_err(|e| crate::http::error_chain(&e))?;
    let status = resp.status().as_u16();
    let text = resp
        .text()
        .await
        .map_err(|e| crate::http::error_chain(&e))?;
    Ok((status, text))
}

/// The reference's lock: the directory `auth.json.lock`, removed when dropped.
struct ReferenceLock(PathBuf);

impl ReferenceLock {
    fn take(path: &Path) -> Result<ReferenceLock, String> {
        let start = Instant::now();
        loop {
            match std::fs::create_dir(path) {
                Ok(()) => return Ok(ReferenceLock(path.to_owned())),
                Err(e) if e.kind() == io::ErrorKind::AlreadyExists => {
                    let age = std::fs::metadata(path)
                        .and_then(|m| m.modified())
                        .ok()
                        .and_then(|t| t.elapsed().ok());
                    if age.is_some_and(|a| a > STALE) {
                        let _ = std::fs::remove_dir(path);
                        continue;
                    }
                    if start.elapsed() > LOCK_WAIT {
                        return Err(format!(
                            "{} is held by another program (the reference agent?); try again, \
                             or remove it if no agent is running",
                            path.display()
                        ));
                    }
                    std::thread::sleep(Duration::from_millis(50));
                }
                Err(e) => return Err(format!("cannot create {}: {e}", path.display())),
            }
        }
    }
}

impl Drop for ReferenceLock {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir(&self.0);
    }
}

/// Writes `data` as the reference does (two-space indents), atomically.
fn write_atomically(path: &Path, data: &Map<String, Value>) -> io::Result<()> {
    let text = serde_json::to_vec_pretty(data).map_err(io::Error::other)?;
    pi_base::fs::write_atomic(path, &text)
}
