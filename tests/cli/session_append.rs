//! `pi session append`, `branch`, `label`, `name`

use predicates::prelude::*;
use serde_json::{Value, json};

use crate::common::*;

fn lines(path: &std::path::Path) -> Vec<Value> {
    jsonl(&std::fs::read_to_string(path).unwrap())
}

#[test]
fn bare_messages_are_wrapped_and_chained() {
    let w = World::new();
    let s = w.new_session();
    let out = w.ok_in(
        &["session", "append"],
        &format!("{}\n{}\n", user("hi"), assistant("yo")),
    );
    let recs = jsonl(&out);
    assert_eq!(recs.len(), 2);
    assert_eq!(recs[0]["type"], "message");
    assert_eq!(recs[0]["parentId"], Value::Null);
    assert_eq!(recs[1]["parentId"], recs[0]["id"]);
    for r in &recs {
        let id = r["id"].as_str().unwrap();
        assert!(
            id.len() == 8
                && id
                    .bytes()
                    .all(|c| c.is_ascii_hexdigit() && !c.is_ascii_uppercase()),
            "{id}"
        );
        let ts = r["timestamp"].as_str().unwrap();
        assert!(ts.len() == 24 && ts.ends_with('Z'), "{ts}");
        assert!(
            r["message"]["timestamp"].is_u64(),
            "message timestamps are epoch ms"
        );
    }
    assert_eq!(recs[0]["message"]["content"], "hi");
    let file = std::fs::read_to_string(&s).unwrap();
    assert_eq!(file.lines().count(), 3);
    // What is printed is exactly what was written.
    assert_eq!(
        file.lines().skip(1).collect::<Vec<_>>(),
        out.lines().collect::<Vec<_>>()
    );
    // Key order as upstream writes it.
    assert!(
        out.lines()
            .next()
            .unwrap()
            .starts_with(r#"{"type":"message","id":""#)
    );
}

#[test]
fn entries_keep_type_fields_and_order_with_fresh_ids() {
    let w = World::new();
    let s = w.new_session();
    let input = [
        r#"{"type":"model_change","id":"old1","parentId":"zzz","timestamp":"1999-01-01T00:00:00.000Z","provider":"openai","modelId":"gpt-4","extra":{"kept":[1,2.50,true]}}"#,
        r#"{"type":"custom","customType":"x","data":{"b":1,"a":2}}"#,
        r#"{"type":"custom_message","customType":"note","content":[{"type":"text","text":"t"}],"display":false,"details":{"d":1}}"#,
        r#"{"type":"weird_future_type","anything":["goes"]}"#,
        r#"{"type":"label","targetId":"old1","label":"mine"}"#,
    ]
    .join("\n");
    let out = jsonl(&w.ok_in(&["session", "append", s.to_str().unwrap()], &input));
    assert_eq!(out.len(), 5);
    assert_ne!(out[0]["id"], "old1");
    assert_eq!(out[0]["parentId"], Value::Null);
    assert_ne!(out[0]["timestamp"], "1999-01-01T00:00:00.000Z");
    assert_eq!(out[0]["extra"], json!({"kept": [1, 2.5, true]}));
    // References to ids given in the input follow the renaming.
    assert_eq!(out[4]["targetId"], out[0]["id"]);
    let raw = std::fs::read_to_string(&s).unwrap();
    let raw: Vec<&str> = raw.lines().collect();
    assert!(
        raw[1]
            .ends_with(r#""provider":"openai","modelId":"gpt-4","extra":{"kept":[1,2.50,true]}}"#),
        "{}",
        raw[1]
    );
    assert!(
        raw[2].starts_with(r#"{"type":"custom","customType":"x","data":{"b":1,"a":2},"id":"#),
        "{}",
        raw[2]
    );
    assert!(raw[3].starts_with(r#"{"type":"custom_message","customType":"note","content":[{"type":"text","text":"t"}],"display":false,"details":{"d":1},"id":"#), "{}", raw[3]);
    assert!(raw[4].ends_with(r#""anything":["goes"]}"#), "{}", raw[4]);
    // Round trip: the entries read back byte for byte.
    let log = w.ok(&["session", "log", s.to_str().unwrap()]);
    assert_eq!(log.lines().collect::<Vec<_>>(), raw[1..].to_vec());
}

#[test]
fn parent_option_and_dry_run() {
    let w = World::new();
    let s = w.new_session();
    let s = s.to_str().unwrap();
    let a = jsonl(&w.ok_in(
        &["session", "append", s],
        &[user("1"), assistant("2"), user("3")].join("\n"),
    ));
    let id1 = a[1]["id"].as_str().unwrap();
    let b = jsonl(&w.ok_in(&["session", "append", s, "--parent", &id1[..5]], &user("4")));
    assert_eq!(b[0]["parentId"], id1);
    let before = std::fs::read(s).unwrap();
    let d = jsonl(&w.ok_in(&["session", "append", s, "--dry-run"], &user("5")));
    assert_eq!(d[0]["parentId"], b[0]["id"]);
    assert_eq!(
        std::fs::read(s).unwrap(),
        before,
        "--dry-run writes nothing"
    );
}

#[test]
fn bad_input_is_rejected_whole_with_line_and_column() {
    let w = World::new();
    let s = w.new_session();
    let s = s.to_str().unwrap();
    w.ok_in(&["session", "append", s], &user("existing"));
    let before = std::fs::read(s).unwrap();
    let good = user("ok");
    let cases: Vec<(String, &str)> = vec![
        (format!("{good}\n{good}\n{{\"role\":\"user\",\"content\":\"x\"\n"), "stdin:3:29: invalid JSON: the input ends inside the value that starts at 3:1 (expected ',' or '}')"),
        (format!("{good}\n{{\"role\":\"user\",\"content\":42}}\n"), "stdin:2:26: content must be a string or an array, not a number"),
        (format!("{good}\n[1,2]\n"), "stdin:2:1: expected an entry object"),
        (r#"{"role":"assistant","content":"plain"}"#.to_owned(), "stdin:1:31: content must be an array, not a string"),
        (r#"{"role":"assistant","content":[],"api":"a","provider":"p","model":"m","usage":{"input":1,"output":1,"cacheRead":0,"cacheWrite":0},"stopReason":"done"}"#.to_owned(), "stdin:1:144: stopReason must be one of stop, length, toolUse, error, aborted, not \"done\""),
        (r#"{"role":"user","content":[{"type":"video","url":"x"}]}"#.to_owned(), "stdin:1:27: content[0].type must be one of text, image, not \"video\""),
        (r#"{"role":"compactionSummary","summary":"s"}"#.to_owned(), "stdin:1:9: role \"compactionSummary\" is built from branch_summary/compaction entries and is never stored as a message; append a compaction entry instead"),
        (r#"{"type":"message","message":{"role":"user"}}"#.to_owned(), "stdin:1:29: message.content is missing (expected a string or an array)"),
        (r#"{"type":"thinking_level_change","thinkingLevel":"ultra"}"#.to_owned(), "stdin:1:49: thinkingLevel must be one of off, minimal, low, medium, high, xhigh, max, not \"ultra\""),
        (r#"{"type":"label","targetId":"nope0000"}"#.to_owned(), "stdin:1:1: targetId refers to entry 'nope0000', which is neither in the session nor in the input"),
        (r#"{"type":"compaction","summary":"s","firstKeptEntryId":"nope0000","tokensBefore":1}"#.to_owned(), "stdin:1:1: firstKeptEntryId refers to entry 'nope0000'"),
        (r#"{"type":"session","id":"x"}"#.to_owned(), "stdin:1:1: a session header cannot be appended"),
        (r#"{"hello":"world"}"#.to_owned(), "stdin:1:1: expected an entry (an object with \"type\") or a message"),
        (r#"{"type":"model_change","provider":"p"}"#.to_owned(), "stdin:1:1: modelId is missing (expected a string)"),
        (r#"{"type":"branch_summary","summary":"s"}"#.to_owned(), "stdin:1:1: fromId is missing (expected a string)"),
        (r#"{"type":"custom","data":1}"#.to_owned(), "stdin:1:1: customType is missing (expected a string)"),
        (r#"{"type":"custom_message","customType":"x","content":"c"}"#.to_owned(), "stdin:1:1: display is missing (expected a boolean)"),
        (r#"{"type":"session_info","name":5}"#.to_owned(), "stdin:1:31: name must be a string, not a number"),
        (r#"{"role":"toolResult","toolCallId":"a","toolName":"b","content":[]}"#.to_owned(), "stdin:1:1: isError is missing (expected a boolean)"),
        (r#"{"role":"bashExecution","command":"ls"}"#.to_owned(), "stdin:1:1: output is missing (expected a string)"),
        (r#"{"role":"assistant","content":[{"type":"toolCall","id":"a","name":"b"}],"api":"a","provider":"p","model":"m","usage":{"input":1,"output":1,"cacheRead":0,"cacheWrite":0},"stopReason":"stop"}"#.to_owned(), "stdin:1:32: content[0].arguments is missing (expected an object)"),
        (r#"{"role":"user","content":[{"type":"image","data":"x"}]}"#.to_owned(), "stdin:1:27: content[0].mimeType is missing (expected a string)"),
        (r#"{"role":"assistant","content":[],"api":"a","provider":"p","model":"m","usage":{"input":"1"},"stopReason":"stop"}"#.to_owned(), "stdin:1:88: usage.input must be a number, not a string"),
        ("\u{feff}{}".to_owned(), "stdin:1:1: invalid JSON"),
    ];
    for (input, needle) in cases {
        let out = w
            .pi()
            .args(["session", "append", s])
            .write_stdin(input.clone())
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(2), "{input}");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(
            err.starts_with(&format!("pi: error: {needle}")),
            "{input}\n-> {err}"
        );
        assert!(out.stdout.is_empty());
        assert_eq!(
            std::fs::read(s).unwrap(),
            before,
            "nothing written for {input}"
        );
    }
    w.pi()
        .args(["session", "append", s, "--parent", "ffffffff"])
        .write_stdin(good)
        .assert()
        .code(2)
        .stderr(predicate::str::contains("unknown --parent"));
    assert_eq!(std::fs::read(s).unwrap(), before);
}

#[test]
fn pretty_printed_and_empty_input() {
    let w = World::new();
    let s = w.new_session();
    let s = s.to_str().unwrap();
    let out = jsonl(&w.ok_in(
        &["session", "append", s],
        "{\n  \"role\": \"user\",\n  \"content\": \"spaced out\"\n}\n\n",
    ));
    assert_eq!(out.len(), 1);
    let file = std::fs::read_to_string(s).unwrap();
    assert!(
        file.lines()
            .nth(1)
            .unwrap()
            .contains(r#""message":{"role":"user","content":"spaced out","timestamp":"#),
        "stored compact"
    );
    assert_eq!(w.ok_in(&["session", "append", s], ""), "");
    assert_eq!(std::fs::read_to_string(s).unwrap(), file);
}

#[test]
fn old_format_files_are_not_appended_to() {
    let w = World::new();
    let f = w.write("old.jsonl", "{\"type\":\"session\",\"id\":\"x\",\"timestamp\":\"2025-01-01T00:00:00Z\",\"cwd\":\"/\"}\n{\"type\":\"message\",\"timestamp\":\"2025-01-01T00:00:00Z\",\"message\":{\"role\":\"user\",\"content\":\"a\"}}\n");
    let before = std::fs::read(&f).unwrap();
    let out = w
        .pi()
        .args(["session", "append", f.to_str().unwrap()])
        .write_stdin(user("b"))
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("version 1 session file") && err.contains("pi session migrate"),
        "{err}"
    );
    assert_eq!(std::fs::read(&f).unwrap(), before);
}

#[test]
fn files_that_are_not_sessions_are_never_written() {
    let w = World::new();
    for (name, content) in [
        ("empty.jsonl", ""),
        ("garbage.jsonl", "not json\n"),
        ("nohead.jsonl", "{\"type\":\"message\",\"id\":\"a\"}\n"),
    ] {
        let f = w.write(name, content);
        w.pi()
            .args(["session", "append", f.to_str().unwrap()])
            .write_stdin(user("b"))
            .assert()
            .code(2)
            .stderr(predicate::str::contains("is not a session file"));
        assert_eq!(std::fs::read_to_string(&f).unwrap(), content, "{name}");
    }
}

#[test]
fn a_torn_line_is_terminated_before_the_next_entry() {
    let w = World::new();
    let s = w.new_session();
    let a = jsonl(&w.ok_in(&["session", "append", s.to_str().unwrap()], &user("one")));
    let mut f = std::fs::OpenOptions::new().append(true).open(&s).unwrap();
    std::io::Write::write_all(&mut f, br#"{"type":"message","id":"half"#).unwrap();
    let b = jsonl(&w.ok_in(&["session", "append", s.to_str().unwrap()], &user("two")));
    assert_eq!(
        b[0]["parentId"], a[0]["id"],
        "the torn fragment is not the leaf"
    );
    let text = std::fs::read_to_string(&s).unwrap();
    let l: Vec<&str> = text.lines().collect();
    assert_eq!(l[2], r#"{"type":"message","id":"half"#);
    assert_eq!(
        serde_json::from_str::<Value>(l[3]).unwrap()["id"],
        b[0]["id"]
    );
}

#[test]
fn branch_persists_the_new_leaf() {
    let w = World::new();
    let s = w.new_session();
    let sp = s.to_str().unwrap();
    let a = jsonl(&w.ok_in(
        &["session", "append", sp],
        &[user("u1"), assistant("a1"), user("u2"), assistant("a2")].join("\n"),
    ));
    let (a1, a2) = (a[1]["id"].as_str().unwrap(), a[3]["id"].as_str().unwrap());
    let b = jsonl(&w.ok(&["session", "branch", sp, a1]));
    assert_eq!(b[0]["type"], "custom");
    assert_eq!(b[0]["customType"], "branch");
    assert_eq!(b[0]["parentId"], a1);
    assert_eq!(b[0]["data"], json!({"from": a2}));
    let c = jsonl(&w.ok_in(&["session", "append", sp], &user("u3")));
    assert_eq!(c[0]["parentId"], b[0]["id"]);
    let path: Vec<Value> = jsonl(&w.ok(&["session", "log", sp, "--type", "message"]));
    let texts: Vec<&Value> = path.iter().map(|e| &e["message"]["content"]).collect();
    assert_eq!(
        texts,
        [&json!("u1"), &a[1]["message"]["content"], &json!("u3")]
    );
    // With a summary: a branch_summary whose fromId is the leaf left, u3 (the reference
    // 1.6's rule; 0.73 wrote the branch point there).
    let d = jsonl(&w.ok(&[
        "session",
        "branch",
        sp,
        &a1[..4],
        "--summary",
        "Abandoned u3.",
    ]));
    assert_eq!(d[0]["type"], "branch_summary");
    assert_eq!(d[0]["fromId"], c[0]["id"]);
    assert_eq!(d[0]["parentId"], a1);
    assert_eq!(d[0]["summary"], "Abandoned u3.");
    assert_eq!(d[0]["fromHook"], false);
    let raw = std::fs::read_to_string(&s).unwrap();
    assert!(
        raw.lines()
            .last()
            .unwrap()
            .starts_with(r#"{"type":"branch_summary","id":"#)
    );
    // From a file, and from stdin.
    let f = w.write("sum.txt", "From a file.\n");
    let e = jsonl(&w.ok(&[
        "session",
        "branch",
        sp,
        a1,
        "--summary-file",
        f.to_str().unwrap(),
    ]));
    assert_eq!(e[0]["summary"], "From a file.\n");
    let g = jsonl(&w.ok_in(
        &["session", "branch", sp, a1, "--summary-file", "-"],
        "From stdin",
    ));
    assert_eq!(g[0]["summary"], "From stdin");
    // `root` starts a new root; `fromId` is still the leaf left.
    let r = jsonl(&w.ok(&["session", "branch", sp, "root", "--summary", "fresh start"]));
    assert_eq!(r[0]["parentId"], Value::Null);
    assert_eq!(r[0]["fromId"], g[0]["id"]);
    // Errors.
    let before = std::fs::read(&s).unwrap();
    w.pi()
        .args(["session", "branch", sp, "0000dead"])
        .assert()
        .code(2)
        .stderr(predicate::str::contains("no entry with id '0000dead'"));
    let out = w
        .pi()
        .args([
            "session",
            "branch",
            sp,
            a1,
            "--summary",
            "x",
            "--summary-file",
            "y",
        ])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert_eq!(std::fs::read(&s).unwrap(), before);
}

#[test]
fn labels_and_names() {
    let w = World::new();
    let s = w.new_session();
    let sp = s.to_str().unwrap();
    let a = jsonl(&w.ok_in(
        &["session", "append", sp],
        &[user("u1"), assistant("a1")].join("\n"),
    ));
    let u1 = a[0]["id"].as_str().unwrap();
    let l = jsonl(&w.ok(&["session", "label", sp, u1, "checkpoint"]));
    assert_eq!(l[0]["type"], "label");
    assert_eq!(l[0]["targetId"], u1);
    assert_eq!(l[0]["label"], "checkpoint");
    assert_eq!(
        l[0]["parentId"], a[1]["id"],
        "a label entry becomes the leaf"
    );
    let c = jsonl(&w.ok(&["session", "label", sp, u1, "--clear"]));
    assert!(
        c[0].get("label").is_none(),
        "a cleared label has no label key"
    );
    let tree = jsonl(&w.ok(&["session", "tree", sp, "--json"]));
    assert!(tree[0].get("label").is_none());
    w.ok(&["session", "label", sp, u1, "again"]);
    let tree = jsonl(&w.ok(&["session", "tree", sp, "--json"]));
    assert_eq!(tree[0]["label"], "again");
    let out = w.pi().args(["session", "label", sp, u1]).output().unwrap();
    assert_eq!(out.status.code(), Some(2), "a label or --clear is required");
    let out = w
        .pi()
        .args(["session", "label", sp, "0000dead", "x"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let n = jsonl(&w.ok(&["session", "name", sp, "  My session  "]));
    assert_eq!(n[0]["type"], "session_info");
    assert_eq!(n[0]["name"], "My session");
    let list = jsonl(&w.ok(&["session", "list"]));
    assert_eq!(list[0]["name"], "My session");
}

#[test]
fn label_targets_and_parents_must_be_entries_not_other_ids() {
    let w = World::new();
    let s = w.new_session();
    let sp = s.to_str().unwrap();
    // A tool call id appears in the file, but it is not an entry id.
    w.ok_in(
        &["session", "append", sp],
        r#"{"role":"assistant","content":[{"type":"toolCall","id":"abcd1234","name":"ls","arguments":{}}],"api":"a","provider":"p","model":"m","usage":{"input":1,"output":1,"cacheRead":0,"cacheWrite":0},"stopReason":"toolUse"}"#,
    );
    let header_id = lines(&s)[0]["id"].as_str().unwrap().to_owned();
    for target in ["abcd1234", header_id.as_str()] {
        let out = w
            .pi()
            .args(["session", "label", sp, target, "x"])
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(2), "{target}");
    }
}

#[test]
fn the_id_cache_follows_other_writers() {
    let w = World::new();
    let s = w.new_session();
    let sp = s.to_str().unwrap();
    let a = jsonl(&w.ok_in(&["session", "append", sp], &user("one")));
    assert!(
        w.agent()
            .join("cache/session-ids")
            .read_dir()
            .unwrap()
            .count()
            == 1,
        "the index is cached"
    );
    // Another program (the reference, say) appends an entry.
    let mut f = std::fs::OpenOptions::new().append(true).open(&s).unwrap();
    let foreign = format!(
        "{{\"type\":\"message\",\"id\":\"0000abcd\",\"parentId\":{},\"timestamp\":\"2026-01-01T00:00:00.000Z\",\"message\":{{\"role\":\"user\",\"content\":\"foreign\",\"timestamp\":1}}}}\n",
        a[0]["id"]
    );
    std::io::Write::write_all(&mut f, foreign.as_bytes()).unwrap();
    drop(f);
    let l = jsonl(&w.ok(&["session", "label", sp, "0000ab", "seen"]));
    assert_eq!(
        l[0]["targetId"], "0000abcd",
        "found through the cached index and the new bytes"
    );
    assert_eq!(l[0]["parentId"], "0000abcd");
    // The file is replaced by other content under the same name: the cache is not trusted.
    let header = std::fs::read_to_string(&s)
        .unwrap()
        .lines()
        .next()
        .unwrap()
        .to_owned();
    std::fs::write(&s, format!("{header}\n{{\"type\":\"custom\",\"customType\":\"x\",\"id\":\"00001234\",\"parentId\":null,\"timestamp\":\"t\"}}\n")).unwrap();
    let out = w
        .pi()
        .args(["session", "label", sp, "0000abcd", "gone"])
        .output()
        .unwrap();
    assert_eq!(
        out.status.code(),
        Some(2),
        "the old id is not believed to exist"
    );
    let l = jsonl(&w.ok(&["session", "label", sp, "00001234", "new"]));
    assert_eq!(l[0]["targetId"], "00001234");
    // Deleting the cache changes nothing but speed.
    std::fs::remove_dir_all(w.agent().join("cache")).unwrap();
    let b = jsonl(&w.ok_in(&["session", "append", sp], &user("after")));
    assert_eq!(b[0]["parentId"], l[0]["id"]);
}

/// A new id that is already in the file is drawn again: with the random source fixed
/// (`PI_SEED`), the id an append would pick is put in the file first.
#[test]
fn an_id_already_in_the_file_is_never_reused() {
    let w = World::new();
    let s = w.new_session();
    let p = s.to_str().unwrap();
    let seeded = |args: &[&str], stdin: &str| -> Vec<serde_json::Value> {
        let o = w
            .pi()
            .env("PI_SEED", "99")
            .args(args)
            .write_stdin(stdin.to_owned())
            .output()
            .unwrap();
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
        jsonl(&String::from_utf8_lossy(&o.stdout))
    };
    let would = seeded(&["session", "append", p, "--dry-run"], &user("x"))[0]["id"]
        .as_str()
        .unwrap()
        .to_owned();
    // The same id, in the file already (an entry appended with a fixed id is not possible
    // through pi; write the line directly).
    let mut text = std::fs::read_to_string(&s).unwrap();
    text.push_str(&format!(
        "{{\"type\":\"custom\",\"id\":\"{would}\",\"parentId\":null,\"timestamp\":\"2026-01-01T00:00:00.000Z\",\"customType\":\"taken\"}}\n"
    ));
    std::fs::write(&s, text).unwrap();
    let got = seeded(&["session", "append", p], &user("x"));
    let id = got[0]["id"].as_str().unwrap();
    assert_ne!(id, would);
    assert_eq!(id.len(), 8);
    assert_eq!(got[0]["parentId"], would.as_str());
    let ids: Vec<String> = jsonl(&std::fs::read_to_string(&s).unwrap())
        .iter()
        .skip(1)
        .map(|e| e["id"].as_str().unwrap().to_owned())
        .collect();
    let mut unique = ids.clone();
    unique.sort();
    unique.dedup();
    assert_eq!(unique.len(), ids.len());
}
