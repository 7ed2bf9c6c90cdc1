//! A hostile model server (issue 30): huge tool-call arguments in tiny deltas, the same
//! delta repeated many times, a connection cut in the middle, an error body of megabytes
//! and an answer past pi's limit. pi keeps every byte it is sent (up to the documented
//! caps), its `--json` output grows linearly with the answer (`message_update` carries the
//! delta, not the message), and what it cannot keep ends with a clear error. The time these
//! take is measured by `scripts/bench.py --only hostile`, never asserted here.

use serde_json::{Value, json};

use crate::common::model_server::{ModelServer, Reply};
use crate::common::*;
use crate::run_support::*;

/// An OpenAI stream calling `read` with `args` (JSON text) sent in deltas of `piece` bytes.
fn tool_call_in_pieces(args: &str, piece: usize) -> Reply {
    let mut chunks = vec![
        json!({"id": "c", "choices": [{"index": 0, "delta": {"role": "assistant", "content": null,
        "tool_calls": [{"index": 0, "id": "call_1", "type": "function",
                        "function": {"name": "read", "arguments": ""}}]}}]}),
    ];
    for part in args.as_bytes().chunks(piece) {
        let part = std::str::from_utf8(part).unwrap();
        chunks.push(
            json!({"id": "c", "choices": [{"index": 0, "delta": {"tool_calls": [
            {"index": 0, "function": {"arguments": part}}]}}]}),
        );
    }
    chunks.push(json!({"id": "c", "choices": [{"index": 0, "delta": {},
        "finish_reason": "tool_calls"}]}));
    Reply::openai_chunks(&chunks)
}

fn no_retries(w: &World) {
    settings(
        w,
        json!({"retry": {"enabled": false, "baseDelayMs": 10, "provider": {"maxRetries": 0}}}),
    );
}

fn assistant_messages(w: &World) -> Vec<Value> {
    messages(&session_file(w))
        .into_iter()
        .filter(|m| m["role"] == "assistant")
        .collect()
}

#[test]
fn a_megabyte_of_arguments_in_tiny_deltas_is_kept_whole_and_streamed_as_deltas() {
    let server = ModelServer::start();
    let w = world(&server);
    let path = "p".repeat(1 << 20);
    let args = json!({"path": path}).to_string();
    let piece = 64;
    server.push(tool_call_in_pieces(&args, piece).split(1500));
    server.push(Reply::openai_text(&["done"]));
    let o = run(&w, &["--json", "-p", "read it"]);
    status(&o, 0);
    let evs = events(&o);
    let deltas: Vec<&Value> = evs
        .iter()
        .filter(|e| {
            e["assistantMessageEvent"]["type"] == "toolcall_delta"
                && e["assistantMessageEvent"]["delta"] != ""
        })
        .collect();
    assert_eq!(deltas.len(), args.len().div_ceil(piece));
    let joined: String = deltas
        .iter()
        .map(|e| e["assistantMessageEvent"]["delta"].as_str().unwrap())
        .collect();
    assert_eq!(joined, args);
    // No update carries the message: output linear in the answer (it was the whole
    // message per update, 8 GB here).
    assert!(
        evs.iter()
            .filter(|e| e["type"] == "message_update")
            .all(|e| e.get("message").is_none())
    );
    assert!(
        o.stdout.len() < 24 << 20,
        "{} bytes of output",
        o.stdout.len()
    );
    // The arguments arrived whole: in the session, and in the second request.
    let answers = assistant_messages(&w);
    assert_eq!(answers[0]["content"][0]["arguments"]["path"], path.as_str());
    let second = server.requests()[1].json();
    let sent = second["messages"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["role"] == "assistant")
        .unwrap()["tool_calls"][0]["function"]["arguments"]
        .as_str()
        .unwrap()
        .to_owned();
    assert_eq!(
        serde_json::from_str::<Value>(&sent).unwrap()["path"],
        path.as_str()
    );
}

