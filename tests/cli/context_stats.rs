//! `pi context stats`: where the window and reserve come from, the record, the human view,
//! and the errors. The token figures are checked against the reference in
//! context_goldens.rs.

use serde_json::json;

use crate::common::*;

/// An assistant reply reporting `total` context tokens, from `model`.
fn reply(model: &str, total: u64) -> String {
    let (provider, id) = model.split_once('/').unwrap();
    json!({"role": "assistant", "content": [{"type": "text", "text": "ok"}],
           "api": "anthropic-messages", "provider": provider, "model": id,
           "usage": {"input": total - 10, "output": 10, "cacheRead": 0, "cacheWrite": 0, "totalTokens": total},
           "stopReason": "stop"})
    .to_string()
}

fn session_with(w: &World, lines: &[String]) -> String {
    let s = w.new_session();
    let s = s.to_str().unwrap().to_owned();
    w.ok_in(&["session", "append", &s], &lines.join("\n"));
    s
}

fn stats(w: &World, args: &[&str]) -> serde_json::Value {
    let mut a = vec!["context", "stats", "--json"];
    a.extend_from_slice(args);
    jsonl(&w.ok(&a)).remove(0)
}

#[test]
fn the_record() {
    let w = World::new();
    let s = session_with(
        &w,
        &[
            user("q"),
            reply("anthropic/claude-sonnet-4-5", 150_000),
            user(&"x".repeat(400)),
        ],
    );
    let r = stats(&w, &[&s]);
    assert_eq!(r["messages"], 3);
    assert_eq!(r["roles"], json!({"user": 2, "assistant": 1}));
    assert_eq!(
        r["model"],
        json!({"provider": "anthropic", "modelId": "claude-sonnet-4-5"})
    );
    assert_eq!(r["usageTokens"], 150_000);
    assert_eq!(r["usageFrom"], "totalTokens");
    assert_eq!(r["trailingTokens"], 100);
    assert_eq!(r["tokens"], 150_100);
    assert_eq!(r["lastUsageIndex"], 1);
    assert_eq!(r["usage"]["totalTokens"], 150_000);
    assert_eq!(r["contextWindow"], 200_000);
    assert_eq!(r["contextWindowFrom"], "built-in");
    assert_eq!(r["reserveTokens"], 16_384);
    assert_eq!(r["reserveTokensFrom"], "default");
    assert_eq!(r["threshold"], 183_616);
    assert!(
        (r["percent"].as_f64().unwrap() - 75.05).abs() < 1e-9,
        "{}",
        r["percent"]
    );
    assert_eq!(r["shouldCompact"], false);
    let leaf = r["leaf"].as_str().unwrap();
    assert_eq!(r["lastUsageEntryId"].as_str().unwrap().len(), 8);
    assert_ne!(r["lastUsageEntryId"], leaf);
    // Over the threshold once the window is smaller.
    let r = stats(&w, &[&s, "--context-window", "160000"]);
    assert_eq!(r["contextWindowFrom"], "--context-window");
    assert_eq!(r["shouldCompact"], true);
    // The reserve: option, then settings, then the default.
    let r = stats(&w, &[&s, "--reserve-tokens", "60000"]);
    assert_eq!(
        (
            r["shouldCompact"].as_bool(),
            r["reserveTokensFrom"].as_str()
        ),
        (Some(true), Some("--reserve-tokens"))
    );
    w.write(
        "agent/settings.json",
        r#"{"compaction": {"reserveTokens": 40000}}"#,
    );
    w.write(
        "proj/.pi/settings.json",
        r#"{"compaction": {"reserveTokens": 50000}}"#,
    );
    let r = stats(&w, &[&s]);
    assert_eq!(
        (r["reserveTokens"].as_u64(), r["reserveTokensFrom"].as_str()),
        (Some(50_000), Some("settings"))
    );
    // compaction.modelOverrides of the session's model comes before the ordinary setting;
    // an entry for another model does not.
    w.write(
        "agent/settings.json",
        r#"{"compaction": {"reserveTokens": 40000, "modelOverrides": {"anthropic/claude-sonnet-4-5": {"reserveTokens": 1000}, "openai/gpt-4o": {"reserveTokens": 7}}}}"#,
    );
    let r = stats(&w, &[&s]);
    assert_eq!(
        (r["reserveTokens"].as_u64(), r["reserveTokensFrom"].as_str()),
        (Some(1000), Some("compaction.modelOverrides"))
    );
    assert_eq!(r["shouldCompact"], false);
    let r = stats(&w, &[&s, "--reserve-tokens", "60000"]);
    assert_eq!(r["reserveTokensFrom"], "--reserve-tokens");
    let r = stats(&w, &[&s, "--model", "openai/gpt-4o"]);
    assert_eq!(
        (r["reserveTokens"].as_u64(), r["reserveTokensFrom"].as_str()),
        (Some(7), Some("compaction.modelOverrides"))
    );
    w.write(
        "agent/settings.json",
        r#"{"compaction": {"reserveTokens": 40000}}"#,
    );
    assert_eq!(r["shouldCompact"], true);
    w.write(
        "proj/.pi/settings.json",
        r#"{"compaction": {"enabled": false}}"#,
    );
    let r = stats(&w, &[&s]);
    assert_eq!(r["reserveTokens"], 40_000);
    assert_eq!(
        (
            r["compactionEnabled"].as_bool(),
            r["shouldCompact"].as_bool()
        ),
        (Some(false), Some(false))
    );
}

