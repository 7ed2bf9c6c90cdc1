//! Helpers of the `pi run` tests: a world whose models answer from the scripted model
//! server, replies with tool calls, and readers for the event stream and the session file.

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdout, Output, Stdio};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use crate::common::model_server::{ModelServer, Reply};
use crate::common::*;

pub const KEY: &str = "sk-run-test-7d3e91";

/// A world with two providers on `server`: `mock` (OpenAI Chat Completions, model `m1`,
/// window 100000) and `mockant` (Anthropic Messages, `claude-mock`), retries fast.
pub fn world(server: &ModelServer) -> World {
    let w = World::new();
    w.write(
        "agent/models.json",
        json!({"providers": {
            "mock": {"baseUrl": format!("{}/v1", server.url()), "api": "openai-completions",
                     "apiKey": KEY,
                     "models": [{"id": "m1", "contextWindow": 100000, "maxTokens": 4000},
                                {"id": "small", "contextWindow": 2000, "maxTokens": 500}]},
            "mockant": {"baseUrl": server.url(), "api": "anthropic-messages", "apiKey": KEY,
                        "models": [{"id": "claude-mock", "contextWindow": 200000, "maxTokens": 8000}]}
        }})
        .to_string(),
    );
    settings(&w, json!({}));
    w
}

/// Writes the agent's settings.json: defaults for tests (fast retries, the mock model)
/// with `extra` merged over them (one level deep).
pub fn settings(w: &World, extra: Value) {
    let mut s = json!({
        "defaultProvider": "mock",
        "defaultModel": "m1",
        "retry": {"baseDelayMs": 10, "provider": {"maxRetries": 0}},
    });
    for (k, v) in extra.as_object().unwrap() {
        match (s.get_mut(k), v) {
            (Some(Value::Object(base)), Value::Object(over)) => {
                for (k2, v2) in over {
                    base.insert(k2.clone(), v2.clone());
                }
            }
            _ => {
                s[k] = v.clone();
            }
        }
    }
    w.write("agent/settings.json", s.to_string());
}

/// `pi run ARGS` in the project; the prompt is never read from stdin unless given.
pub fn run(w: &World, args: &[&str]) -> Output {
    w.pi().arg("run").args(args).output().unwrap()
}

