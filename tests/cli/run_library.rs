//! The agent loop as a library (what issue 7's hooks, tools and RPC mode plug into): messages
//! queued while tools run are delivered after the tool batch and `turn_end` (0.73 §8.1),
//! follow-ups when the agent would stop; hooks can block a call, change its arguments and
//! its result, and add messages with a prompt.

use std::sync::Arc;

use serde_json::{Value, json};

use pi_agent::agent::hooks::{self, Hooks, Queue};
use pi_agent::agent::session::user_message;
use pi_agent::agent::settings::Settings;
use pi_agent::agent::store::FileStore;
use pi_agent::agent::{
    AgentSession, Config, Credentials, Message, Outcome, Recorder, ToolExecution,
};
use pi_ai::value::Value as JsValue;
use pi_ai::{Client, Options, RetryPolicy};
use pi_tools::{CancelToken, ToolContext, ToolName, ToolResult};

use crate::common::model_server::{ModelServer, Reply};
use crate::common::*;
use crate::run_support::*;

fn config(w: &World) -> Config {
    let registry = pi_ai::models::Registry::load(&w.agent());
    let llm = pi_ai::config::Settings::load(&w.agent(), &w.proj());
    let flag = ("mock".to_owned(), "m1".to_owned());
    let (target, _) =
        pi_ai::config::select(&registry, &w.agent(), &llm, Some(&flag), None).unwrap();
    Config {
        target,
        thinking_level: "off".into(),
        system_prompt: "You are a test.".into(),
        system_sections: vec![("preamble".into(), "You are a test.".into())],
        tools: ToolName::DEFAULT.iter().map(|&t| t.into()).collect(),
        tool_ctx: Arc::new(ToolContext::new(w.proj())),
        tool_execution: ToolExecution::Parallel,
        settings: Settings::default(),
        options: Options {
            retry: RetryPolicy {
                max_retries: 0,
                ..RetryPolicy::default()
            },
            ..Options::default()
        },
        credentials: Credentials {
            agent_dir: w.agent(),
            registry,
        },
        max_turns: None,
        tool_choice: None,
    }
}

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap()
}