#[test]
fn the_window_comes_from_models_json() {
    let w = World::new();
    let s = session_with(&w, &[user("q"), reply("local/llama", 5000)]);
    w.write(
        "agent/models.json",
        r#"{
          // a local server
          "providers": {"local": {"baseUrl": "http://localhost:8080/v1", "api": "openai-completions", "apiKey": "x",
                                   "models": [{"id": "llama", "contextWindow": 8192}]},
                        "anthropic": {"modelOverrides": {"claude-sonnet-4-5": {"contextWindow": 1000000}}}}
        }"#,
    );
    let r = stats(&w, &[&s, "--reserve-tokens", "2048"]);
    assert_eq!(r["contextWindow"], 8192);
    assert_eq!(r["contextWindowFrom"], "models.json");
    assert_eq!(r["contextWindowModel"], "local/llama");
    assert_eq!(r["shouldCompact"], false);
    let r = stats(&w, &[&s, "--reserve-tokens", "4096"]);
    assert_eq!(r["shouldCompact"], true);
    // The default reserve (16384) is not below this window: a quarter of the window is
    // reserved instead (the reference would compact on every turn), with a warning.
    let o = w
        .pi()
        .args(["context", "stats", "--json", &s])
        .output()
        .unwrap();
    assert!(o.status.success());
    let r = &jsonl(&String::from_utf8_lossy(&o.stdout))[0];
    assert_eq!(r["reserveTokens"], 2048);
    assert_eq!(r["reserveTokensFrom"], "window/4");
    assert_eq!(r["shouldCompact"], false, "5000 tokens < 8192 - 2048");
    assert_eq!(
        String::from_utf8_lossy(&o.stderr),
        "pi: warning: reserveTokens 16384 is not below the context window of local/llama \
         (8192 tokens); using a quarter of the window (2048); set compaction.reserveTokens \
         below the window in settings.json (for one model: compaction.modelOverrides) to \
         choose it and silence this\n"
    );
    let r = stats(&w, &[&s, "--model", "anthropic/claude-sonnet-4-5"]);
    assert_eq!(r["contextWindow"], 1_000_000);
    assert_eq!(r["contextWindowFrom"], "models.json override");
    // A broken models.json is reported and ignored, as the reference ignores it.
    w.write("agent/models.json", "{ nope");
    let out = w
        .pi()
        .args(["context", "stats", "--json", &s])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2), "local/llama is unknown again");
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("pi: warning: ignoring") && err.contains("models.json"),
        "{err}"
    );
    assert!(
        err.contains("no context window known for model local/llama"),
        "{err}"
    );
}

