//! Session files written by `pi run` open in the reference with the same context.
//!
//! tests/fixtures/run/*.jsonl are written by `pi run` itself, in the scenarios below (tool
//! calls run in parallel with an unknown tool, a retried rate limit, a multi-edit, an
//! overflow recovered by compaction, a branch from an earlier answer with a new thinking
//! level; and runs interrupted by Ctrl-C while a tool runs and while the answer streams),
//! with the clock and ids fixed. `scenarios_write_the_committed_files` runs them again and
//! compares (set `PI_UPDATE_RUN_FIXTURES=1` to rewrite the files instead).
//!
//! scripts/goldens/run.mjs opened those files with the reference (1.6.0:
//! `SessionManager.open`, `buildSessionContext`, for every leaf), continued them with an
//! appended message, and recorded what it saw in tests/fixtures/run/<name>.golden.json;
//! `the_reference_builds_the_same_context` checks `pi context build` against it.

use std::path::{Path, PathBuf};
use std::time::Duration;

use serde_json::{Value, json};

use crate::common::model_server::{ModelServer, Reply};
use crate::common::*;
use crate::run_support::*;

const NOW: &str = "2026-01-02T03:04:05.678Z";
const SEED: &str = "7";
/// The working directory recorded in the committed files.
const CWD: &str = "/home/user/project";

fn dir() -> PathBuf {
    fixture("run")
}

fn compat_world(server: &ModelServer) -> World {
    let w = world(server);
    w.write(
        "agent/models.json",
        json!({"providers": {"mock": {"baseUrl": format!("{}/v1", server.url()),
            "api": "openai-completions", "apiKey": KEY,
            "models": [{"id": "m1", "reasoning": true, "contextWindow": 100000, "maxTokens": 4000}]}}})
        .to_string(),
    );
    settings(&w, json!({"compaction": {"keepRecentTokens": 30}}));
    w.write("proj/notes.txt", "alpha\nbeta\ngamma\n");
    w
}

fn run_fixed(w: &World, args: &[&str]) -> std::process::Output {
    w.pi()
        .env("PI_NOW", NOW)
        .env("PI_SEED", SEED)
        .arg("run")
        .args(args)
        .output()
        .unwrap()
}

const OVERFLOW: &str = r#"{"error":{"message":"This model's maximum context length is 100000 tokens. However, your messages resulted in 100500 tokens.","type":"invalid_request_error"}}"#;

