//! `pi run` and `pi compact` against Google Generative AI, Google Vertex (an API key, and a
//! service account whose token endpoint is the test server) and Amazon Bedrock (SigV4 from
//! the AWS environment variables, and from a profile file), through the test server: a tool
//! call and its result sent back, the answer written to the session, and a summary entry.

use aws_smithy_types::event_stream::{Header, HeaderValue, Message};
use serde_json::{Value, json};

use crate::common::model_server::{ModelServer, Reply, Step};
use crate::common::*;
use crate::run_support::{messages, roles, session_file, settings};

const GEMINI_KEY: &str = "AIzaSy-run-cloud-key-123";
const AWS_SECRET: &str = "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY";

/// A world whose built-in Google, Vertex and Bedrock providers point at the server.
fn world(server: &ModelServer) -> World {
    let w = World::new();
    w.write(
        "agent/models.json",
        json!({"providers": {
            "google": {"baseUrl": format!("{}/v1beta", server.url())},
            "google-vertex": {"baseUrl": server.url()},
            "amazon-bedrock": {"baseUrl": server.url()}
        }})
        .to_string(),
    );
    settings(&w, json!({}));
    w.write("proj/a.txt", "alpha\n");
    w
}

fn google_sse(chunks: &[Value]) -> Reply {
    let body: String = chunks
        .iter()
        .map(|c| format!("data: {c}\r\n\r\n"))
        .collect();
    Reply {
        status: 200,
        headers: vec![("content-type".into(), "text/event-stream".into())],
        steps: vec![Step::Bytes(body.into_bytes())],
        when: None,
        chunked: true,
    }
}

fn google_tool_call() -> Reply {
    google_sse(&[json!({"candidates": [{"content": {"parts": [
        {"text": "Reading."},
        {"functionCall": {"id": "fc-1", "name": "read", "args": {"path": "a.txt"}}}
    ], "role": "model"}, "finishReason": "STOP", "index": 0}],
    "usageMetadata": {"promptTokenCount": 50, "candidatesTokenCount": 5, "totalTokenCount": 55}})])
}

fn google_text(text: &str) -> Reply {
    google_sse(&[
        json!({"candidates": [{"content": {"parts": [{"text": text}], "role": "model"}, "index": 0}]}),
        json!({"candidates": [{"content": {"parts": [{"text": ""}], "role": "model"},
        "finishReason": "STOP", "index": 0}],
        "usageMetadata": {"promptTokenCount": 60, "candidatesTokenCount": 4, "totalTokenCount": 64}}),
    ])
}

/// Bedrock ConverseStream events in AWS event-stream frames.
fn bedrock_events(events: &[(&str, Value)]) -> Reply {
    let mut body = Vec::new();
    for (kind, payload) in events {
        let m = Message::new(payload.to_string().into_bytes())
            .add_header(Header::new(
                ":event-type",
                HeaderValue::String((*kind).to_owned().into()),
            ))
            .add_header(Header::new(
                ":content-type",
                HeaderValue::String("application/json".to_owned().into()),
            ))
            .add_header(Header::new(
                ":message-type",
                HeaderValue::String("event".to_owned().into()),
            ));
        aws_smithy_eventstream::frame::write_message_to(&m, &mut body).unwrap();
    }
    Reply {
        status: 200,
        headers: vec![(
            "content-type".into(),
            "application/vnd.amazon.eventstream".into(),
        )],
        steps: vec![Step::Bytes(body)],
        when: None,
        chunked: true,
    }
}

fn bedrock_usage() -> (&'static str, Value) {
    (
        "metadata",
        json!({"usage": {"inputTokens": 50, "outputTokens": 5, "totalTokens": 55}, "metrics": {"latencyMs": 10}}),
    )
}

