//! `pi context build`: the command around the context builder (sessions and leaves as
//! arguments, formats, options, errors, unusual files). What the formats contain is checked
//! against the reference in context_goldens.rs.

use std::io::Read;
use std::process::Stdio;

use predicates::prelude::*;
use serde_json::{Value, json};

use crate::common::*;

/// A session with a branch and a compaction: u1 a1 [compaction keeping u2] u2 a2 c u3 a3
/// on the main path, and u4 a4 off a1.
fn session(w: &World) -> (String, Vec<String>) {
    let s = w.new_session();
    let s = s.to_str().unwrap().to_owned();
    let out = jsonl(&w.ok_in(
        &["session", "append", &s],
        &[user("u1"), assistant("a1"), user("u2"), assistant("a2")].join("\n"),
    ));
    let mut ids: Vec<String> = out
        .iter()
        .map(|r| r["id"].as_str().unwrap().to_owned())
        .collect();
    let compaction = json!({"type": "compaction", "summary": "earlier work", "firstKeptEntryId": ids[2],
                            "tokensBefore": 1234});
    let out = jsonl(&w.ok_in(
        &["session", "append", &s],
        &[compaction.to_string(), user("u3"), assistant("a3")].join("\n"),
    ));
    ids.extend(out.iter().map(|r| r["id"].as_str().unwrap().to_owned()));
    let out = jsonl(&w.ok_in(
        &["session", "append", &s, "--parent", &ids[1]],
        &[user("u4"), assistant("a4")].join("\n"),
    ));
    ids.extend(out.iter().map(|r| r["id"].as_str().unwrap().to_owned()));
    (s, ids)
}

fn texts(out: &str) -> Vec<String> {
    jsonl(out)
        .iter()
        .map(|m| match &m["content"] {
            Value::String(s) => s.clone(),
            Value::Array(b) => b[0]["text"].as_str().unwrap_or("").to_owned(),
            _ => m["summary"].as_str().unwrap_or("").to_owned(),
        })
        .collect()
}

#[test]
fn builds_the_path_after_the_latest_compaction() {
    let w = World::new();
    let (s, ids) = session(&w);
    // The leaf is a4 (the last entry): its path has no compaction.
    assert_eq!(
        texts(&w.ok(&["context", "build", &s])),
        ["u1", "a1", "u4", "a4"]
    );
    // The main path: summary, kept u2 a2, then u3 a3.
    let out = w.ok(&["context", "build", &s, "--leaf", &ids[6][..5]]);
    let msgs = jsonl(&out);
    assert_eq!(msgs[0]["role"], "compactionSummary");
    assert_eq!(msgs[0]["tokensBefore"], 1234);
    assert_eq!(
        texts(&out),
        ["earlier work", "u2", "a2", "u3", "a3"],
        "{out}"
    );
    // Messages are printed as stored.
    let file = std::fs::read_to_string(&s).unwrap();
    for line in out.lines().skip(1) {
        assert!(file.contains(line), "not as stored: {line}");
    }
}

#[test]
fn formats_differ_as_documented() {
    let w = World::new();
    let (s, ids) = session(&w);
    let leaf = ids[6].as_str();
    let llm = jsonl(&w.ok(&["context", "build", &s, "--leaf", leaf, "--format", "llm"]));
    assert_eq!(llm[0]["role"], "user");
    let summary = llm[0]["content"][0]["text"].as_str().unwrap();
    assert!(summary.starts_with("The conversation history before this point was compacted"));
    assert!(
        summary.ends_with("<summary>\nearlier work\n</summary>"),
        "{summary}"
    );
    let openai = jsonl(&w.ok(&["context", "build", &s, "--leaf", leaf, "--format", "openai"]));
    assert_eq!(openai[2], json!({"role": "assistant", "content": "a2"}));
    assert_eq!(openai.len(), 5);
    let anthropic = jsonl(&w.ok(&[
        "context",
        "build",
        &s,
        "--leaf",
        leaf,
        "--format",
        "anthropic",
    ]));
    assert_eq!(
        anthropic[2],
        json!({"role": "assistant", "content": [{"type": "text", "text": "a2"}]})
    );
    // The last user message carries the cache marker; a3 is the last message here.
    assert_eq!(anthropic.len(), 5);
    // The lines, as an array, are a valid request's messages.
    crate::context_goldens::valid_openai(&openai).unwrap();
    crate::context_goldens::valid_anthropic(&anthropic).unwrap();
}