#[test]
fn no_window_is_a_usage_error_with_a_hint() {
    let w = World::new();
    for lines in [
        vec![user("no model yet")],
        vec![user("q"), reply("acme/unknown-1", 10)],
    ] {
        let s = session_with(&w, &lines);
        let out = w.pi().args(["context", "stats", &s]).output().unwrap();
        assert_eq!(out.status.code(), Some(2));
        assert!(out.stdout.is_empty());
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(err.starts_with("pi: error: no context window"), "{err}");
        assert!(
            err.contains("hint: pass the window with --context-window N"),
            "{err}"
        );
        let r = stats(&w, &[&s, "--context-window", "1000"]);
        assert_eq!(r["contextWindow"], 1000);
    }
    let s = session_with(&w, &[user("q")]);
    let out = w
        .pi()
        .args(["context", "stats", &s, "--context-window", "0"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let out = w
        .pi()
        .args(["context", "stats", &s, "--context-window", "lots"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
}

#[test]
fn usage_before_the_latest_compaction_is_stale() {
    let w = World::new();
    let s = w.new_session();
    let s = s.to_str().unwrap().to_owned();
    let first = jsonl(&w.ok_in(
        &["session", "append", &s],
        &[user("q"), reply("anthropic/claude-sonnet-4-5", 190_000)].join("\n"),
    ));
    let kept = first[0]["id"].as_str().unwrap();
    let c = json!({"type": "compaction", "summary": "s", "firstKeptEntryId": kept, "tokensBefore": 190_000});
    w.ok_in(&["session", "append", &s], &c.to_string());
    let r = stats(&w, &[&s]);
    assert_eq!(r["usageStale"], true);
    // The usage reported before the compaction no longer describes the context: as the
    // reference 1.6, every message is estimated instead.
    assert_eq!(r["tokens"], 3);
    assert!(r["lastUsageEntryId"].is_null());
    assert_eq!(r["shouldCompact"], false);
    insta::assert_snapshot!(w.snap(&["context", "stats", &s, "--format", "human"]), @"
    status: 0
    ----- stdout -----
    context   leaf 6f9fb04b (3 entries on the path, compacted)
    messages  3: 1 compactionSummary, 1 user, 1 assistant
    tokens    3 estimated (the usage last reported came before a compaction or context edit that changed the context)
    estimate  3 (characters / 4, every message)
    window    200,000 (anthropic/claude-sonnet-4-5, built-in) − reserve 16,384 (default) = threshold 183,616
    compact   no: no reply since the latest compaction, the reported usage predates it
    ----- stderr -----
    ");
    // A reply after the compaction makes the figures current again.
    w.ok_in(
        &["session", "append", &s],
        &[user("q2"), reply("anthropic/claude-sonnet-4-5", 190_500)].join("\n"),
    );
    let r = stats(&w, &[&s]);
    assert_eq!(
        (r["usageStale"].as_bool(), r["shouldCompact"].as_bool()),
        (Some(false), Some(true))
    );
}

#[test]
fn human_view() {
    let w = World::new();
    let s = session_with(
        &w,
        &[
            user("q"),
            reply("anthropic/claude-sonnet-4-5", 190_000),
            user("more"),
        ],
    );
    insta::assert_snapshot!(w.snap(&["context", "stats", &s, "--format", "human"]), @"
    status: 0
    ----- stdout -----
    context   leaf c3f2827a (3 entries on the path)
    messages  3: 2 user, 1 assistant
    tokens    190,001 = 190,000 reported (totalTokens of entry 987bbcbf) + 1 estimated for 1 later message
    estimate  3 (characters / 4, every message)
    window    200,000 (anthropic/claude-sonnet-4-5, built-in) − reserve 16,384 (default) = threshold 183,616
    compact   yes: 190,001 > 183,616 (95.0% of the window)
    ----- stderr -----
    ");
    // Not a terminal: JSON, unless asked.
    assert!(w.ok(&["context", "stats", &s]).starts_with("{\"leaf\":"));
}

#[test]
fn leaf_selects_the_branch_measured() {
    let w = World::new();
    let s = w.new_session();
    let s = s.to_str().unwrap().to_owned();
    let first = jsonl(&w.ok_in(
        &["session", "append", &s],
        &[user("q"), reply("anthropic/claude-sonnet-4-5", 1000)].join("\n"),
    ));
    let a1 = first[1]["id"].as_str().unwrap().to_owned();
    w.ok_in(
        &["session", "append", &s],
        &[user("q2"), reply("anthropic/claude-sonnet-4-5", 190_000)].join("\n"),
    );
    assert_eq!(stats(&w, &[&s])["shouldCompact"], true);
    let r = stats(&w, &[&s, "--leaf", &a1]);
    assert_eq!(
        (r["messages"].as_u64(), r["tokens"].as_u64()),
        (Some(2), Some(1000))
    );
    assert_eq!(r["leaf"], a1);
    assert_eq!(r["shouldCompact"], false);
}

/// Roles and model names come from the file: control characters in them are shown escaped.
#[test]
fn human_view_escapes_text_from_the_file() {
    let w = World::new();
    // A file written by another program, with a role no writer of pi's accepts.
    let s = w.write(
        "s.jsonl",
        [
            json!({"type": "session", "version": 3, "id": "0b1c", "timestamp": "2026-01-01T00:00:00.000Z", "cwd": "/tmp"}),
            json!({"type": "message", "id": "a1", "parentId": null, "timestamp": "2026-01-01T00:00:00.000Z",
                   "message": {"role": "evil\u{1b}]52;c;Zm9v\u{7}", "content": "x"}}),
        ]
        .map(|v| v.to_string())
        .join("\n"),
    );
    let s = s.to_str().unwrap();
    let shown = w.snap(&[
        "context",
        "stats",
        s,
        "--format",
        "human",
        "--model",
        "acme\u{1b}[2J/m",
        "--context-window",
        "1000",
    ]);
    assert!(
        !shown.contains('\u{1b}') && !shown.contains('\u{7}'),
        "{shown}"
    );
    assert!(shown.contains(r"evil\u{1b}]52;c;Zm9v\u{7}"), "{shown}");
}
