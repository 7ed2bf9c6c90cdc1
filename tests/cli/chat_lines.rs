//! `pi chat` without a terminal: one message per line (or per NUL with -0), plain text out
//! (no escape codes), the slash commands doing what their subcommands do on the session
//! file, which `pi session check` then finds consistent.

use std::path::PathBuf;

use serde_json::{Value, json};

use crate::common::model_server::{ModelServer, Reply};
use crate::common::*;
use crate::run_support::*;

/// `pi chat ARGS` with `input` on stdin.
pub fn chat(w: &World, args: &[&str], input: &str) -> std::process::Output {
    w.pi()
        .arg("chat")
        .args(args)
        .write_stdin(input)
        .output()
        .unwrap()
}

fn no_escapes(o: &std::process::Output) {
    assert!(
        !o.stdout.contains(&0x1b),
        "escape codes in a pipe: {}",
        out(o)
    );
}

#[test]
fn two_messages_two_turns_recorded_as_pi_run_records_them() {
    let server = ModelServer::start();
    let w = world(&server);
    server.push(Reply::openai_text(&["Hel", "lo", "."]));
    server.push(Reply::openai_text(&["Fine", ", thanks."]));
    let o = chat(&w, &[], "hi\nhow are you?\n");
    status(&o, 0);
    no_escapes(&o);
    assert_eq!(out(&o), "Hello.\nFine, thanks.\n");
    let f = session_file(&w);
    check(&w, &f);
    let ms = messages(&f);
    assert_eq!(roles(&ms), ["user", "assistant", "user", "assistant"]);
    assert_eq!(text(&ms[2]), "how are you?");
    // The second request carries the first turn.
    let r = &server.requests()[1];
    let sent = request_messages(r);
    assert_eq!(text(&sent[sent.len() - 1]), "how are you?");
    assert_eq!(text(&sent[sent.len() - 2]), "Hello.");
}

#[test]
fn the_file_equals_what_pi_run_writes_for_the_same_turns() {
    let server = ModelServer::start();
    let a = world(&server);
    server.push(Reply::openai_text(&["One."]));
    server.push(Reply::openai_text(&["Two."]));
    status(&chat(&a, &[], "first\nsecond\n"), 0);
    let b = world(&server);
    server.push(Reply::openai_text(&["One."]));
    server.push(Reply::openai_text(&["Two."]));
    status(&run(&b, &["-p", "first"]), 0);
    status(&run(&b, &["-c", "-p", "second"]), 0);
    let shape = |w: &World| -> Vec<Value> {
        lines(&session_file(w))
            .into_iter()
            .map(|mut e| {
                for k in ["id", "parentId", "timestamp", "cwd"] {
                    if let Some(o) = e.as_object_mut() {
                        o.remove(k);
                    }
                }
                if let Some(m) = e.get_mut("message").and_then(Value::as_object_mut) {
                    m.remove("timestamp");
                    m.remove("responseId");
                    // The project directories of the two worlds differ.
                    if let Some(s) = m.get_mut("sections").and_then(Value::as_object_mut) {
                        s.remove("cwd");
                    }
                }
                e
            })
            .collect()
    };
    assert_eq!(shape(&a), shape(&b));
}

#[test]
fn nul_separated_messages_keep_their_newlines() {
    let server = ModelServer::start();
    let w = world(&server);
    server.push(Reply::openai_text(&["A"]));
    server.push(Reply::openai_text(&["B"]));
    let o = chat(&w, &["-0"], "line one\nline two\0second\0");
    status(&o, 0);
    let ms = messages(&session_file(&w));
    assert_eq!(text(&ms[0]), "line one\nline two");
    assert_eq!(text(&ms[2]), "second");
}

