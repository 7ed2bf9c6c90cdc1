//! `pi chat` on a pseudo-terminal (made by the test, as `terminal.rs` does): a two-turn
//! conversation streams, a tool call is summarised, Ctrl-C mid-stream aborts the turn and
//! returns to the prompt with a consistent file, typing while the agent works queues a
//! follow-up, Ctrl-D and Ctrl-C twice exit 0, history survives a restart, Alt-Enter and
//! pasted text make multi-line messages, Tab completes.

use std::io::{Read, Write};
use std::os::fd::{FromRawFd, OwnedFd};
use std::os::unix::process::CommandExt;
use std::process::{Child, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde_json::json;

use crate::common::model_server::{ModelServer, Reply};
use crate::common::*;
use crate::run_support::*;

/// A `pi chat` on a terminal of 100 columns.
struct Pty {
    child: Child,
    master: std::fs::File,
    out: Arc<Mutex<Vec<u8>>>,
    /// How much of `out` the expectations have consumed.
    seen: usize,
}

impl Pty {
    fn start(w: &World, args: &[&str], env: &[(&str, &str)]) -> Pty {
        let (mut master, mut slave) = (0, 0);
        let ws = libc::winsize {
            ws_row: 40,
            ws_col: 100,
            ws_xpixel: 0,
            ws_ypixel: 0,
        };
        // SAFETY: openpty fills in two descriptors, owned below; the size is read only.
        let r = unsafe {
            libc::openpty(
                &mut master,
                &mut slave,
                std::ptr::null_mut(),
                std::ptr::null(),
                &ws,
            )
        };
        assert_eq!(r, 0, "openpty failed");
        // SAFETY: both descriptors were just opened and are owned by nothing else.
        let (master, slave) =
            unsafe { (OwnedFd::from_raw_fd(master), OwnedFd::from_raw_fd(slave)) };
        let mut cmd = w.std_cmd();
        cmd.env("TERM", "xterm")
            .envs(env.iter().copied())
            .arg("chat")
            .args(args)
            .stdin(Stdio::from(slave.try_clone().unwrap()))
            .stdout(Stdio::from(slave.try_clone().unwrap()))
            .stderr(Stdio::from(slave));
        // SAFETY: only async-signal-safe calls between fork and exec: a new session whose
        // controlling terminal is the pseudo-terminal (so Ctrl-C is SIGINT to pi).
        unsafe {
            cmd.pre_exec(|| {
                libc::setsid();
                libc::ioctl(0, libc::TIOCSCTTY, 0);
                Ok(())
            });
        }
        let child = cmd.spawn().unwrap();
        drop(cmd);
        let master = std::fs::File::from(master);
        let out = Arc::new(Mutex::new(Vec::new()));
        let (mut reader, mut answer) = (master.try_clone().unwrap(), master.try_clone().unwrap());
        let sink = out.clone();
        std::thread::spawn(move || {
            let mut buf = [0u8; 4096];
            loop {
                match reader.read(&mut buf) {
                    Ok(0) | Err(_) => break,
                    Ok(n) => {
                        // The line editor asks where the cursor is: at the left.
                        if buf[..n].windows(4).any(|w| w == b"\x1b[6n") {
                            let _ = answer.write_all(b"\x1b[1;1R");
                        }
                        sink.lock().unwrap().extend_from_slice(&buf[..n]);
                    }
                }
            }
        });
        Pty {
            child,
            master,
            out,
            seen: 0,
        }
    }

    fn text(&self) -> String {
        String::from_utf8_lossy(&self.out.lock().unwrap()).into_owned()
    }

    /// Waits until the output after what was expected before holds `needle`; returns that
    /// output up to and including it.
    fn expect(&mut self, needle: &str) -> String {
        let start = Instant::now();
        loop {
            let all = self.out.lock().unwrap().clone();
            let tail = String::from_utf8_lossy(&all[self.seen.min(all.len())..]).into_owned();
            if let Some(i) = tail.find(needle) {
                let got = tail[..i + needle.len()].to_owned();
                self.seen += got.len();
                return got;
            }
            assert!(
                start.elapsed() < Duration::from_secs(30),
                "no {needle:?} in the output:\n{}",
                String::from_utf8_lossy(&all).replace('\u{1b}', "␛")
            );
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    fn send(&mut self, bytes: &[u8]) {
        self.master.write_all(bytes).unwrap();
        self.master.flush().unwrap();
    }

    /// Types a line, waiting for the prompt first.
    fn line(&mut self, text: &str) {
        self.expect("› ");
        self.send(text.as_bytes());
        self.send(b"\r");
    }

    fn wait(mut self) -> i32 {
        let start = Instant::now();
        loop {
            if let Some(s) = self.child.try_wait().unwrap() {
                return s.code().unwrap_or(-1);
            }
            assert!(
                start.elapsed() < Duration::from_secs(30),
                "pi chat did not end:\n{}",
                self.text().replace('\u{1b}', "␛")
            );
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

fn no_color() -> [(&'static str, &'static str); 1] {
    [("NO_COLOR", "1")]
}

#[test]
fn two_turns_stream_with_a_footer_and_ctrl_d_exits_0() {
    let server = ModelServer::start();
    let w = world(&server);
    server.push(
        Reply::openai_text(&["Hel", "lo ", "there."])
            .split(9)
            .pace(Duration::from_millis(5)),
    );
    server.push(Reply::openai_text(&["Second ", "answer."]));
    let mut p = Pty::start(&w, &[], &no_color());
    p.expect("pi chat · mock/m1");
    p.line("hi");
    p.expect("Hello there.");
    let footer = p.expect("context");
    assert!(footer.contains("↑120 ↓30 · $0.0000"), "{footer}");
    p.line("and again");
    p.expect("Second answer.");
    // /copy: the last answer to the clipboard through OSC 52.
    p.line("/copy");
    p.expect("\x1b]52;c;U2Vjb25kIGFuc3dlci4=\x07");
    p.expect("copied the last answer (14 characters)");
    p.expect("› ");
    p.send(b"\x04");
    assert_eq!(p.wait(), 0);
    let f = session_file(&w);
    check(&w, &f);
    let ms = messages(&f);
    assert_eq!(roles(&ms), ["user", "assistant", "user", "assistant"]);
    assert_eq!(text(&ms[3]), "Second answer.");
}

#[test]
fn colors_on_a_terminal_unless_no_color() {
    let server = ModelServer::start();
    let w = world(&server);
    let mut p = Pty::start(&w, &[], &[]);
    p.expect("/help for commands");
    p.expect("›");
    p.send(b"/nosuch\r");
    let shown = p.expect("nothing sent)");
    assert!(shown.contains("\x1b[31m"), "{shown:?}");
    p.send(b"\x04");
    assert_eq!(p.wait(), 0);
    let mut p = Pty::start(&w, &[], &no_color());
    p.line("/nosuch");
    let shown = p.expect("nothing sent)");
    assert!(!shown.contains("\x1b[31m"), "{shown:?}");
    p.send(b"\x04");
    assert_eq!(p.wait(), 0);
}

#[test]
fn a_tool_call_is_summarised_on_one_line() {
    let server = ModelServer::start();
    let w = world(&server);
    server.push(tool_calls(&[(
        "call_1",
        "bash",
        r#"{"command":"echo one; echo two; exit 3"}"#,
    )]));
    server.push(Reply::openai_text(&["It failed."]));
    let mut p = Pty::start(&w, &[], &no_color());
    p.line("run it");
    p.expect("→ bash echo one; echo two; exit 3");
    let summary = p.expect("(/show 1)");
    assert!(summary.contains("✗ exit 3 · one (+1 lines)"), "{summary}");
    p.expect("It failed.");
    p.line("/show");
    p.expect("one\r\ntwo");
    p.send(b"\x04");
    assert_eq!(p.wait(), 0);
    check(&w, &session_file(&w));
}

#[test]
fn ctrl_c_mid_stream_aborts_the_turn_and_returns_to_the_prompt() {
    let server = ModelServer::start();
    let w = world(&server);
    server.push(
        Reply::openai_text(&["Partial ", "answer that never ends"])
            .stall_at("answer that", Duration::from_secs(60)),
    );
    server.push(Reply::openai_text(&["Back."]));
    let mut p = Pty::start(&w, &[], &no_color());
    p.line("go");
    p.expect("Partial");
    p.send(b"\x03");
    p.expect("(aborted)");
    // The prompt comes back, and the chat goes on.
    p.line("next");
    p.expect("Back.");
    p.expect("› ");
    // Ctrl-C twice at the empty prompt ends it.
    p.send(b"\x03");
    p.expect("Ctrl-C again");
    p.send(b"\x03");
    assert_eq!(p.wait(), 0);
    let f = session_file(&w);
    check(&w, &f);
    let ms = messages(&f);
    assert_eq!(roles(&ms), ["user", "assistant", "user", "assistant"]);
    assert_eq!(ms[1]["stopReason"], "aborted");
    assert_eq!(text(&ms[1]), "Partial ");
    // The request after the abort carries the partial answer as pi run would send it.
    assert_eq!(server.requests().len(), 2);
}

#[test]
fn a_line_typed_while_the_agent_works_is_a_follow_up() {
    let server = ModelServer::start();
    let w = world(&server);
    server.push(
        Reply::openai_text(&["Working", " on it."]).stall_at(" on it", Duration::from_millis(1500)),
    );
    server.push(Reply::openai_text(&["Follow-up done."]));
    let mut p = Pty::start(&w, &[], &no_color());
    p.line("first");
    p.expect("Working");
    p.send(b"also this\r");
    p.expect("(queued as a follow-up)");
    p.expect("Follow-up done.");
    p.expect("› ");
    p.send(b"\x04");
    assert_eq!(p.wait(), 0);
    let f = session_file(&w);
    check(&w, &f);
    let ms = messages(&f);
    let users: Vec<String> = ms
        .iter()
        .filter(|m| m["role"] == "user")
        .map(text)
        .collect();
    assert_eq!(users, ["first", "also this"]);
}

#[test]
fn history_survives_a_restart() {
    let server = ModelServer::start();
    let w = world(&server);
    server.push(Reply::openai_text(&["One."]));
    server.push(Reply::openai_text(&["Two."]));
    let mut p = Pty::start(&w, &[], &no_color());
    p.line("remember this line");
    p.expect("One.");
    p.expect("› ");
    p.send(b"\x04");
    assert_eq!(p.wait(), 0);
    let hist = w.agent().join("chat-history");
    let mode =
        std::os::unix::fs::PermissionsExt::mode(&std::fs::metadata(&hist).unwrap().permissions());
    assert_eq!(mode & 0o777, 0o600);
    // A new chat: Up brings the line back, Enter sends it.
    let mut p = Pty::start(&w, &[], &no_color());
    p.expect("› ");
    p.send(b"\x1b[A");
    p.expect("remember this line");
    p.send(b"\r");
    p.expect("Two.");
    p.expect("› ");
    p.send(b"\x04");
    assert_eq!(p.wait(), 0);
    let texts: Vec<String> = server
        .requests()
        .iter()
        .map(|r| text(request_messages(r).last().unwrap()))
        .collect();
    assert_eq!(texts, ["remember this line", "remember this line"]);
}

#[test]
fn alt_enter_and_a_paste_make_one_multi_line_message_and_tab_completes() {
    let server = ModelServer::start();
    let w = world(&server);
    server.push(Reply::openai_text(&["A"]));
    server.push(Reply::openai_text(&["B"]));
    let mut p = Pty::start(&w, &[], &no_color());
    p.expect("› ");
    p.send(b"line one\x1b\rline two\r");
    p.expect("A");
    p.expect("› ");
    p.send(b"\x1b[200~pasted\nlines\x1b[201~\r");
    p.expect("B");
    p.expect("› ");
    p.send(b"/tre\t");
    p.expect("/tree");
    p.send(b"\r");
    p.expect("* ");
    p.expect("› ");
    p.send(b"\x04");
    assert_eq!(p.wait(), 0);
    let ms = messages(&session_file(&w));
    let users: Vec<String> = ms
        .iter()
        .filter(|m| m["role"] == "user")
        .map(text)
        .collect();
    assert_eq!(users, ["line one\nline two", "pasted\nlines"]);
}

#[test]
fn markdown_is_styled_and_thinking_dimmed_or_collapsed() {
    let server = ModelServer::start();
    let w = world(&server);
    let thinking_reply = || {
        Reply::anthropic_events(&[
            (
                "message_start",
                json!({"type": "message_start", "message": {"id": "msg_1", "usage": {"input_tokens": 20, "output_tokens": 1}}}),
            ),
            (
                "content_block_start",
                json!({"type": "content_block_start", "index": 0, "content_block": {"type": "thinking", "thinking": ""}}),
            ),
            (
                "content_block_delta",
                json!({"type": "content_block_delta", "index": 0, "delta": {"type": "thinking_delta", "thinking": "Pondering the request"}}),
            ),
            (
                "content_block_delta",
                json!({"type": "content_block_delta", "index": 0, "delta": {"type": "signature_delta", "signature": "sig"}}),
            ),
            (
                "content_block_stop",
                json!({"type": "content_block_stop", "index": 0}),
            ),
            (
                "content_block_start",
                json!({"type": "content_block_start", "index": 1, "content_block": {"type": "text", "text": ""}}),
            ),
            (
                "content_block_delta",
                json!({"type": "content_block_delta", "index": 1, "delta": {"type": "text_delta", "text": "Use **care**:\n- one `x`\n"}}),
            ),
            (
                "content_block_stop",
                json!({"type": "content_block_stop", "index": 1}),
            ),
            (
                "message_delta",
                json!({"type": "message_delta", "delta": {"stop_reason": "end_turn"}, "usage": {"output_tokens": 9}}),
            ),
            ("message_stop", json!({"type": "message_stop"})),
        ])
    };
    server.push(thinking_reply());
    let mut p = Pty::start(
        &w,
        &["--model", "mockant/claude-mock", "--thinking", "high"],
        &[],
    );
    p.expect("›");
    p.send(b"think\r");
    let shown = p.expect("one");
    assert!(shown.contains("\x1b[2mPondering the request"), "{shown:?}");
    // The finished lines are drawn again, styled.
    let shown = p.expect("context");
    assert!(shown.contains("\x1b[2K"), "{shown:?}");
    assert!(shown.contains("• one \x1b[36mx\x1b[0m"), "{shown:?}");
    p.expect("›");
    p.send(b"\x04");
    assert_eq!(p.wait(), 0);
    // hideThinkingBlock: one line instead of the text.
    settings(&w, json!({"hideThinkingBlock": true}));
    server.push(thinking_reply());
    let mut p = Pty::start(&w, &["-c"], &no_color());
    p.line("again");
    let shown = p.expect("one");
    assert!(
        shown.contains("thinking…") && !shown.contains("Pondering"),
        "{shown:?}"
    );
    p.expect("› ");
    p.send(b"\x04");
    assert_eq!(p.wait(), 0);
}

/// Whether process `pid` is gone (or a zombie no one reaps).
fn gone(pid: i32) -> bool {
    // SAFETY: kill with signal 0 only checks that the process exists.
    let exists = unsafe { libc::kill(pid, 0) } == 0;
    let zombie = std::fs::read_to_string(format!("/proc/{pid}/stat"))
        .map(|s| {
            s.rsplit(')')
                .next()
                .unwrap_or("")
                .trim_start()
                .starts_with('Z')
        })
        .unwrap_or(true);
    !exists || zombie
}

#[test]
fn ctrl_c_while_a_tool_runs_ends_its_children() {
    let server = ModelServer::start();
    let w = world(&server);
    let pid_file = w.path("child.pid");
    let cmd = format!("sh -c 'echo $$ > {}; exec sleep 60'", pid_file.display());
    server.push(tool_calls(&[(
        "call_1",
        "bash",
        &serde_json::to_string(&json!({ "command": cmd })).unwrap(),
    )]));
    let mut p = Pty::start(&w, &[], &no_color());
    p.line("wait");
    p.expect("→ bash sh -c");
    let start = Instant::now();
    let pid = loop {
        if let Some(pid) = std::fs::read_to_string(&pid_file)
            .ok()
            .and_then(|s| s.trim().parse::<i32>().ok())
        {
            break pid;
        }
        assert!(
            start.elapsed() < Duration::from_secs(20),
            "the command did not start"
        );
        std::thread::sleep(Duration::from_millis(20));
    };
    assert!(!gone(pid));
    p.send(b"\x03");
    p.expect("✗");
    p.expect("› ");
    let start = Instant::now();
    while !gone(pid) {
        assert!(
            start.elapsed() < Duration::from_secs(10),
            "sleep {pid} still runs"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    p.send(b"\x04");
    assert_eq!(p.wait(), 0);
    let f = session_file(&w);
    check(&w, &f);
    let results = tool_results(&f);
    assert_eq!(results.len(), 1);
    assert!(
        text(&results[0]).contains("aborted"),
        "{}",
        text(&results[0])
    );
}

#[test]
fn tab_completes_templates_skills_and_paths_after_at() {
    let server = ModelServer::start();
    let w = world(&server);
    w.write("proj/.pi/prompts/review.md", "Review $1 carefully");
    w.write(
        "agent/skills/deploy/SKILL.md",
        "---\nname: deploy\ndescription: Ship it\n---\nSteps.",
    );
    w.write("proj/notes-file.txt", "notes");
    server.push(Reply::openai_text(&["Read."]));
    let mut p = Pty::start(&w, &[], &no_color());
    p.expect("› ");
    p.send(b"/revi\t");
    p.expect("/review");
    // Ctrl-U clears the line.
    p.send(b"\x15/skill:dep\t");
    p.expect("/skill:deploy");
    p.send(b"\x15look at @notes-\t");
    p.expect("notes-file.txt");
    p.send(b"\r");
    p.expect("Read.");
    p.expect("› ");
    p.send(b"\x04");
    assert_eq!(p.wait(), 0);
    let ms = messages(&session_file(&w));
    assert_eq!(text(&ms[0]), "look at @notes-file.txt");
}

#[test]
fn resume_lists_and_the_prompt_waits_for_the_number() {
    let server = ModelServer::start();
    let w = world(&server);
    w.real_clock("resume lists sessions by their modification time");
    server.push(Reply::openai_text(&["Old answer."]));
    status(&crate::chat_lines::chat(&w, &[], "the old session\n"), 0);
    let old = session_file(&w);
    std::thread::sleep(Duration::from_millis(50));
    let mut p = Pty::start(&w, &[], &no_color());
    p.line("/resume");
    // The current session (new, empty) first, marked.
    p.expect("*  1  just now  (no messages)");
    p.expect("2  just now  the old session");
    p.expect("/resume N switches to session N");
    // The prompt holds `/resume `: the number completes it.
    p.expect("› /resume ");
    p.send(b"1\r");
    p.expect("already in that session");
    p.line("/resume");
    p.expect("› /resume ");
    p.send(b"2\r");
    p.expect(&format!("resumed {}", old.display()));
    p.expect("› ");
    p.send(b"\x04");
    assert_eq!(p.wait(), 0);
}

/// What a person sees of the chat's output: the line editor's control sequences (cursor
/// moves, bracketed-paste and synchronized-output modes, line clears) and carriage returns
/// taken out, the world's directories redacted.
fn screen(w: &World, raw: &str) -> String {
    let mut out = String::new();
    let mut chars = raw.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '\u{1b}' if chars.peek() == Some(&'[') => {
                chars.next();
                for d in chars.by_ref() {
                    if d.is_ascii_alphabetic() {
                        break;
                    }
                }
            }
            '\r' => {}
            c => out.push(c),
        }
    }
    w.redact(&out)
}

#[test]
fn a_session_as_seen_on_the_terminal() {
    let server = ModelServer::start();
    let w = world(&server);
    server.push(tool_calls(&[(
        "call_1",
        "bash",
        r#"{"command":"echo hello"}"#,
    )]));
    server.push(Reply::openai_text(&["It said ", "hello."]));
    let mut p = Pty::start(&w, &[], &no_color());
    p.line("run echo hello");
    p.expect("It said hello.");
    p.line("/name demo");
    p.expect("named: demo");
    p.expect("› ");
    let raw = p.text();
    p.send(b"\x04");
    assert_eq!(p.wait(), 0);
    insta::assert_snapshot!(screen(&w, &raw), @"
    pi: new session [SESSIONS]/2026-01-02T03-04-05-678Z_019b7ca9-8f2e-727e-8bef-3cafe4594b0f.jsonl
    pi chat · mock/m1 · /help for commands, Ctrl-D to quit
    › run echo hello
    → bash echo hello
      ✓ exit 0 · hello (/show 1)
    It said hello.
    ↑320 ↓50 · $0.0000 · context <1% of 100k
    › /name demo
    named: demo
    ›
    ");
}