fn parsed(r: &Recorder) -> Vec<Value> {
    r.0.iter()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

/// Queues a steering and a follow-up message when the first tool call is checked (as a
/// user typing while the agent works would).
struct Typist {
    queue: Queue,
    typed: bool,
}

impl pi_agent::compact::BeforeCompact for Typist {}

impl Hooks for Typist {
    async fn tool_call(&mut self, _id: &str, _name: &str, _args: &Value) -> hooks::ToolCall {
        if !self.typed {
            self.typed = true;
            self.queue.steer(user_message("STEER: also check b"));
            self.queue.follow_up(user_message("FOLLOW: and then stop"));
        }
        hooks::ToolCall::Allow
    }
}

#[test]
fn steering_waits_for_the_tool_batch_and_follow_ups_for_the_end() {
    let server = ModelServer::start();
    let w = world(&server);
    w.write("proj/a.txt", "A\n");
    server.push(tool_calls(&[
        ("t1", "read", r#"{"path":"a.txt"}"#),
        ("t2", "bash", r#"{"command":"echo two"}"#),
    ]));
    server.push(Reply::openai_text(&["Checked."]));
    server.push(Reply::openai_text(&["Stopping."]));
    let f = w.new_session();
    let store = FileStore::open(&f, &w.agent(), std::time::Duration::from_secs(1)).unwrap();
    let client = Client::new().unwrap();
    let queue = Queue::default();
    let hooks = Typist {
        queue: queue.clone(),
        typed: false,
    };
    let mut session = AgentSession::new(
        config(&w),
        &client,
        Vec::new(),
        Some(store),
        None,
        Recorder::default(),
        hooks,
        CancelToken::new(),
    );
    session.set_queue(queue);
    let outcome = runtime().block_on(session.prompt("read a")).unwrap();
    assert_eq!(outcome, Outcome::Done);
    let evs = parsed(&session.observer);
    let k: Vec<String> = kinds(&evs)
        .into_iter()
        .filter(|t| {
            t != "message_update" && t != "tool_execution_update" && !t.starts_with("message_start")
        })
        .collect();
    assert_eq!(
        k,
        [
            "agent_start",
            "turn_start",
            "message_end:system",
            "message_end:user",
            "message_end:assistant",
            "tool_execution_start",
            "tool_execution_start",
            "tool_execution_end",
            "tool_execution_end",
            "message_end:toolResult",
            "message_end:toolResult",
            "turn_end",
            "turn_start",
            "message_end:user",
            "message_end:assistant",
            "turn_end",
            "turn_start",
            "message_end:user",
            "message_end:assistant",
            "turn_end",
            "agent_end",
            "agent_settled",
        ]
    );
    let users: Vec<String> = evs
        .iter()
        .filter(|e| e["type"] == "message_end" && e["message"]["role"] == "user")
        .map(|e| text(&e["message"]))
        .collect();
    assert_eq!(
        users,
        ["read a", "STEER: also check b", "FOLLOW: and then stop"]
    );
    // Both tool results were sent before the steering message.
    let second = request_messages(&server.requests()[1]);
    let roles: Vec<&str> = second.iter().map(|m| m["role"].as_str().unwrap()).collect();
    assert_eq!(
        roles,
        ["system", "user", "assistant", "tool", "tool", "user"]
    );
    drop(session);
    assert_eq!(
        roles_of(&f),
        [
            "user",
            "assistant",
            "toolResult",
            "toolResult",
            "user",
            "assistant",
            "user",
            "assistant"
        ]
    );
    check(&w, &f);
}

fn roles_of(f: &std::path::Path) -> Vec<String> {
    roles(&messages(f))
}

/// Blocks bash, sends reads to another file, marks results, and adds a custom message to
/// every prompt.
struct Guard;

impl pi_agent::compact::BeforeCompact for Guard {}

impl Hooks for Guard {
    async fn before_agent_start(
        &mut self,
        _prompt: &str,
        system_prompt: &mut String,
        extra: &mut Vec<Message>,
    ) {
        system_prompt.push_str("\nHooked.");
        let m = json!({"role": "custom", "customType": "note", "content": "from a hook",
                       "display": false, "timestamp": 1});
        extra.push(JsValue::parse(m.to_string().as_bytes()).unwrap());
    }

    async fn tool_call(&mut self, _id: &str, name: &str, args: &Value) -> hooks::ToolCall {
        match name {
            "bash" => hooks::ToolCall::Block(Some("no shell here".into())),
            "read" if args["path"] == "a.txt" => hooks::ToolCall::Modify(json!({"path": "b.txt"})),
            _ => hooks::ToolCall::Allow,
        }
    }

    async fn tool_result(
        &mut self,
        _id: &str,
        _name: &str,
        _args: &Value,
        mut result: ToolResult,
    ) -> ToolResult {
        result.details = Some(json!({"checked": true}));
        result
    }
}

#[test]
fn hooks_block_modify_and_add() {
    let server = ModelServer::start();
    let w = world(&server);
    w.write("proj/b.txt", "B\n");
    server.push(tool_calls(&[
        ("t1", "bash", r#"{"command":"rm -rf /"}"#),
        ("t2", "read", r#"{"path":"a.txt"}"#),
    ]));
    server.push(Reply::openai_text(&["ok"]));
    let f = w.new_session();
    let store = FileStore::open(&f, &w.agent(), std::time::Duration::from_secs(1)).unwrap();
    let client = Client::new().unwrap();
    let mut session = AgentSession::new(
        config(&w),
        &client,
        Vec::new(),
        Some(store),
        None,
        Recorder::default(),
        Guard,
        CancelToken::new(),
    );
    let outcome = runtime().block_on(session.prompt("go")).unwrap();
    assert_eq!(outcome, Outcome::Done);
    drop(session);
    let m = messages(&f);
    let results: Vec<&Value> = m.iter().filter(|m| m["role"] == "toolResult").collect();
    assert_eq!(text(results[0]), "no shell here");
    assert_eq!(results[0]["isError"], true);
    assert_eq!(text(results[1]), "B\n");
    assert_eq!(results[1]["details"], json!({"checked": true}));
    let body = server.requests()[0].json();
    assert!(
        body["messages"][0]["content"]
            .as_str()
            .unwrap()
            .ends_with("\nHooked.")
    );
    assert_eq!(text(&body["messages"][2]), "from a hook");
    let custom = lines(&f)
        .into_iter()
        .find(|e| e["type"] == "custom_message")
        .unwrap();
    assert_eq!(custom["customType"], "note");
    assert_eq!(custom["content"], "from a hook");
    check(&w, &f);
    // The reference reads the custom message back into the context.
    let ctx = jsonl(&w.ok(&["context", "build", f.to_str().unwrap()]));
    assert!(ctx.iter().any(|m| m["role"] == "custom"));
}
