//! `pi run` and `pi compact` against the OpenAI Responses family (`openai-responses`,
//! `azure-openai-responses`, `openai-codex-responses`) and Mistral (`mistral-conversations`)
//! through the scripted model server: the path and credentials of each API, a tool call
//! answered in a second turn that carries the first turn's reasoning item back, and a
//! compaction summary written to the session.

use serde_json::{Value, json};

use crate::common::model_server::{ModelServer, Reply};
use crate::common::*;
use crate::run_support::{lines, messages, out, roles, run, settings, status};

const KEY: &str = "sk-resp-test-5b21c0";
/// A ChatGPT OAuth token as Codex reads it: a JWT naming the account `acct-run-1`.
const CODEX_TOKEN: &str = "eyJhbGciOiJub25lIiwidHlwIjoiSldUIn0.eyJodHRwczovL2FwaS5vcGVuYWkuY29tL2F1dGgiOnsiY2hhdGdwdF9hY2NvdW50X2lkIjoiYWNjdC1ydW4tMSJ9LCJleHAiOjQxMDI0NDQ4MDB9.c2ln";

fn world(server: &ModelServer) -> World {
    let w = World::new();
    let model =
        |id: &str| json!({"id": id, "reasoning": true, "contextWindow": 100000, "maxTokens": 4000});
    w.write(
        "agent/models.json",
        json!({"providers": {
            "oai": {"baseUrl": format!("{}/v1", server.url()), "api": "openai-responses",
                    "apiKey": KEY, "models": [model("gpt-r")]},
            "az": {"baseUrl": format!("{}/openai/v1", server.url()), "api": "azure-openai-responses",
                   "apiKey": KEY, "models": [model("gpt-az")]},
            "cx": {"baseUrl": format!("{}/backend-api", server.url()), "api": "openai-codex-responses",
                   "apiKey": CODEX_TOKEN, "models": [model("gpt-cx")]},
            "mi": {"baseUrl": server.url(), "api": "mistral-conversations",
                   "apiKey": KEY, "models": [model("mistral-m")]}
        }})
        .to_string(),
    );
    settings(
        &w,
        json!({"defaultProvider": "oai", "defaultModel": "gpt-r"}),
    );
    w.write("proj/a.txt", "alpha\n");
    w
}

/// A Responses answer: a reasoning item (encrypted), then a `read` call of a.txt.
fn responses_tool_call() -> Reply {
    let resp = |status: &str| json!({"id": "resp_t1", "object": "response", "status": status, "model": "m", "output": []});
    let reasoning = json!({"id": "rs_1", "type": "reasoning", "encrypted_content": "gAAAA-enc-1",
                           "summary": [{"type": "summary_text", "text": "Look at a.txt."}]});
    let call = json!({"id": "fc_1", "type": "function_call", "status": "completed",
                      "arguments": "{\"path\":\"a.txt\"}", "call_id": "call_1", "name": "read"});
    Reply::responses_events(&[
        json!({"type": "response.created", "response": resp("in_progress")}),
        json!({"type": "response.output_item.added", "output_index": 0,
               "item": {"id": "rs_1", "type": "reasoning", "summary": []}}),
        json!({"type": "response.reasoning_summary_part.added", "item_id": "rs_1", "output_index": 0,
               "summary_index": 0, "part": {"type": "summary_text", "text": ""}}),
        json!({"type": "response.reasoning_summary_text.delta", "item_id": "rs_1", "output_index": 0,
               "summary_index": 0, "delta": "Look at a.txt."}),
        json!({"type": "response.output_item.done", "output_index": 0, "item": reasoning}),
        json!({"type": "response.output_item.added", "output_index": 1,
               "item": {"id": "fc_1", "type": "function_call", "status": "in_progress",
                        "arguments": "", "call_id": "call_1", "name": "read"}}),
        json!({"type": "response.function_call_arguments.delta", "item_id": "fc_1", "output_index": 1,
               "delta": "{\"path\":\"a.txt\"}"}),
        json!({"type": "response.output_item.done", "output_index": 1, "item": call}),
        json!({"type": "response.completed", "response": {"id": "resp_t1", "status": "completed",
               "usage": {"input_tokens": 50, "output_tokens": 10, "total_tokens": 60}}}),
    ])
}

