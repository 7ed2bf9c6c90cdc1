//! What writers accept and where they write: large piped batches located exactly, the leaf
//! found past very long last lines, exclusive `session new --id`, UTF-8 input (and lone
//! surrogate escapes handled by every reader), and empty session arguments refused.

use std::path::Path;
use std::process::{Output, Stdio};

use serde_json::{Value, json};

use crate::common::*;

fn lines(path: &Path) -> Vec<Value> {
    jsonl(&std::fs::read_to_string(path).unwrap())
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

/// Asserts exit status `code`, showing the output otherwise.
fn status(o: &Output, code: i32) {
    assert_eq!(
        o.status.code(),
        Some(code),
        "stdout: {}\nstderr: {}",
        stdout(o),
        stderr(o)
    );
}

// 4. Large batches: every record is placed, and errors are located exactly.

#[test]
fn a_large_piped_log_is_copied_whole_and_late_errors_are_located_exactly() {
    let w = World::new();
    let a = w.new_session();
    let a = a.to_str().unwrap();
    // Messages of several shapes, some pretty-printed over several lines, some with
    // characters of several bytes (columns count characters).
    let mut input = String::new();
    for n in 0..4000 {
        let text = format!("message {n} — ünïcödé {}", "x".repeat(n % 2000));
        match n % 4 {
            0 => input.push_str(&user(&text)),
            1 => input.push_str(&assistant(&text)),
            2 => input.push_str(
                &serde_json::to_string_pretty(&json!({"role": "user", "content": text})).unwrap(),
            ),
            _ => input.push_str(&format!(
                "   {}  {}",
                user(&text),
                json!({"type": "custom", "customType": "k", "data": {"n": n}})
            )),
        }
        input.push('\n');
    }
    let written = jsonl(&w.ok_in(&["session", "append", a], &input));
    assert_eq!(written.len(), 5000);
    // `log A | append B` copies the conversation: same types and bodies, chained anew.
    let log = w.ok(&["session", "log", a]);
    let b = w.new_session();
    let b = b.to_str().unwrap();
    let copied = jsonl(&w.ok_in(&["session", "append", b], &log));
    let original = jsonl(&log);
    assert_eq!(copied.len(), original.len());
    for (k, (c, o)) in copied.iter().zip(&original).enumerate() {
        assert_eq!(c["type"], o["type"]);
        assert_eq!(c["message"], o["message"]);
        assert_eq!(c["data"], o["data"]);
        let parent = if k == 0 {
            Value::Null
        } else {
            copied[k - 1]["id"].clone()
        };
        assert_eq!(c["parentId"], parent);
    }
    // A bad value after thousands of good ones: its exact line and column, nothing written.
    let before = std::fs::read(b).unwrap();
    let lines_before = input.lines().count();
    let bad = format!(
        "{input}{}\n{{\"type\":\"custom\",\"customType\":\"üü\"}} {{\"role\":\"user\",\"content\":42}}\n",
        user("ok")
    );
    let o = w
        .pi()
        .args(["session", "append", b])
        .write_stdin(bad)
        .output()
        .unwrap();
    status(&o, 2);
    let want = format!("pi: error: stdin:{}:62: content must be", lines_before + 2);
    assert!(stderr(&o).starts_with(&want), "{}", stderr(&o));
    // ... and invalid JSON at the very end.
    let torn = format!("{input}{{\"role\":\"user\",\n\"content\":\"é\"");
    let o = w
        .pi()
        .args(["session", "append", b])
        .write_stdin(torn)
        .output()
        .unwrap();
    status(&o, 2);
    let want = format!(
        "pi: error: stdin:{}:14: invalid JSON: the input ends inside the value that starts at {}:1",
        lines_before + 2,
        lines_before + 1
    );
    assert!(stderr(&o).starts_with(&want), "{}", stderr(&o));
    assert_eq!(std::fs::read(b).unwrap(), before);
}

// 5. The leaf past a very long last line.

#[test]
fn appends_find_the_leaf_past_very_long_last_lines() {
    let w = World::new();
    let s = w.new_session();
    let sp = s.to_str().unwrap();
    let first = jsonl(&w.ok_in(&["session", "append", sp], &user("first")));
    // A last entry of 3 MB (many times the block the leaf is searched in).
    let big = "z".repeat(3 << 20);
    let long = jsonl(&w.ok_in(&["session", "append", sp], &user(&big)));
    assert_eq!(long[0]["parentId"], first[0]["id"]);
    let next = jsonl(&w.ok_in(&["session", "append", sp], &user("after the long one")));
    assert_eq!(next[0]["parentId"], long[0]["id"]);
    // A torn line of 2 MB (a crash mid-write) is not an entry: the one before it is the leaf.
    let mut f = std::fs::OpenOptions::new().append(true).open(&s).unwrap();
    std::io::Write::write_all(
        &mut f,
        format!(
            "{{\"type\":\"message\",\"id\":\"torn0001\",\"parentId\":\"x\",\"message\":{{\"role\":\"user\",\"content\":\"{}",
            "q".repeat(2 << 20)
        )
        .as_bytes(),
    )
    .unwrap();
    drop(f);
    let after = jsonl(&w.ok_in(&["session", "append", sp], &user("after the torn one")));
    assert_eq!(after[0]["parentId"], next[0]["id"]);
    // A long line of another kind (valid JSON, not an entry) is passed over as well.
    let mut f = std::fs::OpenOptions::new().append(true).open(&s).unwrap();
    std::io::Write::write_all(
        &mut f,
        format!("[\"{}\"]\n", "r".repeat(1 << 20)).as_bytes(),
    )
    .unwrap();
    drop(f);
    let last = jsonl(&w.ok_in(&["session", "append", sp], &user("last")));
    assert_eq!(last[0]["parentId"], after[0]["id"]);
    assert_eq!(
        w.ok(&["session", "log", sp, "-n", "1", "--filter", ".id", "-r"])
            .trim(),
        last[0]["id"].as_str().unwrap()
    );
}

// 7. `session new --id` is exclusive.

#[test]
fn parallel_session_new_with_one_id_makes_exactly_one_file() {
    let w = World::new();
    w.real_clock("creators a millisecond apart name their files differently, as in real use");
    for id in ["same-id", "other-id", "third"] {
        let children: Vec<_> = (0..12)
            .map(|_| {
                w.std_cmd()
                    .args(["session", "new", "--id", id])
                    .stdout(Stdio::piped())
                    .stderr(Stdio::piped())
                    .spawn()
                    .unwrap()
            })
            .collect();
        let outs: Vec<Output> = children
            .into_iter()
            .map(|c| c.wait_with_output().unwrap())
            .collect();
        let winners: Vec<&Output> = outs.iter().filter(|o| o.status.success()).collect();
        assert_eq!(winners.len(), 1, "{id}: exactly one creator succeeds");
        let path = stdout(winners[0]).trim().to_owned();
        for o in outs.iter().filter(|o| !o.status.success()) {
            status(o, 1);
            let err = stderr(o);
            assert!(
                err.starts_with(&format!(
                    "pi: error: session id \"{id}\" is already used by {path}\n"
                )),
                "{err}"
            );
        }
        let dir = w.agent().join("sessions");
        let files: Vec<_> = walk_files(&dir)
            .into_iter()
            .filter(|p| p.to_string_lossy().ends_with(&format!("_{id}.jsonl")))
            .collect();
        assert_eq!(files.len(), 1, "{files:?}");
        // No temporary file is left behind either.
        assert!(
            walk_files(&dir)
                .iter()
                .all(|p| p.extension().is_some_and(|e| e == "jsonl")),
            "{:?}",
            walk_files(&dir)
        );
    }
    // Later, too: the id stays taken (exit 1, naming the file).
    let o = w
        .pi()
        .args(["session", "new", "--id", "third"])
        .output()
        .unwrap();
    status(&o, 1);
    assert!(stderr(&o).contains("is already used by "), "{}", stderr(&o));
}

fn walk_files(dir: &Path) -> Vec<std::path::PathBuf> {
    let mut out = Vec::new();
    for e in std::fs::read_dir(dir).unwrap() {
        let p = e.unwrap().path();
        if p.is_dir() {
            out.extend(walk_files(&p));
        } else {
            out.push(p);
        }
    }
    out
}

// 9. UTF-8 input; lone surrogate escapes.

#[test]
fn input_that_is_not_utf8_is_rejected_where_it_is() {
    let w = World::new();
    let s = w.new_session();
    let before = std::fs::read(&s).unwrap();
    let cases: [(&[u8], &str); 3] = [
        (
            b"{\"role\":\"user\",\"content\":\"fine\"}\n{\"role\":\"user\",\"content\":\"caf\xe9\"}\n",
            "stdin:2:30: invalid UTF-8: byte 0xe9",
        ),
        (
            b"{\"role\":\"user\",\"content\":\"fine\"}\n\xff\xfe{\"role\":\"user\",\"content\":\"x\"}\n",
            "stdin:2:1: invalid UTF-8: byte 0xff",
        ),
        (
            b"{\"type\":\"custom\",\"customType\":\"k\",\"data\":{\"\xc3\":1}}",
            "stdin:1:44: invalid UTF-8",
        ),
    ];
    for (input, want) in cases {
        let o = w
            .pi()
            .args(["session", "append", s.to_str().unwrap()])
            .write_stdin(input)
            .output()
            .unwrap();
        status(&o, 2);
        assert!(
            stderr(&o).starts_with(&format!("pi: error: {want}")),
            "{}",
            stderr(&o)
        );
        assert_eq!(std::fs::read(&s).unwrap(), before, "nothing is written");
    }
    w.ok(&["session", "check", s.to_str().unwrap()]);
}

/// A session holding lone surrogate escapes everywhere text goes (as `JSON.stringify`
/// writes them for a string cut inside a UTF-16 pair).
/// Returns the file and the ids of the entries written (serde_json cannot read such lines).
fn surrogate_session(w: &World) -> (std::path::PathBuf, Vec<String>) {
    let s = w.new_session();
    let input = [
        r#"{"type":"model_change","provider":"anthropic","modelId":"claude-sonnet-4-5"}"#,
        r#"{"type":"message","id":"u1","message":{"role":"user","content":"cut \ud83d here \udc00 and \ud800"}}"#,
        r#"{"role":"assistant","content":[{"type":"text","text":"ans\udfffwer"},{"type":"thinking","thinking":"\ud800"}],"api":"anthropic-messages","provider":"anthropic","model":"claude-sonnet-4-5","usage":{"input":1,"output":1,"cacheRead":0,"cacheWrite":0},"stopReason":"stop"}"#,
        r#"{"type":"label","targetId":"u1","label":"lab\ud800el"}"#,
        r#"{"type":"session_info","name":"na\udc01me"}"#,
        r#"{"type":"custom","customType":"c\ud800","data":{"\ud800key":["\udbff"]}}"#,
        r#"{"type":"custom_message","customType":"note","content":"\ud800 note","display":true}"#,
        r#"{"role":"user","content":[{"type":"text","text":"and a pair \ud83d\ude00"}]}"#,
    ]
    .join("\n");
    let sp = s.to_str().unwrap();
    let written = w.ok_in(&["session", "append", sp], &input);
    let ids = w.ok(&["session", "log", sp, "--filter", ".id", "-r"]);
    assert_eq!(written.lines().count(), 8);
    (s, ids.lines().map(str::to_owned).collect())
}

#[test]
fn lone_surrogate_escapes_are_kept_and_every_reader_handles_them() {
    let w = World::new();
    let (s, ids) = surrogate_session(&w);
    let sp = s.to_str().unwrap();
    // Written as given: the escapes themselves, byte for byte.
    let raw = std::fs::read_to_string(&s).unwrap();
    assert!(
        raw.contains(r#""content":"cut \ud83d here \udc00 and \ud800""#),
        "{raw}"
    );
    assert!(raw.contains(r#""data":{"\ud800key":["\udbff"]}"#), "{raw}");
    // --filter sees each lone surrogate as U+FFFD, the replacement character; pairs stay.
    let f = w.ok(&[
        "session",
        "log",
        sp,
        "--type",
        "message",
        "--filter",
        ".message.content",
    ]);
    assert_eq!(
        f.lines().collect::<Vec<_>>(),
        [
            "\"cut \u{fffd} here \u{fffd} and \u{fffd}\"",
            "[{\"type\":\"text\",\"text\":\"ans\u{fffd}wer\"},{\"type\":\"thinking\",\"thinking\":\"\u{fffd}\"}]",
            "[{\"type\":\"text\",\"text\":\"and a pair 😀\"}]",
        ]
    );
    let keys = w.ok(&[
        "session",
        "log",
        sp,
        "--type",
        "custom",
        "--filter",
        ".data | keys[]",
        "-r",
    ]);
    assert_eq!(keys, "\u{fffd}key\n");
    // Without a filter, the entries are printed exactly as stored.
    let log = w.ok(&["session", "log", sp]);
    assert_eq!(
        log.lines().collect::<Vec<_>>(),
        raw.lines().skip(1).collect::<Vec<_>>()
    );
    // Every reader and writer works on the file, with nothing to complain about.
    assert_eq!(ids.len(), 8);
    let (user, leaf) = (ids[1].clone(), ids[7].clone());
    let runs: Vec<Vec<&str>> = vec![
        vec!["session", "log", sp, "--filter", "."],
        vec!["session", "log", sp, "--all", "--filter", ".id"],
        vec!["session", "tree", sp, "--format", "human"],
        vec!["session", "tree", sp, "--json"],
        vec!["session", "list", "--format", "human"],
        vec!["session", "list", "--json"],
        vec!["session", "check", sp],
        vec!["session", "check", sp, "--json"],
        vec!["context", "build", sp],
        vec!["context", "build", sp, "--format", "openai"],
        vec!["context", "build", sp, "--format", "anthropic"],
        vec!["context", "stats", sp, "--json"],
        vec!["context", "stats", sp, "--format", "human"],
        vec!["compact", sp, "--dry-run", "--keep-recent-tokens", "1"],
        vec!["session", "fork", sp, &leaf],
        vec!["session", "migrate", sp],
        vec!["session", "label", sp, &user, "again"],
        vec!["session", "name", sp, "renamed"],
        vec!["session", "branch", sp, &user],
    ];
    for args in &runs {
        let o = w.pi().args(args).output().unwrap();
        status(&o, 0);
        let err = stderr(&o);
        assert!(
            !err.contains("error") && !err.contains("warning") && !err.contains("failed"),
            "pi {args:?}: {err}"
        );
    }
    w.ok(&["session", "check", sp]);
}

// 10. An empty session argument is an error, never "the most recent session".

#[test]
fn an_empty_session_argument_is_an_error_for_every_command() {
    let w = World::new();
    let s = w.new_session();
    let sp = s.to_str().unwrap();
    let id = jsonl(&w.ok_in(&["session", "append", sp], &user("hi")))[0]["id"]
        .as_str()
        .unwrap()
        .to_owned();
    let before = std::fs::read(&s).unwrap();
    let runs: Vec<Vec<&str>> = vec![
        vec!["session", "append", ""],
        vec!["session", "append", " "],
        vec!["session", "log", ""],
        vec!["session", "tree", ""],
        vec!["session", "check", ""],
        vec!["session", "fork", ""],
        vec!["session", "migrate", ""],
        vec!["session", "branch", "", &id],
        vec!["session", "label", "", &id, "L"],
        vec!["session", "name", "", "N"],
        vec!["session", "new", "--parent-session", ""],
        vec!["context", "build", ""],
        vec!["context", "stats", ""],
        vec!["compact", "", "--dry-run"],
        vec!["run", "", "-p", "hi"],
    ];
    for args in &runs {
        let o = w
            .pi()
            .args(args)
            .write_stdin(user("appended?"))
            .output()
            .unwrap();
        assert_eq!(o.status.code(), Some(2), "pi {args:?}: {}", stderr(&o));
        assert!(
            stderr(&o).contains("the session argument is empty"),
            "pi {args:?}: {}",
            stderr(&o)
        );
        assert!(o.stdout.is_empty(), "pi {args:?}: {}", stdout(&o));
    }
    assert_eq!(std::fs::read(&s).unwrap(), before, "nothing was appended");
    assert_eq!(
        walk_files(&w.agent().join("sessions")).len(),
        1,
        "nor created"
    );
    // Leaving the argument out still means the most recent session.
    w.ok_in(&["session", "append"], &user("appended"));
    assert_eq!(lines(&s).len(), 3);
}
