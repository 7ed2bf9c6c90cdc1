//! Refreshing expired OAuth logins in auth.json (Anthropic, OpenAI Codex, GitHub Copilot):
//! the token endpoint is the scripted model server (`PI_OAUTH_TOKEN_ORIGIN`); the refreshed
//! token is used at once and written back whole, two processes refreshing at once exchange
//! the refresh token once and both go on, and a refresh that fails says why and leaves the
//! file as it was.

use std::os::unix::fs::PermissionsExt;
use std::time::{Duration, SystemTime};

use serde_json::{Value, json};

use crate::common::model_server::{ModelServer, Reply};
use crate::common::*;

const ORIGIN_ENV: &str = "PI_OAUTH_TOKEN_ORIGIN";
/// A Codex access token naming the ChatGPT account `acct-new-2`.
const CODEX_NEW: &str = "eyJhbGciOiJub25lIiwidHlwIjoiSldUIn0.eyJodHRwczovL2FwaS5vcGVuYWkuY29tL2F1dGgiOnsiY2hhdGdwdF9hY2NvdW50X2lkIjoiYWNjdC1uZXctMiJ9fQ.c2ln";

fn now_ms() -> u64 {
    SystemTime::now()
        .duration_since(SystemTime::UNIX_EPOCH)
        .unwrap()
        .as_millis() as u64
}

/// A world whose built-in `provider` is served by `server`, with `auth` as auth.json.
fn world(server: &ModelServer, provider: &str, base_path: &str, auth: &Value) -> World {
    let w = World::new();
    w.write(
        "agent/models.json",
        json!({"providers": {provider: {"baseUrl": format!("{}{base_path}", server.url())}}})
            .to_string(),
    );
    w.write(
        "agent/settings.json",
        json!({"retry": {"baseDelayMs": 10, "provider": {"maxRetries": 0}}}).to_string(),
    );
    w.write(
        "agent/auth.json",
        serde_json::to_string_pretty(auth).unwrap(),
    );
    w
}

fn auth_json(w: &World) -> Value {
    serde_json::from_slice(&std::fs::read(w.path("agent/auth.json")).unwrap()).unwrap()
}

fn run(w: &World, server: &ModelServer, model: &str) -> std::process::Output {
    w.pi()
        .env(ORIGIN_ENV, server.url())
        .args(["run", "--model", model, "-p", "Say hi"])
        .output()
        .unwrap()
}

fn err(o: &std::process::Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

/// Nothing of the locks is left behind but pi's own (empty) lock file.
fn no_lock_left(w: &World) {
    assert!(!w.path("agent/auth.json.lock").exists());
    let names: Vec<String> = std::fs::read_dir(w.path("agent"))
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.contains("tmp"))
        .collect();
    assert!(names.is_empty(), "{names:?}");
}

