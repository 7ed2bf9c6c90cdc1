//! `pi models`: the configured models, where their keys come from (never the keys), and
//! models.json definitions with prices and headers.

use serde_json::json;

use crate::common::*;

#[test]
fn lists_models_with_a_key_and_says_where_it_comes_from() {
    let w = World::new();
    let none = w.ok(&["models", "--json"]);
    assert_eq!(none, "", "no key, no models");
    let out = w
        .pi()
        .args(["models", "gpt-4o-mini", "--json"])
        .env("OPENAI_API_KEY", "sk-live-123456")
        .output()
        .unwrap();
    assert!(out.status.success());
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(!text.contains("sk-live-123456"));
    let recs = jsonl(&text);
    let m = recs
        .iter()
        .find(|r| r["id"] == "gpt-4o-mini" && r["provider"] == "openai")
        .unwrap();
    assert_eq!(m["key"], "env OPENAI_API_KEY");
    assert_eq!(m["contextWindow"], 128000);
    assert_eq!(
        m["cost"],
        json!({"input": 0.15, "output": 0.6, "cacheRead": 0.08, "cacheWrite": 0})
    );
    assert_eq!(m["supported"], true);
    assert!(recs.iter().all(|r| r["provider"] != "anthropic"));
    // --all lists the others, without a key.
    let all = jsonl(&w.ok(&["models", "--all", "--json", "claude-sonnet-4-5"]));
    assert!(
        all.iter()
            .any(|r| r["provider"] == "anthropic" && r["key"].is_null())
    );
    assert!(
        all.iter()
            .any(|r| r["provider"] == "amazon-bedrock" && r["supported"] == true)
    );
}

