//! The OpenAI Responses family (`openai-responses`, `azure-openai-responses`,
//! `openai-codex-responses`) and Mistral (`mistral-conversations`) against the reference:
//! tests/fixtures/providers/responses.golden.json holds, for fixed contexts, what the
//! reference's SDKs sent and what its parsers made of scripted answers (recorded by
//! scripts/goldens/responses.mjs). pi gets the same contexts and answers through the scripted
//! model server; its requests (path, the headers that carry meaning, the JSON body, key
//! order included) and its messages and events must be the reference's.

use std::sync::OnceLock;

use pi_ai::value::Value as Js;
use pi_ai::{AssistantMessage, Client, Event, Options, Request, RetryPolicy, Target, Tool};
use serde_json::{Value, json};

use crate::common::model_server::{ModelServer, Reply};
use crate::common::*;

fn golden() -> &'static Value {
    static G: OnceLock<Value> = OnceLock::new();
    G.get_or_init(|| {
        let text =
            std::fs::read_to_string(fixture("providers/responses.golden.json")).expect("golden");
        serde_json::from_str(&text).expect("golden json")
    })
}

fn request_of(ctx: &Value) -> Request {
    Request {
        system_prompt: ctx["systemPrompt"].as_str().map(str::to_owned),
        messages: ctx["messages"]
            .as_array()
            .unwrap()
            .iter()
            .map(|m| Js::parse(&serde_json::to_vec(m).unwrap()).unwrap())
            .collect(),
        tools: ctx["tools"]
            .as_array()
            .map(|ts| {
                ts.iter()
                    .map(|t| Tool {
                        name: t["name"].as_str().unwrap().to_owned(),
                        description: t["description"].as_str().unwrap().to_owned(),
                        parameters: t["parameters"].clone(),
                    })
                    .collect()
            })
            .unwrap_or_default(),
    }
}

fn options_of(case: &Value) -> Options {
    let o = &case["options"];
    Options {
        api_key: case["apiKey"].as_str().map(str::to_owned),
        session_id: o["sessionId"].as_str().map(str::to_owned),
        reasoning: o["reasoning"].as_str().map(str::to_owned),
        cache_retention: o["cacheRetention"].as_str().map(str::to_owned),
        temperature: o["temperature"].as_f64(),
        retry: RetryPolicy {
            max_retries: 0,
            ..RetryPolicy::default()
        },
        ..Options::default()
    }
}

/// An event as the reference's stream names it: `[type, contentIndex?, delta?]`.
fn event_json(e: &Event) -> Option<Value> {
    Some(match e {
        Event::Start => json!(["start"]),
        Event::TextStart { index } => json!(["text_start", index]),
        Event::TextDelta { index, delta } => json!(["text_delta", index, delta]),
        Event::TextEnd { index } => json!(["text_end", index]),
        Event::ThinkingStart { index } => json!(["thinking_start", index]),
        Event::ThinkingDelta { index, delta } => json!(["thinking_delta", index, delta]),
        Event::ThinkingEnd { index } => json!(["thinking_end", index]),
        Event::ToolCallStart { index } => json!(["toolcall_start", index]),
        Event::ToolCallDelta { index, delta } => json!(["toolcall_delta", index, delta]),
        Event::ToolCallEnd { index } => json!(["toolcall_end", index]),
        Event::Done => json!(["done"]),
        Event::Error => json!(["error"]),
        Event::Usage | Event::Retry { .. } => return None,
    })
}