#[test]
fn with_settings_comes_first() {
    let w = World::new();
    let s = w.new_session();
    let s = s.to_str().unwrap();
    let lines = [
        json!({"type": "thinking_level_change", "thinkingLevel": "high"}).to_string(),
        user("q"),
        assistant("a"),
    ];
    w.ok_in(&["session", "append", s], &lines.join("\n"));
    let out = jsonl(&w.ok(&["context", "build", s, "--with-settings", "--format", "llm"]));
    assert_eq!(
        out[0],
        json!({"type": "settings", "thinkingLevel": "high",
               "model": {"provider": "anthropic", "modelId": "claude-test"}})
    );
    assert_eq!(out.len(), 3);
    // An empty session: the defaults, and no messages.
    let e = w.new_session();
    let out = w.ok(&["context", "build", e.to_str().unwrap(), "--with-settings"]);
    assert_eq!(
        out,
        "{\"type\":\"settings\",\"thinkingLevel\":\"off\",\"model\":null}\n"
    );
    assert_eq!(w.ok(&["context", "build", e.to_str().unwrap()]), "");
}

#[test]
fn system_prompt_placement() {
    let w = World::new();
    let s = w.new_session();
    let s = s.to_str().unwrap();
    w.ok_in(
        &["session", "append", s],
        &[user("q"), assistant("a")].join("\n"),
    );
    let sp = w.write("sp.md", "Be brief.");
    let sp = sp.to_str().unwrap();
    // openai: the first message (developer for reasoning models, system otherwise).
    let out = jsonl(&w.ok(&[
        "context",
        "build",
        s,
        "--format",
        "openai",
        "--system-prompt-file",
        sp,
        "--model",
        "anthropic/claude-sonnet-4-5",
    ]));
    assert_eq!(out[0], json!({"role": "developer", "content": "Be brief."}));
    let out = jsonl(&w.ok(&[
        "context",
        "build",
        s,
        "--format",
        "openai",
        "--system-prompt-file",
        sp,
        "--model",
        "xai/grok-3",
    ]));
    assert_eq!(out[0], json!({"role": "system", "content": "Be brief."}));
    // From stdin.
    let out = jsonl(&w.ok_in(
        &[
            "context",
            "build",
            s,
            "--format",
            "openai",
            "--system-prompt-file",
            "-",
        ],
        "From stdin.",
    ));
    assert_eq!(out[0]["content"], "From stdin.");
    // anthropic: in the settings record, as the request's `system` blocks.
    let out = jsonl(&w.ok(&[
        "context",
        "build",
        s,
        "--format",
        "anthropic",
        "--system-prompt-file",
        sp,
        "--with-settings",
    ]));
    assert_eq!(out[0]["systemPrompt"], "Be brief.");
    assert_eq!(
        out[0]["system"],
        json!([{"type": "text", "text": "Be brief.", "cache_control": {"type": "ephemeral"}}])
    );
    assert_eq!(out[1]["role"], "user");
    // Without --with-settings the agent, llm and anthropic formats have nowhere to put it.
    for fmt in ["agent", "llm", "anthropic"] {
        let out = w
            .pi()
            .args([
                "context",
                "build",
                s,
                "--format",
                fmt,
                "--system-prompt-file",
                sp,
            ])
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(2), "{fmt}");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(
            err.contains("has no system message") && err.contains("--with-settings"),
            "{err}"
        );
        assert!(out.stdout.is_empty());
    }
    // A missing file.
    w.pi()
        .args([
            "context",
            "build",
            s,
            "--format",
            "openai",
            "--system-prompt-file",
            "nope.md",
        ])
        .assert()
        .code(2)
        .stderr(predicate::str::contains("cannot read nope.md"));
}