pub fn out(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

pub fn err(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

/// Asserts the exit status, showing the output otherwise.
pub fn status(o: &Output, code: i32) {
    assert_eq!(
        o.status.code(),
        Some(code),
        "exit status\nstdout: {}\nstderr: {}",
        out(o),
        err(o)
    );
}

/// The event lines of `--json` output (the header line first).
pub fn events(o: &Output) -> Vec<Value> {
    jsonl(&out(o))
}

/// The `type`s of events, with the role for message events (`message_end:user`).
pub fn kinds(evs: &[Value]) -> Vec<String> {
    evs.iter()
        .map(|e| {
            let t = e["type"].as_str().unwrap_or("?").to_owned();
            match e["message"]["role"].as_str() {
                Some(r) if t.starts_with("message_") && t != "message_update" => format!("{t}:{r}"),
                _ => t,
            }
        })
        .collect()
}

/// The only session file of the project directory.
pub fn session_file(w: &World) -> PathBuf {
    PathBuf::from(w.ok(&["session", "resume"]).trim())
}

pub fn lines(p: &Path) -> Vec<Value> {
    jsonl(&std::fs::read_to_string(p).unwrap())
}

/// The conversation recorded in a session file, in file order: its messages but the system
/// messages (the prompt and tool loadout `pi run` records, see [`system_messages`]).
pub fn messages(p: &Path) -> Vec<Value> {
    lines(p)
        .into_iter()
        .filter(|e| e["type"] == "message" && e["message"]["role"] != "system")
        .map(|e| e["message"].clone())
        .collect()
}

/// The system messages recorded in a session file, in file order.
pub fn system_messages(p: &Path) -> Vec<Value> {
    lines(p)
        .into_iter()
        .filter(|e| e["type"] == "message" && e["message"]["role"] == "system")
        .map(|e| e["message"].clone())
        .collect()
}

/// The `toolResult` messages recorded in a session file, in file order.
pub fn tool_results(p: &Path) -> Vec<Value> {
    messages(p)
        .into_iter()
        .filter(|m| m["role"] == "toolResult")
        .collect()
}

pub fn roles(ms: &[Value]) -> Vec<String> {
    ms.iter()
        .map(|m| m["role"].as_str().unwrap_or("?").to_owned())
        .collect()
}

/// The text of a message's first text block (or its string content).
pub fn text(m: &Value) -> String {
    match &m["content"] {
        Value::String(s) => s.clone(),
        Value::Array(a) => a
            .iter()
            .filter_map(|b| b["text"].as_str())
            .collect::<Vec<_>>()
            .join("\n"),
        _ => String::new(),
    }
}

/// An OpenAI reply calling tools: `(id, name, arguments as JSON text)`; the arguments
/// stream in two pieces.
pub fn tool_calls(calls: &[(&str, &str, &str)]) -> Reply {
    let mut chunks = vec![json!({"id": "c", "choices": [{"index": 0,
        "delta": {"role": "assistant", "content": null}}]})];
    for (k, (id, name, args)) in calls.iter().enumerate() {
        let cut = args.len() / 2;
        let cut = (0..=cut)
            .rev()
            .find(|&i| args.is_char_boundary(i))
            .unwrap_or(0);
        chunks.push(
            json!({"id": "c", "choices": [{"index": 0, "delta": {"tool_calls": [
            {"index": k, "id": id, "type": "function",
             "function": {"name": name, "arguments": &args[..cut]}}]}}]}),
        );
        chunks.push(
            json!({"id": "c", "choices": [{"index": 0, "delta": {"tool_calls": [
            {"index": k, "function": {"arguments": &args[cut..]}}]}}]}),
        );
    }
    chunks.push(json!({"id": "c", "choices": [{"index": 0, "delta": {},
        "finish_reason": "tool_calls"}]}));
    chunks.push(json!({"id": "c", "choices": [],
        "usage": {"prompt_tokens": 200, "completion_tokens": 20, "total_tokens": 220}}));
    Reply::openai_chunks(&chunks)
}

/// An OpenAI text answer with a reported usage of `prompt` input tokens.
pub fn answer_with_usage(text: &str, prompt: u64) -> Reply {
    Reply::openai_chunks(&[
        json!({"id": "c", "choices": [{"index": 0, "delta": {"role": "assistant", "content": text}}]}),
        json!({"id": "c", "choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]}),
        json!({"id": "c", "choices": [], "usage": {"prompt_tokens": prompt,
            "completion_tokens": 10, "total_tokens": prompt + 10}}),
    ])
}

/// The messages of a recorded OpenAI request.
pub fn request_messages(r: &crate::common::model_server::Recorded) -> Vec<Value> {
    r.json()["messages"].as_array().cloned().unwrap_or_default()
}

/// Runs `pi session check` on a file, expecting no problems.
pub fn check(w: &World, p: &Path) {
    let o = w
        .pi()
        .args(["session", "check", p.to_str().unwrap(), "--json"])
        .output()
        .unwrap();
    assert!(
        o.status.success() && out(&o).trim().is_empty(),
        "pi session check found problems: {}{}",
        out(&o),
        err(&o)
    );
}

/// Starts `pi run ARGS` with stdout piped.
pub fn spawn(w: &World, args: &[&str]) -> (Child, BufReader<ChildStdout>) {
    spawn_env(w, args, &[])
}

/// [`spawn`] with environment variables.
pub fn spawn_env(
    w: &World,
    args: &[&str],
    env: &[(&str, &str)],
) -> (Child, BufReader<ChildStdout>) {
    let mut child = w
        .std_cmd()
        .envs(env.iter().copied())
        .arg("run")
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let out = BufReader::new(child.stdout.take().unwrap());
    (child, out)
}

/// Reads event lines until one satisfies `f`; returns the lines read.
pub fn read_until(out: &mut BufReader<ChildStdout>, f: impl Fn(&Value) -> bool) -> Vec<Value> {
    read_until_all(out, |seen| seen.last().is_some_and(&f))
}

/// Reads event lines until those read satisfy `f`; returns them.
pub fn read_until_all(
    out: &mut BufReader<ChildStdout>,
    f: impl Fn(&[Value]) -> bool,
) -> Vec<Value> {
    let mut seen = Vec::new();
    loop {
        let mut line = String::new();
        let n = out.read_line(&mut line).unwrap();
        assert!(n > 0, "the stream ended before the awaited event: {seen:?}");
        let v: Value = serde_json::from_str(line.trim()).unwrap();
        seen.push(v);
        if f(&seen) {
            return seen;
        }
    }
}

pub fn signal(child: &Child, sig: libc::c_int) {
    let pid = libc::pid_t::try_from(child.id()).unwrap();
    // SAFETY: sending a signal to our own child process.
    let r = unsafe { libc::kill(pid, sig) };
    assert_eq!(r, 0);
}

/// Waits (at most 10 s) for the child; returns its exit status and the rest of stdout.
pub fn finish(mut child: Child, mut out: BufReader<ChildStdout>) -> (i32, Vec<Value>) {
    let start = Instant::now();
    loop {
        if let Some(s) = child.try_wait().unwrap() {
            let mut rest = String::new();
            std::io::Read::read_to_string(&mut out, &mut rest).unwrap();
            return (s.code().unwrap_or(-1), jsonl(&rest));
        }
        assert!(
            start.elapsed() < Duration::from_secs(10),
            "pi run did not stop"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Like [`finish`] for the text view: the rest of stdout as text.
pub fn finish_text(mut child: Child, mut out: BufReader<ChildStdout>) -> (i32, String) {
    let start = Instant::now();
    loop {
        if let Some(s) = child.try_wait().unwrap() {
            let mut rest = String::new();
            std::io::Read::read_to_string(&mut out, &mut rest).unwrap();
            return (s.code().unwrap_or(-1), rest);
        }
        assert!(
            start.elapsed() < Duration::from_secs(10),
            "pi run did not stop"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}