#[test]
fn an_expired_anthropic_login_is_refreshed_used_and_written_back() {
    let server = ModelServer::start();
    let auth = json!({
        "openai": {"type": "api_key", "key": "sk-keep-this-one"},
        "anthropic": {"type": "oauth", "refresh": "rt-ant-old-0123456789",
                      "access": "sk-ant-oat01-expired-0123456789", "expires": 1000}
    });
    let w = world(&server, "anthropic", "", &auth);
    server.push(Reply::status(
        200,
        r#"{"token_type":"Bearer","access_token":"sk-ant-oat01-fresh-0123456789","refresh_token":"rt-ant-new-0123456789","expires_in":28800}"#,
    ));
    server.push(Reply::anthropic_text(&["Hi!"]));
    let before = now_ms();
    let o = run(&w, &server, "anthropic/claude-sonnet-4-5");
    assert!(o.status.success(), "{}", err(&o));
    assert_eq!(String::from_utf8_lossy(&o.stdout), "Hi!\n");
    let reqs = server.requests();
    assert_eq!(reqs.len(), 2);
    assert_eq!(reqs[0].method, "POST");
    assert_eq!(reqs[0].path, "/v1/oauth/token");
    assert_eq!(reqs[0].header("content-type"), Some("application/json"));
    let b = reqs[0].json();
    assert_eq!(b["grant_type"], "refresh_token");
    assert_eq!(b["refresh_token"], "rt-ant-old-0123456789");
    assert_eq!(b["client_id"], "9d1c250a-e61b-44d9-88ed-5944d1962f5e");
    assert_eq!(reqs[1].path, "/v1/messages");
    assert_eq!(
        reqs[1].header("authorization"),
        Some("Bearer sk-ant-oat01-fresh-0123456789")
    );
    // The entry is replaced whole; the others and their order are kept.
    let a = auth_json(&w);
    let keys: Vec<&String> = a.as_object().unwrap().keys().collect();
    assert_eq!(keys, ["openai", "anthropic"]);
    assert_eq!(a["openai"], auth["openai"]);
    let c = &a["anthropic"];
    assert_eq!(c["type"], "oauth");
    assert_eq!(c["access"], "sk-ant-oat01-fresh-0123456789");
    assert_eq!(c["refresh"], "rt-ant-new-0123456789");
    // Eight hours less five minutes from the refresh.
    let expires = c["expires"].as_u64().unwrap();
    let want = before + 28_800_000 - 300_000;
    assert!(expires >= want && expires < want + 60_000, "{expires}");
    let mode = std::fs::metadata(w.path("agent/auth.json"))
        .unwrap()
        .permissions()
        .mode();
    assert_eq!(mode & 0o777, 0o600);
    no_lock_left(&w);
    // The next run uses the stored token without refreshing.
    server.push(Reply::anthropic_text(&["Again."]));
    let o = run(&w, &server, "anthropic/claude-sonnet-4-5");
    assert!(o.status.success(), "{}", err(&o));
    let reqs = server.requests();
    assert_eq!(reqs.len(), 3);
    assert_eq!(reqs[2].path, "/v1/messages");
}

#[test]
fn codex_refresh_by_form_for_a_cron_compaction() {
    let server = ModelServer::start();
    let auth = json!({"openai-codex": {"type": "oauth", "access": "old.jwt.x", "refresh": "rt-cx-old-0123456789",
                                       "expires": 1000, "accountId": "acct-old"}});
    let w = world(&server, "openai-codex", "/backend-api", &auth);
    let s = w.write(
        "s/co-c1.jsonl",
        std::fs::read(fixture("compact/cases/co-c1.jsonl")).unwrap(),
    );
    server.push(Reply::status(
        200,
        &json!({"access_token": CODEX_NEW, "refresh_token": "rt-cx-new-0123456789", "expires_in": 864000, "id_token": "x"}).to_string(),
    ));
    server.push(Reply::responses_text(&["## Goal\n", "Ship it"]));
    let o = w
        .pi()
        .env(ORIGIN_ENV, server.url())
        .args([
            "compact",
            s.to_str().unwrap(),
            "--model",
            "openai-codex/gpt-6-sol",
            "--keep-recent-tokens",
            "15",
        ])
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", err(&o));
    let reqs = server.requests();
    assert_eq!(reqs[0].path, "/oauth/token");
    assert_eq!(
        reqs[0].header("content-type"),
        Some("application/x-www-form-urlencoded")
    );
    assert_eq!(
        reqs[0].text(),
        "grant_type=refresh_token&refresh_token=rt-cx-old-0123456789&client_id=app_EMoamEEZ73f0CkXaXp7hrann"
    );
    assert_eq!(reqs[1].path, "/backend-api/codex/responses");
    assert_eq!(reqs[1].header("chatgpt-account-id"), Some("acct-new-2"));
    let c = &auth_json(&w)["openai-codex"];
    assert_eq!(c["access"], CODEX_NEW);
    assert_eq!(c["refresh"], "rt-cx-new-0123456789");
    assert_eq!(c["accountId"], "acct-new-2");
    let keys: Vec<&String> = c.as_object().unwrap().keys().collect();
    assert_eq!(keys, ["type", "access", "refresh", "expires", "accountId"]);
    assert_eq!(
        jsonl(&std::fs::read_to_string(&s).unwrap()).last().unwrap()["type"],
        "compaction"
    );
}