#[test]
fn a_delta_repeated_many_times_then_a_cut_connection_keeps_what_came() {
    let server = ModelServer::start();
    let w = world(&server);
    no_retries(&w);
    let n = 100_000;
    let pieces = vec!["ab"; n];
    let reply = Reply::openai_text(&pieces);
    let full = reply
        .steps
        .iter()
        .map(|s| match s {
            crate::common::model_server::Step::Bytes(b) => b.len(),
            _ => 0,
        })
        .sum::<usize>();
    // Cut about two thirds of the way through.
    server.push(reply.cut_after(full * 2 / 3));
    let o = run(&w, &["-p", "talk"]);
    status(&o, 1);
    assert!(err(&o).contains("terminated"), "{}", err(&o));
    let answers = assistant_messages(&w);
    assert_eq!(answers.len(), 1);
    assert_eq!(answers[0]["stopReason"], "error");
    let got = text(&answers[0]);
    assert!(
        got.len() > n / 2 && got.len() < 2 * n,
        "{} bytes",
        got.len()
    );
    assert!(got.len().is_multiple_of(2) && got.bytes().enumerate().all(|(i, b)| b == b"ab"[i % 2]));
    check(&w, &session_file(&w));
}

#[test]
fn an_answer_past_the_limit_ends_with_a_clear_error() {
    let server = ModelServer::start();
    let w = world(&server);
    no_retries(&w);
    // 33 MiB of text in 64 KiB deltas: past the 32 MiB an answer may hold.
    let piece = "x".repeat(64 << 10);
    let pieces = vec![piece.as_str(); 33 * 16];
    server.push(Reply::openai_text(&pieces));
    let o = run(&w, &["-p", "talk", "--json"]);
    status(&o, 1);
    let end = events(&o)
        .into_iter()
        .rfind(|e| e["type"] == "message_end")
        .unwrap();
    let error = end["message"]["errorMessage"].as_str().unwrap().to_owned();
    assert!(
        error.contains("the answer is too large") && error.contains("32 MiB"),
        "{error}"
    );
    let kept = text(&end["message"]).len();
    assert!(
        (32 << 20) < kept && kept <= (32 << 20) + (1 << 20),
        "{kept}"
    );
}

#[test]
fn an_error_body_of_megabytes_is_read_up_to_64_kib() {
    let server = ModelServer::start();
    let w = world(&server);
    no_retries(&w);
    let body = format!(
        r#"{{"error":{{"message":"bad request {}"}}}}"#,
        "y".repeat(8 << 20)
    );
    server.push(Reply::status(400, &body));
    let o = run(&w, &["-p", "talk"]);
    status(&o, 1);
    let answers = assistant_messages(&w);
    let error = answers[0]["errorMessage"].as_str().unwrap();
    assert!(error.starts_with("400"), "{}", &error[..100]);
    assert!(error.len() < 70 << 10, "{} bytes", error.len());
}

#[test]
fn a_body_past_the_limit_ends_with_a_clear_error() {
    let server = ModelServer::start();
    let w = world(&server);
    no_retries(&w);
    // A little text, then 129 MiB of SSE comments: no content, but a body past 128 MiB.
    let mut body = String::from(
        "data: {\"id\":\"c\",\"choices\":[{\"index\":0,\"delta\":{\"role\":\"assistant\",\"content\":\"hi\"}}]}\n\n",
    );
    let comment = format!(": {}\n", "z".repeat((1 << 20) - 3));
    for _ in 0..129 {
        body.push_str(&comment);
    }
    server.push(Reply::sse(body).split(1 << 20));
    let o = run(&w, &["-p", "talk"]);
    status(&o, 1);
    assert!(
        err(&o).contains("the answer is too large: its body passed 128 MiB"),
        "{}",
        err(&o)
    );
    let answers = assistant_messages(&w);
    assert_eq!(text(&answers[0]), "hi");
}
