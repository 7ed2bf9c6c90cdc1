//! `pi run --rpc` driven with exactly the lines the reference's `RpcClient` writes for each of
//! its calls (recorded by scripts/goldens/rpc-client.mjs into
//! tests/fixtures/rpc/client-commands.jsonl), against the scripted model server: every call
//! gets a successful response of the reference's shape, and every session file written
//! passes `pi session check`.

use serde_json::{Value, json};

use crate::common::model_server::{ModelServer, Reply};
use crate::common::*;
use crate::run_rpc::Client;
use crate::run_support::*;

/// The recorded lines, in call order.
fn recorded() -> Vec<String> {
    let path = fixture("rpc/client-commands.jsonl");
    std::fs::read_to_string(path)
        .unwrap()
        .lines()
        .map(str::to_owned)
        .collect()
}

/// A JSON string's contents as they appear inside a JSON line.
fn json_inner(s: &str) -> String {
    let q = serde_json::to_string(s).unwrap();
    q[1..q.len() - 1].to_owned()
}

/// Sends one recorded line (placeholders filled in) and returns its response.
fn replay(c: &mut Client, line: &str, fill: &[(&str, String)]) -> Value {
    let mut line = line.to_owned();
    for (k, v) in fill {
        line = line.replace(k, &json_inner(v));
    }
    let v: Value = serde_json::from_str(&line).unwrap();
    let id = v["id"].as_str().unwrap().to_owned();
    c.send_raw(format!("{line}\n").as_bytes());
    let r = c.response(&id);
    assert_eq!(r["success"], true, "{line} -> {r}");
    assert_eq!(r["command"], v["type"], "{r}");
    r
}