/// Runs a prompt that reads a.txt and answers; returns the two requests.
fn tool_round_trip(provider: &str, model: &str) -> (World, Vec<Value>, Vec<String>) {
    let server = ModelServer::start();
    let w = world(&server);
    server.push(responses_tool_call());
    server.push(Reply::responses_text(&["It says ", "alpha."]));
    let o = run(
        &w,
        &[
            "--model",
            &format!("{provider}/{model}"),
            "--thinking",
            "low",
            "-p",
            "What is in a.txt?",
        ],
    );
    status(&o, 0);
    assert_eq!(out(&o), "It says alpha.\n");
    let reqs = server.requests();
    assert_eq!(reqs.len(), 2);
    let paths = reqs.iter().map(|r| r.path.clone()).collect();
    (w, reqs.iter().map(|r| r.json()).collect(), paths)
}

/// The second request sends the reasoning item back whole, then the call and its output.
fn assert_reasoning_carried(second: &Value) {
    let input = second["input"].as_array().unwrap();
    let at = input
        .iter()
        .position(|i| i["type"] == "reasoning")
        .expect("the reasoning item");
    assert_eq!(input[at]["id"], "rs_1");
    assert_eq!(input[at]["encrypted_content"], "gAAAA-enc-1");
    assert_eq!(input[at + 1]["type"], "function_call");
    assert_eq!(input[at + 1]["call_id"], "call_1");
    assert_eq!(input[at + 1]["id"], "fc_1");
    assert_eq!(input[at + 2]["type"], "function_call_output");
    assert_eq!(input[at + 2]["call_id"], "call_1");
    assert!(
        input[at + 2]["output"].as_str().unwrap().contains("alpha"),
        "{}",
        input[at + 2]
    );
    assert_eq!(second["include"], json!(["reasoning.encrypted_content"]));
}

#[test]
fn openai_responses_run_carries_reasoning_across_turns() {
    let (w, bodies, paths) = tool_round_trip("oai", "gpt-r");
    assert_eq!(paths, ["/v1/responses", "/v1/responses"]);
    assert_reasoning_carried(&bodies[1]);
    // The session's id is the prompt-cache key.
    let f = crate::run_support::session_file(&w);
    let id = lines(&f)[0]["id"].as_str().unwrap().to_owned();
    assert_eq!(bodies[0]["prompt_cache_key"], id.as_str());
    // The session records the reasoning as a signed thinking block.
    let m = messages(&f);
    assert_eq!(roles(&m), ["user", "assistant", "toolResult", "assistant"]);
    let sig: Value =
        serde_json::from_str(m[1]["content"][0]["thinkingSignature"].as_str().unwrap()).unwrap();
    assert_eq!(sig["encrypted_content"], "gAAAA-enc-1");
    assert_eq!(m[1]["content"][1]["id"], "call_1|fc_1");
    assert_eq!(m[3]["api"], "openai-responses");
}

#[test]
fn azure_responses_run_uses_the_deployment_url_and_api_key() {
    let server = ModelServer::start();
    let w = world(&server);
    server.push(Reply::responses_text(&["Hi."]));
    let o = run(&w, &["--model", "az/gpt-az", "-p", "Hello"]);
    status(&o, 0);
    assert_eq!(out(&o), "Hi.\n");
    let r = &server.requests()[0];
    assert_eq!(r.path, "/openai/v1/responses?api-version=v1");
    assert_eq!(r.header("api-key"), Some(KEY));
    assert_eq!(r.header("authorization"), None);
    assert_eq!(r.json()["model"], "gpt-az");
    // The round trip works the same way.
    let (_, bodies, paths) = tool_round_trip("az", "gpt-az");
    assert_eq!(paths[1], "/openai/v1/responses?api-version=v1");
    assert_reasoning_carried(&bodies[1]);
}

#[test]
fn codex_run_sends_the_account_and_instructions() {
    let server = ModelServer::start();
    let w = world(&server);
    server.push(Reply::responses_text(&["Hi."]));
    let o = run(&w, &["--model", "cx/gpt-cx", "-p", "Hello"]);
    status(&o, 0);
    let r = &server.requests()[0];
    assert_eq!(r.path, "/backend-api/codex/responses");
    assert_eq!(r.header("chatgpt-account-id"), Some("acct-run-1"));
    assert_eq!(
        r.header("authorization"),
        Some(format!("Bearer {CODEX_TOKEN}").as_str())
    );
    let b = r.json();
    assert!(
        b["instructions"]
            .as_str()
            .unwrap()
            .contains("<tools>\n- read:")
    );
    assert_eq!(b["store"], false);
    let (_, bodies, _) = tool_round_trip("cx", "gpt-cx");
    assert_reasoning_carried(&bodies[1]);
}

