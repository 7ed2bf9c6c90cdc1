//! `pi run --rpc` held to the reference 1.6's RPC protocol, from goldens recorded by
//! scripts/goldens/rpc-16.mjs (no Node needed here):
//!
//! - tests/fixtures/rpc/client-commands-1.6.jsonl: the line 1.6's own `RpcClient` writes for
//!   each of its 33 command methods. Replayed to pi, every call succeeds with the data the
//!   client reads (the four commands new since 0.73, `disposition`, the compact result's
//!   fields).
//! - tests/fixtures/rpc/transcript-1.6.json: a conversation with 1.6's own RPC mode against
//!   a scripted model. The same commands and the same model replies given to pi produce the
//!   same records in the same order, with the same fields (`message_update` delta-only with
//!   `usage`, `agent_end.willRetry`, `agent_settled`, `durationMs`,
//!   `bash_execution_update`, `estimatedTokensAfter` and `usage` of a compaction), and the
//!   same values where they do not depend on time, ids or paths.

use std::collections::BTreeSet;

use serde_json::{Value, json};

use crate::common::model_server::{ModelServer, Reply};
use crate::common::*;
use crate::run_rpc::Client;
use crate::run_support::*;

fn client_lines() -> Vec<String> {
    std::fs::read_to_string(fixture("rpc/client-commands-1.6.jsonl"))
        .unwrap()
        .lines()
        .map(str::to_owned)
        .collect()
}

fn golden() -> Value {
    let text = std::fs::read_to_string(fixture("rpc/transcript-1.6.json")).unwrap();
    serde_json::from_str(&text).unwrap()
}

/// The world of the recordings: `mock` (OpenAI Chat Completions) with `m1` and `small`.
fn world_16(server: &ModelServer) -> World {
    let w = world(server);
    w.write(
        "agent/models.json",
        json!({"providers": {"mock": {"baseUrl": format!("{}/v1", server.url()),
            "api": "openai-completions", "apiKey": KEY,
            "models": [{"id": "m1", "contextWindow": 100000, "maxTokens": 4000},
                       {"id": "small", "contextWindow": 50000, "maxTokens": 4000}]}}})
        .to_string(),
    );
    settings(&w, json!({"compaction": {"keepRecentTokens": 10}}));
    w
}

/// Sends a line (placeholders filled in) and returns its response, which must succeed.
fn replay(c: &mut Client, line: &str, fill: &[(&str, String)]) -> Value {
    let mut line = line.to_owned();
    for (k, v) in fill {
        line = line.replace(k, v);
    }
    let v: Value = serde_json::from_str(&line).unwrap();
    let id = v["id"].as_str().unwrap().to_owned();
    c.send_raw(format!("{line}\n").as_bytes());
    let r = c.response(&id);
    assert_eq!(r["success"], true, "{line} -> {r}");
    assert_eq!(r["command"], v["type"], "{r}");
    r
}

fn settled(c: &mut Client) -> Value {
    c.until(|v| v["type"] == "agent_settled")
}

