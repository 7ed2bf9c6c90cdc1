//! Interrupting `pi run` with real signals: Ctrl-C (SIGINT) while the answer streams and
//! while a tool runs records the aborted answer as upstream does and exits 130, leaving a
//! valid file that a second run continues; SIGTERM exits 143. While a run holds the
//! session, `pi compact --all` skips it and `pi session append` waits for it.

use std::time::{Duration, Instant};

use serde_json::json;

use crate::common::model_server::{ModelServer, Reply};
use crate::common::*;
use crate::run_support::*;

/// A second run continues the interrupted session.
fn resume(w: &World, server: &ModelServer, f: &std::path::Path) {
    check(w, f);
    let before = server.requests().len();
    server.push(Reply::openai_text(&["Continuing."]));
    let o = run(w, &[f.to_str().unwrap(), "-p", "please continue"]);
    status(&o, 0);
    assert_eq!(out(&o), "Continuing.\n");
    let sent = request_messages(&server.requests()[before]);
    assert_eq!(text(sent.last().unwrap()), "please continue");
    // The aborted answer is not sent back.
    assert!(
        sent.iter()
            .all(|m| m["role"] != "assistant" || m.get("tool_calls").is_some())
    );
    check(w, f);
}

#[test]
fn ctrl_c_while_the_answer_streams() {
    let server = ModelServer::start();
    let w = world(&server);
    server.push(
        Reply::openai_text(&["Hel", "lo there"]).stall_at("lo there", Duration::from_secs(30)),
    );
    let (child, mut out) = spawn(&w, &["--json", "-p", "greet me"]);
    read_until(&mut out, |e| {
        e["type"] == "message_update" && e["assistantMessageEvent"]["delta"] == "Hel"
    });
    signal(&child, libc::SIGINT);
    let (code, rest) = finish(child, out);
    assert_eq!(code, 130);
    let k = kinds(&rest);
    assert_eq!(
        k,
        [
            "message_end:assistant",
            "turn_end",
            "agent_end",
            "agent_settled"
        ]
    );
    assert_eq!(rest[2]["willRetry"], false);
    assert_eq!(rest[3], json!({"type": "agent_settled", "aborted": true}));
    let f = session_file(&w);
    let m = messages(&f);
    assert_eq!(roles(&m), ["user", "assistant"]);
    assert_eq!(m[1]["stopReason"], "aborted");
    assert_eq!(m[1]["errorMessage"], "Request was aborted");
    assert_eq!(text(&m[1]), "Hel");
    assert_eq!(rest[0]["message"], m[1]);
    resume(&w, &server, &f);
}

#[test]
fn ctrl_c_while_a_tool_runs() {
    let server = ModelServer::start();
    let w = world(&server);
    server.push(tool_calls(&[
        ("long", "bash", r#"{"command":"echo begun; sleep 30"}"#),
        ("quick", "bash", r#"{"command":"echo quick"}"#),
    ]));
    let started = Instant::now();
    let (child, mut out) = spawn(&w, &["--json", "-p", "run it"]);
    read_until_all(&mut out, |seen| {
        let begun = seen.iter().any(|e| {
            e["type"] == "tool_execution_update"
                && e["toolCallId"] == "long"
                && e["partialResult"]["content"][0]["text"]
                    .as_str()
                    .is_some_and(|t| t.contains("begun"))
        });
        let quick = seen
            .iter()
            .any(|e| e["type"] == "tool_execution_end" && e["toolCallId"] == "quick");
        begun && quick
    });
    // Finished messages are in the file already, while the tool runs.
    let f = session_file(&w);
    assert_eq!(roles(&messages(&f)), ["user", "assistant"]);
    signal(&child, libc::SIGINT);
    let (code, rest) = finish(child, out);
    assert_eq!(code, 130);
    assert!(started.elapsed() < Duration::from_secs(15));
    assert!(
        rest.iter()
            .any(|e| e["type"] == "tool_execution_end" && e["toolCallId"] == "long")
    );
    let k: Vec<String> = kinds(&rest)
        .into_iter()
        .filter(|t| !t.starts_with("tool_execution"))
        .collect();
    assert_eq!(
        k,
        [
            "message_start:toolResult",
            "message_end:toolResult",
            "message_start:toolResult",
            "message_end:toolResult",
            "turn_end",
            "turn_start",
            "message_start:assistant",
            "message_end:assistant",
            "turn_end",
            "agent_end",
            "agent_settled"
        ]
    );
    let f = session_file(&w);
    let m = messages(&f);
    assert_eq!(
        roles(&m),
        ["user", "assistant", "toolResult", "toolResult", "assistant"]
    );
    assert_eq!(m[2]["toolCallId"], "long");
    assert_eq!(m[2]["isError"], true);
    assert_eq!(text(&m[2]), "begun\n\n\nCommand aborted");
    assert_eq!(text(&m[3]), "quick\n");
    assert_eq!(m[4]["stopReason"], "aborted");
    assert_eq!(m[4]["content"], serde_json::json!([]));
    // Only one request: the aborted answer after the tools was not asked for.
    assert_eq!(server.requests().len(), 1);
    resume(&w, &server, &f);
}

#[test]
fn sigterm_exits_143_after_recording_in_the_text_view() {
    let server = ModelServer::start();
    let w = world(&server);
    server.push(tool_calls(&[("t", "bash", r#"{"command":"sleep 30"}"#)]));
    let (child, out) = spawn(&w, &["-p", "wait"]);
    // The tool call is recorded before the tool runs.
    let start = Instant::now();
    let f = loop {
        let o = w.pi().args(["session", "resume"]).output().unwrap();
        if o.status.success() {
            let f = std::path::PathBuf::from(String::from_utf8_lossy(&o.stdout).trim());
            if messages(&f).len() == 2 {
                break f;
            }
        }
        assert!(start.elapsed() < Duration::from_secs(10));
        std::thread::sleep(Duration::from_millis(20));
    };
    std::thread::sleep(Duration::from_millis(200));
    signal(&child, libc::SIGTERM);
    let (code, _) = finish_text(child, out);
    assert_eq!(code, 143);
    assert_eq!(
        roles(&messages(&f)),
        ["user", "assistant", "toolResult", "assistant"]
    );
    check(&w, &f);
}

#[test]
fn a_running_session_is_locked_for_other_writers() {
    let server = ModelServer::start();
    let w = world(&server);
    let f = w.new_session();
    server.push(
        Reply::openai_text(&["slow ", "answer"]).stall_at("answer", Duration::from_millis(1500)),
    );
    let (child, mut stream) = spawn(&w, &[f.to_str().unwrap(), "--json", "-p", "take your time"]);
    read_until(&mut stream, |e| e["type"] == "message_update");
    // Cron compaction skips the busy session.
    let o = w
        .pi()
        .args(["compact", "--all", "--if-needed"])
        .output()
        .unwrap();
    assert!(out(&o).contains("\"reason\":\"locked\""), "{}", out(&o));
    // An append waits for the run and lands after it.
    let appended = w
        .pi()
        .args(["session", "append", f.to_str().unwrap()])
        .write_stdin(format!("{}\n", user("after the run")))
        .output()
        .unwrap();
    assert!(appended.status.success());
    let (code, _) = finish(child, stream);
    assert_eq!(code, 0);
    let m = messages(&f);
    assert_eq!(roles(&m), ["user", "assistant", "user"]);
    assert_eq!(text(&m[1]), "slow answer");
    check(&w, &f);
}
