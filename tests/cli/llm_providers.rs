//! The provider clients (`pi_ai`) against the scripted model server, both wire formats:
//! the event stream (text, thinking, tool-call argument deltas, usage, stop reasons), tool
//! definitions in requests, chunks split mid-line, retries and errors. `pi run` (issue 6)
//! builds on these calls.

use std::time::Duration;

use pi_ai::models::Registry;
use pi_ai::value::Value as Js;
use pi_ai::{
    AssistantMessage, Client, Event, Options, Request, StopReason, Target, Tool, ToolChoice,
};
use serde_json::{Value, json};

use crate::common::model_server::{ModelServer, Reply};

fn registry(server: &ModelServer) -> Registry {
    let mut r = Registry::builtin();
    r.apply_config(
        &json!({"providers": {
            "mock": {"baseUrl": format!("{}/v1", server.url()), "api": "openai-completions", "apiKey": "k",
                     "models": [{"id": "m1", "reasoning": true, "cost": {"input": 2, "output": 8, "cacheRead": 1, "cacheWrite": 0}}]},
            "mockant": {"baseUrl": server.url(), "api": "anthropic-messages", "apiKey": "k",
                        "models": [{"id": "claude-mock", "cost": {"input": 3, "output": 15, "cacheRead": 0.3, "cacheWrite": 3.75}}]}
        }})
        .to_string(),
    )
    .unwrap();
    r
}

fn target(r: &Registry, p: &str, id: &str) -> Target {
    Target::new(r.find(p, id).unwrap().clone(), r.details_of(p, id)).unwrap()
}