/// Tools, a retry, a multi-edit, an overflow recovered by compaction, a branch.
fn scenario_tools(w: &World, server: &ModelServer) -> PathBuf {
    server.push(tool_calls(&[
        ("call_ls", "ls", r#"{"path":"."}"#),
        ("call_read", "read", r#"{"path":"notes.txt"}"#),
        ("call_fly", "fly", r#"{"to":"the moon"}"#),
    ]));
    server.push(answer_with_usage(
        "There is notes.txt: alpha, beta, gamma.",
        900,
    ));
    let o = run_fixed(
        w,
        &[
            "--thinking",
            "low",
            "--tools",
            "read,bash,edit,write,ls",
            "-p",
            "What is here?",
        ],
    );
    status(&o, 0);
    let f = session_file(w);
    let first_answer = lines(&f).last().unwrap()["id"].as_str().unwrap().to_owned();

    server.push(Reply::status(
        429,
        r#"{"error":{"message":"Rate limit reached"}}"#,
    ));
    server.push(tool_calls(&[(
        "call_edit",
        "edit",
        r#"{"path":"notes.txt","edits":[{"oldText":"alpha","newText":"ALPHA"},{"oldText":"gamma","newText":"GAMMA"}]}"#,
    )]));
    server.push(answer_with_usage("Capitalized two words.", 1200));
    status(
        &run_fixed(
            w,
            &[f.to_str().unwrap(), "-p", "Capitalize alpha and gamma."],
        ),
        0,
    );

    server.push(Reply::status(400, OVERFLOW));
    server.push(
        Reply::openai_text(&["## Original Request\nEdit notes.txt."]).when("first part of a turn"),
    );
    server.push(
        Reply::openai_text(&["## Goal\nLook at notes.txt and edit it."]).when("<conversation>"),
    );
    server.push(answer_with_usage(
        "The file now reads ALPHA, beta, GAMMA.",
        400,
    ));
    status(
        &run_fixed(w, &[f.to_str().unwrap(), "-p", "What does it say now?"]),
        0,
    );

    server.push(answer_with_usage("On this branch nothing was edited.", 950));
    let o = run_fixed(
        w,
        &[
            f.to_str().unwrap(),
            "--leaf",
            &first_answer,
            "--thinking",
            "high",
            "-p",
            "Forget the edits: what was there first?",
        ],
    );
    status(&o, 0);
    f
}

/// Ctrl-C while a tool runs, then while an answer streams, then a finished answer.
fn scenario_interrupted(w: &World, server: &ModelServer) -> PathBuf {
    let env = [("PI_NOW", NOW), ("PI_SEED", SEED)];
    server.push(tool_calls(&[(
        "call_long",
        "bash",
        r#"{"command":"echo begun; sleep 30"}"#,
    )]));
    let (child, mut out) = spawn_env(w, &["--json", "-p", "Run the long job."], &env);
    read_until(&mut out, |e| {
        e["type"] == "tool_execution_update"
            && e["partialResult"]["content"][0]["text"]
                .as_str()
                .is_some_and(|t| t.contains("begun"))
    });
    signal(&child, libc::SIGINT);
    assert_eq!(finish(child, out).0, 130);
    let f = session_file(w);

    server.push(Reply::openai_text(&["Hel", "lo"]).stall_at("\"lo\"", Duration::from_secs(30)));
    let (child, mut out) = spawn_env(
        w,
        &[f.to_str().unwrap(), "--json", "-p", "Say hello."],
        &env,
    );
    read_until(&mut out, |e| e["assistantMessageEvent"]["delta"] == "Hel");
    signal(&child, libc::SIGINT);
    assert_eq!(finish(child, out).0, 130);

    server.push(answer_with_usage("Hello.", 300));
    status(&run_fixed(w, &[f.to_str().unwrap(), "-p", "Try again."]), 0);
    f
}

/// Extensions: a `before_agent_start` hook adding a custom message, an `agent_end` hook
/// keeping state (`custom` entry), a program tool, a compaction whose summary a hook wrote,
/// then an RPC session naming the session and changing the thinking level.
fn scenario_extensions(w: &World, server: &ModelServer) -> PathBuf {
    settings(
        w,
        json!({"compaction": {"keepRecentTokens": 30},
        "hooks": {
            "before_agent_start": "cat >/dev/null; echo '{\"message\": {\"customType\": \"ticket\", \"content\": \"Ticket 7: notes.txt needs a delta line\"}}'",
            "agent_end": "cat >/dev/null; echo '{\"appendEntry\": {\"customType\": \"audit\", \"data\": {\"runs\": 1}}}'"
        }}),
    );
    let tool = w.write(
        "agent/tools/todo",
        "#!/bin/sh
if [ \"$1\" = --describe ]; then echo '{\"name\":\"todo\",\"description\":\"Add a to-do item\",\"parameters\":{\"type\":\"object\",\"properties\":{\"item\":{\"type\":\"string\"}},\"required\":[\"item\"]},\"promptSnippet\":\"Keep a to-do list\"}'; exit 0; fi
cat >/dev/null; echo 'added to the list'
",
    );
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&tool, std::fs::Permissions::from_mode(0o755)).unwrap();
    }
    // An earlier turn, so that the compaction below has history to summarize.
    server.push(answer_with_usage("The ticket is about notes.txt.", 500));
    status(&run_fixed(w, &["-p", "What is the ticket about?"]), 0);
    server.push(tool_calls(&[(
        "call_todo",
        "todo",
        r#"{"item":"add delta"}"#,
    )]));
    server.push(answer_with_usage("Noted: add delta to notes.txt.", 700));
    let f = session_file(w);
    status(
        &run_fixed(w, &[f.to_str().unwrap(), "-p", "Look at the ticket."]),
        0,
    );
    let o = w
        .pi()
        .env("PI_NOW", NOW)
        .env("PI_SEED", SEED)
        .args(["compact", f.to_str().unwrap(), "--hook"])
        .arg("session_before_compact=cat >/dev/null; echo '{\"summary\": \"The ticket asks for a delta line; a to-do item was added.\"}'")
        .output()
        .unwrap();
    status(&o, 0);
    server.push(answer_with_usage("Done.", 300));
    let cmds = [
        r#"{"type":"set_session_name","name":"Ticket 7"}"#,
        r#"{"type":"set_thinking_level","level":"high"}"#,
        r#"{"type":"prompt","message":"Anything else?"}"#,
    ]
    .join("\n");
    let o = w
        .pi()
        .env("PI_NOW", NOW)
        .env("PI_SEED", SEED)
        .args(["run", "--rpc", f.to_str().unwrap()])
        .write_stdin(cmds + "\n")
        .output()
        .unwrap();
    status(&o, 0);
    f
}

/// What the reference 1.6 added, written by pi: a system message (as 1.6 persists its prompt),
/// runs, `pi session edit` (omit, replace), a compaction by the model (its usage and
/// system checkpoint), and a branch with a summary (the leaf left as `fromId`).
fn scenario_edits(w: &World, server: &ModelServer) -> PathBuf {
    server.push(answer_with_usage(
        "The log says the build failed at step 3.",
        400,
    ));
    status(&run_fixed(w, &["-p", "What does the build log say?"]), 0);
    let f = session_file(w);
    let fs = f.to_str().unwrap();
    let system = json!({"role": "system", "content": "", "sections": {"preamble": "Be brief.", "cwd": "<cwd>\n/home/user/project\n</cwd>"},
        "toolsAdded": [{"name": "read", "description": "Read a file", "parameters": {"type": "object"}}]});
    let edit = |args: &[&str]| {
        let o = w
            .pi()
            .env("PI_NOW", NOW)
            .env("PI_SEED", SEED)
            .args([&["session", "edit", fs][..], args].concat())
            .output()
            .unwrap();
        status(&o, 0);
    };
    w.pi()
        .env("PI_NOW", NOW)
        .env("PI_SEED", SEED)
        .args(["session", "append", fs])
        .write_stdin(system.to_string())
        .output()
        .unwrap();
    server.push(answer_with_usage("Step 3 runs the linker.", 600));
    status(&run_fixed(w, &[fs, "-p", "And step 3?"]), 0);
    // The conversation's messages (pi's runs record system messages between them too).
    let ids: Vec<String> = lines(&f)
        .iter()
        .filter(|e| e["type"] == "message" && e["message"]["role"] != "system")
        .map(|e| e["id"].as_str().unwrap().to_owned())
        .collect();
    // The first question left out, the first answer shortened.
    edit(&[&ids[0], "--omit"]);
    edit(&[&ids[1], "--replace", "The build failed."]);
    server.push(answer_with_usage("Try a clean build.", 800));
    status(&run_fixed(w, &[fs, "-p", "What now?"]), 0);
    server.push(
        Reply::openai_text(&["## Original Request\n", "What now?"]).when("first part of a turn"),
    );
    server.push(Reply::openai_text(&["## Goal\n", "Fix the build."]).when("<conversation>"));
    let o = w
        .pi()
        .env("PI_NOW", NOW)
        .env("PI_SEED", SEED)
        .args(["compact", fs, "--keep-recent-tokens", "10"])
        .output()
        .unwrap();
    status(&o, 0);
    server.push(answer_with_usage("Done.", 900));
    status(&run_fixed(w, &[fs, "-p", "Thanks."]), 0);
    let o = w
        .pi()
        .env("PI_NOW", NOW)
        .env("PI_SEED", SEED)
        .args([
            "session",
            "branch",
            fs,
            &ids[3],
            "--summary",
            "Went back to the log.",
        ])
        .output()
        .unwrap();
    status(&o, 0);
    f
}

/// The file with the world's directory replaced by [`CWD`] (in the header and inside the
/// `cwd` prompt section alike; a temporary directory's path needs no JSON escaping).
fn normalized(w: &World, f: &Path) -> String {
    let text = std::fs::read_to_string(f).unwrap();
    let proj = w.proj().to_str().unwrap().to_owned();
    let mut escaped = Vec::new();
    pi_base::json::write_str(&mut escaped, &proj);
    assert_eq!(escaped, format!("\"{proj}\"").into_bytes());
    text.replace(&proj, CWD)
}

fn compare_or_update(name: &str, actual: &str) {
    let path = dir().join(format!("{name}.jsonl"));
    if std::env::var_os("PI_UPDATE_RUN_FIXTURES").is_some() {
        std::fs::create_dir_all(dir()).unwrap();
        std::fs::write(&path, actual).unwrap();
        return;
    }
    let expected = std::fs::read_to_string(&path).unwrap();
    for (k, (a, e)) in actual.lines().zip(expected.lines()).enumerate() {
        assert_eq!(
            a,
            e,
            "{name}.jsonl line {} differs from what pi run writes",
            k + 1
        );
    }
    assert_eq!(
        actual.lines().count(),
        expected.lines().count(),
        "{name}.jsonl"
    );
}

#[test]
fn scenarios_write_the_committed_files() {
    let server = ModelServer::start();
    let w = compat_world(&server);
    let f = scenario_tools(&w, &server);
    check(&w, &f);
    compare_or_update("tools", &normalized(&w, &f));
    let server = ModelServer::start();
    let w = compat_world(&server);
    let f = scenario_interrupted(&w, &server);
    check(&w, &f);
    compare_or_update("interrupted", &normalized(&w, &f));
    let server = ModelServer::start();
    let w = compat_world(&server);
    let f = scenario_extensions(&w, &server);
    check(&w, &f);
    let types: Vec<String> = lines(&f)
        .iter()
        .map(|e| e["type"].as_str().unwrap().to_owned())
        .collect();
    for t in ["custom_message", "custom", "compaction", "session_info"] {
        assert!(types.iter().any(|x| x == t), "no {t} entry: {types:?}");
    }
    compare_or_update("extensions", &normalized(&w, &f));
    let server = ModelServer::start();
    let w = compat_world(&server);
    let f = scenario_edits(&w, &server);
    check(&w, &f);
    let types: Vec<String> = lines(&f)
        .iter()
        .map(|e| e["type"].as_str().unwrap().to_owned())
        .collect();
    for t in ["context_edit", "compaction", "branch_summary"] {
        assert!(types.iter().any(|x| x == t), "no {t} entry: {types:?}");
    }
    let c = lines(&f)
        .into_iter()
        .find(|e| e["type"] == "compaction")
        .unwrap();
    assert!(c["systemMessage"]["toolsAdded"].is_array(), "{c}");
    assert!(c["usage"]["totalTokens"].is_number(), "{c}");
    compare_or_update("edits", &normalized(&w, &f));
}

fn golden(name: &str) -> Value {
    let p = dir().join(format!("{name}.golden.json"));
    serde_json::from_str(&std::fs::read_to_string(&p).unwrap()).unwrap()
}

#[test]
fn the_reference_builds_the_same_context() {
    for name in ["tools", "interrupted", "extensions", "edits"] {
        let g = golden(name);
        let w = World::new();
        let f = w.write(
            &format!("s/{name}.jsonl"),
            std::fs::read(dir().join(format!("{name}.jsonl"))).unwrap(),
        );
        assert_eq!(
            g["leaf"].as_str(),
            lines(&f).last().unwrap()["id"].as_str(),
            "{name}: the reference's leaf"
        );
        let leaves = g["leaves"].as_array().unwrap();
        assert!(!leaves.is_empty());
        for l in leaves {
            let leaf = l["leaf"].as_str().unwrap();
            let out = w.ok(&[
                "context",
                "build",
                f.to_str().unwrap(),
                "--leaf",
                leaf,
                "--with-settings",
            ]);
            let mut got: Vec<&str> = out.lines().collect();
            let settings: Value = serde_json::from_str(got.remove(0)).unwrap();
            let want: Vec<&str> = l["agent"]
                .as_array()
                .unwrap()
                .iter()
                .map(|x| x.as_str().unwrap())
                .collect();
            assert_eq!(got, want, "{name}, leaf {leaf}: agent messages");
            assert_eq!(
                settings["thinkingLevel"], l["thinkingLevel"],
                "{name} {leaf}"
            );
            assert_eq!(settings["model"], l["model"], "{name} {leaf}");
        }
        // The reference continued the file by appending, under the leaf.
        assert_eq!(g["continued"]["prefixKept"], true, "{name}");
        assert_eq!(g["continued"]["parentId"], g["leaf"], "{name}");
    }
    // The interesting parts are there: an aborted tool run and answer, a compaction, a
    // branch with its own thinking level.
    let t = golden("tools");
    assert!(t["leaves"].as_array().unwrap().len() >= 2);
    let all: String =
        t.to_string() + &golden("interrupted").to_string() + &golden("extensions").to_string();
    for needle in [
        "compactionSummary",
        "Ticket 7: notes.txt needs a delta line",
        "added to the list",
        "The ticket asks for a delta line",
        "Tool fly not found",
        "Command aborted",
        "\\\"stopReason\\\":\\\"aborted\\\"",
    ] {
        assert!(all.contains(needle), "the goldens lack {needle}");
    }
}