#[test]
fn every_client_call_succeeds_with_the_reference_shapes() {
    let server = ModelServer::start();
    let w = world(&server);
    w.write(
        "agent/models.json",
        json!({"providers": {"mock": {"baseUrl": format!("{}/v1", server.url()),
            "api": "openai-completions", "apiKey": KEY,
            "models": [{"id": "m1", "contextWindow": 100000}, {"id": "small", "contextWindow": 50000}]}}})
        .to_string(),
    );
    settings(&w, json!({"compaction": {"keepRecentTokens": 10}}));
    w.write(
        "agent/prompts/greet.md",
        "---\ndescription: Greets someone\n---\nSay hello to $1\n",
    );
    w.write(
        "agent/skills/demo/SKILL.md",
        "---\nname: demo\ndescription: A demo skill\n---\nDo the demo.\n",
    );
    let tool = crate::ext_hooks::script(
        &w,
        "tools/stamp.sh",
        r#"if [ "$1" = --describe ]; then echo '{"name": "stamp", "description": "Stamps a file"}'; exit 0; fi; echo stamped"#,
    );
    let lines = recorded();
    assert_eq!(lines.len(), 32, "one line per call of the recording script");
    let by_type = |t: &str| -> Vec<&String> {
        lines
            .iter()
            .filter(|l| serde_json::from_str::<Value>(l).unwrap()["type"] == t)
            .collect()
    };
    // Every command of the reference's protocol is in the recording.
    for t in [
        "prompt",
        "steer",
        "follow_up",
        "abort",
        "new_session",
        "get_state",
        "set_model",
        "cycle_model",
        "get_available_models",
        "set_thinking_level",
        "cycle_thinking_level",
        "set_steering_mode",
        "set_follow_up_mode",
        "compact",
        "set_auto_compaction",
        "set_auto_retry",
        "abort_retry",
        "bash",
        "abort_bash",
        "get_session_stats",
        "export_html",
        "switch_session",
        "fork",
        "clone",
        "get_fork_messages",
        "get_last_assistant_text",
        "set_session_name",
        "get_messages",
        "get_commands",
    ] {
        assert!(!by_type(t).is_empty(), "{t} was not recorded");
    }

    let mut c = Client::start(&w, &["--tool", tool.to_str().unwrap()]);
    let export = w.path("proj/out/page.html");
    std::fs::create_dir_all(export.parent().unwrap()).unwrap();
    let parent = w.path("parent.jsonl").to_string_lossy().into_owned();
    let mut fill: Vec<(&str, String)> = vec![
        ("@OUT@", export.to_string_lossy().into_owned()),
        ("@PARENT@", parent.clone()),
    ];
    let mut first_session = String::new();
    let mut switched = false;
    let mut files = Vec::new();
    for line in &lines {
        let ty = serde_json::from_str::<Value>(line).unwrap()["type"]
            .as_str()
            .unwrap()
            .to_owned();
        if ty == "compact" && switched {
            // The switched-to session was compacted already: give it something new first.
            server.push(Reply::openai_text(&["Again."]));
            c.call("again", json!({"type": "prompt", "message": "again"}));
            c.agent_end();
        }
        match ty.as_str() {
            "prompt" => server.push(Reply::openai_text(&["Hello ", "there."])),
            // A summary of the history and one of a cut turn, at most.
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
            "prompt" => {
                c.agent_end();
            }
            "get_available_models" => assert_eq!(d["models"].as_array().unwrap().len(), 2),
            "cycle_model" => {
                assert_eq!(d["model"]["id"], "m1");
                assert_eq!(d["isScoped"], false);
                assert_eq!(d["thinkingLevel"], "off");
            }
            "cycle_thinking_level" => assert_eq!(d, &Value::Null),
            "bash" => {
                assert_eq!(
                    d,
                    &json!({"output": "one\ntwo\n", "exitCode": 0, "cancelled": false, "truncated": false})
                );
                assert!(c.seen.iter().any(|e| e["type"] == "bash_execution_update"));
            }
            "get_commands" => {
                let names: Vec<&str> = d["commands"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .map(|c| c["name"].as_str().unwrap())
                    .collect();
                assert_eq!(names, ["stamp", "greet", "skill:demo"]);
                let stamp = &d["commands"][0];
                assert_eq!(stamp["source"], "extension");
                assert_eq!(stamp["description"], "Stamps a file");
                assert_eq!(stamp["sourceInfo"]["path"], tool.to_str().unwrap());
                let greet = &d["commands"][1];
                assert_eq!(greet["source"], "prompt");
                assert_eq!(greet["description"], "Greets someone");
                assert_eq!(greet["sourceInfo"]["scope"], "user");
            }
            "get_fork_messages" => {
                let m = &d["messages"][0];
                assert_eq!(m["text"], "Say hello");
                fill.push(("@ENTRY@", m["entryId"].as_str().unwrap().to_owned()));
            }
            "export_html" => {
                let p = d["path"].as_str().unwrap();
                let page = std::fs::read_to_string(w.path("proj").join(p)).unwrap();
                assert!(page.starts_with("<!DOCTYPE html>") || page.contains("<html"));
            }
            "compact" => assert!(!d["summary"].as_str().unwrap().is_empty()),
            "fork" => assert_eq!(d, &json!({"text": "Say hello", "cancelled": false})),
            "clone" | "new_session" | "switch_session" => {
                assert_eq!(d, &json!({"cancelled": false}));
            }
            _ => {}
        }
        if matches!(
            ty.as_str(),
            "fork" | "clone" | "new_session" | "switch_session"
        ) {
            let st = c.call(&format!("st-{}", r["id"]), json!({"type": "get_state"}));
            files.push(st["data"]["sessionFile"].as_str().unwrap().to_owned());
        }
    }
    let (code, rest) = c.close();
    assert_eq!(code, 0, "{rest:?}");
    // fork, clone, new_session ×2 and switch_session: the files are those `pi session` writes.
    assert_eq!(files.len(), 5);
    assert_eq!(
        files[3], first_session,
        "switch_session works on the first session"
    );
    let header = |f: &str| lines_of(f)[0].clone();
    assert_eq!(header(&files[0])["parentSession"], first_session.as_str());
    assert_eq!(header(&files[1])["parentSession"], files[0].as_str());
    assert_eq!(header(&files[2])["parentSession"], parent.as_str());
    assert!(header(&files[4]).get("parentSession").is_none());
    // The first session: the prompt, its answer, the shell command, the compactions.
    let first = lines_of(&first_session);
    let roles: Vec<&str> = first
        .iter()
        .filter(|e| e["type"] == "message")
        .map(|e| e["message"]["role"].as_str().unwrap())
        .collect();
    assert_eq!(
        roles,
        [
            "system",
            "user",
            "assistant",
            "bashExecution",
            "user",
            "assistant"
        ]
    );
    let bash = first
        .iter()
        .find(|e| e["message"]["role"] == "bashExecution")
        .unwrap();
    assert_eq!(bash["message"]["command"], "printf 'one\\ntwo\\n'");
    assert_eq!(bash["message"]["output"], "one\ntwo\n");
    assert_eq!(
        first.iter().filter(|e| e["type"] == "compaction").count(),
        2
    );
    for f in files.iter().chain([&first_session]) {
        check(&w, std::path::Path::new(f));
    }
}

fn lines_of(f: &str) -> Vec<Value> {
    lines(std::path::Path::new(f))
}
