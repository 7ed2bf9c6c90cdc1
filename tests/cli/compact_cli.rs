//! `pi compact` and `pi session branch --summarize` against the scripted model server:
//! requests as sent (the serialized conversation, the previous summary of an update, the
//! split turn's prefix, token limits, keys), entries as written, retries, failures that
//! write nothing, the threshold rule for cron, and sessions locked by a running writer.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use pi_agent::compact::text;
use pi_session::append::Appender;
use serde_json::{Value, json};

use crate::common::model_server::{ModelServer, Reply};
use crate::common::*;

const SECRET: &str = "sk-test-secret-4f8a9c";

fn world(server: &ModelServer) -> World {
    let w = World::new();
    w.write(
        "agent/models.json",
        json!({"providers": {
            "mock": {"baseUrl": format!("{}/v1", server.url()), "api": "openai-completions",
                     "apiKey": SECRET,
                     "models": [{"id": "m1", "contextWindow": 100000, "maxTokens": 16000},
                                {"id": "bad", "contextWindow": 100000}]},
            "mockant": {"baseUrl": server.url(), "api": "anthropic-messages", "apiKey": SECRET,
                        "models": [{"id": "claude-mock", "reasoning": true,
                                    "contextWindow": 200000, "maxTokens": 64000}]}
        }})
        .to_string(),
    );
    w
}

/// A copy of a case of tests/fixtures/compact/cases in the world.
fn session(w: &World, case: &str) -> PathBuf {
    let src = fixture(&format!("compact/cases/{case}.jsonl"));
    w.write(&format!("s/{case}.jsonl"), std::fs::read(src).unwrap())
}

fn golden_case(name: &str) -> Value {
    let g: Value =
        serde_json::from_str(&std::fs::read_to_string(fixture("compact/goldens.json")).unwrap())
            .unwrap();
    g["cases"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["name"] == name)
        .unwrap()
        .clone()
}

fn run(w: &World, args: &[&str]) -> std::process::Output {
    w.pi().args(args).output().unwrap()
}