#[test]
fn models_json_definitions_auth_json_and_the_default() {
    let w = World::new();
    w.write(
        "agent/models.json",
        json!({"providers": {
            "local": {"baseUrl": "http://127.0.0.1:1/v1", "api": "openai-completions", "apiKey": "!echo secret-from-command",
                      "headers": {"X-Team": "TEAM_HEADER_VAR"},
                      "models": [{"id": "llama", "contextWindow": 8192, "reasoning": true,
                                  "cost": {"input": 1, "output": 2, "cacheRead": 0, "cacheWrite": 0}}]},
            "anthropic": {"modelOverrides": {"claude-sonnet-4-5": {"contextWindow": 1000000, "cost": {"input": 6}}}}
        }})
        .to_string(),
    );
    w.write(
        "agent/auth.json",
        r#"{"anthropic":{"type":"api_key","key":"sk-ant-from-auth-json"}}"#,
    );
    w.write(
        "agent/settings.json",
        r#"{"defaultProvider":"local","defaultModel":"llama"}"#,
    );
    let out = w.ok(&["models", "--json"]);
    assert!(!out.contains("secret-from-command") && !out.contains("sk-ant-from-auth-json"));
    let recs = jsonl(&out);
    let l = recs.iter().find(|r| r["provider"] == "local").unwrap();
    assert_eq!(l["key"], "models.json");
    assert_eq!(l["default"], true);
    assert_eq!(l["source"], "models.json");
    assert_eq!(
        (l["contextWindow"].as_u64(), l["maxTokens"].as_u64()),
        (Some(8192), Some(16384))
    );
    assert_eq!(l["cost"]["output"], 2);
    let s = recs
        .iter()
        .find(|r| r["id"] == "claude-sonnet-4-5" && r["provider"] == "anthropic")
        .unwrap();
    assert_eq!(s["key"], "auth.json");
    assert_eq!(s["contextWindow"], 1000000);
    assert_eq!(s["source"], "models.json override");
    assert_eq!(s["cost"]["input"], 6);
    assert_eq!(s["cost"]["output"], 15, "the other prices stay");
    // The human table marks the default.
    insta::assert_snapshot!(w.snap(&["models", "llama", "--format", "human"]), @"
    status: 0
    ----- stdout -----
    provider  model    context  max-out  thinking  images  key
    local     llama *  8.2K     16.4K    yes       no      models.json
    ----- stderr -----
    ");
    // 1.6's pricing tiers: the file is applied and the tiers are kept.
    w.write(
        "agent/models.json",
        json!({"providers": {"local": {"baseUrl": "http://127.0.0.1:1/v1", "api": "openai-completions", "apiKey": "k",
            "models": [{"id": "llama", "cost": {"input": 1, "output": 2, "cacheRead": 0.1, "cacheWrite": 1,
                "tiers": [{"inputTokensAbove": 200000, "input": 2, "output": 4, "cacheRead": 0.2, "cacheWrite": 2}]}}]}}})
        .to_string(),
    );
    let out = w.ok(&["models", "llama", "--json"]);
    let l = &jsonl(&out)[0];
    assert_eq!(l["provider"], "local");
    assert_eq!(l["cost"]["input"], 1);
    assert_eq!(l["cost"]["tiers"][0]["inputTokensAbove"], 200000);
    assert_eq!(l["cost"]["tiers"][0]["output"], 4);
    // A tier without its prices is named in the report.
    w.write(
        "agent/models.json",
        r#"{"providers":{"local":{"baseUrl":"http://127.0.0.1:1/v1","api":"openai-completions","apiKey":"k","models":[{"id":"llama","cost":{"input":1,"tiers":[{"inputTokensAbove":5}]}}]}}}"#,
    );
    let out = w.pi().args(["models", "--json"]).output().unwrap();
    assert!(
        String::from_utf8_lossy(&out.stderr)
            .contains("providers.local.models.0.cost.tiers must be a list"),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    // A models.json that does not fit the schema is reported and ignored.
    w.write(
        "agent/models.json",
        r#"{"providers":{"x":{"headers":{"a":1}}}}"#,
    );
    let out = w.pi().args(["models", "--json"]).output().unwrap();
    assert!(out.status.success());
    assert!(
        String::from_utf8_lossy(&out.stderr)
            .contains("providers.x.headers must be an object of strings")
    );
}

/// Names from models.json are shown escaped in the table.
#[test]
fn the_table_escapes_names_from_models_json() {
    let w = World::new();
    w.write(
        "agent/models.json",
        json!({"providers": {"evil\u{1b}[2J": {"baseUrl": "http://127.0.0.1:9/v1",
            "api": "openai-completions", "apiKey": "k",
            "models": [{"id": "m\u{7}1", "contextWindow": 1000}]}}})
        .to_string(),
    );
    let out = w.ok(&["models", "--format", "human"]);
    assert!(!out.contains('\u{1b}') && !out.contains('\u{7}'), "{out}");
    assert!(
        out.contains(r"evil\u{1b}[2J") && out.contains(r"m\u{7}1"),
        "{out}"
    );
}

#[test]
fn cloud_credentials_count_as_keys_and_every_cloud_api_is_supported() {
    let w = World::new();
    let out = w
        .pi()
        .args(["models", "--json"])
        .env("GEMINI_API_KEY", "AIza-secret-1")
        .env("AWS_PROFILE", "work")
        .env("GOOGLE_CLOUD_API_KEY", "AQ.secret-2")
        .output()
        .unwrap();
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(!text.contains("secret"));
    let recs = jsonl(&text);
    let key_of = |p: &str| {
        let r = recs.iter().find(|r| r["provider"] == p).unwrap();
        assert_eq!(r["supported"], true, "{p}");
        r["key"].as_str().unwrap().to_owned()
    };
    assert_eq!(key_of("google"), "env GEMINI_API_KEY");
    assert_eq!(key_of("google-vertex"), "env GOOGLE_CLOUD_API_KEY");
    assert_eq!(key_of("amazon-bedrock"), "env AWS_PROFILE (work)");
    let all = jsonl(&w.ok(&["models", "--all", "--json"]));
    for api in [
        "google-generative-ai",
        "google-vertex",
        "bedrock-converse-stream",
    ] {
        let n = all.iter().filter(|r| r["api"] == api).count();
        assert!(n > 10, "{api}: {n}");
        assert!(
            all.iter()
                .filter(|r| r["api"] == api)
                .all(|r| r["supported"] == true)
        );
    }
}
