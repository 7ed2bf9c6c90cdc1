//! `pi session edit`: a `context_edit` entry (the reference 1.6's format) changes what the
//! model sees of an entry on this branch, and nothing else.

use serde_json::{Value, json};

use crate::common::*;

struct S {
    w: World,
    file: String,
    /// system, user, assistant, user, assistant
    ids: Vec<String>,
}

fn session() -> S {
    let w = World::new();
    let f = w.new_session();
    let system = json!({"role": "system", "content": "", "sections": {"preamble": "Be brief."},
        "toolsAdded": [{"name": "read", "description": "Read a file", "parameters": {}}]});
    let out = w.ok_in(
        &["session", "append", f.to_str().unwrap()],
        &[
            system.to_string(),
            user("Show me the log."),
            assistant("A very long log, line after line."),
            user("Thanks."),
            assistant("You are welcome."),
        ]
        .join("\n"),
    );
    let ids = jsonl(&out)
        .iter()
        .map(|e| e["id"].as_str().unwrap().to_owned())
        .collect();
    S {
        w,
        file: f.to_str().unwrap().to_owned(),
        ids,
    }
}

fn context(s: &S, extra: &[&str]) -> Vec<Value> {
    jsonl(&s.w.ok(&[&["context", "build", &s.file, "--format", "llm"][..], extra].concat()))
}

fn lines(s: &S) -> usize {
    std::fs::read_to_string(&s.file).unwrap().lines().count()
}

#[test]
fn replace_and_omit_change_the_context_only() {
    let s = session();
    let before = std::fs::read_to_string(&s.file).unwrap();
    let out = jsonl(&s.w.ok(&[
        "session",
        "edit",
        &s.file,
        &s.ids[2],
        "--replace",
        "(log removed)",
    ]));
    assert_eq!(out.len(), 1);
    assert_eq!(out[0]["type"], "context_edit");
    assert_eq!(out[0]["targetId"], s.ids[2]);
    assert_eq!(out[0]["parentId"], s.ids[4], "appended at the leaf");
    // Assistant content must be blocks; the text becomes one text block.
    assert_eq!(
        out[0]["replacement"],
        json!({"content": [{"type": "text", "text": "(log removed)"}]})
    );
    let after = std::fs::read_to_string(&s.file).unwrap();
    assert!(after.starts_with(&before), "history is not rewritten");

    // A user message takes the text as it is; --replace-file - reads stdin.
    let out = jsonl(&s.w.ok_in(
        &["session", "edit", &s.file, &s.ids[1], "--replace-file", "-"],
        "Show me the log, briefly.",
    ));
    assert_eq!(
        out[0]["replacement"],
        json!({"content": "Show me the log, briefly."})
    );
    let c = context(&s, &[]);
    assert_eq!(
        c[0]["role"], "system",
        "system messages stay in the context"
    );
    assert_eq!(c[1]["content"], "Show me the log, briefly.");
    assert_eq!(c[2]["content"][0]["text"], "(log removed)");
    assert_eq!(c.len(), 5);

    // The latest edit of an entry wins; --omit leaves it out.
    s.w.ok(&["session", "edit", &s.file, &s.ids[2], "--omit"]);
    let c = context(&s, &[]);
    assert_eq!(c.len(), 4);
    assert!(
        c.iter()
            .all(|m| m["role"] != "assistant" || m["content"][0]["text"] != "(log removed)")
    );
    assert_eq!(c[2]["content"], "Thanks.");

    // The entries themselves are still there for people.
    let log = s.w.ok(&[
        "session",
        "log",
        &s.file,
        "--filter",
        ".message.content",
        "-c",
    ]);
    assert!(log.contains("A very long log"), "{log}");
}

#[test]
fn edits_are_branch_relative() {
    let s = session();
    s.w.ok(&["session", "edit", &s.file, &s.ids[1], "--omit"]);
    assert_eq!(context(&s, &[]).len(), 4);
    // Going back to before the edit shows the entry again.
    s.w.ok(&["session", "branch", &s.file, &s.ids[4]]);
    let c = context(&s, &[]);
    assert_eq!(c.len(), 5);
    assert_eq!(c[1]["content"], "Show me the log.");
    // An edit is only possible on the active path.
    s.w.ok_in(&["session", "append", &s.file], &user("On a new branch."));
    s.w.ok(&["session", "branch", &s.file, &s.ids[0]]);
    let n = lines(&s);
    let o =
        s.w.pi()
            .args(["session", "edit", &s.file, &s.ids[3], "--omit"])
            .output()
            .unwrap();
    assert_eq!(o.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&o.stderr).contains("not on the active path"));
    assert_eq!(lines(&s), n, "nothing written");
}

