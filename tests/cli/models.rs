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
        json!({"input": 0.15, "output": 0.6, "cacheRead": 0.075, "cacheWrite": 0})
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
    // A tier without its prices is named in the report and left out; the model stays.
    w.write(
        "agent/models.json",
        r#"{"providers":{"local":{"baseUrl":"http://127.0.0.1:1/v1","api":"openai-completions","apiKey":"k","models":[{"id":"llama","cost":{"input":1,"tiers":[{"inputTokensAbove":5}]}}]}}}"#,
    );
    let out = w.pi().args(["models", "--json"]).output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("models.json: providers.local.models[0].cost.tiers[0].input: missing; the tier is ignored"),
        "{err}"
    );
    let l = jsonl(&String::from_utf8_lossy(&out.stdout))
        .into_iter()
        .find(|r| r["id"] == "llama")
        .unwrap();
    assert_eq!(l["cost"]["input"], 1);
    assert!(l["cost"].get("tiers").is_none());
}

/// A models.json with an unknown key or a field of the wrong type keeps the rest: each
/// problem is a warning naming the file and the key's path, and only that field (or the
/// entry that cannot stand without it) is left out.
#[test]
fn a_bad_field_of_models_json_costs_only_itself() {
    let w = World::new();
    w.write(
        "agent/models.json",
        r#"{
          "$schema": "https://pi.dev/schemas/models.schema.json",
          "providers": {
            "acme": {"baseUrl": "http://127.0.0.1:1/v1", "api": "openai-completions", "apiKey": "k",
                     "colour": "red", "headers": {"x-a": "1", "x-b": 2},
                     "models": [{"id": "good", "contextWindow": 64000, "samplingParams": {"top_k": 20},
                                 "inputLimits": {"maxRequestBytes": 1000}, "promptCache": {}},
                                {"id": "typo", "contextWindow": "64k", "maxTokens": 1000, "flavour": 1},
                                {"name": "no id"}]},
            "anthropic": {"modelOverrides": {"claude-sonnet-4-5": {"contextWindow": -5, "maxTokens": 9000},
                                             "no-such-model": {"contextWindow": 10}}},
            "broken": 7
          }
        }"#,
    );
    let out = w.pi().args(["models", "--all", "--json"]).output().unwrap();
    assert!(out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    let warnings: Vec<&str> = err.lines().collect();
    let file = w.path("agent/models.json");
    let expected: Vec<String> = [
        "acme.colour: unknown key; ignored",
        "acme.headers.x-b: expected a string, got a number; ignored",
        "acme.models[1].contextWindow: expected a positive number, got a string; ignored",
        "acme.models[1].flavour: unknown key; ignored",
        "acme.models[2].id: missing; the model is ignored",
        "anthropic.modelOverrides.claude-sonnet-4-5.contextWindow: expected a positive number, got a number; ignored",
        "broken: expected an object, got a number; ignored",
    ]
    .iter()
    .map(|w| format!("pi: warning: {}: providers.{w}", file.display()))
    .collect();
    assert_eq!(warnings, expected, "{err}");
    let recs = jsonl(&String::from_utf8_lossy(&out.stdout));
    let find = |p: &str, id: &str| {
        recs.iter()
            .find(|r| r["provider"] == p && r["id"] == id)
            .cloned()
    };
    assert_eq!(find("acme", "good").unwrap()["contextWindow"], 64000);
    let typo = find("acme", "typo").unwrap();
    assert_eq!(
        (typo["contextWindow"].clone(), typo["maxTokens"].clone()),
        (json!(128000), json!(1000))
    );
    let sonnet = find("anthropic", "claude-sonnet-4-5").unwrap();
    assert_eq!(sonnet["contextWindow"], 200000);
    assert_eq!(sonnet["maxTokens"], 9000);
    assert!(find("anthropic", "no-such-model").is_none());
    // A file that is not JSON at all is still ignored whole, with a warning.
    w.write("agent/models.json", "{ nope");
    let out = w.pi().args(["models", "--json"]).output().unwrap();
    assert!(out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("pi: warning: ignoring"));
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

/// settings.json: every key the reference 1.6 documents passes without a word; an unknown
/// key or a value of the wrong type is a warning naming the file and the key's path, and
/// the command goes on.
#[test]
fn settings_keys_are_checked_once_per_command() {
    let w = World::new();
    w.write(
        "agent/settings.json",
        json!({"defaultProvider": "anthropic", "defaultModel": "claude-sonnet-4-5",
               "defaultThinkingLevel": "high", "theme": "dark", "transport": "sse",
               "compaction": {"enabled": true, "reserveTokens": 16384, "keepRecentTokens": 20000,
                              "modelOverrides": {"anthropic/claude-sonnet-4-5": {"reserveTokens": 30000}}},
               "branchSummary": {"reserveTokens": 1, "skipPrompt": true},
               "retry": {"enabled": true, "maxRetries": 2, "provider": {"timeoutMs": 1000}},
               "terminal": {"showImages": false, "hyperlinks": "auto"}, "images": {"blockImages": false},
               "defaultTools": ["+grep"], "enabledModels": ["claude-*"], "quietStartup": "header",
               "httpIdleTimeoutMs": "disabled", "markdown": {"mermaid": "final"},
               "codemode": {"mode": "on", "inlineBudget": 3000}, "cacheWarming": "off",
               "skills": ["./skills"], "packages": ["npm:x"], "sessionShareDestination": "gist",
               "hooks": {}, "shellEnvironmentPolicy": {"inherit": "core"}})
        .to_string(),
    );
    let out = w
        .pi()
        .args(["models", "--all", "--json", "sonnet-4-5"])
        .output()
        .unwrap();
    assert!(out.status.success());
    assert_eq!(String::from_utf8_lossy(&out.stderr), "");
    w.write(
        "proj/.pi/settings.json",
        r#"{"defaultModle": "x", "compaction": {"reserveTokens": "lots"}, "defaultTools": ["read", 7]}"#,
    );
    let out = w
        .pi()
        .args(["models", "--all", "--json", "sonnet-4-5"])
        .output()
        .unwrap();
    assert!(out.status.success());
    let file = w.path("proj/.pi/settings.json");
    let f = file.display();
    assert_eq!(
        String::from_utf8_lossy(&out.stderr),
        format!(
            "pi: warning: {f}: defaultModle: unknown key; ignored\n\
             pi: warning: {f}: compaction.reserveTokens: expected a non-negative integer, got \"lots\"; the default is used\n\
             pi: warning: {f}: defaultTools[1]: expected a string, got 7; ignored\n"
        )
    );
}