#[test]
fn every_call_of_the_1_6_client_succeeds() {
    let server = ModelServer::start();
    let w = world_16(&server);
    let lines = client_lines();
    assert_eq!(lines.len(), 38, "one line per call of the recording script");
    let types: BTreeSet<String> = lines
        .iter()
        .map(|l| {
            serde_json::from_str::<Value>(l).unwrap()["type"]
                .as_str()
                .unwrap()
                .to_owned()
        })
        .collect();
    // The 33 commands of 1.6's protocol, each sent by its client method.
    assert_eq!(types.len(), 33, "{types:?}");
    for t in [
        "clear_queue",
        "get_available_thinking_levels",
        "get_entries",
        "get_tree",
    ] {
        assert!(types.contains(t), "{t} was not recorded");
    }

    let mut c = Client::start(&w, &[]);
    let export = w.path("proj/out/page.html");
    std::fs::create_dir_all(export.parent().unwrap()).unwrap();
    let parent = w.path("parent.jsonl").to_string_lossy().into_owned();
    let mut fill: Vec<(&str, String)> = vec![
        ("@OUT@", export.to_string_lossy().into_owned()),
        ("@PARENT@", parent.clone()),
    ];
    let mut first_session = String::new();
    let mut switched = false;
    for line in &lines {
        let cmd: Value = serde_json::from_str(line).unwrap();
        let ty = cmd["type"].as_str().unwrap().to_owned();
        if ty == "compact" && switched {
            // The switched-to session was compacted already: give it something new first.
            server.push(Reply::openai_text(&["Again."]));
            c.call("again", json!({"type": "prompt", "message": "again"}));
            settled(&mut c);
        }
        match ty.as_str() {
            "prompt" => server.push(Reply::openai_text(&["Hello ", "there."])),
            "compact" => {
                server.push(Reply::openai_text(&["## Goal\nSay hello."]));
                server.push(Reply::openai_text(&["## Goal\nThe turn."]));
            }
            "switch_session" => switched = true,
            _ => {}
        }
        let r = replay(&mut c, line, &fill);
        let d = &r["data"];
        match ty.as_str() {
            "get_state" if first_session.is_empty() => {
                first_session = d["sessionFile"].as_str().unwrap().to_owned();
                fill.push(("@SESSION@", first_session.clone()));
            }
            "get_available_thinking_levels" => assert_eq!(d, &json!({"levels": ["off"]})),
            // An idle prompt starts a run, whatever its streamingBehavior.
            "prompt" => {
                assert_eq!(d, &json!({"disposition": "started"}));
                let s = settled(&mut c);
                assert_eq!(s, json!({"type": "agent_settled", "aborted": false}));
            }
            "steer" | "follow_up" => assert_eq!(d, &json!({"disposition": "queued"})),
            "clear_queue" => assert_eq!(
                d,
                &json!({"steering": ["steer text"], "followUp": ["follow-up text"]})
            ),
            "get_entries" if cmd.get("since").is_none() => {
                let entries = d["entries"].as_array().unwrap();
                let user = entries
                    .iter()
                    .find(|e| e["message"]["role"] == "user")
                    .unwrap();
                fill.push(("@ENTRY@", user["id"].as_str().unwrap().to_owned()));
                assert_eq!(d["leafId"], entries.last().unwrap()["id"]);
            }
            "get_entries" => {
                // Only what follows the user message: the answer.
                let roles: Vec<&Value> = d["entries"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .map(|e| &e["message"]["role"])
                    .collect();
                assert_eq!(roles, [&json!("assistant")]);
            }
            "get_tree" => {
                let tree = d["tree"].as_array().unwrap();
                assert_eq!(tree.len(), 1, "one root");
                let mut depth = 0;
                let mut node = &tree[0];
                while let Some(next) = node["children"].as_array().and_then(|c| c.first()) {
                    depth += 1;
                    node = next;
                }
                assert_eq!(node["entry"]["id"], d["leafId"]);
                assert!(depth >= 2, "model, thinking level, prompt, answer: {d}");
            }
            "bash" => assert_eq!(
                d,
                &json!({"output": "one\ntwo\n", "exitCode": 0, "cancelled": false, "truncated": false})
            ),
            "compact" => {
                let keys: Vec<&String> = d.as_object().unwrap().keys().collect();
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
                assert!(d["estimatedTokensAfter"].as_f64().unwrap() > 0.0);
                assert!(d["usage"]["output"].as_u64().unwrap() > 0);
            }
            "fork" => assert_eq!(d, &json!({"text": "Say hello", "cancelled": false})),
            "clone" | "new_session" | "switch_session" => {
                assert_eq!(d, &json!({"cancelled": false}));
            }
            _ => {}
        }
    }
    let (code, rest) = c.close();
    assert_eq!(code, 0, "{rest:?}");
    check(&w, std::path::Path::new(&first_session));
}

/// What a record is, for lining up two transcripts: a response's command and success, an
/// event's type (with the message's role, or the stream event's type).
fn kind(v: &Value) -> String {
    let t = v["type"].as_str().unwrap_or_default();
    match t {
        "response" => format!(
            "response:{}:{}",
            v["command"].as_str().unwrap(),
            v["success"]
        ),
        "message_start" | "message_end" => {
            format!("{t}:{}", v["message"]["role"].as_str().unwrap_or_default())
        }
        "message_update" => format!(
            "{t}:{}",
            v["assistantMessageEvent"]["type"]
                .as_str()
                .unwrap_or_default()
        ),
        _ => t.to_owned(),
    }
}

fn keys(v: &Value) -> Vec<String> {
    v.as_object()
        .map(|o| o.keys().cloned().collect())
        .unwrap_or_default()
}

/// The entries' kinds (type and role).
fn entry_kinds(entries: &Value) -> Vec<String> {
    entries
        .as_array()
        .unwrap()
        .iter()
        .map(|e| {
            format!(
                "{}:{}",
                e["type"].as_str().unwrap(),
                e["message"]["role"].as_str().unwrap_or("")
            )
        })
        .collect()
}

/// The tree's kinds, depth first, each with its depth.
fn tree_kinds(nodes: &Value, depth: usize, out: &mut Vec<String>) {
    for n in nodes.as_array().unwrap() {
        let e = &n["entry"];
        out.push(format!(
            "{depth}:{}:{}",
            e["type"].as_str().unwrap(),
            e["message"]["role"].as_str().unwrap_or("")
        ));
        tree_kinds(&n["children"], depth + 1, out);
    }
}

/// Compares one record of pi's with the reference's.
fn compare(pi: &Value, reference: &Value) {
    let k = kind(reference);
    assert_eq!(kind(pi), k);
    let top = |v: &Value| keys(v);
    match reference["type"].as_str().unwrap() {
        "response" => {
            assert_eq!(top(pi), top(reference), "{k}: {pi}");
            let (d, rd) = (&pi["data"], &reference["data"]);
            match reference["command"].as_str().unwrap() {
                "get_state" | "get_session_stats" | "compact" => {
                    assert_eq!(keys(d), keys(rd), "{k}: {d}");
                }
                "get_entries" if reference["success"] == true => {
                    assert_eq!(keys(d), keys(rd));
                    assert_eq!(entry_kinds(&d["entries"]), entry_kinds(&rd["entries"]));
                    assert_eq!(
                        d["leafId"],
                        d["entries"].as_array().unwrap().last().unwrap()["id"]
                    );
                }
                "get_tree" => {
                    assert_eq!(keys(d), keys(rd));
                    let (mut a, mut b) = (Vec::new(), Vec::new());
                    tree_kinds(&d["tree"], 0, &mut a);
                    tree_kinds(&rd["tree"], 0, &mut b);
                    assert_eq!(a, b);
                    assert_eq!(keys(&d["tree"][0]), keys(&rd["tree"][0]));
                }
                // The rest do not depend on time, ids or paths.
                _ => assert_eq!(pi, reference),
            }
        }
        "message_update" => {
            assert_eq!(top(pi), top(reference), "{k}");
            // 1.6 also counts `reasoning` tokens (a usage field pi does not record yet).
            let (pk, rk) = (keys(&pi["usage"]), keys(&reference["usage"]));
            assert_eq!(
                pk,
                [
                    "input",
                    "output",
                    "cacheRead",
                    "cacheWrite",
                    "totalTokens",
                    "cost"
                ]
            );
            assert!(pk.iter().all(|k| rk.contains(k)), "{rk:?}");
            assert_eq!(
                pi["assistantMessageEvent"],
                reference["assistantMessageEvent"]
            );
        }
        "tool_execution_end" => {
            assert_eq!(top(pi), top(reference), "{k}: {pi}");
            assert!(pi["durationMs"].is_u64());
            assert_eq!(pi["result"]["content"], reference["result"]["content"]);
        }
        "compaction_end" => {
            assert_eq!(top(pi), top(reference));
            assert_eq!(keys(&pi["result"]), keys(&reference["result"]));
            assert_eq!(pi["willRetry"], reference["willRetry"]);
        }
        "agent_end" => {
            assert_eq!(top(pi), top(reference));
            assert_eq!(pi["willRetry"], reference["willRetry"]);
        }
        "message_start" | "message_end" | "turn_end" | "tool_execution_start" => {
            assert_eq!(top(pi), top(reference), "{k}");
        }
        // agent_settled, queue_update, bash_execution_update, …: the same line.
        _ => assert_eq!(pi, reference),
    }
}

/// Output chunks split where the pipe happened to deliver them: consecutive
/// `bash_execution_update`s of a command are joined.
fn join_chunks(records: &[Value]) -> Vec<Value> {
    let mut out: Vec<Value> = Vec::new();
    for r in records {
        if let Some(prev) = out.last_mut()
            && r["type"] == "bash_execution_update"
            && prev["type"] == "bash_execution_update"
            && prev["id"] == r["id"]
        {
            let joined = format!(
                "{}{}",
                prev["delta"].as_str().unwrap(),
                r["delta"].as_str().unwrap()
            );
            prev["delta"] = json!(joined);
        } else {
            out.push(r.clone());
        }
    }
    out
}

#[test]
fn a_conversation_gives_the_records_of_1_6() {
    let g = golden();
    let server = ModelServer::start();
    let w = world_16(&server);
    w.write("proj/notes.txt", "hello\n");
    for chunks in g["replies"].as_array().unwrap() {
        server.push(Reply::openai_chunks(chunks.as_array().unwrap()));
    }
    // The reference's records after each command, up to the next one.
    let mut segments: Vec<(Value, Vec<Value>)> = Vec::new();
    for t in g["transcript"].as_array().unwrap() {
        if let Some(cmd) = t.get("in") {
            segments.push((cmd.clone(), Vec::new()));
        } else if let Some((_, outs)) = segments.last_mut() {
            outs.push(t["out"].clone());
        }
    }
    assert!(segments.len() >= 15, "the recording has its commands");
    let mut c = Client::start(&w, &[]);
    // The reference's entry ids and pi's, lined up by the entries' order.
    let mut ids: Vec<(Value, Value)> = Vec::new();
    for (cmd, expected) in &segments {
        let before = c.seen.len();
        let mut cmd = cmd.clone();
        if let Some(since) = cmd.get("since").cloned()
            && let Some((_, ours)) = ids.iter().find(|(theirs, _)| *theirs == since)
        {
            cmd["since"] = ours.clone();
        }
        c.send(cmd.clone());
        let id = cmd["id"].as_str().unwrap().to_owned();
        let last = expected.last().unwrap().clone();
        // Everything the reference wrote for this command: up to its response, or up to
        // `agent_settled` when the response comes first.
        c.until(|v| {
            if last["type"] == "response" {
                v["type"] == "response" && v["id"] == id
            } else {
                v["type"] == last["type"]
            }
        });
        let got = join_chunks(&c.seen[before..]);
        let expected = &join_chunks(expected);
        let kinds_got: Vec<String> = got.iter().map(kind).collect();
        let kinds_ref: Vec<String> = expected.iter().map(kind).collect();
        assert_eq!(kinds_got, kinds_ref, "after {cmd}");
        for (a, b) in got.iter().zip(expected.iter()) {
            compare(a, b);
            if a["command"] == "get_entries" && a["success"] == true {
                let listed = |v: &Value| -> Vec<Value> {
                    v["data"]["entries"]
                        .as_array()
                        .unwrap()
                        .iter()
                        .map(|e| e["id"].clone())
                        .collect()
                };
                ids.extend(listed(b).into_iter().zip(listed(a)));
            }
        }
    }
    let (code, rest) = c.close();
    assert_eq!(code, 0, "{rest:?}");
    assert!(rest.is_empty(), "{rest:?}");
    // The output kept out of the context is not sent; the other one is.
    let last = server.requests().last().unwrap().text();
    assert!(last.contains("Ran `printf"), "{last}");
    assert!(!last.contains("hidden"), "{last}");
}