fn tools() -> Vec<Tool> {
    vec![Tool {
        name: "read".into(),
        description: "Read a file".into(),
        parameters: json!({"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]}),
    }]
}

fn request() -> Request {
    Request {
        system_prompt: Some("You are a test.".into()),
        messages: vec![
            Js::parse(br#"{"role":"user","content":"read a.ts","timestamp":1}"#).unwrap(),
        ],
        tools: tools(),
    }
}

fn call(t: &Target, req: &Request, opts: &Options) -> (AssistantMessage, Vec<Event>) {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let client = Client::new().unwrap();
    let mut events = Vec::new();
    let msg = rt.block_on(
        client.stream(t, req, opts, &mut |e: &Event, _: &AssistantMessage| {
            events.push(e.clone())
        }),
    );
    (msg, events)
}

fn opts() -> Options {
    Options {
        api_key: Some("sk-abcdef-123".into()),
        tool_choice: Some(ToolChoice::Required),
        ..Options::default()
    }
}

#[test]
fn openai_stream_with_reasoning_tool_call_deltas_and_usage() {
    let server = ModelServer::start();
    let r = registry(&server);
    let t = target(&r, "mock", "m1");
    server.push(
        Reply::openai_chunks(&[
            json!({"id": "c1", "choices": [{"index": 0, "delta": {"role": "assistant", "reasoning_content": "Let me"}}]}),
            json!({"id": "c1", "choices": [{"index": 0, "delta": {"reasoning_content": " look."}}]}),
            json!({"id": "c1", "choices": [{"index": 0, "delta": {"content": "Reading."}}]}),
            json!({"id": "c1", "choices": [{"index": 0, "delta": {"tool_calls": [{"index": 0, "id": "call_1", "type": "function", "function": {"name": "read", "arguments": ""}}]}}]}),
            json!({"id": "c1", "choices": [{"index": 0, "delta": {"tool_calls": [{"index": 0, "function": {"arguments": "{\"pa"}}]}}]}),
            json!({"id": "c1", "choices": [{"index": 0, "delta": {"tool_calls": [{"index": 0, "function": {"arguments": "th\": \"a.ts\"}"}}]}}]}),
            json!({"id": "c1", "choices": [{"index": 0, "delta": {}, "finish_reason": "tool_calls"}]}),
            json!({"id": "c1", "choices": [], "usage": {"prompt_tokens": 1000, "completion_tokens": 100, "prompt_tokens_details": {"cached_tokens": 400}}}),
        ])
        .split(9),
    );
    let o = Options {
        reasoning: Some("high".into()),
        ..opts()
    };
    let (m, events) = call(&t, &request(), &o);
    assert_eq!(m.stop_reason, StopReason::ToolUse, "{:?}", m.error_message);
    let v = m.to_json();
    assert_eq!(
        v["content"],
        json!([
            {"type": "thinking", "thinking": "Let me look.", "thinkingSignature": "reasoning_content"},
            {"type": "text", "text": "Reading."},
            {"type": "toolCall", "id": "call_1", "name": "read", "arguments": {"path": "a.ts"}}
        ])
    );
    assert_eq!(v["api"], "openai-completions");
    assert_eq!(v["provider"], "mock");
    assert_eq!(v["responseId"], "c1");
    assert_eq!(
        (
            m.usage.input,
            m.usage.output,
            m.usage.cache_read,
            m.usage.total_tokens
        ),
        (600, 100, 400, 1100)
    );
    let cost = (600.0 * 2.0 + 100.0 * 8.0 + 400.0 * 1.0) / 1e6;
    assert!((m.usage.cost.total - cost).abs() < 1e-12);
    // Events: start, thinking, text, the argument fragments as they came, usage, done.
    assert_eq!(events[0], Event::Start);
    let deltas: Vec<&str> = events
        .iter()
        .filter_map(|e| match e {
            Event::ToolCallDelta { delta, .. } => Some(delta.as_str()),
            _ => None,
        })
        .collect();
    assert_eq!(deltas, ["", "{\"pa", "th\": \"a.ts\"}"]);
    assert!(events.contains(&Event::ThinkingDelta {
        index: 0,
        delta: " look.".into()
    }));
    assert!(events.contains(&Event::Usage));
    assert_eq!(events.last(), Some(&Event::Done));
    // The request: tools, tool choice, reasoning, the system prompt as developer message.
    let b = server.requests()[0].json();
    assert_eq!(b["tools"][0]["function"]["name"], "read");
    assert_eq!(
        b["tools"][0]["function"]["parameters"]["required"],
        json!(["path"])
    );
    assert_eq!(b["tool_choice"], "required");
    assert_eq!(b["reasoning_effort"], "high");
    assert_eq!(
        b["messages"][0],
        json!({"role": "developer", "content": "You are a test."})
    );
    assert_eq!(
        b["messages"][1],
        json!({"role": "user", "content": "read a.ts"})
    );
    assert_eq!(b["max_completion_tokens"], 16384);
}

#[test]
fn anthropic_stream_with_thinking_and_tool_use() {
    let server = ModelServer::start();
    let r = registry(&server);
    let t = target(&r, "mockant", "claude-mock");
    server.push(
        Reply::anthropic_events(&[
            ("message_start", json!({"type": "message_start", "message": {"id": "msg_9", "usage": {"input_tokens": 2000, "output_tokens": 1, "cache_read_input_tokens": 1000, "cache_creation_input_tokens": 10}}})),
            ("content_block_start", json!({"type": "content_block_start", "index": 0, "content_block": {"type": "thinking", "thinking": ""}})),
            ("content_block_delta", json!({"type": "content_block_delta", "index": 0, "delta": {"type": "thinking_delta", "thinking": "The user wants "}})),
            ("content_block_delta", json!({"type": "content_block_delta", "index": 0, "delta": {"type": "thinking_delta", "thinking": "b.ts."}})),
            ("content_block_delta", json!({"type": "content_block_delta", "index": 0, "delta": {"type": "signature_delta", "signature": "sig-1"}})),
            ("content_block_delta", json!({"type": "content_block_delta", "index": 0, "delta": {"type": "signature_delta", "signature": "23"}})),
            ("content_block_stop", json!({"type": "content_block_stop", "index": 0})),
            ("content_block_start", json!({"type": "content_block_start", "index": 1, "content_block": {"type": "text", "text": ""}})),
            ("content_block_delta", json!({"type": "content_block_delta", "index": 1, "delta": {"type": "text_delta", "text": "Sure, é 😀"}})),
            ("content_block_stop", json!({"type": "content_block_stop", "index": 1})),
            ("content_block_start", json!({"type": "content_block_start", "index": 2, "content_block": {"type": "tool_use", "id": "toolu_1", "name": "read", "input": {}}})),
            ("content_block_delta", json!({"type": "content_block_delta", "index": 2, "delta": {"type": "input_json_delta", "partial_json": "{\"path\":"}})),
            ("content_block_delta", json!({"type": "content_block_delta", "index": 2, "delta": {"type": "input_json_delta", "partial_json": " \"b.ts\"}"}})),
            ("content_block_stop", json!({"type": "content_block_stop", "index": 2})),
            ("message_delta", json!({"type": "message_delta", "delta": {"stop_reason": "tool_use"}, "usage": {"output_tokens": 40}})),
            ("message_stop", json!({"type": "message_stop"})),
        ])
        .split(3)
        .pace(Duration::from_millis(1)),
    );
    let (m, events) = call(&t, &request(), &opts());
    assert_eq!(m.stop_reason, StopReason::ToolUse, "{:?}", m.error_message);
    assert_eq!(
        m.to_json()["content"],
        json!([
            {"type": "thinking", "thinking": "The user wants b.ts.", "thinkingSignature": "sig-123"},
            {"type": "text", "text": "Sure, é 😀"},
            {"type": "toolCall", "id": "toolu_1", "name": "read", "arguments": {"path": "b.ts"}}
        ])
    );
    assert!(events.contains(&Event::ThinkingEnd { index: 0 }));
    assert_eq!(
        (
            m.usage.input,
            m.usage.output,
            m.usage.cache_read,
            m.usage.cache_write
        ),
        (2000, 40, 1000, 10)
    );
    assert!(events.contains(&Event::ToolCallEnd { index: 2 }));
    let req = &server.requests()[0];
    assert_eq!(req.header("x-api-key"), Some("sk-abcdef-123"));
    let b = req.json();
    assert_eq!(
        b["tools"][0],
        json!({"name": "read", "description": "Read a file", "eager_input_streaming": true,
        "input_schema": {"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]},
        "cache_control": {"type": "ephemeral"}})
    );
    assert_eq!(b["tool_choice"], json!({"type": "any"}));
    assert_eq!(b["system"][0]["text"], "You are a test.");
    assert_eq!(b["max_tokens"], 16384);
}

#[test]
fn errors_are_messages_with_the_providers_wording() {
    let server = ModelServer::start();
    let r = registry(&server);
    let t = target(&r, "mockant", "claude-mock");
    server.push(Reply::status(
        400,
        r#"{"type":"error","error":{"type":"invalid_request_error","message":"prompt is too long: 213462 tokens > 200000 maximum"}}"#,
    ));
    let (m, events) = call(&t, &request(), &opts());
    assert_eq!(m.stop_reason, StopReason::Error);
    let e = m.error_message.clone().unwrap();
    assert_eq!(
        e,
        r#"400 {"type":"error","error":{"type":"invalid_request_error","message":"prompt is too long: 213462 tokens > 200000 maximum"}}"#
    );
    assert!(pi_ai::overflow::is_context_overflow(&m, 200_000));
    assert_eq!(events, vec![Event::Error]);
    // An error event inside the stream, after some text: the text is kept.
    server.push(Reply::anthropic_events(&[
        ("message_start", json!({"type": "message_start", "message": {"id": "m", "usage": {"input_tokens": 1}}})),
        ("content_block_start", json!({"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}})),
        ("content_block_delta", json!({"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": "half"}})),
        ("error", json!({"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}})),
    ]));
    let (m, _) = call(&t, &request(), &opts());
    assert_eq!(m.stop_reason, StopReason::Error);
    assert_eq!(m.text(), "half");
    assert!(m.error_message.unwrap().contains("overloaded_error"));
    // A connection refused is retried, then reported.
    let mut dead = t.clone();
    dead.model.base_url = "http://127.0.0.1:9".into();
    let o = Options {
        retry: pi_ai::RetryPolicy {
            max_retries: 1,
            ..Default::default()
        },
        ..opts()
    };
    let (m, events) = call(&dead, &request(), &o);
    assert!(m.error_message.unwrap().starts_with("Connection error."));
    assert!(matches!(
        events[0],
        Event::Retry {
            attempt: 1,
            max_retries: 1,
            ..
        }
    ));
}

#[test]
fn a_long_retry_after_is_not_waited_for() {
    let server = ModelServer::start();
    let r = registry(&server);
    let t = target(&r, "mock", "m1");
    server.push(
        Reply::status(429, r#"{"error":{"message":"slow down"}}"#).header("retry-after", "3600"),
    );
    let (m, _) = call(&t, &request(), &opts());
    let e = m.error_message.unwrap();
    assert!(
        e.starts_with("429 slow down (the server asked to retry after 3600.0 s"),
        "{e}"
    );
    assert_eq!(server.requests().len(), 1);
    let _: Value = Value::Null;
}

/// `retry-after` as an HTTP date is waited for (until that time); a 4xx other than 429 is
/// never sent again, even when the server says `x-should-retry: true`; `x-should-retry:
/// false` stops a retry of a 5xx.
#[test]
fn retry_after_dates_and_which_statuses_are_retried() {
    let server = ModelServer::start();
    let r = registry(&server);
    let t = target(&r, "mock", "m1");
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs() as i64;
    // Two seconds from now (whole seconds: the date has no fraction).
    let at = now + 2;
    let days = at.div_euclid(86_400);
    let secs = at.rem_euclid(86_400);
    let (y, m, d) = {
        // Civil from days (Howard Hinnant's algorithm).
        let z = days + 719_468;
        let era = z.div_euclid(146_097);
        let doe = z - era * 146_097;
        let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
        let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
        let mp = (5 * doy + 2) / 153;
        let d = doy - (153 * mp + 2) / 5 + 1;
        let m = if mp < 10 { mp + 3 } else { mp - 9 };
        (yoe + era * 400 + i64::from(m <= 2), m, d)
    };
    let months = [
        "Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec",
    ];
    let date = format!(
        "Mon, {d:02} {} {y} {:02}:{:02}:{:02} GMT",
        months[(m - 1) as usize],
        secs / 3600,
        secs / 60 % 60,
        secs % 60
    );
    server.push(
        Reply::status(429, r#"{"error":{"message":"slow down"}}"#).header("retry-after", &date),
    );
    server.push(Reply::openai_text(&["after the wait"]));
    let started = std::time::Instant::now();
    let (m, _) = call(&t, &request(), &opts());
    assert_eq!(m.text(), "after the wait", "{:?}", m.error_message);
    let waited = server.requests()[1].at - server.requests()[0].at;
    assert!(
        waited >= Duration::from_millis(900),
        "waited {waited:?} for {date}"
    );
    assert!(started.elapsed() < Duration::from_secs(6));

    for (status, should, sent) in [
        (400, "true", 1),
        (404, "true", 1),
        (500, "false", 1),
        (503, "true", 2),
    ] {
        let server = ModelServer::start();
        let r = registry(&server);
        let t = target(&r, "mock", "m1");
        server.push(
            Reply::status(status, r#"{"error":{"message":"nope"}}"#)
                .header("x-should-retry", should),
        );
        server.push(Reply::openai_text(&["second try"]));
        let (m, _) = call(&t, &request(), &opts());
        assert_eq!(
            server.requests().len(),
            sent,
            "status {status}, x-should-retry {should}"
        );
        if sent == 1 {
            assert_eq!(m.stop_reason, StopReason::Error);
            assert!(
                m.error_message
                    .unwrap()
                    .starts_with(&format!("{status} nope"))
            );
        } else {
            assert_eq!(m.text(), "second try");
        }
    }
}

/// The Anthropic format over HTTP: 429 with `retry-after`, 500, then success; a stream cut
/// off midway is an error that keeps what streamed.
#[test]
fn anthropic_retries_and_cut_streams() {
    let server = ModelServer::start();
    let r = registry(&server);
    let t = target(&r, "mockant", "claude-mock");
    server.push(
        Reply::status(
            429,
            r#"{"type":"error","error":{"type":"rate_limit_error","message":"slow"}}"#,
        )
        .header("retry-after", "0"),
    );
    server.push(Reply::status(
        500,
        r#"{"type":"error","error":{"type":"api_error","message":"boom"}}"#,
    ));
    server.push(Reply::anthropic_text(&["Third ", "time lucky."]));
    let (m, events) = call(&t, &request(), &opts());
    assert_eq!(m.text(), "Third time lucky.", "{:?}", m.error_message);
    assert_eq!(server.requests().len(), 3);
    let retries: Vec<u32> = events
        .iter()
        .filter_map(|e| match e {
            Event::Retry { attempt, .. } => Some(*attempt),
            _ => None,
        })
        .collect();
    assert_eq!(retries, [1, 2]);
    for req in server.requests() {
        assert_eq!(req.path, "/v1/messages");
        assert_eq!(req.header("x-api-key"), Some("sk-abcdef-123"));
    }
    server.push(Reply::anthropic_text(&["Half ", "of it, then the rest"]).cut_after(600));
    let (m, _) = call(&t, &request(), &opts());
    assert_eq!(m.stop_reason, StopReason::Error, "{:?}", m.to_json());
    assert!(m.error_message.is_some());
    assert!("Half of it, then the rest".starts_with(&m.text()));
    assert_eq!(server.requests().len(), 4, "a cut stream is not sent again");
}
