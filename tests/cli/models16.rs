//! The built-in catalogue is the reference 1.6's (issue 29): its providers and the variables
//! their keys are read from, `ANTHROPIC_AUTH_TOKEN` sent as a bearer token, the thinking level
//! `max`, and adaptive thinking and temperature as the models' `compat` says.

use serde_json::{Value, json};

use crate::common::model_server::{ModelServer, Reply};
use crate::common::*;

fn models(w: &World, env: &[(&str, &str)], args: &[&str]) -> Vec<Value> {
    let mut cmd = w.pi();
    cmd.arg("models").args(args).arg("--json");
    for (k, v) in env {
        cmd.env(k, v);
    }
    let out = cmd.output().unwrap();
    assert!(out.status.success(), "{out:?}");
    jsonl(&String::from_utf8(out.stdout).unwrap())
}

#[test]
fn provider_keys_are_read_from_the_variables_of_the_reference_16() {
    let w = World::new();
    let all = models(&w, &[], &["--all"]);
    assert!(all.len() > 1600, "{} models", all.len());
    let providers: std::collections::BTreeSet<&str> =
        all.iter().filter_map(|m| m["provider"].as_str()).collect();
    for p in ["azure", "nvidia", "together", "qwen-token-plan", "radius"] {
        assert!(providers.contains(p), "no provider {p}");
    }
    assert!(!providers.contains("azure-openai-responses"));
    // Copilot reads COPILOT_GITHUB_TOKEN only (0.73 also took GH_TOKEN and GITHUB_TOKEN).
    let copilot = models(
        &w,
        &[("COPILOT_GITHUB_TOKEN", "ghu_1")],
        &["github-copilot/"],
    );
    assert!(!copilot.is_empty());
    assert!(
        copilot
            .iter()
            .all(|m| m["key"] == "env COPILOT_GITHUB_TOKEN")
    );
    assert!(models(&w, &[("GH_TOKEN", "ghu_1")], &["github-copilot/"]).is_empty());
    // Azure is provider `azure`, with AZURE_OPENAI_API_KEY.
    let azure = models(&w, &[("AZURE_OPENAI_API_KEY", "k")], &[]);
    assert!(!azure.is_empty());
    assert!(
        azure
            .iter()
            .all(|m| m["provider"] == "azure" && m["key"] == "env AZURE_OPENAI_API_KEY")
    );
    let qwen = models(&w, &[("QWEN_TOKEN_PLAN_API_KEY", "k")], &[]);
    let plans: std::collections::BTreeSet<&str> =
        qwen.iter().filter_map(|m| m["provider"].as_str()).collect();
    assert_eq!(
        plans.into_iter().collect::<Vec<_>>(),
        ["qwen-token-plan", "qwen-token-plan-individual"]
    );
}

/// A world whose `anthropic` provider is the test's server (no key configured).
fn anthropic_world(server: &ModelServer) -> World {
    let w = World::new();
    w.write(
        "agent/models.json",
        json!({"providers": {"anthropic": {"baseUrl": server.url()}}}).to_string(),
    );
    w
}

fn run_anthropic(w: &World, env: &[(&str, &str)], args: &[&str]) -> std::process::Output {
    let mut cmd = w.pi();
    cmd.args(["run", "--no-session", "--no-tools", "-p", "hi"])
        .args(args);
    for (k, v) in env {
        cmd.env(k, v);
    }
    cmd.output().unwrap()
}

#[test]
fn anthropic_auth_token_is_sent_as_a_bearer_token() {
    let server = ModelServer::start();
    let w = anthropic_world(&server);
    server.push(Reply::anthropic_text(&["Hi!"]));
    let o = run_anthropic(
        &w,
        &[
            ("ANTHROPIC_AUTH_TOKEN", "gateway-token-1"),
            ("ANTHROPIC_API_KEY", "sk-ant-api-1"),
        ],
        &["--model", "anthropic/claude-sonnet-4-5"],
    );
    assert!(o.status.success(), "{o:?}");
    let r = &server.requests()[0];
    assert_eq!(r.header("authorization"), Some("Bearer gateway-token-1"));
    assert_eq!(r.header("x-api-key"), None);
    // `pi models` names the variable.
    let m = models(
        &w,
        &[("ANTHROPIC_AUTH_TOKEN", "gateway-token-1")],
        &["anthropic/claude-sonnet-4-5"],
    );
    assert_eq!(m[0]["key"], "env ANTHROPIC_AUTH_TOKEN");
}

#[test]
fn thinking_max_and_adaptive_thinking_follow_the_catalogue() {
    let server = ModelServer::start();
    let w = anthropic_world(&server);
    let key = [("ANTHROPIC_API_KEY", "sk-ant-api-1")];
    let body = |args: &[&str]| {
        server.push(Reply::anthropic_text(&["ok"]));
        let o = run_anthropic(&w, &key, args);
        assert!(o.status.success(), "{o:?}");
        server.requests().last().unwrap().json()
    };
    // Opus 4.6: adaptive (compat.forceAdaptiveThinking), `max` mapped to effort "max"; it
    // has no `xhigh` in 1.6, which clamps up to `max`.
    for level in ["max", "xhigh"] {
        let b = body(&["--model", "anthropic/claude-opus-4-6", "--thinking", level]);
        assert_eq!(b["thinking"]["type"], "adaptive", "{level}");
        assert_eq!(b["output_config"], json!({"effort": "max"}), "{level}");
    }
    // Sonnet 4.5 has neither: `max` clamps down to `high`, a budget.
    let b = body(&[
        "--model",
        "anthropic/claude-sonnet-4-5",
        "--thinking",
        "max",
    ]);
    assert_eq!(b["thinking"]["type"], "enabled");
    assert_eq!(b["thinking"]["budget_tokens"], 16384);
    assert!(b.get("output_config").is_none());
}
