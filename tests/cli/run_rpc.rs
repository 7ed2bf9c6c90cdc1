//! `pi run --rpc`: a test client drives the agent over stdin/stdout JSONL against the
//! scripted model server: prompts, steering mid-run, follow-ups, abort, compaction, state
//! and messages, model and thinking changes, errors, and end of input.

use std::io::{BufRead, BufReader, Write};
use std::process::{Child, ChildStdin, ChildStdout, Stdio};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use crate::common::model_server::{ModelServer, Reply};
use crate::common::*;
use crate::run_support::*;

pub struct Client {
    child: Child,
    stdin: Option<ChildStdin>,
    out: BufReader<ChildStdout>,
    /// Every line read so far.
    pub seen: Vec<Value>,
}

impl Client {
    pub fn start(w: &World, args: &[&str]) -> Client {
        let mut child = w
            .std_cmd()
            .arg("run")
            .arg("--rpc")
            .args(args)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .unwrap();
        let stdin = child.stdin.take();
        let out = BufReader::new(child.stdout.take().unwrap());
        Client {
            child,
            stdin,
            out,
            seen: Vec::new(),
        }
    }

    pub fn send(&mut self, v: Value) {
        let s = self.stdin.as_mut().unwrap();
        writeln!(s, "{v}").unwrap();
        s.flush().unwrap();
    }

    pub fn send_raw(&mut self, raw: &[u8]) {
        let s = self.stdin.as_mut().unwrap();
        s.write_all(raw).unwrap();
        s.flush().unwrap();
    }

    /// Reads lines until one satisfies `f`; returns it.
    pub fn until(&mut self, f: impl Fn(&Value) -> bool) -> Value {
        loop {
            let mut line = String::new();
            let n = self.out.read_line(&mut line).unwrap();
            assert!(n > 0, "the output ended; seen: {:#?}", self.seen);
            let v: Value = serde_json::from_str(line.trim())
                .unwrap_or_else(|e| panic!("not JSON: {line:?}: {e}"));
            if std::env::var_os("RPC_TRACE").is_some() {
                eprintln!("<< {}", line.trim());
            }
            self.seen.push(v.clone());
            if f(&v) {
                return v;
            }
        }
    }

    /// The response to the command with this id.
    pub fn response(&mut self, id: &str) -> Value {
        self.until(|v| v["type"] == "response" && v["id"] == id)
    }

    /// Sends a command and waits for its response.
    pub fn call(&mut self, id: &str, mut cmd: Value) -> Value {
        cmd["id"] = json!(id);
        self.send(cmd);
        self.response(id)
    }

    pub fn agent_end(&mut self) -> Value {
        self.until(|v| v["type"] == "agent_end")
    }

