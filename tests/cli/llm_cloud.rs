//! The Google Generative AI, Google Vertex and Amazon Bedrock Converse Stream clients against
//! the reference's recordings (tests/fixtures/llm/cloud/*.json, made by
//! scripts/goldens/cloud.mjs): every case sends pi's request for the same context and options
//! to the test server, which answers with the recorded replies; the requests must match the
//! reference's (path, body, the headers that carry meaning) and the parsed message and events
//! must match the reference's. Bedrock's SigV4 signatures are checked against the recorded
//! ones (the reference signed for the capture server's address) and against the AWS SigV4
//! test suite.

use std::collections::BTreeMap;
use std::sync::Arc;

use base64::Engine;
use pi_ai::value::Value as Js;
use pi_ai::{AssistantMessage, Client, Event, Options, Request, Target, Tool, ToolChoice};
use serde_json::{Value, json};

use crate::common::catalogue_073;
use crate::common::model_server::{ModelServer, Recorded, Reply, Step};

/// The fixed clock of the recordings (2025-01-15T12:00:00Z).
const NOW: &str = "1736942400000";

fn fixture(name: &str) -> Value {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/llm/cloud")
        .join(format!("{name}.json"));
    serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
}

fn reply(r: &Value) -> Reply {
    let body = match (r.get("body"), r.get("bodyBase64")) {
        (Some(Value::String(s)), _) => s.as_bytes().to_vec(),
        (_, Some(Value::String(b))) => base64::engine::general_purpose::STANDARD.decode(b).unwrap(),
        _ => Vec::new(),
    };
    let headers = r["headers"]
        .as_object()
        .map(|h| {
            h.iter()
                .map(|(k, v)| (k.clone(), v.as_str().unwrap_or_default().to_owned()))
                .collect()
        })
        .unwrap_or_default();
    Reply {
        status: r["status"].as_u64().unwrap() as u16,
        headers,
        steps: vec![Step::Bytes(body)],
        when: None,
        chunked: true,
    }
}

fn options(case: &Value, env: BTreeMap<String, String>) -> Options {
    let o = &case["options"];
    let mut opts = Options {
        reasoning: o["reasoning"].as_str().map(str::to_owned),
        temperature: o["temperature"].as_f64(),
        max_tokens: o["maxTokens"].as_u64(),
        cache_retention: o["cacheRetention"].as_str().map(str::to_owned),
        api_key: o["apiKey"].as_str().map(str::to_owned),
        ..Options::default()
    };
    if let Some(b) = o["thinkingBudgets"].as_object() {
        opts.thinking_budgets = b
            .iter()
            .map(|(k, v)| (k.clone(), v.as_u64().unwrap()))
            .collect();
    }
    if let Some(h) = o["headers"].as_object() {
        opts.headers = h
            .iter()
            .map(|(k, v)| (k.clone(), v.as_str().unwrap().to_owned()))
            .collect();
    }
    opts.tool_choice = match &o["toolChoice"] {
        Value::String(s) if s == "any" => Some(ToolChoice::Required),
        Value::String(s) if s == "auto" => Some(ToolChoice::Auto),
        Value::String(s) if s == "none" => Some(ToolChoice::None),
        Value::Object(m) => Some(ToolChoice::Tool(m["name"].as_str().unwrap().to_owned())),
        _ => None,
    };
    // Google's key comes from GEMINI_API_KEY when the call has none.
    if opts.api_key.is_none() {
        opts.api_key = env.get("GEMINI_API_KEY").cloned();
    }
    opts.retry.max_delay_ms = 60_000;
    opts.env = Some(Arc::new(env));
    opts
}

