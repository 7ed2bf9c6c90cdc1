//! `pi session search` on generated directories (tests/cli/common/sessions.rs).

use crate::common::sessions::populate;
use crate::common::{World, jsonl};

fn search(w: &World, args: &[&str]) -> Vec<serde_json::Value> {
    let mut all = vec!["session", "search"];
    all.extend_from_slice(args);
    jsonl(&w.ok(&all))
}

#[test]
fn text_is_matched_after_json_unescaping() {
    let w = World::new();
    let s = populate(&w);
    // quotes inside a tool call's arguments
    let hits = search(&w, &["\"trailing\""]);
    assert_eq!(hits.len(), 2, "{hits:?}"); // the parser session and its fork
    assert_eq!(hits[0]["field"], "arguments.command");
    assert_eq!(hits[0]["entryId"], "a1");
    assert_eq!(hits[0]["snippet"], "grep -n \"trailing\" src/parse.rs");
    assert_eq!(hits[0]["matches"], serde_json::json!([[8, 18]]));
    // the fork was modified last: it comes first
    assert_eq!(hits[0]["path"], s.fork.to_str().unwrap());
    // a tab in a tool result, non-ASCII text in a user message
    let tab = search(&w, &["commas\tare"]);
    assert_eq!(tab[0]["role"], "toolResult");
    assert_eq!(tab[0]["type"], "message");
    let accents = search(&w, &["café ünï"]);
    assert_eq!(accents.len(), 1);
    assert_eq!(accents[0]["matches"], serde_json::json!([[17, 25]]));
    assert_eq!(
        accents[0]["session"],
        "0193a000-0000-7000-8000-000000000001"
    );
    assert_eq!(accents[0]["timestamp"], "2025-12-31T09:00:00.000Z");
}

#[test]
fn every_branch_and_every_kind_of_text_is_searched() {
    let w = World::new();
    let s = populate(&w);
    let path = s.parser.to_str().unwrap();
    let fields = |pat: &str| -> Vec<String> {
        search(&w, &[pat, path])
            .iter()
            .map(|h| {
                format!(
                    "{}:{}",
                    h["entryId"].as_str().unwrap(),
                    h["field"].as_str().unwrap()
                )
            })
            .collect()
    };
    assert_eq!(fields("Line 42"), ["a2:text"]); // first branch
    assert_eq!(fields("Another way"), ["a3:text"]); // second branch
    assert_eq!(fields("tokenizer"), ["a1:thinking"]);
    assert_eq!(fields("good answer"), ["l1:label"]);
    assert_eq!(fields("Parser work"), ["n1:name"]);
    let other = search(&w, &["LINKER", "--all"]);
    assert_eq!(other.len(), 1);
    assert_eq!(other[0]["field"], "summary");
    assert_eq!(other[0]["type"], "compaction");
    assert_eq!(other[0]["role"], serde_json::Value::Null);
}

#[test]
fn scope_is_the_cwd_unless_all_or_cwd_or_sessions_are_given() {
    let w = World::new();
    let s = populate(&w);
    let out = w
        .pi()
        .args(["session", "search", "build"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1), "nothing in this project");
    assert!(out.stdout.is_empty());
    // the user's question and the compaction summary
    assert_eq!(search(&w, &["build", "--all"]).len(), 2);
    let other = s.other_cwd.to_str().unwrap();
    assert_eq!(search(&w, &["build", "--cwd", other]).len(), 2);
    assert_eq!(
        search(&w, &["build", "0193a000-0000-7000-8000-000000000004"]).len(),
        2
    );
    // sessions and a directory scope do not go together
    w.pi()
        .args(["session", "search", "x", "a", "--all"])
        .assert()
        .code(2);
}

#[test]
fn files_counts_and_limits() {
    let w = World::new();
    let s = populate(&w);
    let l = search(&w, &["trailing", "-l"]);
    assert_eq!(l.len(), 2);
    assert_eq!(l[0]["path"], s.fork.to_str().unwrap());
    assert_eq!(l[1]["session"], "0193a000-0000-7000-8000-000000000001");
    assert!(l[0].get("count").is_none());
    let c = search(&w, &["trailing", "--count"]);
    // parser: u1 text, a1 arguments, t1 text, a3 text; fork: u1, a1, t1, u3
    assert_eq!(c[0]["count"], 4);
    assert_eq!(c[1]["count"], 4);
    assert_eq!(search(&w, &["trailing", "-n", "3"]).len(), 3);
    assert_eq!(search(&w, &["trailing", "-l", "-n", "1"]).len(), 1);
    w.pi()
        .args(["session", "search", "x", "-n", "0"])
        .assert()
        .code(2);
}

