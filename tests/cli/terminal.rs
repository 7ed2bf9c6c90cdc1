//! Human views on a real terminal: the commands with a human view print it when stdout is a
//! terminal (a pseudo-terminal made by the test), JSON when it is not, with colors unless
//! `NO_COLOR` is set.

use std::io::Read;
use std::os::fd::{FromRawFd, OwnedFd};
use std::path::PathBuf;
use std::process::{Command, Stdio};

use crate::common::*;

/// Runs `cmd` with stdout and stderr on a new pseudo-terminal; returns its exit status and
/// what it wrote there, with escape characters shown as `␛`.
pub(crate) fn on_terminal(cmd: Command) -> (i32, String) {
    on_terminal_sized(cmd, None)
}

/// [`on_terminal`] on a terminal of `(columns, rows)`.
fn on_terminal_sized(mut cmd: Command, size: Option<(u16, u16)>) -> (i32, String) {
    let (mut master, mut slave) = (0, 0);
    let ws = size.map(|(cols, rows)| libc::winsize {
        ws_row: rows,
        ws_col: cols,
        ws_xpixel: 0,
        ws_ypixel: 0,
    });
    let ws_ptr = ws
        .as_ref()
        .map_or(std::ptr::null(), |w| w as *const libc::winsize);
    // SAFETY: openpty fills in two descriptors, which are then owned below; the window size
    // is read only.
    let r = unsafe {
        libc::openpty(
            &mut master,
            &mut slave,
            std::ptr::null_mut(),
            std::ptr::null(),
            ws_ptr,
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
    let text = String::from_utf8_lossy(&out)
        .replace("\r\n", "\n")
        .replace('\u{1b}', "␛");
    (status, text)
}

/// `text` without its color codes (`␛[…m`).
pub(crate) fn uncolored(text: &str) -> String {
    let mut out = String::new();
    let mut rest = text;
    while let Some(i) = rest.find("␛[") {
        out.push_str(&rest[..i]);
        let after = &rest[i + "␛[".len()..];
        let end = after.find('m').expect("an unterminated color code");
        rest = &after[end + 1..];
    }
    out.push_str(rest);
    out
}

/// `text` without the spinner of `pi run`: each frame is drawn after `\r␛[2K` (which also
/// clears it) and runs to the next `\r`. How many frames there are depends on timing.
fn without_spinner(text: &str) -> String {
    const FRAMES: [char; 10] = ['⠋', '⠙', '⠹', '⠸', '⠼', '⠴', '⠦', '⠧', '⠇', '⠏'];
    let mut out = String::new();
    for piece in text.split('\r') {
        let piece = piece.strip_prefix("␛[2K").unwrap_or(piece);
        // A (coloured) spinner frame starts the spinner's line; what comes before it was
        // printed above the spinner, padded to the width of the terminal.
        let printed = match piece.find(FRAMES) {
            Some(i) => piece[..i].strip_suffix("␛[36m").unwrap_or(&piece[..i]),
            None => piece,
        };
        let trimmed = printed.trim_end_matches(' ');
        out.push_str(trimmed);
        if trimmed.len() < printed.len() {
            out.push('\n');
        }
    }
    out
}

fn pi(w: &World, args: &[&str]) -> Command {
    let mut c = w.std_cmd();
    c.env("COLUMNS", COLUMNS).args(args);
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

    // Colors on a terminal.
    let (code, text) = on_terminal(pi(&w, &["session", "tree", p]));
    assert_eq!(code, 0, "{text}");
    insta::assert_snapshot!(text, @"
    ␛[36m•␛[0m ␛[33mbfc84610␛[0m user: first question
      ␛[2m└─ ␛[0m␛[33m987bbcbf␛[0m ␛[2massistant: first answer␛[0m
    ␛[36m•␛[0m ␛[33m6f9fb04b␛[0m [custom: branch]
    ␛[36m•␛[0m ␛[33me8ea9e94␛[0m user: second try␛[1m  ← leaf␛[0m
    ");
    // Piped: JSON.
    let piped = w.ok(&["session", "tree", p]);
    assert!(serde_json::from_str::<serde_json::Value>(piped.lines().next().unwrap()).is_ok());
    // NO_COLOR: the same text without escapes.
    let mut c = pi(&w, &["session", "tree", p]);
    c.env("NO_COLOR", "1");
    let (_, plain) = on_terminal(c);
    assert_eq!(plain, uncolored(&text));
    assert!(!plain.contains('␛'), "{plain}");
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
    insta::assert_snapshot!(w.redact(&text), @"
    ␛[1m  MODIFIED     MSGS     SIZE    COST  ID        NAME / FIRST MESSAGE␛[0m
    ␛[1m*␛[0m just now        3     2 KB          ␛[33me4594b0f␛[0m  first question
    ");

    let (code, text) = on_terminal(pi(&w, &["session", "check", p]));
    assert_eq!(code, 0, "{text}");
    insta::assert_snapshot!(w.redact(&text), @"[SESSIONS]/2026-01-02T03-04-05-678Z_019b7ca9-8f2e-727e-8bef-3cafe4594b0f.jsonl: ok (4 entries)");
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
    insta::assert_snapshot!(text, @"
    pi: warning: reserveTokens 16384 is not below the context window (1000 tokens); using a quarter of the window (250); set compaction.reserveTokens below the window in settings.json (for one model: compaction.modelOverrides) to choose it and silence this
    ␛[1mcontext  ␛[0m leaf e8ea9e94 (3 entries on the path)
    ␛[1mmessages ␛[0m 2: 2 user
    ␛[1mtokens   ␛[0m 7 estimated (no usage reported on the path)
    ␛[1mestimate ␛[0m 7 (characters / 4, every message)
    ␛[1mwindow   ␛[0m 1,000 (--context-window) − reserve 250 (window/4) = threshold 750
    ␛[1mcompact  ␛[0m no: 7 ≤ 750 (0.7% of the window)
    ");
    w.write(
        "proj/.pi/prompts/review.md",
        "---\ndescription: Review a change\n---\nReview $1\n",
    );
    let (code, text) = on_terminal(pi(&w, &["prompt", "list"]));
    assert_eq!(code, 0, "{text}");
    insta::assert_snapshot!(text, @"␛[36m/review␛[0m  ␛[2mproject␛[0m  Review a change");
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
    // The answer comes late: the spinner shows the wait meanwhile.
    server
        .push(Reply::openai_text(&["All ", "done."]).delay(std::time::Duration::from_millis(500)));
    let (code, text) = on_terminal(pi(&w, &["run", "-p", "go"]));
    assert_eq!(code, 0, "{text}");
    assert!(text.contains(" waiting for mock/m1 "), "{text:?}");
    assert!(
        text.contains("\r␛[2K"),
        "the spinner redraws its line: {text:?}"
    );
    insta::assert_snapshot!(w.redact(&without_spinner(&text)), @"
    pi: new session [SESSIONS]/2026-01-02T03-04-05-678Z_019b7ca9-8f2e-727e-8bef-3cafe4594b0f.jsonl
    ␛[36m→ bash echo from the tool␛[0m
    ␛[36m→ read missing.txt␛[0m
    ␛[31m  ✗ read: ENOENT: no such file or directory, access '[PROJ]/missing.txt'␛[0m
    All done.
    pi: 320 tokens in, 50 out · $0.0000 · 0.0 s · session e4594b0f
    ");
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
    assert_eq!(err, "");
}

/// Escapes a file or a model could use to take over a terminal: a clipboard write (OSC 52),
/// a title change, a screen clear, a carriage return, a C1 CSI and a right-to-left override.
const HOSTILE: &str =
    "\u{1b}]52;c;cHduZWQ=\u{7}\u{1b}]0;owned\u{7}\u{1b}[2J\rfake\u{9b}1m\u{202e}gnp.exe";

/// What reached the terminal from `text` (as [`on_terminal`] shows it) besides pi's own
/// colors must be printable: no escape, BEL, carriage return, C1 or bidi control.
fn assert_printable(text: &str) {
    let plain = uncolored(text);
    for bad in ['␛', '\u{7}', '\r', '\u{9b}', '\u{202e}'] {
        assert!(
            !plain.contains(bad),
            "{bad:?} reached the terminal: {plain:?}"
        );
    }
}

/// `s` as a YAML double-quoted scalar, every character outside printable ASCII escaped.
fn yaml_quoted(s: &str) -> String {
    let mut out = String::from("\"");
    for c in s.chars() {
        match c {
            '"' | '\\' => {
                out.push('\\');
                out.push(c);
            }
            ' '..='~' => out.push(c),
            c => out.push_str(&format!("\\u{:04x}", u32::from(c))),
        }
    }
    out.push('"');
    out
}

/// Names, labels, messages, ids, directories and template descriptions are text from files:
/// every human view shows their control characters escaped, one row per record, and keeps
/// its own colors; JSON keeps the text exact.
#[test]
fn human_views_escape_text_from_files() {
    let w = World::new();
    let name = format!("evil\n019b7ca9  forged row {HOSTILE}");
    let f = PathBuf::from(w.ok(&["session", "new", "--name", &name]).trim());
    let p = f.to_str().unwrap();
    let out = jsonl(&w.ok_in(
        &["session", "append", p],
        &format!(
            "{}\n{}\n",
            user(&format!("hi {HOSTILE}")),
            assistant(HOSTILE)
        ),
    ));
    let first = out[0]["id"].as_str().unwrap().to_owned();
    w.ok(&["session", "label", p, &first, &format!("lbl {HOSTILE}")]);

    let (code, text) = on_terminal(pi(&w, &["session", "tree", p]));
    assert_eq!(code, 0, "{text}");
    assert_printable(&text);
    insta::assert_snapshot!(uncolored(&text), @r"
    • 25439588 [title: evil\n019b7ca9  forged row \u{1b}]52;c;cHduZWQ=\u{7}\u{1b}]0;owned\u{7}\u{1b}[2J…
    • d0d5127a [lbl \u{1b}]52;c;cHduZWQ=\u{7}\u{1b}]0;owned\u{7}\u{1b}[2J\rfake\u{9b}1m\u{202e}gnp.exe] user: hi \u…
    • 1ef156bb assistant: \u{1b}]52;c;cHduZWQ=\u{7}\u{1b}]0;owned\u{7}\u{1b}[2J fake\u{9b}1m\u{202e}gnp…
    • 37688dad [label: lbl \u{1b}]52;c;cHduZWQ=\u{7}\u{1b}]0;owned\u{7}\u{1b}[2J\rfake\u{9b}1m\…  ← leaf
    ");
    // JSON is exact.
    let roots = jsonl(&w.ok(&["session", "tree", p, "--json"]));
    assert_eq!(roots[1]["label"], format!("lbl {HOSTILE}").as_str());

    let (code, text) = on_terminal(pi(&w, &["session", "list"]));
    assert_eq!(code, 0, "{text}");
    assert_printable(&text);
    assert_eq!(text.lines().count(), 2, "a header and one row: {text}");
    insta::assert_snapshot!(w.redact(&uncolored(&text)), @r#"
      MODIFIED     MSGS     SIZE    COST  ID        NAME / FIRST MESSAGE
    * just now        2     2 KB          e4594b0f  evil\n019b7ca9  forged row \u{1b}]52;c;cHduZWQ=\u{7…
    "#);
    let listed = jsonl(&w.ok(&["session", "list"]));
    assert_eq!(listed[0]["name"], name.trim());

    // A crafted file: hostile ids in check's messages, a hostile directory in list --all.
    let bad = w.write(
        "bad.jsonl",
        format!(
            "{}\n{}\n",
            serde_json::json!({"type": "session", "version": 3, "id": "s",
                "timestamp": "2025-01-01T00:00:00Z", "cwd": format!("/tmp/{HOSTILE}")}),
            serde_json::json!({"type": "message", "id": format!("id{HOSTILE}"),
                "parentId": format!("gone{HOSTILE}"), "timestamp": "2025-01-01T00:00:00Z",
                "message": {"role": "user", "content": "x"}}),
        ),
    );
    let (code, text) = on_terminal(pi(&w, &["session", "check", bad.to_str().unwrap()]));
    assert_eq!(code, 1, "{text}");
    assert_printable(&text);
    insta::assert_snapshot!(w.redact(&uncolored(&text)), @r"
    [ROOT]/bad.jsonl:2: error[dangling-parent]: entry 'id\u{1b}]52;c;cHduZWQ=\u{7}\u{1b}]0;owned\u{7}\u{1b}[2J\rfake\u{9b}1m\u{202e}gnp.exe' has parent 'gone\u{1b}]52;c;cHduZWQ=\u{7}\u{1b}]0;owned\u{7}\u{1b}[2J\rfake\u{9b}1m\u{202e}gnp.exe', which does not exist
    [ROOT]/bad.jsonl: 1 error, 0 warnings (1 entries)
    ");
    let (code, text) = on_terminal(pi(&w, &["session", "tree", bad.to_str().unwrap()]));
    assert_eq!(code, 0, "{text}");
    assert_printable(&text);
    let sessions = w.agent().join("sessions/--tmp-x--");
    std::fs::create_dir_all(&sessions).unwrap();
    std::fs::copy(&bad, sessions.join("2025-01-01T00-00-00-000Z_s.jsonl")).unwrap();
    let (code, text) = on_terminal(pi(&w, &["session", "list", "--all"]));
    assert_eq!(code, 0, "{text}");
    assert_printable(&text);
    assert!(text.contains("/tmp/\\u{1b}]52;c;"), "{text}");

    // Prompt templates: a hostile file name, description and argument hint.
    w.write(
        "proj/.pi/prompts/ev\u{1b}[8mil.md",
        format!(
            "---\ndescription: {}\nargument-hint: {}\n---\nReview $1\n",
            yaml_quoted(&format!("Review {HOSTILE}")),
            yaml_quoted("<x\u{7}>")
        ),
    );
    let (code, text) = on_terminal(pi(&w, &["prompt", "list"]));
    assert_eq!(code, 0, "{text}");
    assert_printable(&text);
    insta::assert_snapshot!(uncolored(&text), @r"/ev\u{1b}[8mil <x\u{7}>  project  Review \u{1b}]52;c;cHduZWQ=\u{7}\u{1b}]0;owned\u{7}\u{1b}[2J fake…");
}

/// The answer streamed to a terminal has its control characters escaped, newlines and tabs
/// kept; so do the tool lines and the final error on stderr. Piped, the answer is data and
/// is written as the model sent it.
#[test]
fn run_escapes_model_text_on_a_terminal() {
    use crate::common::model_server::{ModelServer, Reply};
    use crate::run_support::{tool_calls, world};
    let server = ModelServer::start();
    let w = world(&server);
    let args = serde_json::json!({"path": format!("missing{HOSTILE}")}).to_string();
    server.push(tool_calls(&[("c1", "read", &args)]));
    server.push(Reply::openai_text(&[
        "Line one\n",
        "\tindented ",
        HOSTILE,
        "\nend",
    ]));
    let (code, text) = on_terminal(pi(&w, &["run", "--no-session", "-p", "go"]));
    assert_eq!(code, 0, "{text}");
    // The spinner redraws with CR; the answer's CR is escaped.
    assert!(text.contains("\\u{1b}[2J\\rfake"), "{text:?}");
    assert_printable(&without_spinner(&text));
    insta::assert_snapshot!(w.redact(&uncolored(&without_spinner(&text))), @r"
    → read missing\u{1b}]52;c;cHduZWQ=\u{7}\u{1b}]0;owned\u{7}\u{1b}[2J\rfake\u{9b}1m\u{202e}gnp.exe
      ✗ read: ENOENT: no such file or directory, access '[PROJ]/missing\u{1b}]52;c;cHduZWQ=\u{7}\u{1b}]0;owned\u{7}\u{1b}[2J\rfake\u{9b}1m\u{202e}gnp.exe'
    Line one
    	indented \u{1b}]52;c;cHduZWQ=\u{7}\u{1b}]0;owned\u{7}\u{1b}[2J\rfake\u{9b}1m\u{202e}gnp.exe
    end
    pi: 320 tokens in, 50 out · $0.0000 · 0.0 s · no session recorded
    ");

    // A provider error with escapes in its message.
    server.push(Reply::status(
        400,
        &serde_json::json!({"error": {"message": format!("bad request {HOSTILE}")}}).to_string(),
    ));
    let (code, text) = on_terminal(pi(&w, &["run", "--no-session", "-p", "go"]));
    assert_eq!(code, 1, "{text}");
    assert_printable(&without_spinner(&text));
    assert!(text.contains("bad request \\u{1b}]52;c;"), "{text}");

    // Piped: the answer as it came.
    server.push(Reply::openai_text(&["raw ", HOSTILE]));
    let o = w
        .pi()
        .args(["run", "--no-session", "-p", "again"])
        .output()
        .unwrap();
    assert!(o.status.success());
    assert_eq!(
        String::from_utf8_lossy(&o.stdout),
        format!("raw {HOSTILE}\n")
    );
}

/// A session for `pi session show` on a terminal: a hostile name and message, a long tool
/// output, a wide line.
fn conversation(w: &World) -> PathBuf {
    let f = w.new_session();
    let p = f.to_str().unwrap();
    w.ok(&["session", "name", p, "evil\u{1b}]0;owned\u{7}name"]);
    let call = serde_json::json!({
        "role": "assistant",
        "content": [
            {"type": "text", "text": "word ".repeat(30)},
            {"type": "toolCall", "id": "c1", "name": "bash", "arguments": {"command": "seq 20"}}
        ],
        "api": "anthropic-messages", "provider": "anthropic", "model": "claude-test",
        "usage": {"input": 10, "output": 5, "cacheRead": 0, "cacheWrite": 0, "cost": {"total": 0.001}},
        "stopReason": "toolUse"
    });
    let result = serde_json::json!({
        "role": "toolResult", "toolCallId": "c1", "toolName": "bash",
        "content": [{"type": "text", "text": (1..=20).map(|i| i.to_string()).collect::<Vec<_>>().join("\n")}],
        "isError": false
    });
    w.ok_in(
        &["session", "append", p],
        &format!(
            "{}\n{call}\n{result}\n",
            user("clear \u{1b}[2J screen\nsecond line")
        ),
    );
    f
}

#[test]
fn show_is_coloured_wrapped_escaped_and_paged_on_a_terminal() {
    let w = World::new();
    let f = conversation(&w);
    let p = f.to_str().unwrap();
    // Wrapped to the terminal's own width (no COLUMNS), escaped, coloured; 40 rows: fits,
    // so no pager even though PAGER is set.
    let mut c = w.std_cmd();
    c.args(["session", "show", p])
        .env("PAGER", "sed s/^/PAGED:/");
    let (code, text) = on_terminal_sized(c, Some((60, 40)));
    assert_eq!(code, 0, "{text}");
    assert!(!text.contains("PAGED:"), "{text}");
    assert!(text.contains("evil\\u{1b}]0;owned\\u{7}name"), "{text}");
    assert!(text.contains("clear \\u{1b}[2J screen"), "{text}");
    assert!(text.contains("␛[36m"), "coloured: {text}");
    let plain = uncolored(&text);
    assert!(plain.lines().all(|l| l.chars().count() <= 60), "{plain}");
    assert!(
        plain.contains("  second line"),
        "newlines are kept: {plain}"
    );
    insta::assert_snapshot!(w.redact(&plain), @r#"
    evil\u{1b}]0;owned\u{7}name
    [PROJ] · 2026-01-02 03:04:05 UTC · session
      019b7ca9-8f2e-727e-8bef-3cafe4594b0f

    · session named "evil\u{1b}]0;owned\u{7}name" 2026-01-02
      03:04:05 · bfc84610

    user 03:04:05 · 382ff84c
      clear \u{1b}[2J screen
      second line

    assistant claude-test 03:04:05 · 6d1db36c
      word word word word word word word word word word word
      word word word word word word word word word word word
      word word word word word word word word 
      → bash: seq 20
        1
        2
        3
        4
        5
        … 15 more lines (--full shows them)
      10 in · 5 out · $0.0010

    total: 1 user message · 1 assistant message · 1 tool call ·
      10 in · 5 out · $0.0010
    models: anthropic/claude-test
    "#);
    // Longer than the screen: through $PAGER, from the first line.
    let mut c = w.std_cmd();
    c.args(["session", "show", p])
        .env("PAGER", "sed s/^/PAGED:/");
    let (code, text) = on_terminal_sized(c, Some((60, 8)));
    assert_eq!(code, 0);
    let paged = uncolored(&text);
    assert!(paged.lines().count() > 8);
    assert!(paged.lines().all(|l| l.starts_with("PAGED:")), "{paged}");
    // --no-pager, or an empty PAGER: printed as it is.
    for (flag, pager) in [(Some("--no-pager"), "sed s/^/PAGED:/"), (None, "")] {
        let mut c = w.std_cmd();
        c.args(["session", "show", p])
            .args(flag)
            .env("PAGER", pager);
        let (_, text) = on_terminal_sized(c, Some((60, 8)));
        assert!(
            !text.contains("PAGED:") && text.contains("total:"),
            "{text}"
        );
    }
    // The tree follows the same rule.
    let mut c = w.std_cmd();
    c.args(["session", "tree", p])
        .env("PAGER", "sed s/^/PAGED:/");
    let (_, text) = on_terminal_sized(c, Some((60, 3)));
    assert!(
        uncolored(&text).lines().all(|l| l.starts_with("PAGED:")),
        "{text}"
    );
    // Markdown on a terminal: no colours, no escapes added, no wrapping.
    let mut c = w.std_cmd();
    c.args(["session", "show", p, "--format", "md", "--no-pager"]);
    let (_, md) = on_terminal_sized(c, Some((60, 40)));
    assert!(
        md.contains(&"word ".repeat(30).trim_end().to_owned()),
        "{md}"
    );
}

#[test]
fn tree_uses_the_terminals_width() {
    let w = World::new();
    let f = conversation(&w);
    let mut c = w.std_cmd();
    c.args(["session", "tree", f.to_str().unwrap()]);
    let (_, text) = on_terminal_sized(c, Some((50, 40)));
    let plain = uncolored(&text);
    assert!(plain.lines().all(|l| l.chars().count() <= 50), "{plain}");
    assert!(plain.lines().any(|l| l.chars().count() >= 45), "{plain}");
}

/// On a terminal a run ends with one line on stderr: tokens in and out, cost, time (0 on
/// the tests' fixed clock) and the session's short id.
#[test]
fn run_ends_with_a_usage_line_on_a_terminal() {
    use crate::common::model_server::ModelServer;
    use crate::run_support::{answer_with_usage, world};
    let server = ModelServer::start();
    let w = world(&server);
    server.push(answer_with_usage("Hi.", 1234));
    let (code, text) = on_terminal(pi(&w, &["run", "-p", "go"]));
    assert_eq!(code, 0, "{text}");
    let last = without_spinner(&text);
    let last = last.trim_end().lines().last().unwrap().to_owned();
    insta::assert_snapshot!(uncolored(&last), @"
    pi: 1,234 tokens in, 10 out · $0.0000 · 0.0 s · session e4594b0f
    ");
    let (code, text) = on_terminal(pi(&w, &["run", "--no-session", "-p", "go"]));
    assert_eq!(code, 1, "no answer left: {text}");
    assert!(text.contains("no session recorded"), "{text}");
}

/// `pi compact --all` on a terminal: a bar with sessions done of all, and the session at
/// hand.
#[test]
fn compact_all_shows_a_bar_on_a_terminal() {
    use crate::common::model_server::{ModelServer, Reply};
    use crate::run_support::{settings, world};
    let server = ModelServer::start();
    let w = world(&server);
    settings(
        &w,
        serde_json::json!({"compaction": {"keepRecentTokens": 15}}),
    );
    let dir = w.agent().join("sessions").join("--tmp-proj--");
    std::fs::create_dir_all(&dir).unwrap();
    for name in ["a", "b"] {
        std::fs::copy(
            fixture("compact/cases/co-c1.jsonl"),
            dir.join(format!("{name}.jsonl")),
        )
        .unwrap();
    }
    let slow = std::time::Duration::from_millis(400);
    server.push(Reply::openai_text(&["one"]).delay(slow));
    server.push(Reply::openai_text(&["two"]).delay(slow));
    let (code, text) = on_terminal(pi(&w, &["compact", "--all"]));
    assert_eq!(code, 0, "{text}");
    assert!(text.contains("  0/2 "), "{text:?}");
    assert!(text.contains("  1/2 "), "{text:?}");
    assert!(
        text.contains(" 00000001 "),
        "the session's short id: {text:?}"
    );
    assert!(text.contains("\"type\":\"summary\""), "{text:?}");
}

/// Wide characters (CJK, emoji) take two columns and combining marks none: the views cut
/// their lines by columns, not characters.
#[test]
fn wide_characters_fit_the_terminal_width() {
    use unicode_width::UnicodeWidthStr;
    let w = World::new();
    let f = w.new_session();
    let p = f.to_str().unwrap();
    let texts = [
        "日本語のテキストがとても長い行になってしまうとどうなるでしょうか、確かめます",
        "🎉🎊🎈 party emoji 🎉🎊🎈 everywhere 🎉🎊🎈 in this long message 🎉🎊🎈",
        "e\u{301}e\u{301}e\u{301} combining marks e\u{301}e\u{301}e\u{301} take no column of their own, padding it out",
    ];
    let lines: Vec<String> = texts.iter().map(|t| user(t)).collect();
    let ids = jsonl(&w.ok_in(&["session", "append", p], &lines.join("\n")));
    // A side branch, so that the branch listing has two tips.
    w.ok(&["session", "branch", p, ids[0]["id"].as_str().unwrap()]);
    w.ok_in(
        &["session", "append", p],
        &user("中文的分支消息也很长很长很长很长很长很长很长很长"),
    );
    w.ok(&[
        "session",
        "name",
        p,
        "名前のあるセッション 🎉 with a long name",
    ]);
    for cols in [40u16, 60] {
        // The list's fixed columns take 46 of them: it is checked at 60.
        let list: &[&str] = if cols >= 60 {
            &["session", "list"]
        } else {
            &["session", "tree", p]
        };
        for args in [
            &["session", "tree", p][..],
            list,
            &["session", "branch", "-s", p],
            &["session", "show", p, "--no-pager"],
        ] {
            let mut c = w.std_cmd();
            c.args(args);
            let (code, text) = on_terminal_sized(c, Some((cols, 40)));
            assert_eq!(code, 0, "{args:?}: {text}");
            let plain = uncolored(&text);
            for line in plain.lines() {
                assert!(
                    line.width() <= cols as usize,
                    "{args:?} at {cols} columns: {} columns in {line:?}",
                    line.width()
                );
            }
            assert!(plain.lines().count() >= 2, "{args:?}: {plain}");
        }
    }
}

#[test]
fn an_html_page_is_not_written_onto_a_terminal() {
    let w = World::new();
    let f = w.new_session();
    let p = f.to_str().unwrap();
    w.ok_in(&["session", "append", p], &user("hello"));
    let mut c = w.std_cmd();
    c.args(["session", "export", p]);
    let (code, text) = on_terminal(c);
    assert_eq!(code, 2, "{text}");
    assert!(text.contains("not for a terminal"), "{text}");
    assert!(!text.contains("<html"), "{text}");
    // Markdown is fine on a terminal, and `-o -` prints the page anyway.
    let mut c = w.std_cmd();
    c.args(["session", "export", p, "--format", "md"]);
    let (code, text) = on_terminal(c);
    assert_eq!(code, 0, "{text}");
    assert!(text.contains("hello"), "{text}");
    let mut c = w.std_cmd();
    c.args(["session", "export", p, "-o", "-"]);
    let (code, text) = on_terminal(c);
    assert_eq!(code, 0, "{text}");
    assert!(text.contains("<html"), "{text}");
    assert!(!w.path("-").exists(), "-o - is stdout, not a file named -");
}
