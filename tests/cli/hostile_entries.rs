//! Entries that `serde_json` refuses and JavaScript's `JSON.parse` reads (lone surrogate
//! escapes, numbers beyond f64, invalid UTF-8): every view reads them, and redaction never
//! passes one through unread (issue 30).

use crate::common::*;

const GITHUB: &str = "ghp_abcdefghijklmnopqrstuvwxyz0123456789";
const ANTHROPIC: &str = "sk-ant-api03-abcdefghijklmnopqrstuvwxyz0123";
const SLACK: &str = "xoxb-1234567890-abcdef";

/// The issue's reproducer: a lone surrogate in one message, `1e999` in another, `1e400` in
/// a custom entry's data, `\ud800` in a key, and a secret as a key.
fn hostile(w: &World) -> String {
    let s = w.new_session();
    let s = s.to_str().unwrap().to_owned();
    let lines = [
        format!(r#"{{"role":"user","content":"token {GITHUB} \ud83d"}}"#),
        format!(r#"{{"role":"user","content":"key {ANTHROPIC}","timestamp":1e999}}"#),
        format!(r#"{{"type":"custom","customType":"x","data":{{"n":1e400,"note":"{GITHUB}"}}}}"#),
        format!(r#"{{"type":"custom","customType":"y","data":{{"k\ud800":"{SLACK}"}}}}"#),
        format!(r#"{{"type":"custom","customType":"z","data":{{"{ANTHROPIC}":1e999}}}}"#),
    ];
    w.ok_in(&["session", "append", &s], &lines.join("\n"));
    s
}

fn no_secret(text: &str) {
    for secret in [GITHUB, ANTHROPIC, SLACK] {
        assert!(!text.contains(secret), "{secret} left in:\n{text}");
    }
}

#[test]
fn redaction_reads_every_string_of_every_line() {
    let w = World::new();
    let s = hostile(&w);
    let o = w
        .pi()
        .args(["session", "export", &s, "--format", "jsonl", "--redact"])
        .args(["-o", "shared.jsonl"])
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.contains("redacted 5 secrets: 2 anthropic-key, 2 github-token, 1 slack-token"),
        "{err}"
    );
    let shared = std::fs::read_to_string(w.proj().join("shared.jsonl")).unwrap();
    no_secret(&shared);
    // What was not redacted is kept byte for byte: the huge numbers, the lone surrogate
    // escape of a key, the structure.
    assert!(shared.contains(r#""timestamp":1e999}"#), "{shared}");
    assert!(
        shared.contains(r#"{"n":1e400,"note":"[redacted]"}"#),
        "{shared}"
    );
    assert!(shared.contains(r#"{"k\ud800":"[redacted]"}"#), "{shared}");
    assert!(shared.contains(r#"{"[redacted]":1e999}"#), "{shared}");
    assert_eq!(shared.lines().count(), 6);
    // The redacted file is still a session pi reads.
    w.ok(&[
        "session",
        "check",
        &w.proj().join("shared.jsonl").to_string_lossy(),
    ]);
    // The views redact the same entries.
    for format in ["md", "html"] {
        let page = w.ok(&["session", "export", &s, "--format", format, "--redact"]);
        no_secret(&page);
        assert!(page.contains("[redacted]"), "{page}");
    }
}

#[test]
fn views_and_search_show_entries_json_parse_reads() {
    let w = World::new();
    let s = hostile(&w);
    let show = w.ok(&["session", "show", &s]);
    assert!(show.contains(&format!("token {GITHUB} \u{fffd}")), "{show}");
    assert!(show.contains(&format!("key {ANTHROPIC}")), "{show}");
    assert!(show.contains("2 user messages"), "{show}");
    for format in ["md", "html"] {
        let page = w.ok(&["session", "export", &s, "--format", format]);
        assert!(
            page.contains(GITHUB) && page.contains(ANTHROPIC),
            "{format}:\n{page}"
        );
    }
    let hits = jsonl(&w.ok(&["session", "search", "sk-ant-api03"]));
    assert_eq!(hits.len(), 1, "{hits:?}");
    assert_eq!(hits[0]["role"], "user");
    let hits = jsonl(&w.ok(&["session", "search", "ghp_abc"]));
    assert!(!hits.is_empty(), "{hits:?}");
}

#[test]
fn rpc_reads_commands_as_json_parse_does_and_answers_bad_ones_by_id() {
    use crate::common::model_server::{ModelServer, Reply};
    use crate::run_rpc::Client;
    let server = ModelServer::start();
    let w = crate::run_support::world(&server);
    server.push(Reply::openai_text(&["fine"]));
    let mut c = Client::start(&w, &[]);
    // A prompt holding a lone surrogate is accepted, as the reference accepts it.
    c.send_raw(b"{\"id\":\"p1\",\"type\":\"prompt\",\"message\":\"hi \\ud83d there\"}\n");
    // (Waiting for any response, not for this id: one without it must fail, not hang.)
    let r = c.until(|v| v["type"] == "response");
    assert_eq!(r["id"], "p1", "{r}");
    assert_eq!(r["command"], "prompt", "{r}");
    assert_eq!(r["success"], true, "{r}");
    c.agent_end();
    // A line that is not JSON is still answered under its id when the id comes first ...
    c.send_raw(b"{\"id\":\"bad1\",\"type\":\"get_state\",}\n");
    let r = c.until(|v| v["command"] == "parse");
    assert_eq!(r["id"], "bad1");
    assert_eq!(r["success"], false);
    let e = r["error"].as_str().unwrap();
    assert!(e.starts_with("Failed to parse command: expected"), "{e}");
    assert!(e.contains("column 33"), "{e}");
    // ... a number id too, and one that has no type.
    c.send_raw(b"{\"id\":7,\"type\":\"get_state\" \"x\"}\n");
    let r = c.until(|v| v["command"] == "parse");
    assert_eq!(r["id"], 7);
    c.send_raw(b"{\"id\":\"nt\"}\n");
    let r = c.until(|v| v["command"] == "parse");
    assert_eq!(r["id"], "nt");
    assert_eq!(r["success"], false);
    let (code, _) = c.close();
    assert_eq!(code, 0);
}

/// A session whose second entry holds bytes that are not UTF-8 (written by another program:
/// `append` refuses them).
fn not_utf8(w: &World) -> String {
    use std::io::Write;
    let s = w.new_session();
    let first = user("before");
    w.ok_in(&["session", "append", s.to_str().unwrap()], &first);
    let mut f = std::fs::OpenOptions::new().append(true).open(&s).unwrap();
    f.write_all(
        b"{\"type\":\"message\",\"id\":\"bad00001\",\"parentId\":null,\"timestamp\":\"2026-01-02T03:04:05.678Z\",\"message\":{\"role\":\"user\",\"content\":\"caf\xe9 \xff\xfe ok\"}}\n",
    )
    .unwrap();
    s.to_str().unwrap().to_owned()
}

#[test]
fn check_names_bytes_that_are_not_utf8_and_log_never_prints_them() {
    let w = World::new();
    let s = not_utf8(&w);
    let o = w.pi().args(["session", "check", &s]).output().unwrap();
    assert_eq!(o.status.code(), Some(1), "{o:?}");
    let recs = jsonl(&String::from_utf8(o.stdout).unwrap());
    assert_eq!(recs.len(), 1, "{recs:?}");
    assert_eq!(recs[0]["kind"], "invalid-utf8");
    assert_eq!(recs[0]["severity"], "error");
    assert_eq!(recs[0]["line"], 3);
    assert_eq!(recs[0]["column"], 129);
    assert!(
        recs[0]["message"].as_str().unwrap().contains("(e9)"),
        "{recs:?}"
    );
    // Every way log prints entries gives valid UTF-8, the bytes read as U+FFFD.
    for extra in [
        &[][..],
        &["--all"],
        &["--reverse"],
        &["--type", "message,nosuch"],
        &["--filter", "."],
    ] {
        let o = w
            .pi()
            .args(["session", "log", &s])
            .args(extra)
            .output()
            .unwrap();
        assert!(o.status.success(), "{extra:?}: {o:?}");
        let text =
            String::from_utf8(o.stdout).unwrap_or_else(|e| panic!("{extra:?}: not UTF-8: {e}"));
        let recs = jsonl(&text);
        let bad = recs.iter().find(|r| r["id"] == "bad00001").unwrap();
        assert_eq!(
            bad["message"]["content"], "caf\u{fffd} \u{fffd}\u{fffd} ok",
            "{extra:?}"
        );
    }
}

/// A process id that is free: a child that has exited and been waited for.
fn dead_pid() -> u32 {
    let mut child = std::process::Command::new("true").spawn().unwrap();
    let pid = child.id();
    child.wait().unwrap();
    pid
}

#[test]
fn temporaries_of_killed_writers_are_reported_and_collected() {
    let w = World::new();
    let s = w.new_session();
    let dir = s.parent().unwrap();
    let name = s.file_name().unwrap().to_string_lossy().into_owned();
    // What `kill -9` during a fork or a migration leaves, and a write still going on.
    let dead = dir.join(format!(".{name}.{}.0.tmp", dead_pid()));
    let live = dir.join(format!(".{name}.{}.0.tmp", std::process::id()));
    std::fs::write(&dead, "{\"type\":\"session\"").unwrap();
    std::fs::write(&live, "{").unwrap();
    let o = w
        .pi()
        .args(["session", "check", s.to_str().unwrap()])
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(0), "a note is not an error: {o:?}");
    let recs = jsonl(&String::from_utf8(o.stdout).unwrap());
    assert_eq!(recs.len(), 1, "{recs:?}");
    assert_eq!(recs[0]["kind"], "stale-temporary");
    assert_eq!(recs[0]["severity"], "note");
    assert_eq!(recs[0]["path"], dead.to_str().unwrap());
    // gc --dry-run lists it and leaves it; gc removes it, not the one being written.
    let recs = jsonl(&w.ok(&["session", "gc", "--empty", "--dry-run", "--delete"]));
    let t: Vec<_> = recs.iter().filter(|r| r["temporary"] == true).collect();
    assert_eq!(t.len(), 1, "{recs:?}");
    assert_eq!(t[0]["path"], dead.to_str().unwrap());
    assert_eq!(t[0]["bytes"], 17);
    assert_eq!(recs.last().unwrap()["temporaries"], 1);
    assert!(dead.exists());
    w.ok(&["session", "gc", "--older-than", "1000w"]);
    assert!(!dead.exists());
    assert!(live.exists());
    assert!(s.exists());
}