#[test]
fn copilot_token_is_fetched_with_the_github_token() {
    let server = ModelServer::start();
    let auth = json!({"github-copilot": {"type": "oauth", "refresh": "gho_github0123456789",
                                         "access": "tid=old", "expires": 1000}});
    let w = world(&server, "github-copilot", "", &auth);
    let expires_at = now_ms() / 1000 + 1800;
    server.push(Reply::status(
        200,
        &json!({"token": "tid=new;exp=1;sku=x", "expires_at": expires_at, "refresh_in": 1500})
            .to_string(),
    ));
    server.push(Reply::responses_text(&["Hi!"]));
    let o = run(&w, &server, "github-copilot/gpt-5.4-nano");
    assert!(o.status.success(), "{}", err(&o));
    let reqs = server.requests();
    assert_eq!(reqs[0].method, "GET");
    assert_eq!(reqs[0].path, "/copilot_internal/v2/token");
    assert_eq!(
        reqs[0].header("authorization"),
        Some("Bearer gho_github0123456789")
    );
    assert_eq!(reqs[0].header("editor-version"), Some("vscode/1.107.0"));
    assert_eq!(reqs[1].path, "/responses");
    assert_eq!(
        reqs[1].header("authorization"),
        Some("Bearer tid=new;exp=1;sku=x")
    );
    let c = &auth_json(&w)["github-copilot"];
    assert_eq!(c["refresh"], "gho_github0123456789");
    assert_eq!(c["expires"], expires_at * 1000 - 300_000);
}

#[test]
fn two_processes_refreshing_at_once_exchange_the_token_once() {
    let server = ModelServer::start();
    let auth = json!({"anthropic": {"type": "oauth", "refresh": "rt-once-0123456789",
                                    "access": "sk-ant-oat01-expired-0123456789", "expires": 1000}});
    let w = world(&server, "anthropic", "", &auth);
    // The exchange is slow, so the second process arrives while the first holds the lock;
    // a second exchange of the same refresh token would be refused, as providers do.
    server.push(
        Reply::status(
            200,
            r#"{"access_token":"sk-ant-oat01-shared-0123456789","refresh_token":"rt-next-0123456789","expires_in":3600}"#,
        )
        .when("grant_type")
        .delay(Duration::from_millis(700)),
    );
    server.push(
        Reply::status(
            400,
            r#"{"error":"invalid_grant","error_description":"Refresh token already used"}"#,
        )
        .when("grant_type"),
    );
    server.push(Reply::anthropic_text(&["One."]).when("\"messages\""));
    server.push(Reply::anthropic_text(&["Two."]).when("\"messages\""));
    let spawn = || {
        w.std_cmd()
            .env(ORIGIN_ENV, server.url())
            .args([
                "run",
                "--no-session",
                "--model",
                "anthropic/claude-sonnet-4-5",
                "-p",
                "Say hi",
            ])
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .unwrap()
    };
    let a = spawn();
    let b = spawn();
    let (a, b) = (a.wait_with_output().unwrap(), b.wait_with_output().unwrap());
    assert!(a.status.success(), "{}", err(&a));
    assert!(b.status.success(), "{}", err(&b));
    let reqs = server.requests();
    let refreshes = reqs.iter().filter(|r| r.path == "/v1/oauth/token").count();
    assert_eq!(refreshes, 1);
    let calls: Vec<_> = reqs.iter().filter(|r| r.path == "/v1/messages").collect();
    assert_eq!(calls.len(), 2);
    for c in calls {
        assert_eq!(
            c.header("authorization"),
            Some("Bearer sk-ant-oat01-shared-0123456789")
        );
    }
    let c = &auth_json(&w)["anthropic"];
    assert_eq!(c["access"], "sk-ant-oat01-shared-0123456789");
    assert_eq!(c["refresh"], "rt-next-0123456789");
    no_lock_left(&w);
}

