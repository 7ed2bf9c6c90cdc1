//! When no model can be called, the error names what is missing (issue 33): the key
//! variable of the session's model, a model not in the catalogue, or a provider without any
//! key, each with a hint naming models.json's path, the variable and `--model`.

use crate::common::*;

/// A session whose assistant message names `provider/model`.
fn session_with(w: &World, provider: &str, model: &str) -> String {
    let s = w.ok(&["session", "new"]).trim().to_owned();
    let reply = format!(
        r#"{{"role":"assistant","content":[{{"type":"text","text":"ok"}}],"api":"openai-completions","provider":"{provider}","model":"{model}","usage":{{"input":1,"output":1,"cacheRead":0,"cacheWrite":0}},"stopReason":"stop"}}"#
    );
    w.pi()
        .args(["session", "append", &s])
        .write_stdin(format!("{}\n{reply}\n", user("hello")))
        .assert()
        .success();
    s
}

/// `pi run` continuing `session`: (status, stderr with the world's paths named).
fn run_on(w: &World, session: &str, env: &[(&str, &str)]) -> (Option<i32>, String) {
    let mut cmd = w.pi();
    cmd.args(["run", "-s", session, "-p", "go on"]);
    for (k, v) in env {
        cmd.env(k, v);
    }
    let o = cmd.output().unwrap();
    assert!(o.stdout.is_empty());
    let agent = w.agent().display().to_string();
    (
        o.status.code(),
        String::from_utf8_lossy(&o.stderr).replace(&agent, "[AGENT]"),
    )
}

#[test]
fn the_sessions_model_without_a_key_names_the_variable() {
    let w = World::new();
    let s = session_with(&w, "anthropic", "claude-sonnet-4-5");
    let before = std::fs::read(&s).unwrap();
    let (code, err) = run_on(&w, &s, &[]);
    assert_eq!(code, Some(1));
    assert_eq!(
        err,
        "pi: error: no API key for the session's model anthropic/claude-sonnet-4-5: ANTHROPIC_API_KEY is not set\n  \
         hint: set ANTHROPIC_API_KEY in the environment, give provider \"anthropic\" an \"apiKey\" in [AGENT]/models.json, or pick another model with --model PROVIDER/ID\n"
    );
    assert_eq!(std::fs::read(&s).unwrap(), before, "nothing written");
    // Copilot's variable is 1.6's.
    let s = session_with(&w, "github-copilot", "gpt-5.4-nano");
    let (_, err) = run_on(&w, &s, &[("GH_TOKEN", "ghu_x")]);
    assert!(
        err.starts_with("pi: error: no API key for the session's model github-copilot/gpt-5.4-nano: COPILOT_GITHUB_TOKEN is not set\n"),
        "{err}"
    );
}

#[test]
fn a_provider_without_a_key_variable_points_to_models_json() {
    let w = World::new();
    w.write(
        "agent/models.json",
        r#"{"providers": {"local": {"baseUrl": "http://127.0.0.1:9/v1", "api": "openai-completions",
            "models": [{"id": "llama"}]}}}"#,
    );
    let s = session_with(&w, "local", "llama");
    let (code, err) = run_on(&w, &s, &[]);
    assert_eq!(code, Some(1));
    assert_eq!(
        err,
        "pi: error: no API key for the session's model local/llama: no key is configured for provider \"local\"\n  \
         hint: give provider \"local\" an \"apiKey\" in [AGENT]/models.json, or pick another model with --model PROVIDER/ID\n"
    );
}

#[test]
fn an_unknown_model_points_to_models_json() {
    let w = World::new();
    let s = session_with(&w, "gone", "old-model");
    let (code, err) = run_on(&w, &s, &[]);
    assert_eq!(code, Some(2));
    assert_eq!(
        err,
        "pi: error: the session's model gone/old-model is not in models.json or the built-in table\n  \
         hint: define the model in [AGENT]/models.json, or pass --model PROVIDER/ID (`pi models --all` lists the models pi knows)\n"
    );
    // Named with --model, the same pointer.
    let o = w
        .pi()
        .args(["run", "-s", &s, "-p", "x", "--model", "gone/other"])
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2));
    let err =
        String::from_utf8_lossy(&o.stderr).replace(&w.agent().display().to_string(), "[AGENT]");
    assert_eq!(
        err,
        "pi: error: unknown model gone/other (not in models.json or the built-in table)\n  \
         hint: `pi models --all` lists the models pi knows; define others in [AGENT]/models.json\n"
    );
}

#[test]
fn a_default_model_still_wins_over_a_session_model_without_a_key() {
    // The session's model has no key, settings name one that has: that one is used, as in
    // the reference; the error only comes when nothing else names a model.
    let w = World::new();
    let s = session_with(&w, "anthropic", "claude-sonnet-4-5");
    w.write(
        "agent/settings.json",
        r#"{"defaultProvider": "openai", "defaultModel": "gpt-4o"}"#,
    );
    let (code, err) = run_on(&w, &s, &[]);
    assert_eq!(code, Some(1));
    assert!(
        err.starts_with("pi: error: no API key for openai/gpt-4o: OPENAI_API_KEY is not set\n"),
        "{err}"
    );
}