fn bedrock_tool_call() -> Reply {
    bedrock_events(&[
        ("messageStart", json!({"role": "assistant"})),
        (
            "contentBlockDelta",
            json!({"contentBlockIndex": 0, "delta": {"text": "Reading."}}),
        ),
        ("contentBlockStop", json!({"contentBlockIndex": 0})),
        (
            "contentBlockStart",
            json!({"contentBlockIndex": 1, "start": {"toolUse": {"toolUseId": "tooluse_1", "name": "read"}}}),
        ),
        (
            "contentBlockDelta",
            json!({"contentBlockIndex": 1, "delta": {"toolUse": {"input": "{\"path\":"}}}),
        ),
        (
            "contentBlockDelta",
            json!({"contentBlockIndex": 1, "delta": {"toolUse": {"input": "\"a.txt\"}"}}}),
        ),
        ("contentBlockStop", json!({"contentBlockIndex": 1})),
        ("messageStop", json!({"stopReason": "tool_use"})),
        bedrock_usage(),
    ])
}

fn bedrock_text(text: &str) -> Reply {
    bedrock_events(&[
        ("messageStart", json!({"role": "assistant"})),
        (
            "contentBlockDelta",
            json!({"contentBlockIndex": 0, "delta": {"text": text}}),
        ),
        ("contentBlockStop", json!({"contentBlockIndex": 0})),
        ("messageStop", json!({"stopReason": "end_turn"})),
        bedrock_usage(),
    ])
}

