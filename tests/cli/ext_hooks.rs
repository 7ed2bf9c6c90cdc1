//! Hooks as programs (`hooks` in settings.json, `--hook EVENT=COMMAND`): shell scripts that
//! read the event as JSON on stdin and answer with a JSON object on stdout, for every event
//! of `pi run`, `pi compact` and `pi session branch`; failures (timeouts, garbage, a
//! non-zero status) are reported and decided by `onError`, and never corrupt the session.

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use crate::common::model_server::{ModelServer, Reply};
use crate::common::*;
use crate::run_support::*;

/// Writes an executable shell script.
pub fn script(w: &World, rel: &str, body: &str) -> PathBuf {
    let p = w.write(rel, format!("#!/bin/sh\n{body}\n"));
    std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o755)).unwrap();
    p
}

fn hook_arg(event: &str, p: &Path) -> String {
    format!("{event}={}", p.display())
}

fn errors(evs: &[Value]) -> Vec<&Value> {
    evs.iter()
        .filter(|e| e["type"] == "extension_error")
        .collect()
}

/// A guard that blocks `rm -rf` (the reason becomes the tool's error result) and lets other
/// commands through.
#[test]
fn tool_call_hook_blocks_rm_rf() {
    let server = ModelServer::start();
    let w = world(&server);
    w.write("proj/precious.txt", "keep me\n");
    let guard = script(
        &w,
        "hooks/guard.sh",
        r#"input=$(cat)
case "$input" in
  *'rm -rf'*) echo '{"block": true, "reason": "rm -rf is not allowed here"}' ;;
esac"#,
    );
    server.push(tool_calls(&[
        ("c1", "bash", r#"{"command":"rm -rf precious.txt"}"#),
        ("c2", "bash", r#"{"command":"echo still here"}"#),
    ]));
    server.push(Reply::openai_text(&["Understood."]));
    let o = run(
        &w,
        &[
            "--json",
            "--hook",
            &hook_arg("tool_call", &guard),
            "-p",
            "clean up",
        ],
    );
    status(&o, 0);
    assert!(
        w.path("proj/precious.txt").exists(),
        "the guard let rm -rf run"
    );
    let f = session_file(&w);
    let results = tool_results(&f);
    assert_eq!(results.len(), 2);
    assert_eq!(text(&results[0]), "rm -rf is not allowed here");
    assert_eq!(results[0]["isError"], true);
    assert_eq!(text(&results[1]), "still here\n");
    assert_eq!(results[1]["isError"], false);
    // The model saw the refusal.
    let second = server.requests()[1].text();
    assert!(second.contains("rm -rf is not allowed here"));
    check(&w, &f);
}

/// The hook's input names the event, the session and the call; a `tools` filter keeps the
/// hook to the calls of those tools; modified arguments are what runs.
#[test]
fn tool_call_hook_sees_the_call_and_may_change_its_arguments() {
    let server = ModelServer::start();
    let w = world(&server);
    let log = w.path("hook-input.jsonl");
    let rewrite = script(
        &w,
        "hooks/rewrite.sh",
        &format!(
            r#"input=$(cat)
printf '%s\n' "$input" >> {log}
echo "env:$PI_HOOK_EVENT:$PI_SESSION_FILE" >> {log}.env
echo '{{"input": {{"command": "echo rewritten"}}}}'"#,
            log = log.display()
        ),
    );
    w.write(
        "agent/settings.json",
        json!({"defaultProvider": "mock", "defaultModel": "m1",
               "retry": {"baseDelayMs": 10, "provider": {"maxRetries": 0}},
               "hooks": {"tool_call": [{"command": rewrite.to_str().unwrap(), "tools": ["bash"]}]}})
        .to_string(),
    );
    w.write("proj/a.txt", "alpha\n");
    server.push(tool_calls(&[
        ("c1", "bash", r#"{"command":"echo original"}"#),
        ("c2", "read", r#"{"path":"a.txt"}"#),
    ]));
    server.push(Reply::openai_text(&["ok"]));
    let o = run(&w, &["--json", "-p", "go"]);
    status(&o, 0);
    let f = session_file(&w);
    let results = tool_results(&f);
    assert_eq!(text(&results[0]), "rewritten\n");
    assert_eq!(text(&results[1]), "alpha\n");
    // Only the bash call reached the hook.
    let seen = jsonl(&std::fs::read_to_string(&log).unwrap());
    assert_eq!(seen.len(), 1);
    let e = &seen[0];
    assert_eq!(e["event"], "tool_call");
    assert_eq!(e["toolName"], "bash");
    assert_eq!(e["toolCallId"], "c1");
    assert_eq!(e["input"], json!({"command": "echo original"}));
    assert_eq!(e["cwd"], w.proj().to_str().unwrap());
    assert_eq!(e["sessionFile"], f.to_str().unwrap());
    let env = std::fs::read_to_string(format!("{}.env", log.display())).unwrap();
    assert_eq!(env.trim(), format!("env:tool_call:{}", f.display()));
    // The event stream carries the model's arguments, as upstream's does.
    let starts: Vec<Value> = events(&o)
        .into_iter()
        .filter(|e| e["type"] == "tool_execution_start" && e["toolCallId"] == "c1")
        .collect();
    assert_eq!(starts[0]["args"], json!({"command": "echo original"}));
}

/// A `context` hook adds a reminder to what the model is sent; the session file does not
/// get it.
#[test]
fn context_hook_injects_a_reminder() {
    let server = ModelServer::start();
    let w = world(&server);
    let remind = script(
        &w,
        "hooks/remind.sh",
        r#"input=$(cat)
msgs=${input#*\"messages\":}
msgs=${msgs%\}}
msgs=${msgs%]}
printf '{"messages":%s,{"role":"user","content":[{"type":"text","text":"REMINDER: run the tests before you finish"}],"timestamp":1}]}\n' "$msgs""#,
    );
    server.push(Reply::openai_text(&["Will do."]));
    let o = run(
        &w,
        &[
            "--json",
            "--hook",
            &hook_arg("context", &remind),
            "-p",
            "fix the bug",
        ],
    );
    status(&o, 0);
    assert!(errors(&events(&o)).is_empty(), "{}", err(&o));
    let sent = request_messages(&server.requests()[0]);
    let texts: Vec<String> = sent.iter().map(text).collect();
    assert!(texts.iter().any(|t| t == "fix the bug"), "{texts:?}");
    assert_eq!(
        texts.last().unwrap(),
        "REMINDER: run the tests before you finish"
    );
    let f = session_file(&w);
    let recorded = std::fs::read_to_string(&f).unwrap();
    assert!(!recorded.contains("REMINDER"));
    assert_eq!(roles(&messages(&f)), ["user", "assistant"]);
}

/// A hook that runs past its timeout is killed (with what it started) and reported; with
/// `onError: ignore` the call goes ahead, with the default (`block`) it is refused.
#[test]
fn hook_timeouts_are_reported_and_decided_by_on_error() {
    let server = ModelServer::start();
    let w = world(&server);
    settings(
        &w,
        json!({"hooks": {
            "tool_call": [{"command": "sleep 30", "timeout": 0.3, "onError": "ignore"}],
            "tool_result": {"command": "sleep 30; echo late", "timeout": 0.3}
        }}),
    );
    server.push(tool_calls(&[("c1", "bash", r#"{"command":"echo ran"}"#)]));
    server.push(Reply::openai_text(&["done"]));
    let t = Instant::now();
    let o = run(&w, &["--json", "-p", "go"]);
    status(&o, 0);
    assert!(
        t.elapsed() < Duration::from_secs(10),
        "the hooks were not stopped"
    );
    let evs = events(&o);
    let errs = errors(&evs);
    assert_eq!(errs.len(), 2, "{errs:?}");
    assert_eq!(errs[0]["event"], "tool_call");
    assert_eq!(errs[0]["extensionPath"], "sleep 30");
    assert_eq!(errs[0]["error"], "timed out after 0.3 s");
    assert_eq!(errs[1]["event"], "tool_result");
    assert!(err(&o).contains("hook `sleep 30` (tool_call) failed: timed out after 0.3 s"));
    let f = session_file(&w);
    assert_eq!(text(&tool_results(&f)[0]), "ran\n");

    // The same guard with the default onError blocks the call.
    let server = ModelServer::start();
    let w = world(&server);
    settings(
        &w,
        json!({"hooks": {"tool_call": [{"command": "sleep 30", "timeout": 0.3}]}}),
    );
    w.write("proj/keep.txt", "x");
    server.push(tool_calls(&[(
        "c1",
        "bash",
        r#"{"command":"rm keep.txt"}"#,
    )]));
    server.push(Reply::openai_text(&["ok"]));
    let o = run(&w, &["--json", "-p", "go"]);
    status(&o, 0);
    assert!(w.path("proj/keep.txt").exists());
    let r = &tool_results(&session_file(&w))[0];
    assert_eq!(r["isError"], true);
    assert_eq!(
        text(r),
        "Blocked: hook `sleep 30` (tool_call) failed: timed out after 0.3 s"
    );
}

/// A hook that prints garbage, or exits with a failure status, is reported; the run goes on
/// (onError ignore) and the session stays valid.
#[test]
fn garbage_and_failing_hooks_are_reported() {
    let server = ModelServer::start();
    let w = world(&server);
    let garbage = script(
        &w,
        "hooks/garbage.sh",
        "cat > /dev/null; echo 'this is not json'",
    );
    let array = script(&w, "hooks/array.sh", "cat > /dev/null; echo '[1, 2]'");
    let fails = script(
        &w,
        "hooks/fails.sh",
        "cat > /dev/null; echo oops >&2; exit 4",
    );
    server.push(Reply::openai_text(&["hello"]));
    let o = run(
        &w,
        &[
            "--json",
            "--hook",
            &hook_arg("input", &garbage),
            "--hook",
            &hook_arg("input", &array),
            "--hook",
            &hook_arg("agent_end", &fails),
            "-p",
            "hi",
        ],
    );
    status(&o, 0);
    let evs = events(&o);
    let errs = errors(&evs);
    assert_eq!(errs.len(), 3, "{errs:?}");
    assert!(
        errs[0]["error"]
            .as_str()
            .unwrap()
            .starts_with("it printed something that is not JSON"),
        "{}",
        errs[0]
    );
    assert!(
        errs[0]["error"]
            .as_str()
            .unwrap()
            .ends_with(": this is not json")
    );
    assert_eq!(
        errs[1]["error"],
        "it printed JSON that is not an object: [1, 2]"
    );
    assert_eq!(errs[2]["event"], "agent_end");
    assert_eq!(errs[2]["error"], "it ended with exit status 4");
    // Its stderr passes through.
    assert!(err(&o).contains("oops"));
    let f = session_file(&w);
    assert_eq!(roles(&messages(&f)), ["user", "assistant"]);
    check(&w, &f);
}

/// An `input` hook rewrites the prompt, or handles it (nothing is sent or recorded); a
/// failing `input` hook with `onError: block` refuses the prompt.
#[test]
fn input_hooks_transform_handle_or_refuse_prompts() {
    let server = ModelServer::start();
    let w = world(&server);
    let upper = script(
        &w,
        "hooks/upper.sh",
        r#"cat > /dev/null; echo '{"action": "transform", "text": "rewritten by the hook"}'"#,
    );
    server.push(Reply::openai_text(&["fine"]));
    let o = run(
        &w,
        &["--hook", &hook_arg("input", &upper), "-p", "original"],
    );
    status(&o, 0);
    let sent = request_messages(&server.requests()[0]);
    assert_eq!(text(sent.last().unwrap()), "rewritten by the hook");
    let f = session_file(&w);
    assert_eq!(text(&messages(&f)[0]), "rewritten by the hook");

    let server = ModelServer::start();
    let w = world(&server);
    let handled = script(
        &w,
        "hooks/handled.sh",
        r#"cat > /dev/null; echo '{"action":"handled"}'"#,
    );
    let o = run(
        &w,
        &[
            "--json",
            "--hook",
            &hook_arg("input", &handled),
            "-p",
            "/local thing",
        ],
    );
    status(&o, 0);
    assert!(server.requests().is_empty());
    assert!(messages(&session_file(&w)).is_empty());

    let server = ModelServer::start();
    let w = world(&server);
    settings(
        &w,
        json!({"hooks": {"input": {"command": "exit 9", "onError": "block"}}}),
    );
    let o = run(&w, &["-p", "hi"]);
    insta::assert_snapshot!(w.shown(&o), @"
    status: 1
    ----- stdout -----
    ----- stderr -----
    pi: warning: hook `exit 9` (input) failed: it ended with exit status 9
    pi: error: hook `exit 9` (input) failed: it ended with exit status 9
    ");
    assert!(server.requests().is_empty());
}

/// `before_agent_start` may append to the system prompt and add a message, recorded as a
/// `custom_message` entry and sent to the model.
#[test]
fn before_agent_start_changes_the_system_prompt_and_adds_messages() {
    let server = ModelServer::start();
    let w = world(&server);
    let log = w.path("bas.json");
    let hook = script(
        &w,
        "hooks/bas.sh",
        &format!(
            r#"cat > {}
echo '{{"appendSystemPrompt": "Always answer in French.", "message": {{"customType": "ticket", "content": "Ticket 42: the login page is slow", "display": false}}}}'"#,
            log.display()
        ),
    );
    server.push(Reply::openai_text(&["D'accord."]));
    let o = run(
        &w,
        &[
            "--hook",
            &hook_arg("before_agent_start", &hook),
            "-p",
            "look at the ticket",
        ],
    );
    status(&o, 0);
    let input: Value = serde_json::from_str(&std::fs::read_to_string(&log).unwrap()).unwrap();
    assert_eq!(input["event"], "before_agent_start");
    assert_eq!(input["prompt"], "look at the ticket");
    assert!(input["systemPrompt"].as_str().unwrap().len() > 100);
    let req = server.requests()[0].json();
    let system = req["messages"][0]["content"].as_str().unwrap().to_owned();
    assert!(system.ends_with("\n\nAlways answer in French."), "{system}");
    let sent: Vec<String> = request_messages(&server.requests()[0])
        .iter()
        .map(text)
        .collect();
    assert!(
        sent.contains(&"Ticket 42: the login page is slow".to_owned()),
        "{sent:?}"
    );
    let f = session_file(&w);
    let entries = lines(&f);
    let custom: Vec<&Value> = entries
        .iter()
        .filter(|e| e["type"] == "custom_message")
        .collect();
    assert_eq!(custom.len(), 1);
    assert_eq!(custom[0]["customType"], "ticket");
    assert_eq!(custom[0]["display"], false);
    check(&w, &f);
}

/// `tool_result` replaces a result field by field.
#[test]
fn tool_result_hook_modifies_the_result() {
    let server = ModelServer::start();
    let w = world(&server);
    let redact = script(
        &w,
        "hooks/redact.sh",
        r#"input=$(cat)
case "$input" in
  *SECRET*) echo '{"content": "[output withheld: it contained a secret]", "details": {"redacted": true}}' ;;
esac"#,
    );
    server.push(tool_calls(&[(
        "c1",
        "bash",
        r#"{"command":"echo SECRET=hunter2"}"#,
    )]));
    server.push(Reply::openai_text(&["ok"]));
    let o = run(
        &w,
        &[
            "--json",
            "--hook",
            &hook_arg("tool_result", &redact),
            "-p",
            "print env",
        ],
    );
    status(&o, 0);
    let r = &tool_results(&session_file(&w))[0];
    assert_eq!(text(r), "[output withheld: it contained a secret]");
    assert_eq!(r["details"], json!({"redacted": true}));
    assert_eq!(r["isError"], false);
    let sent = request_messages(&server.requests()[1]);
    let tool_msg = sent.iter().find(|m| m["role"] == "tool").unwrap();
    assert_eq!(text(tool_msg), "[output withheld: it contained a secret]");
    let end = events(&o)
        .into_iter()
        .find(|e| e["type"] == "tool_execution_end")
        .unwrap();
    assert_eq!(
        end["result"]["content"][0]["text"],
        "[output withheld: it contained a secret]"
    );
}

/// Notifications (`message_end`, `turn_end`, `agent_end`) are run in order with their
/// fields; a hook's `appendEntry` and `customMessage` are recorded.
#[test]
fn notifications_and_extension_state() {
    let server = ModelServer::start();
    let w = world(&server);
    let log = w.path("events.log");
    let note = script(
        &w,
        "hooks/note.sh",
        &format!(
            r#"input=$(cat)
echo "$PI_HOOK_EVENT" >> {log}
if [ "$PI_HOOK_EVENT" = agent_end ]; then
  echo '{{"appendEntry": {{"customType": "stats", "data": {{"runs": 1}}}}}}'
fi
if [ "$PI_HOOK_EVENT" = turn_end ]; then
  case "$input" in
    *toolResults\":\[\{{*) echo '{{"customMessage": {{"customType": "nudge", "content": "Tools ran; check their output."}}}}' ;;
  esac
fi"#,
            log = log.display()
        ),
    );
    server.push(tool_calls(&[("c1", "bash", r#"{"command":"echo hi"}"#)]));
    server.push(Reply::openai_text(&["done"]));
    let args: Vec<String> = ["message_end", "turn_end", "agent_end"]
        .iter()
        .flat_map(|e| ["--hook".to_owned(), hook_arg(e, &note)])
        .collect();
    let mut all: Vec<&str> = vec!["--json"];
    all.extend(args.iter().map(String::as_str));
    all.extend(["-p", "run it"]);
    let o = run(&w, &all);
    status(&o, 0);
    let seen = std::fs::read_to_string(&log).unwrap();
    let seen: Vec<&str> = seen.lines().collect();
    assert_eq!(
        seen,
        [
            "message_end", // system: the prompt and tools recorded
            "message_end", // user
            "message_end", // assistant with the call
            "message_end", // tool result
            "turn_end",
            "message_end", // final answer (custom messages are not passed to hooks)
            "turn_end",
            "agent_end"
        ]
    );
    let f = session_file(&w);
    let entries = lines(&f);
    let types: Vec<&str> = entries
        .iter()
        .map(|e| e["type"].as_str().unwrap())
        .collect();
    assert_eq!(
        types,
        [
            "session",
            "model_change",
            "thinking_level_change",
            "message",
            "message",
            "message",
            "message",
            "custom_message",
            "message",
            "custom"
        ]
    );
    assert_eq!(entries[7]["customType"], "nudge");
    assert_eq!(entries[9]["customType"], "stats");
    assert_eq!(entries[9]["data"], json!({"runs": 1}));
    // The nudge was sent with the second request.
    assert!(
        server.requests()[1]
            .text()
            .contains("Tools ran; check their output.")
    );
    check(&w, &f);
}

/// Hooks of the global and the project settings both run, global first; `--hook` runs last.
#[test]
fn settings_hooks_from_both_files_then_flags() {
    let server = ModelServer::start();
    let w = world(&server);
    let log = w.path("order.log");
    let say = |who: &str| format!("cat > /dev/null; echo {who} >> {}", log.display());
    settings(&w, json!({"hooks": {"agent_end": say("global")}}));
    w.write(
        "proj/.pi/settings.json",
        json!({"hooks": {"agent_end": [say("project")]}}).to_string(),
    );
    w.ok(&["trust"]);
    server.push(Reply::openai_text(&["hi"]));
    let o = run(
        &w,
        &["--hook", &format!("agent_end={}", say("flag")), "-p", "x"],
    );
    status(&o, 0);
    assert_eq!(
        std::fs::read_to_string(&log).unwrap(),
        "global\nproject\nflag\n"
    );
}

#[test]
fn bad_hook_flags_and_settings() {
    let server = ModelServer::start();
    let w = world(&server);
    let shown = w.snaps(&[
        &["run", "--hook", "nonsense=true", "-p", "x"],
        &["run", "--hook", "tool_call", "-p", "x"],
    ]);
    insta::assert_snapshot!(shown, @"
    $ pi run --hook 'nonsense=true' -p x
    status: 2
    ----- stdout -----
    ----- stderr -----
    pi: error: invalid --hook 'nonsense=true': unknown event 'nonsense' (events: input, before_agent_start, context, tool_call, tool_result, message_end, turn_end, agent_end, session_before_compact, session_before_tree, session_before_switch, session_before_fork)

    $ pi run --hook tool_call -p x
    status: 2
    ----- stdout -----
    ----- stderr -----
    pi: error: invalid --hook 'tool_call': expected EVENT=COMMAND
    ");
    assert!(server.requests().is_empty());
    // A bad entry in settings is a warning; the rest runs.
    settings(
        &w,
        json!({"hooks": {"tool_cal": "true", "agent_end": {"onError": "block"}}}),
    );
    server.push(Reply::openai_text(&["hi"]));
    let o = run(&w, &["-p", "x"]);
    insta::assert_snapshot!(w.shown(&o), @r#"
    status: 0
    ----- stdout -----
    hi
    ----- stderr -----
    pi: warning: [AGENT]/settings.json: unknown hook event "tool_cal" ignored (events: input, before_agent_start, context, tool_call, tool_result, message_end, turn_end, agent_end, session_before_compact, session_before_tree, session_before_switch, session_before_fork)
    pi: warning: [AGENT]/settings.json: hooks.agent_end: a hook needs a "command" (a string); ignored
    "#);
}

fn compactable(w: &World) -> PathBuf {
    let f = w.new_session();
    let mut stdin = String::new();
    for k in 0..6 {
        stdin.push_str(&user(&format!("question {k} {}", "x".repeat(400))));
        stdin.push('\n');
        stdin.push_str(&assistant(&format!("answer {k} {}", "y".repeat(400))));
        stdin.push('\n');
    }
    w.ok_in(&["session", "append", f.to_str().unwrap()], &stdin);
    f
}

/// `pi compact` runs `session_before_compact` hooks: one may supply the summary (no model
/// is asked; the entry is `fromHook`), or cancel (nothing written, exit 1).
#[test]
fn compact_hooks_supply_or_cancel() {
    let server = ModelServer::start();
    let w = world(&server);
    let f = compactable(&w);
    let log = w.path("plan.json");
    let hook = script(
        &w,
        "hooks/summary.sh",
        &format!(
            r#"cat > {}
echo '{{"summary": "The user asked six questions; all were answered.", "appendEntry": {{"customType": "audit", "data": "compacted by hook"}}}}'"#,
            log.display()
        ),
    );
    let o = w
        .pi()
        .args([
            "compact",
            f.to_str().unwrap(),
            "--keep-recent-tokens",
            "200",
        ])
        .arg("--hook")
        .arg(hook_arg("session_before_compact", &hook))
        .output()
        .unwrap();
    status(&o, 0);
    assert!(server.requests().is_empty(), "a model was asked");
    let entry: Value = serde_json::from_str(out(&o).trim()).unwrap();
    assert_eq!(entry["type"], "compaction");
    assert_eq!(
        entry["summary"],
        "The user asked six questions; all were answered."
    );
    assert_eq!(entry["fromHook"], true);
    let plan: Value = serde_json::from_str(&std::fs::read_to_string(&log).unwrap()).unwrap();
    assert_eq!(plan["event"], "session_before_compact");
    assert_eq!(plan["reason"], "manual");
    assert_eq!(
        plan["preparation"]["firstKeptEntryId"],
        entry["firstKeptEntryId"]
    );
    assert!(
        !plan["preparation"]["messagesToSummarize"]
            .as_array()
            .unwrap()
            .is_empty()
    );
    let last = lines(&f).pop().unwrap();
    assert_eq!(last["type"], "custom");
    assert_eq!(last["customType"], "audit");
    assert_eq!(last["parentId"], entry["id"]);
    check(&w, &f);

    let f = compactable(&w);
    let before = std::fs::read(&f).unwrap();
    let o = w
        .pi()
        .args([
            "compact",
            f.to_str().unwrap(),
            "--keep-recent-tokens",
            "200",
        ])
        .args([
            "--hook",
            "session_before_compact=cat >/dev/null; echo '{\"cancel\":true}'",
        ])
        .output()
        .unwrap();
    status(&o, 1);
    let rec: Value = serde_json::from_str(out(&o).trim()).unwrap();
    assert_eq!(rec["compacted"], false);
    assert_eq!(rec["reason"], "cancelled");
    assert_eq!(std::fs::read(&f).unwrap(), before);
    let o = w
        .pi()
        .args(["compact", f.to_str().unwrap(), "--hook", "tool_call=true"])
        .output()
        .unwrap();
    status(&o, 2);
    assert!(err(&o).contains("runs only session_before_compact hooks"));
}

/// `pi session branch` runs `session_before_tree` hooks: cancel (nothing written, exit 1)
/// or a summary (a `branch_summary` from the hook).
#[test]
fn branch_hooks_cancel_or_summarize() {
    let w = World::new();
    let f = w.new_session();
    let out1 = w.ok_in(
        &["session", "append", f.to_str().unwrap()],
        &format!("{}\n{}\n{}\n", user("one"), assistant("two"), user("three")),
    );
    let first = jsonl(&out1)[0]["id"].as_str().unwrap().to_owned();
    let before = std::fs::read(&f).unwrap();
    let o = w
        .pi()
        .args(["session", "branch", f.to_str().unwrap(), &first])
        .args([
            "--hook",
            "session_before_tree=cat >/dev/null; echo '{\"cancel\": true}'",
        ])
        .output()
        .unwrap();
    status(&o, 1);
    assert!(err(&o).contains("cancelled by a session_before_tree hook"));
    assert_eq!(std::fs::read(&f).unwrap(), before);

    let log = w.path("tree.json");
    let hook = script(
        &w,
        "hooks/tree.sh",
        &format!(
            r#"cat > {}
echo '{{"summary": {{"summary": "Tried two and three; abandoned.", "details": {{"by": "hook"}}}}}}'"#,
            log.display()
        ),
    );
    let o = w
        .pi()
        .args(["session", "branch", f.to_str().unwrap(), &first])
        .arg("--hook")
        .arg(hook_arg("session_before_tree", &hook))
        .output()
        .unwrap();
    status(&o, 0);
    let e: Value = serde_json::from_str(out(&o).trim()).unwrap();
    assert_eq!(e["type"], "branch_summary");
    assert_eq!(e["parentId"], first.as_str());
    assert_eq!(e["summary"], "Tried two and three; abandoned.");
    assert_eq!(e["details"], json!({"by": "hook"}));
    assert_eq!(e["fromHook"], true);
    let input: Value = serde_json::from_str(&std::fs::read_to_string(&log).unwrap()).unwrap();
    let p = &input["preparation"];
    assert_eq!(p["targetId"], first.as_str());
    assert_eq!(p["commonAncestorId"], first.as_str());
    assert_eq!(p["userWantsSummary"], false);
    let left: Vec<&str> = p["entriesToSummarize"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["message"]["role"].as_str().unwrap())
        .collect();
    assert_eq!(left, ["assistant", "user"]);
    check(&w, &f);
}

/// A failing hook never corrupts the session: a hook that writes garbage to the session
/// file's neighbourhood, exits non-zero mid-run, and a run that continues afterwards.
#[test]
fn failing_hooks_leave_a_valid_resumable_session() {
    let server = ModelServer::start();
    let w = world(&server);
    settings(
        &w,
        json!({"hooks": {
            "message_end": "cat >/dev/null; echo '{\"appendEntry\": {\"data\": 1}}'",
            "turn_end": "cat >/dev/null; printf '{\"customMessage\": '"
        }}),
    );
    server.push(Reply::openai_text(&["first"]));
    server.push(Reply::openai_text(&["second"]));
    let o = run(&w, &["--json", "-p", "one"]);
    status(&o, 0);
    let evs = events(&o);
    assert!(errors(&evs).len() >= 2);
    let f = session_file(&w);
    check(&w, &f);
    let o = run(&w, &[f.to_str().unwrap(), "-p", "two"]);
    status(&o, 0);
    check(&w, &f);
    assert_eq!(
        roles(&messages(&f)),
        ["user", "assistant", "user", "assistant"]
    );
}

/// The README's example hook, taken from the README itself, stops `rm -rf` in a real run.
#[test]
fn readme_example_hook_works_in_a_run() {
    let readme =
        std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("README.md")).unwrap();
    let start = readme
        .find("cat > .pi/hooks/no-rm-rf <<'EOF'\n")
        .expect("the README's example hook");
    let body: Vec<&str> = readme[start..]
        .lines()
        .skip(1)
        .map(|l| l.strip_prefix("> ").unwrap_or(l))
        .take_while(|l| *l != "EOF" && *l != "> EOF")
        .collect();
    assert!(body[0].starts_with("#!/bin/sh"), "{body:?}");
    let server = ModelServer::start();
    let w = world(&server);
    let hook = w.write("proj/.pi/hooks/no-rm-rf", body.join("\n") + "\n");
    std::fs::set_permissions(&hook, std::fs::Permissions::from_mode(0o755)).unwrap();
    w.write(
        "proj/.pi/settings.json",
        r#"{"hooks": {"tool_call": {"command": ".pi/hooks/no-rm-rf", "tools": ["bash"]}}}"#,
    );
    w.write("proj/src/main.rs", "fn main() {}\n");
    w.ok(&["trust"]);
    server.push(tool_calls(&[
        ("c1", "bash", r#"{"command":"rm -rf src"}"#),
        ("c2", "bash", r#"{"command":"ls src"}"#),
    ]));
    server.push(Reply::openai_text(&["I will delete files one by one."]));
    let o = run(&w, &["-p", "remove the sources"]);
    status(&o, 0);
    assert!(w.path("proj/src/main.rs").exists());
    let rs = tool_results(&session_file(&w));
    assert_eq!(
        text(&rs[0]),
        "rm -rf is not allowed here; delete files one by one"
    );
    assert_eq!(rs[0]["isError"], true);
    assert_eq!(text(&rs[1]), "main.rs\n");
}

/// Answers are taken whole or not at all, `block` counts when truthy, and an unknown field
/// is a failure (a guard's typo blocks, by the guard's default `onError`).
#[test]
fn answers_are_checked_whole() {
    let server = ModelServer::start();
    let w = world(&server);
    w.write("proj/keep.txt", "x");
    settings(
        &w,
        json!({"hooks": {
            "before_agent_start": "cat >/dev/null; echo '{\"systemPrompt\": \"REPLACED\", \"appendSystemPrompt\": 5}'",
            "tool_call": [
                {"command": "input=$(cat); case \"$input\" in *c1*) echo '{\"block\": \"yes\"}';; esac"},
                {"command": "input=$(cat); case \"$input\" in *c2*) echo '{\"Block\": true}';; esac"}
            ],
            "turn_end": "cat >/dev/null; echo '{\"appendEntry\": {\"customType\": \"kept?\"}, \"customMessage\": {\"customType\": \"bad\", \"content\": [1, {\"type\": \"bogus\"}]}}'"
        }}),
    );
    server.push(tool_calls(&[
        ("c1", "bash", r#"{"command":"rm keep.txt"}"#),
        ("c2", "bash", r#"{"command":"rm keep.txt"}"#),
    ]));
    server.push(Reply::openai_text(&["ok"]));
    let o = run(&w, &["--json", "-p", "go"]);
    status(&o, 0);
    assert!(w.path("proj/keep.txt").exists());
    // The failed answer of before_agent_start changed nothing.
    let system = server.requests()[0].json()["messages"][0]["content"]
        .as_str()
        .unwrap()
        .to_owned();
    assert_ne!(system, "REPLACED");
    let rs = tool_results(&session_file(&w));
    assert_eq!(text(&rs[0]), "Tool execution was blocked");
    assert!(
        text(&rs[1]).contains("unknown field \"Block\""),
        "{}",
        text(&rs[1])
    );
    let evs = events(&o);
    let errs: Vec<String> = errors(&evs)
        .iter()
        .map(|e| format!("{}: {}", e["event"], e["error"]))
        .collect();
    assert!(
        errs.iter()
            .any(|e| e.contains("before_agent_start") && e.contains("appendSystemPrompt")),
        "{errs:?}"
    );
    assert!(
        errs.iter()
            .any(|e| e.contains("turn_end") && e.contains("content")),
        "{errs:?}"
    );
    // Neither the entry nor the bad message of the failed turn_end answer was recorded.
    let f = session_file(&w);
    let types: Vec<String> = lines(&f)
        .iter()
        .map(|e| e["type"].as_str().unwrap().to_owned())
        .collect();
    assert!(
        !types.iter().any(|t| t == "custom" || t == "custom_message"),
        "{types:?}"
    );
    check(&w, &f);
}

/// Output is read until the hook (or program tool) exits: a background process it leaves
/// with the pipe open is not waited for.
#[test]
fn background_children_are_not_waited_for() {
    let server = ModelServer::start();
    let w = world(&server);
    settings(
        &w,
        // The background job keeps the hook's stdout (pi's pipe) open; its stderr would be
        // the test's own pipe, so it goes elsewhere.
        json!({"hooks": {"tool_call": "cat >/dev/null; (sleep 5; echo late) 2>/dev/null & echo '{}'"}}),
    );
    let tool = script(
        &w,
        "tools/bg",
        r#"if [ "$1" = --describe ]; then echo '{"name":"bg","description":"Starts a background job"}'; exit 0; fi
cat >/dev/null; (sleep 5) 2>/dev/null & echo started"#,
    );
    server.push(tool_calls(&[("c1", "bg", "{}")]));
    server.push(Reply::openai_text(&["ok"]));
    let t = Instant::now();
    let o = run(
        &w,
        &["--json", "--tool", tool.to_str().unwrap(), "-p", "go"],
    );
    status(&o, 0);
    assert!(t.elapsed() < Duration::from_secs(4), "{:?}", t.elapsed());
    assert!(errors(&events(&o)).is_empty(), "{}", err(&o));
    assert_eq!(text(&tool_results(&session_file(&w))[0]), "started\n");
}
