//! Diagnostics never pass a crafted session's escape sequences to the terminal (issue 30):
//! every error, warning, hint and note that quotes session or model text escapes its
//! control characters, as the human views do.

use crate::common::World;

/// A clipboard write (OSC 52), a screen clear, a title change, a C1 CSI and a bidi override.
const EVIL: &str = "\u{1b}]52;c;aGk=\u{7}\u{1b}[2J\u{1b}]0;pwned\u{7}\u{9b}31m\u{202e}";

/// A session whose cwd does not exist, with an entry without a message object and an
/// assistant message of an unknown model, all carrying [`EVIL`].
fn crafted(w: &World) -> std::path::PathBuf {
    let usage = serde_json::json!({"input": 1, "output": 1, "cacheRead": 0, "cacheWrite": 0,
        "totalTokens": 2, "cost": {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0, "total": 0}});
    let lines = [
        serde_json::json!({"type": "session", "version": 3, "id": format!("s1{EVIL}"),
            "timestamp": "2026-01-01T00:00:00.000Z", "cwd": format!("/nonexistent/{EVIL}")}),
        serde_json::json!({"type": "message", "id": "a1", "parentId": null,
            "timestamp": "2026-01-01T00:00:01.000Z",
            "message": {"role": "user", "content": format!("hi {EVIL}"), "timestamp": 1}}),
        serde_json::json!({"type": "message", "id": format!("b{EVIL}"), "parentId": "a1",
            "timestamp": "2026-01-01T00:00:02.000Z"}),
        serde_json::json!({"type": "message", "id": "c1", "parentId": format!("b{EVIL}"),
            "timestamp": "2026-01-01T00:00:03.000Z",
            "message": {"role": "assistant", "content": [{"type": "text", "text": format!("ok {EVIL}")}],
                "api": "openai-completions", "provider": format!("evil{EVIL}"),
                "model": format!("m{EVIL}"), "usage": usage, "stopReason": "stop", "timestamp": 2}}),
    ];
    let text: String = lines.iter().map(|l| format!("{l}\n")).collect();
    w.write("crafted.jsonl", text)
}

/// Whether `bytes` hold a control character a terminal acts on: ESC, BEL, CSI (C1, as
/// UTF-8) or a bidi override.
fn dangerous(bytes: &[u8]) -> bool {
    let s = String::from_utf8_lossy(bytes);
    s.chars()
        .any(|c| matches!(c, '\u{1b}' | '\u{7}' | '\u{9b}' | '\u{202e}'))
}

#[test]
fn no_command_writes_a_sessions_escape_sequences_to_stderr() {
    let w = World::new();
    let file = crafted(&w);
    let f = file.to_str().unwrap();
    let html = w.path("out.html");
    let runs: Vec<Vec<&str>> = vec![
        vec!["session", "check", f],
        vec!["session", "show", f],
        vec!["session", "tree", f],
        vec!["session", "log", f, "--filter", ".message.content + 1"],
        vec!["session", "search", "hi", f],
        vec![
            "session",
            "export",
            f,
            "--format",
            "html",
            "-o",
            html.to_str().unwrap(),
        ],
        vec!["context", "stats", f],
        vec!["context", "stats", f, "--json"],
        vec!["context", "build", f],
        vec!["compact", f, "--context-window", "10"],
        vec!["run", f, "-p", "hi"],
        vec!["run", "--json", f, "-p", "hi"],
    ];
    let mut all = Vec::new();
    for args in &runs {
        let out = w.pi().args(args).output().unwrap();
        assert!(
            !dangerous(&out.stderr),
            "pi {args:?} wrote control characters to stderr: {}",
            String::from_utf8_lossy(&out.stderr).escape_debug()
        );
        all.extend_from_slice(&out.stderr);
    }
    // The messages that quote the crafted text were all shown, escaped.
    let all = String::from_utf8_lossy(&all);
    for expected in [
        "session's working directory /nonexistent/\\u{1b}]52;c;aGk=\\u{7}",
        "no context window known for model evil\\u{1b}]52",
        "--filter failed on entry a1 (line 2)",
        "entry b\\u{1b}]52;c;aGk=\\u{7}\\u{1b}[2J\\u{1b}]0;pwned\\u{7}\\u{9b}31m\\u{202e} (line 3) has no message object",
    ] {
        assert!(all.contains(expected), "missing {expected:?} in:\n{all}");
    }
}

#[test]
fn rpc_errors_about_a_crafted_session_carry_no_raw_escapes() {
    let server = crate::common::model_server::ModelServer::start();
    let w = crate::run_support::world(&server);
    let file = crafted(&w);
    let req = serde_json::json!({"id": "1", "type": "switch_session", "sessionPath": file});
    let out = w
        .pi()
        .args(["run", "--rpc", "--no-session"])
        .write_stdin(format!("{req}\n"))
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(stdout.contains("\"id\":\"1\""), "{stdout}");
    assert!(stdout.contains("does not exist"), "{stdout}");
    assert!(!dangerous(&out.stdout), "{}", stdout.escape_debug());
    assert!(!dangerous(&out.stderr));
}