/// A Mistral chunk (chat completion chunk format).
fn mchunk(delta: Value, finish: Option<&str>, usage: Option<Value>) -> Value {
    let mut c = json!({"id": "cmpl-1", "object": "chat.completion.chunk", "model": "mistral-m",
                       "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]});
    if let Some(u) = usage {
        c["usage"] = u;
    }
    c
}

#[test]
fn mistral_run_keeps_its_tool_call_ids() {
    let server = ModelServer::start();
    let w = world(&server);
    let usage = json!({"prompt_tokens": 40, "completion_tokens": 8, "total_tokens": 48});
    server.push(Reply::openai_chunks(&[
        mchunk(json!({"role": "assistant", "content": ""}), None, None),
        mchunk(
            json!({"content": "", "tool_calls": [{"id": "Ab12Cd34E", "index": 0,
                "function": {"name": "read", "arguments": "{\"path\": \"a.txt\"}"}}]}),
            Some("tool_calls"),
            Some(usage.clone()),
        ),
    ]));
    server.push(Reply::openai_chunks(&[
        mchunk(
            json!({"role": "assistant", "content": "It says alpha."}),
            None,
            None,
        ),
        mchunk(json!({"content": ""}), Some("stop"), Some(usage)),
    ]));
    let o = run(&w, &["--model", "mi/mistral-m", "-p", "What is in a.txt?"]);
    status(&o, 0);
    assert_eq!(out(&o), "It says alpha.\n");
    let reqs = server.requests();
    assert_eq!(reqs.len(), 2);
    assert_eq!(reqs[0].path, "/v1/chat/completions");
    assert_eq!(
        reqs[0].header("authorization"),
        Some(format!("Bearer {KEY}").as_str())
    );
    let msgs = reqs[1].json()["messages"].as_array().unwrap().clone();
    let call = msgs.iter().find(|m| m["role"] == "assistant").unwrap();
    assert_eq!(call["tool_calls"][0]["id"], "Ab12Cd34E");
    let result = msgs.iter().find(|m| m["role"] == "tool").unwrap();
    assert_eq!(result["tool_call_id"], "Ab12Cd34E");
    let f = crate::run_support::session_file(&w);
    assert_eq!(messages(&f)[1]["api"], "mistral-conversations");
}

#[test]
fn compact_summarizes_through_each_api() {
    for (model, path) in [
        ("oai/gpt-r", "/v1/responses"),
        ("az/gpt-az", "/openai/v1/responses?api-version=v1"),
        ("cx/gpt-cx", "/backend-api/codex/responses"),
        ("mi/mistral-m", "/v1/chat/completions"),
    ] {
        let server = ModelServer::start();
        let w = world(&server);
        let s = w.write(
            "s/co-c1.jsonl",
            std::fs::read(fixture("compact/cases/co-c1.jsonl")).unwrap(),
        );
        if model.starts_with("mi/") {
            server.push(Reply::openai_chunks(&[
                mchunk(
                    json!({"role": "assistant", "content": "## Goal\nShip it"}),
                    None,
                    None,
                ),
                mchunk(json!({"content": ""}), Some("stop"), None),
            ]));
        } else {
            server.push(Reply::responses_text(&["## Goal\n", "Ship it"]));
        }
        let o = w
            .pi()
            .args([
                "compact",
                s.to_str().unwrap(),
                "--model",
                model,
                "--keep-recent-tokens",
                "15",
            ])
            .output()
            .unwrap();
        assert!(
            o.status.success(),
            "{model}: {}",
            String::from_utf8_lossy(&o.stderr)
        );
        let reqs = server.requests();
        assert_eq!(reqs.len(), 1, "{model}");
        assert_eq!(reqs[0].path, path, "{model}");
        let e = lines(&s).last().unwrap().clone();
        assert_eq!(e["type"], "compaction", "{model}");
        assert!(
            e["summary"]
                .as_str()
                .unwrap()
                .starts_with("## Goal\nShip it"),
            "{model}: {e}"
        );
    }
}