/// Runs one case against `server`; returns what differs from the reference.
fn run_case(server: &ModelServer, case: &Value) -> Vec<String> {
    // 1.6 renamed 0.73's provider `azure-openai-responses` to `azure`, the name it checks
    // before taking tool-call ids as they are: the recording, with the provider renamed.
    let renamed;
    let case = if case["provider"] == "azure-openai-responses" {
        let text = case.to_string().replace(
            r#""provider":"azure-openai-responses""#,
            r#""provider":"azure""#,
        );
        renamed = serde_json::from_str::<Value>(&text).unwrap();
        &renamed
    } else {
        case
    };
    let name = case["name"].as_str().unwrap();
    // Recorded from 0.73: its catalogue (1.6 dropped some of these models and changed others).
    let r = catalogue_073();
    let (p, id) = (
        case["provider"].as_str().unwrap(),
        case["model"].as_str().unwrap(),
    );
    let p073 = if p == "azure" {
        "azure-openai-responses"
    } else {
        p
    };
    let mut target =
        Target::new(r.find(p073, id).unwrap().clone(), r.details_of(p073, id)).unwrap();
    target.model.provider = p.to_owned();
    let path = case["baseUrlPath"].as_str().unwrap();
    let mut env = Vec::new();
    if case["api"] == "azure-openai-responses" {
        target.model.base_url = String::new();
    } else {
        target.model.base_url = format!("{}{path}", server.url());
    }
    for (k, v) in case["env"].as_object().unwrap() {
        let v = v.as_str().unwrap();
        let v = match v.find("/openai") {
            Some(at) if k == "AZURE_OPENAI_BASE_URL" => format!("{}{}", server.url(), &v[at..]),
            _ => v.to_owned(),
        };
        env.push((k.clone(), v));
    }
    let reply = &case["reply"];
    server.push(match reply["stream"].as_str() {
        Some(s) => Reply::sse(golden()["streams"][s].as_str().unwrap().to_owned()),
        None => Reply::status(
            reply["status"].as_u64().unwrap() as u16,
            reply["body"].as_str().unwrap(),
        ),
    });
    let before = server.requests().len();
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let client = Client::new().unwrap();
    let mut events = Vec::new();
    let req = request_of(&case["context"]);
    let msg: AssistantMessage = rt.block_on(client.stream(
        &target,
        &req,
        &Options {
            // The model's own headers (Copilot's), as `auth::resolve` gives them.
            headers: target.details.headers.clone(),
            // The case's environment, and nothing of the process's.
            env: Some(std::sync::Arc::new(env.into_iter().collect())),
            ..options_of(case)
        },
        &mut |e: &Event, _: &AssistantMessage| events.extend(event_json(e)),
    ));
    let mut diffs = Vec::new();
    let reqs = server.requests();
    let Some(got) = reqs.get(before) else {
        return vec![format!("{name}: no request ({:?})", msg.error_message)];
    };
    let want = &case["request"];
    if got.path != want["path"].as_str().unwrap() {
        diffs.push(format!("{name}: path {} != {}", got.path, want["path"]));
    }
    for (k, v) in want["headers"].as_object().unwrap() {
        if got.header(k) != v.as_str() {
            diffs.push(format!("{name}: header {k}: {:?} != {v}", got.header(k)));
        }
    }
    let body = serde_json::to_string(&got.json()).unwrap();
    let want_body = serde_json::to_string(&want["body"]).unwrap();
    if body != want_body {
        diffs.push(format!("{name}: body\n  pi:  {body}\n  ref: {want_body}"));
    }
    let mut m = msg.to_json();
    m["timestamp"] = json!(0);
    if numbers_as_floats(&m) != numbers_as_floats(&case["message"]) {
        diffs.push(format!(
            "{name}: message\n  pi:  {m}\n  ref: {}",
            case["message"]
        ));
    }
    let ev = Value::Array(events);
    if ev != case["events"] {
        diffs.push(format!(
            "{name}: events\n  pi:  {ev}\n  ref: {}",
            case["events"]
        ));
    }
    diffs
}

/// The value with every number as a float of 14 significant digits: `0` and `0.0` are the
/// same number in JavaScript, and serde_json's parser may miss the last bit of a float.
fn numbers_as_floats(v: &Value) -> Value {
    match v {
        Value::Number(n) => Value::String(format!("{:.13e}", n.as_f64().unwrap())),
        Value::Array(a) => Value::Array(a.iter().map(numbers_as_floats).collect()),
        Value::Object(o) => Value::Object(
            o.iter()
                .map(|(k, v)| (k.clone(), numbers_as_floats(v)))
                .collect(),
        ),
        v => v.clone(),
    }
}

fn run_api(api: &str) {
    let server = ModelServer::start();
    let mut diffs = Vec::new();
    let mut n = 0;
    for case in golden()["cases"].as_array().unwrap() {
        if case["api"] == api {
            n += 1;
            diffs.extend(run_case(&server, case));
        }
    }
    assert!(n > 0, "no cases of {api}");
    assert!(
        diffs.is_empty(),
        "{} differences:\n{}",
        diffs.len(),
        diffs.join("\n")
    );
}

#[test]
fn openai_responses_matches_the_reference() {
    run_api("openai-responses");
}

#[test]
fn azure_openai_responses_matches_the_reference() {
    run_api("azure-openai-responses");
}

#[test]
fn openai_codex_responses_matches_the_reference() {
    run_api("openai-codex-responses");
}

#[test]
fn mistral_matches_the_reference() {
    run_api("mistral-conversations");
}
