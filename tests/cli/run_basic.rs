//! `pi run` against the scripted model server: a single answer in both views and both wire
//! formats, what the session file records, the JSON event stream in upstream's canonical
//! order, continuing a session, and the usage errors that write nothing.

use std::path::PathBuf;

use serde_json::{Value, json};

use crate::common::model_server::{ModelServer, Reply};
use crate::common::*;
use crate::run_support::*;

#[test]
fn single_answer_streams_text_and_records_the_session() {
    let server = ModelServer::start();
    let w = world(&server);
    server.push(Reply::openai_text(&["Hello", ", ", "world."]).split(7));
    let o = run(&w, &["-p", "Say hello"]);
    insta::assert_snapshot!(w.shown(&o), @"
    status: 0
    ----- stdout -----
    Hello, world.
    ----- stderr -----
    ");
    // The request: the system prompt, the user message, the default tools.
    let r = &server.requests()[0];
    assert_eq!(r.path, "/v1/chat/completions");
    assert_eq!(
        r.header("authorization"),
        Some(format!("Bearer {KEY}").as_str())
    );
    let body = r.json();
    assert_eq!(body["model"], "m1");
    assert_eq!(body["messages"][0]["role"], "system");
    let sent_prompt = body["messages"][0]["content"].as_str().unwrap();
    assert!(sent_prompt.contains("<tools>\n- read: "));
    assert_eq!(text(&body["messages"][1]), "Say hello");
    let names: Vec<&str> = body["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["function"]["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["read", "bash", "edit", "write"]);
    // The file: header, model and thinking level, then the two messages, chained.
    let f = session_file(&w);
    let ls = lines(&f);
    let types: Vec<&str> = ls.iter().map(|l| l["type"].as_str().unwrap()).collect();
    assert_eq!(
        types,
        [
            "session",
            "model_change",
            "thinking_level_change",
            "message",
            "message",
            "message"
        ]
    );
    assert_eq!(ls[0]["cwd"], w.proj().to_str().unwrap());
    // The first request records the prompt as sections and the tools it declares (1.6's
    // system message); the prompt sent is those sections, in order.
    let sys = &ls[3]["message"];
    assert_eq!(sys["role"], "system");
    assert_eq!(sys["content"], "");
    let sections = sys["sections"].as_object().unwrap();
    let names: Vec<&str> = sections.keys().map(String::as_str).collect();
    assert_eq!(names, ["preamble", "tools", "rules", "docs", "cwd"]);
    let joined: Vec<&str> = sections.values().map(|v| v.as_str().unwrap()).collect();
    assert_eq!(joined.join("\n\n"), sent_prompt);
    assert_eq!(
        sections["cwd"],
        format!("<cwd>\n{}\n</cwd>", w.proj().to_str().unwrap())
    );
    let declared: Vec<&str> = sys["toolsAdded"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].as_str().unwrap())
        .collect();
    assert_eq!(declared, ["read", "bash", "edit", "write"]);
    assert_eq!(
        sys["toolsAdded"][0]["parameters"],
        body["tools"][0]["function"]["parameters"]
    );
    assert_eq!(system_messages(&f).len(), 1);
    assert_eq!(ls[1]["provider"], "mock");
    assert_eq!(ls[1]["modelId"], "m1");
    assert_eq!(ls[2]["thinkingLevel"], "off");
    for k in 2..ls.len() {
        assert_eq!(ls[k]["parentId"], ls[k - 1]["id"]);
    }
    let m = messages(&f);
    assert_eq!(roles(&m), ["user", "assistant"]);
    assert_eq!(
        m[0]["content"],
        json!([{"type": "text", "text": "Say hello"}])
    );
    assert_eq!(
        m[1]["content"],
        json!([{"type": "text", "text": "Hello, world."}])
    );
    assert_eq!(m[1]["provider"], "mock");
    assert_eq!(m[1]["api"], "openai-completions");
    assert_eq!(m[1]["stopReason"], "stop");
    assert_eq!(m[1]["usage"]["input"], 120);
    check(&w, &f);
    assert!(!std::fs::read_to_string(&f).unwrap().contains(KEY));
}