#[test]
fn filters_by_role_type_and_time() {
    let w = World::new();
    let s = populate(&w);
    let path = s.parser.to_str().unwrap();
    let ids = |args: &[&str]| -> Vec<String> {
        let mut a = vec!["trailing", path];
        a.extend_from_slice(args);
        let out = w
            .pi()
            .arg("session")
            .arg("search")
            .args(&a)
            .output()
            .unwrap();
        let hits = jsonl(&String::from_utf8_lossy(&out.stdout));
        assert_eq!(out.status.code(), Some(if hits.is_empty() { 1 } else { 0 }));
        hits.iter()
            .map(|h| h["entryId"].as_str().unwrap().to_owned())
            .collect()
    };
    assert_eq!(ids(&[]), ["u1", "a1", "t1", "a3"]);
    assert_eq!(ids(&["--role", "user"]), ["u1"]);
    assert_eq!(ids(&["--role", "assistant"]), ["a1", "a3"]);
    assert_eq!(ids(&["--role", "tool"]), ["t1"]);
    assert_eq!(ids(&["--role", "user", "--role", "tool"]), ["u1", "t1"]);
    assert_eq!(ids(&["--type", "label,session_info"]), Vec::<String>::new());
    assert_eq!(ids(&["--since", "2025-12-31"]), ["a3"]);
    assert_eq!(ids(&["--until", "20251230"]), ["u1", "a1", "t1"]);
    assert_eq!(
        ids(&[
            "--since",
            "2025-12-30T10:00:05Z",
            "--until",
            "2025-12-30T10:00:06Z"
        ]),
        ["a1", "t1"]
    );
    assert_eq!(ids(&["--since", "2d"]), ["a3"]); // PI_NOW is 2026-01-02T03:04
    let bad = w
        .pi()
        .args(["session", "search", "x", "--since", "soon"])
        .assert()
        .code(2);
    let err = String::from_utf8_lossy(&bad.get_output().stderr).into_owned();
    assert!(err.contains("invalid date 'soon'"), "{err}");
}

#[test]
fn regular_expressions_and_ignoring_case() {
    let w = World::new();
    populate(&w);
    assert!(
        w.pi()
            .args(["session", "search", "line 42"])
            .assert()
            .code(1)
            .get_output()
            .stdout
            .is_empty()
    );
    let i = search(&w, &["line 42", "-i"]);
    assert_eq!(i.len(), 1);
    let r = search(&w, &["--regex", r"Line \d+ rejects"]);
    assert_eq!(r[0]["snippet"], "Line 42 rejects them on purpose.");
    assert_eq!(r[0]["matches"], serde_json::json!([[0, 15]]));
    let ri = search(&w, &["-e", "-i", r"CAF[ÉE]"]);
    assert_eq!(ri.len(), 1);
    let bad = w
        .pi()
        .args(["session", "search", "-e", "(unclosed"])
        .assert()
        .code(2);
    let err = String::from_utf8_lossy(&bad.get_output().stderr).into_owned();
    assert!(err.contains("invalid regular expression"), "{err}");
}

#[test]
fn lines_that_are_not_json_are_skipped_and_non_sessions_ignored() {
    let w = World::new();
    let s = populate(&w);
    let mut text = std::fs::read_to_string(&s.empty).unwrap();
    text.push_str("{not json trailing\n{\"type\":\"message\",\"id\":\"z\",\"message\":{\"role\":\"user\",\"content\":\"trailing \\u0074ext\"}}");
    std::fs::write(&s.empty, text).unwrap();
    std::fs::write(s.parser.with_file_name("notes.jsonl"), "trailing\n").unwrap();
    let hits = search(&w, &["trailing text", "--all"]);
    assert_eq!(hits.len(), 1, "an escaped letter still matches: {hits:?}");
    assert_eq!(hits[0]["entryId"], "z");
}

#[test]
fn human_view_groups_hits_by_session_with_hints() {
    let w = World::new();
    let s = populate(&w);
    let shown = w.snap(&[
        "session", "search", "trailing", "--format", "human", "-n", "5",
    ]);
    let shown = shown.replace(s.parser.parent().unwrap().to_str().unwrap(), "[DIR]");
    insta::assert_snapshot!(shown, @r#"
    status: 0
    ----- stdout -----
    0193a000-0000-7000-8000-000000000002  [SESSIONS]/2026-01-01T12-00-00-000Z_0193a000-0000-7000-8000-000000000002.jsonl
      2025-12-30 10:00  user text  Why does the parser reject [trailing] commas?
          pi session show 0193a000-0000-7000-8000-000000000002 --leaf u1
      2025-12-30 10:00  assistant arguments.command  grep -n "[trailing]" src/parse.rs
          pi session show 0193a000-0000-7000-8000-000000000002 --leaf a1
      2025-12-30 10:00  toolResult text  42: // [trailing] commas\tare rejected here
          pi session show 0193a000-0000-7000-8000-000000000002 --leaf t1
      2026-01-01 12:00  user text  In the fork: allow [trailing] commas
          pi session show 0193a000-0000-7000-8000-000000000002 --leaf u3

    0193a000-0000-7000-8000-000000000001  [SESSIONS]/2025-12-30T10-00-00-000Z_0193a000-0000-7000-8000-000000000001.jsonl
      2025-12-30 10:00  user text  Why does the parser reject [trailing] commas?
          pi session show 0193a000-0000-7000-8000-000000000001 --leaf u1
    ----- stderr -----
    "#);
}
