//! Human views on a real terminal: the commands with a human view print it when stdout is a
//! terminal (a pseudo-terminal made by the test), JSON when it is not, with colors unless
//! `NO_COLOR` is set.

use std::io::Read;
use std::os::fd::{FromRawFd, OwnedFd};
use std::process::{Command, Stdio};

use crate::common::*;

/// Runs `cmd` with stdout and stderr on a new pseudo-terminal; returns its exit status and
/// what it wrote there.
fn on_terminal(mut cmd: Command) -> (i32, String) {
    let (mut master, mut slave) = (0, 0);
    // SAFETY: openpty fills in two descriptors, which are then owned below.
    let r = unsafe {
        libc::openpty(
            &mut master,
            &mut slave,
            std::ptr::null_mut(),
            std::ptr::null(),
            std::ptr::null(),
        )
    };
    assert_eq!(r, 0, "openpty failed");
    // SAFETY: both descriptors were just opened and are owned by nothing else.
    let (master, slave) = unsafe { (OwnedFd::from_raw_fd(master), OwnedFd::from_raw_fd(slave)) };
    let child = cmd
        .stdin(Stdio::null())
        .stdout(Stdio::from(slave.try_clone().unwrap()))
        .stderr(Stdio::from(slave))
        .spawn()
        .unwrap();
    drop(cmd);
    let mut out = Vec::new();
    let mut f = std::fs::File::from(master);
    // Reading ends with EIO once the child has exited and the terminal is closed.
    let mut buf = [0u8; 4096];
    loop {
        match f.read(&mut buf) {
            Ok(0) | Err(_) => break,
            Ok(n) => out.extend_from_slice(&buf[..n]),
        }
    }
    let mut child = child;
    let status = child.wait().unwrap().code().unwrap_or(-1);
    (status, String::from_utf8_lossy(&out).replace("\r\n", "\n"))
}

fn pi(w: &World, args: &[&str]) -> Command {
    let mut c = w.std_cmd();
    c.args(args);
    c
}

fn session_with_branch(w: &World) -> std::path::PathBuf {
    let f = w.new_session();
    let p = f.to_str().unwrap();
    let out = jsonl(&w.ok_in(
        &["session", "append", p],
        &format!(
            "{}\n{}\n",
            user("first question"),
            assistant("first answer")
        ),
    ));
    let first = out[0]["id"].as_str().unwrap().to_owned();
    w.ok(&["session", "branch", p, &first]);
    w.ok_in(&["session", "append", p], &user("second try"));
    f
}

#[test]
fn tree_list_and_check_are_human_on_a_terminal() {
    let w = World::new();
    let f = session_with_branch(&w);
    let p = f.to_str().unwrap();

    let (code, text) = on_terminal(pi(&w, &["session", "tree", p]));
    assert_eq!(code, 0, "{text}");
    assert!(text.contains("user: first question"), "{text}");
    assert!(text.contains("← leaf"), "{text}");
    assert!(text.contains('\u{1b}'), "colors on a terminal: {text:?}");
    assert!(serde_json::from_str::<serde_json::Value>(text.lines().next().unwrap()).is_err());
    // Piped: JSON.
    let piped = w.ok(&["session", "tree", p]);
    assert!(serde_json::from_str::<serde_json::Value>(piped.lines().next().unwrap()).is_ok());
    // NO_COLOR: the same text without escapes.
    let mut c = pi(&w, &["session", "tree", p]);
    c.env("NO_COLOR", "1");
    let (_, plain) = on_terminal(c);
    assert!(!plain.contains('\u{1b}'), "{plain:?}");
    assert!(plain.contains("← leaf"));
    // --json (and --format json) on a terminal: JSON.
    for flags in [&["--json"][..], &["--format", "json"][..]] {
        let mut args = vec!["session", "tree", p];
        args.extend(flags);
        let (_, j) = on_terminal(pi(&w, &args));
        assert!(
            serde_json::from_str::<serde_json::Value>(j.lines().next().unwrap()).is_ok(),
            "{flags:?}: {j}"
        );
    }

    let (code, text) = on_terminal(pi(&w, &["session", "list"]));
    assert_eq!(code, 0, "{text}");
    assert!(text.contains("MODIFIED     MSGS  ID"), "{text}");
    assert!(text.contains("first question"));

    let (code, text) = on_terminal(pi(&w, &["session", "check", p]));
    assert_eq!(code, 0, "{text}");
    assert!(!text.trim_start().starts_with('{'), "{text}");
}

#[test]
fn context_stats_and_prompt_list_are_human_on_a_terminal() {
    let w = World::new();
    let f = session_with_branch(&w);
    let (code, text) = on_terminal(pi(
        &w,
        &[
            "context",
            "stats",
            f.to_str().unwrap(),
            "--context-window",
            "1000",
        ],
    ));
    assert_eq!(code, 0, "{text}");
    assert!(!text.trim_start().starts_with('{'), "{text}");
    assert!(text.contains("1000") || text.contains("1,000"), "{text}");
    w.write(
        "proj/.pi/prompts/review.md",
        "---\ndescription: Review a change\n---\nReview $1\n",
    );
    let (code, text) = on_terminal(pi(&w, &["prompt", "list"]));
    assert_eq!(code, 0, "{text}");
    assert!(
        text.contains("review") && text.contains("Review a change"),
        "{text}"
    );
    assert!(!text.trim_start().starts_with('{'), "{text}");
    let piped = w.ok(&["prompt", "list"]);
    assert!(piped.trim_start().starts_with('{'), "{piped}");
}

/// `pi run` on a terminal: the answer streams to stdout, and stderr shows a line per tool
/// call (and a red one for a failed call) above the spinner.
#[test]
fn run_shows_tool_lines_on_a_terminal() {
    use crate::common::model_server::{ModelServer, Reply};
    use crate::run_support::{tool_calls, world};
    let server = ModelServer::start();
    let w = world(&server);
    server.push(tool_calls(&[
        ("c1", "bash", r#"{"command":"echo from the tool"}"#),
        ("c2", "read", r#"{"path":"missing.txt"}"#),
    ]));
    server.push(Reply::openai_text(&["All ", "done."]));
    let (code, text) = on_terminal(pi(&w, &["run", "-p", "go"]));
    assert_eq!(code, 0, "{text}");
    assert!(text.contains("→ bash echo from the tool"), "{text:?}");
    assert!(text.contains("→ read missing.txt"), "{text:?}");
    assert!(text.contains("✗ read: ENOENT"), "{text:?}");
    assert!(text.contains("All done."), "{text:?}");
    // Piped, stderr has no spinner or tool lines.
    server.push(tool_calls(&[("c3", "bash", r#"{"command":"true"}"#)]));
    server.push(Reply::openai_text(&["ok"]));
    let o = w
        .pi()
        .args(["run", "--no-session", "-p", "again"])
        .output()
        .unwrap();
    assert!(o.status.success());
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(!err.contains('→') && !err.contains('\u{1b}'), "{err:?}");
}