fn request(case: &Value) -> Request {
    let c = &case["context"];
    Request {
        system_prompt: c["systemPrompt"].as_str().map(str::to_owned),
        messages: c["messages"]
            .as_array()
            .unwrap()
            .iter()
            .map(|m| Js::parse(m.to_string().as_bytes()).unwrap())
            .collect(),
        tools: c["tools"]
            .as_array()
            .map(|t| {
                t.iter()
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

/// Google's generated tool-call ids end in a per-process counter: `NAME_MS_N` → `NAME_MS_#`.
fn normalize(mut v: Value) -> Value {
    if let Some(obj) = v.as_object_mut() {
        obj.remove("timestamp");
    }
    if let Some(content) = v["content"].as_array_mut() {
        for b in content {
            if let Some(Value::String(id)) = b.get_mut("id")
                && let Some((head, n)) = id.rsplit_once('_')
                && n.chars().all(|c| c.is_ascii_digit())
                && head.ends_with(NOW)
            {
                *id = format!("{head}_#");
            }
        }
    }
    v
}

/// Equal JSON, numbers within a relative 1e-9 (costs are sums of products of prices, whose
/// last bits depend on the order of operations).
fn same(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Number(x), Value::Number(y)) => {
            let (x, y) = (x.as_f64().unwrap(), y.as_f64().unwrap());
            (x - y).abs() <= 1e-9 * x.abs().max(y.abs())
        }
        (Value::Array(x), Value::Array(y)) => {
            x.len() == y.len() && x.iter().zip(y).all(|(a, b)| same(a, b))
        }
        (Value::Object(x), Value::Object(y)) => {
            x.len() == y.len() && x.iter().all(|(k, v)| y.get(k).is_some_and(|w| same(v, w)))
        }
        _ => a == b,
    }
}

/// The parts of a request that carry meaning: everything but the HTTP client's own headers.
fn meaningful(headers: &[(String, String)]) -> BTreeMap<String, String> {
    const TRANSPORT: &[&str] = &[
        "host",
        "connection",
        "user-agent",
        "x-goog-api-client",
        "accept",
        "accept-language",
        "sec-fetch-mode",
        "accept-encoding",
        "content-length",
        // Checked by `bedrock_signatures_match_the_reference` (it signs the capture
        // server's address).
        "authorization",
    ];
    headers
        .iter()
        .map(|(k, v)| (k.to_lowercase(), v.clone()))
        .filter(|(k, _)| !TRANSPORT.contains(&k.as_str()))
        .collect()
}

fn recorded_headers(r: &Value) -> Vec<(String, String)> {
    r["headers"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| {
            (
                p[0].as_str().unwrap().to_owned(),
                p[1].as_str().unwrap().to_owned(),
            )
        })
        .collect()
}

fn recorded_body(r: &Value) -> Vec<u8> {
    let b = &r["body"];
    if let Some(j) = b.get("json") {
        // Compared as JSON values; bytes are compared through x-amz-content-sha256.
        j.to_string().into_bytes()
    } else if let Some(t) = b.get("text").and_then(Value::as_str) {
        t.as_bytes().to_vec()
    } else if let Some(t) = b.get("base64").and_then(Value::as_str) {
        base64::engine::general_purpose::STANDARD.decode(t).unwrap()
    } else {
        Vec::new()
    }
}

/// The text around byte `at`.
fn around(s: &str, at: usize) -> String {
    let b = s.as_bytes();
    let lo = at.saturating_sub(80).min(b.len());
    let hi = (at + 200).min(b.len());
    String::from_utf8_lossy(&b[lo..hi]).into_owned()
}

/// Runs one case; returns pi's message, events and the requests the server got.
fn run(
    case: &Value,
    server: &ModelServer,
    dir: &std::path::Path,
) -> (AssistantMessage, Vec<Value>, Vec<Recorded>) {
    let url = server.url();
    let work = dir.to_string_lossy().into_owned();
    let mut env: BTreeMap<String, String> = case["env"]
        .as_object()
        .unwrap()
        .iter()
        .map(|(k, v)| {
            let v = v.as_str().unwrap().replace("[SERVER]", &url);
            (k.clone(), v.replace("[WORK]", &work))
        })
        .collect();
    env.insert("PI_NOW".into(), NOW.into());
    env.insert("HOME".into(), work.clone());
    if let Some(files) = case["files"].as_object() {
        for (name, text) in files {
            let text = text.as_str().unwrap();
            // The reference's token endpoint was redirected to the server; pi takes the
            // file's token_uri.
            let text = match serde_json::from_str::<Value>(text) {
                Ok(Value::Object(mut m)) if m.contains_key("type") => {
                    m.insert("token_uri".into(), format!("{url}/token").into());
                    Value::Object(m).to_string()
                }
                _ => text.to_owned(),
            };
            std::fs::write(dir.join(name), text).unwrap();
        }
    }
    for r in case["replies"].as_array().unwrap() {
        server.push(reply(r));
    }
    // The goldens were recorded from 0.73: its catalogue (1.6 changed and dropped models).
    let mut registry = catalogue_073();
    let provider = case["provider"].as_str().unwrap();
    let id = case["model"].as_str().unwrap();
    let base = case["baseUrl"].as_str().unwrap().replace("[SERVER]", &url);
    registry
        .apply_config(&json!({"providers": {provider: {"baseUrl": base}}}).to_string())
        .unwrap();
    let target = Target::new(
        registry.find(provider, id).unwrap().clone(),
        registry.details_of(provider, id),
    )
    .unwrap();
    let opts = options(case, env);
    let req = request(case);
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let client = Client::new().unwrap();
    let mut events = Vec::new();
    let msg = rt.block_on(client.stream(&target, &req, &opts, &mut |e, _| {
        events.extend(event_json(e));
    }));
    (msg, events, server.requests())
}

/// Where pi deliberately differs from the reference: (suite/case, the message's fields pi
/// writes instead, pi's events when they differ).
fn deliberate(name: &str) -> Option<(Value, Option<Value>)> {
    Some(match name {
        // The AWS SDK reports its failure to parse a non-JSON error body; pi reports the body.
        "bedrock/unknown-error" => (json!({"errorMessage": "500 upstream connect error"}), None),
        // Keys never reach messages, even when the server repeats them.
        "google/denied" => (
            json!({"errorMessage": "{\"error\":{\"code\":403,\"message\":\"Permission denied: Consumer 'api_key:[redacted]' has been suspended.\",\"status\":\"PERMISSION_DENIED\",\"details\":[{\"@type\":\"type.googleapis.com/google.rpc.ErrorInfo\",\"reason\":\"CONSUMER_SUSPENDED\"}]}}"}),
            None,
        ),
        // An error object in the stream ends the answer with that error; the reference's SDK
        // skips it and calls the cut answer complete.
        "google/stream-error-chunk" => (
            json!({"stopReason": "error", "errorMessage": "got status: UNAVAILABLE. {\"error\":{\"code\":503,\"message\":\"The model is overloaded. Please try again later.\",\"status\":\"UNAVAILABLE\"}}"}),
            Some(json!([
                ["start"],
                ["text_start", 0],
                ["text_delta", 0, "Partial"],
                ["error"]
            ])),
        ),
        _ => return None,
    })
}

fn check_suite(name: &str) {
    let suite = fixture(name);
    let mut failures = Vec::new();
    for case in suite["cases"].as_array().unwrap() {
        let cname = case["name"].as_str().unwrap();
        let server = ModelServer::start();
        let dir = tempfile::tempdir().unwrap();
        let (msg, events, got) = run(case, &server, dir.path());
        let mut fail = |what: String| failures.push(format!("{name}/{cname}: {what}"));
        let want_reqs = case["requests"].as_array().unwrap();
        if got.len() != want_reqs.len() {
            fail(format!(
                "{} requests, the reference sent {}",
                got.len(),
                want_reqs.len()
            ));
        }
        for (g, w) in got.iter().zip(want_reqs) {
            if g.method != w["method"] || g.path != w["path"] {
                fail(format!(
                    "request {} {} != {} {}",
                    g.method, g.path, w["method"], w["path"]
                ));
            }
            let want_body = recorded_body(w);
            let mut got_json = g.json();
            // A case that called the provider's own stream function (for a tool choice) gets
            // no thinking settings there; pi's calls always have them (as streamSimple's).
            if case.get("direct").is_some()
                && let Some(gc) = got_json
                    .get_mut("generationConfig")
                    .and_then(Value::as_object_mut)
            {
                gc.remove("thinkingConfig");
            }
            let same_body = if w["body"].get("json").is_some() {
                same(
                    &got_json,
                    &serde_json::from_slice::<Value>(&want_body).unwrap(),
                )
            } else {
                g.body == want_body
            };
            if !same_body {
                let (a, b) = (
                    got_json.to_string(),
                    String::from_utf8_lossy(&want_body).into_owned(),
                );
                let at = a.bytes().zip(b.bytes()).take_while(|(x, y)| x == y).count();
                fail(format!(
                    "body of {} differs after {at} bytes:\n  pi:  …{}\n  ref: …{}",
                    g.path,
                    around(&a, at),
                    around(&b, at)
                ));
            }
            let (gh, wh) = (meaningful(&g.headers), meaningful(&recorded_headers(w)));
            if gh != wh {
                fail(format!(
                    "headers of {}:\n  pi:  {gh:?}\n  ref: {wh:?}",
                    g.path
                ));
            }
        }
        let mut want = case["message"].clone();
        let mut want_events = case["events"].clone();
        if let Some((fields, events)) = deliberate(&format!("{name}/{cname}")) {
            for (k, v) in fields.as_object().unwrap() {
                want[k] = v.clone();
            }
            want_events = events.unwrap_or(want_events);
        }
        let (gm, wm) = (normalize(msg.to_json()), normalize(want));
        if !same(&gm, &wm) {
            fail(format!("message:\n  pi:  {gm}\n  ref: {wm}"));
        }
        if Value::Array(events.clone()) != want_events {
            fail(format!(
                "events:\n  pi:  {}\n  ref: {want_events}",
                Value::Array(events),
            ));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n\n"));
}

#[test]
fn google_generative_ai_matches_the_reference() {
    check_suite("google");
}

#[test]
fn google_vertex_matches_the_reference() {
    check_suite("vertex");
}

#[test]
fn bedrock_converse_stream_matches_the_reference() {
    check_suite("bedrock");
}

/// The reference signed for its capture server (`127.0.0.1:40001`): pi's signature of its own
/// body for that address must be the recorded one, in every signed case.
#[test]
fn bedrock_signatures_match_the_reference() {
    let suite = fixture("bedrock");
    let mut checked = 0;
    for case in suite["cases"].as_array().unwrap() {
        let env = &case["env"];
        let Some(id) = env["AWS_ACCESS_KEY_ID"].as_str() else {
            continue;
        };
        let creds = pi_ai::providers::bedrock::Credentials {
            access_key_id: id.to_owned(),
            secret_access_key: env["AWS_SECRET_ACCESS_KEY"].as_str().unwrap().to_owned(),
            session_token: env["AWS_SESSION_TOKEN"].as_str().map(str::to_owned),
        };
        let region = env["AWS_REGION"].as_str().unwrap_or("us-east-1");
        // The first request (the others of a retried case are the same).
        let w = &case["requests"][0];
        {
            let headers = recorded_headers(w);
            let h = |k: &str| {
                headers
                    .iter()
                    .find(|(n, _)| n == k)
                    .map(|(_, v)| v.clone())
                    .unwrap()
            };
            // pi's body for the case (byte for byte the reference's: same SHA-256).
            let server = ModelServer::start();
            let dir = tempfile::tempdir().unwrap();
            let (_, _, got) = run(case, &server, dir.path());
            let body = &got[0].body;
            assert_eq!(
                got[0].header("x-amz-content-sha256"),
                Some(h("x-amz-content-sha256").as_str()),
                "{}",
                case["name"]
            );
            let url = format!("http://{}{}", h("host"), w["path"].as_str().unwrap());
            let signed = vec![
                ("content-type".to_owned(), h("content-type")),
                ("content-length".to_owned(), h("content-length")),
                ("host".to_owned(), h("host")),
            ];
            let out = pi_ai::providers::bedrock::sign(
                &url,
                &signed,
                body,
                &creds,
                region,
                NOW.parse().unwrap(),
            )
            .unwrap();
            let auth = out
                .iter()
                .find(|(k, _)| k == "authorization")
                .map(|(_, v)| v.clone());
            assert_eq!(auth, Some(h("authorization")), "{}", case["name"]);
            checked += 1;
        }
    }
    assert!(checked >= 10, "only {checked} signed cases");
}

/// A request of the AWS SigV4 test suite: method, path, headers, body.
fn parse_vector(text: &str) -> (String, String, Vec<(String, String)>, Vec<u8>) {
    let (head, body) = text.split_once("\n\n").unwrap_or((text, ""));
    let mut lines = head.lines();
    let first: Vec<&str> = lines.next().unwrap().split(' ').collect();
    let (method, path) = (first[0].to_owned(), first[1..first.len() - 1].join(" "));
    let headers = lines
        .map(|l| {
            let (k, v) = l.split_once(':').unwrap();
            (k.to_owned(), v.to_owned())
        })
        .collect();
    (method, path, headers, body.as_bytes().to_vec())
}

/// pi's signer (the `aws-sigv4` crate, as Bedrock calls it) against the AWS SigV4 test suite
/// (tests/fixtures/llm/sigv4, from aws-c-auth by way of the aws-sigv4 crate): every header
/// the suite's signed request adds must come out the same.
#[test]
fn sigv4_matches_the_aws_test_suite() {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/llm/sigv4");
    let mut names: Vec<_> = std::fs::read_dir(&root)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.is_dir())
        .collect();
    names.sort();
    assert!(names.len() >= 10, "{names:?}");
    for dir in names {
        let read = |f: &str| std::fs::read_to_string(dir.join(f)).unwrap();
        let ctx: Value = serde_json::from_str(&read("context.json")).unwrap();
        let (method, path, headers, body) = parse_vector(&read("request.txt"));
        let (_, _, signed, _) = parse_vector(&read("header-signed-request.txt"));
        let host = &headers
            .iter()
            .find(|(k, _)| k.eq_ignore_ascii_case("host"))
            .unwrap()
            .1;
        let creds = pi_ai::providers::bedrock::Credentials {
            access_key_id: ctx["credentials"]["access_key_id"].as_str().unwrap().into(),
            secret_access_key: ctx["credentials"]["secret_access_key"]
                .as_str()
                .unwrap()
                .into(),
            session_token: ctx["credentials"]["token"].as_str().map(str::to_owned),
        };
        let now = chrono::DateTime::parse_from_rfc3339(ctx["timestamp"].as_str().unwrap())
            .unwrap()
            .timestamp_millis();
        let scope = pi_ai::providers::bedrock::Scope {
            region: ctx["region"].as_str().unwrap(),
            service: ctx["service"].as_str().unwrap(),
            now_ms: now,
            content_sha256: ctx["sign_body"] == true,
        };
        let url = format!("https://{host}{path}");
        let got =
            pi_ai::providers::bedrock::sign_v4(&method, &url, &headers, &body, &creds, &scope)
                .unwrap_or_else(|e| panic!("{}: {}", dir.display(), e.message));
        let lower = |v: &[(String, String)]| -> BTreeMap<String, String> {
            v.iter()
                .map(|(k, v)| (k.to_lowercase(), v.clone()))
                .collect()
        };
        let (got, all) = (lower(&got), lower(&signed));
        let added: BTreeMap<String, String> = all
            .into_iter()
            .filter(|(k, _)| !headers.iter().any(|(h, _)| h.eq_ignore_ascii_case(k)))
            .collect();
        assert_eq!(got, added, "{}", dir.display());
    }
}

/// The recorded overflow answers are taken as context overflows (so `pi run` compacts and
/// tries again), and the throttling ones as retryable.
#[test]
fn overflow_and_retryable_errors_are_recognized() {
    let mut seen = 0;
    for name in ["google", "vertex", "bedrock"] {
        for case in fixture(name)["cases"].as_array().unwrap() {
            let cname = case["name"].as_str().unwrap();
            let Some(err) = case["message"]["errorMessage"].as_str() else {
                continue;
            };
            let overflow = pi_ai::overflow::is_overflow_message(err);
            let expected = matches!(cname, "overflow" | "stream-validation");
            assert_eq!(overflow, expected, "{name}/{cname}: {err}");
            seen += usize::from(expected);
        }
    }
    assert_eq!(seen, 4);
}