#[test]
fn bad_edits_write_nothing() {
    let s = session();
    let n = lines(&s);
    for (args, says) in [
        (
            vec![&s.ids[0][..], "--omit"],
            "only user, assistant, tool-result and custom messages",
        ),
        (
            vec![&s.ids[1][..]],
            "--omit, --replace TEXT or --replace-file FILE",
        ),
        (vec!["ffffffff", "--omit"], "ffffffff"),
    ] {
        let o =
            s.w.pi()
                .args([&["session", "edit", &s.file][..], &args].concat())
                .output()
                .unwrap();
        assert_eq!(o.status.code(), Some(2), "{args:?}");
        let err = String::from_utf8_lossy(&o.stderr);
        assert!(err.contains(says), "{args:?}: {err}");
        assert_eq!(lines(&s), n, "{args:?}: nothing written");
    }
    let o =
        s.w.pi()
            .args([
                "session",
                "edit",
                &s.file,
                &s.ids[1],
                "--omit",
                "--replace",
                "x",
            ])
            .output()
            .unwrap();
    assert_eq!(o.status.code(), Some(2));
    assert_eq!(lines(&s), n);
}

#[test]
fn show_marks_edited_entries() {
    let s = session();
    s.w.ok(&[
        "session",
        "edit",
        &s.file,
        &s.ids[2],
        "--replace",
        "(log removed)",
    ]);
    s.w.ok(&["session", "edit", &s.file, &s.ids[3], "--omit"]);
    insta::assert_snapshot!(s.w.snap(&["session", "show", &s.file, "--no-pager"]), @r"
    status: 0
    ----- stdout -----
    [PROJ] · 2026-01-02 03:04:05 UTC · session 019b7ca9-8f2e-727e-8bef-3cafe4594b0f

    · system prompt: sections preamble; tools +read 2026-01-02 03:04:05 · bfc84610

    user 03:04:05 · 987bbcbf
      Show me the log.

    assistant claude-test 03:04:05 · c3f2827a (edited for the model)
      A very long log, line after line.
      1 in · 1 out

    user 03:04:05 · 4fc446b5 (left out of the model's context)
      Thanks.

    assistant claude-test 03:04:05 · 58bc3cb3
      You are welcome.
      1 in · 1 out

    · context edit: c3f2827a sent to the model as: (log removed) 03:04:05 · f14f2cf8

    · context edit: 4fc446b5 left out of the model's context 03:04:05 · 72e093d8

    total: 2 user messages · 2 assistant messages · 0 tool calls · 2 in · 2 out · $0
    models: anthropic/claude-test
    ----- stderr -----
    ");
    let md =
        s.w.ok(&["session", "show", &s.file, "--format", "md", "--no-pager"]);
    assert!(md.contains("(edited for the model)"), "{md}");
    assert!(md.contains("(left out of the model's context)"), "{md}");
}

#[test]
fn append_takes_system_messages_and_context_edits_and_checks_them() {
    let w = World::new();
    let f = w.new_session();
    let f = f.to_str().unwrap();
    let ok = w.ok_in(
        &["session", "append", f],
        &json!({"role": "system", "content": [{"type": "text", "text": "Prompt."}],
                "sections": {"a": "A", "b": null}, "toolsRemoved": [{"name": "write"}]})
        .to_string(),
    );
    let id = jsonl(&ok)[0]["id"].as_str().unwrap().to_owned();
    for (bad, says) in [
        (
            json!({"role": "system", "sections": {"a": 1}}).to_string(),
            "sections.a must be",
        ),
        (
            json!({"role": "system", "toolsAdded": [{"description": "x"}]}).to_string(),
            "toolsAdded[0].name is missing",
        ),
        (
            json!({"type": "context_edit", "targetId": id}).to_string(),
            "replacement is missing",
        ),
        (
            json!({"type": "context_edit", "targetId": id, "replacement": {"text": "x"}})
                .to_string(),
            "replacement.content is missing",
        ),
        (
            json!({"type": "usage", "kind": "cache_warm", "provider": "p", "model": "m"})
                .to_string(),
            "usage is missing",
        ),
    ] {
        let o = w
            .pi()
            .args(["session", "append", f])
            .write_stdin(bad.clone())
            .output()
            .unwrap();
        assert_eq!(o.status.code(), Some(2), "{bad}");
        let err = String::from_utf8_lossy(&o.stderr);
        assert!(err.contains(says), "{bad}: {err}");
    }
    let good = [
        json!({"type": "context_edit", "targetId": id, "replacement": null}).to_string(),
        json!({"type": "usage", "kind": "cache_warm", "provider": "p", "model": "m",
               "usage": {"input": 0, "output": 0, "cacheRead": 5, "cacheWrite": 0, "totalTokens": 5}}).to_string(),
    ];
    let out = jsonl(&w.ok_in(&["session", "append", f], &good.join("\n")));
    assert_eq!(out.len(), 2);
    // `check` exits 0 and reports no problem.
    assert_eq!(w.ok(&["session", "check", f, "--json"]).trim(), "");
}