#[test]
fn a_tool_call_is_one_line_with_its_result_summarised_and_show_prints_it_all() {
    let server = ModelServer::start();
    let w = world(&server);
    server.push(tool_calls(&[(
        "call_1",
        "bash",
        r#"{"command":"printf 'a\\nb\\nc\\n'"}"#,
    )]));
    server.push(Reply::openai_text(&["Done."]));
    let o = chat(&w, &[], "list\n/show\n");
    status(&o, 0);
    no_escapes(&o);
    insta::assert_snapshot!(out(&o), @"
    → bash printf 'a\\nb\\nc\\n'
      ✓ exit 0 · a (+2 lines) (/show 1)
    Done.
    → bash printf 'a\\nb\\nc\\n'
    a
    b
    c
    ");
    check(&w, &session_file(&w));
}

#[test]
fn an_unknown_command_says_so_suggests_and_sends_nothing() {
    let server = ModelServer::start();
    let w = world(&server);
    w.write("proj/.pi/prompts/review.md", "Review $1 carefully");
    let o = chat(&w, &[], "/tre\n/reviw x\n/nosuchthing\n");
    status(&o, 0);
    let text = out(&o);
    assert!(
        text.contains("unknown command /tre; did you mean /tree?"),
        "{text}"
    );
    assert!(
        text.contains("unknown command /reviw; did you mean /review?"),
        "{text}"
    );
    assert!(
        text.contains("unknown command /nosuchthing; /help lists"),
        "{text}"
    );
    assert!(server.requests().is_empty());
}

#[test]
fn templates_and_skills_expand_as_pi_prompt_expand_does() {
    let server = ModelServer::start();
    let w = world(&server);
    w.write("proj/.pi/prompts/review.md", "Review $1 carefully");
    server.push(Reply::openai_text(&["ok"]));
    let o = chat(&w, &[], "/review main.rs\n");
    status(&o, 0);
    let expanded = w.ok(&["prompt", "expand", "/review main.rs"]);
    let ms = messages(&session_file(&w));
    assert_eq!(text(&ms[0]), expanded.trim_end());
    assert_eq!(text(&ms[0]), "Review main.rs carefully");
}

fn entry_ids(f: &std::path::Path) -> Vec<(String, String)> {
    lines(f)
        .into_iter()
        .skip(1)
        .map(|e| {
            (
                e["id"].as_str().unwrap_or("").to_owned(),
                e["type"].as_str().unwrap_or("").to_owned(),
            )
        })
        .collect()
}

#[test]
fn name_label_model_thinking_and_session_write_what_their_subcommands_write() {
    let server = ModelServer::start();
    let w = world(&server);
    server.push(Reply::openai_text(&["Hi."]));
    let o = chat(
        &w,
        &[],
        "hello\n/name my chat\n/model small\n/thinking high\n/session\n",
    );
    status(&o, 0);
    no_escapes(&o);
    let text = out(&o);
    assert!(text.contains("named: my chat"), "{text}");
    assert!(text.contains("model: mock/small"), "{text}");
    assert!(
        text.contains("(1 user, 1 assistant, 0 tool results; 0 tool calls)"),
        "{text}"
    );
    let f = session_file(&w);
    check(&w, &f);
    let ls = lines(&f);
    let info = ls.iter().find(|e| e["type"] == "session_info").unwrap();
    assert_eq!(info["name"], "my chat");
    let changes: Vec<&Value> = ls.iter().filter(|e| e["type"] == "model_change").collect();
    assert_eq!(changes.last().unwrap()["modelId"], "small");
    // `pi session list` shows the name, as after `pi session name`.
    assert!(w.ok(&["session", "list", "--json"]).contains("my chat"));
    // /label, then the entry carries it in `pi session tree`.
    let first_user = ls
        .iter()
        .find(|e| e["type"] == "message" && e["message"]["role"] == "user")
        .unwrap()["id"]
        .as_str()
        .unwrap()
        .to_owned();
    let o = chat(&w, &["-c"], &format!("/label {first_user} start\n/tree\n"));
    status(&o, 0);
    assert!(out(&o).contains("[start] user: hello"), "{}", out(&o));
    check(&w, &f);
    let label = lines(&f)
        .into_iter()
        .find(|e| e["type"] == "label")
        .unwrap();
    assert_eq!(label["targetId"], first_user.as_str());
    assert_eq!(label["label"], "start");
}

#[test]
fn tree_marks_the_leaf_and_branch_moves_it_as_pi_session_branch_does() {
    let server = ModelServer::start();
    let w = world(&server);
    server.push(Reply::openai_text(&["A1"]));
    server.push(Reply::openai_text(&["A2"]));
    status(&chat(&w, &[], "q1\nq2\n"), 0);
    let f = session_file(&w);
    let ids = entry_ids(&f);
    let first_answer = lines(&f)
        .into_iter()
        .find(|e| e["message"]["role"] == "assistant")
        .unwrap()["id"]
        .as_str()
        .unwrap()
        .to_owned();
    server.push(Reply::openai_text(&["B2"]));
    let o = chat(
        &w,
        &["-c"],
        &format!("/branch {first_answer}\nother q2\n/tree\n"),
    );
    status(&o, 0);
    let text = out(&o);
    assert!(
        text.contains(&format!("continuing from {first_answer}")),
        "{text}"
    );
    check(&w, &f);
    // The request after the branch holds q1, A1, other q2: not q2.
    let sent = request_messages(&server.requests()[2]);
    let texts: Vec<String> = sent.iter().map(text_of).collect();
    assert!(
        texts.contains(&"q1".to_owned()) && !texts.contains(&"q2".to_owned()),
        "{texts:?}"
    );
    // The tree: q2 and the branch hang under A1; the leaf (B2) is marked.
    let leaf_line = text.lines().find(|l| l.starts_with('*')).unwrap();
    assert!(leaf_line.contains("assistant: B2"), "{text}");
    // The branch was recorded as `pi session branch` records a move.
    let moved = lines(&f)
        .into_iter()
        .find(|e| e["type"] == "custom" && e["customType"] == "branch")
        .unwrap();
    assert_eq!(moved["parentId"], first_answer.as_str());
    assert!(ids.len() < entry_ids(&f).len());
    // The context pi builds from the file is the new branch.
    let ctx = w.ok(&["context", "build", f.to_str().unwrap()]);
    assert!(ctx.contains("other q2") && !ctx.contains("\"q2\""), "{ctx}");
}

fn text_of(m: &Value) -> String {
    text(m)
}

#[test]
fn fork_new_and_resume_switch_files() {
    let server = ModelServer::start();
    let w = world(&server);
    w.real_clock("resume lists sessions by their modification time");
    server.push(Reply::openai_text(&["A1"]));
    server.push(Reply::openai_text(&["F1"]));
    server.push(Reply::openai_text(&["N1"]));
    let o = chat(
        &w,
        &[],
        "q1\n/fork\nin the fork\n/new\nin the new one\n/resume\n/resume 3\n/session\n",
    );
    status(&o, 0);
    let text = out(&o);
    assert!(text.contains("forked: now in "), "{text}");
    assert!(text.contains("new session "), "{text}");
    let files = pi_files(&w);
    assert_eq!(files.len(), 3, "{text}");
    for f in &files {
        check(&w, f);
    }
    let with = |needle: &str| {
        files
            .iter()
            .filter(|f| {
                messages(f)
                    .iter()
                    .any(|m| crate::run_support::text(m) == needle)
            })
            .count()
    };
    // The fork holds the first turn and its own; the original only the first.
    assert_eq!(with("q1"), 2);
    assert_eq!(with("in the fork"), 1);
    assert_eq!(with("in the new one"), 1);
    // /resume lists the three, newest first; /resume 3 goes back to the oldest (the first).
    let listed: Vec<&str> = text
        .lines()
        .filter(|l| l.contains("  q1") || l.contains("in the"))
        .collect();
    assert!(listed.len() >= 3, "{text}");
    assert!(text.contains("resumed "), "{text}");
    let orig = files
        .iter()
        .find(|f| {
            let ms = messages(f);
            ms.len() == 2 && crate::run_support::text(&ms[0]) == "q1"
        })
        .unwrap();
    assert!(
        text.contains(&format!("file      {}", orig.display())),
        "{text}"
    );
}

fn pi_files(w: &World) -> Vec<PathBuf> {
    let listed = w.ok(&["session", "list", "--json"]);
    jsonl(&listed)
        .into_iter()
        .map(|e| PathBuf::from(e["path"].as_str().unwrap()))
        .collect()
}

#[test]
fn compact_summarises_and_the_file_stays_consistent() {
    let server = ModelServer::start();
    let w = world(&server);
    settings(&w, json!({"compaction": {"keepRecentTokens": 100}}));
    let f = w.new_session();
    let mut stdin = String::new();
    for k in 0..5 {
        stdin.push_str(&format!(
            "{}\n{}\n",
            user(&format!("question {k} {}", "x".repeat(300))),
            assistant(&format!("answer {k} {}", "y".repeat(300)))
        ));
    }
    w.ok_in(&["session", "append", f.to_str().unwrap()], &stdin);
    server.push(Reply::openai_text(&["## Goal\nAnswer five questions."]));
    let o = chat(
        &w,
        &[f.to_str().unwrap()],
        "/compact focus on the questions\n",
    );
    status(&o, 0);
    let text = out(&o);
    assert!(text.contains("compacting the session (manual)"), "{text}");
    assert!(text.contains("compacted: "), "{text}");
    check(&w, &f);
    let c = lines(&f)
        .into_iter()
        .find(|e| e["type"] == "compaction")
        .unwrap();
    assert_eq!(c["summary"], "## Goal\nAnswer five questions.");
    let req = server.requests()[0].text();
    assert!(req.contains("focus on the questions"), "{req}");
    // Nothing left to compact: said, and nothing written.
    let before = lines(&f).len();
    let o = chat(&w, &[f.to_str().unwrap()], "/compact\n");
    status(&o, 0);
    assert!(out(&o).contains("error: Already compacted"), "{}", out(&o));
    assert_eq!(lines(&f).len(), before);
}

#[test]
fn quit_ends_and_the_first_message_comes_from_p() {
    let server = ModelServer::start();
    let w = world(&server);
    server.push(Reply::openai_text(&["First."]));
    let o = chat(&w, &["-p", "start here"], "/quit\nnot sent\n");
    status(&o, 0);
    assert_eq!(out(&o), "First.\n");
    assert_eq!(server.requests().len(), 1);
    let ms = messages(&session_file(&w));
    assert_eq!(crate::run_support::text(&ms[0]), "start here");
}

#[test]
fn options_of_pi_run_only_are_refused() {
    let server = ModelServer::start();
    let w = world(&server);
    let o = chat(&w, &["--json"], "");
    status(&o, 2);
    assert!(
        err(&o).contains("--json is an option of `pi run`"),
        "{}",
        err(&o)
    );
}

#[test]
fn an_automatic_compaction_says_so_in_one_line() {
    let server = ModelServer::start();
    let w = world(&server);
    w.real_clock("answers must be timestamped after the compaction");
    settings(
        &w,
        json!({"compaction": {"keepRecentTokens": 150, "reserveTokens": 500}}),
    );
    // The last answer reported 1800 tokens of a window of 2000: compacted before the prompt.
    let f = crate::run_recovery::earlier_session(&w, "small", 1800);
    server.push(Reply::openai_text(&["Summary one."]).when("<conversation>"));
    server.push(answer_with_usage("Answer.", 100));
    let o = chat(&w, &[f.to_str().unwrap()], "third question\n");
    status(&o, 0);
    let text = out(&o);
    let said: Vec<&str> = text.lines().filter(|l| l.contains("compact")).collect();
    assert_eq!(said.len(), 1, "{text}");
    assert!(
        said[0].starts_with("compacting the session (threshold)… compacted: "),
        "{text}"
    );
    assert!(text.ends_with("Answer.\n"), "{text}");
    check(&w, &f);
    assert!(lines(&f).iter().any(|e| e["type"] == "compaction"));
}

#[test]
fn export_writes_the_page_and_help_lists_the_commands() {
    let server = ModelServer::start();
    let w = world(&server);
    server.push(Reply::openai_text(&["Hi."]));
    let o = chat(&w, &[], "hello\n/export page.html\n/copy\n/help\n");
    status(&o, 0);
    let text = out(&o);
    assert!(text.contains("wrote page.html"), "{text}");
    let page = std::fs::read_to_string(w.proj().join("page.html")).unwrap();
    assert!(page.contains("<html") && page.contains("hello"));
    // Not a terminal: nothing goes to the clipboard, and no escape code is written.
    assert!(text.contains("nothing copied"), "{text}");
    no_escapes(&o);
    let help: Vec<&str> = text
        .lines()
        .skip_while(|l| !l.contains("/help"))
        .map(str::trim)
        .collect();
    insta::assert_snapshot!(help.join("\n"), @"
    /help                     this list
    /model [M]                list the models, or switch to M (provider/id or id)
    /thinking [LEVEL]         show or set the thinking level
    /tree                     the session's tree, the current leaf marked
    /branch ID [SUMMARY]      continue from entry ID (root: the start)
    /fork [ID]                a new session: the path so far, or up to user message ID
    /resume [N]               list recent sessions, or switch to number N
    /new                      start a new session
    /name NAME                name the session
    /label ID TEXT            label an entry (empty TEXT clears it)
    /compact [INSTRUCTIONS]   summarize older messages
    /export [FILE]            write the session as an HTML page
    /session                  file, id, counts, tokens, cost
    /show [N]                 the whole output of tool call N (default: the last)
    /copy                     copy the last answer to the clipboard (OSC 52)
    /steer TEXT               while the agent works: steer it (else: a message)
    /quit                     leave (also Ctrl-D, or Ctrl-C twice)
    Enter sends; Alt-Enter or Ctrl-J a new line; Tab completes; @ completes paths; Ctrl-C stops the agent; typing while it works queues a follow-up
    ");
}

/// `pi chat` with stdin and stdout piped, for signals.
fn spawn_chat(
    w: &World,
) -> (
    std::process::Child,
    std::process::ChildStdin,
    std::io::BufReader<std::process::ChildStdout>,
) {
    let mut child = w
        .std_cmd()
        .arg("chat")
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let stdin = child.stdin.take().unwrap();
    let out = std::io::BufReader::new(child.stdout.take().unwrap());
    (child, stdin, out)
}

#[test]
fn sigint_aborts_the_running_turn_and_the_next_line_is_served() {
    use std::io::Write;
    let server = ModelServer::start();
    let w = world(&server);
    server.push(
        Reply::openai_text(&["Partial ", "never finished"])
            .stall_at("never", std::time::Duration::from_secs(60)),
    );
    server.push(Reply::openai_text(&["Next answer."]));
    let (child, mut stdin, mut out) = spawn_chat(&w);
    writeln!(stdin, "first").unwrap();
    server.wait_for(1);
    // Once the partial answer is shown, Ctrl-C.
    let mut seen = read_until(&mut out, "Partial ");
    signal(&child, libc::SIGINT);
    seen.push_str(&read_until(&mut out, "(aborted)\n"));
    writeln!(stdin, "second").unwrap();
    drop(stdin);
    let (code, rest) = finish_text(child, out);
    seen.push_str(&rest);
    assert_eq!(code, 0, "{seen}");
    assert_eq!(seen, "Partial \n(aborted)\nNext answer.\n");
    let f = session_file(&w);
    check(&w, &f);
    let ms = messages(&f);
    assert_eq!(roles(&ms), ["user", "assistant", "user", "assistant"]);
    assert_eq!(ms[1]["stopReason"], "aborted");
}

#[test]
fn sigint_while_waiting_for_input_exits_130() {
    let server = ModelServer::start();
    let w = world(&server);
    let (child, mut stdin, mut out) = spawn_chat(&w);
    // Once a command has been answered, the chat waits for the next line.
    std::io::Write::write_all(&mut stdin, b"/help\n").unwrap();
    read_until(&mut out, "(also Ctrl-D, or Ctrl-C twice)\n");
    signal(&child, libc::SIGINT);
    let (code, _) = finish_text(child, out);
    drop(stdin);
    assert_eq!(code, 130);
}

/// Reads stdout until what was read ends with `marker` (at most 20 s); returns it.
fn read_until(out: &mut std::io::BufReader<std::process::ChildStdout>, marker: &str) -> String {
    use std::io::Read;
    let start = std::time::Instant::now();
    let mut seen = Vec::new();
    let mut byte = [0u8; 1];
    while !seen.ends_with(marker.as_bytes()) {
        assert!(
            start.elapsed() < std::time::Duration::from_secs(20),
            "no {marker:?}"
        );
        match out.read(&mut byte) {
            Ok(1) => seen.push(byte[0]),
            _ => panic!(
                "stdout ended before {marker:?}: {}",
                String::from_utf8_lossy(&seen)
            ),
        }
    }
    String::from_utf8_lossy(&seen).into_owned()
}

#[test]
fn fork_at_a_user_message_starts_before_it() {
    let server = ModelServer::start();
    let w = world(&server);
    server.push(Reply::openai_text(&["A1"]));
    server.push(Reply::openai_text(&["A2"]));
    status(&chat(&w, &[], "q1\nq2\n"), 0);
    let f = session_file(&w);
    let q2 = lines(&f)
        .into_iter()
        .find(|e| e["message"]["role"] == "user" && text(&e["message"]) == "q2")
        .unwrap()["id"]
        .as_str()
        .unwrap()
        .to_owned();
    let o = chat(
        &w,
        &["-s", f.to_str().unwrap()],
        &format!("/fork {q2}\n/session\n"),
    );
    status(&o, 0);
    let out_text = out(&o);
    assert!(out_text.contains("(the message was: q2)"), "{out_text}");
    let files = pi_files(&w);
    assert_eq!(files.len(), 2);
    let fork = files.iter().find(|p| **p != f).unwrap();
    check(&w, fork);
    let texts: Vec<String> = messages(fork).iter().map(text).collect();
    assert_eq!(texts, ["q1", "A1"]);
    assert!(
        out_text.contains(&format!("file      {}", fork.display())),
        "{out_text}"
    );
}

#[test]
fn session_then_prompt_as_positionals() {
    let server = ModelServer::start();
    let w = world(&server);
    server.push(Reply::openai_text(&["One."]));
    status(&chat(&w, &[], "first\n"), 0);
    let f = session_file(&w);
    server.push(Reply::openai_text(&["Two."]));
    let o = chat(&w, &[f.to_str().unwrap(), "second"], "");
    status(&o, 0);
    assert_eq!(out(&o), "Two.\n");
    server.push(Reply::openai_text(&["Three."]));
    let o = chat(&w, &["-s", f.to_str().unwrap(), "third"], "");
    status(&o, 0);
    let users: Vec<String> = messages(&f)
        .iter()
        .filter(|m| m["role"] == "user")
        .map(text)
        .collect();
    assert_eq!(users, ["first", "second", "third"]);
    let o = chat(&w, &[f.to_str().unwrap(), "x", "-p", "y"], "");
    status(&o, 2);
    assert!(err(&o).contains("given twice"), "{}", err(&o));
}

#[test]
fn continue_takes_the_one_positional_as_the_first_message() {
    let server = ModelServer::start();
    let w = world(&server);
    server.push(Reply::openai_text(&["One."]));
    status(&chat(&w, &[], "first\n"), 0);
    let f = session_file(&w);
    server.push(Reply::openai_text(&["Two."]));
    let o = chat(&w, &["-c", "second"], "");
    status(&o, 0);
    assert_eq!(out(&o), "Two.\n");
    let users: Vec<String> = messages(&f)
        .iter()
        .filter(|m| m["role"] == "user")
        .map(text)
        .collect();
    assert_eq!(users, ["first", "second"], "-c continued the same file");
    // SESSION and PROMPT both, with -c, is refused before anything is written.
    let before = std::fs::read(&f).unwrap();
    let o = chat(&w, &["-c", f.to_str().unwrap(), "third"], "");
    status(&o, 2);
    assert!(
        err(&o).contains("-c continues the current session"),
        "{}",
        err(&o)
    );
    assert_eq!(std::fs::read(&f).unwrap(), before);
}

/// A session made by `pi chat` with most of what it writes: a name, a thinking level, a
/// tool call and its result, a label, a branch back to an earlier answer, a compaction and
/// turns after it. tests/fixtures/chat/session.jsonl was made by this script; the reference
/// 1.6 builds its context in scripts/goldens/context16.mjs (the case "written by pi chat").
fn chat_script_session(server: &ModelServer, w: &World) -> PathBuf {
    settings(w, json!({"compaction": {"keepRecentTokens": 150}}));
    let long = |s: &str| format!("{s} {}", "z".repeat(400));
    server.push(Reply::openai_text(&[&long("Hello.")]));
    server.push(tool_calls(&[(
        "call_1",
        "bash",
        r#"{"command":"printf 'a\\nb\\n'"}"#,
    )]));
    server.push(Reply::openai_text(&[&long("Listed.")]));
    let first = format!(
        "{}\n/name chat fixture\n/thinking high\n{}\n",
        long("hello"),
        long("list")
    );
    status(&chat(w, &[], &first), 0);
    let f = session_file(w);
    let ls = lines(&f);
    let id_of = |role: &str| {
        ls.iter()
            .find(|e| e["type"] == "message" && e["message"]["role"] == role)
            .unwrap()["id"]
            .as_str()
            .unwrap()
            .to_owned()
    };
    let (user, answer) = (id_of("user"), id_of("assistant"));
    server.push(Reply::openai_text(&[&long("Again.")]));
    server.push(Reply::openai_text(&["## Goal\nGreet and list."]));
    server.push(Reply::openai_text(&["After."]));
    let second = format!(
        "/label {user} start\n/branch {answer}\n{}\n/compact\nafter\n",
        long("again")
    );
    status(&chat(w, &["-c"], &second), 0);
    check(w, &f);
    f
}

/// The types and roles of a session's entries, and each entry's parent as the index of
/// another entry: the shape of the file without its ids, times and texts.
fn shape(p: &std::path::Path) -> Vec<(String, String, Option<usize>)> {
    let ls = lines(p);
    let index: std::collections::HashMap<String, usize> = ls
        .iter()
        .enumerate()
        .filter_map(|(i, e)| Some((e["id"].as_str()?.to_owned(), i)))
        .collect();
    ls.iter()
        .map(|e| {
            let role = e["message"]["role"].as_str().unwrap_or("").to_owned();
            let parent = e["parentId"].as_str().and_then(|p| index.get(p).copied());
            (e["type"].as_str().unwrap_or("").to_owned(), role, parent)
        })
        .collect()
}

#[test]
fn the_recorded_chat_fixture_is_what_pi_chat_writes_today() {
    let server = ModelServer::start();
    let w = world(&server);
    let f = chat_script_session(&server, &w);
    if let Ok(dest) = std::env::var("PI_WRITE_CHAT_FIXTURE") {
        std::fs::copy(&f, dest).unwrap();
    }
    let fixture = fixture("chat").join("session.jsonl");
    assert_eq!(shape(&f), shape(&fixture));
    let kinds: Vec<String> = lines(&f)
        .iter()
        .map(|e| e["type"].as_str().unwrap().to_owned())
        .collect();
    for k in [
        "session_info",
        "thinking_level_change",
        "label",
        "compaction",
    ] {
        assert!(kinds.iter().any(|x| x == k), "no {k} in {kinds:?}");
    }
    check(&w, &fixture);
}
