//! When requests fail: automatic retries of transient errors (agent level, with
//! `auto_retry_*` events; and the HTTP client's own resend), a stream cut in the middle
//! (the error is recorded), a context overflow (the error is dropped from the context, the
//! session compacted, the request retried once), and compaction at the threshold before a
//! prompt and after a run.

use std::path::{Path, PathBuf};

use serde_json::{Value, json};

use crate::common::model_server::{ModelServer, Reply};
use crate::common::*;
use crate::run_support::*;

/// An assistant message of the mock model with a reported context size.
fn answer(text: &str, model: &str, input: u64) -> String {
    json!({
        "role": "assistant",
        "content": [{"type": "text", "text": text}],
        "api": "openai-completions", "provider": "mock", "model": model,
        "usage": {"input": input, "output": 10, "cacheRead": 0, "cacheWrite": 0,
                  "totalTokens": input + 10,
                  "cost": {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0, "total": 0}},
        "stopReason": "stop",
        "timestamp": 1_700_000_000_000i64,
    })
    .to_string()
}

/// A session of the project with two earlier exchanges (about 100 tokens each) with `model`.
pub(crate) fn earlier_session(w: &World, model: &str, last_input: u64) -> PathBuf {
    let f = w.new_session();
    let long = "words ".repeat(70);
    let input = [
        user(&format!("first question {long}")),
        answer(&format!("first answer {long}"), model, 300),
        user(&format!("second question {long}")),
        answer(&format!("second answer {long}"), model, last_input),
    ]
    .join("\n");
    w.ok_in(
        &["session", "append", f.to_str().unwrap()],
        &format!("{input}\n"),
    );
    f
}

fn types(p: &Path) -> Vec<String> {
    lines(p)
        .iter()
        .map(|l| {
            let t = l["type"].as_str().unwrap().to_owned();
            match l["message"]["role"].as_str() {
                Some(r) => format!("{t}:{r}"),
                None => t,
            }
        })
        .collect()
}

fn session_events(evs: &[Value]) -> Vec<String> {
    kinds(evs)
        .into_iter()
        .filter(|t| !t.starts_with("message_update") && !t.starts_with("tool_execution"))
        .collect()
}

#[test]
fn rate_limit_is_retried_with_events_and_recorded() {
    let server = ModelServer::start();
    let w = world(&server);
    server.push(Reply::status(
        429,
        r#"{"error":{"message":"Rate limit reached for requests"}}"#,
    ));
    server.push(Reply::openai_text(&["Made it."]));
    let o = run(&w, &["--json", "-p", "hello"]);
    status(&o, 0);
    let evs = events(&o);
    let k = session_events(&evs[1..]);
    assert_eq!(
        k,
        [
            "agent_start",
            "turn_start",
            "message_start:system",
            "message_end:system",
            "message_start:user",
            "message_end:user",
            "message_start:assistant",
            "message_end:assistant",
            "turn_end",
            "agent_end",
            "auto_retry_start",
            "agent_start",
            "turn_start",
            "message_start:assistant",
            "message_end:assistant",
            "auto_retry_end",
            "turn_end",
            "agent_end",
            "agent_settled",
        ]
    );
    // The first run's end says a retry follows; the last one's does not.
    let ends: Vec<&Value> = evs.iter().filter(|e| e["type"] == "agent_end").collect();
    assert_eq!(ends[0]["willRetry"], true);
    assert_eq!(ends[1]["willRetry"], false);
    let start = evs
        .iter()
        .find(|e| e["type"] == "auto_retry_start")
        .unwrap();
    assert_eq!(
        start,
        &json!({"type": "auto_retry_start", "attempt": 1, "maxAttempts": 3, "delayMs": 10,
                "errorMessage": "429 Rate limit reached for requests"})
    );
    let end = evs.iter().find(|e| e["type"] == "auto_retry_end").unwrap();
    assert_eq!(
        end,
        &json!({"type": "auto_retry_end", "success": true, "attempt": 1})
    );
    // The failed answer stays in the file; the retry's request does not carry it.
    let f = session_file(&w);
    let m = messages(&f);
    assert_eq!(roles(&m), ["user", "assistant", "assistant"]);
    assert_eq!(m[1]["stopReason"], "error");
    assert_eq!(m[1]["errorMessage"], "429 Rate limit reached for requests");
    assert_eq!(text(&m[2]), "Made it.");
    let retry = request_messages(&server.requests()[1]);
    assert_eq!(roles(&retry), ["system", "user"]);
    check(&w, &f);
}