#[test]
fn json_mode_prints_the_header_then_upstreams_canonical_sequence() {
    let server = ModelServer::start();
    let w = world(&server);
    w.write("proj/notes.txt", "alpha\nbeta\n");
    server.push(tool_calls(&[("call_1", "read", r#"{"path":"notes.txt"}"#)]));
    server.push(Reply::openai_text(&["It says ", "alpha."]));
    let o = run(&w, &["--json", "-p", "What is in notes.txt?"]);
    status(&o, 0);
    let evs = events(&o);
    assert_eq!(evs[0]["type"], "session");
    assert_eq!(evs[0]["version"], 3);
    let f = session_file(&w);
    assert_eq!(evs[0], lines(&f)[0], "the header line is the file's");
    let k: Vec<String> = kinds(&evs[1..])
        .into_iter()
        .filter(|t| t != "message_update")
        .collect();
    assert_eq!(
        k,
        [
            "agent_start",
            "turn_start",
            "message_start:system",
            "message_end:system",
            "message_start:user",
            "message_end:user",
            "message_start:assistant",
            "message_end:assistant",
            "tool_execution_start",
            "tool_execution_end",
            "message_start:toolResult",
            "message_end:toolResult",
            "turn_end",
            "turn_start",
            "message_start:assistant",
            "message_end:assistant",
            "turn_end",
            "agent_end",
            "agent_settled",
        ]
    );
    // Updates sit between their message's start and end, with the event and the partial.
    let updates: Vec<&Value> = evs
        .iter()
        .filter(|e| e["type"] == "message_update")
        .collect();
    let sub: Vec<&str> = updates
        .iter()
        .map(|e| e["assistantMessageEvent"]["type"].as_str().unwrap())
        .collect();
    assert_eq!(
        sub,
        [
            "toolcall_start",
            "toolcall_delta",
            "toolcall_delta",
            "toolcall_end",
            "text_start",
            "text_delta",
            "text_delta",
            "text_end"
        ]
    );
    // Delta-only, as 1.6 writes them: the usage so far and the change, no partial answer.
    for u in &updates {
        let keys: Vec<&String> = u.as_object().unwrap().keys().collect();
        assert_eq!(keys, ["type", "usage", "assistantMessageEvent"]);
        assert!(u["assistantMessageEvent"].get("partial").is_none());
    }
    assert_eq!(
        updates[0]["assistantMessageEvent"],
        json!({"type": "toolcall_start", "contentIndex": 0, "id": "call_1", "toolName": "read"})
    );
    assert_eq!(
        updates[3]["assistantMessageEvent"]["toolCall"],
        json!({"type": "toolCall", "id": "call_1", "name": "read", "arguments": {"path": "notes.txt"}})
    );
    assert_eq!(
        updates[7]["assistantMessageEvent"]["content"],
        "It says alpha."
    );
    // Fields of the tool and turn events.
    let start = evs
        .iter()
        .find(|e| e["type"] == "tool_execution_start")
        .unwrap();
    assert_eq!(
        start,
        &json!({"type": "tool_execution_start", "toolCallId": "call_1", "toolName": "read",
                "args": {"path": "notes.txt"}})
    );
    let end = evs
        .iter()
        .find(|e| e["type"] == "tool_execution_end")
        .unwrap();
    assert_eq!(end["result"]["content"][0]["text"], "alpha\nbeta\n");
    assert_eq!(end["isError"], false);
    assert!(end["durationMs"].is_u64(), "{end}");
    let agent_end = evs.iter().find(|e| e["type"] == "agent_end").unwrap();
    assert_eq!(agent_end["willRetry"], false);
    assert_eq!(
        evs.last().unwrap(),
        &json!({"type": "agent_settled", "aborted": false})
    );
    let turn_end = evs.iter().find(|e| e["type"] == "turn_end").unwrap();
    assert_eq!(turn_end["message"]["stopReason"], "toolUse");
    assert_eq!(turn_end["toolResults"][0]["toolCallId"], "call_1");
    assert_eq!(
        roles(agent_end["messages"].as_array().unwrap()),
        ["system", "user", "assistant", "toolResult", "assistant"]
    );
    // Every message_end is what the file recorded, in the same order.
    let ended: Vec<Value> = evs
        .iter()
        .filter(|e| e["type"] == "message_end")
        .map(|e| e["message"].clone())
        .collect();
    let recorded: Vec<Value> = lines(&f)
        .into_iter()
        .filter(|e| e["type"] == "message")
        .map(|e| e["message"].clone())
        .collect();
    assert_eq!(ended, recorded);
    // The second request carried the tool result.
    let second = request_messages(&server.requests()[1]);
    let tool = second.iter().find(|m| m["role"] == "tool").unwrap();
    assert_eq!(tool["tool_call_id"], "call_1");
    assert_eq!(tool["content"], "alpha\nbeta\n");
}

#[test]
fn anthropic_wire_format_and_continuing_a_session() {
    let server = ModelServer::start();
    let w = world(&server);
    server.push(Reply::anthropic_text(&["First ", "answer."]));
    let o = run(
        &w,
        &[
            "--model",
            "mockant/claude-mock",
            "--no-context-files",
            "-p",
            "One",
        ],
    );
    insta::assert_snapshot!(w.shown(&o), @"
    status: 0
    ----- stdout -----
    First answer.
    ----- stderr -----
    ");
    let r = &server.requests()[0];
    assert_eq!(r.path, "/v1/messages");
    assert_eq!(r.header("x-api-key"), Some(KEY));
    let f = session_file(&w);
    // Continue: the session's model is used again, the earlier turn is sent.
    server.push(Reply::anthropic_text(&["Second."]));
    let o = run(&w, &[f.to_str().unwrap(), "-p", "Two"]);
    status(&o, 0);
    let body = server.requests()[1].json();
    assert_eq!(body["model"], "claude-mock");
    let msgs = body["messages"].as_array().unwrap();
    assert_eq!(msgs.len(), 3);
    assert_eq!(msgs[1]["content"][0]["text"], "First answer.");
    let m = messages(&f);
    assert_eq!(roles(&m), ["user", "assistant", "user", "assistant"]);
    // Nothing besides the two messages was added on the second run (the level is known).
    let types: Vec<String> = lines(&f)
        .iter()
        .map(|l| l["type"].as_str().unwrap().to_owned())
        .collect();
    assert_eq!(
        types
            .iter()
            .filter(|t| *t == "thinking_level_change")
            .count(),
        1
    );
    check(&w, &f);
}

#[test]
fn prompt_from_stdin_templates_and_tool_selection() {
    let server = ModelServer::start();
    let w = world(&server);
    w.write(
        "proj/.pi/prompts/review.md",
        "---\ndescription: Review\n---\nReview $1 carefully.",
    );
    server.push(Reply::openai_text(&["ok"]));
    let o = w
        .pi()
        .args([
            "run",
            "--tools",
            "ls,grep",
            "--system-prompt-file",
            "sp.txt",
        ])
        .write_stdin("/review src/lib.rs\n")
        .output()
        .unwrap();
    // sp.txt does not exist: a usage error before anything is written.
    status(&o, 2);
    assert!(err(&o).contains("cannot read sp.txt"), "{}", err(&o));
    assert!(server.requests().is_empty());
    w.write("proj/sp.txt", "You are terse.");
    let o = w
        .pi()
        .args([
            "run",
            "--tools",
            "ls,grep,nope",
            "--system-prompt-file",
            "sp.txt",
            "--append-system-prompt",
            "Extra rule.",
        ])
        .write_stdin("/review src/lib.rs\n")
        .output()
        .unwrap();
    status(&o, 0);
    assert!(
        err(&o).contains("unknown tool 'nope' ignored"),
        "{}",
        err(&o)
    );
    let body = server.requests()[0].json();
    let sp = body["messages"][0]["content"].as_str().unwrap();
    assert!(
        sp.starts_with("You are terse.\n\n<addendum>\nExtra rule.\n</addendum>"),
        "{sp}"
    );
    assert_eq!(text(&body["messages"][1]), "Review src/lib.rs carefully.");
    let names: Vec<&str> = body["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["function"]["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["ls", "grep"]);
    // A skill is expanded into its block.
    w.write(
        "proj/.pi/skills/deploy/SKILL.md",
        "---\nname: deploy\ndescription: How to deploy\n---\nRun make deploy.\n",
    );
    server.push(Reply::openai_text(&["ok"]));
    let o = run(&w, &["--no-session", "-p", "/skill:deploy to staging"]);
    status(&o, 0);
    let sent = text(&server.requests()[1].json()["messages"][1]);
    assert!(sent.starts_with("<skill name=\"deploy\""), "{sent}");
    assert!(
        sent.contains("Run make deploy.\n</skill>\n\nto staging"),
        "{sent}"
    );
    // --no-tools sends none.
    server.push(Reply::openai_text(&["ok"]));
    let o = run(&w, &["--no-tools", "--no-session", "-p", "hi"]);
    status(&o, 0);
    assert!(server.requests()[2].json().get("tools").is_none());
}

#[test]
fn thinking_level_and_leaf() {
    let server = ModelServer::start();
    let w = world(&server);
    w.write(
        "agent/models.json",
        json!({"providers": {"mock": {"baseUrl": format!("{}/v1", server.url()),
            "api": "openai-completions", "apiKey": KEY,
            "models": [{"id": "m1", "reasoning": true, "contextWindow": 100000}]}}})
        .to_string(),
    );
    server.push(Reply::openai_text(&["a1"]));
    status(&run(&w, &["--thinking", "low", "-p", "q1"]), 0);
    assert_eq!(server.requests()[0].json()["reasoning_effort"], "low");
    let f = session_file(&w);
    let first_answer = lines(&f).last().unwrap()["id"].as_str().unwrap().to_owned();
    server.push(Reply::openai_text(&["a2"]));
    status(&run(&w, &[f.to_str().unwrap(), "-p", "q2"]), 0);
    assert_eq!(server.requests()[1].json()["reasoning_effort"], "low");
    // A new level is recorded; --leaf branches from an earlier entry.
    server.push(Reply::openai_text(&["a3"]));
    let o = run(
        &w,
        &[
            f.to_str().unwrap(),
            "--thinking",
            "high",
            "--leaf",
            &first_answer[..6],
            "-p",
            "q3",
        ],
    );
    status(&o, 0);
    let body = server.requests()[2].json();
    assert_eq!(body["reasoning_effort"], "high");
    let texts: Vec<String> = body["messages"]
        .as_array()
        .unwrap()
        .iter()
        .skip(1)
        .map(text)
        .collect();
    assert_eq!(texts, ["q1", "a1", "q3"]);
    let ls = lines(&f);
    let n = ls.len();
    assert_eq!(ls[n - 3]["type"], "thinking_level_change");
    assert_eq!(ls[n - 3]["thinkingLevel"], "high");
    assert_eq!(ls[n - 3]["parentId"], first_answer.as_str());
    check(&w, &f);
    let tree = w.ok(&["session", "tree", f.to_str().unwrap(), "--json"]);
    assert!(tree.contains("q3"));
}

#[test]
fn no_session_writes_nothing_and_reads_a_given_session() {
    let server = ModelServer::start();
    let w = world(&server);
    server.push(Reply::openai_text(&["x"]));
    let o = run(&w, &["--no-session", "--json", "-p", "hi"]);
    status(&o, 0);
    let evs = events(&o);
    assert_eq!(evs[0]["type"], "session");
    assert_eq!(evs[0]["cwd"], w.proj().to_str().unwrap());
    assert!(!w.agent().join("sessions").exists());
    // An existing session is read but not written.
    let f = w.new_session();
    w.ok_in(
        &["session", "append", f.to_str().unwrap()],
        &format!(
            "{}\n{}\n",
            user("earlier question"),
            assistant("earlier answer")
        ),
    );
    let before = std::fs::read(&f).unwrap();
    server.push(Reply::openai_text(&["y"]));
    status(
        &run(&w, &[f.to_str().unwrap(), "--no-session", "-p", "again"]),
        0,
    );
    assert_eq!(std::fs::read(&f).unwrap(), before);
    let msgs = request_messages(&server.requests()[1]);
    assert_eq!(text(&msgs[1]), "earlier question");
}

#[test]
fn usage_errors_write_nothing() {
    let server = ModelServer::start();
    let w = world(&server);
    let sessions = w.agent().join("sessions");
    // The last one: no prompt (stdin empty) and nothing to continue.
    let shown = w.snaps(&[
        &["run", "--max-turns", "0", "-p", "x"],
        &["run", "-p", "/skill:nope do it"],
        &["run", "--model", "mock/unknown", "-p", "x"],
        &["run", "--tool-choice", "fly", "-p", "x"],
        &["run", "--thinking", "huge", "-p", "x"],
        &["run", "--leaf", "abc", "-p", "x"],
        &["run"],
    ]);
    insta::assert_snapshot!(shown, @"
    $ pi run --max-turns 0 -p x
    status: 2
    ----- stdout -----
    ----- stderr -----
    pi: error: invalid value '0' for '--max-turns <N>': must be at least 1
      hint: for more information, try '--help'

    $ pi run -p '/skill:nope do it'
    status: 2
    ----- stdout -----
    ----- stderr -----
    pi: error: unknown skill 'nope'
      hint: no skills were found; `pi prompt list` shows where pi looks

    $ pi run --model mock/unknown -p x
    status: 2
    ----- stdout -----
    ----- stderr -----
    pi: error: unknown model mock/unknown (not in models.json or the built-in table)
      hint: `pi models --all` lists the models pi knows; define others in [AGENT]/models.json

    $ pi run --tool-choice fly -p x
    status: 2
    ----- stdout -----
    ----- stderr -----
    pi: error: invalid --tool-choice 'fly'
      hint: use auto, none, required, or the name of an active tool

    $ pi run --thinking huge -p x
    status: 2
    ----- stdout -----
    ----- stderr -----
    pi: error: invalid value 'huge' for '--thinking <LEVEL>'
      hint: possible values: off, minimal, low, medium, high, xhigh, max
      hint: for more information, try '--help'

    $ pi run --leaf abc -p x
    status: 2
    ----- stdout -----
    ----- stderr -----
    pi: error: the following required arguments were not provided: <SESSION|--session <SESSION>|--continue>
      usage: pi run --leaf <ID> --prompt <PROMPT> <SESSION|--session <SESSION>|--continue>
      hint: for more information, try '--help'

    $ pi run
    status: 2
    ----- stdout -----
    ----- stderr -----
    pi: error: no prompt
      hint: pass -p PROMPT or pipe the prompt to stdin
    ");
    assert!(!sessions.exists(), "a session was created");
    // No model configured at all.
    settings(&w, json!({"defaultProvider": null, "defaultModel": null}));
    insta::assert_snapshot!(w.snap(&["run", "-p", "x"]), @"
    status: 2
    ----- stdout -----
    ----- stderr -----
    pi: error: no model to use: the session names none, and settings.json has no defaultProvider/defaultModel
      hint: pass --model PROVIDER/ID, or set defaultProvider and defaultModel in settings.json
    ");
    assert!(!sessions.exists());
    assert!(server.requests().is_empty());
}

#[test]
fn missing_key_and_missing_cwd_fail_with_status_1() {
    let server = ModelServer::start();
    let w = world(&server);
    let o = run(&w, &["--model", "anthropic/claude-sonnet-4-5", "-p", "x"]);
    insta::assert_snapshot!(w.shown(&o), @r#"
    status: 1
    ----- stdout -----
    ----- stderr -----
    pi: error: no API key for anthropic/claude-sonnet-4-5: ANTHROPIC_API_KEY is not set
      hint: set ANTHROPIC_API_KEY in the environment, give provider "anthropic" an "apiKey" in [AGENT]/models.json, or pick another model with --model PROVIDER/ID
    "#);
    // A session whose directory is gone.
    let gone = w.path("gone");
    std::fs::create_dir_all(&gone).unwrap();
    let f = PathBuf::from(
        w.ok(&["session", "new", "--cwd", gone.to_str().unwrap()])
            .trim(),
    );
    std::fs::remove_dir(&gone).unwrap();
    let o = run(&w, &[f.to_str().unwrap(), "-p", "x"]);
    insta::assert_snapshot!(w.shown(&o), @"
    status: 1
    ----- stdout -----
    ----- stderr -----
    pi: error: the session's working directory [ROOT]/gone does not exist (session [AGENT]/sessions/--[ROOT]-gone--/2026-01-02T03-04-05-678Z_019b7ca9-8f2e-7dca-82ee-ee9dee8f30f2.jsonl; current directory [PROJ])
      hint: recreate the directory, or fork the session into this one with `pi session fork`
    ");
    assert!(server.requests().is_empty());
}

/// `-c` continues the session pinned with `pi session use`, not the most recent one.
#[test]
fn continue_takes_the_pinned_session() {
    let server = ModelServer::start();
    let w = world(&server);
    let pinned = w.new_session();
    let recent = w.new_session();
    w.ok(&["session", "use", pinned.to_str().unwrap()]);
    server.push(Reply::openai_text(&["pinned answer"]));
    let o = run(&w, &["-c", "-p", "to the pin"]);
    status(&o, 0);
    let read = |p: &std::path::Path| std::fs::read_to_string(p).unwrap();
    assert!(read(&pinned).contains("to the pin"), "{}", read(&pinned));
    assert!(read(&pinned).contains("pinned answer"));
    assert!(!read(&recent).contains("to the pin"), "{}", read(&recent));
}

/// `-c/--continue`: the most recent session of the current directory (a new one when it
/// has none); not with a SESSION.
#[test]
fn continue_takes_the_most_recent_session_of_the_directory() {
    let server = ModelServer::start();
    let w = world(&server);
    server.push(Reply::openai_text(&["first"]));
    let o = run(&w, &["-c", "-p", "one"]);
    status(&o, 0);
    let f = session_file(&w);
    server.push(Reply::openai_text(&["second"]));
    let o = run(&w, &["--continue", "-p", "two"]);
    status(&o, 0);
    assert!(
        err(&o).is_empty(),
        "no new session is announced: {}",
        err(&o)
    );
    assert_eq!(session_file(&w), f, "still one session");
    let sent = server.requests()[1].json();
    let texts: Vec<String> = sent["messages"].as_array().unwrap()[1..]
        .iter()
        .map(text)
        .collect();
    assert_eq!(texts, ["one", "first", "two"]);
    let roles: Vec<String> = lines(&f)
        .iter()
        .filter_map(|l| l["message"]["role"].as_str().map(str::to_owned))
        .collect();
    // The second run's prompt and tools are the first's: one system message.
    assert_eq!(roles, ["system", "user", "assistant", "user", "assistant"]);
    // A session and --continue contradict each other.
    let o = run(&w, &[f.to_str().unwrap(), "-c", "-p", "x"]);
    status(&o, 2);
    assert!(err(&o).contains("cannot be used with"), "{}", err(&o));
    assert_eq!(server.requests().len(), 2);
}

/// Inside `pi run`, prompts keep the agent's pass-through: an unknown `/name` is sent as
/// typed, a missing argument is empty (`pi prompt expand` refuses both). Arguments, defaults
/// and byte order marks are read as by the reference 1.6 (the same code as `pi prompt
/// expand`).
#[test]
fn run_passes_unknown_templates_through() {
    let server = ModelServer::start();
    let w = world(&server);
    w.write("proj/.pi/prompts/review.md", "Review PR $1. Focus on $2.");
    w.write(
        "proj/.pi/prompts/focus.md",
        "\u{feff}---\ndescription: d\n---\n[$1] on ${2:-main}, ${@:-none}",
    );
    for _ in 0..4 {
        server.push(Reply::openai_text(&["a"]));
    }
    status(&run(&w, &["--no-session", "-p", "/revew 1234"]), 0);
    status(&run(&w, &["--no-session", "-p", "/review"]), 0);
    status(&run(&w, &["--no-session", "-p", "/focus\tdoesn't ''"]), 0);
    status(&run(&w, &["--no-session", "-p", "/focus"]), 0);
    let rs = server.requests();
    assert_eq!(text(&rs[0].json()["messages"][1]), "/revew 1234");
    assert_eq!(text(&rs[1].json()["messages"][1]), "Review PR . Focus on .");
    assert_eq!(
        text(&rs[2].json()["messages"][1]),
        "[doesn't] on main, doesn't "
    );
    assert_eq!(text(&rs[3].json()["messages"][1]), "[] on main, none");
}