    /// Waits until no prompt runs (the `agent_end` hooks of a run still belong to it).
    pub fn idle(&mut self) {
        let start = Instant::now();
        for k in 0.. {
            let id = format!("idle{k}");
            let st = self.call(&id, json!({"type": "get_state"}));
            if st["data"]["isStreaming"] == false {
                return;
            }
            assert!(start.elapsed() < Duration::from_secs(10), "still busy");
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    /// Closes stdin and waits for the exit status; returns it and the rest of the output.
    pub fn close(mut self) -> (i32, Vec<Value>) {
        drop(self.stdin.take());
        let start = Instant::now();
        loop {
            if let Some(s) = self.child.try_wait().unwrap() {
                let mut rest = String::new();
                std::io::Read::read_to_string(&mut self.out, &mut rest).unwrap();
                return (s.code().unwrap_or(-1), jsonl(&rest));
            }
            assert!(start.elapsed() < Duration::from_secs(10), "pi did not exit");
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

#[test]
fn prompt_state_messages_and_end_of_input() {
    let server = ModelServer::start();
    let w = world(&server);
    server.push(Reply::openai_text(&["Hello ", "there."]));
    let mut c = Client::start(&w, &[]);
    let state = c.call("s0", json!({"type": "get_state"}));
    assert_eq!(state["success"], true);
    assert_eq!(state["command"], "get_state");
    let d = &state["data"];
    assert_eq!(d["model"]["provider"], "mock");
    assert_eq!(d["model"]["id"], "m1");
    assert_eq!(d["isStreaming"], false);
    assert_eq!(d["messageCount"], 0);
    assert_eq!(d["steeringMode"], "one-at-a-time");
    let file = d["sessionFile"].as_str().unwrap().to_owned();
    assert!(d["sessionId"].as_str().unwrap().len() == 36);

    let r = c.call("p1", json!({"type": "prompt", "message": "hi"}));
    assert_eq!(
        r,
        json!({"id": "p1", "type": "response", "command": "prompt", "success": true,
               "data": {"disposition": "started"}})
    );
    let end = c.agent_end();
    // The prompt and tools recorded at the session's first request, the prompt, the answer.
    assert_eq!(end["messages"].as_array().unwrap().len(), 3);
    assert_eq!(end["messages"][0]["role"], "system");
    let kinds = kinds(&c.seen);
    let first_event = kinds.iter().position(|k| k == "agent_start").unwrap();
    let response = kinds.iter().position(|k| k == "response").unwrap();
    assert!(response < first_event + 2, "{kinds:?}");
    assert!(kinds.contains(&"message_update".to_owned()));

    let m = c.call("m", json!({"type": "get_messages"}));
    let msgs = m["data"]["messages"].as_array().unwrap();
    assert_eq!(roles(msgs), ["system", "user", "assistant"]);
    assert_eq!(text(&msgs[2]), "Hello there.");
    let stats = c.call("st", json!({"type": "get_session_stats"}));
    let d = &stats["data"];
    assert_eq!(
        (
            d["userMessages"].clone(),
            d["assistantMessages"].clone(),
            d["totalMessages"].clone()
        ),
        // Every message entry counts, the recorded system message too (as in 1.6).
        (json!(1), json!(1), json!(3))
    );
    assert_eq!(d["sessionFile"], file.as_str());
    assert_eq!(d["contextUsage"]["contextWindow"], 100000);
    let t = c.call("t", json!({"type": "get_last_assistant_text"}));
    assert_eq!(t["data"]["text"], "Hello there.");
    let (code, rest) = c.close();
    assert_eq!(code, 0, "{rest:?}");
    let f = std::path::PathBuf::from(file);
    assert_eq!(roles(&messages(&f)), ["user", "assistant"]);
    check(&w, &f);
}

/// A steering message sent while a tool runs is delivered after the tool batch and
/// `turn_end`, before the next answer; a follow-up waits until the agent would stop.
#[test]
fn steer_and_follow_up_mid_run() {
    let server = ModelServer::start();
    let w = world(&server);
    server.push(tool_calls(&[(
        "c1",
        "bash",
        r#"{"command":"sleep 0.8; echo slow"}"#,
    )]));
    server.push(Reply::openai_text(&["Steered."]).when("STEER: check b too"));
    server.push(Reply::openai_text(&["Followed."]).when("FOLLOW: then stop"));
    let mut c = Client::start(&w, &[]);
    c.call(
        "p",
        json!({"type": "prompt", "message": "run the slow thing"}),
    );
    c.until(|v| v["type"] == "tool_execution_start");
    let r = c.call(
        "s",
        json!({"type": "steer", "message": "STEER: check b too"}),
    );
    assert_eq!(r["success"], true);
    let r = c.call(
        "f",
        json!({"type": "follow_up", "message": "FOLLOW: then stop"}),
    );
    assert_eq!(r["success"], true);
    let busy = c.call("st", json!({"type": "get_state"}));
    assert_eq!(busy["data"]["isStreaming"], true);
    assert_eq!(busy["data"]["pendingMessageCount"], 2);
    // A prompt without a streaming behaviour is refused while busy; with one it queues.
    let r = c.call("p2", json!({"type": "prompt", "message": "again"}));
    assert_eq!(r["success"], false);
    assert!(r["error"].as_str().unwrap().contains("streamingBehavior"));
    // A change of the session's settings waits for the run (answered after it).
    c.send(json!({"type": "set_session_name", "name": "later", "id": "name"}));
    c.agent_end();
    let r = c.response("name");
    assert_eq!(r["success"], true);
    let order: Vec<String> = kinds(&c.seen)
        .into_iter()
        .filter(|k| {
            k.starts_with("tool_execution_end")
                || k == "turn_end"
                || k == "message_start:user"
                || k == "queue_update"
        })
        .collect();
    assert_eq!(
        order,
        [
            "message_start:user", // the prompt
            "queue_update",       // steer queued
            "queue_update",       // follow-up queued
            "tool_execution_end",
            "turn_end",
            "message_start:user", // STEER
            "queue_update",
            "turn_end",
            "message_start:user", // FOLLOW
            "queue_update",
            "turn_end"
        ]
    );
    let last_update = c
        .seen
        .iter()
        .rev()
        .find(|v| v["type"] == "queue_update")
        .unwrap();
    assert_eq!(last_update["steering"], json!([]));
    assert_eq!(last_update["followUp"], json!([]));
    let (code, _) = c.close();
    assert_eq!(code, 0);
    let f = session_file(&w);
    let texts: Vec<String> = messages(&f).iter().map(text).collect();
    assert_eq!(
        texts,
        [
            "run the slow thing",
            "",
            "slow\n",
            "STEER: check b too",
            "Steered.",
            "FOLLOW: then stop",
            "Followed."
        ]
    );
    check(&w, &f);
}

/// `abort` stops the streaming answer (recorded as aborted) and is answered when the run
/// has stopped; the next prompt works.
#[test]
fn abort_then_prompt_again() {
    let server = ModelServer::start();
    let w = world(&server);
    server.push(
        Reply::openai_text(&["Partial ", "answer ", "that never ends"])
            .stall_at("that never ends", Duration::from_secs(20)),
    );
    server.push(Reply::openai_text(&["Second answer."]));
    let mut c = Client::start(&w, &[]);
    c.call("p", json!({"type": "prompt", "message": "write a lot"}));
    c.until(|v| v["type"] == "message_update");
    let t = Instant::now();
    c.send(json!({"type": "abort", "id": "a"}));
    let r = c.response("a");
    assert!(t.elapsed() < Duration::from_secs(5));
    assert_eq!(r["success"], true);
    // The answer to abort comes after the run's end.
    let end_at = c
        .seen
        .iter()
        .position(|v| v["type"] == "agent_end")
        .unwrap();
    let resp_at = c.seen.iter().position(|v| v["id"] == "a").unwrap();
    assert!(end_at < resp_at);
    // The run's messages: the prompt and tools it recorded, the prompt, the aborted answer.
    let aborted = c.seen[end_at]["messages"][2].clone();
    assert_eq!(aborted["stopReason"], "aborted");
    c.call("p2", json!({"type": "prompt", "message": "try again"}));
    let end = c.agent_end();
    assert_eq!(text(&end["messages"][1]), "Second answer.");
    let (code, _) = c.close();
    assert_eq!(code, 0);
    let f = session_file(&w);
    let ms = messages(&f);
    assert_eq!(roles(&ms), ["user", "assistant", "user", "assistant"]);
    assert_eq!(ms[1]["stopReason"], "aborted");
    assert_eq!(text(&ms[1]), "Partial answer ");
    check(&w, &f);
}

/// A prompt answered as accepted runs even when an `abort` follows at once (both lines in
/// one write, before the run could start): `agent_start` … `agent_end` with an aborted
/// answer, the prompt and the answer recorded, and `abort` answered after `agent_end`.
#[test]
fn prompt_then_abort_at_once_still_ends_visibly() {
    let server = ModelServer::start();
    let w = world(&server);
    let rounds = 8;
    // Rounds whose request went out before the abort get a stalled answer.
    server.push(Reply::openai_text(&["Back again."]).when("and now?"));
    for _ in 0..rounds {
        server.push(
            Reply::openai_text(&["never ", "finishes"])
                .stall_at("finishes", Duration::from_secs(20)),
        );
    }
    let mut c = Client::start(&w, &[]);
    for k in 0..rounds {
        let (p, a) = (format!("p{k}"), format!("a{k}"));
        c.send_raw(
            format!(
                "{}\n{}\n",
                json!({"type": "prompt", "message": format!("prompt {k}"), "id": p}),
                json!({"type": "abort", "id": a})
            )
            .as_bytes(),
        );
        let r = c.response(&a);
        assert_eq!(r["success"], true, "{r}");
        let at = |f: &dyn Fn(&Value) -> bool| c.seen.iter().rposition(f);
        let accepted = at(&|v| v["id"] == p.as_str()).expect("the prompt is answered");
        assert_eq!(c.seen[accepted]["success"], true);
        let start = at(&|v| v["type"] == "agent_start");
        let end = at(&|v| v["type"] == "agent_end");
        let answered = c.seen.len() - 1;
        assert!(
            matches!((start, end), (Some(s), Some(e)) if accepted < s && s < e && e < answered),
            "round {k}: agent_start … agent_end between the two answers: {:#?}",
            &c.seen[accepted..]
        );
        let all = &c.seen[end.unwrap()]["messages"];
        // The first round also records the prompt and tools (a system message) first.
        let ended: Vec<&Value> = all
            .as_array()
            .unwrap()
            .iter()
            .filter(|m| m["role"] != "system")
            .collect();
        assert_eq!(all[0]["role"] == "system", k == 0, "round {k}: {all}");
        assert_eq!(text(ended[0]), format!("prompt {k}"));
        assert_eq!(ended[1]["stopReason"], "aborted", "round {k}: {all}");
        // The run settles, aborted, just before `abort` is answered.
        assert_eq!(
            c.seen[answered - 1],
            json!({"type": "agent_settled", "aborted": true}),
            "round {k}"
        );
    }
    c.call("last", json!({"type": "prompt", "message": "and now?"}));
    c.idle();
    let (code, _) = c.close();
    assert_eq!(code, 0);
    let f = session_file(&w);
    let ms = messages(&f);
    assert_eq!(ms.len(), 2 * rounds + 2, "{:#?}", roles(&ms));
    for k in 0..rounds {
        assert_eq!(text(&ms[2 * k]), format!("prompt {k}"));
        assert_eq!(ms[2 * k + 1]["stopReason"], "aborted");
    }
    assert_eq!(text(&ms[2 * rounds + 1]), "Back again.");
    check(&w, &f);
}

/// `compact` summarizes with the model, emits compaction events, answers with the result,
/// and the context shrinks to the summary and kept messages.
#[test]
fn compact_command() {
    let server = ModelServer::start();
    let w = world(&server);
    settings(&w, json!({"compaction": {"keepRecentTokens": 100}}));
    let f = w.new_session();
    let mut stdin = String::new();
    for k in 0..5 {
        stdin.push_str(&format!(
            "{}\n{}\n",
            user(&format!("question {k} {}", "x".repeat(300))),
            assistant(&format!("answer {k} {}", "y".repeat(300)))
        ));
    }
    w.ok_in(&["session", "append", f.to_str().unwrap()], &stdin);
    server.push(Reply::openai_text(&["## Goal\nAnswer five questions."]));
    let mut c = Client::start(&w, &[f.to_str().unwrap()]);
    let r = c.call(
        "c",
        json!({"type": "compact", "customInstructions": "focus on the questions"}),
    );
    assert_eq!(r["success"], true, "{r}");
    assert!(
        r["data"]["summary"]
            .as_str()
            .unwrap()
            .starts_with("## Goal\nAnswer five questions.")
    );
    // The last reported usage (2 tokens: the test messages report tiny usage).
    assert_eq!(r["data"]["tokensBefore"], 2);
    assert_eq!(r["data"]["details"]["readFiles"], json!([]));
    let start = c
        .seen
        .iter()
        .find(|v| v["type"] == "compaction_start")
        .unwrap();
    assert_eq!(start["reason"], "manual");
    let body = server.requests()[0].text();
    assert!(body.contains("focus on the questions"));
    let m = c.call("m", json!({"type": "get_messages"}));
    let msgs = m["data"]["messages"].as_array().unwrap();
    assert_eq!(msgs[0]["role"], "compactionSummary");
    assert!(msgs.len() < 10);
    // Nothing left to compact: an error answer.
    let r = c.call("c2", json!({"type": "compact"}));
    assert_eq!(r["success"], false);
    assert_eq!(r["error"], "Already compacted");
    let (code, _) = c.close();
    assert_eq!(code, 0);
    let last = lines(&f).pop().unwrap();
    assert_eq!(last["type"], "compaction");
    check(&w, &f);
}

#[test]
fn model_thinking_name_and_errors() {
    let server = ModelServer::start();
    let w = world(&server);
    w.write(
        "agent/models.json",
        json!({"providers": {
            "mock": {"baseUrl": format!("{}/v1", server.url()), "api": "openai-completions",
                     "apiKey": KEY,
                     "models": [{"id": "m1", "contextWindow": 100000},
                                {"id": "thinker", "reasoning": true, "contextWindow": 50000}]}
        }})
        .to_string(),
    );
    let mut c = Client::start(&w, &[]);
    // Framing: CRLF, blank lines, a U+2028 inside a string, garbage, unknown commands.
    c.send_raw(b"\r\n\n{\"type\":\"get_state\",\"id\":\"crlf\"}\r\n");
    assert_eq!(c.response("crlf")["success"], true);
    c.send_raw(b"{not json}\n");
    let r = c.until(|v| v["command"] == "parse");
    assert_eq!(r["success"], false);
    assert!(
        r["error"]
            .as_str()
            .unwrap()
            .starts_with("Failed to parse command")
    );
    assert!(r.get("id").is_none());
    let r = c.call("u", json!({"type": "dance"}));
    assert_eq!(r["error"], "Unknown command: dance");
    let r = c.call(
        "n",
        json!({"type": "switch_session", "sessionPath": "/nonexistent/s.jsonl"}),
    );
    assert_eq!(r["success"], false);
    assert_eq!(r["error"], "Session file not found: /nonexistent/s.jsonl");
    let r = c.call(
        "bad",
        json!({"type": "set_model", "provider": "mock", "modelId": "nope"}),
    );
    assert_eq!(r["error"], "Model not found: mock/nope");

    let r = c.call(
        "sm",
        json!({"type": "set_model", "provider": "mock", "modelId": "thinker"}),
    );
    assert_eq!(r["success"], true);
    assert_eq!(r["data"]["id"], "thinker");
    assert_eq!(r["data"]["contextWindow"], 50000);
    let r = c.call("tl", json!({"type": "set_thinking_level", "level": "high"}));
    assert_eq!(r["success"], true);
    assert!(
        c.seen
            .iter()
            .any(|v| v["type"] == "thinking_level_changed" && v["level"] == "high")
    );
    let r = c.call("cy", json!({"type": "cycle_thinking_level"}));
    assert_eq!(r["data"]["level"], "off");
    let r = c.call(
        "tl2",
        json!({"type": "set_thinking_level", "level": "loud"}),
    );
    assert_eq!(r["success"], false);
    let r = c.call(
        "nm",
        json!({"type": "set_session_name", "name": "  Refactor  "}),
    );
    assert_eq!(r["success"], true);
    let r = c.call("nm2", json!({"type": "set_session_name", "name": " "}));
    assert_eq!(r["error"], "Session name cannot be empty");
    let st = c.call("st", json!({"type": "get_state"}));
    assert_eq!(st["data"]["model"]["id"], "thinker");
    assert_eq!(st["data"]["thinkingLevel"], "off");
    assert_eq!(st["data"]["sessionName"], "Refactor");
    server.push(Reply::openai_text(&["thinking model here"]));
    c.send_raw(
        "{\"type\":\"prompt\",\"id\":\"p\",\"message\":\"line\u{2028}separator\"}\n".as_bytes(),
    );
    assert_eq!(c.response("p")["success"], true);
    c.agent_end();
    let (code, _) = c.close();
    assert_eq!(code, 0);
    let sent = request_messages(&server.requests()[0]);
    assert_eq!(text(sent.last().unwrap()), "line\u{2028}separator");
    assert_eq!(server.requests()[0].json()["model"], "thinker");
    let f = session_file(&w);
    let entries = lines(&f);
    let kinds: Vec<&str> = entries
        .iter()
        .map(|e| e["type"].as_str().unwrap())
        .collect();
    assert!(kinds.contains(&"session_info"));
    let changes: Vec<&Value> = entries
        .iter()
        .filter(|e| e["type"] == "model_change")
        .collect();
    assert_eq!(changes.last().unwrap()["modelId"], "thinker");
    let levels: Vec<&str> = entries
        .iter()
        .filter(|e| e["type"] == "thinking_level_change")
        .map(|e| e["thinkingLevel"].as_str().unwrap())
        .collect();
    assert_eq!(levels.last(), Some(&"off"));
    assert!(levels.contains(&"high"));
    check(&w, &f);
}

/// End of input while a prompt runs: the run finishes (and is recorded), then exit 0. A
/// prompt that cannot be expanded is refused in its response.
#[test]
fn end_of_input_finishes_the_running_prompt() {
    let server = ModelServer::start();
    let w = world(&server);
    server.push(Reply::openai_text(&["slow ", "answer"]).pace(Duration::from_millis(200)));
    let mut c = Client::start(&w, &[]);
    let r = c.call(
        "bad",
        json!({"type": "prompt", "message": "/skill:nope do it"}),
    );
    assert_eq!(r["success"], false);
    assert!(r["error"].as_str().unwrap().contains("nope"), "{r}");
    c.send(json!({"type": "prompt", "message": "go"}));
    let (code, rest) = c.close();
    assert_eq!(code, 0);
    assert!(rest.iter().any(|v| v["type"] == "agent_end"), "{rest:?}");
    let f = session_file(&w);
    assert_eq!(text(&messages(&f)[1]), "slow answer");
}

/// SIGTERM in RPC mode stops the running prompt (recorded) and exits 143.
#[test]
fn sigterm_stops_the_run() {
    let server = ModelServer::start();
    let w = world(&server);
    server.push(
        Reply::openai_text(&["Some ", "text ", "and more"])
            .stall_at("and more", Duration::from_secs(20)),
    );
    let mut c = Client::start(&w, &[]);
    c.call("p", json!({"type": "prompt", "message": "go"}));
    c.until(|v| v["type"] == "message_update");
    signal(&c.child, libc::SIGTERM);
    let start = Instant::now();
    let code = loop {
        if let Some(s) = c.child.try_wait().unwrap() {
            break s.code().unwrap_or(-1);
        }
        assert!(start.elapsed() < Duration::from_secs(10));
        std::thread::sleep(Duration::from_millis(20));
    };
    assert_eq!(code, 143);
    let f = session_file(&w);
    let ms = messages(&f);
    assert_eq!(ms[1]["stopReason"], "aborted");
    check(&w, &f);
}

/// A blocking hook that fails refuses the prompt without ending RPC mode: a failing
/// `input` or `before_agent_start` hook makes the `prompt` command fail; the next prompt
/// works.
#[test]
fn failing_blocking_hooks_refuse_prompts_but_keep_serving() {
    let server = ModelServer::start();
    let w = world(&server);
    settings(
        &w,
        json!({"hooks": {
            "input": {"command": "grep -q refuse-input && exit 1; exit 0", "onError": "block"},
            "before_agent_start": {"command": "grep -q refuse-start && exit 1; exit 0", "onError": "block"}
        }}),
    );
    server.push(Reply::openai_text(&["served"]));
    let mut c = Client::start(&w, &[]);
    let r = c.call(
        "a",
        json!({"type": "prompt", "message": "please refuse-input"}),
    );
    assert_eq!(r["success"], false);
    assert!(
        r["error"].as_str().unwrap().contains("(input) failed"),
        "{r}"
    );
    let r = c.call(
        "b",
        json!({"type": "prompt", "message": "please refuse-start"}),
    );
    assert_eq!(r["success"], false);
    assert!(
        r["error"]
            .as_str()
            .unwrap()
            .contains("(before_agent_start) failed"),
        "{r}"
    );
    assert!(
        c.seen
            .iter()
            .any(|v| v["type"] == "extension_error" && v["event"] == "before_agent_start")
    );
    let r = c.call("c", json!({"type": "prompt", "message": "fine"}));
    assert_eq!(r["success"], true);
    let end = c.agent_end();
    // The run's messages: its recorded prompt and tools, the prompt, the answer.
    assert_eq!(end["messages"][0]["role"], "system");
    assert_eq!(text(&end["messages"][2]), "served");
    let (code, _) = c.close();
    assert_eq!(code, 0);
    assert_eq!(server.requests().len(), 1);
}

/// After `abort`, the next prompt starts with a live cancel token: its `input` hooks run
/// (a guard is not skipped), and an idle `compact` works.
#[test]
fn after_abort_hooks_and_compaction_work_again() {
    let server = ModelServer::start();
    let w = world(&server);
    settings(
        &w,
        json!({"compaction": {"keepRecentTokens": 1},
               "hooks": {"input": "cat >/dev/null; echo '{\"action\":\"transform\",\"text\":\"REWRITTEN\"}'"}}),
    );
    server.push(
        Reply::openai_text(&["slow ", "answer ", "never ends"])
            .stall_at("never ends", Duration::from_secs(20)),
    );
    server.push(Reply::openai_text(&["second"]));
    server.push(Reply::openai_text(&["## Goal\nsummary"]));
    server.push(Reply::openai_text(&["## Goal\nthe turn so far"]));
    let mut c = Client::start(&w, &[]);
    c.call("p1", json!({"type": "prompt", "message": "one"}));
    c.until(|v| v["type"] == "message_update");
    c.call("a", json!({"type": "abort"}));
    c.call("p2", json!({"type": "prompt", "message": "two"}));
    c.agent_end();
    let sent = request_messages(&server.requests()[1]);
    assert_eq!(
        text(sent.last().unwrap()),
        "REWRITTEN",
        "the input hook ran"
    );
    let r = c.call("c", json!({"type": "compact"}));
    assert_eq!(r["success"], true, "{r}");
    let (code, _) = c.close();
    assert_eq!(code, 0);
}

/// A compaction is served like a run: `get_state` answers during it (`isCompacting`), and
/// `abort` cancels it (nothing written).
#[test]
fn compaction_can_be_watched_and_aborted() {
    let server = ModelServer::start();
    let w = world(&server);
    settings(&w, json!({"compaction": {"keepRecentTokens": 10}}));
    let f = w.new_session();
    let mut stdin = String::new();
    for k in 0..4 {
        stdin.push_str(&format!(
            "{}\n{}\n",
            user(&format!("q{k} {}", "x".repeat(200))),
            assistant("a")
        ));
    }
    w.ok_in(&["session", "append", f.to_str().unwrap()], &stdin);
    server
        .push(Reply::openai_text(&["## Goal\n", "slow"]).stall_at("slow", Duration::from_secs(20)));
    let before = std::fs::read(&f).unwrap();
    let mut c = Client::start(&w, &[f.to_str().unwrap()]);
    c.send(json!({"type": "compact", "id": "c"}));
    c.until(|v| v["type"] == "compaction_start");
    let st = c.call("s", json!({"type": "get_state"}));
    assert_eq!(st["data"]["isCompacting"], true);
    assert_eq!(st["data"]["isStreaming"], false);
    let t = Instant::now();
    c.send(json!({"type": "abort", "id": "a"}));
    let r = c.response("c");
    assert_eq!(r["success"], false);
    assert_eq!(r["error"], "Compaction cancelled");
    assert_eq!(c.response("a")["success"], true);
    assert!(t.elapsed() < Duration::from_secs(5));
    let (code, _) = c.close();
    assert_eq!(code, 0);
    let after = std::fs::read(&f).unwrap();
    assert!(after.starts_with(&before));
    assert!(
        !lines(&f).iter().any(|e| e["type"] == "compaction"),
        "nothing was compacted"
    );
}

/// A follow-up queued while the run ends (here: during a slow `agent_end` hook) is
/// delivered in a new run, not lost; notification hooks run even after `abort`.
#[test]
fn follow_ups_queued_at_the_end_are_delivered() {
    let server = ModelServer::start();
    let w = world(&server);
    let log = w.path("ends.log");
    settings(
        &w,
        json!({"hooks": {"agent_end": format!("cat >/dev/null; echo end >> {}; sleep 0.7", log.display())}}),
    );
    server.push(Reply::openai_text(&["first"]));
    server.push(Reply::openai_text(&["for the follow-up"]).when("FOLLOW"));
    let mut c = Client::start(&w, &[]);
    c.call("p", json!({"type": "prompt", "message": "go"}));
    c.agent_end();
    let r = c.call(
        "f",
        json!({"type": "follow_up", "message": "FOLLOW: one more"}),
    );
    assert_eq!(r["success"], true);
    let end = c.agent_end();
    assert_eq!(text(&end["messages"][0]), "FOLLOW: one more");
    assert_eq!(text(&end["messages"][1]), "for the follow-up");
    c.idle();
    // An aborted run still tells its agent_end hooks.
    server.push(Reply::openai_text(&["x ", "stalls"]).stall_at("stalls", Duration::from_secs(20)));
    c.call("p2", json!({"type": "prompt", "message": "third"}));
    c.until(|v| v["type"] == "message_update");
    c.call("a", json!({"type": "abort"}));
    let (code, _) = c.close();
    assert_eq!(code, 0);
    let ends = std::fs::read_to_string(&log).unwrap();
    assert_eq!(ends.lines().count(), 3, "{ends}");
}

/// `abort_retry` stops the wait before an automatic retry.
#[test]
fn abort_retry_stops_a_pending_retry() {
    let server = ModelServer::start();
    let w = world(&server);
    settings(&w, json!({"retry": {"baseDelayMs": 30000}}));
    server.push(Reply::status(503, r#"{"error":{"message":"overloaded"}}"#));
    let mut c = Client::start(&w, &[]);
    let r = c.call("n", json!({"type": "abort_retry"}));
    assert_eq!(r["success"], true, "nothing to stop: fine");
    c.call("p", json!({"type": "prompt", "message": "go"}));
    c.until(|v| v["type"] == "auto_retry_start");
    let t = Instant::now();
    c.send(json!({"type": "abort_retry", "id": "r"}));
    let r = c.response("r");
    assert_eq!(r["success"], true);
    assert!(t.elapsed() < Duration::from_secs(5));
    let end = c
        .seen
        .iter()
        .find(|v| v["type"] == "auto_retry_end")
        .unwrap()
        .clone();
    assert_eq!(end["finalError"], "Retry cancelled");
    assert_eq!(server.requests().len(), 1);
    // A fresh session's context usage is known (nothing was compacted).
    let st = c.call("s", json!({"type": "get_session_stats"}));
    assert!(st["data"]["contextUsage"]["tokens"].is_number(), "{st}");
    let (code, _) = c.close();
    assert_eq!(code, 0);
}

/// An untrusted project's hooks do not run in RPC mode either; the client hears why in an
/// `extension_error` (`event: "trust"`).
#[test]
fn untrusted_project_hooks_are_reported_not_run() {
    let server = ModelServer::start();
    let w = world(&server);
    let log = w.path("input.log");
    w.write(
        "proj/.pi/settings.json",
        json!({"hooks": {"input": format!("cat >> '{}'", log.display())}}).to_string(),
    );
    server.push(Reply::openai_text(&["hi"]));
    let mut c = Client::start(&w, &[]);
    let r = c.call("p1", json!({"type": "prompt", "message": "hello"}));
    assert_eq!(r["success"], true);
    c.agent_end();
    let errors: Vec<&Value> = c
        .seen
        .iter()
        .filter(|v| v["type"] == "extension_error")
        .collect();
    assert_eq!(errors.len(), 1, "{:#?}", c.seen);
    assert_eq!(errors[0]["event"], "trust");
    assert!(!log.exists(), "the project's hook ran");
    let (code, _) = c.close();
    assert_eq!(code, 0);
}

/// While a prompt runs, reads, the queue and `bash` are answered at once, changes of the
/// session wait for the run and are answered after it, and `compact` stops the run first
/// (as the reference's does), then compacts.
#[test]
fn commands_while_busy_are_served_not_refused() {
    let server = ModelServer::start();
    let w = world(&server);
    settings(&w, json!({"compaction": {"keepRecentTokens": 10}}));
    let f = w.new_session();
    let mut stdin = String::new();
    for k in 0..4 {
        stdin.push_str(&format!(
            "{}\n{}\n",
            user(&format!("q{k} {}", "x".repeat(200))),
            assistant("a")
        ));
    }
    w.ok_in(&["session", "append", f.to_str().unwrap()], &stdin);
    server.push(
        Reply::openai_text(&["thinking ", "slowly"]).stall_at("slowly", Duration::from_secs(20)),
    );
    let mut c = Client::start(&w, &[f.to_str().unwrap()]);
    c.send(json!({"type": "prompt", "message": "take your time", "id": "p"}));
    c.until(|v| v["type"] == "message_update");
    let r = c.call("fm", json!({"type": "get_fork_messages"}));
    assert_eq!(r["data"]["messages"].as_array().unwrap().len(), 5);
    let r = c.call("gc", json!({"type": "get_commands"}));
    assert_eq!(r["data"]["commands"], json!([]));
    // A shell command runs beside the run: answered at once, recorded after the run.
    let b = c.call("b", json!({"type": "bash", "command": "echo beside"}));
    assert_eq!(b["data"]["output"], "beside\n");
    let st = c.call("st", json!({"type": "get_state"}));
    assert_eq!(st["data"]["isStreaming"], true);
    c.send(json!({"type": "set_thinking_level", "level": "high", "id": "t"}));
    server.push(Reply::openai_text(&["## Goal\nsummary"]));
    server.push(Reply::openai_text(&["## Goal\nturn"]));
    let t = Instant::now();
    c.send(json!({"type": "compact", "id": "c"}));
    let end = c.agent_end();
    let last = end["messages"].as_array().unwrap().last().unwrap().clone();
    assert_eq!(last["stopReason"], "aborted");
    assert_eq!(c.response("t")["success"], true);
    let r = c.response("c");
    assert_eq!(r["success"], true, "{r}");
    assert!(t.elapsed() < Duration::from_secs(10));
    let (code, _) = c.close();
    assert_eq!(code, 0);
    let entries = lines(&f);
    let kinds: Vec<String> = entries
        .iter()
        .map(|e| match e["message"]["role"].as_str() {
            Some(r) => r.to_owned(),
            None => e["type"].as_str().unwrap().to_owned(),
        })
        .collect();
    // (`high` is clamped to `off` for this model: nothing changes, nothing is recorded.)
    let tail = &kinds[kinds.len() - 3..];
    assert_eq!(tail, ["assistant", "bashExecution", "compaction"]);
    check(&w, &f);
}

/// `bash` streams its output as `bash_execution_update` events (with the command's id)
/// while other commands are served;
/// `abort_bash` kills it: the result says `cancelled` (no exit code) and is recorded.
#[test]
fn bash_streams_and_abort_bash_stops_it() {
    let server = ModelServer::start();
    let w = world(&server);
    let mut c = Client::start(&w, &[]);
    c.send(json!({"type": "bash", "command": "echo started; sleep 30", "id": "b"}));
    let chunk = c.until(|v| v["type"] == "bash_execution_update");
    assert_eq!(
        chunk,
        json!({"type": "bash_execution_update", "id": "b", "delta": "started\n"})
    );
    let st = c.call("s", json!({"type": "get_state"}));
    assert_eq!(st["data"]["isStreaming"], false);
    let file = st["data"]["sessionFile"].as_str().unwrap().to_owned();
    let t = Instant::now();
    assert_eq!(c.call("ab", json!({"type": "abort_bash"}))["success"], true);
    let r = c.response("b");
    assert!(t.elapsed() < Duration::from_secs(10));
    assert_eq!(
        r["data"],
        json!({"output": "started\n", "cancelled": true, "truncated": false})
    );
    let (code, _) = c.close();
    assert_eq!(code, 0);
    let ms = messages(std::path::Path::new(&file));
    assert_eq!(ms[0]["role"], "bashExecution");
    assert_eq!(ms[0]["cancelled"], true);
    assert_eq!(ms[0]["exitCode"], Value::Null);
}

/// `session_before_switch` and `session_before_fork` hooks may cancel `new_session`,
/// `switch_session`, `fork` and `clone`: the answer says `cancelled` and the process stays
/// on its session. Without them, `fork` ends the new session before the chosen prompt.
#[test]
fn hooks_cancel_session_changes_and_fork_returns_the_text() {
    let server = ModelServer::start();
    let w = world(&server);
    server.push(Reply::openai_text(&["one"]));
    let mut c = Client::start(
        &w,
        &[
            "--hook",
            "session_before_switch=cat > switch.json; echo '{\"cancel\": true}'",
            "--hook",
            "session_before_fork=grep -q '\"at\"' && echo '{\"cancel\": true}'; exit 0",
        ],
    );
    c.call("p", json!({"type": "prompt", "message": "first question"}));
    c.agent_end();
    let st = c.call("s", json!({"type": "get_state"}));
    let file = st["data"]["sessionFile"].as_str().unwrap().to_owned();
    let r = c.call("n", json!({"type": "new_session"}));
    assert_eq!(r["data"], json!({"cancelled": true}));
    let payload: Value =
        serde_json::from_str(&std::fs::read_to_string(w.path("proj/switch.json")).unwrap())
            .unwrap();
    assert_eq!(payload["event"], "session_before_switch");
    assert_eq!(payload["reason"], "new");
    let r = c.call("cl", json!({"type": "clone"}));
    assert_eq!(r["data"], json!({"cancelled": true}));
    let fm = c.call("fm", json!({"type": "get_fork_messages"}));
    let entry = fm["data"]["messages"][0]["entryId"]
        .as_str()
        .unwrap()
        .to_owned();
    let r = c.call("f", json!({"type": "fork", "entryId": entry}));
    assert_eq!(
        r["data"],
        json!({"text": "first question", "cancelled": false})
    );
    let st = c.call("s2", json!({"type": "get_state"}));
    let forked = st["data"]["sessionFile"].as_str().unwrap().to_owned();
    assert_ne!(forked, file);
    // What came before the first question: the prompt and tools the first run recorded.
    assert_eq!(st["data"]["messageCount"], 1);
    let r = c.call("bad", json!({"type": "fork", "entryId": "nope"}));
    assert_eq!(r["error"], "Invalid entry ID for forking");
    let (code, _) = c.close();
    assert_eq!(code, 0);
    let forked_lines = lines(std::path::Path::new(&forked));
    assert_eq!(forked_lines[0]["parentSession"], file.as_str());
    // Only the prompt and tools recorded before the first question came along.
    let roles: Vec<&Value> = forked_lines
        .iter()
        .filter(|e| e["type"] == "message")
        .map(|e| &e["message"]["role"])
        .collect();
    assert_eq!(roles, [&json!("system")]);
    check(&w, std::path::Path::new(&forked));
}

/// While a run goes on, a `prompt` with a streaming behaviour is `queued`, `clear_queue`
/// takes back what waits (nothing of it reaches the model), and the session's entries and
/// tree can be read; `agent_settled` ends the run.
#[test]
fn clear_queue_and_entries_during_a_run() {
    let server = ModelServer::start();
    let w = world(&server);
    server.push(tool_calls(&[(
        "c1",
        "bash",
        r#"{"command":"sleep 0.8; echo slow"}"#,
    )]));
    server.push(Reply::openai_text(&["Done."]));
    let mut c = Client::start(&w, &[]);
    let r = c.call("p", json!({"type": "prompt", "message": "run it"}));
    assert_eq!(r["data"], json!({"disposition": "started"}));
    c.until(|v| v["type"] == "tool_execution_start");
    let r = c.call(
        "q",
        json!({"type": "prompt", "message": "LATER", "streamingBehavior": "followUp"}),
    );
    assert_eq!(r["data"], json!({"disposition": "queued"}));
    let r = c.call("s", json!({"type": "steer", "message": "STEER"}));
    assert_eq!(r["data"], json!({"disposition": "queued"}));
    let r = c.call("cq", json!({"type": "clear_queue"}));
    assert_eq!(
        r["data"],
        json!({"steering": ["STEER"], "followUp": ["LATER"]})
    );
    let update = c
        .seen
        .iter()
        .rev()
        .find(|v| v["type"] == "queue_update")
        .unwrap();
    assert_eq!(
        update,
        &json!({"type": "queue_update", "steering": [], "followUp": []})
    );
    let st = c.call("st", json!({"type": "get_state"}));
    assert_eq!(st["data"]["pendingMessageCount"], 0);
    let e = c.call("e", json!({"type": "get_entries"}));
    let entries = e["data"]["entries"].as_array().unwrap();
    assert_eq!(e["data"]["leafId"], entries.last().unwrap()["id"]);
    let user = entries
        .iter()
        .find(|x| x["message"]["role"] == "user")
        .unwrap();
    let t = c.call("t", json!({"type": "get_tree"}));
    assert_eq!(t["data"]["leafId"], e["data"]["leafId"]);
    assert_eq!(t["data"]["tree"].as_array().unwrap().len(), 1);
    let bad = c.call("b", json!({"type": "get_entries", "since": "nope"}));
    assert_eq!(bad["error"], "Entry not found: nope");
    let settled = c.until(|v| v["type"] == "agent_settled");
    assert_eq!(settled["aborted"], false);
    let after = c.call("a", json!({"type": "get_entries", "since": user["id"]}));
    let roles: Vec<&str> = after["data"]["entries"]
        .as_array()
        .unwrap()
        .iter()
        .map(|x| x["message"]["role"].as_str().unwrap())
        .collect();
    assert_eq!(roles, ["assistant", "toolResult", "assistant"]);
    let (code, _) = c.close();
    assert_eq!(code, 0);
    assert_eq!(server.requests().len(), 2);
    let f = session_file(&w);
    assert!(!messages(&f).iter().any(|m| text(m).contains("LATER")));
}

/// `get_tree` builds 1.6's tree: children oldest first (by timestamp, not file order), a
/// label on its target's node with the label's time; `get_entries` lists the file's order.
#[test]
fn get_tree_orders_children_and_carries_labels() {
    let server = ModelServer::start();
    let w = world(&server);
    let proj = w.path("proj");
    let lines = [
        json!({"type": "session", "version": 3, "id": "01a23d3a-0000-7000-8000-000000000001",
               "timestamp": "2026-01-01T00:00:00.000Z", "cwd": proj.to_string_lossy()}),
        json!({"type": "message", "id": "aaaa0001", "parentId": null,
               "timestamp": "2026-01-01T00:00:01.000Z",
               "message": {"role": "user", "content": "A", "timestamp": 1}}),
        json!({"type": "message", "id": "aaaa0002", "parentId": "aaaa0001",
               "timestamp": "2026-01-01T00:00:03.000Z",
               "message": {"role": "user", "content": "B", "timestamp": 3}}),
        json!({"type": "message", "id": "aaaa0003", "parentId": "aaaa0001",
               "timestamp": "2026-01-01T00:00:02.000Z",
               "message": {"role": "user", "content": "C", "timestamp": 2}}),
        json!({"type": "label", "id": "aaaa0004", "parentId": "aaaa0003",
               "timestamp": "2026-01-01T00:00:04.000Z", "targetId": "aaaa0001", "label": "start"}),
    ];
    let text: String = lines.iter().map(|l| format!("{l}\n")).collect();
    w.write("tree.jsonl", &text);
    let file = w.path("tree.jsonl");
    let mut c = Client::start(&w, &[file.to_str().unwrap()]);
    let e = c.call("e", json!({"type": "get_entries"}));
    let ids: Vec<&str> = e["data"]["entries"]
        .as_array()
        .unwrap()
        .iter()
        .map(|x| x["id"].as_str().unwrap())
        .collect();
    assert_eq!(ids[..4], ["aaaa0001", "aaaa0002", "aaaa0003", "aaaa0004"]);
    assert_eq!(e["data"]["entries"][1], lines[2], "entries as written");
    let t = c.call("t", json!({"type": "get_tree"}));
    let root = &t["data"]["tree"][0];
    let keys: Vec<&String> = root.as_object().unwrap().keys().collect();
    assert_eq!(keys, ["entry", "children", "label", "labelTimestamp"]);
    assert_eq!(root["entry"], lines[1]);
    assert_eq!(root["label"], "start");
    assert_eq!(root["labelTimestamp"], "2026-01-01T00:00:04.000Z");
    let kids: Vec<&str> = root["children"]
        .as_array()
        .unwrap()
        .iter()
        .map(|n| n["entry"]["id"].as_str().unwrap())
        .collect();
    assert_eq!(kids, ["aaaa0003", "aaaa0002"], "oldest first");
    let b = &root["children"][1];
    assert_eq!(b["children"], json!([]));
    assert!(b.get("label").is_none());
    assert_eq!(
        root["children"][0]["children"][0]["entry"]["id"],
        "aaaa0004"
    );
    assert_eq!(t["data"]["leafId"], e["data"]["leafId"]);
    let (code, _) = c.close();
    assert_eq!(code, 0);
}

/// `get_session_stats` counts the whole file, as the reference 1.6's `getSessionStats` does:
/// messages of every branch, and the usage of answers, `usage` entries and summaries.
#[test]
fn session_stats_count_every_entry_of_the_file() {
    let server = ModelServer::start();
    let w = world(&server);
    let f = w.new_session();
    let fs = f.to_str().unwrap();
    let u = |input: u64, cost: f64| {
        json!({"input": input, "output": 1, "cacheRead": 0, "cacheWrite": 0, "totalTokens": input + 1,
               "cost": {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0, "total": cost}})
    };
    let a = |text: &str, input: u64| {
        json!({"role": "assistant", "content": [{"type": "text", "text": text},
               {"type": "toolCall", "id": "c", "name": "read", "arguments": {}}],
               "api": "openai-completions", "provider": "mock", "model": "m1",
               "usage": u(input, 0.5), "stopReason": "toolUse"})
    };
    let first = jsonl(
        &w.ok_in(
            &["session", "append", fs],
            &[json!({"role": "user", "content": "q1"}), a("a1", 100)]
                .iter()
                .map(Value::to_string)
                .collect::<Vec<_>>()
                .join("\n"),
        ),
    );
    // Another branch from the first question, and a usage record on it.
    w.ok(&["session", "branch", fs, first[0]["id"].as_str().unwrap()]);
    w.ok_in(
        &["session", "append", fs],
        &[
            a("a2", 200).to_string(),
            json!({"type": "usage", "kind": "cache_warm", "provider": "mock", "model": "m1", "usage": u(1000, 0.25)})
                .to_string(),
        ]
        .join("\n"),
    );
    let mut c = Client::start(&w, &[fs]);
    let st = c.call("s", json!({"type": "get_session_stats"}));
    let d = &st["data"];
    assert_eq!(d["userMessages"], 1);
    assert_eq!(d["assistantMessages"], 2, "both branches: {d}");
    assert_eq!(d["toolCalls"], 2);
    assert_eq!(d["totalMessages"], 3);
    assert_eq!(d["tokens"]["input"], 1300.0);
    assert_eq!(d["tokens"]["output"], 3.0);
    assert_eq!(d["tokens"]["total"], 1303.0);
    assert_eq!(d["cost"], 1.25);
    let (code, _) = c.close();
    assert_eq!(code, 0);
}