#[test]
fn retries_give_up_after_max_retries_with_status_1() {
    let server = ModelServer::start();
    let w = world(&server);
    settings(&w, json!({"retry": {"maxRetries": 2}}));
    for _ in 0..3 {
        server.push(Reply::status(
            503,
            r#"{"error":{"message":"Service unavailable"}}"#,
        ));
    }
    let o = run(&w, &["--json", "-p", "hello"]);
    status(&o, 1);
    assert!(
        err(&o).contains("pi: error: 503 Service unavailable"),
        "{}",
        err(&o)
    );
    assert_eq!(server.requests().len(), 3);
    let evs = events(&o);
    let retries: Vec<Value> = evs
        .iter()
        .filter(|e| e["type"].as_str().unwrap().starts_with("auto_retry"))
        .cloned()
        .collect();
    assert_eq!(retries.len(), 3);
    assert_eq!(retries[0]["attempt"], 1);
    assert_eq!(retries[1]["attempt"], 2);
    assert_eq!(retries[1]["delayMs"], 20);
    assert_eq!(
        retries[2],
        json!({"type": "auto_retry_end", "success": false, "attempt": 2,
               "finalError": "503 Service unavailable"})
    );
    let f = session_file(&w);
    assert_eq!(
        roles(&messages(&f)),
        ["user", "assistant", "assistant", "assistant"]
    );
    // The same status without --json.
    for _ in 0..3 {
        server.push(Reply::status(
            503,
            r#"{"error":{"message":"Service unavailable"}}"#,
        ));
    }
    let o = run(&w, &[f.to_str().unwrap(), "-p", "again"]);
    status(&o, 1);
    assert!(
        err(&o).contains("retrying in 0.0 s (attempt 1/2)"),
        "{}",
        err(&o)
    );
}

