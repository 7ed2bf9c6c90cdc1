//! Tool calls in `pi run`: calls of one answer run at the same time, each reports its end
//! when it finishes, and the results are emitted and recorded in call order (0.73); unknown
//! tools and invalid arguments end at once; bash timeouts and truncation; multi-edit; the
//! tools work in the session's directory; --max-turns and continuing without a prompt.

use serde_json::json;

use crate::common::model_server::{ModelServer, Reply};
use crate::run_support::*;

#[test]
fn parallel_calls_finish_out_of_order_and_are_recorded_in_call_order() {
    let server = ModelServer::start();
    let w = world(&server);
    w.write("proj/b.txt", "bee\n");
    server.push(tool_calls(&[
        ("slow", "bash", r#"{"command":"sleep 0.6; echo slow done"}"#),
        ("fast", "read", r#"{"path":"b.txt"}"#),
        ("mid", "bash", r#"{"command":"sleep 0.2; echo mid done"}"#),
    ]));
    server.push(Reply::openai_text(&["All three ran."]));
    let started = std::time::Instant::now();
    let o = run(&w, &["--json", "-p", "run them"]);
    status(&o, 0);
    // At the same time: well under the sum of the sleeps.
    assert!(started.elapsed() < std::time::Duration::from_millis(2500));
    let evs = events(&o);
    let tool_events: Vec<String> = evs
        .iter()
        .filter_map(|e| {
            let t = e["type"].as_str()?;
            let id = e["toolCallId"]
                .as_str()
                .or_else(|| e["message"]["toolCallId"].as_str())?;
            match t {
                "tool_execution_start" => Some(format!("start {id}")),
                "tool_execution_end" => Some(format!("end {id}")),
                "message_end" => Some(format!("result {id}")),
                _ => None,
            }
        })
        .collect();
    assert_eq!(
        tool_events,
        [
            "start slow",
            "start fast",
            "start mid",
            "end fast",
            "end mid",
            "end slow",
            "result slow",
            "result fast",
            "result mid"
        ]
    );
    let f = session_file(&w);
    let results = tool_results(&f);
    let ids: Vec<&str> = results
        .iter()
        .map(|r| r["toolCallId"].as_str().unwrap())
        .collect();
    assert_eq!(ids, ["slow", "fast", "mid"]);
    assert_eq!(text(&results[0]), "slow done\n");
    assert_eq!(text(&results[1]), "bee\n");
    // bash progress reached the stream as updates.
    assert!(evs.iter().any(|e| e["type"] == "tool_execution_update"
        && e["toolCallId"] == "slow"
        && e["args"]["command"] == "sleep 0.6; echo slow done"));
    // The next request has the three results in call order after the assistant turn.
    let msgs = request_messages(&server.requests()[1]);
    let tool_ids: Vec<&str> = msgs
        .iter()
        .filter(|m| m["role"] == "tool")
        .map(|m| m["tool_call_id"].as_str().unwrap())
        .collect();
    assert_eq!(tool_ids, ["slow", "fast", "mid"]);
    check(&w, &f);
}

#[test]
fn unknown_tools_and_invalid_arguments_end_at_once_in_call_order() {
    let server = ModelServer::start();
    let w = world(&server);
    server.push(tool_calls(&[
        ("a", "bash", r#"{"command":"sleep 0.3; echo A"}"#),
        ("b", "fly", r#"{"to":"moon"}"#),
        ("c", "read", r#"{"offset":"x"}"#),
        ("d", "grep", r#"{"pattern":"x"}"#),
    ]));
    server.push(Reply::openai_text(&["I see."]));
    let o = run(&w, &["--json", "-p", "go"]);
    status(&o, 0);
    let evs = events(&o);
    let seq: Vec<String> = evs
        .iter()
        .filter(|e| {
            e["type"] == "tool_execution_start"
                || e["type"] == "tool_execution_end"
                || (e["type"] == "message_end" && e["message"]["role"] == "toolResult")
        })
        .map(|e| {
            let id = e["toolCallId"]
                .as_str()
                .or_else(|| e["message"]["toolCallId"].as_str())
                .unwrap();
            format!("{} {id}", e["type"].as_str().unwrap())
        })
        .collect();
    assert_eq!(
        seq,
        [
            "tool_execution_start a",
            "tool_execution_start b",
            "tool_execution_end b",
            "tool_execution_start c",
            "tool_execution_end c",
            "tool_execution_start d",
            "tool_execution_end d",
            "tool_execution_end a",
            "message_end a",
            "message_end b",
            "message_end c",
            "message_end d",
        ]
    );
    let f = session_file(&w);
    let r = tool_results(&f);
    assert_eq!(r[0]["isError"], false);
    assert_eq!(text(&r[1]), "Tool fly not found");
    assert_eq!(r[1]["isError"], true);
    assert_eq!(r[1]["details"], json!({}));
    // grep is not active by default.
    assert_eq!(text(&r[3]), "Tool grep not found");
    let invalid = text(&r[2]);
    assert!(
        invalid.starts_with("Validation failed for tool \"read\":\n"),
        "{invalid}"
    );
    assert!(invalid.contains("path"), "{invalid}");
    assert!(
        invalid.ends_with("Received arguments:\n{\n  \"offset\": \"x\"\n}"),
        "{invalid}"
    );
    check(&w, &f);
}

#[test]
fn bash_timeout_and_truncated_output() {
    let server = ModelServer::start();
    let w = world(&server);
    server.push(tool_calls(&[
        (
            "t",
            "bash",
            r#"{"command":"echo started; sleep 5","timeout":1}"#,
        ),
        ("big", "bash", r#"{"command":"seq 1 3000"}"#),
        ("fail", "bash", r#"{"command":"echo oops; exit 3"}"#),
    ]));
    server.push(Reply::openai_text(&["Done."]));
    let started = std::time::Instant::now();
    let o = run(&w, &["-p", "run"]);
    status(&o, 0);
    assert!(started.elapsed() < std::time::Duration::from_secs(4));
    let f = session_file(&w);
    let r = tool_results(&f);
    assert_eq!(
        text(&r[0]),
        "started\n\n\nCommand timed out after 1 seconds"
    );
    assert_eq!(r[0]["isError"], true);
    let big = text(&r[1]);
    assert!(big.starts_with("1002\n1003\n"), "{}", &big[..40]);
    let notice = big.lines().last().unwrap();
    assert!(
        notice.starts_with("[Showing lines 1002-3001 of 3001. Full output: "),
        "{notice}"
    );
    let full = r[1]["details"]["fullOutputPath"].as_str().unwrap();
    assert!(notice.ends_with(&format!("{full}]")));
    let saved = std::fs::read_to_string(full).unwrap();
    assert_eq!(saved.lines().count(), 3000);
    let _ = std::fs::remove_file(full);
    assert_eq!(r[1]["details"]["truncation"]["truncatedBy"], "lines");
    assert_eq!(text(&r[2]), "oops\n\n\nCommand exited with code 3");
    assert_eq!(r[2]["isError"], true);
}

#[test]
fn edits_with_several_replacements_and_a_failing_match() {
    let server = ModelServer::start();
    let w = world(&server);
    w.write("proj/src/lib.rs", "fn a() {}\nfn b() {}\nfn c() {}\n");
    server.push(tool_calls(&[
        (
            "e1",
            "edit",
            r#"{"path":"src/lib.rs","edits":[{"oldText":"fn a()","newText":"fn alpha()"},{"oldText":"fn c()","newText":"fn gamma()"}]}"#,
        ),
        (
            "e2",
            "edit",
            r#"{"path":"src/lib.rs","edits":[{"oldText":"fn zzz()","newText":"x"}]}"#,
        ),
        (
            "w",
            "write",
            r#"{"path":"notes/new.md","content":"fresh\n"}"#,
        ),
    ]));
    server.push(Reply::openai_text(&["Edited."]));
    let o = run(&w, &["-p", "edit"]);
    status(&o, 0);
    assert_eq!(
        std::fs::read_to_string(w.path("proj/src/lib.rs")).unwrap(),
        "fn alpha() {}\nfn b() {}\nfn gamma() {}\n"
    );
    assert_eq!(
        std::fs::read_to_string(w.path("proj/notes/new.md")).unwrap(),
        "fresh\n"
    );
    let f = session_file(&w);
    let r = tool_results(&f);
    assert_eq!(
        text(&r[0]),
        "Successfully replaced 2 block(s) in src/lib.rs."
    );
    assert_eq!(r[0]["details"]["firstChangedLine"], 1);
    assert!(
        r[0]["details"]["diff"]
            .as_str()
            .unwrap()
            .contains("+1 fn alpha() {}")
    );
    assert_eq!(
        text(&r[1]),
        "Could not find the exact text in src/lib.rs. The old text must match exactly including all whitespace and newlines."
    );
    assert_eq!(r[1]["isError"], true);
    assert_eq!(text(&r[2]), "Successfully wrote 6 bytes to notes/new.md");
}

#[test]
fn tools_work_in_the_sessions_directory() {
    let server = ModelServer::start();
    let w = world(&server);
    let other = w.path("other");
    std::fs::create_dir_all(&other).unwrap();
    std::fs::write(other.join("here.txt"), "from the session's directory\n").unwrap();
    let f = std::path::PathBuf::from(
        w.ok(&["session", "new", "--cwd", other.to_str().unwrap()])
            .trim(),
    );
    server.push(tool_calls(&[
        ("r", "read", r#"{"path":"here.txt"}"#),
        ("p", "bash", r#"{"command":"pwd"}"#),
    ]));
    server.push(Reply::openai_text(&["ok"]));
    status(&run(&w, &[f.to_str().unwrap(), "-p", "look"]), 0);
    let r = tool_results(&f);
    assert_eq!(text(&r[0]), "from the session's directory\n");
    assert_eq!(
        text(&r[1]).trim(),
        std::fs::canonicalize(&other).unwrap().to_str().unwrap()
    );
    let sp = server.requests()[0].json()["messages"][0]["content"]
        .as_str()
        .unwrap()
        .to_owned();
    assert!(sp.contains(other.to_str().unwrap()), "{sp}");
}

#[test]
fn max_turns_stops_and_a_run_without_prompt_continues() {
    let server = ModelServer::start();
    let w = world(&server);
    server.push(tool_calls(&[("l1", "bash", r#"{"command":"echo one"}"#)]));
    let o = run(
        &w,
        &[
            "--max-turns",
            "1",
            "--tool-choice",
            "required",
            "-p",
            "step",
        ],
    );
    insta::assert_snapshot!(w.shown(&o), @"
    status: 0
    ----- stdout -----
    ----- stderr -----
    pi: stopped after 1 turns (--max-turns)
    ");
    assert_eq!(server.requests().len(), 1);
    assert_eq!(server.requests()[0].json()["tool_choice"], "required");
    let f = session_file(&w);
    assert_eq!(roles(&messages(&f)), ["user", "assistant", "toolResult"]);
    // No prompt: the run continues from the tool result.
    server.push(Reply::openai_text(&["Finished."]));
    let o = run(&w, &[f.to_str().unwrap()]);
    insta::assert_snapshot!(w.shown(&o), @"
    status: 0
    ----- stdout -----
    Finished.
    ----- stderr -----
    ");
    let msgs = request_messages(&server.requests()[1]);
    assert_eq!(msgs.last().unwrap()["role"], "tool");
    assert_eq!(
        roles(&messages(&f)),
        ["user", "assistant", "toolResult", "assistant"]
    );
    // Now the path ends in an answer: a prompt is needed.
    let o = run(&w, &[f.to_str().unwrap()]);
    status(&o, 2);
    check(&w, &f);
}