/// `pi run -p` with a tool call: the answer, the session, and the requests.
fn run_with_tool(
    w: &World,
    model: &str,
    env: &[(&str, String)],
) -> (std::process::Output, Vec<Value>) {
    let mut c = w.pi();
    c.args(["run", "--model", model, "-p", "What is in a.txt?"]);
    for (k, v) in env {
        c.env(k, v);
    }
    let o = c.output().unwrap();
    assert!(
        o.status.success(),
        "stdout: {}\nstderr: {}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    );
    let m = messages(&session_file(w));
    (o, m)
}

fn stdout(o: &std::process::Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

#[test]
fn run_with_gemini_sends_the_tool_result_back() {
    let server = ModelServer::start();
    let w = world(&server);
    server.push(google_tool_call());
    server.push(google_text("It says alpha."));
    let (o, m) = run_with_tool(
        &w,
        "google/gemini-2.5-flash",
        &[("GEMINI_API_KEY", GEMINI_KEY.into())],
    );
    assert!(stdout(&o).contains("It says alpha."), "{}", stdout(&o));
    assert_eq!(roles(&m), ["user", "assistant", "toolResult", "assistant"]);
    assert_eq!(m[1]["api"], "google-generative-ai");
    assert_eq!(m[1]["content"][1]["id"], "fc-1", "{}", m[1]);
    assert_eq!(m[3]["stopReason"], "stop");
    assert_eq!(m[3]["usage"]["totalTokens"], 64);
    let reqs = server.requests();
    assert_eq!(
        reqs[0].path,
        "/v1beta/models/gemini-2.5-flash:streamGenerateContent?alt=sse"
    );
    assert_eq!(reqs[0].header("x-goog-api-key"), Some(GEMINI_KEY));
    let b = reqs[1].json();
    let names: Vec<&str> = b["tools"][0]["functionDeclarations"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["read", "bash", "edit", "write"]);
    let contents = b["contents"].as_array().unwrap();
    let response = &contents[2]["parts"][0]["functionResponse"];
    assert_eq!(response["name"], "read");
    assert!(
        response["response"]["output"]
            .as_str()
            .unwrap()
            .contains("alpha")
    );
}

#[test]
fn run_with_vertex_service_account_fetches_a_token() {
    let server = ModelServer::start();
    let w = world(&server);
    let sa: Value = serde_json::from_str(
        &std::fs::read_to_string(fixture("llm/cloud/service-account.json")).unwrap(),
    )
    .unwrap();
    let mut sa = sa.as_object().unwrap().clone();
    sa.insert("token_uri".into(), format!("{}/token", server.url()).into());
    let sa_path = w.write("home/sa.json", Value::Object(sa).to_string());
    server.push(Reply::status(
        200,
        r#"{"access_token":"ya29.run-cloud-token","expires_in":3599,"token_type":"Bearer"}"#,
    ));
    server.push(google_tool_call());
    server.push(google_text("It says alpha."));
    let env = [
        (
            "GOOGLE_APPLICATION_CREDENTIALS",
            sa_path.to_string_lossy().into_owned(),
        ),
        ("GOOGLE_CLOUD_PROJECT", "pi-test-project".to_owned()),
        ("GOOGLE_CLOUD_LOCATION", "us-central1".to_owned()),
    ];
    let (o, m) = run_with_tool(&w, "google-vertex/gemini-2.5-flash", &env);
    assert!(stdout(&o).contains("It says alpha."));
    assert_eq!(m[3]["api"], "google-vertex");
    let reqs = server.requests();
    assert_eq!(reqs.len(), 3, "one token for both calls");
    assert_eq!(reqs[0].path, "/token");
    assert!(reqs[0].text().starts_with(
        "grant_type=urn%3Aietf%3Aparams%3Aoauth%3Agrant-type%3Ajwt-bearer&assertion="
    ));
    for r in &reqs[1..] {
        assert_eq!(
            r.path, "/v1/publishers/google/models/gemini-2.5-flash:streamGenerateContent?alt=sse",
            "a base URL replaces the project's path, as in Google's SDK"
        );
        assert_eq!(
            r.header("authorization"),
            Some("Bearer ya29.run-cloud-token")
        );
    }
    // `pi models` says where the credentials come from.
    let mut c = w.pi();
    c.args(["models", "--json", "gemini-2.5-flash"]);
    for (k, v) in &env {
        c.env(k, v);
    }
    let recs = jsonl(&String::from_utf8(c.output().unwrap().stdout).unwrap());
    let vertex = recs
        .iter()
        .find(|r| r["provider"] == "google-vertex")
        .unwrap();
    assert_eq!(
        vertex["key"],
        format!("ADC {}", sa_path.to_string_lossy()).as_str()
    );
    assert_eq!(vertex["supported"], true);
}

#[test]
fn run_with_bedrock_signs_every_call() {
    let server = ModelServer::start();
    let w = world(&server);
    server.push(bedrock_tool_call());
    server.push(bedrock_text("It says alpha."));
    let env = [
        ("AWS_ACCESS_KEY_ID", "AKIDEXAMPLE".to_owned()),
        ("AWS_SECRET_ACCESS_KEY", AWS_SECRET.to_owned()),
        ("AWS_REGION", "eu-west-1".to_owned()),
    ];
    let (o, m) = run_with_tool(
        &w,
        "amazon-bedrock/us.anthropic.claude-sonnet-4-5-20250929-v1:0",
        &env,
    );
    assert!(stdout(&o).contains("It says alpha."));
    assert_eq!(roles(&m), ["user", "assistant", "toolResult", "assistant"]);
    assert_eq!(m[1]["content"][1]["id"], "tooluse_1");
    assert_eq!(m[1]["content"][1]["arguments"], json!({"path": "a.txt"}));
    assert_eq!(m[1]["stopReason"], "toolUse");
    let reqs = server.requests();
    assert_eq!(reqs.len(), 2);
    for r in &reqs {
        assert_eq!(
            r.path,
            "/model/us.anthropic.claude-sonnet-4-5-20250929-v1%3A0/converse-stream"
        );
        let auth = r.header("authorization").unwrap();
        assert!(
            auth.starts_with("AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE/20260102/eu-west-1/bedrock/aws4_request, SignedHeaders=content-length;content-type;host;x-amz-content-sha256;x-amz-date, Signature="),
            "{auth}"
        );
        assert!(!r.text().contains(AWS_SECRET));
    }
    let b = reqs[1].json();
    let result = &b["messages"][2]["content"][0]["toolResult"];
    assert_eq!(result["toolUseId"], "tooluse_1");
    assert!(
        result["content"][0]["text"]
            .as_str()
            .unwrap()
            .contains("alpha")
    );
    assert!(!stdout(&o).contains(AWS_SECRET));
}

/// A session of the compaction fixtures, compacted with `model`; returns the entry.
fn compact(w: &World, model: &str, env: &[(&str, String)]) -> Value {
    let src = fixture("compact/cases/changes-3.1-repeated.jsonl");
    let s = w.write("s/c.jsonl", std::fs::read(src).unwrap());
    let mut c = w.pi();
    c.args(["compact", s.to_str().unwrap(), "--model", model]);
    c.args(["--keep-recent-tokens", "150"]);
    for (k, v) in env {
        c.env(k, v);
    }
    let o = c.output().unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    jsonl(&std::fs::read_to_string(&s).unwrap())
        .last()
        .unwrap()
        .clone()
}

#[test]
fn compact_with_gemini_vertex_and_bedrock() {
    let server = ModelServer::start();
    let w = world(&server);
    server.push(google_text("## Goal\nGemini summary"));
    let e = compact(
        &w,
        "google/gemini-2.5-flash",
        &[("GEMINI_API_KEY", GEMINI_KEY.into())],
    );
    assert_eq!(e["type"], "compaction");
    assert_eq!(e["summary"], "## Goal\nGemini summary");
    let r = &server.requests()[0];
    assert_eq!(
        r.json()["systemInstruction"]["parts"][0]["text"],
        pi_agent::compact::text::SYSTEM_PROMPT
    );

    server.push(google_text("## Goal\nVertex summary"));
    let e = compact(
        &w,
        "google-vertex/gemini-2.5-pro",
        &[("GOOGLE_CLOUD_API_KEY", "AQ.vertex-key".into())],
    );
    assert_eq!(e["summary"], "## Goal\nVertex summary");
    let r = &server.requests()[1];
    assert_eq!(
        r.path,
        "/v1/publishers/google/models/gemini-2.5-pro:streamGenerateContent?alt=sse"
    );
    assert_eq!(r.header("x-goog-api-key"), Some("AQ.vertex-key"));

    // Bedrock with keys from a profile file.
    let creds = w.write(
        "home/.aws/credentials",
        format!("[work]\naws_access_key_id = AKIDPROFILE\naws_secret_access_key = {AWS_SECRET}\n"),
    );
    w.write("home/.aws/config", "[profile work]\nregion = ap-south-1\n");
    server.push(bedrock_text("## Goal\nBedrock summary"));
    let e = compact(
        &w,
        "amazon-bedrock/amazon.nova-pro-v1:0",
        &[("AWS_PROFILE", "work".into())],
    );
    assert!(creds.exists());
    assert_eq!(e["summary"], "## Goal\nBedrock summary");
    let r = &server.requests()[2];
    assert_eq!(r.path, "/model/amazon.nova-pro-v1%3A0/converse-stream");
    assert!(
        r.header("authorization")
            .unwrap()
            .contains("Credential=AKIDPROFILE/20260102/ap-south-1/bedrock/aws4_request")
    );
    assert_eq!(
        r.json()["system"][0]["text"],
        pi_agent::compact::text::SYSTEM_PROMPT
    );
}

#[test]
fn bedrock_without_credentials_fails_clearly() {
    let server = ModelServer::start();
    let w = world(&server);
    let o = w
        .pi()
        .args([
            "run",
            "--model",
            "amazon-bedrock/amazon.nova-pro-v1:0",
            "-p",
            "hi",
        ])
        .env("AWS_PROFILE", "missing")
        .env("AWS_REGION", "us-east-1")
        .output()
        .unwrap();
    assert!(!o.status.success());
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.contains("Could not resolve credentials using profile: [missing]"),
        "{err}"
    );
    assert!(server.requests().is_empty());
}