#[test]
fn target_model_decides_the_transforms() {
    let w = World::new();
    let s = w.new_session();
    let s = s.to_str().unwrap();
    let a = json!({"role": "assistant", "content": [{"type": "thinking", "thinking": "hmm", "thinkingSignature": "sig"},
                                                    {"type": "text", "text": "ok"}],
                   "api": "anthropic-messages", "provider": "anthropic", "model": "claude-sonnet-4-5",
                   "usage": {"input": 1, "output": 1, "cacheRead": 0, "cacheWrite": 0, "totalTokens": 2},
                   "stopReason": "stop"});
    w.ok_in(
        &["session", "append", s],
        &[user("q"), a.to_string()].join("\n"),
    );
    // The session's own model keeps its signed thinking…
    let out = jsonl(&w.ok(&["context", "build", s, "--format", "anthropic"]));
    assert_eq!(
        out[1]["content"][0],
        json!({"type": "thinking", "thinking": "hmm", "signature": "sig"})
    );
    // …another model gets it as text.
    let out = jsonl(&w.ok(&[
        "context",
        "build",
        s,
        "--format",
        "anthropic",
        "--model",
        "anthropic/claude-opus-4-5",
    ]));
    assert_eq!(out[1]["content"][0], json!({"type": "text", "text": "hmm"}));
    // An unknown model is used with defaults, and said so.
    w.pi()
        .args([
            "context", "build", s, "--format", "openai", "--model", "acme/x1",
        ])
        .assert()
        .success()
        .stderr(predicate::str::contains(
            "model acme/x1 is not in models.json",
        ));
    // --model is for the request formats, and needs PROVIDER/ID.
    for (args, msg) in [
        (vec!["--model", "a/b"], "--model applies to --format openai"),
        (
            vec!["--format", "openai", "--model", "nope"],
            "expected PROVIDER/ID",
        ),
    ] {
        let out = w
            .pi()
            .args(["context", "build", s])
            .args(&args)
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(2));
        assert!(
            String::from_utf8_lossy(&out.stderr).contains(msg),
            "{args:?}"
        );
    }
}