#[test]
fn a_failed_refresh_is_a_clear_error_and_leaves_the_file_alone() {
    let server = ModelServer::start();
    let auth = json!({"anthropic": {"type": "oauth", "refresh": "rt-bad-0123456789",
                                    "access": "sk-ant-oat01-expired-0123456789", "expires": 1000}});
    let w = world(&server, "anthropic", "", &auth);
    let before = std::fs::read(w.path("agent/auth.json")).unwrap();
    server.push(Reply::status(
        400,
        r#"{"error":"invalid_grant","error_description":"Refresh token rt-bad-0123456789 is invalid"}"#,
    ));
    let o = run(&w, &server, "anthropic/claude-sonnet-4-5");
    assert_eq!(o.status.code(), Some(1), "{}", err(&o));
    let e = err(&o);
    assert!(e.starts_with("pi: error: "), "{e}");
    assert!(
        e.contains("cannot refresh the OAuth login for \"anthropic\""),
        "{e}"
    );
    assert!(e.contains("invalid_grant"), "{e}");
    assert!(e.contains("/login anthropic"), "{e}");
    assert!(
        !e.contains("rt-bad-0123456789"),
        "the refresh token leaked: {e}"
    );
    // Only the refresh was tried; the file is byte for byte the same.
    assert_eq!(server.requests().len(), 1);
    assert_eq!(std::fs::read(w.path("agent/auth.json")).unwrap(), before);
    no_lock_left(&w);
}

#[test]
fn a_stale_reference_lock_is_taken_over() {
    let server = ModelServer::start();
    let auth = json!({"anthropic": {"type": "oauth", "refresh": "rt-l-0123456789",
                                    "access": "sk-ant-oat01-expired-0123456789", "expires": 1000}});
    let w = world(&server, "anthropic", "", &auth);
    // The reference's lock, left behind 40 seconds ago by a process that died.
    let lock = w.path("agent/auth.json.lock");
    std::fs::create_dir(&lock).unwrap();
    let old = SystemTime::now() - Duration::from_secs(40);
    std::fs::File::open(&lock)
        .unwrap()
        .set_modified(old)
        .unwrap();
    server.push(Reply::status(
        200,
        r#"{"access_token":"sk-ant-oat01-l2-0123456789","refresh_token":"rt-l2","expires_in":3600}"#,
    ));
    server.push(Reply::anthropic_text(&["Hi!"]));
    let o = run(&w, &server, "anthropic/claude-sonnet-4-5");
    assert!(o.status.success(), "{}", err(&o));
    assert_eq!(auth_json(&w)["anthropic"]["refresh"], "rt-l2");
    no_lock_left(&w);
}

#[test]
fn a_copilot_login_names_the_api_host_of_its_plan() {
    let models = |auth: Value| {
        let w = World::new();
        w.write("agent/auth.json", auth.to_string());
        let out = w.ok(&["models", "github-copilot/gpt-5.4-nano", "--json"]);
        jsonl(&out)[0]["baseUrl"].as_str().unwrap().to_owned()
    };
    let token = "tid=1;exp=2;proxy-ep=proxy.business.githubcopilot.com;sku=x";
    assert_eq!(
        models(
            json!({"github-copilot": {"type": "oauth", "access": token, "refresh": "r", "expires": 1}})
        ),
        "https://api.business.githubcopilot.com"
    );
    assert_eq!(
        models(
            json!({"github-copilot": {"type": "oauth", "access": "tid=1", "refresh": "r", "expires": 1,
                                         "enterpriseUrl": "https://GHE.example.com/"}})
        ),
        "https://copilot-api.ghe.example.com"
    );
    // Without a clue the model's own URL stays.
    assert_eq!(
        models(
            json!({"github-copilot": {"type": "oauth", "access": "tid=1", "refresh": "r", "expires": 1}})
        ),
        "https://api.individual.githubcopilot.com"
    );
}