#[test]
fn the_client_resends_after_retry_after_without_agent_retries() {
    let server = ModelServer::start();
    let w = world(&server);
    settings(&w, json!({"retry": {"provider": {"maxRetries": 2}}}));
    server.push(
        Reply::status(429, r#"{"error":{"message":"slow down"}}"#).header("retry-after-ms", "50"),
    );
    server.push(Reply::openai_text(&["ok"]));
    let o = run(&w, &["--json", "-p", "hello"]);
    status(&o, 0);
    assert_eq!(server.requests().len(), 2);
    let rs = server.requests();
    assert!(rs[1].at - rs[0].at >= std::time::Duration::from_millis(50));
    assert!(!out(&o).contains("auto_retry"));
    let f = session_file(&w);
    assert_eq!(roles(&messages(&f)), ["user", "assistant"]);
    // The human view says it on stderr.
    server.push(
        Reply::status(429, r#"{"error":{"message":"slow down"}}"#).header("retry-after-ms", "10"),
    );
    server.push(Reply::openai_text(&["ok"]));
    let o = run(&w, &["--no-session", "-p", "hello"]);
    insta::assert_snapshot!(w.shown(&o), @"
    status: 0
    ----- stdout -----
    ok
    ----- stderr -----
    pi: sending the request again in 0.0 s (1/2) after: 429 slow down
    ");
}

#[test]
fn a_cut_stream_is_recorded_as_an_error() {
    let server = ModelServer::start();
    let w = world(&server);
    settings(&w, json!({"retry": {"enabled": false}}));
    server.push(Reply::openai_text(&["Partial ", "answer ", "never finished"]).cut_after(300));
    let o = run(&w, &["-p", "hello"]);
    status(&o, 1);
    assert!(out(&o).starts_with("Partial "), "{}", out(&o));
    let f = session_file(&w);
    let m = messages(&f);
    assert_eq!(roles(&m), ["user", "assistant"]);
    assert_eq!(m[1]["stopReason"], "error");
    assert!(text(&m[1]).starts_with("Partial "));
    let e = m[1]["errorMessage"].as_str().unwrap();
    assert!(!e.is_empty());
    assert!(err(&o).contains(&format!("pi: error: {e}")), "{}", err(&o));
    check(&w, &f);
    // With retries on, the cut stream is retried (the error stays recorded).
    settings(&w, json!({}));
    server.push(Reply::openai_text(&["Partial ", "answer ", "never finished"]).cut_after(300));
    server.push(Reply::openai_text(&["Whole answer."]));
    let o = run(&w, &[f.to_str().unwrap(), "--json", "-p", "again"]);
    status(&o, 0);
    assert!(out(&o).contains("\"auto_retry_start\""));
    let m = messages(&f);
    assert_eq!(
        roles(&m),
        ["user", "assistant", "user", "assistant", "assistant"]
    );
    assert_eq!(m[3]["stopReason"], "error");
    assert_eq!(text(&m[4]), "Whole answer.");
}

const OVERFLOW: &str = r#"{"error":{"message":"This model's maximum context length is 100000 tokens. However, your messages resulted in 100500 tokens.","type":"invalid_request_error"}}"#;

#[test]
fn overflow_drops_the_error_compacts_and_retries_once() {
    let server = ModelServer::start();
    let w = world(&server);
    settings(&w, json!({"compaction": {"keepRecentTokens": 150}}));
    let f = earlier_session(&w, "m1", 400);
    server.push(Reply::status(400, OVERFLOW));
    server
        .push(Reply::openai_text(&["## Goal\nSummary of the early talk."]).when("<conversation>"));
    server.push(Reply::openai_text(&["Recovered."]));
    let o = run(&w, &[f.to_str().unwrap(), "--json", "-p", "third question"]);
    status(&o, 0);
    let evs = events(&o);
    let k = session_events(&evs[1..]);
    assert_eq!(
        k,
        [
            "agent_start",
            "turn_start",
            "message_start:system",
            "message_end:system",
            "message_start:user",
            "message_end:user",
            "message_start:assistant",
            "message_end:assistant",
            "turn_end",
            "agent_end",
            "compaction_start",
            "compaction_end",
            "agent_start",
            "turn_start",
            "message_start:assistant",
            "message_end:assistant",
            "turn_end",
            "agent_end",
            "agent_settled",
        ]
    );
    let start = evs
        .iter()
        .find(|e| e["type"] == "compaction_start")
        .unwrap();
    assert_eq!(
        start,
        &json!({"type": "compaction_start", "reason": "overflow"})
    );
    let end = evs.iter().find(|e| e["type"] == "compaction_end").unwrap();
    assert_eq!(end["reason"], "overflow");
    assert_eq!(end["willRetry"], true);
    assert_eq!(end["aborted"], false);
    assert!(
        end["result"]["summary"]
            .as_str()
            .unwrap()
            .starts_with("## Goal\nSummary of the early talk.")
    );
    // 1.6's result fields: the estimate of the context left, the summary request's usage.
    let keys: Vec<&String> = end["result"].as_object().unwrap().keys().collect();
    assert_eq!(
        keys,
        [
            "summary",
            "firstKeptEntryId",
            "tokensBefore",
            "estimatedTokensAfter",
            "usage",
            "details"
        ]
    );
    let after = end["result"]["estimatedTokensAfter"].as_f64().unwrap();
    assert!(after > 0.0 && after < end["result"]["tokensBefore"].as_f64().unwrap());
    assert!(end["result"]["usage"]["totalTokens"].as_u64().unwrap() > 0);
    // The file: the error, the compaction after it, the recovered answer after that.
    // The compaction's checkpoint is the prompt and tools the run recorded.
    let compaction = lines(&f)
        .into_iter()
        .find(|l| l["type"] == "compaction")
        .unwrap();
    assert_eq!(
        compaction["systemMessage"]["sections"],
        system_messages(&f)[0]["sections"]
    );
    assert_eq!(
        types(&f)[5..],
        [
            "thinking_level_change",
            "message:system",
            "message:user",
            "message:assistant",
            "compaction",
            "message:assistant"
        ]
    );
    let ls = lines(&f);
    assert_eq!(ls[8]["message"]["stopReason"], "error");
    assert_eq!(ls[9]["firstKeptEntryId"], end["result"]["firstKeptEntryId"]);
    assert_eq!(ls[9]["parentId"], ls[8]["id"]);
    assert_eq!(ls[10]["parentId"], ls[9]["id"]);
    // The summary request got the older part; the retry starts with the summary and ends
    // with the prompt, without the error.
    let rs = server.requests();
    assert_eq!(rs.len(), 3);
    assert!(rs[1].text().contains("first question"));
    let retry = request_messages(&rs[2]);
    assert!(text(&retry[1]).contains("Summary of the early talk."));
    assert_eq!(text(retry.last().unwrap()), "third question");
    check(&w, &f);
    // The context pi builds from the file is the one the retry used.
    let ctx = jsonl(&w.ok(&["context", "build", f.to_str().unwrap(), "--format", "llm"]));
    assert_eq!(ctx.last().unwrap()["role"], "assistant");
    assert_eq!(text(ctx.last().unwrap()), "Recovered.");
}

#[test]
fn a_second_overflow_after_recovery_fails() {
    let server = ModelServer::start();
    let w = world(&server);
    // An answer counts against the window only when it is newer than the latest compaction,
    // which a frozen clock never makes it.
    w.real_clock("answers must be timestamped after the compaction");
    settings(&w, json!({"compaction": {"keepRecentTokens": 150}}));
    let f = earlier_session(&w, "m1", 400);
    server.push(Reply::status(400, OVERFLOW));
    server.push(Reply::openai_text(&["Summary."]).when("<conversation>"));
    server.push(Reply::status(400, OVERFLOW));
    let o = run(&w, &[f.to_str().unwrap(), "--json", "-p", "third question"]);
    status(&o, 1);
    let evs = events(&o);
    let ends: Vec<&Value> = evs
        .iter()
        .filter(|e| e["type"] == "compaction_end")
        .collect();
    assert_eq!(ends.len(), 2);
    assert_eq!(
        ends[1],
        &json!({"type": "compaction_end", "reason": "overflow", "aborted": false,
                "willRetry": false,
                "errorMessage": "Context overflow recovery failed after one compact-and-retry attempt. Try reducing context or switching to a larger-context model."})
    );
    assert!(err(&o).contains("maximum context length"), "{}", err(&o));
    assert_eq!(server.requests().len(), 3);
}

#[test]
fn threshold_compaction_before_the_prompt_and_after_the_run() {
    let server = ModelServer::start();
    let w = world(&server);
    // An answer counts against the window only when it is newer than the latest compaction,
    // which a frozen clock never makes it.
    w.real_clock("answers must be timestamped after the compaction");
    settings(
        &w,
        json!({"compaction": {"keepRecentTokens": 150, "reserveTokens": 500}}),
    );
    // The last answer reported 1800 tokens; the window is 2000, the threshold 1500.
    let f = earlier_session(&w, "small", 1800);
    server.push(Reply::openai_text(&["Summary one."]).when("<conversation>"));
    let long = format!("Answer after compaction. {}", "more ".repeat(160));
    server.push(answer_with_usage(&long, 1700));
    // The second compaction splits the turn: an update of the summary, and a summary of
    // the turn's first part, asked at the same time.
    server.push(Reply::openai_text(&["Summary two."]).when("<previous-summary>"));
    server.push(Reply::openai_text(&["Prefix."]).when("first part of a turn"));
    let o = run(&w, &[f.to_str().unwrap(), "--json", "-p", "third question"]);
    status(&o, 0);
    let evs = events(&o);
    let k = session_events(&evs[1..]);
    assert_eq!(
        k,
        [
            "compaction_start",
            "compaction_end",
            "agent_start",
            "turn_start",
            "message_start:system",
            "message_end:system",
            "message_start:user",
            "message_end:user",
            "message_start:assistant",
            "message_end:assistant",
            "turn_end",
            "agent_end",
            "compaction_start",
            "compaction_end",
            "agent_settled",
        ]
    );
    for e in evs.iter().filter(|e| e["type"] == "compaction_start") {
        assert_eq!(e["reason"], "threshold");
    }
    for e in evs.iter().filter(|e| e["type"] == "compaction_end") {
        assert_eq!(e["willRetry"], false);
        assert!(e["result"]["tokensBefore"].as_f64().unwrap() > 0.0);
    }
    let rs = server.requests();
    assert_eq!(rs.len(), 4);
    let sent = request_messages(&rs[1]);
    assert!(
        text(&sent[1]).contains("Summary one."),
        "{}",
        text(&sent[1])
    );
    assert_eq!(text(sent.last().unwrap()), "third question");
    assert!(
        rs[2..]
            .iter()
            .any(|r| r.text().contains("<previous-summary>") && r.text().contains("Summary one."))
    );
    let t = types(&f);
    assert_eq!(
        t[5..],
        [
            "thinking_level_change",
            "compaction",
            "message:system",
            "message:user",
            "message:assistant",
            "compaction"
        ]
    );
    let last = lines(&f).pop().unwrap();
    assert!(
        last["summary"]
            .as_str()
            .unwrap()
            .starts_with("Summary two.")
    );
    assert!(last["summary"].as_str().unwrap().contains("Prefix."));
    check(&w, &f);
    // Without compaction.enabled, nothing happens.
    settings(
        &w,
        json!({"compaction": {"enabled": false, "reserveTokens": 500}}),
    );
    server.push(answer_with_usage("fine", 1900));
    let o = run(&w, &[f.to_str().unwrap(), "--json", "-p", "more"]);
    status(&o, 0);
    assert!(!out(&o).contains("compaction_start"));
}

/// `compaction.modelOverrides["provider/modelId"]` sets the reserve of automatic
/// compaction for the run's model only.
#[test]
fn compaction_model_overrides_apply_to_the_runs_model() {
    let server = ModelServer::start();
    let w = world(&server);
    w.real_clock("answers must be timestamped after the compaction");
    // The ordinary reserve (100) puts the threshold at 1900: 1800 tokens do not compact,
    // and the entry for another model changes nothing.
    settings(
        &w,
        json!({"compaction": {"reserveTokens": 100, "keepRecentTokens": 150,
                              "modelOverrides": {"mock/m1": {"reserveTokens": 1900}}}}),
    );
    let f = earlier_session(&w, "small", 1800);
    server.push(answer_with_usage("fine", 1850));
    let o = run(&w, &[f.to_str().unwrap(), "--json", "-p", "more"]);
    status(&o, 0);
    assert!(!out(&o).contains("compaction_start"));
    // For mock/small a reserve of 500 (threshold 1500): compacted before the prompt.
    settings(
        &w,
        json!({"compaction": {"reserveTokens": 100, "keepRecentTokens": 150,
                              "modelOverrides": {"mock/small": {"reserveTokens": 500}}}}),
    );
    let f = earlier_session(&w, "small", 1800);
    server.push(Reply::openai_text(&["Summary one."]).when("<conversation>"));
    server.push(answer_with_usage("fine", 100));
    let o = run(&w, &[f.to_str().unwrap(), "--json", "-p", "third question"]);
    status(&o, 0);
    let evs = events(&o);
    let starts: Vec<_> = evs
        .iter()
        .filter(|e| e["type"] == "compaction_start")
        .collect();
    assert_eq!(starts.len(), 1, "{}", out(&o));
    assert_eq!(starts[0]["reason"], "threshold");
    assert!(types(&f).contains(&"compaction".to_owned()));
    check(&w, &f);
}

#[test]
fn without_a_session_overflow_cannot_compact() {
    let server = ModelServer::start();
    let w = world(&server);
    server.push(Reply::status(400, OVERFLOW));
    let o = run(&w, &["--no-session", "--json", "-p", "x"]);
    status(&o, 1);
    let evs = events(&o);
    let end = evs.iter().find(|e| e["type"] == "compaction_end").unwrap();
    assert_eq!(end["willRetry"], false);
    assert!(
        end["errorMessage"]
            .as_str()
            .unwrap()
            .starts_with("Context overflow recovery failed: ")
    );
    assert_eq!(server.requests().len(), 1);
}

/// Automatic compaction runs the `session_before_compact` hooks: a supplied summary is
/// used (no summary request; the entry is `fromHook`), a cancel ends the compaction as
/// `aborted`.
#[test]
fn automatic_compaction_asks_the_hooks() {
    let server = ModelServer::start();
    let w = world(&server);
    settings(
        &w,
        json!({"compaction": {"keepRecentTokens": 150, "reserveTokens": 500},
               "hooks": {"session_before_compact": "input=$(cat); case \"$input\" in *'\"reason\":\"threshold\"'*) echo '{\"summary\": \"Summary by the hook.\"}';; esac"}}),
    );
    let f = earlier_session(&w, "small", 1800);
    server.push(answer_with_usage("after", 100));
    let o = run(&w, &[f.to_str().unwrap(), "--json", "-p", "next"]);
    status(&o, 0);
    let rs = server.requests();
    assert_eq!(
        rs.len(),
        1,
        "only the prompt's request: the hook wrote the summary"
    );
    assert!(text(&request_messages(&rs[0])[1]).contains("Summary by the hook."));
    let c = lines(&f)
        .into_iter()
        .find(|e| e["type"] == "compaction")
        .unwrap();
    assert_eq!(c["summary"], "Summary by the hook.");
    assert_eq!(c["fromHook"], true);
    let end = events(&o)
        .into_iter()
        .find(|e| e["type"] == "compaction_end")
        .unwrap();
    assert_eq!(end["result"]["summary"], "Summary by the hook.");
    check(&w, &f);

    let server = ModelServer::start();
    let w = world(&server);
    settings(
        &w,
        json!({"compaction": {"keepRecentTokens": 150, "reserveTokens": 500},
               "hooks": {"session_before_compact": "cat >/dev/null; echo '{\"cancel\": true}'"}}),
    );
    let f = earlier_session(&w, "small", 1800);
    server.push(answer_with_usage("after", 100));
    let o = run(&w, &[f.to_str().unwrap(), "--json", "-p", "next"]);
    status(&o, 0);
    let end = events(&o)
        .into_iter()
        .find(|e| e["type"] == "compaction_end")
        .unwrap();
    assert_eq!(end["aborted"], true);
    assert!(end.get("result").is_none());
    assert!(!lines(&f).iter().any(|e| e["type"] == "compaction"));
    assert_eq!(server.requests().len(), 1);
}

/// A model whose window is not above the default reserve (16384): a quarter of the window
/// is reserved instead (said once on stderr), so a turn well inside the window does not
/// compact; above the fitted threshold it does, asking at most the model's maxTokens.
#[test]
fn small_windows_reserve_a_quarter_of_the_window() {
    let server = ModelServer::start();
    let w = world(&server);
    w.real_clock("answers must be timestamped after the compaction");
    // `small`: window 2000, maxTokens 500; reserve 500, keepRecentTokens at most 250.
    let f = earlier_session(&w, "small", 1000);
    server.push(answer_with_usage("fine", 1200));
    let o = run(&w, &[f.to_str().unwrap(), "--json", "-p", "next"]);
    status(&o, 0);
    assert!(!out(&o).contains("compaction_start"), "{}", out(&o));
    assert_eq!(server.requests().len(), 1);
    assert_eq!(
        err(&o),
        "pi: warning: reserveTokens 16384 is not below the context window of mock/small \
         (2000 tokens); using a quarter of the window (500) and keepRecentTokens 250; set \
         compaction.reserveTokens below the window in settings.json (for one model: \
         compaction.modelOverrides) to choose it and silence this\n"
    );
    // Above 2000 - 500: compacted after the run.
    server.push(answer_with_usage("long", 1800));
    server.push(Reply::openai_text(&["Prefix."]).when("first part of a turn"));
    server.push(Reply::openai_text(&["Summary."]).when("<conversation>"));
    let o = run(&w, &[f.to_str().unwrap(), "--json", "-p", "more"]);
    status(&o, 0);
    assert!(out(&o).contains("compaction_end"), "{}", out(&o));
    let rs = server.requests();
    let asked: Vec<u64> = rs[2..]
        .iter()
        .filter(|r| r.text().contains("<conversation>"))
        .map(|r| r.json()["max_completion_tokens"].as_u64().unwrap())
        .collect();
    // The model's output limit (500), as the reference 1.6 asks, which the window leaves
    // room for after these small requests.
    assert!(!asked.is_empty());
    assert!(asked.iter().all(|n| *n == 500), "{asked:?}");
    assert!(lines(&f).iter().any(|e| e["type"] == "compaction"));
}