#[test]
fn errors_and_exit_statuses() {
    let w = World::new();
    let (s, _) = session(&w);
    let not = w.write("not.jsonl", "hello\n");
    let shown = w.snaps(&[
        &["context", "build", &s, "--leaf", "zzzz"],
        &["context", "build", "/nonexistent/s.jsonl"],
        &["context", "build", not.to_str().unwrap()],
        &["context", "build", &s, "--format", "xml"],
        &["context"],
    ]);
    insta::assert_snapshot!(shown, @"
    $ pi context build [SESSIONS]/2026-01-02T03-04-05-678Z_019b7ca9-8f2e-727e-8bef-3cafe4594b0f.jsonl --leaf zzzz
    status: 2
    ----- stdout -----
    ----- stderr -----
    pi: error: no entry with id 'zzzz'

    $ pi context build /nonexistent/s.jsonl
    status: 2
    ----- stdout -----
    ----- stderr -----
    pi: error: no session file at /nonexistent/s.jsonl

    $ pi context build [ROOT]/not.jsonl
    status: 2
    ----- stdout -----
    ----- stderr -----
    pi: error: [ROOT]/not.jsonl is not a session file: it has no session header line

    $ pi context build [SESSIONS]/2026-01-02T03-04-05-678Z_019b7ca9-8f2e-727e-8bef-3cafe4594b0f.jsonl --format xml
    status: 2
    ----- stdout -----
    ----- stderr -----
    pi: error: invalid value 'xml' for '--format <FORMAT>'
      hint: possible values: agent, llm, openai, anthropic
      hint: for more information, try '--help'

    $ pi context
    status: 2
    ----- stdout -----
    ----- stderr -----
    pi: error: 'pi context' requires a command
      usage: pi context [OPTIONS] <COMMAND>
      hint: the commands are build, stats, help; `pi help context` describes them
    ");
}

#[test]
fn the_default_session_is_the_latest_of_the_directory() {
    let w = World::new();
    let s = w.new_session();
    w.ok_in(
        &["session", "append", s.to_str().unwrap()],
        &user("only one"),
    );
    assert_eq!(texts(&w.ok(&["context", "build"])), ["only one"]);
    let id = jsonl(&w.ok(&["session", "list", "--json"]))[0]["id"]
        .as_str()
        .unwrap()
        .to_owned();
    assert_eq!(texts(&w.ok(&["context", "build", &id[..13]])), ["only one"]);
}

#[test]
fn unusual_files_are_read_like_the_reference_reads_them() {
    let w = World::new();
    let header = r#"{"type":"session","version":3,"id":"s1","timestamp":"2025-01-01T00:00:00.000Z","cwd":"/tmp"}"#;
    let deep = format!("{}1{}", "[".repeat(3000), "]".repeat(3000));
    let lines = [
        header.to_owned(),
        // A lone surrogate, escapes JSON.stringify writes differently, a deep value.
        format!(
            r#"{{"type":"message","id":"a","parentId":null,"timestamp":"2025-01-01T00:00:01.000Z","message":{{"role":"user","content":"x\ud83d\u00e9\/","timestamp":1.0e3,"deep":{deep}}}}}"#
        ),
        // A message entry without a message object.
        r#"{"type":"message","id":"b","parentId":"a","timestamp":"2025-01-01T00:00:02.000Z"}"#.to_owned(),
        r#"{"type":"custom_message","id":"c","parentId":"b","timestamp":"not a date","customType":"t","content":"n","display":true}"#.to_owned(),
        // A torn last line.
        r#"{"type":"message","id":"d","parentId":"c","#.to_owned(),
    ];
    let f = w.write("odd.jsonl", lines.join("\n"));
    let out = w
        .pi()
        .args(["context", "build", f.to_str().unwrap()])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let stdout = String::from_utf8(out.stdout).unwrap();
    let got: Vec<&str> = stdout.lines().collect();
    assert_eq!(
        got[0],
        format!(r#"{{"role":"user","content":"x\ud83dé/","timestamp":1000,"deep":{deep}}}"#)
    );
    assert_eq!(
        got[1],
        r#"{"role":"custom","customType":"t","content":"n","display":true,"timestamp":null}"#
    );
    assert_eq!(got.len(), 2);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("entry b (line 3) has no message object"),
        "{err}"
    );
    assert!(err.contains("skipped"), "{err}");
    // The wire formats drop the lone surrogate, as the reference's sanitizer does.
    let out = w.ok(&[
        "context",
        "build",
        f.to_str().unwrap(),
        "--format",
        "openai",
    ]);
    assert!(
        out.starts_with(r#"{"role":"user","content":"xé/"}"#),
        "{out}"
    );
}

#[test]
fn v1_files_are_read_as_migrated() {
    let w = World::new();
    let f = fixture("before-compaction.jsonl");
    let out = w.ok(&["context", "build", f.to_str().unwrap()]);
    let msgs = jsonl(&out);
    assert_eq!(msgs.len(), 446);
    assert_eq!(msgs[0]["role"], "compactionSummary");
    assert_eq!(msgs[0]["tokensBefore"], 185014);
    assert_eq!(msgs[1]["content"][0]["text"], "can leave it");
}

#[test]
fn closed_pipe_is_quiet() {
    let w = World::new();
    let f = fixture("before-compaction.jsonl");
    let mut child = w
        .std_cmd()
        .args([
            "context",
            "build",
            f.to_str().unwrap(),
            "--format",
            "openai",
        ])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut first = [0u8; 10];
    child.stdout.take().unwrap().read_exact(&mut first).unwrap();
    let out = child.wait_with_output().unwrap();
    assert_eq!(out.status.code(), Some(0));
    assert!(
        out.stderr.is_empty(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

#[test]
fn blocked_images_follow_the_settings() {
    let w = World::new();
    let s = w.new_session();
    let s = s.to_str().unwrap();
    let m = json!({"role": "user", "content": [{"type": "text", "text": "see"},
                   {"type": "image", "data": "AAAA", "mimeType": "image/png"}]});
    w.ok_in(&["session", "append", s], &m.to_string());
    let with = |fmt: &str| jsonl(&w.ok(&["context", "build", s, "--format", fmt]));
    assert_eq!(with("llm")[0]["content"][1]["type"], "image");
    w.write(
        "proj/.pi/settings.json",
        r#"{"images": {"blockImages": true}}"#,
    );
    assert_eq!(
        with("llm")[0]["content"][1],
        json!({"type": "text", "text": "Image reading is disabled."})
    );
    // The agent format is the stored message, always.
    assert_eq!(with("agent")[0]["content"][1]["type"], "image");
}