fn out(o: &std::process::Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

fn err(o: &std::process::Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

fn lines(p: &Path) -> Vec<Value> {
    jsonl(&std::fs::read_to_string(p).unwrap())
}

/// The user text of a summary request.
fn prompt(r: &Value) -> String {
    let msgs = r["messages"].as_array().unwrap();
    let user = msgs.iter().find(|m| m["role"] == "user").unwrap();
    match &user["content"] {
        Value::String(s) => s.clone(),
        c => c[0]["text"].as_str().unwrap().to_owned(),
    }
}

#[test]
fn dry_run_prints_the_plan_and_writes_nothing() {
    let server = ModelServer::start();
    let w = world(&server);
    let s = session(&w, "co-c3");
    let before = std::fs::read(&s).unwrap();
    let o = run(
        &w,
        &[
            "compact",
            s.to_str().unwrap(),
            "--dry-run",
            "--keep-recent-tokens",
            "5",
        ],
    );
    assert!(o.status.success(), "{}", err(&o));
    let r = &jsonl(&out(&o))[0];
    assert_eq!(r["dryRun"], true);
    assert_eq!(r["firstKeptEntryId"], "e18");
    assert_eq!(r["splitTurn"], true);
    assert_eq!(r["turnStartEntryId"], "e17");
    assert_eq!(r["tokensBefore"], 900);
    // What stays besides the summary: e18, an answer of 40 characters.
    assert_eq!(r["estimatedTokensAfter"], 10);
    assert_eq!(r["previousCompactionId"], "e10");
    assert_eq!(r["previousSummary"], "S1");
    assert_eq!(r["boundaryStartEntryId"], "e8");
    assert_eq!(
        r["summarize"]["entries"],
        json!(["e8", "e9", "e11", "e12", "e13", "e14", "e15", "e16"])
    );
    assert_eq!(r["turnPrefix"]["entries"], json!(["e17"]));
    assert_eq!(r["keptEntries"], 1);
    assert_eq!(r["readFiles"], json!(["src/a.ts"]));
    assert_eq!(r["modifiedFiles"], json!(["src/b.ts", "src/c.ts"]));
    assert_eq!(r["keepRecentTokens"], 5);
    assert!(server.requests().is_empty());
    assert_eq!(std::fs::read(&s).unwrap(), before);
}

#[test]
fn summary_file_appends_the_entry_without_a_model() {
    let server = ModelServer::start();
    let w = world(&server);
    let s = session(&w, "co-c1");
    let o = w
        .pi()
        .args([
            "compact",
            s.to_str().unwrap(),
            "--summary-file",
            "-",
            "--keep-recent-tokens",
            "15",
        ])
        .write_stdin("## Goal\nFix it\n")
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", err(&o));
    let printed = jsonl(&out(&o));
    let all = lines(&s);
    let e = all.last().unwrap();
    assert_eq!(&printed[0], e, "prints the entry it wrote");
    assert_eq!(e["type"], "compaction");
    assert_eq!(e["parentId"], "e9");
    assert_eq!(e["firstKeptEntryId"], "e8");
    assert_eq!(e["tokensBefore"], 500);
    assert_eq!(
        e["summary"],
        "## Goal\nFix it\n\n<read-files>\nsrc/a.ts\n</read-files>\n\n<modified-files>\nsrc/b.ts\n</modified-files>"
    );
    assert_eq!(
        e["details"],
        json!({"readFiles": ["src/a.ts"], "modifiedFiles": ["src/b.ts"]})
    );
    assert_eq!(e["fromHook"], false);
    let keys: Vec<&str> = e.as_object().unwrap().keys().map(String::as_str).collect();
    assert_eq!(
        keys,
        [
            "type",
            "id",
            "parentId",
            "timestamp",
            "summary",
            "firstKeptEntryId",
            "tokensBefore",
            "details",
            "fromHook"
        ]
    );
    assert!(server.requests().is_empty());
    // The context now starts with the summary, then the kept messages.
    let ctx = jsonl(&w.ok(&["context", "build", s.to_str().unwrap()]));
    assert_eq!(ctx[0]["role"], "compactionSummary");
    assert_eq!(ctx.len(), 3);
    // Compacting again right away: nothing to do.
    let o = run(
        &w,
        &[
            "compact",
            s.to_str().unwrap(),
            "--summary-file",
            "/dev/null",
        ],
    );
    assert_eq!(
        o.status.code(),
        Some(2),
        "an empty summary is invalid input"
    );
    let o = w
        .pi()
        .args(["compact", s.to_str().unwrap(), "--summary-file", "-"])
        .write_stdin("x")
        .output()
        .unwrap();
    // Nothing to compact is a skip (the reference's 1.6): a record, a note, status 0, and
    // 3 with --exit-code; nothing is written.
    assert_eq!(o.status.code(), Some(0), "{}", err(&o));
    assert!(err(&o).contains("already compacted"), "{}", err(&o));
    assert!(err(&o).contains("nothing was written"), "{}", err(&o));
    let rec = &jsonl(&out(&o))[0];
    assert_eq!(rec["compacted"], false);
    assert_eq!(rec["reason"], "already-compacted");
    let before = std::fs::read(&s).unwrap();
    let o = w
        .pi()
        .args([
            "compact",
            s.to_str().unwrap(),
            "--summary-file",
            "-",
            "--exit-code",
        ])
        .write_stdin("x")
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(3));
    assert_eq!(std::fs::read(&s).unwrap(), before);
}

#[test]
fn openai_update_summary_request_and_entry() {
    let server = ModelServer::start();
    let w = world(&server);
    let s = session(&w, "co-c3");
    server.push(Reply::openai_text(&["## Goal\n", "Ship ", "it"]));
    let o = run(
        &w,
        &[
            "compact",
            s.to_str().unwrap(),
            "--model",
            "mock/m1",
            "--keep-recent-tokens",
            "15",
            "--instructions",
            "the parser",
        ],
    );
    assert!(o.status.success(), "{}", err(&o));
    let reqs = server.requests();
    assert_eq!(reqs.len(), 1);
    let r = &reqs[0];
    assert_eq!(r.method, "POST");
    assert_eq!(r.path, "/v1/chat/completions");
    assert_eq!(
        r.header("authorization"),
        Some(format!("Bearer {SECRET}").as_str())
    );
    let b = r.json();
    assert_eq!(b["model"], "m1");
    assert_eq!(b["stream"], true);
    assert_eq!(b["stream_options"], json!({"include_usage": true}));
    assert_eq!(
        b["max_completion_tokens"], 16000,
        "the model's output limit (reference 1.6)"
    );
    assert!(b.get("reasoning_effort").is_none());
    assert_eq!(
        b["messages"][0],
        json!({"role": "system", "content": text::SYSTEM_PROMPT})
    );
    // The update prompt: the new messages, the previous summary, our instructions.
    let conv = golden_case("co-c3")["plans"][0]["conversationText"]
        .as_str()
        .unwrap()
        .to_owned();
    let want = text::request_text(
        &conv,
        Some("S1"),
        &format!("{}{}the parser", text::UPDATE_PROMPT, text::FOCUS_PREFIX),
    );
    assert_eq!(prompt(&b), want);
    assert!(conv.starts_with("[User]: xxxx"));
    assert!(conv.contains("[Assistant tool calls]: write(path=\"src/c.ts\", content=\"c\")"));
    // The entry.
    let e = lines(&s).last().unwrap().clone();
    assert_eq!(jsonl(&out(&o))[0], e);
    assert_eq!(e["type"], "compaction");
    assert_eq!(e["parentId"], "e18");
    assert_eq!(e["firstKeptEntryId"], "e17");
    assert_eq!(e["tokensBefore"], 900);
    assert_eq!(
        e["summary"],
        "## Goal\nShip it\n\n<read-files>\nsrc/a.ts\n</read-files>\n\n<modified-files>\nsrc/b.ts\nsrc/c.ts\n</modified-files>"
    );
    assert_eq!(
        e["details"],
        json!({"readFiles": ["src/a.ts"], "modifiedFiles": ["src/b.ts", "src/c.ts"]})
    );
    assert!(!std::fs::read_to_string(&s).unwrap().contains(SECRET));
}

#[test]
fn split_turn_prefix_is_summarized_at_the_same_time() {
    let server = ModelServer::start();
    let w = world(&server);
    let s = session(&w, "co-c3");
    // Both answers are slow: the second request must arrive before the first answer ends.
    server.push(
        Reply::openai_text(&["PREFIX SUMMARY"])
            .when("first part of a turn")
            .delay(Duration::from_millis(600)),
    );
    server.push(
        Reply::openai_text(&["HISTORY SUMMARY"])
            .when("<previous-summary>")
            .delay(Duration::from_millis(600)),
    );
    let o = run(
        &w,
        &[
            "compact",
            s.to_str().unwrap(),
            "--model",
            "mock/m1",
            "--keep-recent-tokens",
            "5",
        ],
    );
    assert!(o.status.success(), "{}", err(&o));
    let reqs = server.requests();
    assert_eq!(reqs.len(), 2);
    let gap = reqs[1].at.saturating_sub(reqs[0].at);
    assert!(
        gap < Duration::from_millis(500),
        "requests {gap:?} apart: not concurrent"
    );
    let prefix = reqs
        .iter()
        .find(|r| r.text().contains("first part of a turn"))
        .unwrap()
        .json();
    let history = reqs
        .iter()
        .find(|r| r.text().contains("<previous-summary>"))
        .unwrap()
        .json();
    let case = golden_case("co-c3");
    let plan = &case["plans"][1];
    assert_eq!(plan["keep"], 5);
    assert_eq!(
        prompt(&prefix),
        text::request_text(
            plan["prefixTextFull"].as_str().unwrap(),
            None,
            text::TURN_PREFIX_PROMPT
        )
    );
    assert_eq!(
        prompt(&prefix),
        format!(
            "<conversation>\n[User]: {}\n</conversation>\n\n{}",
            "x".repeat(40),
            text::TURN_PREFIX_PROMPT
        )
    );
    assert_eq!(
        prefix["max_completion_tokens"], 16000,
        "the model's output limit (reference 1.6)"
    );
    assert_eq!(
        prompt(&history),
        text::request_text(
            plan["conversationText"].as_str().unwrap(),
            Some("S1"),
            text::UPDATE_PROMPT
        )
    );
    let e = lines(&s).last().unwrap().clone();
    assert_eq!(e["firstKeptEntryId"], "e18");
    assert!(
        e["summary"].as_str().unwrap().starts_with(&format!(
            "HISTORY SUMMARY{}PREFIX SUMMARY\n\n<read-files>",
            text::SPLIT_TURN_SEPARATOR
        )),
        "{}",
        e["summary"]
    );
}

#[test]
fn anthropic_summary_with_the_sessions_thinking_level() {
    let server = ModelServer::start();
    let w = world(&server);
    let s = session(&w, "changes-3.1-repeated");
    // The session's thinking level: appended as an entry.
    w.ok_in(
        &["session", "append", s.to_str().unwrap()],
        r#"{"type":"thinking_level_change","thinkingLevel":"high"}"#,
    );
    w.ok_in(
        &["session", "append", s.to_str().unwrap()],
        &user("one more"),
    );
    server.push(Reply::anthropic_text(&["## Goal\n", "Anthropic"]).split(7));
    let o = run(
        &w,
        &[
            "compact",
            s.to_str().unwrap(),
            "--model",
            "mockant/claude-mock",
            "--keep-recent-tokens",
            "150",
        ],
    );
    assert!(o.status.success(), "{}", err(&o));
    let r = &server.requests()[0];
    assert_eq!(r.path, "/v1/messages");
    assert_eq!(r.header("x-api-key"), Some(SECRET));
    assert_eq!(r.header("anthropic-version"), Some("2023-06-01"));
    assert!(r.header("authorization").is_none());
    let b = r.json();
    assert_eq!(b["model"], "claude-mock");
    assert_eq!(b["system"][0]["text"], text::SYSTEM_PROMPT);
    // reasoning = the session's level (high: a 16384 budget on top of 80% of the reserve).
    assert_eq!(
        b["thinking"],
        json!({"type": "enabled", "budget_tokens": 16384, "display": "summarized"})
    );
    // The model's output limit (reference 1.6), thinking budget included.
    assert_eq!(b["max_tokens"], 64000);
    let p = prompt(&b);
    assert!(
        p.contains("[User]: U2 ") && p.contains("[Assistant]: A3 "),
        "{p}"
    );
    assert!(p.contains("<previous-summary>\nC1 summary\n</previous-summary>"));
    let e = lines(&s).last().unwrap().clone();
    assert_eq!(e["summary"], "## Goal\nAnthropic");
    assert_eq!(e["type"], "compaction");
}

#[test]
fn retries_429_after_the_delay_the_server_asks_for() {
    let server = ModelServer::start();
    let w = world(&server);
    let s = session(&w, "co-c1");
    server.push(
        Reply::status(429, r#"{"error":{"message":"Rate limit reached"}}"#)
            .header("retry-after", "1"),
    );
    server.push(Reply::openai_text(&["done"]).split(5));
    let start = Instant::now();
    let o = run(
        &w,
        &[
            "compact",
            s.to_str().unwrap(),
            "--model",
            "mock/m1",
            "--keep-recent-tokens",
            "15",
        ],
    );
    assert!(o.status.success(), "{}", err(&o));
    let reqs = server.requests();
    assert_eq!(reqs.len(), 2);
    assert!(
        reqs[1].at - reqs[0].at >= Duration::from_millis(990),
        "waited {:?}",
        reqs[1].at - reqs[0].at
    );
    assert!(start.elapsed() >= Duration::from_secs(1));
    insta::assert_snapshot!(w.redact(&err(&o)), @"pi: retrying (1/2) in 1.0 s after: 429 Rate limit reached");
    assert!(
        lines(&s).last().unwrap()["summary"]
            .as_str()
            .unwrap()
            .starts_with("done")
    );
}

#[test]
fn server_errors_are_retried_then_fail_writing_nothing() {
    let server = ModelServer::start();
    let w = world(&server);
    let s = session(&w, "co-c1");
    let before = std::fs::read(&s).unwrap();
    for _ in 0..3 {
        server.push(Reply::status(500, "").header("retry-after-ms", "10"));
    }
    let o = run(
        &w,
        &[
            "compact",
            s.to_str().unwrap(),
            "--model",
            "mock/m1",
            "--keep-recent-tokens",
            "15",
        ],
    );
    assert_eq!(server.requests().len(), 3, "one request and two retries");
    insta::assert_snapshot!(w.shown(&o), @"
    status: 1
    ----- stdout -----
    ----- stderr -----
    pi: retrying (1/2) in 0.0 s after: 500 status code (no body)
    pi: retrying (2/2) in 0.0 s after: 500 status code (no body)
    pi: error: Summarization failed: 500 status code (no body); nothing was written
    ");
    assert_eq!(std::fs::read(&s).unwrap(), before);
    // retry.provider.maxRetries from settings.
    w.write(
        "agent/settings.json",
        r#"{"retry":{"provider":{"maxRetries":0}}}"#,
    );
    server.push(Reply::status(503, r#"{"error":{"message":"down"}}"#));
    let o = run(
        &w,
        &[
            "compact",
            s.to_str().unwrap(),
            "--model",
            "mock/m1",
            "--keep-recent-tokens",
            "15",
        ],
    );
    assert_eq!(server.requests().len(), 4);
    insta::assert_snapshot!(w.shown(&o), @"
    status: 1
    ----- stdout -----
    ----- stderr -----
    pi: error: Summarization failed: 503 down; nothing was written
    ");
}

#[test]
fn client_errors_and_overflow_are_not_retried() {
    let server = ModelServer::start();
    let w = world(&server);
    let s = session(&w, "co-c1");
    let before = std::fs::read(&s).unwrap();
    server.push(Reply::status(
        400,
        r#"{"error":{"code":400,"message":"request (9000 tokens) exceeds the available context size (8192 tokens), try increasing it","type":"exceed_context_size_error"}}"#,
    ));
    let o = run(
        &w,
        &[
            "compact",
            s.to_str().unwrap(),
            "--model",
            "mock/m1",
            "--keep-recent-tokens",
            "15",
        ],
    );
    assert_eq!(server.requests().len(), 1);
    insta::assert_snapshot!(w.shown(&o), @"
    status: 1
    ----- stdout -----
    ----- stderr -----
    pi: error: Summarization failed: 400 request (9000 tokens) exceeds the available context size (8192 tokens), try increasing it; nothing was written
      hint: the summary request is larger than mock/m1 accepts; use --model with a larger context window
    ");
    assert_eq!(std::fs::read(&s).unwrap(), before);
}

#[test]
fn a_stream_cut_off_midway_writes_nothing() {
    let server = ModelServer::start();
    let w = world(&server);
    let s = session(&w, "co-c1");
    let before = std::fs::read(&s).unwrap();
    server.push(Reply::openai_text(&["a long answer that never ends"]).cut_after(300));
    let o = run(
        &w,
        &[
            "compact",
            s.to_str().unwrap(),
            "--model",
            "mock/m1",
            "--keep-recent-tokens",
            "15",
        ],
    );
    assert_eq!(o.status.code(), Some(1), "{}", err(&o));
    assert!(err(&o).contains("Summarization failed: "), "{}", err(&o));
    assert_eq!(std::fs::read(&s).unwrap(), before);
    // Anthropic: a stream that ends (cleanly) without message_stop is incomplete too.
    let full = Reply::anthropic_text(&["partial"]);
    let body = match &full.steps[0] {
        crate::common::model_server::Step::Bytes(b) => String::from_utf8(b.clone()).unwrap(),
        _ => unreachable!(),
    };
    let mut truncated = full.clone();
    truncated.steps = vec![crate::common::model_server::Step::Bytes(
        body.as_bytes()[..body.find("event: message_delta").unwrap()].to_vec(),
    )];
    server.push(truncated);
    let o = run(
        &w,
        &[
            "compact",
            s.to_str().unwrap(),
            "--model",
            "mockant/claude-mock",
            "--keep-recent-tokens",
            "15",
        ],
    );
    assert_eq!(o.status.code(), Some(1));
    assert!(
        err(&o).contains("Anthropic stream ended before message_stop"),
        "{}",
        err(&o)
    );
    assert_eq!(std::fs::read(&s).unwrap(), before);
}

#[test]
fn keys_never_appear_in_output_or_errors() {
    let server = ModelServer::start();
    let w = world(&server);
    let s = session(&w, "co-c1");
    server.push(Reply::status(
        401,
        &format!(r#"{{"error":{{"message":"Incorrect API key provided: {SECRET}"}}}}"#),
    ));
    let o = run(
        &w,
        &[
            "compact",
            s.to_str().unwrap(),
            "--model",
            "mock/m1",
            "--keep-recent-tokens",
            "15",
        ],
    );
    insta::assert_snapshot!(w.shown(&o), @r#"
    status: 1
    ----- stdout -----
    ----- stderr -----
    pi: error: Summarization failed: 401 Incorrect API key provided: [redacted]; nothing was written
      hint: check the API key of provider "mock"
    "#);
    assert!(!err(&o).contains(SECRET) && !out(&o).contains(SECRET));
    // A key in the base URL (some gateways take one there) is cut out of connection errors.
    let w2 = World::new();
    w2.write(
        "agent/models.json",
        json!({"providers": {"gw": {"baseUrl": format!("http://127.0.0.1:9/{SECRET}"), "api": "openai-completions",
            "apiKey": SECRET, "models": [{"id": "x"}]}}})
        .to_string(),
    );
    w2.write(
        "agent/settings.json",
        r#"{"retry":{"provider":{"maxRetries":0}}}"#,
    );
    let s2 = session(&w2, "co-c1");
    let o = run(
        &w2,
        &[
            "compact",
            s2.to_str().unwrap(),
            "--model",
            "gw/x",
            "--keep-recent-tokens",
            "15",
        ],
    );
    assert_eq!(o.status.code(), Some(1));
    assert!(err(&o).contains("Connection error."), "{}", err(&o));
    assert!(!err(&o).contains(SECRET), "{}", err(&o));
    let m = run(&w, &["models", "--json"]);
    assert!(!out(&m).contains(SECRET));
}

#[test]
fn missing_key_and_unknown_model() {
    let server = ModelServer::start();
    let w = world(&server);
    let s = session(&w, "co-c1");
    let s = s.to_str().unwrap();
    // The last: no --model, the session's model (anthropic) has no key, and no default is
    // set.
    let k = ["--keep-recent-tokens", "15"];
    let shown = w.snaps(&[
        &["compact", s, k[0], k[1], "--model", "openai/gpt-4o"],
        &["compact", s, k[0], k[1], "--model", "nope/x"],
        &["compact", s, k[0], k[1]],
    ]);
    insta::assert_snapshot!(shown, @r#"
    $ pi compact [ROOT]/s/co-c1.jsonl --keep-recent-tokens 15 --model openai/gpt-4o
    status: 1
    ----- stdout -----
    ----- stderr -----
    pi: error: no API key for openai/gpt-4o: OPENAI_API_KEY is not set
      hint: set OPENAI_API_KEY in the environment, give provider "openai" an "apiKey" in [AGENT]/models.json, or pick another model with --model PROVIDER/ID

    $ pi compact [ROOT]/s/co-c1.jsonl --keep-recent-tokens 15 --model nope/x
    status: 2
    ----- stdout -----
    ----- stderr -----
    pi: error: unknown model nope/x (not in models.json or the built-in table)
      hint: `pi models --all` lists the models pi knows; define others in [AGENT]/models.json

    $ pi compact [ROOT]/s/co-c1.jsonl --keep-recent-tokens 15
    status: 1
    ----- stdout -----
    ----- stderr -----
    pi: error: no API key for the session's model anthropic/claude-sonnet-4-5: ANTHROPIC_API_KEY is not set
      hint: set ANTHROPIC_API_KEY in the environment, give provider "anthropic" an "apiKey" in [AGENT]/models.json, or pick another model with --model PROVIDER/ID
    "#);
    // defaultProvider/defaultModel from settings.json.
    w.write(
        "agent/settings.json",
        r#"{"defaultProvider":"mock","defaultModel":"m1"}"#,
    );
    server.push(Reply::openai_text(&["by default"]));
    let o = run(&w, &["compact", s, "--keep-recent-tokens", "15"]);
    assert!(o.status.success(), "{}", err(&o));
    assert_eq!(server.requests()[0].json()["model"], "m1");
    assert!(
        server
            .requests()
            .iter()
            .all(|r| r.path == "/v1/chat/completions")
    );
}

#[test]
fn if_needed_follows_the_threshold_rule() {
    let server = ModelServer::start();
    let w = world(&server);
    let s = session(&w, "co-c1");
    // The last usage is 500 tokens: below the session's model's window (anthropic's
    // claude-sonnet-4-5, 200000) − 16384.
    let o = run(
        &w,
        &[
            "compact",
            s.to_str().unwrap(),
            "--if-needed",
            "--model",
            "mock/m1",
        ],
    );
    assert_eq!(o.status.code(), Some(0), "{}", err(&o));
    let r = &jsonl(&out(&o))[0];
    assert_eq!(r["compacted"], false);
    assert_eq!(r["reason"], "below-threshold");
    assert_eq!(r["tokens"], 500);
    assert_eq!(r["contextWindow"], 200000);
    assert_eq!(r["threshold"], 200000 - 16384);
    let o = run(
        &w,
        &[
            "compact",
            s.to_str().unwrap(),
            "--if-needed",
            "--exit-code",
            "--model",
            "mock/m1",
        ],
    );
    assert_eq!(o.status.code(), Some(3));
    // 500 > 1000 − 600: compact.
    server.push(Reply::openai_text(&["needed"]));
    let o = run(
        &w,
        &[
            "compact",
            s.to_str().unwrap(),
            "--if-needed",
            "--model",
            "mock/m1",
            "--context-window",
            "1000",
            "--reserve-tokens",
            "600",
            "--keep-recent-tokens",
            "15",
        ],
    );
    assert!(o.status.success(), "{}", err(&o));
    let e = &jsonl(&out(&o))[0];
    assert_eq!(e["type"], "compaction");
    assert_eq!(server.requests()[0].json()["max_completion_tokens"], 16000);
    // Right after a compaction the usage predates it: not needed.
    let o = run(
        &w,
        &[
            "compact",
            s.to_str().unwrap(),
            "--if-needed",
            "--context-window",
            "1000",
            "--reserve-tokens",
            "600",
        ],
    );
    assert_eq!(jsonl(&out(&o))[0]["reason"], "already-compacted");
    w.ok_in(&["session", "append", s.to_str().unwrap()], &user("next"));
    let o = run(
        &w,
        &[
            "compact",
            s.to_str().unwrap(),
            "--if-needed",
            "--context-window",
            "1000",
            "--reserve-tokens",
            "600",
        ],
    );
    assert_eq!(
        jsonl(&out(&o))[0]["reason"],
        "usage-predates-compaction",
        "{}",
        out(&o)
    );
    // A session without any model, and no default model in settings: skipped, not failed.
    let bare = w.new_session();
    let many: Vec<String> = (0..40)
        .map(|i| user(&format!("message {i} {}", "x".repeat(200))))
        .collect();
    w.ok_in(
        &["session", "append", bare.to_str().unwrap()],
        &many.join("\n"),
    );
    let o = run(&w, &["compact", bare.to_str().unwrap(), "--if-needed"]);
    assert_eq!(o.status.code(), Some(0), "{}", err(&o));
    assert_eq!(jsonl(&out(&o))[0]["reason"], "no-window", "{}", out(&o));
    // With one, its window judges the session.
    w.write(
        "agent/settings.json",
        r#"{"defaultProvider":"anthropic","defaultModel":"claude-sonnet-4-5"}"#,
    );
    let o = run(&w, &["compact", bare.to_str().unwrap(), "--if-needed"]);
    assert_eq!(o.status.code(), Some(0), "{}", err(&o));
    let rec = &jsonl(&out(&o))[0];
    assert_eq!(rec["reason"], "below-threshold", "{}", out(&o));
    assert_eq!(rec["contextWindow"], 200000);
}

#[test]
fn all_if_needed_skips_locked_sessions_and_reports_each() {
    let server = ModelServer::start();
    let w = world(&server);
    w.write(
        "agent/settings.json",
        r#"{"defaultProvider":"mock","defaultModel":"m1","compaction":{"keepRecentTokens":15}}"#,
    );
    let dir = w.agent().join("sessions").join("--tmp-proj--");
    let copy = |case: &str, name: &str| {
        let p = dir.join(name);
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::copy(fixture(&format!("compact/cases/{case}.jsonl")), &p).unwrap();
        p
    };
    let a = copy("co-c1", "a.jsonl");
    let b = copy("co-c1", "b.jsonl");
    let c = copy("co-c1", "c.jsonl");
    let d = copy("co-c2", "d.jsonl");
    // b's summary fails; c is held by a running writer.
    server.push(Reply::openai_text(&["summary of a"]).when("[User]"));
    server.push(Reply::status(400, r#"{"error":{"message":"bad request"}}"#));
    let lock = Appender::open(&c, None).unwrap();
    let before_c = std::fs::read(&c).unwrap();
    let o = run(
        &w,
        &[
            "compact",
            "--all",
            "--if-needed",
            "--context-window",
            "1000",
            "--reserve-tokens",
            "600",
        ],
    );
    drop(lock);
    assert_eq!(o.status.code(), Some(1), "{}", err(&o));
    let mut recs = jsonl(&out(&o));
    assert_eq!(recs.len(), 5, "{}", out(&o));
    // Every record has its time; the last one counts them.
    assert!(recs.iter().all(|r| r["time"] == "2026-01-02T03:04:05.678Z"));
    let summary = recs.pop().unwrap();
    assert_eq!(
        summary,
        json!({"type": "summary", "time": "2026-01-02T03:04:05.678Z",
               "compacted": 1, "skipped": 1, "locked": 1, "failed": 1})
    );
    let by = |p: &Path| {
        recs.iter()
            .find(|r| r["session"] == p.to_str().unwrap())
            .unwrap()
            .clone()
    };
    assert_eq!(by(&a)["compacted"], true);
    assert_eq!(by(&a)["entry"]["type"], "compaction");
    assert_eq!(by(&a)["entry"], lines(&a).last().unwrap().clone());
    assert_eq!(by(&b)["compacted"], false);
    assert!(
        by(&b)["error"]
            .as_str()
            .unwrap()
            .contains("400 bad request")
    );
    assert_eq!(lines(&b).len(), 11, "b unchanged");
    assert_eq!(by(&c)["reason"], "locked");
    assert_eq!(std::fs::read(&c).unwrap(), before_c);
    assert_eq!(by(&d)["reason"], "already-compacted");
    assert_eq!(server.requests().len(), 2);
    assert!(err(&o).contains("1 of 4 sessions failed"));
    // The error line names the session.
    assert!(
        err(&o).contains(&format!(
            "pi: error: cannot compact session {} ({})",
            // The short id: the end of the id.
            &lines(&b)[0]["id"].as_str().unwrap()[28..],
            b.display()
        )),
        "{}",
        err(&o)
    );
}

#[test]
fn a_session_that_moves_on_meanwhile_is_not_written() {
    let server = ModelServer::start();
    let w = world(&server);
    let s = session(&w, "co-c1");
    server.push(Reply::openai_text(&["late"]).delay(Duration::from_millis(1500)));
    let child = w
        .std_cmd()
        .args([
            "compact",
            s.to_str().unwrap(),
            "--model",
            "mock/m1",
            "--keep-recent-tokens",
            "15",
        ])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    server.wait_for(1);
    // The lock is free while the model writes: another writer appends.
    w.ok_in(
        &["session", "append", s.to_str().unwrap()],
        &user("meanwhile"),
    );
    let o = child.wait_with_output().unwrap();
    insta::assert_snapshot!(w.shown(&o), @"
    status: 1
    ----- stdout -----
    ----- stderr -----
    pi: error: the session changed while the summary was written: its leaf moved from e9 to f79e3f6d; nothing was written
      hint: run the command again
    ");
    let all = lines(&s);
    assert_eq!(all.len(), 12);
    assert_eq!(all.last().unwrap()["message"]["content"], "meanwhile");
}

#[test]
fn an_interrupted_summary_writes_nothing() {
    let server = ModelServer::start();
    let w = world(&server);
    let s = session(&w, "co-c1");
    let before = std::fs::read(&s).unwrap();
    server.push(Reply::openai_text(&["never"]).delay(Duration::from_secs(10)));
    let child = w
        .std_cmd()
        .args([
            "compact",
            s.to_str().unwrap(),
            "--model",
            "mock/m1",
            "--keep-recent-tokens",
            "15",
        ])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    server.wait_for(1);
    let killed = std::process::Command::new("kill")
        .args(["-INT", &child.id().to_string()])
        .status()
        .unwrap();
    assert!(killed.success());
    let o = child.wait_with_output().unwrap();
    assert_eq!(o.status.code(), Some(130), "{}", err(&o));
    assert!(err(&o).contains("interrupted; nothing was written"));
    assert_eq!(std::fs::read(&s).unwrap(), before);
}

#[test]
fn leaf_option_compacts_another_branch() {
    let server = ModelServer::start();
    let w = world(&server);
    let s = session(&w, "co-f-tree");
    let o = w
        .pi()
        .args([
            "compact",
            s.to_str().unwrap(),
            "--leaf",
            "b3",
            "--summary-file",
            "-",
            "--keep-recent-tokens",
            "1",
        ])
        .write_stdin("S")
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", err(&o));
    let e = lines(&s).last().unwrap().clone();
    assert_eq!(e["parentId"], "b3", "appended under the compacted leaf");
    assert_eq!(e["firstKeptEntryId"], "b3");
    assert_eq!(e["details"]["modifiedFiles"], json!([]));
}

#[test]
fn branch_summarize_writes_the_branch_summary() {
    let server = ModelServer::start();
    let w = world(&server);
    let s = session(&w, "co-f-tree");
    server.push(Reply::openai_text(&["## Goal\nbranch"]));
    let o = run(
        &w,
        &[
            "session",
            "branch",
            s.to_str().unwrap(),
            "b3",
            "--summarize",
            "--model",
            "mock/m1",
            "--instructions",
            "files",
        ],
    );
    assert!(o.status.success(), "{}", err(&o));
    let b = server.requests()[0].json();
    // The model's output limit, as the reference 1.6 asks for branch summaries too.
    assert_eq!(b["max_completion_tokens"], 16000);
    let case = golden_case("co-f-tree");
    let br = case["branches"]
        .as_array()
        .unwrap()
        .iter()
        .find(|b| b["oldLeaf"] == "b11" && b["target"] == "b3")
        .unwrap()
        .clone();
    // Budget: the model's window (100000) − branchSummary.reserveTokens: everything fits.
    let conv = br["budgets"][0]["conversationText"].as_str().unwrap();
    assert_eq!(
        prompt(&b),
        text::request_text(
            conv,
            None,
            &format!("{}{}files", text::BRANCH_PROMPT, text::FOCUS_PREFIX)
        )
    );
    let e = lines(&s).last().unwrap().clone();
    assert_eq!(jsonl(&out(&o))[0], e);
    assert_eq!(e["type"], "branch_summary");
    assert_eq!(e["parentId"], "b3");
    // The leaf that was left (the reference 1.6), and what the request used.
    assert_eq!(e["fromId"], "b11");
    assert!(e["usage"]["totalTokens"].as_u64().is_some(), "{e}");
    let keys: Vec<&str> = e.as_object().unwrap().keys().map(String::as_str).collect();
    assert_eq!(
        &keys[keys.len() - 2..],
        ["usage", "fromHook"],
        "usage before fromHook, as 1.6 writes it"
    );
    assert_eq!(
        e["summary"],
        format!(
            "{}## Goal\nbranch\n\n<read-files>\nr.ts\n</read-files>\n\n<modified-files>\nm.ts\nw2.ts\n</modified-files>",
            text::BRANCH_PREAMBLE
        )
    );
    assert_eq!(
        e["details"],
        json!({"readFiles": ["r.ts"], "modifiedFiles": ["m.ts", "w2.ts"]})
    );
    assert_eq!(e["fromHook"], false);
    // Moving to a descendant of the leaf leaves nothing behind: a plain branch entry.
    let o = run(
        &w,
        &[
            "session",
            "branch",
            s.to_str().unwrap(),
            e["id"].as_str().unwrap(),
            "--summarize",
            "--model",
            "mock/m1",
        ],
    );
    assert!(o.status.success(), "{}", err(&o));
    assert_eq!(lines(&s).last().unwrap()["customType"], "branch");
    assert_eq!(server.requests().len(), 1);
}

#[test]
fn branch_summarize_failure_writes_nothing() {
    let server = ModelServer::start();
    let w = world(&server);
    w.write(
        "agent/settings.json",
        r#"{"retry":{"provider":{"maxRetries":0}}}"#,
    );
    let s = session(&w, "co-f-tree");
    let before = std::fs::read(&s).unwrap();
    server.push(Reply::status(
        500,
        r#"{"error":{"message":"the model is down"}}"#,
    ));
    let o = run(
        &w,
        &[
            "session",
            "branch",
            s.to_str().unwrap(),
            "b3",
            "--summarize",
            "--model",
            "mock/m1",
        ],
    );
    assert_eq!(o.status.code(), Some(1), "{}", err(&o));
    assert!(err(&o).contains("the model is down"), "{}", err(&o));
    assert!(!err(&o).contains(SECRET));
    assert_eq!(std::fs::read(&s).unwrap(), before);
    assert!(out(&o).is_empty());
}

/// `--all --cwd DIR` walks only the sessions of that directory.
#[test]
fn all_with_cwd_walks_one_directory() {
    let server = ModelServer::start();
    let w = world(&server);
    let here = w.path("here");
    let there = w.path("there");
    std::fs::create_dir_all(&here).unwrap();
    std::fs::create_dir_all(&there).unwrap();
    let mk = |dir: &Path| {
        PathBuf::from(
            w.ok(&["session", "new", "--cwd", dir.to_str().unwrap()])
                .trim(),
        )
    };
    let a = mk(&here);
    let b = mk(&there);
    let o = run(
        &w,
        &[
            "compact",
            "--all",
            "--cwd",
            here.to_str().unwrap(),
            "--dry-run",
            "--model",
            "mock/m1",
        ],
    );
    let recs = jsonl(&out(&o));
    assert_eq!(recs.len(), 2, "{}", out(&o));
    assert_eq!(recs[1]["type"], "summary");
    assert_eq!(recs[1]["skipped"], 1);
    assert_eq!(recs[0]["session"], a.to_str().unwrap());
    assert_eq!(recs[0]["reason"], "too-small");
    let o = run(&w, &["compact", "--all", "--dry-run", "--model", "mock/m1"]);
    let sessions: Vec<String> = jsonl(&out(&o))
        .iter()
        .filter(|r| r["type"] != "summary")
        .map(|r| r["session"].as_str().unwrap().to_owned())
        .collect();
    assert!(sessions.contains(&b.to_string_lossy().into_owned()));
    assert_eq!(sessions.len(), 2);
    assert!(server.requests().is_empty());
}

/// History older than a summary request can carry is left out of it, oldest first (and the
/// request says so); the dry run counts what is left out. Memory follows the request, not
/// the session.
#[test]
fn history_beyond_the_summary_window_is_left_out() {
    let server = ModelServer::start();
    let w = world(&server);
    // A small window: 20000 - reserve 16384 = 3616 tokens, raised to the floor of 4096.
    let mut models: Value =
        serde_json::from_str(&std::fs::read_to_string(w.path("agent/models.json")).unwrap())
            .unwrap();
    models["providers"]["mock"]["models"]
        .as_array_mut()
        .unwrap()
        .push(json!({"id": "small", "contextWindow": 20000, "maxTokens": 2000}));
    w.write("agent/models.json", models.to_string());
    let s = w.new_session();
    // 60 turns of 1000 characters each way: about 30000 tokens.
    let mut input = String::new();
    for i in 0..60 {
        input.push_str(&format!(
            "{}\n{}\n",
            json!({"role": "user", "content": format!("question {i} {}", "q".repeat(1000))}),
            json!({"role": "assistant", "content": [{"type": "text", "text": format!("answer {i} {}", "a".repeat(1000))}],
                   "api": "openai-completions", "provider": "mock", "model": "small",
                   "usage": {"input": 1, "output": 1, "cacheRead": 0, "cacheWrite": 0}, "stopReason": "stop"}),
        ));
    }
    w.ok_in(&["session", "append", s.to_str().unwrap()], &input);
    let dry = run(&w, &["compact", s.to_str().unwrap(), "--dry-run"]);
    assert!(dry.status.success(), "{}", err(&dry));
    let r = &jsonl(&out(&dry))[0];
    let all = r["summarize"]["messages"].as_u64().unwrap();
    let omitted = r["summarize"]["omitted"].as_u64().unwrap();
    assert_eq!(all, 40, "{r}");
    assert!(omitted > 0 && omitted < all, "{r}");
    assert_eq!(
        r["summarize"]["entries"].as_array().unwrap().len() as u64,
        all
    );
    server.push(Reply::openai_text(&["short"]));
    let o = run(&w, &["compact", s.to_str().unwrap()]);
    assert!(o.status.success(), "{}", err(&o));
    let p = prompt(&server.requests()[0].json());
    assert!(
        p.starts_with(&format!(
            "<conversation>\n[{omitted} older messages of this part did not fit"
        )),
        "{}",
        &p[..200]
    );
    // The newest summarized turn is there, the oldest is not.
    assert!(!p.contains("question 0 "));
    let kept = all - omitted;
    assert!(p.matches("[User]: question").count() as u64 <= kept);
    assert!(p.len() < 4096 * 4 + 4000, "{}", p.len());
}

/// A port on 127.0.0.1 where nothing listens: every connection is refused.
fn closed_port() -> u16 {
    let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    l.local_addr().unwrap().port()
}

/// From cron: `--quiet` prints records only for the sessions compacted, locked or failed,
/// then the summary record; each record has its time.
#[test]
fn all_quiet_prints_what_changed_and_a_summary() {
    let server = ModelServer::start();
    let w = world(&server);
    w.write(
        "agent/settings.json",
        r#"{"defaultProvider":"mock","defaultModel":"m1","compaction":{"keepRecentTokens":15}}"#,
    );
    let dir = w.agent().join("sessions").join("--tmp-proj--");
    std::fs::create_dir_all(&dir).unwrap();
    let copy = |case: &str, name: &str| {
        let p = dir.join(name);
        std::fs::copy(fixture(&format!("compact/cases/{case}.jsonl")), &p).unwrap();
        p
    };
    let a = copy("co-c1", "a.jsonl");
    copy("co-c2", "b.jsonl");
    let c = copy("co-c1", "c.jsonl");
    let lock = Appender::open(&c, None).unwrap();
    server.push(Reply::openai_text(&["summary of a"]));
    let o = run(
        &w,
        &[
            "compact",
            "--all",
            "--if-needed",
            "--quiet",
            "--context-window",
            "1000",
            "--reserve-tokens",
            "600",
        ],
    );
    drop(lock);
    assert_eq!(o.status.code(), Some(0), "{}", err(&o));
    // The locked session is skipped quietly, as the one below the threshold.
    let recs = jsonl(&out(&o));
    assert_eq!(recs.len(), 2, "{}", out(&o));
    assert_eq!(recs[0]["session"], a.to_str().unwrap());
    assert_eq!(recs[0]["compacted"], true);
    assert_eq!(
        recs[1],
        json!({"type": "summary", "time": "2026-01-02T03:04:05.678Z",
               "compacted": 1, "skipped": 1, "locked": 1, "failed": 0})
    );
    assert!(recs.iter().all(|r| r["time"] == "2026-01-02T03:04:05.678Z"));
    // Again, c no longer locked: c's record and the summary.
    server.push(Reply::openai_text(&["summary of c"]));
    let args = [
        "compact",
        "--all",
        "--if-needed",
        "-q",
        "--context-window",
        "1000",
        "--reserve-tokens",
        "600",
    ];
    let o = run(&w, &args);
    assert_eq!(o.status.code(), Some(0), "{}", err(&o));
    let recs = jsonl(&out(&o));
    assert_eq!(recs.len(), 2, "{}", out(&o));
    assert_eq!(recs[0]["session"], c.to_str().unwrap());
    assert_eq!(recs[1]["compacted"], 1);
    assert_eq!(recs[1]["skipped"], 2);
    // Nothing to do: nothing at all, for cron; without --quiet, every record.
    let o = run(&w, &args);
    assert_eq!(o.status.code(), Some(0), "{}", err(&o));
    assert_eq!(out(&o), "");
    assert_eq!(err(&o), "");
    let loud: Vec<&str> = args.iter().copied().filter(|a| *a != "-q").collect();
    let o = run(&w, &loud);
    let recs = jsonl(&out(&o));
    assert_eq!(recs.len(), 4, "{}", out(&o));
    assert_eq!(recs[3]["skipped"], 3);
    // --quiet is for --all.
    let o = run(&w, &["compact", "--quiet"]);
    assert_eq!(o.status.code(), Some(2));
}

/// When the model is down, a cron run does not try every session: after 3 sessions in a
/// row whose model could not be reached, the rest are reported as not attempted, and the
/// run exits 1. Retry and error lines name the session.
#[test]
fn all_stops_after_three_connection_failures_in_a_row() {
    let w = World::new();
    w.write(
        "agent/models.json",
        json!({"providers": {"down": {
            "baseUrl": format!("http://127.0.0.1:{}/v1", closed_port()),
            "api": "openai-completions", "apiKey": SECRET,
            "models": [{"id": "m1", "contextWindow": 100000, "maxTokens": 16000}]}}})
        .to_string(),
    );
    w.write(
        "agent/settings.json",
        r#"{"defaultProvider":"down","defaultModel":"m1","compaction":{"keepRecentTokens":15},
            "retry":{"provider":{"maxRetries":1}}}"#,
    );
    let dir = w.agent().join("sessions").join("--tmp-proj--");
    std::fs::create_dir_all(&dir).unwrap();
    let mut paths = Vec::new();
    for (i, name) in ["a", "b", "c", "d", "e"].iter().enumerate() {
        let p = dir.join(format!("{name}.jsonl"));
        let mut text = std::fs::read_to_string(fixture("compact/cases/co-c1.jsonl")).unwrap();
        // Distinct session ids, so that the lines naming them can be told apart.
        let id = format!("0000000{i}-0000-7000-8000-00000000000{i}");
        let mut header: Value = serde_json::from_str(text.lines().next().unwrap()).unwrap();
        let old = header["id"].as_str().unwrap().to_owned();
        header["id"] = id.clone().into();
        text = text.replacen(&format!("\"id\":\"{old}\""), &format!("\"id\":\"{id}\""), 1);
        std::fs::write(&p, text).unwrap();
        paths.push(p);
    }
    let before: Vec<Vec<u8>> = paths.iter().map(|p| std::fs::read(p).unwrap()).collect();
    let o = run(
        &w,
        &[
            "compact",
            "--all",
            "--if-needed",
            "--quiet",
            "--context-window",
            "1000",
            "--reserve-tokens",
            "600",
        ],
    );
    assert_eq!(o.status.code(), Some(1), "{}", err(&o));
    let recs = jsonl(&out(&o));
    assert_eq!(recs.len(), 6, "{}", out(&o));
    for r in &recs[..3] {
        assert_eq!(r["compacted"], false);
        assert!(
            r["error"].as_str().unwrap().contains("Connection error."),
            "{r}"
        );
    }
    for r in &recs[3..5] {
        assert_eq!(r["reason"], "not-attempted", "{r}");
    }
    assert_eq!(recs[4]["session"], paths[4].to_str().unwrap());
    assert_eq!(
        recs[5],
        json!({"type": "summary", "time": "2026-01-02T03:04:05.678Z", "compacted": 0,
               "skipped": 0, "locked": 0, "failed": 3, "notAttempted": 2})
    );
    let e = err(&o);
    for short in ["00000000", "00000001", "00000002"] {
        assert!(
            e.contains(&format!("pi: session {short}: retrying (1/1) in ")),
            "{e}"
        );
        assert!(
            e.contains(&format!("pi: error: cannot compact session {short} (")),
            "{e}"
        );
    }
    assert!(!e.contains("session 00000003"), "{e}");
    assert!(e.contains("2 of 5 sessions not attempted"), "{e}");
    let after: Vec<Vec<u8>> = paths.iter().map(|p| std::fs::read(p).unwrap()).collect();
    assert_eq!(before, after, "nothing written");
}

/// A window not above reserveTokens (16384 by default): a quarter of it is reserved, with
/// one warning per run however many sessions; a summary request never asks more output
/// tokens than the model's maxTokens.
#[test]
fn small_windows_reserve_a_quarter_and_respect_max_tokens() {
    let server = ModelServer::start();
    let w = world(&server);
    let mut models: Value =
        serde_json::from_str(&std::fs::read_to_string(w.path("agent/models.json")).unwrap())
            .unwrap();
    models["providers"]["mock"]["models"]
        .as_array_mut()
        .unwrap()
        .push(json!({"id": "tiny", "contextWindow": 8192, "maxTokens": 1000}));
    w.write("agent/models.json", models.to_string());
    w.write(
        "agent/settings.json",
        r#"{"defaultProvider":"mock","defaultModel":"tiny","compaction":{"keepRecentTokens":15}}"#,
    );
    let dir = w.agent().join("sessions").join("--tmp-proj--");
    std::fs::create_dir_all(&dir).unwrap();
    for name in ["a", "b"] {
        std::fs::copy(
            fixture("compact/cases/co-c1.jsonl"),
            dir.join(format!("{name}.jsonl")),
        )
        .unwrap();
    }
    server.push(Reply::openai_text(&["one"]));
    server.push(Reply::openai_text(&["two"]));
    let o = run(&w, &["compact", "--all", "--context-window", "8192"]);
    assert_eq!(o.status.code(), Some(0), "{}", err(&o));
    let e = err(&o);
    assert_eq!(
        e.matches(
            "reserveTokens 16384 is not below the context window (8192 tokens); \
             using a quarter of the window (2048)"
        )
        .count(),
        1,
        "{e}"
    );
    let reqs = server.requests();
    assert_eq!(reqs.len(), 2);
    for r in &reqs {
        // 80% of 2048 is 1638, above tiny's maxTokens.
        assert_eq!(r.json()["max_completion_tokens"], 1000);
    }
    // One session, a large window: 80% of the configured reserve, capped the same way.
    let s = session(&w, "co-c3");
    server.push(Reply::openai_text(&["three"]));
    let o = run(
        &w,
        &["compact", s.to_str().unwrap(), "--model", "mock/tiny"],
    );
    assert_eq!(o.status.code(), Some(0), "{}", err(&o));
    assert_eq!(server.requests()[2].json()["max_completion_tokens"], 1000);
}

/// A session with system messages (the reference 1.6's prompt checkpoints), compacted by the
/// model: the entry carries the summary request's `usage` and the prompt and tools in effect
/// as `systemMessage`, stamped with the entry's time; the context then starts with it.
#[test]
fn the_entry_carries_usage_and_the_system_checkpoint() {
    let server = ModelServer::start();
    let w = world(&server);
    let f = w.new_session();
    let f = f.to_str().unwrap();
    let read = json!({"name": "read", "description": "Read a file", "parameters": {}});
    let grep = json!({"name": "grep", "description": "Search", "parameters": {}});
    let lines_in = [
        json!({"role": "system", "content": "", "sections": {"preamble": "Be careful.", "cwd": "/w"}, "toolsAdded": [read], "timestamp": 5}),
        json!({"role": "user", "content": "First question, with some words in it."}),
        serde_json::from_str(&assistant("First answer, also with some words.")).unwrap(),
        json!({"role": "system", "content": "", "sections": {"cwd": null, "skills": "<skills/>"}, "toolsAdded": [grep], "toolsRemoved": [{"name": "read"}]}),
        json!({"role": "user", "content": "Second question."}),
        serde_json::from_str(&assistant("Second answer.")).unwrap(),
    ];
    let body: Vec<String> = lines_in.iter().map(Value::to_string).collect();
    w.ok_in(&["session", "append", f], &body.join("\n"));
    server.push(Reply::openai_text(&["## Goal\n", "Answer questions"]));
    let o = run(
        &w,
        &[
            "compact",
            f,
            "--model",
            "mock/m1",
            "--keep-recent-tokens",
            "5",
        ],
    );
    assert!(o.status.success(), "{}", err(&o));
    let e = lines(Path::new(f)).last().unwrap().clone();
    assert_eq!(e["type"], "compaction");
    // openai_text reports 120 prompt and 30 completion tokens.
    assert_eq!(e["usage"]["input"], 120);
    assert_eq!(e["usage"]["output"], 30);
    assert_eq!(e["usage"]["totalTokens"], 150);
    let ts = e["timestamp"].as_str().unwrap();
    let ms = pi_base::clock::parse_iso(ts).unwrap();
    assert_eq!(
        e["systemMessage"],
        json!({"role": "system", "content": "",
               "sections": {"preamble": "Be careful.", "skills": "<skills/>"},
               "toolsAdded": [grep], "timestamp": ms})
    );
    let keys: Vec<&str> = e.as_object().unwrap().keys().map(String::as_str).collect();
    assert_eq!(
        keys[keys.len() - 4..],
        ["details", "usage", "fromHook", "systemMessage"]
    );
    // The context: the checkpoint, the summary, then what was kept (without its system
    // messages).
    let c = jsonl(&w.ok(&["context", "build", f]));
    assert_eq!(c[0], e["systemMessage"]);
    assert_eq!(c[1]["role"], "compactionSummary");
    assert!(c[2..].iter().all(|m| m["role"] != "system"), "{c:?}");
}

/// A summary cut off by the model's output limit is not saved.
#[test]
fn a_summary_cut_off_at_the_output_limit_writes_nothing() {
    let server = ModelServer::start();
    let w = world(&server);
    let s = session(&w, "co-c3");
    let before = std::fs::read(&s).unwrap();
    let chunks = [
        json!({"id": "c", "choices": [{"index": 0, "delta": {"role": "assistant", "content": "## Goal\nPart"}}]}),
        json!({"id": "c", "choices": [{"index": 0, "delta": {}, "finish_reason": "length"}]}),
    ];
    server.push(Reply::openai_chunks(&chunks));
    let o = run(
        &w,
        &[
            "compact",
            s.to_str().unwrap(),
            "--model",
            "mock/m1",
            "--keep-recent-tokens",
            "15",
        ],
    );
    assert_eq!(o.status.code(), Some(1), "{}", err(&o));
    assert!(err(&o).contains("output limit"), "{}", err(&o));
    assert_eq!(std::fs::read(&s).unwrap(), before, "nothing written");
}

/// `compaction.modelOverrides["provider/modelId"]` (the reference 1.6) sets `reserveTokens`
/// and `keepRecentTokens` for the session's model: before the ordinary settings, after the
/// options; an entry for another model changes nothing.
#[test]
fn compaction_model_overrides_set_the_reserves_of_their_model() {
    let server = ModelServer::start();
    let w = world(&server);
    let s = session(&w, "co-c1");
    let path = s.to_str().unwrap();
    let below = |w: &World, extra: &[&str]| {
        let mut args = vec!["compact", path, "--if-needed", "--model", "mock/m1"];
        args.extend_from_slice(extra);
        let o = run(w, &args);
        assert_eq!(o.status.code(), Some(0), "{}", err(&o));
        jsonl(&out(&o)).remove(0)
    };
    w.write(
        "agent/settings.json",
        r#"{"compaction": {"reserveTokens": 20000, "keepRecentTokens": 9,
            "modelOverrides": {"mock/m1": {"reserveTokens": 5}, "anthropic/claude-sonnet-4-5": {"reserveTokens": 100000}}}}"#,
    );
    let r = below(&w, &[]);
    assert_eq!(r["reason"], "below-threshold");
    assert_eq!(r["threshold"], 200000 - 100000);
    assert_eq!(
        below(&w, &["--reserve-tokens", "1000"])["threshold"],
        199000
    );
    // The project's settings merge over the user's at every depth before the lookup: an
    // entry that sets only keepRecentTokens keeps the user's reserveTokens.
    w.write(
        "proj/.pi/settings.json",
        r#"{"compaction": {"modelOverrides": {"anthropic/claude-sonnet-4-5": {"keepRecentTokens": 3}}}}"#,
    );
    assert_eq!(below(&w, &[])["threshold"], 100000);
    w.write(
        "proj/.pi/settings.json",
        r#"{"compaction": {"modelOverrides": {"anthropic/claude-sonnet-4-5": {"reserveTokens": 150000}}}}"#,
    );
    assert_eq!(below(&w, &[])["threshold"], 50000);
    // Only the exact provider/modelId counts.
    w.write(
        "proj/.pi/settings.json",
        r#"{"compaction": {"modelOverrides": {"anthropic/claude-sonnet-4": {"reserveTokens": 150000}}}}"#,
    );
    w.write(
        "agent/settings.json",
        r#"{"compaction": {"reserveTokens": 20000}}"#,
    );
    assert_eq!(below(&w, &[])["threshold"], 180000);
    // keepRecentTokens, seen in a dry run.
    let s3 = session(&w, "co-c3");
    w.write(
        "agent/settings.json",
        r#"{"compaction": {"keepRecentTokens": 9000,
            "modelOverrides": {"anthropic/claude-sonnet-4-5": {"keepRecentTokens": 5}}}}"#,
    );
    let dry = |extra: &[&str]| {
        let mut args = vec!["compact", s3.to_str().unwrap(), "--dry-run"];
        args.extend_from_slice(extra);
        let o = run(&w, &args);
        assert!(o.status.success(), "{}", err(&o));
        jsonl(&out(&o)).remove(0)
    };
    let r = dry(&[]);
    assert_eq!(r["keepRecentTokens"], 5);
    assert_eq!(r["firstKeptEntryId"], "e18");
    assert_eq!(dry(&["--keep-recent-tokens", "7"])["keepRecentTokens"], 7);
    assert!(server.requests().is_empty());
}

/// A reserve that cannot work with the window is said once per run, with the fix.
#[test]
fn an_impossible_reserve_is_reported_once_per_run() {
    let server = ModelServer::start();
    let w = world(&server);
    let dir = w.agent().join("sessions").join("--tmp-proj--");
    std::fs::create_dir_all(&dir).unwrap();
    for name in ["a.jsonl", "b.jsonl", "c.jsonl"] {
        std::fs::copy(fixture("compact/cases/co-c1.jsonl"), dir.join(name)).unwrap();
    }
    let o = run(
        &w,
        &[
            "compact",
            "--all",
            "--if-needed",
            "--quiet",
            "--context-window",
            "100000",
            "--reserve-tokens",
            "200000",
        ],
    );
    assert_eq!(o.status.code(), Some(0), "{}", err(&o));
    let e = err(&o);
    assert_eq!(
        e.matches("is not below the context window").count(),
        1,
        "{e}"
    );
    assert!(
        e.contains("set compaction.reserveTokens below the window"),
        "{e}"
    );
}
